#!/usr/bin/env bash
# Run every test in .venv (made or reused by tools/setup.sh, the environment of both
# README commands): the lit/filecheck suite, then pytest (unit, differential,
# interpreter; GPU tests skip with a reason when no GPU is present), pytest spread over
# the machine's CPUs, lit beside it over half of them. Exit status is non-zero if any
# fails. Extra arguments go to pytest.
#
# The suite's time is measured against a fixed Python loop timed first on the same
# machine (`s = 0; for i in range(10_000_000): s += i`, the best of 3): machines differ
# several times in speed, and the whole suite is to take at most 60 times the loop
# (issue 29). The last line prints the loop's time, the suite's (lit and pytest, wall
# clock) and their ratio.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh || exit 1
export PATH="$PWD/.venv/bin:$PATH"
# Compiled bytecode is written (__pycache__ beside the sources, ignored by git), also
# where PYTHONDONTWRITEBYTECODE is set: each process of the run (pytest's workers, lit's,
# the Python processes tests start) then loads bulkred's and the tests' modules (pytest's
# rewritten asserts too) instead of compiling them again, a few seconds each. No
# PYTHONPYCACHEPREFIX: under one, the bytecode pip and Python installed for the standard
# library and .venv's packages is not read, and on a fresh clone every process of the
# run compiled those again (about 1 CPU-s each: 3 CPU-s of pytest's and lit's start).
unset PYTHONPYCACHEPREFIX PYTHONDONTWRITEBYTECODE
status=0
loop_s=$(.venv/bin/python -c '
import time
best = float("inf")
for _ in range(3):
    t = time.perf_counter()
    s = 0
    for i in range(10_000_000):
        s += i
    best = min(best, time.perf_counter() - t)
print(f"{best:.3f}")
') || exit 1
echo "== the Python loop (10^7 steps): $loop_s s"
suite_start=$(date +%s.%N)
# The run's temporary files go to a directory of its own, so that what the tests leave
# behind can be told apart from other runs on the machine: the compile cache
# (bulkred-test-cache-*, made and removed by tests/conftest.py) must be gone at the end.
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/bulkred-test-run-XXXXXX") || exit 1
# lit runs beside pytest, its report printed when pytest is done: the CPUs one of them
# leaves idle (its start, its last slow tests) the other uses. pytest's workers take
# every CPU, lit half of them (one worker on a 2-CPU machine: one process importing
# bulkred, not two, 0.8 CPU-s less; it still ends long before pytest).
cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
lit_jobs=$(( cpus / 2 > 1 ? cpus / 2 : 1 ))
echo "== lit tests/filecheck: in the background ($lit_jobs worker(s)), reported after pytest"
(
    start=$SECONDS
    .venv/bin/lit -s -j "$lit_jobs" tests/filecheck > "$run_tmp/lit.log" 2>&1
    echo $? > "$run_tmp/lit.status"
    echo "== lit: $((SECONDS - start)) s" >> "$run_tmp/lit.log"
) &
lit_job=$!
trap 'kill "$lit_job" 2>/dev/null' INT TERM
start=$SECONDS
echo "== pytest tests"
# One worker per CPU; a module's tests stay on one worker, so that a module-scoped
# fixture (the differential report, assembled once) is not made once per worker. The
# files are handed out slowest first (tests/conftest.py's SLOW_FIRST order; xdist's
# own reorders them by their number of tests), so that no slow file is left for last.
# --durations=10: the slowest ten tests close every run, so that growth shows.
TMPDIR="$run_tmp" .venv/bin/python -m pytest -q -rs -n auto --dist loadfile --no-loadscope-reorder --durations=10 tests "$@" || status=1
echo "== pytest: $((SECONDS - start)) s"
wait "$lit_job"
echo "== lit tests/filecheck"
cat "$run_tmp/lit.log"
[ "$(cat "$run_tmp/lit.status" 2>/dev/null)" = 0 ] || status=1
leftovers=$(find "$run_tmp" -mindepth 1 -maxdepth 1 -name 'bulkred-test-cache-*')
if [ -n "$leftovers" ]; then
    echo "error: pytest left compile caches behind (tests/conftest.py removes its own):" >&2
    echo "$leftovers" >&2
    status=1
fi
rm -rf "$run_tmp"  # with pytest's own tmp_path directories
.venv/bin/python -c '
import sys, time
loop, start = float(sys.argv[1]), float(sys.argv[2])
suite = time.time() - start
print(f"== suite (lit + pytest): {suite:.1f} s; the Python loop: {loop:.3f} s; suite / loop = {suite / loop:.1f} (at most 60)")
' "$loop_s" "$suite_start"
exit $status
