/* axis_check.c — see axis_check.h. */
#include "axis_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops_data.h"
#include "util.h"

void axis_fill(void *x, uint64_t n, coopreduce_dtype dt, int kind)
{
    const size_t es = dt_size(dt);
    if (kind < 3) {
        fill_values(x, n, dt, kind);
        return;
    }
    if (kind == 3) { /* random bits: every exponent, and NaN / inf / subnormals for floats */
        for (uint64_t i = 0; i < n; i++) store_bits(x, i, es, rnd());
        return;
    }
    if (kind == 5) { /* sparse outliers among uniform values */
        fill_values(x, n, dt, 0);
        if (!dt_is_float(dt)) return;
        const int wide = dt == COOPREDUCE_FLOAT64 ? 600 : 100; /* past TBIG and TSML */
        for (uint64_t i = 0; i < n; i++) {
            if (rnd_below(2000) != 0) continue;
            const double v = ldexp(1.0 + unif(), rnd_below(2) ? wide : -wide);
            store_value(x, i, dt, rnd_below(2) ? -v : v);
        }
        return;
    }
    if (kind == 6) { /* signed zeros: -0.0 (0 for integers), now and then +0.0 or a value */
        for (uint64_t i = 0; i < n; i++) {
            const uint64_t r = rnd_below(1024);
            store_value(x, i, dt, r == 0 ? 0.0 : r == 1 ? 1.0 + unif() : -0.0);
        }
        return;
    }
    if (kind == 7) { /* runs of chunks of uniform values and of the type's whole range */
        if (!dt_is_float(dt)) {
            fill_values(x, n, dt, 0);
            return;
        }
        const uint64_t C = dt == COOPREDUCE_FLOAT64 ? 2048 : 4096;
        /* exponents from the subnormals' to far above NORM2's big threshold (values.h: 2^52
         * for float32 and bfloat16, 2^486 for float64; float16 has no big class), short of
         * results that overflow */
        const int lo = dt == COOPREDUCE_FLOAT64   ? -1070
                       : dt == COOPREDUCE_FLOAT32 ? -148
                       : dt == COOPREDUCE_FLOAT16 ? -23
                                                  : -132;
        const int hi = dt == COOPREDUCE_FLOAT64 ? 900 : dt == COOPREDUCE_FLOAT16 ? 8 : 100;
        int wide = (int)rnd_below(2);
        for (uint64_t i = 0; i < n; wide = !wide) {
            const uint64_t len = C * (1 + rnd_below(40)), m = n - i < len ? n - i : len;
            if (!wide) fill_values((char *)x + i * es, m, dt, 0);
            for (uint64_t k = i; wide && k < i + m; k++) {
                const double v = ldexp(1.0 + 0.5 * unif(), lo + (int)rnd_below(hi - lo + 1));
                store_value(x, k, dt, rnd_below(2) ? -v : v);
            }
            i += m;
        }
        return;
    }
    /* Cancelling pairs: v, then -v a few places later, over a wide range, and small values. */
    fill_values(x, n, dt, 1);
    for (uint64_t i = 0; i + 3 < n; i += 4) {
        if (dt_is_float(dt) || dt_is_signed(dt)) {
            const double v = load_value(x, i, dt);
            store_value(x, i + 2, dt, -v);
        }
    }
}

static const char *op_name(coopreduce_op op) { return coopreduce_op_name(op); }

/* Compares the call's status and results with the references of each result's values, which
 * the caller copies out with row(k, ...). */
typedef struct {
    const axis_env *env;
    coopreduce_op op;
    coopreduce_dtype dt;
    size_t rs; /* result bytes */
} ctx;

/* The reference of result k: 1-D call on the CPU handle of the values in xs (and ys). */
static coopreduce_status reference(const ctx *c, const void *xs, const void *ys, uint64_t n,
                                   void *out)
{
    return coopreduce_reduce(c->op, xs, ys, out, n, c->dt, c->env->ref, NULL);
}

/* Gathers result k's values of an axis call into xs (and ys). */
static void gather_row(const char *x, uint64_t o, uint64_t len, uint64_t inner, uint64_t i,
                       size_t es, char *xs)
{
    for (uint64_t k = 0; k < len; k++)
        memcpy(xs + k * es, x + ((o * len + k) * inner + i) * es, es);
}

