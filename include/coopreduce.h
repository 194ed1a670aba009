/*
 * coopreduce.h — deterministic reductions of large arrays on NVIDIA GPUs and on the CPU.
 *
 * This header is the manual. Everything the library offers is declared here, with what each
 * function returns and when it fails. It is C99 and C++ compatible and includes no CUDA header.
 *
 * The one idea
 * ------------
 * coopreduce_sum() adds N numbers along a fixed tree of additions, "canonical order v1",
 * published in docs/DETERMINISM.md. The result's bits depend only on the input values and N:
 * not on the GPU model, the launch configuration, the number of CPU threads, or whether the CPU
 * or the GPU computed it. Each element goes through O(log N) roundings (the pairwise bound).
 *
 * Handles
 * -------
 * A handle is bound to one device: one GPU (coopreduce_create_gpu) or the CPU
 * (coopreduce_create_cpu). It owns the workspace the reduction needs, so that the hot path
 * allocates nothing. Different handles may be used from different threads at the same time; one
 * handle must be used by one thread at a time, and the GPU calls on one handle must not run
 * concurrently on the device (keep one stream per handle, or order the streams): they share the
 * handle's workspace.
 *
 * Errors
 * ------
 * Every function returns a coopreduce_status. COOPREDUCE_SUCCESS is 0; the values are pinned and
 * will never change. coopreduce_status_string() names a status; coopreduce_last_error() gives
 * the detailed message of the last failed call on a handle (or, for calls made without a handle,
 * of the calling thread). The library never prints, never exits, and frees what it allocated
 * when a call fails.
 *
 * GPU handles
 * -----------
 * Every call with a GPU handle makes the handle's GPU the calling thread's current CUDA device
 * (cudaSetDevice) and leaves it so. The library links the CUDA runtime statically: a NULL stream
 * is the legacy default stream; code built with per-thread default streams should pass its
 * stream explicitly. Calls may be captured in a CUDA graph provided the workspace does not grow
 * (call coopreduce_reserve before capturing): growing it allocates and frees device memory.
 *
 * Semantics of the sum (all devices)
 * ----------------------------------
 *  - An empty array (n == 0) sums to +0.0.
 *  - Infinities add as IEEE-754 says along the canonical tree; +inf meeting -inf gives NaN.
 *  - Any NaN in gives NaN out, always the canonical quiet NaN (0x7fc00000 / 0x7ff8000000000000).
 *  - Signed zeros follow IEEE addition: the sum of [-0.0] is -0.0.
 *  - Subnormals are kept.
 */
#ifndef COOPREDUCE_H
#define COOPREDUCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COOPREDUCE_VERSION_MAJOR 0
#define COOPREDUCE_VERSION_MINOR 1
#define COOPREDUCE_VERSION_PATCH 0
/* The canonical order this header describes (docs/DETERMINISM.md). */
#define COOPREDUCE_ORDER_VERSION 1

/* Status codes. The numeric values are pinned: new codes are only ever appended. */
typedef enum {
    COOPREDUCE_SUCCESS = 0,
    COOPREDUCE_ERROR_INVALID_ARGUMENT = 1,  /* NULL handle or pointer, bad option value */
    COOPREDUCE_ERROR_UNSUPPORTED_DTYPE = 2, /* dtype not known, or not supported by this call */
    COOPREDUCE_ERROR_NO_GPU = 3,            /* no usable CUDA GPU, or the ordinal does not exist,
                                               or the library was built without CUDA */
    COOPREDUCE_ERROR_NOT_DEVICE_MEMORY = 4, /* a GPU handle was given memory the GPU cannot read
                                               or write (plain host memory, or another GPU's) */
    COOPREDUCE_ERROR_MISALIGNED = 5,        /* pointer not aligned to the element size */
    COOPREDUCE_ERROR_OUT_OF_MEMORY = 6,     /* host or device allocation failed */
    COOPREDUCE_ERROR_CUDA = 7,              /* the CUDA runtime reported an error */
    COOPREDUCE_ERROR_SYSTEM = 8,            /* reserved for operating-system failures; a CPU
                                               worker thread that cannot start is not one: the
                                               calling thread does its share, same bits */
    COOPREDUCE_ERROR_WRONG_DEVICE = 9,      /* the call needs the other kind of handle */
    COOPREDUCE_ERROR_INTERNAL = 10,         /* a bug in coopreduce: please report it */
    COOPREDUCE_ERROR_NOT_SUPPORTED = 11,    /* the method cannot run here: on this device (a
                                               GPU method on a CPU handle; clusters before
                                               sm_90), or for this dtype or operation */
    COOPREDUCE_ERROR_OVERFLOW = 12,         /* an exact integer sum does not fit in the input
                                               type's 64 bits (the 128-bit result is still
                                               written: see coopreduce_reduce) */
    COOPREDUCE_ERROR_EMPTY = 13,            /* the operation has no value for n == 0 (min, max,
                                               absmax, argmin, argmax) */
    COOPREDUCE_ERROR_COMMUNICATION = 14,    /* MPI or NCCL reported an error (coopreduce_dist.h) */
    COOPREDUCE_ERROR_OTHER_RANK = 15        /* another rank of the communicator failed its part
                                               of the call; the message names the rank and its
                                               error (coopreduce_dist.h) */
} coopreduce_status;

