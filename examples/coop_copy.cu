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
 *
 * Validation: every copied float against the source, and 8 guard floats on each side of the
 * destination unchanged (an overrun of the head or tail shows), for lengths 0..3 around every
 * boundary and pointer offsets 0..3 floats on either side. Benchmark: 2^26 floats (256 MB read
 * and 256 MB written), aligned, equally misaligned and differently misaligned. */
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

const char *const NAMES[] = {"0 cudaMemcpyAsync D2D", "1 coop float4 (checked)",
                             "2 scalar grid-stride"};

void launch(int v, float *dst, const float *src, size_t n, const cudaDeviceProp &p)
{
    if (v == 0) {
        CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice));
        return;
    }
    // One wave, or fewer blocks when there is less work (at least one: n may be 0).
    const size_t per_thread = v == 1 ? 4 : 1;
    const size_t want = (n / per_thread + THREADS - 1) / THREADS;
    if (v == 1) {
        const int g = (int)std::max<size_t>(
            1, std::min<size_t>(want, ex::full_grid(copy_coop, THREADS, 0, p)));
        copy_coop<<<g, THREADS>>>(dst, src, n);
    } else {
        const int g = (int)std::max<size_t>(
            1, std::min<size_t>(want, ex::full_grid(copy_scalar, THREADS, 0, p)));
        copy_scalar<<<g, THREADS>>>(dst, src, n);
    }
}

constexpr size_t GUARD = 8;

void validate(ex::Tally &tally, const ex::Args &args, const cudaDeviceProp &p)
{
    const size_t lengths[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 1000, 4099, ((size_t)1 << 20) + 5};
    const size_t max_n = ((size_t)1 << 20) + 5, cap = max_n + 2 * GUARD + 4;
    std::vector<float> src(cap), got(cap);
    ex::fill(src, 3);
    ex::DevBuf<float> dsrc(cap), ddst(cap);
    CUDA_CHECK(cudaMemcpy(dsrc.p, src.data(), dsrc.bytes(), cudaMemcpyHostToDevice));
    for (int v = 1; v <= 2; ++v) { // variant 0 is the CUDA runtime's, not ours to validate
        if (!ex::wanted(args, v)) continue;
        int bad = 0, cases = 0;
        for (size_t n : lengths)
            for (size_t so = 0; so < 4; ++so)
                for (size_t dof = 0; dof < 4; ++dof) {
                    ++cases;
                    CUDA_CHECK(cudaMemset(ddst.p, 0xff, ddst.bytes())); // NaN guard pattern
                    launch(v, ddst.p + GUARD + dof, dsrc.p + so, n, p);
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
        std::snprintf(what, sizeof what, "coop_copy %s: %d cases (lengths x offsets), %d wrong",
                      NAMES[v], cases, bad);
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
        for (int v = 0; v <= 2; ++v) {
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
        ex::parse_args(argc, argv, "[--quick] [--variant 1-2] [--repeat R] [--size N]");
    const cudaDeviceProp p = ex::open_gpu("coop_copy");
    ex::Tally tally;
    validate(tally, args, p);
    if (tally.failed == 0 && !args.quick) benchmark(args, p);
    return tally.finish("coop_copy");
}
