/* test_axis_gpu.c — reductions along an axis and over segments on the GPU: every result equal to
 * the CPU's 1-D call of its own values (axis_check.h), for every operation, dtype and mode, along
 * each axis of random 1-D, 2-D and 3-D shapes, over random segments (offsets in device memory); the
 * same row's bits in batches of 1, 7 and 10,000 rows; small batches of rows of a few whole chunks,
 * on forced grids too; inputs one element off 16-byte alignment (NORM2's with a value of another
 * class in a row's first or last lane group), rows longer than a chunk at every offset from it, and
 * segments over inputs at every offset from it; errors, and offsets the GPU checks itself; rows
 * streamed from memory (an input larger than L2, whose rows' level 2 is a launch of its own);
 * segments longer than C^2; segments replayed from a CUDA graph; shaped calls captured after
 * coopreduce_reserve_axis and _segments, allocating nothing; columns that fill a wave; more than
 * 2^31 elements in all.
 *
 *   test_axis_gpu           all checks; exits 77 (ctest: skipped) without CUDA or a GPU
 *   test_axis_gpu --quick   smaller cases, no streamed, long-segment, past-L2 segments or
 *                           n > 2^31 case (for compute-sanitizer)
 *
 * Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run;
 * COOPREDUCE_TEST_SECTIONS=long_rows,paths runs only the sections named (for a sanitizer or a
 * planted bug on one path). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axis_check.h"
#include "check.h"
#include "coopreduce.h"
#include "gpu_util.h"
#include "util.h"

#ifndef COOPREDUCE_HAVE_CUDA
GPU_TEST_MAIN_WITHOUT_CUDA("test_axis_gpu")
#else

static coopreduce_handle *gpu;
static int g_sm_count;

static void *put(const void *host, size_t bytes)
{
    void *p = NULL;
    if (!cuda_ok(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc")) exit(1);
    if (host) cuda_ok(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice), "upload");
    return p;
}
static void get(void *host, const void *mem, size_t bytes)
{
    cuda_ok(cudaMemcpy(host, mem, bytes, cudaMemcpyDeviceToHost), "download");
}
static void drop(void *mem) { cudaFree(mem); }
static void sync_dev(void) { cuda_ok(cudaDeviceSynchronize(), "synchronize"); }

static axis_env env(void) { return (axis_env){gpu, g_cpu, "gpu", put, get, drop, sync_dev}; }

static void sweep(void)
{
    const axis_env e = env();
    axis_sweep(&e, test_quick ? 3000 : 20000);
}

static void segments(void)
{
    const axis_env e = env();
    segments_sweep(&e, test_quick ? 3000 : 50000);
}

static void paths(void)
{
    const axis_env e = env();
    kernel_paths_sweep(&e, test_quick ? 30000 : 300000);
}

static void batches(void)
{
    const axis_env e = env();
    batch_invariance(&e, 10000);
}

/* x and y one element past a 16-byte boundary (and 2 elements, for 16-bit types): the rows of
 * a call start wherever the layout puts them; every result against the CPU's 1-D call. */
static void misaligned(void)
{
    static const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT16,
                                           COOPREDUCE_FLOAT64, COOPREDUCE_INT32};
    static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_DOT, COOPREDUCE_OP_MAX,
                                        COOPREDUCE_OP_ARGMIN};
    for (size_t d = 0; d < 4; d++) {
        for (size_t o = 0; o < 4; o++) {
            const coopreduce_dtype dt = dts[d];
            const coopreduce_op op = ops[o];
            const size_t es = dt_size(dt), rs = coopreduce_op_result_size(op, dt, 0, NULL);
            if (!rs) continue;
            const uint64_t outer = 5, len = 1031, inner = 3, n = outer * len * inner;
            for (uint64_t off = 1; off <= 2; off++) {
                char *x = xmalloc(n * es), *y = xmalloc(n * es), *res = xmalloc(outer * inner * rs);
                axis_fill(x, n, dt, 1);
                axis_fill(y, n, dt, 0);
                char *dx = put(NULL, (n + off) * es), *dy = put(NULL, (n + off) * es);
                char *dr = put(NULL, outer * inner * rs);
                cuda_ok(cudaMemcpy(dx + off * es, x, n * es, cudaMemcpyHostToDevice), "upload");
                cuda_ok(cudaMemcpy(dy + off * es, y, n * es, cudaMemcpyHostToDevice), "upload");
                coopreduce_status s = coopreduce_reduce_axis(op, dx + off * es, dy + off * es, dr,
                                                             outer, len, inner, dt, gpu, NULL);
                sync_dev();
                get(res, dr, outer * inner * rs);
                char *xs = xmalloc(len * es), *ys = xmalloc(len * es), want[16];
                int bad = 0;
                for (uint64_t k = 0; k < outer * inner && s == COOPREDUCE_SUCCESS; k++) {
                    const uint64_t ob = k / inner, i = k % inner;
                    for (uint64_t e = 0; e < len; e++) {
                        memcpy(xs + e * es, x + ((ob * len + e) * inner + i) * es, es);
                        memcpy(ys + e * es, y + ((ob * len + e) * inner + i) * es, es);
                    }
                    coopreduce_reduce(op, xs, ys, want, len, dt, g_cpu, NULL);
                    bad += memcmp(want, res + k * rs, rs) != 0;
                }
                CHECK(s == COOPREDUCE_SUCCESS && bad == 0,
                      "%s %s, x %llu elements off 16 bytes: %s, %d results differ from the CPU",
                      coopreduce_op_name(op), dt_name(dt), (unsigned long long)off,
                      coopreduce_status_string(s), bad);
                drop(dx), drop(dy), drop(dr);
                free(x), free(y), free(res), free(xs), free(ys);
            }
        }
    }
}

/* One call of `outer` rows of `len` elements (inner 1) of host arrays x and y (y NULL: none)
 * placed offx and offy elements past a 16-byte boundary, in allocations that end where the
 * arrays do (so that compute-sanitizer sees a read past either end), on a grid of `grid` blocks
 * (0: the library's); every row against the CPU's 1-D call. `what` names the case. */
static void rows_case(coopreduce_op op, coopreduce_dtype dt, const char *x, const char *y,
                      uint64_t outer, uint64_t len, uint64_t offx, uint64_t offy, int grid,
                      const char *what)
{
    const size_t es = dt_size(dt), rs = coopreduce_op_result_size(op, dt, 0, NULL);
    const uint64_t n = outer * len;
    char *res = xmalloc(outer * rs);
    char *dx = put(NULL, (n + offx) * es), *dy = y ? put(NULL, (n + offy) * es) : NULL;
    char *dr = put(NULL, outer * rs);
    cuda_ok(cudaMemcpy(dx + offx * es, x, n * es, cudaMemcpyHostToDevice), "upload");
    if (y) cuda_ok(cudaMemcpy(dy + offy * es, y, n * es, cudaMemcpyHostToDevice), "upload");
    coopreduce_set_grid_blocks(gpu, grid);
    const coopreduce_status s = coopreduce_reduce_axis(
        op, dx + offx * es, y ? dy + offy * es : NULL, dr, outer, len, 1, dt, gpu, NULL);
    sync_dev();
    coopreduce_set_grid_blocks(gpu, 0);
    get(res, dr, outer * rs);
    char want[16];
    uint64_t bad = 0, first = 0;
    for (uint64_t r = 0; r < outer && s == COOPREDUCE_SUCCESS; r++) {
        coopreduce_reduce(op, x + r * len * es, y ? y + r * len * es : NULL, want, len, dt, g_cpu,
                          NULL);
        if (memcmp(want, res + r * rs, rs) != 0 && bad++ == 0) first = r;
    }
    CHECK(s == COOPREDUCE_SUCCESS && bad == 0,
          "%s %s, %llu rows of %llu, x +%llu y +%llu elements, %s, grid %d: %s, %llu rows "
          "differ from the CPU (first: row %llu)",
          coopreduce_op_name(op), dt_name(dt), (unsigned long long)outer, (unsigned long long)len,
          (unsigned long long)offx, (unsigned long long)offy, what, grid,
          coopreduce_status_string(s), (unsigned long long)bad, (unsigned long long)first);
    drop(dx), drop(dy), drop(dr);
    free(res);
}

