/* coop_copy.cu — the async-copy tutorial's "aligned cooperative copy": copy n floats with
 * 16-byte float4 accesses wherever the pointers allow, at any alignment, against the copy
 * engine's device-to-device cudaMemcpyAsync.
 *
 *   0  cudaMemcpyAsync device-to-device: the ceiling, and what a program should call to copy.
 *   1  cooperative float4 copy, alignment checked on the device. When src and dst are equally
 *      misaligned (same address mod 16), a scalar head of up to 3 floats brings both to 16 bytes,
 *      the body is float4 loads and stores, the tail up to 3 scalars. When they are misaligned
 *      differently, no float4 can serve both: the stores stay float4 (dst aligned by the head)
 *      and each is fed by 4 scalar loads. The tutorial's version only printed a warning for a
 *      misaligned pointer and then cast it to float4* anyway (a misaligned-address fault on
 *      the GPU); it also demanded 128-byte alignment where 16 is what a float4 needs.
 *   2  scalar grid-stride copy: one float per access, what the alignment check saves.
 *   3  wide copy, U = 4: variant 1 measured 92.5 % of cudaMemcpyAsync aligned and 85-86 %
 *      misaligned on an H100 (docs/EXAMPLES.md). Three changes. (a) U independent float4 loads
 *      per thread are issued before any of their stores (a block copies tiles of U x 256 float4,
 *      tiles taken grid-stride by a grid of exactly the resident blocks), where variant 1 has
 *      one load in flight per thread. (b) The scalar head brings dst to 128 bytes, not 16, so
 *      that every warp's 512-byte store covers 4 whole cache lines: variant 1's stores at
 *      "both +4 B" start 16 bytes into a line, and each warp's store touches 5 lines, 2 of them
 *      in part, which the measured drop from 92.5 % to 85 % with an identical float4 body points
 *      to. (c) When src and dst differ mod 16, the loads stay float4 and aligned: dst4[i] is put
 *      together from the aligned source float4s a4[i] and a4[i + 1] that hold it (a whole number
 *      R = 1..3 of floats apart, a compile-time choice of components, made once per launch:
 *      the funnel shift of a byte copy, at float granularity), instead of 4 scalar loads. No
 *      load leaves [src, src + n): the head grows by 32 floats when it is shorter than R, and the
 *      last float4 goes to the scalar tail when a4[i + 1] would pass the end.
 *   4  as 3 with U = 8: twice the bytes in flight per thread, fewer resident threads.
 *   5  as 4 with a last-use hint on the loads (ld.global.lu, the library's choice for data read
 *      once, docs/PERF.md) and an evict-first hint on the stores (st.global.cs), so that neither
 *      side of a copy far larger than L2 pushes other data out of it.
 *
 * Validation: every copied float against the source, and 32 guard floats on each side of the
 * destination unchanged (an overrun of the head or tail shows), for lengths 0..3 around every
 * boundary and pointer offsets 0..3 floats on either side (the destination's from a 128-byte
 * boundary, so that variants 3-5 meet a head of 0 with a misaligned source), once on the grid
 * the benchmark uses and once on 3 blocks, which takes each block round many tiles. Benchmark:
 * 2^26 floats (268 MB read and 268 MB written), aligned, equally misaligned and differently
 * misaligned. */
#include "common.cuh"

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

namespace {

constexpr int THREADS = 256;

/* Floats before p reaches a 16-byte boundary (p is 4-byte aligned, as any float* is). */
__device__ size_t head_to_16(const void *p)
{
    return ((16 - (reinterpret_cast<uintptr_t>(p) & 15)) & 15) / sizeof(float);
}

__global__ void __launch_bounds__(THREADS)
    copy_coop(float *__restrict__ dst, const float *__restrict__ src, size_t n)
{
    cg::grid_group grid =
        cg::this_grid(); // ranks and size only: no grid.sync, no cooperative launch
    const size_t rank = grid.thread_rank(), threads = grid.num_threads();
    // Every thread takes the same branch: the pointers and n are the same for the whole grid.
    const size_t head = min(head_to_16(dst), n);
    const size_t n4 = (n - head) / 4, tail = head + n4 * 4;
    if (rank < head) dst[rank] = src[rank];
    float4 *d4 = reinterpret_cast<float4 *>(dst + head);
    if (head_to_16(src) == head_to_16(dst)) { // equally misaligned: float4 on both sides
        const float4 *s4 = reinterpret_cast<const float4 *>(src + head);
        for (size_t i = rank; i < n4; i += threads) d4[i] = s4[i];
    } else { // aligned float4 stores, each from 4 scalar loads (still coalesced across a warp)
        const float *s = src + head;
        for (size_t i = rank; i < n4; i += threads)
            d4[i] = make_float4(s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]);
    }
    if (tail + rank < n) dst[tail + rank] = src[tail + rank];
}

