/* partials.cu — the chunk values of an array, without the final rule, for sharded reductions
 * (src/dist): level 1 of the canonical order over the op's leaves, or a level above it (the
 * accumulation type's values, identity leaves). A warp per chunk, with leaves.cuh's level-1 code
 * (chunk_values, the same as the 1-D kernels' and rows.cu's), so the values are those of every
 * other path by construction: each chunk's tree is fixed by its position alone. And the
 * stream-ordered store of a result the host computed (cr_gpu_store_launch). */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "gpu/kernel/traits.cuh"
#include "gpu/kernel/tree.cuh"
#include "gpu/kernel/leaves.cuh"
#include "gpu/kernel/gate.cuh"
#include "gpu/launch.h"

namespace {

constexpr int kPartThreads = 256, kPartWarps = kPartThreads / 32;

/* Block b owns a balanced contiguous range of the chunks, its warps take them round-robin (the
 * block streams one region, as the 1-D kernels do); a warp's full, aligned chunks go through
 * stream_chunks, the next chunk's loads in flight while it finishes one (NORM2 and the wide
 * products excepted: one chunk at a time, chunk_values), the ragged or misaligned rest through
 * chunk_values. kStream: the stream-once load policy, for inputs larger than L2. */
template <typename In, Leaf LF, bool kStream>
__global__ void __launch_bounds__(kPartThreads)
    shard_partials_kernel(const Args<In> A, uint64_t chunks, bool aligned, bool shift_ok,
                          void *out0, void *out1, void *out2)
{
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>;
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    uint64_t b0, b1;
    balanced_range(chunks, gridDim.x, blockIdx.x, &b0, &b1);
    auto emit = [&](uint64_t g, const Acc(&v)[K]) {
        if (warp.thread_rank() != 0) return;
        static_cast<Acc *>(out0)[g] = v[0];
        if constexpr (K == 3) {
            static_cast<Acc *>(out1)[g] = v[1];
            static_cast<Acc *>(out2)[g] = v[2];
        }
    };
    uint64_t c = b0 + warp.meta_group_rank();
    if constexpr (LF != Leaf::kNorm2 && kStreamed<In, LF>) {
        const uint64_t full = aligned ? A.n / Shape<In>::kChunk : 0;
        if (c < b1 && c < full) {
            const uint64_t stop = b1 < full ? b1 : full;
            stream_chunks<In, LF, kStream>(warp, A, c, stop, kPartWarps, emit);
            c += (stop - c + kPartWarps - 1) / kPartWarps * kPartWarps; /* first at or past stop */
        }
    }
    for (; c < b1; c += kPartWarps) {
        Acc v[K];
        chunk_values<In, LF, kStream, true>(warp, A, c, aligned, v, shift_ok);
        emit(c, v);
    }
}

template <typename In, Leaf LF>
cudaError_t launch(const void *x, const void *y, uint64_t n, void *const out[3], bool shift_ok,
                   int sm_count, bool stream_once, cudaStream_t stream)
{
    using S = Shape<In>;
    const uint64_t chunks = (n + S::kChunk - 1) / S::kChunk;
    const bool two = LF == Leaf::kProduct;
    const bool aligned = (uintptr_t)x % 16 == 0 && (!two || (uintptr_t)y % 16 == 0);
    uint64_t blocks = (chunks + kPartWarps - 1) / kPartWarps;
    const uint64_t wave = (uint64_t)(sm_count > 0 ? sm_count : 1) * 2; /* 16 warps an SM */
    if (blocks > wave) blocks = wave;
    if (blocks < 1) blocks = 1;
    Args<In> A = {x, two ? y : nullptr, n};
    if (stream_once)
        shard_partials_kernel<In, LF, true><<<(unsigned)blocks, kPartThreads, 0, stream>>>(
            A, chunks, aligned, shift_ok, out[0], out[1], out[2]);
    else
        shard_partials_kernel<In, LF, false><<<(unsigned)blocks, kPartThreads, 0, stream>>>(
            A, chunks, aligned, shift_ok, out[0], out[1], out[2]);
    return cudaGetLastError();
}

template <typename In>
cudaError_t by_leaf(cr_leaf leaf, const void *x, const void *y, uint64_t n, void *const out[3],
                    bool sh, int sm, bool so, cudaStream_t st)
{
    switch (leaf) {
    case CR_LEAF_VALUE: return launch<In, Leaf::kWiden>(x, y, n, out, sh, sm, so, st);
    case CR_LEAF_SQUARE: return launch<In, Leaf::kSquare>(x, y, n, out, sh, sm, so, st);
    case CR_LEAF_PRODUCT: return launch<In, Leaf::kProduct>(x, y, n, out, sh, sm, so, st);
    case CR_LEAF_NORM2: return launch<In, Leaf::kNorm2>(x, y, n, out, sh, sm, so, st);
    }
    return cudaErrorInvalidValue;
}

/* ---- The all-reduce's block: (R x s), reduced along axis 0, R <= W ------------------------
 * Row r of the block lies at block + r * s elements, except the rank's own row where `own` is
 * set: that row is read where it lies (the rank's slice of its send buffer), which spares the
 * all-to-all a copy of it. Column j's R values are one chunk whose row 0 holds them (every other
 * row -0.0 padding): each lane's row tree is its value (x + -0.0 == x) and the chunk's value is
 * the lane tree, the perfect pairwise tree over the R leaves padded with -0.0 to W lanes. */
struct BlockRows {
    const char *block, *own; /* own: row me, or nullptr (then at its place in the block) */
    int me;
    uint64_t s;     /* elements a row */
    uint64_t pitch; /* bytes from a row to the next; 0: s elements */
    __host__ __device__ __forceinline__ const char *row(int r, int bytes) const
    {
        return own && r == me ? own
                              : block + (uint64_t)r * (pitch ? pitch : s * (uint64_t)bytes);
    }
};

/* Any R, any leaf: a thread per column builds the lane tree as a binary counter (two nodes of
 * equal height merge at once, left + right), then folds what is left from the right, which is
 * where the padding carries an unpaired node: the same additions in the same order. Then the
 * operation's final rule (tree.cuh). Loads are coalesced: adjacent threads read adjacent columns
 * of each row. */
template <typename In, Leaf LF>
__global__ void __launch_bounds__(kPartThreads)
    columns_tree_kernel(const BlockRows B, int R, const Final F, char *out, size_t rsize,
                        const cr_gate G)
{
    if (!cr_gate_open(G)) return;
    using Acc = typename In::Acc;
    constexpr int K = kLeaves<LF>;
    const uint64_t s = B.s;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < s; j += stride) {
        Acc st[8][K];
        int height[8];
        int sp = 0;
        for (int r = 0; r < R; r++) {
            const Acc a = In::at(B.row(r, In::kBytes), j);
            Acc lv[K];
            make_leaf<LF>(a, a, lv);
#pragma unroll
            for (int k = 0; k < K; k++) st[sp][k] = lv[k];
            height[sp++] = 0;
            while (sp >= 2 && height[sp - 1] == height[sp - 2]) {
#pragma unroll
                for (int k = 0; k < K; k++) st[sp - 2][k] = st[sp - 2][k] + st[sp - 1][k];
                height[sp - 2]++;
                sp--;
            }
        }
        Acc acc[K];
#pragma unroll
        for (int k = 0; k < K; k++) acc[k] = st[sp - 1][k];
        for (int i = sp - 2; i >= 0; i--)
#pragma unroll
            for (int k = 0; k < K; k++) acc[k] = st[i][k] + acc[k];
        double a1 = 0.0, a2 = 0.0;
        if constexpr (K == 3) {
            a1 = (double)acc[1];
            a2 = (double)acc[2];
        }
        write_final(F, (uint64_t)R, (double)acc[0], a1, a2, out + j * rsize);
    }
}

