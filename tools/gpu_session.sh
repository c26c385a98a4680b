#!/usr/bin/env bash
# One GPU session's runs, from the repository root on the GPU machine (carry .whl):
#   1. tools/gpu_suite.sh: run_seed bit for bit and every GPU test ($OUT/gpu_suite.log)
#   2. benchmarks/call_overhead.py: the cost of one call (bulkred.sum(A), out=) beside
#      torch.sum and a raw cuda.core launch ($OUT/call_overhead.txt)
# Exits non-zero when the suite fails.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/gpu_suite.sh > /dev/null 2>&1
status=$?
tail -5 "${OUT:-/tmp}/gpu_suite.log"
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
timeout 240 python3 benchmarks/call_overhead.py --calls 2000 --processes 2 > "${OUT:-/tmp}/call_overhead.log" 2>&1 \
  || echo "call_overhead: exit $?"
tail -30 "${OUT:-/tmp}/call_overhead.log"
exit $status
