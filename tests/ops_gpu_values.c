/* ops_gpu_values.c — test_ops_gpu: NaN at the first, middle and last position, only +-0.0 and
 * +-inf, the integer extremes and 128-bit sums, and empty input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops_gpu.h"
#include "util.h"

/* Sets x[0..n) of dt from explicit bit patterns, uploads, runs every op. */
static void run_bits(coopreduce_dtype dt, const uint64_t *bits, uint64_t n, const char *what)
{
    for (uint64_t i = 0; i < n; i++) store_bits(hx, i, dt_size(dt), bits[i]);
    for (uint64_t off = 0; off < 2; off++) {
        const void *d = upload(hx, n, dt, off);
        if (!d) return;
        char ctx[160];
        snprintf(ctx, sizeof ctx, "%s off=%llu", what, (unsigned long long)off);
        run_all_ops(dt, d, n, ctx, 0);
    }
}

/* NaN first, middle, last; several NaNs (the first one counts); in later blocks. */
void nans(void)
{
    static const uint64_t sizes[] = {1, 2, 9, 1000, 100003, 1000003};
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        if (!dt_is_float(dt)) continue;
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const uint64_t n = sizes[si];
            if (n > max_n) continue;
            for (int where = 0; where < 5; where++) {
                fill(hx, n, dt, (rnd() & 1) ? K_WIDE : K_TIES);
                uint64_t p;
                switch (where) {
                case 0: p = 0; break;
                case 1: p = n / 2; break;
                case 2: p = n - 1; break;
                default: p = rnd() % n; break;
                }
                store_bits(hx, p, dt_size(dt), nan_pattern(dt));
                if (where == 4 && p + 1 < n) {
                    /* more NaNs after the first, some in other threads' vectors */
                    for (int j = 0; j < 4; j++)
                        store_bits(hx, p + 1 + rnd() % (n - p - 1), dt_size(dt), nan_pattern(dt));
                }
                for (uint64_t off = quick ? rnd() % 2 : 0; off < 2; off++) {
                    const void *d = upload(hx, n, dt, off);
                    if (!d) return;
                    char ctx[96];
                    snprintf(ctx, sizeof ctx, "NaN at %llu off=%llu", (unsigned long long)p,
                             (unsigned long long)off);
                    run_all_ops(dt, d, n, ctx, 0);
                    /* the rules, stated directly */
                    expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, n, p, ctx);
                    expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, n, p, ctx);
                    expect_u64(COOPREDUCE_OP_MIN, dt, d, n, nan_bits(dt), ctx);
                    expect_u64(COOPREDUCE_OP_MAX, dt, d, n, nan_bits(dt), ctx);
                    expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, n, nan_bits(dt), ctx);
                }
            }
        }
    }
}

/* Only +-0.0; +-inf among numbers. */
void zeros_and_infs(void)
{
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        if (!dt_is_float(dt)) continue;
        const uint64_t pz = 0, nz = sign_bits(dt), inf = inf_bits(dt), ninf = inf | sign_bits(dt);
        const uint64_t a[2] = {pz, nz}, b[2] = {nz, pz};
        run_bits(dt, a, 2, "[+0, -0]");
        run_bits(dt, b, 2, "[-0, +0]");
        const void *d = upload(hx, 2, dt, 0); /* hx holds [-0, +0] now */
        if (d) {
            expect_u64(COOPREDUCE_OP_MIN, dt, d, 2, nz, "[-0, +0]");
            expect_u64(COOPREDUCE_OP_MAX, dt, d, 2, pz, "[-0, +0]");
            expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, 2, pz, "[-0, +0]");
            expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, 2, 0, "[-0, +0]");
            expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, 2, 0, "[-0, +0]");
        }
        for (uint64_t i = 0; i < 2; i++) store_bits(hx, i, dt_size(dt), a[i]);
        d = upload(hx, 2, dt, 0);
        if (d) {
            expect_u64(COOPREDUCE_OP_MIN, dt, d, 2, nz, "[+0, -0]");
            expect_u64(COOPREDUCE_OP_MAX, dt, d, 2, pz, "[+0, -0]");
            expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, 2, 0, "[+0, -0]");
            expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, 2, 0, "[+0, -0]");
        }
        /* long arrays of zeros: one -0.0 (or one +0.0) planted in a later block */
        const uint64_t n = max_n < 70001 ? max_n : 70001;
        for (int v = 0; v < 4; v++) {
            uint64_t base = (v & 1) ? nz : pz, other = (v & 1) ? pz : nz;
            for (uint64_t i = 0; i < n; i++) store_bits(hx, i, dt_size(dt), base);
            uint64_t p = v < 2 ? n - 1 - rnd() % 100 : rnd() % n;
            store_bits(hx, p, dt_size(dt), other);
            d = upload(hx, n, dt, v & 1);
            if (!d) return;
            char ctx[96];
            snprintf(ctx, sizeof ctx, "zeros, one %s at %llu", (v & 1) ? "+0" : "-0",
                     (unsigned long long)p);
            run_all_ops(dt, d, n, ctx, 0);
            expect_u64(COOPREDUCE_OP_MIN, dt, d, n, nz, ctx);
            expect_u64(COOPREDUCE_OP_MAX, dt, d, n, pz, ctx);
            expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, n, 0, ctx);
            expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, n, 0, ctx);
        }
        const uint64_t c[3] = {ninf, inf, ninf}, e[1] = {ninf};
        run_bits(dt, c, 3, "[-inf, +inf, -inf]");
        run_bits(dt, e, 1, "[-inf]");
        d = upload(hx, 1, dt, 0);
        if (d) expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, 1, inf, "[-inf]");
        /* +-inf among random finite values, at random places */
        for (int rep = 0; rep < 3; rep++) {
            const uint64_t m = 1 + rnd() % (n < 5000 ? n : 5000);
            fill(hx, m, dt, K_WIDE);
            for (int j = 0; j < 3; j++)
                store_bits(hx, rnd() % m, dt_size(dt), (rnd() & 1) ? inf : ninf);
            d = upload(hx, m, dt, rnd() % 2);
            if (!d) return;
            run_all_ops(dt, d, m, "infs among finite", 0);
        }
    }
}

