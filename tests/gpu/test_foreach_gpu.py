"""The list reductions (bulkred_dialect/foreach.py) on the GPU: ``bulkred.foreach_norm``,
``total_norm``, ``clip_grad_norm_``, ``unscale_and_norm_`` and ``foreach_amax`` against a
float64 reference (the sum of ``|x|^p`` over each tensor converted to float64, its root)
and against torch's own functions (``torch.nn.utils.clip_grad_norm_`` and
``get_total_norm``, AMP's ``torch._amp_foreach_non_finite_check_and_unscale_``) on copies:
lists of mixed float32/float16/bfloat16, empty tensors, one tensor, 3,000 tiny tensors, a
tensor of 2^25 elements that several CTAs share; dense views read in place (transposed,
permuted, at an odd offset) and a strided view refused naming its index; ord 2, 1, 3, inf,
-inf and 0; NaN and inf (found_inf, error_if_nonfinite, a non-finite clip); bit-identical
results run to run; ``local=True`` combined by hand as all_reduce would; CUDA graph
capture; ``torch.compile(fullgraph=True)``; the descriptor table's reuse rule; the
caller's stream; and docs/foreach.md's examples. The distributed recipe (two ranks) is
tests/gpu/test_foreach_dist_gpu.py; tools/gpu_foreach_random.py is the randomized run.

Tolerances: a norm in float32 against the float64 reference within 1e-4 relative (the
bound tools/gpu_foreach_random.py derives; these lists are far smaller than its), ord inf
and -inf exact (a max of converted inputs), ord 0 counts exact below 2^24."""

from __future__ import annotations

import copy
import importlib.util
import math
import re
from pathlib import Path

import pytest

import bulkred_dialect as bulkred
from bulkred_dialect.errors import BulkredError
from gpu import cuda_torch

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
DEV = "cuda"
INF = math.inf
ORDS = [2.0, 1.0, 3.0, INF, -INF, 0.0]
RTOL = 1e-4


_torch = cuda_torch  # torch with a CUDA device, else the test skips (tests/gpu/__init__.py)


def _gen(seed: int):
    import torch

    return torch.Generator(device=DEV).manual_seed(seed)


def _rand(g, *shape, dtype="float32", scale=1.0):
    import torch

    return (torch.randn(*shape, device=DEV, generator=g) * scale).to(getattr(torch, dtype))


def _mixed(seed: int) -> list:
    """Twelve tensors: the three dtypes, two empty ones, one element, a transposed, a
    permuted and an offset view (dense, read in place), magnitudes from 0.01 to 100."""
    g = _gen(seed)
    transposed = _rand(g, 48, 64).t()
    permuted = _rand(g, 6, 7, 8, dtype="bfloat16").permute(2, 0, 1)
    offset = _rand(g, 1001, dtype="float16")[1:]  # 2 bytes off the allocation: no vector alignment
    ts = [
        _rand(g, 7),
        _rand(g, 33, 65, dtype="float16", scale=3.0),
        _rand(g, 0),
        _rand(g, 128, 3, dtype="bfloat16", scale=0.01),
        _rand(g, 1, scale=100.0),
        _rand(g, 4099, dtype="float16"),
        _rand(g, 5, 0, 3, dtype="bfloat16"),
        transposed,
        permuted,
        offset,
        _rand(g, 70001, scale=0.5),
        _rand(g, 3, 5, 7, 11, dtype="bfloat16"),
    ]
    assert not transposed.is_contiguous() and not permuted.is_contiguous()
    return ts


# ---------------------------------------------------------------- the float64 reference


def _is_root_ord(p: float) -> bool:
    return p not in (0.0, INF, -INF)


def _powers(ts, p: float):
    """float64 [len(ts)]: each tensor's sum of |x|^p (ord inf: max |x|, -inf: min |x|,
    0: the count of nonzeros, NaN counted), with the identities for empty tensors."""
    import torch

    out = []
    for t in ts:
        x = t.detach().reshape(-1).to(torch.float64).abs()
        if p == INF:
            v = x.max() if x.numel() else x.new_zeros(())
        elif p == -INF:
            v = x.min() if x.numel() else x.new_full((), INF)
        elif p == 0:
            v = (x != 0).sum().to(torch.float64)
        else:
            v = (x**p).sum()
        out.append(v)
    return torch.stack(out) if out else torch.zeros(0, dtype=torch.float64, device=DEV)


def _root(power, p: float):
    return power ** (1.0 / p) if _is_root_ord(p) else power


def ref_norms(ts, p: float):
    return _root(_powers(ts, p), p)


def ref_total_power(ts, p: float):
    """The local power of a list: what ``total_norm(ts, p, local=True)`` gives."""
    import torch

    pw = _powers(ts, p)
    if not len(ts):
        return torch.tensor(INF if p == -INF else 0.0, dtype=torch.float64, device=DEV)
    return pw.max() if p == INF else pw.min() if p == -INF else pw.sum()


def ref_total(ts, p: float):
    """The norm of the list viewed as one vector (ord 0: the count of nonzero elements)."""
    import torch

    if not len(ts):
        return torch.zeros((), dtype=torch.float64, device=DEV)
    return _root(ref_total_power(ts, p), p)


def _assert_norms(got, want, p: float, what: str, rtol: float = RTOL, exact: bool = True):
    """got (float32, from bulkred) against want (float64): NaN where NaN, inf where inf,
    exact for ord inf and -inf (and small counts) unless ``exact`` is False, else within
    rtol."""
    import torch

    assert got.dtype == torch.float32, f"{what}: dtype {got.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert not got.requires_grad, f"{what}: the result requires grad"
    g, w = got.detach().double().cpu().reshape(-1), want.detach().double().cpu().reshape(-1)
    assert torch.equal(g.isnan(), w.isnan()), f"{what}: NaN at {g.isnan().tolist()}, want at {w.isnan().tolist()}\n{g}\n{w}"
    inf = w.isinf()
    assert torch.equal(g[inf], w[inf]) and not g[~inf].isinf().any(), f"{what}: inf differs\n{g}\n{w}"
    fin = ~(w.isnan() | inf)
    if exact and (p in (INF, -INF) or (p == 0 and bool((w[fin] < 2**24).all()))):
        exact = w[fin].float().double()
        assert torch.equal(g[fin], exact), f"{what}: not exact\n{g[fin]}\n{exact}"
    else:
        err = (g[fin] - w[fin]).abs()
        bad = err > rtol * w[fin].abs()
        assert not bad.any(), f"{what}: relative error above {rtol} at {bad.nonzero().flatten().tolist()}\n{g[fin]}\n{w[fin]}"


def _same(a, b, what: str):
    """Bit-equal values (NaN equal to NaN), same dtype and shape."""
    import torch

    assert a.dtype == b.dtype and a.shape == b.shape, f"{what}: {a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}"
    torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{what}: {m}")


def _eps(dtype) -> float:
    import torch

    return torch.finfo(dtype).eps


def _tiny(dtype) -> float:
    import torch

    return torch.finfo(dtype).smallest_normal * _eps(dtype)  # the smallest subnormal


def _close_in_dtype(a, b, what: str, rtol: float = 0.0):
    """a and b of one dtype within one unit of that dtype's precision (plus rtol): the
    same product rounded once here, through float32 there."""
    import torch

    assert a.dtype == b.dtype and a.shape == b.shape, what
    torch.testing.assert_close(
        a.float(), b.float(), rtol=_eps(a.dtype) + rtol, atol=2 * _tiny(a.dtype), equal_nan=True, msg=lambda m: f"{what}: {m}"
    )


