/* reduce.c — the reduction entry points: make the plan, check the call against it, hand it to
 * the handle's backend. */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "api/api.h"

coopreduce_status cr_check_pointers(coopreduce_handle *h, const cr_plan *p, const void *x,
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
    return COOPREDUCE_SUCCESS;
}

/* One reduction of n elements against the plan's limits; `what` names it in messages
 * ("array", "row", "segment 7"). */
static coopreduce_status check_length(coopreduce_handle *h, const cr_plan *p, uint64_t n,
                                      const char *what)
{
    if (n > p->max_n) {
        if (p->max_n == CR_INT32_MAX_N)
            return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                           "%s sums are limited to 2^32 elements (where a 64-bit result cannot "
                           "overflow); the %s has %llu",
                           cr_dtype(p->dtype)->name, what, (unsigned long long)n);
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "the %s has too many elements (%llu)",
                       what, (unsigned long long)n);
    }
    if (n == 0 && p->needs_element)
        return cr_fail(h, COOPREDUCE_ERROR_EMPTY, "%s of an empty %s is undefined",
                       cr_op_name(p->op), what);
    return COOPREDUCE_SUCCESS;
}

static coopreduce_status check_args(coopreduce_handle *h, const cr_plan *p, const void *x,
                                    const void *y, const void *result, uint64_t n)
{
    coopreduce_status s = cr_check_pointers(h, p, x, y, result, n);
    return s ? s : check_length(h, p, n, "array");
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

/* The plan of a call, or the status that ends it: unknown values and pairs without a result fail
 * at once; *routed keeps a refusal by the mode or method, which the caller reports after the
 * arguments are checked (a bad pointer is reported first). */
static coopreduce_status make_plan(coopreduce_handle *h, coopreduce_op op, coopreduce_dtype dtype,
                                   cr_plan *p, coopreduce_status *routed)
{
    if (!h) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    *routed = cr_plan_make(h, op, dtype, h->mode, h->method, h->device, h->narrow, p);
    return *routed && *routed != COOPREDUCE_ERROR_NOT_SUPPORTED ? *routed : COOPREDUCE_SUCCESS;
}

static coopreduce_status reduce(coopreduce_op op, const void *x, const void *y, void *result,
                                uint64_t n, coopreduce_dtype dtype, coopreduce_handle *h,
                                void *stream, int to_host)
{
    cr_plan p;
    coopreduce_status routed = COOPREDUCE_SUCCESS, s;
    if ((s = make_plan(h, op, dtype, &p, &routed))) return s;
    if ((s = check_args(h, &p, x, y, result, n))) return s;
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

/* ---- Along an axis, over segments ------------------------------------------------------------ */

/* Every 128-bit sum of a shaped call (results in host memory) against the input type. */
static coopreduce_status check_overflows(coopreduce_handle *h, const cr_plan *p, const void *result)
{
    const char *r = result;
    for (uint64_t k = 0; k < p->shape.outputs; k++) {
        if (!check_overflow(h, p, r + k * 16)) continue;
        char first[sizeof h->err];
        memcpy(first, h->err, sizeof first);
        return cr_fail(h, COOPREDUCE_ERROR_OVERFLOW, "result %llu: %s", (unsigned long long)k,
                       first);
    }
    return COOPREDUCE_SUCCESS;
}

static coopreduce_status run_shaped(coopreduce_handle *h, cr_plan *p, coopreduce_status routed,
                                    const cr_shape *shape, const void *x, const void *y,
                                    void *result, void *stream)
{
    if (routed) return routed;
    coopreduce_status s = cr_plan_shape(h, p, shape);
    if (s || shape->outputs == 0) return s;
    s = h->device < 0 ? cr_cpu_reduce(h, p, x, y, 0, result)
                      : cr_gpu_reduce(h, p, x, y, result, 0, stream, 0);
    return s || !p->check_overflow || h->device >= 0 ? s : check_overflows(h, p, result);
}

coopreduce_status cr_axis_shape(coopreduce_handle *h, uint64_t outer, uint64_t len, uint64_t inner,
                                coopreduce_dtype dtype, cr_shape *sh)
{
    *sh = (cr_shape){.kind = CR_SHAPE_AXIS, .outer = outer, .len = len, .inner = inner};
    if (__builtin_mul_overflow(outer, inner, &sh->outputs) ||
        __builtin_mul_overflow(sh->outputs, len, &sh->elements) ||
        sh->elements > UINT64_MAX / cr_dtype_size(dtype))
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                       "the shape (outer %llu, len %llu, inner %llu) has more elements than a "
                       "64-bit size can count",
                       (unsigned long long)outer, (unsigned long long)len,
                       (unsigned long long)inner);
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_reduce_axis(coopreduce_op op, const void *x, const void *y,
                                                   void *result, uint64_t outer, uint64_t len,
                                                   uint64_t inner, coopreduce_dtype dtype,
                                                   coopreduce_handle *h, void *stream)
{
    cr_plan p;
    coopreduce_status routed = COOPREDUCE_SUCCESS, s;
    if ((s = make_plan(h, op, dtype, &p, &routed))) return s;
    cr_shape sh;
    if ((s = cr_axis_shape(h, outer, len, inner, dtype, &sh))) return s;
    if ((s = cr_check_pointers(h, &p, x, y, result, sh.elements))) return s;
    if (sh.outputs > 0 && (s = check_length(h, &p, len, "row"))) return s;
    return run_shaped(h, &p, routed, &sh, x, y, result, stream);
}

/* The segments' checks, on offsets in host memory (x and y hold n elements). */
static coopreduce_status check_segments(coopreduce_handle *h, const cr_plan *p, cr_shape *sh,
                                        uint64_t n)
{
    const int64_t *off = sh->offsets;
    const uint64_t nseg = sh->nseg;
    if (off[0] < 0)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "offsets[0] = %lld is negative",
                       (long long)off[0]);
    for (uint64_t k = 0; k < nseg; k++) {
        if (off[k + 1] < off[k])
            return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                           "offsets decrease at segment %llu: offsets[%llu] = %lld, offsets[%llu] "
                           "= %lld",
                           (unsigned long long)k, (unsigned long long)k, (long long)off[k],
                           (unsigned long long)(k + 1), (long long)off[k + 1]);
    }
    if ((uint64_t)off[nseg] > n)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                       "offsets[%llu] = %lld is beyond x's n = %llu elements",
                       (unsigned long long)nseg, (long long)off[nseg], (unsigned long long)n);
    for (uint64_t k = 0; k < nseg; k++) {
        const uint64_t len = (uint64_t)(off[k + 1] - off[k]);
        if (len <= p->max_n && (len > 0 || !p->needs_element)) continue;
        char what[48];
        snprintf(what, sizeof what, "segment %llu", (unsigned long long)k);
        return check_length(h, p, len, what);
    }
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status coopreduce_reduce_segments(coopreduce_op op, const void *x,
                                                       const void *y, void *result, uint64_t n,
                                                       const int64_t *offsets, uint64_t nseg,
                                                       coopreduce_dtype dtype, coopreduce_handle *h,
                                                       void *stream)
{
    cr_plan p;
    coopreduce_status routed = COOPREDUCE_SUCCESS, s;
    if ((s = make_plan(h, op, dtype, &p, &routed))) return s;
    cr_shape sh = {.kind = CR_SHAPE_SEGMENTS, .offsets = offsets, .nseg = nseg, .outputs = nseg,
                   .elements = n};
    if (!offsets)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                       "offsets is NULL (it holds nseg + 1 offsets, even for nseg = 0)");
    if ((uintptr_t)offsets % sizeof(int64_t))
        return cr_fail(h, COOPREDUCE_ERROR_MISALIGNED, "offsets = %p is not aligned to 8 bytes",
                       (const void *)offsets);
    if (nseg > UINT64_MAX / sizeof(int64_t) - 1)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "nseg = %llu is too large",
                       (unsigned long long)nseg);
    if (n > UINT64_MAX / cr_dtype_size(dtype))
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "n = %llu elements is too many",
                       (unsigned long long)n);
    if ((s = cr_check_pointers(h, &p, x, y, result, n))) return s;
    if (h->device >= 0) {
        sh.offsets = NULL; /* the GPU checks them itself, or they are read back */
        sh.offsets_dev = offsets;
        if (!routed && !cr_gpu_segments_checked(&p)) {
            if ((s = cr_gpu_offsets_to_host(h, offsets, nseg, stream, &sh.offsets))) return s;
        }
    }
    if (sh.offsets && (s = check_segments(h, &p, &sh, n))) return s;
    return run_shaped(h, &p, routed, &sh, x, y, result, stream);
}

CR_EXPORT coopreduce_status coopreduce_synchronize(coopreduce_handle *h, void *stream)
{
    if (!h) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    return h->device < 0 ? COOPREDUCE_SUCCESS : cr_gpu_synchronize(h, stream);
}
