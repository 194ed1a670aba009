/* gpu_host.c — the GPU handle: device checks, workspace, launch, the host-result slot.
 *
 * Every CUDA call's status is checked; a failure returns COOPREDUCE_ERROR_CUDA (or
 * OUT_OF_MEMORY) with the runtime's message, and frees what the failing call allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "internal.h"
#include "gpu/gpu_state.h"

/* From canonical.cu. */
int cr_gpu_launch_canonical(int dtype, const void *x, uint64_t n, void *out, void *partials,
                            void *counters, int *blocks, int *threads, int quad, int stream_once,
                            void *host, unsigned int seq, int fin_op, void *stream);
int cr_gpu_canonical_occupancy(int dtype, int *blocks_per_sm);
int cr_gpu_warps_per_block(void);

/* Workspace reserved at handle creation: sums up to this many elements allocate nothing. */
#define CR_DEFAULT_RESERVE (1ull << 28)

/* The pointer cache (CR_POINTER_CACHE, gpu_state.h) holds pointers already found to be device
 * or managed memory of this GPU: under unified addressing the driver keeps those address ranges
 * to itself, so such a pointer never turns into plain host memory and need not be asked about
 * again (cudaPointerGetAttributes measured 0.10-0.17 us on an H100, so two per call are about 5%
 * of a 4 us launch: docs/PERF.md). Mapped pinned host memory is not cached: once freed, its
 * addresses can come back from malloc. */

/* The host-result slot: the kernel writes the result there as 8-byte words (one for float32,
 * two for float64), each with the call's sequence number in its high half and 32 bits of the
 * value in its low half; the host spins until every word carries the number. An aligned 8-byte
 * write lands whole, so no system-scope fence is needed between value and flag, and the call
 * returns as soon as the value has landed, without waiting for the grid to retire and the
 * driver to notice (what cudaStreamSynchronize waits for). */

