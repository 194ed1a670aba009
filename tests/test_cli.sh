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

. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
cli_setup test_cli "$@"

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
expect_json "ones f32" value 1.048576e+06
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
if [ "$RC" -eq 0 ] && grep -q '^sum *= 1.048576e+06$' "$OUT" && grep -q '^bits *= 0x49800000$' "$OUT"; then
    pass
else
    fail "human output of ones f32"
fi

run sum --gen ones --n 1000 --dtype f64 --device cpu --json
expect_json "ones f64" value 1000.0
expect_json "ones f64" bits 0x408f400000000000
expect_json "ones f64" dtype float64

run sum --gen ones --n 0 --device cpu --json
expect_json "n = 0" value 0.0
expect_json "n = 0" bits 0x00000000

# 2^24 + 1 ones: the canonical tree sums exactly (every partial is an integer <= 2^24), where a
# sequential float32 loop would stop at 2^24.
run sum --gen ones --n 16777217 --device cpu --json
expect_json "2^24 + 1 ones" value 1.6777216e+07
run sum --gen ones --n 4097 --device cpu --json
expect_json "4097 ones" value 4097.0

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

    rm -f "$npy" "$raw" # gen replaces an existing file only with --force
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
rm -f "$DIR/uniform-i32.npy" "$DIR/uniform-i32.raw"
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
expect_json "--method canonical on the CPU" value 1000.0
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

# ---------------------------------------------------------------- operations and types

# Files are written here byte by byte: le HEX (cli_lib.sh) writes the hex number HEX
# little-endian (its width is the element's), npy_head DESCR N writes a version 1.0 header
# (10 + 118 bytes) for N elements.
npy_head() {
    printf '\223NUMPY\001\000\166\000'
    printf "%-117s\n" "{'descr': '$1', 'fortran_order': False, 'shape': ($2,), }"
}
# x = [3, -4, 0, 12] in every type ([3, 4, 0, 12] unsigned), and y = [1, 2, 3, 4] for dot.
declare -A X Y DESCR
X[f16]="4200 c400 0000 4a00";  Y[f16]="3c00 4000 4200 4400";  DESCR[f16]='<f2'
X[bf16]="4040 c080 0000 4140"; Y[bf16]="3f80 4000 4040 4080"
X[f32]="40400000 c0800000 00000000 41400000"; Y[f32]="3f800000 40000000 40400000 40800000"; DESCR[f32]='<f4'
X[f64]="4008000000000000 c010000000000000 0000000000000000 4028000000000000"
Y[f64]="3ff0000000000000 4000000000000000 4008000000000000 4010000000000000"; DESCR[f64]='<f8'
X[i32]="00000003 fffffffc 00000000 0000000c"; DESCR[i32]='<i4'
X[i64]="0000000000000003 fffffffffffffffc 0000000000000000 000000000000000c"; DESCR[i64]='<i8'
X[u32]="00000003 00000004 00000000 0000000c"; DESCR[u32]='<u4'
X[u64]="0000000000000003 0000000000000004 0000000000000000 000000000000000c"; DESCR[u64]='<u8'
for t in "${!X[@]}"; do
    for v in ${X[$t]}; do le "$v"; done >"$DIR/x.$t"
    if [ -n "${Y[$t]:-}" ]; then for v in ${Y[$t]}; do le "$v"; done >"$DIR/y.$t"; fi
    if [ -n "${DESCR[$t]:-}" ]; then
        { npy_head "${DESCR[$t]}" 4; cat "$DIR/x.$t"; } >"$DIR/x-$t.npy"
        if [ -n "${Y[$t]:-}" ]; then { npy_head "${DESCR[$t]}" 4; cat "$DIR/y.$t"; } >"$DIR/y-$t.npy"; fi
    fi
done

