/* ref_exact.c — exact fixed-point superaccumulator (see ref_exact.h). Integer arithmetic only,
 * except the final exact scaling of an already rounded mantissa with ldexp. */
#include "ref_exact.h"

#include <math.h>
#include <string.h>

#define DIGIT_MASK 0xffffffffULL
#define TWO32      4294967296LL

void ref_exact_init(ref_exact *r) { memset(r, 0, sizeof *r); }

void ref_exact_reset(ref_exact *r) { ref_exact_init(r); }

/* Carry-propagates so that limb[0..L-2] are digits in [0, 2^32) and limb[L-1] holds the rest
 * (signed). Exact: value unchanged. */
static void normalize_n(int64_t *limb, int count)
{
    for (int i = 0; i < count - 1; i++) {
        int64_t digit = (int64_t)((uint64_t)limb[i] & DIGIT_MASK);
        int64_t carry = (limb[i] - digit) / TWO32; /* exact division */
        limb[i] = digit;
        limb[i + 1] += carry;
    }
}

static void normalize(int64_t *limb) { normalize_n(limb, REF_EXACT_LIMBS); }

void ref_exact_add(ref_exact *r, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    unsigned e = (unsigned)((u >> 52) & 0x7ff);
    uint64_t m = u & ((1ULL << 52) - 1);
    int neg = (int)(u >> 63);

    if (e == 0x7ff) {
        if (m)
            r->nan = 1;
        else if (neg)
            r->ninf++;
        else
            r->pinf++;
        return;
    }
    if (e == 0 && m == 0) {
        if (neg)
            r->neg_zeros++;
        else
            r->others++;
        return;
    }
    r->others++;
    unsigned shift = 0;
    if (e != 0) {
        m |= 1ULL << 52;
        shift = e - 1; /* x * 2^1074 = m * 2^(e-1) for normal x; = m for subnormal x */
    }
    unsigned w = shift / 32, off = shift % 32;
    /* m << off is at most 85 bits: three 32-bit digits. */
    int64_t d0 = (int64_t)((m << off) & DIGIT_MASK);
    uint64_t rest = off ? (m >> (32 - off)) : (m >> 32);
    int64_t d1 = (int64_t)(rest & DIGIT_MASK);
    int64_t d2 = (int64_t)(rest >> 32);
    if (neg) {
        r->limb[w] -= d0;
        r->limb[w + 1] -= d1;
        r->limb[w + 2] -= d2;
    } else {
        r->limb[w] += d0;
        r->limb[w + 1] += d1;
        r->limb[w + 2] += d2;
    }
    if (++r->pending >= REF_EXACT_NORMALIZE_EVERY) {
        normalize(r->limb);
        r->pending = 0;
    }
}

void ref_exact_add_f32_array(ref_exact *r, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) ref_exact_add(r, (double)x[i]);
}

void ref_exact_add_f64_array(ref_exact *r, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) ref_exact_add(r, x[i]);
}

/* ---- magnitude as normalised digits ---------------------------------------------------- */

typedef struct {
    uint32_t d[REF_WIDE_LIMBS];
    int count; /* digits in use */
    int base;  /* exponent of bit 0: -1074 (ref_exact) or -2148 (ref_wide) */
    int neg;   /* sign of M */
    int zero;  /* M == 0 */
} magnitude;

static void get_magnitude_n(const int64_t *limb, int count, int base, magnitude *mg)
{
    int64_t t[REF_WIDE_LIMBS];
    memcpy(t, limb, count * sizeof t[0]);
    normalize_n(t, count);
    mg->count = count;
    mg->base = base;
    mg->neg = t[count - 1] < 0;
    if (mg->neg) {
        for (int i = 0; i < count; i++) t[i] = -t[i];
        normalize_n(t, count);
    }
    /* Now every limb is a digit (the top one too: |M| < 2^(32 L) by the headroom argument). */
    mg->zero = 1;
    for (int i = 0; i < count; i++) {
        mg->d[i] = (uint32_t)t[i];
        if (t[i] != 0) mg->zero = 0;
    }
}

static void get_magnitude(const ref_exact *r, magnitude *mg)
{
    get_magnitude_n(r->limb, REF_EXACT_LIMBS, -1074, mg);
}

