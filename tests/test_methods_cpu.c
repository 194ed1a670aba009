/* test_methods_cpu.c — the method API and the int32 dtype, through the public API, on the CPU.
 *
 *   a. coopreduce_method_name / _from_name for every method, the pinned enum values, unknown
 *      names and NULLs rejected; coopreduce_method_deterministic's table.
 *   b. A CPU handle: set_method accepts CANONICAL only (NOT_SUPPORTED, with a message, for the
 *      GPU methods; INVALID_ARGUMENT for unknown values); set_stages, disable_features and
 *      last_launch need a GPU handle (WRONG_DEVICE).
 *   c. dtype_size / result_size / dtype_name of INT32.
 *   d. The CPU int32 sum against the test's own serial __int128 loop: many sizes, generator
 *      kinds and fresh seeds, extremes (INT32_MIN, INT32_MAX, alternating), thread counts
 *      1, 2, 3, 8 and 0 giving the same value; sum_to_host too.
 *   e. Errors of the int32 sum: result misaligned for int64, x misaligned, n > 2^32 refused
 *      without reading x, n = 0. Results are poisoned before every call and checked untouched
 *      on failure.
 *
 * No GPU needed. Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coopreduce.h"
#include "gen.h"
#include "util.h"

/* The methods, with the enum identifier they were declared with: the expected CLI name is the
 * identifier in lower case (the header's "canonical", "block", ...), the expected value its
 * position here, which is the order the header pins (CANONICAL = 0 ... PIPELINE = 11). */
#define METHOD_ENTRY(x)                                                                            \
    {                                                                                              \
        COOPREDUCE_METHOD_##x, #x                                                                  \
    }
static const struct {
    coopreduce_method value;
    const char *ident;
} methods[] = {
    METHOD_ENTRY(CANONICAL),  METHOD_ENTRY(BLOCK),   METHOD_ENTRY(GRID),     METHOD_ENTRY(GRIDSYNC),
    METHOD_ENTRY(TWOPASS),    METHOD_ENTRY(CLUSTER), METHOD_ENTRY(CGREDUCE), METHOD_ENTRY(VEC4INT),
    METHOD_ENTRY(MULTILEVEL), METHOD_ENTRY(ASYNC),   METHOD_ENTRY(BARRIER),  METHOD_ENTRY(PIPELINE),
};
#define NMETHODS (int)(sizeof methods / sizeof methods[0])

static void lower(char *dst, const char *src, size_t cap)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++) dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
}

/* ---------------------------------------------------------------- a. names and the table */

