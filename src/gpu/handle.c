/* handle.c — a GPU handle's state: made (device attributes, a check that the GPU runs
 * coopreduce's kernels, the host-result slot, the default workspace) and freed. */
#include <stdlib.h>
#include "core/status.h"
#include "gpu/gpu.h"
#include "gpu/state.h"

/* Workspace made when a handle is: sums up to this many elements allocate nothing. */
#define CR_DEFAULT_RESERVE (1ull << 28)

coopreduce_status cr_gpu_create(coopreduce_handle *h, int ordinal)
{
    int count = 0;
    cr_gpu_count(&count);
    if (count == 0) return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, "no CUDA GPU found");
    if (ordinal >= count)
        return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, "no GPU with ordinal %d (%d GPU%s found)",
                       ordinal, count, count == 1 ? "" : "s");
    cudaError_t e = cr_gpu_use_device(ordinal);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    struct cr_gpu_state *g = calloc(1, sizeof *g);
    if (!g) return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate the GPU state");
    h->gpu = g;
    coopreduce_status s = COOPREDUCE_SUCCESS;
    int l2 = 0;
    e = cudaDeviceGetAttribute(&g->sm_count, cudaDevAttrMultiProcessorCount, ordinal);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ordinal);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&g->cc_major, cudaDevAttrComputeCapabilityMajor, ordinal);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&g->cc_minor, cudaDevAttrComputeCapabilityMinor, ordinal);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&g->cooperative_launch, cudaDevAttrCooperativeLaunch, ordinal);
    if (e == cudaSuccess && g->cc_major >= 9)
        e = cudaDeviceGetAttribute(&g->cluster_launch, cudaDevAttrClusterLaunch, ordinal);
    if (e != cudaSuccess) {
        s = cr_cuda_fail(h, e, "reading the device attributes");
        goto fail;
    }
    g->l2_bytes = (uint64_t)l2;
    e = cr_gpu_canonical_check(ordinal);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        s = cr_fail(h, COOPREDUCE_ERROR_NO_GPU,
                    "GPU %d (compute capability %d.%d) cannot run coopreduce's kernels: %s "
                    "(built for sm_80 and sm_90, with PTX for newer GPUs)",
                    ordinal, g->cc_major, g->cc_minor, cudaGetErrorString(e));
        goto fail;
    }
    if ((s = cr_gpu_host_slot_create(h))) goto fail;
    cr_plan plan;
    if ((s = cr_plan_make(h, COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64, COOPREDUCE_MODE_DETERMINISTIC,
                          COOPREDUCE_METHOD_CANONICAL, ordinal, 0, &plan)))
        goto fail;
    if ((s = cr_gpu_work_ensure(h, &plan, CR_DEFAULT_RESERVE, 0, 0, NULL))) goto fail;
    return COOPREDUCE_SUCCESS;
fail:
    (void)cudaGetLastError(); /* the failure must not stick to a later call */
    cr_gpu_work_free(h);
    free(g);
    h->gpu = NULL;
    return s;
}

coopreduce_status cr_gpu_destroy(coopreduce_handle *h)
{
    if (!h->gpu) return COOPREDUCE_SUCCESS;
    coopreduce_status s = COOPREDUCE_SUCCESS;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) s = cr_cuda_fail(h, e, "selecting the GPU");
    coopreduce_status f = cr_gpu_work_free(h); /* waits for the device's work */
    if (!s) s = f;
    free(h->gpu);
    h->gpu = NULL;
    return s;
}
