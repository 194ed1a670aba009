/* gpu_buffers.c — the CLI's CUDA runtime calls, in C (cuda_runtime_api.h is plain C). Every
 * return code is checked and turned into a one-line message naming the call and the error. */
#include "gpu_buffers.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

static int cuda_failed(cudaError_t rc, const char *what, char *err, size_t errlen)
{
    if (rc == cudaSuccess) return 0;
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s failed: %s (%s)", what, cudaGetErrorString(rc),
                 cudaGetErrorName(rc));
    return -1;
}

int cli_gpu_set_device(int ordinal, char *err, size_t errlen)
{
    char what[48];
    snprintf(what, sizeof what, "cudaSetDevice(%d)", ordinal);
    return cuda_failed(cudaSetDevice(ordinal), what, err, errlen);
}

int cli_gpu_malloc(void **dptr, size_t bytes, char *err, size_t errlen)
{
    char what[64];
    *dptr = NULL;
    snprintf(what, sizeof what, "cudaMalloc(%zu bytes)", bytes);
    if (cuda_failed(cudaMalloc(dptr, bytes), what, err, errlen) != 0) {
        *dptr = NULL;
        return -1;
    }
    return 0;
}

void cli_gpu_free(void *dptr)
{
    /* Nothing useful can be done about a failing free; a sticky error would surface in the next
     * checked call anyway. */
    if (dptr != NULL) (void)cudaFree(dptr);
}

int cli_gpu_memcpy_h2d(void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    return cuda_failed(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice),
                       "cudaMemcpy host to device", err, errlen);
}

int cli_gpu_memcpy_d2h(void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    return cuda_failed(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost),
                       "cudaMemcpy device to host", err, errlen);
}

int cli_gpu_memset(void *dptr, int byte, size_t bytes, char *err, size_t errlen)
{
    return cuda_failed(cudaMemset(dptr, byte, bytes), "cudaMemset", err, errlen);
}

int cli_gpu_sync(char *err, size_t errlen)
{
    return cuda_failed(cudaDeviceSynchronize(), "cudaDeviceSynchronize", err, errlen);
}

struct cli_gpu_timer {
    cudaEvent_t start, stop;
};

int cli_gpu_timer_create(cli_gpu_timer **t, char *err, size_t errlen)
{
    *t = NULL;
    cli_gpu_timer *timer = calloc(1, sizeof *timer);
    if (timer == NULL) {
        if (err != NULL && errlen > 0) snprintf(err, errlen, "out of memory creating a GPU timer");
        return -1;
    }
    if (cuda_failed(cudaEventCreate(&timer->start), "cudaEventCreate", err, errlen) != 0) {
        free(timer);
        return -1;
    }
    if (cuda_failed(cudaEventCreate(&timer->stop), "cudaEventCreate", err, errlen) != 0) {
        (void)cudaEventDestroy(timer->start);
        free(timer);
        return -1;
    }
    *t = timer;
    return 0;
}

int cli_gpu_timer_start(cli_gpu_timer *t, char *err, size_t errlen)
{
    return cuda_failed(cudaEventRecord(t->start, 0), "cudaEventRecord", err, errlen);
}

int cli_gpu_timer_stop(cli_gpu_timer *t, double *us, char *err, size_t errlen)
{
    float ms = 0.0f;
    if (cuda_failed(cudaEventRecord(t->stop, 0), "cudaEventRecord", err, errlen) != 0 ||
        cuda_failed(cudaEventSynchronize(t->stop), "cudaEventSynchronize", err, errlen) != 0 ||
        cuda_failed(cudaEventElapsedTime(&ms, t->start, t->stop), "cudaEventElapsedTime", err,
                    errlen) != 0)
        return -1;
    *us = (double)ms * 1000.0;
    return 0;
}

void cli_gpu_timer_destroy(cli_gpu_timer *t)
{
    if (t == NULL) return;
    (void)cudaEventDestroy(t->start);
    (void)cudaEventDestroy(t->stop);
    free(t);
}
