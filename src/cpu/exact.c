/* exact.c — EXACT mode on the CPU (docs/EXACT.md). Being written: until it lands, exact mode
 * reports that it is not available rather than computing anything else. */
#include "internal.h"

coopreduce_status cr_cpu_exact(coopreduce_handle *h, coopreduce_op op, const void *x,
                               const void *y, uint64_t n, coopreduce_dtype dtype, int narrow,
                               void *result)
{
    (void)op; (void)x; (void)y; (void)n; (void)dtype; (void)narrow; (void)result;
    return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED, "exact mode is not built in this version");
}
