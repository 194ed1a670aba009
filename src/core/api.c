/* api.c — the public entry points: argument checks, error messages, dispatch to the CPU or the
 * GPU path. Nothing here computes; everything here validates. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* Messages of failed calls made without a handle (create, props) live per thread. */
static _Thread_local char thread_err[512];

coopreduce_status cr_fail(coopreduce_handle *h, coopreduce_status s, const char *fmt, ...)
{
    char *buf = h ? h->err : thread_err;
    size_t len = h ? sizeof h->err : sizeof thread_err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return s;
}

CR_EXPORT const char *coopreduce_version_string(void) { return "0.1.0"; }
CR_EXPORT int coopreduce_order_version(void) { return COOPREDUCE_ORDER_VERSION; }

CR_EXPORT const char *coopreduce_status_string(coopreduce_status status)
{
    switch (status) {
    case COOPREDUCE_SUCCESS: return "success";
    case COOPREDUCE_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case COOPREDUCE_ERROR_UNSUPPORTED_DTYPE: return "unsupported dtype";
    case COOPREDUCE_ERROR_NO_GPU: return "no usable GPU";
    case COOPREDUCE_ERROR_NOT_DEVICE_MEMORY: return "memory not accessible by the GPU";
    case COOPREDUCE_ERROR_MISALIGNED: return "pointer not aligned to the element size";
    case COOPREDUCE_ERROR_OUT_OF_MEMORY: return "out of memory";
    case COOPREDUCE_ERROR_CUDA: return "CUDA error";
    case COOPREDUCE_ERROR_SYSTEM: return "system error";
    case COOPREDUCE_ERROR_WRONG_DEVICE: return "operation not available for this handle's device";
    case COOPREDUCE_ERROR_INTERNAL: return "internal error";
    case COOPREDUCE_ERROR_NOT_SUPPORTED: return "not supported here";
    }
    return "unknown status";
}

CR_EXPORT const char *coopreduce_dtype_name(coopreduce_dtype dtype)
{
    switch (dtype) {
    case COOPREDUCE_FLOAT32: return "float32";
    case COOPREDUCE_FLOAT64: return "float64";
    case COOPREDUCE_INT32: return "int32";
    }
    return NULL;
}

CR_EXPORT size_t coopreduce_dtype_size(coopreduce_dtype dtype)
{
    switch (dtype) {
    case COOPREDUCE_FLOAT32: return 4;
    case COOPREDUCE_FLOAT64: return 8;
    case COOPREDUCE_INT32: return 4;
    }
    return 0;
}

CR_EXPORT size_t coopreduce_result_size(coopreduce_dtype dtype)
{
    return dtype == COOPREDUCE_INT32 ? 8 : coopreduce_dtype_size(dtype);
}

/* Names and determinism of the methods, indexed by coopreduce_method. det_float: 1 when the
 * float32/float64 sum gives the same bits on every run (same GPU, same input); integer sums are
 * exact, hence deterministic for every method. docs/METHODS.md says why for each. */
static const struct {
    const char *name;
    int det_float;
} method_table[] = {
    {"canonical", 1}, {"block", 1},     {"grid", 0},       {"gridsync", 1},
    {"twopass", 1},   {"cluster", 1},   {"cgreduce", 1},   {"vec4int", 0},
    {"multilevel", 1}, {"async", 1},    {"barrier", 1},    {"pipeline", 1},
};
#define METHOD_COUNT (int)(sizeof method_table / sizeof method_table[0])

CR_EXPORT const char *coopreduce_method_name(coopreduce_method method)
{
    if ((int)method < 0 || (int)method >= METHOD_COUNT) return NULL;
    return method_table[method].name;
}

CR_EXPORT coopreduce_status coopreduce_method_from_name(const char *name,
                                                        coopreduce_method *method)
{
    if (!name || !method)
        return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "name or method is NULL");
    for (int m = 0; m < METHOD_COUNT; m++)
        if (strcmp(name, method_table[m].name) == 0) {
            *method = (coopreduce_method)m;
            return COOPREDUCE_SUCCESS;
        }
    return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown method \"%s\"", name);
}

CR_EXPORT int coopreduce_method_deterministic(coopreduce_method method, coopreduce_dtype dtype)
{
    if (!coopreduce_method_name(method) || !coopreduce_dtype_size(dtype)) return -1;
    if (dtype == COOPREDUCE_INT32) return 1;
    return method_table[method].det_float;
}

CR_EXPORT const char *coopreduce_last_error(const coopreduce_handle *handle)
{
    return handle ? handle->err : thread_err;
}

CR_EXPORT coopreduce_status coopreduce_gpu_count(int *count)
{
    if (!count) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "count is NULL");
    return cr_gpu_count(count);
}

CR_EXPORT coopreduce_status coopreduce_gpu_props_get(int ordinal, coopreduce_gpu_props *props)
{
    if (!props) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "props is NULL");
    thread_err[0] = '\0';
    return cr_gpu_props(ordinal, props, thread_err, sizeof thread_err);
}

