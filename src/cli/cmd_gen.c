/* cmd_gen.c — `coopreduce gen`: generated data written to a .npy or raw file, whole or not at
 * all (outfile.h says how). */
#include <stdio.h>
#include <string.h>

#include "../core/dtype.h"
#include "args.h"
#include "commands.h"
#include "help.h"
#include "input.h"
#include "messages.h"
#include "outfile.h"
#include "shape.h"

int cmd_gen(int argc, char **argv)
{
    static const cli_option specs[] = {
        {"n", 1},   {"shape", 1},   {"seed", 1},  {"dtype", 1},
        {"out", 1}, {"raw-out", 1}, {"force", 0}, {NULL, 0},
    };
    if (cli_wants_help(argc, argv)) return cli_print_help("gen");
    const char *kind_name = NULL, *out_path = NULL, *raw_out_path = NULL;
    uint64_t n = 0, seed = 1;
    int have_n = 0, have_shape = 0, force = 0;
    cli_shape shape = {0};
    coopreduce_dtype dtype = COOPREDUCE_FLOAT32;

    cli_args args;
    cli_args_init(&args, argc, argv, specs);
    const cli_option *spec;
    const char *value;
    int kind;
    while ((kind = cli_args_next(&args, &spec, &value)) != CLI_ARG_END) {
        if (kind == CLI_ARG_ERROR) return EXIT_USAGE;
        if (kind == CLI_ARG_POSITIONAL) {
            if (kind_name != NULL)
                return cli_usage_error("gen takes one KIND (got '%s' and '%s')", kind_name, value);
            kind_name = value;
        } else if (strcmp(spec->name, "n") == 0) {
            if (cli_parse_count(value, &n) != 0)
                return cli_usage_error("--n '%s': not an element count (" CLI_COUNT_EXAMPLES ")",
                                       value);
            have_n = 1;
        } else if (strcmp(spec->name, "shape") == 0) {
            if (cli_shape_option(value, 0, &shape, &n) != 0) return EXIT_USAGE;
            have_shape = 1;
        } else if (strcmp(spec->name, "seed") == 0) {
            if (cli_parse_seed(value, &seed) != 0)
                return cli_usage_error("--seed '%s': not an unsigned 64-bit integer", value);
        } else if (strcmp(spec->name, "dtype") == 0) {
            if (cr_dtype_parse(value, &dtype) != 0)
                return cli_usage_error("--dtype '%s': unsupported (" CR_DTYPE_CHOICES ")", value);
        } else if (strcmp(spec->name, "out") == 0) {
            out_path = value;
        } else if (strcmp(spec->name, "raw-out") == 0) {
            raw_out_path = value;
        } else if (strcmp(spec->name, "force") == 0) {
            force = 1;
        }
    }
    cr_gen_kind gen_kind;
    if (kind_name == NULL) return cli_usage_error("gen needs a KIND: " CR_GEN_KINDS);
    if (cr_gen_parse(kind_name, &gen_kind) != 0)
        return cli_usage_error("gen '%s': unknown kind (" CR_GEN_KINDS ")", kind_name);
    if (have_n && have_shape)
        return cli_usage_error("--n and --shape both give the element count: give one");
    if (!have_n && !have_shape) return cli_usage_error("gen needs --n N (or --shape R,C,...)");
    if (!have_shape) { /* a 1-D array */
        shape.ndim = 1;
        shape.extent[0] = n;
    }
    if (!cr_gen_supports(gen_kind, dtype))
        return cli_usage_error("gen %s: float dtypes only (f16, bf16, f32, f64)", kind_name);
    if ((out_path != NULL) == (raw_out_path != NULL))
        return cli_usage_error("gen needs exactly one of --out FILE.npy and --raw-out FILE");
    if (out_path != NULL && dtype == COOPREDUCE_BFLOAT16)
        return cli_usage_error("NumPy has no bfloat16 type, so a .npy file cannot hold it: use "
                               "--raw-out FILE");
    const char *path = out_path != NULL ? out_path : raw_out_path;

    /* The output is opened first: an existing file without --force is refused before the
     * data is generated. */
    char err[ERRLEN];
    cr_outfile out;
    cr_outfile_remove_on_signals();
    int orc = cr_outfile_open(&out, path, force, err, sizeof err);
    if (orc != 0) {
        cli_error("%s", err);
        return EXIT_ERROR;
    }
    cr_npy_array a;
    if (cli_generate(gen_kind, n, seed, dtype, &a) != EXIT_OK) {
        cr_outfile_abort(&out);
        return EXIT_ERROR;
    }
    int wrc = out_path != NULL
                  ? cr_npy_write_stream_shape(out.f, path, a.data, shape.ndim, shape.extent, 0,
                                              dtype, err, sizeof err)
                  : cr_raw_write_stream(out.f, path, a.data, n, dtype, err, sizeof err);
    cr_npy_free(&a);
    /* Standard output carries the data: the closing line goes to stderr. */
    FILE *report = cr_outfile_is_stdout(&out) ? stderr : stdout;
    if (wrc != 0) {
        cr_outfile_abort(&out);
        cli_error("%s", err);
        return EXIT_ERROR;
    }
    if (cr_outfile_commit(&out, path, err, sizeof err) != 0) {
        cli_error("%s", err);
        return EXIT_ERROR;
    }
    char shape_text[700] = "";
    if (have_shape) {
        char s[680];
        cli_format_shape(&shape, s, sizeof s);
        snprintf(shape_text, sizeof shape_text, "shape %s, ", s);
    }
    fprintf(report, "wrote %llu %s elements (%s%s, seed %llu) to %s%s\n", (unsigned long long)n,
            coopreduce_dtype_name(dtype), shape_text, cr_gen_name(gen_kind),
            (unsigned long long)seed, path, out_path != NULL ? "" : " (raw)");
    return cli_finish_stdout();
}
