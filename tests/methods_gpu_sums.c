/* methods_gpu_sums.c — test_methods_gpu: every method over sizes and data kinds, misaligned
 * input, forced grids, empty sums, and repeated runs (determinism). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "methods_gpu.h"
#include "util.h"

void empty_sums(void)
{
    for (int d = 0; d < NDTYPES; d++) {
        coopreduce_dtype dt = dtypes[d];
        size_t rs = coopreduce_result_size(dt);
        for (int m = 0; m < NMETHODS; m++) {
            if (!runs_here(m) || !set_method(m)) continue;
            for (int variant = 0; variant < 3; variant++) {
                uint64_t buf[2] = {POISON64, POISON64};
                coopreduce_status s;
                if (variant < 2) {
                    cudaMemset(dout, POISON, 64);
                    s = coopreduce_sum(variant ? NULL : dx, dout, 0, dt, gpu, NULL);
                    cuda_ok(cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost), "copy");
                } else {
                    s = coopreduce_sum_to_host(dx, buf, 0, dt, gpu, NULL);
                }
                uint64_t want_tail = POISON64;
                int ok = s == COOPREDUCE_SUCCESS;
                unsigned char zeros[8] = {0};
                ok = ok && memcmp(buf, zeros, rs) == 0;
                ok = ok && (rs == 8 || memcmp((char *)buf + 4, &want_tail, 4) == 0) &&
                     buf[1] == POISON64;
                CHECK(ok, "%s %s n=0 (%s): status %d, result 0x%016llx 0x%016llx", mname(m),
                      dt_name(dt),
                      variant == 0   ? "x valid"
                      : variant == 1 ? "x NULL"
                                     : "to_host",
                      (int)s, (unsigned long long)buf[0], (unsigned long long)buf[1]);
            }
        }
    }
    reset_handle();
}

static uint64_t log_uniform(uint64_t hi)
{
    /* 1 + a random number of up to log2(hi) bits */
    unsigned bits = 1;
    while (bits < 63 && (1ull << bits) < hi) bits++;
    uint64_t n = 1 + (rnd() >> (64 - 1 - (unsigned)(rnd() % bits)));
    return n > hi ? hi : n;
}

void sweep(void)
{
    static const uint64_t full_sizes[] = {1,    2,    3,     31,      255,      256,           257,
                                          1023, 4097, 65537, 1000003, 1u << 20, (1u << 24) + 1};
    static const uint64_t to_host_sizes[] = {1, 257, 65537, 1000003};
    const size_t nf = sizeof full_sizes / sizeof full_sizes[0];
    const int extra = quick ? 2 : 24;
    for (int d = 0; d < NDTYPES; d++) {
        coopreduce_dtype dt = dtypes[d];
        int failures = 0;
        for (size_t i = 0; i < nf + (size_t)extra && failures < 8; i++) {
            uint64_t n = i < nf ? full_sizes[i] : log_uniform(max_n);
            if (n > max_n) continue;
            int th = 0;
            for (size_t k = 0; k < sizeof to_host_sizes / sizeof to_host_sizes[0]; k++)
                th |= n == to_host_sizes[k];
            /* Full: a random kind and an exact one for every size; quick: one, in turn. */
            for (int e = 0; e < 2; e++) {
                if (quick && e != (int)(i & 1)) continue;
                dataset ds;
                if (load(&ds, dt, n, pick_kind(dt, n, e), 0)) return;
                failures += all_methods(&ds, th) != 0;
            }
        }
    }
    reset_handle();
}

void misaligned(void)
{
    static const uint64_t full_sizes[] = {1, 5, 4097, 1000003};
    static const uint64_t quick_sizes[] = {1, 5, 4097, 65537};
    const uint64_t *sizes = quick ? quick_sizes : full_sizes;
    for (int d = 0; d < NDTYPES; d++)
        for (int i = 0; i < 4; i++) {
            dataset ds;
            if (load(&ds, dtypes[d], sizes[i], pick_kind(dtypes[d], sizes[i], i & 1), 1)) return;
            all_methods(&ds, 0);
        }
    /* 8 and 12 bytes off 16 for the 4-byte types. */
    for (uint64_t off = 2; off < 4; off++)
        for (int d = 0; d < NDTYPES; d += 2) {
            dataset ds;
            if (load(&ds, dtypes[d], 4099 + off, pick_kind(dtypes[d], 4099, 1), off)) return;
            all_methods(&ds, 0);
        }
    reset_handle();
}

