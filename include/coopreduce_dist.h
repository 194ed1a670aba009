/*
 * coopreduce_dist.h — sharded reductions and a deterministic all-reduce over MPI and NCCL.
 *
 * The same bits on one device, on 8 GPUs or on 64 nodes: a reduction of an array split into
 * shards across the ranks of a communicator gives every rank exactly the bits of the 1-D
 * coopreduce_reduce() of the whole array, whatever the number of ranks and whatever the split
 * (docs/DETERMINISM.md, "Sharded reductions"); the all-reduce gives the bits of
 * coopreduce_reduce_axis() along axis 0 of the ranks' stacked arrays, whatever the message size
 * or NCCL's algorithm, protocol and channel count.
 *
 * This header belongs to libcoopreduce_dist (link -lcoopreduce_dist -lcoopreduce, or CMake's
 * coopreduce::coopreduce_dist), built where CMake finds MPI or NCCL (COOPREDUCE_ENABLE_MPI,
 * COOPREDUCE_ENABLE_NCCL; docs/ARCHITECTURE.md). coopreduce.h, which it includes, stays free of
 * MPI and NCCL types. The functions that take an MPI_Comm are declared when <mpi.h> is included
 * before this header, those that take a ncclComm_t when <nccl.h> is; the others always are.
 * coopreduce_dist_backends() says which backends the library was built with; the functions of a
 * backend it lacks are not in it (coopreduce_comm_init_nccl_from_mpi needs both).
 *
 * Communicators
 * -------------
 * A coopreduce_comm wraps an existing MPI communicator or NCCL communicator; the caller keeps
 * ownership of it and must keep it alive while the coopreduce_comm is used (except the NCCL
 * communicator made by coopreduce_comm_init_nccl_from_mpi, which the coopreduce_comm owns). The
 * coopreduce_comm also keeps the buffers the calls need between calls (device memory for GPU
 * handles), freed by coopreduce_comm_destroy. Use one coopreduce_comm from one thread at a time.
 *   MPI: CPU handles and GPU handles. GPU handles' data goes through host memory (the shards'
 *     boundaries, a few chunks per level, and the all-reduce's data): correct everywhere, fast
 *     for sharded reductions, not for large all-reduces (use NCCL for those). Ranks may mix CPU
 *     and GPU handles: the bits are the same.
 *   NCCL: GPU handles only, each rank's handle on the GPU of its NCCL rank; the data stays on
 *     the GPUs.
 *
 * Collective calls
 * ----------------
 * coopreduce_reduce_sharded and coopreduce_allreduce are collective: every rank of the
 * communicator calls them, in the same order. Each begins with a small exchange in which every
 * rank tells the others its arguments and whether its own checks passed, so that a bad argument
 * or a disagreement on any rank makes every rank fail, nothing hanging:
 *   - a rank whose own checks fail (NULL pointer, unknown op, a mode that does not compute the
 *     op, ...) returns that status and message;
 *   - every other rank returns COOPREDUCE_ERROR_OTHER_RANK, whose message
 *     (coopreduce_last_error) names the first rank that failed, its status and its message;
 *   - ranks that disagree (op, dtype, mode, narrowing, method; the count of an all-reduce) all
 *     return COOPREDUCE_ERROR_INVALID_ARGUMENT naming the first disagreement.
 * MPI or NCCL failures give COOPREDUCE_ERROR_COMMUNICATION. A failure of a rank's own device
 * after that exchange (a CUDA error, memory) is reported by that rank; in a sharded reduction
 * the others return COOPREDUCE_ERROR_OTHER_RANK (or, for a small array gathered whole, their
 * own results, which do not depend on that rank's device), in the all-reduce their results are
 * undefined.
 * Messages are recorded on the handle (coopreduce_last_error(handle)); calls without a usable
 * handle record them for the calling thread (coopreduce_last_error(NULL)).
 *
 * Streams: with a GPU handle both calls enqueue their work on `stream` (a cudaStream_t) after
 * the earlier work on it, and write their result when the stream reaches it, as
 * coopreduce_reduce and ncclAllReduce do: read it after the stream (cudaStreamSynchronize, or
 * work later on it). Both wait for their exchanges of arguments and shard boundaries, so a bad
 * argument on any rank is reported by the call itself (unless the communicator defers errors:
 * see coopreduce_comm_config). The communicator's buffers are reused by its next call: order the
 * calls on one communicator (one stream, or synchronised). An all-reduce of at most 16 KB per
 * rank travels whole in its first exchange (one NCCL launch). A sharded reduction of at most
 * 1 MiB in all (the whole array's bytes, both arrays' for DOT) is gathered whole to every rank
 * and each rank makes the 1-D call on it: over NCCL its shards travel in the first exchange
 * where each is at most 16 KB (one array), else in a second exchange (one wait either way); over
 * MPI where every rank's handle is a CPU's. Larger ones exchange the canonical tree's values at
 * the shards' edges. Over MPI the exchanges are synchronous.
 * Over NCCL, the calls whose data travels in the first exchange (the all-reduce of at most 16 KB
 * a rank; the sharded reduction whose shards are each at most 16 KB) enqueue all their work
 * before they wait, and wait for the ranks' arguments alone, not for the stream: the kernel
 * that writes the result first checks every rank's arguments on the device, as the host then
 * does, and writes nothing where a check fails. (A sharded SUM, MEAN, SUMSQ or NORM2 of a float
 * type in DETERMINISTIC mode is then reduced as one segment whose length the device reads:
 * coopreduce_reduce_segments' bits, the 1-D call's.)
 *
 * NCCL settings: the calls use ncclAllGather and grouped ncclSend / ncclRecv (never
 * ncclAllReduce), so their bits do not depend on NCCL_ALGO or NCCL_PROTO; but a setting that
 * leaves ncclAllGather no algorithm (a bare NCCL_ALGO=Tree) makes them fail with
 * COOPREDUCE_ERROR_COMMUNICATION. Pin the all-reduce alone with NCCL_ALGO=allreduce:tree.
 */
