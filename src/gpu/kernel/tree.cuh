/* tree.cuh — the canonical tree above level 1, on the GPU: shared by the canonical sum
 * (canonical.cu) and the canonical-order operations (ordered.cu). Part of the kernel layer
 * (src/gpu/kernel/).
 *
 * Level 1 (one partial per chunk of leaves) is each kernel's own business; everything above it
 * is the same for both: the level-1 partials are stored tagged (see "Tagged partials"), one
 * thread per block posts a ticket per group its chunks touch (early, near the block's start,
 * where it touches one or two: EarlyTickets), the block that completes a group reduces it with
 * its 8 warps and climbs (each node's ticket posted before the node is computed), and the warp
 * that completes the top node applies the final rule (write_result: the plain sum, or an
 * operation's rule from values.h) and writes the result. The tree is docs/DETERMINISM.md's: the
 * canonical sum of the level-1 partials. What each step of that end costs was measured with
 * trace.cuh's time stamps (docs/perf-log, runs 184-187): every change here shortens the chain
 * of round trips to L2 that follows the last chunk.
 *
 * Included by .cu files only; everything is in an anonymous namespace (each file gets its own
 * copy, as it would of a template). */
#ifndef COOPREDUCE_TREE_CUH
#define COOPREDUCE_TREE_CUH

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/order.h"
#include "core/values.h"
#include "gpu/kernel/trace.cuh"  /* CR_TRACE: a measurement build's time stamps */
#include "gpu/kernel/traits.cuh" /* Layout */

/*  CR_TUNE_WARPS: warps per block of the main kernel (8 or 16; resident blocks scale down to
 *    keep the same register budget). 16 is no faster than 8. A bulk L2 prefetch of each warp's
 *    next-but-one chunk was tried and removed: it cost bandwidth at large N (docs/perf-log). */
#ifndef CR_TUNE_WARPS
#define CR_TUNE_WARPS 8
#endif

namespace cg = cooperative_groups;

namespace {

constexpr int kWarpsPerBlock = CR_TUNE_WARPS;
constexpr int kThreads = 32 * kWarpsPerBlock;

/* A thread's lanes of one row, as a small array the compiler keeps in registers. */
template <typename T> struct Lanes {
    T v[Layout<T>::kVec];
};

template <typename T> __device__ __forceinline__ Lanes<T> add(const Lanes<T> &a, const Lanes<T> &b)
{
    Lanes<T> r;
#pragma unroll
    for (int j = 0; j < Layout<T>::kVec; j++) r.v[j] = a.v[j] + b.v[j];
    return r;
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
    static __device__ __forceinline__ float unpack(const Word *w)
    {
        return __uint_as_float((unsigned int)w[0]);
    }
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
        asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(w), "l"(hi), "l"(lo)
                     : "memory");
    else
        asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(w), "l"(hi), "l"(lo)
                     : "memory");
}

/* The rule the top warp applies to the top node (write_result). ordered == 0: the plain
 * canonical sum, the value itself (NaN made canonical) in the accumulation type. ordered == 1:
 * a canonical-order operation of ordered.cu: values.h's final rule for `op` on input `dtype`
 * (MEAN's one division, NORM2's combination of its three classes' sums, narrowing), exactly as
 * src/cpu/ops.c applies it. */
struct Final {
    int ordered;
    int op, dtype, narrow;
};

template <typename T> struct Params {
    const T *x;                        /* the input (canonical.cu; ordered.cu has its own) */
    void *out;                         /* the result in device memory, or: */
    Word *host;                        /* the host-result slot (mapped host memory) */
    unsigned int seq;                  /*   and the tag the host waits for there */
    Word *partials[CR_MAX_LEVELS + 1]; /* partials[k]: level-k nodes, tagged, 1 <= k < levels */
    unsigned int *counters[CR_MAX_LEVELS + 1]; /* counters[k]: one per level-k node, k >= 2 */
    unsigned int *epoch;                       /* the tag of the last multi-block launch */
    uint64_t count[CR_MAX_LEVELS + 1];
    int levels;
    int x_aligned; /* x is 16-byte aligned: vector loads */
    int quad;      /* four warps per chunk, two chunks per block */
    Final fin;     /* what the top node becomes */
};

