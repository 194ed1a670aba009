/* test_cpu.c — the CPU canonical sum against independent references, through the public API.
 *
 *   0. ref_exact (the exact big-integer oracle) tested in its own right.
 *   a. library bits == an independent scalar implementation of canonical order v1 written from
 *      docs/DETERMINISM.md, for many sizes, both dtypes, all generator kinds, fresh seeds.
 *   b. error bound |lib - exact| <= gamma(k) sum|x_i| (k = 12 L or 11 L), exact via ref_exact.
 *   c. thread independence; different handles used concurrently from different threads.
 *   d. special values (zeros, NaN, infinities, overflow, subnormals) and hand-computed trees.
 *   e. unaligned (element-aligned) host pointers.
 *   f. error handling and the small API functions.
 *   g. more than 2^31 elements.
 *
 * Seeds: a fresh seed per run, printed; COOPREDUCE_TEST_SEED=<seed> reproduces a run.
 * COOPREDUCE_TEST_SKIP_BIG=1 skips part g (prints a SKIP line). */
#include <fenv.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coopreduce.h"
#include "gen.h"
#include "check.h"
#include "util.h"
#include "ref_exact.h"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_MXCSR 1
#endif

#define C32 4096u
#define W32 128u
#define C64 2048u
#define W64 64u
#define ROWS 32u

/* ================================================================================================
 * The independent implementation of canonical order v1 (docs/DETERMINISM.md), written to be
 * obviously right rather than fast: a chunk is copied into a padded R x W matrix (padding -0.0),
 * the row tree is evaluated level by level (rows 2j and 2j+1 -> row j, for every lane), then the
 * lane tree level by level (lanes 2j and 2j+1 -> lane j). Levels are applied until one chunk is
 * left; NaN is canonicalised at the end.
 * ============================================================================================= */
#define DEFINE_CANON(T, SUFFIX, W)                                                              \
    static T canon_chunk_##SUFFIX(const T *v, size_t n)                                         \
    {                                                                                           \
        static T bufa[ROWS][W], bufb[ROWS][W];                                                  \
        T(*cur)[W] = bufa, (*nxt)[W] = bufb, (*swp)[W];                                         \
        for (size_t i = 0; i < ROWS * (size_t)W; i++)                                          \
            cur[i / W][i % W] = i < n ? v[i] : (T)-0.0;                                         \
        for (unsigned rows = ROWS; rows > 1; rows /= 2) {                                       \
            for (unsigned j = 0; j < rows / 2; j++)                                             \
                for (unsigned l = 0; l < W; l++)                                                \
                    nxt[j][l] = cur[2 * j][l] + cur[2 * j + 1][l];                              \
            swp = cur;                                                                          \
            cur = nxt;                                                                          \
            nxt = swp;                                                                          \
        }                                                                                       \
        T lane[W], tmp[W];                                                                      \
        for (unsigned l = 0; l < W; l++)                                                        \
            lane[l] = cur[0][l];                                                                \
        for (unsigned lanes = W; lanes > 1; lanes /= 2) {                                       \
            for (unsigned j = 0; j < lanes / 2; j++)                                            \
                tmp[j] = lane[2 * j] + lane[2 * j + 1];                                         \
            for (unsigned j = 0; j < lanes / 2; j++)                                            \
                lane[j] = tmp[j];                                                               \
        }                                                                                       \
        return lane[0];                                                                         \
    }                                                                                           \
    static T canon_sum_##SUFFIX(const T *x, uint64_t n)                                         \
    {                                                                                           \
        const uint64_t C = ROWS * (uint64_t)W;                                                  \
        if (n == 0)                                                                             \
            return (T)0.0;                                                                      \
        const T *v = x;                                                                         \
        T *owned = NULL;                                                                        \
        uint64_t m = n;                                                                         \
        while (m > C) {                                                                         \
            uint64_t groups = (m + C - 1) / C;                                                  \
            T *p = (T *)xmalloc((size_t)groups * sizeof(T));                                    \
            for (uint64_t g = 0; g < groups; g++) {                                             \
                uint64_t len = m - g * C < C ? m - g * C : C;                                   \
                p[g] = canon_chunk_##SUFFIX(v + g * C, (size_t)len);                            \
            }                                                                                   \
            free(owned);                                                                        \
            owned = p;                                                                          \
            v = p;                                                                              \
            m = groups;                                                                         \
        }                                                                                       \
        T r = canon_chunk_##SUFFIX(v, (size_t)m);                                               \
        free(owned);                                                                            \
        if (r != r)                                                                             \
            r = (T)NAN;                                                                         \
        return r;                                                                               \
    }

DEFINE_CANON(float, f32, W32)
DEFINE_CANON(double, f64, W64)

/* Bits of the reference canonical sum; NaN made canonical by bits, not by the NAN macro. */
static uint64_t canon_bits(const void *x, uint64_t n, coopreduce_dtype dt)
{
    if (dt == COOPREDUCE_FLOAT32) {
        float r = canon_sum_f32((const float *)x, n);
        return r != r ? nan_bits(dt) : f32_bits(r);
    }
    double r = canon_sum_f64((const double *)x, n);
    return r != r ? nan_bits(dt) : f64_bits(r);
}

static unsigned levels_of(uint64_t n, uint64_t C)
{
    unsigned L = 1;
    while (n > C) {
        n = (n + C - 1) / C;
        L++;
    }
    return L;
}

/* ================================================================================================
 * Library wrappers
 * ============================================================================================= */
static coopreduce_handle *g_h; /* threads = 0 */

/* Sums through the library; alternates coopreduce_sum and coopreduce_sum_to_host. */
static coopreduce_status lib_bits(coopreduce_handle *h, const void *x, uint64_t n,
                                  coopreduce_dtype dt, uint64_t *bits, int to_host)
{
    union {
        float f;
        double d;
    } r;
    coopreduce_status s = to_host ? coopreduce_sum_to_host(x, &r, n, dt, h, NULL)
                                  : coopreduce_sum(x, &r, n, dt, h, NULL);
    if (s != COOPREDUCE_SUCCESS) {
        *bits = 0xdeadbeefu;
        return s;
    }
    *bits = dt == COOPREDUCE_FLOAT32 ? f32_bits(r.f) : f64_bits(r.d);
    return s;
}

static void *gen_data(coopreduce_dtype dt, cr_gen_kind kind, uint64_t seed, uint64_t n)
{
    void *p = xmalloc((size_t)n * dt_size(dt));
    int rc = cr_gen_fill(p, 0, n, dt, kind, seed, gen_threads());
    if (rc != 0) {
        fprintf(stdout, "FATAL: cr_gen_fill(%s, %s) failed\n", dt_code(dt), cr_gen_name(kind));
        exit(1);
    }
    return p;
}

/* ================================================================================================
 * Error bound (part b)
 * ============================================================================================= */
static long double gamma_k(unsigned k, coopreduce_dtype dt)
{
    long double u = dt == COOPREDUCE_FLOAT32 ? ldexpl(1.0L, -24) : ldexpl(1.0L, -53);
    return (long double)k * u / (1.0L - (long double)k * u);
}

static double g_worst_ratio[2];
static char g_worst_case[2][160];

/* Checks |lib - exact| <= gamma(k) sum|x_i| for finite data; returns 1 on success. */
static int check_error_bound(const void *x, uint64_t n, coopreduce_dtype dt, uint64_t bits,
                             const char *label)
{
    ref_exact ex, ab;
    ref_exact_init(&ex);
    ref_exact_init(&ab);
    for (uint64_t i = 0; i < n; i++) {
        double v = load_value(x, i, dt);
        ref_exact_add(&ex, v);
        ref_exact_add(&ab, fabs(v));
    }
    double lib = dt == COOPREDUCE_FLOAT32 ? (double)f32_from_bits((uint32_t)bits)
                                          : f64_from_bits(bits);
    if (!CHECK(isfinite(lib), "%s: library result is not finite (bits 0x%" PRIx64 ")", label,
               bits))
        return 0;
    ref_exact_add(&ex, -lib);
    long double err = fabsl(ref_exact_to_long_double(&ex));
    long double sumabs = ref_exact_to_long_double(&ab);
    unsigned L = levels_of(n, dt == COOPREDUCE_FLOAT32 ? C32 : C64);
    unsigned k = (dt == COOPREDUCE_FLOAT32 ? 12 : 11) * L;
    long double bound = gamma_k(k, dt) * sumabs;
    /* The bound is rigorous; the 1e-12 relative slack only covers the long double evaluation
     * of err and bound themselves. */
    int ok = CHECK(err <= bound * (1.0L + 1e-12L),
                   "%s: |lib - exact| = %Lg > gamma(%u) * sum|x| = %Lg", label, err, k, bound);
    int di = dt == COOPREDUCE_FLOAT32 ? 0 : 1;
    if (bound > 0.0L) {
        double ratio = (double)(err / bound);
        if (ratio > g_worst_ratio[di]) {
            g_worst_ratio[di] = ratio;
            snprintf(g_worst_case[di], sizeof g_worst_case[di], "%s", label);
        }
    }
    return ok;
}

