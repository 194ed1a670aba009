/* exact.cu — EXACT mode kernels (docs/EXACT.md): the correctly rounded SUM of float32, float64,
 * float16, bfloat16 and DOT of float32 and float64, in one launch.
 *
 * Each thread runs a grid-stride loop of 16-byte loads (element loads for a dot whose arrays sit
 * differently within 16 bytes), U units per iteration. How the elements are added depends on the
 * type; every step is exact, and each costs the same whatever the data:
 *   float32 and bfloat16 SUM: per-lane binary64 bins in shared memory, one per 16 exponents
 *     (exact_lanes.cuh: Bins); a bfloat16 unit whose 8 elements pass a range check goes in as
 *     its exact float32 tree, one addition, other bfloat16 elements to per-lane float bins
 *     (FBinShape); a warp whose lanes mostly fail the check on a chunk's first iteration skips
 *     it for the rest of the chunk (every element to the float bins). The warp's bins are
 *     flushed to the block's superaccumulator at most every 2^9 float32 values or bfloat16
 *     elements per lane.
 *   float64 SUM, float32 DOT (products exact in binary64, in a window of 20 digits), float64
 *     DOT (each exact 106-bit product in four pieces): per-lane integer digits in shared
 *     memory (exact_lanes.cuh: Digits), normalised every 2^9 elements, added to the block's superaccumulator at the end;
 *     an infinity or a NaN is seen once per iteration (the largest exponent field), not per
 *     element. The next iteration's units are loaded before this one's are added (bins too:
 *     these blocks are small and few per SM), into two register sets in turn for the digits.
 *   float16 SUM: a finite float16 is an integer multiple of 2^-24 of magnitude <= 65504 =
 *     2047 * 2^5. Four binary64 accumulators per thread (element e of every unit to number
 *     e mod 4) add them, converted by the hardware (cvt.f64.f16), one DADD each, from -0.0. A sum
 *     of at most 2^13 of them is a multiple of 2^-24 of magnitude <= 2^13 * 2047 * 2^5 =
 *     2047 * 2^18 < 2^29, i.e. an integer below 2^53 times 2^-24: representable, so every DADD
 *     is exact. Each accumulator takes 8 elements per iteration (2 of each of the U = 4 units);
 *     after every 2^13 / 8 = 2^10 iterations, and after the partial one, the accumulators become
 *     binary64 "leaves" and restart at -0.0. An infinity or a NaN makes its accumulator +-inf or
 *     NaN (inf + -inf = NaN), and the leaf is classified as below; nothing is tested in the loop.
 * float16's leaves go to two floating-point expansions per thread of K = 2 terms updated with
 * TwoSum (superacc.h). A nonzero residue (rare: the leaves are few) is added to the block's
 * superaccumulator in shared memory with 64-bit integer atomics. An infinity or a
 * NaN reaching a lead term makes the residue NaN and is classified there (add_leaves). A lead
 * term is the plain sum of its leaves from -0.0; an IEEE sum is -0.0 only when both operands
 * are, so the lead is still -0.0 at the end only if every element was -0.0. At the end each
 * thread folds its second expansion into the first, the warp merges its 32 expansions along a
 * shuffle tree (residues to the block accumulator again), and lane 0 adds the warp's terms.
 *
 * Every block then adds its digits (after one carry step) and flags to the fold, words after the
 * ticket, with 64-bit atomics, and takes a ticket; the last block's warp 0 takes the fold back
 * to zero into registers, brings the digits to their normal form (two carry steps, then a
 * shuffle scan of the carries that may still ripple) and to a magnitude, and one thread rounds
 * once (cr_sa_round4, in registers: the CPU's cr_sa_round's result) the top three nonzero digits
 * and a sticky one.
 * Integer addition is associative: nothing depends on the grid, the schedule or the atomics'
 * order, and the bits are those of the CPU path.
 *
 * The block's digits receive contributions |c| < 2^32 from the flushes, the residues and the
 * lanes' digits at the end; a block that would handle more than about 2^28 elements between
 * carry steps (forced tiny grids on huge inputs) runs the loop in rounds with a carry step after
 * each (kRound). Compiled with --fmad=false and without FTZ: TwoSum must not
 * be contracted, and float32 subnormals must stay. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

#include "core/superacc.h"
#include "gpu/kernel/grid.cuh"    /* occupancy, grid_blocks */
#include "gpu/kernel/handoff.cuh" /* last_block_arrive / _release */
#include "gpu/kernel/load.cuh"    /* split16 */
#include "gpu/kernel/trace.cuh"   /* CR_TRACE: a measurement build's time stamps */
#include "gpu/kernel/traits.cuh"  /* Elem */
#include "gpu/launch.h"
#include "gpu/exact_lanes.cuh" /* Bins, Digits: the flat sums' per-lane accumulators */

/* Measurement aid (scripts/variant.py): 1 stops each block before the fold into the last block,
 * 2 after its data loops; the results are then wrong. */
#ifndef CR_TUNE_EXACT_CUT
#define CR_TUNE_EXACT_CUT 0
#endif
/* Units per iteration of the digits' loops (the float64 sum, the float32 and float64 dots of
 * 16-byte units), measured on an H200 (docs/perf-log, runs 198-201): the float64 sum 8 (10 and
 * 12 slower), the float64 dot 6 (4 and 8 slower). */
#ifndef CR_TUNE_EXACT_F64_UNITS
#define CR_TUNE_EXACT_F64_UNITS 8
#endif
/* The float32 dot: 2 units, with 80 registers a thread for 24 warps an SM (4 units took 160 and
 * ran 12 warps: 0.85x against 0.89-0.95x at 2^28, run 210). */
#ifndef CR_TUNE_EXACT_DOT_UNITS
#define CR_TUNE_EXACT_DOT_UNITS 2
#endif
/* The float32 sum's blocks of W times 128 threads, W times fewer an SM (the same warps): 2
 * level with 1 at 2^28, slower on wide data at 2^24 (run 211). */
#ifndef CR_TUNE_EXACT_WIDEN
#define CR_TUNE_EXACT_WIDEN 1
#endif
/* bfloat16: lanes of a warp that must fail the range check on a chunk's first iteration for the
 * warp to skip it for the rest of the chunk (8, 16 and 24 alike on an H200: run 212). */
#ifndef CR_TUNE_EXACT_BF16_VOTE
#define CR_TUNE_EXACT_BF16_VOTE 16
#endif
/* The digits' normalisations after the partial iteration and the last chunk, shared with the
 * first chunk's and the kernel's end (as the bins' flushes are): 2, when a thread's loop has at
 * most two chunks; 1, always; 0, never. On an H200 (docs/perf-log, run 220), 2 against 0: the
 * float64 sum 4% and the float32 dot 3% faster at 2^24, both 0-0.7% at 2^28; 1 was as fast at
 * 2^24 but the float64 sum 0.7% slower at 2^28 (its loop compiled 8 instructions longer). */
