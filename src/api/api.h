/* api.h — what the facade's files share. The facade (src/api) checks arguments, makes the plan
 * and calls down into a backend; it computes nothing itself. */
#ifndef COOPREDUCE_API_H
#define COOPREDUCE_API_H

#include "core/dtype.h"
#include "core/handle.h"
#include "core/plan.h"
#include "core/status.h"
#include "cpu/cpu.h"
#include "gpu/gpu.h"

#define CR_EXPORT __attribute__((visibility("default")))

/* The checks every reduction entry point shares (reduce.c; the distributed calls too): the
 * pointers against the plan's types, for a call that reads `n` elements in all (x may be NULL
 * only when it reads none). */
coopreduce_status cr_check_pointers(coopreduce_handle *h, const cr_plan *p, const void *x,
                                    const void *y, const void *result, uint64_t n);

/* The shape of an axis call (outer, len, inner) of dtype into *sh (reduce.c): fails with
 * COOPREDUCE_ERROR_INVALID_ARGUMENT when its element count or bytes overflow 64 bits. */
coopreduce_status cr_axis_shape(coopreduce_handle *h, uint64_t outer, uint64_t len, uint64_t inner,
                                coopreduce_dtype dtype, cr_shape *sh);

#endif
