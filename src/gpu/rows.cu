/* rows.cu — the canonical-order operations (float32 / float64 SUM and MEAN; SUM and MEAN of
 * 16-bit input, SUMSQ, DOT, NORM2 of every float type) along an axis and over segments.
 *
 * Every result is the 1-D call's bits on its own values (docs/DETERMINISM.md, "Axis and
 * segments"): the chunk tree of the row's chunks, then, for a row of more than one chunk, the
 * canonical tree of its level-1 partials, then the operation's final rule (tree.cuh's
 * write_final). These kernels decide only who computes which chunk of which row:
 *
 *  - narrow_kernel: rows of at most one chunk row (W lanes: 128 float32 / 16-bit, 64 float64).
 *    Such a row's chunk tree is its lane tree (every other row of the chunk is padding), so
 *    G = 1 .. 32 threads take a row, kVec lanes each (one 16-byte load), 32 / G rows per warp:
 *    a warp's load covers whole rows back to back (rows of 16 float32: 8 rows, 512 bytes).
 *  - few_kernel, short_kernel: rows of one chunk that is not full: a warp per row (16-bit rows
 *    of at most 16 chunk rows: a half-warp per row, the other half's rows being padding), the
 *    row tree over the rows of the chunk holding data; few_kernel, for aligned rows of up to 8
 *    chunk rows, several rows per step with all their loads in flight.
 *  - row_block_kernel: small batches of rows of 1 to 4 whole chunks, aligned (the RMSNorm shapes
 *    at small batch: a wave of blocks or fewer): a block a row, its warps splitting the row's
 *    chunks by rows, level 2 in shared memory. Where a warp took a chunk alone, the chunk's
 *    batches, the hand-off and level 2 were one warp's chain of dependent steps on an otherwise
 *    idle GPU: NORM2 of (128, 8192) 7.7-8.1 to 5.2-5.7 us (H100, docs/perf-log run 178).
 *  - stream_kernel: the other rows of a chunk or more. The chunks of all rows are one grid of
 *    jobs ("slots"): row r's chunk j is slot r * cpr + j. Each block streams a contiguous range
 *    of them as the 1-D kernels do, each chunk's value to its row: rows of whole, aligned
 *    chunks are the flat array's chunks; other rows' full chunks are found through a chunk map
 *    (RowChunks) and read by 16-byte loads, shifted into place where the rows do not start on
 *    16-byte boundaries (leaves.cuh's RowShifted), and their ragged chunks by chunk_used's loads
 *    on the row's own pointer, which stop at the last row of the chunk holding data. A row of
 *    one chunk gets its result here; the chunks of longer rows store their partials for the
 *    level above.
 *  - chunks_kernel: the same rows in launches of at most a wave of warps a chunk: a warp per
 *    slot, by leaves.cuh's chunk_values.
 *  - Level 2: the chunk tree of a row's or segment's partials (at most C of them: longer rows
 *    take the generic path), then the final rule (reduce_partials). In the same launch where it
 *    pays: a row or segment of more than one chunk has a ticket, and the warp that stores its
 *    last partial (handoff.cuh's last_warp_arrive) reduces them. A batch of 128 rows of 8192
 *    float32 is a few microseconds of reading, and the second launch was a third of its time.
 *    But the hand-off's fence waits for the warp's loads in flight, so rows streamed from
 *    memory (input larger than L2) and NORM2's segments (16 warps an SM, latency-bound) measured
 *    slower with it, with acquire-release fences as with __threadfence (4096 x 65536 float32:
 *    354-356 to 372 us; bfloat16 NORM2 of 16384 x 8192: 97 to 144 us; NORM2 over 13398
 *    segments: 370-390 to 520-531 us): they keep a second launch
 *    (docs/perf-log): narrow rows of partials for rows of at most W partials (narrow_kernel for
 *    one class, narrow_partials_kernel for NORM2's three), else partials_kernel, each launched
 *    as a dependent of level 1 (grid.cuh's launch_dependent: its blocks take the SMs as level
 *    1's leave; bfloat16 SUMSQ of 16384 x 8192 96.8-97.1 to 95.5-95.9 us, H100, docs/perf-log
 *    run 107).
 *  - segments_kernel: segments, whose chunks start anywhere. Segment s's chunk j is slot
 *    (offsets[s] - offsets[0]) / C + s + j, which never meets another segment's slots (below),
 *    so no prefix sum over the segments is needed. Each warp takes a contiguous range of slots:
 *    one search for the segment of its first, then steps along the offsets. Each chunk by
 *    element loads in leaves.cuh's interleaved layout (chunk_strided): one code path for every
 *    alignment. (The shifted 16-byte path of chunks_kernel, with a search per slot, took twice
 *    as long on float32 segments of 1 to 10,000 elements: instruction-fetch stalls at 17%
 *    occupancy; a warp per segment, and four warps per slot, measured slower still;
 *    docs/perf-log.)
 *    An empty segment owns one slot, a gap, whose warp writes its result (the final rule on the
 *    sum of nothing).
 *  - segments_staged_kernel: the same walk, each warp copying its chunks into its shared memory
 *    by asynchronous 16-byte copies and reading them there (leaves.cuh's chunk_staged,
 *    staged_chunks): up to 16 KiB in flight a warp, holding no registers, where element loads
 *    keep a batch of 4 KiB (4- and 8-byte input: a whole chunk, then its reading; 16-bit: a
 *    ring of four stages of 8 rows, each refilled as it is read). For the sums, squares and
 *    dots of 4- and 2-byte input and float64 dots, over segments of C / 4 elements or more on
 *    average (CR_TUNE_SEG_STAGED).
 *  - segments_stream_kernel: segments of 2 C elements or more on average, of 2- and 4-byte
 *    input (CR_TUNE_SEG_STREAM), read as stream_kernel reads rows: each block writes the chunks
 *    of a window of its slots into a table in shared memory (a search for the segment of each
 *    warp's first 32 slots, its lanes the segments after it), and its warps stream the table's
 *    chunks by 16-byte loads shifted into place per chunk (RowShifted), the ragged ends padded,
 *    the next chunk's loads in flight across chunks and segments. Level 2 by the hand-off where
 *    the input fits in L2, else seg_partials_kernel (a thread a segment). Against the staged
 *    kernel (an H200, docs/perf-log runs 275-280): float32 SUM over segments of 1..30,000
 *    elements 85.4 to 73.5-74.1 us (0.78x to 0.90x CUB's segmented sum), bfloat16 56.7 to 48.0-
 *    48.3 (0.74x to 0.88x), at 2^28 0.78x to 0.93-0.95x. Shorter segments stay staged: over
 *    segments of 1..10,000 the stream took 82-87 us against 80, of 1..4000 95-98 against 86 (as
 *    many instructions a byte as over rows, but more waiting: a block's share there is about 11
 *    chunks a warp, run 283); so does float64 (level at 1..30,000).
 *  - narrow_partials_kernel, partials_kernel: level 2 as a launch of its own, several rows to a
 *    warp, or a warp per row or segment; seg_partials_kernel, a thread per segment.
 *  - columns_kernel: strided rows (an axis with inner > 1). A thread per column (32 adjacent
 *    columns per warp: each load of the warp is one run of 32 elements) computes a subtree of
 *    one chunk of its column serially, lane by lane: the 32 rows of a lane as one unrolled
 *    pairwise tree (two lanes, 64 loads, in flight), the lane sums into a stack that merges
 *    them as the perfect tree of its lanes. (Walking a few adjacent lanes 4 rows at a time
 *    instead, so that each step reads short runs of the column, measured slower:
 *    docs/perf-log.) At level 1, Q = 4 or 8 warps of a block share each (outer index, chunk,
 *    32 columns), W / Q lanes each, their subtrees merged in shared memory (CR_TUNE_COL_SPLIT);
 *    columns of more than one chunk store partials as an (outer, chunks, inner) array that the
 *    same kernel then reduces with identity leaves, as columns of their own, a warp per job.
 *    16-bit columns go two to a thread (one 4-byte load for both: 128 bytes a warp's load, as
 *    for float32) where inner is even and the input 4-byte aligned; NORM2's by the medium pass
 *    first, the three classes only for the lanes of a column that hold an element outside it.
 *
 * None of these choices changes a bit: the tree is fixed by each row's length alone. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "gpu/kernel/grid.cuh"   /* grid_blocks */
#include "gpu/kernel/traits.cuh" /* Elem, Layout */
#include "gpu/kernel/tree.cuh"   /* Final, write_final */
#include "gpu/kernel/leaves.cuh" /* input types, leaves, chunk_values */
#include "gpu/kernel/handoff.cuh" /* last_warp_arrive */
#include "gpu/launch.h"

/*  CR_TUNE_NORM2_HANDOFF 1: NORM2's rows (three classes) take level 2 in the same launch where
 *    their input fits in L2, as the other operations do; 0: always a second launch. Neither wins
 *    everywhere (H100, docs/perf-log run 73): 0 took bfloat16 (512, 16384) from 11.4 to 9.6 us
 *    and float32 (1024, 8192) from 14.1 to 17.9 us. */
#ifndef CR_TUNE_NORM2_HANDOFF
#define CR_TUNE_NORM2_HANDOFF 1
#endif
/*  CR_TUNE_SPREAD 1: a streamed launch of fewer chunks than the SMs' block slots takes a block a
 *    chunk, its other warps idle, so that the chunks spread over the SMs (one warp a chunk is a
 *    chain of dependent work, and eight of them shared an SM): float32 (128, 8192) SUM 5.93-5.95
 *    to 5.27-5.49 us, NORM2 8.23 to 7.97-8.13; bfloat16 (64, 16384) NORM2 7.86-7.90 to
 *    7.58-7.62; bfloat16 (128, 8192) level (H100, docs/perf-log run 173). 0: eight chunks a
 *    block. */
#ifndef CR_TUNE_SPREAD
#define CR_TUNE_SPREAD 1
#endif
/*  CR_TUNE_ROW_BLOCK W: rows of 1 to 4 whole, aligned chunks, at most W waves of blocks of
 *    them, take a block a row (row_block_kernel); 0: stream_kernel as any other rows of whole
 *    chunks. 1 (H100, docs/perf-log runs 176-178): against 0, batches of 128 rows of 8192 NORM2
 *    7.7-8.1 to 5.2-6.0 us, float32 and float64 DOT 7.5-7.8 to 4.6-5.8, float64 sums 6.1-6.3 to
 *    4.3-5.5, the 16-bit and float32 sums level; rows of one chunk level. 4 against 1: mixed
 *    (float32 (512, 8192) SUM 7.2 to 5.7 us, bfloat16 (1024, 4096) NORM2 5.2 to 8.6): a block
 *    walking several rows one after the other keeps fewer loads in flight than the stream. */
#ifndef CR_TUNE_ROW_BLOCK
#define CR_TUNE_ROW_BLOCK 1
#endif

