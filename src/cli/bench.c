/* bench.c — `coopreduce bench`: coopreduce against CUB and the hardware, in one run.
 *
 * Method (docs/PERF.md): uniform random data; one warm-up, then B batches of K back-to-back
 * calls between two CUDA events (K sized so a batch lasts about 2 ms); per-call time = batch
 * time / K; the median over batches is reported, with the noise (max - min) / median. The input
 * buffer is reused, so data that fits in L2 is measured hot ("hot-L2", what back-to-back callers
 * see); --cold flushes L2 before every single call and times each call alone. Latency to a host
 * result is host wall time per synchronous call, median of many.
 *
 * Ratios, never absolutes, are what to compare: the lent GPU differs from day to day. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>
#include "bench.h"
#include "coopreduce.h"
#include "gen.h"
#ifdef COOPREDUCE_HAVE_CUDA
#include <cuda_runtime_api.h>
int cr_bl_empty(void *stream);
int cr_bl_read(const void *x, uint64_t bytes, float *out, int blocks, void *stream);
int cr_bl_cub_sum(int dtype, const void *x, void *out, uint64_t n, void *temp, size_t *temp_bytes,
                  void *stream);
#endif

#define MAX_N_LIST 64
#define MAX_ROWS 4096

typedef struct {
    uint64_t n;
    const char *dtype;
    const char *method;
    const char *kind;   /* "gpu_us" (events) or "host_us" (wall clock, result on the host) */
    double us, noise;   /* median time per call, relative spread */
    double bytes;       /* bytes the call must read (copy: read + write) */
    double ceiling_us;  /* the float4 read kernel (or CPU streaming read) on the same bytes */
    double ref_us;      /* CUB (or, for host latency, launch + sync) */
    int det;            /* coopreduce methods: 1/0 = deterministic or not; -1: a baseline */
} row_t;

static row_t rows[MAX_ROWS];
static int nrows;
static char device_name[300]; /* the GPU's name, for the JSON file */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void median_noise(double *v, int k, double *med, double *noise)
{
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    *med = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
    *noise = *med > 0 ? (v[k - 1] - v[0]) / *med : 0;
}

static row_t *add_row(uint64_t n, const char *dtype, const char *method, const char *kind,
                      double us, double noise, double bytes)
{
    if (nrows >= MAX_ROWS) return NULL;
    row_t *r = &rows[nrows++];
    *r = (row_t){n, dtype, method, kind, us, noise, bytes, 0, 0, -1};
    return r;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (s[0] == '2' && s[1] == '^') {
        unsigned long e = strtoul(s + 2, &end, 10);
        if (*end || e > 40) return -1;
        *out = 1ull << e;
        return 0;
    }
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end) return -1;
    *out = v;
    return 0;
}

static int parse_n_list(const char *s, uint64_t *list, int *count)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s);
    *count = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*count >= MAX_N_LIST || parse_u64(tok, &list[*count]) || list[*count] == 0) return -1;
        (*count)++;
    }
    return *count ? 0 : -1;
}

/* ------------------------------------------------------------------------------------ output */
static void print_table(FILE *f)
{
    fprintf(f, "| N | bytes | dtype | method | deterministic | timing | median us | noise %% | GB/s | %% of ceiling | x CUB |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nrows; i++) {
        row_t *r = &rows[i];
        char ceil_s[32] = "", ref_s[32] = "", gbs[32] = "";
        if (r->bytes > 0) snprintf(gbs, sizeof gbs, "%.0f", r->bytes / (r->us * 1e3));
        if (r->ceiling_us > 0) snprintf(ceil_s, sizeof ceil_s, "%.1f", 100.0 * r->ceiling_us / r->us);
        if (r->ref_us > 0) snprintf(ref_s, sizeof ref_s, "%.2f", r->ref_us / r->us);
        fprintf(f, "| %llu | %.0f | %s | %s | %s | %s | %.2f | %.1f | %s | %s | %s |\n",
                (unsigned long long)r->n, r->bytes, r->dtype, r->method,
                r->det < 0 ? "" : r->det ? "yes" : "no", r->kind, r->us, 100 * r->noise, gbs,
                ceil_s, ref_s);
    }
}

