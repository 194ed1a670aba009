/* util.h — the helpers the test programs share (util.c; linked into every test as the static
 * library coopreduce_testutil).
 *
 *   Randomness   rnd() (splitmix64), rnd_below(), unif(), for sizes, positions and data.
 *   Seeds        test_seed_init("prog"): a fresh seed per run, or COOPREDUCE_TEST_SEED=S to
 *                replay one; printed as "prog: seed S (COOPREDUCE_TEST_SEED=S replays this run)".
 *   Programs     CPU_TEST_MAIN / cpu_test_main (--quick, seed, the CPU handle g_cpu, timed
 *                sections, summary); run_section(s).
 *   Memory, time xmalloc() (exits on failure), now_s(), gen_threads().
 *   dtypes       dt_name(), dt_size() and the classes, from the library's one table
 *                (src/core/dtype.h); the float formats' bit layout (exponent, significand
 *                widths) for the tests' own references.
 *   Bits         f32_bits / f64_bits and back; load_bits / store_bits of an element of any size;
 *                sign, infinity and canonical NaN patterns of each float type, derived from the
 *                layout here (not from the library's constants).
 *   Values       the tests' own conversions, written with integer arithmetic and independent of
 *                src/core/values.h: every float type to double (exact), and a double to any
 *                binary format rounded once to nearest even (ref_encode); load_value /
 *                store_value of an element of any dtype; hex_bytes for messages.
 *
 * C11 (with __int128, which GCC and Clang provide on the 64-bit targets the library supports). */
#ifndef COOPREDUCE_TESTS_UTIL_H
#define COOPREDUCE_TESTS_UTIL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "coopreduce.h"
#include "core/dtype.h"

typedef __int128 i128;
typedef unsigned __int128 u128;

/* Poison for results: a call must overwrite it, a failed call must leave it. */
#define POISON   0xA5
#define POISON64 0xA5A5A5A5A5A5A5A5ull

/* ---- randomness and seeds ----------------------------------------------------------------- */

/* The next number of the test's stream (splitmix64). */
uint64_t rnd(void);
/* Uniform in [0, n); 0 when n == 0. */
uint64_t rnd_below(uint64_t n);
/* Uniform in [0, 1), 53 random bits. */
double unif(void);

/* Seeds the stream from COOPREDUCE_TEST_SEED (decimal, or hexadecimal with 0x) or, when it is
 * unset or empty, from the clock and the process id; prints the seed so that a failure can be
 * replayed; returns it. */
uint64_t test_seed_init(const char *prog);
/* The seed test_seed_init chose. */
uint64_t test_seed(void);

/* ---- memory, time, threads ---------------------------------------------------------------- */

/* malloc that prints and exits on failure (allocates 1 byte for 0). */
void *xmalloc(size_t bytes);
/* Seconds of a monotonic clock. */
double now_s(void);
/* Online CPUs, at least 1 and at most 32: the threads cr_gen_fill may use. */
int gen_threads(void);
/* Runs fn and prints "section NAME  T s, F failures" (F: the CHECK failures it added). */
void run_section(const char *name, void (*fn)(void));
/* run_section for each of a list, but the one whose fn is `skip` (NULL: none), which prints a
 * SKIP line instead; with COOPREDUCE_TEST_SECTIONS=NAME,NAME,.. set, only the sections named
 * (for a sanitizer or a planted bug on one path), a name that is no section's a failure. */
typedef struct {
    const char *name;
    void (*fn)(void);
} test_section;
void run_sections(const test_section *list, size_t count, void (*skip)(void));
/* The main of a CPU test program: line-buffered output (progress survives a crash), --quick
 * (sets test_quick; any other argument: usage, exit code 2), the seed, g_cpu, each section
 * timed, the summary line; returns the exit code. */
int cpu_test_main(const char *prog, int argc, char **argv, const test_section *sections,
                  size_t count);
