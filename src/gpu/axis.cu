/* axis.cu — the GPU kernels of reductions along an axis (axis.c drives them): the gather of
 * strided rows into contiguous ones, which lets every family reduce a row of a C-ordered axis
 * with inner > 1 as it reduces a 1-D array. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "gpu/launch.h"

namespace {

/* dst[c * len + e] = src[e * inner + c] for c < w, e < len: a tile of w adjacent columns of a
 * (len, inner) slab, each made a contiguous row. Threads of a warp take adjacent columns, so the
 * reads of one e are one coalesced run; the writes are scattered by len, which only this generic
 * path pays. */
template <class T>
__global__ void gather_kernel(const T *__restrict__ src, T *__restrict__ dst, uint64_t len,
                              uint64_t inner, uint64_t w)
{
    const uint64_t total = len * w;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const uint64_t e = t / w, c = t % w;
        dst[c * len + e] = src[e * inner + c];
    }
}

template <class T>
cudaError_t gather(const void *src, void *dst, uint64_t len, uint64_t inner, uint64_t w,
                   int sm_count, cudaStream_t stream)
{
    const uint64_t total = len * w, threads = 256;
    uint64_t blocks = (total + threads - 1) / threads;
    const uint64_t most = (uint64_t)sm_count * 8;
    if (blocks > most) blocks = most;
    if (blocks < 1) blocks = 1;
    gather_kernel<T><<<(unsigned)blocks, (unsigned)threads, 0, stream>>>((const T *)src, (T *)dst,
                                                                         len, inner, w);
    return cudaGetLastError();
}

} // namespace

extern "C" cudaError_t cr_gpu_gather_launch(const void *src, void *dst, size_t elem_size,
                                            uint64_t len, uint64_t inner, uint64_t w, int sm_count,
                                            cudaStream_t stream)
{
    switch (elem_size) {
    case 2: return gather<uint16_t>(src, dst, len, inner, w, sm_count, stream);
    case 4: return gather<uint32_t>(src, dst, len, inner, w, sm_count, stream);
    case 8: return gather<unsigned long long>(src, dst, len, inner, w, sm_count, stream);
    default: return cudaErrorInvalidValue;
    }
}
