/* launch.h — the seam between the GPU backend's C code (reduce.c, workspace.c) and the kernel
 * families' CUDA code: one header, included by both sides, with the real types, so that a
 * signature that drifts fails to compile instead of linking.
 *
 * Each family (CR_FAMILY_CANONICAL, _ORDERED, _SCAN, _EXACT) exports two calls:
 *   cr_gpu_<family>_grid    sizes the launch for the call (grid, block, the per-block slots it
 *                           needs), from the kernel layer's occupancy and grid rules;
 *   cr_gpu_<family>_launch  enqueues it on the call's stream, in the workspace the backend has
 *                           made large enough for that grid.
 * Neither synchronises, allocates or prints; both return a cudaError_t (the caller clears any
 * stale error before a launch). The tutorial methods
 * have their own seam (methods/methods.h). */
#ifndef COOPREDUCE_GPU_LAUNCH_H
#define COOPREDUCE_GPU_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "core/plan.h"
#include "dist/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NORM2's three canonical trees (ordered.cu): each with the tagged partials of a canonical
 * sum's workspace; one set of counters for the three, its first word the epoch. All zero when
 * allocated; every launch leaves the counters zero. */
struct cr_norm2_work {
    void *partials[3]; /* tree k's tagged partials (k: big, medium, small) */
    void *counters;    /* the counters the three trees share, the epoch first */
    unsigned int *epoch;
};

/* Bytes of the zeroed ticket area: the ticket, scan.cu's and rows.cu's words in the first 64,
 * exact.cu's fold of 137 int64 from byte 256. */
#define CR_GPU_TICKET_BYTES 2048

/* The device memory a launch may use (workspace.c allocates it and keeps its invariants). */
typedef struct {
    void *tree_partials;        /* a canonical tree: tagged partials of levels 1 .. L-1 */
    void *tree_counters;        /* its group counters and epoch word, zero between launches */
    struct cr_norm2_work norm2; /* NORM2's three trees */
    void *slots;                /* one slot per block (scan, exact), cr_gpu_grid.slot_bytes each */
    unsigned int *ticket;       /* the last-block ticket, then scan.cu's three folded words at
                                   ticket + 4, rows.cu's segment counters at ticket + 12, exact.cu's
                                   fold at byte 256: CR_GPU_TICKET_BYTES, zero between launches */
} cr_gpu_work;

/* One call, as the backend hands it to a family. */
typedef struct {
    const cr_plan *plan;
    const void *x, *y; /* device-accessible; y only for DOT */
    uint64_t n;
    void *out;         /* device-accessible memory for the plan's result */
    void *host_tagged; /* canonical SUM to the host: the mapped host slot that receives
                                   the result as words tagged with seq (reduce.c), else NULL */
    unsigned int seq;
    int device, sm_count; /* the current GPU */
    int cc_major;         /* its compute capability's major number */
    uint64_t l2_bytes;
    int forced_blocks; /* coopreduce_set_grid_blocks; 0: automatic */
    cudaStream_t stream;
    int raw;           /* EXACT: out receives the digits and flags unrounded (CR_FMT_RAW) */
} cr_gpu_call;

/* The launch a family chose for a call. */
typedef struct {
    int blocks, threads; /* the main kernel's grid and block */
    int slot_blocks;     /* per-block slots the workspace must hold (>= blocks) */
    size_t slot_bytes;   /* bytes of one slot (0: the family uses none) */
    int quad;            /* canonical: four warps per chunk (mid-size inputs) */
    int stream_once;     /* the input is larger than L2: read it once, streamed */
    int split;           /* ordered: warps per chunk at mid sizes (split_kernel); 0: one */
} cr_gpu_grid;

cudaError_t cr_gpu_canonical_grid(const cr_gpu_call *c, cr_gpu_grid *g); /* canonical.cu */
cudaError_t cr_gpu_canonical_launch(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g);
cudaError_t cr_gpu_ordered_grid(const cr_gpu_call *c, cr_gpu_grid *g); /* ordered.cu */
cudaError_t cr_gpu_ordered_launch(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g);
cudaError_t cr_gpu_scan_grid(const cr_gpu_call *c, cr_gpu_grid *g); /* scan.cu */
cudaError_t cr_gpu_scan_launch(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g);
cudaError_t cr_gpu_exact_grid(const cr_gpu_call *c, cr_gpu_grid *g); /* exact.cu */
cudaError_t cr_gpu_exact_launch(const cr_gpu_call *c, const cr_gpu_work *w, cr_gpu_grid *g);

/* Many rows or segments of the scan family, scan.cu: rows rows of len elements, row r at
 * x + r * len elements, or, with offsets (nseg + 1 in device memory; len unused), segment r at
 * x[offsets[r] .. offsets[r + 1]); result r at out + r * the plan's result size, each the 1-D
 * call's bits, any length (a warp per row). */
cudaError_t cr_gpu_scan_rows_launch(const cr_gpu_call *c, uint64_t rows, uint64_t len,
                                    const int64_t *offsets);

/* A shaped call for rows.cu (reductions along an axis and over segments of the CANONICAL and
 * ORDERED families): the device shape, and the workspace for level-1 partials. */
typedef struct {
    uint64_t outer, len, inner;   /* AXIS (offsets NULL): rows (inner == 1) or columns */
    const int64_t *offsets;       /* SEGMENTS: nseg + 1 offsets in device memory, unchecked */
    uint64_t nseg, n;             /*   and x's length, which bounds them */
    void *partials;               /* three arrays of class_bytes each (one for one leaf class) */
    size_t class_bytes;           /* 0 when no row is longer than a chunk; segments: room for
                                     n / C + nseg + 1 partials */
    unsigned int *tickets;        /* one per row or segment when partials are used, zero between
                                     launches (the handle's row tickets) */
    void *grab;                   /* SEGMENTS: two 8-byte words, zero between launches, and the
                                     fault word, kept (the handle's ticket area, bytes 48-71) */
    unsigned int epoch;           /* SEGMENTS: the call's number on the handle, 1 .. 2^32 - 1 */
} cr_gpu_shape_call;