/* rows_case over data of kind `kind`, every third row of x all -0.0 and of y non-negative. */
static void offset_rows_case(coopreduce_op op, coopreduce_dtype dt, uint64_t outer, uint64_t len,
                             uint64_t offx, uint64_t offy, int kind, int grid)
{
    const size_t es = dt_size(dt);
    const uint64_t n = outer * len;
    char *x = xmalloc(n * es), *y = xmalloc(n * es), what[32];
    axis_fill(x, n, dt, kind);
    axis_fill(y, n, dt, (int)rnd_below(AXIS_KINDS));
    /* Every third row of x all -0.0, of y all non-negative: a sum (and DOT) of -0.0 only, which
     * stays -0.0 only if every padding of the row's tree adds as -0.0 does. */
    for (uint64_t r = rnd_below(3); r < outer; r += 3)
        for (uint64_t e = r * len; e < (r + 1) * len; e++) {
            memset(x + e * es, 0, es);
            x[e * es + es - 1] = (char)0x80; /* the sign bit (little-endian) */
            y[e * es + es - 1] &= 0x7f;
        }
    snprintf(what, sizeof what, "kind %d", kind);
    rows_case(op, dt, x, y, outer, len, offx, offy, grid, what);
    free(x), free(y);
}

/* Rows longer than a chunk whose chunks do not all start on a 16-byte boundary (rows.cu's
 * stream_kernel through RowChunks): lengths of 1 to 4 chunks and any remainder, among them
 * ragged chunks of fewer than 16 bytes (the last full chunk's last block then reaches past the
 * array) and ragged chunks ending in a row's last lane group (whose shifted 16 bytes take the
 * next row's first block), x and y at every element offset from a boundary, x's rows all -0.0 in places,
 * batches of one row to past a wave of blocks, forced grids (which stream these rows whatever
 * their number; 1-3 blocks: a warp's long run of chunks across rows), NORM2 on runs of uniform
 * and wide chunks; in full runs, an input larger than L2 too (level 2 a launch of its own). */
static void long_rows(void)
{
    static const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64,
                                           COOPREDUCE_FLOAT16, COOPREDUCE_BFLOAT16};
    static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_MEAN, COOPREDUCE_OP_SUMSQ,
                                        COOPREDUCE_OP_DOT, COOPREDUCE_OP_NORM2};
    const uint64_t wave = 2 * (uint64_t)g_sm_count;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        const coopreduce_dtype dt = dts[d];
        const uint64_t es = dt_size(dt), C = dt == COOPREDUCE_FLOAT64 ? 2048 : 4096;
        const uint64_t per16 = 16 / es; /* element offsets from a boundary */
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            const coopreduce_op op = ops[o];
            for (int rep = 0; rep < (test_quick ? 4 : 8); rep++) {
                const uint64_t k = 1 + rnd_below(4);
                const uint64_t r = rnd_below(5), W = C / 32;
                const uint64_t rem = r == 0   ? 0                         /* whole chunks */
                                     : r == 1 ? 1 + rnd_below(16 / es)    /* under 16 bytes */
                                     : r == 2 ? (1 + rnd_below(31)) * W - rnd_below(per16)
                                              : 1 + rnd_below(C - 1);     /* any */
                const uint64_t len = k * C + rem;
                const uint64_t rows_of[] = {1, 2 + rnd_below(30),
                                            test_quick ? 40 + rnd_below(20)
                                                       : wave + 1 + rnd_below(wave)};
                const uint64_t outer = rows_of[rep % 3];
                const uint64_t offx = rnd_below(per16), offy = rnd_below(per16);
                /* a forced grid also takes the stream on shapes this small (rows.cu) */
                const int grid = rep % 2 ? 1 + (int)rnd_below(rep % 4 == 3 ? 3 : 600) : 0;
                const int kind =
                    op == COOPREDUCE_OP_NORM2 && rep % 2 ? 7 : (int)rnd_below(AXIS_KINDS);
                offset_rows_case(op, dt, outer, len, offx, offy, kind, grid);
            }
        }
        if (!test_quick && gpu_room_for((size_t)200 << 20)) { /* 96 MiB: past any L2 */
            const uint64_t len = 3 * C + 1 + rnd_below(C - 1);
            const uint64_t outer = ((uint64_t)96 << 20) / (len * es);
            offset_rows_case(COOPREDUCE_OP_SUM, dt, outer, len, rnd_below(per16), 0,
                             (int)rnd_below(AXIS_KINDS), 0);
            offset_rows_case(COOPREDUCE_OP_NORM2, dt, outer, len, rnd_below(per16), 0, 7, 0);
        }
    }
}

/* Segments over x and y at every element offset from a 16-byte boundary (y one element further
 * than x), of lengths long enough on average that the GPU streams their chunks by 16-byte loads
 * shifted into place (float32 and 16-bit input) or copies them into shared memory from the
 * 16-byte block holding each chunk's start, with short and empty ones among them, the last
 * ending at x's end: every result against the CPU's 1-D call. */
static void misaligned_segments(void)
{
    static const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64,
                                           COOPREDUCE_FLOAT16, COOPREDUCE_BFLOAT16};
    static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_SUMSQ, COOPREDUCE_OP_DOT,
                                        COOPREDUCE_OP_NORM2};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        const coopreduce_dtype dt = dts[d];
        const size_t es = dt_size(dt);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            const coopreduce_op op = ops[o];
            const size_t rs = coopreduce_op_result_size(op, dt, 0, NULL);
            for (uint64_t xo = 0; xo < 16 / es; xo++) {
                /* lengths: chunks of 4096 (2048 float64) elements, whole, ragged and several */
                enum { NSEG = 9 };
                const uint64_t lens[NSEG] = {4097 + rnd_below(3000), 1 + rnd_below(5), 0,
                                             2 * 4096 + rnd_below(4096), 4096, 4095,
                                             rnd_below(300), 13 * 4096 + 1 + rnd_below(99),
                                             3000 + rnd_below(2000)};
                int64_t off[NSEG + 1];
                off[0] = (int64_t)rnd_below(6);
                for (int k = 0; k < NSEG; k++) off[k + 1] = off[k] + (int64_t)lens[k];
                const uint64_t n = (uint64_t)off[NSEG], yo = (xo + 1) % (16 / es);
                char *x = xmalloc(n * es), *y = xmalloc(n * es), *res = xmalloc(NSEG * rs);
                axis_fill(x, n, dt, (int)rnd_below(AXIS_KINDS));
                axis_fill(y, n, dt, 0);
                char *dx = put(NULL, (n + xo) * es), *dy = put(NULL, (n + yo) * es);
                char *dr = put(NULL, NSEG * rs), *doff = put(off, sizeof off);
                cuda_ok(cudaMemcpy(dx + xo * es, x, n * es, cudaMemcpyHostToDevice), "upload");
                cuda_ok(cudaMemcpy(dy + yo * es, y, n * es, cudaMemcpyHostToDevice), "upload");
                coopreduce_status s = coopreduce_reduce_segments(
                    op, dx + xo * es, op == COOPREDUCE_OP_DOT ? dy + yo * es : NULL, dr, n,
                    (const int64_t *)doff, NSEG, dt, gpu, NULL);
                if (s == COOPREDUCE_SUCCESS) s = coopreduce_synchronize(gpu, NULL);
                sync_dev();
                get(res, dr, NSEG * rs);
                int bad = 0;
                for (int k = 0; k < NSEG && s == COOPREDUCE_SUCCESS; k++) {
                    char want[16];
                    coopreduce_reduce(op, x + off[k] * es,
                                      op == COOPREDUCE_OP_DOT ? y + off[k] * es : NULL, want,
                                      lens[k], dt, g_cpu, NULL);
                    bad += memcmp(want, res + k * rs, rs) != 0;
                }
                CHECK(s == COOPREDUCE_SUCCESS && bad == 0,
                      "%s %s segments, x %llu elements off 16 bytes: %s, %d of %d differ from "
                      "the CPU",
                      coopreduce_op_name(op), dt_name(dt), (unsigned long long)xo,
                      coopreduce_status_string(s), bad, NSEG);
                drop(dx), drop(dy), drop(dr), drop(doff);
                free(x), free(y), free(res);
            }
        }
    }
}

