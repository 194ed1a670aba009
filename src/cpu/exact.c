/* exact.c — EXACT mode on the CPU (docs/EXACT.md): the correctly rounded SUM of the four float
 * types and DOT of float32 and float64.
 *
 * Each thread takes a contiguous range. Sums of float32, float16 and bfloat16: a block of 4096
 * elements within 17 binades is summed exactly in binary64 ("narrow blocks" below); in other
 * blocks each element is added in binary64 to the bucket of its float32 exponent, exactly
 * ("exponent buckets"). Float64 sums: each value, split in two halves, is added in binary64 to
 * the bin of its group of eight binades, exactly ("binned halves"). The dots go through
 * floating-point expansions where those are fast, and where they are not to the binned halves
 * (float32 products) or to int64 digits (float64 products), whose cost does not depend on the
 * data ("hybrid" below). In the expansions, products become "leaves" in binary64, exactly (a
 * float32 product; a float64 product as p = fl(x*y) and its error fma(x, y, -p)); leaves go to
 * 32 independent lanes (four 8-double vectors), each an expansion of K terms (2 for float32
 * products, 3 for float64) updated with TwoSum, so that (terms + residue) == (terms before +
 * leaf) exactly. A nonzero residue leaves the vectors and is added, exactly, to the thread's
 * superaccumulator (src/core/superacc.h): rare on narrow data, frequent on data spread over many
 * binades. float64 products outside [2^-968, 2^960) and non-finite factors go to the
 * superaccumulator or the flags directly, so no expansion ever overflows. At the end each
 * lane's terms (each bucket, bin, set of digits) are added to the superaccumulator, the threads'
 * accumulators are added (integer addition: any order, same digits) and the total is rounded
 * once.
 *
 * Compiled with -ffp-contract=off and without fast-math (CMakeLists.txt): TwoSum must not be
 * fused or reassociated. Runs in round-to-nearest without FTZ/DAZ (the environment cr_cpu_reduce
 * enters, runtime.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "core/superacc.h"
#include "cpu/cpu.h"
#include "cpu/runtime.h"

typedef double v8d __attribute__((vector_size(64)));
typedef int64_t v8l __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));

#ifndef NV
#define NV 4 /* vectors of lanes */
#endif
#define LANES (NV * 8) /* independent expansions per thread */
/* Superaccumulator additions between two carry passes: each adds |c| < 2^32 to a digit, so
 * 2^28 of them keep every digit below 2^61. */
#define CARRY_EVERY (1u << 28)

typedef struct {
    coopreduce_op op;
    coopreduce_dtype dt;
    const void *x, *y;
    uint64_t i0, i1; /* this thread's elements */
    int nd, lsb;     /* superaccumulator layout */
    unsigned flags;
    uint32_t pending; /* additions since the last carry pass */
    uint64_t slow;    /* products that bypassed the expansions (slow_product) */
    int64_t d[CR_SA_MAX_DIGITS];
} job;

/* v * 2^(j->lsb - lsb) into the superaccumulator (lsb < j->lsb: a value kept scaled down). */
static void sa_add_at(job *j, int lsb, double v)
{
    cr_sa_add_f64(j->d, lsb, v);
    if (++j->pending >= CARRY_EVERY) {
        cr_sa_carry(j->d, j->nd);
        j->pending = 0;
    }
}

static void sa_add(job *j, double v) { sa_add_at(j, j->lsb, v); }

/* A float64 product that bypasses the expansions: a factor not finite, or the product outside
 * [2^-968, 2^960) where p and its FMA error would not be exact doubles. */
static void slow_product(job *j, double a, double b)
{
    j->slow++;
    j->flags |= CR_X_NONNEGZ;
    if (!isfinite(a) || !isfinite(b)) {
        j->flags |= cr_sa_product_special(a, b);
        return;
    }
    if (a == 0 || b == 0) return; /* not reached: zero products take the fast path */
    cr_u128 m;
    int e, neg, idx;
    int64_t c[3];
    cr_sa_product(a, b, &m, &e, &neg);
    for (int half = 0; half < 2; half++) {
        const uint64_t part = (uint64_t)(m >> (64 * half));
        if (!part) continue;
        cr_sa_split_u64(part, e + 64 * half, neg, j->lsb, &idx, c);
        for (int k = 0; k < 3; k++) j->d[idx + k] += c[k];
        ++j->pending;
    }
    if (j->pending >= CARRY_EVERY) {
        cr_sa_carry(j->d, j->nd);
        j->pending = 0;
    }
}

