/* gpu_none.c — the GPU entry points of a build without CUDA: no GPU, clearly said. */
#include <stdio.h>
#include "internal.h"

#define NO_CUDA "coopreduce was built without CUDA (no nvcc at configure time); only the CPU path exists"

coopreduce_status cr_gpu_count(int *count)
{
    *count = 0;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_props(int ordinal, coopreduce_gpu_props *props, char *err, size_t errlen)
{
    snprintf(err, errlen, "no GPU with ordinal %d: " NO_CUDA, ordinal);
    return COOPREDUCE_ERROR_NO_GPU;
}

coopreduce_status cr_gpu_create(coopreduce_handle *h, int ordinal)
{
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_destroy(coopreduce_handle *h) { return COOPREDUCE_SUCCESS; }

coopreduce_status cr_gpu_reserve(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype)
{
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_sum(coopreduce_handle *h, const void *x, void *result, uint64_t n,
                             coopreduce_dtype dtype, void *stream, int to_host)
{
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_reduce(coopreduce_handle *h, coopreduce_op op, const void *x,
                                const void *y, void *result, uint64_t n, coopreduce_dtype dtype,
                                void *stream, int to_host)
{
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_exact(coopreduce_handle *h, coopreduce_op op, const void *x,
                               const void *y, void *result, uint64_t n, coopreduce_dtype dtype,
                               int narrow, void *stream, int to_host)
{
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}
