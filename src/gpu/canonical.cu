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
 *   time, one integer counter per group. After a barrier, one thread per block posts, for each
 *   group its range touches, the number of its chunks in it; the block that completes a group
 *   reduces it (one chunk of partials, read from L2, four warps each taking 8 rows) and
 *   climbs, one ticket per node above level 1. The warp that completes the top node writes the
 *   result. About one ticket per block per launch: no same-address atomic queue.
 * - No memory fences: partials are tagged. Every 8-byte word of a stored partial carries the
 *   launch's tag next to 32 bits of the value (see "Tagged partials" below), and the block that
 *   completes a group polls the group's words until each carries the tag. A fence before each
 *   ticket (release) and after the last one (acquire) cost about a quarter of the time at
 *   mid-size N (docs/PERF.md, run 16); the tags let the ticket overtake the partial's store.
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

extern "C" {
#include "internal.h"
}

namespace cg = cooperative_groups;

/* Tuning knobs, fixed by measurement (docs/PERF.md, scripts/tune.sh); none changes a bit of
 * the result, only who loads what when.
 *  CR_TUNE_INTERLEAVE 1: the warps of a block take the block's chunks round-robin, so the block
 *    streams one contiguous region (8 adjacent chunks at a time); 0: each warp a sub-range.
 *  CR_TUNE_LOAD: the load for inputs larger than L2, read once and streamed through:
 *    0: __ldg (read-only path); 1: __ldcs (evict-first); 2: __ldlu (last use). Inputs that fit
 *    in L2 always use __ldg: a last-use hint there makes L2 drop data a caller may read again
 *    (float64 2^22, 32 MB, back to back on an H100: 0.65x CUB with __ldlu, L2-resident CUB).
 * Measured 2026-11-22 on an H100 (scripts/tune.sh, docs/PERF.md), canonical time vs CUB at 2^28:
 *   per-warp sub-ranges 0.95x (f32) / 0.96x (f64); interleaved 0.98x / 0.99x; interleaved with
 *   __ldcs 0.98x / 0.99x; with __ldlu 0.99x / 1.00x (98.4% / 99.7% of the float4-read ceiling). */
#ifndef CR_TUNE_INTERLEAVE
#define CR_TUNE_INTERLEAVE 1
#endif
#ifndef CR_TUNE_LOAD
#define CR_TUNE_LOAD 2
#endif
/*  CR_TUNE_WARPS: warps per block of the main kernel (8 or 16; resident blocks scale down to
 *    keep the same register budget). 16 measured within noise of 8 (docs/PERF.md, run 5).
 *    A bulk L2 prefetch (cp.async.bulk.prefetch.L2) of each warp's next-but-one chunk was tried
 *    in the same run and removed: 0.63x CUB at 2^28, against 0.99x without. */
#ifndef CR_TUNE_WARPS
#define CR_TUNE_WARPS 8
#endif
/*  CR_TUNE_QUAD 1: when the chunks fit in one wave of the grid at two per block (mid-size N),
 *    four warps share a chunk, one 8-row batch each, so the chunk's data arrives in one round
 *    trip instead of two; the batch trees meet in shared memory. 0: one warp per chunk.
 *    Measured (docs/PERF.md, run 10): 62-76% of the float4-read ceiling from 2^17 to 2^21
 *    float32, against 48-58% with one warp per chunk. */
#ifndef CR_TUNE_QUAD
#define CR_TUNE_QUAD 1
#endif

