#!/usr/bin/env bash
# Everything a GPU session checks, in one call (device tool, carrying .whl):
#   1. tools/gpu_suite.sh           -- the seed demo and every gpu-marked test
#   2. benchmarks/reductions.py     -- whole reductions against torch (table, json, png)
#   3. benchmarks/call_overhead.py  -- the cost of one call from Python, and the cache
# Logs and results under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export OUT
status=0
bash tools/gpu_suite.sh > "$OUT/gpu_suite.out" 2>&1 || status=1
tail -3 "$OUT/gpu_suite.out"
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 benchmarks/reductions.py --out "$OUT" > "$OUT/reductions_bench.log" 2>&1 || status=1
cat "$OUT/reductions_bench.log"
python3 benchmarks/call_overhead.py > "$OUT/call_overhead.log" 2>&1 || status=1
cat "$OUT/call_overhead.log"
exit $status
