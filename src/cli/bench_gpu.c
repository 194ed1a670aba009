/* bench_gpu.c — the GPU benchmark: every method against CUB, the float4 read ceiling, the
 * launch floor and a device copy, in the same run; or each operation against the read (and,
 * along an axis or over segments, the sum against CUB's segmented sum). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "device.h"
#include "gen.h"
#include "messages.h"
#include "offsets.h"
#include "shape.h"

#ifdef COOPREDUCE_HAVE_CUDA
#include <cuda_runtime_api.h>

/* Set once a failure has been reported, so that the caller's summary adds no second line. */
static int reported;

/* baselines.cu */
int cr_bl_empty(void *stream);
int cr_bl_read(const void *x, uint64_t bytes, float *out, int blocks, void *stream);
int cr_bl_read_write(const void *x, uint64_t bytes, void *out, uint64_t out_bytes, int blocks,
                     void *stream);
int cr_bl_cub_sum(int dtype, const void *x, void *out, uint64_t n, void *temp, size_t *temp_bytes,
                  void *stream);
int cr_bl_cub_segmented_sum(int dtype, const void *x, void *out, uint64_t nseg,
                            const int64_t *d_offsets_begin, const int64_t *d_offsets_end,
                            void *temp, size_t *temp_bytes, void *stream);
int cr_bl_cub_segmented_sum_rows(int dtype, const void *x, void *out, uint64_t nrows, uint64_t len,
                                 void *temp, size_t *temp_bytes, void *stream);

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (cudaError_t)(call);                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "coopreduce: bench: %s: %s\n", #call, cudaGetErrorString(e_));         \
            reported = 1;                                                                          \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)
