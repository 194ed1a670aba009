/* exact_lanes.cuh — the per-lane accumulators of exact mode's flat sums (docs/EXACT.md, "Flat
 * sums on the GPU"): every element costs the same few instructions whatever the spread of
 * exponents, the cancellation or the subnormals in the data.
 *
 * Each lane owns a column of shared memory: word k of the lane's accumulator lies at
 * base[k * 32 + lane] of its warp's region, so the 32 lanes of a warp touch 32 distinct banks
 * whatever words they pick (a 64-bit access is served per half-warp; lane L of the half uses
 * banks 2L, 2L + 1). No atomics, no conflicts, no order: integer and exact binary64 additions.
 *
 *   Bins (float32 and bfloat16 SUM): binary64 bins of W consecutive exponents (BinShape: 32
 *     bins of W = 8 for bfloat16, 16 of W = 16 for float32). A float32 f (a bfloat16 is one)
 *     with exponent field E goes to bin b = E / W, read off bits 30..SHIFT. With q_b =
 *     2^(W b - 150) (b >= 1) or 2^-149 (b = 0), every float32 whose exponent field lies in bin b,
 *     of any origin, is an integer multiple of q_b below 2^24 * 2^(W b + W - 1 - 150) =
 *     2^(23 + W) q_b. A lane adds at most 2^(25 - W) elements between two flushes (2^17 or 2^9:
 *     the kernel's chunks), so its bin stays below 2^48 q_b: representable, every DADD exact;
 *     and a flush may add the 32 lanes' bins of one row exactly (below 2^53 q_b) before the one
 *     conversion to superaccumulator digits. Bins start at -0.0: a bin still -0.0 received only
 *     -0.0s. An infinity or a NaN (exponent field 255: the last bin) makes its bin +-inf or NaN
 *     (inf + -inf = NaN), classified at the flush; finite bins stay far below overflow.
 *
 *   Digits (float64 SUM, float32 DOT's exact products): 66 int64 digits of radix 2^32 at lsb
 *     2^-1074 (the SUM layout's first 66 of 70; the split and the normalising pass are
 *     superacc.h's, shared with the CPU). A finite double m * 2^(max(E, 1) - 1075), m < 2^53, sits at bit
 *     p = max(E, 1) - 1 <= 2045 above the lsb: its m << (p & 31) (below 2^85) is added as its low
 *     32 bits to digit p >> 5 and its high part to the next digit (<= 64); for a negative value,
 *     of the negated significand in two's complement: low 32 bits in [0, 2^32), high part
 *     floor(m * 2^s / 2^32) in [-2^53, 0]. A digit gains at most 2^53 per element, so a lane
 *     normalises its digits (one pass: each digit keeps its low 32 bits plus the carry of the
 *     one below, the top digit, which no element reaches, takes the last carry) every 2^9
 *     elements at most: before it,
 *     |digit| <= 2^32 + 2^31 + (2^9 + 16) * 2^53 < 2^63. Infinities and NaNs are screened into
 *     the flags (exponent field 2047 adds nothing).
 *   The float64 dot's digits: the DOT64 layout (lsb 2^-2148), its first 132 digits: each exact
 *     106-bit product as two halves below 2^53 with the sign folded in (cr_sa_split_product),
 *     four additions, at most 2^53 + 2^32 to one digit: the same normalisation interval holds.
 *     33 KiB a warp, so its blocks are one warp.
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

/* f (bits w) into its bin: `col` is the lane's column (bin 0 of this lane). */
template <int SHIFT> __device__ __forceinline__ void bin_add(double *col, uint32_t w)
{
    col[((w >> SHIFT) & (BinShape<SHIFT>::kBins - 1u)) * 32] += (double)__uint_as_float(w);
}

/* Every lane of the warp (converged: __syncwarp inside): adds row `lane` (< NB) of the warp's bins
 * (bin `lane` of the 32 lanes, exactly) to the block's superaccumulator `acc` with 64-bit
 * shared atomics, or to the flags when it is not finite, and resets the row to -0.0 (not in
 * the kernel's last flush: RESET false). `warp`: the warp's region (NB * 32 doubles). */
template <int NB, bool RESET = true>
__device__ __noinline__ unsigned bins_flush(double *warp, long long *acc, int lsb)
{
    const unsigned lane = threadIdx.x % 32;
    double *row = warp + lane * 32;
    __syncwarp();
    double s = -0.0;
    if (lane < (unsigned)NB) {
#pragma unroll 8
        for (unsigned j = 0; j < 32; j++) {
            const unsigned k = (j + lane) & 31u; /* rotated: a half-warp's lanes, distinct banks */
            s += row[k];
            if (RESET) row[k] = -0.0; /* the kernel's last flush leaves them */
        }
    }
    __syncwarp();
    unsigned flags = __double_as_longlong(s) != (long long)0x8000000000000000ull ? CR_X_NONNEGZ : 0u;
    if (isfinite(s)) {
        int idx;
        int64_t c[3];
        if (cr_sa_split_f64(s, lsb, &idx, c))
            for (int k = 0; k < 3; k++)
                if (c[k]) atomicAdd((unsigned long long *)&acc[idx + k], (unsigned long long)c[k]);
    } else {
        flags |= cr_sa_special_flags(s);
    }
    return flags;
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
            const long long v = row[(j + i) & 31u]; /* rotated: a half-warp's lanes, distinct banks */
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