#ifndef CR_TUNE_EXACT_DIGITS_SHARED
#define CR_TUNE_EXACT_DIGITS_SHARED 2
#endif
/* bfloat16: a lane that fails the joint range check of its U units checks each unit alone (1)
 * or sends all of them to the float bins (0). */
#ifndef CR_TUNE_EXACT_BF16_UNIT_CHECK
#define CR_TUNE_EXACT_BF16_UNIT_CHECK 1
#endif
#ifndef CR_TUNE_EXACT_DOT64_UNITS
#define CR_TUNE_EXACT_DOT64_UNITS 6
#endif

namespace {

/* The fold of every block's digits and flags: bytes kFoldOffset .. + 137 * 8 of the zeroed
 * ticket area (CR_GPU_TICKET_BYTES). (Eight copies of it, block b adding to copy b mod 8 and
 * the last block adding the copies, were slower: reading the copies back took 8.5 us at 2^24
 * on an H200, where one took 0.4-0.5; docs/perf-log, run 219.) */
const size_t kFoldOffset = 256;
/* Grid-stride iterations per round. A thread handles at most 32 elements per iteration (4 units
 * of <= 8, 8 float64 units of 2, 6 of 2 products); were each to add one contribution
 * |c| < 2^32 to a block digit, with 512 threads a round of 2^14 iterations (the first also has
 * the partial one) would add at most 2^28 + 2^14 per digit: the digits stay below 2^61. float16's
 * residues add far less, and bins and digits reach the block's digits only at a flush, or once at
 * the end. */
const uint64_t kRound = 1ull << 14;
/* float16: elements per accumulator between two flushes (the bound in the header), and
 * accumulators per thread. */
const uint64_t kF16Leaves = 1ull << 13;
const int kF16Acc = 4;

union Unit {
    uint4 v;
    uint32_t w[4];
    float f[4];
    double d[2];
    uint16_t h[8];
};

enum { P_F16, P_BINS, P_BF16, P_DIGITS };

constexpr coopreduce_dtype kF32 = COOPREDUCE_FLOAT32, kF64 = COOPREDUCE_FLOAT64,
                           kF16 = COOPREDUCE_FLOAT16, kBF16 = COOPREDUCE_BFLOAT16;

/* The float32 and bfloat16 sums go through per-lane bins, the float64 sum and both dots (a
 * float32 product is an exact double, a float64 one goes in as its exact 106 bits) through
 * per-lane digits (exact_lanes.cuh), the float16 sum through its exact accumulators. */
constexpr int path_of(coopreduce_dtype dt, int dot)
{
    return dot || dt == kF64 ? P_DIGITS : dt == kF16 ? P_F16 : dt == kBF16 ? P_BF16 : P_BINS;
}
/* Digits of a lane: the DOT64 layout's first 132 (the float64 dot), the SUM layout's 20 from
 * digit kDot32Base (the float32 dot), or its first 66 (the float64 sum); and the SUM layout's
 * digit that a lane's digit 0 is. */
constexpr int lane_digits_of(coopreduce_dtype dt, int dot)
{
    return dot && dt == kF64 ? kLaneDigitsDot64 : dot ? kLaneDigitsDot32 : kLaneDigits;
}
constexpr int lane_base_of(coopreduce_dtype dt, int dot)
{
    return dot && dt == kF32 ? kDot32Base : 0;
}
/* Units (16-byte loads, or elements) per thread and iteration: the float64 sum takes 8 (128
 * bytes in flight a thread, twice with the prefetch: its blocks are few per SM), the float64 dot
 * 6 (CR_TUNE_EXACT_*_UNITS above). */
constexpr int units_per_iter(coopreduce_dtype dt, int dot, int vec)
{
    return (dt == kF64 && !dot)         ? CR_TUNE_EXACT_F64_UNITS
           : (dt == kF64 && dot && vec) ? CR_TUNE_EXACT_DOT64_UNITS
           : (dt == kF32 && dot && vec) ? CR_TUNE_EXACT_DOT_UNITS
                                        : 4;
}
/* Threads per block: the per-lane accumulators live in shared memory (4 or 8 KiB a warp for
 * bins, 5 KiB for the float32 dot's digits, 16.5 KiB for the float64 sum's, 33 KiB for the
 * float64 dot's), so their blocks are small and several share an SM (8 or 6 of 128 threads, 3
 * of 256, 6 of 64, 6 of 32: 32, 24, 24, 12 and 6 warps, loads of 64 or 128 bytes a thread in
 * flight; static shared memory allows 48 KiB a block). The float32 dot's 24 warps are bounded
 * by their registers (80 a thread, with 2 units an iteration); 3 blocks of 256 threads ran
 * 2-4% faster than 6 of 128 on an H200 (docs/perf-log, run 210). */
constexpr int threads_of(int path, int lane_digits)
{
    return path == P_BINS              ? 128 * CR_TUNE_EXACT_WIDEN
           : path == P_BF16            ? 128
           : path == P_F16             ? 512
           : lane_digits > kLaneDigits ? 32
           : lane_digits < kLaneDigits ? 256
                                       : 64;
}
/* Binary64 bins: 16 of 16 exponents (4 KiB a warp), for float32 values: float32 elements, and
 * bfloat16 units' exact float32 trees. bfloat16's single elements go to float bins (4 KiB
 * more a warp, exact_lanes.cuh: FBinShape). */
constexpr int kBinShift = 27;
constexpr int min_blocks_of(int path, int lane_digits)
{
    return path == P_BINS                                  ? 8 / CR_TUNE_EXACT_WIDEN
           : path == P_F16                                 ? 2
           : path == P_DIGITS && lane_digits < kLaneDigits ? 3
                                                           : 6;
}

template <coopreduce_dtype DT, int DOT, int VEC> struct Cfg {
    static constexpr int ES = Elem<DT>::kBytes;
    static constexpr int EPU = VEC ? 16 / ES : 1; /* elements per unit */
    static constexpr int K = 2;                   /* terms of float16's expansions */
    static constexpr int ND = (DOT && DT == kF64) ? CR_SA_DOT64_DIGITS : CR_SA_SUM_DIGITS;
    static constexpr int LSB = (DOT && DT == kF64) ? CR_SA_DOT64_LSB : CR_SA_SUM_LSB;
    static constexpr int PATH = path_of(DT, DOT);
    static constexpr int U = units_per_iter(DT, DOT, VEC); /* units per thread and iteration */
    static constexpr int LANE_DIGITS = lane_digits_of(DT, DOT);
    static constexpr int LANE_BASE = lane_base_of(DT, DOT);
    static constexpr int THREADS = threads_of(PATH, LANE_DIGITS);
    typedef BinShape<kBinShift> Bins;
    static constexpr int WARPS = THREADS / 32;
    /* Iterations between flushes: float16, of its accumulators (each takes 8 * U / kF16Acc
     * elements per iteration); bins, at most kLaneElems elements per lane, two iterations short
     * of it (SHARED_FLUSH: the partial iteration joins the first chunk and the head and tail
     * elements the last, so that neither needs a flush of its own: at 2^24 on an H200, 3 us of
     * the float32 sum's 28, docs/perf-log, run 215); digits, a normalisation every
     * kDigitLaneElems, the partial iteration's and the last chunk's shared too in short loops
     * (CR_TUNE_EXACT_DIGITS_SHARED, decided at run time: `shared` in the kernel), with chunks
     * of full length: the digits' bound holds for kDigitLaneElems plus an iteration and the
     * head and tail elements (exact_lanes.cuh). */
    static constexpr bool SHARED_FLUSH =
        PATH == P_BINS || PATH == P_BF16 || (PATH == P_DIGITS && CR_TUNE_EXACT_DIGITS_SHARED == 1);
    static constexpr uint64_t CHUNK = PATH == P_F16    ? kF16Leaves * kF16Acc / (8 * U)
                                      : PATH == P_BINS ? Bins::kLaneElems / (EPU * U) - 2
                                      : PATH == P_BF16 ? FBinShape::kLaneElems / (EPU * U) - 2
                                                       : kDigitLaneElems / (EPU * U);
    /* 64-bit words of per-lane accumulators in shared memory (1: none, float16) */
    static constexpr int LANE_WORDS = PATH == P_BINS ? WARPS * Bins::kBins * 32
                                      : PATH == P_BF16
                                          ? WARPS * (Bins::kBins + FBinShape::kBins / 2) * 32
                                      : PATH == P_DIGITS ? WARPS * LANE_DIGITS * 32
                                                         : 1;
};

/* ---- conversions (all exact) ---------------------------------------------------------------- */
/* The float16 in the low (HI = 0) or high half of w, by the hardware (F2F.F64.F16). */
template <int HI> __device__ __forceinline__ double f16_to_f64(uint32_t w)
{
    double d;
    if (HI)
        asm("{.reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f64.f16 %0, h;}" : "=d"(d) : "r"(w));
    else
        asm("{.reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f64.f16 %0, l;}" : "=d"(d) : "r"(w));
    return d;
}
/* The bfloat16 in the low (HI = 0) or high half of w, as a float32 (its high half). */
template <int HI> __device__ __forceinline__ float bf16_to_f32(uint32_t w)
{
    return __uint_as_float(HI ? w & 0xffff0000u : w << 16);
}

/* ---- the superaccumulator (rare; out of line so the loop stays lean) ------------------------ */
__device__ __noinline__ void sa_atomic(long long *acc, int lsb, double v) { sa_add(acc, lsb, v); }

/* bfloat16: g_max - g_min (spread) and the largest exponent field (top) of the NU units a: the
 * same min / max as for float32, on both 16-bit halves at once (the magnitude bits, exponent
 * field at bits 14..7; zeros wrap to 0xffff). */
template <int NU> __device__ __forceinline__ void bf16_range(const Unit *a, int &spread, int &top)
{
    uint32_t mx = 0, mn = 0xffffffffu;
#pragma unroll
    for (int u = 0; u < NU; u++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t m = a[u].w[j] & 0x7fff7fffu;
            mx = __vmaxu2(mx, m);
            mn = __viaddmin_u16x2(m, 0xffffffffu, mn);
        }
    top = (int)(max(mx & 0xffffu, mx >> 16) >> 7);
    spread = top - (int)(((min(mn & 0xffffu, mn >> 16) + 1u) & 0xffffu) >> 7);
}

/* bfloat16: the float32 tree of unit a (exact when spread <= 13 and top <= 251: header). */
__device__ __forceinline__ float bf16_tree(const Unit &a)
{
    float f[8];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        f[2 * j] = bf16_to_f32<0>(a.w[j]);
        f[2 * j + 1] = bf16_to_f32<1>(a.w[j]);
    }
    return ((f[0] + f[1]) + (f[2] + f[3])) + ((f[4] + f[5]) + (f[6] + f[7]));
}

