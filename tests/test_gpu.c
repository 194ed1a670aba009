/* test_gpu.c — the GPU path gives the CPU path's bits (canonical order v1), whatever the grid.
 *
 *   test_gpu                       all checks; exits 77 (ctest: skipped) without a usable GPU
 *   test_gpu --quick               no > 2^31 case, fewer random cases (for compute-sanitizer)
 *   test_gpu --write-golden FILE   also writes the golden-bits file tests/golden_bits.txt holds
 *
 * Every GPU result is compared bit for bit with the CPU handle's result on the same data; the
 * CPU path is itself checked against an exact reference and an independent implementation in
 * test_sum_*.c. Outputs are poisoned before every GPU run. Seeds are fresh each run (printed;
 * COOPREDUCE_TEST_SEED=S replays). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "coopreduce.h"
#include "gen.h"
#include "gpu_util.h"
#include "util.h"

#ifndef COOPREDUCE_HAVE_CUDA
GPU_TEST_MAIN_WITHOUT_CUDA("test_gpu")
#else

static coopreduce_handle *gpu, *cpu;
static void *dx, *dout;           /* device input (max size + 16 bytes), device result */
static void *hx;                  /* host copy of the input */
static uint64_t cap;              /* elements of float64 the buffers hold */
static int quick_mode;            /* --quick: what the sanitizers run */
static uint64_t max_n = 33554467; /* --quick lowers it: sanitizers are slow */

/* GPU result bits (result poisoned first) of x = dx + offset_elems, n elements. */
static int gpu_sum_bits(uint64_t n, coopreduce_dtype dt, uint64_t offset_elems, uint64_t *bits)
{
    size_t es = coopreduce_dtype_size(dt);
    if (!cuda_ok(cudaMemset(dout, POISON, 16), "poison")) return -1;
    coopreduce_status s = coopreduce_sum((char *)dx + offset_elems * es, dout, n, dt, gpu, NULL);
    if (!CHECK(s == COOPREDUCE_SUCCESS, "coopreduce_sum(n=%llu): %s", (unsigned long long)n,
               coopreduce_last_error(gpu)))
        return -1;
    *bits = 0;
    if (!cuda_ok(cudaMemcpy(bits, dout, es, cudaMemcpyDeviceToHost), "copy result")) return -1;
    return 0;
}

static uint64_t cpu_sum_bits(const void *x, uint64_t n, coopreduce_dtype dt)
{
    uint64_t bits = 0;
    coopreduce_status s = coopreduce_sum(x, &bits, n, dt, cpu, NULL);
    CHECK(s == COOPREDUCE_SUCCESS, "cpu sum: %s", coopreduce_last_error(cpu));
    return bits;
}

/* Fills the host and device buffers with n elements (at element offset `off`). */
static int load(uint64_t n, coopreduce_dtype dt, cr_gen_kind kind, uint64_t seed, uint64_t off)
{
    size_t es = coopreduce_dtype_size(dt);
    cr_gen_fill((char *)hx + off * es, 0, n, dt, kind, seed, gen_threads());
    return cuda_ok(cudaMemcpy((char *)dx + off * es, (char *)hx + off * es, n * es,
                              cudaMemcpyHostToDevice),
                   "upload")
               ? 0
               : -1;
}

static int compare_case(uint64_t n, coopreduce_dtype dt, cr_gen_kind kind, uint64_t seed,
                        uint64_t off, uint64_t *bits_out)
{
    size_t es = coopreduce_dtype_size(dt);
    uint64_t g;
    if (load(n, dt, kind, seed, off) || gpu_sum_bits(n, dt, off, &g)) return -1;
    uint64_t c = cpu_sum_bits((char *)hx + off * es, n, dt);
    CHECK(g == c, "%s %s seed=%llu n=%llu offset=%llu: gpu 0x%llx != cpu 0x%llx",
          coopreduce_dtype_name(dt), cr_gen_name(kind), (unsigned long long)seed,
          (unsigned long long)n, (unsigned long long)off, (unsigned long long)g,
          (unsigned long long)c);
    if (bits_out) *bits_out = g;
    return g == c ? 0 : -1;
}

