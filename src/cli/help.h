/* help.h — the help texts. */
#ifndef COOPREDUCE_CLI_HELP_H
#define COOPREDUCE_CLI_HELP_H

/* Prints the help of `command` ("sum", "gen", "info", "bench"; NULL or "help": the overview) on
 * stdout. Returns the exit status (EXIT_USAGE for an unknown command). */
int cli_print_help(const char *command);

#endif
