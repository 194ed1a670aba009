/* test_ops_ordered.c — the canonical-order operations on the CPU against references built here.
 *
 *   - SUM of float16/bfloat16 equals the library's float32 canonical sum of the values widened by
 *     util.h's own decoder; SUMSQ and DOT the canonical sum of the products computed here; all
 *     three also within the tree's error bound of the exact sum (ref_exact.c). NORM2 against a
 *     long double reference, and at the edges of the range (no overflow or underflow). MEAN is
 *     the correctly rounded quotient of the canonical sum, checked with exact arithmetic (not
 *     with the library's routine).
 *   - The ordered operations against their definition: the canonical sum of leaves computed here
 *     element by element with values.h's rules (NORM2's three classes at their boundaries
 *     included), whatever the library's vector loops do.
 *   - The same bits for 1, 2, 3 and 8 threads.
 *   - Narrowing of 16-bit results: the float32 result rounded once more to the input type (by
 *     util.h's ref_encode for float16, an integer formula for bfloat16).
 *
 * No GPU needed. Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coopreduce.h"
#include "ops_data.h"
#include "util.h"
#include "ref_exact.h"
#include "core/values.h" /* the rules of the leaves and of NORM2's combination */

/* ---- b. Ordered float operations -------------------------------------------------------------- */
static int result_f(coopreduce_op op, const void *x, const void *y, uint64_t n, coopreduce_dtype dt,
                    double *out)
{
    double d = 0;
    float f = 0;
    coopreduce_status s = coopreduce_reduce(
        op, x, y, dt == COOPREDUCE_FLOAT64 ? (void *)&d : (void *)&f, n, dt, g_cpu, NULL);
    if (!CHECK(s == COOPREDUCE_SUCCESS, "%s %s n=%llu: %s", coopreduce_op_name(op),
               coopreduce_dtype_name(dt), (unsigned long long)n, coopreduce_last_error(g_cpu)))
        return -1;
    *out = dt == COOPREDUCE_FLOAT64 ? d : f;
    return 0;
}

/* The library's canonical sum of the leaves (float32 or float64 array): the reference for the
 * transformed sums, whose tree is the canonical tree over the leaves by definition. */
static double canonical_of(const void *leaves, uint64_t n, int f64)
{
    double d = 0;
    float f = 0;
    coopreduce_sum(leaves, f64 ? (void *)&d : (void *)&f, n,
                   f64 ? COOPREDUCE_FLOAT64 : COOPREDUCE_FLOAT32, g_cpu, NULL);
    return f64 ? d : f;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, 8) == 0 || (a != a && b != b); }

/* Is r the correctly rounded value of S / n (r a float32 when f32)? Exact: S - r*n and the half
 * ulp times n are sums of doubles (r * 2^k for the set bits k of n), added in ref_exact. */
static int is_rounded_quotient(double S, uint64_t n, double r, int f32)
{
    if (r != r || isinf(r)) return 1; /* specials checked elsewhere */
    int e;
    frexp(r == 0 ? (f32 ? FLT_MIN : DBL_MIN) : r, &e);
    int p = f32 ? 24 : 53, emin = f32 ? -125 : -1021;
    double half_ulp = ldexp(1.0, (e < emin ? emin : e) - p - 1);
    for (int side = -1; side <= 1; side += 2) {
        ref_exact acc;
        ref_exact_init(&acc);
        ref_exact_add(&acc, S);
        for (int k = 0; k < 64; k++)
            if ((n >> k) & 1) {
                ref_exact_add(&acc, -ldexp(r, k));
                ref_exact_add(&acc, side * ldexp(half_ulp, k));
            }
        /* side -1: S - r n - h n <= 0; side +1: S - r n + h n >= 0 */
        int sg = ref_exact_sign(&acc);
        if (side < 0 ? sg > 0 : sg < 0) return 0;
    }
    return 1;
}