/* Many segments of 2 C elements or more on average (rows.cu's segments_stream_kernel: each
 * block's window of slots in a table, the warps streaming its chunks): lengths 0 to 8 C, empty
 * ones among them, whole chunks, a last segment ending at x's end, every operation and type;
 * on the library's grid and on forced grids of 1 to 6 blocks (a block then takes many windows,
 * and segments cross windows and blocks); then float32 SUM and DOT over 2^24 elements and more,
 * larger than an H100's or H200's L2 (level 2 a launch of its own: a thread a segment, a warp
 * one of more than 8 chunks). Every result against the
 * CPU's 1-D call. */
static void stream_segments(void)
{
    static const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64,
                                           COOPREDUCE_FLOAT16, COOPREDUCE_BFLOAT16};
    static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_MEAN, COOPREDUCE_OP_SUMSQ,
                                        COOPREDUCE_OP_DOT, COOPREDUCE_OP_NORM2};
    const axis_env e = env();
    const uint64_t nseg = test_quick ? 100 : 800;
    int64_t *off = xmalloc((nseg + 1) * sizeof *off);
    int kind = (int)rnd_below(AXIS_KINDS);
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        const int64_t C = dts[d] == COOPREDUCE_FLOAT64 ? 2048 : 4096;
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            for (int g = 0; g < 3; g++) {
                off[0] = (int64_t)rnd_below(9);
                for (uint64_t k = 0; k < nseg; k++) {
                    const uint64_t pick = rnd_below(10);
                    const int64_t len = pick == 0   ? 0
                                        : pick == 1 ? C * (int64_t)(1 + rnd_below(3))
                                        : pick == 2 ? (int64_t)rnd_below(40)
                                                    : (int64_t)rnd_below(8 * (uint64_t)C);
                    off[k + 1] = off[k] + len;
                }
                coopreduce_set_grid_blocks(gpu, g == 0 ? 0 : g == 1 ? 1 : 2 + (int)rnd_below(5));
                segments_case(&e, ops[o], dts[d], off, nseg, (uint64_t)off[nseg],
                              kind++ % AXIS_KINDS);
            }
        }
    }
    coopreduce_set_grid_blocks(gpu, 0);
    free(off);
    /* Bad offsets whose good segments share slots (segment 1 ends before it starts, so 0 and 2,
     * of 70 chunks each, take the same slots): more chunks a warp's 32 slots than the table has
     * room for. The call must still end, every result NaN and the first bad offset named. */
    {
        const uint64_t C = 4096, n = 80 * C;
        float *x = xmalloc(n * sizeof *x);
        memset(x, 0, n * sizeof *x);
        const int64_t bad[] = {0, 70 * 4096, 5, 70 * 4096 + 5, 80 * 4096};
        void *dx = put(x, n * sizeof *x), *dr = put(NULL, 4 * sizeof(float));
        void *doff = put(bad, sizeof bad);
        for (int g = 0; g < 2; g++) {
            coopreduce_set_grid_blocks(gpu, g);
            const coopreduce_status st = coopreduce_reduce_segments(
                COOPREDUCE_OP_SUM, dx, NULL, dr, n, doff, 4, COOPREDUCE_FLOAT32, gpu, NULL);
            const coopreduce_status synced = coopreduce_synchronize(gpu, NULL);
            uint32_t r[4];
            get(r, dr, sizeof r);
            int nan = 0;
            for (int k = 0; k < 4; k++) nan += r[k] == 0x7fc00000u;
            CHECK(st == COOPREDUCE_SUCCESS && synced == COOPREDUCE_ERROR_INVALID_ARGUMENT &&
                      strstr(coopreduce_last_error(gpu), "offsets[2]") != NULL && nan == 4,
                  "overlapping segments, grid %d: %s, then %s (%s), %d of 4 results NaN", g,
                  coopreduce_status_string(st), coopreduce_status_string(synced),
                  coopreduce_last_error(gpu), nan);
        }
        coopreduce_set_grid_blocks(gpu, 0);
        drop(dx), drop(dr), drop(doff);
        free(x);
    }
    if (test_quick) {
        printf("SKIP: section stream_segments past L2 (--quick)\n");
        return;
    }
    const uint64_t big = 1200, n = (1ull << 24) + rnd_below(1 << 20);
    int64_t *boff = xmalloc((big + 1) * sizeof *boff);
    boff[0] = (int64_t)rnd_below(5);
    for (uint64_t k = 0; k < big; k++) { /* some of 9 to 40 chunks: level 2 by a warp */
        const uint64_t len = k % 97 == 5 ? 9 * 4096 + rnd_below(31 * 4096) : rnd_below(2 * n / big);
        const int64_t end = boff[k] + (int64_t)len;
        boff[k + 1] = end < (int64_t)n ? end : (int64_t)n;
    }
    if (gpu_room_for(n * 4 * 2)) {
        segments_case(&e, COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, boff, big, n, kind++ % AXIS_KINDS);
        segments_case(&e, COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT32, boff, big, n, kind % AXIS_KINDS);
    }
    free(boff);
}

/* The canonical-order operations check device offsets on the device: a call with bad ones
 * returns at once, every result NaN; coopreduce_synchronize names the first bad offset of the
 * latest such call, once. Bad offsets leave the handle as it was: a later call on good offsets,
 * segments of several chunks among them (tickets, partials), gets the CPU's bits. */
