/* ops_gpu_harness.c — test_ops_gpu's shared state, data kinds and checked operations
 * (ops_gpu.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops_gpu.h"
#include "util.h"

const coopreduce_op all_ops[NOPS] = {
    COOPREDUCE_OP_MIN,    COOPREDUCE_OP_MAX, COOPREDUCE_OP_ABSMAX, COOPREDUCE_OP_ARGMIN,
    COOPREDUCE_OP_ARGMAX, COOPREDUCE_OP_SUM, COOPREDUCE_OP_MEAN};

coopreduce_handle *gpu, *cpu;
void *dx, *dout;
unsigned char *hx;
size_t cap_bytes;
uint64_t max_n;
int quick;

const char *oname(coopreduce_op op)
{
    const char *s = coopreduce_op_name(op);
    return s ? s : "?";
}

int in_scope(coopreduce_op op, coopreduce_dtype dt)
{
    if (op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN) return !dt_is_float(dt);
    return 1;
}

size_t rsize(coopreduce_op op, coopreduce_dtype dt)
{
    switch (op) {
    case COOPREDUCE_OP_ARGMIN:
    case COOPREDUCE_OP_ARGMAX:
    case COOPREDUCE_OP_MEAN: return 8;
    case COOPREDUCE_OP_SUM: return dt_size(dt) == 8 ? 16 : 8;
    default: return dt_size(dt);
    }
}

/* ---------------------------------------------------------------- data */

const char *const kind_names[K_COUNT] = {"wide", "ties",    "negative", "special",
                                         "nan",  "extreme", "equal"};

/* A random finite bit pattern of a float type (any magnitude, subnormals and zeros included). */
static uint64_t finite_bits(coopreduce_dtype dt)
{
    for (;;) {
        uint64_t b = rnd();
        if (dt_size(dt) < 8) b &= (1ull << (8 * dt_size(dt))) - 1;
        if (!((b & inf_bits(dt)) == inf_bits(dt))) return b;
    }
}

/* A few values with many ties, both zeros included: 0, -0, +-0.5, +-1, +-1.5. */
static uint64_t tie_bits(coopreduce_dtype dt, unsigned k)
{
    static const double v[8] = {0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5};
    static const uint16_t f16[8] = {0x0000, 0x8000, 0x3800, 0xb800, 0x3c00, 0xbc00, 0x3e00, 0xbe00};
    static const uint16_t bf16[8] = {0x0000, 0x8000, 0x3f00, 0xbf00,
                                     0x3f80, 0xbf80, 0x3fc0, 0xbfc0};
    k %= 8;
    switch (dt) {
    case COOPREDUCE_FLOAT32: return f32_bits((float)v[k]);
    case COOPREDUCE_FLOAT64: return f64_bits(v[k]);
    case COOPREDUCE_FLOAT16: return f16[k];
    default: return bf16[k];
    }
}

/* Specials: +-0, +-inf, +-smallest subnormal, +-largest finite, +-1, or a random finite. */
static uint64_t special_bits(coopreduce_dtype dt)
{
    const uint64_t sb = sign_bits(dt), inf = inf_bits(dt);
    const uint64_t s = (rnd() & 1) ? sb : 0;
    switch (rnd() % 6) {
    case 0: return s;
    case 1: return s | inf;
    case 2: return s | 1;
    case 3: return s | (inf - 1);
    case 4: return tie_bits(dt, 4 + (s != 0));
    default: return finite_bits(dt);
    }
}

uint64_t nan_pattern(coopreduce_dtype dt)
{
    const uint64_t inf = inf_bits(dt), man = (inf & ~(inf << 1)) - 1; /* mantissa mask */
    uint64_t m = rnd() & man;
    if (!(m & man)) m = 1;
    /* any payload, quiet or signalling, either sign */
    uint64_t b = inf | m;
    if (rnd() & 1) b |= sign_bits(dt);
    return b;
}

