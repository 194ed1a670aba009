/* messages.c — one-line errors and a checked stdout (messages.h). */
#include "messages.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

CLI_PRINTF(1, 0) static void vreport(const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* One line, whatever a library or file name brought in. */
    for (char *c = msg; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    fprintf(stderr, "coopreduce: %s\n", msg);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    return EXIT_USAGE;
}

const char *cli_library_message(const coopreduce_handle *h, coopreduce_status st)
{
    const char *msg = coopreduce_last_error(h);
    return (msg != NULL && msg[0] != '\0') ? msg : coopreduce_status_string(st);
}

int cli_finish_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("cannot write the output: %s", strerror(errno));
        return EXIT_ERROR;
    }
    return EXIT_OK;
}
