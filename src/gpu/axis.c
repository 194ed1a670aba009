/* axis.c — reductions along an axis and over segments on a GPU handle (CR_SHAPE_AXIS,
 * _SEGMENTS): which kernels compute a shaped call.
 *
 * Every result is the 1-D reduction of its own values (docs/DETERMINISM.md, "Axis and
 * segments"). Three ways to it, in order of preference:
 *  - the canonical-order operations (CANONICAL and ORDERED families): rows.cu's kernels, a few
 *    launches for all rows and columns of up to C^2 elements (C = 4096 float32 / 16-bit, 2048
 *    float64), and for all segments; the offsets stay on the device, where rows.cu checks them
 *    (a bad one makes every result NaN and is reported by coopreduce_synchronize);
 *  - the scan family's contiguous rows, and its segments when none is long: scan.cu's kernel for
 *    many rows, a warp per row or segment; its columns too, once gathered (below);
 *  - everything else (the exact family, the scan family's long segments, rows longer than C^2):
 *    the generic path, the plan's 1-D family launched on each row or segment, contiguous rows in
 *    place, strided rows (a C-ordered axis with inner > 1) after a gather into contiguous rows of
 *    the workspace, a tile of adjacent columns at a time (a tile of the scan family's columns:
 *    one launch of scan.cu's kernel for many rows). Its bits are the 1-D calls' by construction;
 *    its speed is one launch per result, which suits few, long rows.
 * All launches go on the caller's stream, in order, so the workspace each reuses is free again. */
#include <stdlib.h>
#include <string.h>
#include "core/order.h"
#include "core/status.h"
#include "gpu/gpu.h"
#include "gpu/state.h"

/* Bytes of gathered rows a tile takes at most (x and y together): a tile is as many adjacent
 * columns as fit, at least one. */
#define CR_GATHER_BYTES ((size_t)64 << 20)

/* Rows from which a kernel for many rows is launched instead of one 1-D launch per row. */
#define CR_ROWS_MIN 32
/* The longest segment the scan family's kernel for many rows takes (a warp per segment). */
#define CR_SEGMENT_ROWS_MAX ((uint64_t)1 << 16)

coopreduce_status cr_gpu_offsets_to_host(coopreduce_handle *h, const int64_t *offsets,
                                         uint64_t nseg, void *stream, const int64_t **host)
{
    *host = NULL;
    coopreduce_status s = cr_gpu_check_pointer(h, offsets, "offsets");
    if (s) return s;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    /* Pinned: a copy to pageable memory is staged by the driver, several times slower. */
    const size_t bytes = (size_t)(nseg + 1) * sizeof(int64_t);
    if ((s = cr_gpu_pinned_ensure(h, bytes))) return s;
    e = cudaMemcpyAsync(h->gpu->pinned, offsets, bytes, cudaMemcpyDeviceToHost,
                        (cudaStream_t)stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)stream);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "reading the offsets back");
    *host = h->gpu->pinned;
    return COOPREDUCE_SUCCESS;
}

int cr_gpu_segments_checked(const cr_plan *plan)
{
    return plan->family == CR_FAMILY_CANONICAL || plan->family == CR_FAMILY_ORDERED;
}

coopreduce_status cr_gpu_synchronize(coopreduce_handle *h, void *stream)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)stream);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "waiting for the stream");
    struct cr_gpu_state *g = h->gpu;
    /* Read on every synchronize unless the latest checked call is the one last reported: a call
     * on another stream may still be running, and only a synchronize of that stream sees it. */
    if (!g->ticket || g->seg_epoch == g->seg_reported) return COOPREDUCE_SUCCESS;
    uint64_t word = 0;
    e = cudaMemcpy(&word, (const char *)g->ticket + 64, sizeof word, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "reading the segments' fault word");
    const unsigned int epoch = (unsigned int)(word >> 32);
    const uint64_t k = UINT32_MAX - (word & UINT32_MAX);
    if (epoch == 0 || epoch <= g->seg_reported) return COOPREDUCE_SUCCESS;
    g->seg_reported = epoch;
    return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                   "coopreduce_reduce_segments() was given bad offsets (call %u of the %u this "
                   "handle checked on the GPU; its results are NaN): offsets[%llu]%s is negative, "
                   "below the offset before it, or beyond x's n elements",
                   epoch, g->seg_epoch, (unsigned long long)k,
                   k == UINT32_MAX ? " or a later one" : "");
}

/* What a shaped call of the flat plan p needs of the handle's buffers, decided as
 * cr_gpu_shaped() decides its path: for the call itself, and for coopreduce_reserve_axis() and
 * _segments(), which know the shape but not the offsets (room for any offsets within x). */