namespace {

/* The identity leaves of the levels above level 1: the accumulation type as an input type,
 * read through L2 (__ldcg): rows' and segments' partials are read in the launch that wrote them
 * (handoff.cuh's last_warp_arrive). */
struct F32L2 : F32 {
    static __device__ __forceinline__ float at(const void *p, uint64_t i)
    {
        return __ldcg(static_cast<const float *>(p) + i);
    }
};
struct F64L2 : F64 {
    static __device__ __forceinline__ double at(const void *p, uint64_t i)
    {
        return __ldcg(static_cast<const double *>(p) + i);
    }
};
template <typename Acc> struct AccIn;
template <> struct AccIn<float> {
    using T = F32L2;
    using Plain = F32; /* read by a later launch: any load path */
};
template <> struct AccIn<double> {
    using T = F64L2;
    using Plain = F64;
};

/* A result: the final rule of tree.cuh (write_final), except for the plain float32 / float64
 * SUM, whose rule is the value itself with NaN made canonical (the same bits, without the out-of-
 * line call: rows of a few elements make it a large share of the work). */
template <typename Acc, int K>
__device__ __forceinline__ void put_result(const Final &F, uint64_t n, const Acc (&v)[K], char *out)
{
    if constexpr (K == 1) {
        if (F.op == COOPREDUCE_OP_SUM &&
            F.dtype == (sizeof(Acc) == 4 ? COOPREDUCE_FLOAT32 : COOPREDUCE_FLOAT64)) {
            *reinterpret_cast<Acc *>(out) = v[0] != v[0] ? Layout<Acc>::nan() : v[0];
            return;
        }
        write_final(F, n, (double)v[0], 0.0, 0.0, out);
    } else {
        write_final(F, n, (double)v[0], (double)v[1], (double)v[2], out);
    }
}

/* One call's rows, as the kernels read them. */
struct Rows {
    const char *x, *y;        /* the input (y: DOT's second operand) */
    uint64_t rows;            /* rows (outer) or segments */
    uint64_t len, cpr;        /* rows: the length, and its chunks (C-element) */
    uint64_t nfin;            /* rows: the length the final rule divides by (MEAN): len, or, for
                                 rows of partials, the length of the rows they came from */
    const int64_t *offsets;   /* segments: nseg + 1 offsets in device memory, unchecked; else
                                 NULL */
    uint64_t n;               /* segments: x's length, which bounds the offsets */
    uint64_t slots;           /* level-1 jobs (segments: at most; the offsets say how many) */
    void *part[3];            /* level-1 partials, one per slot, per leaf class */
    unsigned long long *grab; /* segments: the slot counter and the warps done, zero between
                                 launches (beside the ticket); grab[2], the fault word (launch.h) */
    unsigned int epoch;       /* segments: the call's number, for the fault word */
    unsigned int grab_run;    /* segments: slots a warp takes at a time (CR_TUNE_SEG_GRAB) */
    unsigned int *tickets;    /* one per row or segment of more than one chunk, zero between
                                 launches */
    int handoff;              /* level 2 in this launch (tickets); else partials_kernel's */
    char *out;                /* result r at out + r * rsize */
    size_t rsize;
    int aligned;              /* x (and y) 16-byte aligned */
    Final F;
};

/* The levels above level 1 of a row or segment of n > C elements: the chunk tree of its `parts`
 * partials from slot `first` of each class's array, read through L2, then the final rule. A
 * segment longer than C^2 (more than C partials) first takes further levels in place: group g
 * of C partials to one value, stored at slot first + g, among the partials the warp has read by
 * then (groups 0 .. g). Out of line (the level-1 loops' registers stay theirs), its
 * arguments by value rather than by a reference to the kernel's parameters. */
template <typename Acc, int K>
__device__ __noinline__ void reduce_partials(const cg::thread_block_tile<32> &warp, Final F,
                                             void *p0, void *p1, void *p2, uint64_t n,
                                             uint64_t first, uint64_t parts, char *out)
{
    using In = typename AccIn<Acc>::T;
    constexpr uint64_t C = Shape<In>::kChunk;
    void *const part[3] = {p0, p1, p2};
    Acc a[3] = {Acc(0), Acc(0), Acc(0)};
#pragma unroll
    for (int k = 0; k < K; k++) {
        Acc *const q = static_cast<Acc *>(part[k]) + first;
        Acc v[1];
        uint64_t m = parts;
        while (m > C) { /* a level above level 2, in place */
            const uint64_t groups = (m + C - 1) / C;
            for (uint64_t g = 0; g < groups; g++) {
                const Args<In> A = {reinterpret_cast<const char *>(q), nullptr, m};
                const uint64_t rest = m - g * C;
                chunk_strided<In, Leaf::kWiden>(warp, A, g * C, rest < C ? (int)rest : (int)C, v);
                warp.sync(); /* every thread has read group g */
                if (warp.thread_rank() == 0) q[g] = v[0];
                warp.sync();
            }
            m = groups;
        }
        const Args<In> A = {reinterpret_cast<const char *>(q), nullptr, m};
        chunk_strided<In, Leaf::kWiden>(warp, A, 0, (int)m, v);
        a[k] = v[0];
    }
    if (warp.thread_rank() == 0) write_final(F, n, (double)a[0], (double)a[1], (double)a[2], out);
}

/* By the whole warp once its thread 0 has stored partial(s) of row or segment r (n elements,
 * `parts` partials from slot `first`): the warp that stores the last one reduces them. */
template <typename Acc, int K>
__device__ __forceinline__ void partial_stored(const cg::thread_block_tile<32> &warp,
                                               const Rows &R, uint64_t r, uint64_t n,
                                               uint64_t first, uint64_t parts)
{
    if (last_warp_arrive(warp, R.tickets + r, (unsigned int)parts))
        reduce_partials<Acc, K>(warp, R.F, R.part[0], R.part[1], R.part[2], n, first, parts,
                                R.out + r * R.rsize);
}

/* The first slot of segment s: its chunks take slots base(s) .. base(s) + ceil(n_s / C) - 1,
 * and base(s) + ceil(n_s / C) <= base(s + 1): with a = offsets[s] - offsets[0] and
 * b = offsets[s + 1] - offsets[0], floor(a / C) + ceil((b - a) / C) <= floor(b / C) + 1.
 * base is strictly increasing in s. */
template <uint64_t C>
__device__ __forceinline__ uint64_t seg_base(const int64_t *off, uint64_t s)
{
    return (uint64_t)(__ldg(off + s) - __ldg(off)) / C + s;
}

/* The segment whose slots hold slot g of `slots` (the last s with base(s) <= g), by the warp:
 * each round the 32 threads probe 32 evenly spaced segments, which narrows the range 32-fold.
 * The first round probes the 32 segments CR_TUNE_SEG_GUESS apart (0: none) around segment
 * g * nseg / slots, the slot's share of the segments: random lengths put the answer within 16
 * of it most of the time (a Brownian bridge, pinned at both ends), and one round then does, where
 * the full search takes log32(nseg) rounds; otherwise the bracket the probes found is searched
 * as before, one round more than without the guess. Probes 1 apart measured fastest (H100,
 * docs/perf-log runs 90-92: 332,191 float32 segments of 1..100, 194 to 178 us; 134,326 of
 * 1..1000, 108.5 to 105.5-108 us; 2 apart, 183 us); but the code costs the kernel 28-32 bytes of
 * spill, and long segments 0-2% (4% for segments of 1..4000). */
#ifndef CR_TUNE_SEG_GUESS
#define CR_TUNE_SEG_GUESS 1
#endif
template <uint64_t C>
__device__ __forceinline__ uint64_t find_segment(const cg::thread_block_tile<32> &warp,
                                                 const int64_t *off, uint64_t nseg, uint64_t g,
                                                 uint64_t slots)
{
    uint64_t lo = 0, hi = nseg; /* base(lo) <= g < base(hi) */
    if (CR_TUNE_SEG_GUESS > 0 && nseg > 64) {
        /* a first round around the segment the slot's share of the slots points at; probe i of
         * the warp (the same in every thread: est is) */
        const int64_t est = (int64_t)((double)g * (double)nseg / (double)slots);
        const auto probe = [&](int i) {
            const int64_t p = est + (int64_t)(i - 16) * CR_TUNE_SEG_GUESS;
            return (uint64_t)(p < 0 ? 0 : p < (int64_t)nseg ? p : (int64_t)nseg - 1);
        };
        const unsigned int b = warp.ballot(seg_base<C>(off, probe(warp.thread_rank())) <= g);
        if (b == 0) {
            hi = probe(0);
        } else {
            const int k = 31 - __clz((int)b);
            lo = probe(k);
            if (k < 31 && probe(k + 1) > lo) hi = probe(k + 1);
        }
    }
    while (hi - lo > 1) {
        const uint64_t step = (hi - lo + 31) / 32, p = lo + warp.thread_rank() * step;
        /* bit 0 set (p = lo), also when bad offsets break the order: lo stays below hi */
        const unsigned int b = warp.ballot(p < hi && seg_base<C>(off, p) <= g) | 1u;
        lo += (uint64_t)(31 - __clz((int)b)) * step;
        hi = lo + step < hi ? lo + step : hi;
    }
    return lo;
}

/* The fault word's entry for the call's bad offset k: the largest entry is the latest call's
 * first bad offset. */
__device__ __forceinline__ unsigned long long fault_entry(unsigned int epoch, uint64_t k)
{
    const unsigned long long low = k < 0xffffffffull ? k : 0xffffffffull;
    return ((unsigned long long)epoch << 32) | (0xffffffffull - low);
}

__device__ __forceinline__ bool faulted(const Rows &R)
{
    return (unsigned int)(*(volatile unsigned long long *)(R.grab + 2) >> 32) == R.epoch;
}

/* The offsets checked on the device, a share of 32 consecutive ones per warp at a time: offset
 * k is bad when below offsets[k - 1] (k = 0: below 0) or beyond n. */
template <int kWPB>
__device__ __forceinline__ void check_offsets(const cg::thread_block_tile<32> &warp, const Rows &R)
{
    const uint64_t warps = (uint64_t)gridDim.x * kWPB;
    for (uint64_t k = ((uint64_t)blockIdx.x * kWPB + warp.meta_group_rank()) * 32 +
                      warp.thread_rank();
         k <= R.rows; k += warps * 32) {
        const int64_t v = __ldg(R.offsets + k), before = k ? __ldg(R.offsets + k - 1) : 0;
        if (v < before || (uint64_t)v > R.n) atomicMax(R.grab + 2, fault_entry(R.epoch, k));
    }
}

/* The slots of the segments that lie within x and start at or after offsets[0] (o0; oe the
 * last offset): (oe - o0) / C + nseg, never above R.slots; none where o0 or oe is bad. */
template <uint64_t C>
__device__ __forceinline__ uint64_t segment_slots(const Rows &R, int64_t o0, int64_t oe)
{
    return o0 < 0 || oe < o0 || (uint64_t)oe > R.n ? 0 : (uint64_t)(oe - o0) / C + R.rows;
}

/* Whether the segment [start, end) lies within x at or after offsets[0] (o0): the others are
 * bad, which check_offsets reports. */
__device__ __forceinline__ bool segment_within(const Rows &R, int64_t o0, int64_t start,
                                               int64_t end)
{
    return start >= o0 && end >= start && (uint64_t)end <= R.n;
}

/* The end of level 1 of segments, by every warp of the launch once it has written its results
 * and taken its last slots (segment_chunks' counter is past them): the last warp done zeroes
 * that counter and the count of warps done for the next launch in stream order, and, when some
 * offset was bad, makes every result NaN and zeroes the tickets, which bad offsets may have left
 * at any count. A warp's results (thread 0's) are released before it counts itself done. */
template <int kWPB>
__device__ __forceinline__ void segments_done(const cg::thread_block_tile<32> &warp, const Rows &R)
{
    using u64 = unsigned long long;
    u64 *const next = R.grab, *const done = R.grab + 1;
    unsigned int bad = 0;
    if (warp.thread_rank() == 0) {
        fence_acq_rel_gpu();
        if (atomicAdd(done, (u64)1) == (u64)gridDim.x * kWPB - 1) {
            fence_acq_rel_gpu();
            *next = 0;
            *done = 0;
            bad = faulted(R);
        }
    }
    if (!warp.shfl(bad, 0)) return;
    warp.sync(); /* orders thread 0's acquire before every thread's stores */
    const double nan = __longlong_as_double(0x7ff8000000000000ll);
    for (uint64_t r = warp.thread_rank(); r < R.rows; r += 32) {
        write_final(R.F, 1, nan, nan, nan, R.out + r * R.rsize);
        if (R.handoff) R.tickets[r] = 0;
    }
}

/* CR_TUNE_SEG_GRAB: slots a warp takes at a time, and CR_TUNE_SEG_GRAB_SHORT where the mean
 * segment (n / nseg) is shorter than a chunk / CR_TUNE_SEG_SHORT. On long segments 2 measured
 * fastest (H100, docs/perf-log runs 78 and 88: float32 segments of 1..10,000 over 2^26, 111 us;
 * 4 slots 2% slower; 1 slot as fast for float32, 7% slower for bfloat16); on segments of 1..100,
 * 4 slots 16% faster (run 88): a run of slots then costs its atomic and search for fewer
 * elements. */
#ifndef CR_TUNE_SEG_GRAB
#define CR_TUNE_SEG_GRAB 2
#endif
#ifndef CR_TUNE_SEG_GRAB_SHORT
#define CR_TUNE_SEG_GRAB_SHORT 4
#endif
#ifndef CR_TUNE_SEG_SHORT
#define CR_TUNE_SEG_SHORT 8
#endif
/* CR_TUNE_SEG_HANDOFF: level 2 of the segments longer than a chunk by the warp storing their
 * last partial (1), or by partials_kernel, a launch of its own (0). 1 kept: without the hand-off
 * long segments were 1-5% faster but short ones 7-18% slower (H100, docs/perf-log run 91, before
 * CR_TUNE_SEG_WHOLE, which needs it). */
#ifndef CR_TUNE_SEG_HANDOFF
#define CR_TUNE_SEG_HANDOFF 1
#endif
/* CR_TUNE_SEG_WHOLE: segments of 2 .. CR_TUNE_SEG_WHOLE chunks (at most 4; 0 or 1: none) are
 * read whole by the warp that takes their first slot, their chunk tree in its registers: no
 * partials, fences, tickets or level 2 for them (NORM2's level 2 is a launch of its own: not
 * for it). 4 measured fastest (H100, docs/perf-log run 92: float32 SUM over 13,398 segments of
 * 1..10,000, 112.3 to 104.9 us; bfloat16 77.6 to 65.8 us; float64 200.9 to 197.9 us; DOT and
 * SUMSQ 3% and 6% faster), though a warp then holds up to 4 chunks' work where the others hold
 * one: the fences it saves cost more than the longer tail. */
#ifndef CR_TUNE_SEG_WHOLE
#define CR_TUNE_SEG_WHOLE 4
#endif
static_assert(CR_TUNE_SEG_WHOLE <= 4, "a whole segment's chunk tree is written for 4 chunks");

/* Level 1 of segments. The warps take runs of R.grab_run consecutive slots from a counter, as
 * they free up: about half the slots are gaps and the chunks are of any length, so a fixed share
 * per warp left the busiest warp with 1.7 times the mean work. In a run: one search for the
 * segment of its first slot, then steps along the offsets (a slot past the current segment's
 * last chunk is a gap or a later segment's). Each chunk by element loads in the interleaved
 * layout (chunk_strided): segments start anywhere; NORM2's by the medium pass first, the three
 * classes only for chunks with an element outside it (chunk_strided_norm2). In
 * segments_staged_kernel (kStaged), from a copy in the warp's shared memory instead, where the
 * copy's 16-byte blocks lie within x (and y): chunk_staged, or, for 16-bit input, the ring of
 * staged_chunks over the warp's chunks. A segment of 2 to
 * CR_TUNE_SEG_WHOLE chunks is read whole at its first slot (its other slots are then gaps).
 * The counter and a count of the warps done live beside the ticket (zero between launches); the
 * last warp done zeroes both.
 *
 * The offsets are the caller's, unchecked: every warp first checks a share of them
 * (check_offsets), and reads only the segments that lie within x and start at or after
 * offsets[0], whose slots lie below n / C + nseg + 1 (R.slots). When some offset is bad, the
 * last warp done (which every other warp's results precede) makes every result NaN and zeroes
 * the tickets, which bad offsets may have left at any count. */
template <typename In, Leaf LF, int kWPB, bool kStaged>
__device__ __forceinline__ void segment_chunks(const cg::thread_block_tile<32> &warp,
                                               const Rows &R, char *buf)
{
    static_assert(!kStaged || LF != Leaf::kNorm2, "NORM2: element loads (CR_TUNE_SEG_STAGED)");
    constexpr uint64_t kWhole = LF == Leaf::kNorm2 ? 0 : CR_TUNE_SEG_WHOLE;
    using S = Shape<In>;
    using Acc = typename In::Acc;
    using u64 = unsigned long long;
    constexpr uint64_t C = S::kChunk;
    u64 *const next = R.grab;
    check_offsets<kWPB>(warp, R);
    const int64_t o0 = __ldg(R.offsets), oe = __ldg(R.offsets + R.rows);
    const uint64_t slots = segment_slots<C>(R, o0, oe);
    [[maybe_unused]] bool three = false; /* NORM2: the warp's last chunk had another class */
    for (;;) {
        u64 g0 = 0;
        if (warp.thread_rank() == 0) g0 = atomicAdd(next, (u64)R.grab_run);
        g0 = warp.shfl(g0, 0);
        if (g0 >= slots) break;
        const uint64_t g1 = g0 + R.grab_run < slots ? g0 + R.grab_run : slots;
        uint64_t s = find_segment<C>(warp, R.offsets, R.rows, g0, slots);
        int64_t start = __ldg(R.offsets + s), end = __ldg(R.offsets + s + 1);
        for (uint64_t g = g0; g < g1; g++) {
            while (s + 1 < R.rows && end >= o0 && (uint64_t)(end - o0) / C + s + 1 <= g) {
                s++;
                start = end;
                end = __ldg(R.offsets + s + 1);
            }
            if (!segment_within(R, o0, start, end)) continue; /* bad: checked */
            const uint64_t n = (uint64_t)(end - start), first = (uint64_t)(start - o0) / C + s;
            const uint64_t j = g - first;
            if (n == 0) { /* its one slot, a gap: the final rule on the sum of nothing */
                if (warp.thread_rank() == 0) write_final(R.F, 0, 0.0, 0.0, 0.0, R.out + s * R.rsize);
                continue;
            }
            if (j * C >= n) continue; /* a gap */
            const uint64_t parts = (n + C - 1) / C;
            const bool whole = kWhole > 1 && R.handoff && parts > 1 && parts <= kWhole;
            if (whole && j > 0) continue; /* the warp of its first slot takes it whole */
            const Args<In> A = {R.x + (uint64_t)start * In::kBytes,
                                R.y ? R.y + (uint64_t)start * In::kBytes : nullptr, n};
            Acc v[kLeaves<LF>], a[kLeaves<LF>], b[kLeaves<LF>]; /* a, b: a whole segment's */
            /* a whole segment's chunk tree of up to 4 partials (lanes 0..3, the rest -0.0, the
             * identity): (p0 + p1) + (p2 + p3), as reduce_partials computes it */
            const auto whole_tree = [&](uint64_t q, const Acc *c) {
#pragma unroll
                for (int k = 0; k < kLeaves<LF>; k++) {
                    if (q == 0) a[k] = c[k];
                    if (q == 1) a[k] = a[k] + c[k];
                    if (q == 2) b[k] = c[k];
                    if (q == 3) b[k] = b[k] + c[k];
                }
            };
            /* a ring of several stages (16-bit input; others with CR_TUNE_SEG_RING > 1), staged:
             * the warp's chunks (j, or the whole segment) through the ring, where the copies'
             * 16-byte blocks lie within x (and y) */
            bool ring = false;
            if constexpr (kStaged && kRing<In> > 1) {
                const uint64_t qend = whole ? parts : j + 1;
                const uint64_t e0 = (uint64_t)start + j * C,
                               cnt = (qend * C < n ? qend * C : n) - j * C;
                ring = blocks_within<In>(R.x, R.n, e0, cnt) &&
                       (LF != Leaf::kProduct || blocks_within<In>(R.y, R.n, e0, cnt));
                if (ring)
                    staged_chunks<In, LF>(warp, A, j, qend, buf, [&](uint64_t q, const Acc *c) {
#pragma unroll
                        for (int k = 0; k < kLeaves<LF>; k++) v[k] = c[k];
                        whole_tree(q, c);
                    });
            }
            for (uint64_t q = j; !ring; q++) {
                const uint64_t rest = n - q * C;
                const int m = rest < C ? (int)rest : (int)C;
                bool staged = false;
                if constexpr (kStaged && kRing<In> == 1) { /* the chunk's copy, then its reading */
                    const uint64_t e0 = (uint64_t)start + q * C;
                    staged = blocks_within<In>(R.x, R.n, e0, (uint64_t)m) &&
                             (LF != Leaf::kProduct || blocks_within<In>(R.y, R.n, e0, (uint64_t)m));
                    if (staged) chunk_staged<In, LF>(warp, A, q * C, m, buf, v);
                }
                if (!staged) {
                    if constexpr (LF == Leaf::kNorm2)
                        chunk_strided_norm2<In>(warp, A, q * C, m, v, three);
                    else
                        chunk_strided<In, LF>(warp, A, q * C, m, v);
                }
                if constexpr (kWhole > 1) {
                    if (!whole) break;
                    whole_tree(q, v);
                    if (q + 1 == parts) break;
                } else {
                    break;
                }
            }
            if constexpr (kWhole > 1) {
                if (whole) {
                    if (warp.thread_rank() == 0) {
                        double d[3] = {0.0, 0.0, 0.0};
#pragma unroll
                        for (int k = 0; k < kLeaves<LF>; k++) d[k] = parts > 2 ? a[k] + b[k] : a[k];
                        write_final(R.F, n, d[0], d[1], d[2], R.out + s * R.rsize);
                    }
                    continue;
                }
            }
            if (n <= C) {
                if (warp.thread_rank() == 0) put_result(R.F, n, v, R.out + s * R.rsize);
                continue;
            }
            if (warp.thread_rank() == 0)
#pragma unroll
                for (int k = 0; k < kLeaves<LF>; k++) static_cast<Acc *>(R.part[k])[g] = v[k];
            if (R.handoff) partial_stored<Acc, kLeaves<LF>>(warp, R, s, n, first, (n + C - 1) / C);
        }
    }
    segments_done<kWPB>(warp, R);
}

/* CR_TUNE_SEG_BLOCKS: blocks per SM the segments' kernel is compiled for. 3 (80 registers, 24
 * warps an SM) measured fastest (H100, docs/perf-log run 84: float32 segments of 1..10,000 over
 * 2^26 in 111 us; 4 blocks, 64 registers with the slot loop's state spilled, 127 us; 2 blocks
 * 114 us, and 30% slower on segments of 1..100). Its time goes in latency: each warp's batch of
 * loads, then its tree, the hand-off and the next run's search. NORM2's, with its two passes: 2
 * (at 3 it spilled, 13% slower for float32: run 86). */
#ifndef CR_TUNE_SEG_BLOCKS
#define CR_TUNE_SEG_BLOCKS 3
#endif
template <Leaf LF> constexpr int kSegBlocks = LF == Leaf::kNorm2 ? 2 : CR_TUNE_SEG_BLOCKS;

template <typename In, Leaf LF>
__global__ void __launch_bounds__(kThreads, kSegBlocks<LF>) segments_kernel(const __grid_constant__ Rows R)
{
    let_dependents_launch(); /* NORM2's level 2 (grid.cuh) */
    cg::thread_block block = cg::this_thread_block();
    segment_chunks<In, LF, kWarpsPerBlock, false>(cg::tiled_partition<32>(block), R, nullptr);
}

/* CR_TUNE_SEG_STAGED: level 1 of segments by segments_staged_kernel (1): each warp copies its
 * chunks into shared memory by asynchronous 16-byte copies before reading them (leaves.cuh's
 * chunk_staged, staged_chunks), CR_TUNE_SEG_WARPS warps a block, as many blocks an SM as their
 * shared memory allows on sm_90 (4- and 8-byte input: three blocks of four warps, 12 warps an
 * SM with 16 KiB in flight each; 16-bit: six blocks, 24 warps of 8 KiB; where segments_kernel
 * has 24 warps of 4 KiB a batch; a GPU whose shared memory holds fewer such blocks an SM runs
 * segments_kernel instead: launch_segments_staged); 0: segments_kernel alone. The element
 * loads of segments_kernel wait for each batch of rows in turn; a whole chunk in flight at once
 * took (H100, 2^26 elements in segments of 1..10,000, docs/perf-log) float32 SUM from 85.4% of the
 * read to 89.0% (0.88x to 0.92x CUB's segmented sum; 91.3% to 94.0% at 2^28), SUMSQ 84.8% to
 * 88.4%, DOT 86.8% to 89.8%, bfloat16 SUM 70.6% to 72.1% and DOT 74.2% to 76.2%, float64 DOT
 * 89.6% to 90.2%, float32 SUM over segments of 1..4000 86.6% to 89.1% (0.97x to 1.00x CUB);
 * 16-bit input's ring of stages then took bfloat16 SUM to 76.0% (0.89-0.90x CUB) and DOT to
 * 77.6% (runs 130-133).
 * Not kept for: float64 SUM (88.8% to 87.8%) and SUMSQ (level), NORM2 (76% to 69%: its medium
 * pass and class test at half the warps), and segments shorter on average than
 * C / CR_TUNE_SEG_STAGED_SHORT elements (float32 segments of 1..2000: 85.7% to 74.8%, a chunk
 * holding a few rows: half the warps for the same round trip). */
#ifndef CR_TUNE_SEG_STAGED
#define CR_TUNE_SEG_STAGED 1
#endif
#ifndef CR_TUNE_SEG_STAGED_SHORT
#define CR_TUNE_SEG_STAGED_SHORT 4
#endif
#ifndef CR_TUNE_SEG_WARPS
#define CR_TUNE_SEG_WARPS 4
#endif
template <typename In, Leaf LF>
constexpr bool kSegStaged =
    CR_TUNE_SEG_STAGED && LF != Leaf::kNorm2 && (In::kBytes < 8 || LF == Leaf::kProduct);
constexpr int kSegWarps = CR_TUNE_SEG_WARPS;
/* Shared memory a block of segments_staged_kernel takes (kSegStagedBytes, its dynamic part),
 * what an SM gives a block of it (kSegStagedSmBytes: 2 KiB more, the KiB reserved for the
 * system and the kernel's own), and its blocks an SM: what fits in sm_90's 228 KiB, at most 8. */
template <typename In, Leaf LF> constexpr int kSegStagedBytes = kSegWarps * kStageBytes<In, LF>;
template <typename In, Leaf LF> constexpr int kSegStagedSmBytes = kSegStagedBytes<In, LF> + 2048;
template <typename In, Leaf LF>
constexpr int kSegStagedFit = 228 * 1024 / kSegStagedSmBytes<In, LF>;
template <typename In, Leaf LF>
constexpr int kSegStagedBlocks = kSegStagedFit<In, LF> < 8 ? kSegStagedFit<In, LF> : 8;

template <typename In, Leaf LF>
__global__ void __launch_bounds__(32 * kSegWarps, kSegStagedBlocks<In, LF>)
    segments_staged_kernel(const __grid_constant__ Rows R)
{
    extern __shared__ __align__(16) char seg_stage[];
    let_dependents_launch(); /* level 2, where it is a launch of its own (grid.cuh) */
    cg::thread_block block = cg::this_thread_block();
    const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    segment_chunks<In, LF, kSegWarps, true>(
        warp, R, seg_stage + warp.meta_group_rank() * kStageBytes<In, LF>);
}

/* The launch of segments_staged_kernel, where the GPU's shared memory holds kSegStagedBlocks of
 * its blocks an SM (sm_90's 228 KiB; GPUs with less run segments_kernel: *launched false). Its
 * shared memory is allowed once per device, and again if a launch is refused (a context made
 * anew, after cudaDeviceReset, no longer carries the attribute). */
template <typename In, Leaf LF>
cudaError_t launch_segments_staged(const cr_gpu_call *c, const Rows &R, bool *launched)
{
    static std::atomic<int> state[kMaxDevices]; /* 0: not asked yet; 1: allowed; -1: no fit */
    constexpr int bytes = kSegStagedBytes<In, LF>;
    const auto allow = [] {
        return cudaFuncSetAttribute(segments_staged_kernel<In, LF>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    };
    const bool known = c->device >= 0 && c->device < kMaxDevices;
    int st = known ? state[c->device].load(std::memory_order_relaxed) : 0;
    cudaError_t e;
    if (st == 0) {
        int per_sm = 0;
        e = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                                   c->device);
        if (e != cudaSuccess) return e;
        st = per_sm >= kSegStagedBlocks<In, LF> * kSegStagedSmBytes<In, LF> ? 1 : -1;
        if (st > 0 && (e = allow()) != cudaSuccess) return e;
        if (known) state[c->device].store(st, std::memory_order_relaxed);
    }
    *launched = st > 0;
    if (st < 0) return cudaSuccess;
    const int blocks = grid_blocks((R.slots + kSegWarps - 1) / kSegWarps, c->sm_count,
                                   kSegStagedBlocks<In, LF>, c->forced_blocks, INT32_MAX);
    segments_staged_kernel<In, LF><<<blocks, 32 * kSegWarps, bytes, c->stream>>>(R);
    e = cudaGetLastError();
    if (e == cudaErrorInvalidValue && allow() == cudaSuccess) {
        segments_staged_kernel<In, LF><<<blocks, 32 * kSegWarps, bytes, c->stream>>>(R);
        e = cudaGetLastError();
    }
    return e;
}

/* Level 1: a warp per slot. */
template <typename In, Leaf LF>
__global__ void __launch_bounds__(kThreads) chunks_kernel(const __grid_constant__ Rows R)
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>;
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const uint64_t warps = (uint64_t)gridDim.x * kWarpsPerBlock;
    for (uint64_t g = (uint64_t)blockIdx.x * kWarpsPerBlock + warp.meta_group_rank(); g < R.slots;
         g += warps) {
        const uint64_t r = g / R.cpr, j = g - r * R.cpr, start = r * R.len, n = R.len;
        const Args<In> A = {R.x + start * In::kBytes, R.y ? R.y + start * In::kBytes : nullptr, n};
        const bool aligned = R.aligned && (start * In::kBytes) % 16 == 0;
        Acc v[K];
        chunk_values<In, LF, false, true>(warp, A, j, aligned, v, R.aligned != 0);
        if (n <= S::kChunk) {
            if (warp.thread_rank() == 0) put_result(R.F, n, v, R.out + r * R.rsize);
            continue;
        }
        if (warp.thread_rank() == 0)
#pragma unroll
            for (int k = 0; k < K; k++) static_cast<Acc *>(R.part[k])[g] = v[k];
        if (R.handoff) partial_stored<Acc, K>(warp, R, r, n, r * R.cpr, R.cpr);
    }
}