__global__ void __launch_bounds__(THREADS)
    copy_scalar(float *__restrict__ dst, const float *__restrict__ src, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = src[i];
}

/* Variants 3-5. Loads and stores of the body, plain or with the streaming hints. */
template <bool STREAM> __device__ __forceinline__ float4 load4(const float4 *p)
{
    if constexpr (STREAM)
        return __ldlu(p);
    else
        return *p;
}
template <bool STREAM> __device__ __forceinline__ void store4(float4 *p, float4 v)
{
    if constexpr (STREAM)
        __stcs(p, v);
    else
        *p = v;
}

/* dst4[i] = the source's float4 number i, for i in [0, m): with R == 0, a4 is the source itself
 * (16-byte aligned); with R = 1..3 the source begins R floats into a4[0], and dst4[i] takes the
 * last 4 - R floats of a4[i] and the first R of a4[i + 1] (the caller keeps a4[m] inside the
 * source). U float4 per thread per tile, all loaded before any is stored. */
template <int U, bool STREAM, int R>
__device__ __forceinline__ void copy_body(float4 *__restrict__ d4, const float4 *__restrict__ a4,
                                          size_t m)
{
    constexpr size_t TILE = (size_t)U * THREADS;
    auto get = [&](size_t i) {
        const float4 lo = load4<STREAM>(a4 + i);
        if constexpr (R == 0) {
            return lo;
        } else {
            const float4 hi = load4<STREAM>(a4 + i + 1);
            if constexpr (R == 1)
                return make_float4(lo.y, lo.z, lo.w, hi.x);
            else if constexpr (R == 2)
                return make_float4(lo.z, lo.w, hi.x, hi.y);
            else
                return make_float4(lo.w, hi.x, hi.y, hi.z);
        }
    };
    const size_t full = m / TILE;
    for (size_t t = blockIdx.x; t < full; t += gridDim.x) {
        const size_t base = t * TILE + threadIdx.x;
        float4 v[U];
#pragma unroll
        for (int j = 0; j < U; ++j) v[j] = get(base + (size_t)j * THREADS);
#pragma unroll
        for (int j = 0; j < U; ++j) store4<STREAM>(d4 + base + (size_t)j * THREADS, v[j]);
    }
    // The last, partial tile (fewer than TILE float4) by the whole grid, one float4 at a time.
    const size_t threads = (size_t)gridDim.x * THREADS;
    for (size_t i = full * TILE + (size_t)blockIdx.x * THREADS + threadIdx.x; i < m; i += threads)
        store4<STREAM>(d4 + i, get(i));
}

