/* state.h — a GPU handle's state and the GPU backend's services: the device (device.c) and the
 * workspace (workspace.c). Every GPU path — the kernel families through reduce.c, and the
 * tutorial methods (methods/host.c) — uses these and nothing above them. C only. */
#ifndef COOPREDUCE_GPU_STATE_H
#define COOPREDUCE_GPU_STATE_H

#include <cuda_runtime_api.h>
#include "core/handle.h"
#include "core/plan.h"
#include "gpu/launch.h"

/* Pointers already found to be device or managed memory of this GPU (device.c says why). */
#define CR_POINTER_CACHE 8

struct cr_gpu_state {
    /* The device, read when the handle was made (nothing is asked of the driver per call). */
    int sm_count;
    int cc_major, cc_minor; /* compute capability */
    int cooperative_launch; /* device attributes, before any testing mask */
    int cluster_launch;
    uint64_t l2_bytes;
    const void *checked[CR_POINTER_CACHE];
    unsigned int checked_next;
    /* The workspace (workspace.c): allocated zeroed, grown on demand or by coopreduce_reserve,
     * the new before the old is freed, so a failure leaves the handle as it was. */
    void *tree_partials; /* a canonical tree: tagged partials of levels 1 .. L-1 */
    size_t tree_partials_bytes;
    void *tree_counters; /* its group counters and epoch, all zero between launches */
    size_t tree_counters_bytes;
    void *norm2;        /* NORM2's three trees' partials and their counters; zeroed */
    uint64_t norm2_cap; /*   the elements it is laid out for */
    void *slots;        /* per-block slots (scan, the methods' partials) */
    size_t slots_bytes;
    void *ticket;        /* CR_GPU_TICKET_BYTES zeroed, zero again after every kernel: the
                            last-block ticket (bytes 0-3), scan.cu's atomic fold (bytes 16-39),
                            rows.cu's segment counters (bytes 48-63), exact.cu's fold of digits
                            and flags (from byte 256); not zero: rows.cu's segment fault word
                            (bytes 64-71, launch.h) */
    void *out;           /* 256 bytes: a device result slot (the methods' host results) */
    void *host_slot;     /* pinned, mapped host memory for results sent to the host: */
    void *host_slot_dev; /*   16 bytes, tagged words (reduce.c) or a plain result */
    unsigned int seq;    /* the tag of the last tagged host-result call */
    unsigned int seg_epoch;    /* the number of the last segments call checked on the device */
    unsigned int seg_reported; /* the last such call whose bad offsets were reported */
    void *gather;        /* device: axis.c's scratch, the level-1 partials of rows.cu's kernels
                            or strided rows gathered contiguous (the generic path) */
    size_t gather_bytes;
    unsigned int *row_tickets; /* device, zeroed, zero again after every kernel: rows.cu's ticket
                                  per row or segment (the warp that completes one reduces its
                                  partials) */
    uint64_t row_tickets_count;
    void *pinned; /* pinned host scratch, used within one call: the `block` method's partials,
                     the segments' offsets read back to be checked */
    size_t pinned_bytes;
};

/* ---- device.c ------------------------------------------------------------------------------ */
/* Makes `ordinal` the calling thread's current device (without resetting a context). */
cudaError_t cr_gpu_use_device(int ordinal);
/* Records the failed CUDA call `what` on h: COOPREDUCE_ERROR_OUT_OF_MEMORY or _CUDA. */
coopreduce_status cr_cuda_fail(struct coopreduce_handle *h, cudaError_t e, const char *what);
/* COOPREDUCE_ERROR_NOT_DEVICE_MEMORY unless the GPU can access p (named `name` in messages). */
coopreduce_status cr_gpu_check_pointer(struct coopreduce_handle *h, const void *p,
                                       const char *name);

/* ---- workspace.c --------------------------------------------------------------------------- */
/* Makes the workspace large enough for `plan` on n elements with a grid needing `slot_blocks`
 * slots of `slot_bytes` (0 for none), and describes it in *w (may be NULL). */
