/* format.c — results as text (format.h).
 *
 * The shortest decimal of a float: for d = 1, 2, ... significant digits, the d-digit decimal
 * nearest the value (printf's %.*e, exact in glibc) and its two neighbours on the d-digit grid
 * are tested against the value's rounding interval, exactly, in big-integer arithmetic; the
 * first that lies inside wins. Only those three can: a d-digit decimal further away is more
 * than one grid step from the value, and the interval is narrower than one step on either side
 * whenever the nearest one falls outside it. No strtod round trip is involved, so float16 and
 * bfloat16, which have no reader of their own, are exact too. */
#include "format.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* ================================================================ big integers */

#define BIG_LIMBS 128 /* 4096 bits: 5^360 * 2^1440 and the like, with room to spare */

typedef struct {
    uint32_t limb[BIG_LIMBS]; /* least significant first */
    int used;
} big;

static void big_set(big *b, uint64_t v)
{
    memset(b, 0, sizeof *b);
    b->limb[0] = (uint32_t)v;
    b->limb[1] = (uint32_t)(v >> 32);
    b->used = b->limb[1] ? 2 : b->limb[0] ? 1 : 0;
}

static void big_mul_small(big *b, uint32_t m)
{
    uint64_t carry = 0;
    for (int k = 0; k < b->used; k++) {
        uint64_t t = (uint64_t)b->limb[k] * m + carry;
        b->limb[k] = (uint32_t)t;
        carry = t >> 32;
    }
    if (carry != 0 && b->used < BIG_LIMBS) b->limb[b->used++] = (uint32_t)carry;
}

static void big_mul_pow5(big *b, int e)
{
    for (; e >= 13; e -= 13) big_mul_small(b, 1220703125u); /* 5^13 */
    uint32_t m = 1;
    while (e-- > 0) m *= 5;
    big_mul_small(b, m);
}

static void big_shift_left(big *b, int bits)
{
    if (b->used == 0 || bits <= 0) return;
    int words = bits / 32, rest = bits % 32;
    int top = b->used + words + 1;
    if (top > BIG_LIMBS) top = BIG_LIMBS; /* never reached for IEEE formats up to binary64 */
    for (int k = top - 1; k >= 0; k--) {
        uint64_t hi = k - words >= 0 && k - words < b->used ? b->limb[k - words] : 0;
        uint64_t lo = k - words - 1 >= 0 && k - words - 1 < b->used ? b->limb[k - words - 1] : 0;
        b->limb[k] = rest ? (uint32_t)(hi << rest | lo >> (32 - rest)) : (uint32_t)hi;
    }
    b->used = top;
    while (b->used > 0 && b->limb[b->used - 1] == 0) b->used--;
}

static int big_compare(const big *a, const big *b)
{
    if (a->used != b->used) return a->used < b->used ? -1 : 1;
    for (int k = a->used - 1; k >= 0; k--)
        if (a->limb[k] != b->limb[k]) return a->limb[k] < b->limb[k] ? -1 : 1;
    return 0;
}

/* The sign of c * 10^k - n * 2^f. */
static int compare_dec_bin(uint64_t c, int k, uint64_t n, int f)
{
    big left, right;
    big_set(&left, c);
    big_set(&right, n);
    if (k >= 0)
        big_mul_pow5(&left, k);
    else
        big_mul_pow5(&right, -k);
    /* Now c * 5^k * 2^k against n * 2^f (the powers of five moved to one side). */
    if (k > f)
        big_shift_left(&left, k - f);
    else
        big_shift_left(&right, f - k);
    return big_compare(&left, &right);
}

/* ================================================================ shortest digits */

typedef struct {
    int precision; /* significand bits, the implicit one included */
    int min_exp;   /* exponent of the least significant bit of the smallest subnormal */
    double positional_below;
} float_format;

static const float_format F16 = {11, -24, 1e3};
static const float_format BF16 = {8, -133, 1e2};
static const float_format F32 = {24, -149, 1e6};
static const float_format F64 = {53, -1074, 1e16};

/* The rounding interval of a finite x > 0: x = m * 2^e, the interval is
 * [lo * 2^(e-2), hi * 2^(e-2)], its ends included when m is even (a decimal exactly halfway
 * reads back to the even neighbour). */
