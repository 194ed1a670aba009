#!/usr/bin/env bash
# tune.sh — builds the GPU kernels under several tuning-knob settings (CR_TUNE_* in
# src/gpu/canonical.cu and src/gpu/kernel/) and benchmarks each in the same run, so their ratios
# compare. No knob changes a result bit; tests/test_gpu checks the default build. Prints
# canonical time / CUB time per N. scripts/bench_compare.py puts two variants' --bench tables
# side by side, round by round.
# usage: scripts/tune.sh [--n LIST] [--bench "ARGS"] ["NAME=-DCR_TUNE_X=v ..." ...] ["NAME=@DIR" ...]
#   NAME=@DIR builds another source tree (say, the last commit: git archive HEAD | tar -x -C DIR)
#   with default flags, to compare versions of the code in one run.
#   --bench ARGS: run `coopreduce bench ARGS` for every variant instead (any operation, type or
#   method), the variants' runs interleaved twice (A B A B) so that drift shows; prints each
#   table.
set -uo pipefail
cd "$(dirname "$0")/.."
N="2^16,2^20,2^24,2^28"
BENCH=""
while [ $# -gt 0 ]; do
  case "$1" in
    --n) N=$2; shift 2 ;;
    --bench) BENCH=$2; shift 2 ;;
    *) break ;;
  esac
done
if [ $# -eq 0 ]; then
  set -- "default=" "blockrange=-DCR_TUNE_INTERLEAVE=0" "ldg=-DCR_TUNE_LOAD=0" \
         "ldcs=-DCR_TUNE_LOAD=1" "quad0=-DCR_TUNE_QUAD=0"
fi
LOG=$PWD/gpu-check-out/tune; mkdir -p "$LOG"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
for v in "$@"; do
  name=${v%%=*}; flags=${v#*=}; src=.
  case "$flags" in @*) src=${flags#@}; flags= ;; esac
  ( cmake -S "$src" -B "build-tune-$name" -G Ninja -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES="$arch" -DCMAKE_CUDA_FLAGS="$flags" > "$LOG/$name.build" 2>&1 &&
    cmake --build "build-tune-$name" --target coopreduce_cli -j 4 >> "$LOG/$name.build" 2>&1 ||
    echo "build of $name failed" ) &
done
wait
if [ -n "$BENCH" ]; then
  for round in 1 2; do
    for v in "$@"; do
      name=${v%%=*}
      # shellcheck disable=SC2086 # BENCH is a list of arguments
      "build-tune-$name/coopreduce" bench $BENCH > "$LOG/$name.$round.md" 2>&1 || echo "bench of $name failed"
    done
  done
  for round in 1 2; do
    for v in "$@"; do
      name=${v%%=*}
      echo "=== $name, round $round: coopreduce bench $BENCH"
      grep '^|' "$LOG/$name.$round.md"
    done
  done
  exit 0
fi
for v in "$@"; do
  name=${v%%=*}
  "build-tune-$name/coopreduce" bench --method canonical --no-extras --n "$N" --no-host-latency \
    --batches 9 > "$LOG/$name.md" 2>/dev/null || echo "bench of $name failed"
  "build-tune-$name/coopreduce" bench --method canonical --no-extras --n 2^20 --dtype f32 \
    --batches 5 > "$LOG/$name.host.md" 2>/dev/null
done
echo "canonical speed vs CUB (x CUB) and % of float4-read ceiling, per variant:"
for v in "$@"; do
  name=${v%%=*}
  printf '%-12s' "$name"
  # columns: | N | bytes | dtype | method | deterministic | timing | median us | noise | GB/s | % | x CUB |
  awk -F'|' '$5 ~ /canonical/ && $7 ~ /gpu_us/ {gsub(/ /,"",$2); gsub(/ /,"",$4); printf " %s/%s:%sx(%s%%)", $4=="float32"?"f32":"f64", $2, $12+0, $11+0}' "$LOG/$name.md"
  awk -F'|' '$5 ~ /canonical_to_host/ {h=$8+0} $5 ~ /empty_launch/ {e=$8+0} END {if (e) printf "  host2^20: %.2fus = %.2fx launch+sync", h, h/e}' "$LOG/$name.host.md"
  echo
done