/* ================================================================================================
 * Part 0: ref_exact in its own right
 * ============================================================================================= */
static double sum_d(const double *v, int n)
{
    ref_exact r;
    ref_exact_init(&r);
    for (int i = 0; i < n; i++)
        ref_exact_add(&r, v[i]);
    return ref_exact_to_double(&r);
}

static float sum_f(const double *v, int n)
{
    ref_exact r;
    ref_exact_init(&r);
    for (int i = 0; i < n; i++)
        ref_exact_add(&r, v[i]);
    return ref_exact_to_float(&r);
}

#define CHECK_D(vals, expect_bits)                                                              \
    do {                                                                                        \
        const double v_[] = vals;                                                               \
        uint64_t got_ = f64_bits(sum_d(v_, (int)(sizeof v_ / sizeof v_[0])));                   \
        CHECK(got_ == (uint64_t)(expect_bits), "to_double(%s) = 0x%016" PRIx64                  \
              " expected 0x%016" PRIx64, #vals, got_, (uint64_t)(expect_bits));                 \
    } while (0)

#define CHECK_F(vals, expect_bits)                                                              \
    do {                                                                                        \
        const double v_[] = vals;                                                               \
        uint32_t got_ = f32_bits(sum_f(v_, (int)(sizeof v_ / sizeof v_[0])));                   \
        CHECK(got_ == (uint32_t)(expect_bits), "to_float(%s) = 0x%08" PRIx32                    \
              " expected 0x%08" PRIx32, #vals, got_, (uint32_t)(expect_bits));                  \
    } while (0)

#define L_(...) { __VA_ARGS__ }

/* A random finite double with a random exponent over the whole range (subnormals included). */
static double random_double_any(void)
{
    for (;;) {
        uint64_t u = rnd();
        unsigned e = (unsigned)((u >> 52) & 0x7ff);
        if (e == 0x7ff)
            continue;
        return f64_from_bits(u);
    }
}

static float random_float_any(void)
{
    for (;;) {
        uint32_t u = (uint32_t)rnd();
        if (((u >> 23) & 0xff) == 0xff)
            continue;
        return f32_from_bits(u);
    }
}

/* A float with a random sign, mantissa with random trailing zeros (makes ties likely), and
 * biased exponent e (1..254) or subnormal when e == 0. */
static float random_float_exp(int e)
{
    uint32_t m = (uint32_t)rnd() & 0x7fffffu;
    unsigned tz = (unsigned)rnd_below(24);
    m &= ~((1u << tz) - 1u) & 0x7fffffu;
    uint32_t s = (uint32_t)(rnd() & 1u) << 31;
    return f32_from_bits(s | ((uint32_t)e << 23) | m);
}

static void test_ref_exact(void)
{
    fprintf(stdout, "-- 0: ref_exact\n");
    const double p24 = 0x1p-24, p60 = 0x1p-60;

    /* Cancellation and exactness. */
    CHECK_D(L_(1e30, 1.0, -1e30), f64_bits(1.0));
    CHECK_F(L_(1e30, 1.0, -1e30), f32_bits(1.0f));
    CHECK_D(L_(0x1p1000, 0x1p-1074, -0x1p1000), 1u);
    CHECK_D(L_(0x1p-1074, 0x1p-1074, 0x1p-1074), 3u);
    CHECK_D(L_(-0x1p-1074, -0x1p-1074, -0x1p-1074), UINT64_C(0x8000000000000003));

    /* float32 rounding, ties to even, and the double-rounding trap. */
    CHECK_F(L_(1.0, p24), f32_bits(1.0f));                       /* tie -> even (down) */
    CHECK_F(L_(1.0, 3 * p24), f32_bits(1.0f + 0x1p-22f));        /* tie -> even (up) */
    CHECK_F(L_(1.0, p24, p60), f32_bits(1.0f + 0x1p-23f));       /* just above the tie */
    CHECK_F(L_(1.0, p24, -p60), f32_bits(1.0f));                 /* just below the tie */
    CHECK_F(L_(1.0, 3 * p24, -0x1p-80), f32_bits(1.0f + 0x1p-23f)); /* via double: 1 + 2^-22 */
    CHECK_F(L_(16777216.0, 1.0, 0x1p-30), f32_bits(16777218.0f));  /* via double: 16777216 */
    CHECK_F(L_(-16777216.0, -1.0, -0x1p-30), f32_bits(-16777218.0f));
    CHECK_F(L_(0x1p-149, 0x1p-150, -0x1p-1074), 1u);              /* subnormal, below the tie */
    CHECK_F(L_(1.0, 0x1p-25, 0x1p-25), f32_bits(1.0f));          /* sum lands on a tie */
    CHECK_F(L_(16777216.0, 1.0, 1.0), f32_bits(16777218.0f));
    CHECK_F(L_(16777216.0, 1.0), f32_bits(16777216.0f));
    CHECK_F(L_(16777216.0, 3.0), f32_bits(16777220.0f));         /* 16777219: tie -> even */
    CHECK_F(L_(16777216.0, 5.0), f32_bits(16777220.0f));         /* 16777221: tie -> even */
    CHECK_F(L_(-16777216.0, -3.0), f32_bits(-16777220.0f));
    CHECK_D(L_(1.0, 0x1p-53), f64_bits(1.0));
    CHECK_D(L_(1.0, 0x1p-53, 0x1p-100), f64_bits(1.0 + 0x1p-52));
    CHECK_D(L_(1.0, 0x1p-52, 0x1p-53), f64_bits(1.0 + 0x1p-51));
    CHECK_D(L_(1.0, 0x1p-53, -0x1p-1074), f64_bits(1.0));       /* just below the tie */
    CHECK_D(L_(1.0, 0x1p-53, 0x1p-1074), f64_bits(1.0 + 0x1p-52)); /* just above the tie */

    /* Overflow. */
    CHECK_D(L_(DBL_MAX, DBL_MAX), f64_bits(INFINITY));
    CHECK_D(L_(-DBL_MAX, -DBL_MAX), f64_bits(-INFINITY));
    CHECK_D(L_(DBL_MAX, 0x1p970), f64_bits(INFINITY));   /* half an ulp: tie -> 2^1024 */
    CHECK_D(L_(DBL_MAX, 0x1p969), f64_bits(DBL_MAX));
    CHECK_D(L_(DBL_MAX, DBL_MAX, -DBL_MAX), f64_bits(DBL_MAX));
    CHECK_F(L_((double)FLT_MAX, (double)FLT_MAX), f32_bits(INFINITY));
    CHECK_F(L_((double)FLT_MAX, 0x1p103), f32_bits(INFINITY));
    CHECK_F(L_((double)FLT_MAX, 0x1p102), f32_bits(FLT_MAX));
    CHECK_F(L_(-(double)FLT_MAX, -0x1p103), f32_bits(-INFINITY));
    CHECK_F(L_(1e300), f32_bits(INFINITY));
    CHECK_D(L_((double)FLT_MAX, (double)FLT_MAX), f64_bits(2.0 * (double)FLT_MAX));
    {
        ref_exact r;
        ref_exact_init(&r);
        ref_exact_add(&r, DBL_MAX);
        ref_exact_add(&r, DBL_MAX);
        long double ld = ref_exact_to_long_double(&r);
        CHECK(ld == 2.0L * (long double)DBL_MAX, "to_long_double(2 DBL_MAX) = %Lg", ld);
    }

    /* Subnormal results. */
    CHECK_D(L_(0x1p-1022, -0x1p-1074), UINT64_C(0x000fffffffffffff));
    CHECK_F(L_(0x1p-150, 0x1p-150, 0x1p-150), 2u);             /* 1.5 * 2^-149: tie -> 2 */
    CHECK_F(L_(0x1p-150), 0u);                                  /* 0.5 * 2^-149: tie -> +0 */
    CHECK_F(L_(-0x1p-150), 0x80000000u);                        /* -> -0 */
    CHECK_F(L_(0x1p-150, 0x1p-200), 1u);
    CHECK_F(L_(0x1p-149, 0x1p-149, 0x1p-150), 2u);              /* 2.5: tie -> 2 */
    CHECK_F(L_(0x1p-149, 0x1p-149, 0x1p-149, 0x1p-150), 4u);    /* 3.5: tie -> 4 */
    CHECK_F(L_((double)FLT_MIN, -0x1p-149), 0x007fffffu);
    CHECK_F(L_(0x1p-1074), 0u);
    CHECK_F(L_(-0x1p-1074), 0x80000000u);
    CHECK_F(L_((double)FLT_MIN, -0x1p-1074), 0x00800000u);     /* rounds back up to FLT_MIN */

    /* Signed zeros. */
    {
        ref_exact r;
        ref_exact_init(&r);
        CHECK(f64_bits(ref_exact_to_double(&r)) == 0, "empty sum is not +0.0");
        CHECK(f32_bits(ref_exact_to_float(&r)) == 0, "empty sum (float) is not +0.0");
        CHECK(ref_exact_to_long_double(&r) == 0.0L && !signbit(ref_exact_to_long_double(&r)),
              "empty sum (long double) is not +0.0");
    }
    CHECK_D(L_(-0.0), UINT64_C(0x8000000000000000));
    CHECK_F(L_(-0.0), 0x80000000u);
    CHECK_D(L_(-0.0, -0.0), UINT64_C(0x8000000000000000));
    CHECK_D(L_(-0.0, 0.0), 0u);
    CHECK_D(L_(0.0, -0.0), 0u);
    CHECK_D(L_(1.0, -1.0), 0u);
    CHECK_D(L_(-1.0, 1.0, -0.0), 0u);
    CHECK_F(L_(-0x1p-149, 0x1p-149, -0.0), 0u);

    /* Special values. */
    {
        const double inf = INFINITY, nan_ = NAN;
        CHECK_D(L_(nan_), UINT64_C(0x7ff8000000000000));
        CHECK_D(L_(1.0, -nan_), UINT64_C(0x7ff8000000000000));
        CHECK_F(L_(1.0, f64_from_bits(UINT64_C(0xfff0000000000001))), 0x7fc00000u);
        CHECK_D(L_(inf, 1.0), f64_bits(INFINITY));
        CHECK_D(L_(-inf, DBL_MAX, DBL_MAX), f64_bits(-INFINITY));
        CHECK_D(L_(inf, -inf), UINT64_C(0x7ff8000000000000));
        CHECK_D(L_(inf, nan_, inf), UINT64_C(0x7ff8000000000000));
        CHECK_F(L_(inf, inf), f32_bits(INFINITY));
        CHECK_F(L_(-inf, 1e300), f32_bits(-INFINITY));
        CHECK_F(L_(-inf, inf, 1.0), 0x7fc00000u);
    }

    /* Lazy carries: many additions crossing normalisations, positive and negative. */
    {
        ref_exact r;
        ref_exact_init(&r);
        const uint32_t cnt = 3u * REF_EXACT_NORMALIZE_EVERY + 7u;
        for (uint32_t i = 0; i < cnt; i++)
            ref_exact_add(&r, -0x1p-1074);
        CHECK(f64_bits(ref_exact_to_double(&r)) == (UINT64_C(0x8000000000000000) | cnt),
              "sum of %u x -2^-1074 wrong: 0x%016" PRIx64, cnt, f64_bits(ref_exact_to_double(&r)));
        ref_exact_init(&r);
        for (uint32_t i = 0; i < cnt; i++)
            ref_exact_add(&r, DBL_MAX);
        CHECK(isinf(ref_exact_to_double(&r)), "%u x DBL_MAX is not inf", cnt);
        long double ld = ref_exact_to_long_double(&r);
        long double want = (long double)cnt * (long double)DBL_MAX;
        CHECK(fabsl(ld - want) <= 1e-17L * want, "to_long_double(%u DBL_MAX) = %Lg", cnt, ld);
        ref_exact_add(&r, 1.0);
        for (uint32_t i = 0; i < cnt; i++)
            ref_exact_add(&r, -DBL_MAX);
        CHECK(f64_bits(ref_exact_to_double(&r)) == f64_bits(1.0),
              "cnt DBL_MAX + 1 - cnt DBL_MAX = %a", ref_exact_to_double(&r));
        /* k1 2^-1000 - k2 2^-1074 rounds to k1 2^-1000 (the difference is far below half an ulp) */
        ref_exact_init(&r);
        for (uint32_t i = 0; i < cnt; i++)
            ref_exact_add(&r, (i & 1) ? -0x1p-1074 : 0x1p-1000);
        double want2 = (double)((cnt + 1) / 2) * 0x1p-1000;
        CHECK(ref_exact_to_double(&r) == want2, "mixed lazy-carry sum = %a, want %a",
              ref_exact_to_double(&r), want2);
        CHECK(ref_exact_sign(&r) == 1, "sign of the mixed lazy-carry sum");
        for (uint32_t i = 0; i < cnt; i++)
            ref_exact_add(&r, (i & 1) ? 0x1p-1074 : -0x1p-1000);
        CHECK(f64_bits(ref_exact_to_double(&r)) == 0 && ref_exact_sign(&r) == 0,
              "mixed lazy-carry sum minus itself = %a", ref_exact_to_double(&r));
    }

    /* Two-term sums against the hardware: IEEE a + b is correctly rounded, sign of zero included. */
    {
        int bad = 0;
        for (int t = 0; t < 200000; t++) {
            double a = random_double_any(), b;
            switch (t % 4) {
            case 0: b = random_double_any(); break;
            case 1: b = -a * (1.0 + ldexp((double)(int)rnd_below(64) - 32.0, -50)); break;
            case 2: b = ldexp(a, -(int)rnd_below(60)) * ((rnd() & 1) ? 1.0 : -1.0); break;
            default: b = (rnd() & 1) ? -a : -f64_from_bits(f64_bits(a) ^ 1u); break;
            }
            if (!isfinite(b))
                b = 1.0;
            volatile double va = a, vb = b;
            double hw = va + vb;
            ref_exact r;
            ref_exact_init(&r);
            ref_exact_add(&r, a);
            ref_exact_add(&r, b);
            double got = ref_exact_to_double(&r);
            if (f64_bits(got) != f64_bits(hw) && bad++ < 5)
                CHECK(0, "to_double(%a + %a) = %a, IEEE gives %a", a, b, got, hw);
        }
        CHECK(bad == 0, "%d two-term double sums differ from IEEE addition", bad);
    }
    {
        int bad = 0;
        for (int t = 0; t < 200000; t++) {
            float a, b;
            if (t & 1) {
                a = random_float_any();
                b = random_float_any();
            } else {
                int e = (int)rnd_below(255); /* 0 (subnormal) .. 254 */
                a = random_float_exp(e);
                int e2 = e - (int)rnd_below(30);
                b = random_float_exp(e2 < 0 ? 0 : e2);
            }
            volatile float va = a, vb = b;
            float hw = va + vb;
            ref_exact r;
            ref_exact_init(&r);
            ref_exact_add(&r, a);
            ref_exact_add(&r, b);
            float got = ref_exact_to_float(&r);
            if (f32_bits(got) != f32_bits(hw) && bad++ < 5)
                CHECK(0, "to_float(%a + %a) = %a, IEEE gives %a", (double)a, (double)b,
                      (double)got, (double)hw);
        }
        CHECK(bad == 0, "%d two-term float sums differ from IEEE addition", bad);
    }
    /* Three floats within an exponent span of 25: the exact sum fits in a double (at most 52
     * significant bits), so (float)(exact double) is the single correct rounding. */
    {
        int bad = 0;
        for (int t = 0; t < 200000; t++) {
            int e = 1 + (int)rnd_below(225);
            float a = random_float_exp(e + 25);
            float b = random_float_exp(e + (int)rnd_below(26));
            float c = random_float_exp(e + (int)rnd_below(26));
            double exact = (double)a + (double)b + (double)c; /* exact, see above */
            float want = (float)exact;
            ref_exact r;
            ref_exact_init(&r);
            ref_exact_add(&r, a);
            ref_exact_add(&r, b);
            ref_exact_add(&r, c);
            float got = ref_exact_to_float(&r);
            if (f32_bits(got) != f32_bits(want) && bad++ < 5)
                CHECK(0, "to_float(%a + %a + %a) = %a, want %a", (double)a, (double)b, (double)c,
                      (double)got, (double)want);
            double gd = ref_exact_to_double(&r);
            if (f64_bits(gd) != f64_bits(exact) && bad++ < 5)
                CHECK(0, "to_double(%a + %a + %a) = %a, want %a", (double)a, (double)b,
                      (double)c, gd, exact);
        }
        CHECK(bad == 0, "%d three-term float sums wrongly rounded", bad);
    }

    /* Agreement with long double Neumaier summation on random data. */
    for (int rep = 0; rep < 4; rep++) {
        const uint64_t n = 100000;
        uint64_t seed = rnd();
        cr_gen_kind kind = rep % 2 ? CR_GEN_NORMAL : CR_GEN_UNIFORM;
        double *x = gen_data(COOPREDUCE_FLOAT64, kind, seed, n);
        if (rep >= 2)
            for (uint64_t i = 0; i < n; i++)
                x[i] = ldexp(x[i], (int)rnd_below(80) - 40);
        long double s = 0.0L, comp = 0.0L;
        ref_exact r;
        ref_exact_init(&r);
        for (uint64_t i = 0; i < n; i++) {
            long double v = x[i], t = s + v;
            if (fabsl(s) >= fabsl(v))
                comp += (s - t) + v;
            else
                comp += (v - t) + s;
            s = t;
            ref_exact_add(&r, x[i]);
        }
        long double neu = s + comp;
        double d = ref_exact_to_double(&r);
        long double ld = ref_exact_to_long_double(&r);
        CHECK(fabsl((long double)d - neu) <= 1e-15L * fabsl(neu),
              "to_double %a vs Neumaier %La (kind %s seed %" PRIu64 ")", d, neu,
              cr_gen_name(kind), seed);
        CHECK(fabsl(ld - neu) <= 1e-15L * fabsl(neu), "to_long_double %La vs Neumaier %La", ld,
              neu);
        free(x);
    }
}

/* ================================================================================================
 * Part a + b: library vs independent implementation, and the error bound
 * ============================================================================================= */
static int g_case_counter;

static void run_case(coopreduce_dtype dt, cr_gen_kind kind, uint64_t n, int bound)
{
    uint64_t seed = rnd();
    char label[160];
    snprintf(label, sizeof label, "%s %s n=%" PRIu64 " seed=%" PRIu64, dt_code(dt),
             cr_gen_name(kind), n, seed);
    void *x = gen_data(dt, kind, seed, n);
    uint64_t lib = 0;
    coopreduce_status s = lib_bits(g_h, x, n, dt, &lib, g_case_counter++ & 1);
    if (CHECK(s == COOPREDUCE_SUCCESS, "%s: status %d (%s)", label, (int)s,
              coopreduce_last_error(g_h))) {
        uint64_t ref = canon_bits(x, n, dt);
        CHECK(lib == ref, "%s: library bits 0x%" PRIx64 " != canonical reference 0x%" PRIx64,
              label, lib, ref);
        if (kind == CR_GEN_ONES && n <= (UINT64_C(1) << 24)) /* every node exact */
            CHECK(lib == (dt == COOPREDUCE_FLOAT32 ? f32_bits((float)n) : f64_bits((double)n)),
                  "%s: sum of ones is not n (bits 0x%" PRIx64 ")", label, lib);
        if (bound)
            check_error_bound(x, n, dt, lib, label);
    }
    free(x);
}

static void add_size(uint64_t *list, int *count, int cap, uint64_t n)
{
    for (int i = 0; i < *count; i++)
        if (list[i] == n)
            return;
    if (*count < cap)
        list[(*count)++] = n;
}

static void test_sizes(void)
{
    fprintf(stdout, "-- a/b: library vs independent canonical implementation, error bound\n");
    for (int di = 0; di < 2; di++) {
        coopreduce_dtype dt = di == 0 ? COOPREDUCE_FLOAT32 : COOPREDUCE_FLOAT64;
        uint64_t C = di == 0 ? C32 : C64, W = di == 0 ? W32 : W64;
        uint64_t sizes[160];
        int ns = 0;
        const uint64_t fixed[] = {0, 1, 2, 3, 31, 32, 33, 127, 128, 129, 4093, 65521, 1000003};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            add_size(sizes, &ns, 160, fixed[i]);
        const uint64_t structural[] = {W - 1, W, W + 1, 2 * W + 1, C - 1, C, C + 1, 2 * C - 1,
                                       2 * C, 2 * C + 1, 3 * C + 5, C * W + 1,
                                       C * C - 1, C * C, C * C + 1, C * C + C + 1};
        for (size_t i = 0; i < sizeof structural / sizeof structural[0]; i++)
            add_size(sizes, &ns, 160, structural[i]);
        const int ks[] = {4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 16, 17, 20, 21, 22, 23, 24};
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
            uint64_t p = UINT64_C(1) << ks[i];
            add_size(sizes, &ns, 160, p - 1);
            add_size(sizes, &ns, 160, p + 1);
            if (ks[i] <= 14)
                add_size(sizes, &ns, 160, p);
        }
        for (int i = 0; i < 24; i++) { /* random sizes, log-uniform up to 2^22 */
            unsigned bits = 1 + (unsigned)rnd_below(22);
            add_size(sizes, &ns, 160, (UINT64_C(1) << (bits - 1)) + rnd_below(UINT64_C(1) << (bits - 1)));
        }
        int big_rot = 0;
        for (int i = 0; i < ns; i++) {
            uint64_t n = sizes[i];
            if (n <= (UINT64_C(1) << 20)) {
                for (int k = 0; k < 4; k++)
                    run_case(dt, (cr_gen_kind)k, n, 1);
            } else {
                /* Large sizes: two kinds each, rotating, to keep the run short. */
                run_case(dt, (cr_gen_kind)(big_rot % 4), n, 1);
                run_case(dt, (cr_gen_kind)((big_rot + 1) % 4), n, n <= (UINT64_C(1) << 23));
                big_rot += 2;
            }
        }
        fprintf(stdout, "   %s: %d sizes; worst |lib - exact| / bound = %.3g (%s)\n", dt_code(dt), ns,
                g_worst_ratio[di], g_worst_case[di]);
    }
}

/* ================================================================================================
 * Part c: thread independence
 * ============================================================================================= */
static void test_threads(void)
{
    fprintf(stdout, "-- c: thread independence\n");
    const uint64_t sizes[] = {5000003, (UINT64_C(1) << 22) + 1};
    const int threads[] = {1, 2, 3, 7, 16, 0};
    for (int di = 0; di < 2; di++) {
        coopreduce_dtype dt = di == 0 ? COOPREDUCE_FLOAT32 : COOPREDUCE_FLOAT64;
        for (int si = 0; si < 2; si++) {
            uint64_t n = sizes[si], seed = rnd();
            cr_gen_kind kind = si == 0 ? CR_GEN_NORMAL : CR_GEN_SIGNED;
            void *x = gen_data(dt, kind, seed, n);
            uint64_t ref = canon_bits(x, n, dt);
            coopreduce_handle *h = NULL;
            coopreduce_status s = coopreduce_create_cpu(&h, 1);
            if (!CHECK(s == COOPREDUCE_SUCCESS && h, "create_cpu(1): %d", (int)s)) {
                free(x);
                continue;
            }
            for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
                uint64_t b1 = 0, b2 = 0;
                s = coopreduce_set_threads(h, threads[t]);
                CHECK(s == COOPREDUCE_SUCCESS, "set_threads(%d): %d", threads[t], (int)s);
                s = lib_bits(h, x, n, dt, &b1, (int)(t & 1));
                CHECK(s == COOPREDUCE_SUCCESS && b1 == ref,
                      "%s %s n=%" PRIu64 " seed=%" PRIu64 " set_threads(%d): status %d bits 0x%"
                      PRIx64 " expected 0x%" PRIx64, dt_code(dt), cr_gen_name(kind), n, seed,
                      threads[t], (int)s, b1, ref);
                coopreduce_handle *h2 = NULL;
                s = coopreduce_create_cpu(&h2, threads[t]);
                if (CHECK(s == COOPREDUCE_SUCCESS && h2, "create_cpu(%d): %d", threads[t], (int)s)) {
                    s = lib_bits(h2, x, n, dt, &b2, (int)!(t & 1));
                    CHECK(s == COOPREDUCE_SUCCESS && b2 == ref,
                          "%s %s n=%" PRIu64 " seed=%" PRIu64 " create_cpu(%d): status %d bits 0x%"
                          PRIx64 " expected 0x%" PRIx64, dt_code(dt), cr_gen_name(kind), n, seed,
                          threads[t], (int)s, b2, ref);
                    coopreduce_destroy(h2);
                }
            }
            coopreduce_destroy(h);
            free(x);
        }
    }
}

