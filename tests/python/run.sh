#!/usr/bin/env bash
# run.sh PYTHON BUILD_DIR CLI [pytest args...] — the Python tests against the package assembled in
# BUILD_DIR/python, in a virtual environment BUILD_DIR/venv made from PYTHON (the interpreter the
# extension was built for) with numpy and pytest from PyPI, made once and kept.
# Exit 77 (ctest: skipped) with a SKIP line when the tests cannot run here.
set -euo pipefail
PY=$1 BUILD=$2 CLI=$3
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=$BUILD/venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import numpy, pytest" 2>/dev/null; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV" || { echo "SKIP python: $PY cannot make a virtual environment (python3-venv)"; exit 77; }
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check numpy pytest ||
    { echo "FAIL python: cannot install numpy and pytest from PyPI into $VENV"; exit 1; }
fi
cd "$HERE"
PYTHONPATH=$BUILD/python COOPREDUCE_CLI=$CLI exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
