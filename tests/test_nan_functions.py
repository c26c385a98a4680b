"""``bulkred.nansum``, ``nanmean`` and ``aminmax`` (torch.nansum, torch.nanmean,
torch.aminmax) without a GPU: their rows of the function table (plans, dtypes, fills,
one-line refusals, signatures), the modules they build (the prologue map ``nan_zero``,
the kinds ``nanmean`` and ``minmax``) and the variant each canonical form takes; their
kernels through ``lower-tile-reductions`` and the CPU interpreter against numpy
(np.nansum, np.nanmean, np.min and np.max) in every form (whole, rows, columns, middle,
general, views read in place) with NaN placed in several ways; and their gradients
against torch's autograd, the kernel simulated on the host by torch (as
tests/test_grads.py does). tests/gpu/test_nan_functions_gpu.py runs them on the GPU."""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from dataclasses import replace

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api
from bulkred_dialect.functions import FUNCTIONS

FNS = ("nansum", "nanmean", "aminmax")


def _torch():
    return pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for these tests)")


# region The rows: plans, dtypes, fills, refusals


def test_the_rows_are_public_functions_with_torch_signatures():
    from bulkred_dialect import reductions

    for fn in FNS:
        assert getattr(bulkred, fn) is reductions.PUBLIC[fn] and fn in dir(bulkred)

    def params(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()][1:]

    tail = [("out", None), ("stream", None), ("explain", False)]
    assert params(bulkred.nansum) == [("axis", None), ("dtype", None), ("keepdims", False), *tail]
    assert params(bulkred.nanmean) == [("axis", None), ("keepdims", False), ("dtype", None), *tail]
    assert params(bulkred.aminmax) == [("axis", None), ("keepdims", False), *tail]
    assert FUNCTIONS["aminmax"].schema() == "(Tensor x, int[]? axis, bool keepdims) -> (Tensor, Tensor)"
    assert FUNCTIONS["nansum"].schema() == "(Tensor x, int[]? axis, bool keepdims, ScalarType? dtype) -> Tensor"
    assert FUNCTIONS["aminmax"].result_names == ("min", "max") and not FUNCTIONS["aminmax"].aux_first
    assert {FUNCTIONS[f].grad for f in FNS} == {"nansum", "nanmean", "aminmax"}


@pytest.mark.parametrize(
    ("fn", "shape", "src", "kw", "kind", "prologue", "dst", "aux", "result_shape"),
    [
        ("nansum", (4, 5), "float32", {"axis": 1}, "sum", ("nan_zero",), "float32", None, (4,)),
        ("nansum", (4, 5), "float16", {"dtype": "float32"}, "sum", ("nan_zero",), "float32", None, ()),
        ("nansum", (4, 5), "bfloat16", {"keepdims": True}, "sum", ("nan_zero",), "bfloat16", None, (1, 1)),
        ("nansum", (4, 5), "float64", {"axis": (0, 1)}, "sum", ("nan_zero",), "float64", None, ()),
        # integers and bool have no NaN: the plain sum, its dtype rule (int64; unsigned: uint64, as bulkred.sum)
        ("nansum", (4, 5), "int32", {}, "sum", (), "int64", None, ()),
        ("nansum", (4, 5), "bool", {"axis": 0}, "sum", (), "int64", None, (5,)),
        ("nansum", (4, 5), "uint8", {}, "sum", (), "uint64", None, ()),
        ("nansum", (4, 5), "int16", {"dtype": "int32"}, "sum", (), "int32", None, ()),
        ("nanmean", (4, 5), "float32", {"axis": 0}, "nanmean", (), "float32", None, (5,)),
        ("nanmean", (4, 5), "bfloat16", {"dtype": "float32"}, "nanmean", (), "float32", None, ()),
        ("nanmean", (4, 5, 6), "float64", {"axis": (0, 2), "keepdims": True}, "nanmean", (), "float64", None, (1, 5, 1)),
        ("aminmax", (4, 5), "float32", {"axis": 1}, "minmax", (), "float32", "float32", (4,)),
        ("aminmax", (4, 5), "int8", {}, "minmax", (), "int8", "int8", ()),
        ("aminmax", (4, 5), "bool", {"axis": (0, 1)}, "minmax", (), "bool", "bool", ()),
        ("aminmax", (4, 5), "uint64", {"axis": -1, "keepdims": True}, "minmax", (), "uint64", "uint64", (4, 1)),
    ],
)
def test_plans(fn, shape, src, kw, kind, prologue, dst, aux, result_shape):
    p = api.plan(fn, shape, src, **kw)
    assert (p.kind, p.prologue, p.epilogue, p.dst, p.aux) == (kind, prologue, (), dst, aux)
    assert p.result_shape == result_shape and p.launches and not p.ignore_nan and p.correction is None
    assert p.kernel_name == f"bulkred_{fn}"
    assert p.outputs == ((dst,) if aux is None else (dst, aux))  # aminmax: (min, max), the op's (dst, aux)


