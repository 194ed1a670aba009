/* exact.cu — EXACT mode kernels (docs/EXACT.md): the correctly rounded SUM of float32, float64,
 * float16, bfloat16 and DOT of float32 and float64, in one launch.
 *
 * Each thread runs a grid-stride loop with 16-byte loads (two in flight). Its elements become
 * binary64 leaves, exactly (see src/cpu/exact.c, which does the same on the CPU), and go to two
 * floating-point expansions of K terms (K = 2, or 3 for float64) updated with TwoSum
 * (superacc.h); a nonzero residue — rare — is added to the block's superaccumulator in shared
 * memory with 64-bit integer atomics. At the end each thread folds its second expansion into the
 * first, the warp merges its 32 expansions along a shuffle tree (residues to the block
 * accumulator again), and lane 0 adds the warp's terms. The block writes its digits (after one
 * carry step) and flags to its slot of `partials`, takes a ticket, and the last block adds every
 * slot (integer addition: the order does not matter), rounds once (cr_sa_finish, the CPU's own
 * code), writes the result and sets the ticket back to zero. Nothing depends on the grid, the
 * schedule or the atomics' order: the bits are those of the CPU path.
 *
 * The shared digits receive contributions |c| < 2^32; a block that would add more than 2^28
 * leaves between carry steps (forced tiny grids on huge inputs) runs the loop in rounds with a
 * carry step after each. Compiled with --fmad=false: TwoSum must not be contracted. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <atomic>

extern "C" {
#include "internal.h"
}
#include "core/superacc.h"

namespace {

const int kThreads = 512;
/* Grid-stride iterations per round: 2 units of <= 8 leaves per thread and iteration, 512
 * threads: 2^14 iterations are 2^27 leaves per block between carry steps. */
const uint64_t kRound = 1ull << 14;

union Unit {
    uint4 v;
    float f[4];
    double d[2];
    uint16_t h[8];
};

template <int DT, int DOT, int VEC> struct Cfg {
    static constexpr int ES = DT == 1 ? 8 : DT == 0 ? 4 : 2;
    static constexpr int EPU = VEC ? 16 / ES : 1;            /* elements per unit */
    static constexpr int LPE = (DOT && DT == 1) ? 2 : 1;     /* leaves per element */
    static constexpr int LPU = EPU * LPE;
    static constexpr int K = DT == 1 ? 3 : 2;
    static constexpr int ND = (DOT && DT == 1) ? CR_SA_DOT64_DIGITS : CR_SA_SUM_DIGITS;
    static constexpr int LSB = (DOT && DT == 1) ? CR_SA_DOT64_LSB : CR_SA_SUM_LSB;
};

/* ---- slow paths (rare; kept out of line so the loop stays lean) ---------------------------- */
__device__ __noinline__ void sa_atomic(long long *acc, int lsb, double v)
{
    int idx;
    int64_t c[3];
    if (!cr_sa_split_f64(v, lsb, &idx, c)) return;
    for (int k = 0; k < 3; k++)
        if (c[k]) atomicAdd((unsigned long long *)&acc[idx + k], (unsigned long long)c[k]);
}

/* A float64 input outside the expansions (NaN, inf, |v| >= 2^960): returns flags. */
__device__ __noinline__ unsigned slow_value(long long *acc, int lsb, double v)
{
    const unsigned f = cr_sa_special_flags(v);
    if (!f) sa_atomic(acc, lsb, v);
    return f | CR_X_NONNEGZ;
}

/* A float64 product outside [2^-968, 2^960), or with a factor not finite: returns flags. */
__device__ __noinline__ unsigned slow_product(long long *acc, int lsb, double a, double b)
{
    if (!isfinite(a) || !isfinite(b)) return cr_sa_product_special(a, b) | CR_X_NONNEGZ;
    if (a == 0 || b == 0) return CR_X_NONNEGZ; /* not reached: zero products are fast */
    cr_u128 m;
    int e, neg, idx;
    int64_t c[3];
    cr_sa_product(a, b, &m, &e, &neg);
    for (int half = 0; half < 2; half++) {
        const uint64_t part = (uint64_t)(m >> (64 * half));
        if (!part) continue;
        cr_sa_split_u64(part, e + 64 * half, neg, lsb, &idx, c);
        for (int k = 0; k < 3; k++)
            if (c[k]) atomicAdd((unsigned long long *)&acc[idx + k], (unsigned long long)c[k]);
    }
    return CR_X_NONNEGZ;
}