typedef struct {
    uint64_t lo, mid, hi;
    int e2; /* e - 2 */
    int inclusive;
} interval;

static interval rounding_interval(double x, const float_format *fmt)
{
    int e;
    frexp(x, &e); /* x = f * 2^e, f in [0.5, 1) */
    int exp = e - fmt->precision;
    if (exp < fmt->min_exp) exp = fmt->min_exp;
    uint64_t m = (uint64_t)ldexp(x, -exp); /* exact */
    interval r;
    r.mid = 4 * m;
    r.hi = 4 * m + 2;
    /* At the bottom of a binade the neighbour below is half as far. */
    int binade_bottom = m == (UINT64_C(1) << (fmt->precision - 1)) && exp > fmt->min_exp;
    r.lo = binade_bottom ? 4 * m - 1 : 4 * m - 2;
    r.e2 = exp - 2;
    r.inclusive = (m & 1) == 0;
    return r;
}

static int inside(const interval *r, uint64_t c, int k)
{
    int below_hi = compare_dec_bin(c, k, r->hi, r->e2);
    int above_lo = compare_dec_bin(c, k, r->lo, r->e2);
    if (r->inclusive) return below_hi <= 0 && above_lo >= 0;
    return below_hi < 0 && above_lo > 0;
}

static uint64_t pow10_u64(int d)
{
    uint64_t p = 1;
    while (d-- > 0) p *= 10;
    return p;
}

/* The shortest decimal c * 10^k (c without trailing zeros) in x's rounding interval, the
 * nearest to x among the shortest. x finite and > 0. */
static void shortest(double x, const float_format *fmt, uint64_t *c_out, int *k_out)
{
    interval r = rounding_interval(x, fmt);
    uint64_t c = 0;
    int k = 0;
    for (int d = 1; d <= 17; d++) {
        char sci[40];
        snprintf(sci, sizeof sci, "%.*e", d - 1, x);
        c = 0;
        const char *p = sci;
        for (; *p && *p != 'e'; p++)
            if (*p >= '0' && *p <= '9') c = c * 10 + (uint64_t)(*p - '0');
        k = atoi(p + 1) - (d - 1);
        if (inside(&r, c, k)) break;
        /* The grid neighbours; at a power of ten the one below is on the finer grid. */
        uint64_t top = pow10_u64(d), bottom = pow10_u64(d - 1);
        uint64_t cd = c == bottom ? top - 1 : c - 1;
        int kd = c == bottom ? k - 1 : k;
        uint64_t cu = c == top - 1 ? bottom : c + 1;
        int ku = c == top - 1 ? k + 1 : k;
        if (inside(&r, cd, kd)) {
            c = cd, k = kd;
            break;
        }
        if (inside(&r, cu, ku)) {
            c = cu, k = ku;
            break;
        }
        /* 17 digits always land inside for binary64 and narrower: the loop ends with d = 17
         * having broken out; falling through keeps the nearest 17-digit decimal. */
    }
    while (c != 0 && c % 10 == 0) {
        c /= 10;
        k++;
    }
    *c_out = c;
    *k_out = k;
}

/* ================================================================ NumPy's notation */

