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

#include "dist/meta.h"

/* What a communicator keeps between calls: device memory of one GPU, grown on demand; its count
 * of calls; the deferred calls' failure record. */
struct cr_dist_cache {
    int device;
    void *dev;
    size_t dev_bytes;
    uint32_t serial;  /* calls made (every rank's count is the same: the calls are collective) */
    cr_deferred *rec; /* mapped host memory the GPU writes to (NULL until a deferred call) */
    void *rec_dev;
    void *host; /* host memory (sharded.c's gathers for CPU handles) */
    size_t host_bytes;
    size_t *sizes; /* 2 x nsizes: sharded.c's gathers' sizes and places */
    int nsizes;
    void *post, *post_dev; /* mapped host memory: posted metas (cr_dist_post), post_ranks of them */
    int post_ranks;
    uint32_t post_seq;     /* the latest post's tag (never 0) */
};

/* *cache, created on first use. */
coopreduce_status cr_dist_cache_get(coopreduce_handle *h, cr_dist_cache **cache);

/* At least `bytes` of device memory of h's GPU in the cache (*cache created on first use). */
coopreduce_status cr_dist_device_buffer(coopreduce_handle *h, cr_dist_cache **cache, size_t bytes,
                                        void **p);

/* The first exchange: gathers every rank's meta into all[size] (malloc'd, the caller frees it),
 * through the transport's allgather_lead where it has one: then data_bytes (<=
 * CR_DIST_LEAD_BYTES) of device memory at data travel with it, every rank's slot at *data_all
 * (R x CR_DIST_SLOT_BYTES, the transport's: slot r is rank r's meta then its data; NULL without
 * allgather_lead; data_all may be NULL when nothing travels). Fails with COOPREDUCE_ERROR_COMMUNICATION when the transport does
 * (nothing else can be done then), or with the agreed failure: this rank's own status, or
 * COOPREDUCE_ERROR_OTHER_RANK naming the first rank that failed, after the messages are
 * exchanged (cr_dist_agree; on a communicator with deferred errors no messages are exchanged,
 * so that every rank's collectives match whichever of its calls defer: the others' message then
 * names the rank and its status only). */
coopreduce_status cr_dist_first_exchange(const cr_dist_transport *t, coopreduce_handle *h,
                                         const cr_meta *me, cr_meta **all, void *stream,
                                         const void *data, size_t data_bytes, void **data_all);

/* Where a kernel of a call that waits for its first exchange alone (not for its stream) posts
 * the R metas (the cache's mapped memory, grown to R; a fresh tag): cr_gpu_lead_whole and
 * cr_gpu_commit take it, cr_dist_first_exchange_posted waits for it. */
coopreduce_status cr_dist_post(coopreduce_handle *h, cr_dist_cache **cache, int R,
                               cr_meta_post *post);

/* The gate of a call whose first exchange's slots (R of CR_DIST_SLOT_BYTES) are at slots: the
 * metas there checked against this rank's own; no record, no post, not a sharded call's (the
 * caller sets those). */
cr_gate cr_dist_gate(const void *slots, int R, const cr_meta *mine);

/* The rest of a first exchange made by cr_dist_first_exchange_deferred whose metas a kernel
 * enqueued since posts to `post` (cr_dist_post): waits for them, then fails as
 * cr_dist_first_exchange does, or gives them in *all (malloc'd, the caller frees it). */
coopreduce_status cr_dist_first_exchange_posted(const cr_dist_transport *t, coopreduce_handle *h,
                                                cr_dist_cache *cache, const cr_meta *me,
                                                const cr_meta_post *post, cr_meta **all,
                                                void *stream);

/* The same where nothing was posted (this rank's kernel that would post could not be launched):
 * the metas copied from the gathered slots (device memory, R of CR_DIST_SLOT_BYTES), waiting
 * for the stream, so that this rank still takes part in what follows. */
coopreduce_status cr_dist_first_exchange_fetched(const cr_dist_transport *t, coopreduce_handle *h,
                                                 const cr_meta *me, const void *slots,
                                                 cr_meta **all, void *stream);

/* The first exchange of a call that does not wait for it (allgather_lead without waiting): every
 * rank's slot (its meta, then its data) at *slots (R x CR_DIST_SLOT_BYTES of device memory, in
 * stream order), checked on the device (a gate: dist/meta.h) and, unless the call defers its
 * errors, on the host after cr_dist_first_exchange_posted. Fails with
 * COOPREDUCE_ERROR_COMMUNICATION when the transport does. */
coopreduce_status cr_dist_first_exchange_deferred(const cr_dist_transport *t, coopreduce_handle *h,
                                                  const cr_meta *me, const void *data,
                                                  size_t data_bytes, void **slots, void *stream);

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
 * whose own checks gave `status`, with h's settings (h may be NULL) and the communicator's next
 * serial (counted in *cache); a GPU-only transport's refusal of a CPU handle is this rank's
 * failure too. */
cr_meta cr_dist_meta(const cr_dist_transport *t, cr_dist_cache **cache, coopreduce_handle *h,
                     int call, uint64_t n, coopreduce_op op, coopreduce_dtype dtype,
                     coopreduce_status status);

/* The local checks of a call: the plan of (op, dtype) on h's settings and the pointers. */
coopreduce_status cr_dist_local_checks(coopreduce_handle *h, coopreduce_op op,
                                       coopreduce_dtype dtype, const void *x, const void *y,
                                       const void *result, uint64_t n, cr_plan *p);

/* 1 when the environment sets COOPREDUCE_DIST_FULL_PROTOCOL=1: one rank then takes the path of
 * many (the exchanges, the boundaries), which tests use to run it on one GPU; else one rank
 * makes the 1-D call. */
int cr_dist_full_protocol(void);

/* The largest array (KiB) a sharded reduction gathers whole to every rank instead of exchanging
 * its tree's boundaries: 1024, or COOPREDUCE_DIST_GATHER_KIB from the environment (0: never;
 * tests use it to take either path). The smallest of the ranks' values decides. */
int cr_dist_gather_kib(void);

/* The transport's failure on h: COOPREDUCE_ERROR_COMMUNICATION. */
coopreduce_status cr_dist_transport_fail(coopreduce_handle *h, const cr_dist_transport *t,
                                         const char *what, const char *err);

#endif