#ifndef COOPREDUCE_DIST_H
#define COOPREDUCE_DIST_H

#include "coopreduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Communication backends. The numeric values are pinned. */
typedef enum {
    COOPREDUCE_BACKEND_MPI = 0,
    COOPREDUCE_BACKEND_NCCL = 1,
    COOPREDUCE_BACKEND_COUNT = 2 /* the number of backends; not a backend */
} coopreduce_backend;

/* Opaque: a wrapped communicator and the buffers its calls keep. */
typedef struct coopreduce_comm coopreduce_comm;

/* The backends this library was built with: bit (1 << COOPREDUCE_BACKEND_MPI) for MPI,
 * (1 << COOPREDUCE_BACKEND_NCCL) for NCCL. */
unsigned int coopreduce_dist_backends(void);

/* "mpi", "nccl", or NULL for a value that is not a backend. */
const char *coopreduce_backend_name(coopreduce_backend backend);

/* The communicator's backend, rank and size (number of ranks). Fail with
 * COOPREDUCE_ERROR_INVALID_ARGUMENT for a NULL argument. */
coopreduce_status coopreduce_comm_info(const coopreduce_comm *comm, coopreduce_backend *backend,
                                       int *rank, int *size);

/* Frees the coopreduce_comm and its buffers (and the NCCL communicator it owns, if any; never a
 * communicator the caller passed in). NULL is ignored. Not collective (but an owned NCCL
 * communicator is destroyed with ncclCommDestroy, which is). */
coopreduce_status coopreduce_comm_destroy(coopreduce_comm *comm);

/* A communicator's settings (coopreduce_comm_set_config). Make one with
 * COOPREDUCE_COMM_CONFIG_INIT, which sets struct_size (so that a later version of the library
 * can tell which fields the caller knows) and every default; then change the fields wanted. */
typedef struct {
    size_t struct_size; /* sizeof(coopreduce_comm_config), set by COOPREDUCE_COMM_CONFIG_INIT */
    /* 0 (the default): every call waits for its first exchange, so that a bad argument or a
     * disagreement on any rank is the call's own status on every rank.
     * 1: deferred errors. A call that can skip that wait does: today an all-reduce of at most
     * 16 KB per rank (count x the dtype's size; count 0 too) with a GPU handle over NCCL, which
     * then returns as soon as its work is enqueued, as ncclAllReduce does. The ranks' arguments
     * travel with the data and are checked on the device; if any check fails, recv is not
     * written and the first such failure is kept for coopreduce_comm_deferred_error (which
     * reports it after the stream has passed the call). The call itself still returns its own
     * rank's failures (a NULL pointer, an unknown op, ...) at once. Other calls wait as before,
     * but exchange no error messages: a failure on another rank is reported as
     * COOPREDUCE_ERROR_OTHER_RANK naming the rank and its status (its message is on that rank).
     * Over MPI it changes nothing else (MPI's exchanges wait). */
    int deferred_errors;
} coopreduce_comm_config;

