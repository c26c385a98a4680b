"""``bulkred.nansum``, ``nanmean`` and ``aminmax`` on the GPU against torch.nansum,
torch.nanmean and torch.aminmax on CUDA tensors: whole, by row, by column, over a
middle axis and over axes (0, 2), at odd shapes and sizes that take several CTAs;
float32, float16, bfloat16 and float64, and the integer and bool inputs nansum and
aminmax take; NaN placed at random, in whole rows, everywhere and beside infinities; a
count above 2^24 (nanmean's integer count); keepdims, out=, strided views, a view off
its alignment (grid_gather), numpy inputs, the recorded short path, torch.compile; and
the gradients (NaN, ties, gradcheck). tests/test_nan_functions.py checks the same on
the CPU (the plans, the modules, the interpreter, the host-simulated gradients)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import bulkred_dialect as bulkred
from gpu import cuda_torch

pytestmark = pytest.mark.gpu


_torch = cuda_torch  # torch with a CUDA device, else the test skips (tests/gpu/__init__.py)


SHAPES = [
    ((1000,), None),
    ((1 << 20,), None),
    ((3, 1001), 1),
    ((257, 4096), -1),
    ((1001, 3), 0),
    ((4096, 300), 0),
    ((5, 777, 9), 1),
    ((64, 100, 33), (0, 2)),
    ((1,), None),
]
DTYPES = ["float32", "float16", "bfloat16", "float64"]
CASES = [(shape, axis, "float32") for shape, axis in SHAPES] + [
    (shape, axis, d) for d in DTYPES[1:] for shape, axis in (((3, 1001), 1), ((4096, 300), 0), ((64, 100, 33), (0, 2)))
]
PLACEMENTS = ("random", "rows", "none", "inf")


def _dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis % ndim,)


def _x(torch, shape, dtype, how="random", axis=None, seed=17):
    """A CUDA tensor with NaN placed: ``random`` (a tenth), ``rows`` (also every element of
    the first output and of one in the middle), ``none``, ``inf`` (NaN beside +-inf)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(*shape, device="cuda", generator=g)
    if how in ("random", "rows", "inf"):
        x[torch.rand(*shape, device="cuda", generator=g) < 0.1] = math.nan
    kept = [i for i in range(x.dim()) if i not in _dims(axis, x.dim())]
    if how == "rows" and kept:
        for at in (0, x.shape[kept[0]] // 2):
            idx = [slice(None)] * x.dim()
            idx[kept[0]] = at
            x[tuple(idx)] = math.nan
    if how == "inf":
        flat = x.view(-1)
        flat[torch.randint(0, flat.numel(), (5,), device="cuda", generator=g)] = math.inf
        flat[torch.randint(0, flat.numel(), (5,), device="cuda", generator=g)] = -math.inf
    return x.to(getattr(torch, dtype))


def _tol(dtype):
    return {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12), "float16": (2e-3, 1e-3), "bfloat16": (2e-2, 1e-2)}[dtype]


def _close(torch, got, want, dtype, scale=None):
    """``got`` within the dtype's tolerance of ``want`` (NaN where it is NaN, an infinity
    where it is that infinity); ``scale`` (the sum, or the mean, of |x| reduced into each
    result) widens the tolerance by ``rtol * scale``: a sum that cancels to near 0 keeps
    the rounding errors of its large terms."""
    rtol, atol = _tol(dtype)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    g, w = got.double(), want.double()
    finite = torch.isfinite(w)
    assert torch.equal(g[~finite].nan_to_num(0), w[~finite].nan_to_num(0)), "NaN and infinities where torch has them"
    assert torch.equal(g[~finite].isnan(), w[~finite].isnan()), "NaN where torch has NaN"
    bound = rtol * w.abs() + atol
    if scale is not None:
        bound = bound + rtol * scale.double().reshape(w.shape).nan_to_num(0, posinf=0)
    err = (g - w).abs()
    bad = finite & ~(err <= bound)
    assert not bad.any(), f"{int(bad.sum())} of {w.numel()} off: got {g[bad][:4].tolist()}, want {w[bad][:4].tolist()}"


def _same(torch, got, want) -> bool:
    """Bit for bit, NaN where NaN (a minimum and a maximum are elements of x)."""
    return got.dtype == want.dtype and torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(0), want.nan_to_num(0))


def _scale(torch, x, d, keep=False, mean=False):
    a = x.double().abs()
    return torch.nanmean(a, dim=d, keepdim=keep) if mean else torch.nansum(a, dim=d, keepdim=keep)


