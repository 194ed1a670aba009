/* values.h — the per-element and final-scalar rules every operation shares, on the CPU and the
 * GPU alike: 16-bit float conversions, canonical NaNs, the min/max order, Blue's norm2
 * constants and combination, and the correctly rounded quotient of the mean.
 *
 * Included by C (src/cpu/) and by CUDA C++ (src/gpu/): everything is `static inline`, marked
 * CR_HD (host and device under nvcc), and written in the common subset of C11 and C++17, so
 * that both sides compute the same bits by running the same source. docs/DETERMINISM.md
 * ("Operations") states the rules; this file is their implementation. */
#ifndef COOPREDUCE_VALUES_H
#define COOPREDUCE_VALUES_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define CR_HD __host__ __device__
#else
#define CR_HD
#endif

typedef unsigned __int128 cr_u128;

/* ---- Bit casts -------------------------------------------------------------------------- */
static inline CR_HD uint32_t cr_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline CR_HD float cr_f32_from(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline CR_HD uint64_t cr_f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
static inline CR_HD double cr_f64_from(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* ---- Canonical quiet NaNs: the only NaN any operation returns --------------------------- */
#define CR_NAN_F16  0x7e00u
#define CR_NAN_BF16 0x7fc0u
#define CR_NAN_F32  0x7fc00000u
#define CR_NAN_F64  0x7ff8000000000000ull

/* ---- 16-bit floats ------------------------------------------------------------------------ */
/* binary16 -> float32: exact (every binary16 value is a float32). */
static inline CR_HD float cr_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return cr_f32_from(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
    if (exp != 0) return cr_f32_from(sign | ((exp + 112u) << 23) | (man << 13));
    /* zero or subnormal: man * 2^-24, exact in float32 */
    const float v = (float)man * 5.9604644775390625e-8f;
    return cr_f32_from(sign | cr_f32_bits(v));
}

/* The same without branches, for vector loops (the CPU's 16-bit paths): a normal binary16's
 * magnitude bits moved to float32's positions with 112 added to the exponent; a zero or
 * subnormal one, significand m, as the float32 2^-14 (1 + m 2^-10) minus 2^-14, which is
 * m 2^-24 exactly, with normal operands only (an arithmetic step on a subnormal operand costs
 * x86 CPUs a microcode assist of about a hundred cycles: the previous form, a multiplication of
 * the subnormal float32 by 2^112, made subnormal float16 data ten times slower); an infinity
 * or NaN keeps its significand under an all-ones exponent; then the sign. Equal to
 * cr_f16_to_f32's bits for all 65536 inputs (tests/test_ops_values.c). */
static inline CR_HD float cr_f16_to_f32_nobranch(uint16_t h)
{
    union {
        uint32_t u;
        float f;
    } n, s; /* unions, not memcpy: GCC vectorizes the loop then */
    const uint32_t mag = (uint32_t)(h & 0x7fffu) << 13, e = h & 0x7c00u;
    n.u = mag + (112u << 23);
    s.u = mag + (113u << 23); /* zero or subnormal: mag is m << 13 */
    s.f -= 0x1p-14f;
    const uint32_t sub = 0u - (uint32_t)(e == 0), special = 0u - (uint32_t)(e == 0x7c00u);
    n.u = (n.u & ~(sub | special)) | (s.u & sub) | ((mag | 0x7f800000u) & special);
    n.u |= (uint32_t)(h & 0x8000u) << 16;
    return n.f;
}

/* bfloat16 -> float32: exact (the high half). */
static inline CR_HD float cr_bf16_to_f32(uint16_t b) { return cr_f32_from((uint32_t)b << 16); }

/* float32 -> binary16, round to nearest even; overflow gives +-inf; NaN the canonical NaN. */
static inline CR_HD uint16_t cr_f32_to_f16(float f)
{
    const uint32_t u = cr_f32_bits(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return CR_NAN_F16;
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: rounds to inf */
    if (a >= 0x38800000u) {                                  /* normal binary16 */
        const uint32_t m = a - 0x38000000u;                  /* rebias the exponent by -112 */
        const uint32_t r =
            (m >> 13) + (((m >> 12) & 1u) & (((m & 0xfffu) != 0) | ((m >> 13) & 1u)));
        return (uint16_t)(sign | r);
    }
    /* subnormal or zero: the value in units of 2^-24, rounded to nearest even */
    if (a < 0x33000000u) return sign; /* below 2^-25: rounds to zero (2^-25 exactly: tie, even 0) */
    const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    /* |f| / 2^-24 = m * 2^(e - 126): shift right by 126 - e, 14 .. 24 here */
    const int s = 126 - (int)e;
    const uint32_t q = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1);
    const uint32_t r = q + ((rem > half) | ((rem == half) & (q & 1u)));
    return (uint16_t)(sign | r);
}

/* float32 -> bfloat16, round to nearest even; NaN the canonical NaN. */
static inline CR_HD uint16_t cr_f32_to_bf16(float f)
{
    const uint32_t u = cr_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return CR_NAN_BF16;
    const uint32_t r = u + 0x7fffu + ((u >> 16) & 1u); /* carries into the exponent as IEEE does */
    return (uint16_t)(r >> 16);
}

/* ---- min / max order ------------------------------------------------------------------------
 * NaN is handled by the caller (it wins and becomes the canonical NaN). Among numbers, -0.0
 * counts as less than +0.0, which makes min and max independent of the order of the input. */
static inline CR_HD int cr_less_f32(float a, float b)
{
    return a < b || (a == b && (cr_f32_bits(a) >> 31) > (cr_f32_bits(b) >> 31));
}
static inline CR_HD int cr_less_f64(double a, double b)
{
    return a < b || (a == b && (cr_f64_bits(a) >> 63) > (cr_f64_bits(b) >> 63));
}

/* ---- norm2: Blue's algorithm, with LAPACK's constants (la_constants.f90, 2017) -------------
 * |x| > TBIG: (|x| * SBIG)^2 into the big sum; |x| < TSML: (|x| * SSML)^2 into the small sum;
 * otherwise |x|^2 into the medium sum (NaN fails both tests and lands there). Each sum follows
 * the canonical order; an element outside a class contributes +0.0 to it. Unlike LAPACK, the
 * small sum is always kept (LAPACK stops it once a big value is seen, which depends on the
 * order); the combination ignores it whenever the big sum is positive, as LAPACK's does. */
#define CR_TSML_F32 0x1p-63f
#define CR_TBIG_F32 0x1p52f
#define CR_SSML_F32 0x1p75f
#define CR_SBIG_F32 0x1p-76f
#define CR_TSML_F64 0x1p-511
#define CR_TBIG_F64 0x1p486
#define CR_SSML_F64 0x1p537
#define CR_SBIG_F64 0x1p-538

/* The same class tests on the bits of |x| (sign cleared), for the GPU's medium pass: for a
 * non-NaN x, |x| > TBIG iff bits > BIG_BITS, and 0 < |x| < TSML iff bits - 1 < SML_BITS - 1 in
 * unsigned arithmetic that wraps (zero's bits - 1 is the largest). inf and NaN have bits above
 * BIG_BITS. float16: the largest finite value (0x7bff) is below TBIG and the smallest
 * subnormal above TSML, so only inf and NaN fail the tests. tests/test_ops_values.c checks every
 * 16-bit pattern against the float tests, and the float32 and float64 constants. */
#define CR_NORM2_BIG_BITS_F32  0x59800000u /* TBIG = 2^52 */
#define CR_NORM2_SML_BITS_F32  0x20000000u /* TSML = 2^-63 */
#define CR_NORM2_BIG_BITS_BF16 0x5980u
#define CR_NORM2_SML_BITS_BF16 0x2000u
#define CR_NORM2_BIG_BITS_F16  0x7bffu
#define CR_NORM2_SML_BITS_F16  0x0001u
/* float64: the high words of TBIG = 2^486 and TSML = 2^-511 (their low words are zero) */
#define CR_NORM2_BIG_HI_F64 0x5e500000u
#define CR_NORM2_SML_HI_F64 0x20000000u

#define CR_DEFINE_NORM2(S, T, SQRT, ABS)                                                           \
    /* The three leaves of |x| (class member squared and scaled, +0.0 otherwise), without        \
     * branches: |x| times its class's scale (1 for the medium class: |x| * 1 is |x|), squared,    \
     * goes to its class (a NaN fails both tests and is medium). A branch per class made the      \
     * GPU's three-class stream diverge on every element (docs/perf-log). */                      \
    static inline CR_HD void cr_norm2_leaf_##S(T x, T *big, T *med, T *sml)                        \
    {                                                                                              \
        const T ax = ABS(x), zero = 0;                                                             \
        const int b = ax > CR_TBIG_##S, s = ax < CR_TSML_##S;                                      \
        const T y = ax * (b ? CR_SBIG_##S : s ? CR_SSML_##S : (T)1), q = y * y;                    \
        *big = b ? q : zero;                                                                       \
        *med = b || s ? zero : q;                                                                  \
        *sml = s ? q : zero;                                                                       \
    }                                                                                              \
    /* LAPACK's combination of the three sums. */                                                  \
    static inline CR_HD T cr_norm2_combine_##S(T abig, T amed, T asml)                             \
    {                                                                                              \
        T scl, sumsq;                                                                              \
        if (abig > 0) {                                                                            \
            if (amed > 0 || amed != amed) abig = abig + (amed * CR_SBIG_##S) * CR_SBIG_##S;        \
            scl = (T)1 / CR_SBIG_##S;                                                              \
            sumsq = abig;                                                                          \
        } else if (asml > 0) {                                                                     \
            if (amed > 0 || amed != amed) {                                                        \
                const T m = SQRT(amed), s = SQRT(asml) / CR_SSML_##S;                              \
                const T ymin = s > m ? m : s, ymax = s > m ? s : m;                                \
                const T r = ymin / ymax;                                                           \
                scl = 1;                                                                           \
                sumsq = ymax * ymax * (1 + r * r);                                                 \
            } else {                                                                               \
                scl = (T)1 / CR_SSML_##S;                                                          \
                sumsq = asml;                                                                      \
            }                                                                                      \
        } else {                                                                                   \
            scl = 1;                                                                               \
            sumsq = amed;                                                                          \
        }                                                                                          \
        return scl * SQRT(sumsq);                                                                  \
    }
CR_DEFINE_NORM2(F32, float, sqrtf, fabsf)
CR_DEFINE_NORM2(F64, double, sqrt, fabs)

/* ---- The mean: a correctly rounded quotient ---------------------------------------------
 * Bit lengths and a small-quotient division, exact in integers. */
static inline CR_HD int cr_bitlen64(uint64_t w)
{
#ifdef __CUDA_ARCH__
    return 64 - __clzll((long long)w);
#else
    return w ? 64 - __builtin_clzll(w) : 0;
#endif
}

static inline CR_HD int cr_bitlen128(cr_u128 v)
{
    const uint64_t hi = (uint64_t)(v >> 64);
    return hi ? 64 + cr_bitlen64(hi) : cr_bitlen64((uint64_t)v);
}

static inline CR_HD double cr_u128_to_double(cr_u128 v)
{
    return (double)(uint64_t)(v >> 64) * 18446744073709551616.0 + (double)(uint64_t)v;
}

/* floor(num / n) and whether the division is inexact, for a quotient below 2^60 (n >= 1): an
 * estimate in double precision, made exact by integer corrections, so the result is the exact
 * floor on every machine. Why not num / n: a 128-bit division is a software routine on the GPU
 * (and a bit length was a bit-by-bit loop), run by the one thread that finishes a MEAN, last
 * on the launch's critical path; this is a few dozen instructions. (End to end the gain is
 * within the benchmark's noise: it shortens a critical path that is already short.) */
static inline CR_HD uint64_t cr_div_small_quotient(cr_u128 num, uint64_t n, int *inexact)
{
    const double est = cr_u128_to_double(num) / (double)n;
    uint64_t q = est >= 1152921504606846976.0 ? 1152921504606846975ull : (uint64_t)est; /* < 2^60 */
    cr_u128 p = (cr_u128)q * n;
    /* |est - num/n| < 2^-50 * 2^60: the estimate is off by up to 2^10 units; correct it by the
     * remainder's own estimate, then by single steps (at most one or two) */
    if (p > num) {
        const uint64_t d = (uint64_t)(cr_u128_to_double(p - num) / (double)n) + 1;
        q -= d;
        p -= (cr_u128)d * n;
    } else if (num - p >= n) {
        const uint64_t d = (uint64_t)(cr_u128_to_double(num - p) / (double)n);
        q += d;
        p += (cr_u128)d * n;
    }
    while (p > num) {
        q--;
        p -= n;
    }
    while (num - p >= n) {
        q++;
        p += n;
    }
    *inexact = num != p;
    return q;
}

/* cr_round_div returns (-1)^neg * mag * 2^exp / n rounded once to a binary format with `prec`
 * significand bits and minimum normal exponent `emin` (float32: 24, -126; float64: 53, -1022),
 * as a double (exact: the result is a value of the target format; the float32 caller converts
 * it exactly). Round to nearest, ties to even; subnormal results rounded at their own position;
 * beyond the format's range (emax = 1 - emin: 127 or 1023) gives +-inf. n >= 1; mag may be 0
 * (the result is a signed zero). Integer arithmetic only, so the CPU and the GPU agree. */
static inline CR_HD double cr_round_div(int neg, cr_u128 mag, int exp, uint64_t n, int prec,
                                        int emin)
{
    const double sgn = neg ? -1.0 : 1.0;
    if (mag == 0) return sgn * 0.0;
    /* Q = floor(mag * 2^s / n) with at least prec + 2 bits; sticky: the quotient was inexact. */
    const int bm = cr_bitlen128(mag), bn = cr_bitlen128((cr_u128)n);
    const int s = prec + 3 + bn - bm;
    cr_u128 num;
    int sticky = 0;
    if (s >= 0) {
        num = mag << s; /* bm + s = prec + 3 + bn <= 53 + 3 + 64 < 128 */
    } else {
        num = mag >> -s;
        sticky = (mag & (((cr_u128)1 << -s) - 1)) != 0;
    }
    /* num < 2^(prec + 3 + bn) and n >= 2^(bn - 1): the quotient is below 2^(prec + 4) <= 2^57 */
    int inexact;
    const cr_u128 q = cr_div_small_quotient(num, n, &inexact);
    sticky |= inexact;
    /* value = (q + frac) * 2^(exp - s), frac in [0, 1), nonzero iff sticky */
    const int bq = cr_bitlen128(q);
    const int e = bq - 1 + exp - s; /* exponent of the leading bit */
    const int emax = -emin + 1;
    const int keep = e >= emin ? prec : prec - (emin - e);
    if (e > emax) return sgn * INFINITY;
    const int drop = bq - keep; /* >= 2: bq >= prec + 3 and keep <= prec */
    uint64_t kept = 0;
    if (drop <= bq) { /* else: below half the smallest subnormal, rounds to zero */
        const cr_u128 kq = drop >= 128 ? 0 : q >> drop;
        const cr_u128 rem = drop >= 128 ? q : q - (kq << drop);
        const cr_u128 half = (cr_u128)1 << (drop - 1);
        kept = (uint64_t)kq;
        if (rem > half || (rem == half && (sticky || (kept & 1)))) kept++;
    }
    /* kept <= 2^prec: exact in a double, and so is the scaled value (or it overflows to inf) */
    const double r = ldexp((double)kept, exp - s + drop);
    const double max_finite = ldexp(2.0 - ldexp(1.0, 1 - prec), emax);
    return sgn * (r > max_finite ? INFINITY : r);
}

/* ---- The last step of the ordered float operations (CPU and GPU alike) --------------------- */
/* The correctly rounded mean of a float sum (a float32 sum is exact in the double): sum / n, in
 * the sum's precision. n == 0 or a NaN sum gives NaN; an infinite sum stays itself. */
static inline CR_HD double cr_mean_of_float(double sum, uint64_t n, int f64)
{
    if (n == 0 || sum != sum) return cr_f64_from(CR_NAN_F64);
    if (sum == INFINITY || sum == -INFINITY) return sum;
    const uint64_t b = cr_f64_bits(sum);
    const int neg = (int)(b >> 63);
    int e = (int)((b >> 52) & 0x7ff);
    uint64_t m = b & 0xfffffffffffffull;
    if (e)
        m |= 1ull << 52;
    else
        e = 1;
    return cr_round_div(neg, m, e - 1075, n, f64 ? 53 : 24, f64 ? -1022 : -126);
}

/* Writes the float result v of an ordered operation over input type `dt`: a double for FLOAT64
 * input, else float32 (v is then a float32 value, converted exactly), or with `narrow` and a
 * 16-bit input type, rounded once more to that type. NaN becomes the canonical NaN. */
static inline CR_HD void cr_write_float(double v, int dt_is_f64, int dt_is_f16, int dt_is_bf16,
                                        int narrow, void *result)
{
    if (dt_is_f64) {
        if (v != v) v = cr_f64_from(CR_NAN_F64);
        memcpy(result, &v, 8);
        return;
    }
    float f = (float)v;
    if (f != f) f = cr_f32_from(CR_NAN_F32);
    if (narrow && dt_is_f16) {
        const uint16_t b = cr_f32_to_f16(f);
        memcpy(result, &b, 2);
    } else if (narrow && dt_is_bf16) {
        const uint16_t b = cr_f32_to_bf16(f);
        memcpy(result, &b, 2);
    } else {
        memcpy(result, &f, 4);
    }
}

#endif
