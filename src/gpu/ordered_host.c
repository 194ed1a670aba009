/* ordered_host.c — the canonical-order operations on a GPU handle (kernels in ordered.cu):
 * SUM of FLOAT16 and BFLOAT16; MEAN, SUMSQ, NORM2 and DOT of every float type.
 *
 * The same steps as src/cpu/ops.c, so the same bits: level 1 (one partial per chunk of leaves,
 * per leaf class), the canonical sum of the partials, the op's final rule (values.h). What each
 * call enqueues, on the caller's stream and without waiting:
 *   - one leaf class (SUM and MEAN of 16-bit input, SUMSQ, DOT): one launch, ordered.cu's
 *     fused_kernel: level 1, then tree.cuh's tagged hand-off up the canonical tree of the
 *     partials, the final rule applied by the warp that completes it. Workspace: the canonical
 *     sum's (gpu_host.c), sized for n elements of the accumulation type.
 *   - MEAN of float32 or float64, whose leaves are the input itself: one launch of the canonical
 *     sum with the final rule (canonical.cu).
 *   - NORM2 (three leaf classes): level 1 (three partial arrays in this file's workspace), three
 *     canonical sums into slots, and finish_kernel, which combines them.
 *   - n == 0: finish_kernel alone, on the sum of nothing (+0.0). */
#include <stdio.h>
#include <string.h>
#include "gpu/gpu_state.h"

/* From ordered.cu; each int is a cudaError_t. */
int cr_gpu_ordered_level1(int dtype, const void *x, uint64_t n, void *const part[3], int blocks,
                          int stream_once, void *stream);
int cr_gpu_ordered_fused(int dtype, int leaf, int op, int narrow, const void *x, const void *y,
                         uint64_t n, void *out, void *partials, void *counters, int *blocks,
                         int stream_once, void *stream);
uint64_t cr_gpu_ordered_chunk(int dtype);
int cr_gpu_ordered_warps(void);
int cr_gpu_ordered_occupancy(int dtype, int *blocks_per_sm);
int cr_gpu_ordered_finish(int op, int dtype, int narrow, uint64_t n, const void *const acc[3],
                          void *out, void *stream);

#define SLOTS_BYTES 256 /* three 8-byte sums, padded so the partials start 256-byte aligned */

static int leaf_classes(coopreduce_op op) { return op == COOPREDUCE_OP_NORM2 ? 3 : 1; }

/* MEAN of float32 or float64: the canonical sum of the input itself, no level 1. */
static int is_direct(coopreduce_op op, coopreduce_dtype dtype)
{
    return (op == COOPREDUCE_OP_MEAN || op == COOPREDUCE_OP_SUM) &&
           (dtype == COOPREDUCE_FLOAT32 || dtype == COOPREDUCE_FLOAT64);
}

/* Bytes of the workspace for n elements: the slots, then `classes` partial arrays. */
static size_t work_bytes(uint64_t n, coopreduce_dtype dtype, int classes)
{
    const uint64_t C = cr_gpu_ordered_chunk((int)dtype);
    const size_t acc = dtype == COOPREDUCE_FLOAT64 ? 8 : 4;
    const size_t one = (size_t)(((n + C - 1) / C * acc + 255) / 256 * 256);
    return SLOTS_BYTES + (size_t)classes * one;
}

static coopreduce_status ensure(coopreduce_handle *h, size_t bytes)
{
    struct cr_gpu_state *g = h->gpu;
    if (bytes <= g->o_work_bytes) return COOPREDUCE_SUCCESS;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cr_cuda_fail(h, e, "allocating the partials of the ordered operations");
    }
    if (g->o_work) cudaFree(g->o_work); /* waits for kernels still using it */
    g->o_work = p;
    g->o_work_bytes = bytes;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_ordered_reserve(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype)
{
    return ensure(h, work_bytes(n, dtype, 3));
}

