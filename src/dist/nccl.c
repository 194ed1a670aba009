/* nccl.c — the NCCL transport (seam.h), coopreduce_comm_from_nccl, and the bootstrap helper
 * coopreduce_comm_init_nccl_from_mpi (with MPI). Data collectives take device memory and are
 * enqueued on the caller's stream; the small host collectives of the protocol are staged through
 * a device buffer of the communicator's GPU and wait for the stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "dist/comm.h"

static int nccl_error(ncclResult_t r, const struct coopreduce_comm *c, const char *what, char *err)
{
    const char *last = c && c->nccl ? ncclGetLastError(c->nccl) : NULL;
    snprintf(err, CR_DIST_ERR, "%s: %s%s%s", what, ncclGetErrorString(r),
             last && last[0] ? ": " : "", last ? last : "");
    return -1;
}

static int cuda_error(cudaError_t e, const char *what, char *err)
{
    snprintf(err, CR_DIST_ERR, "%s: %s", what, cudaGetErrorString(e));
    return -1;
}

/* Device and pinned host staging of `bytes` each (pinned: the copies are asynchronous and
 * short, which is most of a small exchange's time). */
static int stage_ensure(struct coopreduce_comm *c, size_t bytes, cudaStream_t st, char *err)
{
    if (c->stage && c->stage_bytes >= bytes) return 0;
    void *p = NULL, *hp = NULL;
    const size_t want = bytes < 65536 ? 65536 : bytes + bytes / 4;
    cudaError_t e = cudaMalloc(&p, want);
    /* defined bytes in the lead slots' unused part (the extra columns a small all-reduce
     * computes and drops), zeroed in the caller's stream order */
    if (e == cudaSuccess) e = cudaMemsetAsync(p, 0, want, st);
    if (e != cudaSuccess) {
        if (p) cudaFree(p);
        return cuda_error(e, "allocating NCCL staging memory", err);
    }
    e = cudaMallocHost(&hp, want);
    if (e != cudaSuccess) {
        cudaFree(p);
        return cuda_error(e, "allocating pinned staging memory", err);
    }
    if (c->stage) cudaFree(c->stage);
    if (c->hstage) cudaFreeHost(c->hstage);
    c->stage = p;
    c->hstage = hp;
    c->stage_bytes = want;
    return 0;
}

/* The gather of device memory: ncclAllGather; with two ranks and large blocks, a grouped send /
 * recv with the peer instead (this rank's block copied into recv where it is not there
 * already): on two H100s the 128 MB gather of a 256 MB all-reduce took 526 us in place through
 * ncclAllGather (552 out of place) and 468-478 us as send / recv. Small gathers keep the
 * collective's latency. The host's gather and the device's take the same path: ranks may take
 * either within one collective (dist/sharded.c). */
enum { P2P_GATHER_MIN = 1 << 20 };
static int gather(struct coopreduce_comm *c, const void *send, void *recv, size_t bytes,
                  cudaStream_t st, char *err)
{
    const int me = c->t.rank;
    if (c->t.size != 2 || bytes < P2P_GATHER_MIN) {
        const ncclResult_t nr = ncclAllGather(send, recv, bytes, ncclUint8, c->nccl, st);
        return nr == ncclSuccess ? 0 : nccl_error(nr, c, "ncclAllGather", err);
    }
    char *rb = recv, *own = rb + (size_t)me * bytes;
    if ((const char *)send != own) {
        const cudaError_t e = cudaMemcpyAsync(own, send, bytes, cudaMemcpyDeviceToDevice, st);
        if (e != cudaSuccess) return cuda_error(e, "copying this rank's block", err);
    }
    const int peer = 1 - me;
    ncclResult_t nr = ncclGroupStart();
    if (nr == ncclSuccess) nr = ncclSend(own, bytes, ncclUint8, peer, c->nccl, st);
    if (nr == ncclSuccess) nr = ncclRecv(rb + (size_t)peer * bytes, bytes, ncclUint8, peer, c->nccl, st);
    const ncclResult_t ne = ncclGroupEnd();
    if (nr == ncclSuccess) nr = ne;
    return nr == ncclSuccess ? 0 : nccl_error(nr, c, "grouped ncclSend / ncclRecv", err);
}