static void test_names(void)
{
    CHECK(NMETHODS == COOPREDUCE_METHOD_COUNT, "the header counts %d methods, the test lists %d",
          (int)COOPREDUCE_METHOD_COUNT, NMETHODS);
    for (int i = 0; i < NMETHODS; i++) {
        char want[32];
        lower(want, methods[i].ident, sizeof want);
        CHECK((int)methods[i].value == i, "COOPREDUCE_METHOD_%s = %d, pinned at %d",
              methods[i].ident, (int)methods[i].value, i);
        const char *name = coopreduce_method_name(methods[i].value);
        if (!CHECK(name != NULL, "method_name(%s) is NULL", methods[i].ident)) continue;
        CHECK(strcmp(name, want) == 0, "method_name(%s) = \"%s\", expected \"%s\"",
              methods[i].ident, name, want);
        coopreduce_method back = (coopreduce_method)-7;
        coopreduce_status s = coopreduce_method_from_name(name, &back);
        CHECK(s == COOPREDUCE_SUCCESS && back == methods[i].value,
              "from_name(\"%s\"): status %d, method %d (expected %d)", name, (int)s, (int)back,
              (int)methods[i].value);
        /* From our own spelling too (not the pointer the library returned). */
        back = (coopreduce_method)-7;
        s = coopreduce_method_from_name(want, &back);
        CHECK(s == COOPREDUCE_SUCCESS && back == methods[i].value,
              "from_name(\"%s\") (test's copy): status %d, method %d", want, (int)s, (int)back);
        for (int j = 0; j < i; j++) {
            const char *other = coopreduce_method_name(methods[j].value);
            CHECK(!other || strcmp(other, name) != 0, "methods %d and %d share the name \"%s\"", j,
                  i, name);
        }
        /* Upper case, a trailing blank, a prefix and an extension are all unknown. */
        char upper[32], blank[40], prefix[32], longer[40];
        snprintf(upper, sizeof upper, "%s", methods[i].ident);
        snprintf(blank, sizeof blank, "%s ", want);
        snprintf(prefix, sizeof prefix, "%.*s", (int)strlen(want) - 1, want);
        snprintf(longer, sizeof longer, "%sx", want);
        const char *bad[] = {upper, blank, prefix, longer};
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            /* Skip a mangled spelling that happens to be another method's name. */
            int is_name = 0;
            for (int j = 0; j < NMETHODS; j++) {
                char nj[32];
                lower(nj, methods[j].ident, sizeof nj);
                if (strcmp(nj, bad[b]) == 0) is_name = 1;
            }
            if (is_name) continue;
            back = (coopreduce_method)-7;
            s = coopreduce_method_from_name(bad[b], &back);
            CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "from_name(\"%s\"): status %d", bad[b],
                  (int)s);
            CHECK(back == (coopreduce_method)-7, "from_name(\"%s\") wrote the output on failure",
                  bad[b]);
        }
    }
    static const char *unknown[] = {"",          " ",         "Canonical", "CANONICAL",   "canon",
                                    "grid-sync", "grid_sync", "vec4",      "cooperative", "default",
                                    "none",      "pipeline2", "async ",    "\tblock"};
    for (size_t k = 0; k < sizeof unknown / sizeof unknown[0]; k++) {
        coopreduce_method back = (coopreduce_method)-7;
        coopreduce_status s = coopreduce_method_from_name(unknown[k], &back);
        CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "from_name(\"%s\"): status %d", unknown[k],
              (int)s);
        CHECK(back == (coopreduce_method)-7, "from_name(\"%s\") wrote the output on failure",
              unknown[k]);
        CHECK(coopreduce_last_error(NULL)[0] != '\0', "from_name(\"%s\"): no message", unknown[k]);
    }
    coopreduce_method back = (coopreduce_method)-7;
    CHECK(coopreduce_method_from_name(NULL, &back) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "from_name(NULL, &m) accepted");
    CHECK(back == (coopreduce_method)-7, "from_name(NULL) wrote the output");
    CHECK(coopreduce_method_from_name("canonical", NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "from_name(\"canonical\", NULL) accepted");
    CHECK(coopreduce_method_from_name(NULL, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "from_name(NULL, NULL) accepted");

    static const int bad_methods[] = {
        -1, COOPREDUCE_METHOD_COUNT, COOPREDUCE_METHOD_COUNT + 1, 100, -1000, 0x7fffffff};
    for (size_t k = 0; k < sizeof bad_methods / sizeof bad_methods[0]; k++)
        CHECK(coopreduce_method_name((coopreduce_method)bad_methods[k]) == NULL,
              "method_name(%d) is not NULL", bad_methods[k]);
}

static void test_deterministic_table(void)
{
    static const coopreduce_dtype dtypes[] = {COOPREDUCE_FLOAT32, COOPREDUCE_FLOAT64,
                                              COOPREDUCE_INT32};
    for (int i = 0; i < NMETHODS; i++)
        for (size_t d = 0; d < 3; d++) {
            coopreduce_method m = methods[i].value;
            int want;
            if (dtypes[d] == COOPREDUCE_INT32)
                want = 1; /* exact, whatever the order */
            else if (m == COOPREDUCE_METHOD_GRID || m == COOPREDUCE_METHOD_VEC4INT)
                want = 0;
            else
                want = 1;
            int got = coopreduce_method_deterministic(m, dtypes[d]);
            CHECK(got == want, "method_deterministic(%s, %s) = %d, expected %d", methods[i].ident,
                  coopreduce_dtype_name(dtypes[d]), got, want);
        }
    static const int bad_methods[] = {-1, COOPREDUCE_METHOD_COUNT, 99};
    static const int bad_dtypes[] = {-1, COOPREDUCE_DTYPE_COUNT, 42};
    for (size_t k = 0; k < 3; k++)
        for (size_t d = 0; d < 3; d++) {
            int got = coopreduce_method_deterministic((coopreduce_method)bad_methods[k], dtypes[d]);
            CHECK(got == -1, "method_deterministic(%d, %s) = %d, expected -1", bad_methods[k],
                  coopreduce_dtype_name(dtypes[d]), got);
        }
    for (int i = 0; i < NMETHODS; i++)
        for (size_t d = 0; d < 3; d++) {
            int got =
                coopreduce_method_deterministic(methods[i].value, (coopreduce_dtype)bad_dtypes[d]);
            CHECK(got == -1, "method_deterministic(%s, dtype %d) = %d, expected -1",
                  methods[i].ident, bad_dtypes[d], got);
        }
    /* The types only the canonical method computes (every dtype but the three above): 1 for it,
     * -1 (not computed) for the tutorial methods. */
    for (int i = 0; i < NMETHODS; i++)
        for (int d = 0; d < COOPREDUCE_DTYPE_COUNT; d++) {
            if (d == COOPREDUCE_FLOAT32 || d == COOPREDUCE_FLOAT64 || d == COOPREDUCE_INT32)
                continue;
            int got = coopreduce_method_deterministic(methods[i].value, (coopreduce_dtype)d);
            int want = methods[i].value == COOPREDUCE_METHOD_CANONICAL ? 1 : -1;
            CHECK(got == want, "method_deterministic(%s, dtype %d) = %d, expected %d",
                  methods[i].ident, d, got, want);
        }
    CHECK(coopreduce_method_deterministic((coopreduce_method)-1, (coopreduce_dtype)-1) == -1,
          "method_deterministic(-1, -1) != -1");
}

/* ---------------------------------------------------------------- b. a CPU handle */

static void test_cpu_handle_methods(void)
{
    for (int i = 0; i < NMETHODS; i++) {
        coopreduce_handle *h = NULL;
        if (!CHECK(coopreduce_create_cpu(&h, 1) == COOPREDUCE_SUCCESS && h, "create_cpu: %s",
                   coopreduce_last_error(NULL)))
            return;
        CHECK(coopreduce_last_error(h)[0] == '\0', "fresh handle has a message: \"%s\"",
              coopreduce_last_error(h));
        coopreduce_status s = coopreduce_set_method(h, methods[i].value);
        if (methods[i].value == COOPREDUCE_METHOD_CANONICAL) {
            CHECK(s == COOPREDUCE_SUCCESS, "set_method(cpu, CANONICAL): status %d: %s", (int)s,
                  coopreduce_last_error(h));
        } else {
            CHECK(s == COOPREDUCE_ERROR_NOT_SUPPORTED,
                  "set_method(cpu, %s): status %d, expected "
                  "NOT_SUPPORTED (11)",
                  methods[i].ident, (int)s);
            CHECK(coopreduce_last_error(h)[0] != '\0',
                  "set_method(cpu, %s) failed without a "
                  "message",
                  methods[i].ident);
        }
        /* The handle still sums (canonically), whatever was refused. */
        int32_t x[5] = {INT32_MAX, INT32_MAX, -7, INT32_MIN, 3};
        int64_t r = (int64_t)POISON64;
        s = coopreduce_sum(x, &r, 5, COOPREDUCE_INT32, h, NULL);
        CHECK(s == COOPREDUCE_SUCCESS && r == 2 * (int64_t)INT32_MAX - 7 + (int64_t)INT32_MIN + 3,
              "sum after set_method(%s): status %d, %lld", methods[i].ident, (int)s, (long long)r);
        float f[3] = {1.0f, 2.0f, 4.0f}, fr = -1.0f;
        s = coopreduce_sum(f, &fr, 3, COOPREDUCE_FLOAT32, h, NULL);
        CHECK(s == COOPREDUCE_SUCCESS && fr == 7.0f, "float sum after set_method(%s): %d, %g",
              methods[i].ident, (int)s, (double)fr);
        coopreduce_destroy(h);
    }

    coopreduce_handle *h = NULL;
    if (!CHECK(coopreduce_create_cpu(&h, 0) == COOPREDUCE_SUCCESS, "create_cpu(0)")) return;
    static const int bad_methods[] = {-1, COOPREDUCE_METHOD_COUNT, 1000};
    for (size_t k = 0; k < 3; k++) {
        coopreduce_status s = coopreduce_set_method(h, (coopreduce_method)bad_methods[k]);
        CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "set_method(cpu, %d): status %d",
              bad_methods[k], (int)s);
    }
    CHECK(coopreduce_set_method(NULL, COOPREDUCE_METHOD_CANONICAL) ==
              COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "set_method(NULL) accepted");

    coopreduce_status s = coopreduce_set_stages(h, 4);
    CHECK(s == COOPREDUCE_ERROR_WRONG_DEVICE, "set_stages(cpu, 4): status %d", (int)s);
    CHECK(coopreduce_last_error(h)[0] != '\0', "set_stages(cpu): no message");
    s = coopreduce_disable_features(h, COOPREDUCE_FEATURE_CLUSTERS);
    CHECK(s == COOPREDUCE_ERROR_WRONG_DEVICE, "disable_features(cpu, CLUSTERS): status %d", (int)s);
    s = coopreduce_disable_features(h, 0);
    CHECK(s == COOPREDUCE_ERROR_WRONG_DEVICE, "disable_features(cpu, 0): status %d", (int)s);
    s = coopreduce_disable_features(h, COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH);
    CHECK(s == COOPREDUCE_ERROR_WRONG_DEVICE, "disable_features(cpu, COOPERATIVE): status %d",
          (int)s);
    coopreduce_launch_info info;
    s = coopreduce_last_launch(h, &info);
    CHECK(s == COOPREDUCE_ERROR_WRONG_DEVICE, "last_launch(cpu): status %d", (int)s);
    CHECK(coopreduce_set_grid_blocks(h, 4) == COOPREDUCE_ERROR_WRONG_DEVICE,
          "set_grid_blocks(cpu) accepted");
    CHECK(coopreduce_set_stages(NULL, 4) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "set_stages(NULL) accepted");
    CHECK(coopreduce_disable_features(NULL, 0) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "disable_features(NULL) accepted");
    CHECK(coopreduce_last_launch(NULL, &info) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "last_launch(NULL, &info) accepted");
    CHECK(coopreduce_last_launch(h, NULL) != COOPREDUCE_SUCCESS, "last_launch(cpu, NULL) accepted");
    CHECK(COOPREDUCE_ERROR_NOT_SUPPORTED == 11, "NOT_SUPPORTED = %d, pinned at 11",
          (int)COOPREDUCE_ERROR_NOT_SUPPORTED);
    CHECK(COOPREDUCE_INT32 == 2, "COOPREDUCE_INT32 = %d, pinned at 2", (int)COOPREDUCE_INT32);
    CHECK(COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH != COOPREDUCE_FEATURE_CLUSTERS &&
              (COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH & COOPREDUCE_FEATURE_CLUSTERS) == 0,
          "feature flags overlap");
    coopreduce_destroy(h);
}