static uint64_t int_bits(coopreduce_dtype dt, int kind, uint64_t eq)
{
    const size_t es = dt_size(dt);
    const uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
    const int sgn = dt_is_signed(dt);
    switch (kind) {
    case K_TIES: return (uint64_t)(int64_t)((int)(rnd() % 5) - (sgn ? 2 : 0)) & mask;
    case K_EXTREME: {
        const uint64_t r = rnd() % 3;
        const uint64_t hi = sgn ? (mask >> 1) - r : mask - r;       /* MAX - r */
        const uint64_t lo = sgn ? ((mask >> 1) + 1 + r) & mask : r; /* MIN + r */
        return (rnd() & 1) ? hi : lo;
    }
    case K_EQUAL: return eq & mask;
    default: return rnd() & mask;
    }
}

void fill(void *x, uint64_t n, coopreduce_dtype dt, int kind)
{
    const uint64_t eq = rnd();
    if (!dt_is_float(dt)) {
        for (uint64_t i = 0; i < n; i++) store_bits(x, i, dt_size(dt), int_bits(dt, kind, eq));
        return;
    }
    const uint64_t eqf = finite_bits(dt);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t b;
        switch (kind) {
        case K_TIES: b = tie_bits(dt, (unsigned)rnd()); break;
        case K_NEG: b = finite_bits(dt) | sign_bits(dt); break;
        case K_SPECIAL: b = special_bits(dt); break;
        case K_EQUAL: b = eqf; break;
        default: b = finite_bits(dt); break;
        }
        store_bits(x, i, dt_size(dt), b);
    }
    if (kind == K_NAN) {
        int k = 1 + (int)(rnd() % 3);
        for (int j = 0; j < k; j++) store_bits(x, rnd() % n, dt_size(dt), nan_pattern(dt));
    }
}

int pick_kind(coopreduce_dtype dt)
{
    static const int fk[] = {K_WIDE, K_TIES, K_NEG, K_SPECIAL, K_NAN, K_EQUAL};
    static const int ik[] = {K_WIDE, K_TIES, K_EXTREME, K_EQUAL};
    return dt_is_float(dt) ? fk[rnd() % 6] : ik[rnd() % 4];
}

/* ---------------------------------------------------------------- one operation, checked */

int fits_64(coopreduce_dtype dt, const unsigned char r[16])
{
    uint64_t w[2];
    memcpy(w, r, 16);
    if (dt == COOPREDUCE_UINT64) return w[1] == 0;
    return w[1] == ((w[0] >> 63) ? UINT64_MAX : 0);
}

int check_op(coopreduce_op op, coopreduce_dtype dt, const void *d_x, const void *h_x, uint64_t n,
             const char *ctx, int forced)
{
    const size_t rs = rsize(op, dt);
    char c[300];
    snprintf(c, sizeof c, "%s %s n=%llu %s", oname(op), dt_name(dt), (unsigned long long)n, ctx);
    unsigned char want[16], got[32], cres[32];
    reference(op, dt, h_x, n, want);
    int ok = 1;

    /* GPU, device result */
    if (!cuda_ok(cudaMemset(dout, POISON, 64), "poison")) return 0;
    coopreduce_status s = coopreduce_reduce(op, d_x, NULL, dout, n, dt, gpu, NULL);
    if (!cuda_ok(cudaMemcpy(got, dout, 32, cudaMemcpyDeviceToHost), "copy result")) return 0;
    if (!CHECK(s == COOPREDUCE_SUCCESS, "%s: GPU status %d: %s", c, (int)s,
               coopreduce_last_error(gpu)))
        return 0;
    int tail = 1;
    for (size_t i = rs; i < 32; i++) tail &= got[i] == POISON;
    ok &= CHECK(tail, "%s: bytes past the %zu-byte result were written", c, rs);

    char a[40], b[40];
    if (op == COOPREDUCE_OP_MEAN && n > 0) {
        double d;
        char why[120];
        memcpy(&d, got, 8);
        ok &= CHECK(mean_ok(dt, h_x, n, got, why, sizeof why), "%s: GPU mean %.17g (0x%016llx): %s",
                    c, d, (unsigned long long)f64_bits(d), why);
    } else {
        hex_bytes(a, sizeof a, got, rs);
        hex_bytes(b, sizeof b, want, rs);
        ok &= CHECK(memcmp(got, want, rs) == 0, "%s: GPU 0x%s, reference 0x%s", c, a, b);
    }

    /* The launch report (INT32 SUM is the canonical int32 sum, reported by its own code). */
    if (!(op == COOPREDUCE_OP_SUM && dt == COOPREDUCE_INT32)) {
        coopreduce_launch_info li;
        memset(&li, 0xff, sizeof li);
        coopreduce_status ls = coopreduce_last_launch(gpu, &li);
        ok &= CHECK(ls == COOPREDUCE_SUCCESS && li.method == COOPREDUCE_METHOD_CANONICAL &&
                        li.launches == 1 && li.threads == 256 && li.blocks >= 1 &&
                        (forced == 0 || li.blocks == forced) && li.host_sync == 0,
                    "%s: last_launch: status %d, method %d, %d launches, %d blocks (forced %d) "
                    "of %d threads, host_sync %d",
                    c, (int)ls, (int)li.method, li.launches, li.blocks, forced, li.threads,
                    li.host_sync);
    }

    /* CPU */
    memset(cres, POISON, sizeof cres);
    s = coopreduce_reduce(op, h_x, NULL, cres, n, dt, cpu, NULL);
    const int overflow_ok = op == COOPREDUCE_OP_SUM && dt_size(dt) == 8 && !fits_64(dt, want);
    ok &= CHECK(s == COOPREDUCE_SUCCESS || (s == COOPREDUCE_ERROR_OVERFLOW && overflow_ok),
                "%s: CPU status %d: %s", c, (int)s, coopreduce_last_error(cpu));
    if (s == COOPREDUCE_SUCCESS || s == COOPREDUCE_ERROR_OVERFLOW) {
        hex_bytes(a, sizeof a, got, rs);
        hex_bytes(b, sizeof b, cres, rs);
        ok &= CHECK(memcmp(got, cres, rs) == 0, "%s: GPU 0x%s, CPU 0x%s", c, a, b);
        if (overflow_ok)
            CHECK(s == COOPREDUCE_ERROR_OVERFLOW, "%s: CPU did not report the overflow", c);
    }
    return ok;
}

