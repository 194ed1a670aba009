/* exact_lanes.cuh — the per-lane accumulators of exact mode's flat sums (docs/EXACT.md, "Flat
 * sums on the GPU"): every element costs the same few instructions whatever the spread of
 * exponents, the cancellation or the subnormals in the data.
 *
 * Each lane owns a column of shared memory: word k of the lane's accumulator lies at
 * base[k * 32 + lane] of its warp's region, so the 32 lanes of a warp touch 32 distinct banks
 * whatever words they pick (a 64-bit access is served per half-warp; lane L of the half uses
 * banks 2L, 2L + 1). No atomics, no conflicts, no order: integer and exact binary64 additions.
 *
 *   Bins (float32 SUM, bfloat16 units' exact float32 trees): binary64 bins of W consecutive
 *     exponents (BinShape: 16 of W = 16). A float32 f with exponent field E goes to bin
 *     b = E / W, read off bits 30..SHIFT. With q_b =
 *     2^(W b - 150) (b >= 1) or 2^-149 (b = 0), every float32 whose exponent field lies in bin b,
 *     of any origin, is an integer multiple of q_b below 2^24 * 2^(W b + W - 1 - 150) =
 *     2^(23 + W) q_b. A lane adds at most 2^(25 - W) = 2^9 of them between two flushes, so
 *     its bin stays below 2^48 q_b: representable, every DADD exact;
 *     and a flush may add the 32 lanes' bins of one row exactly (below 2^53 q_b) before the one
 *     conversion to superaccumulator digits. Bins start at -0.0: a bin still -0.0 received only
 *     -0.0s. An infinity or a NaN (exponent field 255: the last bin) makes its bin +-inf or NaN
 *     (inf + -inf = NaN), classified at the flush; finite bins stay far below overflow.
 *   Float bins (bfloat16 elements that fail the units' range check): binary32 bins of 8
 *     exponents, the elements scaled by 2^-16 (FBinShape below).
 *
 *   Digits (float64 SUM; float32 DOT's exact products in a window of 20 of them, below): 66
 *     int64 digits of radix 2^32 at lsb 2^-1074 (the SUM layout's first 66 of 70; the
 *     normalising pass is superacc.h's). A finite
 *     double m * 2^(max(E, 1) - 1075), m < 2^53, sits at bit p = max(E, 1) - 1 <= 2045 above the
 *     lsb: m * 2^s (s = p & 31, below 2^85) goes as its low 32 bits to digit p >> 5 and its
 *     high part to the next digit (<= 64), both negated for a negative value (digits_add). A
 *     digit gains at most 2^53 in magnitude per element, so a lane normalises its digits (one
 *     pass: each digit keeps its low 32 bits plus the carry of the one below, the top digit,
 *     which no element reaches, takes the last carry) after at most 2^9 elements and an
 *     iteration's 16 more (the partial iteration joins the first chunk) and the head and tail
 *     elements (2, with the last chunk): before it, |digit| <= 2^32 + 2^31 + (2^9 + 18) * 2^53
 *     < 2^63 (any count up to about 2^10 would do).
 *   The float64 dot's digits: the DOT64 layout (lsb 2^-2148), its first 132 digits: each exact
 *     106-bit product in four pieces below 2^53 to four consecutive digits (digits_add_product):
 *     the same normalisation interval holds. 33 KiB a warp, so its blocks are one warp.
 *   Neither tests its elements: an infinity or a NaN adds bounded garbage, and the largest
 *     exponent field of a batch tells the caller to take the batch's flags (special_flags,
 *     product_special_flags); a flag of an infinity or a NaN decides the result whatever the
 *     digits hold.
 *
 * Part of exact.cu; included there only. */
#ifndef COOPREDUCE_GPU_EXACT_LANES_CUH
#define COOPREDUCE_GPU_EXACT_LANES_CUH

#include <stdint.h>

#include "core/superacc.h"