/* ---- Leaves: FILL(j, i, cnt, buf) writes LANES doubles for elements [i, i + cnt) ---------- */
/* float32 products are exact in binary64 (48-bit significands, exponents within range). */
#define FILL_DOT32(j, i, cnt, buf)                                                                 \
    do {                                                                                           \
        const float *x_ = (const float *)(j)->x + (i), *y_ = (const float *)(j)->y + (i);          \
        if ((cnt) == LANES) {                                                                      \
            for (int l = 0; l < LANES; l++) (buf)[l] = (double)x_[l] * (double)y_[l];              \
        } else {                                                                                   \
            for (int l = 0; l < LANES; l++)                                                        \
                (buf)[l] = l < (int)(cnt) ? (double)x_[l] * (double)y_[l] : -0.0;                  \
        }                                                                                          \
    } while (0)

/* float64 products: LANES / 2 elements per step, p in lanes [0, 16), its error in [16, 32).
 * A zero error is written -0.0 so that the lead term keeps the sign rule of zeros. */
#define FILL_DOT64(j, i, cnt, buf)                                                                 \
    do {                                                                                           \
        const double *x_ = (const double *)(j)->x + (i), *y_ = (const double *)(j)->y + (i);       \
        for (int l = 0; l < LANES / 2; l++) {                                                      \
            double p_ = -0.0, e_ = -0.0;                                                           \
            if (l < (int)(cnt)) {                                                                  \
                const double a_ = x_[l], b_ = y_[l];                                               \
                p_ = a_ * b_;                                                                      \
                const double ap_ = fabs(p_);                                                       \
                if ((ap_ >= 0x1p-968 && ap_ < CR_X_BIG) ||                                         \
                    ((a_ == 0 || b_ == 0) && isfinite(a_) && isfinite(b_))) {                      \
                    e_ = fma(a_, b_, -p_);                                                         \
                    if (e_ == 0) e_ = -0.0;                                                        \
                } else {                                                                           \
                    slow_product((j), a_, b_);                                                     \
                    p_ = -0.0;                                                                     \
                }                                                                                  \
            }                                                                                      \
            (buf)[l] = p_;                                                                         \
            (buf)[LANES / 2 + l] = e_;                                                             \
        }                                                                                          \
    } while (0)

/* ---- The expansion loop ---------------------------------------------------------------------
 * t[0] starts at -0.0, the identity of addition that keeps IEEE's sign rule: the lead term is
 * the plain recursive sum of the lane's leaves, so it is -0.0 at the end exactly when every leaf
 * was -0.0 (the slow paths set CR_X_NONNEGZ themselves). */
#define DEFINE_RUN(NAME, K, EPS, FILL)                                                             \
    CR_SIMD_CLONES static unsigned NAME(job *j)                                                    \
    {                                                                                              \
        v8d t[K][NV];                                                                              \
        for (int v = 0; v < NV; v++)                                                               \
            for (int k = 0; k < (K); k++)                                                          \
                for (int l = 0; l < 8; l++) t[k][v][l] = k == 0 ? -0.0 : 0.0;                      \
        double buf[LANES] __attribute__((aligned(64)));                                            \
        unsigned hits = 0; /* steps that left a residue */                                         \
        for (uint64_t i = j->i0; i < j->i1; i += (EPS)) {                                          \
            const uint64_t cnt = j->i1 - i < (EPS) ? j->i1 - i : (EPS);                            \
            FILL(j, i, cnt, buf);                                                                  \
            v8d r[NV];                                                                             \
            memcpy(r, buf, sizeof r);                                                              \
            v8l nz = {0}; /* residue bits without the sign: integer lanes, no FP compare */        \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                   \
            {                                                                                      \
                v8d c = r[v];                                                                      \
                _Pragma("GCC unroll 3") for (int k = 0; k < (K); k++)                              \
                {                                                                                  \
                    const v8d a = t[k][v], s = a + c, bb = s - a;                                  \
                    c = (a - (s - bb)) + (c - bb);                                                 \
                    t[k][v] = s;                                                                   \
                }                                                                                  \
                r[v] = c;                                                                          \
                nz |= (v8l)c << 1;                                                                 \
            }                                                                                      \
            int64_t any = 0;                                                                       \
            for (int l = 0; l < 8; l++) any |= nz[l];                                              \
            if (any) {                                                                             \
                flush_lanes(j, (double *)t, (K), (const double *)r);                               \
                hits++;                                                                            \
            }                                                                                      \
        }                                                                                          \
        fold_lanes(j, (const double *)t, (K));                                                     \
        return hits;                                                                               \
    }