#define CKS(call)                                                                                  \
    do {                                                                                           \
        coopreduce_status s_ = (call);                                                             \
        if (s_ != COOPREDUCE_SUCCESS) {                                                            \
            fprintf(stderr, "coopreduce: bench: %s\n", coopreduce_last_error(h));                  \
            reported = 1;                                                                          \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* What a timed call runs: a coopreduce method (set on the handle) or one of the baselines.
 * M_CALL: a library call (timed_call: an operation over n elements, along an axis or over
 * segments); M_CUB_SEG: CUB's segmented sum of M_CALL's rows or segments; M_READ_WRITE: the
 * float4 read with write_bytes of results stored among it. */
enum { M_LIBRARY, M_CUB, M_READ, M_EMPTY, M_COPY, M_CALL, M_CUB_SEG, M_READ_WRITE };

typedef struct {
    coopreduce_handle *h;
    int dtype; /* coopreduce_dtype */
    const void *x;
    void *out, *copy_dst, *temp;
    size_t temp_bytes;
    float *read_out;
    int read_blocks;
    uint64_t n;
    uint64_t write_bytes; /* M_READ_WRITE's results */
    void *flush;          /* --op --cold: the L2 flush before each timed call (NULL: hot) */
    size_t flush_bytes;
} gpu_ctx;

/* M_CALL's call, kept beside the context rather than in it. */
static const bench_call *timed_call;

static size_t elem_size(int dtype) { return coopreduce_dtype_size((coopreduce_dtype)dtype); }

/* CUB DeviceSegmentedReduce::Sum of the call's segments (its offsets, offsets + 1) or of its
 * rows (inner == 1: outer rows of len elements), into the call's result; with temp == NULL,
 * the temporary storage size into *temp_bytes. */
static int cub_segmented(const bench_call *k, void *temp, size_t *temp_bytes)
{
    if (k->kind == BENCH_CALL_SEGMENTS)
        return cr_bl_cub_segmented_sum((int)k->dtype, k->x, k->result, k->nseg, k->offsets,
                                       k->offsets + 1, temp, temp_bytes, NULL);
    return cr_bl_cub_segmented_sum_rows((int)k->dtype, k->x, k->result, k->outer, k->len, temp,
                                        temp_bytes, NULL);
}

static int run_method(gpu_ctx *c, int m)
{
    size_t es = elem_size(c->dtype);
    switch (m) {
    case M_LIBRARY:
        return coopreduce_sum(c->x, c->out, c->n, (coopreduce_dtype)c->dtype, c->h, NULL) ? -1 : 0;
    case M_CUB: return cr_bl_cub_sum(c->dtype, c->x, c->out, c->n, c->temp, &c->temp_bytes, NULL);
    case M_READ: return cr_bl_read(c->x, c->n * es / 16 * 16, c->read_out, c->read_blocks, NULL);
    case M_EMPTY: return cr_bl_empty(NULL);
    case M_COPY:
        return (int)cudaMemcpyAsync(c->copy_dst, c->x, c->n * es, cudaMemcpyDeviceToDevice, NULL);
    case M_CALL: return bench_run_call(c->h, timed_call) ? -1 : 0;
    case M_CUB_SEG: return cub_segmented(timed_call, c->temp, &c->temp_bytes);
    case M_READ_WRITE:
        return cr_bl_read_write(c->x, c->n * es / 16 * 16, c->out, c->write_bytes, c->read_blocks,
                                NULL);
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
    for (int w = 0; w < 3; w++)
        if (run_method(c, m)) goto fail; /* warm-up */
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
        for (int i = 0; i < k; i++)
            if (run_method(c, m)) goto fail;
        CK(cudaEventRecord(e1, NULL));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        v[b] = ms * 1e3 / k;
    }
    bench_median_noise(v, batches, &med, noise);
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
        double t0 = bench_now_us();
        if (which == 0) {
            if (coopreduce_sum_to_host(c->x, host, c->n, (coopreduce_dtype)c->dtype, c->h, NULL))
                return -1;
        } else if (which == 1) {
            if (cr_bl_empty(NULL) || cudaStreamSynchronize(NULL) != cudaSuccess) return -1;
        } else if (which == 3) {
            struct cudaPointerAttributes a;
            if (cudaPointerGetAttributes(&a, c->x) != cudaSuccess) return -1;
        } else {
            if (cr_bl_cub_sum(c->dtype, c->x, c->out, c->n, c->temp, &c->temp_bytes, NULL))
                return -1;
            if (cudaMemcpy(host, c->out, coopreduce_result_size((coopreduce_dtype)c->dtype),
                           cudaMemcpyDeviceToHost) != cudaSuccess)
                return -1;
        }
        if (i >= 0) v[i] = bench_now_us() - t0;
    }
    bench_median_noise(v, calls, &med, noise);
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
        fprintf(stderr, "bench: skipping %s: %s\n", coopreduce_method_name(m),
                coopreduce_last_error(h));
        return 1;
    }
    return s ? -1 : 0;
}

/* The tutorials' headline: the sum of 1,048,576 ones, block-level (partials added on the host)
 * against grid-level (cooperative launch, atomics), whose times the first tutorial quotes
 * (docs/METHODS.md). Also the float4-read and canonical times, for scale. */
