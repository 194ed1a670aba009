/* gen.c — reproducible data: element i = f(hash(seed, i)).
 *
 * Every value is computed with IEEE-754 double +, -, *, /, sqrt and exact scaling (ldexp,
 * frexp) only. Those are correctly rounded everywhere, so the same (kind, seed, i) gives the
 * same bits on every machine and C library. That is why the natural logarithm the normal
 * generator needs is implemented here instead of calling log(). Built with -ffp-contract=off:
 * a fused multiply-add would round differently from the separate operations written here. */
#include "gen.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* The library's 16-bit conversions (header-only, static inline): the generator rounds exactly as
 * the library narrows its results. */
#include "../core/values.h"
#include "../core/dtype.h"

/* ---------------------------------------------------------------- hashing */

static uint64_t splitmix64_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

#define GOLDEN_GAMMA UINT64_C(0x9e3779b97f4a7c15)

uint64_t cr_gen_hash(uint64_t seed, uint64_t i)
{
    /* Mixing the seed first makes nearby seeds give unrelated streams: with the plain splitmix64
     * state seed + (i+1)*gamma, seed s+gamma would be the stream of s shifted by one. */
    uint64_t key = splitmix64_mix(seed ^ UINT64_C(0x6a09e667f3bcc908));
    return splitmix64_mix(key + (i + 1) * GOLDEN_GAMMA);
}

/* Salts that separate the streams used by different kinds and by the two coordinates of the
 * polar method, so that no two draws share a hash input. */
#define SALT_NORMAL UINT64_C(0xb7e151628aed2a6b)
#define SALT_SIGNED UINT64_C(0x243f6a8885a308d3)
#define SALT_FLOAT  UINT64_C(0x452821e638d01377)

/* ---------------------------------------------------------------- deterministic log */

/* ln(x) for finite x > 0. x = m * 2^e with m in [sqrt(1/2), sqrt(2)), and
 * ln(m) = 2 atanh(t), t = (m-1)/(m+1), |t| <= 0.1716, so t^2 <= 0.0295 and the series
 * t + t^3/3 + t^5/5 + ... has reached 1e-19 relative after the terms up to t^27. ln 2 is split
 * into a part with trailing zero bits (e * LN2_HI is exact for |e| < 2^11) and a correction,
 * which keeps the result within a few ulp of the true value. */
static double det_log(double x)
{
    static const double LN2_HI = 6.93147180369123816490e-01; /* fdlibm's split of ln 2 */
    static const double LN2_LO = 1.90821492927058770002e-10;
    static const double SQRT_HALF = 0.70710678118654752440;
    int e;
    double m = frexp(x, &e); /* exact: m in [0.5, 1) */
    if (m < SQRT_HALF) {
        m = m * 2.0; /* exact */
        e -= 1;
    }
    double t = (m - 1.0) / (m + 1.0);
    double t2 = t * t;
    /* Horner from the smallest term up: each step adds a smaller correction to a larger sum. */
    double series = 1.0 / 27.0;
    for (int k = 25; k >= 1; k -= 2) series = 1.0 / (double)k + t2 * series;
    double ln_m = 2.0 * t * series;
    return (double)e * LN2_HI + (ln_m + (double)e * LN2_LO);
}

/* ---------------------------------------------------------------- the kinds */

/* 53 random bits as a double in [0, 1). */
static double unit53(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }

static double normal_value(uint64_t seed, uint64_t i)
{
    /* Each attempt draws a fresh, independent (u, v) for this element, so that element i never
     * depends on how many attempts other elements needed (which keeps generation
     * embarrassingly parallel). */
    uint64_t element_key = cr_gen_hash(seed ^ SALT_NORMAL, i);
    /* An attempt is accepted with probability pi/4; 200 rejections in a row has probability
     * about 1e-134, so the fallback below is never taken in practice, but it keeps the loop
     * bounded. */
    for (uint64_t attempt = 0; attempt < 200; attempt++) {
        double u = 2.0 * unit53(cr_gen_hash(element_key, 2 * attempt)) - 1.0;
        double v = 2.0 * unit53(cr_gen_hash(element_key, 2 * attempt + 1)) - 1.0;
        double s = u * u + v * v;
        if (s > 0.0 && s < 1.0) return u * sqrt(-2.0 * det_log(s) / s);
    }
    return 0.0;
}