/* bfloat16: the 8 elements of unit a, each to its float bin (fcol: the lane's column). */
__device__ __forceinline__ void bf16_to_fbins(float *fcol, const Unit &a)
{
#pragma unroll
    for (int j = 0; j < 4; j++) {
        fbin_add(fcol, a.w[j] << 16);
        fbin_add(fcol, a.w[j] & 0xffff0000u);
    }
}

/* The leaf c through the K terms of t; returns the residue. */
template <int K> __device__ __forceinline__ double add_leaf(double (&t)[K], double c)
{
#pragma unroll
    for (int k = 0; k < K; k++) t[k] = cr_two_sum(t[k], c, &c);
    return c;
}

template <int K> __device__ __forceinline__ void reset(double (&t)[K])
{
    t[0] = -0.0;
#pragma unroll
    for (int k = 1; k < K; k++) t[k] = 0.0;
}

/* Adds NL leaves to the two expansions (leaf l to expansion l & 1); nonzero residues go to the
 * block accumulator. An infinity or a NaN in a lead term shows up as a NaN residue: the lead,
 * which has seen every infinity of the step, is classified and the expansion restarts (its
 * finite part no longer matters). */
template <int K, int NL, int LSB>
__device__ __forceinline__ void add_leaves(double (&t)[2][K], const double *lv, unsigned &flags,
                                           long long *acc)
{
    double r[NL];
    unsigned long long any = 0;
#pragma unroll
    for (int l = 0; l < NL; l++) {
        r[l] = add_leaf<K>(t[l & 1], lv[l]);
        any |= (unsigned long long)__double_as_longlong(r[l]) << 1;
    }
    if (any) {
        bool bad[2] = {false, false};
#pragma unroll
        for (int l = 0; l < NL; l++) {
            if (r[l] == 0) continue;
            if (isfinite(r[l]))
                sa_atomic(acc, LSB, r[l]);
            else
                bad[l & 1] = true;
        }
#pragma unroll
        for (int j = 0; j < 2; j++)
            if (bad[j]) {
                const unsigned f = cr_sa_special_flags(t[j][0]);
                flags |= (f ? f : CR_X_NAN) | CR_X_NONNEGZ;
                reset<K>(t[j]);
            }
    }
}

/* One carry step over the block's digits: digits below the top one come back to [0, 2^32)
 * plus a carry in (-2^31, 2^31). Every thread calls it; a thread takes digits i, i + blockDim.x,
 * ... (blocks of 32 threads or more: at most ceil(ND / 32) of them). */
template <int ND> __device__ void carry_step(long long *acc)
{
    constexpr int kPer = (ND + 31) / 32;
    long long v[kPer], c[kPer];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kPer; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        v[k] = i < ND - 1 ? acc[i] : 0;
        c[k] = v[k] >> 32;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kPer; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < ND - 1) acc[i] = v[k] - (long long)((unsigned long long)c[k] << 32);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kPer; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < ND - 1 && c[k])
            atomicAdd((unsigned long long *)&acc[i + 1], (unsigned long long)c[k]);
    }
    __syncthreads();
}

