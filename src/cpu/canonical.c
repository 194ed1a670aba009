/* canonical.c — canonical order v1 on the CPU: every core, SIMD, the GPU's bits.
 *
 * docs/DETERMINISM.md defines the tree. A chunk is R = 32 rows of one 512-byte row each; the
 * lanes of a row map onto SIMD vectors (GNU vector extensions, 64 bytes: 16 floats or 8 doubles,
 * which the compiler lowers to one AVX-512 register, two AVX2 registers, or four SSE registers —
 * the arithmetic per lane is the same IEEE addition in every case, so the bits do not depend on
 * the vector width). Each lane's rows are reduced by the pairwise row tree one 64-byte column
 * strip at a time, then the lanes by the pairwise lane tree. Threads take contiguous ranges of
 * chunks; a chunk's value never depends on which thread computed it.
 *
 * This file must be compiled without -ffast-math and with -ffp-contract=off (CMakeLists.txt):
 * the compiler may not reassociate or fuse a single addition of the tree. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

typedef float v16f __attribute__((vector_size(64)));
typedef double v8d __attribute__((vector_size(64)));

/* Runtime dispatch: the same source compiled for AVX-512, AVX2 and baseline x86-64. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CR_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CR_SIMD_CLONES
#endif

/* The row tree over 32 rows of one 64-byte column strip: ((r0+r1)+(r2+r3))+... in row order.
 * `p` points at the strip in row 0; rows are `stride` elements apart. Written out so the
 * compiler sees 32 independent loads and a fixed tree; the macros expand to the same shape for
 * both element types. */
#define CR_LOAD(VT, p) ({ VT v_; memcpy(&v_, (p), sizeof v_); v_; })
#define CR_T2(VT, p, s, r)  (CR_LOAD(VT, (p) + (size_t)(r) * (s)) + CR_LOAD(VT, (p) + (size_t)((r) + 1) * (s)))
#define CR_T4(VT, p, s, r)  (CR_T2(VT, p, s, r) + CR_T2(VT, p, s, (r) + 2))
#define CR_T8(VT, p, s, r)  (CR_T4(VT, p, s, r) + CR_T4(VT, p, s, (r) + 4))
#define CR_T16(VT, p, s, r) (CR_T8(VT, p, s, r) + CR_T8(VT, p, s, (r) + 8))
#define CR_T32(VT, p, s)    (CR_T16(VT, p, s, 0) + CR_T16(VT, p, s, 16))

/* One full chunk (C elements, no padding needed). */
CR_SIMD_CLONES static float chunk_full_f32(const float *v)
{
    float lane[CR_LANES_F32];
    for (int g = 0; g < CR_LANES_F32 / 16; g++) {
        v16f s = CR_T32(v16f, v + 16 * g, CR_LANES_F32);
        memcpy(lane + 16 * g, &s, sizeof s);
    }
    for (int w = CR_LANES_F32; w > 1; w /= 2)       /* lane tree: adjacent pairs */
        for (int i = 0; i < w / 2; i++) lane[i] = lane[2 * i] + lane[2 * i + 1];
    return lane[0];
}

CR_SIMD_CLONES static double chunk_full_f64(const double *v)
{
    double lane[CR_LANES_F64];
    for (int g = 0; g < CR_LANES_F64 / 8; g++) {
        v8d s = CR_T32(v8d, v + 8 * g, CR_LANES_F64);
        memcpy(lane + 8 * g, &s, sizeof s);
    }
    for (int w = CR_LANES_F64; w > 1; w /= 2)
        for (int i = 0; i < w / 2; i++) lane[i] = lane[2 * i] + lane[2 * i + 1];
    return lane[0];
}

/* A ragged chunk (1 <= m < C): pad with -0.0, the exact identity of addition, and reduce as a
 * full chunk. Once per level, so the copy costs nothing that matters. */
static float chunk_f32(const float *v, uint64_t m)
{
    if (m == CR_CHUNK_F32) return chunk_full_f32(v);
    float buf[CR_CHUNK_F32] __attribute__((aligned(64)));
    memcpy(buf, v, m * sizeof *v);
    for (uint64_t i = m; i < CR_CHUNK_F32; i++) buf[i] = -0.0f;
    return chunk_full_f32(buf);
}

static double chunk_f64(const double *v, uint64_t m)
{
    if (m == CR_CHUNK_F64) return chunk_full_f64(v);
    double buf[CR_CHUNK_F64] __attribute__((aligned(64)));
    memcpy(buf, v, m * sizeof *v);
    for (uint64_t i = m; i < CR_CHUNK_F64; i++) buf[i] = -0.0;
    return chunk_full_f64(buf);
}

