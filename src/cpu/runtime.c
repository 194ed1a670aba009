/* runtime.c — worker threads and the floating-point environment of the CPU backend. */
#include <pthread.h>
#include <unistd.h>
#include "cpu/runtime.h"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CR_HAVE_MXCSR 1
#endif

int cr_cpu_online(void)
{
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1 : (c > CR_MAX_THREADS ? CR_MAX_THREADS : (int)c);
}

int cr_cpu_threads(const struct coopreduce_handle *h)
{
    if (h->threads > 0) return h->threads > CR_MAX_THREADS ? CR_MAX_THREADS : h->threads;
    return h->online > 0 ? h->online : 1;
}

void cr_cpu_run(int t, void *(*worker)(void *), void *jobs, size_t job_size)
{
    pthread_t tid[CR_MAX_THREADS];
    int started[CR_MAX_THREADS];
    char *job = jobs;
    for (int i = 0; i < t; i++)
        started[i] = i > 0 && pthread_create(&tid[i], NULL, worker, job + i * job_size) == 0;
    for (int i = 0; i < t; i++)
        if (!started[i]) worker(job + i * job_size);
    for (int i = 1; i < t; i++)
        if (started[i]) pthread_join(tid[i], NULL);
}

/* The caller's thread may run with another rounding mode, or with flush-to-zero /
 * denormals-are-zero set (code built with -ffast-math does that): so the reduction runs in the
 * default environment and the caller's is put back afterwards, exception flags included. Worker
 * threads inherit the environment of the thread that creates them (POSIX). */
void cr_fp_enter(cr_fp_state *st)
{
    /* Both control words are saved before either is changed: the caller's SSE rounding bits
     * must come back too, not the round-to-nearest fesetround() puts there. */
    fegetenv(&st->env);
#ifdef CR_HAVE_MXCSR
    st->mxcsr = _mm_getcsr();
#endif
    fesetround(FE_TONEAREST);
#ifdef CR_HAVE_MXCSR
    _mm_setcsr(st->mxcsr & ~(0x8000u | 0x0040u) & ~0x6000u); /* FTZ, DAZ off; nearest */
#endif
}

void cr_fp_leave(const cr_fp_state *st)
{
    fesetenv(&st->env);
#ifdef CR_HAVE_MXCSR
    _mm_setcsr(st->mxcsr);
#endif
}
