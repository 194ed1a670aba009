/* ordered.c — the canonical-order operations on the CPU (CR_FAMILY_ORDERED): SUM and MEAN of
 * 16-bit floats, SUMSQ, NORM2 and DOT of every float type. The reference the GPU (ordered.cu)
 * must match bit for bit; docs/DETERMINISM.md ("Operations") states the rules.
 *
 * Level 1 turns each chunk of C inputs into C leaves in the accumulation type (widened, squared,
 * multiplied, or split into Blue's three classes) and reduces them with the chunk tree of
 * canonical.c; the level-1 partials are then summed by the canonical sum itself (the canonical
 * sum of N > C elements is, by its definition, the canonical sum of its level-1 partials).
 * Threads take contiguous ranges of chunks; the op's final rule (values.h) gives the result.
 *
 * Compiled with -ffp-contract=off and without fast-math (CMakeLists.txt): a product and the
 * addition after it are two roundings, as on the GPU (nvcc --fmad=false). */
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "core/values.h"
#include "cpu/cpu.h"
#include "cpu/runtime.h"

typedef struct {
    coopreduce_op op;
    coopreduce_dtype dt; /* the input type */
    const void *x, *y;
    uint64_t n;
    void *part[3];   /* level-1 partials (NORM2: big, medium, small) */
    uint64_t g0, g1; /* this job's chunks */
    int f16c;        /* float16 widening by the F16C instruction */
} ordered_job;

/* ---- Leaves of one chunk, by vector loops (the accumulation type's IEEE operations, one
 * rounding each: the bits do not depend on the vector width). --------------------------------- */
#define WIDEN(h, brain) ((brain) ? cr_bf16_to_f32(h) : cr_f16_to_f32_nobranch(h))
CR_SIMD_CLONES static void widen_half(const uint16_t *h, uint64_t m, int brain, float *w)
{
    if (brain)
        for (uint64_t i = 0; i < m; i++) w[i] = WIDEN(h[i], 1);
    else
        for (uint64_t i = 0; i < m; i++) w[i] = WIDEN(h[i], 0);
}
/* 16-bit SUMSQ and DOT: widening and the product in one pass. */
CR_SIMD_CLONES static void square_half(const uint16_t *h, uint64_t m, int brain, float *out)
{
    if (brain)
        for (uint64_t i = 0; i < m; i++) {
            const float v = WIDEN(h[i], 1);
            out[i] = v * v;
        }
    else
        for (uint64_t i = 0; i < m; i++) {
            const float v = WIDEN(h[i], 0);
            out[i] = v * v;
        }
}
CR_SIMD_CLONES static void mul_half(const uint16_t *a, const uint16_t *b, uint64_t m, int brain,
                                    float *out)
{
    if (brain)
        for (uint64_t i = 0; i < m; i++) out[i] = WIDEN(a[i], 1) * WIDEN(b[i], 1);
    else
        for (uint64_t i = 0; i < m; i++) out[i] = WIDEN(a[i], 0) * WIDEN(b[i], 0);
}
/* binary16 by the F16C conversion instruction where the CPU has it (vcvtph2ps: 8 at a time,
 * exact; it quiets a signaling NaN, whose payload no result carries: every NaN result is the
 * canonical NaN). GCC's vector loop above cannot use it, as the AVX2 clone leaves F16C out,
 * and without it widening float16 in integer code is the slowest leaf of all (docs/PERF.md). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CR_NO_SIMD_CLONES)
#include <cpuid.h>
#include <immintrin.h>
#define CR_HAVE_F16C_PATH 1
__attribute__((target("avx2,f16c"))) static void widen_f16_f16c(const uint16_t *h, uint64_t m,
                                                                float *w)
{
    uint64_t i = 0;
    for (; i + 8 <= m; i += 8)
        _mm256_storeu_ps(w + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
    for (; i < m; i++) w[i] = cr_f16_to_f32_nobranch(h[i]);
}
#endif
static int cpu_has_f16c(void)
{
#ifdef CR_HAVE_F16C_PATH
    /* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know it.
     * Asked once: CPUID is slow, and under a hypervisor a trap, too dear for every call.
     * 0: not asked yet; racing first calls store the same answer. */
    static int cached;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (!v) {
        unsigned int a, b, c, d;
        const int has =
            __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1);
        v = has ? 1 : -1;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v > 0;
