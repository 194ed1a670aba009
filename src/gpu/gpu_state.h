/* gpu_state.h — the GPU handle's state, shared by gpu_host.c (the canonical sum, workspace,
 * pointer checks) and methods_host.c (the tutorial methods). C only. */
#ifndef COOPREDUCE_GPU_STATE_H
#define COOPREDUCE_GPU_STATE_H

#include <cuda_runtime_api.h>
#include "internal.h"

/* Pointers already found to be device or managed memory of this GPU (gpu_host.c says why). */
#define CR_POINTER_CACHE 8

struct cr_gpu_state {
    int sm_count;
    int cc_major, cc_minor;       /* compute capability */
    int cooperative_launch;       /* device attributes, before any testing mask */
    int cluster_launch;
    uint64_t l2_bytes;
    const void *checked[CR_POINTER_CACHE];
    unsigned int checked_next;
    int blocks_per_sm[2];         /* per dtype, from the occupancy calculator */
    void *partials;               /* device: partial sums of levels 1 .. L-1 */
    size_t partials_bytes;
    void *counters;               /* device: group counters, all zero between launches */
    size_t counters_bytes;
    void *host_slot;              /* pinned, mapped host memory for coopreduce_sum_to_host: */
    void *host_slot_dev;          /*   16 bytes: tagged words (gpu_host.c), or a method's value */
    unsigned int seq;             /* the tag of the last canonical host-result call */
    /* The scratch of the tutorial methods and the order-independent operations
     * (cr_gpu_scratch_ensure in methods_host.c), allocated on first use. */
    void *m_partials;             /* device: one 8-byte (methods) or 16-byte (operations) slot per block */
    size_t m_partials_bytes;
    void *m_ticket;               /* device: 256 zeroed bytes; every kernel leaves it zero */
    void *m_out;                  /* device: 8-byte result slot for host-result calls */
    void *m_host;                 /* pinned host: the `block` method's partials */
    size_t m_host_bytes;
    /* NORM2 (ordered_host.c): the join slots, then three trees' partials and counters; zeroed. */
    void *o_work;                 /* device, grown on demand */
    uint64_t o_cap;               /* the elements it is laid out for */
    int o_blocks_per_sm[3];       /* ordered.cu kernels' occupancy: float32, float64, 16-bit; 0 = not asked yet */
};

cudaError_t cr_gpu_use_device(int ordinal);
coopreduce_status cr_cuda_fail(coopreduce_handle *h, cudaError_t e, const char *what);
coopreduce_status cr_gpu_check_pointer(coopreduce_handle *h, const void *p, const char *name);
/* The tutorial methods, and the GPU int32 sum (methods_host.c). Arguments validated, n >= 1 or
 * n == 0 both handled. */
coopreduce_status cr_gpu_sum_method(coopreduce_handle *h, const void *x, void *result,
                                    uint64_t n, coopreduce_dtype dtype, void *stream,
                                    int to_host);
coopreduce_status cr_gpu_method_reserve(coopreduce_handle *h, uint64_t n);
coopreduce_status cr_gpu_scratch_ensure(coopreduce_handle *h, size_t partial_bytes);
void cr_gpu_method_free(struct cr_gpu_state *g);
/* The order-independent operations (ops_host.c, kernels in ops.cu): MIN, MAX, ABSMAX, ARGMIN,
 * ARGMAX of every dtype; SUM and MEAN of INT32, INT64, UINT32, UINT64. Arguments validated by
 * api.c (n >= 1 for MIN .. ARGMAX; n == 0 allowed for SUM and MEAN); result as
 * coopreduce_reduce() documents (device memory, or host memory with to_host). Returns
 * COOPREDUCE_ERROR_NOT_SUPPORTED for any other (op, dtype). */
/* The canonical sum of x[0..n), n >= 1, enqueued on `stream` (gpu_host.c): grows the workspace
 * if needed, sizes the grid (or takes the handle's forced one), launches. The result goes to
 * out (device), or with host_dev != NULL tagged with seq into the mapped host slot. fin_op: -1
 * for the sum itself, or an operation whose leaves are x itself (SUM, MEAN) whose final rule
 * the kernel applies (values.h; result to out). No pointer checks. *blocks and *threads
 * receive the launch's shape. */
coopreduce_status cr_gpu_canonical_enqueue(coopreduce_handle *h, const void *x, uint64_t n,
                                           coopreduce_dtype dtype, void *out, void *host_dev,
                                           unsigned int seq, int fin_op, void *stream,
                                           int *blocks, int *threads);
/* Bytes of the canonical workspace's partials and counters for n elements of dtype. */
void cr_gpu_workspace_bytes(uint64_t n, coopreduce_dtype dtype, size_t *partials, size_t *counters);
/* Grows the canonical workspace (partials, counters) to what n elements of dtype need. */
coopreduce_status cr_gpu_ensure_workspace(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype);
/* The canonical-order operations (ordered_host.c, kernels in ordered.cu): SUM of FLOAT16 and
 * BFLOAT16; MEAN, SUMSQ, NORM2 and DOT of every float type. Arguments validated by api.c. */
coopreduce_status cr_gpu_reduce_ordered(coopreduce_handle *h, coopreduce_op op, const void *x,
                                        const void *y, void *result, uint64_t n,
                                        coopreduce_dtype dtype, void *stream, int to_host);
/* Grows the ordered operations' workspace for n elements of dtype (coopreduce_reserve). */
coopreduce_status cr_gpu_ordered_reserve(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype);
void cr_gpu_ordered_free(struct cr_gpu_state *g);
coopreduce_status cr_gpu_reduce_unordered(coopreduce_handle *h, coopreduce_op op, const void *x,
                                          void *result, uint64_t n, coopreduce_dtype dtype,
                                          void *stream, int to_host);

#endif