static int headline(gpu_ctx *c, void *hx, int batches)
{
    const uint64_t n = 1048576;
    const coopreduce_method ms[3] = {COOPREDUCE_METHOD_BLOCK, COOPREDUCE_METHOD_GRID,
                                     COOPREDUCE_METHOD_CANONICAL};
    cr_gen_fill(hx, 0, n, COOPREDUCE_FLOAT32, CR_GEN_ONES, 0, 1);
    if (cudaMemcpy((void *)c->x, hx, n * 4, cudaMemcpyHostToDevice) != cudaSuccess) return -1;
    gpu_ctx h1 = *c;
    h1.dtype = COOPREDUCE_FLOAT32;
    h1.n = n;
    printf("### The tutorials' headline: 1,048,576 float32 ones (the tutorial reports block 0.123 "
           "ms, grid 0.098 ms)\n\n");
    printf("| method | sum | gpu_us (back-to-back) | host_us (result on the host) | launches | "
           "cooperative |\n");
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
        printf("| %s | %.1f | %.2f | %.2f | %d | %s |\n", coopreduce_method_name(ms[i]), v, gus,
               hus, li.launches, li.cooperative ? "yes" : "no");
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
    printf("| method | claims deterministic | distinct results | first result (bits) "
           "|\n|---|---|---|---|\n");
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
                           cudaMemcpyDeviceToHost) != cudaSuccess)
                return -1;
            int seen = 0;
            for (int j = 0; j < k; j++) seen |= bits[j] == bits[k];
            distinct += !seen;
        }
        printf("| %s | %s | %d | 0x%llx |\n", coopreduce_method_name(methods[i]),
               coopreduce_method_deterministic(methods[i], (coopreduce_dtype)c->dtype) ? "yes"
                                                                                       : "no",
               distinct, (unsigned long long)bits[0]);
    }
    printf("\n");
    return 0;
}

/* A handle for GPU `ordinal` and its properties, the device named in the tables and printed
 * above them. Returns nonzero, with the reason on stderr, when the GPU cannot be used. */
static int open_gpu(int ordinal, coopreduce_handle **h, coopreduce_gpu_props *props)
{
    if (coopreduce_create_gpu(h, ordinal) || coopreduce_gpu_props_get(ordinal, props)) {
        fprintf(stderr, "coopreduce: %s\n", coopreduce_last_error(NULL));
        return 1;
    }
    bench_set_device_name(props->name);
    printf("Device: %s (%d SMs, compute capability %d.%d, L2 %.0f MB)\n\n", props->name,
           props->sm_count, props->cc_major, props->cc_minor, props->l2_bytes / 1e6);
    return 0;
}

static const char *const stage_names[9] = {"",           "pipeline/1", "pipeline/2",
                                           "pipeline/3", "pipeline/4", "pipeline/5",
                                           "pipeline/6", "pipeline/7", "pipeline/8"};

