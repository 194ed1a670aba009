/* main.c — the `coopreduce` command: sum, gen, info, bench.
 *
 * Conventions: results go to stdout (human text, or exactly one JSON object with --json); every
 * error is one line on stderr starting "coopreduce: ", with exit status 2 for usage errors and
 * 1 for everything else. Nothing is printed until the work has succeeded, so a failure never
 * leaves half a report behind. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "coopreduce.h"
#include "gen.h"
#include "gpu_buffers.h"
#include "npy.h"

#ifdef COOPREDUCE_HAVE_CUDA
#define BUILT_WITH_CUDA 1
#else
#define BUILT_WITH_CUDA 0
#endif

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

#define DEFAULT_REPEAT 5
#define MAX_REPEAT 1000000
#define ERRLEN 1024

/* ================================================================ messages */

static void print_error(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One line, whatever a library or file name brought in. */
    for (char *c = msg; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    fprintf(stderr, "coopreduce: %s\n", msg);
}

static int usage_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_error("%s", msg);
    return EXIT_USAGE;
}

/* The library's detailed message, or the status name when it left none. */
static const char *library_message(const coopreduce_handle *h, coopreduce_status st)
{
    const char *msg = coopreduce_last_error(h);
    return (msg != NULL && msg[0] != '\0') ? msg : coopreduce_status_string(st);
}

/* ================================================================ help */

static const char *const MAIN_HELP =
    "usage: coopreduce <command> [options]\n"
    "\n"
    "Deterministic reductions of large arrays on NVIDIA GPUs and on the CPU: the result's bits\n"
    "depend only on the data, never on the device, GPU model or thread count (canonical order\n"
    "v1, see docs/DETERMINISM.md). Sums, min, max, absmax, mean, sumsq, norm2, dot, argmin and\n"
    "argmax over float16, bfloat16, float32, float64 and 32- and 64-bit integers (summed\n"
    "exactly). The CUDA tutorials' reduction methods are there too, on the GPU, for comparison\n"
    "(coopreduce info).\n"
    "\n"
    "commands:\n"
    "  sum     sum (or --op OP) an array: a .npy file, a raw file, or generated data\n"
    "  gen     write generated data to a .npy or raw file\n"
    "  info    list the GPUs, the methods, the build and the CPUs\n"
    "  bench   benchmark against baselines (coopreduce bench --help)\n"
    "  help    this text, or a command's: coopreduce help sum\n"
    "\n"
    "coopreduce --version prints the version. Exit status: 0 success, 1 failure, 2 usage error.\n";

static const char *const SUM_HELP =
    "usage: coopreduce sum INPUT.npy [--op OP] [options]\n"
    "       coopreduce sum --raw FILE --dtype T [--op OP] [options]\n"
    "       coopreduce sum --gen ones|uniform|normal|signed --n N [--seed S] [--dtype T]\n"
    "                      [--op OP] [options]\n"
    "       coopreduce sum --op dot X.npy Y.npy    (or X.npy --y Y.npy; --raw X --y Y)\n"
    "\n"
    "Reduces every element of the array (any shape, flattened in file order): by default its sum\n"
    "in canonical order v1 (or with another GPU method, --method), else the operation --op names.\n"
    "The bits depend only on the data: the same on every GPU, every thread count and the CPU.\n"
    "\n"
    "operations (--op; default sum; result type in brackets, '16' = float16/bfloat16 input):\n"
    "  sum      floats: canonical order [f32, f64; 16: float32, or the input type with --narrow];\n"
    "           integers: exact [i32 -> int64, u32 -> uint64, i64/u64 -> a 128-bit integer]\n"
    "  min, max [the input type]       absmax  max |x| [i32 -> uint32, i64 -> uint64]\n"
    "  mean     the sum / n, rounded once [floats: as sum; integers: float64]\n"
    "  sumsq, norm2, dot    floats only [as sum]; dot takes two inputs\n"
    "  argmin, argmax       the index of the first minimum (maximum), or of the first NaN\n"
    "min, max, absmax, argmin and argmax of an empty array are an error.\n"
    "\n"
    "input:\n"
    "  INPUT.npy          NumPy file: '<f2' float16, '<f4' float32, '<f8' float64, '<i4' int32,\n"
    "                     '<i8' int64, '<u4' uint32, '<u8' uint64 ('=' for '<' too);\n"
    "                     big-endian only for float32 and float64 ('>f4', '>f8')\n"
    "  --raw FILE         raw little-endian elements; needs --dtype\n"
    "  --gen KIND         generated data, identical on every machine (see coopreduce gen --help)\n"
    "  --n N              element count for --gen: 1000000, 2^24, 1<<24, 16M (= 16*2^20), 1e6\n"
    "                     (sums of int32 and uint32: at most 2^32)\n"
    "  --seed S           seed for --gen (default 1)\n"
    "  --dtype T          element type for --raw and --gen: f16 (float16), bf16 (bfloat16: raw or\n"
    "                     generated only, NumPy has none), f32 (float32, the default for --gen),\n"
    "                     f64, i32, i64, u32, u64 (int32 ... uint64); with a .npy, must match it\n"
    "  --y FILE           dot's second array, read like the first (.npy, or raw with --dtype);\n"
    "                     also as a second INPUT.npy. Both arrays need the same dtype and length.\n"
    "                     With --gen, y is generated with seed S + 1.\n"
    "\n"
    "result:\n"
    "  --mode M           deterministic (default: canonical order v1) or exact (the correctly\n"
    "                     rounded sum, for sum of floats and dot of float32/float64, on the CPU\n"
    "                     and the GPU; integer sums, min, max, absmax, argmin, argmax are the\n"
    "                     same in both modes; mean, sumsq, norm2, 16-bit dot, and float sums\n"
    "                     and dots under a non-canonical --method fail: one line, exit 1)\n"
    "  --narrow           float16/bfloat16 input: sum, mean, sumsq, norm2 and dot rounded once\n"
    "                     more, to the input type (an error for other input types)\n"
    "The value is printed as the shortest decimal that reads back to the same bits (float16 and\n"
    "bfloat16 results too), integers as exact decimals (the 128-bit sums of int64 and uint64\n"
    "included), argmin/argmax as the index; bits as the result's IEEE bits in hex, or the two's\n"
    "complement of an integer result (32 hex digits for a 128-bit sum). A sum of int64 or uint64\n"
    "outside the 64-bit range prints the exact 128-bit sum, then says on stderr that it does not\n"
    "fit in 64 bits, and exits 1.\n"
    "\n"
    "options:\n"
    "  --device D         auto (default: GPU 0 if usable, else the CPU), cpu, gpu, gpu:K.\n"
    "                     With auto, a call the GPU path refuses as 'not supported' (a method\n"
    "                     or mode combination it lacks) runs on the CPU, saying so in a notice;\n"
    "                     with gpu or gpu:K it is an error.\n"
    "  --threads N        CPU worker threads (default 0 = every online CPU)\n"
    "  --repeat K         timed repetitions after one untimed warm-up (default 5); the time\n"
    "                     reported is their median, and every repetition of a deterministic\n"
    "                     method must give the same bits\n"
    "  --json             one JSON object on stdout instead of the text report: value, bits,\n"
    "                     dtype, op, result_dtype (int128/uint128 for the 64-bit integer sums),\n"
    "                     n, device, device_name, method, deterministic, mode, order_version,\n"
    "                     time_us, gbps, repeat, threads (and the GPU's launch)\n"
    "\n"
    "GPU methods (coopreduce info lists them, with what each one does):\n"
    "  --method NAME      canonical (default; the only method the CPU runs), block, grid,\n"
    "                     gridsync, twopass, cluster, cgreduce, vec4int, multilevel, async,\n"
    "                     barrier, pipeline. Only canonical gives the same bits on every GPU and\n"
    "                     the CPU; grid and vec4int are not even run-to-run deterministic for\n"
    "                     floats. Any other method on the CPU is an error; the other methods\n"
    "                     compute sums of f32, f64 and i32 only.\n"
    "  --stages S         stages in flight of --method pipeline, 1 .. 8 (default 4)\n"
    "  --grid-blocks B    force the GPU grid to B blocks (default 0 = automatic); canonical\n"
    "                     gives the same bits for any B\n"
    "  --no-cooperative   act as if the GPU had no cooperative launch (grid and gridsync fall\n"
    "                     back to ordinary launches, saying so in a notice)\n"
    "  --no-clusters      act as if the GPU had no thread-block clusters (cluster then fails)\n"
    "A fallback taken by the GPU is reported as one 'coopreduce: notice: ...' line on stderr.\n";

static const char *const GEN_HELP =
    "usage: coopreduce gen KIND --n N [--seed S] [--dtype T]\n"
    "                      (--out FILE.npy | --raw-out FILE)\n"
    "\n"
    "Writes generated data. Element i depends only on (KIND, seed, i), so the data is identical\n"
    "on every machine and `coopreduce sum --gen` reduces exactly the same values.\n"
    "\n"
    "kinds:\n"
    "  ones      1.0\n"
    "  uniform   uniform in [0, 1): 24 random bits (f32) or 53 (f64)\n"
    "  normal    standard normal\n"
    "  signed    uniform in [-1, 1) times 2^e, e uniform in [-20, 20]: wide range, heavy\n"
    "            cancellation, exact in float32\n"
    "For f16 and bf16: the float32 value rounded to nearest even; uniform takes 11 (f16) or 8\n"
    "(bf16) random bits instead, exactly, so it stays below 1; f16's signed values are scaled by\n"
    "2^-6 first, so that none overflows float16's 65504.\n"
    "For the integer types (i32, i64, u32, u64): ones = 1; uniform = every value of the type\n"
    "equally likely (so i64 and u64 sums of uniform data usually exceed 64 bits); normal and\n"
    "signed = the value times 2^20 (its magnitude, for u32 and u64), truncated toward zero and\n"
    "clamped to the type's range.\n"
    "\n"
    "options:\n"
    "  --n N              element count: 1000000, 2^24, 1<<24, 16M (= 16*2^20), 1e6\n"
    "  --seed S           seed (default 1)\n"
    "  --dtype T          element type: f16, bf16, f32 (float32, the default), f64, i32, i64,\n"
    "                     u32, u64\n"
    "  --out FILE         write a .npy file (format 1.0, data 64-byte aligned; not for bf16,\n"
    "                     which NumPy has no type for)\n"
    "  --raw-out FILE     write raw little-endian elements instead\n";

