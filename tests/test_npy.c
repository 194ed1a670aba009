/* test_npy.c — the .npy / raw reader and writer (src/tools/npy.c).
 *
 * Usage: test_npy SCRATCH_DIR. Every input file is written here byte by byte, so the test
 * needs no NumPy and pins the exact format details: header versions 1.0, 2.0 and 3.0, byte
 * orders, Fortran order, shapes (), (0,) and 2-D, int32 ('<i4' only), float16, int64, uint32 and
 * uint64 (little-endian only), bfloat16 (raw only), and each way a file can be wrong; streams
 * (pipes) read as the data arrives, with a limit; writers that never remove what they did not
 * create. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "npy.h"

static int passed, failed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static const char *scratch;

/* ---------------------------------------------------------------- file building */

static char *path_of(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", scratch, name);
    return buf;
}

static int mkdir_p(const char *dir)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
    return 0;
}

static void write_bytes(const char *name, const void *bytes, size_t len)
{
    FILE *f = fopen(path_of(name), "wb");
    if (f == NULL || fwrite(bytes, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "test_npy: cannot write %s: %s\n", path_of(name), strerror(errno));
        exit(2);
    }
}

/* A .npy image: magic, version, header length (2 or 4 bytes), the dict padded with spaces and a
 * newline to a multiple of 64 bytes, then `data`. Returns the total length in buf. */
static size_t build_npy(unsigned char *buf, size_t cap, int major, const char *dict,
                        const void *data, size_t data_len)
{
    size_t len_bytes = major == 1 ? 2 : 4;
    size_t preamble = 8 + len_bytes;
    size_t unpadded = preamble + strlen(dict) + 1;
    size_t total_header = (unpadded + 63) / 64 * 64;
    size_t header_len = total_header - preamble;
    if (total_header + data_len > cap) {
        fprintf(stderr, "test_npy: build_npy buffer too small\n");
        exit(2);
    }
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t k = 0; k < len_bytes; k++) buf[8 + k] = (unsigned char)(header_len >> (8 * k));
    memcpy(buf + preamble, dict, strlen(dict));
    memset(buf + preamble + strlen(dict), ' ', header_len - strlen(dict) - 1);
    buf[total_header - 1] = '\n';
    if (data_len > 0) memcpy(buf + total_header, data, data_len);
    return total_header + data_len;
}

static void write_npy(const char *name, int major, const char *dict, const void *data,
                      size_t data_len)
{
    static unsigned char buf[1 << 16];
    size_t len = build_npy(buf, sizeof buf, major, dict, data, data_len);
    write_bytes(name, buf, len);
}

static void to_big_endian(unsigned char *dst, const void *src, size_t elem, size_t n)
{
    const unsigned char *s = src;
    for (size_t k = 0; k < n; k++)
        for (size_t b = 0; b < elem; b++) dst[k * elem + b] = s[k * elem + elem - 1 - b];
}

/* ---------------------------------------------------------------- reading good files */

static void test_v1_f32(void)
{
    const float values[3] = {1.5f, -2.25f, 3.0f};
    write_npy("v1_f32.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", values,
              sizeof values);
    cr_npy_array a;
    char err[512];
    int rc = cr_npy_read(path_of("v1_f32.npy"), &a, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc != 0) return;
    CHECK(a.dtype == COOPREDUCE_FLOAT32 && a.n == 3 && a.ndim == 1 && a.shape[0] == 3,
          "dtype %d n %llu ndim %d", (int)a.dtype, (unsigned long long)a.n, a.ndim);
    CHECK(memcmp(a.data, values, sizeof values) == 0, "values differ");
    CHECK(((uintptr_t)a.data % 64) == 0, "data at %p not 64-byte aligned", a.data);
    CHECK(a.fortran_order == 0, "fortran_order %d", a.fortran_order);
    cr_npy_free(&a);
    CHECK(a.data == NULL, "cr_npy_free left data set");
}

static void test_v2_f64_any_key_order(void)
{
    const double values[2] = {0.1, -1e300};
    /* Keys reordered, double quotes, extra spaces, no trailing comma. */
    write_npy("v2_f64.npy", 2,
              "{ \"shape\" : ( 2 , ) ,\"fortran_order\":False , \"descr\":\"<f8\"}", values,
              sizeof values);
    cr_npy_array a;
    char err[512];
    int rc = cr_npy_read(path_of("v2_f64.npy"), &a, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc != 0) return;
    CHECK(a.dtype == COOPREDUCE_FLOAT64 && a.n == 2, "dtype %d n %llu", (int)a.dtype,
          (unsigned long long)a.n);
    CHECK(memcmp(a.data, values, sizeof values) == 0, "values differ");
    cr_npy_free(&a);
}

