/* exact.cu — EXACT mode kernels (docs/EXACT.md): the correctly rounded SUM of float32, float64,
 * float16, bfloat16 and DOT of float32 and float64, in one launch.
 *
 * Each thread runs a grid-stride loop of 16-byte loads, U units per iteration (4 for the sums of
 * 32- and 16-bit types, 2 otherwise), all issued before any is used. What it adds goes as
 * binary64 "leaves" to two floating-point expansions updated with TwoSum (superacc.h): K = 2
 * terms, K = 3 for float64 (for a float64 dot, 3 for the products and 2 for their errors). A
 * nonzero residue — rare — is added to the block's superaccumulator in shared memory with 64-bit
 * integer atomics. How elements become leaves depends on the type; every step is exact:
 *   float64 SUM, DOT: each element is its leaf, as on the CPU (src/cpu/exact.c): the value, the
 *     float32 product (exact in binary64), or the float64 product p = fl(x*y) and its error
 *     fma(x, y, -p).
 *   float16 SUM: a finite float16 is an integer multiple of 2^-24 of magnitude <= 65504 =
 *     2047 * 2^5. Four binary64 accumulators per thread (element e of every unit to number
 *     e mod 4) add them, converted by the hardware (cvt.f64.f16), one DADD each, from -0.0. A sum
 *     of at most 2^13 of them is a multiple of 2^-24 of magnitude <= 2^13 * 2047 * 2^5 =
 *     2047 * 2^18 < 2^29, i.e. an integer below 2^53 times 2^-24: representable, so every DADD
 *     is exact. Each accumulator takes 8 elements per iteration (2 of each of the U = 4 units);
 *     after every 2^13 / 8 = 2^10 iterations, and after the partial one, the accumulators become
 *     leaves and restart at -0.0: no bound depends on n or on the grid. An infinity or a NaN
 *     makes its accumulator +-inf or NaN (inf + -inf = NaN), and the leaf is classified as below;
 *     nothing is tested in the loop.
 *   float32 SUM: each group of 8 elements (two units) is added in binary64 along a tree and is
 *     one leaf. A float32 is M * 2^g, |M| < 2^24, g = max(E, 1) - 150 (E: its exponent field).
 *     If g_max - g_min <= 26 over the group's nonzero elements, every partial sum is a multiple
 *     of 2^g_min of magnitude < 8 * 2^(g_max + 24) <= 2^(g_min + 53): representable, each DADD
 *     exact. The check reads the exponent fields of the largest and of the smallest nonzero
 *     magnitude off the bits (a subnormal's field 0 only overstates the spread). It is made over
 *     the iteration's 4 units at once (their joint g_max - g_min bounds each group's), then, if
 *     that fails, group by group out of line.
 *   bfloat16 SUM: each unit's 8 elements (M * 2^g, |M| < 2^8, g = max(E, 1) - 134) are added in
 *     float32 along a tree when g_max - g_min <= 13 (partial sums: multiples of 2^g_min >=
 *     2^-133 below 8 * 2^(g_max + 8) <= 2^(g_min + 24); float32 keeps its subnormals: no FTZ) and
 *     E_max <= 251 (partial sums below 2^(g_max + 11) <= 2^128: no overflow); the float32 sum,
 *     converted exactly, is the leaf. Else, when g_max - g_min <= 42, in binary64 (bound 2^53).
 *     The checks are made as for float32: over 4 units, then unit by unit.
 *   A group that fails its checks (a wide dynamic range: rare in real data, and only slower)
 *     goes element by element to the superaccumulator and the flags (slow_group); its leaf is
 *     -0.0. An infinity or a NaN passes a check only into a binary64 tree, whose sum is then
 *     +-inf or NaN (+inf + -inf = NaN): a leaf like the others.
 * An infinity or a NaN reaching a lead term (every path but float64 sums, whose big values are
 * screened) makes the residue NaN and is classified there (add_leaves). A lead term is the plain
 * sum of its leaves from -0.0, and a finite leaf the exact sum of its elements; an IEEE sum is
 * -0.0 only when both operands are, so the lead is still -0.0 at the end only if every element
 * was -0.0 (the slow paths set CR_X_NONNEGZ themselves).
 *
 * At the end each thread folds its second expansion into the first, the warp merges its 32
 * expansions along a shuffle tree (residues to the block accumulator again), and lane 0 adds the
 * warp's terms. The block writes its digits (after one carry step) and flags to its slot of
 * `partials`, takes a ticket, and the last block adds every slot (integer addition: the order
 * does not matter), rounds once (cr_sa_finish, the CPU's own code), writes the result and sets
 * the ticket back to zero. Nothing depends on the grid, the schedule or the atomics' order: the
 * bits are those of the CPU path.
 *
 * The shared digits receive contributions |c| < 2^32, at most one per digit for each element a
 * thread handles (two for a float64 product); a block that would handle more than about 2^28
 * elements between carry steps (forced tiny grids on huge inputs) runs the loop in rounds with
 * a carry step after each (kRound). Compiled with --fmad=false and without FTZ: TwoSum must not
 * be contracted, and float32 subnormals must stay. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

#include "core/superacc.h"
#include "gpu/kernel/grid.cuh"    /* occupancy, grid_blocks */
#include "gpu/kernel/handoff.cuh" /* last_block_arrive / _release */
#include "gpu/kernel/load.cuh"    /* split16 */
#include "gpu/kernel/traits.cuh"  /* Elem */
#include "gpu/launch.h"

