/* args.c — option scanning and value parsing for every command (args.h). */
#include "args.h"

#include <stdio.h>
#include <string.h>

#include "../core/dtype.h"
#include "messages.h"

/* ================================================================ options */

void cli_args_init(cli_args *a, int argc, char **argv, const cli_option *specs)
{
    memset(a, 0, sizeof *a);
    a->argc = argc;
    a->argv = argv;
    a->next = 1;
    a->specs = specs;
}

int cli_args_next(cli_args *a, const cli_option **spec, const char **value)
{
    *spec = NULL;
    *value = NULL;
    for (;;) {
        if (a->next >= a->argc) return CLI_ARG_END;
        const char *arg = a->argv[a->next++];
        if (!a->options_ended && strcmp(arg, "--") == 0) {
            a->options_ended = 1;
            continue;
        }
        if (a->options_ended || arg[0] != '-' || arg[1] == '\0') {
            *value = arg;
            return CLI_ARG_POSITIONAL;
        }
        if (arg[1] != '-') {
            cli_usage_error("unknown option '%s' (options are spelled --name)", arg);
            return CLI_ARG_ERROR;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        for (int k = 0; a->specs[k].name != NULL; k++) {
            const cli_option *s = &a->specs[k];
            if (strlen(s->name) != name_len || strncmp(s->name, name, name_len) != 0) continue;
            if (k < CLI_MAX_OPTIONS && a->seen[k]++) {
                cli_usage_error("option --%s given twice (each option is given at most once)",
                                s->name);
                return CLI_ARG_ERROR;
            }
            *spec = s;
            if (!s->takes_value) {
                if (eq != NULL) {
                    cli_usage_error("option --%s takes no value", s->name);
                    return CLI_ARG_ERROR;
                }
                return CLI_ARG_OPTION;
            }
            if (eq != NULL) {
                *value = eq + 1;
            } else if (a->next < a->argc) {
                *value = a->argv[a->next++];
            } else {
                cli_usage_error("option --%s needs a value", s->name);
                return CLI_ARG_ERROR;
            }
            return CLI_ARG_OPTION;
        }
        cli_usage_error("unknown option '--%.*s'", (int)name_len, name);
        return CLI_ARG_ERROR;
    }
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) return 0;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    }
    return 0;
}

/* ================================================================ numbers */

static int parse_u64_decimal(const char **p, uint64_t *out)
{
    const char *s = *p;
    if (*s < '0' || *s > '9') return -1;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t digit = (uint64_t)(*s - '0');
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, digit, &v)) return -1;
    }
    *p = s;
    *out = v;
    return 0;
}

static int pow_u64(uint64_t base, uint64_t exponent, uint64_t *out)
{
    uint64_t r = 1;
    for (uint64_t k = 0; k < exponent; k++) {
        if (__builtin_mul_overflow(r, base, &r)) return -1;
        if (r == 0 || r == 1)
            break; /* 0^k and 1^k settle at once; avoids spinning on huge exponents */
    }
    *out = exponent == 0 ? 1 : r;
    return 0;
}

/* A count; with allow_bytes, a byte size (a 'B' may end it: 16M, 16MiB, 16MB, 4096B). */
static int parse_count_with_tail(const char *text, uint64_t *out, int allow_bytes)
{
    const char *p = text;
    uint64_t a, b, v;
    if (parse_u64_decimal(&p, &a) != 0) return -1;
    if (*p == '\0' || (allow_bytes && strcmp(p, "B") == 0)) {
        v = a;
    } else if (*p == '^' || (p[0] == '*' && p[1] == '*')) {
        p += *p == '^' ? 1 : 2;
        if (parse_u64_decimal(&p, &b) != 0 || *p != '\0' || pow_u64(a, b, &v) != 0) return -1;
    } else if (p[0] == '<' && p[1] == '<') {
        p += 2;
        /* a << b fits in 64 bits when a < 2^(64-b), i.e. a >> (63-b) is 0 or 1. */
        if (parse_u64_decimal(&p, &b) != 0 || *p != '\0' || b > 63 || (a >> (63 - b)) > 1)
            return -1;
        v = a << b;
    } else if (*p == 'e' || *p == 'E') {
        p++;
        uint64_t scale;
        if (parse_u64_decimal(&p, &b) != 0 || *p != '\0' || pow_u64(10, b, &scale) != 0 ||
            __builtin_mul_overflow(a, scale, &v))
            return -1;
    } else {
        int shift;
        switch (*p) {
        case 'k':
        case 'K': shift = 10; break;
        case 'm':
        case 'M': shift = 20; break;
        case 'g':
        case 'G': shift = 30; break;
        case 't':
        case 'T': shift = 40; break;
        default: return -1;
        }
        p++;
        if (*p == 'i') p++;
        if (allow_bytes && *p == 'B') p++;
        if (*p != '\0' || (a >> (64 - shift)) != 0) return -1;
        v = a << shift;
    }
    *out = v;
    return 0;
}

