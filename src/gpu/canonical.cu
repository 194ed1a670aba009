/* canonical.cu — canonical order v1 on the GPU, in one launch, for any N.
 *
 * The tree is docs/DETERMINISM.md's; this file only decides who computes each node.
 *
 * - One warp reduces one chunk (C elements = 32 rows of 512 bytes). Thread t holds lanes
 *   VEC*t .. VEC*t+VEC-1 and reads its 16 bytes of each row: every load instruction of the warp
 *   covers 512 contiguous bytes, and a thread has 32 independent 16-byte loads to issue. The row
 *   tree runs in registers, the first lane levels inside the thread, the last five lane levels
 *   through shfl_xor (cooperative_groups' thread_block_tile<32>). No shared memory, no barrier.
 * - Warps take level-1 chunks grid-stride. The partials of a level are grouped C at a time; each
 *   group has an integer counter. A warp that finishes a node stores it, fences, and increments
 *   its group's counter; the warp that brings the counter to the group's size reduces the group
 *   (one chunk of partials, read from L2) and climbs a level. The warp that completes the top
 *   node writes the result. So the work above level 1 is spread over the run instead of waiting
 *   for a "last block" at the end, and no floating-point atomics exist anywhere.
 * - Counters return to zero: the completing warp resets its group's counter, so the workspace
 *   is ready for the next launch in stream order without a memset.
 *
 * Loads: input chunks that are 16-byte aligned use vector loads; an input pointer aligned only
 * to the element size uses scalar loads of the same elements (same tree, same bits); the one
 * ragged chunk of a level uses guarded scalar loads that read -0.0 past the end. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "internal.h"
}

namespace cg = cooperative_groups;

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = 32 * kWarpsPerBlock;

template <typename T> struct Layout;
/* Tuning: kMinBlocks is __launch_bounds__' minimum resident blocks per SM. Unbounded, ptxas
 * hoists all 32 x 4 float loads and takes 255 registers (1 block of 8 warps per SM); with 4 it
 * fits 64 registers with no spill (nvcc 13.0, sm_90). float64 takes 78 registers unbounded
 * (3 blocks per SM) and spills when pushed to 64, so it stays unbounded. */
template <> struct Layout<float> {
    static constexpr int kMinBlocks = 4;
    using Vec = float4;
    static constexpr int kVec = 4;              /* lanes per thread */
    static constexpr int kLanes = CR_LANES_F32; /* 128 */
    static __device__ __forceinline__ float nan() { return __int_as_float(0x7fc00000); }
};
template <> struct Layout<double> {
    static constexpr int kMinBlocks = 1;
    using Vec = double2;
    static constexpr int kVec = 2;
    static constexpr int kLanes = CR_LANES_F64; /* 64 */
    static __device__ __forceinline__ double nan() { return __longlong_as_double(0x7ff8000000000000ll); }
};

/* A thread's lanes of one row, as a small array the compiler keeps in registers. */
template <typename T> struct Lanes {
    T v[Layout<T>::kVec];
};

template <typename T>
__device__ __forceinline__ Lanes<T> add(const Lanes<T> &a, const Lanes<T> &b)
{
    Lanes<T> r;
#pragma unroll
    for (int j = 0; j < Layout<T>::kVec; j++) r.v[j] = a.v[j] + b.v[j];
    return r;
}

/* How a thread reads its lanes of row `r` of the chunk at `p` (`m` valid elements). */
enum class Load { kVector, kVectorCoherent, kScalar, kGuarded };

