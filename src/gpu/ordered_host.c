/* ordered_host.c — the canonical-order operations on a GPU handle (kernels in ordered.cu):
 * SUM of FLOAT16 and BFLOAT16; MEAN, SUMSQ, NORM2 and DOT of every float type.
 *
 * The same steps as src/cpu/ops.c, so the same bits: level 1 (one partial per chunk of leaves,
 * per leaf class), the canonical sum of the partials, the op's final rule (values.h). Each call
 * is one launch on the caller's stream, and does not wait unless the result goes to the host:
 *   - one leaf class (SUM and MEAN of 16-bit input, SUMSQ, DOT): ordered.cu's fused_kernel,
 *     level 1 then tree.cuh's tagged hand-off up the canonical tree of the partials, the final
 *     rule applied by the warp that completes it. Workspace: the canonical sum's (gpu_host.c),
 *     sized for n elements of the accumulation type.
 *   - MEAN of float32 or float64, whose leaves are the input itself: the canonical sum with the
 *     final rule (canonical.cu).
 *   - NORM2 (three leaf classes): ordered.cu's norm2_kernel, three trees side by side in this
 *     file's workspace (struct cr_norm2_work), zeroed when allocated.
 *   - n == 0: a one-thread kernel writes the rule's value for the sum of nothing. */
#include <stdio.h>
#include <string.h>
#include "gpu/gpu_state.h"

/* From ordered.cu; each int is a cudaError_t. */
int cr_gpu_ordered_launch(int dtype, int leaf, int op, int narrow, const void *x, const void *y,
                          uint64_t n, void *out, void *partials, void *counters,
                          const struct cr_norm2_work *w3, int *blocks, int stream_once,
                          void *stream);
uint64_t cr_gpu_ordered_chunk(int dtype);
int cr_gpu_ordered_warps(void);
int cr_gpu_ordered_occupancy(int dtype, int *blocks_per_sm);
int cr_gpu_ordered_empty(int op, int dtype, int narrow, void *out, void *stream);

/* NORM2's workspace, laid out for a capacity of `cap` elements whatever the call's n and type
 * (the counters must stay where zeros were left: a layout that moved with n would put one
 * call's counters on another's stale partials): 256 bytes of join slots (three sums of two
 * tagged words, then the join count), then per tree the partials and the counters of a
 * canonical sum of cap float64 elements (the larger of the two accumulation types' needs),
 * each region 256-byte aligned. Fills *w when base is not NULL; returns the bytes. */
static size_t norm2_layout(uint64_t cap, char *base, struct cr_norm2_work *w)
{
    size_t pb, cb, p32, c32;
    cr_gpu_workspace_bytes(cap, COOPREDUCE_FLOAT64, &pb, &cb);
    cr_gpu_workspace_bytes(cap, COOPREDUCE_FLOAT32, &p32, &c32);
    if (p32 > pb) pb = p32;
    if (c32 > cb) cb = c32;
    pb = (pb + 255) / 256 * 256;
    cb = (cb + 255) / 256 * 256;
    if (base) {
        w->slots = base;
        w->join = (unsigned int *)(base + 64);
        for (int k = 0; k < 3; k++) {
            w->partials[k] = base + 256 + (size_t)k * (pb + cb);
            w->counters[k] = base + 256 + (size_t)k * (pb + cb) + pb;
        }
        w->epoch = (unsigned int *)w->counters[0];
    }
    return 256 + 3 * (pb + cb);
}

/* Grows NORM2's workspace to n elements; new memory is zeroed before use (counters, epoch,
 * join, tags). */
static coopreduce_status ensure(coopreduce_handle *h, uint64_t n)
{
    struct cr_gpu_state *g = h->gpu;
    if (n <= g->o_cap) return COOPREDUCE_SUCCESS;
    const size_t bytes = norm2_layout(n, NULL, NULL);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaSuccess) e = cudaMemset(p, 0, bytes);
    if (e == cudaSuccess) e = cudaDeviceSynchronize(); /* zero before any stream uses it */
    if (e != cudaSuccess) {
        if (p) cudaFree(p);
        (void)cudaGetLastError();
        return cr_cuda_fail(h, e, "allocating the workspace of NORM2");
    }
    if (g->o_work) cudaFree(g->o_work); /* waits for kernels still using it */
    g->o_work = p;
    g->o_cap = n;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_ordered_reserve(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype)
{
    (void)dtype; /* laid out for either accumulation type */
    return ensure(h, n);
}

void cr_gpu_ordered_free(struct cr_gpu_state *g)
{
    if (g->o_work) cudaFree(g->o_work);
    g->o_work = NULL;
    g->o_cap = 0;
}

/* The grid: one block per 8 chunks, at most one full wave (or the handle's forced grid). */
static coopreduce_status grid_for(coopreduce_handle *h, coopreduce_dtype dtype, uint64_t chunks,
                                  int *blocks)
{
    struct cr_gpu_state *g = h->gpu;
    if (h->grid_blocks) {
        *blocks = h->grid_blocks;
        return COOPREDUCE_SUCCESS;
    }
    const int cls = dtype == COOPREDUCE_FLOAT32 ? 0 : dtype == COOPREDUCE_FLOAT64 ? 1 : 2;
    if (!g->o_blocks_per_sm[cls]) {
        int b = 0;
        cudaError_t e = (cudaError_t)cr_gpu_ordered_occupancy((int)dtype, &b);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return cr_cuda_fail(h, e, "sizing the grid");
        }
        g->o_blocks_per_sm[cls] = b > 0 ? b : 1;
    }
    const uint64_t w = (uint64_t)cr_gpu_ordered_warps();
    const uint64_t need = (chunks + w - 1) / w;
    const uint64_t full = (uint64_t)g->sm_count * (uint64_t)g->o_blocks_per_sm[cls];
    *blocks = (int)(need < full ? need : full);
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_reduce_ordered(coopreduce_handle *h, coopreduce_op op, const void *x,
                                        const void *y, void *result, uint64_t n,
                                        coopreduce_dtype dtype, void *stream, int to_host)
{
    struct cr_gpu_state *g = h->gpu;
    coopreduce_status s;
    if (n > 0 && (s = cr_gpu_check_pointer(h, x, "x"))) return s;
    if (n > 0 && op == COOPREDUCE_OP_DOT && (s = cr_gpu_check_pointer(h, y, "y"))) return s;
    if (!to_host && (s = cr_gpu_check_pointer(h, result, "result"))) return s;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");

    const int f32_or_f64 = dtype == COOPREDUCE_FLOAT32 || dtype == COOPREDUCE_FLOAT64;
    void *out = to_host ? g->host_slot_dev : result;
    int blocks = 0, threads = 0;
    if (n == 0) {
        e = (cudaError_t)cr_gpu_ordered_empty((int)op, (int)dtype, h->narrow, out, stream);
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "launching the empty result");
    } else if (f32_or_f64 && (op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN)) {
        /* the leaves are x itself: the canonical sum, with the final rule */
        if ((s = cr_gpu_canonical_enqueue(h, x, n, dtype, out, NULL, 0, (int)op, stream, &blocks,
                                          &threads)))
            return s;
    } else {
        const uint64_t C = cr_gpu_ordered_chunk((int)dtype);
        const uint64_t bytes = n * coopreduce_dtype_size(dtype) * (op == COOPREDUCE_OP_DOT ? 2u : 1u);
        const int leaf = op == COOPREDUCE_OP_SUMSQ ? 1 : op == COOPREDUCE_OP_DOT ? 2
                         : op == COOPREDUCE_OP_NORM2 ? 3 : 0;
        struct cr_norm2_work w3;
        memset(&w3, 0, sizeof w3);
        if (leaf == 3) {
            if ((s = ensure(h, n))) return s;
            norm2_layout(g->o_cap, (char *)g->o_work, &w3);
        } else if ((s = cr_gpu_ensure_workspace(h, n, dtype == COOPREDUCE_FLOAT64
                                                          ? COOPREDUCE_FLOAT64
                                                          : COOPREDUCE_FLOAT32))) {
            return s;
        }
        if ((s = grid_for(h, dtype, (n + C - 1) / C, &blocks))) return s;
        e = (cudaError_t)cr_gpu_ordered_launch((int)dtype, leaf, (int)op, h->narrow, x, y, n, out,
                                               g->partials, g->counters, &w3, &blocks,
                                               bytes > g->l2_bytes, stream);
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "launching the operation");
        threads = 32 * cr_gpu_ordered_warps();
    }
    if (to_host) {
        e = cudaStreamSynchronize((cudaStream_t)stream);
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "waiting for the result");
        memcpy(result, g->host_slot, coopreduce_op_result_size(op, dtype, h->narrow, NULL));
    }
    memset(&h->last, 0, sizeof h->last);
    h->last.method = COOPREDUCE_METHOD_CANONICAL;
    h->last.blocks = blocks;
    h->last.threads = threads;
    h->last.launches = 1;
    h->last.host_sync = to_host;
    return COOPREDUCE_SUCCESS;
}