static int write_files(const char *json, const char *csv, const char *device)
{
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) { fprintf(stderr, "coopreduce: cannot write %s\n", json); return -1; }
        fprintf(f, "{\"device\": \"%s\", \"device_name\": \"%s\", \"rows\": [\n", device,
                device_name);
        for (int i = 0; i < nrows; i++) {
            row_t *r = &rows[i];
            fprintf(f, "  {\"n\": %llu, \"dtype\": \"%s\", \"method\": \"%s\", \"timing\": \"%s\", "
                       "\"median_us\": %.4f, \"noise\": %.4f, \"bytes\": %.0f, \"ceiling_us\": %.4f, "
                       "\"ref_us\": %.4f, \"deterministic\": %s}%s\n",
                    (unsigned long long)r->n, r->dtype, r->method, r->kind, r->us, r->noise,
                    r->bytes, r->ceiling_us, r->ref_us,
                    r->det < 0 ? "null" : r->det ? "true" : "false", i + 1 < nrows ? "," : "");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    if (csv) {
        FILE *f = fopen(csv, "w");
        if (!f) { fprintf(stderr, "coopreduce: cannot write %s\n", csv); return -1; }
        fprintf(f, "n,dtype,method,deterministic,timing,median_us,noise,bytes,ceiling_us,ref_us\n");
        for (int i = 0; i < nrows; i++) {
            row_t *r = &rows[i];
            fprintf(f, "%llu,%s,%s,%s,%s,%.4f,%.4f,%.0f,%.4f,%.4f\n", (unsigned long long)r->n,
                    r->dtype, r->method, r->det < 0 ? "" : r->det ? "yes" : "no", r->kind, r->us,
                    r->noise, r->bytes, r->ceiling_us, r->ref_us);
        }
        fclose(f);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ CPU */
/* The CPU ceiling (the canonical sum, and every --op): every byte read once, as 64-bit
 * integers (no floating point, so no data pattern can slow it down), four independent vector
 * accumulators. Until session 6 the canonical sum's ceiling added the floats themselves; on
 * float data the two read at the same speed. */
typedef int64_t v8l __attribute__((vector_size(64)));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static int64_t stream_read_bytes(const unsigned char *x, uint64_t bytes)
{
    v8l a = {0}, b = {0}, c = {0}, d = {0}, t;
    uint64_t i = 0;
    for (; i + 256 <= bytes; i += 256) {
        memcpy(&t, x + i, 64); a += t;
        memcpy(&t, x + i + 64, 64); b += t;
        memcpy(&t, x + i + 128, 64); c += t;
        memcpy(&t, x + i + 192, 64); d += t;
    }
    a += b + c + d;
    int64_t s = 0;
    for (int j = 0; j < 8; j++) s += a[j];
    for (; i < bytes; i++) s += x[i];
    return s;
}

typedef struct { const unsigned char *x; uint64_t bytes; int64_t out; } bytes_job;
static void *bytes_worker(void *p)
{
    bytes_job *j = p;
    j->out = stream_read_bytes(j->x, j->bytes);
    return NULL;
}

/* Host wall time of reading `bytes` bytes at x on `threads` threads (64-byte aligned splits). */
static double cpu_bytes_us(const void *x, uint64_t bytes, int threads)
{
    bytes_job jobs[256];
    pthread_t tid[256];
    if (threads > 256) threads = 256;
    double t0 = now_us();
    for (int i = 0; i < threads; i++) {
        uint64_t a = bytes / 64 * i / threads * 64, b = i + 1 == threads ? bytes : bytes / 64 * (i + 1) / threads * 64;
        jobs[i] = (bytes_job){(const unsigned char *)x + a, b - a, 0};
        if (i && pthread_create(&tid[i], NULL, bytes_worker, &jobs[i])) return -1;
    }
    bytes_worker(&jobs[0]);
    for (int i = 1; i < threads; i++) pthread_join(tid[i], NULL);
    double t = now_us() - t0;
    volatile int64_t sink = jobs[0].out;
    (void)sink;
    return t;
}

/* Host wall time of coopreduce_reduce(op, ...) and of the streaming read of the same `bytes`
 * on the same threads, `reps` (<= 64) of each after one warm-up, alternating which goes first so
 * that neither inherits the other's cache state; medians and noise. Returns nonzero when a call
 * fails. */
static int time_cpu_call(coopreduce_handle *h, coopreduce_op op, const void *x, const void *y,
                         uint64_t n, coopreduce_dtype dt, uint64_t bytes, int nthreads, int reps,
                         double *med_s, double *noise_s, double *med_r, double *noise_r)
{
    double ts[64], tr[64];
    unsigned char result[16];
    if (reps > 64) reps = 64;
    if (coopreduce_reduce(op, x, y, result, n, dt, h, NULL)) return 1; /* warm-up */
    cpu_bytes_us(x, bytes, nthreads);
    for (int j = 0; j < reps; j++) {
        if (j % 2) tr[j] = cpu_bytes_us(x, bytes, nthreads);
        double t0 = now_us();
        if (coopreduce_reduce(op, x, y, result, n, dt, h, NULL)) return 1;
        ts[j] = now_us() - t0;
        if (j % 2 == 0) tr[j] = cpu_bytes_us(x, bytes, nthreads);
    }
    median_noise(ts, reps, med_s, noise_s);
    median_noise(tr, reps, med_r, noise_r);
    return 0;
}

static int bench_cpu(const uint64_t *ns, int nn, int threads, int reps)
{
    uint64_t nmax = 0;
    for (int i = 0; i < nn; i++) if (ns[i] > nmax) nmax = ns[i];
    float *x = NULL;
    if (posix_memalign((void **)&x, 64, nmax * sizeof(float))) {
        fprintf(stderr, "coopreduce: cannot allocate %llu floats\n", (unsigned long long)nmax);
        return 1;
    }
    int nthreads = threads > 0 ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    cr_gen_fill(x, 0, nmax, COOPREDUCE_FLOAT32, CR_GEN_UNIFORM, 1, nthreads);
    coopreduce_handle *h = NULL;
    if (coopreduce_create_cpu(&h, threads)) {
        fprintf(stderr, "coopreduce: %s\n", coopreduce_last_error(NULL));
        free(x);
        return 1;
    }
    for (int i = 0; i < nn; i++) {
        uint64_t n = ns[i];
        double med_s, med_r, noise_s, noise_r;
        if (time_cpu_call(h, COOPREDUCE_OP_SUM, x, NULL, n, COOPREDUCE_FLOAT32, n * sizeof *x,
                          nthreads, reps, &med_s, &noise_s, &med_r, &noise_r)) {
            fprintf(stderr, "coopreduce: bench: %s\n", coopreduce_last_error(h));
            coopreduce_destroy(h);
            free(x);
            return 1;
        }
        row_t *a = add_row(n, "float32", "stream_read", "host_us", med_r, noise_r, n * 4.0);
        row_t *b = add_row(n, "float32", "canonical", "host_us", med_s, noise_s, n * 4.0);
        if (a) a->ceiling_us = med_r;
        if (b) b->ceiling_us = med_r;
        fprintf(stderr, "  cpu n=%llu done\n", (unsigned long long)n);
    }
    coopreduce_destroy(h);
    free(x);
    return 0;
}

/* --stages: the pipeline method once per listed stage count ("pipeline/S" rows; parsed in
 * every build, used by the GPU benchmark). */
static int stages[8], nstages;

/* --op on the CPU: each operation (in each --mode) over each dtype and n, host wall time of
 * coopreduce_reduce against the integer streaming read of the same bytes (both arrays for DOT),
 * the two alternating which goes first; medians of `reps`. */
static int bench_ops_cpu(const uint64_t *ns, int nn, const int *dtypes, int nd,
                         const coopreduce_op *ops, int nops, const coopreduce_mode *modes,
                         int nmodes, int threads, int reps)
{
    uint64_t nmax = 1;
    for (int i = 0; i < nn; i++) if (ns[i] > nmax) nmax = ns[i];
    unsigned char *x = NULL;
    if (posix_memalign((void **)&x, 64, 2 * nmax * 8)) {
        fprintf(stderr, "coopreduce: bench: cannot allocate %llu bytes\n", (unsigned long long)(2 * nmax * 8));
        return 1;
    }
    const int nthreads = threads > 0 ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    coopreduce_handle *h = NULL;
    if (coopreduce_create_cpu(&h, threads)) {
        fprintf(stderr, "coopreduce: %s\n", coopreduce_last_error(NULL));
        free(x);
        return 1;
    }
    int rc = 1;
    unsigned char result[16];
    for (int d = 0; d < nd; d++) {
        const coopreduce_dtype dt = (coopreduce_dtype)dtypes[d];
        const size_t es = coopreduce_dtype_size(dt);
        const char *dname = coopreduce_dtype_name(dt);
        if (cr_gen_fill(x, 0, 2 * nmax, dt, CR_GEN_UNIFORM, 1, nthreads)) {
            fprintf(stderr, "coopreduce: bench: cannot generate %s data\n", dname);
            goto out;
        }
        for (int i = 0; i < nn; i++) {
            const uint64_t n = ns[i];
            for (int m = 0; m < nmodes; m++) {
                if (coopreduce_set_mode(h, modes[m])) goto out;
                for (int k = 0; k < nops; k++) {
                    if (!coopreduce_op_result_size(ops[k], dt, 0, NULL)) continue; /* sumsq of ints */
                    const int dot = ops[k] == COOPREDUCE_OP_DOT;
                    const void *y = x + n * es;
                    if (coopreduce_reduce(ops[k], x, y, result, n, dt, h, NULL) != COOPREDUCE_SUCCESS) {
                        fprintf(stderr, "bench: %s %s (%s): %s\n", coopreduce_op_name(ops[k]), dname,
                                coopreduce_mode_name(modes[m]), coopreduce_last_error(h));
                        continue;
                    }
                    const uint64_t bytes = n * es * (dot ? 2 : 1);
                    double med_s, med_r, noise_s, noise_r;
                    if (time_cpu_call(h, ops[k], x, y, n, dt, bytes, nthreads, reps, &med_s,
                                      &noise_s, &med_r, &noise_r))
                        goto out;
                    static char names[MAX_ROWS][24]; /* the rows point at them */
                    char *name = names[nrows % MAX_ROWS];
                    snprintf(name, sizeof names[0], "%s%s", coopreduce_op_name(ops[k]),
                             modes[m] == COOPREDUCE_MODE_EXACT ? "/exact" : "");
                    row_t *r = add_row(n, dname, name, "host_us", med_s, noise_s, (double)bytes);
                    if (r) {
                        r->ceiling_us = med_r;
                        r->det = 1;
                    }
                }
            }
            fprintf(stderr, "  cpu %s n=%llu done\n", dname, (unsigned long long)n);
        }
    }
    rc = 0;
out:
    if (rc) fprintf(stderr, "coopreduce: bench: %s\n", coopreduce_last_error(h));
    coopreduce_destroy(h);
    free(x);
    return rc;
}

/* ------------------------------------------------------------------------------------ GPU */
#ifdef COOPREDUCE_HAVE_CUDA
#define CK(call)                                                                           \
    do {                                                                                   \
        cudaError_t e_ = (cudaError_t)(call);                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "coopreduce: bench: %s: %s\n", #call, cudaGetErrorString(e_)); \
            goto fail;                                                                     \
        }                                                                                  \
    } while (0)
#define CKS(call)                                                                         \
    do {                                                                                  \
        coopreduce_status s_ = (call);                                                    \
        if (s_ != COOPREDUCE_SUCCESS) {                                                   \
            fprintf(stderr, "coopreduce: bench: %s\n", coopreduce_last_error(h));         \
            goto fail;                                                                    \
        }                                                                                 \
    } while (0)

/* What a timed call runs: a coopreduce method (set on the handle) or one of the baselines. */
enum { M_LIBRARY, M_CUB, M_READ, M_EMPTY, M_COPY, M_OP };

typedef struct {
    coopreduce_handle *h;
    int dtype;             /* coopreduce_dtype */
    const void *x;
    void *out, *copy_dst, *temp;
    size_t temp_bytes;
    float *read_out;
    int read_blocks;
    uint64_t n;
    coopreduce_op op;      /* M_OP: the operation, on x (and y for DOT) */
    const void *y;
} gpu_ctx;

static size_t elem_size(int dtype) { return coopreduce_dtype_size((coopreduce_dtype)dtype); }

static int run_method(gpu_ctx *c, int m)
{
    size_t es = elem_size(c->dtype);
    switch (m) {
    case M_LIBRARY: return coopreduce_sum(c->x, c->out, c->n, (coopreduce_dtype)c->dtype, c->h, NULL) ? -1 : 0;
    case M_CUB: return cr_bl_cub_sum(c->dtype, c->x, c->out, c->n, c->temp, &c->temp_bytes, NULL);
    case M_READ: return cr_bl_read(c->x, c->n * es / 16 * 16, c->read_out, c->read_blocks, NULL);
    case M_EMPTY: return cr_bl_empty(NULL);
    case M_COPY: return (int)cudaMemcpyAsync(c->copy_dst, c->x, c->n * es, cudaMemcpyDeviceToDevice, NULL);
    case M_OP: return coopreduce_reduce(c->op, c->x, c->y, c->out, c->n, (coopreduce_dtype)c->dtype, c->h, NULL) ? -1 : 0;
    }
    return -1;
}

/* Median per-call time over `batches` batches of back-to-back calls (hot), or of single calls
 * each after an L2 flush (cold). Returns < 0 on error. */
static double time_method(gpu_ctx *c, int m, int batches, int cold, void *flush, size_t flush_bytes,
                          double *noise)
{
    cudaEvent_t e0 = NULL, e1 = NULL;
    double v[64], med = -1;
    float ms;
    if (batches > 64) batches = 64;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int w = 0; w < 3; w++) if (run_method(c, m)) goto fail;  /* warm-up */
    CK(cudaEventRecord(e0, NULL));
    if (run_method(c, m)) goto fail;
    CK(cudaEventRecord(e1, NULL));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    int k = cold ? 1 : (int)(2000.0 / (ms * 1e3 + 1e-3));
    if (k < 10) k = cold ? 1 : 10;
    if (k > 2000) k = 2000;
    for (int b = 0; b < batches; b++) {
        if (cold) CK(cudaMemsetAsync(flush, b & 0xff, flush_bytes, NULL));
        CK(cudaEventRecord(e0, NULL));
        for (int i = 0; i < k; i++) if (run_method(c, m)) goto fail;
        CK(cudaEventRecord(e1, NULL));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        v[b] = ms * 1e3 / k;
    }
    median_noise(v, batches, &med, noise);
fail:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    return med;
}

