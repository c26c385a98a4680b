"""NaN semantics of max/min and the prod kind, on the CPU interpreter against numpy
(issue 16 §1: NaN and prod).

* float max/min propagate NaN by default at every scope (``numpy.max`` semantics: a NaN
  anywhere gives NaN); with ``ignore_nan`` a NaN input is dropped and only an all-NaN
  reduction gives NaN (``numpy.fmax.reduce``). The local and sm100_packed variants are
  also compared bit for bit with ``bulkred_dialect/reference.py``;
* prod: integers exactly (wrapping, as ``numpy.prod`` with the element dtype), floats
  within a bound of the exact product (one rounding per multiply).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from each_case import each_case
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
from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.interpreter import run_kernel
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.tile import ReduceOp
from bulkred_dialect.passes.dispatch import explain
from bulkred_dialect.passes.legalize_for_target import LegalizeForTargetPass


def lowered(k: T.Kernel, target: str = "sm_90a"):
    m = T.module(k, target=target)
    lower_tile_module(m, target, pipeline=f"lower-tile-reductions{{target={target}}}")
    return m


# region Thread scope: local and sm100_packed


IGNORE_NAN_CASES = [(kind, ignore_nan) for kind in ("max", "min") for ignore_nan in (False, True)]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_local_max_min_nan(dtype):
    """local (f64 through setp.nan/selp): NaN where numpy has it, the reference's bits;
    max and min, NaN propagated or ignored (a case each)."""
    each_case(lambda kind, ignore_nan: _check_local_max_min_nan(dtype, kind, ignore_nan), IGNORE_NAN_CASES)


def _check_local_max_min_nan(dtype, kind, ignore_nan):
    rng = np.random.default_rng(zlib.crc32(repr((dtype, kind, ignore_nan)).encode()))  # the same data in every process
    x = nan_rows(rng, 8, 13, NP[dtype])
    m = lowered(thread_kernel(kind, [8, 13], dtype, ignore_nan))
    _, got = run_kernel(m, "k", x.copy(), np.zeros(8, NP[dtype]))
    assert_nan_same_and_values_equal(got, numpy_minmax(kind, x, ignore_nan), f"local {kind} {dtype}")
    want = ref.reduce_local(kind, x, ignore_nan=ignore_nan)
    assert np.array_equal(ref.bits(got), ref.bits(want)), f"{ref.bits(got)} != {ref.bits(want)}"


@pytest.mark.parametrize("ignore_nan", [False, True], ids=["propagate", "ignore_nan"])
def test_local_bf16_nan(ignore_nan):
    """bfloat16 travels as its bits: max.NaN.bf16 gives the canonical 0x7fff."""
    rng = np.random.default_rng(7)
    f = nan_rows(rng, 8, 9, np.float32)
    x = (f.view(np.uint32) >> 16).astype(np.uint16)
    m = lowered(thread_kernel("max", [8, 9], "bfloat16", ignore_nan))
    _, got = run_kernel(m, "k", x.copy(), np.zeros(8, np.uint16))
    want = ref.reduce_local("max", x, bf16=True, ignore_nan=ignore_nan)
    assert got.tolist() == want.tolist()
    as_f32 = (x.astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(np.isnan((got.astype(np.uint32) << 16).view(np.float32)), np.isnan(numpy_minmax("max", as_f32, ignore_nan)))


@pytest.mark.parametrize("kind", ["max", "min"])
def test_sm100_packed_nan(kind):
    """sm100_packed (max3/min3 .NaN, max.NaN) and its legalization for sm_90a (max.NaN
    twice): the reference's bits, NaN where numpy has it; NaN propagated or ignored, at
    each length (a case each)."""
    each_case(
        lambda ignore_nan, n: _check_sm100_packed_nan(kind, ignore_nan, n),
        [(ignore_nan, n) for ignore_nan in (False, True) for n in (8, 13, 33, 100)],
    )


def _check_sm100_packed_nan(kind, ignore_nan, n):
    m = lowered(thread_kernel(kind, [n], "float32", ignore_nan), "sm_100a")
    assert any(o.name == f"ptx.{kind}3" for o in m.walk()), "sm100_packed was not chosen"
    assert all((o.properties.get("NaN") is None) == ignore_nan for o in m.walk() if o.name in (f"ptx.{kind}3", f"ptx.{kind}"))
    legal = m.clone()
    LegalizeForTargetPass(target="sm_90a").apply(T.context(), legal)
    rng = np.random.default_rng(n + 10 * ignore_nan)
    rows = nan_rows(rng, 8, n, np.float32)
    for r, x in enumerate(rows):
        want = ref.reduce_sm100_packed(kind, x, ignore_nan=ignore_nan)
        for module, what in ((m, "sm_100a"), (legal, "legalized for sm_90a")):
            _, got = run_kernel(module, "k", x.copy(), np.zeros(1, np.float32))
            assert ref.bits(got).tolist() == ref.bits(want).tolist(), f"row {r} {what}"
        assert_nan_same_and_values_equal(got, [numpy_minmax(kind, x, ignore_nan)], f"row {r}")


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64"])
def test_local_int_prod_is_exact_and_wraps(dtype):
    rng = np.random.default_rng(3)
    x = rng.integers(-9, 10, (6, 21)).astype(NP[dtype])
    m = lowered(thread_kernel("prod", [6, 21], dtype))
    _, got = run_kernel(m, "k", x.copy(), np.zeros(6, NP[dtype]))
    assert got.tolist() == np.prod(x, axis=-1, dtype=NP[dtype]).tolist()  # numpy wraps the same way
    assert got.tolist() == ref.reduce_local("prod", x).tolist()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_local_float_prod_within_a_bound(dtype):
    """n multiplies round n times: within n half-ulps (relative) of the exact product;
    the reference's bits exactly; NaN and inf as numpy."""
    rng = np.random.default_rng(4)
    n = 17
    x = rng.uniform(0.5, 2.0, (5, n)).astype(NP[dtype]) * rng.choice([-1, 1], (5, n)).astype(NP[dtype])
    x[3, 5] = np.nan
    x[4, 2] = np.inf
    m = lowered(thread_kernel("prod", [5, n], dtype))
    _, got = run_kernel(m, "k", x.copy(), np.zeros(5, NP[dtype]))
    exact = np.prod(x.astype(np.float64), axis=-1)
    eps = np.finfo(NP[dtype]).eps
    fin = np.isfinite(exact)
    assert np.all(np.abs(got[fin] - exact[fin]) <= n * eps * np.abs(exact[fin]))
    assert np.array_equal(np.isnan(got), np.isnan(exact)) and np.array_equal(np.isinf(got), np.isinf(exact))
    assert ref.bits(got).tolist() == ref.bits(ref.reduce_local("prod", x)).tolist()


