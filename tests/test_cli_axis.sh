#!/usr/bin/env bash
# test_cli_axis.sh — end-to-end tests of `coopreduce sum --axis` and `--segments`, `--shape`,
# and `coopreduce bench --shape/--axis` and `--segments` on the CPU.
#
# usage: bash tests/test_cli_axis.sh PATH_TO_coopreduce SCRATCH_DIR
#
# Needs only bash, coreutils and awk. The .npy files are written byte by byte; rows and columns
# are cut out of raw files with dd, so that every result can be checked bit for bit against the
# 1-D `coopreduce sum` of exactly its values.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
cli_setup test_cli_axis "$@"

# expect_lines DESCRIPTION "EXPECTED LINES" ARGS... -- exit 0, stdout exactly the lines given
# (space-separated).
expect_lines() {
    local what=$1 want
    want=$(printf '%s\n' $2)
    shift 2
    run "$@"
    if [ "$RC" -eq 0 ] && [ "$(cat "$OUT")" = "$want" ]; then
        pass
    else
        fail "$what: exit $RC, got '$(tr '\n' ' ' <"$OUT")', expected '$(echo $want)'"
    fi
}

# expect_error DESCRIPTION STATUS ARGS... -- that exit status and one line on stderr starting
# "coopreduce: ".
expect_error() {
    local what=$1 status=$2
    shift 2
    run "$@"
    if [ "$RC" -eq "$status" ] && [ "$(wc -l <"$ERR")" -eq 1 ] &&
        [ "$(head -c 12 "$ERR")" = "coopreduce: " ]; then
        pass
    else
        fail "$what: exit $RC (expected $status), $(wc -l <"$ERR") stderr line(s)"
    fi
}

# A JSON array of the one-line object in $OUT, one item a line, quotes dropped.
json_array() {
    sed -n 's/.*"'"$1"'": \[\([^]]*\)\].*/\1/p' "$OUT" | tr -d '" ' | tr ',' '\n'
}
# npy FILE DESCR FORTRAN SHAPE HEX...: a version 1.0 .npy file (128-byte header).
npy() {
    local file=$1 descr=$2 fortran=$3 shape=$4 v
    shift 4
    {
        printf '\223NUMPY\001\000\166\000'
        printf "%-117s\n" "{'descr': '$descr', 'fortran_order': $fortran, 'shape': $shape, }"
        for v in "$@"; do le "$v"; done
    } >"$file"
}
i32() { printf '%08x ' "$@"; }
i64() { printf '%016x ' "$@"; }

# ---------------------------------------------------------------- --axis on hand-written arrays

# [[1, 2, 3], [4, 5, 6]], int32, C order: the exact int64 sums.
npy "$DIR/a23.npy" '<i4' False '(2, 3)' $(i32 1 2 3 4 5 6)
expect_lines "2-D axis 0" "5 7 9" sum "$DIR/a23.npy" --axis 0
expect_lines "2-D axis 1" "6 15" sum "$DIR/a23.npy" --axis 1
expect_lines "2-D axis -1" "6 15" sum "$DIR/a23.npy" --axis -1
expect_lines "2-D axis -2" "5 7 9" sum "$DIR/a23.npy" --axis=-2
expect_lines "2-D max axis 1" "3 6" sum "$DIR/a23.npy" --axis 1 --op max
expect_lines "2-D argmin axis 0 (index within the axis)" "0 0 0" sum "$DIR/a23.npy" --axis 0 --op argmin
expect_lines "2-D argmax axis 1" "2 2" sum "$DIR/a23.npy" --axis 1 --op argmax
expect_lines "2-D mean axis 1 (float64)" "2.0 5.0" sum "$DIR/a23.npy" --axis 1 --op mean
expect_error "axis 2 of a 2-D array" 2 sum "$DIR/a23.npy" --axis 2
expect_error "axis -3 of a 2-D array" 2 sum "$DIR/a23.npy" --axis -3
expect_error "--axis x" 2 sum "$DIR/a23.npy" --axis x

