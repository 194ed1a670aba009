/* dist_check.c — the checks behind dist_check.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/values.h"
#include "dist_check.h"

#define MAX_PRINTED 30

static int dcheck(dist_env *e, int ok, const char *fmt, ...)
{
    if (ok) {
        e->passed++;
        return 1;
    }
    e->failed++;
    if (e->failed <= MAX_PRINTED) {
        char msg[600];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "[%s rank %d/%d] FAIL: %s\n", e->name, e->rank, e->size, msg);
    }
    return 0;
}

/* ---- data ------------------------------------------------------------------------------ */
static uint64_t sm64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double unit(uint64_t *s) { return (double)(sm64(s) >> 11) * 0x1p-53; }

enum { SP_NONE, SP_NAN, SP_INF, SP_ZEROS, SP_BIG, SP_TINY, SP_COUNT };

static void put_float(void *x, uint64_t i, coopreduce_dtype dt, double v)
{
    switch (dt) {
    case COOPREDUCE_FLOAT64: ((double *)x)[i] = v; break;
    case COOPREDUCE_FLOAT32: ((float *)x)[i] = (float)v; break;
    case COOPREDUCE_FLOAT16: ((uint16_t *)x)[i] = cr_f32_to_f16((float)v); break;
    default: ((uint16_t *)x)[i] = cr_f32_to_bf16((float)v); break;
    }
}

/* n elements of dt from seed; `special` adds NaN, infinities, zeros, huge or tiny values. */
static void fill(void *x, uint64_t n, coopreduce_dtype dt, uint64_t seed, int special)
{
    uint64_t s = seed;
    const int fl = dt == COOPREDUCE_FLOAT32 || dt == COOPREDUCE_FLOAT64 ||
                   dt == COOPREDUCE_FLOAT16 || dt == COOPREDUCE_BFLOAT16;
    for (uint64_t i = 0; i < n; i++) {
        if (fl) {
            double v = (unit(&s) * 2 - 1) * ldexp(1.0, (int)(sm64(&s) % 9) - 4);
            if (special == SP_ZEROS) v = (sm64(&s) & 1) ? -0.0 : 0.0;
            if (special == SP_BIG && sm64(&s) % 7 == 0)
                v = (sm64(&s) & 1 ? -1 : 1) *
                    (dt == COOPREDUCE_FLOAT64 ? 0x1p600 : dt == COOPREDUCE_FLOAT16 ? 60000.0 : 0x1p100);
            if (special == SP_TINY && sm64(&s) % 5 == 0)
                v = (sm64(&s) & 1 ? -1 : 1) *
                    (dt == COOPREDUCE_FLOAT64 ? 0x1p-1060 : dt == COOPREDUCE_FLOAT16 ? 0x1p-20 : 0x1p-140);
            if (special == SP_NONE && sm64(&s) % 97 == 0) v = (sm64(&s) & 1) ? -0.0 : 0.0;
            put_float(x, i, dt, v);
        } else {
            const uint64_t r = sm64(&s);
            switch (dt) {
            case COOPREDUCE_INT32:
                ((int32_t *)x)[i] = special == SP_BIG ? (int32_t)(uint32_t)r : (int32_t)(r % 2001) - 1000;
                break;
            case COOPREDUCE_UINT32:
                ((uint32_t *)x)[i] = special == SP_BIG ? (uint32_t)r : (uint32_t)(r % 5000);
                break;
            case COOPREDUCE_INT64:
                ((int64_t *)x)[i] = special == SP_BIG ? (int64_t)r : (int64_t)(r % 2000001) - 1000000;
                break;
            default: ((uint64_t *)x)[i] = special == SP_BIG ? r : r % 3000000; break;
            }
        }
    }
    if (!fl || n == 0) return;
    if (special == SP_NAN) put_float(x, sm64(&s) % n, dt, NAN);
    if (special == SP_INF) {
        put_float(x, sm64(&s) % n, dt, INFINITY);
        if (seed & 1) put_float(x, sm64(&s) % n, dt, -INFINITY);
    }
}

/* ---- splits ------------------------------------------------------------------------------ */
enum { SPLIT_EQUAL, SPLIT_RANDOM, SPLIT_LAST, SPLIT_FIRST, SPLIT_ALIGNED, SPLIT_NEAR, SPLIT_HOLES,
       SPLIT_COUNT };