#else
    return 0;
#endif
}
static void widen_any(const uint16_t *h, uint64_t m, int brain, int f16c, float *w)
{
#ifdef CR_HAVE_F16C_PATH
    if (!brain && f16c) {
        widen_f16_f16c(h, m, w);
        return;
    }
#endif
    (void)f16c;
    widen_half(h, m, brain, w);
}
CR_SIMD_CLONES static void square_f32(const float *a, uint64_t m, float *out)
{
    for (uint64_t i = 0; i < m; i++) out[i] = a[i] * a[i];
}
CR_SIMD_CLONES static void mul_f32(const float *a, const float *b, uint64_t m, float *out)
{
    for (uint64_t i = 0; i < m; i++) out[i] = a[i] * b[i];
}
CR_SIMD_CLONES static void square_f64(const double *a, uint64_t m, double *out)
{
    for (uint64_t i = 0; i < m; i++) out[i] = a[i] * a[i];
}
CR_SIMD_CLONES static void mul_f64(const double *a, const double *b, uint64_t m, double *out)
{
    for (uint64_t i = 0; i < m; i++) out[i] = a[i] * b[i];
}

/* NORM2's medium pass: the squares (the medium leaves, |x|*|x| == x*x) into out, and whether
 * any element lies outside the medium class (values.h's TBIG / TSML on the bits of |x|; zero
 * excepted, NaN and inf included). When none does, the chunk's big and small leaves are all
 * +0.0 (padding -0.0), whose chunk trees are +0.0: the same bits as the three-class leaves, as
 * on the GPU (docs/DETERMINISM.md, NORM2). */
#define DEFINE_MEDIUM_F32(NAME, SRC, LOAD)                                                         \
    CR_SIMD_CLONES static int NAME(const SRC *a, uint64_t m, int brain, float *out)                \
    {                                                                                              \
        uint32_t mx = 0, mn = 0xffffffffu; /* the largest |x| bits; the smallest of bits - 1 */    \
        (void)brain;                                                                               \
        for (uint64_t i = 0; i < m; i++) {                                                         \
            union {                                                                                \
                float f;                                                                           \
                uint32_t u;                                                                        \
            } v = {LOAD};                                                                          \
            const uint32_t b = v.u & 0x7fffffffu;                                                  \
            mx = b > mx ? b : mx;                                                                  \
            mn = b - 1u < mn ? b - 1u : mn;                                                        \
            out[i] = v.f * v.f;                                                                    \
        }                                                                                          \
        return mx > CR_NORM2_BIG_BITS_F32 || mn < CR_NORM2_SML_BITS_F32 - 1u;                      \
    }
/* float32 input; 16-bit input widened on the fly (one pass instead of widening first). */
DEFINE_MEDIUM_F32(medium_f32, float, a[i])
DEFINE_MEDIUM_F32(medium_half, uint16_t, brain ? WIDEN(a[i], 1) : WIDEN(a[i], 0))
CR_SIMD_CLONES static int medium_f64(const double *a, uint64_t m, double *out)
{
    uint64_t mx = 0, mn = ~0ull;
    for (uint64_t i = 0; i < m; i++) {
        union {
            double f;
            uint64_t u;
        } v = {a[i]};
        const uint64_t b = v.u & 0x7fffffffffffffffull;
        mx = b > mx ? b : mx;
        mn = b - 1u < mn ? b - 1u : mn;
        out[i] = a[i] * a[i];
    }
    return mx > (uint64_t)CR_NORM2_BIG_HI_F64 << 32 ||
           mn < ((uint64_t)CR_NORM2_SML_HI_F64 << 32) - 1u;
}

/* NORM2's three leaves of each of x[0..m): values.h's cr_norm2_leaf in a form the compiler
 * vectorises (a branch per element's class, in a scalar loop, made NORM2 of data of wide range
 * or all subnormal 50x slower than of uniform data: docs/perf-log). The class tests on the bits
 * of |x| (values.h's BIG / SML bits; inf is big, a NaN neither, as the float tests say), the
 * class's scale (1 for the medium class: |x| * 1 is |x|) and the outputs chosen by integer masks
 * (+0.0 is all zero bits): the same products of the same values, so the same leaves. Selects of
 * floats on float compares stay branches under -ftrapping-math (GCC's if-conversion). */