/* The lane tree of R leaves at compile time: the perfect pairwise tree over [Lo, Lo + Len),
 * a right half wholly in the padding dropped (x + -0.0 == x, and the padding's own sums are
 * -0.0), so the counter of columns_tree_kernel and this make the same additions. */
template <typename T, int R, int Lo, int Len>
__device__ __forceinline__ T lane_tree(const T (&v)[R])
{
    if constexpr (Len == 1)
        return v[Lo];
    else if constexpr (Lo + Len / 2 >= R)
        return lane_tree<T, R, Lo, Len / 2>(v);
    else
        return lane_tree<T, R, Lo, Len / 2>(v) + lane_tree<T, R, Lo + Len / 2, Len / 2>(v);
}
__host__ __device__ constexpr int pow2_at_least(int r)
{
    return r <= 1 ? 1 : 2 * pow2_at_least((r + 1) / 2);
}

/* SUM of float32 / float64, 2 <= R <= 8 (the common all-reduce): R fixed at compile time, the
 * tree in registers, V columns a thread by one load of each row (V = 16 / sizeof(T) where every
 * row starts on a 16-byte boundary and s is a multiple of V, else 1), all R loads in flight at
 * once. The result is the sum, NaN as the canonical quiet NaN (write_final's rule for SUM). */
