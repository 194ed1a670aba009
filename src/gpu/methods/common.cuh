/* common.cuh — the pieces every tutorial method shares, so that each method file holds only
 * what is particular to its algorithm (docs/METHODS.md).
 *
 *  - Traits<T>: the accumulator of each input type (float, double; int32 accumulates in 64 bits
 *    so that integer sums are exact) and its 16-byte vector.
 *  - warp_sum / block_sum: tutorial 000's warpReduceSum and blockReduceSum (shfl_down within a
 *    warp, one shared-memory slot per warp, the first warp finishes). Fixed order for a fixed
 *    block size, so they never make a method nondeterministic.
 *  - store_and_finish: the single-launch finish of cuda-samples' threadFenceReduction, used by
 *    every method that claims determinism in one launch: each block stores its partial, fences,
 *    takes a ticket; the last block adds the partials in index order. The bits then depend on
 *    the grid size, never on which block finished first.
 *  - final_pass_kernel: the one-block second pass of tutorial 001 (fixed order, no atomics).
 *  - split_aligned and vector loops: 16-byte loads for any element-aligned pointer.
 *  - launch helpers: occupancy, error checks.
 *
 * Only CUDA C++ includes this file (the .cu files of this directory). */
#ifndef COOPREDUCE_GPU_METHODS_COMMON_CUH
#define COOPREDUCE_GPU_METHODS_COMMON_CUH

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "coopreduce.h"
#include "gpu/methods/methods.h"
}

namespace cg = cooperative_groups;

namespace crm {

/* ---- Types ------------------------------------------------------------------------------- */

template <typename T> struct Traits;
template <> struct Traits<float> {
    typedef float Acc;
    typedef float4 Vec;
    static const int kVec = 4;
};
template <> struct Traits<double> {
    typedef double Acc;
    typedef double2 Vec;
    static const int kVec = 2;
};
template <> struct Traits<int> {
    typedef long long Acc;
    typedef int4 Vec;
    static const int kVec = 4;
};

/* The elements of one 16-byte vector, added left to right into the accumulator type. */
__device__ __forceinline__ float vec_sum(float4 v) { return ((v.x + v.y) + v.z) + v.w; }
__device__ __forceinline__ double vec_sum(double2 v) { return v.x + v.y; }
__device__ __forceinline__ long long vec_sum(int4 v)
{
    return (((long long)v.x + v.y) + v.z) + v.w;
}

/* Atomic addition into the accumulator type (int64 through the unsigned 64-bit atomic: two's
 * complement addition is the same operation). */
__device__ __forceinline__ void atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double *p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(long long *p, long long v)
{
    atomicAdd((unsigned long long *)p, (unsigned long long)v);
}

/* ---- Warp and block sums (tutorial 000) -------------------------------------------------- */

/* Lane 0 ends with the sum of the warp's 32 values (other lanes hold partial sums). */
template <typename Acc>
__device__ __forceinline__ Acc warp_sum(cg::thread_block_tile<32> warp, Acc v)
{
    for (int offset = 16; offset > 0; offset /= 2) v += warp.shfl_down(v, offset);
    return v;
}

/* Thread 0 ends with the sum of the block's values. scratch: 32 Acc of shared memory. The block
 * must not reuse scratch before another block.sync(). */
template <typename Acc>
__device__ __forceinline__ Acc block_sum(cg::thread_block block, Acc v, Acc *scratch)
{
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    v = warp_sum(warp, v);
    if (warp.thread_rank() == 0) scratch[warp.meta_group_rank()] = v;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        unsigned int warps = (block.size() + 31) / 32;
        v = warp.thread_rank() < warps ? scratch[warp.thread_rank()] : Acc(0);
        v = warp_sum(warp, v);
    }
    return v;
}

/* Sum of p[0..count) by one block in a fixed order: thread t adds p[t], p[t + B], ... left to
 * right, then block_sum. Result in thread 0. Reads through L2 (ld.cg): the values were written
 * by other blocks of the same launch. */
template <typename Acc>
__device__ __forceinline__ Acc fixed_order_sum(cg::thread_block block, const Acc *p,
                                               unsigned long long count, Acc *scratch)
{
    Acc v = 0;
    for (unsigned long long i = block.thread_rank(); i < count; i += block.size())
        v += __ldcg(p + i);
    return block_sum(block, v, scratch);
}

/* The single-launch finish. Called by every thread of a participating block, after block_sum
 * (total is valid in thread 0). slot: this block's index among the `count` participants.
 * The block that takes the last ticket adds the partials in index order, writes *out and resets
 * the ticket for the next launch. */
