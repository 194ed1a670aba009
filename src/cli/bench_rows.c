/* bench_rows.c — the benchmark's rows: collected as the timings come, printed as a Markdown
 * table, written as JSON and CSV files. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "format.h"
#include "messages.h"
#include "outfile.h"

static bench_row rows[BENCH_MAX_ROWS];
static int nrows;
static char device_name[300]; /* the GPU's name, for the JSON file */
static char op_labels[BENCH_MAX_ROWS][64];

bench_row *bench_add_row(uint64_t n, const char *dtype, const char *method, const char *kind,
                         double us, double noise, double bytes)
{
    if (nrows >= BENCH_MAX_ROWS) return NULL;
    bench_row *r = &rows[nrows++];
    *r = (bench_row){n, dtype, method, kind, us, noise, bytes, 0, 0, -1};
    return r;
}

bench_row *bench_add_op_row(uint64_t n, const char *dtype, const char *name, const char *kind,
                            double us, double noise, double bytes, double ceiling_us)
{
    bench_row *r = bench_add_row(n, dtype, name, kind, us, noise, bytes);
    if (r) {
        r->ceiling_us = ceiling_us;
        r->det = 1;
    }
    return r;
}

const char *bench_op_label(coopreduce_op op, coopreduce_mode mode)
{
    /* One label per row at most, so the slot of the next row is free. */
    char *label = op_labels[nrows % BENCH_MAX_ROWS];
    snprintf(label, sizeof op_labels[0], "%s%s", coopreduce_op_name(op),
             mode == COOPREDUCE_MODE_EXACT ? "/exact" : "");
    return label;
}

const char *bench_batch_label(const bench_options *o, coopreduce_op op, coopreduce_mode mode,
                              uint64_t nseg)
{
    char name[24], shape[32];
    snprintf(name, sizeof name, "%s", bench_op_label(op, mode));
    char *label = op_labels[nrows % BENCH_MAX_ROWS];
    if (o->have_segments) {
        snprintf(shape, sizeof shape, "%llu of %llu..%llu", (unsigned long long)nseg,
                 (unsigned long long)o->seg_min, (unsigned long long)o->seg_max);
        snprintf(label, sizeof op_labels[0], "%s/segments (%s)", name, shape);
        return label;
    }
    size_t used = 0;
    shape[0] = '\0';
    for (int d = 0; d < o->shape.ndim && used < sizeof shape; d++)
        used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%llu", d ? "x" : "",
                                 (unsigned long long)o->shape.extent[d]);
    snprintf(label, sizeof op_labels[0], "%s/axis%d (%s)", name, o->axis, shape);
    return label;
}

coopreduce_status bench_run_call(coopreduce_handle *h, const bench_call *c)
{
    coopreduce_status st;
    switch (c->kind) {
    case BENCH_CALL_AXIS:
        st = coopreduce_reduce_axis(c->op, c->x, c->y, c->result, c->outer, c->len, c->inner,
                                    c->dtype, h, NULL);
        /* Random int64 rows overflow 64 bits: every 128-bit sum is computed and written all
         * the same, which is what is timed. */
        return st == COOPREDUCE_ERROR_OVERFLOW ? COOPREDUCE_SUCCESS : st;
    case BENCH_CALL_SEGMENTS:
        st = coopreduce_reduce_segments(c->op, c->x, c->y, c->result, c->n, c->offsets, c->nseg,
                                        c->dtype, h, NULL);
        return st == COOPREDUCE_ERROR_OVERFLOW ? COOPREDUCE_SUCCESS : st;
    default: return coopreduce_reduce(c->op, c->x, c->y, c->result, c->n, c->dtype, h, NULL);
    }
}

void bench_set_device_name(const char *name)
{
    snprintf(device_name, sizeof device_name, "%s", name);
}

double bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_median_noise(double *v, int k, double *med, double *noise)
{
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    *med = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
    *noise = *med > 0 ? (v[k - 1] - v[0]) / *med : 0;
}

const char *bench_data_label(const bench_options *o, coopreduce_dtype dt, cr_gen_kind kind)
{
    static char labels[16][8][40];
    if ((!o->have_data && !o->offset) || (unsigned)dt >= 16 || (unsigned)kind >= 8)
        return coopreduce_dtype_name(dt);
    char *label = labels[dt][kind], off[8] = "";
    if (o->offset) snprintf(off, sizeof off, " +%d", o->offset);
    snprintf(label, sizeof labels[0][0], "%s%s%s%s", coopreduce_dtype_name(dt),
             o->have_data ? " " : "", o->have_data ? cr_gen_name(kind) : "", off);
    return label;
}