def _amp_unscale(grads, inv_scale, found_inf):
    """AMP's unscale of ``grads`` in place, one call per dtype as GradScaler.unscale_
    makes. torch's CUDA kernel has no bfloat16 case: bfloat16 grads get its formula
    (found_inf set where a value is not finite; each value times inv_scale in float32,
    rounded to its dtype)."""
    import torch

    groups: dict = {}
    for t in grads:
        if t.numel():  # nothing to unscale; torch's kernel need not see it
            groups.setdefault(t.dtype, []).append(t)
    for dtype, group in groups.items():
        if dtype != torch.bfloat16:
            torch._amp_foreach_non_finite_check_and_unscale_(group, found_inf, inv_scale)
            continue
        for t in group:
            found_inf.copy_(torch.maximum(found_inf, (~torch.isfinite(t)).any().float().reshape(1)))
            t.copy_((t.float() * inv_scale).to(t.dtype))


def _params_with_grads(grads):
    """torch.nn.Parameter objects whose .grad are clones of ``grads`` (torch's
    clip_grad_norm_ reads .grad; plain tensors have none)."""
    import torch

    params = []
    for g in grads:
        if not g.numel():
            continue  # adds nothing to the norm; torch's inf norm refuses an empty tensor
        p = torch.nn.Parameter(torch.empty(g.shape, dtype=g.dtype, device=g.device))
        p.grad = g.detach().clone()
        params.append(p)
    return params


def _index_named(message: str, index: int) -> bool:
    return re.search(rf"(?<![\d.]){index}(?![\d.])", message) is not None


# ------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("p", ORDS, ids=[f"ord{p:g}" for p in ORDS])
def test_norms_of_a_mixed_list(rng, p):
    """foreach_norm, total_norm (float32, 0-d) and foreach_amax of twelve tensors of three
    dtypes, two of them empty, three of them dense views read in place."""
    _torch()
    ts = _mixed(int(rng.integers(1 << 31)))
    _assert_norms(bulkred.foreach_norm(ts, p), ref_norms(ts, p), p, f"foreach_norm ord {p}, {rng!r}")
    _assert_norms(bulkred.foreach_norm(ts, ord=p), ref_norms(ts, p), p, f"foreach_norm(ord=) {p}, {rng!r}")
    total = bulkred.total_norm(ts, p)
    assert total.shape == () and total.device.type == "cuda"
    _assert_norms(total, ref_total(ts, p), p, f"total_norm ord {p}, {rng!r}")
    amax = bulkred.foreach_amax(ts)
    _assert_norms(amax, ref_norms(ts, INF), INF, f"foreach_amax, {rng!r}")
    assert amax.device == ts[0].device and amax.shape == (len(ts),)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, INF, -INF])
def test_total_norm_is_get_total_norm(p):
    """On float32 lists, total_norm equals torch.nn.utils.get_total_norm (torch's
    _foreach_norm accumulates float32 in float32 too), and foreach_norm equals
    torch.stack(torch._foreach_norm(ts, ord)); the default ord is 2."""
    torch = _torch()
    g = _gen(3)
    ts = [_rand(g, 1000), _rand(g, 17, 33).t(), _rand(g, 1), _rand(g, 65537, scale=0.1), _rand(g, 4, 4, 4)]
    torch.testing.assert_close(bulkred.total_norm(ts, p), torch.nn.utils.get_total_norm(ts, p), rtol=1e-5, atol=0)
    torch.testing.assert_close(bulkred.foreach_norm(ts, p), torch.stack(torch._foreach_norm(ts, p)), rtol=1e-5, atol=0)
    if p == 2.0:
        torch.testing.assert_close(bulkred.total_norm(ts), torch.nn.utils.get_total_norm(ts), rtol=1e-5, atol=0)
        torch.testing.assert_close(bulkred.foreach_norm(ts), torch.stack(torch._foreach_norm(ts)), rtol=1e-5, atol=0)


def test_single_tensor_empty_tensors_and_empty_list():
    """One tensor (of each dtype); lists of empty tensors only (the identities: 0, and inf
    for ord -inf); the empty list (torch.nn.utils.get_total_norm([]) is 0); tuples and
    generators are lists too."""
    torch = _torch()
    g = _gen(5)
    for dtype in ("float32", "float16", "bfloat16"):
        one = [_rand(g, 5000, dtype=dtype)]
        for p in (2.0, 1.0, INF, 0.0):
            _assert_norms(bulkred.foreach_norm(one, p), ref_norms(one, p), p, f"one {dtype} tensor, ord {p}")
            _assert_norms(bulkred.total_norm(one, p), ref_total(one, p), p, f"one {dtype} tensor, total ord {p}")
        _assert_norms(bulkred.foreach_amax(one), ref_norms(one, INF), INF, f"one {dtype} tensor, amax")
    empties = [torch.empty(0, device=DEV), torch.empty(3, 0, device=DEV, dtype=torch.float16), torch.empty(0, 7, device=DEV, dtype=torch.bfloat16)]
    for p in ORDS:
        want = torch.full((3,), INF if p == -INF else 0.0, dtype=torch.float64)
        _assert_norms(bulkred.foreach_norm(empties, p), want, p, f"empty tensors, ord {p}")
        _assert_norms(bulkred.total_norm(empties, p), want[0], p, f"empty tensors, total ord {p}")
    _assert_norms(bulkred.foreach_amax(empties), torch.zeros(3, dtype=torch.float64), INF, "empty tensors, amax")
    for fn in (bulkred.foreach_norm, bulkred.foreach_amax):
        r = fn([])
        assert r.shape == (0,) and r.dtype == torch.float32, (fn, r)
    r = bulkred.total_norm([])
    assert r.shape == () and r.dtype == torch.float32 and float(r) == 0.0, r
    ts = _mixed(6)
    want = bulkred.total_norm(ts)
    assert torch.equal(bulkred.total_norm(tuple(ts)), want)
    assert torch.equal(bulkred.total_norm(t for t in ts), want)
    assert torch.equal(bulkred.foreach_norm(iter(ts)), bulkred.foreach_norm(ts))


def test_inputs_requiring_grad_are_read_as_data():
    """No gradients: a parameter is read as data, the result does not require grad, and
    the same tensor twice in a list counts twice (as torch's get_total_norm)."""
    torch = _torch()
    g = _gen(7)
    w = torch.nn.Parameter(_rand(g, 64, 32))
    b = torch.nn.Parameter(_rand(g, 32, dtype="bfloat16"))
    for p in (2.0, INF):
        n = bulkred.foreach_norm([w, b], p)
        assert not n.requires_grad
        _assert_norms(n, ref_norms([w, b], p), p, f"parameters, ord {p}")
    twice = bulkred.total_norm([w, w])
    torch.testing.assert_close(twice, torch.nn.utils.get_total_norm([w, w]), rtol=1e-5, atol=0)
    _assert_norms(twice, ref_total([w, w], 2.0), 2.0, "the same tensor twice")


