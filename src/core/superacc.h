/* superacc.h — the exact part of EXACT mode (docs/EXACT.md), shared by the CPU (src/cpu/exact.c)
 * and the GPU (src/gpu/exact.cu): the TwoSum step of the floating-point expansions, the
 * fixed-point superaccumulator that receives what the expansions cannot hold, and the one
 * rounding of the exact sum to the result format.
 *
 * Superaccumulator: the value is sum_i d[i] * 2^(32 i + lsb), d[i] signed 64-bit "digits" of
 * radix 2^32 kept in carry-save form: an addition adds contributions |c| < 2^32 to at most three
 * (a 64-bit mantissa: at most three) digits, and carries are propagated only when a bound says
 * they must be (cr_sa_carry). Two layouts:
 *   SUM (and DOT of float32): lsb = -1074 (every double is a multiple of 2^-1074), 70 digits:
 *     2240 bits, up to 2^1166, 140 bits above the largest double: room for 2^64 of them.
 *   DOT of float64: lsb = -2148 (an exact product of two doubles is a multiple of 2^-2148),
 *     136 digits: 4352 bits, up to 2^2204, 150 bits above the largest product (< 2^2048).
 * Integer addition is associative: the digits, hence the result, do not depend on the order in
 * which contributions arrive — on which thread, block, lane or device they were computed.
 *
 * Everything here is static inline, CR_HD, common C11 / C++17, integer arithmetic apart from
 * TwoSum (exact in IEEE binary64 round-to-nearest whenever nothing overflows) and the exact final
 * scaling of the rounded significand by a power of two. */
#ifndef COOPREDUCE_SUPERACC_H
#define COOPREDUCE_SUPERACC_H

#include <stdint.h>
#include <string.h>
#include "core/values.h"

#define CR_SA_MAX_DIGITS   136
#define CR_SA_SUM_DIGITS   70
#define CR_SA_SUM_LSB      (-1074)
#define CR_SA_DOT64_DIGITS 136
#define CR_SA_DOT64_LSB    (-2148)

/* Flags of the values that are not finite, merged by OR. */
#define CR_X_NAN     1u  /* a NaN (or inf * 0 in a dot) */
#define CR_X_PINF    2u  /* +inf */
#define CR_X_NINF    4u  /* -inf */
#define CR_X_NONNEGZ 8u  /* some element (product) is not -0.0 */
#define CR_X_ANY     16u /* n >= 1 */

/* float64 inputs at least this large bypass the expansions (which then never overflow). */
#define CR_X_BIG 0x1p960

/* Result formats. */
#define CR_FMT_F64  0
#define CR_FMT_F32  1
#define CR_FMT_F16  2
#define CR_FMT_BF16 3
/* Not a format: the GPU's exact kernel writes its nd digits (carried) then the flags, nd + 1
 * int64 words, unrounded (sharded reductions merge them across ranks, src/dist). */
#define CR_FMT_RAW 4

/* TwoSum (Knuth): s + *err == a + b exactly, s = fl(a + b); six additions, no branch, exact
 * for any finite a, b whose sum does not overflow (subnormals included). */
static inline CR_HD double cr_two_sum(double a, double b, double *err)
{
    const double s = a + b;
    const double bb = s - a;
    *err = (a - (s - bb)) + (b - bb);
    return s;
}

/* The contributions of (-1)^neg * m * 2^e (e >= lsb, m < 2^64) to digits idx, idx+1, idx+2:
 * c[k] in (-2^32, 2^32). */
static inline CR_HD void cr_sa_split_u64(uint64_t m, int e, int neg, int lsb, int *idx,
                                         int64_t c[3])
{
    const int p = e - lsb;
    const cr_u128 w = (cr_u128)m << (p & 31);
    *idx = p >> 5;
    const int64_t c0 = (int64_t)(uint32_t)w, c1 = (int64_t)(uint32_t)(w >> 32),
                  c2 = (int64_t)(uint32_t)(w >> 64);
    c[0] = neg ? -c0 : c0;
    c[1] = neg ? -c1 : c1;
    c[2] = neg ? -c2 : c2;
}

