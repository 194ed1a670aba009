/* scan.cu — the order-independent operations on the GPU (CR_FAMILY_SCAN): MIN, MAX, ABSMAX, ARGMIN, ARGMAX of
 * every dtype, and the exact SUM and MEAN of the integer dtypes. One kernel launch per call.
 *
 * Why any grid gives the CPU's bits: every operation here is a fold with an associative and
 * commutative combine over a total order (or exact integer addition), so the tree does not
 * matter. The rules that make it so (src/core/values.h, docs/DETERMINISM.md "Operations"):
 *  - MIN / MAX compare "keys": the bits of a float turned into a signed integer whose order is
 *    the float order with -0.0 < +0.0 (the sign-magnitude to two's-complement flip). Every float
 *    has its own key, so the result is an element's own bit pattern. A NaN's key lies beyond
 *    the key of +-inf, so "a NaN was seen" is read off the smallest and largest keys, and both
 *    are kept whatever the op (one kernel for MIN and MAX). Floats of up to 32 bits do not even
 *    compute keys in the hot loop: three min/max of the raw bits determine both (tracker_part).
 *  - ABSMAX compares magnitudes: the bits with the sign cleared for floats (NaN's are larger
 *    than inf's), |x| as the unsigned type for signed integers.
 *  - ARGMIN / ARGMAX combine (key, index) pairs: the better key wins, equal keys go to the
 *    smaller index; a float's key is its IEEE value (so -0.0 == +0.0), and every NaN has the
 *    same key beyond every number, so the first NaN wins.
 *  - SUM / MEAN add exactly in 128 bits (two's complement for signed input).
 *
 * Layout of one launch: a grid-stride loop over the 16-byte aligned body of x, four 16-byte
 * loads in flight per thread (the structure of the benchmark's float4 read kernel, which is
 * the bandwidth ceiling these kernels are held against); the unaligned head and the ragged tail
 * (under 16 bytes each) are taken by the first threads, one element each. Each thread folds
 * into a small accumulator specialised per (kind, dtype) for the fewest instructions per 16
 * bytes (16-bit floats use packed 16x2 integer min/max), turns it into a 16-byte "Part", and
 * the block combines the Parts with warp shuffles. Thread 0 folds the block's Part into two
 * words by atomics (SUM, MINMAX, ABSMAX) or stores it in the block's slot (ARGMIN, ARGMAX), and
 * the block takes a ticket (the kernel layer's last-block hand-off, handoff.cuh); the block
 * that takes the last ticket reads the two words or combines every slot's Part, writes the
 * result and leaves the words and the ticket zero for the next launch in stream order.
 *
 * ARGMIN / ARGMAX in the hot loop: a thread reduces each vector to its best value, and keeps
 * the first vector (in its own, increasing visit order) whose best value strictly improves its
 * best, with the vector's raw 16 bytes; only at the end does it look for the first lane of that
 * vector holding the best value. The first vector holding a NaN is kept the same way, and wins.
 * That keeps the per-element work to one min/max, which is what lets 16-bit inputs (8 elements
 * per load) keep up with memory. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/values.h"
#include "gpu/kernel/grid.cuh"    /* occupancy, grid_blocks */
#include "gpu/kernel/handoff.cuh" /* last_block_arrive / _release */
#include "gpu/kernel/load.cuh"    /* split16 */
#include "gpu/kernel/traits.cuh"  /* Elem */
#include "gpu/launch.h"

