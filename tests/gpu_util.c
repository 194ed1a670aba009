/* gpu_util.c — the GPU tests' shared start and CUDA checks (gpu_util.h). */
#include "gpu_util.h"

#include "check.h"

int cuda_ok(cudaError_t e, const char *what)
{
    return CHECK(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
}

int gpu_test_open(const char *prog, coopreduce_handle **gpu, coopreduce_gpu_props *props)
{
    int count = 0;
    coopreduce_gpu_count(&count);
    if (count == 0) {
        printf("SKIP: %s: no CUDA GPU on this machine; GPU tests skipped\n", prog);
        return 77;
    }
    if (coopreduce_create_gpu(gpu, 0) != COOPREDUCE_SUCCESS) {
        printf("SKIP: %s: GPU 0 not usable: %s\n", prog, coopreduce_last_error(NULL));
        return 77;
    }
    coopreduce_gpu_props_get(0, props);
    printf("%s on %s (sm_%d%d, %d SMs, cooperative launch %d, clusters %d)\n", prog, props->name,
           props->cc_major, props->cc_minor, props->sm_count, props->cooperative_launch,
           props->cluster_launch);
    fflush(stdout);
    return 0;
}

int gpu_room_for(size_t bytes)
{
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    if (free_b >= bytes + (1ull << 30)) return 1;
    printf("SKIP: > 2^31 case needs %.1f GB of free device memory, %.1f GB free\n", bytes / 1e9,
           free_b / 1e9);
    return 0;
}

int gpu_capture(cudaStream_t st, enum cudaStreamCaptureMode mode,
                int (*fn)(void *arg, cudaStream_t st), void *arg, cudaGraphExec_t *exec)
{
    cudaGraph_t graph = NULL;
    *exec = NULL;
    if (!cuda_ok(cudaStreamBeginCapture(st, mode), "begin capture")) return 0;
    const int ok = fn(arg, st);
    const cudaError_t e = cudaStreamEndCapture(st, &graph);
    const int done = ok && cuda_ok(e, "end capture") &&
                     cuda_ok(cudaGraphInstantiate(exec, graph, 0), "instantiate");
    if (graph) cudaGraphDestroy(graph); /* the instantiated graph is a copy */
    if (!done) {
        *exec = NULL;
        (void)cudaGetLastError();
    }
    return done;
}
