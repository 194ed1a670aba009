/* test_ops_api.c — the operation API on the CPU: names and pinned values of the operations and
 * dtypes, result sizes and types from the header's table, and the errors of coopreduce_reduce
 * (empty input, integer sumsq/norm2/dot, NULL y, unknown op, misaligned result, 32-bit sums over
 * 2^32 elements) with the result untouched; empty inputs that have a value; every (operation,
 * dtype) pair the enums count, through coopreduce_op_result_size.
 *
 * No GPU needed. Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "coopreduce.h"
#include "ops_data.h"
#include "util.h"

static void api_table(void)
{
    /* The names and sizes the header documents, in the order of the pinned values: a new
     * operation or dtype needs its row here (the count checks say so). */
    static const char *names[] = {"sum",   "min",   "max", "absmax", "mean",
                                  "sumsq", "norm2", "dot", "argmin", "argmax"};
    const int nnames = (int)(sizeof names / sizeof names[0]);
    CHECK(nnames == COOPREDUCE_OP_COUNT, "the test names %d operations, the header counts %d",
          nnames, (int)COOPREDUCE_OP_COUNT);
    for (int i = 0; i < COOPREDUCE_OP_COUNT && i < nnames; i++) {
        coopreduce_op op = (coopreduce_op)99;
        CHECK(coopreduce_op_name((coopreduce_op)i) &&
                  strcmp(coopreduce_op_name((coopreduce_op)i), names[i]) == 0,
              "op %d name", i);
        CHECK(coopreduce_op_from_name(names[i], &op) == COOPREDUCE_SUCCESS && (int)op == i,
              "op %s lookup", names[i]);
    }
    coopreduce_op op;
    CHECK(coopreduce_op_from_name("median", &op) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "unknown op name");
    CHECK(coopreduce_op_name(COOPREDUCE_OP_COUNT) == NULL, "op %d (the count) has a name",
          (int)COOPREDUCE_OP_COUNT);
    CHECK(coopreduce_op_name((coopreduce_op)-1) == NULL, "op -1 has a name");
    static const char *dnames[] = {"float32",  "float64", "int32",  "float16",
                                   "bfloat16", "int64",   "uint32", "uint64"};
    static const size_t dsize[] = {4, 8, 4, 2, 2, 8, 4, 8};
    const int ndnames = (int)(sizeof dnames / sizeof dnames[0]);
    CHECK(ndnames == COOPREDUCE_DTYPE_COUNT, "the test names %d dtypes, the header counts %d",
          ndnames, (int)COOPREDUCE_DTYPE_COUNT);
    for (int d = 0; d < COOPREDUCE_DTYPE_COUNT && d < ndnames; d++) {
        CHECK(strcmp(coopreduce_dtype_name((coopreduce_dtype)d), dnames[d]) == 0, "dtype %d name",
              d);
        CHECK(coopreduce_dtype_size((coopreduce_dtype)d) == dsize[d], "dtype %d size", d);
    }
    CHECK(coopreduce_dtype_name(COOPREDUCE_DTYPE_COUNT) == NULL &&
              coopreduce_dtype_size(COOPREDUCE_DTYPE_COUNT) == 0,
          "dtype %d (the count) has a name or a size", (int)COOPREDUCE_DTYPE_COUNT);
    /* Result sizes and types, from the header's table. */
    coopreduce_dtype r;
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT16, 0, &r) == 4 &&
              r == COOPREDUCE_FLOAT32,
          "f16 sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_BFLOAT16, 1, &r) == 2 &&
              r == COOPREDUCE_BFLOAT16,
          "bf16 narrow sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_INT64, 0, &r) == 16 &&
              r == COOPREDUCE_INT64,
          "i64 sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_UINT32, 0, &r) == 8 &&
              r == COOPREDUCE_UINT64,
          "u32 sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_MEAN, COOPREDUCE_INT32, 0, &r) == 8 &&
              r == COOPREDUCE_FLOAT64,
          "i32 mean");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_ABSMAX, COOPREDUCE_INT64, 0, &r) == 8 &&
              r == COOPREDUCE_UINT64,
          "i64 absmax");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_ARGMAX, COOPREDUCE_FLOAT16, 0, &r) == 8 &&
              r == COOPREDUCE_UINT64,
          "argmax");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_MIN, COOPREDUCE_BFLOAT16, 0, &r) == 2 &&
              r == COOPREDUCE_BFLOAT16,
          "bf16 min");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_DOT, COOPREDUCE_INT32, 0, &r) == 0,
          "int dot unsupported");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUMSQ, COOPREDUCE_UINT64, 0, &r) == 0,
          "int sumsq unsupported");
    CHECK(coopreduce_result_size(COOPREDUCE_INT32) == 8 &&
              coopreduce_result_size(COOPREDUCE_FLOAT32) == 4,
          "result_size");
    CHECK(strlen(coopreduce_status_string(COOPREDUCE_ERROR_OVERFLOW)) > 0 &&
              strcmp(coopreduce_status_string(COOPREDUCE_ERROR_EMPTY), "unknown status") != 0,
          "status strings");

    /* Errors; the result must stay untouched. */
    uint64_t res[2] = {0xA5A5A5A5A5A5A5A5ull, 0xA5A5A5A5A5A5A5A5ull};
    float x[4] = {1, 2, 3, 4};
    int32_t xi[4] = {1, 2, 3, 4};
    for (int op = COOPREDUCE_OP_MIN; op <= COOPREDUCE_OP_ARGMAX; op++) {
        if (op == COOPREDUCE_OP_MEAN || op == COOPREDUCE_OP_SUMSQ || op == COOPREDUCE_OP_NORM2 ||
            op == COOPREDUCE_OP_DOT)
            continue;
        coopreduce_status s =
            coopreduce_reduce((coopreduce_op)op, x, NULL, res, 0, COOPREDUCE_FLOAT32, g_cpu, NULL);
        CHECK(s == COOPREDUCE_ERROR_EMPTY && strstr(coopreduce_last_error(g_cpu), "empty"),
              "%s of nothing: %d", coopreduce_op_name((coopreduce_op)op), (int)s);
    }
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUMSQ, xi, NULL, res, 4, COOPREDUCE_INT32, g_cpu, NULL) ==
              COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
          "int32 sumsq");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_DOT, x, NULL, res, 4, COOPREDUCE_FLOAT32, g_cpu, NULL) ==
              COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "dot without y");
    CHECK(coopreduce_reduce((coopreduce_op)42, x, NULL, res, 4, COOPREDUCE_FLOAT32, g_cpu, NULL) ==
              COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "op 42");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_ARGMAX, x, NULL, (char *)res + 4, 4, COOPREDUCE_FLOAT32,
                            g_cpu, NULL) == COOPREDUCE_ERROR_MISALIGNED,
          "misaligned index result");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUM, xi, NULL, res, (1ull << 32) + 1, COOPREDUCE_UINT32,
                            g_cpu, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "uint32 sum over 2^32");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, res, 4, COOPREDUCE_DTYPE_COUNT, g_cpu,
                            NULL) == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
          "dtype %d (the count)", (int)COOPREDUCE_DTYPE_COUNT);
    CHECK(coopreduce_reduce(COOPREDUCE_OP_COUNT, x, NULL, res, 4, COOPREDUCE_FLOAT32, g_cpu,
                            NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "op %d (the count)", (int)COOPREDUCE_OP_COUNT);
    CHECK(res[0] == 0xA5A5A5A5A5A5A5A5ull && res[1] == 0xA5A5A5A5A5A5A5A5ull,
          "result written on failure");
    /* Empty inputs that have a value. */
    double d = 1;
    CHECK(coopreduce_reduce(COOPREDUCE_OP_MEAN, x, NULL, &d, 0, COOPREDUCE_FLOAT64, g_cpu, NULL) ==
                  0 &&
              d != d,
          "mean of nothing is NaN");
    float f = 1;
    CHECK(coopreduce_reduce(COOPREDUCE_OP_NORM2, x, NULL, &f, 0, COOPREDUCE_FLOAT32, g_cpu, NULL) ==
                  0 &&
              f == 0 && !signbit(f),
          "norm2 of nothing");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_DOT, NULL, NULL, &f, 0, COOPREDUCE_FLOAT32, g_cpu,
                            NULL) == 0 &&
              f == 0,
          "dot of nothing");
    res[0] = res[1] = 7;
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUM, NULL, NULL, res, 0, COOPREDUCE_INT64, g_cpu, NULL) ==
                  0 &&
              res[0] == 0 && res[1] == 0,
          "int64 sum of nothing");
}

