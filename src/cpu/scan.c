/* scan.c — the order-independent operations on the CPU (CR_FAMILY_SCAN): MIN, MAX, ABSMAX,
 * ARGMIN, ARGMAX of every dtype, and the exact SUM and MEAN of the integer dtypes. The
 * reference the GPU (scan.cu) must match bit for bit.
 *
 * Each thread reduces a contiguous range and the ranges are combined in order; any order gives
 * the same result, because the rules (values.h, docs/DETERMINISM.md "Operations") make each of
 * these a fold over a total order, or exact integer addition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/values.h"
#include "cpu/cpu.h"
#include "cpu/runtime.h"

/* ---- Order-independent operations ------------------------------------------------------------
 * One state per thread, folded element by element, then the threads' states in order. The
 * state is generic: for floats the value as a double (every input type is exact in a double)
 * plus its original bits, for integers a 128-bit value; idx the index of the current best. */
typedef struct {
    coopreduce_op op;
    coopreduce_dtype dt;
    const void *x;
    uint64_t i0, i1;
    /* out */
    int have; /* an element was seen */
    int nan;  /* a NaN was seen (floats): idx is the first one */
    uint64_t idx;
    double v;      /* floats: the best value, widened */
    uint64_t bits; /* floats: its bit pattern in the input type */
    __int128 iv;   /* integers: the best value, or the sum */
} scan_job;

static void float_at(const void *x, uint64_t i, coopreduce_dtype dt, double *v, uint64_t *bits)
{
    switch (dt) {
    case COOPREDUCE_FLOAT64:
        *v = ((const double *)x)[i];
        *bits = cr_f64_bits(*v);
        break;
    case COOPREDUCE_FLOAT32: {
        const float f = ((const float *)x)[i];
        *v = f;
        *bits = cr_f32_bits(f);
        break;
    }
    default: {
        const uint16_t b = ((const uint16_t *)x)[i];
        *v = dt == COOPREDUCE_FLOAT16 ? cr_f16_to_f32(b) : cr_bf16_to_f32(b);
        *bits = b;
        break;
    }
    }
}

static __int128 int_at(const void *x, uint64_t i, coopreduce_dtype dt)
{
    switch (dt) {
    case COOPREDUCE_INT32: return ((const int32_t *)x)[i];
    case COOPREDUCE_UINT32: return ((const uint32_t *)x)[i];
    case COOPREDUCE_INT64: return ((const int64_t *)x)[i];
    default: return ((const uint64_t *)x)[i];
    }
}

/* Does candidate (v, i) replace the best (bv, bi)? For MIN/MAX the order puts -0.0 below +0.0;
 * for ARGMIN/ARGMAX values compare as IEEE numbers and the smaller index wins ties. NaN is
 * handled before. ABSMAX compares |x|. */
static int float_better(coopreduce_op op, double v, uint64_t i, double bv, uint64_t bi)
{
    switch (op) {
    case COOPREDUCE_OP_MIN: return cr_less_f64(v, bv);
    case COOPREDUCE_OP_MAX: return cr_less_f64(bv, v);
    case COOPREDUCE_OP_ABSMAX: return fabs(v) > fabs(bv);
    case COOPREDUCE_OP_ARGMIN: return v < bv || (v == bv && i < bi);
    default: return v > bv || (v == bv && i < bi); /* ARGMAX */
    }
}

static int int_better(coopreduce_op op, __int128 v, uint64_t i, __int128 bv, uint64_t bi)
{
    switch (op) {
    case COOPREDUCE_OP_MIN: return v < bv;
    case COOPREDUCE_OP_MAX: return v > bv;
    case COOPREDUCE_OP_ABSMAX: return (v < 0 ? -v : v) > (bv < 0 ? -bv : bv);
    case COOPREDUCE_OP_ARGMIN: return v < bv || (v == bv && i < bi);
    default: return v > bv || (v == bv && i < bi);
    }
}