/* out[g] = chunk g of v[0..n), for g in [g0, g1). */
static void level_range(coopreduce_dtype dtype, const void *v, uint64_t n, void *out,
                        uint64_t g0, uint64_t g1)
{
    if (dtype == COOPREDUCE_FLOAT32) {
        const float *x = v;
        float *p = out;
        for (uint64_t g = g0; g < g1; g++) {
            uint64_t first = g * CR_CHUNK_F32, m = n - first;
            p[g] = chunk_f32(x + first, m < CR_CHUNK_F32 ? m : CR_CHUNK_F32);
        }
    } else {
        const double *x = v;
        double *p = out;
        for (uint64_t g = g0; g < g1; g++) {
            uint64_t first = g * CR_CHUNK_F64, m = n - first;
            p[g] = chunk_f64(x + first, m < CR_CHUNK_F64 ? m : CR_CHUNK_F64);
        }
    }
}

typedef struct {
    coopreduce_dtype dtype;
    const void *v;
    uint64_t n;
    void *out;
    uint64_t g0, g1;
} level_job;

static void *level_worker(void *arg)
{
    level_job *j = arg;
    level_range(j->dtype, j->v, j->n, j->out, j->g0, j->g1);
    return NULL;
}

/* Below this many chunks per thread, starting a thread costs more than it saves. */
#define CR_MIN_CHUNKS_PER_THREAD 64
#define CR_MAX_THREADS 256

static int online_cpus(void)
{
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1 : (c > CR_MAX_THREADS ? CR_MAX_THREADS : (int)c);
}

/* One level: chunks split into contiguous ranges, one per thread. A thread that cannot be
 * started is not an error: the calling thread computes its range instead, same bits. */
static void level_parallel(int threads, coopreduce_dtype dtype, const void *v, uint64_t n,
                           void *out, uint64_t chunks)
{
    uint64_t t = chunks / CR_MIN_CHUNKS_PER_THREAD;
    if (t > (uint64_t)threads) t = (uint64_t)threads;
    if (t <= 1) {
        level_range(dtype, v, n, out, 0, chunks);
        return;
    }
    level_job jobs[CR_MAX_THREADS];
    pthread_t tid[CR_MAX_THREADS];
    int started[CR_MAX_THREADS];
    for (uint64_t i = 0; i < t; i++) {
        jobs[i] = (level_job){dtype, v, n, out, chunks * i / t, chunks * (i + 1) / t};
        started[i] = i > 0 && pthread_create(&tid[i], NULL, level_worker, &jobs[i]) == 0;
    }
    for (uint64_t i = 0; i < t; i++)
        if (!started[i]) level_worker(&jobs[i]);
    for (uint64_t i = 1; i < t; i++)
        if (started[i]) pthread_join(tid[i], NULL);
}

/* Elements of the partial sums of levels 1 .. L-1 for n elements (0 when one chunk). */
static uint64_t partial_elems(uint64_t n, coopreduce_dtype dtype)
{
    uint64_t count[CR_MAX_LEVELS + 1], total = 0;
    if (n == 0) return 0;
    int levels = cr_level_counts(n, cr_chunk_elems(dtype), count);
    for (int k = 1; k < levels; k++) total += count[k];
    return total;
}

coopreduce_status cr_cpu_reserve(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype)
{
    size_t bytes = partial_elems(n, dtype) * coopreduce_dtype_size(dtype);
    if (bytes <= h->cpu_partials_bytes) return COOPREDUCE_SUCCESS;
    void *p = malloc(bytes);
    if (!p)
        return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY,
                       "cannot allocate %zu bytes of partial sums", bytes);
    free(h->cpu_partials);
    h->cpu_partials = p;
    h->cpu_partials_bytes = bytes;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_cpu_sum(coopreduce_handle *h, const void *x, uint64_t n,
                             coopreduce_dtype dtype, void *result)
{
    size_t es = coopreduce_dtype_size(dtype);
    if (n == 0) {
        memset(result, 0, es); /* +0.0 */
        return COOPREDUCE_SUCCESS;
    }
    uint64_t count[CR_MAX_LEVELS + 1];
    int levels = cr_level_counts(n, cr_chunk_elems(dtype), count);
    /* Partials of levels 1 .. levels-1, one array after the other, in the handle's buffer
     * (grown here only when n is larger than anything reserved or summed before). */
    coopreduce_status s = cr_cpu_reserve(h, n, dtype);
    if (s) return s;
    int threads = h->threads > 0 ? (h->threads > CR_MAX_THREADS ? CR_MAX_THREADS : h->threads)
                                 : online_cpus();
    const void *v = x;
    char *out = h->cpu_partials;
    for (int k = 1; k < levels; k++) {
        level_parallel(threads, dtype, v, count[k - 1], out, count[k]);
        v = out;
        out += count[k] * es;
    }
    /* The top chunk, then the canonical NaN (docs/DETERMINISM.md, "Special values"). */
    if (dtype == COOPREDUCE_FLOAT32) {
        float r = chunk_f32(v, count[levels - 1]);
        if (r != r) {
            uint32_t qnan = 0x7fc00000u;
            memcpy(&r, &qnan, sizeof r);
        }
        memcpy(result, &r, sizeof r);
    } else {
        double r = chunk_f64(v, count[levels - 1]);
        if (r != r) {
            uint64_t qnan = 0x7ff8000000000000ull;
            memcpy(&r, &qnan, sizeof r);
        }
        memcpy(result, &r, sizeof r);
    }
    return COOPREDUCE_SUCCESS;
}
