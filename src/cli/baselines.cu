/* baselines.cu — what the benchmark holds coopreduce against, measured in the same run:
 *  - CUB DeviceReduce::Sum (the CCCL bundled with CUDA): NVIDIA's own reduction, two launches,
 *    run-to-run deterministic on one GPU model only;
 *  - CUB DeviceSegmentedReduce::Sum: one sum per contiguous segment, for the benchmark along an
 *    axis (rows of the last axis) and over segments;
 *  - a plain float4 read kernel: reads every byte once and does nothing else — the bandwidth
 *    ceiling for any reduction; and the same read with the results' bytes written among it,
 *    the ceiling where there are many results (rows of a few elements);
 *  - an empty kernel: the launch floor.
 * Benchmark code only; the library never calls these. */
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

namespace {

__global__ void empty_kernel() {}

/* Grid-stride float4 reads, 4 in flight per iteration; one store per block keeps the loads
 * alive without adding traffic that matters. */
__global__ void __launch_bounds__(256)
    read_kernel(const float4 *__restrict__ x, uint64_t n4, float *out)
{
    __shared__ float s[256];
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    float a = 0.f, b = 0.f, c = 0.f, d = 0.f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 p = __ldg(x + i), q = __ldg(x + i + stride), r = __ldg(x + i + 2 * stride),
               t = __ldg(x + i + 3 * stride);
        a += p.x + p.y + p.z + p.w;
        b += q.x + q.y + q.z + q.w;
        c += r.x + r.y + r.z + r.w;
        d += t.x + t.y + t.z + t.w;
    }
    for (; i < n4; i += stride) {
        float4 p = __ldg(x + i);
        a += p.x + p.y + p.z + p.w;
    }
    s[threadIdx.x] = (a + b) + (c + d);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s[0] + s[255];
}

/* The float4 read of n4 vectors and a store of m4 float4 results among the reads (m4 <= n4):
 * the traffic of a reduction whose results are not negligible beside its input (rows of 16
 * float32: 4 bytes written per 64 read). Tile t of a block: r * 256 vectors read, each thread
 * summing r of them 256 apart (coalesced), then 256 results stored; the vectors past the last
 * tile are read as read_kernel does. */
__global__ void __launch_bounds__(256)
    read_write_kernel(const float4 *__restrict__ x, uint64_t n4, float4 *y, uint64_t m4,
                      unsigned int r)
{
    const uint64_t tiles = (m4 + 255) / 256;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t base = t * 256 * r + threadIdx.x;
        float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
        for (unsigned int k = 0; k < r; k++) {
            const uint64_t i = base + (uint64_t)k * 256;
            if (i < n4) {
                const float4 p = __ldg(x + i);
                s.x += p.x, s.y += p.y, s.z += p.z, s.w += p.w;
            }
        }
        const uint64_t j = t * 256 + threadIdx.x;
        if (j < m4) y[j] = s;
    }
    float a = 0.f;
    for (uint64_t i = tiles * 256 * r + (uint64_t)blockIdx.x * 256 + threadIdx.x; i < n4;
         i += (uint64_t)gridDim.x * 256) {
        const float4 p = __ldg(x + i);
        a += p.x + p.y + p.z + p.w;
    }
    if (a == 1.5f && m4) y[0].x = a; /* keeps the tail's loads; almost never true */
}

/* Row r of rows of len elements starts at r * len: the offsets of fixed-size segments, computed
 * rather than read. */
struct row_start {
    int64_t len;
    __host__ __device__ int64_t operator()(int64_t r) const { return r * len; }
};

/* The segmented sum of T into R, begin and end being offset iterators: DeviceSegmentedReduce::Sum
 * where T is R, else Reduce with R's plus from 0 (the 16-bit types summed in float, as coopreduce
 * sums them by default). */
template <typename T, typename R, typename Begin, typename End>
cudaError_t segmented_sum(const void *x, void *out, uint64_t nseg, Begin begin, End end, void *temp,
                          size_t *temp_bytes, cudaStream_t stream)
{
    if constexpr (::cuda::std::is_same_v<T, R>)
        return cub::DeviceSegmentedReduce::Sum(temp, *temp_bytes, (const T *)x, (R *)out,
                                               (int64_t)nseg, begin, end, stream);
    else
        return cub::DeviceSegmentedReduce::Reduce(temp, *temp_bytes, (const T *)x, (R *)out,
                                                  (int64_t)nseg, begin, end, ::cuda::std::plus<R>(),
                                                  R(0), stream);
}

