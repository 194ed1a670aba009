/* methods_host.c — running the tutorial methods (one .cu file per family in src/gpu/methods/)
 * from a GPU handle: their workspace, the launch, the `block` method's host finish, and the
 * host-result copy.
 *
 * The tutorial methods are for comparison and teaching (docs/METHODS.md); the canonical sum in
 * gpu_host.c is the fast, deterministic default. So the host-result path here is the plain one
 * (a copy and a stream synchronisation), not canonical's mapped-memory flag. The GPU int32 sum
 * of the canonical method also comes here: integer sums are exact in any order, so it borrows
 * the fastest tutorial kernel for the size (canonical_int32). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/gpu_state.h"
#include "gpu/methods/methods.h"

typedef int (*method_launcher)(const cr_method_args *, cr_method_report *);

/* Indexed by coopreduce_method; CANONICAL's entry serves int32 only (see canonical_int32). */
static const method_launcher launchers[] = {
    NULL,               cr_method_block,      cr_method_grid,    cr_method_gridsync,
    cr_method_twopass,  cr_method_cluster,    cr_method_cgreduce, cr_method_vec4int,
    cr_method_multilevel, cr_method_async,    cr_method_barrier, cr_method_pipeline,
};

/* canonical int32: up to 2^22 elements cgreduce's kernel (one launch, no memset: 5.3-6.6 us from
 * 2^10 to 2^20 on an H100, against 7.1-7.5 us for memset + vec4int); above, vec4int's (one
 * 64-bit atomic per block: 96-100% of the float4-read ceiling at 2^24-2^28, cgreduce 90-99%).
 * docs/PERF.md, run 12. */
#define CR_INT32_VEC4INT_FROM (1ull << 22)
static int canonical_int32_uses_atomics(uint64_t n) { return n > CR_INT32_VEC4INT_FROM; }

static int canonical_int32(const cr_method_args *a, cr_method_report *r)
{
    return canonical_int32_uses_atomics(a->n) ? cr_method_vec4int(a, r) : cr_method_cgreduce(a, r);
}

/* 1 when the handle's GPU lacks `feature` (COOPREDUCE_FEATURE_*), or a test disabled it, with
 * the reason in why; 0 when it may be used. From the attributes read when the handle was made:
 * nothing is asked of the driver per call. */
static int feature_missing(const coopreduce_handle *h, unsigned int feature, char *why,
                           size_t len)
{
    const struct cr_gpu_state *g = h->gpu;
    if (feature == COOPREDUCE_FEATURE_CLUSTERS && g->cc_major < 9)
        snprintf(why, len,
                 "thread-block clusters need compute capability 9.0 or newer; this GPU is %d.%d",
                 g->cc_major, g->cc_minor);
    else if (feature == COOPREDUCE_FEATURE_CLUSTERS && !g->cluster_launch)
        snprintf(why, len, "thread-block cluster launch is not supported by this GPU");
    else if (feature == COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH && !g->cooperative_launch)
        snprintf(why, len, "not supported by this GPU");
    else if (h->disabled & feature)
        snprintf(why, len, feature == COOPREDUCE_FEATURE_CLUSTERS
                               ? "thread-block clusters disabled for testing"
                               : "disabled for testing");
    else
        return 0;
    return 1;
}

void cr_gpu_method_free(struct cr_gpu_state *g)
{
    /* Called while destroying: errors here cannot be reported better than by the caller's
     * earlier frees, which wait for the device. */
    if (g->m_partials) cudaFree(g->m_partials);
    if (g->m_ticket) cudaFree(g->m_ticket);
    if (g->m_out) cudaFree(g->m_out);
    if (g->m_host) cudaFreeHost(g->m_host);
    g->m_partials = g->m_ticket = g->m_out = g->m_host = NULL;
    g->m_partials_bytes = g->m_host_bytes = 0;
}

/* The device scratch the methods and the order-independent operations (ops_host.c) share: a
 * zeroed 256-byte ticket region that every kernel leaves zero, a 256-byte result slot, and at
 * least `partial_bytes` of partials. The calls of a handle are stream-ordered, so one set
 * serves both. New buffers are allocated before old ones are freed, so a failure leaves the
 * handle as it was. */