/* The last block's end runs in its warp 0 alone, the ND digits in registers: lane L holds
 * digits L * PER .. L * PER + PER - 1 (slots past ND hold 0), the top digit M = ND - 1 among
 * them: no block barrier and no shared memory (the rounding thread gets its four digits by
 * shuffles), where the end in shared memory with the whole block took 2.3-4 us after the fold at
 * 2^24 on an H200 (docs/perf-log, run 209's trace). */
template <int ND> struct WarpDigits {
    static constexpr int M = ND - 1, PER = (ND + 31) / 32;
};

/* One carry step: every digit below the top one keeps its low 32 bits, its carry (v >> 32)
 * goes to the digit above, across lanes by one shuffle; the top one only takes. */
template <int ND>
__device__ __forceinline__ void warp_carry_step(long long (&v)[WarpDigits<ND>::PER])
{
    constexpr int M = WarpDigits<ND>::M, PER = WarpDigits<ND>::PER;
    const int lane = threadIdx.x % 32, first = lane * PER;
    long long c[PER];
#pragma unroll
    for (int k = 0; k < PER; k++) {
        c[k] = first + k < M ? v[k] >> 32 : 0;
        v[k] -= (long long)((unsigned long long)c[k] << 32);
    }
    const long long in = __shfl_up_sync(0xffffffffu, c[PER - 1], 1);
#pragma unroll
    for (int k = 0; k < PER; k++) v[k] += k ? c[k - 1] : (lane ? in : 0);
}

/* Digits below the top one in [-1, 2^32] (two carry steps leave them so from below 2^62): the
 * carries that may still ripple, resolved at once. The carry out of a lane's digits is a
 * function of the carry in (-1, 0 or 1 to -1, 0 or 1: a digit plus its carry lies in [-2, 2^32
 * + 1]), kept as a table of three; a shuffle scan composes the lanes' tables, and each lane
 * then adds its carry in along its digits (into the top one where it holds it). */
template <int ND>
__device__ __forceinline__ void warp_resolve_carries(long long (&v)[WarpDigits<ND>::PER])
{
    constexpr int M = WarpDigits<ND>::M, PER = WarpDigits<ND>::PER;
    const int lane = threadIdx.x % 32, first = lane * PER;
    int f[3]; /* f[c + 1]: the carry out of the lane's digits for a carry in c */
#pragma unroll
    for (int c = -1; c <= 1; c++) {
        long long cc = c;
#pragma unroll
        for (int k = 0; k < PER; k++)
            if (first + k < M) cc = (v[k] + cc) >> 32;
        f[c + 1] = (int)cc;
    }
    /* inclusive scan: g = the lane's table composed after those of the lanes before it */
    int g[3] = {f[0], f[1], f[2]};
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
        int e[3];
#pragma unroll
        for (int k = 0; k < 3; k++) e[k] = __shfl_up_sync(0xffffffffu, g[k], off);
        if (lane >= off) {
            int h[3];
#pragma unroll
            for (int k = 0; k < 3; k++) h[k] = g[e[k] + 1];
#pragma unroll
            for (int k = 0; k < 3; k++) g[k] = h[k];
        }
    }
    const int before = __shfl_up_sync(0xffffffffu, g[1], 1); /* lanes 0 .. L-1 from carry 0 */
    long long cc = lane ? before : 0;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        if (first + k < M) {
            const long long t = v[k] + cc;
            cc = t >> 32;
            v[k] = t - (long long)((unsigned long long)cc << 32);
        } else if (first + k == M) {
            v[k] += cc;
        }
    }
}

/* The digits (each below 2^62 in magnitude) to their normal form: digits 0 .. ND-2 in [0,
 * 2^32), the top one signed. The normal form of a number is unique, so no way of carrying
 * changes a digit of it. */
template <int ND>
__device__ __forceinline__ void warp_normalise(long long (&v)[WarpDigits<ND>::PER])
{
    warp_carry_step<ND>(v);
    warp_carry_step<ND>(v);
    warp_resolve_carries<ND>(v);
}

/* Warp 0 of the last block, after the ticket: the fold (ND digits and the flags after them)
 * back to zero into registers, to its normal form (written out as it is for a raw result), to
 * a magnitude, rounded once to `fmt`. Out of line: its registers stay apart from the data
 * loops' (inline, it spilled the float16 loop's). */
template <int ND, int LSB>
__device__ __noinline__ void last_block_end(long long *fold, unsigned int *ticket, uint64_t n,
                                            void *out, int fmt, unsigned tr_tag)
{
    constexpr int M = WarpDigits<ND>::M, PER = WarpDigits<ND>::PER;
    const int lane = threadIdx.x % 32;
    (void)tr_tag;
    CR_TRACE(if (lane == 0) trace_at(kTrFold);)
    const int first = lane * PER;
    long long v[PER];
#pragma unroll
    for (int k = 0; k < PER; k++)
        v[k] = first + k < ND ? (long long)atomicExch((unsigned long long *)&fold[first + k], 0ull)
                              : 0;
    unsigned fl = 0;
    if (lane == 0) {
        fl = (unsigned)atomicExch((unsigned long long *)&fold[ND], 0ull) | (n ? CR_X_ANY : 0u);
        last_block_release(ticket);
    }
    CR_TRACE(__syncwarp(); if (lane == 0) trace_at(kTrRead);)
    /* The digits to their normal form (a raw result: these digits, unrounded, and the flags, for
     * a sharded reduction to merge), then to a magnitude. */
    warp_normalise<ND>(v);
    CR_TRACE(__syncwarp(); if (lane == 0) trace_at(kTrNormal);)
    if (fmt == CR_FMT_RAW) {
        long long *o = static_cast<long long *>(out);
#pragma unroll
        for (int k = 0; k < PER; k++)
            if (first + k < ND) o[first + k] = v[k];
        if (lane == 0) o[ND] = (long long)fl;
        return;
    }
    const bool neg = __shfl_sync(0xffffffffu, v[M % PER], M / PER) < 0;
    if (neg) {
#pragma unroll
        for (int k = 0; k < PER; k++) v[k] = -v[k];
        warp_normalise<ND>(v);
    }
    CR_TRACE(__syncwarp(); if (lane == 0) trace_at(kTrSign);)
    /* The rounding reads the top digit h, the two below it and whether any bit below those is
     * set: its result's lsb and the bit under it lie at bit 32 h - 53 or above (53 bits of
     * precision at most below the top bit, which is in digit h), within digits h - 2 .. h. So
     * one thread rounds four digits: h - 3 .. h, with digit h - 3's lowest bit set when a digit
     * below it is nonzero, which changes no bit that the rounding reads but the sticky one. It
     * rounds them in registers (cr_sa_round4: straight-line 128-bit arithmetic, the same result
     * as the CPU's cr_sa_round, test_round_window), no shared memory: 0-0.2 us shorter than
     * cr_sa_round from shared memory at 2^20-2^24 on an H200 (docs/perf-log, run 224). */
    int top = -1;
#pragma unroll
    for (int k = 0; k < PER; k++)
        if (first + k < ND && v[k]) top = first + k;
    const int h = __reduce_max_sync(0xffffffffu, top);
    const int l = h > 3 ? h - 3 : 0;
    /* digits l .. l + 3 (zeros above h) to every lane by shuffles from the lanes that hold them,
     * and whether a digit below l is nonzero */
    uint64_t w[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int i = l + j;
        long long mine = 0;
#pragma unroll
        for (int k = 0; k < PER; k++)
            if (first + k == i) mine = v[k];
        w[j] = (uint64_t)__shfl_sync(0xffffffffu, mine, i / PER);
    }
    bool below = false;
#pragma unroll
    for (int k = 0; k < PER; k++)
        if (first + k < l && v[k]) below = true;
    below = __any_sync(0xffffffffu, below);
    if (lane == 0) {
        CR_TRACE(trace_at(kTrWindow); trace_at(kTrRound);)
        cr_sa_round4(w[0] | (below ? 1u : 0u), w[1], w[2], w[3], neg, LSB + 32 * l, fl, fmt, out);
        CR_TRACE(atomicAdd(&tr_launches_exact, 1u); trace_report(n, 0, tr_tag, true);)
    }
}

