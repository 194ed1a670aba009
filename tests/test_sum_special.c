/* test_sum_special.c — the CPU canonical sum on special values and unaligned input.
 *
 *   - zeros of both signs, NaN of any payload and sign anywhere (the canonical NaN), infinities
 *     alone, together and in different chunks, overflow at a node of the tree, subnormals (exact
 *     sums of multiples of the smallest), each against hand-computed bits that the independent
 *     implementation (canonical_ref.c) must also give;
 *   - hand-computed trees: with B = 2^24 (float32) or 2^53 (float64), B + 1 + 1 is B + 2 only if
 *     the two 1s meet first, which happens only in the documented order (lanes, rows, levels);
 *   - element-aligned but not 16-byte aligned pointers give the aligned bits, and the input is
 *     not written.
 *
 * Seeds: a fresh seed per run, printed; COOPREDUCE_TEST_SEED=<seed> reproduces a run. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical_ref.h"
#include "check.h"
#include "ref_exact.h"
#include "util.h"

static uint64_t bits_of_value(coopreduce_dtype dt, double v)
{
    return dt == COOPREDUCE_FLOAT32 ? f32_bits((float)v) : f64_bits(v);
}

static void *filled(coopreduce_dtype dt, uint64_t n, double v)
{
    void *x = xmalloc((size_t)n * dt_size(dt));
    for (uint64_t i = 0; i < n; i++) store_value(x, i, dt, v);
    return x;
}

/* Library bits must equal `want`; also checks the independent implementation agrees. */
static void expect_bits(const void *x, uint64_t n, coopreduce_dtype dt, uint64_t want,
                        const char *what)
{
    uint64_t got = 0;
    coopreduce_status s = sum_bits(g_cpu, x, n, dt, &got, 0);
    CHECK(s == COOPREDUCE_SUCCESS && got == want,
          "%s %s (n=%" PRIu64 "): status %d, bits 0x%" PRIx64 ", expected 0x%" PRIx64, dt_code(dt),
          what, n, (int)s, got, want);
    s = sum_bits(g_cpu, x, n, dt, &got, 1);
    CHECK(s == COOPREDUCE_SUCCESS && got == want,
          "%s %s (n=%" PRIu64 ", sum_to_host): status %d, bits 0x%" PRIx64 ", expected 0x%" PRIx64,
          dt_code(dt), what, n, (int)s, got, want);
    uint64_t ref = canon_bits(x, n, dt);
    CHECK(ref == want, "%s %s: independent implementation gives 0x%" PRIx64 " (test bug?)",
          dt_code(dt), what, ref);
}

static void test_special(void)
{
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
                    snprintf(what, sizeof what,
                             "NaN 0x%" PRIx64 " at %" PRIu64 " (seed %" PRIu64 ")", nans[q], pos[p],
                             seed);
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
                {C * (W + 2), C * (W / 2), C * (W / 2 + 1),
                 "level-2 lanes W/2, W/2+1 paired first"},
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
            for (uint64_t i = 0; i < n; i++) store_value(x, i, dt, tiny);
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

static void test_unaligned(void)
{
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
            coopreduce_status s = sum_bits(g_cpu, a, n, dt, &ref, 0);
            CHECK(s == COOPREDUCE_SUCCESS, "aligned sum failed: %d", (int)s);
            for (unsigned off = 1; off <= (di == 0 ? 3u : 1u); off++) {
                memcpy(al + off * es, a, (size_t)n * es);
                uint64_t got = 0;
                s = sum_bits(g_cpu, al + off * es, n, dt, &got, off & 1);
                CHECK(s == COOPREDUCE_SUCCESS && got == ref,
                      "%s n=%" PRIu64 " seed=%" PRIu64
                      " offset %u elements: status %d bits 0x%" PRIx64 " vs aligned 0x%" PRIx64,
                      dt_code(dt), n, seed, off, (int)s, got, ref);
                CHECK(memcmp(al + off * es, a, (size_t)n * es) == 0,
                      "%s n=%" PRIu64 ": the library modified its input", dt_code(dt), n);
            }
            free(raw);
            free(a);
        }
    }
}

CPU_TEST_MAIN("test_sum_special", {"special values", test_special},
              {"unaligned input", test_unaligned})