namespace {

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

constexpr int kWarpsPerBlock = CR_TUNE_WARPS;
constexpr int kThreads = 32 * kWarpsPerBlock;

template <typename T> struct Layout;
/* Tuning: kMinBlocks is __launch_bounds__' minimum resident blocks per SM (256 threads each).
 * With the double-buffered stream (two batches of 8 rows in registers), nvcc 13.0 fits both
 * types in 128 registers at 2 blocks per SM (sm_80 and sm_90); at 3 the float32 kernel spills
 * 96 bytes in the hot loop. 16 warps per SM with 8-16 16-byte loads in flight per thread is
 * 64-128 KB per SM in flight, several times the ~20-30 KB that covers DRAM latency at H100/H200
 * bandwidth. */
template <> struct Layout<float> {
    static constexpr int kMinBlocks = 2;
    using Vec = float4;
    static constexpr int kVec = 4;              /* lanes per thread */
    static constexpr int kLanes = CR_LANES_F32; /* 128 */
    static constexpr uint64_t kChunk = CR_CHUNK_F32;
    static __device__ __forceinline__ float nan() { return __int_as_float(0x7fc00000); }
};
template <> struct Layout<double> {
    static constexpr int kMinBlocks = 2;
    using Vec = double2;
    static constexpr int kVec = 2;
    static constexpr int kLanes = CR_LANES_F64; /* 64 */
    static constexpr uint64_t kChunk = CR_CHUNK_F64;
    static __device__ __forceinline__ double nan() { return __longlong_as_double(0x7ff8000000000000ll); }
};

/* A thread's lanes of one row, as a small array the compiler keeps in registers. */
template <typename T> struct Lanes {
    T v[Layout<T>::kVec];
};

template <typename T>
__device__ __forceinline__ Lanes<T> add(const Lanes<T> &a, const Lanes<T> &b)
{
    Lanes<T> r;
#pragma unroll
    for (int j = 0; j < Layout<T>::kVec; j++) r.v[j] = a.v[j] + b.v[j];
    return r;
}

/* How a thread reads its lanes of row `r` of the chunk at `p` (`m` valid elements). */
enum class Load {
    kVector,         /* 16-byte loads through the read-only path */
    kVectorStream,   /* 16-byte loads of data larger than L2 (CR_TUNE_LOAD) */
    kScalar,         /* element loads: input aligned only to the element size */
    kGuarded,        /* element loads reading -0.0 past the end: ragged chunks */
    kGuardedShared   /* the same from shared memory */
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
        typename Lay::Vec q = L == Load::kVector ? __ldg(q_)
                            : load_stream_once(q_);
        if constexpr (Lay::kVec == 4) {
            out.v[0] = q.x; out.v[1] = q.y; out.v[2] = q.z; out.v[3] = q.w;
        } else {
            out.v[0] = q.x; out.v[1] = q.y;
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
template <typename T, Load L>
__device__ __forceinline__ Lanes<T> row_tree(const T *p, int t, int m)
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

template <typename T>
__device__ __forceinline__ T lane_tree(const cg::thread_block_tile<32> &warp, const Lanes<T> &s);

/* One chunk, reduced by one warp. Every thread of the warp returns the chunk's value. */
template <typename T, Load L>
__device__ __forceinline__ T warp_chunk(const cg::thread_block_tile<32> &warp, const T *p, int m)
{
    return lane_tree(warp, row_tree<T, L>(p, warp.thread_rank(), m));
}

/* The lane tree of a chunk whose lane sums the warp holds (VEC per thread). Every thread of the
 * warp returns the chunk's value. */
template <typename T>
__device__ __forceinline__ T lane_tree(const cg::thread_block_tile<32> &warp, const Lanes<T> &s)
{
    /* Lane levels inside the thread: adjacent pairs. */
    T v;
    if constexpr (Layout<T>::kVec == 4)
        v = (s.v[0] + s.v[1]) + (s.v[2] + s.v[3]);
    else
        v = s.v[0] + s.v[1];
    /* Lane levels across threads: thread t holds the node of lanes [VEC*t, VEC*t + VEC);
     * xor 1 pairs adjacent threads, xor 2 adjacent pairs of those, and so on. */
#pragma unroll
    for (int d = 1; d < 32; d *= 2) v += warp.shfl_xor(v, d);
    return v;
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
template <typename T>
__device__ __forceinline__ Lanes<T> batch_tree(const Batch<T> &b)
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
    return lane_tree(warp, stream_chunk<T, L>(A, B, p, static_cast<const T *>(nullptr),
                                              warp.thread_rank()));
}

/* Tagged partials.
 *
 * A partial that another block will read is stored as 8-byte words, each holding the launch's
 * 32-bit tag in its high half and 32 bits of the value in its low half: float32, one word
 * {tag | bits}; float64, two words {tag | high 32 bits}, {tag | low 32 bits}. An aligned 8-byte
 * access is single-copy atomic, so a reader that sees the tag in a word sees that word's half
 * of the value too. The block that completes a group therefore needs no fence: it loads the
 * group's words and reloads until every one carries the tag (the ticket may arrive before the
 * partial's store; that store has been issued by a running warp, so it lands). Neither the
 * writer waits for its store to be acknowledged nor the reader for an acquire fence.
 *
 * The tag: the workspace's epoch word holds the tag of the last multi-block launch; a launch
 * reads it, uses the next value (skipping 0, the value of a fresh workspace), and its top warp
 * stores its tag back as its last act. Every block reads the epoch before the top warp can
 * store it: the top warp waits for a tagged partial of every block, whose tag came from that
 * block's read. The tag lives on the device, so launches replayed from a CUDA graph get fresh
 * tags too. A stale word could only pass for the current launch's if it was written exactly a
 * multiple of 2^32 launches earlier and is read before the current store lands. */
typedef unsigned long long Word;

template <typename T> struct Tagged;
template <> struct Tagged<float> {
    static constexpr int kWords = 1;
    static __device__ __forceinline__ float unpack(const Word *w) { return __uint_as_float((unsigned int)w[0]); }
};
template <> struct Tagged<double> {
    static constexpr int kWords = 2;
    static __device__ __forceinline__ double unpack(const Word *w)
    {
        return __longlong_as_double((long long)((w[0] << 32) | (w[1] & 0xffffffffull)));
    }
};

__device__ __forceinline__ Word ld_relaxed(const Word *p)
{
    Word v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ void ld_relaxed2(const Word *p, Word &a, Word &b)
{
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p));
}

/* Stores value v as tagged words at w (scope: "gpu" for partials, "sys" for the host slot). */
__device__ __forceinline__ void store_tagged(Word *w, float v, unsigned int tag, bool sys)
{
    const Word x = ((Word)tag << 32) | __float_as_uint(v);
    if (sys)
        asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(w), "l"(x) : "memory");
    else
        asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(w), "l"(x) : "memory");
}
__device__ __forceinline__ void store_tagged(Word *w, double v, unsigned int tag, bool sys)
{
    const Word b = (Word)__double_as_longlong(v), t = (Word)tag << 32;
    const Word hi = t | (b >> 32), lo = t | (b & 0xffffffffull);
    if (sys)
        asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(w), "l"(hi), "l"(lo) : "memory");
    else
        asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(w), "l"(hi), "l"(lo) : "memory");
}