/* Different handles used from different threads at the same time (coopreduce.h, "Handles"). */
typedef struct {
    coopreduce_dtype dt;
    const void *x;
    uint64_t n;
    int reps;
    int threads;
    uint64_t bits[4];
    coopreduce_status status[4];
    int created;
} concurrent_job;

static void *concurrent_worker(void *arg)
{
    concurrent_job *j = arg;
    coopreduce_handle *h = NULL;
    j->created = coopreduce_create_cpu(&h, j->threads) == COOPREDUCE_SUCCESS && h;
    if (!j->created)
        return NULL;
    for (int r = 0; r < j->reps; r++)
        j->status[r] = lib_bits(h, j->x, j->n, j->dt, &j->bits[r], r & 1);
    coopreduce_destroy(h);
    return NULL;
}

static void test_concurrent_handles(void)
{
    enum { NJ = 4 };
    concurrent_job jobs[NJ];
    pthread_t tid[NJ];
    int started[NJ];
    void *data[NJ];
    uint64_t ref[NJ], seeds[NJ];
    for (int i = 0; i < NJ; i++) {
        coopreduce_dtype dt = i % 2 ? COOPREDUCE_FLOAT64 : COOPREDUCE_FLOAT32;
        uint64_t n = 1500000 + 4099 * (uint64_t)i;
        seeds[i] = rnd();
        data[i] = gen_data(dt, CR_GEN_SIGNED, seeds[i], n);
        ref[i] = canon_bits(data[i], n, dt);
        jobs[i] = (concurrent_job){.dt = dt, .x = data[i], .n = n, .reps = 4, .threads = i};
    }
    for (int i = 0; i < NJ; i++)
        started[i] = pthread_create(&tid[i], NULL, concurrent_worker, &jobs[i]) == 0;
    for (int i = 0; i < NJ; i++) {
        if (!started[i]) {
            fprintf(stdout, "   (could not start thread %d; running its job inline)\n", i);
            concurrent_worker(&jobs[i]);
        } else {
            pthread_join(tid[i], NULL);
        }
        if (CHECK(jobs[i].created, "concurrent job %d: create_cpu failed", i))
            for (int r = 0; r < jobs[i].reps; r++)
                CHECK(jobs[i].status[r] == COOPREDUCE_SUCCESS && jobs[i].bits[r] == ref[i],
                      "concurrent job %d (%s n=%" PRIu64 " seed=%" PRIu64 ") rep %d: status %d bits 0x%"
                      PRIx64 " expected 0x%" PRIx64, i, dt_code(jobs[i].dt), jobs[i].n, seeds[i], r,
                      (int)jobs[i].status[r], jobs[i].bits[r], ref[i]);
        free(data[i]);
    }
}