template <typename T, int V> struct Cols;
template <> struct Cols<float, 4> { using Vec = float4; };
template <> struct Cols<float, 1> { using Vec = float; };
template <> struct Cols<double, 2> { using Vec = double2; };
template <> struct Cols<double, 1> { using Vec = double; };
template <typename T, int V>
__device__ __forceinline__ T comp(const typename Cols<T, V>::Vec &v, int c)
{
    if constexpr (V == 1)
        return v;
    else
        return reinterpret_cast<const T *>(&v)[c];
}
template <typename T, int V>
__device__ __forceinline__ void set_comp(typename Cols<T, V>::Vec &v, int c, T x)
{
    if constexpr (V == 1)
        v = x;
    else
        reinterpret_cast<T *>(&v)[c] = x;
}
template <typename T, int R, int V>
__global__ void __launch_bounds__(kPartThreads)
    columns_sum_kernel(const BlockRows B, char *out, const cr_gate G)
{
    if (!cr_gate_open(G)) return;
    using Vec = typename Cols<T, V>::Vec;
    const Vec *row[R];
#pragma unroll
    for (int r = 0; r < R; r++) row[r] = reinterpret_cast<const Vec *>(B.row(r, sizeof(T)));
    Vec *o = reinterpret_cast<Vec *>(out);
    const uint64_t nv = B.s / V, stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += stride) {
        Vec a[R];
#pragma unroll
        for (int r = 0; r < R; r++) a[r] = __ldcs(row[r] + i); /* read once */
        Vec res;
#pragma unroll
        for (int c = 0; c < V; c++) {
            T v[R];
#pragma unroll
            for (int r = 0; r < R; r++) v[r] = comp<T, V>(a[r], c);
            T t = lane_tree<T, R, 0, pow2_at_least(R)>(v);
            if (t != t) t = Layout<T>::nan();
            set_comp<T, V>(res, c, t);
        }
        o[i] = res;
    }
}

template <typename T, int R>
cudaError_t launch_sum_rows(const BlockRows &B, void *out, const cr_gate &G, int sm_count,
                            cudaStream_t stream)
{
    bool vec = B.s % (16 / sizeof(T)) == 0 && (uintptr_t)out % 16 == 0;
    for (int r = 0; r < R; r++) vec = vec && (uintptr_t)B.row(r, sizeof(T)) % 16 == 0;
    const uint64_t per = vec ? 16 / sizeof(T) : 1;
    uint64_t blocks = (B.s / per + kPartThreads - 1) / kPartThreads;
    const uint64_t wave = (uint64_t)(sm_count > 0 ? sm_count : 1) * (2048 / kPartThreads);
    if (blocks > wave) blocks = wave;
    if (blocks < 1) blocks = 1;
    if (vec)
        columns_sum_kernel<T, R, 16 / sizeof(T)>
            <<<(unsigned)blocks, kPartThreads, 0, stream>>>(B, static_cast<char *>(out), G);
    else
        columns_sum_kernel<T, R, 1>
            <<<(unsigned)blocks, kPartThreads, 0, stream>>>(B, static_cast<char *>(out), G);
    return cudaGetLastError();
}

template <typename T>
cudaError_t launch_sum(const BlockRows &B, int R, void *out, const cr_gate &G, int sm,
                       cudaStream_t st)
{
    switch (R) {
    case 2: return launch_sum_rows<T, 2>(B, out, G, sm, st);
    case 3: return launch_sum_rows<T, 3>(B, out, G, sm, st);
    case 4: return launch_sum_rows<T, 4>(B, out, G, sm, st);
    case 5: return launch_sum_rows<T, 5>(B, out, G, sm, st);
    case 6: return launch_sum_rows<T, 6>(B, out, G, sm, st);
    case 7: return launch_sum_rows<T, 7>(B, out, G, sm, st);
    case 8: return launch_sum_rows<T, 8>(B, out, G, sm, st);
    default: return cudaErrorInvalidValue;
    }
}

template <typename In, Leaf LF>
cudaError_t launch_columns(const cr_plan *p, const BlockRows &B, int R, void *out, const cr_gate &G,
                           int sm_count, cudaStream_t stream)
{
    uint64_t blocks = (B.s + kPartThreads - 1) / kPartThreads;
    const uint64_t wave = (uint64_t)(sm_count > 0 ? sm_count : 1) * 16;
    if (blocks > wave) blocks = wave;
    if (blocks < 1) blocks = 1;
    const Final F = {1, (int)p->op, (int)p->dtype, p->narrow};
    columns_tree_kernel<In, LF><<<(unsigned)blocks, kPartThreads, 0, stream>>>(
        B, R, F, static_cast<char *>(out), p->result_size, G);
    return cudaGetLastError();
}

