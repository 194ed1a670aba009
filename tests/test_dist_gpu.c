/* test_dist_gpu.c — sharded reductions and the all-reduce over NCCL on every GPU of one machine,
 * without MPI: one process, one thread per GPU, each with its own NCCL communicator (made by
 * ncclCommInitRank with a unique id shared in the process), GPU handle and stream. With one GPU
 * it runs with one rank; with several it uses them all (--ranks R: the first R).
 *
 *   test_dist_gpu [--quick [--small]] [--deep] [--ranks R]
 *       every op x dtype x mode (dist_check.c), equal and uneven splits with empty shards: bits
 *       equal to the 1-D call on the whole array on the CPU and on the rank's own GPU; the
 *       all-reduce against coopreduce_reduce_axis along axis 0 of the stacked arrays; the errors
 *       every rank must report.
 *   test_dist_gpu --bench [--bench-log2n K] [--ranks R] [--reps N]
 *       the sharded float32 sum of 2^K elements per GPU (default 2^30) against one GPU's sum of
 *       its shard; the all-reduce of 8 B, 1 MB and 256 MB of float32 against ncclAllReduce,
 *       timed with CUDA events on each rank's stream (the slowest rank's time), with NCCL's bus
 *       bandwidth (bytes * 2 (R-1) / R / time); the latency a small sharded sum adds over the
 *       local one, against a small ncclAllReduce, and what the pieces of a small call cost (a
 *       stream synchronisation, small copies, small NCCL gathers), and the 256 MB all-reduce's
 *       data path through NCCL alone (the all-to-all as grouped send/recv and as ncclAlltoAll,
 *       the all-gather, both in one group). Then the bits: a sum of 100000007 random
 *       values split unevenly, on one GPU, sharded, and as shard sums + ncclAllReduce; and a hash
 *       of each all-reduce's result, to compare across NCCL_ALGO / NCCL_PROTO settings and rank
 *       counts. Exits 1 if coopreduce's bits differ between ranks or from one GPU.
 * Exits 77 (ctest: skipped) without a GPU, or in a build without CUDA or NCCL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(COOPREDUCE_HAVE_CUDA) && defined(COOPREDUCE_DIST_HAVE_NCCL)
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <time.h>
#include "coopreduce.h"
#include "coopreduce_dist.h"
#include "dist_check.h"

static void *dev_alloc(size_t b)
{
    void *p = NULL;
    if (cudaMalloc(&p, b ? b : 16) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) failed\n", b);
        exit(1);
    }
    return p;
}
static void dev_free(void *p) { cudaFree(p); }
static void to_dev(void *d, const void *s, size_t b) { cudaMemcpy(d, s, b, cudaMemcpyHostToDevice); }
static void to_host(void *d, const void *s, size_t b) { cudaMemcpy(d, s, b, cudaMemcpyDeviceToHost); }

typedef struct {
    int rank, size, quick, small, deep, bench, reps, log2n;
    ncclUniqueId id;
    pthread_barrier_t *bar;
    unsigned long long passed, failed;
    int setup_failed;
    double t[40]; /* bench: per-rank times (seconds) */
    uint32_t bits[3];       /* bench: one GPU (rank 0), sharded, shard sums + ncclAllReduce */
    uint64_t shard[2];      /* bench: this rank's shard of the bits array (first, length) */
    uint64_t hash[6];       /* bench: all-reduce results, ncclAllReduce and coopreduce per size */
} rank_job;

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
/* The median of v[0..n) (sorted in place). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Milliseconds of `reps` repetitions of what run() enqueues, by events on stream. */
#define EVENT_TIME(ms, stream, reps, body)                                                         \
    do {                                                                                           \
        cudaEvent_t a_, b_;                                                                        \
        cudaEventCreate(&a_);                                                                      \
        cudaEventCreate(&b_);                                                                      \
        cudaEventRecord(a_, stream);                                                               \
        for (int r_ = 0; r_ < (reps); r_++) {                                                      \
            body;                                                                                  \
        }                                                                                          \
        cudaEventRecord(b_, stream);                                                               \
        cudaEventSynchronize(b_);                                                                  \
        float f_ = 0;                                                                              \
        cudaEventElapsedTime(&f_, a_, b_);                                                         \
        (ms) = f_ / (reps);                                                                        \
        cudaEventDestroy(a_);                                                                      \
        cudaEventDestroy(b_);                                                                      \
    } while (0)

/* The bench's data: element g of the global array, a float in [-1, 1) from a counter-based hash
 * (the array is the same whatever the number of ranks), signed so that the order of additions
 * shows in the bits. */
static float bench_value(uint64_t g)
{
    uint64_t z = g * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(int64_t)z * 0x1p-63);
}

/* Fills d[0..n) with elements [first, first + n) of the global array, through a host buffer of
 * 2^22 floats at a time. */
static int bench_fill(float *d, uint64_t first, uint64_t n)
{
    const uint64_t B = 1ull << 22;
    float *h = malloc(B * sizeof *h);
    if (!h) return 1;
    for (uint64_t i = 0; i < n; i += B) {
        const uint64_t m = n - i < B ? n - i : B;
        for (uint64_t k = 0; k < m; k++) h[k] = bench_value(first + i + k);
        if (cudaMemcpy(d + i, h, m * sizeof *h, cudaMemcpyHostToDevice) != cudaSuccess) {
            free(h);
            return 1;
        }
    }
    free(h);
    return 0;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* FNV-1a of a device buffer's bytes: the all-reduce's result, compared across NCCL settings. */
static uint64_t dev_hash(const void *d, size_t bytes)
{
    unsigned char *h = malloc(bytes);
    uint64_t x = 0xcbf29ce484222325ull;
    if (!h || cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(h);
        return 0;
    }
    for (size_t i = 0; i < bytes; i++) x = (x ^ h[i]) * 0x100000001b3ull;
    free(h);
    return x;
}

/* An all-to-all's point-to-point calls (inside the caller's NCCL group): block q of send
 * (bytes at send + q * bytes) to rank q, rank q's into recv + q * bytes, every peer but me. */
static void peers_sendrecv(const void *send, void *recv, size_t bytes, int R, int me,
                           ncclComm_t nc, cudaStream_t st)
{
    for (int q = 0; q < R; q++) {
        if (q == me) continue;
        ncclSend((const char *)send + (size_t)q * bytes, bytes, ncclUint8, q, nc, st);
        ncclRecv((char *)recv + (size_t)q * bytes, bytes, ncclUint8, q, nc, st);
    }
}

enum { MAX_SAMPLES = 1000 };

/* The float32 SUM all-reduce of cnt values and an 8 B ncclAllReduce of scratch (r), each waited
 * for, in turn n times (n <= MAX_SAMPLES): the median seconds of each. */
static void waited_in_turn(const void *send, void *recv, uint64_t cnt, float *r, coopreduce_handle *h,
                           coopreduce_comm *comm, ncclComm_t nc, cudaStream_t st, int n,
                           double *ours, double *theirs)
{
    double w_cr[MAX_SAMPLES], w_nc[MAX_SAMPLES];
    for (int k = 0; k < n; k++) {
        double t1 = now();
        coopreduce_allreduce(send, recv, cnt, COOPREDUCE_FLOAT32, COOPREDUCE_OP_SUM, h, comm, st);
        cudaStreamSynchronize(st);
        w_cr[k] = now() - t1;
        t1 = now();
        ncclAllReduce(r, r + 4, 2, ncclFloat32, ncclSum, nc, st);
        cudaStreamSynchronize(st);
        w_nc[k] = now() - t1;
    }
    *ours = median(w_cr, n);
    *theirs = median(w_nc, n);
}

static void bench(rank_job *j, coopreduce_handle *h, coopreduce_comm *comm, ncclComm_t nc,
                  cudaStream_t st)
{
    const int R = j->size, reps = j->reps;
    const uint64_t n = 1ull << j->log2n;
    float *x = NULL;
    if (cudaMalloc((void **)&x, n * 4) != cudaSuccess || bench_fill(x, (uint64_t)j->rank * n, n)) {
        fprintf(stderr, "rank %d: cannot allocate or fill 2^%d floats\n", j->rank, j->log2n);
        j->setup_failed = 1;
        pthread_barrier_wait(j->bar);
        return;
    }
    float *r = dev_alloc(64);
    /* one GPU's sum of its shard (the baseline), then the sharded sum of all shards */
    coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, r, n, COOPREDUCE_FLOAT32, h, st); /* warm */
    cudaStreamSynchronize(st);
    float ms_local;
    EVENT_TIME(ms_local, st, reps, coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, r, n, COOPREDUCE_FLOAT32, h, st));
    j->t[0] = ms_local * 1e-3;
    coopreduce_status cs =
        coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, r, n, COOPREDUCE_FLOAT32, h, comm, st);
    if (cs) {
        fprintf(stderr, "rank %d: coopreduce_reduce_sharded: %s\n", j->rank, coopreduce_last_error(h));
        j->setup_failed = 1;
    }
    cudaStreamSynchronize(st);
    pthread_barrier_wait(j->bar);
    double t0 = now();
    for (int k = 0; k < reps; k++)
        coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, r, n, COOPREDUCE_FLOAT32, h, comm, st);
    cudaStreamSynchronize(st);
    j->t[1] = (now() - t0) / reps;
    /* the latency the sharded path adds: a small sharded sum (one chunk per GPU) against the
     * local sum of the same 4096 elements (host clock, each call waited for) */
    /* (once untimed: the first call's point-to-point connections, which a gather of a small
     * array sets up on first use, are not its latency) */
    coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, r, 4096, COOPREDUCE_FLOAT32, h, comm, st);
    cudaStreamSynchronize(st);
    /* The three in turn in one loop (the sharded sum, the local sum, and one small
     * ncclAllReduce, which the added latency is measured by), each call waited for, and the
     * median of each: a drift of the machine's pace (other tenants, clocks) then moves all
     * three alike, and a stray slow call none. */
    pthread_barrier_wait(j->bar);
    float host_r;
    const int nl = reps * 10 < MAX_SAMPLES ? reps * 10 : MAX_SAMPLES;
    double lat[3 * MAX_SAMPLES];
    for (int k = 0; k < nl; k++) {
        double t1 = now();
        coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, r, 4096, COOPREDUCE_FLOAT32, h, comm, st);
        cudaMemcpyAsync(&host_r, r, 4, cudaMemcpyDeviceToHost, st);
        cudaStreamSynchronize(st);
        lat[k] = now() - t1;
        t1 = now();
        coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, r, 4096, COOPREDUCE_FLOAT32, h, st);
        cudaMemcpyAsync(&host_r, r, 4, cudaMemcpyDeviceToHost, st);
        cudaStreamSynchronize(st);
        lat[nl + k] = now() - t1;
        t1 = now();
        ncclAllReduce(r, r + 4, 2, ncclFloat32, ncclSum, nc, st);
        cudaStreamSynchronize(st);
        lat[2 * nl + k] = now() - t1;
    }
    j->t[2] = median(lat, nl);
    j->t[9] = median(lat + nl, nl);
    j->t[10] = median(lat + 2 * nl, nl);
    /* What the pieces of a small distributed call cost here, host clock, each waited for:
     * an idle stream's synchronisation, 48-byte copies each way through pinned memory, a
     * 16-byte memset (a kernel's launch), ncclAllGather of 48 bytes, and the first exchange's
     * group (48 bytes and 4 KB gathered in one launch). */
    {
        char *pin = NULL;
        const int pinned = cudaMallocHost((void **)&pin, 1 << 16) == cudaSuccess;
        if (!pinned) pin = malloc(1 << 16); /* every rank must still take part */
        char *dv = dev_alloc((size_t)(R + 1) * 8192), *dg = dev_alloc((size_t)(R + 1) * 16384);
        const int rr = reps * 10;
        double *pt = j->t + 16;
        for (int piece = 0; piece < 8 && pin; piece++) {
            pthread_barrier_wait(j->bar);
            t0 = now();
            for (int k = 0; k < rr; k++) {
                switch (piece) {
                case 0: break;
                case 1: cudaMemcpyAsync(dv, pin, 48, cudaMemcpyHostToDevice, st); break;
                case 2: cudaMemcpyAsync(pin, dv, 48, cudaMemcpyDeviceToHost, st); break;
                case 3: cudaMemsetAsync(dv, 0, 16, st); break;
                case 4: ncclAllGather(dv, dv + 64, 48, ncclUint8, nc, st); break;
                case 5:
                    ncclGroupStart();
                    ncclAllGather(dv, dv + 64, 48, ncclUint8, nc, st);
                    ncclAllGather(dv + 4096 + 4096 * (size_t)j->rank, dv + 4096, 4096, ncclUint8, nc, st);
                    ncclGroupEnd();
                    break;
                case 6: /* a small array's gather: 16 KB a rank, one collective */
                    ncclAllGather(dg + 16384 * (size_t)j->rank, dg, 16384, ncclUint8, nc, st);
                    break;
                default: /* the same by grouped point-to-point calls */
                    ncclGroupStart();
                    for (int q = 0; q < R; q++) {
                        if (q == j->rank) continue;
                        ncclSend(dg + 16384 * (size_t)j->rank, 16384, ncclUint8, q, nc, st);
                        ncclRecv(dg + 16384 * (size_t)q, 16384, ncclUint8, q, nc, st);
                    }
                    ncclGroupEnd();
                }
                cudaStreamSynchronize(st);
            }
            pt[piece < 6 ? piece : 12 + piece - 6] = (now() - t0) / rr;
        }
        /* the host's part alone (calls returning, not waited for): a kernel launch (a memset),
         * ncclAllGather of a first exchange's slots, and the axis-0 reduction of R x 1040 floats */
        for (int piece = 0; piece < 4; piece++) {
            cudaStreamSynchronize(st);
            pthread_barrier_wait(j->bar);
            t0 = now();
            for (int k = 0; k < rr; k++) {
                if (piece == 0) cudaMemsetAsync(dv, 0, 16, st);
                else if (piece == 1) ncclAllGather(dg, dg + 4160, 4160, ncclUint8, nc, st);
                else coopreduce_reduce_axis(COOPREDUCE_OP_SUM, dg, NULL, dv, 1, (uint64_t)R, 1040,
                                            COOPREDUCE_FLOAT32, h, st);
                if (piece == 3) cudaStreamSynchronize(st); /* and each waited for */
            }
            pt[14 + piece] = (now() - t0) / rr;
        }
        cudaFree(dg);
        if (pinned)
            cudaFreeHost(pin);
        else
            free(pin);
        cudaFree(dv);
    }
    cudaFree(x);
    x = NULL;

    /* The bits: an array of Nb elements split unevenly (2/5 on the first rank, the rest evenly),
     * its sum on one GPU (rank 0 holds the whole array), the sharded sum, and what people do
     * today: each rank's sum of its shard, then ncclAllReduce of those sums. */
    const uint64_t Nb = 100000007ull;
    uint64_t first = 0, len = 0;
    for (int q = 0; q <= j->rank; q++) {
        first += len;
        len = R == 1 ? Nb : q == 0 ? Nb / 5 * 2 : (Nb - Nb / 5 * 2) / (uint64_t)(R - 1);
        if (q == R - 1) len = Nb - first;
    }
    float *xs = dev_alloc(len * 4 + 16), *rs = dev_alloc(64);
    if (bench_fill(xs, first, len)) j->setup_failed = 1;
    float v_sharded = 0, v_local = 0, v_naive = 0, v_one = 0;
    cs = coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, xs, NULL, rs, len, COOPREDUCE_FLOAT32, h, comm, st);
    if (cs) {
        fprintf(stderr, "rank %d: coopreduce_reduce_sharded: %s\n", j->rank, coopreduce_last_error(h));
        j->setup_failed = 1;
    }
    cudaStreamSynchronize(st);
    cudaMemcpy(&v_sharded, rs, 4, cudaMemcpyDeviceToHost);
    coopreduce_reduce(COOPREDUCE_OP_SUM, xs, NULL, rs, len, COOPREDUCE_FLOAT32, h, st);
    ncclAllReduce(rs, rs + 4, 1, ncclFloat32, ncclSum, nc, st);
    cudaStreamSynchronize(st);
    cudaMemcpy(&v_local, rs, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&v_naive, rs + 4, 4, cudaMemcpyDeviceToHost);
    if (j->rank == 0) {
        float *all = dev_alloc(Nb * 4);
        if (bench_fill(all, 0, Nb)) j->setup_failed = 1;
        coopreduce_reduce(COOPREDUCE_OP_SUM, all, NULL, rs, Nb, COOPREDUCE_FLOAT32, h, st);
        cudaMemcpy(&v_one, rs, 4, cudaMemcpyDeviceToHost);
        cudaFree(all);
    }
    j->bits[0] = f32_bits(v_one);
    j->bits[1] = f32_bits(v_sharded);
    j->bits[2] = f32_bits(v_naive);
    j->shard[0] = first;
    j->shard[1] = len;
    cudaFree(xs);
    cudaFree(rs);

    /* the all-reduce against ncclAllReduce, on each rank's own random values (rank r's send is
     * elements [r count, (r + 1) count) of the global array); each result's hash is kept */
    const size_t sizes[3] = {8, 1u << 20, 256u << 20};
    for (int s = 0; s < 3; s++) {
        const uint64_t cnt = sizes[s] / 4;
        float *send = dev_alloc(sizes[s]), *recv = dev_alloc(sizes[s]);
        if (bench_fill(send, (uint64_t)j->rank * cnt, cnt)) j->setup_failed = 1;
        const int rr = s == 2 ? reps : reps * 10;
        ncclAllReduce(send, recv, cnt, ncclFloat32, ncclSum, nc, st);
        cudaStreamSynchronize(st);
        j->hash[2 * s] = dev_hash(recv, sizes[s]);
        cudaMemset(recv, 0, sizes[s]);
        cs = coopreduce_allreduce(send, recv, cnt, COOPREDUCE_FLOAT32, COOPREDUCE_OP_SUM, h, comm, st);
        if (cs) {
            fprintf(stderr, "rank %d: coopreduce_allreduce: %s\n", j->rank, coopreduce_last_error(h));
            j->setup_failed = 1;
        }
        cudaStreamSynchronize(st);
        j->hash[2 * s + 1] = dev_hash(recv, sizes[s]);
        pthread_barrier_wait(j->bar);
        float ms_nccl, ms_cr;
        EVENT_TIME(ms_nccl, st, rr, ncclAllReduce(send, recv, cnt, ncclFloat32, ncclSum, nc, st));
        pthread_barrier_wait(j->bar);
        EVENT_TIME(ms_cr, st, rr,
                   coopreduce_allreduce(send, recv, cnt, COOPREDUCE_FLOAT32, COOPREDUCE_OP_SUM, h, comm, st));
        j->t[3 + 2 * s] = ms_nccl * 1e-3;
        j->t[4 + 2 * s] = ms_cr * 1e-3;
        if (s == 0) {
            /* 8 B on a communicator that defers errors (no wait in the call): back to back by
             * events, then each call waited for (host clock), against the default's */
            /* (each call waited for in turn with an 8 B ncclAllReduce of a scratch buffer;
             * medians, as the sharded sum's latency above) */
            const int rw = reps * 10 < MAX_SAMPLES ? reps * 10 : MAX_SAMPLES;
            pthread_barrier_wait(j->bar);
            waited_in_turn(send, recv, cnt, r, h, comm, nc, st, rw, &j->t[26], &j->t[35]);
            coopreduce_comm_config cfg = COOPREDUCE_COMM_CONFIG_INIT;
            cfg.deferred_errors = 1;
            if (coopreduce_comm_set_config(comm, &cfg, st)) j->setup_failed = 1;
            float ms_def;
            pthread_barrier_wait(j->bar);
            EVENT_TIME(ms_def, st, rr,
                       coopreduce_allreduce(send, recv, cnt, COOPREDUCE_FLOAT32, COOPREDUCE_OP_SUM, h, comm, st));
            j->t[24] = ms_def * 1e-3;
            /* the host's part alone: the calls' return, not waited for */
            pthread_barrier_wait(j->bar);
            double t1 = now();
            for (int k = 0; k < rr; k++)
                coopreduce_allreduce(send, recv, cnt, COOPREDUCE_FLOAT32, COOPREDUCE_OP_SUM, h, comm, st);
            j->t[27] = (now() - t1) / rr;
            cudaStreamSynchronize(st);
            pthread_barrier_wait(j->bar);
            waited_in_turn(send, recv, cnt, r, h, comm, nc, st, rw, &j->t[25], &j->t[36]);
            if (coopreduce_comm_deferred_error(comm, h) != COOPREDUCE_SUCCESS) {
                fprintf(stderr, "rank %d: deferred all-reduce: %s\n", j->rank, coopreduce_last_error(h));
                j->setup_failed = 1;
            }
            if (dev_hash(recv, sizes[s]) != j->hash[1]) {
                fprintf(stderr, "rank %d: the deferred all-reduce's result differs\n", j->rank);
                j->setup_failed = 1;
            }
            cfg.deferred_errors = 0;
            if (coopreduce_comm_set_config(comm, &cfg, st)) j->setup_failed = 1;
        }
        if (s == 2 && R > 1) {
            /* the parts of the all-reduce's data path, through NCCL directly: the all-to-all
             * (grouped send / recv of a 1/R slice with every peer), the all-gather of a slice,
             * and NCCL's own reduce-scatter for comparison */
            const size_t sl = sizes[s] / (size_t)R;
            float ms_a2a, ms_ag, ms_rs;
            pthread_barrier_wait(j->bar);
            EVENT_TIME(ms_a2a, st, rr, {
                ncclGroupStart();
                peers_sendrecv(send, recv, sl, R, j->rank, nc, st);
                ncclGroupEnd();
            });
            pthread_barrier_wait(j->bar);
            EVENT_TIME(ms_ag, st, rr, ncclAllGather(send, recv, sl, ncclUint8, nc, st));
            float ms_agi; /* in place: this rank's slice already in recv, as the all-reduce's */
            pthread_barrier_wait(j->bar);
            EVENT_TIME(ms_agi, st, rr,
                       ncclAllGather((char *)recv + (size_t)j->rank * sl, recv, sl, ncclUint8, nc, st));
            pthread_barrier_wait(j->bar);
            EVENT_TIME(ms_rs, st, rr, ncclReduceScatter(send, recv, sl / 4, ncclFloat32, ncclSum, nc, st));
            /* NCCL's own all-to-all collective (NCCL 2.28 and later; looked up at run time, so
             * that the benchmark also runs with an older NCCL); and an all-to-all and an
             * all-gather, of half the bytes each, in one group against the two apart: whether
             * NCCL runs them at once, which a pipelined all-reduce (the gather of piece k beside
             * the exchange of piece k + 1) would need. The all-to-all reads send's lower half
             * and writes recv's; the all-gather works in place in send's upper half. */
            typedef ncclResult_t (*a2a_fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                                           cudaStream_t);
            a2a_fn a2a = (a2a_fn)dlsym(RTLD_DEFAULT, "ncclAlltoAll");
            float ms_coll = 0, ms_both = 0;
            pthread_barrier_wait(j->bar);
            if (a2a) EVENT_TIME(ms_coll, st, rr, a2a(send, recv, sl, ncclUint8, nc, st));
            const size_t half = sizes[s] / 2 / (size_t)R;
            pthread_barrier_wait(j->bar);
            EVENT_TIME(ms_both, st, rr, {
                ncclGroupStart();
                peers_sendrecv(send, recv, half, R, j->rank, nc, st);
                ncclAllGather((char *)send + sizes[s] / 2 + (size_t)j->rank * half,
                              (char *)send + sizes[s] / 2, half, ncclUint8, nc, st);
                ncclGroupEnd();
            });
            float ms_a2a_h, ms_ag_h;
            pthread_barrier_wait(j->bar);
            EVENT_TIME(ms_a2a_h, st, rr, {
                ncclGroupStart();
                peers_sendrecv(send, recv, half, R, j->rank, nc, st);
                ncclGroupEnd();
            });
            pthread_barrier_wait(j->bar);
            EVENT_TIME(ms_ag_h, st, rr,
                       ncclAllGather((char *)send + sizes[s] / 2 + (size_t)j->rank * half,
                                     (char *)send + sizes[s] / 2, half, ncclUint8, nc, st));
            j->t[11] = ms_a2a * 1e-3;
            j->t[12] = ms_ag * 1e-3;
            j->t[34] = ms_agi * 1e-3;
            j->t[13] = ms_rs * 1e-3;
            j->t[14] = a2a ? ms_coll * 1e-3 : -1;
            j->t[15] = ms_both * 1e-3;
            j->t[22] = ms_a2a_h * 1e-3;
            j->t[23] = ms_ag_h * 1e-3;
        }
        cudaFree(send);
        cudaFree(recv);
    }
    cudaFree(r);
    (void)v_local;
}