template <typename T> struct Params {
    const T *x;
    T *out;                                  /* the result in device memory, or: */
    Word *host;                              /* the host-result slot (mapped host memory) */
    unsigned int seq;                        /*   and the tag the host waits for there */
    Word *partials[CR_MAX_LEVELS + 1];       /* partials[k]: level-k nodes, tagged, 1 <= k < levels */
    unsigned int *counters[CR_MAX_LEVELS + 1]; /* counters[k]: one per level-k node, k >= 2 */
    unsigned int *epoch;                     /* the tag of the last multi-block launch */
    uint64_t count[CR_MAX_LEVELS + 1];
    int levels;
    int x_aligned;                           /* x is 16-byte aligned: vector loads */
    int quad;                                /* four warps per chunk, two chunks per block */
};

/* This launch's tag (see "Tagged partials"). */
template <typename T> __device__ __forceinline__ unsigned int launch_tag(const Params<T> &P)
{
    unsigned int last;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(last) : "l"(P.epoch));
    return last + 1 ? last + 1 : 1;
}

/* Node idx of level k, stored for the block that will complete its group. */
template <typename T>
__device__ __forceinline__ void store_partial(const Params<T> &P, int k, uint64_t idx, T v,
                                              unsigned int tag)
{
    store_tagged(P.partials[k] + idx * Tagged<T>::kWords, v, tag, false);
}

/* The top node: canonical NaN, into device memory or (host-result path) tagged into the host
 * slot. A multi-block launch (tag != 0) then stores its tag as the workspace's epoch. */
template <typename T>
__device__ __forceinline__ void write_result(const cg::thread_block_tile<32> &warp,
                                             const Params<T> &P, T v, unsigned int tag)
{
    if (warp.thread_rank() == 0) {
        v = v != v ? Layout<T>::nan() : v;
        if (P.host)
            store_tagged(P.host, v, P.seq, true);
        else
            *P.out = v;
        if (tag) asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(P.epoch), "r"(tag) : "memory");
    }
}

/* The number of level-k nodes in the group (C of them, fewer in the last group). */
template <typename T>
__device__ __forceinline__ int group_size(const Params<T> &P, int k, uint64_t group)
{
    constexpr uint64_t C = Layout<T>::kChunk;
    const uint64_t rest = P.count[k] - group * C;
    return rest < C ? (int)rest : (int)C;
}

