"""The fused reductions of the API (issue 17 §2, §3): ``bulkred.mean``, ``var``, ``std``,
``var_mean``, ``argmax``, ``argmin``, ``vector_norm`` and ``logsumexp`` without a GPU:
their signatures and exports, the plans (the ``bulkred.reduce`` kind, prologue,
epilogue, correction and aux output each becomes; shapes and dtypes), the one-line
refusals before any launch, the modules they build (verified), explain tables, the
calls on numpy and torch arrays through a simulated kernel (out=, keepdims, strided
views, the recorded short path), the torch custom operators (fake implementations,
opcheck, torch.compile(fullgraph=True)), docs/fused.md's blocks and examples/fused.py;
and the fused cases of tests/random_reductions.py through the lowering and the CPU
interpreter against numpy. tests/gpu/test_fused_gpu.py runs them on the GPU."""

from __future__ import annotations

import collections
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api
from bulkred_dialect.functions import FUNCTIONS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import random_reductions as R

ROOT = Path(__file__).resolve().parents[1]
FUSED = ("mean", "var", "std", "var_mean", "argmax", "argmin", "vector_norm", "logsumexp")
IN_PROGRESS = "the fused lowering in progress"
NO_VARIANT = "no lowering variant applies"


def _torch():
    return pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for these tests)")


# region Signatures and exports


def test_fused_functions_are_exported():
    from bulkred_dialect import reductions

    assert set(FUSED) <= set(reductions.PUBLIC)
    for fn in FUSED:
        assert getattr(bulkred, fn) is reductions.PUBLIC[fn]
        assert fn in dir(bulkred)
        f = getattr(bulkred, fn)
        assert f.__name__ == fn and f.__module__ == "bulkred_dialect" and f.__doc__