static const uint64_t interesting[] = {1,
                                       2,
                                       3,
                                       31,
                                       32,
                                       33,
                                       127,
                                       128,
                                       129,
                                       2047,
                                       2048,
                                       2049,
                                       4093,
                                       4095,
                                       4096,
                                       4097,
                                       8191,
                                       8192,
                                       8193,
                                       65521,
                                       65535,
                                       65536,
                                       65537,
                                       1000003,
                                       (1u << 20) - 1,
                                       1u << 20,
                                       (1u << 20) + 1,
                                       2048ull * 2048 - 1,
                                       2048ull * 2048,
                                       2048ull * 2048 + 1,
                                       (1u << 24) - 1,
                                       (1u << 24) + 1,
                                       4096ull * 4096 + 4096 + 1,
                                       33554467};

static void random_cases(int count)
{
    const int ni = (int)(sizeof interesting / sizeof interesting[0]);
    int fails = 0;
    for (int i = 0; i < count && fails < 5; i++) {
        coopreduce_dtype dt = (coopreduce_dtype)(rnd() & 1);
        cr_gen_kind kind = (cr_gen_kind)(1 + rnd() % 3);
        uint64_t n;
        if (i < 2 * ni)
            n = interesting[i % ni];
        else
            n = 1 + (rnd() >> (64 - 25 + (unsigned)(rnd() % 24))); /* log-uniform up to 2^25 */
        if (n > max_n) n = max_n;
        if (compare_case(n, dt, kind, rnd(), 0, NULL)) fails++;
    }
}

static void grid_independence(void)
{
    static const int grids[] = {1, 2, 3, 7, 64, 131, 1000, 0};
    static const uint64_t sizes[] = {4097, 1000003, (1u << 22) + 17, 33554467};
    for (int d = 0; d < 2; d++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            coopreduce_dtype dt = (coopreduce_dtype)d;
            uint64_t n = sizes[s], ref, bits;
            if (n > max_n) continue;
            if (load(n, dt, CR_GEN_NORMAL, rnd(), 0)) return;
            ref = cpu_sum_bits(hx, n, dt);
            for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
                coopreduce_set_grid_blocks(gpu, grids[g]);
                if (gpu_sum_bits(n, dt, 0, &bits)) break;
                CHECK(bits == ref, "%s n=%llu blocks=%d: 0x%llx != cpu 0x%llx",
                      coopreduce_dtype_name(dt), (unsigned long long)n, grids[g],
                      (unsigned long long)bits, (unsigned long long)ref);
            }
            coopreduce_set_grid_blocks(gpu, 0);
        }
}

static void repeated_runs(int runs)
{
    for (int d = 0; d < 2; d++) {
        coopreduce_dtype dt = (coopreduce_dtype)d;
        uint64_t n = (1u << 24) + 3, first = 0, bits;
        if (n > max_n) n = max_n;
        if (load(n, dt, CR_GEN_SIGNED, rnd(), 0)) return;
        int distinct = 0;
        for (int r = 0; r < runs; r++) {
            if (gpu_sum_bits(n, dt, 0, &bits)) return;
            if (r == 0)
                first = bits;
            else if (bits != first)
                distinct++;
        }
        CHECK(distinct == 0, "%s: %d of %d runs differ from the first", coopreduce_dtype_name(dt),
              distinct, runs);
        CHECK(first == cpu_sum_bits(hx, n, dt), "%s: repeated runs differ from the CPU",
              coopreduce_dtype_name(dt));
    }
}