/* ---------------------------------------------------------------- c. dtype information */

static void test_dtype_info(void)
{
    CHECK(coopreduce_dtype_size(COOPREDUCE_INT32) == sizeof(int32_t), "dtype_size(INT32) = %zu",
          coopreduce_dtype_size(COOPREDUCE_INT32));
    CHECK(coopreduce_result_size(COOPREDUCE_INT32) == sizeof(int64_t), "result_size(INT32) = %zu",
          coopreduce_result_size(COOPREDUCE_INT32));
    CHECK(coopreduce_result_size(COOPREDUCE_FLOAT32) == sizeof(float), "result_size(FLOAT32) = %zu",
          coopreduce_result_size(COOPREDUCE_FLOAT32));
    CHECK(coopreduce_result_size(COOPREDUCE_FLOAT64) == sizeof(double),
          "result_size(FLOAT64) = %zu", coopreduce_result_size(COOPREDUCE_FLOAT64));
    static const int bad[] = {-1, COOPREDUCE_DTYPE_COUNT, 42};
    for (size_t k = 0; k < 3; k++) {
        CHECK(coopreduce_result_size((coopreduce_dtype)bad[k]) == 0, "result_size(%d) = %zu",
              bad[k], coopreduce_result_size((coopreduce_dtype)bad[k]));
        CHECK(coopreduce_dtype_size((coopreduce_dtype)bad[k]) == 0, "dtype_size(%d) = %zu", bad[k],
              coopreduce_dtype_size((coopreduce_dtype)bad[k]));
        CHECK(coopreduce_dtype_name((coopreduce_dtype)bad[k]) == NULL, "dtype_name(%d) not NULL",
              bad[k]);
    }
    const char *name = coopreduce_dtype_name(COOPREDUCE_INT32);
    CHECK(name && strcmp(name, "int32") == 0, "dtype_name(INT32) = \"%s\"", name ? name : "(null)");
}

