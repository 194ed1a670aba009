/* test_ops_gpu.c — the order-independent operations on the GPU (src/gpu/ops.cu): MIN, MAX,
 * ABSMAX, ARGMIN, ARGMAX of every dtype, SUM and MEAN of the integer dtypes.
 *
 *   test_ops_gpu            all checks; exits 77 (ctest: skipped) without CUDA or a GPU
 *   test_ops_gpu --quick    sizes <= 70001, fewer data sets, no > 2^31 case (compute-sanitizer)
 *   test_ops_gpu --timing   also times every (op, dtype) at n = 2^28 against the library's own
 *                           int32 and float32 sums of the same bytes (both measured at 98-100%
 *                           of the float4-read ceiling, docs/PERF.md); prints, checks nothing
 *
 * Every GPU result is compared bit for bit with
 *  (a) a plain sequential loop in this file, written from the rules in coopreduce.h (its own
 *      16-bit decoders; NaN first; -0.0 < +0.0 for min/max; IEEE equality and the first index
 *      for argmin/argmax; __int128 sums), and for MEAN an exact check that the double is the
 *      correctly rounded quotient (integer comparisons against the rounding midpoints, not the
 *      library's routine);
 *  (b) a CPU handle's coopreduce_reduce on the same data (an error status there is a failure,
 *      except COOPREDUCE_ERROR_OVERFLOW for a 64-bit sum that does not fit, which the header
 *      documents).
 * The device result is poisoned (0xA5) before every call, and the bytes after the result must
 * stay poisoned. Data: several distributions per dtype (wide random bit patterns, small ranges
 * with many ties and signed zeros, specials, values near the integer extremes, all equal, NaNs),
 * sizes around warp, vector and power-of-two boundaries up to 2^24 + 1, x aligned and one (or a
 * few) elements off 16 bytes, forced grids. Edge cases: NaN at the first, middle and last
 * position, only +-0.0, +-inf, integer extremes and 128-bit sums, n = 0, host results, a
 * non-blocking stream, bad pointers, and (not --quick) n > 2^31 float16 / bfloat16.
 *
 * Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "coopreduce.h"
#include "gpu_util.h"
#include "util.h"

#ifndef COOPREDUCE_HAVE_CUDA
GPU_TEST_MAIN_WITHOUT_CUDA("test_ops_gpu")
#else

#define NOPS 7

static const coopreduce_op all_ops[NOPS] = {
    COOPREDUCE_OP_MIN,    COOPREDUCE_OP_MAX,    COOPREDUCE_OP_ABSMAX, COOPREDUCE_OP_ARGMIN,
    COOPREDUCE_OP_ARGMAX, COOPREDUCE_OP_SUM,    COOPREDUCE_OP_MEAN};

static coopreduce_handle *gpu, *cpu;
static void *dx;              /* device input: cap_bytes + 64 */
static void *dout;            /* device result: 64 bytes */
static unsigned char *hx;     /* host data, cap_bytes */
static size_t cap_bytes;
static uint64_t max_n;
static int quick;

/* ---------------------------------------------------------------- scope and result sizes */

static const char *oname(coopreduce_op op)
{
    const char *s = coopreduce_op_name(op);
    return s ? s : "?";
}

/* The (op, dtype) pairs the GPU computes here. INT32 SUM goes through the canonical int32 sum
 * (another file's kernel) but must give the same bits, so it is checked too. */
static int in_scope(coopreduce_op op, coopreduce_dtype dt)
{
    if (op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN) return !dt_is_float(dt);
    return 1;
}

/* Bytes of the result, from the header's table. */
static size_t rsize(coopreduce_op op, coopreduce_dtype dt)
{
    switch (op) {
    case COOPREDUCE_OP_ARGMIN:
    case COOPREDUCE_OP_ARGMAX:
    case COOPREDUCE_OP_MEAN: return 8;
    case COOPREDUCE_OP_SUM: return dt_size(dt) == 8 ? 16 : 8;
    default: return dt_size(dt);
    }
}

/* ---------------------------------------------------------------- the reference */

/* The expected result bytes of op over x[0..n) (host memory); MEAN only for n == 0 (the other
 * means are checked with is_rounded_quotient). */