/* Element types. The numeric values are pinned: new types are only ever appended. */
typedef enum {
    COOPREDUCE_FLOAT32 = 0,
    COOPREDUCE_FLOAT64 = 1,
    COOPREDUCE_INT32 = 2,    /* summed exactly; the result is an int64_t (see coopreduce_sum) */
    COOPREDUCE_FLOAT16 = 3,  /* IEEE binary16, passed as uint16_t bits */
    COOPREDUCE_BFLOAT16 = 4, /* bfloat16 (the high half of a float32), passed as uint16_t bits */
    COOPREDUCE_INT64 = 5,
    COOPREDUCE_UINT32 = 6,
    COOPREDUCE_UINT64 = 7,
    COOPREDUCE_DTYPE_COUNT = 8 /* the number of dtypes; not a dtype (moves as types are added) */
} coopreduce_dtype;

/* Reductions. The numeric values are pinned: new operations are only ever appended.
 * coopreduce_reduce() documents each one's result type and special values. */
typedef enum {
    COOPREDUCE_OP_SUM = 0,
    COOPREDUCE_OP_MIN = 1,
    COOPREDUCE_OP_MAX = 2,
    COOPREDUCE_OP_ABSMAX = 3, /* max |x| */
    COOPREDUCE_OP_MEAN = 4,   /* the sum divided by n, rounded once */
    COOPREDUCE_OP_SUMSQ = 5,  /* sum of x*x */
    COOPREDUCE_OP_NORM2 = 6,  /* sqrt(sum of x*x), without overflow or underflow */
    COOPREDUCE_OP_DOT = 7,    /* sum of x*y over two arrays */
    COOPREDUCE_OP_ARGMIN = 8, /* index (uint64_t) of the first minimum */
    COOPREDUCE_OP_ARGMAX = 9, /* index (uint64_t) of the first maximum */
    COOPREDUCE_OP_COUNT = 10  /* the number of operations; not an operation */
} coopreduce_op;

/* Reduction methods: how the GPU computes the sum. The numeric values are pinned: new methods
 * are only ever appended. docs/METHODS.md describes each one, the tutorial it comes from, what
 * it costs (measured) and when to use it. Only CANONICAL is bit-identical across GPUs, grids
 * and the CPU; the others are the tutorials' algorithms, kept for comparison and teaching.
 * "Deterministic" below means: the same bits on every run with the same input on the same GPU
 * (coopreduce_method_deterministic() answers per dtype). Integer sums are exact, so they are
 * deterministic whatever the method. */
typedef enum {
    COOPREDUCE_METHOD_CANONICAL = 0,  /* canonical order v1; GPU and CPU; deterministic
                                         everywhere (the default) */
    COOPREDUCE_METHOD_BLOCK = 1,      /* per-block shuffle + shared-memory sums, the partials
                                         added on the host; synchronous */
    COOPREDUCE_METHOD_GRID = 2,       /* grid-stride loop, cooperative launch, shared and global
                                         atomics; not deterministic for floats */
    COOPREDUCE_METHOD_GRIDSYNC = 3,   /* one cooperative kernel, grid.sync(), fixed-order
                                         final pass */
    COOPREDUCE_METHOD_TWOPASS = 4,    /* per-block first pass, one-block second pass */
    COOPREDUCE_METHOD_CLUSTER = 5,    /* thread-block clusters and distributed shared memory
                                         (sm_90 and later) */
    COOPREDUCE_METHOD_CGREDUCE = 6,   /* cooperative_groups::reduce (redux.sync for 32-bit
                                         integers on sm_80 and later) */
    COOPREDUCE_METHOD_VEC4INT = 7,    /* 16-byte vector loads, thread_group shared-memory tree,
                                         one atomicAdd per block; deterministic for int32 only */
    COOPREDUCE_METHOD_MULTILEVEL = 8, /* grid-stride loads, shared-memory tree to one warp,
                                         shuffle finish */
    COOPREDUCE_METHOD_ASYNC = 9,      /* cooperative_groups::memcpy_async into shared memory */
    COOPREDUCE_METHOD_BARRIER = 10,   /* cuda::memcpy_async completing on a cuda::barrier */
    COOPREDUCE_METHOD_PIPELINE = 11,  /* a multi-stage cuda::pipeline (coopreduce_set_stages) */
    COOPREDUCE_METHOD_COUNT = 12      /* the number of methods; not a method */
} coopreduce_method;