# The expected results, worked out by hand: "TYPE OP VALUE BITS RESULT_DTYPE".
EXPECTED="
f16 sum 11.0 0x41300000 float32
f16 min -4.0 0xc400 float16
f16 max 12.0 0x4a00 float16
f16 absmax 12.0 0x4a00 float16
f16 mean 2.75 0x40300000 float32
f16 sumsq 169.0 0x43290000 float32
f16 norm2 13.0 0x41500000 float32
f16 argmin 1 0x0000000000000001 uint64
f16 argmax 3 0x0000000000000003 uint64
f16 dot 43.0 0x422c0000 float32
bf16 sum 11.0 0x41300000 float32
bf16 min -4.0 0xc080 bfloat16
bf16 max 12.0 0x4140 bfloat16
bf16 absmax 12.0 0x4140 bfloat16
bf16 mean 2.75 0x40300000 float32
bf16 sumsq 169.0 0x43290000 float32
bf16 norm2 13.0 0x41500000 float32
bf16 argmin 1 0x0000000000000001 uint64
bf16 argmax 3 0x0000000000000003 uint64
bf16 dot 43.0 0x422c0000 float32
f32 sum 11.0 0x41300000 float32
f32 min -4.0 0xc0800000 float32
f32 max 12.0 0x41400000 float32
f32 absmax 12.0 0x41400000 float32
f32 mean 2.75 0x40300000 float32
f32 sumsq 169.0 0x43290000 float32
f32 norm2 13.0 0x41500000 float32
f32 argmin 1 0x0000000000000001 uint64
f32 argmax 3 0x0000000000000003 uint64
f32 dot 43.0 0x422c0000 float32
f64 sum 11.0 0x4026000000000000 float64
f64 min -4.0 0xc010000000000000 float64
f64 max 12.0 0x4028000000000000 float64
f64 absmax 12.0 0x4028000000000000 float64
f64 mean 2.75 0x4006000000000000 float64
f64 sumsq 169.0 0x4065200000000000 float64
f64 norm2 13.0 0x402a000000000000 float64
f64 argmin 1 0x0000000000000001 uint64
f64 argmax 3 0x0000000000000003 uint64
f64 dot 43.0 0x4045800000000000 float64
i32 sum 11 0x000000000000000b int64
i32 min -4 0xfffffffc int32
i32 max 12 0x0000000c int32
i32 absmax 12 0x0000000c uint32
i32 mean 2.75 0x4006000000000000 float64
i32 argmin 1 0x0000000000000001 uint64
i32 argmax 3 0x0000000000000003 uint64
i64 sum 11 0x0000000000000000000000000000000b int128
i64 min -4 0xfffffffffffffffc int64
i64 max 12 0x000000000000000c int64
i64 absmax 12 0x000000000000000c uint64
i64 mean 2.75 0x4006000000000000 float64
i64 argmin 1 0x0000000000000001 uint64
i64 argmax 3 0x0000000000000003 uint64
u32 sum 19 0x0000000000000013 uint64
u32 min 0 0x00000000 uint32
u32 max 12 0x0000000c uint32
u32 absmax 12 0x0000000c uint32
u32 mean 4.75 0x4013000000000000 float64
u32 argmin 2 0x0000000000000002 uint64
u32 argmax 3 0x0000000000000003 uint64
u64 sum 19 0x00000000000000000000000000000013 uint128
u64 min 0 0x0000000000000000 uint64
u64 max 12 0x000000000000000c uint64
u64 absmax 12 0x000000000000000c uint64
u64 mean 4.75 0x4013000000000000 float64
u64 argmin 2 0x0000000000000002 uint64
u64 argmax 3 0x0000000000000003 uint64
"
while read -r t op value bits rdtype; do
    [ -n "$t" ] || continue
    yraw=() ynpy=()
    if [ "$op" = dot ]; then yraw=(--y "$DIR/y.$t"); ynpy=("$DIR/y-$t.npy"); fi
    run sum --op "$op" --raw "$DIR/x.$t" "${yraw[@]}" --dtype "$t" --device cpu --repeat 2 --json
    expect_json "$op of $t (raw)" value "$value"
    expect_json "$op of $t (raw)" bits "$bits"
    expect_json "$op of $t (raw)" result_dtype "$rdtype"
    expect_json "$op of $t (raw)" op "$op"
    if [ -n "${DESCR[$t]:-}" ]; then
        got=$(sum_bits --op "$op" "$DIR/x-$t.npy" "${ynpy[@]}" --device cpu --repeat 1)
        expect_same "$op of $t: .npy vs raw" "$got" "$bits"
    fi
done <<<"$EXPECTED"

# The integer types refuse what needs floats, with one line.
for t in i32 i64 u32 u64; do
    for op in sumsq norm2; do
        expect_error "$op of $t" sum --op $op --raw "$DIR/x.$t" --dtype $t --device cpu
    done
    expect_error "dot of $t" sum --op dot --raw "$DIR/x.$t" --y "$DIR/x.$t" --dtype $t --device cpu
done

# --narrow: the 16-bit sums rounded to the input type (11 = 0x4980 in float16, 0x4130 in bfloat16).
run sum --narrow --raw "$DIR/x.f16" --dtype f16 --device cpu --json
expect_json "--narrow f16 sum" bits 0x4980
expect_json "--narrow f16 sum" value 11.0
expect_json "--narrow f16 sum" result_dtype float16
run sum --narrow --op norm2 --raw "$DIR/x.bf16" --dtype bf16 --device cpu --json
expect_json "--narrow bf16 norm2" bits 0x4150
expect_json "--narrow bf16 norm2" result_dtype bfloat16
expect_error "--narrow on float32" sum --narrow --raw "$DIR/x.f32" --dtype f32 --device cpu
if [ "$RC" -eq 2 ]; then pass; else fail "--narrow on float32 exits 2 (got $RC)"; fi

# The human report names the operation.
run sum --op argmax "$DIR/x-f32.npy" --device cpu
if [ "$RC" -eq 0 ] && grep -q '^argmax   = 3$' "$OUT" && grep -q '^bits     = 0x0000000000000003$' "$OUT"; then
    pass
else
    fail "human output of argmax"
fi
run sum --op dot "$DIR/x-f16.npy" "$DIR/y-f16.npy" --device cpu
if [ "$RC" -eq 0 ] && grep -q '^dot      = 43.0$' "$OUT" && grep -q "^y        = $DIR/y-f16.npy" "$OUT"; then
    pass
else
    fail "human output of dot"
fi

# Shortest decimals of 16-bit results: float16 0x3555 is 0.33325195..., "0.3333" the shortest
# that reads back; bfloat16 0x3eab (0.333984375) is "0.334"; the largest float16, 65504, is
# "65500" (as numpy prints it: 65500 lies inside 65504's rounding interval (65488, 65520)).
{ npy_head '<f2' 2; le 3555; le 0000; } >"$DIR/third.npy"
run sum --op max "$DIR/third.npy" --device cpu --json
expect_json "float16 shortest decimal" value 0.3333
le 3eab >"$DIR/third.bf16"
run sum --op max --raw "$DIR/third.bf16" --dtype bf16 --device cpu --json
expect_json "bfloat16 shortest decimal" value 0.334
{ npy_head '<f2' 1; le 7bff; } >"$DIR/fmax.npy"
run sum --op min "$DIR/fmax.npy" --device cpu --json
expect_json "largest float16" value 6.55e+04
expect_json "largest float16" bits 0x7bff

