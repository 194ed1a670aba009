/* ordered.cu — the canonical-order operations other than the float32/float64 sum, on the GPU:
 * SUM of float16 and bfloat16, SUMSQ, DOT and NORM2 of every float type (and, through the host
 * code, MEAN of every float type).
 *
 * docs/DETERMINISM.md ("Operations") defines each as the canonical order over transformed
 * leaves: level 1 turns each chunk of C inputs into C leaves of the accumulation type (widened,
 * squared, multiplied, or split into Blue's three classes) and reduces them with the chunk
 * tree; the level-1 partials are then summed by the canonical sum itself.
 *
 * One leaf class (SUM and MEAN of 16-bit input, SUMSQ, DOT): one launch, fused_kernel. Level 1
 * here; the level-1 partials go up the canonical tree through tree.cuh's tagged hand-off (the
 * code the canonical sum uses above its own level 1), and the warp that completes the top node
 * applies the operation's final rule: one launch instead of three (level 1, the canonical sum
 * of the partials, a final step), which matters at mid sizes (docs/perf-log).
 * NORM2 (three leaf classes): one launch too, norm2_kernel, whose three trees climb together,
 * on one ticket a group (tree.cuh's post_tickets and climb with K = 3).
 *
 * Who computes what in level 1: one warp reduces one chunk, as in canonical.cu (at mid sizes,
 * misaligned input, NORM2's included, and aligned DOT of float32 and float64: 8, 4 or 2 warps,
 * split_kernel).
 * Every load is 16 bytes: 4 float32, 2 float64 or 8 half-precision elements. A float32 or float64 row (128 or
 * 64 lanes) is then one warp-wide load, and thread t holds the same lanes of all 32 rows. A
 * half-precision row (128 lanes, 256 bytes) is half a warp-wide load: threads 0-15 read rows
 * 0-15 and threads 16-31 rows 16-31, each thread 8 lanes; its row tree over 16 rows is one of
 * the two halves of the 32-row tree, and one shfl_xor(16) adds the halves — the tree's top row
 * level. The lane levels follow: inside the thread, then across threads by shfl_xor. The tree
 * is exactly the chunk tree; the mapping of rows and lanes to threads only decides who adds.
 *
 * Each block owns a contiguous range of chunks, its warps taking them round-robin (the same
 * balanced ranges as canonical.cu), so a block streams one region of memory; fused_kernel
 * double-buffers a warp's full chunks in 8-load batches (stream_chunks). Misaligned input
 * (not 16-byte aligned, either operand of DOT) is streamed the same way by its own kernels
 * (Shifted, leaves.cuh: one aligned load a lane group, the next block by a shuffle); their first
 * and last chunks, and the ragged last chunk of any input, use guarded loads with the same
 * mapping; lanes past the end are -0.0 leaves, the padding of the contract.
 *
 * Compiled with --fmad=false (CMakeLists.txt): a product and the addition that follows are two
 * roundings, as on the CPU. */
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

#include "gpu/kernel/grid.cuh"   /* occupancy, grid_blocks */
#include "gpu/kernel/load.cuh"   /* load16: the stream-once policy */
#include "gpu/kernel/traits.cuh" /* Elem, Layout */
#include "gpu/kernel/tree.cuh"   /* the levels above level 1, and the final rule */
#include "gpu/kernel/leaves.cuh" /* input types, leaves, one chunk's tree */
#include "gpu/launch.h"

