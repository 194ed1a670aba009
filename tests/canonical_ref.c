/* canonical_ref.c — canonical order v1 computed the plain way, and the CPU sum tests' harness
 * (canonical_ref.h). */
#include "canonical_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

#define DEFINE_CANON(T, SUFFIX, W)                                                                 \
    static T canon_chunk_##SUFFIX(const T *v, size_t n)                                            \
    {                                                                                              \
        static T bufa[ROWS][W], bufb[ROWS][W];                                                     \
        T(*cur)[W] = bufa, (*nxt)[W] = bufb, (*swp)[W];                                            \
        for (size_t i = 0; i < ROWS * (size_t)W; i++) cur[i / W][i % W] = i < n ? v[i] : (T)-0.0;  \
        for (unsigned rows = ROWS; rows > 1; rows /= 2) {                                          \
            for (unsigned j = 0; j < rows / 2; j++)                                                \
                for (unsigned l = 0; l < W; l++) nxt[j][l] = cur[2 * j][l] + cur[2 * j + 1][l];    \
            swp = cur;                                                                             \
            cur = nxt;                                                                             \
            nxt = swp;                                                                             \
        }                                                                                          \
        T lane[W], tmp[W];                                                                         \
        for (unsigned l = 0; l < W; l++) lane[l] = cur[0][l];                                      \
        for (unsigned lanes = W; lanes > 1; lanes /= 2) {                                          \
            for (unsigned j = 0; j < lanes / 2; j++) tmp[j] = lane[2 * j] + lane[2 * j + 1];       \
            for (unsigned j = 0; j < lanes / 2; j++) lane[j] = tmp[j];                             \
        }                                                                                          \
        return lane[0];                                                                            \
    }                                                                                              \
    static T canon_sum_##SUFFIX(const T *x, uint64_t n)                                            \
    {                                                                                              \
        const uint64_t C = ROWS * (uint64_t)W;                                                     \
        if (n == 0) return (T)0.0;                                                                 \
        const T *v = x;                                                                            \
        T *owned = NULL;                                                                           \
        uint64_t m = n;                                                                            \
        while (m > C) {                                                                            \
            uint64_t groups = (m + C - 1) / C;                                                     \
            T *p = (T *)xmalloc((size_t)groups * sizeof(T));                                       \
            for (uint64_t g = 0; g < groups; g++) {                                                \
                uint64_t len = m - g * C < C ? m - g * C : C;                                      \
                p[g] = canon_chunk_##SUFFIX(v + g * C, (size_t)len);                               \
            }                                                                                      \
            free(owned);                                                                           \
            owned = p;                                                                             \
            v = p;                                                                                 \
            m = groups;                                                                            \
        }                                                                                          \
        T r = canon_chunk_##SUFFIX(v, (size_t)m);                                                  \
        free(owned);                                                                               \
        if (r != r) r = (T)NAN;                                                                    \
        return r;                                                                                  \
    }

DEFINE_CANON(float, f32, W32)
DEFINE_CANON(double, f64, W64)

uint64_t canon_bits(const void *x, uint64_t n, coopreduce_dtype dt)
{
    if (dt == COOPREDUCE_FLOAT32) {
        float r = canon_sum_f32((const float *)x, n);
        return r != r ? nan_bits(dt) : f32_bits(r);
    }
    double r = canon_sum_f64((const double *)x, n);
    return r != r ? nan_bits(dt) : f64_bits(r);
}

unsigned levels_of(uint64_t n, uint64_t C)
{
    unsigned L = 1;
    while (n > C) {
        n = (n + C - 1) / C;
        L++;
    }
    return L;
}

long double gamma_k(unsigned k, coopreduce_dtype dt)
{
    long double u = dt == COOPREDUCE_FLOAT32 ? ldexpl(1.0L, -24) : ldexpl(1.0L, -53);
    return (long double)k * u / (1.0L - (long double)k * u);
}

coopreduce_status sum_bits(coopreduce_handle *h, const void *x, uint64_t n, coopreduce_dtype dt,
                           uint64_t *bits, int to_host)
{
    union {
        float f;
        double d;
    } r;
    coopreduce_status s = to_host ? coopreduce_sum_to_host(x, &r, n, dt, h, NULL)
                                  : coopreduce_sum(x, &r, n, dt, h, NULL);
    if (s != COOPREDUCE_SUCCESS) {
        *bits = 0xdeadbeefu;
        return s;
    }
    *bits = dt == COOPREDUCE_FLOAT32 ? f32_bits(r.f) : f64_bits(r.d);
    return s;
}

void *gen_data(coopreduce_dtype dt, cr_gen_kind kind, uint64_t seed, uint64_t n)
{
    void *p = xmalloc((size_t)n * dt_size(dt));
    int rc = cr_gen_fill(p, 0, n, dt, kind, seed, gen_threads());
    if (rc != 0) {
        fprintf(stdout, "FATAL: cr_gen_fill(%s, %s) failed\n", dt_code(dt), cr_gen_name(kind));
        exit(1);
    }
    return p;
}

void add_size(uint64_t *list, int *count, int cap, uint64_t n)
{
    for (int i = 0; i < *count; i++)
        if (list[i] == n) return;
    if (*count < cap) list[(*count)++] = n;
}