static void reference(coopreduce_op op, coopreduce_dtype dt, const void *x, uint64_t n,
                      unsigned char out[16])
{
    const size_t es = dt_size(dt);
    memset(out, 0, 16);
    if (op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN) {
        i128 s = 0;
        for (uint64_t i = 0; i < n; i++) s += int_of_bits(load_bits(x, i, dt_size(dt)), dt);
        if (op == COOPREDUCE_OP_MEAN) {
            uint64_t nanb = 0x7ff8000000000000ull;
            if (n == 0) memcpy(out, &nanb, 8);
            return;
        }
        memcpy(out, &s, es == 8 ? 16 : 8); /* little-endian: low bytes first */
        return;
    }
    const int argop = op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX;
    uint64_t idx = 0, best_bits = load_bits(x, 0, dt_size(dt));
    if (dt_is_float(dt)) {
        uint64_t first_nan = UINT64_MAX;
        for (uint64_t i = 0; i < n && first_nan == UINT64_MAX; i++)
            if (isnan(value_of_bits(load_bits(x, i, dt_size(dt)), dt))) first_nan = i;
        if (first_nan != UINT64_MAX) {
            if (argop) memcpy(out, &first_nan, 8);
            else {
                uint64_t b = nan_bits(dt);
                memcpy(out, &b, es);
            }
            return;
        }
        const uint64_t sb = sign_bits(dt);
        double bv = value_of_bits(best_bits, dt);
        for (uint64_t i = 1; i < n; i++) {
            const uint64_t b = load_bits(x, i, dt_size(dt));
            const double v = value_of_bits(b, dt);
            int take;
            switch (op) {
            case COOPREDUCE_OP_MIN: take = v < bv || (v == bv && (b & sb) && !(best_bits & sb)); break;
            case COOPREDUCE_OP_MAX: take = v > bv || (v == bv && !(b & sb) && (best_bits & sb)); break;
            case COOPREDUCE_OP_ABSMAX: take = fabs(v) > fabs(bv); break;
            case COOPREDUCE_OP_ARGMIN: take = v < bv; break;
            default: take = v > bv; break;
            }
            if (take) {
                bv = v;
                best_bits = b;
                idx = i;
            }
        }
        if (argop) memcpy(out, &idx, 8);
        else {
            uint64_t b = op == COOPREDUCE_OP_ABSMAX ? best_bits & (sb - 1) : best_bits;
            memcpy(out, &b, es);
        }
        return;
    }
    i128 bv = int_of_bits(best_bits, dt);
    u128 bm = bv < 0 ? (u128)(-bv) : (u128)bv;
    for (uint64_t i = 1; i < n; i++) {
        const uint64_t b = load_bits(x, i, dt_size(dt));
        const i128 v = int_of_bits(b, dt);
        const u128 m = v < 0 ? (u128)(-v) : (u128)v;
        int take;
        switch (op) {
        case COOPREDUCE_OP_MIN:
        case COOPREDUCE_OP_ARGMIN: take = v < bv; break;
        case COOPREDUCE_OP_ABSMAX: take = m > bm; break;
        default: take = v > bv; break;
        }
        if (take) {
            bv = v;
            bm = m;
            best_bits = b;
            idx = i;
        }
    }
    if (argop) memcpy(out, &idx, 8);
    else if (op == COOPREDUCE_OP_ABSMAX) memcpy(out, &bm, es); /* |x| as the unsigned type */
    else memcpy(out, &best_bits, es);
}

/* The exact sum of an integer array, as sign and magnitude. */
static void exact_sum(coopreduce_dtype dt, const void *x, uint64_t n, int *neg, u128 *mag)
{
    i128 s = 0;
    for (uint64_t i = 0; i < n; i++) s += int_of_bits(load_bits(x, i, dt_size(dt)), dt);
    *neg = s < 0;
    *mag = s < 0 ? (u128)0 - (u128)s : (u128)s;
}

/* Sign of mag / n - K * 2^F, exactly; 2 when the comparison does not fit in 128 bits. */
static int cmp_quotient(u128 mag, uint64_t n, u128 K, int F)
{
    if (bit_length(K) + bit_length(n) > 127) return 2;
    u128 lhs = mag, rhs = K * n;
    if (F < 0) {
        if (bit_length(lhs) - F > 127) return 2;
        lhs <<= -F;
    } else {
        if (bit_length(rhs) + F > 127) return 2;
        rhs <<= F;
    }
    return lhs < rhs ? -1 : lhs > rhs;
}

/* 1 when d is (-1)^neg * mag / n rounded to the nearest double, ties to even (n >= 1): d must
 * lie within the midpoints to its neighbours, and on a midpoint only with an even significand.
 * mag == 0 must give +0.0 (the sum is the integer 0). */
static int is_rounded_quotient(int neg, u128 mag, uint64_t n, double d, char *why, size_t wl)
{
    const uint64_t b = f64_bits(d);
    if (mag == 0) {
        snprintf(why, wl, "sum 0: expected +0.0");
        return b == 0;
    }
    if ((int)(b >> 63) != neg) {
        snprintf(why, wl, "wrong sign");
        return 0;
    }
    const int e = (int)((b >> 52) & 0x7ff);
    if (e == 0 || e == 0x7ff) {
        snprintf(why, wl, "zero, subnormal, inf or NaN where a normal value was expected");
        return 0;
    }
    const u128 M = (b & ((1ull << 52) - 1)) | (1ull << 52);
    const int F = e - 1075 - 2; /* d = 4M * 2^F */
    const u128 k_lo = 4 * M - (M == (1ull << 52) ? 1 : 2), k_hi = 4 * M + 2;
    const int c_lo = cmp_quotient(mag, n, k_lo, F), c_hi = cmp_quotient(mag, n, k_hi, F);
    if (c_lo == 2 || c_hi == 2) {
        snprintf(why, wl, "exact comparison out of 128-bit range");
        return 0;
    }
    if (c_lo < 0 || c_hi > 0) {
        snprintf(why, wl, "not the nearest double (quotient %s the rounding interval)",
                 c_lo < 0 ? "below" : "above");
        return 0;
    }
    if ((c_lo == 0 || c_hi == 0) && (M & 1)) {
        snprintf(why, wl, "a tie rounded to an odd significand");
        return 0;
    }
    return 1;
}

/* 1 when the double at `result` is the mean of the integers x[0..n) (n >= 1) rounded to
 * nearest even; else `why` says what is wrong. */
static int mean_ok(coopreduce_dtype dt, const void *x, uint64_t n, const void *result, char *why,
                   size_t wl)
{
    int neg;
    u128 mag;
    double d;
    exact_sum(dt, x, n, &neg, &mag);
    memcpy(&d, result, 8);
    return is_rounded_quotient(neg, mag, n, d, why, wl);
}

/* ---------------------------------------------------------------- data */

enum { K_WIDE, K_TIES, K_NEG, K_SPECIAL, K_NAN, K_EXTREME, K_EQUAL, K_COUNT };
static const char *kind_names[K_COUNT] = {"wide", "ties", "negative", "special", "nan",
                                          "extreme", "equal"};

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
    static const uint16_t bf16[8] = {0x0000, 0x8000, 0x3f00, 0xbf00, 0x3f80, 0xbf80, 0x3fc0, 0xbfc0};
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

