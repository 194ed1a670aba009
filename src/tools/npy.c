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
#include "outfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGNMENT 64
/* No legitimate header is anywhere near this; the limit keeps a corrupt length field from
 * making us allocate gigabytes for it. */
#define NPY_MAX_HEADER_BYTES (1u << 20)
#define IO_BLOCK_BYTES ((size_t)64 << 20)
#define NPY_MAX_DIMS ((int)(sizeof(((cr_npy_array *)0)->shape) / sizeof(uint64_t)))

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    /* The contract is one line: a path or a header excerpt must not break it. */
    for (char *c = err; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
}

static size_t elem_size(coopreduce_dtype dtype)
{
    return cr_dtype_size(dtype);
}

static const char *dtype_label(coopreduce_dtype dtype)
{
    const cr_dtype_info *d = cr_dtype(dtype);
    return d != NULL ? d->name : "unknown";
}

/* What the reader accepts, for the "unsupported dtype" messages. */
#define SUPPORTED_DTYPES                                                                          \
    "float16 '<f2', float32 '<f4', float64 '<f8', int32 '<i4', int64 '<i8', uint32 '<u4', "      \
    "uint64 '<u8'; float32 and float64 also big-endian"

static int host_is_little_endian(void)
{
    const uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    return first == 1;
}

static void byteswap_elements(void *data, uint64_t n, size_t elem)
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
    if (bytes < NPY_ALIGNMENT)
        bytes = NPY_ALIGNMENT;
    if (posix_memalign(&p, NPY_ALIGNMENT, bytes) != 0)
        return NULL;
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
        if (got < want)
            break;
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
    if (a == NULL)
        return;
    free(a->data);
    a->data = NULL;
}

/* ---------------------------------------------------------------- header dict parser */

typedef struct {
    const char *s;
    size_t len;
    size_t pos;
} cursor;

static void skip_space(cursor *c)
{
    while (c->pos < c->len) {
        char ch = c->s[c->pos];
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
            c->pos++;
        else
            break;
    }
}

static int accept_char(cursor *c, char ch)
{
    skip_space(c);
    if (c->pos < c->len && c->s[c->pos] == ch) {
        c->pos++;
        return 1;
    }
    return 0;
}

static int peek_char(cursor *c)
{
    skip_space(c);
    return c->pos < c->len ? (unsigned char)c->s[c->pos] : -1;
}

/* A Python string literal in single or double quotes, no escapes (none occur in valid headers
 * for the types we read). Copies at most outlen-1 bytes. */
static int parse_string(cursor *c, char *out, size_t outlen)
{
    skip_space(c);
    if (c->pos >= c->len)
        return -1;
    char quote = c->s[c->pos];
    if (quote != '\'' && quote != '"')
        return -1;
    size_t start = ++c->pos;
    while (c->pos < c->len && c->s[c->pos] != quote) {
        if (c->s[c->pos] == '\\' || c->s[c->pos] == '\n')
            return -1;
        c->pos++;
    }
    if (c->pos >= c->len)
        return -1;
    size_t n = c->pos - start;
    c->pos++; /* closing quote */
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, c->s + start, n);
    out[n] = '\0';
    return 0;
}

static int parse_word(cursor *c, const char *word)
{
    skip_space(c);
    size_t n = strlen(word);
    if (c->len - c->pos < n || memcmp(c->s + c->pos, word, n) != 0)
        return -1;
    char after = c->pos + n < c->len ? c->s[c->pos + n] : '\0';
    if ((after >= 'a' && after <= 'z') || (after >= 'A' && after <= 'Z') ||
        (after >= '0' && after <= '9') || after == '_')
        return -1;
    c->pos += n;
    return 0;
}

