#!/usr/bin/env bash
# The device-array call path in one device call (carrying .whl): the GPU tests of
# device arrays, the reduction API and the whole reductions, then
# benchmarks/call_overhead.py. Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
status=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_device_arrays_gpu.py tests/gpu/test_grid_reductions_gpu.py \
  tests/gpu/test_runtime_gpu.py > "$OUT/gpu_tests.log" 2>&1 || status=1
tail -25 "$OUT/gpu_tests.log"
python3 tools/diag_stream_wait.py > "$OUT/diag_stream_wait.log" 2>&1 || status=1
cat "$OUT/diag_stream_wait.log"
python3 benchmarks/call_overhead.py "$@" > "$OUT/call_overhead.log" 2>&1 || status=1
cat "$OUT/call_overhead.log"
exit $status
