"""NaN semantics of max/min and the prod kind on the GPU (issue 16 §1), through
``compile_tile_module``, against numpy on fresh random data:

* max/min propagate NaN by default at grid (full, rows, columns), warp and CTA scope
  (``numpy.max``: NaN wherever a reduced slice holds one), and with ``ignore_nan`` give
  ``numpy.fmax``/``fmin`` (NaN only for an all-NaN slice); the other values exactly;
* thread scope (``local``) bit for bit against ``bulkred_dialect/reference.py``, which
  checks the canonical NaN of ``max.NaN`` and the f64 sequence (``setp.nan``/``selp`` of
  ``add.rn.f64``) on the hardware;
* prod: integers exactly (wrapping like ``numpy.prod`` in int32), floats within one
  rounding per multiply of the exact product.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from nan_prod_cases import (
    NP,
    assert_nan_same_and_values_equal,
    grid_kernel,
    group_nan_input,
    nan_rows,
    numpy_minmax,
    scope_kernel,
    thread_kernel,
)

from bulkred_dialect import builder as T
from bulkred_dialect import reference as ref
from bulkred_dialect.backend_ptx.runtime import compile_tile_module

pytestmark = pytest.mark.gpu


def grid_input(rng, shape, axes, dtype):
    """NaN in known places: for a full reduction one NaN (or none, half the time); for rows
    or columns the slices of ``nan_rows`` (none, one, all NaN, first, last, random)."""
    if axes is None:
        x = (rng.standard_normal(shape) * 100).astype(NP[dtype])
        if rng.random() < 0.5:
            x.reshape(-1)[rng.integers(x.size)] = np.nan
        return x
    kept, reduced = (shape[0], shape[1]) if axes == [1] else (shape[1], shape[0])
    rows = nan_rows(rng, kept, reduced, NP[dtype])
    return rows if axes == [1] else np.ascontiguousarray(rows.T)


GRID_FORMS = [([65536 + 3], None), ([4099], None), ([129, 4100], [1]), ([4097, 1028], [0]), ([300, 33], [0])]


@pytest.mark.parametrize("shape, axes", GRID_FORMS, ids=lambda v: str(v).replace(" ", ""))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("ignore_nan", [False, True], ids=["propagate", "ignore_nan"])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_grid_max_min_nan(rng, kind, ignore_nan, dtype, shape, axes):
    k = grid_kernel(kind, shape, dtype, axes, ignore_nan)
    kernel = compile_tile_module(T.module(k), "sm_90a").kernel("k")
    out = [1] if axes is None else [s for i, s in enumerate(shape) if i not in axes]
    for _ in range(2):  # the second call reuses the workspace
        x = grid_input(rng, shape, axes, dtype)
        _, got = kernel(x, np.full(out, -7, NP[dtype]))
        want = np.atleast_1d(numpy_minmax(kind, x, ignore_nan, axis=None if axes is None else axes[0]))
        assert_nan_same_and_values_equal(got, want, f"{kind} {dtype} {shape} axes={axes} {rng!r}")


@pytest.mark.parametrize("shape, axes", [([64, 300, 256], [1]), ([16, 33, 100], [0, 2])], ids=["middle", "axes02"])
@pytest.mark.parametrize("ignore_nan", [False, True], ids=["propagate", "ignore_nan"])
def test_grid_3d_max_nan(rng, ignore_nan, shape, axes):
    """grid_middle and grid_gather: NaN at random places, and a slab of NaN (all-NaN results)."""
    kernel = compile_tile_module(T.module(grid_kernel("max", shape, "float32", axes, ignore_nan)), "sm_90a").kernel("k")
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[rng.integers(0, x.size, 20)] = np.nan
    if axes == [1]:
        x[3, :, :] = np.nan
    else:
        x[:, 5, :] = np.nan
    out = [s for i, s in enumerate(shape) if i not in axes]
    _, got = kernel(x, np.zeros(out, np.float32))
    assert_nan_same_and_values_equal(got, numpy_minmax("max", x, ignore_nan, axis=tuple(axes)), repr(rng))


@pytest.mark.parametrize("scope, dtype", [("warp", "float32"), ("warp", "float16"), ("cta", "float32"), ("cta", "float16")])
@pytest.mark.parametrize("ignore_nan", [False, True], ids=["propagate", "ignore_nan"])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_warp_and_cta_max_min_nan(rng, kind, ignore_nan, scope, dtype):
    threads, ctas = 256, 4
    size = 32 if scope == "warp" else threads
    groups = ctas * threads // size
    kernel = compile_tile_module(T.module(scope_kernel(kind, scope, dtype, ignore_nan, ctas, threads)), "sm_90a").kernel("k")
    x = group_nan_input(rng, groups, size, NP[dtype])
    _, got = kernel(x, np.zeros_like(x))
    want = np.repeat(numpy_minmax(kind, x.reshape(groups, size), ignore_nan), size)
    assert_nan_same_and_values_equal(got, want, f"{scope} {kind} {dtype} {rng!r}")


@pytest.mark.parametrize("ignore_nan", [False, True], ids=["propagate", "ignore_nan"])
def test_cluster_max_nan(rng, ignore_nan):
    """cluster_dsmem (2-CTA clusters): the CTA step, then max.NaN of every CTA's result."""
    threads, ctas, cluster = 128, 8, 2
    size = threads * cluster
    k = scope_kernel("max", "cluster", "float32", ignore_nan, ctas, threads, cluster)
    kernel = compile_tile_module(T.module(k), "sm_90a").kernel("k")
    x = group_nan_input(rng, ctas // cluster, size, np.float32)
    _, got = kernel(x, np.zeros_like(x))
    want = np.repeat(numpy_minmax("max", x.reshape(-1, size), ignore_nan), size)
    assert_nan_same_and_values_equal(got, want, repr(rng))


def test_cluster_int_prod(rng):
    """cluster_red_async declines prod (red.async has no mul): cluster_dsmem multiplies."""
    threads, ctas, cluster = 128, 8, 2
    size = threads * cluster
    kernel = compile_tile_module(T.module(scope_kernel("prod", "cluster", "int32", False, ctas, threads, cluster)), "sm_90a").kernel("k")
    x = rng.integers(-(2**31), 2**31, ctas * threads, dtype=np.int64).astype(np.int32) | 1
    _, got = kernel(x, np.zeros_like(x))
    assert got.tolist() == np.repeat(np.prod(x.reshape(-1, size), axis=1, dtype=np.int32), size).tolist(), repr(rng)


def test_cta_all_nan_with_ignore_nan_is_nan():
    """The identity of a NaN-ignoring max is NaN: warps of only NaN stay NaN, not -inf."""
    kernel = compile_tile_module(T.module(scope_kernel("max", "cta", "float32", True, 2, 256)), "sm_90a").kernel("k")
    x = np.full(512, np.nan, np.float32)
    x[256:288] = np.arange(32)
    _, got = kernel(x, np.zeros_like(x))
    assert np.isnan(got[:256]).all() and got[256:].tolist() == [31.0] * 256


@pytest.mark.parametrize("ignore_nan", [False, True], ids=["propagate", "ignore_nan"])
@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_local_max_min_nan_bits(rng, dtype, kind, ignore_nan):
    """Thread scope: the GPU's bits are the reference's (canonical NaN of max.NaN; for f64
    the NaN that add.rn.f64 gives)."""
    x = nan_rows(rng, 8, 13, NP[dtype])
    if dtype == "float64":  # a signalling NaN with a payload: add.rn.f64 quiets it and keeps the payload
        x[6, 3] = np.array([0x7FF4000000000123], np.uint64).view(np.float64)[0]
    kernel = compile_tile_module(T.module(thread_kernel(kind, [8, 13], dtype, ignore_nan)), "sm_90a").kernel("k")
    _, got = kernel(x, np.zeros(8, NP[dtype]))
    want = ref.reduce_local(kind, x, ignore_nan=ignore_nan)
    assert ref.bits(got).tolist() == ref.bits(want).tolist(), repr(rng)
    assert_nan_same_and_values_equal(got, numpy_minmax(kind, x, ignore_nan), repr(rng))


PROD_CASES = [
    ("grid", "int32", [65536 + 3], None),
    ("grid", "int32", [1000, 33], [1]),
    ("grid", "int32", [300, 4096], [0]),
    ("grid", "float32", [4099], None),
    ("grid", "float32", [129, 4100], [1]),
    ("grid", "float32", [4097, 1028], [0]),
    ("grid", "float16", [64, 100], [1]),
]


@pytest.mark.parametrize("scope, dtype, shape, axes", PROD_CASES, ids=lambda v: str(v).replace(" ", ""))
def test_grid_prod(rng, scope, dtype, shape, axes):
    out = [1] if axes is None else [s for i, s in enumerate(shape) if i not in axes]
    kernel = compile_tile_module(T.module(grid_kernel("prod", shape, dtype, axes)), "sm_90a").kernel("k")
    axis = None if axes is None else axes[0]
    if dtype == "int32":
        x = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32) | 1  # odd: the product wraps, never 0
        _, got = kernel(x, np.zeros(out, np.int32))
        assert got.reshape(-1).tolist() == np.atleast_1d(np.prod(x, axis=axis, dtype=np.int32)).reshape(-1).tolist(), repr(rng)
        return
    n = math.prod(shape) if axis is None else shape[axis]
    x = np.exp(rng.uniform(-1, 1, shape) / math.sqrt(n)).astype(NP[dtype])  # the product stays near 1
    x *= rng.choice([-1, 1], shape).astype(NP[dtype])
    _, got = kernel(x, np.zeros(out, NP[dtype]))
    exact = np.atleast_1d(np.prod(x.astype(np.float64), axis=axis)).reshape(-1)
    bound = n * 2.0**-24 + np.finfo(NP[dtype]).eps  # f32 accumulation, one rounding to the type
    assert np.all(np.abs(got.reshape(-1).astype(np.float64) - exact) <= bound * np.abs(exact)), repr(rng)


