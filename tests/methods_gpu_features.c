/* methods_gpu_features.c — test_methods_gpu: the API of a GPU handle, thread-block clusters,
 * cooperative launch and its fallback, pipeline stages, and bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "methods_gpu.h"
#include "util.h"

void api_basics(void)
{
    coopreduce_handle *h = NULL;
    if (!CHECK(coopreduce_create_gpu(&h, 0) == COOPREDUCE_SUCCESS, "second handle: %s",
               coopreduce_last_error(NULL)))
        return;
    coopreduce_launch_info info, zero;
    memset(&info, POISON, sizeof info);
    memset(&zero, 0, sizeof zero);
    CHECK(coopreduce_last_launch(h, &info) == COOPREDUCE_SUCCESS, "last_launch on a new handle");
    CHECK(memcmp(&info, &zero, sizeof info) == 0,
          "last_launch before the first sum is not all "
          "zero (blocks %d, launches %d)",
          info.blocks, info.launches);
    CHECK(coopreduce_last_launch(h, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "last_launch(h, NULL) accepted");
    static const int bad_methods[] = {-1, COOPREDUCE_METHOD_COUNT, 1000};
    for (size_t k = 0; k < 3; k++)
        CHECK(coopreduce_set_method(h, (coopreduce_method)bad_methods[k]) ==
                  COOPREDUCE_ERROR_INVALID_ARGUMENT,
              "set_method(gpu, %d) accepted", bad_methods[k]);
    for (int m = 0; m < NMETHODS; m++)
        CHECK(coopreduce_set_method(h, (coopreduce_method)m) == COOPREDUCE_SUCCESS,
              "set_method(gpu, %s): %s", mname(m), coopreduce_last_error(h));
    static const int bad_stages[] = {0, 9, -1, 100};
    for (size_t k = 0; k < 4; k++) {
        coopreduce_status s = coopreduce_set_stages(h, bad_stages[k]);
        CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "set_stages(%d): status %d", bad_stages[k],
              (int)s);
    }
    for (int st = 1; st <= 8; st++)
        CHECK(coopreduce_set_stages(h, st) == COOPREDUCE_SUCCESS, "set_stages(%d)", st);
    CHECK(coopreduce_disable_features(h, COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH |
                                             COOPREDUCE_FEATURE_CLUSTERS) == COOPREDUCE_SUCCESS,
          "disable_features(both): %s", coopreduce_last_error(h));
    CHECK(coopreduce_disable_features(h, 0) == COOPREDUCE_SUCCESS, "disable_features(0)");
    CHECK(coopreduce_destroy(h) == COOPREDUCE_SUCCESS, "destroy");
}

/* A refused cluster sum: NOT_SUPPORTED, its own message, device and host outputs untouched. */
static void expect_cluster_refused(const dataset *ds, const char *why)
{
    char ctx[160];
    snprintf(ctx, sizeof ctx, "cluster %s n=%llu (%s)", dt_name(ds->dt), (unsigned long long)ds->n,
             why);
    for (int to_host = 0; to_host < 2; to_host++) {
        outcome o;
        mark_error();
        coopreduce_status s = run(ds, to_host, &o); /* checks the poison on failure */
        CHECK(s == COOPREDUCE_ERROR_NOT_SUPPORTED,
              "%s %s: status %d, expected NOT_SUPPORTED "
              "(11)",
              ctx, to_host ? "to_host" : "device", (int)s);
        if (s != COOPREDUCE_SUCCESS) fresh_error(ctx);
    }
    /* Nothing may have been enqueued either: after the device is idle, still poison. */
    uint64_t buf[2] = {0, 0};
    cuda_ok(cudaDeviceSynchronize(), "synchronise");
    cuda_ok(cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost), "copy");
    CHECK(buf[0] == POISON64 && buf[1] == POISON64, "%s: the output was written (0x%016llx)", ctx,
          (unsigned long long)buf[0]);
}

