/* ops_gpu.h — what the parts of test_ops_gpu share: the buffers and the handles, the scope of
 * the file (the order-independent operations), the reference (ops_gpu_reference.c: this file's
 * own rules), the data kinds, and one operation run on the GPU and the CPU and checked
 * (ops_gpu_harness.c); and the sections main runs. Built with CUDA only. */
#ifndef COOPREDUCE_TESTS_OPS_GPU_H
#define COOPREDUCE_TESTS_OPS_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "coopreduce.h"
#include "gpu_util.h"

/* The operations of this file, every dtype. */
#define NOPS 7
extern const coopreduce_op all_ops[NOPS];

extern coopreduce_handle *gpu, *cpu;
extern void *dx;          /* device input: cap_bytes + 64 */
extern void *dout;        /* device result: 64 bytes */
extern unsigned char *hx; /* host data, cap_bytes */
extern size_t cap_bytes;
extern uint64_t max_n;
extern int quick;

/* The operation's name, or "?". */
const char *oname(coopreduce_op op);
/* The (op, dtype) pairs the GPU computes here. INT32 SUM goes through the canonical int32 sum
 * (another file's kernel) but must give the same bits, so it is checked too. */
int in_scope(coopreduce_op op, coopreduce_dtype dt);
/* Bytes of the result, from the header's table. */
size_t rsize(coopreduce_op op, coopreduce_dtype dt);

/* ---------------------------------------------------------------- the reference */

/* The expected result bytes of op over x[0..n) (host memory); MEAN only for n == 0 (the other
 * means are checked with mean_ok). */
void reference(coopreduce_op op, coopreduce_dtype dt, const void *x, uint64_t n,
               unsigned char out[16]);
/* 1 when the double at `result` is the mean of the integers x[0..n) (n >= 1) rounded to
 * nearest even; else `why` says what is wrong. */
int mean_ok(coopreduce_dtype dt, const void *x, uint64_t n, const void *result, char *why,
            size_t wl);

/* ---------------------------------------------------------------- data */

enum { K_WIDE, K_TIES, K_NEG, K_SPECIAL, K_NAN, K_EXTREME, K_EQUAL, K_COUNT };
extern const char *const kind_names[K_COUNT];
/* A NaN of any payload, quiet or signalling, either sign. */
uint64_t nan_pattern(coopreduce_dtype dt);
/* Fills x[0..n) of dt with `kind` (float kinds for floats, the integer ones for integers). */
void fill(void *x, uint64_t n, coopreduce_dtype dt, int kind);
/* A random kind that suits dt. */
int pick_kind(coopreduce_dtype dt);

/* ---------------------------------------------------------------- one operation, checked */

/* 1 when the 128-bit sum r fits the 64-bit type dt. */
int fits_64(coopreduce_dtype dt, const unsigned char r[16]);
/* Runs op on the GPU over d_x[0..n) (device) and on the CPU over h_x[0..n) (host, the same
 * values), checks both against the reference, the poison after the result, and the launch
 * report. forced: the grid set on the handle (0 = automatic). Returns 1 when all held. */
int check_op(coopreduce_op op, coopreduce_dtype dt, const void *d_x, const void *h_x, uint64_t n,
             const char *ctx, int forced);
/* Uploads h[0..n) of dt to dx + off elements; returns the device pointer, or NULL. */
void *upload(const void *h, uint64_t n, coopreduce_dtype dt, uint64_t off);
void set_grid(int blocks);
/* Every op in scope over one data set of dt (already in hx and at d). */
void run_all_ops(coopreduce_dtype dt, const void *d, uint64_t n, const char *ctx, int forced);
/* GPU result of op over the data at d (n elements) into r[16]; 1 on success. */
int gpu_result(coopreduce_op op, coopreduce_dtype dt, const void *d, uint64_t n,
               unsigned char r[16], const char *ctx);
/* The GPU result of op, its first (up to) 8 bytes, must be `want`. */
void expect_u64(coopreduce_op op, coopreduce_dtype dt, const void *d, uint64_t n, uint64_t want,
                const char *ctx);

/* ---------------------------------------------------------------- the sections */

/* ops_gpu_sweeps.c: the result sizes, sizes and kinds, host results, forced grids */
void api_basics(void);
void sweep(void);
void to_host(void);
void grids(void);
/* ops_gpu_values.c: NaN, zeros and infinities, integer extremes, empty input */
void nans(void);
void zeros_and_infs(void);
void int_extremes(void);
void empty(void);
/* ops_gpu_memory.c: streams and pointers, more than 2^31 elements, --timing */
void streams_and_pointers(void);
void huge(void);
void timing(void);

#endif /* COOPREDUCE_TESTS_OPS_GPU_H */