/* Level 2 as a launch of its own: a warp per row or segment of more than one chunk (over
 * segments, the empty ones too). Its own code, not reduce_partials: the same work through that
 * function, or written out after it, measured 40% slower here (ncu: 47 against 33 us for
 * NORM2's 16384 rows of two bfloat16 chunks; docs/perf-log, runs 71-72). */
template <typename Acc, int K, bool kSeg>
__global__ void __launch_bounds__(kThreads, K == 1 ? 4 : 2) partials_kernel(const __grid_constant__ Rows R)
{
    using In = typename AccIn<Acc>::Plain;
    using S = Shape<In>;
    wait_prior_grid(); /* level 1's partials (launch_dependent) */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const uint64_t warps = (uint64_t)gridDim.x * kWarpsPerBlock;
    if constexpr (kSeg) {
        if (faulted(R)) return; /* bad offsets: the results are level 1's NaNs */
    }
    for (uint64_t r = (uint64_t)blockIdx.x * kWarpsPerBlock + warp.meta_group_rank(); r < R.rows;
         r += warps) {
        uint64_t n, first;
        if constexpr (kSeg) {
            const uint64_t s0 = (uint64_t)__ldg(R.offsets + r);
            n = (uint64_t)__ldg(R.offsets + r + 1) - s0;
            first = seg_base<S::kChunk>(R.offsets, r);
            if (n > 0 && n <= S::kChunk) continue; /* level 1's */
            if (n > S::kChunk * S::kChunk) { /* more than C partials: levels in place */
                reduce_partials<Acc, K>(warp, R.F, R.part[0], R.part[1], R.part[2], n, first,
                                        (n + S::kChunk - 1) / S::kChunk, R.out + r * R.rsize);
                continue;
            }
        } else {
            n = R.len;
            first = r * R.cpr;
        }
        const uint64_t parts = (n + S::kChunk - 1) / S::kChunk;
        Acc a[3] = {Acc(0), Acc(0), Acc(0)};
        if (parts > 0) {
#pragma unroll
            for (int k = 0; k < K; k++) {
                const Args<In> A = {static_cast<const char *>(R.part[k]) + first * sizeof(Acc),
                                    nullptr, parts};
                Acc v[1];
                chunk_strided<In, Leaf::kWiden>(warp, A, 0, (int)parts, v);
                a[k] = v[0];
            }
        }
        if (warp.thread_rank() == 0)
            write_final(R.F, n, (double)a[0], (double)a[1], (double)a[2], R.out + r * R.rsize);
    }
}

/* The pairwise tree of p[0 .. m) (1 <= m <= 8) as a subtree of a lane tree: a right subtree
 * with no element (the identity) left out. */
template <typename Acc> __device__ __forceinline__ Acc tree8(const Acc (&p)[8], uint64_t m)
{
    const Acc s01 = m > 1 ? p[0] + p[1] : p[0];
    const Acc s23 = m > 3 ? p[2] + p[3] : p[2];
    const Acc s03 = m > 2 ? s01 + s23 : s01;
    const Acc s45 = m > 5 ? p[4] + p[5] : p[4];
    const Acc s67 = m > 7 ? p[6] + p[7] : p[6];
    const Acc s47 = m > 6 ? s45 + s67 : s45;
    return m > 4 ? s03 + s47 : s03;
}

/* Level 2 of segments_stream_kernel's segments where it is a launch of its own (one class): a
 * thread a segment of 2 to 64 partials, whose chunk tree is the lane tree of one chunk row (W
 * >= 64 lanes, the rest padding): the trees of its groups of 8 partials (each group's loads
 * issued at once), then the tree of those; then the final rule. A segment of more partials is
 * the warp's, in turn (reduce_partials). A warp a segment (partials_kernel) took 11.6 us after
 * the level 1 of 13,398 float32 segments of 1..10,000 elements, a thread a segment with the
 * loads one by one 5.5 us after 4,492 of 1..30,000; with a warp for each segment of more than 8
 * partials, segments of 1..100,000 took 97.5 us, and 74.2-74.6 with groups of 8 (the staged
 * kernel: 82.3; an H200, docs/perf-log runs 277-280). */
constexpr uint64_t kSegThreadParts = 64;
template <typename Acc>
__global__ void __launch_bounds__(kThreads) seg_partials_kernel(const __grid_constant__ Rows R)
{
    using In = typename AccIn<Acc>::Plain;
    constexpr uint64_t C = Shape<In>::kChunk;
    static_assert(Shape<In>::kLanes >= kSegThreadParts, "the partials lie in one chunk row");
    wait_prior_grid();      /* level 1's partials (launch_dependent) */
    if (faulted(R)) return; /* bad offsets: the results are level 1's NaNs */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const uint64_t s = (uint64_t)blockIdx.x * kThreads + threadIdx.x;
    uint64_t n = 0, first = 0, parts = 0;
    if (s < R.rows) {
        const int64_t o0 = __ldg(R.offsets), a = __ldg(R.offsets + s);
        n = (uint64_t)(__ldg(R.offsets + s + 1) - a);
        first = (uint64_t)(a - o0) / C + s;
        parts = n > C ? (n + C - 1) / C : 0; /* one chunk: level 1 wrote its result */
    }
    if (parts >= 2 && parts <= kSegThreadParts) {
        const Acc *q = static_cast<const Acc *>(R.part[0]) + first;
        Acc g[8] = {};
#pragma unroll
        for (uint64_t k = 0; k < 8; k++) {
            Acc p[8];
            if (k * 8 < parts) {
#pragma unroll
                for (uint64_t i = 0; i < 8; i++) p[i] = k * 8 + i < parts ? q[k * 8 + i] : Acc(0);
                g[k] = tree8(p, parts - k * 8 < 8 ? parts - k * 8 : 8);
            }
        }
        const Acc v = tree8(g, (parts + 7) / 8);
        write_final(R.F, n, (double)v, 0.0, 0.0, R.out + s * R.rsize);
    }
    for (unsigned int b = warp.ballot(parts > kSegThreadParts); b; b &= b - 1) {
        const int l = __ffs((int)b) - 1;
        const uint64_t sl = warp.shfl(s, l);
        reduce_partials<Acc, 1>(warp, R.F, R.part[0], R.part[1], R.part[2], warp.shfl(n, l),
                                warp.shfl(first, l), warp.shfl(parts, l), R.out + sl * R.rsize);
    }
}

/* log2 of the threads a narrow row of n lanes takes: the fewest whose kVec lanes each cover it. */
template <typename In> int group_log2(uint64_t n)
{
    int gl = 0;
    while ((uint64_t)In::kVec << gl < n) gl++;
    return gl;
}

