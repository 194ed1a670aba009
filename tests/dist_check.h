/* dist_check.h — the checks of sharded reductions and the all-reduce, shared by the MPI test
 * (test_dist_mpi.c, ranks are processes) and the multi-GPU test (test_dist_gpu.c, ranks are
 * threads of one process with a NCCL communicator each).
 *
 * Every rank generates the same global arrays (a counter-based generator seeded per case), takes
 * its shard, and compares the sharded result with the 1-D call on the whole array on a CPU handle
 * (whose bits are the GPU's), status and bits, and where asked with the 1-D call on the rank's
 * own GPU; the all-reduce against coopreduce_reduce_axis
 * along axis 0 of the stacked arrays; and the errors every rank must report. Counters are per
 * rank (the threads of test_dist_gpu.c each have their own). */
#ifndef COOPREDUCE_TESTS_DIST_CHECK_H
#define COOPREDUCE_TESTS_DIST_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include "coopreduce.h"
#include "coopreduce_dist.h"

typedef struct dist_env {
    int rank, size;
    coopreduce_comm *comm;
    coopreduce_handle *h;   /* this rank's handle (CPU or GPU) */
    coopreduce_handle *ref; /* a CPU handle: the single-process reference */
    void *stream;
    int gpu; /* h is a GPU handle: shards go to device memory through the functions below */
    int gpu_1d; /* with gpu: also compare with the 1-D call on h (this rank's GPU), whole array */
    void *(*dev_alloc)(size_t bytes);
    void (*dev_free)(void *p);
    void (*to_dev)(void *dst, const void *src, size_t bytes);
    void (*to_host)(void *dst, const void *src, size_t bytes);
    int quick;       /* fewer sizes and splits */
    int deep;        /* also arrays of three levels (tens of MB per rank) */
    int small;       /* with quick: only arrays that fit the first exchange (a short run, for
                        compute-sanitizer) */
    unsigned long long passed, failed;
    const char *name; /* "mpi", "nccl": in failure messages */
} dist_env;

/* Every op x dtype x mode (and narrowing) x size x split. */
void dist_check_sharded(dist_env *e);
/* Every op but DOT x dtype x mode x count. */
void dist_check_allreduce(dist_env *e);
/* Bad arguments and disagreements: every rank fails, nothing hangs, and a good call after. */
void dist_check_errors(dist_env *e);
/* The communicator's settings, and deferred errors: the all-reduce's bits with them, and every
 * failure reported by the calls or by coopreduce_comm_deferred_error on every rank. */
void dist_check_deferred(dist_env *e);

#endif