int bench_gpu(int ordinal, const bench_options *o)
{
    const uint64_t *ns = o->ns;
    const int nn = o->nn, nd = o->nd, nm = o->nm, cold = o->cold;
    const int host_latency = o->host_latency, extras = o->extras;
    const int batches = o->quick ? 5 : o->batches;
    const coopreduce_method *methods = o->methods;
    coopreduce_handle *h = NULL;
    void *x = NULL, *out = NULL, *copy_dst = NULL, *temp = NULL, *flush = NULL, *hx = NULL;
    float *read_out = NULL;
    int rc = 1;
    uint64_t nmax = 1048576;
    for (int i = 0; i < nn; i++)
        if (ns[i] > nmax) nmax = ns[i];
    coopreduce_gpu_props props;
    if (open_gpu(ordinal, &h, &props)) return 1;
    fprintf(stderr, "bench: %s, %d SMs, L2 %.0f MB\n", props.name, props.sm_count,
            props.l2_bytes / 1e6);
    CK(cudaSetDevice(ordinal));
    CK(cudaMalloc(&x, nmax * 8 + 16));
    CK(cudaMalloc(&out, 16));
    CK(cudaMalloc(&copy_dst, nmax * 8 + 16));
    size_t flush_bytes = (size_t)props.l2_bytes * 4;
    CK(cudaMalloc(&flush, flush_bytes));
    int read_blocks = props.sm_count * 16;
    CK(cudaMalloc((void **)&read_out, read_blocks * sizeof(float)));
    hx = malloc(nmax * 8);
    if (!hx) {
        fprintf(stderr, "coopreduce: bench: out of host memory\n");
        reported = 1;
        goto fail;
    }
    gpu_ctx c0 = {h, 0, x, out, copy_dst, NULL, 0, read_out, read_blocks, 0, 0, NULL, 0};
    if (extras && headline(&c0, hx, batches)) goto fail;
    int total = nd * nn, done = 0;
    double t_start = bench_now_us();
    for (int d = 0; d < nd; d++) {
        int dt = (int)o->dtypes[d];
        const char *dname = coopreduce_dtype_name((coopreduce_dtype)dt);
        size_t es = elem_size(dt);
        cr_gen_fill(hx, 0, nmax, (coopreduce_dtype)dt, CR_GEN_UNIFORM, 1, cli_online_cpus());
        CK(cudaMemcpy(x, hx, nmax * es, cudaMemcpyHostToDevice));
        size_t tb = 0;
        CK(cr_bl_cub_sum(dt, x, out, nmax, NULL, &tb, NULL));
        if (temp) cudaFree(temp);
        temp = NULL;
        CK(cudaMalloc(&temp, tb + 16));
        for (int i = 0; i < nn; i++) {
            gpu_ctx c = {h,        dt,          x,     out, copy_dst, temp, tb,
                         read_out, read_blocks, ns[i], 0,   NULL,     0};
            const char *timing = cold ? "gpu_us_cold" : "gpu_us";
            double bytes = (double)ns[i] * es, us[5], noise[5];
            static const char *bnames[5] = {"", "cub", "float4_read", "empty_kernel", "d2d_copy"};
            for (int m = M_CUB; m <= M_COPY; m++) {
                us[m] = time_method(&c, m, batches, cold, flush, flush_bytes, &noise[m]);
                if (us[m] < 0) goto fail;
            }
            for (int m = M_CUB; m <= M_COPY; m++) {
                bench_row *r = bench_add_row(ns[i], dname, bnames[m], timing, us[m], noise[m],
                                             m == M_EMPTY ? 0 : (m == M_COPY ? 2 * bytes : bytes));
                if (r && m != M_EMPTY && m != M_COPY) {
                    r->ceiling_us = us[M_READ];
                    r->ref_us = us[M_CUB];
                }
            }
            for (int k = 0; k < nm; k++) {
                int sel = select_method(h, methods[k], nmax, dt, x, out);
                if (sel < 0) goto fail;
                if (sel > 0) continue;
                /* pipeline: once per --stages value (its default of 4 without the option) */
                int staged = methods[k] == COOPREDUCE_METHOD_PIPELINE && o->nstages;
                int variants = staged ? o->nstages : 1;
                for (int v = 0; v < variants; v++) {
                    const char *name = coopreduce_method_name(methods[k]);
                    if (staged) {
                        CKS(coopreduce_set_stages(h, o->stages[v]));
                        name = stage_names[o->stages[v]];
                    }
                    double noise_m,
                        t = time_method(&c, M_LIBRARY, batches, cold, flush, flush_bytes, &noise_m);
                    if (t < 0) goto fail;
                    bench_row *r = bench_add_row(ns[i], dname, name, timing, t, noise_m, bytes);
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
                        if (hu[w] < 0) {
                            fprintf(stderr, "coopreduce: bench: host latency run failed\n");
                            reported = 1;
                            goto fail;
                        }
                    }
                    static const char *hnames[4] = {"canonical_to_host", "empty_launch+sync",
                                                    "cub+memcpy", "cudaPointerGetAttributes"};
                    for (int w = 0; w < 4; w++) {
                        bench_row *q = bench_add_row(ns[i], dname, hnames[w], "host_us", hu[w],
                                                     hn[w], w == 1 || w == 3 ? 0 : bytes);
                        if (q) q->ref_us = hu[1];
                    }
                }
            }
            done++;
            fprintf(stderr, "  [%d/%d] %s n=%llu done (%.0f s)\n", done, total, dname,
                    (unsigned long long)ns[i], (bench_now_us() - t_start) * 1e-6);
        }
        if (extras) {
            uint64_t nd20 = nmax < (1ull << 24) ? nmax : (1ull << 24);
            gpu_ctx c = {h,        dt,          x,    out, copy_dst, temp, tb,
                         read_out, read_blocks, nd20, 0,   NULL,     0};
            if (distinct_results(&c, methods, nm, nd20)) goto fail;
        }
    }
    rc = 0;