def test_package_import_stays_light():
    code = (
        "import sys, bulkred_dialect as b\n"
        "f = b.var_mean\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('xdsl', 'cuda', 'torch', 'cupy'))\n"
        "assert heavy == [], heavy\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr


def test_signatures():
    import inspect

    def params(fn):
        return [(p.name, p.kind.name, p.default) for p in inspect.signature(fn).parameters.values()]

    x = ("x", "POSITIONAL_ONLY", inspect.Parameter.empty)
    kw = lambda name, d: (name, "KEYWORD_ONLY", d)  # noqa: E731
    tail = [kw("out", None), kw("stream", None), kw("explain", False)]
    assert params(bulkred.mean) == [x, kw("axis", None), kw("keepdims", False), kw("dtype", None), *tail]
    for fn in (bulkred.var, bulkred.std, bulkred.var_mean):
        assert params(fn) == [x, kw("axis", None), kw("correction", 0), kw("keepdims", False), kw("dtype", None), *tail]
    for fn in (bulkred.argmax, bulkred.argmin, bulkred.logsumexp):
        assert params(fn) == [x, kw("axis", None), kw("keepdims", False), *tail]
    assert params(bulkred.vector_norm) == [
        x, kw("ord", 2), kw("axis", None), kw("keepdims", False), kw("dtype", None), *tail
    ]
    with pytest.raises(TypeError):
        bulkred.mean(np.zeros(4, np.float32), 0)  # axis is keyword-only


# endregion

# region Plans


@pytest.mark.parametrize(
    "fn, shape, src, kw, kind, prologue, epilogue, dst, result_shape, kernel_shape",
    [
        ("mean", (4, 5), "float32", {"axis": 1}, "sum", (), ("div_count",), "float32", (4,), (4,)),
        ("mean", (4, 5), "float16", {}, "sum", (), ("div_count",), "float16", (), (1,)),
        ("mean", (4, 5), "bfloat16", {"dtype": "float32"}, "sum", (), ("div_count",), "float32", (), (1,)),
        ("mean", (4, 5, 6), "float32", {"axis": (0, 2), "keepdims": True}, "sum", (), ("div_count",), "float32", (1, 5, 1), (5,)),
        ("var", (4, 5), "float32", {"axis": -1}, "var", (), (), "float32", (4,), (4,)),
        ("std", (4, 5), "float64", {"axis": 0}, "var", (), ("sqrt",), "float64", (5,), (5,)),
        ("var_mean", (4, 5), "float16", {"axis": 1, "keepdims": True}, "var", (), (), "float16", (4, 1), (4,)),
        ("argmax", (4, 5), "float32", {}, "argmax", (), (), "int64", (), (1,)),
        ("argmax", (4, 5), "int32", {"axis": 1}, "argmax", (), (), "int64", (4,), (4,)),
        ("argmin", (4, 5), "bfloat16", {"axis": 0, "keepdims": True}, "argmin", (), (), "int64", (1, 5), (5,)),
        ("argmax", (4, 5), "float32", {"keepdims": True}, "argmax", (), (), "int64", (1, 1), (1,)),
        ("vector_norm", (4, 5), "float32", {}, "sum", ("square",), ("sqrt",), "float32", (), (1,)),
        ("vector_norm", (4, 5), "float32", {"ord": 1, "axis": 1}, "sum", ("abs",), (), "float32", (4,), (4,)),
        ("vector_norm", (4, 5), "float16", {"ord": math.inf}, "max", ("abs",), (), "float16", (), (1,)),
        ("vector_norm", (4, 5), "float32", {"ord": -math.inf}, "min", ("abs",), (), "float32", (), (1,)),
        ("vector_norm", (4, 5), "float32", {"ord": 3.0}, "sum", (("pow", 3.0),), (("pow", 1 / 3),), "float32", (), (1,)),
        ("vector_norm", (4, 5), "float32", {"ord": -0.5}, "sum", (("pow", -0.5),), (("pow", -2.0),), "float32", (), (1,)),
        ("vector_norm", (4, 5), "float16", {"dtype": "float32"}, "sum", ("square",), ("sqrt",), "float32", (), (1,)),
        ("logsumexp", (4, 5), "float32", {"axis": (0, 1)}, "logsumexp", (), (), "float32", (), (1,)),
        ("logsumexp", (), "float32", {}, "logsumexp", (), (), "float32", (), (1,)),
    ],
)
def test_plan(fn, shape, src, kw, kind, prologue, epilogue, dst, result_shape, kernel_shape):
    p = api.plan(fn, shape, src, **kw)
    assert (p.kind, p.prologue, p.epilogue, p.dst) == (kind, prologue, epilogue, dst)
    assert (p.result_shape, p.kernel_shape, p.fn) == (result_shape, kernel_shape, fn)
    assert p.launches and not p.ignore_nan
    assert p.correction == (0 if fn in ("var", "std", "var_mean") else None)
    assert p.aux == (dst if fn == "var_mean" else None)


def test_plan_correction():
    assert api.plan("var", (8,), "float32", correction=1).correction == 1
    assert api.plan("std", (8,), "float32", correction=np.int64(2)).correction == 2
    assert api.plan("var_mean", (8,), "float32", correction=1).correction == 1
    with pytest.raises(api.ReductionError, match=r"^bulkred.mean: 'correction' is not taken by mean \(its options: dtype\)$"):
        api.plan("mean", (8,), "float32", correction=5)


@pytest.mark.parametrize(
    "fn, shape, kw, fill",
    [
        ("mean", (0, 3), {"axis": 0}, "nan"),
        ("var", (0, 3), {"axis": 0}, "nan"),
        ("std", (3, 0), {}, "nan"),
        ("var_mean", (0,), {}, "nan"),
        ("logsumexp", (0, 3), {"axis": 0}, -math.inf),
        ("vector_norm", (0, 3), {"axis": 0}, 0.0),
        ("vector_norm", (0, 3), {"axis": 0, "ord": 3.0}, 0.0),
        ("vector_norm", (0, 3), {"axis": 0, "ord": 1}, 0.0),
    ],
)
def test_empty_reductions_fill_without_a_kernel(fn, shape, kw, fill):
    """torch's values: mean/var/std of nothing NaN, logsumexp -inf, a p > 0 norm 0."""
    p = api.plan(fn, shape, "float32", **kw)
    assert not p.launches
    assert (math.isnan(p.fill) if fill == "nan" else p.fill == fill)
    got = getattr(bulkred, fn)(np.zeros(shape, np.float32), **kw)
    for g in got if fn == "var_mean" else (got,):
        assert isinstance(g, np.ndarray) and g.shape == p.result_shape and g.dtype == np.float32
        assert np.all(np.isnan(g)) if fill == "nan" else np.all(g == fill)


def test_empty_results_need_no_kernel():
    """A result with no elements (a kept extent 0) over a non-empty axis: no kernel."""
    got = bulkred.argmax(np.zeros((0, 4), np.float32), axis=1)
    assert got.shape == (0,) and got.dtype == np.int64
    v, m = bulkred.var_mean(np.zeros((0, 4), np.float32), axis=1, keepdims=True)
    assert v.shape == m.shape == (0, 1)
    assert bulkred.mean(np.zeros((0, 4), np.float32), axis=1, explain=True) == "no kernel: the result has shape (0,)"


REFUSALS = [
    # (fn, shape, dtype, kw, message)
    ("mean", (4,), "int32", {}, "bulkred.mean: expected a floating-point input (float16, bfloat16, float32, float64), got int32 (as torch's mean); cast it first"),
    ("mean", (4,), "int32", {"dtype": "float32"}, "expected a floating-point input"),
    ("var", (4,), "int64", {}, "bulkred.var: expected a floating-point input"),
    ("std", (4,), "uint8", {}, "bulkred.std: expected a floating-point input"),
    ("var_mean", (4,), "int16", {}, "bulkred.var_mean: expected a floating-point input"),
    ("vector_norm", (4,), "int8", {}, "bulkred.vector_norm: expected a floating-point input"),
    ("mean", (4,), "bool", {}, "bulkred.mean: expected a floating-point input"),
    ("argmax", (4, 5), "float32", {"axis": (0, 1)}, "bulkred.argmax: 'axis' must be an int or None (one axis, as numpy's and torch's argmax take), got (0, 1)"),
    ("argmin", (4, 5), "float32", {"axis": (1,)}, "bulkred.argmin: 'axis' must be an int or None"),
    ("argmax", (4, 5), "float32", {"axis": True}, "'axis' must be an int or None"),
    ("argmax", (4, 5), "float32", {"axis": 2}, "bulkred.argmax: axis 2 is out of range for a 2-D array"),
    ("argmax", (4, 0), "float32", {"axis": 1}, "bulkred.argmax: axis 1 of an array of shape (4, 0) has no elements, and argmax has no identity"),
    ("argmin", (0,), "int32", {}, "bulkred.argmin: the array of an array of shape (0,) has no elements"),
    ("vector_norm", (4,), "float32", {"ord": 1e31}, "bulkred.vector_norm: 'ord' must be inf, -inf or a number of magnitude within [1e-30, 1e30], got 1e+31"),
    ("vector_norm", (4,), "float32", {"ord": "fro"}, "bulkred.vector_norm: 'ord' must be a number (an int, a float, inf or -inf), got 'fro'"),
    ("vector_norm", (4,), "float32", {"ord": True}, "'ord' must be a number"),
    ("vector_norm", (4,), "float32", {"ord": math.nan}, "'ord' must be a number, got nan"),
    ("vector_norm", (0, 3), "float32", {"ord": math.inf, "axis": 0}, "bulkred.vector_norm: axis 0 of an array of shape (0, 3) has no elements, and the inf norm has no identity"),
    ("vector_norm", (0, 3), "float32", {"ord": -1, "axis": 0}, "the -1 norm has no identity"),
    ("var", (4,), "float32", {"correction": "1"}, "bulkred.var: 'correction' must be a number (an int or a float), got '1'"),
    ("std", (4,), "float32", {"correction": math.nan}, "bulkred.std: 'correction' must be a finite number, got nan"),
    ("var_mean", (4,), "float32", {"correction": True}, "'correction' must be a number (an int or a float), got True"),
    ("mean", (4,), "float32", {"dtype": "int32"}, "bulkred.mean: 'dtype' must be a floating-point type (float16, bfloat16, float32, float64), got int32"),
    ("mean", (4,), "float32", {"keepdims": 1}, "bulkred.mean: 'keepdims' must be a bool, got 1"),
    ("var", (4, 5), "float32", {"axis": (1, -1)}, "bulkred.var: axis (1, -1) names an axis twice"),
    ("logsumexp", (4, 5), "float32", {"axis": ()}, "bulkred.logsumexp: axis=() reduces nothing"),
]


@pytest.mark.parametrize("fn, shape, dtype, kw, message", REFUSALS, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSALS)])
def test_refusals_are_one_line_before_any_launch(monkeypatch, fn, shape, dtype, kw, message):
    def no_compile(*a, **k):  # pragma: no cover - a refusal builds nothing
        raise AssertionError("compiled")

    monkeypatch.setattr(api, "kernel_of", no_compile)
    monkeypatch.setattr(api, "module_of", no_compile)
    with pytest.raises(api.ReductionError) as e:
        api.plan(fn, shape, dtype, **kw)
    assert message in str(e.value) and "\n" not in str(e.value)
    if dtype != "bfloat16":
        with pytest.raises(api.ReductionError, match=re.escape(message)):
            getattr(bulkred, fn)(np.zeros(shape, dtype), **kw)
        with pytest.raises(api.ReductionError, match=re.escape(message)):  # explain refuses it too
            getattr(bulkred, fn)(np.zeros(shape, dtype), explain=True, **kw)