def test_sm100_packed_declines_prod():
    k = thread_kernel("prod", [32], "float32")
    op = next(o for o in T.module(k, target="sm_100a").walk() if isinstance(o, ReduceOp))
    table = explain(op, "sm_100a")
    assert "kind" in table and "FAIL" in table and table.splitlines()[-1] == "chosen: local"


# endregion

# region Warp and CTA scope


@pytest.mark.parametrize(
    "scope, kind, dtype, target",
    [
        ("warp", "max", "float32", "sm_90a"),  # warp_shuffle: max.NaN.f32
        ("warp", "min", "float16", "sm_90a"),  # warp_shuffle in f32
        ("warp", "max", "float32", "sm_100a"),  # warp_redux_f32: redux.sync.max.NaN.f32
        ("cta", "min", "float32", "sm_90a"),  # cta_shared
        ("cta", "max", "float16", "sm_90a"),
    ],
)
@pytest.mark.parametrize("ignore_nan", [False, True], ids=["propagate", "ignore_nan"])
def test_collective_max_min_nan(scope, kind, dtype, target, ignore_nan):
    # warp: 5 warps, the 5 NaN patterns of nan_rows; cta: 2 CTAs of 2 warps, one with a NaN
    threads, ctas = (160, 1) if scope == "warp" else (64, 2)
    size = 32 if scope == "warp" else threads
    groups = ctas * threads // size
    m = lowered(scope_kernel(kind, scope, dtype, ignore_nan, ctas, threads), target)
    if target == "sm_100a":
        redux = [o for o in m.walk() if o.name == "ptx.redux.sync"]
        assert redux and all((o.properties.get("NaN") is None) == ignore_nan for o in redux)
    rng = np.random.default_rng(groups + ignore_nan)
    x = group_nan_input(rng, groups, size, NP[dtype])
    _, out = run_grid(m, "k", x.copy(), np.zeros_like(x))
    want = np.repeat(numpy_minmax(kind, x.reshape(groups, size), ignore_nan), size)
    assert_nan_same_and_values_equal(out, want, f"{scope} {kind} {dtype} {target}")