/* Host wall time per synchronous call, result on the host. which: 0 = coopreduce_sum_to_host
 * with the handle's method, 1 = empty kernel + stream synchronise, 2 = CUB + 4/8-byte copy to
 * host, 3 = one cudaPointerGetAttributes (what validating a pointer costs the library when not
 * cached). */
static double time_host(gpu_ctx *c, int which, int calls, double *noise)
{
    double v[512], med = -1, host[1];
    if (calls > 512) calls = 512;
    for (int i = -10; i < calls; i++) {
        double t0 = now_us();
        if (which == 0) {
            if (coopreduce_sum_to_host(c->x, host, c->n, (coopreduce_dtype)c->dtype, c->h, NULL)) return -1;
        } else if (which == 1) {
            if (cr_bl_empty(NULL) || cudaStreamSynchronize(NULL) != cudaSuccess) return -1;
        } else if (which == 3) {
            struct cudaPointerAttributes a;
            if (cudaPointerGetAttributes(&a, c->x) != cudaSuccess) return -1;
        } else {
            if (cr_bl_cub_sum(c->dtype, c->x, c->out, c->n, c->temp, &c->temp_bytes, NULL)) return -1;
            if (cudaMemcpy(host, c->out, coopreduce_result_size((coopreduce_dtype)c->dtype),
                           cudaMemcpyDeviceToHost) != cudaSuccess) return -1;
        }
        if (i >= 0) v[i] = now_us() - t0;
    }
    median_noise(v, calls, &med, noise);
    return med;
}