/* The call's status against the first failing reference (an empty row fails the whole call)
 * or success; on success, every result's bytes. */
static int compare(const ctx *c, const char *what, coopreduce_status got, coopreduce_status want,
                   const char *res, const char *refs, uint64_t nout)
{
    const int before = (int)check_failed_count();
    CHECK(got == want, "%s %s %s %s: status %s, the 1-D calls give %s (%s)", c->env->name,
          op_name(c->op), dt_name(c->dt), what, coopreduce_status_string(got),
          coopreduce_status_string(want), coopreduce_last_error(c->env->h));
    if (got != COOPREDUCE_SUCCESS || want != COOPREDUCE_SUCCESS)
        return (int)check_failed_count() - before;
    int printed = 0;
    for (uint64_t k = 0; k < nout && printed < 3; k++) {
        if (memcmp(res + k * c->rs, refs + k * c->rs, c->rs) == 0) continue;
        char a[40], b[40];
        hex_bytes(a, sizeof a, res + k * c->rs, c->rs);
        hex_bytes(b, sizeof b, refs + k * c->rs, c->rs);
        CHECK(0, "%s %s %s %s: result %llu is %s, its 1-D call gives %s (seed %llu)", c->env->name,
              op_name(c->op), dt_name(c->dt), what, (unsigned long long)k, a, b,
              (unsigned long long)test_seed());
        printed++;
    }
    return (int)check_failed_count() - before;
}

/* The status the references give the whole call: the first failure (OVERFLOW is a result's
 * property, the call's results are all written: it ranks below EMPTY and the others). */
static coopreduce_status fold_status(coopreduce_status acc, coopreduce_status s)
{
    if (acc == COOPREDUCE_SUCCESS || acc == COOPREDUCE_ERROR_OVERFLOW)
        return s == COOPREDUCE_SUCCESS ? acc : s;
    return acc;
}

int axis_case(const axis_env *env, coopreduce_op op, coopreduce_dtype dt, uint64_t outer,
              uint64_t len, uint64_t inner, int kind)
{
    const size_t es = dt_size(dt);
    const size_t rs = coopreduce_op_result_size(op, dt, 0, NULL);
    if (!rs) return 0;
    const ctx c = {env, op, dt, rs};
    const uint64_t n = outer * len * inner, nout = outer * inner;
    const int dot = op == COOPREDUCE_OP_DOT;
    char *x = xmalloc(n * es), *y = dot ? xmalloc(n * es) : NULL;
    axis_fill(x, n, dt, kind);
    if (y) axis_fill(y, n, dt, kind == 3 ? 3 : 0);
    char *refs = xmalloc(nout * rs + 1), *res = xmalloc(nout * rs + 1);
    char *xs = xmalloc(len * es), *ys = xmalloc(len * es);
    /* The references first: the whole call fails when one of them fails (an empty row). */
    coopreduce_status want = COOPREDUCE_SUCCESS;
    for (uint64_t k = 0; k < nout; k++) {
        gather_row(x, k / inner, len, inner, k % inner, es, xs);
        if (y) gather_row(y, k / inner, len, inner, k % inner, es, ys);
        want = fold_status(want, reference(&c, xs, y ? ys : NULL, len, refs + k * rs));
    }
    if (nout == 0) want = COOPREDUCE_SUCCESS;
    /* A refusal by the mode (exact mode and MEAN, say) holds whatever the shape: ask a 1-D call
     * of one element. */
    char one[16], probe[16];
    memset(one, 0, sizeof one);
    const coopreduce_status refused = reference(&c, one, one, 1, probe);
    if (refused == COOPREDUCE_ERROR_NOT_SUPPORTED) want = refused;
    void *dx = env->put(x, n * es), *dy = y ? env->put(y, n * es) : NULL;
    void *dr = env->put(NULL, nout * rs + 1);
    memset(res, POISON, nout * rs);
    coopreduce_status got =
        coopreduce_reduce_axis(op, dx, dy, dr, outer, len, inner, dt, env->h, NULL);
    env->sync();
    env->get(res, dr, nout * rs);
    /* A GPU handle leaves 128-bit overflow to the caller (the header says so). */
    if (want == COOPREDUCE_ERROR_OVERFLOW && coopreduce_handle_device(env->h) >= 0)
        want = COOPREDUCE_SUCCESS;
    char what[96];
    snprintf(what, sizeof what, "(%llu, %llu, %llu) kind %d", (unsigned long long)outer,
             (unsigned long long)len, (unsigned long long)inner, kind);
    const int f = compare(&c, what, got, want, res, refs,
                          want == COOPREDUCE_ERROR_OVERFLOW || !want ? nout : 0);
    env->drop(dx);
    if (dy) env->drop(dy);
    env->drop(dr);
    free(x), free(y), free(refs), free(res), free(xs), free(ys);
    return f;
}