/* The end's functions (post_tickets, climb, reduce_group_warp, write_result's rules) are out of
 * line, and in them a reference to a __grid_constant__ parameter is a generic address: every
 * field they read would be a load from the parameter space, a round trip of several hundred
 * cycles, one after another along the hand-off chain (0.6-0.8 us of the end, docs/perf-log). A
 * block therefore copies its parameters to shared memory at the start, in the shadow of level 1,
 * and hands the copy to the end: the same values at shared memory's latency. Read only after a
 * barrier (post_tickets begins with one). */
template <typename Q> __device__ __forceinline__ void params_to_shared(const Q &P, Q &S)
{
    static_assert(sizeof(Q) % 8 == 0 && sizeof(Q) / 8 <= 32 * kWarpsPerBlock, "one word a thread");
    if (threadIdx.x < sizeof(Q) / 8)
        reinterpret_cast<unsigned long long *>(&S)[threadIdx.x] =
            reinterpret_cast<const unsigned long long *>(&P)[threadIdx.x];
}

/* This launch's tag (see "Tagged partials"). */
template <typename T> __device__ __forceinline__ unsigned int launch_tag(const Params<T> &P)
{
    unsigned int last;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(last) : "l"(P.epoch));
    return last + 1 ? last + 1 : 1;
}

/* NORM2's sparse classes. Most chunks hold only medium-class elements: their big and small
 * partials are +0.0, and a tree's sum does not change when +0.0 leaves it (x + +0.0 == x for
 * every partial x, none being -0.0: the padding -0.0 only ever meets elements' +0.0 leaves).
 * A chunk therefore stores its big and small partials only where one is not +0.0, and says so
 * by the tag words of its medium partial, which then carry the tag with its top bit flipped
 * (tag ^ kOtherFlag: a stale word could pass for it only if written 2^31 launches before, where
 * an unflagged one needs 2^32, see "Tagged partials"); the block that reduces a group of
 * level-1 partials reads the flags with the medium ones and loads the big and small partials
 * of the flagged positions only, taking +0.0 for the others (post_tickets). The same sums,
 * one store a chunk instead of three, and no load of the two trees where no chunk of a group
 * is flagged. Above level 1 every tree's nodes are stored. */
constexpr unsigned int kOtherFlag = 0x80000000u;
template <typename T> __device__ __forceinline__ bool is_plus_zero(T v)
{
    if constexpr (sizeof(T) == 4)
        return __float_as_uint(v) == 0u;
    else
        return __double_as_longlong(v) == 0ll;
}

/* Node idx of level k, stored for the block that will complete its group. */
template <typename T>
__device__ __forceinline__ void store_partial(const Params<T> &P, int k, uint64_t idx, T v,
                                              unsigned int tag)
{
    store_tagged(P.partials[k] + idx * Tagged<T>::kWords, v, tag, false);
}

/* An operation's final rule on its canonical sums (see Final): a0 alone, or NORM2's three
 * classes a0 (big), a1 (medium), a2 (small). Out of line: one thread of one warp runs it once
 * per launch. The same code as src/cpu/ops.c's last step (values.h). */