# 64-bit integer sums: the exact 128-bit value; beyond 64 bits, printed, then an error.
{ le 7fffffffffffffff; le 0000000000000001; } >"$DIR/over.i64"
run sum --raw "$DIR/over.i64" --dtype i64 --device cpu --json
if [ "$RC" -eq 1 ] && [ "$(json value)" = 9223372036854775808 ] &&
    [ "$(json bits)" = 0x00000000000000008000000000000000 ] && [ "$(wc -l <"$ERR")" -eq 1 ] &&
    grep -q '^coopreduce: .*does not fit in 64 bits' "$ERR"; then
    pass
else
    fail "int64 overflow: exit $RC, value $(json value), bits $(json bits)"
fi
{ le 8000000000000000; le 8000000000000000; } >"$DIR/under.i64"
run sum --raw "$DIR/under.i64" --dtype i64 --device cpu --json
if [ "$RC" -eq 1 ] && [ "$(json value)" = -18446744073709551616 ] &&
    [ "$(json bits)" = 0xffffffffffffffff0000000000000000 ]; then
    pass
else
    fail "int64 underflow: exit $RC, value $(json value), bits $(json bits)"
fi
{ le ffffffffffffffff; le ffffffffffffffff; } >"$DIR/over.u64"
run sum --raw "$DIR/over.u64" --dtype u64 --device cpu
if [ "$RC" -eq 1 ] && grep -q '^sum *= 36893488147419103230$' "$OUT" &&
    grep -q '^bits *= 0x0000000000000001fffffffffffffffe$' "$OUT"; then
    pass
else
    fail "uint64 overflow: exit $RC"
fi
{ le fffffffffffffffb; le fffffffffffffff9; } >"$DIR/neg.i64"
run sum --raw "$DIR/neg.i64" --dtype i64 --device cpu --json
expect_json "negative int64 sum" value -12
expect_json "negative int64 sum" bits 0xfffffffffffffffffffffffffffffff4

# Generated data of every type: .npy, raw and --gen give the same bits, and the integer sums
# match awk's (exact: every |partial| < 2^53 here).
for t in f16 bf16 f32 f64 i32 i64 u32 u64; do
    for spec in "normal 1001 3" "signed 777 5" "uniform 513 2"; do
        read -r kind n seed <<<"$spec"
        [ "$kind" = uniform ] && { [ "$t" = i64 ] || [ "$t" = u64 ]; } && continue
        g=$(sum_bits --gen "$kind" --n "$n" --seed "$seed" --dtype "$t" --device cpu --repeat 1)
        rm -f "$DIR/g.$t" "$DIR/g-$t.npy"
        run gen "$kind" --n "$n" --seed "$seed" --dtype "$t" --raw-out "$DIR/g.$t"
        r=$(sum_bits --raw "$DIR/g.$t" --dtype "$t" --device cpu --repeat 1)
        expect_same "$t $kind: --gen vs raw" "$g" "$r"
        if [ "$t" != bf16 ]; then
            run gen "$kind" --n "$n" --seed "$seed" --dtype "$t" --out "$DIR/g-$t.npy"
            if head -c 128 "$DIR/g-$t.npy" | grep -q "'descr': '${DESCR[$t]}'"; then pass; else fail "gen $t writes '${DESCR[$t]}'"; fi
            r=$(sum_bits "$DIR/g-$t.npy" --device cpu --repeat 1)
            expect_same "$t $kind: --gen vs .npy" "$g" "$r"
        fi
        case $t in
        i32 | i64 | u32 | u64)
            size=${t#?}
            sign=d
            [ "${t:0:1}" = u ] && sign=u
            expected=$(od -An -v -t "$sign$((size / 8))" "$DIR/g.$t" |
                awk '{ for (i = 1; i <= NF; i++) s += $i } END { printf "%.0f\n", s }')
            run sum --raw "$DIR/g.$t" --dtype "$t" --device cpu --repeat 1 --json
            expect_json "$t $kind sum vs awk" value "$expected"
            ;;
        esac
    done
done
# ones sum to n whatever the type; 16-bit uniform stays in [0, 1).
for t in f16 bf16 f32 f64 i32 i64 u32 u64; do
    run sum --gen ones --n 1000 --dtype "$t" --device cpu --repeat 1 --json
    case $t in f*) expected=1000.0 ;; bf16) expected=1000.0 ;; *) expected=1000 ;; esac
    expect_json "ones $t" value $expected
    run sum --op max --gen uniform --n 100000 --dtype "$t" --device cpu --repeat 1 --json
    case $t in f16 | bf16) case "$(json value)" in 0.*) pass ;; *) fail "uniform $t max $(json value) not below 1" ;; esac ;; esac
done

# dot: two .npy files, --y, and --gen (y from seed + 1).
rm -f "$DIR/dx.npy" "$DIR/dy.npy"
run gen normal --n 1001 --seed 5 --out "$DIR/dx.npy"
run gen normal --n 1001 --seed 6 --out "$DIR/dy.npy"
a=$(sum_bits --op dot --gen normal --n 1001 --seed 5 --device cpu --repeat 1)
b=$(sum_bits --op dot "$DIR/dx.npy" "$DIR/dy.npy" --device cpu --repeat 1)
c=$(sum_bits --op dot "$DIR/dx.npy" --y "$DIR/dy.npy" --device cpu --repeat 1)
expect_same "dot --gen vs two .npy (y from seed + 1)" "$a" "$b"
expect_same "dot --y vs two .npy" "$c" "$b"
run sum --op dot --gen ones --n 1000 --dtype f64 --device cpu --json
expect_json "dot of ones" value 1000.0

