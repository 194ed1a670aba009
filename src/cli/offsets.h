/* offsets.h — segment offsets: read from a .npy file for `coopreduce sum --segments`, or
 * generated for `coopreduce bench --segments random:MIN:MAX`. */
#ifndef COOPREDUCE_CLI_OFFSETS_H
#define COOPREDUCE_CLI_OFFSETS_H

#include <stdint.h>

/* nseg + 1 int64 offsets (free with free()). */
typedef struct {
    int64_t *offsets;
    uint64_t nseg;
} cli_segments;

/* Reads `path` ("-" is refused by the caller): a 1-D .npy of int64 ('<i8'), or of int32 ('<i4'),
 * widened; at least one offset, offsets[0] >= 0, non-decreasing, the last at most n (the
 * element count of the array they cut). Prints its own error naming the file and the first bad
 * offset; EXIT_OK or EXIT_ERROR. */
int cli_read_segments(const char *path, uint64_t n, cli_segments *out);

/* Segments covering [0, n) with lengths drawn uniformly from [min_len, max_len] (max_len >= 1),
 * the last one cut at n; identical on every machine for a seed. Prints its own error;
 * EXIT_OK or EXIT_ERROR. */
int cli_random_segments(uint64_t n, uint64_t min_len, uint64_t max_len, uint64_t seed,
                        cli_segments *out);

/* "random:MIN:MAX" (MIN and MAX element counts, 0 <= MIN <= MAX, MAX >= 1): 0 or -1. */
int cli_parse_segments_spec(const char *text, uint64_t *min_len, uint64_t *max_len);

#endif