/* ================================================================================================
 * Part d: special values and hand-computed trees
 * ============================================================================================= */
static uint64_t bits_of_value(coopreduce_dtype dt, double v)
{
    return dt == COOPREDUCE_FLOAT32 ? f32_bits((float)v) : f64_bits(v);
}

static void *filled(coopreduce_dtype dt, uint64_t n, double v)
{
    void *x = xmalloc((size_t)n * dt_size(dt));
    for (uint64_t i = 0; i < n; i++)
        store_value(x, i, dt, v);
    return x;
}

/* Library bits must equal `want`; also checks the independent implementation agrees. */
static void expect_bits(const void *x, uint64_t n, coopreduce_dtype dt, uint64_t want,
                        const char *what)
{
    uint64_t got = 0;
    coopreduce_status s = lib_bits(g_h, x, n, dt, &got, 0);
    CHECK(s == COOPREDUCE_SUCCESS && got == want,
          "%s %s (n=%" PRIu64 "): status %d, bits 0x%" PRIx64 ", expected 0x%" PRIx64, dt_code(dt),
          what, n, (int)s, got, want);
    s = lib_bits(g_h, x, n, dt, &got, 1);
    CHECK(s == COOPREDUCE_SUCCESS && got == want,
          "%s %s (n=%" PRIu64 ", sum_to_host): status %d, bits 0x%" PRIx64 ", expected 0x%" PRIx64,
          dt_code(dt), what, n, (int)s, got, want);
    uint64_t ref = canon_bits(x, n, dt);
    CHECK(ref == want, "%s %s: independent implementation gives 0x%" PRIx64 " (test bug?)",
          dt_code(dt), what, ref);
}