typedef struct {
    int rows_cu;        /* rows.cu's kernels compute it (canonical order, rows of up to C^2) */
    uint64_t slots;     /*   their level-1 partials per class (0: every row within a chunk) */
    size_t class_bytes; /*   bytes of a class's partials, a multiple of 256 */
    uint64_t tickets;   /*   a ticket per row or segment (0: none; rows have some only with
                               partials) */
    int words;          /*   the counter and fault word of segments (g->ticket) */
    uint64_t tile;      /* strided rows gathered: columns per tile (0: none gathered) */
    size_t gather;      /* bytes of g->gather: rows.cu's partials or a tile's gathered rows */
    size_t pinned;      /* offsets read back to the host */
    uint64_t longest;   /* the longest 1-D launch (0: none) */
} shape_needs;

static coopreduce_status needs_of(coopreduce_handle *h, const cr_plan *p, const cr_shape *sh,
                                  shape_needs *nd)
{
    memset(nd, 0, sizeof *nd);
    const uint64_t len = sh->len, inner = sh->inner;
    if (p->family == CR_FAMILY_CANONICAL || p->family == CR_FAMILY_ORDERED) {
        const uint64_t C = cr_chunk_elems(p->acc);
        const size_t acc = cr_dtype_size(p->acc), classes = p->trees == 3 ? 3 : 1;
        if (sh->kind == CR_SHAPE_AXIS) {
            nd->rows_cu = len <= C * C;
            if (len > C) nd->slots = sh->outer * ((len + C - 1) / C) * inner;
            /* a ticket per row of partials (rows; columns hand off otherwise) */
            if (nd->slots && inner == 1) nd->tickets = sh->outer;
        } else {
            /* the offsets stay on the device, unchecked (rows.cu checks them there): room for
             * the partials of any offsets within x, and a ticket per segment */
            nd->rows_cu = 1;
            nd->slots = sh->elements / C + sh->nseg + 1;
            nd->tickets = sh->nseg;
            nd->words = 1;
        }
        if (nd->rows_cu) {
            /* each class's partials start on a 256-byte boundary (16-byte loads) */
            nd->class_bytes = (size_t)((nd->slots * acc + 255) / 256 * 256);
            if (nd->slots) nd->gather = nd->class_bytes * classes;
            return COOPREDUCE_SUCCESS;
        }
    }
    if (sh->kind == CR_SHAPE_SEGMENTS) {
        /* read back (the API's check): each segment lies within x */
        nd->pinned = (size_t)(sh->nseg + 1) * sizeof(int64_t);
        nd->longest = sh->elements;
        return COOPREDUCE_SUCCESS;
    }
    nd->longest = len;
    if (inner == 1 || len <= 1) return COOPREDUCE_SUCCESS;
    /* strided rows: tiles of adjacent columns of one outer index, gathered contiguous */
    const uint64_t per_col = len * cr_dtype_size(p->dtype) * (uint64_t)p->inputs;
    uint64_t w = CR_GATHER_BYTES / per_col;
    if (w > inner) w = inner;
    if (w < 1) w = 1;
    if (w * per_col > SIZE_MAX)
        return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY,
                       "rows of %llu elements are too long to gather", (unsigned long long)len);
    nd->tile = w;
    nd->gather = (size_t)(w * per_col);
    return COOPREDUCE_SUCCESS;
}

