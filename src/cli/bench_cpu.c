/* bench_cpu.c — the CPU benchmark: host wall time of coopreduce_reduce against a streaming read
 * of the same bytes on the same threads. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "device.h"
#include "gen.h"
#include "messages.h"
#include "offsets.h"
#include "shape.h"

/* The CPU ceiling (the canonical sum, and every --op): every byte read once and added as a
 * 64-bit integer (no floating point, so no data pattern can slow it down), four independent
 * vector accumulators. Unsigned: the total is meaningless and wraps, as it is allowed to. */
typedef uint64_t v8u __attribute__((vector_size(64)));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static uint64_t
stream_read_bytes(const unsigned char *x, uint64_t bytes)
{
    v8u a = {0}, b = {0}, c = {0}, d = {0}, t;
    uint64_t i = 0;
    for (; i + 256 <= bytes; i += 256) {
        memcpy(&t, x + i, 64);
        a += t;
        memcpy(&t, x + i + 64, 64);
        b += t;
        memcpy(&t, x + i + 128, 64);
        c += t;
        memcpy(&t, x + i + 192, 64);
        d += t;
    }
    a += b + c + d;
    uint64_t s = 0;
    for (int j = 0; j < 8; j++) s += a[j];
    for (; i < bytes; i++) s += x[i];
    return s;
}

typedef struct {
    const unsigned char *x;
    uint64_t bytes;
    uint64_t out;
} bytes_job;
static void *bytes_worker(void *p)
{
    bytes_job *j = p;
    j->out = stream_read_bytes(j->x, j->bytes);
    return NULL;
}

#define MAX_READ_THREADS 256

/* Host wall time of reading `bytes` bytes at x on `threads` threads (64-byte aligned splits). */
static double cpu_bytes_us(const void *x, uint64_t bytes, int threads)
{
    bytes_job jobs[MAX_READ_THREADS];
    pthread_t tid[MAX_READ_THREADS];
    int started[MAX_READ_THREADS] = {0};
    if (threads > MAX_READ_THREADS) threads = MAX_READ_THREADS;
    double t0 = bench_now_us();
    for (int i = 0; i < threads; i++) {
        uint64_t a = bytes / 64 * (uint64_t)i / (uint64_t)threads * 64;
        uint64_t b =
            i + 1 == threads ? bytes : bytes / 64 * (uint64_t)(i + 1) / (uint64_t)threads * 64;
        jobs[i] = (bytes_job){(const unsigned char *)x + a, b - a, 0};
        /* A thread that cannot start: its share is read here instead. */
        if (i) started[i] = pthread_create(&tid[i], NULL, bytes_worker, &jobs[i]) == 0;
    }
    bytes_worker(&jobs[0]);
    for (int i = 1; i < threads; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            bytes_worker(&jobs[i]);
    }
    double t = bench_now_us() - t0;
    volatile uint64_t sink = jobs[0].out;
    (void)sink;
    return t;
}

/* Host wall times of the library call c in each of the `nm` modes (modes NULL, nm 1: the
 * handle's mode as it is) and of the streaming read of the same `bytes` (at c->x) on the same
 * threads, `reps` (<= 64) rounds after one warm-up of each: a round runs the read and every mode
 * once, starting one later each round, so that none inherits another's cache state every time
 * and the modes' medians (and their ratio, exact against deterministic) see the same machine,
 * where loops run one after the other moved it by up to 1.8x on a 2-core machine. Medians and
 * noise; nonzero when a call fails. */
static int time_cpu_modes(coopreduce_handle *h, const bench_call *c, const coopreduce_mode *modes,
                          int nm, uint64_t bytes, int nthreads, int reps, double *med_s,
                          double *noise_s, double *med_r, double *noise_r)
{
    double ts[BENCH_MAX_LIST][64], tr[64];
    if (reps > 64) reps = 64;
    for (int m = 0; m < nm; m++)
        if ((modes && coopreduce_set_mode(h, modes[m])) || bench_run_call(h, c)) return 1;
    cpu_bytes_us(c->x, bytes, nthreads); /* (the warm-ups) */
    for (int j = 0; j < reps; j++) {
        for (int q = 0; q <= nm; q++) {
            const int m = (j + q) % (nm + 1); /* nm: the read */
            if (m == nm) {
                tr[j] = cpu_bytes_us(c->x, bytes, nthreads);
                continue;
            }
            if (modes && coopreduce_set_mode(h, modes[m])) return 1;
            const double t0 = bench_now_us();
            if (bench_run_call(h, c)) return 1;
            ts[m][j] = bench_now_us() - t0;
        }
    }
    for (int m = 0; m < nm; m++) bench_median_noise(ts[m], reps, &med_s[m], &noise_s[m]);
    bench_median_noise(tr, reps, med_r, noise_r);
    return 0;
}

static uint64_t largest(const uint64_t *ns, int nn)
{
    uint64_t nmax = 1;
    for (int i = 0; i < nn; i++)
        if (ns[i] > nmax) nmax = ns[i];
    return nmax;
}