static void device_checked_offsets(void)
{
    const uint64_t C = 4096, n = 3 * C + 5;
    float *x = malloc(n * sizeof *x);
    for (uint64_t i = 0; i < n; i++) x[i] = (float)((double)rnd_below(2001) - 1000.0) / 64.0f;
    void *dx = put(x, n * sizeof *x), *dr = put(NULL, 16 * sizeof(double));
    static const struct {
        int64_t off[5];
        uint64_t nseg, bad; /* the first bad offset */
        coopreduce_op op;
    } cases[] = {
        {{0, 9000, 5000, (int64_t)(3 * 4096 + 5)}, 3, 2, COOPREDUCE_OP_SUM},  /* decreasing */
        {{-1, 3, 7}, 2, 0, COOPREDUCE_OP_SUM},                                 /* negative */
        {{0, 3, (int64_t)(3 * 4096 + 6)}, 2, 2, COOPREDUCE_OP_MEAN},           /* beyond n */
        {{0, 4097, 4096, 3, (int64_t)(3 * 4096 + 5)}, 4, 2, COOPREDUCE_OP_NORM2},
        {{0, 10, (int64_t)1 << 62, 20, 30}, 4, 2, COOPREDUCE_OP_SUMSQ},
        /* segment 2 takes segment 0's third slot: 0's ticket sees two arrivals of three */
        {{0, 9000, 100, 9100, (int64_t)(3 * 4096 + 5)}, 4, 2, COOPREDUCE_OP_SUM},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        void *doff = put(cases[c].off, sizeof cases[c].off);
        const uint64_t nseg = cases[c].nseg;
        coopreduce_status s = coopreduce_reduce_segments(cases[c].op, dx, NULL, dr, n, doff, nseg,
                                                         COOPREDUCE_FLOAT32, gpu, NULL);
        const coopreduce_status synced = coopreduce_synchronize(gpu, NULL);
        char want[32];
        snprintf(want, sizeof want, "offsets[%llu]", (unsigned long long)cases[c].bad);
        CHECK(s == COOPREDUCE_SUCCESS && synced == COOPREDUCE_ERROR_INVALID_ARGUMENT &&
                  strstr(coopreduce_last_error(gpu), want) != NULL,
              "bad offsets, case %zu: %s, then %s: %s", c, coopreduce_status_string(s),
              coopreduce_status_string(synced), coopreduce_last_error(gpu));
        uint32_t r[8];
        get(r, dr, nseg * sizeof *r);
        int nan = 0;
        for (uint64_t k = 0; k < nseg; k++) nan += r[k] == 0x7fc00000u;
        CHECK(nan == (int)nseg, "bad offsets, case %zu: %d of %llu results NaN", c, nan,
              (unsigned long long)nseg);
        CHECK(coopreduce_synchronize(gpu, NULL) == COOPREDUCE_SUCCESS,
              "bad offsets, case %zu: reported twice", c);
        drop(doff);
    }
    /* Then good offsets on the same handle, over other values (so that partials a stale ticket
     * would let a warp read early are wrong), each result against the CPU. */
    static const int64_t good[] = {0, 9000, 9000, 9001, (int64_t)(3 * 4096 + 5)};
    void *doff = put(good, sizeof good);
    for (uint64_t i = 0; i < n; i++) x[i] = (float)(rnd_below(2001) + 3000) / 32.0f;
    drop(dx);
    dx = put(x, n * sizeof *x);
    for (int op = 0; op < 2; op++) {
        const coopreduce_op o = op ? COOPREDUCE_OP_NORM2 : COOPREDUCE_OP_SUM;
        CHECK(coopreduce_reduce_segments(o, dx, NULL, dr, n, doff, 4, COOPREDUCE_FLOAT32, gpu,
                                         NULL) == COOPREDUCE_SUCCESS &&
                  coopreduce_synchronize(gpu, NULL) == COOPREDUCE_SUCCESS,
              "good offsets after bad ones: %s", coopreduce_last_error(gpu));
        float r[4], w;
        get(r, dr, sizeof r);
        for (int k = 0; k < 4; k++) {
            coopreduce_reduce(o, x + good[k], NULL, &w, (uint64_t)(good[k + 1] - good[k]),
                              COOPREDUCE_FLOAT32, g_cpu, NULL);
            CHECK(memcmp(&w, &r[k], sizeof w) == 0, "%s of segment %d after bad offsets: %a, CPU %a",
                  coopreduce_op_name(o), k, (double)r[k], (double)w);
        }
    }
    drop(doff), drop(dx), drop(dr);
    free(x);
}

static void errors(void)
{
    float host[8] = {0};
    void *dx = put(host, sizeof host), *dr = put(NULL, 64);
    const int64_t off_host[] = {0, 2, 1};
    void *doff = put(off_host, sizeof off_host);
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, host, NULL, dr, 2, 2, 2, COOPREDUCE_FLOAT32,
                                 gpu, NULL) == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY,
          "host x on a GPU handle");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, dx, NULL, host, 2, 2, 2, COOPREDUCE_FLOAT32,
                                 gpu, NULL) == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY,
          "host result on a GPU handle");
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_SUM, dx, NULL, dr, 8, off_host, 2,
                                     COOPREDUCE_FLOAT32, gpu,
                                     NULL) == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY,
          "host offsets on a GPU handle");
    /* Outside the canonical order the offsets are read back and checked before the call
     * returns; in EXACT mode too. */
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_MIN, dx, NULL, dr, 8, doff, 2,
                                     COOPREDUCE_FLOAT32, gpu,
                                     NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT &&
              strstr(coopreduce_last_error(gpu), "segment 1"),
          "decreasing device offsets, MIN: %s", coopreduce_last_error(gpu));
    coopreduce_set_mode(gpu, COOPREDUCE_MODE_EXACT);
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_SUM, dx, NULL, dr, 8, doff, 2,
                                     COOPREDUCE_FLOAT32, gpu,
                                     NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "decreasing device offsets, exact SUM: %s", coopreduce_last_error(gpu));
    coopreduce_set_mode(gpu, COOPREDUCE_MODE_DETERMINISTIC);
    CHECK(coopreduce_synchronize(gpu, NULL) == COOPREDUCE_SUCCESS, "nothing to report yet: %s",
          coopreduce_last_error(gpu));
    drop(dx), drop(dr), drop(doff);
    device_checked_offsets();
    CHECK(coopreduce_set_method(gpu, COOPREDUCE_METHOD_GRID) == COOPREDUCE_SUCCESS, "method");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, dx, NULL, dr, 2, 2, 2, COOPREDUCE_FLOAT32, gpu,
                                 NULL) == COOPREDUCE_ERROR_NOT_SUPPORTED,
          "a tutorial method along an axis");
    coopreduce_set_method(gpu, COOPREDUCE_METHOD_CANONICAL);
}

/* Small batches of rows of 1 to 4 whole chunks, which a launch of one wave takes a block a row
 * (rows.cu's row_block_kernel: the chunks' rows split over the block's warps, level 2 in shared
 * memory), also on grids forced smaller than the batch, where a block takes several rows in
 * turn; a batch one row past a wave of blocks, which takes the streamed kernel: every result
 * against the CPU's 1-D call, on every data kind (NORM2's chunks of other classes included). */

static void row_blocks(void)
{
    static const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64,
                                           COOPREDUCE_FLOAT16, COOPREDUCE_BFLOAT16};
    static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_MEAN, COOPREDUCE_OP_SUMSQ,
                                        COOPREDUCE_OP_DOT, COOPREDUCE_OP_NORM2};
    const axis_env e = env();
    const uint64_t wave = 2 * (uint64_t)g_sm_count; /* the blocks of one wave (rows.cu) */
    int kind = (int)rnd_below(AXIS_KINDS);
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        const uint64_t C = dts[d] == COOPREDUCE_FLOAT64 ? 2048 : 4096;
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            for (uint64_t cpr = 1; cpr <= 4; cpr++) {
                const uint64_t rows[] = {
                    1, 2 + rnd_below(30),
                    test_quick ? 33 + rnd_below(20) : 100 + rnd_below(wave - 99), wave + 1};
                for (size_t b = 0; b < 4; b++) {
                    if (test_quick && b == 3) continue;
                    const int grid = b == 1 ? 1 + (int)rnd_below(3) : 0;
                    coopreduce_set_grid_blocks(gpu, grid);
                    axis_case(&e, ops[o], dts[d], rows[b], cpr * C, 1, kind++ % AXIS_KINDS);
                }
            }
        }
    }
    coopreduce_set_grid_blocks(gpu, 0);
}