static void ordered_ops(void)
{
    const int rounds = test_quick ? 80 : 200;
    const uint64_t max_n = test_quick ? 70000 : 3000000;
    coopreduce_dtype fdt[COOPREDUCE_DTYPE_COUNT];
    const int nf = float_dtypes(fdt);
    static const uint64_t sizes[] = {1,    2,    3,    127,  128,  129,   2047,   2048,
                                     2049, 4095, 4096, 4097, 8193, 65537, 1000003};
    void *x = malloc(max_n * 8), *y = malloc(max_n * 8), *leaf = malloc(max_n * 8);
    for (int r = 0; r < rounds; r++) {
        coopreduce_dtype dt = fdt[r % nf];
        int f64 = dt == COOPREDUCE_FLOAT64;
        uint64_t n = r < 15 * nf ? sizes[(r / nf) % 15] : 1 + rnd() % max_n;
        if (n > max_n) n = max_n;
        int kind = (int)(rnd() % 3);
        fill_values(x, n, dt, kind);
        fill_values(y, n, dt, (kind + 1) % 3);
        ref_exact ex;
        for (int op = 0; op < 3; op++) { /* sum, sumsq, dot */
            coopreduce_op o = op == 0   ? COOPREDUCE_OP_SUM
                              : op == 1 ? COOPREDUCE_OP_SUMSQ
                                        : COOPREDUCE_OP_DOT;
            if (o == COOPREDUCE_OP_SUM && !dt_is_half(dt)) continue; /* test_sum_*.c cover these */
            ref_exact_init(&ex);
            double abs_sum = 0;
            for (uint64_t i = 0; i < n; i++) {
                double a = load_value(x, i, dt), b = load_value(y, i, dt), v;
                if (f64)
                    v = o == COOPREDUCE_OP_SUM ? a : o == COOPREDUCE_OP_SUMSQ ? a * a : a * b;
                else
                    v = o == COOPREDUCE_OP_SUM     ? (float)a
                        : o == COOPREDUCE_OP_SUMSQ ? (float)((float)a * (float)a)
                                                   : (float)((float)a * (float)b);
                if (f64)
                    ((double *)leaf)[i] = v;
                else
                    ((float *)leaf)[i] = (float)v;
                ref_exact_add(&ex, v);
                abs_sum += fabs(v);
            }
            double got;
            if (result_f(o, x, y, n, dt, &got)) continue;
            double want = canonical_of(leaf, n, f64);
            CHECK(same_bits(got, want), "%s %s n=%llu: %a != canonical of the leaves %a",
                  coopreduce_op_name(o), coopreduce_dtype_name(dt), (unsigned long long)n, got,
                  want);
            /* the documented bound: 12 (11) roundings per level */
            int levels = n <= (f64 ? 2048u : 4096u)                     ? 1
                         : n <= (f64 ? 2048ull * 2048 : 4096ull * 4096) ? 2
                                                                        : 3;
            double k = (f64 ? 11.0 : 12.0) * levels, u = f64 ? 0x1p-53 : 0x1p-24;
            long double err = fabsl((long double)got - ref_exact_to_long_double(&ex));
            CHECK(err <= k * u / (1 - k * u) * abs_sum * (1 + 1e-12) + (f64 ? 0 : 0x1p-149),
                  "%s %s n=%llu: error %Lg over bound", coopreduce_op_name(o),
                  coopreduce_dtype_name(dt), (unsigned long long)n, err);
        }
        /* MEAN: the correctly rounded quotient of the canonical sum */
        double s, m;
        if (!result_f(COOPREDUCE_OP_SUM, x, NULL, n, dt, &s) &&
            !result_f(COOPREDUCE_OP_MEAN, x, NULL, n, dt, &m))
            CHECK(is_rounded_quotient(s, n, m, !f64),
                  "mean %s n=%llu: %a is not the rounded %a / n", coopreduce_dtype_name(dt),
                  (unsigned long long)n, m, s);
        /* NORM2 against long double */
        long double ss = 0;
        for (uint64_t i = 0; i < n; i++)
            ss += (long double)load_value(x, i, dt) * load_value(x, i, dt);
        double nr;
        if (!result_f(COOPREDUCE_OP_NORM2, x, NULL, n, dt, &nr)) {
            long double want = sqrtl(ss);
            double tol = (f64 ? 0x1p-53 : 0x1p-24) * (40 + 2 * log2((double)n + 1));
            CHECK(fabsl(nr - want) <= tol * want + (f64 ? 0 : 1e-40), "norm2 %s n=%llu: %a vs %La",
                  coopreduce_dtype_name(dt), (unsigned long long)n, nr, want);
        }
    }
    free(x);
    free(y);
    free(leaf);
}