static void test_special(void)
{
    fprintf(stdout, "-- d: special values\n");
    for (int di = 0; di < 2; di++) {
        coopreduce_dtype dt = di == 0 ? COOPREDUCE_FLOAT32 : COOPREDUCE_FLOAT64;
        uint64_t C = di == 0 ? C32 : C64, W = di == 0 ? W32 : W64;
        uint64_t negzero = di == 0 ? 0x80000000u : UINT64_C(0x8000000000000000);
        uint64_t qnan = nan_bits(dt);
        uint64_t pinf = bits_of_value(dt, INFINITY), ninf = bits_of_value(dt, -INFINITY);
        double maxv = di == 0 ? (double)FLT_MAX : DBL_MAX;
        void *x;

        /* Zeros. */
        x = filled(dt, 8, 0.0);
        expect_bits(x, 0, dt, 0, "empty");
        store_value(x, 0, dt, -0.0);
        expect_bits(x, 1, dt, negzero, "[-0]");
        store_value(x, 1, dt, -0.0);
        expect_bits(x, 2, dt, negzero, "[-0,-0]");
        store_value(x, 0, dt, 0.0);
        expect_bits(x, 2, dt, 0, "[+0,-0]");
        store_value(x, 0, dt, -0.0);
        store_value(x, 1, dt, 0.0);
        expect_bits(x, 2, dt, 0, "[-0,+0]");
        store_value(x, 0, dt, 1.0);
        store_value(x, 1, dt, -1.0);
        expect_bits(x, 2, dt, 0, "[1,-1]");
        store_value(x, 0, dt, 0.0);
        expect_bits(x, 1, dt, 0, "[+0]");
        free(x);
        const uint64_t zn[] = {5000, 3 * C + 7, C * C + 1};
        for (size_t k = 0; k < 3; k++) {
            char what[64];
            x = filled(dt, zn[k], -0.0);
            snprintf(what, sizeof what, "%" PRIu64 " x -0.0", zn[k]);
            expect_bits(x, zn[k], dt, negzero, what);
            store_value(x, zn[k] - 1, dt, 0.0);
            snprintf(what, sizeof what, "%" PRIu64 " x -0.0 then +0.0", zn[k]);
            expect_bits(x, zn[k], dt, 0, what);
            store_value(x, zn[k] - 1, dt, -0.0);
            store_value(x, zn[k] / 2, dt, 0.0);
            snprintf(what, sizeof what, "%" PRIu64 " x -0.0 with +0.0 in the middle", zn[k]);
            expect_bits(x, zn[k], dt, 0, what);
            free(x);
        }

        /* NaN: various payloads and signs, various places; the rest random normal data. */
        {
            const uint64_t n = 10 * C + 3;
            uint64_t seed = rnd();
            void *base = gen_data(dt, CR_GEN_NORMAL, seed, n);
            const uint64_t nans32[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u,
                                       0x7fffffffu, 0x7fc00001u, 0xffffffffu};
            const uint64_t nans64[] = {UINT64_C(0x7ff8000000000000), UINT64_C(0xfff8000000000000),
                                       UINT64_C(0x7ff0000000000001), UINT64_C(0xfff4000000012345),
                                       UINT64_C(0x7fffffffffffffff), UINT64_C(0x7ff8000000000001),
                                       UINT64_C(0xffffffffffffffff)};
            const uint64_t *nans = di == 0 ? nans32 : nans64;
            const uint64_t pos[] = {0, n - 1, n / 2, C + 5, 3 * C, 2 * C - 1, W, 7 * C + W + 3};
            x = xmalloc((size_t)n * dt_size(dt));
            for (size_t p = 0; p < sizeof pos / sizeof pos[0]; p++) {
                for (size_t q = 0; q < 7; q++) {
                    char what[96];
                    memcpy(x, base, (size_t)n * dt_size(dt));
                    store_bits(x, pos[p], dt_size(dt), nans[q]);
                    snprintf(what, sizeof what, "NaN 0x%" PRIx64 " at %" PRIu64 " (seed %" PRIu64 ")",
                             nans[q], pos[p], seed);
                    expect_bits(x, n, dt, qnan, what);
                }
            }
            /* Single NaN element: still canonicalised. */
            for (size_t q = 0; q < 7; q++) {
                char what[64];
                store_bits(x, 0, dt_size(dt), nans[q]);
                snprintf(what, sizeof what, "[NaN 0x%" PRIx64 "]", nans[q]);
                expect_bits(x, 1, dt, qnan, what);
            }
            /* Two NaNs with different payloads, a NaN with infinities. */
            memcpy(x, base, (size_t)n * dt_size(dt));
            store_bits(x, 3, dt_size(dt), nans[3]);
            store_bits(x, 9 * C, dt_size(dt), nans[4]);
            expect_bits(x, n, dt, qnan, "two NaNs, different payloads and chunks");
            store_value(x, 5, dt, INFINITY);
            store_value(x, 6 * C, dt, -INFINITY);
            expect_bits(x, n, dt, qnan, "NaN with +inf and -inf");

            /* Infinities. */
            memcpy(x, base, (size_t)n * dt_size(dt));
            store_value(x, 4 * C + 17, dt, INFINITY);
            expect_bits(x, n, dt, pinf, "+inf among finite values");
            store_value(x, 8 * C + 1, dt, INFINITY);
            expect_bits(x, n, dt, pinf, "two +inf in different chunks");
            store_value(x, 8 * C + 1, dt, -INFINITY);
            expect_bits(x, n, dt, qnan, "+inf and -inf in different chunks");
            memcpy(x, base, (size_t)n * dt_size(dt));
            store_value(x, 2, dt, -INFINITY);
            expect_bits(x, n, dt, ninf, "-inf among finite values");
            store_value(x, W + 2, dt, INFINITY);
            expect_bits(x, n, dt, qnan, "+inf and -inf in the same chunk");
            store_value(x, 0, dt, INFINITY);
            expect_bits(x, 1, dt, pinf, "[+inf]");
            store_value(x, 0, dt, -INFINITY);
            expect_bits(x, 1, dt, ninf, "[-inf]");
            free(x);
            free(base);
        }

        /* Overflow at a node (per the tree: lanes (0+1) + (2+3)). */
        x = filled(dt, 4, 0.0);
        store_value(x, 0, dt, maxv);
        store_value(x, 1, dt, maxv);
        expect_bits(x, 2, dt, pinf, "MAX + MAX");
        store_value(x, 0, dt, -maxv);
        store_value(x, 1, dt, -maxv);
        expect_bits(x, 2, dt, ninf, "-MAX - MAX");
        store_value(x, 0, dt, maxv);
        store_value(x, 1, dt, maxv);
        store_value(x, 2, dt, -maxv);
        store_value(x, 3, dt, -maxv);
        expect_bits(x, 4, dt, qnan, "[MAX, MAX, -MAX, -MAX] (inf + -inf at the root)");
        store_value(x, 1, dt, -maxv);
        store_value(x, 2, dt, maxv);
        expect_bits(x, 4, dt, 0, "[MAX, -MAX, MAX, -MAX]");
        expect_bits(x, 3, dt, bits_of_value(dt, maxv), "[MAX, -MAX, MAX]");
        free(x);

        /* Hand-computed trees: B = 2^24 (f32) or 2^53 (f64); B + 1 rounds to B (tie, even) but
         * B + 2 is exact. Each case pairs the two 1s first only if the tree is the documented one. */
        {
            double B = di == 0 ? 16777216.0 : 9007199254740992.0;
            uint64_t want = bits_of_value(dt, B + 2.0);
            struct {
                uint64_t n, a, b;
                const char *what;
            } cases[] = {
                {4, 2, 3, "lanes 2,3 paired first"},
                {W + 2, 1, W + 1, "rows 0,1 of lane 1 paired first"},
                {W, W / 2, W / 2 + 1, "lanes W/2, W/2+1 paired first"},
                {3 * W + 1, 2 * W, 3 * W, "rows 2,3 of lane 0 paired first"},
                {4 * C, 2 * C, 3 * C, "level-1 partials 2,3 paired first"},
                {C * (W + 2), C * (W / 2), C * (W / 2 + 1), "level-2 lanes W/2, W/2+1 paired first"},
                {C * (3 * W + 1), 2 * W * C, 3 * W * C, "level-2 rows 2,3 of lane 0 paired first"},
            };
            for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
                x = filled(dt, cases[k].n, 0.0);
                store_value(x, 0, dt, B);
                store_value(x, cases[k].a, dt, 1.0);
                store_value(x, cases[k].b, dt, 1.0);
                expect_bits(x, cases[k].n, dt, want, cases[k].what);
                free(x);
            }
            x = filled(dt, 3, 1.0);
            store_value(x, 1, dt, B);
            expect_bits(x, 3, dt, bits_of_value(dt, B), "[1, B, 1] = (1+B)+1 = B");
            free(x);
        }

        /* Subnormals: integer multiples k of the smallest subnormal with sum |k| < 2^24 (f32) or
         * 2^53 (f64): every partial sum is exactly representable, so the result is exact. */
        {
            const uint64_t n = 100003;
            double tiny = di == 0 ? 0x1p-149 : 0x1p-1074;
            int64_t kmax = di == 0 ? 80 : (INT64_C(1) << 20);
            ref_exact ex;
            ref_exact_init(&ex);
            x = xmalloc((size_t)n * dt_size(dt));
            for (uint64_t i = 0; i < n; i++) {
                int64_t k = (int64_t)rnd_below((uint64_t)(2 * kmax + 1)) - kmax;
                store_value(x, i, dt, (double)k * tiny);
                ref_exact_add(&ex, (double)k * tiny);
            }
            uint64_t want = dt == COOPREDUCE_FLOAT32 ? f32_bits(ref_exact_to_float(&ex))
                                                     : f64_bits(ref_exact_to_double(&ex));
            expect_bits(x, n, dt, want, "random subnormals (exact)");
            for (uint64_t i = 0; i < n; i++)
                store_value(x, i, dt, tiny);
            expect_bits(x, 5000, dt, 5000, "5000 x smallest subnormal");
            expect_bits(x, n, dt, n, "100003 x smallest subnormal");
            /* Subnormal + subnormal crossing into the normal range: exact (multiples of tiny,
             * sum < 2^(p+1) tiny). */
            double big_sub = di == 0 ? 0x1.fffffcp-127 : 0x1.ffffffffffffep-1023;
            store_value(x, 0, dt, big_sub);
            store_value(x, 1, dt, big_sub);
            expect_bits(x, 2, dt, bits_of_value(dt, 2.0 * big_sub), "two large subnormals");
            free(x);
        }
    }
}