/* ---------------------------------------------------------------- d. the int32 sum */

/* The test's own reference: a serial loop in 128-bit arithmetic (cannot overflow). */
static __int128 ref_sum(const int32_t *x, uint64_t n)
{
    __int128 s = 0;
    for (uint64_t i = 0; i < n; i++) s += x[i];
    return s;
}

#define NHANDLES 5
static const int handle_threads[NHANDLES] = {1, 2, 3, 8, 0};
static coopreduce_handle *handles[NHANDLES];

/* Sums x[0..n) with every handle (and sum_to_host with the first), checks each against the
 * reference `want` and against each other. Returns the number of mismatches. */
static int check_int_sum(const int32_t *x, uint64_t n, __int128 want, const char *what,
                         uint64_t seed)
{
    int bad = 0;
    if (!CHECK(want >= INT64_MIN && want <= INT64_MAX, "%s n=%llu: reference out of int64 range",
               what, (unsigned long long)n))
        return 1;
    int64_t first = 0;
    for (int k = 0; k < NHANDLES + 1; k++) {
        uint64_t res[2] = {POISON64, POISON64};
        coopreduce_status s;
        if (k < NHANDLES)
            s = coopreduce_sum(x, &res[0], n, COOPREDUCE_INT32, handles[k], NULL);
        else
            s = coopreduce_sum_to_host(x, &res[0], n, COOPREDUCE_INT32, handles[0], NULL);
        const char *via = k < NHANDLES ? "sum" : "sum_to_host";
        int t = handle_threads[k < NHANDLES ? k : 0];
        if (!CHECK(s == COOPREDUCE_SUCCESS, "%s %s n=%llu threads=%d seed=%llu: status %d: %s", via,
                   what, (unsigned long long)n, t, (unsigned long long)seed, (int)s,
                   coopreduce_last_error(handles[k < NHANDLES ? k : 0]))) {
            bad++;
            continue;
        }
        int64_t got = (int64_t)res[0];
        bad +=
            !CHECK((__int128)got == want, "%s %s n=%llu threads=%d seed=%llu: %lld, reference %lld",
                   via, what, (unsigned long long)n, t, (unsigned long long)seed, (long long)got,
                   (long long)(int64_t)want);
        bad += !CHECK(res[1] == POISON64, "%s %s n=%llu: wrote past the 8-byte result", via, what,
                      (unsigned long long)n);
        if (k == 0)
            first = got;
        else
            bad += !CHECK(got == first, "%s %s n=%llu: threads=%d gives %lld, threads=1 %lld", via,
                          what, (unsigned long long)n, t, (long long)got, (long long)first);
    }
    return bad;
}