/* t is laid out [k][v][l]: term k of lane (v, l) at t[(k * NV + v) * 8 + l]. */
static void flush_lanes(job *j, double *t, int K, const double *r)
{
    for (int lane = 0; lane < LANES; lane++) {
        const double c = r[lane];
        if (c == 0) continue;
        if (isfinite(c)) {
            sa_add(j, c);
            continue;
        }
        /* An infinity or a NaN reached the lead term (32/16-bit inputs): classify it there, and
         * restart the lane (its finite part no longer matters: the result is inf or NaN). */
        const int v = lane / 8, l = lane % 8;
        const unsigned f = cr_sa_special_flags(t[v * 8 + l]);
        j->flags |= (f ? f : CR_X_NAN) | CR_X_NONNEGZ;
        for (int k = 0; k < K; k++) t[(k * NV + v) * 8 + l] = k == 0 ? -0.0 : 0.0;
    }
}

static void fold_lanes(job *j, const double *t, int K)
{
    for (int lane = 0; lane < LANES; lane++) {
        if (cr_f64_bits(t[lane]) != 0x8000000000000000ull) j->flags |= CR_X_NONNEGZ;
        for (int k = 0; k < K; k++) {
            const double v = t[k * LANES + lane];
            const unsigned f = cr_sa_special_flags(v);
            if (f)
                j->flags |= f;
            else
                sa_add(j, v);
        }
    }
}

DEFINE_RUN(run_dot32, 2, LANES, FILL_DOT32)
DEFINE_RUN(run_dot64, 3, LANES / 2, FILL_DOT64)

/* ---- float32, float16 and bfloat16 sums: exponent buckets ---------------------------------
 * Every leaf is a float32 value. Those with the same biased exponent e are all multiples of
 * 2^(e-150) (2^-149 for e = 0) below 2^(e-126) in magnitude, so a binary64 that adds up to 2^29
 * of them is exact (below 2^53 of those units). Each leaf is therefore added, in binary64, to
 * the bucket of its exponent: no TwoSum, no residue, no branch. Every 2^29 leaves the buckets go
 * to the superaccumulator, exactly, and restart. A bucket starts at -0.0 and stays -0.0 only if
 * all its leaves were -0.0 (the sign rule of zeros). Exponent 255 collects infinities and NaNs,
 * whose binary64 sum classifies them (inf + -inf is NaN, as the result must be). Eight sets of
 * buckets, element i in set i % 8, so that consecutive leaves of one exponent (most of uniform
 * data) do not wait on each other's store. Much faster than the expansions of DEFINE_RUN
 * (docs/PERF.md, "CPU"), which float64 and the dots keep (their leaves do not fit a few
 * buckets). */
#define SETS 8
#define SPAN (1ull << 29) /* leaves between two flushes */

/* An exact binary64 sum of leaves (a bucket, a narrow block's total), started at -0.0, into
 * the flags and the superaccumulator. */
static void sum_out(job *j, double v)
{
    if (cr_f64_bits(v) == 0x8000000000000000ull) return; /* no leaf, or only -0.0 */
    j->flags |= CR_X_NONNEGZ;
    const unsigned f = cr_sa_special_flags(v);
    if (f)
        j->flags |= f;
    else if (v != 0)
        sa_add(j, v);
}

static void flush_buckets(job *j, double (*b)[256])
{
    for (int q = 0; q < SETS; q++)
        for (int e = 0; e < 256; e++) {
            sum_out(j, b[q][e]);
            b[q][e] = -0.0;
        }
}

static void buckets_init(double (*b)[256])
{
    for (int q = 0; q < SETS; q++)
        for (int e = 0; e < 256; e++) b[q][e] = -0.0;
}

/* Adds leaves x[0 .. m) (float32 bits; at most SPAN between two flushes) to the buckets. */
static void bucket_add_f32(double (*b)[256], const uint32_t *x, uint64_t m)
{
    uint64_t i = 0;
    for (; i + SETS <= m; i += SETS)
        for (int q = 0; q < SETS; q++) {
            const uint32_t u = x[i + q];
            b[q][u >> 23 & 255] += (double)cr_f32_from(u);
        }
    for (; i < m; i++) {
        const uint32_t u = x[i];
        b[0][u >> 23 & 255] += (double)cr_f32_from(u);
    }
}