/* Number of significant bits (index of the highest set bit + 1); 0 for zero. */
static int bit_length(const magnitude *mg)
{
    for (int i = mg->count - 1; i >= 0; i--) {
        if (mg->d[i]) {
            int b = 31;
            while (!((mg->d[i] >> b) & 1u)) b--;
            return 32 * i + b + 1;
        }
    }
    return 0;
}

static int get_bit(const magnitude *mg, int pos)
{
    if (pos < 0 || pos >= 32 * mg->count) return 0;
    return (int)((mg->d[pos / 32] >> (pos % 32)) & 1u);
}

/* 1 if any bit with index < pos is set. */
static int any_below(const magnitude *mg, int pos)
{
    if (pos <= 0) return 0;
    int w = pos / 32, b = pos % 32;
    for (int i = 0; i < w && i < mg->count; i++)
        if (mg->d[i]) return 1;
    if (b && w < mg->count && (mg->d[w] & ((1u << b) - 1u))) return 1;
    return 0;
}

/* Bits [lo, lo+count) as an integer, count <= 63; 0 when count <= 0. */
static uint64_t extract(const magnitude *mg, int lo, int count)
{
    uint64_t v = 0;
    for (int k = count - 1; k >= 0; k--) v = (v << 1) | (uint64_t)get_bit(mg, lo + k);
    return v;
}

/* Rounds |M| * 2^base to `prec` significant bits, nearest-even, with the least significant
 * representable bit of the format at fixed-point position min_lsb (subnormals) and overflow when
 * the rounded value reaches 2^max_exp. Returns the magnitude as a double (exact for every format
 * no wider than binary64) or +inf. */
static double round_magnitude(const magnitude *mg, int prec, int min_lsb, int max_exp)
{
    int len = bit_length(mg);
    if (len == 0) return 0.0;
    int p = len - 1; /* highest set bit */
    int lsb = p - (prec - 1);
    if (lsb < min_lsb) lsb = min_lsb;
    uint64_t mant;
    if (lsb <= 0) {
        mant = extract(mg, 0, len); /* exact */
        lsb = 0;
    } else {
        mant = extract(mg, lsb, p - lsb + 1);
        int round = get_bit(mg, lsb - 1);
        int sticky = any_below(mg, lsb - 1);
        if (round && (sticky || (mant & 1u))) mant++;
        if (mant == (1ULL << prec)) {
            mant >>= 1;
            lsb++;
        }
    }
    if (mant == 0) return 0.0;
    int mlen = 0;
    while (mlen < 64 && (mant >> mlen)) mlen++;
    if (mlen + lsb + mg->base > max_exp) return INFINITY;
    return ldexp((double)mant, lsb + mg->base);
}