static void write_float(double x, const float_format *fmt, char *out, size_t outlen)
{
    if (isnan(x)) {
        snprintf(out, outlen, "nan");
        return;
    }
    const char *sign = signbit(x) ? "-" : "";
    double a = fabs(x);
    if (isinf(a)) {
        snprintf(out, outlen, "%sinf", sign);
        return;
    }
    if (a == 0.0) {
        snprintf(out, outlen, "%s0.0", sign);
        return;
    }
    uint64_t c;
    int k;
    shortest(a, fmt, &c, &k);
    char digits[24];
    int nd = snprintf(digits, sizeof digits, "%llu", (unsigned long long)c);
    int exp10 = k + nd - 1; /* of the leading digit */
    char body[64];
    if (a >= 1e-4 && a < fmt->positional_below) {
        size_t len = 0;
        if (exp10 < 0) {
            body[len++] = '0';
            body[len++] = '.';
            for (int z = 0; z < -exp10 - 1; z++) body[len++] = '0';
            for (int i = 0; i < nd; i++) body[len++] = digits[i];
        } else {
            for (int i = 0; i <= exp10; i++) body[len++] = i < nd ? digits[i] : '0';
            body[len++] = '.';
            if (nd > exp10 + 1)
                for (int i = exp10 + 1; i < nd; i++) body[len++] = digits[i];
            else
                body[len++] = '0';
        }
        body[len] = '\0';
    } else {
        snprintf(body, sizeof body, "%c%s%se%c%02d", digits[0], nd > 1 ? "." : "", digits + 1,
                 exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
    snprintf(out, outlen, "%s%s", sign, body);
}

void cli_format_float(const unsigned char *bits, coopreduce_dtype dtype, char *out, size_t outlen)
{
    switch (dtype) {
    case COOPREDUCE_FLOAT16:
    case COOPREDUCE_BFLOAT16: {
        uint16_t h;
        memcpy(&h, bits, sizeof h);
        write_float(cr_gen_from_half(h, dtype), dtype == COOPREDUCE_FLOAT16 ? &F16 : &BF16, out,
                    outlen);
        return;
    }
    case COOPREDUCE_FLOAT32: {
        float f;
        memcpy(&f, bits, sizeof f);
        write_float(f, &F32, out, outlen);
        return;
    }
    case COOPREDUCE_FLOAT64: {
        double d;
        memcpy(&d, bits, sizeof d);
        write_float(d, &F64, out, outlen);
        return;
    }
    default: snprintf(out, outlen, "?"); return;
    }
}

/* ================================================================ integers, bits, JSON */

void cli_format_int128(const uint64_t w[2], int is_signed, char *out, size_t outlen)
{
    uint64_t lo = w[0], hi = w[1];
    int negative = is_signed && (hi >> 63);
    if (negative) { /* negate: ~x + 1 */
        lo = ~lo + 1;
        hi = ~hi + (lo == 0);
    }
    /* Divide by 10 over 32-bit limbs, most significant first, until nothing is left. */
    uint32_t limbs[4] = {(uint32_t)(hi >> 32), (uint32_t)hi, (uint32_t)(lo >> 32), (uint32_t)lo};
    char digits[48];
    int nd = 0, nonzero;
    do {
        uint64_t rem = 0;
        nonzero = 0;
        for (int k = 0; k < 4; k++) {
            uint64_t cur = rem << 32 | limbs[k];
            limbs[k] = (uint32_t)(cur / 10);
            rem = cur % 10;
            nonzero |= limbs[k] != 0;
        }
        digits[nd++] = (char)('0' + rem);
    } while (nonzero);
    size_t used = 0;
    if (negative && used + 1 < outlen) out[used++] = '-';
    while (nd > 0 && used + 1 < outlen) out[used++] = digits[--nd];
    out[used] = '\0';
}

void cli_format_value(const unsigned char *bits, coopreduce_dtype rdtype, size_t rsize, char *out,
                      size_t outlen)
{
    uint64_t w[2] = {0, 0};
    memcpy(w, bits, rsize < sizeof w ? rsize : sizeof w);
    if (rsize == 16) {
        cli_format_int128(w, rdtype == COOPREDUCE_INT64, out, outlen);
        return;
    }
    switch (rdtype) {
    case COOPREDUCE_FLOAT16:
    case COOPREDUCE_BFLOAT16:
    case COOPREDUCE_FLOAT32:
    case COOPREDUCE_FLOAT64: cli_format_float(bits, rdtype, out, outlen); return;
    case COOPREDUCE_INT32: snprintf(out, outlen, "%ld", (long)(int32_t)(uint32_t)w[0]); return;
    case COOPREDUCE_INT64: snprintf(out, outlen, "%lld", (long long)(int64_t)w[0]); return;
    case COOPREDUCE_UINT32:
    case COOPREDUCE_UINT64: snprintf(out, outlen, "%llu", (unsigned long long)w[0]); return;
    default: snprintf(out, outlen, "?"); return;
    }
}

void cli_format_bits(const unsigned char *bits, size_t size, char *out, size_t outlen)
{
    size_t used = (size_t)snprintf(out, outlen, "0x");
    for (size_t k = size; k-- > 0 && used + 2 < outlen;)
        used += (size_t)snprintf(out + used, outlen - used, "%02x", bits[k]);
}

void cli_print_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}