/* Thread t's lanes of row r of a group of m tagged partials at g; clears ok unless every word
 * loaded carries the tag. Thread t's 4 words (4 float32 lanes, 2 float64 lanes) are 32
 * contiguous, 32-byte aligned bytes: two 16-byte loads, or guarded 8-byte loads past m (lanes
 * at or past m are the padding -0.0). */
template <typename T>
__device__ __forceinline__ Lanes<T> load_tagged_row(const Word *g, int r, int t, int m,
                                                    unsigned int tag, bool &ok)
{
    using Lay = Layout<T>;
    constexpr int kW = Tagged<T>::kWords;
    static_assert(Lay::kVec * kW == 4, "a thread's lanes are 4 words");
    const int first = r * Lay::kLanes + t * Lay::kVec;
    const Word *p = g + (uint64_t)first * kW;
    Word w[4];
    const bool full = first + Lay::kVec <= m;
    if (full) {
        ld_relaxed2(p, w[0], w[1]);
        ld_relaxed2(p + 2, w[2], w[3]);
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++) w[j] = first + j / kW < m ? ld_relaxed(p + j) : 0;
    }
    Lanes<T> out;
#pragma unroll
    for (int e = 0; e < Lay::kVec; e++) {
        const bool valid = first + e < m;
#pragma unroll
        for (int j = 0; j < kW; j++)
            if (valid && (unsigned int)(w[e * kW + j] >> 32) != tag) ok = false;
        out.v[e] = valid ? Tagged<T>::unpack(w + e * kW) : T(-0.0);
    }
    return out;
}

/* The tree of rows r0 .. r0+3 of a group of m tagged partials (thread t's lanes),
 * ((r0 + r1) + (r2 + r3)), once every word has arrived: the 4 rows are loaded at once, and
 * reloaded while any word is stale. Rows wholly past m are padding: -0.0, nothing loaded.
 * Four rows, not eight: 16 words per thread in flight, which fits beside the caller's
 * registers (eight rows spilled). */
template <typename T>
__device__ __forceinline__ Lanes<T> tagged_rows4(const Word *g, int r0, int t, int m, unsigned int tag)
{
    Lanes<T> r[4];
    if (r0 * Layout<T>::kLanes >= m) {
#pragma unroll
        for (int j = 0; j < Layout<T>::kVec; j++) r[0].v[j] = T(-0.0);
        return r[0];
    }
    for (;;) {
        bool ok = true;
#pragma unroll
        for (int i = 0; i < 4; i++) r[i] = load_tagged_row<T>(g, r0 + i, t, m, tag, ok);
        if (ok) break;
    }
    return add(add(r[0], r[1]), add(r[2], r[3]));
}

/* The row trees of a group from its eight 4-row trees h[0..8): batch b_q = h[2q] + h[2q+1],
 * lane sums (b0 + b1) + (b2 + b3) — the 32-row pairwise tree. */
template <typename T>
__device__ __forceinline__ Lanes<T> rows_from_quarters(const Lanes<T> *h)
{
    return add(add(add(h[0], h[1]), add(h[2], h[3])), add(add(h[4], h[5]), add(h[6], h[7])));
}

/* A completed group of level-k partials, reduced by one warp, four rows after four: only the
 * few small groups above level 2 come here (level 2 is reduced by the whole block). */
template <typename T>
__device__ __noinline__ T reduce_group_warp(const cg::thread_block_tile<32> &warp,
                                            const Params<T> &P, int k, uint64_t group,
                                            unsigned int tag)
{
    const Word *g = P.partials[k] + group * Layout<T>::kChunk * Tagged<T>::kWords;
    const int m = group_size(P, k, group), t = warp.thread_rank();
    Lanes<T> h[8];
#pragma unroll 1
    for (int i = 0; i < 8; i++) h[i] = tagged_rows4<T>(g, 4 * i, t, m, tag);
    return lane_tree(warp, rows_from_quarters(h));
}

/* A warp holds node `idx` of level k >= 2: store it, post a ticket for its group, and while
 * this warp is the one completing a group, reduce the group and climb. Only the few nodes above
 * level 1 come here, so one ticket per node costs nothing that shows. */
