/* workspace.c — the GPU workspace service: the device memory every kernel family and method
 * works in, allocated zeroed and grown on demand (or up front by coopreduce_reserve), so the hot
 * path allocates nothing.
 *
 *  - a canonical tree: the tagged partials of levels 1 .. L-1 and the group counters (with the
 *    epoch word), for the canonical and ordered families' one tree;
 *  - NORM2's three trees (ordered.cu);
 *  - per-block slots, a ticket and a device result slot (scan.cu, exact.cu, the methods);
 *  - a ticket per row or segment (rows.cu) and axis.c's scratch (partials, gathered rows);
 *  - the pinned, mapped host-result slot, and the pinned host scratch (the `block` method's partials, the segments' offsets).
 * Kernels leave counters, epochs' neighbours and tickets as they found them (zero),
 * so nothing is cleared between calls. Growing allocates the new buffer before freeing the old:
 * if it cannot be had, the handle keeps what it had. Allocation synchronises the device, which
 * is why coopreduce_reserve exists. */
#include <string.h>
#include "core/order.h"
#include "core/status.h"
#include "gpu/state.h"

/* Bytes of partials and counters a canonical tree over n elements of `acc` needs, in the layout
 * tree.cuh's tree_setup walks: per level k in [1, L), count[k] tagged partials (8 bytes per 4
 * bytes of value) rounded up to 256 bytes; 256 bytes for the epoch word, then count[k+1]
 * counters per level. */
static void tree_bytes(uint64_t n, coopreduce_dtype acc, size_t *partials, size_t *counters)
{
    uint64_t count[CR_MAX_LEVELS + 1];
    const size_t es = cr_dtype_size(acc);
    *partials = 0;
    *counters = 256;
    if (n == 0) return;
    const int levels = cr_level_counts(n, cr_chunk_elems(acc), count);
    for (int k = 1; k < levels; k++) {
        *partials += (count[k] * es * 2 + 255) / 256 * 256;
        *counters += count[k + 1] * sizeof(unsigned int);
    }
}

/* A zeroed device buffer of `bytes`, ready before any stream uses it. */
static cudaError_t zeroed(void **p, size_t bytes)
{
    *p = NULL;
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaSuccess) e = cudaMemset(*p, 0, bytes);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        if (*p) cudaFree(*p);
        *p = NULL;
        (void)cudaGetLastError(); /* an allocation failure must not stick to the next launch */
    }
    return e;
}

static coopreduce_status tree_ensure(coopreduce_handle *h, uint64_t n, coopreduce_dtype acc)
{
    struct cr_gpu_state *g = h->gpu;
    size_t pb, cb;
    tree_bytes(n, acc, &pb, &cb);
    if (pb <= g->tree_partials_bytes && cb <= g->tree_counters_bytes && g->tree_partials)
        return COOPREDUCE_SUCCESS;
    if (pb < g->tree_partials_bytes) pb = g->tree_partials_bytes;
    if (cb < g->tree_counters_bytes) cb = g->tree_counters_bytes;
    if (pb < 256) pb = 256;
    void *np, *nc = NULL;
    cudaError_t e = zeroed(&np, pb); /* zero: counters, the epoch word, tags no launch uses */
    if (e == cudaSuccess && (e = zeroed(&nc, cb)) != cudaSuccess) cudaFree(np);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "allocating the workspace");
    if (g->tree_partials) cudaFree(g->tree_partials); /* waits for kernels still using it */
    if (g->tree_counters) cudaFree(g->tree_counters);
    g->tree_partials = np;
    g->tree_partials_bytes = pb;
    g->tree_counters = nc;
    g->tree_counters_bytes = cb;
    return COOPREDUCE_SUCCESS;
}

/* NORM2's workspace, laid out for a capacity of `cap` elements whatever the call's n and type
 * (the counters must stay where zeros were left: a layout that moved with n would put one
 * call's counters on another's stale partials): the partials of three canonical trees of cap
 * elements, then the counters (and epoch) they share, of the larger of the two accumulation
 * types' needs, each region 256-byte aligned. Fills *w when base is not NULL; returns the
 * bytes. */
static size_t norm2_layout(uint64_t cap, char *base, struct cr_norm2_work *w)
{
    size_t pb, cb, p32, c32;
    tree_bytes(cap, COOPREDUCE_FLOAT64, &pb, &cb);
    tree_bytes(cap, COOPREDUCE_FLOAT32, &p32, &c32);
    if (p32 > pb) pb = p32;
    if (c32 > cb) cb = c32;
    pb = (pb + 255) / 256 * 256;
    cb = (cb + 255) / 256 * 256;
    if (base) {
        for (int k = 0; k < 3; k++) w->partials[k] = base + (size_t)k * pb;
        w->counters = base + 3 * pb;
        w->epoch = (unsigned int *)w->counters;
    }
    return 3 * pb + cb;
}

static coopreduce_status norm2_ensure(coopreduce_handle *h, uint64_t n)
{
    struct cr_gpu_state *g = h->gpu;
    if (n <= g->norm2_cap && g->norm2) return COOPREDUCE_SUCCESS;
    void *p;
    cudaError_t e = zeroed(&p, norm2_layout(n, NULL, NULL));
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "allocating the workspace of NORM2");
    if (g->norm2) cudaFree(g->norm2);
    g->norm2 = p;
    g->norm2_cap = n;
    return COOPREDUCE_SUCCESS;
}

/* At least `bytes` of (uninitialised) device memory at *buf, of *have bytes now: the new buffer
 * is allocated before the old is freed (which waits for kernels still using it), so a failure
 * leaves *buf as it was. */