coopreduce_status cr_gpu_scratch_ensure(coopreduce_handle *h, size_t partial_bytes)
{
    struct cr_gpu_state *g = h->gpu;
    cudaError_t e = cudaSuccess;
    if (!g->m_ticket) {
        void *t = NULL, *o = NULL;
        e = cudaMalloc(&t, 256);
        if (e == cudaSuccess) e = cudaMalloc(&o, 256);
        if (e == cudaSuccess) e = cudaMemset(t, 0, 256);
        /* The zero must be in place before a kernel on any stream reads it. */
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            if (t) cudaFree(t);
            if (o) cudaFree(o);
            (void)cudaGetLastError();
            return cr_cuda_fail(h, e, "allocating the ticket and result slot");
        }
        g->m_ticket = t;
        g->m_out = o;
    }
    if (partial_bytes > g->m_partials_bytes) {
        void *p = NULL;
        e = cudaMalloc(&p, partial_bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return cr_cuda_fail(h, e, "allocating the partials");
        }
        if (g->m_partials) cudaFree(g->m_partials); /* waits for kernels still using it */
        g->m_partials = p;
        g->m_partials_bytes = partial_bytes;
    }
    return COOPREDUCE_SUCCESS;
}

/* Grows the methods' workspace for n elements with the handle's method. */
static coopreduce_status ensure(coopreduce_handle *h, uint64_t n)
{
    struct cr_gpu_state *g = h->gpu;
    cudaError_t e = cudaSuccess;
    uint64_t slots = cr_method_partials_needed((int)h->method, n);
    if (slots > SIZE_MAX / 8)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "n = %llu is too large",
                       (unsigned long long)n);
    size_t bytes = (size_t)slots * 8;
    coopreduce_status s = cr_gpu_scratch_ensure(h, bytes);
    if (s) return s;
    if (h->method == COOPREDUCE_METHOD_BLOCK && bytes > g->m_host_bytes) {
        void *p = NULL;
        e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return cr_cuda_fail(h, e, "allocating pinned memory for the block partials");
        }
        if (g->m_host) cudaFreeHost(g->m_host);
        g->m_host = p;
        g->m_host_bytes = bytes;
    }
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_method_reserve(coopreduce_handle *h, uint64_t n)
{
    return ensure(h, n);
}

/* The `block` method's last step, as in tutorial 000: the host adds the per-block partials in
 * index order, in the accumulator type (float, double, or int64 for int32). */
static void host_finish(const void *partials, int count, coopreduce_dtype dtype, void *result)
{
    if (dtype == COOPREDUCE_FLOAT32) {
        const float *p = partials;
        float s = 0.0f;
        for (int i = 0; i < count; i++) s += p[i];
        memcpy(result, &s, sizeof s);
    } else if (dtype == COOPREDUCE_FLOAT64) {
        const double *p = partials;
        double s = 0.0;
        for (int i = 0; i < count; i++) s += p[i];
        memcpy(result, &s, sizeof s);
    } else {
        const int64_t *p = partials;
        uint64_t s = 0; /* the exact total fits (CR_INT32_MAX_N); unsigned: no formal overflow */
        for (int i = 0; i < count; i++) s += (uint64_t)p[i];
        int64_t v = (int64_t)s;
        memcpy(result, &v, sizeof v);
    }
}