void clusters(void)
{
    const uint64_t n = quick ? 65537 : 1000003;
    for (int d = 0; d < NDTYPES; d++) {
        dataset ds;
        if (load(&ds, dtypes[d], n, pick_kind(dtypes[d], n, 0), 0)) return;
        if (!set_method(COOPREDUCE_METHOD_CLUSTER)) return;
        if (!props.cluster_launch) expect_cluster_refused(&ds, "GPU without clusters");
        set_disabled(COOPREDUCE_FEATURE_CLUSTERS);
        expect_cluster_refused(&ds, "clusters disabled");
        /* The other methods do not care. */
        set_method(COOPREDUCE_METHOD_MULTILEVEL);
        sum_ok(&ds, COOPREDUCE_METHOD_MULTILEVEL, 0, NULL);
        set_method(COOPREDUCE_METHOD_CLUSTER);
        set_disabled(0);
        if (props.cluster_launch) {
            outcome o;
            if (sum_ok(&ds, COOPREDUCE_METHOD_CLUSTER, 0, &o))
                CHECK(o.info.cluster_size >= 1 && o.info.fell_back == 0,
                      "cluster re-enabled: cluster_size %d, fell_back %d", o.info.cluster_size,
                      o.info.fell_back);
        } else {
            expect_cluster_refused(&ds, "GPU without clusters, nothing disabled");
        }
    }
    reset_handle();
}

void cooperative(void)
{
    const uint64_t n = quick ? 65537 : 1000003;
    const int forced = 64;
    for (int d = 0; d < NDTYPES; d++) {
        coopreduce_dtype dt = dtypes[d];
        dataset ds;
        if (load(&ds, dt, n, pick_kind(dt, n, 0), 0)) return;
        /* With cooperative launch (when the GPU has it): verify() requires cooperative == 1. */
        outcome grid_coop, gs_coop, gs_fb, o;
        set_method(COOPREDUCE_METHOD_GRID);
        sum_ok(&ds, COOPREDUCE_METHOD_GRID, 0, &grid_coop);
        set_method(COOPREDUCE_METHOD_GRIDSYNC);
        sum_ok(&ds, COOPREDUCE_METHOD_GRIDSYNC, 0, &o);
        set_grid(forced);
        int have = sum_ok(&ds, COOPREDUCE_METHOD_GRIDSYNC, 0, &gs_coop);
        if (!props.cooperative_launch)
            CHECK(gs_coop.info.cooperative == 0 && gs_coop.info.fell_back == 1,
                  "gridsync on a GPU without cooperative launch: cooperative %d, fell_back %d",
                  gs_coop.info.cooperative, gs_coop.info.fell_back);

        /* Without: the fallbacks. */
        set_disabled(COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH);
        if (sum_ok(&ds, COOPREDUCE_METHOD_GRIDSYNC, 0, &gs_fb)) {
            CHECK(gs_fb.info.cooperative == 0 && gs_fb.info.fell_back == 1 &&
                      gs_fb.info.notice[0] != '\0' && gs_fb.info.launches >= 2,
                  "gridsync %s without cooperative launch: cooperative %d, fell_back %d, "
                  "launches %d, notice \"%s\"",
                  dt_name(dt), gs_fb.info.cooperative, gs_fb.info.fell_back, gs_fb.info.launches,
                  gs_fb.info.notice);
            if (have) {
                CHECK(gs_fb.info.blocks == gs_coop.info.blocks,
                      "gridsync %s forced to %d: %d "
                      "blocks cooperatively, %d in the fallback",
                      dt_name(dt), forced, gs_coop.info.blocks, gs_fb.info.blocks);
                CHECK(gs_fb.bits == gs_coop.bits,
                      "gridsync %s n=%llu seed=%llu grid %d: "
                      "fallback 0x%llx != cooperative 0x%llx",
                      dt_name(dt), (unsigned long long)n, (unsigned long long)ds.seed, forced,
                      (unsigned long long)gs_fb.bits, (unsigned long long)gs_coop.bits);
                if (gs_coop.info.cooperative)
                    CHECK(gs_fb.info.launches > gs_coop.info.launches,
                          "gridsync %s: the "
                          "two-kernel fallback reports %d launches, the cooperative kernel %d",
                          dt_name(dt), gs_fb.info.launches, gs_coop.info.launches);
            }
        }
        /* The fallback is deterministic too. */
        if (sum_ok(&ds, COOPREDUCE_METHOD_GRIDSYNC, 0, &o))
            CHECK(o.bits == gs_fb.bits, "gridsync fallback %s: two runs differ", dt_name(dt));
        for (int g = 0; g < 2; g++) {
            set_grid(g ? forced : 0);
            set_method(COOPREDUCE_METHOD_GRIDSYNC);
            sum_ok(&ds, COOPREDUCE_METHOD_GRIDSYNC, 0, NULL);
            set_method(COOPREDUCE_METHOD_GRID);
            for (int to_host = 0; to_host < 2; to_host++)
                if (sum_ok(&ds, COOPREDUCE_METHOD_GRID, to_host, &o))
                    CHECK(o.info.cooperative == 0 && o.info.fell_back == 1 &&
                              o.info.notice[0] != '\0',
                          "grid %s (grid %d, %s) without cooperative launch: cooperative %d, "
                          "fell_back %d, notice \"%s\"",
                          dt_name(dt), g ? forced : 0, to_host ? "to_host" : "device",
                          o.info.cooperative, o.info.fell_back, o.info.notice);
        }
        /* The flag changes nothing for a method that never launches cooperatively. */
        set_method(COOPREDUCE_METHOD_TWOPASS);
        sum_ok(&ds, COOPREDUCE_METHOD_TWOPASS, 0, NULL);
        set_disabled(0);
        set_grid(0);
        /* And back: cooperative again. */
        set_method(COOPREDUCE_METHOD_GRID);
        sum_ok(&ds, COOPREDUCE_METHOD_GRID, 0, NULL);
    }
    reset_handle();
}

