/* npy.c — NumPy .npy files (versions 1.0, 2.0, 3.0) and raw little-endian arrays.
 *
 * Element types: float16, float32, float64, int32, int64, uint32, uint64 little-endian; float32
 * and float64 big-endian too. Raw files: those and bfloat16.
 *
 * Format: "\x93NUMPY", major, minor, header length (2 bytes little-endian for 1.x, 4 bytes for
 * 2.x and 3.x), then an ASCII (3.x: UTF-8) Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (1024,), }
 * padded with spaces and a newline, then the raw data. Files can be several GB, so data is read
 * straight into its final 64-byte-aligned buffer in large blocks, and the size is checked
 * against the file before anything is allocated. */
#include "npy.h"

#include "../core/dtype.h"
#include "npy_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* No legitimate header is anywhere near this; the limit keeps a corrupt length field from
 * making us allocate gigabytes for it. */
#define NPY_MAX_HEADER_BYTES (1u << 20)

void cr_npy_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    /* The contract is one line: a path or a header excerpt must not break it. */
    for (char *c = err; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
}

const char *cr_npy_dtype_label(coopreduce_dtype dtype)
{
    const cr_dtype_info *d = cr_dtype(dtype);
    return d != NULL ? d->name : "unknown";
}

/* What the reader accepts, for the "unsupported dtype" messages. */
#define SUPPORTED_DTYPES                                                                           \
    "float16 '<f2', float32 '<f4', float64 '<f8', int32 '<i4', int64 '<i8', uint32 '<u4', "        \
    "uint64 '<u8'; float32 and float64 also big-endian"

int cr_npy_host_is_little_endian(void)
{
    const uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    return first == 1;
}

void cr_npy_byteswap(void *data, uint64_t n, size_t elem)
{
    unsigned char *p = data;
    for (uint64_t k = 0; k < n; k++, p += elem) {
        for (size_t a = 0, b = elem - 1; a < b; a++, b--) {
            unsigned char tmp = p[a];
            p[a] = p[b];
            p[b] = tmp;
        }
    }
}

static void *alloc_aligned(size_t bytes)
{
    void *p = NULL;
    /* At least one alignment unit, so that an empty array still gets a real pointer and callers
     * need no special case for n == 0. */
    if (bytes < NPY_ALIGNMENT) bytes = NPY_ALIGNMENT;
    if (posix_memalign(&p, NPY_ALIGNMENT, bytes) != 0) return NULL;
    return p;
}

/* Reads exactly `bytes` bytes in large blocks. Returns the number of bytes read, which is less
 * than `bytes` only at end of file or on an error (ferror tells which). */
static size_t read_fully(FILE *f, void *dst, size_t bytes)
{
    unsigned char *p = dst;
    size_t done = 0;
    while (done < bytes) {
        size_t want = bytes - done < IO_BLOCK_BYTES ? bytes - done : IO_BLOCK_BYTES;
        size_t got = fread(p + done, 1, want, f);
        done += got;
        if (got < want) break;
    }
    return done;
}

static void reset_array(cr_npy_array *a)
{
    memset(a, 0, sizeof *a);
    a->dtype = COOPREDUCE_FLOAT32;
}

void cr_npy_free(cr_npy_array *a)
{
    if (a == NULL) return;
    free(a->data);
    a->data = NULL;
}

/* ---------------------------------------------------------------- reading */

/* "1 MiB", "4 GiB", "1000 bytes": sizes in messages. */
static void describe_bytes(uint64_t bytes, char *out, size_t outlen)
{
    static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};
    for (int k = 0; k < 4; k++) {
        uint64_t unit = UINT64_C(1) << (40 - 10 * k);
        if (bytes >= unit && bytes % unit == 0) {
            snprintf(out, outlen, "%llu %s", (unsigned long long)(bytes / unit), units[k]);
            return;
        }
    }
    snprintf(out, outlen, "%llu bytes", (unsigned long long)bytes);
}