/* The last block's one thread: the digits rounded once (the CPU's code, superacc.h). */
__device__ __noinline__ void finish(const long long *acc, int nd, int lsb, unsigned flags,
                                    int fmt, void *out)
{
    int64_t d[CR_SA_MAX_DIGITS];
    for (int i = 0; i < nd; i++) d[i] = acc[i];
    cr_sa_finish(d, nd, lsb, flags, fmt, out);
}

/* ---- leaves ------------------------------------------------------------------------------- */
template <int DT, int DOT, int LSB>
__device__ __forceinline__ void elem_leaves(const Unit &ux, const Unit &uy, int e, double *lv,
                                            unsigned &flags, long long *acc)
{
    if (DOT && DT == 1) {
        const double a = ux.d[e], b = uy.d[e];
        double p = a * b, err = -0.0;
        const double ap = fabs(p);
        if ((ap >= 0x1p-968 && ap < CR_X_BIG) ||
            ((a == 0 || b == 0) && isfinite(a) && isfinite(b))) {
            err = fma(a, b, -p);
            if (err == 0) err = -0.0;
        } else {
            flags |= slow_product(acc, LSB, a, b);
            p = -0.0;
        }
        lv[0] = p;
        lv[1] = err;
    } else if (DOT) {
        lv[0] = (double)ux.f[e] * (double)uy.f[e]; /* exact */
    } else if (DT == 0) {
        lv[0] = (double)ux.f[e];
    } else if (DT == 1) {
        double v = ux.d[e];
        if (!(fabs(v) < CR_X_BIG)) {
            flags |= slow_value(acc, LSB, v);
            v = -0.0;
        }
        lv[0] = v;
    } else if (DT == 2) {
        lv[0] = (double)cr_f16_to_f32(ux.h[e]);
    } else {
        lv[0] = (double)cr_bf16_to_f32(ux.h[e]);
    }
}

template <int K> __device__ __forceinline__ double add_leaf(double (&t)[K], double c)
{
#pragma unroll
    for (int k = 0; k < K; k++) t[k] = cr_two_sum(t[k], c, &c);
    return c;
}

template <int K> __device__ __forceinline__ void reset(double (&t)[K])
{
    t[0] = -0.0;
#pragma unroll
    for (int k = 1; k < K; k++) t[k] = 0.0;
}

/* Adds NL leaves to the two expansions (leaf l to expansion l & 1); nonzero residues go to the
 * block accumulator. An infinity or a NaN in the lead term (possible for 32- and 16-bit inputs,
 * whose leaves are never screened) shows up as a NaN residue: the lead, which has seen every
 * infinity of the step, is classified and the expansion restarts (its finite part no longer
 * matters). */
template <int K, int NL, int LSB>
__device__ __forceinline__ void add_leaves(double (&t)[2][K], const double *lv, unsigned &flags,
                                           long long *acc)
{
    double r[NL];
    unsigned long long any = 0;
#pragma unroll
    for (int l = 0; l < NL; l++) {
        r[l] = add_leaf<K>(t[l & 1], lv[l]);
        any |= (unsigned long long)__double_as_longlong(r[l]) << 1;
    }
    if (any) {
        bool bad[2] = {false, false};
#pragma unroll
        for (int l = 0; l < NL; l++) {
            if (r[l] == 0) continue;
            if (isfinite(r[l])) sa_atomic(acc, LSB, r[l]);
            else bad[l & 1] = true;
        }
#pragma unroll
        for (int j = 0; j < 2; j++)
            if (bad[j]) {
                const unsigned f = cr_sa_special_flags(t[j][0]);
                flags |= (f ? f : CR_X_NAN) | CR_X_NONNEGZ;
                reset<K>(t[j]);
            }
    }
}

/* One carry step over the block's digits (blockDim.x >= ND): digits below the top one come
 * back to [0, 2^32) plus a carry in (-2^31, 2^31). Every thread calls it. */
template <int ND> __device__ void carry_step(long long *acc)
{
    const int i = threadIdx.x;
    long long v = 0, c = 0;
    __syncthreads();
    if (i < ND - 1) {
        v = acc[i];
        c = v >> 32;
    }
    __syncthreads();
    if (i < ND - 1) acc[i] = v - (long long)((unsigned long long)c << 32);
    __syncthreads();
    if (i < ND - 1 && c) atomicAdd((unsigned long long *)&acc[i + 1], (unsigned long long)c);
    __syncthreads();
}