/* Integer extremes: sums beyond 64 bits (all 16 bytes), |INT_MIN|, all equal. */
void int_extremes(void)
{
    static const uint64_t sizes[] = {1, 3, 1000, 65537, 1000003};
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        if (dt_is_float(dt)) continue;
        const size_t es = dt_size(dt);
        const uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
        const uint64_t vmax = dt_is_signed(dt) ? mask >> 1 : mask;
        const uint64_t vmin = dt_is_signed(dt) ? (mask >> 1) + 1 : 0;
        const uint64_t vals[3] = {vmax, vmin, dt_is_signed(dt) ? mask : 1}; /* MAX, MIN, -1 / 1 */
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const uint64_t n = sizes[si];
            if (n > max_n) continue;
            for (int v = 0; v < 4; v++) {
                for (uint64_t i = 0; i < n; i++)
                    store_bits(hx, i, dt_size(dt), v < 3 ? vals[v] : ((i % 3) ? vmin : vmax));
                const void *d = upload(hx, n, dt, v & 1);
                if (!d) return;
                char ctx[96];
                snprintf(ctx, sizeof ctx, "extreme pattern %d", v);
                run_all_ops(dt, d, n, ctx, 0);
                if (v < 3) { /* all equal: index 0 */
                    expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, n, 0, ctx);
                    expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, n, 0, ctx);
                }
                if (v == 1 && dt_is_signed(dt))
                    expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, n, vmin, "|MIN| = 2^(w-1)");
            }
        }
        /* A sum whose 128 bits are known: n copies of the maximum (and of the minimum). */
        if (es == 8) {
            const uint64_t n = max_n < 1000003 ? max_n : 1000003;
            for (int v = 0; v < 2; v++) {
                for (uint64_t i = 0; i < n; i++) store_bits(hx, i, dt_size(dt), v ? vmin : vmax);
                const void *d = upload(hx, n, dt, 0);
                unsigned char r[16];
                if (!d || !gpu_result(COOPREDUCE_OP_SUM, dt, d, n, r, "n * extreme")) continue;
                i128 want = (i128)n * (dt == COOPREDUCE_INT64 ? (i128)(int64_t)(v ? vmin : vmax)
                                                              : (i128)(v ? vmin : vmax));
                uint64_t w[2], g[2];
                memcpy(w, &want, 16);
                memcpy(g, r, 16);
                CHECK(g[0] == w[0] && g[1] == w[1],
                      "%s sum of %llu x %s: %016llx%016llx, expected %016llx%016llx", dt_name(dt),
                      (unsigned long long)n, v ? "MIN" : "MAX", (unsigned long long)g[1],
                      (unsigned long long)g[0], (unsigned long long)w[1], (unsigned long long)w[0]);
            }
        }
    }
}

/* n = 0: SUM 0, MEAN NaN, MIN and the others COOPREDUCE_ERROR_EMPTY with nothing written. */
void empty(void)
{
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        for (int k = 0; k < NOPS; k++) {
            const coopreduce_op op = all_ops[k];
            if (!in_scope(op, dt)) continue;
            for (int px = 0; px < 2; px++) {
                const void *x = px ? dx : NULL;
                unsigned char r[32];
                cudaMemset(dout, POISON, 64);
                coopreduce_status s = coopreduce_reduce(op, x, NULL, dout, 0, dt, gpu, NULL);
                cuda_ok(cudaMemcpy(r, dout, 32, cudaMemcpyDeviceToHost), "copy");
                const int defined = op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN;
                if (!defined) {
                    int untouched = 1;
                    for (int i = 0; i < 32; i++) untouched &= r[i] == POISON;
                    CHECK(s == COOPREDUCE_ERROR_EMPTY && untouched,
                          "%s %s n=0: status %d (expected EMPTY), output %s", oname(op),
                          dt_name(dt), (int)s, untouched ? "untouched" : "written");
                    continue;
                }
                unsigned char want[16];
                reference(op, dt, hx, 0, want);
                const size_t rs = rsize(op, dt);
                int tail = 1;
                for (size_t i = rs; i < 32; i++) tail &= r[i] == POISON;
                CHECK(s == COOPREDUCE_SUCCESS && memcmp(r, want, rs) == 0 && tail,
                      "%s %s n=0 x=%s: status %d (%s), result %s", oname(op), dt_name(dt),
                      px ? "dx" : "NULL", (int)s, coopreduce_last_error(gpu),
                      memcmp(r, want, rs) == 0 ? "right" : "wrong");
                /* to_host */
                memset(r, POISON, sizeof r);
                s = coopreduce_reduce_to_host(op, x, NULL, r, 0, dt, gpu, NULL);
                CHECK(s == COOPREDUCE_SUCCESS && memcmp(r, want, rs) == 0 && r[rs] == POISON,
                      "%s %s n=0 to_host: status %d (%s)", oname(op), dt_name(dt), (int)s,
                      coopreduce_last_error(gpu));
            }
        }
    }
}
