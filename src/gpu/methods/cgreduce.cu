/* cgreduce.cu — the `cgreduce` method: Cooperative Groups' own collective, cg::reduce
 * (<cooperative_groups/reduce.h>), where the other methods hand-write their shuffle trees.
 *
 * Each thread sums its grid-stride share of 16-byte vectors (crm::strided_sum_vec: unaligned
 * head and ragged tail included); cg::reduce(warp, v, cg::plus<>) over each thread_block_tile<32>
 * gives every lane the warp's sum; lane 0 of each warp stores it in shared memory; the first warp
 * adds the per-warp sums with cg::reduce again; the block's partial goes through
 * crm::store_and_finish (the last block to take a ticket adds the partials in index order).
 * One launch, no atomics on values, fixed order: deterministic for every dtype for a fixed grid.
 * Not from one tutorial: it is the library-provided counterpart of tutorial 000's warpReduceSum /
 * blockReduceSum, to compare against them.
 *
 * What cg::reduce does underneath, and why int32 is split in halves. For float and double,
 * cg::reduce on a 32-thread tile is a shfl_xor butterfly (5 levels; a + b and b + a give the
 * same bits, so every lane holds the same, fixed-order sum). For integer types of at most 4 bytes
 * with cg::plus on sm_80+, it is one redux.sync.add instruction — 32-bit. An int32 sum of 32
 * lanes' running totals would overflow 32 bits almost at once, and int64 has no redux (cg::reduce
 * on long long is a shuffle butterfly again, two shuffles per level). To show the hardware path
 * honestly and still be exact, each element x is split as x = hi * 65536 + lo with
 * lo = x & 0xffff (unsigned, 0 .. 2^16 - 1) and hi = x >> 16 (arithmetic shift: -2^15 .. 2^15 - 1).
 * Each thread adds the halves into two 32-bit registers over a bounded batch, redux.sync adds
 * each half over the warp, and the warp's int64 running total takes hi * 65536 + lo in 64 bits.
 * The batch bound (kIntBatchVectors = 255 vectors of 4, plus at most one head and one tail
 * element in the first batch: at most 1022 <= 2^10 elements per thread per batch):
 *   lo: per thread <= 1022 * (2^16 - 1) < 2^26; over 32 lanes < 2^31 (< 2^32: no unsigned wrap)
 *   hi: per thread |.| <= 1022 * 2^15 < 2^25; over 32 lanes |.| < 2^30 (< 2^31: no signed wrap)
 * (Before sm_80 cg::reduce falls back to a 32-bit shuffle butterfly: the same bounds hold, the
 * same exact result.) The batches are warp-uniform (every lane runs the passes of the warp's
 * lane 0, which has the most vectors; lanes with one fewer skip the last load), so all 32 lanes
 * reach each redux.
 *
 * Grid: stride_grid — one vector per thread per pass, at most occupancy x SMs (a grid-stride
 * loop gains nothing from more), a forced count honoured up to CR_METHOD_MAX_GRID (the
 * single-launch finish needs no co-residency: the last block does not wait for the others).
 *
 * Rounding chain (float; S = gridDim.x * 256, G = gridDim.x, V = (n - head)/kVec vectors, kVec =
 * 4 float / 2 double; error <= (chain length) * u * sum|x_i| to first order): per thread 2 (head,
 * tail) + ceil(V/S) * kVec (kVec - 1 adds inside a vector, one into the running sum); + 5 (warp
 * butterfly) + 3 (8 warp sums; the 24 zero lanes add exactly) + ceil(G/256) (fixed_order_sum's
 * sequential adds per thread) + 8 (its block_sum). */
#include "gpu/methods/common.cuh"
#include <cooperative_groups/reduce.h>

