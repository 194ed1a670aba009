/* test_methods_gpu.c — every reduction method (docs/METHODS.md) on the GPU, for float32,
 * float64 and int32.
 *
 *   test_methods_gpu           all checks; exits 77 (ctest: skipped) without CUDA or a GPU
 *   test_methods_gpu --quick   sizes <= 70000, 3 repeats, no > 2^31 case (compute-sanitizer)
 *
 * What is checked, for every method (canonical included) and the three dtypes:
 *  - correctness on many sizes and data kinds, fresh seeds. int32: the exact value of an int64
 *    loop in this file. Floats: |result - exact| <= gamma(d) * sum|x|, with the exact sum from
 *    ref_exact and d from the launch coopreduce_last_launch reports:
 *        d = ceil(n / (blocks * threads)) + blocks + threads + 64   (and never more than n + 64)
 *    (a thread's sequential adds, at most `threads` chained adds inside a block (shared-memory
 *    atomics), tree levels, at most `blocks` chained adds of the blocks' partials: atomics or the
 *    host loop); gamma(d) = d u / (1 - d u), u = 2^-24 or 2^-53. Float data made of small
 *    integers whose sum|x| fits the significand makes every partial sum of any order exact, so
 *    there the result must be exactly the exact sum: a lost or doubled element cannot hide in
 *    the rounding bound.
 *  - outputs poisoned (0xA5) before every call; the bytes after the result stay poisoned.
 *  - sum_to_host gives the device result's bits (deterministic methods) or a result within the
 *    bound (the others).
 *  - x one element off 16-byte alignment (and two, three for 4-byte types).
 *  - forced grids 1, 7, 64, 0.
 *  - coopreduce_method_deterministic: 1 => identical bits over repeated runs; 0 => the number
 *    of distinct results is printed (not a failure).
 *  - clusters unavailable (compute capability < 9, or COOPREDUCE_FEATURE_CLUSTERS disabled):
 *    COOPREDUCE_ERROR_NOT_SUPPORTED, a message, and the output untouched.
 *  - cooperative launch disabled: grid falls back (fell_back, notice); gridsync with a forced
 *    grid gives the cooperative launch's bits.
 *  - pipeline stages 1..8; 0 and 9 refused.
 *  - n = 0 gives +0.0 / 0; host memory refused (NOT_DEVICE_MEMORY); misaligned results;
 *    int32 n > 2^32 refused.
 *  - (not --quick) n = 2^31 + 12345 float32 and int32 with sums known by formula.
 *
 * Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "coopreduce.h"
#include "gen.h"
#include "gpu_util.h"
#include "ref_exact.h"
#include "util.h"

#ifndef COOPREDUCE_HAVE_CUDA
GPU_TEST_MAIN_WITHOUT_CUDA("test_methods_gpu")
#else

#define NMETHODS COOPREDUCE_METHOD_COUNT
#define NDTYPES 3

static const coopreduce_dtype dtypes[NDTYPES] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64,
                                                 COOPREDUCE_INT32};

static coopreduce_handle *gpu;
static coopreduce_gpu_props props;
static void *dx;                  /* device input: cap_elems 8-byte elements + 64 bytes */
static void *dout;                /* device result, 64 bytes */
static void *hx;                  /* host copy of the input, same size */
static uint64_t cap_elems;
static int quick;
static unsigned int disabled;     /* the COOPREDUCE_FEATURE_* flags currently disabled */
static uint64_t max_n;            /* largest sweep size */
static int repeats;               /* determinism runs */

/* The largest error / bound ratio seen per method and float dtype: how much room the bound
 * leaves (printed at the end; 0 when every result was exact). */
static double worst_ratio[NMETHODS][2];

static const char *mname(int m)
{
    const char *s = coopreduce_method_name((coopreduce_method)m);
    return s ? s : "(unknown method)";
}

/* The cluster method needs thread-block clusters: elsewhere it must refuse (checked in
 * clusters()), and the other sections skip it. */
static int runs_here(int m)
{
    return m != COOPREDUCE_METHOD_CLUSTER ||
           (props.cluster_launch && !(disabled & COOPREDUCE_FEATURE_CLUSTERS));
}

static int set_method(int m)
{
    coopreduce_status s = coopreduce_set_method(gpu, (coopreduce_method)m);
    return CHECK(s == COOPREDUCE_SUCCESS, "set_method(gpu, %s): status %d: %s", mname(m), (int)s,
                 coopreduce_last_error(gpu));
}

static void set_grid(int blocks)
{
    coopreduce_status s = coopreduce_set_grid_blocks(gpu, blocks);
    CHECK(s == COOPREDUCE_SUCCESS, "set_grid_blocks(%d): status %d", blocks, (int)s);
}

static void set_disabled(unsigned int f)
{
    coopreduce_status s = coopreduce_disable_features(gpu, f);
    if (CHECK(s == COOPREDUCE_SUCCESS, "disable_features(0x%x): status %d: %s", f, (int)s,
              coopreduce_last_error(gpu)))
        disabled = f;
}

/* The handle back to its defaults. */
static void reset_handle(void)
{
    set_method(COOPREDUCE_METHOD_CANONICAL);
    set_grid(0);
    set_disabled(0);
    CHECK(coopreduce_set_stages(gpu, 4) == COOPREDUCE_SUCCESS, "set_stages(4)");
}

/* Leaves a known message on the handle (a refused set_stages, which changes nothing), so that
 * fresh_error() can tell that a later failure wrote its own. */
static char marker[512];
static void mark_error(void)
{
    coopreduce_set_stages(gpu, 99);
    snprintf(marker, sizeof marker, "%s", coopreduce_last_error(gpu));
}

static int fresh_error(const char *ctx)
{
    const char *e = coopreduce_last_error(gpu);
    return CHECK(e[0] != '\0' && strcmp(e, marker) != 0, "%s: no message of its own (\"%s\")",
                 ctx, e);
}

/* ---------------------------------------------------------------- data sets */

enum {
    K_UNIFORM, K_NORMAL, K_SIGNED, K_ONES, /* the generator's kinds */
    K_SMALLINT,                            /* integers in [-M, M]: exact in any order (floats) */
    K_MIN, K_MAX, K_ALT,                   /* int32 extremes: INT32_MIN, INT32_MAX, alternating */
    K_COUNT
};
static const char *kind_names[K_COUNT] = {"uniform", "normal", "signed", "ones", "smallint",
                                          "all-min", "all-max", "alternating"};

typedef struct {
    coopreduce_dtype dt;
    uint64_t n, off;      /* the data lies at dx + off elements (hx + off on the host) */
    int kind;
    uint64_t seed;
    int exact;            /* floats: every partial sum of any order is exact */
    ref_exact ref;        /* floats: the exact sum */
    long double abs_sum;  /* floats: sum |x| (rounded up a little) */
    int64_t isum;         /* int32: the exact sum */
} dataset;

