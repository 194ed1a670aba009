/* reduce.c — the GPU backend's entry: runs a plan on a GPU handle (gpu.h).
 *
 * Every family goes through the same steps: check the pointers, make the GPU current, let the
 * family size its grid, make the workspace large enough for it and launch on the caller's
 * stream (enqueue.c), and, for a result in host memory, wait for it. Shaped calls go to axis.c.
 * The tutorial methods have their own driver (methods/host.c).
 *
 * Host results. The canonical SUM, the latency-critical case, has the kernel write the result
 * straight into the handle's pinned, mapped host slot as 8-byte words, each with the call's
 * sequence number in its high half and 32 bits of the value in its low half; the host spins
 * until every word carries the number. An aligned 8-byte write lands whole, so no system-scope
 * fence is needed between value and flag, and the call returns as soon as the value has
 * landed, without waiting for the grid to retire and the driver to notice (what
 * cudaStreamSynchronize waits for). Every other family writes its result into the mapped slot
 * and the call synchronises the stream. */
#include <stdio.h>
#include <string.h>
#include "core/order.h"
#include "core/status.h"
#include "gpu/gpu.h"
#include "gpu/state.h"

/* Spins until every word of the host slot (`words` of them) carries seq, then assembles the
 * value into result. Every 1024 spins it asks the stream whether it failed, so an error (or a
 * kernel that finished without writing) ends the wait. */
static coopreduce_status wait_for_result(coopreduce_handle *h, unsigned int seq, int words,
                                         void *result, cudaStream_t stream)
{
    volatile const uint64_t *slot = (volatile const uint64_t *)h->gpu->host_slot;
    uint64_t w[2] = {0, 0};
    for (uint64_t spin = 1;; spin++) {
        int ready = 1;
        for (int i = 0; i < words; i++) {
            w[i] = slot[i];
            ready &= (uint32_t)(w[i] >> 32) == seq;
        }
        if (ready) break;
        if (spin % 1024 == 0) {
            cudaError_t e = cudaStreamQuery(stream);
            int landed = 1;
            for (int i = 0; i < words; i++) landed &= (uint32_t)(slot[i] >> 32) == seq;
            if (e == cudaSuccess && !landed)
                return cr_fail(h, COOPREDUCE_ERROR_INTERNAL,
                               "the kernel finished without delivering the host result");
            if (e != cudaSuccess && e != cudaErrorNotReady)
                return cr_cuda_fail(h, e, "waiting for the sum");
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    if (words == 1) {
        uint32_t bits = (uint32_t)w[0];
        memcpy(result, &bits, 4);
    } else {
        uint64_t bits = (w[0] << 32) | (w[1] & 0xffffffffu);
        memcpy(result, &bits, 8);
    }
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_reduce(coopreduce_handle *h, const cr_plan *p, const void *x,
                                const void *y, void *result, uint64_t n, void *stream, int to_host)
{
    if (p->shape.kind != CR_SHAPE_FLAT) return cr_gpu_shaped(h, p, x, y, result, stream);
    if (p->family == CR_FAMILY_METHOD)
        return cr_gpu_method_sum(h, p, x, result, n, stream, to_host);
    struct cr_gpu_state *g = h->gpu;
    coopreduce_status s = cr_gpu_check_inputs(h, p->inputs, x, y, to_host ? NULL : result, n);
    if (s) return s;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");

    cr_gpu_call c = cr_gpu_call_of(h, p, x, y, n, stream);
    const int tagged =
        to_host && p->family == CR_FAMILY_CANONICAL && p->op == COOPREDUCE_OP_SUM && n > 0;
    if (tagged) {
        c.seq = ++g->seq ? g->seq : ++g->seq; /* never 0 */
        /* Other results leave plain values in the slot; no word may carry seq before the
         * kernel writes it. Nothing else writes the slot now: host-result calls wait. */
        memset(g->host_slot, 0, 16);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        c.host_tagged = g->host_slot_dev;
    } else {
        c.out = to_host ? g->host_slot_dev : result;
    }
    cr_gpu_grid grid;
    if ((s = cr_gpu_enqueue(h, &c, &grid))) return s;
    if (tagged) {
        if ((s = wait_for_result(h, c.seq, (int)(p->result_size / 4), result, c.stream))) return s;
    } else if (to_host) {
        e = cudaStreamSynchronize(c.stream);
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "waiting for the result");
        memcpy(result, g->host_slot, p->result_size);
    }
    memset(&h->last, 0, sizeof h->last);
    h->last.method = COOPREDUCE_METHOD_CANONICAL;
    h->last.blocks = grid.blocks;
    h->last.threads = grid.threads;
    h->last.launches = 1;
    h->last.host_sync = to_host && !tagged;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_reserve(coopreduce_handle *h, const cr_plan *p, uint64_t n)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    if (p->shape.kind != CR_SHAPE_FLAT) return cr_gpu_reserve_shaped(h, p);
    if (p->family == CR_FAMILY_METHOD) return cr_gpu_method_reserve(h, p, n);
    /* The grid the call would take (16-byte aligned inputs: the widest), then its workspace. */
    const cr_gpu_call c = cr_gpu_call_of(h, p, NULL, NULL, n, NULL);
    cr_gpu_grid grid;
    coopreduce_status s = cr_gpu_size(h, &c, &grid);
    return s ? s : cr_gpu_work_ensure(h, p, n, grid.slot_bytes, grid.slot_blocks, NULL);
}
