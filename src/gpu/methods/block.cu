/* block.cu — the `block` method: one partial sum per block of 256 elements, added on the host.
 *
 * Source: tutorial 000 "Method 1: Block-Level Approach" (cooperative_group_sum), walked through
 * step by step in tutorial 002. Each thread loads one element (0 past the end of x), the block
 * adds its 256 values with warp shuffles and one shared-memory slot per warp (crm::block_sum),
 * and thread 0 stores the block's sum in a->partials[blockIdx.x]. There is no final reduction
 * on the GPU: as in the tutorial's host loop, the host adds the r->blocks partials in index
 * order (that code is the host's, not this file's).
 *
 * What it trades:
 *  - Cost: one thread per element means ceil(n / 256) blocks, each loading a single element per
 *    thread; the partials (one per 256 elements) are copied to and summed on the host, so the
 *    host's work and the copy grow with n. It is the simplest method, not a fast one.
 *  - Determinism: yes, for every dtype and every GPU. The grid depends only on n, every block
 *    adds in block_sum's fixed order, there are no atomics, and the host adds the partials in
 *    index order.
 *
 * Why:
 *  - The grid is not free: one thread per element is the method. a->blocks (a forced grid for
 *    tests) is therefore ignored, and so is the occupancy of the GPU.
 *  - gridDim.x is at most 2^31 - 1, so ceil(n / 256) blocks fit only while
 *    n <= (2^31 - 1) * 256 = 2^39 - 256 elements (about 5.5e11, 2 TiB of float input). Beyond
 *    that the launcher returns cudaErrorInvalidValue without launching (notice set): a grid of
 *    that size cannot be launched at all, and changing it would make this a different method.
 *  - Indices are 64-bit: blockIdx.x * 256 exceeds 2^32 for n > 2^32.
 *  - The kernel stores the partial in the accumulator type (float, double, or int64 for INT32),
 *    so integer partials are exact and the host adds them exactly.
 *  - twopass.cu runs this same launcher as its first pass, so the two methods share one kernel.
 */
#include <string.h>

#include "gpu/methods/common.cuh"

namespace {

/* One block per 256 elements: partials[b] = x[256 b] + ... + x[256 b + 255] (0 past n), added
 * in block_sum's order. */
template <typename T>
__global__ void block_partials_kernel(const T *x, uint64_t n,
                                      typename crm::Traits<T>::Acc *partials)
{
    typedef typename crm::Traits<T>::Acc Acc;
    __shared__ Acc warp_sums[32];
    cg::thread_block block = cg::this_thread_block();
    uint64_t i = (uint64_t)block.group_index().x * block.size() + block.thread_rank();
    Acc v = i < n ? (Acc)x[i] : Acc(0);
    v = crm::block_sum(block, v, warp_sums);
    if (block.thread_rank() == 0) partials[block.group_index().x] = v;
}

/* The largest grid a launch accepts in x (every GPU since compute capability 3.0). */
const uint64_t kMaxGridX = 2147483647ull;

const char kTooManyBlocks[] =
    "The block method needs one block per 256 elements, more than the 2^31 - 1 blocks a grid "
    "can have (n > 2^39 - 256).";
static_assert(sizeof kTooManyBlocks <= sizeof(((cr_method_report *)0)->notice),
              "the notice fits the report");

template <typename T> int launch_block(const cr_method_args *a, cr_method_report *r)
{
    typedef typename crm::Traits<T>::Acc Acc;
    /* ceil(n / 256), written so that it cannot overflow (n >= 1) */
    uint64_t blocks = (a->n - 1) / CR_METHOD_THREADS + 1;
    if (blocks > kMaxGridX) {
        memcpy(r->notice, kTooManyBlocks, sizeof kTooManyBlocks);
        return (int)cudaErrorInvalidValue;
    }
    r->blocks = (int)blocks;
    crm::clear_stale_error();
    block_partials_kernel<T>
        <<<(unsigned int)blocks, CR_METHOD_THREADS, 0, (cudaStream_t)a->stream>>>(
            (const T *)a->x, a->n, (Acc *)a->partials);
    CRM_CHECK_LAUNCH();
    r->launches = 1;
    return 0;
}

} // namespace

extern "C" int cr_method_block(const cr_method_args *a, cr_method_report *r)
{
    r->threads = CR_METHOD_THREADS;
    return CRM_DISPATCH(a->dtype, launch_block, a, r);
}