# The same memory as a Fortran-ordered (3, 2) array: numpy's [[1, 4], [2, 5], [3, 6]].
npy "$DIR/f32.npy" '<i4' True '(3, 2)' $(i32 1 2 3 4 5 6)
expect_lines "Fortran 2-D axis 0" "6 15" sum "$DIR/f32.npy" --axis 0
expect_lines "Fortran 2-D axis 1" "5 7 9" sum "$DIR/f32.npy" --axis 1
expect_lines "Fortran 2-D argmax axis 1" "1 1 1" sum "$DIR/f32.npy" --axis 1 --op argmax

# 0 .. 11 as a C-ordered (2, 3, 2) array, a[i, j, k] = 6i + 2j + k, and as a Fortran-ordered
# one, a[i, j, k] = i + 2j + 6k.
npy "$DIR/c232.npy" '<i4' False '(2, 3, 2)' $(i32 0 1 2 3 4 5 6 7 8 9 10 11)
npy "$DIR/f232.npy" '<i4' True '(2, 3, 2)' $(i32 0 1 2 3 4 5 6 7 8 9 10 11)
expect_lines "3-D C axis 0" "6 8 10 12 14 16" sum "$DIR/c232.npy" --axis 0
expect_lines "3-D C axis 1" "6 9 24 27" sum "$DIR/c232.npy" --axis 1
expect_lines "3-D C axis 2" "1 5 9 13 17 21" sum "$DIR/c232.npy" --axis 2
# Fortran: results printed in file order (Fortran order of the result): r[0,0], r[1,0], ...
expect_lines "3-D Fortran axis 1" "6 9 24 27" sum "$DIR/f232.npy" --axis 1
expect_lines "3-D Fortran axis 0" "1 5 9 13 17 21" sum "$DIR/f232.npy" --axis 0
expect_lines "3-D Fortran axis 2" "6 8 10 12 14 16" sum "$DIR/f232.npy" --axis -1

# --out writes a .npy of the result's shape and type, which reads back: the Fortran result
# (2, 2) = [[6, 24], [9, 27]] is written Fortran-ordered, so its own axes reduce as numpy's.
rm -f "$DIR/r.npy"
run sum "$DIR/f232.npy" --axis 1 --out "$DIR/r.npy"
if [ "$RC" -eq 0 ] && grep -q "^wrote 4 int64 results (sum along axis 1, shape (2, 2), Fortran order) to $DIR/r.npy\$" "$OUT" &&
    head -c 128 "$DIR/r.npy" | grep -aq "'descr': '<i8', 'fortran_order': True, 'shape': (2, 2), }"; then
    pass
else
    fail "--out of a Fortran 3-D reduction: exit $RC, $(cat "$OUT"), header $(head -c 80 "$DIR/r.npy" | tr -dc '[:print:]')"
fi
expect_lines "the written Fortran result, axis 0" "15 51" sum "$DIR/r.npy" --axis 0
expect_lines "the written Fortran result, axis 1" "30 36" sum "$DIR/r.npy" --axis 1
# The C-ordered result reads back in C order.
rm -f "$DIR/rc.npy"
run sum "$DIR/c232.npy" --axis 2 --out "$DIR/rc.npy"
expect_lines "the written C result (2, 3), axis 1" "15 51" sum "$DIR/rc.npy" --axis 1
expect_lines "the written C result (2, 3), axis 0" "14 22 30" sum "$DIR/rc.npy" --axis 0

# --keepdims keeps the axis as extent 1.
rm -f "$DIR/k.npy"
run sum "$DIR/a23.npy" --axis 1 --keepdims --out "$DIR/k.npy"
if [ "$RC" -eq 0 ] && head -c 128 "$DIR/k.npy" | grep -aq "'shape': (2, 1), }"; then pass; else fail "--keepdims shape (2, 1) (exit $RC)"; fi
expect_lines "--keepdims result reads back along axis 0" "21" sum "$DIR/k.npy" --axis 0
run sum "$DIR/a23.npy" --axis 0 --keepdims --json
if [ "$RC" -eq 0 ] && [ "$(json_array result_shape | tr '\n' ' ')" = "1 3 " ]; then pass; else fail "--keepdims JSON result_shape (exit $RC): $(cat "$OUT")"; fi
expect_error "--keepdims without --axis" 2 sum "$DIR/a23.npy" --keepdims

