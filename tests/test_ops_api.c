/* test_ops_api.c — the operation API on the CPU: names and pinned values of the operations and
 * dtypes, result sizes and types from the header's table, and the errors of coopreduce_reduce
 * (empty input, integer sumsq/norm2/dot, NULL y, unknown op, misaligned result, 32-bit sums over
 * 2^32 elements) with the result untouched; empty inputs that have a value.
 *
 * No GPU needed. Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "coopreduce.h"
#include "ops_data.h"
#include "util.h"

static void api_table(void)
{
    static const char *names[] = {"sum", "min", "max", "absmax", "mean", "sumsq", "norm2", "dot", "argmin", "argmax"};
    for (int i = 0; i < 10; i++) {
        coopreduce_op op = (coopreduce_op)99;
        CHECK(coopreduce_op_name((coopreduce_op)i) && strcmp(coopreduce_op_name((coopreduce_op)i), names[i]) == 0,
              "op %d name", i);
        CHECK(coopreduce_op_from_name(names[i], &op) == COOPREDUCE_SUCCESS && (int)op == i, "op %s lookup", names[i]);
    }
    coopreduce_op op;
    CHECK(coopreduce_op_from_name("median", &op) == COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown op name");
    CHECK(coopreduce_op_name((coopreduce_op)10) == NULL, "op 10 has no name");
    static const char *dnames[] = {"float32", "float64", "int32", "float16", "bfloat16", "int64", "uint32", "uint64"};
    static const size_t dsize[] = {4, 8, 4, 2, 2, 8, 4, 8};
    for (int d = 0; d < COOPREDUCE_DTYPE_COUNT; d++) {
        CHECK(strcmp(coopreduce_dtype_name((coopreduce_dtype)d), dnames[d]) == 0, "dtype %d name", d);
        CHECK(coopreduce_dtype_size((coopreduce_dtype)d) == dsize[d], "dtype %d size", d);
    }
    /* Result sizes and types, from the header's table. */
    coopreduce_dtype r;
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_FLOAT16, 0, &r) == 4 && r == COOPREDUCE_FLOAT32, "f16 sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_BFLOAT16, 1, &r) == 2 && r == COOPREDUCE_BFLOAT16, "bf16 narrow sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_INT64, 0, &r) == 16 && r == COOPREDUCE_INT64, "i64 sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUM, COOPREDUCE_UINT32, 0, &r) == 8 && r == COOPREDUCE_UINT64, "u32 sum");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_MEAN, COOPREDUCE_INT32, 0, &r) == 8 && r == COOPREDUCE_FLOAT64, "i32 mean");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_ABSMAX, COOPREDUCE_INT64, 0, &r) == 8 && r == COOPREDUCE_UINT64, "i64 absmax");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_ARGMAX, COOPREDUCE_FLOAT16, 0, &r) == 8 && r == COOPREDUCE_UINT64, "argmax");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_MIN, COOPREDUCE_BFLOAT16, 0, &r) == 2 && r == COOPREDUCE_BFLOAT16, "bf16 min");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_DOT, COOPREDUCE_INT32, 0, &r) == 0, "int dot unsupported");
    CHECK(coopreduce_op_result_size(COOPREDUCE_OP_SUMSQ, COOPREDUCE_UINT64, 0, &r) == 0, "int sumsq unsupported");
    CHECK(coopreduce_result_size(COOPREDUCE_INT32) == 8 && coopreduce_result_size(COOPREDUCE_FLOAT32) == 4, "result_size");
    CHECK(strlen(coopreduce_status_string(COOPREDUCE_ERROR_OVERFLOW)) > 0 &&
          strcmp(coopreduce_status_string(COOPREDUCE_ERROR_EMPTY), "unknown status") != 0, "status strings");

    /* Errors; the result must stay untouched. */
    uint64_t res[2] = {0xA5A5A5A5A5A5A5A5ull, 0xA5A5A5A5A5A5A5A5ull};
    float x[4] = {1, 2, 3, 4};
    int32_t xi[4] = {1, 2, 3, 4};
    for (int op = COOPREDUCE_OP_MIN; op <= COOPREDUCE_OP_ARGMAX; op++) {
        if (op == COOPREDUCE_OP_MEAN || op == COOPREDUCE_OP_SUMSQ || op == COOPREDUCE_OP_NORM2 || op == COOPREDUCE_OP_DOT) continue;
        coopreduce_status s = coopreduce_reduce((coopreduce_op)op, x, NULL, res, 0, COOPREDUCE_FLOAT32, g_cpu, NULL);
        CHECK(s == COOPREDUCE_ERROR_EMPTY && strstr(coopreduce_last_error(g_cpu), "empty"), "%s of nothing: %d", coopreduce_op_name((coopreduce_op)op), (int)s);
    }
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUMSQ, xi, NULL, res, 4, COOPREDUCE_INT32, g_cpu, NULL) == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "int32 sumsq");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_DOT, x, NULL, res, 4, COOPREDUCE_FLOAT32, g_cpu, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT, "dot without y");
    CHECK(coopreduce_reduce((coopreduce_op)42, x, NULL, res, 4, COOPREDUCE_FLOAT32, g_cpu, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT, "op 42");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_ARGMAX, x, NULL, (char *)res + 4, 4, COOPREDUCE_FLOAT32, g_cpu, NULL) == COOPREDUCE_ERROR_MISALIGNED, "misaligned index result");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUM, xi, NULL, res, (1ull << 32) + 1, COOPREDUCE_UINT32, g_cpu, NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT, "uint32 sum over 2^32");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, res, 4, (coopreduce_dtype)8, g_cpu, NULL) == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "dtype 8");
    CHECK(res[0] == 0xA5A5A5A5A5A5A5A5ull && res[1] == 0xA5A5A5A5A5A5A5A5ull, "result written on failure");
    /* Empty inputs that have a value. */
    double d = 1;
    CHECK(coopreduce_reduce(COOPREDUCE_OP_MEAN, x, NULL, &d, 0, COOPREDUCE_FLOAT64, g_cpu, NULL) == 0 && d != d, "mean of nothing is NaN");
    float f = 1;
    CHECK(coopreduce_reduce(COOPREDUCE_OP_NORM2, x, NULL, &f, 0, COOPREDUCE_FLOAT32, g_cpu, NULL) == 0 && f == 0 && !signbit(f), "norm2 of nothing");
    CHECK(coopreduce_reduce(COOPREDUCE_OP_DOT, NULL, NULL, &f, 0, COOPREDUCE_FLOAT32, g_cpu, NULL) == 0 && f == 0, "dot of nothing");
    res[0] = res[1] = 7;
    CHECK(coopreduce_reduce(COOPREDUCE_OP_SUM, NULL, NULL, res, 0, COOPREDUCE_INT64, g_cpu, NULL) == 0 && res[0] == 0 && res[1] == 0, "int64 sum of nothing");
}

int main(int argc, char **argv)
{
    static const test_section sections[] = {
        {"names, sizes, errors", api_table},
    };
    return cpu_test_main("test_ops_api", argc, argv, sections,
                         sizeof sections / sizeof sections[0]);
}