static const char *split_names[SPLIT_COUNT] = {"equal", "random", "all-on-last", "all-on-first",
                                               "chunk-aligned", "chunk+-1", "alternate-empty"};

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Shard sizes n[0..R) summing to N. */
static void make_split(int kind, uint64_t N, int R, uint64_t C, uint64_t seed, uint64_t *n)
{
    uint64_t cut[65];
    uint64_t s = seed;
    cut[0] = 0;
    cut[R] = N;
    for (int r = 1; r < R; r++) {
        uint64_t c;
        switch (kind) {
        case SPLIT_EQUAL: c = N / (uint64_t)R * (uint64_t)r; break;
        case SPLIT_LAST: c = 0; break;
        case SPLIT_FIRST: c = N; break;
        case SPLIT_ALIGNED: c = N ? (sm64(&s) % (N + 1)) / C * C : 0; break;
        case SPLIT_NEAR: {
            const uint64_t b = N ? (sm64(&s) % (N + 1)) / C * C : 0;
            const int d = (int)(sm64(&s) % 3) - 1;
            c = d < 0 ? (b ? b - 1 : 0) : b + (uint64_t)d;
            if (c > N) c = N;
            break;
        }
        case SPLIT_HOLES: c = N / (uint64_t)R * (uint64_t)((r + 1) / 2 * 2); break;
        default: c = N ? sm64(&s) % (N + 1) : 0; break;
        }
        cut[r] = c > N ? N : c;
    }
    qsort(cut + 1, (size_t)(R - 1), sizeof cut[0], cmp_u64);
    for (int r = 0; r < R; r++) n[r] = cut[r + 1] - cut[r];
}

/* ---- one case ------------------------------------------------------------------------------ */
static const coopreduce_dtype dtypes[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64, COOPREDUCE_FLOAT16,
                                          COOPREDUCE_BFLOAT16, COOPREDUCE_INT32, COOPREDUCE_UINT32,
                                          COOPREDUCE_INT64, COOPREDUCE_UINT64};
#define NDT (sizeof dtypes / sizeof dtypes[0])

/* --small (a short run under compute-sanitizer): one type of each kind, one operation of each
 * family. */
static int skipped_small(const dist_env *e, coopreduce_dtype dt, int op)
{
    if (!e->small) return 0;
    const int dt_in = dt == COOPREDUCE_FLOAT32 || dt == COOPREDUCE_BFLOAT16 || dt == COOPREDUCE_INT64;
    const int op_in = op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN ||
                      op == COOPREDUCE_OP_NORM2 || op == COOPREDUCE_OP_MAX ||
                      op == COOPREDUCE_OP_ARGMIN;
    return !dt_in || !op_in;
}

static void set_modes(dist_env *e, coopreduce_mode mode, int narrow)
{
    coopreduce_set_mode(e->h, mode);
    coopreduce_set_mode(e->ref, mode);
    coopreduce_set_narrow_result(e->h, narrow);
    coopreduce_set_narrow_result(e->ref, narrow);
}

static char *dev_copy(dist_env *e, const void *src, size_t bytes)
{
    char *d = e->dev_alloc(bytes ? bytes : 16);
    if (bytes) e->to_dev(d, src, bytes);
    return d;
}

/* One sharded call against the reference (status and bits). */
static void sharded_case(dist_env *e, coopreduce_op op, coopreduce_dtype dt, uint64_t N, int split,
                         int special, uint64_t seed, const char *what)
{
    const size_t es = coopreduce_dtype_size(dt);
    const uint64_t C = dt == COOPREDUCE_FLOAT64 ? 2048 : 4096;
    char *x = malloc(N * es + 16), *y = malloc(N * es + 16);
    fill(x, N, dt, seed, special);
    fill(y, N, dt, seed ^ 0x5555, special == SP_NAN ? SP_NONE : special);
    uint64_t n[64], off = 0;
    make_split(split, N, e->size, C, seed * 31 + (uint64_t)split, n);
    for (int r = 0; r < e->rank; r++) off += n[r];
    uint8_t ref[16], got[16];
    memset(ref, 0xa5, sizeof ref);
    memset(got, 0xa5, sizeof got); /* bytes a call does not write stay equal */
    const coopreduce_status rs = coopreduce_reduce(op, x, y, ref, N, dt, e->ref, NULL);
    char refmsg[256];
    snprintf(refmsg, sizeof refmsg, "%s", coopreduce_last_error(e->ref));
    coopreduce_status gs;
    if (e->gpu) {
        char *dx = dev_copy(e, x + off * es, n[e->rank] * es);
        char *dy = dev_copy(e, y + off * es, n[e->rank] * es);
        char *dr = dev_copy(e, got, 16);
        gs = coopreduce_reduce_sharded(op, dx, dy, dr, n[e->rank], dt, e->h, e->comm, e->stream);
        e->to_host(got, dr, 16);
        e->dev_free(dx);
        e->dev_free(dy);
        /* and the 1-D call on this rank's GPU with the whole array: the same status and bits */
        if (e->gpu_1d) {
            uint8_t one[16];
            memset(one, 0xa5, sizeof one);
            char *ax = dev_copy(e, x, N * es), *ay = dev_copy(e, y, N * es);
            e->to_dev(dr, one, 16);
            const coopreduce_status os = coopreduce_reduce(op, ax, ay, dr, N, dt, e->h, e->stream);
            e->to_host(one, dr, 16);
            e->dev_free(ax);
            e->dev_free(ay);
            dcheck(e, os == gs && (gs != COOPREDUCE_SUCCESS || memcmp(one, got, 16) == 0),
                   "%s %s of %s, N=%llu, split %s: sharded %s %016llx%016llx, one GPU %s %016llx%016llx",
                   what, coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)N,
                   split_names[split], coopreduce_status_string(gs),
                   (unsigned long long)((uint64_t *)got)[1], (unsigned long long)((uint64_t *)got)[0],
                   coopreduce_status_string(os), (unsigned long long)((uint64_t *)one)[1],
                   (unsigned long long)((uint64_t *)one)[0]);
        }
        e->dev_free(dr);
    } else {
        gs = coopreduce_reduce_sharded(op, x + off * es, y + off * es, got, n[e->rank], dt, e->h,
                                       e->comm, e->stream);
    }
    /* A 128-bit sum outside the input type: a CPU handle says so, a GPU handle leaves it to the
     * caller (coopreduce_reduce's rule), in the sharded call as in the 1-D one. */
    const coopreduce_status want = e->gpu && rs == COOPREDUCE_ERROR_OVERFLOW ? COOPREDUCE_SUCCESS : rs;
    int same = gs == want;
    if (same && (rs == COOPREDUCE_SUCCESS || rs == COOPREDUCE_ERROR_OVERFLOW))
        same = memcmp(got, ref, 16) == 0;
    dcheck(e, same,
                "%s %s of %s, N=%llu, split %s (shard %llu at %llu), special %d: status %s / %s, "
                "bits %016llx%016llx / %016llx%016llx; sharded: %s; 1-D: %s",
                what, coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)N,
                split_names[split], (unsigned long long)n[e->rank], (unsigned long long)off, special,
                coopreduce_status_string(gs), coopreduce_status_string(rs),
                (unsigned long long)((uint64_t *)got)[1], (unsigned long long)((uint64_t *)got)[0],
                (unsigned long long)((uint64_t *)ref)[1], (unsigned long long)((uint64_t *)ref)[0],
                gs ? coopreduce_last_error(e->h) : "", rs ? refmsg : "");
    free(x);
    free(y);
}