# An existing --out is not replaced without --force, and stays as it was.
cp "$DIR/k.npy" "$DIR/k.before"
expect_error "--out over an existing file" 1 sum "$DIR/a23.npy" --axis 0 --out "$DIR/k.npy"
if cmp -s "$DIR/k.npy" "$DIR/k.before" && grep -q "not replaced without --force" "$ERR"; then pass; else fail "the existing --out file was changed"; fi
run sum "$DIR/a23.npy" --axis 0 --out "$DIR/k.npy" --force
if [ "$RC" -eq 0 ] && head -c 128 "$DIR/k.npy" | grep -aq "'shape': (3,), }"; then pass; else fail "--force replaces it (exit $RC)"; fi
expect_lines "the replaced file holds the new results" "21" sum "$DIR/k.npy" --axis 0
expect_error "--out without --axis" 2 sum "$DIR/a23.npy" --out "$DIR/x.npy"
expect_error "--force without --out" 2 sum "$DIR/a23.npy" --axis 0 --force
# A failing reduction leaves no file and no temporary file behind.
npy "$DIR/e03.npy" '<f4' False '(0, 3)'
rm -f "$DIR/none.npy"
expect_error "min along an empty axis" 1 sum "$DIR/e03.npy" --axis 0 --op min --out "$DIR/none.npy"
if [ ! -e "$DIR/none.npy" ] && [ -z "$(ls -A "$DIR" | grep '^\.none')" ]; then pass; else fail "a failed --out left a file"; fi

# 1-D: axis 0 is the whole array; keepdims gives shape (1,).
npy "$DIR/v.npy" '<f4' False '(4,)' 40400000 c0800000 00000000 41400000
expect_lines "1-D axis 0" "11.0" sum "$DIR/v.npy" --axis 0
expect_lines "1-D axis -1 argmin" "1" sum "$DIR/v.npy" --axis -1 --op argmin
expect_error "1-D axis 1" 2 sum "$DIR/v.npy" --axis 1
rm -f "$DIR/v1.npy"
run sum "$DIR/v.npy" --axis 0 --keepdims --out "$DIR/v1.npy"
if [ "$RC" -eq 0 ] && head -c 128 "$DIR/v1.npy" | grep -aq "'descr': '<f4', 'fortran_order': False, 'shape': (1,), }"; then pass; else fail "1-D keepdims --out (exit $RC)"; fi
# A float16 input gives float32 results; --narrow float16 ones.
npy "$DIR/h.npy" '<f2' False '(2, 2)' 3c00 4000 4200 4400
expect_lines "float16 rows" "3.0 7.0" sum "$DIR/h.npy" --axis 1
rm -f "$DIR/h.out.npy" "$DIR/hn.npy"
run sum "$DIR/h.npy" --axis 1 --out "$DIR/h.out.npy"
if head -c 128 "$DIR/h.out.npy" | grep -aq "'descr': '<f4'"; then pass; else fail "float16 sums written as float32"; fi
run sum "$DIR/h.npy" --axis 1 --narrow --out "$DIR/hn.npy"
if head -c 128 "$DIR/hn.npy" | grep -aq "'descr': '<f2'"; then pass; else fail "--narrow float16 sums written as float16"; fi

# --json: arrays of values and bits, and what was reduced.
run sum "$DIR/v.npy" --axis 0 --json
if [ "$RC" -eq 0 ] && [ "$(json_array values)" = "11.0" ] && [ "$(json_array bits)" = "0x41300000" ] &&
    [ "$(json axis)" = 0 ] && [ "$(json result_dtype)" = float32 ] && [ "$(json count)" = 1 ]; then
    pass
else
    fail "--json of an axis reduction: $(cat "$OUT")"
fi
run sum "$DIR/a23.npy" --axis 1 --json
if [ "$(json_array values | tr '\n' ' ')" = "6 15 " ] &&
    [ "$(json_array bits | tr '\n' ' ')" = "0x0000000000000006 0x000000000000000f " ] &&
    [ "$(json_array shape | tr '\n' ' ')" = "2 3 " ] && [ "$(json result_dtype)" = int64 ]; then
    pass
else
    fail "--json of int32 rows: $(cat "$OUT")"