/* Sets the method; a method the GPU cannot run (clusters before sm_90) is skipped with a line
 * on stderr, returning 1. */
static int select_method(coopreduce_handle *h, coopreduce_method m, uint64_t nmax, int dtype,
                         const void *x, void *out)
{
    if (coopreduce_set_method(h, m) || coopreduce_reserve(h, nmax, (coopreduce_dtype)dtype))
        return -1;
    coopreduce_status s = coopreduce_sum(x, out, 1, (coopreduce_dtype)dtype, h, NULL);
    if (s == COOPREDUCE_ERROR_NOT_SUPPORTED) {
        fprintf(stderr, "bench: skipping %s: %s\n", coopreduce_method_name(m), coopreduce_last_error(h));
        return 1;
    }
    return s ? -1 : 0;
}

/* The tutorials' headline (seed 000): the sum of 1,048,576 ones, block-level (partials added on
 * the host) against grid-level (cooperative launch, atomics). The tutorial reports 0.123 ms and
 * 0.098 ms per iteration on its GPU. Also the float4-read and canonical times, for scale. */
static int headline(gpu_ctx *c, void *hx, int batches)
{
    const uint64_t n = 1048576;
    const coopreduce_method ms[3] = {COOPREDUCE_METHOD_BLOCK, COOPREDUCE_METHOD_GRID, COOPREDUCE_METHOD_CANONICAL};
    cr_gen_fill(hx, 0, n, COOPREDUCE_FLOAT32, CR_GEN_ONES, 0, 1);
    if (cudaMemcpy((void *)c->x, hx, n * 4, cudaMemcpyHostToDevice) != cudaSuccess) return -1;
    gpu_ctx h1 = *c;
    h1.dtype = COOPREDUCE_FLOAT32;
    h1.n = n;
    printf("### The tutorials' headline: 1,048,576 float32 ones (seed 000 reports block 0.123 ms, grid 0.098 ms)\n\n");
    printf("| method | sum | gpu_us (back-to-back) | host_us (result on the host) | launches | cooperative |\n");
    printf("|---|---|---|---|---|---|\n");
    for (int i = 0; i < 3; i++) {
        double noise, gus, hus;
        float v = 0;
        if (select_method(c->h, ms[i], n, COOPREDUCE_FLOAT32, c->x, c->out)) return -1;
        if (coopreduce_sum_to_host(c->x, &v, n, COOPREDUCE_FLOAT32, c->h, NULL)) return -1;
        coopreduce_launch_info li;
        coopreduce_last_launch(c->h, &li);
        gus = time_method(&h1, M_LIBRARY, batches, 0, NULL, 0, &noise);
        hus = time_host(&h1, 0, 200, &noise);
        if (gus < 0 || hus < 0) return -1;
        printf("| %s | %.1f | %.2f | %.2f | %d | %s |\n", coopreduce_method_name(ms[i]), v, gus, hus,
               li.launches, li.cooperative ? "yes" : "no");
    }
    printf("\n");
    return 0;
}