/* Level 2 as a launch of its own for rows of 2 .. W partials of each of K classes (NORM2's
 * three): G = 2^gl threads per row, kVec lanes each by element loads, 32 / G rows per warp, the
 * lane tree as narrow_kernel's for one class, then the final rule on the K sums. A warp per row
 * (partials_kernel) took 33 us for 16384 rows of two partials: a chain of loads, shuffles and
 * the final rule per row, eight rows in turn per warp. */
template <typename Acc, int K>
__global__ void __launch_bounds__(kThreads) narrow_partials_kernel(const __grid_constant__ Rows R, int gl)
{
    using In = typename AccIn<Acc>::Plain;
    constexpr int V = In::kVec;
    wait_prior_grid(); /* level 1's partials (launch_dependent) */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int t = warp.thread_rank(), G = 1 << gl, m = (int)R.cpr;
    const int lane0 = (t & (G - 1)) * V;
    const uint64_t per_warp = (uint64_t)(32 >> gl), warps = (uint64_t)gridDim.x * kWarpsPerBlock;
    for (uint64_t w = (uint64_t)blockIdx.x * kWarpsPerBlock + warp.meta_group_rank();
         w * per_warp < R.rows; w += warps) {
        const uint64_t r = w * per_warp + (uint64_t)(t >> gl);
        const bool live = r < R.rows;
        Acc v[3] = {Acc(0), Acc(0), Acc(0)};
#pragma unroll
        for (int k = 0; k < K; k++) {
            const Args<In> A = {static_cast<const char *>(R.part[k]) +
                                    (live ? r : 0) * R.cpr * sizeof(Acc),
                                nullptr, R.cpr};
            const RowVals<In, Leaf::kWiden> s =
                lanes_guarded<In, Leaf::kWiden>(A, 0, lane0, live ? m : 0);
            Acc x[V];
#pragma unroll
            for (int j = 0; j < V; j++) x[j] = s.v[j][0];
#pragma unroll
            for (int d = 1; d < V; d *= 2)
#pragma unroll
                for (int j = 0; j < V; j += 2 * d) x[j] = x[j] + x[j + d];
            for (int d = 1; d < G; d *= 2) x[0] = x[0] + warp.shfl_xor(x[0], d);
            v[k] = x[0];
        }
        if (live && (t & (G - 1)) == 0)
            write_final(R.F, R.nfin, (double)v[0], (double)v[1], (double)v[2], R.out + r * R.rsize);
    }
}

/* Rows of len <= W: G = 2^gl threads per row, 32 / G rows per warp at a time, kGroups such
 * groups of rows per step with all their loads issued first. */
constexpr int kGroups = 8;

template <typename In, Leaf LF>
__global__ void __launch_bounds__(kThreads) narrow_kernel(const __grid_constant__ Rows R, int gl)
{
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>;
    wait_prior_grid(); /* as level 2: level 1's partials (launch_dependent) */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int t = warp.thread_rank(), G = 1 << gl, per_warp = 32 >> gl;
    const int lane0 = (t & (G - 1)) * In::kVec, m = (int)R.len;
    const uint64_t warps = (uint64_t)gridDim.x * kWarpsPerBlock;
    const bool vec = R.aligned && (R.len * In::kBytes) % 16 == 0 && lane0 + In::kVec <= m;
    /* The loads of the warp's next step are issued before this step's trees (two buffers). */
    auto load = [&](uint64_t w, uint4 (&qx)[kGroups], uint4 (&qy)[kGroups]) {
#pragma unroll
        for (int u = 0; u < kGroups; u++) {
            const uint64_t r = (w + u) * per_warp + (t >> gl);
            qx[u] = qy[u] = make_uint4(0, 0, 0, 0);
            if (vec && r < R.rows) {
                const uint64_t at = r * R.len * In::kBytes + lane0 * In::kBytes;
                qx[u] = __ldg(reinterpret_cast<const uint4 *>(R.x + at));
                if constexpr (LF == Leaf::kProduct)
                    qy[u] = __ldg(reinterpret_cast<const uint4 *>(R.y + at));
            }
        }
    };
    uint64_t w = ((uint64_t)blockIdx.x * kWarpsPerBlock + warp.meta_group_rank()) * kGroups;
    uint4 nx[kGroups], ny[kGroups];
    load(w, nx, ny);
    for (; w * per_warp < R.rows; w += warps * kGroups) {
        RowVals<In, LF> s[kGroups];
        uint4 qx[kGroups], qy[kGroups];
#pragma unroll
        for (int u = 0; u < kGroups; u++) qx[u] = nx[u], qy[u] = ny[u];
        load(w + warps * kGroups, nx, ny);
#pragma unroll
        for (int u = 0; u < kGroups; u++) {
            const uint64_t r = (w + u) * per_warp + (t >> gl);
            const bool live = r < R.rows;
            if (vec) {
                s[u] = leaves_of<In, LF>(qx[u], qy[u]);
            } else {
                const uint64_t at = (live ? r : 0) * R.len * In::kBytes;
                const Args<In> A = {R.x + at, R.y ? R.y + at : nullptr, R.len};
                s[u] = lanes_guarded<In, LF>(A, 0, lane0, live ? m : 0);
            }
        }
#pragma unroll
        for (int u = 0; u < kGroups; u++) {
            const uint64_t r = (w + u) * per_warp + (t >> gl);
            /* The lane tree: inside the thread, then across the G threads of the row (the lanes
             * past them are padding). */
            Acc v[K];
#pragma unroll
            for (int k = 0; k < K; k++) {
                Acc x[In::kVec];
#pragma unroll
                for (int j = 0; j < In::kVec; j++) x[j] = s[u].v[j][k];
#pragma unroll
                for (int d = 1; d < In::kVec; d *= 2)
#pragma unroll
                    for (int j = 0; j < In::kVec; j += 2 * d) x[j] = x[j] + x[j + d];
                for (int d = 1; d < G; d *= 2) x[0] = x[0] + warp.shfl_xor(x[0], d);
                v[k] = m ? x[0] : Acc(0); /* the sum of nothing is +0.0, not the padding */
            }
            if (r < R.rows && (t & (G - 1)) == 0) put_result(R.F, R.nfin, v, R.out + r * R.rsize);
        }
    }
}

/* CR_TUNE_HALF_ROWS 1: 16-bit rows of at most kRows chunk rows (2048 elements) go two to a
 * warp, a half-warp each: their data lie within the first half's rows, the second half's being
 * padding (chunk_tree's kApart); 0: a warp per row, half of it loading nothing. 1 measured
 * faster (H100, docs/perf-log run 96: bfloat16 (2^20, 256) SUM 306 to 203 us, SUMSQ 346 to
 * 196 us, NORM2 863 to 663 us). kRowsSide<In>: the rows a warp takes side by side. */
#ifndef CR_TUNE_HALF_ROWS
#define CR_TUNE_HALF_ROWS 1
#endif
template <typename In> constexpr int kRowsSide = CR_TUNE_HALF_ROWS ? Shape<In>::kHalves : 1;

/* The row tree of one row of few_kernel from its loaded chunk rows qx (and, for DOT, qy): chunk
 * rows row0 .. row0 + RB - 1 of this thread's lanes, those at or past m -0.0 leaves (every group
 * of a row is wholly within the row or wholly past it: rows start on 16-byte boundaries and
 * hold whole 16-byte groups). kMedium folds the groups within the row into ext. NORM2's medium
 * pass gives the three classes' bits when every element is of the medium class (the big and
 * small trees are then trees of +0.0 leaves and -0.0 padding, +0.0 for a row of one element or
 * more; the medium one that of the squares), as everywhere (docs/DETERMINISM.md). */
template <typename In, Leaf LF, int RB, int RY>
__device__ __forceinline__ RowVals<In, LF> few_rows(const uint4 (&qx)[RB], const uint4 (&qy)[RY],
                                                    int row0, int lane0, int m, Ext &ext)
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    static_assert(LF != Leaf::kProduct || RY == RB, "DOT: both arrays' rows");
    RowVals<In, LF> b[RB];
#pragma unroll
    for (int i = 0; i < RB; i++) {
        if ((row0 + i) * S::kLanes + lane0 < m) {
            if constexpr (LF == Leaf::kMedium) In::ext_fold(ext, qx[i]);
            if constexpr (LF == Leaf::kProduct)
                b[i] = leaves_of<In, LF>(qx[i], qy[i]);
            else
                b[i] = leaves_of<In, LF>(qx[i], qx[i]);
        } else {
#pragma unroll
            for (int j = 0; j < In::kVec; j++)
#pragma unroll
                for (int k = 0; k < kLeaves<LF>; k++) b[i].v[j][k] = Acc(-0.0);
        }
    }
    return pairwise_tree(b);
}

/* Rows of W < len <= RB * W elements, aligned (every row starts on a 16-byte boundary): a warp
 * per row (per two rows: kRowsSide) as short_kernel, but U rows at a time with all their loads
 * issued first (16 16-byte loads per thread in flight; a row is a batch of RB chunk rows, those
 * past the row's end -0.0). NORM2 takes the medium pass first and the three classes from the
 * same registers only where the warp's rows need them. */
/* kFewBlocks: the blocks an SM few_kernel is compiled for: two (at most 128 registers), but for
 * NORM2 of rows of 4 or 8 chunk rows (170-245 registers: the three classes' trees beside 16
 * loads), which would spill. Left to ptxas, SUMSQ of 16-bit rows of 2 chunk rows took 138
 * registers, one block an SM, and bfloat16 (2^20, 256) 196 to 284 us; NORM2 there 372 us at 138
 * registers, 252-254 us at two blocks (H100, docs/perf-log run 180). */
template <Leaf LF, int RB> constexpr int kFewBlocks = LF == Leaf::kNorm2 && RB > 2 ? 1 : 2;
template <typename In, Leaf LF, int RB>
__global__ void __launch_bounds__(kThreads, kFewBlocks<LF, RB>)
    few_kernel(const __grid_constant__ Rows R)
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>, U = (LF == Leaf::kProduct ? 8 : 16) / RB, H = kRowsSide<In>;
    constexpr int UY = LF == Leaf::kProduct ? U : 1, RY = LF == Leaf::kProduct ? RB : 1;
    static_assert(H == 1 || RB <= S::kRows, "side by side: a row within one half's rows");
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int t = warp.thread_rank(), half = t / S::kThreadsPerRow;
    /* side by side: the half's row of the pair; else the half's chunk rows of the one row */
    const int rh = H == 2 ? half : 0, row0 = H == 2 ? 0 : half * S::kRows;
    const int lane0 = (t % S::kThreadsPerRow) * In::kVec, m = (int)R.len;
    const uint64_t warps = (uint64_t)gridDim.x * kWarpsPerBlock, steps = (R.rows + H - 1) / H;
    for (uint64_t w = ((uint64_t)blockIdx.x * kWarpsPerBlock + warp.meta_group_rank()) * U;
         w < steps; w += warps * U) {
        uint4 qx[U][RB], qy[UY][RY];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const uint64_t r = (w + u) * H + rh;
#pragma unroll
            for (int i = 0; i < RB; i++) {
                const int first = (row0 + i) * S::kLanes + lane0;
                const uint64_t at = (r * R.len + first) * In::kBytes;
                qx[u][i] = make_uint4(0, 0, 0, 0);
                if constexpr (LF == Leaf::kProduct) qy[u][i] = qx[u][i];
                if (r < R.rows && first < m) {
                    qx[u][i] = __ldg(reinterpret_cast<const uint4 *>(R.x + at));
                    if constexpr (LF == Leaf::kProduct)
                        qy[u][i] = __ldg(reinterpret_cast<const uint4 *>(R.y + at));
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            Acc v[K];
            if constexpr (LF == Leaf::kNorm2) {
                /* the medium pass first (the squares and the class test, per row: H rows a
                 * warp), the three classes from the same loads only if some element of the
                 * warp's rows needs them; the same bits (see few_rows) */
                Ext ext;
                const RowVals<In, Leaf::kMedium> sq =
                    few_rows<In, Leaf::kMedium, RB>(qx[u], qx[u], row0, lane0, m, ext);
                Acc t2[In::kVec];
#pragma unroll
                for (int j = 0; j < In::kVec; j++) t2[j] = sq.v[j][0];
                const Acc med = chunk_tree<In, H == 2>(warp, t2);
                if (warp.any(In::ext_other(ext))) { /* (Ext: a vote on the threads' tests) */
                    finish_chunk<In, LF, H == 2>(
                        warp, few_rows<In, LF, RB>(qx[u], qx[u], row0, lane0, m, ext), Ext(), v);
                } else {
                    v[0] = v[2] = Acc(0);
                    v[1] = med;
                }
            } else {
                Ext ext; /* unused: one class */
                const RowVals<In, LF> b =
                    few_rows<In, LF, RB>(qx[u], qy[LF == Leaf::kProduct ? u : 0], row0, lane0, m,
                                         ext);
                finish_chunk<In, LF, H == 2>(warp, b, Ext(), v);
            }
            const uint64_t r = (w + u) * H + rh;
            if ((H == 2 ? t % S::kThreadsPerRow : t) == 0 && r < R.rows)
                put_result(R.F, R.nfin, v, R.out + r * R.rsize);
        }
    }
}

/* Rows of W < len < C elements (one chunk, not full): a warp per row (kPair: two 16-bit rows of
 * at most kRows chunk rows, a half-warp each), its row tree over the rows holding data only
 * (leaves.cuh's rows_used), inline: none of the full-chunk code's registers. */
template <typename In, Leaf LF, bool kPair>
__global__ void __launch_bounds__(kThreads) short_kernel(const __grid_constant__ Rows R)
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>, H = kPair ? 2 : 1;
    static_assert(!kPair || S::kHalves == 2, "pairs: 16-bit rows");
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int t = warp.thread_rank(), half = t / S::kThreadsPerRow;
    const int lane0 = (t % S::kThreadsPerRow) * In::kVec;
    const uint64_t warps = (uint64_t)gridDim.x * kWarpsPerBlock, steps = (R.rows + H - 1) / H;
    const bool vec = R.aligned && (R.len * In::kBytes) % 16 == 0;
    for (uint64_t w = (uint64_t)blockIdx.x * kWarpsPerBlock + warp.meta_group_rank(); w < steps;
         w += warps) {
        /* kPair: this half's row, whose chunk rows are the first half's; the second of an odd
         * count's last pair reduces nothing and writes nothing */
        const uint64_t r = kPair ? w * 2 + half : w;
        const bool live = r < R.rows;
        const uint64_t at = (live ? r : 0) * R.len * In::kBytes;
        const Args<In> A = {R.x + at, R.y ? R.y + at : nullptr, R.len};
        const int m = live ? (int)R.len : 0, h = kPair ? 0 : half;
        Acc v[K];
        if (vec)
            finish_chunk<In, LF, kPair>(warp, rows_used<In, LF, kLoadVector>(A, 0, h, lane0, m),
                                        Ext(), v);
        else if (R.aligned)
            finish_chunk<In, LF, kPair>(warp, rows_used<In, LF, kLoadShifted>(A, 0, h, lane0, m),
                                        Ext(), v);
        else
            finish_chunk<In, LF, kPair>(warp, rows_used<In, LF, kLoadScalar>(A, 0, h, lane0, m),
                                        Ext(), v);
        if (t % S::kThreadsPerRow == 0 && live) put_result(R.F, R.nfin, v, R.out + r * R.rsize);
    }
}

/* NORM2 in stream_kernel: the chunks of a warp's first segment (leaves.cuh's norm2_segments), so
 * that data of wide range turns to the three-class stream early (as ordered.cu's). */
#ifndef CR_TUNE_ROWS_NORM2_FIRST
#define CR_TUNE_ROWS_NORM2_FIRST 1
#endif

/* stream_kernel's chunk c of values v: the row's result (a chunk a row) or the chunk's partials,
 * and the row's level 2 by the hand-off where the input fits in L2. */
template <typename In, int K, bool kStream>
__device__ __forceinline__ void stream_emit(const cg::thread_block_tile<32> &warp, const Rows &R,
                                            uint64_t c, const typename In::Acc (&v)[K])
{
    using Acc = typename In::Acc;
    if (R.cpr == 1) {
        if (warp.thread_rank() == 0) put_result(R.F, R.nfin, v, R.out + c * R.rsize);
        return;
    }
    if (warp.thread_rank() == 0)
#pragma unroll
        for (int k = 0; k < K; k++) static_cast<Acc *>(R.part[k])[c] = v[k];
    if (!kStream) { /* fits in L2: the hand-off (see the top of the file) */
        const uint64_t r = c / R.cpr;
        partial_stored<Acc, K>(warp, R, r, R.len, r * R.cpr, R.cpr);
    }
}

