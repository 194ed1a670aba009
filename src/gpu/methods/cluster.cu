/* cluster.cu — the `cluster` method: thread-block clusters of 8 blocks that add their blocks'
 * sums through distributed shared memory, then a single-launch fixed-order finish over one
 * partial per cluster.
 *
 * Source: tutorial 001 "Deterministic Reduction and CGA on GPU", its CGA (cooperative grid
 * array = thread-block cluster, Hopper / sm_90) section: blocks of one cluster run at the same
 * time on SMs of one GPC, can synchronise with cluster.sync() and read each other's shared
 * memory. The tutorial describes the feature and a deterministic two-pass sum; this method is
 * that sum with the cluster as an extra level between the block and the grid:
 *  1. every block sums its grid-stride share with 16-byte loads (crm::strided_sum_vec) and
 *     block_sum, and thread 0 puts the block's sum in the block's own shared slot;
 *  2. cluster.sync(): every slot of the cluster is written and visible cluster-wide;
 *  3. thread 0 of the block of cluster rank 0 reads the 8 slots through
 *     cluster.map_shared_rank(slot, rank) in rank order 0..7 and adds them in that order;
 *  4. cluster.sync() again: no block may exit while its slot can still be read (the shared
 *     memory of an exited block is gone; reading it is undefined);
 *  5. the rank-0 blocks put the cluster's sum through crm::store_and_finish with slot = the
 *     cluster's index and count = the number of clusters: the last of them adds the cluster
 *     partials in index order and writes *out. The other blocks are done after step 4.
 *     Whether a block participates depends only on its rank, the same for all its threads, so
 *     the block barriers inside store_and_finish are reached by whole blocks.
 *
 * Grid: one cluster = 8 blocks (the portable cluster size: every sm_90+ GPU can schedule it
 * without opting in to non-portable sizes), set with cudaLaunchAttributeClusterDimension on
 * cudaLaunchKernelEx, so the grid is a multiple of 8 blocks. It is stride_grid(n, 2048 float /
 * 1024 double / 2048 int, 8 x cudaOccupancyMaxActiveClusters, a->blocks) rounded up to a
 * multiple of 8: one block per 8 KiB of input (two 16-byte loads per thread per pass, the
 * same 8 KiB per block per pass as the `multilevel` method) until every cluster slot of the
 * GPU is taken, then a fixed grid-stride. The occupancy query for clusters is used rather
 * than SMs x blocks-per-SM because clusters must fit inside a GPC; the two can differ. Since
 * that bound is a multiple of 8, rounding up never passes it. A forced a->blocks is rounded up
 * to a multiple of 8 (at most CR_METHOD_MAX_GRID, itself a multiple of 8).
 *
 * Unsupported: the host (methods_host.c) refuses a GPU below compute capability 9.0 or
 * without cudaDevAttrClusterLaunch, or with clusters disabled for testing, before calling this
 * launcher; here only a GPU that cannot schedule one cluster of this kernel returns
 * CR_METHOD_UNSUPPORTED (nothing enqueued). The kernel is still compiled for sm_80 (the build's
 * other target) but its body there is a trap: it is never launched there.
 *
 * What it trades:
 *  - Cost: one launch; 16-byte loads; two cluster barriers per block (blocks of a cluster wait
 *    for the slowest of them), 8 distributed-shared-memory loads per cluster, and a serial
 *    tail of G / 8 partials in the last block instead of G: the cluster level shortens the
 *    finish 8-fold. Cluster scheduling may leave some SMs idle when a GPC's free SMs cannot
 *    hold a whole cluster.
 *  - Determinism: for a fixed grid, yes for every dtype: each thread's loads, block_sum, the
 *    rank order inside a cluster and the index order of the finish are fixed; which block or
 *    cluster finishes first changes nothing. The grid depends on n, the GPU (its cluster
 *    occupancy) and a->blocks, so another GPU may give other float/double bits. INT32
 *    accumulates in int64 and is exact: the same result everywhere.
 *
 * Rounding chain (float; u = unit roundoff, error <= chain x u x sum|x_i| to first order;
 * S = gridDim.x * 256 threads, V = vectors of the aligned body, kVec = 4 float / 2 double):
 * per thread 2 (head and tail element) + ceil(V / S) x kVec (kVec - 1 adds inside a vector, 1
 * into the running sum); + 8 (block_sum: 5 shuffle levels + 3 for 8 warps); + 7 (the 8 block
 * sums of a cluster, added in sequence); + ceil(C / 256) (C = G / 8 cluster partials, each
 * finishing thread's sequential share) + 8 (the finishing block_sum). */
#include <stdio.h>
#include <string.h>

#include "gpu/methods/common.cuh"