namespace {

/* ---- Bins --------------------------------------------------------------------------------- */
/* Bins read off bits 30..SHIFT of a float32: SHIFT 26, 32 bins of 8 exponents (8 KiB a warp);
 * SHIFT 27, 16 bins of 16 exponents (4 KiB a warp: more warps per SM). */
template <int SHIFT> struct BinShape {
    static constexpr int kBins = 1 << (31 - SHIFT);
    static constexpr int kWidth = 1 << (SHIFT - 23); /* exponents per bin */
    /* Largest count of elements a lane may add to its bins between two flushes: a float32 of a
     * bin is below 2^(24 + kWidth - 1) of its unit, a lane's bin must stay below 2^48 of it. */
    static constexpr uint64_t kLaneElems = 1ull << (25 - kWidth);
};

/* f (bits w) into its bin: `col` is the lane's column (bin 0 of this lane). The bin's byte
 * offset from the column, bin * 32 lanes * 8 bytes, is taken off w by one shift and one mask;
 * with an element index the compiler formed the address in four instructions. */
template <int SHIFT> __device__ __forceinline__ void bin_add(double *col, uint32_t w)
{
    const uint32_t off = (w >> (SHIFT - 8)) & ((BinShape<SHIFT>::kBins - 1u) << 8);
    double *bin = reinterpret_cast<double *>(reinterpret_cast<char *>(col) + off);
    *bin += (double)__uint_as_float(w);
}

/* v (finite) added to the block's digits acc (lsb its layout's) with 64-bit shared atomics
 * (inline in the flushes; exact.cu's sa_atomic is its out-of-line form for rare callers). */
__device__ __forceinline__ void sa_add(long long *acc, int lsb, double v)
{
    int idx;
    int64_t c[3];
    if (!cr_sa_split_f64(v, lsb, &idx, c)) return;
    for (int k = 0; k < 3; k++)
        if (c[k]) atomicAdd((unsigned long long *)&acc[idx + k], (unsigned long long)c[k]);
}

/* Every lane of the warp (converged: __syncwarp inside): adds row `lane` (< NB) of the warp's bins
 * (bin `lane` of the 32 lanes, exactly, in binary64) to the block's superaccumulator `acc` with
 * 64-bit shared atomics, or to the flags when it is not finite, and resets the row to -0.0 (not
 * in the kernel's last flush: RESET false). `warp`: the warp's region (NB * 32 bins). T = double:
 * the binary64 bins; T = float: the float bins (FBinShape below), whose row sum is scaled back
 * by 2^16. CR_X_NONNEGZ unless the row sum is -0.0 (every bin received only -0.0s). */
template <int NB, bool RESET = true, class T>
__device__ __noinline__ unsigned bins_flush(T *warp, long long *acc, int lsb)
{
    const unsigned lane = threadIdx.x % 32;
    T *row = warp + lane * 32;
    __syncwarp();
    /* four chains of additions, not one: every partial sum is exact (below), so any order
     * gives the same row sum; -0.0 only when every bin is */
    double s4[4] = {-0.0, -0.0, -0.0, -0.0};
    if (lane < (unsigned)NB) {
#pragma unroll 8
        for (unsigned j = 0; j < 32; j++) {
            const unsigned k = (j + lane) & 31u; /* rotated: the lanes' banks distinct */
            s4[j & 3] += (double)row[k];
            if (RESET) row[k] = (T)-0.0; /* the kernel's last flush leaves them */
        }
    }
    double s = (s4[0] + s4[1]) + (s4[2] + s4[3]);
    __syncwarp();
    if (sizeof(T) == 4) s *= 0x1p16; /* float bins: exact */
    unsigned flags =
        __double_as_longlong(s) != (long long)0x8000000000000000ull ? CR_X_NONNEGZ : 0u;
    if (isfinite(s))
        sa_add(acc, lsb, s);
    else
        flags |= cr_sa_special_flags(s);
    return flags;
}

/* ---- Float bins ---------------------------------------------------------------------------- */
/* bfloat16 SUM: binary32 bins of 8 exponents (bits 30..26 of the float32 a bfloat16 is), 32 a
 * lane (4 KiB a warp). A bfloat16 with exponent field E in bin b = E / 8 is an integer multiple
 * of q_b = 2^(8 b - 134) (b >= 1; 2^-133, its smallest subnormal, for b = 0) below 2^8 *
 * 2^(8 b + 7 - 134) = 2^15 q_b. It goes in scaled by 2^-16 (exact: the smallest bfloat16
 * subnormal becomes 2^-149, float32's, and 8 significant bits fit anywhere), so a bin holds
 * multiples of u_b = q_b 2^-16 >= 2^-149; after at most 2^9 elements a lane (FBinShape::
 * kLaneElems) it stays below 2^24 u_b, where every multiple of u_b is a float32: each FADD is
 * exact, and the top bin stays below 2^24 2^(248 - 134 - 16) = 2^122, clear of overflow. A
 * flush adds a row of the warp's bins in binary64 (below 2^29 u_b: exact) and scales it back by
 * 2^16. Bins start at -0.0f; an infinity or a NaN makes its bin +-inf or NaN, classified at the
 * flush (bins_flush with T = float). Half the shared memory traffic of binary64 bins and no
 * conversion an element. */
struct FBinShape {
    static constexpr int kBins = 32;
    static constexpr uint64_t kLaneElems = 1ull << 9;
};

/* w: the float32 bits of a bfloat16 (its 16 bits in the high half). The scaling and the
 * addition in one FFMA (the kernels are compiled with --fmad=false, so it is asked for): the
 * product w * 2^-16 is exact, so the fused result is the rounded sum of the two steps. */
__device__ __forceinline__ void fbin_add(float *col, uint32_t w)
{
    /* the byte offset bin * 32 lanes * 4 bytes by one shift and one mask, as in bin_add */
    float *bin = reinterpret_cast<float *>(reinterpret_cast<char *>(col) + ((w >> 19) & 0xf80u));
    *bin = __fmaf_rn(__uint_as_float(w), 0x1p-16f, *bin);
}

/* ---- Digits ------------------------------------------------------------------------------- */
/* The SUM layout's first 66 digits: an element reaches digit 64 at most, so the top digit takes
 * only the normalisations' carries (below 2^31 each) and cannot wrap whatever the count (with 65,
 * digit 64 took about 2^50 per element near 2^1024 and wrapped after some 2^13 of them). */
constexpr int kLaneDigits = 66;
/* Largest count of elements a lane may add to its digits between two normalisations. */
constexpr uint64_t kDigitLaneElems = 1ull << 9;

/* The float64 dot's lanes: the DOT64 layout's first 132 digits (a product reaches digit 130;
 * the top one takes carries only, as above). */
constexpr int kLaneDigitsDot64 = 132;

/* The float32 dot's lanes: a window of the SUM layout, its 20 digits from digit 22 (lsb 2^-370).
 * A nonzero float32 product, exact in binary64, is a multiple of 2^-298 below 2^256: exponent
 * field E in [725, 1278], its significand's lsb at bit E - 705 in [20, 573] of the window, so it
 * reaches digit 18 at most and digit 19 takes carries only. A zero product (E = 0) and an
 * infinity or a NaN (E = 2047) are clamped to bit 575: a zero adds nothing, the garbage stays
 * within the bounds. 5 KiB a warp where the 66 digits took 16.5: more warps an SM. */
constexpr int kDot32Base = 22;
constexpr int kLaneDigitsDot32 = 20;
constexpr uint32_t kDot32Clamp = 575;

/* v, or -v where sx (0 or all ones) is all ones: (v ^ -1) + 1 = -v. */
__device__ __forceinline__ long long negated_if(uint64_t v, uint64_t sx)
{
    return (long long)((v ^ sx) - sx);
}

/* The 64-bit mask of the sign bit of w (0 or all ones), built from one 32-bit shift: both
 * halves are the same register, where a sign extension of the 32-bit mask cost a second shift
 * per element. */
__device__ __forceinline__ uint64_t sign_mask(uint32_t w)
{
    const uint32_t s = (uint32_t)((int32_t)w >> 31);
    return ((uint64_t)s << 32) | s;
}

/* digits_add: the double of bits b (a float64 value, or a float32 product, exact in binary64)
 * into the lane's digits (column `col`, stride 32), in 32-bit instructions: about 33 an element,
 * where 64-bit shifts and a test per element took 55 (1.2x the float64 sum's speed on an H200).
 * The magnitude's significand m (< 2^53, words mh:ml) sits at bit p = max(E, 1) - 1 above
 * 2^-1074 (or, BASE = kDot32Base, at bit E - 705 of the float32 dot's window); m * 2^s (s =
 * p & 31) is the 85-bit w2:w1:w0 (two funnel shifts and a shift); w0 goes
 * to digit p >> 5 and w2:w1 to the next one, both negated for a negative value (x + (v ^ -1) +
 * 1 = x - v: the sign costs no fold of m): at most 2^53 to a digit, so the normalisation
 * interval holds.
 *
 * Nothing is tested per element. An infinity or a NaN (E = 2047) adds garbage to digits 63 and
 * 64, within the same bounds as any value (nothing wraps), and shows in `emax` (the largest E
 * seen), from which the caller takes its flags (special_flags). The garbage never matters: a
 * flag of an infinity or a NaN travels with the digits through every fold and exchange, and
 * makes the result NaN or an infinity whatever the digits hold (cr_sa_round). */
template <int BASE = 0>
__device__ __forceinline__ void digits_add(long long *col, uint64_t b, uint32_t &emax)
{
    const uint32_t wl = (uint32_t)b, wh = (uint32_t)(b >> 32);
    const uint32_t ex = (wh >> 20) & 0x7ffu;
    emax = max(emax, ex);
    /* the float32 dot's window (BASE = kDot32Base): the same two instructions */
    const uint32_t p = BASE ? min(ex - (32u * BASE + 1u), kDot32Clamp) : max(ex, 1u) - 1u;
    const uint32_t sh = p & 31u;
    const uint32_t mh = (wh & 0xfffffu) | (ex ? 0x100000u : 0u);
    const uint32_t w0 = wl << sh, w1 = __funnelshift_l(wl, mh, sh),
                   w2 = __funnelshift_l(mh, 0u, sh);
    const uint64_t sx = sign_mask(wh);
    long long *d = col + (p >> 5) * 32u;
    d[0] += negated_if(w0, sx);
    d[32] += negated_if(((uint64_t)w2 << 32) | w1, sx);
}

/* The exact product of the float64 factors of bits a and b into the lane's DOT64 digits (lsb
 * 2^-2148, stride 32), in 32-bit instructions: about 72 a product, where a 64 x 64 -> 128-bit
 * product split into 53-bit halves took 130. The significands' product P = ma * mb < 2^106
 * (four 32 x 32 -> 64-bit multiplies, words p3..p0) sits at bit p = max(Ea, 1) + max(Eb, 1) -
 * 2; P * 2^s (s = p & 31) is the 137-bit x4..x0 (funnel shifts), which goes to four digits from
 * p >> 5 in pieces of at most 53 bits: x0; x1 with x2's low 21 bits; x2's high 11 bits (in
 * place); x4:x3 (below 2^41). Each is negated for a negative product. `nonneg` becomes nonzero
 * unless the product is -0.0 (negative, P = 0). As in digits_add, a factor with E = 2047 adds
 * garbage (at most to digit 130, within the bounds) and shows in `emax`; its flags are
 * product_special_flags'. */
__device__ __forceinline__ void digits_add_product(long long *col, uint64_t a, uint64_t b,
                                                   uint32_t &emax, uint64_t &nonneg)
{
    const uint32_t ah = (uint32_t)(a >> 32), bh = (uint32_t)(b >> 32);
    const uint32_t ea = (ah >> 20) & 0x7ffu, eb = (bh >> 20) & 0x7ffu;
    emax = max(emax, max(ea, eb));
    const uint32_t p = max(ea, 1u) + max(eb, 1u) - 2u, sh = p & 31u;
    const uint32_t mah = (ah & 0xfffffu) | (ea ? 0x100000u : 0u);
    const uint32_t mbh = (bh & 0xfffffu) | (eb ? 0x100000u : 0u);
    const uint32_t mal = (uint32_t)a, mbl = (uint32_t)b;
    const uint64_t t0 = (uint64_t)mal * mbl;
    const uint64_t mid = (uint64_t)mal * mbh + (uint64_t)mah * mbl + (t0 >> 32);
    const uint64_t top = (uint64_t)mah * mbh + (mid >> 32);
    const uint32_t p0 = (uint32_t)t0, p1 = (uint32_t)mid, p2 = (uint32_t)top,
                   p3 = (uint32_t)(top >> 32);
    const uint32_t x0 = p0 << sh, x1 = __funnelshift_l(p0, p1, sh),
                   x2 = __funnelshift_l(p1, p2, sh), x3 = __funnelshift_l(p2, p3, sh),
                   x4 = __funnelshift_l(p3, 0u, sh);
    const uint32_t sgn = ah ^ bh;
    nonneg |= ((uint64_t)(~sgn & 0x80000000u) << 32) | (p0 | p1 | p2 | p3);
    const uint64_t sx = sign_mask(sgn);
    long long *d = col + (p >> 5) * 32u;
    d[0] += negated_if(x0, sx);
    d[32] += negated_if(((uint64_t)(x2 & 0x1fffffu) << 32) | x1, sx);
    d[64] += negated_if(x2 & 0xffe00000u, sx);
    d[96] += negated_if(((uint64_t)x4 << 32) | x3, sx);
}

/* Rare (a batch whose emax is 2047): the flags of the NB values of bits b[], or of the NB
 * products a[k] * b[k] (a product with a non-finite factor is not -0.0: `nonneg` set). */
template <int NB> __device__ __forceinline__ unsigned special_flags(const uint64_t (&b)[NB])
{
    unsigned flags = 0;
#pragma unroll
    for (int k = 0; k < NB; k++)
        if (((b[k] >> 52) & 0x7ffu) == 0x7ffu)
            flags |= cr_sa_special_flags(__longlong_as_double((long long)b[k]));
    return flags;
}

template <int NB>
__device__ __forceinline__ unsigned product_special_flags(const uint64_t (&a)[NB],
                                                          const uint64_t (&b)[NB], uint64_t &nonneg)
{
    unsigned flags = 0;
#pragma unroll
    for (int k = 0; k < NB; k++)
        if (((a[k] >> 52) & 0x7ffu) == 0x7ffu || ((b[k] >> 52) & 0x7ffu) == 0x7ffu) {
            flags |= cr_sa_product_special(__longlong_as_double((long long)a[k]),
                                           __longlong_as_double((long long)b[k]));
            nonneg = 1;
        }
    return flags;
}

/* One normalising pass over the lane's LD digits (its own column only: no synchronisation). */
template <int LD> __device__ __forceinline__ void digits_normalise(long long *col)
{
    cr_sa_normalise_strided(reinterpret_cast<int64_t *>(col), LD, 32);
}

/* Every lane of the warp (converged), at the kernel's end: the 32 lanes' digits added to the
 * block's superaccumulator `acc` in one reading pass, neither normalised first nor reset (the
 * kernel ends). A lane digit v (|v| < 2^63: a lane normalises at least every kDigitLaneElems
 * elements) is exactly lo + 2^32 hi with lo = v mod 2^32 in [0, 2^32) and hi = v >> 32
 * (arithmetic, |hi| < 2^31): the lane that owns digit i sums the 32 lanes' lo into acc[i] and
 * their hi into acc[i + 1] (below 2^37 each; a normalised row's sum was below 2^38). acc has a
 * digit above LD - 1 (the layouts' ND > LD). It reads the lanes' digits once, where a
 * normalising pass and a flush that resets them read and wrote them twice: 1-1.4 us of the
 * last flush's 3-4 us at 2^22-2^24 (docs/perf-log, runs 144-145). */
template <int LD> __device__ __noinline__ void digits_fold(const long long *warp, long long *acc)
{
    const unsigned lane = threadIdx.x % 32;
    __syncwarp();
    for (unsigned i = lane; i < (unsigned)LD; i += 32) {
        const long long *row = warp + i * 32;
        long long lo = 0, hi = 0;
#pragma unroll 8
        for (unsigned j = 0; j < 32; j++) {
            const long long v =
                row[(j + i) & 31u]; /* rotated: a half-warp's lanes, distinct banks */
            lo += v & 0xffffffffll;
            hi += v >> 32;
        }
        if (lo) atomicAdd((unsigned long long *)&acc[i], (unsigned long long)lo);
        if (hi) atomicAdd((unsigned long long *)&acc[i + 1], (unsigned long long)hi);
    }
    __syncwarp();
}

} // namespace

#endif
