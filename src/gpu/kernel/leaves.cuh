/* leaves.cuh — level 1 of the canonical order over leaves: one chunk's tree, by one warp.
 *
 * The vocabulary of the canonical-order operations (docs/DETERMINISM.md, "Operations"): how an
 * input type's 16 bytes decode into elements and widen to the accumulation type (F32, F64,
 * Half), the leaves each operation makes of an element (Leaf, make_leaf), how a chunk's rows and
 * lanes map onto the threads of a warp (Shape), and the chunk tree built from them, for full,
 * aligned chunks (full_chunk_rows; stream_chunks, a warp's chunks one after another with the
 * loads of the next batch in flight; both also for misaligned arrays, Shifted) and for ragged
 * or misaligned ones (rows_guarded, rows_used),
 * then across the warp (chunk_tree, finish_chunk). ordered.cu streams a 1-D array's chunks
 * through it; rows.cu gives each row, segment or column its own chunks.
 *
 * Part of the kernel layer (src/gpu/kernel/): included by .cu files only, after traits.cuh,
 * load.cuh and tree.cuh. Compiled with --fmad=false (CMakeLists.txt): a product and the
 * addition that follows are two roundings, as on the CPU. */
#ifndef COOPREDUCE_KERNEL_LEAVES_CUH
#define COOPREDUCE_KERNEL_LEAVES_CUH

#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "gpu/kernel/load.cuh"
#include "gpu/kernel/traits.cuh"
#include "gpu/kernel/tree.cuh"

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
 * (docs/perf-log). The test (ext_other: the largest above a bound or the smallest below one)
 * holds for a merge of Exts exactly when it holds for one of them, so a warp votes on its
 * threads' tests rather than merging their Exts by shuffles. */
