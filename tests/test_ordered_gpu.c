/* test_ordered_gpu.c — the canonical-order operations on the GPU (src/gpu/ordered.cu,
 * ordered_host.c): SUM of float16 and bfloat16; MEAN, SUMSQ, NORM2 and DOT of every float type.
 *
 *   test_ordered_gpu           all checks; exits 77 (ctest: skipped) without CUDA or a GPU
 *   test_ordered_gpu --quick   sizes <= 70001 and no n > 2^31 case (for compute-sanitizer)
 *
 * The contract is that the GPU returns the CPU's bits (docs/DETERMINISM.md, "Operations"); the
 * CPU path is checked against independent references in tests/test_ops_*.c. So every GPU
 * result here is compared bit for bit with a CPU handle's result on the same data, and the
 * bytes after the result must stay poisoned. Data: moderate random values, the whole finite
 * range (subnormals to the largest, where sums overflow and norm2's three classes all occur),
 * values with their negatives (cancellation), and NaN / +-inf / +-0 sprinkled in; sizes around
 * the chunk (4096 / 2048), lane and warp boundaries up to 2^24 + 1; inputs 16-byte aligned and
 * one element off (each operand of DOT separately); forced grids; host results; narrowing;
 * repeated calls; inputs larger than L2 (both read directions); n == 0 and n == 1; pointer
 * errors; one n > 2^31 case.
 *
 * Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "coopreduce.h"
#include "gpu_util.h"
#include "util.h"

#ifndef COOPREDUCE_HAVE_CUDA
GPU_TEST_MAIN_WITHOUT_CUDA("test_ordered_gpu")
#else

static coopreduce_handle *gpu, *cpu;
static unsigned char *hx, *hy; /* host data */
static void *dx, *dy, *dout;   /* device data (cap + 16 bytes each), device result */
static size_t cap_bytes;
static int quick;
static int sm_count; /* the GPU's multiprocessors (mid_sizes) */
static uint64_t l2_bytes; /* the GPU's L2 (past_l2) */

/* Every float dtype (float_dtypes, set in main). */
static coopreduce_dtype floats[COOPREDUCE_DTYPE_COUNT];
static int nfloats;
/* The ordered (op, dtype) pairs: SUM of the 16-bit types, the rest of every float type. */
static const coopreduce_op ops[5] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_MEAN, COOPREDUCE_OP_SUMSQ,
                                     COOPREDUCE_OP_NORM2, COOPREDUCE_OP_DOT};
static int in_scope(coopreduce_op op, coopreduce_dtype dt)
{
    return op != COOPREDUCE_OP_SUM || dt == COOPREDUCE_FLOAT16 || dt == COOPREDUCE_BFLOAT16;
}

enum { K_MODERATE, K_WIDE, K_CANCEL, K_SPECIAL, K_COUNT };
static const char *kind_name[K_COUNT] = {"moderate", "wide", "cancel", "special"};

/* One random value of dt as bits, of the kind's distribution. */
static uint64_t value_bits(coopreduce_dtype dt, int kind)
{
    int eb, mb;
    float_layout(dt, &eb, &mb);
    const uint64_t r = rnd(), bias = (1ull << (eb - 1)) - 1, emax = (1ull << eb) - 2;
    const uint64_t sign = (r >> 63) << (eb + mb);
    const uint64_t man = (rnd() >> 1) & ((1ull << mb) - 1);
    uint64_t e;
    if (kind == K_WIDE) {
        e = (r >> 20) % (emax + 1); /* 0 (subnormal or zero) .. the largest finite exponent */
    } else {
        const uint64_t span = eb >= 8 ? 12 : 6; /* [bias - span, bias + 2] */
        e = bias - span + (r >> 20) % (span + 3);
    }
    if (kind == K_SPECIAL && r % 97 == 0) {
        static const int pick[5] = {0, 1, 2, 3, 4};
        switch (pick[(r >> 8) % 5]) {
        case 0: return ((1ull << eb) - 1) << mb | 1ull << (mb - 1); /* NaN */
        case 1: return ((1ull << eb) - 1) << mb;                    /* +inf */
        case 2: return sign | ((1ull << eb) - 1) << mb;             /* +-inf */
        case 3: return 1ull << (eb + mb);                           /* -0.0 */
        default: return 0;                                          /* +0.0 */
        }
    }
    return sign | e << mb | man;
}