def test_refused_inputs_name_the_tensor():
    """A strided view that is not dense (x[:, ::2], an expanded tensor) is refused, before
    anything runs, with a BulkredError naming its index in the list; so are float64 and
    integer tensors and a CPU tensor. The in-place functions leave every grad and
    found_inf as they were."""
    torch = _torch()
    g = _gen(9)
    good = [_rand(g, 4, 8), _rand(g, 16, dtype="float16"), _rand(g, 3), _rand(g, 8, 4).t(), _rand(g, 2, dtype="bfloat16")]
    bad_views = {"x[:, ::2]": _rand(g, 4, 8)[:, ::2], "expanded": _rand(g, 1, 8).expand(4, 8)}
    for name, bad in bad_views.items():
        ts = [*good, bad, _rand(g, 6)]  # index 5
        before = [t.clone() for t in ts]
        found_inf = torch.zeros(1, device=DEV)
        inv = torch.full((1,), 0.5, device=DEV)
        calls = {
            "foreach_norm": lambda ts=ts: bulkred.foreach_norm(ts),
            "total_norm": lambda ts=ts: bulkred.total_norm(ts, 1.0),
            "total_norm(local)": lambda ts=ts: bulkred.total_norm(ts, 2.0, local=True),
            "foreach_amax": lambda ts=ts: bulkred.foreach_amax(ts),
            "clip_grad_norm_": lambda ts=ts: bulkred.clip_grad_norm_(ts, 1e-3),
            "unscale_and_norm_": lambda ts=ts, inv=inv, found_inf=found_inf: bulkred.unscale_and_norm_(ts, inv, found_inf),
        }
        for fn, call in calls.items():
            with pytest.raises(BulkredError) as e:
                call()
            assert _index_named(str(e.value), 5), f"{fn} of a list with {name} at index 5: {e.value}"
        torch.cuda.synchronize()
        for i, (t, t0) in enumerate(zip(ts, before)):
            assert torch.equal(t, t0), f"{name}: tensor {i} changed by a refused call"
        assert float(found_inf) == 0.0
    for bad in (
        torch.ones(3, device=DEV, dtype=torch.float64),
        torch.ones(3, device=DEV, dtype=torch.int32),
        torch.ones(3),  # on the CPU
    ):
        for fn in (bulkred.foreach_norm, bulkred.total_norm, bulkred.foreach_amax):
            with pytest.raises(BulkredError):
                fn([good[0], bad])


def test_nan_and_inf_placement():
    """A NaN makes its tensor's norm and the total NaN (ord 0 counts it as nonzero), an
    inf its tensor's norm and the total inf; foreach_amax propagates both. The NaN sits
    at the last element of a tensor that several CTAs share."""
    torch = _torch()
    g = _gen(11)
    ts = [_rand(g, 100), _rand(g, 33, 17, dtype="float16"), _rand(g, 1 << 20), _rand(g, 9, dtype="bfloat16"), _rand(g, 5000, dtype="bfloat16"), _rand(g, 40, 30).t()]
    ts[2][-1] = math.nan
    ts[4][1234] = INF
    ts[5][3, 7] = -INF
    for p in ORDS:
        norms = bulkred.foreach_norm(ts, p)
        _assert_norms(norms, ref_norms(ts, p), p, f"NaN/inf, foreach_norm ord {p}")
        total = bulkred.total_norm(ts, p)
        _assert_norms(total, ref_total(ts, p), p, f"NaN/inf, total_norm ord {p}")
        if p != 0:
            assert torch.isnan(norms[2]) and torch.isnan(total), p
            assert not torch.isnan(norms[[0, 1, 3, 4, 5]]).any(), p
        if p > 0:
            assert norms[4] == INF and norms[5] == INF, p
    amax = bulkred.foreach_amax(ts)
    assert torch.isnan(amax[2]) and amax[4] == INF and amax[5] == INF
    _assert_norms(amax, ref_norms(ts, INF), INF, "NaN/inf, foreach_amax")
    without_nan = [t for i, t in enumerate(ts) if i != 2]
    assert bulkred.total_norm(without_nan) == INF


@pytest.mark.parametrize("p", [2.0, 1.0, INF])
def test_unscale_and_norm_is_amp_unscale_then_norm(p):
    """Every grad times inv_scale in place, in its dtype (bit-identical to AMP's
    _amp_foreach_non_finite_check_and_unscale_, or its formula for bfloat16, for a
    power-of-two inv_scale, within a unit of the dtype for 1/3000), found_inf set to 1 by
    an inf or NaN, never cleared (1 stays 1), and the total norm of the unscaled grads
    returned."""
    torch = _torch()

    def grads():
        gg = _gen(14)
        return [
            _rand(gg, 300, scale=1024.0),
            _rand(gg, 33, 65, dtype="float16", scale=1024.0),
            _rand(gg, 0),
            _rand(gg, 129, 5, dtype="bfloat16", scale=1024.0),
            _rand(gg, 64, 48, scale=1024.0).t(),
            _rand(gg, 1, dtype="float16", scale=1024.0),
            _rand(gg, 20000, dtype="bfloat16", scale=1024.0),
        ]

    cases = [
        ("finite", 2.0**-10, 0.0, None),
        ("inf in a float16 grad", 2.0**-10, 0.0, (1, (3, 60), INF)),
        ("NaN in a bfloat16 grad", 2.0**-10, 0.0, (6, (19999,), math.nan)),
        ("found_inf already 1", 2.0**-10, 1.0, None),
        ("inv_scale 1/3000", 1.0 / 3000.0, 0.0, None),
    ]
    for name, inv_value, found0, special in cases:
        ours, theirs = grads(), grads()
        if special is not None:
            i, at, value = special
            ours[i][at] = value
            theirs[i][at] = value
        inv = torch.full((1,), inv_value, device=DEV)
        found_inf = torch.full((1,), found0, device=DEV)
        found_ref = torch.full((1,), found0, device=DEV)
        norm = bulkred.unscale_and_norm_(ours, inv, found_inf, ord=p) if p != 2.0 else bulkred.unscale_and_norm_(ours, inv, found_inf)
        _amp_unscale(theirs, inv, found_ref)
        assert found_inf.dtype == torch.float32 and found_inf.shape == (1,)
        assert torch.equal(found_inf, found_ref), f"{name}: found_inf {found_inf} != {found_ref}"
        assert float(found_inf) == (1.0 if special is not None or found0 == 1.0 else 0.0), name
        for k, (a, b) in enumerate(zip(ours, theirs)):
            if math.log2(inv_value).is_integer():
                _same(a, b, f"{name}: grad {k}")
            else:
                _close_in_dtype(a, b, f"{name}: grad {k}")
        assert norm.shape == () and norm.dtype == torch.float32
        try:
            _assert_norms(norm, ref_total(theirs, p), p, f"{name}: the returned norm, ord {p}")
        except AssertionError:
            # the norm of the products before they are rounded to the grads' dtypes (the
            # contract does not say which): the original norm times inv_scale
            original = grads()
            if special is not None:
                original[special[0]][special[1]] = special[2]
            want = ref_total(original, p) * inv_value  # a float32 product is one rounding off
            _assert_norms(norm, want, p, f"{name}: the returned norm, ord {p}", exact=False)
        if special is not None and not math.isnan(special[2]) and p != -INF:
            assert norm == INF, name
        if special is not None and math.isnan(special[2]):
            assert torch.isnan(norm), name


@pytest.mark.parametrize("inv_value", [INF, 1e30], ids=["inv_scale inf", "inv_scale 1e30"])
def test_found_inf_checks_the_inputs_as_amp(inv_value):
    """found_inf is AMP's check of the grads as they are before the unscale: finite
    float16 and float32 grads times inf, or float16 grads times 1e30 (which overflows
    float16), leave it 0, as torch's kernel does; the grads are AMP's products (inf)."""
    torch = _torch()

    def grads():
        gg = _gen(15)
        return [_rand(gg, 300, scale=1024.0), _rand(gg, 33, 65, dtype="float16", scale=1024.0), _rand(gg, 7, dtype="float16")]

    ours, theirs = grads(), grads()
    inv = torch.full((1,), inv_value, device=DEV)
    found_inf = torch.zeros(1, device=DEV)
    found_ref = torch.zeros(1, device=DEV)
    norm = bulkred.unscale_and_norm_(ours, inv, found_inf)
    _amp_unscale(theirs, inv, found_ref)
    assert float(found_ref) == 0.0 and float(found_inf) == 0.0, (float(found_inf), float(found_ref))
    for k, (a, b) in enumerate(zip(ours, theirs)):
        _same(a, b, f"grad {k}")
    assert not torch.isfinite(norm)


