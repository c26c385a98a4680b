#!/usr/bin/env bash
# One GPU session's runs, from the repository root on the GPU machine (carry .whl), logs
# under $OUT:
#   1. tools/gpu_suite.sh: run_seed bit for bit and every GPU test (gpu_suite.log)
#   2. tools/gpu_random.py --grads: SEED_A's 1,000 random cases of the array-API kinds and
#      SEED_B's 1,000 of the fused ones, each differentiable case's gradient checked against
#      torch's (random_plain.log, random_fused.log)
#   3. benchmarks/functions.py: the newer rows and the gradients against torch
#      (functions.md), within BENCH_S seconds
# Exits non-zero when the suite or a random run fails. RANDOM_S, BENCH_S: time limits.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_session}
mkdir -p "$OUT"
status=0
if [ -z "${SKIP_SUITE:-}" ]; then  # SKIP_SUITE=1: steps 2 and 3 only (a call of their own)
  bash tools/gpu_suite.sh > /dev/null 2>&1 || status=1
  tail -4 "$OUT/gpu_suite.log"
else
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 2
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT= timeout "${RANDOM_S:-200}" python3 tools/gpu_random.py --seed "${SEED_A:-271127}" --count 1000 --grads \
  > "$OUT/random_plain.log" 2>&1 || status=1
tail -3 "$OUT/random_plain.log"
OUT= timeout "${RANDOM_S:-200}" python3 tools/gpu_random.py --seed "${SEED_B:-271128}" --count 1000 --fused --grads \
  > "$OUT/random_fused.log" 2>&1 || status=1
tail -3 "$OUT/random_fused.log"
timeout "${BENCH_S:-150}" python3 benchmarks/functions.py --sizes 64M,1G --budget-s "$(( ${BENCH_S:-150} - 30 ))" --out "$OUT" \
  > "$OUT/functions.log" 2>&1 || echo "functions benchmark: exit $?"
tail -45 "$OUT/functions.log" | grep "^|" || tail -5 "$OUT/functions.log"
exit $status