template <typename T, Load L>
__device__ __forceinline__ Lanes<T> load_row(const T *__restrict__ p, int r, int t, int m)
{
    using Lay = Layout<T>;
    const int first = r * Lay::kLanes + t * Lay::kVec;
    Lanes<T> out;
    if constexpr (L == Load::kVector || L == Load::kVectorCoherent) {
        /* The input is read once and never written during the launch: the read-only path.
         * Partials are written by other warps of this launch: read them from L2 (.cg). */
        typename Lay::Vec q = L == Load::kVector
            ? __ldg(reinterpret_cast<const typename Lay::Vec *>(p + first))
            : __ldcg(reinterpret_cast<const typename Lay::Vec *>(p + first));
        if constexpr (Lay::kVec == 4) {
            out.v[0] = q.x; out.v[1] = q.y; out.v[2] = q.z; out.v[3] = q.w;
        } else {
            out.v[0] = q.x; out.v[1] = q.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < Lay::kVec; j++) {
            if constexpr (L == Load::kGuarded)
                out.v[j] = first + j < m ? __ldcg(p + first + j) : T(-0.0);
            else
                out.v[j] = __ldg(p + first + j);
        }
    }
    return out;
}

/* The row tree over rows [r0, r0 + ROWS): pairwise, in row order. Fully unrolled, so all 32
 * loads are independent instructions the scheduler can issue back to back. */
template <typename T, Load L, int ROWS> struct RowTree {
    static __device__ __forceinline__ Lanes<T> run(const T *p, int r0, int t, int m)
    {
        Lanes<T> a = RowTree<T, L, ROWS / 2>::run(p, r0, t, m);
        Lanes<T> b = RowTree<T, L, ROWS / 2>::run(p, r0 + ROWS / 2, t, m);
        return add(a, b);
    }
};
template <typename T, Load L> struct RowTree<T, L, 1> {
    static __device__ __forceinline__ Lanes<T> run(const T *p, int r0, int t, int m)
    {
        return load_row<T, L>(p, r0, t, m);
    }
};

/* One chunk, reduced by one warp. Every thread of the warp returns the chunk's value. */
template <typename T, Load L>
__device__ __forceinline__ T warp_chunk(const cg::thread_block_tile<32> &warp, const T *p, int m)
{
    const int t = warp.thread_rank();
    Lanes<T> s = RowTree<T, L, CR_ROWS>::run(p, 0, t, m);
    /* Lane levels inside the thread: adjacent pairs. */
    T v;
    if constexpr (Layout<T>::kVec == 4)
        v = (s.v[0] + s.v[1]) + (s.v[2] + s.v[3]);
    else
        v = s.v[0] + s.v[1];
    /* Lane levels across threads: thread t holds the node of lanes [VEC*t, VEC*t + VEC);
     * xor 1 pairs adjacent threads, xor 2 adjacent pairs of those, and so on. */
#pragma unroll
    for (int d = 1; d < 32; d *= 2) v += warp.shfl_xor(v, d);
    return v;
}

template <typename T> struct Params {
    const T *x;
    T *out;                                  /* the result: device or mapped host memory */
    T *partials[CR_MAX_LEVELS + 1];          /* partials[k]: level-k nodes, 1 <= k < levels */
    unsigned int *counters[CR_MAX_LEVELS + 1]; /* counters[k]: one per level-k node, k >= 2 */
    uint64_t count[CR_MAX_LEVELS + 1];
    int levels;
    int x_aligned;                           /* x is 16-byte aligned: vector loads */
};

/* A warp has finished node `idx` of level `k` with value v: store it, and while this warp is
 * the one completing a group, reduce that group and climb. Uniform across the warp. */