constexpr uint64_t kNoChunk = ~0ull; /* RowChunks' skip0 / skip1: none */

/* CR_TUNE_ROWS_MEDIUM_VALUES: NORM2's medium pass over the rows' chunks the stream does not
 * read (RowChunks::values): 0, none (each goes to the three classes); 1, the full ones, the
 * ragged ones to the three classes; 2, every one, and chunk_used's medium pass first where the
 * three classes read a chunk again. 1 kept (an H200, docs/perf-log run 302, against the code
 * before, which 0 matches there): misaligned rows of 8192 bfloat16 43% to 73% of the read,
 * float32 40% to 82%, float64 54% to 79%, a misaligned row of 2^24 bfloat16 73 to 39 us; rows
 * of 10001 (a ragged chunk each) and data of wide range level. 2 lost 2-18% on those (run 301). */
#ifndef CR_TUNE_ROWS_MEDIUM_VALUES
#define CR_TUNE_ROWS_MEDIUM_VALUES 1
#endif

/* stream_kernel's chunk map (leaves.cuh's ChunkAt) for rows that are not whole, aligned chunks:
 * rows whose length is not a multiple of C, or whose chunks do not start on 16-byte boundaries.
 * Chunk g = r * cpr + j is element r * len + j * C. The stream reads them by 16-byte loads,
 * shifted into place where the rows do not start on a boundary (RowShifted); a ragged chunk's
 * loads stop after the rows holding its elements, and those past it are padding (leaves.cuh's
 * pad_batch), but the loads of its last row reach into the next row. So the stream reads every
 * chunk but the last row's ragged one, and the array's first and last full chunk where their
 * blocks would reach past its ends (skip0, skip1: a misaligned array, a last ragged chunk of
 * fewer than 16 bytes); those take chunk_used's loads on the row's own pointer, out of line.
 * (The ragged chunks by chunk_used's loads took rows of 10001 bfloat16 to 48% of the read only,
 * against 90% for rows of whole chunks: docs/perf-log run 257.) kRagged: the rows have a ragged
 * chunk (without, the stream leaves out the padding's code, which took misaligned rows of whole
 * chunks 1-11 points of the read, NORM2 and bfloat16 DOT most: run 258). */
template <typename In, bool kRagged_ = true> struct RowChunks {
    static constexpr bool kAllFull = false;
    static constexpr bool kRagged = kRagged_;
    const char *x, *y;
    uint64_t rows, len, cpr, nf; /* the rows, their length, chunks, full chunks */
    uint64_t skip0, skip1; /* full chunks the stream does not read, or kNoChunk */
    double inv;            /* 1 / cpr */
    int aligned;           /* x (and y) start on a 16-byte boundary */
    /* g / cpr without a 64-bit division (a call, which the loads in flight would live across):
     * the quotient by the reciprocal, off by at most one while it is below 2^52, corrected */
    __device__ __forceinline__ uint64_t row_of(uint64_t g) const
    {
        uint64_t r = __double2ull_rz((double)g * inv);
        if (r * cpr > g) r--;
        else if (g - r * cpr >= cpr) r++;
        return r;
    }
    __device__ __forceinline__ ChunkAt at(uint64_t g) const
    {
        constexpr uint64_t C = Shape<In>::kChunk;
        const uint64_t r = row_of(g), j = g - r * cpr;
        const bool full = j < nf;
        return {r * len + j * C, full ? (int)C : (int)(len - nf * C),
                (full || r + 1 < rows) && g != skip0 && g != skip1};
    }
    template <Leaf LF, typename Ld>
    __device__ __forceinline__ void values(const cg::thread_block_tile<32> &warp, const Args<Ld> &,
                                           uint64_t g, typename In::Acc (&v)[kOut<LF>]) const
    {
        constexpr uint64_t C = Shape<In>::kChunk;
        const uint64_t r = row_of(g), j = g - r * cpr, start = r * len, rest = len - j * C;
        if constexpr (LF == Leaf::kMedium) { /* NORM2's medium pass */
            if (CR_TUNE_ROWS_MEDIUM_VALUES == 0 || (CR_TUNE_ROWS_MEDIUM_VALUES == 1 && rest < C)) {
                v[0] = 0; /* the three classes instead */
                v[1] = 1;
                return;
            }
        }
        const Args<In> A = {x + start * In::kBytes, y ? y + start * In::kBytes : nullptr, len};
        const bool row_aligned = aligned && (start * In::kBytes) % 16 == 0;
        chunk_used<In, LF, CR_TUNE_ROWS_MEDIUM_VALUES == 2>(
            warp, A, j * C, rest < C ? (int)rest : (int)C,
            row_aligned ? kLoadVector : aligned ? kLoadShifted : kLoadWithin, v);
    }
};

/* stream_kernel's chunk maps: the flat array's (rows of whole, aligned chunks), RowChunks with
 * aligned loads (rows whose length is a multiple of 16 bytes in an aligned array), RowChunks
 * with loads shifted into place (the others), without a ragged chunk (rows of whole chunks in
 * a misaligned array) or with. */
enum { kMapFlat = 0, kMapRows = 1, kMapShifted = 2, kMapShiftedWhole = 3 };
template <typename In, int kMap>
using MapLoads =
    typename std::conditional<kMap >= kMapShifted, RowShifted<In>, In>::type;

/* NORM2's three-class stream of stream_kernel's chunks c0, c0 + kWarpsPerBlock, .. below c1
 * (leaves.cuh's norm2_segments): returns how many had a big or small partial other than +0.0.
 * Out of line, so that the medium stream keeps its registers. */
template <typename In, bool kStream, typename Map>
__device__ __noinline__ int rows_stream_classes(const cg::thread_block_tile<32> &warp,
                                                const Args<In> &A, const Rows &R, uint64_t c0,
                                                uint64_t c1, const Map &map)
{
    using Acc = typename In::Acc;
    int others = 0;
    auto emit = [&](uint64_t c, const Acc(&v)[3]) {
        others += !is_plus_zero(v[0]) || !is_plus_zero(v[2]); /* uniform across the warp */
        stream_emit<In, 3, kStream>(warp, R, c, v);
    };
    stream_chunks<In, Leaf::kNorm2, kStream>(warp, A, c0, c1, kWarpsPerBlock, emit, NoHook(), map);
    return others;
}

/* Rows of more than one chunk, or of one whole chunk: each block streams a contiguous range of
 * the rows' chunks as the 1-D kernels do (leaves.cuh's stream_chunks: the next batch's loads in
 * flight while a batch's tree runs), each chunk's value to its row. Rows of whole, aligned chunks
 * are the flat array's chunks (kMapFlat); other rows' chunks are found through RowChunks, the
 * ragged ones taken in turn by the warp whose they are. (A warp a chunk without the stream,
 * chunks_kernel, ran rows of 10001 at 28-52% of the read: docs/perf-log.) NORM2 streams its
 * chunks as ordered.cu's norm2_kernel does (leaves.cuh's norm2_segments): a medium pass whose
 * chunks with an element of another class are done again with the three classes after each
 * segment, or, after a segment where a quarter or more of the chunks had one (data of wide
 * range), a three-class stream (a medium pass over such data read most chunks twice: rows of
 * 8192 at 37-47% of the read, docs/perf-log). */
template <typename In, Leaf LF, bool kStream, int kMap>
__global__ void __launch_bounds__(kThreads, Layout<typename In::Acc>::kMinBlocks * 8 / kWarpsPerBlock)
    stream_kernel(const __grid_constant__ Rows R, const __grid_constant__ RowChunks<In> M)
{
    using Ld = MapLoads<In, kMap>;
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>;
    if constexpr (kStream) let_dependents_launch(); /* level 2 (grid.cuh) */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    uint64_t b0, b1;
    balanced_range(R.slots, gridDim.x, blockIdx.x, &b0, &b1);
    const Args<Ld> A = {R.x, R.y, R.rows * R.len};
    auto emit = [&](uint64_t c, const Acc(&v)[K]) { stream_emit<Ld, K, kStream>(warp, R, c, v); };
    const uint64_t c = b0 + warp.meta_group_rank();
    auto run = [&](const auto &map) {
        if constexpr (LF == Leaf::kNorm2) {
            auto medium = [&](uint64_t cm, Acc m) {
                const Acc v[3] = {Acc(0), m, Acc(0)};
                emit(cm, v);
            };
            auto three = [&](uint64_t c0, uint64_t c1) {
                return rows_stream_classes<Ld, kStream>(warp, A, R, c0, c1, map);
            };
            norm2_segments<Ld, kStream>(warp, A, c, b1, kWarpsPerBlock, CR_TUNE_ROWS_NORM2_FIRST,
                                        medium, emit, three, NoHook(), map);
        } else {
            stream_chunks<Ld, LF, kStream>(warp, A, c, b1, kWarpsPerBlock, emit, NoHook(), map);
        }
    };
    if (c >= b1) return; /* (stream_chunks' first loads) */
    if constexpr (kMap == kMapFlat) {
        run(FlatChunks<Ld>());
    } else if constexpr (kMap == kMapShiftedWhole) {
        const RowChunks<In, false> W = {M.x,     M.y,     M.rows,  M.len, M.cpr,
                                        M.nf,    M.skip0, M.skip1, M.inv, M.aligned};
        run(W);
    } else {
        run(M);
    }
}

/* CR_TUNE_SEG_STREAM: level 1 of segments of CR_TUNE_SEG_STREAM_LONG chunks or more on average
 * by segments_stream_kernel (1), for SUM, MEAN, SUMSQ and DOT of 2- and 4-byte input; 0: by
 * segments_kernel or segments_staged_kernel. Not for shorter segments (float32 SUM over segments
 * of 1..10,000 80 to 82 us, of 1..4000 86 to 98: a block's share of slots is small, and its
 * warps wait more than over rows), nor float64 (level, or 3-12% slower) (an H200, docs/perf-log
 * runs 275-283). */
#ifndef CR_TUNE_SEG_STREAM
#define CR_TUNE_SEG_STREAM 1
#endif
#ifndef CR_TUNE_SEG_STREAM_LONG
#define CR_TUNE_SEG_STREAM_LONG 2
#endif
template <typename In, Leaf LF>
constexpr bool kSegStream = CR_TUNE_SEG_STREAM && LF != Leaf::kNorm2 && In::kBytes <= 4;

/* segments_stream_kernel's table: the chunks of a block's window of segment slots, gaps left
 * out. m < 0: a chunk of -m elements that the stream does not read (its loads would reach
 * before x or past the end of x or y), which chunk_used reads instead. */
struct SegChunk {
    uint64_t base;  /* its first element in x */
    uint64_t s, n;  /* its segment, and the segment's length */
    unsigned int j; /* its index in the segment */
    int m;
};
constexpr int kSegTab = 32 * kWarpsPerBlock; /* slots a window: 32 a warp */

/* The chunk map (leaves.cuh's ChunkAt) of a block's table, for stream_chunks. */
template <typename In> struct SegChunks {
    static constexpr bool kAllFull = false;
    static constexpr bool kRagged = true;
    const SegChunk *tab;
    const char *x, *y;
    int aligned; /* x (and y) start on a 16-byte boundary */
    __device__ __forceinline__ ChunkAt at(uint64_t i) const
    {
        const int m = tab[i].m;
        return {tab[i].base, m < 0 ? -m : m, m > 0};
    }
    template <Leaf LF, typename Ld>
    __device__ __forceinline__ void values(const cg::thread_block_tile<32> &warp, const Args<Ld> &,
                                           uint64_t i, typename In::Acc (&v)[kOut<LF>]) const
    {
        constexpr uint64_t C = Shape<In>::kChunk;
        static_assert(LF != Leaf::kMedium && LF != Leaf::kNorm2, "NORM2: segments_kernel");
        const SegChunk e = tab[i];
        const uint64_t start = e.base - (uint64_t)e.j * C;
        const Args<In> A = {x + start * In::kBytes, y ? y + start * In::kBytes : nullptr, e.n};
        const bool seg_aligned = aligned && (start * In::kBytes) % 16 == 0;
        chunk_used<In, LF>(warp, A, (uint64_t)e.j * C, -e.m,
                           seg_aligned ? kLoadVector
                           : aligned   ? kLoadShifted
                                       : kLoadWithin,
                           v);
    }
};

/* Whether the stream may read the chunk of m elements at element `base` of p (n elements): the
 * blocks its loads read (load_rows: the aligned blocks of its rows holding data and the row
 * after, and the last row's tail block) lie within p. */
template <typename In>
__device__ __forceinline__ bool seg_streams(const char *p, uint64_t n, uint64_t base, int m)
{
    using S = Shape<In>;
    const uint64_t rows = (uint64_t)rows_to_load<RowShifted<In>>(m) * S::kLanes;
    const uint64_t last = base + (rows < S::kChunk ? rows : S::kChunk) - In::kVec;
    const uintptr_t a = (uintptr_t)p;
    return ((a + base * In::kBytes) & ~(uintptr_t)15) >= a &&
           ((a + last * In::kBytes) & ~(uintptr_t)15) + 32 <= a + n * In::kBytes;
}

/* Level 1 of segments as the rows' stream (stream_kernel): each block takes a contiguous range
 * of the slots (segment_chunks' numbering), in windows of kSegTab. For a window, each warp finds
 * the segment of its 32 slots' first (find_segment), its lanes take that segment and the next 31
 * (every segment with a slot among the 32), and write their chunks into the block's table, gaps
 * left out, in slot order; an empty segment's lane writes its result. The warps then stream the
 * table's chunks as stream_kernel streams rows' chunks: 16-byte loads shifted into place per
 * chunk (RowShifted), the next chunk's loads in flight while a chunk's tree runs, ragged ends
 * padded. A segment of one chunk gets its result there; the chunks of longer ones store their
 * partials for level 2: by the hand-off (kStream false: the input fits in L2) or
 * seg_partials_kernel. Offsets are checked and faults reported as in segment_chunks. */
