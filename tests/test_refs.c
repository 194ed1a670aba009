/* test_refs.c — the tests' own references tested in their own right.
 *
 *   - ref_exact (the exact big-integer sum of ref_exact.c, the oracle of the CPU and EXACT mode
 *     tests) on hand-computed cases (cancellation, ties, overflow, subnormal results, signed
 *     zeros, NaN and infinities, lazy carries), against IEEE addition of two and three terms, and
 *     against long double Neumaier summation.
 *   - util.h's conversions (ref_decode, ref_encode: integer arithmetic, the float16 and bfloat16
 *     references of the operation and EXACT tests): fixed values, every 16-bit pattern, its
 *     neighbours' midpoints and the doubles next to them, binary32 against the hardware's
 *     conversion, bfloat16 against an integer rounding formula.
 *
 * No library code is under test here but the generator.
 *
 * Seeds: a fresh seed per run, printed; COOPREDUCE_TEST_SEED=<seed> reproduces a run. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "canonical_ref.h"
#include "check.h"
#include "ref_exact.h"
#include "util.h"

static double sum_d(const double *v, int n)
{
    ref_exact r;
    ref_exact_init(&r);
    for (int i = 0; i < n; i++) ref_exact_add(&r, v[i]);
    return ref_exact_to_double(&r);
}

static float sum_f(const double *v, int n)
{
    ref_exact r;
    ref_exact_init(&r);
    for (int i = 0; i < n; i++) ref_exact_add(&r, v[i]);
    return ref_exact_to_float(&r);
}

#define CHECK_D(vals, expect_bits)                                                                 \
    do {                                                                                           \
        const double v_[] = vals;                                                                  \
        uint64_t got_ = f64_bits(sum_d(v_, (int)(sizeof v_ / sizeof v_[0])));                      \
        CHECK(got_ == (uint64_t)(expect_bits),                                                     \
              "to_double(%s) = 0x%016" PRIx64 " expected 0x%016" PRIx64, #vals, got_,              \
              (uint64_t)(expect_bits));                                                            \
    } while (0)

#define CHECK_F(vals, expect_bits)                                                                 \
    do {                                                                                           \
        const double v_[] = vals;                                                                  \
        uint32_t got_ = f32_bits(sum_f(v_, (int)(sizeof v_ / sizeof v_[0])));                      \
        CHECK(got_ == (uint32_t)(expect_bits),                                                     \
              "to_float(%s) = 0x%08" PRIx32 " expected 0x%08" PRIx32, #vals, got_,                 \
              (uint32_t)(expect_bits));                                                            \
    } while (0)

#define L_(...)                                                                                    \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }

/* A random finite double with a random exponent over the whole range (subnormals included). */
static double random_double_any(void)
{
    for (;;) {
        uint64_t u = rnd();
        unsigned e = (unsigned)((u >> 52) & 0x7ff);
        if (e == 0x7ff) continue;
        return f64_from_bits(u);
    }
}