int segments_case(const axis_env *env, coopreduce_op op, coopreduce_dtype dt, const int64_t *off,
                  uint64_t nseg, uint64_t n, int kind)
{
    const size_t es = dt_size(dt);
    const size_t rs = coopreduce_op_result_size(op, dt, 0, NULL);
    if (!rs) return 0;
    const ctx c = {env, op, dt, rs};
    const int dot = op == COOPREDUCE_OP_DOT;
    char *x = xmalloc(n * es), *y = dot ? xmalloc(n * es) : NULL;
    axis_fill(x, n, dt, kind);
    if (y) axis_fill(y, n, dt, 0);
    char *refs = xmalloc(nseg * rs + 1), *res = xmalloc(nseg * rs + 1);
    coopreduce_status want = COOPREDUCE_SUCCESS;
    char one[16], probe[16];
    memset(one, 0, sizeof one);
    if (reference(&c, one, one, 1, probe) == COOPREDUCE_ERROR_NOT_SUPPORTED)
        want = COOPREDUCE_ERROR_NOT_SUPPORTED;
    else
        for (uint64_t k = 0; k < nseg; k++)
            want = fold_status(want, reference(&c, x + off[k] * es, y ? y + off[k] * es : NULL,
                                               (uint64_t)(off[k + 1] - off[k]), refs + k * rs));
    void *dx = env->put(x, n * es), *dy = y ? env->put(y, n * es) : NULL;
    void *dr = env->put(NULL, nseg * rs + 1);
    void *doff = env->put(off, (nseg + 1) * sizeof *off);
    memset(res, POISON, nseg * rs);
    coopreduce_status got =
        coopreduce_reduce_segments(op, dx, dy, dr, n, doff, nseg, dt, env->h, NULL);
    const coopreduce_status synced = coopreduce_synchronize(env->h, NULL);
    if (!got) got = synced; /* a GPU's own check of the offsets */
    env->sync();
    env->get(res, dr, nseg * rs);
    if (want == COOPREDUCE_ERROR_OVERFLOW && coopreduce_handle_device(env->h) >= 0)
        want = COOPREDUCE_SUCCESS;
    char what[96];
    snprintf(what, sizeof what, "%llu segments over %llu kind %d", (unsigned long long)nseg,
             (unsigned long long)n, kind);
    const int f = compare(&c, what, got, want, res, refs,
                          want == COOPREDUCE_ERROR_OVERFLOW || !want ? nseg : 0);
    env->drop(dx);
    if (dy) env->drop(dy);
    env->drop(dr);
    env->drop(doff);
    free(x), free(y), free(refs), free(res);
    return f;
}

/* Awkward extents: 0, 1, primes, 2^k +- 1, around a float32 chunk (4096) and a float64 one. */
static const uint64_t extents[] = {0,  1,   2,   3,   5,    7,    16,   17,   31,
                                   33, 127, 129, 255, 1000, 2047, 4095, 4097, 8193};
#define NEXT (sizeof extents / sizeof extents[0])

static uint64_t pick_extent(uint64_t cap)
{
    for (int tries = 0; tries < 50; tries++) {
        const uint64_t e = extents[rnd_below(NEXT)];
        if (e <= cap) return e;
    }
    return 1;
}

static const coopreduce_dtype all_dtypes[] = {
    COOPREDUCE_FLOAT32,  COOPREDUCE_FLOAT64, COOPREDUCE_INT32,  COOPREDUCE_FLOAT16,
    COOPREDUCE_BFLOAT16, COOPREDUCE_INT64,   COOPREDUCE_UINT32, COOPREDUCE_UINT64};