namespace {

const int kThreads = 512;
/* Grid-stride iterations per round. A thread handles at most 32 elements per iteration (4 units
 * of <= 8; float64 products: 2 units of 2), each adding at most one contribution |c| < 2^32 to
 * any digit (a float64 product: two): with 512 threads a round of 2^14 iterations (the first
 * also has the partial one) adds at most 2^28 + 2^14 per digit: the digits stay below 2^61. */
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

enum { P_LEAVES, P_F16, P_F32, P_BF16 };

constexpr coopreduce_dtype kF32 = COOPREDUCE_FLOAT32, kF64 = COOPREDUCE_FLOAT64,
                           kF16 = COOPREDUCE_FLOAT16, kBF16 = COOPREDUCE_BFLOAT16;

constexpr int path_of(coopreduce_dtype dt, int dot, int vec)
{
    return dot || !vec || dt == kF64 ? P_LEAVES : dt == kF16 ? P_F16 : dt == kF32 ? P_F32 : P_BF16;
}
constexpr int units_per_iter(coopreduce_dtype dt, int dot, int vec)
{
    return path_of(dt, dot, vec) == P_LEAVES ? 2 : 4;
}

template <coopreduce_dtype DT, int DOT, int VEC> struct Cfg {
    static constexpr int ES = Elem<DT>::kBytes;
    static constexpr int EPU = VEC ? 16 / ES : 1;           /* elements per unit */
    static constexpr int LPE = (DOT && DT == kF64) ? 2 : 1; /* leaves per element */
    static constexpr int LPU = EPU * LPE;
    static constexpr int K = DT == kF64 ? 3 : 2;
    /* terms of the second expansion: a float64 dot's errors (|err| <= 2^-53 |p|) use two */
    static constexpr int K1 = DOT && DT == kF64 ? 2 : K;
    static constexpr int ND = (DOT && DT == kF64) ? CR_SA_DOT64_DIGITS : CR_SA_SUM_DIGITS;
    static constexpr int LSB = (DOT && DT == kF64) ? CR_SA_DOT64_LSB : CR_SA_SUM_LSB;
    static constexpr int PATH = path_of(DT, DOT, VEC);
    static constexpr int U = units_per_iter(DT, DOT, VEC); /* units per thread and iteration */
    /* iterations between flushes of the float16 accumulators (each takes 8 * U / kF16Acc
     * elements per iteration); a round elsewhere */
    static constexpr uint64_t CHUNK = PATH == P_F16 ? kF16Leaves * kF16Acc / (8 * U) : kRound;
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

/* ---- slow paths (rare; kept out of line so the loop stays lean) ---------------------------- */
__device__ __noinline__ void sa_atomic(long long *acc, int lsb, double v)
{
    int idx;
    int64_t c[3];
    if (!cr_sa_split_f64(v, lsb, &idx, c)) return;
    for (int k = 0; k < 3; k++)
        if (c[k]) atomicAdd((unsigned long long *)&acc[idx + k], (unsigned long long)c[k]);
}

/* A float64 input outside the expansions (NaN, inf, |v| >= 2^960): returns flags. */
__device__ __noinline__ unsigned slow_value(long long *acc, int lsb, double v)
{
    const unsigned f = cr_sa_special_flags(v);
    if (!f) sa_atomic(acc, lsb, v);
    return f | CR_X_NONNEGZ;
}

/* A float64 product outside [2^-968, 2^960), or with a factor not finite: returns flags. */
__device__ __noinline__ unsigned slow_product(long long *acc, int lsb, double a, double b)
{
    if (!isfinite(a) || !isfinite(b)) return cr_sa_product_special(a, b) | CR_X_NONNEGZ;
    if (a == 0 || b == 0) return CR_X_NONNEGZ; /* not reached: zero products are fast */
    cr_u128 m;
    int e, neg, idx;
    int64_t c[3];
    cr_sa_product(a, b, &m, &e, &neg);
    for (int half = 0; half < 2; half++) {
        const uint64_t part = (uint64_t)(m >> (64 * half));
        if (!part) continue;
        cr_sa_split_u64(part, e + 64 * half, neg, lsb, &idx, c);
        for (int k = 0; k < 3; k++)
            if (c[k]) atomicAdd((unsigned long long *)&acc[idx + k], (unsigned long long)c[k]);
    }
    return CR_X_NONNEGZ;
}

struct Leaf {
    double v;
    unsigned flags;
};

/* A group of 8 elements that failed its own check: float32 (the elements of a then
 * b) or bfloat16 (those of a). bfloat16 with g_max - g_min <= 42 (spread, from the
 * caller) is added in binary64 (exact: see the header) and returned as the leaf; otherwise each
 * element goes to the superaccumulator or the flags, and the leaf is -0.0. */
template <coopreduce_dtype DT>
__device__ __forceinline__ Leaf slow_group(long long *acc, uint4 a, uint4 b, int spread)
{
    const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    double d[8];
#pragma unroll
    for (int e = 0; e < 8; e++)
        d[e] = DT == kF32 ? (double)__uint_as_float(w[e])
                          : (double)(e & 1 ? bf16_to_f32<1>(w[e / 2]) : bf16_to_f32<0>(w[e / 2]));
    if (DT == kBF16 && spread <= 42)
        return Leaf{((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7])), 0u};
    unsigned flags = 0;
#pragma unroll
    for (int e = 0; e < 8; e++) {
        if (__double_as_longlong(d[e]) == (long long)0x8000000000000000ull) continue;
        const unsigned f = cr_sa_special_flags(d[e]);
        flags |= f | CR_X_NONNEGZ;
        if (!f) sa_atomic(acc, CR_SA_SUM_LSB, d[e]);
    }
    return Leaf{-0.0, flags};
}

/* The last block's one thread: the digits rounded once (the CPU's code, superacc.h). */
__device__ __noinline__ void finish(const long long *acc, int nd, int lsb, unsigned flags, int fmt,
                                    void *out)
{
    int64_t d[CR_SA_MAX_DIGITS];
    for (int i = 0; i < nd; i++) d[i] = acc[i];
    if (fmt == CR_FMT_RAW) { /* unrounded, for a sharded reduction to merge (src/dist) */
        cr_sa_carry(d, nd);
        int64_t *o = static_cast<int64_t *>(out);
        for (int i = 0; i < nd; i++) o[i] = d[i];
        o[nd] = (int64_t)flags;
        return;
    }
    cr_sa_finish(d, nd, lsb, flags, fmt, out);
}

/* ---- leaves ------------------------------------------------------------------------------- */
template <coopreduce_dtype DT, int DOT, int LSB>
__device__ __forceinline__ void elem_leaves(const Unit &ux, const Unit &uy, int e, double *lv,
                                            unsigned &flags, long long *acc)
{
    if (DOT && DT == kF64) {
        const double a = ux.d[e], b = uy.d[e];
        double p = a * b, err = -0.0;
        const double ap = fabs(p);
        if ((ap >= 0x1p-968 && ap < CR_X_BIG) ||
            ((a == 0 || b == 0) && isfinite(a) && isfinite(b))) {
            err = fma(a, b, -p);
            if (err == 0) err = -0.0;
        } else {
            flags |= slow_product(acc, LSB, a, b);
            p = -0.0;
        }
        lv[0] = p;
        lv[1] = err;
    } else if (DOT) {
        lv[0] = (double)ux.f[e] * (double)uy.f[e]; /* exact */
    } else if (DT == kF32) {
        lv[0] = (double)ux.f[e];
    } else if (DT == kF64) {
        double v = ux.d[e];
        if (!(fabs(v) < CR_X_BIG)) {
            flags |= slow_value(acc, LSB, v);
            v = -0.0;
        }
        lv[0] = v;
    } else if (DT == kF16) {
        lv[0] = f16_to_f64<0>(ux.h[e]);
    } else {
        lv[0] = (double)bf16_to_f32<0>(ux.h[e]);
    }
}

/* float32: g_max - g_min bounded from the bits of the NU units a (spread): k = 2 * bits drops
 * the sign and orders like the magnitude, its top byte is the exponent field; min(k - 1) skips
 * the zeros (they wrap to 2^32 - 1) and + 1 restores the smallest nonzero k (0 if none). */
template <int NU> __device__ __forceinline__ int f32_spread(const Unit *a)
{
    uint32_t mx = 0, mn = 0xffffffffu;
#pragma unroll
    for (int u = 0; u < NU; u++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t k = a[u].w[j] + a[u].w[j];
            mx = max(mx, k);
            mn = __viaddmin_u32(k, 0xffffffffu, mn);
        }
    return (int)(mx >> 24) - (int)((mn + 1u) >> 24);
}

/* float32: the binary64 tree of the 8 elements of units a[0], a[1] (exact when spread <= 26). */
__device__ __forceinline__ double f32_tree(const Unit *a)
{
    double d[8];
#pragma unroll
    for (int e = 0; e < 8; e++) d[e] = (double)a[e / 4].f[e % 4];
    return ((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]));
}