struct Ext {
    unsigned int mx = 0, mn = 0xffffffffu; /* the largest bits; the smallest of (bits - 1) */
};

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
    /* widen's inverse, for values the type holds exactly (constants such as -0.0 and 1.0). */
    static __device__ __forceinline__ unsigned int narrow(float v)
    {
        if constexpr (kBrain)
            return __float_as_uint(v) >> 16;
        else
            return __half_as_ushort(__float2half_rn(v));
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

/* The perfect pairwise tree of t[0 .. N) (N a power of two; any type with add), in place:
 * ((t0 + t1) + (t2 + t3)) + ...; returns it. */
template <int N, typename T> __device__ __forceinline__ T pairwise_tree(T (&t)[N])
{
    static_assert(N > 0 && (N & (N - 1)) == 0, "a power of two");
#pragma unroll
    for (int w = 1; w < N; w *= 2)
#pragma unroll
        for (int i = 0; i < N; i += 2 * w) t[i] = add(t[i], t[i + w]);
    return t[0];
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

/* The 16 bytes at byte offset d (a multiple of the element size, below 16) of the 32 in q0, q1.
 * kWords: d is a multiple of 4 (4- and 8-byte elements), no shift within a word. */
template <bool kWords = false>
__device__ __forceinline__ uint4 shift16(const uint4 &q0, const uint4 &q1, unsigned int d)
{
    /* By 8 bytes if d & 8, by 4 if d & 4, by 2 if d & 2: each a byte permute a word (prmt)
     * whose selector says "this word" or "the next". Selects on d, written as such or as an
     * array indexed by d / 4, ptxas put in local memory: the shifted stream spilled. */
    const unsigned int s8 = d & 8 ? 0x7654u : 0x3210u, s4 = d & 4 ? 0x7654u : 0x3210u;
    const unsigned int b0 = __byte_perm(q0.x, q0.z, s8), b1 = __byte_perm(q0.y, q0.w, s8),
                       b2 = __byte_perm(q0.z, q1.x, s8), b3 = __byte_perm(q0.w, q1.y, s8),
                       b4 = __byte_perm(q1.x, q1.z, s8);
    const unsigned int u0 = __byte_perm(b0, b1, s4), u1 = __byte_perm(b1, b2, s4),
                       u2 = __byte_perm(b2, b3, s4), u3 = __byte_perm(b3, b4, s4);
    if constexpr (kWords) return make_uint4(u0, u1, u2, u3);
    const unsigned int b5 = __byte_perm(q1.y, q1.w, s8), u4 = __byte_perm(b4, b5, s4);
    const unsigned int s2 = d & 2 ? 0x5432u : 0x3210u; /* 16-bit elements: d is even */
    return make_uint4(__byte_perm(u0, u1, s2), __byte_perm(u1, u2, s2), __byte_perm(u2, u3, s2),
                      __byte_perm(u3, u4, s2));
}

/* Misaligned input: Shifted<In> is input type In in an array (either array of DOT) that may
 * start past a 16-byte boundary, a view such as x[1:], read by full_chunk_rows and
 * stream_chunks as they read aligned input. Each thread loads the aligned 16-byte block in
 * which its lane group starts; the block after it is the one the next lane group's thread
 * loaded (a shuffle), the next row's first for a row's last lane group, and for the last row of
 * a batch one more load by the thread whose group it is (load_tail); the two blocks shifted by
 * the array's offset past a boundary are the group's 16 bytes. One load a lane group and four
 * shuffles, the next batch's loads in flight as for aligned input. (Two loads a group outside
 * the stream, chunk_used's kLoadWithin, ran at 31-82% of the read: docs/perf-log.) A chunk is
 * read so where every block from the one before its first element to the one after its last
 * lies within the arrays (read_range); the others take chunk_used's loads. */
template <typename In> struct Shifted : In {};
template <typename In> constexpr bool kShifted = false;
template <typename In> constexpr bool kShifted<Shifted<In>> = true;

/* RowShifted<In>: the same loads for chunks that each start at an offset of their own past a
 * boundary: the chunks of rows whose length is not a multiple of 16 bytes, in one array (rows.cu's
 * stream_kernel). A lane group's block is the aligned block its first byte lies in, and a
 * batch's shift is its chunk's offset (every row of a chunk is 512 bytes after the one before). */
template <typename In> struct RowShifted : In {};
template <typename In> constexpr bool kShifted<RowShifted<In>> = true;
template <typename In> constexpr bool kRowShifted = false;
template <typename In> constexpr bool kRowShifted<RowShifted<In>> = true;

/* The byte offset of p past a 16-byte boundary. */
__device__ __forceinline__ unsigned int offset16(const void *p)
{
    return (unsigned int)(reinterpret_cast<uintptr_t>(p) & 15);
}

/* The 16 bytes of the lane group at element e of p (aligned input), or the aligned block they
 * start in (Shifted). */
template <typename In>
__device__ __forceinline__ const char *group_block(const void *p, uint64_t e)
{
    const char *q = static_cast<const char *>(p) + e * In::kBytes;
    if constexpr (kRowShifted<In>)
        q -= offset16(q);
    else if constexpr (kShifted<In>) /* e * kBytes is a multiple of 16 */
        q -= offset16(p);
    return q;
}

/* Shifted: the offset past a boundary of the chunk at element `base` of p. */
template <typename In>
__device__ __forceinline__ unsigned int chunk_offset(const void *p, uint64_t base)
{
    if constexpr (kRowShifted<In>)
        return offset16(static_cast<const char *>(p) + base * In::kBytes);
    else
        return offset16(p);
}

template <typename In, bool kStream>
__device__ __forceinline__ uint4 load_group(const void *p, uint64_t e)
{
    return load16<kStream>(group_block<In>(p, e));
}

/* Shifted: the block after the one in which the lane group at element e of p starts, loaded by
 * the last lane group of a row only (the block no thread of the warp holds); zero elsewhere.
 * Through the read-only path: the next batch's loads read it again. */
template <typename In>
__device__ __forceinline__ uint4 load_tail(const void *p, uint64_t e, int lane0)
{
    uint4 q = make_uint4(0, 0, 0, 0);
    if (lane0 == Shape<In>::kLanes - In::kVec)
        q = __ldg(reinterpret_cast<const uint4 *>(group_block<In>(p, e) + 16));
    return q;
}

__device__ __forceinline__ uint4 shfl16(const uint4 &q, int src)
{
    return make_uint4(__shfl_sync(0xffffffffu, q.x, src), __shfl_sync(0xffffffffu, q.y, src),
                      __shfl_sync(0xffffffffu, q.z, src), __shfl_sync(0xffffffffu, q.w, src));
}

/* Shifted: q[0 .. R) (the blocks of R consecutive rows of this thread's half, loaded by
 * load_group) and tail (load_tail of the last) into the 16 bytes of each row's lane group, for
 * an array d bytes past a boundary. Every thread of the warp takes part (the shuffles); the
 * kernels' blocks are one-dimensional, so the lane is threadIdx.x % 32. */
template <typename In, int R>
__device__ __forceinline__ void shift_rows(uint4 (&q)[R], const uint4 &tail, unsigned int d)
{
    constexpr int TPR = Shape<In>::kThreadsPerRow;
    const int t = (int)(threadIdx.x & 31);
    const int src = (t & ~(TPR - 1)) | ((t + 1) & (TPR - 1)); /* the next lane group's thread */
    const bool last = (t & (TPR - 1)) == TPR - 1;             /* it lies in the next row */
    uint4 s = shfl16(q[0], src);
#pragma unroll
    for (int i = 0; i < R; i++) {
        const uint4 sn = i + 1 < R ? shfl16(q[i + 1], src) : tail;
        q[i] = shift16<In::kBytes >= 4>(q[i], last ? sn : s, d);
        s = sn;
    }
}

/* Shifted: a batch's loads of R rows (x, and y for DOT) of the chunk at element `base`, and their
 * tails, into the rows' 16 bytes. */
template <typename In, Leaf LF, int R, int RY>
__device__ __forceinline__ void shift_batch(uint4 (&qx)[R], uint4 (&qy)[RY], const uint4 &tx,
                                            const uint4 &ty, const Args<In> &A, uint64_t base)
{
    shift_rows<In>(qx, tx, chunk_offset<In>(A.x, base));
    if constexpr (LF == Leaf::kProduct) shift_rows<In>(qy, ty, chunk_offset<In>(A.y, base));
}

/* The chunks [lo, hi) that full_chunk_rows and stream_chunks may read: every full chunk of
 * aligned input; for Shifted input, those whose blocks from the one before the first element
 * (chunk 0's lies before the array) to the one after the last lie within the arrays (both
 * arrays where `two`). */
template <typename In>
__device__ __forceinline__ void read_range(const Args<In> &A, bool two, uint64_t *lo, uint64_t *hi)
{
    constexpr uint64_t C = Shape<In>::kChunk;
    static_assert(!kRowShifted<In>, "one offset for the whole array");
    if constexpr (!kShifted<In>) {
        *lo = 0;
        *hi = A.n / C;
    } else {
        const unsigned int d = two ? min(offset16(A.x), offset16(A.y)) : offset16(A.x);
        const uint64_t bytes = A.n * In::kBytes + d; /* from x's boundary to its end */
        *lo = 1;
        *hi = bytes >= 16 ? (bytes - 16) / (C * In::kBytes) : 0;
    }
}

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

/* Shifted input: the rows of a batch (kStreamRows, rows_span's) divided by this. The shifts
 * take registers that loads in flight would: at full batches ptxas spilled the streams of
 * NORM2, 16-bit DOT and float64 SUMSQ, which ran 4-30 points of the read slower, and DOT of
 * float32 and float64 ran 8-10 points slower at 2^24 (float64 2 points faster at 2^28); SUM
 * and SUMSQ of 16-bit and float32 input ran 1-5 points faster at full batches (an H200,
 * docs/perf-log runs 246-247). */
template <typename In, Leaf LF>
constexpr int kShiftDiv = !kShifted<In>                                   ? 1
                          : LF == Leaf::kWiden || LF == Leaf::kSquare ? (In::kBytes == 8 ? 2 : 1)
                                                                        : 2;

/* Rows loaded at once per thread: 16 (16 loads of 16 bytes in flight); 8 where each row is two
 * loads (DOT) or three leaves (NORM2), so that the batch fits in registers beside its tree. */
template <Leaf LF>
constexpr int kBatchRows =
    LF == Leaf::kWiden || LF == Leaf::kSquare || LF == Leaf::kMedium ? 16 : 8;

/* The tree of R (by default kBatchRows) rows r0 .. of this thread's half, from full, aligned
 * input: all the batch's loads issued first, then the pairwise tree. */
template <typename In, Leaf LF, bool kStream, int R = kBatchRows<LF>>
__device__ __forceinline__ RowVals<In, LF> rows_aligned(const Args<In> &A, uint64_t base, int r0,
                                                        int lane0, Ext &ext)
{
    uint4 qx[R], qy[R];
#pragma unroll
    for (int i = 0; i < R; i++) {
        const uint64_t e = base + (uint64_t)(r0 + i) * Shape<In>::kLanes + lane0;
        qx[i] = load_group<In, kStream>(A.x, e);
        qy[i] = LF == Leaf::kProduct ? load_group<In, kStream>(A.y, e) : qx[i];
    }
    if constexpr (kShifted<In>) {
        const uint64_t e = base + (uint64_t)(r0 + R - 1) * Shape<In>::kLanes + lane0;
        shift_batch<In, LF>(qx, qy, load_tail<In>(A.x, e, lane0),
                            LF == Leaf::kProduct ? load_tail<In>(A.y, e, lane0) : uint4(), A,
                            base);
    }
    return BatchTree<In, LF, R>::run(qx, qy, 0, ext);
}

/* The tree of R rows r0 .. of this thread's half (R a power of two, r0 a multiple of R): a
 * subtree of the row tree, by batches of at most kBatchRows rows combined pairwise. */
template <typename In, Leaf LF, bool kStream, int R>
__device__ __forceinline__ RowVals<In, LF> rows_span(const Args<In> &A, uint64_t base, int r0,
                                                     int lane0, Ext &ext)
{
    if constexpr (R <= kBatchRows<LF> / kShiftDiv<In, LF>) {
        return rows_aligned<In, LF, kStream, R>(A, base, r0, lane0, ext);
    } else {
        const RowVals<In, LF> l = rows_span<In, LF, kStream, R / 2>(A, base, r0, lane0, ext);
        return add(l, rows_span<In, LF, kStream, R / 2>(A, base, r0 + R / 2, lane0, ext));
    }
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
    return pairwise_tree(t);
}

/* The chunk tree above the rows of one leaf, from this thread's kVec lane values (its row
 * tree): the top row level across the two halves (16-bit input), the lane levels inside the
 * thread, then across threads. Every thread returns it. Constant loop bounds keep v[] in
 * registers (bounds that depend on the leaf index put it in local memory).
 * kApart (16-bit input): each half-warp holds a chunk of its own whose data lie within the
 * first half's rows; its second half's rows are padding, -0.0, which the top row level adds as
 * the identity, so that level is left out and each half returns its own chunk's tree. */
template <typename In, bool kApart = false>
__device__ __forceinline__ typename In::Acc chunk_tree(const cg::thread_block_tile<32> &warp,
                                                       typename In::Acc (&v)[In::kVec])
{
    using S = Shape<In>;
    static_assert(!kApart || S::kHalves == 2, "halves apart: 16-bit input");
#pragma unroll
    for (int j = 0; j < In::kVec; j++)
        if constexpr (S::kHalves == 2 && !kApart) v[j] = v[j] + warp.shfl_xor(v[j], 16);
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
 * returns them; kApart: each half-warp its own chunk's, as chunk_tree). */
template <typename In, Leaf LF, bool kApart = false>
__device__ __forceinline__ void finish_chunk(const cg::thread_block_tile<32> &warp,
                                             const RowVals<In, LF> &s, const Ext &ext,
                                             typename In::Acc *out)
{
    static_assert(!kApart || LF != Leaf::kMedium, "kMedium's Ext is merged over the warp");
#pragma unroll
    for (int k = 0; k < kLeaves<LF>; k++) {
        typename In::Acc v[In::kVec];
#pragma unroll
        for (int j = 0; j < In::kVec; j++) v[j] = s.v[j][k];
        out[k] = chunk_tree<In, kApart>(warp, v);
    }
    if constexpr (LF == Leaf::kMedium) /* ext_other of the warp's max and min: any thread's */
        out[1] = warp.any(In::ext_other(ext)) ? 1 : 0;
}

/* The row trees of this thread over a full, aligned chunk: its rows in 1, 2 or 4 batches,
 * combined as the row tree: b0, b0 + b1, or (b0 + b1) + (b2 + b3) (rows_span of all its rows). */
template <typename In, Leaf LF, bool kStream>
__device__ __forceinline__ RowVals<In, LF> full_chunk_rows(const Args<In> &A, uint64_t base,
                                                           int half, int lane0, Ext &ext)
{
    using S = Shape<In>;
    static_assert(S::kRows / kBatchRows<LF> <= 4, "1, 2 or 4 batches");
    return rows_span<In, LF, kStream, S::kRows>(A, base, half * S::kRows, lane0, ext);
}

/* Shifted streams: kShiftDiv, but DOT of float32 and float64 (streamed along rows only:
 * kStreamed below) keeps its 4 rows a batch: against 2, rows of 10001 ran at 85-88% of the read
 * instead of 69-79%, and 65537 at 90-91% instead of 76-81%; 2 rows (1 shifted) were slower
 * still (an H200, docs/perf-log runs 264-265). */
template <typename In, Leaf LF>
constexpr int kStreamShiftDiv = LF == Leaf::kProduct && In::kBytes >= 4 ? 1 : kShiftDiv<In, LF>;

/* The streamed path of the one-launch kernel: a warp's full, aligned chunks one after the
 * other, as batches of rows double-buffered in registers (as canonical.cu's stream_chunk), so
 * that loads stay in flight while a batch's tree, the lane tree and the shuffles run, also
 * across chunks. A batch is 8 16-byte loads per thread (4 rows of two loads for DOT): two
 * batches are 64 registers. The batch trees combine pairwise — the same perfect row tree as
 * full_chunk_rows, whatever the batch size. NORM2's three-class stream (ordered.cu): 2 rows a
 * batch where the leaves are float (bfloat16, float32), 4 for float64, the fastest of 2, 4
 * and 8 on an H200 (docs/perf-log): its three trees' nodes take the registers that loads in
 * flight would. */
template <typename In, Leaf LF>
constexpr int kStreamRows = (LF == Leaf::kProduct ? 4
                             : LF == Leaf::kNorm2 ? (sizeof(typename In::Acc) == 8 ? 4 : 2)
                                                  : 8) / kStreamShiftDiv<In, LF>;
/* The 1-D kernels read DOT of float32 and float64 a chunk at a time (chunk_values): that path
 * runs at the read ceiling on aligned input, and the stream (CR_TUNE_DOT_STREAM 1) measured no
 * faster, 1-3 points slower on misaligned arrays at 2^28 (an H200, docs/perf-log runs 265-266).
 * Along rows (rows.cu's stream_kernel) the stream wins: a warp a chunk without it ran rows of
 * 10001 at 45-46% of the read against 87-91%, and rows of whole, aligned chunks at 90-91%
 * against 97-98% (run 266). */
#ifndef CR_TUNE_DOT_STREAM
#define CR_TUNE_DOT_STREAM 0
#endif
template <typename In, Leaf LF>
constexpr bool kStreamed = !(LF == Leaf::kProduct && In::kBytes >= 4) || CR_TUNE_DOT_STREAM;

template <typename In, Leaf LF> struct RowLoads {
    uint4 x[kStreamRows<In, LF>];
    uint4 y[LF == Leaf::kProduct ? kStreamRows<In, LF> : 1];
    uint4 tx, ty; /* Shifted: load_tail of the last row */
};

/* Issues the loads of rows r0 .. r0 + kStreamRows - 1 of the chunk at element `base`; kPad:
 * only of the rows below lr (the others zero). */
template <typename In, Leaf LF, bool kStream, bool kPad = false>
__device__ __forceinline__ void load_rows(RowLoads<In, LF> &b, const Args<In> &A, uint64_t base,
                                          int r0, int lane0, int lr = 0)
{
    constexpr int R = kStreamRows<In, LF>;
#pragma unroll
    for (int i = 0; i < R; i++) {
        const uint64_t e = base + (uint64_t)(r0 + i) * Shape<In>::kLanes + lane0;
        if (kPad && r0 + i >= lr) {
            b.x[i] = make_uint4(0, 0, 0, 0);
            if constexpr (LF == Leaf::kProduct) b.y[i] = b.x[i];
            continue;
        }
        b.x[i] = load_group<In, kStream>(A.x, e);
        if constexpr (LF == Leaf::kProduct) b.y[i] = load_group<In, kStream>(A.y, e);
    }
    if constexpr (kShifted<In>) {
        const uint64_t e = base + (uint64_t)(r0 + R - 1) * Shape<In>::kLanes + lane0;
        b.tx = b.ty = make_uint4(0, 0, 0, 0);
        if (!kPad || r0 + R - 1 < lr) {
            b.tx = load_tail<In>(A.x, e, lane0);
            if constexpr (LF == Leaf::kProduct) b.ty = load_tail<In>(A.y, e, lane0);
        }
    }
}

/* The rows of a chunk of m elements that the stream loads: those holding one of them, and for
 * shifted loads the row after the last (its first block completes that row's last group). */
template <typename In> __device__ __forceinline__ int rows_to_load(int m)
{
    return (m + Shape<In>::kLanes - 1) / Shape<In>::kLanes + (kShifted<In> ? 1 : 0);
}

/* The 16 bytes q of the lane group whose first `valid` elements (any int) are data, the others
 * made -0.0 (neg: x) or +0.0 (DOT's y). */
template <typename In> __device__ __forceinline__ uint4 pad_group(uint4 q, int valid, bool neg)
{
    unsigned int w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
        if constexpr (In::kBytes == 2) { /* elements 2k (low half) and 2k + 1 (high half) */
            const unsigned int p = neg ? 0x8000u : 0u;
            if (2 * k >= valid) w[k] = (w[k] & 0xffff0000u) | p;
            if (2 * k + 1 >= valid) w[k] = (w[k] & 0x0000ffffu) | (p << 16);
        } else if constexpr (In::kBytes == 4) {
            if (k >= valid) w[k] = neg ? 0x80000000u : 0u;
        } else { /* element k / 2: its low word, then its high word */
            if (k / 2 >= valid) w[k] = k % 2 && neg ? 0x80000000u : 0u;
        }
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* A batch of R rows (the chunk's rows row0 ..) of a chunk of m < C elements: the elements at or
 * past m made -0.0 in x and +0.0 in y, so that their leaves are the chunk's padding (-0.0; the
 * squares' +0.0 from -0.0 adds as -0.0 does to the squares, none of which is -0.0). */
template <typename In, Leaf LF, int R, int RY>
__device__ __forceinline__ void pad_batch(uint4 (&qx)[R], uint4 (&qy)[RY], int row0, int lane0,
                                          int m)
{
#pragma unroll
    for (int i = 0; i < R; i++) {
        const int valid = m - ((row0 + i) * Shape<In>::kLanes + lane0);
        if (valid < In::kVec) {
            qx[i] = pad_group<In>(qx[i], valid, true);
            if constexpr (LF == Leaf::kProduct) qy[i] = pad_group<In>(qy[i], valid, false);
        }
    }
}

/* Where the loads after the last batch of a chunk go: the next chunk's first batch, if any (lr:
 * its rows to load, kPad). */
struct Next {
    uint64_t base;
    bool has;
    int lr;
};

/* The tree of batches K0 .. K0 + CNT - 1 of this thread's rows of the chunk at `base` (rows r0
 * + R*k ..). Batch k sits in buf[k & 1]; the step of batch k first issues the loads of batch
 * k + 1 (or of the next chunk's batch 0) into the other buffer, then computes batch k's tree. */
/* kPad: the chunk may hold m < C elements (stream_chunks' maps other than the flat one): only
 * its rows below lr are loaded, and its elements past m padded (pad_batch). */
template <typename In, Leaf LF, bool kStream, int K0, int CNT, bool kPad = false>
struct BatchStream {
    static __device__ __forceinline__ RowVals<In, LF> run(RowLoads<In, LF> (&buf)[2],
                                                          const Args<In> &A, uint64_t base, int r0,
                                                          int lane0, const Next &nx, Ext &ext,
                                                          int m = 0, int lr = 0)
    {
        const RowVals<In, LF> l = BatchStream<In, LF, kStream, K0, CNT / 2, kPad>::run(
            buf, A, base, r0, lane0, nx, ext, m, lr);
        const RowVals<In, LF> r = BatchStream<In, LF, kStream, K0 + CNT / 2, CNT / 2, kPad>::run(
            buf, A, base, r0, lane0, nx, ext, m, lr);
        return add(l, r);
    }
};
template <typename In, Leaf LF, bool kStream, int K0, bool kPad>
struct BatchStream<In, LF, kStream, K0, 1, kPad> {
    static __device__ __forceinline__ RowVals<In, LF> run(RowLoads<In, LF> (&buf)[2],
                                                          const Args<In> &A, uint64_t base, int r0,
                                                          int lane0, const Next &nx, Ext &ext,
                                                          int m = 0, int lr = 0)
    {
        constexpr int R = kStreamRows<In, LF>, NB = Shape<In>::kRows / R;
        static_assert(NB % 2 == 0,
                      "an even number of batches: the next chunk's first lands in buf[0]");
        if constexpr (K0 + 1 < NB)
            load_rows<In, LF, kStream, kPad>(buf[(K0 + 1) & 1], A, base, r0 + (K0 + 1) * R, lane0,
                                             lr);
        else if (nx.has)
            load_rows<In, LF, kStream, kPad>(buf[0], A, nx.base, r0, lane0, nx.lr);
        const RowLoads<In, LF> &b = buf[K0 & 1];
        if constexpr (kShifted<In> || kPad) { /* copies: b stays as loaded */
            RowLoads<In, LF> q = b;
            if constexpr (kShifted<In>) shift_batch<In, LF>(q.x, q.y, q.tx, q.ty, A, base);
            if (kPad && m < (int)Shape<In>::kChunk) /* uniform across the warp */
                pad_batch<In, LF>(q.x, q.y, r0 + K0 * R, lane0, m);
            return BatchTree<In, LF, R>::run(q.x, LF == Leaf::kProduct ? q.y : q.x, 0, ext);
        }
        return BatchTree<In, LF, R>::run(b.x, LF == Leaf::kProduct ? b.y : b.x, 0, ext);
    }
};

/* A hook that does nothing (stream_chunks' default). */
struct NoHook {
    __device__ __forceinline__ void operator()() const {}
};

/* Where stream_chunks finds chunk c: its first element, its elements (C, or fewer: a row's
 * ragged chunk), and whether the stream reads it (the blocks its loads read lie where they may
 * read). */
struct ChunkAt {
    uint64_t base;
    int m;
    bool stream;
};

/* The chunk map of the flat array: chunk c at element c * C, every one read by the stream. A
 * map with kAllFull false (rows.cu's RowChunks: the chunks of rows of any length) also gives the
 * values of the chunks the stream does not read: values<LF>(warp, A, c, v), kOut<LF> of them
 * (kMedium: the flag of a chunk with an element of another class, so that NORM2 does it again
 * with the three classes, values<kNorm2>). */
template <typename In> struct FlatChunks {
    static constexpr bool kAllFull = true;
    static constexpr bool kRagged = false; /* a chunk of fewer than C elements streamed */
    __device__ __forceinline__ ChunkAt at(uint64_t c) const
    {
        return {c * Shape<In>::kChunk, (int)Shape<In>::kChunk, true};
    }
};

/* The flat array's chunks with the order of c0, c0 + stride, ... last reversed where `down`
 * (load.cuh's walk): stream_chunks' i-th chunk is chunk at(i), and emit receives the index
 * chunk(c) of the chunk it has read. */
template <typename In> struct MirrorChunks {
    static constexpr bool kAllFull = true;
    static constexpr bool kRagged = false;
    uint64_t sum; /* c0 + last where down, else 0 */
    bool down;
    __device__ __forceinline__ uint64_t chunk(uint64_t c) const { return down ? sum - c : c; }
    __device__ __forceinline__ ChunkAt at(uint64_t c) const
    {
        return {chunk(c) * Shape<In>::kChunk, (int)Shape<In>::kChunk, true};
    }
};
template <typename In>
__device__ __forceinline__ MirrorChunks<In> mirror_chunks(uint64_t c0, uint64_t c1,
                                                          uint64_t stride, bool down)
{
    return {down ? c0 + walk(c0, c1, stride, 0u).last : 0, down};
}

/* The warp's chunks c0, c0 + stride, ... below c1 (by default full and aligned; `map` says where
 * each lies); emit(c, v) receives each chunk's values (in every thread). after_first_loads() runs
 * once the first chunk's first loads are issued (tree.cuh's early tickets). With the flat map,
 * c0 < c1: the first loads are issued without a test (one took the 1-D NORM2 kernels from 71 to
 * 153 bytes of spill stores, and bfloat16 NORM2 at 2^24 9% slower: docs/perf-log run 259). A
 * chunk the map does not stream takes its values from the map, and the next chunk's loads
 * start after them (they are out of line: the loads in flight would live across the call). */
template <typename In, Leaf LF, bool kStream, typename Emit, typename Hook = NoHook,
          typename Map = FlatChunks<In>>
__device__ __forceinline__ void stream_chunks(const cg::thread_block_tile<32> &warp,
                                              const Args<In> &A, uint64_t c0, uint64_t c1,
                                              uint64_t stride, Emit emit,
                                              Hook after_first_loads = Hook(),
                                              const Map &map = Map())
{
    using S = Shape<In>;
    constexpr int NB = S::kRows / kStreamRows<In, LF>;
    const int t = warp.thread_rank(), half = t / S::kThreadsPerRow;
    const int lane0 = (t % S::kThreadsPerRow) * In::kVec, r0 = half * S::kRows;
    constexpr bool kPad = Map::kRagged; /* (the padding's code costs registers: only if needed) */
    RowLoads<In, LF> buf[2];
    ChunkAt at = map.at(c0);
    if (Map::kAllFull || (c0 < c1 && at.stream))
        load_rows<In, LF, kStream, kPad>(buf[0], A, at.base, r0, lane0, rows_to_load<In>(at.m));
    after_first_loads();
    for (uint64_t c = c0; c < c1; c += stride) {
        const ChunkAt next = map.at(c + stride);
        const int next_lr = rows_to_load<In>(next.m);
        typename In::Acc v[kOut<LF>];
        if (!Map::kAllFull && !at.stream) { /* uniform across the warp */
            if constexpr (!Map::kAllFull) map.template values<LF>(warp, A, c, v);
            /* buf[0] written on every path after the call, so that nothing of it lives across
             * the call (ptxas spilled the loads in flight in the loop otherwise) */
            if (c + stride < c1 && next.stream)
                load_rows<In, LF, kStream, kPad>(buf[0], A, next.base, r0, lane0, next_lr);
            else
                buf[0] = RowLoads<In, LF>();
        } else {
            const Next nx = {next.base, c + stride < c1 && next.stream, next_lr};
            Ext ext;
            const RowVals<In, LF> rows = BatchStream<In, LF, kStream, 0, NB, kPad>::run(
                buf, A, at.base, r0, lane0, nx, ext, at.m, rows_to_load<In>(at.m));
            finish_chunk<In, LF>(warp, rows, ext, v);
        }
        emit(c, v);
        at = next;
    }
}

/* NORM2's three classes of the full, aligned chunk at element `base`: the batches of 16-byte
 * loads of the streamed passes (kBatchRows rows at once) and their pairwise tree. For a chunk
 * whose medium pass found an element of another class. Out of line, so the stream loops keep their
 * registers. (It took element loads once, as norm2_all_classes below: the 32 rows' three
 * leaves each went to a stack array in local memory, and data of wide range, where every chunk
 * comes here, ran at a tenth of the read: docs/perf-log.) */
template <typename In>
__device__ __noinline__ void norm2_full_classes(const cg::thread_block_tile<32> &warp,
                                                const Args<In> &A, uint64_t base,
                                                typename In::Acc (&v)[3])
{
    using S = Shape<In>;
    const int t = warp.thread_rank(), half = t / S::kThreadsPerRow;
    const int lane0 = (t % S::kThreadsPerRow) * In::kVec;
    Ext ext; /* unused: three classes */
    finish_chunk<In, Leaf::kNorm2>(
        warp, full_chunk_rows<In, Leaf::kNorm2, false>(A, base, half, lane0, ext), ext, v);
}

/* Every finite float16 is medium (values.h's class bounds are its extremes): only an inf or a
 * NaN sends a float16 chunk to the three classes, and its kernels have no three-class stream. */
template <typename In>
constexpr bool kThreeStream = !(In::kBytes == 2 && In::kInf == Half<false>::kInf);

/* NORM2's level 1 over a warp's full chunks c, c + stride, .. below stop (ordered.cu's
 * norm2_kernel, rows.cu's stream_kernel), in segments of up to 64 chunks, each either
 *  - a medium pass (stream_chunks with kMedium: one tree of squares, and the chunk's largest and
 *    smallest |x| beside it): medium(c, square tree) for a chunk of medium elements only; a
 *    chunk with an element of another class is marked in `redo` (the stream loop keeps no call)
 *    and done again after the segment with the three classes (norm2_full_classes), other(c, v);
 *  - or three(c0, c1): a three-class stream of the segment (the caller's, out of line, so that
 *    the medium stream keeps its registers), which returns how many of its chunks had a big or
 *    small partial other than +0.0.
 * A segment in which a quarter or more of the chunks had an element of another class makes the
 * next one a three-class stream; a three-class segment in which fewer did, a medium pass again.
 * The first segment is `first` chunks, so that data of wide range is found early. The same
 * partials either way. hook() runs once, after the first segment's first loads if it is a
 * medium pass (early tickets: tree.cuh). */
template <typename In, bool kStream, typename Medium, typename Other, typename Three,
          typename Hook, typename Map = FlatChunks<In>>
__device__ __forceinline__ void norm2_segments(const cg::thread_block_tile<32> &warp,
                                               const Args<In> &A, uint64_t c, uint64_t stop,
                                               uint64_t stride, uint64_t first, Medium medium,
                                               Other other, Three three, Hook hook,
                                               const Map &map = Map())
{
    using Acc = typename In::Acc;
    uint64_t redo = 0, j = 0;
    auto emit_medium = [&](uint64_t cc, const Acc(&m)[kOut<Leaf::kMedium>]) {
        if (m[1] != 0) /* another class: uniform across the warp */
            redo |= 1ull << j;
        else
            medium(cc, m[0]);
        j++;
    };
    const uint64_t c_first = c;
    auto hook_first = [&] { /* once: in the first segment */
                            if (c == c_first) hook();
    };
    bool three_on = false;
    for (uint64_t seg; c < stop; c = seg) {
        const uint64_t span = stop - c;
        const uint64_t len = c == c_first ? first : 64;
        const uint64_t end = span > len * stride ? c + len * stride : stop;
        const int chunks = (int)((end - c + stride - 1) / stride);
        int others;
        if (kThreeStream<In> && three_on) {
            others = three(c, end);
        } else {
            redo = 0;
            j = 0;
            stream_chunks<In, Leaf::kMedium, kStream>(warp, A, c, end, stride, emit_medium,
                                                      hook_first, map);
            others = __popcll((long long)redo);
            for (uint64_t r = redo; r; r &= r - 1) {
                const uint64_t cr = c + (uint64_t)(__ffsll((long long)r) - 1) * stride;
                Acc v[3];
                const ChunkAt at = map.at(cr);
                if (Map::kAllFull || (at.stream && at.m == (int)Shape<In>::kChunk))
                    norm2_full_classes(warp, A, at.base, v);
                else if constexpr (!Map::kAllFull)
                    map.template values<Leaf::kNorm2>(warp, A, cr, v);
                other(cr, v);
            }
        }
        three_on = 4 * others >= chunks;
        seg = c + (uint64_t)chunks * stride; /* first chunk at or past end */
    }
}

/* NORM2's three classes of chunk c by element loads: the ragged chunk of the 1-D kernels. Apart
 * from norm2_full_classes on purpose: one function for both, a branch on the chunk's length,
 * made NORM2 1-1.5% slower on uniform 16-bit data and 7% on float32 data of wide range at 2^24
 * (docs/perf-log, run 244). */
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

/* kMedium's Ext over this thread's kVec lanes of the chunk element `first` on (of m valid): their
 * bits by element loads, in a 16-byte group as the vector loads give it, the lanes at or past m
 * as zeros (which the Ext leaves out: zero is in every class). */
template <typename In>
__device__ __forceinline__ void ext_fold_lanes(Ext &ext, const Args<In> &A, uint64_t base,
                                               int first, int m)
{
    unsigned int w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int j = 0; j < In::kVec; j++) {
        if (first + j >= m) continue;
        const uint64_t i = base + (uint64_t)(first + j);
        if constexpr (In::kBytes == 2) {
            w[j / 2] |= (unsigned int)__ldg(static_cast<const unsigned short *>(A.x) + i)
                        << (16 * (j % 2));
        } else if constexpr (In::kBytes == 4) {
            w[j] = __ldg(static_cast<const unsigned int *>(A.x) + i);
        } else {
            const unsigned long long d = __ldg(static_cast<const unsigned long long *>(A.x) + i);
            w[2 * j] = (unsigned int)d;
            w[2 * j + 1] = (unsigned int)(d >> 32);
        }
    }
    In::ext_fold(ext, make_uint4(w[0], w[1], w[2], w[3]));
}

/* The leaves of this thread's kVec lanes of the chunk element `first` on (of m valid), by element
 * loads; lanes at or past m are -0.0 leaves, and load nothing. kMedium folds the lanes into
 * *ext too. */
template <typename In, Leaf LF>
__device__ __forceinline__ RowVals<In, LF> lanes_guarded(const Args<In> &A, uint64_t base,
                                                         int first, int m, Ext *ext = nullptr)
{
    if constexpr (LF == Leaf::kMedium) ext_fold_lanes<In>(*ext, A, base, first, m);
    using Acc = typename In::Acc;
    RowVals<In, LF> r;
#pragma unroll
    for (int j = 0; j < In::kVec; j++) {
        if (first + j < m) {
            const Acc a = In::at(A.x, base + first + j);
            const Acc b = LF == Leaf::kProduct ? In::at(A.y, base + first + j) : a;
            make_leaf<LF>(a, b, r.v[j]);
        } else {
#pragma unroll
            for (int k = 0; k < kLeaves<LF>; k++) r.v[j][k] = Acc(-0.0);
        }
    }
    return r;
}

/* Rows per batch of rows_used: 8, fewer where a row's leaves take many registers (NORM2's three
 * classes), so that a batch's leaves fit beside its loads. A power of two. */
template <typename In, Leaf LF>
constexpr int kUsedRows = In::kVec * kLeaves<LF> <= 8 ? 8 : In::kVec * kLeaves<LF> <= 16 ? 4 : 2;

/* How rows_used reads a thread's lane group: kLoadScalar, element loads (any alignment);
 * kLoadVector, one 16-byte load (the chunk starts on a 16-byte boundary); kLoadShifted, the two
 * aligned 16-byte loads around the group, shifted into place (the chunk starts anywhere, but
 * the array it lies in starts on a 16-byte boundary, so that the bytes before the group down to
 * a boundary are the array's); kLoadWithin, the same where both 16-byte blocks lie within the
 * array A.x .. A.x + A.n (the array itself starts anywhere: a view such as x[1:]), element loads
 * for the groups at its two ends. */
enum { kLoadScalar = 0, kLoadVector = 1, kLoadShifted = 2, kLoadWithin = 3 };

/* Rows per batch of rows_used by load mode: kUsedRows, and at most 16 16-byte loads a batch
 * (shifted groups take two loads, DOT two arrays). At 8 rows the shifted batches of DOT were 32
 * loads, which ptxas spilled to local memory (600 bytes for float32, 1368 for bfloat16): a
 * misaligned DOT of 2^18-2^20 elements took 16.3-17.2 us for float32 (now 13.9-14.5), 14.9-15.3
 * for float64 (11.5-11.9), and 2^24 float64 80.8% of the read (85.6-87.0%) (an H200,
 * docs/perf-log run 272; 5.8 us aligned). The rows' tree is pairwise whatever the batch: the
 * same bits. */
template <Leaf LF, int kLoad>
constexpr int kUsedLoads =
    (kLoad == kLoadShifted || kLoad == kLoadWithin ? 2 : 1) * (LF == Leaf::kProduct ? 2 : 1);
template <typename In, Leaf LF, int kLoad>
constexpr int kUsedRowsFor = kLoad != kLoadScalar && 16 / kUsedLoads<LF, kLoad> < kUsedRows<In, LF>
                                 ? 16 / kUsedLoads<LF, kLoad>
                                 : kUsedRows<In, LF>;

/* The tree of R rows r0 .. r0+R-1 of a chunk of m valid elements (A.n in the whole row): all the
 * rows' loads first, then the pairwise tree. A lane group wholly below m is one 16-byte load
 * (kLoadVector) or two (kLoadShifted, if both lie within the row); other groups, and every group
 * of kLoadScalar, element loads. Lanes at or past m are -0.0 leaves and load nothing. */
template <typename In, Leaf LF, int kLoad, int R>
__device__ __forceinline__ RowVals<In, LF> batch_used(const Args<In> &A, uint64_t base, int r0,
                                                      int lane0, int m, Ext *ext = nullptr)
{
    using S = Shape<In>;
    RowVals<In, LF> t[R];
    if constexpr (kLoad == kLoadScalar) {
#pragma unroll
        for (int i = 0; i < R; i++)
            t[i] = lanes_guarded<In, LF>(A, base, (r0 + i) * S::kLanes + lane0, m, ext);
    } else {
        constexpr bool kShift = kLoad == kLoadShifted || kLoad == kLoadWithin;
        constexpr int N = kShift ? 2 : 1, NY = LF == Leaf::kProduct ? N : 0;
        uint4 qx[R][N], qy[R][NY ? NY : 1];
        bool ok[R];
        const char *xe = static_cast<const char *>(A.x) + A.n * In::kBytes;
        const char *ye = static_cast<const char *>(A.y) + A.n * In::kBytes;
#pragma unroll
        for (int i = 0; i < R; i++) {
            const int first = (r0 + i) * S::kLanes + lane0;
            const uint64_t off = (base + (uint64_t)first) * In::kBytes;
            const char *px = static_cast<const char *>(A.x) + off;
            const char *py = static_cast<const char *>(A.y) + off;
            const char *ax = reinterpret_cast<const char *>((uintptr_t)px & ~(uintptr_t)15);
            const char *ay = reinterpret_cast<const char *>((uintptr_t)py & ~(uintptr_t)15);
            ok[i] = first + In::kVec <= m;
            if constexpr (kShift) {
                ok[i] = ok[i] && ax + 32 <= xe;
                if constexpr (LF == Leaf::kProduct) ok[i] = ok[i] && ay + 32 <= ye;
            }
            if constexpr (kLoad == kLoadWithin) {
                ok[i] = ok[i] && ax >= static_cast<const char *>(A.x);
                if constexpr (LF == Leaf::kProduct)
                    ok[i] = ok[i] && ay >= static_cast<const char *>(A.y);
            }
#pragma unroll
            for (int k = 0; k < N; k++) {
                qx[i][k] = make_uint4(0, 0, 0, 0);
                if constexpr (NY) qy[i][k] = qx[i][k];
            }
            if (ok[i]) {
#pragma unroll
                for (int k = 0; k < N; k++) {
                    qx[i][k] = __ldg(reinterpret_cast<const uint4 *>(ax + 16 * k));
                    if constexpr (NY) qy[i][k] = __ldg(reinterpret_cast<const uint4 *>(ay + 16 * k));
                }
            }
        }
#pragma unroll
        for (int i = 0; i < R; i++) {
            const int first = (r0 + i) * S::kLanes + lane0;
            if (ok[i]) {
                uint4 x = qx[i][0], y = x;
                if constexpr (kShift) {
                    const uint64_t off = (base + (uint64_t)first) * In::kBytes;
                    x = shift16<In::kBytes >= 4>(qx[i][0], qx[i][1],
                                (unsigned int)(((uintptr_t)A.x + off) & 15));
                    if constexpr (NY)
                        y = shift16<In::kBytes >= 4>(qy[i][0], qy[i][1],
                                    (unsigned int)(((uintptr_t)A.y + off) & 15));
                } else if constexpr (NY) {
                    y = qy[i][0];
                }
                if constexpr (LF == Leaf::kMedium) In::ext_fold(*ext, x);
                t[i] = leaves_of<In, LF>(x, y);
            } else {
                t[i] = lanes_guarded<In, LF>(A, base, first, m, ext);
            }
        }
    }
    return pairwise_tree(t);
}

/* The row tree over rows r0 .. r0+ROWS-1 of a chunk of m < C valid elements (a ragged chunk, a
 * short row, or misaligned input), `used` rows holding data: a subtree wholly past the last of
 * them is all padding, -0.0, the identity, and is left out (the same bits, no loads; uniform
 * across the half-warp). */
template <typename In, Leaf LF, int kLoad, int ROWS>
__device__ __forceinline__ RowVals<In, LF> rows_used_from(const Args<In> &A, uint64_t base, int r0,
                                                          int lane0, int m, int used,
                                                          Ext *ext = nullptr)
{
    constexpr int R = kUsedRowsFor<In, LF, kLoad>;
    if constexpr (ROWS <= R) {
        return batch_used<In, LF, kLoad, ROWS>(A, base, r0, lane0, m, ext);
    } else {
        RowVals<In, LF> s =
            rows_used_from<In, LF, kLoad, ROWS / 2>(A, base, r0, lane0, m, used, ext);
        if (r0 + ROWS / 2 < used)
            s = add(s, rows_used_from<In, LF, kLoad, ROWS / 2>(A, base, r0 + ROWS / 2, lane0, m,
                                                                used, ext));
        return s;
    }
}

/* This thread's row tree over a chunk of m valid elements (kMedium: its Ext in *ext). */
template <typename In, Leaf LF, int kLoad>
__device__ __forceinline__ RowVals<In, LF> rows_used(const Args<In> &A, uint64_t base, int half,
                                                     int lane0, int m, Ext *ext = nullptr)
{
    using S = Shape<In>;
    const int used = (m + S::kLanes - 1) / S::kLanes;
    return rows_used_from<In, LF, kLoad, S::kRows>(A, base, half * S::kRows, lane0, m, used, ext);
}

/* chunk_values' chunks of m < C elements, or misaligned ones: out of line, so that the kernels
 * that stream full chunks keep their registers for those. `load`: kLoadVector, kLoadShifted,
 * or (any other value) kLoadWithin. kMedium: the tree of squares and the flag of another class
 * (finish_chunk). NORM2 takes the medium pass first, as chunk_values does for full chunks, and
 * the three classes only where an element lies outside it (the same bits: docs/DETERMINISM.md):
 * a row of the three classes' leaves is three times the registers, and the three-class batches
 * spilled 0.4-1.2 KiB to local memory for the 16-bit types and float64 (ptxas). */
template <typename In, Leaf LF, bool kMediumFirst = true>
__device__ __noinline__ void chunk_used(const cg::thread_block_tile<32> &warp, const Args<In> &A,
                                        uint64_t base, int m, int load,
                                        typename In::Acc (&v)[kOut<LF>])
{
    using S = Shape<In>;
    using Acc = typename In::Acc;
    if constexpr (LF == Leaf::kNorm2 && kMediumFirst) {
        Acc mm[kOut<Leaf::kMedium>];
        chunk_used<In, Leaf::kMedium>(warp, A, base, m, load, mm);
        if (mm[1] == 0) { /* uniform across the warp */
            v[0] = v[2] = Acc(0);
            v[1] = mm[0];
            return;
        }
    }
    const int t = warp.thread_rank(), half = t / S::kThreadsPerRow;
    const int lane0 = (t % S::kThreadsPerRow) * In::kVec;
    Ext ext; /* kMedium's */
    if (load == kLoadVector)
        finish_chunk<In, LF>(warp, rows_used<In, LF, kLoadVector>(A, base, half, lane0, m, &ext),
                             ext, v);
    else if (load == kLoadShifted)
        finish_chunk<In, LF>(warp, rows_used<In, LF, kLoadShifted>(A, base, half, lane0, m, &ext),
                             ext, v);
    else
        finish_chunk<In, LF>(warp, rows_used<In, LF, kLoadWithin>(A, base, half, lane0, m, &ext),
                             ext, v);
}

/* kMedium's class test in the interleaved layout, on the widened value a (the accumulation
 * type's classes are the same for every input type: a 16-bit value widens exactly): the largest
 * |a| and the smallest nonzero |a| as bits (float32: the bits of |a|; float64: F64::key of
 * them), F32's and F64's tests on those. */
__device__ __forceinline__ void strided_ext(Ext &e, float a)
{
    const unsigned int b = __float_as_uint(a) & 0x7fffffffu;
    e.mx = max(e.mx, b);
    e.mn = __viaddmin_u32(b, 0xffffffffu, e.mn);
}
__device__ __forceinline__ void strided_ext(Ext &e, double a)
{
    const unsigned long long b = (unsigned long long)__double_as_longlong(a);
    const unsigned int k = F64::key((unsigned int)b, (unsigned int)(b >> 32));
    e.mx = max(e.mx, k);
    e.mn = __viaddmin_u32(k, 0xffffffffu, e.mn);
}
template <typename Acc> __device__ __forceinline__ bool strided_other(const Ext &e)
{
    if constexpr (sizeof(Acc) == 4) return F32::ext_other(e);
    else return F64::ext_other(e);
}

/* A chunk of m <= C valid elements at element `base` of A, at any alignment, in the interleaved
 * layout: thread t takes the lanes t, t + 32, .., t + W - 32 (kStrideLanes of them) of every
 * row, by element loads, so that each load of the warp reads 32 adjacent elements whatever the
 * chunk's alignment. The same chunk tree as the 16-byte layout: per lane, the row tree (rows
 * wholly past the data are padding, left out by whole subtrees); the five lowest lane levels pair
 * lanes of neighbouring threads (a butterfly of shuffles, after which every thread holds its
 * 32-lane block's sum: the pairwise tree of that block, by commutativity); the top levels pair
 * the blocks inside the thread. For segments, whose chunks start anywhere: one code path for
 * every alignment, a fraction of the shifted 16-byte path's instructions (which is what bounded
 * it: docs/perf-log). */
template <typename In> constexpr int kStrideLanes = Shape<In>::kLanes / 32; /* 4, or 2 (float64) */
/* Rows per batch: all of a batch's loads are in flight at once, 32 registers of leaves or fewer. */
template <typename In, Leaf LF>
constexpr int kStrideRows =
    kStrideLanes<In> * kLeaves<LF> * (LF == Leaf::kProduct ? 2 : 1) <= 4   ? 8
    : kStrideLanes<In> * kLeaves<LF> * (LF == Leaf::kProduct ? 2 : 1) <= 8 ? 4
                                                                            : 2;

template <typename In, Leaf LF> struct LaneVals {
    typename In::Acc v[kStrideLanes<In>][kLeaves<LF>];
};

template <typename In, Leaf LF>
__device__ __forceinline__ LaneVals<In, LF> add(const LaneVals<In, LF> &a, const LaneVals<In, LF> &b)
{
    LaneVals<In, LF> r;
#pragma unroll
    for (int j = 0; j < kStrideLanes<In>; j++)
#pragma unroll
        for (int k = 0; k < kLeaves<LF>; k++) r.v[j][k] = a.v[j][k] + b.v[j][k];
    return r;
}

/* The row tree of one batch, rows r0 .. r0 + ROWS - 1 of a thread's lanes. px (py) point at the
 * thread's first lane of the chunk, so that every load's address is px plus a constant, and mt
 * is the count of valid elements less the thread's first lane: element (r * W + 32 * j) of the
 * thread is valid when below mt. kFull: every element of the batch is (no guards). kMedium
 * folds each element into ext too (strided_ext). */
template <typename In, Leaf LF, int ROWS, bool kFull>
__device__ __forceinline__ LaneVals<In, LF> strided_batch(const void *px, const void *py, int r0,
                                                          int mt, Ext &ext)
{
    using Acc = typename In::Acc;
    constexpr int W = Shape<In>::kLanes, L = kStrideLanes<In>;
    Acc a[ROWS][L], b[ROWS][L];
#pragma unroll
    for (int i = 0; i < ROWS; i++)
#pragma unroll
        for (int j = 0; j < L; j++) {
            const int e = (r0 + i) * W + 32 * j;
            const bool ok = kFull || e < mt;
            a[i][j] = ok ? In::at(px, (uint64_t)e) : Acc(0);
            b[i][j] = LF == Leaf::kProduct && ok ? In::at(py, (uint64_t)e) : a[i][j];
        }
    if constexpr (LF == Leaf::kMedium) {
#pragma unroll
        for (int i = 0; i < ROWS; i++)
#pragma unroll
            for (int j = 0; j < L; j++) strided_ext(ext, a[i][j]); /* padding, 0: neutral */
    }
    LaneVals<In, LF> l[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; i++)
#pragma unroll
        for (int j = 0; j < L; j++) {
            if (kFull || (r0 + i) * W + 32 * j < mt) {
                make_leaf<LF>(a[i][j], b[i][j], l[i].v[j]);
            } else {
#pragma unroll
                for (int k = 0; k < kLeaves<LF>; k++) l[i].v[j][k] = Acc(-0.0);
            }
        }
    return pairwise_tree(l);
}

/* The row tree of rows r0 .. r0 + ROWS - 1 of a thread's lanes, `used` rows holding data (see
 * strided_batch for px, py and mt); a batch wholly within the data without guards. */
template <typename In, Leaf LF, int ROWS>
__device__ __forceinline__ LaneVals<In, LF> strided_rows(const void *px, const void *py, int r0,
                                                         int mt, int used, Ext &ext)
{
    constexpr int W = Shape<In>::kLanes, L = kStrideLanes<In>, R = kStrideRows<In, LF>;
    if constexpr (ROWS <= R) {
        if ((r0 + ROWS - 1) * W + 32 * (L - 1) < mt)
            return strided_batch<In, LF, ROWS, true>(px, py, r0, mt, ext);
        return strided_batch<In, LF, ROWS, false>(px, py, r0, mt, ext);
    } else {
        LaneVals<In, LF> s = strided_rows<In, LF, ROWS / 2>(px, py, r0, mt, used, ext);
        if (r0 + ROWS / 2 < used)
            s = add(s, strided_rows<In, LF, ROWS / 2>(px, py, r0 + ROWS / 2, mt, used, ext));
        return s;
    }
}

/* The chunk's values from this thread's row trees in the interleaved layout: the five lowest
 * lane levels by shuffles, the top ones inside the thread; kMedium's class test over the warp. */
template <typename In, Leaf LF>
__device__ __forceinline__ void strided_finish(const cg::thread_block_tile<32> &warp,
                                               LaneVals<In, LF> s, Ext ext,
                                               typename In::Acc (&v)[kOut<LF>])
{
    constexpr int L = kStrideLanes<In>;
#pragma unroll
    for (int k = 0; k < kLeaves<LF>; k++) {
#pragma unroll
        for (int j = 0; j < L; j++)
#pragma unroll
            for (int d = 1; d < 32; d *= 2) s.v[j][k] = s.v[j][k] + warp.shfl_xor(s.v[j][k], d);
#pragma unroll
        for (int w = 1; w < L; w *= 2)
#pragma unroll
            for (int j = 0; j < L; j += 2 * w) s.v[j][k] = s.v[j][k] + s.v[j + w][k];
        v[k] = s.v[0][k];
    }
    if constexpr (LF == Leaf::kMedium) /* the test of the warp's max and min: any thread's */
        v[1] = warp.any(strided_other<typename In::Acc>(ext)) ? 1 : 0;
}

/* The chunk's kOut<LF> values (in every thread): its K trees, or kMedium's tree of squares and
 * whether some element lies outside the medium class. */
template <typename In, Leaf LF>
__device__ __forceinline__ void chunk_strided(const cg::thread_block_tile<32> &warp,
                                              const Args<In> &A, uint64_t base, int m,
                                              typename In::Acc (&v)[kOut<LF>])
{
    constexpr int W = Shape<In>::kLanes;
    const int t = warp.thread_rank();
    const uint64_t first = (base + (uint64_t)t) * In::kBytes;
    const void *const px = static_cast<const char *>(A.x) + first;
    const void *const py = LF == Leaf::kProduct ? static_cast<const char *>(A.y) + first : px;
    Ext ext;
    strided_finish<In, LF>(
        warp, strided_rows<In, LF, CR_ROWS>(px, py, 0, m - t, (m + W - 1) / W, ext), ext, v);
}

/* NORM2's three trees of a chunk as chunk_strided gives them, by the medium pass first (the
 * squares and the class test, as norm2_kernel does): a chunk whose elements are all of the
 * medium class has +0.0 for the big and small trees and the squares' tree for the medium one,
 * the same bits; any other chunk is read again for the three classes. `three`, the warp's
 * memory of its previous chunk: after a chunk with an element of another class (its big or
 * small tree not +0.0) the next one takes the three classes at once, without the medium pass,
 * as norm2_segments' three-class stream does (data of wide range: segments of 1..10000 read
 * every chunk twice, 9-47% of the read, docs/perf-log run 252). The same bits either way. */
template <typename In>
__device__ __forceinline__ void chunk_strided_norm2(const cg::thread_block_tile<32> &warp,
                                                    const Args<In> &A, uint64_t base, int m,
                                                    typename In::Acc (&v)[3], bool &three)
{
    using Acc = typename In::Acc;
    if (!three) {
        Acc med[kOut<Leaf::kMedium>];
        chunk_strided<In, Leaf::kMedium>(warp, A, base, m, med);
        if (med[1] == 0) { /* uniform across the warp */
            v[0] = v[2] = Acc(0);
            v[1] = med[0];
            return;
        }
    }
    chunk_strided<In, Leaf::kNorm2>(warp, A, base, m, v);
    three = !is_plus_zero(v[0]) || !is_plus_zero(v[2]); /* uniform: every thread has v */
}

/* Segments' chunks staged in shared memory. The element loads of chunk_strided keep a batch of
 * rows in flight per warp, 4 KiB, bounded by registers; here a warp copies its chunks into its
 * own shared memory, in stages, by 16-byte asynchronous copies that hold no registers, and
 * reads each stage there in the interleaved layout as chunk_strided reads global memory: the
 * same tree, the same bits, with up to 16 KiB in flight a warp. Copies are of the 16-byte
 * blocks holding a stage's elements, from the one holding its first (the caller checks
 * blocks_within: those blocks lie within the arrays), so a chunk may start anywhere. */
template <typename In> struct FromShared : In {
    static __device__ __forceinline__ typename In::Acc at(const void *p, uint64_t i)
    {
        if constexpr (In::kBytes == 2)
            return In::widen(static_cast<const unsigned short *>(p)[i]);
        else
            return static_cast<const typename In::Acc *>(p)[i];
    }
};

/* The ring: kRing stages of kRingRows chunk rows of each array (DOT: half as many rows of each
 * of its two), and the 16-byte block a start past a boundary adds to each. 16-bit input: four
 * stages of 8 rows (2 KiB), each refilled as soon as it is read; 4- and 8-byte input: one stage
 * of the whole chunk (16 KiB), copied, then read (chunk_staged). Measured (H100, docs/perf-log
 * runs 130 and 133), segments of 1..10,000 over 2^26: with four stages of 8 rows, bfloat16 SUM
 * 72.1% of the read to 77.5% (76.0% in the kept code), DOT 76.2% to 80.0% (77.6%), but float32
 * SUM 88.9% to 88.1%, DOT 89.8% to 88.5%, float64 DOT 90.1% to 89.1%. */
/* CR_TUNE_SEG_RING: the stages of 4- and 8-byte input's ring (1: one stage, chunk_staged), of
 * CR_TUNE_SEG_RING_ROWS chunk rows each where there are several. One kept on the H200 too
 * (docs/perf-log run 299, segments of 1..10,000 and 1..4000 over 2^26): two stages of 8 rows
 * (8 KiB a warp, 24 warps an SM) 6-7% slower for float32 SUM and 5% for the DOTs, four of 8
 * rows 1-2% slower (7% on segments of 1..4000), two of 16 level on the DOTs and 1-8% slower on
 * float32 SUM. */
#ifndef CR_TUNE_SEG_RING
#define CR_TUNE_SEG_RING 1
#endif
#ifndef CR_TUNE_SEG_RING_ROWS
#define CR_TUNE_SEG_RING_ROWS 8
#endif
template <typename In> constexpr int kRing = In::kBytes == 2 ? 4 : CR_TUNE_SEG_RING;
template <typename In, Leaf LF>
constexpr int kRingRows = (In::kBytes == 2 ? 8 : kRing<In> == 1 ? CR_ROWS : CR_TUNE_SEG_RING_ROWS) /
                          (LF == Leaf::kProduct ? 2 : 1);
template <typename In, Leaf LF>
constexpr int kRingArrayBytes = kRingRows<In, LF> * Shape<In>::kLanes * In::kBytes + 16;
template <typename In, Leaf LF>
constexpr int kRingSlotBytes = (LF == Leaf::kProduct ? 2 : 1) * kRingArrayBytes<In, LF>;
/* Shared memory a warp's ring takes. */
template <typename In, Leaf LF> constexpr int kStageBytes = kRing<In> * kRingSlotBytes<In, LF>;

/* Whether the 16-byte blocks holding elements [e0, e0 + n) of the array x of `len` elements
 * lie within it. */
template <typename In>
__device__ __forceinline__ bool blocks_within(const char *x, uint64_t len, uint64_t e0, uint64_t n)
{
    const uintptr_t lo = (uintptr_t)(x + e0 * In::kBytes) & ~(uintptr_t)15;
    const uintptr_t hi = ((uintptr_t)(x + (e0 + n) * In::kBytes) + 15) & ~(uintptr_t)15;
    return lo >= (uintptr_t)x && hi <= (uintptr_t)(x + len * In::kBytes);
}

/* The copies of `bytes` bytes at p (and the bytes before them back to a 16-byte boundary) into
 * buf, by the warp; returns p's offset past that boundary, where p's first byte lands. The
 * warp's barrier first: its threads are done reading what buf held. */
__device__ __forceinline__ int stage_copy(const cg::thread_block_tile<32> &warp, char *buf,
                                          const char *p, int bytes)
{
    const int sb = (int)((uintptr_t)p & 15), nv = (sb + bytes + 15) >> 4;
    const char *a = p - sb;
    warp.sync();
    for (int i = warp.thread_rank(); i < nv; i += 32) cp_async16(buf + 16 * i, a + 16 * i);
    return sb;
}

/* The chunk of m elements at element `base` of A, 4- or 8-byte input, as one stage (kRing 1):
 * its copy into buf, then its reading; its values (in every thread) as chunk_strided gives
 * them. (The same work as staged_chunks with one slot, which, written so, measured 0.9-2.6
 * points of the read slower for float32: docs/perf-log run 132.) */
template <typename In, Leaf LF>
__device__ __forceinline__ void chunk_staged(const cg::thread_block_tile<32> &warp,
                                             const Args<In> &A, uint64_t base, int m, char *buf,
                                             typename In::Acc (&v)[kOut<LF>])
{
    using SI = FromShared<In>;
    constexpr int W = Shape<In>::kLanes, H = kRingRows<In, LF>;
    constexpr bool kY = LF == Leaf::kProduct;
    static_assert(kRing<In> == 1 && CR_ROWS % H == 0, "one slot, whole stages a chunk");
    const int t = warp.thread_rank(), used = (m + W - 1) / W;
    char *const bx = buf, *const by = buf + (kY ? kRingArrayBytes<In, LF> : 0);
    Ext ext;
    LaneVals<SI, LF> s;
#pragma unroll
    for (int r0 = 0; r0 < CR_ROWS; r0 += H) {
        if (r0 > 0 && r0 >= used) break; /* the rest is padding (uniform) */
        const int cnt = m - r0 * W < H * W ? m - r0 * W : H * W;
        const uint64_t e0 = base + (uint64_t)r0 * W;
        const char *gx = static_cast<const char *>(A.x) + e0 * In::kBytes;
        const int sx = stage_copy(warp, bx, gx, cnt * In::kBytes);
        const int sy = kY ? stage_copy(warp, by, static_cast<const char *>(A.y) + e0 * In::kBytes,
                                       cnt * In::kBytes)
                          : sx;
        cp_async_wait_all();
        warp.sync(); /* every thread's copies visible to the warp */
        /* element r * W + 32 j + t of the chunk (r >= r0) at px + (r * W + 32 j) * kBytes */
        const int shift = (t - r0 * W) * In::kBytes;
        const char *px = bx + sx + shift, *py = kY ? by + sy + shift : px;
        const LaneVals<SI, LF> a = strided_rows<SI, LF, H>(px, py, r0, m - t, used, ext);
        s = r0 == 0 ? a : add(s, a);
    }
    strided_finish<SI, LF>(warp, s, ext, v);
}

/* Chunks q0 .. q1 - 1 of A (A.n elements; every chunk but the last full) through the ring:
 * emit(q, v) receives chunk q's values as chunk_strided gives them (LF != kNorm2). Stages go
 * in order, each chunk's rows 0, R, 2R, .. (those holding data), then the next chunk's; the
 * ring starts with the first NS = kRing stages' copies, and each stage read makes way for the
 * one NS further on: one commit group a stage, an empty one where there is none, so that the
 * stage to read is always the oldest but NS - 1 (cp.async.wait_group). The row tree of a
 * chunk from its stages' trees, pairwise in stage order, a missing last stage of a pair
 * leaving its partner alone (rows wholly past the data are padding: strided_rows' subtrees). */
template <typename In, Leaf LF, typename Emit>
__device__ __forceinline__ void staged_chunks(const cg::thread_block_tile<32> &warp,
                                              const Args<In> &A, uint64_t q0, uint64_t q1,
                                              char *buf, Emit &&emit)
{
    using SI = FromShared<In>;
    using Acc = typename In::Acc;
    using LV = LaneVals<SI, LF>;
    constexpr int W = Shape<In>::kLanes, R = kRingRows<In, LF>, SPC = CR_ROWS / R, NS = kRing<In>;
    constexpr uint64_t C = Shape<In>::kChunk;
    constexpr bool kY = LF == Leaf::kProduct;
    constexpr int kSlot = kRingSlotBytes<In, LF>, kArr = kRingArrayBytes<In, LF>;
    static_assert(LF != Leaf::kNorm2 && SPC % NS == 0 && SPC <= 8, "stages of a chunk");
    const char *const x = static_cast<const char *>(A.x);
    const char *const y = static_cast<const char *>(A.y);
    const auto elems = [&](uint64_t q) { /* chunk q's elements */
        const uint64_t r = A.n - q * C;
        return r < C ? (int)r : (int)C;
    };
    const auto issue = [&](uint64_t q, int k) { /* stage k of chunk q, if it holds data */
        if (q < q1 && k * R * W < elems(q)) {
            const uint64_t e0 = q * C + (uint64_t)k * R * W;
            const int cnt = elems(q) - k * R * W < R * W ? elems(q) - k * R * W : R * W;
            char *slot = buf + (k % NS) * kSlot;
            stage_copy(warp, slot, x + e0 * In::kBytes, cnt * In::kBytes);
            if constexpr (kY)
                stage_copy(warp, slot + kArr, y + e0 * In::kBytes, cnt * In::kBytes);
        }
        cp_async_commit();
    };
#pragma unroll 1
    for (int k = 0; k < NS; k++) issue(q0, k);
    const int t = warp.thread_rank();
#pragma unroll 1
    for (uint64_t q = q0; q < q1; q++) {
        const int m = elems(q), used = (m + W - 1) / W, stages = (used + R - 1) / R;
        LV l0 = {}, l1 = {}, l2 = {}; /* a pair, a quad, an octet of stages in the making */
        Ext ext;
#pragma unroll 1
        for (int k = 0; k < stages; k++) {
            cp_async_wait_group<NS - 1>();
            warp.sync(); /* every thread's copies of this stage visible to the warp */
            const uint64_t e0 = q * C + (uint64_t)k * R * W;
            const char *slot = buf + (k % NS) * kSlot;
            /* element r * W + 32 j + t of the chunk (rows of this stage) at
             * px + (r * W + 32 j) * kBytes */
            const int shift = (t - k * R * W) * In::kBytes;
            const char *px = slot + (int)((uintptr_t)(x + e0 * In::kBytes) & 15) + shift;
            const char *py =
                kY ? slot + kArr + (int)((uintptr_t)(y + e0 * In::kBytes) & 15) + shift : px;
            const LV st = strided_rows<SI, LF, R>(px, py, k * R, m - t, used, ext);
            if (k + NS < SPC)
                issue(q, k + NS);
            else
                issue(q + 1, k + NS - SPC); /* chunk q is full where there is a chunk q + 1 */
            l0 = (k & 1) == 0 ? st : add(l0, st);
            if ((k & 3) == 1) l1 = l0;
            if ((k & 3) == 3) l1 = add(l1, l0);
            if ((k & 7) == 3) l2 = l1;
            if ((k & 7) == 7) l2 = add(l2, l1);
        }
        /* the incomplete levels, lowest first, each the left operand of what is above it */
        LV s = l0;
        if (stages & 2) s = stages & 1 ? add(l1, s) : l1;
        if (stages & 4) s = stages & 3 ? add(l2, s) : l2;
        if (stages & 8) s = l2;
        Acc v[kOut<LF>];
        strided_finish<SI, LF>(warp, s, ext, v);
        emit(q, v);
    }
}

/* Level 1 off the stream: chunk c of the input (misaligned, ragged, or the only chunk) to its
 * K partials. NORM2 tries the medium pass first on a full, aligned chunk, as norm2_kernel does,
 * and falls back to the three classes (norm2_full_classes). `aligned`: the input (both inputs of
 * DOT) starts on a 16-byte boundary; `shift_ok`: the arrays the chunk lies in do (misaligned
 * chunks may take shifted 16-byte loads reaching before the input). Misaligned chunks, and with
 * kUsed (rows.cu, where short rows and ragged chunks are most of the work) every other one, go
 * through chunk_used's batched loads: kLoadWithin where the input is misaligned and nothing
 * says more, 16-byte loads shifted into place (element loads for a misaligned array, a view
 * such as x[1:], ran at 5-30% of the read: docs/perf-log). The ragged chunk of the 1-D
 * kernels, one a call, takes rows_guarded's compact loop. */
template <typename In, Leaf LF, bool kStream, bool kUsed = false>
__device__ __forceinline__ void chunk_values(const cg::thread_block_tile<32> &warp,
                                             const Args<In> &A, uint64_t c, bool aligned,
                                             typename In::Acc (&v)[kLeaves<LF>],
                                             bool shift_ok = false)
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
        if (done) return;
        if (full) {
            norm2_full_classes(warp, A, base, v);
            return;
        }
        if (!kUsed && aligned) { /* the ragged chunk */
            norm2_all_classes(warp, A, c, v);
            return;
        }
    } else if (full) {
        Ext ext; /* unused: one class */
        finish_chunk<In, LF>(warp, full_chunk_rows<In, LF, kStream>(A, base, half, lane0, ext), ext,
                             v);
        return;
    }
    const uint64_t rest = A.n - base;
    const int m = rest < S::kChunk ? (int)rest : (int)S::kChunk;
    if (kUsed || !aligned)
        chunk_used<In, LF>(warp, A, base, m,
                           aligned ? kLoadVector : shift_ok ? kLoadShifted : kLoadWithin, v);
    else if constexpr (LF != Leaf::kNorm2)
        finish_chunk<In, LF>(warp, rows_guarded<In, LF>(A, base, half, lane0, m), Ext(), v);
}

} // namespace

#endif