template <int DT, int DOT, int VEC> struct Loader {
    typedef Cfg<DT, DOT, VEC> C;
    /* unit i of the body (VEC) or element i (scalar) */
    static __device__ __forceinline__ void unit(const unsigned char *p, uint64_t i, Unit &u)
    {
        if (VEC) u.v = __ldg((const uint4 *)p + i);
        else element(p, i, u);
    }
    static __device__ __forceinline__ void element(const unsigned char *p, uint64_t i, Unit &u)
    {
        if (C::ES == 8) u.d[0] = __ldg((const double *)p + i);
        else if (C::ES == 4) u.f[0] = __ldg((const float *)p + i);
        else u.h[0] = __ldg((const unsigned short *)p + i);
    }
};

template <int DT, int DOT, int VEC>
__global__ void __launch_bounds__(kThreads, 2)
    exact_kernel(const void *xv, const void *yv, uint64_t n, long long *partials,
                 unsigned int *ticket, void *out, int fmt)
{
    typedef Cfg<DT, DOT, VEC> C;
    typedef Loader<DT, DOT, VEC> L;
    const int K = C::K, ND = C::ND, LSB = C::LSB;
    __shared__ long long acc[ND];
    __shared__ unsigned int sflags;
    __shared__ bool is_last;
    for (int i = threadIdx.x; i < ND; i += blockDim.x) acc[i] = 0;
    if (threadIdx.x == 0) sflags = 0;
    __syncthreads();

    const unsigned char *x = (const unsigned char *)xv, *y = (const unsigned char *)yv;
    /* Elements before the first 16-byte boundary, the units, the ragged tail. */
    uint64_t head = 0;
    if (VEC) {
        const uintptr_t mis = (uintptr_t)x % 16;
        head = mis ? (16 - mis) / C::ES : 0;
        if (head > n) head = n;
    }
    const uint64_t nunits = (n - head) / C::EPU;
    const uint64_t tail_start = head + nunits * C::EPU;
    const unsigned char *bx = x + head * C::ES, *by = DOT ? y + head * C::ES : x;

    double t[2][K];
    reset<K>(t[0]);
    reset<K>(t[1]);
    unsigned flags = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t iters = (nunits + 2 * stride - 1) / (2 * stride); /* the same in every thread */
    for (uint64_t r0 = 0; r0 < iters; r0 += kRound) {
        const uint64_t r1 = iters - r0 < kRound ? iters : r0 + kRound;
        for (uint64_t it = r0; it < r1; ++it) {
            const uint64_t i0 = it * 2 * stride + gid, i1 = i0 + stride;
            Unit ux[2], uy[2];
            const bool ok0 = i0 < nunits, ok1 = i1 < nunits;
            if (ok0) {
                L::unit(bx, i0, ux[0]);
                if (DOT) L::unit(by, i0, uy[0]);
            }
            if (ok1) {
                L::unit(bx, i1, ux[1]);
                if (DOT) L::unit(by, i1, uy[1]);
            }
            double lv[2 * C::LPU];
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const bool ok = u ? ok1 : ok0;
#pragma unroll
                for (int e = 0; e < C::EPU; e++) {
                    if (ok) {
                        elem_leaves<DT, DOT, LSB>(ux[u], uy[u], e, lv + (u * C::EPU + e) * C::LPE,
                                                  flags, acc);
                    } else {
#pragma unroll
                        for (int q = 0; q < C::LPE; q++) lv[(u * C::EPU + e) * C::LPE + q] = -0.0;
                    }
                }
            }
            add_leaves<K, 2 * C::LPU, LSB>(t, lv, flags, acc);
        }
        if (r1 < iters) carry_step<ND>(acc);
    }
    /* The head and the tail, one element per thread. */