/* Narrow blocks. A block of at most BLK leaves whose nonzero magnitudes span at most NARROW
 * exponents (emax - emin <= NARROW, the biased exponents of |leaf|, subnormals counted as 1:
 * the same unit) needs no buckets: every leaf is a multiple of u = 2^(emin - 150) below
 * 2^(emax - 126), so every sum of a subset of the block is below 2^(12 + emax - 126) =
 * 2^(emax - emin + 36) u <= 2^53 u, a binary64 exactly. The block is then summed by sixteen
 * binary64 accumulators in vector code, combined pairwise (each partial sum a subset's, exact)
 * and the one total goes to the superaccumulator. The zero rule as the buckets': the total is
 * -0.0 only if every leaf was. Uniform, normal and subnormal data are narrow blocks; wide and
 * cancelling data, and blocks with infinities or NaN, take the buckets. */
#define BLK    4096
#define NARROW 17

/* The largest biased exponent of |leaf| (255: infinity or NaN) and the smallest of the nonzero
 * leaves (255 if none), subnormals as 1. */
CR_SIMD_CLONES static void block_span(const uint32_t *w, uint64_t m, uint32_t *mx, uint32_t *mn)
{
    uint32_t hi = 0, lo = 255;
    for (uint64_t i = 0; i < m; i++) {
        const uint32_t a = w[i] & 0x7fffffffu, e = a >> 23;
        const uint32_t f = a == 0 ? 255u : e == 0 ? 1u : e;
        hi = e > hi ? e : hi;
        lo = f < lo ? f : lo;
    }
    *mx = hi;
    *mn = lo;
}

CR_SIMD_CLONES static double block_sum(const uint32_t *w, uint64_t m)
{
    double a[16];
    for (int q = 0; q < 16; q++) a[q] = -0.0;
    uint64_t i = 0;
    for (; i + 16 <= m; i += 16)
        for (int q = 0; q < 16; q++) a[q] += (double)cr_f32_from(w[i + q]);
    for (; i < m; i++) a[0] += (double)cr_f32_from(w[i]);
    for (int d = 8; d >= 1; d /= 2)
        for (int q = 0; q < d; q++) a[q] += a[q + d];
    return a[0];
}

/* Leaves w[0..m), m <= BLK: a narrow block straight to the superaccumulator (returns 1), else
 * the buckets (returns 0). */
static int block_add(job *j, double (*b)[256], const uint32_t *w, uint64_t m)
{
    uint32_t mx, mn;
    block_span(w, m, &mx, &mn);
    if (mx == 255 || (mn <= mx && mx - mn > NARROW)) {
        bucket_add_f32(b, w, m);
        return 0;
    }
    sum_out(j, block_sum(w, m)); /* finite: no infinity or NaN in the block */
    return 1;
}

/* float16 and bfloat16 leaves widened BLK at a time by a vector loop (values.h's branch-free
 * widening for float16). */
CR_SIMD_CLONES static void widen_f16_block(const uint16_t *h, uint64_t m, uint32_t *w)
{
    for (uint64_t i = 0; i < m; i++) w[i] = cr_f32_bits(cr_f16_to_f32_nobranch(h[i]));
}
CR_SIMD_CLONES static void widen_bf16_block(const uint16_t *h, uint64_t m, uint32_t *w)
{
    for (uint64_t i = 0; i < m; i++) w[i] = (uint32_t)h[i] << 16;
}

/* This thread's range, BLK leaves at a time (widened first for the 16-bit types), the buckets
 * flushed every SPAN leaves (a multiple of BLK: a flush falls between two blocks). After a wide
 * block the next 1, 2, 4, .. 16 blocks (doubling while they stay wide) go to the buckets
 * without the span test, which otherwise costs wide data about a tenth of its time. Either
 * path is exact: only the speed depends on which one a block takes. */
#define SKIP_MAX 16
static void buckets_run(job *j)
{
    double b[SETS][256];
    uint32_t w[BLK];
    unsigned skip = 0, wait = 0;
    buckets_init(b);
    for (uint64_t i = j->i0; i < j->i1; i += BLK) {
        const uint64_t m = j->i1 - i < BLK ? j->i1 - i : BLK;
        const uint32_t *leaves = w;
        if (j->dt == COOPREDUCE_FLOAT32)
            leaves = (const uint32_t *)j->x + i;
        else if (j->dt == COOPREDUCE_FLOAT16)
            widen_f16_block((const uint16_t *)j->x + i, m, w);
        else
            widen_bf16_block((const uint16_t *)j->x + i, m, w);
        if (wait) {
            wait--;
            bucket_add_f32(b, leaves, m);
        } else if (block_add(j, b, leaves, m)) {
            skip = 0;
        } else {
            skip = skip ? (skip < SKIP_MAX ? 2 * skip : SKIP_MAX) : 1;
            wait = skip;
        }
        if ((i - j->i0 + m) % SPAN == 0 || i + m == j->i1) flush_buckets(j, b);
    }
}

