/* cpu.h — what the CPU files share beyond internal.h: the canonical chunk routines and the
 * floating-point environment guard (src/cpu/canonical.c). C only. */
#ifndef COOPREDUCE_CPU_H
#define COOPREDUCE_CPU_H

#include <fenv.h>
#include <stdint.h>
#include "internal.h"

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