namespace {

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned __int128 u128;
typedef __int128 i128;

const int kThreads = 256; /* threads per block; the host sizes the grid from SMs * occupancy */
const int kUnroll = 4;    /* 16-byte loads in flight per thread per iteration */

/* What a block hands on: 16 bytes whose meaning depends on the kind (see Kind). */
struct Part {
    u64 a, b;
};

/* One kernel per (kind, dtype). MIN and MAX share MINMAX, SUM and MEAN share SUM: the op only
 * changes what the last block writes. */
enum Kind { kMinMax, kAbsMax, kArgMin, kArgMax, kSum };

/* ---- Element types ------------------------------------------------------------------------
 * The kernel layer's Elem (traits.cuh): Bits, the storage as an unsigned integer (floats are
 * handled through their bits); W, its width; kInf / kNaN, the bits of +inf and of the
 * canonical NaN (floats). */
typedef Elem<COOPREDUCE_FLOAT32> F32;
typedef Elem<COOPREDUCE_FLOAT64> F64;
typedef Elem<COOPREDUCE_FLOAT16> F16;
typedef Elem<COOPREDUCE_BFLOAT16> BF16;
typedef Elem<COOPREDUCE_INT32> I32;
typedef Elem<COOPREDUCE_UINT32> U32;
typedef Elem<COOPREDUCE_INT64> I64;
typedef Elem<COOPREDUCE_UINT64> U64;

/* ---- Scalar rules (head, tail, final resolution; not in the hot loop) ---------------------- */
template <class E> __device__ __forceinline__ u64 low_mask()
{
    return E::W == 64 ? ~0ull : (1ull << E::W) - 1;
}
template <class E> __device__ __forceinline__ u64 abs_mask() { return low_mask<E>() >> 1; }

/* The W-bit pattern sign-extended to 64 bits. */
template <class E> __device__ __forceinline__ i64 sext(u64 bits)
{
    return E::W == 64 ? (i64)bits : ((i64)(bits << (64 - E::W))) >> (64 - E::W);
}

/* MIN/MAX key: signed, ordered as the values (floats: -0.0 < +0.0, NaN beyond +-inf), one key
 * per bit pattern. Floats flip the magnitude bits of negatives; unsigned integers flip the sign
 * bit; signed integers are their own key. Sign-extended from W bits, so the 32- and 16-bit hot
 * loops' narrow keys widen to the same value. */
template <class E> __device__ __forceinline__ i64 mm_key(u64 bits)
{
    if (E::kFloat) {
        const i64 s = sext<E>(bits);
        return s ^ ((s >> 63) & (i64)abs_mask<E>());
    }
    if (E::kSigned) return sext<E>(bits);
    return sext<E>(bits ^ (1ull << (E::W - 1)));
}

/* The bits whose key is k (mm_key is its own inverse on the W low bits for floats). */
template <class E> __device__ __forceinline__ u64 mm_bits(i64 k)
{
    if (E::kFloat) return (u64)(k ^ ((k >> 63) & (i64)abs_mask<E>())) & low_mask<E>();
    if (E::kSigned) return (u64)k & low_mask<E>();
    return ((u64)k ^ (1ull << (E::W - 1))) & low_mask<E>();
}

template <class E> __device__ __forceinline__ bool is_nan(u64 bits)
{
    return E::kFloat && (bits & abs_mask<E>()) > E::kInf;
}

/* |x|: floats the bits without the sign; signed integers |x| as the unsigned type (|INT_MIN|
 * = 2^(W-1) fits); unsigned integers x. */
template <class E> __device__ __forceinline__ u64 magnitude(u64 bits)
{
    if (E::kFloat) return bits & abs_mask<E>();
    if (E::kSigned) {
        const i64 v = sext<E>(bits);
        return v < 0 ? (0ull - (u64)v) & low_mask<E>() : (u64)v;
    }
    return bits;
}

/* ARGMIN/ARGMAX key: floats compare as IEEE numbers (-0.0 == +0.0: both key 0) and every NaN
 * gets the one key that beats every number in the op's direction; integers as for MIN/MAX. */
template <class E, int K> __device__ __forceinline__ i64 arg_key(u64 bits)
{
    if (!E::kFloat) return mm_key<E>(bits);
    const u64 a = bits & abs_mask<E>();
    if (a > E::kInf) return K == kArgMax ? INT64_MAX : INT64_MIN;
    return (bits >> (E::W - 1)) ? -(i64)a : (i64)a;
}

/* Lane k of a 16-byte vector, as W-bit bits. */
template <class E> __device__ __forceinline__ u64 lane(const uint4 &v, int k)
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    if (E::W == 64) return (u64)w[2 * k] | ((u64)w[2 * k + 1] << 32);
    if (E::W == 32) return w[k];
    return (w[k >> 1] >> (16 * (k & 1))) & 0xffffu;
}

/* ---- Combining Parts ------------------------------------------------------------------------
 * MINMAX: a = smallest key, b = largest key (as i64). ABSMAX: a = largest magnitude.
 * ARGMIN/ARGMAX: a = key (i64), b = index. SUM: the 128-bit sum, a low, b high. */
template <int K> __device__ __forceinline__ Part identity()
{
    switch (K) {
    case kMinMax: return Part{(u64)INT64_MAX, (u64)INT64_MIN};
    case kArgMin: return Part{(u64)INT64_MAX, ~0ull};
    case kArgMax: return Part{(u64)INT64_MIN, ~0ull};
    default: return Part{0, 0};
    }
}

/* Folds q into p. Associative and commutative for every kind: the tree does not matter. An
 * identity's index ~0 loses every tie to a real element. */
template <int K> __device__ __forceinline__ void combine(Part &p, const Part &q)
{
    if (K == kMinMax) {
        p.a = (u64)min((i64)p.a, (i64)q.a);
        p.b = (u64)max((i64)p.b, (i64)q.b);
    } else if (K == kAbsMax) {
        p.a = max(p.a, q.a);
    } else if (K == kSum) {
        const u64 lo = p.a + q.a;
        p.b = p.b + q.b + (lo < p.a);
        p.a = lo;
    } else {
        const i64 pk = (i64)p.a, qk = (i64)q.a;
        const bool better = K == kArgMax ? qk > pk : qk < pk;
        if (better || (qk == pk && q.b < p.b)) p = q;
    }
}

template <class E, int K> __device__ __forceinline__ Part elem_part(u64 bits, u64 idx)
{
    switch (K) {
    case kMinMax: {
        const i64 k = mm_key<E>(bits);
        return Part{(u64)k, (u64)k};
    }
    case kAbsMax: return Part{magnitude<E>(bits), 0};
    case kSum: {
        if (!E::kSigned) return Part{bits, 0};
        const i64 v = sext<E>(bits); /* two's complement in 128 bits */
        return Part{(u64)v, v < 0 ? ~0ull : 0ull};
    }
    default: return Part{(u64)arg_key<E, K>(bits), idx};
    }
}

/* ---- Thread accumulators: the hot loop -------------------------------------------------------
 * Acc<K, E>: init(), vec(v, vector index) for each 16-byte vector in increasing order, and
 * part(head) at the end (head: the element index of vector 0). */
template <int K, class E, int W = E::W> struct Acc;

