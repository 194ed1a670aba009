/* pipeline.cu — the async-copy tutorial's pipelined kernel: does overlapping the next tiles'
 * copies with this tile's arithmetic pay, and by how much, as the arithmetic per element grows?
 * The tutorial's cycle model (one block, nothing else on the SM) predicts
 * traditional / pipelined = (memory + compute) / max(memory, compute): 1.125x memory-bound,
 * 2.0x balanced, 1.5x compute-bound, 1.2x heavily compute-bound. On a real GPU several blocks
 * share each SM and already overlap one another's loads and arithmetic, so this program
 * measures what is left of that.
 *
 * y[i] = f_K(x[i]), f_K = K dependent fused multiply-adds (v = fmaf(v, A, B)): --flops K sets the
 * arithmetic per element (2K flops), with no other change to the kernel.
 *
 *   0  traditional: each tile of 1024 floats is loaded by the block into shared memory
 *      (synchronous loads, block.sync()), computed, block.sync(); the next tile's load starts
 *      only when this tile is done — no overlap inside a block.
 *   S  pipelined, S = 1..8 stages: a block-scoped cuda::pipeline keeps S tiles in flight with
 *      cuda::memcpy_async; the block computes the oldest while the others land. S = 1 is the
 *      asynchronous copy with nothing to overlap. Unlike the tutorial's pipelined kernel, the
 *      loop waits for every stage it filled, the last S - 1 included, and each tile is copied
 *      once by the block, not once per thread.
 *
 * Per-stage timing (the tutorial's "pipeline debugging"): a second build of each kernel stamps
 * clock64() in thread 0 of every block around the wait for a stage and around its arithmetic,
 * sums the cycles per stage slot, and the program prints the means. The tutorial's profiler
 * recorded CUDA events from device code, which is not possible (events are host API calls).
 *
 * Validation: every element bit for bit against the CPU's std::fmaf chain (fmaf is correctly
 * rounded on both sides), for every variant and both builds, at sizes with a partial tile and
 * a 5-block grid that wraps every stage ring many times. */
#include "common.cuh"

#include <cmath>
#include <cooperative_groups.h>
#include <cuda/pipeline>

namespace cg = cooperative_groups;