/* Folds state b (a later range) into a. */
static void scan_merge(scan_job *a, const scan_job *b)
{
    if (!b->have) return;
    if (!a->have) {
        a->have = 1;
        a->nan = b->nan;
        a->idx = b->idx;
        a->v = b->v;
        a->bits = b->bits;
        a->iv = b->iv;
        return;
    }
    if (a->op == COOPREDUCE_OP_SUM || a->op == COOPREDUCE_OP_MEAN) {
        a->iv += b->iv;
        return;
    }
    if (cr_dtype_is_float(a->dt)) {
        if (a->nan) return; /* a's NaN comes first */
        if (b->nan) {
            *a = (scan_job){a->op, a->dt, a->x, a->i0, a->i1, 1, 1, b->idx, b->v, b->bits, 0};
            return;
        }
        if (float_better(a->op, b->v, b->idx, a->v, a->idx)) {
            a->idx = b->idx;
            a->v = b->v;
            a->bits = b->bits;
        }
    } else if (int_better(a->op, b->iv, b->idx, a->iv, a->idx)) {
        a->idx = b->idx;
        a->iv = b->iv;
    }
}

/* ---- Block summaries: which blocks can change the best ---------------------------------------
 * The element-by-element fold above is the definition; it is slow (a generic state per
 * element). A block of elements is folded only when it may change the state: its summary,
 * computed by vector code over the raw bits, says whether it holds a NaN or an element that
 * could beat the current best. The test is conservative (it may fold a block that changes
 * nothing, never skips one that would), so the result is the fold's whatever the data. On
 * random data almost every block is skipped after the first few.
 *
 * Floats are compared through a monotone integer key of their bits: key = bits, with the
 * magnitude bits flipped when the sign is set, as a signed integer. The key order is IEEE's with
 * -0.0 below +0.0 (MIN / MAX's order, a refinement of ARGMIN / ARGMAX's), and NaNs are told
 * apart by their magnitude bits (above the infinity's). */
#define SCAN_BLOCK 4096

typedef struct {
    int64_t kmin, kmax;  /* smallest and largest key (floats) or value (signed integers) */
    uint64_t umin, umax; /* unsigned integers: smallest and largest value */
    uint64_t amax;       /* floats: largest magnitude bits (NaN when above the infinity's) */
} block_summary;

#define DEFINE_FLOAT_SUMMARY(NAME, UT, ST, SHIFT, MAG, SMIN, SMAX)                                 \
    CR_SIMD_CLONES static void NAME(const UT *x, uint64_t m, block_summary *out)                   \
    {                                                                                              \
        ST mn = (SMAX), mx = (SMIN);                                                               \
        UT am = 0;                                                                                 \
        for (uint64_t i = 0; i < m; i++) {                                                         \
            const UT b = x[i];                                                                     \
            const ST k = (ST)(b ^ (UT)((UT)((ST)b >> (SHIFT)) >> 1));                              \
            const UT a = b & (MAG);                                                                \
            mn = k < mn ? k : mn;                                                                  \
            mx = k > mx ? k : mx;                                                                  \
            am = a > am ? a : am;                                                                  \
        }                                                                                          \
        out->kmin = mn;                                                                            \
        out->kmax = mx;                                                                            \
        out->amax = am;                                                                            \
    }
DEFINE_FLOAT_SUMMARY(summary_b64, uint64_t, int64_t, 63, 0x7fffffffffffffffull, INT64_MIN,
                     INT64_MAX)
DEFINE_FLOAT_SUMMARY(summary_b32, uint32_t, int32_t, 31, 0x7fffffffu, INT32_MIN, INT32_MAX)
DEFINE_FLOAT_SUMMARY(summary_b16, uint16_t, int16_t, 15, 0x7fffu, INT16_MIN, INT16_MAX)

