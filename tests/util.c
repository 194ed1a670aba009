/* util.c — the shared test helpers of util.h. */
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* ---- randomness and seeds ----------------------------------------------------------------- */

static uint64_t rng_state, run_seed;

uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }

double unif(void) { return (double)(rnd() >> 11) * 0x1p-53; }

uint64_t test_seed_init(const char *prog)
{
    const char *env = getenv("COOPREDUCE_TEST_SEED");
    if (env && env[0]) {
        run_seed = strtoull(env, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        run_seed = ((uint64_t)ts.tv_sec * 1000003u) ^ ((uint64_t)ts.tv_nsec << 20) ^
                   ((uint64_t)getpid() << 40);
        run_seed &= 0xffffffffffffull; /* short enough to retype */
    }
    rng_state = run_seed;
    printf("%s: seed %llu (COOPREDUCE_TEST_SEED=%llu replays this run)\n", prog,
           (unsigned long long)run_seed, (unsigned long long)run_seed);
    fflush(stdout);
    return run_seed;
}

uint64_t test_seed(void) { return run_seed; }

/* ---- memory, time, threads ---------------------------------------------------------------- */

void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        printf("FATAL: out of memory allocating %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int gen_threads(void)
{
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 32 ? 32 : (int)n;
}

void run_section(const char *name, void (*fn)(void))
{
    const unsigned long long before = check_failed_count();
    const double t0 = now_s();
    fn();
    const unsigned long long f = check_failed_count() - before;
    printf("section %-18s %7.2f s, %llu failure%s\n", name, now_s() - t0, f, f == 1 ? "" : "s");
    fflush(stdout);
}

int bit_length(u128 v)
{
    int n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}

/* Whether the len characters at p are exactly `name`. */
static int is_name(const char *p, size_t len, const char *name)
{
    return len == strlen(name) && strncmp(p, name, len) == 0;
}

void run_sections(const test_section *list, size_t count, void (*skip)(void))
{
    const char *only = getenv("COOPREDUCE_TEST_SECTIONS");
    for (size_t k = 0; k < count; k++) {
        int named = only == NULL;
        for (const char *p = only; p && *p && !named;) {
            const size_t len = strcspn(p, ",");
            named = is_name(p, len, list[k].name);
            p += len + (p[len] == ',');
        }
        if (list[k].fn == skip || !named) {
            printf("SKIP: section %s\n", list[k].name);
            continue;
        }
        run_section(list[k].name, list[k].fn);
    }
    /* a name that matches no section is a failure, not a run that tests nothing */
    for (const char *p = only; p && *p;) {
        const size_t len = strcspn(p, ",");
        int found = len == 0;
        for (size_t k = 0; k < count && !found; k++)
            found = is_name(p, len, list[k].name);
        CHECK(found, "COOPREDUCE_TEST_SECTIONS names no section '%.*s'", (int)len, p);
        p += len + (p[len] == ',');
    }
}

coopreduce_handle *g_cpu;
int test_quick;

int cpu_test_main(const char *prog, int argc, char **argv, const test_section *sections,
                  size_t count)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            test_quick = 1;
        } else {
            printf("usage: %s [--quick]\n", prog);
            return 2;
        }
    }
    test_seed_init(prog);
    coopreduce_status s = coopreduce_create_cpu(&g_cpu, 0);
    if (CHECK(s == COOPREDUCE_SUCCESS && g_cpu, "create_cpu(0): %d (%s)", (int)s,
              coopreduce_last_error(NULL))) {
        run_sections(sections, count, NULL);
        CHECK(coopreduce_destroy(g_cpu) == COOPREDUCE_SUCCESS, "destroy: %s",
              coopreduce_last_error(NULL));
    }
    return check_summary(prog);
}

void unknown_dtype(coopreduce_dtype dt, const char *where)
{
    printf("FATAL: %s: dtype %d (%s) is not known to tests/util.c; add its layout and values\n",
           where, (int)dt, dt_name(dt));
    fflush(stdout);
    exit(1);
}

/* ---- float layouts and patterns ----------------------------------------------------------- */

int float_dtypes(coopreduce_dtype out[COOPREDUCE_DTYPE_COUNT])
{
    int n = 0;
    for (int d = 0; d < COOPREDUCE_DTYPE_COUNT; d++)
        if (dt_is_float((coopreduce_dtype)d)) out[n++] = (coopreduce_dtype)d;
    return n;
}