/* Returns 0, -1 on a syntax error, -2 on a dimension that does not fit in 64 bits. */
static int parse_dim(cursor *c, uint64_t *value)
{
    skip_space(c);
    if (c->pos >= c->len || c->s[c->pos] < '0' || c->s[c->pos] > '9')
        return -1;
    uint64_t v = 0;
    int overflow = 0;
    while (c->pos < c->len && c->s[c->pos] >= '0' && c->s[c->pos] <= '9') {
        unsigned digit = (unsigned)(c->s[c->pos] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            overflow = 1;
        else
            v = v * 10 + digit;
        c->pos++;
    }
    /* Python 2 wrote longs as 123L. */
    if (c->pos < c->len && (c->s[c->pos] == 'L' || c->s[c->pos] == 'l'))
        c->pos++;
    if (overflow)
        return -2;
    *value = v;
    return 0;
}

typedef struct {
    int have_descr, have_fortran, have_shape;
    char descr[64];
    int descr_is_string;
    int fortran_order;
    int ndim;
    uint64_t shape[NPY_MAX_DIMS];
} npy_header;

/* Skips a value we cannot use (a structured dtype's list of fields), so that the error names
 * the dtype problem rather than a syntax problem. Balanced brackets and quoted strings only. */
static int skip_value(cursor *c)
{
    int depth = 0;
    skip_space(c);
    while (c->pos < c->len) {
        char ch = c->s[c->pos];
        if (ch == '\'' || ch == '"') {
            char tmp[2];
            if (parse_string(c, tmp, sizeof tmp) != 0)
                return -1;
            continue;
        }
        if (ch == '[' || ch == '(' || ch == '{') {
            depth++;
        } else if (ch == ']' || ch == ')' || ch == '}') {
            if (depth == 0)
                return 0; /* the enclosing dict's closing brace */
            depth--;
        } else if (ch == ',' && depth == 0) {
            return 0;
        }
        c->pos++;
    }
    return -1;
}

/* Parses the dict. On failure writes a short reason (without the file name) into why. */
static int parse_header(const char *text, size_t len, npy_header *h, char *why, size_t whylen)
{
    cursor cur = {text, len, 0};
    cursor *c = &cur;
    memset(h, 0, sizeof *h);

    if (!accept_char(c, '{')) {
        snprintf(why, whylen, "header is not a dict");
        return -1;
    }
    while (!accept_char(c, '}')) {
        char key[32];
        if (parse_string(c, key, sizeof key) != 0) {
            snprintf(why, whylen, "expected a quoted key at header offset %zu", c->pos);
            return -1;
        }
        if (!accept_char(c, ':')) {
            snprintf(why, whylen, "expected ':' after key '%s'", key);
            return -1;
        }
        if (strcmp(key, "descr") == 0) {
            if (h->have_descr) {
                snprintf(why, whylen, "duplicate key 'descr'");
                return -1;
            }
            h->have_descr = 1;
            if (peek_char(c) == '\'' || peek_char(c) == '"') {
                if (parse_string(c, h->descr, sizeof h->descr) != 0) {
                    snprintf(why, whylen, "bad 'descr' value");
                    return -1;
                }
                h->descr_is_string = 1;
            } else {
                if (skip_value(c) != 0) {
                    snprintf(why, whylen, "bad 'descr' value");
                    return -1;
                }
                h->descr_is_string = 0;
            }
        } else if (strcmp(key, "fortran_order") == 0) {
            if (h->have_fortran) {
                snprintf(why, whylen, "duplicate key 'fortran_order'");
                return -1;
            }
            h->have_fortran = 1;
            if (parse_word(c, "True") == 0) {
                h->fortran_order = 1;
            } else if (parse_word(c, "False") == 0) {
                h->fortran_order = 0;
            } else {
                snprintf(why, whylen, "'fortran_order' is not True or False");
                return -1;
            }
        } else if (strcmp(key, "shape") == 0) {
            if (h->have_shape) {
                snprintf(why, whylen, "duplicate key 'shape'");
                return -1;
            }
            h->have_shape = 1;
            if (!accept_char(c, '(')) {
                snprintf(why, whylen, "'shape' is not a tuple");
                return -1;
            }
            h->ndim = 0;
            /* (), (n,), (a, b), (a, b,) */
            while (!accept_char(c, ')')) {
                if (h->ndim >= NPY_MAX_DIMS) {
                    snprintf(why, whylen, "'shape' has more than %d dimensions", NPY_MAX_DIMS);
                    return -1;
                }
                int rc = parse_dim(c, &h->shape[h->ndim]);
                if (rc == -2) {
                    snprintf(why, whylen, "shape dimension %d does not fit in 64 bits", h->ndim);
                    return -2;
                }
                if (rc != 0) {
                    snprintf(why, whylen, "'shape' is not a tuple of non-negative integers");
                    return -1;
                }
                h->ndim++;
                if (accept_char(c, ','))
                    continue;
                if (peek_char(c) != ')') {
                    snprintf(why, whylen, "'shape' is not a tuple of non-negative integers");
                    return -1;
                }
            }
        } else {
            snprintf(why, whylen, "unexpected key '%s'", key);
            return -1;
        }
        if (accept_char(c, ','))
            continue;
        if (peek_char(c) != '}') {
            snprintf(why, whylen, "expected ',' or '}' at header offset %zu", c->pos);
            return -1;
        }
    }
    skip_space(c);
    /* Version 1.0 headers may be NUL-padded by some writers; anything else is garbage. */
    while (c->pos < c->len && c->s[c->pos] == '\0')
        c->pos++;
    if (c->pos != c->len) {
        snprintf(why, whylen, "unexpected text after the header dict");
        return -1;
    }
    if (!h->have_descr || !h->have_fortran || !h->have_shape) {
        snprintf(why, whylen, "header lacks key '%s'",
                 !h->have_descr ? "descr" : !h->have_fortran ? "fortran_order" : "shape");
        return -1;
    }
    return 0;
}

/* Maps a descr to a dtype and whether the file's bytes are little-endian. Returns 0, -1 for
 * an unsupported descr, or -2 for a big-endian type other than float32 and float64 ('>i4',
 * '>f2', ...), which is not read (numpy writes '<' on every little-endian machine; such a file
 * is almost always a mistake). '=' (native order) is taken as little-endian: numpy never writes
 * it (it resolves it to '<' or '>'), and every machine that writes .npy files today is
 * little-endian. '|' (no byte order) is numpy's spelling for one-byte types only. */
static int dtype_from_descr(const char *descr, coopreduce_dtype *dtype, int *file_little_endian)
{
    if (strlen(descr) != 3 || (descr[0] != '<' && descr[0] != '=' && descr[0] != '>'))
        return -1;
    if (cr_dtype_from_npy(descr + 1, dtype) != 0)
        return -1;
    *file_little_endian = descr[0] != '>';
    if (descr[0] == '>' && *dtype != COOPREDUCE_FLOAT32 && *dtype != COOPREDUCE_FLOAT64)
        return -2;
    return 0;
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
    size_t elem = elem_size(dtype);
    if (count > (uint64_t)SIZE_MAX / elem) {
        set_err(err, errlen, "%s: %llu elements do not fit in memory addresses", path,
                (unsigned long long)count);
        return -1;
    }
    size_t bytes = (size_t)count * elem;
    /* Check before allocating: a wrong shape must not cost a multi-GB allocation. */
    if ((unsigned long long)file_bytes_left < (unsigned long long)bytes) {
        set_err(err, errlen, "%s is truncated: the shape needs %llu data bytes but the file has %lld",
                path, (unsigned long long)bytes, file_bytes_left);
        return -1;
    }
    if ((unsigned long long)file_bytes_left > (unsigned long long)bytes) {
        set_err(err, errlen, "%s has %llu bytes of extra data after the %llu the shape needs", path,
                (unsigned long long)file_bytes_left - (unsigned long long)bytes,
                (unsigned long long)bytes);
        return -1;
    }
    void *data = alloc_aligned(bytes);
    if (data == NULL) {
        set_err(err, errlen, "%s: cannot allocate %zu bytes for %llu elements", path, bytes,
                (unsigned long long)count);
        return -1;
    }
    size_t got = read_fully(f, data, bytes);
    if (got < bytes) {
        if (ferror(f))
            set_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
        else
            set_err(err, errlen,
                    "%s is truncated: the shape needs %zu data bytes but the file has %zu", path,
                    bytes, got);
        free(data);
        return -1;
    }
    if (fgetc(f) != EOF) {
        set_err(err, errlen, "%s has extra data after the %zu bytes the shape needs", path, bytes);
        free(data);
        return -1;
    }
    if (ferror(f)) {
        set_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
        free(data);
        return -1;
    }
    if (file_little_endian != host_is_little_endian())
        byteswap_elements(data, count, elem);
    out->data = data;
    out->dtype = dtype;
    out->n = count;
    return 0;
}

/* Reads until end of file or `max` bytes into an aligned buffer that grows as the data
 * arrives, so that what a stream claims (a .npy header's shape) reserves nothing. */
static int read_growing(FILE *f, const char *name, uint64_t max, void **data_out,
                        size_t *used_out, char *err, size_t errlen)
{
    const size_t first_step = (size_t)1 << 20;
    size_t cap = max < first_step ? (size_t)max : first_step, used = 0;
    void *data = alloc_aligned(cap);
    if (data == NULL) {
        set_err(err, errlen, "%s: out of memory", name);
        return -1;
    }
    for (;;) {
        size_t got = read_fully(f, (unsigned char *)data + used, cap - used);
        used += got;
        if (used < cap || used == max)
            break;
        uint64_t next = (uint64_t)cap * 2 < max ? (uint64_t)cap * 2 : max;
        void *bigger = next <= SIZE_MAX ? alloc_aligned((size_t)next) : NULL;
        if (bigger == NULL) {
            set_err(err, errlen, "%s: cannot allocate %llu bytes for the data read so far", name,
                    (unsigned long long)next);
            free(data);
            return -1;
        }
        memcpy(bigger, data, used);
        free(data);
        data = bigger;
        cap = (size_t)next;
    }
    if (ferror(f)) {
        set_err(err, errlen, "cannot read %s: %s", name, strerror(errno));
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
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    off_t position = ftello(f);
    return position < 0 ? -1 : (long long)st.st_size - (long long)position;
}

static FILE *open_for_reading(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        set_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "cannot read %s: it is a directory", path);
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
    size_t elem = elem_size(dtype);
    uint64_t bytes = count * elem; /* the caller checked the product */
    if (bytes > max_stream_bytes) {
        char want[40], limit[40];
        describe_bytes(bytes, want, sizeof want);
        describe_bytes(max_stream_bytes, limit, sizeof limit);
        set_err(err, errlen, "%s: the .npy header declares %s of data, more than the %s limit "
                "for a stream", name, want, limit);
        return -2;
    }
    void *data = NULL;
    size_t got = 0;
    if (read_growing(f, name, bytes, &data, &got, err, errlen) != 0)
        return -1;
    if (got < bytes) {
        set_err(err, errlen, "%s is truncated: the shape needs %llu data bytes but the stream "
                "ended after %zu", name, (unsigned long long)bytes, got);
        free(data);
        return -1;
    }
    if (fgetc(f) != EOF) {
        set_err(err, errlen, "%s has extra data after the %llu bytes the shape needs", name,
                (unsigned long long)bytes);
        free(data);
        return -1;
    }
    if (file_little_endian != host_is_little_endian())
        byteswap_elements(data, count, elem);
    out->data = data;
    out->dtype = dtype;
    out->n = count;
    return 0;
}

int cr_npy_read_stream(FILE *f, const char *name, uint64_t max_stream_bytes, cr_npy_array *out,
                       char *err, size_t errlen)
{
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (out == NULL || f == NULL || name == NULL) {
        set_err(err, errlen, "cr_npy_read_stream: NULL argument");
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
            set_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
        else if (got < NPY_MAGIC_LEN && memcmp(prefix, NPY_MAGIC, got) != 0)
            set_err(err, errlen, "%s is not a .npy file (bad magic string)", path);
        else
            set_err(err, errlen, "%s is truncated: the file ends inside the .npy preamble", path);
        goto done;
    }
    if (memcmp(prefix, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
        set_err(err, errlen, "%s is not a .npy file (bad magic string)", path);
        goto done;
    }
    int major = prefix[6], minor = prefix[7];
    if (major < 1 || major > 3 || minor != 0) {
        set_err(err, errlen, "%s: unsupported .npy format version %d.%d (supported: 1.0, 2.0, 3.0)",
                path, major, minor);
        goto done;
    }
    size_t len_bytes = major == 1 ? 2 : 4;
    unsigned char len_field[4];
    if (read_fully(f, len_field, len_bytes) < len_bytes) {
        set_err(err, errlen, "%s is truncated: the file ends inside the .npy preamble", path);
        goto done;
    }
    uint32_t header_len = (uint32_t)len_field[0] | (uint32_t)len_field[1] << 8;
    if (len_bytes == 4)
        header_len |= (uint32_t)len_field[2] << 16 | (uint32_t)len_field[3] << 24;
    if (header_len > NPY_MAX_HEADER_BYTES) {
        set_err(err, errlen, "%s: .npy header length %u is implausibly large (corrupt file?)",
                path, (unsigned)header_len);
        goto done;
    }
    header = malloc((size_t)header_len + 1);
    if (header == NULL) {
        set_err(err, errlen, "%s: out of memory reading the header", path);
        goto done;
    }
    got = read_fully(f, header, header_len);
    if (got < header_len) {
        if (ferror(f))
            set_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
        else
            set_err(err, errlen, "%s is truncated: the header says %u bytes, the file has %zu",
                    path, (unsigned)header_len, got);
        goto done;
    }
    header[header_len] = '\0';

    npy_header h;
    char why[160];
    int prc = parse_header(header, header_len, &h, why, sizeof why);
    if (prc == -2) {
        set_err(err, errlen, "%s: shape overflows: %s", path, why);
        goto done;
    }
    if (prc != 0) {
        set_err(err, errlen, "%s: malformed .npy header: %s", path, why);
        goto done;
    }

    coopreduce_dtype dtype;
    int file_le;
    if (!h.descr_is_string) {
        set_err(err, errlen, "unsupported dtype (structured) in %s (supported: " SUPPORTED_DTYPES
                ")", path);
        goto done;
    }
    int drc = dtype_from_descr(h.descr, &dtype, &file_le);
    if (drc == -2) {
        set_err(err, errlen,
                "unsupported dtype '%s' in %s: big-endian %s is not supported, only "
                "little-endian '<%s' (numpy: a.astype('<%s'))", h.descr, path,
                dtype_label(dtype), h.descr + 1, h.descr + 1);
        goto done;
    }
    if (drc != 0) {
        set_err(err, errlen, "unsupported dtype '%s' in %s (supported: " SUPPORTED_DTYPES ")",
                h.descr, path);
        goto done;
    }

    uint64_t count = 1;
    int has_zero_dim = 0;
    for (int d = 0; d < h.ndim; d++)
        if (h.shape[d] == 0)
            has_zero_dim = 1;
    if (has_zero_dim) {
        count = 0; /* an empty array, whatever the other dimensions are */
    } else {
        for (int d = 0; d < h.ndim; d++) {
            if (count > UINT64_MAX / h.shape[d]) {
                set_err(err, errlen, "%s: shape overflows: the element count exceeds 2^64", path);
                goto done;
            }
            count *= h.shape[d];
        }
    }
    if (count > UINT64_MAX / elem_size(dtype)) {
        set_err(err, errlen, "%s: shape overflows: the data size exceeds 2^64 bytes", path);
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
    if (rc != 0)
        reset_array(out);
    return rc;
}

int cr_npy_read(const char *path, cr_npy_array *out, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (out == NULL || path == NULL) {
        set_err(err, errlen, "cr_npy_read: NULL argument");
        return -1;
    }
    reset_array(out);
    FILE *f = open_for_reading(path, err, errlen);
    if (f == NULL)
        return -1;
    int rc = cr_npy_read_stream(f, path, CR_DEFAULT_MAX_STREAM_BYTES, out, err, errlen);
    fclose(f); /* read-only: nothing to lose if it fails */
    return rc;
}

int cr_raw_read_stream(FILE *f, const char *name, coopreduce_dtype dtype,
                       uint64_t max_stream_bytes, cr_npy_array *out, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (out == NULL || f == NULL || name == NULL) {
        set_err(err, errlen, "cr_raw_read_stream: NULL argument");
        return -1;
    }
    reset_array(out);
    const char *path = name;
    size_t elem = elem_size(dtype);
    if (elem == 0) {
        set_err(err, errlen, "%s: unsupported dtype %d for a raw file", path, (int)dtype);
        return -1;
    }
    int rc = -1;
    long long size = bytes_left_in_file(f);
    if (size >= 0) {
        if ((unsigned long long)size % elem != 0) {
            set_err(err, errlen,
                    "%s: size %lld bytes is not a multiple of the %zu-byte %s element size", path,
                    size, elem, dtype_label(dtype));
            return -1;
        }
        rc = read_data(f, path, dtype, (uint64_t)size / elem, 1, size, out, err, errlen);
    } else {
        void *data = NULL;
        size_t bytes = 0;
        if (read_growing(f, path, max_stream_bytes, &data, &bytes, err, errlen) != 0)
            return -1;
        if (bytes == max_stream_bytes && fgetc(f) != EOF) {
            char limit[40];
            describe_bytes(max_stream_bytes, limit, sizeof limit);
            set_err(err, errlen, "%s: more than %s of data, the limit for a stream", path, limit);
            free(data);
            return -2;
        }
        if (bytes % elem != 0) {
            set_err(err, errlen,
                    "%s: size %zu bytes is not a multiple of the %zu-byte %s element size", path,
                    bytes, elem, dtype_label(dtype));
            free(data);
            return -1;
        }
        if (!host_is_little_endian())
            byteswap_elements(data, bytes / elem, elem);
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
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (out == NULL || path == NULL) {
        set_err(err, errlen, "cr_raw_read: NULL argument");
        return -1;
    }
    reset_array(out);
    if (elem_size(dtype) == 0) {
        set_err(err, errlen, "%s: unsupported dtype %d for a raw file", path, (int)dtype);
        return -1;
    }
    FILE *f = open_for_reading(path, err, errlen);
    if (f == NULL)
        return -1;
    int rc = cr_raw_read_stream(f, path, dtype, CR_DEFAULT_MAX_STREAM_BYTES, out, err, errlen);
    fclose(f);
    return rc;
}

/* ---------------------------------------------------------------- writing */

static int write_all(FILE *f, const void *src, size_t bytes)
{
    const unsigned char *p = src;
    while (bytes > 0) {
        size_t chunk = bytes < IO_BLOCK_BYTES ? bytes : IO_BLOCK_BYTES;
        if (fwrite(p, 1, chunk, f) != chunk)
            return -1;
        p += chunk;
        bytes -= chunk;
    }
    return 0;
}

/* Writes little-endian elements from host-order data; on a big-endian host each block is
 * swapped in a bounce buffer, since the caller's data is const. */
static int write_elements_le(FILE *f, const void *data, uint64_t n, size_t elem)
{
    if (host_is_little_endian())
        return write_all(f, data, (size_t)n * elem);
    enum { BOUNCE_ELEMS = 1 << 16 };
    unsigned char bounce[BOUNCE_ELEMS * 8];
    const unsigned char *p = data;
    while (n > 0) {
        size_t k = n < BOUNCE_ELEMS ? (size_t)n : BOUNCE_ELEMS;
        memcpy(bounce, p, k * elem);
        byteswap_elements(bounce, k, elem);
        if (write_all(f, bounce, k * elem) != 0)
            return -1;
        p += k * elem;
        n -= k;
    }
    return 0;
}

/* Checks the arguments of a writer; the .npy code in *code when npy is set. */
static int check_write(const char *name, const void *data, uint64_t n, coopreduce_dtype dtype,
                       int npy, const char **code, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    size_t elem = elem_size(dtype);
    if (name == NULL || (data == NULL && n > 0)) {
        set_err(err, errlen, "writing an array: NULL argument");
        return -1;
    }
    if (elem == 0) {
        set_err(err, errlen, "%s: unsupported dtype %d", name, (int)dtype);
        return -1;
    }
    if (npy && (*code = cr_dtype(dtype)->npy) == NULL) {
        set_err(err, errlen, "%s: NumPy has no %s type, so a .npy file cannot hold it (write a "
                "raw file instead)", name, dtype_label(dtype));
        return -1;
    }
    if (n > (uint64_t)SIZE_MAX / elem) {
        set_err(err, errlen, "%s: %llu elements are too many", name, (unsigned long long)n);
        return -1;
    }
    return 0;
}

int cr_npy_write_stream(FILE *f, const char *name, const void *data, uint64_t n,
                        coopreduce_dtype dtype, char *err, size_t errlen)
{
    const char *code = NULL;
    if (check_write(name, data, n, dtype, 1, &code, err, errlen) != 0)
        return -1;
    /* Version 1.0: magic, 1, 0, uint16 header length, header. The header is padded with spaces
     * and ends with '\n' so that the data starts at a multiple of 64 bytes, which lets readers
     * map the file and use the data in place with aligned vector loads. */
    char dict[128];
    int dict_len = snprintf(dict, sizeof dict,
                            "{'descr': '<%s', 'fortran_order': False, 'shape': (%llu,), }",
                            code, (unsigned long long)n);
    size_t preamble = NPY_MAGIC_LEN + 2 + 2;
    size_t unpadded = preamble + (size_t)dict_len + 1; /* + '\n' */
    size_t total = (unpadded + NPY_ALIGNMENT - 1) / NPY_ALIGNMENT * NPY_ALIGNMENT;
    size_t header_len = total - preamble;
    unsigned char head[256];
    memcpy(head, NPY_MAGIC, NPY_MAGIC_LEN);
    head[6] = 1;
    head[7] = 0;
    head[8] = (unsigned char)(header_len & 0xff);
    head[9] = (unsigned char)(header_len >> 8);
    memcpy(head + preamble, dict, (size_t)dict_len);
    memset(head + preamble + dict_len, ' ', total - preamble - (size_t)dict_len - 1);
    head[total - 1] = '\n';
    if (write_all(f, head, total) != 0 ||
        write_elements_le(f, data, n, elem_size(dtype)) != 0) {
        set_err(err, errlen, "cannot write %s: %s", name, strerror(errno));
        return -1;
    }
    return 0;
}

int cr_raw_write_stream(FILE *f, const char *name, const void *data, uint64_t n,
                        coopreduce_dtype dtype, char *err, size_t errlen)
{
    if (check_write(name, data, n, dtype, 0, NULL, err, errlen) != 0)
        return -1;
    if (write_elements_le(f, data, n, elem_size(dtype)) != 0) {
        set_err(err, errlen, "cannot write %s: %s", name, strerror(errno));
        return -1;
    }
    return 0;
}

int cr_npy_write(const char *path, const void *data, uint64_t n, coopreduce_dtype dtype,
                 char *err, size_t errlen)
{
    const char *code = NULL;
    if (check_write(path, data, n, dtype, 1, &code, err, errlen) != 0)
        return -1;
    cr_outfile out;
    if (cr_outfile_open(&out, path, 1, err, errlen) != 0)
        return -1;
    if (cr_npy_write_stream(out.f, path, data, n, dtype, err, errlen) != 0) {
        cr_outfile_abort(&out);
        return -1;
    }
    return cr_outfile_commit(&out, path, err, errlen);
}