fi
rm -f "$DIR/j.npy"
run sum "$DIR/a23.npy" --axis 1 --json --out "$DIR/j.npy"
if [ "$RC" -eq 0 ] && [ "$(json out)" = "$DIR/j.npy" ] && ! grep -q '"values"' "$OUT" && [ -s "$DIR/j.npy" ]; then pass; else fail "--json --out: $(cat "$OUT")"; fi

# dot along an axis: the same shape and order, or an error.
npy "$DIR/d1.npy" '<f4' False '(2, 2)' 3f800000 40000000 40400000 40800000
npy "$DIR/d2.npy" '<f4' False '(2, 2)' 3f800000 3f800000 40000000 40000000
npy "$DIR/d3.npy" '<f4' False '(4,)' 3f800000 3f800000 40000000 40000000
expect_lines "dot along axis 1" "3.0 14.0" sum --op dot "$DIR/d1.npy" "$DIR/d2.npy" --axis 1
expect_lines "dot along axis 0" "7.0 10.0" sum --op dot "$DIR/d1.npy" --y "$DIR/d2.npy" --axis 0
expect_error "dot along an axis of different shapes" 1 sum --op dot "$DIR/d1.npy" "$DIR/d3.npy" --axis 0

# 64-bit integer sums along an axis are int64: one that does not fit is an error naming it.
npy "$DIR/big.npy" '<i8' False '(2, 2)' $(i64 1 2) 7fffffffffffffff 0000000000000001
expect_lines "int64 min along axis 1" "1 1" sum "$DIR/big.npy" --axis 1 --op min
expect_lines "int64 max along axis 0" "9223372036854775807 2" sum "$DIR/big.npy" --axis 0 --op max
expect_error "an int64 row sum beyond 64 bits" 1 sum "$DIR/big.npy" --axis 1
if grep -q "result 1 is 9223372036854775808, which does not fit in int64" "$ERR"; then pass; else fail "the overflow message names result 1 and its value"; fi
npy "$DIR/bigu.npy" '<u8' False '(2, 2)' $(i64 1 2) ffffffffffffffff 0000000000000000
expect_lines "uint64 sums that fit" "3 18446744073709551615" sum "$DIR/bigu.npy" --axis 1
rm -f "$DIR/bu.npy"
run sum "$DIR/bigu.npy" --axis 1 --out "$DIR/bu.npy"
if head -c 128 "$DIR/bu.npy" | grep -aq "'descr': '<u8'"; then pass; else fail "uint64 sums written as uint64"; fi

# Zero extents: an empty result, or empty rows.
npy "$DIR/e30.npy" '<f4' False '(3, 0)'
expect_lines "an empty result" "" sum "$DIR/e03.npy" --axis 1
expect_lines "empty rows sum to 0" "0.0 0.0 0.0" sum "$DIR/e30.npy" --axis 1
expect_lines "empty rows: mean is nan" "nan nan nan" sum "$DIR/e30.npy" --axis 1 --op mean
expect_error "max of empty rows" 1 sum "$DIR/e30.npy" --axis 1 --op max

# ---------------------------------------------------------------- --gen and --raw with --shape