def test_argument_refusals_of_the_calls():
    x = np.zeros((4, 5), np.float32)
    with pytest.raises(api.ReductionError, match=r"bulkred.argmax: 'dtype' is not taken by argmax"):
        api.plan("argmax", (4,), "float32", dtype="float32")
    with pytest.raises(api.ReductionError, match=r"bulkred.argmax: 'out' has dtype float32, expected int64"):
        bulkred.argmax(x, out=np.zeros((), np.float32))
    with pytest.raises(api.ReductionError, match=r"bulkred.mean: 'out' has shape \(5,\), expected \(4,\)"):
        bulkred.mean(x, axis=1, out=np.zeros(5, np.float32))
    with pytest.raises(api.ReductionError, match=r"bulkred.var_mean: 'out' must be a pair of arrays \(var, mean\)"):
        bulkred.var_mean(x, out=np.zeros((), np.float32))
    with pytest.raises(api.ReductionError, match=r"'out' has arrays of dtypes float32 and float64"):
        bulkred.var_mean(x, out=(np.zeros((), np.float32), np.zeros((), np.float64)))
    with pytest.raises(api.ReductionError, match=r"unknown reduction 'median'"):
        api.plan("median", (4,), "float32")


def test_the_plans_agree_with_the_random_cases_expectations():
    """For every fused case the generator draws (seeded), the plan's result shape and
    dtype are what the GPU test expects, and it refuses exactly the cases it must."""
    wrong = []
    for c in R.cases(17, 1500, R.fused_config()):
        try:
            opts = {"correction": 0 if c.correction is None else c.correction, "ord": 2 if c.ord is None else c.ord}
            takes = FUNCTIONS[c.kind].option_names
            p = api.plan(
                c.kind, c.shape, c.dtype, c.axis, c.keepdims, c.dtype_arg, **{k: v for k, v in opts.items() if k in takes}
            )
        except api.ReductionError as e:
            if not c.expect_refusal:
                wrong.append((c.label(), f"refused: {e}"))
            continue
        if c.expect_refusal:
            wrong.append((c.label(), "not refused"))
        elif p.result_shape != c.out_shape or p.dst != c.out_dtype:
            wrong.append((c.label(), f"planned {p.dst}{list(p.result_shape)}"))
    assert not wrong, wrong[:10]


# endregion