/* Distinct results of 20 runs of each method on one random array: the determinism claims,
 * seen. */
static int distinct_results(gpu_ctx *c, const coopreduce_method *methods, int nm, uint64_t n)
{
    printf("### Distinct results in 20 runs on one random array (uniform, n = %llu, %s)\n\n",
           (unsigned long long)n, coopreduce_dtype_name((coopreduce_dtype)c->dtype));
    printf("| method | claims deterministic | distinct results | first result (bits) |\n|---|---|---|---|\n");
    for (int i = 0; i < nm; i++) {
        int r = select_method(c->h, methods[i], n, c->dtype, c->x, c->out);
        if (r < 0) return -1;
        if (r > 0) continue;
        uint64_t bits[20];
        int distinct = 0;
        for (int k = 0; k < 20; k++) {
            bits[k] = 0;
            if (cudaMemset(c->out, 0xA5, 8) != cudaSuccess) return -1;
            if (coopreduce_sum(c->x, c->out, n, (coopreduce_dtype)c->dtype, c->h, NULL)) return -1;
            if (cudaMemcpy(&bits[k], c->out, coopreduce_result_size((coopreduce_dtype)c->dtype),
                           cudaMemcpyDeviceToHost) != cudaSuccess) return -1;
            int seen = 0;
            for (int j = 0; j < k; j++) seen |= bits[j] == bits[k];
            distinct += !seen;
        }
        printf("| %s | %s | %d | 0x%llx |\n", coopreduce_method_name(methods[i]),
               coopreduce_method_deterministic(methods[i], (coopreduce_dtype)c->dtype) ? "yes" : "no",
               distinct, (unsigned long long)bits[0]);
    }
    printf("\n");
    return 0;
}

static const char *const stage_names[9] = {"", "pipeline/1", "pipeline/2", "pipeline/3",
                                            "pipeline/4", "pipeline/5", "pipeline/6",
                                            "pipeline/7", "pipeline/8"};

static int bench_gpu(int ordinal, const uint64_t *ns, int nn, const int *dtypes, int nd,
                     const coopreduce_method *methods, int nm, int batches, int cold,
                     int host_latency, int extras)
{
    coopreduce_handle *h = NULL;
    void *x = NULL, *out = NULL, *copy_dst = NULL, *temp = NULL, *flush = NULL, *hx = NULL;
    float *read_out = NULL;
    int rc = 1;
    uint64_t nmax = 1048576;
    for (int i = 0; i < nn; i++) if (ns[i] > nmax) nmax = ns[i];
    coopreduce_gpu_props props;
    if (coopreduce_create_gpu(&h, ordinal) || coopreduce_gpu_props_get(ordinal, &props)) {
        fprintf(stderr, "coopreduce: %s\n", coopreduce_last_error(NULL));
        return 1;
    }
    fprintf(stderr, "bench: %s, %d SMs, L2 %.0f MB\n", props.name, props.sm_count, props.l2_bytes / 1e6);
    snprintf(device_name, sizeof device_name, "%s", props.name);
    printf("Device: %s (%d SMs, compute capability %d.%d, L2 %.0f MB)\n\n", props.name,
           props.sm_count, props.cc_major, props.cc_minor, props.l2_bytes / 1e6);
    CK(cudaSetDevice(ordinal));
    CK(cudaMalloc(&x, nmax * 8 + 16));
    CK(cudaMalloc(&out, 16));
    CK(cudaMalloc(&copy_dst, nmax * 8 + 16));
    size_t flush_bytes = (size_t)props.l2_bytes * 4;
    CK(cudaMalloc(&flush, flush_bytes));
    int read_blocks = props.sm_count * 16;
    CK(cudaMalloc((void **)&read_out, read_blocks * sizeof(float)));
    hx = malloc(nmax * 8);
    if (!hx) { fprintf(stderr, "coopreduce: bench: out of host memory\n"); goto fail; }
    gpu_ctx c0 = {h, 0, x, out, copy_dst, NULL, 0, read_out, read_blocks, 0, COOPREDUCE_OP_SUM, NULL};
    if (extras && headline(&c0, hx, batches)) goto fail;
    int total = nd * nn, done = 0;
    double t_start = now_us();
    for (int d = 0; d < nd; d++) {
        int dt = dtypes[d];
        const char *dname = coopreduce_dtype_name((coopreduce_dtype)dt);
        size_t es = elem_size(dt);
        cr_gen_fill(hx, 0, nmax, (coopreduce_dtype)dt, CR_GEN_UNIFORM, 1, (int)sysconf(_SC_NPROCESSORS_ONLN));
        CK(cudaMemcpy(x, hx, nmax * es, cudaMemcpyHostToDevice));
        size_t tb = 0;
        CK(cr_bl_cub_sum(dt, x, out, nmax, NULL, &tb, NULL));
        if (temp) cudaFree(temp);
        temp = NULL;
        CK(cudaMalloc(&temp, tb + 16));
        for (int i = 0; i < nn; i++) {
            gpu_ctx c = {h, dt, x, out, copy_dst, temp, tb, read_out, read_blocks, ns[i], COOPREDUCE_OP_SUM, NULL};
            const char *timing = cold ? "gpu_us_cold" : "gpu_us";
            double bytes = (double)ns[i] * es, us[5], noise[5];
            static const char *bnames[5] = {"", "cub", "float4_read", "empty_kernel", "d2d_copy"};
            for (int m = M_CUB; m <= M_COPY; m++) {
                us[m] = time_method(&c, m, batches, cold, flush, flush_bytes, &noise[m]);
                if (us[m] < 0) goto fail;
            }
            for (int m = M_CUB; m <= M_COPY; m++) {
                row_t *r = add_row(ns[i], dname, bnames[m], timing, us[m], noise[m],
                                   m == M_EMPTY ? 0 : (m == M_COPY ? 2 * bytes : bytes));
                if (r && m != M_EMPTY && m != M_COPY) { r->ceiling_us = us[M_READ]; r->ref_us = us[M_CUB]; }
            }
            for (int k = 0; k < nm; k++) {
                int sel = select_method(h, methods[k], nmax, dt, x, out);
                if (sel < 0) goto fail;
                if (sel > 0) continue;
                /* pipeline: once per --stages value (its default of 4 without the option) */
                int staged = methods[k] == COOPREDUCE_METHOD_PIPELINE && nstages;
                int variants = staged ? nstages : 1;
                for (int v = 0; v < variants; v++) {
                    const char *name = coopreduce_method_name(methods[k]);
                    if (staged) {
                        CKS(coopreduce_set_stages(h, stages[v]));
                        name = stage_names[stages[v]];
                    }
                    double noise_m, t = time_method(&c, M_LIBRARY, batches, cold, flush, flush_bytes, &noise_m);
                    if (t < 0) goto fail;
                    row_t *r = add_row(ns[i], dname, name, timing, t, noise_m, bytes);
                    if (r) {
                        r->ceiling_us = us[M_READ];
                        r->ref_us = us[M_CUB];
                        r->det = coopreduce_method_deterministic(methods[k], (coopreduce_dtype)dt);
                    }
                }
                if (staged) CKS(coopreduce_set_stages(h, 4));
                if (host_latency && methods[k] == COOPREDUCE_METHOD_CANONICAL) {
                    double hn[4], hu[4];
                    for (int w = 0; w < 4; w++) {
                        hu[w] = time_host(&c, w, 200, &hn[w]);
                        if (hu[w] < 0) { fprintf(stderr, "coopreduce: bench: host latency run failed\n"); goto fail; }
                    }
                    static const char *hnames[4] = {"canonical_to_host", "empty_launch+sync", "cub+memcpy",
                                                    "cudaPointerGetAttributes"};
                    for (int w = 0; w < 4; w++) {
                        row_t *q = add_row(ns[i], dname, hnames[w], "host_us", hu[w], hn[w], w == 1 || w == 3 ? 0 : bytes);
                        if (q) q->ref_us = hu[1];
                    }
                }
            }
            done++;
            fprintf(stderr, "  [%d/%d] %s n=%llu done (%.0f s)\n", done, total, dname,
                    (unsigned long long)ns[i], (now_us() - t_start) * 1e-6);
        }
        if (extras) {
            uint64_t nd20 = nmax < (1ull << 24) ? nmax : (1ull << 24);
            gpu_ctx c = {h, dt, x, out, copy_dst, temp, tb, read_out, read_blocks, nd20, COOPREDUCE_OP_SUM, NULL};
            if (distinct_results(&c, methods, nm, nd20)) goto fail;
        }
    }
    rc = 0;
fail:
    if (rc) fprintf(stderr, "coopreduce: bench: %s\n", coopreduce_last_error(h));
    coopreduce_destroy(h);
    if (x) cudaFree(x);
    if (out) cudaFree(out);
    if (copy_dst) cudaFree(copy_dst);
    if (temp) cudaFree(temp);
    if (flush) cudaFree(flush);
    if (read_out) cudaFree(read_out);
    free(hx);
    return rc;
}
#endif