static double signed_value(uint64_t seed, uint64_t i)
{
    uint64_t h = cr_gen_hash(seed ^ SALT_SIGNED, i);
    /* 24-bit signed integer in [-2^23, 2^23): at most 24 significant bits, so the value and every
     * power-of-two scaling of it below stay exact in float32. */
    int64_t mantissa = (int64_t)(h >> 40) - (INT64_C(1) << 23);
    /* The exponent comes from bits disjoint from the mantissa's. Multiply-shift maps 32 random
     * bits onto 0..40 with a bias below 1e-8, without a division. */
    uint64_t low32 = h & UINT64_C(0xffffffff);
    int e = (int)((low32 * 41) >> 32) - 20;
    /* [-1, 1) times 2^e: magnitudes from 2^-43 to 2^20, all normal float32 numbers. */
    return ldexp((double)mantissa, e - 23);
}

/* A uniform integer in [lo, hi] from 32 hash bits (multiply-shift, bias below 1e-6). */
static int uniform_int(uint64_t bits32, int lo, int hi)
{
    return lo + (int)((bits32 * (uint64_t)(hi - lo + 1)) >> 32);
}

/* Random sign and prec - 1 random significand bits (from h) with the implicit one, times 2^e:
 * exact in any format of prec bits whose range holds e. */
static double random_normal_at(uint64_t h, int prec, int e)
{
    const uint64_t frac = (h >> 1) & ((UINT64_C(1) << (prec - 1)) - 1);
    const double m = (double)((UINT64_C(1) << (prec - 1)) | frac); /* < 2^53: exact */
    return ldexp(h & 1 ? -m : m, e - (prec - 1));
}

int cr_gen_cancel_residue(uint64_t seed, uint64_t i)
{
    return (cr_gen_hash(seed ^ SALT_FLOAT ^ SALT_NORMAL, i / 2) >> 58) == 0; /* 6 bits: one pair of 64 */
}

double cr_gen_float_value(cr_gen_kind kind, uint64_t seed, uint64_t i, int prec, int emin,
                          int emax)
{
    const uint64_t h = cr_gen_hash(seed ^ SALT_FLOAT, i), e32 = h >> 32;
    switch (kind) {
    case CR_GEN_WIDE: return random_normal_at(h, prec, uniform_int(e32, emin, emax));
    case CR_GEN_SUBNORMAL: {
        /* a significand in [1, 2^(prec-1)) times 2^(emin - prec + 1): below 2^emin */
        const uint64_t top = (UINT64_C(1) << (prec - 1)) - 1;
        const uint64_t m = 1 + ((h >> 1) % top);
        return ldexp(h & 1 ? -(double)m : (double)m, emin - prec + 1);
    }
    case CR_GEN_CANCEL: {
        if (cr_gen_cancel_residue(seed, i))
            return random_normal_at(h, prec, uniform_int(e32, emin, emin + 8));
        /* the pair's shared value, drawn from the pair index; the odd element negates it */
        const uint64_t hp = cr_gen_hash(seed ^ SALT_FLOAT ^ SALT_SIGNED, i / 2);
        const double a = random_normal_at(hp, prec, uniform_int(hp >> 32, emin, emax / 2));
        return i & 1 ? -a : a;
    }
    default: return 0.0;
    }
}

int cr_gen_parse(const char *name, cr_gen_kind *kind)
{
    static const struct {
        const char *name;
        cr_gen_kind kind;
    } table[] = {
        {"ones", CR_GEN_ONES},
        {"uniform", CR_GEN_UNIFORM},
        {"normal", CR_GEN_NORMAL},
        {"signed", CR_GEN_SIGNED},
        {"wide", CR_GEN_WIDE},
        {"subnormal", CR_GEN_SUBNORMAL},
        {"cancel", CR_GEN_CANCEL},
    };
    if (name == NULL || kind == NULL) return -1;
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++) {
        if (strcmp(name, table[k].name) == 0) {
            *kind = table[k].kind;
            return 0;
        }
    }
    return -1;
}

const char *cr_gen_name(cr_gen_kind kind)
{
    switch (kind) {
    case CR_GEN_ONES: return "ones";
    case CR_GEN_UNIFORM: return "uniform";
    case CR_GEN_NORMAL: return "normal";
    case CR_GEN_SIGNED: return "signed";
    case CR_GEN_WIDE: return "wide";
    case CR_GEN_SUBNORMAL: return "subnormal";
    case CR_GEN_CANCEL: return "cancel";
    }
    return "unknown";
}

