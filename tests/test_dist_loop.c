/* test_dist_loop.c — the distributed algorithms' device path (src/dist: the first exchange's
 * slots, the gates, a small array put together and reduced before the host waits, the
 * all-reduce's columns kernel, the deferred checks) over a transport of this file's own: R
 * threads on one GPU, each with its own handle and stream, whose collectives are plain device
 * copies between the threads' buffers. No NCCL and no MPI, so that compute-sanitizer's memcheck
 * and racecheck can run it to the end (they do not finish under NCCL's kernels).
 *
 *   test_dist_loop [--ranks R] [--quick]   (default: 1, 2 and 3 ranks in turn; --quick: two
 *                                           types, three operations, three sizes, for racecheck)
 *
 * Every rank's result is checked against the 1-D call on a CPU handle (sharded reductions: the
 * whole array; the all-reduce: coopreduce_reduce_axis along axis 0 of the stacked arrays), status
 * and bits; disagreeing ranks must all fail, leaving the result alone; a deferred all-reduce's
 * failure must be reported by cr_dist_deferred_error. Each size runs with small arrays gathered
 * whole and with the boundary exchange (COOPREDUCE_DIST_GATHER_KIB=0). Exits 77 (ctest: skipped)
 * without a GPU or in a build without CUDA. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(COOPREDUCE_HAVE_CUDA)
#include <cuda_runtime_api.h>
#include <pthread.h>
#include "coopreduce.h"
#include "dist/seam.h"

enum { MAXR = 8 };

/* What the threads share: each collective publishes every rank's buffer, waits for all, copies
 * what it needs, and waits again before anyone may reuse a buffer. */
typedef struct {
    int R;
    pthread_barrier_t bar;
    const void *ptr[MAXR];
    int setup_failed; /* some rank's setup failed: every rank stops */
} bus;

typedef struct {
    bus *b;
    int rank;
    cudaStream_t st;
    char *lead; /* this rank's send slot, then the R gathered slots */
} loop_ctx;

static int cuda_err(cudaError_t e, const char *what, char *err)
{
    snprintf(err, CR_DIST_ERR, "%s: %s", what, cudaGetErrorString(e));
    return -1;
}

/* A collective: publishes this rank's buffer (after its stream), waits for every rank's, copies
 * what(q)'s bytes for every rank q (device copies on this rank's stream, waited for, or host
 * copies), and waits for every rank again. */
typedef struct {
    char *dst;
    const char *src;
    size_t bytes;
} piece;