template <typename T>
__device__ __noinline__ void climb(const cg::thread_block_tile<32> &warp, const Params<T> &P, int k,
                      uint64_t idx, T v, unsigned int tag)
{
    constexpr uint64_t C = Layout<T>::kChunk;
    for (;;) {
        if (k == P.levels) {
            write_result(warp, P, v, tag);
            return;
        }
        const uint64_t group = idx / C;
        const unsigned int size = (unsigned int)group_size(P, k, group);
        unsigned int done = 0;
        if (warp.thread_rank() == 0) {
            store_partial(P, k, idx, v, tag);
            done = atomicAdd(&P.counters[k + 1][group], 1u) + 1;
            if (done == size) P.counters[k + 1][group] = 0; /* ready for the next launch */
        }
        if (warp.shfl(done, 0) != size) return;
        v = reduce_group_warp(warp, P, k, group, tag);
        k += 1;
        idx = group;
    }
}

/* Splits [0, total) into `parts` contiguous ranges whose sizes differ by at most one. */
__device__ __forceinline__ void balanced_range(uint64_t total, uint64_t parts, uint64_t i,
                                               uint64_t *begin, uint64_t *end)
{
    const uint64_t base = total / parts, rem = total % parts;
    *begin = i * base + (i < rem ? i : rem);
    *end = *begin + base + (i < rem ? 1 : 0);
}

/* The one ragged chunk of the input, out of line: its guarded loads would otherwise share the
 * hot loop's registers. */
template <typename T>
__device__ __noinline__ T ragged_input_chunk(const cg::thread_block_tile<32> &warp, const T *p, int m)
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
template <typename T, Load L>
__device__ __forceinline__ void stream_full_chunks(const cg::thread_block_tile<32> &warp,
                                                   const Params<T> &P, uint64_t c0, uint64_t c1,
                                                   uint64_t stride, unsigned int tag)
{
    constexpr uint64_t C = Layout<T>::kChunk;
    const int t = warp.thread_rank();
    Batch<T> A, B;
    load_batch<T, L>(A, P.x + c0 * C, 0, t);
    for (uint64_t c = c0; c < c1; c += stride) {
        const T *p = P.x + c * C;
        const T *next = c + stride < c1 ? p + stride * C : nullptr;
        const T v = lane_tree(warp, stream_chunk<T, L>(A, B, p, next, t));
        if (t == 0) store_partial(P, 1, c, v, tag);
    }
}

/* Level 1 the ordinary way: the block's chunks [b0, b1), warp w of the block taking every
 * kWarpsPerBlock-th (or, without interleaving, a sub-range of them). */