/* The operations without a value for empty input (the header: they fail with EMPTY). */
static int fails_when_empty(coopreduce_op op)
{
    return op == COOPREDUCE_OP_MIN || op == COOPREDUCE_OP_MAX || op == COOPREDUCE_OP_ABSMAX ||
           op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX;
}

/* Every (operation, dtype) pair the enums count, narrowed and not: where
 * coopreduce_op_result_size gives a size, the reduction of a small array (1, 2, ... in the
 * dtype; y the same, for DOT) succeeds and writes that many bytes, no more, a result type of that
 * size (16 bytes: the 128-bit sums), and empty input fails with EMPTY exactly for the operations
 * documented so; where it gives 0, both fail with UNSUPPORTED_DTYPE and write nothing. The values
 * are checked by test_ops_ordered and test_ops_unordered; this is what a new operation or dtype
 * meets first. */
static void every_pair(void)
{
    enum { N = 5 };
    unsigned char x[8 * N], y[8 * N], res[40];
    for (int d = 0; d < COOPREDUCE_DTYPE_COUNT; d++) {
        const coopreduce_dtype dt = (coopreduce_dtype)d;
        for (uint64_t i = 0; i < N; i++) {
            store_value(x, i, dt, (double)(i + 1));
            store_value(y, i, dt, (double)(N - i));
        }
        for (int o = 0; o < COOPREDUCE_OP_COUNT; o++) {
            const coopreduce_op op = (coopreduce_op)o;
            for (int narrow = 0; narrow < 2; narrow++) {
                coopreduce_dtype rt = (coopreduce_dtype)-1;
                const size_t rs = coopreduce_op_result_size(op, dt, narrow, &rt);
                char what[64];
                snprintf(what, sizeof what, "%s %s narrow=%d (result size %zu)",
                         coopreduce_op_name(op), dt_name(dt), narrow, rs);
                CHECK(coopreduce_set_narrow_result(g_cpu, narrow) == COOPREDUCE_SUCCESS,
                      "set_narrow_result");
                for (int empty = 0; empty < 2; empty++) {
                    memset(res, POISON, sizeof res);
                    const coopreduce_status s =
                        coopreduce_reduce(op, x, y, res, empty ? 0 : N, dt, g_cpu, NULL);
                    size_t touched = 0; /* bytes that are no longer poison, counted from the end */
                    for (size_t b = sizeof res; b-- > 0;)
                        if (res[b] != POISON) {
                            touched = b + 1;
                            break;
                        }
                    if (rs == 0) {
                        CHECK(s == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE && touched == 0,
                              "%s n=%d: status %d, %zu bytes written", what, empty ? 0 : N, (int)s,
                              touched);
                        continue;
                    }
                    if (empty && fails_when_empty(op)) {
                        CHECK(s == COOPREDUCE_ERROR_EMPTY && touched == 0,
                              "%s n=0: status %d, %zu bytes written", what, (int)s, touched);
                        continue;
                    }
                    CHECK(s == COOPREDUCE_SUCCESS && touched <= rs,
                          "%s n=%d: status %d (%s), %zu bytes written", what, empty ? 0 : N, (int)s,
                          coopreduce_last_error(g_cpu), touched);
                }
                if (rs)
                    CHECK((rs <= 8 && coopreduce_dtype_size(rt) == rs) ||
                              (rs == 16 && (rt == COOPREDUCE_INT64 || rt == COOPREDUCE_UINT64)),
                          "%s: result type %d of %zu bytes", what, (int)rt,
                          coopreduce_dtype_size(rt));
            }
        }
    }
    coopreduce_set_narrow_result(g_cpu, 0);
}

CPU_TEST_MAIN("test_ops_api", {"names, sizes, errors", api_table},
              {"every op and dtype", every_pair})