static double canonical_nan_d(void)
{
    uint64_t u = 0x7ff8000000000000ULL;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static float canonical_nan_f(void)
{
    uint32_t u = 0x7fc00000u;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* 0: finite result; 1: NaN; 2: +inf; 3: -inf. */
static int special_kind(const ref_exact *r)
{
    if (r->nan || (r->pinf && r->ninf)) return 1;
    if (r->pinf) return 2;
    if (r->ninf) return 3;
    return 0;
}

static int zero_is_negative(const ref_exact *r) { return r->neg_zeros > 0 && r->others == 0; }

double ref_exact_round(const ref_exact *r, int prec, int emin)
{
    switch (special_kind(r)) {
    case 1: return canonical_nan_d();
    case 2: return INFINITY;
    case 3: return -INFINITY;
    default: break;
    }
    magnitude mg;
    get_magnitude(r, &mg);
    if (mg.zero) return zero_is_negative(r) ? -0.0 : 0.0;
    /* smallest subnormal 2^(emin - prec + 1); overflow at 2^(emax + 1) = 2^(2 - emin) */
    double v = round_magnitude(&mg, prec, emin - prec + 1 + 1074, 2 - emin);
    return mg.neg ? -v : v;
}

double ref_exact_to_double(const ref_exact *r) { return ref_exact_round(r, 53, -1022); }

float ref_exact_to_float(const ref_exact *r)
{
    const double v = ref_exact_round(r, 24, -126); /* a float value or an infinity: exact */
    return v != v ? canonical_nan_f() : (float)v;
}

long double ref_exact_to_long_double(const ref_exact *r)
{
    switch (special_kind(r)) {
    case 1: return (long double)canonical_nan_d();
    case 2: return (long double)INFINITY;
    case 3: return -(long double)INFINITY;
    default: break;
    }
    magnitude mg;
    get_magnitude(r, &mg);
    if (mg.zero) return zero_is_negative(r) ? -0.0L : 0.0L;
    int t = REF_EXACT_LIMBS - 1;
    while (mg.d[t] == 0) t--;
    long double v = 0.0L;
    int lo = t - 2 < 0 ? 0 : t - 2;
    for (int i = t; i >= lo; i--) v = v * 4294967296.0L + (long double)mg.d[i];
    v = ldexpl(v, 32 * lo - 1074);
    return mg.neg ? -v : v;
}

int ref_exact_sign(const ref_exact *r)
{
    magnitude mg;
    get_magnitude(r, &mg);
    if (mg.zero) return 0;
    return mg.neg ? -1 : 1;
}

int ref_exact_has_special(const ref_exact *r) { return special_kind(r) != 0; }

/* ---- any binary format ------------------------------------------------------------------ */

/* ---- exact products of doubles ------------------------------------------------------------ */

void ref_wide_init(ref_wide *r) { memset(r, 0, sizeof *r); }

static void split_double(double x, uint64_t *m, int *e, int *neg)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int be = (int)((u >> 52) & 0x7ff);
    *neg = (int)(u >> 63);
    *m = u & ((1ULL << 52) - 1);
    if (be) {
        *m |= 1ULL << 52;
        *e = be - 1075;
    } else {
        *e = -1074;
    }
}

void ref_wide_add_product(ref_wide *r, double x, double y)
{
    if (isnan(x) || isnan(y)) {
        r->nan = 1;
        return;
    }
    int sx = signbit(x) != 0, sy = signbit(y) != 0;
    if (isinf(x) || isinf(y)) {
        if (x == 0 || y == 0)
            r->nan = 1; /* inf * 0 */
        else if (sx ^ sy)
            r->ninf++;
        else
            r->pinf++;
        return;
    }
    if (x == 0 || y == 0) {
        if (sx ^ sy)
            r->neg_zeros++;
        else
            r->others++;
        return;
    }
    r->others++;
    uint64_t mx, my;
    int ex, ey, nx, ny;
    split_double(x, &mx, &ex, &nx);
    split_double(y, &my, &ey, &ny);
    unsigned __int128 m = (unsigned __int128)mx * my; /* < 2^106 */
    int pos = ex + ey + 2148;                         /* >= 0 */
    int w = pos / 32, off = pos % 32;
    for (int k = 0; k < 5 && w + k < REF_WIDE_LIMBS; k++) {
        int lo = 32 * k - off; /* bit of m that lands on bit 0 of limb w + k */
        uint64_t dig = lo < 0 ? (uint64_t)((m << -lo) & DIGIT_MASK)
                              : (lo < 128 ? (uint64_t)((m >> lo) & DIGIT_MASK) : 0);
        r->limb[w + k] += (nx ^ ny) ? -(int64_t)dig : (int64_t)dig;
    }
    if (++r->pending >= REF_EXACT_NORMALIZE_EVERY) {
        normalize_n(r->limb, REF_WIDE_LIMBS);
        r->pending = 0;
    }
}

double ref_wide_to_double(const ref_wide *r)
{
    if (r->nan || (r->pinf && r->ninf)) return canonical_nan_d();
    if (r->pinf) return INFINITY;
    if (r->ninf) return -INFINITY;
    magnitude mg;
    get_magnitude_n(r->limb, REF_WIDE_LIMBS, -2148, &mg);
    if (mg.zero) return r->neg_zeros > 0 && r->others == 0 ? -0.0 : 0.0;
    /* double's smallest subnormal 2^-1074 is fixed-point bit 2148 - 1074 = 1074 */
    double v = round_magnitude(&mg, 53, 1074, 1024);
    return mg.neg ? -v : v;
}
