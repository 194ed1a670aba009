/* methods_gpu.h — what the parts of test_methods_gpu share (methods_gpu_harness.c): the
 * buffers and the handle, the data sets with their exact references, and one sum run and
 * checked against them; and the sections main runs. Built with CUDA only. */
#ifndef COOPREDUCE_TESTS_METHODS_GPU_H
#define COOPREDUCE_TESTS_METHODS_GPU_H

#include <stdint.h>

#include "coopreduce.h"
#include "gpu_util.h"
#include "ref_exact.h"

#define NMETHODS COOPREDUCE_METHOD_COUNT
#define NDTYPES  3

extern const coopreduce_dtype dtypes[NDTYPES]; /* the tutorial methods' dtypes */

extern coopreduce_handle *gpu;
extern coopreduce_gpu_props props;
extern void *dx;   /* device input: cap_elems 8-byte elements + 64 bytes */
extern void *dout; /* device result, 64 bytes */
extern void *hx;   /* host copy of the input, same size */
extern uint64_t cap_elems;
extern int quick;
extern unsigned int disabled; /* the COOPREDUCE_FEATURE_* flags currently disabled */
extern uint64_t max_n;        /* largest sweep size */
extern int repeats;           /* determinism runs */
/* The largest error / bound ratio seen per method and float dtype (printed at the end). */
extern double worst_ratio[NMETHODS][2];

const char *mname(int m);
int runs_here(int m);
int set_method(int m);
void set_grid(int blocks);
void set_disabled(unsigned int f);
void reset_handle(void);
void mark_error(void);
int fresh_error(const char *ctx);

/* ---------------------------------------------------------------- data sets */

enum {
    K_UNIFORM,
    K_NORMAL,
    K_SIGNED,
    K_ONES,     /* the generator's kinds */
    K_SMALLINT, /* integers in [-M, M]: exact in any order (floats) */
    K_MIN,
    K_MAX,
    K_ALT, /* int32 extremes: INT32_MIN, INT32_MAX, alternating */
    K_COUNT
};
extern const char *const kind_names[K_COUNT];

typedef struct {
    coopreduce_dtype dt;
    uint64_t n, off; /* the data lies at dx + off elements (hx + off on the host) */
    int kind;
    uint64_t seed;
    int exact;           /* floats: every partial sum of any order is exact */
    ref_exact ref;       /* floats: the exact sum */
    long double abs_sum; /* floats: sum |x| (rounded up a little) */
    int64_t isum;        /* int32: the exact sum */
} dataset;

/* Generates the data set on the host and uploads it to dx + off. */
int load(dataset *ds, coopreduce_dtype dt, uint64_t n, int kind, uint64_t off);
/* A kind for dt: exact == 1 asks for data whose float sums are exact in every order. */
int pick_kind(coopreduce_dtype dt, uint64_t n, int exact);

/* ---------------------------------------------------------------- one sum, and its checks */

typedef struct {
    uint64_t bits; /* the result's bytes (result_size of them), zero-extended */
    coopreduce_launch_info info;
} outcome;

/* Runs the handle's method on the data set: into dout (poisoned first) or, to_host, into a
 * poisoned host variable. On success *o holds the result and the launch info. */
coopreduce_status run(const dataset *ds, int to_host, outcome *o);
/* run + verify (value, bound, launch report); on success *o (if given) holds the outcome.
 * Returns 1 when all holds. */
int sum_ok(const dataset *ds, int m, int to_host, outcome *o_out);
/* Every method that runs here on the loaded data set. to_host: also sum_to_host, compared
 * with the device result. Returns the number of methods that failed. */
int all_methods(const dataset *ds, int to_host);

/* ---------------------------------------------------------------- the sections */

/* methods_gpu_sums.c: results over sizes, alignments, grids and repeated runs */
void empty_sums(void);
void sweep(void);
void misaligned(void);
void forced_grids(void);
void determinism(void);
/* methods_gpu_features.c: the API of a GPU handle, clusters, cooperative launch, pipeline
 * stages, bad input */
void api_basics(void);
void clusters(void);
void cooperative(void);
void pipeline(void);
void bad_input(void);
/* methods_gpu_huge.c: more than 2^31 elements */
void huge(void);

#endif /* COOPREDUCE_TESTS_METHODS_GPU_H */
