/* axis.c — reductions along an axis and over segments on the CPU (CR_SHAPE_AXIS, _SEGMENTS).
 *
 * Every result is the 1-D reduction of its own values (docs/DETERMINISM.md, "Axis and
 * segments"), so this file computes exactly that: it hands each row or segment, as a contiguous
 * run of elements, to the plan's family, the same code a 1-D call runs. A row of a C-ordered
 * axis with inner > 1 is strided (a column); its elements are gathered into a contiguous buffer
 * first, a tile of adjacent columns at a time, by a blocked transpose through vector registers
 * (adjacent columns share cache lines, so a tile reads each line once). Which thread reduces a
 * row cannot change its bits: the families' bits do not depend on the thread count.
 *
 * Threads: with at least as many results as threads, each thread takes a contiguous range of
 * results holding about the same number of elements, and reduces each result alone (a private
 * copy of the handle with one thread and its own level buffer, freed at the end); with fewer
 * results, the results are reduced one after the other, each with every thread. */
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "cpu/cpu.h"
#include "cpu/runtime.h"

/* Gathering columns. A tile is w adjacent columns of one outer index (results k .. k + w - 1);
 * position e of the tile is w contiguous elements, inner elements after position e - 1. The
 * tile is copied out transposed, column c becoming the contiguous row buf + c * pitch, and the
 * family reduces each row from there. The copy takes V x V blocks (V positions of V adjacent
 * columns: V = 8 for 2- and 4-byte elements, 4 for 8-byte ones) through vector registers, a
 * load per position and a store per column; the columns and positions left over from whole
 * blocks are copied one element at a time. The V blocks of a tile's width are taken for V
 * positions, then the next V positions: the loads of one position are the tile's adjacent bytes
 * of one source line or a few, the stores of one column fill a line of its gathered row over
 * consecutive steps, and all of it stays in L1. A tile of all of a narrow inner's 2 to 7 columns
 * reads a contiguous run: it is split by a loop the compiler vectorizes (split_*).
 *
 * Positions far apart (at least CR_PREFETCH_STRIDE bytes: each in another page, past what the
 * hardware prefetchers follow) are prefetched CR_PREFETCH_AHEAD positions ahead. The pitch of
 * the gathered rows is an odd number of cache lines, so that the lines of the w rows a step
 * writes fall in different cache sets (a pitch of a power of two would put them all in one).
 *
 * A tile is as wide as CR_TILE_BYTES of gathered rows allow (the family then reads them from
 * L2), at most CR_TILE_MAX columns and at least the columns of one cache line (so that every
 * source line read is used whole), unless that passes CR_GATHER_BYTES for long columns: fewer
 * columns then, at least one. The sizes were measured on a 2-core Xeon
 * (docs/perf-log/2026-11-23-cpu-columns.md). */
#define CR_TILE_BYTES      (1u << 20)
#define CR_GATHER_BYTES    (32u << 20)
#define CR_TILE_MAX        128
#define CR_LINE            64
#define CR_PREFETCH_AHEAD  16
#define CR_PREFETCH_STRIDE 1024

typedef uint16_t cr_v8h __attribute__((vector_size(16)));
typedef uint32_t cr_v8w __attribute__((vector_size(32)));
typedef uint64_t cr_v4d __attribute__((vector_size(32)));

#define CR_LD(VT, p)                                                                               \
    __extension__({                                                                                \
        VT t_;                                                                                     \
        memcpy(&t_, (p), sizeof t_);                                                               \
        t_;                                                                                        \
    })
#define CR_ST(p, v)                                                                                \
    do {                                                                                           \
        const __typeof__(v) t_ = (v);                                                              \
        memcpy((p), &t_, sizeof t_);                                                               \
    } while (0)

/* The blocks: d[j * pitch + i] = s[i * stride + j] for i, j < V. Macros rather than functions,
 * so that no vector crosses a call in a translation unit compiled for several targets. */

/* 8 x 8 of 2-byte elements in 16-byte vectors: three rounds of the perfect shuffle,
 * out[2i] = lo(in[i], in[i + 4]), out[2i + 1] = hi(in[i], in[i + 4]) (24 shuffles). */