fail:
    if (rc && !reported) fprintf(stderr, "coopreduce: bench: %s\n", coopreduce_last_error(h));
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
/* The float4 read of n elements (read1) and of 2n (read2: DOT's two arrays), in c's run; adds
 * the float4_read row. Returns 0, or -1 after a CUDA failure. */
static int time_reads(gpu_ctx *c, int batches, const char *dname, size_t es, double *read1,
                      double *read2)
{
    double noise;
    const uint64_t n = c->n;
    const int cold = c->flush != NULL;
    *read1 = time_method(c, M_READ, batches, cold, c->flush, c->flush_bytes, &noise);
    const double noise1 = noise;
    c->n = 2 * n;
    *read2 = time_method(c, M_READ, batches, cold, c->flush, c->flush_bytes, &noise);
    c->n = n;
    if (*read1 < 0 || *read2 < 0) return -1;
    bench_add_row(n, dname, "float4_read", cold ? "gpu_us_cold" : "gpu_us", *read1, noise1,
                  (double)n * es);
    return 0;
}

/* Each --op in each --mode as `call` (timed back to back, M_CALL), a row each against the read
 * of the same bytes; SUM rows carry cub_us (0: none) as their reference. An operation the
 * library refuses in a mode (or on this data: an empty segment) gets no row. Returns 0, or -1
 * after a failure of CUDA or of setting the mode. */
static int time_ops(gpu_ctx *c, const bench_options *o, bench_call *call, int batches,
                    const char *dname, size_t es, double read1, double read2, double cub_us,
                    uint64_t count)
{
    const uint64_t n = c->n;
    timed_call = call;
    for (int m = 0; m < o->nmodes; m++) {
        if (coopreduce_set_mode(c->h, o->modes[m])) return -1;
        for (int k = 0; k < o->nops; k++) {
            call->op = o->ops[k];
            if (!coopreduce_op_result_size(call->op, call->dtype, 0, NULL)) continue;
            if (bench_run_call(c->h, call) != COOPREDUCE_SUCCESS) {
                fprintf(stderr, "bench: %s %s (%s): %s\n", coopreduce_op_name(call->op), dname,
                        coopreduce_mode_name(o->modes[m]), coopreduce_last_error(c->h));
                continue;
            }
            const int cold = c->flush != NULL;
            double noise,
                t = time_method(c, M_CALL, batches, cold, c->flush, c->flush_bytes, &noise);
            if (t < 0) return -1;
            const int dot = call->op == COOPREDUCE_OP_DOT;
            const char *name = call->kind == BENCH_CALL_REDUCE
                                   ? bench_op_label(call->op, o->modes[m])
                                   : bench_batch_label(o, call->op, o->modes[m], count);
            bench_row *r =
                bench_add_op_row(n, dname, name, cold ? "gpu_us_cold" : "gpu_us", t, noise,
                                 (double)n * es * (dot ? 2 : 1), dot ? read2 : read1);
            if (r && call->op == COOPREDUCE_OP_SUM && cub_us > 0) r->ref_us = cub_us;
        }
    }
    return coopreduce_set_mode(c->h, COOPREDUCE_MODE_DETERMINISTIC) ? -1 : 0;
}

/* --op: each operation (in each --mode) over each dtype and n, against the float4 read of the
 * same bytes (both arrays for DOT, which reads y right after x) in the same run. */
