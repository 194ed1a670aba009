/* offsets.c — segment offsets, read or generated (offsets.h). */
#include "offsets.h"

#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "gen.h"
#include "input.h"
#include "messages.h"

int cli_read_segments(const char *path, uint64_t n, cli_segments *out)
{
    memset(out, 0, sizeof *out);
    cr_npy_array a;
    if (cli_read_array(path, 0, COOPREDUCE_INT64, CLI_DEFAULT_MAX_INPUT, &a) != EXIT_OK)
        return EXIT_ERROR;
    int rc = EXIT_ERROR;
    if (a.dtype != COOPREDUCE_INT64 && a.dtype != COOPREDUCE_INT32) {
        cli_error("--segments %s holds %s: offsets must be int64 ('<i8') or int32 ('<i4')", path,
                  coopreduce_dtype_name(a.dtype));
        goto done;
    }
    if (a.ndim != 1) {
        cli_error("--segments %s has %d dimensions: offsets must be a 1-D array", path, a.ndim);
        goto done;
    }
    if (a.n == 0) {
        cli_error("--segments %s is empty: nseg segments need nseg + 1 offsets", path);
        goto done;
    }
    out->offsets = malloc(sizeof *out->offsets * (size_t)a.n);
    if (out->offsets == NULL) {
        cli_error("out of memory for %llu offsets", (unsigned long long)a.n);
        goto done;
    }
    for (uint64_t k = 0; k < a.n; k++) {
        int64_t v = a.dtype == COOPREDUCE_INT64 ? ((const int64_t *)a.data)[k]
                                                : ((const int32_t *)a.data)[k];
        out->offsets[k] = v;
        if (v < 0) {
            cli_error("--segments %s: offset %llu is %lld: offsets are not negative", path,
                      (unsigned long long)k, (long long)v);
            goto done;
        }
        if (k > 0 && v < out->offsets[k - 1]) {
            cli_error("--segments %s: offset %llu (%lld) is less than offset %llu (%lld): offsets "
                      "must not decrease",
                      path, (unsigned long long)k, (long long)v, (unsigned long long)(k - 1),
                      (long long)out->offsets[k - 1]);
            goto done;
        }
    }
    if ((uint64_t)out->offsets[a.n - 1] > n) {
        cli_error("--segments %s: the last offset, %lld, is beyond the array's %llu elements", path,
                  (long long)out->offsets[a.n - 1], (unsigned long long)n);
        goto done;
    }
    out->nseg = a.n - 1;
    rc = EXIT_OK;
done:
    if (rc != EXIT_OK) {
        free(out->offsets);
        out->offsets = NULL;
    }
    cr_npy_free(&a);
    return rc;
}

int cli_random_segments(uint64_t n, uint64_t min_len, uint64_t max_len, uint64_t seed,
                        cli_segments *out)
{
    memset(out, 0, sizeof *out);
    uint64_t cap = 1024, count = 0, at = 0;
    int64_t *offsets = malloc(sizeof *offsets * cap);
    if (offsets == NULL) goto oom;
    offsets[0] = 0;
    while (at < n) {
        uint64_t len = min_len + cr_gen_hash(seed, count) % (max_len - min_len + 1);
        at = n - at < len ? n : at + len;
        if (count + 2 > cap) {
            int64_t *grown = realloc(offsets, sizeof *offsets * (cap *= 2));
            if (grown == NULL) goto oom;
            offsets = grown;
        }
        offsets[++count] = (int64_t)at;
    }
    out->offsets = offsets;
    out->nseg = count;
    return EXIT_OK;
oom:
    free(offsets);
    cli_error("out of memory for the segment offsets");
    return EXIT_ERROR;
}

int cli_parse_segments_spec(const char *text, uint64_t *min_len, uint64_t *max_len)
{
    if (strncmp(text, "random:", 7) != 0) return -1;
    const char *a = text + 7, *colon = strchr(a, ':');
    char lo[64];
    if (colon == NULL || (size_t)(colon - a) >= sizeof lo) return -1;
    memcpy(lo, a, (size_t)(colon - a));
    lo[colon - a] = '\0';
    if (cli_parse_count(lo, min_len) != 0 || cli_parse_count(colon + 1, max_len) != 0) return -1;
    return *max_len >= 1 && *min_len <= *max_len && *max_len < (UINT64_C(1) << 62) ? 0 : -1;
}
