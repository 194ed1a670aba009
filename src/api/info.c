/* info.c — the library's self-description: versions, names, result types, GPUs. Tables live
 * below (dtype.h, plan.c); this file only answers from them. */
#include <stdio.h>
#include <string.h>
#include "api/api.h"

#define CR_STR_(x) #x
#define CR_STR(x)  CR_STR_(x)

CR_EXPORT const char *coopreduce_version_string(void)
{
    return CR_STR(COOPREDUCE_VERSION_MAJOR) "." CR_STR(COOPREDUCE_VERSION_MINOR) "." CR_STR(
        COOPREDUCE_VERSION_PATCH);
}

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
    case COOPREDUCE_ERROR_COMMUNICATION: return "communication error (MPI or NCCL)";
    case COOPREDUCE_ERROR_OTHER_RANK: return "another rank failed";
    }
    return "unknown status";
}

CR_EXPORT const char *coopreduce_last_error(const coopreduce_handle *handle)
{
    return handle ? handle->err : cr_thread_error();
}

CR_EXPORT const char *coopreduce_dtype_name(coopreduce_dtype dtype)
{
    const cr_dtype_info *d = cr_dtype(dtype);
    return d ? d->name : NULL;
}

CR_EXPORT size_t coopreduce_dtype_size(coopreduce_dtype dtype) { return cr_dtype_size(dtype); }

CR_EXPORT const char *coopreduce_op_name(coopreduce_op op) { return cr_op_name(op); }

CR_EXPORT size_t coopreduce_op_result_size(coopreduce_op op, coopreduce_dtype dtype, int narrow,
                                           coopreduce_dtype *result)
{
    return cr_plan_result(op, dtype, narrow != 0, result);
}

CR_EXPORT size_t coopreduce_result_size(coopreduce_dtype dtype)
{
    return cr_plan_result(COOPREDUCE_OP_SUM, dtype, 0, NULL);
}

CR_EXPORT const char *coopreduce_mode_name(coopreduce_mode mode) { return cr_mode_name(mode); }

CR_EXPORT const char *coopreduce_method_name(coopreduce_method method)
{
    return cr_method_name(method);
}

/* Name lookups share one loop over a table's names. */
static int lookup(const char *name, const char *(*name_of)(int), int count)
{
    for (int k = 0; k < count; k++)
        if (strcmp(name, name_of(k)) == 0) return k;
    return -1;
}
static const char *op_name_i(int k) { return cr_op_name((coopreduce_op)k); }
static const char *mode_name_i(int k) { return cr_mode_name((coopreduce_mode)k); }
static const char *method_name_i(int k) { return cr_method_name((coopreduce_method)k); }

CR_EXPORT coopreduce_status coopreduce_op_from_name(const char *name, coopreduce_op *op)
{
    if (!name || !op) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "name or op is NULL");
    const int k = lookup(name, op_name_i, COOPREDUCE_OP_COUNT);
    if (k < 0)
        return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown operation \"%s\"", name);
    *op = (coopreduce_op)k;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_mode_from_name(const char *name, coopreduce_mode *mode)
{
    if (!name || !mode)
        return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "name or mode is NULL");
    const int k = lookup(name, mode_name_i, COOPREDUCE_MODE_COUNT);
    if (k < 0)
        return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                       "unknown mode \"%s\" (known: deterministic, exact)", name);
    *mode = (coopreduce_mode)k;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_method_from_name(const char *name, coopreduce_method *method)
{
    if (!name || !method)
        return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "name or method is NULL");
    const int k = lookup(name, method_name_i, COOPREDUCE_METHOD_COUNT);
    if (k < 0)
        return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown method \"%s\"", name);
    *method = (coopreduce_method)k;
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT int coopreduce_method_deterministic(coopreduce_method method, coopreduce_dtype dtype)
{
    if (!cr_method_name(method) || !cr_dtype(dtype)) return -1;
    if (method == COOPREDUCE_METHOD_CANONICAL) return 1;
    if (!cr_method_computes(method, dtype)) return -1;
    if (!cr_dtype_is_float(dtype)) return 1; /* integer sums are exact */
    return cr_method_det_float(method);
}

CR_EXPORT coopreduce_status coopreduce_gpu_count(int *count)
{
    if (!count) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "count is NULL");
    return cr_gpu_count(count);
}

CR_EXPORT coopreduce_status coopreduce_gpu_props_get(int ordinal, coopreduce_gpu_props *props)
{
    if (!props) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "props is NULL");
    char err[512] = "";
    coopreduce_status s = cr_gpu_props(ordinal, props, err, sizeof err);
    return s ? cr_fail(NULL, s, "%s", err) : s;
}
