/* vector_add.cu — c = a + b five ways, from the async-copy tutorial's "vector addition with
 * evolution", against a plain kernel and the bandwidth ceiling.
 *
 *   0  grid-stride float4 kernel: no shared memory at all. The kernel every staged version must
 *      beat to be worth writing; vector add has no reuse, so it is also the best it can do.
 *   1  synchronous cooperative groups: each tile of a and b is loaded into shared memory by the
 *      block, block.sync(), added, block.sync(). The tutorial's version 1, with its shared
 *      memory sized for both arrays (its two `extern __shared__` arrays were the same address).
 *   2  cg::memcpy_async: the same tiles copied by the asynchronous copy unit, then
 *      cg::wait(block). The tutorial's version 2, with the block.sync() it lacked before the
 *      next tile's copy overwrites the buffer other threads may still be reading.
 *   3  cuda::pipeline, STAGES tiles in flight per block: a block-scoped pipeline (shared state
 *      in shared memory) whose stages are copied by the whole block, so each byte is copied
 *      once. The tutorial's version 3 made a per-thread pipeline in which every thread copied
 *      the whole tile (blockDim.x times the traffic into shared memory) and indexed with int.
 *   4  cuda::pipeline per thread, STAGES float4 of a and of b in flight per thread: what the
 *      tutorial's per-thread pipeline can be when each thread copies only its own elements.
 *      Variant 3 measured 84.5 % of the ceiling on an H100 against variant 0's 95.3 %
 *      (docs/EXAMPLES.md); a block-scoped pipeline makes every stage a block-wide hand-off.
 *      Here a thread waits only for its own copies (cp.async groups), so there is no barrier
 *      at all, and the grid-stride float4 mapping is variant 0's.
 *
 * Validation: every element against the CPU's a[i] + b[i] (one float addition: bit-exact), at
 * sizes with a partial last tile and a forced small grid that sends each block round the stage
 * ring several times. Benchmark: 2^26 floats per array (805 MB moved per call, far beyond L2),
 * median of repeats; a, b and c must be 16-byte aligned (as cudaMalloc's are); the ceiling is a device-to-device cudaMemcpyAsync moving the same number
 * of bytes (1.5 n floats read, 1.5 n written), since a copy is the fastest way to move bytes. */
#include "common.cuh"

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/pipeline>

namespace cg = cooperative_groups;

