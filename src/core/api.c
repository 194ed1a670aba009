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
    case COOPREDUCE_ERROR_OVERFLOW: return "integer sum outside the 64-bit range";
    case COOPREDUCE_ERROR_EMPTY: return "operation undefined for an empty array";
    }
    return "unknown status";
}

CR_EXPORT const char *coopreduce_dtype_name(coopreduce_dtype dtype)
{
    switch (dtype) {
    case COOPREDUCE_FLOAT32: return "float32";
    case COOPREDUCE_FLOAT64: return "float64";
    case COOPREDUCE_INT32: return "int32";
    case COOPREDUCE_FLOAT16: return "float16";
    case COOPREDUCE_BFLOAT16: return "bfloat16";
    case COOPREDUCE_INT64: return "int64";
    case COOPREDUCE_UINT32: return "uint32";
    case COOPREDUCE_UINT64: return "uint64";
    }
    return NULL;
}

CR_EXPORT size_t coopreduce_dtype_size(coopreduce_dtype dtype)
{
    switch (dtype) {
    case COOPREDUCE_FLOAT32: return 4;
    case COOPREDUCE_FLOAT64: return 8;
    case COOPREDUCE_INT32: return 4;
    case COOPREDUCE_FLOAT16: return 2;
    case COOPREDUCE_BFLOAT16: return 2;
    case COOPREDUCE_INT64: return 8;
    case COOPREDUCE_UINT32: return 4;
    case COOPREDUCE_UINT64: return 8;
    }
    return 0;
}

static int dtype_is_float(coopreduce_dtype dt)
{
    return dt == COOPREDUCE_FLOAT32 || dt == COOPREDUCE_FLOAT64 || dt == COOPREDUCE_FLOAT16 ||
           dt == COOPREDUCE_BFLOAT16;
}

static const char *const op_names[] = {"sum",   "min",   "max", "absmax", "mean",
                                       "sumsq", "norm2", "dot", "argmin", "argmax"};
#define OP_COUNT (int)(sizeof op_names / sizeof op_names[0])

CR_EXPORT const char *coopreduce_op_name(coopreduce_op op)
{
    return (int)op >= 0 && (int)op < OP_COUNT ? op_names[op] : NULL;
}

CR_EXPORT coopreduce_status coopreduce_op_from_name(const char *name, coopreduce_op *op)
{
    if (!name || !op) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "name or op is NULL");
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(name, op_names[i]) == 0) {
            *op = (coopreduce_op)i;
            return COOPREDUCE_SUCCESS;
        }
    return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown operation \"%s\"", name);
}

CR_EXPORT size_t coopreduce_op_result_size(coopreduce_op op, coopreduce_dtype dtype, int narrow,
                                           coopreduce_dtype *result)
{
    const size_t es = coopreduce_dtype_size(dtype);
    coopreduce_dtype r = dtype;
    size_t size = es;
    if (!es || !coopreduce_op_name(op)) return 0;
    const int half = dtype == COOPREDUCE_FLOAT16 || dtype == COOPREDUCE_BFLOAT16;
    switch (op) {
    case COOPREDUCE_OP_MIN:
    case COOPREDUCE_OP_MAX:
        break;
    case COOPREDUCE_OP_ABSMAX:
        if (dtype == COOPREDUCE_INT32) r = COOPREDUCE_UINT32;
        if (dtype == COOPREDUCE_INT64) r = COOPREDUCE_UINT64;
        break;
    case COOPREDUCE_OP_ARGMIN:
    case COOPREDUCE_OP_ARGMAX:
        r = COOPREDUCE_UINT64;
        size = 8;
        break;
    case COOPREDUCE_OP_SUM:
    case COOPREDUCE_OP_MEAN:
    case COOPREDUCE_OP_SUMSQ:
    case COOPREDUCE_OP_NORM2:
    case COOPREDUCE_OP_DOT:
        if (!dtype_is_float(dtype)) {
            if (op != COOPREDUCE_OP_SUM && op != COOPREDUCE_OP_MEAN) return 0;
            if (op == COOPREDUCE_OP_MEAN) {
                r = COOPREDUCE_FLOAT64;
                size = 8;
            } else if (es == 4) {
                r = dtype == COOPREDUCE_INT32 ? COOPREDUCE_INT64 : COOPREDUCE_UINT64;
                size = 8;
            } else {
                size = 16; /* the exact 128-bit sum */
            }
        } else if (half && !narrow) {
            r = COOPREDUCE_FLOAT32;
            size = 4;
        }
        break;
    }
    if (result) *result = r;
    return size;
}

