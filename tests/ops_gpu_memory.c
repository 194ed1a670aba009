/* ops_gpu_memory.c — test_ops_gpu: a non-blocking stream, host and foreign pointers refused,
 * more than 2^31 float16 / bfloat16 elements, and the --timing report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops_gpu.h"
#include "util.h"

/* A non-blocking stream; host memory and foreign pointers refused with nothing written. */
void streams_and_pointers(void)
{
    cudaStream_t st = NULL;
    if (!cuda_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream")) return;
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        const uint64_t n = max_n < 100000 ? max_n : 100000;
        fill(hx, n, dt, pick_kind(dt));
        const void *d = upload(hx, n, dt, 0);
        /* st does not wait for the legacy stream, and cudaMemcpy from pageable memory may
         * return before its DMA lands: the upload must be complete before st reads it (a run
         * on an H100 read the previous type's data: min float64 wrong, 2026-11-23) */
        if (!d || !cuda_ok(cudaDeviceSynchronize(), "sync after upload")) break;
        for (int k = 0; k < NOPS; k++) {
            const coopreduce_op op = all_ops[k];
            if (!in_scope(op, dt)) continue;
            unsigned char r[16], want[16];
            cudaMemsetAsync(dout, POISON, 64, st);
            coopreduce_status s = coopreduce_reduce(op, d, NULL, dout, n, dt, gpu, st);
            cudaMemcpyAsync(r, dout, 16, cudaMemcpyDeviceToHost, st);
            cuda_ok(cudaStreamSynchronize(st), "stream sync");
            if (op == COOPREDUCE_OP_MEAN) {
                char why[120];
                CHECK(s == COOPREDUCE_SUCCESS && mean_ok(dt, hx, n, r, why, sizeof why),
                      "stream: %s %s: status %d", oname(op), dt_name(dt), (int)s);
                continue;
            }
            reference(op, dt, hx, n, want);
            CHECK(s == COOPREDUCE_SUCCESS && memcmp(r, want, rsize(op, dt)) == 0,
                  "stream: %s %s: status %d (%s)", oname(op), dt_name(dt), (int)s,
                  coopreduce_last_error(gpu));
        }
    }
    cuda_ok(cudaStreamDestroy(st), "stream destroy");

    /* Host memory as x, or as the device result. */
    const uint64_t n = 100;
    void *host = calloc(n, 8);
    if (!CHECK(host != NULL, "calloc")) return;
    for (int k = 0; k < NOPS; k++) {
        const coopreduce_op op = all_ops[k];
        const coopreduce_dtype dt =
            k >= 5 ? COOPREDUCE_INT64 : COOPREDUCE_FLOAT32; /* SUM, MEAN: int64 */
        if (!in_scope(op, dt)) continue;
        uint64_t buf[4];
        cudaMemset(dout, POISON, 64);
        coopreduce_status s = coopreduce_reduce(op, host, NULL, dout, n, dt, gpu, NULL);
        cuda_ok(cudaMemcpy(buf, dout, 32, cudaMemcpyDeviceToHost), "copy");
        CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY && buf[0] == 0xA5A5A5A5A5A5A5A5ull &&
                  buf[1] == 0xA5A5A5A5A5A5A5A5ull,
              "%s %s: host x: status %d", oname(op), dt_name(dt), (int)s);
        memset(buf, POISON, sizeof buf);
        s = coopreduce_reduce(op, dx, NULL, buf, n, dt, gpu, NULL);
        CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY && buf[0] == 0xA5A5A5A5A5A5A5A5ull,
              "%s %s: host result: status %d", oname(op), dt_name(dt), (int)s);
    }
    free(host);
}

/* More than 2^31 elements: float16 and bfloat16 (the same bytes), extremes planted near the end,
 * indices past 2^31. */
static void plant(void *d, uint64_t i, uint16_t v)
{
    cuda_ok(cudaMemcpy((uint16_t *)d + i, &v, 2, cudaMemcpyHostToDevice), "plant");
}