/* Modes: what a floating-point SUM (and DOT) computes. The numeric values are pinned.
 *   DETERMINISTIC (the default): canonical order v1 (docs/DETERMINISM.md): the same bits on
 *     every device, with the pairwise error bound.
 *   EXACT: the exact mathematical sum of the inputs, rounded once to the result type (round to
 *     nearest, ties to even): the correctly rounded sum, whatever N, the order, the magnitudes
 *     or the cancellation (docs/EXACT.md). Being correctly rounded, it is the same on every GPU,
 *     on any number of GPUs and on the CPU by construction. Operations it applies to: SUM of
 *     FLOAT16, BFLOAT16 (float32 result, or rounded once to the input type with
 *     coopreduce_set_narrow_result), FLOAT32 and FLOAT64, and DOT of FLOAT32 and FLOAT64 (the
 *     exact sum of the exact products). Integer sums, MIN, MAX, ABSMAX, ARGMIN and ARGMAX are
 *     exact in both modes and compute the same thing (an int32 SUM through a tutorial method
 *     included); MEAN, SUMSQ, NORM2, DOT of 16-bit types, and a float SUM or DOT under a
 *     tutorial method (coopreduce_set_method) fail with COOPREDUCE_ERROR_NOT_SUPPORTED in EXACT
 *     mode.
 *     Special values: any NaN gives the canonical NaN; +inf together with -inf gives NaN;
 *     otherwise an infinity in the input is the result; an exact sum beyond the largest finite
 *     value rounds to +-inf as IEEE-754 says; an exact zero is +0.0, or -0.0 when every input
 *     (every product, for DOT) is -0.0 (IEEE's rule for sums of zeros). */
typedef enum {
    COOPREDUCE_MODE_DETERMINISTIC = 0,
    COOPREDUCE_MODE_EXACT = 1,
    COOPREDUCE_MODE_COUNT = 2 /* the number of modes; not a mode */
} coopreduce_mode;

/* Opaque handle: one GPU or the CPU, with its workspace. */
typedef struct coopreduce_handle coopreduce_handle;

/* ---- Library information ----------------------------------------------------------------- */

/* "0.1.0". Never NULL. */
const char *coopreduce_version_string(void);

/* The canonical order version implemented (COOPREDUCE_ORDER_VERSION of the built library). */
int coopreduce_order_version(void);

/* A short constant string naming the status ("success", "invalid argument", ...). Unknown
 * values give "unknown status". Never NULL. */
const char *coopreduce_status_string(coopreduce_status status);

/* "float32", "float64", "int32", "float16", "bfloat16", "int64", "uint32", "uint64", or NULL
 * for a value that is not a known dtype. */
const char *coopreduce_dtype_name(coopreduce_dtype dtype);

/* Bytes per element, or 0 for a value that is not a known dtype. */
size_t coopreduce_dtype_size(coopreduce_dtype dtype);

/* Bytes of the result of a sum of `dtype`: coopreduce_op_result_size(COOPREDUCE_OP_SUM, dtype)
 * on a handle without narrowing (4 for FLOAT16 and BFLOAT16, 8 for INT32, 16 for INT64). 0 for
 * a value that is not a known dtype. */
size_t coopreduce_result_size(coopreduce_dtype dtype);

/* The operation's name as the CLI spells it ("sum", "min", "max", "absmax", "mean", "sumsq",
 * "norm2", "dot", "argmin", "argmax"), or NULL for a value that is not a known operation. */
const char *coopreduce_op_name(coopreduce_op op);

/* Looks an operation up by its name (exact, lower case). Fails with
 * COOPREDUCE_ERROR_INVALID_ARGUMENT for a NULL argument or an unknown name. */
coopreduce_status coopreduce_op_from_name(const char *name, coopreduce_op *op);

/* The type of the result of `op` over `dtype`, as a dtype, and its size in bytes (the table
 * under coopreduce_reduce; `narrow` as set by coopreduce_set_narrow_result). Returns the size,
 * or 0 when the pair is not supported (sumsq, norm2 and dot of integers) or unknown. *result
 * (may be NULL) receives the result's dtype; for the 128-bit sums of INT64 and UINT64, which
 * have no dtype, it receives INT64 or UINT64 and the size is 16. */
size_t coopreduce_op_result_size(coopreduce_op op, coopreduce_dtype dtype, int narrow,
                                 coopreduce_dtype *result);

/* The mode's name as the CLI spells it ("deterministic", "exact"), or NULL for a value that is
 * not a known mode. */
const char *coopreduce_mode_name(coopreduce_mode mode);

