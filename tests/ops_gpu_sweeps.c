/* ops_gpu_sweeps.c — test_ops_gpu: the result sizes, every op in scope over sizes, data kinds and
 * alignments with now and then a forced grid, host results, and every grid of a range. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops_gpu.h"
#include "util.h"

void api_basics(void)
{
    for (int d = 0; d < COOPREDUCE_DTYPE_COUNT; d++)
        for (int k = 0; k < NOPS; k++) {
            const coopreduce_dtype dt = (coopreduce_dtype)d;
            if (!in_scope(all_ops[k], dt)) continue;
            size_t api = coopreduce_op_result_size(all_ops[k], dt, 0, NULL);
            CHECK(api == rsize(all_ops[k], dt), "%s %s: result size %zu, this test says %zu",
                  oname(all_ops[k]), dt_name(dt), api, rsize(all_ops[k], dt));
        }
}

void sweep(void)
{
    static const uint64_t sizes[] = {1,
                                     2,
                                     3,
                                     4,
                                     5,
                                     7,
                                     8,
                                     9,
                                     15,
                                     16,
                                     17,
                                     31,
                                     32,
                                     33,
                                     63,
                                     64,
                                     65,
                                     127,
                                     255,
                                     257,
                                     1000,
                                     1021,
                                     4093,
                                     4097,
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
    static const uint64_t quick_sizes[] = {1, 2, 3, 5, 9, 17, 33, 65, 257, 1031, 4099, 70001};
    const uint64_t *sz = quick ? quick_sizes : sizes;
    const size_t count =
        quick ? sizeof quick_sizes / sizeof quick_sizes[0] : sizeof sizes / sizeof sizes[0];
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        const size_t es = dt_size(dt);
        for (size_t si = 0; si < count; si++) {
            const uint64_t n = sz[si];
            if (n > max_n) continue;
            /* Small sizes: every kind, aligned and off by 1 element (and by a random 1..k-1
             * for 16-bit and 32-bit types); large: one random kind, one random offset. */
            const int every = !quick && n <= 70001;
            const int nk = every ? K_COUNT : (quick ? 2 : 1);
            for (int kk = 0; kk < nk; kk++) {
                int kind = every ? kk : pick_kind(dt);
                if (every &&
                    (dt_is_float(dt) ? kind == K_EXTREME
                                     : (kind == K_NEG || kind == K_SPECIAL || kind == K_NAN)))
                    continue;
                fill(hx, n, dt, kind);
                const uint64_t lanes = 16 / es;
                uint64_t offs[3] = {0, 1, 1 + rnd() % (lanes - 1)};
                int no = every ? 3 : 1;
                if (!every) offs[0] = rnd() % lanes;
                for (int oi = 0; oi < no; oi++) {
                    if (oi == 2 && offs[2] == 1) continue;
                    const void *d = upload(hx, n, dt, offs[oi]);
                    if (!d) return;
                    /* Now and then a forced grid: the bits must not change. */
                    int forced = 0;
                    if (rnd() % 4 == 0) {
                        static const int grids[] = {1, 2, 3, 7, 64, 333};
                        forced = grids[rnd() % 6];
                    }
                    set_grid(forced);
                    char ctx[160];
                    snprintf(ctx, sizeof ctx, "off=%llu %s grid=%d", (unsigned long long)offs[oi],
                             kind_names[kind], forced);
                    run_all_ops(dt, d, n, ctx, forced);
                    set_grid(0);
                }
            }
        }
    }
}

/* coopreduce_reduce_to_host: the same bits, synchronous; a 64-bit sum that does not fit reports
 * COOPREDUCE_ERROR_OVERFLOW with the 16 bytes written. */
void to_host(void)
{
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        for (int rep = 0; rep < 3; rep++) {
            const uint64_t n = 1 + rnd() % (max_n < 300000 ? max_n : 300000);
            const int kind = rep == 0 && !dt_is_float(dt) ? K_EXTREME : pick_kind(dt);
            fill(hx, n, dt, kind);
            const void *d = upload(hx, n, dt, rnd() % 2);
            if (!d) return;
            for (int k = 0; k < NOPS; k++) {
                const coopreduce_op op = all_ops[k];
                if (!in_scope(op, dt)) continue;
                const size_t rs = rsize(op, dt);
                unsigned char r[32], want[16], dev[16];
                memset(r, POISON, sizeof r);
                coopreduce_status s = coopreduce_reduce_to_host(op, d, NULL, r, n, dt, gpu, NULL);
                reference(op, dt, hx, n, want);
                const int overflow =
                    op == COOPREDUCE_OP_SUM && dt_size(dt) == 8 && !fits_64(dt, want);
                char c[160];
                snprintf(c, sizeof c, "to_host %s %s n=%llu %s", oname(op), dt_name(dt),
                         (unsigned long long)n, kind_names[kind]);
                if (!CHECK(s == (overflow ? COOPREDUCE_ERROR_OVERFLOW : COOPREDUCE_SUCCESS),
                           "%s: status %d: %s", c, (int)s, coopreduce_last_error(gpu)))
                    continue;
                CHECK(r[rs] == POISON, "%s: wrote past the result", c);
                if (op == COOPREDUCE_OP_MEAN) {
                    if (gpu_result(op, dt, d, n, dev, c))
                        CHECK(memcmp(r, dev, 8) == 0, "%s: differs from the device result", c);
                } else {
                    CHECK(memcmp(r, want, rs) == 0, "%s: differs from the reference", c);
                }
                coopreduce_launch_info li;
                if (!(op == COOPREDUCE_OP_SUM && dt == COOPREDUCE_INT32) &&
                    coopreduce_last_launch(gpu, &li) == COOPREDUCE_SUCCESS && !overflow)
                    CHECK(li.launches == 1 && li.blocks >= 1,
                          "%s: last_launch %d launches, %d blocks", c, li.launches, li.blocks);
            }
        }
    }
}

/* Forced grids give the same bits (1 block to far more blocks than elements). */
void grids(void)
{
    static const int g[] = {1, 2, 5, 64, 1000, 4096, 0};
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        const uint64_t n = max_n < 200003 ? max_n : 200003;
        fill(hx, n, dt, (rnd() & 1) ? K_TIES : pick_kind(dt));
        const void *d = upload(hx, n, dt, 1);
        if (!d) return;
        for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
            set_grid(g[k]);
            char ctx[64];
            snprintf(ctx, sizeof ctx, "forced grid %d", g[k]);
            run_all_ops(dt, d, n, ctx, g[k]);
        }
        set_grid(0);
    }
}
