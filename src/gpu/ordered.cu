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
 * NORM2 (three leaf classes): one launch too, norm2_kernel, whose three trees climb side by side
 * and meet at the top (tree.cuh's join_three).
 *
 * Who computes what in level 1: one warp reduces one chunk, as in canonical.cu. Every load is
 * 16 bytes: 4 float32, 2 float64 or 8 half-precision elements. A float32 or float64 row (128 or
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
 * (not 16-byte aligned, for either operand of DOT) and the ragged last chunk use element loads
 * with the same mapping; lanes past the end are -0.0 leaves, the padding of the contract.
 *
 * Compiled with --fmad=false (CMakeLists.txt): a product and the addition that follows are two
 * roundings, as on the CPU. */
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "gpu/kernel/grid.cuh"   /* occupancy, grid_blocks */
#include "gpu/kernel/load.cuh"   /* load16: the stream-once policy */
#include "gpu/kernel/traits.cuh" /* Elem, Layout */
#include "gpu/kernel/tree.cuh"   /* the levels above level 1, and the final rule */
#include "gpu/launch.h"

namespace {

/* kMedium: NORM2's medium-class pass (norm2_kernel): per element its square (the medium leaf,
 * |x|*|x| == x*x) and, beside the tree, the input type's Ext (the largest |x| and the smallest
 * nonzero |x| of the chunk), which says whether the chunk has an element of another class.
 * Not a leaf of the contract by itself. */
enum class Leaf { kWiden, kSquare, kProduct, kNorm2, kMedium };

/* Input element types (on the kernel layer's Elem): how 16 bytes decode into elements, and how
 * an element widens.
 *
 * Ext: NORM2's medium pass notes, beside the tree of squares, what says whether a chunk has
 * an element outside the medium class (values.h's class tests): the largest |x| and the
 * smallest nonzero |x|, kept as the bits of |x| where those order as the values do. For
 * float32 and the 16-bit types: integer max / min on the bits (sm_90's 3-input and add-min
 * instructions, two 16-bit halves at once for the 16-bit types); zero excluded from the
 * minimum by taking bits - 1 with wrap-around. NaN and inf have bits above the big threshold:
 * their chunks take the three-class path, which applies the rules to them. Float64: the same
 * on a 32-bit key (below): Hopper has no max / min instruction for doubles. Integer max /
 * min on the bits take far fewer instructions than float max / min on the values; the time
 * gained is smaller: these loops are not bound by their instruction count alone
 * (docs/perf-log). */
struct Ext {
    unsigned int mx = 0, mn = 0xffffffffu; /* the largest bits; the smallest of (bits - 1) */
};
__device__ __forceinline__ Ext ext_shfl(const cg::thread_block_tile<32> &w, const Ext &e, int d)
{
    return {w.shfl_xor(e.mx, d), w.shfl_xor(e.mn, d)};
}

struct F32 : Elem<COOPREDUCE_FLOAT32> {
    using Acc = float;
    static constexpr int kVec = kPerVec; /* elements per 16-byte load: the lanes of a thread */
    static __device__ __forceinline__ float at(const void *p, uint64_t i)
    {
        return __ldg(static_cast<const float *>(p) + i);
    }
    static __device__ __forceinline__ void decode(const uint4 &q, float *v)
    {
        v[0] = __uint_as_float(q.x);
        v[1] = __uint_as_float(q.y);
        v[2] = __uint_as_float(q.z);
        v[3] = __uint_as_float(q.w);
    }
    static __device__ __forceinline__ void ext_fold(Ext &e, const uint4 &q)
    {
        const unsigned int a0 = q.x & 0x7fffffffu, a1 = q.y & 0x7fffffffu;
        const unsigned int a2 = q.z & 0x7fffffffu, a3 = q.w & 0x7fffffffu;
        e.mx = __vimax3_u32(__vimax3_u32(e.mx, a0, a1), a2, a3);
        e.mn = __viaddmin_u32(
            a0, 0xffffffffu,
            __viaddmin_u32(a1, 0xffffffffu,
                           __viaddmin_u32(a2, 0xffffffffu, __viaddmin_u32(a3, 0xffffffffu, e.mn))));
    }
    static __device__ __forceinline__ Ext ext_add(const Ext &a, const Ext &b)
    {
        return {max(a.mx, b.mx), min(a.mn, b.mn)};
    }
    static __device__ __forceinline__ bool ext_other(const Ext &e)
    {
        return e.mx > CR_NORM2_BIG_BITS_F32 || e.mn < CR_NORM2_SML_BITS_F32 - 1u;
    }
};
struct F64 : Elem<COOPREDUCE_FLOAT64> {
    using Acc = double;
    static constexpr int kVec = kPerVec;
    static __device__ __forceinline__ double at(const void *p, uint64_t i)
    {
        return __ldg(static_cast<const double *>(p) + i);
    }
    static __device__ __forceinline__ void decode(const uint4 &q, double *v)
    {
        v[0] = __hiloint2double((int)q.y, (int)q.x);
        v[1] = __hiloint2double((int)q.w, (int)q.z);
    }
    /* The class tests on a 32-bit key per element: the high word of |x| with its lowest bit
     * set when the low word is nonzero. TBIG and TSML are powers of two (low words zero), so
     * |x| < TSML iff key < SML_HI, and |x| > TBIG implies key >= BIG_HI (TBIG itself, and the
     * values within 2^-20 above it, also test as big: their chunks take the three-class path,
     * which gives the same bits, only slower). The bit set for a nonzero low word keeps the
     * tiniest subnormals (high word zero) from passing for zero. */
    static __device__ __forceinline__ unsigned int key(unsigned int lo, unsigned int hi)
    {
        return (hi & 0x7fffffffu) | min(lo, 1u);
    }
    static __device__ __forceinline__ void ext_fold(Ext &e, const uint4 &q)
    {
        const unsigned int k0 = key(q.x, q.y), k1 = key(q.z, q.w);
        e.mx = __vimax3_u32(e.mx, k0, k1);
        e.mn = __viaddmin_u32(k0, 0xffffffffu, __viaddmin_u32(k1, 0xffffffffu, e.mn));
    }
    static __device__ __forceinline__ Ext ext_add(const Ext &a, const Ext &b)
    {
        return {max(a.mx, b.mx), min(a.mn, b.mn)};
    }
    static __device__ __forceinline__ bool ext_other(const Ext &e)
    {
        return e.mx >= CR_NORM2_BIG_HI_F64 || e.mn < CR_NORM2_SML_HI_F64 - 1u;
    }
};
template <bool kBrain> struct Half : Elem<kBrain ? COOPREDUCE_BFLOAT16 : COOPREDUCE_FLOAT16> {
    using Acc = float;
    static constexpr int kVec = Half::kPerVec;
    /* Exact either way; float16 through the hardware conversion (cvt.f32.f16), whose result
     * equals values.h's cr_f16_to_f32 for every number (NaN payloads may differ, and every NaN
     * result is made the canonical NaN at the end) at a fraction of its integer work, which
     * makes the float16 sum as fast as bfloat16's (docs/PERF.md). */
    static __device__ __forceinline__ float widen(unsigned int h)
    {
        if constexpr (kBrain)
            return __uint_as_float(h << 16);
        else
            return __half2float(__ushort_as_half((unsigned short)h));
    }
    static __device__ __forceinline__ float at(const void *p, uint64_t i)
    {
        return widen(__ldg(static_cast<const unsigned short *>(p) + i));
    }
    static __device__ __forceinline__ void decode(const uint4 &q, float *v)
    {
        const unsigned int w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int k = 0; k < 4; k++) { /* little-endian: the lower address is the low half */
            v[2 * k] = widen(w[k] & 0xffffu);
            v[2 * k + 1] = widen(w[k] >> 16);
        }
    }
    static __device__ __forceinline__ void ext_fold(Ext &e, const uint4 &q)
    {
        const unsigned int a0 = q.x & 0x7fff7fffu, a1 = q.y & 0x7fff7fffu;
        const unsigned int a2 = q.z & 0x7fff7fffu, a3 = q.w & 0x7fff7fffu;
        e.mx = __vimax3_u16x2(__vimax3_u16x2(e.mx, a0, a1), a2, a3);
        e.mn = __viaddmin_u16x2(
            a0, 0xffffffffu,
            __viaddmin_u16x2(
                a1, 0xffffffffu,
                __viaddmin_u16x2(a2, 0xffffffffu, __viaddmin_u16x2(a3, 0xffffffffu, e.mn))));
    }
    static __device__ __forceinline__ Ext ext_add(const Ext &a, const Ext &b)
    {
        return {__vmaxu2(a.mx, b.mx), __vminu2(a.mn, b.mn)};
    }
    static __device__ __forceinline__ bool ext_other(const Ext &e)
    {
        constexpr unsigned int big = kBrain ? CR_NORM2_BIG_BITS_BF16 : CR_NORM2_BIG_BITS_F16;
        constexpr unsigned int sml = kBrain ? CR_NORM2_SML_BITS_BF16 : CR_NORM2_SML_BITS_F16;
        const unsigned int mx = max(e.mx & 0xffffu, e.mx >> 16),
                           mn = min(e.mn & 0xffffu, e.mn >> 16);
        return mx > big ||
               mn + 1u < sml; /* mn < sml - 1, without a comparison with 0 for float16 */
    }
};

/* The trees of one element (and, for DOT, its partner): K leaves of the accumulation type. NORM2's
 * medium pass (kMedium) has one tree, the squares, and its Ext beside it. */
template <Leaf LF> constexpr int kLeaves = LF == Leaf::kNorm2 ? 3 : 1;

template <Leaf LF, typename A> __device__ __forceinline__ void make_leaf(A a, A b, A *out)
{
    if constexpr (LF == Leaf::kWiden) {
        out[0] = a;
    } else if constexpr (LF == Leaf::kSquare || LF == Leaf::kMedium) {
        out[0] = a * a; /* kMedium: the medium leaf, |x|*|x| == x*x */
    } else if constexpr (LF == Leaf::kProduct) {
        out[0] = a * b;
    } else if constexpr (sizeof(A) == 4) {
        cr_norm2_leaf_F32(a, &out[0], &out[1], &out[2]);
    } else {
        cr_norm2_leaf_F64(a, &out[0], &out[1], &out[2]);
    }
}

/* The shape of one chunk for input type In: lanes W, lanes per thread kVec, rows per thread. */
template <typename In> struct Shape {
    using Acc = typename In::Acc;
    static constexpr int kLanes = sizeof(Acc) == 4 ? CR_LANES_F32 : CR_LANES_F64;
    static constexpr uint64_t kChunk = (uint64_t)CR_ROWS * kLanes;
    static constexpr int kVec = In::kVec;
    static constexpr int kThreadsPerRow = kLanes / kVec; /* 32, or 16 for 16-bit input */
    static constexpr int kHalves = 32 / kThreadsPerRow;  /* 1, or 2 */
    static constexpr int kRows = CR_ROWS / kHalves;      /* rows per thread: 32 or 16 */
    static_assert(kThreadsPerRow * kHalves == 32, "a row is one or two loads of the warp");
};

/* A thread's leaves of one row: kVec lanes, K leaves each. (kMedium's Ext is folded into one
 * accumulator per chunk as the loads are consumed, BatchTree, not carried through the tree: no
 * merging of row Exts: fewer instructions and spills, no measurable change in time.) */
template <typename In, Leaf LF> struct RowVals {
    typename In::Acc v[In::kVec][kLeaves<LF>];
};

template <typename In, Leaf LF>
__device__ __forceinline__ RowVals<In, LF> add(const RowVals<In, LF> &a, const RowVals<In, LF> &b)
{
    RowVals<In, LF> r;
#pragma unroll
    for (int j = 0; j < In::kVec; j++)
#pragma unroll
        for (int k = 0; k < kLeaves<LF>; k++) r.v[j][k] = a.v[j][k] + b.v[j][k];
    return r;
}

template <typename In, Leaf LF>
__device__ __forceinline__ RowVals<In, LF> leaves_of(const uint4 &qx, const uint4 &qy)
{
    using Acc = typename In::Acc;
    Acc a[In::kVec], b[In::kVec];
    In::decode(qx, a);
    if constexpr (LF == Leaf::kProduct) In::decode(qy, b);
    RowVals<In, LF> r;
#pragma unroll
    for (int j = 0; j < In::kVec; j++)
        make_leaf<LF>(a[j], LF == Leaf::kProduct ? b[j] : a[j], r.v[j]);
    return r;
}

template <typename In> struct Args {
    const void *x, *y;
    uint64_t n;
};

/* The pairwise tree of the leaves of rows i0 .. i0+R-1 of a batch of loaded rows, built in
 * tree order so that only the loads and log2(R) nodes are live at once; kMedium folds the rows
 * into ext too. */
template <typename In, Leaf LF, int R> struct BatchTree {
    static __device__ __forceinline__ RowVals<In, LF> run(const uint4 *qx, const uint4 *qy, int i0,
                                                          Ext &ext)
    {
        const RowVals<In, LF> l = BatchTree<In, LF, R / 2>::run(qx, qy, i0, ext);
        const RowVals<In, LF> r = BatchTree<In, LF, R / 2>::run(qx, qy, i0 + R / 2, ext);
        return add(l, r);
    }
};
template <typename In, Leaf LF> struct BatchTree<In, LF, 1> {
    static __device__ __forceinline__ RowVals<In, LF> run(const uint4 *qx, const uint4 *qy, int i0,
                                                          Ext &ext)
    {
        if constexpr (LF == Leaf::kMedium) In::ext_fold(ext, qx[i0]);
        return leaves_of<In, LF>(qx[i0], qy[i0]);
    }
};

/* Rows loaded at once per thread: 16 (16 loads of 16 bytes in flight); 8 where each row is two
 * loads (DOT) or three leaves (NORM2), so that the batch fits in registers beside its tree. */
template <Leaf LF>
constexpr int kBatchRows =
    LF == Leaf::kWiden || LF == Leaf::kSquare || LF == Leaf::kMedium ? 16 : 8;

/* The tree of kBatchRows rows r0 .. of this thread's half, from full, aligned input: all the
 * batch's loads issued first, then the pairwise tree. */
template <typename In, Leaf LF, bool kStream>
__device__ __forceinline__ RowVals<In, LF> rows_aligned(const Args<In> &A, uint64_t base, int r0,
                                                        int lane0, Ext &ext)
{
    constexpr int R = kBatchRows<LF>;
    uint4 qx[R], qy[R];
#pragma unroll
    for (int i = 0; i < R; i++) {
        const uint64_t e = base + (uint64_t)(r0 + i) * Shape<In>::kLanes + lane0;
        qx[i] = load16<kStream>(static_cast<const char *>(A.x) + e * In::kBytes);
        qy[i] = LF == Leaf::kProduct
                    ? load16<kStream>(static_cast<const char *>(A.y) + e * In::kBytes)
                    : qx[i];
    }
    return BatchTree<In, LF, R>::run(qx, qy, 0, ext);
}

/* The same for a chunk of m valid elements, by element loads: misaligned input or the ragged
 * chunk. Lanes at or past m are -0.0 leaves. Out of line, so the hot loop keeps its registers. */
template <typename In, Leaf LF>
__device__ __noinline__ RowVals<In, LF> rows_guarded(const Args<In> &A, uint64_t base, int half,
                                                     int lane0, int m)
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    static_assert(LF != Leaf::kMedium,
                  "kMedium is for full, aligned chunks (BatchTree folds its Ext)");
    RowVals<In, LF> t[S::kRows];
#pragma unroll 1
    for (int i = 0; i < S::kRows; i++) {
        const int first = (half * S::kRows + i) * S::kLanes + lane0;
#pragma unroll
        for (int j = 0; j < In::kVec; j++) {
            if (first + j < m) {
                const Acc a = In::at(A.x, base + first + j);
                const Acc b = LF == Leaf::kProduct ? In::at(A.y, base + first + j) : a;
                make_leaf<LF>(a, b, t[i].v[j]);
            } else {
#pragma unroll
                for (int k = 0; k < kLeaves<LF>; k++) t[i].v[j][k] = Acc(-0.0);
            }
        }
    }
#pragma unroll
    for (int w = 1; w < S::kRows; w *= 2)
#pragma unroll
        for (int i = 0; i < S::kRows; i += 2 * w) t[i] = add(t[i], t[i + w]);
    return t[0];
}

/* The chunk tree above the rows of one leaf, from this thread's kVec lane values (its row
 * tree): the top row level across the two halves (16-bit input), the lane levels inside the
 * thread, then across threads. Every thread returns it. Constant loop bounds keep v[] in
 * registers (bounds that depend on the leaf index put it in local memory). */
template <typename In>
__device__ __forceinline__ typename In::Acc chunk_tree(const cg::thread_block_tile<32> &warp,
                                                       typename In::Acc (&v)[In::kVec])
{
    using S = Shape<In>;
#pragma unroll
    for (int j = 0; j < In::kVec; j++)
        if constexpr (S::kHalves == 2) v[j] = v[j] + warp.shfl_xor(v[j], 16);
#pragma unroll
    for (int w = 1; w < In::kVec; w *= 2)
#pragma unroll
        for (int j = 0; j < In::kVec; j += 2 * w) v[j] = v[j] + v[j + w];
#pragma unroll
    for (int d = 1; d < S::kThreadsPerRow; d *= 2) v[0] = v[0] + warp.shfl_xor(v[0], d);
    return v[0];
}

/* The values finish_chunk gives for a chunk: the K trees' values; kMedium: the tree of squares and
 * a flag, nonzero when the chunk has an element outside the medium class (uniform across the
 * warp). */
template <Leaf LF> constexpr int kOut = LF == Leaf::kMedium ? 2 : kLeaves<LF>;

/* The chunk's values from this thread's row tree and, for kMedium, its Ext (every thread
 * returns them). */
template <typename In, Leaf LF>
__device__ __forceinline__ void finish_chunk(const cg::thread_block_tile<32> &warp,
                                             const RowVals<In, LF> &s, const Ext &ext,
                                             typename In::Acc *out)
{
#pragma unroll
    for (int k = 0; k < kLeaves<LF>; k++) {
        typename In::Acc v[In::kVec];
#pragma unroll
        for (int j = 0; j < In::kVec; j++) v[j] = s.v[j][k];
        out[k] = chunk_tree<In>(warp, v);
    }
    if constexpr (LF == Leaf::kMedium) { /* max and min: any order gives the same */
        Ext e = ext;
#pragma unroll
        for (int d = 1; d < 32; d *= 2) e = In::ext_add(e, ext_shfl(warp, e, d));
        out[1] = In::ext_other(e) ? 1 : 0;
    }
}

/* The row trees of this thread over a full, aligned chunk: its rows in 1, 2 or 4 batches,
 * combined as the row tree: b0, b0 + b1, or (b0 + b1) + (b2 + b3). */
template <typename In, Leaf LF, bool kStream>
__device__ __forceinline__ RowVals<In, LF> full_chunk_rows(const Args<In> &A, uint64_t base,
                                                           int half, int lane0, Ext &ext)
{
    using S = Shape<In>;
    constexpr int R = kBatchRows<LF>, kBatches = S::kRows / R;
    static_assert(kBatches == 1 || kBatches == 2 || kBatches == 4, "1, 2 or 4 batches");
    const int r0 = half * S::kRows;
    RowVals<In, LF> s = rows_aligned<In, LF, kStream>(A, base, r0, lane0, ext);
    if constexpr (kBatches >= 2)
        s = add(s, rows_aligned<In, LF, kStream>(A, base, r0 + R, lane0, ext));
    if constexpr (kBatches == 4) {
        const RowVals<In, LF> s2 = rows_aligned<In, LF, kStream>(A, base, r0 + 2 * R, lane0, ext);
        s = add(s, add(s2, rows_aligned<In, LF, kStream>(A, base, r0 + 3 * R, lane0, ext)));
    }
    return s;
}

/* The streamed path of the one-launch kernel: a warp's full, aligned chunks one after the
 * other, as batches of rows double-buffered in registers (as canonical.cu's stream_chunk), so
 * that loads stay in flight while a batch's tree, the lane tree and the shuffles run, also
 * across chunks. A batch is 8 16-byte loads per thread (4 rows of two loads for DOT): two
 * batches are 64 registers. The batch trees combine pairwise — the same perfect row tree as
 * full_chunk_rows, whatever the batch size. */
template <Leaf LF> constexpr int kStreamRows = LF == Leaf::kProduct ? 4 : 8;
/* DOT of float32 and float64 stays on the one-chunk-at-a-time path: its eight batches of two
 * arrays spill, and that path runs at the read ceiling already (docs/PERF.md). */
template <typename In, Leaf LF>
constexpr bool kStreamed = !(LF == Leaf::kProduct && In::kBytes >= 4);

template <Leaf LF> struct RowLoads {
    uint4 x[kStreamRows<LF>];
    uint4 y[LF == Leaf::kProduct ? kStreamRows<LF> : 1];
};

/* Issues the loads of rows r0 .. r0 + kStreamRows - 1 of the chunk at element `base`. */
template <typename In, Leaf LF, bool kStream>
__device__ __forceinline__ void load_rows(RowLoads<LF> &b, const Args<In> &A, uint64_t base, int r0,
                                          int lane0)
{
#pragma unroll
    for (int i = 0; i < kStreamRows<LF>; i++) {
        const uint64_t e = base + (uint64_t)(r0 + i) * Shape<In>::kLanes + lane0;
        b.x[i] = load16<kStream>(static_cast<const char *>(A.x) + e * In::kBytes);
        if constexpr (LF == Leaf::kProduct)
            b.y[i] = load16<kStream>(static_cast<const char *>(A.y) + e * In::kBytes);
    }
}

/* Where the loads after the last batch of a chunk go: the next chunk's first batch, if any. */
struct Next {
    uint64_t base;
    bool has;
};

/* The tree of batches K0 .. K0 + CNT - 1 of this thread's rows of the chunk at `base` (rows r0
 * + R*k ..). Batch k sits in buf[k & 1]; the step of batch k first issues the loads of batch
 * k + 1 (or of the next chunk's batch 0) into the other buffer, then computes batch k's tree. */
template <typename In, Leaf LF, bool kStream, int K0, int CNT> struct BatchStream {
    static __device__ __forceinline__ RowVals<In, LF> run(RowLoads<LF> (&buf)[2], const Args<In> &A,
                                                          uint64_t base, int r0, int lane0,
                                                          const Next &nx, Ext &ext)
    {
        const RowVals<In, LF> l =
            BatchStream<In, LF, kStream, K0, CNT / 2>::run(buf, A, base, r0, lane0, nx, ext);
        const RowVals<In, LF> r = BatchStream<In, LF, kStream, K0 + CNT / 2, CNT / 2>::run(
            buf, A, base, r0, lane0, nx, ext);
        return add(l, r);
    }
};
template <typename In, Leaf LF, bool kStream, int K0> struct BatchStream<In, LF, kStream, K0, 1> {
    static __device__ __forceinline__ RowVals<In, LF> run(RowLoads<LF> (&buf)[2], const Args<In> &A,
                                                          uint64_t base, int r0, int lane0,
                                                          const Next &nx, Ext &ext)
    {
        constexpr int R = kStreamRows<LF>, NB = Shape<In>::kRows / R;
        static_assert(NB % 2 == 0,
                      "an even number of batches: the next chunk's first lands in buf[0]");
        if constexpr (K0 + 1 < NB)
            load_rows<In, LF, kStream>(buf[(K0 + 1) & 1], A, base, r0 + (K0 + 1) * R, lane0);
        else if (nx.has)
            load_rows<In, LF, kStream>(buf[0], A, nx.base, r0, lane0);
        const RowLoads<LF> &b = buf[K0 & 1];
        return BatchTree<In, LF, R>::run(b.x, LF == Leaf::kProduct ? b.y : b.x, 0, ext);
    }
};

/* The warp's full, aligned chunks c0, c0 + stride, ... below c1; emit(c, v) receives each
 * chunk's values (in every thread). */
template <typename In, Leaf LF, bool kStream, typename Emit>
__device__ __forceinline__ void stream_chunks(const cg::thread_block_tile<32> &warp,
                                              const Args<In> &A, uint64_t c0, uint64_t c1,
                                              uint64_t stride, Emit emit)
{
    using S = Shape<In>;
    constexpr int NB = S::kRows / kStreamRows<LF>;
    const int t = warp.thread_rank(), half = t / S::kThreadsPerRow;
    const int lane0 = (t % S::kThreadsPerRow) * In::kVec, r0 = half * S::kRows;
    RowLoads<LF> buf[2];
    load_rows<In, LF, kStream>(buf[0], A, c0 * S::kChunk, r0, lane0);
    for (uint64_t c = c0; c < c1; c += stride) {
        const Next nx = {(c + stride) * S::kChunk, c + stride < c1};
        Ext ext;
        const RowVals<In, LF> rows =
            BatchStream<In, LF, kStream, 0, NB>::run(buf, A, c * S::kChunk, r0, lane0, nx, ext);
        typename In::Acc v[kOut<LF>];
        finish_chunk<In, LF>(warp, rows, ext, v);
        emit(c, v);
    }
}

/* NORM2's three classes of chunk c by element loads (from L2, the medium pass having just read
 * the chunk): for a chunk with an element outside the medium class, and the ragged chunk. */
template <typename In>
__device__ __noinline__ void norm2_all_classes(const cg::thread_block_tile<32> &warp,
                                               const Args<In> &A, uint64_t c,
                                               typename In::Acc (&v)[3])
{
    using S = Shape<In>;
    const int t = warp.thread_rank(), half = t / S::kThreadsPerRow;
    const int lane0 = (t % S::kThreadsPerRow) * In::kVec;
    const uint64_t base = c * S::kChunk, rest = A.n - base;
    finish_chunk<In, Leaf::kNorm2>(
        warp,
        rows_guarded<In, Leaf::kNorm2>(A, base, half, lane0,
                                       rest < S::kChunk ? (int)rest : (int)S::kChunk),
        Ext(), v);
}

/* Level 1 off the stream: chunk c of the input (misaligned, ragged, or the only chunk) to its
 * K partials. NORM2 tries the medium pass first, as norm2_kernel does, and falls back to the
 * three classes by element loads. */
template <typename In, Leaf LF, bool kStream>
__device__ __forceinline__ void chunk_values(const cg::thread_block_tile<32> &warp,
                                             const Args<In> &A, uint64_t c, bool aligned,
                                             typename In::Acc (&v)[kLeaves<LF>])
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    const int t = warp.thread_rank(), half = t / S::kThreadsPerRow;
    const int lane0 = (t % S::kThreadsPerRow) * In::kVec;
    const uint64_t base = c * S::kChunk;
    const bool full = aligned && base + S::kChunk <= A.n;
    bool done = false;
    if constexpr (LF == Leaf::kNorm2) {
        if (full) {
            Acc m[kOut<Leaf::kMedium>];
            Ext ext;
            const RowVals<In, Leaf::kMedium> rows =
                full_chunk_rows<In, Leaf::kMedium, kStream>(A, base, half, lane0, ext);
            finish_chunk<In, Leaf::kMedium>(warp, rows, ext, m);
            if (m[1] == 0) { /* uniform across the warp */
                v[0] = v[2] = (Acc)0;
                v[1] = m[0];
                done = true;
            }
        }
        if (!done) norm2_all_classes(warp, A, c, v);
    } else {
        if (full) {
            Ext ext; /* unused: one class */
            finish_chunk<In, LF>(warp, full_chunk_rows<In, LF, kStream>(A, base, half, lane0, ext),
                                 ext, v);
        } else {
            const uint64_t rest = A.n - base;
            finish_chunk<In, LF>(
                warp,
                rows_guarded<In, LF>(A, base, half, lane0,
                                     rest < S::kChunk ? (int)rest : (int)S::kChunk),
                Ext(), v);
        }
    }
}

