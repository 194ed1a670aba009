/* ops_host.c — running the order-independent operations (kernels in ops.cu) from a GPU handle:
 * MIN, MAX, ABSMAX, ARGMIN, ARGMAX of every dtype; SUM and MEAN of the integer dtypes.
 *
 * One kernel launch per call, whatever n (n == 0 included: the kernel writes 0 or the NaN of an
 * empty mean), no host synchronisation unless the result goes to the host. The workspace — one
 * 16-byte Part per block, a ticket counter the kernels leave at zero, and a 16-byte device slot
 * for host results — is allocated on the first call and only grows for a forced grid larger
 * than any seen (coopreduce_set_grid_blocks), so the hot path allocates nothing. */
#include <stdio.h>
#include <string.h>
#include "gpu/gpu_state.h"

/* From ops.cu; each returns a cudaError_t. */
int cr_gpu_ops_supported(int op, int dtype);
int cr_gpu_ops_grid(int op, int dtype, uint64_t n, int device, int sm_count, int forced,
                    int max_blocks, int *blocks, int *threads);
int cr_gpu_ops_launch(int op, int dtype, const void *x, uint64_t n, void *out, void *partials,
                      unsigned int *ticket, int blocks, void *stream);

/* A forced grid is clamped to this many blocks (16 bytes of workspace each: 1 MiB). */
#define CR_OPS_MAX_GRID 65536
/* Blocks per SM the automatic grid can reach: 256-thread blocks, at most 2048 resident threads
 * per SM on the GPUs coopreduce runs on. The first allocation covers it, so only a forced grid
 * can make the Parts grow later. */
#define CR_OPS_MAX_BLOCKS_PER_SM 8
#define CR_OPS_PART_BYTES 16

void cr_gpu_ops_free(struct cr_gpu_state *g)
{
    /* Called while destroying, after the waits of the earlier frees: errors cannot be reported
     * better than the caller's. */
    if (g->o_partials) cudaFree(g->o_partials);
    if (g->o_ticket) cudaFree(g->o_ticket);
    if (g->o_out) cudaFree(g->o_out);
    g->o_partials = g->o_ticket = g->o_out = NULL;
    g->o_partials_bytes = 0;
}

/* The ticket and the result slot on first use; Parts for `blocks` blocks. New buffers are
 * allocated before old ones are freed, so a failure leaves the handle as it was. */
static coopreduce_status ensure(coopreduce_handle *h, int blocks)
{
    struct cr_gpu_state *g = h->gpu;
    cudaError_t e = cudaSuccess;
    if (!g->o_ticket) {
        void *t = NULL, *o = NULL;
        e = cudaMalloc(&t, 256);
        if (e == cudaSuccess) e = cudaMalloc(&o, 256);
        if (e == cudaSuccess) e = cudaMemset(t, 0, 256);
        /* The zero must be in place before a kernel on any stream reads it. */
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            if (t) cudaFree(t);
            if (o) cudaFree(o);
            (void)cudaGetLastError();
            return cr_cuda_fail(h, e, "allocating the operations' ticket");
        }
        g->o_ticket = t;
        g->o_out = o;
    }
    size_t want = (size_t)blocks;
    size_t floor_blocks = (size_t)g->sm_count * CR_OPS_MAX_BLOCKS_PER_SM;
    if (want < floor_blocks) want = floor_blocks;
    size_t bytes = want * CR_OPS_PART_BYTES;
    if (bytes > g->o_partials_bytes) {
        void *p = NULL;
        e = cudaMalloc(&p, bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return cr_cuda_fail(h, e, "allocating the operations' partials");
        }
        if (g->o_partials) cudaFree(g->o_partials); /* waits for kernels still using it */
        g->o_partials = p;
        g->o_partials_bytes = bytes;
    }
    return COOPREDUCE_SUCCESS;
}

/* Bytes of the result of op over dtype (coopreduce_reduce's table, no narrowing involved). */
static size_t result_bytes(coopreduce_op op, coopreduce_dtype dtype)
{
    switch (op) {
    case COOPREDUCE_OP_ARGMIN:
    case COOPREDUCE_OP_ARGMAX:
    case COOPREDUCE_OP_MEAN: return 8;
    case COOPREDUCE_OP_SUM: return coopreduce_dtype_size(dtype) == 8 ? 16 : 8;
    default: return coopreduce_dtype_size(dtype);
    }
}

coopreduce_status cr_gpu_reduce_unordered(coopreduce_handle *h, coopreduce_op op, const void *x,
                                          void *result, uint64_t n, coopreduce_dtype dtype,
                                          void *stream, int to_host)
{
    if (!cr_gpu_ops_supported((int)op, (int)dtype)) {
        const char *on = coopreduce_op_name(op), *dn = coopreduce_dtype_name(dtype);
        return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED,
                       "%s of %s has no GPU kernel among the order-independent operations",
                       on ? on : "(unknown op)", dn ? dn : "(unknown dtype)");
    }
    struct cr_gpu_state *g = h->gpu;
    cudaStream_t st = (cudaStream_t)stream;
    const size_t rs = result_bytes(op, dtype);
    coopreduce_status s;
    if (n > 0 && (s = cr_gpu_check_pointer(h, x, "x"))) return s;
    if (!to_host && (s = cr_gpu_check_pointer(h, result, "result"))) return s;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");

    int blocks = 0, threads = 0;
    e = (cudaError_t)cr_gpu_ops_grid((int)op, (int)dtype, n, h->device, g->sm_count,
                                     h->grid_blocks, CR_OPS_MAX_GRID, &blocks, &threads);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cr_cuda_fail(h, e, "sizing the grid");
    }
    if ((s = ensure(h, blocks))) return s;

    /* The device result: the caller's memory, or the handle's slot, copied back after. */
    void *out = to_host ? g->o_out : result;
    e = (cudaError_t)cr_gpu_ops_launch((int)op, (int)dtype, x, n, out, g->o_partials,
                                       (unsigned int *)g->o_ticket, blocks, stream);
    if (e != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "launching %s of %s", coopreduce_op_name(op),
                 coopreduce_dtype_name(dtype));
        return cr_cuda_fail(h, e, what);
    }
    if (to_host) {
        /* Through the handle's pinned slot (a plain-memory destination would make the copy
         * staged); the other host-result paths use the slot the same way, one call at a time. */
        e = cudaMemcpyAsync(g->host_slot, g->o_out, rs, cudaMemcpyDeviceToHost, st);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st);
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "copying the result to the host");
        memcpy(result, g->host_slot, rs);
    }
    memset(&h->last, 0, sizeof h->last);
    h->last.method = COOPREDUCE_METHOD_CANONICAL;
    h->last.blocks = blocks;
    h->last.threads = threads;
    h->last.launches = 1;
    h->last.host_sync = to_host;
    return COOPREDUCE_SUCCESS;
}