namespace {

/* Blocks per cluster: the portable maximum (no cudaFuncAttributeNonPortableClusterSizeAllowed
 * needed). Also the width of the distributed-shared-memory sum. */
const int kClusterBlocks = 8;

/* 16-byte loads per thread per pass of the grid-stride loop before the grid stops growing. */
const int kVecsPerThread = 2;

template <typename T>
__global__ void __launch_bounds__(CR_METHOD_THREADS)
    cluster_kernel(const T *x, uint64_t n, typename crm::Traits<T>::Acc *partials,
                   unsigned int *ticket, typename crm::Traits<T>::Acc *out)
{
#if __CUDA_ARCH__ >= 900
    typedef typename crm::Traits<T>::Acc Acc;
    __shared__ Acc scratch[32];
    __shared__ Acc block_total; /* read by the cluster's rank-0 block through DSMEM */

    cg::grid_group grid = cg::this_grid();
    cg::cluster_group cluster = cg::this_cluster();
    cg::thread_block block = cg::this_thread_block();

    /* 1. The block's sum. */
    Acc v = crm::strided_sum_vec(x, n, grid.thread_rank(), grid.num_threads());
    v = crm::block_sum(block, v, scratch);
    if (block.thread_rank() == 0) block_total = v;

    /* 2. Every block's slot is written (cluster.sync() is a release/acquire barrier of the
     *    whole cluster). */
    cluster.sync();

    /* 3. Rank 0 adds the 8 slots in rank order. The loads are independent: the compiler may
     *    issue all 8 before the first add; the adds stay in order. */
    Acc cluster_total = 0;
    bool leader = cluster.block_rank() == 0;
    if (leader && block.thread_rank() == 0) {
#pragma unroll
        for (int rank = 0; rank < kClusterBlocks; ++rank)
            cluster_total += *cluster.map_shared_rank(&block_total, rank);
    }

    /* 4. Every slot has been read: blocks may exit (and release their shared memory). */
    cluster.sync();

    /* 5. One partial per cluster, fixed-order finish. */
    if (leader)
        crm::store_and_finish(block, cluster_total, (unsigned int)grid.cluster_rank(),
                              (unsigned int)grid.num_clusters(), partials, ticket, out, scratch);
#else
    /* Never launched: the host refuses GPUs below compute capability 9.0. */
    (void)x, (void)n, (void)partials, (void)ticket, (void)out;
    __trap();
#endif
}

template <typename T> int launch_cluster(const cr_method_args *a, cr_method_report *r)
{
    typedef typename crm::Traits<T>::Acc Acc;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = kClusterBlocks;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;

    cudaLaunchConfig_t config;
    memset(&config, 0, sizeof config);
    config.gridDim = dim3(kClusterBlocks, 1, 1); /* for the query: one cluster */
    config.blockDim = dim3(CR_METHOD_THREADS, 1, 1);
    config.dynamicSmemBytes = 0;
    config.stream = (cudaStream_t)a->stream;
    config.attrs = attr;
    config.numAttrs = 1;

    int clusters = 0;
    CRM_TRY(cudaOccupancyMaxActiveClusters(&clusters, cluster_kernel<T>, &config));
    if (clusters < 1) {
        snprintf(r->notice, sizeof r->notice,
                 "this GPU cannot schedule a cluster of %d blocks of %d threads of the cluster "
                 "kernel",
                 kClusterBlocks, CR_METHOD_THREADS);
        return CR_METHOD_UNSUPPORTED;
    }
    uint64_t resident = (uint64_t)clusters * kClusterBlocks;
    if (resident > CR_METHOD_MAX_GRID) resident = CR_METHOD_MAX_GRID; /* a multiple of 8 */
    const uint64_t per_block = (uint64_t)CR_METHOD_THREADS * kVecsPerThread * crm::Traits<T>::kVec;
    int blocks = crm::stride_grid(a->n, per_block, (int)resident, a->blocks);
    blocks = (blocks + kClusterBlocks - 1) / kClusterBlocks * kClusterBlocks;

    config.gridDim = dim3((unsigned int)blocks, 1, 1);
    r->blocks = blocks;
    r->cluster_size = kClusterBlocks;
    crm::clear_stale_error();
    CRM_TRY(cudaLaunchKernelEx(&config, cluster_kernel<T>, (const T *)a->x, a->n,
                               (Acc *)a->partials, a->ticket, (Acc *)a->out));
    r->launches = 1;
    return 0;
}

} // namespace

extern "C" int cr_method_cluster(const cr_method_args *a, cr_method_report *r)
{
    r->threads = CR_METHOD_THREADS;
    return CRM_DISPATCH(a->dtype, launch_cluster, a, r);
}
