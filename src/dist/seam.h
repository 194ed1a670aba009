/* seam.h — the seam between the distributed algorithms and the communication libraries.
 *
 * libcoopreduce holds the algorithms (src/dist/sharded.c, allreduce.c, protocol.c): what a rank
 * computes, what it sends, how it combines what it receives, all bit-exact with the 1-D calls.
 * It needs no MPI or NCCL: it talks to a transport, a small table of collectives filled in by
 * libcoopreduce_dist (src/dist/comm.c, mpi.c, nccl.c), the optional library behind
 * include/coopreduce_dist.h, which is built only where CMake finds MPI or NCCL. The functions
 * below are exported by libcoopreduce for libcoopreduce_dist alone (cmake/exports.map): they are
 * not part of the public API and may change with any release.
 *
 * Collectives are called by every rank in the same order with the same sizes (the algorithms
 * make sure of it: sizes come from what every rank knows after the first exchange). Each returns
 * 0, or nonzero with a one-line message in err. */
#ifndef COOPREDUCE_DIST_SEAM_H
#define COOPREDUCE_DIST_SEAM_H

#include <stddef.h>
#include <stdint.h>
#include "coopreduce.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CR_DIST_ERR 256

typedef struct cr_dist_transport {
    void *ctx;
    int rank, size;
    const char *name;  /* "mpi", "nccl" */
    int device_data;   /* 1: the data collectives take device memory of the handle's GPU (NCCL);
                          0: host memory (MPI) */
    int gpu_only;      /* 1: only GPU handles can use it (NCCL) */
    /* Every rank's `bytes` of host memory, rank r's to recv + r * bytes; done on return. */
    int (*allgather_host)(void *ctx, const void *send, void *recv, size_t bytes, void *stream,
                          char *err);
    /* The data collectives, on memory of the kind device_data says, enqueued on stream (NCCL)
     * or done on return (MPI):
     *   alltoall: block q of send (send + q * bytes) to rank q, which receives it at
     *             recv + rank * bytes; this rank's own block is copied too where self is 1, and
     *             may be left unwritten where it is 0;
     *   allgather: as allgather_host; send may be this rank's block of recv (recv + rank * bytes:
     *              in place), which it then leaves as it is. */
    int (*alltoall)(void *ctx, const void *send, void *recv, size_t bytes, int self, void *stream,
                    char *err);
    int (*allgather)(void *ctx, const void *send, void *recv, size_t bytes, void *stream,
                     char *err);
    /* Every rank's bytes[r] at recv + displ[r] (this rank's bytes[rank] from send), of the
     * memory device_data says, enqueued (NCCL) or done (MPI); bytes and displ the same on every
     * rank. A sharded reduction gathers a small array whole with it. */
    int (*allgatherv)(void *ctx, const void *send, void *recv, const size_t *bytes,
                      const size_t *displ, void *stream, char *err);
    /* The first exchange of a call where data lives on the device (NULL elsewhere): every rank's
     * slot of CR_DIST_SLOT_BYTES (its meta, CR_DIST_META_BYTES of host memory, then
     * CR_DIST_LEAD_BYTES of device memory: this rank's first data_bytes (<= that) from `data`,
     * memory its own checks have found readable, the rest unspecified), gathered in one
     * collective into the transport's device memory: *slots_dev, R slots, ready in stream order
     * and valid until the transport's next collective. The meta travels as a kernel's argument,
     * so that nothing of it is read after the call returns. With meta_all not NULL the metas are
     * also copied to meta_all (R x CR_DIST_META_BYTES) and the call waits for them; with NULL it
     * returns at once (a call that checks them on the device, and waits, if at all, for what
     * the device posts of them). A small all-reduce
     * travels whole in it. Every call of a transport that has it makes its first exchange by it
     * (data_bytes 0 where nothing travels), so that the ranks' first collectives match whatever
     * each was called with. */
    int (*allgather_lead)(void *ctx, const void *meta, const void *data, size_t data_bytes,
                          void **slots_dev, void *meta_all, void *stream, char *err);
    /* The communicator's setting (coopreduce_comm_config.deferred_errors): 1 where calls that
     * can skip waiting for their first exchange do so (the same on every rank). */
    int deferred_errors;
} cr_dist_transport;

/* The bytes every rank contributes to the first exchange (allgather_lead): its meta
 * (dist/meta.h) and its device data. */
#define CR_DIST_META_BYTES 64
#define CR_DIST_LEAD_BYTES 16384
#define CR_DIST_SLOT_BYTES (CR_DIST_META_BYTES + CR_DIST_LEAD_BYTES)

/* Buffers a communicator keeps between calls (device memory for GPU handles), opaque here. */
typedef struct cr_dist_cache cr_dist_cache;
void cr_dist_cache_free(cr_dist_cache *cache);

/* coopreduce_reduce_sharded and coopreduce_allreduce (coopreduce_dist.h documents them), over
 * the transport; *cache is created on first use. */
coopreduce_status cr_dist_reduce_sharded(const cr_dist_transport *t, cr_dist_cache **cache,
                                         coopreduce_op op, const void *x, const void *y,
                                         void *result, uint64_t n_local, coopreduce_dtype dtype,
                                         coopreduce_handle *h, void *stream);
coopreduce_status cr_dist_allreduce(const cr_dist_transport *t, cr_dist_cache **cache,
                                    const void *send, void *recv, uint64_t count,
                                    coopreduce_dtype dtype, coopreduce_op op, coopreduce_handle *h,
                                    void *stream);

/* allgather_lead's packing of a slot, for a transport on GPU `device`: dst[0 ..
 * CR_DIST_META_BYTES) = meta (host memory, passed by value), dst[CR_DIST_META_BYTES ..) =
 * data[0 .. data_bytes) (device memory), one kernel enqueued on stream. 0, or nonzero with a
 * message in err. */
int cr_dist_pack_lead(int device, void *dst, const void *meta, const void *data, size_t data_bytes,
                      void *stream, char *err);

/* The first failure recorded by the deferred calls of the communicator whose buffers are cache
 * (coopreduce_comm_deferred_error), cleared once read: its status and message (on h, or the
 * calling thread for NULL); COOPREDUCE_SUCCESS when none is recorded. */
coopreduce_status cr_dist_deferred_error(cr_dist_cache *cache, coopreduce_handle *h);

/* Records a failure as the library does (on h, or on the calling thread for h == NULL), so that
 * coopreduce_last_error() reads it; returns s. */
coopreduce_status cr_dist_fail(coopreduce_handle *h, coopreduce_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