#define DEFINE_CLASSES(NAME, T, U, BITS, FROM, BIG, SML, INF, SBIG, SSML)                          \
    CR_SIMD_CLONES static void NAME(const T *restrict x, uint64_t m, T *restrict big,              \
                                    T *restrict med, T *restrict sml)                              \
    {                                                                                              \
        const U sign = (U)1 << (8 * sizeof(U) - 1), kb = BITS(SBIG), ks = BITS(SSML),             \
                one = BITS((T)1);                                                                  \
        for (uint64_t i = 0; i < m; i++) {                                                         \
            const U a = BITS(x[i]) & ~sign;                                                        \
            const U b = (U)0 - (U)((a > (BIG)) & (a <= (INF))), s = (U)0 - (U)(a < (SML));         \
            const U scale = (b & kb) | (s & ks) | (~(b | s) & one);                                \
            const T y = FROM(a) * FROM(scale), q = y * y;                                          \
            const U qb = BITS(q);                                                                  \
            big[i] = FROM(qb & b);                                                                 \
            med[i] = FROM(qb & ~(b | s));                                                          \
            sml[i] = FROM(qb & s);                                                                 \
        }                                                                                          \
    }
DEFINE_CLASSES(classes_f32, float, uint32_t, cr_f32_bits, cr_f32_from, CR_NORM2_BIG_BITS_F32,
               CR_NORM2_SML_BITS_F32, 0x7f800000u, CR_SBIG_F32, CR_SSML_F32)
DEFINE_CLASSES(classes_f64, double, uint64_t, cr_f64_bits, cr_f64_from,
               (uint64_t)CR_NORM2_BIG_HI_F64 << 32, (uint64_t)CR_NORM2_SML_HI_F64 << 32,
               0x7ff0000000000000ull, CR_SBIG_F64, CR_SSML_F64)

