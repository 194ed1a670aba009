/* plan.h — the routing plan: what a reduction call computes, decided once.
 *
 * Every reduction goes through cr_plan_make(), which turns (op, dtype, mode, method, device,
 * narrow) into a cr_plan: the algorithm family, the leaves it reduces, the accumulation and
 * result types, the limits and the workspace it needs. The API facade validates the call against
 * the plan, the CPU and GPU backends run the plan's family, coopreduce_reserve() sizes the
 * workspace from the plans of a dtype, coopreduce_op_result_size() reads the plan's result. No
 * other file decides which algorithm computes what.
 *
 * The table behind it (plan.c) has one row per operation, with a column per dtype class. A new
 * operation is a row there plus its kernels and tests; a new dtype is a row of dtype.h; a new
 * shape of call (an axis, segments, a communicator) is a field of the plan that the backends
 * read. docs/ARCHITECTURE.md walks through both checklists. */
#ifndef COOPREDUCE_PLAN_H
#define COOPREDUCE_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "coopreduce.h"
#include "core/dtype.h"

/* Algorithm families: how a result is computed. Each has a CPU file and a GPU file of the same
 * name (src/cpu/NAME.c, src/gpu/NAME.cu); docs/DETERMINISM.md gives their orders. */
typedef enum {
    CR_FAMILY_NONE = 0,  /* not computed: the pair is unsupported */
    CR_FAMILY_CANONICAL, /* canonical order v1 over x itself: float32 / float64 SUM and MEAN */
    CR_FAMILY_ORDERED,   /* canonical order over per-element leaves (cr_leaf): 16-bit SUM and
                             MEAN, SUMSQ, NORM2, DOT */
    CR_FAMILY_SCAN,      /* order-independent folds: MIN, MAX, ABSMAX, ARGMIN, ARGMAX, and the
                             exact integer SUM and MEAN */
    CR_FAMILY_EXACT,     /* the correctly rounded SUM and DOT (docs/EXACT.md) */
    CR_FAMILY_METHOD,    /* a tutorial method's sum (GPU only, docs/METHODS.md) */
    CR_FAMILY_COUNT
} cr_family;

/* What one element contributes to an ORDERED family's canonical tree(s). The values are pinned:
 * the GPU kernels are instantiated per leaf. */
typedef enum {
    CR_LEAF_VALUE = 0,   /* x[i] widened to the accumulation type (16-bit SUM, MEAN) */
    CR_LEAF_SQUARE = 1,  /* x[i] * x[i], rounded (SUMSQ) */
    CR_LEAF_PRODUCT = 2, /* x[i] * y[i], rounded (DOT) */
    CR_LEAF_NORM2 = 3    /* Blue's three scaled squares: three trees (NORM2) */
} cr_leaf;

/* INT32 and UINT32 sums are exact in 64 bits for up to 2^32 elements (|sum| <= 2^31 * 2^32 =
 * 2^63); longer ones are refused rather than risk a wrap. */
#define CR_INT32_MAX_N (1ull << 32)

/* The shape of a call: which values each of its results reduces. Every result is the 1-D
 * reduction of its own values, laid out contiguously in their order (docs/DETERMINISM.md, "Axis
 * and segments"): a backend may compute it any way that gives those bits. */
typedef enum {
    CR_SHAPE_FLAT = 0, /* one result over x[0..n) */
    CR_SHAPE_AXIS,     /* x as (outer, len, inner), reduced over len: result[o * inner + i]
                          reduces x[(o * len + k) * inner + i], k = 0 .. len-1 */
    CR_SHAPE_SEGMENTS  /* result[s] reduces x[offsets[s] .. offsets[s + 1]) */
} cr_shape_kind;

typedef struct {
    cr_shape_kind kind;
    uint64_t outer, len, inner; /* AXIS */
    const int64_t *offsets;     /* SEGMENTS: nseg + 1 offsets in host memory, checked; NULL on a
                                   GPU handle that checks them on the device (canonical order) */
    const int64_t *offsets_dev; /*   and, on a GPU handle, the caller's device copy */
    uint64_t nseg;              /* SEGMENTS */
    uint64_t outputs;           /* results written: 1, outer * inner or nseg */
    uint64_t elements;          /* AXIS: outer * len * inner; SEGMENTS: n, x's length */
} cr_shape;

