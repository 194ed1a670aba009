/* multilevel.cu — the `multilevel` method: grid-stride loads, a shared-memory tree within the
 * block, warp shuffles for the last steps, and a single-launch fixed-order finish.
 *
 * Source: tutorial 003, "Example 3: Advanced Reduction with Multi-Level Groups"
 * (advanced_reduction). Per block:
 *  1. each thread adds x[i], i = its global rank, + grid size, ... (crm::strided_sum) and stores
 *     its sum in tree[thread];
 *  2. the block halves the tree in shared memory, tree[t] += tree[t + half], with a block.sync()
 *     after every step, down to 64 values;
 *  3. warp 0 takes the 64 values as 32 pairs (tree[lane] + tree[lane + 32]) and finishes with
 *     warp shuffles (crm::warp_sum);
 *  4. the block's sum goes through crm::store_and_finish: stored in a->partials[block], fence,
 *     ticket; the last block adds the partials in index order and writes *out.
 *
 * Differences from the tutorial, and why:
 *  - Step 3 replaces the tutorial's "warp-synchronous" tail (a volatile pointer into shared
 *    memory, five guarded steps tree[t] += tree[t + 16], ... + 1, with no synchronisation).
 *    That idiom relied on the 32 lanes of a warp executing in lockstep. Since Volta (sm_70),
 *    independent thread scheduling gives every lane its own program counter: the lanes of a
 *    warp may diverge and interleave at any point, so without a __syncwarp() between steps a
 *    lane can read its neighbour's slot before the neighbour has written it (or after it has
 *    already been overwritten by the next step), and the sum is silently wrong and varies from
 *    run to run. volatile only stops the compiler from keeping slots in registers (without it
 *    the compiler may also cache or reorder the shared loads and stores); it orders nothing
 *    between lanes. Shuffles fix both: shfl_down through a thread_block_tile<32> is a
 *    synchronising exchange of registers among the warp's lanes (a __syncwarp() between the
 *    shared-memory steps would also be correct, with a shared round trip per step).
 *  - The tutorial's tree loop stops at 64 values (stride > 32) but its tail starts at + 16, so
 *    tree[32 .. 63] (a quarter of the block's threads' sums) is never added. Step 3 adds the
 *    two halves first.
 *  - The tutorial writes one partial per block and leaves the rest to the host; here
 *    store_and_finish ends the sum in the same launch, in a fixed order (no floating-point
 *    atomics).
 *  - Indices are 64-bit (the tutorial's int overflows past 2^31 elements); the tree is a static
 *    array of the accumulator type, sized by the template (the tutorial's extern shared float).
 *
 * Grid: stride_grid(n, 256 * 8, resident, a->blocks): one block per 2048 elements (8 loads per
 * thread) until the GPU is full (resident_blocks: every SM at its occupancy), then a fixed
 * grid-stride. 8 elements per thread per pass amortise a block's fixed cost (three barriers,
 * the shared tree, a ticket, and one more partial for the last block to add), yet still give a
 * full GPU from about 2048 * resident elements (2.2M on an H100 at 8 blocks per SM); below that
 * a smaller grid finishes sooner than many nearly idle blocks. a->blocks > 0 forces the grid.
 *
 * What it trades:
 *  - Cost: one launch; scalar loads (no 16-byte vectors, as in the tutorial), a tree of 256
 *    Acc in shared memory and three block barriers per block, and a serial tail of G partials
 *    (G / 256 per thread) in the last block.
 *  - Determinism: for a fixed grid, yes for every dtype: each thread's elements, the tree, the
 *    shuffles and the finish are all in a fixed order, none depends on which block finished
 *    first. The grid itself depends on n, the GPU's SM count and the kernel's occupancy (or on
 *    a->blocks): the same GPU model and build give the same bits; another GPU may give other
 *    float/double bits. INT32 is exact (int64), so its result is the same everywhere.
 */
#include "gpu/methods/common.cuh"

namespace {

/* Elements per block per pass of the grid-stride loop before the grid stops growing (above). */
const uint64_t kElemsPerBlock = (uint64_t)CR_METHOD_THREADS * 8;

template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    multilevel_kernel(const T *x, uint64_t n, typename crm::Traits<T>::Acc *partials,
                      unsigned int *ticket, typename crm::Traits<T>::Acc *out)
{
    static_assert(kThreads >= 64 && kThreads <= 1024 && (kThreads & (kThreads - 1)) == 0,
                  "the tree halves a power of two down to two warps");
    typedef typename crm::Traits<T>::Acc Acc;
    __shared__ Acc tree[kThreads];

    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    unsigned int t = block.thread_rank();

    /* 1. Grid-stride loads. */
    uint64_t start = (uint64_t)block.group_index().x * kThreads + t;
    uint64_t stride = (uint64_t)gridDim.x * kThreads;
    tree[t] = crm::strided_sum(x, n, start, stride);
    block.sync();

    /* 2. Shared-memory tree down to 64 values. The condition of the loop is the same for every
     *    thread, so every thread reaches every block.sync(). */
#pragma unroll
    for (unsigned int half = kThreads / 2; half >= 64; half /= 2) {
        if (t < half) tree[t] += tree[t + half];
        block.sync();
    }

    /* 3. Warp 0: 64 values -> 32 pairs -> one, in registers. */
    Acc total = 0;
    if (warp.meta_group_rank() == 0) total = crm::warp_sum(warp, tree[t] + tree[t + 32]);

    /* 4. Fixed-order finish. The tree doubles as block_sum's 32-slot scratch of the last block:
     *    store_and_finish passes a block.sync() before anything writes the scratch, and warp 0
     *    has read tree[0 .. 63] before it arrives there. */
    crm::store_and_finish(block, total, block.group_index().x, gridDim.x, partials, ticket, out,
                          tree);
}

template <typename T> int launch_multilevel(const cr_method_args *a, cr_method_report *r)
{
    typedef typename crm::Traits<T>::Acc Acc;
    int resident = 0;
    CRM_TRY(crm::resident_blocks(multilevel_kernel<T, CR_METHOD_THREADS>, CR_METHOD_THREADS, 0,
                                 a->sm_count, &resident));
    int blocks = crm::stride_grid(a->n, kElemsPerBlock, resident, a->blocks);
    r->blocks = blocks;
    crm::clear_stale_error();
    multilevel_kernel<T, CR_METHOD_THREADS>
        <<<blocks, CR_METHOD_THREADS, 0, (cudaStream_t)a->stream>>>(
            (const T *)a->x, a->n, (Acc *)a->partials, a->ticket, (Acc *)a->out);
    CRM_CHECK_LAUNCH();
    r->launches = 1;
    return 0;
}

} // namespace

extern "C" int cr_method_multilevel(const cr_method_args *a, cr_method_report *r)
{
    r->threads = CR_METHOD_THREADS;
    return CRM_DISPATCH(a->dtype, launch_multilevel, a, r);
}