def test_in_place_functions_refuse_tensors_that_share_memory():
    """The same tensor twice, or two overlapping views, in clip_grad_norm_ or
    unscale_and_norm_: a one-line BulkredError naming both positions, before anything is
    written (no grad, no found_inf); a TensorList is refused alike. The read-only norms
    take them (as torch's _foreach_norm and get_total_norm), counted twice."""
    torch = _torch()
    g = _gen(16)
    a, b = _rand(g, 64, 32), _rand(g, 50, dtype="float16")
    base = _rand(g, 1000)
    cases = {
        "the same tensor twice": ([a, b, _rand(g, 9), a], (0, 3)),
        "overlapping views": ([b, base[:600], base[500:]], (1, 2)),
        "a view inside a tensor": ([base, a, base[10:20].view(2, 5)], (0, 2)),
    }
    for name, (ts, (i, j)) in cases.items():
        before = [t.clone() for t in ts]
        found_inf = torch.zeros(1, device=DEV)
        inv = torch.full((1,), 0.5, device=DEV)
        calls = {
            "clip_grad_norm_": lambda ts=ts: bulkred.clip_grad_norm_(ts, 1e-3),
            "unscale_and_norm_": lambda ts=ts, inv=inv, f=found_inf: bulkred.unscale_and_norm_(ts, inv, f),
            "clip_grad_norm_ of a TensorList": lambda ts=ts: bulkred.clip_grad_norm_(bulkred.tensor_list(ts), 1e-3),
        }
        for fn, call in calls.items():
            for _ in range(2):  # and again, from the table's cache
                with pytest.raises(BulkredError) as e:
                    call()
                text = str(e.value)
                assert "\n" not in text and f"tensors {i} and {j}" in text, f"{name}, {fn}: {text}"
        torch.cuda.synchronize()
        for k, (t, t0) in enumerate(zip(ts, before)):
            assert torch.equal(t, t0), f"{name}: tensor {k} changed by a refused call"
        assert float(found_inf) == 0.0
        total = bulkred.total_norm(ts)  # read-only: taken
        _assert_norms(total, ref_total(ts, 2.0), 2.0, f"{name}: total_norm")
        _assert_norms(bulkred.foreach_norm(ts), ref_norms(ts, 2.0), 2.0, f"{name}: foreach_norm")
    # views that touch but do not overlap, and empty tensors at one address, are taken
    ts = [base[:500], base[500:], base[:0], base[:0]]
    clone = [t.clone() for t in ts[:2]]
    bulkred.clip_grad_norm_(ts, 1e-3)
    coef = torch.clamp(1e-3 / (torch.nn.utils.get_total_norm(clone) + 1e-6), max=1.0)  # torch's clip, on tensors
    torch._foreach_mul_(clone, coef)
    torch.testing.assert_close(torch.cat(ts[:2]), torch.cat(clone), rtol=2e-4, atol=0)


def test_numpy_scalar_options_are_taken_alike():
    """ord=np.float32(3) is taken by the list functions as by vector_norm; numpy bools
    as bools; max_norm a numpy float."""
    import numpy as np

    torch = _torch()
    g = _gen(17)
    ts = [_rand(g, 100), _rand(g, 40, dtype="bfloat16")]
    torch.testing.assert_close(bulkred.total_norm(ts, np.float32(3)), bulkred.total_norm(ts, 3.0), rtol=0, atol=0)
    torch.testing.assert_close(bulkred.foreach_norm(ts, np.int64(1)), bulkred.foreach_norm(ts, 1.0), rtol=0, atol=0)
    torch.testing.assert_close(bulkred.total_norm(ts, 2, np.bool_(False), local=np.bool_(True)),
                               bulkred.total_norm(ts, 2.0, local=True), rtol=0, atol=0)
    grads = [t.clone() for t in ts]
    total = bulkred.clip_grad_norm_(grads, np.float32(0.5), np.float64(2))
    _assert_norms(total, ref_total(ts, 2.0), 2.0, "clip with numpy options")
    # 0.5 within the bfloat16 grad's rounding (2^-9 relative per element)
    _assert_norms(bulkred.total_norm(grads), torch.tensor(0.5, dtype=torch.float64, device=DEV), 2.0, "clipped to 0.5",
                  rtol=4e-3, exact=False)
    torch.testing.assert_close(
        bulkred.vector_norm(ts[0], ord=np.float32(3)), bulkred.total_norm(ts[:1], np.float32(3)), rtol=2e-4, atol=0)


def _model(torch, seed: int):
    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(DEV)
    m[0].bias.requires_grad_(False)  # its .grad stays None: skipped by both
    m(torch.randn(16, 32, device=DEV)).square().sum().backward()
    twin = copy.deepcopy(m)
    for a, b in zip(m.parameters(), twin.parameters()):
        b.grad = None if a.grad is None else a.grad.clone()
    return m, twin


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, INF])
@pytest.mark.parametrize("clips", [True, False], ids=["clips", "no-clip"])
def test_clip_grad_norm_of_parameters_is_torchs(p, clips):
    """clip_grad_norm_(model.parameters(), ...) (a generator, a parameter without grad)
    against torch.nn.utils.clip_grad_norm_ on a copy of the model: the total before
    clipping and the clipped grads; without clipping (max_norm above the total) every
    grad is bit-identical to what it was."""
    torch = _torch()
    model, twin = _model(torch, 17)
    before = [p_.grad.clone() for p_ in model.parameters() if p_.grad is not None]
    total64 = ref_total(before, p)
    max_norm = float(total64) * (0.25 if clips else 4.0)
    got = bulkred.clip_grad_norm_(model.parameters(), max_norm, p)
    want = torch.nn.utils.clip_grad_norm_(twin.parameters(), max_norm, p)
    assert got.shape == () and got.dtype == torch.float32 and not got.requires_grad
    torch.testing.assert_close(got, want, rtol=1e-5, atol=0)
    _assert_norms(got, total64, p, f"clip total ord {p}")
    assert model[0].bias.grad is None
    after = [p_.grad for p_ in model.parameters() if p_.grad is not None]
    for k, (a, b, a0) in enumerate(zip(after, (q.grad for q in twin.parameters() if q.grad is not None), before)):
        if clips:
            torch.testing.assert_close(a, b, rtol=2e-5, atol=1e-7, msg=lambda m, k=k: f"grad {k}: {m}")
        else:
            assert torch.equal(a, a0) and torch.equal(b, a0), f"grad {k} changed without clipping"
    if clips:
        torch.testing.assert_close(bulkred.total_norm(after, p), torch.tensor(max_norm, device=DEV), rtol=1e-4, atol=0)


