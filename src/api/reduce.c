/* reduce.c — the reduction entry points: make the plan, check the call against it, hand it to
 * the handle's backend. */
#include <stdint.h>
#include <string.h>
#include "api/api.h"

/* The checks every reduction entry point shares, against the plan's types and limits. */
static coopreduce_status check_args(coopreduce_handle *h, const cr_plan *p, const void *x,
                                    const void *y, const void *result, uint64_t n)
{
    const size_t es = cr_dtype_size(p->dtype);
    const char *opname = cr_op_name(p->op);
    if (!result) return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "result is NULL");
    if (!x && n > 0)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "x is NULL but n = %llu",
                       (unsigned long long)n);
    if (p->inputs == 2 && !y && n > 0)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s needs y, and y is NULL", opname);
    if ((uintptr_t)x % es)
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED,
                       "x = %p is not aligned to the %zu-byte element size", x, es);
    if (p->inputs == 2 && (uintptr_t)y % es)
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED,
                       "y = %p is not aligned to the %zu-byte element size", y, es);
    const size_t ra = p->result_size > 8 ? 8 : p->result_size; /* a 128-bit sum: 8 bytes */
    if ((uintptr_t)result % ra)
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED, "result = %p is not aligned to %zu bytes",
                       result, ra);
    if (n > p->max_n) {
        if (p->max_n == CR_INT32_MAX_N)
            return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                           "%s sums are limited to 2^32 elements (where a 64-bit result cannot "
                           "overflow); got n = %llu",
                           cr_dtype(p->dtype)->name, (unsigned long long)n);
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "n = %llu elements is too large",
                       (unsigned long long)n);
    }
    if (n == 0 && p->needs_element)
        return cr_fail(h, COOPREDUCE_ERROR_EMPTY, "%s of an empty array is undefined", opname);
    return COOPREDUCE_SUCCESS;
}

/* A 64-bit integer sum whose exact 128-bit value (in host memory) is outside the input type. */
static coopreduce_status check_overflow(coopreduce_handle *h, const cr_plan *p, const void *result)
{
    uint64_t w[2];
    memcpy(w, result, 16);
    const int fits =
        p->dtype == COOPREDUCE_UINT64 ? w[1] == 0 : w[1] == ((w[0] >> 63) ? UINT64_MAX : 0);
    if (fits) return COOPREDUCE_SUCCESS;
    return cr_fail(h, COOPREDUCE_ERROR_OVERFLOW,
                   "the exact %s sum does not fit in 64 bits (the 128-bit sum is in the result: "
                   "high word 0x%016llx, low word 0x%016llx)",
                   cr_dtype(p->dtype)->name, (unsigned long long)w[1], (unsigned long long)w[0]);
}

static coopreduce_status reduce(coopreduce_op op, const void *x, const void *y, void *result,
                                uint64_t n, coopreduce_dtype dtype, coopreduce_handle *h,
                                void *stream, int to_host)
{
    if (!h) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    cr_plan p;
    const coopreduce_status routed =
        cr_plan_make(h, op, dtype, h->mode, h->method, h->device, h->narrow, &p);
    /* Unknown values and pairs without a result fail at once; a mode or method that refuses
     * the op fails after the arguments are checked (a bad pointer is reported first). */
    if (routed && routed != COOPREDUCE_ERROR_NOT_SUPPORTED) return routed;
    coopreduce_status s = check_args(h, &p, x, y, result, n);
    if (s) return s;
    if (routed) return routed;
    s = h->device < 0 ? cr_cpu_reduce(h, &p, x, y, n, result)
                      : cr_gpu_reduce(h, &p, x, y, result, n, stream, to_host);
    /* A result in device memory is the caller's to check (the header says so). */
    const int on_host = h->device < 0 || to_host;
    return s || !p.check_overflow || !on_host ? s : check_overflow(h, &p, result);
}

CR_EXPORT coopreduce_status coopreduce_sum(const void *x, void *result, uint64_t n,
                                           coopreduce_dtype dtype, coopreduce_handle *handle,
                                           void *stream)
{
    return reduce(COOPREDUCE_OP_SUM, x, NULL, result, n, dtype, handle, stream, 0);
}

CR_EXPORT coopreduce_status coopreduce_sum_to_host(const void *x, void *result_host, uint64_t n,
                                                   coopreduce_dtype dtype,
                                                   coopreduce_handle *handle, void *stream)
{
    return reduce(COOPREDUCE_OP_SUM, x, NULL, result_host, n, dtype, handle, stream, 1);
}

CR_EXPORT coopreduce_status coopreduce_reduce(coopreduce_op op, const void *x, const void *y,
                                              void *result, uint64_t n, coopreduce_dtype dtype,
                                              coopreduce_handle *handle, void *stream)
{
    return reduce(op, x, y, result, n, dtype, handle, stream, 0);
}

CR_EXPORT coopreduce_status coopreduce_reduce_to_host(coopreduce_op op, const void *x,
                                                      const void *y, void *result_host, uint64_t n,
                                                      coopreduce_dtype dtype,
                                                      coopreduce_handle *handle, void *stream)
{
    return reduce(op, x, y, result_host, n, dtype, handle, stream, 1);
}
