#!/usr/bin/env bash
# The GPU suite, run on the GPU machine from the repository root:
#   1. tools/run_seed.py   -- the seed demo compiled, assembled and run (bit-for-bit check)
#   2. pytest -m gpu tests -- every GPU test (cp.reduce.async.bulk, cp.async.bulk,
#      red.async, redux.sync, the seed variants, interpreter-vs-GPU numerics, printer)
# Output goes to the terminal and, when $OUT is set, to $OUT/gpu_suite.log.
# Exits non-zero when any step fails.
#
#   bash tools/gpu_suite.sh            # carry .whl (xdsl, filecheck, lit wheels)
set -uo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || { echo "gpu_suite: installing the carried wheels (.whl/) failed"; exit 2; }
export PYTHONUNBUFFERED=1

log=/dev/null
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  log="$OUT/gpu_suite.log"
  : > "$log"
fi

status=0
run() {
  echo "== $*" | tee -a "$log"
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  echo "== exit $rc: $*" | tee -a "$log"
  [ "$rc" -eq 0 ] || status=1
}

{ nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>&1 || true; } | tee -a "$log"
run python3 tools/run_seed.py
run python3 -m pytest -q -m gpu tests -rs -p no:cacheprovider

if [ $status -eq 0 ]; then echo "gpu_suite: all passed" | tee -a "$log"; else echo "gpu_suite: FAILED" | tee -a "$log"; fi
exit $status
