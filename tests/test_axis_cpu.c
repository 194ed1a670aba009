/* test_axis_cpu.c — reductions along an axis and over segments on the CPU: every result equal
 * to the 1-D call of its own values (axis_check.h), for every operation, dtype and mode, along
 * each axis of random 1-D, 2-D and 3-D shapes, over random segments; columns (inner > 1) of
 * every width and length around the gather's blocks and tiles; the same row's bits in batches
 * of 1, 7 and 2,000 rows; the same bits with 1, 2, 3 and 8 threads; the errors.
 *
 * No GPU needed. Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <stdlib.h>
#include <string.h>

#include "axis_check.h"
#include "check.h"
#include "util.h"

static void *put(const void *host, size_t bytes)
{
    void *p = xmalloc(bytes ? bytes : 1);
    if (host) memcpy(p, host, bytes);
    return p;
}
static void get(void *host, const void *mem, size_t bytes) { memcpy(host, mem, bytes); }
static void drop(void *mem) { free(mem); }
static void sync_none(void) {}

static axis_env env_with(coopreduce_handle *h, const char *name)
{
    return (axis_env){h, g_cpu, name, put, get, drop, sync_none};
}

static void sweep(void)
{
    const axis_env env = env_with(g_cpu, "cpu");
    const int rounds = test_quick ? 1 : 3;
    for (int r = 0; r < rounds; r++) axis_sweep(&env, test_quick ? 20000 : 100000);
}

static void segments(void)
{
    const axis_env env = env_with(g_cpu, "cpu");
    const int rounds = test_quick ? 1 : 3;
    for (int r = 0; r < rounds; r++) segments_sweep(&env, test_quick ? 20000 : 100000);
}

/* Columns, which the CPU gathers by a blocked transpose (src/cpu/axis.c): inner around the
 * blocks (8 x 8 elements of 2 and 4 bytes, 4 x 4 of 8 bytes), all of a narrow inner split (2
 * to 7 columns), partial tiles (16 to 128 columns), positions far enough apart to be prefetched
 * (1 KiB); len around the blocks; one and two inputs; outer 1 and 3 (tiles end at each outer
 * index). Then long columns, whose tiles the gather's memory cap narrows (13 and 6 columns). */
static void columns(void)
{
    const axis_env env = env_with(g_cpu, "cpu");
    static const uint64_t inners[] = {1,  2,  3,  4,  5,  6,   7,   8,   9,   15,
                                      16, 17, 33, 63, 65, 127, 129, 200, 257, 520};
    static const uint64_t lens[] = {1, 3, 4, 7, 8, 9, 17, 40};
    static const uint64_t outers[] = {1, 3};
    static const coopreduce_dtype dts[] = {COOPREDUCE_BFLOAT16, COOPREDUCE_FLOAT32,
                                           COOPREDUCE_FLOAT64};
    static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_DOT, COOPREDUCE_OP_ARGMAX};
    int kind = 0;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            for (size_t i = 0; i < sizeof inners / sizeof inners[0]; i++)
                for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
                    for (size_t u = 0; u < sizeof outers / sizeof outers[0]; u++, kind ^= 1)
                        axis_case(&env, ops[o], dts[d], outers[u], lens[l], inners[i], kind);
    axis_case(&env, COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, 1, 600000, 17, 0);
    axis_case(&env, COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, 1, 300000, 9, 1);
}

static void batches(void)
{
    const axis_env env = env_with(g_cpu, "cpu");
    batch_invariance(&env, 2000); /* the GPU test takes 10,000 */
}