namespace {

constexpr int THREADS = 256;
constexpr int TILE = THREADS * 4; // a float4 per thread
constexpr int MAX_STAGES = 8;
constexpr float A = 0.999f, B = 0.001f; // |v| stays bounded (fixed point 1) for any K

__host__ __device__ inline float f_k(float v, int k)
{
    for (int j = 0; j < k; ++j) v = fmaf(v, A, B);
    return v;
}

/* f_K of four elements as four interleaved chains: the same operations per element as f_k
 * (so the same bits), with four independent FMAs per step for the scheduler. */
__device__ float4 f_k4(float4 v, int k)
{
#pragma unroll 4
    for (int j = 0; j < k; ++j) {
        v.x = fmaf(v.x, A, B);
        v.y = fmaf(v.y, A, B);
        v.z = fmaf(v.z, A, B);
        v.w = fmaf(v.w, A, B);
    }
    return v;
}

/* Cycle sums per stage slot, for the profiling builds (thread 0 of each block adds its own). */
struct Stamps {
    unsigned long long wait[MAX_STAGES], compute[MAX_STAGES], tiles[MAX_STAGES];
};

/* y[base .. base + count) = f_K of a tile in shared memory; a full tile a float4 per thread. */
__device__ void compute_tile(const float *s, float *y, size_t base, int count, int k)
{
    if (count == TILE) {
        const float4 v = reinterpret_cast<const float4 *>(s)[threadIdx.x];
        reinterpret_cast<float4 *>(y + base)[threadIdx.x] = f_k4(v, k);
    } else {
        for (int i = threadIdx.x; i < count; i += THREADS) y[base + i] = f_k(s[i], k);
    }
}

__device__ int tile_count(size_t n, size_t base) { return ex::tile_count(n, base, TILE); }

/* Thread 0's running sums, added to the global ones once at the end of the block. */
template <bool PROF> struct Probe {
    unsigned long long wait[MAX_STAGES] = {}, compute[MAX_STAGES] = {}, tiles[MAX_STAGES] = {};
    long long t = 0;
    __device__ void start()
    {
        if (PROF && threadIdx.x == 0) t = clock64();
    }
    __device__ void waited(int s)
    {
        if (PROF && threadIdx.x == 0) {
            const long long u = clock64();
            wait[s] += u - t;
            t = u;
        }
    }
    __device__ void computed(int s)
    {
        if (PROF && threadIdx.x == 0) {
            compute[s] += clock64() - t;
            ++tiles[s];
        }
    }
    __device__ void flush(Stamps *out, int stages)
    {
        if constexpr (PROF) {
            if (threadIdx.x != 0) return;
            for (int s = 0; s < stages; ++s) {
                atomicAdd(&out->wait[s], wait[s]);
                atomicAdd(&out->compute[s], compute[s]);
                atomicAdd(&out->tiles[s], tiles[s]);
            }
        }
    }
};

template <bool PROF>
__global__ void __launch_bounds__(THREADS)
    traditional(const float *__restrict__ x, float *__restrict__ y, size_t n, int k, Stamps *stamps)
{
    extern __shared__ float4 smem4[];
    float *s = reinterpret_cast<float *>(smem4);
    cg::thread_block block = cg::this_thread_block();
    Probe<PROF> probe;
    const size_t tiles = (n + TILE - 1) / TILE;
    for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const size_t base = t * TILE;
        const int count = tile_count(n, base);
        probe.start();
        if (count == TILE) {
            reinterpret_cast<float4 *>(s)[threadIdx.x] =
                reinterpret_cast<const float4 *>(x + base)[threadIdx.x];
        } else {
            for (int i = threadIdx.x; i < count; i += THREADS) s[i] = x[base + i];
        }
        block.sync();
        probe.waited(0); // "wait" here is the whole load: nothing else happens meanwhile
        compute_tile(s, y, base, count, k);
        block.sync(); // the next tile's loads overwrite the buffer
        probe.computed(0);
    }
    probe.flush(stamps, 1);
}

template <int S, bool PROF>
__global__ void __launch_bounds__(THREADS)
    pipelined(const float *__restrict__ x, float *__restrict__ y, size_t n, int k, Stamps *stamps)
{
    extern __shared__ float4 smem4[];
    float *s = reinterpret_cast<float *>(smem4); // S tiles
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, S> state;
    cg::thread_block block = cg::this_thread_block();
    cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &state);
    Probe<PROF> probe;
    const size_t tiles = (n + TILE - 1) / TILE;
    // This block's tiles: blockIdx.x + j * gridDim.x, the same count for all its threads.
    const size_t mine = blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    size_t fetched = 0;
    for (size_t j = 0; j < mine; ++j) {
        for (; fetched < mine && fetched < j + S; ++fetched) { // top up to S tiles in flight
            const size_t base = (blockIdx.x + fetched * gridDim.x) * TILE;
            const int count = tile_count(n, base);
            float *dst = s + (fetched % S) * TILE;
            pipe.producer_acquire();
            if (count == TILE)
                cuda::memcpy_async(block, dst, x + base,
                                   cuda::aligned_size_t<16>(sizeof(float) * TILE), pipe);
            else
                cuda::memcpy_async(block, dst, x + base, sizeof(float) * count, pipe);
            pipe.producer_commit();
        }
        const int slot = (int)(j % S);
        probe.start();
        pipe.consumer_wait(); // tile j, the oldest in flight, waited for even when it is the last
        probe.waited(slot);
        const size_t base = (blockIdx.x + j * gridDim.x) * TILE;
        compute_tile(s + (size_t)slot * TILE, y, base, tile_count(n, base), k);
        pipe.consumer_release();
        probe.computed(slot);
    }
    probe.flush(stamps, S);
}