template <coopreduce_dtype DT, int DOT, int VEC> struct Loader {
    typedef Cfg<DT, DOT, VEC> C;
    static constexpr int USZ = VEC ? 16 : C::ES; /* bytes of a unit */
    /* the unit (VEC) or element (scalar) at p */
    static __device__ __forceinline__ void at(const unsigned char *p, Unit &u)
    {
        if (VEC)
            u.v = __ldg((const uint4 *)p);
        else
            element(p, 0, u);
    }
    static __device__ __forceinline__ void element(const unsigned char *p, uint64_t i, Unit &u)
    {
        if (C::ES == 8)
            u.d[0] = __ldg((const double *)p + i);
        else if (C::ES == 4)
            u.f[0] = __ldg((const float *)p + i);
        else
            u.h[0] = __ldg((const unsigned short *)p + i);
    }
};

/* The bits of what element e of a unit adds to the digits: the float64 value, or the float32
 * product (exact in binary64; inf * 0 is NaN, a zero's sign the XOR of its factors'). */
template <coopreduce_dtype DT, int DOT>
__device__ __forceinline__ uint64_t digit_bits(const Unit &ux, const Unit &uy, int e)
{
    const double v = DOT ? (double)ux.f[e] * (double)uy.f[e] : ux.d[e];
    return (uint64_t)__double_as_longlong(v);
}

/* One iteration's U units (ok[u]: unit u exists; a missing unit holds -0.0 elements, which
 * change nothing, or is skipped). */
template <coopreduce_dtype DT, int DOT, int VEC>
__device__ __forceinline__ void
consume(const Unit (&ux)[Cfg<DT, DOT, VEC>::U], const Unit (&uy)[Cfg<DT, DOT, VEC>::U],
        const bool (&ok)[Cfg<DT, DOT, VEC>::U], double (&fx)[kF16Acc], unsigned &flags, double *col,
        float *fcol, bool &fslow, uint64_t &nonneg, int vote = 0, bool *wslow = nullptr)
{
    typedef Cfg<DT, DOT, VEC> C;
    const int U = C::U;
    if (C::PATH == P_F16) {
        /* element e of every unit to fx[e % kF16Acc]: kF16Acc chains of 8 * U / kF16Acc exact
         * DADDs */
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                fx[(2 * j) % kF16Acc] += f16_to_f64<0>(ux[u].w[j]);
                fx[(2 * j + 1) % kF16Acc] += f16_to_f64<1>(ux[u].w[j]);
            }
    } else if (C::PATH == P_BINS && DT == kF32) {
        /* every element to its bin: the same few instructions whatever its exponent */
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int j = 0; j < 4; j++) bin_add<kBinShift>(col, ux[u].w[j]);
    } else if (C::PATH == P_BF16) {
        /* bfloat16: when the U units pass one joint check, each unit's float32 tree (exact:
         * see the header) goes to its binary64 bin, 8 elements in one addition; else every
         * element to its float bin (fslow: this thread's float bins need a flush). `vote`: 0,
         * the check; 1 (a chunk's first full iteration, the warp converged), the check, and
         * *wslow set when more than CR_TUNE_EXACT_BF16_VOTE lanes fail it; 2 (the rest of
         * that chunk), no check: every element to its float bin. Per lane, the skipped check
         * diverged the warp and cost normal data 20% (docs/perf-log, run 207); per warp,
         * wide and cancelling data 0.72-0.74x to 0.78-0.80x at 2^28, the others level (run
         * 212). */
        bool pass = false;
        if (vote != 2) {
            int spread, top;
            bf16_range<U>(ux, spread, top);
            pass = spread <= 13 && top <= 251;
        }
        if (vote == 1) *wslow = __popc(__ballot_sync(0xffffffffu, !pass)) > CR_TUNE_EXACT_BF16_VOTE;
        if (pass) {
#pragma unroll
            for (int u = 0; u < U; u++) bin_add<kBinShift>(col, __float_as_uint(bf16_tree(ux[u])));
        } else if (vote != 2 && CR_TUNE_EXACT_BF16_UNIT_CHECK) {
            /* the joint check failed: each unit checked alone, its tree to the bins when it
             * passes, its elements to the float bins when not. On normal data a lane fails the
             * joint check now and then (one small element suffices), and the lanes that pass
             * wait for it: 8 elements through the float bins instead of 32. */
#pragma unroll
            for (int u = 0; u < U; u++) {
                int spread, top;
                bf16_range<1>(&ux[u], spread, top);
                if (spread <= 13 && top <= 251) {
                    bin_add<kBinShift>(col, __float_as_uint(bf16_tree(ux[u])));
                } else {
                    bf16_to_fbins(fcol, ux[u]);
                    fslow = true;
                }
            }
        } else {
#pragma unroll
            for (int u = 0; u < U; u++) bf16_to_fbins(fcol, ux[u]);
            fslow = true;
        }
    } else if (C::PATH == P_DIGITS && DOT && DT == kF64) {
        /* every float64 product, exact, to the lane's digits; an infinity or a NaN among the
         * factors is seen once for the whole batch */
        long long *dcol = reinterpret_cast<long long *>(col);
        uint64_t a[U * C::EPU], b[U * C::EPU];
        uint32_t emax = 0;
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int e = 0; e < C::EPU; e++) {
                a[u * C::EPU + e] = ok[u] ? (uint64_t)__double_as_longlong(ux[u].d[e]) : 0u;
                b[u * C::EPU + e] = ok[u] ? (uint64_t)__double_as_longlong(uy[u].d[e]) : 0u;
                if (!ok[u]) continue;
                digits_add_product(dcol, a[u * C::EPU + e], b[u * C::EPU + e], emax, nonneg);
            }
        if (emax == 0x7ffu) flags |= product_special_flags(a, b, nonneg);
    } else if (C::PATH == P_DIGITS) {
        /* every float64 element, or float32 product, to the lane's digits; an infinity or a
         * NaN among them is seen once for the whole batch, and so is -0.0: a nonzero largest
         * exponent field means a value that is not -0.0, and only a batch of zeros and
         * subnormals (emax = 0) has its bits looked at (two ORs an element less in the float64
         * sum's loop, of about 25) */
        long long *dcol = reinterpret_cast<long long *>(col);
        uint64_t b[U * C::EPU];
        uint32_t emax = 0;
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int e = 0; e < C::EPU; e++) {
                b[u * C::EPU + e] =
                    ok[u] ? digit_bits<DT, DOT>(ux[u], uy[u], e) : 0x8000000000000000ull;
                if (!ok[u]) continue;
                digits_add<C::LANE_BASE>(dcol, b[u * C::EPU + e], emax);
            }
        nonneg |= emax;
        if (emax == 0) {
#pragma unroll
            for (int k = 0; k < U * C::EPU; k++) nonneg |= b[k] ^ 0x8000000000000000ull;
        }
        if (emax == 0x7ffu) flags |= special_flags(b);
    }
}