/* MINMAX of floats up to 32 bits, without a key per element: three trackers of the raw bits,
 * the signed maximum, the unsigned maximum and the unsigned minimum, give both results.
 *  - MIN: if any element is negative (sign set), the largest unsigned pattern is the negative of
 *    largest magnitude, the smallest number (-0.0 = 0x80..0 only if no other negative); else the
 *    smallest unsigned pattern is the smallest non-negative number (+0.0 first).
 *  - MAX: if any element has the sign clear, the largest signed pattern is the largest of them;
 *    else (all negative) the smallest unsigned pattern is the negative of smallest magnitude.
 *  - NaN: a positive NaN is the largest signed pattern beyond +inf's; a negative NaN the largest
 *    unsigned pattern beyond -inf's.
 * Three min/max per element and no transform (for 16-bit floats, three packed 16x2 operations
 * per two elements): half the instructions of keys, which is what 8 elements per load need.
 * Returns the thread's Part (keys as mm_key); umin > umax means no element was seen. */
template <class E> __device__ __forceinline__ Part tracker_part(i64 smax, u64 umax, u64 umin)
{
    if (umin > umax) return identity<kMinMax>();
    const u64 sb = 1ull << (E::W - 1);
    if (smax > (i64)E::kInf || umax > (sb | E::kInf)) return Part{(u64)INT64_MIN, (u64)INT64_MAX};
    const u64 lo = (umax & sb) ? umax : umin;
    const u64 hi = smax >= 0 ? (u64)smax : umin;
    return Part{(u64)mm_key<E>(lo), (u64)mm_key<E>(hi)};
}

/* MINMAX, 32-bit lanes. float32: the trackers above. int32 / uint32: keys (the value, or the
 * value with the sign bit flipped, as int32), plain signed min and max; an empty thread's
 * INT32_MAX / INT32_MIN lose to every element. */
template <class E, bool Float = E::kFloat> struct MinMax32;
template <class E> struct MinMax32<E, true> {
    int smax;
    uint32_t umax, umin;
    __device__ void init()
    {
        smax = INT32_MIN;
        umax = 0;
        umin = UINT32_MAX;
    }
    __device__ __forceinline__ void vec(const uint4 &v, u64)
    {
        smax = max(smax, max(max((int)v.x, (int)v.y), max((int)v.z, (int)v.w)));
        umax = max(umax, max(max(v.x, v.y), max(v.z, v.w)));
        umin = min(umin, min(min(v.x, v.y), min(v.z, v.w)));
    }
    __device__ Part part(u64) const { return tracker_part<E>((i64)smax, umax, umin); }
};
template <class E> struct MinMax32<E, false> {
    int lo, hi;
    __device__ void init()
    {
        lo = INT32_MAX;
        hi = INT32_MIN;
    }
    static __device__ __forceinline__ int key(uint32_t u)
    {
        return E::kSigned ? (int)u : (int)(u ^ 0x80000000u);
    }
    __device__ __forceinline__ void vec(const uint4 &v, u64)
    {
        const int a = key(v.x), b = key(v.y), c = key(v.z), d = key(v.w);
        lo = min(lo, min(min(a, b), min(c, d)));
        hi = max(hi, max(max(a, b), max(c, d)));
    }
    __device__ Part part(u64) const { return Part{(u64)(i64)lo, (u64)(i64)hi}; }
};
template <class E> struct Acc<kMinMax, E, 32> : MinMax32<E> {};

/* MINMAX, 16-bit floats: the three trackers as packed 16x2 min/max (one instruction each on
 * sm_90), the halves folded at the end. */
template <class E> struct Acc<kMinMax, E, 16> {
    uint32_t smax, umax, umin;
    __device__ void init()
    {
        smax = 0x80008000u; /* INT16_MIN in both halves */
        umax = 0;
        umin = 0xffffffffu;
    }
    __device__ __forceinline__ void vec(const uint4 &v, u64)
    {
        smax = __vmaxs2(smax, __vmaxs2(__vmaxs2(v.x, v.y), __vmaxs2(v.z, v.w)));
        umax = __vmaxu2(umax, __vmaxu2(__vmaxu2(v.x, v.y), __vmaxu2(v.z, v.w)));
        umin = __vminu2(umin, __vminu2(__vminu2(v.x, v.y), __vminu2(v.z, v.w)));
    }
    __device__ Part part(u64) const
    {
        const i64 s = max((i64)(int16_t)(smax & 0xffffu), (i64)(int16_t)(smax >> 16));
        const u64 hi = max(umax & 0xffffu, umax >> 16), lo = min(umin & 0xffffu, umin >> 16);
        return tracker_part<E>(s, hi, lo);
    }
};

/* MINMAX, 64-bit lanes. */
template <class E> struct Acc<kMinMax, E, 64> {
    i64 lo, hi;
    __device__ void init()
    {
        lo = INT64_MAX;
        hi = INT64_MIN;
    }
    __device__ __forceinline__ void vec(const uint4 &v, u64)
    {
        const i64 a = mm_key<E>(lane<E>(v, 0)), b = mm_key<E>(lane<E>(v, 1));
        lo = min(lo, min(a, b));
        hi = max(hi, max(a, b));
    }
    __device__ Part part(u64) const { return Part{(u64)lo, (u64)hi}; }
};

/* ABSMAX, 32-bit lanes: magnitudes as uint32. */
template <class E> struct Acc<kAbsMax, E, 32> {
    uint32_t m;
    __device__ void init() { m = 0; }
    static __device__ __forceinline__ uint32_t mag(uint32_t u)
    {
        if (E::kFloat) return u & 0x7fffffffu;
        if (E::kSigned) return (int)u < 0 ? 0u - u : u;
        return u;
    }
    __device__ __forceinline__ void vec(const uint4 &v, u64)
    {
        m = max(m, max(max(mag(v.x), mag(v.y)), max(mag(v.z), mag(v.w))));
    }
    __device__ Part part(u64) const { return Part{m, 0}; }
};

