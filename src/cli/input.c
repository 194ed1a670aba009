/* input.c — generated arrays and arrays read from files or standard input (input.h). */
#include "input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "device.h"
#include "messages.h"

int cli_generate(cr_gen_kind kind, uint64_t n, uint64_t seed, coopreduce_dtype dtype,
                 cr_npy_array *out)
{
    memset(out, 0, sizeof *out);
    if (!cr_gen_supports(kind, dtype)) {
        cli_error("--gen %s: float dtypes only (f16, bf16, f32, f64)", cr_gen_name(kind));
        return EXIT_ERROR;
    }
    size_t elem = coopreduce_dtype_size(dtype);
    if (n > (uint64_t)SIZE_MAX / elem) {
        cli_error("--n %llu: too many elements for this machine's address space",
                  (unsigned long long)n);
        return EXIT_ERROR;
    }
    size_t bytes = (size_t)n * elem;
    void *data = NULL;
    /* 64-byte aligned like the .npy reader's buffers; never size 0, so data is never NULL. */
    if (posix_memalign(&data, 64, bytes > 64 ? bytes : 64) != 0) {
        cli_error("cannot allocate %zu bytes for %llu %s elements", bytes, (unsigned long long)n,
                  coopreduce_dtype_name(dtype));
        return EXIT_ERROR;
    }
    if (cr_gen_fill(data, 0, n, dtype, kind, seed, cli_online_cpus()) != 0) {
        free(data);
        cli_error("internal error: cannot generate '%s' data", cr_gen_name(kind));
        return EXIT_ERROR;
    }
    out->data = data;
    out->n = n;
    out->dtype = dtype;
    out->ndim = 1;
    out->shape[0] = n;
    return EXIT_OK;
}

const char *cli_input_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "standard input" : path;
}

int cli_read_array(const char *path, int raw, coopreduce_dtype dtype, uint64_t max_input,
                   cr_npy_array *out)
{
    char err[ERRLEN];
    int rc;
    if (strcmp(path, "-") == 0) {
        const char *name = cli_input_name(path);
        rc = raw ? cr_raw_read_stream(stdin, name, dtype, max_input, out, err, sizeof err)
                 : cr_npy_read_stream(stdin, name, max_input, out, err, sizeof err);
    } else {
        FILE *f = fopen(path, "rb");
        struct stat st;
        if (f != NULL && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
            fclose(f);
            f = NULL;
        }
        if (f == NULL) {
            /* The readers' own wording for what cannot be opened (a directory included). */
            rc = raw ? cr_raw_read(path, dtype, out, err, sizeof err)
                     : cr_npy_read(path, out, err, sizeof err);
        } else {
            rc = raw ? cr_raw_read_stream(f, path, dtype, max_input, out, err, sizeof err)
                     : cr_npy_read_stream(f, path, max_input, out, err, sizeof err);
            fclose(f);
        }
    }
    if (rc == -2) {
        cli_error("%s (--max-input SIZE raises it)", err);
        return EXIT_ERROR;
    }
    if (rc != 0) {
        cli_error("%s", err);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

void cli_describe_shape(const cr_npy_array *a, char *out, size_t outlen)
{
    size_t used = (size_t)snprintf(out, outlen, "(");
    for (int d = 0; d < a->ndim && used < outlen; d++)
        used += (size_t)snprintf(out + used, outlen - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)a->shape[d]);
    if (used < outlen) snprintf(out + used, outlen - used, a->ndim == 1 ? ",)" : ")");
}
