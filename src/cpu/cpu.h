/* cpu.h — what the CPU files share beyond internal.h: the canonical chunk routines and the
 * floating-point environment guard (src/cpu/canonical.c). C only. */
#ifndef COOPREDUCE_CPU_H
#define COOPREDUCE_CPU_H

#include <fenv.h>
#include <stdint.h>
#include "internal.h"

/* Runtime dispatch for the vector code (canonical.c, exact.c): the same source compiled for
 * AVX-512, AVX2 and baseline x86-64, the best the CPU runs chosen at load time. The bits are
 * the same for every clone (IEEE additions in the same tree). -DCR_NO_SIMD_CLONES builds the
 * baseline alone: CI's CPU-only build does, so that the golden bits are checked on it too. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(CR_NO_SIMD_CLONES)
#define CR_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CR_SIMD_CLONES
#endif

/* The chunk tree of docs/DETERMINISM.md over v[0..m), 1 <= m <= C, padded with -0.0. */
float cr_cpu_chunk_f32(const float *v, uint64_t m);
double cr_cpu_chunk_f64(const double *v, uint64_t m);

/* The tree is defined in IEEE round-to-nearest with subnormals kept. cr_fp_enter saves the
 * calling thread's floating-point environment and sets that one; cr_fp_leave restores it. */
typedef struct {
    fenv_t env;
    unsigned int mxcsr;
} cr_fp_state;
void cr_fp_enter(cr_fp_state *st);
void cr_fp_leave(const cr_fp_state *st);

#endif
