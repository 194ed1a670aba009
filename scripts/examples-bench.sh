#!/usr/bin/env bash
# examples-bench.sh — every example program's benchmark (docs/EXAMPLES.md) in one go, its tables
# in markdown on stdout or in a file, ready to paste into docs/EXAMPLES.md. Each program
# validates its variants first and times nothing if one fails. Estimated at a minute or two on
# an H100, building aside.
# usage: scripts/examples-bench.sh [--build DIR] [--no-build] [-o FILE] [PROGRAM...]
#   --build DIR  the build directory (default build-gpu, as scripts/gpu-check.sh; configured
#                here, Release, if it is not yet, and brought up to date on every call)
#   --no-build   time the programs DIR holds as they are (a build made elsewhere)
#   -o FILE      write the tables to FILE instead of stdout
#   PROGRAM      some of: vector_add coop_copy pipeline matmul (default: all)
# Each program's full output (validation lines included) goes to DIR/examples-bench/NAME.log.
# Exit status: non-zero when a program failed (validation or CUDA error); a program that finds
# no GPU prints SKIP and counts as passed.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=build-gpu OUTFILE= PROGRAMS=() MAKE_IT=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift ;;
    --no-build) MAKE_IT=0 ;;
    -o) OUTFILE="$2"; shift ;;
    vector_add|coop_copy|pipeline|matmul) PROGRAMS+=("$1") ;;
    *) echo "usage: $0 [--build DIR] [--no-build] [-o FILE] [vector_add|coop_copy|pipeline|matmul ...]" >&2; exit 2 ;;
  esac
  shift
done
[ ${#PROGRAMS[@]} -eq 0 ] && PROGRAMS=(vector_add coop_copy pipeline matmul)
# Configured once; built every time (incremental: nothing to do when it is up to date), so that
# the programs timed are those of the tree, not what an earlier build left in DIR.
if [ $MAKE_IT = 1 ]; then
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release ${CMAKE_EXTRA:-} >&2 ||
      { echo "examples-bench: configure failed" >&2; exit 1; }
  fi
  cmake --build "$BUILD" -j "$(nproc)" >&2 || { echo "examples-bench: build failed" >&2; exit 1; }
fi
# What source was measured. HEAD alone is not that: a copy of the working tree (as a GPU machine
# may be given) can carry the git metadata of an older commit, and then HEAD names code that was
# not built. A tree that differs from HEAD (modified or untracked files, ignored ones such as the
# build directories aside) is reported as such. Decided before -o creates its file in the tree.
source_line() {
  local rev
  rev=$(git rev-parse --short HEAD 2>/dev/null) || { echo "source: not a git checkout"; return; }
  if [ -n "$(git --no-optional-locks status --porcelain 2>/dev/null | head -n 1)" ]; then
    echo "working tree based on commit $rev, with changes not committed (the commit alone is not what ran)"
  else
    echo "commit $rev, working tree clean"
  fi
}
SOURCE=$(source_line)
LOGDIR="$BUILD/examples-bench"
mkdir -p "$LOGDIR"
[ -n "$OUTFILE" ] && exec 3>"$OUTFILE" || exec 3>&1
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
{
  echo "## Example programs: ${gpu:-no GPU found}, $(date -u +%Y-%m-%d), $SOURCE"
  echo
  echo "Command: \`scripts/examples-bench.sh ${PROGRAMS[*]}\` (build: $BUILD, CMAKE_BUILD_TYPE=Release)"
} >&3
status=0
for p in "${PROGRAMS[@]}"; do
  exe="$BUILD/examples/$p"
  if [ ! -x "$exe" ]; then
    echo "examples-bench: $exe missing (built without CUDA?)" >&2; status=1; continue
  fi
  t0=$SECONDS
  timeout "${STEP_TIMEOUT:-300}" "$exe" > "$LOGDIR/$p.log" 2>&1
  rc=$?
  # The tables (headings and rows) to the markdown; the validation lines stay in the log,
  # summed up by the program's last line ("NAME: P passed, F failed").
  grep -E '^(###|\|)|^$' "$LOGDIR/$p.log" | cat -s >&3
  echo "" >&3
  line="$p: $(tail -n 1 "$LOGDIR/$p.log") (exit $rc, $((SECONDS - t0)) s)"
  echo "$line" >&3
  [ -n "$OUTFILE" ] && echo "$line" >&2 # progress on the terminal when the tables go to a file
  [ $rc -ne 0 ] && { status=1; tail -n 20 "$LOGDIR/$p.log" >&2; }
done
exit $status
