/* check.h — tiny header-only test helpers for the coopreduce tests.
 *
 *   CHECK(cond, fmt, ...)   records one check; on failure prints "file:line: FAIL: cond: message"
 *                           (at most CHECK_MAX_PRINTED failures are printed; all are counted).
 *                           Evaluates to 1 when cond holds, 0 otherwise.
 *   check_summary("name")   prints "name: N passed, M failed" on its own line and returns the
 *                           process exit code: 0 only if M == 0 and N > 0 (a run that checked
 *                           nothing fails).
 *   f32_bits / f32_from_bits / f64_bits / f64_from_bits: bit casts through memcpy.
 *
 * Header-only: the counters are static, one set per translation unit (each test is one file). */
#ifndef COOPREDUCE_TESTS_CHECK_H
#define COOPREDUCE_TESTS_CHECK_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef CHECK_MAX_PRINTED
#define CHECK_MAX_PRINTED 200
#endif

static unsigned long long check_passed_ = 0;
static unsigned long long check_failed_ = 0;

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6), unused))
#endif
static int check_record_(int ok, const char *file, int line, const char *expr, const char *fmt, ...)
{
    if (ok) {
        check_passed_++;
        return 1;
    }
    check_failed_++;
    if (check_failed_ <= CHECK_MAX_PRINTED) {
        va_list ap;
        fprintf(stdout, "%s:%d: FAIL: %s: ", file, line, expr);
        va_start(ap, fmt);
        vfprintf(stdout, fmt, ap);
        va_end(ap);
        fputc('\n', stdout);
        fflush(stdout);
    } else if (check_failed_ == CHECK_MAX_PRINTED + 1) {
        fprintf(stdout, "(further failures are counted but not printed)\n");
        fflush(stdout);
    }
    return 0;
}

/* The first variadic argument is the printf format of the failure message. */
#define CHECK(cond, ...) check_record_(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)

#if defined(__GNUC__)
__attribute__((unused))
#endif
static unsigned long long check_failed_count(void) { return check_failed_; }

#if defined(__GNUC__)
__attribute__((unused))
#endif
static int check_summary(const char *name)
{
    fprintf(stdout, "%s: %llu passed, %llu failed\n", name, check_passed_, check_failed_);
    fflush(stdout);
    return (check_failed_ == 0 && check_passed_ > 0) ? 0 : 1;
}

static inline uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline uint64_t f64_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double f64_from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#endif /* COOPREDUCE_TESTS_CHECK_H */
