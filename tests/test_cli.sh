#!/usr/bin/env bash
# test_cli.sh — end-to-end tests of the `coopreduce` command.
#
# usage: bash tests/test_cli.sh PATH_TO_coopreduce SCRATCH_DIR
#
# Needs only bash and coreutils (JSON is read with sed: no python, no jq). On a machine with a
# usable GPU it also checks that --device gpu and --device cpu give identical bits; without one,
# that --device gpu fails cleanly.
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

# ---------------------------------------------------------------- errors: one line, non-zero

cp "$DIR/uniform-f32.npy" "$DIR/good.npy"
size=$(wc -c <"$DIR/good.npy")
head -c 100 "$DIR/good.npy" >"$DIR/trunc_header.npy"
head -c $((size - 5)) "$DIR/good.npy" >"$DIR/trunc_data.npy"
# A valid int32 .npy: 10-byte preamble, 118-byte header, two elements.
{
    printf '\223NUMPY\001\000\166\000'
    printf "%-117s\n" "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }"
    printf '\001\000\000\000\002\000\000\000'
} >"$DIR/int32.npy"
printf 'abcdefg' >"$DIR/seven_bytes.raw"
printf 'not a npy file at all' >"$DIR/text.npy"

expect_error "missing file" sum "$DIR/does_not_exist.npy" --device cpu
expect_error "truncated header" sum "$DIR/trunc_header.npy" --device cpu
expect_error "truncated data" sum "$DIR/trunc_data.npy" --device cpu
expect_error "int32 .npy" sum "$DIR/int32.npy" --device cpu
if grep -q "'<i4'" "$ERR"; then pass; else fail "the int32 error names the dtype"; fi
expect_error "bad magic" sum "$DIR/text.npy" --device cpu
expect_error "raw size not a multiple of 4" sum --raw "$DIR/seven_bytes.raw" --dtype f32 --device cpu
expect_error "bad --dtype" sum --gen ones --n 10 --dtype f16 --device cpu
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
run sum --gen ones --n 10 --dtype f16
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
run info
if [ "$RC" -eq 0 ] && grep -q 'canonical order v1' "$OUT"; then pass; else fail "info"; fi
run info --json
if [ "$RC" -eq 0 ] && [ "$(wc -l <"$OUT")" -eq 1 ] && grep -q '"gpus": \[' "$OUT"; then
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
    expect_json "gpu ones" threads null
    expect_error "a GPU that does not exist" sum --gen ones --n 10 --device gpu:4096
else
    echo "test_cli: no usable GPU: checking that --device gpu fails cleanly"
    expect_error "--device gpu without a GPU" sum --gen ones --n 10 --device gpu
    # auto falls back to the CPU, and says so.
    run sum --gen ones --n 10 --json
    expect_json "auto without a GPU" device cpu
    if grep -q '^coopreduce: note: ' "$ERR"; then
        pass
    else
        fail "auto's note in JSON mode goes to stderr"
    fi
fi

echo "test_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
