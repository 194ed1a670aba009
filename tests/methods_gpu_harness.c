/* methods_gpu_harness.c — test_methods_gpu's shared state, data sets and checked sums
 * (methods_gpu.h). The error bound of the tutorial methods is described at the top of
 * test_methods_gpu.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "methods_gpu.h"
#include "util.h"

const coopreduce_dtype dtypes[NDTYPES] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64, COOPREDUCE_INT32};

coopreduce_handle *gpu;
coopreduce_gpu_props props;
void *dx;   /* device input: cap_elems 8-byte elements + 64 bytes */
void *dout; /* device result, 64 bytes */
void *hx;   /* host copy of the input, same size */
uint64_t cap_elems;
int quick;
unsigned int disabled; /* the COOPREDUCE_FEATURE_* flags currently disabled */
uint64_t max_n;        /* largest sweep size */
int repeats;           /* determinism runs */

double worst_ratio[NMETHODS][2];

const char *mname(int m)
{
    const char *s = coopreduce_method_name((coopreduce_method)m);
    return s ? s : "(unknown method)";
}

/* The cluster method needs thread-block clusters: elsewhere it must refuse (checked in
 * clusters()), and the other sections skip it. */
int runs_here(int m)
{
    return m != COOPREDUCE_METHOD_CLUSTER ||
           (props.cluster_launch && !(disabled & COOPREDUCE_FEATURE_CLUSTERS));
}

int set_method(int m)
{
    coopreduce_status s = coopreduce_set_method(gpu, (coopreduce_method)m);
    return CHECK(s == COOPREDUCE_SUCCESS, "set_method(gpu, %s): status %d: %s", mname(m), (int)s,
                 coopreduce_last_error(gpu));
}

void set_grid(int blocks)
{
    coopreduce_status s = coopreduce_set_grid_blocks(gpu, blocks);
    CHECK(s == COOPREDUCE_SUCCESS, "set_grid_blocks(%d): status %d", blocks, (int)s);
}

void set_disabled(unsigned int f)
{
    coopreduce_status s = coopreduce_disable_features(gpu, f);
    if (CHECK(s == COOPREDUCE_SUCCESS, "disable_features(0x%x): status %d: %s", f, (int)s,
              coopreduce_last_error(gpu)))
        disabled = f;
}

/* The handle back to its defaults. */
void reset_handle(void)
{
    set_method(COOPREDUCE_METHOD_CANONICAL);
    set_grid(0);
    set_disabled(0);
    CHECK(coopreduce_set_stages(gpu, 4) == COOPREDUCE_SUCCESS, "set_stages(4)");
}

/* Leaves a known message on the handle (a refused set_stages, which changes nothing), so that
 * fresh_error() can tell that a later failure wrote its own. */
static char marker[512];
void mark_error(void)
{
    coopreduce_set_stages(gpu, 99);
    snprintf(marker, sizeof marker, "%s", coopreduce_last_error(gpu));
}

int fresh_error(const char *ctx)
{
    const char *e = coopreduce_last_error(gpu);
    return CHECK(e[0] != '\0' && strcmp(e, marker) != 0, "%s: no message of its own (\"%s\")", ctx,
                 e);
}

/* ---------------------------------------------------------------- data sets */

const char *const kind_names[K_COUNT] = {"uniform",  "normal",  "signed",  "ones",
                                         "smallint", "all-min", "all-max", "alternating"};

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
            if (dt == COOPREDUCE_FLOAT32)
                ((float *)p)[i] = (float)v;
            else if (dt == COOPREDUCE_FLOAT64)
                ((double *)p)[i] = (double)v;
            else
                ((int32_t *)p)[i] = v;
        }
        ds->exact = dt == COOPREDUCE_FLOAT64 || n * M <= (1u << 24);
    } else {
        int32_t *q = p;
        for (uint64_t i = 0; i < n; i++)
            q[i] = kind == K_MIN   ? INT32_MIN
                   : kind == K_MAX ? INT32_MAX
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

int load(dataset *ds, coopreduce_dtype dt, uint64_t n, int kind, uint64_t off)
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
                              cudaMemcpyHostToDevice),
                   "upload")
               ? 0
               : -1;
}

int pick_kind(coopreduce_dtype dt, uint64_t n, int exact)
{
    if (dt == COOPREDUCE_INT32) {
        static const int k[] = {K_UNIFORM, K_NORMAL, K_SIGNED, K_ONES,    K_SMALLINT,
                                K_MIN,     K_MAX,    K_ALT,    K_UNIFORM, K_SIGNED};
        return k[rnd() % (sizeof k / sizeof k[0])];
    }
    if (exact) {
        if (dt == COOPREDUCE_FLOAT64 || n <= (1u << 24)) return K_SMALLINT;
        return K_SIGNED; /* no exact float32 data of this length */
    }
    return (int)(rnd() % 3); /* uniform, normal, signed */
}

/* ---------------------------------------------------------------- one sum, and its checks */

static void describe(char *buf, size_t cap, const dataset *ds, int m)
{
    snprintf(buf, cap, "%s %s n=%llu off=%llu %s seed=%llu", mname(m), dt_name(ds->dt),
             (unsigned long long)ds->n, (unsigned long long)ds->off, kind_names[ds->kind],
             (unsigned long long)ds->seed);
}

coopreduce_status run(const dataset *ds, int to_host, outcome *o)
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
        CHECK(buf[0] == POISON64 && buf[1] == POISON64, "a failed sum (status %d) wrote its result",
              (int)s);
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
            ok &=
                CHECK(in->cluster_size >= 1, "%s %s: cluster_size %d", ctx, via, in->cluster_size);
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
                        "cooperatively",
                        ctx, via, in->cooperative, in->fell_back);
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
    ok &= CHECK(err <= bound,
                "%s %s: %.17g, exact %.17g: error %Lg > bound %Lg (%d blocks x %d "
                "threads, sum|x| %Lg)",
                ctx, via, v, exact, err, bound, in->blocks, in->threads, ds->abs_sum);
    if (ds->exact)
        ok &= CHECK(v == exact, "%s %s: %.17g but every partial sum is exact: %.17g", ctx, via, v,
                    exact);
    return ok;
}

int sum_ok(const dataset *ds, int m, int to_host, outcome *o_out)
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

int all_methods(const dataset *ds, int to_host)
{
    int failed = 0;
    for (int m = 0; m < NMETHODS; m++) {
        if (!runs_here(m)) continue;
        if (!set_method(m)) {
            failed++;
            continue;
        }
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
