/* axis_check.h — the checks of reductions along an axis and over segments, shared by the CPU
 * test (test_axis_cpu.c) and the GPU test (test_axis_gpu.c): every result of
 * coopreduce_reduce_axis / _segments against the 1-D coopreduce_reduce of its own values copied
 * out contiguously, on the reference CPU handle (the contract of docs/DETERMINISM.md, "Axis and
 * segments"), with the status too when the call fails. */
#ifndef COOPREDUCE_TESTS_AXIS_CHECK_H
#define COOPREDUCE_TESTS_AXIS_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include "coopreduce.h"

/* Where the handle under test keeps its data: identity functions for a CPU handle. */
typedef struct {
    coopreduce_handle *h;                         /* the handle under test */
    coopreduce_handle *ref;                       /* a CPU handle: the 1-D references */
    const char *name;                             /* "cpu", "gpu" in messages */
    void *(*put)(const void *host, size_t bytes); /* a copy in the handle's memory */
    void (*get)(void *host, const void *mem, size_t bytes);
    void (*drop)(void *mem);
    void (*sync)(void); /* waits for the handle's work (GPU: the default stream) */
} axis_env;

/* Fills x[0..n) of dt with data of kind k (0 .. AXIS_KINDS-1): the operation tests' uniform,
 * wide and ties kinds, random bit patterns of every exponent (NaN, infinities and subnormals
 * included, for floats), cancelling pairs, and uniform values with sparse outliers far above and
 * below them (about one element in 2000: NORM2's big and small classes in some rows, columns
 * and chunks, and in some parts of a chunk, not in others), and signed zeros: -0.0 but for about
 * one element in 512, +0.0 or a value (whole rows and columns of -0.0, whose sums are -0.0 only
 * if every padding of their trees adds as -0.0 does), and runs of 1 to 40 chunks (of the GPU's
 * 4096 elements, 2048 for float64) of uniform values and of values over the type's whole range,
 * subnormals included, in turn (NORM2's streams turning from the medium pass to the three
 * classes and back). */
#define AXIS_KINDS 8
void axis_fill(void *x, uint64_t n, coopreduce_dtype dt, int kind);

/* The axis call on a (outer, len, inner) array of dt of data kind `kind`, for op, against the
 * references; returns the failures it recorded. */
int axis_case(const axis_env *env, coopreduce_op op, coopreduce_dtype dt, uint64_t outer,
              uint64_t len, uint64_t inner, int kind);
/* The segments call over nseg + 1 offsets (host memory) into x of n elements. */
int segments_case(const axis_env *env, coopreduce_op op, coopreduce_dtype dt, const int64_t *off,
                  uint64_t nseg, uint64_t n, int kind);

/* Sweeps: every op x dtype x mode along every axis of random 1-D, 2-D and 3-D shapes with
 * awkward extents (0, 1, primes, 2^k +- 1, rows shorter and longer than a chunk); segments with
 * empty and long ones; one row in batches of 1, 7 and many rows. `scale` bounds the elements
 * per case; big_batch is the largest batch of rows. */
void axis_sweep(const axis_env *env, uint64_t scale);
void segments_sweep(const axis_env *env, uint64_t scale);
void batch_invariance(const axis_env *env, uint64_t big_batch);
/* The GPU kernels' length classes of rows, columns and segments, each on purpose, for the
 * canonical-order operations (and MAX, ARGMIN) of every float dtype; `budget` bounds the
 * elements per case. */
void kernel_paths_sweep(const axis_env *env, uint64_t budget);

#endif
