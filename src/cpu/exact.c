/* exact.c — EXACT mode on the CPU (docs/EXACT.md): the correctly rounded SUM of the four float
 * types and DOT of float32 and float64.
 *
 * Each thread takes a contiguous range. Sums of float32, float16 and bfloat16: a block of 4096
 * elements within 17 binades is summed exactly in binary64 ("narrow blocks" below); in other
 * blocks each element is added in binary64 to the bucket of its float32 exponent, exactly
 * ("exponent buckets").
 * Float64 sums and the dots go through floating-point expansions where those are fast and to
 * int64 digits, whose cost does not depend on the data, where they are not ("hybrid" below).
 * In the expansions, elements become "leaves" in binary64, exactly (a float64 value, a float32
 * product; a float64 product as p = fl(x*y) and its error fma(x, y, -p)); leaves go to 32
 * independent lanes (four 8-double vectors), each an expansion of K terms (2 for float32
 * products, 3 otherwise) updated with TwoSum, so that (terms + residue) == (terms before +
 * leaf) exactly. A nonzero residue leaves the vectors and is added, exactly, to the thread's
 * superaccumulator (src/core/superacc.h): rare on narrow data, frequent on data spread over many
 * binades. float64 values of magnitude >= 2^960, products outside [2^-968, 2^960) and
 * non-finite factors go to the superaccumulator or the flags directly, so no expansion ever
 * overflows. At the end each lane's terms (each bucket, each set of digits) are added to the
 * superaccumulator, the threads' accumulators are added (integer addition: any order, same
 * digits) and the total is rounded once.
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
    uint64_t slow;    /* elements that bypassed the expansions (slow_value, slow_product) */
    int64_t d[CR_SA_MAX_DIGITS];
} job;

static void sa_add(job *j, double v)
{
    cr_sa_add_f64(j->d, j->lsb, v);
    if (++j->pending >= CARRY_EVERY) {
        cr_sa_carry(j->d, j->nd);
        j->pending = 0;
    }
}

/* A float64 input that bypasses the expansions: NaN, +-inf, or |v| >= 2^960. */
static void slow_value(job *j, double v)
{
    const unsigned f = cr_sa_special_flags(v);
    j->slow++;
    j->flags |= f | CR_X_NONNEGZ;
    if (!f) sa_add(j, v);
}

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
#define FILL_F64(j, i, cnt, buf)                                                                   \
    do {                                                                                           \
        const double *x_ = (const double *)(j)->x + (i);                                           \
        int big_ = 0;                                                                              \
        if ((cnt) == LANES) {                                                                      \
            for (int l = 0; l < LANES; l++) {                                                      \
                const double v_ = x_[l];                                                           \
                (buf)[l] = v_;                                                                     \
                big_ |= !(fabs(v_) < CR_X_BIG);                                                    \
            }                                                                                      \
        } else {                                                                                   \
            for (int l = 0; l < LANES; l++) (buf)[l] = l < (int)(cnt) ? x_[l] : -0.0;              \
            big_ = 1;                                                                              \
        }                                                                                          \
        if (big_)                                                                                  \
            for (int l = 0; l < LANES; l++)                                                        \
                if (!(fabs((buf)[l]) < CR_X_BIG)) {                                                \
                    slow_value((j), (buf)[l]);                                                     \
                    (buf)[l] = -0.0;                                                               \
                }                                                                                  \
    } while (0)

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

DEFINE_RUN(run_f64, 3, LANES, FILL_F64)
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

/* ---- float64 sums and the dots: digits ---------------------------------------------------
 * As the GPU's lanes (src/gpu/exact_lanes.cuh): every value goes to int64 digits of radix 2^32
 * (at 2^-1074; a float64 product at 2^-2148) as contributions of at most 2^53 (superacc.h's
 * cr_sa_split_bits and cr_sa_split_signed), whatever its exponent or sign: a flat cost, where the
 * expansions fell to a twentieth of their speed on data spread over many binades. DSETS sets of
 * digits, element i to set i % DSETS, so that consecutive values do not wait on each other's
 * stores; each set is normalised (cr_sa_normalise_strided) every DSPAN elements or so (the bound
 * at DEFINE_DIGITS). Infinities and NaNs add nothing and set their flags; CR_X_NONNEGZ is set
 * when some value (product) is not -0.0. */
#define DSETS 4
/* The SUM layout's first 66 digits: a value reaches digit 64 at most, so the top one takes only
 * the normalisations' carries (at most 2^31 each) and cannot wrap; with 65, digit 64 took about
 * 2^50 per element of magnitude near 2^1024 and wrapped after some 2^13 of them. */
#define DDIGITS 66
#define DSPAN 512 /* additions per set between two normalisations */

/* The double of bits b (a float64 value, or a float32 product, exact in binary64: inf * 0 is
 * NaN, a zero's sign the XOR of its factors') into set D; -0.0 is told apart by its bits. */
static inline void add_value(int64_t *D, uint64_t b, uint64_t *nonneg, unsigned *flags)
{
    *flags |= cr_sa_digits_add(D, 1, b);
    *nonneg |= b ^ 0x8000000000000000ull;
}

