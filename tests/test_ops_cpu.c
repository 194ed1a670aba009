/* test_ops_cpu.c — every (operation, dtype) on the CPU, against references built here.
 *
 *   a. Names, pinned values, result sizes and types; errors (empty input, integer sumsq/norm2/
 *      dot, NULL y, unknown op, misaligned result, 32-bit sums over 2^32 elements).
 *   b. Ordered float ops: SUM of float16/bfloat16 must equal the library's float32 canonical sum
 *      of the values widened by this file's own decoder; SUMSQ and DOT the canonical sum of the
 *      products this file computes; all three also within the tree's error bound of the exact
 *      sum (tests/ref_exact.c). NORM2 against a long-double scaled reference, and at the edges
 *      of the range (no overflow or underflow). MEAN checked to be the correctly rounded quotient
 *      of the canonical sum with exact arithmetic (not with the library's routine).
 *   c. MIN, MAX, ABSMAX, ARGMIN, ARGMAX, integer SUM and MEAN against plain loops written here
 *      from the rules in the header (NaN first, -0.0 < +0.0 for min/max, first index on ties,
 *      IEEE equality for argmin/argmax; exact __int128 sums; overflow reported).
 *   d. The same bits for 1, 2, 3 and 8 threads.
 *   e. Narrowing of 16-bit results (float16 through the compiler's _Float16).
 *
 * No GPU needed. Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coopreduce.h"
#include "ref_exact.h"
#include "util.h"
#include "core/values.h" /* the mean's quotient helper, tested against 128-bit division */

static coopreduce_handle *cpu;

/* A random finite value of the type: mixed magnitudes, both signs, some zeros and ties. */
static void fill(void *x, uint64_t n, coopreduce_dtype dt, int kind)
{
    for (uint64_t i = 0; i < n; i++) {
        double v;
        switch (kind) {
        case 0: v = unif(); break;                                  /* [0, 1) */
        case 1: v = (unif() * 2 - 1) * ldexp(1, (int)(rnd() % 21) - 10); break; /* wide */
        default: v = (double)((int)(rnd() % 7) - 3) * 0.5; break;  /* ties, zeros */
        }
        if (kind == 2 && (rnd() & 15) == 0) v = -0.0;
        switch (dt) {
        case COOPREDUCE_FLOAT32: ((float *)x)[i] = (float)v; break;
        case COOPREDUCE_FLOAT64: ((double *)x)[i] = v; break;
        case COOPREDUCE_FLOAT16: {
            /* a random finite bit pattern in a moderate range, or the value's nearest */
            uint16_t b = (uint16_t)(rnd() & 0xffff);
            if (((b >> 10) & 31) >= 26 || kind == 2) b = (uint16_t)((rnd() & 0x8000) | ((13 + rnd() % 5) << 10) | (rnd() % 4 << 8));
            ((uint16_t *)x)[i] = b;
            break;
        }
        case COOPREDUCE_BFLOAT16: {
            float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)x)[i] = (uint16_t)(u >> 16); /* truncation: any bf16 is fine */
            break;
        }
        case COOPREDUCE_INT32: ((int32_t *)x)[i] = kind == 2 ? (int32_t)(rnd() % 5) - 2 : (int32_t)rnd(); break;
        case COOPREDUCE_UINT32: ((uint32_t *)x)[i] = kind == 2 ? (uint32_t)(rnd() % 5) : (uint32_t)rnd(); break;
        case COOPREDUCE_INT64: ((int64_t *)x)[i] = kind == 2 ? (int64_t)(rnd() % 5) - 2 : (int64_t)rnd(); break;
        default: ((uint64_t *)x)[i] = kind == 2 ? rnd() % 5 : rnd(); break;
        }
    }
}

static const coopreduce_dtype all_dtypes[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64, COOPREDUCE_INT32,
                                              COOPREDUCE_FLOAT16, COOPREDUCE_BFLOAT16, COOPREDUCE_INT64,
                                              COOPREDUCE_UINT32, COOPREDUCE_UINT64};
#define NDT 8

