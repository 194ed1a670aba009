#!/usr/bin/env bash
# multi-gpu-check.sh — the distributed calls on every GPU of one machine, in one call:
#   build (the CLI and the distributed tests only), then
#   tests: test_dist_gpu over NCCL on all GPUs (every op x dtype x mode, equal and uneven splits,
#          bits equal to the CPU and to the rank's own GPU; the all-reduce against the axis-0
#          reduction of the stacked arrays; errors on every rank); the same with one rank through
#          the exchanges of many, and with two and three ranks where there are more GPUs;
#          test_dist_loop (the device path without NCCL, threads sharing
#          GPU 0); MPI ranks with GPU handles, one per GPU and two per GPU; the
#          CLI under mpirun over NCCL and over MPI, bits equal to the single-process CPU and GPU
#          calls;
#   benchmarks: test_dist_gpu --bench with NCCL's all-reduce algorithm left free, pinned to Ring
#          and to Tree (NCCL_ALGO=allreduce:ring, allreduce:tree; a bare NCCL_ALGO=Tree leaves
#          ncclAllGather, which coopreduce also calls, no algorithm, and every call fails) (the
#          sharded float32 sum of 2^30 per GPU against one GPU, the all-reduce of 8 B, 1 MB and
#          256 MB against ncclAllReduce, and the bits of each, compared across the settings);
#          `mpirun coopreduce bench --distributed nccl`.
# usage: scripts/multi-gpu-check.sh [--no-bench] [--quick] [--prebuilt DIR]
#   --prebuilt DIR: no configure and build; run the programs of a build made elsewhere (the CLI,
#   tests/test_dist_gpu, tests/test_dist_loop, tests/test_dist_mpi and the libraries, at their places in a build tree
#   under DIR), the libraries found through LD_LIBRARY_PATH (also on every MPI rank).
# Environment: BUILD (default build-gpu), CMAKE_EXTRA (more configure options), STEP_TIMEOUT.
# NVLink multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0 is set for every program started here.
# Logs go to gpu-check-out/multi/; with $OUT set (the device tool), every step's log is appended
# to $OUT/multi.log as it ends and the summary goes to $OUT/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=$PWD/gpu-check-out/multi
mkdir -p "$LOG"
BUILD=${BUILD:-build-gpu}
BENCH=1 QUICK= PREBUILT=
while [ $# -gt 0 ]; do
  case "$1" in
    --no-bench) BENCH=0 ;;
    --quick) QUICK=--quick ;;
    --prebuilt) PREBUILT=1; BUILD=${2:?--prebuilt needs a directory}; shift ;;
    *) echo "usage: $0 [--no-bench] [--quick] [--prebuilt DIR]"; exit 2 ;;
  esac
  shift