void axis_sweep(const axis_env *env, uint64_t scale)
{
    for (int mode = 0; mode < COOPREDUCE_MODE_COUNT; mode++) {
        coopreduce_set_mode(env->h, (coopreduce_mode)mode);
        coopreduce_set_mode(env->ref, (coopreduce_mode)mode);
        for (int op = 0; op < COOPREDUCE_OP_COUNT; op++) {
            for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++) {
                const int ndim = 1 + (int)rnd_below(3);
                uint64_t ext[3] = {1, 1, 1}, total = 1;
                for (int a = 0; a < ndim; a++) {
                    ext[a] = pick_extent(total ? scale / total : scale);
                    total *= ext[a] ? ext[a] : 1;
                }
                /* Every axis of the shape: outer, len, inner from the extents. */
                for (int a = 0; a < ndim; a++) {
                    uint64_t outer = 1, inner = 1;
                    for (int b = 0; b < a; b++) outer *= ext[b];
                    for (int b = a + 1; b < ndim; b++) inner *= ext[b];
                    axis_case(env, (coopreduce_op)op, all_dtypes[d], outer, ext[a], inner,
                              (int)rnd_below(AXIS_KINDS));
                }
            }
        }
    }
    coopreduce_set_mode(env->h, COOPREDUCE_MODE_DETERMINISTIC);
    coopreduce_set_mode(env->ref, COOPREDUCE_MODE_DETERMINISTIC);
}

void segments_sweep(const axis_env *env, uint64_t scale)
{
    for (int op = 0; op < COOPREDUCE_OP_COUNT; op++) {
        for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++) {
            /* Random lengths: empty ones now and then (for the ops that need an element,
             * only in some cases, so that the success path is checked too), one long one. */
            const uint64_t nseg = 1 + rnd_below(40);
            const int allow_empty = rnd_below(3) == 0;
            int64_t *off = xmalloc((nseg + 1) * sizeof *off);
            off[0] = (int64_t)rnd_below(5);
            const uint64_t longest = rnd_below(nseg);
            for (uint64_t k = 0; k < nseg; k++) {
                uint64_t l = k == longest ? scale / 2 + rnd_below(scale / 2 + 1) : rnd_below(300);
                if (l == 0 && !allow_empty) l = 1;
                off[k + 1] = off[k] + (int64_t)l;
            }
            const uint64_t n = (uint64_t)off[nseg] + rnd_below(4);
            segments_case(env, (coopreduce_op)op, all_dtypes[d], off, nseg, n,
                          (int)rnd_below(AXIS_KINDS));
            free(off);
        }
    }
}

/* One row of 4097 float32 / bfloat16 / float64 values, alone, in the middle of 7 rows and of
 * big_batch rows of other data, and along axis 0 of a matrix: the same bits every time (the 1-D
 * call's). */
void batch_invariance(const axis_env *env, uint64_t big_batch)
{
    static const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_BFLOAT16,
                                           COOPREDUCE_FLOAT64};
    static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM, COOPREDUCE_OP_NORM2, COOPREDUCE_OP_SUMSQ,
                                        COOPREDUCE_OP_MEAN, COOPREDUCE_OP_ARGMAX};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            const coopreduce_dtype dt = dts[d];
            const coopreduce_op op = ops[o];
            const size_t es = dt_size(dt), rs = coopreduce_op_result_size(op, dt, 0, NULL);
            const uint64_t len = test_quick ? 1000 : 4097;
            char *row = xmalloc(len * es), want[16], got[16];
            axis_fill(row, len, dt, 1);
            coopreduce_reduce(op, row, NULL, want, len, dt, env->ref, NULL);
            const uint64_t batches[] = {1, 7, big_batch};
            for (size_t b = 0; b < 3; b++) {
                const uint64_t rows = test_quick && batches[b] > 300 ? 300 : batches[b];
                const uint64_t at = rows / 2;
                for (int transposed = 0; transposed < 2; transposed++) {
                    char *x = xmalloc(rows * len * es);
                    axis_fill(x, rows * len, dt, 0);
                    for (uint64_t k = 0; k < len; k++) {
                        const uint64_t pos = transposed ? k * rows + at : at * len + k;
                        memcpy(x + pos * es, row + k * es, es);
                    }
                    void *dx = env->put(x, rows * len * es), *dr = env->put(NULL, rows * rs);
                    coopreduce_status s = transposed
                                              ? coopreduce_reduce_axis(op, dx, NULL, dr, 1, len,
                                                                       rows, dt, env->h, NULL)
                                              : coopreduce_reduce_axis(op, dx, NULL, dr, rows, len,
                                                                       1, dt, env->h, NULL);
                    env->sync();
                    char *res = xmalloc(rows * rs);
                    env->get(res, dr, rows * rs);
                    memcpy(got, res + at * rs, rs);
                    CHECK(s == COOPREDUCE_SUCCESS && memcmp(got, want, rs) == 0,
                          "%s %s %s: row %llu of %llu%s differs from the row alone (%s)", env->name,
                          op_name(op), dt_name(dt), (unsigned long long)at,
                          (unsigned long long)rows, transposed ? " (axis 0)" : "",
                          coopreduce_status_string(s));
                    env->drop(dx), env->drop(dr);
                    free(x), free(res);
                }
            }
            free(row);
        }
    }
}