static uint64_t nan_pattern(coopreduce_dtype dt)
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
        const uint64_t hi = sgn ? (mask >> 1) - r : mask - r;   /* MAX - r */
        const uint64_t lo = sgn ? ((mask >> 1) + 1 + r) & mask : r; /* MIN + r */
        return (rnd() & 1) ? hi : lo;
    }
    case K_EQUAL: return eq & mask;
    default: return rnd() & mask;
    }
}

/* Fills x[0..n) of dt with `kind` (float kinds for floats, the integer ones for integers). */
static void fill(void *x, uint64_t n, coopreduce_dtype dt, int kind)
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

static int pick_kind(coopreduce_dtype dt)
{
    static const int fk[] = {K_WIDE, K_TIES, K_NEG, K_SPECIAL, K_NAN, K_EQUAL};
    static const int ik[] = {K_WIDE, K_TIES, K_EXTREME, K_EQUAL};
    return dt_is_float(dt) ? fk[rnd() % 6] : ik[rnd() % 4];
}

/* ---------------------------------------------------------------- one operation, checked */

static int fits_64(coopreduce_dtype dt, const unsigned char r[16])
{
    uint64_t w[2];
    memcpy(w, r, 16);
    if (dt == COOPREDUCE_UINT64) return w[1] == 0;
    return w[1] == ((w[0] >> 63) ? UINT64_MAX : 0);
}

/* Runs op on the GPU over d_x[0..n) (device) and on the CPU over h_x[0..n) (host, the same
 * values), checks both against the reference, the poison after the result, and the launch
 * report. forced: the grid set on the handle (0 = automatic). Returns 1 when all held. */
static int check_op(coopreduce_op op, coopreduce_dtype dt, const void *d_x, const void *h_x,
                    uint64_t n, const char *ctx, int forced)
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
        ok &= CHECK(mean_ok(dt, h_x, n, got, why, sizeof why),
                    "%s: GPU mean %.17g (0x%016llx): %s", c, d, (unsigned long long)f64_bits(d),
                    why);
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
        if (overflow_ok) CHECK(s == COOPREDUCE_ERROR_OVERFLOW, "%s: CPU did not report the overflow", c);
    }
    return ok;
}

/* Uploads h[0..n) of dt to dx + off elements; returns the device pointer, or NULL. */
static void *upload(const void *h, uint64_t n, coopreduce_dtype dt, uint64_t off)
{
    const size_t es = dt_size(dt);
    if (!CHECK((n + off) * es <= cap_bytes, "data set too large")) return NULL;
    void *d = (char *)dx + off * es;
    if (n && !cuda_ok(cudaMemcpy(d, h, n * es, cudaMemcpyHostToDevice), "upload")) return NULL;
    return d;
}

static void set_grid(int blocks)
{
    coopreduce_status s = coopreduce_set_grid_blocks(gpu, blocks);
    CHECK(s == COOPREDUCE_SUCCESS, "set_grid_blocks(%d): status %d", blocks, (int)s);
}

/* Every op in scope over one data set of dt (already in hx and at d). */
static void run_all_ops(coopreduce_dtype dt, const void *d, uint64_t n, const char *ctx, int forced)
{
    for (int k = 0; k < NOPS; k++)
        if (in_scope(all_ops[k], dt)) check_op(all_ops[k], dt, d, hx, n, ctx, forced);
}

/* ---------------------------------------------------------------- sections */

static void api_basics(void)
{
    for (int d = 0; d < COOPREDUCE_DTYPE_COUNT; d++)
        for (int k = 0; k < NOPS; k++) {
            const coopreduce_dtype dt = (coopreduce_dtype)d;
            if (!in_scope(all_ops[k], dt)) continue;
            size_t api = coopreduce_op_result_size(all_ops[k], dt, 0, NULL);
            CHECK(api == rsize(all_ops[k], dt), "%s %s: result size %zu, this test says %zu",
                  oname(all_ops[k]), dt_name(dt), api, rsize(all_ops[k], dt));
        }
}

static void sweep(void)
{
    static const uint64_t sizes[] = {
        1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 255, 257, 1000, 1021,
        4093, 4097, 65521, 65537, 70001, 131071, (1u << 20) - 1, (1u << 20) + 1, 1000003,
        (1u << 22) + 3, (1u << 24) - 1, (1u << 24) + 1};
    static const uint64_t quick_sizes[] = {1, 2, 3, 5, 9, 17, 33, 65, 257, 1031, 4099, 70001};
    const uint64_t *sz = quick ? quick_sizes : sizes;
    const size_t count = quick ? sizeof quick_sizes / sizeof quick_sizes[0]
                               : sizeof sizes / sizeof sizes[0];
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        const size_t es = dt_size(dt);
        for (size_t si = 0; si < count; si++) {
            const uint64_t n = sz[si];
            if (n > max_n) continue;
            /* Small sizes: every kind, aligned and off by 1 element (and by a random 1..k-1
             * for 16-bit and 32-bit types); large: one random kind, one random offset. */
            const int every = !quick && n <= 70001;
            const int nk = every ? K_COUNT : (quick ? 2 : 1);
            for (int kk = 0; kk < nk; kk++) {
                int kind = every ? kk : pick_kind(dt);
                if (every && (dt_is_float(dt) ? kind == K_EXTREME : (kind == K_NEG || kind == K_SPECIAL || kind == K_NAN)))
                    continue;
                fill(hx, n, dt, kind);
                const uint64_t lanes = 16 / es;
                uint64_t offs[3] = {0, 1, 1 + rnd() % (lanes - 1)};
                int no = every ? 3 : 1;
                if (!every) offs[0] = rnd() % lanes;
                for (int oi = 0; oi < no; oi++) {
                    if (oi == 2 && offs[2] == 1) continue;
                    const void *d = upload(hx, n, dt, offs[oi]);
                    if (!d) return;
                    /* Now and then a forced grid: the bits must not change. */
                    int forced = 0;
                    if (rnd() % 4 == 0) {
                        static const int grids[] = {1, 2, 3, 7, 64, 333};
                        forced = grids[rnd() % 6];
                    }
                    set_grid(forced);
                    char ctx[160];
                    snprintf(ctx, sizeof ctx, "off=%llu %s grid=%d", (unsigned long long)offs[oi],
                             kind_names[kind], forced);
                    run_all_ops(dt, d, n, ctx, forced);
                    set_grid(0);
                }
            }
        }
    }
}

