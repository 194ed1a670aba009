/* test_dist_mpi.c — sharded reductions and the all-reduce over MPI, ranks as processes with CPU
 * handles (tests/CMakeLists.txt runs it under mpirun with 1, 2, 3 and 4 ranks): every op x dtype
 * x mode against the 1-D call on the whole array, equal and uneven splits with empty shards, the
 * all-reduce against reduce_axis of the stacked arrays, and the errors every rank must report
 * (dist_check.c). Rank 0 prints "test_dist_mpi: N passed, M failed" for all ranks together.
 * With --gpu (a build with CUDA), each rank takes a GPU handle on GPU (rank modulo the GPUs):
 * MPI ranks sharing a GPU, its data staged through the host.
 * usage: mpirun -np R test_dist_mpi [--quick] [--deep] [--threads T] [--gpu] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coopreduce.h"
#include "coopreduce_dist.h"
#include "dist_check.h"
#ifdef COOPREDUCE_HAVE_CUDA
#include <cuda_runtime_api.h>
static void *dev_alloc(size_t b)
{
    void *p = NULL;
    if (cudaMalloc(&p, b ? b : 16) != cudaSuccess) MPI_Abort(MPI_COMM_WORLD, 3);
    return p;
}
static void dev_free(void *p) { cudaFree(p); }
static void to_dev(void *d, const void *s, size_t b) { cudaMemcpy(d, s, b, cudaMemcpyHostToDevice); }
static void to_host(void *d, const void *s, size_t b) { cudaMemcpy(d, s, b, cudaMemcpyDeviceToHost); }
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    dist_env e;
    memset(&e, 0, sizeof e);
    e.name = "mpi";
    int threads = 1, gpu = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) e.quick = 1;
        if (!strcmp(argv[i], "--deep")) e.deep = 1;
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        if (!strcmp(argv[i], "--gpu")) gpu = 1;
    }
    if (coopreduce_comm_from_mpi(MPI_COMM_WORLD, &e.comm) != COOPREDUCE_SUCCESS) {
        fprintf(stderr, "coopreduce_comm_from_mpi: %s\n", coopreduce_last_error(NULL));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    coopreduce_backend b;
    coopreduce_comm_info(e.comm, &b, &e.rank, &e.size);
    if (gpu) {
#ifdef COOPREDUCE_HAVE_CUDA
        int ngpu = 0;
        if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
            if (e.rank == 0) printf("SKIP: test_dist_mpi --gpu: no CUDA GPU on this machine\n");
            MPI_Finalize();
            return 77;
        }
        cudaSetDevice(e.rank % ngpu);
        if (coopreduce_create_gpu(&e.h, e.rank % ngpu)) {
            fprintf(stderr, "coopreduce_create_gpu: %s\n", coopreduce_last_error(NULL));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        e.gpu = 1;
        e.gpu_1d = 1;
        e.dev_alloc = dev_alloc;
        e.dev_free = dev_free;
        e.to_dev = to_dev;
        e.to_host = to_host;
        e.name = "mpi+gpu";
#else
        if (e.rank == 0) printf("SKIP: test_dist_mpi --gpu: built without CUDA\n");
        MPI_Finalize();
        return 77;
#endif
    } else if (coopreduce_create_cpu(&e.h, threads)) {
        fprintf(stderr, "coopreduce_create_cpu failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (coopreduce_create_cpu(&e.ref, threads)) {
        fprintf(stderr, "coopreduce_create_cpu failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    dist_check_errors(&e);
    dist_check_sharded(&e);
    dist_check_allreduce(&e);
    dist_check_errors(&e);
    dist_check_deferred(&e);
    unsigned long long mine[2] = {e.passed, e.failed}, all[2] = {0, 0};
    MPI_Reduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (e.rank == 0)
        printf("test_dist_mpi (%d ranks): %llu passed, %llu failed\n", e.size, all[0], all[1]);
    coopreduce_comm_destroy(e.comm);
    coopreduce_destroy(e.h);
    coopreduce_destroy(e.ref);
    int rc = all[1] == 0 && all[0] > 0 ? 0 : 1;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