/* The GPU kernels' paths, each on purpose (every float dtype, the canonical-order operations and
 * two order-independent ones):
 * rows of every length class (one 16-byte load or a few per row, one chunk row, partial and
 * full chunks, several chunks and two levels), columns (inner > 1) of one and of several
 * chunks, and segments of every length class with empty ones. Data kinds rotate, so special
 * values reach full chunks too (NORM2's three-class fallback). */
void kernel_paths_sweep(const axis_env *env, uint64_t budget)
{
    static const coopreduce_dtype dts[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64,
                                           COOPREDUCE_FLOAT16, COOPREDUCE_BFLOAT16};
    static const coopreduce_op ops[] = {COOPREDUCE_OP_SUM,   COOPREDUCE_OP_MEAN,
                                        COOPREDUCE_OP_SUMSQ, COOPREDUCE_OP_DOT,
                                        COOPREDUCE_OP_NORM2, COOPREDUCE_OP_MAX,
                                        COOPREDUCE_OP_ARGMIN};
    static const uint64_t lens[] = {1,    2,    3,    4,    5,    7,    8,    9,    15,
                                    16,   17,   31,   32,   33,   63,   64,   65,   127,
                                    128,  129,  200,  255,  256,  257,  1000, 2047, 2048,
                                    2049, 4095, 4096, 4097, 8191, 8192, 8193, 12293, 40000};
    static const uint64_t inners[] = {2, 3, 31, 32, 33, 70};
    int kind = (int)rnd_below(AXIS_KINDS);
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            const coopreduce_op op = ops[o];
            const coopreduce_dtype dt = dts[d];
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                const uint64_t len = lens[l];
                uint64_t outer = budget / len;
                if (outer > 300) outer = 37 + rnd_below(300);
                if (outer < 1) outer = 1;
                axis_case(env, op, dt, outer, len, 1, kind++ % AXIS_KINDS);
                if (l % 3 == 0 || len > 4000) {
                    const uint64_t inner = inners[rnd_below(sizeof inners / sizeof inners[0])];
                    uint64_t out2 = budget / (len * inner);
                    if (out2 > 3) out2 = 3;
                    if (out2 < 1) out2 = 1;
                    axis_case(env, op, dt, out2, len, inner, kind++ % AXIS_KINDS);
                }
            }
            /* Segments: short and long ones, empty ones, a long one of several chunks. */
            const uint64_t nseg = 20 + rnd_below(60);
            int64_t *off = xmalloc((nseg + 1) * sizeof *off);
            off[0] = (int64_t)rnd_below(9);
            /* In half the cases, one segment of more than 16 float32 chunks (and more than the
             * order-independent operations' kernel for many segments takes). */
            const uint64_t longest = rnd_below(2) ? rnd_below(nseg) : nseg;
            const int need = op == COOPREDUCE_OP_MAX || op == COOPREDUCE_OP_ARGMIN;
            for (uint64_t k = 0; k < nseg; k++) {
                const uint64_t r = rnd_below(10);
                const uint64_t n = k == longest ? 16 * 4096 + 1 + rnd_below(9000)
                                   : r == 0     ? (need ? 1 : 0)
                                   : r < 5      ? rnd_below(200)
                                   : r < 9      ? rnd_below(10000)
                                                : 10000 + rnd_below(budget / 4);
                off[k + 1] = off[k] + (int64_t)n;
            }
            segments_case(env, op, dt, off, nseg, (uint64_t)off[nseg] + rnd_below(3),
                          kind++ % AXIS_KINDS);
            free(off);
        }
    }
}