int cli_parse_count(const char *text, uint64_t *out) { return parse_count_with_tail(text, out, 0); }

int cli_parse_size(const char *text, uint64_t *out) { return parse_count_with_tail(text, out, 1); }

int cli_parse_int(const char *text, int lo, int hi, int *out)
{
    uint64_t v;
    if (cli_parse_count(text, &v) != 0 || v < (uint64_t)lo || v > (uint64_t)hi) return -1;
    *out = (int)v;
    return 0;
}

int cli_parse_seed(const char *text, uint64_t *out)
{
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        const char *p = text + 2;
        uint64_t v = 0;
        if (*p == '\0') return -1;
        for (; *p; p++) {
            int digit;
            if (*p >= '0' && *p <= '9')
                digit = *p - '0';
            else if (*p >= 'a' && *p <= 'f')
                digit = *p - 'a' + 10;
            else if (*p >= 'A' && *p <= 'F')
                digit = *p - 'A' + 10;
            else
                return -1;
            if (v >> 60) return -1;
            v = v << 4 | (uint64_t)digit;
        }
        *out = v;
        return 0;
    }
    const char *p = text;
    if (parse_u64_decimal(&p, out) != 0 || *p != '\0') return -1;
    return 0;
}

int cli_parse_device(const char *text, cli_device_kind *kind, int *ordinal)
{
    *ordinal = 0;
    if (strcmp(text, "auto") == 0) {
        *kind = CLI_DEVICE_AUTO;
        return 0;
    }
    if (strcmp(text, "cpu") == 0) {
        *kind = CLI_DEVICE_CPU;
        return 0;
    }
    if (strcmp(text, "gpu") == 0) {
        *kind = CLI_DEVICE_GPU;
        return 0;
    }
    if (strncmp(text, "gpu:", 4) == 0 && cli_parse_int(text + 4, 0, 1 << 20, ordinal) == 0) {
        *kind = CLI_DEVICE_GPU;
        return 0;
    }
    return -1;
}

/* ================================================================ names */

typedef const char *(*name_of_fn)(int value);

static const char *method_name_of(int m) { return coopreduce_method_name((coopreduce_method)m); }
static const char *op_name_of(int op) { return coopreduce_op_name((coopreduce_op)op); }
static const char *mode_name_of(int m) { return coopreduce_mode_name((coopreduce_mode)m); }

static void join_names(name_of_fn name_of, int count, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < count && used < outlen; k++)
        used += (size_t)snprintf(out + used, outlen - used, "%s%s", k ? ", " : "", name_of(k));
}

void cli_method_names(char *out, size_t outlen)
{
    join_names(method_name_of, COOPREDUCE_METHOD_COUNT, out, outlen);
}

void cli_op_names(char *out, size_t outlen)
{
    join_names(op_name_of, COOPREDUCE_OP_COUNT, out, outlen);
}

/* ================================================================ comma lists */

/* Parses one item into list[index]; 0 or -1. */
typedef int (*item_parser)(const char *item, void *list, int index, const void *ctx);

/* Splits text at commas (an empty item is an error) and parses each item. */
static int parse_list(const char *option, const char *text, item_parser parse, void *list, int max,
                      int *count, const void *ctx, const char *expected)
{
    *count = 0;
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",");
        char item[128];
        if (len == 0 || len >= sizeof item) {
            cli_usage_error("--%s '%s': expected a comma list of %s", option, text, expected);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (*count >= max) {
            cli_usage_error("--%s '%s': at most %d items", option, text, max);
            return -1;
        }
        if (parse(item, list, *count, ctx) != 0) {
            cli_usage_error("--%s: '%s' is not %s", option, item, expected);
            return -1;
        }
        (*count)++;
        if (p[len] == '\0') return 0;
        p += len + 1;
    }
}

static int count_item(const char *item, void *list, int index, const void *ctx)
{
    (void)ctx;
    uint64_t v;
    if (cli_parse_count(item, &v) != 0 || v == 0) return -1;
    ((uint64_t *)list)[index] = v;
    return 0;
}

