#!/usr/bin/env bash
# Before and after on one warm GPU: benchmarks/reductions.py of an older tree and of this
# one, alternately (old, new, old, new), after the GPU suite; then the call cost of this tree.
# For a change that must not slow the kernels (a refactoring): compare the two trees' rows.
#
#   git archive <old commit> | (rm -rf .base && mkdir .base && tar -x -C .base)   # here, once
#   echo /.base/ >> .git/info/exclude
#   then on the GPU machine (device tool, carrying .whl and .base): bash tools/gpu_compare.sh
#
# Writes under $OUT: compare.log (the four benchmark runs), gpu_suite.log, call_overhead.log,
# new/reductions.{md,json,png} (the last run of this tree).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/new"; export OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "gpu_compare: installing the carried wheels (.whl/) failed"; exit 2; }
export PYTHONUNBUFFERED=1
[ -d .base/bulkred_dialect ] || { echo "gpu_compare: no .base/ tree (see the header)"; exit 2; }
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | tee "$OUT/compare.log"
status=0
bench() {  # bench TREE LABEL [ARGS...]
  local tree=$1 label=$2; shift 2
  echo "== $label ($tree)" | tee -a "$OUT/compare.log"
  (cd "$tree" && PYTHONPATH=/tmp/site:$PWD python3 benchmarks/reductions.py "$@") 2>&1 | tee -a "$OUT/compare.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
}
bash tools/gpu_suite.sh > /dev/null 2>&1 || status=1
tail -3 "$OUT/gpu_suite.log"
bench .base "old, run 1"
bench . "new, run 1"
bench .base "old, run 2"
bench . "new, run 2" --out "$OUT/new"
PYTHONPATH=/tmp/site:$PWD python3 benchmarks/call_overhead.py > "$OUT/call_overhead.log" 2>&1 || status=1
cat "$OUT/call_overhead.log"
exit $status
