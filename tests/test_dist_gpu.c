/* test_dist_gpu.c — sharded reductions and the all-reduce over NCCL on every GPU of one machine,
 * without MPI: one process, one thread per GPU, each with its own NCCL communicator (made by
 * ncclCommInitRank with a unique id shared in the process), GPU handle and stream. With one GPU
 * it runs with one rank; with several it uses them all (--ranks R: the first R).
 *
 *   test_dist_gpu [--quick] [--deep] [--ranks R]
 *       every op x dtype x mode (dist_check.c), equal and uneven splits with empty shards: bits
 *       equal to the 1-D call on the whole array on the CPU (whose bits are the GPU's, which
 *       tests/test_*_gpu check); the all-reduce against coopreduce_reduce_axis along axis 0 of
 *       the stacked arrays; the errors every rank must report.
 *   test_dist_gpu --bench [--bench-log2n K] [--ranks R] [--reps N]
 *       the sharded float32 sum of 2^K elements per GPU (default 2^30) against one GPU's sum of
 *       its shard; the all-reduce of 8 B, 1 MB and 256 MB of float32 against ncclAllReduce,
 *       timed with CUDA events on each rank's stream (the slowest rank's time), with NCCL's bus
 *       bandwidth (bytes * 2 (R-1) / R / time).
 * Exits 77 (ctest: skipped) without a GPU, or in a build without CUDA or NCCL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(COOPREDUCE_HAVE_CUDA) && defined(COOPREDUCE_DIST_HAVE_NCCL)
#include <cuda_runtime_api.h>
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
    int rank, size, quick, deep, bench, reps, log2n;
    ncclUniqueId id;
    pthread_barrier_t *bar;
    unsigned long long passed, failed;
    int setup_failed;
    double t[16]; /* bench: per-rank times (seconds) */
} rank_job;

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

static void bench(rank_job *j, coopreduce_handle *h, coopreduce_comm *comm, ncclComm_t nc,
                  cudaStream_t st)
{
    const int R = j->size, reps = j->reps;
    const uint64_t n = 1ull << j->log2n;
    float *x = NULL;
    if (cudaMalloc((void **)&x, n * 4) != cudaSuccess) {
        fprintf(stderr, "rank %d: cannot allocate 2^%d floats\n", j->rank, j->log2n);
        j->setup_failed = 1;
        pthread_barrier_wait(j->bar);
        return;
    }
    cudaMemset(x, 0, n * 4);
    float *r = dev_alloc(64);
    /* one GPU's sum of its shard (the baseline), then the sharded sum of all shards */
    coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, r, n, COOPREDUCE_FLOAT32, h, st); /* warm */
    cudaStreamSynchronize(st);
    float ms_local;
    EVENT_TIME(ms_local, st, reps, coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, r, n, COOPREDUCE_FLOAT32, h, st));
    j->t[0] = ms_local * 1e-3;
    coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, r, n, COOPREDUCE_FLOAT32, h, comm, st);
    pthread_barrier_wait(j->bar);
    double t0 = now();
    for (int k = 0; k < reps; k++)
        coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, r, n, COOPREDUCE_FLOAT32, h, comm, st);
    j->t[1] = (now() - t0) / reps;
    /* the latency the sharded path adds: a small sharded sum (one chunk per GPU) */
    pthread_barrier_wait(j->bar);
    t0 = now();
    for (int k = 0; k < reps * 10; k++)
        coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, r, 4096, COOPREDUCE_FLOAT32, h, comm, st);
    j->t[2] = (now() - t0) / (reps * 10);
    /* the all-reduce against ncclAllReduce */
    const size_t sizes[3] = {8, 1u << 20, 256u << 20};
    for (int s = 0; s < 3; s++) {
        const uint64_t cnt = sizes[s] / 4;
        float *send = dev_alloc(sizes[s]), *recv = dev_alloc(sizes[s]);
        cudaMemset(send, 0, sizes[s]);
        const int rr = s == 2 ? reps : reps * 10;
        ncclAllReduce(send, recv, cnt, ncclFloat32, ncclSum, nc, st);
        coopreduce_allreduce(send, recv, cnt, COOPREDUCE_FLOAT32, COOPREDUCE_OP_SUM, h, comm, st);
        cudaStreamSynchronize(st);
        pthread_barrier_wait(j->bar);
        float ms_nccl, ms_cr;
        EVENT_TIME(ms_nccl, st, rr, ncclAllReduce(send, recv, cnt, ncclFloat32, ncclSum, nc, st));
        pthread_barrier_wait(j->bar);
        EVENT_TIME(ms_cr, st, rr,
                   coopreduce_allreduce(send, recv, cnt, COOPREDUCE_FLOAT32, COOPREDUCE_OP_SUM, h, comm, st));
        j->t[3 + 2 * s] = ms_nccl * 1e-3;
        j->t[4 + 2 * s] = ms_cr * 1e-3;
        cudaFree(send);
        cudaFree(recv);
    }
    cudaFree(x);
    cudaFree(r);
    (void)R;
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
        e.dev_alloc = dev_alloc;
        e.dev_free = dev_free;
        e.to_dev = to_dev;
        e.to_host = to_host;
        e.quick = j->quick;
        e.deep = j->deep;
        e.name = "nccl";
        dist_check_errors(&e);
        dist_check_sharded(&e);
        dist_check_allreduce(&e);
        dist_check_errors(&e);
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
    int ngpu = 0, ranks = -1, quick = 0, deep = 0, do_bench = 0, reps = 20, log2n = 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--deep")) deep = 1;
        else if (!strcmp(argv[i], "--bench")) do_bench = 1;
        else if (!strcmp(argv[i], "--ranks") && i + 1 < argc) ranks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bench-log2n") && i + 1 < argc) log2n = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--quick] [--deep] [--bench [--bench-log2n K] [--reps N]] [--ranks R]\n", argv[0]);
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
        double t[16] = {0};
        for (int r = 0; r < ranks; r++)
            for (int k = 0; k < 16; k++)
                if (jobs[r].t[k] > t[k]) t[k] = jobs[r].t[k]; /* the slowest rank */
        const double n = (double)(1ull << log2n), R = ranks;
        printf("\n| measurement | coopreduce | baseline | ratio |\n|---|---|---|---|\n");
        printf("| sharded float32 sum, 2^%d per GPU x %d | %.3f ms, %.1f GB/s | one GPU 2^%d: %.3f ms, %.1f GB/s | %.2f x one GPU (target >= %.1f) |\n",
               log2n, ranks, t[1] * 1e3, R * n * 4 / t[1] * 1e-9, log2n, t[0] * 1e3,
               n * 4 / t[0] * 1e-9, (R * n / t[1]) / (n / t[0]), 0.9 * R);
        printf("| sharded sum latency (4096 per GPU) | %.1f us | | |\n", t[2] * 1e6);
        const char *names[3] = {"8 B", "1 MB", "256 MB"};
        const double bytes[3] = {8, 1 << 20, 256.0 * (1 << 20)};
        for (int s = 0; s < 3; s++) {
            const double tn = t[3 + 2 * s], tc = t[4 + 2 * s];
            const double bw = R > 1 ? 2 * (R - 1) / R : 1;
            printf("| all-reduce %s float32 | %.1f us, busbw %.1f GB/s | ncclAllReduce %.1f us, busbw %.1f GB/s | %.2f x NCCL's bandwidth |\n",
                   names[s], tc * 1e6, bytes[s] * bw / tc * 1e-9, tn * 1e6,
                   bytes[s] * bw / tn * 1e-9, tn / tc);
        }
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