static const char *const INFO_HELP =
    "usage: coopreduce info [--json]\n"
    "\n"
    "Lists the CUDA GPUs (name, SMs, memory, compute capability, cooperative launch, clusters,\n"
    "whether this build has code for it), the reduction methods (--method of coopreduce sum:\n"
    "whether each is deterministic for floats, and which GPU can run the ones that need\n"
    "clusters or cooperative launch), the library and canonical order versions, and the CPUs.\n";

/* ================================================================ option parsing */

typedef struct {
    const char *name; /* without the leading "--" */
    int takes_value;
} option_spec;

typedef struct {
    int argc;
    char **argv;
    int next;
    int options_ended; /* after "--" */
} arg_cursor;

enum { ARG_END = 0, ARG_POSITIONAL = 1, ARG_OPTION = 2, ARG_ERROR = -1 };

/* Returns the next argument: a positional (in *value), an option from `specs` (its spec in
 * *spec, its value in *value: "--name value" and "--name=value" both work), ARG_END, or
 * ARG_ERROR after printing a usage error. */
static int next_arg(arg_cursor *cur, const option_spec *specs, const option_spec **spec,
                    const char **value)
{
    *spec = NULL;
    *value = NULL;
    if (cur->next >= cur->argc)
        return ARG_END;
    const char *arg = cur->argv[cur->next++];
    if (!cur->options_ended && strcmp(arg, "--") == 0) {
        cur->options_ended = 1;
        return next_arg(cur, specs, spec, value);
    }
    if (cur->options_ended || arg[0] != '-' || arg[1] == '\0') {
        *value = arg;
        return ARG_POSITIONAL;
    }
    if (arg[1] != '-') {
        usage_error("unknown option '%s' (options are spelled --name)", arg);
        return ARG_ERROR;
    }
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
    for (const option_spec *s = specs; s->name != NULL; s++) {
        if (strlen(s->name) != name_len || strncmp(s->name, name, name_len) != 0)
            continue;
        *spec = s;
        if (!s->takes_value) {
            if (eq != NULL) {
                usage_error("option --%s takes no value", s->name);
                return ARG_ERROR;
            }
            return ARG_OPTION;
        }
        if (eq != NULL) {
            *value = eq + 1;
        } else if (cur->next < cur->argc) {
            *value = cur->argv[cur->next++];
        } else {
            usage_error("option --%s needs a value", s->name);
            return ARG_ERROR;
        }
        return ARG_OPTION;
    }
    usage_error("unknown option '--%.*s'", (int)name_len, name);
    return ARG_ERROR;
}

static int wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    }
    return 0;
}

/* ================================================================ values */

static int parse_u64_decimal(const char **p, uint64_t *out)
{
    const char *s = *p;
    if (*s < '0' || *s > '9')
        return -1;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t digit = (uint64_t)(*s - '0');
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, digit, &v))
            return -1;
    }
    *p = s;
    *out = v;
    return 0;
}

static int pow_u64(uint64_t base, uint64_t exponent, uint64_t *out)
{
    uint64_t r = 1;
    for (uint64_t k = 0; k < exponent; k++) {
        if (__builtin_mul_overflow(r, base, &r))
            return -1;
        if (r == 0 || r == 1)
            break; /* 0^k and 1^k settle at once; avoids spinning on huge exponents */
    }
    *out = exponent == 0 ? 1 : r;
    return 0;
}

/* An element count: 1000000, 2^24, 2**24, 1<<24, 16M (binary suffixes K M G T, optionally
 * followed by 'i'), 1e6. */
static int parse_count(const char *text, uint64_t *out)
{
    const char *p = text;
    uint64_t a, b, v;
    if (parse_u64_decimal(&p, &a) != 0)
        return -1;
    if (*p == '\0') {
        v = a;
    } else if (*p == '^' || (p[0] == '*' && p[1] == '*')) {
        p += *p == '^' ? 1 : 2;
        if (parse_u64_decimal(&p, &b) != 0 || *p != '\0' || pow_u64(a, b, &v) != 0)
            return -1;
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
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        case 't': case 'T': shift = 40; break;
        default: return -1;
        }
        p++;
        if (*p == 'i')
            p++;
        if (*p != '\0' || (a >> (64 - shift)) != 0)
            return -1;
        v = a << shift;
    }
    *out = v;
    return 0;
}