static const cr_gen_kind gen_kinds[] = {CR_GEN_UNIFORM, CR_GEN_NORMAL, CR_GEN_SIGNED, CR_GEN_ONES};

static void test_int_sums(int32_t *buf, uint64_t cap)
{
    static const uint64_t sizes[] = {1,
                                     2,
                                     3,
                                     4,
                                     5,
                                     7,
                                     8,
                                     13,
                                     31,
                                     32,
                                     33,
                                     97,
                                     127,
                                     128,
                                     129,
                                     255,
                                     256,
                                     257,
                                     1021,
                                     1023,
                                     1024,
                                     1025,
                                     4093,
                                     4095,
                                     4096,
                                     4097,
                                     65521,
                                     65535,
                                     65536,
                                     65537,
                                     (1u << 18) - 1,
                                     1u << 18,
                                     (1u << 18) + 1,
                                     (1u << 19) + 1,
                                     786433,
                                     1000003,
                                     (1u << 20) - 1,
                                     1u << 20,
                                     (1u << 20) + 1,
                                     (1u << 21) + 1,
                                     4194301,
                                     (1u << 23) + 9,
                                     (1u << 24) - 1,
                                     (1u << 24),
                                     (1u << 24) + 1};
    const size_t ns = sizeof sizes / sizeof sizes[0];
    int fails = 0;
    for (size_t i = 0; i < ns + 24 && fails < 10; i++) {
        uint64_t n;
        if (i < ns)
            n = sizes[i];
        else
            n = 1 + (rnd() >> (64 - 24 + (unsigned)(rnd() % 24))); /* log-uniform to 2^24 */
        if (n > cap) n = cap;
        /* Two kinds per size: one in turn, one at random. */
        for (int rep = 0; rep < 2; rep++) {
            cr_gen_kind kind = rep == 0 ? gen_kinds[i % 4] : gen_kinds[rnd() % 4];
            uint64_t seed = rnd();
            if (cr_gen_fill(buf, 0, n, COOPREDUCE_INT32, kind, seed, gen_threads()) != 0) {
                CHECK(0, "cr_gen_fill(INT32, %s) failed", cr_gen_name(kind));
                return;
            }
            char what[64];
            snprintf(what, sizeof what, "int32 %s", cr_gen_name(kind));
            fails += check_int_sum(buf, n, ref_sum(buf, n), what, seed) != 0;
        }
    }
    /* The uniform generator really spans the int32 range (else the tests above are weak). */
    cr_gen_fill(buf, 0, 1u << 16, COOPREDUCE_INT32, CR_GEN_UNIFORM, rnd(), 1);
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    for (uint64_t i = 0; i < (1u << 16); i++) {
        if (buf[i] < lo) lo = buf[i];
        if (buf[i] > hi) hi = buf[i];
    }
    CHECK(lo < -(1 << 30) && hi > (1 << 30), "uniform int32 data spans only [%d, %d]", lo, hi);
}