done
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
declare -a SUMMARY
step() { # step NAME COMMAND...: runs, logs to $LOG/NAME.log, records PASS/FAIL and seconds
  local name=$1; shift
  local t0=$SECONDS
  echo "=== $name: $*"
  timeout "${STEP_TIMEOUT:-300}" "$@" > "$LOG/$name.log" 2>&1
  local rc=$?
  tail -n 30 "$LOG/$name.log"
  SUMMARY+=("$(printf '%-18s %s (%ds)' "$name" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")" $((SECONDS - t0)))")
  # each step's log is appended to $OUT/multi.log as it ends: a run cut short keeps what it did
  [ -n "${OUT:-}" ] && { echo "=== $name: $* -> rc $rc ($((SECONDS - t0)) s)"; cat "$LOG/$name.log"; } >> "$OUT/multi.log"
  return $rc
}
finish() {
  {
    echo "=== summary ($(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs))"
    grep -H -E '^test_[a-z_]+: [0-9]+ passed|passed, [0-9]+ failed' "$LOG"/*.log 2>/dev/null | sed "s|$LOG/||"
    printf '%s\n' "${SUMMARY[@]}"
  } > "$LOG/summary.txt"
  [ -n "${OUT:-}" ] && cp "$LOG/summary.txt" "$OUT/"
  echo
  cat "$LOG/summary.txt"
}
NGPU=$(nvidia-smi -L | grep -c '^GPU')
step topology sh -c 'nvidia-smi -L; nvidia-smi topo -m; env | grep -E "^(NCCL|NVSHMEM|TORCH_SYMM)" | sort; command -v mpirun && mpirun --version | head -1'
MPIRUN=(mpirun --oversubscribe --allow-run-as-root -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS)
if [ -n "$PREBUILT" ]; then
  BUILD=$(cd "$BUILD" && pwd)
  export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  MPIRUN+=(-x LD_LIBRARY_PATH)
  step prebuilt ls -l "$BUILD/coopreduce" "$BUILD/tests" || { finish; exit 1; }
else
  GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
  step configure cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release ${CMAKE_EXTRA:-} || { finish; exit 1; }
  TARGETS=(coopreduce_cli test_dist_gpu test_dist_loop)
  grep -qs 'test_dist_mpi' "$BUILD/build.ninja" "$BUILD/Makefile" && TARGETS+=(test_dist_mpi) # MPI found
  step build cmake --build "$BUILD" -j "$(nproc)" --target "${TARGETS[@]}" || { finish; exit 1; }
fi
T=$BUILD/tests
# the full sweep through the canonical tree's boundaries (COOPREDUCE_DIST_GATHER_KIB=0: no small
# array gathered whole, which its sizes all are otherwise), then the default, quicker
COOPREDUCE_DIST_GATHER_KIB=0 step test-nccl "$T/test_dist_gpu" $QUICK
step test-nccl-gather "$T/test_dist_gpu" --quick
COOPREDUCE_DIST_FULL_PROTOCOL=1 step test-nccl-1rank "$T/test_dist_gpu" --ranks 1 --quick
# three ranks: the first count whose canonical tree is not a power of two's
[ "$NGPU" -gt 3 ] && step test-nccl-3ranks "$T/test_dist_gpu" --ranks 3 --quick
# two ranks: the all-reduce's gathers of 1 MiB and more by send / recv with the peer
[ "$NGPU" -gt 2 ] && step test-nccl-2ranks "$T/test_dist_gpu" --ranks 2 --quick
# the device path without NCCL: 1 to 3 ranks as threads sharing GPU 0
[ -x "$T/test_dist_loop" ] && step test-loop "$T/test_dist_loop"
if [ $BENCH = 1 ]; then
  step bench-free "$T/test_dist_gpu" --bench --reps 10
  # (pinned for the all-reduce only: coopreduce also calls ncclAllGather, which has no Tree)
  NCCL_ALGO=allreduce:ring step bench-ring "$T/test_dist_gpu" --bench --reps 10
  NCCL_ALGO=allreduce:tree step bench-tree "$T/test_dist_gpu" --bench --reps 10
  command -v mpirun >/dev/null &&
    step bench-cli "${MPIRUN[@]}" -np "$NGPU" "$BUILD/coopreduce" bench --distributed nccl --device gpu --repeat 5
fi
if [ -x "$T/test_dist_mpi" ] && command -v mpirun >/dev/null; then
  step mpi-gpu-each "${MPIRUN[@]}" -np "$NGPU" "$T/test_dist_mpi" --gpu $QUICK
  step mpi-gpu-shared "${MPIRUN[@]}" -np "$((2 * NGPU))" "$T/test_dist_mpi" --gpu --quick
  DIST_DEVICE=gpu DIST_BACKEND=nccl DIST_MAXNP=$NGPU step cli-nccl bash tests/test_cli_dist.sh "$BUILD/coopreduce" "${MPIRUN[@]}"
  DIST_DEVICE=gpu DIST_BACKEND=mpi step cli-mpi-gpu bash tests/test_cli_dist.sh "$BUILD/coopreduce" "${MPIRUN[@]}"
fi
finish
# a failed step fails the script
! printf '%s\n' "${SUMMARY[@]}" | grep -q FAIL