/* float32: the leaf of the 8 elements of units a, b, checked alone (after a failed joint check:
 * out of line, so that the loop keeps its registers). */
__device__ __noinline__ Leaf group_f32(long long *acc, uint4 a, uint4 b)
{
    Unit u[2];
    u[0].v = a;
    u[1].v = b;
    const int spread = f32_spread<2>(u);
    if (spread <= 26) return Leaf{f32_tree(u), 0u};
    return slow_group<kF32>(acc, a, b, spread);
}

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

/* bfloat16: the leaf of the 8 elements of unit a, checked alone (after a failed joint check:
 * out of line, so that the loop keeps its registers). */
__device__ __noinline__ Leaf unit_bf16(long long *acc, uint4 a)
{
    Unit u;
    u.v = a;
    int spread, top;
    bf16_range<1>(&u, spread, top);
    if (spread <= 13 && top <= 251) return Leaf{(double)bf16_tree(u), 0u};
    return slow_group<kBF16>(acc, a, a, spread);
}

/* The leaf c through the first KU terms of t; returns the residue. */
template <int K, int KU> __device__ __forceinline__ double add_leaf(double (&t)[K], double c)
{
#pragma unroll
    for (int k = 0; k < KU; k++) t[k] = cr_two_sum(t[k], c, &c);
    return c;
}