#pragma unroll
    for (int part = 0; part < 2; part++) {
        const uint64_t cnt = part ? n - tail_start : head, first = part ? tail_start : 0;
        if (VEC && gid < cnt) {
            Unit ux, uy;
            L::element(x, first + gid, ux);
            if (DOT) L::element(y, first + gid, uy);
            double lv[2] = {-0.0, -0.0};
            elem_leaves<DT, DOT, LSB>(ux, uy, 0, lv, flags, acc);
            add_leaves<K, 2, LSB>(t, lv, flags, acc);
        }
    }
    /* The lead terms are the plain sums of their leaves from -0.0: still -0.0 only if every
     * leaf was -0.0 (the slow paths set CR_X_NONNEGZ themselves). */
    if (__double_as_longlong(t[0][0]) != (long long)0x8000000000000000ull ||
        __double_as_longlong(t[1][0]) != (long long)0x8000000000000000ull)
        flags |= CR_X_NONNEGZ;
    /* Second expansion into the first, then the warp's shuffle tree (t[1] stays reset: the
     * second leaf of each call is -0.0). */
    {
        double moved[K];
#pragma unroll
        for (int k = 0; k < K; k++) moved[k] = t[1][k];
        reset<K>(t[1]);
#pragma unroll
        for (int k = 0; k < K; k++) {
            double lv[2] = {moved[k], -0.0};
            add_leaves<K, 2, LSB>(t, lv, flags, acc);
        }
    }
    const unsigned lane = threadIdx.x % 32;
    for (int off = 16; off >= 1; off /= 2) {
        double pt[K];
#pragma unroll
        for (int k = 0; k < K; k++) pt[k] = __shfl_down_sync(0xffffffffu, t[0][k], off);
        if (lane < (unsigned)off) {
#pragma unroll
            for (int k = 0; k < K; k++) {
                double lv[2] = {pt[k], -0.0};
                add_leaves<K, 2, LSB>(t, lv, flags, acc);
            }
        }
    }
    flags = __reduce_or_sync(0xffffffffu, flags);
    if (lane == 0) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            const unsigned f = cr_sa_special_flags(t[0][k]);
            if (f) flags |= f;
            else sa_atomic(acc, LSB, t[0][k]);
        }
        atomicOr(&sflags, flags);
    }
    carry_step<ND>(acc); /* |digits| < 2^33: the last block may add 2^29 slots */

    long long *mine = partials + (uint64_t)blockIdx.x * (ND + 1);
    for (int i = threadIdx.x; i < ND; i += blockDim.x) mine[i] = acc[i];
    if (threadIdx.x == 0) {
        mine[ND] = (long long)sflags;
        __threadfence(); /* the slot is visible before the ticket is */
        is_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence(); /* every other block's slot is visible after its ticket */
    for (int i = threadIdx.x; i < ND; i += blockDim.x) acc[i] = 0;
    if (threadIdx.x == 0) sflags = 0;
    __syncthreads();
    const uint64_t total = (uint64_t)gridDim.x * (ND + 1);
    for (uint64_t i = threadIdx.x; i < total; i += 4 * blockDim.x) {
        long long v[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint64_t ik = i + (uint64_t)k * blockDim.x;
            v[k] = ik < total ? __ldcg(partials + ik) : 0;
        }
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint64_t ik = i + (uint64_t)k * blockDim.x;
            if (ik >= total || !v[k]) continue;
            const int j = (int)(ik % (ND + 1));
            if (j == ND) atomicOr(&sflags, (unsigned)v[k]);
            else atomicAdd((unsigned long long *)&acc[j], (unsigned long long)v[k]);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        finish(acc, ND, LSB, sflags | (n ? CR_X_ANY : 0u), fmt, out);
        *ticket = 0; /* ready for the next launch in stream order */
    }
}

/* Blocks per SM from the occupancy calculator, asked once per kernel and device. */
const int kMaxDevices = 64;
template <int DT, int DOT, int VEC> cudaError_t occupancy(int device, int *per_sm)
{
    static std::atomic<int> cache[kMaxDevices];
    if (device >= 0 && device < kMaxDevices) {
        const int c = cache[device].load(std::memory_order_relaxed);
        if (c > 0) {
            *per_sm = c;
            return cudaSuccess;
        }
    }
    int b = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &b, exact_kernel<DT, DOT, VEC>, kThreads, 0);
    if (e != cudaSuccess) return e;
    if (b < 1) b = 1;
    if (device >= 0 && device < kMaxDevices) cache[device].store(b, std::memory_order_relaxed);
    *per_sm = b;
    return cudaSuccess;
}

struct Args {
    const void *x, *y;
    uint64_t n;
    long long *partials;
    unsigned int *ticket;
    void *out;
    int fmt, blocks;
    cudaStream_t stream;
};

