/* device.c — the GPU device service: finding GPUs, making a handle's GPU current, reading its
 * attributes, checking that it runs coopreduce's kernels, and checking the pointers a call
 * gets. Every CUDA call's status is checked; a failure returns COOPREDUCE_ERROR_CUDA (or
 * OUT_OF_MEMORY) with the runtime's message, and frees what the failing call allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "core/status.h"
#include "gpu/gpu.h"
#include "gpu/state.h"

/* Workspace made when a handle is: sums up to this many elements allocate nothing. */
#define CR_DEFAULT_RESERVE (1ull << 28)

/* The pointer cache (CR_POINTER_CACHE, state.h) holds pointers already found to be device or
 * managed memory of this GPU: under unified addressing the driver keeps those address ranges
 * to itself, so such a pointer never turns into plain host memory and need not be asked about
 * again (cudaPointerGetAttributes costs a noticeable share of a small call's time: docs/PERF.md).
 * Mapped pinned host memory is not cached: once freed, its addresses can come back from
 * malloc. */

coopreduce_status cr_cuda_fail(coopreduce_handle *h, cudaError_t e, const char *what)
{
    coopreduce_status s = (e == cudaErrorMemoryAllocation) ? COOPREDUCE_ERROR_OUT_OF_MEMORY
                                                            : COOPREDUCE_ERROR_CUDA;
    return cr_fail(h, s, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

coopreduce_status cr_gpu_count(int *count)
{
    int c = 0;
    cudaError_t e = cudaGetDeviceCount(&c);
    /* No GPU, no driver, or a driver too old for this runtime: the answer is "none". */
    *count = (e == cudaSuccess) ? c : 0;
    return COOPREDUCE_SUCCESS;
}

/* Makes `ordinal` the calling thread's current device (the header documents this). Restoring
 * the previous one is deliberately not done: on a thread that never chose a device,
 * cudaGetDevice answers 0, and setting 0 back would create a context on GPU 0 that nobody
 * asked for. */
cudaError_t cr_gpu_use_device(int ordinal)
{
    int current = -1;
    cudaError_t e = cudaGetDevice(&current);
    if (e == cudaSuccess && current == ordinal) return cudaSuccess;
    return cudaSetDevice(ordinal);
}

coopreduce_status cr_gpu_props(int ordinal, coopreduce_gpu_props *p, char *err, size_t errlen)
{
    int count = 0;
    cr_gpu_count(&count);
    if (ordinal < 0 || ordinal >= count) {
        snprintf(err, errlen, "no GPU with ordinal %d (%d GPU%s found)", ordinal, count,
                 count == 1 ? "" : "s");
        return COOPREDUCE_ERROR_NO_GPU;
    }
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, ordinal);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cudaGetDeviceProperties(%d): %s", ordinal, cudaGetErrorString(e));
        return COOPREDUCE_ERROR_CUDA;
    }
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", prop.name);
    p->ordinal = ordinal;
    p->sm_count = prop.multiProcessorCount;
    p->cc_major = prop.major;
    p->cc_minor = prop.minor;
    p->cooperative_launch = prop.cooperativeLaunch;
    int cluster = 0;
    if (cudaDeviceGetAttribute(&cluster, cudaDevAttrClusterLaunch, ordinal) != cudaSuccess) cluster = 0;
    p->cluster_launch = cluster;
    p->total_memory_bytes = prop.totalGlobalMem;
    p->l2_bytes = (uint64_t)prop.l2CacheSize;
    /* The build carries sm_80 and sm_90 machine code and compute_90 PTX: every GPU of compute
     * capability 8.0 or newer runs it. (Asking the runtime would mean making the GPU current.)
     * coopreduce_create_gpu checks for real, with the occupancy calculator. */
    p->usable = prop.major >= 8;
    return COOPREDUCE_SUCCESS;
}

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

/* The GPU must be able to read x (and write result): device memory of this GPU, managed
 * memory, or pinned host memory mapped into its address space. */
static coopreduce_status check_pointer_uncached(coopreduce_handle *h, const void *p,
                                                const char *name, int *cacheable);
coopreduce_status cr_gpu_check_pointer(coopreduce_handle *h, const void *p, const char *name)
{
    struct cr_gpu_state *g = h->gpu;
    for (int i = 0; i < CR_POINTER_CACHE; i++)
        if (g->checked[i] == p) return COOPREDUCE_SUCCESS;
    int cacheable = 0;
    coopreduce_status s = check_pointer_uncached(h, p, name, &cacheable);
    if (s == COOPREDUCE_SUCCESS && cacheable) g->checked[g->checked_next++ % CR_POINTER_CACHE] = p;
    return s;
}

static coopreduce_status check_pointer_uncached(coopreduce_handle *h, const void *p,
                                                const char *name, int *cacheable)
{
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cr_fail(h, COOPREDUCE_ERROR_NOT_DEVICE_MEMORY,
                       "%s = %p is not memory GPU %d can access (%s)", name, p, h->device,
                       cudaGetErrorString(e));
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:
        *cacheable = 1;
        if (a.device == h->device) return COOPREDUCE_SUCCESS;
        return cr_fail(h, COOPREDUCE_ERROR_NOT_DEVICE_MEMORY,
                       "%s = %p is memory of GPU %d, but the handle is for GPU %d", name, p,
                       a.device, h->device);
    case cudaMemoryTypeManaged:
        *cacheable = 1;
        return COOPREDUCE_SUCCESS;
    case cudaMemoryTypeHost:
        if (a.devicePointer) return COOPREDUCE_SUCCESS;
        break;
    default:
        break;
    }
    return cr_fail(h, COOPREDUCE_ERROR_NOT_DEVICE_MEMORY,
                   "%s = %p is host memory; a GPU handle needs device memory (cudaMalloc), "
                   "managed or mapped pinned memory", name, p);
}

