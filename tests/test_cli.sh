#!/usr/bin/env bash
# test_cli.sh — end-to-end tests of the `coopreduce` command.
#
# usage: bash tests/test_cli.sh PATH_TO_coopreduce SCRATCH_DIR
#
# Needs only bash, coreutils and awk (JSON is read with sed: no jq). python3, when present, adds
# an independent check of the int32 sums (stdlib only: struct; no numpy). On a machine with a
# usable GPU it also checks that --device gpu and --device cpu give identical bits, and runs
# every --method; without one, it says which GPU cases it skips and checks that the GPU-only
# options fail cleanly.
set -u

if [ $# -ne 2 ]; then
    echo "usage: bash test_cli.sh PATH_TO_coopreduce SCRATCH_DIR" >&2
    exit 2
fi
CLI=$1
DIR=$2
mkdir -p "$DIR" || exit 2
OUT="$DIR/stdout"
ERR="$DIR/stderr"

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
    failed=$((failed + 1))
    echo "FAIL: $*" >&2
    if [ -s "$ERR" ]; then sed 's/^/    stderr: /' "$ERR" >&2; fi
}

# Runs the CLI; stdout in $OUT, stderr in $ERR, exit status in $RC.
run() {
    "$CLI" "$@" >"$OUT" 2>"$ERR"
    RC=$?
}

# The value of a top-level "key" in the one-line JSON object in $OUT (quotes stripped).
json() {
    sed -n 's/.*"'"$1"'": *"\{0,1\}\([^",}]*\)"\{0,1\}[,}].*/\1/p' "$OUT" | head -n 1
}

# expect_json DESCRIPTION KEY EXPECTED -- checks a key of the last run.
expect_json() {
    local got
    got=$(json "$2")
    if [ "$RC" -eq 0 ] && [ "$got" = "$3" ]; then
        pass
    else
        fail "$1: $2 = '$got', expected '$3' (exit $RC)"
    fi
}

# sum_bits ARGS... -- prints the bits of `coopreduce sum ARGS --json`, or FAILED.
sum_bits() {
    run sum "$@" --json
    if [ "$RC" -ne 0 ]; then
        echo "FAILED(exit $RC: $(head -n 1 "$ERR"))"
        return
    fi
    json bits
}

# expect_same DESCRIPTION A B
expect_same() {
    case "$2" in
    0x*) if [ "$2" = "$3" ]; then pass; else fail "$1: '$2' != '$3'"; fi ;;
    *) fail "$1: '$2' (vs '$3')" ;;
    esac
}

# expect_error DESCRIPTION ARGS... -- a non-zero exit (not a crash) and exactly one line on
# stderr, starting "coopreduce: ".
expect_error() {
    local what=$1
    shift
    run "$@"
    local lines last_char
    lines=$(wc -l <"$ERR")
    last_char=$(tail -c 1 "$ERR" | od -An -c | tr -d ' ')
    if [ "$RC" -ne 0 ] && [ "$RC" -lt 128 ] && [ "$lines" -eq 1 ] && [ "$last_char" = '\n' ] &&
        [ "$(head -c 12 "$ERR")" = "coopreduce: " ]; then
        pass
    else
        fail "$what: exit $RC, $lines stderr line(s)"
    fi
}

# ---------------------------------------------------------------- basic sums on the CPU

run sum --gen ones --n 1048576 --device cpu --json
expect_json "ones f32" value 1048576
expect_json "ones f32" bits 0x49800000
expect_json "ones f32" dtype float32
expect_json "ones f32" n 1048576
expect_json "ones f32" device cpu
expect_json "ones f32" method canonical
expect_json "ones f32" mode deterministic
expect_json "ones f32" order_version 1
expect_json "ones f32" repeat 5
if [ "$(wc -l <"$OUT")" -eq 1 ] && [ ! -s "$ERR" ] && grep -q '^{.*}$' "$OUT"; then
    pass
else
    fail "--json: stdout must be one JSON object and stderr empty"
fi

run sum --gen ones --n 1048576 --device cpu
if [ "$RC" -eq 0 ] && grep -q '^sum *= 1048576$' "$OUT" && grep -q '^bits *= 0x49800000$' "$OUT"; then
    pass
else
    fail "human output of ones f32"
fi