static int exchange(loop_ctx *c, const void *mine, piece (*what)(void *, int, const void *),
                    void *arg, int host, void *stream, char *err)
{
    bus *b = c->b;
    const cudaStream_t st = stream ? (cudaStream_t)stream : c->st;
    cudaError_t e = cudaStreamSynchronize(st); /* this rank's data is ready */
    if (e != cudaSuccess) return cuda_err(e, "waiting for the stream", err);
    b->ptr[c->rank] = mine;
    pthread_barrier_wait(&b->bar);
    for (int q = 0; q < b->R && e == cudaSuccess; q++) {
        const piece pc = what(arg, q, b->ptr[q]);
        if (!pc.bytes || pc.dst == pc.src) continue; /* (a gather in place) */
        if (host)
            memcpy(pc.dst, pc.src, pc.bytes);
        else
            e = cudaMemcpyAsync(pc.dst, pc.src, pc.bytes, cudaMemcpyDeviceToDevice, st);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    pthread_barrier_wait(&b->bar);
    return e == cudaSuccess ? 0 : cuda_err(e, "copying between ranks", err);
}

typedef struct {
    char *recv;
    size_t bytes;
    int rank, self;
    const size_t *sizes, *displ;
} gather_arg;

static piece gather_piece(void *a, int q, const void *src)
{
    const gather_arg *g = a;
    return (piece){g->recv + (size_t)q * g->bytes, src, g->bytes};
}
static piece alltoall_piece(void *a, int q, const void *src)
{
    const gather_arg *g = a;
    if (q == g->rank && !g->self) return (piece){NULL, NULL, 0};
    return (piece){g->recv + (size_t)q * g->bytes, (const char *)src + (size_t)g->rank * g->bytes,
                   g->bytes};
}
static piece gatherv_piece(void *a, int q, const void *src)
{
    const gather_arg *g = a;
    return (piece){g->recv + g->displ[q], src, g->sizes[q]};
}

static int loop_allgather_host(void *ctx, const void *send, void *recv, size_t bytes, void *stream,
                               char *err)
{
    (void)stream;
    gather_arg g = {recv, bytes, 0, 1, NULL, NULL};
    return exchange(ctx, send, gather_piece, &g, 1, NULL, err);
}
static int loop_allgather(void *ctx, const void *send, void *recv, size_t bytes, void *stream,
                          char *err)
{
    gather_arg g = {recv, bytes, 0, 1, NULL, NULL};
    return exchange(ctx, send, gather_piece, &g, 0, stream, err);
}
static int loop_alltoall(void *ctx, const void *send, void *recv, size_t bytes, int self,
                         void *stream, char *err)
{
    gather_arg g = {recv, bytes, ((loop_ctx *)ctx)->rank, self, NULL, NULL};
    return exchange(ctx, send, alltoall_piece, &g, 0, stream, err);
}
static int loop_allgatherv(void *ctx, const void *send, void *recv, const size_t *bytes,
                           const size_t *displ, void *stream, char *err)
{
    gather_arg g = {recv, 0, 0, 1, bytes, displ};
    return exchange(ctx, send, gatherv_piece, &g, 0, stream, err);
}
/* As NCCL's: the slot packed on the device, the slots gathered; metas copied back if asked. */
static int loop_allgather_lead(void *ctx, const void *meta, const void *data, size_t data_bytes,
                               void **slots_dev, void *meta_all, void *stream, char *err)
{
    loop_ctx *c = ctx;
    const size_t S = CR_DIST_SLOT_BYTES, R = (size_t)c->b->R;
    if (cr_dist_pack_lead(0, c->lead, meta, data, data_bytes, stream, err)) return -1;
    gather_arg g = {c->lead + S, S, 0, 1, NULL, NULL};
    if (exchange(c, c->lead, gather_piece, &g, 0, stream, err)) return -1;
    *slots_dev = c->lead + S;
    if (!meta_all) return 0;
    const cudaError_t e = cudaMemcpy2D(meta_all, CR_DIST_META_BYTES, c->lead + S, S,
                                       CR_DIST_META_BYTES, R, cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? 0 : cuda_err(e, "copying the metas", err);
}

/* ---- the checks ------------------------------------------------------------------------------ */
typedef struct {
    int rank, R, deferred, quick;
    bus *b;
    unsigned long long passed, failed;
    int printed;
} job;

#define CHECK(j, cond, ...)                                                                        \
    do {                                                                                           \
        if (cond) {                                                                                \
            (j)->passed++;                                                                         \
        } else {                                                                                   \
            (j)->failed++;                                                                         \
            if ((j)->printed++ < 8) {                                                              \
                fprintf(stderr, "[loop rank %d/%d] FAIL: ", (j)->rank, (j)->R);                    \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Element i of case `seed` (the same on every rank): values of every sign and many binades. */
static void fill(void *x, coopreduce_dtype dt, uint64_t n, uint64_t seed)
{
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t z = mix(seed * 1000003u + i);
        const double v = ((double)(z >> 11) / 9007199254740992.0 - 0.5) * (double)(1u << (z % 24));
        switch (dt) {
        case COOPREDUCE_FLOAT32: ((float *)x)[i] = (float)v; break;
        case COOPREDUCE_FLOAT64: ((double *)x)[i] = v; break;
        case COOPREDUCE_BFLOAT16: {
            const float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)x)[i] = (uint16_t)(u >> 16);
            break;
        }
        default: ((int64_t *)x)[i] = (int64_t)(z % 2000001) - 1000000; break;
        }
    }
}

/* Rank r's shard of n elements, split at random (the same split on every rank). */
static void split(uint64_t n, int R, uint64_t seed, int r, uint64_t *first, uint64_t *len)
{
    uint64_t cut[MAXR + 1];
    cut[0] = 0;
    cut[R] = n;
    for (int q = 1; q < R; q++) cut[q] = n ? mix(seed + (uint64_t)q) % (n + 1) : 0;
    for (int q = 1; q < R; q++) /* sorted */
        for (int k = q; k > 1 && cut[k] < cut[k - 1]; k--) {
            const uint64_t t = cut[k];
            cut[k] = cut[k - 1];
            cut[k - 1] = t;
        }
    *first = cut[r];
    *len = cut[r + 1] - cut[r];
}

/* What every case of one rank uses: its job, transport, cache, handles and stream. */
typedef struct {
    job *j;
    cr_dist_transport t;
    cr_dist_cache *cache;
    coopreduce_handle *h, *ref;
    cudaStream_t st;
} rank_env;

static void sharded_case(rank_env *e, coopreduce_op op, coopreduce_dtype dt, uint64_t n,
                         uint64_t seed)
{
    job *j = e->j;
    const size_t es = coopreduce_dtype_size(dt);
    const size_t rs = coopreduce_op_result_size(op, dt, 0, NULL);
    if (!rs) return;
    char *all = malloc(n * es + 16);
    fill(all, dt, n, seed);
    uint64_t first, len;
    split(n, j->R, seed, j->rank, &first, &len);
    void *x = NULL, *res = NULL;
    cudaMalloc(&x, len * es + 16);
    cudaMalloc(&res, 16);
    cudaMemcpy(x, all + first * es, len * es, cudaMemcpyHostToDevice);
    cudaMemset(res, 0xab, 16);
    const coopreduce_status gs =
        cr_dist_reduce_sharded(&e->t, &e->cache, op, x, NULL, res, len, dt, e->h, e->st);
    unsigned char got[16], want[16];
    memset(want, 0, sizeof want);
    cudaStreamSynchronize(e->st);
    cudaMemcpy(got, res, 16, cudaMemcpyDeviceToHost);
    const coopreduce_status rs_ = coopreduce_reduce(op, all, NULL, want, n, dt, e->ref, NULL);
    CHECK(j, gs == rs_ && (gs || !memcmp(got, want, rs)),
          "sharded %s %s n=%llu (shard %llu+%llu): %s vs 1-D %s; bits %02x%02x%02x%02x vs %02x%02x%02x%02x",
          coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)n,
          (unsigned long long)first, (unsigned long long)len, coopreduce_status_string(gs),
          coopreduce_status_string(rs_), got[3], got[2], got[1], got[0], want[3], want[2], want[1],
          want[0]);
    cudaFree(x);
    cudaFree(res);
    free(all);
}

static void allreduce_case(rank_env *e, coopreduce_op op, coopreduce_dtype dt, uint64_t count,
                           uint64_t seed)
{
    job *j = e->j;
    const size_t es = coopreduce_dtype_size(dt);
    const size_t rs = coopreduce_op_result_size(op, dt, 0, NULL);
    if (!rs) return;
    char *stacked = malloc((size_t)j->R * count * es + 16), *want = malloc(count * rs + 16),
         *got = malloc(count * rs + 16);
    fill(stacked, dt, (uint64_t)j->R * count, seed);
    void *send = NULL, *recv = NULL;
    cudaMalloc(&send, count * es + 16);
    cudaMalloc(&recv, count * rs + 16);
    cudaMemcpy(send, stacked + (size_t)j->rank * count * es, count * es, cudaMemcpyHostToDevice);
    const coopreduce_status gs =
        cr_dist_allreduce(&e->t, &e->cache, send, recv, count, dt, op, e->h, e->st);
    cudaStreamSynchronize(e->st);
    cudaMemcpy(got, recv, count * rs, cudaMemcpyDeviceToHost);
    const coopreduce_status ws =
        coopreduce_reduce_axis(op, stacked, NULL, want, 1, (uint64_t)j->R, count, dt, e->ref, NULL);
    CHECK(j, gs == ws && (gs || !memcmp(got, want, count * rs)),
          "all-reduce %s %s count=%llu: %s vs the axis %s", coopreduce_op_name(op),
          coopreduce_dtype_name(dt), (unsigned long long)count, coopreduce_status_string(gs),
          coopreduce_status_string(ws));
    cudaFree(send);
    cudaFree(recv);
    free(stacked);
    free(want);
    free(got);
}

/* Rank 0 passes dtype a, the others b: every rank fails (now, or deferred), recv untouched. */
static void disagree_case(rank_env *e, int sharded)
{
    job *j = e->j;
    coopreduce_handle *h = e->h;
    if (j->R < 2) return;
    const coopreduce_dtype dt = j->rank == 0 ? COOPREDUCE_FLOAT64 : COOPREDUCE_FLOAT32;
    void *send = NULL, *recv = NULL;
    cudaMalloc(&send, 64);
    cudaMalloc(&recv, 64);
    cudaMemset(send, 0, 64);
    cudaMemset(recv, 0x5a, 64);
    coopreduce_status s =
        sharded ? cr_dist_reduce_sharded(&e->t, &e->cache, COOPREDUCE_OP_SUM, send, NULL, recv, 3,
                                         dt, h, e->st)
                : cr_dist_allreduce(&e->t, &e->cache, send, recv, 3, dt, COOPREDUCE_OP_SUM, h, e->st);
    cudaStreamSynchronize(e->st);
    if (e->t.deferred_errors && !sharded) {
        CHECK(j, s == COOPREDUCE_SUCCESS, "deferred disagreement: the call itself failed (%s)",
              coopreduce_status_string(s));
        s = cr_dist_deferred_error(e->cache, h);
        CHECK(j, s == COOPREDUCE_ERROR_INVALID_ARGUMENT && strstr(coopreduce_last_error(h), "dtype"),
              "deferred disagreement reported as %s: %s", coopreduce_status_string(s),
              coopreduce_last_error(h));
        CHECK(j, cr_dist_deferred_error(e->cache, h) == COOPREDUCE_SUCCESS,
              "a deferred failure reported twice");
    } else {
        CHECK(j, s == COOPREDUCE_ERROR_INVALID_ARGUMENT && strstr(coopreduce_last_error(h), "dtype"),
              "%s disagreement: %s (%s)", sharded ? "sharded" : "all-reduce",
              coopreduce_status_string(s), coopreduce_last_error(h));
    }
    unsigned char back[64];
    cudaMemcpy(back, recv, 64, cudaMemcpyDeviceToHost);
    int untouched = 1;
    for (int i = 0; i < 64; i++) untouched &= back[i] == 0x5a;
    CHECK(j, untouched, "%s disagreement: the result was written", sharded ? "sharded" : "all-reduce");
    cudaFree(send);
    cudaFree(recv);
}

static void *rank_main(void *arg)
{
    job *j = arg;
    cudaSetDevice(0);
    coopreduce_handle *h = NULL, *ref = NULL;
    cudaStream_t st = NULL;
    loop_ctx c = {j->b, j->rank, NULL, NULL};
    if (coopreduce_create_gpu(&h, 0) || coopreduce_create_cpu(&ref, 0) ||
        cudaStreamCreate(&st) != cudaSuccess ||
        cudaMalloc((void **)&c.lead, (size_t)CR_DIST_SLOT_BYTES * (MAXR + 1)) != cudaSuccess) {
        fprintf(stderr, "rank %d: setup failed: %s\n", j->rank, coopreduce_last_error(NULL));
        j->failed++;
        j->b->setup_failed = 1;
    }
    pthread_barrier_wait(&j->b->bar); /* every rank's setup, then every rank goes on or stops */
    if (j->b->setup_failed) {
        cudaFree(c.lead);
        if (st) cudaStreamDestroy(st);
        coopreduce_destroy(h);
        coopreduce_destroy(ref);
        return NULL;
    }
    c.st = st;
    rank_env e = {j,
                  {.ctx = &c,
                   .rank = j->rank,
                   .size = j->R,
                   .name = "loop",
                   .device_data = 1,
                   .gpu_only = 1,
                   .allgather_host = loop_allgather_host,
                   .alltoall = loop_alltoall,
                   .allgather = loop_allgather,
                   .allgatherv = loop_allgatherv,
                   .allgather_lead = loop_allgather_lead,
                   .deferred_errors = j->deferred},
                  NULL, h, ref, st};
    uint64_t seed = 1;
    const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_MEAN, COOPREDUCE_OP_SUMSQ,
                                 COOPREDUCE_OP_NORM2, COOPREDUCE_OP_MAX, COOPREDUCE_OP_ARGMIN};
    const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64, COOPREDUCE_BFLOAT16,
                                    COOPREDUCE_INT64};
    const uint64_t R = (uint64_t)j->R;
    const uint64_t sizes[] = {1, 2049, 4096 * R + 5, 0, 4096 * R, 40000};
    /* (past the first exchange: 5000 floats, and R x 12297, whole slices of an odd length whose
     * results are reduced straight into recv and gathered in place) */
    const uint64_t counts[] = {1, 1000, 5000, R * 12297};
    for (int mode = 0; mode < 2; mode++) {
        coopreduce_set_mode(h, (coopreduce_mode)mode);
        coopreduce_set_mode(ref, (coopreduce_mode)mode);
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
            for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
                const int q_in = (dts[d] == COOPREDUCE_FLOAT32 || dts[d] == COOPREDUCE_BFLOAT16) &&
                                 (ops[o] == COOPREDUCE_OP_SUM || ops[o] == COOPREDUCE_OP_NORM2 ||
                                  ops[o] == COOPREDUCE_OP_MAX);
                if (j->quick && !q_in) continue;
                for (size_t k = 0; k < (j->quick ? 3 : sizeof sizes / sizeof sizes[0]); k++)
                    sharded_case(&e, ops[o], dts[d], sizes[k], seed++);
                if (ops[o] == COOPREDUCE_OP_ARGMIN) continue;
                for (size_t k = 0; k < (j->quick ? 2u : 4u); k++)
                    allreduce_case(&e, ops[o], dts[d], counts[k], seed++);
            }
    }
    coopreduce_set_mode(h, COOPREDUCE_MODE_DETERMINISTIC);
    disagree_case(&e, 0);
    if (!j->deferred) disagree_case(&e, 1);
    /* a good call after the failures */
    coopreduce_set_mode(ref, COOPREDUCE_MODE_DETERMINISTIC);
    allreduce_case(&e, COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, 7, seed++);
    sharded_case(&e, COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, 3001, seed++);
    cr_dist_cache_free(e.cache);
    cudaFree(c.lead);
    cudaStreamDestroy(st);
    coopreduce_destroy(h);
    coopreduce_destroy(ref);
    return NULL;
}

