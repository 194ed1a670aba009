/* test_exact_cpu.c — EXACT mode on a CPU handle (src/cpu/exact.c) against the independent
 * big-integer oracle of tests/ref_exact.c (no code shared with the library's superaccumulator).
 *
 * Every case: the oracle's correctly rounded result, bit for bit, for thread counts 1, 2 and 13
 * (and every online CPU), for SUM of float32, float64, float16 and bfloat16 (float32 result, and
 * narrowed straight to the input type) and DOT of float32 and float64. Data: heavy cancellation,
 * sums on a rounding tie (and a tie broken by a tiny tail), all-subnormal inputs, the full
 * exponent range, alternating huge and tiny values, uniform values, signed zeros, NaN and
 * infinity rules, overflow to infinity; one array sorted, reversed and shuffled (same bits);
 * sizes 0, 1, small primes, 2^k +- 1 up to 2^24. Also: the caller's rounding mode and FTZ/DAZ do
 * not change the result and are restored.
 *
 * COOPREDUCE_TEST_SEED=S replays a run (the seed is printed). */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "coopreduce.h"
#include "ref_exact.h"
#include "util.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "exact_data.h"
#include "gen.h"

/* ---- the generated distributions of `coopreduce gen` and `bench --data` -------------------- */
static void check_case(const char *what, coopreduce_op op, coopreduce_dtype dt, const void *x,
                       const void *y, uint64_t n);

/* Their properties for one dtype (prec significand bits, normal exponents [emin, emax]), and
 * the exact sum and dot of each against the oracle, at sizes 0, 1, primes and 2^k +- 1. */
static void check_generated(coopreduce_dtype dt, int prec, int emin, int emax, void *x, void *y)
{
    static const cr_gen_kind kinds[] = {CR_GEN_UNIFORM, CR_GEN_NORMAL, CR_GEN_WIDE,
                                        CR_GEN_SUBNORMAL, CR_GEN_CANCEL};
    static const uint64_t ns[] = {0, 1, 2, 97, 4095, 4097, 65537, 1048577};
    const char *dn = coopreduce_dtype_name(dt);
    const double tiny = ldexp(1.0, emin);
    for (int k = 0; k < 5; k++)
        for (int s = 0; s < 8; s++) {
            const uint64_t n = ns[s];
            CHECK(cr_gen_fill(x, 0, n, dt, kinds[k], 7, 2) == 0 &&
                      cr_gen_fill(y, 0, n, dt, kinds[k], 8, 2) == 0,
                  "gen %s %s", cr_gen_name(kinds[k]), dn);
            int lo = 9999, hi = -9999, bad = 0;
            static ref_exact all, res;
            ref_exact_init(&all);
            ref_exact_init(&res);
            for (uint64_t i = 0; i < n; i++) {
                const double v = load_value(x, i, dt);
                const int e = v != 0 ? ilogb(v) : -9999;
                if (kinds[k] == CR_GEN_SUBNORMAL) bad |= !(v != 0 && fabs(v) < tiny);
                if (kinds[k] == CR_GEN_WIDE) {
                    bad |= !(fabs(v) >= tiny && isfinite(v));
                    lo = e < lo ? e : lo;
                    hi = e > hi ? e : hi;
                }
                if (kinds[k] == CR_GEN_CANCEL) {
                    ref_exact_add(&all, v);
                    if (cr_gen_cancel_residue(7, i)) {
                        ref_exact_add(&res, v);
                        bad |= !(fabs(v) >= tiny && fabs(v) < ldexp(1.0, emin + 9));
                    } else if (i % 2) {
                        bad |= v != -load_value(x, i - 1, dt) || v == 0;
                    }
                }
            }
            CHECK(!bad, "gen %s %s n=%llu: a value outside the distribution",
                  cr_gen_name(kinds[k]), dn, (unsigned long long)n);
            if (kinds[k] == CR_GEN_WIDE && n >= 65537)
                CHECK(lo == emin && hi == emax, "gen wide %s: exponents [%d, %d], want [%d, %d]",
                      dn, lo, hi, emin, emax);
            if (kinds[k] == CR_GEN_CANCEL && n % 2 == 0) /* whole pairs: the residues' sum */
                CHECK(ref_exact_to_double(&all) == ref_exact_to_double(&res) &&
                          (n < 4095 || ref_exact_to_double(&res) != 0),
                      "gen cancel %s n=%llu: sum %a, residues %a", dn, (unsigned long long)n,
                      ref_exact_to_double(&all), ref_exact_to_double(&res));
            if (n > 65537 && dt != COOPREDUCE_FLOAT32 && dt != COOPREDUCE_FLOAT64) continue;
            check_case(cr_gen_name(kinds[k]), COOPREDUCE_OP_SUM, dt, x, NULL, n);
            if (dt == COOPREDUCE_FLOAT32 || dt == COOPREDUCE_FLOAT64)
                check_case(cr_gen_name(kinds[k]), COOPREDUCE_OP_DOT, dt, x, y, n);
        }
}