/* Looks a mode up by its name (exact, lower case). Fails with COOPREDUCE_ERROR_INVALID_ARGUMENT
 * for a NULL argument or an unknown name. */
coopreduce_status coopreduce_mode_from_name(const char *name, coopreduce_mode *mode);

/* The method's name as the CLI spells it ("canonical", "block", ...), or NULL for a value that
 * is not a known method. */
const char *coopreduce_method_name(coopreduce_method method);

/* Looks a method up by its name (exact, lower case). Fails with
 * COOPREDUCE_ERROR_INVALID_ARGUMENT for a NULL argument or an unknown name. */
coopreduce_status coopreduce_method_from_name(const char *name, coopreduce_method *method);

/* 1 when `method` gives the same bits on every run with the same input on the same GPU for
 * `dtype`; 0 when it does not (floating-point atomics); -1 for an unknown method or dtype, or a
 * dtype the method does not compute (the tutorial methods sum FLOAT32, FLOAT64 and INT32). */
int coopreduce_method_deterministic(coopreduce_method method, coopreduce_dtype dtype);

/* The detailed message of the last failed call made with `handle`; with handle == NULL, of the
 * last failed call made by this thread without a usable handle (e.g. a failed create). The
 * string lives until the next failed call on the same handle (or thread); successful calls leave
 * it as it is. "" when nothing has failed yet. Never NULL. */
const char *coopreduce_last_error(const coopreduce_handle *handle);

/* ---- GPUs --------------------------------------------------------------------------------- */

typedef struct {
    char name[256];
    int ordinal;
    int sm_count;
    int cc_major, cc_minor; /* compute capability */
    int cooperative_launch; /* 1 when the GPU supports cooperative launches */
    int cluster_launch;     /* 1 when the GPU supports thread-block clusters (sm_90+) */
    uint64_t total_memory_bytes;
    uint64_t l2_bytes;
    int usable; /* 1 when this library has code for the GPU's architecture */
} coopreduce_gpu_props;

/* Number of CUDA GPUs. Sets *count = 0 and returns COOPREDUCE_SUCCESS when there is no GPU, no
 * driver, or the library was built without CUDA. Fails only on a NULL argument. */
coopreduce_status coopreduce_gpu_count(int *count);

/* Properties of GPU `ordinal`. Fails with COOPREDUCE_ERROR_NO_GPU for an ordinal that does not
 * exist. */
coopreduce_status coopreduce_gpu_props_get(int ordinal, coopreduce_gpu_props *props);

/* ---- Handles ------------------------------------------------------------------------------ */

/* A CPU handle. threads = 0 uses every CPU online when the handle is made (counted again by
 * coopreduce_set_threads); threads > 0 caps the worker threads. The result never depends on the
 * thread count. Fails on threads < 0 or out of memory. */
coopreduce_status coopreduce_create_cpu(coopreduce_handle **handle, int threads);

/* A handle for GPU `ordinal`. Allocates the workspace for sums of up to 2^28 elements and a
 * pinned, mapped host slot for coopreduce_sum_to_host(). Fails with
 * COOPREDUCE_ERROR_INVALID_ARGUMENT for ordinal < 0, COOPREDUCE_ERROR_NO_GPU when the GPU does
 * not exist or the library has no code for it, COOPREDUCE_ERROR_CUDA or
 * COOPREDUCE_ERROR_OUT_OF_MEMORY. Makes `ordinal` the calling thread's current CUDA device. */
coopreduce_status coopreduce_create_gpu(coopreduce_handle **handle, int ordinal);

/* Frees the handle and its workspace. Waits for the handle's GPU work to finish first.
 * NULL is accepted and does nothing. Returns the first error met while freeing, but frees
 * everything regardless. */
coopreduce_status coopreduce_destroy(coopreduce_handle *handle);

/* -1 for a CPU handle, else the GPU ordinal. Returns -2 for NULL. */
int coopreduce_handle_device(const coopreduce_handle *handle);

/* Grows the handle's workspace so that reductions of up to n elements of `dtype` — every
 * operation the handle's current method and mode compute on it — allocate nothing (set the
 * method and the mode first).
 * A call larger than the workspace grows it itself, which allocates (and, on a GPU, synchronises
 * the device): call this once up front to keep allocation off the hot path. The workspace is
 * about n/1024 bytes for float32 and n/256 bytes for float64 (three times that for NORM2's
 * trees), and is kept until the handle is destroyed. If it cannot be grown, the handle keeps the workspace it had. Fails with
 * COOPREDUCE_ERROR_INVALID_ARGUMENT (n * element size overflows), COOPREDUCE_ERROR_OUT_OF_MEMORY
 * or COOPREDUCE_ERROR_CUDA. */
coopreduce_status coopreduce_reserve(coopreduce_handle *handle, uint64_t n, coopreduce_dtype dtype);