void bench_print_exact_ratios(FILE *f)
{
    int header = 0;
    for (int i = 0; i < nrows; i++) {
        const bench_row *e = &rows[i];
        const size_t len = strlen(e->method);
        if (len < 7 || strcmp(e->method + len - 6, "/exact") != 0) continue;
        for (int k = 0; k < nrows; k++) {
            const bench_row *d = &rows[k];
            if (d->n != e->n || strcmp(d->dtype, e->dtype) != 0 ||
                strlen(d->method) != len - 6 || strncmp(d->method, e->method, len - 6) != 0)
                continue;
            if (!header) {
                fprintf(f, "\n### Exact against deterministic (throughput ratio)\n\n"
                           "| N | dtype | op | deterministic us | exact us | exact/canonical |\n"
                           "|---|---|---|---|---|---|\n");
                header = 1;
            }
            fprintf(f, "| %llu | %s | %s | %.2f | %.2f | %.3f |\n", (unsigned long long)e->n,
                    e->dtype, d->method, d->us, e->us, e->us > 0 ? d->us / e->us : 0.0);
            break;
        }
    }
}

void bench_print_table(FILE *f)
{
    fprintf(f, "| N | bytes | dtype | method | deterministic | timing | median us | noise %% | "
               "GB/s | %% of ceiling | x CUB |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nrows; i++) {
        bench_row *r = &rows[i];
        char ceil_s[32] = "", ref_s[32] = "", gbs[32] = "";
        if (r->bytes > 0) snprintf(gbs, sizeof gbs, "%.0f", r->bytes / (r->us * 1e3));
        if (r->ceiling_us > 0)
            snprintf(ceil_s, sizeof ceil_s, "%.1f", 100.0 * r->ceiling_us / r->us);
        if (r->ref_us > 0) snprintf(ref_s, sizeof ref_s, "%.2f", r->ref_us / r->us);
        fprintf(f, "| %llu | %.0f | %s | %s | %s | %s | %.2f | %.1f | %s | %s | %s |\n",
                (unsigned long long)r->n, r->bytes, r->dtype, r->method,
                r->det < 0 ? ""
                : r->det   ? "yes"
                           : "no",
                r->kind, r->us, 100 * r->noise, gbs, ceil_s, ref_s);
    }
}

static void write_json(FILE *f, const char *device)
{
    fprintf(f, "{\"device\": ");
    cli_print_json_string(f, device);
    fprintf(f, ", \"device_name\": ");
    cli_print_json_string(f, device_name);
    fprintf(f, ", \"rows\": [\n");
    for (int i = 0; i < nrows; i++) {
        bench_row *r = &rows[i];
        fprintf(f,
                "  {\"n\": %llu, \"dtype\": \"%s\", \"method\": \"%s\", \"timing\": \"%s\", "
                "\"median_us\": %.4f, \"noise\": %.4f, \"bytes\": %.0f, \"ceiling_us\": %.4f, "
                "\"ref_us\": %.4f, \"deterministic\": %s}%s\n",
                (unsigned long long)r->n, r->dtype, r->method, r->kind, r->us, r->noise, r->bytes,
                r->ceiling_us, r->ref_us,
                r->det < 0 ? "null"
                : r->det   ? "true"
                           : "false",
                i + 1 < nrows ? "," : "");
    }
    fprintf(f, "]}\n");
}

static void write_csv(FILE *f)
{
    fprintf(f, "n,dtype,method,deterministic,timing,median_us,noise,bytes,ceiling_us,ref_us\n");
    for (int i = 0; i < nrows; i++) {
        bench_row *r = &rows[i];
        fprintf(f, "%llu,%s,%s,%s,%s,%.4f,%.4f,%.0f,%.4f,%.4f\n", (unsigned long long)r->n,
                r->dtype, r->method,
                r->det < 0 ? ""
                : r->det   ? "yes"
                           : "no",
                r->kind, r->us, r->noise, r->bytes, r->ceiling_us, r->ref_us);
    }
}

/* The result files, opened before the benchmark runs, so that a path that cannot be written
 * fails at once rather than after minutes of timing. */
static const char *out_paths[2];
static cr_outfile outs[2];
static int opened[2];

int bench_open_files(const char *json, const char *csv)
{
    char err[ERRLEN];
    out_paths[0] = json;
    out_paths[1] = csv;
    for (int k = 0; k < 2; k++) {
        if (out_paths[k] == NULL) continue;
        if (cr_outfile_open(&outs[k], out_paths[k], 1, err, sizeof err) != 0) {
            cli_error("%s", err);
            bench_abort_files();
            return -1;
        }
        opened[k] = 1;
    }
    return 0;
}

void bench_abort_files(void)
{
    for (int k = 0; k < 2; k++)
        if (opened[k]) {
            cr_outfile_abort(&outs[k]);
            opened[k] = 0;
        }
}

int bench_write_files(const char *device)
{
    char err[ERRLEN];
    for (int k = 0; k < 2; k++) {
        if (!opened[k]) continue;
        if (k == 0)
            write_json(outs[k].f, device);
        else
            write_csv(outs[k].f);
        opened[k] = 0;
        if (cr_outfile_commit(&outs[k], out_paths[k], err, sizeof err) != 0) {
            cli_error("%s", err);
            bench_abort_files();
            return -1;
        }
    }
    return 0;
}