/* Level 1 for chunks [g0, g1): the leaves of each chunk into buf, then the chunk tree. */
/* y is NULL unless the op is DOT: no arithmetic on it then (undefined behaviour on NULL). */
static void *ordered_worker(void *arg)
{
    const ordered_job *j = arg;
    const int f64 = j->dt == COOPREDUCE_FLOAT64,
              half = j->dt == COOPREDUCE_FLOAT16 || j->dt == COOPREDUCE_BFLOAT16;
    const int brain = j->dt == COOPREDUCE_BFLOAT16;
    const uint64_t C = f64 ? CR_CHUNK_F64 : CR_CHUNK_F32;
    const coopreduce_op op = j->op;
    union {
        float f[3][CR_CHUNK_F32];
        double d[3][CR_CHUNK_F64];
    } buf;
    float wide[CR_CHUNK_F32]; /* NORM2 of 16-bit input: the widened values */
    /* NORM2: the chunk before had a big or small partial other than +0.0, so this one takes the
     * three classes at once, without the medium pass (whose squares of tiny values underflow,
     * slow on the CPU, and are thrown away when the chunk needs the three classes): on data of
     * wide range nearly every chunk does. The same partials either way (the medium pass is a
     * shortcut for chunks whose big and small partials are +0.0). */
    int three = 0;
    for (uint64_t g = j->g0; g < j->g1; g++) {
        const uint64_t first = g * C, m = j->n - first < C ? j->n - first : C;
        int sums = 1;
        if (f64) {
            const double *x = (const double *)j->x + first,
                         *y = j->y ? (const double *)j->y + first : NULL;
            double *l = buf.d[0];
            if (op == COOPREDUCE_OP_DOT) {
                mul_f64(x, y, m, l);
            } else if (op == COOPREDUCE_OP_SUMSQ) {
                square_f64(x, m, l);
            } else if (op == COOPREDUCE_OP_NORM2) {
                sums = 3;
                if (three || medium_f64(x, m, buf.d[1])) {
                    classes_f64(x, m, buf.d[0], buf.d[1], buf.d[2]);
                } else { /* medium alone: the big and small trees are +0.0 */
                    ((double *)j->part[0])[g] = ((double *)j->part[2])[g] = 0.0;
                    ((double *)j->part[1])[g] = cr_cpu_chunk_f64(buf.d[1], m);
                    continue;
                }
            } else {
                memcpy(l, x, m * 8); /* not reached: float64 sums take the canonical sum */
            }
            for (int k = 0; k < sums; k++)
                ((double *)j->part[k])[g] = cr_cpu_chunk_f64(buf.d[k], m);
            if (sums == 3) {
                const double big = ((const double *)j->part[0])[g];
                const double sml = ((const double *)j->part[2])[g];
                three = (cr_f64_bits(big) | cr_f64_bits(sml)) != 0;
            }
        } else {
            const float *x = (const float *)j->x + first,
                        *y = j->y ? (const float *)j->y + first : NULL;
            float *l = buf.f[0];
            const uint16_t *hx = (const uint16_t *)j->x + first,
                           *hy = j->y ? (const uint16_t *)j->y + first : NULL;
            const int hw = half && !brain && j->f16c; /* float16 by F16C: widen, then as float32 */
            if (hw && (op == COOPREDUCE_OP_DOT || op == COOPREDUCE_OP_SUMSQ)) {
                widen_any(hx, m, brain, 1, l);
                x = l;
                if (op == COOPREDUCE_OP_DOT) {
                    widen_any(hy, m, brain, 1, buf.f[1]);
                    y = buf.f[1];
                }
            }
            if (half && !hw && op == COOPREDUCE_OP_DOT) {
                mul_half(hx, hy, m, brain, l);
            } else if (half && !hw && op == COOPREDUCE_OP_SUMSQ) {
                square_half(hx, m, brain, l);
            } else if (op == COOPREDUCE_OP_DOT) {
                mul_f32(x, y, m, l);
            } else if (op == COOPREDUCE_OP_SUMSQ) {
                square_f32(x, m, l);
            } else if (op == COOPREDUCE_OP_NORM2) {
                sums = 3;
                /* 16-bit input widened on the fly (as fast here as F16C then a second pass) */
                const int other = three || (half ? medium_half(hx, m, brain, buf.f[1])
                                                 : medium_f32(x, m, 0, buf.f[1]));
                if (other) {
                    if (half) { /* the three classes need the widened values */
                        widen_any(hx, m, brain, j->f16c, wide);
                        x = wide;
                    }
                    classes_f32(x, m, buf.f[0], buf.f[1], buf.f[2]);
                } else { /* medium alone: the big and small trees are +0.0 */
                    ((float *)j->part[0])[g] = ((float *)j->part[2])[g] = 0.0f;
                    ((float *)j->part[1])[g] = cr_cpu_chunk_f32(buf.f[1], m);
                    continue;
                }
            } else if (half) { /* SUM, MEAN */
                widen_any(hx, m, brain, j->f16c, l);
            } else {
                memcpy(l, x, m * 4); /* not reached: float32 sums take the canonical sum */
            }
            for (int k = 0; k < sums; k++) ((float *)j->part[k])[g] = cr_cpu_chunk_f32(buf.f[k], m);
            if (sums == 3) {
                const float big = ((const float *)j->part[0])[g];
                const float sml = ((const float *)j->part[2])[g];
                three = (cr_f32_bits(big) | cr_f32_bits(sml)) != 0;
            }
        }
    }
    return NULL;
}

#define MIN_CHUNKS_PER_THREAD 16

/* Level 1 over x[0..n) (n >= 1): chunk g's value of tree k into part[k][g], computed by up to
 * the handle's threads. */
static void level1(coopreduce_handle *h, coopreduce_op op, const void *x, const void *y, uint64_t n,
                   coopreduce_dtype dt, void *const part[3])
{
    const uint64_t C = dt == COOPREDUCE_FLOAT64 ? CR_CHUNK_F64 : CR_CHUNK_F32;
    const int sums = op == COOPREDUCE_OP_NORM2 ? 3 : 1;
    const uint64_t chunks = (n + C - 1) / C;
    ordered_job jobs[CR_MAX_THREADS];
    const int f16c = dt == COOPREDUCE_FLOAT16 && cpu_has_f16c();
    uint64_t t = chunks / MIN_CHUNKS_PER_THREAD;
    if (t > (uint64_t)cr_cpu_threads(h)) t = (uint64_t)cr_cpu_threads(h);
    if (t < 1) t = 1;
    for (uint64_t i = 0; i < t; i++) {
        jobs[i] = (ordered_job){op, dt, x, y, n, {0}, chunks * i / t, chunks * (i + 1) / t, f16c};
        for (int k = 0; k < sums; k++) jobs[i].part[k] = part[k];
    }
    cr_cpu_run((int)t, ordered_worker, jobs, sizeof jobs[0]);
}