template <typename In, Leaf LF, bool kStream>
__global__ void __launch_bounds__(kThreads,
                                  Layout<typename In::Acc>::kMinBlocks * 8 / kWarpsPerBlock)
    segments_stream_kernel(const __grid_constant__ Rows R)
{
    using Ld = RowShifted<In>;
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>;
    constexpr uint64_t C = Shape<In>::kChunk;
    __shared__ SegChunk tab[kSegTab + kWarpsPerBlock]; /* (stream_chunks looks one stride on) */
    __shared__ unsigned int counts[kWarpsPerBlock];
    if constexpr (kStream) let_dependents_launch(); /* level 2 (grid.cuh) */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int w = warp.meta_group_rank(), lane = warp.thread_rank();
    const int64_t o0 = __ldg(R.offsets), oe = __ldg(R.offsets + R.rows);
    const uint64_t slots = segment_slots<C>(R, o0, oe);
    uint64_t b0, b1;
    balanced_range(R.slots, gridDim.x, blockIdx.x, &b0, &b1);
    b1 = b1 < slots ? b1 : slots;
    const Args<Ld> A = {R.x, R.y, R.n};
    const SegChunks<In> map = {tab, R.x, R.y, R.aligned};
    auto emit = [&](uint64_t i, const Acc(&v)[K]) {
        const uint64_t s = tab[i].s, n = tab[i].n;
        if (n <= C) {
            if (lane == 0) put_result(R.F, n, v, R.out + s * R.rsize);
            return;
        }
        const uint64_t j = tab[i].j, first = (tab[i].base - j * C - (uint64_t)o0) / C + s;
        if (lane == 0)
#pragma unroll
            for (int k = 0; k < K; k++) static_cast<Acc *>(R.part[k])[first + j] = v[k];
        if constexpr (!kStream) partial_stored<Acc, K>(warp, R, s, n, first, (n + C - 1) / C);
    };
    for (uint64_t w0 = b0; w0 < b1; w0 += kSegTab) { /* uniform across the block */
        const uint64_t p0 = w0 + 32 * (uint64_t)w, p1 = p0 + 32 < b1 ? p0 + 32 : b1;
        uint64_t t = 0, jlo = 0, jhi = 0, n = 0;
        int64_t start = 0;
        if (p0 < p1) { /* uniform across the warp */
            t = find_segment<C>(warp, R.offsets, R.rows, p0, slots) + lane;
            if (t < R.rows) {
                start = __ldg(R.offsets + t);
                const int64_t end = __ldg(R.offsets + t + 1);
                if (segment_within(R, o0, start, end)) { /* else bad: checked */
                    n = (uint64_t)(end - start);
                    const uint64_t first = (uint64_t)(start - o0) / C + t;
                    if (n == 0 && first >= p0 && first < p1) /* its one slot: the empty rule */
                        write_final(R.F, 0, 0.0, 0.0, 0.0, R.out + t * R.rsize);
                    const uint64_t parts = (n + C - 1) / C;
                    jlo = first < p0 ? p0 - first : 0;
                    jhi = p1 <= first ? 0 : parts < p1 - first ? parts : p1 - first;
                    if (jhi < jlo) jhi = jlo;
                }
            }
        }
        /* the block's table: warp w's chunks after those of warps 0 .. w - 1. Good offsets give
         * a warp at most 32 (its slots); bad ones (segments whose slots overlap, around one
         * that ends before it starts) may give more, which are dropped: every result is then NaN
         * (segments_done) and the table stays within its bounds. */
        unsigned int cnt = (unsigned int)(jhi - jlo), incl = cnt;
#pragma unroll
        for (int d = 1; d < 32; d *= 2) {
            const unsigned int u = warp.shfl_up(incl, d);
            if (lane >= d) incl += u;
        }
        const unsigned int excl = incl - cnt;
        cnt = excl >= 32 ? 0 : cnt < 32 - excl ? cnt : 32 - excl;
        jhi = jlo + cnt;
        if (lane == 31) counts[w] = incl < 32 ? incl : 32;
        block.sync();
        unsigned int at = excl, total = 0;
#pragma unroll
        for (int k = 0; k < kWarpsPerBlock; k++) {
            const unsigned int u = counts[k];
            total += u;
            at += k < w ? u : 0;
        }
        for (uint64_t j = jlo; j < jhi; j++, at++) {
            const uint64_t base = (uint64_t)start + j * C, rest = n - j * C;
            const int m = rest < C ? (int)rest : (int)C;
            const bool st = seg_streams<In>(R.x, R.n, base, m) &&
                            (LF != Leaf::kProduct || seg_streams<In>(R.y, R.n, base, m));
            tab[at] = {base, t, n, (unsigned int)j, st ? m : -m};
        }
        block.sync();
        if ((unsigned int)w < total)
            stream_chunks<Ld, LF, kStream>(warp, A, (uint64_t)w, total, kWarpsPerBlock, emit,
                                           NoHook(), map);
        block.sync(); /* the table is read before the next window's */
    }
    /* after the stream, so that its first loads wait for nothing else (float32 segments of
     * 1..30,000: 76.3 us with the check first, 74.3 after; docs/perf-log run 278) */
    check_offsets<kWarpsPerBlock>(warp, R);
    segments_done<kWarpsPerBlock>(warp, R);
}

/* The launches of segments of CR_TUNE_SEG_STREAM_LONG chunks or more on average where
 * kSegStream (*launched; else nothing): segments_stream_kernel, then level 2 by the hand-off
 * where the input fits in L2, else by seg_partials_kernel. */
template <typename In, Leaf LF>
cudaError_t launch_segments_stream(const cr_gpu_call *c, const cr_gpu_shape_call *s, Rows &R,
                                   bool *launched)
{
    using Acc = typename In::Acc;
    *launched = false;
    if constexpr (kSegStream<In, LF>) {
        if (s->n / (s->nseg + 1) < Shape<In>::kChunk * CR_TUNE_SEG_STREAM_LONG) return cudaSuccess;
        *launched = true;
        R.handoff = s->n * In::kBytes * c->plan->inputs <= c->l2_bytes;
        const int blocks =
            grid_blocks((R.slots + kWarpsPerBlock - 1) / kWarpsPerBlock, c->sm_count,
                        Layout<Acc>::kMinBlocks * 8 / kWarpsPerBlock, c->forced_blocks, INT32_MAX);
        if (R.handoff)
            segments_stream_kernel<In, LF, false><<<blocks, kThreads, 0, c->stream>>>(R);
        else
            segments_stream_kernel<In, LF, true><<<blocks, kThreads, 0, c->stream>>>(R);
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess && !R.handoff && R.rows)
            e = launch_dependent(c->cc_major, seg_partials_kernel<Acc>,
                                 (int)((R.rows + kThreads - 1) / kThreads), kThreads, c->stream, R);
        return e;
    }
    return cudaSuccess;
}

/* A block a row: rows of 1 to 4 whole chunks (len a multiple of C, aligned) in a launch of one
 * wave of blocks at most (CR_TUNE_ROW_BLOCK). Such a launch is a few microseconds of reading in
 * which a warp's chunk is a chain of dependent steps (its batches, the lane tree, the hand-off's
 * ticket, the row's level 2 through L2, the final rule) and most warp slots of the GPU are
 * idle. Here the block's eight warps split the row: G = 8, 4 or 2 warps a chunk (cpr 1, 2,
 * 3-4), warp g of a chunk taking rows g * kRows / G .. of each half (a subtree of the row tree,
 * all its loads at once), the G subtrees added pairwise in warp order in shared memory (the row
 * tree's top levels), then the chunk's first warp runs the lane tree (finish_chunk); the row's
 * level 2 is the chunk tree of its cpr partials read from shared memory, then the final rule.
 * No ticket, no fence, no partial through global memory. NORM2 takes the medium pass so, and a
 * chunk with an element of another class is read again by its first warp for the three
 * classes, as everywhere else. Rows beyond the grid (a forced grid) are taken in turn. */
constexpr int kRowBlocks = 2; /* blocks an SM: a wave's worth of rows at most */
template <typename In, Leaf LF>
__global__ void __launch_bounds__(kThreads, kRowBlocks)
    row_block_kernel(const __grid_constant__ Rows R)
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    using SP = FromShared<typename AccIn<Acc>::Plain>; /* the row's partials, in shared memory */
    constexpr int K = kLeaves<LF>;
    constexpr Leaf L1 = LF == Leaf::kNorm2 ? Leaf::kMedium : LF; /* NORM2: the medium pass */
    constexpr int kR8 = S::kRows / 8;                             /* rows a warp at G = 8 */
    static_assert(kWarpsPerBlock == 8, "eight warps: 8, 4 or 2 a chunk");
    __shared__ RowVals<In, L1> sub[kWarpsPerBlock][32];
    __shared__ int other[kWarpsPerBlock]; /* NORM2: the warp's class test (leaves.cuh's Ext) */
    __shared__ Acc part[3][4];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int w = warp.meta_group_rank(), t = warp.thread_rank();
    const int cpr = (int)R.cpr, G = cpr == 1 ? 8 : cpr == 2 ? 4 : 2;
    const int j = w / G, g = w % G; /* chunk j of the row, part g of it */
    const int half = t / S::kThreadsPerRow, lane0 = (t % S::kThreadsPerRow) * In::kVec;
    const int r0 = half * S::kRows + g * (S::kRows / G);
    const Args<In> A = {R.x, R.y, R.rows * R.len};
    for (uint64_t r = blockIdx.x; r < R.rows; r += gridDim.x) {
        const uint64_t c = r * (uint64_t)cpr + (uint64_t)j, base = c * S::kChunk;
        if (j < cpr) {
            Ext ext;
            sub[w][t] = G == 8   ? rows_span<In, L1, false, kR8>(A, base, r0, lane0, ext)
                        : G == 4 ? rows_span<In, L1, false, 2 * kR8>(A, base, r0, lane0, ext)
                                 : rows_span<In, L1, false, 4 * kR8>(A, base, r0, lane0, ext);
            if constexpr (LF == Leaf::kNorm2) other[w] = warp.any(In::ext_other(ext));
        }
        block.sync();
        if (j < cpr && g == 0) {
            /* the G subtrees, pairwise: (s0 + s1), + (s2 + s3), + ((s4 + s5) + (s6 + s7)) */
            RowVals<In, L1> s = sub[w][t];
            s = add(s, sub[w + 1][t]);
            if (G > 2) s = add(s, add(sub[w + 2][t], sub[w + 3][t]));
            if (G > 4)
                s = add(s, add(add(sub[w + 4][t], sub[w + 5][t]),
                               add(sub[w + 6][t], sub[w + 7][t])));
            Acc m[kOut<L1>], v[K];
            finish_chunk<In, L1>(warp, s, Ext(), m); /* (NORM2: the warps' tests below) */
            if constexpr (LF == Leaf::kNorm2) {
                int any = 0;
                for (int k = 0; k < G; k++) any |= other[w + k];
                if (!any) { /* uniform across the warp */
                    v[0] = v[2] = Acc(0);
                    v[1] = m[0];
                } else {
                    norm2_full_classes(warp, A, base, v);
                }
            } else {
                v[0] = m[0];
            }
            if (cpr == 1) {
                if (t == 0) put_result(R.F, R.nfin, v, R.out + r * R.rsize);
            } else if (t == 0) {
#pragma unroll
                for (int k = 0; k < K; k++) part[k][j] = v[k];
            }
        }
        block.sync(); /* the partials stored; sub and other free for the next row */
        if (cpr > 1 && w == 0) { /* level 2: the chunk tree of the partials, the final rule */
            Acc v[K];
#pragma unroll
            for (int k = 0; k < K; k++) {
                const Args<SP> P = {part[k], nullptr, (uint64_t)cpr};
                Acc q[1];
                chunk_strided<SP, Leaf::kWiden>(warp, P, 0, cpr, q);
                v[k] = q[0];
            }
            if (t == 0) put_result(R.F, R.nfin, v, R.out + r * R.rsize);
        }
    }
}

/* ---- Columns ------------------------------------------------------------------------------ */

struct Cols {
    const char *x, *y;              /* level 1: the input; above: NULL (part[] is the input) */
    const void *in[3];              /* above level 1: each class's partials */
    uint64_t outer, len, inner;     /* the columns of this level */
    uint64_t cpr, groups, jobs;     /* chunks per column, groups of 32 V columns, jobs (chunk x
                                       group) */
    uint64_t n;                     /* the columns' length at level 1, for the final rule */
    void *part[3];                  /* this level's partials, (outer, cpr, inner), if cpr > 1 */
    char *out;
    size_t rsize;
    Final F;
};

/* CR_TUNE_COL_PAD 1: the column walk's padding by predicated loads of -0.0 (column_lanes); 0:
 * by a branch around the load and its leaf, as the walk had it before. */
#ifndef CR_TUNE_COL_PAD
#define CR_TUNE_COL_PAD 1
#endif

/* Element e of a column (V = 1), or elements e and e + 1 of two adjacent columns of 16-bit input
 * by one 4-byte load (V = 2: e even, the array 4-byte aligned), widened; pad instead where !ok
 * (a value the input type holds exactly). A select, not a branch: the load is predicated and
 * its register holds the pad otherwise, so that what consumes it need not be predicated too. */
template <typename In, int V>
__device__ __forceinline__ void column_load(const char *p, uint64_t e, bool ok,
                                            typename In::Acc pad, typename In::Acc (&a)[V])
{
    if constexpr (In::kBytes > 2) {
        static_assert(V == 1, "pairs of 16-bit elements only");
        a[0] = ok ? In::at(p, e) : pad;
    } else if constexpr (V == 1) {
        const unsigned short *q = reinterpret_cast<const unsigned short *>(p) + e;
        const unsigned int h = ok ? (unsigned int)__ldg(q) : In::narrow(pad);
        a[0] = In::widen(h);
    } else {
        static_assert(V == 2, "pairs of 16-bit elements");
        const unsigned int w = ok ? __ldg(reinterpret_cast<const unsigned int *>(p) + e / 2)
                                  : In::narrow(pad) * 0x10001u;
        a[0] = In::widen(w & 0xffffu); /* little-endian: the lower address is the low half */
        a[1] = In::widen(w >> 16);
    }
}

/* The pairwise tree of t[0 .. N) (N a power of two), for each of its KV trees, into t[0]. */
template <int N, int KV, typename Acc>
__device__ __forceinline__ void pairwise_rows(Acc (&t)[N][KV])
{
#pragma unroll
    for (int w = 1; w < N; w *= 2)
#pragma unroll
        for (int i = 0; i < N; i += 2 * w)
#pragma unroll
            for (int k = 0; k < KV; k++) t[i][k] = t[i][k] + t[i + w][k];
}

/* The subtree of NL lanes, l0 .. l0 + NL - 1, of one chunk of V adjacent columns (m valid
 * elements, element i of column c at p[e0 + c + i * stride]), serially by one thread: lane by
 * lane, the 32 rows of a lane as one pairwise tree, then the lane sums merged on a stack as the
 * perfect tree of the NL lanes (a lane sum enters at the lowest free level; lane l completes
 * level b when bit b of l is 1). NL = W gives the chunk tree. out[c * K + k]: column c's tree k.
 * kMedium (NORM2's medium pass) folds every element into ext too. RB < 32 (m <= RB * W: rows RB
 * and up are padding): a lane's tree is that of its first RB rows, every level above adding a
 * subtree of padding alone, which is the identity (-0.0; +0.0 beside the squares' data, see
 * leaves below), so that a step takes 32 / RB times the lanes and as many loads. */
template <typename In, Leaf LF, int NL, int V = 1, int RB = CR_ROWS>
__device__ __forceinline__ void column_lanes(const char *x, const char *y, uint64_t e0,
                                             uint64_t stride, int m, int l0,
                                             typename In::Acc (&out)[V * kLeaves<LF>], Ext &ext)
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>, KV = K * V;
    constexpr int kLog = NL == 128 ? 7 : NL == 64 ? 6 : NL == 32 ? 5 : NL == 16 ? 4 : 3;
    static_assert(NL == 1 << kLog && NL <= S::kLanes, "a power of two of the chunk's lanes");
    static_assert(V == 1 || K == 1, "pairs of columns for one tree each");
    /* The leaves of element i of the V columns into t[0 .. KV); where i >= m (padding), those
     * of padding. With CR_TUNE_COL_PAD, past m the loads give -0.0 (and 1.0 for DOT's y) and
     * the leaves are made of them unconditionally: the widening, -0.0 and -0.0 * 1.0, are
     * -0.0, the padding's own leaf; a square gives +0.0, which changes no bit of a tree
     * holding one element or more (the square of an element is never -0.0, so a subtree
     * holding one is never -0.0 either, and x + +0.0 == x for every x but -0.0) and is
     * neutral to NORM2's class test, as zeros are. Every tree here holds an element: m >= 1,
     * and a warp whose lanes hold none returns before the loads. Predicated on i < m
     * instead, ptxas issued each multiply right after its load, six or seven loads in flight
     * per thread where the sums had 64 (float32 SUMSQ of (65536, 4096) along axis 0: 73% of
     * the read against SUM's 94%, and 94% padded: docs/perf-log runs 110-111). NORM2's three
     * classes keep the branch, and so do the plain sums of 4- and 8-byte input, whose loads
     * ptxas issued at once either way (float64 SUM 1 point of the read slower padded). */
    constexpr bool kPad =
        CR_TUNE_COL_PAD && LF != Leaf::kNorm2 && (LF != Leaf::kWiden || In::kBytes == 2);
    const auto leaves = [&](int i, Acc *t) {
        const uint64_t e = e0 + (uint64_t)i * stride;
        const bool ok = !kPad || i < m;
        Acc a[V], b[V];
        column_load<In, V>(x, e, ok, Acc(-0.0), a);
        if constexpr (LF == Leaf::kProduct) column_load<In, V>(y, e, ok, Acc(1), b);
#pragma unroll
        for (int c = 0; c < V; c++) {
            if constexpr (LF == Leaf::kMedium) strided_ext(ext, a[c]);
            make_leaf<LF>(a[c], LF == Leaf::kProduct ? b[c] : a[c], t + c * K);
        }
    };
    Acc stack[kLog][KV];
#pragma unroll
    for (int b = 0; b < kLog; b++)