/* Sets x[0..n) of dt from explicit bit patterns, uploads, runs every op. */
static void run_bits(coopreduce_dtype dt, const uint64_t *bits, uint64_t n, const char *what)
{
    for (uint64_t i = 0; i < n; i++) store_bits(hx, i, dt_size(dt), bits[i]);
    for (uint64_t off = 0; off < 2; off++) {
        const void *d = upload(hx, n, dt, off);
        if (!d) return;
        char ctx[160];
        snprintf(ctx, sizeof ctx, "%s off=%llu", what, (unsigned long long)off);
        run_all_ops(dt, d, n, ctx, 0);
    }
}

/* GPU result of op over the data at d (n elements) into r[16]; 1 on success. */
static int gpu_result(coopreduce_op op, coopreduce_dtype dt, const void *d, uint64_t n,
                      unsigned char r[16], const char *ctx)
{
    if (!cuda_ok(cudaMemset(dout, POISON, 64), "poison")) return 0;
    coopreduce_status s = coopreduce_reduce(op, d, NULL, dout, n, dt, gpu, NULL);
    if (!cuda_ok(cudaMemcpy(r, dout, 16, cudaMemcpyDeviceToHost), "copy")) return 0;
    return CHECK(s == COOPREDUCE_SUCCESS, "%s %s %s: status %d: %s", oname(op), dt_name(dt), ctx,
                 (int)s, coopreduce_last_error(gpu));
}

static void expect_u64(coopreduce_op op, coopreduce_dtype dt, const void *d, uint64_t n,
                       uint64_t want, const char *ctx)
{
    unsigned char r[16];
    if (!gpu_result(op, dt, d, n, r, ctx)) return;
    uint64_t v = 0;
    memcpy(&v, r, rsize(op, dt) < 8 ? rsize(op, dt) : 8);
    CHECK(v == want, "%s %s %s: 0x%llx, expected 0x%llx", oname(op), dt_name(dt), ctx,
          (unsigned long long)v, (unsigned long long)want);
}

/* NaN first, middle, last; several NaNs (the first one counts); in later blocks. */
static void nans(void)
{
    static const uint64_t sizes[] = {1, 2, 9, 1000, 100003, 1000003};
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        if (!dt_is_float(dt)) continue;
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const uint64_t n = sizes[si];
            if (n > max_n) continue;
            for (int where = 0; where < 5; where++) {
                fill(hx, n, dt, (rnd() & 1) ? K_WIDE : K_TIES);
                uint64_t p;
                switch (where) {
                case 0: p = 0; break;
                case 1: p = n / 2; break;
                case 2: p = n - 1; break;
                default: p = rnd() % n; break;
                }
                store_bits(hx, p, dt_size(dt), nan_pattern(dt));
                if (where == 4 && p + 1 < n) {
                    /* more NaNs after the first, some in other threads' vectors */
                    for (int j = 0; j < 4; j++) store_bits(hx, p + 1 + rnd() % (n - p - 1), dt_size(dt), nan_pattern(dt));
                }
                for (uint64_t off = quick ? rnd() % 2 : 0; off < 2; off++) {
                    const void *d = upload(hx, n, dt, off);
                    if (!d) return;
                    char ctx[96];
                    snprintf(ctx, sizeof ctx, "NaN at %llu off=%llu", (unsigned long long)p,
                             (unsigned long long)off);
                    run_all_ops(dt, d, n, ctx, 0);
                    /* the rules, stated directly */
                    expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, n, p, ctx);
                    expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, n, p, ctx);
                    expect_u64(COOPREDUCE_OP_MIN, dt, d, n, nan_bits(dt), ctx);
                    expect_u64(COOPREDUCE_OP_MAX, dt, d, n, nan_bits(dt), ctx);
                    expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, n, nan_bits(dt), ctx);
                }
            }
        }
    }
}

