/* matmul.cu — the async-copy tutorial's tiled matrix product, grown into an SGEMM that is worth
 * timing against cuBLAS: C = A B, row-major float32, A M x K, B K x N.
 *
 *   0  cuBLAS cublasSgemm (FP32 math, no TF32): the reference for speed; validated as ours is.
 *   1  the tutorial's kernel, fixed: a 16 x 16 thread block, one output per thread, 16 x 16 tiles
 *      of A and B loaded synchronously into shared memory, block.sync() around the product.
 *      The tutorial guarded the loads with warp.any(), which let a warp whose threads were all
 *      out of range skip the store and leave the previous tile's values in shared memory; here
 *      every thread stores its element or a zero. It exists to show how far the textbook tile
 *      is from the hardware.
 *   2  the same idea at the scale the hardware wants: 128 x 128 tiles of C per block of 256
 *      threads, 8 x 8 outputs per thread, 16-deep slices of A and B copied into shared memory
 *      with cuda::memcpy_async through a 3-stage block-scoped cuda::pipeline, so the copies of
 *      the next two slices run under the arithmetic of this one. A's rows are padded to 20
 *      floats: the two rows a warp reads at once then fall in different banks, and each row
 *      stays 16-byte aligned for the asynchronous copies.
 *
 * Sizes must be multiples of 128 (M, N) and 16 (K) — the benchmark's 512..8192 are; the kernels
 * have no partial tiles, and the program refuses other sizes.
 *
 * Validation: against a CPU product in double. An entry passes when
 * |C - C_ref| <= gamma_K * sum_k |A_ik B_kj|, gamma_K = K u / (1 - K u), u = 2^-24: the bound on
 * the rounding error of any float32 dot product of length K, whatever the order of the additions
 * and with or without fused multiply-adds. Small sizes are checked entry by entry; large ones on
 * 1024 entries at random, to keep the CPU time bounded. */
#include "common.cuh"

#include <cmath>
#include <cooperative_groups.h>
#include <cublas_v2.h>
#include <cuda/pipeline>

namespace cg = cooperative_groups;

