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
    }
    return "unknown status";
}

CR_EXPORT const char *coopreduce_dtype_name(coopreduce_dtype dtype)
{
    switch (dtype) {
    case COOPREDUCE_FLOAT32: return "float32";
    case COOPREDUCE_FLOAT64: return "float64";
    }
    return NULL;
}

CR_EXPORT size_t coopreduce_dtype_size(coopreduce_dtype dtype)
{
    switch (dtype) {
    case COOPREDUCE_FLOAT32: return 4;
    case COOPREDUCE_FLOAT64: return 8;
    }
    return 0;
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
    if (handle->device < 0) return cr_cpu_reserve(handle, n, dtype);
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

/* The checks every sum entry point shares. */
static coopreduce_status check_sum_args(coopreduce_handle *h, const void *x, const void *result,
                                        uint64_t n, coopreduce_dtype dtype)
{
    size_t es = coopreduce_dtype_size(dtype);
    if (!es)
        return cr_fail(h, COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
                       "unknown dtype %d (known: 0 = float32, 1 = float64)", (int)dtype);
    if (!result) return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "result is NULL");
    if (!x && n > 0)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "x is NULL but n = %llu",
                       (unsigned long long)n);
    if ((uintptr_t)x % es)
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED,
                       "x = %p is not aligned to the %zu-byte element size", x, es);
    if ((uintptr_t)result % es)
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED,
                       "result = %p is not aligned to the %zu-byte element size", result, es);
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
    if (h->device < 0) return cr_cpu_sum(h, x, n, dtype, result);
    return cr_gpu_sum(h, x, result, n, dtype, stream, to_host);
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