static void test_int_extremes(int32_t *buf, uint64_t cap)
{
    static const uint64_t sizes[] = {
        1, 2, 3, 4, 7, 1000, 4097, 65537, (1u << 20) + 1, 3000017, (1u << 24) + 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t n = sizes[i] <= cap ? sizes[i] : cap;
        /* Expected values by formula, and by the reference loop. */
        for (int pattern = 0; pattern < 5; pattern++) {
            __int128 formula;
            const char *what;
            switch (pattern) {
            case 0:
                for (uint64_t k = 0; k < n; k++) buf[k] = INT32_MIN;
                formula = (__int128)n * INT32_MIN;
                what = "all INT32_MIN";
                break;
            case 1:
                for (uint64_t k = 0; k < n; k++) buf[k] = INT32_MAX;
                formula = (__int128)n * INT32_MAX;
                what = "all INT32_MAX";
                break;
            case 2: /* MIN, MAX, MIN, ...: each pair adds to -1 */
                for (uint64_t k = 0; k < n; k++) buf[k] = (k & 1) ? INT32_MAX : INT32_MIN;
                formula = -(__int128)(n / 2) + ((n & 1) ? INT32_MIN : 0);
                what = "alternating MIN, MAX";
                break;
            case 3: /* MAX, MIN, MAX, ... */
                for (uint64_t k = 0; k < n; k++) buf[k] = (k & 1) ? INT32_MIN : INT32_MAX;
                formula = -(__int128)(n / 2) + ((n & 1) ? INT32_MAX : 0);
                what = "alternating MAX, MIN";
                break;
            default: /* all MIN but the last, which is MAX (a sum near the int64 low end) */
                for (uint64_t k = 0; k < n; k++) buf[k] = INT32_MIN;
                buf[n - 1] = INT32_MAX;
                formula = (__int128)(n - 1) * INT32_MIN + INT32_MAX;
                what = "MIN..., MAX";
                break;
            }
            __int128 loop = ref_sum(buf, n);
            CHECK(loop == formula, "%s n=%llu: the test's formula and loop disagree", what,
                  (unsigned long long)n);
            check_int_sum(buf, n, formula, what, 0);
        }
    }
}

/* ---------------------------------------------------------------- e. errors and edge cases */

