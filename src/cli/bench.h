/* bench.h — `coopreduce bench` (docs/PERF.md): what its parts share. cmd_bench.c parses the
 * options and prints the tables; bench_cpu.c and bench_gpu.c time; bench_rows.c keeps the rows.
 *
 * Method: uniform random data; three warm-up calls, then B batches of K back-to-back calls between two
 * CUDA events (K sized so a batch lasts about 2 ms); per-call time = batch time / K; the median
 * over batches is reported, with the noise (max - min) / median. The input buffer is reused, so
 * data that fits in L2 is measured hot ("hot-L2", what back-to-back callers see); --cold flushes
 * L2 before every single call and times each call alone. Latency to a host result is host wall
 * time per synchronous call, median of many. On the CPU: host wall time against a streaming
 * read of the same bytes on the same threads.
 *
 * Compare ratios measured in one run, never absolute times across runs or machines (docs/PERF.md,
 * "Method"). */
#ifndef COOPREDUCE_CLI_BENCH_H
#define COOPREDUCE_CLI_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "coopreduce.h"
#include "gen.h"
#include "offsets.h"
#include "shape.h"

#define BENCH_MAX_N      64
#define BENCH_MAX_LIST   32 /* items of --dtype, --op, --mode, --method */
#define BENCH_MAX_STAGES 8
#define BENCH_MAX_ROWS   4096

typedef struct {
    uint64_t ns[BENCH_MAX_N];
    int nn;
    coopreduce_dtype dtypes[BENCH_MAX_LIST];
    int nd;
    coopreduce_op ops[BENCH_MAX_LIST];
    int nops; /* 0: the method sweep, not the operations */
    coopreduce_mode modes[BENCH_MAX_LIST];
    int nmodes;
    cr_gen_kind data[BENCH_MAX_LIST]; /* --data: the generated distributions of --op */
    int ndata, have_data;             /* without --data: uniform alone, dtype column unlabelled */
    coopreduce_method methods[BENCH_MAX_LIST];
    int nm;
    int stages[BENCH_MAX_STAGES]; /* --stages: the pipeline method once per count */
    int nstages;
    int quick, cold, host_latency, extras, batches, threads;
    /* Along an axis (--shape, --axis) or over segments (--segments random:MIN:MAX): each --op
     * through coopreduce_reduce_axis / coopreduce_reduce_segments against the read ceiling. */
    int have_axis, axis; /* axis: 0 <= axis < shape.ndim once checked */
    int have_shape;
    cli_shape shape;
    int have_segments;
    uint64_t seg_min, seg_max;
    /* --offset E (with --op): the arrays start E elements past a 16-byte boundary, as a view
     * such as x[1:] does; dtype column 'float32 +1'. */
    int offset;
} bench_options;

/* One timed library call: coopreduce_reduce over n elements, or along an axis (outer, len,
 * inner), or over segments; result holds every result. */
typedef struct {
    int kind; /* BENCH_CALL_* */
    coopreduce_op op;
    coopreduce_dtype dtype;
    const void *x, *y;
    void *result;
    uint64_t n, outer, len, inner; /* n: also segments' x length */
    const int64_t *offsets; /* host memory on the CPU, device memory on a GPU */
    uint64_t nseg;
} bench_call;
enum { BENCH_CALL_REDUCE, BENCH_CALL_AXIS, BENCH_CALL_SEGMENTS };
coopreduce_status bench_run_call(coopreduce_handle *h, const bench_call *c);
/* "sum/axis1 (1024x256)", "sum/segments (1708 of 1..10000)": the row's method column. */
const char *bench_batch_label(const bench_options *o, coopreduce_op op, coopreduce_mode mode,
                              uint64_t nseg);

typedef struct {
    uint64_t n;
    const char *dtype;
    const char *method;
    const char *kind;  /* "gpu_us" (events) or "host_us" (wall clock, result on the host) */
    double us, noise;  /* median time per call, relative spread */
    double bytes;      /* bytes the call must read (copy: read + write) */
    double ceiling_us; /* the float4 read kernel (or CPU streaming read) on the same bytes */
    double ref_us;     /* CUB (or, for host latency, launch + sync) */
    int det;           /* coopreduce methods: 1/0 = deterministic or not; -1: a baseline */
} bench_row;

/* bench_rows.c */
bench_row *bench_add_row(uint64_t n, const char *dtype, const char *method, const char *kind,
                         double us, double noise, double bytes);
/* A row of a deterministic coopreduce operation, held against the read of ceiling_us; the row,
 * or NULL when the table is full. */
bench_row *bench_add_op_row(uint64_t n, const char *dtype, const char *name, const char *kind,
                            double us, double noise, double bytes, double ceiling_us);
/* "sum" or "sum/exact", kept as long as the rows. */
const char *bench_op_label(coopreduce_op op, coopreduce_mode mode);
/* The dtype column of --op rows: "float32", or "float32 wide" under --data; kept as long as the
 * rows. */
const char *bench_data_label(const bench_options *o, coopreduce_dtype dt, cr_gen_kind kind);
/* After the table: exact against deterministic time of each op, n, dtype (and data) with both
 * rows; nothing when no row is exact. */
void bench_print_exact_ratios(FILE *f);
void bench_set_device_name(const char *name);
double bench_now_us(void);
void bench_median_noise(double *v, int k, double *med, double *noise);
void bench_print_table(FILE *f);
/* --json and --csv (either may be NULL): opened before the run, written after it, each whole
 * or not at all. Each prints its own error; 0 or -1. */
int bench_open_files(const char *json, const char *csv);
int bench_write_files(const char *device);
void bench_abort_files(void);

/* bench_cpu.c: 0, or nonzero after printing an error. */
int bench_cpu(const bench_options *o);
int bench_ops_cpu(const bench_options *o);
int bench_batch_cpu(const bench_options *o);

/* bench_gpu.c: 0, or nonzero after printing an error (always, in a build without CUDA). */
int bench_gpu(int ordinal, const bench_options *o);
int bench_ops_gpu(int ordinal, const bench_options *o);
int bench_batch_gpu(int ordinal, const bench_options *o);

#endif
