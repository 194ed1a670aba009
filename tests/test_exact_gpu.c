/* test_exact_gpu.c — EXACT mode on the GPU (src/gpu/exact.cu): the GPU's bits equal the CPU
 * handle's (which test_exact_cpu.c checks against the big-integer oracle), and the oracle's
 * itself for the smaller cases.
 *
 *   test_exact_gpu          all checks; exits 77 (ctest: skipped) without CUDA or a GPU
 *   test_exact_gpu --quick  sizes <= 4097, no n > 2^31 case (for compute-sanitizer: racecheck
 *                           of sizes up to 70001 ran past 4 minutes on an H100)
 *   test_exact_gpu --timing also times exact against canonical at 2^28 (prints only)
 *
 * Every case: SUM of float32, float64, float16, bfloat16 (and narrowed), DOT of float32 and
 * float64, on the adversarial distributions of exact_data.h; x aligned and one element off 16
 * bytes (y off by another amount for DOT: element loads); the automatic grid and forced grids of
 * 1, 3 and 1000 blocks; repeated runs; device results poisoned before, bytes after the result
 * still poisoned; host results. Not --quick: n = 2^31 + 5 float32 against the CPU and a formula,
 * on the automatic grid and on forced grids of 1 and 3 blocks.
 * COOPREDUCE_TEST_SEED=S replays a run. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "coopreduce.h"
#include "ref_exact.h"
#include "util.h"

#include "gpu_util.h"

#ifndef COOPREDUCE_HAVE_CUDA
GPU_TEST_MAIN_WITHOUT_CUDA("test_exact_gpu")
#else
#include "exact_data.h"

static coopreduce_handle *gpu, *cpu;
static unsigned char *dx, *dy, *dout;
static int quick;

/* EXACT mode sums every float dtype (float_dtypes), DOT float32 and float64. */
static coopreduce_dtype dts[COOPREDUCE_DTYPE_COUNT];
static int ndts;

/* x (and y) host arrays of n elements; the GPU's bits against the CPU's. */
static void check_case(const char *what, coopreduce_op op, coopreduce_dtype dt, const void *x,
                       const void *y, uint64_t n)
{
    const size_t es = dt_size(dt);
    const int dot = op == COOPREDUCE_OP_DOT;
    for (int narrow = 0; narrow <= (dt == COOPREDUCE_FLOAT16 || dt == COOPREDUCE_BFLOAT16);
         narrow++) {
        unsigned char want[16], got[16];
        coopreduce_set_narrow_result(cpu, narrow);
        coopreduce_set_narrow_result(gpu, narrow);
        const size_t rs = dt == COOPREDUCE_FLOAT64 ? 8 : narrow ? 2 : 4;
        coopreduce_status s = coopreduce_reduce(op, x, y, want, n, dt, cpu, NULL);
        CHECK(s == COOPREDUCE_SUCCESS, "cpu %s: %s", what, coopreduce_last_error(cpu));
        for (int off = 0; off < 2; off++) {
            unsigned char *gx = dx + off * es, *gy = dy + (dot && off ? 2 * es : 0);
            if (n) {
                cudaMemcpy(gx, x, n * es, cudaMemcpyHostToDevice);
                if (dot) cudaMemcpy(gy, y, n * es, cudaMemcpyHostToDevice);
            }
            static const int grids[] = {0, 1, 3, 1000};
            for (int gi = 0; gi < 4; gi++) {
                if (gi && off && quick) continue;
                coopreduce_set_grid_blocks(gpu, grids[gi]);
                for (int rep = 0; rep < 2; rep++) {
                    cudaMemset(dout, POISON, 16);
                    if (rep == 1 && gi == 0)
                        s = coopreduce_reduce_to_host(op, gx, gy, got, n, dt, gpu, NULL);
                    else {
                        s = coopreduce_reduce(op, gx, gy, dout, n, dt, gpu, NULL);
                        cudaDeviceSynchronize();
                        cudaMemcpy(got, dout, 16, cudaMemcpyDeviceToHost);
                    }
                    char a[40], b[40];
                    hex_bytes(a, sizeof a, want, rs);
                    hex_bytes(b, sizeof b, got, rs);
                    CHECK(s == COOPREDUCE_SUCCESS && memcmp(want, got, rs) == 0 &&
                              (rep == 1 && gi == 0 ? 1 : got[rs] == POISON),
                          "%s %s %s n=%llu narrow=%d off=%d grid=%d rep=%d: status %d (%s), "
                          "gpu %s, cpu %s",
                          what, coopreduce_op_name(op), coopreduce_dtype_name(dt),
                          (unsigned long long)n, narrow, off, grids[gi], rep, (int)s,
                          s ? coopreduce_last_error(gpu) : "", b, a);
                }
            }
            coopreduce_set_grid_blocks(gpu, 0);
        }
    }
    coopreduce_set_narrow_result(cpu, 0);
    coopreduce_set_narrow_result(gpu, 0);
}