/* A finite double as (-1)^neg * m * 2^e with m < 2^53; returns 0 for a zero. */
static inline CR_HD int cr_sa_decompose(double v, uint64_t *m, int *e, int *neg)
{
    const uint64_t b = cr_f64_bits(v);
    const int ex = (int)((b >> 52) & 0x7ff);
    *neg = (int)(b >> 63);
    *m = b & 0xfffffffffffffull;
    if (ex) {
        *m |= 1ull << 52;
        *e = ex - 1075;
    } else {
        *e = -1074;
    }
    return *m != 0;
}

/* The contributions of a finite double v (at most three digits; returns 0 when v is zero). */
static inline CR_HD int cr_sa_split_f64(double v, int lsb, int *idx, int64_t c[3])
{
    uint64_t m;
    int e, neg;
    if (!cr_sa_decompose(v, &m, &e, &neg)) return 0;
    cr_sa_split_u64(m, e, neg, lsb, idx, c);
    return 1;
}

/* One normalising pass over nd digits spaced `stride` apart (those of a flat loop): each digit
 * keeps its low 32 bits plus the carry of the one below, the top digit takes the last carry.
 * Digits below 2^63 in magnitude come out in [-2^31, 2^32 + 2^31). */
static inline CR_HD void cr_sa_normalise_strided(int64_t *d, int nd, int stride)
{
    int64_t c = 0;
    for (int i = 0; i < nd - 1; i++) {
        const int64_t v = d[i * stride];
        d[i * stride] = (v & 0xffffffffll) + c;
        c = v >> 32;
    }
    d[(nd - 1) * stride] += c;
}

/* The flags of a value that is not finite (NaN or +-inf); 0 for a finite one. */
static inline CR_HD unsigned cr_sa_special_flags(double v)
{
    if (v != v) return CR_X_NAN;
    if (v == (double)INFINITY) return CR_X_PINF;
    if (v == -(double)INFINITY) return CR_X_NINF;
    return 0;
}

/* Host-side (or one-thread) accumulation: adds v's contributions to d. */
static inline CR_HD void cr_sa_add_f64(int64_t *d, int lsb, double v)
{
    int idx;
    int64_t c[3];
    if (!cr_sa_split_f64(v, lsb, &idx, c)) return;
    d[idx] += c[0];
    d[idx + 1] += c[1];
    d[idx + 2] += c[2];
}

/* The exact product of two finite nonzero doubles as (neg, 106-bit m, e); the caller adds the
 * low and the high 64 bits at e and e + 64. */
static inline CR_HD void cr_sa_product(double x, double y, cr_u128 *m, int *e, int *neg)
{
    uint64_t mx, my;
    int ex, ey, nx, ny;
    cr_sa_decompose(x, &mx, &ex, &nx);
    cr_sa_decompose(y, &my, &ey, &ny);
    *m = (cr_u128)mx * my;
    *e = ex + ey;
    *neg = nx ^ ny;
}

/* Flags of a product x * y of float64 factors that are not both finite. */
static inline CR_HD unsigned cr_sa_product_special(double x, double y)
{
    if (x != x || y != y) return CR_X_NAN;
    const int xi = x == (double)INFINITY || x == -(double)INFINITY;
    const int yi = y == (double)INFINITY || y == -(double)INFINITY;
    if ((xi && y == 0) || (yi && x == 0)) return CR_X_NAN;
    const int neg = (int)((cr_f64_bits(x) ^ cr_f64_bits(y)) >> 63);
    return neg ? CR_X_NINF : CR_X_PINF;
}

/* One carry pass: d[0 .. nd-2] in [0, 2^32), d[nd-1] signed; the value is unchanged. */
static inline CR_HD void cr_sa_carry(int64_t *d, int nd)
{
    for (int i = 0; i < nd - 1; i++) {
        const int64_t c = d[i] >> 32; /* arithmetic shift: floor(d / 2^32) */
        d[i] -= (int64_t)((uint64_t)c << 32);
        d[i + 1] += c;
    }
}

/* Bits [lo, lo + count) of the normalised magnitude (count <= 60; lo may be negative: the bits
 * below position 0 are zero), from the three digits that hold them. */
static inline CR_HD uint64_t cr_sa_bits(const int64_t *d, int nd, int lo, int count)
{
    if (count <= 0) return 0;
    const int i0 = lo >= 0 ? lo >> 5 : 0, sh = lo >= 0 ? lo & 31 : 0;
    cr_u128 w = 0;
    for (int k = 2; k >= 0; k--) w = (w << 32) | (i0 + k < nd ? (uint64_t)d[i0 + k] : 0u);
    w = lo >= 0 ? w >> sh : w << -lo; /* lo < 0: lo > -count >= -60, w < 2^96 */
    return (uint64_t)w & ((1ull << count) - 1u);
}

