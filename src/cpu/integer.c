/* integer.c — the exact sum of int32 values on the CPU.
 *
 * Integer addition is associative, so every order gives the same int64: the work is split into
 * contiguous ranges, one per thread, and the range sums added in order. No overflow is possible
 * for n <= CR_INT32_MAX_N = 2^32 elements (|sum| <= 2^31 * 2^32 = 2^63, and the extreme case
 * -2^63 fits); the API refuses longer arrays. The loop is a plain widening sum, which the
 * compiler vectorises. */
#include <stdint.h>
#include "internal.h"

/* Below this many elements per thread, starting a thread costs more than it saves. */
#define CR_INT_MIN_PER_THREAD (1u << 18)

typedef struct {
    const int32_t *x;
    uint64_t begin, end;
    int64_t sum;
} int_job;

static void *int_worker(void *arg)
{
    int_job *j = arg;
    int64_t s = 0;
    for (uint64_t i = j->begin; i < j->end; i++) s += j->x[i];
    j->sum = s;
    return NULL;
}

void cr_cpu_sum_int32(const coopreduce_handle *h, const int32_t *x, uint64_t n, int64_t *result)
{
    uint64_t t = n / CR_INT_MIN_PER_THREAD;
    uint64_t threads = (uint64_t)cr_cpu_threads(h);
    if (t > threads) t = threads;
    if (t < 1) t = 1;
    int_job jobs[CR_MAX_THREADS];
    for (uint64_t i = 0; i < t; i++) jobs[i] = (int_job){x, n * i / t, n * (i + 1) / t, 0};
    cr_cpu_run((int)t, int_worker, jobs, sizeof jobs[0]);
    /* The range sums in order; unsigned addition so that no intermediate is formally an
     * overflow (the final value fits, as said above). */
    uint64_t total = 0;
    for (uint64_t i = 0; i < t; i++) total += (uint64_t)jobs[i].sum;
    *result = (int64_t)total;
}