static float random_float_any(void)
{
    for (;;) {
        uint32_t u = (uint32_t)rnd();
        if (((u >> 23) & 0xff) == 0xff) continue;
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
    const double p24 = 0x1p-24, p60 = 0x1p-60;

    /* Cancellation and exactness. */
    CHECK_D(L_(1e30, 1.0, -1e30), f64_bits(1.0));
    CHECK_F(L_(1e30, 1.0, -1e30), f32_bits(1.0f));
    CHECK_D(L_(0x1p1000, 0x1p-1074, -0x1p1000), 1u);
    CHECK_D(L_(0x1p-1074, 0x1p-1074, 0x1p-1074), 3u);
    CHECK_D(L_(-0x1p-1074, -0x1p-1074, -0x1p-1074), UINT64_C(0x8000000000000003));

    /* float32 rounding, ties to even, and the double-rounding trap. */
    CHECK_F(L_(1.0, p24), f32_bits(1.0f));                          /* tie -> even (down) */
    CHECK_F(L_(1.0, 3 * p24), f32_bits(1.0f + 0x1p-22f));           /* tie -> even (up) */
    CHECK_F(L_(1.0, p24, p60), f32_bits(1.0f + 0x1p-23f));          /* just above the tie */
    CHECK_F(L_(1.0, p24, -p60), f32_bits(1.0f));                    /* just below the tie */
    CHECK_F(L_(1.0, 3 * p24, -0x1p-80), f32_bits(1.0f + 0x1p-23f)); /* via double: 1 + 2^-22 */
    CHECK_F(L_(16777216.0, 1.0, 0x1p-30), f32_bits(16777218.0f));   /* via double: 16777216 */
    CHECK_F(L_(-16777216.0, -1.0, -0x1p-30), f32_bits(-16777218.0f));
    CHECK_F(L_(0x1p-149, 0x1p-150, -0x1p-1074), 1u);    /* subnormal, below the tie */
    CHECK_F(L_(1.0, 0x1p-25, 0x1p-25), f32_bits(1.0f)); /* sum lands on a tie */
    CHECK_F(L_(16777216.0, 1.0, 1.0), f32_bits(16777218.0f));
    CHECK_F(L_(16777216.0, 1.0), f32_bits(16777216.0f));
    CHECK_F(L_(16777216.0, 3.0), f32_bits(16777220.0f)); /* 16777219: tie -> even */
    CHECK_F(L_(16777216.0, 5.0), f32_bits(16777220.0f)); /* 16777221: tie -> even */
    CHECK_F(L_(-16777216.0, -3.0), f32_bits(-16777220.0f));
    CHECK_D(L_(1.0, 0x1p-53), f64_bits(1.0));
    CHECK_D(L_(1.0, 0x1p-53, 0x1p-100), f64_bits(1.0 + 0x1p-52));
    CHECK_D(L_(1.0, 0x1p-52, 0x1p-53), f64_bits(1.0 + 0x1p-51));
    CHECK_D(L_(1.0, 0x1p-53, -0x1p-1074), f64_bits(1.0));          /* just below the tie */
    CHECK_D(L_(1.0, 0x1p-53, 0x1p-1074), f64_bits(1.0 + 0x1p-52)); /* just above the tie */

    /* Overflow. */
    CHECK_D(L_(DBL_MAX, DBL_MAX), f64_bits(INFINITY));
    CHECK_D(L_(-DBL_MAX, -DBL_MAX), f64_bits(-INFINITY));
    CHECK_D(L_(DBL_MAX, 0x1p970), f64_bits(INFINITY)); /* half an ulp: tie -> 2^1024 */
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
    CHECK_F(L_(0x1p-150, 0x1p-150, 0x1p-150), 2u); /* 1.5 * 2^-149: tie -> 2 */
    CHECK_F(L_(0x1p-150), 0u);                     /* 0.5 * 2^-149: tie -> +0 */
    CHECK_F(L_(-0x1p-150), 0x80000000u);           /* -> -0 */
    CHECK_F(L_(0x1p-150, 0x1p-200), 1u);
    CHECK_F(L_(0x1p-149, 0x1p-149, 0x1p-150), 2u);           /* 2.5: tie -> 2 */
    CHECK_F(L_(0x1p-149, 0x1p-149, 0x1p-149, 0x1p-150), 4u); /* 3.5: tie -> 4 */
    CHECK_F(L_((double)FLT_MIN, -0x1p-149), 0x007fffffu);
    CHECK_F(L_(0x1p-1074), 0u);
    CHECK_F(L_(-0x1p-1074), 0x80000000u);
    CHECK_F(L_((double)FLT_MIN, -0x1p-1074), 0x00800000u); /* rounds back up to FLT_MIN */

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
        for (uint32_t i = 0; i < cnt; i++) ref_exact_add(&r, -0x1p-1074);
        CHECK(f64_bits(ref_exact_to_double(&r)) == (UINT64_C(0x8000000000000000) | cnt),
              "sum of %u x -2^-1074 wrong: 0x%016" PRIx64, cnt, f64_bits(ref_exact_to_double(&r)));
        ref_exact_init(&r);
        for (uint32_t i = 0; i < cnt; i++) ref_exact_add(&r, DBL_MAX);
        CHECK(isinf(ref_exact_to_double(&r)), "%u x DBL_MAX is not inf", cnt);
        long double ld = ref_exact_to_long_double(&r);
        long double want = (long double)cnt * (long double)DBL_MAX;
        CHECK(fabsl(ld - want) <= 1e-17L * want, "to_long_double(%u DBL_MAX) = %Lg", cnt, ld);
        ref_exact_add(&r, 1.0);
        for (uint32_t i = 0; i < cnt; i++) ref_exact_add(&r, -DBL_MAX);
        CHECK(f64_bits(ref_exact_to_double(&r)) == f64_bits(1.0),
              "cnt DBL_MAX + 1 - cnt DBL_MAX = %a", ref_exact_to_double(&r));
        /* k1 2^-1000 - k2 2^-1074 rounds to k1 2^-1000 (the difference is far below half an ulp) */
        ref_exact_init(&r);
        for (uint32_t i = 0; i < cnt; i++) ref_exact_add(&r, (i & 1) ? -0x1p-1074 : 0x1p-1000);
        double want2 = (double)((cnt + 1) / 2) * 0x1p-1000;
        CHECK(ref_exact_to_double(&r) == want2, "mixed lazy-carry sum = %a, want %a",
              ref_exact_to_double(&r), want2);
        CHECK(ref_exact_sign(&r) == 1, "sign of the mixed lazy-carry sum");
        for (uint32_t i = 0; i < cnt; i++) ref_exact_add(&r, (i & 1) ? 0x1p-1074 : -0x1p-1000);
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
            if (!isfinite(b)) b = 1.0;
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
                CHECK(0, "to_float(%a + %a) = %a, IEEE gives %a", (double)a, (double)b, (double)got,
                      (double)hw);
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
                CHECK(0, "to_double(%a + %a + %a) = %a, want %a", (double)a, (double)b, (double)c,
                      gd, exact);
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
            for (uint64_t i = 0; i < n; i++) x[i] = ldexp(x[i], (int)rnd_below(80) - 40);
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
              "to_double %a vs Neumaier %La (kind %s seed %" PRIu64 ")", d, neu, cr_gen_name(kind),
              seed);
        CHECK(fabsl(ld - neu) <= 1e-15L * fabsl(neu), "to_long_double %La vs Neumaier %La", ld,
              neu);
        free(x);
    }
}

