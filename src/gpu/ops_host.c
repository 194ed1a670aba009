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

/* Partials for `blocks` blocks (at least a full automatic grid's), in the scratch the methods
 * share (methods_host.c). */
static coopreduce_status ensure(coopreduce_handle *h, int blocks)
{
    struct cr_gpu_state *g = h->gpu;
    size_t want = (size_t)blocks;
    size_t floor_blocks = (size_t)g->sm_count * CR_OPS_MAX_BLOCKS_PER_SM;
    if (want < floor_blocks) want = floor_blocks;
    return cr_gpu_scratch_ensure(h, want * CR_OPS_PART_BYTES);
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
    const size_t rs = coopreduce_op_result_size(op, dtype, 0, NULL);
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
    void *out = to_host ? g->m_out : result;
    e = (cudaError_t)cr_gpu_ops_launch((int)op, (int)dtype, x, n, out, g->m_partials,
                                       (unsigned int *)g->m_ticket, blocks, stream);
    if (e != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "launching %s of %s", coopreduce_op_name(op),
                 coopreduce_dtype_name(dtype));
        return cr_cuda_fail(h, e, what);
    }
    if (to_host) {
        /* Through the handle's pinned slot (a plain-memory destination would make the copy
         * staged); the other host-result paths use the slot the same way, one call at a time. */
        e = cudaMemcpyAsync(g->host_slot, g->m_out, rs, cudaMemcpyDeviceToHost, st);
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
