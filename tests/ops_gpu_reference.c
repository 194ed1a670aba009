/* ops_gpu_reference.c — test_ops_gpu's own rules (ops_gpu.h): a plain sequential loop written
 * from coopreduce.h for MIN, MAX, ABSMAX, ARGMIN, ARGMAX and integer SUM (util.h's decoders; NaN
 * first; -0.0 < +0.0 for min/max; IEEE equality and the first index for argmin/argmax; __int128
 * sums), and an exact check that a MEAN is the correctly rounded quotient (integer comparisons
 * against the rounding midpoints, not the library's routine). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops_gpu.h"
#include "util.h"

void reference(coopreduce_op op, coopreduce_dtype dt, const void *x, uint64_t n,
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
            if (argop)
                memcpy(out, &first_nan, 8);
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
            case COOPREDUCE_OP_MIN:
                take = v < bv || (v == bv && (b & sb) && !(best_bits & sb));
                break;
            case COOPREDUCE_OP_MAX:
                take = v > bv || (v == bv && !(b & sb) && (best_bits & sb));
                break;
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
        if (argop)
            memcpy(out, &idx, 8);
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
    if (argop)
        memcpy(out, &idx, 8);
    else if (op == COOPREDUCE_OP_ABSMAX)
        memcpy(out, &bm, es); /* |x| as the unsigned type */
    else
        memcpy(out, &best_bits, es);
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

int mean_ok(coopreduce_dtype dt, const void *x, uint64_t n, const void *result, char *why,
            size_t wl)
{
    int neg;
    u128 mag;
    double d;
    exact_sum(dt, x, n, &neg, &mag);
    memcpy(&d, result, 8);
    return is_rounded_quotient(neg, mag, n, d, why, wl);
}