template <int U, bool STREAM>
__global__ void __launch_bounds__(THREADS)
    copy_wide(float *__restrict__ dst, const float *__restrict__ src, size_t n)
{
    const size_t rank = (size_t)blockIdx.x * THREADS + threadIdx.x;
    const size_t threads = (size_t)gridDim.x * THREADS;
    // Every thread computes the same split: it depends on the pointers and n only.
    size_t head = min(((128 - (reinterpret_cast<uintptr_t>(dst) & 127)) & 127) / sizeof(float), n);
    // R: how many floats the source (at the body's start) lies past a 16-byte boundary. Moving
    // the head by 32 floats (128 bytes) does not change it.
    const int r = (int)((reinterpret_cast<uintptr_t>(src + head) & 15) / sizeof(float));
    if (r != 0 && head < (size_t)r) head = min(head + 32, n); // a4[0] must not start before src
    size_t m = (n - head) / 4;                                // body float4s
    const size_t tail_floats = (n - head) % 4;
    if (r != 0 && m > 0 && tail_floats + r < 4) --m; // a4[m] must not pass src + n
    const size_t body_end = head + 4 * m;
    for (size_t i = rank; i < head; i += threads) dst[i] = src[i];
    for (size_t i = body_end + rank; i < n; i += threads) dst[i] = src[i];
    float4 *d4 = reinterpret_cast<float4 *>(dst + head);
    // The aligned float4 holding the body's first source float (src + head - r >= src whenever
    // m > 0). Formed from src by arithmetic, not from an integer, so that the compiler knows it
    // is global memory and emits global loads (an integer cast made them generic loads).
    const float4 *a4 = reinterpret_cast<const float4 *>(src + head - r);
    switch (r) {
    case 0: copy_body<U, STREAM, 0>(d4, a4, m); break;
    case 1: copy_body<U, STREAM, 1>(d4, a4, m); break;
    case 2: copy_body<U, STREAM, 2>(d4, a4, m); break;
    default: copy_body<U, STREAM, 3>(d4, a4, m); break;
    }
}

constexpr int VARIANTS = 6;
const char *const NAMES[VARIANTS] = {"0 cudaMemcpyAsync D2D",
                                     "1 coop float4 (checked)",
                                     "2 scalar grid-stride",
                                     "3 float4 x4 in flight, 128 B head",
                                     "4 float4 x8 in flight, 128 B head",
                                     "5 float4 x8, ld.lu + st.cs"};

/* One launch of variant 3-5: tiles of U x THREADS float4, a grid of at most the resident blocks
 * (and at most max_grid, when positive). */
template <int U, bool STREAM>
void launch_wide(float *dst, const float *src, size_t n, const cudaDeviceProp &p, int max_grid)
{
    const size_t tiles = (n / 4 + (size_t)U * THREADS - 1) / ((size_t)U * THREADS);
    size_t g = std::min<size_t>(tiles, ex::full_grid(copy_wide<U, STREAM>, THREADS, 0, p));
    if (max_grid > 0) g = std::min<size_t>(g, max_grid);
    copy_wide<U, STREAM><<<(int)std::max<size_t>(1, g), THREADS>>>(dst, src, n);
}

/* Variant v on one wave, or fewer blocks when there is less work (at least one: n may be 0),
 * and at most max_grid blocks when it is positive (validation: blocks that go round many
 * times). */
void launch(int v, float *dst, const float *src, size_t n, const cudaDeviceProp &p,
            int max_grid = 0)
{
    if (v == 0) {
        CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice));
        return;
    }
    const size_t per_thread = v == 1 ? 4 : 1;
    const size_t want = (n / per_thread + THREADS - 1) / THREADS;
    auto grid = [&](auto kernel) {
        size_t g = std::min<size_t>(want, ex::full_grid(kernel, THREADS, 0, p));
        if (max_grid > 0) g = std::min<size_t>(g, max_grid);
        return (int)std::max<size_t>(1, g);
    };
    switch (v) {
    case 1: copy_coop<<<grid(copy_coop), THREADS>>>(dst, src, n); break;
    case 2: copy_scalar<<<grid(copy_scalar), THREADS>>>(dst, src, n); break;
    case 3: launch_wide<4, false>(dst, src, n, p, max_grid); break;
    case 4: launch_wide<8, false>(dst, src, n, p, max_grid); break;
    case 5: launch_wide<8, true>(dst, src, n, p, max_grid); break;
    }
}

/* Guard floats on each side of the destination: 32 (128 bytes), so that the destination's
 * offsets 0..3 floats count from a 128-byte boundary (cudaMalloc's pointers are 256-byte
 * aligned) and variants 3-5 meet a head of 0 with every source offset. */
constexpr size_t GUARD = 32;

