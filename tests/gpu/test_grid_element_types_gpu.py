"""Element types at grid scope on the GPU through the runtime (``compile_tile_module``):
f64, int64, uint64, the narrow and unsigned types, and a wider dst (int32 into int64,
float16 into float32...) for whole, row and column reductions on odd shapes against
numpy: integers exactly, floats within a bound for the accumulator and the length
(tests/test_grid_element_types.py runs the same reductions on the interpreter)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from bulkred_dialect.backend_ptx.runtime import compile_tile_module
from bulkred_dialect.ops.dtypes import DTYPES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_grid_element_types import check, module_text, out_shape, parsed, random_input  # noqa: E402

pytestmark = pytest.mark.gpu

TYPES = ["float64", "int64", "uint64", "int8", "uint8", "int16", "uint16", "uint32"]
SHAPES = [([65536 + 3], None), ([1000, 4097], [1]), ([4097, 1028], [0]), ([3, 65539], [1]), ([1000, 33], [0])]
WIDER = [
    ("sum", "int32", "int64"),
    ("sum", "int8", "int64"),
    ("sum", "uint8", "int64"),
    ("sum", "uint32", "uint64"),
    ("sum", "int16", "int32"),
    ("sum", "float16", "float32"),
    ("sum", "bfloat16", "float32"),
    ("sum", "float32", "float64"),
    ("max", "float16", "float32"),
]
CASES = [
    *[(k, t, t, s, a) for t in TYPES for k in ("sum", "max", "min") for s, a in SHAPES[:3]],
    *[("xor", t, t, s, a) for t in TYPES if not DTYPES[t].is_float for s, a in SHAPES[:1]],
    *[(k, s, d, sh, a) for k, s, d in WIDER for sh, a in SHAPES],
    *[("sum", t, t, [4097, 1028], [0], True) for t in ("float64", "int64")],
]


@pytest.mark.parametrize("case", CASES, ids=lambda v: str(v).replace(" ", ""))
@pytest.mark.parametrize("target", ["sm_90a"])
def test_grid_element_types(rng, case, target):
    kind, src, dst, shape, axes, *det = case
    kernel = compile_tile_module(parsed(module_text(kind, shape, src, dst, axes, deterministic=bool(det))), target).kernel("k")
    for _ in range(2):  # the second call reuses the workspace: its counters must be back at zero
        x = random_input(rng, shape, src)
        poison = np.full(out_shape(shape, axes), 7, DTYPES[dst].numpy)
        _, got = kernel(x, poison)
        check(kind, x, got, src, dst, axes)


def test_int32_sum_into_int64_does_not_wrap():
    x = np.full([4097, 1028], 2**31 - 1, np.int32)
    for axes in (None, [1], [0]):
        kernel = compile_tile_module(parsed(module_text("sum", list(x.shape), "int32", "int64", axes)), "sm_90a").kernel("k")
        _, got = kernel(x, np.zeros(out_shape(list(x.shape), axes), np.int64))
        want = np.atleast_1d(x.astype(np.int64).sum(axis=None if axes is None else tuple(axes)))
        np.testing.assert_array_equal(got.reshape(want.shape), want)