static void misaligned(void)
{
    /* dx is 256-byte aligned; +1 element is 4 (float32) or 8 (float64) bytes off 16. */
    static const uint64_t sizes[] = {1, 5, 4096, 4097, 1000003, (1u << 22) + 5};
    for (int d = 0; d < 2; d++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            compare_case(sizes[s], (coopreduce_dtype)d, CR_GEN_UNIFORM, rnd(), 1, NULL);
    for (uint64_t off = 2; off < 4; off++)
        compare_case(123457, COOPREDUCE_FLOAT32, CR_GEN_NORMAL, rnd(), off, NULL);
}

static void specials(void)
{
    /* NaN payloads and signs vary; the result is the canonical NaN on both paths. */
    float *f = hx;
    uint64_t n = 10000, bits;
    for (int pos = 0; pos < 3; pos++) {
        cr_gen_fill(f, 0, n, COOPREDUCE_FLOAT32, CR_GEN_UNIFORM, rnd(), 1);
        uint32_t nan_bits = pos == 0 ? 0xffc00001u : (pos == 1 ? 0x7f800001u : 0x7fc12345u);
        memcpy(&f[pos == 0 ? 0 : (pos == 1 ? 5000 : n - 1)], &nan_bits, 4);
        if (!cuda_ok(cudaMemcpy(dx, f, n * 4, cudaMemcpyHostToDevice), "upload")) return;
        if (gpu_sum_bits(n, COOPREDUCE_FLOAT32, 0, &bits)) return;
        CHECK(bits == 0x7fc00000u, "NaN at %d: 0x%llx", pos, (unsigned long long)bits);
    }
    /* -0.0 alone, and 5000 of them: -0.0. */
    for (uint64_t m = 1; m <= 5000; m += 4999) {
        for (uint64_t i = 0; i < m; i++) f[i] = -0.0f;
        cudaMemcpy(dx, f, m * 4, cudaMemcpyHostToDevice);
        if (gpu_sum_bits(m, COOPREDUCE_FLOAT32, 0, &bits)) return;
        CHECK(bits == 0x80000000u, "sum of %llu x -0.0: 0x%llx", (unsigned long long)m,
              (unsigned long long)bits);
    }
    /* +inf in one chunk, -inf in another: NaN; +inf alone: +inf. */
    for (uint64_t i = 0; i < 9000; i++) f[i] = 1.0f;
    f[10] = __builtin_inff();
    cudaMemcpy(dx, f, 9000 * 4, cudaMemcpyHostToDevice);
    if (gpu_sum_bits(9000, COOPREDUCE_FLOAT32, 0, &bits)) return;
    CHECK(bits == 0x7f800000u, "+inf: 0x%llx", (unsigned long long)bits);
    f[8500] = -__builtin_inff();
    cudaMemcpy(dx, f, 9000 * 4, cudaMemcpyHostToDevice);
    if (gpu_sum_bits(9000, COOPREDUCE_FLOAT32, 0, &bits)) return;
    CHECK(bits == 0x7fc00000u, "+inf with -inf: 0x%llx", (unsigned long long)bits);
    /* n = 0: +0.0 (poisoned result overwritten). */
    if (gpu_sum_bits(0, COOPREDUCE_FLOAT64, 0, &bits)) return;
    CHECK(bits == 0, "empty sum: 0x%llx", (unsigned long long)bits);
}

static void to_host(void)
{
    static const uint64_t sizes[] = {0, 1, 4096, 1u << 20, 5000011};
    for (int d = 0; d < 2; d++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            coopreduce_dtype dt = (coopreduce_dtype)d;
            uint64_t n = sizes[s], host_bits;
            if (load(n, dt, CR_GEN_NORMAL, rnd(), 0)) return;
            host_bits = d ? 0xA5A5A5A5A5A5A5A5ull : 0xA5A5A5A5ull; /* poison */
            coopreduce_status st = coopreduce_sum_to_host(dx, &host_bits, n, dt, gpu, NULL);
            CHECK(st == COOPREDUCE_SUCCESS, "sum_to_host: %s", coopreduce_last_error(gpu));
            uint64_t c = cpu_sum_bits(hx, n, dt);
            CHECK(host_bits == c, "sum_to_host %s n=%llu: 0x%llx != cpu 0x%llx",
                  coopreduce_dtype_name(dt), (unsigned long long)n, (unsigned long long)host_bits,
                  (unsigned long long)c);
        }
}

static void bad_input(void)
{
    float host[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint32_t res = 0xA5A5A5A5u;
    coopreduce_status s = coopreduce_sum(host, dout, 8, COOPREDUCE_FLOAT32, gpu, NULL);
    CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "host input: status %d", (int)s);
    CHECK(strlen(coopreduce_last_error(gpu)) > 0, "host input: no message");
    s = coopreduce_sum(dx, &res, 8, COOPREDUCE_FLOAT32, gpu, NULL);
    CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "host result: status %d", (int)s);
    CHECK(res == 0xA5A5A5A5u, "host result written on failure");
    s = coopreduce_sum(NULL, dout, 8, COOPREDUCE_FLOAT32, gpu, NULL);
    CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "NULL input: status %d", (int)s);
    s = coopreduce_sum((char *)dx + 1, dout, 8, COOPREDUCE_FLOAT32, gpu, NULL);
    CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "1-byte misaligned input: status %d", (int)s);
    s = coopreduce_sum(dx, dout, 8, (coopreduce_dtype)42, gpu, NULL);
    CHECK(s == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "unknown dtype: status %d", (int)s);
    s = coopreduce_sum_to_host(host, &res, 8, COOPREDUCE_FLOAT32, gpu, NULL);
    CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "sum_to_host of host input: status %d", (int)s);
    s = coopreduce_set_threads(gpu, 2);
    CHECK(s == COOPREDUCE_ERROR_WRONG_DEVICE, "set_threads on GPU handle: status %d", (int)s);
    int count = 0;
    coopreduce_gpu_count(&count);
    coopreduce_handle *h = NULL;
    s = coopreduce_create_gpu(&h, count);
    CHECK(s == COOPREDUCE_ERROR_NO_GPU && h == NULL, "create_gpu(%d): status %d", count, (int)s);
    s = coopreduce_create_gpu(&h, -1);
    CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT && h == NULL, "create_gpu(-1): status %d", (int)s);
    /* A workspace that cannot be had: the failure is reported, and must not stick to the next
     * call (a pending CUDA error once made a successful launch report out-of-memory). Not under
     * --quick: compute-sanitizer, which runs --quick, counts the provoked cudaMalloc failure as
     * an error. */
    if (!quick_mode) {
        s = coopreduce_reserve(gpu, 1ull << 50, COOPREDUCE_FLOAT32);
        CHECK(s == COOPREDUCE_ERROR_OUT_OF_MEMORY, "reserve(2^50): status %d", (int)s);
    }
    s = coopreduce_reserve(gpu, UINT64_MAX, COOPREDUCE_FLOAT64);
    CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "reserve(UINT64_MAX): status %d", (int)s);
    {
        uint64_t after = 0;
        CHECK(compare_case(1u << 20, COOPREDUCE_FLOAT32, CR_GEN_UNIFORM, rnd(), 0, &after) == 0,
              "the first sum after a failed reserve");
    }
    /* The handle still works after all those failures. */
    uint64_t bits;
    compare_case(4097, COOPREDUCE_FLOAT32, CR_GEN_UNIFORM, rnd(), 0, &bits);
}