static void fill(unsigned char *p, uint64_t n, coopreduce_dtype dt, int kind)
{
    const size_t es = coopreduce_dtype_size(dt);
    int eb, mb;
    float_layout(dt, &eb, &mb);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t b;
        if (kind == K_CANCEL && i % 2 == 1 && rnd() % 4) {
            memcpy(&b, p + (i - 1) * es, es); /* the previous value, negated (mostly) */
            b = (b & ((1ull << (8 * es - 1)) * 2 - 1)) ^ (1ull << (eb + mb));
        } else {
            b = value_bits(dt, kind == K_CANCEL ? K_MODERATE : kind);
        }
        store_bits(p, i, es, b);
    }
}

/* The GPU result of op over (d_x, d_y) against the CPU's over (h_x, h_y). */
static void check_one(coopreduce_op op, coopreduce_dtype dt, const void *d_x, const void *d_y,
                      const void *h_x, const void *h_y, uint64_t n, const char *ctx)
{
    const size_t rs = coopreduce_op_result_size(op, dt, 0, NULL); /* narrow is handle state */
    unsigned char want[16], got[32], host[16];
    memset(want, POISON, sizeof want);
    coopreduce_status sc = coopreduce_reduce(op, h_x, h_y, want, n, dt, cpu, NULL);
    if (!CHECK(sc == COOPREDUCE_SUCCESS, "%s %s n=%llu %s: CPU status %d: %s",
               coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)n, ctx,
               (int)sc, coopreduce_last_error(cpu)))
        return;
    const size_t wrs = coopreduce_op_result_size(op, dt, 0, NULL);
    memset(got, POISON, sizeof got);
    if (!cuda_ok(cudaMemcpy(dout, got, sizeof got, cudaMemcpyHostToDevice), "poison")) return;
    coopreduce_status sg = coopreduce_reduce(op, d_x, d_y, dout, n, dt, gpu, NULL);
    if (!CHECK(sg == COOPREDUCE_SUCCESS, "%s %s n=%llu %s: GPU status %d: %s",
               coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)n, ctx,
               (int)sg, coopreduce_last_error(gpu)))
        return;
    if (!cuda_ok(cudaMemcpy(got, dout, sizeof got, cudaMemcpyDeviceToHost), "result")) return;
    (void)rs;
    char a[40], b[40];
    hex_bytes(a, sizeof a, got, wrs);
    hex_bytes(b, sizeof b, want, wrs);
    CHECK(memcmp(got, want, wrs) == 0, "%s %s n=%llu %s: GPU 0x%s, CPU 0x%s",
          coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)n, ctx, a, b);
    int tail_ok = 1;
    for (size_t i = wrs; i < sizeof got; i++) tail_ok &= got[i] == POISON;
    CHECK(tail_ok, "%s %s n=%llu %s: bytes after the %zu-byte result were written",
          coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)n, ctx, wrs);
    /* Now and then the host-result call too. */
    if (rnd() % 3 == 0) {
        memset(host, POISON, sizeof host);
        sg = coopreduce_reduce_to_host(op, d_x, d_y, host, n, dt, gpu, NULL);
        if (CHECK(sg == COOPREDUCE_SUCCESS, "to_host %s %s: status %d: %s", coopreduce_op_name(op),
                  coopreduce_dtype_name(dt), (int)sg, coopreduce_last_error(gpu))) {
            hex_bytes(a, sizeof a, host, wrs);
            CHECK(memcmp(host, want, wrs) == 0 && host[wrs] == POISON,
                  "to_host %s %s n=%llu %s: GPU 0x%s, CPU 0x%s", coopreduce_op_name(op),
                  coopreduce_dtype_name(dt), (unsigned long long)n, ctx, a, b);
        }
    }
}