@pytest.mark.parametrize(
    ("fn", "shape", "src", "kw", "fill", "dtype"),
    [
        ("nansum", (0, 3), "float32", {"axis": 0}, 0.0, np.float32),
        ("nansum", (0,), "int32", {}, 0, np.int64),
        ("nanmean", (3, 0), "float32", {"axis": 1}, "nan", np.float32),
        ("nanmean", (0,), "float64", {}, "nan", np.float64),
    ],
)
def test_empty_reductions_fill_without_a_kernel(monkeypatch, fn, shape, src, kw, fill, dtype):
    """torch's values: the nansum of nothing 0, the nanmean NaN."""
    monkeypatch.setattr(api, "kernel_of", lambda *a: pytest.fail("compiled"))
    p = api.plan(fn, shape, src, **kw)
    assert not p.launches
    got = getattr(bulkred, fn)(np.zeros(shape, src), **kw)
    assert isinstance(got, np.ndarray) and got.shape == p.result_shape and got.dtype == dtype
    assert np.all(np.isnan(got)) if fill == "nan" else np.all(got == fill)
    assert getattr(bulkred, fn)(np.zeros(shape, src), explain=True, **kw).startswith("no kernel")


REFUSALS = [
    ("nanmean", (4,), "int32", {}, "bulkred.nanmean: expected a floating-point input (float16, bfloat16, float32, float64), got int32 (as torch's nanmean); cast it first"),
    ("nanmean", (4,), "bool", {}, "bulkred.nanmean: expected a floating-point input"),
    ("nanmean", (4,), "float32", {"dtype": "int32"}, "bulkred.nanmean: 'dtype' must be a floating-point type (float16, bfloat16, float32, float64), got int32"),
    ("nanmean", (4,), "float32", {"correction": 1}, "bulkred.nanmean: 'correction' is not taken by nanmean (its options: dtype)"),
    ("aminmax", (4, 0), "float32", {"axis": 1}, "bulkred.aminmax: axis 1 of an array of shape (4, 0) has no elements, and aminmax has no identity"),
    ("aminmax", (0,), "int32", {}, "bulkred.aminmax: the array of an array of shape (0,) has no elements, and aminmax has no identity"),
    ("aminmax", (4,), "float32", {"dtype": "float64"}, "bulkred.aminmax: 'dtype' is not taken by aminmax (its options: none)"),
    ("aminmax", (4, 5), "float32", {"axis": ()}, "bulkred.aminmax: axis=() reduces nothing"),
    ("aminmax", (4, 5), "float32", {"axis": 2}, "bulkred.aminmax: axis 2 is out of range for a 2-D array"),
    ("nansum", (4,), "float32", {"ignore_nan": True}, "bulkred.nansum: 'ignore_nan' is not taken by nansum (its options: dtype)"),
    ("nansum", (4, 5), "float32", {"axis": (1, -1)}, "bulkred.nansum: axis (1, -1) names an axis twice"),
    ("nansum", (4,), "float32", {"keepdims": 1}, "bulkred.nansum: 'keepdims' must be a bool, got 1"),
]