/* Inputs the GPU can read that are not cudaMalloc memory: managed memory, and pinned host
 * memory mapped into the device's address space. Pinned memory is never cached as "checked":
 * once freed, its addresses can come back as plain host memory, which must be refused. */
static void other_memory(void)
{
    const uint64_t n = 1000003;
    float *m = NULL, *pinned = NULL;
    uint64_t bits = 0;
    if (cuda_ok(cudaMallocManaged((void **)&m, n * sizeof(float), cudaMemAttachGlobal),
                "cudaMallocManaged")) {
        cr_gen_fill(m, 0, n, COOPREDUCE_FLOAT32, CR_GEN_NORMAL, rnd(), gen_threads());
        uint64_t c = cpu_sum_bits(m, n, COOPREDUCE_FLOAT32);
        cudaMemset(dout, POISON, 16);
        coopreduce_status s = coopreduce_sum(m, dout, n, COOPREDUCE_FLOAT32, gpu, NULL);
        CHECK(s == COOPREDUCE_SUCCESS, "managed input: %s", coopreduce_last_error(gpu));
        cuda_ok(cudaMemcpy(&bits, dout, 4, cudaMemcpyDeviceToHost), "copy result");
        CHECK(bits == c, "managed input: gpu 0x%llx != cpu 0x%llx", (unsigned long long)bits,
              (unsigned long long)c);
        cudaFree(m);
    }
    if (cuda_ok(cudaHostAlloc((void **)&pinned, n * sizeof(float), cudaHostAllocMapped),
                "cudaHostAlloc")) {
        cr_gen_fill(pinned, 0, n, COOPREDUCE_FLOAT32, CR_GEN_SIGNED, rnd(), gen_threads());
        uint64_t c = cpu_sum_bits(pinned, n, COOPREDUCE_FLOAT32);
        bits = 0;
        coopreduce_status s =
            coopreduce_sum_to_host(pinned, &bits, n, COOPREDUCE_FLOAT32, gpu, NULL);
        CHECK(s == COOPREDUCE_SUCCESS, "mapped pinned input: %s", coopreduce_last_error(gpu));
        CHECK(bits == c, "mapped pinned input: gpu 0x%llx != cpu 0x%llx", (unsigned long long)bits,
              (unsigned long long)c);
        cudaFreeHost(pinned);
        /* The same address, now (probably) plain host memory again: it must be refused if it
         * is not registered, whatever was accepted there before. */
        struct cudaPointerAttributes a;
        if (cudaPointerGetAttributes(&a, pinned) == cudaSuccess &&
            a.type == cudaMemoryTypeUnregistered) {
            s = coopreduce_sum(pinned, dout, 16, COOPREDUCE_FLOAT32, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY,
                  "freed pinned memory accepted: status %d", (int)s);
        }
        (void)cudaGetLastError();
    }
}

