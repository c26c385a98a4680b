#!/usr/bin/env bash
# The GPU session: every run on the GPU machine, one step per word, in the order given.
#
#   bash tools/gpu.sh wheels                 # here, once a session: the wheels into .whl/
#   bash tools/gpu.sh suite                  # there (device tool, carrying .whl)
#   bash tools/gpu.sh suite random random:fused bench:reductions_api probe:launch_cost
#
# Steps (each log under $OUT, default /tmp/out; its tail is printed):
#   wheels          fetch into .whl/ (ignored by git) the wheels the GPU image lacks, for
#                   Python 3.12 on x86-64: xdsl and its pure-Python needs, filecheck, lit, expecttest (torch's OpInfo database needs it),
#                   and greenlet (a binary wheel); the image has numpy, cuda-bindings,
#                   cuda-core, pytest and torch, and two versions of one package break the
#                   install. Runs here, not on the GPU machine.
#   suite           tools/run_seed.py (the seed demo, bit for bit), then every GPU test,
#                   pytest -m gpu tests, K narrows them (-k "$K") (gpu_suite.log)
#   tests[:NAMES]   GPU tests: those of tests/gpu/test_NAME_gpu.py for each NAME (comma-
#                   separated: tests:foreach,foreach_dist; tests:rows), or of every file;
#                   K narrows them (pytest -k "$K"); tests without NAMES needs K (tests.log)
#   random[:MODE]   tools/gpu_random.py: COUNT (2000) random reductions of MODE plain (the
#                   default), fused, table or complex, against float64 (complex128); GRADS=1
#                   checks gradients too; seed SEED (fresh by default; fused SEED+1, table
#                   SEED+2, complex SEED+3)
#                   (random_MODE.log, random_reductions.{txt,json})
#   foreach-random  tools/gpu_foreach_random.py: COUNT (500) random lists, SEED
#                   (foreach_random.log)
#   rows-random     tools/gpu_rows_random.py: COUNT (400) random row functions (docs/rows.md)
#                   against torch in float64, SEED; GRADS=1 checks the backward of the odd
#                   draws too (rows_random.log, rows_random.json)
#   bench:NAME      benchmarks/NAME.py (reductions, reductions_api, functions, fused, foreach_dist,
#                   foreach, rows, call_overhead, compile_speed) with BENCH_ARGS, and --out $OUT and
#                   --budget-s when it takes them (STEP_S - 40 s, three quarters of a STEP_S of
#                   80 s or less: always some) (bench_NAME.log and its tables); a PYTHONPATH
#                   set by the caller is kept (after the carried wheels and the tree)
#   compare         benchmarks/reductions.py of an older tree (.base/) and of this one,
#                   alternately (old, new, old, new): a change that must not slow the
#                   kernels. Here, once: git archive OLD | (rm -rf .base && mkdir .base &&
#                   tar -x -C .base); echo /.base/ >> .git/info/exclude; then carry .whl and
#                   .base (compare.log, new/reductions.{md,json,png})
#   probe:NAME      python3 tools/diag.py NAME $PROBE_ARGS: a diagnostic of tools/probes/
#                   (python3 tools/diag.py lists them) (probe_NAME.log)
#   device          the machine: GPU, driver, cuda.core, nvJitLink, and a PTX assembled
#                   (device.log)
#
# Each step runs under a time limit, STEP_S seconds (default 540; a device call has 600).
# Exits non-zero when a step fails.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
OUT=${OUT:-/tmp/out}
STEP_S=${STEP_S:-540}
SEED=${SEED:-$(( $(date +%s) % 1000000 ))}
status=0
start=$(date +%s)

wheels() {
  rm -rf .whl && mkdir -p .whl || return 1
  local pure=(xdsl immutabledict ordered-set typing-extensions filecheck lit expecttest) spec=() p v g
  for p in "${pure[@]}"; do  # the versions installed in .venv when there are any
    v=$( (.venv/bin/python -m pip show "$p" 2>/dev/null || true) | sed -n "s/^Version: //p")
    spec+=("${p}${v:+==$v}")
  done
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation py \
    --abi none --platform any -d .whl "${spec[@]}" || return 1
  g=$( (.venv/bin/python -m pip show greenlet 2>/dev/null || true) | sed -n "s/^Version: //p")
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "greenlet${g:+==$g}" || return 1
  ls .whl
}

