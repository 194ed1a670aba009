/* gen.h — reproducible test and demo data, identical on every machine.
 *
 * Element i depends only on (kind, seed, i): a counter-based generator (a 64-bit integer hash of
 * seed and index), so data can be generated in parallel, in any order, on the CPU or the GPU, and
 * gives the same values everywhere. Values are produced in double precision using only IEEE
 * +, -, *, / and sqrt (no libm transcendental functions, whose last bits differ between C
 * libraries), then rounded once to the requested dtype. Not part of the library: linked into the
 * CLI and the tests. */
#ifndef COOPREDUCE_GEN_H
#define COOPREDUCE_GEN_H
#include <stdint.h>
#include "coopreduce.h"

typedef enum {
    CR_GEN_ONES = 0,    /* 1.0 */
    CR_GEN_UNIFORM = 1, /* uniform in [0, 1): 24 random bits for float32, 53 for float64 */
    CR_GEN_NORMAL = 2,  /* standard normal (Marsaglia polar method, deterministic log) */
    CR_GEN_SIGNED = 3,  /* uniform in [-1, 1) times 2^e, e uniform in [-20, 20]: wide range,
                            heavy cancellation; exact in float32 */
    /* Float dtypes only (cr_gen_fill refuses the integer types); each value exact in the dtype: */
    CR_GEN_WIDE = 4,      /* random sign, random significand (every bit) times 2^e, e uniform over
                             the dtype's whole normal range [emin, emax] */
    CR_GEN_SUBNORMAL = 5, /* random sign times a nonzero subnormal significand: all subnormal */
    CR_GEN_CANCEL = 6,    /* elements 2p and 2p+1 are a and -a (a: random sign and significand,
                             e uniform in [emin, emax / 2]), except in one pair of 64 (hash
                             chosen): two small residues (random significand times 2^e, e in
                             [emin, emin + 8]), so the exact sum is the residues' sum */
} cr_gen_kind;

/* Whether `kind` can fill `dtype` (the last three kinds: float dtypes only). */
int cr_gen_supports(cr_gen_kind kind, coopreduce_dtype dtype);

/* Parses "ones" | "uniform" | "normal" | "signed" | "wide" | "subnormal" | "cancel". Returns 0 on success, -1 if unknown. */
int cr_gen_parse(const char *name, cr_gen_kind *kind);
#define CR_GEN_KINDS "ones, uniform, normal, signed, wide, subnormal, cancel"
const char *cr_gen_name(cr_gen_kind kind);

/* The 64-bit hash of (seed, i) that every generator is built on (splitmix64 finaliser). */
uint64_t cr_gen_hash(uint64_t seed, uint64_t i);

/* One element as double (before rounding to the dtype; wide, subnormal and cancel: the float64
 * element, see cr_gen_float_value for the others). */
double cr_gen_value(cr_gen_kind kind, uint64_t seed, uint64_t i);

/* wide, subnormal and cancel: element i for a float format of `prec` significand bits (the
 * implicit one included) and normal exponents [emin, emax], exact in that format. */
double cr_gen_float_value(cr_gen_kind kind, uint64_t seed, uint64_t i, int prec, int emin,
                          int emax);

/* One pair of 64 in cancel is a residue pair. */
int cr_gen_cancel_residue(uint64_t seed, uint64_t i);

/* Fills out[0..n) with elements first..first+n-1 of the stream, in any of the eight dtypes:
 *   FLOAT32, FLOAT64: the double rounded once (uniform: the leading 24 or 53 random bits).
 *   FLOAT16, BFLOAT16: the float32 element rounded to the 16-bit type, to nearest even (uniform:
 *     the leading 11 or 8 random bits, exact, so it stays in [0, 1); signed for FLOAT16: the
 *     float32 value times 2^-6, so that no element overflows to infinity).
 *   INT32, INT64, UINT32, UINT64: ones = 1; uniform = every value of the type equally likely;
 *     normal and signed = the double times 2^20 (its magnitude, for the unsigned types),
 *     truncated toward zero and clamped to the type's range.
 *   wide, subnormal, cancel: float dtypes only, cr_gen_float_value for the dtype's format.
 * Returns 0, or -1 on an unknown dtype or kind (or a kind the dtype does not take). Uses `threads` POSIX threads when > 1 and n is
 * large. */
int cr_gen_fill(void *out, uint64_t first, uint64_t n, coopreduce_dtype dtype, cr_gen_kind kind,
                uint64_t seed, int threads);

/* 16-bit floats (FLOAT16 or BFLOAT16, as uint16_t bits), with the library's own rules
 * (src/core/values.h): float32 -> 16 bits rounds to nearest even (overflow gives +-inf, NaN the
 * canonical NaN); 16 bits -> double is exact. */
uint16_t cr_gen_to_half(float value, coopreduce_dtype dtype);
double cr_gen_from_half(uint16_t bits, coopreduce_dtype dtype);
#endif