template <int K> __device__ __forceinline__ void reset(double (&t)[K])
{
    t[0] = -0.0;
#pragma unroll
    for (int k = 1; k < K; k++) t[k] = 0.0;
}

/* Adds NL leaves to the two expansions (leaf l to expansion l & 1; the second uses its first K1
 * terms, the others stay 0.0); nonzero residues go to the block accumulator. An infinity or a NaN
 * in the lead term (possible for every leaf but float64 values, which are screened) shows up as a
 * NaN residue: the lead, which has seen every infinity of the step, is classified and the
 * expansion restarts (its finite part no longer matters). */
template <int K, int K1, int NL, int LSB>
__device__ __forceinline__ void add_leaves(double (&t)[2][K], const double *lv, unsigned &flags,
                                           long long *acc)
{
    double r[NL];
    unsigned long long any = 0;
#pragma unroll
    for (int l = 0; l < NL; l++) {
        r[l] = l & 1 ? add_leaf<K, K1>(t[1], lv[l]) : add_leaf<K, K>(t[0], lv[l]);
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

/* One carry step over the block's digits (blockDim.x >= ND): digits below the top one come
 * back to [0, 2^32) plus a carry in (-2^31, 2^31). Every thread calls it. */
template <int ND> __device__ void carry_step(long long *acc)
{
    const int i = threadIdx.x;
    long long v = 0, c = 0;
    __syncthreads();
    if (i < ND - 1) {
        v = acc[i];
        c = v >> 32;
    }
    __syncthreads();
    if (i < ND - 1) acc[i] = v - (long long)((unsigned long long)c << 32);
    __syncthreads();
    if (i < ND - 1 && c) atomicAdd((unsigned long long *)&acc[i + 1], (unsigned long long)c);
    __syncthreads();
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

/* One iteration's U units (ok[u]: unit u exists; PATH != P_LEAVES: a missing unit holds -0.0
 * elements, which change nothing). */
template <coopreduce_dtype DT, int DOT, int VEC>
__device__ __forceinline__ void
consume(const Unit (&ux)[Cfg<DT, DOT, VEC>::U], const Unit (&uy)[Cfg<DT, DOT, VEC>::U],
        const bool (&ok)[Cfg<DT, DOT, VEC>::U], double (&t)[2][Cfg<DT, DOT, VEC>::K],
        double (&fx)[kF16Acc], unsigned &flags, long long *acc)
{
    typedef Cfg<DT, DOT, VEC> C;
    const int U = C::U, K = C::K, K1 = C::K1, LSB = C::LSB;
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
    } else if (C::PATH == P_F32) {
        /* one check for all U units (passing it, each group passes its own); else one per group */
        double lv[U / 2];
        if (f32_spread<U>(ux) <= 26) {
#pragma unroll
            for (int g = 0; g < U / 2; g++) lv[g] = f32_tree(ux + 2 * g);
        } else {
#pragma unroll
            for (int g = 0; g < U / 2; g++) {
                const Leaf r = group_f32(acc, ux[2 * g].v, ux[2 * g + 1].v);
                lv[g] = r.v;
                flags |= r.flags;
            }
        }
        add_leaves<K, K1, U / 2, LSB>(t, lv, flags, acc);
    } else if (C::PATH == P_BF16) {
        /* one check for all U units (passing it, each unit passes its own); else one per unit */
        double lv[U];
        int spread, top;
        bf16_range<U>(ux, spread, top);
        if (spread <= 13 && top <= 251) {
#pragma unroll
            for (int u = 0; u < U; u++) lv[u] = (double)bf16_tree(ux[u]);
        } else {
#pragma unroll
            for (int u = 0; u < U; u++) {
                const Leaf r = unit_bf16(acc, ux[u].v);
                lv[u] = r.v;
                flags |= r.flags;
            }
        }
        add_leaves<K, K1, U, LSB>(t, lv, flags, acc);
    } else {
        double lv[U * C::LPU];
#pragma unroll
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int e = 0; e < C::EPU; e++) {
                if (ok[u]) {
                    elem_leaves<DT, DOT, LSB>(ux[u], uy[u], e, lv + (u * C::EPU + e) * C::LPE,
                                              flags, acc);
                } else {
#pragma unroll
                    for (int q = 0; q < C::LPE; q++) lv[(u * C::EPU + e) * C::LPE + q] = -0.0;
                }
            }
        }
        add_leaves<K, K1, U * C::LPU, LSB>(t, lv, flags, acc);
    }
}