/* The handle under test with 1, 2, 3 and 8 threads against the reference handle's bits. */
static void threads(void)
{
    static const int counts[] = {1, 2, 3, 8};
    for (size_t t = 0; t < sizeof counts / sizeof counts[0]; t++) {
        coopreduce_handle *h = NULL;
        if (!CHECK(coopreduce_create_cpu(&h, counts[t]) == COOPREDUCE_SUCCESS, "handle")) return;
        const axis_env env = env_with(h, "cpu");
        static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_NORM2,
                                            COOPREDUCE_OP_ARGMIN, COOPREDUCE_OP_DOT};
        for (size_t o = 0; o < 4; o++) {
            /* Many short rows (spread over threads), few long ones (each on every thread),
             * strided rows (gathered in tiles), segments of very different lengths. */
            axis_case(&env, ops[o], COOPREDUCE_FLOAT32, 1000, 37, 1, 1);
            axis_case(&env, ops[o], COOPREDUCE_FLOAT64, 2, 20000, 1, 3);
            axis_case(&env, ops[o], COOPREDUCE_BFLOAT16, 3, 999, 70, 4);
            /* Threads' ranges ending inside an outer index: partial tiles of a narrow inner
             * (split otherwise) and of a wide one. */
            axis_case(&env, ops[o], COOPREDUCE_FLOAT32, 5, 5000, 3, 1);
            axis_case(&env, ops[o], COOPREDUCE_FLOAT64, 3, 701, 65, 0);
            const int64_t off[] = {0, 1, 40000, 40000, 40017, 40100, 90000};
            segments_case(&env, ops[o], COOPREDUCE_FLOAT32, off, 6, 90000, 1);
        }
        coopreduce_destroy(h);
    }
}

