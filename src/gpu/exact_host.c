/* exact_host.c — EXACT mode on a GPU handle (docs/EXACT.md). Being written: until it lands,
 * exact mode reports that it is not available rather than computing anything else. */
#include "internal.h"

coopreduce_status cr_gpu_exact(coopreduce_handle *h, coopreduce_op op, const void *x,
                               const void *y, void *result, uint64_t n, coopreduce_dtype dtype,
                               int narrow, void *stream, int to_host)
{
    (void)op; (void)x; (void)y; (void)result; (void)n; (void)dtype; (void)narrow; (void)stream;
    (void)to_host;
    return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED, "exact mode is not built in this version");
}