void pipeline(void)
{
    static const uint64_t full_sizes[] = {257, 4097, 1000003};
    static const uint64_t quick_sizes[] = {257, 4097, 65537};
    const uint64_t *sizes = quick ? quick_sizes : full_sizes;
    if (!set_method(COOPREDUCE_METHOD_PIPELINE)) return;
    for (int d = 0; d < NDTYPES; d++)
        for (int i = 0; i < 3; i++) {
            dataset ds;
            /* The largest size one element off 16-byte alignment. */
            if (load(&ds, dtypes[d], sizes[i], pick_kind(dtypes[d], sizes[i], i != 1),
                     i == 2 ? 1 : 0))
                return;
            for (int st = 1; st <= 8; st++) {
                if (!CHECK(coopreduce_set_stages(gpu, st) == COOPREDUCE_SUCCESS,
                           "set_stages(%d): %s", st, coopreduce_last_error(gpu)))
                    continue;
                if (!sum_ok(&ds, COOPREDUCE_METHOD_PIPELINE, 0, NULL))
                    printf("  (with %d pipeline stages)\n", st);
            }
        }
    static const int bad[] = {0, 9, -1, 64};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        mark_error();
        coopreduce_status s = coopreduce_set_stages(gpu, bad[k]);
        CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "set_stages(%d): status %d", bad[k], (int)s);
    }
    /* A refused value leaves the setting as it was: the pipeline still works. */
    CHECK(coopreduce_set_stages(gpu, 3) == COOPREDUCE_SUCCESS, "set_stages(3)");
    coopreduce_set_stages(gpu, 0);
    dataset ds;
    if (!load(&ds, COOPREDUCE_FLOAT32, 70001 > max_n ? max_n : 70001, K_SMALLINT, 0))
        sum_ok(&ds, COOPREDUCE_METHOD_PIPELINE, 0, NULL);
    reset_handle();
}