/* Reads `count` elements of a regular file into a fresh aligned buffer, then insists on end of
 * file, so that short and long data sections are both reported. file_bytes_left is the number
 * of data bytes fstat says the file holds. */
static int read_data(FILE *f, const char *path, coopreduce_dtype dtype, uint64_t count,
                     int file_little_endian, long long file_bytes_left, cr_npy_array *out,
                     char *err, size_t errlen)
{
    size_t elem = cr_dtype_size(dtype);
    if (count > (uint64_t)SIZE_MAX / elem) {
        cr_npy_set_err(err, errlen, "%s: %llu elements do not fit in memory addresses", path,
                       (unsigned long long)count);
        return -1;
    }
    size_t bytes = (size_t)count * elem;
    /* Check before allocating: a wrong shape must not cost a multi-GB allocation. */
    if ((unsigned long long)file_bytes_left < (unsigned long long)bytes) {
        cr_npy_set_err(err, errlen,
                       "%s is truncated: the shape needs %llu data bytes but the file has %lld",
                       path, (unsigned long long)bytes, file_bytes_left);
        return -1;
    }
    if ((unsigned long long)file_bytes_left > (unsigned long long)bytes) {
        cr_npy_set_err(err, errlen,
                       "%s has %llu bytes of extra data after the %llu the shape needs", path,
                       (unsigned long long)file_bytes_left - (unsigned long long)bytes,
                       (unsigned long long)bytes);
        return -1;
    }
    void *data = alloc_aligned(bytes);
    if (data == NULL) {
        cr_npy_set_err(err, errlen, "%s: cannot allocate %zu bytes for %llu elements", path, bytes,
                       (unsigned long long)count);
        return -1;
    }
    size_t got = read_fully(f, data, bytes);
    if (got < bytes) {
        if (ferror(f))
            cr_npy_set_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
        else
            cr_npy_set_err(err, errlen,
                           "%s is truncated: the shape needs %zu data bytes but the file has %zu",
                           path, bytes, got);
        free(data);
        return -1;
    }
    if (fgetc(f) != EOF) {
        cr_npy_set_err(err, errlen, "%s has extra data after the %zu bytes the shape needs", path,
                       bytes);
        free(data);
        return -1;
    }
    if (ferror(f)) {
        cr_npy_set_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
        free(data);
        return -1;
    }
    if (file_little_endian != cr_npy_host_is_little_endian()) cr_npy_byteswap(data, count, elem);
    out->data = data;
    out->dtype = dtype;
    out->n = count;
    return 0;
}

/* Reads until end of file or `max` bytes into an aligned buffer that grows as the data
 * arrives, so that what a stream claims (a .npy header's shape) reserves nothing. */
static int read_growing(FILE *f, const char *name, uint64_t max, void **data_out, size_t *used_out,
                        char *err, size_t errlen)
{
    const size_t first_step = (size_t)1 << 20;
    size_t cap = max < first_step ? (size_t)max : first_step, used = 0;
    void *data = alloc_aligned(cap);
    if (data == NULL) {
        cr_npy_set_err(err, errlen, "%s: out of memory", name);
        return -1;
    }
    for (;;) {
        size_t got = read_fully(f, (unsigned char *)data + used, cap - used);
        used += got;
        if (used < cap || used == max) break;
        uint64_t next = (uint64_t)cap * 2 < max ? (uint64_t)cap * 2 : max;
        void *bigger = next <= SIZE_MAX ? alloc_aligned((size_t)next) : NULL;
        if (bigger == NULL) {
            cr_npy_set_err(err, errlen, "%s: cannot allocate %llu bytes for the data read so far",
                           name, (unsigned long long)next);
            free(data);
            return -1;
        }
        memcpy(bigger, data, used);
        free(data);
        data = bigger;
        cap = (size_t)next;
    }
    if (ferror(f)) {
        cr_npy_set_err(err, errlen, "cannot read %s: %s", name, strerror(errno));
        free(data);
        return -1;
    }
    *data_out = data;
    *used_out = used;
    return 0;
}

