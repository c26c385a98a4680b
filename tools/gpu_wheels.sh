#!/usr/bin/env bash
# Fetch into .whl/ (ignored by git) the wheels that the GPU machine's image lacks, for
# Python 3.12 on x86-64: xdsl and its pure-Python needs, filecheck and lit, and greenlet
# (the CPU interpreter's threads; a binary wheel). The image already has numpy,
# cuda-bindings, cuda-core, pytest and torch: two versions of one package break the install.
#
#   bash tools/gpu_wheels.sh        # once a session; then carry .whl and run tools/gpu_suite.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .whl && mkdir -p .whl
pure=(xdsl immutabledict ordered-set typing-extensions filecheck lit)
spec=()
for p in "${pure[@]}"; do  # the versions installed in .venv when there are any
  v=$( (.venv/bin/python -m pip show "$p" 2>/dev/null || true) | sed -n "s/^Version: //p")
  spec+=("${p}${v:+==$v}")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation py \
  --abi none --platform any -d .whl "${spec[@]}"
g=$( (.venv/bin/python -m pip show greenlet 2>/dev/null || true) | sed -n "s/^Version: //p")
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl "greenlet${g:+==$g}"
ls .whl