/* The words after the ticket where every block folds its digits and flags (ND + 1 int64, zero
 * between launches: the last block takes them back to zero). */
__device__ __forceinline__ long long *fold_of(unsigned int *ticket)
{
    return reinterpret_cast<long long *>(reinterpret_cast<char *>(ticket) + kFoldOffset);
}

template <coopreduce_dtype DT, int DOT, int VEC>
__global__ void __launch_bounds__(Cfg<DT, DOT, VEC>::THREADS,
                                  min_blocks_of(Cfg<DT, DOT, VEC>::PATH,
                                                Cfg<DT, DOT, VEC>::LANE_DIGITS))
    exact_kernel(const void *xv, const void *yv, uint64_t n, unsigned int *ticket, void *out,
                 int fmt)
{
    typedef Cfg<DT, DOT, VEC> C;
    typedef Loader<DT, DOT, VEC> L;
    const int K = C::K, ND = C::ND, LSB = C::LSB, U = C::U;
    __shared__ long long acc[ND];
    __shared__ unsigned int sflags;
    /* the per-lane accumulators (bins: -0.0; digits: 0), warp w's region at w * WORDS / WARPS */
    __shared__ unsigned long long lanes[C::LANE_WORDS];
    for (int i = threadIdx.x; i < ND; i += blockDim.x) acc[i] = 0;
    for (int i = threadIdx.x; i < C::LANE_WORDS; i += blockDim.x)
        lanes[i] =
            C::PATH == P_BINS ? 0x8000000000000000ull
            : C::PATH == P_BF16 /* binary64 bins, then float bins: -0.0 */
                ? (i % (C::LANE_WORDS / C::WARPS) < C::Bins::kBins * 32 ? 0x8000000000000000ull
                                                                        : 0x8000000080000000ull)
                : 0ull;
    if (threadIdx.x == 0) sflags = 0;
    __syncthreads();
    CR_TRACE(unsigned int tr_tag = 0; if (threadIdx.x == 0) {
        tr_tag = atomicAdd(&tr_launches_exact, 0u);
        trace_start(tr_tag);
    })
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    double *wbins = reinterpret_cast<double *>(lanes) + warp * (C::LANE_WORDS / C::WARPS);
    double *col = wbins + lane; /* this lane's column (bins, or digits as long long) */
    long long *wdig = reinterpret_cast<long long *>(wbins), *dcol = wdig + lane;
    /* bfloat16's float bins, after its binary64 bins */
    float *wfbins = reinterpret_cast<float *>(wbins + C::Bins::kBins * 32), *fcol = wfbins + lane;
    bool fslow = false;   /* bfloat16: this thread added to its float bins since their flush */
    unsigned dchunks = 0; /* bfloat16: chunks since the binary64 bins' flush */

    const unsigned char *x = (const unsigned char *)xv, *y = (const unsigned char *)yv;
    /* Elements before the first 16-byte boundary, the units, the ragged tail. */
    const Split sp = split16(x, n, C::ES, VEC);
    const uint64_t head = sp.head, nunits = sp.units, tail_start = sp.tail_start;
    const unsigned char *bx = x + head * C::ES, *by = DOT ? y + head * C::ES : x;

    double t[2][K];
    reset<K>(t[0]);
    reset<K>(t[1]);
    double fx[kF16Acc]; /* the float16 accumulators (unused elsewhere) */
#pragma unroll
    for (int j = 0; j < kF16Acc; j++) fx[j] = -0.0;
    unsigned flags = 0;
    uint64_t nonneg = 0; /* digits: nonzero once some element is not -0.0 */
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t step = U * stride;
    /* -0.0 in every element of a missing unit (16- and 32-bit paths; digits skip it) */
    const uint32_t nz = C::ES == 4 ? 0x80000000u : 0x80008000u;
    /* One iteration: units i0 + u * stride (u < U), at p + u * ustride bytes (p: x's unit i0;
     * y's at p + dyx); `checked`: some may be missing (i0 is used only then). */
    const uint64_t ustride = stride * L::USZ;
    const intptr_t dyx = (intptr_t)by - (intptr_t)bx;
    auto iteration = [&](const unsigned char *p, uint64_t i0, auto checked) {
        Unit ux[U], uy[U];
        bool ok[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            ok[u] = !decltype(checked)::value || i0 + u * stride < nunits;
            if (ok[u]) {
                L::at(p + u * ustride, ux[u]);
                if (DOT) L::at(p + u * ustride + dyx, uy[u]);
            } else {
                ux[u].v = make_uint4(nz, nz, nz, nz);
            }
        }
        consume<DT, DOT, VEC>(ux, uy, ok, fx, flags, col, fcol, fslow, nonneg);
    };
    /* After each chunk: float16's accumulators become leaves and restart; the lane's digits are
     * normalised. Every thread of the warp calls it (bins: the warp's rows go to acc). */
    auto flush = [&]() {
        if (C::PATH == P_F16) {
            add_leaves<K, kF16Acc, LSB>(t, fx, flags, acc);
#pragma unroll
            for (int j = 0; j < kF16Acc; j++) fx[j] = -0.0;
        } else if (C::PATH == P_BINS) {
            flags |= bins_flush<C::Bins::kBins>(wbins, acc, LSB);
        } else if (C::PATH == P_BF16) {
            /* float bins after every chunk in which some lane used them (at most 2^9 elements a
             * lane); binary64 bins after every kDChunks chunks (at most 2^9 trees a lane) */
            if (__any_sync(0xffffffffu, fslow))
                flags |= bins_flush<FBinShape::kBins>(wfbins, acc, LSB);
            fslow = false;
            constexpr unsigned kDChunks = (unsigned)(C::Bins::kLaneElems / (C::U * C::CHUNK));
            static_assert(C::PATH != P_BF16 || kDChunks >= 1, "a chunk's trees fit the bins");
            if (++dchunks == kDChunks) {
                flags |= bins_flush<C::Bins::kBins>(wbins, acc, LSB);
                dchunks = 0;
            }
        } else if (C::PATH == P_DIGITS) {
            digits_normalise<C::LANE_DIGITS>(dcol);
        }
    };
    /* `full` iterations in which every unit exists in every thread, then a partial one (units
     * i0 + u * stride >= nunits missing; none at all in some threads), which runs first. The
     * full ones run in rounds of kRound with a carry step between (the first round also has
     * the partial one), each in chunks of at most CHUNK iterations; a flush after each chunk
     * and after the partial iteration (`shared`: the bins', and the digits' in loops of at
     * most two chunks, join the first and the last chunk's). A pointer, not an index, runs
     * through the loop: fewer registers. */
    const uint64_t full = nunits / step, ip = full * step + gid;
    const bool shared =
        C::SHARED_FLUSH ||
        (C::PATH == P_DIGITS && CR_TUNE_EXACT_DIGITS_SHARED == 2 && full <= 2 * C::CHUNK);
    if (ip < nunits) iteration(bx + ip * L::USZ, ip, std::true_type());
    if (!shared) flush();
    const unsigned char *p = bx + gid * L::USZ;
    const uint64_t pstep = U * ustride;
    for (uint64_t left = full; left;) {
        uint64_t round = left < kRound ? left : kRound;
        left -= round;
        while (round) {
            const uint32_t chunk = (uint32_t)(round < C::CHUNK ? round : C::CHUNK);
            round -= chunk;
            if (C::PATH == P_BINS || C::PATH == P_BF16 || C::PATH == P_DIGITS) {
                /* the next iteration's units are loaded before this one's are added: with few
                 * warps per SM, one iteration's loads overlap the previous one's shared-memory
                 * work */
                bool all[U]; /* every unit exists */
#pragma unroll
                for (int u = 0; u < U; u++) all[u] = true;
                auto load = [&](const unsigned char *q, Unit(&vx)[U], Unit(&vy)[U]) {
#pragma unroll
                    for (int u = 0; u < U; u++) {
                        L::at(q + u * ustride, vx[u]);
                        if (DOT) L::at(q + u * ustride + dyx, vy[u]);
                    }
                };
                if (C::PATH == P_DIGITS) {
                    /* two register sets in turn, no copies between iterations: the digits'
                     * loops 1-8% faster at 2^28 on an H200, the bins' up to 4% slower. (A
                     * pipeline over the whole round, loads two or three iterations ahead, was
                     * slower: docs/perf-log, run 202.) */
                    Unit ax[U], ay[U], bx[U], by[U];
                    load(p, ax, ay);
                    uint32_t k = chunk;
                    for (; k >= 2; k -= 2) {
                        load(p + pstep, bx, by);
                        consume<DT, DOT, VEC>(ax, DOT ? ay : ax, all, fx, flags, col, fcol, fslow,
                                              nonneg);
                        if (k > 2) load(p + 2 * pstep, ax, ay);
                        consume<DT, DOT, VEC>(bx, DOT ? by : bx, all, fx, flags, col, fcol, fslow,
                                              nonneg);
                        p += 2 * pstep;
                    }
                    if (k) {
                        consume<DT, DOT, VEC>(ax, DOT ? ay : ax, all, fx, flags, col, fcol, fslow,
                                              nonneg);
                        p += pstep;
                    }
                } else {
                    Unit nx[U], ny[U];
                    bool wslow = false;
                    load(p, nx, ny);
                    for (uint32_t k = chunk; k; --k) {
                        Unit cx[U], cy[U];
#pragma unroll
                        for (int u = 0; u < U; u++) {
                            cx[u] = nx[u];
                            cy[u] = DOT ? ny[u] : nx[u];
                        }
                        p += pstep;
                        if (k > 1) load(p, nx, ny);
                        consume<DT, DOT, VEC>(cx, cy, all, fx, flags, col, fcol, fslow, nonneg,
                                              k == chunk ? 1
                                              : wslow    ? 2
                                                         : 0,
                                              &wslow);
                    }
                }
            } else {
                for (uint32_t k = chunk; k; --k, p += pstep) iteration(p, 0, std::false_type());
            }
            /* the last chunk's flush is the kernel's last (after the head and the tail) */
            if (!shared || round || left) flush();
        }
        if (left) carry_step<ND>(acc);
    }
    /* The head and the tail, one element per thread. */
#pragma unroll
    for (int part = 0; part < 2; part++) {
        const uint64_t cnt = part ? n - tail_start : head, first = part ? tail_start : 0;
        if (VEC && gid < cnt) {
            Unit ux, uy;
            L::element(x, first + gid, ux);
            if (DOT) L::element(y, first + gid, uy);
            if (C::PATH == P_BINS) {
                bin_add<kBinShift>(col, ux.w[0]);
            } else if (C::PATH == P_BF16) {
                fbin_add(fcol, (uint32_t)ux.h[0] << 16);
            } else if (C::PATH == P_DIGITS && DOT && DT == kF64) {
                const uint64_t a = (uint64_t)__double_as_longlong(ux.d[0]),
                               b = (uint64_t)__double_as_longlong(uy.d[0]);
                uint32_t emax = 0;
                digits_add_product(dcol, a, b, emax, nonneg);
                if (emax == 0x7ffu) flags |= product_special_flags<1>({a}, {b}, nonneg);
            } else if (C::PATH == P_DIGITS) {
                const uint64_t b = digit_bits<DT, DOT>(ux, uy, 0);
                uint32_t emax = 0;
                digits_add<C::LANE_BASE>(dcol, b, emax);
                if (emax == 0x7ffu) flags |= special_flags<1>({b});
                nonneg |= b ^ 0x8000000000000000ull;
            } else { /* float16: a leaf of its own */
                double lv[2] = {f16_to_f64<0>(ux.h[0]), -0.0};
                add_leaves<K, 2, LSB>(t, lv, flags, acc);
            }
        }
    }
#if CR_TUNE_EXACT_CUT == 2 /* measurement only: the data loops alone (wrong results) */
    return;
#endif
    if (C::PATH == P_BINS) {
        flags |= bins_flush<C::Bins::kBins, false>(wbins, acc, LSB);
    } else if (C::PATH == P_BF16) {
        flags |= bins_flush<C::Bins::kBins, false>(wbins, acc, LSB);
        flags |= bins_flush<FBinShape::kBins, false>(wfbins, acc, LSB);
    } else if (C::PATH == P_DIGITS) {
        static_assert(C::ND > C::LANE_BASE + C::LANE_DIGITS,
                      "digits_fold adds to the digit above the lanes'");
        digits_fold<C::LANE_DIGITS>(wdig, acc + C::LANE_BASE);
        if (nonneg) flags |= CR_X_NONNEGZ;
    } else {
        /* float16: the lead terms are the plain sums of their leaves from -0.0: still -0.0 only
         * if every leaf was -0.0. */
        if (__double_as_longlong(t[0][0]) != (long long)0x8000000000000000ull ||
            __double_as_longlong(t[1][0]) != (long long)0x8000000000000000ull)
            flags |= CR_X_NONNEGZ;
        /* Second expansion into the first, then the warp's shuffle tree (t[1] stays reset: the
         * second leaf of each call is -0.0). */
        double moved[K];
#pragma unroll
        for (int k = 0; k < K; k++) moved[k] = t[1][k];
        reset<K>(t[1]);
#pragma unroll
        for (int k = 0; k < K; k++) {
            double lv[2] = {moved[k], -0.0};
            add_leaves<K, 2, LSB>(t, lv, flags, acc);
        }
        for (int off = 16; off >= 1; off /= 2) {
            double pt[K];
#pragma unroll
            for (int k = 0; k < K; k++) pt[k] = __shfl_down_sync(0xffffffffu, t[0][k], off);
            if (lane < (unsigned)off) {
#pragma unroll
                for (int k = 0; k < K; k++) {
                    double lv[2] = {pt[k], -0.0};
                    add_leaves<K, 2, LSB>(t, lv, flags, acc);
                }
            }
        }
        if (lane == 0) {
#pragma unroll
            for (int k = 0; k < K; k++) {
                const unsigned f = cr_sa_special_flags(t[0][k]);
                if (f)
                    flags |= f;
                else
                    sa_atomic(acc, LSB, t[0][k]);
            }
        }
    }
    flags = __reduce_or_sync(0xffffffffu, flags);
    if (lane == 0 && flags) atomicOr(&sflags, flags);
    carry_step<ND>(acc);   /* |digits| < 2^33: the fold adds at most kMaxGrid blocks' */
#if CR_TUNE_EXACT_CUT == 1 /* measurement only: no fold, no last block (wrong results) */
    return;
#endif

    /* The block's digits and flags folded into the words after the ticket by 64-bit atomics
     * (integer addition: the order does not matter; below 2^33 * kMaxGrid = 2^45), then the
     * ticket. The last block's warp 0 takes the words (back to zero), brings them to their
     * normal form and to a magnitude in registers, and one thread rounds once. (Warp 0 alone
     * folding, with its own fence and ticket, was slower for the float64 dot and no faster
     * elsewhere: docs/perf-log, run 212.) */
    CR_TRACE(__syncthreads(); if (threadIdx.x == 0) trace_level1(tr_tag);)
    long long *fold = fold_of(ticket);
    for (int i = threadIdx.x; i < ND; i += blockDim.x)
        if (acc[i]) atomicAdd((unsigned long long *)&fold[i], (unsigned long long)acc[i]);
    if (threadIdx.x == 0 && sflags)
        atomicOr((unsigned long long *)&fold[ND], (unsigned long long)sflags);
    if (!last_block_arrive<true>(ticket) || warp != 0) return;
    last_block_end<ND, LSB>(fold, ticket, n, out, fmt, CR_TRACE(tr_tag +) 0u);
}

