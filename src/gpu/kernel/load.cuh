/* load.cuh — how every GPU kernel family reads its input.
 *
 *  - The stream-once policy: an input larger than L2 is read once and streamed through with a
 *    last-use hint (ld.global.lu), so that it does not push out what L2 holds; an input that
 *    fits in L2 is read through the read-only path (__ldg), since the caller may read it again
 *    (a last-use hint there made back-to-back float64 sums of 32 MB fall out of L2). The host
 *    picks the policy per call (bytes > L2 size) and the kernels are instantiated for both.
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