static void set_grid(int blocks)
{
    CHECK(coopreduce_set_grid_blocks(gpu, blocks) == COOPREDUCE_SUCCESS, "set_grid_blocks(%d)",
          blocks);
}

/* Uploads hx, hy (n elements of dt) at element offsets ox, oy; returns the device pointers. */
static int upload(coopreduce_dtype dt, uint64_t n, uint64_t ox, uint64_t oy, void **px, void **py)
{
    const size_t es = coopreduce_dtype_size(dt);
    *px = (char *)dx + ox * es;
    *py = (char *)dy + oy * es;
    if (!n) return 1;
    return cuda_ok(cudaMemcpy(*px, hx, n * es, cudaMemcpyHostToDevice), "upload x") &&
           cuda_ok(cudaMemcpy(*py, hy, n * es, cudaMemcpyHostToDevice), "upload y");
}

static void sweep(void)
{
    static const uint64_t sizes[] = {1,
                                     2,
                                     3,
                                     4,
                                     5,
                                     7,
                                     8,
                                     9,
                                     16,
                                     31,
                                     33,
                                     63,
                                     64,
                                     65,
                                     127,
                                     128,
                                     129,
                                     255,
                                     257,
                                     1023,
                                     2047,
                                     2048,
                                     2049,
                                     4095,
                                     4096,
                                     4097,
                                     8191,
                                     8192,
                                     8193,
                                     12289,
                                     65521,
                                     65537,
                                     70001,
                                     131071,
                                     (1u << 20) - 1,
                                     (1u << 20) + 1,
                                     1000003,
                                     (1u << 22) + 3,
                                     (1u << 24) - 1,
                                     (1u << 24) + 1};
    static const int grids[] = {1, 2, 3, 7, 64, 333};
    const size_t count = sizeof sizes / sizeof sizes[0];
    for (int di = 0; di < nfloats; di++) {
        const coopreduce_dtype dt = floats[di];
        const uint64_t lanes = 16 / coopreduce_dtype_size(dt);
        for (size_t si = 0; si < count; si++) {
            const uint64_t n = sizes[si];
            if (quick && n > 70001) continue;
            const int small = n <= 70001;
            for (int kind = 0; kind < K_COUNT; kind++) {
                if (!small && kind != (int)(rnd() % K_COUNT)) continue;
                fill(hx, n, dt, kind);
                fill(hy, n, dt, kind);
                /* aligned; x one element off; y a random element off (DOT); both a random
                 * element off (large sizes: aligned and one of the others) */
                const uint64_t offs[4][2] = {{0, 0},
                                             {1, 0},
                                             {0, 1 + rnd() % (lanes - 1)},
                                             {1 + rnd() % (lanes - 1), 1 + rnd() % (lanes - 1)}};
                for (int oi = 0; oi < (small ? 4 : 2); oi++) {
                    if (!small && oi == 1) oi = 1 + (int)(rnd() % 3);
                    void *px, *py;
                    if (!upload(dt, n, offs[oi][0], offs[oi][1], &px, &py)) return;
                    const int forced = rnd() % 3 == 0 ? grids[rnd() % 6] : 0;
                    set_grid(forced);
                    char ctx[96];
                    snprintf(ctx, sizeof ctx, "%s offx=%llu offy=%llu grid=%d", kind_name[kind],
                             (unsigned long long)offs[oi][0], (unsigned long long)offs[oi][1],
                             forced);
                    for (int k = 0; k < 5; k++)
                        if (in_scope(ops[k], dt)) check_one(ops[k], dt, px, py, hx, hy, n, ctx);
                    set_grid(0);
                }
            }
        }
    }
}

/* Mid sizes, where ordered.cu splits a chunk over 8, 4 or 2 warps (split_kernel: while the
 * warps of every chunk fit in a wave, 16 warps an SM): chunk counts around 2, 4 and 8 a
 * multiprocessor, ragged and whole, aligned and misaligned, every operation and type, in the
 * quick run too. */