static void list(coopreduce_dtype dt, const char *what, const double *v, uint64_t n)
{
    unsigned char x[64];
    for (uint64_t i = 0; i < n; i++) store(dt, x, i, v[i]);
    check_case(what, COOPREDUCE_OP_SUM, dt, x, NULL, n);
}

/* n = 2^31 + 5 float32: v everywhere, 1e30 first, -1e30 last, 1 in the middle. */
static void big_case(void)
{
    const uint64_t n = (1ull << 31) + 5;
    float *big = NULL;
    if (cudaMalloc((void **)&big, n * 4) != cudaSuccess) {
        (void)cudaGetLastError();
        printf("note: no room for the n > 2^31 case; skipped\n");
        return;
    }
    cudaMemset(big, 0x3f, n * 4); /* 0x3f3f3f3f */
    const float ends[3] = {1e30f, 1.0f, -1e30f};
    cudaMemcpy(big, &ends[0], 4, cudaMemcpyHostToDevice);
    cudaMemcpy(big + n / 2, &ends[1], 4, cudaMemcpyHostToDevice);
    cudaMemcpy(big + n - 1, &ends[2], 4, cudaMemcpyHostToDevice);
    float g = 0, c = 0;
    coopreduce_status s = coopreduce_sum_to_host(big, &g, n, COOPREDUCE_FLOAT32, gpu, NULL);
    CHECK(s == COOPREDUCE_SUCCESS, "n > 2^31: %s", coopreduce_last_error(gpu));
    /* the formula: (n - 3) * m * 2^-24 + 1, m the integer significand of 0x3f3f3f3f */
    uint32_t u = 0x3f3f3f3fu;
    float v;
    memcpy(&v, &u, 4);
    const uint64_t m = (u & 0x7fffffu) | 0x800000u; /* v = m * 2^-24 (v in [0.5, 1)) */
    const unsigned __int128 S = (unsigned __int128)(n - 3) * m + (1u << 24);
    ref_exact r;
    ref_exact_init(&r);
    ref_exact_add(&r, ldexp((double)(uint64_t)(S >> 30), 6));
    ref_exact_add(&r, ldexp((double)(uint64_t)(S & ((1u << 30) - 1)), -24));
    const float want = ref_exact_to_float(&r);
    CHECK(memcmp(&g, &want, 4) == 0, "n > 2^31: gpu %a, exact %a", g, want);
    /* forced grids: one block (every lane runs many chunks, flushes and rounds) and three */
    for (int grid = 1; grid <= 3; grid += 2) {
        float f = 0;
        coopreduce_set_grid_blocks(gpu, grid);
        s = coopreduce_sum_to_host(big, &f, n, COOPREDUCE_FLOAT32, gpu, NULL);
        coopreduce_set_grid_blocks(gpu, 0);
        CHECK(s == COOPREDUCE_SUCCESS && memcmp(&f, &want, 4) == 0,
              "n > 2^31, grid %d: gpu %a, exact %a (%s)", grid, f, want,
              s ? coopreduce_last_error(gpu) : "");
    }
    float *host = malloc(n * 4);
    if (host) {
        cudaMemcpy(host, big, n * 4, cudaMemcpyDeviceToHost);
        s = coopreduce_sum(host, &c, n, COOPREDUCE_FLOAT32, cpu, NULL);
        CHECK(s == COOPREDUCE_SUCCESS && memcmp(&g, &c, 4) == 0, "n > 2^31: gpu %a, cpu %a", g, c);
        free(host);
    }
    cudaFree(big);
}