run sum --gen normal --shape 1024,256 --axis 1
if [ "$RC" -eq 0 ] && [ "$(wc -l <"$OUT")" -eq 1024 ]; then pass; else fail "--gen --shape 1024,256 --axis 1: exit $RC, $(wc -l <"$OUT") lines"; fi
cp "$OUT" "$DIR/gen-rows"
run sum --gen normal --shape 1024x256 --axis 1 --threads 1
if cmp -s "$OUT" "$DIR/gen-rows"; then pass; else fail "RxC spelling, one thread: the same results"; fi
run gen normal --n 262144 --raw-out "$DIR/g.raw" --force
run sum --raw "$DIR/g.raw" --dtype f32 --shape 1024,256 --axis 1
if cmp -s "$OUT" "$DIR/gen-rows"; then pass; else fail "--raw --shape gives the same results as --gen --shape"; fi
expect_error "--raw --shape of another size" 1 sum --raw "$DIR/g.raw" --dtype f32 --shape 1000,256 --axis 1
run gen normal --shape 1024,256 --out "$DIR/g2.npy" --force
run sum "$DIR/g2.npy" --axis 1
if cmp -s "$OUT" "$DIR/gen-rows"; then pass; else fail "gen --shape writes the array that sum --gen --shape reduces"; fi
run sum "$DIR/g2.npy" --axis 0
if [ "$RC" -eq 0 ] && [ "$(wc -l <"$OUT")" -eq 256 ]; then pass; else fail "gen --shape 1024,256: 256 columns, exit $RC, $(wc -l <"$OUT") lines"; fi
expect_error "gen with --shape and --n" 2 gen ones --n 6 --shape 2,3 --out "$DIR/g3.npy"
expect_error "gen --shape 2,,3" 2 gen ones --shape 2,,3 --out "$DIR/g3.npy"
expect_error "gen without --n or --shape" 2 gen ones --out "$DIR/g3.npy"
expect_error "--shape with --n" 2 sum --gen ones --n 10 --shape 2,5 --axis 0
expect_error "--shape with a .npy" 2 sum "$DIR/a23.npy" --shape 2,3 --axis 0
expect_error "--shape 2,,3" 2 sum --gen ones --shape 2,,3 --axis 0
expect_lines "--gen --shape 2,3,4 --axis 1" "3.0 3.0 3.0 3.0 3.0 3.0 3.0 3.0" sum --gen ones --shape 2,3,4 --axis 1
run sum --gen ones --shape 2,3,4 --device cpu
if [ "$RC" -eq 0 ] && [ "$(head -n 1 "$OUT")" = "sum      = 24.0" ]; then pass; else fail "--gen --shape without --axis: the whole array"; fi

# ---------------------------------------------------------------- --segments

# offsets [0, 3, 3, 10]: segments of 3, 0 and 7 elements.
npy "$DIR/off.npy" '<i8' False '(4,)' $(i64 0 3 3 10)
npy "$DIR/off32.npy" '<i4' False '(4,)' $(i32 0 3 3 10)
expect_lines "segments, an empty one included" "3.0 0.0 7.0" sum --gen ones --n 10 --segments "$DIR/off.npy"
expect_lines "int32 offsets are widened" "3.0 0.0 7.0" sum --gen ones --n 10 --segments "$DIR/off32.npy"
expect_lines "offsets need not cover the array" "3.0 0.0 7.0" sum --gen ones --n 12 --segments "$DIR/off.npy"
expect_lines "segments of an int32 file" "3 0 42" sum "$DIR/c232.npy" --segments "$DIR/off.npy"
npy "$DIR/offa.npy" '<i8' False '(3,)' $(i64 2 5 12)
expect_lines "argmax: the index within each segment" "2 6" sum "$DIR/c232.npy" --segments "$DIR/offa.npy" --op argmax
expect_error "min of an empty segment" 1 sum --gen ones --n 10 --segments "$DIR/off.npy" --op min
if grep -q "segment 1" "$ERR"; then pass; else fail "the empty segment is named"; fi
rm -f "$DIR/s.npy"
run sum --gen ones --n 10 --segments "$DIR/off.npy" --out "$DIR/s.npy"
if [ "$RC" -eq 0 ] && head -c 128 "$DIR/s.npy" | grep -aq "'shape': (3,), }"; then pass; else fail "--segments --out (exit $RC)"; fi
expect_lines "--segments --out reads back" "10.0" sum "$DIR/s.npy" --axis 0
run sum --gen ones --n 10 --segments "$DIR/off.npy" --json
if [ "$(json_array values | tr '\n' ' ')" = "3.0 0.0 7.0 " ] && [ "$(json segments)" = 3 ]; then pass; else fail "--segments --json: $(cat "$OUT")"; fi
npy "$DIR/off1.npy" '<i8' False '(1,)' $(i64 5)
expect_lines "one offset: no segment" "" sum --gen ones --n 10 --segments "$DIR/off1.npy"
# Bad offsets files: one line each, naming the problem.
npy "$DIR/offdec.npy" '<i8' False '(3,)' $(i64 0 5 4)
npy "$DIR/offneg.npy" '<i8' False '(2,)' ffffffffffffffff $(i64 4)
npy "$DIR/offf.npy" '<f4' False '(2,)' 00000000 40000000
npy "$DIR/off2d.npy" '<i8' False '(1, 2)' $(i64 0 4)
npy "$DIR/off0.npy" '<i8' False '(0,)'
expect_error "decreasing offsets" 1 sum --gen ones --n 10 --segments "$DIR/offdec.npy"
if grep -q "offset 2 (4) is less than offset 1 (5)" "$ERR"; then pass; else fail "the decreasing offset is named"; fi
expect_error "a negative offset" 1 sum --gen ones --n 10 --segments "$DIR/offneg.npy"
expect_error "offsets beyond the array" 1 sum --gen ones --n 9 --segments "$DIR/off.npy"
if grep -q "the last offset, 10, is beyond the array's 9 elements" "$ERR"; then pass; else fail "offsets beyond the array: the message"; fi
expect_error "float offsets" 1 sum --gen ones --n 10 --segments "$DIR/offf.npy"
expect_error "2-D offsets" 1 sum --gen ones --n 10 --segments "$DIR/off2d.npy"
expect_error "no offsets" 1 sum --gen ones --n 10 --segments "$DIR/off0.npy"
expect_error "a missing offsets file" 1 sum --gen ones --n 10 --segments "$DIR/nonexistent.npy"
expect_error "--axis and --segments" 2 sum --gen ones --n 10 --segments "$DIR/off.npy" --axis 0

