#!/usr/bin/env bash
# Issue 16's GPU run, in one device call (carrying .whl, the wheels of docs/DEVELOPING.md):
#   1. tools/gpu_suite.sh            the seed demo and every gpu-marked test (among them
#                                    tests/gpu/test_random_reductions_gpu.py: 300 random cases, seed 16)
#   2. tools/gpu_random.py           2,000 random reductions with a fresh seed (SEED=... to choose it)
#   3. benchmarks/reductions_api.py  the API against torch: every case, 4 KiB to 1 GiB, two timings
#                                    (1 GiB and 4 KiB first; rows past its time budget are listed as skipped)
#      (FUSED_RANDOM=1: and 1,000 random fused reductions, seed SEED + 1, into random.log)
#   4. tools/gpu_variant_probe.py    (PROBE=1) candidate variants and grid knobs of the small
#                                    rows, then tools/diag_fused_call.py (host time per call)
# Logs under $OUT, 8 files at most: gpu_suite.log, random.log, random_reductions.txt,
# bench.log, reductions_api.{md,json}, reductions_api.png where matplotlib is installed,
# and probe.md (PROBE=1).
# Expected time on an H100: about 2.5 + 1.5 + 2 minutes; each step has a time limit
# (240 + 150 + 170 s at most), so the whole call ends inside 10 minutes.
#
#   bash tools/gpu_issue16.sh        # on the GPU machine, from anywhere in the repository
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export OUT
SEED=${SEED:-$(( $(date +%s) % 1000000 ))}
status=0
start=$(date +%s)

echo "== 1. GPU suite (tools/gpu_suite.sh)"
timeout 240 bash tools/gpu_suite.sh > /dev/null 2>&1 || { status=1; echo "gpu_suite: failed or timed out (exit $?)"; }
tail -4 "$OUT/gpu_suite.log" 2>/dev/null
echo "   ($(( $(date +%s) - start )) s so far)"

[ -d /tmp/site/xdsl ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || { echo "gpu_issue16: installing the carried wheels (.whl/) failed"; exit 2; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1

echo "== 2. 2,000 random reductions, seed $SEED (tools/gpu_random.py)"
timeout 150 python3 tools/gpu_random.py --seed "$SEED" --count 2000 --timeout 120 --out /tmp/random > "$OUT/random.log" 2>&1 \
  || { status=1; echo "gpu_random: failures, or it did not finish (see random.log)"; }
cp /tmp/random/random_reductions.txt "$OUT/" 2>/dev/null
if [ "${FUSED_RANDOM:-0}" = 1 ]; then  # and 1,000 random fused reductions (issue 17's), seed SEED + 1
  timeout 100 python3 tools/gpu_random.py --fused --seed "$((SEED + 1))" --count 1000 --timeout 85 --out /tmp/random_fused \
    >> "$OUT/random.log" 2>&1 || { status=1; echo "gpu_random --fused: failures, or it did not finish (see random.log)"; }
  grep -E "^random reductions: seed" "$OUT/random.log" | tail -1
fi
grep -E "^random reductions: seed" "$OUT/random.log" | tail -1
sed -n '/^kind  /,/^$/p' "$OUT/random.log"
sed -n '/^failures by reason/,/^failures (first/p;/^unsupported, by reason/,/^$/p' "$OUT/random.log" | head -40
echo "   ($(( $(date +%s) - start )) s so far)"

echo "== 3. the API against torch (benchmarks/reductions_api.py)"
timeout 170 python3 benchmarks/reductions_api.py --sizes 1G,4K,256M,64K,16M,1M --budget-s 130 --out "$OUT" \
  > "$OUT/bench.log" 2>&1 || { status=1; echo "reductions_api: a row failed, or it did not finish (see bench.log)"; }
sed -n '/^>= 1.0x torch/,$p' "$OUT/bench.log"
if [ "${PROBE:-0}" = 1 ]; then
  echo "== 4. variant probe and host time per call"
  timeout 100 python3 tools/gpu_variant_probe.py --quick > "$OUT/probe.md" 2>&1 || status=1
  timeout 60 python3 tools/diag_fused_call.py --calls 1000 >> "$OUT/probe.md" 2>&1 || status=1
  cat "$OUT/probe.md"
fi
echo "   ($(( $(date +%s) - start )) s in all); random seed $SEED"
exit $status