void *upload(const void *h, uint64_t n, coopreduce_dtype dt, uint64_t off)
{
    const size_t es = dt_size(dt);
    if (!CHECK((n + off) * es <= cap_bytes, "data set too large")) return NULL;
    void *d = (char *)dx + off * es;
    if (n && !cuda_ok(cudaMemcpy(d, h, n * es, cudaMemcpyHostToDevice), "upload")) return NULL;
    return d;
}

void set_grid(int blocks)
{
    coopreduce_status s = coopreduce_set_grid_blocks(gpu, blocks);
    CHECK(s == COOPREDUCE_SUCCESS, "set_grid_blocks(%d): status %d", blocks, (int)s);
}

void run_all_ops(coopreduce_dtype dt, const void *d, uint64_t n, const char *ctx, int forced)
{
    for (int k = 0; k < NOPS; k++)
        if (in_scope(all_ops[k], dt)) check_op(all_ops[k], dt, d, hx, n, ctx, forced);
}

int gpu_result(coopreduce_op op, coopreduce_dtype dt, const void *d, uint64_t n,
               unsigned char r[16], const char *ctx)
{
    if (!cuda_ok(cudaMemset(dout, POISON, 64), "poison")) return 0;
    coopreduce_status s = coopreduce_reduce(op, d, NULL, dout, n, dt, gpu, NULL);
    if (!cuda_ok(cudaMemcpy(r, dout, 16, cudaMemcpyDeviceToHost), "copy")) return 0;
    return CHECK(s == COOPREDUCE_SUCCESS, "%s %s %s: status %d: %s", oname(op), dt_name(dt), ctx,
                 (int)s, coopreduce_last_error(gpu));
}

void expect_u64(coopreduce_op op, coopreduce_dtype dt, const void *d, uint64_t n, uint64_t want,
                const char *ctx)
{
    unsigned char r[16];
    if (!gpu_result(op, dt, d, n, r, ctx)) return;
    uint64_t v = 0;
    memcpy(&v, r, rsize(op, dt) < 8 ? rsize(op, dt) : 8);
    CHECK(v == want, "%s %s %s: 0x%llx, expected 0x%llx", oname(op), dt_name(dt), ctx,
          (unsigned long long)v, (unsigned long long)want);
}
