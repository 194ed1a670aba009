/* vec4int.cu — the `vec4int` method: tutorial 004's sum_kernel_block. Each thread sums its
 * grid-stride share of 16-byte vectors (int4 / float4 / double2: the tutorial's thread_sum),
 * the block adds its threads' sums with the tutorial's reduce_sum — a shared-memory halving tree
 * written against a generic cg::thread_group, so it synchronises with g.sync() whatever the group
 * is — and thread 0 adds the block's sum into *out with ONE atomic per block.
 *
 * Determinism: the per-block sum is in a fixed order, but the blocks' atomics land in any order.
 * int32 accumulates in 64 bits and 64-bit integer atomics are exact in any order: the same
 * result on every run. float32 / float64 use floating-point atomics: NOT deterministic (the last
 * bits vary with the order of the blocks). The library's GPU int32 sum uses this kernel for that
 * reason: exact, one launch, one atomic per block, full-width loads.
 *
 * Changed from the tutorial, and why:
 *  - Its accumulator is an `int`: a sum of int32 values overflows past 2^31 (the tutorial's 2^24
 *    ones fit, 2^31 of them would not). Here int32 accumulates in int64 (Traits<int>::Acc) from
 *    the first add, including inside the vector (crm::vec_sum).
 *  - Its loop `i < n/4` over ((int4 *)input)[i] assumes a 16-byte-aligned input and silently
 *    drops the last n % 4 elements. crm::strided_sum_vec takes the unaligned head and the ragged
 *    tail one element per thread, and indexes in 64 bits (n past 2^31).
 *  - It launches n/256 blocks, so 3/4 of its threads find no vector to load (its own remark: n/4
 *    threads suffice). Here one thread per 16-byte vector, ceil(n / (256 * kVec)) blocks, capped
 *    by stride_grid at what is resident (a grid-stride loop gains nothing from more, and fewer
 *    blocks mean fewer atomics on *out); a forced count is honoured.
 *  - extern __shared__ is declared as bytes and cast: one extern array name cannot take a
 *    different element type per template instance. Its size is blockDim.x accumulators.
 *
 * reduce_sum writes every round's value before the first barrier and reads after it, then a
 * second barrier before the next round's writes: two barriers per level, 8 levels for 256
 * threads (block_sum's shuffles need one barrier in all; the tree is kept because it is the
 * tutorial's, and runs once per block). Every thread of the block runs every round (only the
 * add is conditional), so every g.sync() is reached by all. It needs a power-of-two group size
 * (256 here): with another size the halving would skip elements.
 *
 * Rounding chain (float; S = gridDim.x * 256, G = gridDim.x, V = (n - head)/kVec vectors, kVec =
 * 4 float / 2 double; error <= (chain length) * u * sum|x_i| to first order): per thread 2 (head,
 * tail) + ceil(V/S) * kVec (kVec - 1 adds inside a vector, one into the running sum); + 8 (the
 * halving tree) + G (the blocks' atomics on *out, in any order). */
#include "gpu/methods/common.cuh"

namespace {

/* Tutorial 004's reduce_sum: thread 0 returns the sum of the group's values. temp: one
 * accumulator per thread of g, in shared memory. */
template <typename Acc>
__device__ __forceinline__ Acc reduce_sum(cg::thread_group g, Acc *temp, Acc val)
{
    unsigned int lane = (unsigned int)g.thread_rank();
    /* size(): the generic thread_group's num_threads() is declared but not defined in the
     * CUDA 13 headers (an unresolved extern at link time). */
    for (unsigned int i = (unsigned int)g.size() / 2; i > 0; i /= 2) {
        temp[lane] = val;
        g.sync(); /* every value of this round is stored */
        if (lane < i) val += temp[lane + i];
        g.sync(); /* every read is done before the next round overwrites */
    }
    return val;
}

template <typename T>
__global__ void __launch_bounds__(CR_METHOD_THREADS)
    vec4int_kernel(const T *x, uint64_t n, typename crm::Traits<T>::Acc *out)
{
    typedef typename crm::Traits<T>::Acc Acc;
    extern __shared__ __align__(16) unsigned char vec4int_shared[];
    Acc *temp = (Acc *)vec4int_shared;
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();

    Acc thread_total = crm::strided_sum_vec(x, n, grid.thread_rank(), grid.num_threads());
    Acc block_total = reduce_sum<Acc>(block, temp, thread_total);
    if (block.thread_rank() == 0) crm::atomic_add(out, block_total);
}

template <typename T> int vec4int_launch(const cr_method_args *a, cr_method_report *r)
{
    typedef typename crm::Traits<T>::Acc Acc;
    const size_t shared_bytes = CR_METHOD_THREADS * sizeof(Acc);
    int resident = 0;
    CRM_TRY(crm::resident_blocks(vec4int_kernel<T>, CR_METHOD_THREADS, shared_bytes, a->sm_count,
                                 &resident));
    /* One 16-byte vector per thread per pass. */
    int blocks = crm::stride_grid(a->n, (uint64_t)CR_METHOD_THREADS * crm::Traits<T>::kVec,
                                  resident, a->blocks);
    r->blocks = blocks;
    r->threads = CR_METHOD_THREADS;
    r->launches = 1;
    crm::clear_stale_error();
    vec4int_kernel<T><<<blocks, CR_METHOD_THREADS, shared_bytes, (cudaStream_t)a->stream>>>(
        (const T *)a->x, a->n, (Acc *)a->out);
    CRM_CHECK_LAUNCH();
    return 0;
}

} // namespace

extern "C" int cr_method_vec4int(const cr_method_args *a, cr_method_report *r)
{
    return CRM_DISPATCH(a->dtype, vec4int_launch, a, r);
}
