/* dtype.h — the one table of element types: name, CLI spelling, size, class, .npy code.
 *
 * Read by the library (coopreduce_dtype_name / _size, the routing plan), by the tools (the .npy
 * reader and writer, the generator), by the CLI and by the tests. Header-only on purpose: the
 * tools and the CLI do not link the library's internals, and a table of eight rows costs nothing
 * to carry in each file that uses it. A new dtype is one row here, appended in the order of the
 * public enum (the rows are indexed by coopreduce_dtype). C11 and CUDA C++. */
#ifndef COOPREDUCE_DTYPE_H
#define COOPREDUCE_DTYPE_H

#include <stddef.h>
#include <string.h>
#include "coopreduce.h"

typedef enum {
    CR_CLASS_FLOAT = 0,  /* IEEE binary formats (bfloat16 included) */
    CR_CLASS_SIGNED = 1, /* two's-complement integers */
    CR_CLASS_UNSIGNED = 2
} cr_dtype_class;

typedef struct {
    coopreduce_dtype dtype;
    const char *name; /* "float32": coopreduce_dtype_name() */
    const char *code; /* "f32": the CLI's --dtype spelling */
    unsigned size;    /* bytes per element */
    cr_dtype_class cls;
    const char *npy; /* "f4": the .npy descr without its byte-order character; NULL when
                               NumPy has no such type (bfloat16) */
} cr_dtype_info;

/* Indexed by coopreduce_dtype. */
static const cr_dtype_info cr_dtype_table[COOPREDUCE_DTYPE_COUNT] = {
    {COOPREDUCE_FLOAT32, "float32", "f32", 4, CR_CLASS_FLOAT, "f4"},
    {COOPREDUCE_FLOAT64, "float64", "f64", 8, CR_CLASS_FLOAT, "f8"},
    {COOPREDUCE_INT32, "int32", "i32", 4, CR_CLASS_SIGNED, "i4"},
    {COOPREDUCE_FLOAT16, "float16", "f16", 2, CR_CLASS_FLOAT, "f2"},
    {COOPREDUCE_BFLOAT16, "bfloat16", "bf16", 2, CR_CLASS_FLOAT, NULL},
    {COOPREDUCE_INT64, "int64", "i64", 8, CR_CLASS_SIGNED, "i8"},
    {COOPREDUCE_UINT32, "uint32", "u32", 4, CR_CLASS_UNSIGNED, "u4"},
    {COOPREDUCE_UINT64, "uint64", "u64", 8, CR_CLASS_UNSIGNED, "u8"},
};

/* The row of `dtype`, or NULL for a value that is not a known dtype. */
static inline const cr_dtype_info *cr_dtype(coopreduce_dtype dtype)
{
    return (unsigned)dtype < (unsigned)COOPREDUCE_DTYPE_COUNT ? &cr_dtype_table[dtype] : NULL;
}

static inline size_t cr_dtype_size(coopreduce_dtype dtype)
{
    const cr_dtype_info *d = cr_dtype(dtype);
    return d ? d->size : 0;
}

static inline int cr_dtype_is_float(coopreduce_dtype dtype)
{
    const cr_dtype_info *d = cr_dtype(dtype);
    return d && d->cls == CR_CLASS_FLOAT;
}

/* FLOAT16 and BFLOAT16: the types that accumulate in float32. */
static inline int cr_dtype_is_half(coopreduce_dtype dtype)
{
    return dtype == COOPREDUCE_FLOAT16 || dtype == COOPREDUCE_BFLOAT16;
}

/* Looks a dtype up by its CLI code ("f32") or its name ("float32"). 0, or -1 if unknown. */
static inline int cr_dtype_parse(const char *text, coopreduce_dtype *dtype)
{
    for (int k = 0; text && k < COOPREDUCE_DTYPE_COUNT; k++)
        if (strcmp(text, cr_dtype_table[k].code) == 0 ||
            strcmp(text, cr_dtype_table[k].name) == 0) {
            *dtype = (coopreduce_dtype)k;
            return 0;
        }
    return -1;
}

/* Looks a dtype up by its .npy code without byte order ("f4"). 0, or -1 if none has it. */
static inline int cr_dtype_from_npy(const char *code, coopreduce_dtype *dtype)
{
    for (int k = 0; code && k < COOPREDUCE_DTYPE_COUNT; k++)
        if (cr_dtype_table[k].npy && strcmp(code, cr_dtype_table[k].npy) == 0) {
            *dtype = (coopreduce_dtype)k;
            return 0;
        }
    return -1;
}

/* "f16, bf16, f32, f64, i32, i64, u32 or u64": the --dtype choices, for messages. */
#define CR_DTYPE_CHOICES "f32, f64, i32, f16, bf16, i64, u32 or u64"

#endif