/* Writes element values of `kind` to p[0..n) and fills in the references. */
static void fill_and_reference(dataset *ds, void *p)
{
    uint64_t n = ds->n;
    coopreduce_dtype dt = ds->dt;
    int kind = ds->kind;
    ds->exact = 0;
    if (kind <= K_ONES) {
        static const cr_gen_kind gk[] = {CR_GEN_UNIFORM, CR_GEN_NORMAL, CR_GEN_SIGNED, CR_GEN_ONES};
        if (cr_gen_fill(p, 0, n, dt, gk[kind], ds->seed, gen_threads()) != 0)
            CHECK(0, "cr_gen_fill(%s, %s) failed", dt_name(dt), kind_names[kind]);
        if (kind == K_ONES) ds->exact = dt == COOPREDUCE_FLOAT64 || n <= (1u << 24);
    } else if (kind == K_SMALLINT) {
        uint64_t M = dt == COOPREDUCE_FLOAT32 ? (1u << 24) / n : 8;
        if (M > 8) M = 8;
        if (M == 0) M = 1; /* not exact then; the caller does not ask for this */
        for (uint64_t i = 0; i < n; i++) {
            int v = (int)(cr_gen_hash(ds->seed, i) % (2 * M + 1)) - (int)M;
            if (dt == COOPREDUCE_FLOAT32) ((float *)p)[i] = (float)v;
            else if (dt == COOPREDUCE_FLOAT64) ((double *)p)[i] = (double)v;
            else ((int32_t *)p)[i] = v;
        }
        ds->exact = dt == COOPREDUCE_FLOAT64 || n * M <= (1u << 24);
    } else {
        int32_t *q = p;
        for (uint64_t i = 0; i < n; i++)
            q[i] = kind == K_MIN ? INT32_MIN : kind == K_MAX ? INT32_MAX
                                                             : ((i & 1) ? INT32_MAX : INT32_MIN);
    }
    if (dt == COOPREDUCE_INT32) {
        const int32_t *q = p;
        int64_t s = 0; /* |sum| <= 2^31 n: no overflow for the n of this file */
        for (uint64_t i = 0; i < n; i++) s += q[i];
        ds->isum = s;
        return;
    }
    ref_exact_init(&ds->ref);
    long double a = 0;
    if (dt == COOPREDUCE_FLOAT32) {
        const float *q = p;
        ref_exact_add_f32_array(&ds->ref, q, n);
        for (uint64_t i = 0; i < n; i++) a += fabsl((long double)q[i]);
    } else {
        const double *q = p;
        ref_exact_add_f64_array(&ds->ref, q, n);
        for (uint64_t i = 0; i < n; i++) a += fabsl((long double)q[i]);
    }
    ds->abs_sum = a * (1.0L + 0x1p-30L); /* covers the long double rounding of the loop */
}

/* Generates the data set on the host and uploads it to dx + off. */
static int load(dataset *ds, coopreduce_dtype dt, uint64_t n, int kind, uint64_t off)
{
    memset(ds, 0, sizeof *ds);
    ds->dt = dt;
    ds->n = n;
    ds->off = off;
    ds->kind = kind;
    ds->seed = rnd();
    if (!CHECK((n + off) * dt_size(dt) <= cap_elems * 8, "data set too large")) return -1;
    void *h = (char *)hx + off * dt_size(dt);
    fill_and_reference(ds, h);
    return cuda_ok(cudaMemcpy((char *)dx + off * dt_size(dt), h, n * dt_size(dt),
                              cudaMemcpyHostToDevice), "upload") ? 0 : -1;
}

/* A kind for dt: exact == 1 asks for data whose float sums are exact in every order. */
static int pick_kind(coopreduce_dtype dt, uint64_t n, int exact)
{
    if (dt == COOPREDUCE_INT32) {
        static const int k[] = {K_UNIFORM, K_NORMAL, K_SIGNED, K_ONES, K_SMALLINT, K_MIN, K_MAX,
                                K_ALT, K_UNIFORM, K_SIGNED};
        return k[rnd() % (sizeof k / sizeof k[0])];
    }
    if (exact) {
        if (dt == COOPREDUCE_FLOAT64 || n <= (1u << 24)) return K_SMALLINT;
        return K_SIGNED; /* no exact float32 data of this length */
    }
    return (int)(rnd() % 3); /* uniform, normal, signed */
}

/* ---------------------------------------------------------------- one sum, and its checks */

typedef struct {
    uint64_t bits;               /* the result's bytes (result_size of them), zero-extended */
    coopreduce_launch_info info;
} outcome;

static void describe(char *buf, size_t cap, const dataset *ds, int m)
{
    snprintf(buf, cap, "%s %s n=%llu off=%llu %s seed=%llu", mname(m), dt_name(ds->dt),
             (unsigned long long)ds->n, (unsigned long long)ds->off, kind_names[ds->kind],
             (unsigned long long)ds->seed);
}

/* Runs the handle's method on the data set: into dout (poisoned first) or, to_host, into a
 * poisoned host variable. On success *o holds the result and the launch info. */
static coopreduce_status run(const dataset *ds, int to_host, outcome *o)
{
    size_t es = dt_size(ds->dt), rs = coopreduce_result_size(ds->dt);
    const void *x = (const char *)dx + ds->off * es;
    uint64_t buf[2] = {POISON64, POISON64};
    coopreduce_status s;
    memset(o, 0, sizeof *o);
    if (to_host) {
        s = coopreduce_sum_to_host(x, buf, ds->n, ds->dt, gpu, NULL);
    } else {
        if (!cuda_ok(cudaMemset(dout, POISON, 64), "poison")) return COOPREDUCE_ERROR_CUDA;
        s = coopreduce_sum(x, dout, ds->n, ds->dt, gpu, NULL);
        /* Read back even on failure: the poison must be intact then. */
        if (!cuda_ok(cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost), "copy result"))
            return COOPREDUCE_ERROR_CUDA;
    }
    if (s != COOPREDUCE_SUCCESS) {
        CHECK(buf[0] == POISON64 && buf[1] == POISON64,
              "a failed sum (status %d) wrote its result", (int)s);
        return s;
    }
    const unsigned char *b = (const unsigned char *)buf;
    int tail_ok = 1;
    for (size_t i = rs; i < 16; i++) tail_ok &= b[i] == POISON;
    CHECK(tail_ok, "%s n=%llu: bytes past the %zu-byte result were written", dt_name(ds->dt),
          (unsigned long long)ds->n, rs);
    memcpy(&o->bits, buf, rs);
    coopreduce_status li = coopreduce_last_launch(gpu, &o->info);
    CHECK(li == COOPREDUCE_SUCCESS, "last_launch: status %d", (int)li);
    return s;
}

