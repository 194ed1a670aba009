/* exact.c — EXACT mode on the CPU (docs/EXACT.md): the correctly rounded SUM of the four float
 * types and DOT of float32 and float64.
 *
 * Each thread takes a contiguous range. Sums of float32, float16 and bfloat16: a block of 4096
 * elements within 17 binades is summed exactly in binary64 ("narrow blocks" below); in other
 * blocks each element is added in binary64 to the bucket of its float32 exponent, exactly
 * ("exponent buckets"). Float64 sums and float64 dots: each value (each exact product, as two
 * doubles) is split in two halves and added in binary64 to the bin of its group of eight
 * binades, exactly ("binned halves"): the same instructions whatever the data. Float32 dots go
 * through floating-point expansions where those are fast and to the binned halves where they
 * are not ("hybrid" below): their products, exact in binary64, go to 32 independent lanes (four
 * 8-double vectors), each an expansion of two terms updated with TwoSum, so that (terms +
 * residue) == (terms before + leaf) exactly; a nonzero residue leaves the vectors and is added,
 * exactly, to the thread's superaccumulator (src/core/superacc.h): rare on narrow data,
 * frequent on data spread over many binades. At the end each lane's terms (each bucket, each
 * bin) are added to the superaccumulator, the threads' accumulators are added (integer
 * addition: any order, same digits) and the total is rounded once.
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
    int oom;          /* this thread's bins could not be allocated (float64 dots) */
    int64_t d[CR_SA_MAX_DIGITS];
} job;

/* v * 2^(j->lsb - lsb) into the superaccumulator (a value kept scaled: the bins). A nonzero v
 * is a multiple of 2^lsb, but its 53-bit significand may reach below that (a product's bins:
 * 2^-2148 with a significand of 53 bits); those bits are zero and dropped, so that no
 * contribution lands below digit 0. */
static void sa_add_at(job *j, int lsb, double v)
{
    uint64_t m;
    int e, neg, idx;
    int64_t c[3];
    if (!cr_sa_decompose(v, &m, &e, &neg)) return;
    if (e < lsb) {
        m = lsb - e < 64 ? m >> (lsb - e) : 0;
        e = lsb;
    }
    cr_sa_split_u64(m, e, neg, lsb, &idx, c);
    j->d[idx] += c[0];
    j->d[idx + 1] += c[1];
    j->d[idx + 2] += c[2];
    if (++j->pending >= CARRY_EVERY) {
        cr_sa_carry(j->d, j->nd);
        j->pending = 0;
    }
}

static void sa_add(job *j, double v) { sa_add_at(j, j->lsb, v); }

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

/* ---- The expansion loop ---------------------------------------------------------------------
 * t[0] starts at -0.0, the identity of addition that keeps IEEE's sign rule: the lead term is
 * the plain recursive sum of the lane's leaves, so it is -0.0 at the end exactly when every leaf
 * was -0.0. */
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

/* Adds leaves x[0 .. m) (float32 bits; at most SPAN between two flushes) to the buckets. The
 * leaves 2 KiB ahead are fetched with a non-temporal hint, as the bins' are: wide and cancelling
 * data 4-6% faster on one thread (a 2-core AMD EPYC). */