/* NORM2 of rows of whole chunks past a wave of blocks (rows.cu's stream_kernel) on runs of
 * uniform and wide chunks (axis_fill's kind 7): the warps' segments turn from the medium pass to
 * the three-class stream and back; forced grids of 1-3 blocks give a warp long runs of chunks.
 * Then segments over such data. Every result against the CPU's 1-D call. */
static void norm2_runs(void)
{
    static const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64,
                                           COOPREDUCE_FLOAT16, COOPREDUCE_BFLOAT16};
    const axis_env e = env();
    const uint64_t wave = 2 * (uint64_t)g_sm_count;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        const uint64_t C = dts[d] == COOPREDUCE_FLOAT64 ? 2048 : 4096;
        for (int rep = 0; rep < (test_quick ? 2 : 4); rep++) {
            const uint64_t cpr = 1 + rnd_below(5), rows = wave + 1 + rnd_below(3 * wave);
            const int grid = rep % 2 ? 1 + (int)rnd_below(3) : 0;
            coopreduce_set_grid_blocks(gpu, grid);
            axis_case(&e, COOPREDUCE_OP_NORM2, dts[d], rows, cpr * C, 1, 7);
        }
        /* segments of 1 .. 3 chunks over the same kind of data: a warp's chunk after one of
         * another class takes the three classes at once (chunk_strided_norm2) */
        const uint64_t n = (test_quick ? 1u << 20 : 1u << 22) + rnd_below(C);
        int64_t *off = malloc(sizeof *off * (n + 1));
        if (!CHECK(off != NULL, "malloc offsets")) return;
        uint64_t nseg = 0;
        off[0] = 0;
        while ((uint64_t)off[nseg] < n) {
            const uint64_t len = 1 + rnd_below(3 * C), left = n - (uint64_t)off[nseg];
            off[nseg + 1] = off[nseg] + (int64_t)(len < left ? len : left);
            nseg++;
        }
        segments_case(&e, COOPREDUCE_OP_NORM2, dts[d], off, nseg, n, 7);
        free(off);
    }
    coopreduce_set_grid_blocks(gpu, 0);
}

/* NORM2 of rows one element past a 16-byte boundary where a row's one element outside the
 * medium class (big, small, infinite or NaN) lies in its first lane group or its last (which
 * element loads read: their 16-byte blocks reach past the row), or in a full group in its first
 * chunk: a chunk's medium pass must see it and hand the chunk to the three classes. Few rows (a
 * warp a chunk) and more than a wave of chunks (the stream, whose ragged chunks take the same
 * path); every row against the CPU's 1-D call. */
static void norm2_lanes(void)
{
    static const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64,
                                           COOPREDUCE_BFLOAT16, COOPREDUCE_FLOAT16};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        const coopreduce_dtype dt = dts[d];
        const size_t es = dt_size(dt);
        const uint64_t C = dt == COOPREDUCE_FLOAT64 ? 2048 : 4096;
        /* float16 has no value outside the medium class but infinities and NaN */
        const int f16 = dt == COOPREDUCE_FLOAT16;
        const double big = dt == COOPREDUCE_FLOAT64 ? 0x1p600 : f16 ? INFINITY : 0x1p90;
        const double small = dt == COOPREDUCE_FLOAT64 ? 0x1p-600 : f16 ? NAN : 0x1p-100;
        const double planted[4] = {big, small, INFINITY, NAN};
        const struct {
            uint64_t rows, len;
        } shapes[2] = {{12, 3 * C + 17}, {(uint64_t)g_sm_count * 8 + 40, C + 9}};
        for (int sh = 0; sh < 2; sh++) {
            const uint64_t outer = shapes[sh].rows, len = shapes[sh].len, n = outer * len, off = 1;
            char *x = xmalloc(n * es);
            for (uint64_t i = 0; i < n; i++) store_value(x, i, dt, 0.5 + 0.5 * unif());
            for (uint64_t r = 0; r < outer; r++) { /* the place cycles fastest, then the value */
                const int place = (int)(r % 4), kind = (int)(r / 4 % 5);
                if (kind == 4 || place == 3) continue; /* rows of medium values alone */
                const uint64_t at = place == 0 ? 0 : place == 1 ? len - 1 : 64 + rnd_below(C / 2);
                store_value(x, r * len + at, dt, planted[kind]);
            }
            rows_case(COOPREDUCE_OP_NORM2, dt, x, NULL, outer, len, off, 0, 0,
                      "a value of another class planted");
            free(x);
        }
    }
}

/* More than 2^31 elements in all: 2^16 rows of 2^15 + 3 float16 values (4 GiB); a sample of
 * rows against the CPU. */
/* Rows of whole chunks in an input of 96 MiB, more than any GPU's L2: level 1 streams them and
 * level 2 is a second launch (narrow rows of partials, for up to W partials a row, or a warp per
 * row), which the sweeps' smaller inputs never reach. Every row against the CPU's 1-D call. */
static void streamed(void)
{
    static const struct {
        coopreduce_op op;
        coopreduce_dtype dt;
        uint64_t len;
    } cases[] = {
        {COOPREDUCE_OP_NORM2, COOPREDUCE_BFLOAT16, 8192},      /* 2 partials a row, 3 classes */
        {COOPREDUCE_OP_NORM2, COOPREDUCE_FLOAT32, 4096 * 5},   /* 5 */
        {COOPREDUCE_OP_NORM2, COOPREDUCE_FLOAT64, 2048 * 64},  /* 64: every lane of a row */
        {COOPREDUCE_OP_NORM2, COOPREDUCE_FLOAT16, 4096 * 200}, /* 200 > W: a warp per row */
        {COOPREDUCE_OP_NORM2, COOPREDUCE_BFLOAT16, 4096 * 3},  /* runs of uniform and wide */
        {COOPREDUCE_OP_NORM2, COOPREDUCE_FLOAT32, 4096 * 2},   /* chunks (kind 7, below) */
        {COOPREDUCE_OP_SUMSQ, COOPREDUCE_BFLOAT16, 8192},      /* one class */
        {COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, 4096 * 3},
        {COOPREDUCE_OP_MEAN, COOPREDUCE_FLOAT64, 2048 * 300},
    };
    const uint64_t bytes = (uint64_t)96 << 20;
    if (test_quick || !gpu_room_for(bytes)) {
        if (test_quick) printf("SKIP: section streamed (--quick)\n");
        return;
    }
    const axis_env e = env();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const uint64_t len = cases[c].len, rows = bytes / (len * dt_size(cases[c].dt));
        axis_case(&e, cases[c].op, cases[c].dt, rows, len, 1,
                  c == 4 || c == 5 ? 7 : (int)rnd_below(AXIS_KINDS));
    }
}