/* Any bit below position b (exclusive) set among the nd digits (those above read as zero, as
 * in cr_sa_bits: b may lie past the last digit when zero digits were left out at the top). */
static inline CR_HD int cr_sa_any_below(const int64_t *d, int nd, int b)
{
    if (b <= 0) return 0;
    const int i = b >> 5;
    for (int j = 0; j < i && j < nd; j++)
        if (d[j]) return 1;
    return i < nd && (b & 31) && ((uint64_t)d[i] & ((1ull << (b & 31)) - 1u)) != 0;
}

/* d (nd digits) to its normal form as a magnitude: digits 0 .. nd-2 in [0, 2^32), the top one
 * >= 0; returns 1 when the value was negative (d then holds its negation). */
static inline CR_HD int cr_sa_normalise(int64_t *d, int nd)
{
    cr_sa_carry(d, nd);
    const int neg = d[nd - 1] < 0;
    if (neg) {
        for (int i = 0; i < nd; i++) d[i] = -d[i];
        cr_sa_carry(d, nd);
    }
    return neg;
}

/* The formats' precision (bits of the significand), smallest normal exponent and largest. */
static inline CR_HD int cr_sa_prec(int fmt)
{
    return fmt == CR_FMT_F64 ? 53 : fmt == CR_FMT_F32 ? 24 : fmt == CR_FMT_F16 ? 11 : 8;
}
static inline CR_HD int cr_sa_emin(int fmt)
{
    return fmt == CR_FMT_F64 ? -1022 : fmt == CR_FMT_F16 ? -14 : -126;
}

/* The result when the flags decide it (a NaN, an infinity): 1 and *v, else 0. */
static inline CR_HD int cr_sa_special_result(unsigned flags, double *v)
{
    if ((flags & CR_X_NAN) || ((flags & CR_X_PINF) && (flags & CR_X_NINF))) {
        *v = cr_f64_from(CR_NAN_F64);
        return 1;
    }
    if (flags & (CR_X_PINF | CR_X_NINF)) {
        *v = (flags & CR_X_PINF) ? (double)INFINITY : -(double)INFINITY;
        return 1;
    }
    return 0;
}

/* The zero result: -0.0 only when every element was -0.0. */
static inline CR_HD double cr_sa_zero_result(unsigned flags)
{
    return (flags & CR_X_ANY) && !(flags & CR_X_NONNEGZ) ? -0.0 : 0.0;
}

/* The kept bits (at most the precision) with the round bit and the sticky bit, rounded to
 * nearest, ties to even, times 2^ue: exact as a double; +-inf beyond the format's largest
 * finite value (exponent emax). */
static inline CR_HD double cr_sa_rounded(uint64_t kept, int rb, int sticky, int ue, int emax,
                                         int neg)
{
    double v;
    if (rb && (sticky || (kept & 1u))) kept++;
    if (kept && cr_bitlen64(kept) + ue - 1 > emax) {
        v = (double)INFINITY;
    } else {
        /* kept * 2^ue is a value of the format: exact as a double */
        const double p2 = ue >= -1022 ? cr_f64_from((uint64_t)(ue + 1023) << 52)
                                      : cr_f64_from(1ull << (ue + 1074));
        v = (double)kept * p2;
    }
    return neg ? -v : v;
}

/* v (a value of the format, or inf / NaN) written to result as `fmt` (8, 4 or 2 bytes). */
static inline CR_HD void cr_sa_store(double v, int fmt, void *result)
{
    if (fmt == CR_FMT_F64) {
        memcpy(result, &v, 8);
        return;
    }
    float f = (float)v; /* exact: v is a value of the format (or inf / NaN) */
    if (f != f) f = cr_f32_from(CR_NAN_F32);
    if (fmt == CR_FMT_F32) {
        memcpy(result, &f, 4);
    } else {
        const uint16_t b = fmt == CR_FMT_F16 ? cr_f32_to_f16(f) : cr_f32_to_bf16(f);
        memcpy(result, &b, 2);
    }
}