namespace {

// ---------------------------------------------------------------- 1: the tutorial's tile
constexpr int T = 16;

__global__ void __launch_bounds__(T *T)
    sgemm_tile16(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                 int M, int N, int K)
{
    __shared__ float As[T][T], Bs[T][T];
    cg::thread_block block = cg::this_thread_block();
    const int ty = threadIdx.y, tx = threadIdx.x;
    const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[ty][tx] = row < M && k0 + tx < K ? A[(size_t)row * K + k0 + tx] : 0.f;
        Bs[ty][tx] = k0 + ty < K && col < N ? B[(size_t)(k0 + ty) * N + col] : 0.f;
        block.sync();
#pragma unroll
        for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
        block.sync();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

// ---------------------------------------------------------------- 2: 128 x 128, async, 3 stages
constexpr int BM = 128, BN = 128, BK = 16, THREADS = 256, STAGES = 3;
constexpr int AS_LD = BK + 4; // A's padded row: 80 bytes, a multiple of 16
constexpr int STAGE_FLOATS = BM * AS_LD + BK * BN;
constexpr size_t SMEM = sizeof(float) * STAGE_FLOATS * STAGES;
static_assert(BM * BK / 4 == 2 * THREADS && BK * BN / 4 == 2 * THREADS && BK == 16 && BN == 128,
              "fetch() copies two 16-byte chunks of A and two of B per thread");

__global__ void __launch_bounds__(THREADS, 2)
    sgemm_async(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                int M, int N, int K)
{
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, STAGES> state;
    cg::thread_block block = cg::this_thread_block();
    cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &state);
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int tiles = K / BK;
    // Offsets in 32 bits (the host keeps every matrix under 2^31 elements): 64-bit addresses
    // for each chunk cost registers the 8 x 8 accumulators need.
    const unsigned bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    A += (size_t)bm * K;
    B += bn;
    C += (size_t)bm * N + bn;

    // Slice t of A (BM x BK) and of B (BK x BN) into stage slot s: two 16-byte chunks of each
    // per thread, rows r and r + 64 of A's slice (4 chunks a row), rows r and r + 8 of B's
    // (32 chunks a row). One source pointer per matrix keeps the addressing out of the
    // registers the accumulators need.
    const float *a_src = A + (tid / 4) * K + (tid % 4) * 4,
                *b_src = B + (tid / 32) * N + (tid % 32) * 4;
    const int a_dst = (tid / 4) * AS_LD + (tid % 4) * 4, b_dst = (tid / 32) * BN + (tid % 32) * 4;
    auto fetch = [&](int t, int s) {
        float *As = smem + s * STAGE_FLOATS, *Bs = As + BM * AS_LD;
        const unsigned k0 = (unsigned)t * BK;
        const cuda::aligned_size_t<16> chunk(16);
        cuda::memcpy_async(As + a_dst, a_src + k0, chunk, pipe);
        cuda::memcpy_async(As + a_dst + 64 * AS_LD, a_src + 64u * K + k0, chunk, pipe);
        cuda::memcpy_async(Bs + b_dst, b_src + k0 * N, chunk, pipe);
        cuda::memcpy_async(Bs + b_dst + 8 * BN, b_src + (k0 + 8) * N, chunk, pipe);
    };

    // This thread's outputs: rows ty + 16 i, columns 4 tx + 64 j + c (i < 8, j < 2, c < 4).
    float acc[8][8] = {};
    int fetched = 0;
    for (int t = 0; t < tiles; ++t) {
        for (; fetched < tiles && fetched < t + STAGES; ++fetched) { // last slices waited for too
            pipe.producer_acquire();
            fetch(fetched, fetched % STAGES);
            pipe.producer_commit();
        }
        pipe.consumer_wait(); // slice t copied by every thread of the block
        const float *As = smem + (t % STAGES) * STAGE_FLOATS, *Bs = As + BM * AS_LD;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) a[i] = As[(ty + 16 * i) * AS_LD + k]; // broadcast per row
            const float4 b0 = *reinterpret_cast<const float4 *>(Bs + k * BN + 4 * tx);
            const float4 b1 = *reinterpret_cast<const float4 *>(Bs + k * BN + 64 + 4 * tx);
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
        pipe.consumer_release(); // every thread is done with the slot: it may be refilled
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        float *c = C + (unsigned)(ty + 16 * i) * N + 4 * tx;
        *reinterpret_cast<float4 *>(c) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4 *>(c + 64) =
            make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}

// ---------------------------------------------------------------- host side
const char *const NAMES[] = {"0 cuBLAS SGEMM", "1 tutorial 16x16 tile", "2 128x128 async 3-stage"};

struct Gemm {
    cublasHandle_t handle = nullptr;
    Gemm()
    {
        if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS ||
            cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
            std::fprintf(stderr, "FAIL: cuBLAS could not be initialised\n");
            std::exit(1);
        }
        CUDA_CHECK(cudaFuncSetAttribute(sgemm_async, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)SMEM));
    }
    ~Gemm() { cublasDestroy(handle); }

    void run(int v, const float *A, const float *B, float *C, int M, int N, int K)
    {
        if (v == 0) {
            // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS sees B as the left factor.
            const float one = 1.f, zero = 0.f;
            if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C,
                            N) != CUBLAS_STATUS_SUCCESS) {
                std::fprintf(stderr, "FAIL: cublasSgemm\n");
                std::exit(1);
            }
        } else if (v == 1) {
            sgemm_tile16<<<dim3((N + T - 1) / T, (M + T - 1) / T), dim3(T, T)>>>(A, B, C, M, N, K);
        } else {
            if ((size_t)K * N >= (1ull << 32) || M % BM || N % BN || K % BK) {
                std::fprintf(stderr, "FAIL: sgemm_async: unsupported size %dx%dx%d\n", M, N, K);
                std::exit(2);
            }
            sgemm_async<<<dim3(N / BN, M / BM), THREADS, SMEM>>>(A, B, C, M, N, K);
        }
    }
};

/* Checks C against the double product on `samples` entries (0: all of them). */
bool check(const std::vector<float> &A, const std::vector<float> &B, const std::vector<float> &C,
           int M, int N, int K, int samples, const char *what)
{
    const double u = std::ldexp(1.0, -24), gamma = K * u / (1 - K * u);
    const size_t total = (size_t)M * N, count = samples ? (size_t)samples : total;
    double worst = 0; // largest error as a fraction of its bound
    for (size_t s = 0; s < count; ++s) {
        // A fixed pseudo-random sample: the same entries on every run.
        const size_t e = samples ? (size_t)((ex::uniform(99, s) + 1.0) * 0.5 * total) % total : s;
        const size_t i = e / N, j = e % N;
        double ref = 0, mag = 0;
        for (int k = 0; k < K; ++k) {
            const double p = (double)A[i * K + k] * B[(size_t)k * N + j];
            ref += p;
            mag += std::fabs(p);
        }
        const double err = std::fabs(C[e] - ref), bound = gamma * mag;
        if (!(err <= bound)) { // NaN fails too
            std::printf("  %s: C[%zu][%zu] = %.9g, reference %.9g, error %.3g > bound %.3g\n", what,
                        i, j, (double)C[e], ref, err, bound);
            return false;
        }
        if (bound > 0) worst = std::max(worst, err / bound);
    }
    std::printf("  %s: %zu entries, largest error %.2g of the bound\n", what, count, worst);
    return true;
}