namespace {

/* int4 vectors per thread between two warp-level flushes of the 32-bit halves (see above). */
const unsigned int kIntBatchVectors = 255;

/* The sum of this warp's grid-stride share, in every lane: floats. */
template <typename T>
__device__ __forceinline__ typename crm::Traits<T>::Acc
warp_share(cg::thread_block_tile<32> warp, const T *x, uint64_t n, uint64_t rank, uint64_t stride)
{
    typedef typename crm::Traits<T>::Acc Acc;
    return cg::reduce(warp, crm::strided_sum_vec(x, n, rank, stride), cg::plus<Acc>());
}

/* Adds x's 16-bit halves into the batch registers (x == hi * 65536 + lo exactly). */
__device__ __forceinline__ void add_halves(int x, unsigned int &lo, int &hi)
{
    lo += (unsigned int)x & 0xffffu;
    hi += x >> 16; /* arithmetic shift: floor(x / 65536) */
}

/* The same for int32, exactly, through redux.sync on 32-bit halves: the vector loop of
 * crm::strided_sum_vec (same head, body and tail split), in warp-uniform batches. */
template <>
__device__ __forceinline__ long long warp_share<int>(cg::thread_block_tile<32> warp, const int *x,
                                                     uint64_t n, uint64_t rank, uint64_t stride)
{
    uint64_t head = crm::head_elems(x, n);
    uint64_t vecs = (n - head) / 4;
    uint64_t tail_start = head + vecs * 4;
    unsigned int lo = 0;
    int hi = 0;
    /* At most one head and one tail element per thread, counted in the first batch's bound. */
    if (rank < head) add_halves(x[rank], lo, hi);
    if (rank < n - tail_start) add_halves(x[tail_start + rank], lo, hi);

    const int4 *body = (const int4 *)(x + head);
    /* The loop runs on the index of the warp's lane 0 (warp-uniform): lane 0 has the most
     * vectors of the warp, the others skip a load past the end. Counting passes this way also
     * avoids a 64-bit division (a called routine that costs a stack frame). */
    unsigned int lane = warp.thread_rank();
    uint64_t lane0 = rank - lane;
    long long total = 0;
    do {
        for (unsigned int b = 0; b < kIntBatchVectors && lane0 < vecs; ++b, lane0 += stride) {
            uint64_t i = lane0 + lane;
            if (i < vecs) {
                int4 v = body[i];
                add_halves(v.x, lo, hi);
                add_halves(v.y, lo, hi);
                add_halves(v.z, lo, hi);
                add_halves(v.w, lo, hi);
            }
        }
        /* redux.sync.add on each half; the recombination is exact in 64 bits. */
        unsigned int warp_lo = cg::reduce(warp, lo, cg::plus<unsigned int>());
        int warp_hi = cg::reduce(warp, hi, cg::plus<int>());
        total += (long long)warp_hi * 65536 + (long long)warp_lo;
        lo = 0;
        hi = 0;
    } while (lane0 < vecs);
    return total;
}

template <typename T>
__global__ void __launch_bounds__(CR_METHOD_THREADS)
    cgreduce_kernel(const T *x, uint64_t n, typename crm::Traits<T>::Acc *partials,
                    unsigned int *ticket, typename crm::Traits<T>::Acc *out)
{
    typedef typename crm::Traits<T>::Acc Acc;
    __shared__ Acc scratch[32];
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);

    Acc warp_total = warp_share(warp, x, n, grid.thread_rank(), grid.num_threads());
    if (warp.thread_rank() == 0) scratch[warp.meta_group_rank()] = warp_total;
    block.sync();
    Acc block_total = 0;
    if (warp.meta_group_rank() == 0) {
        Acc v = warp.thread_rank() < warp.meta_group_size() ? scratch[warp.thread_rank()] : Acc(0);
        block_total = cg::reduce(warp, v, cg::plus<Acc>());
    }
    /* Its first barrier comes after warp 0 has read scratch, before anyone rewrites it. */
    crm::store_and_finish(block, block_total, blockIdx.x, gridDim.x, partials, ticket, out,
                          scratch);
}

template <typename T> int cgreduce_launch(const cr_method_args *a, cr_method_report *r)
{
    typedef typename crm::Traits<T>::Acc Acc;
    int resident = 0;
    CRM_TRY(crm::resident_blocks(cgreduce_kernel<T>, CR_METHOD_THREADS, 0, a->sm_count, &resident));
    int blocks = crm::stride_grid(a->n, (uint64_t)CR_METHOD_THREADS * crm::Traits<T>::kVec,
                                  resident, a->blocks);
    r->blocks = blocks;
    r->threads = CR_METHOD_THREADS;
    r->launches = 1;
    crm::clear_stale_error();
    cgreduce_kernel<T><<<blocks, CR_METHOD_THREADS, 0, (cudaStream_t)a->stream>>>(
        (const T *)a->x, a->n, (Acc *)a->partials, a->ticket, (Acc *)a->out);
    CRM_CHECK_LAUNCH();
    return 0;
}

} // namespace

extern "C" int cr_method_cgreduce(const cr_method_args *a, cr_method_report *r)
{
    return CRM_DISPATCH(a->dtype, cgreduce_launch, a, r);
}