void bad_input(void)
{
    const uint64_t n = 1000;
    int32_t *host = malloc(n * sizeof(double));
    if (!CHECK(host != NULL, "malloc")) return;
    for (uint64_t i = 0; i < n; i++) host[i] = (int32_t)i;
    dataset ds;
    if (load(&ds, COOPREDUCE_FLOAT32, n, K_SMALLINT, 0)) {
        free(host);
        return;
    }
    for (int m = 0; m < NMETHODS; m++) {
        /* A method that cannot run here may refuse with NOT_SUPPORTED before looking at the
         * pointers (the header does not order the checks): clusters() covers it. */
        if (!runs_here(m) || !set_method(m)) continue;
        /* A successful sum first: its launch info must survive the failures below. */
        outcome good;
        coopreduce_launch_info before, after;
        int have_good = sum_ok(&ds, m, 0, &good);
        coopreduce_last_launch(gpu, &before);
        for (int d = 0; d < NDTYPES; d++) {
            coopreduce_dtype dt = dtypes[d];
            char ctx[96];
            uint64_t buf[2];
            snprintf(ctx, sizeof ctx, "%s %s", mname(m), dt_name(dt));
            /* Plain host memory as x. */
            cudaMemset(dout, POISON, 64);
            mark_error();
            coopreduce_status s = coopreduce_sum(host, dout, n, dt, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "%s: host x: status %d", ctx, (int)s);
            fresh_error(ctx);
            cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost);
            CHECK(buf[0] == POISON64 && buf[1] == POISON64, "%s: host x: output written", ctx);
            buf[0] = buf[1] = POISON64;
            s = coopreduce_sum_to_host(host, buf, n, dt, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "%s: to_host, host x: status %d", ctx,
                  (int)s);
            CHECK(buf[0] == POISON64, "%s: to_host, host x: result written", ctx);
            /* Plain host memory as the device result. */
            buf[0] = buf[1] = POISON64;
            s = coopreduce_sum(dx, buf, n, dt, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "%s: host result: status %d", ctx,
                  (int)s);
            CHECK(buf[0] == POISON64, "%s: host result written", ctx);
            /* x not aligned to the element; the result not aligned to the result size. */
            cudaMemset(dout, POISON, 64);
            s = coopreduce_sum((char *)dx + 2, dout, n, dt, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "%s: x at +2 bytes: status %d", ctx, (int)s);
            if (coopreduce_result_size(dt) == 8) {
                s = coopreduce_sum(dx, (char *)dout + 4, n, dt, gpu, NULL);
                CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "%s: result at +4 bytes: status %d", ctx,
                      (int)s);
            }
            cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost);
            CHECK(buf[0] == POISON64 && buf[1] == POISON64, "%s: misaligned: output written", ctx);
        }
        /* int32 beyond 2^32 elements, refused before anything is read (dx is far smaller). */
        static const uint64_t too_many[] = {(1ull << 32) + 1, UINT64_MAX};
        for (int k = 0; k < 2; k++) {
            uint64_t buf[2];
            cudaMemset(dout, POISON, 64);
            mark_error();
            coopreduce_status s =
                coopreduce_sum(dx, dout, too_many[k], COOPREDUCE_INT32, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s int32 n=%llu: status %d", mname(m),
                  (unsigned long long)too_many[k], (int)s);
            fresh_error("int32 n > 2^32");
            cuda_ok(cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost), "copy");
            CHECK(buf[0] == POISON64, "%s int32 n=%llu: output written", mname(m),
                  (unsigned long long)too_many[k]);
        }
        {
            cudaMemset(dout, POISON, 64);
            coopreduce_status s = coopreduce_sum(dx, dout, n, COOPREDUCE_DTYPE_COUNT, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "%s dtype %d (the count): status %d",
                  mname(m), (int)COOPREDUCE_DTYPE_COUNT, (int)s);
        }
        coopreduce_last_launch(gpu, &after);
        if (have_good)
            CHECK(memcmp(&before, &after, sizeof before) == 0,
                  "%s: failed sums changed "
                  "last_launch (blocks %d -> %d)",
                  mname(m), before.blocks, after.blocks);
        /* A float32 result 4 bytes into dout: fine, and only those 4 bytes are written. */
        {
            uint64_t buf[2];
            cudaMemset(dout, POISON, 64);
            coopreduce_status s =
                coopreduce_sum(dx, (char *)dout + 4, n, COOPREDUCE_FLOAT32, gpu, NULL);
            cuda_ok(cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost), "copy");
            uint32_t w[4];
            memcpy(w, buf, 16);
            CHECK(s == COOPREDUCE_SUCCESS && w[0] == 0xA5A5A5A5u && w[2] == 0xA5A5A5A5u &&
                      w[3] == 0xA5A5A5A5u &&
                      (double)f32_from_bits(w[1]) == ref_exact_to_double(&ds.ref),
                  "%s float32 result at dout + 4: status %d, words %08x %08x %08x %08x", mname(m),
                  (int)s, w[0], w[1], w[2], w[3]);
        }
    }
    free(host);
    reset_handle();
}