# region Modules and explain


def _reduce_op(m):
    return next(o for o in m.walk() if o.name == "bulkred.reduce")


def _maps(op, field):
    return [(a.fn.data, a.value) if a.value is not None else a.fn.data for a in op.maps(field)]


@pytest.mark.parametrize(
    "fn, kw, kind, prologue, epilogue, correction, aux",
    [
        ("mean", {"axis": 1}, "sum", [], ["div_count"], None, False),
        ("var", {"axis": 1, "correction": 1}, "var", [], [], 1, False),
        ("std", {}, "var", [], ["sqrt"], 0, False),
        ("var_mean", {"axis": 0}, "var", [], [], 0, True),
        ("argmax", {"axis": 1}, "argmax", [], [], None, False),
        ("argmin", {}, "argmin", [], [], None, False),
        ("vector_norm", {}, "sum", ["square"], ["sqrt"], None, False),
        ("vector_norm", {"ord": 1}, "sum", ["abs"], [], None, False),
        ("vector_norm", {"ord": math.inf}, "max", ["abs"], [], None, False),
        ("vector_norm", {"ord": -math.inf}, "min", ["abs"], [], None, False),
        ("vector_norm", {"ord": 3.0}, "sum", [("pow", 3.0)], [("pow", 1 / 3)], None, False),
        ("logsumexp", {"axis": (0, 1)}, "logsumexp", [], [], None, False),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_the_module_verifies_and_carries_the_fused_op(fn, kw, kind, prologue, epilogue, correction, aux, dtype):
    p = api.plan(fn, (6, 7), dtype, **kw)
    m = api.module_of(p)
    m.verify()
    op = _reduce_op(m)
    assert op.kind.data == kind and op.scope.data == "grid"
    assert _maps(op, "prologue") == prologue and _maps(op, "epilogue") == epilogue
    assert (None if op.correction is None else op.correction.value.data) == correction
    assert (op.aux is not None) == aux
    assert op.ignore_nan is None  # NaN propagates (torch's rule)
    f = next(o for o in m.walk() if o.name == "func.func")
    assert f.sym_name.data == f"bulkred_{fn}"
    types = f.function_type.inputs.data
    assert [t.get_shape() for t in types] == [(6, 7), *[p.kernel_shape] * (2 if aux else 1)]
    assert types[1].element_type == (op.dst.type.element_type)
    assert str(types[1].element_type) == ("i64" if kind.startswith("arg") else str(types[0].element_type))
    if aux:
        assert types[2].element_type == types[1].element_type  # var's mean: dst's type


def test_a_strided_view_builds_a_strided_module():
    from dataclasses import replace

    p = replace(api.plan("var_mean", (4, 6), "float32", axis=0), strides=(1, 4))
    m = api.module_of(p)
    m.verify()
    assert "strided<[1, 4]>" in str(m) and _reduce_op(m).aux is not None


def test_the_other_kinds_modules_are_unchanged():
    """reduction_module without the fused options builds what it built before issue 17
    (the text the previous api.py gives, kept in git), so their PTX is unchanged."""
    import importlib.util

    old = subprocess.run(["git", "show", "3ad3552:bulkred_dialect/api.py"], cwd=ROOT, capture_output=True, text=True)
    if old.returncode != 0:
        pytest.skip("no git history here")
    spec = importlib.util.spec_from_loader("bulkred_old_api", loader=None)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bulkred_old_api"] = mod  # for its dataclasses
    try:
        exec(compile(old.stdout, "old_api.py", "exec"), mod.__dict__)
    finally:
        del sys.modules["bulkred_old_api"]
    for kind, shape, dtype, axis, kw in [
        ("sum", (100,), "float32", None, {}), ("max", (7, 33), "float16", 1, {}), ("min", (3, 5, 7), "int32", (0, 2), {}),
        ("sum", (64, 100), "int8", 0, {"out_dtype": "int64"}), ("max", (8, 9), "float32", None, {"ignore_nan": True}),
        ("xor", (33,), "int32", None, {}), ("sum", (4, 6), "float32", 0, {"strides": (1, 4)}),
    ]:
        a = str(mod.reduction_module(kind, shape, dtype, axis, f"bulkred_{kind}", **kw))
        b = str(api.reduction_module(kind, shape, dtype, axis, f"bulkred_{kind}", **kw))
        assert a == b
        old_plan = mod.plan(kind, shape, dtype, axis)
        new_plan = api.plan(kind, shape, dtype, axis)
        assert str(mod._module(old_plan)) == str(api.module_of(new_plan))


@pytest.mark.parametrize("fn", FUSED)
def test_explain_returns_the_dispatch_table(fn):
    x = np.zeros((64, 1000), np.float32)
    table = getattr(bulkred, fn)(x, axis=1, explain=True)
    assert isinstance(table, str) and "priority" in table
    assert table.splitlines()[-1].startswith(("chosen: ", "no variant"))


# endregion

# region Calls on a simulated kernel


def fused_numpy(p, a: np.ndarray):
    """What the fused kernel of plan ``p`` computes (on the host, float64): the op's
    kind, prologue and epilogue read from the plan. Returns (out, aux or None)."""
    axes = tuple(range(a.ndim)) if p.axes is None else p.axes
    x = a.astype(np.float64) if a.dtype.kind == "f" else a
    n = math.prod(a.shape[i] for i in axes)
    with np.errstate(all="ignore"):
        for m in p.prologue:
            x = np.abs(x) if m == "abs" else x * x if m == "square" else np.abs(x) ** m[1]
        aux = None
        if p.kind in ("argmax", "argmin"):
            kept = [i for i in range(a.ndim) if i not in axes]
            flat = np.transpose(x, kept + list(axes)).reshape(*[a.shape[i] for i in kept], -1)
            idx = np.argmax(flat, -1) if p.kind == "argmax" else np.argmin(flat, -1)
            if flat.dtype.kind == "f":
                nan = np.isnan(flat)
                idx = np.where(nan.any(-1), np.argmax(nan, -1), idx)
            r = idx
        elif p.kind == "var":
            mean = x.mean(axis=axes)
            r = ((x - x.mean(axis=axes, keepdims=True)) ** 2).sum(axis=axes) / max(n - p.correction, 0)
            aux = mean if p.aux else None
        elif p.kind == "logsumexp":
            r = np.log(np.exp(x).sum(axis=axes))
        else:
            r = {"sum": np.sum, "max": np.max, "min": np.min}[p.kind](x, axis=axes)
        for m in p.epilogue:
            r = r / n if m == "div_count" else np.sqrt(r) if m == "sqrt" else np.log(r) if m == "log" else r ** m[1]
    shape = p.kernel_shape
    return np.asarray(r).reshape(shape), None if aux is None else np.asarray(aux).reshape(shape)


class FusedFakeKernel:
    """The fused kernel of a plan, on the host (:func:`fused_numpy`): writes ``out`` (and
    ``aux``) in place as the GPU does; dense arrays, or the plan's strided view."""

    _fast = None

    def __init__(self, p):
        self.p, self.calls = p, 0

    def __call__(self, x, out, aux=None, stream=None):
        from bulkred_dialect.errors import SignatureError

        torch = sys.modules.get("torch")
        is_torch = torch is not None and isinstance(x, torch.Tensor)
        assert (aux is not None) == (self.p.aux is not None)
        for a in (x, out, *([aux] if aux is not None else [])):
            view = a is x and self.p.strides is not None
            if is_torch and view and any(d > 1 and s != w for d, s, w in zip(a.shape, a.stride(), self.p.strides)):
                raise SignatureError(f"expected a view with strides {self.p.strides}")
            if is_torch and not view and not a.is_contiguous():
                raise SignatureError("expected a contiguous row-major array")
        assert tuple(x.shape) == self.p.shape and tuple(out.shape) == self.p.kernel_shape, (x.shape, out.shape, self.p)
        self.calls += 1
        host = x.float().numpy() if is_torch and x.dtype == torch.bfloat16 else x.numpy() if is_torch else np.asarray(x)
        r, m = fused_numpy(self.p, host)
        outs = [(out, r), *([(aux, m)] if aux is not None else [])]
        if is_torch:
            for o, v in outs:
                o.copy_(torch.from_numpy(np.ascontiguousarray(v)).to(o.dtype))
            return (x, *(o for o, _ in outs))
        return (x, *(np.array(v).astype(o.dtype) for o, v in outs))


@pytest.fixture
def fake(monkeypatch):
    """api.kernel_of gives a :class:`FusedFakeKernel`; the GPU is an sm_90a."""
    from bulkred_dialect import reductions
    from bulkred_dialect.backend_ptx import device

    kernels = []

    def compile_(p, target):
        assert target == "sm_90a"
        k = FusedFakeKernel(p)
        kernels.append(k)
        assert p.kernel_name == f"bulkred_{p.fn}"
        return k

    monkeypatch.setattr(api, "kernel_of", compile_)
    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    reductions.forget()
    return kernels


def test_numpy_calls_on_a_simulated_kernel(fake):
    rng = np.random.default_rng(17)
    a = rng.standard_normal((4, 5, 6)).astype(np.float32)
    m = bulkred.mean(a, axis=(0, 2), keepdims=True)
    assert m.shape == (1, 5, 1) and m.dtype == np.float32 and np.allclose(m, a.mean(axis=(0, 2), keepdims=True), rtol=1e-5)
    v = bulkred.var(a, axis=1, correction=1)
    assert v.shape == (4, 6) and np.allclose(v, a.var(axis=1, ddof=1), rtol=1e-5)
    s = bulkred.std(a)
    assert s.shape == () and np.isclose(s, a.std(), rtol=1e-5)
    vv, mm = bulkred.var_mean(a, axis=-1)
    assert vv.shape == mm.shape == (4, 5) and np.allclose(vv, a.var(axis=-1), rtol=1e-5) and np.allclose(mm, a.mean(axis=-1), rtol=1e-5)
    i = bulkred.argmax(a)
    assert i.dtype == np.int64 and i.shape == () and int(i) == int(np.argmax(a))
    j = bulkred.argmin(a, axis=1, keepdims=True)
    assert j.shape == (4, 1, 6) and np.array_equal(j, np.argmin(a, axis=1, keepdims=True))
    assert np.isclose(bulkred.vector_norm(a), np.linalg.norm(a.reshape(-1)), rtol=1e-5)
    assert np.isclose(bulkred.vector_norm(a, ord=math.inf), np.abs(a).max())
    assert np.isclose(bulkred.vector_norm(a, ord=3.0), (np.abs(a.astype(np.float64)) ** 3).sum() ** (1 / 3), rtol=1e-5)
    lse = bulkred.logsumexp(a, axis=0)
    assert lse.shape == (5, 6) and np.allclose(lse, np.log(np.exp(a.astype(np.float64)).sum(axis=0)), rtol=1e-5)
    out = np.zeros(5, np.float32)
    assert bulkred.mean(a, axis=(0, 2), out=out) is out and np.allclose(out, m.reshape(5))
    pair = (np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert bulkred.var_mean(a[:, :, 0], axis=1, correction=1, out=pair) is pair
    assert np.allclose(pair[0], a[:, :, 0].var(axis=1, ddof=1), rtol=1e-5)
    assert [k.p.fn for k in fake] == ["mean", "var", "std", "var_mean", "argmax", "argmin", "vector_norm", "vector_norm",
                                      "vector_norm", "logsumexp", "mean", "var_mean"]


def test_torch_calls_on_a_simulated_kernel(fake):
    torch = _torch()
    x = torch.randn(4, 5, 6, generator=torch.Generator().manual_seed(17))
    y = bulkred.mean(x)
    assert isinstance(y, torch.Tensor) and y.shape == () and torch.allclose(y, x.mean())
    assert y._base is not None and y._base.shape == (1,)  # a view of the kernel's destination, no copy
    v, m = bulkred.var_mean(x, axis=(0, 2), correction=1, keepdims=True)
    tv, tm = torch.var_mean(x, dim=(0, 2), correction=1, keepdim=True)
    assert v.shape == tv.shape and torch.allclose(v, tv, rtol=1e-5) and torch.allclose(m, tm, rtol=1e-5)
    i = bulkred.argmax(x, axis=1)
    assert i.dtype == torch.int64 and torch.equal(i, torch.argmax(x, dim=1))
    assert torch.equal(bulkred.argmin(x, keepdims=True), torch.argmin(x, keepdim=True))
    n = bulkred.vector_norm(x, ord=1, axis=-1)
    assert torch.allclose(n, torch.linalg.vector_norm(x, ord=1, dim=-1), rtol=1e-5)
    s = bulkred.std(x.half(), axis=0)
    assert s.dtype == torch.float16 and s.shape == (5, 6)
    assert bulkred.mean(x.to(torch.bfloat16), dtype=torch.float32).dtype == torch.float32
    assert torch.allclose(bulkred.logsumexp(x, axis=2), torch.logsumexp(x, dim=2), rtol=1e-5)
    out = torch.empty(4, 6)
    assert bulkred.var(x, axis=1, out=out) is out and torch.allclose(out, x.var(dim=1, correction=0), rtol=1e-5)
    # strided views: a module for the view's strides
    t = x[:, :, 0].t()
    assert torch.allclose(bulkred.var(t, axis=0), t.var(dim=0, correction=0), rtol=1e-5) and fake[-1].p.strides == (6, 30)
    assert torch.equal(bulkred.argmax(x[:, ::2], axis=1), torch.argmax(x[:, ::2], dim=1)) and fake[-1].p.strides == (30, 12, 1)
    with pytest.raises(api.ReductionError, match="'out' is a strided view"):
        bulkred.mean(x, axis=1, out=torch.zeros(4, 12)[:, ::2])
    with pytest.raises(api.ReductionError, match="bulkred.var: expected a floating-point input"):
        bulkred.var(x.int())


def test_the_recorded_short_path(fake):
    """A call like a recorded one goes straight to its kernel (no new plan or module);
    one that differs in a checked way (correction, ord, a view) is checked again."""
    torch = _torch()
    x = torch.randn(6, 4)
    a = bulkred.var(x, axis=0)
    assert len(fake) == 1 and len([k for k in api.CALLS if k[0] == "var"]) == 1
    b = bulkred.var(x, axis=0)
    assert len(fake) == 1 and fake[0].calls == 2 and torch.equal(a, b)
    c = bulkred.var(x, axis=0, correction=1)
    assert len(fake) == 2 and torch.allclose(c, x.var(dim=0), rtol=1e-5)
    bulkred.var(x, axis=0, correction=1)
    assert fake[1].calls == 2
    with pytest.raises(api.ReductionError, match="'correction' must be a number .an int or a float., got True"):
        bulkred.var(x, axis=0, correction=True)  # True == 1 would find the recorded correction=1
    bulkred.vector_norm(x, ord=1)
    with pytest.raises(api.ReductionError, match="'ord' must be a number"):
        bulkred.vector_norm(x, ord=True)
    v1, m1 = bulkred.var_mean(x, axis=1)
    v2, m2 = bulkred.var_mean(x, axis=1)  # recorded: two new tensors
    assert torch.equal(v1, v2) and torch.equal(m1, m2) and v1.data_ptr() != v2.data_ptr() and m2.shape == (6,)
    t = torch.randn(4, 6).t()  # same shape and dtype as x, strided: the recorded kernel refuses it
    assert torch.allclose(bulkred.var(t, axis=0), t.var(dim=0, correction=0), rtol=1e-5) and fake[-1].p.strides == (1, 6)
    o = torch.empty(4)
    assert bulkred.var(x, axis=0, out=o) is o
    assert bulkred.var(x, axis=0, out=o) is o  # recorded with out=


# endregion

# region torch custom operators


def test_torch_fake_implementations_give_shapes_and_dtypes():
    torch = _torch()
    from torch._subclasses.fake_tensor import FakeTensorMode

    from bulkred_dialect import torch_ops  # noqa: F401 - registers the operators

    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.empty(4, 5, 6))
        h = mode.from_tensor(torch.empty(4, 5, 6, dtype=torch.float16))
        r = torch.ops.bulkred.mean(x, [0, 2], True, None)
        assert r.shape == (1, 5, 1) and r.dtype == torch.float32
        r = torch.ops.bulkred.argmax(x, None, False)
        assert r.shape == () and r.dtype == torch.int64
        r = torch.ops.bulkred.argmin(x, [1], True)
        assert r.shape == (4, 1, 6) and r.dtype == torch.int64
        r = torch.ops.bulkred.std(h, [1], False, 1, None)
        assert r.shape == (4, 6) and r.dtype == torch.float16
        r = torch.ops.bulkred.vector_norm(h, None, False, math.inf, torch.float32)
        assert r.shape == () and r.dtype == torch.float32
        v, m = torch.ops.bulkred.var_mean(h, [-1], False, 1, None)
        assert v.shape == m.shape == (4, 5) and v.dtype == m.dtype == torch.float16
        with pytest.raises(api.ReductionError, match="'axis' must be an int or None"):
            torch.ops.bulkred.argmax(x, [0, 1], False)
        with pytest.raises(api.ReductionError, match="'ord' must be a number, got nan"):
            torch.ops.bulkred.vector_norm(x, None, False, math.nan, None)


def test_torch_custom_operators_pass_opcheck(fake):
    torch = _torch()
    from bulkred_dialect import torch_ops  # noqa: F401

    x = torch.randn(4, 6)
    torch.library.opcheck(torch.ops.bulkred.mean.default, (x, [1], True, None))
    torch.library.opcheck(torch.ops.bulkred.argmax.default, (x, [0], False))
    torch.library.opcheck(torch.ops.bulkred.vector_norm.default, (x, None, False, 3.0, None))
    torch.library.opcheck(torch.ops.bulkred.std_out.default, (x, [0], False, 1, None, torch.empty(6)))
    torch.library.opcheck(torch.ops.bulkred.var_mean.default, (x, [1], False, 1, None))
    torch.library.opcheck(torch.ops.bulkred.var_mean_out.default, (x, None, False, 0, None, torch.empty(()), torch.empty(())))


def test_torch_compile_fullgraph(fake):
    """torch.compile(fullgraph=True) of a function that calls the fused functions traces
    them as the custom operators (fake implementations) and runs them: one graph."""
    torch = _torch()
    from bulkred_dialect import reductions

    assert reductions._compiling() is False  # eager: registers the operators once torch is loaded
    assert reductions._compiling is torch.compiler.is_compiling

    def f(x, out):
        v, m = bulkred.var_mean(x, axis=-1, correction=1)
        bulkred.std(x, axis=0, out=out)
        return (x - m[:, None]) / v[:, None].sqrt(), bulkred.argmax(x, axis=1), bulkred.vector_norm(x, ord=math.inf)

    x = torch.randn(4, 6)
    out = torch.empty(6)
    z, i, n = torch.compile(f, fullgraph=True, backend="aot_eager")(x, out)
    tv, tm = torch.var_mean(x, dim=-1, correction=1)
    assert torch.allclose(z, (x - tm[:, None]) / tv[:, None].sqrt(), rtol=1e-4, atol=1e-5)
    assert torch.equal(i, x.argmax(dim=1)) and i.dtype == torch.int64
    assert torch.allclose(n, x.abs().max()) and torch.allclose(out, x.std(dim=0, correction=0), rtol=1e-5)
    with pytest.raises(Exception, match="'ord' must be a number, got nan"):
        torch.compile(lambda x: bulkred.vector_norm(x, ord=math.nan), fullgraph=True, backend="aot_eager")(x)


# endregion

# region The docs page and the example


def _doc_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "fused.md").read_text(), flags=re.S)


