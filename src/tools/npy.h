/* npy.h — reading NumPy .npy files (format versions 1.0, 2.0, 3.0).
 *
 * Supported element types: float16 '<f2', float32 '<f4', float64 '<f8', int32 '<i4', int64
 * '<i8', uint32 '<u4', uint64 '<u8' ('=' accepted for '<'), and the big-endian '>f4' and '>f8',
 * which are byte-swapped on load; any other big-endian type ('>i4', '>f2', ...) is rejected with
 * a message saying so. NumPy has no bfloat16: bfloat16 comes as a raw file. Any shape; the data is returned flat, in the order it is stored in the
 * file (C order, or Fortran order when fortran_order is True). Not part of the library: linked
 * into the CLI and the tests. */
#ifndef COOPREDUCE_NPY_H
#define COOPREDUCE_NPY_H
#include <stddef.h>
#include <stdint.h>
#include "coopreduce.h"

typedef struct {
    coopreduce_dtype dtype;
    uint64_t n;            /* number of elements (product of the shape; 1 for shape ()) */
    int ndim;
    uint64_t shape[32];
    int fortran_order;
    void *data;            /* n elements, little-endian host order, 64-byte aligned; free with
                              cr_npy_free */
} cr_npy_array;

/* Reads `path`. Returns 0 on success; on failure returns -1, writes a one-line message (no
 * trailing newline) into err (errlen bytes) and leaves *out with data == NULL. Fails on: a file
 * that cannot be opened or read, a bad magic string or version, a malformed header, an
 * unsupported dtype (the message names it), a shape whose element count overflows, and a data
 * section shorter or longer than the shape says. */
int cr_npy_read(const char *path, cr_npy_array *out, char *err, size_t errlen);

/* Reads a raw little-endian file of `dtype` elements (any of the eight dtypes). Same error
 * contract; a file size that is not a multiple of the element size is an error. */
int cr_raw_read(const char *path, coopreduce_dtype dtype, cr_npy_array *out, char *err, size_t errlen);

/* Writes a 1-D array as a version 1.0 .npy file ('<f2', '<f4', '<f8', '<i4', '<i8', '<u4' or
 * '<u8'; BFLOAT16 has no .npy type and fails). Returns 0, or -1 with err set. */
int cr_npy_write(const char *path, const void *data, uint64_t n, coopreduce_dtype dtype,
                 char *err, size_t errlen);

void cr_npy_free(cr_npy_array *a);
#endif