/* For tests and benchmarks: force the GPU grid to `blocks` blocks (0 restores the automatic
 * choice from SM count and occupancy). Any value >= 1 gives the same bits. Fails on a CPU
 * handle (COOPREDUCE_ERROR_WRONG_DEVICE) or blocks < 0. */
coopreduce_status coopreduce_set_grid_blocks(coopreduce_handle *handle, int blocks);

/* For tests: the CPU thread count a CPU handle uses (0 = every CPU online now). */
coopreduce_status coopreduce_set_threads(coopreduce_handle *handle, int threads);

/* The method the handle's sums use (COOPREDUCE_METHOD_CANONICAL when never set). A CPU handle
 * accepts only CANONICAL. Fails with COOPREDUCE_ERROR_INVALID_ARGUMENT for an unknown method,
 * COOPREDUCE_ERROR_NOT_SUPPORTED for a GPU method on a CPU handle. Whether the GPU can run the
 * method (clusters need sm_90) is checked by the sum itself. */
coopreduce_status coopreduce_set_method(coopreduce_handle *handle, coopreduce_method method);

/* The mode of the handle's sums and dots (COOPREDUCE_MODE_DETERMINISTIC when never set; see
 * coopreduce_mode for what each computes and which operations EXACT applies to). Fails with
 * COOPREDUCE_ERROR_INVALID_ARGUMENT for a NULL handle or an unknown mode. */
coopreduce_status coopreduce_set_mode(coopreduce_handle *handle, coopreduce_mode mode);

/* Stages in flight of COOPREDUCE_METHOD_PIPELINE, 1 to 8 (default 4). Fails on a CPU handle or
 * a value out of range. */
coopreduce_status coopreduce_set_stages(coopreduce_handle *handle, int stages);

/* Features a GPU handle acts as if its GPU lacked, for testing the fallbacks: an OR of the flags
 * below (0, the default, disables nothing). Without cooperative launch, GRID launches its
 * kernel the ordinary way and GRIDSYNC runs as two kernels (same bits); without clusters,
 * CLUSTER fails with COOPREDUCE_ERROR_NOT_SUPPORTED. Fails on a CPU handle. */
#define COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH 1u
#define COOPREDUCE_FEATURE_CLUSTERS           2u
coopreduce_status coopreduce_disable_features(coopreduce_handle *handle, unsigned int features);

/* What the last successful sum on a GPU handle launched. */
typedef struct {
    coopreduce_method method;
    int blocks;       /* blocks of the main kernel */
    int threads;      /* threads per block of that kernel */
    int launches;     /* kernels and memsets enqueued */
    int cooperative;  /* 1: launched with cudaLaunchCooperativeKernel */
    int fell_back;    /* 1: the preferred launch was unavailable; notice says why */
    int cluster_size; /* blocks per thread-block cluster, 0 without clusters */
    int host_sync;    /* 1: the call waited for the GPU (BLOCK adds partials on the host) */
    char notice[240]; /* "" or a sentence about the fallback taken */
} coopreduce_launch_info;

/* Fills *info about the last successful sum made with the GPU handle. Fails on a CPU handle or
 * NULL arguments; all zero before the first sum. */
coopreduce_status coopreduce_last_launch(const coopreduce_handle *handle,
                                         coopreduce_launch_info *info);

/* ---- Sum ---------------------------------------------------------------------------------- */

/* The sum of x[0..n), written to *result: one element of `dtype`, or an int64_t for
 * COOPREDUCE_INT32 (the exact sum; n is limited to 2^32 int32 elements, where an int64 cannot
 * overflow). With the handle's method:
 *   CANONICAL (the default): canonical order v1, the same bits on every GPU and on the CPU.
 *   any other method (GPU handles only): the tutorial algorithm docs/METHODS.md describes. Its
 *     floating-point bits depend on the GPU and the grid, and for GRID and VEC4INT on the run;
 *     it may enqueue more than one kernel or a memset; BLOCK adds its partials on the host, so
 *     it waits for the stream (it is synchronous). These methods start from +0.0 (the sum of
 *     [-0.0] is +0.0) and pass NaN payloads through as the hardware does. The error bound of
 *     each is in docs/METHODS.md. CLUSTER fails with COOPREDUCE_ERROR_NOT_SUPPORTED, enqueueing
 *     nothing, on a GPU without thread-block clusters.
 * What follows describes the canonical method; "one kernel launch" and "no host
 * synchronisation" hold for it (and the other methods but BLOCK enqueue without waiting).
 *
 * GPU handle: x and result are device memory the GPU can address (cudaMalloc, managed, or
 *   mapped pinned host memory). The call is asynchronous: it returns once the work is enqueued
 *   on `stream` (a cudaStream_t; NULL is the legacy default stream), and *result is written when
 *   the stream reaches it. One kernel launch for any n, no allocation (see coopreduce_reserve)
 *   and no host synchronisation. x may have any alignment that is a multiple of the element size
 *   (16-byte aligned data takes the fast path). Pointers are checked with
 *   cudaPointerGetAttributes the first time a handle sees them (device and managed memory are
 *   remembered, mapped pinned memory is checked every time); only their start is checked, so
 *   x[0..n) must lie inside one allocation, and memory freed since must not be passed.
 * CPU handle: x and result are host memory; the call is synchronous; stream is ignored. The sum
 *   runs in IEEE round-to-nearest with subnormals kept, whatever the calling thread's rounding
 *   mode or flush-to-zero settings, which are restored before the call returns.
 *
 * Fails with COOPREDUCE_ERROR_INVALID_ARGUMENT (NULL handle, x NULL while n > 0, result NULL,
 * more than 2^32 int32 elements), COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, COOPREDUCE_ERROR_MISALIGNED
 * (x not aligned to the element size, result not aligned to the result size),
 * COOPREDUCE_ERROR_NOT_DEVICE_MEMORY (GPU handle given host or foreign memory),
 * COOPREDUCE_ERROR_NOT_SUPPORTED (see CLUSTER above), COOPREDUCE_ERROR_OUT_OF_MEMORY (growing
 * the workspace; on a CPU handle, the exact mode's per-thread accumulators), COOPREDUCE_ERROR_CUDA.
 * On failure nothing is enqueued and *result is not written. */