/* The whole main of a CPU test program: CPU_TEST_MAIN("test_x", {"one", one}, {"two", two}). */
#define CPU_TEST_MAIN(prog, ...)                                                                   \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        static const test_section sections_[] = {__VA_ARGS__};                                     \
        return cpu_test_main(prog, argc, argv, sections_, sizeof sections_ / sizeof sections_[0]); \
    }
/* A CPU handle of every online CPU (threads = 0), created by cpu_test_main. */
extern coopreduce_handle *g_cpu;
/* 1 under --quick: fewer and smaller cases. */
extern int test_quick;
/* The number of significant bits of v (0 for 0). */
int bit_length(u128 v);

/* ---- dtypes (src/core/dtype.h) ------------------------------------------------------------- */

/* "float32" ..., or "?" for a value that is not a dtype. */
static inline const char *dt_name(coopreduce_dtype dt)
{
    const cr_dtype_info *d = cr_dtype(dt);
    return d ? d->name : "?";
}
/* "f32" ... (the CLI's spelling), or "?". */
static inline const char *dt_code(coopreduce_dtype dt)
{
    const cr_dtype_info *d = cr_dtype(dt);
    return d ? d->code : "?";
}
static inline size_t dt_size(coopreduce_dtype dt) { return cr_dtype_size(dt); }
static inline int dt_is_float(coopreduce_dtype dt) { return cr_dtype_is_float(dt); }
static inline int dt_is_half(coopreduce_dtype dt) { return cr_dtype_is_half(dt); }
static inline int dt_is_signed(coopreduce_dtype dt)
{
    const cr_dtype_info *d = cr_dtype(dt);
    return d && d->cls == CR_CLASS_SIGNED;
}
static inline int dt_is_unsigned(coopreduce_dtype dt)
{
    const cr_dtype_info *d = cr_dtype(dt);
    return d && d->cls == CR_CLASS_UNSIGNED;
}

/* The float dtypes (class FLOAT in dtype.h) in the enum's order, into out; returns how many. */
int float_dtypes(coopreduce_dtype out[COOPREDUCE_DTYPE_COUNT]);

/* The bit layout of a float dtype (IEEE binary formats; bfloat16 is binary32's high half):
 * exponent and stored-significand widths; exits (unknown_dtype) for any other type. */
void float_layout(coopreduce_dtype dt, int *exp_bits, int *man_bits);

/* ---- bit patterns -------------------------------------------------------------------------- */

static inline uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline uint64_t f64_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline double f64_from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Element i of an array of es-byte elements (2, 4 or 8), as bits. */
static inline uint64_t load_bits(const void *x, uint64_t i, size_t es)
{
    const char *p = (const char *)x + i * es;
    uint16_t h;
    uint32_t w;
    uint64_t d;
    switch (es) {
    case 2: memcpy(&h, p, 2); return h;
    case 4: memcpy(&w, p, 4); return w;
    default: memcpy(&d, p, 8); return d;
    }
}
static inline void store_bits(void *x, uint64_t i, size_t es, uint64_t bits)
{
    char *p = (char *)x + i * es;
    const uint16_t h = (uint16_t)bits;
    const uint32_t w = (uint32_t)bits;
    switch (es) {
    case 2: memcpy(p, &h, 2); break;
    case 4: memcpy(p, &w, 4); break;
    default: memcpy(p, &bits, 8); break;
    }
}

/* Patterns of a float dtype, from its layout: the sign bit, +inf (the exponent mask), the
 * canonical quiet NaN (+, exponent all ones, only the top significand bit set). */
uint64_t sign_bits(coopreduce_dtype dt);
uint64_t inf_bits(coopreduce_dtype dt);
uint64_t nan_bits(coopreduce_dtype dt);

/* ---- values -------------------------------------------------------------------------------- */

/* Bits of the binary format of exp_bits exponent and man_bits stored significand bits (narrower
 * than binary64) to double: exact; NaN stays NaN (sign and payload not kept). */