/* ABSMAX, 16-bit floats: packed unsigned 16x2 max of the words with both signs cleared. */
template <class E> struct Acc<kAbsMax, E, 16> {
    uint32_t m;
    __device__ void init() { m = 0; }
    __device__ __forceinline__ void vec(const uint4 &v, u64)
    {
        const uint32_t k = 0x7fff7fffu;
        m = __vmaxu2(m, __vmaxu2(__vmaxu2(v.x & k, v.y & k), __vmaxu2(v.z & k, v.w & k)));
    }
    __device__ Part part(u64) const { return Part{max(m & 0xffffu, m >> 16), 0}; }
};

/* ABSMAX, 64-bit lanes. */
template <class E> struct Acc<kAbsMax, E, 64> {
    u64 m;
    __device__ void init() { m = 0; }
    __device__ __forceinline__ void vec(const uint4 &v, u64)
    {
        m = max(m, max(magnitude<E>(lane<E>(v, 0)), magnitude<E>(lane<E>(v, 1))));
    }
    __device__ Part part(u64) const { return Part{m, 0}; }
};

/* SUM, 32-bit integers: in 64 bits per thread, which no thread can overflow: a thread sums at
 * most ceil(n / 256) elements (a grid of one block), under 2^32 for any array a GPU can hold
 * (2^34 bytes of int32 per 2^32 elements, times 256), and 2^32 elements of magnitude at most
 * 2^31 sum to at most 2^63 in magnitude (and at most 2^64 - 2^32 unsigned). Cheaper in the
 * hot loop than a 128-bit total. (Forcing 8 blocks per SM onto these kernels, 32 registers,
 * spilled and was slower: docs/perf-log, run 29.) */
template <class E> struct Acc<kSum, E, 32> {
    u64 s;
    __device__ void init() { s = 0; }
    __device__ __forceinline__ void vec(const uint4 &v, u64)
    {
        if (E::kSigned)
            s += (u64)((i64)(int)v.x + (i64)(int)v.y + (i64)(int)v.z + (i64)(int)v.w);
        else
            s += (u64)v.x + (u64)v.y + (u64)v.z + (u64)v.w;
    }
    __device__ Part part(u64) const { return Part{s, E::kSigned && (i64)s < 0 ? ~0ull : 0ull}; }
};

/* SUM, 64-bit integers: each element sign- or zero-extended into the 128-bit total. */
template <class E> struct Acc<kSum, E, 64> {
    u128 s;
    __device__ void init() { s = 0; }
    __device__ __forceinline__ void vec(const uint4 &v, u64)
    {
        const u64 a = lane<E>(v, 0), b = lane<E>(v, 1);
        if (E::kSigned)
            s += (u128)(i128)(i64)a + (u128)(i128)(i64)b;
        else
            s += (u128)a + (u128)b;
    }
    __device__ Part part(u64) const { return Part{(u64)s, (u64)(s >> 64)}; }
};

/* ARGMIN / ARGMAX: the value domain V of a lane (IEEE values for floats, so that -0.0 == +0.0)
 * and the best value of a vector, ignoring NaNs (vectors with a NaN take another path). */
template <class E> struct ArgV;
template <> struct ArgV<F32> {
    typedef float V;
    static __device__ __forceinline__ V value(u64 b) { return __uint_as_float((uint32_t)b); }
    template <bool Max> static __device__ __forceinline__ V best(const uint4 &v)
    {
        const float a = __uint_as_float(v.x), b = __uint_as_float(v.y), c = __uint_as_float(v.z),
                    d = __uint_as_float(v.w);
        return Max ? fmaxf(fmaxf(a, b), fmaxf(c, d)) : fminf(fminf(a, b), fminf(c, d));
    }
    /* Any lane NaN: |x| + (2^23 - 1) reaches bit 31 exactly when |x| > inf. */
    static __device__ __forceinline__ bool nan(const uint4 &v)
    {
        const uint32_t m = 0x7fffffffu, c = 0x007fffffu;
        return (((v.x & m) + c) | ((v.y & m) + c) | ((v.z & m) + c) | ((v.w & m) + c)) >> 31;
    }
};
template <> struct ArgV<F64> {
    typedef double V;
    static __device__ __forceinline__ V value(u64 b) { return __longlong_as_double((i64)b); }
    template <bool Max> static __device__ __forceinline__ V best(const uint4 &v)
    {
        const double a = value(lane<F64>(v, 0)), b = value(lane<F64>(v, 1));
        return Max ? fmax(a, b) : fmin(a, b);
    }
    static __device__ __forceinline__ bool nan(const uint4 &v)
    {
        const u64 m = 0x7fffffffffffffffull, c = 0x000fffffffffffffull;
        return (((lane<F64>(v, 0) & m) + c) | ((lane<F64>(v, 1) & m) + c)) >> 63;
    }
};
/* 16-bit floats: packed half2 / bfloat162 max over the four words (__hmax2 ignores a NaN, and
 * returns one of its inputs), then the better of the two halves as a float (exact). */