/* Columns many enough to fill a wave of the GPU or to take a warp a job (512 jobs of 32
 * columns and a chunk or more, where the sweep's problems make a few), which the plain float32
 * and float64 sums walk with fewer warps a job; the other leaves on such shapes; every result
 * against the CPU's 1-D call.
 * The cases with a level above (columns of two chunks: 268 MB) run in full runs only. */
static void wide_columns(void)
{
    static const struct {
        coopreduce_op op;
        coopreduce_dtype dt;
        uint64_t len, inner;
        int full, kind; /* kind -1: any */
    } cases[] = {
        {COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, 200, 32768, 0, -1}, /* one chunk a column */
        {COOPREDUCE_OP_SUMSQ, COOPREDUCE_FLOAT32, 300, 32768, 0, -1},
        {COOPREDUCE_OP_SUM, COOPREDUCE_BFLOAT16, 130, 32768, 0, -1},
        /* columns of one chunk row, or of up to four (4- and 8-byte input), in enough jobs to
         * take a warp a job */
        {COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, 100, 16384, 0, -1},
        {COOPREDUCE_OP_DOT, COOPREDUCE_BFLOAT16, 128, 32768, 0, -1},
        {COOPREDUCE_OP_NORM2, COOPREDUCE_FLOAT32, 77, 16384, 0, 5},
        {COOPREDUCE_OP_SUMSQ, COOPREDUCE_FLOAT64, 64, 65536, 0, -1},
        {COOPREDUCE_OP_NORM2, COOPREDUCE_FLOAT64, 200, 32768, 0, 5},
        {COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, 129, 32768, 0, -1},
        /* NORM2 with sparse outliers: a column's lanes of one warp take the medium pass alone,
         * those of another warp of the same job the three classes too */
        {COOPREDUCE_OP_NORM2, COOPREDUCE_FLOAT32, 3000, 2048, 0, 5},
        {COOPREDUCE_OP_NORM2, COOPREDUCE_BFLOAT16, 4096, 1024, 0, 5},
        {COOPREDUCE_OP_NORM2, COOPREDUCE_FLOAT64, 1500, 2048, 0, 5},
        {COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, 4100, 16384, 1, -1},  /* two chunks */
        {COOPREDUCE_OP_MEAN, COOPREDUCE_FLOAT64, 2050, 16384, 1, -1}, /* two chunks */
    };
    const axis_env e = env();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const uint64_t bytes = cases[c].len * cases[c].inner * dt_size(cases[c].dt);
        if (cases[c].full && (test_quick || !gpu_room_for(2 * bytes))) continue;
        axis_case(&e, cases[c].op, cases[c].dt, 1, cases[c].len, cases[c].inner,
                  cases[c].kind < 0 ? (int)rnd_below(AXIS_KINDS) : cases[c].kind);
    }
    if (test_quick) printf("SKIP: wide_columns' columns of two chunks (--quick)\n");
}

/* Segments longer than C^2 (more than C partials), whose levels above level 2 the device
 * computes in place: lengths C^2 (the last with one level above level 1), C^2 + 1, and beyond,
 * among short ones, for both of level 2's ways (in the launch: SUM, SUMSQ; a launch of its own:
 * NORM2), every result against the CPU's 1-D call. */
static void long_segments(void)
{
    static const struct {
        coopreduce_op op;
        coopreduce_dtype dt;
    } cases[] = {
        {COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64},   {COOPREDUCE_OP_NORM2, COOPREDUCE_FLOAT64},
        {COOPREDUCE_OP_SUMSQ, COOPREDUCE_BFLOAT16}, {COOPREDUCE_OP_MEAN, COOPREDUCE_FLOAT32},
    };
    if (test_quick) {
        printf("SKIP: section long_segments (--quick)\n");
        return;
    }
    const axis_env e = env();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int64_t C = cases[c].dt == COOPREDUCE_FLOAT64 ? 2048 : 4096, C2 = C * C;
        const int64_t off[] = {3, 3 + C2, 10 + C2, 11 + 2 * C2, 12 + 2 * C2, 12 + 3 * C2 + 5 * C + 7};
        const uint64_t n = (uint64_t)off[5] + 2;
        if (!gpu_room_for(n * dt_size(cases[c].dt) * 2)) return;
        segments_case(&e, cases[c].op, cases[c].dt, off, 5, n, (int)rnd_below(AXIS_KINDS));
    }
}

/* Segments captured in a CUDA graph and replayed over new values: the slot counter, the count of
 * warps done and the tickets are put back to zero on the device (rows.cu), not by the host, so
 * each replay starts where the last one left them; an ordinary call between replays must not
 * disturb that, nor a call with bad offsets, whose fault a replay (of an earlier call's number)
 * must not take for its own. float32 SUM and NORM2 (level 2 in a launch of its own; data of
 * every class, so that chunks take both of NORM2's passes), segments of 0 to 3 chunks and one of
 * 9, each result against the CPU. */
/* A float32 segments call on the test's handle, as gpu_capture's fn. */
typedef struct {
    coopreduce_op op;
    const void *x;
    void *result;
    uint64_t n;
    const int64_t *offsets;
    uint64_t nseg;
} seg_call;

static int enqueue_segments(void *arg, cudaStream_t st)
{
    const seg_call *c = arg;
    return CHECK(coopreduce_reduce_segments(c->op, c->x, NULL, c->result, c->n, c->offsets,
                                            c->nseg, COOPREDUCE_FLOAT32, gpu, st) ==
                     COOPREDUCE_SUCCESS,
                 "segments %s: %s", coopreduce_op_name(c->op), coopreduce_last_error(gpu));
}