#define COOPREDUCE_COMM_CONFIG_INIT {sizeof(coopreduce_comm_config), 0}

/* The communicator's settings into *config (made by COOPREDUCE_COMM_CONFIG_INIT). Fails with
 * COOPREDUCE_ERROR_INVALID_ARGUMENT for a NULL argument or a config of another struct_size. */
coopreduce_status coopreduce_comm_get_config(const coopreduce_comm *comm,
                                             coopreduce_comm_config *config);

/* Sets the communicator's settings. Collective: every rank calls it, with the same settings,
 * between the communicator's other calls; `stream` (a cudaStream_t, or NULL) orders the small
 * exchange of settings over NCCL, which this call waits for. Fails on every rank, the settings
 * unchanged, when any rank's config is bad (COOPREDUCE_ERROR_INVALID_ARGUMENT on that rank,
 * COOPREDUCE_ERROR_OTHER_RANK on the others) or when the ranks' settings differ
 * (COOPREDUCE_ERROR_INVALID_ARGUMENT); COOPREDUCE_ERROR_COMMUNICATION when the exchange fails.
 * Messages are recorded for the calling thread (coopreduce_last_error(NULL)). */
coopreduce_status coopreduce_comm_set_config(coopreduce_comm *comm,
                                             const coopreduce_comm_config *config, void *stream);

/* The first failure of the communicator's deferred calls that the device has reached: its
 * status (COOPREDUCE_ERROR_INVALID_ARGUMENT for a disagreement or a rank in another call,
 * COOPREDUCE_ERROR_OTHER_RANK for a rank whose own checks failed), with a message recorded on
 * handle (coopreduce_last_error(handle); NULL: the calling thread) that names the call (its
 * number among the communicator's calls, from 1), the rank and what differed. The failure is
 * then cleared: COOPREDUCE_SUCCESS when none is recorded. Not collective, and it does not wait:
 * synchronise the stream of the calls first (every rank records the same failure). Calls after
 * a failed one go on as usual (each checks its own arguments). */
coopreduce_status coopreduce_comm_deferred_error(coopreduce_comm *comm, coopreduce_handle *handle);

#if defined(MPI_VERSION) || defined(COOPREDUCE_DIST_DECLARE_MPI)
/* Wraps an MPI communicator (the caller keeps it; MPI must be initialised, and must stay so
 * until coopreduce_comm_destroy). Not collective. Fails with COOPREDUCE_ERROR_COMMUNICATION when
 * MPI is not initialised,
 * COOPREDUCE_ERROR_INVALID_ARGUMENT for MPI_COMM_NULL or a NULL out. */
coopreduce_status coopreduce_comm_from_mpi(MPI_Comm mpi_comm, coopreduce_comm **out);

/* The bootstrap helper: a NCCL communicator over the ranks of mpi_comm (one process per GPU,
 * any number of nodes), made by ncclCommInitRank with a unique id that rank 0 creates and
 * broadcasts over MPI, after making `device` the calling thread's current CUDA device (pass the
 * ordinal of the GPU handle this rank will use; -1 keeps the current device). The
 * coopreduce_comm owns the NCCL communicator (coopreduce_comm_destroy destroys it); the MPI
 * communicator is only used here. Collective over mpi_comm. Fails with
 * COOPREDUCE_ERROR_COMMUNICATION when MPI or NCCL fail (every rank fails then: the ranks agree
 * on the outcome over MPI). In a library built with MPI and NCCL. */
coopreduce_status coopreduce_comm_init_nccl_from_mpi(MPI_Comm mpi_comm, int device,
                                                     coopreduce_comm **out);
#endif

