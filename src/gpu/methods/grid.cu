/* grid.cu — the two grid-level methods: `grid` (tutorial 000, method 2, "cooperative_grid_sum")
 * and `gridsync` (a grid barrier between the per-block sums and the finish, as in cuda-samples'
 * reductionMultiBlockCG).
 *
 * `grid`: a grid-stride scalar loop (tutorial 000's, in 64-bit indices), a warp sum, the warps'
 * results added into one shared-memory accumulator of the block with shared atomics, and one
 * global atomic per block into *out. One launch, no workspace. It never calls grid.sync(), so
 * the cooperative launch buys it nothing but the tutorial's shape: where cooperative launch is
 * unavailable the same kernel runs as an ordinary grid (fell_back = 1), correct either way.
 * The order of both the shared and the global atomics varies from run to run: float32 and
 * float64 results are NOT deterministic (the last bits vary); int32 is exact (64-bit integer
 * atomics), so its result is the same on every run.
 *
 * Fixed from the tutorial: it reads `tid` before declaring it and must initialise the shared
 * accumulator before any warp adds into it — here thread 0 zeroes it, then block.sync(), then
 * the loop; its 32-bit `unsigned int i < n` loop cannot pass 2^32 elements, here 64-bit.
 *
 * `gridsync`: one cooperative kernel. Each block sums its grid-stride share (16-byte loads),
 * block_sum, and thread 0 stores the block's partial; cg::this_grid().sync(); then block 0
 * adds the gridDim.x partials in index order (crm::fixed_order_sum) and writes *out. No atomics,
 * fixed order everywhere: deterministic for every dtype for a fixed grid. The grid must be
 * co-resident (grid.sync() would otherwise wait forever for blocks that never start; the
 * cooperative launch refuses such a grid), so it is at most occupancy x SMs, even when forced.
 * Without cooperative launch the same first phase runs as an ordinary kernel and
 * crm::final_pass_kernel<<<1, 256>>> finishes: two launches, the SAME bits for the same grid,
 * because the per-block phase is one __device__ function used by both kernels and both finishes
 * are crm::fixed_order_sum over gridDim.x partials with 256 threads.
 *
 * Grids: occupancy (resident_blocks) x SMs at most, fewer when n needs fewer, a forced count
 * clamped to what is resident. Both methods compute it the same way whether or not they can
 * launch cooperatively, so a fallback runs the grid the cooperative launch would have run.
 *
 * Why gridsync uses 16-byte loads (strided_sum_vec) where `grid` keeps the tutorial's scalar
 * loop: a co-resident grid has at most a few threads per element slot of the GPU, so every
 * thread loops many times; a vector load moves 4x (float/int) or 2x (double) the bytes per
 * instruction and keeps more bytes in flight per thread, which a bandwidth-bound persistent loop
 * needs. The `grid` method is left as the tutorial wrote it, scalar, for comparison.
 *
 * Rounding chains (float; S = gridDim.x * 256 threads, G = gridDim.x, u = unit roundoff; the
 * error is at most (chain length) * u * sum|x_i| to first order):
 *   grid:     ceil(n/S) sequential adds per thread + 5 (warp) + 8 (the block's shared atomics, in
 *             any order) + G (the global atomics, in any order).
 *   gridsync: with V = (n - head)/kVec vectors (kVec = 4 float, 2 double): per thread the head
 *             element, the tail element, then ceil(V/S) vectors each of kVec-1 adds inside the
 *             vector and one into the running sum: 2 + ceil(V/S)*kVec; + 8 (block_sum: 5 + 3)
 *             + ceil(G/256) sequential adds (fixed_order_sum) + 8 (its block_sum). */
#include <stdio.h>

#include "gpu/methods/common.cuh"