/* ---- float64 dots: digits ----------------------------------------------------------------
 * As the GPU's lanes (src/gpu/exact_lanes.cuh): every product goes to int64 digits of radix 2^32
 * at 2^-2148 as two halves of its exact 106-bit value (superacc.h's
 * cr_sa_digits_add_product), whatever its exponent or sign: a flat cost, where the expansions
 * fell to a twentieth of their speed on data spread over many binades. DSETS sets of digits,
 * element i to set i % DSETS, so that consecutive products do not wait on each other's stores;
 * each set is normalised (cr_sa_normalise_strided) every DSPAN elements. A digit gains at most
 * 2^53 + 2^32 per element, so a set normalised after at most DSPAN + DSETS - 1 elements stays
 * below 2^33 + (2^9 + 3) * (2^53 + 2^32) < 2^63. Infinities and NaNs add nothing and set their
 * flags; CR_X_NONNEGZ is set when some product is not -0.0. */
#define DSETS 4
#define DSPAN 512 /* additions per set between two normalisations */

static void digits_dot64(job *j)
{
    int64_t D[DSETS][CR_SA_DOT64_DIGITS];
    memset(D, 0, sizeof D);
    const uint64_t *x = j->x, *y = j->y;
    uint64_t nonneg = 0;
    unsigned flags = 0;
    for (uint64_t i = j->i0; i < j->i1;) {
        const uint64_t cnt = j->i1 - i < DSETS * DSPAN ? j->i1 - i : DSETS * DSPAN;
        uint64_t k = 0;
        for (; k + DSETS <= cnt; k += DSETS)
            for (int q = 0; q < DSETS; q++)
                flags |= cr_sa_digits_add_product(D[q], 1, x[i + k + q], y[i + k + q], &nonneg);
        for (; k < cnt; k++)
            flags |= cr_sa_digits_add_product(D[0], 1, x[i + k], y[i + k], &nonneg);
        for (int q = 0; q < DSETS; q++) cr_sa_normalise_strided(D[q], CR_SA_DOT64_DIGITS, 1);
        i += cnt;
    }
    for (int q = 0; q < DSETS; q++)
        for (int k = 0; k < CR_SA_DOT64_DIGITS; k++) j->d[k] += D[q][k]; /* each below 2^33 */
    j->flags |= flags | (nonneg ? CR_X_NONNEGZ : 0u);
}

/* ---- float64 sums and float32 dots: binned halves -------------------------------------------
 * Every leaf is a double: a float64 value, or a float32 product (exact in binary64). A finite
 * leaf v is split as v = hi + lo: hi is v with the low 26 bits of its significand cleared, lo =
 * v - hi (those 26 bits, exact). Its group is g = E >> 3, E its biased exponent: eight binades a
 * group, 256 groups. In group g every hi is a multiple of U = 2^(max(8g, 1) - 1049) below 2^34 U,
 * and every lo a multiple of U / 2^26 below 2^33 U / 2^26, so any sum of at most 2^19 his (or
 * los) of one group is below 2^53 of its unit: exact in binary64. Each leaf adds {hi, lo} to its
 * group's bin {H, L}: one vector addition, no branch, no residue test, the same cost at every
 * exponent (the expansions of DEFINE_RUN fell to a twentieth of their speed on data spread over
 * many binades, and the digits of DEFINE_DIGITS, two scalar updates a leaf, to a quarter of the
 * canonical sum's; docs/EXACT.md, "CPU"). The top eight groups (|v| >= 2^960) are scaled by
 * 2^-128 first, 128 off the exponent field (exact; an integer subtraction, as a multiplication
 * would be slow on subnormal operands), so that no bin overflows; their bins go to the
 * superaccumulator 128 bits up. Every BSPAN leaves each group's bins, summed over the BSETS sets
 * (every partial sum a sum of at most 2^19 leaves: exact), go to the superaccumulator and
 * restart. BSETS sets, leaf i in set i % BSETS, so that consecutive leaves of one group (all of
 * narrow data) do not wait on each other's store; sets side by side in a group's 64 bytes (4 KiB
 * apart, a set's loads would wait on the other sets' stores: 4K aliasing), and four of them, as
 * the 16 KiB of bins then stay in the level-1 cache (eight measured slower on wide data). H bins
 * start at -0.0 and stay -0.0 only if every leaf of the group was -0.0 (the sign rule of zeros).
 * Infinities and NaNs (group 255) are found by a vector test of each BCHUNK leaves after the bins
 * took them (from the level-1 cache: ahead of the bins, the test waited for memory, 40% slower on
 * wide data), and set their flags; in the bins they become finite values below 2^897 (128 off their
 * exponent field), as harmless as the group's others: the result is an infinity or a NaN. */
