/* help.c — the help text of every command (help.h). */
#include "help.h"

#include <stdio.h>
#include <string.h>

#include "messages.h"

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
    "coopreduce --version prints the version. Exit status: 0 success, 1 failure, 2 usage error\n"
    "(an unknown option, a bad value, an option given twice: no option is repeatable).\n"
    "Options are spelled --name VALUE or --name=VALUE; '--' ends them.\n";

static const char *const SUM_HELP =
    "usage: coopreduce sum INPUT.npy|- [--op OP] [options]\n"
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
    "  -                  the .npy file on standard input (sum - < a.npy); --raw - and --y -\n"
    "                     read standard input too (one of the two inputs at most)\n"
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
    "  --max-input SIZE   the most data read from standard input, a pipe or a device (default\n"
    "                     4G = 4 GiB; 512M, 16G, 2^34 bytes); more is an error, reported as\n"
    "                     soon as it arrives, and a .npy header declaring more fails at once.\n"
    "                     Such streams are read as the data arrives; regular files are read at\n"
    "                     their size, whatever --max-input says.\n"
    "\n"
    "result:\n"
    "  --mode M           deterministic (default: canonical order v1) or exact (the correctly\n"
    "                     rounded sum, for sum of floats and dot of float32/float64, on the CPU\n"
    "                     and the GPU; integer sums, min, max, absmax, argmin, argmax are the\n"
    "                     same in both modes; mean, sumsq, norm2, 16-bit dot, and float sums\n"
    "                     and dots under a non-canonical --method fail: one line, exit 1)\n"
    "  --narrow           float16/bfloat16 input: sum, mean, sumsq, norm2 and dot rounded once\n"
    "                     more, to the input type (an error for other input types)\n"
    "A float result is printed as NumPy prints it: the shortest decimal that reads back to the\n"
    "same bits (float16 and bfloat16 results too), positional from 1e-4 up to 1e3 (float16), 1e2\n"
    "(bfloat16), 1e6 (float32) or 1e16 (float64), else in scientific notation, so that no digit\n"
    "is shown that the type does not hold (float32 2^31 is 2.1474836e+09 and 2^20 is\n"
    "1.048576e+06; float64 2^20 is 1048576.0).\n"
    "Integers are exact decimals (the 128-bit sums of int64 and uint64 included), argmin and\n"
    "argmax the index. bits is the result's IEEE bits in hex, or the two's complement of an\n"
    "integer result (32 hex digits for a 128-bit sum). A sum of int64 or uint64\n"
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
    "                      (--out FILE.npy | --raw-out FILE) [--force]\n"
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
    "  --raw-out FILE     write raw little-endian elements instead\n"
    "  --force            replace FILE if it exists (without it, an existing file is an error)\n"
    "\n"
    "output files: the data goes to a temporary file beside FILE (.FILE.tmp-XXXXXX), which is\n"
    "renamed to FILE once complete, so FILE is never seen half-written: a failed or interrupted\n"
    "run leaves FILE as it was (or absent) and removes the temporary file (a kill -9 may leave\n"
    "it behind, never FILE). An existing FILE is replaced only with --force, keeping its\n"
    "permissions. A symbolic link stays: the file it points to is written. A device or a named\n"
    "pipe (/dev/null, a FIFO) is written in place and never removed (a block device only with\n"
    "--force); FILE - (or /dev/stdout) writes to standard output, and the closing 'wrote ...'\n"
    "line goes to stderr instead.\n";

static const char *const INFO_HELP =
    "usage: coopreduce info [--json]\n"
    "\n"
    "Lists the CUDA GPUs (name, SMs, memory, compute capability, cooperative launch, clusters,\n"
    "whether this build has code for it), the reduction methods (--method of coopreduce sum:\n"
    "whether each is deterministic for floats, and which GPU can run the ones that need\n"
    "clusters or cooperative launch), the library and canonical order versions, and the CPUs.\n";

static const char *const BENCH_HELP =
    "usage: coopreduce bench [--device gpu|gpu:K|cpu] [--quick] [--n LIST] [--dtype LIST]\n"
    "                        [--method LIST|all] [--batches B] [--cold] [--no-host-latency]\n"
    "                        [--no-extras] [--stages LIST] [--threads T] [--json FILE]\n"
    "                        [--csv FILE] [--op LIST|all [--mode LIST|all]]\n"
    "  GPU: every selected coopreduce method against CUB DeviceReduce::Sum, a float4 read\n"
    "  kernel (the bandwidth ceiling), an empty kernel (the launch floor) and a device-to-\n"
    "  device copy, all in the same run; the latency of a canonical result on the host; then\n"
    "  (unless --no-extras) the tutorials' headline (1,048,576 ones, block against grid) and\n"
    "  the distinct results of 20 runs of every method on one random array.\n"
    "  CPU: the canonical float32 sum (with --op, each operation) against a streaming\n"
    "  read of the same bytes on all cores (or --threads T).\n"
    "  --n takes a comma list of element counts, spelled as for coopreduce sum (e.g.\n"
    "  2^20,16M,1e6). Default GPU sweep: 2^10 .. 2^28 in steps of 2^2 (2^20 = 1,048,576\n"
    "  included); --quick: 2^16,2^20,2^24,2^28 and 5 batches; CPU: 2^20,2^24,2^28 (--quick: the\n"
    "  first two).\n"
    "  --dtype: comma list of f32, f64, i32 for the methods (default f32,f64). --method: comma\n"
    "  list of method names (coopreduce info lists them) or all (the default). --stages\n"
    "  1,2,4,8: the pipeline method once per stage count (rows pipeline/S).\n"
    "  --op sum,min,...|all: instead of the methods, each operation through coopreduce_reduce\n"
    "  over each --dtype (any of f32, f64, i32, f16, bf16, i64, u32, u64, or all; pairs the\n"
    "  library does not define, such as norm2 of integers, are skipped) against the float4\n"
    "  read of the same bytes (both arrays for dot), in each --mode (deterministic, exact, or\n"
    "  all; default deterministic); with --device cpu, host wall time against an integer\n"
    "  streaming read of the same bytes on the same threads.\n"
    "  --json FILE, --csv FILE: the rows, also as files (replaced if they exist).\n"
    "  Markdown tables on stdout, progress on stderr.\n";

static const struct {
    const char *command;
    const char *text;
} TOPICS[] = {
    {"sum", SUM_HELP},     {"gen", GEN_HELP},   {"info", INFO_HELP},
    {"bench", BENCH_HELP}, {"help", MAIN_HELP},
};

int cli_print_help(const char *command)
{
    const char *text = MAIN_HELP;
    if (command != NULL) {
        text = NULL;
        for (size_t k = 0; k < sizeof TOPICS / sizeof TOPICS[0]; k++)
            if (strcmp(command, TOPICS[k].command) == 0) text = TOPICS[k].text;
        if (text == NULL)
            return cli_usage_error("no help for unknown command '%s' (commands: sum, gen, info, "
                                   "bench)",
                                   command);
    }
    fputs(text, stdout);
    return cli_finish_stdout();
}