def test_fused_doc_cpu_blocks_run(capsys):
    """docs/fused.md's blocks that need no GPU run as written; the page is linked from
    the README and has the Lowering section."""
    text = (ROOT / "docs" / "fused.md").read_text()
    cpu = [b for b in _doc_blocks() if not b.startswith("# on a GPU")]
    assert len(cpu) >= 2 and len(_doc_blocks()) > len(cpu)
    for block in cpu:
        exec(compile(block, "docs/fused.md", "exec"), {})
    out = capsys.readouterr().out
    assert "bulkred.vector_norm: 'ord' must be a number (an int, a float, inf or -inf), got 'fro'" in out and "bulkred.argmax: 'axis' must be an int or None" in out
    assert "\nTrue\n" in out  # the exp_sub block's interpreter check
    for variant in ("grid_full", "grid_rows", "grid_split_det", "grid_middle"):  # the Lowering section's summaries
        assert f"chosen: {variant}" in out, variant
    assert "\n## Lowering\n" in text
    assert "docs/fused.md" in (ROOT / "README.md").read_text()


def test_fused_example_runs_without_a_gpu():
    """``python examples/fused.py``, run in this process (``runpy``, as ``__main__``, its
    output captured): a Python start of its own and its imports cost 0.45 CPU-s, the
    example 0.08."""
    import contextlib
    import io
    import runpy

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(ROOT / "examples" / "fused.py"), run_name="__main__")
    stdout = out.getvalue()
    for fn in FUSED:
        assert f"== bulkred.{fn}" in stdout
    assert stdout.count("chosen: ") + stdout.count("refused: ") >= len(FUSED)