@pytest.mark.parametrize("fn, shape, dtype, kw, message", REFUSALS, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSALS)])
def test_refusals_are_one_line_before_any_launch(monkeypatch, fn, shape, dtype, kw, message):
    monkeypatch.setattr(api, "kernel_of", lambda *a, **k: pytest.fail("compiled"))
    monkeypatch.setattr(api, "module_of", lambda *a, **k: pytest.fail("built"))
    with pytest.raises(api.ReductionError) as e:
        api.plan(fn, shape, dtype, **kw)
    assert message in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(api.ReductionError) as e:
        getattr(bulkred, fn)(np.zeros(shape, dtype), **kw)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_refusals_of_the_builds_and_the_pairs():
    x = np.zeros((4, 5), np.float32)
    with pytest.raises(api.ReductionError, match=r"^bulkred.aminmax: 'out' must be a pair of arrays \(min, max\), got ndarray$"):
        bulkred.aminmax(x, out=np.zeros((), np.float32))
    with pytest.raises(api.ReductionError, match=r"^bulkred.aminmax: 'out' has dtype float64, expected float32"):
        bulkred.aminmax(x, out=(np.zeros((), np.float32), np.zeros((), np.float64)))
    with pytest.raises(api.ReductionError, match=r"^bulkred.nanmean: 'out' has shape \(5,\), expected \(4,\)"):
        bulkred.nanmean(x, axis=1, out=np.zeros(5, np.float32))
    # a float nansum into an integer: the dialect's refusal (nan_zero needs a float accumulator), one line
    with pytest.raises(api.ReductionError) as e:
        api.module_of(api.plan("nansum", (4, 5), "float32", dtype="int64"))
    assert str(e.value).startswith("bulkred.nansum: a nansum of float32 into int64 is not supported yet") and "\n" not in str(e.value)


# endregion

# region Modules and the variants they take


def _op(m):
    return next(o for o in m.walk() if o.name == "bulkred.reduce")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_the_modules_verify_and_carry_their_op(dtype):
    for fn, kind, prologue, aux in (
        ("nansum", "sum", ["nan_zero"], False), ("nanmean", "nanmean", [], False), ("aminmax", "minmax", [], True)
    ):
        m = api.module_of(api.plan(fn, (6, 7), dtype, 1))
        m.verify()
        op = _op(m)
        assert op.kind.data == kind and op.scope.data == "grid" and op.ignore_nan is None
        assert [a.fn.data for a in op.maps("prologue")] == prologue and op.maps("epilogue") == []
        assert (op.aux is not None) == aux
        f = next(o for o in m.walk() if o.name == "func.func")
        assert f.sym_name.data == f"bulkred_{fn}"
        types = f.function_type.inputs.data
        assert [t.get_shape() for t in types] == [(6, 7), *[(6,)] * (2 if aux else 1)]
        assert all(t.element_type == types[0].element_type for t in types)  # the min and the max: x's type


@pytest.mark.parametrize(
    ("shape", "axis", "strides", "variant"),
    [
        ((1 << 20,), None, None, "grid_full"),
        ((64, 4096), 1, None, "grid_rows"),
        ((4096, 300), 0, None, "grid_split_det"),
        ((64, 1000, 256), 1, None, "grid_middle"),
        ((30, 40, 50), (0, 2), None, "grid_runs"),
        ((7, 9, 11), 1, (1, 7, 63), "grid_gather"),
    ],
)
def test_each_form_takes_the_variant_of_the_other_fused_kinds(shape, axis, strides, variant):
    """The dispatch picks for the three what it picks for var and argmax of the same
    form; the bulk and cluster variants decline them in their `fused` row."""
    for fn in (*FNS, "var"):
        p = api.plan(fn, shape, "float32", axis)
        if strides is not None:
            p = replace(p, strides=strides)
        table = api.explain(p, "sm_90a")
        assert table.splitlines()[-1] == f"chosen: {variant}", (fn, table)
        if fn == "nansum":
            assert "maps nan_zero (cp.reduce.async.bulk applies no elementwise map)" in table
        elif fn != "var":
            assert f"kind {p.kind} (cp.reduce.async.bulk has no {p.kind})" in table
            assert f"kind {p.kind} (red.async has no {p.kind})" in table
    assert bulkred.aminmax(np.zeros((64, 4096), np.float32), axis=1, explain=True).splitlines()[-1] == "chosen: grid_rows"


def test_an_integer_nansum_is_the_sum_kernel():
    """An integer x has no NaN: bulkred.nansum builds bulkred.sum's op (its PTX differs
    only in the kernel's name)."""
    a = _op(api.module_of(api.plan("nansum", (6, 7), "int32", 1)))
    b = _op(api.module_of(api.plan("sum", (6, 7), "int32", 1)))
    assert str(a) == str(b)


# endregion

# region The kernels on the interpreter, against numpy