# Modes: exact computes what it applies to, or (until it lands) fails with one line; the JSON
# names the mode used.
run sum --mode exact --raw "$DIR/x.f32" --dtype f32 --device cpu --json
if [ "$RC" -eq 0 ]; then
    expect_json "--mode exact sum" value 11.0
    expect_json "--mode exact sum" mode exact
else
    expect_error "--mode exact, not built yet" sum --mode exact --raw "$DIR/x.f32" --dtype f32 --device cpu
    if [ "$RC" -eq 1 ]; then pass; else fail "--mode exact not supported exits 1 (got $RC)"; fi
fi
run sum --mode exact --op max --raw "$DIR/x.f32" --dtype f32 --device cpu --json
expect_json "--mode exact max" value 12.0
expect_json "--mode exact max" mode exact
run sum --mode deterministic --raw "$DIR/x.f32" --dtype f32 --device cpu --json
expect_json "--mode deterministic" mode deterministic

# Errors of the operations.
{ npy_head '<f8' 0; } >"$DIR/empty-f64.npy"
expect_error "argmax of empty" sum --op argmax --gen ones --n 0 --device cpu
if [ "$RC" -eq 1 ] && grep -q 'empty' "$ERR"; then pass; else fail "argmax of empty says so (exit $RC)"; fi
expect_error "min of an empty .npy" sum --op min "$DIR/empty-f64.npy" --device cpu
run sum --op mean "$DIR/empty-f64.npy" --device cpu --json
expect_json "mean of empty" value nan
expect_error "unknown --op" sum --op median --gen ones --n 10 --device cpu
if [ "$RC" -eq 2 ] && grep -q 'argmax' "$ERR"; then pass; else fail "unknown --op exits 2 listing the ops (exit $RC)"; fi
expect_error "unknown --mode" sum --mode fast --gen ones --n 10 --device cpu
if [ "$RC" -eq 2 ]; then pass; else fail "unknown --mode exits 2 (got $RC)"; fi
expect_error "dot length mismatch" sum --op dot "$DIR/x-f32.npy" "$DIR/dx.npy" --device cpu
if grep -q 'same length' "$ERR"; then pass; else fail "dot length mismatch says so"; fi
expect_error "dot dtype mismatch" sum --op dot "$DIR/x-f32.npy" "$DIR/y-f16.npy" --device cpu
if grep -q 'same dtype' "$ERR"; then pass; else fail "dot dtype mismatch says so"; fi
expect_error "dot with one input" sum --op dot "$DIR/x-f32.npy" --device cpu
expect_error "two inputs without dot" sum "$DIR/x-f32.npy" "$DIR/y-f32.npy" --device cpu
expect_error "--y with --gen" sum --op dot --gen ones --n 4 --y "$DIR/y-f32.npy" --device cpu
expect_error "dot, missing y file" sum --op dot "$DIR/x-f32.npy" "$DIR/nope.npy" --device cpu
expect_error "gen bf16 .npy" gen ones --n 4 --dtype bf16 --out "$DIR/bf.npy"
{ npy_head '>i8' 4; cat "$DIR/x.i64"; } >"$DIR/be-i8.npy"
expect_error "big-endian int64 .npy" sum "$DIR/be-i8.npy" --device cpu
if grep -q "'>i8'" "$ERR" && grep -q 'big-endian' "$ERR"; then pass; else fail "the '>i8' error names the dtype"; fi
{ npy_head '>f2' 4; cat "$DIR/x.f16"; } >"$DIR/be-f2.npy"
expect_error "big-endian float16 .npy" sum "$DIR/be-f2.npy" --device cpu
{ npy_head '<u2' 4; cat "$DIR/x.f16"; } >"$DIR/u2.npy"
expect_error "unsupported dtype '<u2'" sum "$DIR/u2.npy" --device cpu
if grep -q "'<u2'" "$ERR"; then pass; else fail "the '<u2' error names the dtype"; fi
{ npy_head '<i8' 5; cat "$DIR/x.i64"; } >"$DIR/short-i8.npy"
expect_error "int64 .npy shorter than its shape" sum "$DIR/short-i8.npy" --device cpu
{ npy_head '<u4' 4; head -c 14 "$DIR/x.u32"; } >"$DIR/trunc-u4.npy"
expect_error "truncated uint32 .npy" sum "$DIR/trunc-u4.npy" --device cpu
if grep -q 'truncated' "$ERR"; then pass; else fail "truncated uint32 says so"; fi
expect_error "raw f16 of odd size" sum --raw "$DIR/seven_bytes.raw" --dtype f16 --device cpu
expect_error "--dtype i64 on an int32 .npy" sum "$DIR/x-i32.npy" --dtype i64 --device cpu

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

# ---------------------------------------------------------------- the CPU benchmark
# Smoke test (timings are the benchmark's business, not a test's): it runs, and prints a row per
# operation and type, with the streaming read as its ceiling.
run bench --device cpu --op sum,min,norm2,dot,mean --dtype f32,bf16,i64 --n 5003 --quick
if [ "$RC" -eq 0 ] && grep -q '| 5003 | .* | bfloat16 | norm2 | ' "$OUT" &&
    grep -q '| 5003 | .* | int64 | min | ' "$OUT" && grep -q '| 5003 | .* | float32 | dot | ' "$OUT" &&
    ! grep -q '| int64 | norm2 | ' "$OUT"; then
    pass
