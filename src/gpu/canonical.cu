/* canonical.cu — canonical order v1 on the GPU, in one launch, for any N.
 *
 * The tree is docs/DETERMINISM.md's; this file only decides who computes each node.
 *
 * - One warp reduces one chunk (C elements = 32 rows of 512 bytes). Thread t holds lanes
 *   VEC*t .. VEC*t+VEC-1 and reads its 16 bytes of each row: every load instruction of the warp
 *   covers 512 contiguous bytes. The row tree runs in registers, as batches of 8 rows
 *   double-buffered so that loads stay in flight; the first lane levels inside the thread, the
 *   last five through shfl_xor (cooperative_groups' thread_block_tile<32>). No shared memory,
 *   no barrier, no floating-point atomics.
 * - Each block owns a contiguous, balanced range of level-1 chunks; its warps take them
 *   round-robin, so a block streams one region. The partials of a level are grouped C at a
 *   time, one integer counter per group. One thread per block posts, for each group its range
 *   touches, the number of its chunks in it: near the block's start, once its warp's first
 *   loads are in flight (tree.cuh's early tickets; after a barrier at the end if the range
 *   touches more than two groups). The block that completes a group reduces it at its end (one
 *   chunk of partials, read from L2, eight warps each taking 4 rows, waiting for the tags of
 *   chunks other blocks are still reducing) and climbs, one ticket per node above level 1,
 *   each posted before its node is computed. The warp that completes the top node writes the
 *   result. About one ticket per block per launch: no same-address atomic queue. The end's
 *   out-of-line functions read the parameters from a copy in shared memory.
 * - No memory fences: partials are tagged. Every 8-byte word of a stored partial carries the
 *   launch's tag next to 32 bits of the value (see "Tagged partials" below), and the block that
 *   completes a group polls the group's words until each carries the tag. A fence before each
 *   ticket (release) and after the last one (acquire) were most of the hand-off's cost at
 *   mid-size N (docs/perf-log); the tags let the ticket overtake the partial's store.
 * - Counters return to zero: the completing thread resets its group's counter, so the workspace
 *   is ready for the next launch in stream order without a memset.
 * - Up to kSmallChunks chunks: one block, one warp per chunk, partials in shared memory, no
 *   tickets at all. Mid-size N (two chunks per block fit in one wave): four warps per chunk,
 *   one 8-row batch each, so the data of a chunk arrives in one round trip.
 * - The host-result path: the top warp writes the value into mapped host memory in words tagged
 *   with the call's sequence number, which the host spins on; no system-scope fence.
 *
 * Loads: 16-byte aligned input uses vector loads; an input pointer aligned only to the element
 * size uses scalar loads of the same elements (same tree, same bits); the one ragged chunk of a
 * level uses guarded scalar loads that read -0.0 past the end. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "gpu/kernel/grid.cuh"   /* occupancy, grid_blocks */
#include "gpu/kernel/load.cuh"   /* load_stream_once */
#include "gpu/kernel/traits.cuh" /* Layout */
#include "gpu/kernel/tree.cuh"   /* Lanes, lane_tree, tagged partials, tickets, the climb */
#include "gpu/launch.h"

/* Tuning knobs, fixed by measurement (docs/PERF.md, scripts/tune.sh); none changes a bit of
 * the result, only who loads what when.
 *  CR_TUNE_INTERLEAVE 1: the warps of a block take the block's chunks round-robin, so the block
 *    streams one contiguous region (8 adjacent chunks at a time); 0: each warp a sub-range.
 * The load of inputs larger than L2 is the kernel layer's stream-once policy (load.cuh,
 * CR_TUNE_LOAD). docs/PERF.md has the measurements behind both choices. */
#ifndef CR_TUNE_INTERLEAVE
#define CR_TUNE_INTERLEAVE 1
#endif
/*  CR_TUNE_QUAD 1: when the chunks fit in one wave of the grid at two per block (mid-size N),
 *    four warps share a chunk, one 8-row batch each, so the chunk's data arrives in one round
 *    trip instead of two; the batch trees meet in shared memory. 0: one warp per chunk, clearly
 *    slower at those sizes (docs/perf-log). */