static void test_v3_f32(void)
{
    const float values[4] = {1, 2, 3, 4};
    write_npy("v3_f32.npy", 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", values,
              sizeof values);
    cr_npy_array a;
    char err[512];
    int rc = cr_npy_read(path_of("v3_f32.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 4 && memcmp(a.data, values, sizeof values) == 0, "%s", err);
    cr_npy_free(&a);
}

static void test_big_endian(void)
{
    const float f[3] = {1.0f, -0.5f, 3.4028234663852886e38f};
    const double d[2] = {3.141592653589793, -2.5e-310}; /* a subnormal too */
    unsigned char be[64];
    cr_npy_array a;
    char err[512];

    to_big_endian(be, f, 4, 3);
    write_npy("be_f4.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", be, 12);
    int rc = cr_npy_read(path_of("be_f4.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_FLOAT32 && a.n == 3 && memcmp(a.data, f, 12) == 0,
          "'>f4': %s", err);
    cr_npy_free(&a);

    to_big_endian(be, d, 8, 2);
    write_npy("be_f8.npy", 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", be, 16);
    rc = cr_npy_read(path_of("be_f8.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_FLOAT64 && a.n == 2 && memcmp(a.data, d, 16) == 0,
          "'>f8': %s", err);
    cr_npy_free(&a);

    write_npy("native_f4.npy", 1, "{'descr': '=f4', 'fortran_order': False, 'shape': (3,), }", f,
              12);
    rc = cr_npy_read(path_of("native_f4.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 3 && memcmp(a.data, f, 12) == 0, "'=f4': %s", err);
    cr_npy_free(&a);
}

static void test_shapes(void)
{
    const float six[6] = {1, 2, 3, 4, 5, 6};
    cr_npy_array a;
    char err[512];

    write_npy("fortran.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", six,
              sizeof six);
    int rc = cr_npy_read(path_of("fortran.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 6 && a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3 &&
              a.fortran_order == 1 && memcmp(a.data, six, sizeof six) == 0,
          "Fortran (2, 3): %s", err);
    cr_npy_free(&a);

    write_npy("c2d.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2,), }", six,
              sizeof six);
    rc = cr_npy_read(path_of("c2d.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 6 && a.ndim == 2 && a.shape[0] == 3 && a.shape[1] == 2 &&
              a.fortran_order == 0,
          "C (3, 2,): %s", err);
    cr_npy_free(&a);

    const double scalar = 42.0;
    write_npy("scalar.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &scalar,
              sizeof scalar);
    rc = cr_npy_read(path_of("scalar.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 1 && a.ndim == 0 && ((double *)a.data)[0] == 42.0, "shape (): %s", err);
    cr_npy_free(&a);

    write_npy("empty.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", NULL, 0);
    rc = cr_npy_read(path_of("empty.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 0 && a.ndim == 1 && a.data != NULL, "shape (0,): %s", err);
    cr_npy_free(&a);

    write_npy("empty2d.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (5, 0), }", NULL,
              0);
    rc = cr_npy_read(path_of("empty2d.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 0 && a.ndim == 2, "shape (5, 0): %s", err);
    cr_npy_free(&a);

    /* Python 2 wrote long integers with an L suffix. */
    write_npy("py2.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6L,), }", six,
              sizeof six);
    rc = cr_npy_read(path_of("py2.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 6, "shape (6L,): %s", err);
    cr_npy_free(&a);
}

/* ---------------------------------------------------------------- int32 */

static void expect_npy_error(const char *name, const char *must_contain, const char *what);

static void test_int32(void)
{
    const int32_t values[6] = {1, -2, INT32_MAX, INT32_MIN, 0, 123456789};
    cr_npy_array a;
    char err[512];
    unsigned char buf[4096];
    size_t len;

    write_npy("i4.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }", values,
              sizeof values);
    int rc = cr_npy_read(path_of("i4.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_INT32 && a.n == 6 && a.ndim == 1 && a.shape[0] == 6 &&
              memcmp(a.data, values, sizeof values) == 0 && (uintptr_t)a.data % 64 == 0,
          "'<i4' (6,): %s", err);
    cr_npy_free(&a);

    /* Shapes: 2-D in C and Fortran order, (), (0,), (4, 0), a version 2.0 header with the keys
     * in another order. */
    write_npy("i4_c2d.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2,), }",
              values, sizeof values);
    rc = cr_npy_read(path_of("i4_c2d.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_INT32 && a.n == 6 && a.ndim == 2 && a.shape[0] == 3 &&
              a.shape[1] == 2 && a.fortran_order == 0 && memcmp(a.data, values, sizeof values) == 0,
          "'<i4' (3, 2,): %s", err);
    cr_npy_free(&a);

    write_npy("i4_f2d.npy", 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", values,
              sizeof values);
    rc = cr_npy_read(path_of("i4_f2d.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_INT32 && a.n == 6 && a.ndim == 2 &&
              a.fortran_order == 1 && memcmp(a.data, values, sizeof values) == 0,
          "'<i4' Fortran (2, 3): %s", err);
    cr_npy_free(&a);

    write_npy("i4_scalar.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }",
              &values[3], 4);
    rc = cr_npy_read(path_of("i4_scalar.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_INT32 && a.n == 1 && a.ndim == 0 &&
              ((int32_t *)a.data)[0] == INT32_MIN,
          "'<i4' shape (): %s", err);
    cr_npy_free(&a);

    write_npy("i4_empty.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (0,), }", NULL,
              0);
    rc = cr_npy_read(path_of("i4_empty.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_INT32 && a.n == 0 && a.data != NULL,
          "'<i4' shape (0,): %s", err);
    cr_npy_free(&a);

    write_npy("i4_empty2d.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4, 0), }",
              NULL, 0);
    rc = cr_npy_read(path_of("i4_empty2d.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_INT32 && a.n == 0 && a.ndim == 2,
          "'<i4' shape (4, 0): %s", err);
    cr_npy_free(&a);

    write_npy("i4_v2.npy", 2, "{\"shape\": (6,), \"descr\": \"<i4\", \"fortran_order\": False}",
              values, sizeof values);
    rc = cr_npy_read(path_of("i4_v2.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_INT32 && a.n == 6 &&
              memcmp(a.data, values, sizeof values) == 0,
          "'<i4' version 2.0: %s", err);
    cr_npy_free(&a);

    /* Big-endian int32 is refused, by name; so are the other integer spellings. */
    unsigned char be[sizeof values];
    to_big_endian(be, values, 4, 6);
    write_npy("i4_be.npy", 1, "{'descr': '>i4', 'fortran_order': False, 'shape': (6,), }", be,
              sizeof be);
    expect_npy_error("i4_be.npy", "'>i4'", "big-endian int32");
    write_npy("i4_pipe.npy", 1, "{'descr': '|i4', 'fortran_order': False, 'shape': (6,), }", values,
              sizeof values);
    expect_npy_error("i4_pipe.npy", "'|i4'", "'|i4' descr");
    write_npy("u2.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (12,), }", values,
              sizeof values);
    expect_npy_error("u2.npy", "'<u2'", "uint16 dtype");

    /* Truncated and over-long data sections. */
    len = build_npy(buf, sizeof buf, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }",
                    values, sizeof values);
    write_bytes("i4_trunc.npy", buf, len - 1);
    expect_npy_error("i4_trunc.npy", "truncated", "truncated int32 data");
    write_bytes("i4_trunc_elem.npy", buf, len - 4);
    expect_npy_error("i4_trunc_elem.npy", "truncated", "int32 data one element short");
    len = build_npy(buf, sizeof buf, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }",
                    values, sizeof values);
    write_bytes("i4_extra.npy", buf, len);
    expect_npy_error("i4_extra.npy", "extra", "int32 data one element long");

    /* Writing '<i4' and reading it back. */
    enum { N = 1001 };
    int32_t w[N];
    for (int k = 0; k < N; k++) w[k] = (int32_t)((uint32_t)k * 2654435761u);
    rc = cr_npy_write(path_of("written_i4.npy"), w, N, COOPREDUCE_INT32, err, sizeof err);
    CHECK(rc == 0, "write int32: %s", err);
    rc = cr_npy_read(path_of("written_i4.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_INT32 && a.n == N && memcmp(a.data, w, sizeof w) == 0,
          "read back int32: %s", err);
    cr_npy_free(&a);
    FILE *fp = fopen(path_of("written_i4.npy"), "rb");
    char head[128] = {0};
    size_t got = fp ? fread(head, 1, sizeof head - 1, fp) : 0;
    if (fp != NULL) fclose(fp);
    CHECK(got > 20 && strstr(head + 10, "'descr': '<i4'") != NULL, "written header lacks '<i4'");

    /* Raw int32: the size must be a multiple of 4. */
    write_bytes("six.i32", values, sizeof values);
    rc = cr_raw_read(path_of("six.i32"), COOPREDUCE_INT32, &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_INT32 && a.n == 6 && a.ndim == 1 &&
              memcmp(a.data, values, sizeof values) == 0,
          "raw int32: %s", err);
    cr_npy_free(&a);
    write_bytes("seven.i32", values, 7);
    rc = cr_raw_read(path_of("seven.i32"), COOPREDUCE_INT32, &a, err, sizeof err);
    CHECK(rc == -1 && a.data == NULL && strstr(err, "seven.i32") != NULL &&
              strstr(err, "int32") != NULL,
          "raw int32 of 7 bytes accepted: '%s'", err);
}

/* ---------------------------------------------------------------- the other types */

static void test_new_types(void)
{
    /* 16 bytes of data: 8 float16, 4 uint32, 2 int64/uint64 elements. */
    const unsigned char bytes[16] = {0x00, 0x3c, 0x00, 0xc1, 0xff, 0x7b, 0x01, 0x00,
                                     0x00, 0x80, 0x00, 0x7c, 0x55, 0x35, 0xff, 0xff};
    static const struct {
        const char *code;
        coopreduce_dtype dtype;
        size_t elem;
    } types[] = {
        {"f2", COOPREDUCE_FLOAT16, 2}, {"i8", COOPREDUCE_INT64, 8}, {"u4", COOPREDUCE_UINT32, 4},
        {"u8", COOPREDUCE_UINT64, 8},  {"i4", COOPREDUCE_INT32, 4},
    };
    cr_npy_array a;
    char err[512], name[64], dict[128], msg[64];
    unsigned char buf[4096];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const char *code = types[t].code;
        size_t n = sizeof bytes / types[t].elem;
        for (int order = 0; order < 2; order++) {
            /* '<' and '=' (native, taken as little-endian) read the same. */
            snprintf(name, sizeof name, "new_%s_%d.npy", code, order);
            snprintf(dict, sizeof dict,
                     "{'descr': '%c%s', 'fortran_order': False, 'shape': (%zu,), }",
                     order ? '=' : '<', code, n);
            write_npy(name, 1, dict, bytes, sizeof bytes);
            int rc = cr_npy_read(path_of(name), &a, err, sizeof err);
            CHECK(rc == 0 && a.dtype == types[t].dtype && a.n == n && a.ndim == 1 &&
                      memcmp(a.data, bytes, sizeof bytes) == 0 && (uintptr_t)a.data % 64 == 0,
                  "%s: %s", dict, err);
            cr_npy_free(&a);
        }
        /* Big-endian: refused, naming the descr; '|' (one-byte types only) is unsupported. */
        snprintf(name, sizeof name, "new_%s_be.npy", code);
        snprintf(dict, sizeof dict, "{'descr': '>%s', 'fortran_order': False, 'shape': (%zu,), }",
                 code, n);
        write_npy(name, 1, dict, bytes, sizeof bytes);
        snprintf(msg, sizeof msg, "'>%s'", code);
        expect_npy_error(name, msg, "big-endian descr");
        expect_npy_error(name, "big-endian", "big-endian descr says big-endian");
        snprintf(name, sizeof name, "new_%s_pipe.npy", code);
        snprintf(dict, sizeof dict, "{'descr': '|%s', 'fortran_order': False, 'shape': (%zu,), }",
                 code, n);
        write_npy(name, 1, dict, bytes, sizeof bytes);
        snprintf(msg, sizeof msg, "'|%s'", code);
        expect_npy_error(name, msg, "'|' descr");
        /* A data section one element short, one element long, one byte short. */
        snprintf(dict, sizeof dict, "{'descr': '<%s', 'fortran_order': False, 'shape': (%zu,), }",
                 code, n + 1);
        size_t len = build_npy(buf, sizeof buf, 1, dict, bytes, sizeof bytes);
        snprintf(name, sizeof name, "new_%s_short.npy", code);
        write_bytes(name, buf, len);
        expect_npy_error(name, "truncated", "one element short");
        snprintf(dict, sizeof dict, "{'descr': '<%s', 'fortran_order': False, 'shape': (%zu,), }",
                 code, n - 1);
        len = build_npy(buf, sizeof buf, 1, dict, bytes, sizeof bytes);
        snprintf(name, sizeof name, "new_%s_long.npy", code);
        write_bytes(name, buf, len);
        expect_npy_error(name, "extra", "one element long");
        snprintf(dict, sizeof dict, "{'descr': '<%s', 'fortran_order': False, 'shape': (%zu,), }",
                 code, n);
        len = build_npy(buf, sizeof buf, 1, dict, bytes, sizeof bytes);
        snprintf(name, sizeof name, "new_%s_trunc.npy", code);
        write_bytes(name, buf, len - 1);
        expect_npy_error(name, "truncated", "one byte short");

        /* Writing and reading back, with the descr in the header. */
        snprintf(name, sizeof name, "new_%s_written.npy", code);
        int rc = cr_npy_write(path_of(name), bytes, n, types[t].dtype, err, sizeof err);
        CHECK(rc == 0, "write %s: %s", code, err);
        rc = cr_npy_read(path_of(name), &a, err, sizeof err);
        CHECK(rc == 0 && a.dtype == types[t].dtype && a.n == n &&
                  memcmp(a.data, bytes, sizeof bytes) == 0,
              "read back %s: %s", code, err);
        cr_npy_free(&a);
        FILE *fp = fopen(path_of(name), "rb");
        char head[129] = {0};
        size_t got = fp ? fread(head, 1, sizeof head - 1, fp) : 0;
        if (fp != NULL) fclose(fp);
        snprintf(msg, sizeof msg, "'descr': '<%s'", code);
        CHECK(got > 20 && strstr(head + 10, msg) != NULL, "written header lacks %s", msg);

        /* Raw files of the type; a size that is not a multiple of the element is an error. */
        snprintf(name, sizeof name, "new_%s.raw", code);
        write_bytes(name, bytes, sizeof bytes);
        rc = cr_raw_read(path_of(name), types[t].dtype, &a, err, sizeof err);
        CHECK(rc == 0 && a.dtype == types[t].dtype && a.n == n &&
                  memcmp(a.data, bytes, sizeof bytes) == 0,
              "raw %s: %s", code, err);
        cr_npy_free(&a);
        write_bytes(name, bytes, types[t].elem + 1);
        rc = cr_raw_read(path_of(name), types[t].dtype, &a, err, sizeof err);
        CHECK(rc == -1 && a.data == NULL && strstr(err, "multiple") != NULL,
              "raw %s of %zu bytes accepted: '%s'", code, types[t].elem + 1, err);
    }

    /* bfloat16: raw only; NumPy has no type for it, so writing a .npy fails and says why. */
    write_bytes("bf16.raw", bytes, sizeof bytes);
    int rc = cr_raw_read(path_of("bf16.raw"), COOPREDUCE_BFLOAT16, &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_BFLOAT16 && a.n == 8 &&
              memcmp(a.data, bytes, sizeof bytes) == 0,
          "raw bfloat16: %s", err);
    cr_npy_free(&a);
    rc = cr_npy_write(path_of("bf16.npy"), bytes, 8, COOPREDUCE_BFLOAT16, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "bfloat16") != NULL, "bfloat16 .npy written: '%s'", err);
    /* float16 in a 2-D Fortran-order array and a version 3.0 header. */
    write_npy("f2_f2d.npy", 3, "{'descr': '<f2', 'fortran_order': True, 'shape': (2, 4), }", bytes,
              sizeof bytes);
    rc = cr_npy_read(path_of("f2_f2d.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_FLOAT16 && a.n == 8 && a.ndim == 2 &&
              a.fortran_order == 1 && memcmp(a.data, bytes, sizeof bytes) == 0,
          "'<f2' Fortran (2, 4), version 3.0: %s", err);
    cr_npy_free(&a);
}

/* ---------------------------------------------------------------- writing, raw */

static void test_write_round_trip(void)
{
    enum { N = 1000 };
    float f[N];
    double d[N];
    for (int k = 0; k < N; k++) {
        f[k] = (float)k * 0.25f - 7.0f;
        d[k] = (double)k / 3.0;
    }
    char err[512];
    cr_npy_array a;

    int rc = cr_npy_write(path_of("written_f32.npy"), f, N, COOPREDUCE_FLOAT32, err, sizeof err);
    CHECK(rc == 0, "write f32: %s", err);
    rc = cr_npy_read(path_of("written_f32.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_FLOAT32 && a.n == N && memcmp(a.data, f, sizeof f) == 0,
          "read back f32: %s", err);
    cr_npy_free(&a);

    /* The data must start on a 64-byte boundary, after a header ending in '\n'. */
    FILE *fp = fopen(path_of("written_f32.npy"), "rb");
    unsigned char head[256];
    size_t got = fp ? fread(head, 1, sizeof head, fp) : 0;
    long size = -1;
    if (fp != NULL) {
        fseek(fp, 0, SEEK_END);
        size = ftell(fp);
        fclose(fp);
    }
    long data_offset = size - (long)sizeof f;
    CHECK(got >= 64 && head[6] == 1 && head[7] == 0 && data_offset % 64 == 0 &&
              data_offset == 10 + (long)(head[8] | head[9] << 8) && head[data_offset - 1] == '\n',
          "layout: size %ld, data at %ld", size, data_offset);

    rc = cr_npy_write(path_of("written_f64.npy"), d, N, COOPREDUCE_FLOAT64, err, sizeof err);
    CHECK(rc == 0, "write f64: %s", err);
    rc = cr_npy_read(path_of("written_f64.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.dtype == COOPREDUCE_FLOAT64 && a.n == N && memcmp(a.data, d, sizeof d) == 0,
          "read back f64: %s", err);
    cr_npy_free(&a);

    rc = cr_npy_write(path_of("written_empty.npy"), NULL, 0, COOPREDUCE_FLOAT32, err, sizeof err);
    CHECK(rc == 0, "write empty: %s", err);
    rc = cr_npy_read(path_of("written_empty.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 0, "read back empty: %s", err);
    cr_npy_free(&a);

    rc = cr_npy_write(path_of("no_such_dir/x.npy"), f, N, COOPREDUCE_FLOAT32, err, sizeof err);
    CHECK(rc == -1 && err[0] != '\0', "write into a missing directory succeeded");
}

static void test_raw(void)
{
    const float f[3] = {1.0f, 2.0f, 4.0f};
    char err[512];
    cr_npy_array a;

    write_bytes("three.f32", f, sizeof f);
    int rc = cr_raw_read(path_of("three.f32"), COOPREDUCE_FLOAT32, &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 3 && a.dtype == COOPREDUCE_FLOAT32 &&
              memcmp(a.data, f, sizeof f) == 0 && (uintptr_t)a.data % 64 == 0,
          "raw f32: %s", err);
    cr_npy_free(&a);

    write_bytes("empty.raw", "", 0);
    rc = cr_raw_read(path_of("empty.raw"), COOPREDUCE_FLOAT64, &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 0, "empty raw: %s", err);
    cr_npy_free(&a);

    /* 12 bytes are 3 float32 but 1.5 float64. */
    rc = cr_raw_read(path_of("three.f32"), COOPREDUCE_FLOAT64, &a, err, sizeof err);
    CHECK(rc == -1 && err[0] != '\0' && a.data == NULL && strstr(err, "three.f32") != NULL,
          "raw size not a multiple of 8 accepted: '%s'", err);
}

/* ---------------------------------------------------------------- streams */

/* A pipe fed by a thread: `len` bytes of `bytes`, then end of file. The reader may stop early;
 * the writer then fails with EPIPE (SIGPIPE is ignored) and stops. */
typedef struct {
    int fd;
    const unsigned char *bytes;
    size_t len;
    pthread_t thread;
} feeder;

static void *feed(void *arg)
{
    feeder *f = arg;
    size_t done = 0;
    while (done < f->len) {
        ssize_t n = write(f->fd, f->bytes + done, f->len - done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    close(f->fd);
    return NULL;
}

static FILE *pipe_of(feeder *f, const void *bytes, size_t len)
{
    int fds[2];
    if (pipe(fds) != 0) {
        fprintf(stderr, "test_npy: pipe: %s\n", strerror(errno));
        exit(2);
    }
    f->fd = fds[1];
    f->bytes = bytes;
    f->len = len;
    if (pthread_create(&f->thread, NULL, feed, f) != 0) {
        fprintf(stderr, "test_npy: pthread_create failed\n");
        exit(2);
    }
    return fdopen(fds[0], "rb");
}

static void close_pipe(feeder *f, FILE *r)
{
    fclose(r);
    pthread_join(f->thread, NULL);
}

static void test_streams(void)
{
    static unsigned char buf[(3 << 20) + 4096];
    char err[512];
    cr_npy_array a;
    feeder fd;
    const float four[4] = {1, 2, 3, 4};

    /* A .npy through a pipe reads as it does from a file. */
    size_t len =
        build_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                  four, sizeof four);
    FILE *r = pipe_of(&fd, buf, len);
    int rc = cr_npy_read_stream(r, "pipe", CR_DEFAULT_MAX_STREAM_BYTES, &a, err, sizeof err);
    close_pipe(&fd, r);
    CHECK(rc == 0 && a.n == 4 && memcmp(a.data, four, sizeof four) == 0, "piped .npy: %s", err);
    cr_npy_free(&a);

    /* A header claiming 2^60 elements fails at once with -2, naming the limit. */
    len = build_npy(buf, sizeof buf, 1,
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (1152921504606846976,), }",
                    four, sizeof four);
    r = pipe_of(&fd, buf, len);
    rc = cr_npy_read_stream(r, "pipe", CR_DEFAULT_MAX_STREAM_BYTES, &a, err, sizeof err);
    close_pipe(&fd, r);
    CHECK(rc == -2 && a.data == NULL && strstr(err, "limit") != NULL, "2^60 claimed: %d '%s'", rc,
          err);

    /* Within a generous limit, a claim of 256 GiB with 16 bytes behind it reserves nothing: the
     * data is read as it comes, and it is short. */
    len = build_npy(buf, sizeof buf, 1,
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (68719476736,), }", four,
                    sizeof four);
    r = pipe_of(&fd, buf, len);
    rc = cr_npy_read_stream(r, "pipe", UINT64_C(1) << 40, &a, err, sizeof err);
    close_pipe(&fd, r);
    CHECK(rc == -1 && a.data == NULL && strstr(err, "truncated") != NULL &&
              strstr(err, "after 16") != NULL,
          "256 GiB claimed, 16 bytes sent: %d '%s'", rc, err);

    /* More data than the header says, from a pipe. */
    len = build_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                    four, sizeof four);
    r = pipe_of(&fd, buf, len);
    rc = cr_npy_read_stream(r, "pipe", CR_DEFAULT_MAX_STREAM_BYTES, &a, err, sizeof err);
    close_pipe(&fd, r);
    CHECK(rc == -1 && strstr(err, "extra") != NULL, "extra piped data: %d '%s'", rc, err);

    /* Raw data through a pipe: several growth steps, then exactly at and just over the limit. */
    for (size_t k = 0; k < sizeof buf; k++) buf[k] = (unsigned char)(k * 7 + 1);
    const size_t raw_len = (size_t)(3 << 20) + 4;
    r = pipe_of(&fd, buf, raw_len);
    rc = cr_raw_read_stream(r, "pipe", COOPREDUCE_FLOAT32, CR_DEFAULT_MAX_STREAM_BYTES, &a, err,
                            sizeof err);
    close_pipe(&fd, r);
    CHECK(rc == 0 && a.n == raw_len / 4 && memcmp(a.data, buf, raw_len) == 0 &&
              (uintptr_t)a.data % 64 == 0,
          "3 MiB + 4 bytes piped raw: %s", err);
    cr_npy_free(&a);
    r = pipe_of(&fd, buf, raw_len);
    rc = cr_raw_read_stream(r, "pipe", COOPREDUCE_FLOAT32, raw_len, &a, err, sizeof err);
    close_pipe(&fd, r);
    CHECK(rc == 0 && a.n == raw_len / 4, "raw exactly at the limit: %s", err);
    cr_npy_free(&a);
    r = pipe_of(&fd, buf, raw_len);
    rc = cr_raw_read_stream(r, "pipe", COOPREDUCE_FLOAT32, raw_len - 4, &a, err, sizeof err);
    close_pipe(&fd, r);
    CHECK(rc == -2 && a.data == NULL && strstr(err, "limit") != NULL,
          "raw 4 bytes over the limit: %d '%s'", rc, err);
    r = pipe_of(&fd, buf, 6);
    rc = cr_raw_read_stream(r, "pipe", COOPREDUCE_FLOAT32, 1 << 20, &a, err, sizeof err);
    close_pipe(&fd, r);
    CHECK(rc == -1 && strstr(err, "multiple") != NULL, "6 piped bytes of float32: '%s'", err);

    /* A regular file opened by the caller, read from where its position is. */
    const float f3[3] = {1.0f, 2.0f, 4.0f};
    write_bytes("offset.raw", "skip", 4);
    FILE *w = fopen(path_of("offset.raw"), "ab");
    CHECK(w != NULL && fwrite(f3, sizeof f3, 1, w) == 1 && fclose(w) == 0, "appending");
    r = fopen(path_of("offset.raw"), "rb");
    char skip[4];
    CHECK(r != NULL && fread(skip, 1, 4, r) == 4, "skipping");
    rc = r ? cr_raw_read_stream(r, "offset.raw", COOPREDUCE_FLOAT32, 0, &a, err, sizeof err) : -1;
    if (r) fclose(r);
    CHECK(rc == 0 && a.n == 3 && memcmp(a.data, f3, sizeof f3) == 0,
          "a regular file from its position, whatever the stream limit: %s", err);
    cr_npy_free(&a);
}

/* ---------------------------------------------------------------- writers */

static int count_temp_files(void)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c '\\.tmp-'", scratch);
    FILE *p = popen(cmd, "r");
    int count = -1;
    if (p != NULL) {
        if (fscanf(p, "%d", &count) != 1) count = -1;
        pclose(p);
    }
    return count;
}

static void test_writers(void)
{
    const double d[3] = {0.5, -2.0, 8.0};
    char err[512];
    cr_npy_array a;

    /* To open streams: the .npy image and raw elements, read back. */
    FILE *f = fopen(path_of("stream.npy"), "wb");
    int rc =
        f ? cr_npy_write_stream(f, "stream.npy", d, 3, COOPREDUCE_FLOAT64, err, sizeof err) : -1;
    CHECK(f != NULL && rc == 0 && fclose(f) == 0, "npy to a stream: %s", err);
    rc = cr_npy_read(path_of("stream.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 3 && memcmp(a.data, d, sizeof d) == 0, "read back: %s", err);
    cr_npy_free(&a);
    f = fopen(path_of("stream.raw"), "wb");
    rc = f ? cr_raw_write_stream(f, "stream.raw", d, 3, COOPREDUCE_FLOAT64, err, sizeof err) : -1;
    CHECK(f != NULL && rc == 0 && fclose(f) == 0, "raw to a stream: %s", err);
    rc = cr_raw_read(path_of("stream.raw"), COOPREDUCE_FLOAT64, &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 3 && memcmp(a.data, d, sizeof d) == 0, "raw read back: %s", err);
    cr_npy_free(&a);

    /* cr_npy_write replaces an existing file whole, and leaves no temporary file. */
    write_bytes("replaced.npy", "old", 3);
    rc = cr_npy_write(path_of("replaced.npy"), d, 3, COOPREDUCE_FLOAT64, err, sizeof err);
    CHECK(rc == 0, "replacing: %s", err);
    rc = cr_npy_read(path_of("replaced.npy"), &a, err, sizeof err);
    CHECK(rc == 0 && a.n == 3, "replaced file: %s", err);
    cr_npy_free(&a);

    /* A failed write removes nothing it did not create: a link to /dev/full stays. */
    unlink(path_of("full.npy"));
    if (symlink("/dev/full", path_of("full.npy")) == 0) {
        rc = cr_npy_write(path_of("full.npy"), d, 3, COOPREDUCE_FLOAT64, err, sizeof err);
        struct stat st;
        CHECK(rc == -1 && lstat(path_of("full.npy"), &st) == 0 && S_ISLNK(st.st_mode) &&
                  stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode),
              "write into /dev/full through a link: %d '%s'", rc, err);
    }
    /* Nor does a failure to write a .npy of bfloat16 touch the path. */
    write_bytes("kept.npy", "kept", 4);
    rc = cr_npy_write(path_of("kept.npy"), d, 3, COOPREDUCE_BFLOAT16, err, sizeof err);
    FILE *k = fopen(path_of("kept.npy"), "rb");
    char kept[8] = "";
    size_t got = k ? fread(kept, 1, sizeof kept, k) : 0;
    if (k) fclose(k);
    CHECK(rc == -1 && got == 4 && memcmp(kept, "kept", 4) == 0, "bfloat16 .npy refused, file kept");
    CHECK(count_temp_files() == 0, "temporary files left in %s", scratch);
}

/* ---------------------------------------------------------------- errors */

/* Expects a failure with a one-line message naming the file (and `must_contain`, if given). */
static void expect_npy_error(const char *name, const char *must_contain, const char *what)
{
    cr_npy_array a;
    char err[512];
    memset(&a, 0x5a, sizeof a); /* garbage in: the reader must reset it */
    strcpy(err, "");
    int rc = cr_npy_read(path_of(name), &a, err, sizeof err);
    CHECK(rc == -1 && a.data == NULL && err[0] != '\0' && strchr(err, '\n') == NULL &&
              strstr(err, name) != NULL && (must_contain == NULL || strstr(err, must_contain)),
          "%s: rc %d, message '%s'", what, rc, err);
    if (rc == 0) cr_npy_free(&a);
}

static void test_errors(void)
{
    const float four[4] = {1, 2, 3, 4};
    unsigned char buf[4096];
    size_t len;

    expect_npy_error("does_not_exist.npy", NULL, "missing file");

    write_bytes("bad_magic.npy", "\x93NUMPX\x01\x00\x10\x00{}", 12);
    expect_npy_error("bad_magic.npy", "magic", "bad magic");

    write_bytes("tiny.npy", "\x93NU", 3);
    expect_npy_error("tiny.npy", NULL, "file shorter than the magic");

    len = build_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                    four, sizeof four);
    write_bytes("trunc_header.npy", buf, 40);
    expect_npy_error("trunc_header.npy", "truncated", "truncated header");

    write_bytes("trunc_data.npy", buf, len - 3);
    expect_npy_error("trunc_data.npy", "truncated", "truncated data");

    unsigned char longer[4096];
    memcpy(longer, buf, len);
    memcpy(longer + len, four, 4);
    write_bytes("extra_data.npy", longer, len + 4);
    expect_npy_error("extra_data.npy", "extra", "extra data");

    write_npy("int16.npy", 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (8,), }", four,
              sizeof four);
    expect_npy_error("int16.npy", "'<i2'", "int16 dtype");

    write_npy("object.npy", 1, "{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", four,
              sizeof four);
    expect_npy_error("object.npy", "'|O'", "object dtype");

    write_npy("complex64.npy", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four,
              sizeof four);
    expect_npy_error("complex64.npy", "'<c8'", "complex64 dtype");

    write_npy("structured.npy", 1,
              "{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (2,), }",
              four, sizeof four);
    expect_npy_error("structured.npy", "dtype", "structured dtype");

    write_npy("no_colon.npy", 1, "{'descr' '<f4', 'fortran_order': False, 'shape': (4,), }", four,
              sizeof four);
    expect_npy_error("no_colon.npy", "malformed", "dict without ':'");

    write_npy("not_dict.npy", 1, "['descr', '<f4']", four, sizeof four);
    expect_npy_error("not_dict.npy", "malformed", "header not a dict");

    write_npy("no_shape.npy", 1, "{'descr': '<f4', 'fortran_order': False, }", four, sizeof four);
    expect_npy_error("no_shape.npy", "shape", "missing 'shape'");

    write_npy("bad_order.npy", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (4,), }", four,
              sizeof four);
    expect_npy_error("bad_order.npy", "fortran_order", "fortran_order not a bool");

    write_npy("neg_shape.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }",
              four, sizeof four);
    expect_npy_error("neg_shape.npy", "malformed", "negative dimension");

    write_npy("unclosed.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,", four,
              sizeof four);
    expect_npy_error("unclosed.npy", "malformed", "unclosed dict");

    /* 2^32 * 2^32 * 2 elements: the product overflows 64 bits. */
    write_npy("overflow.npy", 1,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }",
              four, sizeof four);
    expect_npy_error("overflow.npy", "overflow", "shape product overflow");

    write_npy("overflow_dim.npy", 1,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (123456789012345678901234,), }",
              four, sizeof four);
    expect_npy_error("overflow_dim.npy", "overflow", "dimension beyond 2^64");

    /* Fits in 64 bits as a count, but not as a byte size. */
    write_npy("overflow_bytes.npy", 1,
              "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }", four,
              sizeof four);
    expect_npy_error("overflow_bytes.npy", NULL, "byte size overflow");

    len = build_npy(buf, sizeof buf, 4, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                    four, sizeof four);
    write_bytes("version4.npy", buf, len);
    expect_npy_error("version4.npy", "version", "format version 4.0");

    expect_npy_error("", NULL, "a directory (the scratch directory itself)");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_npy SCRATCH_DIR\n");
        return 2;
    }
    scratch = argv[1];
    signal(SIGPIPE, SIG_IGN); /* a reader that stops early: its feeder sees EPIPE instead */
    if (mkdir_p(scratch) != 0) {
        fprintf(stderr, "test_npy: cannot create %s: %s\n", scratch, strerror(errno));
        return 2;
    }
    test_v1_f32();
    test_v2_f64_any_key_order();
    test_v3_f32();
    test_big_endian();
    test_shapes();
    test_write_round_trip();
    test_raw();
    test_int32();
    test_new_types();
    test_errors();
    test_streams();
    test_writers();
    printf("test_npy: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
