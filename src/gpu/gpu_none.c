/* gpu_none.c — the GPU backend of a build without CUDA (gpu.h): no GPU, clearly said. */
#include <stdio.h>
#include "core/status.h"
#include "gpu/gpu.h"

#define NO_CUDA                                                                                    \
    "coopreduce was built without CUDA (no nvcc at configure time); only the CPU path exists"

coopreduce_status cr_gpu_count(int *count)
{
    *count = 0;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_props(int ordinal, coopreduce_gpu_props *props, char *err, size_t errlen)
{
    (void)props;
    snprintf(err, errlen, "no GPU with ordinal %d: " NO_CUDA, ordinal);
    return COOPREDUCE_ERROR_NO_GPU;
}

coopreduce_status cr_gpu_create(struct coopreduce_handle *h, int ordinal)
{
    (void)ordinal;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_destroy(struct coopreduce_handle *h)
{
    (void)h;
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_gpu_reserve(struct coopreduce_handle *h, const cr_plan *plan, uint64_t n)
{
    (void)plan, (void)n;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_reduce(struct coopreduce_handle *h, const cr_plan *plan, const void *x,
                                const void *y, void *result, uint64_t n, void *stream, int to_host)
{
    (void)plan, (void)x, (void)y, (void)result, (void)n, (void)stream, (void)to_host;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_offsets_to_host(struct coopreduce_handle *h, const int64_t *offsets,
                                         uint64_t nseg, void *stream, const int64_t **host)
{
    (void)offsets, (void)nseg, (void)stream;
    *host = NULL;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

int cr_gpu_segments_checked(const cr_plan *plan)
{
    (void)plan;
    return 0;
}

coopreduce_status cr_gpu_synchronize(struct coopreduce_handle *h, void *stream)
{
    (void)stream;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_shard_partials(struct coopreduce_handle *h, coopreduce_dtype dtype,
                                        cr_leaf leaf, const void *x, const void *y, uint64_t n,
                                        void *const out[3], int shift_ok, void *stream)
{
    (void)dtype, (void)leaf, (void)x, (void)y, (void)n, (void)out, (void)shift_ok, (void)stream;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_shard_exact(struct coopreduce_handle *h, const cr_plan *p, const void *x,
                                     const void *y, uint64_t n, void *out, void *stream)
{
    (void)p, (void)x, (void)y, (void)n, (void)out, (void)stream;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_copy(struct coopreduce_handle *h, void *dst, const void *src, size_t bytes,
                              void *stream)
{
    (void)dst, (void)src, (void)bytes, (void)stream;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_check_inputs(struct coopreduce_handle *h, int inputs, const void *x,
                                      const void *y, const void *result, uint64_t n)
{
    (void)inputs, (void)x, (void)y, (void)result, (void)n;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_store(struct coopreduce_handle *h, void *dst, const void *src,
                               size_t bytes, void *stream)
{
    (void)dst, (void)src, (void)bytes, (void)stream;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_wait(struct coopreduce_handle *h, void *stream)
{
    (void)stream;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_alloc(struct coopreduce_handle *h, size_t bytes, void **p)
{
    (void)bytes;
    *p = NULL;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

void cr_gpu_release(int device, void *p) { (void)device, (void)p; }

coopreduce_status cr_gpu_allreduce_columns(struct coopreduce_handle *h, const cr_plan *p,
                                           const void *block, const void *own, int me, int R,
                                           uint64_t s, size_t pitch, void *out,
                                           const cr_gate *gate, void *stream)
{
    (void)p, (void)block, (void)own, (void)me, (void)R, (void)s, (void)pitch, (void)out;
    (void)gate, (void)stream;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

const char *cr_gpu_pack_lead(int device, void *dst, const void *meta, const void *data,
                             size_t data_bytes, void *stream)
{
    (void)device, (void)dst, (void)meta, (void)data, (void)data_bytes, (void)stream;
    return NO_CUDA;
}

coopreduce_status cr_gpu_commit(struct coopreduce_handle *h, const cr_gate *gate, const void *out,
                                void *recv, size_t bytes, void *stream)
{
    (void)gate, (void)out, (void)recv, (void)bytes, (void)stream;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_lead_whole(struct coopreduce_handle *h, const void *slots, int R,
                                    size_t stride, size_t elem_size, uint64_t lead_elems,
                                    void *out, int64_t *offsets, const cr_meta_post *post,
                                    void *stream)
{
    (void)slots, (void)R, (void)stride, (void)elem_size, (void)lead_elems, (void)out;
    (void)offsets, (void)post, (void)stream;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_wait_posted(struct coopreduce_handle *h, volatile const uint32_t *tag,
                                     uint32_t seq, void *stream)
{
    (void)tag, (void)seq, (void)stream;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

coopreduce_status cr_gpu_mapped_alloc(struct coopreduce_handle *h, size_t bytes, void **host,
                                      void **dev)
{
    (void)bytes;
    *host = *dev = NULL;
    return cr_fail(h, COOPREDUCE_ERROR_NO_GPU, NO_CUDA);
}

void cr_gpu_mapped_free(void *host) { (void)host; }