static void *rank_main(void *arg)
{
    rank_job *j = arg;
    cudaSetDevice(j->rank);
    ncclComm_t nc = NULL;
    ncclResult_t nr = ncclCommInitRank(&nc, j->size, j->id, j->rank);
    coopreduce_handle *h = NULL, *ref = NULL;
    coopreduce_comm *comm = NULL;
    cudaStream_t st = NULL;
    if (nr != ncclSuccess || coopreduce_create_gpu(&h, j->rank) || coopreduce_create_cpu(&ref, 0) ||
        cudaStreamCreate(&st) != cudaSuccess || coopreduce_comm_from_nccl(nc, &comm)) {
        fprintf(stderr, "rank %d: setup failed (%s; %s)\n", j->rank,
                nr == ncclSuccess ? "NCCL ok" : ncclGetErrorString(nr), coopreduce_last_error(NULL));
        j->setup_failed = 1;
        return NULL;
    }
    if (j->bench) {
        bench(j, h, comm, nc, st);
    } else {
        dist_env e;
        memset(&e, 0, sizeof e);
        e.rank = j->rank;
        e.size = j->size;
        e.comm = comm;
        e.h = h;
        e.ref = ref;
        e.stream = st;
        e.gpu = 1;
        e.gpu_1d = 1;
        e.dev_alloc = dev_alloc;
        e.dev_free = dev_free;
        e.to_dev = to_dev;
        e.to_host = to_host;
        e.quick = j->quick;
        e.deep = j->deep;
        e.small = j->small;
        e.name = "nccl";
        dist_check_errors(&e);
        dist_check_sharded(&e);
        dist_check_allreduce(&e);
        dist_check_errors(&e);
        dist_check_deferred(&e);
        j->passed = e.passed;
        j->failed = e.failed;
    }
    coopreduce_comm_destroy(comm);
    ncclCommDestroy(nc);
    cudaStreamDestroy(st);
    coopreduce_destroy(h);
    coopreduce_destroy(ref);
    return NULL;
}