/* A forced grid is clamped to this many blocks (any grid gives the same bits); it bounds the
 * fold: 2^33 per block and digit, below 2^45 in all. The blocks need no slots: they fold. */
const int kMaxGrid = 4096;

/* The call's shape: dot, and whether x and y take 16-byte loads (equally placed within 16
 * bytes: the head is peeled). */
struct Shape {
    int dot, vec;
    explicit Shape(const cr_gpu_call *c)
        : dot(c->plan->op == COOPREDUCE_OP_DOT),
          vec(!dot || ((uintptr_t)c->x % 16) == ((uintptr_t)c->y % 16))
    {}
};

template <coopreduce_dtype DT, int DOT, int VEC> struct Grid {
    static cudaError_t run(const cr_gpu_call *c, cr_gpu_grid *g)
    {
        const uint64_t es = Elem<DT>::kBytes;
        const uint64_t units = VEC ? c->n / (16 / es) + 1 : c->n + 1;
        const int threads = Cfg<DT, DOT, VEC>::THREADS;
        const uint64_t per_block = (uint64_t)units_per_iter(DT, DOT, VEC) * threads;
        return slotted_grid<exact_kernel<DT, DOT, VEC>>(
            c, threads, (units + per_block - 1) / per_block, kMaxGrid, 0, 0, g);
    }
};

