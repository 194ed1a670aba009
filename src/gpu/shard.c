/* shard.c — what sharded reductions and the all-reduce (src/dist) ask of a GPU handle: the chunk
 * values of a shard's interior (partials.cu), the unrounded exact accumulator (exact.cu with
 * CR_FMT_RAW), and plain copies, allocations and waits on the caller's stream. gpu.h declares
 * them; gpu_none.c refuses them in a build without CUDA. */
#include <string.h>
#include "core/dtype.h"
#include "core/status.h"
#include "core/superacc.h"
#include "gpu/gpu.h"
#include "gpu/state.h"

coopreduce_status cr_gpu_shard_partials(coopreduce_handle *h, coopreduce_dtype dtype, cr_leaf leaf,
                                        const void *x, const void *y, uint64_t n,
                                        void *const out[3], int shift_ok, void *stream)
{
    if (n == 0) return COOPREDUCE_SUCCESS;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    (void)cudaGetLastError();
    const uint64_t bytes = n * cr_dtype_size(dtype) * (leaf == CR_LEAF_PRODUCT ? 2u : 1u);
    e = cr_gpu_partials_launch(dtype, leaf, x, y, n, out, shift_ok, h->gpu->sm_count,
                               bytes > h->gpu->l2_bytes, (cudaStream_t)stream);
    return e == cudaSuccess ? COOPREDUCE_SUCCESS : cr_cuda_fail(h, e, "launching a shard's chunks");
}

coopreduce_status cr_gpu_shard_exact(coopreduce_handle *h, const cr_plan *p, const void *x,
                                     const void *y, uint64_t n, void *out, void *stream)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    cr_gpu_call c = cr_gpu_call_of(h, p, x, y, n, stream);
    c.out = out;
    c.raw = 1;
    cr_gpu_grid grid;
    return cr_gpu_enqueue(h, &c, &grid);
}

coopreduce_status cr_gpu_copy(coopreduce_handle *h, void *dst, const void *src, size_t bytes,
                              void *stream)
{
    if (bytes == 0) return COOPREDUCE_SUCCESS;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream);
    return e == cudaSuccess ? COOPREDUCE_SUCCESS : cr_cuda_fail(h, e, "copying a shard's data");
}

coopreduce_status cr_gpu_store(coopreduce_handle *h, void *dst, const void *src, size_t bytes,
                               void *stream)
{
    if (bytes == 0) return COOPREDUCE_SUCCESS;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e == cudaSuccess) {
        (void)cudaGetLastError();
        e = cr_gpu_store_launch(dst, src, bytes, (cudaStream_t)stream);
    }
    return e == cudaSuccess ? COOPREDUCE_SUCCESS : cr_cuda_fail(h, e, "storing a result");
}

coopreduce_status cr_gpu_wait(coopreduce_handle *h, void *stream)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)stream);
    return e == cudaSuccess ? COOPREDUCE_SUCCESS : cr_cuda_fail(h, e, "waiting for the stream");
}

coopreduce_status cr_gpu_alloc(coopreduce_handle *h, size_t bytes, void **p)
{
    *p = NULL;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e == cudaSuccess) e = cudaMalloc(p, bytes ? bytes : 1);
    if (e == cudaSuccess) return COOPREDUCE_SUCCESS;
    *p = NULL;
    (void)cudaGetLastError();
    return cr_cuda_fail(h, e, "allocating a sharded reduction's device buffer");
}

void cr_gpu_release(int device, void *p)
{
    if (!p) return;
    if (cr_gpu_use_device(device) == cudaSuccess) (void)cudaFree(p);
}

coopreduce_status cr_gpu_allreduce_columns(coopreduce_handle *h, const cr_plan *p,
                                           const void *block, const void *own, int me, int R,
                                           uint64_t s, void *out, void *stream)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    (void)cudaGetLastError();
    e = cr_gpu_columns_tree_launch(p, block, own, me, R, s, out, h->gpu->sm_count,
                                   (cudaStream_t)stream);
    return e == cudaSuccess ? COOPREDUCE_SUCCESS
                            : cr_cuda_fail(h, e, "launching the all-reduce's columns");
}

const char *cr_gpu_pack_lead(int device, void *dst, const void *meta, const void *data,
                             size_t data_bytes, void *stream)
{
    cudaError_t e = cr_gpu_use_device(device);
    if (e == cudaSuccess) {
        (void)cudaGetLastError();
        e = cr_gpu_pack_lead_launch(dst, meta, data, data_bytes, (cudaStream_t)stream);
    }
    return e == cudaSuccess ? NULL : cudaGetErrorString(e);
}

coopreduce_status cr_gpu_deferred_commit(coopreduce_handle *h, const void *metas, int R,
                                         size_t stride, const void *mine, const void *out, void *recv,
                                         size_t bytes, void *record, void *stream)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e == cudaSuccess) {
        (void)cudaGetLastError();
        e = cr_gpu_deferred_commit_launch(metas, R, stride, mine, out, recv, bytes, record,
                                          (cudaStream_t)stream);
    }
    return e == cudaSuccess ? COOPREDUCE_SUCCESS
                            : cr_cuda_fail(h, e, "launching the all-reduce's deferred check");
}

coopreduce_status cr_gpu_unpack_lead(coopreduce_handle *h, const void *slots, int R, size_t stride,
                                     size_t elem_size, void *out, void *stream)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e == cudaSuccess) {
        (void)cudaGetLastError();
        e = cr_gpu_unpack_lead_launch(slots, R, stride, elem_size, out, (cudaStream_t)stream);
    }
    return e == cudaSuccess ? COOPREDUCE_SUCCESS
                            : cr_cuda_fail(h, e, "putting the shards together");
}