else
    fail "bench --device cpu --op: rows for each operation and type (exit $RC)"
fi
# both modes in turn: a row for each mode that takes the call (exact mean is refused: a line on
# stderr, no row), and the exact/canonical table
run bench --device cpu --op sum,mean --mode deterministic,exact --dtype f32 --data wide --n 4099 --quick
if [ "$RC" -eq 0 ] && grep -q '| 4099 | .* | float32 wide | sum | yes' "$OUT" &&
    grep -q '| 4099 | .* | float32 wide | sum/exact | yes' "$OUT" &&
    grep -q '| 4099 | .* | float32 wide | mean | yes' "$OUT" && ! grep -q 'mean/exact' "$OUT" &&
    grep -q '### Exact against deterministic' "$OUT" &&
    grep -q '| 4099 | float32 wide | sum | ' "$OUT"; then
    pass
else
    fail "bench --device cpu --mode deterministic,exact: both modes' rows and their ratio (exit $RC)"
fi
run bench --device cpu --n 5003 --quick
if [ "$RC" -eq 0 ] && grep -q '| 5003 | .* | float32 | canonical | ' "$OUT" &&
    grep -q '| 5003 | .* | float32 | stream_read | ' "$OUT"; then
    pass
else
    fail "bench --device cpu: canonical against the streaming read (exit $RC)"
fi
run bench --device cpu --op sum,dot --dtype f32,bf16 --offset 1 --n 4099 --quick
if [ "$RC" -eq 0 ] && grep -q '| float32 +1 | sum |' "$OUT" && grep -q '| bfloat16 +1 | dot |' "$OUT"; then
    pass
else
    fail "bench --offset 1: rows of arrays one element past the boundary (exit $RC)"
fi
run bench --device cpu --shape 5x4099 --axis 1 --op sum,norm2 --dtype f32 --offset 3 --quick
if [ "$RC" -eq 0 ] && grep -q '| float32 +3 | sum/axis1 (5x4099) |' "$OUT" &&
    grep -q '| float32 +3 | norm2/axis1 (5x4099) |' "$OUT"; then
    pass
else
    fail "bench --shape --offset 3: rows of an array three elements past the boundary (exit $RC)"
fi
run bench --device cpu --op nosuchop --n 10
if [ "$RC" -eq 2 ]; then pass; else fail "bench --op nosuchop: usage error, exit 2 (exit $RC)"; fi
# (refused before the --json file is opened: its directory's absence is not what is reported)
run bench --device cpu --op sum --n 1K --cold --json "$DIR/no-such-dir/cold.json"
if [ "$RC" -eq 2 ] && grep -q "cold" "$ERR" && [ ! -e "$DIR/no-such-dir" ]; then
    pass
else
    fail "bench --device cpu --cold: usage error naming --cold before any file, exit 2 (exit $RC)"
fi

# bench takes its element counts as sum does, and reports bad options as usage errors.
run bench --device cpu --n 16M --quick
if [ "$RC" -eq 0 ] && grep -q '| 16777216 | .* | float32 | canonical | ' "$OUT"; then
    pass
else
    fail "bench --n 16M (exit $RC)"
fi
run bench --device cpu --op all --dtype all --n 1K --quick
if [ "$RC" -eq 0 ] && grep -q '| 1024 | .* | uint64 | argmax | ' "$OUT" &&
    grep -q '| 1024 | .* | float16 | norm2 | ' "$OUT" && ! grep -q '| uint32 | sumsq | ' "$OUT"; then
    pass
else
    fail "bench --op all --dtype all: every defined pair, no sumsq of integers (exit $RC)"
fi
# --json and --csv: written whole after the run; a path that cannot be written fails before it.
rm -f "$DIR/bench.json" "$DIR/bench.csv"
run bench --device cpu --n 1K --quick --json "$DIR/bench.json" --csv "$DIR/bench.csv"
if [ "$RC" -eq 0 ] && grep -q '"device": "cpu"' "$DIR/bench.json" && grep -q '"method": "canonical"' "$DIR/bench.json" &&
    [ "$(wc -l <"$DIR/bench.csv")" -eq 3 ]; then
    pass
else
    fail "bench --json --csv (exit $RC)"
fi
expect_error "bench --json into a missing directory" bench --device cpu --n 1K --quick --json "$DIR/no/such/dir/b.json"
if ! grep -q 'done' "$ERR"; then pass; else fail "bench --json into a missing directory fails before the run"; fi
expect_error "gen --out ''" gen ones --n 1 --out ''
for args in "--n 0" "--n 1,,2" "--n ten" "--n=" "--dtype f128" "--op ''" "--mode fast --op sum" \
    "--stages 0" "--stages 1,9" "--batches 2" "--batches x" "--threads -1" "--device tpu" \
    "--method fastest" "--dtype f16" "--mode exact" "extra" "--offset 1" "--offset 8 --op sum" \
    "--offset 2 --op sum --dtype f64" "--offset x --op sum"; do
    eval "expect_error \"bench $args\" bench --device cpu $args"
    if [ "$RC" -eq 2 ]; then pass; else fail "bench $args: usage error, exit 2 (exit $RC)"; fi
done

# ---------------------------------------------------------------- options given twice

for args in "sum --gen ones --n 10 --n 20 --device cpu" "sum --gen ones --n 10 --json --json" \
    "sum --gen ones --n 10 --device cpu --device=cpu" "gen ones --n 10 --seed 1 --seed 2 --raw-out /dev/null" \
    "bench --device cpu --n 1K --n 2K" "info --json --json"; do
    # shellcheck disable=SC2086
    expect_error "an option twice: $args" $args
    if [ "$RC" -eq 2 ] && grep -q 'given twice' "$ERR"; then pass; else fail "$args: 'given twice', exit 2 (exit $RC)"; fi
