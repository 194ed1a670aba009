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
                                           uint64_t s, size_t pitch, void *out,
                                           const cr_gate *gate, void *stream)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    (void)cudaGetLastError();
    e = cr_gpu_columns_tree_launch(p, block, own, me, R, s, pitch, out, gate, h->gpu->sm_count,
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

coopreduce_status cr_gpu_commit(coopreduce_handle *h, const cr_gate *gate, const void *out,
                                void *recv, size_t bytes, void *stream)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e == cudaSuccess) {
        (void)cudaGetLastError();
        e = cr_gpu_commit_launch(gate, out, recv, bytes, (cudaStream_t)stream);
    }
    return e == cudaSuccess ? COOPREDUCE_SUCCESS
                            : cr_cuda_fail(h, e, "launching the check of the ranks' calls");
}

coopreduce_status cr_gpu_lead_whole(coopreduce_handle *h, const void *slots, int R, size_t stride,
                                    size_t elem_size, uint64_t lead_elems, void *out,
                                    int64_t *offsets, const cr_meta_post *post, void *stream)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e == cudaSuccess) {
        (void)cudaGetLastError();
        e = cr_gpu_lead_whole_launch(slots, R, stride, elem_size, lead_elems, out, offsets, post,
                                     (cudaStream_t)stream);
    }
    return e == cudaSuccess ? COOPREDUCE_SUCCESS
                            : cr_cuda_fail(h, e, "putting the shards together");
}

/* As reduce.c's wait for a host result: spin on the tag, asking the stream every 1024 spins
 * whether it failed or finished without posting. */
coopreduce_status cr_gpu_wait_posted(coopreduce_handle *h, volatile const uint32_t *tag,
                                     uint32_t seq, void *stream)
{
    for (uint64_t spin = 1; *tag != seq; spin++) {
        if (spin % 1024 == 0) {
            const cudaError_t e = cudaStreamQuery((cudaStream_t)stream);
            if (e == cudaSuccess && *tag != seq)
                return cr_fail(h, COOPREDUCE_ERROR_INTERNAL,
                               "the stream finished without posting the ranks' calls");
            if (e != cudaSuccess && e != cudaErrorNotReady)
                return cr_cuda_fail(h, e, "waiting for the first exchange");
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the metas, posted before the tag */
    return COOPREDUCE_SUCCESS;
}