template <typename T, Load L>
__device__ __forceinline__ void level1_chunks(const cg::thread_block_tile<32> &warp,
                                              const Params<T> &P, uint64_t b0, uint64_t b1, int w,
                                              unsigned int tag)
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
        stream_full_chunks<T, L>(warp, P, c, stop, stride, tag);
        c += (stop - c + stride - 1) / stride * stride; /* first chunk at or past stop */
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
template <typename T, Load L>
__device__ __forceinline__ void quad_chunks(const cg::thread_block &block,
                                            const cg::thread_block_tile<32> &warp,
                                            const Params<T> &P, uint64_t b0, uint64_t b1,
                                            Lanes<T> (&quarter)[2][4][32], unsigned int tag)
{
    static_assert(kWarpsPerBlock == 8, "quad_chunks assumes 8 warps: 2 chunks x 4 batches");
    constexpr uint64_t C = Layout<T>::kChunk;
    const int w = warp.meta_group_rank(), cl = w / 4, q = w % 4, t = warp.thread_rank();
    const uint64_t c = b0 + cl;
    const bool fast = P.x_aligned && c < b1 && (c + 1) * C <= P.count[0];
    if (fast) {
        Batch<T> A;
        load_batch<T, L>(A, P.x + c * C, q, t);
        quarter[cl][q][t] = batch_tree(A);
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

/* After level 1: thread 0 posts the block's tickets, one per group its chunks [b0, b1) touch;
 * the block reduces each group it completed with all 8 warps, 4 rows each (one round trip to
 * L2 for a full group), the row trees meeting in shared memory; warp 0 climbs. Out of line, so that its registers
 * do not weigh on the level-1 loop's. */
template <typename T>
__device__ __noinline__ void post_tickets(const cg::thread_block &block,
                                          const cg::thread_block_tile<32> &warp,
                                          const Params<T> &P, uint64_t b0, uint64_t b1,
                                          Lanes<T> (&quarter)[2][4][32], unsigned int tag)
{
    constexpr uint64_t C = Layout<T>::kChunk;
    constexpr int kBatch = 64; /* completed groups handled per round (one round is typical) */
    __shared__ uint64_t done_groups[kBatch];
    __shared__ int n_done;
    const int w = warp.meta_group_rank(), t = warp.thread_rank();
    /* Groups touched by [b0, b1), in rounds of at most kBatch. */
    const uint64_t g_first = b0 / C, g_last = (b1 - 1) / C;
    for (uint64_t g0 = g_first; g0 <= g_last; g0 += kBatch) {
        block.sync(); /* the warps' partial stores are issued; shared memory is free */
        if (block.thread_rank() == 0) {
            int nd = 0;
            for (uint64_t g = g0; g <= g_last && g < g0 + kBatch; g++) {
                const uint64_t lo = g * C > b0 ? g * C : b0;
                const uint64_t hi = (g + 1) * C < b1 ? (g + 1) * C : b1;
                const unsigned int mine = (unsigned int)(hi - lo);
                const unsigned int size = (unsigned int)group_size(P, 1, g);
                if (atomicAdd(&P.counters[2][g], mine) + mine == size) {
                    P.counters[2][g] = 0; /* ready for the next launch */
                    done_groups[nd++] = g;
                }
            }
            n_done = nd;
        }
        block.sync(); /* hands the completed groups to the block's warps */
        Lanes<T>(&h)[8][32] = reinterpret_cast<Lanes<T>(&)[8][32]>(quarter);
        for (int i = 0; i < n_done; i++) {
            const uint64_t g = done_groups[i];
            h[w][t] = tagged_rows4<T>(P.partials[1] + g * C * Tagged<T>::kWords, 4 * w, t,
                                      group_size(P, 1, g), tag);
            block.sync();
            if (w == 0) {
                Lanes<T> hs[8];
#pragma unroll
                for (int j = 0; j < 8; j++) hs[j] = h[j][t];
                climb(warp, P, 2, g, lane_tree(warp, rows_from_quarters(hs)), tag);
            }
            block.sync(); /* h is read before the next group overwrites it */
        }
    }
}

/* Any N with more than kWarpsPerBlock * 4 chunks. Block b owns a contiguous range of level-1
 * chunks, its warps split it; each warp stores its chunks' partials. After a barrier, thread 0
 * posts one ticket per group the block's range touches (the count of its chunks in that group).
 * Tickets per launch: about one per block, so same-address atomics never queue up; no fences
 * (the partials are tagged). A block that completes a group reduces it with all its warps. */
template <typename T, Load L>
__global__ void __launch_bounds__(kThreads, Layout<T>::kMinBlocks * 8 / kWarpsPerBlock) canonical_kernel(const __grid_constant__ Params<T> P)
{
    static_assert(kWarpsPerBlock == 8, "groups are reduced by 8 warps x 4 rows");
    __shared__ Lanes<T> quarter[2][4][32]; /* batch trees: [chunk or group][batch][thread] */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int w = warp.meta_group_rank();
    const unsigned int tag = launch_tag(P);
    uint64_t b0, b1;
    balanced_range(P.count[1], gridDim.x, blockIdx.x, &b0, &b1);
    if (P.quad)
        quad_chunks<T, L>(block, warp, P, b0, b1, quarter, tag);
    else
        level1_chunks<T, L>(warp, P, b0, b1, w, tag);
    if (b0 == b1) return; /* uniform across the block */
    post_tickets(block, warp, P, b0, b1, quarter, tag);
}

/* Small N (at most kSmallChunks chunks): one block, one warp per chunk, the partials in shared
 * memory, no atomics and no fences: the shortest path from launch to result. Same tree. 16
 * warps leave each thread 128 registers, room for the double-buffered stream (2 round trips to
 * memory per chunk instead of 4). */
constexpr int kSmallChunks = 16;

template <typename T>
__global__ void __launch_bounds__(32 * kSmallChunks) canonical_small_kernel(const __grid_constant__ Params<T> P)
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
        write_result(warp, P, warp_chunk<T, Load::kGuardedShared>(warp, partials, (int)P.count[1]), 0u);
}

template <typename T>
cudaError_t launch(const void *x, uint64_t n, void *out, void *partials, void *counters,
                   int *blocks_io, int *threads_out, int quad, int stream_once, void *host,
                   unsigned int seq, cudaStream_t stream)
{
    constexpr uint64_t C = Layout<T>::kChunk;
    Params<T> P = {};
    P.x = static_cast<const T *>(x);
    P.out = static_cast<T *>(out);
    P.host = static_cast<Word *>(host);
    P.levels = cr_level_counts(n, C, P.count);
    P.x_aligned = ((uintptr_t)x % 16) == 0;
    P.seq = seq;
    /* cudaGetLastError() after a launch reports whatever error is pending on this thread, so
     * one left by an earlier failed call of ours (an allocation, say) must not be taken for this
     * launch's: clear it first. Sticky errors (a broken context) survive this and are reported. */
    (void)cudaGetLastError();
    if (P.count[1] <= (uint64_t)kSmallChunks) {
        *blocks_io = 1;
        *threads_out = 32 * (int)P.count[1];
        canonical_small_kernel<T><<<1, 32 * (int)P.count[1], 0, stream>>>(P);
        return cudaGetLastError();
    }
    int blocks = *blocks_io;
    /* Same layout as workspace_bytes() in gpu_host.c: tagged partial arrays one after the
     * other, each 256-byte aligned; the counters region starts with the epoch word, then 256
     * bytes on, the counters, zero between launches. */
    char *pp = static_cast<char *>(partials);
    P.epoch = static_cast<unsigned int *>(counters);
    unsigned int *cc = static_cast<unsigned int *>(counters) + 256 / sizeof(unsigned int);
    for (int k = 1; k < P.levels; k++) {
        P.partials[k] = reinterpret_cast<Word *>(pp);
        pp += (P.count[k] * Tagged<T>::kWords * sizeof(Word) + 255) / 256 * 256;
        P.counters[k + 1] = cc;
        cc += P.count[k + 1];
    }
    P.quad = CR_TUNE_QUAD && quad;
    const uint64_t blocks_needed = P.quad ? (P.count[1] + 1) / 2
                                          : (P.count[1] + kWarpsPerBlock - 1) / kWarpsPerBlock;
    if (P.quad || (uint64_t)blocks > blocks_needed) blocks = (int)blocks_needed;
    *blocks_io = blocks;
    *threads_out = kThreads;
    if (stream_once)
        canonical_kernel<T, Load::kVectorStream><<<blocks, kThreads, 0, stream>>>(P);
    else
        canonical_kernel<T, Load::kVector><<<blocks, kThreads, 0, stream>>>(P);
    return cudaGetLastError();
}

} // namespace