/* Only +-0.0; +-inf among numbers. */
static void zeros_and_infs(void)
{
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        if (!dt_is_float(dt)) continue;
        const uint64_t pz = 0, nz = sign_bits(dt), inf = inf_bits(dt), ninf = inf | sign_bits(dt);
        const uint64_t a[2] = {pz, nz}, b[2] = {nz, pz};
        run_bits(dt, a, 2, "[+0, -0]");
        run_bits(dt, b, 2, "[-0, +0]");
        const void *d = upload(hx, 2, dt, 0); /* hx holds [-0, +0] now */
        if (d) {
            expect_u64(COOPREDUCE_OP_MIN, dt, d, 2, nz, "[-0, +0]");
            expect_u64(COOPREDUCE_OP_MAX, dt, d, 2, pz, "[-0, +0]");
            expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, 2, pz, "[-0, +0]");
            expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, 2, 0, "[-0, +0]");
            expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, 2, 0, "[-0, +0]");
        }
        for (uint64_t i = 0; i < 2; i++) store_bits(hx, i, dt_size(dt), a[i]);
        d = upload(hx, 2, dt, 0);
        if (d) {
            expect_u64(COOPREDUCE_OP_MIN, dt, d, 2, nz, "[+0, -0]");
            expect_u64(COOPREDUCE_OP_MAX, dt, d, 2, pz, "[+0, -0]");
            expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, 2, 0, "[+0, -0]");
            expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, 2, 0, "[+0, -0]");
        }
        /* long arrays of zeros: one -0.0 (or one +0.0) planted in a later block */
        const uint64_t n = max_n < 70001 ? max_n : 70001;
        for (int v = 0; v < 4; v++) {
            uint64_t base = (v & 1) ? nz : pz, other = (v & 1) ? pz : nz;
            for (uint64_t i = 0; i < n; i++) store_bits(hx, i, dt_size(dt), base);
            uint64_t p = v < 2 ? n - 1 - rnd() % 100 : rnd() % n;
            store_bits(hx, p, dt_size(dt), other);
            d = upload(hx, n, dt, v & 1);
            if (!d) return;
            char ctx[96];
            snprintf(ctx, sizeof ctx, "zeros, one %s at %llu", (v & 1) ? "+0" : "-0",
                     (unsigned long long)p);
            run_all_ops(dt, d, n, ctx, 0);
            expect_u64(COOPREDUCE_OP_MIN, dt, d, n, nz, ctx);
            expect_u64(COOPREDUCE_OP_MAX, dt, d, n, pz, ctx);
            expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, n, 0, ctx);
            expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, n, 0, ctx);
        }
        const uint64_t c[3] = {ninf, inf, ninf}, e[1] = {ninf};
        run_bits(dt, c, 3, "[-inf, +inf, -inf]");
        run_bits(dt, e, 1, "[-inf]");
        d = upload(hx, 1, dt, 0);
        if (d) expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, 1, inf, "[-inf]");
        /* +-inf among random finite values, at random places */
        for (int rep = 0; rep < 3; rep++) {
            const uint64_t m = 1 + rnd() % (n < 5000 ? n : 5000);
            fill(hx, m, dt, K_WIDE);
            for (int j = 0; j < 3; j++) store_bits(hx, rnd() % m, dt_size(dt), (rnd() & 1) ? inf : ninf);
            d = upload(hx, m, dt, rnd() % 2);
            if (!d) return;
            run_all_ops(dt, d, m, "infs among finite", 0);
        }
    }
}

/* Integer extremes: sums beyond 64 bits (all 16 bytes), |INT_MIN|, all equal. */
static void int_extremes(void)
{
    static const uint64_t sizes[] = {1, 3, 1000, 65537, 1000003};
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        if (dt_is_float(dt)) continue;
        const size_t es = dt_size(dt);
        const uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
        const uint64_t vmax = dt_is_signed(dt) ? mask >> 1 : mask;
        const uint64_t vmin = dt_is_signed(dt) ? (mask >> 1) + 1 : 0;
        const uint64_t vals[3] = {vmax, vmin, dt_is_signed(dt) ? mask : 1}; /* MAX, MIN, -1 / 1 */
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const uint64_t n = sizes[si];
            if (n > max_n) continue;
            for (int v = 0; v < 4; v++) {
                for (uint64_t i = 0; i < n; i++)
                    store_bits(hx, i, dt_size(dt), v < 3 ? vals[v] : ((i % 3) ? vmin : vmax));
                const void *d = upload(hx, n, dt, v & 1);
                if (!d) return;
                char ctx[96];
                snprintf(ctx, sizeof ctx, "extreme pattern %d", v);
                run_all_ops(dt, d, n, ctx, 0);
                if (v < 3) { /* all equal: index 0 */
                    expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, n, 0, ctx);
                    expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, n, 0, ctx);
                }
                if (v == 1 && dt_is_signed(dt))
                    expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, n, vmin, "|MIN| = 2^(w-1)");
            }
        }
        /* A sum whose 128 bits are known: n copies of the maximum (and of the minimum). */
        if (es == 8) {
            const uint64_t n = max_n < 1000003 ? max_n : 1000003;
            for (int v = 0; v < 2; v++) {
                for (uint64_t i = 0; i < n; i++) store_bits(hx, i, dt_size(dt), v ? vmin : vmax);
                const void *d = upload(hx, n, dt, 0);
                unsigned char r[16];
                if (!d || !gpu_result(COOPREDUCE_OP_SUM, dt, d, n, r, "n * extreme")) continue;
                i128 want = (i128)n * (dt == COOPREDUCE_INT64 ? (i128)(int64_t)(v ? vmin : vmax)
                                                              : (i128)(v ? vmin : vmax));
                uint64_t w[2], g[2];
                memcpy(w, &want, 16);
                memcpy(g, r, 16);
                CHECK(g[0] == w[0] && g[1] == w[1],
                      "%s sum of %llu x %s: %016llx%016llx, expected %016llx%016llx", dt_name(dt),
                      (unsigned long long)n, v ? "MIN" : "MAX", (unsigned long long)g[1],
                      (unsigned long long)g[0], (unsigned long long)w[1], (unsigned long long)w[0]);
            }
        }
    }
}