static int parse_small_int(const char *text, int lo, int hi, int *out)
{
    uint64_t v;
    if (parse_count(text, &v) != 0 || v < (uint64_t)lo || v > (uint64_t)hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Decimal or 0x-hexadecimal, the full 64-bit range. */
static int parse_seed(const char *text, uint64_t *out)
{
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        const char *p = text + 2;
        uint64_t v = 0;
        if (*p == '\0')
            return -1;
        for (; *p; p++) {
            int digit;
            if (*p >= '0' && *p <= '9') digit = *p - '0';
            else if (*p >= 'a' && *p <= 'f') digit = *p - 'a' + 10;
            else if (*p >= 'A' && *p <= 'F') digit = *p - 'A' + 10;
            else return -1;
            if (v >> 60)
                return -1;
            v = v << 4 | (uint64_t)digit;
        }
        *out = v;
        return 0;
    }
    const char *p = text;
    if (parse_u64_decimal(&p, out) != 0 || *p != '\0')
        return -1;
    return 0;
}

/* --dtype spellings: the short code or the library's name. */
static const struct {
    const char *code;
    coopreduce_dtype dtype;
} DTYPE_CODES[] = {
    {"f16", COOPREDUCE_FLOAT16}, {"bf16", COOPREDUCE_BFLOAT16}, {"f32", COOPREDUCE_FLOAT32},
    {"f64", COOPREDUCE_FLOAT64}, {"i32", COOPREDUCE_INT32},     {"i64", COOPREDUCE_INT64},
    {"u32", COOPREDUCE_UINT32},  {"u64", COOPREDUCE_UINT64},
};
#define DTYPE_CHOICES "f16, bf16, f32, f64, i32, i64, u32 or u64"

static int parse_dtype(const char *text, coopreduce_dtype *dtype)
{
    for (size_t k = 0; k < sizeof DTYPE_CODES / sizeof DTYPE_CODES[0]; k++) {
        if (strcmp(text, DTYPE_CODES[k].code) == 0 ||
            strcmp(text, coopreduce_dtype_name(DTYPE_CODES[k].dtype)) == 0) {
            *dtype = DTYPE_CODES[k].dtype;
            return 0;
        }
    }
    return -1;
}

static int dtype_is_float(coopreduce_dtype dtype)
{
    return dtype == COOPREDUCE_FLOAT16 || dtype == COOPREDUCE_BFLOAT16 ||
           dtype == COOPREDUCE_FLOAT32 || dtype == COOPREDUCE_FLOAT64;
}

static int dtype_is_half(coopreduce_dtype dtype)
{
    return dtype == COOPREDUCE_FLOAT16 || dtype == COOPREDUCE_BFLOAT16;
}

typedef enum { DEVICE_AUTO, DEVICE_CPU, DEVICE_GPU } device_kind;

static int parse_device(const char *text, device_kind *kind, int *ordinal)
{
    *ordinal = 0;
    if (strcmp(text, "auto") == 0) {
        *kind = DEVICE_AUTO;
        return 0;
    }
    if (strcmp(text, "cpu") == 0) {
        *kind = DEVICE_CPU;
        return 0;
    }
    if (strcmp(text, "gpu") == 0) {
        *kind = DEVICE_GPU;
        return 0;
    }
    if (strncmp(text, "gpu:", 4) == 0 && parse_small_int(text + 4, 0, 1 << 20, ordinal) == 0) {
        *kind = DEVICE_GPU;
        return 0;
    }
    return -1;
}

/* ================================================================ formatting */

/* Rewrites "d.ddde[+-]XX" (as printed by %.*e) in positional notation when the exponent is in
 * [-5, 17), the way Python's repr does ("1000", "0.0001"), else as "d.ddde+XX". */
static void pretty_decimal(const char *sci, char *out, size_t outlen)
{
    const char *p = sci;
    char sign[2] = {0, 0};
    if (*p == '-')
        sign[0] = *p++;
    char digits[40];
    size_t nd = 0;
    for (; *p && *p != 'e' && nd + 1 < sizeof digits; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int exponent = *p == 'e' ? atoi(p + 1) : 0;
    if (exponent < -5 || exponent >= 17) {
        snprintf(out, outlen, "%s%c%s%se%c%02d", sign, digits[0], nd > 1 ? "." : "", digits + 1,
                 exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
        return;
    }
    char buf[64];
    size_t len = 0;
    if (exponent < 0) {
        len += (size_t)snprintf(buf, sizeof buf, "0.");
        for (int z = 0; z < -exponent - 1; z++)
            buf[len++] = '0';
        for (size_t k = 0; k < nd; k++)
            buf[len++] = digits[k];
    } else {
        for (int k = 0; k <= exponent; k++)
            buf[len++] = (size_t)k < nd ? digits[k] : '0';
        if (nd > (size_t)exponent + 1) {
            buf[len++] = '.';
            for (size_t k = (size_t)exponent + 1; k < nd; k++)
                buf[len++] = digits[k];
        }
    }
    buf[len] = '\0';
    snprintf(out, outlen, "%s%s", sign, buf);
}

/* The shortest decimal that reads back (strtof/strtod, round to nearest) as the same bits:
 * fewest significant digits first, then written positionally where that is readable. */
static void format_shortest(const unsigned char *bits, coopreduce_dtype dtype, char *out,
                            size_t outlen)
{
    double value;
    if (dtype == COOPREDUCE_FLOAT32) {
        float f;
        memcpy(&f, bits, sizeof f);
        value = f;
    } else {
        memcpy(&value, bits, sizeof value);
    }
    if (value != value) {
        snprintf(out, outlen, "nan");
        return;
    }
    if (value == 1.0 / 0.0 || value == -1.0 / 0.0) {
        snprintf(out, outlen, value > 0 ? "inf" : "-inf");
        return;
    }
    int max_digits = dtype == COOPREDUCE_FLOAT32 ? 9 : 17;
    char sci[64];
    for (int digits = 1; digits <= max_digits; digits++) {
        snprintf(sci, sizeof sci, "%.*e", digits - 1, value);
        int same;
        if (dtype == COOPREDUCE_FLOAT32) {
            float back = strtof(sci, NULL);
            same = memcmp(&back, bits, sizeof back) == 0;
        } else {
            double back = strtod(sci, NULL);
            same = memcmp(&back, bits, sizeof back) == 0;
        }
        /* 9 (float32) or 17 (float64) significant digits always read back exactly. */
        if (same || digits == max_digits)
            break;
    }
    pretty_decimal(sci, out, outlen);
}

/* The same for a float16 or bfloat16 value: the fewest significant digits whose decimal lies
 * strictly inside the value's rounding interval (between the midpoints to its neighbours, all
 * exact in double), so that any correct reader rounds it back to the same 16 bits. */
static void format_shortest_half(uint16_t h, coopreduce_dtype dtype, char *out, size_t outlen)
{
    double value = cr_gen_from_half(h, dtype);
    uint16_t mag = h & 0x7fffu;
    if (value != value || value == 1.0 / 0.0 || value == -1.0 / 0.0 || mag == 0) {
        snprintf(out, outlen, value != value ? "nan" : mag == 0 ? (h ? "-0" : "0")
                                                  : value > 0 ? "inf" : "-inf");
        return;
    }
    double a = cr_gen_from_half(mag, dtype);
    double below = cr_gen_from_half((uint16_t)(mag - 1), dtype);
    double above = cr_gen_from_half((uint16_t)(mag + 1), dtype);
    double lo = (below + a) / 2.0;
    double hi = above == 1.0 / 0.0 ? a + (a - below) / 2.0 : (a + above) / 2.0;
    char sci[64];
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(sci, sizeof sci, "%.*e", digits - 1, a);
        double back = strtod(sci, NULL);
        if (back > lo && back < hi)
            break;
    }
    size_t sign = value < 0 && outlen > 1;
    if (sign)
        out[0] = '-';
    pretty_decimal(sci, out + sign, outlen - sign);
}

/* The exact decimal of a 128-bit integer (two words, low first; two's complement if is_signed). */
static void format_int128(const uint64_t w[2], int is_signed, char *out, size_t outlen)
{
    uint64_t lo = w[0], hi = w[1];
    int negative = is_signed && (hi >> 63);
    if (negative) { /* negate: ~x + 1 */
        lo = ~lo + 1;
        hi = ~hi + (lo == 0);
    }
    /* Divide by 10 over 32-bit limbs, most significant first, until nothing is left. */
    uint32_t limbs[4] = {(uint32_t)(hi >> 32), (uint32_t)hi, (uint32_t)(lo >> 32), (uint32_t)lo};
    char digits[48];
    int nd = 0, nonzero;
    do {
        uint64_t rem = 0;
        nonzero = 0;
        for (int k = 0; k < 4; k++) {
            uint64_t cur = rem << 32 | limbs[k];
            limbs[k] = (uint32_t)(cur / 10);
            rem = cur % 10;
            nonzero |= limbs[k] != 0;
        }
        digits[nd++] = (char)('0' + rem);
    } while (nonzero);
    size_t used = 0;
    if (negative && used + 1 < outlen)
        out[used++] = '-';
    while (nd > 0 && used + 1 < outlen)
        out[used++] = digits[--nd];
    out[used] = '\0';
}

/* The result's value as text: floats as the shortest decimal that reads back to the same bits,
 * integers (the 128-bit sums of int64 and uint64 included) as exact decimal integers, argmin and
 * argmax as the index. `rdtype` and `rsize` are coopreduce_op_result_size's. */
static void format_value(const unsigned char *bits, coopreduce_dtype rdtype, size_t rsize,
                         char *out, size_t outlen)
{
    uint64_t w[2] = {0, 0};
    memcpy(w, bits, rsize < sizeof w ? rsize : sizeof w);
    if (rsize == 16) {
        format_int128(w, rdtype == COOPREDUCE_INT64, out, outlen);
        return;
    }
    switch (rdtype) {
    case COOPREDUCE_FLOAT16:
    case COOPREDUCE_BFLOAT16:
        format_shortest_half((uint16_t)w[0], rdtype, out, outlen);
        return;
    case COOPREDUCE_FLOAT32:
    case COOPREDUCE_FLOAT64:
        format_shortest(bits, rdtype, out, outlen);
        return;
    case COOPREDUCE_INT32:
        snprintf(out, outlen, "%ld", (long)(int32_t)(uint32_t)w[0]);
        return;
    case COOPREDUCE_INT64:
        snprintf(out, outlen, "%lld", (long long)(int64_t)w[0]);
        return;
    case COOPREDUCE_UINT32:
    case COOPREDUCE_UINT64:
        snprintf(out, outlen, "%llu", (unsigned long long)w[0]);
        return;
    }
    snprintf(out, outlen, "?");
}

/* The result's bytes in hex, most significant first: its IEEE bits, or the two's complement of
 * an integer (4, 8, 16 or 32 digits). */
static void format_bits(const unsigned char *bits, size_t size, char *out, size_t outlen)
{
    size_t used = (size_t)snprintf(out, outlen, "0x");
    for (size_t k = size; k-- > 0 && used + 2 < outlen;)
        used += (size_t)snprintf(out + used, outlen - used, "%02x", bits[k]);
}

static void print_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* stdout may be a full disk or a closed pipe: that must not exit 0. */
static int finish_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        print_error("cannot write the output: %s", strerror(errno));
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* ================================================================ host facts */

static int online_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The CPU's marketing name from /proc/cpuinfo, or "CPU" where there is none (e.g. ARM). */
static void cpu_model_name(char *out, size_t outlen)
{
    snprintf(out, outlen, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        char *colon = strchr(line, ':');
        if (colon == NULL)
            continue;
        char *name = colon + 1;
        while (*name == ' ' || *name == '\t')
            name++;
        size_t len = strcspn(name, "\r\n");
        while (len > 0 && (name[len - 1] == ' ' || name[len - 1] == '\t'))
            len--;
        if (len > 0)
            snprintf(out, outlen, "%.*s", (int)len, name);
        break;
    }
    fclose(f);
}

static double monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare_doubles);
    if (count % 2 == 1)
        return values[count / 2];
    return 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

/* ================================================================ devices */

typedef struct {
    coopreduce_handle *handle;
    int is_gpu;
    int ordinal;
    int threads;        /* CPU: worker threads used (resolved from 0 = every online CPU) */
    char name[256];
    char auto_note[600]; /* why auto chose what it chose */
} device_ctx;

static const char *no_gpu_reason(void)
{
    return BUILT_WITH_CUDA ? "no GPU found" : "no GPU found: coopreduce was built without CUDA";
}

static int open_cpu(device_ctx *dev, int threads)
{
    coopreduce_status st = coopreduce_create_cpu(&dev->handle, threads);
    if (st != COOPREDUCE_SUCCESS) {
        print_error("cannot create the CPU handle: %s", library_message(NULL, st));
        return EXIT_ERROR;
    }
    dev->is_gpu = 0;
    dev->ordinal = -1;
    dev->threads = threads > 0 ? threads : online_cpu_count();
    cpu_model_name(dev->name, sizeof dev->name);
    return EXIT_OK;
}

/* Tries GPU `ordinal`. Returns 0, or -1 with the reason in why. */
static int try_open_gpu(device_ctx *dev, int ordinal, char *why, size_t whylen)
{
    int count = 0;
    coopreduce_status st = coopreduce_gpu_count(&count);
    if (st != COOPREDUCE_SUCCESS) {
        snprintf(why, whylen, "cannot count GPUs: %s", library_message(NULL, st));
        return -1;
    }
    if (count == 0) {
        snprintf(why, whylen, "%s", no_gpu_reason());
        return -1;
    }
    if (ordinal >= count) {
        snprintf(why, whylen, "there is no GPU %d (%d GPU%s found)", ordinal, count,
                 count == 1 ? "" : "s");
        return -1;
    }
    coopreduce_gpu_props props;
    st = coopreduce_gpu_props_get(ordinal, &props);
    if (st != COOPREDUCE_SUCCESS) {
        snprintf(why, whylen, "cannot query GPU %d: %s", ordinal, library_message(NULL, st));
        return -1;
    }
    st = coopreduce_create_gpu(&dev->handle, ordinal);
    if (st != COOPREDUCE_SUCCESS) {
        snprintf(why, whylen, "cannot use GPU %d (%s, compute capability %d.%d): %s", ordinal,
                 props.name, props.cc_major, props.cc_minor, library_message(NULL, st));
        dev->handle = NULL;
        return -1;
    }
    dev->is_gpu = 1;
    dev->ordinal = ordinal;
    dev->threads = 0;
    snprintf(dev->name, sizeof dev->name, "%s", props.name);
    return 0;
}

/* device_text is what the user wrote, for the error message. */
static int open_device(device_ctx *dev, device_kind kind, int ordinal, int threads,
                       const char *device_text)
{
    memset(dev, 0, sizeof *dev);
    char why[512];
    switch (kind) {
    case DEVICE_CPU:
        return open_cpu(dev, threads);
    case DEVICE_GPU:
        if (try_open_gpu(dev, ordinal, why, sizeof why) != 0) {
            print_error("--device %s: %s", device_text, why);
            return EXIT_ERROR;
        }
        return EXIT_OK;
    case DEVICE_AUTO:
        if (try_open_gpu(dev, 0, why, sizeof why) == 0) {
            snprintf(dev->auto_note, sizeof dev->auto_note, "--device auto chose gpu:0");
            return EXIT_OK;
        }
        snprintf(dev->auto_note, sizeof dev->auto_note, "--device auto fell back to the CPU: %s",
                 why);
        return open_cpu(dev, threads);
    }
    return EXIT_ERROR;
}

/* ================================================================ input */

typedef struct {
    cr_npy_array array; /* host data, n, dtype, shape */
    char description[1200];
} input_data;

static int generate(cr_gen_kind kind, uint64_t n, uint64_t seed, coopreduce_dtype dtype,
                    cr_npy_array *out)
{
    memset(out, 0, sizeof *out);
    size_t elem = coopreduce_dtype_size(dtype);
    if (n > (uint64_t)SIZE_MAX / elem) {
        print_error("--n %llu: too many elements for this machine's address space",
                    (unsigned long long)n);
        return EXIT_ERROR;
    }
    size_t bytes = (size_t)n * elem;
    void *data = NULL;
    /* 64-byte aligned like the .npy reader's buffers; never size 0, so data is never NULL. */
    if (posix_memalign(&data, 64, bytes > 64 ? bytes : 64) != 0) {
        print_error("cannot allocate %zu bytes for %llu %s elements", bytes,
                    (unsigned long long)n, coopreduce_dtype_name(dtype));
        return EXIT_ERROR;
    }
    if (cr_gen_fill(data, 0, n, dtype, kind, seed, online_cpu_count()) != 0) {
        free(data);
        print_error("internal error: cannot generate '%s' data", cr_gen_name(kind));
        return EXIT_ERROR;
    }
    out->data = data;
    out->n = n;
    out->dtype = dtype;
    out->ndim = 1;
    out->shape[0] = n;
    return EXIT_OK;
}

static void describe_shape(const cr_npy_array *a, char *out, size_t outlen)
{
    size_t used = (size_t)snprintf(out, outlen, "(");
    for (int d = 0; d < a->ndim && used < outlen; d++)
        used += (size_t)snprintf(out + used, outlen - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)a->shape[d]);
    if (used < outlen)
        snprintf(out + used, outlen - used, a->ndim == 1 ? ",)" : ")");
}