coopreduce_status coopreduce_sum(const void *x, void *result, uint64_t n, coopreduce_dtype dtype,
                                 coopreduce_handle *handle, void *stream);

/* The same sum, returned to host memory with the least latency. For the canonical float sums
 * (what the rest of this comment describes): the kernel writes the result
 * straight into pinned, mapped host memory owned by the handle, tagged with the call's sequence
 * number, and the call returns as soon as the result has arrived (the grid may still be
 * retiring; later work on `stream` is ordered after it as usual). The sum is enqueued after
 * earlier work on `stream`, so that work is finished too. The calling thread spins until the
 * result arrives (a CPU core is busy while it waits). x is device memory for a GPU handle, host memory for a
 * CPU handle; result_host is plain host memory. The other methods, and int32 sums, copy the
 * device result back and synchronise the stream. Fails as coopreduce_sum() does, and with
 * COOPREDUCE_ERROR_CUDA if earlier work on the stream failed. */
coopreduce_status coopreduce_sum_to_host(const void *x, void *result_host, uint64_t n,
                                         coopreduce_dtype dtype, coopreduce_handle *handle,
                                         void *stream);

/* ---- Other reductions ---------------------------------------------------------------------- */

/* For FLOAT16 and BFLOAT16 inputs, whether sum, mean, sumsq, norm2 and dot return their float32
 * result rounded once more, to the input type (round to nearest even; overflow gives an
 * infinity). Off (0) by default. Fails with COOPREDUCE_ERROR_INVALID_ARGUMENT for a NULL
 * handle. */
coopreduce_status coopreduce_set_narrow_result(coopreduce_handle *handle, int narrow);