static void graph_segments(void)
{
    enum { NSEG = 40 };
    const uint64_t C = 4096;
    cudaStream_t st = NULL;
    if (!cuda_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream")) return;
    int64_t off[NSEG + 1];
    off[0] = (int64_t)rnd_below(100);
    for (int k = 0; k < NSEG; k++) {
        const uint64_t len = k == 7 ? 0 : k == 11 ? C : k == 12 ? C + 1 : k == 20 ? 9 * C - 3
                                                                       : rnd_below(3 * C + 1);
        off[k + 1] = off[k] + (int64_t)len;
    }
    const uint64_t n = (uint64_t)off[NSEG] + rnd_below(50);
    float *x = xmalloc(n * sizeof *x);
    void *dx = put(NULL, n * sizeof *x), *dr = put(NULL, NSEG * sizeof(float));
    void *doff = put(off, sizeof off);
    const int64_t bad_off[3] = {0, 5, 2}; /* decreasing */
    void *dbad = put(bad_off, sizeof bad_off);
    for (int op = 0; op < 2; op++) {
        seg_call call = {op ? COOPREDUCE_OP_NORM2 : COOPREDUCE_OP_SUM, dx, dr, n, doff, NSEG};
        const coopreduce_op o = call.op;
        cudaGraphExec_t exec = NULL;
        /* uncaptured first: the workspace grows and the pointers are checked outside the graph */
        if (!CHECK(enqueue_segments(&call, st) &&
                       coopreduce_synchronize(gpu, st) == COOPREDUCE_SUCCESS,
                   "segments before capture: %s", coopreduce_last_error(gpu)) ||
            !gpu_capture(st, cudaStreamCaptureModeRelaxed, enqueue_segments, &call, &exec))
            continue;
        for (int r = 0; r < 6; r++) {
            /* replays 1 and 4: a few elements far outside NORM2's medium class */
            const double scale = (double)(1u << (2 * r));
            for (uint64_t i = 0; i < n; i++)
                x[i] = (float)(((double)rnd_below(20001) - 10000.0) / 256.0 * scale);
            if (r == 1 || r == 4)
                for (int k = 0; k < 8; k++)
                    x[rnd_below(n)] = k % 2 ? 0x1p-140f : (float)(0x1p100 * (double)(k + 1));
            float res[NSEG];
            if (!cuda_ok(cudaMemcpy(dx, x, n * sizeof *x, cudaMemcpyHostToDevice), "upload") ||
                !cuda_ok(cudaMemset(dr, 0xff, sizeof res), "poison") ||
                !cuda_ok(cudaDeviceSynchronize(), "sync before replay") ||
                !cuda_ok(cudaGraphLaunch(exec, st), "graph launch") ||
                !cuda_ok(cudaStreamSynchronize(st), "sync"))
                break;
            get(res, dr, sizeof res);
            int bad = 0, first = -1;
            float got = 0, want = 0;
            for (int k = 0; k < NSEG; k++) {
                float w;
                coopreduce_reduce(o, x + off[k], NULL, &w, (uint64_t)(off[k + 1] - off[k]),
                                  COOPREDUCE_FLOAT32, g_cpu, NULL);
                if (memcmp(&w, &res[k], sizeof w) && bad++ == 0) first = k, got = res[k], want = w;
            }
            CHECK(bad == 0, "graph replay %d, %s: %d of %d segments differ, first %d: %a, CPU %a",
                  r, coopreduce_op_name(o), bad, NSEG, first, (double)got, (double)want);
            if (r == 2)
                CHECK(coopreduce_reduce_segments(o, dx, NULL, dr, n, doff, NSEG / 2,
                                                 COOPREDUCE_FLOAT32, gpu, st) ==
                              COOPREDUCE_SUCCESS &&
                          coopreduce_synchronize(gpu, st) == COOPREDUCE_SUCCESS,
                      "segments between replays: %s", coopreduce_last_error(gpu));
            if (r == 3)
                CHECK(coopreduce_reduce_segments(o, dx, NULL, dr, n, dbad, 2, COOPREDUCE_FLOAT32,
                                                 gpu, st) == COOPREDUCE_SUCCESS &&
                          coopreduce_synchronize(gpu, st) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
                      "bad offsets between replays not reported: %s", coopreduce_last_error(gpu));
        }
        cudaGraphExecDestroy(exec);
    }
    cudaStreamDestroy(st);
    drop(doff), drop(dbad), drop(dx), drop(dr);
    free(x);
}

/* Shaped calls captured in a CUDA graph on a fresh handle whose buffers
 * coopreduce_reserve_segments and _axis sized up front: captured in thread-local mode, where an
 * allocation or a wait fails the call, so the capture succeeds only if the calls allocate
 * nothing. Rows and columns smaller than the reserved shape in some extents; the columns of MAX
 * gathered into tiles (the generic path). Every result against the CPU's 1-D call of its values;
 * the same capture on a handle without the reserve (full runs) shows that the test can fail. */
enum { RG_NSEG = 30, RG_ROWS = 5, RG_COLS_OUTER = 2, RG_INNER = 33 };
#define RG_C 4096u
#define RG_LEN (2 * RG_C + 7)
#define RG_COL_LEN (RG_C + 3)

typedef struct {
    coopreduce_handle *h;
    const float *x, *y;
    const int64_t *off;
    float *res; /* device: 3 * RG_NSEG, RG_ROWS, 2 * RG_COLS_OUTER * RG_INNER results */
    uint64_t n;
} rg_calls;

static int rg_enqueue(void *arg, cudaStream_t st)
{
    const rg_calls *c = arg;
    static const coopreduce_op seg_ops[3] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_NORM2,
                                             COOPREDUCE_OP_DOT};
    const coopreduce_dtype f = COOPREDUCE_FLOAT32;
    float *r = c->res;
    for (int k = 0; k < 3; k++) {
        if (coopreduce_reduce_segments(seg_ops[k], c->x, c->y, r, c->n, c->off, RG_NSEG, f, c->h,
                                       st))
            return 0;
        r += RG_NSEG;
    }
    if (coopreduce_reduce_axis(COOPREDUCE_OP_SUM, c->x, NULL, r, RG_ROWS, RG_LEN, 1, f, c->h, st))
        return 0;
    r += RG_ROWS;
    for (int k = 0; k < 2; k++) {
        if (coopreduce_reduce_axis(k ? COOPREDUCE_OP_MAX : COOPREDUCE_OP_NORM2, c->x, NULL, r,
                                   RG_COLS_OUTER, RG_COL_LEN, RG_INNER, f, c->h, st))
            return 0;
        r += RG_COLS_OUTER * RG_INNER;
    }
    return 1;
}

/* The CPU's result of op over `count` values of x at `first`, `stride` apart (and of y). */
static float rg_ref(coopreduce_op op, const float *x, const float *y, uint64_t first,
                    uint64_t count, uint64_t stride, float *tx, float *ty)
{
    for (uint64_t k = 0; k < count; k++) {
        tx[k] = x[first + k * stride];
        ty[k] = y[first + k * stride];
    }
    float w = 0;
    coopreduce_reduce(op, tx, ty, &w, count, COOPREDUCE_FLOAT32, g_cpu, NULL);
    return w;
}

