/* test_ops_unordered.c — the order-independent operations on the CPU: MIN, MAX, ABSMAX, ARGMIN,
 * ARGMAX of every dtype, integer SUM and MEAN, against plain loops written here from the rules in
 * the header (NaN first, -0.0 < +0.0 for min/max, first index on ties, IEEE equality for
 * argmin/argmax; exact __int128 sums; overflow reported; means checked exactly), with special
 * values planted; data built to defeat the CPU's block skipping; fixed cases from the header.
 *
 * No GPU needed. Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coopreduce.h"
#include "ops_data.h"
#include "util.h"
#include "ref_exact.h"

/* ---- c. Order-independent operations ------------------------------------------------------------ */
/* The reference result bytes for (op, dtype) over x, from the header's rules. */
static size_t reference(coopreduce_op op, const void *x, uint64_t n, coopreduce_dtype dt,
                        unsigned char out[16])
{
    size_t es = coopreduce_dtype_size(dt);
    memset(out, 0, 16);
    if (dt_is_float(dt)) {
        uint64_t first_nan = UINT64_MAX;
        for (uint64_t i = 0; i < n; i++)
            if (load_value(x, i, dt) != load_value(x, i, dt)) {
                first_nan = i;
                break;
            }
        if (op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX) {
            uint64_t best = 0;
            if (first_nan != UINT64_MAX)
                best = first_nan;
            else
                for (uint64_t i = 1; i < n; i++) {
                    double v = load_value(x, i, dt), b = load_value(x, best, dt);
                    if (op == COOPREDUCE_OP_ARGMIN ? v < b : v > b) best = i;
                }
            memcpy(out, &best, 8);
            return 8;
        }
        if (first_nan != UINT64_MAX) {
            uint64_t nanbits = dt == COOPREDUCE_FLOAT64   ? 0x7ff8000000000000ull
                               : dt == COOPREDUCE_FLOAT32 ? 0x7fc00000u
                               : dt == COOPREDUCE_FLOAT16 ? 0x7e00u
                                                          : 0x7fc0u;
            memcpy(out, &nanbits, es);
            return es;
        }
        uint64_t best = 0;
        for (uint64_t i = 1; i < n; i++) {
            double v = load_value(x, i, dt), b = load_value(x, best, dt);
            int better;
            if (op == COOPREDUCE_OP_ABSMAX)
                better = fabs(v) > fabs(b);
            else if (v == b)
                better =
                    op == COOPREDUCE_OP_MIN ? signbit(v) && !signbit(b) : !signbit(v) && signbit(b);
            else
                better = op == COOPREDUCE_OP_MIN ? v < b : v > b;
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
        if (es == 4) {
            int64_t v = (int64_t)s;
            memcpy(out, &v, 8);
            return 8;
        }
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
                     : op == COOPREDUCE_OP_ABSMAX                          ? av > ab
                                                                           : v > bv;
        if (better) {
            bv = v;
            bi = i;
        }
    }
    if (op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX) {
        memcpy(out, &bi, 8);
        return 8;
    }
    if (op == COOPREDUCE_OP_ABSMAX && bv < 0) bv = -bv;
    memcpy(out, &bv, es);
    return es;
}

static void plant_specials(void *x, uint64_t n, coopreduce_dtype dt)
{
    if (!dt_is_float(dt) || n < 2) return;
    int what = (int)(rnd() % 5);
    uint64_t i = rnd() % n, j = rnd() % n;
    double v = what == 0   ? NAN
               : what == 1 ? INFINITY
               : what == 2 ? -INFINITY
               : what == 3 ? -0.0
                           : 0.0;
    for (int k = 0; k < 2; k++) {
        uint64_t at = k ? j : i;
        switch (dt) {
        case COOPREDUCE_FLOAT32: ((float *)x)[at] = (float)v; break;
        case COOPREDUCE_FLOAT64: ((double *)x)[at] = v; break;
        case COOPREDUCE_FLOAT16:
            ((uint16_t *)x)[at] = what == 0   ? 0x7e01
                                  : what == 1 ? 0x7c00
                                  : what == 2 ? 0xfc00
                                  : what == 3 ? 0x8000
                                              : 0;
            break;
        default:
            ((uint16_t *)x)[at] = what == 0   ? 0x7fc1
                                  : what == 1 ? 0x7f80
                                  : what == 2 ? 0xff80
                                  : what == 3 ? 0x8000
                                              : 0;
            break;
        }
    }
}

/* The CPU folds a block of elements only when a summary of its bits says it may change the best
 * (src/g_cpu/ops.c, SCAN_BLOCK = 4096): data built to defeat a wrong summary. Small values with
 * ties (kind 2), then one decisive element planted in a later block: a new extreme, its
 * negative-zero twin, an equal value (argmin/argmax keep the first index), or a NaN; and
 * ascending and descending runs, where every block changes the best. Checked against the
 * reference fold, byte for byte. */
static void put(void *x, uint64_t i, coopreduce_dtype dt, double v)
{
    store_value(x, i, dt, dt_is_unsigned(dt) ? fabs(v) : v); /* exact for the values used here */
}

static void block_skipping(void)
{
    const int rounds = test_quick ? 200 : 800;
    static const coopreduce_op ops[] = {COOPREDUCE_OP_MIN, COOPREDUCE_OP_MAX, COOPREDUCE_OP_ABSMAX,
                                        COOPREDUCE_OP_ARGMIN, COOPREDUCE_OP_ARGMAX};
    const uint64_t max_n = 6 * 4096 + 5;
    void *x = malloc(max_n * 8);
    for (int r = 0; r < rounds; r++) {
        const coopreduce_dtype dt = (coopreduce_dtype)(r % COOPREDUCE_DTYPE_COUNT);
        const uint64_t n = 4098 + rnd() % (max_n - 4097); /* a late block exists: at >= 4097 */
        const int shape = (int)(rnd() % 6);
        if (shape == 4 || shape == 5) { /* ascending / descending, small integers */
            for (uint64_t i = 0; i < n; i++)
                put(x, i, dt, (double)((shape == 4 ? i : n - i) % 1000));
        } else {
            for (uint64_t i = 0; i < n; i++)
                put(x, i, dt, (double)((int)(rnd() % 5) - 2)); /* -2..2 */
            const uint64_t at = 4097 + rnd() % (n - 4097);     /* past the first block */
            const uint64_t at2 = 1 + rnd() % (n - 1);
            switch (shape) {
            case 0: put(x, at, dt, (rnd() & 1) ? 3.0 : -3.0); break; /* a new extreme */
            case 1: /* every zero +0.0, then one -0.0 late: MIN's -0.0 and MAX's +0.0 */
                for (uint64_t i = 0; i < n; i++) put(x, i, dt, 0.0);
                if (dt_is_float(dt)) put(x, at, dt, -0.0);
                break;
            case 2:
                put(x, at, dt, -2.0);
                put(x, at2, dt, 2.0);
                break; /* repeats of the extremes */
            default:
                if (dt_is_float(dt)) put(x, at, dt, NAN);
                break; /* a NaN late */
            }
        }
        for (int k = 0; k < 5; k++) {
            unsigned char want[16], got[16];
            const size_t rs = reference(ops[k], x, n, dt, want);
            memset(got, 0xA5, 16);
            if (!CHECK(coopreduce_reduce(ops[k], x, NULL, got, n, dt, g_cpu, NULL) ==
                           COOPREDUCE_SUCCESS,
                       "block skipping: %s", coopreduce_last_error(g_cpu)))
                continue;
            CHECK(memcmp(got, want, rs) == 0,
                  "block skipping: %s %s n=%llu shape %d: got 0x%016llx, want 0x%016llx",
                  coopreduce_op_name(ops[k]), coopreduce_dtype_name(dt), (unsigned long long)n,
                  shape, (unsigned long long)*(uint64_t *)got,
                  (unsigned long long)*(uint64_t *)want);
        }
    }
    free(x);
}

static void unordered_ops(void)
{
    const int rounds = test_quick ? 80 : 240;
    const uint64_t max_n = 1u << 20;
    static const coopreduce_op ops[] = {
        COOPREDUCE_OP_MIN,    COOPREDUCE_OP_MAX, COOPREDUCE_OP_ABSMAX, COOPREDUCE_OP_ARGMIN,
        COOPREDUCE_OP_ARGMAX, COOPREDUCE_OP_SUM, COOPREDUCE_OP_MEAN};
    void *x = malloc(max_n * 8);
    for (int r = 0; r < rounds; r++) {
        coopreduce_dtype dt = (coopreduce_dtype)(r % COOPREDUCE_DTYPE_COUNT);
        uint64_t n = r < 3 * COOPREDUCE_DTYPE_COUNT ? (uint64_t)(1 + r / COOPREDUCE_DTYPE_COUNT)
                                                    : 1 + (rnd() >> (64 - 21));
        if (n > max_n) n = max_n;
        fill_values(x, n, dt, (int)(rnd() % 3));
        if (rnd() & 1) plant_specials(x, n, dt);
        if (dt == COOPREDUCE_INT64 && (rnd() & 1)) /* extremes: sums far outside 64 bits */
            for (uint64_t i = 0; i < n; i++)
                ((int64_t *)x)[i] = (rnd() & 1) ? INT64_MAX - (int64_t)(rnd() % 3) : INT64_MIN;
        for (int k = 0; k < 7; k++) {
            coopreduce_op op = ops[k];
            if (dt_is_float(dt) && (op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN)) continue;
            unsigned char want[16], got[16];
            size_t rs = reference(op, x, n, dt, want);
            memset(got, 0xA5, 16);
            coopreduce_status s = coopreduce_reduce(op, x, NULL, got, n, dt, g_cpu, NULL);
            int overflow = s == COOPREDUCE_ERROR_OVERFLOW;
            if (op == COOPREDUCE_OP_SUM && (dt == COOPREDUCE_INT64 || dt == COOPREDUCE_UINT64)) {
                __int128 v;
                memcpy(&v, want, 16);
                int fits = dt == COOPREDUCE_INT64 ? v >= INT64_MIN && v <= INT64_MAX
                                                  : v >= 0 && v <= (__int128)UINT64_MAX;
                CHECK(overflow == !fits, "%s sum n=%llu: overflow status %d, fits %d",
                      coopreduce_dtype_name(dt), (unsigned long long)n, (int)s, fits);
            } else if (!CHECK(s == COOPREDUCE_SUCCESS, "%s %s n=%llu: %s", coopreduce_op_name(op),
                              coopreduce_dtype_name(dt), (unsigned long long)n,
                              coopreduce_last_error(g_cpu))) {
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
                double parts[3] = {ldexp((double)(uint64_t)(a >> 96), 96),
                                   ldexp((double)(uint32_t)(a >> 64), 64), (double)(uint64_t)a};
                /* (uint64_t)a is 64 bits: split it too, so every part is exact */
                double lo_hi = ldexp((double)(uint32_t)((uint64_t)a >> 32), 32),
                       lo_lo = (double)(uint32_t)a;
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
                        if ((n >> b) & 1) {
                            ref_exact_add(&acc, -ldexp(m, b));
                            ref_exact_add(&acc, side * ldexp(half_ulp, b));
                        }
                    int sg = ref_exact_sign(&acc);
                    ok = side < 0 ? sg <= 0 : sg >= 0;
                }
                CHECK(ok || (m == 0 && S == 0), "mean %s n=%llu: %a is not the rounded quotient",
                      coopreduce_dtype_name(dt), (unsigned long long)n, m);
                continue;
            }
            CHECK(memcmp(got, want, rs) == 0,
                  "%s %s n=%llu: result bytes differ (got 0x%016llx, want 0x%016llx)",
                  coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)n,
                  (unsigned long long)*(uint64_t *)got, (unsigned long long)*(uint64_t *)want);
        }
    }
    free(x);
    /* Fixed cases from the header. */
    float z[3] = {0.0f, -0.0f, 0.0f};
    uint64_t idx = 9;
    float f = 1;
    coopreduce_reduce(COOPREDUCE_OP_MIN, z, NULL, &f, 3, COOPREDUCE_FLOAT32, g_cpu, NULL);
    CHECK(f == 0 && signbit(f), "min(+0,-0,+0) = -0");
    coopreduce_reduce(COOPREDUCE_OP_MAX, z + 1, NULL, &f, 1, COOPREDUCE_FLOAT32, g_cpu, NULL);
    CHECK(f == 0 && signbit(f), "max(-0) = -0");
    coopreduce_reduce(COOPREDUCE_OP_ARGMIN, z, NULL, &idx, 3, COOPREDUCE_FLOAT32, g_cpu, NULL);
    CHECK(idx == 0, "argmin(+0,-0,+0) = 0 (IEEE equality), got %llu", (unsigned long long)idx);
    float w[5] = {1, NAN, 3, NAN, -5};
    coopreduce_reduce(COOPREDUCE_OP_ARGMAX, w, NULL, &idx, 5, COOPREDUCE_FLOAT32, g_cpu, NULL);
    CHECK(idx == 1, "argmax with NaN = first NaN");
    uint32_t fb = 0;
    coopreduce_reduce(COOPREDUCE_OP_MIN, w, NULL, &fb, 5, COOPREDUCE_FLOAT32, g_cpu, NULL);
    CHECK(fb == 0x7fc00000u, "min with NaN = canonical NaN, got 0x%x", fb);
    /* Means that land exactly on a rounding tie: to even. */
    float tf[2] = {0x1p-149f, 0.0f};
    coopreduce_reduce(COOPREDUCE_OP_MEAN, tf, NULL, &f, 2, COOPREDUCE_FLOAT32, g_cpu, NULL);
    CHECK(f == 0 && !signbit(f), "mean(2^-149, 0) = +0 (tie to even), got %a", f);
    int64_t ti[2] = {(1ll << 53) + 1, 0};
    double dm = 0;
    coopreduce_reduce(COOPREDUCE_OP_MEAN, ti, NULL, &dm, 2, COOPREDUCE_INT64, g_cpu, NULL);
    CHECK(dm == 0x1p52, "mean(2^53+1, 0) = 2^52 (tie to even), got %a", dm);
    ti[0] = (1ll << 53) + 3;
    coopreduce_reduce(COOPREDUCE_OP_MEAN, ti, NULL, &dm, 2, COOPREDUCE_INT64, g_cpu, NULL);
    CHECK(dm == 0x1p52 + 2, "mean(2^53+3, 0) = 2^52+2 (tie to even), got %a", dm);
    ti[0] = (1ll << 53) + 1;
    int64_t t3[3] = {(1ll << 53) + 2, 0, 0}; /* (2^53+2)/3 is not an integer: sticky decides */
    coopreduce_reduce(COOPREDUCE_OP_MEAN, t3, NULL, &dm, 3, COOPREDUCE_INT64, g_cpu, NULL);
    CHECK(dm == 3002399751580331.5,
          "mean(2^53+2, 0, 0) = %a (nearest to ...331.33 in steps of 0.5)", dm);
    int32_t im[2] = {INT32_MIN, 5};
    uint32_t ua = 0;
    coopreduce_reduce(COOPREDUCE_OP_ABSMAX, im, NULL, &ua, 2, COOPREDUCE_INT32, g_cpu, NULL);
    CHECK(ua == 0x80000000u, "absmax(INT32_MIN) = 2^31, got %u", ua);
}

CPU_TEST_MAIN("test_ops_unordered", {"unordered operations", unordered_ops},
              {"block skipping", block_skipping})