/* Validates the wanted variants at M x N x K; returns false if any failed. */
bool validate(ex::Tally &tally, const ex::Args &args, Gemm &g, int M, int N, int K, int samples)
{
    std::vector<float> A((size_t)M * K), B((size_t)K * N), C((size_t)M * N);
    ex::fill(A, 5);
    ex::fill(B, 6);
    ex::DevBuf<float> dA(A.size()), dB(B.size()), dC(C.size());
    CUDA_CHECK(cudaMemcpy(dA.p, A.data(), dA.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB.p, B.data(), dB.bytes(), cudaMemcpyHostToDevice));
    bool all = true;
    for (int v = 0; v <= 2; ++v) {
        if (!ex::wanted(args, v)) continue;
        CUDA_CHECK(cudaMemset(dC.p, 0xff, dC.bytes())); // NaN: an entry never written fails
        g.run(v, dA.p, dB.p, dC.p, M, N, K);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaMemcpy(C.data(), dC.p, dC.bytes(), cudaMemcpyDeviceToHost));
        char what[128];
        std::snprintf(what, sizeof what, "matmul %s, %dx%dx%d", NAMES[v], M, N, K);
        all &= tally.check(check(A, B, C, M, N, K, samples, NAMES[v]), what);
    }
    return all;
}

void benchmark(const ex::Args &args, Gemm &g)
{
    std::vector<int> sizes = {512, 1024, 2048, 4096, 8192};
    if (args.size > 0) sizes = {(int)args.size};
    std::printf("\n### matmul: square SGEMM, float32 in and out, TFLOP/s = 2 n^3 / time\n\n"
                "| n | cuBLAS ms | cuBLAS TFLOP/s | tile16 TFLOP/s | async 3-stage ms | async "
                "TFLOP/s | async / cuBLAS |\n"
                "|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int n : sizes) {
        ex::DevBuf<float> A((size_t)n * n), B((size_t)n * n), C((size_t)n * n);
        ex::fill_device(A.p, A.n, 10);
        ex::fill_device(B.p, B.n, 11);
        const double flop = 2.0 * n * n * (double)n;
        const int repeat = n >= 4096 ? std::min(args.repeat, 5) : args.repeat;
        float ms[3];
        for (int v = 0; v <= 2; ++v)
            ms[v] = ex::time_ms([&] { g.run(v, A.p, B.p, C.p, n, n, n); },
                                v == 1 && n >= 4096 ? 2 : repeat, v == 1 ? 1 : 3);
        std::printf("| %d | %.3f | %.1f | %.1f | %.3f | %.1f | %.1f%% |\n", n, ms[0],
                    flop / (ms[0] * 1e9), flop / (ms[1] * 1e9), ms[2], flop / (ms[2] * 1e9),
                    100.0 * ms[0] / ms[2]);
    }
}

} // namespace

int main(int argc, char **argv)
{
    const ex::Args args = ex::parse_args(
        argc, argv, "[--quick] [--variant 0-2] [--repeat R] [--size N (multiple of 128)]");
    if (args.size > 0 && args.size % 128 != 0) {
        std::fprintf(stderr, "matmul: --size must be a multiple of 128\n");
        return 2;
    }
    ex::open_gpu("matmul");
    Gemm g;
    ex::Tally tally;
    // One block and one slice; an odd number of slices (17) so the stage ring wraps unevenly.
    // Small enough for compute-sanitizer's racecheck in --quick.
    validate(tally, args, g, 128, 128, 16, 0);
    validate(tally, args, g, 256, 384, 272, 0);
    if (!args.quick) { // a square with every entry checked, then the benchmark's sizes sampled
        validate(tally, args, g, 512, 512, 512, 0);
        std::vector<int> sizes = {1024, 2048, 4096, 8192};
        if (args.size > 0) sizes = {(int)args.size};
        for (int n : sizes) validate(tally, args, g, n, n, n, 1024);
    }
    if (tally.failed == 0 && !args.quick) benchmark(args, g);
    return tally.finish("matmul");
}