/* The value (-1)^neg * d, d a normalised magnitude (cr_sa_normalise) of nd digits above 2^lsb,
 * with the flags, rounded once to `fmt` (round to nearest, ties to even; subnormals at their
 * own position; beyond the largest finite value: +-inf) and written to result (8, 4 or 2
 * bytes). The rules of coopreduce_mode for NaN, infinities and zeros. Digits that are zero may
 * be left out at either end (d + l, nd - l, lsb + 32 l): the result is the same. */
static inline CR_HD void cr_sa_round(const int64_t *d, int nd, int neg, int lsb, unsigned flags,
                                     int fmt, void *result)
{
    const int prec = cr_sa_prec(fmt), emin = cr_sa_emin(fmt), emax = 1 - emin;
    double v;
    if (!cr_sa_special_result(flags, &v)) {
        int h = nd - 1;
        while (h >= 0 && d[h] == 0) h--;
        if (h < 0) {
            v = cr_sa_zero_result(flags);
        } else {
            /* top digit < 2^32 here: the bounds keep |sum| far below the top of the range */
            const int t = 32 * h + cr_bitlen64((uint64_t)d[h]) - 1; /* MSB position */
            const int E = t + lsb;
            const int ue = (E >= emin ? E : emin) - prec + 1; /* exponent of the result's ulp */
            /* q >= 0 over the whole layout (ue >= emin - prec + 1 >= -1074 >= its lsb; q == 0: a
             * float64 subnormal, exact); q < 0 only when zero digits were left out below, whose
             * bits read as zero */
            const int q = ue - lsb;
            const int cnt = t - q + 1; /* kept bits, <= prec, may be <= 0 */
            const uint64_t kept = cnt > 0 ? cr_sa_bits(d, nd, q, cnt) : 0;
            v = cr_sa_rounded(kept, (int)cr_sa_bits(d, nd, q - 1, 1), cr_sa_any_below(d, nd, q - 1),
                              ue, emax, neg);
        }
    }
    cr_sa_store(v, fmt, result);
}

/* cr_sa_round of a magnitude of four digits w0 + 2^32 w1 + 2^64 w2 + 2^96 w3 (each in [0,
 * 2^32)) above 2^lsb, in straight-line 128-bit arithmetic: no loop and no memory, for the GPU's
 * one rounding thread (exact.cu, last_block_end), which holds the digits in registers. The same
 * result as cr_sa_round of those four digits (test_round_window holds both against the whole
 * magnitude). */
static inline CR_HD void cr_sa_round4(uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3, int neg,
                                      int lsb, unsigned flags, int fmt, void *result)
{
    const int prec = cr_sa_prec(fmt), emin = cr_sa_emin(fmt), emax = 1 - emin;
    double v;
    if (!cr_sa_special_result(flags, &v)) {
        const uint64_t hi = w3 << 32 | w2, lo = w1 << 32 | w0;
        if (!(hi | lo)) {
            v = cr_sa_zero_result(flags);
        } else {
            const cr_u128 m = (cr_u128)hi << 64 | lo;
            const int t = hi ? 63 + cr_bitlen64(hi) : cr_bitlen64(lo) - 1; /* MSB position */
            const int E = t + lsb;
            const int ue = (E >= emin ? E : emin) - prec + 1;
            const int q = ue - lsb, cnt = t - q + 1; /* q <= t + 1 <= 128 when cnt >= 0 */
            uint64_t kept = 0;
            if (cnt > 0) kept = (uint64_t)(q >= 0 ? m >> q : m << -q) & (((uint64_t)1 << cnt) - 1u);
            const int r = q - 1; /* the round bit's position */
            const int rb = r >= 0 && r < 128 && (int)((uint64_t)(m >> r) & 1u);
            const int sticky = r >= 128 ? 1 : r > 0 && (m & (((cr_u128)1 << r) - 1u)) != 0;
            v = cr_sa_rounded(kept, rb, sticky, ue, emax, neg);
        }
    }
    cr_sa_store(v, fmt, result);
}

/* The exact sum in d (nd digits, destroyed), with the flags, rounded once to `fmt` and written
 * to result (cr_sa_round). */
static inline CR_HD void cr_sa_finish(int64_t *d, int nd, int lsb, unsigned flags, int fmt,
                                      void *result)
{
    const int neg = cr_sa_normalise(d, nd);
    cr_sa_round(d, nd, neg, lsb, flags, fmt, result);
}

#endif