@pytest.mark.parametrize("p", [2.0, 1.0, INF])
@pytest.mark.parametrize("clips", [True, False], ids=["clips", "no-clip"])
def test_clip_grad_norm_of_plain_tensors(p, clips):
    """Plain tensors (the grads themselves) of mixed dtypes, a transposed view and an
    empty one: the total against the float64 reference and torch's clip_grad_norm_ on
    parameters holding copies (whose float16/bfloat16 per-tensor norms torch rounds to
    their dtype: 1e-2), the clipped grads against the float64 coefficient within a unit
    of their dtype."""
    torch = _torch()
    g = _gen(19)
    grads = [_rand(g, 1000), _rand(g, 40, 33, dtype="float16"), _rand(g, 0), _rand(g, 50, 70, dtype="bfloat16").t(), _rand(g, 3), _rand(g, 4097, scale=0.1)]
    before = [t.clone() for t in grads]
    params = _params_with_grads(grads)
    total64 = ref_total(before, p)
    max_norm = float(total64) * (0.3 if clips else 3.0)
    got = bulkred.clip_grad_norm_(grads, max_norm, p)
    want = torch.nn.utils.clip_grad_norm_(params, max_norm, p)
    _assert_norms(got, total64, p, f"clip total ord {p}")
    torch.testing.assert_close(got, want.float(), rtol=1e-2, atol=0)
    coef = min(max_norm / (float(total64) + 1e-6), 1.0)
    theirs = iter(params)  # the nonempty grads' copies
    for k, (a, a0) in enumerate(zip(grads, before)):
        q = next(theirs) if a.numel() else None
        if not clips:
            assert torch.equal(a, a0), f"grad {k} changed without clipping"
            continue
        _close_in_dtype(a, (a0.double() * coef).to(a0.dtype), f"grad {k}", rtol=2e-4)
        if q is not None:
            torch.testing.assert_close(a.float(), q.grad.float(), rtol=2e-2, atol=1e-6, msg=lambda m, k=k: f"grad {k} vs torch: {m}")


def test_error_if_nonfinite():
    """error_if_nonfinite=True raises RuntimeError (as torch's) for a NaN or inf total,
    and clip_grad_norm_ then leaves the grads alone; a finite total gives the same result
    as without the flag."""
    torch = _torch()
    g = _gen(23)
    for value in (INF, -INF, math.nan):
        ts = [_rand(g, 100), _rand(g, 50, dtype="float16"), _rand(g, 7, dtype="bfloat16")]
        ts[1][10] = value
        before = [t.clone() for t in ts]
        with pytest.raises(RuntimeError):
            bulkred.total_norm(ts, 2.0, error_if_nonfinite=True)
        with pytest.raises(RuntimeError):
            bulkred.total_norm(ts, 2.0, True)
        with pytest.raises(RuntimeError):
            bulkred.clip_grad_norm_(ts, 1.0, error_if_nonfinite=True)
        torch.cuda.synchronize()
        for t, t0 in zip(ts, before):
            _same(t, t0, f"grads after a refused clip ({value})")
        with pytest.raises(RuntimeError):
            torch.nn.utils.clip_grad_norm_(_params_with_grads(ts), 1.0, error_if_nonfinite=True)
    ts = [_rand(g, 100), _rand(g, 50, dtype="float16")]
    assert torch.equal(bulkred.total_norm(ts, error_if_nonfinite=True), bulkred.total_norm(ts))
    twin = [t.clone() for t in ts]
    assert torch.equal(bulkred.clip_grad_norm_(ts, 1.0, error_if_nonfinite=True), bulkred.clip_grad_norm_(twin, 1.0))
    for a, b in zip(ts, twin):
        assert torch.equal(a, b)


def test_clip_with_a_nonfinite_total_follows_torch():
    """Without error_if_nonfinite, a NaN total makes every grad NaN and an inf total
    scales by 0 (0 where finite, NaN where inf), as torch's clip_grad_norm_ does
    (clamp(max_norm / (total + 1e-6), max=1) keeps the NaN)."""
    torch = _torch()
    g = _gen(29)
    for value in (math.nan, INF):
        grads = [_rand(g, 100), _rand(g, 30, dtype="float16"), _rand(g, 20, 10).t(), _rand(g, 9, dtype="bfloat16")]
        grads[1][3] = value
        params = _params_with_grads(grads)
        got = bulkred.clip_grad_norm_(grads, 1.0)
        want = torch.nn.utils.clip_grad_norm_(params, 1.0)
        _same(got, want.float(), f"total with {value}")
        for k, (a, q) in enumerate(zip(grads, params)):
            _same(a, q.grad, f"grad {k} after a clip with {value}")


def test_bit_identical_run_to_run():
    """Two calls on the same list, and a call on a new list of the same tensors, give the
    same bits: the partials are combined in a fixed order (many tensors, two that several
    CTAs share); the in-place functions on two equal copies give equal grads."""
    torch = _torch()
    g = _gen(31)
    dtypes = ("float32", "float16", "bfloat16")
    ts = [_rand(g, int(n), dtype=dtypes[i % 3]) for i, n in enumerate(torch.randint(0, 1 << 14, (200,), generator=torch.Generator().manual_seed(31)))]
    ts += [_rand(g, 1 << 22), _rand(g, (1 << 21) + 5, dtype="bfloat16"), _rand(g, 300, 500, dtype="float16").t()]
    for p in (2.0, 1.0, 0.0, INF):
        a, b, c = bulkred.foreach_norm(ts, p), bulkred.foreach_norm(ts, p), bulkred.foreach_norm(list(ts), p)
        assert torch.equal(a, b) and torch.equal(a, c), p
        a, b, c = bulkred.total_norm(ts, p), bulkred.total_norm(ts, p), bulkred.total_norm(list(ts), p)
        assert torch.equal(a, b) and torch.equal(a, c), p
        assert torch.equal(bulkred.total_norm(ts, p, local=True), bulkred.total_norm(ts, p, local=True)), p
    assert torch.equal(bulkred.foreach_amax(ts), bulkred.foreach_amax(ts))
    x, y = [t.clone() for t in ts], [t.clone() for t in ts]
    assert torch.equal(bulkred.clip_grad_norm_(x, 1.0), bulkred.clip_grad_norm_(y, 1.0))
    inv = torch.full((1,), 0.37, device=DEV)
    fx, fy = torch.zeros(1, device=DEV), torch.zeros(1, device=DEV)
    assert torch.equal(bulkred.unscale_and_norm_(x, inv, fx), bulkred.unscale_and_norm_(y, inv, fy))
    assert torch.equal(fx, fy)
    for k, (a, b) in enumerate(zip(x, y)):
        assert torch.equal(a, b), k


@pytest.mark.parametrize("p", ORDS, ids=[f"ord{p:g}" for p in ORDS])
def test_local_power_combined_by_hand(p):
    """local=True gives the list's power (sum |x|^p; max for inf, min for -inf, the count
    for 0); two halves combined as all_reduce would (SUM, MAX for inf, MIN for -inf) and
    rooted give total_norm of the whole list; an empty list gives the identity (0, inf
    for -inf), what a rank without tensors contributes."""
    torch = _torch()
    ts = _mixed(37)
    first, second = ts[:5], ts[5:]
    pa, pb = bulkred.total_norm(first, p, local=True), bulkred.total_norm(second, p, local=True)
    assert pa.shape == () and pa.dtype == torch.float32
    _assert_norms(pa, ref_total_power(first, p), p, f"local power of the first half, ord {p}")
    _assert_norms(pb, ref_total_power(second, p), p, f"local power of the second half, ord {p}")
    combined = torch.maximum(pa, pb) if p == INF else torch.minimum(pa, pb) if p == -INF else pa + pb
    whole = bulkred.total_norm(ts, p)
    by_hand = _root(combined.double(), p)
    if _is_root_ord(p):
        torch.testing.assert_close(by_hand, whole.double(), rtol=2e-5, atol=0)
    else:
        assert float(by_hand) == float(whole), (by_hand, whole)
    _assert_norms(whole, ref_total(ts, p), p, f"total ord {p}")
    e = bulkred.total_norm([], p, local=True)
    assert e.shape == () and e.dtype == torch.float32 and float(e) == (INF if p == -INF else 0.0), (p, e)