typedef struct {
    uint64_t n;
    coopreduce_dtype dt;
} sum_call;

static int enqueue_sum(void *arg, cudaStream_t st)
{
    const sum_call *c = arg;
    return CHECK(coopreduce_sum(dx, dout, c->n, c->dt, gpu, st) == COOPREDUCE_SUCCESS,
                 "captured sum: %s", coopreduce_last_error(gpu));
}

/* A sum captured in a CUDA graph and replayed with new data each time: the launch tags of the
 * fenceless hand-off live on the device (canonical.cu), so every replay reads its own partials,
 * never the previous replay's. Sizes: the mid-size path, the ordinary one, and three levels. */
static void graph_replay(void)
{
    static const uint64_t sizes[] = {300007, 5000011, 16777216 + 4096 * 3 + 5};
    cudaStream_t st = NULL;
    if (!cuda_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream")) return;
    for (int si = 0; si < 3; si++) {
        const uint64_t n = sizes[si] < max_n ? sizes[si] : max_n;
        const coopreduce_dtype dt = si == 1 ? COOPREDUCE_FLOAT64 : COOPREDUCE_FLOAT32;
        const size_t es = coopreduce_dtype_size(dt);
        cudaGraphExec_t exec = NULL;
        if (coopreduce_reserve(gpu, n, dt) != COOPREDUCE_SUCCESS) {
            CHECK(0, "reserve: %s", coopreduce_last_error(gpu));
            continue;
        }
        if (load(n, dt, CR_GEN_NORMAL, rnd(), 0)) continue; /* the pointer check, before capture */
        sum_call call = {n, dt};
        if (!gpu_capture(st, cudaStreamCaptureModeRelaxed, enqueue_sum, &call, &exec)) continue;
        for (int r = 0; r < 8; r++) {
            const cr_gen_kind kind = (cr_gen_kind)(1 + r % 3);
            uint64_t bits = 0;
            /* st does not wait for the legacy stream: the upload and the poison must be done
             * before the replay starts. */
            if (load(n, dt, kind, rnd(), 0) || !cuda_ok(cudaMemset(dout, POISON, 16), "poison") ||
                !cuda_ok(cudaDeviceSynchronize(), "sync before replay") ||
                !cuda_ok(cudaGraphLaunch(exec, st), "graph launch") ||
                !cuda_ok(cudaStreamSynchronize(st), "sync") ||
                !cuda_ok(cudaMemcpy(&bits, dout, es, cudaMemcpyDeviceToHost), "copy"))
                break;
            uint64_t c = cpu_sum_bits(hx, n, dt);
            CHECK(bits == c, "graph replay %d, %s n=%llu: gpu 0x%llx != cpu 0x%llx", r,
                  coopreduce_dtype_name(dt), (unsigned long long)n, (unsigned long long)bits,
                  (unsigned long long)c);
            /* An ordinary call between replays moves the device epoch along too. */
            if (r == 3) compare_case(n / 3 + 1, dt, CR_GEN_UNIFORM, rnd(), 0, NULL);
        }
        cudaGraphExecDestroy(exec);
    }
    cudaStreamDestroy(st);
}

/* Two handles, two streams, sums enqueued alternately without synchronising in between: each
 * handle's workspace is its own, so both give the CPU's bits. */
static void two_streams(void)
{
    coopreduce_handle *h2 = NULL;
    cudaStream_t s1 = NULL, s2 = NULL;
    void *out2 = NULL, *x2 = NULL;
    const uint64_t n1 = (1u << 22) + 3, n2 = 3000017;
    if (coopreduce_create_gpu(&h2, 0) != COOPREDUCE_SUCCESS) {
        CHECK(0, "second handle: %s", coopreduce_last_error(NULL));
        return;
    }
    if (cuda_ok(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), "stream") &&
        cuda_ok(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), "stream") &&
        cuda_ok(cudaMalloc(&out2, 16 * 8), "cudaMalloc") &&
        cuda_ok(cudaMalloc(&x2, n2 * sizeof(double)), "cudaMalloc") &&
        load(n1, COOPREDUCE_FLOAT32, CR_GEN_NORMAL, rnd(), 0) == 0) {
        uint64_t c1 = cpu_sum_bits(hx, n1, COOPREDUCE_FLOAT32);
        double *h2x = malloc(n2 * sizeof(double));
        if (h2x) {
            cr_gen_fill(h2x, 0, n2, COOPREDUCE_FLOAT64, CR_GEN_SIGNED, rnd(), gen_threads());
            uint64_t c2 = cpu_sum_bits(h2x, n2, COOPREDUCE_FLOAT64);
            cudaMemcpy(x2, h2x, n2 * sizeof(double), cudaMemcpyHostToDevice);
            cudaMemset(dout, POISON, 16);
            cudaMemset(out2, POISON, 16 * 8);
            /* s1 and s2 do not wait for the legacy stream's upload and poison */
            cuda_ok(cudaDeviceSynchronize(), "sync after upload");
            for (int i = 0; i < 16; i++) {
                CHECK(coopreduce_sum(dx, dout, n1, COOPREDUCE_FLOAT32, gpu, s1) ==
                          COOPREDUCE_SUCCESS,
                      "stream 1: %s", coopreduce_last_error(gpu));
                CHECK(coopreduce_sum(x2, (double *)out2 + i, n2, COOPREDUCE_FLOAT64, h2, s2) ==
                          COOPREDUCE_SUCCESS,
                      "stream 2: %s", coopreduce_last_error(h2));
            }
            cuda_ok(cudaDeviceSynchronize(), "synchronise");
            uint64_t g1 = 0, g2[16];
            cudaMemcpy(&g1, dout, 4, cudaMemcpyDeviceToHost);
            cudaMemcpy(g2, out2, sizeof g2, cudaMemcpyDeviceToHost);
            CHECK(g1 == c1, "stream 1: 0x%llx != cpu 0x%llx", (unsigned long long)g1,
                  (unsigned long long)c1);
            for (int i = 0; i < 16; i++)
                CHECK(g2[i] == c2, "stream 2, call %d: 0x%llx != cpu 0x%llx", i,
                      (unsigned long long)g2[i], (unsigned long long)c2);
            free(h2x);
        }
    }
    if (s1) cudaStreamDestroy(s1);
    if (s2) cudaStreamDestroy(s2);
    if (out2) cudaFree(out2);
    if (x2) cudaFree(x2);
    CHECK(coopreduce_destroy(h2) == COOPREDUCE_SUCCESS, "destroy second handle");
}

