/* ops_host.c — placeholder until the order-independent GPU operations land. */
#include "internal.h"
#include "gpu/gpu_state.h"

coopreduce_status cr_gpu_reduce_unordered(coopreduce_handle *h, coopreduce_op op, const void *x,
                                          void *result, uint64_t n, coopreduce_dtype dtype,
                                          void *stream, int to_host)
{
    return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED, "%s of %s is not on the GPU yet",
                   coopreduce_op_name(op), coopreduce_dtype_name(dtype));
}

void cr_gpu_ops_free(struct cr_gpu_state *g) { (void)g; }