#define DEFINE_INT_SUMMARY(NAME, T, LO, HI, KMIN, KMAX)                                            \
    CR_SIMD_CLONES static void NAME(const T *x, uint64_t m, block_summary *out)                    \
    {                                                                                              \
        T mn = (HI), mx = (LO);                                                                    \
        for (uint64_t i = 0; i < m; i++) {                                                         \
            const T v = x[i];                                                                      \
            mn = v < mn ? v : mn;                                                                  \
            mx = v > mx ? v : mx;                                                                  \
        }                                                                                          \
        out->KMIN = mn;                                                                            \
        out->KMAX = mx;                                                                            \
    }
DEFINE_INT_SUMMARY(summary_i32, int32_t, INT32_MIN, INT32_MAX, kmin, kmax)
DEFINE_INT_SUMMARY(summary_i64, int64_t, INT64_MIN, INT64_MAX, kmin, kmax)
DEFINE_INT_SUMMARY(summary_u32, uint32_t, 0, UINT32_MAX, umin, umax)
DEFINE_INT_SUMMARY(summary_u64, uint64_t, 0, UINT64_MAX, umin, umax)

/* The key of a float's bits (see above), for an element of es bytes. */
static int64_t float_key(uint64_t bits, size_t es)
{
    switch (es) {
    case 8: return (int64_t)(bits ^ ((uint64_t)((int64_t)bits >> 63) >> 1));
    case 4: {
        const uint32_t b = (uint32_t)bits;
        return (int32_t)(b ^ ((uint32_t)((int32_t)b >> 31) >> 1));
    }
    default: {
        const uint16_t b = (uint16_t)bits;
        return (int16_t)(b ^ (uint16_t)((uint16_t)((int16_t)b >> 15) >> 1));
    }
    }
}

/* May elements [b0, b1) change state j (which holds an element and no NaN)? */
static int block_may_change(const scan_job *j, uint64_t b0, uint64_t b1)
{
    block_summary s;
    const uint64_t m = b1 - b0;
    const coopreduce_op op = j->op;
    const int lowest = op == COOPREDUCE_OP_MIN || op == COOPREDUCE_OP_ARGMIN;
    if (cr_dtype_is_float(j->dt)) {
        const size_t es = cr_dtype_size(j->dt);
        uint64_t inf_mag;
        if (es == 8) {
            summary_b64((const uint64_t *)j->x + b0, m, &s);
            inf_mag = 0x7ff0000000000000ull;
        } else if (es == 4) {
            summary_b32((const uint32_t *)j->x + b0, m, &s);
            inf_mag = 0x7f800000u;
        } else {
            summary_b16((const uint16_t *)j->x + b0, m, &s);
            inf_mag = j->dt == COOPREDUCE_FLOAT16 ? 0x7c00u : 0x7f80u;
        }
        if (s.amax > inf_mag) return 1; /* a NaN */
        const uint64_t mag = j->bits & ((1ull << (8 * es - 1)) - 1);
        if (op == COOPREDUCE_OP_ABSMAX) return s.amax > mag;
        const int64_t kb = float_key(j->bits, es);
        /* MIN / MAX: a strictly better key; ARGMIN / ARGMAX: a strictly better IEEE value, which
         * has a strictly better key too (later indices never win ties). */
        return lowest ? s.kmin < kb : s.kmax > kb;
    }
    const __int128 bv = j->iv;
    switch (j->dt) {
    case COOPREDUCE_INT32: summary_i32((const int32_t *)j->x + b0, m, &s); break;
    case COOPREDUCE_INT64: summary_i64((const int64_t *)j->x + b0, m, &s); break;
    case COOPREDUCE_UINT32: summary_u32((const uint32_t *)j->x + b0, m, &s); break;
    default: summary_u64((const uint64_t *)j->x + b0, m, &s); break;
    }
    const int uns = j->dt == COOPREDUCE_UINT32 || j->dt == COOPREDUCE_UINT64;
    const __int128 lo = uns ? (__int128)s.umin : (__int128)s.kmin;
    const __int128 hi = uns ? (__int128)s.umax : (__int128)s.kmax;
    if (op == COOPREDUCE_OP_ABSMAX) {
        const __int128 a = bv < 0 ? -bv : bv;
        return hi > a || -lo > a;
    }
    return lowest ? lo < bv : hi > bv;
}