template <> struct ArgV<F16> {
    typedef float V;
    static __device__ __forceinline__ V value(u64 b) { return cr_f16_to_f32((uint16_t)b); }
    static __device__ __forceinline__ __half2 h2(uint32_t w)
    {
        __half2 h;
        memcpy(&h, &w, 4);
        return h;
    }
    template <bool Max> static __device__ __forceinline__ V best(const uint4 &v)
    {
        const __half2 a = h2(v.x), b = h2(v.y), c = h2(v.z), d = h2(v.w);
        const __half2 m =
            Max ? __hmax2(__hmax2(a, b), __hmax2(c, d)) : __hmin2(__hmin2(a, b), __hmin2(c, d));
        const float l = __low2float(m), h = __high2float(m);
        return Max ? fmaxf(l, h) : fminf(l, h);
    }
    /* |x| + 0x3ff reaches bit 15 of its half exactly when |x| > 0x7c00; no carry between
     * halves (at most 0x83fe). */
    static __device__ __forceinline__ bool nan(const uint4 &v)
    {
        const uint32_t m = 0x7fff7fffu, c = 0x03ff03ffu;
        return (((v.x & m) + c) | ((v.y & m) + c) | ((v.z & m) + c) | ((v.w & m) + c)) &
               0x80008000u;
    }
};
/* bfloat16: widened to float32 by a shift (exact; float min/max keep subnormals without
 * relying on the bf16 min/max instructions' subnormal handling). */
template <> struct ArgV<BF16> {
    typedef float V;
    static __device__ __forceinline__ V value(u64 b) { return cr_bf16_to_f32((uint16_t)b); }
    template <bool Max> static __device__ __forceinline__ float pair(uint32_t w)
    {
        const float l = __uint_as_float(w << 16), h = __uint_as_float(w & 0xffff0000u);
        return Max ? fmaxf(l, h) : fminf(l, h);
    }
    template <bool Max> static __device__ __forceinline__ V best(const uint4 &v)
    {
        const float a = pair<Max>(v.x), b = pair<Max>(v.y), c = pair<Max>(v.z), d = pair<Max>(v.w);
        return Max ? fmaxf(fmaxf(a, b), fmaxf(c, d)) : fminf(fminf(a, b), fminf(c, d));
    }
    static __device__ __forceinline__ bool nan(const uint4 &v)
    {
        const uint32_t m = 0x7fff7fffu, c = 0x007f007fu;
        return (((v.x & m) + c) | ((v.y & m) + c) | ((v.z & m) + c) | ((v.w & m) + c)) &
               0x80008000u;
    }
};
template <> struct ArgV<I32> {
    typedef int V;
    static __device__ __forceinline__ V value(u64 b) { return (int)(uint32_t)b; }
    template <bool Max> static __device__ __forceinline__ V best(const uint4 &v)
    {
        const int a = (int)v.x, b = (int)v.y, c = (int)v.z, d = (int)v.w;
        return Max ? max(max(a, b), max(c, d)) : min(min(a, b), min(c, d));
    }
    static __device__ __forceinline__ bool nan(const uint4 &) { return false; }
};
template <> struct ArgV<U32> {
    typedef uint32_t V;
    static __device__ __forceinline__ V value(u64 b) { return (uint32_t)b; }
    template <bool Max> static __device__ __forceinline__ V best(const uint4 &v)
    {
        return Max ? max(max(v.x, v.y), max(v.z, v.w)) : min(min(v.x, v.y), min(v.z, v.w));
    }
    static __device__ __forceinline__ bool nan(const uint4 &) { return false; }
};
template <> struct ArgV<I64> {
    typedef i64 V;
    static __device__ __forceinline__ V value(u64 b) { return (i64)b; }
    template <bool Max> static __device__ __forceinline__ V best(const uint4 &v)
    {
        const i64 a = (i64)lane<I64>(v, 0), b = (i64)lane<I64>(v, 1);
        return Max ? max(a, b) : min(a, b);
    }
    static __device__ __forceinline__ bool nan(const uint4 &) { return false; }
};
template <> struct ArgV<U64> {
    typedef u64 V;
    static __device__ __forceinline__ V value(u64 b) { return b; }
    template <bool Max> static __device__ __forceinline__ V best(const uint4 &v)
    {
        const u64 a = lane<U64>(v, 0), b = lane<U64>(v, 1);
        return Max ? max(a, b) : min(a, b);
    }
    static __device__ __forceinline__ bool nan(const uint4 &) { return false; }
};

/* ARGMIN / ARGMAX accumulator: the best value so far, the index of the first vector (in this
 * thread's increasing order) that reached it, and that vector's bytes; or, once a vector with a
 * NaN has been seen, the first such vector (nan set), which no later vector replaces. */
template <int K, class E> struct ArgAcc {
    typedef typename ArgV<E>::V V;
    static constexpr bool kMax = K == kArgMax;
    V best;
    u64 vi;
    uint4 raw;
    bool have, nan;
    __device__ void init()
    {
        best = V(0);
        vi = 0;
        raw = make_uint4(0, 0, 0, 0);
        have = nan = false;
    }
    __device__ __forceinline__ void vec(const uint4 &v, u64 i)
    {
        const V b = ArgV<E>::template best<kMax>(v);
        if (ArgV<E>::nan(v)) {
            if (!nan) {
                nan = have = true;
                vi = i;
                raw = v;
            }
        } else if (!nan && (!have || (kMax ? b > best : b < best))) {
            have = true;
            best = b;
            vi = i;
            raw = v;
        }
    }
    /* The first lane of the kept vector holding the NaN, or the best value (IEEE equality). */
    __device__ Part part(u64 head) const
    {
        Part p = identity<K>();
        if (!have) return p;
#pragma unroll
        for (int k = 0; k < E::kPerVec; k++) {
            const u64 bits = lane<E>(raw, k);
            const bool hit = nan ? is_nan<E>(bits) : ArgV<E>::value(bits) == best;
            if (hit) {
                p.a = (u64)arg_key<E, K>(bits);
                p.b = head + vi * (u64)E::kPerVec + (u64)k;
                break;
            }
        }
        return p;
    }
};
template <class E, int W> struct Acc<kArgMin, E, W> : ArgAcc<kArgMin, E> {};
template <class E, int W> struct Acc<kArgMax, E, W> : ArgAcc<kArgMax, E> {};