static int kind_is_known(cr_gen_kind kind)
{
    return kind == CR_GEN_ONES || kind == CR_GEN_UNIFORM || kind == CR_GEN_NORMAL ||
           kind == CR_GEN_SIGNED || kind == CR_GEN_WIDE || kind == CR_GEN_SUBNORMAL ||
           kind == CR_GEN_CANCEL;
}

/* The kinds that exist for float formats only. */
static int float_only(cr_gen_kind kind)
{
    return kind == CR_GEN_WIDE || kind == CR_GEN_SUBNORMAL || kind == CR_GEN_CANCEL;
}

int cr_gen_supports(cr_gen_kind kind, coopreduce_dtype dtype)
{
    if (!kind_is_known(kind) || cr_dtype(dtype) == NULL) return 0;
    return !float_only(kind) || dtype == COOPREDUCE_FLOAT32 || dtype == COOPREDUCE_FLOAT64 ||
           dtype == COOPREDUCE_FLOAT16 || dtype == COOPREDUCE_BFLOAT16;
}

double cr_gen_value(cr_gen_kind kind, uint64_t seed, uint64_t i)
{
    switch (kind) {
    case CR_GEN_ONES: return 1.0;
    case CR_GEN_UNIFORM: return unit53(cr_gen_hash(seed, i));
    case CR_GEN_NORMAL: return normal_value(seed, i);
    case CR_GEN_SIGNED: return signed_value(seed, i);
    case CR_GEN_WIDE:
    case CR_GEN_SUBNORMAL:
    case CR_GEN_CANCEL: return cr_gen_float_value(kind, seed, i, 53, -1022, 1023);
    }
    return 0.0;
}

/* ---------------------------------------------------------------- 16-bit floats */

uint16_t cr_gen_to_half(float value, coopreduce_dtype dtype)
{
    return dtype == COOPREDUCE_BFLOAT16 ? cr_f32_to_bf16(value) : cr_f32_to_f16(value);
}

double cr_gen_from_half(uint16_t bits, coopreduce_dtype dtype)
{
    return dtype == COOPREDUCE_BFLOAT16 ? cr_bf16_to_f32(bits) : cr_f16_to_f32(bits);
}

/* ---------------------------------------------------------------- filling */

/* ones, normal and signed for the integer types: the double times 2^20 (ones: 1), truncated
 * toward zero; the caller clamps it to its type. */
static double int_value(cr_gen_kind kind, uint64_t seed, uint64_t i)
{
    return kind == CR_GEN_ONES ? 1.0 : cr_gen_value(kind, seed, i) * 1048576.0;
}

/* The float32 element of the stream: the double rounded once (uniform: its leading `bits`
 * random bits, truncated, so that it stays below 1). */
static float f32_value(cr_gen_kind kind, uint64_t seed, uint64_t i, int bits)
{
    if (kind == CR_GEN_UNIFORM)
        return (float)ldexp((double)(cr_gen_hash(seed, i) >> (64 - bits)), -bits);
    if (float_only(kind)) /* exact in the format of `bits` (24, 11, 8) significand bits */
        return (float)cr_gen_float_value(kind, seed, i, bits, bits == 11 ? -14 : -126,
                                         bits == 11 ? 15 : 127);
    return (float)cr_gen_value(kind, seed, i);
}