void dist_check_sharded(dist_env *e)
{
    const uint64_t sizes_full[] = {0, 1, 3, 127, 2047, 2048, 2049, 4095, 4096, 4097, 12289, 40000};
    const uint64_t sizes_quick[] = {0, 1, 2049, 4097, 12289};
    const uint64_t *sizes = e->quick ? sizes_quick : sizes_full;
    const int nsizes = e->quick ? (e->small ? 3 : 5) : 12;
    uint64_t seed = 1000;
    for (int mode = 0; mode < 2; mode++) {
        for (size_t d = 0; d < NDT; d++) {
            const coopreduce_dtype dt = dtypes[d];
            const int half = dt == COOPREDUCE_FLOAT16 || dt == COOPREDUCE_BFLOAT16;
            for (int narrow = 0; narrow <= half; narrow++) {
                set_modes(e, (coopreduce_mode)mode, narrow);
                for (int op = 0; op < COOPREDUCE_OP_COUNT; op++) {
                    if (skipped_small(e, dt, op)) continue;
                    for (int si = 0; si < nsizes; si++) {
                        const uint64_t N = sizes[si];
                        for (int sp = 0; sp < SPLIT_COUNT; sp++) {
                            if (e->size == 1 && sp > 0) break; /* one rank: one split */
                            if (e->quick && e->size > 1 && sp != SPLIT_RANDOM && sp != SPLIT_NEAR &&
                                sp != SPLIT_HOLES)
                                continue;
                            const int special = (int)((seed * 7 + (uint64_t)op) % 8) < SP_COUNT
                                                    ? (int)((seed * 7 + (uint64_t)op) % 8)
                                                    : SP_NONE;
                            sharded_case(e, (coopreduce_op)op, dt, N, sp, N > 5000 ? SP_NONE : special,
                                         seed++, "sharded");
                        }
                        /* each special value kind once per size, random split */
                        if (N > 0 && N < 5000 && !e->quick)
                            for (int sp = 1; sp < SP_COUNT; sp++)
                                sharded_case(e, (coopreduce_op)op, dt, N, SPLIT_RANDOM, sp, seed++,
                                             "special");
                    }
                }
            }
        }
    }
    set_modes(e, COOPREDUCE_MODE_DETERMINISTIC, 0);
    if (e->quick && e->small) return;
    /* integer sums beyond 64 bits, and overflow */
    for (int sp = 0; sp < SPLIT_COUNT; sp++)
        for (size_t d = 4; d < NDT; d++) {
            sharded_case(e, COOPREDUCE_OP_SUM, dtypes[d], 9001, sp, SP_BIG, seed++, "big ints");
            sharded_case(e, COOPREDUCE_OP_MEAN, dtypes[d], 9001, sp, SP_BIG, seed++, "big ints");
        }
    if (!e->deep) return;
    /* three levels of the canonical tree: N > C^2 */
    const struct {
        coopreduce_op op;
        coopreduce_dtype dt;
        uint64_t n;
    } deep[] = {
        {COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64, 2048ull * 2048 + 3 * 2048 + 17},
        {COOPREDUCE_OP_NORM2, COOPREDUCE_FLOAT64, 2048ull * 2048 + 2049},
        {COOPREDUCE_OP_DOT, COOPREDUCE_FLOAT64, 2048ull * 2048 * 2 + 5},
        {COOPREDUCE_OP_MEAN, COOPREDUCE_FLOAT64, 2048ull * 2048 + 1},
        {COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, 4096ull * 4096 + 4096 * 5 + 1},
        {COOPREDUCE_OP_SUMSQ, COOPREDUCE_BFLOAT16, 4096ull * 4096 + 77},
    };
    for (size_t i = 0; i < sizeof deep / sizeof deep[0]; i++)
        for (int sp = 0; sp < SPLIT_COUNT; sp++) {
            if (e->size == 1 && sp > 0) break;
            if (sp == SPLIT_FIRST || sp == SPLIT_LAST) continue;
            sharded_case(e, deep[i].op, deep[i].dt, deep[i].n, sp, SP_NONE, seed++, "deep");
        }
    set_modes(e, COOPREDUCE_MODE_EXACT, 0);
    sharded_case(e, COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, 4096ull * 4096 + 9, SPLIT_RANDOM, SP_NONE,
                 seed++, "deep exact");
    set_modes(e, COOPREDUCE_MODE_DETERMINISTIC, 0);
}

