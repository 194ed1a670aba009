/* main.c — the `coopreduce` command: dispatches to sum, gen, info, bench and help.
 *
 * Conventions (messages.h): results go to stdout (human text, or exactly one JSON object with
 * --json); every error is one line on stderr starting "coopreduce: ", with exit status 2 for
 * usage errors and 1 for everything else. Nothing is printed until the work has succeeded, so
 * a failure never leaves half a report behind. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "device.h"
#include "help.h"
#include "messages.h"

static int print_version(void)
{
    printf("coopreduce %s (canonical order v%d, %s CUDA)\n", coopreduce_version_string(),
           coopreduce_order_version(), CLI_BUILT_WITH_CUDA ? "with" : "without");
    return cli_finish_stdout();
}

int main(int argc, char **argv)
{
    if (argc < 2) return cli_usage_error("no command given (try 'coopreduce --help')");
    const char *command = argv[1];
    if (strcmp(command, "sum") == 0) return cmd_sum(argc - 1, argv + 1);
    if (strcmp(command, "gen") == 0) return cmd_gen(argc - 1, argv + 1);
    if (strcmp(command, "info") == 0) return cmd_info(argc - 1, argv + 1);
    if (strcmp(command, "bench") == 0) return cmd_bench(argc - 1, argv + 1);
    if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 ||
        strcmp(command, "-h") == 0)
        return cli_print_help(argc > 2 ? argv[2] : NULL);
    if (strcmp(command, "--version") == 0 || strcmp(command, "version") == 0)
        return print_version();
    return cli_usage_error("unknown command '%s' (try 'coopreduce --help')", command);
}