@pytest.mark.parametrize("scope", ["warp", "cta"])
def test_collective_all_nan_with_ignore_nan_is_nan(scope):
    """The CTA step pads the warp partials with the identity: NaN under ignore_nan (which
    max.f32 drops), so an all-NaN CTA still gives NaN, not -inf."""
    m = lowered(scope_kernel("max", scope, "float32", ignore_nan=True, ctas=1, threads=128))
    x = np.full(128, np.nan, np.float32)
    x[:32] = np.arange(32)  # warp 0 has numbers, the other warps only NaN
    _, out = run_grid(m, "k", x.copy(), np.zeros_like(x))
    if scope == "warp":
        assert out[:32].tolist() == [31.0] * 32 and np.isnan(out[32:]).all()
    else:
        assert out.tolist() == [31.0] * 128
    _, out = run_grid(m, "k", np.full(128, np.nan, np.float32), np.zeros(128, np.float32))
    assert np.isnan(out).all()


@pytest.mark.parametrize("scope, dtype", [("warp", "int32"), ("cta", "int32"), ("warp", "float32"), ("cta", "float32")])
def test_collective_prod(scope, dtype):
    """int32 warp prod takes warp_shuffle (redux.sync has no mul): exact and wrapping;
    float32 within a bound of the exact product."""
    threads, ctas = (160, 1) if scope == "warp" else (64, 2)
    size = 32 if scope == "warp" else threads
    groups = ctas * threads // size
    m = lowered(scope_kernel("prod", scope, dtype, ctas=ctas, threads=threads))
    assert not any(o.name == "ptx.redux.sync" for o in m.walk())
    rng = np.random.default_rng(5)
    if dtype == "int32":
        x = rng.integers(-7, 8, groups * size).astype(np.int32)
        x[x == 0] = 3
        want = np.repeat(np.prod(x.reshape(groups, size), axis=1, dtype=np.int32), size)
        _, out = run_grid(m, "k", x.copy(), np.zeros_like(x))
        assert out.tolist() == want.tolist()
    else:
        x = rng.uniform(0.9, 1.1, groups * size).astype(np.float32)
        _, out = run_grid(m, "k", x.copy(), np.zeros_like(x))
        exact = np.repeat(np.prod(x.reshape(groups, size).astype(np.float64), axis=1), size)
        assert np.all(np.abs(out - exact) <= size * np.finfo(np.float32).eps * np.abs(exact))


# endregion

# region Grid scope


def run_grid_kernel(k: T.Kernel, x: np.ndarray, out_shape, dtype):
    m = lowered(k)
    f = next(iter(m.ops))
    ws = [np.zeros(t.get_shape(), np.uint8) for t in f.function_type.inputs.data[2:]]
    _, out, *_ = run_grid(m, "k", x.copy(), np.zeros(out_shape, dtype), *ws)
    variant = explain(next(o for o in T.module(k).walk() if isinstance(o, ReduceOp)), "sm_90a").splitlines()[-1]
    return out, variant.removeprefix("chosen: ")


@pytest.mark.parametrize("kind", ["max", "min"])
def test_grid_max_min_nan(kind):
    """Each variant's form, NaN propagated or ignored (a case each)."""
    each_case(
        lambda ignore_nan, shape, axes, variant: _check_grid_max_min_nan(kind, ignore_nan, shape, axes, variant),
        [
            (ignore_nan, shape, axes, variant)
            for ignore_nan in (False, True)
            for shape, axes, variant in [([800], None, "grid_full"), ([6, 72], [1], "grid_rows"), ([8, 40], [0], "grid_split_det")]
        ],
    )


