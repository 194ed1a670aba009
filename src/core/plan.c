/* plan.c — the routing table and cr_plan_make() (plan.h says what a plan is). */
#include <string.h>
#include "core/plan.h"
#include "core/status.h"

/* Columns of the op table: the three dtype classes that route differently. */
enum { C_WIDE, C_HALF, C_INT, C_COUNT }; /* float32/float64, float16/bfloat16, integers */

static int class_of(coopreduce_dtype dt)
{
    return cr_dtype_is_half(dt) ? C_HALF : cr_dtype_is_float(dt) ? C_WIDE : C_INT;
}

/* The result of an op over a class (coopreduce_reduce's table in the header). */
typedef enum {
    R_NONE = 0, /* no result: the pair is unsupported */
    R_INPUT,    /* the input type */
    R_ACCUM,    /* the accumulation type: float32 for 16-bit input (the input type with narrow),
                   the input type otherwise */
    R_UNSIGNED, /* the unsigned type of the input's width (|INT32_MIN| fits) */
    R_INDEX,    /* a uint64_t index */
    R_INT_SUM,  /* the exact sum: 64 bits for 32-bit input, 128 for 64-bit input */
    R_FLOAT64
} result_rule;

/* What EXACT mode does with an op of a class. */
typedef enum {
    X_SAME = 0, /* exact in both modes already: computed as in the deterministic mode */
    X_EXACT,    /* the exact family computes it */
    X_REFUSE    /* not computed in exact mode (COOPREDUCE_ERROR_NOT_SUPPORTED) */
} exact_rule;

typedef struct {
    const char *name;  /* the CLI's spelling */
    int inputs;        /* 2: DOT reads y */
    int needs_element; /* no value for n == 0 */
    cr_family family[C_COUNT];
    cr_leaf leaf; /* ORDERED columns */
    result_rule result[C_COUNT];
    exact_rule exact[C_COUNT];
} op_row;

#define NO    CR_FAMILY_NONE
#define CANON CR_FAMILY_CANONICAL
#define ORD   CR_FAMILY_ORDERED
#define SCAN  CR_FAMILY_SCAN

/* One row per coopreduce_op, in the enum's order. */
// clang-format off
static const op_row ops[COOPREDUCE_OP_COUNT] = {
    /* name     in el  float32/64, 16-bit, integer  leaf          results                          exact mode */
    {"sum",     1, 0, {CANON, ORD, SCAN},  CR_LEAF_VALUE,   {R_ACCUM, R_ACCUM, R_INT_SUM},     {X_EXACT, X_EXACT, X_SAME}},
    {"min",     1, 1, {SCAN, SCAN, SCAN},  CR_LEAF_VALUE,   {R_INPUT, R_INPUT, R_INPUT},       {X_SAME, X_SAME, X_SAME}},
    {"max",     1, 1, {SCAN, SCAN, SCAN},  CR_LEAF_VALUE,   {R_INPUT, R_INPUT, R_INPUT},       {X_SAME, X_SAME, X_SAME}},
    {"absmax",  1, 1, {SCAN, SCAN, SCAN},  CR_LEAF_VALUE,   {R_INPUT, R_INPUT, R_UNSIGNED},    {X_SAME, X_SAME, X_SAME}},
    {"mean",    1, 0, {CANON, ORD, SCAN},  CR_LEAF_VALUE,   {R_ACCUM, R_ACCUM, R_FLOAT64},     {X_REFUSE, X_REFUSE, X_REFUSE}},
    {"sumsq",   1, 0, {ORD, ORD, NO},      CR_LEAF_SQUARE,  {R_ACCUM, R_ACCUM, R_NONE},        {X_REFUSE, X_REFUSE, X_REFUSE}},
    {"norm2",   1, 0, {ORD, ORD, NO},      CR_LEAF_NORM2,   {R_ACCUM, R_ACCUM, R_NONE},        {X_REFUSE, X_REFUSE, X_REFUSE}},
    {"dot",     2, 0, {ORD, ORD, NO},      CR_LEAF_PRODUCT, {R_ACCUM, R_ACCUM, R_NONE},        {X_EXACT, X_REFUSE, X_REFUSE}},
    {"argmin",  1, 1, {SCAN, SCAN, SCAN},  CR_LEAF_VALUE,   {R_INDEX, R_INDEX, R_INDEX},       {X_SAME, X_SAME, X_SAME}},
    {"argmax",  1, 1, {SCAN, SCAN, SCAN},  CR_LEAF_VALUE,   {R_INDEX, R_INDEX, R_INDEX},       {X_SAME, X_SAME, X_SAME}},
};
// clang-format on