int main(int argc, char **argv)
{
    int only = 0, ngpu = 0, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
            only = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else {
            fprintf(stderr, "usage: %s [--ranks R] [--quick]\n", argv[0]);
            return 2;
        }
    }
    if (only < 0 || only > MAXR) {
        fprintf(stderr, "test_dist_loop: --ranks takes 1 to %d\n", MAXR);
        return 2;
    }
    if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
        printf("SKIP: test_dist_loop: no CUDA GPU on this machine\n");
        return 77;
    }
    unsigned long long passed = 0, failed = 0;
    for (int R = only ? only : 1; R <= (only ? only : 3); R++)
        for (int variant = 0; variant < 3; variant++) {
            /* small arrays gathered whole; the boundary exchange; deferred errors */
            setenv("COOPREDUCE_DIST_GATHER_KIB", variant == 1 ? "0" : "1024", 1);
            setenv("COOPREDUCE_DIST_FULL_PROTOCOL", "1", 1);
            bus b;
            memset(&b, 0, sizeof b);
            b.R = R;
            pthread_barrier_init(&b.bar, NULL, (unsigned)R);
            job jobs[MAXR];
            pthread_t th[MAXR];
            for (int r = 0; r < R; r++) {
                memset(&jobs[r], 0, sizeof jobs[r]);
                jobs[r] = (job){r, R, variant == 2, quick, &b, 0, 0, 0};
                pthread_create(&th[r], NULL, rank_main, &jobs[r]);
            }
            for (int r = 0; r < R; r++) {
                pthread_join(th[r], NULL);
                passed += jobs[r].passed;
                failed += jobs[r].failed;
            }
            pthread_barrier_destroy(&b.bar);
        }
    printf("test_dist_loop: %llu passed, %llu failed\n", passed, failed);
    return failed ? 1 : 0;
}

#else
int main(void)
{
    printf("SKIP: test_dist_loop: built without CUDA\n");
    return 77;
}
#endif
