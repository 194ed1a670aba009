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
     *   allgather: as allgather_host. */
    int (*alltoall)(void *ctx, const void *send, void *recv, size_t bytes, int self, void *stream,
                    char *err);
    int (*allgather)(void *ctx, const void *send, void *recv, size_t bytes, void *stream,
                     char *err);
    /* The first exchange of a call where data lives on the device (NULL elsewhere): as
     * allgather_host of `bytes` of host memory (meta, done on return), and in the same step every
     * rank's CR_DIST_LEAD_BYTES of device memory: this rank's first data_bytes (<= that) from
     * `data`, the rest unspecified; *data_all is then R x CR_DIST_LEAD_BYTES of the transport's
     * device memory, ready in stream order and valid until the transport's next collective. A
     * small all-reduce travels whole in it. If this rank's data cannot be read, its meta
     * travels as zeros (no magic: every rank's protocol fails the call naming this rank). Every
     * call of a transport that has it makes its
     * first exchange by it (data_bytes 0 where nothing travels), so that the ranks' first
     * collectives match whatever each was called with. */
    int (*allgather_lead)(void *ctx, const void *meta, void *meta_all, size_t bytes,
                          const void *data, size_t data_bytes, void **data_all, void *stream,
                          char *err);
} cr_dist_transport;

/* The device bytes every rank contributes to the first exchange (allgather_lead). */
#define CR_DIST_LEAD_BYTES 4096

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

/* Records a failure as the library does (on h, or on the calling thread for h == NULL), so that
 * coopreduce_last_error() reads it; returns s. */
coopreduce_status cr_dist_fail(coopreduce_handle *h, coopreduce_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
