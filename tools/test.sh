#!/usr/bin/env bash
# Install bulkred with its test dependencies into .venv and run every test:
# pytest (unit, differential, interpreter; GPU tests skip with a reason when no
# GPU is present) and the lit/filecheck suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[test]"
export PATH="$PWD/.venv/bin:$PATH"
status=0
.venv/bin/python -m pytest -q tests "$@" || status=$?
.venv/bin/lit -q tests/filecheck || { echo "lit: some filecheck tests failed"; status=1; }
if [ $status -eq 0 ]; then echo "lit: all filecheck tests passed"; fi
exit $status
