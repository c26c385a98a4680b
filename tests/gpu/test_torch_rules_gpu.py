"""torch's rules on the GPU, against torch itself: torch CUDA tensors get torch's result
dtypes and dims (int64 sums of uint8, uint8 ``any``/``all``, ``dim=()`` and a 0-d
input's ``dim=0``/``-1``), ``dtype=`` narrower than the input casts first,
``vector_norm(ord=0)``, a float ``correction``, ``logsumexp`` of bool and integers,
options given as numpy scalars, and ``prod``'s gradient under
``torch.compile(fullgraph=True)``; numpy arrays keep numpy's rules; complex64 and
complex128 inputs of every function that takes them, complex32 of those torch's CUDA
takes it in; and every sample of torch's OpInfo
database for its 31 reduction ops (tests/opinfo_reductions.py), forward in every CUDA
dtype and float64 / complex128 gradients. tests/test_torch_rules.py and
tests/test_complex.py check the same on the CPU (plans, the interpreter, torch's CPU
autograd)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import bulkred_dialect as bulkred
from gpu import cuda_torch

pytestmark = pytest.mark.gpu


_torch = cuda_torch  # torch with a CUDA device, else the test skips (tests/gpu/__init__.py)


def _gen(torch, seed):
    return torch.Generator(device="cuda").manual_seed(seed)


# region Result dtypes and dims of torch tensors


@pytest.mark.parametrize("fn", ["sum", "prod", "nansum"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "bool"])
def test_integer_sums_are_int64_as_torch(fn, dtype):
    torch = _torch()
    if fn == "nansum" and dtype == "bool":
        pytest.skip("torch.nansum takes no bool")
    g = _gen(torch, 1)
    hi = 2 if dtype == "bool" else 5
    x = torch.randint(0, hi, (33, 257), device="cuda", generator=g).to(getattr(torch, dtype))
    for axis in (None, 1, 0):
        got = getattr(bulkred, fn)(x, axis=axis)
        want = getattr(torch, fn)(x) if axis is None else getattr(torch, fn)(x, dim=axis)
        assert got.dtype == want.dtype == torch.int64 and torch.equal(got, want), (fn, dtype, axis)


@pytest.mark.parametrize("fn", ["any", "all"])
def test_any_all_of_uint8_are_uint8(fn):
    torch = _torch()
    x = torch.zeros(64, 1001, dtype=torch.uint8, device="cuda")
    x[3, 7] = 200
    x[5] = 1
    for axis in (None, 1, 0, (0, 1)):
        got = getattr(bulkred, fn)(x, axis=axis)
        want = getattr(torch, fn)(x) if axis is None else getattr(torch, fn)(x, dim=axis)
        assert got.dtype == want.dtype == torch.uint8 and torch.equal(got, want), (fn, axis)
    assert getattr(bulkred, fn)(x.bool()).dtype == torch.bool  # bool stays bool


def test_dim_empty_and_0d_inputs():
    torch = _torch()
    x = torch.randn(7, 300, device="cuda", generator=_gen(torch, 2))
    for fn in ("sum", "mean", "amax", "amin", "nansum"):  # the functions whose torch dim is int[]
        got, want = getattr(bulkred, fn)(x, axis=()), getattr(torch, fn)(x, dim=())
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, msg=fn)
    got = bulkred.sum(x, axis=(), keepdims=True)
    assert got.shape == x.sum(dim=(), keepdim=True).shape == (1, 1)
    for t in (x > 0, (x * 3).to(torch.uint8), x.t(), x[:, ::3]):  # torch's any/all reduce nothing there: x != 0
        for fn in ("any", "all"):
            got, want = getattr(bulkred, fn)(t, axis=()), getattr(torch, fn)(t, dim=())
            assert got.dtype == want.dtype and got.shape == t.shape and torch.equal(got, want), (fn, t.dtype)
    s = torch.tensor(2.5, device="cuda")
    for fn in ("sum", "mean", "amax", "amin", "prod", "logsumexp", "nansum"):
        for dim in (0, -1):
            for keep in (False, True):
                got, want = getattr(bulkred, fn)(s, axis=dim, keepdims=keep), getattr(torch, fn)(s, dim=dim, keepdim=keep)
                assert got.shape == want.shape == () and torch.equal(got, want), (fn, dim, keep)
    assert torch.equal(bulkred.argmax(s, axis=0), torch.argmax(s, dim=0))
    v, t = bulkred.var(s, axis=0, correction=0), torch.var(s, dim=0, correction=0)
    assert torch.equal(v, t)


def test_numpy_arrays_keep_numpy_rules():
    torch = _torch()
    u = np.arange(20, dtype=np.uint8).reshape(4, 5)
    assert bulkred.sum(u).dtype == np.uint64 and bulkred.any(u, axis=1).dtype == np.bool_
    with pytest.raises(bulkred.ReductionError, match="axis=\\(\\) reduces nothing in numpy"):
        bulkred.sum(u, axis=())
    t = torch.from_numpy(u).cuda()
    assert bulkred.sum(t).dtype == torch.int64 and bulkred.sum(u).dtype == np.uint64  # one process, both rules


@pytest.mark.parametrize(
    ("fn", "src", "dst"),
    [("sum", "float64", "float32"), ("mean", "float64", "float32"), ("nansum", "float64", "float32"),
     ("sum", "int64", "int32"), ("prod", "int64", "int32"), ("sum", "float32", "float16"), ("mean", "float32", "bfloat16"),
     ("sum", "float64", "float16"), ("sum", "int32", "int8"), ("prod", "int64", "int16"), ("sum", "int64", "uint8")],
)
def test_a_narrower_dtype_casts_first(fn, src, dst):
    torch = _torch()
    g = _gen(torch, 3)
    if src.startswith("float"):
        big = dst == "float32"  # a 16-bit result: values whose whole sum stays below float16's 65504
        x = (torch.randn(65, 4099, device="cuda", generator=g, dtype=torch.float64) * (1e3 if big else 0.1)
             + (1 / 3 if big else 1 / 300)).to(getattr(torch, src))
    else:
        x = torch.randint(-(2**40), 2**40, (65, 4099), device="cuda", generator=g, dtype=torch.int64).to(getattr(torch, src))
        if fn == "prod":
            x = x[:, :5]
    for axis in (None, 1, 0):
        kw = {} if axis is None else {"dim": axis}
        got = getattr(bulkred, fn)(x, axis=axis, dtype=getattr(torch, dst))
        want = getattr(torch, fn)(x, dtype=getattr(torch, dst), **kw)
        assert got.dtype == want.dtype == getattr(torch, dst), (fn, axis)
        if dst.startswith("float") or dst == "bfloat16":
            # against the cast values reduced in float64 (bulkred and torch add in other
            # orders: each within float32 accumulation's bound of a blocked sum, and the
            # rounding into a 16-bit result)
            x32 = x.to(getattr(torch, dst)).double()
            ref = getattr(torch, fn)(x32, **kw)
            mag = x32.abs().mean(**kw) if fn == "mean" else x32.abs().sum(**kw)
            ulp = {"float32": 0.0, "float16": 2.0**-10, "bfloat16": 2.0**-7}[dst]
            bound = 64 * 2.0**-24 * mag + ulp * ref.abs()
            err = (got.double() - ref).abs()
            assert (err <= bound).all(), (fn, axis, float(err.max()))
            assert ((want.double() - ref).abs() <= bound).all(), (fn, axis, "torch")
        else:
            assert torch.equal(got, want), (fn, axis)  # the low bits, wrapping


# endregion

# region ord=0, a float correction, logsumexp of integers, numpy scalars


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_vector_norm_ord_0(dtype):
    torch = _torch()
    x = torch.randn(129, 1003, device="cuda", generator=_gen(torch, 4)).to(getattr(torch, dtype))
    x[torch.rand(x.shape, device="cuda", generator=_gen(torch, 5)) < 0.3] = 0
    x[0, 0], x[1, 1], x[2, 2] = math.nan, math.inf, -0.0
    for axis in (None, 1, 0):
        kw = {} if axis is None else {"dim": axis}
        got, want = bulkred.vector_norm(x, ord=0, axis=axis), torch.linalg.vector_norm(x, 0, **kw)
        assert got.dtype == want.dtype and torch.equal(got, want), (dtype, axis)
    got = bulkred.vector_norm(x, ord=0.0, dtype=torch.float64)
    assert got.dtype == torch.float64 and torch.equal(got, torch.linalg.vector_norm(x, 0, dtype=torch.float64))
    a = x.detach().float().nan_to_num().requires_grad_(True)
    bulkred.vector_norm(a, ord=0, axis=1).sum().backward()
    assert torch.equal(a.grad, torch.zeros_like(a))


@pytest.mark.parametrize("fn", ["var", "std", "var_mean", "std_mean"])
@pytest.mark.parametrize("correction", [1.3, 0.5, 0.0, 2, -1, -0.5, None])
def test_float_correction(fn, correction):
    torch = _torch()
    x = torch.randn(33, 1001, device="cuda", generator=_gen(torch, 6), dtype=torch.float64)
    for axis in (None, 1, 0):
        kw = {} if axis is None else {"dim": axis}
        got = getattr(bulkred, fn)(x, axis=axis, correction=correction)
        want = getattr(torch, fn)(x, correction=correction, **kw)
        for g, w in zip(got, want) if fn.endswith("_mean") else ((got, want),):
            torch.testing.assert_close(g, w, msg=f"{fn} {correction} {axis}")
    a = x[:4, :9].clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: getattr(bulkred, fn)(t, axis=1, correction=correction), (a,))
    one = torch.ones(3, 2, device="cuda")
    got, want = getattr(bulkred, fn)(one, axis=1, correction=2.5), getattr(torch, fn)(one, dim=1, correction=2.5)
    for g, w in zip(got, want) if fn.endswith("_mean") else ((got, want),):
        torch.testing.assert_close(g, w, equal_nan=True)  # N - correction < 0, deviations 0: NaN


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_logsumexp_of_integers_and_bool_is_float32(dtype):
    torch = _torch()
    g = _gen(torch, 7)
    lo, hi = (0, 2) if dtype == "bool" else (0, 60) if dtype == "uint8" else (-30, 30)
    x = torch.randint(lo, hi, (65, 1003), device="cuda", generator=g).to(getattr(torch, dtype))
    for axis in (None, 1, 0):
        kw = {"dim": axis if axis is not None else (0, 1)}
        got, want = bulkred.logsumexp(x, axis=axis), torch.logsumexp(x, **kw)
        assert got.dtype == want.dtype == torch.float32, (dtype, axis)
        torch.testing.assert_close(got, want, rtol=2e-6, atol=2e-6, msg=f"{dtype} {axis}")


def test_numpy_scalar_options():
    torch = _torch()
    x = torch.randn(64, 513, device="cuda", generator=_gen(torch, 8))
    torch.testing.assert_close(bulkred.vector_norm(x, ord=np.float32(3), axis=1), torch.linalg.vector_norm(x, 3, dim=1))
    torch.testing.assert_close(bulkred.vector_norm(x, ord=np.int64(1)), torch.linalg.vector_norm(x, 1))
    torch.testing.assert_close(bulkred.var(x, correction=np.int64(1), axis=np.int64(0)), x.var(dim=0))
    torch.testing.assert_close(bulkred.std(x, correction=np.float64(1.3)), x.std(correction=1.3))
    y = x.clone()
    y[0, 0] = math.nan
    assert torch.equal(bulkred.max(y, ignore_nan=np.bool_(True), keepdims=np.bool_(True)), y.nan_to_num(-math.inf).amax(keepdim=True, dim=(0, 1)))
    assert torch.equal(bulkred.reduce("max", y, ignore_nan=np.bool_(True)), y.nan_to_num(-math.inf).amax())
    assert torch.equal(bulkred.reduce("sum", x, ignore_nan=np.bool_(False)), bulkred.sum(x))


# endregion

# region prod's gradient in torch.compile(fullgraph=True)


def test_prod_backward_compiles_fullgraph():
    torch = _torch()
    x = torch.randn(8, 33, device="cuda", generator=_gen(torch, 9), dtype=torch.float64) + 2
    x[0, 3] = 0.0  # one zero in a row
    x[1, 4] = x[1, 7] = 0.0  # two
    w = torch.randn(8, device="cuda", generator=_gen(torch, 10), dtype=torch.float64)

    def loss(t):
        return (bulkred.prod(t, axis=1) * w).sum()

    compiled = torch.compile(loss, fullgraph=True)
    a, c = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    compiled(a).backward()
    (torch.prod(c, dim=1) * w).sum().backward()
    torch.testing.assert_close(a.grad, c.grad)
    assert torch.equal(a.grad[1], torch.zeros_like(a.grad[1])) and a.grad[0, 3] != 0
    b = x[:3, :6].clone().requires_grad_(True)
    assert torch.autograd.gradgradcheck(lambda t: bulkred.prod(t, axis=1), (b,))


# endregion


# region torch's OpInfo samples of these rules

# The samples of torch's OpInfo database that exercise this file's rules (a 0-d input,
# dim=(), uint8 sums and any/all, a narrower dtype=, ord=0, a float or negative or None
# correction, logsumexp of integers), through the public functions: 0 wrong values, 0
# other result dtypes or shapes, 0 refused. Each kernel compiles once:
# BULKRED_OPINFO_SAMPLES (default 400) takes an evenly spaced subset, 0 all of them. On
# the host (a CPU torch 2.14, the kernels simulated from the plan) the same adapter
# passes all 3,644 samples of these ops, of which 1,085 exercise the rules.
_OPINFO_OPS = {
    "sum": "sum", "nansum": "nansum", "mean": "mean", "nanmean": "nanmean", "prod": "prod", "amax": "amax",
    "amin": "amin", "any": "any", "all": "all", "count_nonzero": "count_nonzero", "logsumexp": "logsumexp",
    "argmax": "argmax", "argmin": "argmin", "aminmax": "aminmax", "var": "var", "std": "std", "var_mean": "var_mean",
    "std_mean": "std_mean", "linalg.vector_norm": "vector_norm",
}
_OPINFO_DTYPES = ("float32", "float64", "float16", "bfloat16", "uint8", "int8", "int32", "int64", "bool")


def _opinfo_call(name, s):
    """The bulkred call of an OpInfo sample of ``name`` (torch's positional arguments as keywords)."""
    x, args, kw = s.input, list(s.args), dict(s.kwargs)
    if name in ("var", "std", "var_mean", "std_mean"):
        if args and isinstance(args[0], bool):
            kw["unbiased"] = args.pop(0)
        kw.update(zip(["dim", "unbiased", "keepdim"], args))
        kw["correction"] = int(kw.pop("unbiased")) if "unbiased" in kw else kw.get("correction", 1)
    elif name == "linalg.vector_norm":
        kw.update(zip(["ord", "dim", "keepdim"], args))
    else:
        kw.update(zip(["dim", "keepdim"], args))
    return getattr(bulkred, _OPINFO_OPS[name])(x, **kw)


def _exercises_the_rules(name, s):
    x, args, kw = s.input, s.args, s.kwargs
    dim = kw.get("dim", args[0] if args and name not in ("linalg.vector_norm",) else None)
    ord_ = kw.get("ord", args[0] if args and name == "linalg.vector_norm" else 2)
    corr = kw.get("correction", 1)
    return (
        x.dim() == 0 or dim == () or dim == [] or str(x.dtype) in ("torch.uint8", "torch.bool") or "dtype" in kw
        or ord_ == 0 or corr is None or (isinstance(corr, float) and not corr.is_integer()) or (corr or 0) < 0
        or (name == "logsumexp" and not x.dtype.is_floating_point)
    )


def test_opinfo_samples_of_the_rules():
    import os

    torch = _torch()
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except Exception as e:  # noqa: BLE001 - torch's test package needs expecttest
        pytest.skip(f"torch's OpInfo database is not importable: {e}")
    cases = []
    for op in op_db:
        if op.name not in _OPINFO_OPS or op.variant_test_name not in ("", "unbiased"):
            continue
        supported = op.supported_dtypes("cuda")
        for dname in _OPINFO_DTYPES:
            if getattr(torch, dname) in supported:
                samples = op.sample_inputs("cuda", getattr(torch, dname))
                cases += [(op, dname, s) for s in samples if _exercises_the_rules(op.name, s)]
    limit = int(os.environ.get("BULKRED_OPINFO_SAMPLES", "400"))
    if limit and len(cases) > limit:
        cases = cases[:: -(-len(cases) // limit)]
    counts = {"pass": 0, "refused": 0, "different": 0}
    problems = []
    for op, dname, s in cases:
        try:
            want = op(s.input, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001 - torch refuses it too
            continue
        what = f"{op.name} {dname} {tuple(s.input.shape)} {s.args} {s.kwargs}"
        try:
            got = _opinfo_call(op.name, s)
        except bulkred.ReductionError as e:
            counts["refused"] += 1
            problems.append(f"refused {what}: {e}")
            continue
        wrong = None
        for g, w in zip(*((list(r) if isinstance(r, tuple) else [r]) for r in (got, want)), strict=True):
            if g.dtype != w.dtype or g.shape != w.shape:
                wrong = f"{g.dtype}{tuple(g.shape)} != {w.dtype}{tuple(w.shape)}"
                break
            tol = 1e-2 if dname in ("float16", "bfloat16") else 1e-4
            try:
                torch.testing.assert_close(g, w, rtol=tol, atol=tol, equal_nan=True)
            except AssertionError as e:
                wrong = str(e)[:200]
                break
        counts["different" if wrong else "pass"] += 1
        if wrong:
            problems.append(f"{what}: {wrong}")
    print("OpInfo samples of torch's rules:", counts)
    assert not problems, (counts, problems[:20])
    assert counts["pass"] > 100, counts


# endregion


# region Complex numbers against torch


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_against_torch(dtype):
    """Every function that takes complex, on a complex [65, 4099] and three views of it
    (transposed, stepped, at an offset), over every axis, a row and a column: against
    torch's own result in complex128 (float64), within the accumulation's bound of the
    magnitudes; torch's result dtypes; logsumexp of parts up to ~80 (its bound the sum's
    condition); a product of unit-modulus numbers; the gradients by gradcheck in
    complex128."""
    torch = _torch()
    z = torch.randn(65, 4099, dtype=getattr(torch, dtype), device="cuda", generator=_gen(torch, 11))
    z[z.real.abs() < 0.05] = 0  # zeros for count_nonzero and all
    eps = 2.0**-24 if dtype == "complex64" else 2.0**-53
    cases = [
        ("sum", {}, torch.sum), ("mean", {}, torch.mean), ("var", {"correction": 1}, torch.var),
        ("std", {"correction": 0}, lambda t, **k: torch.std(t, correction=0, **k)),
        ("var_mean", {"correction": 1}, torch.var_mean), ("std_mean", {"correction": 1}, torch.std_mean),
        ("vector_norm", {}, torch.linalg.vector_norm), ("vector_norm", {"ord": 1}, lambda t, **k: torch.linalg.vector_norm(t, 1, **k)),
        ("vector_norm", {"ord": math.inf}, lambda t, **k: torch.linalg.vector_norm(t, math.inf, **k)),
        ("vector_norm", {"ord": 0}, lambda t, **k: torch.linalg.vector_norm(t, 0, **k)),
        ("vector_norm", {"ord": 3}, lambda t, **k: torch.linalg.vector_norm(t, 3, **k)),
        ("count_nonzero", {}, torch.count_nonzero), ("any", {}, torch.any), ("all", {}, torch.all),
    ]
    for t in (z, z.t(), z[:, ::3], z[3:, 1:]):
        wide = t.to(torch.complex128)
        for axis in (None, 1, 0):
            kw = {} if axis is None else {"dim": axis}
            n = t.numel() if axis is None else t.shape[axis]
            mag = (wide.abs().sum() if axis is None else wide.abs().sum(dim=axis)).double()
            for fn, opts, tfn in cases:
                if fn in ("any", "all") and axis is None:
                    got, want = getattr(bulkred, fn)(t), tfn(t)
                else:
                    got, want = getattr(bulkred, fn)(t, **opts, **kw), tfn(t, **kw)
                ref = tfn(wide, **kw) if fn not in ("var", "var_mean", "std_mean") else tfn(wide, correction=opts["correction"], **kw)
                for g, w, r in zip(*((list(x) if isinstance(x, tuple) else [x]) for x in (got, want, ref)), strict=True):
                    assert g.dtype == w.dtype and g.shape == w.shape, (fn, opts, axis, g.dtype, w.dtype)
                    if not (g.dtype.is_floating_point or g.dtype.is_complex):
                        assert torch.equal(g, w), (fn, axis)
                        continue
                    m = mag / n if fn in ("mean", "var_mean", "std_mean") and g.is_complex() else mag
                    if fn.startswith(("var", "std")) and not g.is_complex():
                        m = (wide.abs() ** 2).sum(**kw).double() / max(n - 1, 1)
                        m = m.sqrt() if fn.startswith("std") else m
                    bound = 16 * n * eps * m + 8 * eps * r.abs().double() + 1e-30
                    assert ((g.to(r.dtype) - r).abs() <= bound).all(), (fn, opts, axis, float((g.to(r.dtype) - r).abs().max()))
    zn = z.clone()  # torch's complex NaN (either part) for nansum and nanmean; row 7 all NaN
    zn[:, 5] = complex(math.nan, 1.0)
    zn[3, ::7] = complex(2.0, math.nan)
    zn[7] = complex(math.nan, math.nan)
    for t in (zn, zn.t(), zn[:, ::3]):
        keep = ~t.isnan()
        wide = torch.where(keep, t, torch.zeros_like(t)).to(torch.complex128)
        for axis in (None, 1, 0):
            kw = {} if axis is None else {"dim": axis}
            n = t.numel() if axis is None else t.shape[axis]
            for fn in ("nansum", "nanmean"):
                got, want = getattr(bulkred, fn)(t, **kw), getattr(torch, fn)(t, **kw)
                count = keep.sum(**kw)
                ref = wide.sum(**kw) / (count if fn == "nanmean" else 1)  # 0 / 0: NaN where every element is NaN
                mag = wide.abs().sum(**kw).double() / (count.clamp_min(1) if fn == "nanmean" else 1)
                assert got.dtype == want.dtype == t.dtype and got.shape == want.shape, (fn, axis)
                err = (got.to(torch.complex128) - ref).abs()
                assert torch.equal(err.isnan(), ref.isnan()), (fn, axis)  # NaN only where every element is NaN
                assert (err[~err.isnan()] <= (16 * n * eps * mag + 1e-30)[~err.isnan()]).all(), (fn, axis)
    w = z * 20  # complex logsumexp: real parts up to ~80 (the shift), angles past 2 pi
    for t in (w, w.t(), w[:, ::3], w[3:, 1:]):
        wide = t.to(torch.complex128)
        for axis in (None, 1, 0):
            kw = {"dim": (0, 1) if axis is None else axis}  # torch's logsumexp needs dim
            got, want, ref = bulkred.logsumexp(t, **kw), torch.logsumexp(t, **kw), torch.logsumexp(wide, **kw)
            assert got.dtype == want.dtype == t.dtype and got.shape == want.shape, ("logsumexp", axis, got.dtype)
            n = t.numel() if axis is None else t.shape[axis]
            m = wide.real.amax(**kw, keepdim=True)
            terms = (wide - m).exp()
            cond = terms.abs().sum(**kw) / terms.sum(**kw).abs()  # the sum's error relative to |sum|
            bound = 4 * (n + 2) * eps * cond + 8 * eps * ref.abs() + 1e-30
            err = (got.to(torch.complex128) - ref).abs()
            assert (err <= bound).all(), ("logsumexp", axis, float((err / bound).max()))
    u = z[:8, :40] / z[:8, :40].abs().clamp_min(1e-3)  # near the unit circle: a product that stays finite
    got, want = bulkred.prod(u, axis=1), torch.prod(u.to(torch.complex128), dim=1)
    assert got.dtype == u.dtype
    torch.testing.assert_close(got.to(torch.complex128), want, rtol=64 * eps, atol=64 * eps)
    a = torch.randn(3, 6, dtype=torch.complex128, device="cuda", generator=_gen(torch, 12)).requires_grad_(True)
    for fn, opts in [("sum", {}), ("mean", {}), ("prod", {}), ("var", {"correction": 1}), ("std", {"correction": 1}),
                     ("vector_norm", {}), ("vector_norm", {"ord": 3}), ("vector_norm", {"ord": 1}), ("nansum", {}),
                     ("nanmean", {}), ("logsumexp", {})]:
        assert torch.autograd.gradcheck(lambda t: getattr(bulkred, fn)(t, axis=1, **opts), (a,)), fn


def test_complex32_against_torch():
    """complex32 (torch's chalf: float16 parts) in the functions torch's CUDA takes it in
    (sum, mean, prod, nansum, nanmean), on a [65, 4099] tensor and three views, over
    every axis, a row and a column: torch's result dtype (complex32; complex64 with
    dtype=), the values against complex128 of the same elements within float32
    accumulation plus one float16 rounding of the result, and against torch's own CUDA
    result where torch computes it; a product of unit-modulus numbers; NaN parts for
    nansum and nanmean."""
    torch = _torch()
    z64 = torch.randn(65, 4099, dtype=torch.complex64, device="cuda", generator=_gen(torch, 13))
    z = z64.to(torch.complex32)
    zn = z64.clone()
    zn[:, 5] = complex(math.nan, 1.0)
    zn[3, ::7] = complex(2.0, math.nan)
    zn[7] = complex(math.nan, math.nan)
    zn = zn.to(torch.complex32)
    u = z64[:8, :40]
    u = (u / u.abs().clamp_min(1e-3)).to(torch.complex32)  # near the unit circle: a product that stays finite
    eps, half = 2.0**-24, 2.0**-11

    def reference(fn, t, kw):
        w = t.to(torch.complex128)
        if fn in ("nansum", "nanmean"):
            keep = ~w.isnan()
            r = torch.where(keep, w, torch.zeros_like(w)).sum(**kw)
            return (r / keep.sum(**kw) if fn == "nanmean" else r), torch.where(keep, w, torch.zeros_like(w)).abs()
        return getattr(torch, fn)(w, **kw), w.abs()

    checked = 0
    for fn, ts in [("sum", (z, z.t(), z[:, ::3], z[3:, 1:])), ("mean", (z, z.t(), z[:, ::3])), ("prod", (u, u.t())),
                   ("nansum", (zn, zn.t(), zn[:, ::3])), ("nanmean", (zn, zn.t()))]:
        for t in ts:
            for axis in (None, 1, 0):
                kw = {} if axis is None else {"dim": axis}
                for dtype in (None, torch.complex64):
                    got = getattr(bulkred, fn)(t, **kw, **({} if dtype is None else {"dtype": dtype}))
                    assert got.dtype == (dtype or torch.complex32), (fn, axis, got.dtype)
                    ref, mags = reference(fn, t, kw)
                    n = t.numel() if axis is None else t.shape[axis]
                    mag = mags.sum(**kw) / (n if fn == "mean" else 1)
                    if fn == "nanmean":
                        mag = mag / (~t.to(torch.complex64).isnan()).sum(**kw).clamp_min(1)
                    if fn == "prod":
                        mag = torch.ones_like(mag) * 2  # unit-modulus factors
                    rnd = half if dtype is None else eps
                    bound = 16 * n * eps * mag + 2 * rnd * ref.abs() + 1e-6
                    err = (got.to(torch.complex128) - ref).abs()
                    assert torch.equal(err.isnan(), ref.isnan()), (fn, axis)  # NaN only where every element is NaN
                    ok = ~err.isnan()
                    assert (err[ok] <= bound[ok]).all(), (fn, axis, dtype, float(err[ok].max()))
                    try:
                        want = getattr(torch, fn)(t, **kw, **({} if dtype is None else {"dtype": dtype}))
                    except (RuntimeError, TypeError):  # torch's CUDA lacks this one (mean of complex32)
                        continue
                    assert want.dtype == got.dtype and want.shape == got.shape, (fn, axis, want.dtype)
                    torch.testing.assert_close(got.to(torch.complex64), want.to(torch.complex64), rtol=4 * rnd,
                                               atol=float(bound[ok].max()), equal_nan=True)
                    checked += 1
    assert checked > 20, checked
    for fn in ("var", "any", "vector_norm"):
        with pytest.raises(bulkred.ReductionError, match="a complex32 x is not supported"):
            getattr(bulkred, fn)(z)


# endregion


# region Every OpInfo sample of torch's reduction ops


def test_opinfo_every_sample():
    """Every sample of torch's OpInfo database for the 31 reduction ops
    (tests/opinfo_reductions.py: sum ... linalg.vector_norm, torch.norm, linalg.norm,
    linalg.matrix_norm, max/min with and without dim), forward in every CUDA dtype and
    gradients in float64 and complex128, through bulkred against torch on the GPU: the
    counts per op (passed / wrong / other dtype / refused by name) printed; 0 wrong, 0
    other dtype, and only the refusals of ``ALLOWED`` (matrix norms; docs/from_torch.md):
    complex32 (sum, prod, nansum, nanmean) and complex logsumexp pass. The kernels of all samples are
    compiled first in parallel processes (into this run's disk cache)."""
    import os
    import time

    torch = _torch()
    try:
        import opinfo_reductions as O
        from torch.testing._internal.common_methods_invocations import op_db  # noqa: F401
    except Exception as e:  # noqa: BLE001 - torch's test package needs expecttest
        pytest.skip(f"torch's OpInfo database is not importable: {e}")
    from bulkred_dialect.backend_ptx.device import current_arch

    log = os.path.join(os.environ["OUT"], "opinfo_counts.txt") if os.environ.get("OUT") else None

    def note(text: str) -> None:  # also into $OUT as it goes (gpu.sh's runs: kept if the step is cut short)
        print(text)
        if log:
            with open(log, "a") as f:
                f.write(text + "\n")

    t0 = time.perf_counter()
    processes = max(1, min(14, (os.cpu_count() or 2) - 2))
    compiled = O.precompile(current_arch(), processes) + O.precompile(current_arch(), processes, grad=True)
    t1 = time.perf_counter()
    note(f"{compiled} kernel builds in {processes} processes in {t1 - t0:.1f} s")
    forward = O.run(torch, bulkred, O.samples(torch, "cuda"))
    t2 = time.perf_counter()
    note(f"OpInfo forward samples, every CUDA dtype ({t2 - t1:.1f} s):\n{O.table(forward)}")
    grads = O.run(torch, bulkred, O.samples(torch, "cuda", grad=True), grad=True)
    t3 = time.perf_counter()
    note(f"OpInfo gradient samples, float64 and complex128 ({t3 - t2:.1f} s):\n{O.table(grads)}")
    for c in (*forward.values(), *grads.values()):
        for problem in c.problems[:5]:
            note(f"  {problem[:400]}")
    problems = [p for counts in (forward, grads) for c in counts.values() for p in c.problems]
    assert not problems, (len(problems), problems[:20])
    assert sum(c.passed for c in forward.values()) > 4000 and sum(c.passed for c in grads.values()) > 500


# endregion