#undef NO
#undef CANON
#undef ORD
#undef SCAN

/* The tutorial methods, indexed by coopreduce_method. det_float: 1 when the float32/float64
 * sum gives the same bits on every run (same GPU, same input); integer sums are exact, hence
 * deterministic for every method. docs/METHODS.md says why for each. */
static const struct {
    const char *name;
    int det_float;
} methods[COOPREDUCE_METHOD_COUNT] = {
    {"canonical", 1},  {"block", 1},   {"grid", 0},     {"gridsync", 1},
    {"twopass", 1},    {"cluster", 1}, {"cgreduce", 1}, {"vec4int", 0},
    {"multilevel", 1}, {"async", 1},   {"barrier", 1},  {"pipeline", 1},
};

static const char *const modes[COOPREDUCE_MODE_COUNT] = {"deterministic", "exact"};

const char *cr_op_name(coopreduce_op op)
{
    return (unsigned)op < (unsigned)COOPREDUCE_OP_COUNT ? ops[op].name : NULL;
}

const char *cr_mode_name(coopreduce_mode mode)
{
    return (unsigned)mode < (unsigned)COOPREDUCE_MODE_COUNT ? modes[mode] : NULL;
}

const char *cr_method_name(coopreduce_method method)
{
    return (unsigned)method < (unsigned)COOPREDUCE_METHOD_COUNT ? methods[method].name : NULL;
}

int cr_method_det_float(coopreduce_method method)
{
    return (unsigned)method < (unsigned)COOPREDUCE_METHOD_COUNT && methods[method].det_float;
}

int cr_method_computes(coopreduce_method method, coopreduce_dtype dtype)
{
    (void)method;
    return dtype == COOPREDUCE_FLOAT32 || dtype == COOPREDUCE_FLOAT64 || dtype == COOPREDUCE_INT32;
}

static size_t result_of(result_rule rule, coopreduce_dtype dt, int narrow, coopreduce_dtype *r)
{
    const size_t es = cr_dtype_size(dt);
    switch (rule) {
    case R_NONE: return 0;
    case R_INPUT: *r = dt; return es;
    case R_ACCUM:
        if (cr_dtype_is_half(dt) && !narrow) {
            *r = COOPREDUCE_FLOAT32;
            return 4;
        }
        *r = dt;
        return es;
    case R_UNSIGNED:
        *r = dt == COOPREDUCE_INT32   ? COOPREDUCE_UINT32
             : dt == COOPREDUCE_INT64 ? COOPREDUCE_UINT64
                                      : dt;
        return es;
    case R_INDEX: *r = COOPREDUCE_UINT64; return 8;
    case R_INT_SUM:
        if (es == 4) {
            *r = cr_dtype(dt)->cls == CR_CLASS_SIGNED ? COOPREDUCE_INT64 : COOPREDUCE_UINT64;
            return 8;
        }
        *r = dt; /* the 128-bit sum has no dtype: it is named by the input's */
        return 16;
    case R_FLOAT64: *r = COOPREDUCE_FLOAT64; return 8;
    }
    return 0;
}

size_t cr_plan_result(coopreduce_op op, coopreduce_dtype dtype, int narrow,
                      coopreduce_dtype *result)
{
    coopreduce_dtype r = dtype;
    if (!cr_op_name(op) || !cr_dtype(dtype)) return 0;
    size_t size = result_of(ops[op].result[class_of(dtype)], dtype, narrow, &r);
    if (size && result) *result = r;
    return size;
}

