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
#include <stdio.h>
#include "coopreduce.h"

/* The most data bytes read from a stream (a pipe, a terminal, a device: anything whose size
 * fstat cannot tell) unless the caller says otherwise: 4 GiB. Regular files are read at the
 * size fstat gives, whatever it is. */
#define CR_DEFAULT_MAX_STREAM_BYTES (UINT64_C(4) << 30)

typedef struct {
    coopreduce_dtype dtype;
    uint64_t n; /* number of elements (product of the shape; 1 for shape ()) */
    int ndim;
    uint64_t shape[32];
    int fortran_order;
    void *data; /* n elements, little-endian host order, 64-byte aligned; free with
                              cr_npy_free */
} cr_npy_array;

/* Reads `path`. Returns 0 on success; on failure returns -1, writes a one-line message (no
 * trailing newline) into err (errlen bytes) and leaves *out with data == NULL. Fails on: a file
 * that cannot be opened or read, a bad magic string or version, a malformed header, an
 * unsupported dtype (the message names it), a shape whose element count overflows, and a data
 * section shorter or longer than the shape says. */
int cr_npy_read(const char *path, cr_npy_array *out, char *err, size_t errlen);

/* The same from an open stream (standard input, say), from its current position; `name` is
 * the file's name in messages. A regular file is sized by fstat; from anything else the data is
 * read in bounded steps as it arrives, so that what a header claims reserves no memory, and more
 * than max_stream_bytes of data fails with -2 (rather than -1) before it is read. The stream is
 * not closed. */
int cr_npy_read_stream(FILE *f, const char *name, uint64_t max_stream_bytes, cr_npy_array *out,
                       char *err, size_t errlen);

/* Reads a raw little-endian file of `dtype` elements (any of the eight dtypes). Same error
 * contract; a file size that is not a multiple of the element size is an error. */
int cr_raw_read(const char *path, coopreduce_dtype dtype, cr_npy_array *out, char *err,
                size_t errlen);

/* The same from an open stream, as cr_npy_read_stream: a stream that brings more than
 * max_stream_bytes fails with -2 once that many bytes have arrived. */
int cr_raw_read_stream(FILE *f, const char *name, coopreduce_dtype dtype, uint64_t max_stream_bytes,
                       cr_npy_array *out, char *err, size_t errlen);

/* Writes a 1-D array as a version 1.0 .npy file ('<f2', '<f4', '<f8', '<i4', '<i8', '<u4' or
 * '<u8'; BFLOAT16 has no .npy type and fails). Returns 0, or -1 with err set. The file is
 * written whole or not at all, replacing an existing one (outfile.h). */
int cr_npy_write(const char *path, const void *data, uint64_t n, coopreduce_dtype dtype, char *err,
                 size_t errlen);

/* The .npy image (header and data) or the raw little-endian elements written to an open stream;
 * `name` for messages. Returns 0, or -1 with err set; the stream is neither closed nor
 * removed. */
int cr_npy_write_stream(FILE *f, const char *name, const void *data, uint64_t n,
                        coopreduce_dtype dtype, char *err, size_t errlen);
/* The .npy image of an array of any shape (ndim 0 .. 32; the data holds the product of the
 * extents, in C order, or in Fortran order with fortran_order set, which the header records). */
int cr_npy_write_stream_shape(FILE *f, const char *name, const void *data, int ndim,
                              const uint64_t *shape, int fortran_order, coopreduce_dtype dtype,
                              char *err, size_t errlen);
int cr_raw_write_stream(FILE *f, const char *name, const void *data, uint64_t n,
                        coopreduce_dtype dtype, char *err, size_t errlen);

void cr_npy_free(cr_npy_array *a);
#endif