/* The rounding-error bound of the launch that produced o (see the top of the file). */
static long double bound_for(const dataset *ds, const coopreduce_launch_info *info)
{
    uint64_t n = ds->n, d = n + 64;
    if (info->blocks >= 1 && info->threads >= 1) {
        uint64_t per = (uint64_t)info->blocks * (uint64_t)info->threads;
        uint64_t f = (n + per - 1) / per + (uint64_t)info->blocks + (uint64_t)info->threads + 64;
        if (f < d) d = f;
    }
    long double u = ds->dt == COOPREDUCE_FLOAT32 ? 0x1p-24L : 0x1p-53L;
    long double du = (long double)d * u;
    if (du >= 1.0L) return INFINITY;
    return du / (1.0L - du) * ds->abs_sum;
}

/* Checks the value (and, for n >= 1, the launch info) of one successful sum with method m.
 * Returns 1 when everything holds. */
static int verify(const dataset *ds, int m, const outcome *o, int to_host)
{
    char ctx[192];
    describe(ctx, sizeof ctx, ds, m);
    const char *via = to_host ? "to_host" : "device";
    int ok = 1;
    const coopreduce_launch_info *in = &o->info;
    if (ds->n >= 1) {
        ok &= CHECK((int)in->method == m, "%s %s: last_launch.method = %d", ctx, via,
                    (int)in->method);
        ok &= CHECK(in->blocks >= 1 && in->threads >= 1 && in->threads <= 1024,
                    "%s %s: last_launch reports %d blocks of %d threads", ctx, via, in->blocks,
                    in->threads);
        /* The tutorial methods' workspace holds one partial per block of at most 65536
         * blocks; only `block` and `twopass` have one block per 256 elements. */
        if (m != COOPREDUCE_METHOD_CANONICAL && m != COOPREDUCE_METHOD_BLOCK &&
            m != COOPREDUCE_METHOD_TWOPASS)
            ok &= CHECK(in->blocks <= 65536, "%s %s: %d blocks (more than 65536)", ctx, via,
                        in->blocks);
        if (m == COOPREDUCE_METHOD_BLOCK || m == COOPREDUCE_METHOD_TWOPASS)
            ok &= CHECK((uint64_t)in->blocks == (ds->n + 255) / 256,
                        "%s %s: %d blocks, not one per 256 elements", ctx, via, in->blocks);
        if (m == COOPREDUCE_METHOD_CLUSTER)
            ok &= CHECK(in->cluster_size >= 1, "%s %s: cluster_size %d", ctx, via,
                        in->cluster_size);
        else
            ok &= CHECK(in->cluster_size == 0, "%s %s: cluster_size %d without clusters", ctx, via,
                        in->cluster_size);
        if (!to_host)
            ok &= CHECK(in->host_sync == (m == COOPREDUCE_METHOD_BLOCK),
                        "%s: host_sync %d (only `block` waits for the GPU)", ctx, in->host_sync);
        if (in->fell_back)
            ok &= CHECK(in->notice[0] != '\0', "%s %s: fell back without a notice", ctx, via);
        if ((m == COOPREDUCE_METHOD_GRID || m == COOPREDUCE_METHOD_GRIDSYNC) &&
            props.cooperative_launch && !(disabled & COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH))
            ok &= CHECK(in->cooperative == 1 && in->fell_back == 0,
                        "%s %s: cooperative %d, fell_back %d on a GPU that launches "
                        "cooperatively", ctx, via, in->cooperative, in->fell_back);
    }
    if (ds->dt == COOPREDUCE_INT32) {
        int64_t got = (int64_t)o->bits;
        ok &= CHECK(got == ds->isum, "%s %s: %lld, exact %lld (off by %lld)", ctx, via,
                    (long long)got, (long long)ds->isum, (long long)(got - ds->isum));
        return ok;
    }
    double v = value_of_bits(o->bits, ds->dt);
    double exact = ref_exact_to_double(&ds->ref);
    if (!CHECK(isfinite(v), "%s %s: result %g (bits 0x%llx)", ctx, via, v,
               (unsigned long long)o->bits))
        return 0;
    ref_exact diff = ds->ref;
    ref_exact_add(&diff, -v);
    long double err = fabsl(ref_exact_to_long_double(&diff));
    long double bound = bound_for(ds, in);
    if (m >= 0 && m < NMETHODS && bound > 0 && isfinite((double)bound)) {
        double ratio = (double)(err / bound);
        double *w = &worst_ratio[m][ds->dt == COOPREDUCE_FLOAT64];
        if (ratio > *w) *w = ratio;
    }
    ok &= CHECK(err <= bound, "%s %s: %.17g, exact %.17g: error %Lg > bound %Lg (%d blocks x %d "
                "threads, sum|x| %Lg)", ctx, via, v, exact, err, bound, in->blocks, in->threads,
                ds->abs_sum);
    if (ds->exact)
        ok &= CHECK(v == exact, "%s %s: %.17g but every partial sum is exact: %.17g", ctx, via,
                    v, exact);
    return ok;
}

/* run + verify; on success *o (if given) holds the outcome. Returns 1 when all holds. */
static int sum_ok(const dataset *ds, int m, int to_host, outcome *o_out)
{
    outcome o;
    coopreduce_status s = run(ds, to_host, &o);
    if (o_out) *o_out = o;
    if (!CHECK(s == COOPREDUCE_SUCCESS, "%s %s n=%llu off=%llu %s: status %d: %s", mname(m),
               dt_name(ds->dt), (unsigned long long)ds->n, (unsigned long long)ds->off,
               to_host ? "to_host" : "device", (int)s, coopreduce_last_error(gpu)))
        return 0;
    return verify(ds, m, &o, to_host);
}

/* Every method that runs here on the loaded data set. to_host: also sum_to_host, compared
 * with the device result. Returns the number of methods that failed. */
static int all_methods(const dataset *ds, int to_host)
{
    int failed = 0;
    for (int m = 0; m < NMETHODS; m++) {
        if (!runs_here(m)) continue;
        if (!set_method(m)) { failed++; continue; }
        outcome dev, host;
        int ok = sum_ok(ds, m, 0, &dev);
        if (to_host && ok) {
            ok &= sum_ok(ds, m, 1, &host);
            if (ok && coopreduce_method_deterministic((coopreduce_method)m, ds->dt) == 1)
                ok &= CHECK(host.bits == dev.bits, "%s %s n=%llu: to_host 0x%llx != device 0x%llx",
                            mname(m), dt_name(ds->dt), (unsigned long long)ds->n,
                            (unsigned long long)host.bits, (unsigned long long)dev.bits);
        }
        failed += !ok;
    }
    return failed;
}

