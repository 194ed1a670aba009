/* status.h — failing with a message: the library's one way to report an error.
 *
 * Every failing internal call records a one-line message on the handle (or, without a usable
 * handle, on the calling thread) and returns the status; coopreduce_last_error() reads it back.
 * The library never prints and never exits. */
#ifndef COOPREDUCE_STATUS_H
#define COOPREDUCE_STATUS_H

#include "coopreduce.h"

struct coopreduce_handle;

/* Records a formatted message on h (or the thread, for h == NULL) and returns s. */
coopreduce_status cr_fail(struct coopreduce_handle *h, coopreduce_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The message of the last failure recorded without a handle on this thread. */
const char *cr_thread_error(void);

#endif