CR_EXPORT size_t coopreduce_result_size(coopreduce_dtype dtype)
{
    return coopreduce_op_result_size(COOPREDUCE_OP_SUM, dtype, 0, NULL);
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
    if (method == COOPREDUCE_METHOD_CANONICAL) return 1;
    /* The tutorial methods compute float32, float64 and int32 sums only. */
    if (dtype != COOPREDUCE_FLOAT32 && dtype != COOPREDUCE_FLOAT64 && dtype != COOPREDUCE_INT32)
        return -1;
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
    /* 16-bit floats accumulate along float32's order; integers keep no partials on the CPU,
     * and on the GPU only INT32 sums (the methods' workspace) reserve anything. */
    if (dtype == COOPREDUCE_FLOAT16 || dtype == COOPREDUCE_BFLOAT16) dtype = COOPREDUCE_FLOAT32;
    if (!dtype_is_float(dtype) && (handle->device < 0 || dtype != COOPREDUCE_INT32))
        return COOPREDUCE_SUCCESS;
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

static const char *const mode_names[] = {"deterministic", "exact"};
#define MODE_COUNT (int)(sizeof mode_names / sizeof mode_names[0])

CR_EXPORT const char *coopreduce_mode_name(coopreduce_mode mode)
{
    return (int)mode >= 0 && (int)mode < MODE_COUNT ? mode_names[mode] : NULL;
}

CR_EXPORT coopreduce_status coopreduce_mode_from_name(const char *name, coopreduce_mode *mode)
{
    if (!name || !mode)
        return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "name or mode is NULL");
    for (int m = 0; m < MODE_COUNT; m++)
        if (strcmp(name, mode_names[m]) == 0) {
            *mode = (coopreduce_mode)m;
            return COOPREDUCE_SUCCESS;
        }
    return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                   "unknown mode \"%s\" (known: deterministic, exact)", name);
}

CR_EXPORT coopreduce_status coopreduce_set_mode(coopreduce_handle *handle, coopreduce_mode mode)
{
    if (!handle) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    if (!coopreduce_mode_name(mode))
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

/* The checks every reduction entry point shares. */
static coopreduce_status check_args(coopreduce_handle *h, coopreduce_op op, const void *x,
                                    const void *y, const void *result, uint64_t n,
                                    coopreduce_dtype dtype)
{
    size_t es = coopreduce_dtype_size(dtype);
    if (!es)
        return cr_fail(h, COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
                       "unknown dtype %d (known: 0 = float32, 1 = float64, 2 = int32, 3 = float16, "
                       "4 = bfloat16, 5 = int64, 6 = uint32, 7 = uint64)", (int)dtype);
    if (!coopreduce_op_name(op))
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown operation %d", (int)op);
    size_t rs = coopreduce_op_result_size(op, dtype, h->narrow, NULL);
    if (!rs)
        return cr_fail(h, COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
                       "%s of %s is not supported: sumsq, norm2 and dot take floating-point "
                       "input (convert integers to float64 first)",
                       coopreduce_op_name(op), coopreduce_dtype_name(dtype));
    if (!result) return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "result is NULL");
    if (!x && n > 0)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "x is NULL but n = %llu",
                       (unsigned long long)n);
    if (op == COOPREDUCE_OP_DOT && !y && n > 0)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "dot needs y, and y is NULL");
    if ((uintptr_t)x % es)
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED,
                       "x = %p is not aligned to the %zu-byte element size", x, es);
    if (op == COOPREDUCE_OP_DOT && (uintptr_t)y % es)
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED,
                       "y = %p is not aligned to the %zu-byte element size", y, es);
    size_t ra = rs > 8 ? 8 : rs; /* a 128-bit sum needs 8-byte alignment */
    if ((uintptr_t)result % ra)
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED,
                       "result = %p is not aligned to %zu bytes", result, ra);
    if (es == 4 && !dtype_is_float(dtype) && op == COOPREDUCE_OP_SUM && n > CR_INT32_MAX_N)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                       "%s sums are limited to 2^32 elements (where a 64-bit result cannot "
                       "overflow); got n = %llu", coopreduce_dtype_name(dtype),
                       (unsigned long long)n);
    if (n > UINT64_MAX / es)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "n = %llu elements is too large",
                       (unsigned long long)n);
    if (n == 0 && (op == COOPREDUCE_OP_MIN || op == COOPREDUCE_OP_MAX ||
                   op == COOPREDUCE_OP_ABSMAX || op == COOPREDUCE_OP_ARGMIN ||
                   op == COOPREDUCE_OP_ARGMAX))
        return cr_fail(h, COOPREDUCE_ERROR_EMPTY, "%s of an empty array is undefined",
                       coopreduce_op_name(op));
    return COOPREDUCE_SUCCESS;
}

