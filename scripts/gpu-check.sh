#!/usr/bin/env bash
# gpu-check.sh — everything a GPU machine should confirm, in one call:
#   configure + build (Release, sm_80 + sm_90 + PTX), every test (GPU ones included),
#   the GPU tests under compute-sanitizer (memcheck, racecheck, synccheck), the quick benchmark
#   (and NORM2 of data of wide range, and the operations on a misaligned array),
#   the example programs (validated with the tests, timed with the benchmark: examples/), and a
#   short summary printed last.
# usage: scripts/gpu-check.sh [--no-sanitizer] [--no-bench] [--bench "ARGS"] [--golden]
#                             [--tests "gpu methods ops ordered exact"] [--no-ctest] [--no-tests]
#                             [--prebuilt DIR]
#   --golden  also regenerate tests/golden_bits.txt from this GPU (written to $OUT)
#   --no-ctest  skip the CPU tests (ctest), which CI runs anyway: saves about 2 minutes
#   --tests   the GPU test programs to run, and to run under the sanitizers (default: all built;
#             NAME is tests/test_NAME_gpu, "gpu" is tests/test_gpu)
#   --no-tests  run no test program outside the sanitizers (a second call on a machine that ran
#             them already: the sanitizers, or the benchmarks, alone)
#   --prebuilt DIR  no configure, build or ctest: run the programs of a build tree made elsewhere
#             (DIR/coopreduce, DIR/tests, DIR/examples), the library found through
#             LD_LIBRARY_PATH=DIR (also on every MPI rank); a Python extension is used only if
#             DIR/python holds one that imports on this machine
# Environment: BUILD (build directory, default build-gpu), STEP_TIMEOUT (seconds per step),
#   SAN_TOOLS (the sanitizer tools, default "memcheck racecheck synccheck") and SAN_TESTS (the
#   programs they run, default those of --tests): the whole pass takes longer than one device
#   call (racecheck of the ordered, exact and axis tests over 75 s each on an H200), so split it,
#   e.g. SAN_TOOLS="memcheck synccheck" (all six programs in about 95 s), then SAN_TOOLS=racecheck
#   SAN_TESTS="ordered exact", and so on; CMAKE_EXTRA (more configure options, e.g.
#   -DCMAKE_CUDA_ARCHITECTURES=90 to build for the GPU at hand only, about half the build
#   time), CMAKE_GENERATOR (CMake's own variable: the
#   build's generator; default Ninja where ninja is installed, else Unix Makefiles, which
#   scripts/variant.py needs to relink a variant beside the build)
# Full logs go to gpu-check-out/; the few files worth keeping (summary, bench, golden bits, the
# GPU test and sanitizer logs) are also copied to $OUT when the device tool sets it.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=$PWD/gpu-check-out
mkdir -p "$LOG"
BUILD=${BUILD:-build-gpu}
SANITIZE=1 BENCH=1 GOLDEN=0 CTEST=1 RUNTESTS=1 PREBUILT= BENCH_ARGS="--quick"
TESTS="gpu methods ops ordered exact axis dist"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-sanitizer) SANITIZE=0 ;;
    --no-bench) BENCH=0 ;;
    --bench) BENCH_ARGS="$2"; shift ;;
    --golden) GOLDEN=1 ;;
    --no-ctest) CTEST=0 ;;
    --no-tests) RUNTESTS=0 ;;
    --tests) TESTS="$2"; shift ;;
    --prebuilt) PREBUILT=1; BUILD=${2:?--prebuilt needs a directory}; CTEST=0; shift ;;
    *) echo "usage: $0 [--no-sanitizer] [--no-bench] [--bench ARGS] [--golden] [--tests LIST] [--no-ctest] [--no-tests] [--prebuilt DIR]"; exit 2 ;;
  esac
  shift
done
# NVLink multicast (NVLS) stays off for every program started here (test_dist_gpu takes every GPU)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
declare -a SUMMARY
step() { # step NAME COMMAND...: runs, logs to $OUT/NAME.log, records PASS/FAIL and seconds
  local name=$1; shift
  local t0=$SECONDS
  echo "=== $name: $*"
  timeout "${STEP_TIMEOUT:-300}" "$@" > "$LOG/$name.log" 2>&1 # a hang ends as a FAIL rc=124
  local rc=$?
  tail -n 25 "$LOG/$name.log"
  SUMMARY+=("$(printf '%-12s %s (%ds)' "$name" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")" $((SECONDS - t0)))")
  return $rc
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$LOG/gpu.txt"
if [ -n "$PREBUILT" ]; then
  BUILD=$(cd "$BUILD" && pwd) || exit 1
  export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  step prebuilt ls -l "$BUILD/coopreduce" "$BUILD/tests" || { printf '%s\n' "${SUMMARY[@]}"; exit 1; }
