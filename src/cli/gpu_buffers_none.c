/* gpu_buffers_none.c — the CLI's GPU calls when coopreduce is built without CUDA: every call
 * fails with the same message, so the CLI reports it instead of needing #ifdefs. */
#include "gpu_buffers.h"

#include <stdio.h>

static int no_cuda(char *err, size_t errlen)
{
    if (err != NULL && errlen > 0) snprintf(err, errlen, "coopreduce was built without CUDA");
    return -1;
}

int cli_gpu_set_device(int ordinal, char *err, size_t errlen)
{
    (void)ordinal;
    return no_cuda(err, errlen);
}

int cli_gpu_malloc(void **dptr, size_t bytes, char *err, size_t errlen)
{
    (void)bytes;
    if (dptr != NULL) *dptr = NULL;
    return no_cuda(err, errlen);
}

void cli_gpu_free(void *dptr) { (void)dptr; }

int cli_gpu_memcpy_h2d(void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    (void)dst, (void)src, (void)bytes;
    return no_cuda(err, errlen);
}

int cli_gpu_memcpy_d2h(void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    (void)dst, (void)src, (void)bytes;
    return no_cuda(err, errlen);
}

int cli_gpu_memset(void *dptr, int byte, size_t bytes, char *err, size_t errlen)
{
    (void)dptr, (void)byte, (void)bytes;
    return no_cuda(err, errlen);
}

int cli_gpu_sync(char *err, size_t errlen) { return no_cuda(err, errlen); }

int cli_gpu_timer_create(cli_gpu_timer **t, char *err, size_t errlen)
{
    if (t != NULL) *t = NULL;
    return no_cuda(err, errlen);
}

int cli_gpu_timer_start(cli_gpu_timer *t, char *err, size_t errlen)
{
    (void)t;
    return no_cuda(err, errlen);
}

int cli_gpu_timer_stop(cli_gpu_timer *t, double *us, char *err, size_t errlen)
{
    (void)t;
    if (us != NULL) *us = 0.0;
    return no_cuda(err, errlen);
}

void cli_gpu_timer_destroy(cli_gpu_timer *t) { (void)t; }