#ifndef CR_TUNE_QUAD
#define CR_TUNE_QUAD 1
#endif
/*  CR_TUNE_STAGE 1: a warp keeps its streamed chunks' partials in its lanes and stores 32 in
 *    one instruction; 0: lane 0 stores each chunk's partial at once. 1 gained 0.5% for float32
 *    at 2^26-2^28 on an H100 and lost 1% at 2^20-2^24 and 0.2% for float64 (docs/perf-log run
 *    151): left at 0. */
#ifndef CR_TUNE_STAGE
#define CR_TUNE_STAGE 0
#endif

namespace {

/* How a thread reads its lanes of row `r` of the chunk at `p` (`m` valid elements). */
enum class Load {
    kVector,       /* 16-byte loads through the read-only path */
    kVectorStream, /* 16-byte loads of data larger than L2 (load.cuh's stream-once policy) */
    kScalar,       /* element loads: input aligned only to the element size */
    kGuarded,      /* element loads reading -0.0 past the end: ragged chunks */
    kGuardedShared /* the same from shared memory */
};

template <typename T, Load L>
__device__ __forceinline__ Lanes<T> load_row(const T *__restrict__ p, int r, int t, int m)
{
    using Lay = Layout<T>;
    const int first = r * Lay::kLanes + t * Lay::kVec;
    Lanes<T> out;
    if constexpr (L == Load::kVector || L == Load::kVectorStream) {
        /* The input is never written during the launch: the read-only path. */
        const typename Lay::Vec *q_ = reinterpret_cast<const typename Lay::Vec *>(p + first);
        typename Lay::Vec q = L == Load::kVector ? __ldg(q_) : load_stream_once(q_);
        if constexpr (Lay::kVec == 4) {
            out.v[0] = q.x;
            out.v[1] = q.y;
            out.v[2] = q.z;
            out.v[3] = q.w;
        } else {
            out.v[0] = q.x;
            out.v[1] = q.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < Lay::kVec; j++) {
            if constexpr (L == Load::kGuarded)
                out.v[j] = first + j < m ? __ldcg(p + first + j) : T(-0.0);
            else if constexpr (L == Load::kGuardedShared)
                out.v[j] = first + j < m ? p[first + j] : T(-0.0);
            else
                out.v[j] = __ldg(p + first + j);
        }
    }
    return out;
}

/* The row tree over rows [r0, r0 + ROWS): pairwise, in row order. Fully unrolled, so all 32
 * loads are independent instructions the scheduler can issue back to back. */
template <typename T, Load L, int ROWS> struct RowTree {
    static __device__ __forceinline__ Lanes<T> run(const T *p, int r0, int t, int m)
    {
        Lanes<T> a = RowTree<T, L, ROWS / 2>::run(p, r0, t, m);
        Lanes<T> b = RowTree<T, L, ROWS / 2>::run(p, r0 + ROWS / 2, t, m);
        return add(a, b);
    }
};
template <typename T, Load L> struct RowTree<T, L, 1> {
    static __device__ __forceinline__ Lanes<T> run(const T *p, int r0, int t, int m)
    {
        return load_row<T, L>(p, r0, t, m);
    }
};

/* The 32-row tree as four batches of 8 rows: b_k is the tree of rows 8k..8k+7, and the
 * chunk's lane value is (b0 + b1) + (b2 + b3) — the same perfect pairwise tree. The batch loop
 * stays rolled on purpose: unrolled, ptxas hoists all 32 loads (128 registers of float4 data),
 * which either caps occupancy or spills. A batch keeps 8 independent 16-byte loads in flight per
 * thread, which at 32 warps per SM is several times what it takes to cover DRAM latency. */
template <typename T, Load L> __device__ __forceinline__ Lanes<T> row_tree(const T *p, int t, int m)
{
    static_assert(CR_ROWS == 32, "row_tree assumes 4 batches of 8 rows");
    Lanes<T> prev, s01, total;
#pragma unroll 1
    for (int k = 0; k < 4; k++) {
        Lanes<T> b = RowTree<T, L, 8>::run(p, 8 * k, t, m);
        if (k == 0 || k == 2)
            prev = b;
        else if (k == 1)
            s01 = add(prev, b);
        else
            total = add(s01, add(prev, b));
    }
    return total;
}

/* One chunk, reduced by one warp. Every thread of the warp returns the chunk's value. */
template <typename T, Load L>
__device__ __forceinline__ T warp_chunk(const cg::thread_block_tile<32> &warp, const T *p, int m)
{
    return lane_tree(warp, row_tree<T, L>(p, warp.thread_rank(), m));
}

/* Eight rows of a thread's lanes, loaded but not yet added. */
template <typename T> struct Batch {
    Lanes<T> r[8];
};

template <typename T, Load L>
__device__ __forceinline__ void load_batch(Batch<T> &b, const T *p, int k, int t)
{
#pragma unroll
    for (int i = 0; i < 8; i++) b.r[i] = load_row<T, L>(p, 8 * k + i, t, 0);
}

/* The row tree of one batch of 8 rows: ((r0+r1)+(r2+r3)) + ((r4+r5)+(r6+r7)). */
template <typename T> __device__ __forceinline__ Lanes<T> batch_tree(const Batch<T> &b)
{
    return add(add(add(b.r[0], b.r[1]), add(b.r[2], b.r[3])),
               add(add(b.r[4], b.r[5]), add(b.r[6], b.r[7])));
}

/* The row trees of one full, 16-byte aligned chunk at p, as a stream of 8-row batches
 * double-buffered in registers A and B (no copies between them: a register copy would wait for
 * the loads). On entry A holds the loads of rows 0-7 (in flight); each later batch's loads are
 * issued before the previous batch is added. With next != nullptr, A is left holding the next
 * chunk's rows 0-7, in flight while the caller runs the lane tree. Returns the lane sums:
 * (b0 + b1) + (b2 + b3), b_k the tree of rows 8k..8k+7 — exactly row_tree. */
template <typename T, Load L>
__device__ __forceinline__ Lanes<T> stream_chunk(Batch<T> &A, Batch<T> &B, const T *p,
                                                 const T *next, int t)
{
    static_assert(CR_ROWS == 32, "stream_chunk assumes 4 batches of 8 rows");
    load_batch<T, L>(B, p, 1, t);
    const Lanes<T> b0 = batch_tree(A);
    load_batch<T, L>(A, p, 2, t);
    const Lanes<T> s01 = add(b0, batch_tree(B));
    load_batch<T, L>(B, p, 3, t);
    const Lanes<T> b2 = batch_tree(A);
    if (next) load_batch<T, L>(A, next, 0, t);
    return add(s01, add(b2, batch_tree(B)));
}

/* One full, 16-byte aligned chunk by the double-buffered stream: 2 round trips to memory. */
template <typename T, Load L>
__device__ __forceinline__ T stream_one_chunk(const cg::thread_block_tile<32> &warp, const T *p)
{
    Batch<T> A, B;
    load_batch<T, L>(A, p, 0, warp.thread_rank());
    return lane_tree(
        warp, stream_chunk<T, L>(A, B, p, static_cast<const T *>(nullptr), warp.thread_rank()));
}

/* The one ragged chunk of the input, out of line: its guarded loads would otherwise share the
 * hot loop's registers. */
template <typename T>
__device__ __noinline__ T ragged_input_chunk(const cg::thread_block_tile<32> &warp, const T *p,
                                             int m)
{
    return warp_chunk<T, Load::kGuarded>(warp, p, m);
}

/* Level-1 work: the chunk at index c of the input. */
template <typename T>
__device__ __forceinline__ T input_chunk(const cg::thread_block_tile<32> &warp, const Params<T> &P,
                                         uint64_t c)
{
    constexpr uint64_t C = Layout<T>::kChunk;
    const T *p = P.x + c * C;
    const uint64_t n = P.count[0];
    if ((c + 1) * C <= n)
        return P.x_aligned ? warp_chunk<T, Load::kVector>(warp, p, (int)C)
                           : warp_chunk<T, Load::kScalar>(warp, p, (int)C);
    return ragged_input_chunk(warp, p, (int)(n - c * C));
}

/* The hot loop: full, aligned input chunks c0, c0 + stride, ... below c1, one after the other,
 * so a warp keeps 8 to 16 16-byte loads per thread in flight all the time, also while it runs
 * the lane tree and the shuffles. */
template <typename T, Load L, typename Hook>
__device__ __forceinline__ void stream_full_chunks(const cg::thread_block_tile<32> &warp,
                                                   const Params<T> &P, uint64_t c0, uint64_t c1,
                                                   uint64_t stride, unsigned int tag,
                                                   Hook after_first_loads)
{
    constexpr uint64_t C = Layout<T>::kChunk;
    const int t = warp.thread_rank();
    Batch<T> A, B;
    /* ascending, or, for input larger than L2, descending in every other launch (load.cuh);
     * CR_TUNE_STAGE's held partials are indexed ascending only */
    const Walk wk = walk(c0, c1, stride, !CR_TUNE_STAGE && L == Load::kVectorStream ? tag : 0u);
    load_batch<T, L>(A, P.x + wk.first * C, 0, t);
    after_first_loads();
#if CR_TUNE_STAGE
    /* lane j keeps the partial of the warp's j-th chunk of each 32; the 32 go out in one store */
    T held = T(0);
    uint64_t first = c0;
    int nheld = 0;
#endif
    for (uint64_t c = wk.first;; c += wk.step) {
        const T *p = P.x + c * C;
        const T *next = c != wk.last ? P.x + (c + wk.step) * C : nullptr;
        const T v = lane_tree(warp, stream_chunk<T, L>(A, B, p, next, t));
#if CR_TUNE_STAGE
        if (t == nheld) held = v;
        if (++nheld == 32) {
            store_partial(P, 1, first + (uint64_t)t * stride, held, tag);
            nheld = 0;
            first = c + stride;
        }
#else
        if (t == 0) store_partial(P, 1, c, v, tag);
#endif
        if (c == wk.last) break;
    }
#if CR_TUNE_STAGE
    if (t < nheld) store_partial(P, 1, first + (uint64_t)t * stride, held, tag);
#endif
}

/* Level 1 the ordinary way: the block's chunks [b0, b1), warp w of the block taking every
 * kWarpsPerBlock-th (or, without interleaving, a sub-range of them). post() once the warp's
 * first loads are in flight (tree.cuh's early tickets). */
template <typename T, Load L, typename Post>
__device__ __forceinline__ void level1_chunks(const cg::thread_block_tile<32> &warp,
                                              const Params<T> &P, uint64_t b0, uint64_t b1, int w,
                                              unsigned int tag, Post post)
{
    constexpr uint64_t C = Layout<T>::kChunk;
#if CR_TUNE_INTERLEAVE
    uint64_t c = b0 + w;
    const uint64_t c_end = b1, stride = kWarpsPerBlock;
#else
    uint64_t w0, w1;
    balanced_range(b1 - b0, kWarpsPerBlock, w, &w0, &w1);
    uint64_t c = b0 + w0;
    const uint64_t c_end = b0 + w1, stride = 1;
#endif
    const uint64_t full = P.count[0] / C; /* chunks [0, full) need no padding */
    if (P.x_aligned && c < c_end && c < full) {
        const uint64_t stop = c_end < full ? c_end : full;
        stream_full_chunks<T, L>(warp, P, c, stop, stride, tag, post);
        c += (stop - c + stride - 1) / stride * stride; /* first chunk at or past stop */
    } else {
        post();
    }
    for (; c < c_end; c += stride) { /* misaligned input, or the ragged last chunk */
        T v = input_chunk(warp, P, c);
        if (warp.thread_rank() == 0) store_partial(P, 1, c, v, tag);
    }
}

/* Mid-size N, the block's (at most two) chunks [b0, b1), four warps each: warp w takes
 * chunk b0 + w/4 and its batch q = w%4 (rows 8q..8q+7), all 8 loads at once; the four batch
 * trees meet in shared memory and the chunk's first warp adds them as (b0 + b1) + (b2 + b3) —
 * the row tree — then runs the lane tree. A misaligned or ragged chunk is done by its first
 * warp alone, the ordinary way. */
template <typename T, Load L, typename Post>
__device__ __forceinline__ void quad_chunks(const cg::thread_block &block,
                                            const cg::thread_block_tile<32> &warp,
                                            const Params<T> &P, uint64_t b0, uint64_t b1,
                                            Lanes<T> (&quarter)[2][4][32], unsigned int tag,
                                            Post post)
{
    static_assert(kWarpsPerBlock == 8, "quad_chunks assumes 8 warps: 2 chunks x 4 batches");
    constexpr uint64_t C = Layout<T>::kChunk;
    const int w = warp.meta_group_rank(), cl = w / 4, q = w % 4, t = warp.thread_rank();
    const uint64_t c = b0 + cl;
    const bool fast = P.x_aligned && c < b1 && (c + 1) * C <= P.count[0];
    if (fast) {
        Batch<T> A;
        load_batch<T, L>(A, P.x + c * C, q, t);
        post();
        quarter[cl][q][t] = batch_tree(A);
    } else {
        post();
    }
    block.sync();
    if (q == 0 && c < b1) {
        T v;
        if (fast)
            v = lane_tree(warp, add(add(quarter[cl][0][t], quarter[cl][1][t]),
                                    add(quarter[cl][2][t], quarter[cl][3][t])));
        else
            v = input_chunk(warp, P, c);
        if (t == 0) store_partial(P, 1, c, v, tag);
    }
}

/* Any N with more than kWarpsPerBlock * 4 chunks. Block b owns a contiguous range of level-1
 * chunks, its warps split it; each warp stores its chunks' partials. After a barrier, thread 0
 * posts one ticket per group the block's range touches (the count of its chunks in that group).
 * Tickets per launch: about one per block, so same-address atomics never queue up; no fences
 * (the partials are tagged). A block that completes a group reduces it with all its warps. */
template <typename T, Load L>
__global__ void __launch_bounds__(kThreads, Layout<T>::kMinBlocks * 8 / kWarpsPerBlock)
    canonical_kernel(const __grid_constant__ Params<T> P)
{
    static_assert(kWarpsPerBlock == 8, "groups are reduced by 8 warps x 4 rows");
    __shared__ Lanes<T> quarter[2][4][32]; /* batch trees: [chunk or group][batch][thread] */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int w = warp.meta_group_rank();
    const unsigned int tag = launch_tag(P);
    CR_TRACE(if (threadIdx.x == 0) trace_start(tag);)
    __shared__ Params<T> Ps; /* the end's copy (tree.cuh, params_to_shared) */
    params_to_shared(P, Ps);
    uint64_t b0, b1;
    balanced_range(P.count[1], gridDim.x, blockIdx.x, &b0, &b1);
    __shared__ EarlyTickets early; /* tree.cuh: the level-2 tickets, posted near the start */
    auto post = [&] {
        if (early_poster()) early_tickets(P, b0, b1, &early);
    };
    if (P.quad)
        quad_chunks<T, L>(block, warp, P, b0, b1, quarter, tag, post);
    else
        level1_chunks<T, L>(warp, P, b0, b1, w, tag, post);
    if (b0 == b1) return; /* uniform across the block */
    post_tickets<1>(block, warp, &Ps, b0, b1, &quarter[0][0][0], tag, &early);
}

/* Small N (at most kSmallChunks chunks): one block, one warp per chunk, the partials in shared
 * memory, no atomics and no fences: the shortest path from launch to result. Same tree. 16
 * warps leave each thread 128 registers, room for the double-buffered stream (2 round trips to
 * memory per chunk instead of 4). */
constexpr int kSmallChunks = 16;

template <typename T>
__global__ void __launch_bounds__(32 * kSmallChunks)
    canonical_small_kernel(const __grid_constant__ Params<T> P)
{
    __shared__ T partials[kSmallChunks];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int w = warp.meta_group_rank();
    const T *p = P.x + (uint64_t)w * Layout<T>::kChunk;
    const T v = P.x_aligned && (uint64_t)(w + 1) * Layout<T>::kChunk <= P.count[0]
                    ? stream_one_chunk<T, Load::kVector>(warp, p)
                    : input_chunk(warp, P, (uint64_t)w);
    if (P.count[1] == 1) {
        write_result(warp, P, v, 0u);
        return;
    }
    if (warp.thread_rank() == 0) partials[w] = v;
    block.sync();
    if (w == 0)
        write_result(warp, P, warp_chunk<T, Load::kGuardedShared>(warp, partials, (int)P.count[1]),
                     0u);
}

/* The grid of a call (launch.h): one block for up to kSmallChunks chunks; else one block per
 * kWarpsPerBlock chunks up to a full wave, or, when two chunks per block fit in one wave (mid
 * size), four warps per chunk and ceil(chunks / 2) blocks. A forced grid is taken as it is, but
 * never with blocks that would have no chunk. */
template <typename T> cudaError_t grid(const cr_gpu_call *c, cr_gpu_grid *g)
{
    const uint64_t chunks = (c->n + Layout<T>::kChunk - 1) / Layout<T>::kChunk;
    g->quad = 0;
    g->stream_once = c->n * sizeof(T) > c->l2_bytes;
    if (c->n == 0) { /* empty_kernel's one thread */
        g->blocks = g->threads = 1;
        return cudaSuccess;
    }
    if (chunks <= (uint64_t)kSmallChunks) {
        g->blocks = 1;
        g->threads = 32 * (int)chunks;
        return cudaSuccess;
    }
    int per_sm = 0;
    cudaError_t e =
        occupancy<canonical_kernel<T, Load::kVectorStream>>(kThreads, c->device, &per_sm);
    if (e != cudaSuccess) return e;
    const uint64_t need = (chunks + kWarpsPerBlock - 1) / kWarpsPerBlock;
    int blocks = grid_blocks(need, c->sm_count, per_sm, c->forced_blocks, INT32_MAX);
    const uint64_t full = (uint64_t)c->sm_count * (uint64_t)per_sm;
    g->quad = CR_TUNE_QUAD && !c->forced_blocks && chunks <= 2 * full;
    const uint64_t blocks_needed = g->quad ? (chunks + 1) / 2 : need;
    if (g->quad || (uint64_t)blocks > blocks_needed) blocks = (int)blocks_needed;
    g->blocks = blocks;
    g->threads = kThreads;
    return cudaSuccess;
}

template <typename T>
cudaError_t launch(const cr_gpu_call *c, const cr_gpu_work *w, const cr_gpu_grid *g)
{
    const coopreduce_op op = c->plan->op;
    if (c->n == 0) { /* the final rule on the sum of nothing: SUM +0.0, MEAN NaN */
        const Final F = {1, (int)op, (int)c->plan->dtype, 0};
        empty_kernel<<<1, 1, 0, c->stream>>>(F, c->out);
        return cudaGetLastError();
    }
    Params<T> P = {};
    P.x = static_cast<const T *>(c->x);
    P.out = c->host_tagged ? nullptr : c->out;
    P.host = static_cast<Word *>(c->host_tagged);
    P.seq = c->seq;
    /* SUM: the value itself; MEAN: values.h's rule, applied by the top warp. */
    P.fin = Final{op != COOPREDUCE_OP_SUM, (int)op, (int)c->plan->dtype, 0};
    tree_setup(P, c->n, w->tree_partials, w->tree_counters);
    P.x_aligned = ((uintptr_t)c->x % 16) == 0;
    P.quad = g->quad;
    if (P.count[1] <= (uint64_t)kSmallChunks) {
        canonical_small_kernel<T><<<1, g->threads, 0, c->stream>>>(P);
        return cudaGetLastError();
    }
    if (g->stream_once)
        canonical_kernel<T, Load::kVectorStream><<<g->blocks, kThreads, 0, c->stream>>>(P);
    else
        canonical_kernel<T, Load::kVector><<<g->blocks, kThreads, 0, c->stream>>>(P);
    return cudaGetLastError();
}

} // namespace

extern "C" {

cudaError_t cr_gpu_canonical_grid(const cr_gpu_call *c, cr_gpu_grid *g)
{
    return c->plan->dtype == COOPREDUCE_FLOAT64 ? grid<double>(c, g) : grid<float>(c, g);
}

cudaError_t cr_gpu_canonical_launch(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g)
{
    return c->plan->dtype == COOPREDUCE_FLOAT64 ? launch<double>(c, w, g) : launch<float>(c, w, g);
}

cudaError_t cr_gpu_canonical_check(int device)
{
    int per_sm = 0;
    cudaError_t e =
        occupancy<canonical_kernel<float, Load::kVectorStream>>(kThreads, device, &per_sm);
    if (e == cudaSuccess)
        e = occupancy<canonical_kernel<double, Load::kVectorStream>>(kThreads, device, &per_sm);
    return e;
}

} // extern "C"