# ---------------------------------------------------------------- batch invariance, bit for bit
# Every result equals the 1-D `coopreduce sum` of its own values, cut out of the raw file:
# rows (contiguous), columns (strided), segments. R x C elements of each type.
R=37
C=50
bits_of() { # the values of a JSON array, or of one 1-D sum's "value"
    run sum "$@" --json
    if [ "$RC" -ne 0 ]; then echo "FAILED($RC)"; return; fi
    json value
}
for spec in "f32 sum" "f32 norm2" "f64 sum" "f64 argmax" "f16 mean" "i32 sum" "i64 sum" "u64 max" "f32 min"; do
    set -- $spec
    t=$1
    op=$2
    case $t in f16) es=2 ;; f32 | i32) es=4 ;; *) es=8 ;; esac
    gen_kind=signed
    case $t in i64 | u64) gen_kind=normal ;; esac
    "$CLI" gen $gen_kind --n $((R * C)) --seed 5 --dtype $t --raw-out "$DIR/m.$t" --force >/dev/null
    # Rows: axis 1.
    run sum --raw "$DIR/m.$t" --dtype $t --shape $R,$C --axis 1 --op $op --json
    json_array values >"$DIR/rows"
    ok=1
    for r in 0 1 17 36; do
        dd if="$DIR/m.$t" of="$DIR/row" bs=$((es * C)) skip=$r count=1 2>/dev/null
        want=$(bits_of --raw "$DIR/row" --dtype $t --op $op)
        got=$(sed -n "$((r + 1))p" "$DIR/rows")
        if [ "$got" != "$want" ]; then ok=0; echo "  row $r of $t $op: $got != $want" >&2; fi
    done
    if [ $ok -eq 1 ] && [ "$(wc -l <"$DIR/rows")" -eq $R ]; then pass; else fail "rows of $t $op equal their 1-D reductions"; fi
    # Columns: axis 0, each gathered element by element.
    run sum --raw "$DIR/m.$t" --dtype $t --shape $R,$C --axis 0 --op $op --json
    json_array values >"$DIR/cols"
    ok=1
    for c in 0 23 49; do
        : >"$DIR/col"
        for ((r = 0; r < R; r++)); do
            dd if="$DIR/m.$t" bs=$es skip=$((r * C + c)) count=1 2>/dev/null >>"$DIR/col"
        done
        want=$(bits_of --raw "$DIR/col" --dtype $t --op $op)
        got=$(sed -n "$((c + 1))p" "$DIR/cols")
        if [ "$got" != "$want" ]; then ok=0; echo "  column $c of $t $op: $got != $want" >&2; fi
    done
    if [ $ok -eq 1 ] && [ "$(wc -l <"$DIR/cols")" -eq $C ]; then pass; else fail "columns of $t $op equal their 1-D reductions"; fi
    # Segments [0, 1, 700, 700, 1850) (the empty one only where the op allows it).
    if [ "$op" = sum ] || [ "$op" = norm2 ] || [ "$op" = mean ]; then
        npy "$DIR/so.npy" '<i8' False '(5,)' $(i64 0 1 700 700 1850)
    else
        npy "$DIR/so.npy" '<i8' False '(4,)' $(i64 0 1 700 1850)
    fi
    run sum --raw "$DIR/m.$t" --dtype $t --segments "$DIR/so.npy" --op $op --json
    json_array values >"$DIR/segs"
    dd if="$DIR/m.$t" of="$DIR/seg" bs=$es skip=700 count=1150 2>/dev/null
    want=$(bits_of --raw "$DIR/seg" --dtype $t --op $op)
    if [ "$(tail -n 1 "$DIR/segs")" = "$want" ]; then pass; else fail "the last segment of $t $op: $(tail -n 1 "$DIR/segs") != $want"; fi
    dd if="$DIR/m.$t" of="$DIR/seg" bs=$es skip=1 count=699 2>/dev/null
    want=$(bits_of --raw "$DIR/seg" --dtype $t --op $op)
    if [ "$(sed -n 2p "$DIR/segs")" = "$want" ]; then pass; else fail "segment 1 of $t $op: $(sed -n 2p "$DIR/segs") != $want"; fi
