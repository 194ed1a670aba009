/* cmd_bench.c — `coopreduce bench`: its options, the device, the tables (bench.h). */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "bench.h"
#include "commands.h"
#include "distributed.h"
#include "device.h"
#include "help.h"
#include "messages.h"
#include "outfile.h"

/* Options and defaults into *o; EXIT_OK or a printed usage error. */
static int parse_bench_options(int argc, char **argv, bench_options *o, cli_device_kind *device,
                               int *ordinal, const char **json, const char **csv)
{
    static const cli_option specs[] = {
        {"device", 1},    {"quick", 0},    {"cold", 0},   {"no-host-latency", 0},
        {"no-extras", 0}, {"n", 1},        {"method", 1}, {"stages", 1},
        {"dtype", 1},     {"op", 1},       {"mode", 1},   {"batches", 1},
        {"threads", 1},   {"json", 1},     {"csv", 1},    {"shape", 1},
        {"axis", 1},      {"segments", 1}, {"data", 1},   {"offset", 1}, {NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->host_latency = 1;
    o->extras = 1;
    o->batches = 7;
    o->dtypes[0] = COOPREDUCE_FLOAT32;
    o->dtypes[1] = COOPREDUCE_FLOAT64;
    o->nd = 2;
    o->modes[0] = COOPREDUCE_MODE_DETERMINISTIC;
    o->nmodes = 1;
    o->data[0] = CR_GEN_UNIFORM;
    o->ndata = 1;
    cli_parse_method_list("method", "all", o->methods, BENCH_MAX_LIST, &o->nm);
    *device = CLI_DEVICE_AUTO;
    *ordinal = 0;
    int have_dtype = 0, have_method = 0, have_n = 0;

    cli_args args;
    cli_args_init(&args, argc, argv, specs);
    const cli_option *spec;
    const char *v;
    int kind;
    while ((kind = cli_args_next(&args, &spec, &v)) != CLI_ARG_END) {
        if (kind == CLI_ARG_ERROR) return EXIT_USAGE;
        if (kind == CLI_ARG_POSITIONAL)
            return cli_usage_error("bench takes no argument '%s' (see coopreduce bench --help)", v);
        const char *name = spec->name;
        int bad = 0;
        if (strcmp(name, "quick") == 0)
            o->quick = 1;
        else if (strcmp(name, "cold") == 0)
            o->cold = 1;
        else if (strcmp(name, "no-host-latency") == 0)
            o->host_latency = 0;
        else if (strcmp(name, "no-extras") == 0)
            o->extras = 0;
        else if (strcmp(name, "n") == 0) {
            bad = cli_parse_count_list(name, v, o->ns, BENCH_MAX_N, &o->nn);
            have_n = 1;
        } else if (strcmp(name, "method") == 0) {
            bad = cli_parse_method_list(name, v, o->methods, BENCH_MAX_LIST, &o->nm);
            have_method = 1;
        } else if (strcmp(name, "shape") == 0) {
            uint64_t n;
            if (cli_shape_option(v, 1, &o->shape, &n) != 0) return EXIT_USAGE;
            o->have_shape = 1;
        } else if (strcmp(name, "axis") == 0) {
            if (cli_parse_axis(v, &o->axis) != 0)
                return cli_usage_error("--axis '%s': not an axis (0, 1, ..., or -1 for the last)",
                                       v);
            o->have_axis = 1;
        } else if (strcmp(name, "segments") == 0) {
            if (cli_parse_segments_spec(v, &o->seg_min, &o->seg_max) != 0)
                return cli_usage_error("--segments '%s': expected random:MIN:MAX, segment lengths "
                                       "from MIN to MAX elements (0 <= MIN <= MAX, MAX >= 1)",
                                       v);
            o->have_segments = 1;
        } else if (strcmp(name, "stages") == 0)
            bad = cli_parse_int_list(name, v, 1, 8, o->stages, BENCH_MAX_STAGES, &o->nstages);
        else if (strcmp(name, "dtype") == 0) {
            bad = cli_parse_dtype_list(name, v, o->dtypes, BENCH_MAX_LIST, &o->nd);
            have_dtype = 1;
        } else if (strcmp(name, "op") == 0)
            bad = cli_parse_op_list(name, v, o->ops, BENCH_MAX_LIST, &o->nops);
        else if (strcmp(name, "mode") == 0)
            bad = cli_parse_mode_list(name, v, o->modes, BENCH_MAX_LIST, &o->nmodes);
        else if (strcmp(name, "offset") == 0) {
            if (cli_parse_int(v, 0, 7, &o->offset) != 0)
                return cli_usage_error("--offset '%s': expected 0 .. 7 elements (below 16 bytes)",
                                       v);
        } else if (strcmp(name, "data") == 0) {
            bad = cli_parse_data_list(name, v, o->data, BENCH_MAX_LIST, &o->ndata);
            o->have_data = 1;
        } else if (strcmp(name, "batches") == 0) {
            if (cli_parse_int(v, 3, 64, &o->batches) != 0)
                return cli_usage_error("--batches '%s': expected 3 .. 64", v);
        } else if (strcmp(name, "threads") == 0) {
            if (cli_parse_int(v, 0, 1 << 16, &o->threads) != 0)
                return cli_usage_error("--threads '%s': expected 0 (every CPU) .. 65536", v);
        } else if (strcmp(name, "json") == 0)
            *json = v;
        else if (strcmp(name, "csv") == 0)
            *csv = v;
        else if (strcmp(name, "device") == 0) {
            if (cli_parse_device(v, device, ordinal) != 0)
                return cli_usage_error("--device '%s': expected auto, cpu, gpu or gpu:K", v);
        }
        if (bad) return EXIT_USAGE;
    }
    int batch = o->have_shape || o->have_axis || o->have_segments;
    if (batch) {
        const char *what = o->have_segments ? "--segments" : "--axis";
        if (o->have_segments && (o->have_shape || o->have_axis))
            return cli_usage_error("--segments cannot be combined with --shape or --axis");
        if (!o->have_segments && !(o->have_shape && o->have_axis))
            return cli_usage_error("--shape and --axis go together: --shape 1024x256 --axis 1");
        if (o->have_shape && have_n)
            return cli_usage_error("--shape gives the element count: drop --n");
        if (have_method)
            return cli_usage_error("%s times the canonical method: drop --method", what);
        if (o->cold || o->nstages > 0)
            return cli_usage_error("%s does not take --%s", what, o->cold ? "cold" : "stages");
        if (o->have_shape) {
            int nd = o->shape.ndim;
            if (o->axis < -nd || o->axis >= nd)
                return cli_usage_error("--axis %d is out of range for --shape of %d dimension%s",
                                       o->axis, nd, nd == 1 ? "" : "s");
            if (o->axis < 0) o->axis += nd;
            o->ns[0] = 1;
            for (int d = 0; d < nd; d++) o->ns[0] *= o->shape.extent[d];
            o->nn = 1;
        }
        if (o->nops == 0) {
            o->ops[0] = COOPREDUCE_OP_SUM;
            o->nops = 1;
        }
        if (!have_dtype) o->nd = 1; /* f32 */
    } else if (o->nops == 0) {
        /* The method sweep holds each method against CUB, which it runs on these three. */
        for (int d = 0; d < o->nd; d++)
            if (o->dtypes[d] != COOPREDUCE_FLOAT32 && o->dtypes[d] != COOPREDUCE_FLOAT64 &&
                o->dtypes[d] != COOPREDUCE_INT32)
                return cli_usage_error("--dtype %s: the method sweep takes f32, f64 and i32 "
                                       "(--op takes every dtype)",
                                       coopreduce_dtype_name(o->dtypes[d]));
    } else if (!have_dtype) {
        o->nd = 2; /* f32, f64 */
    }
    if (o->nmodes > 1 || o->modes[0] != COOPREDUCE_MODE_DETERMINISTIC) {
        if (o->nops == 0) return cli_usage_error("--mode applies to --op only");
    }
    if (o->offset) {
        if (o->nops == 0 && !batch)
            return cli_usage_error("--offset applies to --op, --shape and --segments only");
        for (int d = 0; d < o->nd; d++)
            if ((size_t)o->offset * coopreduce_dtype_size(o->dtypes[d]) >= 16)
                return cli_usage_error("--offset %d with --dtype %s: %d bytes, not below 16 (a "
                                       "16-byte boundary further is aligned again)",
                                       o->offset, coopreduce_dtype_name(o->dtypes[d]),
                                       o->offset * (int)coopreduce_dtype_size(o->dtypes[d]));
    }
    if (o->have_data) {
        if (o->nops == 0 && !batch)
            return cli_usage_error("--data applies to --op, --shape and --segments only");
        for (int g = 0; g < o->ndata; g++)
            for (int d = 0; d < o->nd; d++)
                if (!cr_gen_supports(o->data[g], o->dtypes[d]))
                    return cli_usage_error("--data %s: float dtypes only (--dtype %s)",
                                           cr_gen_name(o->data[g]),
                                           coopreduce_dtype_name(o->dtypes[d]));
    }
    return EXIT_OK;
}

int cmd_bench(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) return cli_print_help("bench");
    for (int i = 1; i < argc; i++) /* a run of its own, under mpirun (distributed.c) */
        if (strcmp(argv[i], "--distributed") == 0 || strncmp(argv[i], "--distributed=", 14) == 0)
            return bench_distributed(argc, argv);
    bench_options o;
    cli_device_kind device;
    int ordinal;
    const char *json = NULL, *csv = NULL;
    int rc = parse_bench_options(argc, argv, &o, &device, &ordinal, &json, &csv);
    if (rc != EXIT_OK) return rc;

    int gpus = 0;
    coopreduce_gpu_count(&gpus);
    int cpu = device == CLI_DEVICE_CPU;
    if (device == CLI_DEVICE_AUTO && gpus == 0) {
        cpu = 1;
        fprintf(stderr, "bench: no GPU found, benchmarking the CPU path\n");
    }
    /* refused before the --json / --csv files are opened: a usage error leaves no file */
    if (cpu && o.cold) {
        cli_error("--cold flushes a GPU's L2 cache: the CPU benchmark does not take it");
        return EXIT_USAGE;
    }
    cr_outfile_remove_on_signals();
    if (bench_open_files(json, csv) != 0) return EXIT_ERROR;
    char device_id[64];
    if (cpu) {
        if (o.nn == 0) {
            static const uint64_t d[] = {UINT64_C(1) << 20, UINT64_C(1) << 24, UINT64_C(1) << 28};
            o.nn = o.quick ? 2 : 3;
            memcpy(o.ns, d, sizeof d);
        }
        snprintf(device_id, sizeof device_id, "cpu");
        int batch = o.have_shape || o.have_segments;
        rc = batch ? bench_batch_cpu(&o) : o.nops ? bench_ops_cpu(&o) : bench_cpu(&o);
    } else {
        if (!CLI_BUILT_WITH_CUDA || ordinal >= gpus) {
            if (!CLI_BUILT_WITH_CUDA)
                cli_error("this build has no GPU path (built without CUDA)");
            else
                cli_error("no GPU with ordinal %d (%d found)", ordinal, gpus);
            bench_abort_files();
            return EXIT_ERROR;
        }
        if (o.nn == 0) {
            if (o.quick) {
                for (int e = 16; e <= 28; e += 4) o.ns[o.nn++] = UINT64_C(1) << e;
            } else {
                for (int e = 10; e <= 28; e += 2) o.ns[o.nn++] = UINT64_C(1) << e;
            }
        }
        snprintf(device_id, sizeof device_id, "gpu:%d", ordinal);
        int batch = o.have_shape || o.have_segments;
        rc = batch    ? bench_batch_gpu(ordinal, &o)
             : o.nops ? bench_ops_gpu(ordinal, &o)
                      : bench_gpu(ordinal, &o);
    }
    if (rc) {
        bench_abort_files();
        return EXIT_ERROR;
    }
    printf("### Sweep\n\n");
    bench_print_table(stdout);
    bench_print_exact_ratios(stdout);
    if (bench_write_files(device_id) != 0) return EXIT_ERROR;
    return cli_finish_stdout();
}