/* Grows the buffers of nd (all but the 1-D workspace, which each launch grows itself). */
static coopreduce_status ensure_needs(coopreduce_handle *h, const shape_needs *nd)
{
    coopreduce_status s;
    if (nd->gather && (s = cr_gpu_gather_ensure(h, nd->gather))) return s;
    if (nd->tickets && (s = cr_gpu_tickets_ensure(h, nd->tickets))) return s;
    if (nd->words && (s = cr_gpu_slots_ensure(h, 0))) return s;
    if (nd->pinned && (s = cr_gpu_pinned_ensure(h, nd->pinned))) return s;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_reserve_shaped(coopreduce_handle *h, const cr_plan *shaped)
{
    const cr_plan p = cr_plan_flat(shaped);
    shape_needs nd;
    coopreduce_status s = needs_of(h, &p, &shaped->shape, &nd);
    if (s || (s = ensure_needs(h, &nd))) return s;
    return nd.longest ? cr_gpu_reserve(h, &p, nd.longest) : COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_shaped(coopreduce_handle *h, const cr_plan *shaped, const void *x,
                                const void *y, void *result, void *stream)
{
    const cr_shape *sh = &shaped->shape;
    const cr_plan p = cr_plan_flat(shaped);
    const size_t es = cr_dtype_size(p.dtype), rs = p.result_size;
    const int two = p.inputs == 2;
    coopreduce_status s = cr_gpu_check_inputs(h, p.inputs, x, y, result, sh->elements);
    if (s) return s;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    const char *cx = x, *cy = y;
    char *out = result;
    shape_needs nd;
    if ((s = needs_of(h, &p, sh, &nd))) return s;

    const uint64_t len = sh->len, inner = sh->inner;
    /* The canonical-order operations: rows.cu's kernels, two levels of the tree. */
    if (nd.rows_cu) {
        cr_gpu_shape_call sc;
        memset(&sc, 0, sizeof sc);
        if (sh->kind == CR_SHAPE_AXIS) {
            sc.outer = sh->outer;
            sc.len = len;
            sc.inner = inner;
        } else {
            if ((s = cr_gpu_check_pointer(h, sh->offsets_dev, "offsets"))) return s;
            sc.offsets = sh->offsets_dev;
            sc.nseg = sh->nseg;
            sc.n = sh->elements;
        }
        if ((s = ensure_needs(h, &nd))) return s;
        if (sh->kind == CR_SHAPE_SEGMENTS) {
            if (h->gpu->seg_epoch == UINT32_MAX) {
                /* the fault word's epoch would wrap: clear it (the next report is then the
                   first of a new count) */
                e = cudaMemsetAsync((char *)h->gpu->ticket + 64, 0, 8, (cudaStream_t)stream);
                if (e != cudaSuccess)
                    return cr_cuda_fail(h, e, "clearing the segments' fault word");
                h->gpu->seg_epoch = h->gpu->seg_reported = 0;
            }
            sc.epoch = ++h->gpu->seg_epoch;
        }
        sc.partials = h->gpu->gather;
        sc.tickets = h->gpu->row_tickets;
        sc.grab = (char *)h->gpu->ticket + 48;
        sc.class_bytes = nd.class_bytes;
        return cr_gpu_launch_shape(h, &p, x, y, result, &sc, stream);
    }
    /* Many contiguous rows: one launch of a kernel that gives every row the 1-D bits, where one
     * serves the plan (short rows; for the scan family, also long rows when there are enough of
     * them to fill the GPU with one warp each). */
    if (sh->kind == CR_SHAPE_AXIS && inner == 1 && sh->outer >= CR_ROWS_MIN &&
        cr_gpu_rows_served(&p) && (len <= 8192 || sh->outer >= 8 * (uint64_t)h->gpu->sm_count))
        return cr_gpu_launch_rows(h, &p, x, result, sh->outer, len, NULL, stream);
    /* Many segments, none long (a warp reads one at about 0.5 GB/s): the same kernel. */
    if (sh->kind == CR_SHAPE_SEGMENTS && sh->nseg >= CR_ROWS_MIN && cr_gpu_rows_served(&p)) {
        uint64_t longest = 0;
        for (uint64_t k = 0; k < sh->nseg; k++) {
            const uint64_t n = (uint64_t)(sh->offsets[k + 1] - sh->offsets[k]);
            if (n > longest) longest = n;
        }
        if (longest <= CR_SEGMENT_ROWS_MAX)
            return cr_gpu_launch_rows(h, &p, x, result, sh->nseg, 0, sh->offsets_dev, stream);
    }
    /* Segments and contiguous rows in place (a "row" of one element is contiguous too). */
    if (sh->kind == CR_SHAPE_SEGMENTS || inner == 1 || len <= 1) {
        for (uint64_t k = 0; k < sh->outputs; k++) {
            const cr_run r = cr_shape_run(sh, k);
            if ((s = cr_gpu_launch_flat(h, &p, cx + r.start * es, two ? cy + r.start * es : NULL,
                                        out + k * rs, r.count, stream)))
                return s;
        }
        return COOPREDUCE_SUCCESS;
    }
    /* Strided rows: tiles of w adjacent columns of one outer index, gathered contiguous. */
    const uint64_t w = nd.tile;
    if ((s = ensure_needs(h, &nd))) return s;
    char *buf = h->gpu->gather;
    for (uint64_t o = 0; o < sh->outer; o++) {
        for (uint64_t i0 = 0; i0 < inner; i0 += w) {
            const uint64_t tw = inner - i0 < w ? inner - i0 : w, a = o * len * inner + i0;
            (void)cudaGetLastError();
            e = cr_gpu_gather_launch(cx + a * es, buf, es, len, inner, tw, h->gpu->sm_count,
                                     (cudaStream_t)stream);
            if (e == cudaSuccess && two)
                e = cr_gpu_gather_launch(cy + a * es, buf + tw * len * es, es, len, inner, tw,
                                         h->gpu->sm_count, (cudaStream_t)stream);
            if (e != cudaSuccess) return cr_cuda_fail(h, e, "gathering strided rows");
            if (!two && tw >= CR_ROWS_MIN && cr_gpu_rows_served(&p)) {
                /* the gathered columns are contiguous rows: scan.cu's kernel for many rows */
                if ((s = cr_gpu_launch_rows(h, &p, buf, out + (o * inner + i0) * rs, tw, len, NULL,
                                            stream)))
                    return s;
                continue;
            }
            for (uint64_t c = 0; c < tw; c++) {
                const char *gx = buf + c * len * es;
                if ((s = cr_gpu_launch_flat(h, &p, gx, two ? gx + tw * len * es : NULL,
                                            out + (o * inner + i0 + c) * rs, len, stream)))
                    return s;
            }
        }
    }
    return COOPREDUCE_SUCCESS;
}
