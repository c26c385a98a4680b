#!/usr/bin/env bash
# One GPU session's runs, from the repository root on the GPU machine (carry .whl), logs
# under $OUT. PARTS picks the steps (default: all, in this order):
#   suite     tools/gpu_suite.sh: run_seed bit for bit and every GPU test (gpu_suite.log)
#   table     tools/gpu_random.py --table --grads: SEED_C's COUNT_C random cases of the
#             table's newer rows (amax ... aminmax), gradients checked against torch's
#   plain     tools/gpu_random.py --grads: SEED_A's COUNT_A cases of the array-API kinds
#   fused     tools/gpu_random.py --fused --grads: SEED_B's COUNT_B cases of the fused kinds
#   functions benchmarks/functions.py: the newer rows and the gradients against torch
#   views     benchmarks/reductions_api.py: the permuted views (t_sum0, t_sum1, p3_sum2)
#             and the plain rows, against torch
# Exits non-zero when the suite or a random run fails. RANDOM_S, BENCH_S: time limits.
#   PARTS="suite table" bash tools/gpu_session.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_session}
mkdir -p "$OUT"
PARTS=${PARTS:-suite table plain fused functions views}
has() { [[ " $PARTS " == *" $1 "* ]]; }
status=0
if has suite; then
  bash tools/gpu_suite.sh > /dev/null 2>&1 || status=1
  tail -4 "$OUT/gpu_suite.log"
else
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 2
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
random() {  # name seed count flags...
  local name=$1 seed=$2 count=$3; shift 3
  OUT= timeout "${RANDOM_S:-200}" python3 tools/gpu_random.py --seed "$seed" --count "$count" --grads "$@" \
    > "$OUT/random_$name.log" 2>&1 || status=1
  tail -3 "$OUT/random_$name.log"
}
has table && random table "${SEED_C:-271129}" "${COUNT_C:-1000}" --table
has plain && random plain "${SEED_A:-271127}" "${COUNT_A:-1000}"
has fused && random fused "${SEED_B:-271128}" "${COUNT_B:-1000}" --fused
if has functions; then
  timeout "${BENCH_S:-150}" python3 benchmarks/functions.py --sizes 64M,1G --budget-s "$(( ${BENCH_S:-150} - 30 ))" --out "$OUT" \
    > "$OUT/functions.log" 2>&1 || echo "functions benchmark: exit $?"
  tail -45 "$OUT/functions.log" | grep "^|" || tail -5 "$OUT/functions.log"
fi
if has views; then
  timeout "${BENCH_S:-150}" python3 benchmarks/reductions_api.py --cases "${VIEW_CASES:-t_sum0,t_sum1,p3_sum2,sum,rowsum,colsum,middle}" \
    --sizes 64M,1G --budget-s "$(( ${BENCH_S:-150} - 30 ))" --out "$OUT" > "$OUT/views.log" 2>&1 || echo "views benchmark: exit $?"
  grep "^|" "$OUT/views.log" | tail -40 || tail -5 "$OUT/views.log"
fi
exit $status