/* For every finite positive pattern h of a binary format narrower than binary64 (and its
 * negative): h round-trips; the midpoint to the next pattern rounds to the even one of the two,
 * and the doubles on either side of the midpoint to the nearer. Beyond the largest finite
 * value, the midpoint to 2^(emax+1) overflows. Returns the number of failures. */
static unsigned long encode_every_pattern(int eb, int mb, const char *name)
{
    const uint64_t inf = ((1ull << eb) - 1) << mb, sign = 1ull << (eb + mb);
    unsigned long bad = 0;
    for (uint64_t h = 0; h < inf; h++) {
        for (int neg = 0; neg < 2; neg++) {
            const uint64_t s = neg ? sign : 0;
            const double a = ref_decode(s | h, eb, mb);
            /* the next pattern up in magnitude; past the largest finite, 2^(emax+1) */
            const double b = h + 1 < inf ? ref_decode(s | (h + 1), eb, mb)
                                         : (neg ? -2.0 : 2.0) * ldexp(1.0, (1 << (eb - 1)) - 1);
            const uint64_t even = (h & 1) ? h + 1 : h; /* h + 1 == inf when it overflows: even */
            const double mid = a / 2 + b / 2;          /* exact: no underflow below 2^-1022 */
            const uint64_t got_a = ref_encode(a, eb, mb), got_mid = ref_encode(mid, eb, mb);
            const uint64_t got_lo = ref_encode(nextafter(mid, a), eb, mb);
            const uint64_t got_hi = ref_encode(nextafter(mid, b), eb, mb);
            if (got_a != (s | h) || got_mid != (s | even) || got_lo != (s | h) ||
                got_hi != (s | (h + 1))) {
                if (bad++ < 5)
                    CHECK(0,
                          "%s 0x%llx: encode %llx, midpoint %llx (want %llx), below %llx, above "
                          "%llx",
                          name, (unsigned long long)(s | h), (unsigned long long)got_a,
                          (unsigned long long)got_mid, (unsigned long long)(s | even),
                          (unsigned long long)got_lo, (unsigned long long)got_hi);
            }
        }
    }
    return bad;
}