extern "C" {

/* Returns a cudaError_t. x, out: device-accessible; partials/counters: the handle's workspace;
 * host: NULL, or the mapped host slot (16 bytes, 16-byte aligned) that receives the result
 * tagged with seq (nonzero) instead of out. */
/* quad: four warps per chunk, ceil(chunks / 2) blocks (blocks is then ignored);
 * stream_once: the input is larger than L2 (read once, streamed through; CR_TUNE_LOAD). */
/* blocks: in, the grid wanted; out, the grid launched (threads: its block size). */
int cr_gpu_launch_canonical(int dtype, const void *x, uint64_t n, void *out, void *partials,
                            void *counters, int *blocks, int *threads, int quad, int stream_once,
                            void *host, unsigned int seq, void *stream)
{
    if (dtype == COOPREDUCE_FLOAT32)
        return launch<float>(x, n, out, partials, counters, blocks, threads, quad, stream_once,
                             host, seq, (cudaStream_t)stream);
    return launch<double>(x, n, out, partials, counters, blocks, threads, quad, stream_once,
                          host, seq, (cudaStream_t)stream);
}

/* Resident blocks per SM of the kernel for `dtype` (0 when the GPU has no code for it), and
 * the CUDA error code. */
int cr_gpu_canonical_occupancy(int dtype, int *blocks_per_sm)
{
    *blocks_per_sm = 0;
    cudaError_t e = dtype == COOPREDUCE_FLOAT32
        ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, canonical_kernel<float, Load::kVectorStream>, kThreads, 0)
        : cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, canonical_kernel<double, Load::kVectorStream>, kThreads, 0);
    return (int)e;
}

int cr_gpu_warps_per_block(void) { return kWarpsPerBlock; }

} // extern "C"