def test_cuda_graph_capture_replays_on_new_data():
    """total_norm, foreach_norm and clip_grad_norm_ captured in one CUDA graph after a
    warm-up call on the same lists (on a side stream, as torch asks) replay on data
    changed in place: new norms, and the grads clipped on replays whose total is above
    max_norm and left alone on the one below it."""
    torch = _torch()
    g = _gen(41)
    ts = [_rand(g, 1000), _rand(g, 33, 17, dtype="float16"), _rand(g, 64, 48, dtype="bfloat16").t(), _rand(g, 0), _rand(g, 1 << 18)]
    grads = [_rand(g, 500), _rand(g, 20, 30, dtype="bfloat16").t(), _rand(g, 7, dtype="float16"), _rand(g, 1 << 16)]
    max_norm = 1.0
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        bulkred.total_norm(ts)
        bulkred.foreach_norm(ts, 1.0)
        bulkred.clip_grad_norm_(grads, max_norm)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        total = bulkred.total_norm(ts)
        norms = bulkred.foreach_norm(ts, 1.0)
        clip_total = bulkred.clip_grad_norm_(grads, max_norm)
    for trial, scale in enumerate((10.0, 1e-4, 3.0)):
        new_ts = [_rand(g, *t.shape, dtype=str(t.dtype).split(".")[1]) for t in ts]
        new_grads = [_rand(g, *t.shape, dtype=str(t.dtype).split(".")[1], scale=scale) for t in grads]
        for t, n in zip(ts + grads, new_ts + new_grads):
            t.copy_(n)
        graph.replay()
        torch.cuda.synchronize()
        _assert_norms(total, ref_total(new_ts, 2.0), 2.0, f"replay {trial}: total_norm")
        _assert_norms(norms, ref_norms(new_ts, 1.0), 1.0, f"replay {trial}: foreach_norm")
        want = ref_total(new_grads, 2.0)
        _assert_norms(clip_total, want, 2.0, f"replay {trial}: clip total")
        coef = min(max_norm / (float(want) + 1e-6), 1.0)
        for k, (a, n) in enumerate(zip(grads, new_grads)):
            if coef >= 1.0:
                assert torch.equal(a, n), f"replay {trial}: grad {k} changed without clipping"
            else:
                _close_in_dtype(a, (n.double() * coef).to(n.dtype), f"replay {trial}: grad {k}", rtol=2e-4)


def test_torch_compile_fullgraph():
    """total_norm and foreach_norm inside torch.compile(fullgraph=True) (the custom
    operators torch.ops.bulkred.*): one graph, equal to the reference, and a change of
    the data in place between calls is seen."""
    torch = _torch()
    if importlib.util.find_spec("triton") is None:
        pytest.skip("torch.compile's default (inductor) backend needs triton, which is not installed")

    def f(ts):
        total = bulkred.total_norm(ts)
        norms = bulkred.foreach_norm(ts, 1.0)
        return total * 2, norms + 1

    g = _gen(43)
    ts = [_rand(g, 1000), _rand(g, 33, 17, dtype="float16"), _rand(g, 64, 48, dtype="bfloat16").t(), _rand(g, 5)]
    compiled = torch.compile(f, fullgraph=True)
    for step in range(2):
        total2, norms1 = compiled(ts)
        _assert_norms(total2 / 2, ref_total(ts, 2.0), 2.0, f"compiled total_norm, call {step}")
        _assert_norms(norms1 - 1, ref_norms(ts, 1.0), 1.0, f"compiled foreach_norm, call {step}", rtol=2e-4)
        ts[0].mul_(3.0)
    assert hasattr(torch.ops.bulkred, "foreach_norm")

    def step(grads, inv, found_inf):  # the in-place functions: mutable operators (Tensor(a!)[])
        norm = bulkred.unscale_and_norm_(grads, inv, found_inf)
        clipped = bulkred.clip_grad_norm_(grads, 1.0)
        return norm, clipped, bulkred.foreach_amax(grads)

    compiled_step = torch.compile(step, fullgraph=True)
    for trial in range(2):
        ours = [_rand(_gen(44 + trial), 300, scale=64.0), _rand(_gen(46 + trial), 65, dtype="float16", scale=64.0)]
        theirs = [t.clone() for t in ours]
        inv = torch.full((1,), 2.0**-4, device=DEV)
        found, found_ref = torch.zeros(1, device=DEV), torch.zeros(1, device=DEV)
        got = compiled_step(ours, inv, found)
        want = step(theirs, inv, found_ref)
        for k, (a, b) in enumerate(zip(got, want)):
            _same(a, b, f"compiled step {trial}: result {k}")
        for k, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"compiled step {trial}: grad {k} written in place")
        assert float(found) == float(found_ref) == 0.0

    # clip_grad_norm_ of a model's parameters (their .grad written in place), compiled
    m, twin = _model(torch, 50)
    total = torch.compile(lambda ps: bulkred.clip_grad_norm_(ps, 0.05), fullgraph=True)(list(m.parameters()))
    want = torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.05)
    torch.testing.assert_close(total, want.float(), rtol=1e-5, atol=0)
    for a, b in zip(m.parameters(), twin.parameters()):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            torch.testing.assert_close(a.grad, b.grad, rtol=2e-4, atol=1e-7)

    # parameters that require grad are read as data: no backward is traced through the operators
    params = [torch.nn.Parameter(_rand(_gen(48), 64, 32)), torch.nn.Parameter(_rand(_gen(49), 16, dtype="bfloat16"))]
    amax2 = torch.compile(lambda ps: bulkred.foreach_amax(ps) * 2, fullgraph=True)(params)
    _assert_norms(amax2 / 2, ref_norms(params, INF), INF, "compiled foreach_amax of parameters")


