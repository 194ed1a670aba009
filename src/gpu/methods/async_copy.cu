/* async_copy.cu — the `async`, `barrier` and `pipeline` methods: the loads of a reduction staged
 * through shared memory with asynchronous copies (global -> shared without registers), in the
 * three forms of tutorial 003 "Evolution: From Synchronous to Asynchronous" and "Pipeline
 * Architecture":
 *  - `async`    (stage 2): cg::memcpy_async of a whole tile by the block, cg::wait(block);
 *  - `barrier`  (stage 3): cuda::memcpy_async of the tile completing on a block-scoped
 *                          cuda::barrier in shared memory, arrive_and_wait();
 *  - `pipeline` (stage 4): S = a->stages tiles in flight (1..8) through cuda::pipeline.
 * The tutorial's kernels copy and then call an abstract compute(); here the compute is the sum.
 *
 * Common shape (all three kernels):
 *  - A tile is 256 threads x 16 bytes = 4 KiB: 1024 float / 512 double / 1024 int elements.
 *    Thread t owns bytes [16 t, 16 t + 16) of every tile: its copy is one 16-byte cp.async
 *    (the widest; a warp covers 512 contiguous bytes, fully coalesced), and afterwards it adds
 *    exactly that one 16-byte vector from shared memory (crm::vec_sum). A quarter-warp reads
 *    8 x 16 = 128 consecutive bytes, all 32 banks once: no bank conflicts. 4 KiB also lets the
 *    deepest pipeline, 8 stages x 4 KiB = 32 KiB, stay in static shared memory (under 48 KiB,
 *    no cudaFuncAttributeMaxDynamicSharedMemorySize opt-in), and still leaves room for about
 *    6 such blocks per H100 SM. Bigger tiles would mean fewer stages in the same memory;
 *    smaller ones (4 or 8 bytes per thread) would need more copy instructions per byte.
 *  - Split of x: head = crm::head_elems(x, n) elements up to the first 16-byte boundary (the
 *    asynchronous copies need 16-byte aligned global addresses), then `tiles` full tiles of the
 *    aligned body, then the tail (fewer than one tile). Only full, aligned tiles are copied
 *    asynchronously; the head (< 4 elements) and the tail (< 1024) are added with plain loads,
 *    grid-stride over all threads (crm::strided_sum): the thread of global rank g takes head
 *    element g and tail elements g, g + S, ... (S = threads in the grid). That keeps every copy
 *    a whole aligned 4 KiB (no partial or zero-filled copies, no per-copy bounds checks) and
 *    makes any n and any element-aligned x correct.
 *  - Tiles: block b copies tiles b, b + G, b + 2G, ... (G = gridDim.x). The loop bound depends
 *    only on b and G, so all threads of a block run the same iterations and reach every
 *    block barrier.
 *  - Order per thread, fixed: its head element + its tail elements (one Acc), then its vector
 *    of each of its tiles in tile order. Then crm::block_sum and crm::store_and_finish (one
 *    launch; the last block adds the G partials in index order).
 *    The three kernels add the same values in the same order, so for the same grid they give
 *    the same bits as each other (and `pipeline` the same bits for every S).
 *
 * Grid: stride_grid(n, tile elements, resident_blocks, a->blocks): one block per tile until
 * the GPU is full, then grid-stride over tiles; a->blocks > 0 forces it. Blocks that get no
 * tile (n small, or a large forced grid) only add their share of the head and tail, possibly
 * nothing, and contribute 0.
 *
 * Determinism: for a fixed grid (and tile), yes for every dtype: every add is in a fixed order
 * and no floating-point atomic is used. The grid depends on n, the GPU's SM count and the
 * kernel's occupancy (which for `pipeline` depends on S) or a->blocks, so another GPU may give
 * other float/double bits. INT32 accumulates in int64 and is exact: the same result everywhere.
 *
 * Rounding chain (float; u = unit roundoff, error <= chain x u x sum|x_i| to first order;
 * S = gridDim.x * 256 threads, G = gridDim.x, kVec = 4 float / 2 double, T = tiles):
 * per thread: ceil(tail / S) <= ceil(1023 / S) tail adds + 1 (head share + tail share; the
 * head share is one element, exact) + ceil(T / G) x kVec (kVec - 1 adds inside a vector, 1
 * into the running sum); + 8 (block_sum: 5 shuffle levels + 3 for 8 warps); + ceil(G / 256)
 * (each finishing thread's sequential share of the partials) + 8 (the finishing block_sum).
 *
 * What each trades (cost): all three stage every byte through shared memory (a round trip
 * that plain 16-byte register loads, as in `gridsync`, do not pay) in exchange for no
 * registers tied up by loads in flight. `async` and `barrier` keep one buffer: the copy of
 * tile k + 1 cannot start before every thread has added tile k, so copies and adds alternate
 * and the latency of each copy is exposed (hidden only by the other blocks of the SM);
 * `pipeline` keeps S copies in flight per thread and overlaps them with the adds, at S x 4 KiB
 * of shared memory per block. */
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/pipeline>

