/* gate.cuh — the ranks' agreement checked on the device, for the small distributed calls that do
 * not wait for their first exchange before their work (src/dist: allreduce.c, sharded.c). The
 * kernel that writes a call's results opens its gate first: every block checks the gathered
 * metas as the host's first exchange checks them (protocol.c: cr_dist_first_exchange, then
 * cr_dist_check_agreement; the checks themselves are dist/meta.h's, shared with the host), and
 * writes nothing if they fail. Block 0 records the first failure of a deferred call and posts
 * the metas to a host that waits for them alone. */
#ifndef COOPREDUCE_GPU_KERNEL_GATE_CUH
#define COOPREDUCE_GPU_KERNEL_GATE_CUH

#include <stddef.h>
#include <stdint.h>
#include "dist/meta.h"

/* The R metas to post.tag's host (if any): every thread's words, a system-scope fence, then the
 * tag by thread 0. Every thread of the block calls it. */
__device__ inline void cr_post_metas(const unsigned char *metas, size_t stride, int R,
                                     const cr_meta_post &post)
{
    if (!post.tag) return;
    constexpr int kWords = sizeof(cr_meta) / 4;
    for (int i = threadIdx.x; i < R * kWords; i += blockDim.x)
        reinterpret_cast<uint32_t *>(post.metas)[i] =
            reinterpret_cast<const uint32_t *>(metas + (size_t)(i / kWords) * stride)[i % kWords];
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) *post.tag = post.seq;
}

/* Whether the gate is open: every thread of the block calls it, and gets the same answer (true
 * where there is no gate). */
__device__ inline bool cr_gate_open(const cr_gate &g)
{
    if (!g.metas) return true;
    __shared__ int verdict;
    if (threadIdx.x == 0) {
        int rank;
        const int kind = cr_meta_first_failure(g.metas, g.stride, g.R, &g.mine, &rank);
        auto m = [&](int r) { return reinterpret_cast<const cr_meta *>(g.metas + (size_t)r * g.stride); };
        uint64_t total = 0;
        const int whole = kind || !g.lead_elems ||
                          cr_meta_lead_whole(g.metas, g.stride, g.R, g.es, g.lead_elems, &total);
        if (kind && g.rec && blockIdx.x == 0 && g.rec->set == 0) {
            g.rec->kind = kind;
            g.rec->rank = rank;
            g.rec->serial = g.mine.serial;
            g.rec->first = *m(0);
            g.rec->bad = *m(rank);
            __threadfence_system(); /* every field before the flag the host reads first */
            g.rec->set = 1;
            __threadfence_system();
        }
        verdict = !kind && whole;
    }
    __syncthreads();
    if (blockIdx.x == 0) cr_post_metas(g.metas, g.stride, g.R, g.post);
    return verdict != 0;
}

#endif