static void mid_sizes(void)
{
    const uint64_t per[] = {1, 2, 3, 4, 6, 8, 9};
    for (int di = 0; di < nfloats; di++) {
        const coopreduce_dtype dt = floats[di];
        const size_t es = coopreduce_dtype_size(dt);
        const uint64_t chunk = es == 8 ? 2048 : 4096, lanes = 16 / es;
        for (size_t pi = 0; pi < sizeof per / sizeof per[0]; pi++) {
            if (quick && pi % 2) continue;
            uint64_t n = per[pi] * (uint64_t)sm_count * chunk - rnd() % 3 * chunk;
            n += rnd() % 2 ? 0 : 1 + rnd() % (chunk - 1);
            if (n * es > cap_bytes) continue;
            const int kind = (int)(rnd() % K_COUNT);
            fill(hx, n, dt, kind);
            fill(hy, n, dt, kind);
            for (int oi = 0; oi < 3; oi++) {
                const uint64_t ox = oi == 1 ? 1 + rnd() % (lanes - 1) : 0;
                const uint64_t oy = oi == 2 ? 1 + rnd() % (lanes - 1) : 0;
                void *px, *py;
                if (!upload(dt, n, ox, oy, &px, &py)) return;
                char ctx[96];
                snprintf(ctx, sizeof ctx, "mid size, %s offx=%llu offy=%llu", kind_name[kind],
                         (unsigned long long)ox, (unsigned long long)oy);
                for (int k = 0; k < 5; k++)
                    if (in_scope(ops[k], dt)) check_one(ops[k], dt, px, py, hx, hy, n, ctx);
            }
        }
    }
}

/* Inputs larger than L2, whose streams walk their chunks downward in every other launch
 * (load.cuh's walk, by the launch tag's parity): every operation and type, aligned and with x
 * one element off (DOT: y too), each result against the CPU's. Each operation is checked twice
 * in a row: two to four launches of its kernel (check_one's device result, and now and then its
 * host result) with consecutive tags, so both directions run. */
static void past_l2(void)
{
    if (quick) return; /* (arrays of 50 MB and more: not for the sanitizers) */
    for (int di = 0; di < nfloats; di++) {
        const coopreduce_dtype dt = floats[di];
        const size_t es = coopreduce_dtype_size(dt);
        /* DOT reads both arrays: past L2 for every operation, x alone too */
        const uint64_t n = (l2_bytes + 16 * 4096 * (3 + rnd() % 5)) / es + rnd() % 4096;
        if (!l2_bytes || n * es > cap_bytes) continue;
        const int kind = (int)(rnd() % K_COUNT);
        fill(hx, n, dt, kind);
        fill(hy, n, dt, kind);
        for (int oi = 0; oi < 2; oi++) {
            void *px, *py;
            if (!upload(dt, n, (uint64_t)oi, (uint64_t)oi, &px, &py)) return;
            for (int k = 0; k < 5; k++)
                for (int rep = 0; rep < 2 && in_scope(ops[k], dt); rep++) {
                    char ctx[96];
                    snprintf(ctx, sizeof ctx, "past L2, %s offset=%d call %d", kind_name[kind], oi,
                             rep + 1);
                    check_one(ops[k], dt, px, py, hx, hy, n, ctx);
                }
        }
    }
}

/* Every grid from 1 to 40 blocks and a few large ones: the same bits. */
static void grids(void)
{
    const uint64_t n = quick ? 40000 : 300007;
    for (int di = 0; di < nfloats; di++) {
        const coopreduce_dtype dt = floats[di];
        fill(hx, n, dt, K_MODERATE);
        fill(hy, n, dt, K_MODERATE);
        void *px, *py;
        if (!upload(dt, n, 0, 0, &px, &py)) return;
        for (int g = 1; g <= 48; g += (g < 40 ? 1 : 8)) {
            set_grid(g);
            char ctx[32];
            snprintf(ctx, sizeof ctx, "grid=%d", g);
            for (int k = 0; k < 5; k++)
                if (in_scope(ops[k], dt)) check_one(ops[k], dt, px, py, hx, hy, n, ctx);
        }
        set_grid(0);
    }
}

