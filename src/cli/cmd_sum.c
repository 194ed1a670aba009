/* cmd_sum.c — `coopreduce sum`: its options, the checks between them, the inputs, and the run
 * from device to report. */
#include <stdio.h>
#include <string.h>

#include "../core/dtype.h"
#include "args.h"
#include "commands.h"
#include "distributed.h"
#include "help.h"
#include "input.h"
#include "messages.h"
#include "sum.h"

/* The library's limit for 32-bit integer sums (a 64-bit total cannot overflow below it). */
#define INT32_MAX_N (UINT64_C(1) << 32)

/* The first GPU-only option set in `o` ("--stages", ...), or NULL. */
static const char *gpu_only_option(const sum_options *o)
{
    if (o->stages > 0) return "--stages";
    if (o->grid_blocks >= 0) return "--grid-blocks";
    if (o->disabled_features & COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH) return "--no-cooperative";
    if (o->disabled_features & COOPREDUCE_FEATURE_CLUSTERS) return "--no-clusters";
    return NULL;
}

/* Loads the input x (which = 0) or dot's y (which = 1): generated (y from seed + 1), raw, or
 * .npy, "-" being standard input. Prints its own error. */
static int load_input(const sum_options *o, int which, sum_input *in)
{
    memset(in, 0, sizeof *in);
    if (o->have_gen) {
        uint64_t seed = o->seed + (uint64_t)which;
        snprintf(in->description, sizeof in->description, "gen %s, seed %llu%s",
                 cr_gen_name(o->gen_kind), (unsigned long long)seed, which ? " (--seed + 1)" : "");
        if (cli_generate(o->gen_kind, o->n, seed, o->dtype, &in->array) != EXIT_OK)
            return EXIT_ERROR;
        if (o->have_shape) {
            in->array.ndim = o->shape.ndim;
            memcpy(in->array.shape, o->shape.extent, sizeof o->shape.extent);
        }
        return EXIT_OK;
    }
    const char *path = which ? o->y_path : o->raw_path != NULL ? o->raw_path : o->npy_path;
    const char *name = cli_input_name(path);
    if (o->raw_path != NULL) {
        snprintf(in->description, sizeof in->description, "%s (raw)", name);
        if (cli_read_array(path, 1, o->dtype, o->max_input, &in->array) != EXIT_OK)
            return EXIT_ERROR;
        uint64_t n = 1;
        for (int d = 0; o->have_shape && d < o->shape.ndim; d++) n *= o->shape.extent[d];
        if (o->have_shape && n != in->array.n) {
            char shape[700];
            cli_format_shape(&o->shape, shape, sizeof shape);
            cli_error("--shape %s has %llu elements, %s holds %llu", shape, (unsigned long long)n,
                      name, (unsigned long long)in->array.n);
            cr_npy_free(&in->array);
            return EXIT_ERROR;
        }
        if (o->have_shape) {
            in->array.ndim = o->shape.ndim;
            memcpy(in->array.shape, o->shape.extent, sizeof o->shape.extent);
        }
        return EXIT_OK;
    }
    if (cli_read_array(path, 0, o->dtype, o->max_input, &in->array) != EXIT_OK) return EXIT_ERROR;
    if (o->have_dtype && o->dtype != in->array.dtype) {
        cli_error("--dtype %s does not match %s, which holds %s", coopreduce_dtype_name(o->dtype),
                  name, coopreduce_dtype_name(in->array.dtype));
        cr_npy_free(&in->array);
        return EXIT_USAGE;
    }
    char shape[700];
    cli_describe_shape(&in->array, shape, sizeof shape);
    snprintf(in->description, sizeof in->description, "%s, shape %s%s", name, shape,
             in->array.fortran_order ? ", Fortran order" : "");
    return EXIT_OK;
}

