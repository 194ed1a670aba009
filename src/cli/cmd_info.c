/* cmd_info.c — `coopreduce info`: the GPUs, the methods, the build and the CPUs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "device.h"
#include "format.h"
#include "help.h"
#include "messages.h"

/* One line per method for `coopreduce info` and the text report, indexed by coopreduce_method
 * (include/coopreduce.h describes each one in full). */
static const char *const METHOD_DESCRIPTIONS[COOPREDUCE_METHOD_COUNT] = {
    "canonical order v1: the same bits on every GPU and the CPU (the default)",
    "per-block shuffle and shared-memory sums, the partials added on the host (synchronous)",
    "grid-stride loop, cooperative launch, shared and global atomics",
    "one cooperative kernel, grid.sync(), a fixed-order final pass",
    "per-block first pass, one-block second pass",
    "thread-block clusters and distributed shared memory (sm_90 and later)",
    "cooperative_groups::reduce (redux.sync for 32-bit integers on sm_80 and later)",
    "16-byte vector loads, shared-memory tree, one atomicAdd per block",
    "grid-stride loads, shared-memory tree down to one warp, shuffle finish",
    "cooperative_groups::memcpy_async into shared memory",
    "cuda::memcpy_async completing on a cuda::barrier",
    "a multi-stage cuda::pipeline (--stages, default 4)",
};

static const char *method_description(coopreduce_method m)
{
    const char *d = (int)m >= 0 && (int)m < COOPREDUCE_METHOD_COUNT ? METHOD_DESCRIPTIONS[m] : NULL;
    return d != NULL ? d : "";
}

/* "yes", "no", or "float32 yes, float64 no" should the two ever differ. */
static void method_float_determinism(coopreduce_method m, char *out, size_t outlen)
{
    int d32 = coopreduce_method_deterministic(m, COOPREDUCE_FLOAT32);
    int d64 = coopreduce_method_deterministic(m, COOPREDUCE_FLOAT64);
    if (d32 == d64)
        snprintf(out, outlen, "%s", d32 == 1 ? "yes" : "no");
    else
        snprintf(out, outlen, "float32 %s, float64 %s", d32 == 1 ? "yes" : "no",
                 d64 == 1 ? "yes" : "no");
}