#define BUCKET_AHEAD 512
static void bucket_add_f32(double (*b)[256], const uint32_t *x, uint64_t m)
{
    uint64_t i = 0;
    for (; i + SETS <= m; i += SETS) {
        if (i % 16 == 0) __builtin_prefetch(x + i + BUCKET_AHEAD, 0, 0);
        for (int q = 0; q < SETS; q++) {
            const uint32_t u = x[i + q];
            b[q][u >> 23 & 255] += (double)cr_f32_from(u);
        }
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

/* Leaves w[0 .. m), m <= BLK, in one pass (the block read once from memory): the largest
 * biased exponent of |leaf| (255: infinity or NaN) and the smallest of the nonzero leaves (255
 * if none), subnormals as 1, and their binary64 sum by sixteen accumulators combined pairwise,
 * which is exact where the span says the block is narrow (each partial sum a subset's). */
static inline void span_sum_step(uint32_t u, uint32_t *hi, uint32_t *lo, double *a)
{
    const uint32_t e = (u & 0x7fffffffu) >> 23;
    const uint32_t f = (u & 0x7fffffffu) == 0 ? 255u : e == 0 ? 1u : e;
    *hi = e > *hi ? e : *hi;
    *lo = f < *lo ? f : *lo;
    *a += (double)cr_f32_from(u);
}
CR_SIMD_CLONES static double block_span_sum(const uint32_t *w, uint64_t m, uint32_t *mx,
                                            uint32_t *mn)
{
    double a[16];
    uint32_t hi[16], lo[16];
    for (int q = 0; q < 16; q++) {
        a[q] = -0.0;
        hi[q] = 0;
        lo[q] = 255;
    }
    uint64_t i = 0;
    for (; i + 16 <= m; i += 16)
        for (int q = 0; q < 16; q++) span_sum_step(w[i + q], &hi[q], &lo[q], &a[q]);
    for (; i < m; i++) span_sum_step(w[i], &hi[0], &lo[0], &a[0]); /* the tail */
    uint32_t h = 0, l = 255;
    for (int q = 0; q < 16; q++) {
        h = hi[q] > h ? hi[q] : h;
        l = lo[q] < l ? lo[q] : l;
    }
    *mx = h;
    *mn = l;
    for (int d = 8; d >= 1; d /= 2)
        for (int q = 0; q < d; q++) a[q] += a[q + d];
    return a[0];
}

/* Leaves w[0..m), m <= BLK: a narrow block straight to the superaccumulator (returns 1), else
 * the buckets (returns 0, or -1 where the block spans more than WIDE binades or holds an
 * infinity or a NaN: the blocks after it are likely wide too). */
#ifndef WIDE
#define WIDE 40
#endif
static int block_add(job *j, double (*b)[256], const uint32_t *w, uint64_t m)
{
    uint32_t mx, mn;
    const double total = block_span_sum(w, m, &mx, &mn);
    if (mx == 255 || (mn <= mx && mx - mn > NARROW)) {
        bucket_add_f32(b, w, m);
        return mx == 255 || mx - mn > WIDE ? -1 : 0;
    }
    sum_out(j, total); /* finite: no infinity or NaN in the block */
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
 * flushed every SPAN leaves (a multiple of BLK: a flush falls between two blocks). After a
 * block of more than WIDE binades the next 1, 2, 4, .. 16 blocks (doubling while they stay
 * wide) go to the buckets without the span test, which otherwise costs wide data about a tenth
 * of its time; a block just past NARROW (normal data's few blocks with a value near zero) does
 * not stop the tests (normal float32 data 5%, bfloat16 9% faster: docs/perf-log). Either path is
 * exact: only the speed depends on which one a block takes. */
#define SKIP_MAX 16
/* After a wide block: the next *skip blocks skip the test, 1, 2, 4 .. SKIP_MAX while they
 * stay wide (a narrow block sets *skip back to 0). */
static void skip_after_wide(unsigned *skip, unsigned *wait)
{
    *skip = *skip ? (*skip < SKIP_MAX ? 2 * *skip : SKIP_MAX) : 1;
    *wait = *skip;
}
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
        } else {
            const int r = block_add(j, b, leaves, m);
            if (r > 0) {
                skip = 0;
            } else if (r < 0) {
                skip_after_wide(&skip, &wait);
            }
        }
        if ((i - j->i0 + m) % SPAN == 0 || i + m == j->i1) flush_buckets(j, b);
    }
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
 * many binades, and int64 digits, two scalar updates a leaf, to a quarter of the canonical
 * sum's; docs/EXACT.md, "CPU"). The top eight groups (|v| >= 2^961) are scaled by
 * 2^-128 first, 128 off the exponent field (exact; an integer subtraction, as a multiplication
 * would be slow on subnormal operands), so that no bin overflows; their bins go to the
 * superaccumulator 128 bits up. Every BSPAN leaves each group's bins, summed over the BSETS sets
 * (every partial sum a sum of at most 2^19 leaves: exact), go to the superaccumulator and
 * restart. BSETS sets, leaf i in set i % BSETS, so that consecutive leaves of one group (all of
 * narrow data) do not wait on each other's store; sets side by side in a group's 128 bytes (4
 * KiB apart, a set's loads would wait on the other sets' stores: 4K aliasing), and eight of them:
 * on narrow data each set's bin waits on its previous store and addition, so four sets held a
 * float64 sum of uniform data to 7.1-8.0 ms at 2^24 against 5.3-5.5 ms with eight, wide data
 * level at 5.4-6.1 ms, cancelling data 3% faster (a 2-core AMD EPYC, 2026-11-28; an older
 * measurement on another machine had eight slower on wide data; docs/perf-log/2026-11-24-cpu-exact.md). H bins
 * start at -0.0 and stay -0.0 only if every leaf of the group was -0.0 (the sign rule of zeros).
 * Infinities and NaNs (group 255) are found by a vector test of each BCHUNK leaves after the bins
 * took them (from the level-1 cache: ahead of the bins, the test waited for memory, 40% slower on
 * wide data), and set their flags; in the bins they become finite values below 2^897 (128 off their
 * exponent field), as harmless as the group's others: the result is an infinity or a NaN. */
#define BSETS  8
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

/* n bins, empty: H at -0.0 (the sign rule of zeros), L at +0.0. */
static void bins_init(v2d *b, int n)
{
    for (int i = 0; i < n; i++) b[i] = (v2d){-0.0, 0.0};
}

/* One group's bins (`sets` of them, side by side) into the superaccumulator at lsb (the
 * group's scale), and emptied: their sums over the sets (every partial sum a sum of at most 2^19
 * leaves: exact). Returns the H total, -0.0 only if every leaf of the group was -0.0. */
static double bins_flush_group(job *j, v2d *bins, int sets, int lsb)
{
    double h = -0.0, l = 0.0;
    for (int q = 0; q < sets; q++) {
        h += bins[q][0];
        l += bins[q][1];
    }
    bins_init(bins, sets);
    if (h != 0) sa_add_at(j, lsb, h);
    if (l != 0) sa_add_at(j, lsb, l);
    return h;
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

#define BCHUNK 512 /* leaves a step of the bins (their vector loops' buffers) */
/* float32 products, exact in binary64, as leaves: a vector loop ahead of the bins. */
CR_SIMD_CLONES static void products32(const float *x, const float *y, uint64_t m, uint64_t *u)
{
    for (uint64_t i = 0; i < m; i++) u[i] = cr_f64_bits((double)x[i] * (double)y[i]);
}

/* The bins into the superaccumulator, and restarted. */
static void bins_flush(job *j, v2d (*b)[BSETS])
{
    for (int g = 0; g < BGROUP; g++) {
        const double h = bins_flush_group(j, b[g], BSETS, g < BTOP ? j->lsb : j->lsb - 128);
        if (cr_f64_bits(h) != 0x8000000000000000ull) j->flags |= CR_X_NONNEGZ;
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

/* ---- float64 sums: narrow blocks by extraction ---------------------------------------------
 * A block of at most NBLK values whose nonzero magnitudes lie within a few dozen binades needs no
 * bins. Its values go to NLANES lanes (four vectors of eight), each with an anchor S, started at
 * M = 1.5 * 2^p, and an accumulator A: s = S + x; q = s - S; A += x - q; S = s. With p = Emax
 * + 12 (every |x| < 2^Emax) a lane's S stays in [2^p, 2^(p+1)), so s is S + x rounded to a
 * multiple of 2^(p-52), q is exact (Sterbenz) and x - q is the rounding error of s, exact
 * (Fast2Sum: |S| > |x|): S - M plus A is the lane's sum, exactly, as long as A adds exactly.
 * Every x - q is a multiple of u = 2^(emin - 1075) (the smallest nonzero |x|'s unit; q is a
 * multiple of 2^(p-52), coarser) below 2^(p-53) in magnitude, so any sum of at most NBLK of
 * them is below 2^(p-42) <= 2^53 u when p <= emin - 980: a span of 30 binades, or any block of
 * values below 2^-1010 (p held at -1022, whose unit 2^-1074 is every double's). The lanes' S -
 * M (exact: S and M share a binade), at most 2^(p-1) in sum and multiples of 2^(p-52), and their
 * A add up exactly too: one total of each for the superaccumulator, two additions a block. Four
 * vector additions an element's eight where the bins take a scalar update each: uniform, normal
 * and subnormal float64 data become narrow blocks; data of wide range and cancelling pairs of
 * it, and blocks with infinities or NaNs, stay on the bins. */
#define NBLK   2048
#define NLANES 32
#define NTOP   2033 /* the largest emax: p = emax - 1010 <= 1023 */

typedef uint64_t v8u __attribute__((vector_size(64)));

/* An NBLK block in one pass: its span, mx the largest biased exponent of the nonzero leaves and
 * mn the smallest (subnormals as 1; 0 and 2047 when every leaf is a zero), whether some leaf is
 * not -0.0, and its extraction against M = 1.5 * 2^p: *h the lanes' S - M, *l their A, each
 * added up, exact where the span fits p (narrow_fits). Against the previous block's anchor
 * this reads the block once; float64 data of steady range keeps its anchor from block to
 * block. */
CR_SIMD_CLONES static void narrow_pass64(const double *x, double M, uint64_t *mx, uint64_t *mn,
                                         uint64_t *nonneg, double *h, double *l)
{
    const v8u mag = {~0ull >> 1, ~0ull >> 1, ~0ull >> 1, ~0ull >> 1,
                     ~0ull >> 1, ~0ull >> 1, ~0ull >> 1, ~0ull >> 1};
    const v8u nz = ~mag, one = mag >> 62;
    /* per vector: the largest |x| and the smallest |x| - 1 (a zero wraps to the largest), as
     * bits, whose order is the values' */
    v8d S[4], A[4];
    v8u hi[4], lo[4], nn[4];
    for (int v = 0; v < 4; v++) {
        hi[v] = nz & 0;
        lo[v] = ~hi[v];
        nn[v] = hi[v];
        for (int k = 0; k < 8; k++) {
            S[v][k] = M;
            A[v][k] = 0.0;
        }
    }
    for (uint64_t i = 0; i < NBLK; i += NLANES)
        for (int v = 0; v < 4; v++) {
            v8d xv;
            v8u b;
            memcpy(&xv, x + i + 8 * v, sizeof xv);
            memcpy(&b, x + i + 8 * v, sizeof b);
            const v8u a = b & mag, am = a - one;
            const v8u gt = (v8u)(a > hi[v]), lt = (v8u)(am < lo[v]);
            hi[v] = (gt & a) | (~gt & hi[v]);
            lo[v] = (lt & am) | (~lt & lo[v]);
            nn[v] |= b ^ nz;
            const v8d sv = S[v] + xv, q = sv - S[v];
            A[v] += xv - q;
            S[v] = sv;
        }
    uint64_t h0 = 0, l0 = ~0ull, n0 = 0;
    for (int v = 0; v < 4; v++)
        for (int k = 0; k < 8; k++) {
            h0 = hi[v][k] > h0 ? hi[v][k] : h0;
            l0 = lo[v][k] < l0 ? lo[v][k] : l0;
            n0 |= nn[v][k];
        }
    const uint64_t e0 = (l0 + 1) >> 52; /* the smallest nonzero |x|'s biased exponent */
    *mx = h0 >> 52;
    *mn = l0 == ~0ull ? 2047 : e0 ? e0 : 1;
    *nonneg = n0 != 0;
    double hs = 0.0, ls = 0.0;
    for (int v = 0; v < 4; v++)
        for (int k = 0; k < 8; k++) {
            hs += S[v][k] - M;
            ls += A[v][k];
        }
    *h = hs;
    *l = ls;
}

/* Whether anchor p fits a block of span mx .. mn (see above): no infinity or NaN and p <= 1023
 * (mx <= NTOP), every value below 2^(p-12), and p <= emin - 980. */
static int narrow_fits(int p, uint64_t mx, uint64_t mn)
{
    return mx <= NTOP && (int)mx <= p + 1010 && p <= (int)mn - 980;
}

/* Block u[0 .. NBLK) of float64 leaves as a narrow block, if it is one (returns 1). *anchor:
 * the last narrow block's p (NO_ANCHOR: none), tried first; a block whose span does not fit it
 * (or, without one, any block: its first pass gives the span alone) is summed again against
 * its own anchor, p = emax - 1010 (at least -1022), where that one fits. */
#define NO_ANCHOR (-9999)
static int narrow_add64(job *j, const uint64_t *u, int *anchor)
{
    const double *x = (const double *)u;
    uint64_t mx, mn, nonneg;
    double h, l;
    int p = *anchor;
    narrow_pass64(x, ldexp(1.5, p == NO_ANCHOR ? 0 : p), &mx, &mn, &nonneg, &h, &l);
    if (nonneg) j->flags |= CR_X_NONNEGZ;
    if (mn == 2047) return 1; /* zeros only */
    if (p == NO_ANCHOR || !narrow_fits(p, mx, mn)) {
        p = (int)mx - 1010 < -1022 ? -1022 : (int)mx - 1010;
        *anchor = p = narrow_fits(p, mx, mn) ? p : NO_ANCHOR;
        if (p == NO_ANCHOR) return 0;
        narrow_pass64(x, ldexp(1.5, p), &mx, &mn, &nonneg, &h, &l);
    }
    if (h != 0) sa_add(j, h);
    if (l != 0) sa_add(j, l);
    return 1;
}

/* A thread's range through the bins, BCHUNK leaves at a time: float64 values where they lie,
 * float32 products computed into a buffer by a vector loop. A float64 sum first tries each
 * NBLK leaves as a narrow block; after a wide one the next 1, 2, 4 .. 16 (doubling while they
 * stay wide) go to the bins without the test, as buckets_run does. */
static void bins_run(job *j)
{
    const int dot = j->op == COOPREDUCE_OP_DOT;
    const float *x32 = j->x, *y32 = j->y;
    v2d b[BGROUP][BSETS];
    uint64_t buf[BCHUNK];
    unsigned skip = 0, wait = 0;
    int anchor = NO_ANCHOR;
    bins_init(&b[0][0], BGROUP * BSETS);
    for (uint64_t i = j->i0; i < j->i1;) {
        const uint64_t e = j->i1 - i < BSPAN ? j->i1 : i + BSPAN;
        while (i < e) {
            if (!dot && e - i >= NBLK && (i - j->i0) % NBLK == 0) { /* BSPAN: NBLK x 256 */
                if (wait) {
                    wait--;
                } else if (narrow_add64(j, (const uint64_t *)j->x + i, &anchor)) {
                    skip = 0;
                    i += NBLK;
                    continue;
                } else {
                    skip_after_wide(&skip, &wait);
                }
            }
            const uint64_t m = e - i < BCHUNK ? e - i : BCHUNK;
            const uint64_t *u = (const uint64_t *)j->x + i;
            if (dot) {
                products32(x32 + i, y32 + i, m, buf);
                u = buf;
            }
            bins_span(b, u, m);
            j->flags |= special_flags(u, m); /* from the level-1 cache */
            i += m;
        }
        bins_flush(j, b);
    }
}

/* ---- float64 dots: binned halves of exact products --------------------------------------------
 * A float64 product spans 2^-2148 to 2^2048, beyond binary64's range, so its leaves are scaled:
 * each finite nonzero factor is written x = x'' * 2^kx with x'' in [1, 2) (a subnormal's
 * significand first turned into a normal double by (1 + m 2^-52) - 1, exact), p = x'' y'' in
 * [1, 4) and e = fma(x'', y'', -p) are exact (x y = (p + e) 2^K, K = kx + ky), and each of p and
 * e is a leaf of true exponent T = E(leaf) - 1023 + K. A nonzero leaf is a multiple of 2^-2148
 * (x y is; p 2^K is x y or, where p rounds, a multiple of ulp(p) 2^K, coarser than x y's last
 * bit; e 2^K is their difference), so T lies in [-2148, 2047]. Its extended group is
 * G = (T + POFF) >> 3 (525 groups of eight binades) and it is stored with its exponent field set
 * to 1023 + ((T + POFF) & 7): a double in [1, 2^8) whose true value is the stored one times
 * 2^(8G - POFF), the same scale for every leaf of the group.
 * Stored leaves are split and binned as above (27 + 26 significant bits, exact for 2^19 leaves a
 * bin between flushes); e lies at least 52 binades below p, never in p's group, so a group takes
 * at most one leaf a product and the bins are flushed every BSPAN products. All of this but the
 * bins' additions runs as a vector loop over PCHUNK elements, writing each leaf's bin offset and
 * halves; a scalar loop then adds them. Zero factors and non-finite ones give zero leaves; the
 * non-finite ones' flags come from a vector test of the factors afterwards. The bins (66 KiB a
 * thread) are allocated, not on the stack: the calling thread runs a share too. */
#define PSETS  8
#define POFF   2152
#define PGROUP 525
#define PCHUNK 256

/* A product's two leaves p and e (sign bit from signs, scale 2^k) as bin offsets off[0 .. 2)
 * and halves hl[0 .. 4); a leaf that is zero, or any leaf where live is 0, is a zero at offset 0
 * (inlined into the vector loops below). */
static inline void product_leaves(double pp, double pe, uint64_t signs, int64_t k, int live,
                                  uint32_t *off, double *hl)
{
    for (int t = 0; t < 2; t++) {
        const uint64_t u = cr_f64_bits(t ? pe : pp) ^ (signs & 0x8000000000000000ull);
        const int64_t tt = (int64_t)(u >> 52 & 0x7ff) - 1023 + k + POFF;
        const uint64_t w = (u & 0x800fffffffffffffull) | (uint64_t)(1023 + (tt & 7)) << 52;
        const int in = live && (u << 1);
        const uint64_t v = in ? w : 0;
        const double hi = cr_f64_from(v & BLOW);
        off[t] = in ? (uint32_t)((tt >> 3) * PSETS) : 0u;
        hl[2 * t] = hi;
        hl[2 * t + 1] = cr_f64_from(v) - hi;
    }
}

/* Whether bits u are a normal finite double's (biased exponent 1 .. 2046). */
static inline int normal_bits(uint64_t u) { return ((u >> 52 & 0x7ff) - 1) < 0x7fe; }

CR_SIMD_CLONES static void products64(const uint64_t *x, const uint64_t *y, uint64_t m,
                                      uint32_t *off, double *hl, uint64_t *nonneg)
{
    const uint64_t frac = 0xfffffffffffffull, one = 0x3ff0000000000000ull;
    uint64_t nn = 0;
    for (uint64_t i = 0; i < m; i++) {
        const uint64_t a = x[i], b = y[i];
        const int64_t ea = (int64_t)(a >> 52 & 0x7ff), eb = (int64_t)(b >> 52 & 0x7ff);
        /* the factors as significands in [1, 2) and exponents */
        const double sa = cr_f64_from((a & frac) | one) - 1.0,
                     sb = cr_f64_from((b & frac) | one) - 1.0;
        const uint64_t na = ea ? a : cr_f64_bits(sa), nb = eb ? b : cr_f64_bits(sb);
        const int64_t ka = (int64_t)(na >> 52 & 0x7ff) - 1023 - (ea ? 0 : 1022);
        const int64_t kb = (int64_t)(nb >> 52 & 0x7ff) - 1023 - (eb ? 0 : 1022);
        const double xa = cr_f64_from((na & frac) | one), xb = cr_f64_from((nb & frac) | one);
        const double pp = xa * xb, pe = __builtin_fma(xa, xb, -pp);
        const int64_t k = ka + kb;
        const int live = ea != 0x7ff && eb != 0x7ff && (a << 1) && (b << 1);
        nn |= (~(a ^ b) >> 63) | (uint64_t)((a << 1) && (b << 1)) |
              (uint64_t)(ea == 0x7ff || eb == 0x7ff);
        product_leaves(pp, pe, a ^ b, k, live, off + 2 * i, hl + 4 * i);
    }
    *nonneg |= nn;
}

/* products64 for factors that are all normal and finite (every chunk of data without zeros,
 * subnormals, infinities or NaNs): no subnormal to normalise, every product live and nonzero,
 * so about a third fewer operations. The same leaves, offsets and halves as products64's. */
CR_SIMD_CLONES static void products64_normal(const uint64_t *x, const uint64_t *y, uint64_t m,
                                             uint32_t *off, double *hl)
{
    const uint64_t frac = 0xfffffffffffffull, one = 0x3ff0000000000000ull;
    for (uint64_t i = 0; i < m; i++) {
        const uint64_t a = x[i], b = y[i];
        const int64_t k = (int64_t)(a >> 52 & 0x7ff) + (int64_t)(b >> 52 & 0x7ff) - 2046;
        const double xa = cr_f64_from((a & frac) | one), xb = cr_f64_from((b & frac) | one);
        const double pp = xa * xb, pe = __builtin_fma(xa, xb, -pp);
        product_leaves(pp, pe, a ^ b, k, 1, off + 2 * i, hl + 4 * i);
    }
}

/* Whether every one of x[0 .. m) and y[0 .. m) (m >= 1) is normal and finite. The first pair
 * alone first: data of subnormals or zeros skips the whole test. */
CR_SIMD_CLONES static int all_normal(const uint64_t *x, const uint64_t *y, uint64_t m)
{
    if (!normal_bits(x[0]) || !normal_bits(y[0])) return 0;
    int ok = 1;
    for (uint64_t i = 0; i < m; i++) ok &= normal_bits(x[i]) & normal_bits(y[i]);
    return ok;
}

static void pbins_flush(job *j, v2d (*b)[PSETS])
{
    for (int g = 0; g < PGROUP; g++) bins_flush_group(j, b[g], PSETS, j->lsb - 8 * g + POFF);
}

static void pbins_run(job *j)
{
    const uint64_t *x = j->x, *y = j->y;
    v2d(*b)[PSETS] = aligned_alloc(64, sizeof(v2d[PGROUP][PSETS]));
    uint32_t off[2 * PCHUNK];
    v2d hl[2 * PCHUNK];
    uint64_t nonneg = 0;
    if (!b) {
        j->oom = 1;
        return;
    }
    bins_init(&b[0][0], PGROUP * PSETS);
    for (uint64_t i = j->i0; i < j->i1;) {
        const uint64_t e = j->i1 - i < BSPAN ? j->i1 : i + BSPAN;
        for (; i < e; i += PCHUNK) {
            const uint64_t m = e - i < PCHUNK ? e - i : PCHUNK;
            const int normal = all_normal(x + i, y + i, m);
            if (normal) {
                products64_normal(x + i, y + i, m, off, (double *)hl);
                nonneg = 1; /* (nonzero finite factors: no product is -0.0) */
            } else {
                products64(x + i, y + i, m, off, (double *)hl, &nonneg);
            }
            v2d *bb = &b[0][0];
            uint64_t k = 0;
            for (; k + PSETS <= 2 * m; k += PSETS)
                for (int q = 0; q < PSETS; q++) bb[off[k + q] + q] += hl[k + q];
            for (; k < 2 * m; k++) bb[off[k]] += hl[k];
            if (!normal && (any_special(x + i, m) || any_special(y + i, m)))
                for (uint64_t t = i; t < i + m; t++)
                    if (((x[t] >> 52) & 0x7ff) == 0x7ff || ((y[t] >> 52) & 0x7ff) == 0x7ff)
                        j->flags |= cr_sa_product_special(cr_f64_from(x[t]), cr_f64_from(y[t]));
        }
        pbins_flush(j, b);
    }
    free(b);
    if (nonneg) j->flags |= CR_X_NONNEGZ;
}

/* Float32 dots: expansions while residues stay rare, the bins (`flat`) where they do not. Blocks
 * of HYB_BLOCK elements go through the expansions (fast on narrow data: they take 0.65 of the
 * bins' time on uniform data), and after a block in which more than one step in 8 left a residue
 * (data spread over many binades: the expansions fall to a fifth of their speed), the next
 * elements go through the bins, whose cost does not depend on the data; then the expansions are
 * tried again. The bins' run is HYB_FLAT elements after a block that passed, and twice the last
 * after each block that failed, up to HYB_FLAT_MAX, so that retrying the expansions costs little
 * on data spread throughout. Either way every element is added exactly: the switch changes the
 * speed, never the sum's value. */
#define HYB_BLOCK    (1u << 14)
#define HYB_FLAT     (1u << 18)
#define HYB_FLAT_MAX (1u << 24)

static void hybrid(job *j, unsigned (*run)(job *), void (*flat)(job *))
{
    const uint64_t i0 = j->i0, i1 = j->i1;
    uint64_t span = HYB_FLAT / 2; /* the last run of the flat path, halved */
    for (uint64_t i = i0; i < i1;) {
        uint64_t e = i1 - i < HYB_BLOCK ? i1 : i + HYB_BLOCK;
        j->i0 = i;
        j->i1 = e;
        const uint64_t steps = (e - i + LANES - 1) / LANES;
        const unsigned hits = run(j);
        i = e;
        if ((uint64_t)hits * 8 <= steps) {
            span = HYB_FLAT / 2;
        } else if (i < i1) {
            span = span * 2 < HYB_FLAT_MAX ? span * 2 : HYB_FLAT_MAX;
            e = i1 - i < span ? i1 : i + span;
            j->i0 = i;
            j->i1 = e;
            flat(j);
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
        pbins_run(j);
    else if (j->op == COOPREDUCE_OP_DOT)
        hybrid(j, run_dot32, bins_run);
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
    for (uint64_t i = 0; i < t; i++)
        if (jobs[i].oom) {
            if (jobs != stack_jobs) free(jobs);
            return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY,
                           "cannot allocate the bins of an exact float64 dot (%zu bytes a thread)",
                           sizeof(v2d[PGROUP][PSETS]));
        }
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
