/* ref_exact.h — an exact reference sum for the tests, independent of the library.
 *
 * A fixed-point superaccumulator: every finite double is an integer multiple of 2^-1074, so the
 * sum of any number of finite doubles is exactly an integer M times 2^-1074. M is held as a big
 * integer of REF_EXACT_LIMBS signed 64-bit limbs, each representing a 32-bit digit
 * (M = sum limb[i] * 2^(32 i)); carries are normalised lazily (every REF_EXACT_NORMALIZE_EVERY
 * additions), so an addition is three integer adds. The limbs cover 2^2098 (the largest double
 * times 2^1074) plus more than 64 bits of headroom, so up to 2^64 additions never overflow.
 *
 * NaN, +inf and -inf inputs are tracked separately; the conversions apply the IEEE rules:
 * any NaN -> NaN; +inf and -inf both present -> NaN; otherwise an infinity wins. A finite sum
 * that is exactly zero is +0.0, unless every input was -0.0 (and there was at least one), as in
 * IEEE round-to-nearest summation in any order.
 *
 * ref_exact_to_double / ref_exact_to_float round the exact sum ONCE, to nearest-even, directly
 * from the big integer (no double rounding through double for float), with subnormal results and
 * overflow to +-inf (overflow as IEEE defines it: the result rounded with unbounded exponent
 * exceeds the largest finite number). A nonzero exact sum that rounds to zero keeps its sign.
 * The NaN returned is the canonical quiet NaN (0x7ff8000000000000 / 0x7fc00000). */
#ifndef COOPREDUCE_TESTS_REF_EXACT_H
#define COOPREDUCE_TESTS_REF_EXACT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REF_EXACT_LIMBS           72
#define REF_EXACT_NORMALIZE_EVERY (1u << 20)
#define REF_WIDE_LIMBS            140

typedef struct {
    int64_t limb[REF_EXACT_LIMBS]; /* M = sum limb[i] * 2^(32 i); value = M * 2^-1074 */
    uint32_t pending;              /* additions since the last carry normalisation */
    int nan;                       /* a NaN was added */
    uint64_t pinf, ninf;           /* +inf / -inf added */
    uint64_t neg_zeros;            /* -0.0 added */
    uint64_t others;               /* anything finite that is not -0.0 (+0.0 included) */
} ref_exact;

void ref_exact_init(ref_exact *r);
void ref_exact_reset(ref_exact *r); /* same as init */

void ref_exact_add(ref_exact *r, double x);
void ref_exact_add_f32_array(ref_exact *r, const float *x, size_t n);
void ref_exact_add_f64_array(ref_exact *r, const double *x, size_t n);

/* Correctly rounded (nearest-even) results. */
double ref_exact_to_double(const ref_exact *r);
float ref_exact_to_float(const ref_exact *r);
/* Approximate (within a few units of long double precision): for error measurements. */
long double ref_exact_to_long_double(const ref_exact *r);

/* The exact sum rounded once (nearest-even) to a binary format with `prec` significand bits and
 * minimum normal exponent emin (emax = 1 - emin): binary16 (11, -14), bfloat16 (8, -126),
 * float (24, -126), double (53, -1022). Subnormals, overflow to +-inf, specials and zeros as
 * above. The value is returned as a double (exactly a value of the format, inf or NaN). */
double ref_exact_round(const ref_exact *r, int prec, int emin);

/* Exact sums of products of doubles: every product x*y of finite doubles is an integer times
 * 2^-2148 (< 2^2048), held in REF_WIDE_LIMBS limbs as above. Special values follow IEEE
 * products (NaN * y, inf * 0 -> NaN; inf * nonzero -> signed inf; a zero product's sign is the
 * XOR of the factors' signs), then the sum rules above. */
typedef struct {
    int64_t limb[REF_WIDE_LIMBS]; /* value = M * 2^-2148 */
    uint32_t pending;
    int nan;
    uint64_t pinf, ninf, neg_zeros, others;
} ref_wide;
void ref_wide_init(ref_wide *r);
void ref_wide_add_product(ref_wide *r, double x, double y);
double ref_wide_to_double(const ref_wide *r);

/* -1, 0 or +1: the sign of the exact finite part (ignores NaN/inf inputs). */
int ref_exact_sign(const ref_exact *r);
/* 1 when a NaN or an infinity was added. */
int ref_exact_has_special(const ref_exact *r);

#ifdef __cplusplus
}
#endif

#endif /* COOPREDUCE_TESTS_REF_EXACT_H */