/* rows.cu: every result of the call, each the 1-D call's bits, on c->stream. Rows and columns
 * of at most C^2 elements (rows.cu's kernels compute two levels of the tree, in one launch or two);
 * segments of any length. The partials need, per leaf class, one accumulation-type value per
 * chunk of the rows longer than a chunk (columns: of every column; segments: n / C + nseg + 1).
 * Segments' offsets are checked on the device: when one is bad (negative, decreasing or beyond
 * n), every result is NaN and the fault word (grab + 16) gets (epoch << 32) | (2^32 - 1 - k) by
 * an atomic maximum, k the first bad offset (at most 2^32 - 1), unless a later epoch is there. */
cudaError_t cr_gpu_rows_launch(const cr_gpu_call *c, const cr_gpu_shape_call *s);

/* partials.cu, for sharded reductions: the chunk values of x[0..n) (and y, for DOT) of input
 * `dtype`, each chunk's tree over the leaves `leaf` (CR_LEAF_*; the plain sum of a float32 or
 * float64 array is CR_LEAF_VALUE), without the final rule: chunk g of tree k at out[k][g] in the
 * accumulation type (three trees for CR_LEAF_NORM2). n >= 1. shift_ok: x (and y) lie in
 * arrays that start on a 16-byte boundary, whose bytes before x misaligned chunks may read
 * (leaves.cuh's shifted loads); else misaligned input takes element loads. stream_once: the
 * input is larger than L2 (the stream-once load policy, as the 1-D kernels'). */
cudaError_t cr_gpu_partials_launch(coopreduce_dtype dtype, cr_leaf leaf, const void *x,
                                   const void *y, uint64_t n, void *const out[3], int shift_ok,
                                   int sm_count, int stream_once, cudaStream_t stream);

/* partials.cu, for the all-reduce: result j (at out + j * result_size) of the plan's CANONICAL
 * or ORDERED family (not DOT) over column j of the (R x s) block of input elements, R <= W (the
 * chunk row's lanes): the bits of coopreduce_reduce_axis(1, R, s). Row r of the block is at
 * block + r * pitch bytes (pitch 0: s elements), except row me where own is not NULL: that row
 * is read at own. With a gate (not NULL; dist/meta.h: cr_gate) nothing is written unless it is
 * open; the kernel runs (to check and post) even for s = 0. */
cudaError_t cr_gpu_columns_tree_launch(const cr_plan *p, const void *block, const void *own,
                                       int me, int R, uint64_t s, size_t pitch, void *out,
                                       const cr_gate *gate, int sm_count, cudaStream_t stream);

/* partials.cu: dst[0..bytes) = src[0..bytes) (host memory, bytes <= 16), the bytes passed by
 * value to a one-thread kernel on stream: nothing of src is read after the call returns. */
cudaError_t cr_gpu_store_launch(void *dst, const void *src, size_t bytes, cudaStream_t stream);

/* lead.cu: dst[0 .. 64) = the 64-byte meta at `meta` (host memory, passed by value: nothing of it
 * is read after the call returns), dst[64 .. 64 + data_bytes) = data (device memory), one block
 * on stream. */
cudaError_t cr_gpu_pack_lead_launch(void *dst, const void *meta, const void *data,
                                    size_t data_bytes, cudaStream_t stream);

/* lead.cu: the whole array of a small sharded reduction from the R gathered slots (`stride`
 * bytes apart: a 64-byte meta, then the rank's data, its meta's n elements of elem_size bytes),
 * where the metas say it was gathered whole (dist/meta.h: cr_meta_lead_whole with lead_elems):
 * rank r's data at out + (n_0 + ... + n_{r-1}) * elem_size, and offsets[0 .. 2) = {0, N} (N = 0
 * where it was not); the metas posted to post (dist/meta.h: cr_meta_post). out holds at least
 * this rank's gather limit. Enqueued on stream. */
cudaError_t cr_gpu_lead_whole_launch(const void *slots, int R, size_t stride, size_t elem_size,
                                     uint64_t lead_elems, void *out, int64_t *offsets,
                                     const cr_meta_post *post, cudaStream_t stream);

/* lead.cu: a small call's last step where no kernel of its own writes the results: its gate
 * (dist/meta.h: cr_gate; gpu/kernel/gate.cuh), then, if it is open, recv[0 .. bytes) =
 * out[0 .. bytes). One block on stream. */
cudaError_t cr_gpu_commit_launch(const cr_gate *gate, const void *out, void *recv, size_t bytes,
                                 cudaStream_t stream);

/* axis.cu: dst[c * len + e] = src[e * inner + c] for c < w, e < len (elements of elem_size
 * bytes: 2, 4 or 8), enqueued on stream. */
cudaError_t cr_gpu_gather_launch(const void *src, void *dst, size_t elem_size, uint64_t len,
                                 uint64_t inner, uint64_t w, int sm_count, cudaStream_t stream);

/* Whether the current GPU (`device`) can run the canonical kernels, which every handle needs:
 * cudaSuccess, or the error the occupancy calculator gave for a GPU without code for them. */
cudaError_t cr_gpu_canonical_check(int device);

#ifdef __cplusplus
}
#endif

#endif