__device__ __noinline__ void write_final(const Final &F, uint64_t n, double a0, double a1,
                                         double a2, void *out)
{
    const int f64 = F.dtype == COOPREDUCE_FLOAT64;
    double a[3] = {a0, a1, a2};
    for (int k = 0; k < 3; k++)
        if (a[k] != a[k])
            a[k] = cr_f64_from(CR_NAN_F64); /* as the CPU's canonical sums return it */
    double v = a[0];
    if (F.op == COOPREDUCE_OP_MEAN) v = cr_mean_of_float(a[0], n, f64);
    if (F.op == COOPREDUCE_OP_NORM2)
        v = f64 ? cr_norm2_combine_F64(a[0], a[1], a[2])
                : (double)cr_norm2_combine_F32((float)a[0], (float)a[1], (float)a[2]);
    cr_write_float(v, f64, F.dtype == COOPREDUCE_FLOAT16, F.dtype == COOPREDUCE_BFLOAT16, F.narrow,
                   out);
}

/* The result of an operation on no elements (n == 0), by one thread: the final rule on the
 * sum of nothing, +0.0 (MEAN: NaN; NORM2: +0.0), as the CPU computes it. */
__global__ void empty_kernel(const __grid_constant__ Final F, void *out)
{
    write_final(F, 0, 0.0, 0.0, 0.0, out);
}

/* One tree's top node v, by one thread: canonical NaN, or the operation's rule. */
template <typename T> __device__ __forceinline__ void write_result_one(const Params<T> &P, T v)
{
    v = v != v ? Layout<T>::nan() : v;
    if (P.fin.ordered)
        write_final(P.fin, P.count[0], (double)v, 0.0, 0.0, P.out);
    else if (P.host)
        store_tagged(P.host, v, P.seq, true);
    else
        *static_cast<T *>(P.out) = v;
}

/* The top node of K trees over the same chunks (K == 3: NORM2's classes, big, medium, small),
 * P[k] tree k's parameters: canonical NaN (or an operation's final rule, P[0].fin, of the K
 * values), into device memory or (host-result path of the plain sum) tagged into the host slot.
 * A multi-block launch (tag != 0) then stores its tag as the workspace's epoch. */