static void reserved_graph(void)
{
    enum { NRES = 3 * RG_NSEG + RG_ROWS + 2 * RG_COLS_OUTER * RG_INNER };
    int64_t off[RG_NSEG + 1];
    off[0] = (int64_t)rnd_below(64);
    for (int k = 0; k < RG_NSEG; k++)
        off[k + 1] = off[k] + (int64_t)(k == 3 ? 0 : rnd_below(3 * RG_C + 1));
    const uint64_t cols = (uint64_t)RG_COLS_OUTER * RG_COL_LEN * RG_INNER;
    uint64_t n = (uint64_t)off[RG_NSEG] > cols ? (uint64_t)off[RG_NSEG] : cols;
    n += rnd_below(100);
    float *x = xmalloc(n * sizeof *x), *y = xmalloc(n * sizeof *y);
    float *tx = xmalloc(n * sizeof *x), *ty = xmalloc(n * sizeof *y);
    for (uint64_t i = 0; i < n; i++) {
        x[i] = (float)(((double)rnd_below(20001) - 10000.0) / 64.0);
        y[i] = (float)(((double)rnd_below(2001) - 1000.0) / 32.0);
    }
    x[rnd_below(n)] = 0x1p90f; /* NORM2's big class in some segment or column */
    void *dx = put(x, n * sizeof *x), *dy = put(y, n * sizeof *y), *doff = put(off, sizeof off);
    void *dr = put(NULL, NRES * sizeof(float));
    cudaStream_t st = NULL;
    coopreduce_handle *h = NULL, *bare = NULL;
    cudaGraphExec_t exec = NULL;
    if (!cuda_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream") ||
        !CHECK(coopreduce_create_gpu(&h, 0) == COOPREDUCE_SUCCESS &&
                   coopreduce_create_gpu(&bare, 0) == COOPREDUCE_SUCCESS,
               "create_gpu: %s", coopreduce_last_error(NULL)))
        goto out;
    if (!CHECK(coopreduce_reserve_segments(h, n, RG_NSEG, COOPREDUCE_FLOAT32) ==
                       COOPREDUCE_SUCCESS &&
                   coopreduce_reserve_axis(h, RG_ROWS, RG_LEN, RG_INNER, COOPREDUCE_FLOAT32) ==
                       COOPREDUCE_SUCCESS,
               "reserve: %s", coopreduce_last_error(h)))
        goto out;
    rg_calls calls = {h, dx, dy, doff, dr, n};
    if (!CHECK(gpu_capture(st, cudaStreamCaptureModeThreadLocal, rg_enqueue, &calls, &exec),
               "capture after the reserve: %s", coopreduce_last_error(h)))
        goto out;
    float res[NRES];
    if (!cuda_ok(cudaMemset(dr, 0xff, sizeof res), "poison") ||
        !cuda_ok(cudaDeviceSynchronize(), "sync before the graph") ||
        !cuda_ok(cudaGraphLaunch(exec, st), "graph launch") ||
        !cuda_ok(cudaStreamSynchronize(st), "sync"))
        goto out;
    get(res, dr, sizeof res);
    CHECK(coopreduce_synchronize(h, st) == COOPREDUCE_SUCCESS, "synchronize: %s",
          coopreduce_last_error(h));
    static const coopreduce_op seg_ops[3] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_NORM2,
                                             COOPREDUCE_OP_DOT};
    int bad = 0, at = 0;
    for (int k = 0; k < 3; k++)
        for (int g = 0; g < RG_NSEG; g++, at++) {
            const float w = rg_ref(seg_ops[k], x, y, (uint64_t)off[g],
                                   (uint64_t)(off[g + 1] - off[g]), 1, tx, ty);
            if (memcmp(&w, &res[at], sizeof w) && bad++ < 3)
                printf("  %s segment %d: gpu %a, cpu %a\n", coopreduce_op_name(seg_ops[k]), g,
                       (double)res[at], (double)w);
        }
    for (int r = 0; r < RG_ROWS; r++, at++) {
        const float w = rg_ref(COOPREDUCE_OP_SUM, x, y, (uint64_t)r * RG_LEN, RG_LEN, 1, tx, ty);
        if (memcmp(&w, &res[at], sizeof w) && bad++ < 3)
            printf("  sum row %d: gpu %a, cpu %a\n", r, (double)res[at], (double)w);
    }
    for (int k = 0; k < 2; k++)
        for (int o = 0; o < RG_COLS_OUTER; o++)
            for (int i = 0; i < RG_INNER; i++, at++) {
                const coopreduce_op op = k ? COOPREDUCE_OP_MAX : COOPREDUCE_OP_NORM2;
                const float w = rg_ref(op, x, y, (uint64_t)o * RG_COL_LEN * RG_INNER + i,
                                       RG_COL_LEN, RG_INNER, tx, ty);
                if (memcmp(&w, &res[at], sizeof w) && bad++ < 3)
                    printf("  %s column (%d, %d): gpu %a, cpu %a\n", coopreduce_op_name(op), o, i,
                           (double)res[at], (double)w);
            }
    CHECK(bad == 0, "reserved and captured: %d of %d results differ from the CPU", bad, NRES);
    /* The same capture without the reserve: it fails, or the check above could not have. Not
     * in --quick runs, which compute-sanitizer runs: it reports the failing calls (the
     * allocation refused inside the capture) as API errors. */
    calls.h = bare;
    cudaGraph_t unreserved = NULL;
    int captured = 0;
    if (!test_quick &&
        cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
        const int ok = rg_enqueue(&calls, st);
        captured = cudaStreamEndCapture(st, &unreserved) == cudaSuccess && ok;
        if (unreserved) cudaGraphDestroy(unreserved);
    }
    (void)cudaGetLastError();
    if (captured)
        printf("NOTE: reserved_graph: the capture succeeded without the reserve too\n");
    else if (!test_quick)
        printf("reserved_graph: without the reserve the capture fails, as it should: %s\n",
               coopreduce_last_error(bare));
    CHECK(coopreduce_set_method(bare, COOPREDUCE_METHOD_TWOPASS) == COOPREDUCE_SUCCESS &&
              coopreduce_reserve_axis(bare, 2, 3, 4, COOPREDUCE_FLOAT32) ==
                  COOPREDUCE_ERROR_NOT_SUPPORTED,
          "reserve_axis under a tutorial method: %s", coopreduce_last_error(bare));
out:
    if (exec) cudaGraphExecDestroy(exec);
    if (st) cudaStreamDestroy(st);
    if (h) coopreduce_destroy(h);
    if (bare) coopreduce_destroy(bare);
    drop(dx), drop(dy), drop(doff), drop(dr);
    free(x), free(y), free(tx), free(ty);
}

static void huge(void)
{
    const uint64_t rows = 1ull << 16, len = (1ull << 15) + 3, n = rows * len;
    const coopreduce_dtype dt = COOPREDUCE_FLOAT16;
    if (!gpu_room_for(n * 2 + rows * 4)) return;
    uint16_t *x = xmalloc(n * 2);
    axis_fill(x, n, dt, 0);
    void *dx = put(x, n * 2), *dr = put(NULL, rows * 4);
    float *res = xmalloc(rows * 4);
    coopreduce_status s =
        coopreduce_reduce_axis(COOPREDUCE_OP_SUM, dx, NULL, dr, rows, len, 1, dt, gpu, NULL);
    sync_dev();
    get(res, dr, rows * 4);
    int bad = 0;
    for (int t = 0; t < 64; t++) {
        const uint64_t r = t == 0 ? rows - 1 : rnd_below(rows);
        float want;
        coopreduce_reduce(COOPREDUCE_OP_SUM, x + r * len, NULL, &want, len, dt, g_cpu, NULL);
        bad += memcmp(&want, &res[r], 4) != 0;
    }
    CHECK(s == COOPREDUCE_SUCCESS && bad == 0, "2^16 rows of 2^15 + 3 float16: %s, %d differ",
          coopreduce_status_string(s), bad);
    drop(dx), drop(dr);
    free(x), free(res);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            test_quick = 1;
        else {
            printf("usage: test_axis_gpu [--quick]\n");
            return 2;
        }
    }
    coopreduce_gpu_props props;
    if (gpu_test_open("test_axis_gpu", &gpu, &props)) return 77;
    g_sm_count = props.sm_count;
    if (!CHECK(coopreduce_create_cpu(&g_cpu, 0) == COOPREDUCE_SUCCESS, "create_cpu"))
        return check_summary("test_axis_gpu");
    if (test_quick) printf("test_axis_gpu: --quick\n");
    test_seed_init("test_axis_gpu");
    static const test_section sections[] = {{"sweep", sweep},     {"segments", segments},
                                            {"paths", paths},     {"batches", batches},
                                            {"row_blocks", row_blocks},
                                            {"norm2_runs", norm2_runs},
                                            {"norm2_lanes", norm2_lanes},
                                            {"misaligned", misaligned},
                                            {"long_rows", long_rows},
                                            {"misaligned_segments", misaligned_segments},
                                            {"stream_segments", stream_segments},
                                            {"errors", errors},   {"streamed", streamed},
                                            {"wide_columns", wide_columns},
                                            {"long_segments", long_segments},
                                            {"graph_segments", graph_segments},
                                            {"reserved_graph", reserved_graph}, {"huge", huge}};
    run_sections(sections, sizeof sections / sizeof sections[0], test_quick ? huge : NULL);
    CHECK(coopreduce_destroy(g_cpu) == COOPREDUCE_SUCCESS, "destroy cpu");
    CHECK(coopreduce_destroy(gpu) == COOPREDUCE_SUCCESS, "destroy gpu");
    return check_summary("test_axis_gpu");
}
#endif