/* ---------------------------------------------------------------- the sections */

static void api_basics(void)
{
    coopreduce_handle *h = NULL;
    if (!CHECK(coopreduce_create_gpu(&h, 0) == COOPREDUCE_SUCCESS, "second handle: %s",
               coopreduce_last_error(NULL)))
        return;
    coopreduce_launch_info info, zero;
    memset(&info, POISON, sizeof info);
    memset(&zero, 0, sizeof zero);
    CHECK(coopreduce_last_launch(h, &info) == COOPREDUCE_SUCCESS, "last_launch on a new handle");
    CHECK(memcmp(&info, &zero, sizeof info) == 0, "last_launch before the first sum is not all "
          "zero (blocks %d, launches %d)", info.blocks, info.launches);
    CHECK(coopreduce_last_launch(h, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "last_launch(h, NULL) accepted");
    static const int bad_methods[] = {-1, COOPREDUCE_METHOD_COUNT, 1000};
    for (size_t k = 0; k < 3; k++)
        CHECK(coopreduce_set_method(h, (coopreduce_method)bad_methods[k]) ==
                  COOPREDUCE_ERROR_INVALID_ARGUMENT, "set_method(gpu, %d) accepted", bad_methods[k]);
    for (int m = 0; m < NMETHODS; m++)
        CHECK(coopreduce_set_method(h, (coopreduce_method)m) == COOPREDUCE_SUCCESS,
              "set_method(gpu, %s): %s", mname(m), coopreduce_last_error(h));
    static const int bad_stages[] = {0, 9, -1, 100};
    for (size_t k = 0; k < 4; k++) {
        coopreduce_status s = coopreduce_set_stages(h, bad_stages[k]);
        CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "set_stages(%d): status %d", bad_stages[k],
              (int)s);
    }
    for (int st = 1; st <= 8; st++)
        CHECK(coopreduce_set_stages(h, st) == COOPREDUCE_SUCCESS, "set_stages(%d)", st);
    CHECK(coopreduce_disable_features(h, COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH |
                                             COOPREDUCE_FEATURE_CLUSTERS) == COOPREDUCE_SUCCESS,
          "disable_features(both): %s", coopreduce_last_error(h));
    CHECK(coopreduce_disable_features(h, 0) == COOPREDUCE_SUCCESS, "disable_features(0)");
    CHECK(coopreduce_destroy(h) == COOPREDUCE_SUCCESS, "destroy");
}

static void empty_sums(void)
{
    for (int d = 0; d < NDTYPES; d++) {
        coopreduce_dtype dt = dtypes[d];
        size_t rs = coopreduce_result_size(dt);
        for (int m = 0; m < NMETHODS; m++) {
            if (!runs_here(m) || !set_method(m)) continue;
            for (int variant = 0; variant < 3; variant++) {
                uint64_t buf[2] = {POISON64, POISON64};
                coopreduce_status s;
                if (variant < 2) {
                    cudaMemset(dout, POISON, 64);
                    s = coopreduce_sum(variant ? NULL : dx, dout, 0, dt, gpu, NULL);
                    cuda_ok(cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost), "copy");
                } else {
                    s = coopreduce_sum_to_host(dx, buf, 0, dt, gpu, NULL);
                }
                uint64_t want_tail = POISON64;
                int ok = s == COOPREDUCE_SUCCESS;
                unsigned char zeros[8] = {0};
                ok = ok && memcmp(buf, zeros, rs) == 0;
                ok = ok && (rs == 8 || memcmp((char *)buf + 4, &want_tail, 4) == 0) &&
                     buf[1] == POISON64;
                CHECK(ok, "%s %s n=0 (%s): status %d, result 0x%016llx 0x%016llx", mname(m),
                      dt_name(dt), variant == 0 ? "x valid" : variant == 1 ? "x NULL" : "to_host",
                      (int)s, (unsigned long long)buf[0], (unsigned long long)buf[1]);
            }
        }
    }
    reset_handle();
}

static uint64_t log_uniform(uint64_t hi)
{
    /* 1 + a random number of up to log2(hi) bits */
    unsigned bits = 1;
    while (bits < 63 && (1ull << bits) < hi) bits++;
    uint64_t n = 1 + (rnd() >> (64 - 1 - (unsigned)(rnd() % bits)));
    return n > hi ? hi : n;
}

static void sweep(void)
{
    static const uint64_t full_sizes[] = {1, 2, 3, 31, 255, 256, 257, 1023, 4097, 65537, 1000003,
                                          1u << 20, (1u << 24) + 1};
    static const uint64_t to_host_sizes[] = {1, 257, 65537, 1000003};
    const size_t nf = sizeof full_sizes / sizeof full_sizes[0];
    const int extra = quick ? 2 : 24;
    for (int d = 0; d < NDTYPES; d++) {
        coopreduce_dtype dt = dtypes[d];
        int failures = 0;
        for (size_t i = 0; i < nf + (size_t)extra && failures < 8; i++) {
            uint64_t n = i < nf ? full_sizes[i] : log_uniform(max_n);
            if (n > max_n) continue;
            int th = 0;
            for (size_t k = 0; k < sizeof to_host_sizes / sizeof to_host_sizes[0]; k++)
                th |= n == to_host_sizes[k];
            /* Full: a random kind and an exact one for every size; quick: one, in turn. */
            for (int e = 0; e < 2; e++) {
                if (quick && e != (int)(i & 1)) continue;
                dataset ds;
                if (load(&ds, dt, n, pick_kind(dt, n, e), 0)) return;
                failures += all_methods(&ds, th) != 0;
            }
        }
    }
    reset_handle();
}

static void misaligned(void)
{
    static const uint64_t full_sizes[] = {1, 5, 4097, 1000003};
    static const uint64_t quick_sizes[] = {1, 5, 4097, 65537};
    const uint64_t *sizes = quick ? quick_sizes : full_sizes;
    for (int d = 0; d < NDTYPES; d++)
        for (int i = 0; i < 4; i++) {
            dataset ds;
            if (load(&ds, dtypes[d], sizes[i], pick_kind(dtypes[d], sizes[i], i & 1), 1)) return;
            all_methods(&ds, 0);
        }
    /* 8 and 12 bytes off 16 for the 4-byte types. */
    for (uint64_t off = 2; off < 4; off++)
        for (int d = 0; d < NDTYPES; d += 2) {
            dataset ds;
            if (load(&ds, dtypes[d], 4099 + off, pick_kind(dtypes[d], 4099, 1), off)) return;
            all_methods(&ds, 0);
        }
    reset_handle();
}

