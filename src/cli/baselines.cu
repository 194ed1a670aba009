/* baselines.cu — what the benchmark holds coopreduce against, measured in the same run:
 *  - CUB DeviceReduce::Sum (the CCCL bundled with CUDA): NVIDIA's own reduction, two launches,
 *    run-to-run deterministic on one GPU model only;
 *  - a plain float4 read kernel: reads every byte once and does nothing else — the bandwidth
 *    ceiling for any reduction;
 *  - an empty kernel: the launch floor.
 * Benchmark code only; the library never calls these. */
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>
#include <stdint.h>

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

} // extern "C"
