/* mpi.c — the MPI transport (seam.h) and coopreduce_comm_from_mpi. Host memory only: GPU
 * handles' data is staged through the host by the algorithms. MPI's error handler is the
 * communicator's (by default MPI aborts on an error); a returned error becomes
 * COOPREDUCE_ERROR_COMMUNICATION. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dist/comm.h"

static int mpi_error(int rc, const char *what, char *err)
{
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, s, &len);
    snprintf(err, CR_DIST_ERR, "%s: %s", what, s);
    return rc;
}

static int too_large(size_t bytes, char *err)
{
    if (bytes <= (size_t)INT_MAX) return 0;
    snprintf(err, CR_DIST_ERR, "%zu bytes per rank is more than one MPI call moves (2^31 - 1)",
             bytes);
    return 1;
}

static int mpi_allgather(void *ctx, const void *send, void *recv, size_t bytes, void *stream,
                         char *err)
{
    (void)stream;
    const struct coopreduce_comm *c = ctx;
    if (too_large(bytes, err)) return -1;
    /* (in place where send is this rank's block of recv: MPI's buffers may not overlap) */
    const int in_place = (const char *)send == (const char *)recv + (size_t)c->t.rank * bytes;
    const int rc = MPI_Allgather(in_place ? MPI_IN_PLACE : send, (int)bytes, MPI_BYTE, recv,
                                 (int)bytes, MPI_BYTE, c->mpi);
    return rc == MPI_SUCCESS ? 0 : mpi_error(rc, "MPI_Allgather", err);
}

static int mpi_alltoall(void *ctx, const void *send, void *recv, size_t bytes, int self,
                        void *stream, char *err)
{
    (void)stream, (void)self; /* (MPI_Alltoall copies this rank's own block too) */
    const struct coopreduce_comm *c = ctx;
    if (too_large(bytes, err)) return -1;
    const int rc = MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, c->mpi);
    return rc == MPI_SUCCESS ? 0 : mpi_error(rc, "MPI_Alltoall", err);
}

static int mpi_allgatherv(void *ctx, const void *send, void *recv, const size_t *bytes,
                          const size_t *displ, void *stream, char *err)
{
    (void)stream;
    const struct coopreduce_comm *c = ctx;
    const int R = c->t.size;
    int *cnt = malloc((size_t)R * 2 * sizeof *cnt);
    if (!cnt) {
        snprintf(err, CR_DIST_ERR, "cannot allocate %d counts", R);
        return -1;
    }
    for (int r = 0; r < R; r++) {
        if (too_large(bytes[r], err) || too_large(displ[r], err)) {
            free(cnt);
            return -1;
        }
        cnt[r] = (int)bytes[r];
        cnt[R + r] = (int)displ[r];
    }
    const int rc = MPI_Allgatherv(send, cnt[c->t.rank], MPI_BYTE, recv, cnt, cnt + R, MPI_BYTE,
                                  c->mpi);
    free(cnt);
    return rc == MPI_SUCCESS ? 0 : mpi_error(rc, "MPI_Allgatherv", err);
}

CR_DIST_API coopreduce_status coopreduce_comm_from_mpi(MPI_Comm mpi_comm, coopreduce_comm **out)
{
    if (!out)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            "coopreduce_comm_from_mpi: out is NULL");
    *out = NULL;
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_COMMUNICATION,
                            "MPI is not initialised (call MPI_Init first)");
    if (mpi_comm == MPI_COMM_NULL)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            "coopreduce_comm_from_mpi: MPI_COMM_NULL");
    int rank = 0, size = 0;
    if (MPI_Comm_rank(mpi_comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(mpi_comm, &size) != MPI_SUCCESS)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_COMMUNICATION,
                            "MPI cannot tell this rank's rank and size");
    coopreduce_comm *c = calloc(1, sizeof *c);
    if (!c) return cr_dist_fail(NULL, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate a comm");
    c->backend = COOPREDUCE_BACKEND_MPI;
    c->mpi = mpi_comm;
    c->t.ctx = c;
    c->t.rank = rank;
    c->t.size = size;
    c->t.name = "MPI";
    c->t.device_data = 0;
    c->t.gpu_only = 0;
    c->t.allgather_host = mpi_allgather;
    c->t.alltoall = mpi_alltoall;
    c->t.allgather = mpi_allgather;
    c->t.allgatherv = mpi_allgatherv;
    *out = c;
    return COOPREDUCE_SUCCESS;
}