else
  GEN=(); [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null && GEN=(-G Ninja)
  step configure cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release ${CMAKE_EXTRA:-} || { printf '%s\n' "${SUMMARY[@]}"; exit 1; }
  step build cmake --build "$BUILD" -j "$(nproc)" || { printf '%s\n' "${SUMMARY[@]}"; exit 1; }
fi
[ $CTEST = 1 ] && step ctest ctest --test-dir "$BUILD" --output-on-failure -E '^gpu_'
gpu_test() { [ "$1" = gpu ] && echo "$BUILD/tests/test_gpu" || echo "$BUILD/tests/test_$1_gpu"; }
EXAMPLES="vector_add coop_copy pipeline matmul"
if [ $RUNTESTS = 1 ]; then
  for t in $TESTS; do
    [ -x "$(gpu_test "$t")" ] && step "test_$t" "$(gpu_test "$t")"
  done
  # The tutorial's example programs (docs/EXAMPLES.md): validation only here, timing below.
  for e in $EXAMPLES; do
    [ -x "$BUILD/examples/$e" ] && step "example_$e" "$BUILD/examples/$e" --quick
  done
  # The Python package's GPU tests (torch, CuPy), against the extension of this build, with the
  # system's torch (the venv sees the system site-packages); skipped (exit 5: no tests ran) without one,
  # or where a prebuilt extension does not import here (another Python).
  if [ -d "$BUILD/python/coopreduce" ] && python3 -c "import torch, numpy, pytest" 2>/dev/null &&
     { [ -z "$PREBUILT" ] || PYTHONPATH="$BUILD/python" python3 -c "import coopreduce" 2>/dev/null; }; then
    step python env PYTHONPATH="$BUILD/python" python3 -m pytest -q -p no:cacheprovider \
      -c /dev/null --rootdir tests/python tests/python/test_gpu.py tests/python/test_fast.py \
      tests/python/test_errors.py
    step python-bench env PYTHONPATH="$BUILD/python" python3 -m coopreduce.bench
  fi
fi
if [ $GOLDEN = 1 ]; then
  step golden "$BUILD/tests/test_gpu" --quick --write-golden "$LOG/golden_bits.txt"
fi
# The distributed test over NCCL on every GPU (one thread per GPU, no MPI), over threads sharing
# GPU 0 without NCCL (test_dist_loop), then, where mpirun
# exists, MPI ranks sharing GPU 0 (test_dist_mpi --gpu), and the multi-GPU benchmark.
if [ $RUNTESTS = 1 ] && [ -x "$BUILD/tests/test_dist_gpu" ]; then # one GPU: one rank through the exchanges of many
  # (small arrays gathered whole, then through the canonical tree's boundaries)
  COOPREDUCE_DIST_FULL_PROTOCOL=1 step dist-protocol "$BUILD/tests/test_dist_gpu" --quick
  COOPREDUCE_DIST_FULL_PROTOCOL=1 COOPREDUCE_DIST_GATHER_KIB=0 step dist-protocol-tree "$BUILD/tests/test_dist_gpu" --quick
fi
# 1 to 3 ranks as threads sharing the GPU over a transport of device copies (no NCCL)
[ $RUNTESTS = 1 ] && [ -x "$BUILD/tests/test_dist_loop" ] && step dist-loop "$BUILD/tests/test_dist_loop"
if [ -x "$BUILD/tests/test_dist_gpu" ] && [ $BENCH = 1 ]; then
  step dist-bench "$BUILD/tests/test_dist_gpu" --bench --reps 10
fi
MPIRUN=(mpirun --oversubscribe --allow-run-as-root)
[ -n "$PREBUILT" ] && MPIRUN+=(-x LD_LIBRARY_PATH)
if [ $RUNTESTS = 1 ] && [ -x "$BUILD/tests/test_dist_mpi" ] && command -v mpirun >/dev/null; then
  step dist-mpi-gpu "${MPIRUN[@]}" -np 3 "$BUILD/tests/test_dist_mpi" --gpu --quick
  # seven ranks: the all-reduce's columns kernel with an odd tree of more than four leaves
  step dist-mpi-gpu-7 "${MPIRUN[@]}" -np 7 "$BUILD/tests/test_dist_mpi" --gpu --quick
fi
if [ $SANITIZE = 1 ]; then
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
    for t in ${SAN_TESTS:-${TESTS/dist/}}; do
      [ -x "$(gpu_test "$t")" ] &&
        step "san-$t-$tool" compute-sanitizer --tool "$tool" --error-exitcode 9 "$(gpu_test "$t")" --quick
    done
  done
  # the distributed algorithms' device path (the first exchange's packing, the small array put
  # together, the gates and commits) over threads sharing the GPU and a transport of device
  # copies (test_dist_loop): the sanitizers do not finish under NCCL's kernels
  if [[ " $TESTS " == *" dist "* ]] && [ -x "$BUILD/tests/test_dist_loop" ]; then
    step san-dist_loop-memcheck compute-sanitizer --tool memcheck --error-exitcode 9 "$BUILD/tests/test_dist_loop" --ranks 2
    # racecheck only over the kernels of the distributed path that share memory (the gates'
    # verdict, the small array's offsets): with every kernel checked, --quick ran past 280 s on an
    # H100; so, each of these runs in about 15 s
    for k in whole_kernel columns_ commit_kernel; do
      step "san-dist_loop-racecheck-${k%_}" compute-sanitizer --tool racecheck --kernel-name "kns=$k" \
        --error-exitcode 9 "$BUILD/tests/test_dist_loop" --ranks 2 --quick
    done
    step san-dist_loop-synccheck compute-sanitizer --tool synccheck --error-exitcode 9 "$BUILD/tests/test_dist_loop" --ranks 2
  fi
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
    for e in $EXAMPLES; do
      [ -x "$BUILD/examples/$e" ] &&
        step "san-example_$e-$tool" compute-sanitizer --tool "$tool" --error-exitcode 9 "$BUILD/examples/$e" --quick
    done
  done
fi
if [ $BENCH = 1 ]; then
  step bench "$BUILD/coopreduce" bench $BENCH_ARGS --json "$LOG/bench.json" --csv "$LOG/bench.csv"
  cp "$LOG/bench.log" "$LOG/bench.md"
  # the inputs that once fell off the memory wall: NORM2 of data of wide range or all
  # subnormal (1-D and along rows), and every one-launch operation on an array one element
  # past a 16-byte boundary
  step bench-data "$BUILD/coopreduce" bench --op norm2 --dtype bf16,f32,f64 --n 2^24,2^28 \
    --data uniform,wide,subnormal --quick
  step bench-rows-data "$BUILD/coopreduce" bench --shape 16384x8192 --axis 1 --op norm2 \
    --dtype bf16,f32,f64 --data uniform,wide --quick
  step bench-offset "$BUILD/coopreduce" bench --op sum,sumsq,norm2,dot,mean \
    --dtype f16,bf16,f32,f64 --n 2^20,2^24,2^28 --offset 1 --quick
  # hot and cold L2 at the sizes where they differ (the methods' sweep and the operations)
  step bench-cold "$BUILD/coopreduce" bench --cold --method canonical --dtype f32,f64 \
    --n 2^20,2^22,2^24,2^26 --no-extras --no-host-latency
  step bench-cold-ops "$BUILD/coopreduce" bench --cold --op sum,sumsq,norm2,dot \
    --dtype bf16,f32,f64 --n 2^20,2^24 --quick
  # rows that are not whole, aligned chunks: a length not a multiple of 16 bytes, a misaligned
  # array
  step bench-rows-ragged "$BUILD/coopreduce" bench --shape 16384x10001 --axis 1 \
    --op sum,sumsq,norm2,dot --dtype bf16,f32,f64 --quick
  step bench-rows-offset "$BUILD/coopreduce" bench --shape 16384x8192 --axis 1 --offset 1 \
    --op sum,norm2,dot --dtype bf16,f32,f64 --quick
  # segments of random lengths against CUB's segmented sum
  step bench-segments "$BUILD/coopreduce" bench --segments random:1:10000 --n 2^26 \
    --op sum,dot --dtype bf16,f32,f64 --quick
  step bench-segments-long "$BUILD/coopreduce" bench --segments random:1:30000 --n 2^26 \
    --op sum,dot --dtype bf16,f32 --quick
  step examples-bench scripts/examples-bench.sh --build "$BUILD" ${PREBUILT:+--no-build} -o "$LOG/examples.md"
fi
{
  echo "=== summary ($(cat "$LOG/gpu.txt"))"
  grep -H -E '^(test_[a-z_]+|vector_add|coop_copy|pipeline|matmul): [0-9]+ passed' "$LOG"/*.log 2>/dev/null | sed "s|$LOG/||"
  grep -H -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOG"/san-*.log 2>/dev/null | sed "s|$LOG/||"
  printf '%s\n' "${SUMMARY[@]}"
} > "$LOG/summary.txt"
if [ -n "${OUT:-}" ]; then
  cat "$LOG"/san-*.log > "$LOG/sanitizers.log" 2>/dev/null
  cat "$LOG"/test_*.log "$LOG"/example_*.log > "$LOG/gpu_tests.log" 2>/dev/null
  cp "$LOG/gpu_tests.log" "$OUT/" 2>/dev/null
  for f in summary.txt python.log python-bench.log bench.md bench-data.log bench-rows-data.log bench-offset.log bench-rows-ragged.log bench-rows-offset.log bench-segments.log bench-segments-long.log bench.json bench.csv golden_bits.txt ctest.log sanitizers.log examples.md; do
    [ -f "$LOG/$f" ] && cp "$LOG/$f" "$OUT/"
  done
fi
echo
cat "$LOG/summary.txt"