#define CR_LO8(a, b) __builtin_shufflevector((a), (b), 0, 8, 1, 9, 2, 10, 3, 11)
#define CR_HI8(a, b) __builtin_shufflevector((a), (b), 4, 12, 5, 13, 6, 14, 7, 15)
#define CR_BLOCK8H(VT, s, stride, d, pitch)                                                        \
    do {                                                                                           \
        const VT a0_ = CR_LD(VT, (s)), a1_ = CR_LD(VT, (s) + (stride)),                            \
                 a2_ = CR_LD(VT, (s) + 2 * (stride)), a3_ = CR_LD(VT, (s) + 3 * (stride)),         \
                 a4_ = CR_LD(VT, (s) + 4 * (stride)), a5_ = CR_LD(VT, (s) + 5 * (stride)),         \
                 a6_ = CR_LD(VT, (s) + 6 * (stride)), a7_ = CR_LD(VT, (s) + 7 * (stride));         \
        const VT b0_ = CR_LO8(a0_, a4_), b1_ = CR_HI8(a0_, a4_), b2_ = CR_LO8(a1_, a5_),           \
                 b3_ = CR_HI8(a1_, a5_), b4_ = CR_LO8(a2_, a6_), b5_ = CR_HI8(a2_, a6_),           \
                 b6_ = CR_LO8(a3_, a7_), b7_ = CR_HI8(a3_, a7_);                                   \
        const VT c0_ = CR_LO8(b0_, b4_), c1_ = CR_HI8(b0_, b4_), c2_ = CR_LO8(b1_, b5_),           \
                 c3_ = CR_HI8(b1_, b5_), c4_ = CR_LO8(b2_, b6_), c5_ = CR_HI8(b2_, b6_),           \
                 c6_ = CR_LO8(b3_, b7_), c7_ = CR_HI8(b3_, b7_);                                   \
        CR_ST((d), CR_LO8(c0_, c4_));                                                              \
        CR_ST((d) + (pitch), CR_HI8(c0_, c4_));                                                    \
        CR_ST((d) + 2 * (pitch), CR_LO8(c1_, c5_));                                                \
        CR_ST((d) + 3 * (pitch), CR_HI8(c1_, c5_));                                                \
        CR_ST((d) + 4 * (pitch), CR_LO8(c2_, c6_));                                                \
        CR_ST((d) + 5 * (pitch), CR_HI8(c2_, c6_));                                                \
        CR_ST((d) + 6 * (pitch), CR_LO8(c3_, c7_));                                                \
        CR_ST((d) + 7 * (pitch), CR_HI8(c3_, c7_));                                                \
    } while (0)

/* 8 x 8 of 4-byte elements in 32-byte vectors, each two 16-byte halves ("lanes"): pairs of
 * rows interleaved within the lanes, then pairs of pairs, then the lanes exchanged (24
 * shuffles, all within a lane but the last round's). */