/* n == 0 and n == 1, special cases by hand, and narrowing. */
static void edges(void)
{
    for (int di = 0; di < nfloats; di++) {
        const coopreduce_dtype dt = floats[di];
        for (int k = 0; k < 5; k++)
            if (in_scope(ops[k], dt)) check_one(ops[k], dt, dx, dy, hx, hy, 0, "empty");
        /* One element of each special value and a few finite ones. */
        int eb, mb;
        float_layout(dt, &eb, &mb);
        const uint64_t inf = ((1ull << eb) - 1) << mb, sgn = 1ull << (eb + mb);
        const uint64_t one[] = {0, sgn,     inf,     inf | sgn,      inf | 1ull << (mb - 1),
                                1, sgn | 1, inf - 1, (inf - 1) | sgn};
        for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
            for (uint64_t n = 1; n <= 4100; n += 4099) { /* alone, and among 4099 zeros */
                const size_t es = coopreduce_dtype_size(dt);
                memset(hx, 0, n * es);
                memset(hy, 0, n * es);
                store_bits(hx, n - 1, es, one[i]);
                store_bits(hy, n - 1, es, one[(i + 2) % (sizeof one / sizeof one[0])]);
                void *px, *py;
                if (!upload(dt, n, 0, 0, &px, &py)) return;
                char ctx[48];
                snprintf(ctx, sizeof ctx, "special 0x%llx", (unsigned long long)one[i]);
                for (int k = 0; k < 5; k++)
                    if (in_scope(ops[k], dt)) check_one(ops[k], dt, px, py, hx, hy, n, ctx);
            }
    }
    /* Narrowing, on both handles. */
    CHECK(coopreduce_set_narrow_result(gpu, 1) == COOPREDUCE_SUCCESS, "narrow gpu");
    CHECK(coopreduce_set_narrow_result(cpu, 1) == COOPREDUCE_SUCCESS, "narrow cpu");
    for (int di = 0; di < nfloats; di++) {
        const coopreduce_dtype dt = floats[di];
        if (!dt_is_half(dt)) continue;
        for (int kind = 0; kind < K_COUNT; kind++) {
            const uint64_t n = 5000 + rnd() % 5000;
            fill(hx, n, dt, kind);
            fill(hy, n, dt, kind);
            void *px, *py;
            if (!upload(dt, n, 0, 0, &px, &py)) return;
            for (int k = 0; k < 5; k++) {
                if (!in_scope(ops[k], dt)) continue;
                unsigned char want[8], got[8];
                memset(want, POISON, 8);
                memset(got, POISON, 8);
                coopreduce_status a = coopreduce_reduce(ops[k], hx, hy, want, n, dt, cpu, NULL);
                coopreduce_status b =
                    coopreduce_reduce_to_host(ops[k], px, py, got, n, dt, gpu, NULL);
                CHECK(a == 0 && b == 0 && memcmp(want, got, 8) == 0 && got[2] == POISON,
                      "narrow %s %s %s: status %d/%d, GPU 0x%02x%02x, CPU 0x%02x%02x",
                      coopreduce_op_name(ops[k]), coopreduce_dtype_name(dt), kind_name[kind],
                      (int)a, (int)b, got[1], got[0], want[1], want[0]);
            }
        }
    }
    coopreduce_set_narrow_result(gpu, 0);
    coopreduce_set_narrow_result(cpu, 0);
}

/* NORM2's medium pass decides from bits whether a full chunk holds an element of another
 * class (ordered.cu's Ext, values.h's CR_NORM2_*_BITS): one value at each class boundary,
 * planted among moderate (medium) values in a full chunk, once in a single-chunk input and
 * once in a streamed multi-chunk one; the bits must be the CPU's, whose class tests are the
 * float comparisons. */