/* NORM2 at the edges: values whose squares overflow or underflow the type. */
static void norm2_edges(void)
{
    enum { N = 10007 };
    static float xf[N];
    static double xd[N];
    const float fv[] = {1e30f, 3e-30f, 1e-40f /* subnormal */, FLT_MAX};
    const double dv[] = {1e300, 3e-300, 1e-310, DBL_MAX};
    for (int c = 0; c < 4; c++) {
        for (int i = 0; i < N; i++) {
            xf[i] = (i & 1 ? -1 : 1) * fv[c];
            xd[i] = (i & 1 ? -1 : 1) * dv[c];
        }
        double rf, rd;
        long double wf = fabsl((long double)fv[c]) * sqrtl(N),
                    wd = fabsl((long double)dv[c]) * sqrtl(N);
        if (!result_f(COOPREDUCE_OP_NORM2, xf, NULL, N, COOPREDUCE_FLOAT32, &rf)) {
            if (wf > FLT_MAX)
                CHECK(isinf(rf), "norm2 f32 case %d: %a should overflow", c, rf);
            else
                CHECK(fabsl(rf - wf) <= 1e-5L * wf, "norm2 f32 case %d: %a vs %La", c, rf, wf);
        }
        if (!result_f(COOPREDUCE_OP_NORM2, xd, NULL, N, COOPREDUCE_FLOAT64, &rd)) {
            if (wd > DBL_MAX)
                CHECK(isinf(rd), "norm2 f64 case %d: %a should overflow", c, rd);
            else
                CHECK(fabsl(rd - wd) <= 1e-13L * wd, "norm2 f64 case %d: %a vs %La", c, rd, wd);
        }
    }
    /* mixed: one huge, many tiny, many medium (big sum wins, medium folded in) */
    for (int i = 0; i < N; i++) xd[i] = i == 77 ? 1e200 : i % 3 ? 1e-200 : 1.0;
    double r;
    if (!result_f(COOPREDUCE_OP_NORM2, xd, NULL, N, COOPREDUCE_FLOAT64, &r))
        CHECK(fabs(r - 1e200) <= 1e186, "mixed norm2 %a", r);
    xd[5] = INFINITY;
    if (!result_f(COOPREDUCE_OP_NORM2, xd, NULL, N, COOPREDUCE_FLOAT64, &r))
        CHECK(r == INFINITY, "norm2 with inf: %a", r);
    xd[9] = NAN;
    if (!result_f(COOPREDUCE_OP_NORM2, xd, NULL, N, COOPREDUCE_FLOAT64, &r))
        CHECK(r != r, "norm2 with NaN: %a", r);
}

/* ---- The ordered operations against their definition (docs/DETERMINISM.md, "Operations"):
 * the canonical sum of the leaves, each leaf computed here element by element with values.h's
 * rules, summed by coopreduce_sum (whose bits tests/test_sum_reference.c checks against exact references
 * and the GPU's golden bits), then the final rule. The library computes the leaves with vector
 * loops and takes NORM2's medium-only chunks without their big and small trees; neither may
 * change a bit. Chunks are seeded with class-boundary values (TBIG, TSML and their neighbours,
 * subnormals, zeros of both signs) or left in the medium class, and sizes are ragged. ------ */