static coopreduce_status grow(coopreduce_handle *h, void **buf, size_t *have, size_t bytes,
                              const char *what)
{
    if (bytes <= *have) return COOPREDUCE_SUCCESS;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cr_cuda_fail(h, e, what);
    }
    if (*buf) cudaFree(*buf);
    *buf = p;
    *have = bytes;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_slots_ensure(coopreduce_handle *h, size_t bytes)
{
    struct cr_gpu_state *g = h->gpu;
    cudaError_t e;
    if (!g->ticket) {
        void *t, *o = NULL;
        e = zeroed(&t, CR_GPU_TICKET_BYTES); /* zero before a kernel on any stream reads it */
        if (e == cudaSuccess && (e = cudaMalloc(&o, 256)) != cudaSuccess) {
            cudaFree(t);
            (void)cudaGetLastError();
        }
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "allocating the ticket and result slot");
        g->ticket = t;
        g->out = o;
    }
    return grow(h, &g->slots, &g->slots_bytes, bytes, "allocating the partials");
}

coopreduce_status cr_gpu_gather_ensure(coopreduce_handle *h, size_t bytes)
{
    struct cr_gpu_state *g = h->gpu;
    return grow(h, &g->gather, &g->gather_bytes, bytes, "allocating scratch memory for rows, columns or segments");
}

coopreduce_status cr_gpu_tickets_ensure(coopreduce_handle *h, uint64_t count)
{
    struct cr_gpu_state *g = h->gpu;
    if (count <= g->row_tickets_count) return COOPREDUCE_SUCCESS; /* 0: none needed */
    if (count > SIZE_MAX / sizeof(unsigned int))
        return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "%llu row tickets are too many",
                       (unsigned long long)count);
    void *p;
    cudaError_t e = zeroed(&p, (size_t)count * sizeof(unsigned int));
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "allocating the row tickets");
    if (g->row_tickets) cudaFree(g->row_tickets);
    g->row_tickets = p;
    g->row_tickets_count = count;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_pinned_ensure(coopreduce_handle *h, size_t bytes)
{
    struct cr_gpu_state *g = h->gpu;
    if (bytes <= g->pinned_bytes) return COOPREDUCE_SUCCESS;
    void *p = NULL;
    cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cr_cuda_fail(h, e, "allocating pinned host scratch memory");
    }
    if (g->pinned) cudaFreeHost(g->pinned);
    g->pinned = p;
    g->pinned_bytes = bytes;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_mapped_alloc(coopreduce_handle *h, size_t bytes, void **host, void **dev)
{
    *host = *dev = NULL;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e == cudaSuccess) e = cudaHostAlloc(host, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess) {
        *host = NULL;
        return cr_cuda_fail(h, e, "allocating mapped pinned memory");
    }
    memset(*host, 0, bytes);
    e = cudaHostGetDevicePointer(dev, *host, 0);
    if (e != cudaSuccess) {
        cudaFreeHost(*host);
        *host = *dev = NULL;
        return cr_cuda_fail(h, e, "mapping pinned memory");
    }
    return COOPREDUCE_SUCCESS;
}

void cr_gpu_mapped_free(void *host)
{
    if (host) (void)cudaFreeHost(host);
}

coopreduce_status cr_gpu_host_slot_create(coopreduce_handle *h)
{
    struct cr_gpu_state *g = h->gpu;
    return cr_gpu_mapped_alloc(h, 16, &g->host_slot, &g->host_slot_dev);
}

coopreduce_status cr_gpu_work_ensure(coopreduce_handle *h, const cr_plan *plan, uint64_t n,
                                     size_t slot_bytes, int slot_blocks, cr_gpu_work *w)
{
    struct cr_gpu_state *g = h->gpu;
    coopreduce_status s = COOPREDUCE_SUCCESS;
    if (plan->trees == 1) s = tree_ensure(h, n, plan->acc);
    if (!s && plan->trees == 3) s = norm2_ensure(h, n);
    /* the ticket area always (exact.cu folds into it without slots), the slots when asked */
    if (!s) s = cr_gpu_slots_ensure(h, slot_bytes * (size_t)slot_blocks);
    if (s || !w) return s;
    memset(w, 0, sizeof *w);
    w->tree_partials = g->tree_partials;
    w->tree_counters = g->tree_counters;
    if (plan->trees == 3) norm2_layout(g->norm2_cap, (char *)g->norm2, &w->norm2);
    w->slots = g->slots;
    w->ticket = (unsigned int *)g->ticket;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_work_free(coopreduce_handle *h)
{
    struct cr_gpu_state *g = h->gpu;
    coopreduce_status s = COOPREDUCE_SUCCESS;
    void *dev[] = {g->tree_partials, g->tree_counters, g->norm2, g->slots,
                   g->ticket,        g->out,           g->gather,       g->row_tickets};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) {
        cudaError_t e = dev[i] ? cudaFree(dev[i]) : cudaSuccess;
        if (e != cudaSuccess && !s) s = cr_cuda_fail(h, e, "freeing the workspace");
    }
    void *host[] = {g->host_slot, g->pinned};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) {
        cudaError_t e = host[i] ? cudaFreeHost(host[i]) : cudaSuccess;
        if (e != cudaSuccess && !s) s = cr_cuda_fail(h, e, "freeing pinned memory");
    }
    g->tree_partials = g->tree_counters = g->norm2 = g->slots = g->ticket = g->out = NULL;
    g->gather = NULL;
    g->gather_bytes = 0;
    g->row_tickets = NULL;
    g->row_tickets_count = 0;
    g->host_slot = g->host_slot_dev = g->pinned = NULL;
    g->tree_partials_bytes = g->tree_counters_bytes = g->slots_bytes = g->pinned_bytes = 0;
    g->norm2_cap = 0;
    return s;
}
