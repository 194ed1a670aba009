/* canonical.c — canonical order v1 on the CPU: every core, SIMD, the GPU's bits.
 *
 * docs/DETERMINISM.md defines the tree. A chunk is R = 32 rows of one 512-byte row each; the
 * lanes of a row map onto SIMD vectors (GNU vector extensions, 64 bytes: 16 floats or 8 doubles,
 * which the compiler lowers to one AVX-512 register, two AVX2 registers, or four SSE registers —
 * the arithmetic per lane is the same IEEE addition in every case, so the bits do not depend on
 * the vector width). Rows are read in order and folded into the pairwise row tree as they come;
 * then the lanes are reduced by the pairwise lane tree, on vectors too. Threads take contiguous
 * ranges of chunks; a chunk's value never depends on which thread computed it.
 *
 * This file must be compiled without -ffast-math and with -ffp-contract=off (CMakeLists.txt):
 * the compiler may not reassociate or fuse a single addition of the tree. */
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "cpu/cpu.h"
#include "cpu/runtime.h"

typedef float v16f __attribute__((vector_size(64)));
typedef double v8d __attribute__((vector_size(64)));

/* One level of the lane tree on vectors: the 2V lanes of (a, b) become the V sums of adjacent
 * pairs, in order: out[i] = ab[2i] + ab[2i+1] (an even/odd deinterleave, then one vector add).
 * Macros rather than functions, so that no 64-byte vector is ever passed across a call in a
 * translation unit compiled for several targets. __builtin_shufflevector: GCC 12+ and clang. */
#define pair_sums_f32(a, b)                                                                        \
    (__builtin_shufflevector((a), (b), 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,      \
                             30) +                                                                 \
     __builtin_shufflevector((a), (b), 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31))
#define pair_sums_f64(a, b)                                                                        \
    (__builtin_shufflevector((a), (b), 0, 2, 4, 6, 8, 10, 12, 14) +                                \
     __builtin_shufflevector((a), (b), 1, 3, 5, 7, 9, 11, 13, 15))

/* One full chunk (C elements, no padding needed), a column at a time. A column is one
 * 64-byte vector VT of lanes through all 32 rows; its pairwise row tree ((r0+r1)+(r2+r3))+...
 * of docs/DETERMINISM.md is written out as one expression (CR_ROWS_32), whose few live vectors
 * (about six) fit in the registers of every target: 32 zmm with AVX-512, 16 ymm with AVX2,
 * where a 64-byte vector is two. The row trees of the VPR columns of a chunk are its VPR lane
 * vectors; the lane tree then runs on vectors as well (in scalar code its 127 dependent
 * additions per chunk are a serial chain that holds back the whole path). Rows are not walked
 * in order with the pending nodes of a row tree in arrays: with AVX2's 16 registers those
 * arrays live on the stack and their copies dominate (docs/perf-log/2026-11-cpu.md). */
#define CR_ROW_AT(VT, v, LANES, r)                                                                 \
    __extension__({                                                                                \
        VT t_;                                                                                     \
        memcpy(&t_, (v) + (size_t)(r) * (LANES), sizeof t_);                                       \
        t_;                                                                                        \
    })
#define CR_ROWS_2(VT, v, L, r)  (CR_ROW_AT(VT, v, L, r) + CR_ROW_AT(VT, v, L, (r) + 1))
#define CR_ROWS_4(VT, v, L, r)  (CR_ROWS_2(VT, v, L, r) + CR_ROWS_2(VT, v, L, (r) + 2))
#define CR_ROWS_8(VT, v, L, r)  (CR_ROWS_4(VT, v, L, r) + CR_ROWS_4(VT, v, L, (r) + 4))
#define CR_ROWS_16(VT, v, L, r) (CR_ROWS_8(VT, v, L, r) + CR_ROWS_8(VT, v, L, (r) + 8))
#define CR_ROWS_32(VT, v, L)    (CR_ROWS_16(VT, v, L, 0) + CR_ROWS_16(VT, v, L, 16))
#define CR_DEFINE_CHUNK_FULL(NAME, T, VT, VPR, LANES, PAIRS)                                       \
    CR_SIMD_CLONES static T NAME(const T *v)                                                       \
    {                                                                                              \
        _Static_assert(CR_ROWS == 32, "CR_ROWS_32 is the tree of 32 rows");                        \
        VT lane[VPR]; /* lane l of the chunk is lane[l / per][l % per] */                          \
        _Pragma("GCC unroll 16") for (int h = 0; h < (VPR); h++) lane[h] =                         \
            CR_ROWS_32(VT, v + h * ((LANES) / (VPR)), LANES);                                      \
        /* Lane tree, adjacent pairs: VPR vectors halve to one, then the last vector halves \
         * in place (its upper lanes turn to junk that never reaches lane 0). */      \
        for (int w = (VPR); w > 1; w /= 2)                                                         \
            for (int i = 0; i < w / 2; i++) lane[i] = PAIRS(lane[2 * i], lane[2 * i + 1]);         \
        for (int w = (LANES) / (VPR); w > 1; w /= 2) lane[0] = PAIRS(lane[0], lane[0]);            \
        return lane[0][0];                                                                         \
    }

CR_DEFINE_CHUNK_FULL(chunk_full_f32, float, v16f, CR_LANES_F32 / 16, CR_LANES_F32, pair_sums_f32)
CR_DEFINE_CHUNK_FULL(chunk_full_f64, double, v8d, CR_LANES_F64 / 8, CR_LANES_F64, pair_sums_f64)