def _bits(x: np.ndarray, dtype: str) -> np.ndarray:
    """A host array as the interpreter's buffer (bfloat16: the top half of float32's bits)."""
    if dtype == "bfloat16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return x


def _values(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a


@functools.cache
def _lowered(p: api.Plan):
    """The plan's module after ``lower-tile-reductions`` (once per plan) and its kernel."""
    from xdsl.dialects import func

    from bulkred_dialect.backend_ptx.runtime import lower_tile_module

    m = api.module_of(p)
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    return m, next(op for op in m.ops if isinstance(op, func.FuncOp) and op.sym_name.data == p.kernel_name)


def _run(p: api.Plan, x: np.ndarray) -> list[np.ndarray]:
    """The plan's kernel on the interpreter (``x`` a numpy array, or a view whose
    element strides are ``p.strides``): its outputs (dst, aux) in the result's shape."""
    from bulkred_dialect.interpreter import run_grid
    from bulkred_dialect.ops import dtypes as D

    m, f = _lowered(p)
    types = f.function_type.inputs.data
    n_out = 1 if p.aux is None else 2
    outs = [np.full(t.get_shape(), 0x5A, np.dtype(D.of_ir(t.element_type).numpy)) for t in types[1 : 1 + n_out]]
    ws = [np.zeros(t.get_shape(), np.uint8) for t in types[1 + n_out :]]
    xk = x if p.strides is not None else np.ascontiguousarray(x).reshape(p.shape)
    _, *got = run_grid(m, p.kernel_name, xk, *outs, *ws)
    return [_values(g, p.dst).reshape(p.result_shape) for g in got[:n_out]]


def _reduced(shape: tuple[int, ...], axis) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(len(shape)))
    return tuple(a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,)))


def _place_nans(x: np.ndarray, axis, how: str, rng) -> np.ndarray:
    """``x`` with NaN placed: ``none``; ``random`` (about a fifth); ``first_output`` (every
    element reduced into the first output, so one result is all NaN); ``edges`` (the
    first and last element, where the loads' head and tail are); ``all``; ``inf`` (NaN
    and both infinities: inf - inf is NaN in a nansum, as numpy's and torch's)."""
    x = x.copy()
    if how == "random":
        x[rng.random(x.shape) < 0.2] = np.nan
    elif how == "first_output":
        r = _reduced(x.shape, axis)
        x[tuple(slice(None) if i in r else 0 for i in range(x.ndim))] = np.nan
    elif how == "edges":
        x.reshape(-1)[[0, -1]] = np.nan
    elif how == "all":
        x[...] = np.nan
    elif how == "inf":
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size, 4)] = np.inf
        flat[rng.integers(0, flat.size, 4)] = -np.inf
        flat[rng.integers(0, flat.size, 3)] = np.nan
    return x