/* Both inputs of a dot: the same dtype and element count. */
static int check_dot_inputs(const sum_options *o, const sum_input *x, const sum_input *y)
{
    const char *xs =
        o->have_gen ? "x" : cli_input_name(o->raw_path != NULL ? o->raw_path : o->npy_path);
    const char *ys = o->have_gen ? "y" : cli_input_name(o->y_path);
    if (x->array.dtype != y->array.dtype) {
        cli_error("dot needs two arrays of the same dtype: %s holds %s, %s holds %s", xs,
                  coopreduce_dtype_name(x->array.dtype), ys, coopreduce_dtype_name(y->array.dtype));
        return EXIT_ERROR;
    }
    if (x->array.n != y->array.n) {
        cli_error("dot needs two arrays of the same length: %s has %llu elements, %s has %llu", xs,
                  (unsigned long long)x->array.n, ys, (unsigned long long)y->array.n);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* The options of `argv` into *o, with its defaults; the positionals counted, and whether --y
 * named dot's second input. EXIT_OK, or a usage error printed. */
static int parse_sum_options(int argc, char **argv, sum_options *o, int *positionals,
                             int *have_y_option)
{
    static const cli_option specs[] = {
        {"raw", 1},
        {"gen", 1},
        {"n", 1},
        {"seed", 1},
        {"dtype", 1},
        {"device", 1},
        {"threads", 1},
        {"repeat", 1},
        {"json", 0},
        {"method", 1},
        {"stages", 1},
        {"grid-blocks", 1},
        {"no-cooperative", 0},
        {"no-clusters", 0},
        {"op", 1},
        {"y", 1},
        {"mode", 1},
        {"narrow", 0},
        {"max-input", 1},
        {"axis", 1},
        {"keepdims", 0},
        {"segments", 1},
        {"shape", 1},
        {"out", 1},
        {"force", 0},
        {"distributed", 1},
        {"split", 1},
        {NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->dtype = COOPREDUCE_FLOAT32;
    o->op = COOPREDUCE_OP_SUM;
    o->mode = COOPREDUCE_MODE_DETERMINISTIC;
    o->device = CLI_DEVICE_AUTO;
    o->device_text = "auto";
    o->repeat = SUM_DEFAULT_REPEAT;
    o->max_input = CLI_DEFAULT_MAX_INPUT;
    o->method = COOPREDUCE_METHOD_CANONICAL;
    o->grid_blocks = -1;
    *positionals = 0;
    *have_y_option = 0;

    cli_args args;
    cli_args_init(&args, argc, argv, specs);
    const cli_option *spec;
    const char *value;
    int kind;
    while ((kind = cli_args_next(&args, &spec, &value)) != CLI_ARG_END) {
        if (kind == CLI_ARG_ERROR) return EXIT_USAGE;
        if (kind == CLI_ARG_POSITIONAL) {
            if (*positionals == 2)
                return cli_usage_error("sum takes at most two input files, the second for --op dot "
                                       "(got '%s', '%s' and '%s')",
                                       o->npy_path, o->y_path, value);
            if ((*positionals)++ == 0)
                o->npy_path = value;
            else
                o->y_path = value;
            continue;
        }
        const char *name = spec->name;
        if (strcmp(name, "raw") == 0) {
            o->raw_path = value;
        } else if (strcmp(name, "gen") == 0) {
            if (cr_gen_parse(value, &o->gen_kind) != 0)
                return cli_usage_error("--gen '%s': unknown kind (" CR_GEN_KINDS ")", value);
            o->have_gen = 1;
        } else if (strcmp(name, "n") == 0) {
            if (cli_parse_count(value, &o->n) != 0)
                return cli_usage_error("--n '%s': not an element count (" CLI_COUNT_EXAMPLES ")",
                                       value);
            o->have_n = 1;
        } else if (strcmp(name, "seed") == 0) {
            if (cli_parse_seed(value, &o->seed) != 0)
                return cli_usage_error("--seed '%s': not an unsigned 64-bit integer", value);
            o->have_seed = 1;
        } else if (strcmp(name, "dtype") == 0) {
            if (cr_dtype_parse(value, &o->dtype) != 0)
                return cli_usage_error("--dtype '%s': unsupported (" CR_DTYPE_CHOICES ")", value);
            o->have_dtype = 1;
        } else if (strcmp(name, "op") == 0) {
            if (coopreduce_op_from_name(value, &o->op) != COOPREDUCE_SUCCESS) {
                char names[256];
                cli_op_names(names, sizeof names);
                return cli_usage_error("--op '%s': unknown operation (%s)", value, names);
            }
        } else if (strcmp(name, "y") == 0) {
            o->y_path = value;
            *have_y_option = 1;
        } else if (strcmp(name, "mode") == 0) {
            if (coopreduce_mode_from_name(value, &o->mode) != COOPREDUCE_SUCCESS)
                return cli_usage_error("--mode '%s': unknown mode (deterministic or exact)", value);
        } else if (strcmp(name, "narrow") == 0) {
            o->narrow = 1;
        } else if (strcmp(name, "device") == 0) {
            if (cli_parse_device(value, &o->device, &o->ordinal) != 0)
                return cli_usage_error("--device '%s': expected auto, cpu, gpu or gpu:K", value);
            o->device_text = value;
        } else if (strcmp(name, "threads") == 0) {
            if (cli_parse_int(value, 0, 1 << 16, &o->threads) != 0)
                return cli_usage_error("--threads '%s': expected 0 (every CPU) .. 65536", value);
        } else if (strcmp(name, "repeat") == 0) {
            if (cli_parse_int(value, 1, SUM_MAX_REPEAT, &o->repeat) != 0)
                return cli_usage_error("--repeat '%s': expected 1 .. %d", value, SUM_MAX_REPEAT);
        } else if (strcmp(name, "json") == 0) {
            o->json = 1;
        } else if (strcmp(name, "method") == 0) {
            if (coopreduce_method_from_name(value, &o->method) != COOPREDUCE_SUCCESS) {
                char names[512];
                cli_method_names(names, sizeof names);
                return cli_usage_error("--method '%s': unknown method (one of: %s)", value, names);
            }
        } else if (strcmp(name, "stages") == 0) {
            if (cli_parse_int(value, 1, 8, &o->stages) != 0)
                return cli_usage_error("--stages '%s': expected 1 .. 8", value);
        } else if (strcmp(name, "grid-blocks") == 0) {
            if (cli_parse_int(value, 0, 0x7fffffff, &o->grid_blocks) != 0)
                return cli_usage_error("--grid-blocks '%s': expected 0 (automatic) .. 2147483647",
                                       value);
        } else if (strcmp(name, "no-cooperative") == 0) {
            o->disabled_features |= COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH;
        } else if (strcmp(name, "no-clusters") == 0) {
            o->disabled_features |= COOPREDUCE_FEATURE_CLUSTERS;
        } else if (strcmp(name, "axis") == 0) {
            if (cli_parse_axis(value, &o->axis) != 0)
                return cli_usage_error("--axis '%s': not an axis (0, 1, ..., or -1 for the last)",
                                       value);
            o->have_axis = 1;
        } else if (strcmp(name, "keepdims") == 0) {
            o->keepdims = 1;
        } else if (strcmp(name, "segments") == 0) {
            o->segments_path = value;
        } else if (strcmp(name, "shape") == 0) {
            uint64_t n;
            if (cli_shape_option(value, 0, &o->shape, &n) != 0) return EXIT_USAGE;
            o->have_shape = 1;
            o->n = n;
        } else if (strcmp(name, "out") == 0) {
            o->out_path = value;
        } else if (strcmp(name, "force") == 0) {
            o->force = 1;
        } else if (strcmp(name, "distributed") == 0) {
            if (cli_parse_distributed(value, &o->distributed) != 0)
                return cli_usage_error("--distributed '%s': expected mpi or nccl", value);
        } else if (strcmp(name, "split") == 0) {
            o->split_text = value;
        } else if (strcmp(name, "max-input") == 0) {
            if (cli_parse_size(value, &o->max_input) != 0)
                return cli_usage_error("--max-input '%s': not a size in bytes (e.g. 512M, 16G, "
                                       "2^34)",
                                       value);
        }
    }
    return EXIT_OK;
}

/* The options together: one input, what applies to what. EXIT_OK, or the error printed (a
 * usage error, or EXIT_ERROR for a sum the library would refuse). */
static int check_sum_options(const sum_options *o, int positionals, int have_y_option)
{
    int is_dot = o->op == COOPREDUCE_OP_DOT;
    if (have_y_option && positionals == 2)
        return cli_usage_error("dot takes two inputs: X.npy Y.npy, or one input and --y FILE");
    if (!have_y_option && positionals == 2 && (o->raw_path != NULL || o->have_gen))
        return cli_usage_error("sum takes one input: FILE.npy, --raw FILE or --gen KIND");
    int sources = (o->npy_path != NULL) + (o->raw_path != NULL) + o->have_gen;
    if (sources == 0)
        return cli_usage_error("sum needs an input: FILE.npy, --raw FILE or --gen KIND "
                               "(see coopreduce sum --help)");
    if (sources > 1)
        return cli_usage_error("sum takes one input: FILE.npy, --raw FILE or --gen KIND");
    if (o->y_path != NULL && !is_dot)
        return cli_usage_error("a second input ('%s') applies to --op dot only", o->y_path);
    if (o->y_path != NULL && o->have_gen)
        return cli_usage_error("--op dot --gen generates y itself (from --seed + 1): drop '%s'",
                               o->y_path);
    if (is_dot && o->y_path == NULL && !o->have_gen)
        return cli_usage_error("--op dot needs two inputs: X.npy Y.npy, --raw X --y Y, or --gen");
    if (o->have_gen && o->have_n && o->have_shape)
        return cli_usage_error("--n and --shape both give the element count: give one");
    if (o->have_gen && !o->have_n && !o->have_shape)
        return cli_usage_error("--gen needs --n N (or --shape R,C,...)");
    if (o->have_shape && !o->have_gen && o->raw_path == NULL)
        return cli_usage_error("--shape applies to --gen and --raw only (a .npy file has its own)");
    int batch = o->have_axis || o->segments_path != NULL;
    if (o->have_axis && o->segments_path != NULL)
        return cli_usage_error("--axis and --segments cannot be combined: give one");
    if (o->keepdims && !o->have_axis) return cli_usage_error("--keepdims applies only to --axis");
    if (o->out_path != NULL && !batch)
        return cli_usage_error("--out applies only to --axis and --segments (a whole-array "
                               "reduction prints its one result)");
    if (o->force && o->out_path == NULL) return cli_usage_error("--force applies only to --out");
    if (o->segments_path != NULL && strcmp(o->segments_path, "-") == 0)
        return cli_usage_error("--segments needs a file: standard input holds the data at most");
    if (batch && o->method != COOPREDUCE_METHOD_CANONICAL)
        return cli_usage_error("--%s needs the canonical method (drop --method)",
                               o->have_axis ? "axis" : "segments");
    if (o->split_text != NULL && !o->distributed)
        return cli_usage_error("--split applies only to --distributed");
    if (o->distributed) {
        if (!o->have_gen)
            return cli_usage_error("--distributed takes --gen KIND --n N: each rank generates its "
                                   "own shard of the generated stream");
        if (batch || o->have_shape)
            return cli_usage_error("--distributed reduces the whole array (no --axis, "
                                   "--segments or --shape)");
        if (o->method != COOPREDUCE_METHOD_CANONICAL)
            return cli_usage_error("--distributed needs the canonical method (drop --method)");
        if (gpu_only_option(o) != NULL)
            return cli_usage_error("%s does not apply to --distributed", gpu_only_option(o));
    }
    if (!o->have_gen && (o->have_n || o->have_seed))
        return cli_usage_error("--%s applies only to --gen", o->have_n ? "n" : "seed");
    if (o->raw_path != NULL && !o->have_dtype)
        return cli_usage_error("--raw needs --dtype (" CR_DTYPE_CHOICES ")");
    const char *x_path = o->raw_path != NULL ? o->raw_path : o->npy_path;
    if (x_path != NULL && o->y_path != NULL && strcmp(x_path, "-") == 0 &&
        strcmp(o->y_path, "-") == 0)
        return cli_usage_error("standard input ('-') can be only one of the two inputs");
    if (o->stages > 0 && o->method != COOPREDUCE_METHOD_PIPELINE)
        return cli_usage_error("--stages applies only to --method pipeline");
    const char *method_name = coopreduce_method_name(o->method);
    const char *gpu_option = gpu_only_option(o);
    /* Asked for the CPU: a GPU method or option contradicts it; nothing is switched silently. */
    if (o->device == CLI_DEVICE_CPU && o->method != COOPREDUCE_METHOD_CANONICAL)
        return cli_usage_error("method %s runs on a GPU only (the CPU computes the canonical "
                               "order: drop --method, or use --device gpu)",
                               method_name);
    if (o->device == CLI_DEVICE_CPU && gpu_option != NULL)
        return cli_usage_error("%s applies to a GPU only, not to --device cpu", gpu_option);
    if (o->have_gen && (o->dtype == COOPREDUCE_INT32 || o->dtype == COOPREDUCE_UINT32) &&
        o->op == COOPREDUCE_OP_SUM && o->n > INT32_MAX_N) {
        /* Said before generating gigabytes; the library refuses such a sum with this message. */
        cli_error("%s sums are limited to 2^32 elements (where a 64-bit result cannot "
                  "overflow); got n = %llu",
                  coopreduce_dtype_name(o->dtype), (unsigned long long)o->n);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

int cmd_sum(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) return cli_print_help("sum");
    sum_options o;
    int positionals, have_y_option;
    int rc = parse_sum_options(argc, argv, &o, &positionals, &have_y_option);
    if (rc == EXIT_OK) rc = check_sum_options(&o, positionals, have_y_option);
    if (rc != EXIT_OK) return rc;
    if (o.distributed) return sum_distributed(&o);
    int is_dot = o.op == COOPREDUCE_OP_DOT;
    const char *gpu_option = gpu_only_option(&o);

    int batch = o.have_axis || o.segments_path != NULL;

    /* The output first, as gen does: an existing file without --force is refused before any
     * input is read. */
    cr_outfile out;
    memset(&out, 0, sizeof out);
    if (o.out_path != NULL) {
        char err[ERRLEN];
        cr_outfile_remove_on_signals();
        if (cr_outfile_open(&out, o.out_path, o.force, err, sizeof err) != 0) {
            cli_error("%s", err);
            return EXIT_ERROR;
        }
    }

    /* The inputs first: a file error, a dtype the operation does not take or a dot mismatch is
     * reported before any device is touched. */
    sum_input in, yin;
    memset(&yin, 0, sizeof yin);
    rc = load_input(&o, 0, &in);
    if (rc == EXIT_OK && (is_dot || o.y_path != NULL)) {
        rc = load_input(&o, 1, &yin);
        if (rc == EXIT_OK) rc = check_dot_inputs(&o, &in, &yin);
    }
    result_kind rk = {o.op, in.array.dtype, in.array.dtype, 0};
    if (rc == EXIT_OK) {
        rk.rsize = coopreduce_op_result_size(o.op, rk.dtype, o.narrow, &rk.rdtype);
        if (o.narrow && !cr_dtype_is_half(rk.dtype)) {
            cli_error("--narrow applies to float16 and bfloat16 input only (this is %s)",
                      coopreduce_dtype_name(rk.dtype));
            rc = EXIT_USAGE;
        } else if (rk.rsize == 0) {
            cli_error("%s of %s is not supported: sumsq, norm2 and dot take floating-point "
                      "input",
                      coopreduce_op_name(o.op), coopreduce_dtype_name(rk.dtype));
            rc = EXIT_ERROR;
        } else if (o.out_path != NULL && rk.rdtype == COOPREDUCE_BFLOAT16) {
            cli_error("the results are bfloat16 (--narrow), which a .npy file cannot hold: NumPy "
                      "has no bfloat16 type (drop --narrow for float32 results)");
            rc = EXIT_ERROR;
        }
    }
    sum_batch b;
    memset(&b, 0, sizeof b);
    if (rc == EXIT_OK && batch) rc = sum_batch_prepare(&o, &in, is_dot ? &yin : NULL, &b);
    cli_device dev;
    memset(&dev, 0, sizeof dev);
    if (rc == EXIT_OK) rc = cli_open_device(&dev, o.device, o.ordinal, o.threads, o.device_text);
    if (rc == EXIT_OK && !dev.is_gpu &&
        (o.method != COOPREDUCE_METHOD_CANONICAL || gpu_option != NULL)) {
        /* --device auto found no usable GPU. */
        if (o.method != COOPREDUCE_METHOD_CANONICAL)
            cli_error("method %s runs on a GPU only (%s)", coopreduce_method_name(o.method),
                      dev.auto_note);
        else
            cli_error("%s applies to a GPU only (%s)", gpu_option, dev.auto_note);
        rc = EXIT_ERROR;
    }
    if (rc == EXIT_OK) rc = sum_configure_handle(&dev, &o);
    if (rc == EXIT_OK && dev.is_gpu) rc = sum_configure_gpu(&dev, &o);

    uint64_t n = in.array.n;
    sum_result res;
    memset(&res, 0, sizeof res);
    cr_npy_array *y = is_dot ? &yin.array : NULL;
    /* auto may fall back to the CPU for what the GPU cannot compute yet, but not when a GPU
     * method or option was asked for. */
    int may_fall_back = o.device == CLI_DEVICE_AUTO && o.method == COOPREDUCE_METHOD_CANONICAL &&
                        gpu_option == NULL;
    if (batch) {
        if (rc == EXIT_OK)
            rc = sum_batch_run(&dev, &o, &rk, &b, &in.array, y, may_fall_back, &out);
        else if (o.out_path != NULL)
            cr_outfile_abort(&out);
        sum_batch_free(&b);
        cr_npy_free(&in.array);
        cr_npy_free(&yin.array);
        coopreduce_status st = coopreduce_destroy(dev.handle);
        if (rc == EXIT_OK && st != COOPREDUCE_SUCCESS) {
            cli_error("releasing the device failed: %s", cli_library_message(NULL, st));
            rc = EXIT_ERROR;
        }
        return rc == EXIT_OK ? cli_finish_stdout() : rc;
    }
    if (rc == EXIT_OK && dev.is_gpu) {
        rc = sum_run_gpu(&dev, &rk, &in.array, y, o.method, o.repeat, may_fall_back, &res);
        if (rc == RUN_FALLBACK) {
            rc = sum_fall_back_to_cpu(&dev, &o, &res);
            if (rc == EXIT_OK) rc = sum_run_cpu(&dev, &rk, &in.array, y, o.repeat, &res);
        }
    } else if (rc == EXIT_OK) {
        rc = sum_run_cpu(&dev, &rk, &in.array, y, o.repeat, &res);
    }
    cr_npy_free(&in.array);
    cr_npy_free(&yin.array);

    coopreduce_status st = coopreduce_destroy(dev.handle);
    if (rc == EXIT_OK && st != COOPREDUCE_SUCCESS) {
        cli_error("releasing the device failed: %s", cli_library_message(NULL, st));
        rc = EXIT_ERROR;
    }
    if (rc != EXIT_OK) return rc;
    sum_print_report(&o, &dev, &in, is_dot ? &yin : NULL, &rk, n, &res);
    rc = cli_finish_stdout();
    if (rc == EXIT_OK && !sum_result_fits(&rk, res.bits)) {
        cli_error("the exact %s sum does not fit in 64 bits: the value printed is the exact "
                  "128-bit sum",
                  coopreduce_dtype_name(rk.dtype));
        return EXIT_ERROR;
    }
    return rc;
}
