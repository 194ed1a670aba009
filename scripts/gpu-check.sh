#!/usr/bin/env bash
# gpu-check.sh — everything a GPU machine should confirm, in one call:
#   configure + build (Release, sm_80 + sm_90 + PTX), every test (GPU ones included),
#   the GPU tests under compute-sanitizer (memcheck, racecheck, synccheck), the quick benchmark,
#   and a short summary printed last.
# usage: scripts/gpu-check.sh [--no-sanitizer] [--no-bench] [--bench "ARGS"] [--golden]
#   --golden  also regenerate tests/golden_bits.txt from this GPU (written to $OUT)
# Logs and results go to $OUT (the device tool's output folder) or ./gpu-check-out.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT"
BUILD=${BUILD:-build-gpu}
SANITIZE=1 BENCH=1 GOLDEN=0 BENCH_ARGS="--quick"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-sanitizer) SANITIZE=0 ;;
    --no-bench) BENCH=0 ;;
    --bench) BENCH_ARGS="$2"; shift ;;
    --golden) GOLDEN=1 ;;
    *) echo "usage: $0 [--no-sanitizer] [--no-bench] [--bench ARGS] [--golden]"; exit 2 ;;
  esac
  shift
done
declare -a SUMMARY
step() { # step NAME COMMAND...: runs, logs to $OUT/NAME.log, records PASS/FAIL and seconds
  local name=$1; shift
  local t0=$SECONDS
  echo "=== $name: $*"
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$OUT/$name.log"
  SUMMARY+=("$(printf '%-12s %s (%ds)' "$name" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")" $((SECONDS - t0)))")
  return $rc
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
step configure cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release || { printf '%s\n' "${SUMMARY[@]}"; exit 1; }
step build cmake --build "$BUILD" -j "$(nproc)" || { printf '%s\n' "${SUMMARY[@]}"; exit 1; }
step ctest ctest --test-dir "$BUILD" --output-on-failure
if [ $GOLDEN = 1 ]; then
  step golden "$BUILD/tests/test_gpu" --quick --write-golden "$OUT/golden_bits.txt"
fi
if [ $SANITIZE = 1 ]; then
  for tool in memcheck racecheck synccheck; do
    step "san-$tool" compute-sanitizer --tool "$tool" --error-exitcode 9 "$BUILD/tests/test_gpu" --quick
  done
fi
if [ $BENCH = 1 ]; then
  step bench "$BUILD/coopreduce" bench $BENCH_ARGS --json "$OUT/bench.json" --csv "$OUT/bench.csv"
  cp "$OUT/bench.log" "$OUT/bench.md"
fi
echo
echo "=== summary ($(cat "$OUT/gpu.txt"))"
grep -h -E '^(test_[a-z]+|cpu|gpu)[a-z_]*: [0-9]+ passed' "$OUT"/*.log 2>/dev/null | sort | uniq -c | sed 's/^ *//'
grep -h -E 'ERROR SUMMARY' "$OUT"/san-*.log 2>/dev/null
printf '%s\n' "${SUMMARY[@]}"
