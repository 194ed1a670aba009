/* shape.c — shapes, axes and the (outer, len, inner) view of an axis (shape.h). */
#include "shape.h"

#include <stdio.h>
#include <string.h>

#include "args.h"
#include "messages.h"

int cli_parse_shape(const char *text, cli_shape *shape, uint64_t *n)
{
    memset(shape, 0, sizeof *shape);
    *n = 1;
    int overflow = 0;
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",x");
        char item[64];
        if (len == 0 || len >= sizeof item || shape->ndim == CLI_MAX_DIMS) return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        uint64_t e;
        if (cli_parse_count(item, &e) != 0) return -1;
        shape->extent[shape->ndim++] = e;
        if (__builtin_mul_overflow(*n, e, n)) overflow = 1;
        if (p[len] == '\0') break;
        p += len + 1;
    }
    if (overflow) {
        /* A zero extent makes any product zero. */
        for (int d = 0; d < shape->ndim; d++)
            if (shape->extent[d] == 0) {
                *n = 0;
                return 0;
            }
        *n = 0;
        return -1;
    }
    return 0;
}

int cli_shape_option(const char *value, int positive, cli_shape *shape, uint64_t *n)
{
    if (cli_parse_shape(value, shape, n) == 0 && (!positive || *n != 0)) return 0;
    return cli_usage_error("--shape '%s': expected %sextents separated by ',' or 'x' (1024,256 "
                           "or 1024x256; at most %d, product below 2^64)",
                           value, positive ? "positive " : "", CLI_MAX_DIMS);
}

int cli_parse_axis(const char *text, int *axis)
{
    int negative = text[0] == '-';
    int v;
    if (cli_parse_int(text + negative, 0, 1 << 20, &v) != 0) return -1;
    *axis = negative ? -v : v;
    return 0;
}

void cli_format_shape(const cli_shape *shape, char *out, size_t outlen)
{
    size_t used = (size_t)snprintf(out, outlen, "(");
    for (int d = 0; d < shape->ndim && used < outlen; d++)
        used += (size_t)snprintf(out + used, outlen - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)shape->extent[d]);
    if (used < outlen) snprintf(out + used, outlen - used, shape->ndim == 1 ? ",)" : ")");
}

void cli_axis_view(const cli_shape *shape, int fortran, int axis, int keepdims, uint64_t *outer,
                   uint64_t *len, uint64_t *inner, cli_shape *reduced)
{
    /* A Fortran-ordered array's memory is the C-ordered array of the reversed shape: numpy
     * axis a is its axis ndim - 1 - a. The extents before it in memory order are then the
     * numpy extents after a, and the other way round. */
    uint64_t before = 1, after = 1;
    for (int d = 0; d < shape->ndim; d++) {
        if (d < axis) before *= shape->extent[d];
        if (d > axis) after *= shape->extent[d];
    }
    *outer = fortran ? after : before;
    *inner = fortran ? before : after;
    *len = shape->extent[axis];
    reduced->ndim = 0;
    for (int d = 0; d < shape->ndim; d++) {
        if (d != axis)
            reduced->extent[reduced->ndim++] = shape->extent[d];
        else if (keepdims)
            reduced->extent[reduced->ndim++] = 1;
    }
}
