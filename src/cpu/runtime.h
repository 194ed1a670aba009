/* runtime.h — the CPU backend's services: worker threads, the floating-point environment, and
 * run-time selection of vector code. Every CPU family uses them; they call nothing above. */
#ifndef COOPREDUCE_CPU_RUNTIME_H
#define COOPREDUCE_CPU_RUNTIME_H

#include <fenv.h>
#include <stddef.h>
#include "core/handle.h"

/* Runtime dispatch for the vector code: the same source compiled for AVX-512, AVX2 and baseline
 * x86-64, the best the CPU runs chosen at load time (GCC and clang both build the clones). The
 * bits are the same for every clone (IEEE operations in the same tree). -DCR_NO_SIMD_CLONES
 * builds the baseline alone: CI's CPU-only build does, so that the golden bits are checked on
 * it too. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CR_NO_SIMD_CLONES)
#define CR_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CR_SIMD_CLONES
#endif

/* The most threads a CPU handle runs. */
#define CR_MAX_THREADS 256

/* The online CPUs, 1 .. CR_MAX_THREADS. glibc reads them from a file under /sys at each
 * asking (some 6 us), so a handle asks once, when it is made or its threads are set. */
int cr_cpu_online(void);

/* The threads a CPU handle may use (its setting, or every online CPU), 1 .. CR_MAX_THREADS. */
int cr_cpu_threads(const struct coopreduce_handle *h);

/* Runs worker(jobs + i * job_size) for i in [0, t), t <= CR_MAX_THREADS: t - 1 new threads and
 * the calling thread. A thread that cannot be started is not an error: the calling thread runs
 * its job instead (same result, as every job is independent of where it runs). */
void cr_cpu_run(int t, void *(*worker)(void *), void *jobs, size_t job_size);

/* Every result is defined in IEEE round-to-nearest with subnormals kept. cr_fp_enter saves the
 * calling thread's floating-point environment and sets that one; cr_fp_leave restores it. */
typedef struct {
    fenv_t env;
    unsigned int mxcsr;
} cr_fp_state;
void cr_fp_enter(cr_fp_state *st);
void cr_fp_leave(const cr_fp_state *st);

#endif