#ifdef COOPREDUCE_HAVE_CUDA
/* --op: each operation (in each --mode) over each dtype and n, against the float4 read of the
 * same bytes (both arrays for DOT, which reads y right after x) in the same run. */
static int bench_ops_gpu(int ordinal, const uint64_t *ns, int nn, const int *dtypes, int nd,
                         const coopreduce_op *ops, int nops, const coopreduce_mode *modes,
                         int nmodes, int batches)
{
    coopreduce_handle *h = NULL;
    void *x = NULL, *out = NULL, *hx = NULL;
    float *read_out = NULL;
    int rc = 1;
    uint64_t nmax = 1;
    for (int i = 0; i < nn; i++) if (ns[i] > nmax) nmax = ns[i];
    coopreduce_gpu_props props;
    if (coopreduce_create_gpu(&h, ordinal) || coopreduce_gpu_props_get(ordinal, &props)) {
        fprintf(stderr, "coopreduce: %s\n", coopreduce_last_error(NULL));
        return 1;
    }
    snprintf(device_name, sizeof device_name, "%s", props.name);
    printf("Device: %s (%d SMs, compute capability %d.%d, L2 %.0f MB)\n\n", props.name,
           props.sm_count, props.cc_major, props.cc_minor, props.l2_bytes / 1e6);
    CK(cudaSetDevice(ordinal));
    CK(cudaMalloc(&x, 2 * nmax * 8 + 32));  /* x, then y */
    CK(cudaMalloc(&out, 16));
    const int read_blocks = props.sm_count * 16;
    CK(cudaMalloc((void **)&read_out, read_blocks * sizeof(float)));
    hx = malloc(2 * nmax * 8);
    if (!hx) { fprintf(stderr, "coopreduce: bench: out of host memory\n"); goto fail; }
    for (int d = 0; d < nd; d++) {
        const coopreduce_dtype dt = (coopreduce_dtype)dtypes[d];
        const size_t es = elem_size(dt);
        const char *dname = coopreduce_dtype_name(dt);
        if (cr_gen_fill(hx, 0, 2 * nmax, dt, CR_GEN_UNIFORM, 1, (int)sysconf(_SC_NPROCESSORS_ONLN))) {
            fprintf(stderr, "coopreduce: bench: cannot generate %s data\n", dname);
            goto fail;
        }
        CK(cudaMemcpy(x, hx, 2 * nmax * es, cudaMemcpyHostToDevice));
        for (int i = 0; i < nn; i++) {
            const uint64_t n = ns[i];
            gpu_ctx c = {h, dt, x, out, NULL, NULL, 0, read_out, read_blocks, n, COOPREDUCE_OP_SUM,
                         (const char *)x + n * es};
            double noise, read1 = time_method(&c, M_READ, batches, 0, NULL, 0, &noise);
            c.n = 2 * n;
            double read2 = time_method(&c, M_READ, batches, 0, NULL, 0, &noise);
            c.n = n;
            if (read1 < 0 || read2 < 0) goto fail;
            add_row(n, dname, "float4_read", "gpu_us", read1, noise, (double)n * es);
            for (int m = 0; m < nmodes; m++) {
                CKS(coopreduce_set_mode(h, modes[m]));
                for (int k = 0; k < nops; k++) {
                    c.op = ops[k];
                    if (!coopreduce_op_result_size(ops[k], dt, 0, NULL)) continue; /* sumsq of ints */
                    if (coopreduce_reduce(ops[k], c.x, c.y, out, n, dt, h, NULL) != COOPREDUCE_SUCCESS) {
                        fprintf(stderr, "bench: %s %s (%s): %s\n", coopreduce_op_name(ops[k]), dname,
                                coopreduce_mode_name(modes[m]), coopreduce_last_error(h));
                        continue; /* not computed in this mode: no row */
                    }
                    double t = time_method(&c, M_OP, batches, 0, NULL, 0, &noise);
                    if (t < 0) goto fail;
                    static char names[MAX_ROWS][24]; /* the rows point at them */
                    char *name = names[nrows % MAX_ROWS];
                    snprintf(name, sizeof names[0], "%s%s", coopreduce_op_name(ops[k]),
                             modes[m] == COOPREDUCE_MODE_EXACT ? "/exact" : "");
                    const int dot = ops[k] == COOPREDUCE_OP_DOT;
                    row_t *r = add_row(n, dname, name, "gpu_us", t, noise, (double)n * es * (dot ? 2 : 1));
                    if (r) {
                        r->ceiling_us = dot ? read2 : read1;
                        r->det = 1;
                    }
                }
            }
            CKS(coopreduce_set_mode(h, COOPREDUCE_MODE_DETERMINISTIC));
            fprintf(stderr, "  %s n=%llu done\n", dname, (unsigned long long)n);
        }
    }
    rc = 0;
fail:
    if (rc) fprintf(stderr, "coopreduce: bench: %s\n", coopreduce_last_error(h));
    coopreduce_destroy(h);
    if (x) cudaFree(x);
    if (out) cudaFree(out);
    if (read_out) cudaFree(read_out);
    free(hx);
    return rc;
}
#endif