/* ---- Block and grid ------------------------------------------------------------------------ */
template <int K> __device__ __forceinline__ Part shfl_down(const Part &p, int d)
{
    return Part{__shfl_down_sync(0xffffffffu, p.a, d), __shfl_down_sync(0xffffffffu, p.b, d)};
}

/* Thread 0 gets the block's combination. scratch: 32 Parts of shared memory; the caller must
 * __syncthreads() before reusing it. */
template <int K> __device__ __forceinline__ Part block_combine(Part p, Part *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int d = 16; d > 0; d >>= 1) combine<K>(p, shfl_down<K>(p, d));
    if (lane == 0) scratch[warp] = p;
    __syncthreads();
    if (warp == 0) {
        p = lane < (int)(blockDim.x >> 5) ? scratch[lane] : identity<K>();
        for (int d = 16; d > 0; d >>= 1) combine<K>(p, shfl_down<K>(p, d));
    }
    return p;
}

/* The result from the grid's combination: op is the coopreduce_op (MIN or MAX for kMinMax,
 * SUM or MEAN for kSum). Writes exactly the result's bytes. */
template <class E, int K> __device__ void write_result(const Part &p, int op, uint64_t n, void *out)
{
    u64 bits;
    if (K == kMinMax) {
        const bool nan = E::kFloat && ((i64)p.a < mm_key<E>(E::kInf | (1ull << (E::W - 1))) ||
                                       (i64)p.b > mm_key<E>(E::kInf));
        bits = nan ? E::kNaN : mm_bits<E>(op == COOPREDUCE_OP_MIN ? (i64)p.a : (i64)p.b);
    } else if (K == kAbsMax) {
        bits = E::kFloat && p.a > E::kInf ? E::kNaN : p.a;
    } else if (K == kSum) {
        if (op == COOPREDUCE_OP_MEAN) {
            double m;
            if (n == 0) {
                m = __longlong_as_double((i64)CR_NAN_F64);
            } else {
                const u128 s = ((u128)p.b << 64) | p.a;
                const bool neg = E::kSigned && (i64)p.b < 0;
                m = cr_round_div(neg, neg ? (u128)0 - s : s, 0, n, 53, -1022);
            }
            *(double *)out = m;
        } else if (E::W == 32) {
            *(u64 *)out = p.a; /* n <= 2^32 (api.c): the sum fits, two's complement */
        } else {
            ((u64 *)out)[0] = p.a; /* low 8 bytes first */
            ((u64 *)out)[1] = p.b;
        }
        return;
    } else {
        *(u64 *)out = p.b;
        return;
    }
    if (E::W == 16)
        *(uint16_t *)out = (uint16_t)bits;
    else if (E::W == 32)
        *(uint32_t *)out = (uint32_t)bits;
    else
        *(u64 *)out = bits;
}

/* ---- The grid's fold by atomics ---------------------------------------------------------------
 * SUM, MINMAX and ABSMAX combine with operations the GPU does atomically in L2, and thread 0
 * need not wait for their results (reductions, not fetches): 64-bit adds and 64-bit unsigned
 * maxima. The words live beside the ticket (bytes 16-39 of its zeroed 256, workspace.c), zero
 * between launches, so zero must be each fold's identity:
 *  - SUM: a 128-bit Part (lo, hi) as three independent sums, of lo's low 32 bits, of lo's high
 *    32 bits (each at most 65536 blocks * 2^32: no carry out of 64 bits) and of hi (modulo
 *    2^64); the last block puts them back together modulo 2^128. No add waits for another's
 *    carry, in any order the same total.
 *  - MINMAX: max(key ^ sign) gives the largest key and max(~(key ^ sign)) the smallest (both
 *    order-preserving maps of i64 onto u64, with 0 the identity's image). ABSMAX: max(magnitude).
 * The last block takes the words and leaves zeros (atomicExch), so no Part is written to or read
 * from the slots: at mid sizes that read of every Part was the hand-off's cost. ARGMIN and
 * ARGMAX (a key and an index, 16 bytes: no atomic) keep the slots. */
template <int K> constexpr bool kFolds = K == kSum || K == kMinMax || K == kAbsMax;

const u64 kSignBit = 1ull << 63;

__device__ __forceinline__ void red_add(u64 *w, u64 v)
{
    if (v) atomicAdd((unsigned long long *)w, (unsigned long long)v);
}
__device__ __forceinline__ void red_max(u64 *w, u64 v)
{
    if (v) atomicMax((unsigned long long *)w, (unsigned long long)v);
}
__device__ __forceinline__ u64 take(u64 *w) { return atomicExch((unsigned long long *)w, 0ull); }

/* Called by one thread per block, before its ticket (whose fence orders these atomics). */
template <int K> __device__ __forceinline__ void fold_atomic(u64 *w, const Part &p)
{
    if (K == kSum) {
        red_add(&w[0], p.a & 0xffffffffull);
        red_add(&w[1], p.a >> 32);
        red_add(&w[2], p.b);
    } else if (K == kMinMax) {
        red_max(&w[0], ~(p.a ^ kSignBit));
        red_max(&w[1], p.b ^ kSignBit);
    } else {
        red_max(&w[0], p.a);
    }
}

