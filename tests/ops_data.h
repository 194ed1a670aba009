/* ops_data.h — data for the CPU operation tests (ops_data.c). */
#ifndef COOPREDUCE_TESTS_OPS_DATA_H
#define COOPREDUCE_TESTS_OPS_DATA_H

#include <stdint.h>

#include "coopreduce.h"

/* Fills x[0..n) of dt from util.h's stream, all finite: kind 0 uniform in [0, 1), 1 wide (both
 * signs, magnitudes 2^-10 to 2^10), 2 ties and zeros (multiples of 0.5 in [-1.5, 1.5], -0.0 now
 * and then; integers in [-2, 2], or [0, 4] unsigned). float16 takes random patterns of a moderate
 * range, bfloat16 the float32's high half, integers of kinds 0 and 1 random bits. */
void fill_values(void *x, uint64_t n, coopreduce_dtype dt, int kind);

#endif /* COOPREDUCE_TESTS_OPS_DATA_H */
