/* bench.h — `coopreduce bench`: the benchmark (see docs/PERF.md). */
#ifndef COOPREDUCE_CLI_BENCH_H
#define COOPREDUCE_CLI_BENCH_H
/* argv[0] is "bench". Returns the process exit code. */
int cli_bench_main(int argc, char **argv);
#endif