/* More than 2^31 elements: 64-bit indexing on the device. Needs ~9 GB of device memory and
 * twice that on the host. */
static void huge(void)
{
    uint64_t n = (1ull << 31) + 12345;
    size_t bytes = n * 4;
    void *d = NULL, *h = NULL;
    if (!gpu_room_for(bytes)) return;
    h = malloc(bytes);
    if (!h) {
        printf("SKIP: > 2^31 case: cannot allocate %.1f GB of host memory\n", bytes / 1e9);
        return;
    }
    if (cuda_ok(cudaMalloc(&d, bytes), "cudaMalloc 8.6 GB")) {
        uint64_t seed = rnd(), g = 0, c;
        cr_gen_fill(h, 0, n, COOPREDUCE_FLOAT32, CR_GEN_SIGNED, seed, gen_threads());
        if (cuda_ok(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), "upload 8.6 GB")) {
            cudaMemset(dout, POISON, 16);
            coopreduce_status s = coopreduce_sum(d, dout, n, COOPREDUCE_FLOAT32, gpu, NULL);
            CHECK(s == COOPREDUCE_SUCCESS, "huge sum: %s", coopreduce_last_error(gpu));
            cuda_ok(cudaMemcpy(&g, dout, 4, cudaMemcpyDeviceToHost), "copy result");
            c = cpu_sum_bits(h, n, COOPREDUCE_FLOAT32);
            CHECK(g == c, "n = 2^31 + 12345 (seed %llu): gpu 0x%llx != cpu 0x%llx",
                  (unsigned long long)seed, (unsigned long long)g, (unsigned long long)c);
            printf("n = 2^31 + 12345: gpu 0x%08llx cpu 0x%08llx\n", (unsigned long long)g,
                   (unsigned long long)c);
        }
        cudaFree(d);
    }
    free(h);
}