static void usage(FILE *f)
{
    fprintf(f,
        "usage: coopreduce bench [--device gpu|gpu:K|cpu] [--quick] [--n LIST] [--dtype LIST]\n"
        "                        [--method LIST|all] [--batches B] [--cold] [--no-host-latency]\n"
        "                        [--no-extras] [--stages LIST] [--threads T] [--json FILE]\n"
        "                        [--csv FILE] [--op LIST [--mode LIST]]\n"
        "  GPU: every selected coopreduce method against CUB DeviceReduce::Sum, a float4 read\n"
        "  kernel (the bandwidth ceiling), an empty kernel (the launch floor) and a device-to-\n"
        "  device copy, all in the same run; the latency of a canonical result on the host; then\n"
        "  (unless --no-extras) the tutorials' headline (1,048,576 ones, block against grid) and\n"
        "  the distinct results of 20 runs of every method on one random array.\n"
        "  CPU: the canonical float32 sum (with --op, each operation) against a streaming\n"
        "  read of the same bytes on all cores (or --threads T).\n"
        "  --n takes a comma list (e.g. 2^20,2^24,1048576). Default GPU sweep: 2^10 .. 2^28 in\n"
        "  steps of 2^2 (2^20 = 1,048,576 included); --quick: 2^16,2^20,2^24,2^28 and 5 batches.\n"
        "  --dtype: comma list of f32, f64, i32 (default f32,f64). --method: comma list of method\n"
        "  names (coopreduce info lists them) or all (the default). --stages 1,2,4,8: the pipeline\n"
        "  method once per stage count (rows pipeline/S).\n"
        "  --op sum,min,...|all: instead of the methods, each operation through coopreduce_reduce\n"
        "  over each --dtype (f32, f64, i32, f16, bf16, i64, u32, u64) against the float4 read of\n"
        "  the same bytes (both arrays for dot), in each --mode (deterministic, exact; default\n"
        "  deterministic); with --device cpu, host wall time against an integer streaming read\n"
        "  of the same bytes on the same threads.\n"
        "  Markdown tables on stdout, progress on stderr.\n");
}

/* Parses "all" or a comma list of method names. */
static int parse_methods(const char *s, coopreduce_method *list, int *count)
{
    *count = 0;
    if (!strcmp(s, "all")) {
        for (int m = 0; coopreduce_method_name((coopreduce_method)m); m++) list[(*count)++] = (coopreduce_method)m;
        return 0;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*count >= 32 || coopreduce_method_from_name(tok, &list[*count])) {
            fprintf(stderr, "coopreduce: bench: unknown method '%s' (coopreduce info lists them)\n", tok);
            return -1;
        }
        (*count)++;
    }
    return *count ? 0 : -1;
}