template <coopreduce_dtype DT, int DOT, int VEC> struct Launcher {
    static cudaError_t run(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g)
    {
        const cr_plan *p = c->plan;
        const int fmt = c->raw                     ? CR_FMT_RAW
                        : DT == kF64               ? CR_FMT_F64
                        : p->narrow && DT == kF16  ? CR_FMT_F16
                        : p->narrow && DT == kBF16 ? CR_FMT_BF16
                                                   : CR_FMT_F32;
        exact_kernel<DT, DOT, VEC><<<g->blocks, Cfg<DT, DOT, VEC>::THREADS, 0, c->stream>>>(
            c->x, c->y, c->n, w->ticket, c->out, fmt);
        return cudaGetLastError();
    }
};

/* Calls F<DT, DOT, VEC>::run for the call: the sums of the four float types (16-byte loads),
 * the dots of float32 and float64 (16-byte or element loads). */
template <template <coopreduce_dtype, int, int> class F, class... A>
cudaError_t dispatch(const cr_gpu_call *c, A... args)
{
    const Shape sh(c);
    if (sh.dot) {
        if (c->plan->dtype == kF32)
            return sh.vec ? F<kF32, 1, 1>::run(c, args...) : F<kF32, 1, 0>::run(c, args...);
        if (c->plan->dtype == kF64)
            return sh.vec ? F<kF64, 1, 1>::run(c, args...) : F<kF64, 1, 0>::run(c, args...);
        return cudaErrorInvalidValue;
    }
    switch (c->plan->dtype) {
    case kF32: return F<kF32, 0, 1>::run(c, args...);
    case kF64: return F<kF64, 0, 1>::run(c, args...);
    case kF16: return F<kF16, 0, 1>::run(c, args...);
    case kBF16: return F<kBF16, 0, 1>::run(c, args...);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" {

/* n may be 0: the kernel writes +0.0. */
cudaError_t cr_gpu_exact_grid(const cr_gpu_call *c, cr_gpu_grid *g) { return dispatch<Grid>(c, g); }

cudaError_t cr_gpu_exact_launch(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g)
{
    return dispatch<Launcher>(c, w, g);
}

} // extern "C"