void huge(void)
{
    const uint64_t n = (1ull << 31) + 12345, bytes = n * 2;
    if (!gpu_room_for(bytes)) return;
    void *d = NULL;
    if (cudaMalloc(&d, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        printf("SKIP: > 2^31 case: cudaMalloc of %.1f GB failed\n", bytes / 1e9);
        return;
    }
    if (!cuda_ok(cudaMemset(d, 0x3c, bytes), "memset")) { /* every element 0x3c3c */
        cudaFree(d);
        return;
    }
    const uint64_t big = 1ull << 31;
    plant(d, n - 7, 0x7bff); /* the largest finite float16 (a large finite bfloat16) */
    plant(d, n - 3, 0x7bff); /* a tie: the first one counts */
    plant(d, big + 5, 0xfbff);
    plant(d, big + 100, 0xfbff);
    for (int h = 0; h < 2; h++) {
        const coopreduce_dtype dt = h ? COOPREDUCE_BFLOAT16 : COOPREDUCE_FLOAT16;
        double t0 = now_s();
        expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, n, n - 7, "n > 2^31");
        expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, n, big + 5, "n > 2^31");
        expect_u64(COOPREDUCE_OP_MAX, dt, d, n, 0x7bff, "n > 2^31");
        expect_u64(COOPREDUCE_OP_MIN, dt, d, n, 0xfbff, "n > 2^31");
        expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, n, 0x7bff, "n > 2^31");
        /* one element off 16 bytes: indices shift by one */
        const void *d1 = (const uint16_t *)d + 1;
        expect_u64(COOPREDUCE_OP_ARGMAX, dt, d1, n - 1, n - 8, "n > 2^31, x + 1");
        expect_u64(COOPREDUCE_OP_ARGMIN, dt, d1, n - 1, big + 4, "n > 2^31, x + 1");
        printf("  > 2^31 %s: 7 reductions of %.2f GB in %.1f ms\n", dt_name(dt), bytes / 1e9,
               1e3 * (now_s() - t0));
    }
    plant(d, n - 1, 0xffc1);   /* a negative NaN last (NaN as float16 and as bfloat16) */
    plant(d, big + 3, 0x7fff); /* the first NaN (both types) */
    for (int h = 0; h < 2; h++) {
        const coopreduce_dtype dt = h ? COOPREDUCE_BFLOAT16 : COOPREDUCE_FLOAT16;
        const uint64_t nan = h ? 0x7fc0 : 0x7e00;
        expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, n, big + 3, "n > 2^31 with NaNs");
        expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, n, big + 3, "n > 2^31 with NaNs");
        expect_u64(COOPREDUCE_OP_MIN, dt, d, n, nan, "n > 2^31 with NaNs");
        expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, n, nan, "n > 2^31 with NaNs");
    }
    cuda_ok(cudaFree(d), "cudaFree");
}

/* --timing: every (op, dtype) at n = 2^28 against the library's int32 sum (vec4int's kernel)
 * and float32 canonical sum of the same bytes; the data is finite (every byte has bit 6 clear,
 * so no 16-, 32- or 64-bit pattern is inf or NaN), of both signs. */
static double time_calls(coopreduce_op op, coopreduce_dtype dt, const void *d, uint64_t n)
{
    cudaEvent_t e0, e1;
    double best = -1;
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) return -1;
    for (int w = 0; w < 3; w++)
        if (coopreduce_reduce(op, d, NULL, dout, n, dt, gpu, NULL)) return -1;
    for (int b = 0; b < 5; b++) {
        const int calls = 10;
        float ms = 0;
        cudaEventRecord(e0, NULL);
        for (int c = 0; c < calls; c++) coopreduce_reduce(op, d, NULL, dout, n, dt, gpu, NULL);
        cudaEventRecord(e1, NULL);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        const double us = 1e3 * ms / calls;
        if (best < 0 || us < best) best = us;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return best;
}

void timing(void)
{
    const uint64_t n = 1ull << 28, max_bytes = n * 8;
    void *d = NULL;
    if (cudaMalloc(&d, max_bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        printf("timing: cannot allocate %.1f GB; skipped\n", max_bytes / 1e9);
        return;
    }
    const size_t blk = 1u << 24;
    unsigned char *h = malloc(blk);
    if (!h) {
        cudaFree(d);
        return;
    }
    for (size_t i = 0; i < blk; i++) h[i] = (unsigned char)(rnd() & 0xbf);
    for (uint64_t o = 0; o < max_bytes; o += blk)
        cudaMemcpy((char *)d + o, h, blk, cudaMemcpyHostToDevice);
    free(h);
    printf("timing at n = 2^28 (best of 5 batches of 10 calls; proxies: the library's int32 sum "
           "and float32 canonical sum of the same bytes, both 98-100%% of the float4-read "
           "ceiling in docs/PERF.md):\n");
    printf("  %-8s %-8s %10s %8s %10s %10s\n", "dtype", "op", "us", "GB/s", "x int32sum",
           "x f32sum");
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        const uint64_t bytes = n * dt_size(dt);
        const double t_i32 = time_calls(COOPREDUCE_OP_SUM, COOPREDUCE_INT32, d, bytes / 4);
        const double t_f32 = time_calls(COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, d, bytes / 4);
        for (int k = 0; k < NOPS; k++) {
            const coopreduce_op op = all_ops[k];
            if (!in_scope(op, dt)) continue;
            const double t = time_calls(op, dt, d, n);
            if (t <= 0) {
                printf("  %-8s %-8s failed: %s\n", dt_name(dt), oname(op),
                       coopreduce_last_error(gpu));
                continue;
            }
            printf("  %-8s %-8s %10.1f %8.0f %10.3f %10.3f\n", dt_name(dt), oname(op), t,
                   bytes / (t * 1e3), t_i32 / t, t_f32 / t);
        }
    }
    fflush(stdout);
    cudaFree(d);
}