/* ---- a. API table and errors ---------------------------------------------------------------- */
static void api_table(void)
{
    static const char *names[] = {"sum", "min", "max", "absmax", "mean", "sumsq", "norm2", "dot", "argmin", "argmax"};
    for (int i = 0; i < 10; i++) {
        coopreduce_op op = (coopreduce_op)99;
        CHECK(coopreduce_op_name((coopreduce_op)i) && strcmp(coopreduce_op_name((coopreduce_op)i), names[i]) == 0,
              "op %d name", i);
        CHECK(coopreduce_op_from_name(names[i], &op) == COOPREDUCE_SUCCESS && (int)op == i, "op %s lookup", names[i]);
    }
    coopreduce_op op;
    CHECK(coopreduce_op_from_name("median", &op) == COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown op name");
    CHECK(coopreduce_op_name((coopreduce_op)10) == NULL, "op 10 has no name");
    static const char *dnames[] = {"float32", "float64", "int32", "float16", "bfloat16", "int64", "uint32", "uint64"};
    static const size_t dsize[] = {4, 8, 4, 2, 2, 8, 4, 8};
    for (int d = 0; d < NDT; d++) {
        CHECK(strcmp(coopreduce_dtype_name((coopreduce_dtype)d), dnames[d]) == 0, "dtype %d name", d);
        CHECK(coopreduce_dtype_size((coopreduce_dtype)d) == dsize[d], "dtype %d size", d);
    }
    /* Result sizes and types, from the header's table. */
    coopreduce_dtype r;
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT16, 0, &r) == 4 && r == COOPREDUCE_FLOAT32, "f16 sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_BFLOAT16, 1, &r) == 2 && r == COOPREDUCE_BFLOAT16, "bf16 narrow sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_INT64, 0, &r) == 16 && r == COOPREDUCE_INT64, "i64 sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_UINT32, 0, &r) == 8 && r == COOPREDUCE_UINT64, "u32 sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_MEAN, COOPREDUCE_INT32, 0, &r) == 8 && r == COOPREDUCE_FLOAT64, "i32 mean");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_ABSMAX, COOPREDUCE_INT64, 0, &r) == 8 && r == COOPREDUCE_UINT64, "i64 absmax");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_ARGMAX, COOPREDUCE_FLOAT16, 0, &r) == 8 && r == COOPREDUCE_UINT64, "argmax");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_MIN, COOPREDUCE_BFLOAT16, 0, &r) == 2 && r == COOPREDUCE_BFLOAT16, "bf16 min");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_DOT, COOPREDUCE_INT32, 0, &r) == 0, "int dot unsupported");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUMSQ, COOPREDUCE_UINT64, 0, &r) == 0, "int sumsq unsupported");
    CHECK(coopreduce_result_size(COOPREDUCE_INT32) == 8 && coopreduce_result_size(COOPREDUCE_FLOAT32) == 4, "result_size");
    CHECK(strlen(coopreduce_status_string(COOPREDUCE_ERROR_OVERFLOW)) > 0 &&
          strcmp(coopreduce_status_string(COOPREDUCE_ERROR_EMPTY), "unknown status") != 0, "status strings");

    /* Errors; the result must stay untouched. */
    uint64_t res[2] = {0xA5A5A5A5A5A5A5A5ull, 0xA5A5A5A5A5A5A5A5ull};
    float x[4] = {1, 2, 3, 4};
    int32_t xi[4] = {1, 2, 3, 4};
    for (int op = COOPREDUCE_OP_MIN; op <= COOPREDUCE_OP_ARGMAX; op++) {
        if (op == COOPREDUCE_OP_MEAN || op == COOPREDUCE_OP_SUMSQ || op == COOPREDUCE_OP_NORM2 || op == COOPREDUCE_OP_DOT) continue;
        coopreduce_status s = coopreduce_reduce((coopreduce_op)op, x, NULL, res, 0, COOPREDUCE_FLOAT32, cpu, NULL);
        CHECK(s == COOPREDUCE_ERROR_EMPTY && strstr(coopreduce_last_error(cpu), "empty"), "%s of nothing: %d", coopreduce_op_name((coopreduce_op)op), (int)s);
    }
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUMSQ, xi, NULL, res, 4, COOPREDUCE_INT32, cpu, NULL) == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "int32 sumsq");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_DOT, x, NULL, res, 4, COOPREDUCE_FLOAT32, cpu, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT, "dot without y");
    CHECK(coopreduce_reduce((coopreduce_op)42, x, NULL, res, 4, COOPREDUCE_FLOAT32, cpu, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT, "op 42");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_ARGMAX, x, NULL, (char *)res + 4, 4, COOPREDUCE_FLOAT32, cpu, NULL) == COOPREDUCE_ERROR_MISALIGNED, "misaligned index result");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUM, xi, NULL, res, (1ull << 32) + 1, COOPREDUCE_UINT32, cpu, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT, "uint32 sum over 2^32");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, res, 4, (coopreduce_dtype)8, cpu, NULL) == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "dtype 8");
    CHECK(res[0] == 0xA5A5A5A5A5A5A5A5ull && res[1] == 0xA5A5A5A5A5A5A5A5ull, "result written on failure");
    /* Empty inputs that have a value. */
    double d = 1;
    CHECK(coopreduce_reduce(COOPREDUCE_OP_MEAN, x, NULL, &d, 0, COOPREDUCE_FLOAT64, cpu, NULL) == 0 && d != d, "mean of nothing is NaN");
    float f = 1;
    CHECK(coopreduce_reduce(COOPREDUCE_OP_NORM2, x, NULL, &f, 0, COOPREDUCE_FLOAT32, cpu, NULL) == 0 && f == 0 && !signbit(f), "norm2 of nothing");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_DOT, NULL, NULL, &f, 0, COOPREDUCE_FLOAT32, cpu, NULL) == 0 && f == 0, "dot of nothing");
    res[0] = res[1] = 7;
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUM, NULL, NULL, res, 0, COOPREDUCE_INT64, cpu, NULL) == 0 && res[0] == 0 && res[1] == 0, "int64 sum of nothing");
}

