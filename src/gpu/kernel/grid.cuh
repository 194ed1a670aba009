/* grid.cuh — occupancy and grid sizing, for every GPU kernel family.
 *
 * The resident blocks per SM of a kernel come from the occupancy calculator, asked once per
 * kernel and device and kept (per call it would be a driver query on the hot path). Racing
 * first calls compute the same value; ordinals beyond the table ask every time. A grid is then
 * the blocks the work needs, at most one full wave (SMs x resident blocks), at least one; a
 * grid forced by coopreduce_set_grid_blocks wins, clamped to what the family's workspace
 * allows. No grid changes a result bit: that is the contract of every family.
 *
 * Part of the kernel layer (src/gpu/kernel/); included by .cu files only. */
#ifndef COOPREDUCE_KERNEL_GRID_CUH
#define COOPREDUCE_KERNEL_GRID_CUH

#include <atomic>
#include <cuda_runtime.h>
#include <stdint.h>

#include "gpu/launch.h"

namespace {

constexpr int kMaxDevices = 64;

/* Resident blocks per SM of kernel K at `threads` threads per block on GPU `device` (current).
 * Fails with cudaErrorInvalidDeviceFunction and friends when the GPU has no code for K, and
 * with cudaErrorInvalidConfiguration when not one block fits. */
template <auto K> cudaError_t occupancy(int threads, int device, int *per_sm)
{
    static std::atomic<int> cache[kMaxDevices];
    if (device >= 0 && device < kMaxDevices) {
        const int c = cache[device].load(std::memory_order_relaxed);
        if (c > 0) {
            *per_sm = c;
            return cudaSuccess;
        }
    }
    int b = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, K, threads, 0);
    if (e != cudaSuccess) return e;
    if (b < 1) return cudaErrorInvalidConfiguration;
    if (device >= 0 && device < kMaxDevices) cache[device].store(b, std::memory_order_relaxed);
    *per_sm = b;
    return cudaSuccess;
}

/* Programmatic dependent launch (sm_90 on): a kernel launched with launch_dependent may start
 * while the kernel before it in the stream finishes; it calls wait_prior_grid() before it reads
 * what that kernel wrote (which then has completed, its memory visible), and the kernel before
 * it calls let_dependents_launch() once its blocks are resident, so that the next one's blocks
 * take the SMs as its own blocks leave, rather than after the last one and a launch. Both are
 * no-ops without such a launch, and below sm_90. */
__device__ __forceinline__ void wait_prior_grid()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void let_dependents_launch()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/* CR_TUNE_PDL: the second launches of two-launch paths by launch_dependent (1), or plain (0). */
#ifndef CR_TUNE_PDL
#define CR_TUNE_PDL 1
#endif

/* kernel<<<blocks, threads, 0, stream>>>(args...), allowed to start before the kernel ahead of it
 * in the stream completes (it must call wait_prior_grid() before reading that kernel's output)
 * on a GPU of compute capability cc_major >= 9; a plain launch below. */
template <typename... P, typename... A>
cudaError_t launch_dependent(int cc_major, void (*kernel)(P...), int blocks, int threads,
                             cudaStream_t stream, A &&...args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned int)blocks);
    cfg.blockDim = dim3((unsigned int)threads);
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = CR_TUNE_PDL && cc_major >= 9 ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<A &&>(args)...);
}

/* Blocks for work that wants `want` blocks: forced > 0 wins (clamped to max_blocks); else at
 * most one wave of sm_count * per_sm blocks (and max_blocks), at least 1. */
inline int grid_blocks(uint64_t want, int sm_count, int per_sm, int forced, int max_blocks)
{
    if (forced > 0) return forced < max_blocks ? forced : max_blocks;
    uint64_t full = (uint64_t)sm_count * (uint64_t)per_sm;
    if (full > (uint64_t)max_blocks) full = (uint64_t)max_blocks;
    const uint64_t b = want < full ? want : full;
    return (int)(b < 1 ? 1 : b);
}

/* The grid of a family that keeps one slot per block of kernel K (scan.cu, exact.cu): `want`
 * blocks of `threads`, at most one wave and max_grid; slots of slot_bytes for at least
 * floor_per_sm blocks per SM (so that only a forced grid ever makes them grow). */
template <auto K>
cudaError_t slotted_grid(const cr_gpu_call *c, int threads, uint64_t want, int max_grid,
                         int floor_per_sm, size_t slot_bytes, cr_gpu_grid *g)
{
    int per_sm = 0;
    g->threads = threads;
    if (!c->forced_blocks) {
        cudaError_t e = occupancy<K>(threads, c->device, &per_sm);
        if (e != cudaSuccess) return e;
    }
    g->blocks = grid_blocks(want, c->sm_count, per_sm, c->forced_blocks, max_grid);
    g->slot_bytes = slot_bytes;
    const int floor_blocks = c->sm_count * floor_per_sm;
    g->slot_blocks = g->blocks > floor_blocks ? g->blocks : floor_blocks;
    return cudaSuccess;
}

} // namespace

#endif
