/* test_dist_mpi.c — sharded reductions and the all-reduce over MPI, ranks as processes with CPU
 * handles (tests/CMakeLists.txt runs it under mpirun with 1, 2, 3 and 4 ranks): every op x dtype
 * x mode against the 1-D call on the whole array, equal and uneven splits with empty shards, the
 * all-reduce against reduce_axis of the stacked arrays, and the errors every rank must report
 * (dist_check.c). Rank 0 prints "test_dist_mpi: N passed, M failed" for all ranks together.
 * usage: mpirun -np R test_dist_mpi [--quick] [--deep] [--threads T] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coopreduce.h"
#include "coopreduce_dist.h"
#include "dist_check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    dist_env e;
    memset(&e, 0, sizeof e);
    e.name = "mpi";
    int threads = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) e.quick = 1;
        if (!strcmp(argv[i], "--deep")) e.deep = 1;
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    }
    if (coopreduce_comm_from_mpi(MPI_COMM_WORLD, &e.comm) != COOPREDUCE_SUCCESS) {
        fprintf(stderr, "coopreduce_comm_from_mpi: %s\n", coopreduce_last_error(NULL));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    coopreduce_backend b;
    coopreduce_comm_info(e.comm, &b, &e.rank, &e.size);
    if (coopreduce_create_cpu(&e.h, threads) || coopreduce_create_cpu(&e.ref, threads)) {
        fprintf(stderr, "coopreduce_create_cpu failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    dist_check_errors(&e);
    dist_check_sharded(&e);
    dist_check_allreduce(&e);
    dist_check_errors(&e);
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