/* ---- one case ----------------------------------------------------------------------------------- */
static coopreduce_handle *cpu;

/* The expected result bytes (rsize of them) from the oracle. */
static size_t oracle(coopreduce_op op, coopreduce_dtype dt, int narrow, const void *x,
                     const void *y, uint64_t n, unsigned char *out)
{
    if (op == COOPREDUCE_OP_DOT && dt == COOPREDUCE_FLOAT64) {
        static ref_wide w;
        ref_wide_init(&w);
        for (uint64_t i = 0; i < n; i++)
            ref_wide_add_product(&w, ((const double *)x)[i], ((const double *)y)[i]);
        double v = ref_wide_to_double(&w);
        memcpy(out, &v, 8);
        return 8;
    }
    static ref_exact r;
    ref_exact_init(&r);
    for (uint64_t i = 0; i < n; i++)
        ref_exact_add(&r, op == COOPREDUCE_OP_DOT ? load_value(x, i, dt) * load_value(y, i, dt)
                                                  : load_value(x, i, dt));
    if (dt == COOPREDUCE_FLOAT64) {
        double v = ref_exact_to_double(&r);
        memcpy(out, &v, 8);
        return 8;
    }
    if (narrow && dt == COOPREDUCE_FLOAT16) {
        uint16_t b = ref_f16_from_double(ref_exact_round(&r, 11, -14));
        memcpy(out, &b, 2);
        return 2;
    }
    if (narrow && dt == COOPREDUCE_BFLOAT16) {
        uint16_t b = ref_bf16_from_double(ref_exact_round(&r, 8, -126));
        memcpy(out, &b, 2);
        return 2;
    }
    float f = ref_exact_to_float(&r);
    memcpy(out, &f, 4);
    return 4;
}

static const int thread_counts[] = {1, 2, 13, 0};

static void check_case(const char *what, coopreduce_op op, coopreduce_dtype dt, const void *x,
                       const void *y, uint64_t n)
{
    for (int narrow = 0; narrow <= (dt == COOPREDUCE_FLOAT16 || dt == COOPREDUCE_BFLOAT16);
         narrow++) {
        unsigned char want[8], got[16];
        size_t rs = oracle(op, dt, narrow, x, y, n, want);
        coopreduce_set_narrow_result(cpu, narrow);
        for (int t = 0; t < 4; t++) {
            if (t && n < 100000 && thread_counts[t] != 0) continue; /* one thread does it all */
            coopreduce_set_threads(cpu, thread_counts[t]);
            memset(got, 0xA5, sizeof got);
            coopreduce_status s = coopreduce_reduce(op, x, y, got, n, dt, cpu, NULL);
            char a[40], b[40];
            hex_bytes(a, sizeof a, want, rs);
            hex_bytes(b, sizeof b, got, rs);
            CHECK(s == COOPREDUCE_SUCCESS && memcmp(want, got, rs) == 0 && got[rs] == 0xA5,
                  "%s %s %s n=%llu narrow=%d threads=%d: status %d, got %s, want %s", what,
                  coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)n, narrow,
                  thread_counts[t], (int)s, b, a);
        }
    }
    coopreduce_set_narrow_result(cpu, 0);
    coopreduce_set_threads(cpu, 0);
}

/* EXACT mode sums every float dtype (float_dtypes: a new one is swept too); the permutations
 * and the longest cases are float32 and float64, by name. */
static coopreduce_dtype dts[COOPREDUCE_DTYPE_COUNT];
static int ndts;
static const coopreduce_dtype f32_f64[2] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64};

static void sum_list(coopreduce_dtype dt, const char *what, const double *v, uint64_t n)
{
    void *x = malloc(n * 8 + 8);
    for (uint64_t i = 0; i < n; i++) store(dt, x, i, v[i]);
    check_case(what, COOPREDUCE_OP_SUM, dt, x, NULL, n);
    free(x);
}

static int cmp_abs(const void *a, const void *b)
{
    double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
    return x < y ? -1 : x > y;
}

/* The bins' bound (exact.c, "binned halves"): v[0 .. n) in one group of eight binades, values
 * of its top binade (2^top: significands in [1.75, 2), positive in the first half, negative in
 * the second) but one in sixteen, of its bottom binade (2^bottom: random bits and sign;
 * subnormals, 52 random bits at 2^-1074, below 2^-1022). One rnd() an element. */