/* Bytes from the current position to the end of a regular file, or -1 when unknown. */
static long long bytes_left_in_file(FILE *f)
{
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
    off_t position = ftello(f);
    return position < 0 ? -1 : (long long)st.st_size - (long long)position;
}

static FILE *open_for_reading(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        cr_npy_set_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        cr_npy_set_err(err, errlen, "cannot read %s: it is a directory", path);
        fclose(f);
        return NULL;
    }
    return f;
}

/* The data section of a .npy coming from a stream: `bytes` as the header says, at most
 * max_stream_bytes, and nothing after them. */
static int read_stream_data(FILE *f, const char *name, coopreduce_dtype dtype, uint64_t count,
                            int file_little_endian, uint64_t max_stream_bytes, cr_npy_array *out,
                            char *err, size_t errlen)
{
    size_t elem = cr_dtype_size(dtype);
    uint64_t bytes = count * elem; /* the caller checked the product */
    if (bytes > max_stream_bytes) {
        char want[40], limit[40];
        describe_bytes(bytes, want, sizeof want);
        describe_bytes(max_stream_bytes, limit, sizeof limit);
        cr_npy_set_err(err, errlen,
                       "%s: the .npy header declares %s of data, more than the %s limit "
                       "for a stream",
                       name, want, limit);
        return -2;
    }
    void *data = NULL;
    size_t got = 0;
    if (read_growing(f, name, bytes, &data, &got, err, errlen) != 0) return -1;
    if (got < bytes) {
        cr_npy_set_err(err, errlen,
                       "%s is truncated: the shape needs %llu data bytes but the stream "
                       "ended after %zu",
                       name, (unsigned long long)bytes, got);
        free(data);
        return -1;
    }
    if (fgetc(f) != EOF) {
        cr_npy_set_err(err, errlen, "%s has extra data after the %llu bytes the shape needs", name,
                       (unsigned long long)bytes);
        free(data);
        return -1;
    }
    if (file_little_endian != cr_npy_host_is_little_endian()) cr_npy_byteswap(data, count, elem);
    out->data = data;
    out->dtype = dtype;
    out->n = count;
    return 0;
}