constexpr int kWarps = kWarpsPerBlock; /* tree.cuh's post_tickets reduces a group with 8 warps */

/* Block b owns a balanced contiguous range of chunks; its warps take them round-robin. */
__device__ __forceinline__ void block_chunks(uint64_t chunks, uint64_t *c0, uint64_t *c1)
{
    balanced_range(chunks, gridDim.x, blockIdx.x, c0, c1);
}

/* One launch for a single leaf class (SUM of 16-bit input, MEAN of 16-bit input, SUMSQ, DOT):
 * level 1 here, then tree.cuh's tagged hand-off climbs the canonical tree of the partials and
 * the warp that completes it applies the operation's final rule (P.fin). The same tree as the
 * canonical sum of the level-1 partials, so the same bits as the multi-launch path and the CPU.
 * A single chunk (P.levels == 1) is the result itself: no partial, no ticket. */
template <typename In, Leaf LF, bool kStream>
__global__ void __launch_bounds__(32 * kWarps, 2)
    fused_kernel(const __grid_constant__ Args<In> A,
                 const __grid_constant__ Params<typename In::Acc> P, int aligned)
{
    using Acc = typename In::Acc;
    static_assert(kLeaves<LF> == 1, "one leaf class: one tree");
    __shared__ Lanes<Acc> quarter[2][4][32]; /* post_tickets' batch trees */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const unsigned int tag = P.levels > 1 ? launch_tag(P) : 0u;
    uint64_t b0, b1;
    block_chunks(P.count[1], &b0, &b1);
    auto emit = [&](uint64_t c, const Acc(&v)[1]) {
        if (P.levels == 1)
            write_result(warp, P, v[0], 0u);
        else if (warp.thread_rank() == 0)
            store_partial(P, 1, c, v[0], tag);
    };
    uint64_t c = b0 + warp.meta_group_rank();
    /* [0, full): streamed (not a single chunk: its emit calls the final rule, and the stream
     * loop keeps no call) */
    const uint64_t full = aligned && P.levels > 1 ? A.n / Shape<In>::kChunk : 0;
    if (kStreamed<In, LF> && c < b1 && c < full) {
        const uint64_t stop = b1 < full ? b1 : full;
        stream_chunks<In, LF, kStream>(warp, A, c, stop, kWarps, emit);
        c += (stop - c + kWarps - 1) / kWarps * kWarps; /* first chunk at or past stop */
    }
    for (; c < b1; c += kWarps) { /* misaligned input, or the ragged last chunk */
        Acc v[1];
        chunk_values<In, LF, kStream>(warp, A, c, aligned != 0, v);
        emit(c, v);
    }
    if (P.levels == 1 || b0 == b1) return; /* uniform across the block */
    post_tickets(block, warp, P, b0, b1, quarter, tag);
}