coopreduce_status cr_cuda_fail(coopreduce_handle *h, cudaError_t e, const char *what)
{
    coopreduce_status s = (e == cudaErrorMemoryAllocation) ? COOPREDUCE_ERROR_OUT_OF_MEMORY
                                                            : COOPREDUCE_ERROR_CUDA;
    return cr_fail(h, s, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Bytes of partials and counters a sum of n elements needs; the layout is the one
 * canonical.cu's launch() walks: per level k in [1, L), count[k] tagged partials (8 bytes per 4
 * bytes of value) rounded up to 256 bytes; 256 bytes for the epoch word, then count[k+1]
 * counters per level. */
void cr_gpu_workspace_bytes(uint64_t n, coopreduce_dtype dtype, size_t *partials, size_t *counters)
{
    uint64_t count[CR_MAX_LEVELS + 1];
    size_t es = coopreduce_dtype_size(dtype);
    *partials = 0;
    *counters = 256;
    if (n == 0) return;
    int levels = cr_level_counts(n, cr_chunk_elems(dtype), count);
    for (int k = 1; k < levels; k++) {
        *partials += (count[k] * es * 2 + 255) / 256 * 256;
        *counters += count[k + 1] * sizeof(unsigned int);
    }
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

static void free_workspace(struct cr_gpu_state *g)
{
    if (g->partials) cudaFree(g->partials);
    if (g->counters) cudaFree(g->counters);
    g->partials = g->counters = NULL;
    g->partials_bytes = g->counters_bytes = 0;
}

/* Grows the workspace to hold what n elements of dtype need. Allocation synchronises the
 * device, which is why coopreduce_reserve exists. */
coopreduce_status cr_gpu_ensure_workspace(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype)
{
    struct cr_gpu_state *g = h->gpu;
    size_t pb, cb;
    cr_gpu_workspace_bytes(n, dtype, &pb, &cb);
    if (pb <= g->partials_bytes && cb <= g->counters_bytes) return COOPREDUCE_SUCCESS;
    if (pb < g->partials_bytes) pb = g->partials_bytes;
    if (cb < g->counters_bytes) cb = g->counters_bytes;
    if (cb < 256) cb = 256;
    /* The new workspace first: if it cannot be had, the handle keeps the one it has. */
    void *np = NULL, *nc = NULL;
    cudaError_t e = cudaMalloc(&np, pb ? pb : 256);
    if (e == cudaSuccess) e = cudaMalloc(&nc, cb);
    /* Zero: counters, the epoch word, and tags no launch uses. */
    if (e == cudaSuccess) e = cudaMemset(np, 0, pb ? pb : 256);
    if (e == cudaSuccess) e = cudaMemset(nc, 0, cb);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        if (np) cudaFree(np);
        if (nc) cudaFree(nc);
        (void)cudaGetLastError(); /* an allocation failure must not stick to the next launch */
        return cr_cuda_fail(h, e, "allocating the workspace");
    }
    free_workspace(g); /* cudaFree waits for kernels that may still use the old one */
    g->partials = np;
    g->partials_bytes = pb ? pb : 256;
    g->counters = nc;
    g->counters_bytes = cb;
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
    coopreduce_status s = COOPREDUCE_SUCCESS;
    if (!g) {
        s = cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate the GPU state");
        goto out;
    }
    h->gpu = g;
    e = cudaDeviceGetAttribute(&g->sm_count, cudaDevAttrMultiProcessorCount, ordinal);
    if (e != cudaSuccess) { s = cr_cuda_fail(h, e, "reading the SM count"); goto fail; }
    int l2 = 0;
    e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ordinal);
    if (e != cudaSuccess) { s = cr_cuda_fail(h, e, "reading the L2 size"); goto fail; }
    g->l2_bytes = (uint64_t)l2;
    e = cudaDeviceGetAttribute(&g->cc_major, cudaDevAttrComputeCapabilityMajor, ordinal);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&g->cc_minor, cudaDevAttrComputeCapabilityMinor, ordinal);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&g->cooperative_launch, cudaDevAttrCooperativeLaunch, ordinal);
    if (e == cudaSuccess && g->cc_major >= 9)
        e = cudaDeviceGetAttribute(&g->cluster_launch, cudaDevAttrClusterLaunch, ordinal);
    if (e != cudaSuccess) { s = cr_cuda_fail(h, e, "reading the device attributes"); goto fail; }
    for (int d = 0; d < 2; d++) {
        e = (cudaError_t)cr_gpu_canonical_occupancy(d, &g->blocks_per_sm[d]);
        if (e != cudaSuccess || g->blocks_per_sm[d] < 1) {
            int major = 0, minor = 0;
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal);
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal);
            (void)cudaGetLastError();
            s = cr_fail(h, COOPREDUCE_ERROR_NO_GPU,
                        "GPU %d (compute capability %d.%d) cannot run coopreduce's kernels: %s "
                        "(built for sm_80 and sm_90, with PTX for newer GPUs)",
                        ordinal, major, minor, cudaGetErrorString(e));
            goto fail;
        }
    }
    e = cudaHostAlloc(&g->host_slot, 16, cudaHostAllocMapped);
    if (e == cudaSuccess) memset(g->host_slot, 0, 16);
    if (e != cudaSuccess) { g->host_slot = NULL; s = cr_cuda_fail(h, e, "allocating the pinned result slot"); goto fail; }
    e = cudaHostGetDevicePointer(&g->host_slot_dev, g->host_slot, 0);
    if (e != cudaSuccess) { s = cr_cuda_fail(h, e, "mapping the pinned result slot"); goto fail; }
    s = cr_gpu_ensure_workspace(h, CR_DEFAULT_RESERVE, COOPREDUCE_FLOAT64);
    if (s) goto fail;
    goto out;
fail:
    (void)cudaGetLastError(); /* the failure must not stick to a later call */
    free_workspace(g);
    if (g->host_slot) cudaFreeHost(g->host_slot);
    free(g);
    h->gpu = NULL;
out:
    return s;
}