static int nccl_allgather(void *ctx, const void *send, void *recv, size_t bytes, void *stream,
                          char *err)
{
    return gather(ctx, send, recv, bytes, (cudaStream_t)stream, err);
}

static int nccl_allgather_host(void *ctx, const void *send, void *recv, size_t bytes, void *stream,
                               char *err)
{
    struct coopreduce_comm *c = ctx;
    const cudaStream_t st = (cudaStream_t)stream;
    const size_t R = (size_t)c->t.size;
    cudaError_t e = cudaSetDevice(c->device);
    if (e != cudaSuccess) return cuda_error(e, "selecting the NCCL communicator's GPU", err);
    if (stage_ensure(c, bytes * (R + 1), st, err)) return -1;
    char *s = c->stage, *r = s + bytes, *hs = c->hstage, *hr = hs + bytes;
    memcpy(hs, send, bytes);
    e = cudaMemcpyAsync(s, hs, bytes, cudaMemcpyHostToDevice, st);
    if (e != cudaSuccess) return cuda_error(e, "staging", err);
    if (gather(c, s, r, bytes, st, err)) return -1;
    e = cudaMemcpyAsync(hr, r, bytes * R, cudaMemcpyDeviceToHost, st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) return cuda_error(e, "waiting for ncclAllGather", err);
    memcpy(recv, hr, bytes * R);
    return 0;
}

/* The meta and data packed by one kernel into this rank's send slot of the device staging (the
 * meta as the kernel's argument: nothing of the host's is read after the call returns, which a
 * call that does not wait needs), the slots gathered by one ncclAllGather; one wait, for the
 * metas, where meta_all asks for them. Staging: [send slot][R slots]. */
static int nccl_allgather_lead(void *ctx, const void *meta, const void *data, size_t data_bytes,
                               void **slots_dev, void *meta_all, void *stream, char *err)
{
    struct coopreduce_comm *c = ctx;
    const cudaStream_t st = (cudaStream_t)stream;
    const size_t R = (size_t)c->t.size, M = CR_DIST_META_BYTES, S = CR_DIST_SLOT_BYTES;
    cudaError_t e = cudaSetDevice(c->device);
    if (e != cudaSuccess) return cuda_error(e, "selecting the NCCL communicator's GPU", err);
    if (stage_ensure(c, S * (R + 1), st, err)) return -1;
    char *slot = c->stage, *all = slot + S;
    if (cr_dist_pack_lead(c->device, slot, meta, data, data_bytes, stream, err)) return -1;
    const ncclResult_t nr = ncclAllGather(slot, all, S, ncclUint8, c->nccl, st);
    if (nr != ncclSuccess) return nccl_error(nr, c, "ncclAllGather (the first exchange)", err);
    *slots_dev = all;
    if (!meta_all) return 0; /* checked on the device (dist/meta.h: cr_gate) */
    e = cudaMemcpy2DAsync(c->hstage, M, all, S, M, R, cudaMemcpyDeviceToHost, st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) return cuda_error(e, "waiting for ncclAllGather", err);
    memcpy(meta_all, c->hstage, M * R);
    return 0;
}

/* Grouped send/recv of this rank's part to every peer and of every peer's to its place; this
 * rank's own by a copy. */