coopreduce_status cr_cpu_partials(coopreduce_handle *h, const cr_plan *p, const void *x,
                                  const void *y, uint64_t n, void *const out[3])
{
    if (n == 0) return COOPREDUCE_SUCCESS;
    if (p->family == CR_FAMILY_CANONICAL) {
        cr_cpu_level(h, p->dtype, x, n, out[0]);
        return COOPREDUCE_SUCCESS;
    }
    if (p->family != CR_FAMILY_ORDERED)
        return cr_fail(h, COOPREDUCE_ERROR_INTERNAL, "%s of %s has no canonical tree",
                       cr_op_name(p->op), cr_dtype(p->dtype)->name);
    /* MEAN's leaves are SUM's. */
    const coopreduce_op op = p->op == COOPREDUCE_OP_MEAN ? COOPREDUCE_OP_SUM : p->op;
    level1(h, op, x, y, n, p->dtype, out);
    return COOPREDUCE_SUCCESS;
}

/* The canonical sums (one, or three for NORM2) of the op's leaves, into acc[0..3). */
static coopreduce_status ordered_sums(coopreduce_handle *h, coopreduce_op op, const void *x,
                                      const void *y, uint64_t n, coopreduce_dtype dt, double acc[3])
{
    const int f64 = dt == COOPREDUCE_FLOAT64;
    const coopreduce_dtype acc_dt = f64 ? COOPREDUCE_FLOAT64 : COOPREDUCE_FLOAT32;
    const size_t as = f64 ? 8 : 4;
    const uint64_t C = f64 ? CR_CHUNK_F64 : CR_CHUNK_F32;
    const int sums = op == COOPREDUCE_OP_NORM2 ? 3 : 1;
    acc[0] = acc[1] = acc[2] = 0.0;
    if (n == 0) return COOPREDUCE_SUCCESS; /* +0.0 */
    const uint64_t chunks = (n + C - 1) / C;
    void *part = malloc((size_t)chunks * as * (size_t)sums);
    if (!part)
        return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate %llu partial sums",
                       (unsigned long long)(chunks * (uint64_t)sums));
    void *parts[3] = {part, NULL, NULL};
    for (int k = 1; k < sums; k++) parts[k] = (char *)part + (size_t)k * chunks * as;
    level1(h, op, x, y, n, dt, parts);
    coopreduce_status s = COOPREDUCE_SUCCESS;
    for (int k = 0; k < sums && !s; k++) {
        const void *p = (char *)part + (size_t)k * chunks * as;
        if (f64) {
            double v;
            if (chunks == 1) {
                v = *(const double *)p;
                if (v != v) v = cr_f64_from(CR_NAN_F64);
            } else {
                s = cr_cpu_sum(h, p, chunks, acc_dt, &v);
            }
            acc[k] = v;
        } else {
            float v;
            if (chunks == 1) {
                v = *(const float *)p;
                if (v != v) v = cr_f32_from(CR_NAN_F32);
            } else {
                s = cr_cpu_sum(h, p, chunks, acc_dt, &v);
            }
            acc[k] = v; /* exact */
        }
    }
    free(part);
    return s;
}

coopreduce_status cr_cpu_ordered(coopreduce_handle *h, const cr_plan *p, const void *x,
                                 const void *y, uint64_t n, void *result)
{
    const coopreduce_dtype dt = p->dtype;
    const int f64 = dt == COOPREDUCE_FLOAT64;
    double acc[3];
    /* MEAN's leaves are SUM's; only the final rule differs. */
    const coopreduce_op leaves = p->op == COOPREDUCE_OP_MEAN ? COOPREDUCE_OP_SUM : p->op;
    coopreduce_status s = ordered_sums(h, leaves, x, y, n, dt, acc);
    if (s) return s;
    double v = acc[0];
    if (p->op == COOPREDUCE_OP_MEAN) v = cr_mean_of_float(acc[0], n, f64);
    if (p->op == COOPREDUCE_OP_NORM2)
        v = f64 ? cr_norm2_combine_F64(acc[0], acc[1], acc[2])
                : (double)cr_norm2_combine_F32((float)acc[0], (float)acc[1], (float)acc[2]);
    cr_cpu_write_float(v, dt, p->narrow, result);
    return COOPREDUCE_SUCCESS;
}
