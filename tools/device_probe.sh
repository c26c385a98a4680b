#!/usr/bin/env bash
# Probe the GPU machine's software: which of our dependencies it has.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
nvidia-smi --query-gpu=name,driver_version --format=csv
python3 - <<'PY'
import cuda.core, cuda.bindings, numpy
print("cuda.core", cuda.core.__version__, "cuda.bindings", cuda.bindings.__version__, "numpy", numpy.__version__)
try:
    from cuda.bindings import nvjitlink
    print("nvjitlink version", nvjitlink.version())
except Exception as e:
    print("nvjitlink FAILED", type(e).__name__, e)
import xdsl, bulkred_dialect.ops.ptx
print("xdsl import ok")
from bulkred_dialect.backend_ptx.assemble import assemble
ptx = b""".version 8.0
.target sm_90a
.address_size 64
.visible .entry k() { ret; }
"""
try:
    print("assembled", len(assemble(ptx, "sm_90a")))
except Exception as e:
    print("assemble FAILED", e)
PY
