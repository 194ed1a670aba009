/* sum.h — `coopreduce sum`: what its parts (cmd_sum.c, sum_run.c, sum_report.c) share. */
#ifndef COOPREDUCE_CLI_SUM_H
#define COOPREDUCE_CLI_SUM_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "coopreduce.h"
#include "device.h"
#include "gen.h"
#include "npy.h"
#include "offsets.h"
#include "outfile.h"
#include "shape.h"

#define SUM_DEFAULT_REPEAT 5
#define SUM_MAX_REPEAT     1000000

typedef struct {
    const char *npy_path; /* "-": standard input */
    const char *y_path;   /* dot's second input: a second positional or --y */
    const char *raw_path;
    int have_gen;
    cr_gen_kind gen_kind;
    int have_n;
    uint64_t n;
    int have_seed;
    uint64_t seed;
    int have_dtype;
    coopreduce_dtype dtype;
    coopreduce_op op;
    coopreduce_mode mode;
    int narrow;
    cli_device_kind device;
    int ordinal;
    const char *device_text;
    int threads;
    int repeat;
    int json;
    uint64_t max_input;
    coopreduce_method method;
    int stages;      /* 0: not given */
    int grid_blocks; /* -1: not given */
    unsigned int disabled_features;
    /* Along an axis or over segments (sum_batch.c). */
    int have_axis;
    int axis; /* as given: negative counts from the end */
    int keepdims;
    const char *segments_path;
    int have_shape; /* --shape, for --gen and --raw */
    cli_shape shape;
    const char *out_path;
    int force;
    /* --distributed mpi|nccl (distributed.c): 0 none, 1 MPI, 2 NCCL; --split n0,n1,... */
    int distributed;
    const char *split_text;
    int dist_ranks;           /* set by the run, for the report: ranks */
    const char *dist_backend; /*   "mpi", "nccl" */
} sum_options;

/* An input and how the report names it. */
typedef struct {
    cr_npy_array array; /* host data, n, dtype, shape */
    char description[1200];
} sum_input;

/* What a reduction returns: coopreduce_op_result_size's answer for the op and input dtype. */
typedef struct {
    coopreduce_op op;
    coopreduce_dtype dtype;  /* the input's */
    coopreduce_dtype rdtype; /* the result's (INT64 / UINT64 for the 16-byte sums too) */
    size_t rsize;            /* 2, 4, 8 or 16 */
} result_kind;

typedef struct {
    unsigned char bits[16]; /* the result, rsize bytes */
    double time_us;
    int deterministic; /* coopreduce_method_deterministic(method, dtype) == 1 */
    int runs;          /* warm-up + repetitions */
    int distinct;      /* distinct results among them (1 unless nondeterministic) */
    int have_launch;   /* GPU: launch holds coopreduce_last_launch() */
    coopreduce_launch_info launch;
    char fallback[600]; /* why --device auto computed on the CPU after all, or "" */
} sum_result;

/* run_sum_gpu's answer when the GPU cannot compute the reduction and the caller may fall
 * back: not an exit status. */
#define RUN_FALLBACK 3

/* sum_run.c. Each prints its own error and returns EXIT_OK or EXIT_ERROR (or RUN_FALLBACK). */
int sum_configure_handle(cli_device *dev, const sum_options *o);
int sum_configure_gpu(cli_device *dev, const sum_options *o);
int sum_run_cpu(cli_device *dev, const result_kind *rk, const cr_npy_array *x,
                const cr_npy_array *y, int repeat, sum_result *res);
/* Frees the host copies of x and y once they are on the GPU, unless it returns RUN_FALLBACK. */
int sum_run_gpu(cli_device *dev, const result_kind *rk, cr_npy_array *x, cr_npy_array *y,
                coopreduce_method method, int repeat, int may_fall_back, sum_result *res);
/* After RUN_FALLBACK: a configured CPU handle in dev's place. */
int sum_fall_back_to_cpu(cli_device *dev, const sum_options *o, const sum_result *res);

/* sum_batch.c: `coopreduce sum --axis K` and `--segments OFFSETS.npy`, many results at once.
 * What the reduction is: the library's view of the memory and the shape of the results. */
typedef struct {
    int is_segments;
    int axis; /* 0 <= axis < ndim */
    cli_shape in_shape;
    int fortran; /* the input is Fortran-ordered, and so are the results */
    uint64_t outer, len, inner;
    cli_shape out_shape;
    cli_segments segments;
    uint64_t n;     /* segments: x's elements */
    uint64_t count; /* results */
} sum_batch;

/* The reduction `o` asks of x (and dot's y): the axis checked against x's shape, or the
 * offsets read and checked against x's length. Prints its own error. */
int sum_batch_prepare(const sum_options *o, const sum_input *x, const sum_input *y, sum_batch *b);
void sum_batch_free(sum_batch *b);
/* Runs it (warm-up and --repeat timed runs, all giving the same bits) and prints the values or
 * the JSON, or writes the .npy to `out` (opened before the inputs were read). Frees x and y.
 * With may_fall_back, a GPU that cannot compute it hands over to the CPU (--device auto).
 * EXIT_OK or EXIT_ERROR, the error printed. */
int sum_batch_run(cli_device *dev, const sum_options *o, const result_kind *rk, const sum_batch *b,
                  cr_npy_array *x, cr_npy_array *y, int may_fall_back, cr_outfile *out);

/* sum_report.c */
const char *sum_result_dtype_name(const result_kind *rk);
void sum_print_report(const sum_options *o, const cli_device *dev, const sum_input *in,
                      const sum_input *yin, const result_kind *rk, uint64_t n,
                      const sum_result *res);
/* 1 when a 16-byte sum of int64 (uint64) fits in the input's 64 bits. */
int sum_result_fits(const result_kind *rk, const unsigned char *bits);

/* Timing helpers of the sum command's --time runs (sum_run.c): a monotonic clock in
 * microseconds, and the median of count values (sorts them in place). */
double sum_clock_us(void);
double sum_median(double *values, int count);

#endif
