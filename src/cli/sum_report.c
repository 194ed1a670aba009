/* sum_report.c — what `coopreduce sum` prints: the text report or one JSON object on stdout,
 * notices on stderr. */
#include <stdio.h>
#include <string.h>

#include "../core/dtype.h"
#include "format.h"
#include "messages.h"
#include "sum.h"

const char *sum_result_dtype_name(const result_kind *rk)
{
    if (rk->rsize == 16) return rk->rdtype == COOPREDUCE_INT64 ? "int128" : "uint128";
    return coopreduce_dtype_name(rk->rdtype);
}

int sum_result_fits(const result_kind *rk, const unsigned char *bits)
{
    if (rk->rsize != 16) return 1;
    uint64_t w[2];
    memcpy(w, bits, sizeof w);
    if (rk->rdtype == COOPREDUCE_UINT64) return w[1] == 0;
    return w[1] == ((w[0] >> 63) ? UINT64_MAX : 0);
}

/* " (result float32)", " (summed exactly, into an int64)", ... after the dtype line. */
static void describe_result(const result_kind *rk, char *out, size_t outlen)
{
    out[0] = '\0';
    if (rk->op == COOPREDUCE_OP_ARGMIN || rk->op == COOPREDUCE_OP_ARGMAX)
        snprintf(out, outlen, "   (result: the index, counted from 0)");
    else if (rk->op == COOPREDUCE_OP_SUM && !cr_dtype_is_float(rk->dtype))
        snprintf(out, outlen, "   (summed exactly, into an %s)", sum_result_dtype_name(rk));
    else if (rk->rdtype != rk->dtype)
        snprintf(out, outlen, "   (result %s)", sum_result_dtype_name(rk));
}

/* The mode the result was computed in, as the JSON "mode" field and the report name it. */
static const char *mode_label(const sum_options *o, const sum_result *res)
{
    if (o->mode != COOPREDUCE_MODE_DETERMINISTIC) return coopreduce_mode_name(o->mode);
    return res->deterministic ? "deterministic" : "nondeterministic";
}

