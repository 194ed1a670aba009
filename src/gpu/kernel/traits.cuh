/* traits.cuh — the one vocabulary of types every GPU kernel family uses.
 *
 *  - Elem<D>: an input element type, keyed by the public coopreduce_dtype: its storage bits,
 *    width, class, and the bit patterns of +inf and of the canonical NaN. Families build their
 *    own per-type code on it (scan.cu's folds, ordered.cu's widening and class tests,
 *    exact.cu's leaves), so that "float16" means one thing in every file.
 *  - Layout<A>: an accumulation type of the canonical order (float or double): how a row of a
 *    chunk maps onto the lanes of a warp (docs/DETERMINISM.md). canonical.cu, ordered.cu and
 *    tree.cuh read it.
 *
 * Part of the kernel layer (src/gpu/kernel/): included by .cu files only; everything is in an
 * anonymous namespace, so each family gets its own copy, as it would of a template. */
#ifndef COOPREDUCE_KERNEL_TRAITS_CUH
#define COOPREDUCE_KERNEL_TRAITS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "coopreduce.h"
#include "core/order.h"
#include "core/values.h"

namespace {

template <coopreduce_dtype D> struct Elem;

#define CR_ELEM(D, BITS, FLOAT, SIGNED, INF, NAN_)                                                 \
    template <> struct Elem<D> {                                                                   \
        typedef BITS Bits; /* the storage, as an unsigned integer */                               \
        static constexpr int kBytes = sizeof(BITS);                                                \
        static constexpr int W = 8 * kBytes;        /* bits */                                     \
        static constexpr int kPerVec = 16 / kBytes; /* elements per 16-byte load */                \
        static constexpr bool kFloat = FLOAT, kSigned = SIGNED;                                    \
        static constexpr unsigned long long kInf = INF, kNaN = NAN_; /* floats: +inf, the NaN */   \
    };
CR_ELEM(COOPREDUCE_FLOAT32, uint32_t, true, true, 0x7f800000u, CR_NAN_F32)
CR_ELEM(COOPREDUCE_FLOAT64, uint64_t, true, true, 0x7ff0000000000000ull, CR_NAN_F64)
CR_ELEM(COOPREDUCE_FLOAT16, uint16_t, true, true, 0x7c00u, CR_NAN_F16)
CR_ELEM(COOPREDUCE_BFLOAT16, uint16_t, true, true, 0x7f80u, CR_NAN_BF16)
CR_ELEM(COOPREDUCE_INT32, uint32_t, false, true, 0, 0)
CR_ELEM(COOPREDUCE_UINT32, uint32_t, false, false, 0, 0)
CR_ELEM(COOPREDUCE_INT64, uint64_t, false, true, 0, 0)
CR_ELEM(COOPREDUCE_UINT64, uint64_t, false, false, 0, 0)
#undef CR_ELEM

template <typename A> struct Layout;
/* kMinBlocks is __launch_bounds__' minimum resident blocks per SM (256 threads each) of the
 * kernels that stream chunks: with two batches of 8 rows in registers, nvcc 13.0 fits both
 * types in 128 registers at 2 blocks per SM (sm_80 and sm_90); at 3 the float32 kernel spills
 * in the hot loop. 16 warps per SM with 8-16 16-byte loads in flight per thread keeps several
 * times the bytes in flight that cover DRAM latency at H100 and H200 bandwidth. */
template <> struct Layout<float> {
    static constexpr int kMinBlocks = 2;
    using Vec = float4;
    static constexpr int kVec = 4;              /* lanes per thread */
    static constexpr int kLanes = CR_LANES_F32; /* 128 */
    static constexpr uint64_t kChunk = CR_CHUNK_F32;
    static __device__ __forceinline__ float nan() { return __int_as_float(0x7fc00000); }
};
template <> struct Layout<double> {
    static constexpr int kMinBlocks = 2;
    using Vec = double2;
    static constexpr int kVec = 2;
    static constexpr int kLanes = CR_LANES_F64; /* 64 */
    static constexpr uint64_t kChunk = CR_CHUNK_F64;
    static __device__ __forceinline__ double nan()
    {
        return __longlong_as_double(0x7ff8000000000000ll);
    }
};

} // namespace

#endif
