/* lead.cu — the device side of a distributed call's first exchange (src/dist/protocol.c): a
 * rank's meta and its first data packed into the slot the transport gathers; a small call's last
 * step, which checks every rank's meta on the device (the checks cr_dist_first_exchange and
 * cr_dist_check_agreement make on the host, in the same order) and either writes the results or
 * leaves them alone (a deferred call records the first failure for the host to read later); and
 * a small sharded array put together from the ranks' slots. Both of the last two can post the
 * metas to the host, which then waits for them alone, not for the stream: the work behind them
 * (the reduction, the results' copy) is already enqueued. */
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dist/meta.h"
#include "gpu/kernel/gate.cuh"
#include "gpu/launch.h"

namespace {

constexpr int kLeadThreads = 256;
/* A slot's data (at most 16 KB) is copied by kLeadPieces blocks of kLeadThreads threads, 16
 * bytes a thread where the addresses allow: each thread's copies are then few and independent.
 * (One block copying byte by byte made the copy, not the exchange, most of a small sharded
 * call's time.) */
constexpr int kLeadPieces = 4;

/* dst[0 .. bytes) = src[0 .. bytes) by thread t of nt, in the widest words that the two
 * addresses and the length allow. */
template <typename W>
__device__ __forceinline__ void copy_words(unsigned char *dst, const unsigned char *src,
                                           size_t bytes, size_t t, size_t nt)
{
    W *d = reinterpret_cast<W *>(dst);
    const W *s = reinterpret_cast<const W *>(src);
    for (size_t i = t; i < bytes / sizeof(W); i += nt) d[i] = s[i];
}
__device__ __forceinline__ void copy_bytes(unsigned char *dst, const unsigned char *src,
                                           size_t bytes, size_t t, size_t nt)
{
    const uintptr_t a = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes;
    if (a % 16 == 0) copy_words<uint4>(dst, src, bytes, t, nt);
    else if (a % 8 == 0) copy_words<uint2>(dst, src, bytes, t, nt);
    else if (a % 4 == 0) copy_words<uint32_t>(dst, src, bytes, t, nt);
    else if (a % 2 == 0) copy_words<uint16_t>(dst, src, bytes, t, nt);
    else copy_words<unsigned char>(dst, src, bytes, t, nt);
}

__global__ void __launch_bounds__(kLeadThreads)
    pack_lead_kernel(cr_meta meta, unsigned char *dst, const unsigned char *data, size_t bytes)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) *reinterpret_cast<cr_meta *>(dst) = meta;
    copy_bytes(dst + sizeof(cr_meta), data, bytes, (size_t)blockIdx.x * kLeadThreads + threadIdx.x,
               (size_t)gridDim.x * kLeadThreads);
}

/* A small call's last step where no kernel of its own writes the results: the gate, then
 * recv[0 .. bytes) = out[0 .. bytes) if it is open. */
__global__ void __launch_bounds__(kLeadThreads)
    commit_kernel(const cr_gate g, const unsigned char *out, unsigned char *recv, size_t bytes)
{
    if (!cr_gate_open(g)) return; /* recv is left as it was */
    copy_bytes(recv, out, bytes, threadIdx.x, kLeadThreads);
}

/* A small sharded array put together from the gathered slots, where it was gathered whole
 * (cr_meta_lead_whole), before the host has seen the metas: blocks (r, *) copy rank r's data
 * (its meta's n elements after the meta) to its place, after the data of ranks 0 .. r-1; block
 * (0, 0) writes offsets[0 .. 2) = {0, N} (N = 0 where the array is not whole: an empty segment
 * for the reduction enqueued behind it) and posts the metas. out holds at least the gather limit
 * of this rank's own meta, which bounds the whole array. */
__global__ void __launch_bounds__(kLeadThreads)
    whole_kernel(const unsigned char *slots, size_t stride, int R, uint64_t es, uint64_t lead_elems,
                 unsigned char *out, int64_t *offsets, cr_meta_post post)
{
    __shared__ uint64_t at;
    __shared__ int whole;
    const int r = blockIdx.x;
    if (threadIdx.x == 0) {
        uint64_t total = 0, off = 0;
        whole = cr_meta_lead_whole(slots, stride, R, es, lead_elems, &total);
        for (int q = 0; q < r && whole; q++)
            off += reinterpret_cast<const cr_meta *>(slots + q * stride)->n;
        at = off;
        if (r == 0 && blockIdx.y == 0) {
            offsets[0] = 0;
            offsets[1] = whole ? (int64_t)total : 0;
        }
    }
    __syncthreads();
    if (whole)
        copy_bytes(out + at * es, slots + r * stride + sizeof(cr_meta),
                   reinterpret_cast<const cr_meta *>(slots + r * stride)->n * es,
                   (size_t)blockIdx.y * kLeadThreads + threadIdx.x, (size_t)gridDim.y * kLeadThreads);
    if (r == 0 && blockIdx.y == 0) cr_post_metas(slots, stride, R, post);
}

} // namespace

extern "C" cudaError_t cr_gpu_lead_whole_launch(const void *slots, int R, size_t stride,
                                                size_t elem_size, uint64_t lead_elems, void *out,
                                                int64_t *offsets, const cr_meta_post *post,
                                                cudaStream_t stream)
{
    if (R < 1) return cudaSuccess;
    whole_kernel<<<dim3((unsigned)R, kLeadPieces), kLeadThreads, 0, stream>>>(
        static_cast<const unsigned char *>(slots), stride, R, elem_size, lead_elems,
        static_cast<unsigned char *>(out), offsets, *post);
    return cudaGetLastError();
}

extern "C" cudaError_t cr_gpu_pack_lead_launch(void *dst, const void *meta, const void *data,
                                               size_t data_bytes, cudaStream_t stream)
{
    cr_meta m;
    memcpy(&m, meta, sizeof m);
    pack_lead_kernel<<<kLeadPieces, kLeadThreads, 0, stream>>>(
        m, static_cast<unsigned char *>(dst), static_cast<const unsigned char *>(data), data_bytes);
    return cudaGetLastError();
}

extern "C" cudaError_t cr_gpu_commit_launch(const cr_gate *gate, const void *out, void *recv,
                                            size_t bytes, cudaStream_t stream)
{
    commit_kernel<<<1, kLeadThreads, 0, stream>>>(*gate, static_cast<const unsigned char *>(out),
                                                  static_cast<unsigned char *>(recv), bytes);
    return cudaGetLastError();
}
