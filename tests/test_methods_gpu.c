/* test_methods_gpu.c — every reduction method (docs/METHODS.md) on the GPU, for float32,
 * float64 and int32.
 *
 *   test_methods_gpu           all checks; exits 77 (ctest: skipped) without CUDA or a GPU
 *   test_methods_gpu --quick   sizes <= 70000, 3 repeats, no > 2^31 case (compute-sanitizer)
 *
 * What is checked, for every method (canonical included) and the three dtypes:
 *  - correctness on many sizes and data kinds, fresh seeds. int32: the exact value of an int64
 *    loop in this file. Floats: |result - exact| <= gamma(d) * sum|x|, with the exact sum from
 *    ref_exact and d from the launch coopreduce_last_launch reports:
 *        d = ceil(n / (blocks * threads)) + blocks + threads + 64   (and never more than n + 64)
 *    (a thread's sequential adds, at most `threads` chained adds inside a block (shared-memory
 *    atomics), tree levels, at most `blocks` chained adds of the blocks' partials: atomics or the
 *    host loop); gamma(d) = d u / (1 - d u), u = 2^-24 or 2^-53. Float data made of small
 *    integers whose sum|x| fits the significand makes every partial sum of any order exact, so
 *    there the result must be exactly the exact sum: a lost or doubled element cannot hide in
 *    the rounding bound.
 *  - outputs poisoned (0xA5) before every call; the bytes after the result stay poisoned.
 *  - sum_to_host gives the device result's bits (deterministic methods) or a result within the
 *    bound (the others).
 *  - x one element off 16-byte alignment (and two, three for 4-byte types).
 *  - forced grids 1, 7, 64, 0.
 *  - coopreduce_method_deterministic: 1 => identical bits over repeated runs; 0 => the number
 *    of distinct results is printed (not a failure).
 *  - clusters unavailable (compute capability < 9, or COOPREDUCE_FEATURE_CLUSTERS disabled):
 *    COOPREDUCE_ERROR_NOT_SUPPORTED, a message, and the output untouched.
 *  - cooperative launch disabled: grid falls back (fell_back, notice); gridsync with a forced
 *    grid gives the cooperative launch's bits.
 *  - pipeline stages 1..8; 0 and 9 refused.
 *  - n = 0 gives +0.0 / 0; host memory refused (NOT_DEVICE_MEMORY); misaligned results;
 *    int32 n > 2^32 refused.
 *  - (not --quick) n = 2^31 + 12345 float32 and int32 with sums known by formula.
 *
 * Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_util.h"
#include "util.h"

#ifndef COOPREDUCE_HAVE_CUDA
GPU_TEST_MAIN_WITHOUT_CUDA("test_methods_gpu")
#else
#include "methods_gpu.h"

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            printf("usage: test_methods_gpu [--quick]\n");
            return 2;
        }
    }
    max_n = quick ? 70000 : (1u << 24) + 1;
    repeats = quick ? 3 : 50;
    if (gpu_test_open("test_methods_gpu", &gpu, &props)) return 77;
    if (quick) printf("test_methods_gpu: --quick\n");
    test_seed_init("test_methods_gpu");
    cap_elems = max_n + 64;
    hx = malloc(cap_elems * 8);
    if (!CHECK(hx != NULL, "malloc") ||
        !cuda_ok(cudaMalloc(&dx, cap_elems * 8 + 64), "cudaMalloc input") ||
        !cuda_ok(cudaMalloc(&dout, 64), "cudaMalloc result"))
        return check_summary("test_methods_gpu");

    static const test_section sections[] = {
        {"api", api_basics},
        {"empty", empty_sums},
        {"bad input", bad_input},
        {"clusters", clusters},
        {"cooperative", cooperative},
        {"pipeline", pipeline},
        {"sweep", sweep},
        {"misaligned", misaligned},
        {"forced grids", forced_grids},
        {"determinism", determinism},
        {"huge", huge},
    };
    run_sections(sections, sizeof sections / sizeof sections[0], quick ? huge : NULL);
    printf("largest error / bound seen (float32, float64):\n");
    for (int m = 0; m < NMETHODS; m++)
        printf("  %-10s %.3g  %.3g\n", mname(m), worst_ratio[m][0], worst_ratio[m][1]);
    cudaFree(dx);
    cudaFree(dout);
    free(hx);
    CHECK(coopreduce_destroy(gpu) == COOPREDUCE_SUCCESS, "destroy: %s",
          coopreduce_last_error(NULL));
    return check_summary("test_methods_gpu");
}
#endif