run sum --gen ones --n 1000 --dtype f64 --device cpu --json
expect_json "ones f64" value 1000
expect_json "ones f64" bits 0x408f400000000000
expect_json "ones f64" dtype float64

run sum --gen ones --n 0 --device cpu --json
expect_json "n = 0" value 0
expect_json "n = 0" bits 0x00000000

# 2^24 + 1 ones: the canonical tree sums exactly (every partial is an integer <= 2^24), where a
# sequential float32 loop would stop at 2^24.
run sum --gen ones --n 16777217 --device cpu --json
expect_json "2^24 + 1 ones" value 16777216
run sum --gen ones --n 4097 --device cpu --json
expect_json "4097 ones" value 4097

# Element-count spellings.
for spelling in 1048576 '2^20' '1<<20' 1M 1Mi '2**20'; do
    run sum --gen ones --n "$spelling" --device cpu --repeat 1 --json
    expect_json "--n $spelling" n 1048576
done

# The thread count never changes the bits.
t1=$(sum_bits --gen uniform --n 3000001 --device cpu --threads 1)
t2=$(sum_bits --gen uniform --n 3000001 --device cpu --threads 2)
expect_same "--threads 1 vs 2 (uniform f32, n = 3000001)" "$t1" "$t2"
t1=$(sum_bits --gen normal --n 3000001 --dtype f64 --device cpu --threads 1)
t3=$(sum_bits --gen normal --n 3000001 --dtype f64 --device cpu --threads 3)
expect_same "--threads 1 vs 3 (normal f64, n = 3000001)" "$t1" "$t3"

# ---------------------------------------------------------------- files

for spec in "uniform f32 1000003 7" "normal f64 500001 1" "signed f32 65537 123" "ones f64 4096 1"; do
    read -r kind dtype n seed <<<"$spec"
    npy="$DIR/$kind-$dtype.npy"
    raw="$DIR/$kind-$dtype.raw"
    expected=$(sum_bits --gen "$kind" --n "$n" --seed "$seed" --dtype "$dtype" --device cpu)

    run gen "$kind" --n "$n" --seed "$seed" --dtype "$dtype" --out "$npy"
    if [ "$RC" -eq 0 ] && [ -s "$npy" ]; then pass; else fail "gen $spec --out"; fi
    got=$(sum_bits "$npy" --device cpu)
    expect_same "sum of gen --out .npy ($spec)" "$got" "$expected"

    run gen "$kind" --n "$n" --seed "$seed" --dtype "$dtype" --raw-out "$raw"
    size=$(wc -c <"$raw")
    elem=4
    [ "$dtype" = f64 ] && elem=8
    if [ "$RC" -eq 0 ] && [ "$size" -eq $((n * elem)) ]; then
        pass
    else
        fail "gen $spec --raw-out: $size bytes"
    fi
    got=$(sum_bits --raw "$raw" --dtype "$dtype" --device cpu)
    expect_same "sum of gen --raw-out file ($spec)" "$got" "$expected"
done

# A different seed gives different data.
s1=$(sum_bits --gen uniform --n 100000 --seed 1 --device cpu)
s2=$(sum_bits --gen uniform --n 100000 --seed 2 --device cpu)
if [ "$s1" != "$s2" ]; then pass; else fail "seeds 1 and 2 give the same sum $s1"; fi

# An empty raw file is an empty array.
: >"$DIR/empty.raw"
run sum --raw "$DIR/empty.raw" --dtype f32 --device cpu --json
expect_json "empty raw file" bits 0x00000000

# ---------------------------------------------------------------- int32

# The sum of int32 elements is an exact int64: "value" is the decimal integer, "bits" its two's
# complement in 16 hex digits.
run sum --gen ones --n 1000 --dtype i32 --device cpu --json
expect_json "ones i32" value 1000
expect_json "ones i32" bits 0x00000000000003e8
expect_json "ones i32" dtype int32
expect_json "ones i32" n 1000
expect_json "ones i32" method canonical
expect_json "ones i32" deterministic true
run sum --gen ones --n 1000 --dtype int32 --device cpu --json
expect_json "--dtype int32 spelling" value 1000
run sum --gen ones --n 0 --dtype i32 --device cpu --json
expect_json "n = 0 i32" value 0
expect_json "n = 0 i32" bits 0x0000000000000000
run sum --gen ones --n 1000 --dtype i32 --device cpu
if [ "$RC" -eq 0 ] && grep -q '^sum *= 1000$' "$OUT" && grep -q '^bits *= 0x00000000000003e8$' "$OUT" &&
    grep -q '^dtype *= int32' "$OUT" && grep -q '^method *= canonical' "$OUT"; then
    pass
