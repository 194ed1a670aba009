/* handle.h — what a coopreduce_handle holds: its device, its settings, its backend's state.
 * The facade (src/api) sets the settings; the backends read them and own their state. */
#ifndef COOPREDUCE_HANDLE_H
#define COOPREDUCE_HANDLE_H

#include <stddef.h>
#include "coopreduce.h"

struct cr_gpu_state;
struct coopreduce_handle {
    int device;                  /* -1: CPU; >= 0: GPU ordinal */
    int threads;                 /* CPU: 0 = every online CPU */
    int online;                  /* CPU: the online CPUs when the handle was made or its
                                    threads last set (read once: sysconf reads a file) */
    int grid_blocks;             /* GPU: 0 = automatic */
    coopreduce_method method;    /* GPU: the method of the handle's sums */
    int stages;                  /* GPU: stages of COOPREDUCE_METHOD_PIPELINE */
    unsigned int disabled;       /* GPU: COOPREDUCE_FEATURE_* flags to act as if missing */
    coopreduce_launch_info last; /* GPU: what the last successful sum launched */
    int narrow;                  /* coopreduce_set_narrow_result */
    coopreduce_mode mode;        /* coopreduce_set_mode */
    struct cr_gpu_state *gpu;    /* GPU: workspace and launch data (src/gpu) */
    void *cpu_partials;          /* CPU: partial sums of levels >= 1, grown on demand */
    size_t cpu_partials_bytes;
    char err[512]; /* message of the last failed call */
};

#endif