/* Called by one thread of the last block: the grid's Part, and the words zero again. */
template <int K> __device__ __forceinline__ Part take_folded(u64 *w)
{
    if (K == kSum) {
        const u64 l0 = take(&w[0]), l1 = take(&w[1]), h = take(&w[2]);
        const u64 lo = l0 + (l1 << 32);
        return Part{lo, h + (l1 >> 32) + (lo < l0)};
    }
    if (K == kMinMax) return Part{~take(&w[0]) ^ kSignBit, take(&w[1]) ^ kSignBit};
    return Part{take(&w[0]), 0};
}

template <class E, int K>
__global__ void __launch_bounds__(kThreads)
    ops_kernel(const typename E::Bits *__restrict__ x, uint64_t n, int op, Part *partials,
               unsigned int *ticket, void *out)
{
    typedef typename E::Bits T;
    __shared__ Part scratch[32];

    /* Elements before the first 16-byte boundary, the vectors, the ragged tail. */
    const Split sp = split16(x, n, sizeof(T));
    const uint64_t head = sp.head, nvec = sp.units, tail_start = sp.tail_start;
    const uint4 *body = (const uint4 *)(x + head);

    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    Acc<K, E> acc;
    acc.init();
    uint64_t i = t;
    /* Four loads issued before any is used; folded in increasing index order (ARG needs it). */
    for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
        uint4 v[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; k++) v[k] = __ldg(body + i + k * stride);
#pragma unroll
        for (int k = 0; k < kUnroll; k++) acc.vec(v[k], i + k * stride);
    }
    /* The last, partial round one load at a time: issuing its loads together (predicated)
     * was tried and gained nothing measurable at 2^20-2^24 (docs/perf-log, runs 26-28). */
    for (; i < nvec; i += stride) acc.vec(__ldg(body + i), i);
    Part p = acc.part(head);
    if (t < head) combine<K>(p, elem_part<E, K>(__ldg(x + t), t));
    if (t < n - tail_start)
        combine<K>(p, elem_part<E, K>(__ldg(x + tail_start + t), tail_start + t));

    p = block_combine<K>(p, scratch);
    if (kFolds<K>) {
        /* The kinds whose combine an atomic does: the grid folds into one 16-byte word pair
         * beside the ticket, and the last block reads two words instead of every Part. */
        u64 *folded = (u64 *)(ticket + 4);
        if (threadIdx.x == 0) fold_atomic<K>(folded, p);
        if (!last_block_arrive<false>(ticket)) return;
        if (threadIdx.x == 0) {
            write_result<E, K>(take_folded<K>(folded), op, n, out);
            last_block_release(ticket);
        }
        return;
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = p;
    if (!last_block_arrive<false>(ticket)) return; /* also a barrier: scratch is free again */
    /* Four loads issued before any is combined: one L2 round trip for the usual grid of
     * 4 or 8 blocks per SM, instead of one per partial. */
    Part q = identity<K>();
    for (unsigned int j = threadIdx.x; j < gridDim.x; j += 4 * blockDim.x) {
        Part r[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const unsigned int jk = j + k * blockDim.x;
            r[k] = jk < gridDim.x ? Part{__ldcg(&partials[jk].a), __ldcg(&partials[jk].b)}
                                  : identity<K>();
        }
#pragma unroll
        for (int k = 0; k < 4; k++) combine<K>(q, r[k]);
    }
    q = block_combine<K>(q, scratch);
    if (threadIdx.x == 0) {
        write_result<E, K>(q, op, n, out);
        last_block_release(ticket);
    }
}

/* ---- Dispatch -------------------------------------------------------------------------------
 * A forced grid is clamped to this many blocks (16 bytes of workspace each: 1 MiB). The first
 * allocation covers kMaxBlocksPerSm blocks per SM (256-thread blocks: at most 2048 resident
 * threads per SM on the GPUs coopreduce runs on), so only a forced grid makes the Parts grow. */
const int kMaxGrid = 65536;
const int kMaxBlocksPerSm = 8;

/* The kind that computes op; -1 when there is no GPU kernel for (op, dtype). */
int kind_of(coopreduce_op op, coopreduce_dtype dtype)
{
    const bool integer = dtype == COOPREDUCE_INT32 || dtype == COOPREDUCE_INT64 ||
                         dtype == COOPREDUCE_UINT32 || dtype == COOPREDUCE_UINT64;
    switch (op) {
    case COOPREDUCE_OP_MIN:
    case COOPREDUCE_OP_MAX: return kMinMax;
    case COOPREDUCE_OP_ABSMAX: return kAbsMax;
    case COOPREDUCE_OP_ARGMIN: return kArgMin;
    case COOPREDUCE_OP_ARGMAX: return kArgMax;
    case COOPREDUCE_OP_SUM:
    case COOPREDUCE_OP_MEAN: return integer ? kSum : -1;
    default: return -1;
    }
}

/* The grid: enough blocks for one 16-byte vector per thread, at most one wave. */
template <class E, int K> struct Grid {
    static cudaError_t run(const cr_gpu_call *c, cr_gpu_grid *g)
    {
        const uint64_t vecs = c->n / E::kPerVec + 1;
        /* The folding kinds use no slot, but the slots' allocation is also the ticket's. */
        return slotted_grid<ops_kernel<E, K>>(c, kThreads, (vecs + kThreads - 1) / kThreads,
                                              kMaxGrid, kMaxBlocksPerSm, sizeof(Part), g);
    }
};

template <class E, int K> struct Launcher {
    static cudaError_t run(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g)
    {
        ops_kernel<E, K><<<g->blocks, kThreads, 0, c->stream>>>(
            (const typename E::Bits *)c->x, c->n, (int)c->plan->op, (Part *)w->slots, w->ticket,
            c->out);
        return cudaGetLastError();
    }
};