else
    fail "human output of ones i32"
fi

# Independent sums of a little-endian int32 file: awk over od's decimals (exact: |sum| < 2^53
# here), and python3's struct module when python3 is present. od reads host order: every host
# this runs on is little-endian.
awk_sum_i32() {
    od -An -v -t d4 "$1" | awk '{ for (i = 1; i <= NF; i++) s += $i } END { printf "%.0f\n", s }'
}
HAVE_PYTHON=0
if command -v python3 >/dev/null 2>&1 && python3 -c 'import struct' >/dev/null 2>&1; then
    HAVE_PYTHON=1
else
    echo "SKIP: test_cli: python3 not found: the int32 sums are cross-checked with awk only"
fi
py_sum_i32() { # FILE [OFFSET]
    python3 -c 'import struct, sys
data = open(sys.argv[1], "rb").read()[int(sys.argv[2]):]
print(sum(struct.unpack("<%di" % (len(data) // 4), data)))' "$1" "${2:-0}"
}

# Generated uniform int32 (every int32 equally likely): through a .npy file and a raw file.
n=100003
run gen uniform --n $n --seed 9 --dtype i32 --out "$DIR/uniform-i32.npy"
if [ "$RC" -eq 0 ] && [ -s "$DIR/uniform-i32.npy" ]; then pass; else fail "gen uniform i32 --out"; fi
run gen uniform --n $n --seed 9 --dtype i32 --raw-out "$DIR/uniform-i32.raw"
size=$(wc -c <"$DIR/uniform-i32.raw")
if [ "$RC" -eq 0 ] && [ "$size" -eq $((n * 4)) ]; then pass; else fail "gen uniform i32 --raw-out: $size bytes"; fi
npy_size=$(wc -c <"$DIR/uniform-i32.npy")
tail -c $((n * 4)) "$DIR/uniform-i32.npy" >"$DIR/uniform-i32.npydata"
if cmp -s "$DIR/uniform-i32.npydata" "$DIR/uniform-i32.raw" && [ $(((npy_size - n * 4) % 64)) -eq 0 ] &&
    head -c 128 "$DIR/uniform-i32.npy" | grep -q "'descr': '<i4'"; then
    pass
else
    fail "gen i32 .npy: '<i4' header, 64-byte aligned data, the raw file's bytes"
fi
expected=$(awk_sum_i32 "$DIR/uniform-i32.raw")
run sum --gen uniform --n $n --seed 9 --dtype i32 --device cpu --json
expect_json "uniform i32 (--gen) vs awk" value "$expected"
gen_bits=$(json bits)
run sum "$DIR/uniform-i32.npy" --device cpu --json
expect_json "uniform i32 (.npy) vs awk" value "$expected"
expect_json "uniform i32 (.npy)" dtype int32
expect_json "uniform i32 (.npy) vs --gen" bits "$gen_bits"
run sum --raw "$DIR/uniform-i32.raw" --dtype i32 --device cpu --json
expect_json "uniform i32 (raw) vs awk" value "$expected"
run sum "$DIR/uniform-i32.npy" --dtype int32 --device cpu --json
expect_json "--dtype int32 matching an int32 .npy" value "$expected"
if [ "$HAVE_PYTHON" -eq 1 ]; then
    got=$(py_sum_i32 "$DIR/uniform-i32.npy" $((npy_size - n * 4)))
    if [ "$got" = "$expected" ]; then pass; else fail "python3 sum of the .npy $got != awk $expected"; fi
fi
# The bits are the two's complement of the value.
if [ "$(printf '0x%016x' "$expected")" = "$gen_bits" ]; then pass; else fail "i32 bits $gen_bits vs value $expected"; fi

# Extremes and negatives: a raw file written byte by byte, and (with python3) a random one.
# 3 * INT32_MAX + 2 * INT32_MIN - 5 - 7 = 2^31 - 15 = 2147483633
{
    for _ in 1 2 3; do printf '\377\377\377\177'; done
    for _ in 1 2; do printf '\000\000\000\200'; done
    printf '\373\377\377\377\371\377\377\377'
} >"$DIR/extremes.i32"
run sum --raw "$DIR/extremes.i32" --dtype i32 --device cpu --json
expect_json "int32 extremes" value 2147483633
expect_json "int32 extremes" bits 0x000000007ffffff1
expect_json "int32 extremes vs awk" value "$(awk_sum_i32 "$DIR/extremes.i32")"
printf '\373\377\377\377\371\377\377\377' >"$DIR/negative.i32" # -5, -7
run sum --raw "$DIR/negative.i32" --dtype i32 --device cpu --json
expect_json "negative int32 sum" value -12
expect_json "negative int32 sum" bits 0xfffffffffffffff4
# Beyond the int32 range: 5 * INT32_MIN
for _ in 1 2 3 4 5; do printf '\000\000\000\200'; done >"$DIR/min5.i32"
run sum --raw "$DIR/min5.i32" --dtype i32 --device cpu --json
expect_json "5 * INT32_MIN" value -10737418240
expect_json "5 * INT32_MIN" bits 0xfffffffd80000000
if [ "$HAVE_PYTHON" -eq 1 ]; then
    python3 -c 'import struct, random, sys
r = random.Random(20240607)
vals = [r.choice((-2**31, 2**31 - 1, r.randint(-2**31, 2**31 - 1))) for _ in range(200001)]
open(sys.argv[1], "wb").write(struct.pack("<%di" % len(vals), *vals))
print(sum(vals))' "$DIR/random.i32" >"$DIR/random.sum"
    run sum --raw "$DIR/random.i32" --dtype i32 --device cpu --json
    expect_json "python3-written int32 file" value "$(cat "$DIR/random.sum")"
fi

# The thread count never changes an integer sum either.
t1=$(sum_bits --gen uniform --n 3000001 --dtype i32 --device cpu --threads 1)
t2=$(sum_bits --gen uniform --n 3000001 --dtype i32 --device cpu --threads 2)
expect_same "--threads 1 vs 2 (uniform i32, n = 3000001)" "$t1" "$t2"

# ---------------------------------------------------------------- methods on the CPU

run sum --gen ones --n 1000 --method canonical --device cpu --json
expect_json "--method canonical on the CPU" value 1000
expect_json "--method canonical on the CPU" method canonical
expect_json "--method canonical on the CPU" deterministic true
if grep -q '"method": "canonical"' "$OUT" && grep -q '"deterministic": true' "$OUT"; then
    pass
else
    fail "--json has \"method\": \"canonical\" and \"deterministic\": true"
fi
run sum --gen ones --n 1000 --method canonical --device cpu
if [ "$RC" -eq 0 ] && grep -q '^method *= canonical (order v1), mode = deterministic$' "$OUT"; then
    pass
else
    fail "human output names the method"
fi

expect_error "unknown --method" sum --gen ones --n 10 --method fastest --device cpu
if [ "$RC" -eq 2 ]; then pass; else fail "unknown --method exits 2 (got $RC)"; fi
if grep -q 'canonical, block, grid, gridsync, twopass, cluster, cgreduce, vec4int, multilevel, async, barrier, pipeline' "$ERR"; then
    pass
else
    fail "unknown --method lists the valid names"
fi
expect_error "--method block --device cpu" sum --gen ones --n 10 --method block --device cpu
if grep -q '^coopreduce: method block runs on a GPU only' "$ERR"; then
    pass
else
    fail "--method block --device cpu says the method runs on a GPU only"
fi
for method in grid gridsync pipeline; do
    expect_error "--method $method --device cpu" sum --gen ones --n 10 --method $method --device cpu
done
expect_error "--stages without --method pipeline" sum --gen ones --n 10 --stages 2 --device cpu
expect_error "--stages 0" sum --gen ones --n 10 --method pipeline --stages 0
expect_error "--stages 9" sum --gen ones --n 10 --method pipeline --stages 9
expect_error "--grid-blocks on the CPU" sum --gen ones --n 10 --grid-blocks 7 --device cpu
expect_error "--grid-blocks -1" sum --gen ones --n 10 --grid-blocks -1
expect_error "--no-cooperative on the CPU" sum --gen ones --n 10 --no-cooperative --device cpu
expect_error "--no-clusters on the CPU" sum --gen ones --n 10 --no-clusters --device cpu
expect_error "--no-clusters=1" sum --gen ones --n 10 --no-clusters=1

# ---------------------------------------------------------------- errors: one line, non-zero

cp "$DIR/uniform-f32.npy" "$DIR/good.npy"
size=$(wc -c <"$DIR/good.npy")
head -c 100 "$DIR/good.npy" >"$DIR/trunc_header.npy"
head -c $((size - 5)) "$DIR/good.npy" >"$DIR/trunc_data.npy"
# A big-endian int32 .npy: 10-byte preamble, 118-byte header, two elements.
{
    printf '\223NUMPY\001\000\166\000'
    printf "%-117s\n" "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }"
    printf '\000\000\000\001\000\000\000\002'
} >"$DIR/int32_be.npy"
printf 'abcdefg' >"$DIR/seven_bytes.raw"
printf 'not a npy file at all' >"$DIR/text.npy"

expect_error "missing file" sum "$DIR/does_not_exist.npy" --device cpu
expect_error "truncated header" sum "$DIR/trunc_header.npy" --device cpu
expect_error "truncated data" sum "$DIR/trunc_data.npy" --device cpu
expect_error "big-endian int32 .npy" sum "$DIR/int32_be.npy" --device cpu
if grep -q "'>i4'" "$ERR"; then pass; else fail "the '>i4' error names the dtype"; fi
expect_error "bad magic" sum "$DIR/text.npy" --device cpu
expect_error "raw size not a multiple of 4" sum --raw "$DIR/seven_bytes.raw" --dtype f32 --device cpu
expect_error "raw i32 size not a multiple of 4" sum --raw "$DIR/seven_bytes.raw" --dtype i32 --device cpu
if grep -q 'not a multiple of the 4-byte int32 element size' "$ERR"; then
    pass
else
    fail "the raw i32 size error says why"
fi
expect_error "--dtype i32 on a float32 .npy" sum "$DIR/good.npy" --dtype i32 --device cpu
expect_error "int32 beyond 2^32 elements" sum --gen ones --n 4294967297 --dtype i32 --device cpu
if [ "$RC" -eq 1 ] && grep -q '2^32' "$ERR"; then pass; else fail "int32 beyond 2^32: exit 1 naming the limit (exit $RC)"; fi
expect_error "bad --dtype" sum --gen ones --n 10 --dtype f128 --device cpu
expect_error "bad --device" sum --gen ones --n 10 --device tpu
expect_error "bad --n" sum --gen ones --n ten --device cpu
expect_error "--n overflow" sum --gen ones --n 99999999999999999999999 --device cpu
expect_error "bad --gen kind" sum --gen twos --n 10 --device cpu
expect_error "--gen without --n" sum --gen ones --device cpu
expect_error "no input" sum --device cpu
expect_error "two inputs" sum "$DIR/good.npy" --gen ones --n 3 --device cpu
expect_error "--raw without --dtype" sum --raw "$DIR/seven_bytes.raw" --device cpu
expect_error "unknown option" sum --gen ones --n 10 --frobnicate
expect_error "option without its value" sum --gen ones --n
expect_error "--repeat 0" sum --gen ones --n 10 --repeat 0 --device cpu
expect_error "unknown command" frobnicate
expect_error "no command"
expect_error "gen without --out" gen ones --n 10
expect_error "gen into a missing directory" gen ones --n 10 --out "$DIR/no/such/dir/x.npy"
expect_error "directory as input" sum "$DIR" --device cpu
run sum --raw "$DIR/seven_bytes.raw" --dtype f32 --device cpu
if [ "$RC" -eq 1 ]; then pass; else fail "a file error exits 1 (got $RC)"; fi
run sum --gen ones --n 10 --dtype f128
if [ "$RC" -eq 2 ]; then pass; else fail "a usage error exits 2 (got $RC)"; fi

# ---------------------------------------------------------------- help, version, info

for args in "--help" "help" "help sum" "sum --help" "gen --help" "info --help" "--version"; do
    run $args
    if [ "$RC" -eq 0 ] && [ -s "$OUT" ] && [ ! -s "$ERR" ]; then
        pass
    else
        fail "coopreduce $args"
    fi
done
run help sum
for option in --method --stages --grid-blocks --no-cooperative --no-clusters i32 notice; do
    if grep -q -- "$option" "$OUT"; then pass; else fail "help sum documents $option"; fi
done
run gen --help
if grep -q -- 'i32' "$OUT"; then pass; else fail "gen --help documents --dtype i32"; fi
ALL_METHODS="canonical block grid gridsync twopass cluster cgreduce vec4int multilevel async barrier pipeline"
run info
if [ "$RC" -eq 0 ] && grep -q 'canonical order v1' "$OUT"; then pass; else fail "info"; fi
for method in $ALL_METHODS; do
    if grep -q "^  $method  *deterministic \(yes\|no\)  " "$OUT"; then pass; else fail "info lists method $method"; fi
done
if grep -q '^  grid  *deterministic no ' "$OUT" && grep -q '^  canonical  *deterministic yes ' "$OUT"; then
    pass
else
    fail "info: grid is not deterministic for floats, canonical is"
fi
run info --json
if [ "$RC" -eq 0 ] && [ "$(wc -l <"$OUT")" -eq 1 ] && grep -q '"gpus": \[' "$OUT" &&
    grep -q '"methods": \[{"name": "canonical", "deterministic_float32": true' "$OUT" &&
    grep -q '"name": "grid", "deterministic_float32": false' "$OUT"; then
    pass
else
    fail "info --json"
fi

# ---------------------------------------------------------------- GPU

if grep -q '"usable": true' "$OUT"; then
    echo "test_cli: a usable GPU is present: comparing --device gpu with --device cpu"
    for spec in "ones f32 1048576" "uniform f32 3000001" "normal f64 3000001" "signed f32 16777217" \
        "uniform f64 4097" "ones f32 0" "normal f32 1"; do
        read -r kind dtype n <<<"$spec"
        cpu=$(sum_bits --gen "$kind" --dtype "$dtype" --n "$n" --device cpu)
        gpu=$(sum_bits --gen "$kind" --dtype "$dtype" --n "$n" --device gpu --repeat 3)
        expect_same "gpu vs cpu ($spec)" "$gpu" "$cpu"
    done
    gpu=$(sum_bits "$DIR/normal-f64.npy" --device gpu:0)
    cpu=$(sum_bits "$DIR/normal-f64.npy" --device cpu)
    expect_same "gpu vs cpu on a .npy file" "$gpu" "$cpu"
    run sum --gen ones --n 1048576 --device gpu --json
    expect_json "gpu ones" device gpu:0
    expect_json "gpu ones" method canonical
    expect_json "gpu ones" deterministic true
    for key in threads blocks launches cluster_size; do
        case "$(json $key)" in
        [1-9]* | 0) pass ;;
        *) fail "gpu --json: $key = '$(json $key)', expected a number" ;;
        esac
    done
    for key in cooperative fell_back; do
        case "$(json $key)" in
        true | false) pass ;;
        *) fail "gpu --json: $key = '$(json $key)', expected true or false" ;;
        esac
    done
    expect_error "a GPU that does not exist" sum --gen ones --n 10 --device gpu:4096

    run info --json
    CLUSTERS=0
    if grep -q '"ordinal": 0, [^}]*"cluster_launch": true' "$OUT"; then CLUSTERS=1; fi

    # Every method sums 2^20 float32 ones to exactly 2^20 (every partial is an integer < 2^24),
    # and 1000003 uniform int32 to the CPU's exact value.
    ones_bits=$(sum_bits --gen ones --n 1048576 --dtype f32 --device cpu)
    i32_value=$(run sum --gen uniform --n 1000003 --seed 3 --dtype i32 --device cpu --json; json value)
    for method in $ALL_METHODS; do
        if [ "$method" = cluster ] && [ "$CLUSTERS" -eq 0 ]; then
            expect_error "--method cluster on a GPU without clusters" sum --gen ones --n 1048576 \
                --method cluster --device gpu
            continue
        fi
        run sum --gen ones --n 1048576 --dtype f32 --method $method --device gpu --repeat 3 --json
        expect_json "--method $method, 2^20 ones f32" value 1048576
        expect_json "--method $method, 2^20 ones f32" bits "$ones_bits"
        expect_json "--method $method, 2^20 ones f32" method $method
        run sum --gen uniform --n 1000003 --seed 3 --dtype i32 --method $method --device gpu --repeat 3 --json
        expect_json "--method $method, uniform i32" value "$i32_value"
        expect_json "--method $method, uniform i32" deterministic true
    done
    run sum --gen uniform --n 1000003 --method grid --device gpu --repeat 3 --json
    expect_json "--method grid, uniform f32" deterministic false
    expect_json "--method grid, uniform f32" mode nondeterministic

    # Fallbacks: without cooperative launch, grid launches the ordinary way and says so on
    # stderr, stdout staying one JSON object; without clusters, cluster fails clearly.
    run sum --gen ones --n 1048576 --method grid --no-cooperative --device gpu --json
    expect_json "--method grid --no-cooperative" value 1048576
    expect_json "--method grid --no-cooperative" cooperative false
    expect_json "--method grid --no-cooperative" fell_back true
    if grep -q '^coopreduce: notice: ' "$ERR" && [ "$(wc -l <"$OUT")" -eq 1 ] && grep -q '^{.*}$' "$OUT"; then
        pass
    else
        fail "--method grid --no-cooperative: a notice on stderr, stdout one JSON object"
    fi
    run sum --gen ones --n 1048576 --method gridsync --no-cooperative --device gpu --json
    expect_json "--method gridsync --no-cooperative" value 1048576
    if grep -q '^coopreduce: notice: ' "$ERR"; then pass; else fail "--method gridsync --no-cooperative: notice"; fi
    expect_error "--method cluster --no-clusters" sum --gen ones --n 1048576 --method cluster \
        --no-clusters --device gpu
    if [ "$RC" -eq 1 ] && grep -q 'cluster' "$ERR"; then pass; else fail "--method cluster --no-clusters names the method (exit $RC)"; fi
    run sum --gen ones --n 1048576 --method canonical --no-clusters --no-cooperative --device gpu --json
    expect_json "canonical with the features off" bits "$ones_bits"

    # Launch settings: pipeline stages, forced grids (canonical's bits never change).
    for stages in 1 2 8; do
        run sum --gen ones --n 1000000 --method pipeline --stages $stages --device gpu --json
        expect_json "--method pipeline --stages $stages" value 1000000
    done
    cpu=$(sum_bits --gen normal --n 3000001 --device cpu)
    for blocks in 1 7 1000; do
        gpu=$(sum_bits --gen normal --n 3000001 --device gpu --grid-blocks $blocks)
        expect_same "--grid-blocks $blocks vs cpu" "$gpu" "$cpu"
    done
    cpu=$(sum_bits --gen signed --n 3000001 --dtype i32 --device cpu)
    gpu=$(sum_bits --gen signed --n 3000001 --dtype i32 --device gpu)
    expect_same "gpu vs cpu (signed i32)" "$gpu" "$cpu"
    gpu=$(sum_bits "$DIR/uniform-i32.npy" --device gpu)
    cpu=$(sum_bits "$DIR/uniform-i32.npy" --device cpu)
    expect_same "gpu vs cpu on an int32 .npy file" "$gpu" "$cpu"
