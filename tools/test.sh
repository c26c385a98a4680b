#!/usr/bin/env bash
# Run every test in .venv (made or reused by tools/setup.sh, the environment of both
# README commands): the lit/filecheck suite, then pytest (unit, differential,
# interpreter; GPU tests skip with a reason when no GPU is present), each spread over
# the machine's CPUs. Exit status is non-zero if any fails. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh || exit 1
export PATH="$PWD/.venv/bin:$PATH"
status=0
start=$SECONDS
echo "== lit tests/filecheck"
.venv/bin/lit -s tests/filecheck || status=1
echo "== lit: $((SECONDS - start)) s"
start=$SECONDS
echo "== pytest tests"
# One worker per CPU; a module's tests stay on one worker, so that a module-scoped
# fixture (the differential report, assembled once) is not made once per worker.
.venv/bin/python -m pytest -q -rs -n auto --dist loadfile tests "$@" || status=1
echo "== pytest: $((SECONDS - start)) s"
exit $status
