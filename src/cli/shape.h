/* shape.h — array shapes on the command line: --shape, --axis, and how a numpy axis of a C- or
 * Fortran-ordered array maps onto the library's (outer, len, inner) view. */
#ifndef COOPREDUCE_CLI_SHAPE_H
#define COOPREDUCE_CLI_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#define CLI_MAX_DIMS 32

typedef struct {
    int ndim;
    uint64_t extent[CLI_MAX_DIMS];
} cli_shape;

/* "1024,256", "1024x256", "2^10,256", "7": extents spelled as element counts (args.h), at least
 * one, at most CLI_MAX_DIMS; zero extents allowed. *n: their product (0 when it overflows, and
 * then -1). Returns 0 or -1; the caller words the usage error. */
int cli_parse_shape(const char *text, cli_shape *shape, uint64_t *n);

/* The value of a --shape option, parsed as cli_parse_shape does (and, with `positive`, no
 * extent zero); a usage error otherwise. Returns 0, or EXIT_USAGE after the message. */
int cli_shape_option(const char *value, int positive, cli_shape *shape, uint64_t *n);

/* "-1", "0", "2": an integer axis, negative counting from the end as numpy does. */
int cli_parse_axis(const char *text, int *axis);

/* "(1024, 256)", "(7,)", "()": as NumPy writes a shape. */
void cli_format_shape(const cli_shape *shape, char *out, size_t outlen);

/* A reduction along numpy axis `axis` (already checked: 0 <= axis < ndim) of an array of
 * `shape`, stored in C order, or in Fortran order when fortran is set: the library's view of its
 * memory (result[o * inner + i] reduces x[(o * len + k) * inner + i] over k), and the shape of
 * the result (the axis removed, or kept as extent 1 with keepdims). The results lie in memory in
 * the input's order: C order, or Fortran order for a Fortran-ordered input. */
void cli_axis_view(const cli_shape *shape, int fortran, int axis, int keepdims, uint64_t *outer,
                   uint64_t *len, uint64_t *inner, cli_shape *reduced);

#endif