template <typename T>
__device__ void finish_node(const cg::thread_block_tile<32> &warp, const Params<T> &P, int k,
                            uint64_t idx, T v)
{
    constexpr uint64_t C = (uint64_t)CR_ROWS * Layout<T>::kLanes;
    for (;;) {
        if (k == P.levels) {
            if (warp.thread_rank() == 0) *P.out = v != v ? Layout<T>::nan() : v;
            return;
        }
        const uint64_t group = idx / C;
        const uint64_t first = group * C;
        const uint64_t rest = P.count[k] - first;
        const int size = rest < C ? (int)rest : (int)C;
        unsigned int done = 0;
        if (warp.thread_rank() == 0) {
            P.partials[k][idx] = v;
            __threadfence();                 /* the partial is visible before the ticket */
            done = atomicAdd(&P.counters[k + 1][group], 1u) + 1;
            if (done == (unsigned int)size) P.counters[k + 1][group] = 0; /* ready for next launch */
        }
        done = warp.shfl(done, 0);
        if (done != (unsigned int)size) return;
        __threadfence();                     /* the group's partials are read after the ticket */
        const T *g = P.partials[k] + first;
        v = size == (int)C ? warp_chunk<T, Load::kVectorCoherent>(warp, g, size)
                           : warp_chunk<T, Load::kGuarded>(warp, g, size);
        k += 1;
        idx = group;
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, Layout<T>::kMinBlocks) canonical_kernel(const Params<T> P)
{
    constexpr uint64_t C = (uint64_t)CR_ROWS * Layout<T>::kLanes;
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const uint64_t warps = (uint64_t)gridDim.x * kWarpsPerBlock;
    const uint64_t n = P.count[0], chunks = P.count[1];
    const uint64_t full = n / C;             /* chunks without padding */
    for (uint64_t c = (uint64_t)blockIdx.x * kWarpsPerBlock + warp.meta_group_rank(); c < chunks;
         c += warps) {
        const T *p = P.x + c * C;
        T v;
        if (c < full)
            v = P.x_aligned ? warp_chunk<T, Load::kVector>(warp, p, (int)C)
                            : warp_chunk<T, Load::kScalar>(warp, p, (int)C);
        else
            v = warp_chunk<T, Load::kGuarded>(warp, p, (int)(n - c * C));
        finish_node(warp, P, 1, c, v);
    }
}

template <typename T>
cudaError_t launch(const void *x, uint64_t n, void *out, void *partials, void *counters,
                   int blocks, cudaStream_t stream)
{
    constexpr uint64_t C = (uint64_t)CR_ROWS * Layout<T>::kLanes;
    Params<T> P = {};
    P.x = static_cast<const T *>(x);
    P.out = static_cast<T *>(out);
    P.levels = cr_level_counts(n, C, P.count);
    P.x_aligned = ((uintptr_t)x % 16) == 0;
    /* Same layout as cr_gpu_workspace_bytes() in gpu_host.c: partial arrays one after the other,
     * each 256-byte aligned; counters in their own zeroed region. */
    char *pp = static_cast<char *>(partials);
    unsigned int *cc = static_cast<unsigned int *>(counters);
    for (int k = 1; k < P.levels; k++) {
        P.partials[k] = reinterpret_cast<T *>(pp);
        pp += (P.count[k] * sizeof(T) + 255) / 256 * 256;
        P.counters[k + 1] = cc;
        cc += P.count[k + 1];
    }
    const uint64_t warps_needed = P.count[1];
    const uint64_t blocks_needed = (warps_needed + kWarpsPerBlock - 1) / kWarpsPerBlock;
    if ((uint64_t)blocks > blocks_needed) blocks = (int)blocks_needed;
    /* A single chunk needs a single warp. */
    const int threads = P.count[1] == 1 ? 32 : kThreads;
    canonical_kernel<T><<<blocks, threads, 0, stream>>>(P);
    return cudaGetLastError();
}

} // namespace

extern "C" {

/* Returns a cudaError_t. x, out: device-accessible; partials/counters: the handle's workspace. */
int cr_gpu_launch_canonical(int dtype, const void *x, uint64_t n, void *out, void *partials,
                            void *counters, int blocks, void *stream)
{
    if (dtype == COOPREDUCE_FLOAT32)
        return launch<float>(x, n, out, partials, counters, blocks, (cudaStream_t)stream);
    return launch<double>(x, n, out, partials, counters, blocks, (cudaStream_t)stream);
}

/* Resident blocks per SM of the kernel for `dtype` (0 when the GPU has no code for it), and
 * the CUDA error code. */
int cr_gpu_canonical_occupancy(int dtype, int *blocks_per_sm)
{
    *blocks_per_sm = 0;
    cudaError_t e = dtype == COOPREDUCE_FLOAT32
        ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, canonical_kernel<float>, kThreads, 0)
        : cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, canonical_kernel<double>, kThreads, 0);
    return (int)e;
}

int cr_gpu_warps_per_block(void) { return kWarpsPerBlock; }

} // extern "C"