/* ================================================================ methods */

/* One line per method for `coopreduce info` and the text report, indexed by coopreduce_method
 * (include/coopreduce.h describes each one in full). */
static const char *const METHOD_DESCRIPTIONS[] = {
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
#define METHOD_DESCRIPTION_COUNT (int)(sizeof METHOD_DESCRIPTIONS / sizeof METHOD_DESCRIPTIONS[0])

static int method_count(void)
{
    int m = 0;
    while (coopreduce_method_name((coopreduce_method)m) != NULL)
        m++;
    return m;
}

static const char *method_description(coopreduce_method m)
{
    return (int)m >= 0 && (int)m < METHOD_DESCRIPTION_COUNT ? METHOD_DESCRIPTIONS[m] : "";
}

/* "canonical, block, grid, ..." as the library names them. */
static void method_list(char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    for (int m = 0; m < method_count() && used < outlen; m++)
        used += (size_t)snprintf(out + used, outlen - used, "%s%s", m ? ", " : "",
                                 coopreduce_method_name((coopreduce_method)m));
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

/* ================================================================ sum */

/* The library's limit for 32-bit integer sums (a 64-bit total cannot overflow below it). */
#define INT32_MAX_N (UINT64_C(1) << 32)

typedef struct {
    const char *npy_path;
    const char *y_path;  /* dot's second input: a second positional or --y */
    const char *raw_path;
    int have_gen;
    cr_gen_kind gen_kind;
    int have_n;
    uint64_t n;
    int have_seed;
    uint64_t seed;
    int have_dtype;
    coopreduce_dtype dtype;
    coopreduce_op op;
    coopreduce_mode mode;
    int narrow;
    device_kind device;
    int ordinal;
    const char *device_text;
    int threads;
    int repeat;
    int json;
    coopreduce_method method;
    int stages;          /* 0: not given */
    int grid_blocks;     /* -1: not given */
    unsigned int disabled_features;
} sum_options;

/* What a reduction returns: coopreduce_op_result_size's answer for the op and input dtype. */
typedef struct {
    coopreduce_op op;
    coopreduce_dtype dtype;   /* the input's */
    coopreduce_dtype rdtype;  /* the result's (INT64 / UINT64 for the 16-byte sums too) */
    size_t rsize;             /* 2, 4, 8 or 16 */
} result_kind;

/* "int128" and "uint128" for the exact 16-byte sums of int64 and uint64, else the dtype name. */
static const char *result_dtype_name(const result_kind *rk)
{
    if (rk->rsize == 16)
        return rk->rdtype == COOPREDUCE_INT64 ? "int128" : "uint128";
    return coopreduce_dtype_name(rk->rdtype);
}

typedef struct {
    unsigned char bits[16];     /* the result, rsize bytes */
    double time_us;
    int deterministic;          /* coopreduce_method_deterministic(method, dtype) == 1 */
    int runs;                   /* warm-up + repetitions */
    int distinct;               /* distinct results among them (1 unless nondeterministic) */
    int have_launch;            /* GPU: launch holds coopreduce_last_launch() */
    coopreduce_launch_info launch;
    char fallback[600];         /* why --device auto computed on the CPU after all, or "" */
} sum_result;

static int check_repetition(const unsigned char *first, const unsigned char *bits, size_t size,
                            int repetition)
{
    if (memcmp(first, bits, size) == 0)
        return EXIT_OK;
    char a[40], b[40];
    format_bits(first, size, a, sizeof a);
    format_bits(bits, size, b, sizeof b);
    print_error("determinism violated: repetition %d gave %s, the warm-up gave %s "
                "(a coopreduce bug: please report it)", repetition, b, a);
    return EXIT_ERROR;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Distinct values among results[0..count) (sorts them). */
static int count_distinct(uint64_t *results, int count)
{
    qsort(results, (size_t)count, sizeof *results, compare_u64);
    int distinct = count > 0;
    for (int k = 1; k < count; k++)
        distinct += results[k] != results[k - 1];
    return distinct;
}

/* A 64-bit key of a result (the 16-byte sums folded), for counting distinct results. */
static uint64_t result_key(const unsigned char *bits, size_t size)
{
    uint64_t w[2] = {0, 0};
    memcpy(w, bits, size);
    return w[0] ^ w[1] * UINT64_C(0x9e3779b97f4a7c15);
}

/* OVERFLOW still writes the exact 128-bit sum: the report prints it, then says it does not fit. */
static int reduce_ok(coopreduce_status st)
{
    return st == COOPREDUCE_SUCCESS || st == COOPREDUCE_ERROR_OVERFLOW;
}

/* 1 when a 16-byte sum of int64 (uint64) fits in the input's 64 bits. */
static int result_fits(const result_kind *rk, const unsigned char *bits)
{
    if (rk->rsize != 16)
        return 1;
    uint64_t w[2];
    memcpy(w, bits, sizeof w);
    if (rk->rdtype == COOPREDUCE_UINT64)
        return w[1] == 0;
    return w[1] == ((w[0] >> 63) ? UINT64_MAX : 0);
}

static void print_reduce_failure(const device_ctx *dev, const result_kind *rk,
                                 coopreduce_status st)
{
    print_error("%s failed: %s", coopreduce_op_name(rk->op), library_message(dev->handle, st));
}

static int run_sum_cpu(device_ctx *dev, const result_kind *rk, const cr_npy_array *x,
                       const cr_npy_array *y, int repeat, sum_result *res)
{
    size_t size = rk->rsize;
    const void *yd = y != NULL ? y->data : NULL;
    unsigned char first[16], bits[16];
    double *times = malloc(sizeof *times * (size_t)repeat);
    if (times == NULL) {
        print_error("out of memory");
        return EXIT_ERROR;
    }
    int rc = EXIT_ERROR;
    coopreduce_status st = coopreduce_reduce(rk->op, x->data, yd, first, x->n, x->dtype,
                                             dev->handle, NULL);
    if (!reduce_ok(st)) {
        print_reduce_failure(dev, rk, st);
        goto done;
    }
    for (int r = 0; r < repeat; r++) {
        double t0 = monotonic_us();
        st = coopreduce_reduce(rk->op, x->data, yd, bits, x->n, x->dtype, dev->handle, NULL);
        double t1 = monotonic_us();
        if (!reduce_ok(st)) {
            print_reduce_failure(dev, rk, st);
            goto done;
        }
        if (check_repetition(first, bits, size, r + 1) != EXIT_OK)
            goto done;
        times[r] = t1 - t0;
    }
    memcpy(res->bits, first, size);
    res->time_us = median(times, repeat);
    res->deterministic = 1; /* the CPU computes the canonical order only */
    res->runs = repeat + 1;
    res->distinct = 1;
    rc = EXIT_OK;
done:
    free(times);
    return rc;
}

/* The mode and narrowing of `o`, on any handle. */
static int configure_handle(device_ctx *dev, const sum_options *o)
{
    coopreduce_status st = coopreduce_set_mode(dev->handle, o->mode);
    if (st != COOPREDUCE_SUCCESS) {
        print_error("--mode %s: %s", coopreduce_mode_name(o->mode), library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    st = coopreduce_set_narrow_result(dev->handle, o->narrow);
    if (st != COOPREDUCE_SUCCESS) {
        print_error("--narrow: %s", library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* The method and launch settings of `o` applied to a GPU handle. */
static int configure_gpu(device_ctx *dev, const sum_options *o)
{
    coopreduce_status st = coopreduce_set_method(dev->handle, o->method);
    if (st != COOPREDUCE_SUCCESS) {
        print_error("cannot select method %s: %s", coopreduce_method_name(o->method),
                    library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    if (o->stages > 0 && (st = coopreduce_set_stages(dev->handle, o->stages)) != COOPREDUCE_SUCCESS) {
        print_error("--stages %d: %s", o->stages, library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    if (o->disabled_features != 0 &&
        (st = coopreduce_disable_features(dev->handle, o->disabled_features)) != COOPREDUCE_SUCCESS) {
        print_error("cannot disable GPU features: %s", library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    if (o->grid_blocks >= 0 &&
        (st = coopreduce_set_grid_blocks(dev->handle, o->grid_blocks)) != COOPREDUCE_SUCCESS) {
        print_error("--grid-blocks %d: %s", o->grid_blocks, library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* run_sum_gpu's answer when the GPU cannot compute the reduction and the caller may fall back. */
#define RUN_FALLBACK 3

/* One GPU reduction into d_result, which is first filled with `fill` bytes, timed with `timer`;
 * the result lands in out. With may_fall_back, NOT_SUPPORTED returns RUN_FALLBACK quietly, the
 * library's reason in res->fallback. */
static int gpu_sum_once(device_ctx *dev, const result_kind *rk, const void *d_x, const void *d_y,
                        void *d_result, uint64_t n, int fill, cli_gpu_timer *timer, double *us,
                        unsigned char *out, int may_fall_back, sum_result *res)
{
    char err[ERRLEN];
    if (cli_gpu_memset(d_result, fill, 16, err, sizeof err) != 0 ||
        cli_gpu_timer_start(timer, err, sizeof err) != 0) {
        print_error("GPU %d: %s", dev->ordinal, err);
        return EXIT_ERROR;
    }
    coopreduce_status st = coopreduce_reduce(rk->op, d_x, d_y, d_result, n, rk->dtype,
                                             dev->handle, NULL);
    if (st == COOPREDUCE_ERROR_NOT_SUPPORTED) {
        if (may_fall_back) {
            snprintf(res->fallback, sizeof res->fallback, "gpu:%d (%s) cannot compute %s of %s: %s",
                     dev->ordinal, dev->name, coopreduce_op_name(rk->op),
                     coopreduce_dtype_name(rk->dtype), library_message(dev->handle, st));
            return RUN_FALLBACK;
        }
        print_error("gpu:%d (%s) cannot compute %s of %s: %s", dev->ordinal, dev->name,
                    coopreduce_op_name(rk->op), coopreduce_dtype_name(rk->dtype),
                    library_message(dev->handle, st));
        return EXIT_ERROR;
    }
    if (!reduce_ok(st)) {
        print_reduce_failure(dev, rk, st);
        return EXIT_ERROR;
    }
    if (cli_gpu_timer_stop(timer, us, err, sizeof err) != 0 ||
        cli_gpu_memcpy_d2h(out, d_result, rk->rsize, err, sizeof err) != 0) {
        print_error("GPU %d: %s", dev->ordinal, err);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* Copies the data to the GPU once (untimed), then times each repetition with CUDA events around
 * coopreduce_reduce on the default stream. The host copies are freed after the warm-up, so that
 * multi-GB inputs give their memory back, yet a warm-up the GPU cannot compute (NOT_SUPPORTED,
 * with may_fall_back) returns RUN_FALLBACK with the host data intact. A method that is not
 * deterministic for the dtype may give different bits from run to run: the warm-up's are
 * reported, and how many distinct results the runs gave. */
static int run_sum_gpu(device_ctx *dev, const result_kind *rk, cr_npy_array *x, cr_npy_array *y,
                       coopreduce_method method, int repeat, int may_fall_back, sum_result *res)
{
    char err[ERRLEN];
    size_t elem = coopreduce_dtype_size(x->dtype);
    size_t bytes = (size_t)x->n * elem;
    uint64_t n = x->n;
    size_t size = rk->rsize;
    int int_result = !dtype_is_float(rk->rdtype);
    int deterministic = coopreduce_method_deterministic(method, x->dtype) == 1;
    void *d_x = NULL, *d_y = NULL, *d_result = NULL;
    cli_gpu_timer *timer = NULL;
    double *times = malloc(sizeof *times * (size_t)repeat);
    uint64_t *results = malloc(sizeof *results * ((size_t)repeat + 1));
    unsigned char first[16], bits[16];
    int rc = EXIT_ERROR;
    coopreduce_status st;

    if (times == NULL || results == NULL) {
        print_error("out of memory");
        goto done;
    }
    if (cli_gpu_set_device(dev->ordinal, err, sizeof err) != 0 ||
        /* Never a zero-byte allocation: an empty sum still gets a real device pointer. */
        cli_gpu_malloc(&d_x, bytes > 256 ? bytes : 256, err, sizeof err) != 0 ||
        cli_gpu_malloc(&d_result, 16, err, sizeof err) != 0 ||
        cli_gpu_memcpy_h2d(d_x, x->data, bytes, err, sizeof err) != 0 ||
        (y != NULL && (cli_gpu_malloc(&d_y, bytes > 256 ? bytes : 256, err, sizeof err) != 0 ||
                       cli_gpu_memcpy_h2d(d_y, y->data, bytes, err, sizeof err) != 0))) {
        print_error("GPU %d: %s", dev->ordinal, err);
        goto done;
    }

    st = coopreduce_reserve(dev->handle, n, x->dtype);
    if (st != COOPREDUCE_SUCCESS) {
        print_error("cannot reserve the GPU workspace: %s", library_message(dev->handle, st));
        goto done;
    }
    if (cli_gpu_timer_create(&timer, err, sizeof err) != 0) {
        print_error("GPU %d: %s", dev->ordinal, err);
        goto done;
    }

    /* The untimed warm-up. The result is first filled with a sentinel: all bits set, which a
     * float result never is (its only NaN is the canonical one), so a result the GPU failed to
     * write cannot pass for a repeatable one. An integer result can be all ones (-1, or the
     * largest unsigned value): then a second run over a zero fill must give it again. */
    static const unsigned char all_ones[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                               0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    double us = 0.0;
    rc = gpu_sum_once(dev, rk, d_x, d_y, d_result, n, 0xff, timer, &us, first, may_fall_back, res);
    if (rc != EXIT_OK)
        goto done; /* RUN_FALLBACK included: the host data is still there */
    rc = EXIT_ERROR;
    if (memcmp(first, all_ones, size) == 0) {
        int written = 0;
        if (int_result) {
            if (gpu_sum_once(dev, rk, d_x, d_y, d_result, n, 0x00, timer, &us, bits, 0, res) !=
                EXIT_OK)
                goto done;
            written = memcmp(bits, all_ones, size) == 0;
        }
        if (!written) {
            print_error("the GPU %s returned without writing its result (a coopreduce bug: "
                        "please report it)", coopreduce_op_name(rk->op));
            goto done;
        }
    }
    /* The host copies are no longer needed; with multi-GB inputs, give the memory back now. */
    cr_npy_free(x);
    if (y != NULL)
        cr_npy_free(y);
    st = coopreduce_last_launch(dev->handle, &res->launch);
    if (st != COOPREDUCE_SUCCESS) {
        print_error("cannot read the launch information: %s", library_message(dev->handle, st));
        goto done;
    }
    res->launch.notice[sizeof res->launch.notice - 1] = '\0';
    res->have_launch = 1;
    results[0] = result_key(first, size);

    for (int r = 1; r <= repeat; r++) {
        /* Integers: alternate the fill, so that an unwritten result shows up as a difference. */
        int fill = int_result && r % 2 == 1 ? 0x00 : 0xff;
        if (gpu_sum_once(dev, rk, d_x, d_y, d_result, n, fill, timer, &us, bits, 0, res) != EXIT_OK)
            goto done;
        if (deterministic && check_repetition(first, bits, size, r) != EXIT_OK)
            goto done;
        results[r] = result_key(bits, size);
        times[r - 1] = us;
    }
    memcpy(res->bits, first, size);
    res->time_us = median(times, repeat);
    res->deterministic = deterministic;
    res->runs = repeat + 1;
    res->distinct = count_distinct(results, repeat + 1);
    rc = EXIT_OK;
done:
    cli_gpu_timer_destroy(timer);
    cli_gpu_free(d_result);
    cli_gpu_free(d_y);
    cli_gpu_free(d_x);
    free(results);
    free(times);
    return rc;
}

/* " (result float32)", " (summed exactly, into an int64)", ... after the dtype line. */
static void describe_result(const result_kind *rk, char *out, size_t outlen)
{
    out[0] = '\0';
    if (rk->op == COOPREDUCE_OP_ARGMIN || rk->op == COOPREDUCE_OP_ARGMAX)
        snprintf(out, outlen, "   (result: the index, counted from 0)");
    else if (rk->op == COOPREDUCE_OP_SUM && !dtype_is_float(rk->dtype))
        snprintf(out, outlen, "   (summed exactly, into an %s)", result_dtype_name(rk));
    else if (rk->rdtype != rk->dtype)
        snprintf(out, outlen, "   (result %s)", result_dtype_name(rk));
}

/* The mode the result was computed in, as the JSON "mode" field and the report name it. */
static const char *mode_label(const sum_options *o, const sum_result *res)
{
    if (o->mode != COOPREDUCE_MODE_DETERMINISTIC)
        return coopreduce_mode_name(o->mode);
    return res->deterministic ? "deterministic" : "nondeterministic";
}

static void print_sum_report(const sum_options *o, const device_ctx *dev, const input_data *in,
                             const input_data *yin, const result_kind *rk, uint64_t n,
                             const sum_result *res)
{
    char value[64], bits[40], result_note[80];
    coopreduce_dtype dtype = rk->dtype;
    size_t elem = coopreduce_dtype_size(dtype);
    const char *method = coopreduce_method_name(o->method);
    const char *op = coopreduce_op_name(rk->op);
    format_value(res->bits, rk->rdtype, rk->rsize, value, sizeof value);
    format_bits(res->bits, rk->rsize, bits, sizeof bits);
    describe_result(rk, result_note, sizeof result_note);
    double bytes = (double)n * (double)elem * (yin != NULL ? 2.0 : 1.0);
    double gbps = res->time_us > 0.0 ? bytes / (res->time_us * 1e3) : 0.0;
    char device_id[32];
    if (dev->is_gpu)
        snprintf(device_id, sizeof device_id, "gpu:%d", dev->ordinal);
    else
        snprintf(device_id, sizeof device_id, "cpu");
    const coopreduce_launch_info *li = res->have_launch ? &res->launch : NULL;

    /* stderr: what the GPU fell back to, and a nondeterministic method's spread. stdout stays
     * the report alone. */
    if (li != NULL && li->notice[0] != '\0')
        print_error("notice: %s", li->notice);
    if (res->fallback[0] != '\0')
        print_error("notice: %s; --device auto computed it on the CPU", res->fallback);
    if (o->json && res->distinct > 1)
        print_error("note: method %s is not deterministic for %s: %d runs gave %d different "
                    "results; the first is reported", method, coopreduce_dtype_name(dtype),
                    res->runs, res->distinct);

    if (o->json) {
        if (dev->auto_note[0] != '\0' && res->fallback[0] == '\0')
            fprintf(stderr, "coopreduce: note: %s\n", dev->auto_note);
        printf("{\"value\": \"%s\", \"bits\": \"%s\", \"dtype\": \"%s\", \"op\": \"%s\", "
               "\"result_dtype\": \"%s\", \"n\": %llu, \"device\": \"%s\", \"device_name\": ",
               value, bits, coopreduce_dtype_name(dtype), op, result_dtype_name(rk),
               (unsigned long long)n, device_id);
        print_json_string(stdout, dev->name);
        printf(", \"method\": \"%s\", \"deterministic\": %s, \"mode\": \"%s\", "
               "\"order_version\": %d, \"time_us\": %.3f, \"gbps\": %.3f, \"repeat\": %d, "
               "\"threads\": ",
               method, res->deterministic ? "true" : "false", mode_label(o, res),
               coopreduce_order_version(), res->time_us, gbps, o->repeat);
        if (li == NULL) {
            if (dev->is_gpu)
                printf("null}\n");
            else
                printf("%d}\n", dev->threads);
        } else {
            /* On a GPU, "threads" is the threads per block of the main kernel. */
            printf("%d, \"blocks\": %d, \"launches\": %d, \"cooperative\": %s, "
                   "\"fell_back\": %s, \"cluster_size\": %d}\n",
                   li->threads, li->blocks, li->launches, li->cooperative ? "true" : "false",
                   li->fell_back ? "true" : "false", li->cluster_size);
        }
        return;
    }

    printf("%-8s = %s\n", op, value);
    printf("bits     = %s\n", bits);
    printf("dtype    = %s   n = %llu%s\n", coopreduce_dtype_name(dtype), (unsigned long long)n,
           result_note);
    printf("input    = %s\n", in->description);
    if (yin != NULL)
        printf("y        = %s\n", yin->description);
    if (dev->is_gpu)
        printf("device   = gpu:%d (%s)", dev->ordinal, dev->name);
    else
        printf("device   = cpu (%s, %d thread%s)", dev->name, dev->threads,
               dev->threads == 1 ? "" : "s");
    printf("\n");
    if (dev->auto_note[0] != '\0')
        printf("           (%s)\n", dev->auto_note);
    if (o->mode == COOPREDUCE_MODE_EXACT)
        printf("method   = %s, mode = exact\n", method);
    else if (!dtype_is_float(dtype) && rk->op == COOPREDUCE_OP_SUM)
        printf("method   = %s, mode = deterministic (integer sums are exact)\n", method);
    else if (o->method == COOPREDUCE_METHOD_CANONICAL)
        printf("method   = canonical (order v%d), mode = deterministic\n",
               coopreduce_order_version());
    else if (res->deterministic)
        printf("method   = %s, mode = deterministic on this GPU (not canonical order v%d: "
               "other GPUs may differ)\n", method, coopreduce_order_version());
    else
        printf("method   = %s, mode = nondeterministic (floating-point atomics); here %d run%s "
               "gave %d distinct result%s\n", method, res->runs, res->runs == 1 ? "" : "s",
               res->distinct, res->distinct == 1 ? "" : "s");
    if (li != NULL) {
        printf("launch   = %d block%s x %d threads, %d launch%s", li->blocks,
               li->blocks == 1 ? "" : "s", li->threads, li->launches,
               li->launches == 1 ? "" : "es");
        if (li->cooperative)
            printf(", cooperative");
        if (li->cluster_size > 0)
            printf(", clusters of %d", li->cluster_size);
        if (li->host_sync)
            printf(", waits for the GPU");
        if (li->fell_back)
            printf(", fell back (see the notice)");
        printf("\n");
    }
    if (res->time_us < 1000.0)
        printf("time     = %.1f us", res->time_us);
    else
        printf("time     = %.3f ms", res->time_us * 1e-3);
    printf(" (median of %d), %.1f GB/s\n", o->repeat, gbps);
}

/* The first GPU-only option set in `o` ("--stages", ...), or NULL. */
static const char *gpu_only_option(const sum_options *o)
{
    if (o->stages > 0)
        return "--stages";
    if (o->grid_blocks >= 0)
        return "--grid-blocks";
    if (o->disabled_features & COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH)
        return "--no-cooperative";
    if (o->disabled_features & COOPREDUCE_FEATURE_CLUSTERS)
        return "--no-clusters";
    return NULL;
}

/* Loads the input x (which = 0) or dot's y (which = 1): generated (y from seed + 1), raw, or
 * .npy. Prints its own error. */
static int load_input(const sum_options *o, int which, input_data *in)
{
    char err[ERRLEN];
    const char *path = which ? o->y_path : o->npy_path;
    memset(in, 0, sizeof *in);
    if (o->have_gen) {
        uint64_t seed = o->seed + (uint64_t)which;
        snprintf(in->description, sizeof in->description, "gen %s, seed %llu%s",
                 cr_gen_name(o->gen_kind), (unsigned long long)seed,
                 which ? " (--seed + 1)" : "");
        return generate(o->gen_kind, o->n, seed, o->dtype, &in->array);
    }
    if (o->raw_path != NULL) {
        path = which ? o->y_path : o->raw_path;
        snprintf(in->description, sizeof in->description, "%s (raw)", path);
        if (cr_raw_read(path, o->dtype, &in->array, err, sizeof err) != 0) {
            print_error("%s", err);
            return EXIT_ERROR;
        }
        return EXIT_OK;
    }
    if (cr_npy_read(path, &in->array, err, sizeof err) != 0) {
        print_error("%s", err);
        return EXIT_ERROR;
    }
    if (o->have_dtype && o->dtype != in->array.dtype) {
        print_error("--dtype %s does not match %s, which holds %s", coopreduce_dtype_name(o->dtype),
                    path, coopreduce_dtype_name(in->array.dtype));
        cr_npy_free(&in->array);
        return EXIT_USAGE;
    }
    char shape[700];
    describe_shape(&in->array, shape, sizeof shape);
    snprintf(in->description, sizeof in->description, "%s, shape %s%s", path, shape,
             in->array.fortran_order ? ", Fortran order" : "");
    return EXIT_OK;
}

/* Both inputs of a dot: the same dtype and element count. */
static int check_dot_inputs(const sum_options *o, const input_data *x, const input_data *y)
{
    const char *xs = o->have_gen ? "x" : o->raw_path != NULL ? o->raw_path : o->npy_path;
    const char *ys = o->have_gen ? "y" : o->y_path;
    if (x->array.dtype != y->array.dtype) {
        print_error("dot needs two arrays of the same dtype: %s holds %s, %s holds %s", xs,
                    coopreduce_dtype_name(x->array.dtype), ys,
                    coopreduce_dtype_name(y->array.dtype));
        return EXIT_ERROR;
    }
    if (x->array.n != y->array.n) {
        print_error("dot needs two arrays of the same length: %s has %llu elements, %s has %llu",
                    xs, (unsigned long long)x->array.n, ys, (unsigned long long)y->array.n);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* After the GPU said it cannot compute the reduction: a CPU handle in dev's place. */
static int fall_back_to_cpu(device_ctx *dev, const sum_options *o, const sum_result *res)
{
    coopreduce_destroy(dev->handle);
    dev->handle = NULL;
    if (open_cpu(dev, o->threads) != EXIT_OK)
        return EXIT_ERROR;
    snprintf(dev->auto_note, sizeof dev->auto_note, "--device auto fell back to the CPU: %.500s",
             res->fallback);
    return configure_handle(dev, o);
}

static int cmd_sum(int argc, char **argv)
{
    static const option_spec specs[] = {
        {"raw", 1}, {"gen", 1}, {"n", 1}, {"seed", 1}, {"dtype", 1}, {"device", 1},
        {"threads", 1}, {"repeat", 1}, {"json", 0}, {"method", 1}, {"stages", 1},
        {"grid-blocks", 1}, {"no-cooperative", 0}, {"no-clusters", 0}, {"op", 1}, {"y", 1},
        {"mode", 1}, {"narrow", 0}, {NULL, 0},
    };
    if (wants_help(argc, argv)) {
        fputs(SUM_HELP, stdout);
        return finish_stdout();
    }
    sum_options o;
    memset(&o, 0, sizeof o);
    o.seed = 1;
    o.dtype = COOPREDUCE_FLOAT32;
    o.op = COOPREDUCE_OP_SUM;
    o.mode = COOPREDUCE_MODE_DETERMINISTIC;
    o.device = DEVICE_AUTO;
    o.device_text = "auto";
    o.repeat = DEFAULT_REPEAT;
    o.method = COOPREDUCE_METHOD_CANONICAL;
    o.grid_blocks = -1;
    int positionals = 0, have_y_option = 0;

    arg_cursor cur = {argc, argv, 1, 0};
    const option_spec *spec;
    const char *value;
    int kind;
    while ((kind = next_arg(&cur, specs, &spec, &value)) != ARG_END) {
        if (kind == ARG_ERROR)
            return EXIT_USAGE;
        if (kind == ARG_POSITIONAL) {
            if (positionals == 2)
                return usage_error("sum takes at most two input files, the second for --op dot "
                                   "(got '%s', '%s' and '%s')", o.npy_path, o.y_path, value);
            if (positionals++ == 0)
                o.npy_path = value;
            else
                o.y_path = value;
            continue;
        }
        const char *name = spec->name;
        if (strcmp(name, "raw") == 0) {
            o.raw_path = value;
        } else if (strcmp(name, "gen") == 0) {
            if (cr_gen_parse(value, &o.gen_kind) != 0)
                return usage_error("--gen '%s': unknown kind (ones, uniform, normal, signed)",
                                   value);
            o.have_gen = 1;
        } else if (strcmp(name, "n") == 0) {
            if (parse_count(value, &o.n) != 0)
                return usage_error("--n '%s': not an element count (e.g. 1000000, 2^24, 1<<24, "
                                   "16M)", value);
            o.have_n = 1;
        } else if (strcmp(name, "seed") == 0) {
            if (parse_seed(value, &o.seed) != 0)
                return usage_error("--seed '%s': not an unsigned 64-bit integer", value);
            o.have_seed = 1;
        } else if (strcmp(name, "dtype") == 0) {
            if (parse_dtype(value, &o.dtype) != 0)
                return usage_error("--dtype '%s': unsupported (" DTYPE_CHOICES ")", value);
            o.have_dtype = 1;
        } else if (strcmp(name, "op") == 0) {
            if (coopreduce_op_from_name(value, &o.op) != COOPREDUCE_SUCCESS)
                return usage_error("--op '%s': unknown operation (sum, min, max, absmax, mean, "
                                   "sumsq, norm2, dot, argmin, argmax)", value);
        } else if (strcmp(name, "y") == 0) {
            o.y_path = value;
            have_y_option = 1;
        } else if (strcmp(name, "mode") == 0) {
            if (coopreduce_mode_from_name(value, &o.mode) != COOPREDUCE_SUCCESS)
                return usage_error("--mode '%s': unknown mode (deterministic or exact)", value);
        } else if (strcmp(name, "narrow") == 0) {
            o.narrow = 1;
        } else if (strcmp(name, "device") == 0) {
            if (parse_device(value, &o.device, &o.ordinal) != 0)
                return usage_error("--device '%s': expected auto, cpu, gpu or gpu:K", value);
            o.device_text = value;
        } else if (strcmp(name, "threads") == 0) {
            if (parse_small_int(value, 0, 1 << 16, &o.threads) != 0)
                return usage_error("--threads '%s': expected 0 (every CPU) .. 65536", value);
        } else if (strcmp(name, "repeat") == 0) {
            if (parse_small_int(value, 1, MAX_REPEAT, &o.repeat) != 0)
                return usage_error("--repeat '%s': expected 1 .. %d", value, MAX_REPEAT);
        } else if (strcmp(name, "json") == 0) {
            o.json = 1;
        } else if (strcmp(name, "method") == 0) {
            if (coopreduce_method_from_name(value, &o.method) != COOPREDUCE_SUCCESS) {
                char names[512];
                method_list(names, sizeof names);
                return usage_error("--method '%s': unknown method (one of: %s)", value, names);
            }
        } else if (strcmp(name, "stages") == 0) {
            if (parse_small_int(value, 1, 8, &o.stages) != 0)
                return usage_error("--stages '%s': expected 1 .. 8", value);
        } else if (strcmp(name, "grid-blocks") == 0) {
            if (parse_small_int(value, 0, 0x7fffffff, &o.grid_blocks) != 0)
                return usage_error("--grid-blocks '%s': expected 0 (automatic) .. 2147483647",
                                   value);
        } else if (strcmp(name, "no-cooperative") == 0) {
            o.disabled_features |= COOPREDUCE_FEATURE_COOPERATIVE_LAUNCH;
        } else if (strcmp(name, "no-clusters") == 0) {
            o.disabled_features |= COOPREDUCE_FEATURE_CLUSTERS;
        }
    }

    int is_dot = o.op == COOPREDUCE_OP_DOT;
    if (have_y_option && positionals == 2)
        return usage_error("dot takes two inputs: X.npy Y.npy, or one input and --y FILE");
    if (!have_y_option && positionals == 2 && (o.raw_path != NULL || o.have_gen))
        return usage_error("sum takes one input: FILE.npy, --raw FILE or --gen KIND");
    int sources = (o.npy_path != NULL) + (o.raw_path != NULL) + o.have_gen;
    if (sources == 0)
        return usage_error("sum needs an input: FILE.npy, --raw FILE or --gen KIND "
                           "(see coopreduce sum --help)");
    if (sources > 1)
        return usage_error("sum takes one input: FILE.npy, --raw FILE or --gen KIND");
    if (o.y_path != NULL && !is_dot)
        return usage_error("a second input ('%s') applies to --op dot only", o.y_path);
    if (o.y_path != NULL && o.have_gen)
        return usage_error("--op dot --gen generates y itself (from --seed + 1): drop '%s'",
                           o.y_path);
    if (is_dot && o.y_path == NULL && !o.have_gen)
        return usage_error("--op dot needs two inputs: X.npy Y.npy, --raw X --y Y, or --gen");
    if (o.have_gen && !o.have_n)
        return usage_error("--gen needs --n N");
    if (!o.have_gen && (o.have_n || o.have_seed))
        return usage_error("--%s applies only to --gen", o.have_n ? "n" : "seed");
    if (o.raw_path != NULL && !o.have_dtype)
        return usage_error("--raw needs --dtype (" DTYPE_CHOICES ")");
    if (o.stages > 0 && o.method != COOPREDUCE_METHOD_PIPELINE)
        return usage_error("--stages applies only to --method pipeline");
    const char *method_name = coopreduce_method_name(o.method);
    const char *gpu_option = gpu_only_option(&o);
    /* Asked for the CPU: a GPU method or option contradicts it; nothing is switched silently. */
    if (o.device == DEVICE_CPU && o.method != COOPREDUCE_METHOD_CANONICAL)
        return usage_error("method %s runs on a GPU only (the CPU computes the canonical "
                           "order: drop --method, or use --device gpu)", method_name);
    if (o.device == DEVICE_CPU && gpu_option != NULL)
        return usage_error("%s applies to a GPU only, not to --device cpu", gpu_option);
    if (o.have_gen && (o.dtype == COOPREDUCE_INT32 || o.dtype == COOPREDUCE_UINT32) &&
        o.op == COOPREDUCE_OP_SUM && o.n > INT32_MAX_N) {
        /* Said before generating gigabytes; the library refuses such a sum with this message. */
        print_error("%s sums are limited to 2^32 elements (where a 64-bit result cannot "
                    "overflow); got n = %llu", coopreduce_dtype_name(o.dtype),
                    (unsigned long long)o.n);
        return EXIT_ERROR;
    }

    /* The inputs first: a file error, a dtype the operation does not take or a dot mismatch is
     * reported before any device is touched. */
    input_data in, yin;
    memset(&yin, 0, sizeof yin);
    int rc = load_input(&o, 0, &in);
    if (rc == EXIT_OK && (is_dot || o.y_path != NULL)) {
        rc = load_input(&o, 1, &yin);
        if (rc == EXIT_OK)
            rc = check_dot_inputs(&o, &in, &yin);
    }
    result_kind rk = {o.op, in.array.dtype, in.array.dtype, 0};
    if (rc == EXIT_OK) {
        rk.rsize = coopreduce_op_result_size(o.op, rk.dtype, o.narrow, &rk.rdtype);
        if (o.narrow && !dtype_is_half(rk.dtype)) {
            print_error("--narrow applies to float16 and bfloat16 input only (this is %s)",
                        coopreduce_dtype_name(rk.dtype));
            rc = EXIT_USAGE;
        } else if (rk.rsize == 0) {
            print_error("%s of %s is not supported: sumsq, norm2 and dot take floating-point "
                        "input", coopreduce_op_name(o.op), coopreduce_dtype_name(rk.dtype));
            rc = EXIT_ERROR;
        }
    }
    device_ctx dev;
    memset(&dev, 0, sizeof dev);
    if (rc == EXIT_OK)
        rc = open_device(&dev, o.device, o.ordinal, o.threads, o.device_text);
    if (rc == EXIT_OK && !dev.is_gpu &&
        (o.method != COOPREDUCE_METHOD_CANONICAL || gpu_option != NULL)) {
        /* --device auto found no usable GPU. */
        if (o.method != COOPREDUCE_METHOD_CANONICAL)
            print_error("method %s runs on a GPU only (%s)", method_name, dev.auto_note);
        else
            print_error("%s applies to a GPU only (%s)", gpu_option, dev.auto_note);
        rc = EXIT_ERROR;
    }
    if (rc == EXIT_OK)
        rc = configure_handle(&dev, &o);
    if (rc == EXIT_OK && dev.is_gpu)
        rc = configure_gpu(&dev, &o);

    uint64_t n = in.array.n;
    sum_result res;
    memset(&res, 0, sizeof res);
    cr_npy_array *y = is_dot ? &yin.array : NULL;
    if (rc == EXIT_OK && dev.is_gpu) {
        /* auto may fall back to the CPU for what the GPU cannot compute yet, but not when a
         * GPU method or option was asked for. */
        int may_fall_back = o.device == DEVICE_AUTO && o.method == COOPREDUCE_METHOD_CANONICAL &&
                            gpu_option == NULL;
        rc = run_sum_gpu(&dev, &rk, &in.array, y, o.method, o.repeat, may_fall_back, &res);
        if (rc == RUN_FALLBACK) {
            rc = fall_back_to_cpu(&dev, &o, &res);
            if (rc == EXIT_OK)
                rc = run_sum_cpu(&dev, &rk, &in.array, y, o.repeat, &res);
        }
    } else if (rc == EXIT_OK) {
        rc = run_sum_cpu(&dev, &rk, &in.array, y, o.repeat, &res);
    }
    cr_npy_free(&in.array);
    cr_npy_free(&yin.array);

    coopreduce_status st = coopreduce_destroy(dev.handle);
    if (rc == EXIT_OK && st != COOPREDUCE_SUCCESS) {
        print_error("releasing the device failed: %s", library_message(NULL, st));
        rc = EXIT_ERROR;
    }
    if (rc != EXIT_OK)
        return rc;
    print_sum_report(&o, &dev, &in, is_dot ? &yin : NULL, &rk, n, &res);
    rc = finish_stdout();
    if (rc == EXIT_OK && !result_fits(&rk, res.bits)) {
        print_error("the exact %s sum does not fit in 64 bits: the value printed is the exact "
                    "128-bit sum", coopreduce_dtype_name(rk.dtype));
        return EXIT_ERROR;
    }
    return rc;
}

/* ================================================================ gen */

/* Raw little-endian output. The buffer is ours, so a big-endian host swaps it in place. */
static int write_raw(const char *path, void *data, uint64_t n, coopreduce_dtype dtype)
{
    size_t elem = coopreduce_dtype_size(dtype);
    const uint16_t probe = 1;
    unsigned char low;
    memcpy(&low, &probe, 1);
    if (low != 1) {
        unsigned char *p = data;
        for (uint64_t k = 0; k < n; k++, p += elem)
            for (size_t a = 0, b = elem - 1; a < b; a++, b--) {
                unsigned char t = p[a];
                p[a] = p[b];
                p[b] = t;
            }
    }
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        print_error("cannot create %s: %s", path, strerror(errno));
        return EXIT_ERROR;
    }
    const unsigned char *p = data;
    size_t left = (size_t)n * elem;
    int failed = 0;
    while (left > 0 && !failed) {
        size_t block = left < ((size_t)64 << 20) ? left : ((size_t)64 << 20);
        if (fwrite(p, 1, block, f) != block)
            failed = 1;
        p += block;
        left -= block;
    }
    int saved_errno = errno;
    if (fclose(f) != 0 && !failed) {
        failed = 1;
        saved_errno = errno;
    }
    if (failed) {
        print_error("cannot write %s: %s", path, strerror(saved_errno));
        remove(path);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

static int cmd_gen(int argc, char **argv)
{
    static const option_spec specs[] = {
        {"n", 1}, {"seed", 1}, {"dtype", 1}, {"out", 1}, {"raw-out", 1}, {NULL, 0},
    };
    if (wants_help(argc, argv)) {
        fputs(GEN_HELP, stdout);
        return finish_stdout();
    }
    const char *kind_name = NULL, *out_path = NULL, *raw_out_path = NULL;
    uint64_t n = 0, seed = 1;
    int have_n = 0;
    coopreduce_dtype dtype = COOPREDUCE_FLOAT32;

    arg_cursor cur = {argc, argv, 1, 0};
    const option_spec *spec;
    const char *value;
    int kind;
    while ((kind = next_arg(&cur, specs, &spec, &value)) != ARG_END) {
        if (kind == ARG_ERROR)
            return EXIT_USAGE;
        if (kind == ARG_POSITIONAL) {
            if (kind_name != NULL)
                return usage_error("gen takes one KIND (got '%s' and '%s')", kind_name, value);
            kind_name = value;
        } else if (strcmp(spec->name, "n") == 0) {
            if (parse_count(value, &n) != 0)
                return usage_error("--n '%s': not an element count (e.g. 1000000, 2^24, 1<<24, "
                                   "16M)", value);
            have_n = 1;
        } else if (strcmp(spec->name, "seed") == 0) {
            if (parse_seed(value, &seed) != 0)
                return usage_error("--seed '%s': not an unsigned 64-bit integer", value);
        } else if (strcmp(spec->name, "dtype") == 0) {
            if (parse_dtype(value, &dtype) != 0)
                return usage_error("--dtype '%s': unsupported (" DTYPE_CHOICES ")", value);
        } else if (strcmp(spec->name, "out") == 0) {
            out_path = value;
        } else if (strcmp(spec->name, "raw-out") == 0) {
            raw_out_path = value;
        }
    }
    cr_gen_kind gen_kind;
    if (kind_name == NULL)
        return usage_error("gen needs a KIND: ones, uniform, normal or signed");
    if (cr_gen_parse(kind_name, &gen_kind) != 0)
        return usage_error("gen '%s': unknown kind (ones, uniform, normal, signed)", kind_name);
    if (!have_n)
        return usage_error("gen needs --n N");
    if ((out_path != NULL) == (raw_out_path != NULL))
        return usage_error("gen needs exactly one of --out FILE.npy and --raw-out FILE");
    if (out_path != NULL && dtype == COOPREDUCE_BFLOAT16)
        return usage_error("NumPy has no bfloat16 type, so a .npy file cannot hold it: use "
                           "--raw-out FILE");

    cr_npy_array a;
    int rc = generate(gen_kind, n, seed, dtype, &a);
    if (rc != EXIT_OK)
        return rc;
    if (out_path != NULL) {
        char err[ERRLEN];
        if (cr_npy_write(out_path, a.data, n, dtype, err, sizeof err) != 0) {
            print_error("%s", err);
            rc = EXIT_ERROR;
        }
    } else {
        rc = write_raw(raw_out_path, a.data, n, dtype);
    }
    cr_npy_free(&a);
    if (rc != EXIT_OK)
        return rc;
    printf("wrote %llu %s elements (%s, seed %llu) to %s%s\n", (unsigned long long)n,
           coopreduce_dtype_name(dtype), cr_gen_name(gen_kind), (unsigned long long)seed,
           out_path != NULL ? out_path : raw_out_path, out_path != NULL ? "" : " (raw)");
    return finish_stdout();
}

/* ================================================================ info */

static int cmd_info(int argc, char **argv)
{
    static const option_spec specs[] = {{"json", 0}, {NULL, 0}};
    if (wants_help(argc, argv)) {
        fputs(INFO_HELP, stdout);
        return finish_stdout();
    }
    int json = 0;
    arg_cursor cur = {argc, argv, 1, 0};
    const option_spec *spec;
    const char *value;
    int kind;
    while ((kind = next_arg(&cur, specs, &spec, &value)) != ARG_END) {
        if (kind == ARG_ERROR)
            return EXIT_USAGE;
        if (kind == ARG_POSITIONAL)
            return usage_error("info takes no argument '%s'", value);
        json = 1;
    }

    int count = 0;
    coopreduce_status st = coopreduce_gpu_count(&count);
    if (st != COOPREDUCE_SUCCESS) {
        print_error("cannot count GPUs: %s", library_message(NULL, st));
        return EXIT_ERROR;
    }
    coopreduce_gpu_props *props = NULL;
    if (count > 0) {
        props = calloc((size_t)count, sizeof *props);
        if (props == NULL) {
            print_error("out of memory");
            return EXIT_ERROR;
        }
    }
    for (int g = 0; g < count; g++) {
        st = coopreduce_gpu_props_get(g, &props[g]);
        if (st != COOPREDUCE_SUCCESS) {
            print_error("cannot query GPU %d: %s", g, library_message(NULL, st));
            free(props);
            return EXIT_ERROR;
        }
    }
    char cpu_name[256];
    cpu_model_name(cpu_name, sizeof cpu_name);
    int cpus = online_cpu_count();
    int methods = method_count();
    const double GIB = 1024.0 * 1024.0 * 1024.0;

    if (json) {
        printf("{\"version\": \"%s\", \"order_version\": %d, \"cuda\": %s, \"cpu_count\": %d, "
               "\"cpu_name\": ",
               coopreduce_version_string(), coopreduce_order_version(),
               BUILT_WITH_CUDA ? "true" : "false", cpus);
        print_json_string(stdout, cpu_name);
        printf(", \"gpus\": [");
        for (int g = 0; g < count; g++) {
            const coopreduce_gpu_props *p = &props[g];
            printf("%s{\"ordinal\": %d, \"name\": ", g ? ", " : "", p->ordinal);
            print_json_string(stdout, p->name);
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
            printf("%s{\"name\": \"%s\", \"deterministic_float32\": %s, "
                   "\"deterministic_float64\": %s, \"deterministic_int32\": %s, \"gpu_only\": %s, "
                   "\"description\": ",
                   m ? ", " : "", coopreduce_method_name(method),
                   coopreduce_method_deterministic(method, COOPREDUCE_FLOAT32) == 1 ? "true" : "false",
                   coopreduce_method_deterministic(method, COOPREDUCE_FLOAT64) == 1 ? "true" : "false",
                   coopreduce_method_deterministic(method, COOPREDUCE_INT32) == 1 ? "true" : "false",
                   method == COOPREDUCE_METHOD_CANONICAL ? "false" : "true");
            print_json_string(stdout, method_description(method));
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("coopreduce %s, canonical order v%d, built %s CUDA\n",
               coopreduce_version_string(), coopreduce_order_version(),
               BUILT_WITH_CUDA ? "with" : "without");
        printf("CPU: %d online (%s)\n", cpus, cpu_name);
        if (count == 0)
            printf("no CUDA GPU found (the CPU path is available)\n");
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
                   "%s\n", p->ordinal,
                   p->cluster_launch ? "supported"
                                     : "not supported (they need compute capability 9.0)",
                   p->cooperative_launch ? "supported"
                                         : "not supported (grid and gridsync fall back)");
        }
    }
    free(props);
    return finish_stdout();
}

/* ================================================================ main */

static int print_version(void)
{
    printf("coopreduce %s (canonical order v%d, %s CUDA)\n", coopreduce_version_string(),
           coopreduce_order_version(), BUILT_WITH_CUDA ? "with" : "without");
    return finish_stdout();
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        fputs(MAIN_HELP, stdout);
        return finish_stdout();
    }
    const char *topic = argv[1];
    if (strcmp(topic, "sum") == 0)
        fputs(SUM_HELP, stdout);
    else if (strcmp(topic, "gen") == 0)
        fputs(GEN_HELP, stdout);
    else if (strcmp(topic, "info") == 0)
        fputs(INFO_HELP, stdout);
    else if (strcmp(topic, "bench") == 0) {
        char bench[] = "bench", help[] = "--help";
        char *bench_argv[] = {bench, help, NULL};
        return cli_bench_main(2, bench_argv);
    } else if (strcmp(topic, "help") == 0)
        fputs(MAIN_HELP, stdout);
    else
        return usage_error("no help for unknown command '%s' (commands: sum, gen, info, bench)",
                           topic);
    return finish_stdout();
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("no command given (try 'coopreduce --help')");
    const char *command = argv[1];
    if (strcmp(command, "sum") == 0)
        return cmd_sum(argc - 1, argv + 1);
    if (strcmp(command, "gen") == 0)
        return cmd_gen(argc - 1, argv + 1);
    if (strcmp(command, "info") == 0)
        return cmd_info(argc - 1, argv + 1);
    if (strcmp(command, "bench") == 0)
        return cli_bench_main(argc - 1, argv + 1);
    if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 ||
        strcmp(command, "-h") == 0)
        return cmd_help(argc - 1, argv + 1);
    if (strcmp(command, "--version") == 0 || strcmp(command, "version") == 0)
        return print_version();
    return usage_error("unknown command '%s' (try 'coopreduce --help')", command);
}
