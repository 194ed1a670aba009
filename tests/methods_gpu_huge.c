/* methods_gpu_huge.c — test_methods_gpu: more than 2^31 elements, every method. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "methods_gpu.h"
#include "util.h"

/* Fills d[0..n) (elements of es bytes) with a pattern of period `period` by uploading `block`
 * elements (a multiple of the period) and doubling on the device. */
static int fill_periodic(void *d, uint64_t n, size_t es, const void *block, uint64_t block_elems)
{
    uint64_t have = block_elems < n ? block_elems : n;
    if (!cuda_ok(cudaMemcpy(d, block, have * es, cudaMemcpyHostToDevice), "upload pattern"))
        return -1;
    while (have < n) {
        uint64_t c = have < n - have ? have : n - have;
        if (!cuda_ok(cudaMemcpy((char *)d + have * es, d, c * es, cudaMemcpyDeviceToDevice),
                     "replicate pattern"))
            return -1;
        have += c;
    }
    return 0;
}

static double huge_f32_value(uint64_t i) { return (double)((float)((int)(i % 7) - 3) * 0.5f); }
static int32_t huge_i32_value(uint64_t i)
{
    return (int32_t)(i % 5) - 2 + (i % 3 == 0 ? 1000000 : 0);
}

/* Spot checks of the device data against the formula: the start, the end, random windows. */
static int check_pattern(const void *d, uint64_t n, coopreduce_dtype dt)
{
    enum { W = 4096 };
    int32_t buf[W];
    int bad = 0;
    for (int k = 0; k < 6 && !bad; k++) {
        uint64_t start = k == 0 ? 0 : k == 1 ? n - W : rnd() % (n - W);
        if (!cuda_ok(
                cudaMemcpy(buf, (const char *)d + start * 4, sizeof buf, cudaMemcpyDeviceToHost),
                "copy back"))
            return -1;
        for (uint64_t i = 0; i < W && !bad; i++) {
            uint64_t g = start + i;
            if (dt == COOPREDUCE_FLOAT32) {
                float f;
                memcpy(&f, &buf[i], 4);
                bad = (double)f != huge_f32_value(g);
            } else {
                bad = buf[i] != huge_i32_value(g);
            }
            if (bad)
                CHECK(0, "the > 2^31 %s data is wrong at %llu", dt_name(dt), (unsigned long long)g);
        }
    }
    return bad ? -1 : 0;
}

/* Sums of the huge patterns over elements [0, k), by formula: whole periods, then the rest. */
static void huge_prefix_f32(uint64_t k, long double *sum, long double *abs_sum)
{
    long double period = 0, period_abs = 0, rest = 0, rest_abs = 0;
    for (uint64_t j = 0; j < 7; j++) {
        period += huge_f32_value(j);
        period_abs += fabs(huge_f32_value(j));
        if (j < k % 7) rest += huge_f32_value(j), rest_abs += fabs(huge_f32_value(j));
    }
    *sum = (long double)(k / 7) * period + rest; /* exact: multiples of 1/2 < 2^40 */
    *abs_sum = (long double)(k / 7) * period_abs + rest_abs;
}

static int64_t huge_prefix_i32(uint64_t k)
{
    /* (i mod 5) - 2 sums to 0 over each 5 consecutive i from a multiple of 5; 10^6 for every
     * multiple of 3 below k. */
    int64_t tail = 0;
    for (uint64_t j = 0; j < k % 5; j++) tail += (int64_t)j - 2;
    return tail + 1000000 * (int64_t)((k + 2) / 3);
}

/* More than 2^31 elements, every method: float32 within the bound of a sum known by formula,
 * int32 exactly. Besides the whole n elements, n - 1 of them from x[0] and from x[1] (one
 * element off 16-byte alignment): the last element of the whole array happens to be 0 in int32,
 * so only these would notice an implementation that drops the last element. */
void huge(void)
{
    const uint64_t n = (1ull << 31) + 12345;
    const size_t bytes = n * 4;
    if (!gpu_room_for(bytes)) return;
    void *d = NULL;
    if (!cuda_ok(cudaMalloc(&d, bytes), "cudaMalloc 8.6 GB")) return;
    const uint64_t block_elems = 15ull * 7 << 16; /* a multiple of both periods (7 and 15) */
    void *block = malloc(block_elems * 4);
    if (!CHECK(block != NULL, "malloc")) {
        cudaFree(d);
        return;
    }
    static const struct {
        uint64_t minus, off;
    } variants[] = {{0, 0}, {1, 0}, {1, 1}};
    void *keep = dx;
    for (int d32 = 0; d32 < 2; d32++) {
        coopreduce_dtype dt = d32 ? COOPREDUCE_INT32 : COOPREDUCE_FLOAT32;
        for (uint64_t i = 0; i < block_elems; i++) {
            if (d32)
                ((int32_t *)block)[i] = huge_i32_value(i);
            else
                ((float *)block)[i] = (float)huge_f32_value(i);
        }
        if (fill_periodic(d, n, 4, block, block_elems) || check_pattern(d, n, dt)) continue;
        dx = d; /* run() reads dx */
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            dataset ds;
            memset(&ds, 0, sizeof ds);
            ds.dt = dt;
            ds.off = variants[v].off;
            ds.n = n - variants[v].minus; /* x[off .. off + n - minus) lies inside d */
            ds.kind = K_SMALLINT;
            uint64_t a = ds.off, b = ds.off + ds.n;
            if (d32) {
                ds.isum = huge_prefix_i32(b) - huge_prefix_i32(a);
                printf("int32 x[%llu .. %llu): exact sum %lld\n", (unsigned long long)a,
                       (unsigned long long)b, (long long)ds.isum);
            } else {
                long double sa, sb, aa, ab;
                huge_prefix_f32(a, &sa, &aa);
                huge_prefix_f32(b, &sb, &ab);
                ref_exact_init(&ds.ref);
                ref_exact_add(&ds.ref, (double)(sb - sa)); /* small multiple of 1/2: exact */
                ds.abs_sum = ab - aa;
                printf("float32 x[%llu .. %llu): exact sum %.17g, sum|x| %.17Lg\n",
                       (unsigned long long)a, (unsigned long long)b, ref_exact_to_double(&ds.ref),
                       ds.abs_sum);
            }
            for (int m = 0; m < NMETHODS; m++) {
                if (!runs_here(m) || !set_method(m)) continue;
                double t0 = now_s();
                outcome o;
                if (sum_ok(&ds, m, 0, &o)) {
                    if (d32)
                        printf("  %-10s %lld (%d blocks, %.1f ms)\n", mname(m), (long long)o.bits,
                               o.info.blocks, 1e3 * (now_s() - t0));
                    else
                        printf("  %-10s %.17g (%d blocks, %.1f ms)\n", mname(m),
                               value_of_bits(o.bits, dt), o.info.blocks, 1e3 * (now_s() - t0));
                }
            }
        }
        dx = keep;
    }
    free(block);
    cuda_ok(cudaFree(d), "cudaFree 8.6 GB");
    reset_handle();
}