@pytest.mark.parametrize("scope, dtype", [("warp", "int32"), ("cta", "int32"), ("warp", "float32"), ("cta", "float16")])
def test_warp_and_cta_prod(rng, scope, dtype):
    threads, ctas = 256, 4
    size = 32 if scope == "warp" else threads
    groups = ctas * threads // size
    kernel = compile_tile_module(T.module(scope_kernel("prod", scope, dtype, ctas=ctas, threads=threads)), "sm_90a").kernel("k")
    if dtype == "int32":
        x = rng.integers(-(2**31), 2**31, groups * size, dtype=np.int64).astype(np.int32) | 1
        _, got = kernel(x, np.zeros_like(x))
        assert got.tolist() == np.repeat(np.prod(x.reshape(groups, size), axis=1, dtype=np.int32), size).tolist(), repr(rng)
        return
    x = np.exp(rng.uniform(-1, 1, groups * size) / math.sqrt(size)).astype(NP[dtype])
    _, got = kernel(x, np.zeros_like(x))
    exact = np.repeat(np.prod(x.reshape(groups, size).astype(np.float64), axis=1), size)
    bound = size * 2.0**-24 + np.finfo(NP[dtype]).eps
    assert np.all(np.abs(got.astype(np.float64) - exact) <= bound * np.abs(exact)), repr(rng)