/* ---- b. Ordered float operations -------------------------------------------------------------- */
static int result_f(coopreduce_op op, const void *x, const void *y, uint64_t n, coopreduce_dtype dt, double *out)
{
    double d = 0;
    float f = 0;
    coopreduce_status s = coopreduce_reduce(op, x, y, dt == COOPREDUCE_FLOAT64 ? (void *)&d : (void *)&f, n, dt, cpu, NULL);
    if (!CHECK(s == COOPREDUCE_SUCCESS, "%s %s n=%llu: %s", coopreduce_op_name(op), coopreduce_dtype_name(dt),
               (unsigned long long)n, coopreduce_last_error(cpu)))
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
    coopreduce_sum(leaves, f64 ? (void *)&d : (void *)&f, n, f64 ? COOPREDUCE_FLOAT64 : COOPREDUCE_FLOAT32, cpu, NULL);
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

static void ordered_ops(int rounds, uint64_t max_n)
{
    static const coopreduce_dtype fdt[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64, COOPREDUCE_FLOAT16, COOPREDUCE_BFLOAT16};
    static const uint64_t sizes[] = {1, 2, 3, 127, 128, 129, 2047, 2048, 2049, 4095, 4096, 4097, 8193, 65537, 1000003};
    void *x = malloc(max_n * 8), *y = malloc(max_n * 8), *leaf = malloc(max_n * 8);
    for (int r = 0; r < rounds; r++) {
        coopreduce_dtype dt = fdt[r % 4];
        int f64 = dt == COOPREDUCE_FLOAT64;
        uint64_t n = r < 15 * 4 ? sizes[(r / 4) % 15] : 1 + rnd() % max_n;
        if (n > max_n) n = max_n;
        int kind = (int)(rnd() % 3);
        fill(x, n, dt, kind);
        fill(y, n, dt, (kind + 1) % 3);
        ref_exact ex;
        for (int op = 0; op < 3; op++) { /* sum, sumsq, dot */
            coopreduce_op o = op == 0 ? COOPREDUCE_OP_SUM : op == 1 ? COOPREDUCE_OP_SUMSQ : COOPREDUCE_OP_DOT;
            if (o == COOPREDUCE_OP_SUM && !dt_is_half(dt)) continue; /* test_cpu.c covers these */
            ref_exact_init(&ex);
            double abs_sum = 0;
            for (uint64_t i = 0; i < n; i++) {
                double a = load_value(x, i, dt), b = load_value(y, i, dt), v;
                if (f64) v = o == COOPREDUCE_OP_SUM ? a : o == COOPREDUCE_OP_SUMSQ ? a * a : a * b;
                else v = o == COOPREDUCE_OP_SUM ? (float)a : o == COOPREDUCE_OP_SUMSQ ? (float)((float)a * (float)a) : (float)((float)a * (float)b);
                if (f64) ((double *)leaf)[i] = v; else ((float *)leaf)[i] = (float)v;
                ref_exact_add(&ex, v);
                abs_sum += fabs(v);
            }
            double got;
            if (result_f(o, x, y, n, dt, &got)) continue;
            double want = canonical_of(leaf, n, f64);
            CHECK(same_bits(got, want), "%s %s n=%llu: %a != canonical of the leaves %a", coopreduce_op_name(o),
                  coopreduce_dtype_name(dt), (unsigned long long)n, got, want);
            /* the documented bound: 12 (11) roundings per level */
            int levels = n <= (f64 ? 2048u : 4096u) ? 1 : n <= (f64 ? 2048ull * 2048 : 4096ull * 4096) ? 2 : 3;
            double k = (f64 ? 11.0 : 12.0) * levels, u = f64 ? 0x1p-53 : 0x1p-24;
            long double err = fabsl((long double)got - ref_exact_to_long_double(&ex));
            CHECK(err <= k * u / (1 - k * u) * abs_sum * (1 + 1e-12) + (f64 ? 0 : 0x1p-149),
                  "%s %s n=%llu: error %Lg over bound", coopreduce_op_name(o), coopreduce_dtype_name(dt), (unsigned long long)n, err);
        }
        /* MEAN: the correctly rounded quotient of the canonical sum */
        double s, m;
        if (!result_f(COOPREDUCE_OP_SUM, x, NULL, n, dt, &s) && !result_f(COOPREDUCE_OP_MEAN, x, NULL, n, dt, &m))
            CHECK(is_rounded_quotient(s, n, m, !f64), "mean %s n=%llu: %a is not the rounded %a / n", coopreduce_dtype_name(dt),
                  (unsigned long long)n, m, s);
        /* NORM2 against long double */
        long double ss = 0;
        for (uint64_t i = 0; i < n; i++) ss += (long double)load_value(x, i, dt) * load_value(x, i, dt);
        double nr;
        if (!result_f(COOPREDUCE_OP_NORM2, x, NULL, n, dt, &nr)) {
            long double want = sqrtl(ss);
            double tol = (f64 ? 0x1p-53 : 0x1p-24) * (40 + 2 * log2((double)n + 1));
            CHECK(fabsl(nr - want) <= tol * want + (f64 ? 0 : 1e-40), "norm2 %s n=%llu: %a vs %La", coopreduce_dtype_name(dt),
                  (unsigned long long)n, nr, want);
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
        for (int i = 0; i < N; i++) { xf[i] = (i & 1 ? -1 : 1) * fv[c]; xd[i] = (i & 1 ? -1 : 1) * dv[c]; }
        double rf, rd;
        long double wf = fabsl((long double)fv[c]) * sqrtl(N), wd = fabsl((long double)dv[c]) * sqrtl(N);
        if (!result_f(COOPREDUCE_OP_NORM2, xf, NULL, N, COOPREDUCE_FLOAT32, &rf)) {
            if (wf > FLT_MAX) CHECK(isinf(rf), "norm2 f32 case %d: %a should overflow", c, rf);
            else CHECK(fabsl(rf - wf) <= 1e-5L * wf, "norm2 f32 case %d: %a vs %La", c, rf, wf);
        }
        if (!result_f(COOPREDUCE_OP_NORM2, xd, NULL, N, COOPREDUCE_FLOAT64, &rd)) {
            if (wd > DBL_MAX) CHECK(isinf(rd), "norm2 f64 case %d: %a should overflow", c, rd);
            else CHECK(fabsl(rd - wd) <= 1e-13L * wd, "norm2 f64 case %d: %a vs %La", c, rd, wd);
        }
    }
    /* mixed: one huge, many tiny, many medium (big sum wins, medium folded in) */
    for (int i = 0; i < N; i++) xd[i] = i == 77 ? 1e200 : i % 3 ? 1e-200 : 1.0;
    double r;
    if (!result_f(COOPREDUCE_OP_NORM2, xd, NULL, N, COOPREDUCE_FLOAT64, &r)) CHECK(fabs(r - 1e200) <= 1e186, "mixed norm2 %a", r);
    xd[5] = INFINITY;
    if (!result_f(COOPREDUCE_OP_NORM2, xd, NULL, N, COOPREDUCE_FLOAT64, &r)) CHECK(r == INFINITY, "norm2 with inf: %a", r);
    xd[9] = NAN;
    if (!result_f(COOPREDUCE_OP_NORM2, xd, NULL, N, COOPREDUCE_FLOAT64, &r)) CHECK(r != r, "norm2 with NaN: %a", r);
}

/* ---- c. Order-independent operations ------------------------------------------------------------ */
/* The reference result bytes for (op, dtype) over x, from the header's rules. */
static size_t reference(coopreduce_op op, const void *x, uint64_t n, coopreduce_dtype dt, unsigned char out[16])
{
    size_t es = coopreduce_dtype_size(dt);
    memset(out, 0, 16);
    if (dt_is_float(dt)) {
        uint64_t first_nan = UINT64_MAX;
        for (uint64_t i = 0; i < n; i++) if (load_value(x, i, dt) != load_value(x, i, dt)) { first_nan = i; break; }
        if (op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX) {
            uint64_t best = 0;
            if (first_nan != UINT64_MAX) best = first_nan;
            else
                for (uint64_t i = 1; i < n; i++) {
                    double v = load_value(x, i, dt), b = load_value(x, best, dt);
                    if (op == COOPREDUCE_OP_ARGMIN ? v < b : v > b) best = i;
                }
            memcpy(out, &best, 8);
            return 8;
        }
        if (first_nan != UINT64_MAX) {
            uint64_t nanbits = dt == COOPREDUCE_FLOAT64 ? 0x7ff8000000000000ull : dt == COOPREDUCE_FLOAT32 ? 0x7fc00000u
                             : dt == COOPREDUCE_FLOAT16 ? 0x7e00u : 0x7fc0u;
            memcpy(out, &nanbits, es);
            return es;
        }
        uint64_t best = 0;
        for (uint64_t i = 1; i < n; i++) {
            double v = load_value(x, i, dt), b = load_value(x, best, dt);
            int better;
            if (op == COOPREDUCE_OP_ABSMAX) better = fabs(v) > fabs(b);
            else if (v == b) better = op == COOPREDUCE_OP_MIN ? signbit(v) && !signbit(b) : !signbit(v) && signbit(b);
            else better = op == COOPREDUCE_OP_MIN ? v < b : v > b;
            if (better) best = i;
        }
        memcpy(out, (const char *)x + best * es, es);
        if (op == COOPREDUCE_OP_ABSMAX) out[es - 1] &= 0x7f; /* clear the sign (little-endian) */
        return es;
    }
    __int128 s = 0, bv = load_int(x, 0, dt);
    uint64_t bi = 0;
    for (uint64_t i = 0; i < n; i++) s += load_int(x, i, dt);
    if (op == COOPREDUCE_OP_SUM) {
        if (es == 4) { int64_t v = (int64_t)s; memcpy(out, &v, 8); return 8; }
        memcpy(out, &s, 16);
        return 16;
    }
    if (op == COOPREDUCE_OP_MEAN) { /* checked separately (exactly) */
        return 0;
    }
    for (uint64_t i = 1; i < n; i++) {
        __int128 v = load_int(x, i, dt);
        __int128 av = v < 0 ? -v : v, ab = bv < 0 ? -bv : bv;
        int better = op == COOPREDUCE_OP_MIN || op == COOPREDUCE_OP_ARGMIN ? v < bv
                   : op == COOPREDUCE_OP_ABSMAX ? av > ab : v > bv;
        if (better) { bv = v; bi = i; }
    }
    if (op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX) { memcpy(out, &bi, 8); return 8; }
    if (op == COOPREDUCE_OP_ABSMAX && bv < 0) bv = -bv;
    memcpy(out, &bv, es);
    return es;
}

static void plant_specials(void *x, uint64_t n, coopreduce_dtype dt)
{
    if (!dt_is_float(dt) || n < 2) return;
    int what = (int)(rnd() % 5);
    uint64_t i = rnd() % n, j = rnd() % n;
    double v = what == 0 ? NAN : what == 1 ? INFINITY : what == 2 ? -INFINITY : what == 3 ? -0.0 : 0.0;
    for (int k = 0; k < 2; k++) {
        uint64_t at = k ? j : i;
        switch (dt) {
        case COOPREDUCE_FLOAT32: ((float *)x)[at] = (float)v; break;
        case COOPREDUCE_FLOAT64: ((double *)x)[at] = v; break;
        case COOPREDUCE_FLOAT16: ((uint16_t *)x)[at] = what == 0 ? 0x7e01 : what == 1 ? 0x7c00 : what == 2 ? 0xfc00 : what == 3 ? 0x8000 : 0; break;
        default: ((uint16_t *)x)[at] = what == 0 ? 0x7fc1 : what == 1 ? 0x7f80 : what == 2 ? 0xff80 : what == 3 ? 0x8000 : 0; break;
        }
    }
}

/* The CPU folds a block of elements only when a summary of its bits says it may change the best
 * (src/cpu/ops.c, SCAN_BLOCK = 4096): data built to defeat a wrong summary. Small values with
 * ties (kind 2), then one decisive element planted in a later block: a new extreme, its
 * negative-zero twin, an equal value (argmin/argmax keep the first index), or a NaN; and
 * ascending and descending runs, where every block changes the best. Checked against the
 * reference fold, byte for byte. */
static void put(void *x, uint64_t i, coopreduce_dtype dt, double v)
{
    store_value(x, i, dt, dt_is_unsigned(dt) ? fabs(v) : v); /* exact for the values used here */
}

static void block_skipping(int rounds)
{
    static const coopreduce_op ops[] = {COOPREDUCE_OP_MIN, COOPREDUCE_OP_MAX, COOPREDUCE_OP_ABSMAX,
                                        COOPREDUCE_OP_ARGMIN, COOPREDUCE_OP_ARGMAX};
    const uint64_t max_n = 6 * 4096 + 5;
    void *x = malloc(max_n * 8);
    for (int r = 0; r < rounds; r++) {
        const coopreduce_dtype dt = all_dtypes[r % NDT];
        const uint64_t n = 4098 + rnd() % (max_n - 4097); /* a late block exists: at >= 4097 */
        const int shape = (int)(rnd() % 6);
        if (shape == 4 || shape == 5) { /* ascending / descending, small integers */
            for (uint64_t i = 0; i < n; i++) put(x, i, dt, (double)((shape == 4 ? i : n - i) % 1000));
        } else {
            for (uint64_t i = 0; i < n; i++) put(x, i, dt, (double)((int)(rnd() % 5) - 2)); /* -2..2 */
            const uint64_t at = 4097 + rnd() % (n - 4097); /* past the first block */
            const uint64_t at2 = 1 + rnd() % (n - 1);
            switch (shape) {
            case 0: put(x, at, dt, (rnd() & 1) ? 3.0 : -3.0); break;      /* a new extreme */
            case 1: /* every zero +0.0, then one -0.0 late: MIN's -0.0 and MAX's +0.0 */
                for (uint64_t i = 0; i < n; i++) put(x, i, dt, 0.0);
                if (dt_is_float(dt)) put(x, at, dt, -0.0);
                break;
            case 2: put(x, at, dt, -2.0); put(x, at2, dt, 2.0); break;   /* repeats of the extremes */
            default: if (dt_is_float(dt)) put(x, at, dt, NAN); break;        /* a NaN late */
            }
        }
        for (int k = 0; k < 5; k++) {
            unsigned char want[16], got[16];
            const size_t rs = reference(ops[k], x, n, dt, want);
            memset(got, 0xA5, 16);
            if (!CHECK(coopreduce_reduce(ops[k], x, NULL, got, n, dt, cpu, NULL) == COOPREDUCE_SUCCESS,
                       "block skipping: %s", coopreduce_last_error(cpu)))
                continue;
            CHECK(memcmp(got, want, rs) == 0, "block skipping: %s %s n=%llu shape %d: got 0x%016llx, want 0x%016llx",
                  coopreduce_op_name(ops[k]), coopreduce_dtype_name(dt), (unsigned long long)n, shape,
                  (unsigned long long)*(uint64_t *)got, (unsigned long long)*(uint64_t *)want);
        }
    }
    free(x);
}

static void unordered_ops(int rounds, uint64_t max_n)
{
    static const coopreduce_op ops[] = {COOPREDUCE_OP_MIN, COOPREDUCE_OP_MAX, COOPREDUCE_OP_ABSMAX, COOPREDUCE_OP_ARGMIN,
                                        COOPREDUCE_OP_ARGMAX, COOPREDUCE_OP_SUM, COOPREDUCE_OP_MEAN};
    void *x = malloc(max_n * 8);
    for (int r = 0; r < rounds; r++) {
        coopreduce_dtype dt = all_dtypes[r % NDT];
        uint64_t n = r < 3 * NDT ? (uint64_t)(1 + r / NDT) : 1 + (rnd() >> (64 - 21));
        if (n > max_n) n = max_n;
        fill(x, n, dt, (int)(rnd() % 3));
        if (rnd() & 1) plant_specials(x, n, dt);
        if (dt == COOPREDUCE_INT64 && (rnd() & 1)) /* extremes: sums far outside 64 bits */
            for (uint64_t i = 0; i < n; i++) ((int64_t *)x)[i] = (rnd() & 1) ? INT64_MAX - (int64_t)(rnd() % 3) : INT64_MIN;
        for (int k = 0; k < 7; k++) {
            coopreduce_op op = ops[k];
            if (dt_is_float(dt) && (op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN)) continue;
            unsigned char want[16], got[16];
            size_t rs = reference(op, x, n, dt, want);
            memset(got, 0xA5, 16);
            coopreduce_status s = coopreduce_reduce(op, x, NULL, got, n, dt, cpu, NULL);
            int overflow = s == COOPREDUCE_ERROR_OVERFLOW;
            if (op == COOPREDUCE_OP_SUM && (dt == COOPREDUCE_INT64 || dt == COOPREDUCE_UINT64)) {
                __int128 v;
                memcpy(&v, want, 16);
                int fits = dt == COOPREDUCE_INT64 ? v >= INT64_MIN && v <= INT64_MAX : v >= 0 && v <= (__int128)UINT64_MAX;
                CHECK(overflow == !fits, "%s sum n=%llu: overflow status %d, fits %d", coopreduce_dtype_name(dt), (unsigned long long)n, (int)s, fits);
            } else if (!CHECK(s == COOPREDUCE_SUCCESS, "%s %s n=%llu: %s", coopreduce_op_name(op), coopreduce_dtype_name(dt),
                              (unsigned long long)n, coopreduce_last_error(cpu))) {
                continue;
            }
            if (op == COOPREDUCE_OP_MEAN) {
                __int128 S = 0;
                for (uint64_t i = 0; i < n; i++) S += load_int(x, i, dt);
                double m;
                memcpy(&m, got, 8);
                /* S as an exact sum of three doubles, then the exact quotient check */
                int neg = S < 0;
                unsigned __int128 a = neg ? -(unsigned __int128)S : (unsigned __int128)S;
                double parts[3] = {ldexp((double)(uint64_t)(a >> 96), 96), ldexp((double)(uint32_t)(a >> 64), 64),
                                   (double)(uint64_t)a};
                /* (uint64_t)a is 64 bits: split it too, so every part is exact */
                double lo_hi = ldexp((double)(uint32_t)((uint64_t)a >> 32), 32), lo_lo = (double)(uint32_t)a;
                parts[2] = lo_hi;
                ref_exact acc;
                int ok = 1;
                for (int side = -1; side <= 1 && ok; side += 2) {
                    int e;
                    frexp(m, &e);
                    double half_ulp = ldexp(1.0, e - 54);
                    ref_exact_init(&acc);
                    for (int q = 0; q < 3; q++) ref_exact_add(&acc, neg ? -parts[q] : parts[q]);
                    ref_exact_add(&acc, neg ? -lo_lo : lo_lo);
                    for (int b = 0; b < 64; b++)
                        if ((n >> b) & 1) { ref_exact_add(&acc, -ldexp(m, b)); ref_exact_add(&acc, side * ldexp(half_ulp, b)); }
                    int sg = ref_exact_sign(&acc);
                    ok = side < 0 ? sg <= 0 : sg >= 0;
                }
                CHECK(ok || (m == 0 && S == 0), "mean %s n=%llu: %a is not the rounded quotient", coopreduce_dtype_name(dt), (unsigned long long)n, m);
                continue;
            }
            CHECK(memcmp(got, want, rs) == 0, "%s %s n=%llu: result bytes differ (got 0x%016llx, want 0x%016llx)",
                  coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)n,
                  (unsigned long long)*(uint64_t *)got, (unsigned long long)*(uint64_t *)want);
        }
    }
    free(x);
    /* Fixed cases from the header. */
    float z[3] = {0.0f, -0.0f, 0.0f};
    uint64_t idx = 9;
    float f = 1;
    coopreduce_reduce(COOPREDUCE_OP_MIN, z, NULL, &f, 3, COOPREDUCE_FLOAT32, cpu, NULL);
    CHECK(f == 0 && signbit(f), "min(+0,-0,+0) = -0");
    coopreduce_reduce(COOPREDUCE_OP_MAX, z + 1, NULL, &f, 1, COOPREDUCE_FLOAT32, cpu, NULL);
    CHECK(f == 0 && signbit(f), "max(-0) = -0");
    coopreduce_reduce(COOPREDUCE_OP_ARGMIN, z, NULL, &idx, 3, COOPREDUCE_FLOAT32, cpu, NULL);
    CHECK(idx == 0, "argmin(+0,-0,+0) = 0 (IEEE equality), got %llu", (unsigned long long)idx);
    float w[5] = {1, NAN, 3, NAN, -5};
    coopreduce_reduce(COOPREDUCE_OP_ARGMAX, w, NULL, &idx, 5, COOPREDUCE_FLOAT32, cpu, NULL);
    CHECK(idx == 1, "argmax with NaN = first NaN");
    uint32_t fb = 0;
    coopreduce_reduce(COOPREDUCE_OP_MIN, w, NULL, &fb, 5, COOPREDUCE_FLOAT32, cpu, NULL);
    CHECK(fb == 0x7fc00000u, "min with NaN = canonical NaN, got 0x%x", fb);
    /* Means that land exactly on a rounding tie: to even. */
    float tf[2] = {0x1p-149f, 0.0f};
    coopreduce_reduce(COOPREDUCE_OP_MEAN, tf, NULL, &f, 2, COOPREDUCE_FLOAT32, cpu, NULL);
    CHECK(f == 0 && !signbit(f), "mean(2^-149, 0) = +0 (tie to even), got %a", f);
    int64_t ti[2] = {(1ll << 53) + 1, 0};
    double dm = 0;
    coopreduce_reduce(COOPREDUCE_OP_MEAN, ti, NULL, &dm, 2, COOPREDUCE_INT64, cpu, NULL);
    CHECK(dm == 0x1p52, "mean(2^53+1, 0) = 2^52 (tie to even), got %a", dm);
    ti[0] = (1ll << 53) + 3;
    coopreduce_reduce(COOPREDUCE_OP_MEAN, ti, NULL, &dm, 2, COOPREDUCE_INT64, cpu, NULL);
    CHECK(dm == 0x1p52 + 2, "mean(2^53+3, 0) = 2^52+2 (tie to even), got %a", dm);
    ti[0] = (1ll << 53) + 1;
    int64_t t3[3] = {(1ll << 53) + 2, 0, 0}; /* (2^53+2)/3 is not an integer: sticky decides */
    coopreduce_reduce(COOPREDUCE_OP_MEAN, t3, NULL, &dm, 3, COOPREDUCE_INT64, cpu, NULL);
    CHECK(dm == 3002399751580331.5, "mean(2^53+2, 0, 0) = %a (nearest to ...331.33 in steps of 0.5)", dm);
    int32_t im[2] = {INT32_MIN, 5};
    uint32_t ua = 0;
    coopreduce_reduce(COOPREDUCE_OP_ABSMAX, im, NULL, &ua, 2, COOPREDUCE_INT32, cpu, NULL);
    CHECK(ua == 0x80000000u, "absmax(INT32_MIN) = 2^31, got %u", ua);
}

/* ---- The mean's division: values.h's estimate-and-correct quotient against the compiler's
 * 128-bit division, on the shapes cr_round_div gives it (quotients of prec + 2 to prec + 4 bits,
 * every divisor length) and on exact multiples, where the remainder is zero. ---------------- */
static void quotient_helper(int rounds)
{
    for (int b = 0; b <= 64; b++) {
        const uint64_t w = b == 0 ? 0 : b == 64 ? ~0ull : (1ull << (b - 1)) | (rnd() & ((1ull << (b - 1)) - 1));
        CHECK(cr_bitlen64(w) == b, "bitlen64(%llx) = %d, want %d", (unsigned long long)w, cr_bitlen64(w), b);
        const cr_u128 v = (cr_u128)w << 64 | rnd();
        CHECK(cr_bitlen128(v) == (b ? 64 + b : cr_bitlen64((uint64_t)v)), "bitlen128 of hi length %d", b);
    }
    for (int r = 0; r < rounds; r++) {
        const int bn = 1 + (int)(rnd() % 64), qbits = 25 + (int)(rnd() % 33); /* q of 25..57 bits */
        uint64_t n = bn == 64 ? rnd() | 1ull << 63 : ((1ull << (bn - 1)) | (rnd() & ((1ull << (bn - 1)) - 1)));
        if (r % 7 == 0) n = bn == 64 ? ~0ull : (1ull << bn) - 1; /* all ones */
        const uint64_t qt = (1ull << (qbits - 1)) | (rnd() & ((1ull << (qbits - 1)) - 1));
        cr_u128 num = (cr_u128)qt * n;
        const int kind = r % 4; /* exact multiple, +1, + n - 1, random remainder */
        if (kind == 1) num += 1;
        if (kind == 2) num += n - 1;
        if (kind == 3) num += rnd() % n;
        int inexact = -1;
        const uint64_t q = cr_div_small_quotient(num, n, &inexact);
        const int ok = (cr_u128)q == num / n && inexact == (num % n != 0);
        CHECK(ok, "quotient of (%llx:%016llx) / %llx: %llx inexact %d, want %llx inexact %d",
              (unsigned long long)(uint64_t)(num >> 64), (unsigned long long)(uint64_t)num,
              (unsigned long long)n, (unsigned long long)q, inexact,
              (unsigned long long)(uint64_t)(num / n), (int)(num % n != 0));
    }
}

/* ---- NORM2's class tests on bits (values.h, used by the GPU's medium pass) against the float
 * tests of cr_norm2_leaf: every 16-bit pattern, and the float32 / float64 constants. ------- */
static void norm2_class_bits(void)
{
    for (uint32_t b = 0; b < 0x8000u; b++) {
        const float fb = cr_bf16_to_f32((uint16_t)b), fh = cr_f16_to_f32((uint16_t)b);
        if (fb == fb) {
            CHECK((fb > CR_TBIG_F32) == (b > CR_NORM2_BIG_BITS_BF16), "bf16 0x%04x big test", b);
            CHECK((fb != 0 && fb < CR_TSML_F32) == ((uint16_t)(b - 1) < CR_NORM2_SML_BITS_BF16 - 1), "bf16 0x%04x small test", b);
        } else {
            CHECK(b > CR_NORM2_BIG_BITS_BF16, "bf16 NaN 0x%04x tests as big", b);
        }
        if (fh == fh) {
            CHECK((fh > CR_TBIG_F32) == (b > CR_NORM2_BIG_BITS_F16), "f16 0x%04x big test", b);
            CHECK((fh != 0 && fh < CR_TSML_F32) == ((uint16_t)(b - 1) < CR_NORM2_SML_BITS_F16 - 1), "f16 0x%04x small test", b);
        } else {
            CHECK(b > CR_NORM2_BIG_BITS_F16, "f16 NaN 0x%04x tests as big", b);
        }
    }
    CHECK(cr_f32_from(CR_NORM2_BIG_BITS_F32) == CR_TBIG_F32 && cr_f32_from(CR_NORM2_SML_BITS_F32) == CR_TSML_F32,
          "float32 class bits are TBIG's and TSML's");
    CHECK(cr_f64_from((uint64_t)CR_NORM2_BIG_HI_F64 << 32) == CR_TBIG_F64 && cr_f64_from((uint64_t)CR_NORM2_SML_HI_F64 << 32) == CR_TSML_F64,
          "float64 class high words are TBIG's and TSML's (low words zero)");
}

/* ---- The ordered operations against their definition (docs/DETERMINISM.md, "Operations"):
 * the canonical sum of the leaves, each leaf computed here element by element with values.h's
 * rules, summed by coopreduce_sum (whose bits tests/test_cpu.c checks against exact references
 * and the GPU's golden bits), then the final rule. The library computes the leaves with vector
 * loops and takes NORM2's medium-only chunks without their big and small trees; neither may
 * change a bit. Chunks are seeded with class-boundary values (TBIG, TSML and their neighbours,
 * subnormals, zeros of both signs) or left in the medium class, and sizes are ragged. ------ */
static void ordered_definition(int rounds)
{
    const uint64_t max_n = 5 * 4096 + 7;
    float *lf[3];
    double *ld[3];
    for (int k = 0; k < 3; k++) { lf[k] = malloc(max_n * 4); ld[k] = malloc(max_n * 8); }
    unsigned char *x = malloc(max_n * 8), *y = malloc(max_n * 8);
    static const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64, COOPREDUCE_FLOAT16, COOPREDUCE_BFLOAT16};
    const float ef[] = {CR_TBIG_F32, nextafterf(CR_TBIG_F32, INFINITY), nextafterf(CR_TBIG_F32, 0), CR_TSML_F32,
                        nextafterf(CR_TSML_F32, 0), nextafterf(CR_TSML_F32, INFINITY), 0x1p-149f, -0.0f, 0.0f, 3e38f};
    const double ed[] = {CR_TBIG_F64, nextafter(CR_TBIG_F64, INFINITY), nextafter(CR_TBIG_F64, 0), CR_TSML_F64,
                         nextafter(CR_TSML_F64, 0), nextafter(CR_TSML_F64, INFINITY), 0x1p-1074, -0.0, 0.0, 1e308};
    for (int r = 0; r < rounds; r++) {
        const coopreduce_dtype dt = dts[r % 4];
        const int f64 = dt == COOPREDUCE_FLOAT64, half = !f64 && dt != COOPREDUCE_FLOAT32;
        const uint64_t n = 1 + rnd() % max_n, C = f64 ? 2048 : 4096;
        const size_t es = coopreduce_dtype_size(dt);
        for (uint64_t i = 0; i < 2 * n; i++) { /* x then y, in one sweep of distributions */
            unsigned char *p = i < n ? x : y;
            const uint64_t e = i < n ? i : i - n;
            const double v = (unif() * 2 - 1) * ldexp(1, (int)(rnd() % 41) - 20);
            if (f64) ((double *)p)[e] = v;
            else if (!half) ((float *)p)[e] = (float)v;
            else ((uint16_t *)p)[e] = (uint16_t)(rnd() & 0xffff); /* any pattern; inf and NaN removed below */
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
                    if (f64) ((double *)x)[at] = (rnd() & 1) ? -ed[w] : ed[w];
                    else ((float *)x)[at] = (rnd() & 1) ? -ef[w] : ef[w];
                }
        static const coopreduce_op ops[] = {COOPREDUCE_OP_SUMSQ, COOPREDUCE_OP_DOT, COOPREDUCE_OP_NORM2, COOPREDUCE_OP_SUM};
        for (int k = 0; k < 4; k++) {
            const coopreduce_op op = ops[k];
            if (op == COOPREDUCE_OP_SUM && !half) continue; /* the canonical sum itself */
            for (uint64_t i = 0; i < n; i++) {
                if (f64) {
                    const double a = ((double *)x)[i], b = ((double *)y)[i];
                    if (op == COOPREDUCE_OP_NORM2) cr_norm2_leaf_F64(a, &ld[0][i], &ld[1][i], &ld[2][i]);
                    else ld[0][i] = op == COOPREDUCE_OP_DOT ? a * b : a * a;
                } else {
                    const float a = half ? (dt == COOPREDUCE_FLOAT16 ? cr_f16_to_f32(((uint16_t *)x)[i]) : cr_bf16_to_f32(((uint16_t *)x)[i])) : ((float *)x)[i];
                    const float b = half ? (dt == COOPREDUCE_FLOAT16 ? cr_f16_to_f32(((uint16_t *)y)[i]) : cr_bf16_to_f32(((uint16_t *)y)[i])) : ((float *)y)[i];
                    if (op == COOPREDUCE_OP_NORM2) cr_norm2_leaf_F32(a, &lf[0][i], &lf[1][i], &lf[2][i]);
                    else lf[0][i] = op == COOPREDUCE_OP_DOT ? a * b : op == COOPREDUCE_OP_SUM ? a : a * a;
                }
            }
            double want;
            const int sums = op == COOPREDUCE_OP_NORM2 ? 3 : 1;
            double acc[3] = {0, 0, 0};
            for (int q = 0; q < sums; q++) {
                if (f64) {
                    CHECK(coopreduce_sum(ld[q], &acc[q], n, COOPREDUCE_FLOAT64, cpu, NULL) == 0, "sum of leaves");
                } else {
                    float f;
                    CHECK(coopreduce_sum(lf[q], &f, n, COOPREDUCE_FLOAT32, cpu, NULL) == 0, "sum of leaves");
                    acc[q] = f;
                }
            }
            if (op == COOPREDUCE_OP_NORM2)
                want = f64 ? cr_norm2_combine_F64(acc[0], acc[1], acc[2])
                           : (double)cr_norm2_combine_F32((float)acc[0], (float)acc[1], (float)acc[2]);
            else
                want = acc[0];
            unsigned char got[8];
            if (!CHECK(coopreduce_reduce(op, x, y, got, n, dt, cpu, NULL) == 0, "%s: %s", coopreduce_op_name(op),
                       coopreduce_last_error(cpu)))
                continue;
            uint64_t gb = 0, wb;
            memcpy(&gb, got, f64 ? 8 : 4);
            if (f64) wb = cr_f64_bits(want);
            else wb = cr_f32_bits((float)want);
            if (want != want) wb = f64 ? CR_NAN_F64 : CR_NAN_F32;
            CHECK(gb == wb, "%s %s n=%llu: bits 0x%llx, the definition gives 0x%llx (%zu-byte input)", coopreduce_op_name(op),
                  coopreduce_dtype_name(dt), (unsigned long long)n, (unsigned long long)gb, (unsigned long long)wb, es);
        }
    }
    for (int k = 0; k < 3; k++) { free(lf[k]); free(ld[k]); }
    free(x);
    free(y);
}