/* Forced grids: still correct, and the method launches no more blocks than forced (methods.h:
 * "clamped to what the method can run"), except `block` and `twopass`, whose grid is one
 * block per 256 elements by design, and `cluster`, whose grid is a whole number of clusters. */
static void forced_grids(void)
{
    static const int grids[] = {1, 7, 64, 0};
    static const uint64_t full_sizes[] = {4097, 1000003};
    for (int c = 0; c < (quick ? NDTYPES : 2 * NDTYPES); c++) {
        const int d = c % NDTYPES;
        const uint64_t n = quick ? 65537 : full_sizes[c / NDTYPES];
        dataset ds;
        if (load(&ds, dtypes[d], n, pick_kind(dtypes[d], n, c & 1), 0)) return;
        for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
            set_grid(grids[g]);
            for (int m = 0; m < NMETHODS; m++) {
                if (!runs_here(m) || !set_method(m)) continue;
                outcome o;
                if (!sum_ok(&ds, m, 0, &o)) {
                    printf("  (with the grid forced to %d blocks)\n", grids[g]);
                    continue;
                }
                int b = o.info.blocks, want_max = grids[g];
                if (grids[g] == 0) continue;
                /* (verify() checked block's and twopass's one block per 256 elements) */
                if (m == COOPREDUCE_METHOD_BLOCK || m == COOPREDUCE_METHOD_TWOPASS) continue;
                if (m == COOPREDUCE_METHOD_CLUSTER && o.info.cluster_size > 1)
                    want_max = (want_max + o.info.cluster_size - 1) / o.info.cluster_size *
                               o.info.cluster_size;
                CHECK(b >= 1 && b <= want_max, "%s %s grid forced to %d: launched %d blocks",
                      mname(m), dt_name(dtypes[d]), grids[g], b);
            }
        }
        set_grid(0);
    }
    reset_handle();
}

static uint64_t pick_unround_n(uint64_t lo, uint64_t hi)
{
    uint64_t n = lo + rnd() % (hi - lo);
    while (n % 2 == 0 || n % 3 == 0 || n % 5 == 0 || n % 7 == 0) n++;
    return n;
}

static void determinism(void)
{
    const uint64_t n = quick ? pick_unround_n(60000, 70000) : pick_unround_n(2900000, 3100000);
    uint64_t *seen = malloc((size_t)repeats * sizeof *seen);
    if (!CHECK(seen != NULL, "malloc")) return;
    for (int d = 0; d < NDTYPES; d++) {
        coopreduce_dtype dt = dtypes[d];
        dataset ds;
        if (load(&ds, dt, n, dt == COOPREDUCE_INT32 ? K_UNIFORM : K_SIGNED, 0)) break;
        for (int m = 0; m < NMETHODS; m++) {
            if (!runs_here(m) || !set_method(m)) continue;
            int det = coopreduce_method_deterministic((coopreduce_method)m, dt);
            CHECK(det == 0 || det == 1, "method_deterministic(%s, %s) = %d", mname(m), dt_name(dt),
                  det);
            int distinct = 0, differ = 0, ran = 0;
            for (int r = 0; r < repeats; r++) {
                outcome o;
                if (!sum_ok(&ds, m, 0, &o)) break;
                seen[ran++] = o.bits;
                int is_new = 1;
                for (int k = 0; k < ran - 1; k++) is_new &= seen[k] != o.bits;
                distinct += is_new;
                differ += o.bits != seen[0];
            }
            if (det == 1)
                CHECK(differ == 0, "%s %s n=%llu seed=%llu: deterministic, but %d of %d runs "
                      "differ from the first (%d distinct results)", mname(m), dt_name(dt),
                      (unsigned long long)n, (unsigned long long)ds.seed, differ, ran, distinct);
            else
                printf("determinism: %s %s n=%llu: %d distinct result%s in %d runs (documented "
                       "as not deterministic)\n", mname(m), dt_name(dt), (unsigned long long)n,
                       distinct, distinct == 1 ? "" : "s", ran);
        }
    }
    free(seen);
    reset_handle();
}

/* A refused cluster sum: NOT_SUPPORTED, its own message, device and host outputs untouched. */
static void expect_cluster_refused(const dataset *ds, const char *why)
{
    char ctx[160];
    snprintf(ctx, sizeof ctx, "cluster %s n=%llu (%s)", dt_name(ds->dt), (unsigned long long)ds->n,
             why);
    for (int to_host = 0; to_host < 2; to_host++) {
        outcome o;
        mark_error();
        coopreduce_status s = run(ds, to_host, &o); /* checks the poison on failure */
        CHECK(s == COOPREDUCE_ERROR_NOT_SUPPORTED, "%s %s: status %d, expected NOT_SUPPORTED "
              "(11)", ctx, to_host ? "to_host" : "device", (int)s);
        if (s != COOPREDUCE_SUCCESS) fresh_error(ctx);
    }
    /* Nothing may have been enqueued either: after the device is idle, still poison. */
    uint64_t buf[2] = {0, 0};
    cuda_ok(cudaDeviceSynchronize(), "synchronise");
    cuda_ok(cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost), "copy");
    CHECK(buf[0] == POISON64 && buf[1] == POISON64, "%s: the output was written (0x%016llx)",
          ctx, (unsigned long long)buf[0]);
}

static void clusters(void)
{
    const uint64_t n = quick ? 65537 : 1000003;
    for (int d = 0; d < NDTYPES; d++) {
        dataset ds;
        if (load(&ds, dtypes[d], n, pick_kind(dtypes[d], n, 0), 0)) return;
        if (!set_method(COOPREDUCE_METHOD_CLUSTER)) return;
        if (!props.cluster_launch) expect_cluster_refused(&ds, "GPU without clusters");
        set_disabled(COOPREDUCE_FEATURE_CLUSTERS);
        expect_cluster_refused(&ds, "clusters disabled");
        /* The other methods do not care. */
        set_method(COOPREDUCE_METHOD_MULTILEVEL);
        sum_ok(&ds, COOPREDUCE_METHOD_MULTILEVEL, 0, NULL);
        set_method(COOPREDUCE_METHOD_CLUSTER);
        set_disabled(0);
        if (props.cluster_launch) {
            outcome o;
            if (sum_ok(&ds, COOPREDUCE_METHOD_CLUSTER, 0, &o))
                CHECK(o.info.cluster_size >= 1 && o.info.fell_back == 0,
                      "cluster re-enabled: cluster_size %d, fell_back %d", o.info.cluster_size,
                      o.info.fell_back);
        } else {
            expect_cluster_refused(&ds, "GPU without clusters, nothing disabled");
        }
    }
    reset_handle();
}