template <int DT, int DOT, int VEC> cudaError_t run(const Args *a, int device, int *per_sm)
{
    if (!a) return occupancy<DT, DOT, VEC>(device, per_sm);
    exact_kernel<DT, DOT, VEC><<<a->blocks, kThreads, 0, a->stream>>>(
        a->x, a->y, a->n, a->partials, a->ticket, a->out, a->fmt);
    return cudaGetLastError();
}

/* dt: 0 float32, 1 float64, 2 float16, 3 bfloat16 */
cudaError_t dispatch(int dt, int dot, int vec, const Args *a, int device, int *per_sm)
{
    if (dot) {
        if (dt == 0) return vec ? run<0, 1, 1>(a, device, per_sm) : run<0, 1, 0>(a, device, per_sm);
        if (dt == 1) return vec ? run<1, 1, 1>(a, device, per_sm) : run<1, 1, 0>(a, device, per_sm);
        return cudaErrorInvalidValue;
    }
    switch (dt) {
    case 0: return run<0, 0, 1>(a, device, per_sm);
    case 1: return run<1, 0, 1>(a, device, per_sm);
    case 2: return run<2, 0, 1>(a, device, per_sm);
    case 3: return run<3, 0, 1>(a, device, per_sm);
    default: return cudaErrorInvalidValue;
    }
}

int dt_index(int dtype)
{
    switch (dtype) {
    case COOPREDUCE_FLOAT32: return 0;
    case COOPREDUCE_FLOAT64: return 1;
    case COOPREDUCE_FLOAT16: return 2;
    case COOPREDUCE_BFLOAT16: return 3;
    default: return -1;
    }
}

} // namespace

extern "C" {

/* Bytes of one block's slot in the partials: the digits and the flags. */
size_t cr_gpu_exact_slot_bytes(int dtype, int dot)
{
    const int nd = dot && dtype == COOPREDUCE_FLOAT64 ? CR_SA_DOT64_DIGITS : CR_SA_SUM_DIGITS;
    return (size_t)(nd + 1) * 8;
}

/* The grid for n elements: enough blocks for two 16-byte units per thread, at most what is
 * resident (sm_count * occupancy), at least 1; forced > 0 wins, clamped to max_blocks. vec: 1
 * for 16-byte loads (x and y equally aligned), 0 for element loads. Returns a cudaError_t. */
int cr_gpu_exact_grid(int dtype, int dot, int vec, uint64_t n, int device, int sm_count,
                      int forced, int max_blocks, int *blocks, int *threads)
{
    *threads = kThreads;
    const int dt = dt_index(dtype);
    if (dt < 0) return (int)cudaErrorInvalidValue;
    if (forced > 0) {
        *blocks = forced < max_blocks ? forced : max_blocks;
        return 0;
    }
    int per_sm = 0;
    cudaError_t e = dispatch(dt, dot, vec, NULL, device, &per_sm);
    if (e != cudaSuccess) return (int)e;
    const uint64_t es = coopreduce_dtype_size((coopreduce_dtype)dtype);
    const uint64_t units = vec ? n / (16 / es) + 1 : n + 1;
    const uint64_t want = (units + 2 * kThreads - 1) / (2 * kThreads);
    uint64_t full = (uint64_t)sm_count * (uint64_t)per_sm;
    if (full > (uint64_t)max_blocks) full = (uint64_t)max_blocks;
    const uint64_t b = want < full ? want : full;
    *blocks = (int)(b < 1 ? 1 : b);
    return 0;
}

/* Enqueues the exact reduction of x[0..n) (and y for dot) on stream: one kernel of `blocks`
 * blocks. partials: cr_gpu_exact_slot_bytes per block; ticket: a zero device counter the kernel
 * leaves zero; out: device memory for the result in format fmt (CR_FMT_*). n may be 0. Never
 * synchronises. Returns a cudaError_t. */
int cr_gpu_exact_launch(int dtype, int dot, int vec, const void *x, const void *y, uint64_t n,
                        void *partials, unsigned int *ticket, void *out, int fmt, int blocks,
                        void *stream)
{
    const int dt = dt_index(dtype);
    if (dt < 0 || blocks < 1) return (int)cudaErrorInvalidValue;
    const Args a = {x, y, n, (long long *)partials, ticket, out, fmt, blocks,
                    (cudaStream_t)stream};
    return (int)dispatch(dt, dot, vec, &a, -1, NULL);
}

} // extern "C"