def test_descriptor_table_reuse():
    """The same list twice gives the same result; data changed in place is seen; a tensor
    replaced in the same list object, a list grown in place, new tensor objects over
    other memory, and new tensors of other sizes where freed ones were, each give their
    own result."""
    torch = _torch()
    g = _gen(47)
    ts = _mixed(47)
    a = bulkred.total_norm(ts)
    assert torch.equal(a, bulkred.total_norm(ts))
    n1 = bulkred.foreach_norm(ts)
    assert torch.equal(n1, bulkred.foreach_norm(ts))
    ts[0].mul_(2.0)
    ts[10].zero_()
    _assert_norms(bulkred.total_norm(ts), ref_total(ts, 2.0), 2.0, "after an in-place change")
    _assert_norms(bulkred.foreach_norm(ts), ref_norms(ts, 2.0), 2.0, "after an in-place change")
    ts[3] = _rand(g, 12345, dtype="float16")
    _assert_norms(bulkred.foreach_norm(ts), ref_norms(ts, 2.0), 2.0, "a tensor replaced in the list")
    ts.append(_rand(g, 77, dtype="bfloat16"))
    _assert_norms(bulkred.foreach_norm(ts), ref_norms(ts, 2.0), 2.0, "a tensor appended to the list")
    _assert_norms(bulkred.total_norm(ts), ref_total(ts, 2.0), 2.0, "a tensor appended to the list, total")
    other = [t * 3 for t in ts]
    _assert_norms(bulkred.foreach_norm(other), ref_norms(other, 2.0), 2.0, "new tensors over other memory")
    _assert_norms(bulkred.foreach_amax(other), ref_norms(other, INF), INF, "new tensors over other memory, amax")
    sizes = [t.numel() for t in other]
    del other
    fresh = [_rand(g, max(1, n // 2 + 3), dtype="float32") for n in sizes]  # the freed blocks, other counts and dtype
    _assert_norms(bulkred.foreach_norm(fresh), ref_norms(fresh, 2.0), 2.0, "new tensors where freed ones were")
    _assert_norms(bulkred.total_norm(fresh, 1.0), ref_total(fresh, 1.0), 1.0, "new tensors where freed ones were, total")


def test_table_tiers(monkeypatch):
    """Which calls check the list: the first three calls of a list do (the second takes
    its ids, the third keeps its objects by weak reference); from the fourth the same
    live objects skip the checks; new objects over the same memory are checked and get the same table; once
    a kept tensor dies the list is checked again; a list of parameters gives their
    grads."""
    torch = _torch()
    from bulkred_dialect import foreach as F

    g = _gen(53)
    ts = [_rand(g, 1000 + 17 * i, dtype=("float32", "bfloat16")[i % 2]) for i in range(6)]
    checks: list[int] = []
    real = F._check
    monkeypatch.setattr(F, "_check", lambda fn, xs, t: checks.append(len(xs)) or real(fn, xs, t))
    a = bulkred.total_norm(ts)
    b = bulkred.total_norm(ts)
    assert not any(e.ids == F._ids(ts) for e in F._BY_IDS.values()), "a list seen twice was kept"
    bulkred.total_norm(ts)
    assert len(checks) == 3
    c = bulkred.total_norm(ts)
    n = bulkred.foreach_norm(ts)
    assert len(checks) == 3, "the same live objects were checked again"
    _same(a, b, "second call")
    _same(a, c, "third call")
    _assert_norms(a, ref_total(ts, 2.0), 2.0, "kept list")
    _assert_norms(n, ref_norms(ts, 2.0), 2.0, "kept list, per tensor")
    views = [t.view_as(t) for t in ts]
    entry = F._table("t", views, F._grid(F._reduce_kernel(F.LISTS["total_norm"], {"ord": 2.0, "local": False})), torch)
    assert len(checks) == 4
    kept = [e for e in F._BY_IDS.values() if e.refs is not None and e.live[0] and e.ids == F._ids(ts)]
    assert kept and kept[0] is entry, "new objects over the same memory did not get the table by content"
    _same(bulkred.total_norm(views), a, "views over the same memory")
    del views  # a view keeps its base's object alive
    ts[2] = _rand(g, 5, dtype="float16")  # the old tensor 2 dies
    assert not kept[0].live[0], "a kept tensor died and its table still names it"
    _assert_norms(bulkred.total_norm(ts), ref_total(ts, 2.0), 2.0, "a kept tensor replaced")
    assert checks[-1] == len(ts)
    for step in range(3):  # zero_grad(set_to_none=True): new tensors every step
        fresh = [_rand(g, 1000 + 17 * i, dtype="float32", scale=step + 1.0) for i in range(6)]
        before = len(checks)
        _assert_norms(bulkred.total_norm(fresh), ref_total(fresh, 2.0), 2.0, f"new tensors, step {step}")
        assert len(checks) == before + 1
        del fresh
    params = [torch.nn.Parameter(_rand(g, 300 + i)) for i in range(4)]
    for i, p in enumerate(params):
        p.grad = None if i == 1 else _rand(g, 300 + i)
    grads = [p.grad for p in params if p.grad is not None]
    _assert_norms(bulkred.total_norm(grads), ref_total(grads, 2.0), 2.0, "grads")
    _same(bulkred.clip_grad_norm_(params, 1e9), bulkred.total_norm(grads), "parameters give their grads")


def test_tensor_list(monkeypatch):
    """A TensorList is checked once, at construction (a refusal names the tensor), then
    every function takes it without a check and gives what the plain list gives; values
    changed in place are seen; clip and unscale write through it."""
    torch = _torch()
    from bulkred_dialect import foreach as F

    g = _gen(59)
    ts = [_rand(g, 700 + 31 * i, dtype=("float32", "float16", "bfloat16")[i % 3]) for i in range(7)]
    with pytest.raises(BulkredError, match=r"tensor 2 .*not dense"):
        bulkred.tensor_list([ts[0], ts[1], _rand(g, 8, 8)[:, ::2]])
    tl = bulkred.tensor_list(ts)
    assert len(tl) == 7 and tl[3] is ts[3] and all(a is b for a, b in zip(tl, ts)) and "7 tensors" in repr(tl)
    plain = {p: bulkred.total_norm(list(ts), p) for p in (2.0, 1.0, INF)}
    monkeypatch.setattr(F, "_check", lambda *a: pytest.fail("a TensorList was checked again"))
    for p, want in plain.items():
        _same(bulkred.total_norm(tl, p), want, f"total ord {p}")
    _assert_norms(bulkred.foreach_norm(tl), ref_norms(ts, 2.0), 2.0, "foreach_norm")
    _assert_norms(bulkred.foreach_amax(tl), ref_norms(ts, INF), INF, "foreach_amax")
    ts[1].mul_(4.0)
    _assert_norms(bulkred.total_norm(tl), ref_total(ts, 2.0), 2.0, "after an in-place change")
    before = ref_total(ts, 2.0)
    norm = bulkred.clip_grad_norm_(tl, 1.0)
    _assert_norms(norm, before, 2.0, "clip's norm")
    _assert_norms(bulkred.total_norm(tl), before.clamp(max=1.0), 2.0, "clipped", rtol=1e-2)
    inv, found = torch.full((1,), 0.5, device=DEV), torch.zeros(1, device=DEV)
    want = ref_total(ts, 2.0) * 0.5
    _assert_norms(bulkred.unscale_and_norm_(tl, inv, found), want, 2.0, "unscale", rtol=1e-2)
    assert float(found) == 0.0


def test_runs_on_the_callers_stream():
    """Under torch.cuda.stream(s) every function runs on s: after a long kernel on s and
    an in-place change queued behind it, the results are those of the new data (a launch
    on another stream would read the old data)."""
    torch = _torch()
    g = _gen(53)
    ts = [_rand(g, 1 << 20), _rand(g, 4096, dtype="float16"), _rand(g, 99, 33, dtype="bfloat16").t()]
    grads = [_rand(g, 1 << 18), _rand(g, 333, dtype="bfloat16")]
    new_ts = [_rand(g, *t.shape, dtype=str(t.dtype).split(".")[1], scale=5.0) for t in ts]
    new_grads = [_rand(g, *t.shape, dtype=str(t.dtype).split(".")[1], scale=7.0) for t in grads]
    inv = torch.full((1,), 0.5, device=DEV)
    found_inf = torch.zeros(1, device=DEV)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # about 0.1 s of one busy thread on s
        for t, n in zip(ts + grads, new_ts + new_grads):
            t.copy_(n)
        new_grads[1][5] = INF
        grads[1][5] = INF
        total = bulkred.total_norm(ts)
        norms = bulkred.foreach_norm(ts, 1.0)
        amax = bulkred.foreach_amax(ts)
        unscaled = bulkred.unscale_and_norm_(grads, inv, found_inf)
        clipped = bulkred.clip_grad_norm_(grads[:1], 1.0)
    s.synchronize()
    _assert_norms(total, ref_total(new_ts, 2.0), 2.0, "total_norm on the caller's stream")
    _assert_norms(norms, ref_norms(new_ts, 1.0), 1.0, "foreach_norm on the caller's stream")
    _assert_norms(amax, ref_norms(new_ts, INF), INF, "foreach_amax on the caller's stream")
    assert float(unscaled) == INF and float(found_inf) == 1.0
    half = [(n * 0.5).to(n.dtype) for n in new_grads]
    _assert_norms(clipped, ref_total(half[:1], 2.0), 2.0, "clip_grad_norm_ on the caller's stream")
    assert float(clipped) > 1.0
    torch.testing.assert_close(bulkred.total_norm(grads[:1]), torch.tensor(1.0, device=DEV), rtol=1e-4, atol=0)


def test_many_tiny_tensors():
    """3,000 tensors of 0 to 40 elements in the three dtypes: norms, amax, the total,
    unscale_and_norm_ (an inf in the last tensor sets found_inf) and clip_grad_norm_."""
    torch = _torch()
    g = _gen(59)
    sizes = torch.randint(0, 41, (3000,), generator=torch.Generator().manual_seed(59)).tolist()
    dtypes = ("float32", "float16", "bfloat16")
    ts = [_rand(g, n, dtype=dtypes[i % 3]) for i, n in enumerate(sizes)]
    ts[-1] = _rand(g, 5, dtype="float16")
    for p in (2.0, INF, 0.0):
        _assert_norms(bulkred.foreach_norm(ts, p), ref_norms(ts, p), p, f"3000 tensors, ord {p}")
        _assert_norms(bulkred.total_norm(ts, p), ref_total(ts, p), p, f"3000 tensors, total ord {p}")
    _assert_norms(bulkred.foreach_amax(ts), ref_norms(ts, INF), INF, "3000 tensors, amax")
    theirs = [t.clone() for t in ts]
    ts[-1][4] = INF
    theirs[-1][4] = INF
    inv = torch.full((1,), 0.25, device=DEV)
    found_inf, found_ref = torch.zeros(1, device=DEV), torch.zeros(1, device=DEV)
    norm = bulkred.unscale_and_norm_(ts, inv, found_inf)
    _amp_unscale(theirs, inv, found_ref)
    assert float(found_inf) == 1.0 and torch.equal(found_inf, found_ref)
    assert float(norm) == INF
    for k, (a, b) in enumerate(zip(ts, theirs)):
        assert torch.equal(a, b), f"tensor {k} after unscale"
    ts[-1][4] = 1.0
    before = [t.clone() for t in ts]
    total64 = ref_total(before, 2.0)
    got = bulkred.clip_grad_norm_(ts, float(total64) / 2)
    _assert_norms(got, total64, 2.0, "3000 tensors, clip total")
    for k, (a, a0) in enumerate(zip(ts, before)):
        _close_in_dtype(a, (a0.double() * (float(total64) / 2 / (float(total64) + 1e-6))).to(a0.dtype), f"tensor {k} after clip", rtol=2e-4)


def test_large_tensor_shared_by_ctas():
    """A 2^25-element float32 tensor (128 MiB: several CTAs take parts of it) between small
    ones, a bfloat16 one of 2^23 + 3 elements and a float16 one with a NaN at its last
    element: norms, counts (a seventh of the elements are 0), amax (its maximum at the
    last element), the total, twice with the same bits."""
    torch = _torch()
    g = _gen(61)
    big = _rand(g, 1 << 25)
    big[::7] = 0.0
    big[-1] = 1000.0
    bf = _rand(g, (1 << 23) + 3, dtype="bfloat16")
    bf[0] = -992.0  # a bfloat16 value
    tail = _rand(g, (1 << 20) + 1, dtype="float16")
    tail[-1] = math.nan
    ts = [_rand(g, 5), big, _rand(g, 3, dtype="float16"), bf, _rand(g, 1), tail]
    for p in (2.0, 1.0, INF, 0.0):
        norms = bulkred.foreach_norm(ts, p)
        _assert_norms(norms, ref_norms(ts, p), p, f"large, ord {p}", rtol=RTOL)
        if p != 0:
            assert torch.isnan(norms[5])
        _same(norms, bulkred.foreach_norm(ts, p), f"large, ord {p}, a second call")
        total = bulkred.total_norm(ts[:5], p)
        _assert_norms(total, ref_total(ts[:5], p), p, f"large, total ord {p}")
        assert torch.equal(total, bulkred.total_norm(ts[:5], p)), p
    amax = bulkred.foreach_amax(ts)
    assert float(amax[1]) == 1000.0 and float(amax[3]) == 992.0 and torch.isnan(amax[5])


def test_foreach_doc_examples_run(tmp_path):
    """docs/foreach.md's Python blocks run as written in one scope (the training step
    included); its distributed recipe runs on a one-rank gloo group and gives
    clip_grad_norm_'s total and grads."""
    torch = _torch()
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "foreach.md").read_text(), flags=re.DOTALL)
    assert len(blocks) >= 3, "docs/foreach.md has fewer Python blocks than expected"
    scope: dict = {}
    for block in blocks:
        exec(compile(block, "docs/foreach.md", "exec"), scope)  # noqa: S102 - the page's own examples
    recipe = scope["clip_grad_norm_distributed"]
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_gloo_available()):
        return
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        g = _gen(67)
        grads = [_rand(g, 1000), _rand(g, 30, 40, dtype="bfloat16"), _rand(g, 0)]
        twin = [t.clone() for t in grads]
        for p in (2.0, INF):
            got = recipe(grads, 0.5, p)
            want = bulkred.clip_grad_norm_(twin, 0.5, p)
            torch.testing.assert_close(got.float().reshape(()), want, rtol=1e-5, atol=0)
            for a, b in zip(grads, twin):
                _close_in_dtype(a, b, f"the recipe's grads, ord {p}", rtol=1e-5)
    finally:
        dist.destroy_process_group()