#define BSETS  4
#define BSPAN  (1u << 19)
#define BGROUP 256
#define BTOP   248                   /* the first scaled group: biased exponents from 1984 */
#define BLOW   0xfffffffffc000000ull /* the sign, the exponent and the top 26 fraction bits */
#define BSHIFT (128ull << 52)

typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2l __attribute__((vector_size(16)));

#define BZERO8  0, 0, 0, 0, 0, 0, 0, 0
#define BZERO64 BZERO8, BZERO8, BZERO8, BZERO8, BZERO8, BZERO8, BZERO8, BZERO8
static const uint64_t bin_shift[BGROUP] = {BZERO64, BZERO64, BZERO64, BZERO8, BZERO8, BZERO8,
                                           BZERO8,  BZERO8,  BZERO8,  BZERO8, BSHIFT, BSHIFT,
                                           BSHIFT,  BSHIFT,  BSHIFT,  BSHIFT, BSHIFT, BSHIFT};

static void bins_init(v2d (*b)[BSETS])
{
    for (int g = 0; g < BGROUP; g++)
        for (int q = 0; q < BSETS; q++) b[g][q] = (v2d){-0.0, 0.0};
}

/* The leaf of bits u into set q of its bin. */
static inline void bin_add(v2d (*b)[BSETS], int q, uint64_t u)
{
    const unsigned g = (unsigned)(u >> 55) & 255u;
    const uint64_t w = u - bin_shift[g];
    const v2d v = {cr_f64_from(w), cr_f64_from(w)};
    const v2l keep = {(int64_t)BLOW, -1};
    const v2d hv = (v2d)((v2l)v & keep); /* {hi, v} */
    const v2d z = {0.0, hv[0]};
    b[g][q] += hv - z; /* {hi, v - hi} */
}

/* Leaves u[0 .. m) into the bins. The leaves ahead are fetched with a non-temporal hint (2 KiB
 * ahead, a line at a time): the values of data spread over many groups then took an eighth less
 * time (a 2-core AMD EPYC, float64 over the whole exponent range), the streamed lines no longer
 * pushing the bins out of the level-1 cache. */
#define BAHEAD 256
CR_SIMD_CLONES static void bins_span(v2d (*b)[BSETS], const uint64_t *u, uint64_t m)
{
    uint64_t i = 0;
    for (; i + BSETS <= m; i += BSETS) {
        if (i % 8 == 0) __builtin_prefetch(u + i + BAHEAD, 0, 0);
        for (int q = 0; q < BSETS; q++) bin_add(b, q, u[i + q]);
    }
    for (; i < m; i++) bin_add(b, 0, u[i]);
}

/* float32 products, exact in binary64, as leaves: a vector loop ahead of the bins. */
#define BCHUNK 512
CR_SIMD_CLONES static void products32(const float *x, const float *y, uint64_t m, uint64_t *u)
{
    for (uint64_t i = 0; i < m; i++) u[i] = cr_f64_bits((double)x[i] * (double)y[i]);
}

/* The bins into the superaccumulator, and restarted. */
static void bins_flush(job *j, v2d (*b)[BSETS])
{
    for (int g = 0; g < BGROUP; g++) {
        double h = -0.0, l = 0.0;
        for (int q = 0; q < BSETS; q++) {
            h += b[g][q][0];
            l += b[g][q][1];
            b[g][q] = (v2d){-0.0, 0.0};
        }
        if (cr_f64_bits(h) != 0x8000000000000000ull) j->flags |= CR_X_NONNEGZ;
        const int lsb = g < BTOP ? j->lsb : j->lsb - 128;
        if (h != 0) sa_add_at(j, lsb, h);
        if (l != 0) sa_add_at(j, lsb, l);
    }
}