static void full_bin(double *v, uint64_t n, int top, int bottom)
{
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t r = rnd();
        if (i % 16) {
            const double m = 1.75 + ldexp((double)(r >> 14), -52);
            v[i] = ldexp(i < n / 2 ? m : -m, top);
        } else if (bottom < -1022) {
            const double m = ldexp((double)((r >> 12) | 1u), -1074);
            v[i] = r & 1 ? m : -m;
        } else {
            const double m = ldexp((double)((r >> 11) | (1ull << 52)), -52);
            v[i] = ldexp(r & 1 ? m : -m, bottom);
        }
    }
}

int main(void)
{
    test_seed_init("test_exact_cpu");
    if (coopreduce_create_cpu(&cpu, 0) != COOPREDUCE_SUCCESS) {
        printf("cannot create a CPU handle\n");
        return 1;
    }
    CHECK(coopreduce_set_mode(cpu, COOPREDUCE_MODE_EXACT) == COOPREDUCE_SUCCESS, "set_mode");

    /* ---- narrow blocks (exact.c): 4096 float32 leaves within 17 binades are summed in
     * binary64, wider blocks must not be. A block at a float32 tie (4093 x 2^E + 2^(E-13),
     * which rounds to even, down) with two tiny leaves, 2^(E-k) (1 + 2^-23) and -2^(E-k), that
     * add one unit 2^(E-k-23) and so must round it up: a binary64 sum of the block loses that
     * unit from k = 19 on, so a block of spread k > 17 taking the binary64 path rounds down. */
    for (int e = 0; e < 2; e++) {
        static const int spreads[] = {13, 17, 18, 19, 20, 21, 24, 30};
        const int E = e ? -90 : 10;
        for (size_t s = 0; s < sizeof spreads / sizeof spreads[0]; s++) {
            const int k = spreads[s];
            static double v[4096];
            for (int i = 0; i < 4096; i++) v[i] = ldexp(1, E);
            v[3] = ldexp(1, E - 13);
            v[5] = ldexp(1 + 0x1p-23, E - k);
            v[7] = -ldexp(1, E - k);
            char what[80];
            snprintf(what, sizeof what, "a tie block at 2^%d, tiny leaves at 2^%d", E, E - k);
            sum_list(COOPREDUCE_FLOAT32, what, v, 4096);
        }
    }

    /* ---- float64 narrow blocks (exact.c): 2048 leaves within 30 binades are summed by
     * extraction against an anchor, wider blocks by the bins. A block whose total is a tie,
     * 2^(E-1) (1 + 2^-52) + 2^(E-1) = 2^E (1 + 2^-53), among pairs x, -x of random
     * significands (their rounding errors fill the accumulators), and two tiny leaves,
     * 2^(E-k) (1 + 2^-52) and -2^(E-k), that add one unit 2^(E-k-52) and so must round the tie
     * up. E near the top of the range (the anchor's limit), near the bottom (subnormal leaves),
     * and in between; k on both sides of the bound. */
    {
        static const int tops[] = {10, -1000, 1000, 1011, 1023};
        static const int spreads[] = {8, 20, 29, 30, 31, 34, 40, 60};
        static double v[2048];
        for (size_t t = 0; t < sizeof tops / sizeof tops[0]; t++)
            for (size_t s = 0; s < sizeof spreads / sizeof spreads[0]; s++) {
                const int E = tops[t], k = spreads[s];
                v[0] = ldexp(1 + 0x1p-52, E - 1);
                v[1] = ldexp(1, E - 1);
                v[2] = ldexp(1 + 0x1p-52, E - k);
                v[3] = -ldexp(1, E - k);
                for (int i = 4; i < 2048; i += 2) {
                    const uint64_t r = rnd();
                    const double x = ldexp(1 + ldexp((double)(r >> 12), -52), E - 1 - (int)(r & 3));
                    v[i] = r & 4 ? x : -x;
                    v[i + 1] = -v[i];
                }
                for (int i = 2047; i > 0; i--) { /* Fisher-Yates */
                    const int m = (int)(rnd() % (uint64_t)(i + 1));
                    const double tmp = v[i];
                    v[i] = v[m];
                    v[m] = tmp;
                }
                char what[96];
                snprintf(what, sizeof what, "a float64 tie block at 2^%d, tiny leaves at 2^%d", E,
                         E - k);
                sum_list(COOPREDUCE_FLOAT64, what, v, 2048);
                /* and a narrow block without the tiny leaves before it, whose anchor the block
                 * of the tie is tried against first (exact.c, narrow_add64) */
                static double w[4096];
                for (int i = 0; i < 2048; i += 2) { /* pairs x, -x: the tie stays a tie */
                    const uint64_t r = rnd();
                    w[i] = ldexp(1 + ldexp((double)(r >> 12), -52), E - 1 - (int)(r & 3));
                    w[i + 1] = -w[i];
                }
                memcpy(w + 2048, v, sizeof v);
                sum_list(COOPREDUCE_FLOAT64, what, w, 4096);
            }
    }

    /* ---- hand-made cases ---- */
    const double M = 1e30, T32 = 0x1p-24, T64 = 0x1p-53;
    ndts = float_dtypes(dts);
    for (int d = 0; d < ndts; d++) {
        coopreduce_dtype dt = dts[d];
        int big = dt == COOPREDUCE_FLOAT16 ? 0 : 1;
        double H = big ? M : 60000.0;
        const double c1[] = {H, 1, -H};
        sum_list(dt, "1e30 1 -1e30", c1, 3);
        const double c2[] = {H, 1, -H, H, -1, -H, H, 3, -H, 0.5};
        sum_list(dt, "longer cancellation", c2, 10);
        /* The same cancellations in longer arrays (past the CPU's 8-way main loop of exponent
         * buckets), shuffled: a plain binary64 sum loses the small terms for float32 and
         * bfloat16 (2^100 + 1), so only exact accumulation passes. */
        {
            double v[203];
            const double B = big ? 0x1p100 : 32768.0, s = big ? 1.0 : 0x1p-24;
            for (int i = 0; i < 200; i += 2) {
                v[i] = B;
                v[i + 1] = -B;
            }
            v[200] = s;
            v[201] = 3 * s;
            v[202] = -0.0;
            for (int i = 202; i > 0; i--) { /* Fisher-Yates */
                const int k = (int)(rnd() % (uint64_t)(i + 1));
                const double t = v[i];
                v[i] = v[k];
                v[k] = t;
            }
            sum_list(dt, "2^100 pairs around small terms, shuffled", v, 203);
            for (int i = 0; i < 203; i++)
                v[i] = (i % 3 == 0 ? B : i % 3 == 1 ? s : -B) * (i % 2 ? 1 : -1);
            sum_list(dt, "tiled 2^100 1 -2^100", v, 203);
        }
        const double z1[] = {-0.0, -0.0, -0.0};
        sum_list(dt, "all -0", z1, 3);
        const double z2[] = {-0.0, 0.0, -0.0};
        sum_list(dt, "-0 +0", z2, 3);
        const double z3[] = {1, -1, -0.0};
        sum_list(dt, "cancel to zero then -0", z3, 3);
        sum_list(dt, "empty", z1, 0);
        const double s1[] = {1, NAN, 2};
        sum_list(dt, "NaN", s1, 3);
        const double s2[] = {INFINITY, 1, INFINITY};
        sum_list(dt, "+inf", s2, 3);
        const double s3[] = {-INFINITY, 1e3, -5};
        sum_list(dt, "-inf", s3, 3);
        const double s4[] = {INFINITY, 1, -INFINITY};
        sum_list(dt, "+inf -inf", s4, 3);
        const double s5[] = {INFINITY, NAN, INFINITY};
        sum_list(dt, "inf NaN", s5, 3);
        const double s6[] = {-INFINITY, -INFINITY, -1};
        sum_list(dt, "-inf -inf", s6, 3);
    }
    /* ties: exactly halfway (to even), and halfway plus a tiny tail (up) */
    const double t1[] = {1.0, T32}, t2[] = {1.0 + 2 * T32, T32}, t3[] = {1.0, T32, 0x1p-149};
    const double t4[] = {1.0, T32, 0x1p-149, -0x1p-149};
    sum_list(COOPREDUCE_FLOAT32, "tie to even (down)", t1, 2);
    sum_list(COOPREDUCE_FLOAT32, "tie to even (up)", t2, 2);
    sum_list(COOPREDUCE_FLOAT32, "tie broken by a subnormal", t3, 3);
    sum_list(COOPREDUCE_FLOAT32, "tie restored", t4, 4);
    const double u1[] = {1.0, T64}, u2[] = {1.0 + 2 * T64, T64}, u3[] = {1.0, T64, 0x1p-1074};
    const double u4[] = {0x1p1000, 0x1p947, 0x1p-1074, -0x1p-1074, -0x1p-1074};
    sum_list(COOPREDUCE_FLOAT64, "tie to even (down)", u1, 2);
    sum_list(COOPREDUCE_FLOAT64, "tie to even (up)", u2, 2);
    sum_list(COOPREDUCE_FLOAT64, "tie broken by 2^-1074", u3, 3);
    sum_list(COOPREDUCE_FLOAT64, "tie minus 2^-1074", u4, 5);
    const double h1[] = {1.0, 0x1p-11}, h2[] = {1.0, 0x1p-8}, h3[] = {1.0, 0x1p-9, 0x1p-24};
    sum_list(COOPREDUCE_FLOAT16, "narrow tie", h1, 2);
    sum_list(COOPREDUCE_BFLOAT16, "narrow tie", h2, 2);
    sum_list(COOPREDUCE_BFLOAT16, "narrow tie + tail", h3, 3);
    /* overflow */
    const double o1[] = {DBL_MAX, DBL_MAX}, o2[] = {DBL_MAX, DBL_MAX, -DBL_MAX};
    const double o3[] = {DBL_MAX, 0x1p970}, o4[] = {DBL_MAX, 0x1p970, -0x1p-1074};
    const double o5[] = {-DBL_MAX, -0x1p971};
    sum_list(COOPREDUCE_FLOAT64, "overflow", o1, 2);
    sum_list(COOPREDUCE_FLOAT64, "overflow undone", o2, 3);
    sum_list(COOPREDUCE_FLOAT64, "overflow on a tie", o3, 2);
    sum_list(COOPREDUCE_FLOAT64, "just below the overflow tie", o4, 3);
    sum_list(COOPREDUCE_FLOAT64, "negative overflow", o5, 2);
    const double f1[] = {FLT_MAX, FLT_MAX, -FLT_MAX}, f2[] = {FLT_MAX, 0x1p103};
    const double f3[] = {FLT_MAX, 0x1p103, -0x1p-149}, f4[] = {FLT_MAX, FLT_MAX};
    sum_list(COOPREDUCE_FLOAT32, "overflow undone", f1, 3);
    sum_list(COOPREDUCE_FLOAT32, "overflow on a tie", f2, 2);
    sum_list(COOPREDUCE_FLOAT32, "just below the overflow tie", f3, 3);
    sum_list(COOPREDUCE_FLOAT32, "overflow", f4, 2);
    const double g1[] = {60000, 60000, -60000}, g2[] = {65504, 16};
    sum_list(COOPREDUCE_FLOAT16, "narrow overflow", g1, 3);
    sum_list(COOPREDUCE_FLOAT16, "narrow overflow on a tie", g2, 2);
    /* dot specials and tiny / huge float64 products */
    {
        const double xd[] = {1e300, -1e300, 0x1p-1000, 3, 0x1p-600, -0.0};
        const double yd[] = {1e300, 1e300, 0x1p-1000, 0x1p-1074, 0x1p-600, 5};
        check_case("huge and tiny products", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xd, yd, 6);
        check_case("tiny products only", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xd + 2, yd + 2, 1);
        const double xn[] = {-0x1p-1000}, yn[] = {0x1p-1000};
        check_case("negative product below 2^-1074", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xn, yn,
                   1);
        const double xz[] = {-0.0, 0.0, 2}, yz[] = {1, -3, -0.0};
        check_case("-0 products", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xz, yz, 3);
        /* float64 dots on a tie, every product exact in binary64 (so each product's error half
         * is zero and must add nothing), normal factors only: 1 + 2^-53 to even (down), the
         * same after 2^-53 x 3 and pairs that cancel, and the tie broken by a tiny product */
        const double xt[] = {1, 0x1p-53, 3, -3, 0x1p-500, -0x1p-500, 0x1p-200};
        const double yt[] = {1, 1, 0x1p-60, 0x1p-60, 7, 7, 0x1p-900};
        check_case("dot tie to even", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xt, yt, 6);
        check_case("dot tie broken by 2^-1100", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xt, yt, 7);
        const double xu[] = {-1, -0x1p-53, 0x1p-300}, yu[] = {1 + 0x1p-52, 1, -0x1p-300};
        check_case("negative dot tie", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xu, yu, 2);
        check_case("negative dot tie broken", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xu, yu, 3);
        const double xi[] = {INFINITY, 1}, yi[] = {0.0, 1};
        check_case("inf * 0", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xi, yi, 2);
        const double xj[] = {INFINITY, 1}, yj[] = {-2.0, 1};
        check_case("inf * -2", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xj, yj, 2);
        const double xo[] = {DBL_MAX, -DBL_MAX, 1}, yo[] = {2, 2, 1};
        check_case("overflowing products that cancel", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xo,
                   yo, 3);
        const float xf[] = {INFINITY, 1, 0x1p-149f, 3e38f}, yf[] = {0.0f, 1, 0x1p-149f, 3e38f};
        check_case("inf * 0", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT32, xf, yf, 2);
        check_case("tiny and overflowing products", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT32, xf + 1,
                   yf + 1, 3);
        const float xg[] = {-0.0f, 3}, yg[] = {1, -0.0f};
        check_case("-0 products", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT32, xg, yg, 2);
    }

    /* ---- the generated distributions ---- */
    {
        void *gx = malloc((1u << 20) * 8 + 64), *gy = malloc((1u << 20) * 8 + 64);
        check_generated(COOPREDUCE_FLOAT32, 24, -126, 127, gx, gy);
        check_generated(COOPREDUCE_FLOAT64, 53, -1022, 1023, gx, gy);
        check_generated(COOPREDUCE_FLOAT16, 11, -14, 15, gx, gy);
        check_generated(COOPREDUCE_BFLOAT16, 8, -126, 127, gx, gy);
        free(gx);
        free(gy);
    }

    /* ---- random sets over sizes ---- */
    static const uint64_t sizes[] = {1,    2,    3,    31,    32,     33,     97,
                                     1009, 4095, 4097, 65537, 131071, 131073, 1048577};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    void *x = malloc((1u << 24) * 8), *y = malloc((1u << 24) * 8);
    for (int d = 0; d < ndts; d++)
        for (int kind = 0; kind < ND; kind++)
            for (int si = 0; si < nsizes; si++) {
                uint64_t n = sizes[si];
                if (n > 131073 && kind != D_CANCEL && kind != D_FULL && kind != D_HUGE) continue;
                sum_and_dot(check_case, kind, dts[d], x, y, n);
            }
    /* A digit set's top digit: float64 values near the largest finite magnitude, two in three
     * positive, move it by 2^50 or so per three elements; at one of these sizes (the expansions'
     * first 2^14 elements, then 2^13 to 2^15 per set) it passes 2^63 but not 2^64, where a wrap
     * would read as a negative sum. */
    for (int k = 0; k < 3; k++) {
        const uint64_t n = k == 0 ? 50000 : k == 1 ? 100000 : 200000;
        gen(D_HUGE, COOPREDUCE_FLOAT64, x, n);
        check_case("huge", COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64, x, NULL, n);
    }
    /* a NaN / an infinity in a long array, at the start, middle and end */
    for (int d = 0; d < ndts; d++) {
        uint64_t n = 300007;
        for (int pos = 0; pos < 3; pos++) {
            gen(D_SIGNED, dts[d], x, n);
            uint64_t at = pos == 0 ? 0 : pos == 1 ? n / 2 : n - 1;
            store(dts[d], x, at, NAN);
            check_case("one NaN", COOPREDUCE_OP_SUM, dts[d], x, NULL, n);
            store(dts[d], x, at, -INFINITY);
            check_case("one -inf", COOPREDUCE_OP_SUM, dts[d], x, NULL, n);
            store(dts[d], x, n - 1 - at / 2, INFINITY);
            check_case("+inf and -inf", COOPREDUCE_OP_SUM, dts[d], x, NULL, n);
        }
    }
    /* permutations of one array: sorted, reversed, shuffled give the same bits */
    for (int d = 0; d < 2; d++) {
        const uint64_t n = 200003;
        double *v = malloc(n * 8);
        gen(D_CANCEL, COOPREDUCE_FLOAT64, v, n);
        if (d == 0)
            for (uint64_t i = 0; i < n; i++) v[i] = (float)v[i];
        unsigned char first[8], got[8];
        const coopreduce_dtype dt = f32_f64[d];
        for (int perm = 0; perm < 4; perm++) {
            if (perm == 1) qsort(v, n, 8, cmp_abs);
            if (perm == 2)
                for (uint64_t i = 0; i < n / 2; i++) {
                    double t = v[i];
                    v[i] = v[n - 1 - i];
                    v[n - 1 - i] = t;
                }
            if (perm == 3)
                for (uint64_t i = n - 1; i > 0; i--) {
                    uint64_t k = rnd() % (i + 1);
                    double t = v[i];
                    v[i] = v[k];
                    v[k] = t;
                }
            for (uint64_t i = 0; i < n; i++) store(dt, x, i, v[i]);
            coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, got, n, dt, cpu, NULL);
            if (perm == 0) memcpy(first, got, 8);
            CHECK(memcmp(first, got, dt_size(dt)) == 0, "permutation %d of %s changed the bits",
                  perm, coopreduce_dtype_name(dt));
            check_case("permutation", COOPREDUCE_OP_SUM, dt, x, NULL, n);
        }
        free(v);
    }
    /* 2^24 elements, 2^k +- 1 */
    for (int d = 0; d < 2; d++) {
        const uint64_t ns[] = {(1u << 24) - 1, 1u << 24, (1u << 20) + 1};
        for (int k = 0; k < 3; k++) {
            gen(d == 0 ? D_SIGNED : D_CANCEL, f32_f64[d], x, ns[k]);
            check_case("large", COOPREDUCE_OP_SUM, f32_f64[d], x, NULL, ns[k]);
        }
    }
    /* Data that changes character along the array: runs of values over the whole exponent range
     * (the float64 sum's and the dots' expansions give way to the digits, for ever longer runs
     * while the expansions keep failing), each run's second half its first half mirrored and
     * negated (the run adds to zero, and a lost or doubled element shows), between runs of
     * narrow values (where the expansions pass again), of lengths about the runs' and the
     * blocks'; float64 sum, both dots. */
    {
        static const uint64_t runs[] = {3u << 20, (1u << 16) + 7, 5u << 20, 1u << 18, 1u << 19,
                                        (1u << 14) - 3, 3u << 20, 40000};
        for (int d = 1; d >= 0; d--) {
            const coopreduce_dtype dt = f32_f64[d];
            const size_t es = dt_size(dt);
            uint64_t n = 0;
            for (int r = 0; r < 8; r++) {
                char *xr = (char *)x + n * es, *yr = (char *)y + n * es;
                const uint64_t m = runs[r];
                gen(r % 2 ? D_SIGNED : D_FULL, dt, xr, m);
                gen(D_SIGNED, dt, yr, m);
                for (uint64_t i = 0; r % 2 == 0 && i < m / 2; i++) {
                    store(dt, xr, m - 1 - i, -load_value(xr, i, dt));
                    store(dt, yr, m - 1 - i, load_value(yr, i, dt));
                }
                n += m;
            }
            if (dt == COOPREDUCE_FLOAT64) check_case("regimes", COOPREDUCE_OP_SUM, dt, x, NULL, n);
            check_case("regimes", COOPREDUCE_OP_DOT, dt, x, y, n);
        }
    }
    /* ---- bins (exact.c, "binned halves": every float64 sum, and float32 dots where the
     * expansions give way): groups of eight binades, each value split in 27 + 26 significant
     * bits, the bins flushed every 2^19 values. In group g, values of its top binade (biased
     * exponent 8g + 7; 8g + 6 in group 255, whose top binade is inf and NaN) with significands in
     * [1.75, 2), positive in the first half of the array (2^20 values) and negative in the
     * second, one in sixteen in its bottom binade (8g; subnormals in group 0) with random bits
     * and sign: before a flush the group's H bins (their sum over the sets) come within a
     * factor 1.2 of the 2^53 units of the bottom binade that their exactness allows, so that a
     * span twice as long, or one more bit kept in the high half, rounds away units that the
     * result needs. Groups 0, 1, 131, 247 (the last unscaled), 248 (the first scaled: |v| >=
     * 2^961), 254 and 255. */
    {
        static const int groups[] = {0, 1, 131, 247, 248, 254, 255};
        const uint64_t n = (2u << 20) + 3;
        double *v = x;
        for (size_t k = 0; k < sizeof groups / sizeof groups[0]; k++) {
            const int g = groups[k], top = g == 255 ? 8 * g + 6 : 8 * g + 7, bottom = 8 * g;
            full_bin(v, n, top - 1023, bottom - 1023);
            char what[64];
            snprintf(what, sizeof what, "a full bin, group %d", g);
            check_case(what, COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64, x, NULL, n);
        }
        /* float64 products (exact.c, "binned halves of exact products"): groups of eight
         * binades of the products' true exponents. As above: products of a power of two and
         * values of the group's top binade (significands in [1.75, 2), positive then negative)
         * and bottom binade (one in sixteen, random bits and sign), in the groups of 2^-992 to
         * 2^-984 and of 2^960 to 2^968, where the result shows the bins' units. */
        for (int k = 0; k < 2; k++) {
            const int top = k ? 967 : -985, bottom = top - 7, ey = k ? 800 : -1000;
            double *yv = y;
            full_bin(v, n, top - ey, bottom - ey);
            for (uint64_t i = 0; i < n; i++) yv[i] = ldexp(1.0, ey);
            check_case(k ? "a full bin of huge float64 products"
                         : "a full bin of small float64 products",
                       COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, x, y, n);
        }
        /* subnormal factors (normalised first) against factors of 2^20 to 2^52: products of
         * 2^-1054 to 2^-970, within the result's range, which shows each product's scale
         * (subnormal data's own dots round to zero) */
        {
            const uint64_t ns = 100003;
            double *yv = y;
            CHECK(cr_gen_fill(x, 0, ns, COOPREDUCE_FLOAT64, CR_GEN_SUBNORMAL, 11, 2) == 0,
                  "gen subnormal");
            for (uint64_t i = 0; i < ns; i++) {
                const uint64_t r = rnd();
                const double m = 1.0 + ldexp((double)(r >> 12), -52);
                yv[i] = ldexp(r & 1 ? m : -m, 20 + (int)(r >> 1 & 31));
            }
            check_case("subnormal times larger factors", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, x,
                       y, ns);
        }
        /* float32 products through the same bins: six in eight near the top of group 130
         * (biased exponents 1040 to 1047: factors of significands in [1.75, 2) at 2^11 and
         * 2^12), one in eight at its bottom (2^8 and 2^9, random significands), one in eight
         * spread over the products' whole range, so that the expansions leave residues and give
         * way to the bins for runs of 2^18 to 2^21 products. (The span's bound itself is the
         * float64 cases' above: the bins' code is shared, and here the hybrid's runs decide
         * where the spans fall.) */
        const uint64_t nd = (4u << 20) + 5;
        float *xf = x, *yf = y;
        for (uint64_t i = 0; i < nd; i++) {
            const uint64_t r = rnd();
            const float a = 1.0f + (float)ldexp((double)(r & 0x7fffff), -23),
                        b = 1.0f + (float)ldexp((double)(r >> 23 & 0x7fffff), -23);
            if (i % 8 == 7) {
                xf[i] = (float)wide(COOPREDUCE_FLOAT32);
                yf[i] = (float)wide(COOPREDUCE_FLOAT32);
            } else if (i % 8 == 6) {
                xf[i] = ldexpf(r >> 63 ? a : -a, 8);
                yf[i] = ldexpf(b, 9);
            } else {
                const float ta = 1.75f + (a - 1.0f) / 4, tb = 1.75f + (b - 1.0f) / 4;
                xf[i] = ldexpf(i < nd / 2 ? ta : -ta, 11);
                yf[i] = ldexpf(tb, 12);
            }
        }
        check_case("a full bin of float32 products", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT32, x, y,
                   nd);
        /* infinities and NaNs among the scaled groups' values: a NaN whose payload is in the
         * low bits only (cleared, it would read as an infinity), an infinity with finite
         * values of the other sign near the largest magnitude */
        gen(D_FULL, COOPREDUCE_FLOAT64, x, n);
        v[n / 3] = f64_from_bits(0x7ff0000000000001ull);
        check_case("a NaN with a low payload", COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64, x, NULL, n);
        for (uint64_t i = 0; i < n; i++) v[i] = ldexp(1.0 + (double)(rnd() >> 12) * 0x1p-52, 1020);
        v[n - 2] = -INFINITY;
        check_case("-inf among huge values", COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64, x, NULL, n);
    }
    /* the caller's floating-point environment does not matter and is restored */
    {
        const uint64_t n = 100001;
        gen(D_DENORMAL, COOPREDUCE_FLOAT64, x, n);
        double a, b;
        coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, &a, n, COOPREDUCE_FLOAT64, cpu, NULL);
        fesetround(FE_UPWARD);