/* n = 0: SUM 0, MEAN NaN, MIN and the others COOPREDUCE_ERROR_EMPTY with nothing written. */
static void empty(void)
{
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        for (int k = 0; k < NOPS; k++) {
            const coopreduce_op op = all_ops[k];
            if (!in_scope(op, dt)) continue;
            for (int px = 0; px < 2; px++) {
                const void *x = px ? dx : NULL;
                unsigned char r[32];
                cudaMemset(dout, POISON, 64);
                coopreduce_status s = coopreduce_reduce(op, x, NULL, dout, 0, dt, gpu, NULL);
                cuda_ok(cudaMemcpy(r, dout, 32, cudaMemcpyDeviceToHost), "copy");
                const int defined = op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN;
                if (!defined) {
                    int untouched = 1;
                    for (int i = 0; i < 32; i++) untouched &= r[i] == POISON;
                    CHECK(s == COOPREDUCE_ERROR_EMPTY && untouched,
                          "%s %s n=0: status %d (expected EMPTY), output %s", oname(op),
                          dt_name(dt), (int)s, untouched ? "untouched" : "written");
                    continue;
                }
                unsigned char want[16];
                reference(op, dt, hx, 0, want);
                const size_t rs = rsize(op, dt);
                int tail = 1;
                for (size_t i = rs; i < 32; i++) tail &= r[i] == POISON;
                CHECK(s == COOPREDUCE_SUCCESS && memcmp(r, want, rs) == 0 && tail,
                      "%s %s n=0 x=%s: status %d (%s), result %s", oname(op), dt_name(dt),
                      px ? "dx" : "NULL", (int)s, coopreduce_last_error(gpu),
                      memcmp(r, want, rs) == 0 ? "right" : "wrong");
                /* to_host */
                memset(r, POISON, sizeof r);
                s = coopreduce_reduce_to_host(op, x, NULL, r, 0, dt, gpu, NULL);
                CHECK(s == COOPREDUCE_SUCCESS && memcmp(r, want, rs) == 0 && r[rs] == POISON,
                      "%s %s n=0 to_host: status %d (%s)", oname(op), dt_name(dt), (int)s,
                      coopreduce_last_error(gpu));
            }
        }
    }
}

/* coopreduce_reduce_to_host: the same bits, synchronous; a 64-bit sum that does not fit reports
 * COOPREDUCE_ERROR_OVERFLOW with the 16 bytes written. */
static void to_host(void)
{
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        for (int rep = 0; rep < 3; rep++) {
            const uint64_t n = 1 + rnd() % (max_n < 300000 ? max_n : 300000);
            const int kind = rep == 0 && !dt_is_float(dt) ? K_EXTREME : pick_kind(dt);
            fill(hx, n, dt, kind);
            const void *d = upload(hx, n, dt, rnd() % 2);
            if (!d) return;
            for (int k = 0; k < NOPS; k++) {
                const coopreduce_op op = all_ops[k];
                if (!in_scope(op, dt)) continue;
                const size_t rs = rsize(op, dt);
                unsigned char r[32], want[16], dev[16];
                memset(r, POISON, sizeof r);
                coopreduce_status s = coopreduce_reduce_to_host(op, d, NULL, r, n, dt, gpu, NULL);
                reference(op, dt, hx, n, want);
                const int overflow = op == COOPREDUCE_OP_SUM && dt_size(dt) == 8 && !fits_64(dt, want);
                char c[160];
                snprintf(c, sizeof c, "to_host %s %s n=%llu %s", oname(op), dt_name(dt),
                         (unsigned long long)n, kind_names[kind]);
                if (!CHECK(s == (overflow ? COOPREDUCE_ERROR_OVERFLOW : COOPREDUCE_SUCCESS),
                           "%s: status %d: %s", c, (int)s, coopreduce_last_error(gpu)))
                    continue;
                CHECK(r[rs] == POISON, "%s: wrote past the result", c);
                if (op == COOPREDUCE_OP_MEAN) {
                    if (gpu_result(op, dt, d, n, dev, c))
                        CHECK(memcmp(r, dev, 8) == 0, "%s: differs from the device result", c);
                } else {
                    CHECK(memcmp(r, want, rs) == 0, "%s: differs from the reference", c);
                }
                coopreduce_launch_info li;
                if (!(op == COOPREDUCE_OP_SUM && dt == COOPREDUCE_INT32) &&
                    coopreduce_last_launch(gpu, &li) == COOPREDUCE_SUCCESS && !overflow)
                    CHECK(li.launches == 1 && li.blocks >= 1, "%s: last_launch %d launches, %d blocks",
                          c, li.launches, li.blocks);
            }
        }
    }
}

/* Forced grids give the same bits (1 block to far more blocks than elements). */
static void grids(void)
{
    static const int g[] = {1, 2, 5, 64, 1000, 4096, 0};
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        const uint64_t n = max_n < 200003 ? max_n : 200003;
        fill(hx, n, dt, (rnd() & 1) ? K_TIES : pick_kind(dt));
        const void *d = upload(hx, n, dt, 1);
        if (!d) return;
        for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
            set_grid(g[k]);
            char ctx[64];
            snprintf(ctx, sizeof ctx, "forced grid %d", g[k]);
            run_all_ops(dt, d, n, ctx, g[k]);
        }
        set_grid(0);
    }
}

