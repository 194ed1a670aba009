/* sum_run.c — `coopreduce sum` on the device: configuring the handle, the timed repetitions on
 * the CPU or the GPU, and the checks that every repetition of a deterministic method agrees. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/dtype.h"
#include "format.h"
#include "gpu_buffers.h"
#include "messages.h"
#include "sum.h"

double sum_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sum_median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare_doubles);
    if (count % 2 == 1) return values[count / 2];
    return 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

static int check_repetition(const unsigned char *first, const unsigned char *bits, size_t size,
                            int repetition)
{
    if (memcmp(first, bits, size) == 0) return EXIT_OK;
    char a[40], b[40];
    cli_format_bits(first, size, a, sizeof a);
    cli_format_bits(bits, size, b, sizeof b);
    cli_error("determinism violated: repetition %d gave %s, the warm-up gave %s "
              "(a coopreduce bug: please report it)",
              repetition, b, a);
    return EXIT_ERROR;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Distinct values among results[0..count) (sorts them). */
static int count_distinct(uint64_t *results, int count)
{
    qsort(results, (size_t)count, sizeof *results, compare_u64);
    int distinct = count > 0;
    for (int k = 1; k < count; k++) distinct += results[k] != results[k - 1];
    return distinct;
}

/* A 64-bit key of a result (the 16-byte sums folded), for counting distinct results. */
static uint64_t result_key(const unsigned char *bits, size_t size)
{
    uint64_t w[2] = {0, 0};
    memcpy(w, bits, size);
    return w[0] ^ w[1] * UINT64_C(0x9e3779b97f4a7c15);
}

/* OVERFLOW still writes the exact 128-bit sum: the report prints it, then says it does not fit. */
static int reduce_ok(coopreduce_status st)
{
    return st == COOPREDUCE_SUCCESS || st == COOPREDUCE_ERROR_OVERFLOW;
}

static void print_reduce_failure(const cli_device *dev, const result_kind *rk, coopreduce_status st)
{
    cli_error("%s failed: %s", coopreduce_op_name(rk->op), cli_library_message(dev->handle, st));
}

int sum_run_cpu(cli_device *dev, const result_kind *rk, const cr_npy_array *x,
                const cr_npy_array *y, int repeat, sum_result *res)
{
    size_t size = rk->rsize;
    const void *yd = y != NULL ? y->data : NULL;
    unsigned char first[16], bits[16];
    double *times = malloc(sizeof *times * (size_t)repeat);
    if (times == NULL) {
        cli_error("out of memory");
        return EXIT_ERROR;
    }
    int rc = EXIT_ERROR;
    coopreduce_status st =
        coopreduce_reduce(rk->op, x->data, yd, first, x->n, x->dtype, dev->handle, NULL);
    if (!reduce_ok(st)) {
        print_reduce_failure(dev, rk, st);
        goto done;
    }
    for (int r = 0; r < repeat; r++) {
        double t0 = sum_clock_us();
        st = coopreduce_reduce(rk->op, x->data, yd, bits, x->n, x->dtype, dev->handle, NULL);
        double t1 = sum_clock_us();
        if (!reduce_ok(st)) {
            print_reduce_failure(dev, rk, st);
            goto done;
        }
        if (check_repetition(first, bits, size, r + 1) != EXIT_OK) goto done;
        times[r] = t1 - t0;
    }
    memcpy(res->bits, first, size);
    res->time_us = sum_median(times, repeat);
    res->deterministic = 1; /* the CPU computes the canonical order only */
    res->runs = repeat + 1;
    res->distinct = 1;
    rc = EXIT_OK;
done:
    free(times);
    return rc;
}