int cli_parse_count_list(const char *option, const char *text, uint64_t *list, int max, int *count)
{
    return parse_list(option, text, count_item, list, max, count, NULL,
                      "a positive element count (" CLI_COUNT_EXAMPLES ")");
}

typedef struct {
    int lo, hi;
} int_range;

static int int_item(const char *item, void *list, int index, const void *ctx)
{
    const int_range *r = ctx;
    return cli_parse_int(item, r->lo, r->hi, &((int *)list)[index]);
}

int cli_parse_int_list(const char *option, const char *text, int lo, int hi, int *list, int max,
                       int *count)
{
    char expected[64];
    int_range r = {lo, hi};
    snprintf(expected, sizeof expected, "an integer from %d to %d", lo, hi);
    return parse_list(option, text, int_item, list, max, count, &r, expected);
}

static int dtype_item(const char *item, void *list, int index, const void *ctx)
{
    (void)ctx;
    return cr_dtype_parse(item, &((coopreduce_dtype *)list)[index]);
}

/* Fills list with 0 .. n-1 of an enum whose values are ints. */
#define FILL_ALL(list, type, n, max, count)                                                        \
    do {                                                                                           \
        *(count) = 0;                                                                              \
        for (int v_ = 0; v_ < (n) && v_ < (max); v_++) (list)[(*(count))++] = (type)v_;            \
    } while (0)

int cli_parse_dtype_list(const char *option, const char *text, coopreduce_dtype *list, int max,
                         int *count)
{
    if (strcmp(text, "all") == 0) {
        FILL_ALL(list, coopreduce_dtype, COOPREDUCE_DTYPE_COUNT, max, count);
        return 0;
    }
    return parse_list(option, text, dtype_item, list, max, count, NULL,
                      "a dtype (" CR_DTYPE_CHOICES ", or all)");
}

static int op_item(const char *item, void *list, int index, const void *ctx)
{
    (void)ctx;
    return coopreduce_op_from_name(item, &((coopreduce_op *)list)[index]) == COOPREDUCE_SUCCESS
               ? 0
               : -1;
}

int cli_parse_op_list(const char *option, const char *text, coopreduce_op *list, int max,
                      int *count)
{
    if (strcmp(text, "all") == 0) {
        FILL_ALL(list, coopreduce_op, COOPREDUCE_OP_COUNT, max, count);
        return 0;
    }
    char names[256], expected[300];
    cli_op_names(names, sizeof names);
    snprintf(expected, sizeof expected, "an operation (%s, or all)", names);
    return parse_list(option, text, op_item, list, max, count, NULL, expected);
}

static int mode_item(const char *item, void *list, int index, const void *ctx)
{
    (void)ctx;
    return coopreduce_mode_from_name(item, &((coopreduce_mode *)list)[index]) == COOPREDUCE_SUCCESS
               ? 0
               : -1;
}

int cli_parse_mode_list(const char *option, const char *text, coopreduce_mode *list, int max,
                        int *count)
{
    if (strcmp(text, "all") == 0) {
        FILL_ALL(list, coopreduce_mode, COOPREDUCE_MODE_COUNT, max, count);
        return 0;
    }
    char names[128], expected[160];
    join_names(mode_name_of, COOPREDUCE_MODE_COUNT, names, sizeof names);
    snprintf(expected, sizeof expected, "a mode (%s, or all)", names);
    return parse_list(option, text, mode_item, list, max, count, NULL, expected);
}

static int data_item(const char *item, void *list, int index, const void *ctx)
{
    (void)ctx;
    return cr_gen_parse(item, &((cr_gen_kind *)list)[index]);
}

int cli_parse_data_list(const char *option, const char *text, cr_gen_kind *list, int max,
                        int *count)
{
    return parse_list(option, text, data_item, list, max, count, NULL,
                      "a data kind (" CR_GEN_KINDS ")");
}

static int method_item(const char *item, void *list, int index, const void *ctx)
{
    (void)ctx;
    return coopreduce_method_from_name(item, &((coopreduce_method *)list)[index]) ==
                   COOPREDUCE_SUCCESS
               ? 0
               : -1;
}

int cli_parse_method_list(const char *option, const char *text, coopreduce_method *list, int max,
                          int *count)
{
    if (strcmp(text, "all") == 0) {
        FILL_ALL(list, coopreduce_method, COOPREDUCE_METHOD_COUNT, max, count);
        return 0;
    }
    char names[512], expected[560];
    cli_method_names(names, sizeof names);
    snprintf(expected, sizeof expected, "a method (%s, or all)", names);
    return parse_list(option, text, method_item, list, max, count, NULL, expected);
}