/* --timing: exact against canonical throughput at 2^28 (same buffer, same run); prints only. */
static void timing(void)
{
    const uint64_t n = 1u << 28;
    void *b = NULL, *o = NULL;
    if (cudaMalloc(&b, n * 8) != cudaSuccess || cudaMalloc(&o, 16) != cudaSuccess) return;
    float *h = malloc(n * 8);
    for (uint64_t i = 0; i < 2 * n; i++) h[i] = (float)unif();
    cudaMemcpy(b, h, n * 8, cudaMemcpyHostToDevice);
    for (uint64_t i = 0; i < n; i++) ((double *)h)[i] = unif();
    for (int d = 0; d < 3; d++) {
        const coopreduce_dtype dt = d == 1 ? COOPREDUCE_FLOAT64 : COOPREDUCE_FLOAT32;
        if (d == 1) cudaMemcpy(b, h, n * 8, cudaMemcpyHostToDevice);
        const coopreduce_op op = d == 2 ? COOPREDUCE_OP_DOT : COOPREDUCE_OP_SUM;
        const uint64_t nn = d == 2 ? n / 2 : n;
        float ms[2] = {0, 0};
        for (int m = 0; m < 2; m++) {
            coopreduce_set_mode(gpu, m ? COOPREDUCE_MODE_EXACT : COOPREDUCE_MODE_DETERMINISTIC);
            cudaEvent_t e0, e1;
            cudaEventCreate(&e0);
            cudaEventCreate(&e1);
            float best = 1e30f;
            for (int rep = 0; rep < 7; rep++) {
                cudaEventRecord(e0, NULL);
                for (int k = 0; k < 10; k++)
                    coopreduce_reduce(op, b, (char *)b + nn * 4, o, nn, dt, gpu, NULL);
                cudaEventRecord(e1, NULL);
                cudaEventSynchronize(e1);
                float t;
                cudaEventElapsedTime(&t, e0, e1);
                if (rep && t < best) best = t;
            }
            ms[m] = best / 10;
        }
        const double bytes = (double)nn * (dt == COOPREDUCE_FLOAT64 ? 8 : 4) * (d == 2 ? 2 : 1);
        printf("timing %s %s n=%llu: canonical %.1f us (%.0f GB/s), exact %.1f us (%.0f GB/s), "
               "exact/canonical throughput %.3f\n",
               coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)nn,
               ms[0] * 1e3, bytes / ms[0] / 1e6, ms[1] * 1e3, bytes / ms[1] / 1e6, ms[0] / ms[1]);
    }
    coopreduce_set_mode(gpu, COOPREDUCE_MODE_EXACT);
    free(h);
    cudaFree(b);
    cudaFree(o);
}

