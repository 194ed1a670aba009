/* npy_internal.h — what the .npy reader (npy.c), its header parser (npy_header.c) and the
 * writers (npy_write.c) share. Not installed, not for the CLI. */
#ifndef COOPREDUCE_NPY_INTERNAL_H
#define COOPREDUCE_NPY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "npy.h"

#define NPY_MAGIC     "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGNMENT 64
/* Reads and writes go in blocks of this size: files can be several GB. */
#define IO_BLOCK_BYTES ((size_t)64 << 20)
#define NPY_MAX_DIMS   ((int)(sizeof(((cr_npy_array *)0)->shape) / sizeof(uint64_t)))

#if defined(__GNUC__)
#define NPY_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define NPY_PRINTF(f, a)
#endif

/* A one-line message into err (errlen bytes; nothing when err is NULL): newlines a path or a
 * header excerpt brings in become spaces. */
void cr_npy_set_err(char *err, size_t errlen, const char *fmt, ...) NPY_PRINTF(3, 4);

/* "float32", or "unknown" for a value that is not a dtype. */
const char *cr_npy_dtype_label(coopreduce_dtype dtype);

int cr_npy_host_is_little_endian(void);
void cr_npy_byteswap(void *data, uint64_t n, size_t elem);

/* The header dict, parsed (npy_header.c). */
typedef struct {
    int have_descr, have_fortran, have_shape;
    char descr[64];
    int descr_is_string;
    int fortran_order;
    int ndim;
    uint64_t shape[NPY_MAX_DIMS];
} npy_header;

/* Parses the dict. Returns 0; -1 on a syntax error, -2 on a dimension beyond 2^64, with a short
 * reason (without the file name) in why. */
int cr_npy_parse_header(const char *text, size_t len, npy_header *h, char *why, size_t whylen);

/* The dtype of a descr string ('<f4'): 0; -1 when unsupported; -2 for a big-endian type other
 * than float32 and float64 (*dtype set, to name it). */
int cr_npy_dtype_from_descr(const char *descr, coopreduce_dtype *dtype, int *file_little_endian);

#endif