/* ================================================================================================
 * Part e: element-aligned but not 16-byte aligned host pointers
 * ============================================================================================= */
static void test_unaligned(void)
{
    fprintf(stdout, "-- e: unaligned host pointers\n");
    const uint64_t sizes[] = {1, 3, 129, 4097, 65521, 1000003};
    for (int di = 0; di < 2; di++) {
        coopreduce_dtype dt = di == 0 ? COOPREDUCE_FLOAT32 : COOPREDUCE_FLOAT64;
        size_t es = dt_size(dt);
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            uint64_t n = sizes[si], seed = rnd();
            void *a = gen_data(dt, CR_GEN_SIGNED, seed, n);
            unsigned char *raw = xmalloc((size_t)(n + 4) * es + 64);
            unsigned char *al = (unsigned char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
            uint64_t ref = 0;
            coopreduce_status s = lib_bits(g_h, a, n, dt, &ref, 0);
            CHECK(s == COOPREDUCE_SUCCESS, "aligned sum failed: %d", (int)s);
            for (unsigned off = 1; off <= (di == 0 ? 3u : 1u); off++) {
                memcpy(al + off * es, a, (size_t)n * es);
                uint64_t got = 0;
                s = lib_bits(g_h, al + off * es, n, dt, &got, off & 1);
                CHECK(s == COOPREDUCE_SUCCESS && got == ref,
                      "%s n=%" PRIu64 " seed=%" PRIu64 " offset %u elements: status %d bits 0x%"
                      PRIx64 " vs aligned 0x%" PRIx64, dt_code(dt), n, seed, off, (int)s, got, ref);
                CHECK(memcmp(al + off * es, a, (size_t)n * es) == 0,
                      "%s n=%" PRIu64 ": the library modified its input", dt_code(dt), n);
            }
            free(raw);
            free(a);
        }
    }
}

/* ================================================================================================
 * Part f: errors and small API functions
 * ============================================================================================= */

typedef coopreduce_status (*sum_fn)(const void *, void *, uint64_t, coopreduce_dtype,
                                    coopreduce_handle *, void *);