static void fill_range(void *out, uint64_t first, uint64_t begin, uint64_t end,
                       coopreduce_dtype dtype, cr_gen_kind kind, uint64_t seed)
{
    switch (dtype) {
    case COOPREDUCE_FLOAT32: {
        /* uniform: the leading 24 of the 53 bits cr_gen_value uses (truncation, not rounding):
         * rounding to nearest could turn values just below 1 into 1.0f and leave [0, 1). */
        float *dst = out;
        for (uint64_t k = begin; k < end; k++) dst[k] = f32_value(kind, seed, first + k, 24);
        break;
    }
    case COOPREDUCE_FLOAT16:
    case COOPREDUCE_BFLOAT16: {
        /* uniform: 11 (8) random bits, exact in the 16-bit type; float16's signed values are
         * scaled by 2^-6 (exact in float32) so that none reaches float16's 65504. */
        uint16_t *dst = out;
        int bits = dtype == COOPREDUCE_FLOAT16 ? 11 : 8;
        float scale = dtype == COOPREDUCE_FLOAT16 && kind == CR_GEN_SIGNED ? 0x1.0p-6f : 1.0f;
        for (uint64_t k = begin; k < end; k++)
            dst[k] = cr_gen_to_half(f32_value(kind, seed, first + k, bits) * scale, dtype);
        break;
    }
    case COOPREDUCE_INT32: {
        /* uniform: every int32 equally likely (the hash's top 32 bits); the other kinds scale
         * their double by 2^20 and truncate (normal: about +-2^22; signed: up to +-2^40, so
         * clamped to the int32 range, which makes the extremes appear). */
        int32_t *dst = out;
        for (uint64_t k = begin; k < end; k++) {
            if (kind == CR_GEN_UNIFORM) {
                dst[k] = (int32_t)(uint32_t)(cr_gen_hash(seed, first + k) >> 32);
                continue;
            }
            double v = int_value(kind, seed, first + k);
            dst[k] = v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
        }
        break;
    }
    case COOPREDUCE_UINT32: {
        uint32_t *dst = out;
        for (uint64_t k = begin; k < end; k++) {
            if (kind == CR_GEN_UNIFORM) {
                dst[k] = (uint32_t)(cr_gen_hash(seed, first + k) >> 32);
                continue;
            }
            double v = fabs(int_value(kind, seed, first + k));
            dst[k] = v >= 4294967295.0 ? UINT32_MAX : (uint32_t)v;
        }
        break;
    }
    case COOPREDUCE_INT64: {
        int64_t *dst = out;
        for (uint64_t k = begin; k < end; k++) {
            if (kind == CR_GEN_UNIFORM) {
                dst[k] = (int64_t)cr_gen_hash(seed, first + k);
                continue;
            }
            double v = int_value(kind, seed, first + k); /* |v| <= 2^40: no clamping needed */
            dst[k] = v >= 0x1.0p63 ? INT64_MAX : v <= -0x1.0p63 ? INT64_MIN : (int64_t)v;
        }
        break;
    }
    case COOPREDUCE_UINT64: {
        uint64_t *dst = out;
        for (uint64_t k = begin; k < end; k++) {
            if (kind == CR_GEN_UNIFORM) {
                dst[k] = cr_gen_hash(seed, first + k);
                continue;
            }
            double v = fabs(int_value(kind, seed, first + k));
            dst[k] = v >= 0x1.0p64 ? UINT64_MAX : (uint64_t)v;
        }
        break;
    }
    case COOPREDUCE_FLOAT64: {
        double *dst = out;
        for (uint64_t k = begin; k < end; k++) dst[k] = cr_gen_value(kind, seed, first + k);
        break;
    }
    default: /* cr_gen_fill checked the dtype */ break;
    }
}

typedef struct {
    void *out;
    uint64_t first, begin, end;
    coopreduce_dtype dtype;
    cr_gen_kind kind;
    uint64_t seed;
} fill_job;

static void *fill_job_run(void *arg)
{
    const fill_job *job = arg;
    fill_range(job->out, job->first, job->begin, job->end, job->dtype, job->kind, job->seed);
    return NULL;
}

#define MAX_FILL_THREADS  256
#define MIN_PARALLEL_FILL (UINT64_C(1) << 20)

int cr_gen_fill(void *out, uint64_t first, uint64_t n, coopreduce_dtype dtype, cr_gen_kind kind,
                uint64_t seed, int threads)
{
    if (!cr_gen_supports(kind, dtype)) return -1;
    if (n == 0) return 0;
    if (out == NULL) return -1;

    if (threads <= 1 || n < MIN_PARALLEL_FILL) {
        fill_range(out, first, 0, n, dtype, kind, seed);
        return 0;
    }
    if (threads > MAX_FILL_THREADS) threads = MAX_FILL_THREADS;

    fill_job jobs[MAX_FILL_THREADS];
    pthread_t tids[MAX_FILL_THREADS];
    int started[MAX_FILL_THREADS];
    uint64_t per_thread = n / (uint64_t)threads;
    uint64_t remainder = n % (uint64_t)threads;
    uint64_t begin = 0;
    for (int t = 0; t < threads; t++) {
        uint64_t len = per_thread + ((uint64_t)t < remainder ? 1 : 0);
        jobs[t] = (fill_job){out, first, begin, begin + len, dtype, kind, seed};
        begin += len;
    }
    /* Job 0 runs on the calling thread. A thread that cannot be created is not an error: its
     * range is filled here instead, since every element is independent of every other. */
    for (int t = 1; t < threads; t++)
        started[t] = pthread_create(&tids[t], NULL, fill_job_run, &jobs[t]) == 0;
    fill_job_run(&jobs[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        else
            fill_job_run(&jobs[t]);
    }
    return 0;
}
