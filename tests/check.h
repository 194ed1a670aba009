/* check.h — the checks of the coopreduce tests (check.c, in the library coopreduce_testutil).
 *
 *   CHECK(cond, fmt, ...)   records one check; on failure prints "file:line: FAIL: cond: message"
 *                           (at most CHECK_MAX_PRINTED failures are printed; all are counted).
 *                           Evaluates to 1 when cond holds, 0 otherwise.
 *   check_summary("name")   prints "name: N passed, M failed" on its own line and returns the
 *                           process exit code: 0 only if M == 0 and N > 0 (a run that checked
 *                           nothing fails).
 *   check_failed_count()    the failures so far.
 *
 * One set of counters per program, whatever the number of its source files. */
#ifndef COOPREDUCE_TESTS_CHECK_H
#define COOPREDUCE_TESTS_CHECK_H

#define CHECK_MAX_PRINTED 200

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
int check_record_(int ok, const char *file, int line, const char *expr, const char *fmt, ...);

/* The first variadic argument is the printf format of the failure message. */
#define CHECK(cond, ...) check_record_(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)

unsigned long long check_failed_count(void);
unsigned long long check_passed_count(void);
int check_summary(const char *name);

#endif /* COOPREDUCE_TESTS_CHECK_H */