/* Variant v (0 traditional, 1..8 stages) on at most max_grid blocks (0: one full wave). */
template <bool PROF>
void launch(int v, const float *x, float *y, size_t n, int k, const cudaDeviceProp &p, int max_grid,
            Stamps *stamps)
{
    const size_t smem = (size_t)(v == 0 ? 1 : v) * TILE * sizeof(float);
    const int tiles = (int)std::min<size_t>(std::max<size_t>((n + TILE - 1) / TILE, 1), 1u << 30);
    auto go = [&](auto kernel) {
        int g = std::min(ex::full_grid(kernel, THREADS, smem, p), tiles);
        if (max_grid > 0) g = std::min(g, max_grid);
        kernel<<<g, THREADS, smem>>>(x, y, n, k, stamps);
    };
    switch (v) {
    case 0: go(traditional<PROF>); break;
    case 1: go(pipelined<1, PROF>); break;
    case 2: go(pipelined<2, PROF>); break;
    case 3: go(pipelined<3, PROF>); break;
    case 4: go(pipelined<4, PROF>); break;
    case 5: go(pipelined<5, PROF>); break;
    case 6: go(pipelined<6, PROF>); break;
    case 7: go(pipelined<7, PROF>); break;
    case 8: go(pipelined<8, PROF>); break;
    }
}

/* Elements the CPU checks: all of them up to 2^22, else the first and last tiles and a prime
 * stride through the rest (every tile of 1024 holds a sampled element), so a check at 2^26
 * elements and K = 1024 stays within a few seconds of CPU time. */
bool check_sample(const std::vector<float> &x, const std::vector<float> &y, int k, const char *what)
{
    const size_t n = x.size();
    const size_t stride = n <= ((size_t)1 << 22) ? 1 : 1021;
    auto one = [&](size_t i) {
        const float want = f_k(x[i], k);
        if (std::memcmp(&want, &y[i], sizeof(float)) == 0) return true;
        std::printf("  %s: element %zu of %zu: got %.9g, want %.9g\n", what, i, n, (double)y[i],
                    (double)want);
        return false;
    };
    for (size_t i = 0; i < std::min(n, (size_t)TILE); ++i)
        if (!one(i)) return false;
    for (size_t i = n > TILE ? n - TILE : 0; i < n; ++i)
        if (!one(i)) return false;
    for (size_t i = 0; i < n; i += stride)
        if (!one(i)) return false;
    return true;
}

void validate(ex::Tally &tally, const ex::Args &args, size_t n, int k, int max_grid,
              const cudaDeviceProp &p)
{
    std::vector<float> x(n), y(n);
    ex::fill(x, 4);
    ex::DevBuf<float> dx(n), dy(n);
    ex::DevBuf<Stamps> stamps(1);
    CUDA_CHECK(cudaMemcpy(dx.p, x.data(), dx.bytes(), cudaMemcpyHostToDevice));
    int bad = 0, runs = 0;
    for (int v = 0; v <= MAX_STAGES; ++v) {
        if (!ex::wanted(args, v)) continue;
        for (int prof = 0; prof <= 1; ++prof) {
            ++runs;
            CUDA_CHECK(cudaMemset(dy.p, 0xff, dy.bytes()));
            CUDA_CHECK(cudaMemset(stamps.p, 0, stamps.bytes()));
            if (prof)
                launch<true>(v, dx.p, dy.p, n, k, p, max_grid, stamps.p);
            else
                launch<false>(v, dx.p, dy.p, n, k, p, max_grid, nullptr);
            CUDA_CHECK_LAUNCH();
            CUDA_CHECK(cudaMemcpy(y.data(), dy.p, dy.bytes(), cudaMemcpyDeviceToHost));
            char what[64];
            std::snprintf(what, sizeof what, "variant %d%s", v, prof ? " (profiled)" : "");
            if (!check_sample(x, y, k, what)) ++bad;
        }
    }
    char what[160];
    std::snprintf(what, sizeof what,
                  "pipeline: n=%zu, K=%d, grid<=%d: %d runs (traditional, 1..8 stages, plain and "
                  "profiled), %d wrong",
                  n, k, max_grid, runs, bad);
    tally.check(bad == 0, what);
}