namespace {

constexpr int THREADS = 256;
constexpr int TILE = THREADS * 4; // a float4 per thread: 4 KB per array per tile
constexpr int STAGES = 4;

__global__ void __launch_bounds__(THREADS)
    add_float4(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
               size_t n)
{
    const size_t n4 = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *a4 = reinterpret_cast<const float4 *>(a);
    const float4 *b4 = reinterpret_cast<const float4 *>(b);
    float4 *c4 = reinterpret_cast<float4 *>(c);
    for (size_t i = tid; i < n4; i += stride) {
        const float4 x = a4[i], y = b4[i];
        c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    for (size_t i = n4 * 4 + tid; i < n; i += stride) c[i] = a[i] + b[i]; // the last n % 4
}

/* c[base .. base + count) from a tile staged in shared memory. A full tile is a float4 per
 * thread; the last, partial tile goes one element at a time. `base` is a multiple of TILE, so
 * the float4 stores are aligned. */
__device__ void add_tile(const float *sa, const float *sb, float *c, size_t base, int count)
{
    if (count == TILE) {
        const float4 x = reinterpret_cast<const float4 *>(sa)[threadIdx.x];
        const float4 y = reinterpret_cast<const float4 *>(sb)[threadIdx.x];
        reinterpret_cast<float4 *>(c + base)[threadIdx.x] =
            make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    } else {
        for (int i = threadIdx.x; i < count; i += THREADS) c[base + i] = sa[i] + sb[i];
    }
}

__device__ int tile_count(size_t n, size_t base) { return ex::tile_count(n, base, TILE); }

/* Variants 1 (ASYNC false) and 2 (ASYNC true): one kernel, since they differ only in how a
 * tile reaches shared memory. Shared memory: one tile of a, then one of b (2 * TILE floats). */
template <bool ASYNC>
__global__ void __launch_bounds__(THREADS)
    add_staged(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
               size_t n)
{
    extern __shared__ float4 smem4[];
    float *sa = reinterpret_cast<float *>(smem4), *sb = sa + TILE;
    cg::thread_block block = cg::this_thread_block();
    const size_t tiles = (n + TILE - 1) / TILE;
    for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const size_t base = t * TILE;
        const int count = tile_count(n, base);
        if constexpr (ASYNC) {
            if (count == TILE) { // 16-byte aligned, a multiple of 16: the wide copy path
                const cuda::aligned_size_t<16> bytes(sizeof(float) * TILE);
                cg::memcpy_async(block, sa, a + base, bytes);
                cg::memcpy_async(block, sb, b + base, bytes);
            } else {
                cg::memcpy_async(block, sa, a + base, sizeof(float) * count);
                cg::memcpy_async(block, sb, b + base, sizeof(float) * count);
            }
            cg::wait(block); // both copies landed, for the whole block (it includes a barrier)
        } else {
            if (count == TILE) {
                reinterpret_cast<float4 *>(sa)[threadIdx.x] =
                    reinterpret_cast<const float4 *>(a + base)[threadIdx.x];
                reinterpret_cast<float4 *>(sb)[threadIdx.x] =
                    reinterpret_cast<const float4 *>(b + base)[threadIdx.x];
            } else {
                for (int i = threadIdx.x; i < count; i += THREADS) {
                    sa[i] = a[base + i];
                    sb[i] = b[base + i];
                }
            }
            block.sync(); // the tile is complete before anyone reads it
        }
        add_tile(sa, sb, c, base, count);
        // Every thread must be done reading before the next tile overwrites the buffer. The
        // copy unit does not follow the compute mapping (the tutorial's version 2 had no
        // barrier here); the synchronous loads do, but the pattern (compute on any element of
        // the tile) needs it all the same, and its cost is part of what variant 1 measures.
        block.sync();
    }
}

/* Shared memory: STAGES tiles of a, then STAGES tiles of b. Block b handles tiles
 * b, b + grid, b + 2 grid, ...: `mine` of them, the same count for every thread of the block,
 * as the pipeline's collective calls require. */
template <int S>
__global__ void __launch_bounds__(THREADS)
    add_pipeline(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                 size_t n)
{
    extern __shared__ float4 smem4[];
    float *sa = reinterpret_cast<float *>(smem4), *sb = sa + (size_t)S * TILE;
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, S> state;
    cg::thread_block block = cg::this_thread_block();
    cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &state);
    const size_t tiles = (n + TILE - 1) / TILE;
    const size_t mine = blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    size_t fetched = 0;
    for (size_t k = 0; k < mine; ++k) {
        // Keep S tiles in flight; near the end fewer remain, and the loop still waits for each
        // of them below — the tutorial's fill/steady-state split never waited on the last ones.
        for (; fetched < mine && fetched < k + S; ++fetched) {
            const size_t base = (blockIdx.x + fetched * gridDim.x) * TILE;
            const int count = tile_count(n, base);
            float *da = sa + (fetched % S) * TILE, *db = sb + (fetched % S) * TILE;
            pipe.producer_acquire();
            if (count == TILE) {
                cuda::memcpy_async(block, da, a + base,
                                   cuda::aligned_size_t<16>(sizeof(float) * TILE), pipe);
                cuda::memcpy_async(block, db, b + base,
                                   cuda::aligned_size_t<16>(sizeof(float) * TILE), pipe);
            } else {
                cuda::memcpy_async(block, da, a + base, sizeof(float) * count, pipe);
                cuda::memcpy_async(block, db, b + base, sizeof(float) * count, pipe);
            }
            pipe.producer_commit();
        }
        pipe.consumer_wait(); // the oldest stage, copied by the whole block, has landed
        const size_t base = (blockIdx.x + k * gridDim.x) * TILE;
        add_tile(sa + (k % S) * TILE, sb + (k % S) * TILE, c, base, tile_count(n, base));
        pipe.consumer_release(); // its buffer may be refilled once every thread is done
    }
}