/* Per element type: a ragged chunk (1 <= m < C) is padded with -0.0, the exact identity of
 * addition, and reduced as a full chunk (once per level, so the copy costs nothing that
 * matters); a level is a run of chunks; the top value gets the canonical NaN. */
#define CR_DEFINE_LEVELS(S, T, C, UINT, QNAN)                                                      \
    static T chunk_##S(const T *v, uint64_t m)                                                     \
    {                                                                                              \
        if (m == (C)) return chunk_full_##S(v);                                                    \
        T buf[C] __attribute__((aligned(64)));                                                     \
        memcpy(buf, v, m * sizeof *v);                                                             \
        for (uint64_t i = m; i < (C); i++) buf[i] = (T)-0.0;                                       \
        return chunk_full_##S(buf);                                                                \
    }                                                                                              \
    /* out[g] = chunk g of v[0..n), for g in [g0, g1). */                                          \
    static void level_range_##S(const T *x, uint64_t n, T *out, uint64_t g0, uint64_t g1)          \
    {                                                                                              \
        for (uint64_t g = g0; g < g1; g++) {                                                       \
            uint64_t first = g * (C), m = n - first;                                               \
            out[g] = chunk_##S(x + first, m < (C) ? m : (C));                                      \
        }                                                                                          \
    }                                                                                              \
    static void top_##S(const T *v, uint64_t m, void *result)                                      \
    {                                                                                              \
        T r = chunk_##S(v, m);                                                                     \
        if (r != r) {                                                                              \
            UINT q = (QNAN);                                                                       \
            memcpy(&r, &q, sizeof r);                                                              \
        }                                                                                          \
        memcpy(result, &r, sizeof r);                                                              \
    }

CR_DEFINE_LEVELS(f32, float, CR_CHUNK_F32, uint32_t, 0x7fc00000u)
CR_DEFINE_LEVELS(f64, double, CR_CHUNK_F64, uint64_t, 0x7ff8000000000000ull)

float cr_cpu_chunk_f32(const float *v, uint64_t m) { return chunk_f32(v, m); }
double cr_cpu_chunk_f64(const double *v, uint64_t m) { return chunk_f64(v, m); }

static void level_range(coopreduce_dtype dtype, const void *v, uint64_t n, void *out, uint64_t g0,
                        uint64_t g1)
{
    if (dtype == COOPREDUCE_FLOAT32)
        level_range_f32(v, n, out, g0, g1);
    else
        level_range_f64(v, n, out, g0, g1);
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

/* One level: chunks split into contiguous ranges, one per thread. */
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
    for (uint64_t i = 0; i < t; i++)
        jobs[i] = (level_job){dtype, v, n, out, chunks * i / t, chunks * (i + 1) / t};
    cr_cpu_run((int)t, level_worker, jobs, sizeof jobs[0]);
}

void cr_cpu_level(coopreduce_handle *h, coopreduce_dtype dtype, const void *v, uint64_t n,
                  void *out)
{
    const uint64_t C = cr_chunk_elems(dtype);
    if (n > 0) level_parallel(cr_cpu_threads(h), dtype, v, n, out, (n + C - 1) / C);
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

coopreduce_status cr_cpu_tree_reserve(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype)
{
    size_t bytes = partial_elems(n, dtype) * cr_dtype_size(dtype);
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

/* In the IEEE environment cr_cpu_reduce entered (every caller runs under it). */
coopreduce_status cr_cpu_sum(coopreduce_handle *h, const void *x, uint64_t n,
                             coopreduce_dtype dtype, void *result)
{
    size_t es = cr_dtype_size(dtype);
    if (n == 0) {
        memset(result, 0, es); /* +0.0 */
        return COOPREDUCE_SUCCESS;
    }
    uint64_t count[CR_MAX_LEVELS + 1];
    int levels = cr_level_counts(n, cr_chunk_elems(dtype), count);
    /* Partials of levels 1 .. levels-1, one array after the other, in the handle's buffer
     * (grown here only when n is larger than anything reserved or summed before). */
    coopreduce_status s = cr_cpu_tree_reserve(h, n, dtype);
    if (s) return s;
    int threads = cr_cpu_threads(h);
    const void *v = x;
    char *out = h->cpu_partials;
    for (int k = 1; k < levels; k++) {
        level_parallel(threads, dtype, v, count[k - 1], out, count[k]);
        v = out;
        out += count[k] * es;
    }
    /* The top chunk, then the canonical NaN (docs/DETERMINISM.md, "Special values"). */
    if (dtype == COOPREDUCE_FLOAT32)
        top_f32(v, count[levels - 1], result);
    else
        top_f64(v, count[levels - 1], result);
    return COOPREDUCE_SUCCESS;
}

/* CR_FAMILY_CANONICAL: SUM and MEAN of FLOAT32 and FLOAT64, whose leaves are x itself. */
coopreduce_status cr_cpu_canonical(coopreduce_handle *h, const cr_plan *p, const void *x,
                                   uint64_t n, void *result)
{
    const int f64 = p->dtype == COOPREDUCE_FLOAT64;
    double acc;
    coopreduce_status s;
    if (f64) {
        s = cr_cpu_sum(h, x, n, p->dtype, &acc);
    } else {
        float f = 0;
        s = cr_cpu_sum(h, x, n, p->dtype, &f);
        acc = f; /* exact */
    }
    if (s) return s;
    if (p->op == COOPREDUCE_OP_MEAN) acc = cr_mean_of_float(acc, n, f64);
    cr_cpu_write_float(acc, p->dtype, p->narrow, result);
    return COOPREDUCE_SUCCESS;
}