coopreduce_status cr_gpu_sum_method(coopreduce_handle *h, const void *x, void *result,
                                    uint64_t n, coopreduce_dtype dtype, void *stream,
                                    int to_host)
{
    struct cr_gpu_state *g = h->gpu;
    cudaStream_t st = (cudaStream_t)stream;
    size_t rs = coopreduce_result_size(dtype);
    coopreduce_method m = h->method;
    coopreduce_status s;
    if (n > 0 && (s = cr_gpu_check_pointer(h, x, "x"))) return s;
    if (!to_host && (s = cr_gpu_check_pointer(h, result, "result"))) return s;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");
    /* A method this GPU cannot run fails before anything is enqueued: *result stays as it was. */
    char no_cluster[160], no_coop[160];
    if (m == COOPREDUCE_METHOD_CLUSTER &&
        feature_missing(h, COOPREDUCE_FEATURE_CLUSTERS, no_cluster, sizeof no_cluster))
        return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED, "method cluster: %s", no_cluster);
    if ((s = ensure(h, n))) return s;

    cr_method_report r;
    memset(&r, 0, sizeof r);
    /* Where the device result goes: the caller's memory, or our slot, copied back after. */
    void *out = to_host ? g->m_out : result;
    (void)cudaGetLastError(); /* a stale error must not be taken for this call's */
    /* The empty sum, or the starting value of the methods that add into *out with atomics
     * (canonical's int32 sum above 2^22 is vec4int's kernel). The others store the result. */
    int zero_first = n == 0 || m == COOPREDUCE_METHOD_GRID || m == COOPREDUCE_METHOD_VEC4INT ||
                     (m == COOPREDUCE_METHOD_CANONICAL && canonical_int32_uses_atomics(n));
    if (zero_first) {
        e = cudaMemsetAsync(out, 0, rs, st);
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "zeroing the result");
    }
    int host_sync = 0;
    if (n > 0) {
        cr_method_args a;
        memset(&a, 0, sizeof a);
        a.dtype = (int)dtype;
        a.x = x;
        a.n = n;
        a.out = out;
        a.partials = g->m_partials;
        a.ticket = g->m_ticket;
        a.sm_count = g->sm_count;
        a.blocks = h->grid_blocks;
        a.stages = h->stages;
        a.no_cooperative = feature_missing(h, COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH, no_coop,
                                           sizeof no_coop) ? no_coop : NULL;
        a.stream = stream;
        int rc = m == COOPREDUCE_METHOD_CANONICAL ? canonical_int32(&a, &r) : launchers[m](&a, &r);
        if (rc == CR_METHOD_UNSUPPORTED)
            return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED, "method %s: %s",
                           coopreduce_method_name(m), r.notice);
        if (rc != 0) {
            char what[64];
            snprintf(what, sizeof what, "launching method %s", coopreduce_method_name(m));
            return cr_cuda_fail(h, (cudaError_t)rc, what);
        }
        if (m == COOPREDUCE_METHOD_BLOCK) {
            /* Partials to the host, wait, add them there: the tutorial's design, and why this
             * method is synchronous. A partial has the accumulator's size, the result's. */
            e = cudaMemcpyAsync(g->m_host, g->m_partials, (size_t)r.blocks * rs,
                                cudaMemcpyDeviceToHost, st);
            if (e == cudaSuccess) e = cudaStreamSynchronize(st);
            if (e != cudaSuccess) return cr_cuda_fail(h, e, "copying the block partials");
            host_sync = 1;
            if (to_host) {
                host_finish(g->m_host, r.blocks, dtype, result);
            } else {
                /* The value goes to the device from the handle's pinned slot; waiting for the
                 * copy keeps the slot free for the next call. */
                host_finish(g->m_host, r.blocks, dtype, g->host_slot);
                e = cudaMemcpyAsync(result, g->host_slot, rs, cudaMemcpyHostToDevice, st);
                if (e == cudaSuccess) e = cudaStreamSynchronize(st);
                if (e != cudaSuccess) return cr_cuda_fail(h, e, "writing the block result");
            }
        }
    }
    if (to_host && !host_sync) {
        e = cudaMemcpyAsync(g->host_slot, out, rs, cudaMemcpyDeviceToHost, st);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st);
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "copying the result to the host");
        memcpy(result, g->host_slot, rs);
        host_sync = 1;
    }
    memset(&h->last, 0, sizeof h->last);
    h->last.method = m;
    h->last.blocks = r.blocks;
    h->last.threads = r.threads;
    h->last.launches = r.launches + zero_first; /* the memset is an operation too */
    h->last.cooperative = r.cooperative;
    h->last.fell_back = r.fell_back;
    h->last.cluster_size = r.cluster_size;
    h->last.host_sync = host_sync;
    memcpy(h->last.notice, r.notice, sizeof h->last.notice);
    h->last.notice[sizeof h->last.notice - 1] = '\0';
    return COOPREDUCE_SUCCESS;
}