def _expected(fn: str, x: np.ndarray, axis) -> list[np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "Mean of empty slice" and inf - inf
        if fn == "nansum":
            return [np.nansum(x.astype(np.float64), axis=axis)]
        if fn == "nanmean":
            return [np.nanmean(x.astype(np.float64), axis=axis)]
        return [np.min(x, axis=axis), np.max(x, axis=axis)]


def _check(fn: str, dtype: str, got: list[np.ndarray], want: list[np.ndarray], what: str) -> None:
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.shape == w.shape, (what, g.shape, w.shape)
        if fn == "aminmax":  # exact: a min and a max are elements of x
            assert np.array_equal(g.astype(np.float64), w.astype(np.float64), equal_nan=True), (what, g, w)
        else:
            tol = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
            assert np.allclose(g.astype(np.float64), w, rtol=tol, atol=tol, equal_nan=True), (what, g, w)


# (shape, axis): one of each canonical form, with a tail where vector loads leave one
FORMS = [
    ((1003,), None),  # whole: grid_full
    ((6, 37), 1),  # rows, odd length: grid_rows with scalar loads
    ((5, 64), -1),  # rows of whole vectors
    ((37, 8), 0),  # columns: grid_split_det
    ((3, 20, 5), 1),  # middle: grid_middle
    ((4, 6, 10), (0, 2)),  # general, runs of 10: grid_runs
    ((2, 3, 4, 3), (0, 2)),  # general: grid_gather
]
PLACEMENTS = ("none", "random", "first_output", "edges", "all", "inf")


@pytest.mark.parametrize("fn", FNS)
@pytest.mark.parametrize(("shape", "axis"), FORMS, ids=[f"{s}-{a}" for s, a in FORMS])
def test_float32_forms_with_nans(fn, shape, axis):
    k = FORMS.index((shape, axis))
    rng = np.random.default_rng(100 * k + FNS.index(fn))
    base = rng.standard_normal(shape).astype(np.float32)
    p = api.plan(fn, shape, "float32", axis)
    # the forms take the six placements in turn (each function's every placement: below)
    how = PLACEMENTS[(k + FNS.index(fn)) % len(PLACEMENTS)]
    x = _place_nans(base, axis, how, rng)
    _check(fn, "float32", _run(p, x), _expected(fn, x, axis), f"{fn} {shape} {axis} {how}")


def test_every_placement_in_one_row_each():
    """All six placements in one module per function (rows): all-NaN rows give 0
    (nansum), NaN (nanmean, aminmax); a NaN anywhere makes aminmax NaN."""
    rng = np.random.default_rng(3)
    rows = [_place_nans(rng.standard_normal((1, 33)).astype(np.float32), 1, how, rng) for how in PLACEMENTS]
    x = np.concatenate(rows)
    got = {fn: _run(api.plan(fn, x.shape, "float32", 1), x) for fn in FNS}
    for fn in FNS:
        _check(fn, "float32", got[fn], _expected(fn, x, 1), fn)
    (s,), (m,), (lo, hi) = got["nansum"], got["nanmean"], got["aminmax"]
    assert s[4] == 0 and np.isnan(m[4]) and np.isnan(lo[4]) and np.isnan(hi[4])  # all NaN
    assert not np.isnan(m[1]) and np.isnan(lo[1]) and np.isnan(hi[1])  # some NaN


@pytest.mark.parametrize("fn", FNS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_other_float_dtypes(fn, dtype):
    rng = np.random.default_rng(11)
    x = _place_nans(rng.standard_normal((5, 40)).astype(np.float32), 1, "random", rng)
    x[2] = np.nan
    if dtype == "bfloat16":
        x = _values(_bits(x, dtype), dtype)  # values bfloat16 can hold
    else:
        x = x.astype(dtype)
    axis = 1 if fn != "aminmax" else None
    p = api.plan(fn, x.shape, dtype, axis)
    _check(fn, dtype, _run(p, _bits(x, dtype)), _expected(fn, x, axis), f"{fn} {dtype} {axis}")


@pytest.mark.parametrize(
    ("dtype", "lo", "hi", "axes"),
    [
        ("int32", -1000, 1000, (1, 0, None)), ("int8", -128, 128, (1,)), ("uint8", 0, 256, (0,)),
        ("int64", -2**62, 2**62, (None,)), ("uint16", 0, 2**16, (1,)), ("bool", 0, 2, (None,)),
    ],
)
def test_integer_and_bool_inputs(dtype, lo, hi, axes):
    """nansum of integers is their sum (int64, uint64 for unsigned, exact), aminmax
    their min and max in their own dtype (signed or unsigned compares)."""
    rng = np.random.default_rng(5)
    x = rng.integers(lo, hi, (7, 33), dtype=np.int64 if dtype != "uint16" else np.uint64).astype(dtype)
    for axis in axes:
        (s,) = _run(api.plan("nansum", x.shape, dtype, axis), x)
        want = np.sum(x, axis=axis, dtype=np.uint64 if dtype.startswith("uint") else np.int64)
        assert s.dtype == want.dtype and np.array_equal(s, want), (dtype, axis)
        lo_, hi_ = _run(api.plan("aminmax", x.shape, dtype, axis), x)
        assert lo_.dtype == x.dtype and np.array_equal(lo_, np.min(x, axis=axis)), (dtype, axis)
        assert np.array_equal(hi_, np.max(x, axis=axis)), (dtype, axis)


VIEWS = [
    # (base shape, the view, axis): read in place through the view's element strides
    ((37, 8), lambda b: b.T, 1),  # transposed: rows of the view are columns of the base
    ((6, 40), lambda b: b[:, ::2], 0),  # every other column
    ((5, 7, 9), lambda b: b.transpose(2, 0, 1), (0, 2)),
    ((5, 7, 9), lambda b: b[:, 1:, ::3], None),
]


# The view is read through its element strides by the load, the same for every function
# (each function's combine goes through every form above): every function on the first
# view, one in turn on each other.
VIEW_CASES = [(fn, 0) for fn in FNS] + [(FNS[i % len(FNS)], i) for i in range(1, len(VIEWS))]


@pytest.mark.parametrize(("fn", "i"), VIEW_CASES, ids=[f"{i}-{fn}" for fn, i in VIEW_CASES])
def test_views_are_read_in_place(fn, i):
    shape, view, axis = VIEWS[i]
    rng = np.random.default_rng(13)
    base = _place_nans(rng.standard_normal(shape).astype(np.float32), None, "random", rng)
    x = view(base)
    strides = api.check_layout(fn, "x", x.shape, tuple(s // x.itemsize for s in x.strides), views=True)
    assert strides is not None
    p = replace(api.plan(fn, x.shape, "float32", axis), strides=strides)
    _check(fn, "float32", _run(p, x), _expected(fn, x, axis), f"{fn} view {x.shape} {strides} {axis}")


def test_a_view_off_its_alignment_takes_grid_gather():
    """The variant of a view at a storage offset off the vector alignment: scalar loads."""
    rng = np.random.default_rng(17)
    x = _place_nans(rng.standard_normal((6, 41)).astype(np.float32), 1, "random", rng)[:, 1:]
    for fn in FNS:
        p = replace(api.plan(fn, x.shape, "float32", 1), strides=(41, 1), variant=api.UNALIGNED_VARIANT)
        assert api.explain(p, "sm_90a").splitlines()[-1] == "chosen: grid_gather"
        _check(fn, "float32", _run(p, x), _expected(fn, x, 1), f"{fn} gather")


def test_the_kinds_and_map_with_other_maps_through_the_builder():
    """What no row builds but the dialect takes: nan_zero before square (a norm that
    skips NaN), nanmean with an epilogue (sqrt of the mean of squares: an RMS that
    skips NaN) and minmax after the prologue abs."""
    from bulkred_dialect import builder as T
    from bulkred_dialect.backend_ptx.runtime import lower_tile_module
    from bulkred_dialect.interpreter import run_grid

    rng = np.random.default_rng(19)
    x = _place_nans(rng.standard_normal((6, 50)).astype(np.float32), 1, "random", rng)
    x[3] = np.nan
    with T.kernel("k") as k:
        xp, n = k.param("x", [6, 50], "float32"), k.param("n", [6], "float32")
        T.reduce("sum", n, xp, axes=[1], prologue=["nan_zero", "square"], epilogue=["sqrt"])
    with T.kernel("k2") as k2:
        xp2, r2 = k2.param("x", [6, 50], "float32"), k2.param("r", [6], "float32")
        T.reduce("nanmean", r2, xp2, axes=[1], prologue=["square"], epilogue=["sqrt"])
    with T.kernel("k3") as k3:
        xp3, lo3, hi3 = (k3.param(name, s, "float32") for name, s in (("x", [6, 50]), ("lo", [6]), ("hi", [6])))
        T.reduce("minmax", lo3, xp3, axes=[1], prologue=["abs"], aux=hi3)
    z = np.zeros(6, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want_rms = np.sqrt(np.nanmean(x.astype(np.float64) ** 2, axis=1))
    for kernel, name, outs, want in (
        (k, "k", 1, [np.sqrt(np.nansum(x.astype(np.float64) ** 2, axis=1))]),
        (k2, "k2", 1, [want_rms]),
        (k3, "k3", 2, [np.min(np.abs(x), axis=1), np.max(np.abs(x), axis=1)]),
    ):
        m = kernel.module()
        lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
        types = next(o for o in m.walk() if o.name == "func.func").function_type.inputs.data
        ws = [np.zeros(t.get_shape(), np.uint8) for t in types[1 + outs :]]
        _, *got = run_grid(m, name, x, *[z.copy() for _ in range(outs)], *ws)
        _check("aminmax" if outs == 2 else "nanmean", "float32", got[:outs], want, name)
    assert np.isnan(got[0][3]) and np.isnan(got[1][3])


# endregion

# region Gradients on the host (the kernel simulated by torch)


def _reference(torch, p: api.Plan, x):
    """The kernel's outputs (dst, aux) of plan ``p`` on the CPU tensor ``x``."""
    dims = p.axes if p.axes is not None else tuple(range(x.dim()))
    if p.fn == "nansum":
        return [torch.nansum(x, dim=dims).to(getattr(torch, api._ROWS[p.dst].torch))]
    if p.fn == "nanmean":
        return [torch.nanmean(x, dim=dims)]
    return [torch.amin(x, dim=dims), torch.amax(x, dim=dims)]


@pytest.fixture
def host_kernels(monkeypatch):
    torch = _torch()
    from bulkred_dialect import reductions
    from bulkred_dialect.backend_ptx import device

    class TorchKernel:
        _fast = None
        signature = None

        def __init__(self, p):
            self.p = p

        def __call__(self, x, *outs, stream=None):
            for o, r in zip(outs, _reference(torch, self.p, x.detach())):
                o.copy_(r.reshape(o.shape))
            return (x, *outs)

    monkeypatch.setattr(api, "kernel_of", lambda p, target: TorchKernel(p))
    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    reductions.forget()
    yield torch
    reductions.forget()


GRAD_FORMS = [((5, 6), (0, 1), False), ((5, 6), (1,), True), ((3, 4, 5), (0, 2), False), ((4, 7), (0,), False)]


def _nan_input(torch, shape, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64)
    x[torch.rand(*shape, generator=g) < 0.25] = math.nan
    x.reshape(-1)[0] = math.nan
    return x


@pytest.mark.parametrize("fn", ["nansum", "nanmean"])
def test_nan_gradients_match_torch(host_kernels, fn):
    """nansum: the gradient where x is not NaN, 0 where it is; nanmean: grad / count
    there (NaN where a result's elements are all NaN, as torch gives)."""
    torch = host_kernels
    ref = getattr(torch, fn)
    for shape, d, keep in GRAD_FORMS:
        base = _nan_input(torch, shape, len(shape) * 10 + len(d))
        if fn == "nanmean" and len(d) == 1:
            base.select(d[0], 0).fill_(math.nan)  # one output whose elements are all NaN
        a, b = base.clone().requires_grad_(True), base.clone().requires_grad_(True)
        axis = None if len(d) == len(shape) and not keep else d
        y1 = getattr(bulkred, fn)(a, axis=axis, keepdims=keep)
        y2 = ref(b, dim=d, keepdim=keep)
        assert y1.requires_grad and y1.shape == y2.shape
        torch.testing.assert_close(y1, y2, equal_nan=True)
        w = torch.randn(y2.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        (y1 * w).sum().backward()
        (y2 * w).sum().backward()
        torch.testing.assert_close(a.grad, b.grad, equal_nan=True, msg=f"{fn} {shape} {d} {keep}")
        assert torch.all(a.grad[base.isnan() & ~a.grad.isnan()] == 0)


def test_aminmax_gradients_match_torch(host_kernels):
    """Each result's gradient split among its ties (torch.aminmax's backward), both
    results or one; a tuple of axes as torch.amin and torch.amax give it."""
    torch = host_kernels
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0], [1.0, math.nan, 2.0, 1.0]], dtype=torch.float64)
    wmin, wmax = torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64), torch.tensor([2.0, 20.0, 200.0], dtype=torch.float64)
    for dim, keep in ((1, False), (1, True), (0, False), (None, False)):
        a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        r1 = bulkred.aminmax(a, axis=dim, keepdims=keep)
        r2 = torch.aminmax(b, dim=dim, keepdim=keep)
        assert r1._fields == ("min", "max") and r1.min.requires_grad and r1.max.requires_grad
        torch.testing.assert_close(tuple(r1), tuple(r2), equal_nan=True)
        if dim == 1:
            shape = (3, 1) if keep else (3,)
            loss1 = (r1.min * wmin.reshape(shape)).sum() + (r1.max * wmax.reshape(shape)).sum()
            loss2 = (r2.min * wmin.reshape(shape)).sum() + (r2.max * wmax.reshape(shape)).sum()
        else:
            loss1, loss2 = (r1.min * 3).sum() + r1.max.sum(), (r2.min * 3).sum() + r2.max.sum()
        loss1.backward()
        loss2.backward()
        torch.testing.assert_close(a.grad, b.grad, equal_nan=True, msg=f"dim={dim} keep={keep}")
    assert x.new_tensor([[1.0, 1.0, 1.0, 0.0], [7.5, 7.5, 7.5, 7.5]]).equal(
        _grad_of(torch, lambda t: (bulkred.aminmax(t, axis=1).min * wmin[:2]).sum() + (bulkred.aminmax(t, axis=1).max * wmax[:2]).sum(), x[:2])
    )  # the min's 1 to the one 1, the max's 2 split over the two 3s; 10 and 20 over four 5s
    only_min = _grad_of(torch, lambda t: bulkred.aminmax(t, axis=1).min.sum(), x[:2])
    assert only_min.tolist() == [[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]]  # the max takes no part
    g = torch.Generator().manual_seed(4)
    y = torch.randn(3, 4, 5, generator=g, dtype=torch.float64)
    a, b = y.clone().requires_grad_(True), y.clone().requires_grad_(True)
    lo, hi = bulkred.aminmax(a, axis=(0, 2))
    ((lo * 2).sum() + hi.sum()).backward()
    ((torch.amin(b, dim=(0, 2)) * 2).sum() + torch.amax(b, dim=(0, 2)).sum()).backward()
    torch.testing.assert_close(a.grad, b.grad)


def _grad_of(torch, f, x):
    t = x.clone().requires_grad_(True)
    f(t).backward()
    return t.grad


def test_gradcheck_and_double_backward(host_kernels):
    torch = host_kernels
    g = torch.Generator().manual_seed(6)
    x = (torch.randperm(30, generator=g).double().reshape(5, 6) / 7 + 0.5).requires_grad_(True)  # no ties
    for axis in (None, 1):
        assert torch.autograd.gradcheck(lambda t, axis=axis: bulkred.nansum(t, axis=axis), (x,))
        assert torch.autograd.gradcheck(lambda t, axis=axis: bulkred.nanmean(t, axis=axis), (x,))
        assert torch.autograd.gradcheck(lambda t, axis=axis: tuple(bulkred.aminmax(t, axis=axis)), (x,))
    assert torch.autograd.gradgradcheck(lambda t: bulkred.nanmean(t, axis=0), (x,))
    assert torch.autograd.gradgradcheck(lambda t: bulkred.nansum(t, axis=1), (x,))


def test_integer_nansum_and_aminmax_results_do_not_require_grad(host_kernels):
    torch = host_kernels
    x = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    s = bulkred.nansum(x, axis=1)
    assert s.dtype == torch.int64 and s.tolist() == [6, 22, 38] and not s.requires_grad
    lo, hi = bulkred.aminmax(x)
    assert (int(lo), int(hi)) == (0, 11) and lo.dtype == torch.int32


def test_the_torch_operators(host_kernels):
    """torch.ops.bulkred.<fn> of each row: its schema's arguments, fake implementations
    (shapes and dtypes without a kernel) and the autograd registration (opcheck)."""
    torch = host_kernels
    x = _nan_input(torch, (4, 6), 9)
    lo, hi = torch.ops.bulkred.aminmax(x, [1], False)
    torch.testing.assert_close((lo, hi), tuple(torch.aminmax(x, dim=1)), equal_nan=True)
    torch.testing.assert_close(torch.ops.bulkred.nansum(x, None, False, None), torch.nansum(x))
    torch.testing.assert_close(torch.ops.bulkred.nanmean(x, [0], True, None), torch.nanmean(x, 0, keepdim=True), equal_nan=True)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        f = torch.empty(4, 6, dtype=torch.float16)
        lo, hi = torch.ops.bulkred.aminmax(f, [0], True)
        assert lo.shape == hi.shape == (1, 6) and lo.dtype == hi.dtype == torch.float16
        assert torch.ops.bulkred.nanmean(f, None, False, torch.float32).dtype == torch.float32
        assert torch.ops.bulkred.nansum(f.to(torch.int8), [1], False, None).dtype == torch.int64
    clean = x.nan_to_num(0.5).requires_grad_(True)
    for op, args in (
        (torch.ops.bulkred.nansum.default, (clean, [1], False, None)),
        (torch.ops.bulkred.nanmean.default, (clean, [0, 1], True, None)),
        (torch.ops.bulkred.aminmax.default, (clean, [1], False)),
    ):
        torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor", "test_autograd_registration"))


# endregion
