/* internal.h — what the library's files share: the handle, error reporting, and the level
 * arithmetic of canonical order v1. Included by C and by CUDA C++ (src/gpu/canonical.cu), so
 * it stays in the common subset of both. */
#ifndef COOPREDUCE_INTERNAL_H
#define COOPREDUCE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "coopreduce.h"

#define CR_EXPORT __attribute__((visibility("default")))

/* ---- Canonical order v1 constants (docs/DETERMINISM.md) ---------------------------------- */
#define CR_ROWS 32            /* rows per chunk, for every dtype */
#define CR_LANES_F32 128      /* lanes: one 512-byte row */
#define CR_LANES_F64 64
#define CR_CHUNK_F32 (CR_ROWS * CR_LANES_F32)   /* 4096 */
#define CR_CHUNK_F64 (CR_ROWS * CR_LANES_F64)   /* 2048 */
/* Levels needed for N up to 2^64 with C >= 2048 = 2^11: ceil(64/11) = 6. */
#define CR_MAX_LEVELS 8

/* NORM2 on the GPU (ordered.cu): three canonical trees in one launch, each with the partials
 * and counters of a canonical sum's workspace (gpu_host.c's layout), one shared epoch word (at
 * the start of tree 0's counters), the three sums' tagged slots and the join count. All zero
 * when allocated; every launch leaves the counters and the join count zero. */
struct cr_norm2_work {
    void *partials[3], *counters[3];
    unsigned int *epoch, *join;
    void *slots;
};

/* INT32 sums are exact in int64 for up to 2^32 elements (|sum| <= 2^31 * 2^32 = 2^63); longer
 * ones are refused rather than risk a wrap. */
#define CR_INT32_MAX_N (1ull << 32)

static inline uint64_t cr_chunk_elems(coopreduce_dtype dtype)
{
    return dtype == COOPREDUCE_FLOAT64 ? (uint64_t)CR_CHUNK_F64 : (uint64_t)CR_CHUNK_F32;
}

/* The node counts of every level for n >= 1 elements: count[0] = n,
 * count[k] = ceil(count[k-1] / C), until count[L] == 1. Returns L (>= 1). */
static inline int cr_level_counts(uint64_t n, uint64_t chunk, uint64_t count[CR_MAX_LEVELS + 1])
{
    int levels = 0;
    count[0] = n;
    do {
        count[levels + 1] = (count[levels] + chunk - 1) / chunk;
        ++levels;
    } while (count[levels] > 1);
    return levels;
}

/* ---- The handle ---------------------------------------------------------------------------- */
struct cr_gpu_state;
struct coopreduce_handle {
    int device;                  /* -1: CPU; >= 0: GPU ordinal */
    int threads;                 /* CPU: 0 = every online CPU */
    int grid_blocks;             /* GPU: 0 = automatic */
    coopreduce_method method;    /* GPU: the method of the handle's sums */
    int stages;                  /* GPU: stages of COOPREDUCE_METHOD_PIPELINE */
    unsigned int disabled;       /* GPU: COOPREDUCE_FEATURE_* flags to act as if missing */
    coopreduce_launch_info last; /* GPU: what the last successful sum launched */
    int narrow;                  /* coopreduce_set_narrow_result */
    coopreduce_mode mode;        /* coopreduce_set_mode */
    struct cr_gpu_state *gpu;    /* GPU: workspace and launch data (gpu_host.c) */
    void *cpu_partials;          /* CPU: partial sums of levels >= 1, grown on demand */
    size_t cpu_partials_bytes;
    char err[512];               /* message of the last failed call */
};