/* The digits of a range, ND of them per set; ADD(D, j, i, nonneg, flags): element i into set D.
 * A digit gains at most 2^53 + 2^32 per element, so a set normalised after at most DSPAN +
 * DSETS - 1 elements stays below 2^33 + (2^9 + 3) * (2^53 + 2^32) < 2^63. */
#define DEFINE_DIGITS(NAME, ND, ADD)                                                               \
    static void NAME(job *j)                                                                       \
    {                                                                                              \
        int64_t D[DSETS][ND];                                                                      \
        memset(D, 0, sizeof D);                                                                    \
        uint64_t nonneg = 0;                                                                       \
        unsigned flags = 0;                                                                        \
        for (uint64_t i = j->i0; i < j->i1;) {                                                     \
            const uint64_t cnt = j->i1 - i < DSETS * DSPAN ? j->i1 - i : DSETS * DSPAN;           \
            uint64_t k = 0;                                                                        \
            for (; k + DSETS <= cnt; k += DSETS)                                                   \
                for (int q = 0; q < DSETS; q++) ADD(D[q], j, i + k + q, &nonneg, &flags);         \
            for (; k < cnt; k++) ADD(D[0], j, i + k, &nonneg, &flags);                             \
            for (int q = 0; q < DSETS; q++) cr_sa_normalise_strided(D[q], (ND), 1);               \
            i += cnt;                                                                              \
        }                                                                                          \
        for (int q = 0; q < DSETS; q++)                                                            \
            for (int k = 0; k < (ND); k++) j->d[k] += D[q][k]; /* each below 2^33 */              \
        j->flags |= flags | (nonneg ? CR_X_NONNEGZ : 0u);                                          \
    }
#define ADD_F64(D, j, i, nn, fl) add_value((D), ((const uint64_t *)(j)->x)[i], (nn), (fl))
#define ADD_DOT32(D, j, i, nn, fl)                                                                 \
    add_value((D),                                                                                 \
              cr_f64_bits((double)((const float *)(j)->x)[i] * (double)((const float *)(j)->y)[i]), \
              (nn), (fl))
#define ADD_DOT64(D, j, i, nn, fl)                                                                 \
    (*(fl) |= cr_sa_digits_add_product((D), 1, ((const uint64_t *)(j)->x)[i],                     \
                                       ((const uint64_t *)(j)->y)[i], (nn)))
DEFINE_DIGITS(digits_f64, DDIGITS, ADD_F64)
DEFINE_DIGITS(digits_dot32, DDIGITS, ADD_DOT32)
DEFINE_DIGITS(digits_dot64, CR_SA_DOT64_DIGITS, ADD_DOT64)

/* Expansions while residues stay rare, digits where they do not: blocks of HYB_BLOCK elements go
 * through the expansions (fast on narrow data), and after a block in which more than one step in
 * 8 left a residue, or more than one element in 8 bypassed the expansions (data spread over many
 * binades, or float64 products below 2^-968: the expansions fall to a twentieth of their speed or
 * less), the next elements go through the digits, whose cost does not depend on the data; then
 * the expansions are tried again. The digits' run is HYB_DIGITS elements after a block that
 * passed, and twice the last after each block that failed, up to HYB_DIGITS_MAX: a block tried
 * at a twentieth of the speed costs as much as 20 HYB_BLOCKs through the digits, which on data
 * spread throughout was more than the digits' own runs of 2^18 (a 2-core AMD EPYC: float64
 * spread over the whole exponent range, 2^24 elements, docs/perf-log). Either way every
 * element is added exactly: the switch changes the speed, never the digits' value. */
#define HYB_BLOCK      (1u << 14)
#define HYB_DIGITS     (1u << 18)
#define HYB_DIGITS_MAX (1u << 24)

static void hybrid(job *j, unsigned (*run)(job *), void (*digits)(job *), uint64_t per_step)
{
    const uint64_t i0 = j->i0, i1 = j->i1;
    uint64_t span = HYB_DIGITS / 2; /* the last digits' run, halved */
    for (uint64_t i = i0; i < i1;) {
        uint64_t e = i1 - i < HYB_BLOCK ? i1 : i + HYB_BLOCK;
        j->i0 = i;
        j->i1 = e;
        const uint64_t steps = (e - i + per_step - 1) / per_step, slow0 = j->slow;
        const unsigned hits = run(j);
        const uint64_t slow = j->slow - slow0;
        i = e;
        if ((uint64_t)hits * 8 <= steps && slow * 8 <= e - j->i0) {
            span = HYB_DIGITS / 2;
        } else if (i < i1) {
            span = span * 2 < HYB_DIGITS_MAX ? span * 2 : HYB_DIGITS_MAX;
            e = i1 - i < span ? i1 : i + span;
            j->i0 = i;
            j->i1 = e;
            digits(j);
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
        hybrid(j, run_dot32, digits_dot32, LANES);
    else if (j->dt == COOPREDUCE_FLOAT64)
        hybrid(j, run_f64, digits_f64, LANES);
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