/* The golden cases: fixed seeds and sizes whose GPU bits are committed, and which the CPU must
 * reproduce in CI (test_golden.c). */
static int write_golden(const char *path, coopreduce_gpu_props *p)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        printf("cannot write %s\n", path);
        return -1;
    }
    fprintf(f, "# Golden bits of canonical order v1, produced by the GPU path on %s (sm_%d%d)\n",
            p->name, p->cc_major, p->cc_minor);
    fprintf(f, "# by `test_gpu --write-golden`; test_golden reproduces them on the CPU.\n");
    fprintf(f, "# dtype kind seed n bits\n");
    static const uint64_t sizes[] = {1, 7, 2048, 4096, 4097, 65537, 1000003, 16777217};
    static const char *kinds[] = {"uniform", "normal", "signed"};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 3; k++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                coopreduce_dtype dt = (coopreduce_dtype)d;
                cr_gen_kind kind;
                cr_gen_parse(kinds[k], &kind);
                uint64_t seed = 1000 + 10 * k + s, bits = 0;
                if (compare_case(sizes[s], dt, kind, seed, 0, &bits)) {
                    fclose(f);
                    return -1;
                }
                fprintf(f, "%s %s %llu %llu 0x%0*llx\n", d ? "f64" : "f32", kinds[k],
                        (unsigned long long)seed, (unsigned long long)sizes[s], d ? 16 : 8,
                        (unsigned long long)bits);
            }
    fclose(f);
    printf("wrote %s\n", path);
    return 0;
}

int main(int argc, char **argv)
{
    int quick = 0;
    const char *golden = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = quick_mode = 1, max_n = (1u << 22) + 17;
        else if (!strcmp(argv[i], "--write-golden") && i + 1 < argc)
            golden = argv[++i];
        else {
            printf("usage: test_gpu [--quick] [--write-golden FILE]\n");
            return 2;
        }
    }
    coopreduce_gpu_props p;
    if (gpu_test_open("test_gpu", &gpu, &p)) return 77;
    test_seed_init("test_gpu");
    coopreduce_create_cpu(&cpu, 0);
    cap = 33554467 + 16;
    hx = malloc(cap * 8);
    if (!hx || !cuda_ok(cudaMalloc(&dx, cap * 8 + 16), "cudaMalloc input") ||
        !cuda_ok(cudaMalloc(&dout, 16), "cudaMalloc result"))
        return check_summary("test_gpu");
    if (golden && write_golden(golden, &p)) CHECK(0, "writing the golden file failed");
    specials();
    bad_input();
    to_host();
    misaligned();
    grid_independence();
    other_memory();
    two_streams();
    graph_replay();
    repeated_runs(quick ? 10 : 100);
    random_cases(quick ? 40 : 300);
    if (!quick) huge();
    cudaFree(dx);
    cudaFree(dout);
    free(hx);
    coopreduce_destroy(cpu);
    CHECK(coopreduce_destroy(gpu) == COOPREDUCE_SUCCESS, "destroy: %s",
          coopreduce_last_error(NULL));
    return check_summary("test_gpu");
}
#endif
