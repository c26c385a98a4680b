"""Complex numbers (complex64, complex128) through the function table without a GPU
(docs/from_torch.md, "Every function"; docs/fused.md, "Complex numbers"): the plans
(result dtypes, how the parts are read), the kernels on the CPU interpreter (every thread
of the lowered kernel, ``x`` read in place as its (re, im) parts) against numpy in
complex128, torch tensors through the real call path (views, keepdims, named pairs)
against torch, and the gradients against torch's own complex autograd (a CPU torch is
enough; those tests skip without one). tests/gpu/test_torch_rules_gpu.py runs them
against torch on the GPU; tests/random_reductions.py draws complex inputs too."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api
from bulkred_dialect.functions import COMPLEX, COMPLEX32_ROWS, FUNCTIONS

TAKES_COMPLEX = (
    "sum", "prod", "any", "all", "count_nonzero", "mean", "var", "std", "var_mean", "std_mean", "vector_norm", "logsumexp",
    "nansum", "nanmean",
)

# region Plans


@pytest.mark.parametrize(
    ("fn", "kw", "dst", "aux", "mode"),
    [
        ("sum", {}, "complex64", None, "parts"),
        ("sum", {"dtype": "complex128"}, "complex128", None, "parts"),
        ("mean", {"axis": 1}, "complex64", None, "parts"),
        ("prod", {"axis": 0}, "complex64", None, "pairs"),
        ("var", {"correction": 1}, "float32", None, "pairs"),
        ("std_mean", {"axis": 1}, "float32", "complex64", "pairs"),
        ("var", {"dtype": "float64"}, "float64", None, "pairs"),
        ("vector_norm", {}, "float32", None, "flat"),
        ("vector_norm", {"ord": 1}, "float32", None, "pairs"),
        ("vector_norm", {"ord": math.inf, "dtype": "complex128"}, "float64", None, "pairs"),
        ("vector_norm", {"ord": 0}, "float32", None, "pairs"),
        ("count_nonzero", {}, "int64", None, "pairs"),
        ("any", {}, "bool", None, "flat"),
        ("all", {"library": "torch"}, "bool", None, "pairs"),
        ("nansum", {"axis": 1}, "complex64", None, "pairs"),
        ("nanmean", {"dtype": "complex128"}, "complex128", None, "pairs"),
        ("logsumexp", {"axis": 1}, "complex64", None, "pairs"),
    ],
)
def test_plans(fn, kw, dst, aux, mode):
    p = api.plan(fn, (4, 5), "complex64", **kw)
    assert (p.dst, p.aux, p.complex) == (dst, aux, mode)
    assert api.module_of(p).verify() is None  # the dialect takes it


def test_rows_that_take_complex_and_the_refusals():
    taken = [r.name for r in FUNCTIONS.values() if r.complex is not None]
    assert taken == list(TAKES_COMPLEX)
    for fn in FUNCTIONS:
        if fn not in TAKES_COMPLEX:
            with pytest.raises(api.ReductionError, match=f"^bulkred.{fn}: a complex128 x is not supported"):
                api.plan(fn, (4, 5), "complex128")
    for fn, kw, message in [
        ("sum", {"dtype": "float32"}, "'dtype' must be a complex type (complex64, complex128, complex32) for a complex64 x, got float32"),
        ("vector_norm", {"dtype": "float64"}, "'dtype' must be complex64 or complex128 for a complex64 x"),
        ("var", {"dtype": "float16"}, "'dtype' must be float32, float64, complex64 or complex128 for a complex64 x"),
    ]:
        with pytest.raises(api.ReductionError, match=f"^bulkred.{fn}: {re_escape(message)}"):
            api.plan(fn, (4, 5), "complex64", **kw)
    with pytest.raises(api.ReductionError, match="'dtype' complex64 of a float32 x is not supported yet"):
        api.plan("sum", (4, 5), "float32", dtype="complex64")


def test_complex32_plans_and_refusals():
    """complex32 (torch's chalf, float16 parts) in the rows torch's CUDA takes it in: a
    complex32 result (float16 parts, accumulated in float32), complex64 by dtype=; the
    other rows refuse it in one line, as torch does."""
    for fn, kw, dst, mode in [("sum", {}, "complex32", "parts"), ("mean", {"axis": 1}, "complex32", "parts"),
                              ("prod", {"axis": 0}, "complex32", "pairs"), ("nansum", {}, "complex32", "pairs"),
                              ("nanmean", {"axis": 1}, "complex32", "pairs"),
                              ("sum", {"dtype": "complex64"}, "complex64", "parts"),
                              ("prod", {"axis": 1, "dtype": "complex64"}, "complex64", "pairs")]:
        p = api.plan(fn, (4, 5), "complex32", library="torch", **kw)
        assert (p.dst, p.complex) == (dst, mode), (fn, kw)
        text = str(api.module_of(p))
        assert "x2xf16" in text and (mode != "pairs" or "pairs" in text), (fn, kw)
    assert set(COMPLEX32_ROWS) < set(TAKES_COMPLEX)
    for fn in TAKES_COMPLEX:
        if fn not in COMPLEX32_ROWS:
            with pytest.raises(api.ReductionError, match=f"^bulkred.{fn}: a complex32 x is not supported .torch's CUDA"):
                api.plan(fn, (4, 5), "complex32", library="torch")
    with pytest.raises(api.ReductionError, match="^bulkred.sum: 'dtype' complex32 is torch's alone .numpy and cupy have none"):
        api.plan("sum", (4, 5), "complex64", dtype="complex32", library="numpy")
    assert api.plan("sum", (4, 5), "complex64", dtype="complex32", library="torch").dst == "complex32"


def re_escape(s: str) -> str:
    import re

    return re.escape(s)


def test_the_modules_read_the_parts_in_place():
    """A view's strides are doubled (in parts) and the pair's stride is 1; a whole complex
    sum keeps a unit axis in front for its one value; var's mean has a pair axis."""
    p = api.replace(api.plan("prod", (6, 4), "complex128", axis=0), strides=(1, 6))  # x.t() of a [4, 6]
    text = str(api.module_of(p))
    assert "memref<6x4x2xf64, strided<[2, 12, 1]>" in text and "pairs" in text and "axes [0 : i64]" in text
    text = str(api.module_of(api.plan("sum", (6, 4), "complex64")))
    assert "memref<1x6x4x2xf32" in text and "memref<1x2xf32" in text and "pairs" not in text
    text = str(api.module_of(api.plan("var_mean", (6, 4), "complex64", axis=1)))
    assert "axes [1 : i64, 2 : i64]" in text and "memref<6x2xf32" in text and "pairs" in text


# endregion

# region The kernels on the interpreter, through the call path


@functools.cache
def _lowered(p: api.Plan):
    from bulkred_dialect.backend_ptx.runtime import lower_tile_module

    m = api.module_of(p)
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    return m


class InterpretedKernel:
    """The plan's kernel on the interpreter, called as the launch layer's: ``x`` and the
    outputs as the API passes them (a complex array's parts, in place)."""

    signature = None

    def __init__(self, p: api.Plan):
        self.p = p

    def __call__(self, x, *outs, stream=None):
        from bulkred_dialect.interpreter import run_grid

        from xdsl.dialects import func

        torch = not isinstance(x, np.ndarray)
        xs = x.detach().numpy() if torch else x
        m = _lowered(self.p)
        f = next(op for op in m.ops if isinstance(op, func.FuncOp) and op.sym_name.data == self.p.kernel_name)
        ws = [np.zeros(t.get_shape(), np.uint8) for t in f.function_type.inputs.data[1 + len(outs):]]  # the workspace
        got = run_grid(m, self.p.kernel_name, xs, *[o.detach().numpy().copy() if torch else o.copy() for o in outs], *ws)
        got = got[1 : 1 + len(outs)]
        if not torch:
            return (x, *got)
        import torch as t

        for o, g in zip(outs, got):
            o.copy_(t.from_numpy(np.ascontiguousarray(g)).reshape(o.shape))
        return (x, *outs)


@pytest.fixture
def interpreted(monkeypatch):
    from bulkred_dialect import reductions
    from bulkred_dialect.backend_ptx import device

    monkeypatch.setattr(api, "kernel_of", lambda p, target: InterpretedKernel(p))
    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    reductions.forget()
    yield
    reductions.forget()


def _z(shape, dtype, seed=0, zeros=0.0):
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if zeros:
        z[rng.random(shape) < zeros] = 0
    return z


def _reference(fn, z, axis, kw):
    """numpy in complex128 / float64."""
    z = z.astype(np.complex128)
    a = tuple(range(z.ndim)) if axis is None else axis
    c = kw.get("correction", 0)
    if fn in ("sum", "prod", "mean", "nansum", "nanmean"):
        return getattr(np, fn)(z, axis=a)
    if fn in ("var", "std"):
        return getattr(np, fn)(z, axis=a, ddof=c)
    if fn in ("var_mean", "std_mean"):
        return (getattr(np, fn[:3])(z, axis=a, ddof=c), np.mean(z, axis=a))
    if fn == "count_nonzero":
        return np.count_nonzero(z, axis=a)
    if fn in ("any", "all"):
        return getattr(np, fn)(z, axis=a)
    if fn == "logsumexp":  # torch's: the real parts' maximum as the shift
        m = z.real.max(axis=a, keepdims=True)
        return (np.log(np.exp(z - m).sum(axis=a, keepdims=True)) + m).squeeze(axis=a)
    p = kw.get("ord", 2)
    m = np.abs(z)
    if p == 0:
        return np.count_nonzero(z, axis=a).astype(np.float64)
    if math.isinf(p):
        return (np.max if p > 0 else np.min)(m, axis=a)
    return (m**p).sum(axis=a) ** (1 / p)


CASES = [
    ("sum", {}), ("prod", {}), ("mean", {}), ("var", {"correction": 1}), ("std", {}), ("var_mean", {"correction": 1.5}),
    ("std_mean", {}), ("count_nonzero", {}), ("any", {}), ("all", {}), ("vector_norm", {}), ("vector_norm", {"ord": 1}),
    ("vector_norm", {"ord": math.inf}), ("vector_norm", {"ord": -math.inf}), ("vector_norm", {"ord": 0}),
    ("vector_norm", {"ord": 3.5}), ("nansum", {}), ("nanmean", {}), ("logsumexp", {}),
]


@pytest.mark.parametrize(("fn", "kw"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
def test_numpy_calls_against_numpy_in_complex128(interpreted, fn, kw):
    """Each function of a complex x over every axis and a row (complex64) and a column
    (complex128), against numpy: the values, the result dtype (complex where numpy's is,
    the part's for var, std and norms) and the named pairs."""
    for dtype, axes in (("complex64", (None, 1)), ("complex128", (0,))):  # whole, rows, columns
        z = _z((5, 37) if fn not in ("prod", "logsumexp") else (5, 9), dtype, zeros=0.2 if fn in ("count_nonzero", "all", "any") else 0.0)
        if fn == "all":
            z[1] = 1 + 1j  # one row all nonzero
        if fn == "any":
            z[2] = 0
        if fn == "logsumexp":  # large parts: the shift matters (exp(40) would overflow float32's sum), im past 2 pi
            z = (z * np.asarray(30, z.real.dtype)).astype(dtype)
        if fn.startswith("nan"):  # torch's complex NaN: either part; row 3 all NaN (nanmean: NaN)
            z[0, 3], z[1, 4], z[3] = complex(math.nan, 1), complex(2, math.nan), complex(math.nan, math.nan)
        for axis in axes:
            got = getattr(bulkred, fn)(z, axis=axis, **kw)
            want = _reference(fn, z, axis, kw)
            pairs = zip(got, want) if fn.endswith("_mean") else ((got, want),)
            for g, w in pairs:
                g, w = np.asarray(g), np.asarray(w)
                part = np.float32 if dtype == "complex64" else np.float64
                if w.dtype.kind == "c":
                    assert g.dtype == np.dtype(dtype), (fn, g.dtype)
                elif w.dtype.kind == "f":
                    assert g.dtype == part, (fn, g.dtype)
                tol = 3e-5 if dtype == "complex64" else 1e-12
                np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{fn} {dtype} {axis}")


def test_empty_complex_reductions_give_torch_identities(interpreted):
    z = np.zeros((0, 3), np.complex64)
    assert bulkred.sum(z, axis=0).dtype == np.complex64 and (bulkred.sum(z, axis=0) == 0).all()
    assert (bulkred.prod(z, axis=0) == 1).all() and np.isnan(bulkred.mean(z, axis=0)).all()
    assert (bulkred.vector_norm(z, axis=0) == 0).all() and bulkred.vector_norm(z, axis=0).dtype == np.float32
    with pytest.raises(api.ReductionError, match="has no identity"):
        bulkred.vector_norm(z, axis=0, ord=math.inf)


def _torch():
    return pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for these tests)")


def test_torch_tensors_views_and_dtypes(interpreted):
    """torch's result dtypes and values on complex tensors read in place: a transposed
    and a sliced view, keepdims, a 0-d tensor, a complex dtype= (narrower: cast first)."""
    torch = _torch()
    z = torch.from_numpy(_z((6, 24), "complex128", seed=1))
    for t, fn, kw, tkw in [
        (z, "sum", {"dim": 1}, {"dim": 1}), (z.t(), "mean", {"dim": 0, "keepdim": True}, {"dim": 0, "keepdim": True}),
        (z[:, ::3], "var", {"dim": 1, "correction": 1}, {"dim": 1}), (z[1:, 2:], "prod", {"dim": 0}, {"dim": 0}),
        (z.t(), "sum", {}, {}),
    ]:
        got, want = getattr(bulkred, fn)(t, **kw), getattr(torch, fn)(t, **tkw)
        assert got.dtype == want.dtype and got.shape == want.shape, (fn, got.dtype, want.dtype)
        torch.testing.assert_close(got, want, msg=fn)
    got = bulkred.vector_norm(z[:, ::2], ord=3, dim=1, dtype=torch.complex128)
    torch.testing.assert_close(got, torch.linalg.vector_norm(z[:, ::2], 3, dim=1, dtype=torch.complex128))
    s = bulkred.sum(z, dtype=torch.complex64)
    assert s.dtype == torch.complex64
    torch.testing.assert_close(s, z.to(torch.complex64).sum(), rtol=1e-5, atol=1e-5)
    w = torch.tensor(2 - 1j, dtype=torch.complex64)
    assert torch.equal(bulkred.sum(w, dim=0), w) and bulkred.vector_norm(w).item() == pytest.approx(math.sqrt(5))
    r = bulkred.std_mean(z, dim=0, correction=1)
    torch.testing.assert_close(tuple(r), tuple(torch.std_mean(z, dim=0)))
    assert r.mean.dtype == torch.complex128 and r.std.dtype == torch.float64
    assert bulkred.all(z).dtype == torch.bool and bulkred.count_nonzero(z, dim=1).dtype == torch.int64


def test_complex32_tensors_on_the_interpreter(interpreted):
    """complex32 tensors (torch's chalf) through the real kernels on the interpreter:
    float16 parts read in place, accumulated in float32, rounded to complex32 as torch's
    CUDA kernels do (torch's CPU has no complex32 reductions: its complex64 value of the
    same elements, rounded); a transposed view, NaN parts for nansum/nanmean, small
    integers (OpInfo's) whose product leaves float16's range (inf)."""
    torch = _torch()
    z = torch.from_numpy(_z((5, 12), "complex64", seed=4)).to(torch.complex32)
    zn = z.clone()
    zn[1, 2], zn[3, 0] = complex(math.nan, 1), complex(2, math.nan)
    ints = torch.view_as_complex(torch.from_numpy(np.random.default_rng(5).integers(-9, 10, (6, 6, 2)).astype(np.float16)))
    for t, fn, kw in [(z.t(), "sum", {"dim": 0}), (z[:, ::2], "mean", {"dim": 0}), (ints, "prod", {"dim": 1}),
                      (zn, "nansum", {"dim": 1}),
                      (zn.t(), "nanmean", {"dim": 0}), (z, "sum", {"dim": 0, "dtype": torch.complex64})]:
        got = getattr(bulkred, fn)(t, **kw)
        w = t.to(torch.complex64)
        opts = {k: v for k, v in kw.items() if k != "dtype"}
        if fn.startswith("nan"):
            keep = ~w.isnan()
            want = torch.where(keep, w, torch.zeros_like(w)).sum(**opts) / (keep.sum(**opts) if fn == "nanmean" else 1)
        else:
            want = getattr(torch, fn)(w, **opts)
        assert got.dtype == kw.get("dtype", torch.complex32) and got.shape == want.shape, (fn, got.dtype)
        if got.dtype == torch.complex32:
            want = want.to(torch.complex32)
        w64 = want.to(torch.complex64)
        tol = 2e-3 * max(w64[w64.isfinite()].abs().tolist(), default=0.0)  # a float16 rounding of the largest
        torch.testing.assert_close(got.to(torch.complex64), w64, rtol=2e-3, atol=tol, equal_nan=True, msg=f"{fn} {kw}")
    finite = bulkred.prod(ints, dim=1).to(torch.complex64).isfinite()
    assert finite.any() and not finite.all()  # the products reach float16's range (inf) and stay within it


GRADS = [
    ("sum", {"dim": 1}), ("mean", {"dim": 0}), ("prod", {"dim": 1}), ("var", {"dim": 1, "correction": 1}),
    ("std", {"dim": 0, "correction": 0}), ("var_mean", {"dim": 1, "correction": 1}), ("std_mean", {"dim": 1, "correction": 1}),
    ("vector_norm", {"dim": 1}), ("vector_norm", {"dim": 1, "ord": 1}), ("vector_norm", {"dim": 0, "ord": math.inf}),
    ("vector_norm", {"dim": 1, "ord": 3}), ("vector_norm", {"dim": 1, "ord": 0.5}), ("nansum", {"dim": 1}),
    ("logsumexp", {"dim": 1}), ("logsumexp", {"dim": 0}),
]


@pytest.mark.parametrize(("fn", "kw"), GRADS, ids=[f"{f}-{k}" for f, k in GRADS])
def test_gradients_against_torch_autograd(interpreted, fn, kw):
    """torch's complex autograd (the conjugate Wirtinger convention): the gradient of a
    real-valued loss of each result, against torch's own function's, a zero in x (prod
    beside it, the norms' subgradient)."""
    torch = _torch()
    base = torch.from_numpy(_z((3, 7), "complex128", seed=2))
    base[0, 2] = 0
    a, b = base.clone().requires_grad_(True), base.clone().requires_grad_(True)
    tfn = torch.linalg.vector_norm if fn == "vector_norm" else getattr(torch, fn)
    if fn == "nansum":  # torch's CPU nansum takes no complex (its CUDA one does): its definition
        base[1, 3] = complex(math.nan, 1.0)

        def tfn(t, **k):
            return torch.where(t.isnan(), torch.zeros_like(t), t).sum(**k)

    a, b = base.clone().requires_grad_(True), base.clone().requires_grad_(True)
    tkw = {k if k != "ord" else "ord": v for k, v in kw.items()}

    def loss(r):
        rs = r if isinstance(r, tuple) else (r,)
        total = 0
        for k, t in enumerate(rs):
            w = torch.linspace(0.5, 1.5, t.numel(), dtype=torch.float64).reshape(t.shape)
            total = total + ((t * w).real if t.is_complex() else t * w).sum() * (k + 1) + (t.imag.sum() if t.is_complex() else 0)
        return total

    loss(tuple(getattr(bulkred, fn)(a, **kw)) if fn.endswith("_mean") else getattr(bulkred, fn)(a, **kw)).backward()
    loss(tuple(tfn(b, **tkw)) if fn.endswith("_mean") else tfn(b, **tkw)).backward()
    torch.testing.assert_close(a.grad, b.grad, msg=fn)


def test_complex_under_torch_compile(interpreted):
    """The operators' fake implementations give complex and real results as torch's."""
    torch = _torch()
    z = torch.from_numpy(_z((4, 9), "complex64", seed=3))

    def f(t):
        return (bulkred.sum(t, axis=1), bulkred.var_mean(t, axis=0, correction=1), bulkred.vector_norm(t, ord=1),
                bulkred.logsumexp(t, axis=1))

    got = torch.compile(f, fullgraph=True, backend="eager")(z)
    want = (z.sum(1), torch.var_mean(z, dim=0), torch.linalg.vector_norm(z, 1), torch.logsumexp(z, 1))
    torch.testing.assert_close(got[3], want[3])
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(tuple(got[1]), tuple(want[1]))
    torch.testing.assert_close(got[2], want[2])


# endregion


# region Random complex draws (tests/random_reductions.py's complex_config) on the interpreter


def test_random_complex_draws_against_complex128(interpreted):
    """Seeded draws of ``complex_config`` (every row that takes complex, complex64 and
    complex128, every view, keepdims, out=, numpy and torch inputs) run by the random
    harness (``run_case``: its complex128 reference and bounds) on the interpreter;
    tools/gpu_random.py --complex runs them on the GPU."""
    import random_reductions as R

    try:
        import torch
    except ImportError:
        torch = None
    cfg = R.complex_config(max_elems=2000, numpy_inputs=0.2 if torch is not None else 1.0)
    seen, bad = set(), []
    for i in range(24):
        case = R.generate(20261129, i, cfg)
        if case.library == "torch" and torch is None:
            continue
        r = R.run_case(case, bulkred, torch, device="cpu")
        seen.add(case.kind)
        if r.status != "pass":
            bad.append(f"{r.status} {case.label()}: {r.reason} {r.detail}")
    assert not bad, bad
    assert len(seen) >= 8, seen


# endregion
