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
# The run's temporary files go to a directory of its own, so that what the tests leave
# behind can be told apart from other runs on the machine: the compile cache
# (bulkred-test-cache-*, made and removed by tests/conftest.py) must be gone at the end.
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/bulkred-test-run-XXXXXX") || exit 1
# One worker per CPU; a module's tests stay on one worker, so that a module-scoped
# fixture (the differential report, assembled once) is not made once per worker.
# --durations=10: the slowest ten tests close every run, so that growth shows.
TMPDIR="$run_tmp" .venv/bin/python -m pytest -q -rs -n auto --dist loadfile --durations=10 tests "$@" || status=1
leftovers=$(find "$run_tmp" -mindepth 1 -maxdepth 1 -name 'bulkred-test-cache-*')
if [ -n "$leftovers" ]; then
    echo "error: pytest left compile caches behind (tests/conftest.py removes its own):" >&2
    echo "$leftovers" >&2
    status=1
fi
rm -rf "$run_tmp"  # with pytest's own tmp_path directories
echo "== pytest: $((SECONDS - start)) s"
exit $status