done

# ---------------------------------------------------------------- float results as NumPy prints them
# numpy's str(): the shortest decimal that reads back, positional only from 1e-4 up to 1e3
# (float16), 1e2 (bfloat16), 1e6 (float32), 1e16 (float64), so that no digit is invented.
# Each value is the maximum of a one-element raw file of its type: "TYPE HEX_BITS EXPECTED".
while read -r t hex expected; do
    [ -n "$t" ] || continue
    le "$hex" >"$DIR/one.$t"
    run sum --op max --raw "$DIR/one.$t" --dtype "$t" --device cpu --repeat 1 --json
    expect_json "float value $t 0x$hex" value "$expected"
done <<<"
f32 4f000000 2.1474836e+09
f32 4b800000 1.6777216e+07
f32 4b800001 1.6777218e+07
f32 49742400 1e+06
f32 497423f0 999999.0
f32 3727c5ac 1e-05
f32 38d1b717 1e-04
f32 00000001 1e-45
f32 80000000 -0.0
f32 7f800000 inf
f32 ff800000 -inf
f32 3dcccccd 0.1
f32 7f7fffff 3.4028235e+38
f32 5a0e1bca 1e+16
f64 4340000000000001 9007199254740994.0
f64 4341c37937e08000 1e+16
f64 0000000000000001 5e-324
f64 3fb999999999999a 0.1
f64 3f1a36e2eb1c432d 0.0001
f64 3f1a36e2eb1c432c 9.999999999999999e-05
f64 c1e0000000000000 -2147483648.0
f16 7bff 6.55e+04
f16 6400 1.024e+03
f16 63ce 999.0
f16 0001 6e-08
f16 0400 6.104e-05
f16 068e 0.0001
bf16 4f00 2.15e+09
bf16 42c8 1e+02
bf16 42c6 99.0
bf16 3c23 0.00995
"
# The sum of 2^31 float32 ones (via 2^31 as a value: generating 2^31 elements is too slow here).
le 4f000000 >"$DIR/two31.f32"
run sum --raw "$DIR/two31.f32" --dtype f32 --device cpu --repeat 1
if [ "$RC" -eq 0 ] && grep -q '^sum *= 2.1474836e+09$' "$OUT" && grep -q '^bits *= 0x4f000000$' "$OUT"; then
    pass
else
    fail "float32 2^31 prints as 2.1474836e+09, bits unchanged (exit $RC)"
fi
# With numpy at hand, random bit patterns of every NumPy float type too.
if command -v python3 >/dev/null 2>&1 && python3 -c 'import numpy' >/dev/null 2>&1; then
    python3 -c 'import numpy as np, random, struct, sys
