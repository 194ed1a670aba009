/* test_sum_threads.c — the CPU canonical sum does not depend on threads.
 *
 *   - set_threads and create_cpu with 1, 2, 3, 7, 16 and every online CPU give the independent
 *     implementation's bits (canonical_ref.c), float32 and float64, sizes of several chunks;
 *   - different handles used from different threads at the same time each give their bits.
 *
 * Seeds: a fresh seed per run, printed; COOPREDUCE_TEST_SEED=<seed> reproduces a run. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "canonical_ref.h"
#include "check.h"
#include "util.h"

static void test_threads(void)
{
    const uint64_t sizes[] = {5000003, (UINT64_C(1) << 22) + 1};
    const int threads[] = {1, 2, 3, 7, 16, 0};
    for (int di = 0; di < 2; di++) {
        coopreduce_dtype dt = di == 0 ? COOPREDUCE_FLOAT32 : COOPREDUCE_FLOAT64;
        for (int si = 0; si < 2; si++) {
            uint64_t n = sizes[si], seed = rnd();
            cr_gen_kind kind = si == 0 ? CR_GEN_NORMAL : CR_GEN_SIGNED;
            void *x = gen_data(dt, kind, seed, n);
            uint64_t ref = canon_bits(x, n, dt);
            coopreduce_handle *h = NULL;
            coopreduce_status s = coopreduce_create_cpu(&h, 1);
            if (!CHECK(s == COOPREDUCE_SUCCESS && h, "create_cpu(1): %d", (int)s)) {
                free(x);
                continue;
            }
            for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
                uint64_t b1 = 0, b2 = 0;
                s = coopreduce_set_threads(h, threads[t]);
                CHECK(s == COOPREDUCE_SUCCESS, "set_threads(%d): %d", threads[t], (int)s);
                s = sum_bits(h, x, n, dt, &b1, (int)(t & 1));
                CHECK(s == COOPREDUCE_SUCCESS && b1 == ref,
                      "%s %s n=%" PRIu64 " seed=%" PRIu64
                      " set_threads(%d): status %d bits 0x%" PRIx64 " expected 0x%" PRIx64,
                      dt_code(dt), cr_gen_name(kind), n, seed, threads[t], (int)s, b1, ref);
                coopreduce_handle *h2 = NULL;
                s = coopreduce_create_cpu(&h2, threads[t]);
                if (CHECK(s == COOPREDUCE_SUCCESS && h2, "create_cpu(%d): %d", threads[t],
                          (int)s)) {
                    s = sum_bits(h2, x, n, dt, &b2, (int)!(t & 1));
                    CHECK(s == COOPREDUCE_SUCCESS && b2 == ref,
                          "%s %s n=%" PRIu64 " seed=%" PRIu64
                          " create_cpu(%d): status %d bits 0x%" PRIx64 " expected 0x%" PRIx64,
                          dt_code(dt), cr_gen_name(kind), n, seed, threads[t], (int)s, b2, ref);
                    coopreduce_destroy(h2);
                }
            }
            coopreduce_destroy(h);
            free(x);
        }
    }
}

/* Different handles used from different threads at the same time (coopreduce.h, "Handles"). */
typedef struct {
    coopreduce_dtype dt;
    const void *x;
    uint64_t n;
    int reps;
    int threads;
    uint64_t bits[4];
    coopreduce_status status[4];
    int created;
} concurrent_job;

static void *concurrent_worker(void *arg)
{
    concurrent_job *j = arg;
    coopreduce_handle *h = NULL;
    j->created = coopreduce_create_cpu(&h, j->threads) == COOPREDUCE_SUCCESS && h;
    if (!j->created) return NULL;
    for (int r = 0; r < j->reps; r++)
        j->status[r] = sum_bits(h, j->x, j->n, j->dt, &j->bits[r], r & 1);
    coopreduce_destroy(h);
    return NULL;
}

static void test_concurrent_handles(void)
{
    enum { NJ = 4 };
    concurrent_job jobs[NJ];
    pthread_t tid[NJ];
    int started[NJ];
    void *data[NJ];
    uint64_t ref[NJ], seeds[NJ];
    for (int i = 0; i < NJ; i++) {
        coopreduce_dtype dt = i % 2 ? COOPREDUCE_FLOAT64 : COOPREDUCE_FLOAT32;
        uint64_t n = 1500000 + 4099 * (uint64_t)i;
        seeds[i] = rnd();
        data[i] = gen_data(dt, CR_GEN_SIGNED, seeds[i], n);
        ref[i] = canon_bits(data[i], n, dt);
        jobs[i] = (concurrent_job){.dt = dt, .x = data[i], .n = n, .reps = 4, .threads = i};
    }
    for (int i = 0; i < NJ; i++)
        started[i] = pthread_create(&tid[i], NULL, concurrent_worker, &jobs[i]) == 0;
    for (int i = 0; i < NJ; i++) {
        if (!started[i]) {
            fprintf(stdout, "   (could not start thread %d; running its job inline)\n", i);
            concurrent_worker(&jobs[i]);
        } else {
            pthread_join(tid[i], NULL);
        }
        if (CHECK(jobs[i].created, "concurrent job %d: create_cpu failed", i))
            for (int r = 0; r < jobs[i].reps; r++)
                CHECK(jobs[i].status[r] == COOPREDUCE_SUCCESS && jobs[i].bits[r] == ref[i],
                      "concurrent job %d (%s n=%" PRIu64 " seed=%" PRIu64
                      ") rep %d: status %d bits 0x%" PRIx64 " expected 0x%" PRIx64,
                      i, dt_code(jobs[i].dt), jobs[i].n, seeds[i], r, (int)jobs[i].status[r],
                      jobs[i].bits[r], ref[i]);
        free(data[i]);
    }
}

CPU_TEST_MAIN("test_sum_threads", {"thread counts", test_threads},
              {"concurrent handles", test_concurrent_handles})
