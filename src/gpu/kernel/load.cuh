/* load.cuh — how every GPU kernel family reads its input.
 *
 *  - The stream-once policy: an input larger than L2 is read once and streamed through with a
 *    last-use hint (ld.global.lu), so that it does not push out what L2 holds; an input that
 *    fits in L2 is read through the read-only path (__ldg), since the caller may read it again
 *    (a last-use hint there made back-to-back float64 sums of 32 MB fall out of L2). The host
 *    picks the policy per call (bytes > L2 size) and the kernels are instantiated for both.
 *  - The read direction: an input larger than L2 is walked downward in every other launch, so
 *    that a launch starts on the lines the previous one left in L2 (walk, below).
 *  - Split: 16-byte loads for any element-aligned pointer. The elements before the first 16-byte
 *    boundary (the head) and after the last whole vector (the tail) are read one at a time; the
 *    body in between as 16-byte vectors.
 *
 * Part of the kernel layer (src/gpu/kernel/); included by .cu files only. */
#ifndef COOPREDUCE_KERNEL_LOAD_CUH
#define COOPREDUCE_KERNEL_LOAD_CUH

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

/* CR_TUNE_LOAD, the load of data read once (scripts/tune.sh compares them; none changes a bit):
 *   0: __ldg (read-only path); 1: __ldcs (evict-first); 2: __ldlu (last use, the default,
 *   measured fastest at 2^28: docs/PERF.md). */
#ifndef CR_TUNE_LOAD
#define CR_TUNE_LOAD 2
#endif
template <typename V> __device__ __forceinline__ V load_stream_once(const V *p)
{
#if CR_TUNE_LOAD == 1
    return __ldcs(p);
#elif CR_TUNE_LOAD == 2
    return __ldlu(p);
#else
    return __ldg(p);
#endif
}

/* Reuse of L2 across back-to-back launches of an input larger than L2. A launch that streams
 * each warp's chunks upward leaves in L2 the upper end of every warp's range (what it read
 * last); reading the same way again evicts each line shortly before it is wanted. With
 * CR_TUNE_ALTERNATE 1, every other such launch (the launch tag's parity, which lives on the
 * device and so alternates under CUDA graphs too) walks its chunks downward and starts on those
 * lines. The set of chunks a warp reads and each partial's index are the same either way: no bit
 * can change. Inputs that fit in L2 are read upward always (descending there measured 0.1-0.3 us
 * slower). Against upward only, hot, on an H200 (docs/perf-log, runs 305-306): float32 SUM 2^24
 * 19.55 to 19.20 us, 2^26 64.8 to 63.3; float64 2^26 123.0 to 119.9; bfloat16 SUMSQ 2^26 36.3 to
 * 33.8; float32 MEAN 2^24 20.6 to 16.8; cold, level. Reading such inputs through the read-only
 * path instead of the stream-once policy, so that more lines stay, took float32 SUM 2^24 to
 * 16.8 us hot but from 23.7 to 27.0 cold (an L2 full of another kernel's lines): not done. */
#ifndef CR_TUNE_ALTERNATE
#define CR_TUNE_ALTERNATE 1
#endif
/* Whether the launch of tag `tag` reads downward (pass 0 for a launch that always reads upward). */
__device__ __forceinline__ bool walk_down(unsigned int tag)
{
    return CR_TUNE_ALTERNATE && (tag & 1u);
}
/* The order of a warp's chunks c0, c0 + stride, ... below c1 (c0 < c1): first, then step (stride,
 * or -stride modulo 2^64) until last. */
struct Walk {
    uint64_t first, last, step;
};
__device__ __forceinline__ Walk walk(uint64_t c0, uint64_t c1, uint64_t stride, unsigned int tag)
{
    const uint64_t last = c0 + (c1 - c0 - 1) / stride * stride; /* the last chunk below c1 */
    if (walk_down(tag)) return {last, c0, 0 - stride};
    return {c0, last, stride};
}

/* A 16-byte load: streamed once (kStream) or through the read-only path. */
template <bool kStream> __device__ __forceinline__ uint4 load16(const void *p)
{
    const uint4 *q = static_cast<const uint4 *>(p);
    return kStream ? load_stream_once(q) : __ldg(q);
}

/* Asynchronous copies into shared memory (sm_80's cp.async): 16 bytes from a 16-byte aligned
 * global address to a 16-byte aligned shared one, through L2 only (.cg). A thread's copies land
 * by commit group (cp_async_wait_group); other threads see them after a barrier or __syncwarp.
 * Bytes in flight this way hold no registers. */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    const unsigned int s = (unsigned int)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
/* The copies issued since the last commit, as one group; waiting until at most N groups (the
 * N latest) are still in flight. */
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void cp_async_wait_group()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
/* Waiting until every copy of the thread has landed. */
__device__ __forceinline__ void cp_async_wait_all()
{
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

/* The head / body / tail split of n elements of `bytes` bytes at x. vec == false: no body
 * vectors, every element a unit of its own (head 0). */
struct Split {
    uint64_t head;       /* elements before the first 16-byte boundary (at most n) */
    uint64_t units;      /* 16-byte vectors (vec), or elements, after the head */
    uint64_t tail_start; /* the first element after the last unit */
};
__device__ __forceinline__ Split split16(const void *x, uint64_t n, int bytes, bool vec = true)
{
    Split s;
    s.head = 0;
    if (vec) {
        const uintptr_t mis = (uintptr_t)x % 16;
        s.head = mis ? (16 - mis) / bytes : 0;
        if (s.head > n) s.head = n;
    }
    const int per = vec ? 16 / bytes : 1;
    s.units = (n - s.head) / per;
    s.tail_start = s.head + s.units * per;
    return s;
}

} // namespace

#endif