@pytest.mark.parametrize("how", PLACEMENTS)
@pytest.mark.parametrize("shape, axis, dtype", CASES)
def test_nansum_nanmean_aminmax(shape, axis, dtype, how):
    torch = _torch()
    x = _x(torch, shape, dtype, how, axis)
    d = _dims(axis, len(shape))
    acc = x.double()  # references in float64, rounded once to x's dtype
    _close(torch, bulkred.nansum(x, axis=axis), torch.nansum(acc, dim=d).to(x.dtype), dtype, _scale(torch, x, d))
    _close(torch, bulkred.nanmean(x, axis=axis), torch.nanmean(acc, dim=d).to(x.dtype), dtype, _scale(torch, x, d, mean=True))
    lo, hi = bulkred.aminmax(x, axis=axis)
    assert _same(torch, lo, torch.amin(x, dim=d)) and _same(torch, hi, torch.amax(x, dim=d))
    if not isinstance(axis, tuple):  # torch.aminmax takes one dim or None
        r = torch.aminmax(x, dim=axis)
        assert _same(torch, lo, r.min) and _same(torch, hi, r.max)


def test_all_nan_and_empty():
    """All NaN: nansum 0, nanmean NaN (0 / 0), aminmax NaN; empty: 0, NaN, refused."""
    torch = _torch()
    x = torch.full((4, 5000), math.nan, device="cuda")
    x[1, 17] = 2.5
    assert bulkred.nansum(x, axis=1).tolist()[0] == 0 and bulkred.nansum(x, axis=1).tolist()[1] == 2.5
    m = bulkred.nanmean(x, axis=1)
    assert math.isnan(m[0]) and float(m[1]) == 2.5
    torch.testing.assert_close(m, torch.nanmean(x, dim=1), equal_nan=True)
    lo, hi = bulkred.aminmax(x, axis=1)
    assert lo.isnan().all() and hi.isnan().all()
    e = torch.empty(0, 3, device="cuda")
    assert torch.equal(bulkred.nansum(e, axis=0), torch.nansum(e, dim=0))
    assert bulkred.nanmean(e, axis=0).isnan().all()
    with pytest.raises(bulkred.ReductionError, match="has no elements, and aminmax has no identity"):
        bulkred.aminmax(e, axis=0)