/* Shared memory: STAGES slots of a float4 per thread for a, then as many for b; slot-major, so
 * that a warp's 32 float4 of one slot are contiguous. Each thread copies and reads only its own
 * slots: a thread-scoped pipeline and no barrier. The last n % 4 elements as in variant 0. */
template <int S>
__global__ void __launch_bounds__(THREADS)
    add_thread_pipeline(const float *__restrict__ a, const float *__restrict__ b,
                        float *__restrict__ c, size_t n)
{
    extern __shared__ float4 smem4[];
    float4 *sa = smem4, *sb = smem4 + (size_t)S * THREADS;
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    const size_t n4 = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *a4 = reinterpret_cast<const float4 *>(a);
    const float4 *b4 = reinterpret_cast<const float4 *>(b);
    float4 *c4 = reinterpret_cast<float4 *>(c);
    const size_t mine = tid < n4 ? (n4 - tid + stride - 1) / stride : 0; // this thread's float4s
    size_t fetched = 0;
    for (size_t k = 0; k < mine; ++k) {
        // Top up to S copies in flight; the last ones are waited for like every other.
        for (; fetched < mine && fetched < k + S; ++fetched) {
            const size_t i = tid + fetched * stride, slot = (fetched % S) * THREADS + threadIdx.x;
            pipe.producer_acquire();
            cuda::memcpy_async(sa + slot, a4 + i, cuda::aligned_size_t<16>(sizeof(float4)), pipe);
            cuda::memcpy_async(sb + slot, b4 + i, cuda::aligned_size_t<16>(sizeof(float4)), pipe);
            pipe.producer_commit();
        }
        pipe.consumer_wait(); // this thread's oldest copies have landed
        const size_t slot = (k % S) * THREADS + threadIdx.x;
        const float4 x = sa[slot], y = sb[slot];
        c4[tid + k * stride] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
        pipe.consumer_release();
    }
    for (size_t i = n4 * 4 + tid; i < n; i += stride) c[i] = a[i] + b[i]; // the last n % 4
}

constexpr int VARIANTS = 5;
const char *const NAMES[VARIANTS] = {"0 float4 grid-stride", "1 cg sync", "2 cg::memcpy_async",
                                     "3 cuda::pipeline (4 stages)",
                                     "4 cuda::pipeline per thread (4 stages)"};

/* Launches variant v on a grid of at most `max_grid` blocks (0: a full wave). */
void launch(int v, const float *a, const float *b, float *c, size_t n, const cudaDeviceProp &p,
            int max_grid)
{
    const int tiles = (int)std::min<size_t>((n + TILE - 1) / TILE, 1u << 30);
    const size_t smem12 = 2 * TILE * sizeof(float), smem3 = 2 * STAGES * TILE * sizeof(float);
    const size_t smem4 = 2 * STAGES * THREADS * sizeof(float4);
    auto grid = [&](auto kernel, size_t smem) {
        int g = std::min(ex::full_grid(kernel, THREADS, smem, p), std::max(tiles, 1));
        return max_grid > 0 ? std::min(g, max_grid) : g;
    };
    switch (v) {
    case 0: add_float4<<<grid(add_float4, 0), THREADS>>>(a, b, c, n); break;
    case 1:
        add_staged<false><<<grid(add_staged<false>, smem12), THREADS, smem12>>>(a, b, c, n);
        break;
    case 2:
        add_staged<true><<<grid(add_staged<true>, smem12), THREADS, smem12>>>(a, b, c, n);
        break;
    case 3:
        add_pipeline<STAGES><<<grid(add_pipeline<STAGES>, smem3), THREADS, smem3>>>(a, b, c, n);
        break;
    case 4:
        add_thread_pipeline<STAGES>
            <<<grid(add_thread_pipeline<STAGES>, smem4), THREADS, smem4>>>(a, b, c, n);
        break;
    }
}

