/* messages.h — how every command reports: errors on stderr, the exit status, stdout's fate.
 *
 * Results go to stdout; every error is one line on stderr starting "coopreduce: ", with exit
 * status 2 for usage errors and 1 for everything else. */
#ifndef COOPREDUCE_CLI_MESSAGES_H
#define COOPREDUCE_CLI_MESSAGES_H

#include "coopreduce.h"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

/* Room for a one-line message from a helper (err, errlen arguments). */
#define ERRLEN 1024

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* "coopreduce: MESSAGE\n" on stderr, newlines in the message turned into spaces. */
void cli_error(const char *fmt, ...) CLI_PRINTF(1, 2);

/* cli_error, then EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) CLI_PRINTF(1, 2);

/* The library's detailed message for a failed call, or the status name when it left none. */
const char *cli_library_message(const coopreduce_handle *h, coopreduce_status st);

/* Flushes stdout: a full disk or a closed pipe must not exit 0. EXIT_OK or EXIT_ERROR. */
int cli_finish_stdout(void);

#endif