/* Calls F<E, K>::run(args...) for the call's (dtype, kind). The float types have no kSum
 * kernel: the switch never instantiates one. */
template <template <class, int> class F, class... A>
cudaError_t dispatch(const cr_gpu_call *c, A... args)
{
    const int kind = kind_of(c->plan->op, c->plan->dtype);
#define CR_SCAN_KINDS(E)                                                                           \
    switch (kind) {                                                                                \
    case kMinMax: return F<E, kMinMax>::run(c, args...);                                           \
    case kAbsMax: return F<E, kAbsMax>::run(c, args...);                                           \
    case kArgMin: return F<E, kArgMin>::run(c, args...);                                           \
    case kArgMax: return F<E, kArgMax>::run(c, args...);                                           \
    default: break;                                                                                \
    }
#define CR_SCAN_SUM(E)                                                                             \
    if (kind == kSum) return F<E, kSum>::run(c, args...);
    switch (c->plan->dtype) {
    case COOPREDUCE_FLOAT32: CR_SCAN_KINDS(F32) break;
    case COOPREDUCE_FLOAT64: CR_SCAN_KINDS(F64) break;
    case COOPREDUCE_FLOAT16: CR_SCAN_KINDS(F16) break;
    case COOPREDUCE_BFLOAT16: CR_SCAN_KINDS(BF16) break;
    case COOPREDUCE_INT32: CR_SCAN_SUM(I32) CR_SCAN_KINDS(I32) break;
    case COOPREDUCE_UINT32: CR_SCAN_SUM(U32) CR_SCAN_KINDS(U32) break;
    case COOPREDUCE_INT64: CR_SCAN_SUM(I64) CR_SCAN_KINDS(I64) break;
    case COOPREDUCE_UINT64: CR_SCAN_SUM(U64) CR_SCAN_KINDS(U64) break;
    default: break;
    }
#undef CR_SCAN_KINDS
#undef CR_SCAN_SUM
    return cudaErrorInvalidValue;
}

/* ---- Many rows (reductions along an axis) and segments --------------------------------------
 * One warp per row or segment, any length: every kind here is order-independent, so the warp's
 * lanes take the row's elements k = lane, lane + 32, ... (four loads in flight), fold them with
 * the same Parts and rules as the 1-D kernel (index k within the row for ARGMIN / ARGMAX), and
 * lane 0 writes the row's result as the 1-D kernel's last block does. Row r is x[r * len ..) of
 * len elements, or, with offsets (device memory), x[offsets[r] .. offsets[r + 1]). */
template <class E, int K>
__global__ void __launch_bounds__(kThreads)
    rows_kernel(const typename E::Bits *__restrict__ x, uint64_t rows, uint64_t row_len,
                const int64_t *__restrict__ offsets, int op, size_t result_size, char *out)
{
    const int lane = threadIdx.x & 31;
    const uint64_t warps = (uint64_t)gridDim.x * (kThreads / 32);
    for (uint64_t r = (uint64_t)blockIdx.x * (kThreads / 32) + (threadIdx.x >> 5); r < rows;
         r += warps) {
        const uint64_t start = offsets ? (uint64_t)__ldg(offsets + r) : r * row_len;
        const uint64_t len = offsets ? (uint64_t)__ldg(offsets + r + 1) - start : row_len;
        const typename E::Bits *row = x + start;
        Part p = identity<K>();
        uint64_t k = lane;
        for (; k + 96 < len; k += 128) {
            u64 v[4];
#pragma unroll
            for (int j = 0; j < 4; j++) v[j] = __ldg(row + k + 32 * j);
#pragma unroll
            for (int j = 0; j < 4; j++) combine<K>(p, elem_part<E, K>(v[j], k + 32 * j));
        }
        for (; k < len; k += 32) combine<K>(p, elem_part<E, K>(__ldg(row + k), k));
        for (int d = 16; d > 0; d >>= 1) combine<K>(p, shfl_down<K>(p, d));
        if (lane == 0) write_result<E, K>(p, op, len, out + r * result_size);
    }
}

template <class E, int K> struct RowsLauncher {
    static cudaError_t run(const cr_gpu_call *c, uint64_t rows, uint64_t len,
                           const int64_t *offsets)
    {
        /* A warp per row, at most a wave of kMaxBlocksPerSm blocks per SM. */
        const int blocks = grid_blocks((rows + kThreads / 32 - 1) / (kThreads / 32), c->sm_count,
                                       kMaxBlocksPerSm, c->forced_blocks, kMaxGrid);
        rows_kernel<E, K><<<blocks, kThreads, 0, c->stream>>>(
            (const typename E::Bits *)c->x, rows, len, offsets, (int)c->plan->op,
            c->plan->result_size, (char *)c->out);
        return cudaGetLastError();
    }
};

} // namespace

extern "C" {

cudaError_t cr_gpu_scan_rows_launch(const cr_gpu_call *c, uint64_t rows, uint64_t len,
                                    const int64_t *offsets)
{
    return dispatch<RowsLauncher>(c, rows, len, offsets);
}

/* n may be 0 (SUM, MEAN: the kernel writes 0 or the NaN of an empty mean). */
cudaError_t cr_gpu_scan_grid(const cr_gpu_call *c, cr_gpu_grid *g) { return dispatch<Grid>(c, g); }

cudaError_t cr_gpu_scan_launch(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g)
{
    return dispatch<Launcher>(c, w, g);
}

} // extern "C"