/* Every variant at size n (and grid cap), against the CPU. */
void validate(ex::Tally &tally, const ex::Args &args, size_t n, int max_grid,
              const cudaDeviceProp &p)
{
    std::vector<float> a(n), b(n), want(n), got(n);
    ex::fill(a, 1);
    ex::fill(b, 2);
    for (size_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
    ex::DevBuf<float> da(n), db(n), dc(n);
    CUDA_CHECK(cudaMemcpy(da.p, a.data(), da.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db.p, b.data(), db.bytes(), cudaMemcpyHostToDevice));
    for (int v = 0; v < VARIANTS; ++v) {
        if (!ex::wanted(args, v)) continue;
        CUDA_CHECK(cudaMemset(dc.p, 0xff, dc.bytes())); // NaNs: a skipped element shows
        launch(v, da.p, db.p, dc.p, n, p, max_grid);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaMemcpy(got.data(), dc.p, dc.bytes(), cudaMemcpyDeviceToHost));
        char what[128];
        std::snprintf(what, sizeof what, "vector_add %s, n=%zu, grid<=%d", NAMES[v], n, max_grid);
        tally.check(ex::same(got.data(), want.data(), n, NAMES[v]), what);
    }
}

void benchmark(const ex::Args &args, const cudaDeviceProp &p)
{
    const size_t n = args.size > 0 ? (size_t)args.size : (size_t)1 << 26;
    const size_t bytes = 3 * n * sizeof(float); // read a and b, write c
    // a and b in one allocation (the ceiling's copy reads from it), b 16-byte aligned as the
    // kernels require of all three pointers.
    const size_t n_pad = (n + 3) / 4 * 4;
    ex::DevBuf<float> ab(2 * n_pad), dc(n), scratch(n + n / 2);
    ex::fill_device(ab.p, ab.n, 7);
    const float ceil_ms = ex::time_ms(
        [&] {
            CUDA_CHECK(cudaMemcpyAsync(scratch.p, ab.p, scratch.bytes(), cudaMemcpyDeviceToDevice));
        },
        args.repeat);
    const double ceil_gbs = 2.0 * scratch.bytes() / (ceil_ms * 1e6);
    std::printf("\n### vector_add: n = %zu floats per array, %.0f MB moved per call\n\n", n,
                bytes / 1e6);
    std::printf("| variant | time (ms) | GB/s | of ceiling |\n|---|---:|---:|---:|\n");
    std::printf("| ceiling: cudaMemcpyAsync D2D, %.0f MB read + written | %.4f | %.0f | 100%% |\n",
                2.0 * scratch.bytes() / 1e6, ceil_ms, ceil_gbs);
    for (int v = 0; v < VARIANTS; ++v) {
        if (!ex::wanted(args, v)) continue;
        const float ms =
            ex::time_ms([&] { launch(v, ab.p, ab.p + n_pad, dc.p, n, p, 0); }, args.repeat);
        const double gbs = bytes / (ms * 1e6);
        std::printf("| %s | %.4f | %.0f | %.1f%% |\n", NAMES[v], ms, gbs, 100.0 * gbs / ceil_gbs);
    }
}

} // namespace

int main(int argc, char **argv)
{
    const ex::Args args =
        ex::parse_args(argc, argv, "[--quick] [--variant 0-4] [--repeat R] [--size N]");
    const cudaDeviceProp p = ex::open_gpu("vector_add");
    ex::Tally tally;
    // Sizes: under one tile, a partial last tile, an exact multiple; a 3-block grid makes each
    // block take many tiles, wrapping the pipeline's stage ring several times.
    validate(tally, args, 5, 0, p);
    validate(tally, args, (size_t)37 * TILE + 3, 3, p);
    validate(tally, args, (size_t)1000003, 0, p);
    if (!args.quick) validate(tally, args, (size_t)1 << 24, 0, p);
    if (tally.failed == 0 && !args.quick) benchmark(args, p);
    return tally.finish("vector_add");
}