/* The reduction `op` of x[0..n) (and, for DOT, of y[0..n); y is ignored otherwise and may be
 * NULL), written to *result. Deterministic: the bits depend only on op, dtype, n and the values,
 * never on the device, the grid or the thread count; the GPU and the CPU give the same bits.
 * Memory, streams and synchronisation as for coopreduce_sum(): asynchronous on a GPU handle,
 * synchronous on a CPU handle. Only the handle's CANONICAL method computes operations other than
 * SUM (another method gives COOPREDUCE_ERROR_NOT_SUPPORTED).
 *
 * Results (docs/DETERMINISM.md, "Operations", gives the order and rules in full):
 *   SUM     floats: canonical order v1; FLOAT16 and BFLOAT16 are widened to float32 and follow
 *           float32's order (same constants), result float32. Integers: the exact sum, as an
 *           int64_t for INT32 (n <= 2^32), uint64_t for UINT32 (n <= 2^32), and as 16 bytes for
 *           INT64 and UINT64: the exact sum as a 128-bit two's-complement (INT64) or unsigned
 *           (UINT64) integer, low 8 bytes first. On a CPU handle and in coopreduce_reduce_to_host
 *           a sum outside the input type's range also fails with COOPREDUCE_ERROR_OVERFLOW, the
 *           16 bytes written all the same; on a GPU handle the caller checks the high half.
 *   MIN, MAX    the input type. NaN anywhere gives the canonical quiet NaN; -0.0 counts as
 *           less than +0.0, so the result is the same whatever the order.
 *   ABSMAX  max |x|: floats: the input type (NaN as MIN); signed integers: the unsigned type of
 *           the same width (|INT32_MIN| = 2^31 fits); unsigned: the input type.
 *   MEAN    the SUM divided by n, rounded once (a correctly rounded quotient): floats: the SUM's
 *           type; integers: float64. n == 0 gives the canonical NaN.
 *   SUMSQ   floats only: the canonical order over x[i]*x[i], each product rounded to the
 *           accumulation type (float32 for 16-bit inputs) and never fused with the addition.
 *   NORM2   floats only: Blue's scaled sums as in LAPACK's nrm2 (2017): three canonical sums
 *           (of big, medium and small |x| squared, each scaled by a power of two), combined by
 *           a fixed formula; no overflow or underflow for any finite input. +-inf gives +inf,
 *           NaN gives NaN.
 *   DOT     floats only: the canonical order over x[i]*y[i], products rounded, not fused.
 *   ARGMIN, ARGMAX  a uint64_t index: the first index of the minimum (maximum), values compared
 *           as IEEE numbers (-0.0 == +0.0); if any element is NaN, the index of the first NaN
 *           (as numpy).
 * Empty input: SUM, SUMSQ, DOT and NORM2 give +0 (0 for integers), MEAN the canonical NaN; MIN,
 * MAX, ABSMAX, ARGMIN and ARGMAX fail with COOPREDUCE_ERROR_EMPTY.
 *
 * Fails as coopreduce_sum() does, and with COOPREDUCE_ERROR_INVALID_ARGUMENT for an unknown op
 * or a NULL y for DOT, COOPREDUCE_ERROR_UNSUPPORTED_DTYPE for SUMSQ, NORM2 or DOT of integers,
 * COOPREDUCE_ERROR_EMPTY, COOPREDUCE_ERROR_OVERFLOW (above), and COOPREDUCE_ERROR_NOT_SUPPORTED
 * for an operation the handle's mode or method does not compute (coopreduce_mode,
 * coopreduce_set_method). */
coopreduce_status coopreduce_reduce(coopreduce_op op, const void *x, const void *y, void *result,
                                    uint64_t n, coopreduce_dtype dtype, coopreduce_handle *handle,
                                    void *stream);

/* coopreduce_reduce() with the result in host memory; synchronous on every handle. */
coopreduce_status coopreduce_reduce_to_host(coopreduce_op op, const void *x, const void *y,
                                            void *result_host, uint64_t n, coopreduce_dtype dtype,
                                            coopreduce_handle *handle, void *stream);

/* ---- Along an axis, over segments ----------------------------------------------------------
 * Many reductions in one call: every result is the 1-D coopreduce_reduce() of exactly the values
 * it reduces, laid out contiguously in their order, bit for bit. So a result does not depend on
 * how many other rows or segments are reduced beside it, on their values, on the shape's other
 * extents, nor on the device, the grid or the thread count (batch invariance;
 * docs/DETERMINISM.md, "Axis and segments"). ARGMIN and ARGMAX give the index within the reduced
 * values (numpy's convention). The results form an array of the operation's result type
 * (coopreduce_reduce's table; 16 bytes each for the 128-bit integer sums), aligned as that type.
 * Memory, streams and synchronisation as for coopreduce_reduce(); on a GPU handle, one call
 * enqueues its work without waiting for the GPU (but see coopreduce_reduce_segments). Workspace:
 * a GPU call uses buffers kept by the handle, allocated on first use and grown when a call needs
 * more (allocating may synchronise the device, and fails inside a CUDA graph capture): the 1-D
 * workspace of its rows or segments, and a buffer for the partials of rows, columns and segments
 * longer than a chunk (4 or 8 bytes per chunk, times 3 for NORM2, and a 4-byte counter per row
 * when some are; segments checked on the device: room for n / chunk + nseg + 1 partials and a
 * counter per segment, whatever their lengths) and for the columns the generic path gathers (up
 * to 64 MiB). coopreduce_reserve_axis() and coopreduce_reserve_segments() size them all up
 * front. A CPU call allocates per call the buffers its threads gather columns and long rows
 * into. Only the CANONICAL method reduces along an axis or over segments, in either mode. */

/* Grows the handle's buffers so that coopreduce_reduce_axis() on this shape, or on any shape
 * none of whose extents is larger, allocates nothing on a GPU handle — for every operation the
 * handle's current method and mode compute on dtype (set them first); on a CPU handle, the
 * workspace of a row, as coopreduce_reserve(handle, len, dtype). Call it before capturing such
 * calls in a CUDA graph. Fails with COOPREDUCE_ERROR_INVALID_ARGUMENT (the extents' product
 * overflows), COOPREDUCE_ERROR_NOT_SUPPORTED (the handle's method is not CANONICAL),
 * COOPREDUCE_ERROR_OUT_OF_MEMORY or COOPREDUCE_ERROR_CUDA; the handle keeps what it had grown
 * before the failure. */