int main(int argc, char **argv)
{
    int ngpu = 0, ranks = -1, quick = 0, small = 0, deep = 0, do_bench = 0, reps = 20, log2n = 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--small")) small = quick = 1;
        else if (!strcmp(argv[i], "--deep")) deep = 1;
        else if (!strcmp(argv[i], "--bench")) do_bench = 1;
        else if (!strcmp(argv[i], "--ranks") && i + 1 < argc) ranks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bench-log2n") && i + 1 < argc) log2n = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--quick [--small]] [--deep] [--bench [--bench-log2n K] [--reps N]] [--ranks R]\n", argv[0]);
            return 2;
        }
    }
    if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
        printf("SKIP: test_dist_gpu: no CUDA GPU on this machine\n");
        return 77;
    }
    if (ranks < 1 || ranks > ngpu) ranks = ngpu;
    if (ranks > 16) ranks = 16;
    rank_job jobs[16];
    pthread_t th[16];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)ranks);
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) {
        printf("test_dist_gpu: ncclGetUniqueId failed: 0 passed, 1 failed\n");
        return 1;
    }
    printf("test_dist_gpu: %d rank(s), one thread per GPU, NCCL %d.%d\n", ranks, NCCL_MAJOR, NCCL_MINOR);
    for (int r = 0; r < ranks; r++) {
        memset(&jobs[r], 0, sizeof jobs[r]);
        jobs[r].rank = r;
        jobs[r].size = ranks;
        jobs[r].quick = quick;
        jobs[r].small = small;
        jobs[r].deep = deep;
        jobs[r].bench = do_bench;
        jobs[r].reps = reps;
        jobs[r].log2n = log2n;
        jobs[r].id = id;
        jobs[r].bar = &bar;
        pthread_create(&th[r], NULL, rank_main, &jobs[r]);
    }
    unsigned long long passed = 0, failed = 0;
    int setup = 0;
    for (int r = 0; r < ranks; r++) {
        pthread_join(th[r], NULL);
        passed += jobs[r].passed;
        failed += jobs[r].failed;
        setup |= jobs[r].setup_failed;
    }
    if (setup) failed++;
    if (do_bench && !setup) {
        double t[40] = {0};
        for (int r = 0; r < ranks; r++)
            for (int k = 0; k < 40; k++)
                if (jobs[r].t[k] > t[k]) t[k] = jobs[r].t[k]; /* the slowest rank */
        const double n = (double)(1ull << log2n), R = ranks;
        printf("\n| measurement | coopreduce | baseline | ratio |\n|---|---|---|---|\n");
        printf("| sharded float32 sum, 2^%d per GPU x %d | %.3f ms, %.1f GB/s | one GPU 2^%d: %.3f ms, %.1f GB/s | %.2f x one GPU (target >= %.1f) |\n",
               log2n, ranks, t[1] * 1e3, R * n * 4 / t[1] * 1e-9, log2n, t[0] * 1e3,
               n * 4 / t[0] * 1e-9, (R * n / t[1]) / (n / t[0]), 0.9 * R);
        printf("| sharded sum latency (4096 per GPU; host clock, medians, in turn with the other two) | %.1f us | local sum of 4096, result read: %.1f us | added %.1f us = %.2f x one small ncclAllReduce (%.1f us, waited for; target <= 2) |\n",
               t[2] * 1e6, t[9] * 1e6, (t[2] - t[9]) * 1e6, (t[2] - t[9]) / t[10], t[10] * 1e6);
        const char *names[3] = {"8 B", "1 MB", "256 MB"};
        const double bytes[3] = {8, 1 << 20, 256.0 * (1 << 20)};
        for (int s = 0; s < 3; s++) {
            const double tn = t[3 + 2 * s], tc = t[4 + 2 * s];
            const double bw = R > 1 ? 2 * (R - 1) / R : 1;
            printf("| all-reduce %s float32 | %.1f us, busbw %.1f GB/s | ncclAllReduce %.1f us, busbw %.1f GB/s | %.2f x NCCL's bandwidth |\n",
                   names[s], tc * 1e6, bytes[s] * bw / tc * 1e-9, tn * 1e6,
                   bytes[s] * bw / tn * 1e-9, tn / tc);
        }
        printf("| all-reduce 8 B float32, deferred errors | %.1f us (the host's part: %.1f us a call) | ncclAllReduce %.1f us | %.2f x NCCL's time (target <= 2) |\n",
               t[24] * 1e6, t[27] * 1e6, t[3] * 1e6, t[24] / t[3]);
        printf("| all-reduce 8 B, each call waited for (host clock, medians, each in turn with an ncclAllReduce of 8 B) | default %.1f us, deferred errors %.1f us | ncclAllReduce of 8 B %.1f us, %.1f us | %.2f x, %.2f x (target <= 2) |\n",
               t[26] * 1e6, t[25] * 1e6, t[35] * 1e6, t[36] * 1e6, t[26] / t[35], t[25] / t[36]);
        printf("| a gather of 16 KB a rank, waited for | ncclAllGather %.1f us | grouped ncclSend / ncclRecv %.1f us | |\n",
               t[28] * 1e6, t[29] * 1e6);
        printf("| the host's part of a call | a memset %.1f us, ncclAllGather of 4160 B %.1f us | coopreduce_reduce_axis (1 x %d x 1040 floats) %.1f us; waited for %.1f us | |\n",
               t[30] * 1e6, t[31] * 1e6, ranks, t[32] * 1e6, t[33] * 1e6);
        printf("| pieces of a small call, each waited for | stream sync %.1f us, 48 B H2D %.1f us, 48 B D2H %.1f us, memset %.1f us | ncclAllGather 48 B %.1f us, + 4 KB in one group %.1f us | |\n",
               t[16] * 1e6, t[17] * 1e6, t[18] * 1e6, t[19] * 1e6, t[20] * 1e6, t[21] * 1e6);
        if (R > 1) {
            printf("| 256 MB parts, through NCCL | all-to-all of 1/%d slices %.1f us, all-gather %.1f us (in place %.1f us) | ncclReduceScatter %.1f us | |\n",
                   ranks, t[11] * 1e6, t[12] * 1e6, t[34] * 1e6, t[13] * 1e6);
            if (t[14] > 0)
                printf("| 256 MB all-to-all, NCCL's collective | ncclAlltoAll %.1f us | grouped ncclSend / ncclRecv %.1f us | %.2f x |\n",
                       t[14] * 1e6, t[11] * 1e6, t[11] / t[14]);
            else
                printf("| 256 MB all-to-all, NCCL's collective | this NCCL has no ncclAlltoAll | | |\n");
            printf("| 128 MB all-to-all + all-gather, one group | %.1f us | apart: %.1f + %.1f = %.1f us | %.2f x |\n",
                   t[15] * 1e6, t[22] * 1e6, t[23] * 1e6, (t[22] + t[23]) * 1e6,
                   (t[22] + t[23]) / t[15]);
        }
        /* The bits: coopreduce's are the same on every rank and equal one GPU's; the results of
         * NCCL are printed for comparison across NCCL_ALGO / NCCL_PROTO settings and rank counts. */
        int same_sharded = 1, same_cr[3] = {1, 1, 1}, same_nccl[3] = {1, 1, 1};
        for (int r = 0; r < ranks; r++) {
            same_sharded &= jobs[r].bits[1] == jobs[0].bits[0];
            for (int s = 0; s < 3; s++) {
                same_cr[s] &= jobs[r].hash[2 * s + 1] == jobs[0].hash[2 * s + 1];
                same_nccl[s] &= jobs[r].hash[2 * s] == jobs[0].hash[2 * s];
            }
        }
        printf("\nbits of the float32 sum of 100000007 values (shards:");
        for (int r = 0; r < ranks; r++) printf(" %llu", (unsigned long long)jobs[r].shard[1]);
        printf("), NCCL_ALGO=%s NCCL_PROTO=%s:\n", getenv("NCCL_ALGO") ? getenv("NCCL_ALGO") : "(free)",
               getenv("NCCL_PROTO") ? getenv("NCCL_PROTO") : "(free)");
        printf("  one GPU, the whole array:              0x%08x\n", jobs[0].bits[0]);
        printf("  coopreduce_reduce_sharded, %d rank(s):  0x%08x on rank 0, %s\n", ranks, jobs[0].bits[1],
               same_sharded ? "every rank equal to one GPU" : "DIFFERS from one GPU on some rank");
        printf("  shard sums + ncclAllReduce:            0x%08x%s\n", jobs[0].bits[2],
               jobs[0].bits[2] == jobs[0].bits[0] ? " (equal to one GPU)" : " (differs from one GPU)");
        printf("all-reduce results (FNV-1a of rank 0's recv), %d rank(s):\n", ranks);
        for (int s = 0; s < 3; s++)
            printf("  %-6s ncclAllReduce %016llx%s   coopreduce_allreduce %016llx%s\n", names[s],
                   (unsigned long long)jobs[0].hash[2 * s], same_nccl[s] ? "" : " (ranks differ)",
                   (unsigned long long)jobs[0].hash[2 * s + 1], same_cr[s] ? "" : " (RANKS DIFFER)");
        if (!same_sharded || !same_cr[0] || !same_cr[1] || !same_cr[2]) setup = 1;
    }
    if (do_bench) return setup ? 1 : 0;
    printf("test_dist_gpu: %llu passed, %llu failed\n", passed, failed);
    return failed || passed == 0 ? 1 : 0;
}

#else
int main(void)
{
    printf("SKIP: test_dist_gpu: coopreduce was built without CUDA or without NCCL\n");
    return 77;
}
#endif