/* The flags of the infinities and NaNs among leaves u[0 .. m): a vector test first. */
CR_SIMD_CLONES static int any_special(const uint64_t *u, uint64_t m)
{
    const uint64_t inf = 0x7ff0000000000000ull;
    uint64_t any = 0;
    for (uint64_t i = 0; i < m; i++) any |= (u[i] & inf) == inf;
    return any != 0;
}

static unsigned special_flags(const uint64_t *u, uint64_t m)
{
    unsigned f = 0;
    if (any_special(u, m))
        for (uint64_t i = 0; i < m; i++) f |= cr_sa_special_flags(cr_f64_from(u[i]));
    return f;
}

/* A thread's range through the bins, BCHUNK leaves at a time: float64 values where they lie,
 * float32 products computed into a buffer by a vector loop. */
static void bins_run(job *j)
{
    const int dot = j->op == COOPREDUCE_OP_DOT;
    const float *x32 = j->x, *y32 = j->y;
    v2d b[BGROUP][BSETS];
    uint64_t buf[BCHUNK];
    bins_init(b);
    for (uint64_t i = j->i0; i < j->i1;) {
        const uint64_t e = j->i1 - i < BSPAN ? j->i1 : i + BSPAN;
        for (; i < e; i += BCHUNK) {
            const uint64_t m = e - i < BCHUNK ? e - i : BCHUNK;
            const uint64_t *u = (const uint64_t *)j->x + i;
            if (dot) {
                products32(x32 + i, y32 + i, m, buf);
                u = buf;
            }
            bins_span(b, u, m);
            j->flags |= special_flags(u, m); /* from the level-1 cache */
        }
        bins_flush(j, b);
    }
}

/* Expansions while residues stay rare, a flat path (`flat`: the bins of float32 products, the
 * digits of float64 products) where they do not: blocks of HYB_BLOCK elements go through the
 * expansions (fast on narrow data: float32 dots of uniform data took 0.65 of the bins' time), and
 * after a block in which more than one step in 8 left a residue, or more than one element in 8
 * bypassed the expansions (data spread over many binades, or float64 products below 2^-968: the
 * expansions fall to a twentieth of their speed or less), the next elements go through the flat
 * path, whose cost does not depend on the data; then the expansions are tried again. The flat
 * path's run is HYB_FLAT elements after a block that passed, and twice the last after each block
 * that failed, up to HYB_FLAT_MAX: a block tried at a twentieth of the speed costs as much as 20
 * HYB_BLOCKs through the flat path, which on data spread throughout was more than the flat
 * path's own runs of 2^18 (a 2-core AMD EPYC: float64 spread over the whole exponent range, 2^24
 * elements, docs/perf-log). Either way every element is added exactly: the switch changes the
 * speed, never the sum's value. */
#define HYB_BLOCK    (1u << 14)
#define HYB_FLAT     (1u << 18)
#define HYB_FLAT_MAX (1u << 24)

static void hybrid(job *j, unsigned (*run)(job *), void (*flat)(job *), uint64_t per_step)
{
    const uint64_t i0 = j->i0, i1 = j->i1;
    uint64_t span = HYB_FLAT / 2; /* the last run of the flat path, halved */
    for (uint64_t i = i0; i < i1;) {
        uint64_t e = i1 - i < HYB_BLOCK ? i1 : i + HYB_BLOCK;
        j->i0 = i;
        j->i1 = e;
        const uint64_t steps = (e - i + per_step - 1) / per_step, slow0 = j->slow;
        const unsigned hits = run(j);
        const uint64_t slow = j->slow - slow0;
        i = e;
        if ((uint64_t)hits * 8 <= steps && slow * 8 <= e - j->i0) {
            span = HYB_FLAT / 2;
        } else if (i < i1) {
            span = span * 2 < HYB_FLAT_MAX ? span * 2 : HYB_FLAT_MAX;
            e = i1 - i < span ? i1 : i + span;
            j->i0 = i;
            j->i1 = e;
            flat(j);
            cr_sa_carry(j->d, j->nd); /* the digits' sums (below 2^35) kept away from the bound */
            i = e;
        }
    }
    j->i0 = i0;
    j->i1 = i1;
}

static void *worker(void *arg)
{
    job *j = arg;
    if (j->op == COOPREDUCE_OP_DOT && j->dt == COOPREDUCE_FLOAT64)
        hybrid(j, run_dot64, digits_dot64, LANES / 2);
    else if (j->op == COOPREDUCE_OP_DOT)
        hybrid(j, run_dot32, bins_run, LANES);
    else if (j->dt == COOPREDUCE_FLOAT64)
        bins_run(j);
    else
        buckets_run(j); /* float32, float16, bfloat16 */
    cr_sa_carry(j->d, j->nd); /* digits below 2^33 in magnitude: sums of 2^29 threads fit */
    return NULL;
}