r = random.Random(7)
for t, code, width in (("f16", "<H", 16), ("f32", "<I", 32), ("f64", "<Q", 64)):
    for _ in range(15):
        bits = r.getrandbits(width)
        v = np.frombuffer(struct.pack(code, bits), {"f16": np.float16, "f32": np.float32, "f64": np.float64}[t])[0]
        if v == v:  # NaN payloads print as the canonical nan
            print(t, "%0*x" % (width // 4, bits), str(v))' >"$DIR/numpy_values"
    while read -r t hex expected; do
        le "$hex" >"$DIR/one.$t"
        run sum --op max --raw "$DIR/one.$t" --dtype "$t" --device cpu --repeat 1 --json
        expect_json "float value $t 0x$hex against numpy" value "$expected"
    done <"$DIR/numpy_values"
else
    echo "SKIP: test_cli: numpy not found: float printing checked against the fixed table only"
fi

# ---------------------------------------------------------------- standard input

"$CLI" sum - --device cpu --repeat 1 --json <"$DIR/x-f32.npy" >"$OUT" 2>"$ERR"
RC=$?
expect_json "sum - < file.npy" bits 0x41300000
cat "$DIR/x-f32.npy" | "$CLI" sum - --device cpu --repeat 1 --json >"$OUT" 2>"$ERR"
RC=$?
expect_json "a .npy piped into sum -" bits 0x41300000
cat "$DIR/x.f64" | "$CLI" sum --raw - --dtype f64 --device cpu --repeat 1 --json >"$OUT" 2>"$ERR"
RC=$?
expect_json "a raw file piped into --raw -" bits 0x4026000000000000
cat "$DIR/y-f32.npy" | "$CLI" sum --op dot "$DIR/x-f32.npy" - --device cpu --repeat 1 --json >"$OUT" 2>"$ERR"
RC=$?
expect_json "dot's y from standard input" bits 0x422c0000
"$CLI" sum - --device cpu </dev/null >"$OUT" 2>"$ERR"
RC=$?
if [ "$RC" -eq 1 ] && [ "$(wc -l <"$ERR")" -eq 1 ] && grep -q 'standard input' "$ERR"; then
    pass
else
    fail "an empty standard input: one line naming it (exit $RC)"
fi
expect_error "'-' for both inputs" sum --op dot - - --device cpu
if [ "$RC" -eq 2 ]; then pass; else fail "'-' twice: exit 2 (exit $RC)"; fi

# ---------------------------------------------------------------- streams: bounded, capped

# A stream is read as it arrives, up to --max-input: /dev/zero fails fast and clearly.
start=$(date +%s)
expect_error "--raw /dev/zero --max-input 1M" sum --raw /dev/zero --dtype f32 --max-input 1M --device cpu
if [ "$RC" -eq 1 ] && grep -q 'limit' "$ERR" && grep -q -- '--max-input' "$ERR" &&
    [ $(($(date +%s) - start)) -lt 20 ]; then
    pass
else
    fail "--raw /dev/zero --max-input 1M: exit 1 at once, naming the limit (exit $RC)"
fi
# A piped .npy whose header claims 2^60 elements fails before any allocation or read.
npy_head '<f4' 1152921504606846976 | "$CLI" sum /dev/stdin --device cpu >"$OUT" 2>"$ERR"
RC=$?
if [ "$RC" -eq 1 ] && [ "$(wc -l <"$ERR")" -eq 1 ] && grep -q 'limit' "$ERR"; then
    pass
else
    fail "a piped header claiming 2^60 elements: exit 1, one line naming the limit (exit $RC)"
fi
# A header within the limit reserves nothing either: 2^28 float32 (1 GiB) claimed, 16 bytes
# sent, under a 600 MB address-space limit (not with AddressSanitizer, which needs more).
if grep -q -a '__asan_init' "$CLI"; then
    echo "SKIP: test_cli: AddressSanitizer build: the address-space limit check is skipped"
else
    { npy_head '<f4' 268435456; cat "$DIR/x.f32"; } >"$DIR/claims_1g.npy"
    (
        ulimit -v 600000
        cat "$DIR/claims_1g.npy" | "$CLI" sum /dev/stdin --device cpu
    ) >"$OUT" 2>"$ERR"
    RC=$?
    if [ "$RC" -eq 1 ] && [ "$(wc -l <"$ERR")" -eq 1 ] && grep -q 'truncated' "$ERR"; then
        pass
    else
        fail "a piped header claiming 1 GiB with 16 bytes of data: 'truncated', nothing reserved (exit $RC)"
    fi
fi
expect_error "--max-input nonsense" sum --raw /dev/zero --dtype f32 --max-input lots --device cpu
if [ "$RC" -eq 2 ]; then pass; else fail "--max-input lots: exit 2 (exit $RC)"; fi

# ---------------------------------------------------------------- gen's output files

OF="$DIR/outfiles"
rm -rf "$OF"
mkdir -p "$OF"
no_temp_files() { ! ls -A "$OF" | grep -q '\.tmp-'; }
# An existing file is kept without --force, replaced (whole) with it, its permissions kept.
printf 'precious' >"$OF/keep.npy"
chmod 640 "$OF/keep.npy"
expect_error "gen onto an existing file" gen ones --n 10 --out "$OF/keep.npy"
if [ "$RC" -eq 1 ] && [ "$(cat "$OF/keep.npy")" = precious ] && grep -q -- '--force' "$ERR"; then
    pass
else
    fail "gen onto an existing file without --force: refused, file kept (exit $RC)"
fi
run gen ones --n 10 --out "$OF/keep.npy" --force
got=$(sum_bits "$OF/keep.npy" --device cpu --repeat 1)
expect_same "gen --force replaces the file" "$got" 0x41200000
if [ "$(stat -c %a "$OF/keep.npy")" = 640 ]; then pass; else fail "gen --force keeps the mode ($(stat -c %a "$OF/keep.npy"))"; fi
# A symbolic link stays a link; the file it points to is written.
printf 'old' >"$OF/target.npy"
ln -s target.npy "$OF/link.npy"
run gen ones --n 10 --out "$OF/link.npy" --force
got=$(sum_bits "$OF/target.npy" --device cpu --repeat 1)
if [ -L "$OF/link.npy" ] && [ "$got" = 0x41200000 ]; then pass; else fail "gen through a symlink: link kept, target written ($got)"; fi
ln -s made.npy "$OF/dangling.npy"
run gen ones --n 10 --out "$OF/dangling.npy"
if [ "$RC" -eq 0 ] && [ -L "$OF/dangling.npy" ] && [ -f "$OF/made.npy" ]; then pass; else fail "gen through a dangling symlink creates its target (exit $RC)"; fi
# A failing write removes nothing the program did not create: a link to /dev/full.
ln -s /dev/full "$OF/full"
expect_error "gen into /dev/full" gen ones --n 100000 --raw-out "$OF/full"
if [ -L "$OF/full" ] && [ -c /dev/full ]; then pass; else fail "a failed write into /dev/full removed the path"; fi
# Devices and FIFOs are written in place.
run gen ones --n 1000 --out /dev/null
if [ "$RC" -eq 0 ] && [ -c /dev/null ]; then pass; else fail "gen --out /dev/null (exit $RC)"; fi
mkfifo "$OF/fifo"
cat "$OF/fifo" >"$OF/from_fifo.npy" &
run gen ones --n 10 --out "$OF/fifo"
wait
got=$(sum_bits "$OF/from_fifo.npy" --device cpu --repeat 1)
if [ -p "$OF/fifo" ] && [ "$got" = 0x41200000 ]; then pass; else fail "gen into a FIFO: written in place, still a FIFO ($got)"; fi
# '-' and /dev/stdout: the data on stdout, the closing line on stderr.
(cd "$OF" && "$CLI" gen ones --n 10 --out - >"$OF/dash.npy" 2>"$ERR")
RC=$?
wrote=$(grep -c '^wrote ' "$ERR")
got=$(sum_bits "$OF/dash.npy" --device cpu --repeat 1)
if [ "$RC" -eq 0 ] && [ ! -e "$OF/-" ] && [ "$got" = 0x41200000 ] && [ "$wrote" -eq 1 ]; then
    pass
else
    fail "gen --out -: the data on stdout, 'wrote' on stderr (exit $RC, $got)"
fi
"$CLI" gen ones --n 10 --out /dev/stdout >"$OF/devstdout.npy" 2>"$ERR"
got=$(sum_bits "$OF/devstdout.npy" --device cpu --repeat 1)
expect_same "gen --out /dev/stdout > FILE" "$got" 0x41200000
# A write that fails part-way (a file size limit) leaves no file and no temporary file; with
# --force the previous file stays whole.
(
    ulimit -f 8
    "$CLI" gen ones --n 100000 --raw-out "$OF/big.raw"
) >"$OUT" 2>"$ERR"
RC=$?
if [ "$RC" -eq 1 ] && [ "$(wc -l <"$ERR")" -eq 1 ] && [ ! -e "$OF/big.raw" ] && no_temp_files; then
    pass
else
    fail "a write past the file size limit: one line, exit 1, nothing left behind (exit $RC)"
fi
(
    ulimit -f 8
    "$CLI" gen ones --n 100000 --out "$OF/keep.npy" --force
) >"$OUT" 2>"$ERR"
got=$(sum_bits "$OF/keep.npy" --device cpu --repeat 1)
if [ "$got" = 0x41200000 ] && no_temp_files; then pass; else fail "a failed --force write keeps the previous file ($got)"; fi
# A run killed while it works never leaves a file at the path; SIGTERM removes the temporary.
"$CLI" gen ones --n 64M --dtype f64 --raw-out "$OF/killed.raw" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1000); do
    if [ -e "$OF/killed.raw" ] || ! no_temp_files; then break; fi
    sleep 0.01
done
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
if [ ! -e "$OF/killed.raw" ] && no_temp_files; then pass; else fail "a killed gen left $(ls -A "$OF" | grep killed)"; fi
expect_error "gen --out a directory" gen ones --n 10 --out "$OF"
run gen --help
for word in --force temporary 'symbolic link' FIFO; do
    if grep -q -- "$word" "$OUT"; then pass; else fail "gen --help explains '$word'"; fi
done
run sum --help
for word in --max-input 'standard input'; do
    if grep -q -- "$word" "$OUT"; then pass; else fail "sum --help explains '$word'"; fi
done

# ---------------------------------------------------------------- GPU

run info --json
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
        expect_json "--method $method, 2^20 ones f32" value 1.048576e+06
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
    expect_json "--method grid --no-cooperative" value 1.048576e+06
    expect_json "--method grid --no-cooperative" cooperative false
    expect_json "--method grid --no-cooperative" fell_back true
    if grep -q '^coopreduce: notice: ' "$ERR" && [ "$(wc -l <"$OUT")" -eq 1 ] && grep -q '^{.*}$' "$OUT"; then
        pass
    else
        fail "--method grid --no-cooperative: a notice on stderr, stdout one JSON object"
    fi
    run sum --gen ones --n 1048576 --method gridsync --no-cooperative --device gpu --json
    expect_json "--method gridsync --no-cooperative" value 1.048576e+06
    if grep -q '^coopreduce: notice: ' "$ERR"; then pass; else fail "--method gridsync --no-cooperative: notice"; fi
    expect_error "--method cluster --no-clusters" sum --gen ones --n 1048576 --method cluster \
        --no-clusters --device gpu
    if [ "$RC" -eq 1 ] && grep -q 'cluster' "$ERR"; then pass; else fail "--method cluster --no-clusters names the method (exit $RC)"; fi
    run sum --gen ones --n 1048576 --method canonical --no-clusters --no-cooperative --device gpu --json
    expect_json "canonical with the features off" bits "$ones_bits"

    # Launch settings: pipeline stages, forced grids (canonical's bits never change).
    for stages in 1 2 8; do
        run sum --gen ones --n 1000000 --method pipeline --stages $stages --device gpu --json
        expect_json "--method pipeline --stages $stages" value 1e+06
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

    # Every operation and type: --device auto gives the CPU's bits, on the GPU or (for what the
    # GPU cannot compute yet) on the CPU with a notice; --device gpu gives them too, or fails
    # with one line (exit 1) saying the GPU cannot compute it.
    for t in f16 bf16 f32 f64 i32 i64 u32 u64; do
        for op in sum min max absmax mean sumsq norm2 dot argmin argmax; do
            case $t:$op in i*:sumsq | i*:norm2 | i*:dot | u*:sumsq | u*:norm2 | u*:dot) continue ;; esac
            cpu=$(sum_bits --op $op --gen signed --n 100003 --dtype $t --device cpu --repeat 1)
            auto=$(sum_bits --op $op --gen signed --n 100003 --dtype $t --repeat 2)
            expect_same "auto vs cpu ($op of $t)" "$auto" "$cpu"
            if grep -q 'notice: .*computed it on the CPU' "$ERR"; then
                expect_error "--device gpu, $op of $t unsupported" sum --op $op --gen signed \
                    --n 100003 --dtype $t --device gpu --repeat 1
            else
                gpu=$(sum_bits --op $op --gen signed --n 100003 --dtype $t --device gpu --repeat 2)
                expect_same "gpu vs cpu ($op of $t)" "$gpu" "$cpu"
            fi
        done
    done
    run sum --op argmax --gen ones --n 0 --device gpu
    if [ "$RC" -eq 1 ] && [ "$(wc -l <"$ERR")" -eq 1 ]; then pass; else fail "argmax of empty on the GPU (exit $RC)"; fi
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

cli_summary test_cli