/* A non-blocking stream; host memory and foreign pointers refused with nothing written. */
static void streams_and_pointers(void)
{
    cudaStream_t st = NULL;
    if (!cuda_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream")) return;
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        const uint64_t n = max_n < 100000 ? max_n : 100000;
        fill(hx, n, dt, pick_kind(dt));
        const void *d = upload(hx, n, dt, 0);
        /* st does not wait for the legacy stream, and cudaMemcpy from pageable memory may
         * return before its DMA lands: the upload must be complete before st reads it (a run
         * on an H100 read the previous type's data: min float64 wrong, 2026-11-23) */
        if (!d || !cuda_ok(cudaDeviceSynchronize(), "sync after upload")) break;
        for (int k = 0; k < NOPS; k++) {
            const coopreduce_op op = all_ops[k];
            if (!in_scope(op, dt)) continue;
            unsigned char r[16], want[16];
            cudaMemsetAsync(dout, POISON, 64, st);
            coopreduce_status s = coopreduce_reduce(op, d, NULL, dout, n, dt, gpu, st);
            cudaMemcpyAsync(r, dout, 16, cudaMemcpyDeviceToHost, st);
            cuda_ok(cudaStreamSynchronize(st), "stream sync");
            if (op == COOPREDUCE_OP_MEAN) {
                char why[120];
                CHECK(s == COOPREDUCE_SUCCESS && mean_ok(dt, hx, n, r, why, sizeof why),
                      "stream: %s %s: status %d", oname(op), dt_name(dt), (int)s);
                continue;
            }
            reference(op, dt, hx, n, want);
            CHECK(s == COOPREDUCE_SUCCESS && memcmp(r, want, rsize(op, dt)) == 0,
                  "stream: %s %s: status %d (%s)", oname(op), dt_name(dt), (int)s,
                  coopreduce_last_error(gpu));
        }
    }
    cuda_ok(cudaStreamDestroy(st), "stream destroy");

    /* Host memory as x, or as the device result. */
    const uint64_t n = 100;
    void *host = calloc(n, 8);
    if (!CHECK(host != NULL, "calloc")) return;
    for (int k = 0; k < NOPS; k++) {
        const coopreduce_op op = all_ops[k];
        const coopreduce_dtype dt = k >= 5 ? COOPREDUCE_INT64 : COOPREDUCE_FLOAT32; /* SUM, MEAN: int64 */
        if (!in_scope(op, dt)) continue;
        uint64_t buf[4];
        cudaMemset(dout, POISON, 64);
        coopreduce_status s = coopreduce_reduce(op, host, NULL, dout, n, dt, gpu, NULL);
        cuda_ok(cudaMemcpy(buf, dout, 32, cudaMemcpyDeviceToHost), "copy");
        CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY && buf[0] == 0xA5A5A5A5A5A5A5A5ull &&
                  buf[1] == 0xA5A5A5A5A5A5A5A5ull,
              "%s %s: host x: status %d", oname(op), dt_name(dt), (int)s);
        memset(buf, POISON, sizeof buf);
        s = coopreduce_reduce(op, dx, NULL, buf, n, dt, gpu, NULL);
        CHECK(s == COOPREDUCE_ERROR_NOT_DEVICE_MEMORY && buf[0] == 0xA5A5A5A5A5A5A5A5ull,
              "%s %s: host result: status %d", oname(op), dt_name(dt), (int)s);
    }
    free(host);
}

/* More than 2^31 elements: float16 and bfloat16 (the same bytes), extremes planted near the end,
 * indices past 2^31. */
static void plant(void *d, uint64_t i, uint16_t v)
{
    cuda_ok(cudaMemcpy((uint16_t *)d + i, &v, 2, cudaMemcpyHostToDevice), "plant");
}

static void huge(void)
{
    const uint64_t n = (1ull << 31) + 12345, bytes = n * 2;
    if (!gpu_room_for(bytes)) return;
    void *d = NULL;
    if (cudaMalloc(&d, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        printf("SKIP: > 2^31 case: cudaMalloc of %.1f GB failed\n", bytes / 1e9);
        return;
    }
    if (!cuda_ok(cudaMemset(d, 0x3c, bytes), "memset")) { /* every element 0x3c3c */
        cudaFree(d);
        return;
    }
    const uint64_t big = 1ull << 31;
    plant(d, n - 7, 0x7bff); /* the largest finite float16 (a large finite bfloat16) */
    plant(d, n - 3, 0x7bff); /* a tie: the first one counts */
    plant(d, big + 5, 0xfbff);
    plant(d, big + 100, 0xfbff);
    for (int h = 0; h < 2; h++) {
        const coopreduce_dtype dt = h ? COOPREDUCE_BFLOAT16 : COOPREDUCE_FLOAT16;
        double t0 = now_s();
        expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, n, n - 7, "n > 2^31");
        expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, n, big + 5, "n > 2^31");
        expect_u64(COOPREDUCE_OP_MAX, dt, d, n, 0x7bff, "n > 2^31");
        expect_u64(COOPREDUCE_OP_MIN, dt, d, n, 0xfbff, "n > 2^31");
        expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, n, 0x7bff, "n > 2^31");
        /* one element off 16 bytes: indices shift by one */
        const void *d1 = (const uint16_t *)d + 1;
        expect_u64(COOPREDUCE_OP_ARGMAX, dt, d1, n - 1, n - 8, "n > 2^31, x + 1");
        expect_u64(COOPREDUCE_OP_ARGMIN, dt, d1, n - 1, big + 4, "n > 2^31, x + 1");
        printf("  > 2^31 %s: 7 reductions of %.2f GB in %.1f ms\n", dt_name(dt), bytes / 1e9,
               1e3 * (now_s() - t0));
    }
    plant(d, n - 1, 0xffc1);      /* a negative NaN last (NaN as float16 and as bfloat16) */
    plant(d, big + 3, 0x7fff);    /* the first NaN (both types) */
    for (int h = 0; h < 2; h++) {
        const coopreduce_dtype dt = h ? COOPREDUCE_BFLOAT16 : COOPREDUCE_FLOAT16;
        const uint64_t nan = h ? 0x7fc0 : 0x7e00;
        expect_u64(COOPREDUCE_OP_ARGMAX, dt, d, n, big + 3, "n > 2^31 with NaNs");
        expect_u64(COOPREDUCE_OP_ARGMIN, dt, d, n, big + 3, "n > 2^31 with NaNs");
        expect_u64(COOPREDUCE_OP_MIN, dt, d, n, nan, "n > 2^31 with NaNs");
        expect_u64(COOPREDUCE_OP_ABSMAX, dt, d, n, nan, "n > 2^31 with NaNs");
    }
    cuda_ok(cudaFree(d), "cudaFree");
}

