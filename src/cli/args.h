/* args.h — the command line of every command: options, and the values they take.
 *
 * Options are spelled --name VALUE or --name=VALUE; "--" ends the options; "-" alone is a
 * positional argument (standard input, where a file is expected). An option given twice is a
 * usage error: no option is repeatable, so a second value never silently replaces the first.
 * Every parser here returns 0, or -1 (the caller words the usage error) unless it says it prints
 * its own. */
#ifndef COOPREDUCE_CLI_ARGS_H
#define COOPREDUCE_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "coopreduce.h"
#include "gen.h"

typedef struct {
    const char *name; /* without the leading "--" */
    int takes_value;
} cli_option;

#define CLI_MAX_OPTIONS 48

typedef struct {
    int argc;
    char **argv;
    int next;
    int options_ended;       /* after "--" */
    const cli_option *specs; /* terminated by a NULL name */
    unsigned char seen[CLI_MAX_OPTIONS];
} cli_args;

enum { CLI_ARG_END = 0, CLI_ARG_POSITIONAL = 1, CLI_ARG_OPTION = 2, CLI_ARG_ERROR = -1 };

/* argv[0] is the command's name; parsing starts at argv[1]. */
void cli_args_init(cli_args *a, int argc, char **argv, const cli_option *specs);

/* The next argument: CLI_ARG_POSITIONAL (in *value), CLI_ARG_OPTION (*spec, and *value for an
 * option that takes one), CLI_ARG_END, or CLI_ARG_ERROR after printing a usage error (unknown
 * option, missing value, a value given to a flag, an option given twice). */
int cli_args_next(cli_args *a, const cli_option **spec, const char **value);

/* 1 when --help or -h comes before any "--". */
int cli_wants_help(int argc, char **argv);

/* An element count: 1000000, 2^24, 2**24, 1<<24, 16M (binary suffixes K M G T, an optional
 * 'i' after them), 1e6. */
int cli_parse_count(const char *text, uint64_t *out);
#define CLI_COUNT_EXAMPLES "e.g. 1000000, 2^24, 1<<24, 16M"

/* A byte size: a count as above, optionally followed by 'B' (16M, 16MiB, 16MB: all 2^24). */
int cli_parse_size(const char *text, uint64_t *out);

/* A count in [lo, hi]. */
int cli_parse_int(const char *text, int lo, int hi, int *out);

/* Decimal or 0x-hexadecimal, the full 64-bit range. */
int cli_parse_seed(const char *text, uint64_t *out);

typedef enum { CLI_DEVICE_AUTO, CLI_DEVICE_CPU, CLI_DEVICE_GPU } cli_device_kind;

/* auto, cpu, gpu, gpu:K. */
int cli_parse_device(const char *text, cli_device_kind *kind, int *ordinal);

/* "canonical, block, grid, ..." as the library names the methods. */
void cli_method_names(char *out, size_t outlen);

/* "sum, min, max, ..." as the library names the operations. */
void cli_op_names(char *out, size_t outlen);

/* Comma lists, "a,b,c": each parses the whole list into list[0..*count) (at most max items,
 * at least one) and prints its own usage error naming --option and the bad item. */
int cli_parse_count_list(const char *option, const char *text, uint64_t *list, int max, int *count);
int cli_parse_int_list(const char *option, const char *text, int lo, int hi, int *list, int max,
                       int *count);
/* "all": every dtype, in the order of coopreduce_dtype. */
int cli_parse_dtype_list(const char *option, const char *text, coopreduce_dtype *list, int max,
                         int *count);
/* "all": every operation, in the order of coopreduce_op. */
int cli_parse_op_list(const char *option, const char *text, coopreduce_op *list, int max,
                      int *count);
/* "all": every mode. */
/* --data: generator kinds (gen.h), comma-separated. */
int cli_parse_data_list(const char *option, const char *text, cr_gen_kind *list, int max,
                        int *count);
int cli_parse_mode_list(const char *option, const char *text, coopreduce_mode *list, int max,
                        int *count);
/* "all": every method. */
int cli_parse_method_list(const char *option, const char *text, coopreduce_method *list, int max,
                          int *count);

#endif