void cr_gpu_ordered_free(struct cr_gpu_state *g)
{
    if (g->o_work) cudaFree(g->o_work);
    g->o_work = NULL;
    g->o_work_bytes = 0;
}

/* The level-1 grid: one block per 8 chunks, at most one full wave (or the handle's forced grid). */
static coopreduce_status level1_grid(coopreduce_handle *h, coopreduce_dtype dtype,
                                     uint64_t chunks, int *blocks)
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

    const int classes = leaf_classes(op), direct = is_direct(op, dtype);
    const coopreduce_dtype acc_dt = dtype == COOPREDUCE_FLOAT64 ? COOPREDUCE_FLOAT64
                                                                : COOPREDUCE_FLOAT32;
    const uint64_t bytes = n * coopreduce_dtype_size(dtype) * (op == COOPREDUCE_OP_DOT ? 2u : 1u);
    const int stream_once = bytes > g->l2_bytes;
    void *out = to_host ? g->host_slot_dev : result;
    int launches = 0, blocks = 0, threads = 0;
    if (n > 0 && direct) {
        /* the canonical sum of x itself, with the final rule */
        if ((s = cr_gpu_canonical_enqueue(h, x, n, dtype, out, NULL, 0, (int)op, stream, &blocks,
                                          &threads)))
            return s;
        launches = 1;
    } else if (n > 0 && classes == 1) {
        const uint64_t C = cr_gpu_ordered_chunk((int)dtype);
        if ((s = cr_gpu_ensure_workspace(h, n, acc_dt))) return s;
        if ((s = level1_grid(h, dtype, (n + C - 1) / C, &blocks))) return s;
        e = (cudaError_t)cr_gpu_ordered_fused((int)dtype,
                                              op == COOPREDUCE_OP_SUMSQ ? 1
                                              : op == COOPREDUCE_OP_DOT ? 2 : 0,
                                              (int)op, h->narrow, x, y, n, out, g->partials,
                                              g->counters, &blocks, stream_once, stream);
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "launching the operation");
        threads = 32 * cr_gpu_ordered_warps();
        launches = 1;
    } else {
        /* NORM2 (three classes), or n == 0: the final step on canonical sums in slots */
        const void *acc[3] = {NULL, NULL, NULL}; /* NULL: +0.0, the sum of nothing */
        if (n > 0) {
            const uint64_t C = cr_gpu_ordered_chunk((int)dtype);
            const uint64_t count = (n + C - 1) / C; /* the leaves' partials */
            if ((s = ensure(h, work_bytes(n, dtype, classes)))) return s;
            char *slots = (char *)g->o_work;
            void *part[3] = {NULL, NULL, NULL};
            const size_t one = (work_bytes(n, dtype, 1) - SLOTS_BYTES);
            for (int k = 0; k < classes; k++) part[k] = slots + SLOTS_BYTES + (size_t)k * one;
            if ((s = level1_grid(h, dtype, count, &blocks))) return s;
            e = (cudaError_t)cr_gpu_ordered_level1((int)dtype, x, n, part, blocks, stream_once,
                                                   stream);
            if (e != cudaSuccess) return cr_cuda_fail(h, e, "launching level 1");
            threads = 32 * cr_gpu_ordered_warps();
            launches++;
            for (int k = 0; k < classes; k++) {
                if (count == 1) { /* one leaf partial: the sum itself */
                    acc[k] = part[k];
                    continue;
                }
                int b = 0, t = 0;
                void *slot = slots + (size_t)k * 8;
                if ((s = cr_gpu_canonical_enqueue(h, part[k], count, acc_dt, slot, NULL, 0, -1,
                                                  stream, &b, &t)))
                    return s;
                acc[k] = slot;
                launches++;
            }
        }
        e = (cudaError_t)cr_gpu_ordered_finish((int)op, (int)dtype, h->narrow, n, acc, out,
                                               stream);
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "launching the final step");
        launches++;
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
    h->last.launches = launches;
    h->last.host_sync = to_host;
    return COOPREDUCE_SUCCESS;
}