/* NORM2's three trees (big, medium, small), one launch. Level 1 tries the medium class alone
 * (one tree of squares instead of three, streamed like fused_kernel), noting beside the tree
 * the chunk's largest |x| and smallest nonzero |x| (the input type's Ext, on bits): if either
 * lies outside the medium class, the chunk is done again with all three classes (from L2, by
 * element loads: rare for most data). Otherwise every element is medium or zero: the medium leaves are the squares, and the
 * big and small values are trees of +0.0 leaves, which are +0.0 and need no computing. A zero
 * is a small-class element whose leaves are all +0.0, so taking it as medium changes no bit and
 * keeps data with zeros on the fast path (random 16-bit data holds many zeros, which would
 * otherwise send most chunks down the slow path). A NaN or an inf has bits above the big threshold, so its chunk takes the
 * three-class path too, which applies values.h's rules to it (a NaN is medium there).
 * Each chunk posts its three partials into three trees (T.p[k], one shared epoch), which climb
 * side by side; their top warps meet in tree.cuh's join_three, and the third combines them. */
template <typename Acc> struct Trees3 {
    Params<Acc> p[3];
};

template <typename In, bool kStream>
__global__ void __launch_bounds__(32 * kWarps, 2)
    norm2_kernel(const __grid_constant__ Args<In> A,
                 const __grid_constant__ Trees3<typename In::Acc> T, int aligned)
{
    using Acc = typename In::Acc;
    __shared__ Lanes<Acc> quarter[2][4][32]; /* post_tickets' batch trees */
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const Params<Acc> &P = T.p[1];
    const unsigned int tag = P.levels > 1 ? launch_tag(P) : 0u;
    uint64_t b0, b1;
    block_chunks(P.count[1], &b0, &b1);
    auto emit3 = [&](uint64_t c, const Acc(&v)[3]) {
        if (warp.thread_rank() != 0) return;
        if (P.levels == 1)
            write_final(P.fin, P.count[0], (double)v[0], (double)v[1], (double)v[2], P.out);
        else
#pragma unroll
            for (int k = 0; k < 3; k++) store_partial(T.p[k], 1, c, v[k], tag);
    };
    /* The stream keeps no call in its loop (a call would save the in-flight loads' registers,
     * waiting for them): a chunk with another class is marked in `redo` (bit j: the j-th chunk
     * of the segment) and done after the segment, 64 chunks a segment. */
    uint64_t redo = 0, seg = 0, j = 0;
    auto emit_medium = [&](uint64_t c, const Acc(&m)[kOut<Leaf::kMedium>]) {
        if (m[1] != 0) { /* another class: uniform across the warp */
            redo |= 1ull << j;
        } else if (warp.thread_rank() == 0) {
            store_partial(T.p[0], 1, c, (Acc)0, tag);
            store_partial(T.p[1], 1, c, m[0], tag);
            store_partial(T.p[2], 1, c, (Acc)0, tag);
        }
        j++;
    };
    uint64_t c = b0 + warp.meta_group_rank();
    const uint64_t full = aligned && P.levels > 1 ? A.n / Shape<In>::kChunk : 0; /* streamed */
    for (; c < b1 && c < full; c = seg) {
        const uint64_t stop = b1 < full ? b1 : full, span = stop - c;
        const uint64_t end = span > 64 * (uint64_t)kWarps ? c + 64 * (uint64_t)kWarps : stop;
        redo = 0;
        j = 0;
        stream_chunks<In, Leaf::kMedium, kStream>(warp, A, c, end, kWarps, emit_medium);
        for (uint64_t r = redo; r; r &= r - 1) {
            const uint64_t cr = c + (uint64_t)(__ffsll((long long)r) - 1) * kWarps;
            Acc v[3];
            norm2_all_classes(warp, A, cr, v);
            emit3(cr, v);
        }
        seg = c + (end - c + kWarps - 1) / kWarps * kWarps; /* first chunk at or past end */
    }
    for (; c < b1; c += kWarps) { /* misaligned input, or the ragged last chunk */
        Acc v[3];
        chunk_values<In, Leaf::kNorm2, kStream>(warp, A, c, aligned != 0, v);
        emit3(c, v);
    }
    if (P.levels == 1 || b0 == b1) return; /* uniform across the block */
#pragma unroll 1
    for (int k = 0; k < 3; k++) post_tickets(block, warp, T.p[k], b0, b1, quarter, tag);
}