/* ---- the all-reduce ------------------------------------------------------------------------ */
/* shift: on a GPU, send starts that many elements past a 256-byte boundary (the rank's slice
 * then starts off a 16-byte boundary for the columns kernel's element loads). */
static void allreduce_case(dist_env *e, coopreduce_op op, coopreduce_dtype dt, uint64_t count,
                           int special, uint64_t seed, int shift)
{
    const size_t es = coopreduce_dtype_size(dt);
    const int R = e->size;
    char *stacked = malloc((size_t)R * count * es + 16);
    for (int r = 0; r < R; r++)
        fill(stacked + (size_t)r * count * es, count, dt, seed + (uint64_t)r * 1000003, special);
    char *ref = malloc(count * 16 + 16), *got = malloc(count * 16 + 16);
    memset(ref, 0xa5, count * 16 + 16);
    memset(got, 0xa5, count * 16 + 16);
    const coopreduce_status rs =
        coopreduce_reduce_axis(op, stacked, NULL, ref, 1, (uint64_t)R, count, dt, e->ref, NULL);
    coopreduce_dtype rdt;
    const size_t rsz = coopreduce_op_result_size(op, dt, 0, &rdt);
    coopreduce_status gs;
    const char *mine = stacked + (size_t)e->rank * count * es;
    if (e->gpu) {
        char *ds = e->dev_alloc((count + (uint64_t)shift) * es + 16);
        if (count) e->to_dev(ds + (size_t)shift * es, mine, count * es);
        char *dr = e->dev_alloc(count * 16 + 16);
        e->to_dev(dr, got, count * 16 + 16);
        gs = coopreduce_allreduce(ds + (size_t)shift * es, dr, count, dt, op, e->h, e->comm,
                                  e->stream);
        e->to_host(got, dr, count * 16 + 16);
        e->dev_free(ds);
        e->dev_free(dr);
    } else {
        gs = coopreduce_allreduce(mine, got, count, dt, op, e->h, e->comm, e->stream);
    }
    const coopreduce_status want = e->gpu && rs == COOPREDUCE_ERROR_OVERFLOW ? COOPREDUCE_SUCCESS : rs;
    int same = gs == want;
    uint64_t bad = 0;
    if (same && (gs == COOPREDUCE_SUCCESS || gs == COOPREDUCE_ERROR_OVERFLOW)) {
        for (uint64_t i = 0; i < count * 16 + 16 && same; i++)
            if (ref[i] != got[i]) {
                same = 0;
                bad = rsz ? i / rsz : i;
            }
    }
    dcheck(e, same,
           "allreduce %s of %s, count %llu, special %d, shift %d: status %s / %s (%s) element %llu",
           coopreduce_op_name(op), coopreduce_dtype_name(dt), (unsigned long long)count, special,
           shift,
           coopreduce_status_string(gs), coopreduce_status_string(rs),
           gs ? coopreduce_last_error(e->h) : "", (unsigned long long)bad);
    free(stacked);
    free(ref);
    free(got);
}

