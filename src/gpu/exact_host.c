/* exact_host.c — EXACT mode on a GPU handle (docs/EXACT.md; kernels in exact.cu).
 *
 * One kernel launch per call, whatever n (n == 0 included: the kernel writes +0.0), no host
 * synchronisation unless the result goes to the host. The workspace — one slot of digits and
 * flags per block, the ticket the kernels leave at zero, a device result slot for host results —
 * is the scratch the methods and the operations share (cr_gpu_scratch_ensure, methods_host.c),
 * allocated on first use for a full automatic grid, so the hot path allocates nothing. */
#include <stdio.h>
#include <string.h>
#include "gpu/gpu_state.h"
#include "core/superacc.h"

/* From exact.cu; each int is a cudaError_t. */
size_t cr_gpu_exact_slot_bytes(int dtype, int dot);
int cr_gpu_exact_grid(int dtype, int dot, int vec, uint64_t n, int device, int sm_count,
                      int forced, int max_blocks, int *blocks, int *threads);
int cr_gpu_exact_launch(int dtype, int dot, int vec, const void *x, const void *y, uint64_t n,
                        void *partials, unsigned int *ticket, void *out, int fmt, int blocks,
                        void *stream);

/* A forced grid is clamped to this many blocks (1.1 KiB of slot each at most): any grid gives
 * the same bits. */
#define CR_EXACT_MAX_GRID 4096
/* The first allocation covers this many blocks per SM (512-thread blocks: 4 fill an SM). */
#define CR_EXACT_BLOCKS_PER_SM 4

coopreduce_status cr_gpu_exact(coopreduce_handle *h, coopreduce_op op, const void *x,
                               const void *y, void *result, uint64_t n, coopreduce_dtype dtype,
                               int narrow, void *stream, int to_host)
{
    struct cr_gpu_state *g = h->gpu;
    cudaStream_t st = (cudaStream_t)stream;
    const int dot = op == COOPREDUCE_OP_DOT;
    const int fmt = dtype == COOPREDUCE_FLOAT64 ? CR_FMT_F64
                    : narrow && dtype == COOPREDUCE_FLOAT16 ? CR_FMT_F16
                    : narrow && dtype == COOPREDUCE_BFLOAT16 ? CR_FMT_BF16
                    : CR_FMT_F32;
    const size_t rs = fmt == CR_FMT_F64 ? 8 : fmt == CR_FMT_F32 ? 4 : 2;
    coopreduce_status s;
    if (n > 0 && (s = cr_gpu_check_pointer(h, x, "x"))) return s;
    if (n > 0 && dot && (s = cr_gpu_check_pointer(h, y, "y"))) return s;
    if (!to_host && (s = cr_gpu_check_pointer(h, result, "result"))) return s;
    cudaError_t e = cr_gpu_use_device(h->device);
    if (e != cudaSuccess) return cr_cuda_fail(h, e, "selecting the GPU");

    /* 16-byte loads need x and y equally placed within 16 bytes (the head is peeled). */
    const int vec = !dot || ((uintptr_t)x % 16) == ((uintptr_t)y % 16);
    int blocks = 0, threads = 0;
    e = (cudaError_t)cr_gpu_exact_grid((int)dtype, dot, vec, n, h->device, g->sm_count,
                                       h->grid_blocks, CR_EXACT_MAX_GRID, &blocks, &threads);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cr_cuda_fail(h, e, "sizing the exact grid");
    }
    /* slots sized for the widest layout (float64 dot), so that no dtype makes them grow */
    size_t want = (size_t)blocks;
    const size_t floor_blocks = (size_t)g->sm_count * CR_EXACT_BLOCKS_PER_SM;
    if (want < floor_blocks) want = floor_blocks;
    if ((s = cr_gpu_scratch_ensure(h, want * cr_gpu_exact_slot_bytes(COOPREDUCE_FLOAT64, 1))))
        return s;

    void *out = to_host ? g->m_out : result;
    e = (cudaError_t)cr_gpu_exact_launch((int)dtype, dot, vec, x, y, n, g->m_partials,
                                         (unsigned int *)g->m_ticket, out, fmt, blocks, stream);
    if (e != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "launching the exact %s of %s", coopreduce_op_name(op),
                 coopreduce_dtype_name(dtype));
        return cr_cuda_fail(h, e, what);
    }
    if (to_host) {
        e = cudaMemcpyAsync(g->host_slot, g->m_out, rs, cudaMemcpyDeviceToHost, st);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st);
        if (e != cudaSuccess) return cr_cuda_fail(h, e, "copying the result to the host");
        memcpy(result, g->host_slot, rs);
    }
    memset(&h->last, 0, sizeof h->last);
    h->last.method = COOPREDUCE_METHOD_CANONICAL;
    h->last.blocks = blocks;
    h->last.threads = threads;
    h->last.launches = 1;
    h->last.host_sync = to_host;
    return COOPREDUCE_SUCCESS;
}