static void norm2_classes(void)
{
    static const uint64_t f32v[] = {0x59800000, 0x59800001, 0x597fffff, 0x20000000, 0x1fffffff,
                                    0x1,        0x00800000, 0x7f800000, 0x7fc00000, 0x7f7fffff};
    static const uint64_t f64v[] = {
        0x5e50000000000000ull, 0x5e50000000000001ull, 0x5e4fffffffffffffull,
        0x2000000000000000ull, 0x1fffffffffffffffull, 0x1ull,
        0x0000000100000000ull, 0x7ff0000000000000ull, 0x7ff8000000000000ull};
    static const uint64_t f16v[] = {0x7bff, 0x7c00, 0x7e00, 0x0001, 0x0400, 0x3c00};
    static const uint64_t bf16v[] = {0x5980, 0x5981, 0x597f, 0x2000, 0x1fff,
                                     0x0001, 0x0080, 0x7f80, 0x7fc0, 0x7f7f};
    const struct {
        coopreduce_dtype dt;
        const uint64_t *v;
        size_t count;
    } vals[4] = {{COOPREDUCE_FLOAT32, f32v, sizeof f32v / 8},
                 {COOPREDUCE_FLOAT64, f64v, sizeof f64v / 8},
                 {COOPREDUCE_FLOAT16, f16v, sizeof f16v / 8},
                 {COOPREDUCE_BFLOAT16, bf16v, sizeof bf16v / 8}};
    for (int di = 0; di < 4; di++) {
        const coopreduce_dtype dt = vals[di].dt;
        const size_t es = coopreduce_dtype_size(dt);
        const uint64_t chunk = dt == COOPREDUCE_FLOAT64 ? 2048 : 4096;
        int eb, mb;
        float_layout(dt, &eb, &mb);
        for (size_t i = 0; i < vals[di].count; i++)
            for (int multi = 0; multi < 2; multi++) {
                const uint64_t n = multi ? 5 * chunk + 3 : chunk;
                fill(hx, n, dt, K_MODERATE);
                const uint64_t at = rnd() % (multi ? 4 * chunk : chunk); /* in a full chunk */
                store_bits(hx, at, es, vals[di].v[i] | (rnd() & 1) << (eb + mb));
                void *px, *py;
                if (!upload(dt, n, 0, 0, &px, &py)) return;
                char ctx[64];
                snprintf(ctx, sizeof ctx, "class boundary 0x%llx at %llu",
                         (unsigned long long)vals[di].v[i], (unsigned long long)at);
                check_one(COOPREDUCE_OP_NORM2, dt, px, py, hx, hy, n, ctx);
            }
    }
}

/* NORM2 over runs of chunks of different kinds (medium, wide range, all subnormal, one outlier in
 * a medium chunk, zeros), the runs 1 to 300 chunks long, over 2^22 elements and more, on grids
 * small enough that each warp meets many chunks: the GPU's medium pass, its fallback per chunk
 * and its three-class stream take turns within a warp's range (ordered.cu's norm2_kernel
 * switches between them by the share of chunks it finds with another class), and every chunk
 * and every switch must give the CPU's bits. */
static void norm2_streams(void)
{
    static const int grid_pick[] = {1, 2, 3, 0};
    for (int di = 0; di < nfloats; di++) {
        const coopreduce_dtype dt = floats[di];
        const size_t es = coopreduce_dtype_size(dt);
        const uint64_t chunk = es == 8 ? 2048 : 4096;
        int eb, mb;
        float_layout(dt, &eb, &mb);
        for (int rep = 0; rep < (quick ? 2 : 4); rep++) {
            const uint64_t n = (1ull << 22) + rnd() % (3 * chunk);
            int kind = 0;
            for (uint64_t i = 0, left = 0; i < n; i++) {
                if (i % chunk == 0 && left-- == 0) { /* a new run of chunks */
                    left = 1 + rnd() % 300;
                    kind = (int)(rnd() % 5);
                }
                uint64_t b;
                if (kind == 1) /* wide range */
                    b = value_bits(dt, K_WIDE);
                else if (kind == 2) /* all subnormal */
                    b = ((rnd() >> 1) & ((1ull << mb) - 1)) | (rnd() & 1) << (eb + mb);
                else if (kind == 4) /* zeros, now and then a medium value */
                    b = rnd() % 16 ? 0 : value_bits(dt, K_MODERATE);
                else /* medium; kind 3: one wide-range element per chunk */
                    b = kind == 3 && i % chunk == 17 ? value_bits(dt, K_WIDE)
                                                     : value_bits(dt, K_MODERATE);
                store_bits(hx, i, es, b);
            }
            /* every other array misaligned: the shifted stream (leaves.cuh, Shifted) */
            const uint64_t off = rep % 2 ? 1 + rnd() % (16 / es - 1) : 0;
            void *px, *py;
            if (!upload(dt, n, off, 0, &px, &py)) return;
            for (int g = 0; g < 4; g++) {
                set_grid(grid_pick[g]);
                char ctx[64];
                snprintf(ctx, sizeof ctx, "runs of kinds, offset %llu, grid=%d",
                         (unsigned long long)off, grid_pick[g]);
                check_one(COOPREDUCE_OP_NORM2, dt, px, py, hx, hy, n, ctx);
            }
            set_grid(0);
        }
    }
}