/* Below this many elements per thread, starting a thread costs more than it saves. */
#define MIN_PER_THREAD (1u << 16)
#define STACK_JOBS     8

/* The digits and flags of x[0..n) into d (nd digits, carried) and *flags; 0 or a failure. */
static coopreduce_status accumulate(coopreduce_handle *h, const cr_plan *p, const void *x,
                                    const void *y, uint64_t n, int64_t *d, int nd,
                                    unsigned *out_flags)
{
    const coopreduce_op op = p->op;
    const coopreduce_dtype dtype = p->dtype;
    const int dot64 = op == COOPREDUCE_OP_DOT && dtype == COOPREDUCE_FLOAT64;
    uint64_t t = n / MIN_PER_THREAD;
    const uint64_t tmax = (uint64_t)cr_cpu_threads(h);
    if (t > tmax) t = tmax;
    if (t < 1) t = 1;
    job stack_jobs[STACK_JOBS], *jobs = stack_jobs;
    if (t > STACK_JOBS) {
        jobs = malloc(t * sizeof *jobs);
        if (!jobs)
            return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY,
                           "cannot allocate %llu exact accumulators", (unsigned long long)t);
    }
    for (uint64_t i = 0; i < t; i++) {
        job *j = &jobs[i];
        memset(j, 0, sizeof *j);
        j->op = op;
        j->dt = dtype;
        j->x = x;
        j->y = y;
        j->i0 = n * i / t;
        j->i1 = n * (i + 1) / t;
        j->nd = dot64 ? CR_SA_DOT64_DIGITS : CR_SA_SUM_DIGITS;
        j->lsb = dot64 ? CR_SA_DOT64_LSB : CR_SA_SUM_LSB;
    }
    if (n > 0) cr_cpu_run((int)t, worker, jobs, sizeof *jobs);
    /* Integer addition: the thread order does not matter. */
    unsigned flags = n > 0 ? CR_X_ANY : 0;
    for (uint64_t i = 0; i < t; i++) {
        flags |= jobs[i].flags;
        if (i)
            for (int k = 0; k < jobs[0].nd; k++) jobs[0].d[k] += jobs[i].d[k];
    }
    if (nd != jobs[0].nd) {
        const int have = jobs[0].nd;
        if (jobs != stack_jobs) free(jobs);
        return cr_fail(h, COOPREDUCE_ERROR_INTERNAL, "%d digits asked of a %d-digit accumulator",
                       nd, have);
    }
    cr_sa_carry(jobs[0].d, nd);
    memcpy(d, jobs[0].d, (size_t)nd * sizeof *d);
    *out_flags = flags;
    if (jobs != stack_jobs) free(jobs);
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_cpu_exact_acc(coopreduce_handle *h, const cr_plan *p, const void *x,
                                   const void *y, uint64_t n, int64_t *digits, int nd,
                                   unsigned *flags)
{
    return accumulate(h, p, x, y, n, digits, nd, flags);
}

coopreduce_status cr_cpu_exact(coopreduce_handle *h, const cr_plan *p, const void *x, const void *y,
                               uint64_t n, void *result)
{
    const coopreduce_dtype dtype = p->dtype;
    const int narrow = p->narrow;
    const int dot64 = p->op == COOPREDUCE_OP_DOT && dtype == COOPREDUCE_FLOAT64;
    const int fmt = dtype == COOPREDUCE_FLOAT64              ? CR_FMT_F64
                    : narrow && dtype == COOPREDUCE_FLOAT16  ? CR_FMT_F16
                    : narrow && dtype == COOPREDUCE_BFLOAT16 ? CR_FMT_BF16
                                                             : CR_FMT_F32;
    const int nd = dot64 ? CR_SA_DOT64_DIGITS : CR_SA_SUM_DIGITS;
    int64_t d[CR_SA_MAX_DIGITS];
    unsigned flags = 0;
    coopreduce_status s = accumulate(h, p, x, y, n, d, nd, &flags);
    if (s) return s;
    cr_sa_finish(d, nd, dot64 ? CR_SA_DOT64_LSB : CR_SA_SUM_LSB, flags, fmt, result);
    return COOPREDUCE_SUCCESS;
}