/* The fold of elements [b0, b1) into j; returns 1 when a NaN ended the scan. */
static int fold_range(scan_job *j, uint64_t b0, uint64_t b1)
{
    if (cr_dtype_is_float(j->dt)) {
        for (uint64_t i = b0; i < b1; i++) {
            double v;
            uint64_t bits;
            float_at(j->x, i, j->dt, &v, &bits);
            if (v != v) {
                j->nan = 1;
                j->idx = i;
                return 1; /* the first NaN decides every float op */
            }
            if (float_better(j->op, v, i, j->v, j->idx)) {
                j->v = v;
                j->bits = bits;
                j->idx = i;
            }
        }
    } else {
        for (uint64_t i = b0; i < b1; i++) {
            const __int128 v = int_at(j->x, i, j->dt);
            if (int_better(j->op, v, i, j->iv, j->idx)) {
                j->iv = v;
                j->idx = i;
            }
        }
    }
    return 0;
}

/* Integer SUM and MEAN, exact, by vector loops. 32-bit inputs in 64-bit lanes (a call has
 * n <= 2^32: no overflow). 64-bit inputs as 128 bits: the words added modulo 2^64 with the
 * carries counted, and the negative ones counted, since a negative int64 is its unsigned
 * pattern minus 2^64. */
CR_SIMD_CLONES static int64_t sum_i32(const int32_t *x, uint64_t m)
{
    int64_t s = 0;
    for (uint64_t i = 0; i < m; i++) s += x[i];
    return s;
}
CR_SIMD_CLONES static uint64_t sum_u32(const uint32_t *x, uint64_t m)
{
    uint64_t s = 0;
    for (uint64_t i = 0; i < m; i++) s += x[i];
    return s;
}
CR_SIMD_CLONES static void sum_w64(const uint64_t *x, uint64_t m, uint64_t *lo, uint64_t *carries,
                                   uint64_t *negs)
{
    uint64_t s = 0, c = 0, ng = 0;
    for (uint64_t i = 0; i < m; i++) {
        const uint64_t u = x[i];
        s += u;
        c += s < u;
        ng += u >> 63;
    }
    *lo = s;
    *carries = c;
    *negs = ng;
}

static void *scan_worker(void *arg)
{
    scan_job *j = arg;
    if (j->i0 >= j->i1) return NULL;
    const int fl = cr_dtype_is_float(j->dt);
    const int sum = j->op == COOPREDUCE_OP_SUM || j->op == COOPREDUCE_OP_MEAN;
    j->have = 1;
    j->nan = 0;
    j->idx = j->i0;
    j->iv = 0;
    if (sum) {
        /* Integers only (api.c routes float sums to the ordered path). A 32-bit input sums in
         * 64 bits (n <= 2^32), a 64-bit one in 128. */
        const uint64_t m = j->i1 - j->i0;
        switch (j->dt) {
        case COOPREDUCE_INT32: j->iv = sum_i32((const int32_t *)j->x + j->i0, m); break;
        case COOPREDUCE_UINT32: j->iv = sum_u32((const uint32_t *)j->x + j->i0, m); break;
        default: {
            uint64_t lo, carries, negs;
            sum_w64((const uint64_t *)j->x + j->i0, m, &lo, &carries, &negs);
            if (j->dt == COOPREDUCE_UINT64) negs = 0;
            j->iv = (__int128)(((unsigned __int128)carries << 64) + lo) -
                    (__int128)((unsigned __int128)negs << 64);
            break;
        }
        }
        return NULL;
    }
    if (fl) {
        float_at(j->x, j->i0, j->dt, &j->v, &j->bits);
        if (j->v != j->v) {
            j->nan = 1;
            return NULL;
        }
    } else {
        j->iv = int_at(j->x, j->i0, j->dt);
    }
    for (uint64_t b0 = j->i0 + 1; b0 < j->i1; b0 += SCAN_BLOCK) {
        const uint64_t b1 = j->i1 - b0 > SCAN_BLOCK ? b0 + SCAN_BLOCK : j->i1;
        if (block_may_change(j, b0, b1) && fold_range(j, b0, b1)) return NULL;
    }
    return NULL;
}

