/* handle.c — creating, configuring and destroying handles. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "cpu/runtime.h"

static coopreduce_status handle_new(coopreduce_handle **out, int device, int threads)
{
    coopreduce_handle *h = calloc(1, sizeof *h);
    if (!h) return cr_fail(NULL, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate a handle");
    h->device = device;
    h->threads = threads;
    h->online = cr_cpu_online();
    h->method = COOPREDUCE_METHOD_CANONICAL;
    h->mode = COOPREDUCE_MODE_DETERMINISTIC;
    h->stages = 4;
    *out = h;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_create_cpu(coopreduce_handle **handle, int threads)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    *handle = NULL;
    if (threads < 0)
        return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                       "threads must be >= 0 (0 = every online CPU), got %d", threads);
    return handle_new(handle, -1, threads);
}

CR_EXPORT coopreduce_status coopreduce_create_gpu(coopreduce_handle **handle, int ordinal)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    *handle = NULL;
    if (ordinal < 0)
        return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "GPU ordinal must be >= 0, got %d",
                       ordinal);
    coopreduce_handle *h = NULL;
    coopreduce_status s = handle_new(&h, ordinal, 0);
    if (s) return s;
    s = cr_gpu_create(h, ordinal);
    if (s) {
        /* The message was written on the handle: move it to the thread before freeing. */
        cr_fail(NULL, s, "%s", h->err);
        free(h);
        return s;
    }
    *handle = h;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_destroy(coopreduce_handle *handle)
{
    if (!handle) return COOPREDUCE_SUCCESS;
    coopreduce_status s = COOPREDUCE_SUCCESS;
    if (handle->device >= 0) {
        s = cr_gpu_destroy(handle);
        if (s) cr_fail(NULL, s, "%s", handle->err);
    }
    free(handle->cpu_partials);
    free(handle);
    return s;
}

CR_EXPORT int coopreduce_handle_device(const coopreduce_handle *handle)
{
    return handle ? handle->device : -2;
}

/* Every operation the handle could run on dtype, as its plans say (shape: NULL for the 1-D
 * calls): after this, none of them allocates for n elements or fewer, or for the shape. */
static coopreduce_status reserve_plans(coopreduce_handle *handle, coopreduce_dtype dtype,
                                       const cr_shape *shape, uint64_t n)
{
    for (int op = 0; op < COOPREDUCE_OP_COUNT; op++) {
        cr_plan p;
        char keep[sizeof handle->err];
        memcpy(keep, handle->err, sizeof keep); /* a refused plan is not this call's failure */
        coopreduce_status s = cr_plan_make(handle, (coopreduce_op)op, dtype, handle->mode,
                                           handle->method, handle->device, handle->narrow, &p);
        memcpy(handle->err, keep, sizeof keep);
        if (s) continue;
        if (shape && (s = cr_plan_shape(handle, &p, shape))) return s;
        s = handle->device < 0 ? cr_cpu_reserve(handle, &p, n) : cr_gpu_reserve(handle, &p, n);
        if (s) return s;
    }
    return COOPREDUCE_SUCCESS;
}

static coopreduce_status reserve_args(coopreduce_handle *handle, coopreduce_dtype dtype,
                                      uint64_t n)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    const size_t es = cr_dtype_size(dtype);
    if (!es)
        return cr_fail(handle, COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "unknown dtype %d", (int)dtype);
    if (n > UINT64_MAX / es)
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "n = %llu elements is too large",
                       (unsigned long long)n);
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_reserve(coopreduce_handle *handle, uint64_t n,
                                               coopreduce_dtype dtype)
{
    coopreduce_status s = reserve_args(handle, dtype, n);
    return s ? s : reserve_plans(handle, dtype, NULL, n);
}

CR_EXPORT coopreduce_status coopreduce_reserve_axis(coopreduce_handle *handle, uint64_t outer,
                                                    uint64_t len, uint64_t inner,
                                                    coopreduce_dtype dtype)
{
    cr_shape sh;
    coopreduce_status s = reserve_args(handle, dtype, 0);
    if (s || (s = cr_axis_shape(handle, outer, len, inner, dtype, &sh))) return s;
    return reserve_plans(handle, dtype, &sh, len);
}

CR_EXPORT coopreduce_status coopreduce_reserve_segments(coopreduce_handle *handle, uint64_t n,
                                                        uint64_t nseg, coopreduce_dtype dtype)
{
    const cr_shape sh = {.kind = CR_SHAPE_SEGMENTS, .nseg = nseg, .outputs = nseg, .elements = n};
    coopreduce_status s = reserve_args(handle, dtype, n);
    if (s) return s;
    if (nseg > UINT64_MAX / sizeof(int64_t) - 1)
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "nseg = %llu is too large",
                       (unsigned long long)nseg);
    return reserve_plans(handle, dtype, &sh, n);
}

static coopreduce_status need(coopreduce_handle *h, int gpu, const char *fn)
{
    if (!h) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    if ((h->device >= 0) != gpu)
        return cr_fail(h, COOPREDUCE_ERROR_WRONG_DEVICE, "%s needs a %s handle", fn,
                       gpu ? "GPU" : "CPU");
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_set_grid_blocks(coopreduce_handle *handle, int blocks)
{
    coopreduce_status s = need(handle, 1, "coopreduce_set_grid_blocks");
    if (s) return s;
    if (blocks < 0)
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "blocks must be >= 0, got %d",
                       blocks);
    handle->grid_blocks = blocks;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_set_threads(coopreduce_handle *handle, int threads)
{
    coopreduce_status s = need(handle, 0, "coopreduce_set_threads");
    if (s) return s;
    if (threads < 0)
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "threads must be >= 0, got %d",
                       threads);
    handle->threads = threads;
    handle->online = cr_cpu_online();
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_set_method(coopreduce_handle *handle,
                                                  coopreduce_method method)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    if (!cr_method_name(method))
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown method %d", (int)method);
    if (handle->device < 0 && method != COOPREDUCE_METHOD_CANONICAL)
        return cr_fail(handle, COOPREDUCE_ERROR_NOT_SUPPORTED,
                       "method \"%s\" runs on a GPU only; the CPU computes the canonical order",
                       cr_method_name(method));
    handle->method = method;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_set_mode(coopreduce_handle *handle, coopreduce_mode mode)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    if (!cr_mode_name(mode))
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown mode %d", (int)mode);
    handle->mode = mode;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_set_narrow_result(coopreduce_handle *handle, int narrow)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    handle->narrow = narrow != 0;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_set_stages(coopreduce_handle *handle, int stages)
{
    coopreduce_status s = need(handle, 1, "coopreduce_set_stages");
    if (s) return s;
    if (stages < 1 || stages > 8)
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                       "pipeline stages must be 1 to 8, got %d", stages);
    handle->stages = stages;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_disable_features(coopreduce_handle *handle,
                                                        unsigned int features)
{
    coopreduce_status s = need(handle, 1, "coopreduce_disable_features");
    if (s) return s;
    const unsigned int known = COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH | COOPREDUCE_FEATURE_CLUSTERS;
    if (features & ~known)
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown feature flags 0x%x",
                       features & ~known);
    handle->disabled = features;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_last_launch(const coopreduce_handle *handle,
                                                   coopreduce_launch_info *info)
{
    if (!handle || !info)
        return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle or info is NULL");
    if (handle->device < 0)
        return cr_fail(NULL, COOPREDUCE_ERROR_WRONG_DEVICE,
                       "coopreduce_last_launch needs a GPU handle");
    *info = handle->last;
    return COOPREDUCE_SUCCESS;
}