def _check_grid_max_min_nan(kind, ignore_nan, shape, axes, variant):
    rng = np.random.default_rng(len(shape) + ignore_nan)
    if axes is None:
        x = (rng.standard_normal(shape) * 100).astype(np.float32)
        x[rng.integers(shape[0])] = np.nan
        want = [numpy_minmax(kind, x, ignore_nan, axis=None)]
    else:
        rows = nan_rows(rng, shape[1 - axes[0]], shape[axes[0]], np.float32)
        x = rows if axes == [1] else np.ascontiguousarray(rows.T)
        want = numpy_minmax(kind, x, ignore_nan, axis=axes[0])
    out, chosen = run_grid_kernel(grid_kernel(kind, shape, "float32", axes, ignore_nan), x, np.shape(want), np.float32)
    assert chosen == variant
    assert_nan_same_and_values_equal(out, want, f"grid {kind} {shape} axes={axes}")


def test_grid_all_nan_is_nan_with_ignore_nan():
    x = np.full(300, np.nan, np.float32)
    out, _ = run_grid_kernel(grid_kernel("max", [300], "float32", None, True), x, [1], np.float32)
    assert np.isnan(out[0])


@pytest.mark.parametrize(
    "shape, axes, dtype, variant",
    [
        ([800], None, "int32", "grid_full"),  # grid_full_cluster (red.async) declines prod
        ([6, 72], [1], "int32", "grid_rows"),
        ([8, 40], [0], "int32", "grid_split_det"),
        ([2000], None, "float32", "grid_full"),
        ([8, 64], [0], "float32", "grid_split_det"),  # grid_split_bulk (cp.reduce.async.bulk) declines prod
        ([8, 40], [1], "float16", "grid_rows"),
    ],
)
def test_grid_prod(shape, axes, dtype, variant):
    rng = np.random.default_rng(6)
    if dtype == "int32":
        x = rng.integers(-5, 6, shape).astype(np.int32)
        x[x == 0] = -1
    else:
        x = rng.uniform(0.95, 1.05, shape).astype(NP[dtype])
    axis = None if axes is None else axes[0]
    out_shape = [1] if axes is None else [s for i, s in enumerate(shape) if i not in axes]
    out, chosen = run_grid_kernel(grid_kernel("prod", shape, dtype, axes), x, out_shape, NP[dtype])
    assert chosen == variant
    if dtype == "int32":
        assert out.reshape(-1).tolist() == np.prod(x, axis=axis, dtype=np.int32).reshape(-1).tolist()
    else:
        exact = np.prod(x.astype(np.float64), axis=axis).reshape(-1)
        n = x.size if axis is None else shape[axis]
        # f32 accumulation (f16 too), then one rounding to the element type
        bound = n * np.finfo(np.float32).eps + np.finfo(NP[dtype]).eps
        assert np.all(np.abs(out.reshape(-1).astype(np.float64) - exact) <= bound * np.abs(exact))


# endregion


@pytest.mark.parametrize(
    "shape, axes, variant",
    [([3, 16, 8], [1], "grid_middle"), ([4, 5, 40], [0, 2], "grid_runs"), ([4, 5, 16, 2], [0, 2], "grid_gather")],
)
@pytest.mark.parametrize("ignore_nan", [False, True], ids=["propagate", "ignore_nan"])
def test_grid_middle_and_gather_max_nan(shape, axes, variant, ignore_nan):
    """The 3-D forms: one NaN, and a slab of NaN (all-NaN results)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape).astype(np.float32)
    x[1, 2, 3] = np.nan
    x[2, :, :] = np.nan if axes == [1] else x[2, :, :]
    x[:, 4, :] = np.nan if axes == [0, 2] else x[:, 4, :]
    out_shape = [s for i, s in enumerate(shape) if i not in axes]
    out, chosen = run_grid_kernel(grid_kernel("max", shape, "float32", axes, ignore_nan), x, out_shape, np.float32)
    assert chosen == variant
    assert_nan_same_and_values_equal(out, numpy_minmax("max", x, ignore_nan, axis=tuple(axes)), f"{shape} {axes}")