#define CR_BLOCK8W(VT, s, stride, d, pitch)                                                        \
    do {                                                                                           \
        const VT a0_ = CR_LD(VT, (s)), a1_ = CR_LD(VT, (s) + (stride)),                            \
                 a2_ = CR_LD(VT, (s) + 2 * (stride)), a3_ = CR_LD(VT, (s) + 3 * (stride)),         \
                 a4_ = CR_LD(VT, (s) + 4 * (stride)), a5_ = CR_LD(VT, (s) + 5 * (stride)),         \
                 a6_ = CR_LD(VT, (s) + 6 * (stride)), a7_ = CR_LD(VT, (s) + 7 * (stride));         \
        const VT t0_ = __builtin_shufflevector(a0_, a1_, 0, 8, 1, 9, 4, 12, 5, 13),                \
                 t1_ = __builtin_shufflevector(a0_, a1_, 2, 10, 3, 11, 6, 14, 7, 15),              \
                 t2_ = __builtin_shufflevector(a2_, a3_, 0, 8, 1, 9, 4, 12, 5, 13),                \
                 t3_ = __builtin_shufflevector(a2_, a3_, 2, 10, 3, 11, 6, 14, 7, 15),              \
                 t4_ = __builtin_shufflevector(a4_, a5_, 0, 8, 1, 9, 4, 12, 5, 13),                \
                 t5_ = __builtin_shufflevector(a4_, a5_, 2, 10, 3, 11, 6, 14, 7, 15),              \
                 t6_ = __builtin_shufflevector(a6_, a7_, 0, 8, 1, 9, 4, 12, 5, 13),                \
                 t7_ = __builtin_shufflevector(a6_, a7_, 2, 10, 3, 11, 6, 14, 7, 15);              \
        const VT u0_ = __builtin_shufflevector(t0_, t2_, 0, 1, 8, 9, 4, 5, 12, 13),                \
                 u1_ = __builtin_shufflevector(t0_, t2_, 2, 3, 10, 11, 6, 7, 14, 15),              \
                 u2_ = __builtin_shufflevector(t1_, t3_, 0, 1, 8, 9, 4, 5, 12, 13),                \
                 u3_ = __builtin_shufflevector(t1_, t3_, 2, 3, 10, 11, 6, 7, 14, 15),              \
                 u4_ = __builtin_shufflevector(t4_, t6_, 0, 1, 8, 9, 4, 5, 12, 13),                \
                 u5_ = __builtin_shufflevector(t4_, t6_, 2, 3, 10, 11, 6, 7, 14, 15),              \
                 u6_ = __builtin_shufflevector(t5_, t7_, 0, 1, 8, 9, 4, 5, 12, 13),                \
                 u7_ = __builtin_shufflevector(t5_, t7_, 2, 3, 10, 11, 6, 7, 14, 15);              \
        CR_ST((d), __builtin_shufflevector(u0_, u4_, 0, 1, 2, 3, 8, 9, 10, 11));                   \
        CR_ST((d) + (pitch), __builtin_shufflevector(u1_, u5_, 0, 1, 2, 3, 8, 9, 10, 11));         \
        CR_ST((d) + 2 * (pitch), __builtin_shufflevector(u2_, u6_, 0, 1, 2, 3, 8, 9, 10, 11));     \
        CR_ST((d) + 3 * (pitch), __builtin_shufflevector(u3_, u7_, 0, 1, 2, 3, 8, 9, 10, 11));     \
        CR_ST((d) + 4 * (pitch), __builtin_shufflevector(u0_, u4_, 4, 5, 6, 7, 12, 13, 14, 15));   \
        CR_ST((d) + 5 * (pitch), __builtin_shufflevector(u1_, u5_, 4, 5, 6, 7, 12, 13, 14, 15));   \
        CR_ST((d) + 6 * (pitch), __builtin_shufflevector(u2_, u6_, 4, 5, 6, 7, 12, 13, 14, 15));   \
        CR_ST((d) + 7 * (pitch), __builtin_shufflevector(u3_, u7_, 4, 5, 6, 7, 12, 13, 14, 15));   \
    } while (0)

/* 4 x 4 of 8-byte elements in 32-byte vectors: pairs of rows interleaved within the lanes,
 * then the lanes exchanged (8 shuffles). */
#define CR_BLOCK4D(VT, s, stride, d, pitch)                                                        \
    do {                                                                                           \
        const VT a0_ = CR_LD(VT, (s)), a1_ = CR_LD(VT, (s) + (stride)),                            \
                 a2_ = CR_LD(VT, (s) + 2 * (stride)), a3_ = CR_LD(VT, (s) + 3 * (stride));         \
        const VT t0_ = __builtin_shufflevector(a0_, a1_, 0, 4, 2, 6),                              \
                 t1_ = __builtin_shufflevector(a0_, a1_, 1, 5, 3, 7),                              \
                 t2_ = __builtin_shufflevector(a2_, a3_, 0, 4, 2, 6),                              \
                 t3_ = __builtin_shufflevector(a2_, a3_, 1, 5, 3, 7);                              \
        CR_ST((d), __builtin_shufflevector(t0_, t2_, 0, 1, 4, 5));                                 \
        CR_ST((d) + (pitch), __builtin_shufflevector(t1_, t3_, 0, 1, 4, 5));                       \
        CR_ST((d) + 2 * (pitch), __builtin_shufflevector(t0_, t2_, 2, 3, 6, 7));                   \
        CR_ST((d) + 3 * (pitch), __builtin_shufflevector(t1_, t3_, 2, 3, 6, 7));                   \
    } while (0)

