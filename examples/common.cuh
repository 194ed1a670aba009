/* common.cuh — what every example program shares: the CUDA error check, the GPU-or-skip start,
 * the command line, deterministic random data, event timing (median of repeats) and the
 * PASS/FAIL tally. The examples are programs, not library code: on a CUDA error they print what
 * failed and exit. */
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <vector>

/* cuda::pipeline_shared_state lives in __shared__ memory, where nvcc runs no constructor and
 * warns so; cuda::make_pipeline initialises every field of it, which makes the warning moot. */
#pragma nv_diag_suppress static_var_with_dynamic_init

#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess) {                                                                 \
            std::fprintf(stderr, "FAIL: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,               \
                         cudaGetErrorString(err_));                                                \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

/* A kernel launch's own error (bad configuration) and, with a sync, its execution error. */
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

namespace ex {

/* The command line every example understands; a program reads the fields it needs.
 *   --quick        validation only, small sizes (ctest and the sanitizers run this)
 *   --variant N    run one variant only (default: all)
 *   --repeat R     timed repeats per measurement (median reported)
 *   --flops K      arithmetic per element (pipeline.cu)
 *   --size N       a problem size (matmul.cu: one square size instead of the sweep) */
struct Args {
    bool quick = false;
    int variant = -1;
    int repeat = 20;
    int flops = -1;
    long long size = -1;
};

inline Args parse_args(int argc, char **argv, const char *usage)
{
    Args a;
    for (int i = 1; i < argc; ++i) {
        const char *s = argv[i];
        const bool has_value = i + 1 < argc;
        if (!std::strcmp(s, "--quick")) {
            a.quick = true;
        } else if (!std::strcmp(s, "--variant") && has_value) {
            a.variant = std::atoi(argv[++i]);
        } else if (!std::strcmp(s, "--repeat") && has_value) {
            a.repeat = std::max(1, std::atoi(argv[++i]));
        } else if (!std::strcmp(s, "--flops") && has_value) {
            a.flops = std::max(0, std::atoi(argv[++i]));
        } else if (!std::strcmp(s, "--size") && has_value) {
            a.size = std::atoll(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: %s %s\n", argv[0], usage);
            std::exit(2);
        }
    }
    return a;
}

/* Device 0, or exit 0 with a SKIP line: CI has no GPU and must stay green. The exit status is
 * 0, not 77, so that a plain run of the program on a machine without a GPU is not an error;
 * ctest recognises the skip by the SKIP line (examples/CMakeLists.txt). */
inline cudaDeviceProp open_gpu(const char *prog)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("SKIP: no GPU: %s needs a CUDA GPU\n", prog);
        std::exit(0);
    }
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    CUDA_CHECK(cudaSetDevice(0));
    std::printf("%s on %s (sm_%d%d, %d SMs, %.0f MB L2)\n", prog, p.name, p.major, p.minor,
                p.multiProcessorCount, p.l2CacheSize / 1e6);
    return p;
}

/* A reproducible uniform value in [-1, 1) from (seed, index): splitmix64. The same data on
 * every run and machine, and cheap enough to fill hundreds of MB. */
__host__ __device__ inline float uniform(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 23) - 1.0);
}

inline void fill(std::vector<float> &v, uint64_t seed)
{
    for (size_t i = 0; i < v.size(); ++i) v[i] = uniform(seed, i);
}

/* The same values on the device, for the benchmarks' large buffers: random data rather than
 * zeros, since the arithmetic units draw less power (and may clock higher) on zeros. */
__global__ void fill_kernel(float *x, size_t n, uint64_t seed)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        x[i] = uniform(seed, i);
}

inline void fill_device(float *x, size_t n, uint64_t seed)
{
    fill_kernel<<<1024, 256>>>(x, n, seed);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
}

/* Elements in the tile of `tile` elements that starts at base (< n): `tile`, or fewer for the
 * last. */
__device__ inline int tile_count(size_t n, size_t base, int tile)
{
    return (int)min((size_t)tile, n - base);
}

/* A device buffer that frees itself: the programs allocate several and exit on any error. */
template <typename T> struct DevBuf {
    T *p = nullptr;
    size_t n = 0;
    explicit DevBuf(size_t count) : n(count) { CUDA_CHECK(cudaMalloc(&p, count * sizeof(T))); }
    ~DevBuf() { cudaFree(p); }
    DevBuf(const DevBuf &) = delete;
    DevBuf &operator=(const DevBuf &) = delete;
    size_t bytes() const { return n * sizeof(T); }
};

/* Times `launch` (which enqueues work on stream 0) with CUDA events: `warmup` untimed runs,
 * then `repeat` runs timed one by one; returns the median in milliseconds, which one slow run
 * (a clock ramp, another process) does not move. */
template <typename F> float time_ms(F &&launch, int repeat, int warmup = 3)
{
    cudaEvent_t t0, t1;
    CUDA_CHECK(cudaEventCreate(&t0));
    CUDA_CHECK(cudaEventCreate(&t1));
    for (int i = 0; i < warmup; ++i) launch();
    CUDA_CHECK_LAUNCH();
    std::vector<float> ms((size_t)repeat);
    for (int r = 0; r < repeat; ++r) {
        CUDA_CHECK(cudaEventRecord(t0));
        launch();
        CUDA_CHECK(cudaEventRecord(t1));
        CUDA_CHECK(cudaEventSynchronize(t1));
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaEventElapsedTime(&ms[(size_t)r], t0, t1));
    }
    CUDA_CHECK(cudaEventDestroy(t0));
    CUDA_CHECK(cudaEventDestroy(t1));
    std::nth_element(ms.begin(), ms.begin() + repeat / 2, ms.end());
    return ms[(size_t)repeat / 2];
}

/* Resident blocks of `kernel` per SM times the SMs: a grid that fills the GPU once, for the
 * grid-stride and persistent kernels. */
template <typename K> int full_grid(K kernel, int threads, size_t smem, const cudaDeviceProp &p)
{
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    if (per_sm < 1) {
        std::fprintf(stderr, "FAIL: a kernel does not fit on an SM (%d threads, %zu B shared)\n",
                     threads, smem);
        std::exit(1);
    }
    return per_sm * p.multiProcessorCount;
}

/* The PASS/FAIL tally: one line per check, and the exit status of the program. */
struct Tally {
    int passed = 0, failed = 0;
    bool check(bool ok, const char *what)
    {
        std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
        std::fflush(stdout);
        ok ? ++passed : ++failed;
        return ok;
    }
    int finish(const char *prog) const
    {
        std::printf("%s: %d passed, %d failed\n", prog, passed, failed);
        return failed ? 1 : 0;
    }
};

/* Selected by --variant (or all when it is not given). */
inline bool wanted(const Args &a, int v) { return a.variant < 0 || a.variant == v; }

/* Element-wise comparison; reports the first mismatch. Exact by default: the element-wise
 * examples compute the same float operations as their CPU reference. */
inline bool same(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; ++i) {
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            std::printf("  %s: first mismatch at %zu of %zu: got %.9g, want %.9g\n", what, i, n,
                        (double)got[i], (double)want[i]);
            return false;
        }
    }
    return true;
}

} // namespace ex