static coopreduce_status handle_new(coopreduce_handle **out, int device, int threads)
{
    coopreduce_handle *h = calloc(1, sizeof *h);
    if (!h) return cr_fail(NULL, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate a handle");
    h->device = device;
    h->threads = threads;
    h->method = COOPREDUCE_METHOD_CANONICAL;
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

CR_EXPORT coopreduce_status coopreduce_reserve(coopreduce_handle *handle, uint64_t n,
                                               coopreduce_dtype dtype)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    size_t es = coopreduce_dtype_size(dtype);
    if (!es)
        return cr_fail(handle, COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "unknown dtype %d", (int)dtype);
    if (n > UINT64_MAX / es)
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "n = %llu elements is too large",
                       (unsigned long long)n);
    if (handle->device < 0)
        return dtype == COOPREDUCE_INT32 ? COOPREDUCE_SUCCESS /* nothing to keep */
                                         : cr_cpu_reserve(handle, n, dtype);
    return cr_gpu_reserve(handle, n, dtype);
}

CR_EXPORT coopreduce_status coopreduce_set_grid_blocks(coopreduce_handle *handle, int blocks)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    if (handle->device < 0)
        return cr_fail(handle, COOPREDUCE_ERROR_WRONG_DEVICE,
                       "coopreduce_set_grid_blocks needs a GPU handle");
    if (blocks < 0)
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "blocks must be >= 0, got %d",
                       blocks);
    handle->grid_blocks = blocks;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_set_threads(coopreduce_handle *handle, int threads)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    if (handle->device >= 0)
        return cr_fail(handle, COOPREDUCE_ERROR_WRONG_DEVICE,
                       "coopreduce_set_threads needs a CPU handle");
    if (threads < 0)
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "threads must be >= 0, got %d",
                       threads);
    handle->threads = threads;
    return COOPREDUCE_SUCCESS;
}

static coopreduce_status need_gpu(coopreduce_handle *h, const char *fn)
{
    if (!h) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    if (h->device < 0)
        return cr_fail(h, COOPREDUCE_ERROR_WRONG_DEVICE, "%s needs a GPU handle", fn);
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_set_method(coopreduce_handle *handle,
                                                  coopreduce_method method)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    if (!coopreduce_method_name(method))
        return cr_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown method %d",
                       (int)method);
    if (handle->device < 0 && method != COOPREDUCE_METHOD_CANONICAL)
        return cr_fail(handle, COOPREDUCE_ERROR_NOT_SUPPORTED,
                       "method \"%s\" runs on a GPU only; the CPU computes the canonical order",
                       coopreduce_method_name(method));
    handle->method = method;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_set_stages(coopreduce_handle *handle, int stages)
{
    coopreduce_status s = need_gpu(handle, "coopreduce_set_stages");
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
    coopreduce_status s = need_gpu(handle, "coopreduce_disable_features");
    if (s) return s;
    unsigned int known = COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH | COOPREDUCE_FEATURE_CLUSTERS;
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

/* The checks every sum entry point shares. */
static coopreduce_status check_sum_args(coopreduce_handle *h, const void *x, const void *result,
                                        uint64_t n, coopreduce_dtype dtype)
{
    size_t es = coopreduce_dtype_size(dtype);
    if (!es)
        return cr_fail(h, COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
                       "unknown dtype %d (known: 0 = float32, 1 = float64, 2 = int32)",
                       (int)dtype);
    size_t rs = coopreduce_result_size(dtype);
    if (!result) return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "result is NULL");
    if (!x && n > 0)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "x is NULL but n = %llu",
                       (unsigned long long)n);
    if ((uintptr_t)x % es)
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED,
                       "x = %p is not aligned to the %zu-byte element size", x, es);
    if ((uintptr_t)result % rs)
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED,
                       "result = %p is not aligned to the %zu-byte result size", result, rs);
    if (dtype == COOPREDUCE_INT32 && n > CR_INT32_MAX_N)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                       "int32 sums are limited to 2^32 elements (where an int64 cannot "
                       "overflow); got n = %llu", (unsigned long long)n);
    if (n > UINT64_MAX / es)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "n = %llu elements is too large",
                       (unsigned long long)n);
    return COOPREDUCE_SUCCESS;
}

static coopreduce_status sum_common(const void *x, void *result, uint64_t n,
                                    coopreduce_dtype dtype, coopreduce_handle *h, void *stream,
                                    int to_host)
{
    if (!h) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    coopreduce_status s = check_sum_args(h, x, result, n, dtype);
    if (s) return s;
    if (h->device >= 0) return cr_gpu_sum(h, x, result, n, dtype, stream, to_host);
    if (dtype == COOPREDUCE_INT32) {
        cr_cpu_sum_int32(h, x, n, result);
        return COOPREDUCE_SUCCESS;
    }
    return cr_cpu_sum(h, x, n, dtype, result);
}

CR_EXPORT coopreduce_status coopreduce_sum(const void *x, void *result, uint64_t n,
                                           coopreduce_dtype dtype, coopreduce_handle *handle,
                                           void *stream)
{
    return sum_common(x, result, n, dtype, handle, stream, 0);
}

CR_EXPORT coopreduce_status coopreduce_sum_to_host(const void *x, void *result_host, uint64_t n,
                                                   coopreduce_dtype dtype,
                                                   coopreduce_handle *handle, void *stream)
{
    return sum_common(x, result_host, n, dtype, handle, stream, 1);
}