def test_cuda_graph_replays_after_other_lists():
    """A graph captured on lists whose descriptor tables the warm-up call built still
    replays right after calls on more other lists than bulkred keeps tables for (theirs
    are built, the older ones dropped, and their memory handed out again): a captured
    call's table must live as long as the graph. Last in the file: a replay that read a
    table since reused would give wrong results (or write where it should not)."""
    torch = _torch()
    g = _gen(73)
    ts = [_rand(g, 1000), _rand(g, 33, 17, dtype="float16"), _rand(g, 5)]
    grads = [_rand(g, 500), _rand(g, 7, dtype="bfloat16")]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        bulkred.total_norm(ts)
        bulkred.clip_grad_norm_(grads, 1.0)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        total = bulkred.total_norm(ts)
        clip_total = bulkred.clip_grad_norm_(grads, 1.0)
    for _ in range(40):  # lists of the same lengths: tables of the same sizes
        bulkred.total_norm([_rand(g, 3) for _ in ts])
        bulkred.foreach_norm([_rand(g, 3, dtype="float16") for _ in grads])
    new_ts = [_rand(g, *t.shape, dtype=str(t.dtype).split(".")[1]) for t in ts]
    new_grads = [_rand(g, *t.shape, dtype=str(t.dtype).split(".")[1], scale=10.0) for t in grads]
    for t, n in zip(ts + grads, new_ts + new_grads):
        t.copy_(n)
    graph.replay()
    torch.cuda.synchronize()
    _assert_norms(total, ref_total(new_ts, 2.0), 2.0, "replay after other lists: total_norm")
    want = ref_total(new_grads, 2.0)
    _assert_norms(clip_total, want, 2.0, "replay after other lists: clip total")
    coef = 1.0 / (float(want) + 1e-6)
    for k, (a, n) in enumerate(zip(grads, new_grads)):
        _close_in_dtype(a, (n.double() * coef).to(n.dtype), f"replay after other lists: grad {k}", rtol=2e-4)
