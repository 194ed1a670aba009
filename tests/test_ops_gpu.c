/* test_ops_gpu.c — the order-independent operations on the GPU (src/gpu/ops.cu): MIN, MAX,
 * ABSMAX, ARGMIN, ARGMAX of every dtype, SUM and MEAN of the integer dtypes.
 *
 *   test_ops_gpu            all checks; exits 77 (ctest: skipped) without CUDA or a GPU
 *   test_ops_gpu --quick    sizes <= 70001, fewer data sets, no > 2^31 case (compute-sanitizer)
 *   test_ops_gpu --timing   also times every (op, dtype) at n = 2^28 against the library's own
 *                           int32 and float32 sums of the same bytes (both measured at 98-100%
 *                           of the float4-read ceiling, docs/PERF.md); prints, checks nothing
 *
 * Every GPU result is compared bit for bit with
 *  (a) a plain sequential loop in this file, written from the rules in coopreduce.h (its own
 *      16-bit decoders; NaN first; -0.0 < +0.0 for min/max; IEEE equality and the first index
 *      for argmin/argmax; __int128 sums), and for MEAN an exact check that the double is the
 *      correctly rounded quotient (integer comparisons against the rounding midpoints, not the
 *      library's routine);
 *  (b) a CPU handle's coopreduce_reduce on the same data (an error status there is a failure,
 *      except COOPREDUCE_ERROR_OVERFLOW for a 64-bit sum that does not fit, which the header
 *      documents).
 * The device result is poisoned (0xA5) before every call, and the bytes after the result must
 * stay poisoned. Data: several distributions per dtype (wide random bit patterns, small ranges
 * with many ties and signed zeros, specials, values near the integer extremes, all equal, NaNs),
 * sizes around warp, vector and power-of-two boundaries up to 2^24 + 1, x aligned and one (or a
 * few) elements off 16 bytes, forced grids. Edge cases: NaN at the first, middle and last
 * position, only +-0.0, +-inf, integer extremes and 128-bit sums, n = 0, host results, a
 * non-blocking stream, bad pointers, and (not --quick) n > 2^31 float16 / bfloat16.
 *
 * Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_util.h"
#include "util.h"

#ifndef COOPREDUCE_HAVE_CUDA
GPU_TEST_MAIN_WITHOUT_CUDA("test_ops_gpu")
#else
#include "ops_gpu.h"

int main(int argc, char **argv)
{
    int do_timing = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--timing"))
            do_timing = 1;
        else {
            printf("usage: test_ops_gpu [--quick] [--timing]\n");
            return 2;
        }
    }
    coopreduce_gpu_props props;
    if (gpu_test_open("test_ops_gpu", &gpu, &props)) return 77;
    if (coopreduce_create_cpu(&cpu, 0) != COOPREDUCE_SUCCESS) {
        CHECK(0, "create_cpu: %s", coopreduce_last_error(NULL));
        return check_summary("test_ops_gpu");
    }
    if (quick) printf("test_ops_gpu: --quick\n");
    test_seed_init("test_ops_gpu");
    max_n = quick ? 70001 : (1u << 24) + 1;
    cap_bytes = (size_t)(max_n + 64) * 8;
    hx = malloc(cap_bytes);
    if (!CHECK(hx != NULL, "malloc") ||
        !cuda_ok(cudaMalloc(&dx, cap_bytes + 64), "cudaMalloc input") ||
        !cuda_ok(cudaMalloc(&dout, 64), "cudaMalloc result"))
        return check_summary("test_ops_gpu");

    static const test_section sections[] = {
        {"api", api_basics},
        {"empty", empty},
        {"sweep", sweep},
        {"nans", nans},
        {"zeros, infs", zeros_and_infs},
        {"int extremes", int_extremes},
        {"to_host", to_host},
        {"grids", grids},
        {"streams, pointers", streams_and_pointers},
        {"huge", huge},
    };
    run_sections(sections, sizeof sections / sizeof sections[0], quick ? huge : NULL);
    if (do_timing) timing();
    cudaFree(dx);
    cudaFree(dout);
    free(hx);
    CHECK(coopreduce_destroy(cpu) == COOPREDUCE_SUCCESS, "destroy cpu");
    CHECK(coopreduce_destroy(gpu) == COOPREDUCE_SUCCESS, "destroy gpu: %s",
          coopreduce_last_error(NULL));
    return check_summary("test_ops_gpu");
}
#endif