def test_a_count_above_float32s_integers():
    """nanmean's count is an integer register, exact past 2^24 non-NaN elements (where
    adding 1 to a float32 count would stop); one NaN in a thousand."""
    torch = _torch()
    n = (1 << 24) + 30001
    x = torch.ones(n, device="cuda")
    x[::1000] = math.nan
    x[1::2] = 4.0
    got = bulkred.nanmean(x)
    torch.testing.assert_close(got, torch.nanmean(x.double()).float(), rtol=1e-6, atol=0)
    torch.testing.assert_close(bulkred.nansum(x).double(), torch.nansum(x.double()), rtol=1e-5, atol=0)
    by_rows = x[: 4 * (n // 4)].view(4, -1)
    torch.testing.assert_close(bulkred.nanmean(by_rows, axis=1), torch.nanmean(by_rows.double(), dim=1).float(), rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8", "int16", "int64", "bool"])
@pytest.mark.parametrize("shape, axis", [((3, 1001), 1), ((4096, 300), 0), ((1 << 20,), None), ((64, 100, 33), (0, 2))])
def test_integer_and_bool_inputs(shape, axis, dtype):
    """An integer x has no NaN: nansum is its sum (int64, as torch's; uint8: uint64 by
    default, as bulkred.sum, so dtype=int64 here), aminmax its min and max in x's dtype."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(5)
    lo_, hi_ = (0, 2) if dtype == "bool" else (0, 256) if dtype == "uint8" else (-100, 100)
    x = torch.randint(lo_, hi_, shape, device="cuda", generator=g).to(getattr(torch, dtype))
    d = _dims(axis, len(shape))
    s = bulkred.nansum(x, axis=axis, dtype=torch.int64 if dtype == "uint8" else None)
    want = torch.nansum(x, dim=d)
    assert s.dtype == torch.int64 and torch.equal(s, want)
    lo, hi = bulkred.aminmax(x, axis=axis)
    assert lo.dtype == hi.dtype == x.dtype
    assert torch.equal(lo, torch.amin(x, dim=d)) and torch.equal(hi, torch.amax(x, dim=d))
    if not isinstance(axis, tuple):
        r = torch.aminmax(x, dim=axis)
        assert torch.equal(lo, r.min) and torch.equal(hi, r.max)
    with pytest.raises(bulkred.ReductionError, match="expected a floating-point input"):
        bulkred.nanmean(x, axis=axis)


def test_dtype_options_keepdims_out_views_numpy():
    torch = _torch()
    x = _x(torch, (64, 1000, 33), "float32", "rows", 1)
    d02 = (0, 2)
    _close(torch, bulkred.nansum(x, axis=d02, keepdims=True), torch.nansum(x, dim=d02, keepdim=True), "float32",
           _scale(torch, x, d02, keep=True))
    _close(torch, bulkred.nanmean(x, axis=1, keepdims=True), torch.nanmean(x, dim=1, keepdim=True), "float32",
           _scale(torch, x, (1,), keep=True, mean=True))
    lo, hi = bulkred.aminmax(x, axis=-1, keepdims=True)
    r = torch.aminmax(x, dim=-1, keepdim=True)
    assert lo.shape == (64, 1000, 1) and _same(torch, lo, r.min) and _same(torch, hi, r.max)
    h = x.half()
    _close(torch, bulkred.nansum(h, dtype=torch.float32), torch.nansum(h.double()).float(), "float32",
           _scale(torch, h, (0, 1, 2)))
    _close(torch, bulkred.nanmean(h, axis=1, dtype=torch.float32), torch.nanmean(h.double(), dim=1).float(), "float32",
           _scale(torch, h, (1,), mean=True))
    o = torch.empty(1000, device="cuda", dtype=torch.float64)  # a sum takes out='s dtype, as torch.nansum does
    assert bulkred.nansum(x, axis=d02, out=o) is o
    _close(torch, o, torch.nansum(x.double(), dim=d02), "float32", _scale(torch, x, d02))
    outs = (torch.empty(64, 33, device="cuda"), torch.empty(64, 33, device="cuda"))
    assert bulkred.aminmax(x, axis=1, out=outs) is outs
    assert _same(torch, outs[0], torch.amin(x, dim=1)) and _same(torch, outs[1], torch.amax(x, dim=1))
    for v in (x[:, :, 3].t(), x[:, ::3], x.transpose(0, 2), x[1:, 1:, :]):  # views read in place, one off its alignment
        for axis in (1, d02 if v.dim() == 3 else 0):
            d = _dims(axis, v.dim())
            _close(torch, bulkred.nansum(v, axis=axis), torch.nansum(v.double(), dim=d).float(), "float32", _scale(torch, v, d))
            _close(torch, bulkred.nanmean(v, axis=axis), torch.nanmean(v.double(), dim=d).float(), "float32",
                   _scale(torch, v, d, mean=True))
            lo, hi = bulkred.aminmax(v, axis=axis)
            assert _same(torch, lo, torch.amin(v, dim=d)) and _same(torch, hi, torch.amax(v, dim=d))
    a = x[:4].cpu().numpy()  # numpy in, numpy out (copied)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "Mean of empty slice"
        want_s, want_m = np.nansum(a.astype(np.float64), axis=1), np.nanmean(a.astype(np.float64), axis=1)
    scale = np.nansum(np.abs(a.astype(np.float64)), axis=1)
    got_s = bulkred.nansum(a, axis=1)
    assert isinstance(got_s, np.ndarray) and np.all(np.abs(got_s - want_s) <= 1e-4 * scale + 1e-5)
    got_m = bulkred.nanmean(a, axis=1)
    assert np.array_equal(np.isnan(got_m), np.isnan(want_m))
    assert np.allclose(got_m, want_m, rtol=1e-4, atol=1e-5, equal_nan=True)
    r = bulkred.aminmax(a, axis=0)
    assert np.array_equal(r.min, a.min(axis=0), equal_nan=True) and np.array_equal(r.max, a.max(axis=0), equal_nan=True)


def test_the_recorded_short_path_gives_the_same():
    torch = _torch()
    x = _x(torch, (512, 1024), "float32")
    for _ in range(3):
        _close(torch, bulkred.nanmean(x, axis=1), torch.nanmean(x.double(), dim=1).float(), "float32",
               _scale(torch, x, (1,), mean=True))
        _close(torch, bulkred.nansum(x), torch.nansum(x.double()).float(), "float32", _scale(torch, x, (0, 1)))
        lo, hi = bulkred.aminmax(x, axis=0)
        assert _same(torch, lo, torch.amin(x, dim=0)) and _same(torch, hi, torch.amax(x, dim=0))


def test_torch_compile_fullgraph():
    torch = _torch()
    g = _x(torch, (64, 1024), "float32")

    def f(t):
        lo, hi = bulkred.aminmax(t, axis=-1, keepdims=True)
        return (t - lo) / (hi - lo), bulkred.nansum(t, axis=0), bulkred.nanmean(t, axis=1)

    z, s, m = torch.compile(f, fullgraph=True)(g)
    r = torch.aminmax(g, dim=-1, keepdim=True)
    torch.testing.assert_close(z, (g - r.min) / (r.max - r.min), equal_nan=True)
    _close(torch, s, torch.nansum(g.double(), dim=0).float(), "float32", _scale(torch, g, (0,)))
    _close(torch, m, torch.nanmean(g.double(), dim=1).float(), "float32", _scale(torch, g, (1,), mean=True))


# region Gradients


@pytest.mark.parametrize("fn", ["nansum", "nanmean"])
def test_nan_gradients_match_torch(fn):
    """nansum: the gradient where x is not NaN, 0 where it is; nanmean: grad / count
    there, NaN where a result's elements are all NaN (as torch)."""
    torch = _torch()
    ref = getattr(torch, fn)
    for shape, axis, keep in (((64, 33), None, False), ((64, 33), 1, False), ((6, 40, 7), (0, 2), True), ((40, 24), 0, False)):
        base = _x(torch, shape, "float32", "rows", axis)
        for view in (False, True):
            x0 = base.t() if view and base.dim() == 2 else base
            ax = axis if not (view and base.dim() == 2 and axis is not None) else 1 - axis
            a = x0.detach().requires_grad_(True)
            b = x0.detach().clone().requires_grad_(True)
            y1 = getattr(bulkred, fn)(a, axis=ax, keepdims=keep)
            y2 = ref(b, dim=_dims(ax, b.dim()), keepdim=keep)
            assert y1.requires_grad and y1.shape == y2.shape
            w = torch.randn(y2.shape, device="cuda", generator=torch.Generator(device="cuda").manual_seed(2))
            (y1 * w).sum().backward()
            (y2 * w).sum().backward()
            torch.testing.assert_close(a.grad, b.grad, rtol=2e-4, atol=2e-5, equal_nan=True, msg=f"{fn} {shape} {ax} {keep} view={view}")


def test_aminmax_gradients_match_torch():
    """Each result's gradient split evenly among its ties (torch.aminmax's backward), both
    results or one."""
    torch = _torch()
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0], [1.0, math.nan, 2.0, 1.0]], device="cuda")
    wmin = torch.tensor([1.0, 10.0, 100.0], device="cuda")
    wmax = torch.tensor([2.0, 20.0, 200.0], device="cuda")
    a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    # torch.aminmax has no derivative before torch 2.12: the same as its amin and amax, each
    # split evenly among its ties (torch's amax/amin backward)
    r1 = bulkred.aminmax(a, axis=1)
    lo2, hi2 = torch.amin(b, dim=1), torch.amax(b, dim=1)
    ((r1.min * wmin).sum() + (r1.max * wmax).sum()).backward()
    ((lo2 * wmin).sum() + (hi2 * wmax).sum()).backward()
    torch.testing.assert_close(a.grad, b.grad, equal_nan=True)
    assert a.grad[:2].tolist() == [[1.0, 1.0, 1.0, 0.0], [7.5, 7.5, 7.5, 7.5]]
    a = x[:2].clone().requires_grad_(True)
    bulkred.aminmax(a, axis=1).min.sum().backward()  # the max takes no part
    assert a.grad.tolist() == [[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]]
    g = torch.Generator(device="cuda").manual_seed(4)
    y = torch.randn(6, 40, 7, device="cuda", generator=g)
    a, b = y.clone().requires_grad_(True), y.clone().requires_grad_(True)
    lo, hi = bulkred.aminmax(a, axis=(0, 2))
    ((lo * 2).sum() + hi.sum()).backward()
    ((torch.amin(b, dim=(0, 2)) * 2).sum() + torch.amax(b, dim=(0, 2)).sum()).backward()
    torch.testing.assert_close(a.grad, b.grad)


def test_gradcheck_float64():
    torch = _torch()
    torch.manual_seed(5)
    x = (torch.randperm(30, device="cuda").double().reshape(5, 6) / 7 + 0.5).requires_grad_(True)  # no ties
    for axis in (None, 1):
        assert torch.autograd.gradcheck(lambda t, axis=axis: bulkred.nansum(t, axis=axis), (x,), eps=1e-6, atol=1e-5)
        assert torch.autograd.gradcheck(lambda t, axis=axis: bulkred.nanmean(t, axis=axis), (x,), eps=1e-6, atol=1e-5)
        assert torch.autograd.gradcheck(lambda t, axis=axis: tuple(bulkred.aminmax(t, axis=axis)), (x,), eps=1e-6, atol=1e-5)
    assert torch.autograd.gradgradcheck(lambda t: bulkred.nanmean(t, axis=1), (x,))


# endregion
