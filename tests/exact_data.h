/* exact_data.h — data for the EXACT mode tests (test_exact_cpu.c, test_exact_gpu.c): a seeded
 * generator, the tests' own 16-bit conversions (independent of the library's), and the
 * adversarial distributions. Header-only, static: one copy per test program. */
#ifndef COOPREDUCE_TESTS_EXACT_DATA_H
#define COOPREDUCE_TESTS_EXACT_DATA_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "coopreduce.h"

static __attribute__((unused)) uint64_t rng_state;
static __attribute__((unused)) uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static __attribute__((unused)) double unif(void) { return (double)(rnd() >> 11) * 0x1p-53; }

/* ---- the test's own 16-bit conversions ------------------------------------------------------ */
static __attribute__((unused)) double f16_dec(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
    return s ? -v : v;
}
static __attribute__((unused)) double bf16_dec(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* v exactly a binary16 value, an infinity or NaN */
static __attribute__((unused)) uint16_t f16_enc(double v)
{
    if (isnan(v)) return 0x7e00;
    uint16_t s = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isinf(a)) return s | 0x7c00;
    if (a < 0x1p-14) return s | (uint16_t)(a * 0x1p24);
    int e = ilogb(a);
    return s | (uint16_t)((e + 15) << 10) | (uint16_t)(ldexp(a, 10 - e) - 1024);
}
static __attribute__((unused)) uint16_t bf16_enc(double v)
{
    if (isnan(v)) return 0x7fc0;
    float f = (float)v; /* exact */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

/* ---- data: generated as doubles, stored in the dtype ---------------------------------------- */
static __attribute__((unused)) size_t esize(coopreduce_dtype dt)
{
    return dt == COOPREDUCE_FLOAT64 ? 8 : dt == COOPREDUCE_FLOAT32 ? 4 : 2;
}
static __attribute__((unused)) void store(coopreduce_dtype dt, void *buf, uint64_t i, double v)
{
    if (dt == COOPREDUCE_FLOAT64) ((double *)buf)[i] = v;
    else if (dt == COOPREDUCE_FLOAT32) ((float *)buf)[i] = (float)v;
    else if (dt == COOPREDUCE_FLOAT16) {
        _Float16 h = (_Float16)v;
        memcpy((uint16_t *)buf + i, &h, 2);
    } else {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        ((uint16_t *)buf)[i] = (uint16_t)(u >> 16);
    }
}
static __attribute__((unused)) double load(coopreduce_dtype dt, const void *buf, uint64_t i)
{
    if (dt == COOPREDUCE_FLOAT64) return ((const double *)buf)[i];
    if (dt == COOPREDUCE_FLOAT32) return ((const float *)buf)[i];
    if (dt == COOPREDUCE_FLOAT16) return f16_dec(((const uint16_t *)buf)[i]);
    return bf16_dec(((const uint16_t *)buf)[i]);
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

enum { D_UNIFORM, D_SIGNED, D_CANCEL, D_DENORMAL, D_FULL, D_ALTERNATE, D_ZEROS, D_BITS, ND };
static __attribute__((unused)) const char *const dnames[ND] = {"uniform", "signed", "cancel", "denormal",
                                 "full-range", "alternate", "zeros", "bits"};

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
            if (i % 8 == 7) v = ldexp(unif(), (lo + hi) / 4);
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
        default: { /* random finite bit patterns */
            size_t es = esize(dt);
            uint64_t b = rnd();
            memcpy((char *)buf + i * es, &b, es);
            if (isfinite(load(dt, buf, i))) continue;
            v = 1.0;
        }
        }
        store(dt, buf, i, v);
    }
}

#endif