# endregion

# region Numbers: the fused random cases through the lowering and the CPU interpreter


def _interpret(kind: str, count: int, seed: int = 17):
    """The first ``count`` fused cases of ``kind`` (seeded, small, contiguous) through the
    API's plan and module, lower-tile-reductions and run_grid, against numpy."""
    cfg = R.interpreter_config(fused=True)
    cfg.kinds = (kind,)
    outcomes, failures, refused = collections.Counter(), [], []
    for i in range(count):
        c = R.generate(seed, i, cfg)
        o = R.run_case_interpreter(c)
        outcomes[o.status] += 1
        if o.status == "fail":
            failures.append((c.label(), o))
        elif o.status == "unsupported":
            refused.append((c.label(), o.reason))
    return outcomes, failures, refused


@pytest.mark.parametrize("kind", FUSED)
def test_fused_cases_in_the_interpreter(kind):
    """Each fused function on seeded cases (float32/16, bfloat16, float64; NaN; ties for
    argmax/argmin; logsumexp near the largest float and of -inf; var/std correction 0
    and 1; norms 1, 2, inf, -inf, 3): every value within its bound of numpy's float64
    (argmax/argmin exact; float64 logsumexp and pow norms through the FMA exp/log
    routines). A lowering that has no variant for a case is xfail (the fused lowering in
    progress); any other refusal or a wrong value fails. std and var_mean run the first
    half of var's cases (the same shapes, dtypes and corrections): their state and its
    combinations are var's, the square root and the mean output only added where the
    result is stored; argmin the first half of argmax's (its state, the comparison
    reversed)."""
    outcomes, failures, refused = _interpret(kind, 7 if kind in ("std", "var_mean", "argmin") else 14)
    assert not failures, failures
    if refused:
        if all(NO_VARIANT in why for _, why in refused):
            pytest.xfail(f"{IN_PROGRESS}: {len(refused)} of {sum(outcomes.values())} cases: {refused[0][1]}")
        raise AssertionError(refused)
    assert outcomes["pass"] >= 5, outcomes