/* The branch-free binary16 widening of the CPU's vector loops against the reference one. */
static void f16_widening(void)
{
    for (uint32_t b = 0; b < 0x10000u; b++)
        CHECK(cr_f32_bits(cr_f16_to_f32_nobranch((uint16_t)b)) == cr_f32_bits(cr_f16_to_f32((uint16_t)b)),
              "f16 0x%04x widens to 0x%08x, want 0x%08x", b, cr_f32_bits(cr_f16_to_f32_nobranch((uint16_t)b)),
              cr_f32_bits(cr_f16_to_f32((uint16_t)b)));
}

/* ---- d. Thread counts ---------------------------------------------------------------------------- */
static void thread_counts(void)
{
    const uint64_t n = 3000017;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    fill(x, n, COOPREDUCE_FLOAT32, 1);
    fill(y, n, COOPREDUCE_FLOAT32, 1);
    static const coopreduce_op ops[] = {COOPREDUCE_OP_SUMSQ, COOPREDUCE_OP_NORM2, COOPREDUCE_OP_DOT, COOPREDUCE_OP_MEAN, COOPREDUCE_OP_ARGMAX};
    for (int k = 0; k < 5; k++) {
        uint64_t first = 0;
        for (int t = 0; t < 4; t++) {
            static const int th[] = {1, 2, 3, 8};
            coopreduce_set_threads(cpu, th[t]);
            uint64_t r = 0;
            coopreduce_reduce(ops[k], x, y, &r, n, COOPREDUCE_FLOAT32, cpu, NULL);
            if (t == 0) first = r;
            CHECK(r == first, "%s with %d threads: 0x%llx != 0x%llx", coopreduce_op_name(ops[k]), th[t],
                  (unsigned long long)r, (unsigned long long)first);
        }
    }
    coopreduce_set_threads(cpu, 0);
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
        fill(x, n, dt, (int)(rnd() % 3));
        static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_MEAN, COOPREDUCE_OP_NORM2};
        coopreduce_op op = ops[r % 3];
        float wide = 0;
        uint16_t narrow = 0;
        coopreduce_set_narrow_result(cpu, 0);
        coopreduce_reduce(op, x, NULL, &wide, n, dt, cpu, NULL);
        coopreduce_set_narrow_result(cpu, 1);
        coopreduce_status s = coopreduce_reduce(op, x, NULL, &narrow, n, dt, cpu, NULL);
        coopreduce_set_narrow_result(cpu, 0);
        uint16_t want;
        if (dt == COOPREDUCE_FLOAT16) {
            _Float16 h = (_Float16)wide; /* the compiler's round-to-nearest-even conversion */
            memcpy(&want, &h, 2);
            if (wide != wide) want = 0x7e00;
        } else {
            uint32_t u;
            memcpy(&u, &wide, 4);
            want = wide != wide ? 0x7fc0 : (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
        }
        CHECK(s == COOPREDUCE_SUCCESS && narrow == want, "narrow %s %s: 0x%04x != 0x%04x (wide %a)", coopreduce_op_name(op),
              coopreduce_dtype_name(dt), narrow, want, wide);
    }
    free(x);
}

int main(int argc, char **argv)
{
    test_seed_init("test_ops_cpu");
    if (coopreduce_create_cpu(&cpu, 0) != COOPREDUCE_SUCCESS) {
        printf("cannot create a CPU handle: %s\n", coopreduce_last_error(NULL));
        return 1;
    }
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    api_table();
    ordered_ops(quick ? 80 : 200, quick ? 70000 : 3000000);
    norm2_edges();
    unordered_ops(quick ? 80 : 240, 1u << 20);
    block_skipping(quick ? 200 : 800);
    thread_counts();
    narrowing();
    quotient_helper(quick ? 200000 : 2000000);
    norm2_class_bits();
    f16_widening();
    ordered_definition(quick ? 40 : 160);
    coopreduce_destroy(cpu);
    return check_summary("test_ops_cpu");
}
