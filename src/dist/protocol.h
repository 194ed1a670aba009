/* protocol.h — what the distributed algorithms share (protocol.c): the first exchange, in which
 * every rank tells every other what it was called with and whether its own checks passed; the
 * exchange of error messages after a failure; the buffers a communicator keeps. Every collective
 * is made by every rank, whatever failed locally, so that no rank waits forever for another. */
#ifndef COOPREDUCE_DIST_PROTOCOL_H
#define COOPREDUCE_DIST_PROTOCOL_H

#include <stdint.h>
#include "core/handle.h"
#include "core/plan.h"
#include "dist/seam.h"

#define CR_META_MAGIC 0x31445243u /* "CRD1" */

/* One rank's call, as the first exchange carries it (48 bytes, the same layout on every rank). */
typedef struct {
    uint32_t magic;
    int32_t status; /* the rank's own checks: COOPREDUCE_SUCCESS or the failure */
    uint64_t n;     /* elements of its shard (sharded) or count (all-reduce) */
    int32_t call;   /* 1: sharded reduction, 2: all-reduce */
    int32_t op, dtype, mode, narrow, method;
    int32_t device; /* -1: a CPU handle */
    int32_t pad;
} cr_meta;

/* Buffers kept between calls: device memory of one GPU, grown on demand. */
struct cr_dist_cache {
    int device;
    void *dev;
    size_t dev_bytes;
};

/* At least `bytes` of device memory of h's GPU in the cache (*cache created on first use). */
coopreduce_status cr_dist_device_buffer(coopreduce_handle *h, cr_dist_cache **cache, size_t bytes,
                                        void **p);

/* The first exchange: gathers every rank's meta into all[size] (malloc'd, the caller frees it),
 * through the transport's allgather_lead where it has one: then data_bytes (<=
 * CR_DIST_LEAD_BYTES) of device memory at data travel with it, every rank's at *data_all (R x
 * CR_DIST_LEAD_BYTES, the transport's; NULL without allgather_lead; data_all may be NULL when
 * nothing travels). Fails with COOPREDUCE_ERROR_COMMUNICATION when the transport does
 * (nothing else can be done then), or with the agreed failure: this rank's own status, or
 * COOPREDUCE_ERROR_OTHER_RANK naming the first rank that failed, after the messages are
 * exchanged (cr_dist_agree). */
coopreduce_status cr_dist_first_exchange(const cr_dist_transport *t, coopreduce_handle *h,
                                         const cr_meta *me, cr_meta **all, void *stream,
                                         const void *data, size_t data_bytes, void **data_all);

/* After a collective that carried every rank's status (statuses[r], r < size): when some rank
 * failed, every rank exchanges its message and returns: this rank its own failure (its message
 * as it stands), the others COOPREDUCE_ERROR_OTHER_RANK naming the first failed rank and its
 * message. COOPREDUCE_SUCCESS when none failed. Every rank must call it with the same statuses. */
coopreduce_status cr_dist_agree(const cr_dist_transport *t, coopreduce_handle *h,
                                const int32_t *statuses, void *stream);

/* The ranks' metas against each other: op, dtype, mode, narrowing and method must agree (and for
 * the all-reduce, the count). Every rank finds the same disagreement and fails with
 * COOPREDUCE_ERROR_INVALID_ARGUMENT naming it. */
coopreduce_status cr_dist_check_agreement(const cr_dist_transport *t, coopreduce_handle *h,
                                          const cr_meta *all);

/* This rank's meta for a call (`call`: 1 sharded, 2 all-reduce) of op over n elements of dtype
 * whose own checks gave `status`, with h's settings (h may be NULL); a GPU-only transport's
 * refusal of a CPU handle is this rank's failure too. */
cr_meta cr_dist_meta(const cr_dist_transport *t, coopreduce_handle *h, int call, uint64_t n,
                     coopreduce_op op, coopreduce_dtype dtype, coopreduce_status status);

/* The local checks of a call: the plan of (op, dtype) on h's settings and the pointers. */
coopreduce_status cr_dist_local_checks(coopreduce_handle *h, coopreduce_op op,
                                       coopreduce_dtype dtype, const void *x, const void *y,
                                       const void *result, uint64_t n, cr_plan *p);

/* 1 when the environment sets COOPREDUCE_DIST_FULL_PROTOCOL=1: one rank then takes the path of
 * many (the exchanges, the boundaries), which tests use to run it on one GPU; else one rank
 * makes the 1-D call. */
int cr_dist_full_protocol(void);

/* The transport's failure on h: COOPREDUCE_ERROR_COMMUNICATION. */
coopreduce_status cr_dist_transport_fail(coopreduce_handle *h, const cr_dist_transport *t,
                                         const char *what, const char *err);

#endif