template <typename In>
cudaError_t columns_by_leaf(const cr_plan *p, const BlockRows &B, int R, void *o, const cr_gate &G,
                            int sm, cudaStream_t st)
{
    if (p->family == CR_FAMILY_CANONICAL)
        return launch_columns<In, Leaf::kWiden>(p, B, R, o, G, sm, st);
    switch (p->leaf) {
    case CR_LEAF_VALUE: return launch_columns<In, Leaf::kWiden>(p, B, R, o, G, sm, st);
    case CR_LEAF_SQUARE: return launch_columns<In, Leaf::kSquare>(p, B, R, o, G, sm, st);
    case CR_LEAF_NORM2: return launch_columns<In, Leaf::kNorm2>(p, B, R, o, G, sm, st);
    default: return cudaErrorInvalidValue; /* DOT has two inputs */
    }
}

} // namespace

extern "C" cudaError_t cr_gpu_columns_tree_launch(const cr_plan *p, const void *block,
                                                  const void *own, int me, int R, uint64_t s,
                                                  size_t pitch, void *out, const cr_gate *gate,
                                                  int sm_count, cudaStream_t stream)
{
    if (s == 0 && !gate) return cudaSuccess;
    if (R < 1 || R > (p->acc == COOPREDUCE_FLOAT64 ? CR_LANES_F64 : CR_LANES_F32))
        return cudaErrorInvalidValue;
    const BlockRows B = {static_cast<const char *>(block), static_cast<const char *>(own), me, s,
                         pitch};
    cr_gate G;
    memset(&G, 0, sizeof G);
    if (gate) G = *gate;
    const bool sum = p->family == CR_FAMILY_CANONICAL && p->op == COOPREDUCE_OP_SUM && R >= 2 &&
                     R <= 8;
    switch (p->dtype) {
    case COOPREDUCE_FLOAT32:
        return sum ? launch_sum<float>(B, R, out, G, sm_count, stream)
                   : columns_by_leaf<F32>(p, B, R, out, G, sm_count, stream);
    case COOPREDUCE_FLOAT64:
        return sum ? launch_sum<double>(B, R, out, G, sm_count, stream)
                   : columns_by_leaf<F64>(p, B, R, out, G, sm_count, stream);
    case COOPREDUCE_FLOAT16: return columns_by_leaf<Half<false>>(p, B, R, out, G, sm_count, stream);
    case COOPREDUCE_BFLOAT16: return columns_by_leaf<Half<true>>(p, B, R, out, G, sm_count, stream);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t cr_gpu_partials_launch(coopreduce_dtype dtype, cr_leaf leaf, const void *x,
                                              const void *y, uint64_t n, void *const out[3],
                                              int shift_ok, int sm_count, int stream_once,
                                              cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    const bool sh = shift_ok != 0, so = stream_once != 0;
    switch (dtype) {
    case COOPREDUCE_FLOAT32: return by_leaf<F32>(leaf, x, y, n, out, sh, sm_count, so, stream);
    case COOPREDUCE_FLOAT64: return by_leaf<F64>(leaf, x, y, n, out, sh, sm_count, so, stream);
    case COOPREDUCE_FLOAT16: return by_leaf<Half<false>>(leaf, x, y, n, out, sh, sm_count, so, stream);
    case COOPREDUCE_BFLOAT16: return by_leaf<Half<true>>(leaf, x, y, n, out, sh, sm_count, so, stream);
    default: return cudaErrorInvalidValue;
    }
}

/* ---- a result stored from the host in stream order ----------------------------------------- */
struct store_bytes {
    unsigned char b[16];
};

__global__ void store_kernel(store_bytes v, unsigned char *dst, int bytes)
{
    for (int i = 0; i < bytes; i++) dst[i] = v.b[i];
}

extern "C" cudaError_t cr_gpu_store_launch(void *dst, const void *src, size_t bytes,
                                           cudaStream_t stream)
{
    if (bytes > 16) return cudaErrorInvalidValue;
    store_bytes v;
    memset(&v, 0, sizeof v);
    memcpy(v.b, src, bytes);
    store_kernel<<<1, 1, 0, stream>>>(v, (unsigned char *)dst, (int)bytes);
    return cudaGetLastError();
}