void dist_check_allreduce(dist_env *e)
{
    const uint64_t counts_full[] = {0, 1, 5, 64, 1000, 4099};
    const uint64_t counts_quick[] = {1, 1000};
    const uint64_t *counts = e->quick ? counts_quick : counts_full;
    const int nc = e->quick ? 2 : 6;
    uint64_t seed = 777;
    for (int mode = 0; mode < 2; mode++)
        for (size_t d = 0; d < NDT; d++) {
            set_modes(e, (coopreduce_mode)mode, 0);
            for (int op = 0; op < COOPREDUCE_OP_COUNT; op++) {
                if (op == COOPREDUCE_OP_DOT || skipped_small(e, dtypes[d], op)) continue;
                for (int c = 0; c < nc; c++)
                    allreduce_case(e, (coopreduce_op)op, dtypes[d], counts[c],
                                   (int)(seed % SP_COUNT), seed, 0), seed++;
            }
        }
    set_modes(e, COOPREDUCE_MODE_DETERMINISTIC, 0);
    if (e->small) return;
    /* Past the first exchange's slots, the float32 / float64 SUM of a GPU's columns kernel:
     * R x 4096 by whole 16-byte loads, and (sh = 1: send one element off a 16-byte boundary) by
     * element loads with the rank's own row read off it; R x 4099 + 1, a padded count (send is
     * first copied to an aligned buffer: 16-byte loads of slices of 4100); R x 2048 + 2, slices
     * of an odd length (element loads); every data kind. --quick: the first two kinds. */
    const uint64_t R = (uint64_t)e->size;
    const uint64_t big[] = {R * 4096, R * 4099 + 1, R * 2048 + 2};
    for (int d = 0; d < 2; d++)
        for (size_t c = 0; c < 3; c++)
            for (int sh = 0; sh < 2; sh++)
                if (!e->quick || (c == 0 && sh == 1) || (c == 1 && sh == 0))
                    allreduce_case(e, COOPREDUCE_OP_SUM,
                                   d ? COOPREDUCE_FLOAT64 : COOPREDUCE_FLOAT32, big[c],
                                   (int)(seed % SP_COUNT), seed, sh), seed++;
    /* Large slices (8 MiB and more) on a GPU: the columns kernels over millions of columns, by
     * whole 16-byte rows and by element loads (a send one element off; float64 slices of an odd
     * length), the generic kernel (MEAN of bfloat16). */
    if (e->gpu) {
        const struct {
            coopreduce_op op;
            coopreduce_dtype dt;
            uint64_t per_rank;
            int shift, quick;
        } large[] = {
            {COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, (2u << 20) + 64, 0, 1},
            {COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, (2u << 20) + 64, 1, 0},
            {COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64, (1u << 20) + 3, 0, 0},
            {COOPREDUCE_OP_MEAN, COOPREDUCE_BFLOAT16, (4u << 20) + 130, 0, 0},
        };
        for (size_t i = 0; i < sizeof large / sizeof large[0]; i++)
            if (!e->quick || large[i].quick)
                allreduce_case(e, large[i].op, large[i].dt, R * large[i].per_rank,
                               (int)(seed % SP_COUNT), seed, large[i].shift), seed++;
        /* slices of just over 4 MiB, padded: send copied to an aligned buffer, the last rank's slice
         * short, the results gathered from a buffer of the communicator's (with two ranks over
         * NCCL by send / recv, this rank's block copied into recv first) */
        allreduce_case(e, COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, R * ((1u << 20) + 3) + 1,
                       (int)(seed % SP_COUNT), seed, 0), seed++;
    }
    if (e->deep)
        allreduce_case(e, COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, (1u << 20) + 3, SP_NONE, 5, 0);
}

/* ---- errors ---------------------------------------------------------------------------------- */
static void expect(dist_env *e, coopreduce_status got, coopreduce_status want_here,
                   coopreduce_status want_others, int failing_rank, const char *what,
                   const char *needle)
{
    const coopreduce_status want =
        failing_rank < 0 || failing_rank == e->rank ? want_here : want_others;
    const char *msg = coopreduce_last_error(e->h);
    dcheck(e, got == want && (!needle || strstr(msg, needle)),
           "%s: status %s, expected %s; message \"%s\"%s%s", what, coopreduce_status_string(got),
           coopreduce_status_string(want), msg, needle ? " should name " : "", needle ? needle : "");
}