namespace {

/* ---- Shared by both launchers -------------------------------------------------------------- */

/* Writes "cooperative launch unavailable (<why>): <then>" into the notice. */
void set_fallback_notice(cr_method_report *r, const char *why, const char *then)
{
    snprintf(r->notice, sizeof r->notice, "cooperative launch unavailable (%s): %s", why, then);
}

/* A grid that can be co-resident: what n needs (work items of per_block each), at most
 * `resident` blocks; a forced count (> 0) wins but is clamped to `resident` as well. */
int coresident_grid(uint64_t work, uint64_t per_block, int resident, int forced)
{
    int blocks = crm::stride_grid(work, per_block, resident, forced);
    if (blocks > resident) blocks = resident;
    if (blocks > CR_METHOD_MAX_GRID) blocks = CR_METHOD_MAX_GRID; /* the workspace's slots */
    return blocks < 1 ? 1 : blocks;
}

/* ---- grid ---------------------------------------------------------------------------------- */

/* Tutorial 000's cooperative_grid_sum, with its order of initialisation fixed and 64-bit
 * indices. Correct in an ordinary launch too: cg::this_grid()'s rank and size come from the
 * launch configuration; only grid.sync() needs a cooperative launch, and it is not called. */
template <typename T>
__global__ void __launch_bounds__(CR_METHOD_THREADS)
    grid_atomic_kernel(const T *x, uint64_t n, typename crm::Traits<T>::Acc *out)
{
    typedef typename crm::Traits<T>::Acc Acc;
    __shared__ Acc block_total;
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);

    /* Zeroed and published before any warp can add into it. */
    if (block.thread_rank() == 0) block_total = Acc(0);
    block.sync();

    Acc v = crm::strided_sum(x, n, grid.thread_rank(), grid.num_threads());
    v = crm::warp_sum(warp, v);
    if (warp.thread_rank() == 0) crm::atomic_add(&block_total, v); /* shared-memory atomic */
    block.sync();                                                  /* every warp's add has landed */
    if (block.thread_rank() == 0) crm::atomic_add(out, block_total);
}

template <typename T> int grid_launch(const cr_method_args *a, cr_method_report *r)
{
    typedef typename crm::Traits<T>::Acc Acc;
    const T *x = (const T *)a->x;
    uint64_t n = a->n;
    Acc *out = (Acc *)a->out;
    cudaStream_t stream = (cudaStream_t)a->stream;

    int resident = 0;
    CRM_TRY(
        crm::resident_blocks(grid_atomic_kernel<T>, CR_METHOD_THREADS, 0, a->sm_count, &resident));
    /* One element per thread per pass of the scalar loop. */
    int blocks = coresident_grid(n, CR_METHOD_THREADS, resident, a->blocks);

    r->blocks = blocks;
    r->threads = CR_METHOD_THREADS;
    r->launches = 1;
    crm::clear_stale_error();
    if (!a->no_cooperative) {
        void *params[] = {(void *)&x, (void *)&n, (void *)&out};
        CRM_TRY(cudaLaunchCooperativeKernel((const void *)grid_atomic_kernel<T>, dim3(blocks),
                                            dim3(CR_METHOD_THREADS), params, 0, stream));
        r->cooperative = 1;
    } else {
        grid_atomic_kernel<T><<<blocks, CR_METHOD_THREADS, 0, stream>>>(x, n, out);
        CRM_CHECK_LAUNCH();
        r->cooperative = 0;
        r->fell_back = 1;
        set_fallback_notice(r, a->no_cooperative, "launched as an ordinary grid");
    }
    return 0;
}

/* ---- gridsync ------------------------------------------------------------------------------ */

/* The first phase of both gridsync kernels, literally the same code so that the cooperative
 * kernel and the fallback produce the same partials: this block's share of the grid-stride
 * vector loop, block_sum, thread 0 stores the block's partial at partials[blockIdx.x].
 * scratch is reusable after the caller's next block-wide barrier (grid.sync() includes one;
 * the fallback kernel simply ends). */
template <typename T>
__device__ __forceinline__ void store_block_partial(const T *x, uint64_t n,
                                                    typename crm::Traits<T>::Acc *partials,
                                                    typename crm::Traits<T>::Acc *scratch)
{
    typedef typename crm::Traits<T>::Acc Acc;
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    Acc v = crm::strided_sum_vec(x, n, grid.thread_rank(), grid.num_threads());
    Acc total = crm::block_sum(block, v, scratch);
    if (block.thread_rank() == 0) partials[grid.block_rank()] = total;
}