static int nccl_allgatherv(void *ctx, const void *send, void *recv, const size_t *bytes,
                           const size_t *displ, void *stream, char *err)
{
    struct coopreduce_comm *c = ctx;
    const cudaStream_t st = (cudaStream_t)stream;
    const int R = c->t.size, me = c->t.rank;
    char *rb = recv;
    if (bytes[me]) {
        const cudaError_t e =
            cudaMemcpyAsync(rb + displ[me], send, bytes[me], cudaMemcpyDeviceToDevice, st);
        if (e != cudaSuccess) return cuda_error(e, "copying this rank's part", err);
    }
    if (R == 1) return 0;
    ncclResult_t nr = ncclGroupStart();
    for (int q = 0; q < R && nr == ncclSuccess; q++) {
        if (q == me) continue;
        /* (sent from its copy in recv, made above in stream order: NCCL then sees one buffer
         * of the communicator's, not the caller's, whatever its size) */
        if (bytes[me]) nr = ncclSend(rb + displ[me], bytes[me], ncclUint8, q, c->nccl, st);
        if (nr == ncclSuccess && bytes[q])
            nr = ncclRecv(rb + displ[q], bytes[q], ncclUint8, q, c->nccl, st);
    }
    const ncclResult_t ne = ncclGroupEnd();
    if (nr == ncclSuccess) nr = ne;
    return nr == ncclSuccess ? 0 : nccl_error(nr, c, "grouped ncclSend / ncclRecv", err);
}

/* Grouped send/recv with every peer; this rank's own block by a copy, where asked for. (NCCL's
 * own ncclAlltoAll measured no faster: 0.94-0.99x the grouped calls for 256 MB on H100s.) */
static int nccl_alltoall(void *ctx, const void *send, void *recv, size_t bytes, int self,
                         void *stream, char *err)
{
    struct coopreduce_comm *c = ctx;
    const cudaStream_t st = (cudaStream_t)stream;
    const int R = c->t.size, me = c->t.rank;
    const char *sb = send;
    char *rb = recv;
    if (self) {
        const cudaError_t e = cudaMemcpyAsync(rb + (size_t)me * bytes, sb + (size_t)me * bytes,
                                              bytes, cudaMemcpyDeviceToDevice, st);
        if (e != cudaSuccess) return cuda_error(e, "copying this rank's slice", err);
    }
    if (R == 1) return 0;
    ncclResult_t nr = ncclGroupStart();
    for (int q = 0; q < R && nr == ncclSuccess; q++) {
        if (q == me) continue;
        nr = ncclSend(sb + (size_t)q * bytes, bytes, ncclUint8, q, c->nccl, st);
        if (nr == ncclSuccess) nr = ncclRecv(rb + (size_t)q * bytes, bytes, ncclUint8, q, c->nccl, st);
    }
    const ncclResult_t ne = ncclGroupEnd();
    if (nr == ncclSuccess) nr = ne;
    return nr == ncclSuccess ? 0 : nccl_error(nr, c, "grouped ncclSend / ncclRecv", err);
}

coopreduce_status cr_nccl_release(struct coopreduce_comm *c)
{
    coopreduce_status s = COOPREDUCE_SUCCESS;
    if (c->stage) {
        cudaSetDevice(c->device);
        cudaFree(c->stage);
        cudaFreeHost(c->hstage);
        c->stage = NULL;
        c->hstage = NULL;
    }
    if (c->owns_nccl && c->nccl) {
        ncclResult_t r = ncclCommDestroy(c->nccl);
        if (r != ncclSuccess)
            s = cr_dist_fail(NULL, COOPREDUCE_ERROR_COMMUNICATION, "ncclCommDestroy: %s",
                             ncclGetErrorString(r));
    }
    c->nccl = NULL;
    return s;
}