/* A 64-bit integer sum whose exact 128-bit value (in host memory) is outside the input type. */
static coopreduce_status check_overflow(coopreduce_handle *h, coopreduce_op op,
                                        coopreduce_dtype dtype, const void *result)
{
    if (op != COOPREDUCE_OP_SUM || (dtype != COOPREDUCE_INT64 && dtype != COOPREDUCE_UINT64))
        return COOPREDUCE_SUCCESS;
    uint64_t w[2];
    memcpy(w, result, 16);
    int fits = dtype == COOPREDUCE_UINT64 ? w[1] == 0
                                          : w[1] == ((w[0] >> 63) ? UINT64_MAX : 0);
    if (fits) return COOPREDUCE_SUCCESS;
    return cr_fail(h, COOPREDUCE_ERROR_OVERFLOW,
                   "the exact %s sum does not fit in 64 bits (the 128-bit sum is in the result: "
                   "high word 0x%016llx, low word 0x%016llx)", coopreduce_dtype_name(dtype),
                   (unsigned long long)w[1], (unsigned long long)w[0]);
}

static coopreduce_status reduce_common(coopreduce_op op, const void *x, const void *y,
                                       void *result, uint64_t n, coopreduce_dtype dtype,
                                       coopreduce_handle *h, void *stream, int to_host)
{
    if (!h) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    coopreduce_status s = check_args(h, op, x, y, result, n, dtype);
    if (s) return s;
    if (h->mode == COOPREDUCE_MODE_EXACT) {
        if (cr_exact_applies(op, dtype)) {
            if (h->method != COOPREDUCE_METHOD_CANONICAL)
                return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED,
                               "exact mode has its own algorithm; method \"%s\" computes the "
                               "deterministic mode only (set the canonical method)",
                               coopreduce_method_name(h->method));
            return h->device < 0 ? cr_cpu_exact(h, op, x, y, n, dtype, h->narrow, result)
                                 : cr_gpu_exact(h, op, x, y, result, n, dtype, h->narrow,
                                                stream, to_host);
        }
        if (op == COOPREDUCE_OP_MEAN || op == COOPREDUCE_OP_SUMSQ || op == COOPREDUCE_OP_NORM2 ||
            op == COOPREDUCE_OP_DOT)
            return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED,
                           "exact mode computes sum (of float types) and dot (of float32 and "
                           "float64), not %s of %s: use the deterministic mode",
                           coopreduce_op_name(op), coopreduce_dtype_name(dtype));
        /* Integer sums, min, max, absmax, argmin, argmax: exact in both modes. */
    }
    if (h->device < 0) {
        s = cr_cpu_reduce(h, op, x, y, n, dtype, h->narrow, result);
        return s ? s : check_overflow(h, op, dtype, result);
    }
    const int plain_sum = op == COOPREDUCE_OP_SUM &&
        (dtype == COOPREDUCE_FLOAT32 || dtype == COOPREDUCE_FLOAT64 || dtype == COOPREDUCE_INT32);
    if (plain_sum) return cr_gpu_sum(h, x, result, n, dtype, stream, to_host);
    if (h->method != COOPREDUCE_METHOD_CANONICAL)
        return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED,
                       "method \"%s\" computes float32, float64 and int32 sums only; %s of %s "
                       "needs the canonical method", coopreduce_method_name(h->method),
                       coopreduce_op_name(op), coopreduce_dtype_name(dtype));
    s = cr_gpu_reduce(h, op, x, y, result, n, dtype, stream, to_host);
    return s || !to_host ? s : check_overflow(h, op, dtype, result);
}

CR_EXPORT coopreduce_status coopreduce_sum(const void *x, void *result, uint64_t n,
                                           coopreduce_dtype dtype, coopreduce_handle *handle,
                                           void *stream)
{
    return reduce_common(COOPREDUCE_OP_SUM, x, NULL, result, n, dtype, handle, stream, 0);
}

CR_EXPORT coopreduce_status coopreduce_sum_to_host(const void *x, void *result_host, uint64_t n,
                                                   coopreduce_dtype dtype,
                                                   coopreduce_handle *handle, void *stream)
{
    return reduce_common(COOPREDUCE_OP_SUM, x, NULL, result_host, n, dtype, handle, stream, 1);
}

CR_EXPORT coopreduce_status coopreduce_reduce(coopreduce_op op, const void *x, const void *y,
                                              void *result, uint64_t n, coopreduce_dtype dtype,
                                              coopreduce_handle *handle, void *stream)
{
    return reduce_common(op, x, y, result, n, dtype, handle, stream, 0);
}

CR_EXPORT coopreduce_status coopreduce_reduce_to_host(coopreduce_op op, const void *x,
                                                      const void *y, void *result_host,
                                                      uint64_t n, coopreduce_dtype dtype,
                                                      coopreduce_handle *handle, void *stream)
{
    return reduce_common(op, x, y, result_host, n, dtype, handle, stream, 1);
}