/* --timing: every (op, dtype) at n = 2^28 against the library's int32 sum (vec4int's kernel)
 * and float32 canonical sum of the same bytes; the data is finite (every byte has bit 6 clear,
 * so no 16-, 32- or 64-bit pattern is inf or NaN), of both signs. */
static double time_calls(coopreduce_op op, coopreduce_dtype dt, const void *d, uint64_t n)
{
    cudaEvent_t e0, e1;
    double best = -1;
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) return -1;
    for (int w = 0; w < 3; w++)
        if (coopreduce_reduce(op, d, NULL, dout, n, dt, gpu, NULL)) return -1;
    for (int b = 0; b < 5; b++) {
        const int calls = 10;
        float ms = 0;
        cudaEventRecord(e0, NULL);
        for (int c = 0; c < calls; c++) coopreduce_reduce(op, d, NULL, dout, n, dt, gpu, NULL);
        cudaEventRecord(e1, NULL);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        const double us = 1e3 * ms / calls;
        if (best < 0 || us < best) best = us;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return best;
}

static void timing(void)
{
    const uint64_t n = 1ull << 28, max_bytes = n * 8;
    void *d = NULL;
    if (cudaMalloc(&d, max_bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        printf("timing: cannot allocate %.1f GB; skipped\n", max_bytes / 1e9);
        return;
    }
    const size_t blk = 1u << 24;
    unsigned char *h = malloc(blk);
    if (!h) {
        cudaFree(d);
        return;
    }
    for (size_t i = 0; i < blk; i++) h[i] = (unsigned char)(rnd() & 0xbf);
    for (uint64_t o = 0; o < max_bytes; o += blk)
        cudaMemcpy((char *)d + o, h, blk, cudaMemcpyHostToDevice);
    free(h);
    printf("timing at n = 2^28 (best of 5 batches of 10 calls; proxies: the library's int32 sum "
           "and float32 canonical sum of the same bytes, both 98-100%% of the float4-read "
           "ceiling in docs/PERF.md):\n");
    printf("  %-8s %-8s %10s %8s %10s %10s\n", "dtype", "op", "us", "GB/s", "x int32sum",
           "x f32sum");
    for (int di = 0; di < COOPREDUCE_DTYPE_COUNT; di++) {
        const coopreduce_dtype dt = (coopreduce_dtype)di;
        const uint64_t bytes = n * dt_size(dt);
        const double t_i32 = time_calls(COOPREDUCE_OP_SUM, COOPREDUCE_INT32, d, bytes / 4);
        const double t_f32 = time_calls(COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT32, d, bytes / 4);
        for (int k = 0; k < NOPS; k++) {
            const coopreduce_op op = all_ops[k];
            if (!in_scope(op, dt)) continue;
            const double t = time_calls(op, dt, d, n);
            if (t <= 0) {
                printf("  %-8s %-8s failed: %s\n", dt_name(dt), oname(op), coopreduce_last_error(gpu));
                continue;
            }
            printf("  %-8s %-8s %10.1f %8.0f %10.3f %10.3f\n", dt_name(dt), oname(op), t,
                   bytes / (t * 1e3), t_i32 / t, t_f32 / t);
        }
    }
    fflush(stdout);
    cudaFree(d);
}

int main(int argc, char **argv)
{
    int do_timing = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--timing")) do_timing = 1;
        else {
            printf("usage: test_ops_gpu [--quick] [--timing]\n");
            return 2;
        }
    }
    coopreduce_gpu_props props;
    if (gpu_test_open("test_ops_gpu", &gpu, &props)) return 77;
    if (coopreduce_create_cpu(&cpu, 0) != COOPREDUCE_SUCCESS) {
        CHECK(0, "create_cpu: %s", coopreduce_last_error(NULL));
        return check_summary("test_ops_gpu");
    }
    if (quick) printf("test_ops_gpu: --quick\n");
    test_seed_init("test_ops_gpu");
    max_n = quick ? 70001 : (1u << 24) + 1;
    cap_bytes = (size_t)(max_n + 64) * 8;
    hx = malloc(cap_bytes);
    if (!CHECK(hx != NULL, "malloc") ||
        !cuda_ok(cudaMalloc(&dx, cap_bytes + 64), "cudaMalloc input") ||
        !cuda_ok(cudaMalloc(&dout, 64), "cudaMalloc result"))
        return check_summary("test_ops_gpu");

    static const test_section sections[] = {
        {"api", api_basics},     {"empty", empty},         {"sweep", sweep},
        {"nans", nans},          {"zeros, infs", zeros_and_infs}, {"int extremes", int_extremes},
        {"to_host", to_host},    {"grids", grids},         {"streams, pointers", streams_and_pointers},
        {"huge", huge},
    };
    run_sections(sections, sizeof sections / sizeof sections[0], quick ? huge : NULL);
    if (do_timing) timing();
    cudaFree(dx);
    cudaFree(dout);
    free(hx);
    CHECK(coopreduce_destroy(cpu) == COOPREDUCE_SUCCESS, "destroy cpu");
    CHECK(coopreduce_destroy(gpu) == COOPREDUCE_SUCCESS, "destroy gpu: %s", coopreduce_last_error(NULL));
    return check_summary("test_ops_gpu");
}
#endif