#pragma unroll
        for (int k = 0; k < KV; k++) stack[b][k] = Acc(0);
    /* A chunk of m < W elements (columns of partials, or a short column) has data in lanes
     * 0 .. m-1 of row 0 only: of these NL lanes, the first d = m - l0; their tree is that of
     * the first P lanes, P the power of two at or above d (the lanes past them are padding,
     * -0.0, which every level above adds as the identity), which sits on the stack at level
     * log2(P) once lane P-1 is in; with no data, the padding's tree, -0.0. */
    int lanes = NL, level = kLog;
    if (m < S::kLanes) {
        const int d = m - l0;
        if (d <= 0) {
#pragma unroll
            for (int k = 0; k < KV; k++) out[k] = Acc(-0.0);
            return;
        }
        if (d < NL)
            for (lanes = 1, level = 0; lanes < d; lanes *= 2) level++;
    }
    /* At most kFew elements, all in these lanes (columns of partials, above all): every load at
     * once, then the pairwise tree of kFew lanes (those past m padding, as above). Lane by lane
     * below, with the stack, they were a chain of dependent steps: 25.7 us for the level above
     * of (2^16, 4096) float32 along axis 0 (4096 columns of 16 partials; H100, docs/perf-log
     * run 97). */
    constexpr int kFew = NL < 32 ? NL : 32;
    if constexpr (K == 1) {
        if (m <= kFew && l0 == 0) {
            Acc t[kFew][KV];
#pragma unroll
            for (int i = 0; i < kFew; i++) {
#pragma unroll
                for (int k = 0; k < KV; k++) t[i][k] = Acc(-0.0);
                if (kPad || i < m) leaves(i, t[i]);
            }
            pairwise_rows(t);
#pragma unroll
            for (int k = 0; k < KV; k++) out[k] = t[0][k];
            return;
        }
    }
    /* Two lanes per step for one tree of one column: 64 loads in flight per thread; with
     * RB < CR_ROWS rows a lane, CR_ROWS / RB times the lanes. */
    static_assert(RB >= 1 && RB <= CR_ROWS && (RB & (RB - 1)) == 0, "a power of two of rows");
    constexpr int kStep = (KV == 1 ? 2 : 1) * (CR_ROWS / RB);
#pragma unroll kStep
    for (int l = 0; l < lanes; l++) {
        Acc t[RB][KV];
#pragma unroll
        for (int r = 0; r < RB; r++) {
            const int i = r * S::kLanes + l0 + l;
            if (kPad || i < m) {
                leaves(i, t[r]);
            } else {
#pragma unroll
                for (int k = 0; k < KV; k++) t[r][k] = Acc(-0.0);
            }
        }
        pairwise_rows(t);
        bool placed = false;
#pragma unroll
        for (int b = 0; b < kLog; b++) {
            if (!placed) {
                if ((l >> b) & 1) {
#pragma unroll
                    for (int k = 0; k < KV; k++) t[0][k] = stack[b][k] + t[0][k];
                } else {
#pragma unroll
                    for (int k = 0; k < KV; k++) stack[b][k] = t[0][k];
                    placed = true;
                }
            }
        }
        if (!placed) /* the last lane: the whole tree */
#pragma unroll
            for (int k = 0; k < KV; k++) out[k] = t[0][k];
    }
    if (lanes < NL)
#pragma unroll
        for (int b = 0; b < kLog; b++)
            if (b == level)
#pragma unroll
                for (int k = 0; k < KV; k++) out[k] = stack[b][k];
}

/* The warps that share one level-1 job (a chunk of 32 adjacent columns), each walking W / Q of
 * its lanes; their subtrees meet in shared memory for the top levels of the lane tree. With one
 * warp per job, both H100 column shapes of the benchmark made 2048 warps, one wave of 15-16 per
 * SM, each walking 4096 elements in turn (docs/perf-log runs 96-99, H100):
 *  - CR_TUNE_COL_SPLIT (4): 4- and 8-byte input when the jobs fill a wave (kColWave warps an
 *    SM) and the columns are not short (CR_TUNE_COL_SHORT): 1-2% faster than 8 on the (65536,
 *    4096) and (4096, 65536) float32 sums, level on float64; since the padded loads
 *    (CR_TUNE_COL_PAD), float64 SUMSQ and NORM2 of (65536, 4096) 1-1.5 points of the read
 *    faster, float32 DOT and NORM2 1.5;
 *  - CR_TUNE_COL_SPLIT_MORE (8): 16-bit input, whose walk keeps fewer bytes in flight
 *    (bfloat16 SUM 1.5 points faster than at 4), problems too small to fill a wave ((2048,
 *    4096) float32 39 to 21 us), and short columns. */
#ifndef CR_TUNE_COL_SPLIT
#define CR_TUNE_COL_SPLIT 4
#endif
#ifndef CR_TUNE_COL_SPLIT_MORE
#define CR_TUNE_COL_SPLIT_MORE 8
#endif
constexpr uint64_t kColWave = 24; /* warps an SM: 3 blocks of 8 (CR_TUNE_COL_SUM_BLOCKS) */

/* The jobs are (outer index, chunk, group of 32 V columns), adjacent groups of the same chunk
 * rows next to each other (so that a block reads runs of whole rows); each takes Q warps, a
 * block kWarpsPerBlock / Q jobs at a time. Level 1 (KA == 0: leaves LF of x, y) or a level
 * above (KA arrays of partials, identity leaves). V = 2 (16-bit input, inner even, the arrays
 * 4-byte aligned): a thread takes two adjacent columns, by 4-byte loads, so that a warp's load
 * is 128 bytes as for float32. */
/* CR_TUNE_COL_NORM2_BLOCKS: blocks per SM NORM2's level-1 column kernel is compiled for (float32
 * and 16-bit input; float64's: 1). Its three-class walk, kept for the columns with an element
 * outside the medium class, takes 144 registers unbounded (float32): one block an SM, for the
 * medium pass too. H100, float32 NORM2 of (65536, 4096) along axis 0 (docs/perf-log run 103):
 * 1 block 909 us, 2 blocks 560 us, 3 blocks 578 us; float64's medium pass holds 64 doubles in
 * flight and measured slower bounded: 989 us at 1 block, 1361 at 3. */
#ifndef CR_TUNE_COL_NORM2_BLOCKS
#define CR_TUNE_COL_NORM2_BLOCKS 2
#endif
/* CR_TUNE_COL_SUM_BLOCKS: blocks per SM the long columns' level-1 kernel of the sums and the
 * squares of 4- and 8-byte input (four warps a job, 32 rows a lane) is compiled for. Unbounded,
 * ptxas gave it 114-118 registers, two blocks an SM; bounded to 3 (float64 SUM's spills 96
 * bytes), H100, along axis 0 (docs/perf-log runs 122-123): float32 (65536, 4096) SUM 369.5 to
 * 362.6 us (96.4% of the read), (4096, 65536) 368.0 to 359.2 us (97.2%), float64 96.4% to 98.4%
 * and 95.2% to 97.8%, SUMSQ 96-99.7%. The short columns' kernels came out slower bounded (up to
 * 14%) and are not. The others but NORM2's are unbounded: the pairs (V = 2) take 78-128
 * registers since the padded loads (ptxas at 3 blocks an SM spilled 176-192 bytes of them
 * before). */
#ifndef CR_TUNE_COL_SUM_BLOCKS
#define CR_TUNE_COL_SUM_BLOCKS 3
#endif
template <typename In, Leaf LF, int KA, int Q, int RB>
constexpr int kColBlocks =
    LF == Leaf::kNorm2 && KA == 0 && sizeof(typename In::Acc) == 4 ? CR_TUNE_COL_NORM2_BLOCKS
    : (LF == Leaf::kWiden || LF == Leaf::kSquare) && KA == 0 && In::kBytes >= 4 &&
            Q == CR_TUNE_COL_SPLIT && RB == CR_ROWS
        ? CR_TUNE_COL_SUM_BLOCKS
        : 1;

template <typename In, Leaf LF, int KA, int Q, int V = 1, int RB = CR_ROWS>
__global__ void __launch_bounds__(kThreads, kColBlocks<In, LF, KA, Q, RB>)
    columns_kernel(const __grid_constant__ Cols P)
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    constexpr int K = KA ? KA : kLeaves<LF>, GPB = kWarpsPerBlock / Q, NL = S::kLanes / Q;
    static_assert(GPB * Q == kWarpsPerBlock, "Q divides the block's warps");
    static_assert(V == 1 || KA == 0, "the levels above read partials, one column a thread");
    if constexpr (KA == 0)
        let_dependents_launch(); /* the level above (grid.cuh) */
    else
        wait_prior_grid(); /* level 1's partials (launch_dependent) */
    __shared__ Acc sub[Q > 1 ? kWarpsPerBlock : 1][V * K][32];
    const int lane = threadIdx.x & 31, wid = threadIdx.x / 32, q = wid % Q;
    const uint64_t steps = (P.jobs + GPB - 1) / GPB;
    for (uint64_t step = blockIdx.x; step < steps; step += gridDim.x) {
        const uint64_t job = step * GPB + (uint64_t)(wid / Q);
        const uint64_t cb = job % P.groups, rest = job / P.groups;
        const uint64_t i = (cb * 32 + lane) * V, j = rest % P.cpr, o = rest / P.cpr;
        const bool live = job < P.jobs && i < P.inner;
        const uint64_t first = j * S::kChunk;
        const int m = (int)(P.len - first < S::kChunk ? P.len - first : S::kChunk);
        const uint64_t e0 = (o * P.len + first) * P.inner + i;
        Acc v[V][3] = {}; /* column i + c's trees */
        if (live) {
            Ext ext;
            if constexpr (KA == 0 && LF == Leaf::kNorm2) {
                /* The medium pass first (the squares and the class test), the three classes
                 * only where these lanes of the thread's columns hold an element of another
                 * class. Each warp of the job decides for its own lanes: a subtree of medium
                 * elements has +0.0 for the big and small trees either way, and one of padding
                 * alone (-0.0 by the three classes) meets warp 0's subtree, which holds data,
                 * whose +0.0 or positive sums absorb either zero. */
                Acc u[V];
                column_lanes<In, Leaf::kMedium, NL, V, RB>(P.x, nullptr, e0, P.inner, m, q * NL,
                                                           u, ext);
                if (strided_other<Acc>(ext)) {
#pragma unroll
                    for (int c = 0; c < V; c++)
                        column_lanes<In, LF, NL, 1, RB>(P.x, nullptr, e0 + c, P.inner, m, q * NL,
                                                        v[c], ext);
                } else {
#pragma unroll
                    for (int c = 0; c < V; c++) v[c][1] = u[c]; /* v[c][0], v[c][2]: +0.0 */
                }
            } else if constexpr (KA == 0) {
                Acc u[V * K];
                column_lanes<In, LF, NL, V, RB>(P.x, P.y, e0, P.inner, m, q * NL, u, ext);
#pragma unroll
                for (int c = 0; c < V; c++)
#pragma unroll
                    for (int k = 0; k < K; k++) v[c][k] = u[c * K + k];
            } else {
#pragma unroll
                for (int k = 0; k < KA; k++) {
                    Acc u[1];
                    column_lanes<In, Leaf::kWiden, NL>(static_cast<const char *>(P.in[k]),
                                                       nullptr, e0, P.inner, m, q * NL, u, ext);
                    v[0][k] = u[0];
                }
            }
        }
        if constexpr (Q > 1) { /* the lane tree's top log2(Q) levels, by the group's warp 0 */
#pragma unroll
            for (int c = 0; c < V; c++)
#pragma unroll
                for (int k = 0; k < K; k++) sub[wid][c * K + k][lane] = v[c][k];
            __syncthreads();
            if (q == 0) {
#pragma unroll
                for (int c = 0; c < V; c++)
#pragma unroll
                    for (int k = 0; k < K; k++) {
                        Acc s[Q];
#pragma unroll
                        for (int a = 0; a < Q; a++) s[a] = sub[wid + a][c * K + k][lane];
#pragma unroll
                        for (int w = 1; w < Q; w *= 2)
#pragma unroll
                            for (int a = 0; a < Q; a += 2 * w) s[a] = s[a] + s[a + w];
                        v[c][k] = s[0];
                    }
            }
            __syncthreads(); /* sub is free for the next job */
        }
        if (!live || q != 0) continue;
#pragma unroll
        for (int c = 0; c < V; c++) {
            if (P.len == 0) v[c][0] = v[c][1] = v[c][2] = Acc(0); /* the sum of nothing */
            if (P.cpr == 1) {
                write_final(P.F, P.n, (double)v[c][0], (double)v[c][1], (double)v[c][2],
                            P.out + (o * P.inner + i + c) * P.rsize);
            } else {
                const uint64_t at = (o * P.cpr + j) * P.inner + i + c;
#pragma unroll
                for (int k = 0; k < K; k++) static_cast<Acc *>(P.part[k])[at] = v[c][k];
            }
        }
    }
}

/* ---- Host side ---------------------------------------------------------------------------- */

int blocks_for(const cr_gpu_call *c, uint64_t warps)
{
    return grid_blocks((warps + kWarpsPerBlock - 1) / kWarpsPerBlock, c->sm_count, 8,
                       c->forced_blocks, INT32_MAX);
}

Final final_of(const cr_plan *p)
{
    return Final{1, (int)p->op, (int)p->dtype, p->narrow};
}

/* Rows of at most W elements: G threads per row, the fewest whose kVec lanes each cover it.
 * dependent: level 2 of the kernel before it (launch_dependent). */
template <typename In, Leaf LF>
cudaError_t launch_narrow(const cr_gpu_call *c, const Rows &R, bool dependent = false)
{
    const int gl = group_log2<In>(R.len);
    const uint64_t warps = (R.rows + (32 >> gl) * kGroups - 1) / ((32 >> gl) * kGroups);
    if (dependent)
        return launch_dependent(c->cc_major, narrow_kernel<In, LF>, blocks_for(c, warps),
                                kThreads, c->stream, R, gl);
    narrow_kernel<In, LF><<<blocks_for(c, warps), kThreads, 0, c->stream>>>(R, gl);
    return cudaGetLastError();
}

