/* gpu_util.h — what the GPU test programs share (gpu_util.c, built with CUDA only).
 *
 *   GPU_TEST_MAIN_WITHOUT_CUDA("prog")  the whole program of a build without CUDA: prints a
 *                                       SKIP line and exits 77 (ctest: skipped).
 *   gpu_test_open("prog", &gpu, &props) a handle on GPU 0 and its properties, printed; 77 after a
 *                                       SKIP line when there is no usable GPU, else 0.
 *   cuda_ok(err, "what")                one CHECK that a CUDA call succeeded.
 *   gpu_room_for(bytes)                 1 when the GPU has bytes free and 1 GiB to spare, else a
 *                                       SKIP line and 0 (the n > 2^31 cases).
 *   gpu_capture(st, mode, fn, arg, &ex) what fn(arg, st) enqueues on st, captured in `mode` into
 *                                       an instantiated graph *ex: 1, else CHECK failures and 0
 *                                       (fn returns 1 when its calls succeeded, else 0). */
#ifndef COOPREDUCE_TESTS_GPU_UTIL_H
#define COOPREDUCE_TESTS_GPU_UTIL_H

#include <stdio.h>
#include "coopreduce.h"

#define GPU_TEST_MAIN_WITHOUT_CUDA(prog)                                                           \
    int main(void)                                                                                 \
    {                                                                                              \
        printf("SKIP: " prog ": coopreduce was built without CUDA; GPU tests skipped\n");          \
        return 77;                                                                                 \
    }

#ifdef COOPREDUCE_HAVE_CUDA
#include <cuda_runtime_api.h>

int cuda_ok(cudaError_t e, const char *what);
int gpu_test_open(const char *prog, coopreduce_handle **gpu, coopreduce_gpu_props *props);
int gpu_room_for(size_t bytes);
int gpu_capture(cudaStream_t st, enum cudaStreamCaptureMode mode,
                int (*fn)(void *arg, cudaStream_t st), void *arg, cudaGraphExec_t *exec);
#endif

#endif /* COOPREDUCE_TESTS_GPU_UTIL_H */