int cli_bench_main(int argc, char **argv)
{
    uint64_t ns[MAX_N_LIST];
    int nn = 0, quick = 0, cold = 0, host_latency = 1, extras = 1, batches = 7, threads = 0;
    int dtypes[8] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64}, nd = 2, gpu = -1, cpu = 0;
    coopreduce_op ops[16];
    coopreduce_mode modes[2] = {COOPREDUCE_MODE_DETERMINISTIC};
    int nops = 0, nmodes = 1;
    coopreduce_method methods[32];
    int nm = 0;
    parse_methods("all", methods, &nm);
    const char *json = NULL, *csv = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--quick")) quick = 1;
        else if (!strcmp(a, "--cold")) cold = 1;
        else if (!strcmp(a, "--no-host-latency")) host_latency = 0;
        else if (!strcmp(a, "--no-extras")) extras = 0;
        else if (!strcmp(a, "--n") && v) { if (parse_n_list(v, ns, &nn)) { fprintf(stderr, "coopreduce: bad --n list '%s'\n", v); return 2; } i++; }
        else if (!strcmp(a, "--method") && v) { if (parse_methods(v, methods, &nm)) return 2; i++; }
        else if (!strcmp(a, "--stages") && v) {
            char buf[64];
            snprintf(buf, sizeof buf, "%s", v);
            nstages = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                int st = atoi(tok);
                if (st < 1 || st > 8 || nstages >= 8) { fprintf(stderr, "coopreduce: bench: --stages takes a comma list of 1..8\n"); return 2; }
                stages[nstages++] = st;
            }
            i++;
        }
        else if (!strcmp(a, "--dtype") && v) {
            static const char *const short_names[8] = {"f32", "f64", "i32", "f16", "bf16", "i64", "u32", "u64"};
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            nd = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                int found = -1;
                for (int t = 0; t < 8; t++) if (!strcmp(tok, short_names[t])) found = t;
                if (found < 0 || nd >= 8) { fprintf(stderr, "coopreduce: bad --dtype '%s' (a comma list of f32, f64, i32, f16, bf16, i64, u32, u64)\n", v); return 2; }
                dtypes[nd++] = found; /* short_names follows coopreduce_dtype's values */
            }
            i++;
        }
        else if (!strcmp(a, "--op") && v) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", !strcmp(v, "all") ? "sum,min,max,absmax,mean,sumsq,norm2,dot,argmin,argmax" : v);
            nops = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (nops >= 16 || coopreduce_op_from_name(tok, &ops[nops])) { fprintf(stderr, "coopreduce: bench: unknown --op '%s'\n", tok); return 2; }
                nops++;
            }
            i++;
        }
        else if (!strcmp(a, "--mode") && v) {
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            nmodes = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (nmodes >= 2 || coopreduce_mode_from_name(tok, &modes[nmodes])) { fprintf(stderr, "coopreduce: bench: unknown --mode '%s' (deterministic, exact)\n", tok); return 2; }
                nmodes++;
            }
            i++;
        }
        else if (!strcmp(a, "--batches") && v) { batches = atoi(v); if (batches < 3 || batches > 64) { fprintf(stderr, "coopreduce: --batches must be 3..64\n"); return 2; } i++; }
        else if (!strcmp(a, "--threads") && v) { threads = atoi(v); if (threads < 0) { fprintf(stderr, "coopreduce: --threads must be >= 0\n"); return 2; } i++; }
        else if (!strcmp(a, "--json") && v) { json = v; i++; }
        else if (!strcmp(a, "--csv") && v) { csv = v; i++; }
        else if (!strcmp(a, "--device") && v) {
            if (!strcmp(v, "cpu")) cpu = 1;
            else if (!strcmp(v, "gpu")) gpu = 0;
            else if (!strncmp(v, "gpu:", 4) && v[4]) gpu = atoi(v + 4);
            else { fprintf(stderr, "coopreduce: bad --device '%s' (gpu, gpu:K or cpu)\n", v); return 2; }
            i++;
        }
        else { fprintf(stderr, "coopreduce: bench: unknown or incomplete option '%s' (see coopreduce bench --help)\n", a); return 2; }
    }
    int gpus = 0;
    coopreduce_gpu_count(&gpus);
    if (!cpu && gpu < 0) {
        if (gpus > 0) gpu = 0;
        else { cpu = 1; fprintf(stderr, "bench: no GPU found, benchmarking the CPU path\n"); }
    }
    int rc;
    char device[64];
    if (cpu) {
        if (!nn) {
            static const uint64_t d[] = {1ull << 20, 1ull << 24, 1ull << 28};
            nn = quick ? 2 : 3;
            memcpy(ns, d, sizeof d);
        }
        snprintf(device, sizeof device, "cpu");
        if (nops)
            rc = bench_ops_cpu(ns, nn, dtypes, nd, ops, nops, modes, nmodes, threads, quick ? 5 : 9);
        else
            rc = bench_cpu(ns, nn, threads, quick ? 5 : 9);
    } else {
#ifdef COOPREDUCE_HAVE_CUDA
        if (gpu >= gpus) { fprintf(stderr, "coopreduce: no GPU with ordinal %d (%d found)\n", gpu, gpus); return 1; }
        if (!nn) {
            if (quick) { ns[0] = 1ull << 16; ns[1] = 1ull << 20; ns[2] = 1ull << 24; ns[3] = 1ull << 28; nn = 4; }
            else for (int e = 10; e <= 28; e += 2) ns[nn++] = 1ull << e;
        }
        snprintf(device, sizeof device, "gpu:%d", gpu);
        if (nops)
            rc = bench_ops_gpu(gpu, ns, nn, dtypes, nd, ops, nops, modes, nmodes, quick ? 5 : batches);
        else
        rc = bench_gpu(gpu, ns, nn, dtypes, nd, methods, nm, quick ? 5 : batches, cold,
                       host_latency, extras);
#else
        (void)dtypes, (void)nd, (void)batches, (void)cold, (void)host_latency, (void)extras;
        (void)ops, (void)nops, (void)modes, (void)nmodes;
        fprintf(stderr, "coopreduce: this build has no GPU path (built without CUDA)\n");
        return 1;
#endif
    }
    if (rc) return rc;
    printf("### Sweep\n\n");
    print_table(stdout);
    return write_files(json, csv, device) ? 1 : 0;
}