void sum_print_report(const sum_options *o, const cli_device *dev, const sum_input *in,
                      const sum_input *yin, const result_kind *rk, uint64_t n,
                      const sum_result *res)
{
    char value[64], bits[40], result_note[80];
    coopreduce_dtype dtype = rk->dtype;
    size_t elem = coopreduce_dtype_size(dtype);
    const char *method = coopreduce_method_name(o->method);
    const char *op = coopreduce_op_name(rk->op);
    cli_format_value(res->bits, rk->rdtype, rk->rsize, value, sizeof value);
    cli_format_bits(res->bits, rk->rsize, bits, sizeof bits);
    describe_result(rk, result_note, sizeof result_note);
    double bytes = (double)n * (double)elem * (yin != NULL ? 2.0 : 1.0);
    double gbps = res->time_us > 0.0 ? bytes / (res->time_us * 1e3) : 0.0;
    char device_id[32];
    if (dev->is_gpu)
        snprintf(device_id, sizeof device_id, "gpu:%d", dev->ordinal);
    else
        snprintf(device_id, sizeof device_id, "cpu");
    const coopreduce_launch_info *li = res->have_launch ? &res->launch : NULL;

    /* stderr: what the GPU fell back to, and a nondeterministic method's spread. stdout stays
     * the report alone. */
    if (li != NULL && li->notice[0] != '\0') cli_error("notice: %s", li->notice);
    if (res->fallback[0] != '\0')
        cli_error("notice: %s; --device auto computed it on the CPU", res->fallback);
    if (o->json && res->distinct > 1)
        cli_error("note: method %s is not deterministic for %s: %d runs gave %d different "
                  "results; the first is reported",
                  method, coopreduce_dtype_name(dtype), res->runs, res->distinct);

    if (o->json) {
        if (dev->auto_note[0] != '\0' && res->fallback[0] == '\0')
            fprintf(stderr, "coopreduce: note: %s\n", dev->auto_note);
        printf("{\"value\": \"%s\", \"bits\": \"%s\", \"dtype\": \"%s\", \"op\": \"%s\", "
               "\"result_dtype\": \"%s\", \"n\": %llu, \"device\": \"%s\", \"device_name\": ",
               value, bits, coopreduce_dtype_name(dtype), op, sum_result_dtype_name(rk),
               (unsigned long long)n, device_id);
        cli_print_json_string(stdout, dev->name);
        printf(", \"method\": \"%s\", \"deterministic\": %s, \"mode\": \"%s\", "
               "\"order_version\": %d, \"time_us\": %.3f, \"gbps\": %.3f, \"repeat\": %d, "
               "\"threads\": ",
               method, res->deterministic ? "true" : "false", mode_label(o, res),
               coopreduce_order_version(), res->time_us, gbps, o->repeat);
        if (li == NULL) {
            if (dev->is_gpu)
                printf("null");
            else
                printf("%d", dev->threads);
        } else {
            /* On a GPU, "threads" is the threads per block of the main kernel. */
            printf("%d, \"blocks\": %d, \"launches\": %d, \"cooperative\": %s, "
                   "\"fell_back\": %s, \"cluster_size\": %d",
                   li->threads, li->blocks, li->launches, li->cooperative ? "true" : "false",
                   li->fell_back ? "true" : "false", li->cluster_size);
        }
        if (o->dist_ranks > 0)
            printf(", \"ranks\": %d, \"backend\": \"%s\"", o->dist_ranks, o->dist_backend);
        printf("}\n");
        return;
    }

    printf("%-8s = %s\n", op, value);
    printf("bits     = %s\n", bits);
    printf("dtype    = %s   n = %llu%s\n", coopreduce_dtype_name(dtype), (unsigned long long)n,
           result_note);
    printf("input    = %s\n", in->description);
    if (yin != NULL) printf("y        = %s\n", yin->description);
    if (dev->is_gpu)
        printf("device   = gpu:%d (%s)", dev->ordinal, dev->name);
    else
        printf("device   = cpu (%s, %d thread%s)", dev->name, dev->threads,
               dev->threads == 1 ? "" : "s");
    printf("\n");
    if (dev->auto_note[0] != '\0') printf("           (%s)\n", dev->auto_note);
    if (o->dist_ranks > 0)
        printf("ranks    = %d over %s (rank 0's device above; split %s)\n", o->dist_ranks,
               o->dist_backend, o->split_text ? o->split_text : "even");
    if (o->mode == COOPREDUCE_MODE_EXACT)
        printf("method   = %s, mode = exact\n", method);
    else if (!cr_dtype_is_float(dtype) && rk->op == COOPREDUCE_OP_SUM)
        printf("method   = %s, mode = deterministic (integer sums are exact)\n", method);
    else if (o->method == COOPREDUCE_METHOD_CANONICAL)
        printf("method   = canonical (order v%d), mode = deterministic\n",
               coopreduce_order_version());
    else if (res->deterministic)
        printf("method   = %s, mode = deterministic on this GPU (not canonical order v%d: "
               "other GPUs may differ)\n",
               method, coopreduce_order_version());
    else
        printf("method   = %s, mode = nondeterministic (floating-point atomics); here %d run%s "
               "gave %d distinct result%s\n",
               method, res->runs, res->runs == 1 ? "" : "s", res->distinct,
               res->distinct == 1 ? "" : "s");
    if (li != NULL) {
        printf("launch   = %d block%s x %d threads, %d launch%s", li->blocks,
               li->blocks == 1 ? "" : "s", li->threads, li->launches,
               li->launches == 1 ? "" : "es");
        if (li->cooperative) printf(", cooperative");
        if (li->cluster_size > 0) printf(", clusters of %d", li->cluster_size);
        if (li->host_sync) printf(", waits for the GPU");
        if (li->fell_back) printf(", fell back (see the notice)");
        printf("\n");
    }
    if (res->time_us < 1000.0)
        printf("time     = %.1f us", res->time_us);
    else
        printf("time     = %.3f ms", res->time_us * 1e-3);
    printf(" (median of %d), %.1f GB/s\n", o->repeat, gbps);
}
