/* gpu_buffers.h — the few CUDA runtime calls the CLI needs (device buffers, copies, event
 * timing), behind plain C functions so that the CLI also builds without CUDA
 * (gpu_buffers_none.c, where every call fails with a message). */
#ifndef COOPREDUCE_CLI_GPU_BUFFERS_H
#define COOPREDUCE_CLI_GPU_BUFFERS_H
#include <stddef.h>
#include <stdint.h>

/* All return 0 on success, -1 with a one-line message in err (errlen bytes) on failure. */
int cli_gpu_set_device(int ordinal, char *err, size_t errlen);
int cli_gpu_malloc(void **dptr, size_t bytes, char *err, size_t errlen);
void cli_gpu_free(void *dptr);
int cli_gpu_memcpy_h2d(void *dst, const void *src, size_t bytes, char *err, size_t errlen);
int cli_gpu_memcpy_d2h(void *dst, const void *src, size_t bytes, char *err, size_t errlen);
int cli_gpu_memset(void *dptr, int byte, size_t bytes, char *err, size_t errlen);
int cli_gpu_sync(char *err, size_t errlen);

/* Event timer on the default stream. */
typedef struct cli_gpu_timer cli_gpu_timer;
int cli_gpu_timer_create(cli_gpu_timer **t, char *err, size_t errlen);
int cli_gpu_timer_start(cli_gpu_timer *t, char *err, size_t errlen);
/* Stops, synchronises and stores elapsed microseconds in *us. */
int cli_gpu_timer_stop(cli_gpu_timer *t, double *us, char *err, size_t errlen);
void cli_gpu_timer_destroy(cli_gpu_timer *t);
#endif
