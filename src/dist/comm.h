/* comm.h — libcoopreduce_dist's communicator (coopreduce_dist.h): a transport (seam.h) over MPI
 * (mpi.c) or NCCL (nccl.c), and what its calls keep. Built only where CMake finds MPI or NCCL:
 * COOPREDUCE_DIST_HAVE_MPI, COOPREDUCE_DIST_HAVE_NCCL say which. */
#ifndef COOPREDUCE_DIST_COMM_H
#define COOPREDUCE_DIST_COMM_H

#include <stddef.h>
#include "coopreduce.h"
#include "dist/seam.h"

#ifdef COOPREDUCE_DIST_HAVE_MPI
#include <mpi.h>
#endif
#ifdef COOPREDUCE_DIST_HAVE_NCCL
#include <nccl.h>
#endif
#include "coopreduce_dist.h"

#define CR_DIST_API __attribute__((visibility("default")))

struct coopreduce_comm {
    coopreduce_backend backend;
    cr_dist_transport t;
    cr_dist_cache *cache; /* the algorithms' buffers (libcoopreduce's) */
#ifdef COOPREDUCE_DIST_HAVE_MPI
    MPI_Comm mpi;
#endif
#ifdef COOPREDUCE_DIST_HAVE_NCCL
    ncclComm_t nccl;
    int owns_nccl;
    int device;  /* the NCCL communicator's GPU */
    void *stage; /* device memory: host collectives staged through it */
    void *hstage; /*   and pinned host memory beside it, as large */
    size_t stage_bytes;
#endif
};

/* nccl.c: frees what a NCCL communicator keeps (its staging, an owned NCCL communicator). */
coopreduce_status cr_nccl_release(struct coopreduce_comm *c);

#endif