template <int K, typename T>
__device__ __forceinline__ void write_result(const cg::thread_block_tile<32> &warp,
                                             const Params<T> *P, const T (&v)[K], unsigned int tag)
{
    static_assert(K == 1 || K == 3, "one tree, or NORM2's three");
    if (warp.thread_rank() == 0) {
        CR_TRACE(trace_at(kTrResult);)
        if constexpr (K == 3)
            write_final(P[0].fin, P[0].count[0], (double)v[0], (double)v[1], (double)v[2],
                        P[0].out);
        else
            write_result_one(P[0], v[0]);
        if (tag)
            asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(P[0].epoch), "r"(tag)
                         : "memory");
        CR_TRACE(if (tag) trace_report(P[0].count[0], P[0].levels, tag);)
    }
}
template <typename T>
__device__ __forceinline__ void write_result(const cg::thread_block_tile<32> &warp,
                                             const Params<T> &P, T v, unsigned int tag)
{
    const T one[1] = {v};
    write_result<1>(warp, &P, one, tag);
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

/* load_tagged_row for NORM2's level-1 medium partials, whose tag words may be flagged (tag ^
 * kOtherFlag): also their flags, lane e at bit e of `flags`. */
template <typename T>
__device__ __forceinline__ Lanes<T> load_medium_row(const Word *g, int r, int t, int m,
                                                    unsigned int tag, bool &ok, unsigned int &flags)
{
    using Lay = Layout<T>;
    constexpr int kW = Tagged<T>::kWords;
    const int first = r * Lay::kLanes + t * Lay::kVec;
    const Word *p = g + (uint64_t)first * kW;
    Word w[4];
#pragma unroll
    for (int j = 0; j < 4; j++) w[j] = first + j / kW < m ? ld_relaxed(p + j) : 0;
    Lanes<T> out;
#pragma unroll
    for (int e = 0; e < Lay::kVec; e++) {
        const bool valid = first + e < m;
#pragma unroll
        for (int j = 0; j < kW; j++) {
            const unsigned int wt = (unsigned int)(w[e * kW + j] >> 32);
            const bool flagged = wt == (tag ^ kOtherFlag);
            if (valid && wt != tag && !flagged) ok = false;
            if (valid && flagged) flags |= 1u << e;
        }
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
__device__ __forceinline__ Lanes<T> tagged_rows4(const Word *g, int r0, int t, int m,
                                                 unsigned int tag)
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

/* tagged_rows4 of NORM2's medium partials at level 1, whose tags may carry kOtherFlag: also
 * their flags, row i's lane e at bit 4i + e of *flags. (A copy, with load_medium_row, of
 * tagged_rows4 and load_tagged_row: one template for both made ptxas spill in the canonical
 * sum's end, 0.5 us at 2^24: docs/perf-log.) */
template <typename T>
__device__ __forceinline__ Lanes<T> medium_rows4(const Word *g, int r0, int t, int m,
                                                 unsigned int tag, unsigned int *flags)
{
    Lanes<T> r[4];
    *flags = 0;
    if (r0 * Layout<T>::kLanes >= m) {
#pragma unroll
        for (int j = 0; j < Layout<T>::kVec; j++) r[0].v[j] = T(-0.0);
        return r[0];
    }
    for (;;) {
        bool ok = true;
        unsigned int f = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            unsigned int fr = 0;
            r[i] = load_medium_row<T>(g, r0 + i, t, m, tag, ok, fr);
            f |= fr << (4 * i);
        }
        if (ok) {
            *flags = f;
            break;
        }
    }
    return add(add(r[0], r[1]), add(r[2], r[3]));
}

/* The same tree of a big or small class's rows r0 .. r0+3, where only the positions flagged in
 * `flags` (tagged_rows4 of the medium partials: row i, lane e at bit 4i + e) were stored: those
 * loaded (and waited for), the others +0.0, positions past m the padding -0.0. */
template <typename T>
__device__ __forceinline__ Lanes<T> sparse_rows4(const Word *g, int r0, int t, int m,
                                                 unsigned int tag, unsigned int flags)
{
    using Lay = Layout<T>;
    constexpr int kW = Tagged<T>::kWords;
    Lanes<T> r[4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int e = 0; e < Lay::kVec; e++) {
            const int pos = (r0 + i) * Lay::kLanes + t * Lay::kVec + e;
            if (pos >= m) {
                r[i].v[e] = T(-0.0);
            } else if (flags >> (4 * i + e) & 1u) {
                Word w[kW];
                for (bool ok = false; !ok;) {
                    ok = true;
#pragma unroll
                    for (int j = 0; j < kW; j++) {
                        w[j] = ld_relaxed(g + (uint64_t)pos * kW + j);
                        ok &= (unsigned int)(w[j] >> 32) == tag;
                    }
                }
                r[i].v[e] = Tagged<T>::unpack(w);
            } else {
                r[i].v[e] = T(0.0);
            }
        }
    return add(add(r[0], r[1]), add(r[2], r[3]));
}

/* The row trees of a group from its eight 4-row trees h[0..8): batch b_q = h[2q] + h[2q+1],
 * lane sums (b0 + b1) + (b2 + b3) — the 32-row pairwise tree. */
template <typename T> __device__ __forceinline__ Lanes<T> rows_from_quarters(const Lanes<T> *h)
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

/* A warp holds node `idx` of level k >= 2 of K trees over the same chunks (v[j]: tree j's,
 * P[j] its parameters): store them, post one ticket for their group (the trees share P[0]'s
 * counters: a group's nodes of every tree are stored before its ticket), and while this warp is
 * the one completing a group, reduce the group in every tree and climb. The warp that completes
 * the top nodes writes the result. Only the few nodes above level 1 come here. With `ahead`,
 * the first ticket was posted before the node was computed (post_tickets): `got`, in lane 0, is
 * what that atomic returned, waited for only here, so that its round trip to L2 overlapped the
 * node's reduction. */
template <int K, typename T>
__device__ __noinline__ void climb(const cg::thread_block_tile<32> &warp, const Params<T> *P, int k,
                                   uint64_t idx, T (&v)[K], bool ahead, unsigned int got,
                                   unsigned int tag)
{
    constexpr uint64_t C = Layout<T>::kChunk;
    CR_TRACE(if (warp.thread_rank() == 0) {
        trace_at(kTrClimb);
        trace_at(kTrTicket3);
        trace_at(kTrLoaded3);
    })
    for (;;) {
        if (k == P[0].levels) {
            write_result<K>(warp, P, v, tag);
            return;
        }
        const uint64_t group = idx / C;
        const unsigned int size = (unsigned int)group_size(P[0], k, group);
        unsigned int done = 0;
        if (warp.thread_rank() == 0) {
#pragma unroll
            for (int j = 0; j < K; j++) store_partial(P[j], k, idx, v[j], tag);
            done = (ahead ? got : atomicAdd(&P[0].counters[k + 1][group], 1u)) + 1;
            if (done == size) P[0].counters[k + 1][group] = 0; /* ready for the next launch */
        }
        ahead = false;
        if (warp.shfl(done, 0) != size) return;
        CR_TRACE(if (warp.thread_rank() == 0) trace_at(kTrTicket3);)
#pragma unroll 1
        for (int j = 0; j < K; j++) v[j] = reduce_group_warp(warp, P[j], k, group, tag);
        CR_TRACE(if (warp.thread_rank() == 0) trace_at(kTrLoaded3);)
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

/* Level-2 tickets posted early. A block whose chunks touch one or two groups posts their
 * tickets near its start (one thread, once its warp's first loads are in flight, so that the
 * atomic's round trip hides behind theirs), counting chunks it has yet to reduce. The block that
 * completes a group so learns it long before its own level 1 ends, and at the end loads the
 * group at once: the ticket's round trip to L2 leaves the end's chain. The group's partials may
 * then still be on their way when it first looks: it waits for their tags (tagged_rows4), and
 * they come, each from a block that posted its ticket, so is running, and reduces its chunks
 * without waiting on anything. A block touching more groups (a grid forced small) posts at the
 * end (post_tickets). */
struct EarlyTickets {
    uint64_t done[2]; /* the groups this block completes */
    int n;            /* how many; -1: nothing posted early */
};

/* The poster of a block's early tickets: one thread, of the block's last warp (round-robin, the
 * warp with the fewest chunks). */
__device__ __forceinline__ bool early_poster() { return threadIdx.x == 32 * (kWarpsPerBlock - 1); }

/* The block's early tickets in two steps, so that the poster may issue its loads in between:
 * early_post puts both atomics in flight (trees over the same chunks share one ticket: climb)
 * and returns false where nothing is posted early (more than two groups, or no chunk);
 * early_note waits for their counts and notes the groups the block completes. early_tickets:
 * both at once. */
struct EarlyPost {
    uint64_t g0, g1;
    unsigned int mine0, mine1, got0, got1;
};
template <typename T>
__device__ __forceinline__ bool early_post(const Params<T> &P, uint64_t b0, uint64_t b1,
                                           EarlyPost &e)
{
    constexpr uint64_t C = Layout<T>::kChunk;
    const uint64_t g0 = b0 / C, g1 = (b1 - 1) / C;
    if (b0 == b1 || g1 - g0 > 1) return false;
    const uint64_t split = g1 * C > b0 ? g1 * C : b0; /* the second group's first chunk */
    const unsigned int mine0 = (unsigned int)(split - b0), mine1 = (unsigned int)(b1 - split);
    e.g0 = g0;
    e.g1 = g1;
    e.mine0 = mine0;
    e.mine1 = mine1;
    e.got0 = mine0 ? atomicAdd(&P.counters[2][g0], mine0) + mine0 : 0;
    e.got1 = mine1 ? atomicAdd(&P.counters[2][g1], mine1) + mine1 : 0;
    return true;
}
template <typename T>
__device__ __forceinline__ void early_note(const Params<T> &P, const EarlyPost &e, EarlyTickets *E)
{
    int nd = 0;
    if (e.mine0 && e.got0 == (unsigned int)group_size(P, 1, e.g0)) {
        P.counters[2][e.g0] = 0; /* ready for the next launch */
        E->done[nd++] = e.g0;
    }
    if (e.mine1 && e.got1 == (unsigned int)group_size(P, 1, e.g1)) {
        P.counters[2][e.g1] = 0;
        E->done[nd++] = e.g1;
    }
    E->n = nd;
}
template <typename T>
__device__ __forceinline__ void early_tickets(const Params<T> &P, uint64_t b0, uint64_t b1,
                                              EarlyTickets *E)
{
    EarlyPost e;
    if (early_post(P, b0, b1, e))
        early_note(P, e, E);
    else
        E->n = -1;
}

/* NORM2's group g of level-1 partials (m of them) in its three trees, into h (tree j's row trees
 * at h[(j * 8 + warp) * 32 + thread]), by the whole block: the medium partials with their
 * flags, then, only if one is flagged, the big and small partials of the flagged positions
 * (kOtherFlag); returns whether one was (else the big and small trees of the group hold only
 * +0.0). Ends with a barrier, after which h is complete. */
template <typename T>
__device__ __noinline__ bool norm2_group_rows(const cg::thread_block &block, const Params<T> *P,
                                              uint64_t g, int m, unsigned int tag, Lanes<T> *h)
{
    const int w = (int)(threadIdx.x / 32), t = (int)(threadIdx.x % 32);
    const uint64_t off = g * Layout<T>::kChunk * Tagged<T>::kWords;
    unsigned int flags = 0;
    h[(8 + w) * 32 + t] = medium_rows4<T>(P[1].partials[1] + off, 4 * w, t, m, tag, &flags);
    if (!__syncthreads_or(flags != 0)) return false;
    for (int j = 0; j < 3; j += 2)
        h[(j * 8 + w) * 32 + t] = sparse_rows4<T>(P[j].partials[1] + off, 4 * w, t, m, tag, flags);
    block.sync();
    return true;
}

/* After level 1: thread 0 posts the block's tickets on P[0]'s counters, one per group its chunks
 * [b0, b1) touch (unless they were posted early: `early`); the block reduces each group it
 * completed, in each of the K trees over these chunks (P[j]: tree j's parameters; NORM2 has
 * three, one per class), with all 8 warps, 4 rows each (one round trip to L2 per tree for a
 * full group), the row trees meeting in shared memory (h: K x 8 x 32 of them); warp 0 climbs
 * with the K values. Out of line, so that its registers do not weigh on the level-1 loop's; P
 * is the block's copy in shared memory (params_to_shared). */
template <int K, typename T>
__device__ __noinline__ void post_tickets(const cg::thread_block &block,
                                          const cg::thread_block_tile<32> &warp, const Params<T> *P,
                                          uint64_t b0, uint64_t b1, Lanes<T> *h, unsigned int tag,
                                          const EarlyTickets *early = nullptr)
{
    constexpr uint64_t C = Layout<T>::kChunk;
    constexpr int kBatch = 64; /* completed groups handled per round (one round is typical) */
    __shared__ uint64_t done_groups[kBatch];
    __shared__ int n_done;
    const int w = warp.meta_group_rank(), t = warp.thread_rank();
    const Params<T> &P0 = P[0];
    /* Groups touched by [b0, b1), in rounds of at most kBatch. */
    const uint64_t g_first = b0 / C, g_last = (b1 - 1) / C;
    for (uint64_t g0 = g_first; g0 <= g_last; g0 += kBatch) {
        block.sync();         /* the warps' partial stores are issued; shared memory is free */
        unsigned int got = 0; /* thread 0: the ahead ticket's count (see climb) */
        if (block.thread_rank() == 0) {
            CR_TRACE(if (g0 == g_first) trace_level1(tag);)
            int nd = 0;
            /* A completed group: the first of the round posts its node's ticket now, ahead of
             * computing the node; thread 0 waits for the count only in climb. Every node of
             * that level-3 group is then either stored or being computed by a block that
             * completed its group, waiting on nothing but nodes below, so the one that
             * completes it waits for their tags only briefly. */
            auto completed = [&](uint64_t g) {
                if (nd == 0 && P0.levels > 2) got = atomicAdd(&P0.counters[3][g / C], 1u);
                done_groups[nd++] = g;
                CR_TRACE(trace_at(kTrTicket);)
            };
            const bool posted = early && early->n >= 0; /* (then g_last <= g_first + 1) */
            for (int i = 0; posted && i < early->n; i++) completed(early->done[i]);
            for (uint64_t g = g0; !posted && g <= g_last && g < g0 + kBatch; g++) {
                const uint64_t lo = g * C > b0 ? g * C : b0;
                const uint64_t hi = (g + 1) * C < b1 ? (g + 1) * C : b1;
                const unsigned int mine = (unsigned int)(hi - lo);
                const unsigned int size = (unsigned int)group_size(P0, 1, g);
                if (atomicAdd(&P0.counters[2][g], mine) + mine == size) {
                    P0.counters[2][g] = 0; /* ready for the next launch */
                    completed(g);
                }
            }
            n_done = nd;
        }
        block.sync(); /* hands the completed groups to the block's warps */
        for (int i = 0; i < n_done; i++) {
            const uint64_t g = done_groups[i];
            const int m = group_size(P0, 1, g);
            bool sparse = false; /* K == 3: a flagged position in the group (see kOtherFlag) */
            if constexpr (K == 3) {
                sparse = norm2_group_rows(block, P, g, m, tag, h);
            } else {
                h[w * 32 + t] =
                    tagged_rows4<T>(P0.partials[1] + g * C * Tagged<T>::kWords, 4 * w, t, m, tag);
                block.sync();
            }
            CR_TRACE(if (block.thread_rank() == 0) trace_at(kTrLoaded);)
            if (w == 0) {
                T v[K];
#pragma unroll
                for (int j = 0; j < K; j++) {
                    if constexpr (K == 3)
                        if (j != 1 && !sparse) { /* every partial +0.0: so is their sum */
                            v[j] = T(0.0);
                            continue;
                        }
                    Lanes<T> hs[8];
#pragma unroll
                    for (int q = 0; q < 8; q++) hs[q] = h[(j * 8 + q) * 32 + t];
                    v[j] = lane_tree(warp, rows_from_quarters(hs));
                }
                climb<K>(warp, P, 2, g, v, i == 0 && P0.levels > 2, got, tag);
            }
            block.sync(); /* h is read before the next group overwrites it */
        }
    }
}

/* The partial arrays, counters and epoch of a launch over n elements in the handle's
 * workspace (the layout of cr_gpu_workspace_bytes() in gpu_host.c): tagged partial arrays one after
 * the other, each 256-byte aligned; the counters region starts with the epoch word, then
 * 256 bytes on, the counters, zero between launches. Sets P.count and P.levels too. */
template <typename T> void tree_setup(Params<T> &P, uint64_t n, void *partials, void *counters)
{
    P.levels = cr_level_counts(n, Layout<T>::kChunk, P.count);
    char *pp = static_cast<char *>(partials);
    P.epoch = static_cast<unsigned int *>(counters);
    unsigned int *cc = static_cast<unsigned int *>(counters) + 256 / sizeof(unsigned int);
    for (int k = 1; k < P.levels; k++) {
        P.partials[k] = reinterpret_cast<Word *>(pp);
        pp += (P.count[k] * Tagged<T>::kWords * sizeof(Word) + 255) / 256 * 256;
        P.counters[k + 1] = cc;
        cc += P.count[k + 1];
    }
}

} // namespace

#endif
