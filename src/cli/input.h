/* input.h — arrays for the commands: generated, or read from a .npy or raw file or from
 * standard input ("-"). */
#ifndef COOPREDUCE_CLI_INPUT_H
#define COOPREDUCE_CLI_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "gen.h"
#include "npy.h"

/* --max-input's default: the most data read from a stream (standard input, a pipe, a device).
 * Regular files are read whatever their size. */
#define CLI_DEFAULT_MAX_INPUT CR_DEFAULT_MAX_STREAM_BYTES

/* n elements of generated data, 64-byte aligned (free with cr_npy_free). Prints its own error;
 * EXIT_OK or EXIT_ERROR. */
int cli_generate(cr_gen_kind kind, uint64_t n, uint64_t seed, coopreduce_dtype dtype,
                 cr_npy_array *out);

/* Reads `path` ("-": standard input) as a .npy file, or with raw set as raw little-endian
 * elements of `dtype`; at most max_input bytes of data from a stream. Prints its own error;
 * EXIT_OK or EXIT_ERROR. */
int cli_read_array(const char *path, int raw, coopreduce_dtype dtype, uint64_t max_input,
                   cr_npy_array *out);

/* "standard input" for "-", else the path: how messages name an input. */
const char *cli_input_name(const char *path);

/* "(1000,)", "(2, 3)": a .npy shape as NumPy writes it. */
void cli_describe_shape(const cr_npy_array *a, char *out, size_t outlen);

#endif