coopreduce_status cr_gpu_destroy(coopreduce_handle *h)
{
    struct cr_gpu_state *g = h->gpu;
    if (!g) return COOPREDUCE_SUCCESS;
    coopreduce_status s = COOPREDUCE_SUCCESS;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) s = cr_cuda_fail(h, e, "selecting the GPU");
    /* cudaFree and cudaFreeHost wait for the device's work. */
    if (g->partials && (e = cudaFree(g->partials)) != cudaSuccess && !s) s = cr_cuda_fail(h, e, "freeing the workspace");
    if (g->counters && (e = cudaFree(g->counters)) != cudaSuccess && !s) s = cr_cuda_fail(h, e, "freeing the workspace");
    if (g->host_slot && (e = cudaFreeHost(g->host_slot)) != cudaSuccess && !s) s = cr_cuda_fail(h, e, "freeing the result slot");
    cr_gpu_method_free(g);
    cr_gpu_ordered_free(g);
    free(g);
    h->gpu = NULL;
    return s;
}

coopreduce_status cr_gpu_reserve(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype)
{
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    if (h->method != COOPREDUCE_METHOD_CANONICAL || dtype == COOPREDUCE_INT32)
        return cr_gpu_method_reserve(h, n);
    /* 16-bit inputs are summed in float32: their one-launch operations use float32's tree. */
    const int half = dtype == COOPREDUCE_FLOAT16 || dtype == COOPREDUCE_BFLOAT16;
    coopreduce_status s = cr_gpu_ensure_workspace(h, n, half ? COOPREDUCE_FLOAT32 : dtype);
    /* Floats: NORM2's three partial arrays too. */
    if (!s && dtype != COOPREDUCE_INT64 && dtype != COOPREDUCE_UINT32 &&
        dtype != COOPREDUCE_UINT64)
        s = cr_gpu_ordered_reserve(h, n, dtype);
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

/* Spins until every word of the host slot (`words` of them) carries seq, then assembles the
 * value into result. Every 1024 spins it asks the stream whether it failed, so an error (or a
 * kernel that finished without writing) ends the wait. */
static coopreduce_status wait_for_result(coopreduce_handle *h, unsigned int seq, int words,
                                         void *result, cudaStream_t stream)
{
    volatile const uint64_t *slot = (volatile const uint64_t *)h->gpu->host_slot;
    uint64_t w[2] = {0, 0};
    for (uint64_t spin = 1;; spin++) {
        int ready = 1;
        for (int i = 0; i < words; i++) {
            w[i] = slot[i];
            ready &= (uint32_t)(w[i] >> 32) == seq;
        }
        if (ready) break;
        if (spin % 1024 == 0) {
            cudaError_t e = cudaStreamQuery(stream);
            int landed = 1;
            for (int i = 0; i < words; i++) landed &= (uint32_t)(slot[i] >> 32) == seq;
            if (e == cudaSuccess && !landed)
                return cr_fail(h, COOPREDUCE_ERROR_INTERNAL,
                               "the kernel finished without delivering the host result");
            if (e != cudaSuccess && e != cudaErrorNotReady) return cr_cuda_fail(h, e, "waiting for the sum");
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    if (words == 1) {
        uint32_t bits = (uint32_t)w[0];
        memcpy(result, &bits, 4);
    } else {
        uint64_t bits = (w[0] << 32) | (w[1] & 0xffffffffu);
        memcpy(result, &bits, 8);
    }
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_canonical_enqueue(coopreduce_handle *h, const void *x, uint64_t n,
                                           coopreduce_dtype dtype, void *out, void *host_dev,
                                           unsigned int seq, int fin_op, void *stream,
                                           int *blocks_out, int *threads_out)
{
    struct cr_gpu_state *g = h->gpu;
    coopreduce_status s = cr_gpu_ensure_workspace(h, n, dtype);
    if (s) return s;
    uint64_t chunks = (n + cr_chunk_elems(dtype) - 1) / cr_chunk_elems(dtype);
    int blocks = h->grid_blocks, quad = 0;
    if (blocks == 0) {
        uint64_t need = (chunks + cr_gpu_warps_per_block() - 1) / cr_gpu_warps_per_block();
        uint64_t full = (uint64_t)g->sm_count * (uint64_t)g->blocks_per_sm[dtype];
        blocks = (int)(need < full ? need : full);
        /* Mid-size: when two chunks per block fit in one wave, four warps share a chunk
         * (one memory round trip for its data instead of two). A forced grid never does. */
        quad = chunks <= 2 * full;
    }
    int stream_once = n * coopreduce_dtype_size(dtype) > g->l2_bytes;
    cudaError_t e = (cudaError_t)cr_gpu_launch_canonical(dtype, x, n, out, g->partials,
                                                         g->counters, &blocks, threads_out, quad,
                                                         stream_once, host_dev, seq, fin_op,
                                                         stream);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "launching the canonical sum");
    *blocks_out = blocks;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_sum(coopreduce_handle *h, const void *x, void *result, uint64_t n,
                             coopreduce_dtype dtype, void *stream, int to_host)
{
    if (h->method != COOPREDUCE_METHOD_CANONICAL || dtype == COOPREDUCE_INT32)
        return cr_gpu_sum_method(h, x, result, n, dtype, stream, to_host);
    struct cr_gpu_state *g = h->gpu;
    size_t es = coopreduce_dtype_size(dtype);
    coopreduce_status s;
    if (n > 0 && (s = cr_gpu_check_pointer(h, x, "x"))) return s;
    if (!to_host && (s = cr_gpu_check_pointer(h, result, "result"))) return s;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    if (n == 0) {
        /* +0.0: in stream order on the device; on the host once the stream's earlier work is
         * done (the call's contract: the result arrives after what was enqueued before). */
        if (to_host) {
            e = cudaStreamSynchronize((cudaStream_t)stream);
            if (e != cudaSuccess) { s = cr_cuda_fail(h, e, "waiting for the stream"); goto out; }
            memset(result, 0, es);
        } else {
            e = cudaMemsetAsync(result, 0, es, (cudaStream_t)stream);
            if (e != cudaSuccess) { s = cr_cuda_fail(h, e, "writing the empty sum"); goto out; }
        }
    } else {
        unsigned int seq = 0;
        if (to_host) {
            seq = ++g->seq ? g->seq : ++g->seq; /* never 0 */
            /* The methods leave plain values in the slot; no word may carry seq before the
             * kernel writes it. Nothing else writes the slot now: host-result calls wait. */
            memset(g->host_slot, 0, 16);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
        }
        int blocks = 0, threads = 0;
        s = cr_gpu_canonical_enqueue(h, x, n, dtype, to_host ? NULL : result,
                                     to_host ? g->host_slot_dev : NULL, seq, -1, stream,
                                     &blocks, &threads);
        if (s) goto out;
        memset(&h->last, 0, sizeof h->last);
        h->last.method = COOPREDUCE_METHOD_CANONICAL;
        h->last.blocks = blocks;
        h->last.threads = threads;
        h->last.launches = 1;
        if (to_host) {
            s = wait_for_result(h, seq, (int)(es / 4), result, (cudaStream_t)stream);
            if (s) goto out;
        }
    }
    s = COOPREDUCE_SUCCESS;
out:
    return s;
}

coopreduce_status cr_gpu_reduce(coopreduce_handle *h, coopreduce_op op, const void *x,
                                const void *y, void *result, uint64_t n, coopreduce_dtype dtype,
                                void *stream, int to_host)
{
    const int is_float = dtype == COOPREDUCE_FLOAT32 || dtype == COOPREDUCE_FLOAT64 ||
                         dtype == COOPREDUCE_FLOAT16 || dtype == COOPREDUCE_BFLOAT16;
    const int ordered = is_float && (op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN ||
                                     op == COOPREDUCE_OP_SUMSQ || op == COOPREDUCE_OP_NORM2 ||
                                     op == COOPREDUCE_OP_DOT);
    if (ordered) return cr_gpu_reduce_ordered(h, op, x, y, result, n, dtype, stream, to_host);
    return cr_gpu_reduce_unordered(h, op, x, result, n, dtype, stream, to_host);
}