#include "gpu/methods/common.cuh"

namespace {

/* Threads per block (the kernels' shared buffers are sized by it). */
const int kThreads = CR_METHOD_THREADS;
/* A tile: one 16-byte vector per thread. */
const unsigned int kTileBytes = kThreads * 16;
/* The deepest pipeline: 8 x 4 KiB of static shared memory. */
const int kMaxStages = 8;

static_assert(kThreads % 32 == 0, "whole warps");

/* Where the asynchronous copies go in x, and what is left to plain loads. */
template <typename T> struct TileSplit {
    typedef typename crm::Traits<T>::Vec Vec;
    uint64_t head;       /* elements before the first 16-byte boundary (at most n) */
    uint64_t tiles;      /* full tiles after the head */
    uint64_t tail_start; /* first element after the last full tile */
    const Vec *body;     /* x + head: 16-byte aligned; tile k is body[k * kThreads ..] */
};

template <typename T> __device__ __forceinline__ TileSplit<T> split_tiles(const T *x, uint64_t n)
{
    const uint64_t tile_elems = (uint64_t)kThreads * crm::Traits<T>::kVec;
    TileSplit<T> s;
    s.head = crm::head_elems(x, n);
    s.tiles = (n - s.head) / tile_elems;
    s.tail_start = s.head + s.tiles * tile_elems;
    s.body = (const typename crm::Traits<T>::Vec *)(x + s.head);
    return s;
}

/* The elements that no asynchronous copy covers (head and tail), grid-stride over all threads
 * of the grid: this thread's share, head first. */
template <typename T>
__device__ __forceinline__ typename crm::Traits<T>::Acc ragged_sum(const T *x, uint64_t n,
                                                                   const TileSplit<T> &s)
{
    uint64_t rank = (uint64_t)blockIdx.x * kThreads + threadIdx.x;
    uint64_t threads = (uint64_t)gridDim.x * kThreads;
    return crm::strided_sum(x, s.head, rank, threads) +
           crm::strided_sum(x + s.tail_start, n - s.tail_start, rank, threads);
}

/* ---- async (stage 2): cg::memcpy_async + cg::wait ------------------------------------------ */

/* One buffer: the block copies a tile, waits for it, adds, and must finish adding before the
 * buffer is refilled, so the copy of the next tile never overlaps the adds of this one (the
 * pipeline kernel removes exactly that serialisation). cg::memcpy_async with a 16-byte aligned
 * size (cuda::aligned_size_t<16>) goes straight to 16-byte cp.async (LDGSTS.128 on sm_80+),
 * thread r copying the r-th 16 bytes; cg::wait(block) waits for this thread's copies and then
 * syncs the block, so every thread's copy is visible to every thread. */
template <typename T>
__global__ void __launch_bounds__(kThreads)
    async_kernel(const T *x, uint64_t n, typename crm::Traits<T>::Acc *partials,
                 unsigned int *ticket, typename crm::Traits<T>::Acc *out)
{
    typedef typename crm::Traits<T>::Acc Acc;
    typedef typename crm::Traits<T>::Vec Vec;
    __shared__ Vec tile_buf[kThreads];
    __shared__ Acc scratch[32];

    cg::thread_block block = cg::this_thread_block();
    const unsigned int t = block.thread_rank();
    const TileSplit<T> s = split_tiles(x, n);

    Acc acc = ragged_sum(x, n, s);
    for (uint64_t k = blockIdx.x; k < s.tiles; k += gridDim.x) {
        cg::memcpy_async(block, tile_buf, s.body + k * kThreads,
                         cuda::aligned_size_t<16>(kTileBytes));
        cg::wait(block);
        acc += crm::vec_sum(tile_buf[t]);
        block.sync(); /* every thread has read the buffer before the next copy overwrites it */
    }
    acc = crm::block_sum(block, acc, scratch);
    crm::store_and_finish(block, acc, blockIdx.x, gridDim.x, partials, ticket, out, scratch);
}

/* ---- barrier (stage 3): cuda::memcpy_async + cuda::barrier ---------------------------------- */

/* One buffer as in async_kernel; completion is tracked by a block-scoped cuda::barrier in
 * shared memory instead of cp.async groups. What libcu++ (CCCL of CUDA 13.0, read in
 * cuda/__memcpy_async/dispatch_memcpy_async.h and memcpy_async_barrier.h) makes of the call:
 *  - sm_90+: the barrier is block-scoped, in shared memory, with the default completion, and
 *    the size is cuda::aligned_size_t<16>, so the copy becomes ONE bulk copy
 *    (cp.async.bulk.shared::cluster.global.mbarrier::complete_tx, the TMA engine) issued by
 *    thread 0 of the group, plus mbarrier.expect_tx of the 4096 bytes by thread 0; the phase
 *    completes when all 256 threads have arrived AND the 4096 bytes have landed. This needs
 *    16-byte aligned global and shared addresses and a size that is a multiple of 16: the
 *    aligned full tiles guarantee all three.
 *  - sm_80: 16-byte cp.async by every thread (as in async_kernel) plus
 *    cp.async.mbarrier.arrive, which holds the barrier's phase open until this thread's copies
 *    have landed.
 * The second arrive_and_wait is the tutorial's "before reusing shared memory": nobody issues
 * the next copy (on sm_90, thread 0's bulk copy) until every thread has read the buffer. */
template <typename T>
__global__ void __launch_bounds__(kThreads)
    barrier_kernel(const T *x, uint64_t n, typename crm::Traits<T>::Acc *partials,
                   unsigned int *ticket, typename crm::Traits<T>::Acc *out)
{
    typedef typename crm::Traits<T>::Acc Acc;
    typedef typename crm::Traits<T>::Vec Vec;
    typedef cuda::barrier<cuda::thread_scope_block> Barrier;
    __shared__ Vec tile_buf[kThreads];
    __shared__ Acc scratch[32];
/* A __shared__ object with a constructor draws warning 20054 ("dynamic initialization is not
 * supported"): shared memory is never constructed, which is why init() exists and thread 0
 * calls it below. libcu++'s documentation suppresses the warning the same way. */
#pragma nv_diagnostic push
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ Barrier tile_ready;
#pragma nv_diagnostic pop

    cg::thread_block block = cg::this_thread_block();
    const unsigned int t = block.thread_rank();
    if (t == 0) init(&tile_ready, block.size()); /* every thread arrives in each phase */
    block.sync();                                /* initialised before anyone uses it */

    const TileSplit<T> s = split_tiles(x, n);
    Acc acc = ragged_sum(x, n, s);
    for (uint64_t k = blockIdx.x; k < s.tiles; k += gridDim.x) {
        cuda::memcpy_async(block, tile_buf, s.body + k * kThreads,
                           cuda::aligned_size_t<16>(kTileBytes), tile_ready);
        tile_ready.arrive_and_wait(); /* the tile has landed */
        acc += crm::vec_sum(tile_buf[t]);
        tile_ready.arrive_and_wait(); /* every thread has read it */
    }
    acc = crm::block_sum(block, acc, scratch);
    crm::store_and_finish(block, acc, blockIdx.x, gridDim.x, partials, ticket, out, scratch);
}

/* ---- pipeline (stage 4): S tiles in flight through cuda::pipeline --------------------------- */

/* Per-thread pipelines (cuda::make_pipeline(), thread_scope_thread), not one block-scoped
 * pipeline: each thread copies its own 16 bytes of each tile into its own slot
 * (cuda::memcpy_async of cuda::aligned_size_t<16>(16): one cp.async.cg of 16 bytes;
 * producer_commit = cp.async.commit_group) and later reads only that slot. consumer_wait on a
 * thread pipeline (cp.async.wait_group) guarantees that THIS thread's copies have landed and
 * are visible to this thread, which is all it reads, so no block barrier is needed between
 * stages, and a fast warp can run ahead of a slow one. The reverse hazard (refilling a slot the
 * thread has just read) is ordered within the thread: PTX treats cp.async as a weak memory
 * operation in the generic proxy, so the thread's earlier load of the slot comes first in
 * program order, and the copy is issued only after it. A block-scoped pipeline would instead
 * need a block barrier (or the pipeline's shared state) per stage so that no thread refills
 * a buffer another thread is still reading.
 *
 * Schedule (the tutorial's): fill S stages, then for each tile: wait for the oldest stage
 * (pipeline_consumer_wait_prior<S - 1>: all but the S - 1 newest groups complete), add,
 * release, refill that stage with the tile S positions ahead, commit. A stage is committed
 * even when there is no tile left to copy (an empty group), so exactly S groups are always in
 * flight and the constant wait_prior<S - 1> is always the oldest stage; the tiles near the end
 * are therefore waited for exactly. The head and tail plain loads run after the fill, while the
 * first S copies are in flight. */
template <typename T, int S>
__global__ void __launch_bounds__(kThreads)
    pipeline_kernel(const T *x, uint64_t n, typename crm::Traits<T>::Acc *partials,
                    unsigned int *ticket, typename crm::Traits<T>::Acc *out)
{
    static_assert(S >= 1 && S <= kMaxStages, "1 to 8 stages");
    typedef typename crm::Traits<T>::Acc Acc;
    typedef typename crm::Traits<T>::Vec Vec;
    __shared__ Vec stage_buf[S][kThreads];
    __shared__ Acc scratch[32];

    cg::thread_block block = cg::this_thread_block();
    const unsigned int t = block.thread_rank();
    const TileSplit<T> s = split_tiles(x, n);
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();

    /* Fill: tiles b, b + G, ..., b + (S - 1) G into stages 0 .. S - 1. */
    uint64_t fetch = blockIdx.x; /* the next tile to copy */
#pragma unroll
    for (int stage = 0; stage < S; ++stage) {
        pipe.producer_acquire();
        if (fetch < s.tiles)
            cuda::memcpy_async(&stage_buf[stage][t], s.body + fetch * kThreads + t,
                               cuda::aligned_size_t<16>(16), pipe);
        pipe.producer_commit();
        fetch += gridDim.x;
    }

    Acc acc = ragged_sum(x, n, s); /* overlaps the copies in flight */

    int stage = 0;
    for (uint64_t k = blockIdx.x; k < s.tiles; k += gridDim.x) {
        cuda::pipeline_consumer_wait_prior<S - 1>(pipe); /* tile k is in stage_buf[stage] */
        acc += crm::vec_sum(stage_buf[stage][t]);
        pipe.consumer_release();
        pipe.producer_acquire();
        if (fetch < s.tiles)
            cuda::memcpy_async(&stage_buf[stage][t], s.body + fetch * kThreads + t,
                               cuda::aligned_size_t<16>(16), pipe);
        pipe.producer_commit();
        fetch += gridDim.x;
        stage = stage + 1 == S ? 0 : stage + 1;
    }
    /* Every non-empty group was waited for: each copied tile is one the loop consumed. */
    acc = crm::block_sum(block, acc, scratch);
    crm::store_and_finish(block, acc, blockIdx.x, gridDim.x, partials, ticket, out, scratch);
}

/* ---- Launchers ---------------------------------------------------------------------------- */

template <typename T> struct TileKernel {
    typedef void (*Fn)(const T *, uint64_t, typename crm::Traits<T>::Acc *, unsigned int *,
                       typename crm::Traits<T>::Acc *);
};

/* Grid, launch and report for any of the three kernels (same arguments, same grid rule). */
template <typename T>
int launch_tiled(typename TileKernel<T>::Fn kernel, const cr_method_args *a, cr_method_report *r)
{
    typedef typename crm::Traits<T>::Acc Acc;
    const uint64_t tile_elems = (uint64_t)kThreads * crm::Traits<T>::kVec;
    int resident = 0;
    CRM_TRY(crm::resident_blocks(kernel, kThreads, 0, a->sm_count, &resident));
    int blocks = crm::stride_grid(a->n, tile_elems, resident, a->blocks);
    r->blocks = blocks;
    crm::clear_stale_error();
    kernel<<<blocks, kThreads, 0, (cudaStream_t)a->stream>>>(
        (const T *)a->x, a->n, (Acc *)a->partials, a->ticket, (Acc *)a->out);
    CRM_CHECK_LAUNCH();
    r->launches = 1;
    return 0;
}

template <typename T> int launch_async(const cr_method_args *a, cr_method_report *r)
{
    return launch_tiled<T>(async_kernel<T>, a, r);
}

template <typename T> int launch_barrier(const cr_method_args *a, cr_method_report *r)
{
    return launch_tiled<T>(barrier_kernel<T>, a, r);
}

/* a->stages has been checked (1 .. kMaxStages). */
template <typename T> int launch_pipeline(const cr_method_args *a, cr_method_report *r)
{
    switch (a->stages) {
    case 1: return launch_tiled<T>(pipeline_kernel<T, 1>, a, r);
    case 2: return launch_tiled<T>(pipeline_kernel<T, 2>, a, r);
    case 3: return launch_tiled<T>(pipeline_kernel<T, 3>, a, r);
    case 4: return launch_tiled<T>(pipeline_kernel<T, 4>, a, r);
    case 5: return launch_tiled<T>(pipeline_kernel<T, 5>, a, r);
    case 6: return launch_tiled<T>(pipeline_kernel<T, 6>, a, r);
    case 7: return launch_tiled<T>(pipeline_kernel<T, 7>, a, r);
    default: return launch_tiled<T>(pipeline_kernel<T, 8>, a, r);
    }
}

} // namespace

extern "C" int cr_method_async(const cr_method_args *a, cr_method_report *r)
{
    r->threads = kThreads;
    return CRM_DISPATCH(a->dtype, launch_async, a, r);
}

extern "C" int cr_method_barrier(const cr_method_args *a, cr_method_report *r)
{
    r->threads = kThreads;
    return CRM_DISPATCH(a->dtype, launch_barrier, a, r);
}

extern "C" int cr_method_pipeline(const cr_method_args *a, cr_method_report *r)
{
    r->threads = kThreads;
    if (a->stages < 1 || a->stages > kMaxStages) return (int)cudaErrorInvalidValue;
    return CRM_DISPATCH(a->dtype, launch_pipeline, a, r);
}
