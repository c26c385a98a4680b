#!/usr/bin/env bash
# Install bulkred with its test dependencies into .venv and run every test:
# the lit/filecheck suite, then pytest (unit, differential, interpreter; GPU tests
# skip with a reason when no GPU is present). Exit status is non-zero if any fails.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
quiet_pip() { "$@" 2>&1 | grep -v -e "^WARNING: Location" -e "^WARNING: Running pip as" || true; }
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv || exit 1
fi
quiet_pip .venv/bin/python -m pip install -q --upgrade pip
quiet_pip .venv/bin/python -m pip install -q -e ".[test]"
.venv/bin/python -c "import bulkred_dialect, xdsl, filecheck, lit, pytest" || { echo "install failed"; exit 1; }
export PATH="$PWD/.venv/bin:$PATH"
status=0
echo "== lit tests/filecheck"
.venv/bin/lit -s tests/filecheck || status=1
echo "== pytest tests"
.venv/bin/python -m pytest -q -rs tests "$@" || status=1
exit $status
