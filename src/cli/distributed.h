/* distributed.h — `coopreduce sum --distributed mpi|nccl` and `coopreduce bench --distributed`
 * (distributed.c, bench_dist.c): the CLI's runs under mpirun, each rank one process. Without MPI
 * in the build they fail with a message saying so. */
#ifndef COOPREDUCE_CLI_DISTRIBUTED_H
#define COOPREDUCE_CLI_DISTRIBUTED_H

#include "sum.h"

/* "mpi" or "nccl" into *backend (1, 2); 0 or -1. */
int cli_parse_distributed(const char *text, int *backend);

/* The sum command with o->distributed set: each rank generates its shard of the --gen stream
 * (--split, or an even split), the sharded reduction, rank 0 prints. Exit status on every rank. */
int sum_distributed(const sum_options *o);

/* bench --distributed BACKEND [--n N] [--device cpu|gpu] [--repeat R] [--json]. */
int bench_distributed(int argc, char **argv);

#endif