else
    echo "test_cli: no usable GPU: checking that --device gpu fails cleanly"
    echo "SKIP: test_cli: the GPU cases (every --method, --no-cooperative notice, --no-clusters," \
        "--stages, --grid-blocks, gpu vs cpu bits) need a usable GPU"
    expect_error "--device gpu without a GPU" sum --gen ones --n 10 --device gpu
    # auto falls back to the CPU, and says so.
    run sum --gen ones --n 10 --json
    expect_json "auto without a GPU" device cpu
    if grep -q '^coopreduce: note: ' "$ERR"; then
        pass
    else
        fail "auto's note in JSON mode goes to stderr"
    fi
    # ... but never for a GPU method or option: that is an error, not a silent switch.
    expect_error "--method grid, auto without a GPU" sum --gen ones --n 10 --method grid
    if [ "$RC" -eq 1 ] && grep -q '^coopreduce: method grid runs on a GPU only' "$ERR"; then
        pass
    else
        fail "--method grid with auto on the CPU: exit 1, 'runs on a GPU only' (exit $RC)"
    fi
    expect_error "--no-cooperative, auto without a GPU" sum --gen ones --n 10 --no-cooperative
    expect_error "--grid-blocks, auto without a GPU" sum --gen ones --n 10 --grid-blocks 3
fi

echo "test_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