/* Rows [0, w) of d (pitch elements apart) = columns [0, w) of positions [0, count) of s
 * (positions stride elements apart), for elements of type T, in V x V blocks. */
#define CR_DEFINE_TRANSPOSE(NAME, T, VT, V, BLOCK)                                                 \
    CR_SIMD_CLONES static void NAME(const T *s, uint64_t stride, uint64_t count, uint64_t w, T *d, \
                                    uint64_t pitch)                                                \
    {                                                                                              \
        const uint64_t wv = w - w % (V), cv = count - count % (V);                                 \
        const uint64_t ahead = stride * sizeof(T) >= CR_PREFETCH_STRIDE ? CR_PREFETCH_AHEAD : 0;   \
        for (uint64_t e0 = 0; e0 < count; e0 += (V)) {                                             \
            const uint64_t e1 = e0 < cv ? e0 + (V) : count;                                        \
            for (uint64_t e = e0 + ahead; ahead && e < e1 + ahead && e < count; e++) {             \
                /* the lines of position e: from the one of its first element to its last's */     \
                const uintptr_t a = (uintptr_t)(s + e * stride);                                   \
                for (uintptr_t l = a - a % CR_LINE; l < a + w * sizeof(T); l += CR_LINE)           \
                    __builtin_prefetch((const void *)l);                                           \
            }                                                                                      \
            if (e0 < cv)                                                                           \
                for (uint64_t c0 = 0; c0 < wv; c0 += (V))                                          \
                    BLOCK(VT, s + e0 * stride + c0, stride, d + c0 * pitch + e0, pitch);           \
            for (uint64_t e = e0; e < e1; e++)                                                     \
                for (uint64_t c = e0 < cv ? wv : 0; c < w; c++)                                    \
                    d[c * pitch + e] = s[e * stride + c];                                          \
        }                                                                                          \
    }
CR_DEFINE_TRANSPOSE(transpose_2, uint16_t, cr_v8h, 8, CR_BLOCK8H)
CR_DEFINE_TRANSPOSE(transpose_4, uint32_t, cr_v8w, 8, CR_BLOCK8W)
CR_DEFINE_TRANSPOSE(transpose_8, uint64_t, cr_v4d, 4, CR_BLOCK4D)

/* All W columns of positions [0, count) of s, contiguous (W elements a position): GCC and
 * clang vectorize the loop for a constant W (2, 3, 4 and 6 at least). */
#define CR_DEFINE_SPLIT(NAME, T, W)                                                                \
    CR_SIMD_CLONES static void NAME(const T *restrict s, uint64_t count, T *restrict d,            \
                                    uint64_t pitch)                                                \
    {                                                                                              \
        for (uint64_t e = 0; e < count; e++)                                                       \
            for (int c = 0; c < (W); c++) d[c * pitch + e] = s[e * (W) + c];                       \
    }