coopreduce_status cr_plan_make(struct coopreduce_handle *h, coopreduce_op op,
                               coopreduce_dtype dtype, coopreduce_mode mode,
                               coopreduce_method method, int device, int narrow, cr_plan *p)
{
    memset(p, 0, sizeof *p);
    if (!cr_dtype(dtype))
        return cr_fail(h, COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
                       "unknown dtype %d (known: 0 = float32, 1 = float64, 2 = int32, 3 = float16, "
                       "4 = bfloat16, 5 = int64, 6 = uint32, 7 = uint64)",
                       (int)dtype);
    if (!cr_op_name(op))
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown operation %d", (int)op);
    if (!cr_mode_name(mode))
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown mode %d", (int)mode);
    if (!cr_method_name(method))
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "unknown method %d", (int)method);
    const op_row *row = &ops[op];
    const int cls = class_of(dtype);
    p->op = op;
    p->dtype = dtype;
    p->mode = mode;
    p->method = method;
    p->device = device;
    p->narrow = narrow != 0;
    p->shape.outputs = 1;
    p->result_size = result_of(row->result[cls], dtype, p->narrow, &p->result_dtype);
    if (!p->result_size)
        return cr_fail(h, COOPREDUCE_ERROR_UNSUPPORTED_DTYPE,
                       "%s of %s is not supported: sumsq, norm2 and dot take floating-point "
                       "input (convert integers to float64 first)",
                       row->name, cr_dtype(dtype)->name);
    p->inputs = row->inputs;
    p->needs_element = row->needs_element;
    p->max_n = UINT64_MAX / cr_dtype_size(dtype);
    if (op == COOPREDUCE_OP_SUM && cls == C_INT && cr_dtype_size(dtype) == 4)
        p->max_n = CR_INT32_MAX_N;
    p->check_overflow = op == COOPREDUCE_OP_SUM && p->result_size == 16;
    p->family = row->family[cls];
    p->leaf = row->leaf;
    p->acc = dtype;
    if (p->family == CR_FAMILY_CANONICAL || p->family == CR_FAMILY_ORDERED) {
        p->acc = dtype == COOPREDUCE_FLOAT64 ? COOPREDUCE_FLOAT64 : COOPREDUCE_FLOAT32;
        p->trees = p->leaf == CR_LEAF_NORM2 ? 3 : 1;
    }

    /* The mode and the method may take the call elsewhere, or refuse it. A refusal keeps the
     * result fields (the caller still checks its arguments first) and leaves no family. */
    const exact_rule x = mode == COOPREDUCE_MODE_EXACT ? row->exact[cls] : X_SAME;
    if (x == X_EXACT && method != COOPREDUCE_METHOD_CANONICAL) {
        p->family = CR_FAMILY_NONE;
        return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED,
                       "exact mode has its own algorithm; method \"%s\" computes the "
                       "deterministic mode only (set the canonical method)",
                       cr_method_name(method));
    }
    if (x == X_REFUSE) {
        p->family = CR_FAMILY_NONE;
        return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED,
                       "exact mode computes sum (of float types) and dot (of float32 and "
                       "float64), not %s of %s: use the deterministic mode",
                       row->name, cr_dtype(dtype)->name);
    }
    if (x == X_EXACT) {
        p->family = CR_FAMILY_EXACT;
        p->trees = 0;
        p->acc = dtype;
        return COOPREDUCE_SUCCESS;
    }
    if (method != COOPREDUCE_METHOD_CANONICAL) {
        if (device < 0) {
            p->family = CR_FAMILY_NONE;
            return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED,
                           "method \"%s\" runs on a GPU only; the CPU computes the canonical order",
                           cr_method_name(method));
        }
        if (op != COOPREDUCE_OP_SUM || !cr_method_computes(method, dtype)) {
            p->family = CR_FAMILY_NONE;
            return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED,
                           "method \"%s\" computes float32, float64 and int32 sums only; %s of %s "
                           "needs the canonical method",
                           cr_method_name(method), row->name, cr_dtype(dtype)->name);
        }
        p->family = CR_FAMILY_METHOD;
        p->trees = 0;
        p->acc = dtype;
    }
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_plan_shape(struct coopreduce_handle *h, cr_plan *p, const cr_shape *shape)
{
    p->shape = *shape;
    if (shape->kind != CR_SHAPE_FLAT && p->family == CR_FAMILY_METHOD) {
        p->family = CR_FAMILY_NONE;
        return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED,
                       "method \"%s\" reduces whole arrays; reductions along an axis or over "
                       "segments need the canonical method",
                       cr_method_name(p->method));
    }
    return COOPREDUCE_SUCCESS;
}