void dist_check_errors(dist_env *e)
{
    const int R = e->size, last = R - 1;
    const uint64_t n = 1000;
    float host[1000];
    for (int i = 0; i < 1000; i++) host[i] = (float)i * 0.5f - 7;
    void *x = host, *res = NULL;
    float hres[4];
    res = hres;
    if (e->gpu) {
        x = dev_copy(e, host, sizeof host);
        res = e->dev_alloc(64);
    }
    set_modes(e, COOPREDUCE_MODE_DETERMINISTIC, 0);
    coopreduce_status s;
    /* a different op on the last rank */
    s = coopreduce_reduce_sharded(e->rank == last && R > 1 ? COOPREDUCE_OP_MAX : COOPREDUCE_OP_SUM,
                                  x, NULL, res, n, COOPREDUCE_FLOAT32, e->h, e->comm, e->stream);
    expect(e, s, R > 1 ? COOPREDUCE_ERROR_INVALID_ARGUMENT : COOPREDUCE_SUCCESS,
           COOPREDUCE_ERROR_INVALID_ARGUMENT, -1, "op mismatch", R > 1 ? "disagree" : NULL);
    /* a different dtype on rank 0 */
    s = coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, res, n,
                                  e->rank == 0 && R > 1 ? COOPREDUCE_INT32 : COOPREDUCE_FLOAT32,
                                  e->h, e->comm, e->stream);
    expect(e, s, R > 1 ? COOPREDUCE_ERROR_INVALID_ARGUMENT : COOPREDUCE_SUCCESS,
           COOPREDUCE_ERROR_INVALID_ARGUMENT, -1, "dtype mismatch", R > 1 ? "dtype" : NULL);
    /* x NULL on the last rank */
    s = coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, e->rank == last ? NULL : x, NULL, res, n,
                                  COOPREDUCE_FLOAT32, e->h, e->comm, e->stream);
    expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_ERROR_OTHER_RANK, last,
           "x NULL on the last rank", e->rank == last ? "x is NULL" : "x is NULL");
    /* result NULL on rank 0 */
    s = coopreduce_reduce_sharded(COOPREDUCE_OP_MIN, x, NULL, e->rank == 0 ? NULL : res, n,
                                  COOPREDUCE_FLOAT32, e->h, e->comm, e->stream);
    expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_ERROR_OTHER_RANK, 0,
           "result NULL on rank 0", e->rank == 0 ? "result is NULL" : "rank 0");
    /* an unknown op on every rank */
    s = coopreduce_reduce_sharded((coopreduce_op)99, x, NULL, res, n, COOPREDUCE_FLOAT32, e->h,
                                  e->comm, e->stream);
    expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_ERROR_INVALID_ARGUMENT, -1,
           "unknown op", NULL);
    /* every shard empty: min has no value */
    s = coopreduce_reduce_sharded(COOPREDUCE_OP_MIN, x, NULL, res, 0, COOPREDUCE_FLOAT32, e->h,
                                  e->comm, e->stream);
    expect(e, s, COOPREDUCE_ERROR_EMPTY, COOPREDUCE_ERROR_EMPTY, -1, "all shards empty", "empty");
    /* the mode on rank 0 only */
    if (R > 1) {
        if (e->rank == 0) coopreduce_set_mode(e->h, COOPREDUCE_MODE_EXACT);
        s = coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, res, n, COOPREDUCE_FLOAT32, e->h,
                                      e->comm, e->stream);
        coopreduce_set_mode(e->h, COOPREDUCE_MODE_DETERMINISTIC);
        expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_ERROR_INVALID_ARGUMENT, -1,
               "mode mismatch", "mode");
    }
    /* exact mode refuses mean: every rank, its own status */
    coopreduce_set_mode(e->h, COOPREDUCE_MODE_EXACT);
    s = coopreduce_reduce_sharded(COOPREDUCE_OP_MEAN, x, NULL, res, n, COOPREDUCE_FLOAT32, e->h,
                                  e->comm, e->stream);
    coopreduce_set_mode(e->h, COOPREDUCE_MODE_DETERMINISTIC);
    expect(e, s, COOPREDUCE_ERROR_NOT_SUPPORTED, COOPREDUCE_ERROR_NOT_SUPPORTED, -1,
           "exact mean", NULL);
    /* the all-reduce: counts that disagree, dot, a NULL send on rank 0 */
    s = coopreduce_allreduce(x, res, e->rank == last && R > 1 ? 3 : 2, COOPREDUCE_FLOAT32,
                             COOPREDUCE_OP_SUM, e->h, e->comm, e->stream);
    expect(e, s, R > 1 ? COOPREDUCE_ERROR_INVALID_ARGUMENT : COOPREDUCE_SUCCESS,
           COOPREDUCE_ERROR_INVALID_ARGUMENT, -1, "allreduce count mismatch", R > 1 ? "count" : NULL);
    s = coopreduce_allreduce(x, res, 2, COOPREDUCE_FLOAT32, COOPREDUCE_OP_DOT, e->h, e->comm,
                             e->stream);
    expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_ERROR_INVALID_ARGUMENT, -1,
           "allreduce dot", "dot");
    s = coopreduce_allreduce(e->rank == 0 ? NULL : x, res, 2, COOPREDUCE_FLOAT32, COOPREDUCE_OP_SUM,
                             e->h, e->comm, e->stream);
    expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_ERROR_OTHER_RANK, 0,
           "allreduce send NULL on rank 0", NULL);
    if (e->gpu) {
        /* host memory where a GPU handle needs device memory, on the last rank: refused there
         * before any exchange reads it (the small all-reduce's first exchange would), the other
         * ranks told */
        s = coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, e->rank == last ? (void *)host : x, NULL,
                                      res, n, COOPREDUCE_FLOAT32, e->h, e->comm, e->stream);
        expect(e, s, COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, COOPREDUCE_ERROR_OTHER_RANK, last,
               "sharded x in host memory on the last rank", "host memory");
        s = coopreduce_allreduce(e->rank == last ? (void *)host : x, res, 2, COOPREDUCE_FLOAT32,
                                 COOPREDUCE_OP_SUM, e->h, e->comm, e->stream);
        expect(e, s, COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, COOPREDUCE_ERROR_OTHER_RANK, last,
               "allreduce send in host memory on the last rank", "host memory");
    }
    /* and a good call after all that: the ranks are still in step */
    float want = 0, got = -1;
    for (int i = 0; i < 1000; i++) (void)i;
    {
        float *all = malloc(sizeof(float) * 1000 * (size_t)R);
        for (int r = 0; r < R; r++) memcpy(all + r * 1000, host, sizeof host);
        coopreduce_sum(all, &want, 1000 * (uint64_t)R, COOPREDUCE_FLOAT32, e->ref, NULL);
        free(all);
    }
    s = coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, res, n, COOPREDUCE_FLOAT32, e->h,
                                  e->comm, e->stream);
    if (e->gpu)
        e->to_host(&got, res, 4);
    else
        got = hres[0];
    dcheck(e, s == COOPREDUCE_SUCCESS && memcmp(&got, &want, 4) == 0,
           "a good call after the errors: %s, %a vs %a (%s)", coopreduce_status_string(s), got,
           want, coopreduce_last_error(e->h));
    if (e->gpu) {
        e->dev_free(x);
        e->dev_free(res);
    }
}

