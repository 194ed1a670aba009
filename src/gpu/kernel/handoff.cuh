/* handoff.cuh — the last-block hand-off of the kernel families that finish in one launch with
 * a slot per block, or a fold by atomics (scan.cu, exact.cu); and its warp form, one ticket per
 * row (rows.cu: the warp that stores a row's last level-1 partial reduces the row's partials).
 *
 * Every block stores its partial result in its slot of the workspace (or folds it in by
 * atomics), then takes a ticket; the block that takes the last ticket reads every slot (or the
 * folded words), writes the result and puts the ticket back
 * to zero, ready for the next launch in stream order (no memset between calls). The ordering is
 * the whole difficulty:
 *  - Before the ticket, EVERY thread that wrote part of the slot fences its own stores, and the
 *    block meets at a barrier; only then does one thread take the ticket. A fence by the ticket
 *    thread alone orders only that thread's stores: under compute-sanitizer's serialised
 *    schedule a last block once read another block's slot whose digits had not landed.
 *  - The last block fences again (acquire) before it reads the slots: every other block's slot
 *    is visible after its ticket.
 * The canonical tree (tree.cuh) hands partials off differently, by tagged words and no fences.
 *
 * Part of the kernel layer (src/gpu/kernel/); included by .cu files only. */
#ifndef COOPREDUCE_KERNEL_HANDOFF_CUH
#define COOPREDUCE_KERNEL_HANDOFF_CUH

#include <cooperative_groups.h>
#include <cuda_runtime.h>

namespace {

/* Called by every thread of the block once its slot is written. Returns true in every thread
 * of the last block to arrive, whose threads may then read every block's slot. kEveryThread:
 * the slot was written by many threads (each fences, then the barrier); false: by thread 0
 * alone, whose own fence then suffices, and the other threads skip theirs (a fence per thread
 * is a visible cost at mid sizes). */
template <bool kEveryThread> __device__ __forceinline__ bool last_block_arrive(unsigned int *ticket)
{
    __shared__ bool is_last;
    if (kEveryThread) {
        __threadfence();
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        if (!kEveryThread) __threadfence();
        is_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    const bool last = is_last;
    if (last) __threadfence();
    return last;
}

/* Called by one thread of the last block after its last read of the slots. */
__device__ __forceinline__ void last_block_release(unsigned int *ticket) { *ticket = 0; }

/* The warp form: called by every thread of a warp once its thread 0 has stored the warp's part
 * of a row (thread 0 alone writes it, so its own release fence orders the store before the
 * ticket). Returns true in every thread of the warp that takes the last of the row's `parts`
 * tickets; that warp may then read every part, through L2 (__ldcg): the non-coherent path of
 * __ldg could serve a line this SM cached before the other warps' stores landed. The ticket is
 * put back to zero at once (no other warp of the launch touches it again), ready for the next
 * launch. The fences are acquire-release (fence.acq_rel.gpu), all a hand-off needs, not the
 * sequentially consistent fence of __threadfence. A fence waits for the thread's loads in flight
 * too, which is why a kernel that keeps its next loads in flight (rows.cu's streamed rows)
 * hands off this way only where its input fits in L2. */
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

__device__ __forceinline__ bool last_warp_arrive(const cooperative_groups::thread_block_tile<32> &warp,
                                                 unsigned int *ticket, unsigned int parts)
{
    unsigned int last = 0;
    if (warp.thread_rank() == 0) {
        fence_acq_rel_gpu();
        last = atomicAdd(ticket, 1u) == parts - 1;
        if (last) {
            *ticket = 0;
            fence_acq_rel_gpu();
        }
    }
    last = warp.shfl(last, 0);
    if (last) warp.sync(); /* orders thread 0's acquire before every thread's reads */
    return last != 0;
}

} // namespace

#endif
