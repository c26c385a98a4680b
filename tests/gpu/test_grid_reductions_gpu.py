"""Grid-scope whole reductions on the GPU through the runtime: every form, kind and
type on odd shapes (1, 31, 4097, 65536 + 3, M or N not a multiple of the tile) against
numpy on fresh random data. Integers and max/min exactly; float sums within a bound
for float32 (or the half type) and the reduction's length. The workspace is reused
across calls (its ticket counters must come back to zero) and deterministic variants
give the same bits on every run."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.runtime import compile_tile_module

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
BF16 = np.uint16  # bfloat16 as raw bits


def module_of(kind, shape, dtype, axes, **options):
    out = [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]
    with T.kernel("k") as k:
        x = k.param("x", shape, dtype)
        y = k.param("y", out, dtype)
        T.reduce(kind, y, x, axes=axes, **options)
    return k.module(), out


def to_f32(a: np.ndarray, dtype: str) -> np.ndarray:
    return (a.astype(np.uint32) << 16).view(np.float32) if dtype == "bfloat16" else a


def random_input(rng, shape, dtype):
    if dtype == "int32":
        return rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
    x = rng.standard_normal(shape).astype(np.float32) * 4
    if dtype == "float16":
        return x.astype(np.float16)
    if dtype == "bfloat16":
        return (x.view(np.uint32) >> 16).astype(BF16)
    return x


def expected(kind, x, dtype, axes):
    ax = None if axes is None else tuple(axes)
    if dtype == "int32":
        if kind in ("and", "or", "xor"):
            f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind].reduce
            flat = x.reshape(-1) if ax is None else x
            return np.atleast_1d(f(flat, axis=0 if ax is None else ax))
        w = {"sum": np.sum, "max": np.max, "min": np.min}[kind](x.astype(np.int64), axis=ax)
        return np.atleast_1d((w + 2**31) % 2**32 - 2**31).astype(np.int32)
    f = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    return np.atleast_1d(f(to_f32(x, dtype).astype(np.float64), axis=ax))


def check(kind, x, got, dtype, axes):
    want = expected(kind, x, dtype, axes)
    got = to_f32(got, dtype).reshape(want.shape)
    if dtype == "int32" or kind != "sum":
        np.testing.assert_array_equal(got.astype(want.dtype), want)
        return
    n = x.size if axes is None else math.prod(x.shape[a] for a in axes)
    eps = {"float32": 2**-24, "float16": 2**-11, "bfloat16": 2**-8}[dtype]
    # float32 accumulation: error grows at most like eps32 * n * sum|x|; then one rounding to the type
    absx = np.sum(np.abs(to_f32(x, dtype).astype(np.float64)), axis=None if axes is None else tuple(axes))
    bound = 2**-24 * n * np.atleast_1d(absx) + eps * np.abs(want) + 1e-30
    err = np.abs(got.astype(np.float64) - want)
    bound = np.broadcast_to(bound, err.shape)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert np.all(err <= bound), f"error {err[worst]} over bound {bound[worst]} at {worst}"


CASES = [
    *[(k, dt, [n], None) for k in ("sum", "max", "min") for dt in ("float32", "float16", "bfloat16") for n in (1, 31, 4097, 65536 + 3)],
    *[(k, "int32", [n], None) for k in ("sum", "max", "min", "and", "or", "xor") for n in (1, 31, 65536 + 3)],
    *[("sum", "float32", s, [0]) for s in ([1, 1], [31, 4096], [4097, 1028], [1000, 4097], [65539, 12])],
    ("max", "float32", [4097, 1028], [0]),
    ("sum", "int32", [1000, 4096], [0]),
    ("sum", "bfloat16", [300, 1030], [0]),
    *[("sum", "float32", s, [1]) for s in ([1, 1], [31, 4096], [4097, 1028], [1000, 4097], [3, 65539])],
    ("min", "int32", [1000, 33], [1]),
    ("max", "float16", [129, 4100], [1]),
    ("sum", "float32", [3, 5, 7, 9], [0, 1]),
    ("sum", "float32", [3, 5, 7, 9], [2, 3]),
]


@pytest.mark.parametrize("kind, dtype, shape, axes", CASES, ids=lambda v: str(v).replace(" ", ""))
def test_whole_reduction(rng, kind, dtype, shape, axes):
    module, out = module_of(kind, shape, dtype, axes)
    kernel = compile_tile_module(module, "sm_90a").kernel("k")
    for _ in range(2):  # the second call reuses the workspace: its counters must be back at zero
        x = random_input(rng, shape, dtype)
        poison = np.full(out, 0x7FC1 if dtype == "bfloat16" else -7, dtype=x.dtype)
        _, got = kernel(x, poison)
        check(kind, x, got, dtype, axes)


@pytest.mark.parametrize("shape, axes", [([65536 + 3], None), ([4097, 1028], [0]), ([1000, 4097], [1])])
def test_deterministic_bits(rng, shape, axes):
    module, out = module_of("sum", shape, "float32", axes, deterministic=True)
    kernel = compile_tile_module(module, "sm_90a").kernel("k")
    x = random_input(rng, shape, "float32")
    runs = [kernel(x, np.zeros(out, np.float32))[1] for _ in range(5)]
    assert all(np.array_equal(runs[0].view(np.uint32), r.view(np.uint32)) for r in runs[1:]), repr(rng)
    check("sum", x, runs[0], "float32", axes)


def test_accum_adds_to_dst(rng):
    module, out = module_of("sum", [4097, 1028], "float32", [0], accum=True)
    kernel = compile_tile_module(module, "sm_90a").kernel("k")
    x = random_input(rng, [4097, 1028], "float32")
    old = rng.standard_normal(out).astype(np.float32)
    _, got = kernel(x, old.copy())
    want = expected("sum", x, "float32", [0]) + old
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_torch_tensors_in_place(rng):
    torch = pytest.importorskip("torch")
    module, out = module_of("sum", [4096, 4096], "float32", [0])
    kernel = compile_tile_module(module, "sm_90a").kernel("k")
    x = torch.randn(4096, 4096, device="cuda")
    y = torch.full((4096,), float("nan"), device="cuda")
    for _ in range(3):
        kernel(x, y)  # zero_init: the runtime zeroes y on torch's stream first
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x.double().sum(0).float(), rtol=1e-4, atol=1e-3)


def test_reductions_example_on_the_gpu():
    r = subprocess.run([sys.executable, "examples/reductions.py"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    errors = [float(line.rsplit(" ", 1)[1]) for line in r.stdout.splitlines() if "max relative error" in line]
    assert len(errors) == 5 and max(errors) < 1e-2, r.stdout