if [ "$*" = wheels ]; then wheels; exit; fi

mkdir -p "$OUT"
SITE=${SITE:-/tmp/site}  # where the carried wheels are installed, once per machine
if [ ! -d "$SITE/xdsl" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
    || { echo "gpu.sh: installing the carried wheels (.whl/) failed"; exit 2; }
fi
# the caller's PYTHONPATH after ours (the row anchors' site, docs/benchmarks.md)
export PYTHONPATH=$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 OUT
{ nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>&1 || true; } | tee "$OUT/gpu.txt"

# run LOG CMD...: CMD under the step's time limit, its output into $OUT/LOG; a failure
# fails the session
run() {
  local log=$OUT/$1; shift
  timeout -k 10 "$STEP_S" "$@" > "$log" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] || { status=1; echo "   exit $rc (see $(basename "$log"))"; }
  return "$rc"
}

takes() { grep -q -- "\"$2\"" "benchmarks/$1.py"; }  # takes NAME --flag: benchmarks/NAME.py has the option

suite() {
  local log=$OUT/gpu_suite.log; : > "$log"
  local rc=0
  echo "== python3 tools/run_seed.py" >> "$log"
  timeout -k 10 "$STEP_S" python3 tools/run_seed.py >> "$log" 2>&1 || rc=1
  echo "== pytest -m gpu tests" >> "$log"
  timeout -k 10 "$STEP_S" python3 -m pytest -q -m gpu tests ${K:+-k "$K"} -rs -p no:cacheprovider >> "$log" 2>&1 || rc=1
  if [ $rc -eq 0 ]; then echo "gpu_suite: all passed" >> "$log"; else echo "gpu_suite: FAILED" >> "$log"; status=1; fi
  tail -4 "$log"
}

random_step() {  # random_step MODE
  local mode=${1:-plain} seed=$SEED flags=()
  case $mode in
    plain) ;;
    fused) flags=(--fused); seed=$((SEED + 1)) ;;
    table) flags=(--table); seed=$((SEED + 2)) ;;
    complex) flags=(--complex); seed=$((SEED + 3)) ;;
    *) echo "gpu.sh: random:$mode: the modes are plain, fused, table and complex"; status=1; return ;;
  esac
  [ "${GRADS:-0}" = 1 ] && flags+=(--grads)
  echo "   seed $seed"
  run "random_$mode.log" python3 tools/gpu_random.py --seed "$seed" --count "${COUNT:-2000}" \
    --timeout $(( STEP_S - 30 )) --out "$OUT" "${flags[@]}"
  grep -E "^random reductions: seed" "$OUT/random_$mode.log" | tail -1
  sed -n '/^failures by reason/,/^failures (first/p;/^unsupported, by reason/,/^$/p' "$OUT/random_$mode.log" | head -40
}

rows_random_step() {  # tools/gpu_rows_random.py: no draw started past STEP_S - 60 s (those left are counted)
  local flags=()
  [ "${GRADS:-0}" = 1 ] && flags+=(--grads)
  echo "   seed $SEED"
  run rows_random.log python3 tools/gpu_rows_random.py --seed "$SEED" --count "${COUNT:-400}" \
    --timeout $(( STEP_S > 120 ? STEP_S - 60 : STEP_S / 2 )) --out "$OUT" "${flags[@]}"
  grep -E "^FAILED" "$OUT/rows_random.log" | head -20
  sed -n '/^rows random: seed/,$p' "$OUT/rows_random.log"
}

