#!/usr/bin/env bash
# The list functions on the GPU machine (carry .whl), logs under $OUT. STEPS picks:
#   tests      the GPU tests of the list functions (foreach_tests.log)
#   random     tools/gpu_foreach_random.py: SEED's COUNT random lists against float64
#              (foreach_random.log)
#   bench      benchmarks/foreach.py against torch (foreach.md, foreach.json,
#              foreach_sweep.png); ROWS picks rows (default: all)
#   table      the table rows' random draw with gradients (tools/gpu_session.sh PARTS=table)
#   tuning     tools/gpu_list_tuning.py: grid_list's settings (VARIANTS, e.g. "4x4,8x4") and
#              the host's share of a call (list_tuning.log, list_tuning.json)
#   STEPS="tests random" bash tools/gpu_foreach.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_foreach}
mkdir -p "$OUT"
STEPS=${STEPS:-tests random bench}
has() { [[ " $STEPS " == *" $1 "* ]]; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
status=0
if has tests; then
  timeout "${TESTS_S:-240}" python3 -m pytest -q -m gpu tests/gpu/test_foreach_gpu.py tests/gpu/test_foreach_dist_gpu.py \
    -rs -p no:cacheprovider > "$OUT/foreach_tests.log" 2>&1 || status=1
  tail -25 "$OUT/foreach_tests.log"
fi
if has random; then
  timeout "${RANDOM_S:-200}" python3 tools/gpu_foreach_random.py --seed "${SEED:-271130}" --count "${COUNT:-500}" \
    > "$OUT/foreach_random.log" 2>&1 || status=1
  tail -15 "$OUT/foreach_random.log"
fi
if has bench; then
  timeout "${BENCH_S:-420}" python3 benchmarks/foreach.py --out "$OUT" --budget-s "$(( ${BENCH_S:-420} - 40 ))" \
    ${ROWS:+--rows "$ROWS"} > "$OUT/foreach_bench.log" 2>&1 || echo "foreach benchmark: exit $?"
  grep "^|\|GB/s\|copy" "$OUT/foreach_bench.log" | tail -40
fi
if has tuning; then
  timeout "${TUNING_S:-240}" python3 tools/gpu_list_tuning.py --variants "${VARIANTS:-4x4,8x4}" --out "$OUT" \
    > "$OUT/list_tuning.out" 2>&1 || status=1
  tail -30 "$OUT/list_tuning.out"
fi
if has table; then
  OUT=$OUT PARTS=table RANDOM_S=${RANDOM_S:-200} SKIP_SUITE=1 bash tools/gpu_session.sh || status=1
fi
exit $status