static void test_errors(void)
{
    fprintf(stdout, "-- f: errors and API\n");
    const sum_fn fns[2] = {coopreduce_sum, coopreduce_sum_to_host};
    const char *fn_names[2] = {"coopreduce_sum", "coopreduce_sum_to_host"};
    double data64[16];
    float data32[16];
    for (int i = 0; i < 16; i++) {
        data64[i] = i + 1;
        data32[i] = (float)(i + 1);
    }

    {
        coopreduce_handle *fresh = NULL;
        coopreduce_status s = coopreduce_create_cpu(&fresh, 2);
        if (CHECK(s == COOPREDUCE_SUCCESS && fresh, "create_cpu(2): %d", (int)s)) {
            CHECK(coopreduce_last_error(fresh) && coopreduce_last_error(fresh)[0] == '\0',
                  "fresh handle's last_error is not empty: '%s'", coopreduce_last_error(fresh));
            CHECK(coopreduce_handle_device(fresh) == -1, "handle_device(cpu) = %d",
                  coopreduce_handle_device(fresh));
            CHECK(coopreduce_destroy(fresh) == COOPREDUCE_SUCCESS, "destroy failed");
        }
    }

    for (int f = 0; f < 2; f++) {
        for (int di = 0; di < 2; di++) {
            coopreduce_dtype dt = di == 0 ? COOPREDUCE_FLOAT32 : COOPREDUCE_FLOAT64;
            const void *data = di == 0 ? (const void *)data32 : (const void *)data64;
            const char *fn = fn_names[f];
            union {
                uint64_t u64;
                uint32_t u32[2];
                double d;
            } res;
            coopreduce_status s;
#define POISON_RESULT() (res.u64 = POISON64)
#define UNTOUCHED() (res.u64 == POISON64)

            POISON_RESULT();
            s = fns[f](data, &res, 4, dt, NULL, NULL);
            CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s NULL handle: %d", fn, (int)s);
            CHECK(UNTOUCHED(), "%s NULL handle wrote the result", fn);
            CHECK(coopreduce_last_error(NULL)[0] != '\0', "%s NULL handle: no thread message", fn);

            s = fns[f](data, NULL, 4, dt, g_h, NULL);
            CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s NULL result: %d", fn, (int)s);
            CHECK(coopreduce_last_error(g_h)[0] != '\0', "%s NULL result: no message", fn);

            POISON_RESULT();
            s = fns[f](NULL, &res, 5, dt, g_h, NULL);
            CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s NULL x, n = 5: %d", fn, (int)s);
            CHECK(UNTOUCHED(), "%s NULL x wrote the result", fn);
            CHECK(coopreduce_last_error(g_h)[0] != '\0', "%s NULL x: no message", fn);

            POISON_RESULT();
            s = fns[f](NULL, &res, 0, dt, g_h, NULL);
            CHECK(s == COOPREDUCE_SUCCESS, "%s NULL x, n = 0: %d (%s)", fn, (int)s,
                  coopreduce_last_error(g_h));
            if (dt == COOPREDUCE_FLOAT32)
                CHECK(res.u32[0] == 0 && res.u32[1] == (uint32_t)POISON64,
                      "%s NULL x, n = 0 (f32): result 0x%08" PRIx32 " (next word 0x%08" PRIx32 ")",
                      fn, res.u32[0], res.u32[1]);
            else
                CHECK(res.u64 == 0, "%s NULL x, n = 0 (f64): result 0x%016" PRIx64, fn, res.u64);

            POISON_RESULT();
            s = fns[f](data, &res, 4, (coopreduce_dtype)99, g_h, NULL);
            CHECK(s == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "%s dtype 99: %d", fn, (int)s);
            CHECK(UNTOUCHED(), "%s dtype 99 wrote the result", fn);
            CHECK(coopreduce_last_error(g_h)[0] != '\0', "%s dtype 99: no message", fn);

            POISON_RESULT();
            s = fns[f](data, &res, 4, (coopreduce_dtype)-1, g_h, NULL);
            CHECK(s == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "%s dtype -1: %d", fn, (int)s);
            CHECK(UNTOUCHED(), "%s dtype -1 wrote the result", fn);

            /* x misaligned by one byte (and, for f64, by 4 bytes). */
            const unsigned offs[] = {1, 2, 3, 4};
            for (size_t k = 0; k < 4; k++) {
                if (offs[k] % dt_size(dt) == 0)
                    continue;
                POISON_RESULT();
                s = fns[f]((const unsigned char *)data + offs[k], &res, 4, dt, g_h, NULL);
                CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "%s %s x + %u bytes: %d", fn, dt_code(dt),
                      offs[k], (int)s);
                CHECK(UNTOUCHED(), "%s misaligned x wrote the result", fn);
                CHECK(coopreduce_last_error(g_h)[0] != '\0', "%s misaligned x: no message", fn);
            }
            /* result misaligned by one byte: no byte of the buffer may change. */
            {
                unsigned char rb[32];
                uint64_t al8[4];
                unsigned char *base = (unsigned char *)al8;
                memset(base, 0x5a, sizeof al8);
                s = fns[f](data, base + 1, 4, dt, g_h, NULL);
                CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "%s %s result + 1 byte: %d", fn, dt_code(dt),
                      (int)s);
                memset(rb, 0x5a, sizeof rb);
                CHECK(memcmp(base, rb, sizeof al8) == 0, "%s misaligned result was written", fn);
            }
            /* The handle still works after errors. */
            POISON_RESULT();
            s = fns[f](data, &res, 4, dt, g_h, NULL);
            CHECK(s == COOPREDUCE_SUCCESS, "%s after errors: %d", fn, (int)s);
            if (dt == COOPREDUCE_FLOAT32)
                CHECK(f32_from_bits(res.u32[0]) == 10.0f, "%s [1,2,3,4] (f32) = %a", fn,
                      (double)f32_from_bits(res.u32[0]));
            else
                CHECK(res.d == 10.0, "%s [1,2,3,4] (f64) = %a", fn, res.d);
#undef POISON_RESULT
#undef UNTOUCHED
        }
    }

    /* Status strings. */
    for (int i = 0; i <= 13; i++) {
        const char *si = coopreduce_status_string((coopreduce_status)i);
        CHECK(si && si[0] && strcmp(si, "unknown status") != 0, "status_string(%d) = '%s'", i,
              si ? si : "(null)");
        for (int j = 0; j < i; j++) {
            const char *sj = coopreduce_status_string((coopreduce_status)j);
            CHECK(si && sj && strcmp(si, sj) != 0, "status_string(%d) == status_string(%d)", i, j);
        }
    }
    CHECK(strcmp(coopreduce_status_string((coopreduce_status)999), "unknown status") == 0,
          "status_string(999) = '%s'", coopreduce_status_string((coopreduce_status)999));
    CHECK(strcmp(coopreduce_status_string((coopreduce_status)14), "unknown status") == 0,
          "status_string(14) = '%s'", coopreduce_status_string((coopreduce_status)14));
    CHECK(strcmp(coopreduce_status_string((coopreduce_status)-1), "unknown status") == 0,
          "status_string(-1) = '%s'", coopreduce_status_string((coopreduce_status)-1));

    /* Handles. */
    {
        coopreduce_handle *h = NULL;
        coopreduce_status s = coopreduce_create_cpu(&h, -1);
        CHECK(s != COOPREDUCE_SUCCESS, "create_cpu(threads = -1) succeeded");
        if (s != COOPREDUCE_SUCCESS)
            CHECK(coopreduce_last_error(NULL)[0] != '\0', "create_cpu(-1): no thread message");
        else
            coopreduce_destroy(h);
        s = coopreduce_create_cpu(NULL, 0);
        CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "create_cpu(NULL, 0): %d", (int)s);
    }
    CHECK(coopreduce_set_grid_blocks(g_h, 4) == COOPREDUCE_ERROR_WRONG_DEVICE,
          "set_grid_blocks on a CPU handle");
    CHECK(coopreduce_last_error(g_h)[0] != '\0', "set_grid_blocks: no message");
    CHECK(coopreduce_set_grid_blocks(g_h, 0) == COOPREDUCE_ERROR_WRONG_DEVICE,
          "set_grid_blocks(0) on a CPU handle");
    CHECK(coopreduce_set_grid_blocks(NULL, 1) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "set_grid_blocks(NULL)");
    CHECK(coopreduce_set_threads(NULL, 1) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "set_threads(NULL)");
    CHECK(coopreduce_set_threads(g_h, -1) != COOPREDUCE_SUCCESS, "set_threads(-1) succeeded");
    CHECK(coopreduce_set_threads(g_h, 0) == COOPREDUCE_SUCCESS, "set_threads(0)");
    CHECK(coopreduce_reserve(g_h, UINT64_C(1) << 30, COOPREDUCE_FLOAT32) == COOPREDUCE_SUCCESS,
          "reserve on a CPU handle is not a no-op success");
    CHECK(coopreduce_reserve(NULL, 10, COOPREDUCE_FLOAT32) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "reserve(NULL)");
    CHECK(coopreduce_handle_device(NULL) == -2, "handle_device(NULL) = %d",
          coopreduce_handle_device(NULL));
    CHECK(coopreduce_handle_device(g_h) == -1, "handle_device(cpu) = %d",
          coopreduce_handle_device(g_h));
    CHECK(coopreduce_destroy(NULL) == COOPREDUCE_SUCCESS, "destroy(NULL)");

    /* Library information. */
    CHECK(coopreduce_order_version() == 1, "order_version = %d", coopreduce_order_version());
    CHECK(COOPREDUCE_ORDER_VERSION == 1, "header order version");
    {
        char v[32];
        snprintf(v, sizeof v, "%d.%d.%d", COOPREDUCE_VERSION_MAJOR, COOPREDUCE_VERSION_MINOR,
                 COOPREDUCE_VERSION_PATCH);
        CHECK(coopreduce_version_string() && strcmp(coopreduce_version_string(), v) == 0,
              "version_string '%s' vs header %s", coopreduce_version_string(), v);
    }
    CHECK(coopreduce_dtype_size(COOPREDUCE_FLOAT32) == 4, "dtype_size(f32)");
    CHECK(coopreduce_dtype_size(COOPREDUCE_FLOAT64) == 8, "dtype_size(f64)");
    CHECK(coopreduce_dtype_size((coopreduce_dtype)99) == 0, "dtype_size(99)");
    CHECK(coopreduce_dtype_name(COOPREDUCE_FLOAT32) &&
              strcmp(coopreduce_dtype_name(COOPREDUCE_FLOAT32), "float32") == 0,
          "dtype_name(f32)");
    CHECK(coopreduce_dtype_name(COOPREDUCE_FLOAT64) &&
              strcmp(coopreduce_dtype_name(COOPREDUCE_FLOAT64), "float64") == 0,
          "dtype_name(f64)");
    CHECK(coopreduce_dtype_name((coopreduce_dtype)99) == NULL, "dtype_name(99)");

    /* GPU queries that must fail or succeed whatever the machine. */
    {
        int count = -1;
        CHECK(coopreduce_gpu_count(NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT, "gpu_count(NULL)");
        CHECK(coopreduce_gpu_count(&count) == COOPREDUCE_SUCCESS && count >= 0,
              "gpu_count: count %d", count);
        if (count >= 0) {
            coopreduce_gpu_props props;
            coopreduce_handle *gh = NULL;
            CHECK(coopreduce_gpu_props_get(count, &props) == COOPREDUCE_ERROR_NO_GPU,
                  "gpu_props_get(%d) of a GPU that does not exist", count);
            coopreduce_status s = coopreduce_create_gpu(&gh, count);
            CHECK(s == COOPREDUCE_ERROR_NO_GPU, "create_gpu(%d) of a GPU that does not exist: %d",
                  count, (int)s);
            if (s == COOPREDUCE_SUCCESS)
                coopreduce_destroy(gh);
            else
                CHECK(coopreduce_last_error(NULL)[0] != '\0', "create_gpu: no thread message");
        }
    }
}

/* ================================================================================================
 * Part g: more than 2^31 elements
 * ============================================================================================= */