static inline double ref_decode(uint64_t bits, int exp_bits, int man_bits)
{
    const uint64_t top = (1ull << exp_bits) - 1, e = (bits >> man_bits) & top;
    const uint64_t m = bits & ((1ull << man_bits) - 1);
    const int bias = (1 << (exp_bits - 1)) - 1;
    const double s = (bits >> (exp_bits + man_bits)) & 1 ? -1.0 : 1.0;
    if (e == top) return m ? NAN : s * INFINITY;
    /* an integer below 2^53 times a power of two inside binary64's normal range: exact */
    const int k = (e ? (int)e : 1) - bias - man_bits;
    const double scale = f64_from_bits((uint64_t)(k + 1023) << 52);
    return s * (double)(e ? m | 1ull << man_bits : m) * scale;
}
static inline double ref_f16_to_double(uint16_t h) { return ref_decode(h, 5, 10); }
static inline double ref_bf16_to_double(uint16_t b) { return ref_decode(b, 8, 7); }

/* v rounded once, to nearest with ties to even, to the binary format of exp_bits exponent and
 * man_bits stored significand bits (binary16: 5, 10; bfloat16: 8, 7; binary32: 8, 23), as its
 * bits: subnormal results rounded at their own position, beyond the largest finite value +-inf
 * (as IEEE-754 defines overflow), NaN the canonical quiet NaN, zeros keep their sign. Integer
 * arithmetic on v's bits only. */
uint64_t ref_encode(double v, int exp_bits, int man_bits);
static inline uint16_t ref_f16_from_double(double v) { return (uint16_t)ref_encode(v, 5, 10); }
static inline uint16_t ref_bf16_from_double(double v) { return (uint16_t)ref_encode(v, 8, 7); }

/* Prints that the helpers do not know dtype dt (a dtype added to the library, not yet here) and
 * exits: a test must not run on values it cannot read. */
_Noreturn void unknown_dtype(coopreduce_dtype dt, const char *where);

/* The bits of an element of an integer dtype as its value, exactly. */
static inline i128 int_of_bits(uint64_t bits, coopreduce_dtype dt)
{
    switch (dt) {
    case COOPREDUCE_INT32: return (int32_t)(uint32_t)bits;
    case COOPREDUCE_UINT32: return (uint32_t)bits;
    case COOPREDUCE_INT64: return (int64_t)bits;
    case COOPREDUCE_UINT64: return bits;
    default: unknown_dtype(dt, "int_of_bits");
    }
}
/* The bits of an element of dt as a double: exact for the float types (the tests' own 16-bit
 * decoders) and for integers up to 2^53; larger integers rounded by the C conversion. */
static inline double value_of_bits(uint64_t bits, coopreduce_dtype dt)
{
    switch (dt) {
    case COOPREDUCE_FLOAT32: return (double)f32_from_bits((uint32_t)bits);
    case COOPREDUCE_FLOAT64: return f64_from_bits(bits);
    case COOPREDUCE_FLOAT16: return ref_f16_to_double((uint16_t)bits);
    case COOPREDUCE_BFLOAT16: return ref_bf16_to_double((uint16_t)bits);
    default: return (double)int_of_bits(bits, dt); /* integers; unknown_dtype otherwise */
    }
}
/* Element i of an array of dt, as above. */
static inline double load_value(const void *x, uint64_t i, coopreduce_dtype dt)
{
    return value_of_bits(load_bits(x, i, dt_size(dt)), dt);
}
static inline i128 load_int(const void *x, uint64_t i, coopreduce_dtype dt)
{
    return int_of_bits(load_bits(x, i, dt_size(dt)), dt);
}
/* Writes v as element i of dt: float32 and float64 by the C conversion (round to nearest),
 * float16 and bfloat16 by ref_encode, integers by the C conversion (truncation toward zero; v
 * must be in the type's range). */
void store_value(void *x, uint64_t i, coopreduce_dtype dt, double v);

/* The len bytes at b as hexadecimal, most significant (last) byte first, into buf. */
void hex_bytes(char *buf, size_t cap, const void *b, size_t len);

#endif /* COOPREDUCE_TESTS_UTIL_H */