namespace {

constexpr int kWarps = kWarpsPerBlock; /* tree.cuh's post_tickets reduces a group with 8 warps */

/* NORM2: the chunks of a warp's first segment, after which it may turn to the three-class stream
 * (norm2_kernel). 1 against 2 on an H200: 2^24 float32 of wide range 34 us against 43, no change
 * on uniform data (docs/perf-log). */
#ifndef CR_TUNE_NORM2_FIRST
#define CR_TUNE_NORM2_FIRST 1
#endif

/* Block b owns a balanced contiguous range of chunks; its warps take them round-robin. */
__device__ __forceinline__ void block_chunks(uint64_t chunks, uint64_t *c0, uint64_t *c1)
{
    balanced_range(chunks, gridDim.x, blockIdx.x, c0, c1);
}

/* One launch for a single leaf class (SUM of 16-bit input, MEAN of 16-bit input, SUMSQ, DOT):
 * level 1 here, then tree.cuh's tagged hand-off climbs the canonical tree of the partials and
 * the warp that completes it applies the operation's final rule (P.fin). The same tree as the
 * canonical sum of the level-1 partials, so the same bits as the multi-launch path and the CPU.
 * A single chunk (P.levels == 1) is the result itself: no partial, no ticket.
 * Misaligned input (either array of DOT past a 16-byte boundary) has a kernel of its own, In =
 * Shifted<..> (leaves.cuh): the same stream, each lane group's 16 bytes shifted into place from
 * the aligned blocks, for the chunks whose blocks lie within the arrays (read_range); its first
 * chunk and the last ones take chunk_values' misaligned path (chunk_used). A call of that path in
 * the aligned kernel's loops made ptxas spill there (aligned DOT of float32 4% slower at 2^28,
 * NORM2 0.2-0.9%: docs/perf-log). */
template <typename In, Leaf LF, bool kStream>
__global__ void __launch_bounds__(32 * kWarps, 2)
    fused_kernel(const __grid_constant__ Args<In> A,
                 const __grid_constant__ Params<typename In::Acc> P)
{
    using Acc = typename In::Acc;
    static_assert(kLeaves<LF> == 1, "one leaf class: one tree");
    __shared__ Lanes<Acc> quarter[2][4][32]; /* post_tickets' batch trees */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const unsigned int tag = P.levels > 1 ? launch_tag(P) : 0u;
    CR_TRACE(if (threadIdx.x == 0 && tag) trace_start(tag);)
    __shared__ Params<Acc> Ps; /* the end's copy (tree.cuh, params_to_shared) */
    params_to_shared(P, Ps);
    uint64_t b0, b1;
    block_chunks(P.count[1], &b0, &b1);
    auto emit = [&](uint64_t c, const Acc(&v)[1]) {
        if (P.levels == 1)
            write_result(warp, P, v[0], 0u);
        else if (warp.thread_rank() == 0)
            store_partial(P, 1, c, v[0], tag);
    };
    __shared__ EarlyTickets early; /* tree.cuh: the level-2 tickets, posted near the start */
    auto post = [&] {
        if (P.levels > 1 && early_poster()) early_tickets(P, b0, b1, &early);
    };
    uint64_t c = b0 + warp.meta_group_rank();
    uint64_t lo, hi; /* the chunks read by whole 16-byte blocks */
    read_range(A, LF == Leaf::kProduct, &lo, &hi);
    /* Misaligned input: chunk 0, whose first block lies before the array, by chunk_used. */
    if (kShifted<In> && c < lo && c < b1) {
        Acc v[1];
        chunk_values<In, LF, kStream>(warp, A, c, false, v);
        emit(c, v);
        c += kWarps;
    }
    /* [c, full): streamed (not a single chunk: its emit calls the final rule, and the stream
     * loop keeps no call) */
    const uint64_t full = P.levels > 1 ? hi : 0;
    if (kStreamed<In, LF> && c < b1 && c < full) {
        const uint64_t stop = b1 < full ? b1 : full;
        /* input larger than L2: descending in every other launch (load.cuh's walk) */
        const MirrorChunks<In> map = mirror_chunks<In>(c, stop, kWarps, kStream && walk_down(tag));
        auto emit_at = [&](uint64_t i, const Acc(&v)[1]) { emit(map.chunk(i), v); };
        stream_chunks<In, LF, kStream>(warp, A, c, stop, kWarps, emit_at, post, map);
        c += (stop - c + kWarps - 1) / kWarps * kWarps; /* first chunk at or past stop */
    } else {
        post();
    }
    /* The chunks not streamed: the ragged last one (and every chunk of DOT of 4- and 8-byte
     * types); misaligned input, the last ones, whose blocks reach past the array's end. */
    for (; c < b1; c += kWarps) {
        Acc v[1];
        chunk_values<In, LF, kStream>(warp, A, c, !kShifted<In> || (c >= lo && c < hi), v);
        emit(c, v);
    }
    if (P.levels == 1 || b0 == b1) return; /* uniform across the block */
    post_tickets<1>(block, warp, &Ps, b0, b1, &quarter[0][0][0], tag, &early);
}

/* CR_TUNE_SPLIT: mid sizes, where a chunk a warp leaves most of a wave of warps idle, by
 * split_kernel (1); 0: by fused_kernel at every size. */
#ifndef CR_TUNE_SPLIT
#define CR_TUNE_SPLIT 1
#endif
/* CR_TUNE_SPLIT_WAVES: misaligned input is split while the chunks' warps fit in this many waves
 * (aligned DOT: one). 1: with 2 or 4, blocks queued behind the first wave, misaligned bfloat16
 * SUM of 2^21-2^23 elements took 9.3-15.7 us against 6.6-9.1, float32 SUMSQ of 2^21-2^22
 * 8.7-13.5 against 6.8-8.6; only float32 SUMSQ and DOT of 2^23 gained (13.9 against 15.1-16.0
 * us, 25.8 against 26.8-27.2) (an H200, docs/perf-log run 289). */
#ifndef CR_TUNE_SPLIT_WAVES
#define CR_TUNE_SPLIT_WAVES 1
#endif

/* NORM2's three trees (big, medium, small), one launch. Level 1 tries the medium class alone
 * (one tree of squares instead of three, streamed like fused_kernel), noting beside the tree
 * the chunk's largest |x| and smallest nonzero |x| (the input type's Ext, on bits): if either
 * lies outside the medium class, the chunk is done again with all three classes (from L2 or
 * memory, by 16-byte loads: norm2_full_classes). Otherwise every element is medium or zero: the
 * medium leaves are the squares, and the big and small values are trees of +0.0 leaves, which
 * are +0.0 and need no computing. A zero is a small-class element whose leaves are all +0.0,
 * so taking it as medium changes no bit and keeps data with zeros on the fast path (random
 * 16-bit data holds many zeros, which would otherwise send most chunks down the slow path). A
 * NaN or an inf has bits above the big threshold, so its chunk takes the three-class path too,
 * which applies values.h's rules to it (a NaN is medium there).
 * Data where most chunks hold an element of another class (magnitudes spread wider than the
 * medium class, subnormals) would be read twice so: a warp whose segment of chunks found a
 * quarter or more of them so streams its next segment with the three classes at once
 * (norm2_stream_classes), and goes back to the medium pass after a segment with fewer. Its first
 * segment is one chunk, so that the choice comes early.
 * Each chunk posts its partials into three trees (T.p[k], one shared epoch), which climb
 * together: they are trees over the same chunks, so one ticket (tree 0's counters) tells a
 * block that it completes a group in all three, it reduces the three groups at once, and the
 * warp that completes the top nodes holds the three classes' sums and applies the final rule.
 * (Three trees each with its tickets, climbs and a join at the top made NORM2's end three
 * chains of round trips to L2 one after the other: docs/perf-log.) A chunk whose big and small
 * partials are +0.0, a medium chunk, stores its medium partial alone (tree.cuh, kOtherFlag).
 * Misaligned input: In = Shifted<..>, as for fused_kernel. */
template <typename Acc> struct Trees3 {
    Params<Acc> p[3];
};

/* Chunk c's three partials into T's trees: the big and small ones only where one is not +0.0,
 * the medium one flagged then (tree.cuh, kOtherFlag). Returns whether it was flagged. */
template <typename Acc>
__device__ __forceinline__ bool store_three(const Trees3<Acc> &T, uint64_t c, const Acc (&v)[3],
                                            unsigned int tag)
{
    const bool other = !is_plus_zero(v[0]) || !is_plus_zero(v[2]);
    if (other) {
        store_partial(T.p[0], 1, c, v[0], tag);
        store_partial(T.p[2], 1, c, v[2], tag);
    }
    store_partial(T.p[1], 1, c, v[1], other ? tag ^ kOtherFlag : tag);
    return other;
}

/* The parameters of a launch's trees, as an array: the one tree's, or NORM2's three. */
template <typename Acc>
__device__ __forceinline__ const Params<Acc> *tree_params(const Params<Acc> &P)
{
    return &P;
}
template <typename Acc>
__device__ __forceinline__ const Params<Acc> *tree_params(const Trees3<Acc> &T)
{
    return T.p;
}

/* Mid sizes, where a chunk a warp (fused_kernel, norm2_kernel) fills less than half a wave of
 * warps: G warps a chunk (G = 8, 4 or 2, the most that fit in a wave), 8 / G chunks a block
 * (contiguous, as those kernels' ranges). Warp q of a chunk takes rows q * kRows / G .. of each
 * half, a subtree of the row tree, with all its loads at once (rows_used_from: 16-byte loads,
 * two shifted into place where an array starts past a boundary: kLoad kLoadWithin, element
 * loads at the arrays' ends); the G subtrees meet in shared memory and the chunk's first warp
 * adds them pairwise in warp order, the row tree's top levels, then runs the lane tree
 * (finish_chunk). The same tree, the same bits, one or two round trips to memory where a warp's
 * chunk took 4 to 16 (a misaligned DOT 8, its shifted batches 4 rows; NORM2's three classes 2
 * to 4 rows a batch). Then the end of fused_kernel (one tree: TP is its Params) or of
 * norm2_kernel (NORM2's three classes in three trees: Trees3, each chunk's partials by
 * store_three); the block's early tickets go out between the poster's loads and their tree. */
template <typename In, Leaf LF, int G, int kLoad,
          typename TP = std::conditional_t<LF == Leaf::kNorm2, Trees3<typename In::Acc>,
                                           Params<typename In::Acc>>>
__global__ void __launch_bounds__(32 * kWarps, 2)
    split_kernel(const __grid_constant__ Args<In> A, const __grid_constant__ TP T)
{
    using Acc = typename In::Acc;
    using S = Shape<In>;
    using RV = RowVals<In, LF>;
    constexpr int K = kLeaves<LF>, kPer = kWarps / G, kRowsPart = S::kRows / G;
    constexpr bool kThree = LF == Leaf::kNorm2;
    static_assert(kWarps % G == 0 && kRowsPart >= 1 && (K == 1 || kThree), "G divides the rows");
    __shared__ Lanes<Acc> quarter[K][8][32]; /* post_tickets' row trees */
    __shared__ RV parts[kWarps][32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int w = warp.meta_group_rank(), t = warp.thread_rank(), q = w % G;
    const Params<Acc> *Pk = tree_params(T);
    const Params<Acc> &P = Pk[K == 3 ? 1 : 0]; /* the medium tree's for NORM2, as norm2_kernel */
    const unsigned int tag = P.levels > 1 ? launch_tag(P) : 0u;
    __shared__ TP Ts; /* the end's copy (tree.cuh, params_to_shared) */
    params_to_shared(T, Ts);
    const uint64_t chunks = P.count[1], b0 = (uint64_t)blockIdx.x * kPer;
    const uint64_t b1 = b0 + kPer < chunks ? b0 + kPer : chunks, c = b0 + w / G;
    __shared__ EarlyTickets early;
    const bool poster = P.levels > 1 && early_poster();
    EarlyPost ep;
    const bool posted = poster && early_post(Pk[0], b0, b1, ep);
    if (c < b1) {
        const uint64_t base = c * S::kChunk, rest = A.n - base;
        const int m = rest < S::kChunk ? (int)rest : (int)S::kChunk;
        const int half = t / S::kThreadsPerRow, lane0 = (t % S::kThreadsPerRow) * In::kVec;
        parts[w][t] = rows_used_from<In, LF, kLoad, kRowsPart>(
            A, base, half * S::kRows + q * kRowsPart, lane0, m, (m + S::kLanes - 1) / S::kLanes);
    }
    if (posted)
        early_note(Pk[0], ep, &early);
    else if (poster)
        early.n = -1;
    block.sync();
    if (q == 0 && c < b1) {
        RV p[G];
#pragma unroll
        for (int i = 0; i < G; i++) p[i] = parts[w + i][t];
        Acc v[K];
        finish_chunk<In, LF>(warp, pairwise_tree(p), Ext(), v);
        if constexpr (kThree) {
            if (t == 0 && P.levels == 1)
                write_final(P.fin, P.count[0], (double)v[0], (double)v[1], (double)v[2], P.out);
            else if (t == 0)
                store_three(T, c, v, tag);
        } else {
            if (P.levels == 1)
                write_result(warp, P, v[0], 0u);
            else if (t == 0)
                store_partial(P, 1, c, v[0], tag);
        }
    }
    if (P.levels == 1) return; /* uniform across the block */
    post_tickets<K>(block, warp, tree_params(Ts), b0, b1, &quarter[0][0][0], tag, &early);
}

/* The three-class stream: the warp's full, aligned chunks c0, c0 + kWarps, .. below c1 with
 * every element split into Blue's three classes as it is loaded (stream_chunks with the kNorm2
 * leaves), their partials stored. For data where most chunks have an element outside the medium
 * class (a range of magnitudes wider than the medium class's, subnormals): there the medium pass
 * and a second read of nearly every chunk cost twice the read and more. Returns how many of the
 * chunks had an element of another class (the warp's count). Out of line, so that the medium
 * stream keeps its registers. The same trees and bits as the medium pass with its fallback: a
 * chunk of medium elements has the squares' tree in the medium class and trees of +0.0 leaves,
 * +0.0, in the other two. */
template <typename In, bool kStream>
__device__ __noinline__ int
norm2_stream_classes(const cg::thread_block_tile<32> &warp, const Args<In> &A,
                     const Trees3<typename In::Acc> &T, unsigned int tag, uint64_t c0, uint64_t c1)
{
    using Acc = typename In::Acc;
    int others = 0;
    auto emit = [&](uint64_t c, const Acc(&v)[3]) {
        if (warp.thread_rank() == 0) others += store_three(T, c, v, tag);
    };
    stream_chunks<In, Leaf::kNorm2, kStream>(warp, A, c0, c1, kWarps, emit);
    return warp.shfl(others, 0);
}

template <typename In, bool kStream>
__global__ void __launch_bounds__(32 * kWarps, 2)
    norm2_kernel(const __grid_constant__ Args<In> A,
                 const __grid_constant__ Trees3<typename In::Acc> T)
{
    using Acc = typename In::Acc;
    __shared__ Lanes<Acc> quarter[3][8][32]; /* post_tickets' row trees, a set per class */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const Params<Acc> &P = T.p[1];
    const unsigned int tag = P.levels > 1 ? launch_tag(P) : 0u;
    __shared__ Trees3<Acc> Ts; /* the end's copy (tree.cuh, params_to_shared) */
    params_to_shared(T, Ts);
    uint64_t b0, b1;
    block_chunks(P.count[1], &b0, &b1);
    auto emit3 = [&](uint64_t c, const Acc(&v)[3]) {
        if (warp.thread_rank() != 0) return;
        if (P.levels == 1) {
            write_final(P.fin, P.count[0], (double)v[0], (double)v[1], (double)v[2], P.out);
            return;
        }
        store_three(T, c, v, tag);
    };
    /* tree.cuh's early tickets (one set for the three trees), posted after the first segment's
     * first loads. */
    __shared__ EarlyTickets early;
    auto post = [&] {
        if (P.levels > 1 && early_poster()) early_tickets(T.p[0], b0, b1, &early);
    };
    uint64_t c = b0 + warp.meta_group_rank();
    uint64_t lo, hi; /* the chunks read by whole 16-byte blocks */
    read_range(A, false, &lo, &hi);
    if (kShifted<In> && c < lo && c < b1) { /* misaligned input: chunk 0, by chunk_used */
        Acc v[3];
        chunk_values<In, Leaf::kNorm2, kStream>(warp, A, c, false, v);
        emit3(c, v);
        c += kWarps;
    }
    const uint64_t full = P.levels > 1 ? hi : 0; /* [c, full): streamed */
    if (c < b1 && c < full) {
        const uint64_t stop = b1 < full ? b1 : full;
        auto medium = [&](uint64_t cm, Acc m) { /* big and small +0.0: not stored (kOtherFlag) */
            if (warp.thread_rank() == 0) store_partial(T.p[1], 1, cm, m, tag);
        };
        auto three = [&](uint64_t c0, uint64_t c1) {
            return norm2_stream_classes<In, kStream>(warp, A, T, tag, c0, c1);
        };
        norm2_segments<In, kStream>(warp, A, c, stop, kWarps, CR_TUNE_NORM2_FIRST, medium, emit3,
                                    three, post);
        c += (stop - c + kWarps - 1) / kWarps * kWarps; /* first chunk at or past stop */
    } else {
        post();
    }
    for (; c < b1; c += kWarps) { /* the ragged last chunk; misaligned input, the last ones */
        Acc v[3];
        chunk_values<In, Leaf::kNorm2, kStream>(warp, A, c, !kShifted<In> || (c >= lo && c < hi),
                                                v);
        emit3(c, v);
    }
    if (P.levels == 1 || b0 == b1) return; /* uniform across the block */
    post_tickets<3>(block, warp, Ts.p, b0, b1, &quarter[0][0][0], tag, &early);
}

/* Whether x (and y, for DOT) start on a 16-byte boundary. */
inline bool arrays_aligned(const void *x, const void *y, bool dot)
{
    return (uintptr_t)x % 16 == 0 && (!dot || (uintptr_t)y % 16 == 0);
}

template <typename In, Leaf LF>
cudaError_t launch_fused(const Args<In> &A, const Params<typename In::Acc> &P, int blocks,
                         int stream_once, cudaStream_t stream)
{
    const bool aligned = arrays_aligned(A.x, A.y, LF == Leaf::kProduct);
    const Args<Shifted<In>> S = {A.x, A.y, A.n};
    if (!aligned && stream_once)
        fused_kernel<Shifted<In>, LF, true><<<blocks, 32 * kWarps, 0, stream>>>(S, P);
    else if (!aligned)
        fused_kernel<Shifted<In>, LF, false><<<blocks, 32 * kWarps, 0, stream>>>(S, P);
    else if (stream_once)
        fused_kernel<In, LF, true><<<blocks, 32 * kWarps, 0, stream>>>(A, P);
    else
        fused_kernel<In, LF, false><<<blocks, 32 * kWarps, 0, stream>>>(A, P);
    return cudaGetLastError();
}

/* split_kernel with G warps a chunk on `blocks` blocks: 16-byte loads for aligned DOT (the
 * aligned case grid() splits), else two a lane group shifted into place (any alignment). */
template <typename In, Leaf LF, int G, typename TP>
void launch_split_for(const Args<In> &A, const TP &P, int blocks, cudaStream_t stream)
{
    if constexpr (G == 8 && LF == Leaf::kProduct) {
        if (arrays_aligned(A.x, A.y, true)) {
            split_kernel<In, LF, G, kLoadVector><<<blocks, 32 * kWarps, 0, stream>>>(A, P);
            return;
        }
    }
    split_kernel<In, LF, G, kLoadWithin><<<blocks, 32 * kWarps, 0, stream>>>(A, P);
}
template <typename In, Leaf LF, typename TP>
cudaError_t launch_split(const Args<In> &A, const TP &P, int split, int blocks, cudaStream_t stream)
{
    if (split == 8)
        launch_split_for<In, LF, 8>(A, P, blocks, stream);
    else if (split == 4)
        launch_split_for<In, LF, 4>(A, P, blocks, stream);
    else
        launch_split_for<In, LF, 2>(A, P, blocks, stream);
    return cudaGetLastError();
}

template <typename In>
cudaError_t fused_for_leaf(int leaf, const void *x, const void *y, uint64_t n, void *out,
                           void *partials, void *counters, const cr_norm2_work *w3,
                           const Final &fin, int blocks, int split, int stream_once, cudaStream_t s)
{
    Args<In> A = {};
    A.x = x;
    A.y = y;
    A.n = n;
    Params<typename In::Acc> P = {};
    P.out = out;
    P.fin = fin;
    tree_setup(P, n, partials, counters);
    /* blocks: grid()'s, with no block left without a chunk */
    if (split > 1 && leaf == 0) return launch_split<In, Leaf::kWiden>(A, P, split, blocks, s);
    if (split > 1 && leaf == 1) return launch_split<In, Leaf::kSquare>(A, P, split, blocks, s);
    if (split > 1 && leaf == 2) return launch_split<In, Leaf::kProduct>(A, P, split, blocks, s);
    switch (leaf) {
    case 0: return launch_fused<In, Leaf::kWiden>(A, P, blocks, stream_once, s);
    case 1: return launch_fused<In, Leaf::kSquare>(A, P, blocks, stream_once, s);
    case 2: return launch_fused<In, Leaf::kProduct>(A, P, blocks, stream_once, s);
    default: break;
    }
    /* NORM2: three trees' partials in three workspaces, one epoch and tree 0's counters
     * (their tickets are one: climb). */
    Trees3<typename In::Acc> T = {};
    for (int k = 0; k < 3; k++) {
        Params<typename In::Acc> &Q = T.p[k];
        Q.out = out;
        Q.fin = fin;
        tree_setup(Q, n, w3->partials[k], w3->counters);
        Q.epoch = w3->epoch;
    }
    if (split > 1) return launch_split<In, Leaf::kNorm2>(A, T, split, blocks, s);
    const bool aligned = arrays_aligned(x, nullptr, false);
    const Args<Shifted<In>> S = {A.x, A.y, A.n};
    if (!aligned && stream_once)
        norm2_kernel<Shifted<In>, true><<<blocks, 32 * kWarps, 0, s>>>(S, T);
    else if (!aligned)
        norm2_kernel<Shifted<In>, false><<<blocks, 32 * kWarps, 0, s>>>(S, T);
    else if (stream_once)
        norm2_kernel<In, true><<<blocks, 32 * kWarps, 0, s>>>(A, T);
    else
        norm2_kernel<In, false><<<blocks, 32 * kWarps, 0, s>>>(A, T);
    return cudaGetLastError();
}

/* Blocks per SM of the one-launch kernels of input In (NORM2's kernel takes the same grid). */
template <typename In> cudaError_t per_sm_of(int device, int *per_sm)
{
    if constexpr (In::kBytes == 2)
        return occupancy<fused_kernel<In, Leaf::kWiden, true>>(32 * kWarps, device, per_sm);
    else
        return occupancy<fused_kernel<In, Leaf::kSquare, true>>(32 * kWarps, device, per_sm);
}

/* The grid: one block per kWarps chunks, at most one full wave (or the handle's forced grid),
 * never a block without a chunk. n == 0: empty_kernel's one thread. */
template <typename In> cudaError_t grid(const cr_gpu_call *c, cr_gpu_grid *g)
{
    if (c->n == 0) {
        g->blocks = g->threads = 1;
        return cudaSuccess;
    }
    const uint64_t C = Layout<typename In::Acc>::kChunk;
    const uint64_t chunks = (c->n + C - 1) / C, need = (chunks + kWarps - 1) / kWarps;
    int per_sm = 0;
    cudaError_t e = per_sm_of<In>(c->device, &per_sm);
    if (e != cudaSuccess) return e;
    const int blocks = grid_blocks(need, c->sm_count, per_sm, c->forced_blocks, INT32_MAX);
    g->blocks = (uint64_t)blocks > need ? (int)need : blocks;
    g->threads = 32 * kWarps;
    /* Mid sizes: G warps a chunk (split_kernel), the most of 8, 4 and 2 whose warps fit in a
     * wave, for misaligned input; aligned, only DOT of float32 and float64 at 8 warps a chunk,
     * where its chunk a warp took 4 round trips to memory. Elsewhere fused_kernel's stream was
     * as fast or faster: aligned 16-bit SUM and SUMSQ 0.4-1.1 us faster from 2^16 to 2^22,
     * float32 SUMSQ 0.2-0.6 us from 2^20, DOT at 4 or 2 warps a chunk 0.3-1.0 us (an H200,
     * docs/perf-log run 284). NORM2 (norm2_kernel's medium pass on aligned input) for misaligned
     * input only. Not for a forced grid (a grid of fused_kernel's). */
    const uint64_t wave = (uint64_t)c->sm_count * per_sm * kWarps;
    const bool dot = c->plan->leaf == CR_LEAF_PRODUCT;
    const bool aligned = arrays_aligned(c->x, c->y, dot);
    const uint64_t room = aligned ? wave : wave * CR_TUNE_SPLIT_WAVES;
    int split = chunks * 8 <= room ? 8 : chunks * 4 <= room ? 4 : chunks * 2 <= room ? 2 : 0;
    if (!CR_TUNE_SPLIT || c->forced_blocks || (aligned && !(dot && In::kBytes >= 4 && split == 8)))
        split = 0;
    g->split = split;
    if (split) g->blocks = (int)((chunks * split + kWarps - 1) / kWarps);
    const uint64_t bytes = c->n * In::kBytes * (c->plan->inputs == 2 ? 2u : 1u);
    g->stream_once = bytes > c->l2_bytes;
    return cudaSuccess;
}

template <typename In>
cudaError_t launch(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g)
{
    const cr_plan *p = c->plan;
    const Final fin = {1, (int)p->op, (int)p->dtype, p->narrow};
    if (c->n == 0) {
        empty_kernel<<<1, 1, 0, c->stream>>>(fin, c->out);
        return cudaGetLastError();
    }
    return fused_for_leaf<In>((int)p->leaf, c->x, c->y, c->n, c->out, w->tree_partials,
                              w->tree_counters, &w->norm2, fin, g->blocks, g->split,
                              g->stream_once, c->stream);
}

/* Calls F<In> for the plan's input type. */
#define CR_ORDERED_DISPATCH(F, ...)                                                                \
    switch (c->plan->dtype) {                                                                      \
    case COOPREDUCE_FLOAT32: return F<F32>(__VA_ARGS__);                                           \
    case COOPREDUCE_FLOAT64: return F<F64>(__VA_ARGS__);                                           \
    case COOPREDUCE_FLOAT16: return F<Half<false>>(__VA_ARGS__);                                   \
    case COOPREDUCE_BFLOAT16: return F<Half<true>>(__VA_ARGS__);                                   \
    default: return cudaErrorInvalidValue;                                                         \
    }

} // namespace

extern "C" {

cudaError_t cr_gpu_ordered_grid(const cr_gpu_call *c,
                                cr_gpu_grid *g){CR_ORDERED_DISPATCH(grid, c, g)}

cudaError_t cr_gpu_ordered_launch(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g)
{
    CR_ORDERED_DISPATCH(launch, c, w, g)
}

} // extern "C"
