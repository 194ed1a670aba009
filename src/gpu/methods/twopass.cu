/* twopass.cu — the `twopass` method: the `block` method's partials, added on the GPU by a second
 * kernel of one block.
 *
 * Source: tutorial 001 "Deterministic Reduction and CGA on GPU" (firstPassReduction +
 * secondPassReduction). First pass: one thread per element, ceil(n / 256) blocks of 256, one
 * partial per block in a->partials (exactly the `block` method, whose launcher this file calls
 * rather than repeating its kernel). Second pass: one block of 256 threads, thread t adds
 * partials t, t + 256, ... left to right, then the block adds the 256 thread sums in
 * block_sum's fixed order and thread 0 writes *out (crm::final_pass_kernel).
 *
 * The tutorial's secondPassReduction ends with a warp-level sum only: thread 0 writes the sum of
 * warp 0's 32 values, and the other seven warps' shares are dropped. It is right only while
 * there are at most 32 partials (n <= 8192, the tutorial's own N, which is why it printed the
 * expected total). final_pass_kernel does a full block sum (warps, then one shared slot per
 * warp, then warp 0), so every partial counts for any n.
 *
 * What it trades:
 *  - Cost: two launches (the second is one block, serial in the number of partials, about
 *    n / 65536 loads per thread) and a round trip of the partials through global memory; the
 *    first pass loads one element per thread. In exchange nothing returns to the host.
 *  - Determinism: yes, for every dtype and every GPU: the grid depends only on n, both passes
 *    add in a fixed order, and there are no atomics (the ticket is not used and stays zero).
 *
 * Why:
 *  - Two kernels in stream order need no fence or ticket between the passes: the second launch
 *    starts after every partial of the first is written.
 *  - The grid of the first pass is not free (one thread per element), so a->blocks is ignored;
 *    n > 2^39 - 256 needs more than 2^31 - 1 blocks and fails with cudaErrorInvalidValue, as
 *    in block.cu.
 *  - Partials are in the accumulator type: int64 for INT32, so the integer sum is exact.
 */
#include "gpu/methods/common.cuh"

namespace {

template <typename T> int launch_twopass(const cr_method_args *a, cr_method_report *r)
{
    typedef typename crm::Traits<T>::Acc Acc;
    /* First pass: fills r (blocks, threads, launches = 1) and leaves r->blocks partials. */
    int e = cr_method_block(a, r);
    if (e != 0) return e;
    crm::clear_stale_error();
    crm::final_pass_kernel<Acc><<<1, CR_METHOD_THREADS, 0, (cudaStream_t)a->stream>>>(
        (const Acc *)a->partials, (unsigned long long)r->blocks, (Acc *)a->out);
    CRM_CHECK_LAUNCH();
    r->launches = 2;
    return 0;
}

} // namespace

extern "C" int cr_method_twopass(const cr_method_args *a, cr_method_report *r)
{
    return CRM_DISPATCH(a->dtype, launch_twopass, a, r);
}