#if defined(NCCL_MAJOR) || defined(COOPREDUCE_DIST_DECLARE_NCCL)
/* Wraps a NCCL communicator (the caller keeps it, and must keep it alive). Not collective.
 * In a library built with NCCL. Fails with COOPREDUCE_ERROR_COMMUNICATION when NCCL cannot tell
 * its rank, size and GPU,
 * COOPREDUCE_ERROR_INVALID_ARGUMENT for a NULL argument. */
coopreduce_status coopreduce_comm_from_nccl(ncclComm_t nccl_comm, coopreduce_comm **out);

/* The NCCL communicator of a NCCL coopreduce_comm (wrapped or owned), for the caller's own NCCL
 * calls. Fails with COOPREDUCE_ERROR_INVALID_ARGUMENT for an MPI one. */
coopreduce_status coopreduce_comm_nccl(const coopreduce_comm *comm, ncclComm_t *out);
#endif

/* The sharded reduction. The global array is the concatenation, in rank order, of every rank's
 * x_local[0 .. n_local) (and, for DOT, y_local's); n_local may differ between ranks and may be 0.
 * Every rank receives in *result the bits of coopreduce_reduce(op, x, y, result, N, dtype,
 * handle, stream) of the whole array (N the sum of the n_local): every operation, dtype and
 * mode, the handle's settings (mode, narrowing; the canonical method only) as in the 1-D call,
 * with its result type and its rules for NaN, signed zeros and empty arrays (ARGMIN and ARGMAX
 * give the global index). The ranks' handles must have the same mode, narrowing and method.
 * What a rank sends is its shard's own result, its exact accumulator, or, for the canonical-order
 * operations, the values of the canonical tree at its shard's edges: fewer than 2 C per level (C:
 * 4096 elements, 2048 for float64), never the data.
 * x_local, y_local and result: memory of the handle's device (as coopreduce_reduce). With a GPU
 * handle the result is written in stream order (see "Streams"). Fails as coopreduce_reduce does (COOPREDUCE_ERROR_EMPTY
 * when every shard is empty for MIN, MAX, ABSMAX, ARGMIN, ARGMAX; COOPREDUCE_ERROR_OVERFLOW for
 * a 128-bit integer sum outside the input type on a CPU handle, every rank's result written), and
 * as "Collective calls" says; COOPREDUCE_ERROR_WRONG_DEVICE for a CPU handle on a NCCL
 * communicator, COOPREDUCE_ERROR_NOT_SUPPORTED for a handle with a tutorial method. */
coopreduce_status coopreduce_reduce_sharded(coopreduce_op op, const void *x_local,
                                            const void *y_local, void *result, uint64_t n_local,
                                            coopreduce_dtype dtype, coopreduce_handle *handle,
                                            coopreduce_comm *comm, void *stream);

/* The deterministic all-reduce, shaped like ncclAllReduce: recv[i] on every rank is the
 * reduction `op` of the R ranks' send[i], in rank order: the bits of
 * coopreduce_reduce_axis(op, stacked, NULL, recv, 1, R, count, dtype, handle, stream) on the
 * stacked (R x count) array (rank r's send as row r), whatever the count, the communicator's size
 * or the backend's algorithms. So SUM is canonical order v1 over the R values (in EXACT mode the
 * correctly rounded sum), MEAN divides by R, ARGMIN and ARGMAX give the rank holding the first
 * minimum (maximum). recv holds count elements of the operation's result type
 * (coopreduce_op_result_size: e.g. float32 for a float16 SUM, int64 for an int32 SUM, uint64 for
 * ARGMIN); send count elements of dtype. send and recv must not overlap. DOT is refused (it
 * reduces two arrays): COOPREDUCE_ERROR_INVALID_ARGUMENT.
 * Data moved: about 2 (R-1)/R of the data per rank, as a ring all-reduce: a reduce-scatter (an
 * all-to-all of R slices), the reduction of each rank's slice on its device, an all-gather.
 * Memory: as coopreduce_reduce_sharded. Streams: see the file's comment. Fails as
 * coopreduce_reduce_axis does and as "Collective calls" says (the counts must agree). */
coopreduce_status coopreduce_allreduce(const void *send, void *recv, uint64_t count,
                                       coopreduce_dtype dtype, coopreduce_op op,
                                       coopreduce_handle *handle, coopreduce_comm *comm,
                                       void *stream);

#ifdef __cplusplus
}
#endif

#endif /* COOPREDUCE_DIST_H */
