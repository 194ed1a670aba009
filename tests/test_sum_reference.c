/* test_sum_reference.c — the CPU canonical sum against references, over many sizes.
 *
 *   - the library's bits equal an independent scalar implementation of canonical order v1
 *     written from docs/DETERMINISM.md (canonical_ref.c), for float32 and float64, every
 *     generator kind, sizes around the lane, chunk and level boundaries, powers of two and random
 *     sizes up to 2^24, fresh seeds; coopreduce_sum and coopreduce_sum_to_host alternately;
 *   - sums of ones up to 2^24 are exactly n;
 *   - the error bound |lib - exact| <= gamma(k) sum|x_i| (k = 12 L for float32, 11 L for float64,
 *     L levels), with the exact sum from ref_exact; the largest error / bound seen is printed.
 *
 * Seeds: a fresh seed per run, printed; COOPREDUCE_TEST_SEED=<seed> reproduces a run. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "canonical_ref.h"
#include "check.h"
#include "ref_exact.h"
#include "util.h"

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
    double lib =
        dt == COOPREDUCE_FLOAT32 ? (double)f32_from_bits((uint32_t)bits) : f64_from_bits(bits);
    if (!CHECK(isfinite(lib), "%s: library result is not finite (bits 0x%" PRIx64 ")", label, bits))
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

static int g_case_counter;

static void run_case(coopreduce_dtype dt, cr_gen_kind kind, uint64_t n, int bound)
{
    uint64_t seed = rnd();
    char label[160];
    snprintf(label, sizeof label, "%s %s n=%" PRIu64 " seed=%" PRIu64, dt_code(dt),
             cr_gen_name(kind), n, seed);
    void *x = gen_data(dt, kind, seed, n);
    uint64_t lib = 0;
    coopreduce_status s = sum_bits(g_cpu, x, n, dt, &lib, g_case_counter++ & 1);
    if (CHECK(s == COOPREDUCE_SUCCESS, "%s: status %d (%s)", label, (int)s,
              coopreduce_last_error(g_cpu))) {
        uint64_t ref = canon_bits(x, n, dt);
        CHECK(lib == ref, "%s: library bits 0x%" PRIx64 " != canonical reference 0x%" PRIx64, label,
              lib, ref);
        if (kind == CR_GEN_ONES && n <= (UINT64_C(1) << 24)) /* every node exact */
            CHECK(lib == (dt == COOPREDUCE_FLOAT32 ? f32_bits((float)n) : f64_bits((double)n)),
                  "%s: sum of ones is not n (bits 0x%" PRIx64 ")", label, lib);
        if (bound) check_error_bound(x, n, dt, lib, label);
    }
    free(x);
}

static void test_sizes(void)
{
    for (int di = 0; di < 2; di++) {
        coopreduce_dtype dt = di == 0 ? COOPREDUCE_FLOAT32 : COOPREDUCE_FLOAT64;
        uint64_t C = di == 0 ? C32 : C64, W = di == 0 ? W32 : W64;
        uint64_t sizes[160];
        int ns = 0;
        const uint64_t fixed[] = {0, 1, 2, 3, 31, 32, 33, 127, 128, 129, 4093, 65521, 1000003};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            add_size(sizes, &ns, 160, fixed[i]);
        const uint64_t structural[] = {
            W - 1, W,         W + 1,     2 * W + 1, C - 1,     C,     C + 1,     2 * C - 1,
            2 * C, 2 * C + 1, 3 * C + 5, C * W + 1, C * C - 1, C * C, C * C + 1, C * C + C + 1};
        for (size_t i = 0; i < sizeof structural / sizeof structural[0]; i++)
            add_size(sizes, &ns, 160, structural[i]);
        const int ks[] = {4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 16, 17, 20, 21, 22, 23, 24};
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
            uint64_t p = UINT64_C(1) << ks[i];
            add_size(sizes, &ns, 160, p - 1);
            add_size(sizes, &ns, 160, p + 1);
            if (ks[i] <= 14) add_size(sizes, &ns, 160, p);
        }
        for (int i = 0; i < 24; i++) { /* random sizes, log-uniform up to 2^22 */
            unsigned bits = 1 + (unsigned)rnd_below(22);
            add_size(sizes, &ns, 160,
                     (UINT64_C(1) << (bits - 1)) + rnd_below(UINT64_C(1) << (bits - 1)));
        }
        int big_rot = 0;
        for (int i = 0; i < ns; i++) {
            uint64_t n = sizes[i];
            if (n <= (UINT64_C(1) << 20)) {
                for (int k = 0; k < 4; k++) run_case(dt, (cr_gen_kind)k, n, 1);
            } else {
                /* Large sizes: two kinds each, rotating, to keep the run short. */
                run_case(dt, (cr_gen_kind)(big_rot % 4), n, 1);
                run_case(dt, (cr_gen_kind)((big_rot + 1) % 4), n, n <= (UINT64_C(1) << 23));
                big_rot += 2;
            }
        }
        fprintf(stdout, "   %s: %d sizes; worst |lib - exact| / bound = %.3g (%s)\n", dt_code(dt),
                ns, g_worst_ratio[di], g_worst_case[di]);
    }
}

CPU_TEST_MAIN("test_sum_reference", {"sizes and error bound", test_sizes})