int cr_npy_read_stream(FILE *f, const char *name, uint64_t max_stream_bytes, cr_npy_array *out,
                       char *err, size_t errlen)
{
    if (err != NULL && errlen > 0) err[0] = '\0';
    if (out == NULL || f == NULL || name == NULL) {
        cr_npy_set_err(err, errlen, "cr_npy_read_stream: NULL argument");
        return -1;
    }
    reset_array(out);
    const char *path = name;
    int rc = -1;
    char *header = NULL;

    unsigned char prefix[NPY_MAGIC_LEN + 2];
    size_t got = read_fully(f, prefix, sizeof prefix);
    if (got < sizeof prefix) {
        if (ferror(f))
            cr_npy_set_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
        else if (got < NPY_MAGIC_LEN && memcmp(prefix, NPY_MAGIC, got) != 0)
            cr_npy_set_err(err, errlen, "%s is not a .npy file (bad magic string)", path);
        else
            cr_npy_set_err(err, errlen, "%s is truncated: the file ends inside the .npy preamble",
                           path);
        goto done;
    }
    if (memcmp(prefix, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
        cr_npy_set_err(err, errlen, "%s is not a .npy file (bad magic string)", path);
        goto done;
    }
    int major = prefix[6], minor = prefix[7];
    if (major < 1 || major > 3 || minor != 0) {
        cr_npy_set_err(err, errlen,
                       "%s: unsupported .npy format version %d.%d (supported: 1.0, 2.0, 3.0)", path,
                       major, minor);
        goto done;
    }
    size_t len_bytes = major == 1 ? 2 : 4;
    unsigned char len_field[4];
    if (read_fully(f, len_field, len_bytes) < len_bytes) {
        cr_npy_set_err(err, errlen, "%s is truncated: the file ends inside the .npy preamble",
                       path);
        goto done;
    }
    uint32_t header_len = (uint32_t)len_field[0] | (uint32_t)len_field[1] << 8;
    if (len_bytes == 4) header_len |= (uint32_t)len_field[2] << 16 | (uint32_t)len_field[3] << 24;
    if (header_len > NPY_MAX_HEADER_BYTES) {
        cr_npy_set_err(err, errlen,
                       "%s: .npy header length %u is implausibly large (corrupt file?)", path,
                       (unsigned)header_len);
        goto done;
    }
    header = malloc((size_t)header_len + 1);
    if (header == NULL) {
        cr_npy_set_err(err, errlen, "%s: out of memory reading the header", path);
        goto done;
    }
    got = read_fully(f, header, header_len);
    if (got < header_len) {
        if (ferror(f))
            cr_npy_set_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
        else
            cr_npy_set_err(err, errlen,
                           "%s is truncated: the header says %u bytes, the file has %zu", path,
                           (unsigned)header_len, got);
        goto done;
    }
    header[header_len] = '\0';

    npy_header h;
    char why[160];
    int prc = cr_npy_parse_header(header, header_len, &h, why, sizeof why);
    if (prc == -2) {
        cr_npy_set_err(err, errlen, "%s: shape overflows: %s", path, why);
        goto done;
    }
    if (prc != 0) {
        cr_npy_set_err(err, errlen, "%s: malformed .npy header: %s", path, why);
        goto done;
    }

    coopreduce_dtype dtype;
    int file_le;
    if (!h.descr_is_string) {
        cr_npy_set_err(err, errlen,
                       "unsupported dtype (structured) in %s (supported: " SUPPORTED_DTYPES ")",
                       path);
        goto done;
    }
    int drc = cr_npy_dtype_from_descr(h.descr, &dtype, &file_le);
    if (drc == -2) {
        cr_npy_set_err(err, errlen,
                       "unsupported dtype '%s' in %s: big-endian %s is not supported, only "
                       "little-endian '<%s' (numpy: a.astype('<%s'))",
                       h.descr, path, cr_npy_dtype_label(dtype), h.descr + 1, h.descr + 1);
        goto done;
    }
    if (drc != 0) {
        cr_npy_set_err(err, errlen,
                       "unsupported dtype '%s' in %s (supported: " SUPPORTED_DTYPES ")", h.descr,
                       path);
        goto done;
    }

    uint64_t count = 1;
    int has_zero_dim = 0;
    for (int d = 0; d < h.ndim; d++)
        if (h.shape[d] == 0) has_zero_dim = 1;
    if (has_zero_dim) {
        count = 0; /* an empty array, whatever the other dimensions are */
    } else {
        for (int d = 0; d < h.ndim; d++) {
            if (count > UINT64_MAX / h.shape[d]) {
                cr_npy_set_err(err, errlen, "%s: shape overflows: the element count exceeds 2^64",
                               path);
                goto done;
            }
            count *= h.shape[d];
        }
    }
    if (count > UINT64_MAX / cr_dtype_size(dtype)) {
        cr_npy_set_err(err, errlen, "%s: shape overflows: the data size exceeds 2^64 bytes", path);
        goto done;
    }

    long long left = bytes_left_in_file(f);
    int drc2 = left >= 0 ? read_data(f, path, dtype, count, file_le, left, out, err, errlen)
                         : read_stream_data(f, path, dtype, count, file_le, max_stream_bytes, out,
                                            err, errlen);
    if (drc2 != 0) {
        rc = drc2;
        goto done;
    }
    out->ndim = h.ndim;
    memcpy(out->shape, h.shape, sizeof(uint64_t) * (size_t)h.ndim);
    out->fortran_order = h.fortran_order;
    rc = 0;

done:
    free(header);
    if (rc != 0) reset_array(out);
    return rc;
}

int cr_npy_read(const char *path, cr_npy_array *out, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0) err[0] = '\0';
    if (out == NULL || path == NULL) {
        cr_npy_set_err(err, errlen, "cr_npy_read: NULL argument");
        return -1;
    }
    reset_array(out);
    FILE *f = open_for_reading(path, err, errlen);
    if (f == NULL) return -1;
    int rc = cr_npy_read_stream(f, path, CR_DEFAULT_MAX_STREAM_BYTES, out, err, errlen);
    fclose(f); /* read-only: nothing to lose if it fails */
    return rc;
}