tests_step() {  # tests_step NAMES|tests: pytest -m gpu over the files of NAMES (all: tests), -k "$K"
  local files=() name
  if [ "$1" = tests ]; then files=(tests); else
    for name in ${1//,/ }; do
      [ -f "tests/gpu/test_${name}_gpu.py" ] || { echo "gpu.sh: no tests/gpu/test_${name}_gpu.py"; status=1; return; }
      files+=("tests/gpu/test_${name}_gpu.py")
    done
  fi
  run tests.log python3 -m pytest -q -m gpu "${files[@]}" ${K:+-k "$K"} -rs -p no:cacheprovider
  tail -3 "$OUT/tests.log"; grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -20
}

bench() {  # bench NAME
  local name=$1 args=()
  [ -f "benchmarks/$name.py" ] || { echo "gpu.sh: no benchmarks/$name.py"; status=1; return; }
  # shellcheck disable=SC2206 # BENCH_ARGS is a list of words
  args=(${BENCH_ARGS:-})
  takes "$name" --out && [[ " ${args[*]} " != *" --out "* ]] && args+=(--out "$OUT")
  takes "$name" --budget-s && [[ " ${args[*]} " != *" --budget-s "* ]] && args+=(--budget-s $(( STEP_S > 80 ? STEP_S - 40 : STEP_S * 3 / 4 )))
  run "bench_$name.log" python3 "benchmarks/$name.py" "${args[@]}"
  grep "^|" "$OUT/bench_$name.log" | tail -60 || tail -20 "$OUT/bench_$name.log"
}

compare() {
  [ -d .base/bulkred_dialect ] || { echo "gpu.sh compare: no .base/ tree (see the header)"; status=1; return; }
  mkdir -p "$OUT/new"
  local log=$OUT/compare.log i tree label args
  : > "$log"
  for i in 1 2 3 4; do  # old, new, old, new: the last run of this tree writes its tables
    if [ $((i % 2)) = 1 ]; then tree=.base label=old; args=(); else tree=. label=new; args=(); fi
    [ "$i" = 4 ] && args=(--out "$OUT/new")
    echo "== $label, run $(( (i + 1) / 2 )) ($tree)" >> "$log"
    (cd "$tree" && PYTHONPATH=$SITE:$PWD timeout -k 10 "$STEP_S" python3 benchmarks/reductions.py "${args[@]}") \
      >> "$log" 2>&1 || status=1
  done
  grep "^|\|^==" "$log" | tail -80
}

device() {
  python3 - <<'PY'
import cuda.bindings, cuda.core, numpy
print("cuda.core", cuda.core.__version__, "cuda.bindings", cuda.bindings.__version__, "numpy", numpy.__version__)
try:
    from cuda.bindings import nvjitlink
    print("nvjitlink version", nvjitlink.version())
except Exception as e:
    print("nvjitlink FAILED", type(e).__name__, e)
import xdsl, bulkred_dialect.ops.ptx  # noqa: F401,E401
print("xdsl import ok")
from bulkred_dialect.backend_ptx.assemble import assemble
ptx = b".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k() { ret; }\n"
print("assembled", len(assemble(ptx, "sm_90a")))
PY
}

for step in "$@"; do
  echo "== $step ($(( $(date +%s) - start )) s so far)"
  case $step in
    suite) suite ;;
    tests) if [ -z "${K:-}" ]; then echo "gpu.sh tests: name the files (tests:NAME) or set K"; status=1; continue; fi
           tests_step tests ;;
    tests:*) tests_step "${step#tests:}" ;;
    random) random_step plain ;;
    random:*) random_step "${step#random:}" ;;
    foreach-random) run foreach_random.log python3 tools/gpu_foreach_random.py --seed "$SEED" --count "${COUNT:-500}"
                    tail -15 "$OUT/foreach_random.log" ;;
    rows-random) rows_random_step ;;
    bench:*) bench "${step#bench:}" ;;
    compare) compare ;;
    # shellcheck disable=SC2086 # PROBE_ARGS is a list of words
    probe:*) run "probe_${step#probe:}.log" python3 tools/diag.py "${step#probe:}" ${PROBE_ARGS:-}
             cat "$OUT/probe_${step#probe:}.log" ;;
    device) device > "$OUT/device.log" 2>&1 || status=1; cat "$OUT/device.log" ;;
    wheels) echo "gpu.sh: wheels runs here, alone (bash tools/gpu.sh wheels)"; status=1 ;;
    *) echo "gpu.sh: unknown step '$step' (bash tools/gpu.sh lists them)"; status=1 ;;
  esac
done
echo "== done in $(( $(date +%s) - start )) s; seed $SEED; exit $status"
exit $status