template <typename In, Leaf LF>
cudaError_t launch_rows(const cr_gpu_call *c, const cr_gpu_shape_call *s)
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>;
    const cr_plan *p = c->plan;
    Rows R = {};
    R.x = static_cast<const char *>(c->x);
    R.y = static_cast<const char *>(c->y);
    R.out = static_cast<char *>(c->out);
    R.rsize = p->result_size;
    R.aligned = (uintptr_t)c->x % 16 == 0 && (p->inputs < 2 || (uintptr_t)c->y % 16 == 0);
    R.F = final_of(p);
    for (int k = 0; k < 3; k++) R.part[k] = static_cast<char *>(s->partials) + k * s->class_bytes;
    if (s->offsets) {
        R.rows = s->nseg;
        R.offsets = s->offsets;
        R.n = s->n;
        R.epoch = s->epoch;
        R.slots = s->n / S::kChunk + s->nseg + 1;
        R.grab_run = s->n / (s->nseg + 1) < S::kChunk / CR_TUNE_SEG_SHORT ? CR_TUNE_SEG_GRAB_SHORT
                                                                         : CR_TUNE_SEG_GRAB;
        R.grab = reinterpret_cast<unsigned long long *>(s->grab);
        R.tickets = s->tickets;
        R.handoff = LF != Leaf::kNorm2 && CR_TUNE_SEG_HANDOFF; /* see the top of the file */
        bool streamed = false;
        cudaError_t e = launch_segments_stream<In, LF>(c, s, R, &streamed);
        if (e != cudaSuccess || streamed) return e;
        bool staged = false;
        if constexpr (kSegStaged<In, LF>) {
            if (s->n / (s->nseg + 1) >= S::kChunk / CR_TUNE_SEG_STAGED_SHORT)
                e = launch_segments_staged<In, LF>(c, R, &staged);
            if (e != cudaSuccess) return e;
        }
        if (!staged) {
            segments_kernel<In, LF><<<grid_blocks((R.slots + kWarpsPerBlock - 1) / kWarpsPerBlock,
                                                   c->sm_count, kSegBlocks<LF>, c->forced_blocks,
                                                   INT32_MAX),
                                       kThreads, 0, c->stream>>>(R);
            e = cudaGetLastError();
        }
        if (e == cudaSuccess && !R.handoff && R.rows)
            e = launch_dependent(c->cc_major, partials_kernel<Acc, K, true>,
                                 blocks_for(c, R.rows), kThreads, c->stream, R);
        return e;
    }
    R.rows = s->outer;
    R.len = R.nfin = s->len;
    if (R.len <= (uint64_t)S::kLanes) return launch_narrow<In, LF>(c, R); /* one chunk row */
    if (R.len < S::kChunk) { /* one chunk, not full */
        const bool vec = R.aligned && (R.len * In::kBytes) % 16 == 0;
        const uint64_t used = (R.len + S::kLanes - 1) / S::kLanes;
        const int u = LF == Leaf::kProduct ? 8 : 16; /* rows per warp step times RB */
        const uint64_t side = kRowsSide<In>, steps = (R.rows + side - 1) / side;
        if (vec && used <= 2)
            few_kernel<In, LF, 2><<<blocks_for(c, (steps * 2 + u - 1) / u), kThreads, 0,
                                    c->stream>>>(R);
        else if (vec && used <= 4)
            few_kernel<In, LF, 4><<<blocks_for(c, (steps * 4 + u - 1) / u), kThreads, 0,
                                    c->stream>>>(R);
        else if (vec && used <= 8)
            few_kernel<In, LF, 8><<<blocks_for(c, (steps * 8 + u - 1) / u), kThreads, 0,
                                    c->stream>>>(R);
        else if (side == 2 && used <= (uint64_t)S::kRows)
            short_kernel<In, LF, kRowsSide<In> == 2>
                <<<blocks_for(c, steps), kThreads, 0, c->stream>>>(R);
        else
            short_kernel<In, LF, false><<<blocks_for(c, R.rows), kThreads, 0, c->stream>>>(R);
        return cudaGetLastError();
    }
    R.cpr = (R.len + S::kChunk - 1) / S::kChunk;
    R.slots = R.rows * R.cpr;
    R.tickets = s->tickets;
    R.handoff = K == 1 || CR_TUNE_NORM2_HANDOFF;
    if (CR_TUNE_ROW_BLOCK && R.aligned && R.len % S::kChunk == 0 && R.cpr <= 4 &&
        R.rows <= (uint64_t)c->sm_count * kRowBlocks * CR_TUNE_ROW_BLOCK) {
        row_block_kernel<In, LF><<<grid_blocks(R.rows, c->sm_count, kRowBlocks, c->forced_blocks,
                                               INT32_MAX),
                                   kThreads, 0, c->stream>>>(R);
        return cudaGetLastError();
    }
    const bool flat = R.aligned && R.len % S::kChunk == 0;
    /* Rows not of whole, aligned chunks stream only past a wave of warps a chunk: in smaller
     * launches a warp a chunk (chunks_kernel) was faster (64 rows of 40001: bfloat16 SUM 8.7
     * against 11.1 us, float32 10.2 against 13.3; an H200, docs/perf-log run 256). A forced
     * grid (coopreduce_set_grid_blocks) streams them whatever their number, so that tests reach
     * the stream's chunk map on small shapes. */
    const bool streamed =
        flat || c->forced_blocks > 0 || R.slots > (uint64_t)c->sm_count * 2 * kWarpsPerBlock;
    if (streamed) {
        const uint64_t per_sm = Layout<Acc>::kMinBlocks * 8 / kWarpsPerBlock;
        /* (CR_TUNE_SPREAD, above: a small launch spread a chunk a block) */
        const uint64_t want = CR_TUNE_SPREAD && R.slots <= (uint64_t)c->sm_count * per_sm
                                  ? R.slots
                                  : (R.slots + kWarpsPerBlock - 1) / kWarpsPerBlock;
        const int blocks =
            grid_blocks(want, c->sm_count, (int)per_sm, c->forced_blocks, INT32_MAX);
        R.handoff =
            R.handoff && (uint64_t)R.slots * S::kChunk * In::kBytes * p->inputs <= c->l2_bytes;
        const bool whole16 = R.aligned && (R.len * In::kBytes) % 16 == 0;
        RowChunks<In> M = {R.x,      R.y,      R.rows,
                           R.len,    R.cpr,    R.len / S::kChunk,
                           kNoChunk, kNoChunk, 1.0 / (double)R.cpr,
                           R.aligned};
        if (!whole16 && R.rows) { /* the array's first and last full chunks (RowChunks) */
            if (!R.aligned) M.skip0 = 0;
            const uint64_t last = (R.rows - 1) * R.cpr + M.nf - 1;
            const uint64_t group = /* the last full chunk's last lane group, in bytes */
                ((R.rows - 1) * R.len + M.nf * S::kChunk - In::kVec) * In::kBytes;
            const uint64_t bytes = R.rows * R.len * In::kBytes;
            for (int k = 0; k < p->inputs; k++) {
                const uintptr_t a = (uintptr_t)(k ? c->y : c->x);
                if (((a + group) & ~(uintptr_t)15) + 32 > a + bytes) M.skip1 = last;
            }
        }
        const auto go = [&](auto kernel) { kernel<<<blocks, kThreads, 0, c->stream>>>(R, M); };
        const int map = flat      ? kMapFlat
                        : whole16 ? kMapRows
                        : R.len % S::kChunk == 0 ? kMapShiftedWhole
                                                 : kMapShifted;
        const auto pick = [&](auto stream) {
            constexpr bool kS = decltype(stream)::value;
            map == kMapFlat    ? go(stream_kernel<In, LF, kS, kMapFlat>)
            : map == kMapRows  ? go(stream_kernel<In, LF, kS, kMapRows>)
            : map == kMapShifted ? go(stream_kernel<In, LF, kS, kMapShifted>)
                                 : go(stream_kernel<In, LF, kS, kMapShiftedWhole>);
        };
        if (R.handoff)
            pick(std::false_type());
        else
            pick(std::true_type());
    }
    if (!streamed)
        chunks_kernel<In, LF><<<blocks_for(c, R.slots), kThreads, 0, c->stream>>>(R);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || R.cpr == 1 || R.handoff) return e;
    /* Level 2 of streamed rows: rows of cpr partials. At most W of them: narrow rows (several
     * rows to a warp; one class as narrow rows of their own); otherwise a warp per row. */
    using AI = typename AccIn<Acc>::Plain;
    if (K == 1 && R.cpr <= (uint64_t)Shape<AI>::kLanes) {
        Rows Q = R;
        Q.x = static_cast<const char *>(R.part[0]);
        Q.y = nullptr;
        Q.len = R.cpr;
        Q.aligned = 1;
        return launch_narrow<AI, Leaf::kWiden>(c, Q, true);
    }
    if (R.cpr <= (uint64_t)Shape<AI>::kLanes) {
        const int gl = group_log2<AI>(R.cpr);
        const uint64_t per_warp = (uint64_t)(32 >> gl);
        return launch_dependent(c->cc_major, narrow_partials_kernel<Acc, K>,
                                blocks_for(c, (R.rows + per_warp - 1) / per_warp), kThreads,
                                c->stream, R, gl);
    }
    return launch_dependent(c->cc_major, partials_kernel<Acc, K, false>, blocks_for(c, R.rows),
                            kThreads, c->stream, R);
}

/* One launch of columns_kernel: P.jobs jobs of Q warps each; a level above (KA > 0) as a
 * dependent launch of the level below. */
template <typename In, Leaf LF, int KA, int Q, int V = 1, int RB = CR_ROWS>
cudaError_t launch_cols(const cr_gpu_call *c, const Cols &P)
{
    if constexpr (KA > 0)
        return launch_dependent(c->cc_major, columns_kernel<In, LF, KA, Q, V>,
                                blocks_for(c, P.jobs * Q), kThreads, c->stream, P);
    columns_kernel<In, LF, KA, Q, V, RB>
        <<<blocks_for(c, P.jobs * Q), kThreads, 0, c->stream>>>(P);
    return cudaGetLastError();
}

/* CR_TUNE_COL_SHORT: level 1 of short columns, of at most 1, 4 or 16 chunk rows (len <= W, 4 W
 * or 16 W), walks that many rows a lane (columns_kernel's RB), so that a warp's step keeps as
 * many loads in flight as a full column's; 0: 32 rows a lane. Such columns have
 * one chunk, whose rows past the data are padding: 64 jobs of (2048, 4096) bfloat16 along axis
 * 0 took 8 valid rows of each lane, 16 loads a step of 2 lanes (H100, docs/perf-log runs
 * 113-114: (2048, 4096) float32 and bfloat16 1.1-1.8x faster with RB, (512, 8192) 1.1-4.3x,
 * (128, 65536) 1.3-6.5x). */
#ifndef CR_TUNE_COL_SHORT
#define CR_TUNE_COL_SHORT 1
#endif
template <typename In> bool short_columns(const Cols &P)
{
    return CR_TUNE_COL_SHORT && P.len <= 16 * Shape<In>::kLanes;
}
/* Level 1 of columns other than the long 4- and 8-byte ones of a full wave: eight warps a job,
 * RB rows a lane by the columns' length; a warp a job, all W lanes (no merge in shared memory),
 * for columns of one chunk row (len <= W) in at least 3 jobs an SM, each lane one row, so that a
 * step still takes 64 loads (H100, docs/perf-log run 115: (128, 65536) and (64, 65536) along
 * axis 0 2.4-6.2x faster than eight warps a job of 4 rows a lane, (100, 16384) float32 1.5x, in
 * 512 jobs; in 256 jobs, bfloat16, 0.94x, in 128, 0.7-0.9x), and for 4- and 8-byte columns of
 * up to 4 rows in at least 6 jobs an SM (run 118: float64 (128, 65536) 2.1-2.7x, float32
 * (256, 65536) 1.2x, in 1024-2048 jobs; float32 (384, 16384), 512 jobs, 0.64-0.81x; 16-bit
 * pairs, 8 lanes a step, 0.56-1.0x). */
template <typename In, Leaf LF, int V>
cudaError_t launch_rows_a_lane(const cr_gpu_call *c, const Cols &P)
{
    constexpr uint64_t W = Shape<In>::kLanes;
    const uint64_t sms = (uint64_t)c->sm_count;
    if (CR_TUNE_COL_SHORT && P.len <= W && P.jobs >= 3 * sms)
        return launch_cols<In, LF, 0, 1, V, 1>(c, P);
    if constexpr (In::kBytes >= 4)
        if (CR_TUNE_COL_SHORT && P.len <= 4 * W && P.jobs >= 6 * sms)
            return launch_cols<In, LF, 0, 1, V, 4>(c, P);
    if (CR_TUNE_COL_SHORT && P.len <= 4 * W)
        return launch_cols<In, LF, 0, CR_TUNE_COL_SPLIT_MORE, V, 4>(c, P);
    if (short_columns<In>(P)) return launch_cols<In, LF, 0, CR_TUNE_COL_SPLIT_MORE, V, 16>(c, P);
    return launch_cols<In, LF, 0, CR_TUNE_COL_SPLIT_MORE, V>(c, P);
}

/* CR_TUNE_COL_PAIRS: 16-bit columns two to a thread (columns_kernel's V = 2) where the layout
 * allows (1), or one (0) (H100, bfloat16 (65536, 4096) along axis 0, docs/perf-log run 103: SUM
 * 439 to 251-257 us, SUMSQ 430 to 254-256, DOT 1410 to 977). CR_TUNE_COL_PAIRS_NORM2: NORM2's
 * too (1), whose medium pass holds twice the values then: 1.7x slower with the loads predicated
 * on the column's end (run 103), 1.33x faster with them padded (docs/perf-log run 111: 59% to
 * 78.5% of the read). */
#ifndef CR_TUNE_COL_PAIRS
#define CR_TUNE_COL_PAIRS 1
#endif
#ifndef CR_TUNE_COL_PAIRS_NORM2
#define CR_TUNE_COL_PAIRS_NORM2 1
#endif
template <Leaf LF> constexpr bool kColPairs = LF != Leaf::kNorm2 || CR_TUNE_COL_PAIRS_NORM2;

template <typename In, Leaf LF>
cudaError_t launch_columns(const cr_gpu_call *c, const cr_gpu_shape_call *s)
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>;
    const cr_plan *p = c->plan;
    Cols P = {};
    P.x = static_cast<const char *>(c->x);
    P.y = static_cast<const char *>(c->y);
    P.outer = s->outer;
    P.len = s->len;
    P.inner = s->inner;
    P.n = s->len;
    P.cpr = P.len ? (P.len + S::kChunk - 1) / S::kChunk : 1;
    P.out = static_cast<char *>(c->out);
    P.rsize = p->result_size;
    P.F = final_of(p);
    for (int k = 0; k < 3; k++) P.part[k] = static_cast<char *>(s->partials) + k * s->class_bytes;
    constexpr bool kWide = In::kBytes >= 4;
    constexpr bool kPaired = In::kBytes == 2 && kColPairs<LF> && CR_TUNE_COL_PAIRS;
    const bool pairs = kPaired && P.inner % 2 == 0 && (uintptr_t)c->x % 4 == 0 &&
                       (p->inputs < 2 || (uintptr_t)c->y % 4 == 0);
    const uint64_t width = pairs ? 64 : 32; /* columns a job */
    P.groups = (P.inner + width - 1) / width;
    P.jobs = P.outer * P.groups * P.cpr;
    const bool fills = P.jobs * CR_TUNE_COL_SPLIT >= (uint64_t)c->sm_count * kColWave;
    if (!P.jobs) return cudaSuccess; /* outer or inner 0: no result to write */
    cudaError_t e;
    if (kWide && fills && !short_columns<In>(P))
        e = launch_cols<In, LF, 0, kWide ? CR_TUNE_COL_SPLIT : CR_TUNE_COL_SPLIT_MORE>(c, P);
    else if (pairs)
        e = launch_rows_a_lane<In, LF, kPaired ? 2 : 1>(c, P);
    else
        e = launch_rows_a_lane<In, LF, 1>(c, P);
    if (e != cudaSuccess || P.cpr == 1) return e;
    /* Levels above: the partials, (outer, cpr, inner), as columns of cpr elements, one to a
     * thread; one level holds every column whose length is at most C^2 (the host sends longer
     * ones elsewhere). */
    using AI = typename AccIn<Acc>::Plain;
    Cols Q = P;
    Q.x = Q.y = nullptr;
    for (int k = 0; k < 3; k++) Q.in[k] = P.part[k];
    Q.len = P.cpr;
    Q.cpr = (Q.len + Shape<AI>::kChunk - 1) / Shape<AI>::kChunk;
    if (Q.cpr != 1) return cudaErrorInvalidValue;
    Q.groups = (Q.inner + 31) / 32;
    Q.jobs = Q.outer * Q.groups;
    return launch_cols<AI, Leaf::kWiden, K, 1>(c, Q);
}

template <typename In, Leaf LF> cudaError_t launch(const cr_gpu_call *c, const cr_gpu_shape_call *s)
{
    return s->inner > 1 ? launch_columns<In, LF>(c, s) : launch_rows<In, LF>(c, s);
}

template <typename In> cudaError_t by_leaf(const cr_gpu_call *c, const cr_gpu_shape_call *s)
{
    if (c->plan->family == CR_FAMILY_CANONICAL) return launch<In, Leaf::kWiden>(c, s);
    switch (c->plan->leaf) {
    case CR_LEAF_VALUE: return launch<In, Leaf::kWiden>(c, s);
    case CR_LEAF_SQUARE: return launch<In, Leaf::kSquare>(c, s);
    case CR_LEAF_PRODUCT: return launch<In, Leaf::kProduct>(c, s);
    case CR_LEAF_NORM2: return launch<In, Leaf::kNorm2>(c, s);
    }
    return cudaErrorInvalidValue;
}

} // namespace

extern "C" cudaError_t cr_gpu_rows_launch(const cr_gpu_call *c, const cr_gpu_shape_call *s)
{
    switch (c->plan->dtype) {
    case COOPREDUCE_FLOAT32: return by_leaf<F32>(c, s);
    case COOPREDUCE_FLOAT64: return by_leaf<F64>(c, s);
    case COOPREDUCE_FLOAT16: return by_leaf<Half<false>>(c, s);
    case COOPREDUCE_BFLOAT16: return by_leaf<Half<true>>(c, s);
    default: return cudaErrorInvalidValue;
    }
}
