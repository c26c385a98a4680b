#!/usr/bin/env bash
# Issue 17's GPU run (fused reductions), in one device call (carrying .whl, the wheels of
# docs/DEVELOPING.md, installed into /tmp/site as tools/gpu_issue16.sh does):
#   1. pytest -m gpu -k "$FUSED_K"    the GPU tests of the fused reductions (vector_norm,
#                                     var_mean, argmax, logsumexp, mean; FUSED_K to choose)
#   2. tools/gpu_random.py --fused    2,000 random fused reductions, seed 251126 (SEED=... to
#                                     choose; RANDOM_ARGS=... replaces --fused, "" for the plain kinds)
#   3. benchmarks/fused.py            the fused API against every torch form: 5 cases x 3 forms
#                                     x 2 dtypes x 1 GiB, 1 MiB, 64 MiB (in that order), two
#                                     timings; rows past its time budget (~300 s) are listed as skipped
#   4. tools/gpu_suite.sh             the whole GPU suite, with the time that is left
#                                     (skipped, with a note, when under 90 s remain)
# Each step has a time limit taken from what is left of DEADLINE (570 s), so the call
# ends inside the device's 10 minutes. Logs under $OUT, 8 files at most (the device returns
# 8): gpu_tests.log (steps 1 and 4), random.log, random_reductions.{txt,json}, bench.log,
# fused.{md,json} and fused.png where matplotlib is installed.
#
#   bash tools/gpu_issue17.sh        # on the GPU machine, from anywhere in the repository
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export OUT
SEED=${SEED:-251126}
DEADLINE=${DEADLINE:-570}
BENCH_BUDGET=${BENCH_BUDGET:-300}
FUSED_K=${FUSED_K:-"_fused or vector_norm or var_mean or argmax or argmin or logsumexp or _mean"}  # not "fused": it matches "refused"
RANDOM_ARGS=${RANDOM_ARGS---fused}
status=0
start=$(date +%s)
left() { echo $(( DEADLINE - ($(date +%s) - start) )); }
log="$OUT/gpu_tests.log"
: > "$log"

[ -d /tmp/site/xdsl ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || { echo "gpu_issue17: installing the carried wheels (.whl/) failed"; exit 2; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>&1 || true; } | tee -a "$log"

echo "== 1. the fused GPU tests: pytest -m gpu tests -k \"$FUSED_K\"" | tee -a "$log"
timeout -k 10 120 python3 -m pytest -q -m gpu tests -k "$FUSED_K" -rs -p no:cacheprovider >> "$log" 2>&1
rc=$?
case $rc in
  0) ;;
  5) echo "fused GPU tests: none collected (-k \"$FUSED_K\")" >> "$log" ;;
  *) status=1; echo "fused GPU tests: failed or timed out (exit $rc; see gpu_tests.log)" >> "$log" ;;
esac
tail -3 "$log"
echo "   ($(( $(date +%s) - start )) s so far)"

echo "== 2. 2,000 random reductions, seed $SEED (tools/gpu_random.py $RANDOM_ARGS)"
# shellcheck disable=SC2086 # RANDOM_ARGS is a list of words
timeout -k 10 150 python3 tools/gpu_random.py --seed "$SEED" --count 2000 --timeout 120 $RANDOM_ARGS --out "$OUT" \
  > "$OUT/random.log" 2>&1 || { status=1; echo "gpu_random: failures, or it did not finish (see random.log)"; }
grep -E "^random reductions: seed" "$OUT/random.log" | tail -1
sed -n '/^kind  /,/^$/p' "$OUT/random.log"
sed -n '/^failures by reason/,/^failures (first/p;/^unsupported, by reason/,/^$/p' "$OUT/random.log" | head -40
echo "   ($(( $(date +%s) - start )) s so far)"

echo "== 3. the fused API against torch (benchmarks/fused.py)"
budget=$(( $(left) - 40 )); [ "$budget" -gt "$BENCH_BUDGET" ] && budget=$BENCH_BUDGET
if [ "$budget" -lt 30 ]; then
  echo "fused: skipped, $(left) s left"; status=1
else
  # the budget stops new rows; the timeout's SIGTERM stops a long row and still writes the table
  timeout -k 15 $(( budget + 25 )) python3 benchmarks/fused.py --sizes 1G,1M,64M --budget-s "$budget" --out "$OUT" \
    > "$OUT/bench.log" 2>&1 || { status=1; echo "fused: a row was wrong or failed, or it did not finish (see bench.log)"; }
  sed -n '/^>= 1.0x the fastest/,/^Every torch form/p' "$OUT/bench.log" | grep -v "^Every torch form"
  grep -E "^benchmark time|^plot" "$OUT/bench.log"
fi
echo "   ($(( $(date +%s) - start )) s so far)"

echo "== 4. the whole GPU suite (tools/gpu_suite.sh), $(left) s left" | tee -a "$log"
t=$(( $(left) - 10 ))
if [ "$t" -lt 90 ]; then
  echo "gpu_suite: skipped for time ($(left) s left)" | tee -a "$log"
else
  # its own log goes to a scratch OUT and is appended to gpu_tests.log (8 files at most in $OUT)
  OUT=/tmp/gpu_suite_out timeout -k 10 "$t" bash tools/gpu_suite.sh > /dev/null 2>&1
  rc=$?
  cat /tmp/gpu_suite_out/gpu_suite.log >> "$log" 2>/dev/null
  [ "$rc" -eq 0 ] || { status=1; echo "gpu_suite: failed or timed out (exit $rc)" | tee -a "$log"; }
  tail -4 /tmp/gpu_suite_out/gpu_suite.log 2>/dev/null
fi

n=$(find "$OUT" -type f | wc -l)
[ "$n" -le 8 ] || echo "gpu_issue17: $n files in \$OUT, over the 8 the device returns: $(ls "$OUT" | tr '\n' ' ')"
echo "   ($(( $(date +%s) - start )) s in all); random seed $SEED; exit $status"
exit $status