/* Cooperative: partials, grid barrier, block 0 adds them in index order. */
template <typename T>
__global__ void __launch_bounds__(CR_METHOD_THREADS)
    gridsync_kernel(const T *x, uint64_t n, typename crm::Traits<T>::Acc *partials,
                    typename crm::Traits<T>::Acc *out)
{
    typedef typename crm::Traits<T>::Acc Acc;
    __shared__ Acc scratch[32];
    cg::grid_group grid = cg::this_grid();
    store_block_partial(x, n, partials, scratch);
    /* Every block's partial is written and visible (the grid barrier orders memory at device
     * scope); its leading block barrier also ends this block's use of scratch. */
    grid.sync();
    if (grid.block_rank() == 0) {
        /* What crm::final_pass_kernel<<<1, 256>>> computes, with the same 256 threads. */
        Acc sum =
            crm::fixed_order_sum(cg::this_thread_block(), partials, grid.num_blocks(), scratch);
        if (threadIdx.x == 0) *out = sum;
    }
}

/* The fallback's first kernel: the same phase, as an ordinary grid. */
template <typename T>
__global__ void __launch_bounds__(CR_METHOD_THREADS)
    gridsync_partials_kernel(const T *x, uint64_t n, typename crm::Traits<T>::Acc *partials)
{
    __shared__ typename crm::Traits<T>::Acc scratch[32];
    store_block_partial(x, n, partials, scratch);
}

template <typename T> int gridsync_launch(const cr_method_args *a, cr_method_report *r)
{
    typedef typename crm::Traits<T>::Acc Acc;
    const T *x = (const T *)a->x;
    uint64_t n = a->n;
    Acc *partials = (Acc *)a->partials;
    Acc *out = (Acc *)a->out;
    cudaStream_t stream = (cudaStream_t)a->stream;

    /* The cooperative kernel's residency sizes the grid on both paths, so the fallback runs
     * the grid (and gives the bits) the cooperative launch would have. */
    int resident = 0;
    CRM_TRY(crm::resident_blocks(gridsync_kernel<T>, CR_METHOD_THREADS, 0, a->sm_count, &resident));
    /* One 16-byte vector per thread per pass. */
    int blocks =
        coresident_grid(n, (uint64_t)CR_METHOD_THREADS * crm::Traits<T>::kVec, resident, a->blocks);

    r->blocks = blocks;
    r->threads = CR_METHOD_THREADS;
    crm::clear_stale_error();
    if (!a->no_cooperative) {
        void *params[] = {(void *)&x, (void *)&n, (void *)&partials, (void *)&out};
        CRM_TRY(cudaLaunchCooperativeKernel((const void *)gridsync_kernel<T>, dim3(blocks),
                                            dim3(CR_METHOD_THREADS), params, 0, stream));
        r->launches = 1;
        r->cooperative = 1;
    } else {
        gridsync_partials_kernel<T><<<blocks, CR_METHOD_THREADS, 0, stream>>>(x, n, partials);
        CRM_CHECK_LAUNCH();
        /* 256 threads: the in-kernel finish's block size, hence its order. */
        crm::final_pass_kernel<Acc>
            <<<1, CR_METHOD_THREADS, 0, stream>>>(partials, (unsigned long long)blocks, out);
        CRM_CHECK_LAUNCH();
        r->launches = 2;
        r->cooperative = 0;
        r->fell_back = 1;
        set_fallback_notice(r, a->no_cooperative,
                            "block partials from an ordinary grid, then a one-block final "
                            "pass (the same bits)");
    }
    return 0;
}

} // namespace

extern "C" int cr_method_grid(const cr_method_args *a, cr_method_report *r)
{
    return CRM_DISPATCH(a->dtype, grid_launch, a, r);
}

extern "C" int cr_method_gridsync(const cr_method_args *a, cr_method_report *r)
{
    return CRM_DISPATCH(a->dtype, gridsync_launch, a, r);
}