/* The mode and narrowing of `o`, on any handle. */
int sum_configure_handle(cli_device *dev, const sum_options *o)
{
    coopreduce_status st = coopreduce_set_mode(dev->handle, o->mode);
    if (st != COOPREDUCE_SUCCESS) {
        cli_error("--mode %s: %s", coopreduce_mode_name(o->mode),
                  cli_library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    st = coopreduce_set_narrow_result(dev->handle, o->narrow);
    if (st != COOPREDUCE_SUCCESS) {
        cli_error("--narrow: %s", cli_library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* The method and launch settings of `o` applied to a GPU handle. */
int sum_configure_gpu(cli_device *dev, const sum_options *o)
{
    coopreduce_status st = coopreduce_set_method(dev->handle, o->method);
    if (st != COOPREDUCE_SUCCESS) {
        cli_error("cannot select method %s: %s", coopreduce_method_name(o->method),
                  cli_library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    if (o->stages > 0 &&
        (st = coopreduce_set_stages(dev->handle, o->stages)) != COOPREDUCE_SUCCESS) {
        cli_error("--stages %d: %s", o->stages, cli_library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    if (o->disabled_features != 0 &&
        (st = coopreduce_disable_features(dev->handle, o->disabled_features)) !=
            COOPREDUCE_SUCCESS) {
        cli_error("cannot disable GPU features: %s", cli_library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    if (o->grid_blocks >= 0 &&
        (st = coopreduce_set_grid_blocks(dev->handle, o->grid_blocks)) != COOPREDUCE_SUCCESS) {
        cli_error("--grid-blocks %d: %s", o->grid_blocks, cli_library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* One GPU reduction into d_result, which is first filled with `fill` bytes, timed with `timer`;
 * the result lands in out. With may_fall_back, NOT_SUPPORTED returns RUN_FALLBACK quietly, the
 * library's reason in res->fallback. */
static int gpu_sum_once(cli_device *dev, const result_kind *rk, const void *d_x, const void *d_y,
                        void *d_result, uint64_t n, int fill, cli_gpu_timer *timer, double *us,
                        unsigned char *out, int may_fall_back, sum_result *res)
{
    char err[ERRLEN];
    if (cli_gpu_memset(d_result, fill, 16, err, sizeof err) != 0 ||
        cli_gpu_timer_start(timer, err, sizeof err) != 0) {
        cli_error("GPU %d: %s", dev->ordinal, err);
        return EXIT_ERROR;
    }
    coopreduce_status st =
        coopreduce_reduce(rk->op, d_x, d_y, d_result, n, rk->dtype, dev->handle, NULL);
    if (st == COOPREDUCE_ERROR_NOT_SUPPORTED) {
        if (may_fall_back) {
            snprintf(res->fallback, sizeof res->fallback, "gpu:%d (%s) cannot compute %s of %s: %s",
                     dev->ordinal, dev->name, coopreduce_op_name(rk->op),
                     coopreduce_dtype_name(rk->dtype), cli_library_message(dev->handle, st));
            return RUN_FALLBACK;
        }
        cli_error("gpu:%d (%s) cannot compute %s of %s: %s", dev->ordinal, dev->name,
                  coopreduce_op_name(rk->op), coopreduce_dtype_name(rk->dtype),
                  cli_library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    if (!reduce_ok(st)) {
        print_reduce_failure(dev, rk, st);
        return EXIT_ERROR;
    }
    if (cli_gpu_timer_stop(timer, us, err, sizeof err) != 0 ||
        cli_gpu_memcpy_d2h(out, d_result, rk->rsize, err, sizeof err) != 0) {
        cli_error("GPU %d: %s", dev->ordinal, err);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* Copies the data to the GPU once (untimed), then times each repetition with CUDA events around
 * coopreduce_reduce on the default stream. The host copies are freed after the warm-up, so that
 * multi-GB inputs give their memory back, yet a warm-up the GPU cannot compute (NOT_SUPPORTED,
 * with may_fall_back) returns RUN_FALLBACK with the host data intact. A method that is not
 * deterministic for the dtype may give different bits from run to run: the warm-up's are
 * reported, and how many distinct results the runs gave. */
int sum_run_gpu(cli_device *dev, const result_kind *rk, cr_npy_array *x, cr_npy_array *y,
                coopreduce_method method, int repeat, int may_fall_back, sum_result *res)
{
    char err[ERRLEN];
    size_t elem = coopreduce_dtype_size(x->dtype);
    size_t bytes = (size_t)x->n * elem;
    uint64_t n = x->n;
    size_t size = rk->rsize;
    int int_result = !cr_dtype_is_float(rk->rdtype);
    int deterministic = coopreduce_method_deterministic(method, x->dtype) == 1;
    void *d_x = NULL, *d_y = NULL, *d_result = NULL;
    cli_gpu_timer *timer = NULL;
    double *times = malloc(sizeof *times * (size_t)repeat);
    uint64_t *results = malloc(sizeof *results * ((size_t)repeat + 1));
    unsigned char first[16], bits[16];
    int rc = EXIT_ERROR;
    coopreduce_status st;

    if (times == NULL || results == NULL) {
        cli_error("out of memory");
        goto done;
    }
    if (cli_gpu_set_device(dev->ordinal, err, sizeof err) != 0 ||
        /* Never a zero-byte allocation: an empty sum still gets a real device pointer. */
        cli_gpu_malloc(&d_x, bytes > 256 ? bytes : 256, err, sizeof err) != 0 ||
        cli_gpu_malloc(&d_result, 16, err, sizeof err) != 0 ||
        cli_gpu_memcpy_h2d(d_x, x->data, bytes, err, sizeof err) != 0 ||
        (y != NULL && (cli_gpu_malloc(&d_y, bytes > 256 ? bytes : 256, err, sizeof err) != 0 ||
                       cli_gpu_memcpy_h2d(d_y, y->data, bytes, err, sizeof err) != 0))) {
        cli_error("GPU %d: %s", dev->ordinal, err);
        goto done;
    }

    st = coopreduce_reserve(dev->handle, n, x->dtype);
    if (st != COOPREDUCE_SUCCESS) {
        cli_error("cannot reserve the GPU workspace: %s", cli_library_message(dev->handle, st));
        goto done;
    }
    if (cli_gpu_timer_create(&timer, err, sizeof err) != 0) {
        cli_error("GPU %d: %s", dev->ordinal, err);
        goto done;
    }

    /* The untimed warm-up. The result is first filled with a sentinel: all bits set, which a
     * float result never is (its only NaN is the canonical one), so a result the GPU failed to
     * write cannot pass for a repeatable one. An integer result can be all ones (-1, or the
     * largest unsigned value): then a second run over a zero fill must give it again. */
    static const unsigned char all_ones[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                               0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    double us = 0.0;
    rc = gpu_sum_once(dev, rk, d_x, d_y, d_result, n, 0xff, timer, &us, first, may_fall_back, res);
    if (rc != EXIT_OK) goto done; /* RUN_FALLBACK included: the host data is still there */
    rc = EXIT_ERROR;
    if (memcmp(first, all_ones, size) == 0) {
        int written = 0;
        if (int_result) {
            if (gpu_sum_once(dev, rk, d_x, d_y, d_result, n, 0x00, timer, &us, bits, 0, res) !=
                EXIT_OK)
                goto done;
            written = memcmp(bits, all_ones, size) == 0;
        }
        if (!written) {
            cli_error("the GPU %s returned without writing its result (a coopreduce bug: "
                      "please report it)",
                      coopreduce_op_name(rk->op));
            goto done;
        }
    }
    /* The host copies are no longer needed; with multi-GB inputs, give the memory back now. */
    cr_npy_free(x);
    if (y != NULL) cr_npy_free(y);
    st = coopreduce_last_launch(dev->handle, &res->launch);
    if (st != COOPREDUCE_SUCCESS) {
        cli_error("cannot read the launch information: %s", cli_library_message(dev->handle, st));
        goto done;
    }
    res->launch.notice[sizeof res->launch.notice - 1] = '\0';
    res->have_launch = 1;
    results[0] = result_key(first, size);

    for (int r = 1; r <= repeat; r++) {
        /* Integers: alternate the fill, so that an unwritten result shows up as a difference. */
        int fill = int_result && r % 2 == 1 ? 0x00 : 0xff;
        if (gpu_sum_once(dev, rk, d_x, d_y, d_result, n, fill, timer, &us, bits, 0, res) != EXIT_OK)
            goto done;
        if (deterministic && check_repetition(first, bits, size, r) != EXIT_OK) goto done;
        results[r] = result_key(bits, size);
        times[r - 1] = us;
    }
    memcpy(res->bits, first, size);
    res->time_us = sum_median(times, repeat);
    res->deterministic = deterministic;
    res->runs = repeat + 1;
    res->distinct = count_distinct(results, repeat + 1);
    rc = EXIT_OK;
done:
    cli_gpu_timer_destroy(timer);
    cli_gpu_free(d_result);
    cli_gpu_free(d_y);
    cli_gpu_free(d_x);
    free(results);
    free(times);
    return rc;
}

/* After the GPU said it cannot compute the reduction: a CPU handle in dev's place. */
int sum_fall_back_to_cpu(cli_device *dev, const sum_options *o, const sum_result *res)
{
    coopreduce_destroy(dev->handle);
    dev->handle = NULL;
    if (cli_open_cpu(dev, o->threads) != EXIT_OK) return EXIT_ERROR;
    snprintf(dev->auto_note, sizeof dev->auto_note, "--device auto fell back to the CPU: %.500s",
             res->fallback);
    return sum_configure_handle(dev, o);
}