done
# The float rows compared by bits too (the values above are shortest decimals).
"$CLI" gen normal --n $((R * C)) --seed 9 --dtype f32 --raw-out "$DIR/m.bits" --force >/dev/null
run sum --raw "$DIR/m.bits" --dtype f32 --shape $R,$C --axis 1 --json
json_array bits >"$DIR/rowbits"
dd if="$DIR/m.bits" of="$DIR/row" bs=$((4 * C)) skip=3 count=1 2>/dev/null
run sum --raw "$DIR/row" --dtype f32 --json
if [ "$(sed -n 4p "$DIR/rowbits")" = "$(json bits)" ]; then pass; else fail "row 3's bits"; fi

# ---------------------------------------------------------------- bench on the CPU
run bench --device cpu --shape 64x300 --axis 1 --op sum,argmax --dtype f32,i64 --quick
if [ "$RC" -eq 0 ] && [ "$(grep -c '| sum/axis1 (64x300) | yes | host_us |' "$OUT")" -eq 2 ] &&
    [ "$(grep -c '| argmax/axis1 (64x300) |' "$OUT")" -eq 2 ]; then
    pass
else
    fail "bench --shape --axis: exit $RC, $(cat "$OUT")"
fi
run bench --device cpu --shape 64x300 --axis 0 --quick
if [ "$RC" -eq 0 ] && grep -q '| 19200 | 76800 | float32 | sum/axis0 (64x300) | yes | host_us |' "$OUT"; then pass; else fail "bench --axis 0: $(cat "$OUT")"; fi
run bench --device cpu --shape 64x300 --axis 1 --op norm2 --dtype f32,bf16 --data uniform,wide --quick
if [ "$RC" -eq 0 ] && grep -q '| float32 uniform | norm2/axis1 (64x300) |' "$OUT" &&
    grep -q '| bfloat16 wide | norm2/axis1 (64x300) |' "$OUT"; then
    pass
else
    fail "bench --shape --data: a row per dtype and distribution: exit $RC, $(cat "$OUT")"
fi
run bench --device cpu --segments random:1:1000 --n 2^16 --op sum,max --quick
if [ "$RC" -eq 0 ] && [ "$(grep -c '/segments (' "$OUT")" -eq 2 ]; then pass; else fail "bench --segments: exit $RC, $(cat "$OUT")"; fi
expect_error "bench --axis without --shape" 2 bench --device cpu --axis 1
expect_error "bench --shape without --axis" 2 bench --device cpu --shape 4x4
expect_error "bench --axis out of range" 2 bench --device cpu --shape 4x4 --axis 2
expect_error "bench --segments with --axis" 2 bench --device cpu --segments random:1:10 --shape 4x4 --axis 1
expect_error "bench --segments random:5:1" 2 bench --device cpu --segments random:5:1
expect_error "bench --shape with --method" 2 bench --device cpu --shape 4x4 --axis 1 --method grid

cli_summary test_cli_axis
