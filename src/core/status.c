/* status.c — status names and the messages of failed calls (status.h). */
#include <stdarg.h>
#include <stdio.h>
#include "core/handle.h"
#include "core/status.h"

/* Messages of failed calls made without a handle (create, props) live per thread. */
static _Thread_local char thread_err[512];

coopreduce_status cr_fail(struct coopreduce_handle *h, coopreduce_status s, const char *fmt, ...)
{
    char *buf = h ? h->err : thread_err;
    size_t len = h ? sizeof h->err : sizeof thread_err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return s;
}

const char *cr_thread_error(void) { return thread_err; }
