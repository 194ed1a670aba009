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

CR_DIST_API coopreduce_status coopreduce_comm_get_config(const coopreduce_comm *comm,
                                                         coopreduce_comm_config *config)
{
    if (!comm || !config || config->struct_size != sizeof *config)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            "coopreduce_comm_get_config: NULL argument, or a config not made by "
                            "COOPREDUCE_COMM_CONFIG_INIT");
    config->deferred_errors = comm->t.deferred_errors;
    return COOPREDUCE_SUCCESS;
}

CR_DIST_API coopreduce_status coopreduce_comm_set_config(coopreduce_comm *comm,
                                                         const coopreduce_comm_config *config,
                                                         void *stream)
{
    /* Every rank takes part in the exchange whatever its own argument, so that none waits. */
    int32_t mine[2] = {0, 0}; /* valid, setting */
    const char *why = NULL;
    if (!comm) {
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            "coopreduce_comm_set_config: comm is NULL (the call is collective: "
                            "the other ranks wait for this one)");
    } else if (!config || config->struct_size != sizeof *config) {
        why = "config is NULL, or not made by COOPREDUCE_COMM_CONFIG_INIT";
    } else if (config->deferred_errors != 0 && config->deferred_errors != 1) {
        why = "deferred_errors must be 0 or 1";
    } else {
        mine[0] = 1;
        mine[1] = config->deferred_errors;
    }
    const int R = comm->t.size;
    int32_t *all = malloc((size_t)R * sizeof mine);
    char err[CR_DIST_ERR] = "";
    if (!all)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_OUT_OF_MEMORY,
                            "coopreduce_comm_set_config: cannot allocate %d ranks' settings", R);
    if (comm->t.allgather_host(comm->t.ctx, mine, all, sizeof mine, stream, err)) {
        free(all);
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_COMMUNICATION,
                            "coopreduce_comm_set_config: exchanging the settings over %s failed: %s",
                            comm->t.name, err);
    }
    coopreduce_status s = COOPREDUCE_SUCCESS;
    for (int r = 0; r < R && !s; r++) {
        if (!all[2 * r])
            s = r == comm->t.rank
                    ? cr_dist_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                                   "coopreduce_comm_set_config: %s", why)
                    : cr_dist_fail(NULL, COOPREDUCE_ERROR_OTHER_RANK,
                                   "coopreduce_comm_set_config: rank %d passed a bad config", r);
        else if (all[2 * r + 1] != all[1])
            s = cr_dist_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                             "coopreduce_comm_set_config: the ranks disagree on deferred_errors: "
                             "rank 0 has %d, rank %d has %d (every rank must set the same)",
                             all[1], r, all[2 * r + 1]);
    }
    if (!s) comm->t.deferred_errors = all[1];
    free(all);
    return s;
}

CR_DIST_API coopreduce_status coopreduce_comm_deferred_error(coopreduce_comm *comm,
                                                             coopreduce_handle *handle)
{
    if (!comm)
        return cr_dist_fail(handle, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            "coopreduce_comm_deferred_error: comm is NULL");
    return cr_dist_deferred_error(comm->cache, handle);
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
