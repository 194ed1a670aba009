/* exact_data.h — data for the EXACT mode tests (test_exact_cpu.c, test_exact_gpu.c): the
 * adversarial distributions, drawn from util.h's seeded stream and stored with its conversions
 * (independent of the library's). Header-only, static: one copy per test program. */
#ifndef COOPREDUCE_TESTS_EXACT_DATA_H
#define COOPREDUCE_TESTS_EXACT_DATA_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "coopreduce.h"
#include "util.h"

/* Stores v as element i of dt: bfloat16 as the high half of the float32 (truncated toward
 * zero, any bfloat16 being as good a test value), the other types as util.h's store_value
 * rounds them. */
static __attribute__((unused)) void store(coopreduce_dtype dt, void *buf, uint64_t i, double v)
{
    if (dt == COOPREDUCE_BFLOAT16)
        store_bits(buf, i, 2, f32_bits((float)v) >> 16);
    else
        store_value(buf, i, dt, v);
}

/* exponent limits of the dtype: min subnormal exponent and max exponent */
static __attribute__((unused)) void erange(coopreduce_dtype dt, int *lo, int *hi)
{
    *lo = dt == COOPREDUCE_FLOAT64 ? -1074 : dt == COOPREDUCE_FLOAT16 ? -24 : -149;
    *hi = dt == COOPREDUCE_FLOAT64 ? 1023 : dt == COOPREDUCE_FLOAT16 ? 15 : 127;
}
static __attribute__((unused)) double wide(coopreduce_dtype dt)
{
    int lo, hi;
    erange(dt, &lo, &hi);
    double m = 1 + unif();
    double v = ldexp(m, lo + (int)(rnd() % (uint64_t)(hi - lo)));
    return rnd() & 1 ? -v : v;
}

/* explicit significand bits of the dtype */
static __attribute__((unused)) int mbits(coopreduce_dtype dt)
{
    return dt == COOPREDUCE_FLOAT64 ? 52 : dt == COOPREDUCE_FLOAT16 ? 10
         : dt == COOPREDUCE_BFLOAT16 ? 7 : 23;
}

enum { D_UNIFORM, D_SIGNED, D_CANCEL, D_DENORMAL, D_FULL, D_ALTERNATE, D_ZEROS, D_BITS, D_EDGES,
       D_RIPPLE, D_HUGE, ND };
static __attribute__((unused)) const char *const dnames[ND] = {
    "uniform", "signed",     "cancel", "denormal", "full-range", "alternate",
    "zeros",   "bits",       "edges",  "ripple",   "huge"};

static __attribute__((unused)) void gen(int kind, coopreduce_dtype dt, void *buf, uint64_t n)
{
    int lo, hi;
    erange(dt, &lo, &hi);
    for (uint64_t i = 0; i < n; i++) {
        double v;
        switch (kind) {
        case D_UNIFORM: v = unif(); break;
        case D_SIGNED: v = 2 * unif() - 1; break;
        case D_CANCEL: /* pairs v, -v of wide values (the pair split by the index), small rest */
            if (i % 8 == 7)
                v = ldexp(unif(), (lo + hi) / 4);
            else {
                static double prev;
                if (i % 2 == 0) prev = wide(dt);
                v = i % 2 ? -prev : prev;
            }
            break;
        case D_DENORMAL: v = ldexp((double)(rnd() % 1024 + 1), lo) * (rnd() & 1 ? -1 : 1); break;
        case D_FULL: v = wide(dt); break;
        case D_ALTERNATE:
            v = (i % 2) ? ldexp(1 + unif(), lo + (int)(rnd() % 8)) : ldexp(1 + unif(), hi - 2);
            if (i % 4 >= 2) v = -v;
            break;
        case D_ZEROS: v = rnd() % 3 == 0 ? 0.0 : -0.0; break;
        case D_EDGES: { /* the edges of the GPU's windows: exponent fields 8k - 1 and 8k (the
                         * bins of float32 and bfloat16), bit positions 32k - 1 and 32k above
                         * 2^-1074 (float64's digits); the smallest and largest significands */
            int e = rnd() & 1 ? 8 * (int)(rnd() % 33) - 127 - (int)(rnd() & 1)
                              : 32 * (int)(rnd() % 65) - 1022 - (int)(rnd() & 1);
            e = e < lo ? lo : e > hi ? hi : e;
            v = ldexp(rnd() & 1 ? 1.0 : 2 - ldexp(1, -mbits(dt)), e);
            if (rnd() & 1) v = -v;
            break;
        }
        case D_RIPPLE: /* most values with all-ones significands in one window, one in 61 at a
                        * random exponent (one in each of the other windows), one in 61 the
                        * negated smallest subnormal: a borrow through every digit */
            if (i % 61 == 0)
                v = ldexp(1 + unif(), lo + (int)(rnd() % (uint64_t)(hi - lo)));
            else if (i % 61 == 1)
                v = -ldexp(1.0, lo);
            else
                v = ldexp(2 - ldexp(1, -mbits(dt)), (lo + hi) / 2);
            break;
        case D_HUGE: /* near the largest finite magnitude, two in three positive: the exact sum
                      * overflows, and the top digit of every accumulator grows by about 2^50 per
                      * three elements (a wrap there shows as -inf or a finite result) */
            v = ldexp(1 + 0.99 * unif(), hi);
            if (i % 3 == 2) v = -v;
            break;
        default: { /* random finite bit patterns */
            store_bits(buf, i, dt_size(dt), rnd());
            if (isfinite(load_value(buf, i, dt))) continue;
            v = 1.0;
        }
        }
        store(dt, buf, i, v);
    }
}

/* The check of one EXACT case: what, op (SUM or DOT), dt, x, y (DOT only), n. */
typedef void (*exact_check_fn)(const char *what, coopreduce_op op, coopreduce_dtype dt,
                               const void *x, const void *y, uint64_t n);

/* Fills x[0..n) with distribution `kind` and checks its SUM; for float32 and float64 also fills
 * y (signed values where x cancels, else the same distribution) and checks the DOT. */
static __attribute__((unused)) void sum_and_dot(exact_check_fn check, int kind, coopreduce_dtype dt,
                                                void *x, void *y, uint64_t n)
{
    gen(kind, dt, x, n);
    check(dnames[kind], COOPREDUCE_OP_SUM, dt, x, NULL, n);
    if (dt == COOPREDUCE_FLOAT32 || dt == COOPREDUCE_FLOAT64) {
        gen(kind == D_CANCEL ? D_SIGNED : kind, dt, y, n);
        check(dnames[kind], COOPREDUCE_OP_DOT, dt, x, y, n);
    }
}

#endif
