/* enqueue.c — a flat plan's kernels enqueued on a GPU handle: the family's grid (launch.h), the
 * workspace it needs (workspace.c), the launch on the caller's stream; and the kernels for many
 * rows of shaped calls (scan.cu's rows, rows.cu). reduce.c (1-D calls) and axis.c (shaped
 * calls) both launch through here. Nothing here synchronises. */
#include <stdio.h>
#include <string.h>
#include "core/status.h"
#include "gpu/state.h"

typedef struct {
    cudaError_t (*grid)(const cr_gpu_call *, cr_gpu_grid *);
    cudaError_t (*launch)(const cr_gpu_call *, const cr_gpu_work *, cr_gpu_grid *);
} family_ops;

/* Indexed by cr_family: the kernel families (METHOD has its own driver). */
static const family_ops families[CR_FAMILY_COUNT] = {
    [CR_FAMILY_CANONICAL] = {cr_gpu_canonical_grid, cr_gpu_canonical_launch},
    [CR_FAMILY_ORDERED] = {cr_gpu_ordered_grid, cr_gpu_ordered_launch},
    [CR_FAMILY_SCAN] = {cr_gpu_scan_grid, cr_gpu_scan_launch},
    [CR_FAMILY_EXACT] = {cr_gpu_exact_grid, cr_gpu_exact_launch},
};

static const family_ops *family_of(coopreduce_handle *h, const cr_plan *p)
{
    const family_ops *f = (unsigned)p->family < CR_FAMILY_COUNT ? &families[p->family] : NULL;
    if (f && f->grid) return f;
    cr_fail(h, COOPREDUCE_ERROR_INTERNAL, "the GPU has no kernels for family %d of %s",
            (int)p->family, cr_op_name(p->op));
    return NULL;
}

/* The family's grid for the call (zeroed first: families fill what they use). */
static coopreduce_status size_grid(coopreduce_handle *h, const family_ops *f, const cr_gpu_call *c,
                                   cr_gpu_grid *grid)
{
    memset(grid, 0, sizeof *grid);
    cudaError_t e = f->grid(c, grid);
    if (e == cudaSuccess) return COOPREDUCE_SUCCESS;
    (void)cudaGetLastError();
    return cr_cuda_fail(h, e, "sizing the grid");
}

/* The call as the families see it; out and the tagged host slot are set by the caller. */
cr_gpu_call cr_gpu_call_of(const coopreduce_handle *h, const cr_plan *p, const void *x,
                           const void *y, uint64_t n, void *stream)
{
    const struct cr_gpu_state *g = h->gpu;
    cr_gpu_call c;
    memset(&c, 0, sizeof c);
    c.plan = p;
    c.x = x;
    c.y = y;
    c.n = n;
    c.device = h->device;
    c.sm_count = g->sm_count;
    c.cc_major = g->cc_major;
    c.l2_bytes = g->l2_bytes;
    c.forced_blocks = h->grid_blocks;
    c.stream = (cudaStream_t)stream;
    return c;
}

/* Sizes, equips and launches the call on its family; names the call in a launch failure. */
static coopreduce_status launch(coopreduce_handle *h, const family_ops *f, const cr_gpu_call *c,
                                cr_gpu_grid *grid)
{
    const cr_plan *p = c->plan;
    coopreduce_status s;
    if ((s = size_grid(h, f, c, grid))) return s;
    cr_gpu_work w;
    if ((s = cr_gpu_work_ensure(h, p, c->n, grid->slot_bytes, grid->slot_blocks, &w))) return s;
    /* cudaGetLastError() after a launch reports whatever error is pending on this thread, so one
     * left by an earlier failed call (an allocation, say) must not be taken for this launch's:
     * clear it first. Sticky errors (a broken context) survive this and are reported. */
    (void)cudaGetLastError();
    cudaError_t e = f->launch(c, &w, grid);
    if (e != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "launching %s of %s", cr_op_name(p->op),
                 cr_dtype(p->dtype)->name);
        return cr_cuda_fail(h, e, what);
    }
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_launch_flat(coopreduce_handle *h, const cr_plan *p, const void *x,
                                     const void *y, void *out, uint64_t n, void *stream)
{
    const family_ops *f = family_of(h, p);
    if (!f) return COOPREDUCE_ERROR_INTERNAL;
    cr_gpu_call c = cr_gpu_call_of(h, p, x, y, n, stream);
    c.out = out;
    cr_gpu_grid grid;
    return launch(h, f, &c, &grid);
}

int cr_gpu_rows_served(const cr_plan *p) { return p->family == CR_FAMILY_SCAN; }

coopreduce_status cr_gpu_launch_rows(coopreduce_handle *h, const cr_plan *p, const void *x,
                                     void *out, uint64_t rows, uint64_t len,
                                     const int64_t *offsets, void *stream)
{
    cr_gpu_call c = cr_gpu_call_of(h, p, x, NULL, rows * len, stream);
    c.out = out;
    (void)cudaGetLastError(); /* see launch() */
    cudaError_t e = cr_gpu_scan_rows_launch(&c, rows, len, offsets);
    if (e == cudaSuccess) return COOPREDUCE_SUCCESS;
    char what[96];
    snprintf(what, sizeof what, "launching %s of %s rows", cr_op_name(p->op),
             cr_dtype(p->dtype)->name);
    return cr_cuda_fail(h, e, what);
}

coopreduce_status cr_gpu_launch_shape(coopreduce_handle *h, const cr_plan *p, const void *x,
                                      const void *y, void *out, const cr_gpu_shape_call *s,
                                      void *stream)
{
    cr_gpu_call c = cr_gpu_call_of(h, p, x, y, 0, stream);
    c.out = out;
    (void)cudaGetLastError(); /* see launch() */
    const cudaError_t e = cr_gpu_rows_launch(&c, s);
    if (e == cudaSuccess) return COOPREDUCE_SUCCESS;
    char what[96];
    snprintf(what, sizeof what, "launching %s of %s %s", cr_op_name(p->op),
             cr_dtype(p->dtype)->name, s->offsets ? "segments" : s->inner > 1 ? "columns" : "rows");
    return cr_cuda_fail(h, e, what);
}

coopreduce_status cr_gpu_enqueue(coopreduce_handle *h, const cr_gpu_call *c, cr_gpu_grid *grid)
{
    const family_ops *f = family_of(h, c->plan);
    return f ? launch(h, f, c, grid) : COOPREDUCE_ERROR_INTERNAL;
}

coopreduce_status cr_gpu_size(coopreduce_handle *h, const cr_gpu_call *c, cr_gpu_grid *grid)
{
    const family_ops *f = family_of(h, c->plan);
    return f ? size_grid(h, f, c, grid) : COOPREDUCE_ERROR_INTERNAL;
}