int bench_ops_gpu(int ordinal, const bench_options *o)
{
    const uint64_t *ns = o->ns;
    const int nn = o->nn, nd = o->nd;
    const int batches = o->quick ? 5 : o->batches;
    coopreduce_handle *h = NULL;
    void *x = NULL, *out = NULL, *hx = NULL, *flush = NULL;
    float *read_out = NULL;
    int rc = 1;
    uint64_t nmax = 1;
    for (int i = 0; i < nn; i++)
        if (ns[i] > nmax) nmax = ns[i];
    coopreduce_gpu_props props;
    if (open_gpu(ordinal, &h, &props)) return 1;
    CK(cudaSetDevice(ordinal));
    CK(cudaMalloc(&x, 2 * nmax * 8 + 32));                 /* x, then y */
    const size_t flush_bytes = (size_t)props.l2_bytes * 4; /* --cold: as the methods' flush */
    if (o->cold) CK(cudaMalloc(&flush, flush_bytes));
    CK(cudaMalloc(&out, 16));
    const int read_blocks = props.sm_count * 16;
    CK(cudaMalloc((void **)&read_out, read_blocks * sizeof(float)));
    hx = malloc(2 * nmax * 8);
    if (!hx) {
        fprintf(stderr, "coopreduce: bench: out of host memory\n");
        reported = 1;
        goto fail;
    }
    for (int g = 0; g < nd * o->ndata; g++) {
        const coopreduce_dtype dt = o->dtypes[g / o->ndata];
        const cr_gen_kind data = o->data[g % o->ndata];
        const size_t es = elem_size(dt);
        const char *dname = bench_data_label(o, dt, data);
        if (cr_gen_fill(hx, 0, 2 * nmax, dt, data, 1, cli_online_cpus())) {
            fprintf(stderr, "coopreduce: bench: cannot generate %s data\n", dname);
            reported = 1;
            goto fail;
        }
        CK(cudaMemcpy(x, hx, 2 * nmax * es, cudaMemcpyHostToDevice));
        for (int i = 0; i < nn; i++) {
            const uint64_t n = ns[i];
            gpu_ctx c = {h,        dt,          x, out, NULL,  NULL,       0,
                         read_out, read_blocks, n, 0,   flush, flush_bytes};
            double read1, read2;
            if (time_reads(&c, batches, dname, es, &read1, &read2)) goto fail;
            /* --offset: x and y start E elements past the boundary (the allocation's 32 spare
             * bytes hold the shift); the read ceiling reads the aligned bytes */
            const char *xo = (const char *)x + (size_t)o->offset * es;
            bench_call call = {.kind = BENCH_CALL_REDUCE,
                               .dtype = dt,
                               .x = xo,
                               .y = xo + n * es,
                               .result = out,
                               .n = n};
            if (time_ops(&c, o, &call, batches, dname, es, read1, read2, 0, 1)) goto fail;
            fprintf(stderr, "  %s n=%llu done\n", dname, (unsigned long long)n);
        }
    }
    rc = 0;
fail:
    if (rc && !reported) fprintf(stderr, "coopreduce: bench: %s\n", coopreduce_last_error(h));
    coopreduce_destroy(h);
    if (x) cudaFree(x);
    if (out) cudaFree(out);
    if (flush) cudaFree(flush);
    if (read_out) cudaFree(read_out);
    free(hx);
    return rc;
}

/* The dtypes of CUB's segmented sum in baselines.cu (the 16-bit ones summed in float). */
static int cub_segmented_takes(coopreduce_dtype dt)
{
    return dt == COOPREDUCE_FLOAT32 || dt == COOPREDUCE_FLOAT64 || dt == COOPREDUCE_FLOAT16 ||
           dt == COOPREDUCE_BFLOAT16;
}

/* --shape/--axis or --segments on the GPU: each operation (in each --mode) over each dtype,
 * coopreduce_reduce_axis / coopreduce_reduce_segments timed as the other rows are (batches of
 * back-to-back calls between CUDA events; a segments call of the operations outside the
 * canonical order waits for its stream, as the library says) against the float4 read of the
 * same bytes, beside an empty kernel's time (row empty_kernel) and, where the results are 1/32
 * of the input or more, the read with their store (row read_write). With --op sum, also CUB's segmented sum
 * (row cub_segmented, the "x CUB" of the sum rows) over the same segments, or over the rows
 * when every extent after the axis is 1 (inner == 1: --axis 1 of RxC); CUB has no strided
 * form, so columns have no such row. */
