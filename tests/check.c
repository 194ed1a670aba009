/* check.c — the counters and messages of check.h. */
#include "check.h"

#include <stdarg.h>
#include <stdio.h>

static unsigned long long passed, failed;

int check_record_(int ok, const char *file, int line, const char *expr, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return 1;
    }
    failed++;
    if (failed <= CHECK_MAX_PRINTED) {
        va_list ap;
        fprintf(stdout, "%s:%d: FAIL: %s: ", file, line, expr);
        va_start(ap, fmt);
        vfprintf(stdout, fmt, ap);
        va_end(ap);
        fputc('\n', stdout);
        fflush(stdout);
    } else if (failed == CHECK_MAX_PRINTED + 1) {
        fprintf(stdout, "(further failures are counted but not printed)\n");
        fflush(stdout);
    }
    return 0;
}

unsigned long long check_failed_count(void) { return failed; }
unsigned long long check_passed_count(void) { return passed; }

int check_summary(const char *name)
{
    fprintf(stdout, "%s: %llu passed, %llu failed\n", name, passed, failed);
    fflush(stdout);
    return (failed == 0 && passed > 0) ? 0 : 1;
}