int cr_raw_read_stream(FILE *f, const char *name, coopreduce_dtype dtype, uint64_t max_stream_bytes,
                       cr_npy_array *out, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0) err[0] = '\0';
    if (out == NULL || f == NULL || name == NULL) {
        cr_npy_set_err(err, errlen, "cr_raw_read_stream: NULL argument");
        return -1;
    }
    reset_array(out);
    const char *path = name;
    size_t elem = cr_dtype_size(dtype);
    if (elem == 0) {
        cr_npy_set_err(err, errlen, "%s: unsupported dtype %d for a raw file", path, (int)dtype);
        return -1;
    }
    int rc = -1;
    long long size = bytes_left_in_file(f);
    if (size >= 0) {
        if ((unsigned long long)size % elem != 0) {
            cr_npy_set_err(err, errlen,
                           "%s: size %lld bytes is not a multiple of the %zu-byte %s element size",
                           path, size, elem, cr_npy_dtype_label(dtype));
            return -1;
        }
        rc = read_data(f, path, dtype, (uint64_t)size / elem, 1, size, out, err, errlen);
    } else {
        void *data = NULL;
        size_t bytes = 0;
        if (read_growing(f, path, max_stream_bytes, &data, &bytes, err, errlen) != 0) return -1;
        if (bytes == max_stream_bytes && fgetc(f) != EOF) {
            char limit[40];
            describe_bytes(max_stream_bytes, limit, sizeof limit);
            cr_npy_set_err(err, errlen, "%s: more than %s of data, the limit for a stream", path,
                           limit);
            free(data);
            return -2;
        }
        if (bytes % elem != 0) {
            cr_npy_set_err(err, errlen,
                           "%s: size %zu bytes is not a multiple of the %zu-byte %s element size",
                           path, bytes, elem, cr_npy_dtype_label(dtype));
            free(data);
            return -1;
        }
        if (!cr_npy_host_is_little_endian()) cr_npy_byteswap(data, bytes / elem, elem);
        out->data = data;
        out->dtype = dtype;
        out->n = bytes / elem;
        rc = 0;
    }
    if (rc == 0) {
        out->ndim = 1;
        out->shape[0] = out->n;
    } else {
        reset_array(out);
    }
    return rc;
}

int cr_raw_read(const char *path, coopreduce_dtype dtype, cr_npy_array *out, char *err,
                size_t errlen)
{
    if (err != NULL && errlen > 0) err[0] = '\0';
    if (out == NULL || path == NULL) {
        cr_npy_set_err(err, errlen, "cr_raw_read: NULL argument");
        return -1;
    }
    reset_array(out);
    if (cr_dtype_size(dtype) == 0) {
        cr_npy_set_err(err, errlen, "%s: unsupported dtype %d for a raw file", path, (int)dtype);
        return -1;
    }
    FILE *f = open_for_reading(path, err, errlen);
    if (f == NULL) return -1;
    int rc = cr_raw_read_stream(f, path, dtype, CR_DEFAULT_MAX_STREAM_BYTES, out, err, errlen);
    fclose(f);
    return rc;
}