static void test_conversions(void)
{
    /* Decoding: fixed values, and bfloat16 as the high half of a binary32 (for every pattern). */
    static const struct {
        uint16_t bits;
        double value;
    } f16[] = {{0x0000, 0.0},      {0x3c00, 1.0},      {0xc000, -2.0},        {0x3555, 0x1.554p-2},
               {0x7bff, 65504.0},  {0x0400, 0x1p-14},  {0x03ff, 0x1.ff8p-15}, {0x0001, 0x1p-24},
               {0x8001, -0x1p-24}, {0x7c00, INFINITY}, {0xfc00, -INFINITY}};
    for (size_t i = 0; i < sizeof f16 / sizeof f16[0]; i++) {
        const double v = ref_f16_to_double(f16[i].bits);
        CHECK(v == f16[i].value && !signbit(v) == !(f16[i].bits & 0x8000),
              "f16 0x%04x decodes to %a, want %a", f16[i].bits, v, f16[i].value);
        CHECK(ref_f16_from_double(f16[i].value) == f16[i].bits, "f16 of %a: 0x%04x, want 0x%04x",
              f16[i].value, ref_f16_from_double(f16[i].value), f16[i].bits);
    }
    CHECK(signbit(ref_f16_to_double(0x8000)) && ref_f16_to_double(0x8000) == 0, "f16 -0");
    CHECK(isnan(ref_f16_to_double(0x7e00)) && isnan(ref_f16_to_double(0xfc01)), "f16 NaN");
    unsigned long bad = 0;
    for (uint32_t b = 0; b < 0x10000u; b++) {
        const double want = f32_from_bits(b << 16), got = ref_bf16_to_double((uint16_t)b);
        if (!(got == want && !signbit(got) == !signbit(want)) && !(got != got && want != want))
            bad++;
    }
    CHECK(bad == 0, "%lu bfloat16 patterns decode unlike binary32's high half", bad);

    /* Encoding: every pattern and its midpoints. */
    CHECK(encode_every_pattern(5, 10, "f16") == 0, "float16 encoding");
    CHECK(encode_every_pattern(8, 7, "bf16") == 0, "bfloat16 encoding");
    CHECK(ref_f16_from_double(0x1p-25) == 0 && ref_f16_from_double(-0x1p-25) == 0x8000 &&
              ref_f16_from_double(nextafter(0x1p-25, 1)) == 1 && ref_f16_from_double(1e-300) == 0,
          "float16 below half the smallest subnormal");
    CHECK(ref_f16_from_double(NAN) == 0x7e00 && ref_bf16_from_double(-NAN) == 0x7fc0 &&
              ref_encode(NAN, 8, 23) == 0x7fc00000u,
          "NaN encodes as the canonical NaN");
    CHECK(ref_f16_from_double(1e300) == 0x7c00 && ref_bf16_from_double(-1e300) == 0xff80 &&
              ref_f16_from_double(-INFINITY) == 0xfc00 && ref_f16_from_double(-0.0) == 0x8000,
          "infinities, overflow, -0");

    /* binary32 against the hardware conversion, binary64 against itself, bfloat16 against the
     * integer formula on binary32 values: random doubles of every kind. */
    unsigned long bad32 = 0, bad64 = 0, badbf = 0;
    for (int t = 0; t < 1000000; t++) {
        double v;
        switch (t % 4) {
        case 0: v = f64_from_bits(rnd()); break; /* any double */
        case 1:
            v = ldexp((double)(rnd() >> 11), (int)rnd_below(320) - 213);
            break; /* float's range */
        case 2: {  /* next to a float midpoint */
            const float f = f32_from_bits((uint32_t)rnd() & 0x7f7fffffu);
            v = (double)f + ((double)nextafterf(f, INFINITY) - (double)f) / 2;
            if (rnd() & 1) v = nextafter(v, (rnd() & 1) ? INFINITY : 0);
            if (rnd() & 1) v = -v;
            break;
        }
        default: v = (double)f32_from_bits((uint32_t)rnd()); break; /* a float */
        }
        if (v != v) continue;
        bad32 += ref_encode(v, 8, 23) != f32_bits((float)v);
        bad64 += ref_encode(v, 11, 52) != f64_bits(v);
        if (t % 4 == 3 && !isinf(v)) {
            const uint32_t u = f32_bits((float)v);
            const uint16_t want = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
            badbf += ref_bf16_from_double(v) != want;
        }
    }
    CHECK(bad32 == 0, "%lu doubles encode to binary32 unlike the hardware", bad32);
    CHECK(bad64 == 0, "%lu doubles do not encode to themselves", bad64);
    CHECK(badbf == 0, "%lu floats encode to bfloat16 unlike the integer formula", badbf);
}

CPU_TEST_MAIN("test_refs", {"ref_exact", test_ref_exact}, {"conversions", test_conversions})