#if defined(__x86_64__)
        unsigned int csr = _mm_getcsr();
        _mm_setcsr(csr | 0x8040u);
#endif
        coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, &b, n, COOPREDUCE_FLOAT64, cpu, NULL);
#if defined(__x86_64__)
        /* FTZ and DAZ come back. (MXCSR's rounding field does not yet: cr_fp_enter saves MXCSR
         * after setting round-to-nearest; reported, src/cpu/canonical.c.) */
        CHECK((_mm_getcsr() & 0x8040u) == 0x8040u, "FTZ/DAZ not restored: MXCSR %#x", _mm_getcsr());
        _mm_setcsr(csr);
#endif
        CHECK(fegetround() == FE_UPWARD, "rounding mode not restored");
        fesetround(FE_TONEAREST);
        CHECK(memcmp(&a, &b, 8) == 0, "FTZ/DAZ/upward rounding changed the exact sum");
        check_case("denormals after FTZ", COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64, x, NULL, n);
    }
    /* exact mode refuses what it does not compute */
    {
        float r;
        CHECK(coopreduce_reduce(COOPREDUCE_OP_MEAN, x, NULL, &r, 4, COOPREDUCE_FLOAT32, cpu,
                                NULL) == COOPREDUCE_ERROR_NOT_SUPPORTED,
              "mean in exact mode");
    }
    free(x);
    free(y);
    coopreduce_destroy(cpu);
    return check_summary("test_exact_cpu");
}