/* An aligned buffer of `count` elements of `elem` bytes; prints its own error. */
static void *alloc_data(uint64_t count, size_t elem)
{
    void *p = NULL;
    if (count > SIZE_MAX / elem || posix_memalign(&p, 64, (size_t)(count * elem)) != 0) {
        cli_error("bench: cannot allocate %llu elements of %zu bytes", (unsigned long long)count,
                  elem);
        return NULL;
    }
    return p;
}

int bench_cpu(const bench_options *o)
{
    uint64_t nmax = largest(o->ns, o->nn);
    int nthreads = o->threads > 0 ? o->threads : cli_online_cpus();
    int reps = o->quick ? 5 : 9;
    float *x = alloc_data(nmax, sizeof(float));
    if (x == NULL) return 1;
    cr_gen_fill(x, 0, nmax, COOPREDUCE_FLOAT32, CR_GEN_UNIFORM, 1, nthreads);
    coopreduce_handle *h = NULL;
    if (coopreduce_create_cpu(&h, o->threads)) {
        cli_error("%s", coopreduce_last_error(NULL));
        free(x);
        return 1;
    }
    for (int i = 0; i < o->nn; i++) {
        uint64_t n = o->ns[i];
        double med_s, med_r, noise_s, noise_r;
        unsigned char result[16];
        bench_call c = {.kind = BENCH_CALL_REDUCE,
                        .op = COOPREDUCE_OP_SUM,
                        .dtype = COOPREDUCE_FLOAT32,
                        .x = x,
                        .result = result,
                        .n = n};
        if (time_cpu_modes(h, &c, NULL, 1, n * sizeof *x, nthreads, reps, &med_s, &noise_s,
                           &med_r, &noise_r)) {
            cli_error("bench: %s", coopreduce_last_error(h));
            coopreduce_destroy(h);
            free(x);
            return 1;
        }
        bench_row *a =
            bench_add_row(n, "float32", "stream_read", "host_us", med_r, noise_r, (double)n * 4.0);
        bench_row *b =
            bench_add_row(n, "float32", "canonical", "host_us", med_s, noise_s, (double)n * 4.0);
        if (a) a->ceiling_us = med_r;
        if (b) b->ceiling_us = med_r;
        fprintf(stderr, "  cpu n=%llu done\n", (unsigned long long)n);
    }
    coopreduce_destroy(h);
    free(x);
    return 0;
}

/* --op on the CPU: each operation over each dtype (and --data kind) and n, in each --mode in
 * turn (time_cpu_modes), host wall time of coopreduce_reduce against the integer streaming read
 * of the same bytes (both arrays for DOT); medians of 5 (--quick) or 9. */
int bench_ops_cpu(const bench_options *o)
{
    uint64_t nmax = largest(o->ns, o->nn);
    const int nthreads = o->threads > 0 ? o->threads : cli_online_cpus();
    const int reps = o->quick ? 5 : 9;
    unsigned char *x = alloc_data(2 * nmax + 2, 8); /* x, then y for DOT; 16 bytes for --offset */
    if (x == NULL) return 1;
    coopreduce_handle *h = NULL;
    if (coopreduce_create_cpu(&h, o->threads)) {
        cli_error("%s", coopreduce_last_error(NULL));
        free(x);
        return 1;
    }
    int rc = 1;
    unsigned char result[16];
    for (int g = 0; g < o->nd * o->ndata; g++) {
        const coopreduce_dtype dt = o->dtypes[g / o->ndata];
        const cr_gen_kind data = o->data[g % o->ndata];
        const size_t es = coopreduce_dtype_size(dt);
        const char *dname = bench_data_label(o, dt, data);
        if (cr_gen_fill(x, 0, 2 * nmax, dt, data, 1, nthreads)) {
            cli_error("bench: cannot generate %s data", dname);
            goto out;
        }
        for (int i = 0; i < o->nn; i++) {
            const uint64_t n = o->ns[i];
            for (int k = 0; k < o->nops; k++) {
                const coopreduce_op op = o->ops[k];
                if (!coopreduce_op_result_size(op, dt, 0, NULL)) continue; /* sumsq of ints */
                const int dot = op == COOPREDUCE_OP_DOT;
                const unsigned char *xo = x + (size_t)o->offset * es, *y = xo + n * es;
                /* the modes that take this call (a mode that refuses it has no row) */
                coopreduce_mode modes[BENCH_MAX_LIST];
                int nm = 0;
                for (int m = 0; m < o->nmodes; m++) {
                    if (coopreduce_set_mode(h, o->modes[m])) goto out;
                    if (coopreduce_reduce(op, xo, y, result, n, dt, h, NULL) !=
                        COOPREDUCE_SUCCESS) {
                        fprintf(stderr, "bench: %s %s (%s): %s\n", coopreduce_op_name(op), dname,
                                coopreduce_mode_name(o->modes[m]), coopreduce_last_error(h));
                        continue;
                    }
                    modes[nm++] = o->modes[m];
                }
                if (nm == 0) continue;
                const uint64_t bytes = n * es * (dot ? 2 : 1);
                double med_s[BENCH_MAX_LIST], noise_s[BENCH_MAX_LIST], med_r, noise_r;
                bench_call c = {.kind = BENCH_CALL_REDUCE,
                                .op = op,
                                .dtype = dt,
                                .x = xo,
                                .y = y,
                                .result = result,
                                .n = n};
                if (time_cpu_modes(h, &c, modes, nm, bytes, nthreads, reps, med_s, noise_s,
                                   &med_r, &noise_r))
                    goto out;
                for (int m = 0; m < nm; m++)
                    bench_add_op_row(n, dname, bench_op_label(op, modes[m]), "host_us", med_s[m],
                                     noise_s[m], (double)bytes, med_r);
            }
            fprintf(stderr, "  cpu %s n=%llu done\n", dname, (unsigned long long)n);
        }
    }
    rc = 0;
out:
    if (rc) cli_error("bench: %s", coopreduce_last_error(h));
    coopreduce_destroy(h);
    free(x);
    return rc;
}