static void ordered_definition(void)
{
    const int rounds = test_quick ? 40 : 160;
    const uint64_t max_n = 5 * 4096 + 7;
    float *lf[3];
    double *ld[3];
    for (int k = 0; k < 3; k++) {
        lf[k] = malloc(max_n * 4);
        ld[k] = malloc(max_n * 8);
    }
    unsigned char *x = malloc(max_n * 8), *y = malloc(max_n * 8);
    coopreduce_dtype dts[COOPREDUCE_DTYPE_COUNT];
    const int nf = float_dtypes(dts);
    const float ef[] = {CR_TBIG_F32,
                        nextafterf(CR_TBIG_F32, INFINITY),
                        nextafterf(CR_TBIG_F32, 0),
                        CR_TSML_F32,
                        nextafterf(CR_TSML_F32, 0),
                        nextafterf(CR_TSML_F32, INFINITY),
                        0x1p-149f,
                        -0.0f,
                        0.0f,
                        3e38f};
    const double ed[] = {CR_TBIG_F64,
                         nextafter(CR_TBIG_F64, INFINITY),
                         nextafter(CR_TBIG_F64, 0),
                         CR_TSML_F64,
                         nextafter(CR_TSML_F64, 0),
                         nextafter(CR_TSML_F64, INFINITY),
                         0x1p-1074,
                         -0.0,
                         0.0,
                         1e308};
    for (int r = 0; r < rounds; r++) {
        const coopreduce_dtype dt = dts[r % nf];
        const int f64 = dt == COOPREDUCE_FLOAT64, half = !f64 && dt != COOPREDUCE_FLOAT32;
        const uint64_t n = 1 + rnd() % max_n, C = f64 ? 2048 : 4096;
        const size_t es = coopreduce_dtype_size(dt);
        for (uint64_t i = 0; i < 2 * n; i++) { /* x then y, in one sweep of distributions */
            unsigned char *p = i < n ? x : y;
            const uint64_t e = i < n ? i : i - n;
            const double v = (unif() * 2 - 1) * ldexp(1, (int)(rnd() % 41) - 20);
            if (f64)
                ((double *)p)[e] = v;
            else if (!half)
                ((float *)p)[e] = (float)v;
            else
                ((uint16_t *)p)[e] =
                    (uint16_t)(rnd() & 0xffff); /* any pattern; inf and NaN removed below */
        }
        if (half) /* no NaN or inf: their results are compared elsewhere */
            for (uint64_t i = 0; i < 2 * n; i++) {
                uint16_t *h = (uint16_t *)(i < n ? x : y) + (i < n ? i : i - n);
                const unsigned expo_mask = dt == COOPREDUCE_FLOAT16 ? 0x7c00u : 0x7f80u;
                if ((*h & expo_mask) == expo_mask) *h &= (uint16_t)~0x0400u;
                if (dt == COOPREDUCE_BFLOAT16) /* |x| < 2^101: big-class values, a finite norm */
                    *h = (uint16_t)((*h & 0x807fu) | (((*h >> 7) & 255u) % 228u) << 7);
            }
        for (uint64_t c = 0; c * C < n; c++) /* some chunks get boundary values */
            if (!half && (rnd() & 1))
                for (int q = 0; q < 3; q++) {
                    const uint64_t at = c * C + rnd() % C;
                    const int w = (int)(rnd() % 10);
                    if (at >= n) continue;
                    if (f64)
                        ((double *)x)[at] = (rnd() & 1) ? -ed[w] : ed[w];
                    else
                        ((float *)x)[at] = (rnd() & 1) ? -ef[w] : ef[w];
                }
        static const coopreduce_op ops[] = {COOPREDUCE_OP_SUMSQ, COOPREDUCE_OP_DOT,
                                            COOPREDUCE_OP_NORM2, COOPREDUCE_OP_SUM};
        for (int k = 0; k < 4; k++) {
            const coopreduce_op op = ops[k];
            if (op == COOPREDUCE_OP_SUM && !half) continue; /* the canonical sum itself */
            for (uint64_t i = 0; i < n; i++) {
                if (f64) {
                    const double a = ((double *)x)[i], b = ((double *)y)[i];
                    if (op == COOPREDUCE_OP_NORM2)
                        cr_norm2_leaf_F64(a, &ld[0][i], &ld[1][i], &ld[2][i]);
                    else
                        ld[0][i] = op == COOPREDUCE_OP_DOT ? a * b : a * a;
                } else {
                    const float a =
                        half ? (dt == COOPREDUCE_FLOAT16 ? cr_f16_to_f32(((uint16_t *)x)[i])
                                                         : cr_bf16_to_f32(((uint16_t *)x)[i]))
                             : ((float *)x)[i];
                    const float b =
                        half ? (dt == COOPREDUCE_FLOAT16 ? cr_f16_to_f32(((uint16_t *)y)[i])
                                                         : cr_bf16_to_f32(((uint16_t *)y)[i]))
                             : ((float *)y)[i];
                    if (op == COOPREDUCE_OP_NORM2)
                        cr_norm2_leaf_F32(a, &lf[0][i], &lf[1][i], &lf[2][i]);
                    else
                        lf[0][i] = op == COOPREDUCE_OP_DOT   ? a * b
                                   : op == COOPREDUCE_OP_SUM ? a
                                                             : a * a;
                }
            }
            double want;
            const int sums = op == COOPREDUCE_OP_NORM2 ? 3 : 1;
            double acc[3] = {0, 0, 0};
            for (int q = 0; q < sums; q++) {
                if (f64) {
                    CHECK(coopreduce_sum(ld[q], &acc[q], n, COOPREDUCE_FLOAT64, g_cpu, NULL) == 0,
                          "sum of leaves");
                } else {
                    float f;
                    CHECK(coopreduce_sum(lf[q], &f, n, COOPREDUCE_FLOAT32, g_cpu, NULL) == 0,
                          "sum of leaves");
                    acc[q] = f;
                }
            }
            if (op == COOPREDUCE_OP_NORM2)
                want =
                    f64 ? cr_norm2_combine_F64(acc[0], acc[1], acc[2])
                        : (double)cr_norm2_combine_F32((float)acc[0], (float)acc[1], (float)acc[2]);
            else
                want = acc[0];
            unsigned char got[8];
            if (!CHECK(coopreduce_reduce(op, x, y, got, n, dt, g_cpu, NULL) == 0, "%s: %s",
                       coopreduce_op_name(op), coopreduce_last_error(g_cpu)))
                continue;
            uint64_t gb = 0, wb;
            memcpy(&gb, got, f64 ? 8 : 4);
            if (f64)
                wb = cr_f64_bits(want);
            else
                wb = cr_f32_bits((float)want);
            if (want != want) wb = f64 ? CR_NAN_F64 : CR_NAN_F32;
            CHECK(gb == wb,
                  "%s %s n=%llu: bits 0x%llx, the definition gives 0x%llx (%zu-byte input)",
                  coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)n,
                  (unsigned long long)gb, (unsigned long long)wb, es);
        }
    }
    for (int k = 0; k < 3; k++) {
        free(lf[k]);
        free(ld[k]);
    }
    free(x);
    free(y);
}

