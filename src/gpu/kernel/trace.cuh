/* trace.cuh — a measurement build's time stamps along the end of the one-launch kernels (the
 * hand-off above level 1, tree.cuh), never part of a release build.
 *
 * Compiled in with -DCR_TUNE_TRACE=1 (scripts/variant.py builds such a library beside the real
 * one): each block stamps %globaltimer when it starts and when its level 1 is done; the block
 * that completes the top node stamps each step of its chain (its ticket, the loads of its group,
 * the lane tree, the ticket and loads above level 2, the result); the top warp averages the
 * steps over 256 launches and prints them (device printf, stdout of the program). What each step
 * of the end costs is how docs/perf-log's runs 184-186 chose what to change. Stamped: the
 * canonical sum, fused_kernel (ordered.cu) and exact mode (exact.cu); not NORM2's kernel, whose
 * three trees would each stamp the same slots. A print averages the last 256 launches, which may
 * span two sizes of a benchmark: only a size that prints twice in a row gives clean figures.
 * Without the macro CR_TRACE(...) expands to nothing. Part of the kernel layer; included by
 * tree.cuh. */
#ifndef COOPREDUCE_KERNEL_TRACE_CUH
#define COOPREDUCE_KERNEL_TRACE_CUH

#include <stdint.h>

#ifdef CR_TUNE_TRACE
#include <cstdio>

namespace {

/* The steps of the tree's end (tree.cuh); exact.cu's end names the same slots its own way
 * (kTrFold...), and trace_report prints the names of the kernel that reports. */
enum TraceStep {
    kTrLevel1,  /* this block's level 1 done (after the block's barrier) */
    kTrTicket,  /* its ticket's count back: it completes a group */
    kTrLoaded,  /* the group's partials loaded and met in shared memory */
    kTrClimb,   /* the group's lane tree done: the climb begins */
    kTrTicket3, /* the ticket above level 2 answered */
    kTrLoaded3, /* that group loaded and reduced */
    kTrResult,  /* the top warp begins the result */
    kTrSteps
};
enum ExactTraceStep {
    kTrData = kTrLevel1,   /* exact.cu: the block's data folded into its shared digits */
    kTrFold = kTrTicket,   /* its digits added to the global fold, fenced, ticket answered */
    kTrRead = kTrLoaded,   /* the last block: the fold read back (and zeroed) */
    kTrNormal = kTrClimb,  /* the digits in normal form */
    kTrSign = kTrTicket3,  /* a magnitude (negated and normalised again if negative) */
    kTrWindow = kTrLoaded3, /* the window of nonzero digits found */
    kTrRound = kTrResult    /* one thread begins cr_sa_round */
};

__device__ unsigned long long tr_start[64], tr_level1[64]; /* per launch tag: min start, max end */
__device__ long long tr_sum[kTrSteps + 3]; /* total, level 1, the steps, the result */
__device__ unsigned int tr_launches;
__device__ unsigned int tr_launches_exact; /* exact.cu: its launches, as the tag of its stamps */
__shared__ unsigned long long tr_at[kTrSteps];

__device__ __forceinline__ unsigned long long tr_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* One thread of each block, at the start and after level 1. */
__device__ __forceinline__ void trace_start(unsigned int tag)
{
    atomicMin(&tr_start[tag & 63], tr_now());
}
__device__ __forceinline__ void trace_level1(unsigned int tag)
{
    tr_at[kTrLevel1] = tr_now();
    atomicMax(&tr_level1[tag & 63], tr_at[kTrLevel1]);
}
__device__ __forceinline__ void trace_at(int step) { tr_at[step] = tr_now(); }

/* The top warp's thread 0, after the result: this launch's steps into the running sums; every
 * 256 launches, their means. The first launch of each of the 64 tag slots finds no start (the
 * slot's minimum is 0) and is left out. */
__device__ __noinline__ void trace_report(uint64_t n, int levels, unsigned int tag, bool exact = false)
{
    const unsigned long long end = tr_now();
    const int slot = tag & 63;
    const unsigned long long s0 = atomicAdd(&tr_start[slot], 0ull),
                             l1 = atomicAdd(&tr_level1[slot], 0ull);
    tr_start[slot] = ~0ull;
    tr_level1[slot] = 0;
    if (s0 == 0 || s0 == ~0ull) return;
    unsigned long long prev = l1;
    tr_sum[0] += (long long)(end - s0);
    tr_sum[1] += (long long)(l1 - s0);
    for (int i = 0; i < kTrSteps; i++) {
        tr_sum[2 + i] += (long long)(tr_at[i] - prev);
        prev = tr_at[i];
    }
    tr_sum[2 + kTrSteps] += (long long)(end - prev);
    if (++tr_launches < 256) return;
    const double k = 256e3; /* ns summed over 256 launches, as us */
    if (exact)
        printf("trace exact n=%llu: total %.2f data %.2f | last-data %.2f fold+ticket %.2f read "
               "%.2f normalise %.2f sign %.2f window %.2f to-round %.2f round %.2f | end %.2f us\n",
               (unsigned long long)n, tr_sum[0] / k, tr_sum[1] / k, tr_sum[2] / k,
               tr_sum[3] / k, tr_sum[4] / k, tr_sum[5] / k, tr_sum[6] / k, tr_sum[7] / k,
               tr_sum[8] / k, tr_sum[9] / k, (tr_sum[0] - tr_sum[1]) / k);
    else
    printf("trace n=%llu levels=%d: total %.2f level1 %.2f | last-l1 %.2f ticket %.2f load %.2f "
           "lanes %.2f ticket3 %.2f load3 %.2f to-result %.2f result %.2f | end %.2f us\n",
           (unsigned long long)n, levels, tr_sum[0] / k, tr_sum[1] / k, tr_sum[2] / k,
           tr_sum[3] / k, tr_sum[4] / k, tr_sum[5] / k, tr_sum[6] / k, tr_sum[7] / k,
           tr_sum[8] / k, tr_sum[9] / k, (tr_sum[0] - tr_sum[1]) / k);
    for (int i = 0; i < kTrSteps + 3; i++) tr_sum[i] = 0;
    tr_launches = 0;
}

} // namespace

#define CR_TRACE(...) __VA_ARGS__
#else
#define CR_TRACE(...)
#endif

#endif