/* ---- deferred errors ----------------------------------------------------------------------- */
static void set_deferred(dist_env *e, int on, const char *what)
{
    coopreduce_comm_config cfg = COOPREDUCE_COMM_CONFIG_INIT;
    cfg.deferred_errors = on;
    const coopreduce_status s = coopreduce_comm_set_config(e->comm, &cfg, e->stream);
    coopreduce_comm_config back = COOPREDUCE_COMM_CONFIG_INIT;
    const coopreduce_status g = coopreduce_comm_get_config(e->comm, &back);
    dcheck(e, s == COOPREDUCE_SUCCESS && g == COOPREDUCE_SUCCESS && back.deferred_errors == on,
           "%s: set_config %s (%s), get_config %s, deferred_errors %d", what,
           coopreduce_status_string(s), coopreduce_last_error(NULL), coopreduce_status_string(g),
           back.deferred_errors);
}

/* After the stream: what coopreduce_comm_deferred_error reports (and that it is then clear). */
static void expect_deferred(dist_env *e, coopreduce_status want, const char *needle,
                            const char *what)
{
    if (e->gpu) { /* a copy on the legacy default stream waits for the rank's stream */
        char *d = e->dev_alloc(16), b[16];
        e->to_host(b, d, 16);
        e->dev_free(d);
    }
    const coopreduce_status s = coopreduce_comm_deferred_error(e->comm, e->h);
    const char *msg = s ? coopreduce_last_error(e->h) : "";
    const coopreduce_status again = coopreduce_comm_deferred_error(e->comm, e->h);
    dcheck(e, s == want && again == COOPREDUCE_SUCCESS && (!needle || strstr(msg, needle)),
           "%s: deferred error %s, expected %s; message \"%s\"%s%s; read again: %s", what,
           coopreduce_status_string(s), coopreduce_status_string(want), msg,
           needle ? " should name " : "", needle ? needle : "", coopreduce_status_string(again));
}

