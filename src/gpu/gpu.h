/* gpu.h — the GPU backend, as the facade (src/api) calls it: implemented by the C files of src/gpu with
 * CUDA, or by gpu_none.c in a build without it. src/cpu/cpu.h is its CPU twin. Arguments reach
 * here validated against the plan. */
#ifndef COOPREDUCE_GPU_H
#define COOPREDUCE_GPU_H

#include <stddef.h>
#include <stdint.h>
#include "core/handle.h"
#include "core/plan.h"
#include "dist/meta.h"

coopreduce_status cr_gpu_count(int *count);
/* Fills *props; on failure writes a message into err. */
coopreduce_status cr_gpu_props(int ordinal, coopreduce_gpu_props *props, char *err, size_t errlen);
/* The handle's GPU state: device attributes, a check that the GPU runs coopreduce's kernels,
 * the host-result slot and the default workspace. */
coopreduce_status cr_gpu_create(struct coopreduce_handle *h, int ordinal);
coopreduce_status cr_gpu_destroy(struct coopreduce_handle *h);
/* Grows the workspace so that calls of the plan on up to n elements allocate nothing; for a
 * shaped plan (an axis, segments), calls of its shape or of any with no larger extents (n
 * unused). */
coopreduce_status cr_gpu_reserve(struct coopreduce_handle *h, const cr_plan *plan, uint64_t n);
/* Enqueues the plan on `stream` (a cudaStream_t); to_host: result is host memory and the call
 * waits for it. */
coopreduce_status cr_gpu_reduce(struct coopreduce_handle *h, const cr_plan *plan, const void *x,
                                const void *y, void *result, uint64_t n, void *stream, int to_host);

/* Copies nseg + 1 offsets from device memory to the handle's pinned host scratch, *host, valid
 * until the handle's next call, after the earlier work on `stream`: the call waits for the
 * stream. */
coopreduce_status cr_gpu_offsets_to_host(struct coopreduce_handle *h, const int64_t *offsets,
                                         uint64_t nseg, void *stream, const int64_t **host);

/* 1 when the GPU checks a segments call's offsets itself (rows.cu's kernels: the CANONICAL and
 * ORDERED families), so that the call need not read them back. */
int cr_gpu_segments_checked(const cr_plan *plan);
/* Waits for `stream`, then reports the latest call whose offsets the GPU found bad and that was
 * not reported before (COOPREDUCE_ERROR_INVALID_ARGUMENT), else COOPREDUCE_SUCCESS. */
coopreduce_status cr_gpu_synchronize(struct coopreduce_handle *h, void *stream);

/* What sharded reductions and the all-reduce (src/dist) ask of a GPU handle (shard.c); every
 * call makes the handle's GPU current and enqueues on `stream` without waiting, but cr_gpu_wait.
 * The chunk values of x[0..n) of `dtype` over `leaf` (launch.h: cr_gpu_partials_launch): */
coopreduce_status cr_gpu_shard_partials(struct coopreduce_handle *h, coopreduce_dtype dtype,
                                        cr_leaf leaf, const void *x, const void *y, uint64_t n,
                                        void *const out[3], int shift_ok, void *stream);
/* EXACT: the superaccumulator's nd digits and flags, unrounded, at out (nd + 1 int64 words): */
coopreduce_status cr_gpu_shard_exact(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                     const void *y, uint64_t n, void *out, void *stream);
/* The all-reduce's (R x s) block along axis 0 for the CANONICAL and ORDERED families (not DOT),
 * R <= W, row me read at own where own is not NULL: launch.h's cr_gpu_columns_tree_launch. */
coopreduce_status cr_gpu_allreduce_columns(struct coopreduce_handle *h, const cr_plan *p,
                                           const void *block, const void *own, int me, int R,
                                           uint64_t s, size_t pitch, void *out,
                                           const cr_gate *gate, void *stream);
/* dst[0..bytes) = src[0..bytes) of host memory, bytes <= 16, in stream order without waiting:
 * the bytes travel as a kernel's argument (no staging buffer to keep alive): */
coopreduce_status cr_gpu_store(struct coopreduce_handle *h, void *dst, const void *src,
                               size_t bytes, void *stream);
/* A call's pointers against the handle's GPU (device.c; every GPU entry point checks them so):
 * x, and y when inputs == 2, if n > 0; result unless NULL (a host result). COOPREDUCE_SUCCESS, or
 * COOPREDUCE_ERROR_NOT_DEVICE_MEMORY naming the first the GPU cannot access (its device memory,
 * managed memory and mapped pinned memory it can): */
coopreduce_status cr_gpu_check_inputs(struct coopreduce_handle *h, int inputs, const void *x,
                                      const void *y, const void *result, uint64_t n);
/* cudaMemcpyAsync of any kind: */
coopreduce_status cr_gpu_copy(struct coopreduce_handle *h, void *dst, const void *src, size_t bytes,
                              void *stream);
coopreduce_status cr_gpu_wait(struct coopreduce_handle *h, void *stream);
/* The first exchange's packing on GPU `device` (launch.h: cr_gpu_pack_lead_launch): NULL, or
 * the CUDA error's text. */
const char *cr_gpu_pack_lead(int device, void *dst, const void *meta, const void *data,
                             size_t data_bytes, void *stream);
/* A small call's gate and commit (launch.h: cr_gpu_commit_launch): */
coopreduce_status cr_gpu_commit(struct coopreduce_handle *h, const cr_gate *gate, const void *out,
                                void *recv, size_t bytes, void *stream);
/* A small sharded array put together from the first exchange's slots, where it was gathered
 * whole, and the metas posted (launch.h: cr_gpu_lead_whole_launch): */
coopreduce_status cr_gpu_lead_whole(struct coopreduce_handle *h, const void *slots, int R,
                                    size_t stride, size_t elem_size, uint64_t lead_elems,
                                    void *out, int64_t *offsets, const cr_meta_post *post,
                                    void *stream);
/* Waits until *tag (mapped host memory a kernel on stream posts to) is seq: COOPREDUCE_SUCCESS,
 * or the stream's CUDA error, or COOPREDUCE_ERROR_INTERNAL if the stream finished without
 * posting it. */
coopreduce_status cr_gpu_wait_posted(struct coopreduce_handle *h, volatile const uint32_t *tag,
                                     uint32_t seq, void *stream);
/* Zeroed pinned host memory the handle's GPU writes to (*dev: its device address), and its
 * release (NULL: nothing) (workspace.c; the handle's result slot is made by it too). */
coopreduce_status cr_gpu_mapped_alloc(struct coopreduce_handle *h, size_t bytes, void **host,
                                      void **dev);
void cr_gpu_mapped_free(void *host);
/* Device memory of the handle's GPU, and its release on GPU `device` (NULL: nothing). */
coopreduce_status cr_gpu_alloc(struct coopreduce_handle *h, size_t bytes, void **p);
void cr_gpu_release(int device, void *p);

#endif
