/* commands.h — the commands main() dispatches to. Each takes its own argv (argv[0] is the
 * command's name) and returns the process's exit status. */
#ifndef COOPREDUCE_CLI_COMMANDS_H
#define COOPREDUCE_CLI_COMMANDS_H

int cmd_sum(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif
