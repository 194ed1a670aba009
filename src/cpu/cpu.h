/* cpu.h — the CPU backend: one entry per algorithm family (the plan's CR_FAMILY_*), each in the
 * file of its name, and cr_cpu_reduce (reduce.c), which runs a plan. src/gpu/gpu.h is its GPU
 * twin. Arguments reach here validated by the facade (src/api): pointers, alignment, n within
 * the plan's limits, n >= 1 where the op needs an element. Every call is synchronous. */
#ifndef COOPREDUCE_CPU_H
#define COOPREDUCE_CPU_H

#include <stdint.h>
#include "core/handle.h"
#include "core/order.h"
#include "core/plan.h"
#include "core/values.h"

/* Runs the plan (any family the CPU computes) in the IEEE environment runtime.h sets. */
coopreduce_status cr_cpu_reduce(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                const void *y, uint64_t n, void *result);
/* A flat plan's family, in the IEEE environment the caller has entered (family.c). */
coopreduce_status cr_cpu_run_plan(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                  const void *y, uint64_t n, void *result);
/* A plan with an axis or segmented shape (axis.c): every result as the 1-D call of its own
 * values computes it, in the caller's IEEE environment. Segment offsets are validated already. */
coopreduce_status cr_cpu_shaped(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                const void *y, void *result);
/* Grows the handle's workspace so that the plan's calls of up to n elements allocate nothing
 * beyond what their family documents. */
coopreduce_status cr_cpu_reserve(struct coopreduce_handle *h, const cr_plan *p, uint64_t n);

/* The families (result as coopreduce_reduce() documents). */
coopreduce_status cr_cpu_canonical(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                   uint64_t n, void *result); /* canonical.c */
coopreduce_status cr_cpu_ordered(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                 const void *y, uint64_t n, void *result); /* ordered.c */
coopreduce_status cr_cpu_scan(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                              uint64_t n, void *result); /* scan.c */
coopreduce_status cr_cpu_exact(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                               const void *y, uint64_t n, void *result); /* exact.c */

/* canonical.c's pieces the ordered family builds on. */
/* The canonical sum of x[0..n) of FLOAT32 or FLOAT64 into *result (one element of dtype), in
 * the IEEE environment cr_cpu_reduce entered. */
coopreduce_status cr_cpu_sum(struct coopreduce_handle *h, const void *x, uint64_t n,
                             coopreduce_dtype dtype, void *result);
/* Grows the handle's buffer of level partials for a canonical sum of n elements of acc. */
coopreduce_status cr_cpu_tree_reserve(struct coopreduce_handle *h, uint64_t n,
                                      coopreduce_dtype acc);
/* The chunk tree of docs/DETERMINISM.md over v[0..m), 1 <= m <= C, padded with -0.0. */
float cr_cpu_chunk_f32(const float *v, uint64_t m);
double cr_cpu_chunk_f64(const double *v, uint64_t m);

/* Sharded reductions (src/dist) build on these, in the IEEE environment of cr_fp_enter:
 * level 1 of a CANONICAL or ORDERED plan without its final rule: the value of chunk g of tree k
 * (k < p->trees: one tree, three for NORM2) of x[0..n) in out[k][g], ceil(n / C) per tree, in
 * the accumulation type (ordered.c); */
coopreduce_status cr_cpu_partials(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                  const void *y, uint64_t n, void *const out[3]);
/* one level of the canonical tree: the ceil(n / C) chunk values of v[0..n) of dtype (FLOAT32 or
 * FLOAT64) into out (canonical.c); */
void cr_cpu_level(struct coopreduce_handle *h, coopreduce_dtype dtype, const void *v, uint64_t n,
                  void *out);
/* EXACT: the superaccumulator of x[0..n) before its rounding: nd digits (after a carry pass:
 * each in [0, 2^32) but the top one, signed) and the flags (superacc.h), exact.c. */
coopreduce_status cr_cpu_exact_acc(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                   const void *y, uint64_t n, int64_t *digits, int nd,
                                   unsigned *flags);

/* A float result of value v (exact in a double) for input type dt (values.h: cr_write_float). */
static inline void cr_cpu_write_float(double v, coopreduce_dtype dt, int narrow, void *result)
{
    cr_write_float(v, dt == COOPREDUCE_FLOAT64, dt == COOPREDUCE_FLOAT16, dt == COOPREDUCE_BFLOAT16,
                   narrow, result);
}

#endif