static void errors(void)
{
    coopreduce_handle *h = g_cpu;
    float x[64] = {0}, r[8];
    uint64_t idx[8];
    memset(r, POISON, sizeof r);
    CHECK(coopreduce_reserve_axis(NULL, 2, 3, 4, COOPREDUCE_FLOAT32) ==
              COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "reserve_axis, NULL handle");
    CHECK(coopreduce_reserve_axis(h, 1ull << 40, 1ull << 20, 1ull << 10, COOPREDUCE_FLOAT32) ==
              COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "reserve_axis, a shape whose product overflows");
    CHECK(coopreduce_reserve_axis(h, 2, 3, 4, (coopreduce_dtype)42) ==
              COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
          "reserve_axis, unknown dtype");
    CHECK(coopreduce_reserve_segments(NULL, 64, 3, COOPREDUCE_FLOAT32) ==
              COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "reserve_segments, NULL handle");
    CHECK(coopreduce_reserve_segments(h, UINT64_MAX / 2, 3, COOPREDUCE_FLOAT32) ==
              COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "reserve_segments, n * 4 bytes overflows");
    CHECK(coopreduce_reserve_segments(h, 64, UINT64_MAX, COOPREDUCE_FLOAT64) ==
              COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "reserve_segments, nseg + 1 offsets overflow");
    CHECK(coopreduce_reserve_axis(h, 2, 3, 4, COOPREDUCE_FLOAT32) == COOPREDUCE_SUCCESS &&
              coopreduce_reserve_segments(h, 64, 3, COOPREDUCE_BFLOAT16) == COOPREDUCE_SUCCESS,
          "reserve on a CPU handle: %s", coopreduce_last_error(h));
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, x, NULL, r, 2, 3, 4, COOPREDUCE_FLOAT32, NULL,
                                 NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "NULL handle");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, NULL, NULL, r, 2, 3, 4, COOPREDUCE_FLOAT32, h,
                                 NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "NULL x");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, x, NULL, NULL, 2, 3, 4, COOPREDUCE_FLOAT32, h,
                                 NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "NULL result");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_DOT, x, NULL, r, 2, 3, 4, COOPREDUCE_FLOAT32, h,
                                 NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "dot without y");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, x, NULL, r, 1ull << 40, 1ull << 20, 1ull << 10,
                                 COOPREDUCE_FLOAT32, h, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "shape whose product overflows");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, (char *)x + 2, NULL, r, 2, 3, 4,
                                 COOPREDUCE_FLOAT32, h, NULL) == COOPREDUCE_ERROR_MISALIGNED,
          "misaligned x");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, x, NULL, r, 2, 3, 4, (coopreduce_dtype)42, h,
                                 NULL) == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
          "unknown dtype");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUMSQ, x, NULL, r, 2, 3, 4, COOPREDUCE_INT32, h,
                                 NULL) == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
          "sumsq of int32");
    /* An empty row: MIN fails for the call, writing nothing; SUM gives +0 per result; an empty
     * result (outer 0) succeeds whatever len. */
    memset(r, POISON, sizeof r);
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_MIN, x, NULL, r, 2, 0, 4, COOPREDUCE_FLOAT32, h,
                                 NULL) == COOPREDUCE_ERROR_EMPTY,
          "min of empty rows");
    CHECK(load_bits(r, 0, 4) == 0xA5A5A5A5u, "a failed call wrote a result");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, x, NULL, r, 2, 0, 4, COOPREDUCE_FLOAT32, h,
                                 NULL) == COOPREDUCE_SUCCESS &&
              load_bits(r, 7, 4) == 0,
          "sum of empty rows is +0");
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_MIN, x, NULL, r, 0, 0, 4, COOPREDUCE_FLOAT32, h,
                                 NULL) == COOPREDUCE_SUCCESS,
          "min with no results");
    /* Exact mode refuses MEAN as the 1-D call does, after the arguments are checked. */
    coopreduce_set_mode(h, COOPREDUCE_MODE_EXACT);
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_MEAN, x, NULL, r, 2, 3, 4, COOPREDUCE_FLOAT32, h,
                                 NULL) == COOPREDUCE_ERROR_NOT_SUPPORTED,
          "mean in exact mode");
    coopreduce_set_mode(h, COOPREDUCE_MODE_DETERMINISTIC);
    /* Segments. */
    const int64_t good[] = {0, 3, 3, 10}, down[] = {0, 5, 4, 10}, neg[] = {-1, 3};
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_SUM, x, NULL, r, 10, NULL, 3, COOPREDUCE_FLOAT32,
                                     h, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "NULL offsets");
    memset(r, POISON, sizeof r);
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_SUM, x, NULL, r, 10, down, 3, COOPREDUCE_FLOAT32,
                                     h, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT &&
              strstr(coopreduce_last_error(h), "segment 1"),
          "decreasing offsets: %s", coopreduce_last_error(h));
    CHECK(load_bits(r, 0, 4) == 0xA5A5A5A5u, "a failed call wrote a result");
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_SUM, x, NULL, r, 10, neg, 1, COOPREDUCE_FLOAT32,
                                     h, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "negative offset");
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_ARGMAX, x, NULL, idx, 10, good, 3,
                                     COOPREDUCE_FLOAT32, h, NULL) == COOPREDUCE_ERROR_EMPTY &&
              strstr(coopreduce_last_error(h), "segment 1"),
          "argmax of an empty segment: %s", coopreduce_last_error(h));
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_SUM, x, NULL, r, 10, good, 3, COOPREDUCE_FLOAT32,
                                     h, NULL) == COOPREDUCE_SUCCESS &&
              load_bits(r, 1, 4) == 0,
          "sum of an empty segment is +0");
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_SUM, x, NULL, r, 10, good, 0, COOPREDUCE_FLOAT32,
                                     h, NULL) == COOPREDUCE_SUCCESS,
          "no segments");
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_SUM, x, NULL, r, 10,
                                     (const int64_t *)((char *)good + 4), 1, COOPREDUCE_FLOAT32, h,
                                     NULL) == COOPREDUCE_ERROR_MISALIGNED,
          "misaligned offsets");
    memset(r, POISON, sizeof r);
    CHECK(coopreduce_reduce_segments(COOPREDUCE_OP_SUM, x, NULL, r, 9, good, 3, COOPREDUCE_FLOAT32,
                                     h, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT &&
              strstr(coopreduce_last_error(h), "offsets[3] = 10") && load_bits(r, 0, 4) == (POISON64 & 0xffffffffu),
          "offsets beyond n: %s", coopreduce_last_error(h));
    CHECK(coopreduce_synchronize(h, NULL) == COOPREDUCE_SUCCESS, "synchronize on a CPU handle");
    /* 128-bit sums out of the input's range: COOPREDUCE_ERROR_OVERFLOW naming the result, every
     * result written. */
    int64_t big[6] = {INT64_MAX, INT64_MAX, 1, 2, INT64_MIN, -1};
    unsigned char sums[3 * 16];
    CHECK(coopreduce_reduce_axis(COOPREDUCE_OP_SUM, big, NULL, sums, 3, 2, 1, COOPREDUCE_INT64, h,
                                 NULL) == COOPREDUCE_ERROR_OVERFLOW &&
              strstr(coopreduce_last_error(h), "result 0"),
          "int64 overflow: %s", coopreduce_last_error(h));
    int64_t lo;
    memcpy(&lo, sums + 16, 8);
    CHECK(lo == 3, "the results after the overflowing one are written");
}

CPU_TEST_MAIN("test_axis_cpu", {"sweep", sweep}, {"segments", segments}, {"columns", columns},
              {"batches", batches}, {"threads", threads}, {"errors", errors})