#define MIN_ELEMS_PER_THREAD (1u << 16)

static scan_job scan(coopreduce_handle *h, coopreduce_op op, const void *x, uint64_t n,
                     coopreduce_dtype dt)
{
    scan_job jobs[CR_MAX_THREADS];
    uint64_t t = n / MIN_ELEMS_PER_THREAD;
    if (t > (uint64_t)cr_cpu_threads(h)) t = (uint64_t)cr_cpu_threads(h);
    if (t < 1) t = 1;
    for (uint64_t i = 0; i < t; i++)
        jobs[i] = (scan_job){op, dt, x, n * i / t, n * (i + 1) / t, 0, 0, 0, 0.0, 0, 0};
    cr_cpu_run((int)t, scan_worker, jobs, sizeof jobs[0]);
    scan_job r = {op, dt, x, 0, n, 0, 0, 0, 0.0, 0, 0};
    for (uint64_t i = 0; i < t; i++) scan_merge(&r, &jobs[i]);
    return r;
}

/* The canonical NaN of a float input type, as its bit pattern. */
static uint64_t nan_bits(coopreduce_dtype dt)
{
    switch (dt) {
    case COOPREDUCE_FLOAT64: return CR_NAN_F64;
    case COOPREDUCE_FLOAT32: return CR_NAN_F32;
    case COOPREDUCE_FLOAT16: return CR_NAN_F16;
    default: return CR_NAN_BF16;
    }
}

coopreduce_status cr_cpu_scan(coopreduce_handle *h, const cr_plan *p, const void *x, uint64_t n,
                              void *result)
{
    const coopreduce_op op = p->op;
    const coopreduce_dtype dt = p->dtype;
    const size_t es = cr_dtype_size(dt);
    if (op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN) {
        const scan_job r = n ? scan(h, op, x, n, dt) : (scan_job){0};
        const __int128 s = r.iv;
        if (op == COOPREDUCE_OP_MEAN) {
            const double m = n == 0
                                 ? cr_f64_from(CR_NAN_F64)
                                 : cr_round_div(s < 0, (cr_u128)(s < 0 ? -s : s), 0, n, 53, -1022);
            memcpy(result, &m, 8);
        } else if (es == 4) {
            const int64_t v = (int64_t)s; /* n <= 2^32: exact (uint32: below 2^64, same bits) */
            memcpy(result, &v, 8);
        } else {
            memcpy(result, &s, 16); /* little-endian: low 8 bytes first */
        }
        return COOPREDUCE_SUCCESS;
    }
    const scan_job r = scan(h, op, x, n, dt);
    if (op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX) {
        memcpy(result, &r.idx, 8);
        return COOPREDUCE_SUCCESS;
    }
    if (cr_dtype_is_float(dt)) {
        uint64_t bits = r.nan ? nan_bits(dt) : r.bits;
        if (!r.nan && op == COOPREDUCE_OP_ABSMAX) bits &= ~(1ull << (8 * es - 1)); /* |x| */
        memcpy(result, &bits, es); /* little-endian: the low es bytes */
        return COOPREDUCE_SUCCESS;
    }
    __int128 v = r.iv;
    if (op == COOPREDUCE_OP_ABSMAX && v < 0) v = -v; /* as the unsigned type of the same width */
    memcpy(result, &v, es);
    return COOPREDUCE_SUCCESS;
}
