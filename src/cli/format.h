/* format.h — how results are written: decimals, integers, bits, JSON strings. */
#ifndef COOPREDUCE_CLI_FORMAT_H
#define COOPREDUCE_CLI_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coopreduce.h"

/* A floating-point value of `dtype` (FLOAT16, BFLOAT16, FLOAT32 or FLOAT64; `bits` holds one
 * element in host order) as NumPy's str() writes it: the shortest decimal that reads back to
 * the same bits (of the closest when several are as short), positional when 1e-4 <= |x| <
 * 10^3 (float16), 10^2 (bfloat16), 10^6 (float32) or 10^16 (float64), so that no digit is
 * padded in that would not read back ("1048576.0", "0.001", "2.1474836e+09", "1e-05"); also
 * "0.0", "-0.0", "inf", "-inf", "nan". */
void cli_format_float(const unsigned char *bits, coopreduce_dtype dtype, char *out, size_t outlen);

/* The exact decimal of a 128-bit integer (two words, low first; two's complement if
 * is_signed). */
void cli_format_int128(const uint64_t w[2], int is_signed, char *out, size_t outlen);

/* A reduction's result as text: floats as cli_format_float, integers (the 128-bit sums of int64
 * and uint64 included: rsize 16) as exact decimal integers. `rdtype` and `rsize` are
 * coopreduce_op_result_size's. */
void cli_format_value(const unsigned char *bits, coopreduce_dtype rdtype, size_t rsize, char *out,
                      size_t outlen);

/* The result's bytes in hex, most significant first: "0x" and 2 * size digits. */
void cli_format_bits(const unsigned char *bits, size_t size, char *out, size_t outlen);

/* s as a JSON string literal, quotes included. */
void cli_print_json_string(FILE *f, const char *s);

#endif