template <typename In, Leaf LF>
cudaError_t launch_fused(const Args<In> &A, const Params<typename In::Acc> &P, int blocks,
                         int stream_once, cudaStream_t stream)
{
    const int aligned =
        (uintptr_t)A.x % 16 == 0 && (LF != Leaf::kProduct || (uintptr_t)A.y % 16 == 0);
    if (stream_once)
        fused_kernel<In, LF, true><<<blocks, 32 * kWarps, 0, stream>>>(A, P, aligned);
    else
        fused_kernel<In, LF, false><<<blocks, 32 * kWarps, 0, stream>>>(A, P, aligned);
    return cudaGetLastError();
}

template <typename In>
cudaError_t fused_for_leaf(int leaf, const void *x, const void *y, uint64_t n, void *out,
                           void *partials, void *counters, const cr_norm2_work *w3,
                           const Final &fin, int *blocks, int stream_once, cudaStream_t s)
{
    Args<In> A = {};
    A.x = x;
    A.y = y;
    A.n = n;
    Params<typename In::Acc> P = {};
    P.out = out;
    P.fin = fin;
    tree_setup(P, n, partials, counters);
    /* No block without a chunk (a forced grid may ask for more). */
    const uint64_t need = (P.count[1] + kWarps - 1) / kWarps;
    if ((uint64_t)*blocks > need) *blocks = (int)need;
    switch (leaf) {
    case 0: return launch_fused<In, Leaf::kWiden>(A, P, *blocks, stream_once, s);
    case 1: return launch_fused<In, Leaf::kSquare>(A, P, *blocks, stream_once, s);
    case 2: return launch_fused<In, Leaf::kProduct>(A, P, *blocks, stream_once, s);
    default: break;
    }
    /* NORM2: three trees in three workspaces, one epoch (tree 0's), the join in slots. */
    Trees3<typename In::Acc> T = {};
    for (int k = 0; k < 3; k++) {
        Params<typename In::Acc> &Q = T.p[k];
        Q.out = out;
        Q.fin = fin;
        Q.fin.ordered = 2;
        Q.fin.cls = k;
        tree_setup(Q, n, w3->partials[k], w3->counters[k]);
        Q.epoch = w3->epoch;
        Q.fin.slots = static_cast<Word *>(w3->slots);
        Q.fin.join = w3->join;
    }
    const int aligned = (uintptr_t)x % 16 == 0;
    if (stream_once)
        norm2_kernel<In, true><<<*blocks, 32 * kWarps, 0, s>>>(A, T, aligned);
    else
        norm2_kernel<In, false><<<*blocks, 32 * kWarps, 0, s>>>(A, T, aligned);
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
    const uint64_t need = ((c->n + C - 1) / C + kWarps - 1) / kWarps;
    int per_sm = 0;
    cudaError_t e = per_sm_of<In>(c->device, &per_sm);
    if (e != cudaSuccess) return e;
    const int blocks = grid_blocks(need, c->sm_count, per_sm, c->forced_blocks, INT32_MAX);
    g->blocks = (uint64_t)blocks > need ? (int)need : blocks;
    g->threads = 32 * kWarps;
    const uint64_t bytes = c->n * In::kBytes * (c->plan->inputs == 2 ? 2u : 1u);
    g->stream_once = bytes > c->l2_bytes;
    return cudaSuccess;
}

template <typename In>
cudaError_t launch(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g)
{
    const cr_plan *p = c->plan;
    const Final fin = {1, (int)p->op, (int)p->dtype, p->narrow, 0, nullptr, nullptr};
    if (c->n == 0) {
        empty_kernel<<<1, 1, 0, c->stream>>>(fin, c->out);
        return cudaGetLastError();
    }
    return fused_for_leaf<In>((int)p->leaf, c->x, c->y, c->n, c->out, w->tree_partials,
                              w->tree_counters, &w->norm2, fin, &g->blocks, g->stream_once,
                              c->stream);
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