static coopreduce_status wrap(ncclComm_t nc, int owns, coopreduce_comm **out)
{
    int rank = 0, size = 0, dev = 0;
    ncclResult_t r = ncclCommUserRank(nc, &rank);
    if (r == ncclSuccess) r = ncclCommCount(nc, &size);
    if (r == ncclSuccess) r = ncclCommCuDevice(nc, &dev);
    if (r != ncclSuccess)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_COMMUNICATION,
                            "NCCL cannot tell this rank's rank, size and GPU: %s",
                            ncclGetErrorString(r));
    coopreduce_comm *c = calloc(1, sizeof *c);
    if (!c) return cr_dist_fail(NULL, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate a comm");
    c->backend = COOPREDUCE_BACKEND_NCCL;
    c->nccl = nc;
    c->owns_nccl = owns;
    c->device = dev;
    c->t.ctx = c;
    c->t.rank = rank;
    c->t.size = size;
    c->t.name = "NCCL";
    c->t.device_data = 1;
    c->t.gpu_only = 1;
    c->t.allgather_host = nccl_allgather_host;
    c->t.alltoall = nccl_alltoall;
    c->t.allgather = nccl_allgather;
    c->t.allgather_lead = nccl_allgather_lead;
    c->t.allgatherv = nccl_allgatherv;
    *out = c;
    return COOPREDUCE_SUCCESS;
}

CR_DIST_API coopreduce_status coopreduce_comm_from_nccl(ncclComm_t nccl_comm, coopreduce_comm **out)
{
    if (!out || !nccl_comm)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            "coopreduce_comm_from_nccl: NULL argument");
    *out = NULL;
    return wrap(nccl_comm, 0, out);
}

CR_DIST_API coopreduce_status coopreduce_comm_nccl(const coopreduce_comm *comm, ncclComm_t *out)
{
    if (!comm || !out || comm->backend != COOPREDUCE_BACKEND_NCCL)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            "coopreduce_comm_nccl: not a NCCL communicator");
    *out = comm->nccl;
    return COOPREDUCE_SUCCESS;
}

#ifdef COOPREDUCE_DIST_HAVE_MPI
CR_DIST_API coopreduce_status coopreduce_comm_init_nccl_from_mpi(MPI_Comm mpi_comm, int device,
                                                                 coopreduce_comm **out)
{
    if (!out)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            "coopreduce_comm_init_nccl_from_mpi: out is NULL");
    *out = NULL;
    int rank = 0, size = 0;
    if (MPI_Comm_rank(mpi_comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(mpi_comm, &size) != MPI_SUCCESS)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_COMMUNICATION,
                            "MPI cannot tell this rank's rank and size");
    struct {
        int ok;
        ncclUniqueId id;
    } boot;
    memset(&boot, 0, sizeof boot);
    char why[CR_DIST_ERR] = "";
    if (rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&boot.id);
        boot.ok = r == ncclSuccess;
        if (!boot.ok) snprintf(why, sizeof why, "ncclGetUniqueId: %s", ncclGetErrorString(r));
    }
    if (MPI_Bcast(&boot, (int)sizeof boot, MPI_BYTE, 0, mpi_comm) != MPI_SUCCESS)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_COMMUNICATION, "MPI_Bcast of the NCCL id failed");
    if (!boot.ok)
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_COMMUNICATION,
                            "rank 0 could not make a NCCL unique id%s%s", why[0] ? ": " : "", why);
    int ok = 1;
    if (device >= 0) {
        cudaError_t e = cudaSetDevice(device);
        if (e != cudaSuccess) {
            ok = 0;
            snprintf(why, sizeof why, "cudaSetDevice(%d): %s", device, cudaGetErrorString(e));
        }
    }
    ncclComm_t nc = NULL;
    if (ok) {
        ncclResult_t r = ncclCommInitRank(&nc, size, boot.id, rank);
        if (r != ncclSuccess) {
            ok = 0;
            nc = NULL;
            snprintf(why, sizeof why, "ncclCommInitRank: %s", ncclGetErrorString(r));
        }
    }
    int all_ok = 0;
    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, mpi_comm) != MPI_SUCCESS) all_ok = 0;
    if (!all_ok) {
        if (nc) ncclCommDestroy(nc);
        return cr_dist_fail(NULL, COOPREDUCE_ERROR_COMMUNICATION,
                            "making the NCCL communicator failed%s%s",
                            ok ? " on another rank" : ": ", ok ? "" : why);
    }
    coopreduce_status s = wrap(nc, 1, out);
    if (s) ncclCommDestroy(nc);
    return s;
}
#endif
