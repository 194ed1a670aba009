/* sum_batch.c — `coopreduce sum --axis K` and `--segments OFFSETS.npy`: many reductions in one
 * library call (coopreduce_reduce_axis, coopreduce_reduce_segments), each the 1-D reduction of
 * its own values; the results printed one per line, as JSON arrays, or written to a .npy file. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/dtype.h"
#include "format.h"
#include "gpu_buffers.h"
#include "messages.h"
#include "sum.h"

static void shape_of(const cr_npy_array *a, cli_shape *s)
{
    s->ndim = a->ndim;
    for (int d = 0; d < a->ndim && d < CLI_MAX_DIMS; d++) s->extent[d] = a->shape[d];
}

int sum_batch_prepare(const sum_options *o, const sum_input *x, const sum_input *y, sum_batch *b)
{
    memset(b, 0, sizeof *b);
    shape_of(&x->array, &b->in_shape); /* extents beyond ndim stay 0, for comparisons */
    if (o->segments_path != NULL) {
        b->is_segments = 1;
        if (y != NULL && y->array.n != x->array.n) return EXIT_ERROR; /* check_dot_inputs says */
        if (cli_read_segments(o->segments_path, x->array.n, &b->segments) != EXIT_OK)
            return EXIT_ERROR;
        b->n = x->array.n;
        b->count = b->segments.nseg;
        b->out_shape.ndim = 1;
        b->out_shape.extent[0] = b->count;
        return EXIT_OK;
    }
    int ndim = x->array.ndim, axis = o->axis;
    char shape[700];
    cli_format_shape(&b->in_shape, shape, sizeof shape);
    if (axis < -ndim || axis >= ndim) {
        cli_error("--axis %d is out of range for an array of %d dimension%s, shape %s (axis from "
                  "%d to %d)",
                  axis, ndim, ndim == 1 ? "" : "s", shape, -ndim, ndim - 1);
        return EXIT_USAGE;
    }
    b->axis = axis < 0 ? axis + ndim : axis;
    if (y != NULL) {
        cli_shape ys;
        memset(&ys, 0, sizeof ys);
        shape_of(&y->array, &ys);
        if (ys.ndim != ndim || memcmp(ys.extent, b->in_shape.extent, sizeof ys.extent) != 0 ||
            y->array.fortran_order != x->array.fortran_order) {
            char yshape[700];
            cli_format_shape(&ys, yshape, sizeof yshape);
            cli_error("dot along an axis needs two arrays of the same shape and order: x is %s%s, "
                      "y is %s%s",
                      shape, x->array.fortran_order ? " (Fortran order)" : "", yshape,
                      y->array.fortran_order ? " (Fortran order)" : "");
            return EXIT_ERROR;
        }
    }
    b->fortran = x->array.fortran_order;
    cli_axis_view(&b->in_shape, b->fortran, b->axis, o->keepdims, &b->outer, &b->len, &b->inner,
                  &b->out_shape);
    if (__builtin_mul_overflow(b->outer, b->inner, &b->count)) {
        cli_error("the result of shape %s along axis %d has too many elements", shape, b->axis);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

void sum_batch_free(sum_batch *b)
{
    free(b->segments.offsets);
    b->segments.offsets = NULL;
}

/* ---------------------------------------------------------------- running */

static int reduce_ok(coopreduce_status st)
{
    /* OVERFLOW still writes every exact 128-bit sum: the conversion names the first. */
    return st == COOPREDUCE_SUCCESS || st == COOPREDUCE_ERROR_OVERFLOW;
}

static coopreduce_status call(const cli_device *dev, const result_kind *rk, const sum_batch *b,
                              const void *x, const void *y, void *result, const int64_t *offsets)
{
    if (b->is_segments)
        return coopreduce_reduce_segments(rk->op, x, y, result, b->n, offsets, b->segments.nseg,
                                          rk->dtype, dev->handle, NULL);
    return coopreduce_reduce_axis(rk->op, x, y, result, b->outer, b->len, b->inner, rk->dtype,
                                  dev->handle, NULL);
}

static void print_failure(const cli_device *dev, const result_kind *rk, const sum_batch *b,
                          coopreduce_status st)
{
    if (b->is_segments)
        cli_error("%s over segments failed: %s", coopreduce_op_name(rk->op),
                  cli_library_message(dev->handle, st));
    else
        cli_error("%s along axis %d failed: %s", coopreduce_op_name(rk->op), b->axis,
                  cli_library_message(dev->handle, st));
}

/* Every repetition gives the warm-up's bits, result by result. */
static int check_repetition(const result_kind *rk, const unsigned char *first,
                            const unsigned char *bits, uint64_t count, int repetition)
{
    size_t rs = rk->rsize;
    if (memcmp(first, bits, (size_t)count * rs) == 0) return EXIT_OK;
    uint64_t k = 0;
    while (memcmp(first + k * rs, bits + k * rs, rs) == 0) k++;
    char a[40], c[40];
    cli_format_bits(first + k * rs, rs, a, sizeof a);
    cli_format_bits(bits + k * rs, rs, c, sizeof c);
    cli_error("determinism violated: repetition %d gave %s for result %llu, the warm-up gave %s "
              "(a coopreduce bug: please report it)",
              repetition, c, (unsigned long long)k, a);
    return EXIT_ERROR;
}

typedef struct {
    unsigned char *bits; /* count * rsize */
    double time_us;
    char fallback[600];
} batch_result;

static int run_cpu(cli_device *dev, const result_kind *rk, const sum_batch *b,
                   const cr_npy_array *x, const cr_npy_array *y, int repeat, batch_result *res)
{
    size_t bytes = (size_t)b->count * rk->rsize;
    unsigned char *again = malloc(bytes > 0 ? bytes : 1);
    double *times = malloc(sizeof *times * (size_t)repeat);
    int rc = EXIT_ERROR;
    if (again == NULL || times == NULL) {
        cli_error("out of memory for %llu results", (unsigned long long)b->count);
        goto done;
    }
    const void *yd = y != NULL ? y->data : NULL;
    coopreduce_status st = call(dev, rk, b, x->data, yd, res->bits, b->segments.offsets);
    if (!reduce_ok(st)) {
        print_failure(dev, rk, b, st);
        goto done;
    }
    for (int r = 0; r < repeat; r++) {
        double t0 = sum_clock_us();
        st = call(dev, rk, b, x->data, yd, again, b->segments.offsets);
        times[r] = sum_clock_us() - t0;
        if (!reduce_ok(st)) {
            print_failure(dev, rk, b, st);
            goto done;
        }
        if (check_repetition(rk, res->bits, again, b->count, r + 1) != EXIT_OK) goto done;
    }
    res->time_us = sum_median(times, repeat);
    rc = EXIT_OK;
done:
    free(again);
    free(times);
    return rc;
}

/* The data copied to the GPU once (untimed), then a warm-up and `repeat` calls timed with CUDA
 * events on the default stream. The result buffer is filled with all ones before the warm-up
 * and with zeros before the first repetition, so that a result left unwritten shows up as a
 * difference. RUN_FALLBACK (may_fall_back) when the GPU cannot compute it: the host data stays. */
static int run_gpu(cli_device *dev, const result_kind *rk, const sum_batch *b,
                   const cr_npy_array *x, const cr_npy_array *y, int repeat, int may_fall_back,
                   batch_result *res)
{
    char err[ERRLEN];
    size_t xbytes = (size_t)x->n * coopreduce_dtype_size(x->dtype);
    size_t rbytes = (size_t)b->count * rk->rsize;
    size_t obytes = b->is_segments ? sizeof(int64_t) * (size_t)(b->segments.nseg + 1) : 0;
    void *d_x = NULL, *d_y = NULL, *d_r = NULL, *d_off = NULL;
    cli_gpu_timer *timer = NULL;
    unsigned char *again = malloc(rbytes > 0 ? rbytes : 1);
    double *times = malloc(sizeof *times * (size_t)repeat);
    int rc = EXIT_ERROR;
    if (again == NULL || times == NULL) {
        cli_error("out of memory for %llu results", (unsigned long long)b->count);
        goto done;
    }
    /* Never a zero-byte allocation: empty inputs and results still get real device pointers. */
    if (cli_gpu_set_device(dev->ordinal, err, sizeof err) != 0 ||
        cli_gpu_malloc(&d_x, xbytes > 256 ? xbytes : 256, err, sizeof err) != 0 ||
        cli_gpu_malloc(&d_r, rbytes > 256 ? rbytes : 256, err, sizeof err) != 0 ||
        cli_gpu_memcpy_h2d(d_x, x->data, xbytes, err, sizeof err) != 0 ||
        (y != NULL && (cli_gpu_malloc(&d_y, xbytes > 256 ? xbytes : 256, err, sizeof err) != 0 ||
                       cli_gpu_memcpy_h2d(d_y, y->data, xbytes, err, sizeof err) != 0)) ||
        (obytes > 0 &&
         (cli_gpu_malloc(&d_off, obytes, err, sizeof err) != 0 ||
          cli_gpu_memcpy_h2d(d_off, b->segments.offsets, obytes, err, sizeof err) != 0)) ||
        cli_gpu_timer_create(&timer, err, sizeof err) != 0) {
        cli_error("GPU %d: %s", dev->ordinal, err);
        goto done;
    }
    for (int r = 0; r <= repeat; r++) {
        double us = 0.0;
        if (cli_gpu_memset(d_r, r % 2 == 0 ? 0xff : 0x00, rbytes > 256 ? rbytes : 256, err,
                           sizeof err) != 0 ||
            cli_gpu_timer_start(timer, err, sizeof err) != 0) {
            cli_error("GPU %d: %s", dev->ordinal, err);
            goto done;
        }
        coopreduce_status st = call(dev, rk, b, d_x, d_y, d_r, d_off);
        if (st == COOPREDUCE_ERROR_NOT_SUPPORTED && r == 0 && may_fall_back) {
            snprintf(res->fallback, sizeof res->fallback, "gpu:%d (%s) cannot compute %s of %s: %s",
                     dev->ordinal, dev->name, coopreduce_op_name(rk->op),
                     coopreduce_dtype_name(rk->dtype), cli_library_message(dev->handle, st));
            rc = RUN_FALLBACK;
            goto done;
        }
        if (!reduce_ok(st)) {
            print_failure(dev, rk, b, st);
            goto done;
        }
        /* What the GPU found wrong with the offsets, if it checked them */
        if (!reduce_ok(st = coopreduce_synchronize(dev->handle, NULL))) {
            print_failure(dev, rk, b, st);
            goto done;
        }
        unsigned char *dst = r == 0 ? res->bits : again;
        if (cli_gpu_timer_stop(timer, &us, err, sizeof err) != 0 ||
            cli_gpu_memcpy_d2h(dst, d_r, rbytes, err, sizeof err) != 0) {
            cli_error("GPU %d: %s", dev->ordinal, err);
            goto done;
        }
        if (r > 0) {
            if (check_repetition(rk, res->bits, again, b->count, r) != EXIT_OK) goto done;
            times[r - 1] = us;
        }
    }
    res->time_us = sum_median(times, repeat);
    rc = EXIT_OK;
done:
    cli_gpu_timer_destroy(timer);
    cli_gpu_free(d_off);
    cli_gpu_free(d_y);
    cli_gpu_free(d_r);
    cli_gpu_free(d_x);
    free(again);
    free(times);
    return rc;
}

/* ---------------------------------------------------------------- results */

/* The 128-bit integer sums become int64 / uint64 in place (8 bytes each); the first that does
 * not fit is an error naming it and its exact value. */
static int narrow_int128(const result_kind *rk, const sum_batch *b, unsigned char *bits)
{
    for (uint64_t k = 0; k < b->count; k++) {
        uint64_t w[2];
        memcpy(w, bits + 16 * k, 16);
        int fits =
            rk->rdtype == COOPREDUCE_UINT64 ? w[1] == 0 : w[1] == ((w[0] >> 63) ? UINT64_MAX : 0);
        if (!fits) {
            char value[64];
            cli_format_int128(w, rk->rdtype == COOPREDUCE_INT64, value, sizeof value);
            cli_error("the exact %s sum of %s %llu is %s, which does not fit in %s (the results "
                      "of %s sums are written as %s)",
                      coopreduce_dtype_name(rk->dtype), b->is_segments ? "segment" : "result",
                      (unsigned long long)k, value, coopreduce_dtype_name(rk->rdtype),
                      coopreduce_dtype_name(rk->dtype), coopreduce_dtype_name(rk->rdtype));
            return EXIT_ERROR;
        }
        memcpy(bits + 8 * k, &w[0], 8);
    }
    return EXIT_OK;
}

static void print_json(const cli_device *dev, const sum_options *o, const result_kind *rk,
                       const sum_batch *b, uint64_t n, const unsigned char *bits, size_t rs,
                       const batch_result *res)
{
    char value[64], hex[40];
    const char *device_name = dev->name;
    double bytes = (double)n * (double)coopreduce_dtype_size(rk->dtype) *
                   (rk->op == COOPREDUCE_OP_DOT ? 2.0 : 1.0);
    double gbps = res->time_us > 0.0 ? bytes / (res->time_us * 1e3) : 0.0;
    if (o->out_path == NULL) {
        printf("{\"values\": [");
        for (uint64_t k = 0; k < b->count; k++) {
            cli_format_value(bits + k * rs, rk->rdtype, rs, value, sizeof value);
            printf("%s\"%s\"", k ? ", " : "", value);
        }
        printf("], \"bits\": [");
        for (uint64_t k = 0; k < b->count; k++) {
            cli_format_bits(bits + k * rs, rs, hex, sizeof hex);
            printf("%s\"%s\"", k ? ", " : "", hex);
        }
        printf("], ");
    } else {
        printf("{\"out\": ");
        cli_print_json_string(stdout, o->out_path);
        printf(", ");
    }
    printf("\"count\": %llu, \"result_shape\": [", (unsigned long long)b->count);
    for (int d = 0; d < b->out_shape.ndim; d++)
        printf("%s%llu", d ? ", " : "", (unsigned long long)b->out_shape.extent[d]);
    printf("], \"fortran_order\": %s, ", b->fortran && b->out_shape.ndim >= 2 ? "true" : "false");
    if (b->is_segments)
        printf("\"segments\": %llu, ", (unsigned long long)b->segments.nseg);
    else
        printf("\"axis\": %d, \"keepdims\": %s, ", b->axis, o->keepdims ? "true" : "false");
    printf("\"shape\": [");
    for (int d = 0; d < b->in_shape.ndim; d++)
        printf("%s%llu", d ? ", " : "", (unsigned long long)b->in_shape.extent[d]);
    printf("], \"dtype\": \"%s\", \"op\": \"%s\", \"result_dtype\": \"%s\", \"n\": %llu, "
           "\"device\": ",
           coopreduce_dtype_name(rk->dtype), coopreduce_op_name(rk->op),
           coopreduce_dtype_name(rk->rdtype), (unsigned long long)n);
    if (dev->is_gpu)
        printf("\"gpu:%d\"", dev->ordinal);
    else
        printf("\"cpu\"");
    printf(", \"device_name\": ");
    cli_print_json_string(stdout, device_name);
    printf(", \"method\": \"canonical\", \"deterministic\": true, \"mode\": \"%s\", "
           "\"order_version\": %d, \"time_us\": %.3f, \"gbps\": %.3f, \"repeat\": %d, "
           "\"threads\": ",
           coopreduce_mode_name(o->mode), coopreduce_order_version(), res->time_us, gbps,
           o->repeat);
    if (dev->is_gpu)
        printf("null}\n");
    else
        printf("%d}\n", dev->threads);
}

/* The results as a .npy file of the result type and shape; a Fortran-ordered input's results
 * of two or more dimensions lie in Fortran order, and the header says so. */
static int write_npy(const sum_options *o, const result_kind *rk, const sum_batch *b,
                     const unsigned char *bits, cr_outfile *out)
{
    char err[ERRLEN];
    int fortran = b->fortran && b->out_shape.ndim >= 2;
    if (cr_npy_write_stream_shape(out->f, o->out_path, bits, b->out_shape.ndim, b->out_shape.extent,
                                  fortran, rk->rdtype, err, sizeof err) != 0) {
        cr_outfile_abort(out);
        cli_error("%s", err);
        return EXIT_ERROR;
    }
    FILE *report = cr_outfile_is_stdout(out) ? stderr : stdout;
    if (cr_outfile_commit(out, o->out_path, err, sizeof err) != 0) {
        cli_error("%s", err);
        return EXIT_ERROR;
    }
    if (o->json) return EXIT_OK;
    char shape[700], what[800];
    cli_format_shape(&b->out_shape, shape, sizeof shape);
    if (b->is_segments)
        snprintf(what, sizeof what, "over %llu segments", (unsigned long long)b->segments.nseg);
    else
        snprintf(what, sizeof what, "along axis %d", b->axis);
    fprintf(report, "wrote %llu %s results (%s %s, shape %s%s) to %s\n",
            (unsigned long long)b->count, coopreduce_dtype_name(rk->rdtype),
            coopreduce_op_name(rk->op), what, shape, fortran ? ", Fortran order" : "", o->out_path);
    return EXIT_OK;
}

int sum_batch_run(cli_device *dev, const sum_options *o, const result_kind *rk, const sum_batch *b,
                  cr_npy_array *x, cr_npy_array *y, int may_fall_back, cr_outfile *out)
{
    batch_result res;
    memset(&res, 0, sizeof res);
    uint64_t n = x->n;
    size_t bytes = (size_t)b->count * rk->rsize;
    res.bits = malloc(bytes > 0 ? bytes : 1);
    int rc;
    if (res.bits == NULL) {
        cli_error("out of memory for %llu results", (unsigned long long)b->count);
        rc = EXIT_ERROR;
    } else if (dev->is_gpu) {
        rc = run_gpu(dev, rk, b, x, y, o->repeat, may_fall_back, &res);
        if (rc == RUN_FALLBACK) {
            sum_result fell;
            memcpy(fell.fallback, res.fallback, sizeof fell.fallback);
            rc = sum_fall_back_to_cpu(dev, o, &fell);
            if (rc == EXIT_OK) rc = run_cpu(dev, rk, b, x, y, o->repeat, &res);
        }
    } else {
        rc = run_cpu(dev, rk, b, x, y, o->repeat, &res);
    }
    cr_npy_free(x);
    if (y != NULL) cr_npy_free(y);
    size_t rs = rk->rsize;
    if (rc == EXIT_OK && rs == 16) {
        rc = narrow_int128(rk, b, res.bits);
        rs = 8;
    }
    if (rc == EXIT_OK) {
        if (res.fallback[0] != '\0')
            cli_error("notice: %s; --device auto computed it on the CPU", res.fallback);
        else if (dev->auto_note[0] != '\0' && o->json)
            cli_error("note: %s", dev->auto_note);
        if (o->out_path != NULL) rc = write_npy(o, rk, b, res.bits, out);
        if (rc == EXIT_OK && o->json) {
            print_json(dev, o, rk, b, n, res.bits, rs, &res);
        } else if (rc == EXIT_OK && o->out_path == NULL) {
            char value[64];
            for (uint64_t k = 0; k < b->count; k++) {
                cli_format_value(res.bits + k * rs, rk->rdtype, rs, value, sizeof value);
                printf("%s\n", value);
            }
        }
    }
    if (rc != EXIT_OK && o->out_path != NULL) cr_outfile_abort(out);
    free(res.bits);
    return rc;
}
