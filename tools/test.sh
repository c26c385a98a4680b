#!/usr/bin/env bash
# Install bulkred with its test dependencies into .venv and run every test:
# the lit/filecheck suite, then pytest (unit, differential, interpreter; GPU tests
# skip with a reason when no GPU is present). Exit status is non-zero if any fails.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# Run a pip command without its two harmless warnings; the status is pip's own
# (grep's status, 1 when every line was filtered out, is ignored).
quiet_pip() {
  "$@" 2>&1 | grep -v -e "^WARNING: Location" -e "^WARNING: Running pip as"
  return "${PIPESTATUS[0]}"
}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv || exit 1
fi
quiet_pip .venv/bin/python -m pip install -q --upgrade pip || echo "warning: could not upgrade pip; going on with $(.venv/bin/python -m pip --version)"
quiet_pip .venv/bin/python -m pip install -q -e ".[test]" || { echo "install failed: pip install -e .[test]"; exit 1; }
.venv/bin/python -c "import bulkred_dialect, xdsl, filecheck, lit, pytest" || { echo "install failed"; exit 1; }
export PATH="$PWD/.venv/bin:$PATH"
status=0
echo "== lit tests/filecheck"
.venv/bin/lit -s tests/filecheck || status=1
echo "== pytest tests"
.venv/bin/python -m pytest -q -rs tests "$@" || status=1
exit $status