template <typename Begin, typename End>
int segmented_sum_dtype(int dtype, const void *x, void *out, uint64_t nseg, Begin begin, End end,
                        void *temp, size_t *temp_bytes, cudaStream_t stream)
{
    cudaError_t e;
    switch (dtype) {
    case 0:
        e = segmented_sum<float, float>(x, out, nseg, begin, end, temp, temp_bytes, stream);
        break;
    case 1:
        e = segmented_sum<double, double>(x, out, nseg, begin, end, temp, temp_bytes, stream);
        break;
    case 3:
        e = segmented_sum<__half, float>(x, out, nseg, begin, end, temp, temp_bytes, stream);
        break;
    case 4:
        e = segmented_sum<__nv_bfloat16, float>(x, out, nseg, begin, end, temp, temp_bytes, stream);
        break;
    default: return (int)cudaErrorNotSupported;
    }
    if (e != cudaSuccess) return (int)e;
    return temp ? (int)cudaGetLastError() : 0;
}

} // namespace

extern "C" {

/* All return a cudaError_t. */
int cr_bl_empty(void *stream)
{
    empty_kernel<<<1, 32, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

/* Reads `bytes` bytes (a multiple of 16) of x; out must hold `blocks` floats. */
int cr_bl_read(const void *x, uint64_t bytes, float *out, int blocks, void *stream)
{
    read_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>((const float4 *)x, bytes / 16, out);
    return (int)cudaGetLastError();
}

/* Reads `bytes` bytes (a multiple of 16) of x and writes `out_bytes` (a multiple of 16, at
 * most `bytes`) to out, spread over the reads (read_write_kernel). */
int cr_bl_read_write(const void *x, uint64_t bytes, void *out, uint64_t out_bytes, int blocks,
                     void *stream)
{
    const uint64_t n4 = bytes / 16, m4 = out_bytes / 16;
    if (m4 == 0 || m4 > n4) return (int)cudaErrorInvalidValue;
    read_write_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>(
        (const float4 *)x, n4, (float4 *)out, m4, (unsigned int)(n4 / m4));
    return (int)cudaGetLastError();
}

/* dtype 0 = float, 1 = double, 2 = int32 summed into int64 (as coopreduce does). With
 * temp == NULL, stores the temporary storage size. */
int cr_bl_cub_sum(int dtype, const void *x, void *out, uint64_t n, void *temp, size_t *temp_bytes,
                  void *stream)
{
    cudaError_t e;
    if (dtype == 0)
        e = cub::DeviceReduce::Sum(temp, *temp_bytes, (const float *)x, (float *)out, (int64_t)n,
                                   (cudaStream_t)stream);
    else if (dtype == 1)
        e = cub::DeviceReduce::Sum(temp, *temp_bytes, (const double *)x, (double *)out, (int64_t)n,
                                   (cudaStream_t)stream);
    else
        e = cub::DeviceReduce::Reduce(temp, *temp_bytes, (const int *)x, (long long *)out,
                                      (int64_t)n, ::cuda::std::plus<long long>(), 0ll,
                                      (cudaStream_t)stream);
    if (e != cudaSuccess) return (int)e;
    return temp ? (int)cudaGetLastError() : 0;
}

/* DeviceSegmentedReduce::Sum of nseg segments, segment s being x[begin[s] .. end[s]) (int64
 * offsets in device memory). dtype as coopreduce_dtype: 0 = float, 1 = double, 3 = float16 and
 * 4 = bfloat16 summed into float; any other returns cudaErrorNotSupported. With temp == NULL,
 * stores the temporary storage size. */
int cr_bl_cub_segmented_sum(int dtype, const void *x, void *out, uint64_t nseg,
                            const int64_t *d_offsets_begin, const int64_t *d_offsets_end,
                            void *temp, size_t *temp_bytes, void *stream)
{
    return segmented_sum_dtype(dtype, x, out, nseg, d_offsets_begin, d_offsets_end, temp,
                               temp_bytes, (cudaStream_t)stream);
}

/* The same over nrows rows of len contiguous elements (row r: x[r * len .. (r + 1) * len)), the
 * offsets computed by a counting iterator rather than read from memory. */
int cr_bl_cub_segmented_sum_rows(int dtype, const void *x, void *out, uint64_t nrows, uint64_t len,
                                 void *temp, size_t *temp_bytes, void *stream)
{
    auto begin = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                                 row_start{(int64_t)len});
    return segmented_sum_dtype(dtype, x, out, nrows, begin, begin + 1, temp, temp_bytes,
                               (cudaStream_t)stream);
}

} // extern "C"