/* Forced grids: still correct, and the method launches no more blocks than forced (methods.h:
 * "clamped to what the method can run"), except `block` and `twopass`, whose grid is one
 * block per 256 elements by design, and `cluster`, whose grid is a whole number of clusters. */
void forced_grids(void)
{
    static const int grids[] = {1, 7, 64, 0};
    static const uint64_t full_sizes[] = {4097, 1000003};
    for (int c = 0; c < (quick ? NDTYPES : 2 * NDTYPES); c++) {
        const int d = c % NDTYPES;
        const uint64_t n = quick ? 65537 : full_sizes[c / NDTYPES];
        dataset ds;
        if (load(&ds, dtypes[d], n, pick_kind(dtypes[d], n, c & 1), 0)) return;
        for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
            set_grid(grids[g]);
            for (int m = 0; m < NMETHODS; m++) {
                if (!runs_here(m) || !set_method(m)) continue;
                outcome o;
                if (!sum_ok(&ds, m, 0, &o)) {
                    printf("  (with the grid forced to %d blocks)\n", grids[g]);
                    continue;
                }
                int b = o.info.blocks, want_max = grids[g];
                if (grids[g] == 0) continue;
                /* (verify() checked block's and twopass's one block per 256 elements) */
                if (m == COOPREDUCE_METHOD_BLOCK || m == COOPREDUCE_METHOD_TWOPASS) continue;
                if (m == COOPREDUCE_METHOD_CLUSTER && o.info.cluster_size > 1)
                    want_max = (want_max + o.info.cluster_size - 1) / o.info.cluster_size *
                               o.info.cluster_size;
                CHECK(b >= 1 && b <= want_max, "%s %s grid forced to %d: launched %d blocks",
                      mname(m), dt_name(dtypes[d]), grids[g], b);
            }
        }
        set_grid(0);
    }
    reset_handle();
}

static uint64_t pick_unround_n(uint64_t lo, uint64_t hi)
{
    uint64_t n = lo + rnd() % (hi - lo);
    while (n % 2 == 0 || n % 3 == 0 || n % 5 == 0 || n % 7 == 0) n++;
    return n;
}

void determinism(void)
{
    const uint64_t n = quick ? pick_unround_n(60000, 70000) : pick_unround_n(2900000, 3100000);
    uint64_t *seen = malloc((size_t)repeats * sizeof *seen);
    if (!CHECK(seen != NULL, "malloc")) return;
    for (int d = 0; d < NDTYPES; d++) {
        coopreduce_dtype dt = dtypes[d];
        dataset ds;
        if (load(&ds, dt, n, dt == COOPREDUCE_INT32 ? K_UNIFORM : K_SIGNED, 0)) break;
        for (int m = 0; m < NMETHODS; m++) {
            if (!runs_here(m) || !set_method(m)) continue;
            int det = coopreduce_method_deterministic((coopreduce_method)m, dt);
            CHECK(det == 0 || det == 1, "method_deterministic(%s, %s) = %d", mname(m), dt_name(dt),
                  det);
            int distinct = 0, differ = 0, ran = 0;
            for (int r = 0; r < repeats; r++) {
                outcome o;
                if (!sum_ok(&ds, m, 0, &o)) break;
                seen[ran++] = o.bits;
                int is_new = 1;
                for (int k = 0; k < ran - 1; k++) is_new &= seen[k] != o.bits;
                distinct += is_new;
                differ += o.bits != seen[0];
            }
            if (det == 1)
                CHECK(differ == 0,
                      "%s %s n=%llu seed=%llu: deterministic, but %d of %d runs "
                      "differ from the first (%d distinct results)",
                      mname(m), dt_name(dt), (unsigned long long)n, (unsigned long long)ds.seed,
                      differ, ran, distinct);
            else
                printf("determinism: %s %s n=%llu: %d distinct result%s in %d runs (documented "
                       "as not deterministic)\n",
                       mname(m), dt_name(dt), (unsigned long long)n, distinct,
                       distinct == 1 ? "" : "s", ran);
        }
    }
    free(seen);
    reset_handle();
}
