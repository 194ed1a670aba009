#!/usr/bin/env bash
# test_cli_dist.sh — `mpirun -np R coopreduce sum --distributed mpi` gives the bits of the
# single-process `coopreduce sum` on the same --gen stream, for several ops, dtypes, modes, rank
# counts and splits (empty shards included); bad splits and library errors fail on every rank
# with the message on rank 0; bench --distributed runs.
# usage: bash test_cli_dist.sh COOPREDUCE MPIRUN...   (MPIRUN: the mpirun command and its flags)
# Environment (the multi-GPU check, scripts/multi-gpu-check.sh): DIST_DEVICE=gpu runs the ranks on
# GPU handles (rank modulo the GPUs) and also compares with the single-process GPU call;
# DIST_BACKEND=nccl goes over NCCL (one GPU per rank); DIST_MAXNP skips rank counts above it.
set -u
CLI=$1
shift
MPIRUN=("$@")
DEV=${DIST_DEVICE:-cpu}
BACKEND=${DIST_BACKEND:-mpi}
MAXNP=${DIST_MAXNP:-4}
passed=0
failed=0
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }
bits() { sed -n 's/.*"bits": "\([^"]*\)".*/\1/p'; }

# one case: NP, then the sum options; optional SPLIT in $SPLIT
case_() {
    local np=$1
    shift
    [ "$np" -gt "$MAXNP" ] && return 0
    local want one got extra=()
    [ -n "${SPLIT:-}" ] && extra=(--split "$SPLIT")
    want=$("$CLI" sum "$@" --device cpu --json --repeat 1 2>/dev/null | bits)
    one=$want
    [ "$DEV" != cpu ] && one=$("$CLI" sum "$@" --device "$DEV" --json --repeat 1 2>/dev/null | bits)
    got=$("${MPIRUN[@]}" -np "$np" "$CLI" sum "$@" --device "$DEV" --json --repeat 1 --distributed "$BACKEND" "${extra[@]}" 2>/dev/null | bits)
    if [ -n "$want" ] && [ "$want" = "$got" ] && [ "$want" = "$one" ]; then
        passed=$((passed + 1))
    else
        fail "np $np $* ${extra[*]} ($DEV, $BACKEND): single process CPU '$want', $DEV '$one', distributed '$got'"
    fi
}

for np in 1 2 3 4; do
    SPLIT= case_ $np --gen uniform --n 1000003 --dtype f32
    SPLIT= case_ $np --gen signed --n 77777 --dtype f64 --op norm2
    SPLIT= case_ $np --gen normal --n 50001 --dtype bf16 --op mean
    SPLIT= case_ $np --gen signed --n 9999 --dtype f32 --mode exact
    SPLIT= case_ $np --gen normal --n 30000 --dtype f64 --op dot
    SPLIT= case_ $np --gen uniform --n 123457 --dtype i64 --op sum
    SPLIT= case_ $np --gen normal --n 123457 --dtype f16 --op argmax
done
SPLIT=0,4096,0,8193 case_ 4 --gen uniform --n 12289 --dtype f32 --op sumsq
SPLIT=12289,0,0 case_ 3 --gen signed --n 12289 --dtype f16 --op sum
SPLIT=1,1,12287 case_ 3 --gen signed --n 12289 --dtype f64 --op mean
SPLIT=4095,4097 case_ 2 --gen normal --n 8192 --dtype f32 --op norm2 --mode deterministic

# errors: every rank exits non-zero, the message once
out=$("${MPIRUN[@]}" -np 2 "$CLI" sum --gen uniform --n 100 --device "$DEV" --distributed "$BACKEND" --split 5,6 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$out" | grep -c "add up to 11")" = 1 ]; then passed=$((passed + 1)); else fail "bad split: rc $rc, '$out'"; fi
out=$("${MPIRUN[@]}" -np "$((MAXNP < 3 ? MAXNP : 3))" "$CLI" sum --gen uniform --n 0 --op min --device "$DEV" --distributed "$BACKEND" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q "empty"; then passed=$((passed + 1)); else fail "empty min: rc $rc, '$out'"; fi
out=$("$CLI" sum --gen uniform --n 10 --split 5,5 2>&1)
rc=$?
if [ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q "applies only to --distributed"; then passed=$((passed + 1)); else fail "--split alone: rc $rc, '$out'"; fi
out=$("${MPIRUN[@]}" -np "$((MAXNP < 2 ? MAXNP : 2))" "$CLI" bench --device "$DEV" --distributed "$BACKEND" --n 65536 --repeat 2 --json 2>&1)
rc=$?
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q '"sharded_gbps"'; then passed=$((passed + 1)); else fail "bench --distributed: rc $rc, '$out'"; fi

echo "test_cli_dist: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
