/* npy_write.c — writing arrays: a version 1.0 .npy image or raw little-endian elements, to an
 * open stream, or to a path written whole or not at all (outfile.h). */
#include "npy_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../core/dtype.h"
#include "outfile.h"

static int write_all(FILE *f, const void *src, size_t bytes)
{
    const unsigned char *p = src;
    while (bytes > 0) {
        size_t chunk = bytes < IO_BLOCK_BYTES ? bytes : IO_BLOCK_BYTES;
        if (fwrite(p, 1, chunk, f) != chunk) return -1;
        p += chunk;
        bytes -= chunk;
    }
    return 0;
}

/* Writes little-endian elements from host-order data; on a big-endian host each block is
 * swapped in a bounce buffer, since the caller's data is const. */
static int write_elements_le(FILE *f, const void *data, uint64_t n, size_t elem)
{
    if (cr_npy_host_is_little_endian()) return write_all(f, data, (size_t)n * elem);
    enum { BOUNCE_ELEMS = 1 << 16 };
    unsigned char bounce[BOUNCE_ELEMS * 8];
    const unsigned char *p = data;
    while (n > 0) {
        size_t k = n < BOUNCE_ELEMS ? (size_t)n : BOUNCE_ELEMS;
        memcpy(bounce, p, k * elem);
        cr_npy_byteswap(bounce, k, elem);
        if (write_all(f, bounce, k * elem) != 0) return -1;
        p += k * elem;
        n -= k;
    }
    return 0;
}

/* Checks the arguments of a writer; the .npy code in *code when npy is set. */
static int check_write(const char *name, const void *data, uint64_t n, coopreduce_dtype dtype,
                       int npy, const char **code, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0) err[0] = '\0';
    size_t elem = cr_dtype_size(dtype);
    if (name == NULL || (data == NULL && n > 0)) {
        cr_npy_set_err(err, errlen, "writing an array: NULL argument");
        return -1;
    }
    if (elem == 0) {
        cr_npy_set_err(err, errlen, "%s: unsupported dtype %d", name, (int)dtype);
        return -1;
    }
    if (npy && (*code = cr_dtype(dtype)->npy) == NULL) {
        cr_npy_set_err(err, errlen,
                       "%s: NumPy has no %s type, so a .npy file cannot hold it (write a "
                       "raw file instead)",
                       name, cr_npy_dtype_label(dtype));
        return -1;
    }
    if (n > (uint64_t)SIZE_MAX / elem) {
        cr_npy_set_err(err, errlen, "%s: %llu elements are too many", name, (unsigned long long)n);
        return -1;
    }
    return 0;
}

int cr_npy_write_stream_shape(FILE *f, const char *name, const void *data, int ndim,
                              const uint64_t *shape, int fortran_order, coopreduce_dtype dtype,
                              char *err, size_t errlen)
{
    const char *code = NULL;
    uint64_t n = 1;
    if (ndim < 0 || ndim > NPY_MAX_DIMS || (ndim > 0 && shape == NULL)) {
        cr_npy_set_err(err, errlen, "%s: cannot write %d dimensions (0 .. %d)",
                       name != NULL ? name : "writing an array", ndim, NPY_MAX_DIMS);
        return -1;
    }
    for (int d = 0; d < ndim; d++)
        if (__builtin_mul_overflow(n, shape[d], &n)) {
            cr_npy_set_err(err, errlen, "%s: the shape's element count overflows",
                           name != NULL ? name : "writing an array");
            return -1;
        }
    if (check_write(name, data, n, dtype, 1, &code, err, errlen) != 0) return -1;
    /* Version 1.0: magic, 1, 0, uint16 header length, header. The header is padded with spaces
     * and ends with '\n' so that the data starts at a multiple of 64 bytes, which lets readers
     * map the file and use the data in place with aligned vector loads. */
    char dict[128 + 24 * NPY_MAX_DIMS];
    int dict_len = snprintf(dict, sizeof dict, "{'descr': '<%s', 'fortran_order': %s, 'shape': (",
                            code, fortran_order ? "True" : "False");
    for (int d = 0; d < ndim; d++)
        dict_len += snprintf(dict + dict_len, sizeof dict - (size_t)dict_len, "%s%llu",
                             d ? ", " : "", (unsigned long long)shape[d]);
    dict_len += snprintf(dict + dict_len, sizeof dict - (size_t)dict_len, "%s), }",
                         ndim == 1 ? "," : "");
    size_t preamble = NPY_MAGIC_LEN + 2 + 2;
    size_t unpadded = preamble + (size_t)dict_len + 1; /* + '\n' */
    size_t total = (unpadded + NPY_ALIGNMENT - 1) / NPY_ALIGNMENT * NPY_ALIGNMENT;
    size_t header_len = total - preamble;
    unsigned char head[sizeof dict + 2 * NPY_ALIGNMENT];
    memcpy(head, NPY_MAGIC, NPY_MAGIC_LEN);
    head[6] = 1;
    head[7] = 0;
    head[8] = (unsigned char)(header_len & 0xff);
    head[9] = (unsigned char)(header_len >> 8);
    memcpy(head + preamble, dict, (size_t)dict_len);
    memset(head + preamble + dict_len, ' ', total - preamble - (size_t)dict_len - 1);
    head[total - 1] = '\n';
    if (write_all(f, head, total) != 0 ||
        write_elements_le(f, data, n, cr_dtype_size(dtype)) != 0) {
        cr_npy_set_err(err, errlen, "cannot write %s: %s", name, strerror(errno));
        return -1;
    }
    return 0;
}

int cr_npy_write_stream(FILE *f, const char *name, const void *data, uint64_t n,
                        coopreduce_dtype dtype, char *err, size_t errlen)
{
    return cr_npy_write_stream_shape(f, name, data, 1, &n, 0, dtype, err, errlen);
}

int cr_raw_write_stream(FILE *f, const char *name, const void *data, uint64_t n,
                        coopreduce_dtype dtype, char *err, size_t errlen)
{
    if (check_write(name, data, n, dtype, 0, NULL, err, errlen) != 0) return -1;
    if (write_elements_le(f, data, n, cr_dtype_size(dtype)) != 0) {
        cr_npy_set_err(err, errlen, "cannot write %s: %s", name, strerror(errno));
        return -1;
    }
    return 0;
}

int cr_npy_write(const char *path, const void *data, uint64_t n, coopreduce_dtype dtype, char *err,
                 size_t errlen)
{
    const char *code = NULL;
    if (check_write(path, data, n, dtype, 1, &code, err, errlen) != 0) return -1;
    cr_outfile out;
    if (cr_outfile_open(&out, path, 1, err, errlen) != 0) return -1;
    if (cr_npy_write_stream(out.f, path, data, n, dtype, err, errlen) != 0) {
        cr_outfile_abort(&out);
        return -1;
    }
    return cr_outfile_commit(&out, path, err, errlen);
}