void validate(ex::Tally &tally, const ex::Args &args, const cudaDeviceProp &p, int max_grid)
{
    // 24653 = 3 x 8192 + 77: whole tiles of variants 3-5 (U x 256 float4) and a partial one.
    const size_t max_n = ((size_t)1 << 20) + 5, cap = max_n + 2 * GUARD + 4;
    const size_t lengths[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 1000, 4099, 24653, max_n};
    std::vector<float> src(cap), got(cap);
    ex::fill(src, 3);
    ex::DevBuf<float> dsrc(cap), ddst(cap);
    CUDA_CHECK(cudaMemcpy(dsrc.p, src.data(), dsrc.bytes(), cudaMemcpyHostToDevice));
    for (int v = 1; v < VARIANTS; ++v) { // variant 0 is the CUDA runtime's, not ours to validate
        if (!ex::wanted(args, v)) continue;
        int bad = 0, cases = 0;
        for (size_t n : lengths)
            for (size_t so = 0; so < 4; ++so)
                for (size_t dof = 0; dof < 4; ++dof) {
                    ++cases;
                    CUDA_CHECK(cudaMemset(ddst.p, 0xff, ddst.bytes())); // NaN guard pattern
                    launch(v, ddst.p + GUARD + dof, dsrc.p + so, n, p, max_grid);
                    CUDA_CHECK_LAUNCH();
                    const size_t span = n + 2 * GUARD + dof;
                    CUDA_CHECK(cudaMemcpy(got.data(), ddst.p, span * sizeof(float),
                                          cudaMemcpyDeviceToHost));
                    bool ok = ex::same(got.data() + GUARD + dof, src.data() + so, n, "copied");
                    for (size_t i = 0; i < span && ok; ++i) {
                        const bool inside = i >= GUARD + dof && i < GUARD + dof + n;
                        uint32_t bits;
                        std::memcpy(&bits, &got[i], 4);
                        if (!inside && bits != 0xffffffffu) {
                            std::printf("  guard float %zu overwritten\n", i);
                            ok = false;
                        }
                    }
                    if (!ok && ++bad <= 3)
                        std::printf("  n=%zu src offset %zu dst offset %zu floats: wrong\n", n, so,
                                    dof);
                }
        char what[128];
        std::snprintf(what, sizeof what,
                      "coop_copy %s, grid<=%d: %d cases (lengths x offsets), %d wrong", NAMES[v],
                      max_grid, cases, bad);
        tally.check(bad == 0, what);
    }
}

void benchmark(const ex::Args &args, const cudaDeviceProp &p)
{
    const size_t n = args.size > 0 ? (size_t)args.size : (size_t)1 << 26;
    ex::DevBuf<float> src(n + 4), dst(n + 4);
    ex::fill_device(src.p, src.n, 8);
    const double bytes = 2.0 * n * sizeof(float);
    struct Case {
        const char *name;
        size_t so, dof;
    };
    const Case cases[] = {{"aligned", 0, 0}, {"both +4 B", 1, 1}, {"src +4 B, dst +8 B", 1, 2}};
    std::printf("\n### coop_copy: n = %zu floats, %.0f MB read + %.0f MB written per call\n\n", n,
                bytes / 2e6, bytes / 2e6);
    std::printf("| pointers | variant | time (ms) | GB/s | of aligned cudaMemcpyAsync |\n"
                "|---|---|---:|---:|---:|\n");
    double ceil_gbs = 0;
    for (const Case &c : cases)
        for (int v = 0; v < VARIANTS; ++v) {
            if (v != 0 && !ex::wanted(args, v)) continue;
            const float ms =
                ex::time_ms([&] { launch(v, dst.p + c.dof, src.p + c.so, n, p); }, args.repeat);
            const double gbs = bytes / (ms * 1e6);
            if (ceil_gbs == 0) ceil_gbs = gbs; // the first row: aligned cudaMemcpyAsync
            std::printf("| %s | %s | %.4f | %.0f | %.1f%% |\n", c.name, NAMES[v], ms, gbs,
                        100.0 * gbs / ceil_gbs);
        }
}

} // namespace

int main(int argc, char **argv)
{
    const ex::Args args =
        ex::parse_args(argc, argv, "[--quick] [--variant 1-5] [--repeat R] [--size N]");
    const cudaDeviceProp p = ex::open_gpu("coop_copy");
    ex::Tally tally;
    validate(tally, args, p, 0); // the benchmark's grid
    validate(tally, args, p, 3); // 3 blocks, each taking many tiles
    if (tally.failed == 0 && !args.quick) benchmark(args, p);
    return tally.finish("coop_copy");
}
