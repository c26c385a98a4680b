#!/usr/bin/env bash
# grid_runs on the GPU (issue 16's axes (0, 2) rows), in one device call (carrying .whl):
#   1. pytest -m gpu: the N-D, alignment/view, strided, fused and random-reduction GPU tests
#   2. tools/gpu_random.py: 2,000 random reductions (SEED, default 251127) and 1,000 random
#      fused ones (seed SEED + 1)
#   3. tools/gpu_variant_probe.py: candidate variants and grid knobs of the small rows
#   4. benchmarks/reductions_api.py: the axes02, t_sum0, middle and colsum rows, every size
# Logs under $OUT: tests.log, random.log, random_fused.log, probe.md, bench.log,
# reductions_api.{md,json}.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
SEED=${SEED:-251127}
status=0
start=$(date +%s)
[ -d /tmp/site/xdsl ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || { echo "gpu_runs: installing the carried wheels (.whl/) failed"; exit 2; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

echo "== 1. GPU tests"
timeout -k 10 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rs tests/gpu/test_nd_grid_gpu.py \
  tests/gpu/test_alignment_gpu.py tests/gpu/test_strided_gpu.py tests/gpu/test_fused_gpu.py \
  tests/gpu/test_random_reductions_gpu.py tests/gpu/test_bool_gpu.py > "$OUT/tests.log" 2>&1 || status=1
tail -3 "$OUT/tests.log"; grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -20
echo "   ($(( $(date +%s) - start )) s so far)"

echo "== 2. random reductions, seeds $SEED and $((SEED + 1)) (fused)"
timeout 130 python3 tools/gpu_random.py --seed "$SEED" --count 2000 --timeout 110 --out /tmp/rr > "$OUT/random.log" 2>&1 || status=1
grep -E "^random reductions: seed" "$OUT/random.log" | tail -1
sed -n '/^failures by reason/,/^failures (first/p' "$OUT/random.log" | head -20
timeout 100 python3 tools/gpu_random.py --fused --seed "$((SEED + 1))" --count 1000 --timeout 85 --out /tmp/rrf > "$OUT/random_fused.log" 2>&1 || status=1
grep -E "^random reductions: seed" "$OUT/random_fused.log" | tail -1
sed -n '/^failures by reason/,/^failures (first/p' "$OUT/random_fused.log" | head -20
echo "   ($(( $(date +%s) - start )) s so far)"

echo "== 3. variant probe"
timeout 120 python3 tools/gpu_variant_probe.py --quick > "$OUT/probe.md" 2>&1 || status=1
cat "$OUT/probe.md"
echo "   ($(( $(date +%s) - start )) s so far)"

echo "== 4. benchmark rows"
timeout 100 python3 benchmarks/reductions_api.py --cases axes02,t_sum0,middle,colsum --sizes 1G,4K,256M,64K,16M,1M \
  --budget-s 85 --out "$OUT" > "$OUT/bench.log" 2>&1 || status=1
grep -E "^\| (axes02|t_sum0|middle|colsum) " "$OUT/reductions_api.md"
sed -n '/^>= 1.0x torch/,$p' "$OUT/bench.log"
echo "   ($(( $(date +%s) - start )) s in all)"
exit $status