template <typename Acc>
__device__ __forceinline__ void
store_and_finish(cg::thread_block block, Acc total, unsigned int slot, unsigned int count,
                 Acc *partials, unsigned int *ticket, Acc *out, Acc *scratch)
{
    __shared__ bool is_last;
    if (block.thread_rank() == 0) {
        partials[slot] = total;
        __threadfence(); /* the partial is visible before the ticket is */
        is_last = atomicAdd(ticket, 1u) == count - 1;
    }
    block.sync();
    if (!is_last) return;
    __threadfence(); /* every other block's partial is visible after its ticket */
    Acc sum = fixed_order_sum(block, partials, count, scratch);
    if (block.thread_rank() == 0) {
        *out = sum;
        *ticket = 0;
    }
}

/* The one-block second pass (tutorial 001's secondPassReduction, with a full block sum: the
 * tutorial's version keeps only the first warp's share, right only for <= 32 partials). */
template <typename Acc>
__global__ void final_pass_kernel(const Acc *partials, unsigned long long count, Acc *out)
{
    __shared__ Acc scratch[32];
    cg::thread_block block = cg::this_thread_block();
    Acc sum = fixed_order_sum(block, partials, count, scratch);
    if (block.thread_rank() == 0) *out = sum;
}

/* ---- Loads ------------------------------------------------------------------------------- */

/* Elements before the first 16-byte boundary of x (at most n): the head that vector loops take
 * one element at a time. */
template <typename T>
__host__ __device__ __forceinline__ uint64_t head_elems(const T *x, uint64_t n)
{
    uint64_t mis = (uint64_t)(uintptr_t)x % 16;
    uint64_t head = mis ? (16 - mis) / sizeof(T) : 0;
    return head < n ? head : n;
}

/* Thread sum of x[i], i = start, start + stride, ... < n (tutorial 000's grid-stride loop). */
template <typename T>
__device__ __forceinline__ typename Traits<T>::Acc strided_sum(const T *x, uint64_t n,
                                                               uint64_t start, uint64_t stride)
{
    typename Traits<T>::Acc v = 0;
    for (uint64_t i = start; i < n; i += stride) v += x[i];
    return v;
}

/* The same with 16-byte loads: the unaligned head and the ragged tail are taken by the first
 * threads one element each, the aligned body one vector at a time (tutorial 004's int4 loop). */
template <typename T>
__device__ __forceinline__ typename Traits<T>::Acc strided_sum_vec(const T *x, uint64_t n,
                                                                   uint64_t start, uint64_t stride)
{
    typedef typename Traits<T>::Vec Vec;
    const int kVec = Traits<T>::kVec;
    typename Traits<T>::Acc v = 0;
    uint64_t head = head_elems(x, n);
    uint64_t vecs = (n - head) / kVec;
    uint64_t tail_start = head + vecs * kVec;
    if (start < head) v += x[start];
    if (start < n - tail_start) v += x[tail_start + start];
    const Vec *body = (const Vec *)(x + head);
    for (uint64_t i = start; i < vecs; i += stride) v += vec_sum(body[i]);
    return v;
}

/* ---- Host side --------------------------------------------------------------------------- */

#define CRM_TRY(call)                                                                              \
    do {                                                                                           \
        cudaError_t crm_e_ = (call);                                                               \
        if (crm_e_ != cudaSuccess) return (int)crm_e_;                                             \
    } while (0)

/* After a <<<>>> launch: its configuration error, if any. */
#define CRM_CHECK_LAUNCH() CRM_TRY(cudaGetLastError())

/* Blocks of `kernel` that fit on the whole GPU at once (co-residency), >= 0. */
template <typename Kernel>
static cudaError_t resident_blocks(Kernel kernel, int threads, size_t smem, int sm_count,
                                   int *blocks)
{
    int per_sm = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
    *blocks = per_sm * sm_count;
    return e;
}

/* A grid for a grid-stride kernel: enough blocks for `work` items of `per_block` each, at most
 * what fits on the GPU at once, at least 1; a forced count (a->blocks > 0) wins. */
static inline int stride_grid(uint64_t work, uint64_t per_block, int resident, int forced)
{
    if (forced > 0) return forced < CR_METHOD_MAX_GRID ? forced : CR_METHOD_MAX_GRID;
    uint64_t want = (work + per_block - 1) / per_block;
    if (want > (uint64_t)resident) want = (uint64_t)resident;
    if (want < 1) want = 1;
    return (int)want;
}

/* Clears a stale error left by an earlier, unrelated call, so that CRM_CHECK_LAUNCH reports
 * this launch's own. */
static inline void clear_stale_error(void) { (void)cudaGetLastError(); }

} // namespace crm

/* Dispatch on dtype: calls F<float>, F<double> or F<int> with the same arguments. */
#define CRM_DISPATCH(dtype, F, ...)                                                                \
    ((dtype) == COOPREDUCE_FLOAT32   ? F<float>(__VA_ARGS__)                                       \
     : (dtype) == COOPREDUCE_FLOAT64 ? F<double>(__VA_ARGS__)                                      \
                                     : F<int>(__VA_ARGS__))

#endif