template <coopreduce_dtype DT, int DOT, int VEC>
__global__ void __launch_bounds__(kThreads, 2)
    exact_kernel(const void *xv, const void *yv, uint64_t n, long long *partials,
                 unsigned int *ticket, void *out, int fmt)
{
    typedef Cfg<DT, DOT, VEC> C;
    typedef Loader<DT, DOT, VEC> L;
    const int K = C::K, K1 = C::K1, ND = C::ND, LSB = C::LSB, U = C::U;
    __shared__ long long acc[ND];
    __shared__ unsigned int sflags;
    for (int i = threadIdx.x; i < ND; i += blockDim.x) acc[i] = 0;
    if (threadIdx.x == 0) sflags = 0;
    __syncthreads();

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
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t step = U * stride;
    /* -0.0 in every element of a missing unit (16- and 32-bit paths) */
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
            } else if (C::PATH != P_LEAVES) {
                ux[u].v = make_uint4(nz, nz, nz, nz);
            }
        }
        consume<DT, DOT, VEC>(ux, uy, ok, t, fx, flags, acc);
    };
    /* float16: the accumulators become leaves and restart */
    auto flush = [&]() {
        if (C::PATH == P_F16) {
            add_leaves<K, K1, kF16Acc, LSB>(t, fx, flags, acc);
#pragma unroll
            for (int j = 0; j < kF16Acc; j++) fx[j] = -0.0;
        }
    };
    /* `full` iterations in which every unit exists in every thread, then a partial one (units
     * i0 + u * stride >= nunits missing; none at all in some threads), which runs first. The
     * full ones run in rounds of kRound with a carry step between (the first round also has
     * the partial one), each in chunks of at most CHUNK iterations (float16: CHUNK * U = 2^13
     * elements per accumulator); a flush after each chunk and after the partial iteration. A
     * pointer, not an index, runs through the loop: fewer registers. */
    const uint64_t full = nunits / step, ip = full * step + gid;
    if (ip < nunits) {
        iteration(bx + ip * L::USZ, ip, std::true_type());
        flush();
    }
    const unsigned char *p = bx + gid * L::USZ;
    const uint64_t pstep = U * ustride;
    for (uint64_t left = full; left;) {
        uint64_t round = left < kRound ? left : kRound;
        left -= round;
        while (round) {
            const uint32_t chunk = (uint32_t)(round < C::CHUNK ? round : C::CHUNK);
            round -= chunk;
            for (uint32_t k = chunk; k; --k, p += pstep) iteration(p, 0, std::false_type());
            flush();
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
            double lv[2] = {-0.0, -0.0};
            elem_leaves<DT, DOT, LSB>(ux, uy, 0, lv, flags, acc);
            add_leaves<K, K1, 2, LSB>(t, lv, flags, acc);
        }
    }
    /* The lead terms are the plain sums of their leaves from -0.0: still -0.0 only if every
     * leaf was -0.0 (the slow paths set CR_X_NONNEGZ themselves). */
    if (__double_as_longlong(t[0][0]) != (long long)0x8000000000000000ull ||
        __double_as_longlong(t[1][0]) != (long long)0x8000000000000000ull)
        flags |= CR_X_NONNEGZ;
    /* Second expansion into the first, then the warp's shuffle tree (t[1] stays reset: the
     * second leaf of each call is -0.0). */
    {
        double moved[K];
#pragma unroll
        for (int k = 0; k < K; k++) moved[k] = t[1][k];
        reset<K>(t[1]);
#pragma unroll
        for (int k = 0; k < K; k++) {
            double lv[2] = {moved[k], -0.0};
            add_leaves<K, K1, 2, LSB>(t, lv, flags, acc);
        }
    }
    const unsigned lane = threadIdx.x % 32;
    for (int off = 16; off >= 1; off /= 2) {
        double pt[K];
#pragma unroll
        for (int k = 0; k < K; k++) pt[k] = __shfl_down_sync(0xffffffffu, t[0][k], off);
        if (lane < (unsigned)off) {
#pragma unroll
            for (int k = 0; k < K; k++) {
                double lv[2] = {pt[k], -0.0};
                add_leaves<K, K1, 2, LSB>(t, lv, flags, acc);
            }
        }
    }
    flags = __reduce_or_sync(0xffffffffu, flags);
    if (lane == 0) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            const unsigned f = cr_sa_special_flags(t[0][k]);
            if (f)
                flags |= f;
            else
                sa_atomic(acc, LSB, t[0][k]);
        }
        atomicOr(&sflags, flags);
    }
    carry_step<ND>(acc); /* |digits| < 2^33: the last block may add 2^29 slots */

    long long *mine = partials + (uint64_t)blockIdx.x * (ND + 1);
    for (int i = threadIdx.x; i < ND; i += blockDim.x) mine[i] = acc[i];
    if (threadIdx.x == 0) mine[ND] = (long long)sflags;
    /* Every thread wrote part of the slot: the kernel layer's hand-off fences each thread's
     * stores before the ticket (handoff.cuh says why that matters). */
    if (!last_block_arrive<true>(ticket)) return;
    for (int i = threadIdx.x; i < ND; i += blockDim.x) acc[i] = 0;
    if (threadIdx.x == 0) sflags = 0;
    __syncthreads();
    /* Column j of the slots (digit j, or the flags at j == ND) is added by `per` threads, each
     * taking every per-th slot into a register (|slot digit| < 2^33, at most 2^29 slots: below
     * 2^62), then one shared atomic: few round trips to L2, few atomics. */
    const unsigned cols = ND + 1, per = blockDim.x / cols;
    if (threadIdx.x < per * cols) {
        const unsigned j = threadIdx.x % cols;
        long long sum = 0, fl = 0;
        for (uint64_t b = threadIdx.x / cols; b < gridDim.x; b += 8 * (uint64_t)per) {
            long long v[8];
#pragma unroll
            for (int k = 0; k < 8; k++) {
                const uint64_t bk = b + (uint64_t)k * per;
                v[k] = bk < gridDim.x ? __ldcg(partials + bk * cols + j) : 0;
            }
#pragma unroll
            for (int k = 0; k < 8; k++) {
                sum += v[k];
                fl |= v[k];
            }
        }
        if (j == ND) {
            if (fl) atomicOr(&sflags, (unsigned)fl);
        } else if (sum) {
            atomicAdd((unsigned long long *)&acc[j], (unsigned long long)sum);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        finish(acc, ND, LSB, sflags | (n ? CR_X_ANY : 0u), fmt, out);
        last_block_release(ticket);
    }
}

/* A forced grid is clamped to this many blocks (1.1 KiB of slot each at most): any grid gives
 * the same bits. The first allocation covers kBlocksPerSm blocks per SM (512-thread blocks:
 * 4 fill an SM), so only a forced grid makes the slots grow. Slots are sized for the widest
 * layout (float64 dot), so that no dtype makes them grow either. */
const int kMaxGrid = 4096;
const int kBlocksPerSm = 4;
const size_t kSlotBytes = (size_t)(CR_SA_DOT64_DIGITS + 1) * 8;

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
        const uint64_t per_block = (uint64_t)units_per_iter(DT, DOT, VEC) * kThreads;
        return slotted_grid<exact_kernel<DT, DOT, VEC>>(c, kThreads,
                                                        (units + per_block - 1) / per_block,
                                                        kMaxGrid, kBlocksPerSm, kSlotBytes, g);
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
        exact_kernel<DT, DOT, VEC><<<g->blocks, kThreads, 0, c->stream>>>(
            c->x, c->y, c->n, (long long *)w->slots, w->ticket, c->out, fmt);
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
