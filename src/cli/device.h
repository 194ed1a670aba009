/* device.h — the device a command computes on: a GPU or the CPU, as --device chose. */
#ifndef COOPREDUCE_CLI_DEVICE_H
#define COOPREDUCE_CLI_DEVICE_H

#include <stddef.h>

#include "args.h"
#include "coopreduce.h"

#ifdef COOPREDUCE_HAVE_CUDA
#define CLI_BUILT_WITH_CUDA 1
#else
#define CLI_BUILT_WITH_CUDA 0
#endif

typedef struct {
    coopreduce_handle *handle;
    int is_gpu;
    int ordinal;
    int threads; /* CPU: worker threads used (resolved from 0 = every online CPU) */
    char name[256];
    char auto_note[600]; /* why --device auto chose what it chose, or "" */
} cli_device;

/* Opens the device `kind` names (an ordinal for gpu:K); auto takes GPU 0 if it is usable, else
 * the CPU, saying why in auto_note. device_text is what the user wrote, for messages. Prints its
 * own error; EXIT_OK or EXIT_ERROR. */
int cli_open_device(cli_device *dev, cli_device_kind kind, int ordinal, int threads,
                    const char *device_text);

/* A CPU handle with `threads` workers (0: every online CPU). */
int cli_open_cpu(cli_device *dev, int threads);

/* CPUs online, at least 1. */
int cli_online_cpus(void);

/* The CPU's model name from /proc/cpuinfo, or "CPU" where it has none (e.g. ARM). */
void cli_cpu_model_name(char *out, size_t outlen);

#endif