static void cooperative(void)
{
    const uint64_t n = quick ? 65537 : 1000003;
    const int forced = 64;
    for (int d = 0; d < NDTYPES; d++) {
        coopreduce_dtype dt = dtypes[d];
        dataset ds;
        if (load(&ds, dt, n, pick_kind(dt, n, 0), 0)) return;
        /* With cooperative launch (when the GPU has it): verify() requires cooperative == 1. */
        outcome grid_coop, gs_coop, gs_fb, o;
        set_method(COOPREDUCE_METHOD_GRID);
        sum_ok(&ds, COOPREDUCE_METHOD_GRID, 0, &grid_coop);
        set_method(COOPREDUCE_METHOD_GRIDSYNC);
        sum_ok(&ds, COOPREDUCE_METHOD_GRIDSYNC, 0, &o);
        set_grid(forced);
        int have = sum_ok(&ds, COOPREDUCE_METHOD_GRIDSYNC, 0, &gs_coop);
        if (!props.cooperative_launch)
            CHECK(gs_coop.info.cooperative == 0 && gs_coop.info.fell_back == 1,
                  "gridsync on a GPU without cooperative launch: cooperative %d, fell_back %d",
                  gs_coop.info.cooperative, gs_coop.info.fell_back);

        /* Without: the fallbacks. */
        set_disabled(COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH);
        if (sum_ok(&ds, COOPREDUCE_METHOD_GRIDSYNC, 0, &gs_fb)) {
            CHECK(gs_fb.info.cooperative == 0 && gs_fb.info.fell_back == 1 &&
                      gs_fb.info.notice[0] != '\0' && gs_fb.info.launches >= 2,
                  "gridsync %s without cooperative launch: cooperative %d, fell_back %d, "
                  "launches %d, notice \"%s\"", dt_name(dt), gs_fb.info.cooperative,
                  gs_fb.info.fell_back, gs_fb.info.launches, gs_fb.info.notice);
            if (have) {
                CHECK(gs_fb.info.blocks == gs_coop.info.blocks, "gridsync %s forced to %d: %d "
                      "blocks cooperatively, %d in the fallback", dt_name(dt), forced,
                      gs_coop.info.blocks, gs_fb.info.blocks);
                CHECK(gs_fb.bits == gs_coop.bits, "gridsync %s n=%llu seed=%llu grid %d: "
                      "fallback 0x%llx != cooperative 0x%llx", dt_name(dt), (unsigned long long)n,
                      (unsigned long long)ds.seed, forced, (unsigned long long)gs_fb.bits,
                      (unsigned long long)gs_coop.bits);
                if (gs_coop.info.cooperative)
                    CHECK(gs_fb.info.launches > gs_coop.info.launches, "gridsync %s: the "
                          "two-kernel fallback reports %d launches, the cooperative kernel %d",
                          dt_name(dt), gs_fb.info.launches, gs_coop.info.launches);
            }
        }
        /* The fallback is deterministic too. */
        if (sum_ok(&ds, COOPREDUCE_METHOD_GRIDSYNC, 0, &o))
            CHECK(o.bits == gs_fb.bits, "gridsync fallback %s: two runs differ", dt_name(dt));
        for (int g = 0; g < 2; g++) {
            set_grid(g ? forced : 0);
            set_method(COOPREDUCE_METHOD_GRIDSYNC);
            sum_ok(&ds, COOPREDUCE_METHOD_GRIDSYNC, 0, NULL);
            set_method(COOPREDUCE_METHOD_GRID);
            for (int to_host = 0; to_host < 2; to_host++)
                if (sum_ok(&ds, COOPREDUCE_METHOD_GRID, to_host, &o))
                    CHECK(o.info.cooperative == 0 && o.info.fell_back == 1 &&
                              o.info.notice[0] != '\0',
                          "grid %s (grid %d, %s) without cooperative launch: cooperative %d, "
                          "fell_back %d, notice \"%s\"", dt_name(dt), g ? forced : 0,
                          to_host ? "to_host" : "device", o.info.cooperative, o.info.fell_back,
                          o.info.notice);
        }
        /* The flag changes nothing for a method that never launches cooperatively. */
        set_method(COOPREDUCE_METHOD_TWOPASS);
        sum_ok(&ds, COOPREDUCE_METHOD_TWOPASS, 0, NULL);
        set_disabled(0);
        set_grid(0);
        /* And back: cooperative again. */
        set_method(COOPREDUCE_METHOD_GRID);
        sum_ok(&ds, COOPREDUCE_METHOD_GRID, 0, NULL);
    }
    reset_handle();
}

static void pipeline(void)
{
    static const uint64_t full_sizes[] = {257, 4097, 1000003};
    static const uint64_t quick_sizes[] = {257, 4097, 65537};
    const uint64_t *sizes = quick ? quick_sizes : full_sizes;
    if (!set_method(COOPREDUCE_METHOD_PIPELINE)) return;
    for (int d = 0; d < NDTYPES; d++)
        for (int i = 0; i < 3; i++) {
            dataset ds;
            /* The largest size one element off 16-byte alignment. */
            if (load(&ds, dtypes[d], sizes[i], pick_kind(dtypes[d], sizes[i], i != 1),
                     i == 2 ? 1 : 0))
                return;
            for (int st = 1; st <= 8; st++) {
                if (!CHECK(coopreduce_set_stages(gpu, st) == COOPREDUCE_SUCCESS,
                           "set_stages(%d): %s", st, coopreduce_last_error(gpu)))
                    continue;
                if (!sum_ok(&ds, COOPREDUCE_METHOD_PIPELINE, 0, NULL))
                    printf("  (with %d pipeline stages)\n", st);
            }
        }
    static const int bad[] = {0, 9, -1, 64};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        mark_error();
        coopreduce_status s = coopreduce_set_stages(gpu, bad[k]);
        CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "set_stages(%d): status %d", bad[k],
              (int)s);
    }
    /* A refused value leaves the setting as it was: the pipeline still works. */
    CHECK(coopreduce_set_stages(gpu, 3) == COOPREDUCE_SUCCESS, "set_stages(3)");
    coopreduce_set_stages(gpu, 0);
    dataset ds;
    if (!load(&ds, COOPREDUCE_FLOAT32, 70001 > max_n ? max_n : 70001, K_SMALLINT, 0))
        sum_ok(&ds, COOPREDUCE_METHOD_PIPELINE, 0, NULL);
    reset_handle();
}