void dist_check_deferred(dist_env *e)
{
    const int R = e->size, last = R - 1;
    coopreduce_backend be;
    int rk, sz;
    coopreduce_comm_info(e->comm, &be, &rk, &sz);
    /* the calls that do not wait: small all-reduces of a GPU handle over NCCL */
    const int defers = be == COOPREDUCE_BACKEND_NCCL && e->gpu;
    coopreduce_status s;
    /* bad configs: every rank fails, the setting unchanged */
    coopreduce_comm_config bad = COOPREDUCE_COMM_CONFIG_INIT;
    bad.deferred_errors = e->rank == last ? 2 : 1;
    s = coopreduce_comm_set_config(e->comm, &bad, e->stream);
    dcheck(e, s == (e->rank == last ? COOPREDUCE_ERROR_INVALID_ARGUMENT : COOPREDUCE_ERROR_OTHER_RANK),
           "set_config with a bad value on the last rank: %s (%s)", coopreduce_status_string(s),
           coopreduce_last_error(NULL));
    if (R > 1) {
        bad.deferred_errors = e->rank == 0;
        s = coopreduce_comm_set_config(e->comm, &bad, e->stream);
        dcheck(e, s == COOPREDUCE_ERROR_INVALID_ARGUMENT && strstr(coopreduce_last_error(NULL), "disagree"),
               "set_config disagreeing: %s (%s)", coopreduce_status_string(s),
               coopreduce_last_error(NULL));
    }
    coopreduce_comm_config old = {0, 0};
    s = coopreduce_comm_get_config(e->comm, &old);
    dcheck(e, s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "get_config without struct_size: %s",
           coopreduce_status_string(s));
    s = coopreduce_comm_deferred_error(NULL, e->h);
    dcheck(e, s == COOPREDUCE_ERROR_INVALID_ARGUMENT && strstr(coopreduce_last_error(e->h), "NULL"),
           "deferred_error of a NULL comm: %s (%s)", coopreduce_status_string(s),
           coopreduce_last_error(e->h));
    set_deferred(e, 1, "deferred on");
    /* every op and dtype, small and large counts: the same bits as without */
    uint64_t seed = 4242;
    const uint64_t counts[] = {0, 1, 7, 1024, 4099};
    for (size_t d = 0; d < NDT; d++)
        for (int op = 0; op < COOPREDUCE_OP_COUNT; op++) {
            if (op == COOPREDUCE_OP_DOT) continue;
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                if (e->quick && c != 1 && c != 3) continue;
                allreduce_case(e, (coopreduce_op)op, dtypes[d], counts[c], (int)(seed % SP_COUNT),
                               seed, (int)(c & 1)), seed++;
            }
        }
    set_modes(e, COOPREDUCE_MODE_EXACT, 0);
    allreduce_case(e, COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT64, 300, SP_NONE, seed++, 0);
    set_modes(e, COOPREDUCE_MODE_DETERMINISTIC, 0);
    expect_deferred(e, COOPREDUCE_SUCCESS, NULL, "after good deferred calls");

    float host[8] = {1, 2, 3, 4, 5, 6, 7, 8}, pattern[8], got[8];
    for (int i = 0; i < 8; i++) pattern[i] = -99.5f;
    void *x = host, *res = got;
    memcpy(got, pattern, sizeof got);
    if (e->gpu) {
        x = dev_copy(e, host, sizeof host);
        res = dev_copy(e, pattern, sizeof pattern);
    }
    if (R > 1) {
        /* a dtype that disagrees: over NCCL every call returns at once and writes nothing; the
         * failure comes from coopreduce_comm_deferred_error on every rank */
        s = coopreduce_allreduce(x, res, 2, e->rank == 1 ? COOPREDUCE_INT32 : COOPREDUCE_FLOAT32,
                                 COOPREDUCE_OP_SUM, e->h, e->comm, e->stream);
        if (defers) {
            expect(e, s, COOPREDUCE_SUCCESS, COOPREDUCE_SUCCESS, -1, "deferred dtype mismatch", NULL);
            expect_deferred(e, COOPREDUCE_ERROR_INVALID_ARGUMENT, "dtype", "deferred dtype mismatch");
            if (e->gpu) e->to_host(got, res, sizeof got);
            dcheck(e, memcmp(got, pattern, sizeof got) == 0,
                   "deferred dtype mismatch: recv written (%g %g)", got[0], got[1]);
        } else {
            expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_ERROR_INVALID_ARGUMENT, -1,
                   "dtype mismatch, deferred errors over MPI", "dtype");
            expect_deferred(e, COOPREDUCE_SUCCESS, NULL, "dtype mismatch over MPI");
        }
        /* a count that disagrees, one rank's past the first exchange's 16 KB (it waits) */
        s = coopreduce_allreduce(x, res, e->rank == last ? 5000 : 2, COOPREDUCE_FLOAT32,
                                 COOPREDUCE_OP_SUM, e->h, e->comm, e->stream);
        if (defers) {
            expect(e, s, e->rank == last ? COOPREDUCE_ERROR_INVALID_ARGUMENT : COOPREDUCE_SUCCESS,
                   COOPREDUCE_SUCCESS, -1, "deferred count mismatch", NULL);
            expect_deferred(e, e->rank == last ? COOPREDUCE_SUCCESS : COOPREDUCE_ERROR_INVALID_ARGUMENT,
                            e->rank == last ? NULL : "count", "deferred count mismatch");
        }
        else {
            expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_ERROR_INVALID_ARGUMENT, -1,
                   "count mismatch, deferred errors over MPI", "count");
        }
    }
    /* a NULL send on the last rank: that rank says so at once; the others later (NCCL) or at
     * once without its message (MPI) */
    s = coopreduce_allreduce(e->rank == last ? NULL : x, res, 2, COOPREDUCE_FLOAT32,
                             COOPREDUCE_OP_SUM, e->h, e->comm, e->stream);
    if (defers && R > 1) {
        expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_SUCCESS, last,
               "deferred send NULL on the last rank", e->rank == last ? "NULL" : NULL);
        expect_deferred(e, e->rank == last ? COOPREDUCE_SUCCESS : COOPREDUCE_ERROR_OTHER_RANK,
                        e->rank == last ? NULL : "failed", "deferred send NULL on the last rank");
    } else {
        expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_ERROR_OTHER_RANK, last,
               "send NULL on the last rank, deferred errors", e->rank == last ? "NULL" : "message is on that rank");
    }
    /* a sharded reduction waits: a NULL x is reported by the call, without the message */
    s = coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, e->rank == last ? NULL : x, NULL, res, 8,
                                  COOPREDUCE_FLOAT32, e->h, e->comm, e->stream);
    expect(e, s, COOPREDUCE_ERROR_INVALID_ARGUMENT, COOPREDUCE_ERROR_OTHER_RANK, last,
           "sharded x NULL on the last rank, deferred errors",
           e->rank == last ? "x is NULL" : "message is on that rank");
    /* and a good deferred call after: written, nothing recorded */
    s = coopreduce_allreduce(x, res, 2, COOPREDUCE_FLOAT32, COOPREDUCE_OP_SUM, e->h, e->comm,
                             e->stream);
    expect_deferred(e, COOPREDUCE_SUCCESS, NULL, "a good deferred call after the errors");
    if (e->gpu) e->to_host(got, res, sizeof got);
    dcheck(e, s == COOPREDUCE_SUCCESS && got[0] == 1.0f * (float)R && got[1] == 2.0f * (float)R,
           "a good deferred call after the errors: %s, %g %g", coopreduce_status_string(s), got[0],
           got[1]);
    set_deferred(e, 0, "deferred off");
    if (e->gpu) {
        e->dev_free(x);
        e->dev_free(res);
    }
}
