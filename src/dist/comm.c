/* comm.c — the backend-independent part of coopreduce_dist.h: the communicator's life and the two
 * collective calls, which hand the communicator's transport to libcoopreduce's algorithms
 * (src/dist/sharded.c, allreduce.c, behind seam.h). */
#include <stdlib.h>
#include "dist/comm.h"

CR_DIST_API unsigned int coopreduce_dist_backends(void)
{
    unsigned int b = 0;
#ifdef COOPREDUCE_DIST_HAVE_MPI
    b |= 1u << COOPREDUCE_BACKEND_MPI;
#endif
#ifdef COOPREDUCE_DIST_HAVE_NCCL
    b |= 1u << COOPREDUCE_BACKEND_NCCL;
#endif
    return b;
}

CR_DIST_API const char *coopreduce_backend_name(coopreduce_backend backend)
{
    switch (backend) {
    case COOPREDUCE_BACKEND_MPI: return "mpi";
    case COOPREDUCE_BACKEND_NCCL: return "nccl";
    default: return NULL;
    }
}

CR_DIST_API coopreduce_status coopreduce_comm_info(const coopreduce_comm *comm,
                                                   coopreduce_backend *backend, int *rank,
                                                   int *size)
{
    if (!comm || !backend || !rank || !size)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            "coopreduce_comm_info: NULL argument");
    *backend = comm->backend;
    *rank = comm->t.rank;
    *size = comm->t.size;
    return COOPREDUCE_SUCCESS;
}

CR_DIST_API coopreduce_status coopreduce_comm_destroy(coopreduce_comm *comm)
{
    if (!comm) return COOPREDUCE_SUCCESS;
    coopreduce_status s = COOPREDUCE_SUCCESS;
#ifdef COOPREDUCE_DIST_HAVE_NCCL
    if (comm->backend == COOPREDUCE_BACKEND_NCCL) s = cr_nccl_release(comm);
#endif
    cr_dist_cache_free(comm->cache);
    free(comm);
    return s;
}

static coopreduce_status check_comm(coopreduce_handle *h, coopreduce_comm *comm)
{
    if (!comm)
        return cr_dist_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            "comm is NULL (the call is collective: the other ranks wait for this "
                            "one)");
    return COOPREDUCE_SUCCESS;
}

CR_DIST_API coopreduce_status coopreduce_reduce_sharded(coopreduce_op op, const void *x_local,
                                                        const void *y_local, void *result,
                                                        uint64_t n_local, coopreduce_dtype dtype,
                                                        coopreduce_handle *handle,
                                                        coopreduce_comm *comm, void *stream)
{
    coopreduce_status s = check_comm(handle, comm);
    if (s) return s;
    return cr_dist_reduce_sharded(&comm->t, &comm->cache, op, x_local, y_local, result, n_local,
                                  dtype, handle, stream);
}

CR_DIST_API coopreduce_status coopreduce_allreduce(const void *send, void *recv, uint64_t count,
                                                   coopreduce_dtype dtype, coopreduce_op op,
                                                   coopreduce_handle *handle, coopreduce_comm *comm,
                                                   void *stream)
{
    coopreduce_status s = check_comm(handle, comm);
    if (s) return s;
    return cr_dist_allreduce(&comm->t, &comm->cache, send, recv, count, dtype, op, handle, stream);
}