static void bad_input(void)
{
    const uint64_t n = 1000;
    int32_t *host = malloc(n * sizeof(double));
    if (!CHECK(host != NULL, "malloc")) return;
    for (uint64_t i = 0; i < n; i++) host[i] = (int32_t)i;
    dataset ds;
    if (load(&ds, COOPREDUCE_FLOAT32, n, K_SMALLINT, 0)) { free(host); return; }
    for (int m = 0; m < NMETHODS; m++) {
        /* A method that cannot run here may refuse with NOT_SUPPORTED before looking at the
         * pointers (the header does not order the checks): clusters() covers it. */
        if (!runs_here(m) || !set_method(m)) continue;
        /* A successful sum first: its launch info must survive the failures below. */
        outcome good;
        coopreduce_launch_info before, after;
        int have_good = sum_ok(&ds, m, 0, &good);
        coopreduce_last_launch(gpu, &before);
        for (int d = 0; d < NDTYPES; d++) {
            coopreduce_dtype dt = dtypes[d];
            char ctx[96];
            uint64_t buf[2];
            snprintf(ctx, sizeof ctx, "%s %s", mname(m), dt_name(dt));
            /* Plain host memory as x. */
            cudaMemset(dout, POISON, 64);
            mark_error();
            coopreduce_status s = coopreduce_sum(host, dout, n, dt, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "%s: host x: status %d", ctx, (int)s);
            fresh_error(ctx);
            cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost);
            CHECK(buf[0] == POISON64 && buf[1] == POISON64, "%s: host x: output written", ctx);
            buf[0] = buf[1] = POISON64;
            s = coopreduce_sum_to_host(host, buf, n, dt, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "%s: to_host, host x: status %d", ctx,
                  (int)s);
            CHECK(buf[0] == POISON64, "%s: to_host, host x: result written", ctx);
            /* Plain host memory as the device result. */
            buf[0] = buf[1] = POISON64;
            s = coopreduce_sum(dx, buf, n, dt, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY, "%s: host result: status %d", ctx,
                  (int)s);
            CHECK(buf[0] == POISON64, "%s: host result written", ctx);
            /* x not aligned to the element; the result not aligned to the result size. */
            cudaMemset(dout, POISON, 64);
            s = coopreduce_sum((char *)dx + 2, dout, n, dt, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "%s: x at +2 bytes: status %d", ctx, (int)s);
            if (coopreduce_result_size(dt) == 8) {
                s = coopreduce_sum(dx, (char *)dout + 4, n, dt, gpu, NULL);
                CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "%s: result at +4 bytes: status %d", ctx,
                      (int)s);
            }
            cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost);
            CHECK(buf[0] == POISON64 && buf[1] == POISON64, "%s: misaligned: output written", ctx);
        }
        /* int32 beyond 2^32 elements, refused before anything is read (dx is far smaller). */
        static const uint64_t too_many[] = {(1ull << 32) + 1, UINT64_MAX};
        for (int k = 0; k < 2; k++) {
            uint64_t buf[2];
            cudaMemset(dout, POISON, 64);
            mark_error();
            coopreduce_status s = coopreduce_sum(dx, dout, too_many[k], COOPREDUCE_INT32, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s int32 n=%llu: status %d", mname(m),
                  (unsigned long long)too_many[k], (int)s);
            fresh_error("int32 n > 2^32");
            cuda_ok(cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost), "copy");
            CHECK(buf[0] == POISON64, "%s int32 n=%llu: output written", mname(m),
                  (unsigned long long)too_many[k]);
        }
        {
            cudaMemset(dout, POISON, 64);
            coopreduce_status s = coopreduce_sum(dx, dout, n, COOPREDUCE_DTYPE_COUNT, gpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "%s dtype %d (the count): status %d",
                  mname(m), (int)COOPREDUCE_DTYPE_COUNT,
                  (int)s);
        }
        coopreduce_last_launch(gpu, &after);
        if (have_good)
            CHECK(memcmp(&before, &after, sizeof before) == 0, "%s: failed sums changed "
                  "last_launch (blocks %d -> %d)", mname(m), before.blocks, after.blocks);
        /* A float32 result 4 bytes into dout: fine, and only those 4 bytes are written. */
        {
            uint64_t buf[2];
            cudaMemset(dout, POISON, 64);
            coopreduce_status s = coopreduce_sum(dx, (char *)dout + 4, n, COOPREDUCE_FLOAT32, gpu,
                                                 NULL);
            cuda_ok(cudaMemcpy(buf, dout, 16, cudaMemcpyDeviceToHost), "copy");
            uint32_t w[4];
            memcpy(w, buf, 16);
            CHECK(s == COOPREDUCE_SUCCESS && w[0] == 0xA5A5A5A5u && w[2] == 0xA5A5A5A5u &&
                      w[3] == 0xA5A5A5A5u &&
                      (double)f32_from_bits(w[1]) == ref_exact_to_double(&ds.ref),
                  "%s float32 result at dout + 4: status %d, words %08x %08x %08x %08x", mname(m),
                  (int)s, w[0], w[1], w[2], w[3]);
        }
    }
    free(host);
    reset_handle();
}

/* Fills d[0..n) (elements of es bytes) with a pattern of period `period` by uploading `block`
 * elements (a multiple of the period) and doubling on the device. */
static int fill_periodic(void *d, uint64_t n, size_t es, const void *block, uint64_t block_elems)
{
    uint64_t have = block_elems < n ? block_elems : n;
    if (!cuda_ok(cudaMemcpy(d, block, have * es, cudaMemcpyHostToDevice), "upload pattern"))
        return -1;
    while (have < n) {
        uint64_t c = have < n - have ? have : n - have;
        if (!cuda_ok(cudaMemcpy((char *)d + have * es, d, c * es, cudaMemcpyDeviceToDevice),
                     "replicate pattern"))
            return -1;
        have += c;
    }
    return 0;
}

static double huge_f32_value(uint64_t i) { return (double)((float)((int)(i % 7) - 3) * 0.5f); }
static int32_t huge_i32_value(uint64_t i)
{
    return (int32_t)(i % 5) - 2 + (i % 3 == 0 ? 1000000 : 0);
}

/* Spot checks of the device data against the formula: the start, the end, random windows. */
static int check_pattern(const void *d, uint64_t n, coopreduce_dtype dt)
{
    enum { W = 4096 };
    int32_t buf[W];
    int bad = 0;
    for (int k = 0; k < 6 && !bad; k++) {
        uint64_t start = k == 0 ? 0 : k == 1 ? n - W : rnd() % (n - W);
        if (!cuda_ok(cudaMemcpy(buf, (const char *)d + start * 4, sizeof buf,
                                cudaMemcpyDeviceToHost), "copy back"))
            return -1;
        for (uint64_t i = 0; i < W && !bad; i++) {
            uint64_t g = start + i;
            if (dt == COOPREDUCE_FLOAT32) {
                float f;
                memcpy(&f, &buf[i], 4);
                bad = (double)f != huge_f32_value(g);
            } else {
                bad = buf[i] != huge_i32_value(g);
            }
            if (bad) CHECK(0, "the > 2^31 %s data is wrong at %llu", dt_name(dt), (unsigned long long)g);
        }
    }
    return bad ? -1 : 0;
}