coopreduce_status coopreduce_reserve_axis(coopreduce_handle *handle, uint64_t outer, uint64_t len,
                                          uint64_t inner, coopreduce_dtype dtype);

/* The same for coopreduce_reduce_segments() of up to nseg segments over x of up to n elements,
 * whatever the offsets. The calls that read the offsets back (MIN, MAX, ABSMAX, ARGMIN, ARGMAX,
 * exact mode, the integer sums and means) still wait for the stream; the canonical-order ones
 * (float SUM and MEAN, SUMSQ, NORM2, DOT) then neither allocate nor wait. */
coopreduce_status coopreduce_reserve_segments(coopreduce_handle *handle, uint64_t n,
                                              uint64_t nseg, coopreduce_dtype dtype);

/* A contiguous array x viewed as (outer, len, inner), reduced over len:
 *   result[o * inner + i] = op over k in [0, len) of x[(o * len + k) * inner + i]
 * for o < outer, i < inner (and, for DOT, the same elements of y). numpy's and torch's
 * reduction of a C-ordered array along axis a is outer = the product of the extents before a,
 * len = the extent of a, inner = the product of the extents after it; a Fortran-ordered array's
 * axis a is the C-ordered axis (ndim - 1 - a) of the same memory. Writes outer * inner results;
 * an empty result (outer or inner 0) writes nothing and succeeds. len == 0 follows the 1-D
 * rules: SUM, SUMSQ, NORM2 and DOT give +0, MEAN NaN, and MIN, MAX, ABSMAX, ARGMIN and ARGMAX
 * fail with COOPREDUCE_ERROR_EMPTY, writing nothing. The total outer * len * inner may exceed
 * 2^32, and so may len (but for INT32 and UINT32 sums, whose len is at most 2^32).
 * Fails as coopreduce_reduce() does, with COOPREDUCE_ERROR_INVALID_ARGUMENT when the extents'
 * product overflows, and with COOPREDUCE_ERROR_OVERFLOW (CPU handle) when some 128-bit integer sum
 * is outside the input type: every result is written, the message names the first. */
coopreduce_status coopreduce_reduce_axis(coopreduce_op op, const void *x, const void *y,
                                         void *result, uint64_t outer, uint64_t len, uint64_t inner,
                                         coopreduce_dtype dtype, coopreduce_handle *handle,
                                         void *stream);

/* Segments of x, an array of n elements (and of y, for DOT): result[s] = op over
 * x[offsets[s] .. offsets[s + 1]) for s < nseg. offsets holds nseg + 1 int64 element offsets,
 * non-decreasing, with 0 <= offsets[0] and offsets[nseg] <= n; the segments need not start at 0
 * or cover x. An empty segment follows the 1-D rules: MIN, MAX, ABSMAX, ARGMIN and ARGMAX fail
 * with COOPREDUCE_ERROR_EMPTY, naming the segment. offsets is host memory for a CPU handle and
 * device memory for a GPU handle. Fails otherwise as coopreduce_reduce_axis() does.
 *
 * Where the offsets are checked, and when a bad one is reported:
 *  - A CPU handle, and a GPU handle for the operations outside the canonical order (MIN, MAX,
 *    ABSMAX, ARGMIN, ARGMAX, the integer sums, and every operation in EXACT mode): before any
 *    result is written, failing with COOPREDUCE_ERROR_INVALID_ARGUMENT that names the first bad
 *    offset. A GPU handle reads the offsets back for this, so this call waits for the earlier
 *    work on `stream`.
 *  - A GPU handle for the canonical-order operations (SUM, MEAN, SUMSQ, NORM2 and DOT of the
 *    float types in DETERMINISTIC mode): on the GPU, in stream order, so that the call does not
 *    wait. Whatever the offsets hold, nothing outside x[0 .. n) (and y's) is read. When one is
 *    bad, every result of the call is NaN and the handle records the call's first bad offset:
 *    coopreduce_synchronize() reports it. */
coopreduce_status coopreduce_reduce_segments(coopreduce_op op, const void *x, const void *y,
                                             void *result, uint64_t n, const int64_t *offsets,
                                             uint64_t nseg, coopreduce_dtype dtype,
                                             coopreduce_handle *handle, void *stream);

/* Waits for the work enqueued on `stream` (a GPU handle; a CPU handle has none and returns at
 * once), then reports what the GPU found wrong in the handle's calls that check their arguments
 * on the device (coopreduce_reduce_segments): COOPREDUCE_ERROR_INVALID_ARGUMENT, naming the first
 * bad offset of the latest such call with bad offsets not reported before; each is reported
 * once. Fails with COOPREDUCE_ERROR_CUDA when the stream's work failed. */
coopreduce_status coopreduce_synchronize(coopreduce_handle *handle, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* COOPREDUCE_H */