@pytest.mark.parametrize(
    "kind, dtype, values, shape, axis, extra",
    [
        ("logsumexp", "float32", "huge", (3, 40), 1, {}),  # exp overflows without the running shift
        ("logsumexp", "float16", "huge", (50,), None, {}),
        ("logsumexp", "float32", "neginf", (4, 33), 1, {}),  # all -inf (or nearly): -inf
        ("argmax", "float32", "ints", (5, 37), 1, {}),  # ties: the first index
        ("argmin", "float16", "ints", (3, 4, 5), None, {}),  # flat row-major index
        ("argmax", "float32", "normal", (6, 21), 0, {"nans": 2}),  # the first NaN
        ("argmin", "bfloat16", "normal", (6, 21), 1, {"nans": 3}),  # argmin: NaN wins too
        ("var", "float32", "normal", (2, 64), 1, {"correction": 1}),
        ("var", "float32", "normal", (1, 7), 0, {"correction": 1}),  # N - correction = 0: NaN
        ("var", "float32", "normal", (2, 7), 0, {"correction": 3}),  # N - correction < 0: inf
        ("std", "float16", "normal", (4, 50), None, {"correction": 0}),
        ("var_mean", "bfloat16", "normal", (3, 30), 1, {"correction": 1}),
        ("vector_norm", "float32", "normal", (4, 33), 1, {"ord": 3.0}),
        ("vector_norm", "float16", "normal", (4, 33), None, {"ord": 2.0}),
        ("vector_norm", "float32", "normal", (4, 33), 0, {"ord": -math.inf}),
        ("vector_norm", "float32", "normal", (4, 33), 1, {"ord": math.inf, "nans": 1}),
        ("vector_norm", "float64", "normal", (4, 33), 1, {"ord": 1.0}),
        ("mean", "float16", "normal", (3, 100), 1, {}),
        ("mean", "float64", "ints", (100,), None, {}),
    ],
)
def test_fused_edge_cases_in_the_interpreter(kind, dtype, values, shape, axis, extra):
    import dataclasses

    kw = {"correction": None, "ord": None, "nans": 0, **extra}
    if kind in ("var", "std", "var_mean") and kw["correction"] is None:
        kw["correction"] = 0
    c = dataclasses.replace(
        R.generate(17, 0, R.interpreter_config(fused=True)), kind=kind, dtype=dtype, shape=shape, axis=axis,
        keepdims=False, dtype_arg=None, ignore_nan=None, use_out=False, library="torch", view="contiguous",
        base_shape=shape, slices=tuple((0, d, 1) for d in shape), perm=tuple(range(len(shape))), expand=False,
        values=values, **kw,
    )
    o = R.run_case_interpreter(c)
    if o.status == "unsupported" and NO_VARIANT in o.reason:
        pytest.xfail(f"{IN_PROGRESS}: {o.reason}")
    assert o.status == "pass", (c.label(), o)


# endregion