static void test_big(void)
{
    fprintf(stdout, "-- g: more than 2^31 elements\n");
    const char *skip = getenv("COOPREDUCE_TEST_SKIP_BIG");
    if (skip && skip[0] && strcmp(skip, "0") != 0) {
        fprintf(stdout, "SKIP: > 2^31 elements (COOPREDUCE_TEST_SKIP_BIG is set)\n");
        return;
    }
    const uint64_t n = (UINT64_C(1) << 31) + 4099;
    float *x = calloc((size_t)n, sizeof(float));
    if (!x) {
        fprintf(stdout, "SKIP: > 2^31 elements (calloc of %" PRIu64 " bytes failed)\n", n * 4);
        return;
    }
    const uint64_t C = C32, p31 = UINT64_C(1) << 31;
    uint64_t pos[64];
    int np = 0;
    const uint64_t fixed[] = {0, 1, C - 1, C, C + 1, C * C - 1, C * C, C * C + 1,
                              (UINT64_C(1) << 30), p31 - C, p31 - 2, p31 - 1, p31, p31 + 1,
                              p31 + C - 1, p31 + C, p31 + 4095, p31 + 4096, n - 3, n - 2, n - 1,
                              (UINT64_C(1) << 32) / 2 + 2, 127 * C * C + C - 1, 128 * C * C - 1};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        add_size(pos, &np, 64, fixed[i]);
    while (np < 52)
        add_size(pos, &np, 64, rnd_below(n));

    /* Pass 1: nonzero integers in [-1000, 1000]: every node is exact (integers, all partial sums
     * bounded by sum |x_i| < 2^24), so the result must equal the exact sum, correctly rounded. */
    ref_exact ex;
    ref_exact_init(&ex);
    ref_exact_add(&ex, 0.0); /* the zeros */
    for (int i = 0; i < np; i++) {
        int64_t k = (int64_t)rnd_below(2000) - 1000;
        if (k >= 0)
            k++;
        x[pos[i]] = (float)k;
        ref_exact_add(&ex, (double)k);
    }
    double t0 = now_s();
    uint64_t lib = 0;
    coopreduce_status s = lib_bits(g_h, x, n, COOPREDUCE_FLOAT32, &lib, 0);
    double t1 = now_s();
    CHECK(s == COOPREDUCE_SUCCESS, "2^31+4099 (integers): status %d (%s)", (int)s,
          coopreduce_last_error(g_h));
    uint64_t want = f32_bits(ref_exact_to_float(&ex));
    CHECK(lib == want, "2^31+4099 (integers): library 0x%08" PRIx64 " (%a), exact 0x%08" PRIx64
          " (%a)", lib, (double)f32_from_bits((uint32_t)lib), want,
          (double)f32_from_bits((uint32_t)want));

    /* Pass 2: wide-range values (random 24-bit mantissa times 2^e, e in [-20, 20]): library bits
     * must equal the independent implementation run over the same array, within the bound. */
    ref_exact_init(&ex);
    ref_exact ab;
    ref_exact_init(&ab);
    ref_exact_add(&ex, 0.0);
    for (int i = 0; i < np; i++) {
        int64_t m = (int64_t)rnd_below(UINT64_C(1) << 24) - (INT64_C(1) << 23);
        float v = (float)ldexp((double)m, (int)rnd_below(41) - 20 - 23);
        x[pos[i]] = v;
        ref_exact_add(&ex, v);
        ref_exact_add(&ab, fabs((double)v));
    }
    s = lib_bits(g_h, x, n, COOPREDUCE_FLOAT32, &lib, 1);
    CHECK(s == COOPREDUCE_SUCCESS, "2^31+4099 (wide): status %d", (int)s);
    double t2 = now_s();
    uint64_t ref = canon_bits(x, n, COOPREDUCE_FLOAT32);
    double t3 = now_s();
    CHECK(lib == ref, "2^31+4099 (wide, seed %" PRIu64 "): library 0x%08" PRIx64
          " != canonical reference 0x%08" PRIx64, test_seed(), lib, ref);
    {
        float lf = f32_from_bits((uint32_t)lib);
        ref_exact_add(&ex, -(double)lf);
        long double err = fabsl(ref_exact_to_long_double(&ex));
        long double bound = gamma_k(12 * levels_of(n, C), COOPREDUCE_FLOAT32) *
                            ref_exact_to_long_double(&ab);
        CHECK(isfinite(lf) && err <= bound * (1.0L + 1e-12L),
              "2^31+4099 (wide): |lib - exact| = %Lg > bound %Lg", err, bound);
        fprintf(stdout, "   error / bound = %.3g (L = %u)\n", (double)(err / bound),
                levels_of(n, C));
    }

    /* Pass 3: a NaN near the end and an infinity near the start. */
    x[n - 2] = f32_from_bits(0xffc01234u);
    s = lib_bits(g_h, x, n, COOPREDUCE_FLOAT32, &lib, 0);
    CHECK(s == COOPREDUCE_SUCCESS && lib == 0x7fc00000u, "2^31+4099 with NaN: status %d bits 0x%08"
          PRIx64, (int)s, lib);
    x[n - 2] = 0.0f;
    x[2] = -INFINITY;
    s = lib_bits(g_h, x, n, COOPREDUCE_FLOAT32, &lib, 0);
    CHECK(s == COOPREDUCE_SUCCESS && lib == 0xff800000u, "2^31+4099 with -inf: status %d bits 0x%08"
          PRIx64, (int)s, lib);
    fprintf(stdout, "   (library %.2f s per pass, reference %.2f s)\n", t1 - t0, t3 - t2);
    free(x);
}

/* ================================================================================================ */
/* The caller's floating-point environment must not reach the result: another rounding mode, or
 * flush-to-zero / denormals-are-zero (what -ffast-math code sets), would otherwise change bits
 * the GPU computes in round-to-nearest with subnormals. And the caller gets its environment back. */
static void test_fp_environment(void)
{
    enum { N = 1000003 };
    float *x = malloc(N * sizeof *x);
    if (!CHECK(x != NULL, "malloc")) return;
    cr_gen_fill(x, 0, N, COOPREDUCE_FLOAT32, CR_GEN_SIGNED, rnd(), gen_threads());
    uint32_t ref = 0, got = 0;
    coopreduce_sum(x, &ref, N, COOPREDUCE_FLOAT32, g_h, NULL);

    static const int modes[] = {FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};
    for (int i = 0; i < 3; i++) {
        float pz = 0.0f;
        uint32_t zero_bits = 0xA5A5A5A5u;
        fesetround(modes[i]);
        coopreduce_sum(&pz, &zero_bits, 1, COOPREDUCE_FLOAT32, g_h, NULL);
        got = 0;
        coopreduce_sum(x, &got, N, COOPREDUCE_FLOAT32, g_h, NULL);
        int mode_after = fegetround();
        fesetround(FE_TONEAREST);
        CHECK(zero_bits == 0x00000000u, "rounding mode %d: sum of [+0.0] is 0x%08x", modes[i],
              zero_bits);
        CHECK(got == ref, "rounding mode %d: 0x%08x, round-to-nearest gives 0x%08x", modes[i],
              got, ref);
        CHECK(mode_after == modes[i], "rounding mode %d not restored (%d)", modes[i], mode_after);
    }
#ifdef HAVE_MXCSR
    unsigned int csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040u); /* FTZ and DAZ on */
    float sub = 1e-40f;        /* subnormal: 0x000116c2 */
    uint32_t sub_bits = 0;
    coopreduce_sum(&sub, &sub_bits, 1, COOPREDUCE_FLOAT32, g_h, NULL);
    got = 0;
    coopreduce_sum(x, &got, N, COOPREDUCE_FLOAT32, g_h, NULL);
    unsigned int csr_after = _mm_getcsr();
    _mm_setcsr(csr);
    CHECK(sub_bits == f32_bits(1e-40f), "FTZ/DAZ: sum of [1e-40f] is 0x%08x", sub_bits);
    CHECK(got == ref, "FTZ/DAZ: 0x%08x, default environment gives 0x%08x", got, ref);
    CHECK((csr_after & 0x8040u) == 0x8040u, "FTZ/DAZ not restored (mxcsr 0x%x)", csr_after);
#endif
    free(x);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress survives a crash */
    test_seed_init("test_cpu");

    double t0 = now_s();
    test_ref_exact();
    double t1 = now_s();

    coopreduce_status s = coopreduce_create_cpu(&g_h, 0);
    if (!CHECK(s == COOPREDUCE_SUCCESS && g_h, "create_cpu(0): %d (%s)", (int)s,
               coopreduce_last_error(NULL)))
        return check_summary("test_cpu");

    test_errors();
    test_special();
    test_fp_environment();
    double t2 = now_s();
    test_sizes();
    double t3 = now_s();
    test_threads();
    test_concurrent_handles();
    test_unaligned();
    double t4 = now_s();
    test_big();
    double t5 = now_s();
    fprintf(stdout, "   times: ref %.1f s, special/errors %.1f s, sizes %.1f s, threads/unaligned "
            "%.1f s, big %.1f s\n", t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4);

    coopreduce_destroy(g_h);
    return check_summary("test_cpu");
}