/* Records a formatted message on the handle (or the thread, for h == NULL) and returns s. */
coopreduce_status cr_fail(coopreduce_handle *h, coopreduce_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- CPU path (src/cpu/canonical.c) ---------------------------------------------------------- */
/* Grows the handle's partial-sum buffer for n elements of dtype. */
coopreduce_status cr_cpu_reserve(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype);
/* Arguments already validated. Synchronous. */
coopreduce_status cr_cpu_sum(coopreduce_handle *h, const void *x, uint64_t n,
                             coopreduce_dtype dtype, void *result);
/* The exact int64 sum of n <= CR_INT32_MAX_N int32 values (src/cpu/integer.c), on the handle's
 * threads. */
void cr_cpu_sum_int32(const coopreduce_handle *h, const int32_t *x, uint64_t n, int64_t *result);
/* Any operation and dtype (src/cpu/ops.c); arguments validated (n >= 1 where the op needs an
 * element). Synchronous. */
coopreduce_status cr_cpu_reduce(coopreduce_handle *h, coopreduce_op op, const void *x,
                                const void *y, uint64_t n, coopreduce_dtype dtype, int narrow,
                                void *result);
/* The threads a CPU handle may use (its setting, or every online CPU), 1 .. CR_MAX_THREADS. */
#define CR_MAX_THREADS 256
int cr_cpu_threads(const coopreduce_handle *h);
/* Runs worker(jobs + i * job_size) for i in [0, t), t <= CR_MAX_THREADS: t - 1 new threads and
 * the calling thread. A thread that cannot be started is not an error: the calling thread runs
 * its job instead. */
void cr_cpu_run(int t, void *(*worker)(void *), void *jobs, size_t job_size);

/* ---- Exact mode (docs/EXACT.md) ------------------------------------------------------------ */
/* 1 when EXACT mode computes (op, dtype): SUM of the four float types, DOT of FLOAT32 and
 * FLOAT64 (the operations that differ between the modes; api.c routes the rest as usual). */
static inline int cr_exact_applies(coopreduce_op op, coopreduce_dtype dtype)
{
    if (op == COOPREDUCE_OP_SUM)
        return dtype == COOPREDUCE_FLOAT32 || dtype == COOPREDUCE_FLOAT64 ||
               dtype == COOPREDUCE_FLOAT16 || dtype == COOPREDUCE_BFLOAT16;
    if (op == COOPREDUCE_OP_DOT)
        return dtype == COOPREDUCE_FLOAT32 || dtype == COOPREDUCE_FLOAT64;
    return 0;
}
/* The correctly rounded SUM or DOT (cr_exact_applies), result as coopreduce_reduce() documents
 * (narrow: 16-bit inputs rounded once, straight to the input type). Arguments validated; n == 0
 * handled. CPU: src/cpu/exact.c, synchronous. GPU: src/gpu/exact_host.c. */
coopreduce_status cr_cpu_exact(coopreduce_handle *h, coopreduce_op op, const void *x,
                               const void *y, uint64_t n, coopreduce_dtype dtype, int narrow,
                               void *result);
coopreduce_status cr_gpu_exact(coopreduce_handle *h, coopreduce_op op, const void *x,
                               const void *y, void *result, uint64_t n, coopreduce_dtype dtype,
                               int narrow, void *stream, int to_host);

/* ---- GPU path (src/gpu/gpu_host.c, or gpu_none.c without CUDA) ------------------------------- */
coopreduce_status cr_gpu_count(int *count);
coopreduce_status cr_gpu_props(int ordinal, coopreduce_gpu_props *props, char *err, size_t errlen);
coopreduce_status cr_gpu_create(coopreduce_handle *h, int ordinal);
coopreduce_status cr_gpu_destroy(coopreduce_handle *h);
coopreduce_status cr_gpu_reserve(coopreduce_handle *h, uint64_t n, coopreduce_dtype dtype);
/* to_host != 0: result is plain host memory; the call synchronises the stream. Dispatches on
 * h->method: canonical float sums here, the rest in src/gpu/methods_host.c. */
coopreduce_status cr_gpu_sum(coopreduce_handle *h, const void *x, void *result, uint64_t n,
                             coopreduce_dtype dtype, void *stream, int to_host);
/* Every other (op, dtype) of the canonical method: the order-independent operations, and
 * COOPREDUCE_ERROR_NOT_SUPPORTED for those that run on the CPU only so far. */
coopreduce_status cr_gpu_reduce(coopreduce_handle *h, coopreduce_op op, const void *x,
                                const void *y, void *result, uint64_t n, coopreduce_dtype dtype,
                                void *stream, int to_host);

#endif
