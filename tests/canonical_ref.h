/* canonical_ref.h — the CPU canonical-sum tests' reference and harness (canonical_ref.c).
 *
 * canon_bits is an independent implementation of canonical order v1 (docs/DETERMINISM.md),
 * written to be obviously right rather than fast: a chunk is copied into a padded R x W matrix
 * (padding -0.0), the row tree is evaluated level by level (rows 2j and 2j+1 -> row j, for every
 * lane), then the lane tree level by level (lanes 2j and 2j+1 -> lane j). Levels are applied
 * until one chunk is left; NaN is made the canonical NaN at the end.
 *
 * The rest is what the test_sum_* programs share: the library's sum as bits, generated data,
 * the error bound's gamma, and size lists. */
#ifndef COOPREDUCE_TESTS_CANONICAL_REF_H
#define COOPREDUCE_TESTS_CANONICAL_REF_H

#include <stdint.h>

#include "coopreduce.h"
#include "gen.h"
#include "util.h"

/* The order's constants: chunk C = ROWS x W elements, per dtype. */
#define C32  4096u
#define W32  128u
#define C64  2048u
#define W64  64u
#define ROWS 32u

/* Bits of the canonical sum of x[0..n) (float32 or float64), computed here. */
uint64_t canon_bits(const void *x, uint64_t n, coopreduce_dtype dt);

/* The number of levels of the tree over n elements with chunks of C. */
unsigned levels_of(uint64_t n, uint64_t C);

/* gamma(k) = k u / (1 - k u), u the unit roundoff of dt (float32 or float64). */
long double gamma_k(unsigned k, coopreduce_dtype dt);

/* The library's sum of x[0..n) on handle h as bits (coopreduce_sum, or coopreduce_sum_to_host
 * when to_host), 0xdeadbeef on failure. Returns the status. */
coopreduce_status sum_bits(coopreduce_handle *h, const void *x, uint64_t n, coopreduce_dtype dt,
                           uint64_t *bits, int to_host);

/* n elements of the generator's stream (kind, seed) in dt; exits on failure. */
void *gen_data(coopreduce_dtype dt, cr_gen_kind kind, uint64_t seed, uint64_t n);

/* Appends n to list[0..*count) unless it is there already or the list holds cap sizes. */
void add_size(uint64_t *list, int *count, int cap, uint64_t n);

#endif /* COOPREDUCE_TESTS_CANONICAL_REF_H */
