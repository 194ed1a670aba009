/* test_sum_big.c — the CPU canonical sum of more than 2^31 float32 elements (8.6 GB).
 *
 *   - small integers at positions around 2^31 and the chunk and level boundaries, zeros
 *     elsewhere: every node is exact, so the result is the exact sum;
 *   - wide-range values at the same positions: the independent implementation's bits
 *     (canonical_ref.c), within the error bound;
 *   - a NaN near the end, an infinity near the start.
 *
 * COOPREDUCE_TEST_SKIP_BIG=1, or an allocation that fails, skips it (a SKIP line).
 * Seeds: a fresh seed per run, printed; COOPREDUCE_TEST_SEED=<seed> reproduces a run. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical_ref.h"
#include "check.h"
#include "ref_exact.h"
#include "util.h"

static void test_big(void)
{
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
    const uint64_t fixed[] = {0,
                              1,
                              C - 1,
                              C,
                              C + 1,
                              C * C - 1,
                              C * C,
                              C * C + 1,
                              (UINT64_C(1) << 30),
                              p31 - C,
                              p31 - 2,
                              p31 - 1,
                              p31,
                              p31 + 1,
                              p31 + C - 1,
                              p31 + C,
                              p31 + 4095,
                              p31 + 4096,
                              n - 3,
                              n - 2,
                              n - 1,
                              (UINT64_C(1) << 32) / 2 + 2,
                              127 * C * C + C - 1,
                              128 * C * C - 1};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) add_size(pos, &np, 64, fixed[i]);
    while (np < 52) add_size(pos, &np, 64, rnd_below(n));

    /* Pass 1: nonzero integers in [-1000, 1000]: every node is exact (integers, all partial sums
     * bounded by sum |x_i| < 2^24), so the result must equal the exact sum, correctly rounded. */
    ref_exact ex;
    ref_exact_init(&ex);
    ref_exact_add(&ex, 0.0); /* the zeros */
    for (int i = 0; i < np; i++) {
        int64_t k = (int64_t)rnd_below(2000) - 1000;
        if (k >= 0) k++;
        x[pos[i]] = (float)k;
        ref_exact_add(&ex, (double)k);
    }
    double t0 = now_s();
    uint64_t lib = 0;
    coopreduce_status s = sum_bits(g_cpu, x, n, COOPREDUCE_FLOAT32, &lib, 0);
    double t1 = now_s();
    CHECK(s == COOPREDUCE_SUCCESS, "2^31+4099 (integers): status %d (%s)", (int)s,
          coopreduce_last_error(g_cpu));
    uint64_t want = f32_bits(ref_exact_to_float(&ex));
    CHECK(lib == want,
          "2^31+4099 (integers): library 0x%08" PRIx64 " (%a), exact 0x%08" PRIx64 " (%a)", lib,
          (double)f32_from_bits((uint32_t)lib), want, (double)f32_from_bits((uint32_t)want));

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
    s = sum_bits(g_cpu, x, n, COOPREDUCE_FLOAT32, &lib, 1);
    CHECK(s == COOPREDUCE_SUCCESS, "2^31+4099 (wide): status %d", (int)s);
    double t2 = now_s();
    uint64_t ref = canon_bits(x, n, COOPREDUCE_FLOAT32);
    double t3 = now_s();
    CHECK(lib == ref,
          "2^31+4099 (wide, seed %" PRIu64 "): library 0x%08" PRIx64
          " != canonical reference 0x%08" PRIx64,
          test_seed(), lib, ref);
    {
        float lf = f32_from_bits((uint32_t)lib);
        ref_exact_add(&ex, -(double)lf);
        long double err = fabsl(ref_exact_to_long_double(&ex));
        long double bound =
            gamma_k(12 * levels_of(n, C), COOPREDUCE_FLOAT32) * ref_exact_to_long_double(&ab);
        CHECK(isfinite(lf) && err <= bound * (1.0L + 1e-12L),
              "2^31+4099 (wide): |lib - exact| = %Lg > bound %Lg", err, bound);
        fprintf(stdout, "   error / bound = %.3g (L = %u)\n", (double)(err / bound),
                levels_of(n, C));
    }

    /* Pass 3: a NaN near the end and an infinity near the start. */
    x[n - 2] = f32_from_bits(0xffc01234u);
    s = sum_bits(g_cpu, x, n, COOPREDUCE_FLOAT32, &lib, 0);
    CHECK(s == COOPREDUCE_SUCCESS && lib == 0x7fc00000u,
          "2^31+4099 with NaN: status %d bits 0x%08" PRIx64, (int)s, lib);
    x[n - 2] = 0.0f;
    x[2] = -INFINITY;
    s = sum_bits(g_cpu, x, n, COOPREDUCE_FLOAT32, &lib, 0);
    CHECK(s == COOPREDUCE_SUCCESS && lib == 0xff800000u,
          "2^31+4099 with -inf: status %d bits 0x%08" PRIx64, (int)s, lib);
    fprintf(stdout, "   (library %.2f s per pass, reference %.2f s)\n", t1 - t0, t3 - t2);
    free(x);
}

CPU_TEST_MAIN("test_sum_big", {"more than 2^31 elements", test_big})
