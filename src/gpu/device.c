/* device.c — the GPU device service: finding GPUs, making a handle's GPU current, reporting
 * CUDA errors, and checking the pointers a call gets. Every CUDA call's status is checked; a failure returns COOPREDUCE_ERROR_CUDA (or
 * OUT_OF_MEMORY) with the runtime's message, and frees what the failing call allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "core/status.h"
#include "gpu/gpu.h"
#include "gpu/state.h"

/* The pointer cache (CR_POINTER_CACHE, state.h) holds pointers already found to be device or
 * managed memory of this GPU: under unified addressing the driver keeps those address ranges
 * to itself, so such a pointer never turns into plain host memory and need not be asked about
 * again (cudaPointerGetAttributes costs a noticeable share of a small call's time: docs/PERF.md).
 * Mapped pinned host memory is not cached: once freed, its addresses can come back from
 * malloc. */

coopreduce_status cr_cuda_fail(coopreduce_handle *h, cudaError_t e, const char *what)
{
    coopreduce_status s =
        (e == cudaErrorMemoryAllocation) ? COOPREDUCE_ERROR_OUT_OF_MEMORY : COOPREDUCE_ERROR_CUDA;
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
    if (cudaDeviceGetAttribute(&cluster, cudaDevAttrClusterLaunch, ordinal) != cudaSuccess)
        cluster = 0;
    p->cluster_launch = cluster;
    p->total_memory_bytes = prop.totalGlobalMem;
    p->l2_bytes = (uint64_t)prop.l2CacheSize;
    /* The build carries sm_80 and sm_90 machine code and compute_90 PTX: every GPU of compute
     * capability 8.0 or newer runs it. (Asking the runtime would mean making the GPU current.)
     * coopreduce_create_gpu checks for real, with the occupancy calculator. */
    p->usable = prop.major >= 8;
    return COOPREDUCE_SUCCESS;
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

coopreduce_status cr_gpu_check_inputs(coopreduce_handle *h, int inputs, const void *x,
                                      const void *y, const void *result, uint64_t n)
{
    coopreduce_status s;
    if (n > 0 && (s = cr_gpu_check_pointer(h, x, "x"))) return s;
    if (n > 0 && inputs == 2 && (s = cr_gpu_check_pointer(h, y, "y"))) return s;
    if (result && (s = cr_gpu_check_pointer(h, result, "result"))) return s;
    return COOPREDUCE_SUCCESS;
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
    case cudaMemoryTypeManaged: *cacheable = 1; return COOPREDUCE_SUCCESS;
    case cudaMemoryTypeHost:
        if (a.devicePointer) return COOPREDUCE_SUCCESS;
        break;
    default: break;
    }
    return cr_fail(h, COOPREDUCE_ERROR_NOT_DEVICE_MEMORY,
                   "%s = %p is host memory; a GPU handle needs device memory (cudaMalloc), "
                   "managed or mapped pinned memory",
                   name, p);
}