int cmd_info(int argc, char **argv)
{
    static const cli_option specs[] = {{"json", 0}, {NULL, 0}};
    if (cli_wants_help(argc, argv)) return cli_print_help("info");
    int json = 0;
    cli_args args;
    cli_args_init(&args, argc, argv, specs);
    const cli_option *spec;
    const char *value;
    int kind;
    while ((kind = cli_args_next(&args, &spec, &value)) != CLI_ARG_END) {
        if (kind == CLI_ARG_ERROR) return EXIT_USAGE;
        if (kind == CLI_ARG_POSITIONAL)
            return cli_usage_error("info takes no argument '%s'", value);
        json = 1;
    }

    int count = 0;
    coopreduce_status st = coopreduce_gpu_count(&count);
    if (st != COOPREDUCE_SUCCESS) {
        cli_error("cannot count GPUs: %s", cli_library_message(NULL, st));
        return EXIT_ERROR;
    }
    coopreduce_gpu_props *props = NULL;
    if (count > 0) {
        props = calloc((size_t)count, sizeof *props);
        if (props == NULL) {
            cli_error("out of memory");
            return EXIT_ERROR;
        }
    }
    for (int g = 0; g < count; g++) {
        st = coopreduce_gpu_props_get(g, &props[g]);
        if (st != COOPREDUCE_SUCCESS) {
            cli_error("cannot query GPU %d: %s", g, cli_library_message(NULL, st));
            free(props);
            return EXIT_ERROR;
        }
    }
    char cpu_name[256];
    cli_cpu_model_name(cpu_name, sizeof cpu_name);
    int cpus = cli_online_cpus();
    int methods = COOPREDUCE_METHOD_COUNT;
    const double GIB = 1024.0 * 1024.0 * 1024.0;

    if (json) {
        printf("{\"version\": \"%s\", \"order_version\": %d, \"cuda\": %s, \"cpu_count\": %d, "
               "\"cpu_name\": ",
               coopreduce_version_string(), coopreduce_order_version(),
               CLI_BUILT_WITH_CUDA ? "true" : "false", cpus);
        cli_print_json_string(stdout, cpu_name);
        printf(", \"gpus\": [");
        for (int g = 0; g < count; g++) {
            const coopreduce_gpu_props *p = &props[g];
            printf("%s{\"ordinal\": %d, \"name\": ", g ? ", " : "", p->ordinal);
            cli_print_json_string(stdout, p->name);
            printf(", \"sm_count\": %d, \"memory_gib\": %.1f, \"total_memory_bytes\": %llu, "
                   "\"l2_bytes\": %llu, \"compute_capability\": \"%d.%d\", "
                   "\"cooperative_launch\": %s, \"cluster_launch\": %s, \"usable\": %s}",
                   p->sm_count, (double)p->total_memory_bytes / GIB,
                   (unsigned long long)p->total_memory_bytes, (unsigned long long)p->l2_bytes,
                   p->cc_major, p->cc_minor, p->cooperative_launch ? "true" : "false",
                   p->cluster_launch ? "true" : "false", p->usable ? "true" : "false");
        }
        printf("], \"methods\": [");
        for (int m = 0; m < methods; m++) {
            coopreduce_method method = (coopreduce_method)m;
            printf(
                "%s{\"name\": \"%s\", \"deterministic_float32\": %s, "
                "\"deterministic_float64\": %s, \"deterministic_int32\": %s, \"gpu_only\": %s, "
                "\"description\": ",
                m ? ", " : "", coopreduce_method_name(method),
                coopreduce_method_deterministic(method, COOPREDUCE_FLOAT32) == 1 ? "true" : "false",
                coopreduce_method_deterministic(method, COOPREDUCE_FLOAT64) == 1 ? "true" : "false",
                coopreduce_method_deterministic(method, COOPREDUCE_INT32) == 1 ? "true" : "false",
                method == COOPREDUCE_METHOD_CANONICAL ? "false" : "true");
            cli_print_json_string(stdout, method_description(method));
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("coopreduce %s, canonical order v%d, built %s CUDA\n", coopreduce_version_string(),
               coopreduce_order_version(), CLI_BUILT_WITH_CUDA ? "with" : "without");
        printf("CPU: %d online (%s)\n", cpus, cpu_name);
        if (count == 0) printf("no CUDA GPU found (the CPU path is available)\n");
        for (int g = 0; g < count; g++) {
            const coopreduce_gpu_props *p = &props[g];
            printf("GPU %d: %s\n", p->ordinal, p->name);
            printf("  SMs %d, memory %.1f GiB, L2 %.1f MiB, compute capability %d.%d\n",
                   p->sm_count, (double)p->total_memory_bytes / GIB,
                   (double)p->l2_bytes / (1024.0 * 1024.0), p->cc_major, p->cc_minor);
            printf("  cooperative launch %s, clusters %s, usable %s\n",
                   p->cooperative_launch ? "yes" : "no", p->cluster_launch ? "yes" : "no",
                   p->usable ? "yes" : "no (this build has no code for its architecture)");
        }
        int width = 0;
        for (int m = 0; m < methods; m++) {
            int len = (int)strlen(coopreduce_method_name((coopreduce_method)m));
            width = len > width ? len : width;
        }
        printf("methods (coopreduce sum --method NAME):\n");
        for (int m = 0; m < methods; m++) {
            coopreduce_method method = (coopreduce_method)m;
            char det[64];
            method_float_determinism(method, det, sizeof det);
            printf("  %-*s  deterministic %-3s  %s\n", width, coopreduce_method_name(method), det,
                   method_description(method));
        }
        printf("  deterministic: the same float bits on every run on one GPU (int32 sums are "
               "exact,\n"
               "  so deterministic, with every method); only canonical is bit-identical across "
               "GPUs\n"
               "  and the CPU, and the CPU runs canonical only\n");
        if (count == 0)
            printf("method support: no GPU, so canonical only (on the CPU)\n");
        else
            printf("method support:\n");
        for (int g = 0; g < count; g++) {
            const coopreduce_gpu_props *p = &props[g];
            printf("  GPU %d: cluster methods (cluster) %s; cooperative launch (grid, gridsync) "
                   "%s\n",
                   p->ordinal,
                   p->cluster_launch ? "supported"
                                     : "not supported (they need compute capability 9.0)",
                   p->cooperative_launch ? "supported"
                                         : "not supported (grid and gridsync fall back)");
        }
    }
    free(props);
    return cli_finish_stdout();
}