int bench_batch_gpu(int ordinal, const bench_options *o)
{
    const int batches = o->quick ? 5 : o->batches;
    coopreduce_handle *h = NULL;
    void *x = NULL, *out = NULL, *hx = NULL, *d_off = NULL, *temp = NULL;
    size_t temp_alloc = 0;
    float *read_out = NULL;
    cli_segments seg = {NULL, 0};
    int rc = 1;
    uint64_t nmax = 1;
    for (int i = 0; i < o->nn; i++)
        if (o->ns[i] > nmax) nmax = o->ns[i];
    int wants_sum = 0;
    for (int k = 0; k < o->nops; k++) wants_sum |= o->ops[k] == COOPREDUCE_OP_SUM;
    coopreduce_gpu_props props;
    if (open_gpu(ordinal, &h, &props)) return 1;
    CK(cudaSetDevice(ordinal));
    CK(cudaMalloc(&x, 2 * nmax * 8 + 32)); /* x, then y */
    const int read_blocks = props.sm_count * 16;
    CK(cudaMalloc((void **)&read_out, read_blocks * sizeof(float)));
    hx = malloc(2 * nmax * 8);
    if (!hx) {
        fprintf(stderr, "coopreduce: bench: out of host memory\n");
        reported = 1;
        goto fail;
    }
    for (int i = 0; i < o->nn; i++) {
        const uint64_t n = o->ns[i];
        bench_call call = {.kind = o->have_segments ? BENCH_CALL_SEGMENTS : BENCH_CALL_AXIS};
        uint64_t count;
        if (o->have_segments) {
            free(seg.offsets);
            if (cli_random_segments(n, o->seg_min, o->seg_max, 1, &seg) != EXIT_OK) {
                reported = 1;
                goto fail;
            }
            if (d_off) cudaFree(d_off);
            d_off = NULL;
            CK(cudaMalloc(&d_off, sizeof(int64_t) * (seg.nseg + 1)));
            CK(cudaMemcpy(d_off, seg.offsets, sizeof(int64_t) * (seg.nseg + 1),
                          cudaMemcpyHostToDevice));
            call.offsets = d_off;
            call.nseg = count = seg.nseg;
            call.n = n;
        } else {
            cli_shape reduced;
            cli_axis_view(&o->shape, 0, o->axis, 0, &call.outer, &call.len, &call.inner, &reduced);
            count = call.outer * call.inner;
        }
        if (out) cudaFree(out);
        out = NULL;
        CK(cudaMalloc(&out, (count + 1) * 16));
        call.result = out;
        const uint64_t longest = o->have_segments ? (o->seg_max < n ? o->seg_max : n) : call.len;
        const int contiguous = o->have_segments || call.inner == 1;
        if (wants_sum && !contiguous && i == 0)
            fprintf(stderr,
                    "bench: no cub_segmented row along axis %d: CUB's segmented sum "
                    "takes contiguous segments, not columns\n",
                    o->axis);
        for (int g = 0; g < o->nd * o->ndata; g++) {
            const coopreduce_dtype dt = o->dtypes[g / o->ndata];
            const size_t es = elem_size(dt);
            const char *dname = bench_data_label(o, dt, o->data[g % o->ndata]);
            if (cr_gen_fill(hx, 0, 2 * n, dt, o->data[g % o->ndata], 1, cli_online_cpus())) {
                fprintf(stderr, "coopreduce: bench: cannot generate %s data\n", dname);
                reported = 1;
                goto fail;
            }
            CK(cudaMemcpy(x, hx, 2 * n * es, cudaMemcpyHostToDevice));
            CKS(coopreduce_reserve(h, longest, dt));
            call.dtype = dt;
            /* --offset: x and y start E elements past the boundary (32 spare bytes) */
            call.x = (const char *)x + (size_t)o->offset * es;
            call.y = (const char *)x + (n + (uint64_t)o->offset) * es;
            gpu_ctx c = {h, dt, x, out, NULL, NULL, 0, read_out, read_blocks, n, 0, NULL, 0};
            timed_call = &call;
            double noise, read1, read2;
            if (time_reads(&c, batches, dname, es, &read1, &read2)) goto fail;
            /* An empty kernel's launch, the other half of a small batch's bound (launch + read). */
            const double empty_us = time_method(&c, M_EMPTY, batches, 0, NULL, 0, &noise);
            if (empty_us < 0) goto fail;
            bench_add_row(n, dname, "empty_kernel", "gpu_us", empty_us, noise, 0);
            /* Results of at least 4 bytes each (wider for float64), when they are 1/32 of the
             * input or more (rows of at most 32 elements) and no more than it (not 16-bit rows
             * of one element): the read with their store among it, the ceiling of such shapes
             * (row read_write; its bytes: read plus written). */
            const uint64_t wbytes = count * (es < 4 ? 4 : es) / 16 * 16;
            if (wbytes && wbytes * 32 >= n * es && wbytes <= n * es / 16 * 16) {
                c.write_bytes = wbytes;
                const double rw_us = time_method(&c, M_READ_WRITE, batches, 0, NULL, 0, &noise);
                if (rw_us < 0) goto fail;
                bench_row *r = bench_add_row(n, dname, "read_write", "gpu_us", rw_us, noise,
                                             (double)n * es + (double)wbytes);
                if (r) r->ceiling_us = read1;
            }
            /* CUB's segmented sum: its temporary storage sized and allocated here, outside the
             * timing; one untimed call reports a failure by name. */
            double cub_us = 0;
            if (wants_sum && contiguous && !cub_segmented_takes(dt))
                fprintf(stderr, "bench: no cub_segmented row for %s (float types only)\n", dname);
            if (wants_sum && contiguous && cub_segmented_takes(dt)) {
                size_t tb = 0;
                CK(cub_segmented(&call, NULL, &tb));
                if (tb + 16 > temp_alloc) {
                    if (temp) cudaFree(temp);
                    temp = NULL;
                    temp_alloc = 0;
                    CK(cudaMalloc(&temp, tb + 16));
                    temp_alloc = tb + 16;
                }
                c.temp = temp;
                c.temp_bytes = temp_alloc;
                CK(cub_segmented(&call, temp, &c.temp_bytes));
                CK(cudaDeviceSynchronize());
                cub_us = time_method(&c, M_CUB_SEG, batches, 0, NULL, 0, &noise);
                if (cub_us < 0) goto fail;
                bench_row *r = bench_add_row(n, dname, "cub_segmented", "gpu_us", cub_us, noise,
                                             (double)n * es);
                if (r) {
                    r->ceiling_us = read1;
                    r->ref_us = cub_us;
                }
            }
            if (time_ops(&c, o, &call, batches, dname, es, read1, read2, cub_us, count)) goto fail;
            fprintf(stderr, "  %s n=%llu done\n", dname, (unsigned long long)n);
        }
    }
    rc = 0;
fail:
    if (rc && !reported) fprintf(stderr, "coopreduce: bench: %s\n", coopreduce_last_error(h));
    coopreduce_destroy(h);
    if (x) cudaFree(x);
    if (out) cudaFree(out);
    if (d_off) cudaFree(d_off);
    if (temp) cudaFree(temp);
    if (read_out) cudaFree(read_out);
    free(seg.offsets);
    free(hx);
    return rc;
}

#else

int bench_batch_gpu(int ordinal, const bench_options *o) { return bench_gpu(ordinal, o); }

int bench_gpu(int ordinal, const bench_options *o)
{
    (void)ordinal, (void)o;
    cli_error("this build has no GPU path (built without CUDA)");
    return 1;
}

int bench_ops_gpu(int ordinal, const bench_options *o) { return bench_gpu(ordinal, o); }

#endif