/* split_SUFFIX: the split of w columns, 2 <= w <= 7; 0 for another w. */
#define CR_DEFINE_SPLITS(T, SUFFIX)                                                                \
    CR_DEFINE_SPLIT(split2_##SUFFIX, T, 2)                                                         \
    CR_DEFINE_SPLIT(split3_##SUFFIX, T, 3)                                                         \
    CR_DEFINE_SPLIT(split4_##SUFFIX, T, 4)                                                         \
    CR_DEFINE_SPLIT(split5_##SUFFIX, T, 5)                                                         \
    CR_DEFINE_SPLIT(split6_##SUFFIX, T, 6)                                                         \
    CR_DEFINE_SPLIT(split7_##SUFFIX, T, 7)                                                         \
    static int split_##SUFFIX(const T *s, uint64_t count, uint64_t w, T *d, uint64_t pitch)        \
    {                                                                                              \
        switch (w) {                                                                               \
        case 2: split2_##SUFFIX(s, count, d, pitch); return 1;                                     \
        case 3: split3_##SUFFIX(s, count, d, pitch); return 1;                                     \
        case 4: split4_##SUFFIX(s, count, d, pitch); return 1;                                     \
        case 5: split5_##SUFFIX(s, count, d, pitch); return 1;                                     \
        case 6: split6_##SUFFIX(s, count, d, pitch); return 1;                                     \
        case 7: split7_##SUFFIX(s, count, d, pitch); return 1;                                     \
        default: return 0;                                                                         \
        }                                                                                          \
    }
CR_DEFINE_SPLITS(uint16_t, 2)
CR_DEFINE_SPLITS(uint32_t, 4)
CR_DEFINE_SPLITS(uint64_t, 8)

/* Columns [0, w) of positions [0, count) at src, positions stride elements apart, as rows of
 * dst, pitch elements apart; es bytes an element. */
static void gather(const char *src, uint64_t stride, uint64_t count, uint64_t w, size_t es,
                   char *dst, uint64_t pitch)
{
    const void *s = src;
    void *d = dst;
    const int contiguous = stride == w; /* the tile is all of inner */
    switch (es) {
    case 2:
        if (!(contiguous && split_2(s, count, w, d, pitch)))
            transpose_2(s, stride, count, w, d, pitch);
        break;
    case 4:
        if (!(contiguous && split_4(s, count, w, d, pitch)))
            transpose_4(s, stride, count, w, d, pitch);
        break;
    case 8:
        if (!(contiguous && split_8(s, count, w, d, pitch)))
            transpose_8(s, stride, count, w, d, pitch);
        break;
    default: /* every dtype is 2, 4 or 8 bytes; any other size, an element at a time */
        for (uint64_t e = 0; e < count; e++)
            for (uint64_t c = 0; c < w; c++)
                memcpy(dst + (c * pitch + e) * es, src + (e * stride + c) * es, es);
    }
}

/* Below this many elements a call runs on the calling thread alone: starting threads would cost
 * more than the work. */
#define CR_SERIAL_ELEMENTS (1u << 16)

typedef struct {
    coopreduce_handle *h; /* the handle the results are computed with */
    const cr_plan *p;     /* the plan, flat */
    const cr_shape *shape;
    const char *x, *y;
    char *result;
    uint64_t k0, k1; /* results [k0, k1) */
    coopreduce_status status;
} job;

/* The tiles of a job's columns of `count` elements of es bytes, from `inputs` arrays, when at
 * most `cols` columns are gathered at once. */
typedef struct {
    uint64_t pitch; /* elements from one gathered row to the next */
    uint64_t wmax;  /* columns in a tile at most */
    uint64_t bytes; /* the buffer of one input: wmax rows of pitch elements */
} tiles;

static tiles tile_geometry(uint64_t count, size_t es, int inputs, uint64_t cols)
{
    tiles t;
    uint64_t lines = (count * es + CR_LINE - 1) / CR_LINE;
    if (lines % 2 == 0) lines++;
    t.pitch = lines * CR_LINE / es;
    const uint64_t per_col = count * es * (uint64_t)inputs;
    const uint64_t line_cols = es < CR_LINE ? CR_LINE / es : 1;
    uint64_t w = CR_TILE_BYTES / per_col;
    if (w > CR_TILE_MAX) w = CR_TILE_MAX;
    if (w > line_cols) w -= w % line_cols; /* whole lines of each position */
    if (w < line_cols) w = line_cols;
    if (w * per_col > CR_GATHER_BYTES) w = CR_GATHER_BYTES / per_col;
    if (w > cols) w = cols;
    if (w < 1) w = 1;
    t.wmax = w;
    t.bytes = w * t.pitch * es;
    return t;
}

/* Results [k0, k1) of the job, in order. */
static coopreduce_status reduce_range(job *j)
{
    const cr_plan *p = j->p;
    const size_t es = cr_dtype_size(p->dtype), rs = p->result_size;
    const cr_shape *sh = j->shape;
    char *buf = NULL;
    tiles g = {0, 0, 0};
    coopreduce_status s = COOPREDUCE_SUCCESS;
    for (uint64_t k = j->k0; k < j->k1 && !s;) {
        const cr_run r = cr_shape_run(sh, k);
        if (r.stride == 1 || r.count <= 1) {
            s = cr_cpu_run_plan(j->h, p, j->x + r.start * es,
                                p->inputs == 2 ? j->y + r.start * es : NULL, r.count,
                                j->result + k * rs);
            k++;
            continue;
        }
        /* A tile of adjacent columns of one outer index, in a buffer sized once for the widest
         * tile (every row of an axis call has the same length). */
        if (!buf) {
            const uint64_t cols = j->k1 - j->k0 < sh->inner ? j->k1 - j->k0 : sh->inner;
            g = tile_geometry(r.count, es, p->inputs, cols);
            const uint64_t want = g.bytes * (uint64_t)p->inputs; /* a multiple of CR_LINE */
            if (want > SIZE_MAX || !(buf = aligned_alloc(CR_LINE, (size_t)want)))
                return cr_fail(j->h, COOPREDUCE_ERROR_OUT_OF_MEMORY,
                               "cannot allocate %llu bytes to gather rows of %llu elements",
                               (unsigned long long)want, (unsigned long long)r.count);
        }
        uint64_t w = g.wmax;
        const uint64_t left_in_o = sh->inner - k % sh->inner;
        if (w > left_in_o) w = left_in_o;
        if (w > j->k1 - k) w = j->k1 - k;
        for (int in = 0; in < p->inputs; in++)
            gather((in ? j->y : j->x) + r.start * es, r.stride, r.count, w, es,
                   buf + (size_t)in * (size_t)g.bytes, g.pitch);
        for (uint64_t c = 0; c < w && !s; c++) {
            const char *cx = buf + c * g.pitch * es;
            const char *cy = p->inputs == 2 ? cx + g.bytes : NULL;
            s = cr_cpu_run_plan(j->h, p, cx, cy, r.count, j->result + (k + c) * rs);
        }
        k += w;
    }
    free(buf);
    return s;
}

static void *worker(void *arg)
{
    job *j = arg;
    j->status = reduce_range(j);
    return NULL;
}

coopreduce_status cr_cpu_shaped(coopreduce_handle *h, const cr_plan *shaped, const void *x,
                                const void *y, void *result)
{
    const cr_plan flat = cr_plan_flat(shaped);
    const cr_shape *sh = &shaped->shape;
    const uint64_t nout = sh->outputs;
    if (nout == 0) return COOPREDUCE_SUCCESS;
    uint64_t t = (uint64_t)cr_cpu_threads(h);
    if (t > nout) t = 1; /* fewer results than threads: each result with every thread */
    const uint64_t total = sh->kind == CR_SHAPE_SEGMENTS
                               ? (uint64_t)(sh->offsets[nout] - sh->offsets[0])
                               : sh->elements;
    if (total < CR_SERIAL_ELEMENTS) t = 1;
    job jobs[CR_MAX_THREADS];
    for (uint64_t i = 0; i < t; i++) {
        jobs[i] = (job){h, &flat, sh, x, y, result, 0, 0, COOPREDUCE_SUCCESS};
    }
    if (t == 1) {
        jobs[0].k1 = nout;
        return reduce_range(&jobs[0]);
    }
    /* Ranges of about equal element counts (segments differ in length; rows do not). */
    coopreduce_handle subs[CR_MAX_THREADS];
    uint64_t k = 0, done = 0;
    for (uint64_t i = 0; i < t; i++) {
        subs[i] = *h;
        subs[i].threads = 1;
        subs[i].cpu_partials = NULL;
        subs[i].cpu_partials_bytes = 0;
        jobs[i].h = &subs[i];
        jobs[i].k0 = k;
        /* Thread i ends where the elements reach (i + 1) / t of the total, after at least one
         * result, leaving one for each later thread. */
        const uint64_t goal = total / t * (i + 1) + total % t * (i + 1) / t;
        const uint64_t last = nout - (t - 1 - i);
        if (i == t - 1) {
            k = nout;
        } else {
            do {
                done += cr_shape_run(sh, k).count;
                k++;
            } while (k < last && done < goal);
        }
        jobs[i].k1 = k;
    }
    cr_cpu_run((int)t, worker, jobs, sizeof jobs[0]);
    coopreduce_status s = COOPREDUCE_SUCCESS;
    for (uint64_t i = 0; i < t; i++) {
        if (jobs[i].status && !s) {
            s = jobs[i].status;
            memcpy(h->err, subs[i].err, sizeof h->err);
        }
        free(subs[i].cpu_partials);
    }
    return s;
}