/* --shape/--axis or --segments on the CPU: each operation (in each --mode) over each dtype,
 * host wall time of coopreduce_reduce_axis / coopreduce_reduce_segments against the streaming
 * read of the same bytes (x, and y for DOT), medians of 5 (--quick) or 9. With --segments, the
 * segments of each n are drawn anew (seed 1: the same on every machine). */
int bench_batch_cpu(const bench_options *o)
{
    const int nthreads = o->threads > 0 ? o->threads : cli_online_cpus();
    const int reps = o->quick ? 5 : 9;
    uint64_t nmax = 1;
    for (int i = 0; i < o->nn; i++)
        if (o->ns[i] > nmax) nmax = o->ns[i];
    unsigned char *x = alloc_data(2 * nmax + 2, 8), *result = NULL; /* 16 bytes for --offset */
    cli_segments seg = {NULL, 0};
    coopreduce_handle *h = NULL;
    int rc = 1;
    if (x == NULL) return 1;
    if (coopreduce_create_cpu(&h, o->threads)) {
        cli_error("%s", coopreduce_last_error(NULL));
        goto out;
    }
    for (int i = 0; i < o->nn; i++) {
        const uint64_t n = o->ns[i];
        bench_call c = {.kind = o->have_segments ? BENCH_CALL_SEGMENTS : BENCH_CALL_AXIS};
        uint64_t count;
        if (o->have_segments) {
            free(seg.offsets);
            if (cli_random_segments(n, o->seg_min, o->seg_max, 1, &seg) != EXIT_OK) goto out;
            c.offsets = seg.offsets;
            c.nseg = count = seg.nseg;
            c.n = n;
        } else {
            cli_shape reduced;
            cli_axis_view(&o->shape, 0, o->axis, 0, &c.outer, &c.len, &c.inner, &reduced);
            count = c.outer * c.inner;
        }
        free(result);
        if ((result = alloc_data(count + 1, 16)) == NULL) goto out;
        c.result = result;
        for (int g = 0; g < o->nd * o->ndata; g++) {
            const coopreduce_dtype dt = o->dtypes[g / o->ndata];
            const size_t es = coopreduce_dtype_size(dt);
            const char *dname = bench_data_label(o, dt, o->data[g % o->ndata]);
            if (cr_gen_fill(x, 0, 2 * n, dt, o->data[g % o->ndata], 1, nthreads)) {
                cli_error("bench: cannot generate %s data", dname);
                goto out;
            }
            c.dtype = dt;
            c.x = x + (size_t)o->offset * es;
            c.y = x + (n + (uint64_t)o->offset) * es;
            for (int m = 0; m < o->nmodes; m++) {
                if (coopreduce_set_mode(h, o->modes[m])) goto out;
                for (int k = 0; k < o->nops; k++) {
                    c.op = o->ops[k];
                    if (!coopreduce_op_result_size(c.op, dt, 0, NULL)) continue; /* sumsq of ints */
                    if (bench_run_call(h, &c) != COOPREDUCE_SUCCESS) {
                        fprintf(stderr, "bench: %s %s (%s): %s\n", coopreduce_op_name(c.op), dname,
                                coopreduce_mode_name(o->modes[m]), coopreduce_last_error(h));
                        continue; /* a mode that refuses it, an empty segment for min: no row */
                    }
                    const uint64_t bytes = n * es * (c.op == COOPREDUCE_OP_DOT ? 2 : 1);
                    double med_s, med_r, noise_s, noise_r;
                    if (time_cpu_modes(h, &c, NULL, 1, bytes, nthreads, reps, &med_s, &noise_s,
                                       &med_r, &noise_r))
                        goto out;
                    const char *name = bench_batch_label(o, c.op, o->modes[m], count);
                    bench_add_op_row(n, dname, name, "host_us", med_s, noise_s, (double)bytes,
                                     med_r);
                }
            }
            fprintf(stderr, "  cpu %s n=%llu done\n", dname, (unsigned long long)n);
        }
    }
    rc = 0;
out:
    if (rc && h != NULL) cli_error("bench: %s", coopreduce_last_error(h));
    coopreduce_destroy(h);
    free(seg.offsets);
    free(result);
    free(x);
    return rc;
}
