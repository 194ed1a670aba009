/* handoff.cuh — the last-block hand-off of the kernel families that finish in one launch with
 * a slot per block, or a fold by atomics (scan.cu, exact.cu).
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

} // namespace

#endif
