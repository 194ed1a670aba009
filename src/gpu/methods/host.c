/* host.c — running the tutorial methods (one .cu file per family in this directory) from a
 * GPU handle: their workspace (from the backend's workspace service), the launch, the `block`
 * method's host finish, and the host-result copy.
 *
 * The tutorial methods are for comparison and teaching (docs/METHODS.md); the kernel families
 * (src/gpu/reduce.c) are the fast, deterministic default. This is a leaf: the backend calls it
 * for the plan's CR_FAMILY_METHOD and nothing else depends on it. The host-result path here is
 * the plain one (a copy and a stream synchronisation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "gpu/methods/methods.h"
#include "gpu/gpu.h"
#include "gpu/state.h"

typedef int (*method_launcher)(const cr_method_args *, cr_method_report *);

/* Indexed by coopreduce_method; CANONICAL is not a tutorial method. */
static const method_launcher launchers[] = {
    NULL,
    cr_method_block,
    cr_method_grid,
    cr_method_gridsync,
    cr_method_twopass,
    cr_method_cluster,
    cr_method_cgreduce,
    cr_method_vec4int,
    cr_method_multilevel,
    cr_method_async,
    cr_method_barrier,
    cr_method_pipeline,
};

/* 1 when the handle's GPU lacks `feature` (COOPREDUCE_FEATURE_*), or a test disabled it, with
 * the reason in why; 0 when it may be used. From the attributes read when the handle was made:
 * nothing is asked of the driver per call. */
static int feature_missing(const coopreduce_handle *h, unsigned int feature, char *why, size_t len)
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
        snprintf(why, len,
                 feature == COOPREDUCE_FEATURE_CLUSTERS
                     ? "thread-block clusters disabled for testing"
                     : "disabled for testing");
    else
        return 0;
    return 1;
}

/* Grows the methods' workspace for n elements with the handle's method. */
static coopreduce_status ensure(coopreduce_handle *h, uint64_t n)
{
    uint64_t slots = cr_method_partials_needed((int)h->method, n);
    if (slots > SIZE_MAX / 8)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "n = %llu is too large",
                       (unsigned long long)n);
    size_t bytes = (size_t)slots * 8;
    coopreduce_status s = cr_gpu_slots_ensure(h, bytes);
    if (!s && h->method == COOPREDUCE_METHOD_BLOCK) s = cr_gpu_pinned_ensure(h, bytes);
    return s;
}

coopreduce_status cr_gpu_method_reserve(coopreduce_handle *h, const cr_plan *plan, uint64_t n)
{
    (void)plan; /* the method is the handle's */
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

coopreduce_status cr_gpu_method_sum(coopreduce_handle *h, const cr_plan *plan, const void *x,
                                    void *result, uint64_t n, void *stream, int to_host)
{
    struct cr_gpu_state *g = h->gpu;
    cudaStream_t st = (cudaStream_t)stream;
    const coopreduce_dtype dtype = plan->dtype;
    const size_t rs = plan->result_size;
    coopreduce_method m = h->method;
    coopreduce_status s = cr_gpu_check_inputs(h, 1, x, NULL, to_host ? NULL : result, n);
    if (s) return s;
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
    void *out = to_host ? g->out : result;
    (void)cudaGetLastError(); /* a stale error must not be taken for this call's */
    /* The empty sum, or the starting value of the methods that add into *out with atomics.
     * The others store the result. */
    int zero_first = n == 0 || m == COOPREDUCE_METHOD_GRID || m == COOPREDUCE_METHOD_VEC4INT;
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
        a.partials = g->slots;
        a.ticket = g->ticket;
        a.sm_count = g->sm_count;
        a.blocks = h->grid_blocks;
        a.stages = h->stages;
        a.no_cooperative =
            feature_missing(h, COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH, no_coop, sizeof no_coop)
                ? no_coop
                : NULL;
        a.stream = stream;
        int rc = launchers[m] ? launchers[m](&a, &r) : CR_METHOD_UNSUPPORTED;
        if (rc == CR_METHOD_UNSUPPORTED)
            return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED, "method %s: %s", cr_method_name(m),
                           r.notice);
        if (rc != 0) {
            char what[64];
            snprintf(what, sizeof what, "launching method %s", cr_method_name(m));
            return cr_cuda_fail(h, (cudaError_t)rc, what);
        }
        if (m == COOPREDUCE_METHOD_BLOCK) {
            /* Partials to the host, wait, add them there: the tutorial's design, and why this
             * method is synchronous. A partial has the accumulator's size, the result's. */
            e = cudaMemcpyAsync(g->pinned, g->slots, (size_t)r.blocks * rs,
                                cudaMemcpyDeviceToHost, st);
            if (e == cudaSuccess) e = cudaStreamSynchronize(st);
            if (e != cudaSuccess) return cr_cuda_fail(h, e, "copying the block partials");
            host_sync = 1;
            if (to_host) {
                host_finish(g->pinned, r.blocks, dtype, result);
            } else {
                /* The value goes to the device from the handle's pinned slot; waiting for the
                 * copy keeps the slot free for the next call. */
                host_finish(g->pinned, r.blocks, dtype, g->host_slot);
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