/* Misaligned arrays that end where their allocation ends, so that a read past the end is an
 * error under compute-sanitizer's memcheck (scripts/gpu-check.sh): every operation and type,
 * offsets 1 .. 16 / size - 1, lengths around whole chunks and 16-byte blocks. */
static void tight_ends(void)
{
    static const uint64_t extra[] = {0, 1, 3, 5, 7, 8, 9, 4095};
    for (int di = 0; di < nfloats; di++) {
        const coopreduce_dtype dt = floats[di];
        const size_t es = coopreduce_dtype_size(dt);
        const uint64_t chunk = es == 8 ? 2048 : 4096, lanes = 16 / es;
        for (int rep = 0; rep < (quick ? 3 : 8); rep++) {
            const uint64_t n = chunk * (1 + rnd() % 40) + extra[rnd() % 8];
            const uint64_t ox = 1 + rnd() % (lanes - 1), oy = rnd() % lanes;
            fill(hx, n, dt, (int)(rnd() % 3));
            fill(hy, n, dt, (int)(rnd() % 3));
            char *bx = NULL, *by = NULL;
            if (!cuda_ok(cudaMalloc((void **)&bx, (n + ox) * es), "cudaMalloc x") ||
                !cuda_ok(cudaMalloc((void **)&by, (n + oy) * es), "cudaMalloc y")) {
                cudaFree(bx);
                return;
            }
            if (cuda_ok(cudaMemcpy(bx + ox * es, hx, n * es, cudaMemcpyHostToDevice), "x") &&
                cuda_ok(cudaMemcpy(by + oy * es, hy, n * es, cudaMemcpyHostToDevice), "y")) {
                const int forced = rep % 2 ? 1 + (int)(rnd() % 4) : 0;
                set_grid(forced);
                char ctx[96];
                snprintf(ctx, sizeof ctx, "at its allocation's end, offx=%llu offy=%llu grid=%d",
                         (unsigned long long)ox, (unsigned long long)oy, forced);
                for (int k = 0; k < 5; k++)
                    if (in_scope(ops[k], dt))
                        check_one(ops[k], dt, bx + ox * es, by + oy * es, hx, hy, n, ctx);
                set_grid(0);
            }
            cudaFree(bx);
            cudaFree(by);
        }
    }
}

/* 50 calls on one input: one result. Errors: host and NULL pointers. */
static void repeats_and_errors(void)
{
    const uint64_t n = quick ? 50000 : 3000017;
    const coopreduce_dtype dt = COOPREDUCE_BFLOAT16;
    fill(hx, n, dt, K_MODERATE);
    fill(hy, n, dt, K_MODERATE);
    void *px, *py;
    if (!upload(dt, n, 0, 0, &px, &py)) return;
    for (int k = 0; k < 5; k++) {
        unsigned char first[8], r[8];
        int same = 1;
        for (int i = 0; i < 50; i++) {
            memset(r, POISON, 8);
            if (coopreduce_reduce_to_host(ops[k], px, py, r, n, dt, gpu, NULL)) same = 0;
            if (i == 0) memcpy(first, r, 8);
            same &= memcmp(first, r, 8) == 0;
        }
        CHECK(same, "%s bfloat16: 50 calls did not all give one result",
              coopreduce_op_name(ops[k]));
    }
    float out;
    coopreduce_status s =
        coopreduce_reduce_to_host(COOPREDUCE_OP_DOT, px, hy, &out, n, dt, gpu, NULL);
    CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "dot with a host y: status %d", (int)s);
    s = coopreduce_reduce_to_host(COOPREDUCE_OP_SUMSQ, hx, NULL, &out, n, dt, gpu, NULL);
    CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "sumsq of host x: status %d", (int)s);
    s = coopreduce_reduce_to_host(COOPREDUCE_OP_DOT, px, NULL, &out, n, dt, gpu, NULL);
    CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "dot with y NULL: status %d", (int)s);
    CHECK(strstr(coopreduce_last_error(gpu), "y") != NULL, "message names y: %s",
          coopreduce_last_error(gpu));
}

