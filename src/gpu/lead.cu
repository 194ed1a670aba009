/* lead.cu — the device side of a distributed call's first exchange (src/dist/protocol.c): a
 * rank's meta and its first data packed into the slot the transport gathers, and a deferred
 * all-reduce's last step, which checks every rank's meta on the device (the checks
 * cr_dist_first_exchange and cr_dist_check_agreement make on the host, in the same order) and
 * either writes the results or records the first failure for the host to read later; and a small
 * sharded array put together from the ranks' slots. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "dist/meta.h"
#include "gpu/launch.h"

namespace {

constexpr int kLeadThreads = 256;

__global__ void __launch_bounds__(kLeadThreads)
    pack_lead_kernel(cr_meta meta, unsigned char *dst, const unsigned char *data, size_t bytes)
{
    if (threadIdx.x == 0) *reinterpret_cast<cr_meta *>(dst) = meta;
    unsigned char *d = dst + sizeof(cr_meta);
    for (size_t i = threadIdx.x; i < bytes; i += kLeadThreads) d[i] = data[i];
}

__global__ void __launch_bounds__(kLeadThreads)
    commit_kernel(const unsigned char *metas, size_t stride, int R, cr_meta mine, const unsigned char *out,
                  unsigned char *recv, size_t bytes, cr_deferred *rec)
{
    __shared__ int verdict;
    if (threadIdx.x == 0) {
        /* the host's checks, in its order (protocol.c: cr_dist_first_exchange, then
         * cr_dist_check_agreement) */
        auto m = [&](int r) { return reinterpret_cast<const cr_meta *>(metas + (size_t)r * stride); };
        int kind = CR_DEFER_NONE, rank = -1;
        for (int r = 0; r < R && !kind; r++)
            if (cr_meta_other_call(&mine, m(r))) kind = CR_DEFER_NOT_SAME_CALL, rank = r;
        for (int r = 0; r < R && !kind; r++)
            if (m(r)->status != 0) kind = CR_DEFER_RANK_FAILED, rank = r;
        for (int r = 1; r < R && !kind; r++)
            if (cr_meta_disagreement(m(0), m(r))) kind = CR_DEFER_DISAGREE, rank = r;
        if (kind && rec->set == 0) {
            rec->kind = kind;
            rec->rank = rank;
            rec->serial = mine.serial;
            rec->first = *m(0);
            rec->bad = *m(rank);
            __threadfence_system(); /* every field before the flag the host reads first */
            rec->set = 1;
            __threadfence_system();
        }
        verdict = kind;
    }
    __syncthreads();
    if (verdict) return; /* recv is left as it was */
    for (size_t i = threadIdx.x; i < bytes; i += kLeadThreads) recv[i] = out[i];
}

/* Block r copies rank r's data (its meta's n elements after the meta) to its place in the
 * whole array: after the data of ranks 0 .. r-1. */
__global__ void __launch_bounds__(kLeadThreads)
    unpack_kernel(const unsigned char *slots, size_t stride, size_t es, unsigned char *out)
{
    __shared__ uint64_t at;
    const int r = blockIdx.x;
    if (threadIdx.x == 0) {
        uint64_t off = 0;
        for (int q = 0; q < r; q++) off += reinterpret_cast<const cr_meta *>(slots + q * stride)->n;
        at = off;
    }
    __syncthreads();
    const unsigned char *src = slots + r * stride + sizeof(cr_meta);
    const size_t bytes = reinterpret_cast<const cr_meta *>(slots + r * stride)->n * es;
    unsigned char *dst = out + at * es;
    for (size_t i = threadIdx.x; i < bytes; i += kLeadThreads) dst[i] = src[i];
}

} // namespace

extern "C" cudaError_t cr_gpu_unpack_lead_launch(const void *slots, int R, size_t stride,
                                                 size_t elem_size, void *out, cudaStream_t stream)
{
    if (R < 1) return cudaSuccess;
    unpack_kernel<<<R, kLeadThreads, 0, stream>>>(static_cast<const unsigned char *>(slots), stride,
                                                  elem_size, static_cast<unsigned char *>(out));
    return cudaGetLastError();
}

extern "C" cudaError_t cr_gpu_pack_lead_launch(void *dst, const void *meta, const void *data,
                                               size_t data_bytes, cudaStream_t stream)
{
    cr_meta m;
    memcpy(&m, meta, sizeof m);
    pack_lead_kernel<<<1, kLeadThreads, 0, stream>>>(m, static_cast<unsigned char *>(dst),
                                                      static_cast<const unsigned char *>(data),
                                                      data_bytes);
    return cudaGetLastError();
}

extern "C" cudaError_t cr_gpu_deferred_commit_launch(const void *metas, int R, size_t stride,
                                                     const void *mine,
                                                     const void *out, void *recv, size_t bytes,
                                                     void *record, cudaStream_t stream)
{
    cr_meta m;
    memcpy(&m, mine, sizeof m);
    commit_kernel<<<1, kLeadThreads, 0, stream>>>(
        static_cast<const unsigned char *>(metas), stride, R, m, static_cast<const unsigned char *>(out),
        static_cast<unsigned char *>(recv), bytes, static_cast<cr_deferred *>(record));
    return cudaGetLastError();
}
