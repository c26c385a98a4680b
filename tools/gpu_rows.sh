#!/usr/bin/env bash
# The row normalizations (bulkred.normalize_rows, docs/rows.md) on the GPU machine (carry
# .whl), logs under $OUT. STEPS picks:
#   tests   tests/gpu/test_rows_gpu.py against torch in float64 (rows_tests.log)
#   bench   benchmarks/rows.py: GB/s against the copy kernel and torch eager, small batches
#           (rows_bench.log, rows.json); KINDS, NS, DTYPES narrow it
#   STEPS="tests bench" bash tools/gpu_rows.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_rows}
mkdir -p "$OUT"
STEPS=${STEPS:-tests bench}
has() { [[ " $STEPS " == *" $1 "* ]]; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
status=0
if has tests; then
  timeout "${TESTS_S:-120}" python3 -m pytest -q -m gpu tests/gpu/test_rows_gpu.py -rs -x -p no:cacheprovider \
    --durations=5 > "$OUT/rows_tests.log" 2>&1 || status=1
  tail -15 "$OUT/rows_tests.log"
fi
if has bench; then
  timeout "${BENCH_S:-100}" python3 benchmarks/rows.py --out "$OUT" ${KINDS:+--kinds "$KINDS"} ${NS:+--ns "$NS"} \
    ${DTYPES:+--dtypes "$DTYPES"} > "$OUT/rows_bench.log" 2>&1 || { echo "rows benchmark: exit $?"; status=1; }
  grep "^|\|^#" "$OUT/rows_bench.log" | tail -50
  grep -i "error\|Traceback" "$OUT/rows_bench.log" | head -5
fi
exit $status