/* The branch-free binary16 widening of the CPU's vector loops against the reference one. */
/* ---- d. Thread counts ---------------------------------------------------------------------------- */
static void thread_counts(void)
{
    const uint64_t n = 3000017;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    fill_values(x, n, COOPREDUCE_FLOAT32, 1);
    fill_values(y, n, COOPREDUCE_FLOAT32, 1);
    static const coopreduce_op ops[] = {COOPREDUCE_OP_SUMSQ, COOPREDUCE_OP_NORM2, COOPREDUCE_OP_DOT,
                                        COOPREDUCE_OP_MEAN, COOPREDUCE_OP_ARGMAX};
    for (int k = 0; k < 5; k++) {
        uint64_t first = 0;
        for (int t = 0; t < 4; t++) {
            static const int th[] = {1, 2, 3, 8};
            coopreduce_set_threads(g_cpu, th[t]);
            uint64_t r = 0;
            coopreduce_reduce(ops[k], x, y, &r, n, COOPREDUCE_FLOAT32, g_cpu, NULL);
            if (t == 0) first = r;
            CHECK(r == first, "%s with %d threads: 0x%llx != 0x%llx", coopreduce_op_name(ops[k]),
                  th[t], (unsigned long long)r, (unsigned long long)first);
        }
    }
    coopreduce_set_threads(g_cpu, 0);
    free(x);
    free(y);
}

/* ---- e. Narrowing ---------------------------------------------------------------------------------- */
static void narrowing(void)
{
    const uint64_t n = 100003;
    uint16_t *x = malloc(n * 2);
    for (int r = 0; r < 20; r++) {
        coopreduce_dtype dt = r & 1 ? COOPREDUCE_BFLOAT16 : COOPREDUCE_FLOAT16;
        fill_values(x, n, dt, (int)(rnd() % 3));
        static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_MEAN,
                                            COOPREDUCE_OP_NORM2};
        coopreduce_op op = ops[r % 3];
        float wide = 0;
        uint16_t narrow = 0;
        coopreduce_set_narrow_result(g_cpu, 0);
        CHECK(coopreduce_reduce(op, x, NULL, &wide, n, dt, g_cpu, NULL) == COOPREDUCE_SUCCESS,
              "wide %s %s: %s", coopreduce_op_name(op), coopreduce_dtype_name(dt),
              coopreduce_last_error(g_cpu));
        coopreduce_set_narrow_result(g_cpu, 1);
        coopreduce_status s = coopreduce_reduce(op, x, NULL, &narrow, n, dt, g_cpu, NULL);
        coopreduce_set_narrow_result(g_cpu, 0);
        uint16_t want;
        if (dt == COOPREDUCE_FLOAT16) {
            want = ref_f16_from_double(wide); /* util.c's integer rounding (test_refs checks it) */
        } else {
            uint32_t u;
            memcpy(&u, &wide, 4);
            want = wide != wide ? 0x7fc0 : (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
        }
        CHECK(s == COOPREDUCE_SUCCESS && narrow == want, "narrow %s %s: 0x%04x != 0x%04x (wide %a)",
              coopreduce_op_name(op), coopreduce_dtype_name(dt), narrow, want, wide);
    }
    free(x);
}

CPU_TEST_MAIN("test_ops_ordered", {"ordered operations", ordered_ops}, {"norm2 edges", norm2_edges},
              {"thread counts", thread_counts}, {"narrowing", narrowing},
              {"definition", ordered_definition})