static void test_int_errors(int32_t *buf)
{
    coopreduce_handle *h = handles[0];
    coopreduce_status s;
    for (int i = 0; i < 16; i++) buf[i] = i - 5;

    /* n = 0: 0, with or without x; the poison is overwritten. */
    for (int k = 0; k < 2; k++) {
        int64_t r = (int64_t)POISON64;
        s = coopreduce_sum(k ? NULL : buf, &r, 0, COOPREDUCE_INT32, h, NULL);
        CHECK(s == COOPREDUCE_SUCCESS && r == 0, "n = 0 (x %s): status %d, %lld",
              k ? "NULL" : "valid", (int)s, (long long)r);
        r = (int64_t)POISON64;
        s = coopreduce_sum_to_host(k ? NULL : buf, &r, 0, COOPREDUCE_INT32, h, NULL);
        CHECK(s == COOPREDUCE_SUCCESS && r == 0, "sum_to_host n = 0 (x %s): status %d, %lld",
              k ? "NULL" : "valid", (int)s, (long long)r);
    }

    /* The result must be aligned to the int64 it is, not just to the int32 elements. */
    {
        uint64_t store[3] = {POISON64, POISON64, POISON64};
        void *res = (char *)store + 4;
        s = coopreduce_sum(buf, res, 16, COOPREDUCE_INT32, h, NULL);
        CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "int32 result at +4 bytes: status %d", (int)s);
        CHECK(coopreduce_last_error(h)[0] != '\0', "misaligned result: no message");
        s = coopreduce_sum_to_host(buf, res, 16, COOPREDUCE_INT32, h, NULL);
        CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "sum_to_host int32 result at +4: status %d",
              (int)s);
        CHECK(store[0] == POISON64 && store[1] == POISON64 && store[2] == POISON64,
              "misaligned result written on failure");
        /* The same bytes hold a float32 result fine (4-byte alignment is enough there). */
        float *fres = (float *)((char *)store + 4);
        float f[2] = {1.5f, 2.0f};
        s = coopreduce_sum(f, fres, 2, COOPREDUCE_FLOAT32, h, NULL);
        CHECK(s == COOPREDUCE_SUCCESS && *fres == 3.5f, "float32 result at +4: status %d", (int)s);
    }
    /* x aligned to 2 bytes only. */
    {
        int64_t r = (int64_t)POISON64;
        s = coopreduce_sum((char *)buf + 2, &r, 4, COOPREDUCE_INT32, h, NULL);
        CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "int32 x at +2 bytes: status %d", (int)s);
        CHECK(r == (int64_t)POISON64, "result written on failure");
    }
    /* Element-aligned but not 16-byte aligned x is fine. */
    for (int off = 1; off < 4; off++) {
        int64_t r = (int64_t)POISON64;
        s = coopreduce_sum(buf + off, &r, 11, COOPREDUCE_INT32, h, NULL);
        CHECK(s == COOPREDUCE_SUCCESS && (__int128)r == ref_sum(buf + off, 11),
              "x at +%d elements: status %d, %lld", off, (int)s, (long long)r);
    }
    /* More than 2^32 elements is refused before x is read: buf holds 16 elements only, so a
     * sum that did read would fault (or at least not return INVALID_ARGUMENT). */
    static const uint64_t too_many[] = {(1ull << 32) + 1, (1ull << 33), UINT64_MAX / 4 + 3,
                                        UINT64_MAX};
    for (size_t k = 0; k < sizeof too_many / sizeof too_many[0]; k++) {
        for (int th = 0; th < 2; th++) {
            int64_t r = (int64_t)POISON64;
            s = th ? coopreduce_sum_to_host(buf, &r, too_many[k], COOPREDUCE_INT32, h, NULL)
                   : coopreduce_sum(buf, &r, too_many[k], COOPREDUCE_INT32, h, NULL);
            CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s int32 n=%llu: status %d",
                  th ? "sum_to_host" : "sum", (unsigned long long)too_many[k], (int)s);
            CHECK(r == (int64_t)POISON64, "int32 n=%llu: result written on failure",
                  (unsigned long long)too_many[k]);
            CHECK(coopreduce_last_error(h)[0] != '\0', "int32 n=%llu: no message",
                  (unsigned long long)too_many[k]);
        }
    }
    /* NULL arguments, unknown dtype. */
    {
        int64_t r = (int64_t)POISON64;
        CHECK(coopreduce_sum(NULL, &r, 3, COOPREDUCE_INT32, h, NULL) ==
                  COOPREDUCE_ERROR_INVALID_ARGUMENT,
              "x NULL with n = 3 accepted");
        CHECK(coopreduce_sum(buf, NULL, 3, COOPREDUCE_INT32, h, NULL) ==
                  COOPREDUCE_ERROR_INVALID_ARGUMENT,
              "result NULL accepted");
        CHECK(coopreduce_sum(buf, &r, 3, COOPREDUCE_INT32, NULL, NULL) ==
                  COOPREDUCE_ERROR_INVALID_ARGUMENT,
              "NULL handle accepted");
        CHECK(coopreduce_sum(buf, &r, 3, COOPREDUCE_DTYPE_COUNT, h, NULL) ==
                  COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
              "dtype %d (the count) accepted", (int)COOPREDUCE_DTYPE_COUNT);
        CHECK(r == (int64_t)POISON64, "result written by a failed call");
    }
    /* reserve accepts int32; a sum of one element is the element. */
    CHECK(coopreduce_reserve(h, 1u << 20, COOPREDUCE_INT32) == COOPREDUCE_SUCCESS,
          "reserve(int32): %s", coopreduce_last_error(h));
    static const int32_t singles[] = {0, 1, -1, INT32_MIN, INT32_MAX, 123456789};
    for (size_t k = 0; k < sizeof singles / sizeof singles[0]; k++) {
        int64_t r = (int64_t)POISON64;
        s = coopreduce_sum(&singles[k], &r, 1, COOPREDUCE_INT32, h, NULL);
        CHECK(s == COOPREDUCE_SUCCESS && r == singles[k], "sum of [%d]: %lld", singles[k],
              (long long)r);
    }
    /* The thread count of a handle can be changed after creation: same value. */
    {
        uint64_t n = (1u << 21) + 5, seed = rnd();
        int32_t *big = malloc(n * sizeof *big);
        if (CHECK(big != NULL, "malloc")) {
            cr_gen_fill(big, 0, n, COOPREDUCE_INT32, CR_GEN_UNIFORM, seed, gen_threads());
            __int128 want = ref_sum(big, n);
            coopreduce_handle *t = NULL;
            coopreduce_create_cpu(&t, 1);
            for (int th = 1; th <= 8; th++) {
                int64_t r = (int64_t)POISON64;
                CHECK(coopreduce_set_threads(t, th) == COOPREDUCE_SUCCESS, "set_threads(%d)", th);
                s = coopreduce_sum(big, &r, n, COOPREDUCE_INT32, t, NULL);
                CHECK(s == COOPREDUCE_SUCCESS && (__int128)r == want,
                      "set_threads(%d) seed=%llu: status %d, %lld vs %lld", th,
                      (unsigned long long)seed, (int)s, (long long)r, (long long)(int64_t)want);
            }
            coopreduce_destroy(t);
            free(big);
        }
    }
}

int main(void)
{
    test_seed_init("test_methods_cpu");

    test_names();
    test_deterministic_table();
    test_cpu_handle_methods();
    test_dtype_info();

    for (int k = 0; k < NHANDLES; k++) {
        if (!CHECK(coopreduce_create_cpu(&handles[k], handle_threads[k]) == COOPREDUCE_SUCCESS,
                   "create_cpu(%d): %s", handle_threads[k], coopreduce_last_error(NULL)))
            return check_summary("test_methods_cpu");
    }
    const uint64_t cap = (1u << 24) + 64;
    int32_t *buf = malloc(cap * sizeof *buf);
    if (!CHECK(buf != NULL, "malloc %llu int32", (unsigned long long)cap))
        return check_summary("test_methods_cpu");
    test_int_sums(buf, cap);
    test_int_extremes(buf, cap);
    test_int_errors(buf);
    free(buf);
    for (int k = 0; k < NHANDLES; k++)
        CHECK(coopreduce_destroy(handles[k]) == COOPREDUCE_SUCCESS, "destroy");
    return check_summary("test_methods_cpu");
}