int main(int argc, char **argv)
{
    quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    coopreduce_gpu_props props;
    if (gpu_test_open("test_exact_gpu", &gpu, &props)) return 77;
    if (quick) printf("test_exact_gpu: --quick\n");
    test_seed_init("test_exact_gpu");
    coopreduce_create_cpu(&cpu, 0);
    coopreduce_set_mode(gpu, COOPREDUCE_MODE_EXACT);
    coopreduce_set_mode(cpu, COOPREDUCE_MODE_EXACT);
    const uint64_t max_n = quick ? 5000 : (1u << 24) + 1;
    if (cudaMalloc((void **)&dx, max_n * 8 + 64) != cudaSuccess ||
        cudaMalloc((void **)&dy, max_n * 8 + 64) != cudaSuccess ||
        cudaMalloc((void **)&dout, 64) != cudaSuccess) {
        printf("cannot allocate device memory\n");
        return 1;
    }
    void *x = malloc(max_n * 8), *y = malloc(max_n * 8);

    ndts = float_dtypes(dts);
    for (int d = 0; d < ndts; d++) {
        const coopreduce_dtype dt = dts[d];
        const double H = dt == COOPREDUCE_FLOAT16 ? 60000.0 : 1e30;
        const double c1[] = {H, 1, -H}, z1[] = {-0.0, -0.0}, z2[] = {-0.0, 0.0};
        const double s1[] = {1, NAN, 2}, s2[] = {INFINITY, 1}, s3[] = {INFINITY, -INFINITY};
        const double s4[] = {-INFINITY, 5, -INFINITY};
        list(dt, "1e30 1 -1e30", c1, 3);
        list(dt, "all -0", z1, 2);
        list(dt, "-0 +0", z2, 2);
        list(dt, "empty", z1, 0);
        list(dt, "NaN", s1, 3);
        list(dt, "+inf", s2, 2);
        list(dt, "+inf -inf", s3, 2);
        list(dt, "-inf", s4, 3);
    }
    {
        const double t1[] = {1.0, 0x1p-24, 0x1p-149}, t2[] = {1.0, 0x1p-53, 0x1p-1074};
        const double o1[] = {1.7976931348623157e308, 0x1p970},
                     o2[] = {3.4028234663852886e38, 0x1p103};
        list(COOPREDUCE_FLOAT32, "tie + subnormal", t1, 3);
        list(COOPREDUCE_FLOAT64, "tie + 2^-1074", t2, 3);
        list(COOPREDUCE_FLOAT64, "overflow on a tie", o1, 2);
        list(COOPREDUCE_FLOAT32, "overflow on a tie", o2, 2);
        const double xd[] = {1e300, -1e300, 0x1p-1000, 3, 0x1p-600, -0.0, INFINITY};
        const double yd[] = {1e300, 1e300, 0x1p-1000, 0x1p-1074, 0x1p-600, 5, 0.0};
        check_case("huge and tiny products", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xd, yd, 6);
        check_case("inf * 0", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, xd, yd, 7);
        /* The float32 dot's window of digits at both ends: the smallest product 2^-298 breaks
         * the tie of 2^-148 + 2^-150 (to 3 * 2^-149, not 2^-148), beside the largest products
         * (near 2^256) cancelling, zeros of both signs and an element past the units. */
        const float xf[] = {0x1p-149f, 0x1p-149f, 0x1p-149f, FLT_MAX,  -FLT_MAX,
                            -0.0f,     0.0f,      FLT_MAX,   -FLT_MAX, 0x1p-149f};
        const float yf[] = {2.0f, 0.5f,  0x1p-149f, FLT_MAX, FLT_MAX,
                            5.0f, -0.0f, FLT_MAX,   FLT_MAX, 0.0f};
        check_case("float32 products at the window's ends", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT32,
                   xf, yf, 10);
        check_case("float32 products at the window's ends", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT32,
                   xf, yf, 3);
        check_case("float32 largest products", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT32, xf + 3,
                   yf + 3, 2);
        check_case("float32 largest product", COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT32, xf + 3, yf + 3,
                   1);
    }
    static const uint64_t sizes[] = {1,    2,    5,     31,    33,      97,
                                     1009, 4097, 65537, 70001, 1048577, (1u << 24) + 1};
    for (int si = 0; si < 12; si++) {
        const uint64_t n = sizes[si];
        if (n > max_n) continue;
        for (int d = 0; d < ndts; d++)
            for (int kind = 0; kind < ND; kind++) {
                if (n > 70001 && kind != D_CANCEL && kind != D_FULL && kind != D_SIGNED &&
                    kind != D_RIPPLE && kind != D_HUGE)
                    continue;
                sum_and_dot(check_case, kind, dts[d], x, y, n);
            }
    }
    /* A lane's top digit: float64 values near the largest finite magnitude, two in three
     * positive, move it by 2^50 or so per three elements; on one block (check_case's grid of 1:
     * 64 lanes, 2^13 to 2^15 elements each) one of these sizes takes it past 2^63 but not past
     * 2^64, where a wrap would read as a negative sum. */
    for (uint64_t n = 1u << 19; n <= (1u << 21) && n <= max_n; n *= 2) {
        gen(D_HUGE, COOPREDUCE_FLOAT64, x, n);
        check_case("huge", COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64, x, NULL, n);
    }
    /* one NaN / infinity somewhere in a long array */
    for (int d = 0; d < ndts; d++) {
        const uint64_t n = quick ? 5000 : 300007;
        gen(D_SIGNED, dts[d], x, n);
        store(dts[d], x, n / 3, INFINITY);
        check_case("one +inf", COOPREDUCE_OP_SUM, dts[d], x, NULL, n);
        store(dts[d], x, n - 2, NAN);
        check_case("inf and NaN", COOPREDUCE_OP_SUM, dts[d], x, NULL, n);
    }
    /* Infinities and NaNs inside the 16-byte units, where the flat loops see them once per
     * batch and take back what they added: several in one batch (adjacent elements), in either
     * factor of a dot, inf * 0, and values that cancel around them. */
    {
        const uint64_t n = quick ? 5000 : 300007;
        for (int d = 0; d < ndts; d++) {
            gen(D_SIGNED, dts[d], x, n);
            store(dts[d], x, n / 3, INFINITY);
            store(dts[d], x, n / 3 + 1, -INFINITY);
            check_case("+inf -inf adjacent", COOPREDUCE_OP_SUM, dts[d], x, NULL, n);
            gen(D_SIGNED, dts[d], x, n);
            store(dts[d], x, n / 2, -INFINITY);
            store(dts[d], x, n / 2 + 3, -INFINITY);
            check_case("two -inf in a batch", COOPREDUCE_OP_SUM, dts[d], x, NULL, n);
        }
        static const coopreduce_dtype ddt[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64};
        for (int d = 0; d < 2; d++) {
            const coopreduce_dtype dt = ddt[d];
            gen(D_FULL, dt, x, n);
            gen(D_SIGNED, dt, y, n);
            store(dt, x, n / 3, INFINITY);
            store(dt, y, n / 3, 2.0);
            check_case("dot, +inf * 2", COOPREDUCE_OP_DOT, dt, x, y, n);
            store(dt, y, n / 3 + 5, -INFINITY);
            store(dt, x, n / 3 + 5, 3.0);
            check_case("dot, +inf and -inf products", COOPREDUCE_OP_DOT, dt, x, y, n);
            gen(D_FULL, dt, x, n);
            gen(D_FULL, dt, y, n);
            store(dt, x, n / 2, INFINITY);
            store(dt, y, n / 2, 0.0);
            check_case("dot, inf * 0", COOPREDUCE_OP_DOT, dt, x, y, n);
            gen(D_FULL, dt, x, n);
            store(dt, y, 2 * n / 3, NAN);
            check_case("dot, NaN in y", COOPREDUCE_OP_DOT, dt, x, y, n);
            gen(D_FULL, dt, x, n);
            gen(D_FULL, dt, y, n);
            store(dt, x, n / 4, -INFINITY);
            store(dt, y, n / 4, -1.0);
            check_case("dot, -inf * -1", COOPREDUCE_OP_DOT, dt, x, y, n);
        }
    }
    /* The largest finite magnitude in the first half, minus the one below it in the second:
     * each lane's bin of the top exponents fills with hundreds of one sign (grids of 1 and 3
     * blocks), and only a small exact sum remains (bfloat16's float bins overflow without their
     * 2^-16 scale). */
    {
        const uint64_t n = quick ? 5000 : 300007;
        for (int d = 0; d < ndts; d++) {
            const coopreduce_dtype dt = dts[d];
            const double top = dt == COOPREDUCE_FLOAT64    ? 0x1.fffffffffffffp1023
                               : dt == COOPREDUCE_FLOAT16  ? 65504.0
                               : dt == COOPREDUCE_BFLOAT16 ? 0x1.fep127
                                                           : 0x1.fffffep127;
            const double below = dt == COOPREDUCE_FLOAT64    ? 0x1.ffffffffffffep1023
                                 : dt == COOPREDUCE_FLOAT16  ? 65472.0
                                 : dt == COOPREDUCE_BFLOAT16 ? 0x1.fcp127
                                                             : 0x1.fffffcp127;
            for (uint64_t i = 0; i < n; i++) store(dt, x, i, i >= n / 2 ? -below : top);
            check_case("top, then -below", COOPREDUCE_OP_SUM, dt, x, NULL, n);
        }
    }
    if (!quick) big_case();
    if (argc > 1 && strcmp(argv[argc - 1], "--timing") == 0) timing();
    free(x);
    free(y);
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dout);
    coopreduce_destroy(gpu);
    coopreduce_destroy(cpu);
    return check_summary("test_exact_gpu");
}
#endif
