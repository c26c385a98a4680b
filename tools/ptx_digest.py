#!/usr/bin/env python3
"""The PTX that bulkred prints for a fixed set of programs, one line each: the case and a
digest of its PTX text (or of its one-line error). Run it on two trees and diff the
outputs: a refactoring that must not change the generated code shows no difference.

    python3 tools/ptx_digest.py > after.txt
    PYTHONPATH=/path/to/old/tree python3 /path/to/old/tree/tools/ptx_digest.py > before.txt  # or this file, run against the old tree
    diff before.txt after.txt

Cases: every examples/*.mlir, lowered with ``bulkred-to-ptx`` for sm_90a and sm_100a, and
the reductions of ``bulkred.sum`` and friends (``api.reduction_module``) over a spread of
kinds, dtypes, shapes and axes for both targets, then the fused reductions (``api.plan``
and ``api.module_of``: mean, var, var_mean, std, argmax, argmin, vector_norm of ord 1, 2, inf
and 3, logsumexp) of float32 and bfloat16 over a few of those shapes and axes, for both
targets, then nansum, nanmean and aminmax likewise (and of int32 for nansum and aminmax).
New cases are appended, so that the lines of the old ones keep their text and
order. ``--show CASE`` prints one case's PTX.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("sm_90a", "sm_100a")
SHAPES = ((100,), (4096,), (1 << 20,), (7, 33), (256, 1024), (4096, 4096), (3, 5, 7), (64, 1000, 256))
FUSED_FNS = (  # (case label, api function, its options)
    ("mean", "mean", {}),
    ("var", "var", {}),
    ("var correction=1", "var", {"correction": 1}),
    ("var_mean correction=1", "var_mean", {"correction": 1}),
    ("std correction=1", "std", {"correction": 1}),
    ("argmax", "argmax", {}),
    ("argmin", "argmin", {}),
    ("vector_norm ord=1", "vector_norm", {"ord": 1}),
    ("vector_norm ord=2", "vector_norm", {"ord": 2}),
    ("vector_norm ord=inf", "vector_norm", {"ord": float("inf")}),
    ("vector_norm ord=3", "vector_norm", {"ord": 3}),
    ("logsumexp", "logsumexp", {}),
)
FUSED_DTYPES = ("float32", "bfloat16")
NAN_FNS = (("nansum", ("float32", "bfloat16", "int32")), ("nanmean", ("float32", "bfloat16")), ("aminmax", ("float32", "bfloat16", "int32")))
FUSED_SHAPES = ((4096,), (256, 1024), (3, 5, 7), (64, 1000, 256))


def cases():
    for path in sorted((ROOT / "examples").glob("*.mlir")):
        for t in TARGETS:
            yield f"{path.name} {t}", ("file", path.read_text(), t)
    kinds = ("sum", "max", "min", "and", "or", "xor")
    dtypes = ("float32", "float16", "bfloat16", "int32", "float64")
    for kind, dtype, shape, t in itertools.product(kinds, dtypes, SHAPES, TARGETS):
        for axis in [None, *range(len(shape))]:
            yield f"api {kind} {dtype} {'x'.join(map(str, shape))} axis={axis} {t}", ("api", (kind, shape, dtype, axis), t)
    for (label, fn, options), dtype, shape, t in itertools.product(FUSED_FNS, FUSED_DTYPES, FUSED_SHAPES, TARGETS):
        for axis in [None, *range(len(shape))]:
            name = f"api fused {label} {dtype} {'x'.join(map(str, shape))} axis={axis} {t}"
            yield name, ("fused", (fn, shape, dtype, axis, options), t)
    for (fn, dtypes), shape, t in itertools.product(NAN_FNS, FUSED_SHAPES, TARGETS):
        for dtype, axis in itertools.product(dtypes, [None, *range(len(shape))]):
            yield f"api fused {fn} {dtype} {'x'.join(map(str, shape))} axis={axis} {t}", ("fused", (fn, shape, dtype, axis, {}), t)


def ptx_of(what, payload, target: str) -> str:
    from bulkred_dialect.compiler import lower_tile_module, parse
    from bulkred_dialect.backend_ptx.printer import print_ptx

    if what == "file":
        module = parse(payload)
    elif what == "fused":
        from bulkred_dialect import api

        fn, shape, dtype, axis, options = payload
        module = api.module_of(api.plan(fn, shape, dtype, axis, **options))
    else:
        from bulkred_dialect import api

        kind, shape, dtype, axis = payload
        module = api.reduction_module(kind, shape, dtype, axis, f"bulkred_{kind}")
    lower_tile_module(module, target)
    return print_ptx(module, target)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--show", help="print the PTX of the case with this name")
    args = ap.parse_args()
    for name, (what, payload, target) in cases():
        if args.show is not None and name != args.show:
            continue
        try:
            text = ptx_of(what, payload, target)
        except Exception as e:  # a refusal is compared too, by its message (not where it was raised)
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            text = "error: " + first.rsplit("error: ", 1)[-1]
        if args.show is not None:
            print(text)
            return 0
        print(f"{name}: {text if text.startswith('error:') else hashlib.sha256(text.encode()).hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
