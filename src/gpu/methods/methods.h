/* methods.h — the C interface between the GPU host code (src/gpu/methods_host.c) and the
 * tutorial methods, one .cu file per family in this directory. C and CUDA C++ both include it.
 *
 * Every launcher has the signature
 *     int cr_method_<name>(const cr_method_args *a, cr_method_report *r);
 * and returns 0 on success, a cudaError_t (> 0) when a CUDA call failed, or
 * CR_METHOD_UNSUPPORTED (< 0) when the GPU (or a disabled feature) cannot run the method, with
 * the reason in r->notice. It enqueues work on a->stream and never synchronises the host.
 *
 * The host code has already: zeroed *r, validated the arguments, made the GPU current, handled
 * n == 0, refused `cluster` on a GPU without thread-block clusters (or with them disabled for
 * testing), sized the workspace as cr_method_partials_needed() says, and, for the methods that
 * finish with atomics (grid, vec4int), zeroed *a->out in stream order so they can add into it.
 * Every other method must store *a->out itself (a memset is a whole extra operation on the
 * stream, noticeable at small n). */
#ifndef COOPREDUCE_GPU_METHODS_H
#define COOPREDUCE_GPU_METHODS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CR_METHOD_UNSUPPORTED (-1)

/* The threads per block of every tutorial method (the tutorials' 256). */
#define CR_METHOD_THREADS 256
/* No tutorial method launches more blocks than this, except `block` and `twopass`, whose first
 * pass has one thread per element as in the tutorials (ceil(n / 256) blocks). */
#define CR_METHOD_MAX_GRID 65536

typedef struct {
    int dtype;            /* coopreduce_dtype: COOPREDUCE_FLOAT32, _FLOAT64 or _INT32 */
    const void *x;        /* n elements, aligned to the element size, maybe not to 16 bytes */
    uint64_t n;           /* >= 1 */
    void *out;            /* device: the result: float, double, or int64_t for INT32 */
    void *partials;       /* device: cr_method_partials_needed() slots of 8 bytes each */
    unsigned int *ticket; /* device: zero on entry; the method leaves it zero */
    int sm_count;
    int blocks;                 /* 0: the method chooses its grid; > 0: forced (tests), clamped to
                                what the method can run (co-residency for cooperative launch) */
    int stages;                 /* `pipeline` only: 1 .. 8 stages in flight */
    const char *no_cooperative; /* NULL: may launch cooperatively; else why not (the GPU
                                   lacks it, or a test disabled it), for the notice */
    void *stream;               /* cudaStream_t */
} cr_method_args;

typedef struct {
    int blocks;       /* blocks of the first (main) kernel */
    int threads;      /* threads per block of that kernel */
    int launches;     /* kernels (and memsets) enqueued by the launcher */
    int cooperative;  /* 1: launched with cudaLaunchCooperativeKernel */
    int fell_back;    /* 1: the preferred launch was not available; see notice */
    int cluster_size; /* blocks per cluster, 0 when not a cluster launch */
    char notice[240]; /* why a fallback happened, or why the method is unsupported */
} cr_method_report;

/* 8-byte slots of workspace a method needs for n elements (the `block` and `twopass` methods
 * keep one partial per block of 256 elements; the others at most one per block). */
static inline uint64_t cr_method_partials_needed(int method, uint64_t n)
{
    /* 1 = COOPREDUCE_METHOD_BLOCK, 4 = COOPREDUCE_METHOD_TWOPASS */
    uint64_t per_element = (n + CR_METHOD_THREADS - 1) / CR_METHOD_THREADS;
    if ((method == 1 || method == 4) && per_element > CR_METHOD_MAX_GRID) return per_element;
    return CR_METHOD_MAX_GRID;
}

/* One launcher per method (files in src/gpu/methods/).
 * `block` is the exception to "the result lands in *out": it leaves r->blocks partials in
 * a->partials, packed in the accumulator type (float, double, or int64_t for INT32), for the
 * host to add in index order (the tutorial's host loop). */
int cr_method_block(const cr_method_args *a, cr_method_report *r);      /* block.cu */
int cr_method_grid(const cr_method_args *a, cr_method_report *r);       /* grid.cu */
int cr_method_gridsync(const cr_method_args *a, cr_method_report *r);   /* grid.cu */
int cr_method_twopass(const cr_method_args *a, cr_method_report *r);    /* twopass.cu */
int cr_method_cluster(const cr_method_args *a, cr_method_report *r);    /* cluster.cu */
int cr_method_cgreduce(const cr_method_args *a, cr_method_report *r);   /* cgreduce.cu */
int cr_method_vec4int(const cr_method_args *a, cr_method_report *r);    /* vec4int.cu */
int cr_method_multilevel(const cr_method_args *a, cr_method_report *r); /* multilevel.cu */
int cr_method_async(const cr_method_args *a, cr_method_report *r);      /* async_copy.cu */
int cr_method_barrier(const cr_method_args *a, cr_method_report *r);    /* async_copy.cu */
int cr_method_pipeline(const cr_method_args *a, cr_method_report *r);   /* async_copy.cu */

#ifdef __cplusplus
}
#endif

#endif