typedef struct {
    /* the call */
    coopreduce_op op;
    coopreduce_dtype dtype;
    coopreduce_mode mode;
    coopreduce_method method;
    int device; /* -1: the CPU; >= 0: a GPU ordinal */
    int narrow; /* 16-bit results rounded once more to the input type */
    /* what computes it */
    cr_family family;
    cr_leaf leaf;         /* ORDERED: the leaves */
    int trees;            /* canonical trees the family climbs: 0, 1, or 3 (NORM2) */
    coopreduce_dtype acc; /* the type the trees add in (float32 for 16-bit input); for
                                   the other families, the input type */
    /* what the call gives and takes */
    coopreduce_dtype result_dtype; /* as coopreduce_op_result_size() documents */
    size_t result_size;            /* bytes written to *result (16: a 128-bit integer sum) */
    int inputs;                    /* 1, or 2 (DOT reads y) */
    int needs_element;             /* n == 0 fails with COOPREDUCE_ERROR_EMPTY */
    uint64_t max_n;                /* elements the result can take exactly (UINT64_MAX: no limit
                                   beyond the address space) */
    int check_overflow;            /* a 128-bit integer SUM: outside the input type's 64 bits
                                   fails with COOPREDUCE_ERROR_OVERFLOW where the result is
                                   read on the host */
    cr_shape shape;                /* which values each result reduces (cr_plan_shape) */
} cr_plan;

struct coopreduce_handle;

/* Fills *plan for the call, or fails with a message recorded on h (may be NULL): unknown op,
 * dtype, mode or method (COOPREDUCE_ERROR_INVALID_ARGUMENT / _UNSUPPORTED_DTYPE), a pair with no
 * result (SUMSQ of an integer: _UNSUPPORTED_DTYPE), an op the mode or method does not compute
 * (_NOT_SUPPORTED). device -1 is the CPU. */
coopreduce_status cr_plan_make(struct coopreduce_handle *h, coopreduce_op op,
                               coopreduce_dtype dtype, coopreduce_mode mode,
                               coopreduce_method method, int device, int narrow, cr_plan *plan);

/* Result k's run of elements in a shape: x[start + j * stride], j < count (SEGMENTS: from the
 * host copy of the offsets). The one mapping of results to elements the backends share. */
typedef struct {
    uint64_t start, count, stride;
} cr_run;

static inline cr_run cr_shape_run(const cr_shape *sh, uint64_t k)
{
    cr_run r;
    if (sh->kind == CR_SHAPE_SEGMENTS) {
        r.start = (uint64_t)sh->offsets[k];
        r.count = (uint64_t)(sh->offsets[k + 1] - sh->offsets[k]);
        r.stride = 1;
    } else if (sh->kind == CR_SHAPE_AXIS) {
        const uint64_t o = k / sh->inner, i = k % sh->inner;
        r.start = o * sh->len * sh->inner + i;
        r.count = sh->len;
        r.stride = sh->inner;
    } else {
        r.start = 0;
        r.count = sh->elements;
        r.stride = 1;
    }
    return r;
}

/* The plan of one result of a shaped plan: the same call, flat. */
static inline cr_plan cr_plan_flat(const cr_plan *shaped)
{
    cr_plan p = *shaped;
    memset(&p.shape, 0, sizeof p.shape);
    p.shape.outputs = 1;
    return p;
}

/* Gives the plan an axis or segmented shape (cr_plan_make leaves it flat), or fails: only the
 * canonical method reduces along an axis or over segments (COOPREDUCE_ERROR_NOT_SUPPORTED). */
coopreduce_status cr_plan_shape(struct coopreduce_handle *h, cr_plan *plan, const cr_shape *shape);

/* The result type and size of (op, dtype) in the deterministic canonical case, without a
 * handle: what coopreduce_op_result_size() answers. 0 when the pair has no result. */
size_t cr_plan_result(coopreduce_op op, coopreduce_dtype dtype, int narrow,
                      coopreduce_dtype *result);

/* Names: the op, mode and method tables (NULL for values out of range). */
const char *cr_op_name(coopreduce_op op);
const char *cr_mode_name(coopreduce_mode mode);
const char *cr_method_name(coopreduce_method method);
/* 1 when the method's float sums give the same bits on every run (same GPU, same input). */
int cr_method_det_float(coopreduce_method method);
/* 1 when the method computes dtype's SUM (the tutorial methods: FLOAT32, FLOAT64, INT32). */
int cr_method_computes(coopreduce_method method, coopreduce_dtype dtype);

#endif