void float_layout(coopreduce_dtype dt, int *exp_bits, int *man_bits)
{
    int e = 0, m = 0;
    switch (dt) {
    case COOPREDUCE_FLOAT32: e = 8, m = 23; break;
    case COOPREDUCE_FLOAT64: e = 11, m = 52; break;
    case COOPREDUCE_FLOAT16: e = 5, m = 10; break;
    case COOPREDUCE_BFLOAT16: e = 8, m = 7; break;
    default: unknown_dtype(dt, "float_layout");
    }
    *exp_bits = e;
    *man_bits = m;
}

uint64_t sign_bits(coopreduce_dtype dt)
{
    int e, m;
    float_layout(dt, &e, &m);
    return 1ull << (e + m);
}

uint64_t inf_bits(coopreduce_dtype dt)
{
    int e, m;
    float_layout(dt, &e, &m);
    return ((1ull << e) - 1) << m;
}

uint64_t nan_bits(coopreduce_dtype dt)
{
    int e, m;
    float_layout(dt, &e, &m);
    return ((1ull << e) - 1) << m | 1ull << (m - 1);
}

/* ---- the tests' own conversions ------------------------------------------------------------ */

uint64_t ref_encode(double v, int eb, int mb)
{
    const uint64_t u = f64_bits(v);
    const uint64_t sign = (u >> 63) << (eb + mb), exp_mask = ((1ull << eb) - 1) << mb;
    const int e64 = (int)((u >> 52) & 0x7ff);
    const uint64_t f = u & ((1ull << 52) - 1);
    if (e64 == 0x7ff) return f ? exp_mask | 1ull << (mb - 1) : sign | exp_mask;
    if (e64 == 0 && f == 0) return sign;
    /* |v| = m * 2^k exactly */
    const uint64_t m = e64 ? f | 1ull << 52 : f;
    const int k = e64 ? e64 - 1075 : -1074;
    const int bias = (1 << (eb - 1)) - 1, emin = 1 - bias;
    const int lead = k + bit_length(m) - 1; /* exponent of the leading bit */
    if (lead > bias) return sign | exp_mask;
    const int q = (lead > emin ? lead : emin) - mb; /* exponent of the result's last place */
    const int drop = q - k;                         /* low bits of m below that place */
    uint64_t r;
    if (drop <= 0) {
        r = m << -drop; /* exact (a format at least as wide as binary64's significand) */
    } else if (drop > 53) {
        r = 0; /* m < 2^53 <= half of the last place: rounds to zero */
    } else {
        const uint64_t rem = m & ((1ull << drop) - 1), half = 1ull << (drop - 1);
        r = m >> drop;
        if (rem > half || (rem == half && (r & 1))) r++;
    }
    /* Subnormal range: r counts the smallest subnormals (r == 2^mb is the smallest normal,
     * whose bits are the same number). Normal: the significand's carry into the exponent field
     * comes out of the addition, up to the infinity pattern. */
    uint64_t bits = lead < emin ? r : ((uint64_t)(lead + bias) << mb) + (r - (1ull << mb));
    if (bits >= exp_mask) bits = exp_mask;
    return sign | bits;
}

void store_value(void *x, uint64_t i, coopreduce_dtype dt, double v)
{
    switch (dt) {
    case COOPREDUCE_FLOAT32: ((float *)x)[i] = (float)v; break;
    case COOPREDUCE_FLOAT64: ((double *)x)[i] = v; break;
    case COOPREDUCE_FLOAT16: ((uint16_t *)x)[i] = ref_f16_from_double(v); break;
    case COOPREDUCE_BFLOAT16: ((uint16_t *)x)[i] = ref_bf16_from_double(v); break;
    case COOPREDUCE_INT32: ((int32_t *)x)[i] = (int32_t)v; break;
    case COOPREDUCE_UINT32: ((uint32_t *)x)[i] = (uint32_t)v; break;
    case COOPREDUCE_INT64: ((int64_t *)x)[i] = (int64_t)v; break;
    case COOPREDUCE_UINT64: ((uint64_t *)x)[i] = (uint64_t)v; break;
    default: unknown_dtype(dt, "store_value");
    }
}

void hex_bytes(char *buf, size_t cap, const void *b, size_t len)
{
    const unsigned char *p = b;
    size_t o = 0;
    if (cap) buf[0] = '\0';
    for (size_t i = len; i-- > 0 && o + 3 <= cap;)
        o += (size_t)snprintf(buf + o, cap - o, "%02x", p[i]);
}