/* n > 2^31: float16 SUM and SUMSQ, GPU against CPU. */
static void huge(void)
{
    const uint64_t n = (1ull << 31) + 12345;
    const coopreduce_dtype dt = COOPREDUCE_FLOAT16;
    uint16_t *h = malloc(n * 2);
    void *d = NULL;
    if (!CHECK(h != NULL, "malloc 4 GiB") || !cuda_ok(cudaMalloc(&d, n * 2), "cudaMalloc 4 GiB")) {
        free(h);
        return;
    }
    uint64_t r = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (i % 4096 == 0) r = rnd();
        h[i] = (uint16_t)(0x3000u + ((r >> (i % 48)) & 0xfffu)); /* [0.125, 1) */
    }
    if (cuda_ok(cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice), "upload 4 GiB")) {
        check_one(COOPREDUCE_OP_SUM, dt, d, NULL, h, NULL, n, "n > 2^31");
        check_one(COOPREDUCE_OP_SUMSQ, dt, d, NULL, h, NULL, n, "n > 2^31");
    }
    cudaFree(d);
    free(h);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            printf("usage: test_ordered_gpu [--quick]\n");
            return 2;
        }
    }
    coopreduce_gpu_props props;
    if (gpu_test_open("test_ordered_gpu", &gpu, &props)) return 77;
    sm_count = props.sm_count > 0 ? props.sm_count : 132;
    l2_bytes = props.l2_bytes;
    if (!CHECK(coopreduce_create_cpu(&cpu, 0) == COOPREDUCE_SUCCESS, "create_cpu"))
        return check_summary("test_ordered_gpu");
    if (quick) printf("test_ordered_gpu: --quick\n");
    test_seed_init("test_ordered_gpu");
    nfloats = float_dtypes(floats);
    cap_bytes = ((1u << 24) + 64) * 8;
    hx = malloc(cap_bytes);
    hy = malloc(cap_bytes);
    if (!CHECK(hx && hy, "malloc") || !cuda_ok(cudaMalloc(&dx, cap_bytes + 16), "cudaMalloc x") ||
        !cuda_ok(cudaMalloc(&dy, cap_bytes + 16), "cudaMalloc y") ||
        !cuda_ok(cudaMalloc(&dout, 32), "cudaMalloc result"))
        return check_summary("test_ordered_gpu");
    static const test_section sections[] = {{"edges", edges},
                                            {"norm2 classes", norm2_classes},
                                            {"norm2 streams", norm2_streams},
                                            {"sweep", sweep},
                                            {"misaligned at the end", tight_ends},
                                            {"mid sizes", mid_sizes},
                                            {"past L2", past_l2},
                                            {"grids", grids},
                                            {"repeats, errors", repeats_and_errors},
                                            {"huge", huge}};
    run_sections(sections, sizeof sections / sizeof sections[0], quick ? huge : NULL);
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dout);
    free(hx);
    free(hy);
    CHECK(coopreduce_destroy(cpu) == COOPREDUCE_SUCCESS, "destroy cpu");
    CHECK(coopreduce_destroy(gpu) == COOPREDUCE_SUCCESS, "destroy gpu");
    return check_summary("test_ordered_gpu");
}
#endif