/* Sums of the huge patterns over elements [0, k), by formula: whole periods, then the rest. */
static void huge_prefix_f32(uint64_t k, long double *sum, long double *abs_sum)
{
    long double period = 0, period_abs = 0, rest = 0, rest_abs = 0;
    for (uint64_t j = 0; j < 7; j++) {
        period += huge_f32_value(j);
        period_abs += fabs(huge_f32_value(j));
        if (j < k % 7) rest += huge_f32_value(j), rest_abs += fabs(huge_f32_value(j));
    }
    *sum = (long double)(k / 7) * period + rest;           /* exact: multiples of 1/2 < 2^40 */
    *abs_sum = (long double)(k / 7) * period_abs + rest_abs;
}

static int64_t huge_prefix_i32(uint64_t k)
{
    /* (i mod 5) - 2 sums to 0 over each 5 consecutive i from a multiple of 5; 10^6 for every
     * multiple of 3 below k. */
    int64_t tail = 0;
    for (uint64_t j = 0; j < k % 5; j++) tail += (int64_t)j - 2;
    return tail + 1000000 * (int64_t)((k + 2) / 3);
}

/* More than 2^31 elements, every method: float32 within the bound of a sum known by formula,
 * int32 exactly. Besides the whole n elements, n - 1 of them from x[0] and from x[1] (one
 * element off 16-byte alignment): the last element of the whole array happens to be 0 in int32,
 * so only these would notice an implementation that drops the last element. */
static void huge(void)
{
    const uint64_t n = (1ull << 31) + 12345;
    const size_t bytes = n * 4;
    if (!gpu_room_for(bytes)) return;
    void *d = NULL;
    if (!cuda_ok(cudaMalloc(&d, bytes), "cudaMalloc 8.6 GB")) return;
    const uint64_t block_elems = 15ull * 7 << 16; /* a multiple of both periods (7 and 15) */
    void *block = malloc(block_elems * 4);
    if (!CHECK(block != NULL, "malloc")) { cudaFree(d); return; }
    static const struct { uint64_t minus, off; } variants[] = {{0, 0}, {1, 0}, {1, 1}};
    void *keep = dx;
    for (int d32 = 0; d32 < 2; d32++) {
        coopreduce_dtype dt = d32 ? COOPREDUCE_INT32 : COOPREDUCE_FLOAT32;
        for (uint64_t i = 0; i < block_elems; i++) {
            if (d32) ((int32_t *)block)[i] = huge_i32_value(i);
            else ((float *)block)[i] = (float)huge_f32_value(i);
        }
        if (fill_periodic(d, n, 4, block, block_elems) || check_pattern(d, n, dt)) continue;
        dx = d; /* run() reads dx */
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            dataset ds;
            memset(&ds, 0, sizeof ds);
            ds.dt = dt;
            ds.off = variants[v].off;
            ds.n = n - variants[v].minus; /* x[off .. off + n - minus) lies inside d */
            ds.kind = K_SMALLINT;
            uint64_t a = ds.off, b = ds.off + ds.n;
            if (d32) {
                ds.isum = huge_prefix_i32(b) - huge_prefix_i32(a);
                printf("int32 x[%llu .. %llu): exact sum %lld\n", (unsigned long long)a,
                       (unsigned long long)b, (long long)ds.isum);
            } else {
                long double sa, sb, aa, ab;
                huge_prefix_f32(a, &sa, &aa);
                huge_prefix_f32(b, &sb, &ab);
                ref_exact_init(&ds.ref);
                ref_exact_add(&ds.ref, (double)(sb - sa)); /* small multiple of 1/2: exact */
                ds.abs_sum = ab - aa;
                printf("float32 x[%llu .. %llu): exact sum %.17g, sum|x| %.17Lg\n",
                       (unsigned long long)a, (unsigned long long)b,
                       ref_exact_to_double(&ds.ref), ds.abs_sum);
            }
            for (int m = 0; m < NMETHODS; m++) {
                if (!runs_here(m) || !set_method(m)) continue;
                double t0 = now_s();
                outcome o;
                if (sum_ok(&ds, m, 0, &o)) {
                    if (d32)
                        printf("  %-10s %lld (%d blocks, %.1f ms)\n", mname(m),
                               (long long)o.bits, o.info.blocks, 1e3 * (now_s() - t0));
                    else
                        printf("  %-10s %.17g (%d blocks, %.1f ms)\n", mname(m),
                               value_of_bits(o.bits, dt), o.info.blocks, 1e3 * (now_s() - t0));
                }
            }
        }
        dx = keep;
    }
    free(block);
    cuda_ok(cudaFree(d), "cudaFree 8.6 GB");
    reset_handle();
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else {
            printf("usage: test_methods_gpu [--quick]\n");
            return 2;
        }
    }
    max_n = quick ? 70000 : (1u << 24) + 1;
    repeats = quick ? 3 : 50;
    if (gpu_test_open("test_methods_gpu", &gpu, &props)) return 77;
    if (quick) printf("test_methods_gpu: --quick\n");
    test_seed_init("test_methods_gpu");
    cap_elems = max_n + 64;
    hx = malloc(cap_elems * 8);
    if (!CHECK(hx != NULL, "malloc") ||
        !cuda_ok(cudaMalloc(&dx, cap_elems * 8 + 64), "cudaMalloc input") ||
        !cuda_ok(cudaMalloc(&dout, 64), "cudaMalloc result"))
        return check_summary("test_methods_gpu");

    static const test_section sections[] = {
        {"api", api_basics},         {"empty", empty_sums},     {"bad input", bad_input},
        {"clusters", clusters},      {"cooperative", cooperative}, {"pipeline", pipeline},
        {"sweep", sweep},            {"misaligned", misaligned}, {"forced grids", forced_grids},
        {"determinism", determinism}, {"huge", huge},
    };
    run_sections(sections, sizeof sections / sizeof sections[0], quick ? huge : NULL);
    printf("largest error / bound seen (float32, float64):\n");
    for (int m = 0; m < NMETHODS; m++)
        printf("  %-10s %.3g  %.3g\n", mname(m), worst_ratio[m][0], worst_ratio[m][1]);
    cudaFree(dx);
    cudaFree(dout);
    free(hx);
    CHECK(coopreduce_destroy(gpu) == COOPREDUCE_SUCCESS, "destroy: %s", coopreduce_last_error(NULL));
    return check_summary("test_methods_gpu");
}
#endif
