#!/usr/bin/env bash
# On a GPU machine (device tool, carrying .whl): correctness of the grid-scope
# reductions on odd shapes, then the benchmark against torch. Logs under $OUT.
set -o pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
status=0
python3 benchmarks/reductions.py --check-only 2>&1 | tee "$OUT/reductions_check.log" || status=1
python3 benchmarks/reductions.py --out "$OUT" 2>&1 | tee "$OUT/reductions_bench.log" || status=1
exit $status
