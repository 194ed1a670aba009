/* axis.c — reductions along an axis and over segments on the CPU (CR_SHAPE_AXIS, _SEGMENTS).
 *
 * Every result is the 1-D reduction of its own values (docs/DETERMINISM.md, "Axis and
 * segments"), so this file computes exactly that: it hands each row or segment, as a contiguous
 * run of elements, to the plan's family, the same code a 1-D call runs. A row of a C-ordered
 * axis with inner > 1 is strided; its elements are gathered into a contiguous buffer first, a
 * tile of adjacent rows at a time (adjacent columns share cache lines, so a tile reads each line
 * once). Which thread reduces a row cannot change its bits: the families' bits do not depend on
 * the thread count.
 *
 * Threads: with at least as many results as threads, each thread takes a contiguous range of
 * results holding about the same number of elements, and reduces each result alone (a private
 * copy of the handle with one thread and its own level buffer, freed at the end); with fewer
 * results, the results are reduced one after the other, each with every thread. */
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "cpu/cpu.h"
#include "cpu/runtime.h"

/* Bytes of gathered elements a thread keeps at most (x and y together); a tile is as many
 * adjacent columns as fit, at least one. */
#define CR_GATHER_BYTES (8u << 20)
#define CR_TILE_MAX     64

/* Columns [0, w) of a (count, stride) slab at src, each made a contiguous row of dst. Typed
 * copies: an element is 2, 4 or 8 bytes. */
#define GATHER(T, src, dst, count, stride, w)                                                      \
    do {                                                                                           \
        const T *s_ = (const T *)(const void *)(src);                                              \
        T *d_ = (T *)(void *)(dst);                                                                \
        for (uint64_t e_ = 0; e_ < (count); e_++)                                                  \
            for (uint64_t c_ = 0; c_ < (w); c_++) d_[c_ * (count) + e_] = s_[e_ * (stride) + c_];  \
    } while (0)

/* Below this many elements a call runs on the calling thread alone: starting threads would cost
 * more than the work. */
#define CR_SERIAL_ELEMENTS (1u << 16)

typedef struct {
    coopreduce_handle *h; /* the handle the results are computed with */
    const cr_plan *p;     /* the plan, flat */
    const cr_shape *shape;
    const char *x, *y;
    char *result;
    uint64_t k0, k1; /* results [k0, k1) */
    coopreduce_status status;
} job;

/* Results [k0, k1) of the job, in order. */
static coopreduce_status reduce_range(job *j)
{
    const cr_plan *p = j->p;
    const size_t es = cr_dtype_size(p->dtype), rs = p->result_size;
    const cr_shape *sh = j->shape;
    char *buf = NULL;
    coopreduce_status s = COOPREDUCE_SUCCESS;
    for (uint64_t k = j->k0; k < j->k1 && !s;) {
        const cr_run r = cr_shape_run(sh, k);
        if (r.stride == 1 || r.count <= 1) {
            s = cr_cpu_run_plan(j->h, p, j->x + r.start * es,
                                p->inputs == 2 ? j->y + r.start * es : NULL, r.count,
                                j->result + k * rs);
            k++;
            continue;
        }
        /* A tile of adjacent columns of one outer index o: results k .. k + w - 1, in a buffer
         * sized once for the widest tile (every row of an axis call has the same length). */
        const uint64_t per_col = r.count * es * (uint64_t)p->inputs;
        uint64_t wmax = CR_GATHER_BYTES / per_col;
        if (wmax > CR_TILE_MAX) wmax = CR_TILE_MAX;
        if (wmax < 1) wmax = 1;
        uint64_t w = wmax;
        const uint64_t left_in_o = sh->inner - k % sh->inner;
        if (w > left_in_o) w = left_in_o;
        if (w > j->k1 - k) w = j->k1 - k;
        if (!buf) {
            const uint64_t want = wmax * per_col;
            if (want > SIZE_MAX || !(buf = malloc((size_t)want)))
                return cr_fail(j->h, COOPREDUCE_ERROR_OUT_OF_MEMORY,
                               "cannot allocate %llu bytes to gather rows of %llu elements",
                               (unsigned long long)want, (unsigned long long)r.count);
        }
        for (int in = 0; in < p->inputs; in++) {
            const char *src = (in ? j->y : j->x) + r.start * es;
            char *dst = buf + (size_t)in * (size_t)(w * r.count * es);
            switch (es) {
            case 2: GATHER(uint16_t, src, dst, r.count, r.stride, w); break;
            case 4: GATHER(uint32_t, src, dst, r.count, r.stride, w); break;
            default: GATHER(uint64_t, src, dst, r.count, r.stride, w); break;
            }
        }
        for (uint64_t c = 0; c < w && !s; c++) {
            const char *cx = buf + c * r.count * es;
            const char *cy = p->inputs == 2 ? cx + w * r.count * es : NULL;
            s = cr_cpu_run_plan(j->h, p, cx, cy, r.count, j->result + (k + c) * rs);
        }
        k += w;
    }
    free(buf);
    return s;
}

static void *worker(void *arg)
{
    job *j = arg;
    j->status = reduce_range(j);
    return NULL;
}

coopreduce_status cr_cpu_shaped(coopreduce_handle *h, const cr_plan *shaped, const void *x,
                                const void *y, void *result)
{
    const cr_plan flat = cr_plan_flat(shaped);
    const cr_shape *sh = &shaped->shape;
    const uint64_t nout = sh->outputs;
    if (nout == 0) return COOPREDUCE_SUCCESS;
    uint64_t t = (uint64_t)cr_cpu_threads(h);
    if (t > nout) t = 1; /* fewer results than threads: each result with every thread */
    const uint64_t total = sh->kind == CR_SHAPE_SEGMENTS
                               ? (uint64_t)(sh->offsets[nout] - sh->offsets[0])
                               : sh->elements;
    if (total < CR_SERIAL_ELEMENTS) t = 1;
    job jobs[CR_MAX_THREADS];
    for (uint64_t i = 0; i < t; i++) {
        jobs[i] = (job){h, &flat, sh, x, y, result, 0, 0, COOPREDUCE_SUCCESS};
    }
    if (t == 1) {
        jobs[0].k1 = nout;
        return reduce_range(&jobs[0]);
    }
    /* Ranges of about equal element counts (segments differ in length; rows do not). */
    coopreduce_handle subs[CR_MAX_THREADS];
    uint64_t k = 0, done = 0;
    for (uint64_t i = 0; i < t; i++) {
        subs[i] = *h;
        subs[i].threads = 1;
        subs[i].cpu_partials = NULL;
        subs[i].cpu_partials_bytes = 0;
        jobs[i].h = &subs[i];
        jobs[i].k0 = k;
        /* Thread i ends where the elements reach (i + 1) / t of the total, after at least one
         * result, leaving one for each later thread. */
        const uint64_t goal = total / t * (i + 1) + total % t * (i + 1) / t;
        const uint64_t last = nout - (t - 1 - i);
        if (i == t - 1) {
            k = nout;
        } else {
            do {
                done += cr_shape_run(sh, k).count;
                k++;
            } while (k < last && done < goal);
        }
        jobs[i].k1 = k;
    }
    cr_cpu_run((int)t, worker, jobs, sizeof jobs[0]);
    coopreduce_status s = COOPREDUCE_SUCCESS;
    for (uint64_t i = 0; i < t; i++) {
        if (jobs[i].status && !s) {
            s = jobs[i].status;
            memcpy(h->err, subs[i].err, sizeof h->err);
        }
        free(subs[i].cpu_partials);
    }
    return s;
}