void benchmark(const ex::Args &args, const cudaDeviceProp &p)
{
    const size_t n = args.size > 0 ? (size_t)args.size : (size_t)1 << 26;
    std::vector<int> ks = {0, 16, 64, 256, 1024};
    if (args.flops >= 0) ks = {args.flops};
    ex::DevBuf<float> dx(n), dy(n);
    ex::DevBuf<Stamps> stamps(1);
    ex::fill_device(dx.p, dx.n, 9);
    std::printf("\n### pipeline: n = %zu floats (%.0f MB read, %.0f MB written), time in ms, "
                "speed-up = traditional / best pipelined\n\n| K (FMA/elem) | traditional |",
                n, n * 4 / 1e6, n * 4 / 1e6);
    for (int s = 1; s <= MAX_STAGES; ++s) std::printf(" %d st |", s);
    std::printf(" speed-up (stages) |\n|---:|---:|");
    for (int s = 1; s <= MAX_STAGES; ++s) std::printf("---:|");
    std::printf("---:|\n");
    for (int k : ks) {
        float t[MAX_STAGES + 1];
        for (int v = 0; v <= MAX_STAGES; ++v)
            t[v] = ex::time_ms([&] { launch<false>(v, dx.p, dy.p, n, k, p, 0, nullptr); },
                               args.repeat);
        int best = 1;
        for (int s = 2; s <= MAX_STAGES; ++s)
            if (t[s] < t[best]) best = s;
        std::printf("| %d | %.4f |", k, t[0]);
        for (int s = 1; s <= MAX_STAGES; ++s) std::printf(" %.4f |", t[s]);
        std::printf(" %.3fx (%d) |\n", t[0] / t[best], best);
    }
    // Per-stage timing: mean cycles per tile as thread 0 of a block saw them.
    std::printf("\n### pipeline: per-stage cycles (thread 0 of each block, mean per tile): "
                "wait / compute\n\n| K | traditional load / compute | 4 stages, slot 0..3 "
                "|\n|---:|---|---|\n");
    for (int k : ks) {
        Stamps h[2];
        for (int i = 0; i < 2; ++i) {
            CUDA_CHECK(cudaMemset(stamps.p, 0, stamps.bytes()));
            if (i == 0)
                launch<true>(0, dx.p, dy.p, n, k, p, 0, stamps.p);
            else
                launch<true>(4, dx.p, dy.p, n, k, p, 0, stamps.p);
            CUDA_CHECK_LAUNCH();
            CUDA_CHECK(cudaMemcpy(&h[i], stamps.p, sizeof(Stamps), cudaMemcpyDeviceToHost));
        }
        auto mean = [](unsigned long long c, unsigned long long t) {
            return t ? (double)c / t : 0.0;
        };
        std::printf("| %d | %.0f / %.0f |", k, mean(h[0].wait[0], h[0].tiles[0]),
                    mean(h[0].compute[0], h[0].tiles[0]));
        for (int s = 0; s < 4; ++s)
            std::printf(" %.0f / %.0f%s", mean(h[1].wait[s], h[1].tiles[s]),
                        mean(h[1].compute[s], h[1].tiles[s]), s < 3 ? ";" : " |\n");
    }
}

} // namespace

int main(int argc, char **argv)
{
    const ex::Args args =
        ex::parse_args(argc, argv, "[--quick] [--variant 0-8] [--flops K] [--repeat R] [--size N]");
    const cudaDeviceProp p = ex::open_gpu("pipeline");
    ex::Tally tally;
    const int k = args.flops >= 0 ? args.flops : 16;
    validate(tally, args, 300, k, 0, p);                   // less than one tile
    validate(tally, args, (size_t)50 * TILE + 7, k, 5, p); // 10+ tiles per block, partial last
    validate(tally, args, (size_t)1 << (args.quick ? 16 : 20), 0, 0, p); // K = 0: a copy
    if (!args.quick) validate(tally, args, (size_t)1 << 26, 1024, 0, p); // the benchmark's size
    if (tally.failed == 0 && !args.quick) benchmark(args, p);
    return tally.finish("pipeline");
}