coopreduce_status cr_gpu_work_ensure(struct coopreduce_handle *h, const cr_plan *plan, uint64_t n,
                                     size_t slot_bytes, int slot_blocks, cr_gpu_work *w);
/* At least `bytes` of per-block slots, the ticket and the device result slot. */
coopreduce_status cr_gpu_slots_ensure(struct coopreduce_handle *h, size_t bytes);
/* At least `bytes` of pinned host scratch memory (g->pinned; grows, keeps nothing). */
coopreduce_status cr_gpu_pinned_ensure(struct coopreduce_handle *h, size_t bytes);
/* The pinned, mapped result slot; made when the handle is. */
coopreduce_status cr_gpu_host_slot_create(struct coopreduce_handle *h);
/* Frees everything; returns the first error (the frees wait for the device's work). */
coopreduce_status cr_gpu_work_free(struct coopreduce_handle *h);

/* ---- reduce.c, axis.c ------------------------------------------------------------------------ */
/* ---- enqueue.c: kernels on the caller's stream (reduce.c and axis.c launch through it) ------ */
/* The call as the families see it (launch.h); out and the tagged host slot are the caller's. */
cr_gpu_call cr_gpu_call_of(const struct coopreduce_handle *h, const cr_plan *p, const void *x,
                           const void *y, uint64_t n, void *stream);
/* The plan's family sizes its grid for the call (cr_gpu_size), then gets its workspace and is
 * launched (cr_gpu_enqueue). */
coopreduce_status cr_gpu_size(struct coopreduce_handle *h, const cr_gpu_call *c, cr_gpu_grid *grid);
coopreduce_status cr_gpu_enqueue(struct coopreduce_handle *h, const cr_gpu_call *c,
                                 cr_gpu_grid *grid);
/* Enqueues a flat plan's family on n elements at x (and y) with its result at `out` (device
 * memory), pointers already checked and the device current. */
coopreduce_status cr_gpu_launch_flat(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                     const void *y, void *out, uint64_t n, void *stream);
/* Whether scan.cu's kernel for many rows computes the flat plan (the scan family, any len), and
 * its launch: rows contiguous rows at x, or segments by device offsets (launch.h), results at out
 * (device memory), every result the 1-D call's bits. */
int cr_gpu_rows_served(const cr_plan *p);
coopreduce_status cr_gpu_launch_rows(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                     void *out, uint64_t rows, uint64_t len,
                                     const int64_t *offsets, void *stream);
/* rows.cu's kernels for a shaped call of the CANONICAL or ORDERED family (launch.h), pointers
 * already checked and the device current. */
coopreduce_status cr_gpu_launch_shape(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                      const void *y, void *out, const cr_gpu_shape_call *s,
                                      void *stream);
/* A plan with an axis or segmented shape (axis.c). */
coopreduce_status cr_gpu_shaped(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                const void *y, void *result, void *stream);
/* Grows the handle's buffers so that the shaped plan's calls allocate nothing (axis.c): the
 * shape's partials, tickets, gathered tiles and read-back offsets, and the 1-D workspace of its
 * longest launch. */
coopreduce_status cr_gpu_reserve_shaped(struct coopreduce_handle *h, const cr_plan *shaped);
/* At least `bytes` of axis.c's device scratch (partials of long rows, columns and segments, or
 * gathered strided rows). */
coopreduce_status cr_gpu_gather_ensure(struct coopreduce_handle *h, size_t bytes);
/* At least `count` row tickets (g->row_tickets), zeroed; a grown buffer is zeroed anew. */
coopreduce_status cr_gpu_tickets_ensure(struct coopreduce_handle *h, uint64_t count);

/* ---- methods/host.c: the tutorial methods (a leaf: nothing else calls into it) -------------- */
coopreduce_status cr_gpu_method_sum(struct coopreduce_handle *h, const cr_plan *plan, const void *x,
                                    void *result, uint64_t n, void *stream, int to_host);
coopreduce_status cr_gpu_method_reserve(struct coopreduce_handle *h, const cr_plan *plan,
                                        uint64_t n);

#endif
