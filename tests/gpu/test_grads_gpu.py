"""Gradients of the public functions on the GPU (bulkred_dialect/grads.py, registered by
torch_ops.py from the function table): ``torch.autograd.gradcheck`` in float64, the
gradients against torch's own on random forms (axes, keepdims, views, dtypes), the
non-differentiable rows, double backward, and ``torch.compile(fullgraph=True)`` of a
loss with its backward."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect.functions import FUNCTIONS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import random_reductions as R  # noqa: E402 - the per-row test table (ROW_TESTS)

pytestmark = pytest.mark.gpu


def _torch():
    return pytest.importorskip("torch", reason="torch is not installed")


def _axis(d):
    return None if d is None else d[0] if len(d) == 1 else d


def _ref(test_row, opts):
    return lambda t, x, d, k: test_row.torch(t, x, _axis(d), k, opts)


# (function, torch's function, options): every differentiable row of one result with each of
# its test row's gradient options, torch's function the test row's (tests/random_reductions.py)
CASES = [
    (f.name, _ref(R.ROW_TESTS[f.name], opts), opts)
    for f in FUNCTIONS.values() if f.grad is not None and f.results == 1 for opts in R.ROW_TESTS[f.name].grad_options
]


@pytest.mark.parametrize(("fn", "ref", "opts"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_gradients_match_torch(fn, ref, opts):
    """bulkred.<fn>(x).backward(g) gives torch's x.grad, on forms of several axes, keepdims
    and a transposed view, in float32 (and float64 for gradcheck below)."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(23)
    forms = [((64, 33), None, False), ((64, 33), (1,), False), ((6, 40, 7), (0, 2), True), ((40, 24), (0,), False)]
    for shape, d, keep in forms:
        if fn == "prod" and d is not None and len(d) > 1:
            continue
        base = torch.randn(*shape, device="cuda", generator=g) * 0.5 + (1.0 if fn == "prod" else 0.0)
        for view in (False, True):
            x0 = base.t() if view and base.dim() == 2 else base
            dd = d if not (view and base.dim() == 2 and d) else tuple(1 - a for a in d)
            x1 = x0.detach().clone().requires_grad_(True)
            x2 = x0.detach().clone().requires_grad_(True)
            if view:
                x1 = x0.detach().requires_grad_(True)  # the view itself: read in place
            y1 = getattr(bulkred, fn)(x1, axis=_axis(dd), keepdims=keep, **opts)
            y2 = ref(torch, x2, dd, keep)
            assert y1.requires_grad and y1.shape == y2.shape
            w = torch.randn(y2.shape, device="cuda", generator=g)
            (y1 * w).sum().backward()
            (y2 * w).sum().backward()
            torch.testing.assert_close(x1.grad, x2.grad, rtol=2e-4, atol=2e-5, msg=f"{fn} {shape} {dd} {keep} view={view}")


@pytest.mark.parametrize(("fn", "ref", "opts"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_gradcheck_float64(fn, ref, opts):
    torch = _torch()
    torch.manual_seed(5)
    x = (torch.rand(5, 6, device="cuda", dtype=torch.float64) + 0.5).requires_grad_(True)
    if fn in ("amax", "amin", "max", "min") or opts.get("ord") == math.inf:
        x = (torch.randperm(30, device="cuda").double().reshape(5, 6) / 7 + 0.5).requires_grad_(True)  # no ties
    for axis in (None, 1):
        if fn == "vector_norm" and opts.get("ord") == 0.5:
            continue  # the 0.5 norm's derivative is too steep for finite differences at eps 1e-6 near 0.5
        assert torch.autograd.gradcheck(lambda t: getattr(bulkred, fn)(t, axis=axis, **opts), (x,), eps=1e-6, atol=1e-5)


def test_pairs_and_indices():
    """var_mean / std_mean: both gradients; max_with_indices: the values' gradient to the
    index (torch.max(x, dim)); the index result does not require grad."""
    torch = _torch()
    torch.manual_seed(3)
    x = torch.randn(16, 50, device="cuda", dtype=torch.float64)
    for fn, ref in (("var_mean", torch.var_mean), ("std_mean", torch.std_mean)):
        a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        v1, m1 = getattr(bulkred, fn)(a, axis=1, correction=1)
        v2, m2 = ref(b, dim=1, correction=1)
        (v1.sum() * 2 + (m1 * m1).sum()).backward()
        (v2.sum() * 2 + (m2 * m2).sum()).backward()
        torch.testing.assert_close(a.grad, b.grad)
    a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    r1 = bulkred.max_with_indices(a, axis=1)
    r2 = torch.max(b, 1)
    assert torch.equal(r1.indices, r2.indices) and not r1.indices.requires_grad and r1.values.requires_grad
    (r1.values * torch.arange(16, device="cuda")).sum().backward()
    (r2.values * torch.arange(16, device="cuda")).sum().backward()
    torch.testing.assert_close(a.grad, b.grad)
    assert torch.autograd.gradcheck(lambda t: bulkred.min_with_indices(t, axis=0).values, (x[:5, :7].clone().requires_grad_(True),))
    a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    r1 = bulkred.aminmax(a, axis=1)  # both results of one kernel (tests/gpu/test_nan_functions_gpu.py: ties, NaN)
    # torch.aminmax has no derivative before torch 2.12: its amin and amax, each split evenly among ties
    lo2, hi2 = torch.amin(b, dim=1), torch.amax(b, dim=1)
    assert torch.equal(r1.min, lo2) and torch.equal(r1.max, hi2)
    (r1.min.sum() + 3 * r1.max.sum()).backward()
    (lo2.sum() + 3 * hi2.sum()).backward()
    torch.testing.assert_close(a.grad, b.grad)


def test_ties_split_the_gradient_evenly_as_torch_amax():
    torch = _torch()
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0]], device="cuda", requires_grad=True)
    bulkred.amax(x, axis=1).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5, 0.0], [0.25, 0.25, 0.25, 0.25]]
    x.grad = None
    bulkred.max_with_indices(x, axis=1).values.sum().backward()  # the indexed form: the first index only
    assert x.grad.tolist() == [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]


def test_prod_with_zeros_and_norms_at_zero():
    torch = _torch()
    for row in ([2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 3.0, 1.0], [1.5, -2.0, 0.5, 4.0]):
        a = torch.tensor(row, device="cuda", dtype=torch.float64, requires_grad=True)
        b = a.detach().clone().requires_grad_(True)
        bulkred.prod(a).backward()
        torch.prod(b).backward()
        assert torch.equal(a.grad, b.grad), row
    for p in (1, 2, 3, 0.5, math.inf):
        a = torch.zeros(8, device="cuda", requires_grad=True)
        b = torch.zeros(8, device="cuda", requires_grad=True)
        bulkred.vector_norm(a, ord=p).backward()
        torch.linalg.vector_norm(b, p).backward()
        assert torch.equal(a.grad, b.grad), p  # torch's subgradient at 0


def test_not_differentiable_rows_and_no_grad_cost():
    torch = _torch()
    x = torch.randn(100, device="cuda", requires_grad=True)
    for fn in ("argmax", "argmin", "any", "all", "count_nonzero"):
        r = getattr(bulkred, fn)(x)
        assert not r.requires_grad, fn
    with torch.no_grad():
        assert not bulkred.sum(x).requires_grad
    y = bulkred.sum(x.detach())
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(bulkred.ReductionError, match="'out' does not take part in autograd"):
        bulkred.sum(x, out=torch.empty((), device="cuda"))


def test_double_backward():
    """The backward formulas are torch operations: a gradient of a gradient is torch's."""
    torch = _torch()
    torch.manual_seed(9)
    x = torch.randn(4, 7, device="cuda", dtype=torch.float64, requires_grad=True)
    for f in (
        lambda t: bulkred.vector_norm(t, axis=1),
        lambda t: bulkred.logsumexp(t, axis=0),
        lambda t: bulkred.var(t, axis=1, correction=1),
        lambda t: bulkred.prod(t, axis=1),
        lambda t: bulkred.std(t),
    ):
        assert torch.autograd.gradgradcheck(f, (x,))


def test_torch_compile_fullgraph_with_backward():
    torch = _torch()
    torch.manual_seed(1)

    def loss(w, x):
        h = x @ w
        return bulkred.mean(h * h) + 0.1 * bulkred.vector_norm(w) + bulkred.logsumexp(h, axis=1).sum()

    w = torch.randn(32, 16, device="cuda", requires_grad=True)
    x = torch.randn(64, 32, device="cuda")
    compiled = torch.compile(loss, fullgraph=True)
    l1 = compiled(w, x)
    l1.backward()
    g1 = w.grad.clone()
    w.grad = None
    l2 = (lambda h: (h * h).mean() + 0.1 * torch.linalg.vector_norm(w) + torch.logsumexp(h, 1).sum())(x @ w)
    l2.backward()
    torch.testing.assert_close(l1, l2, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g1, w.grad, rtol=1e-4, atol=1e-5)


def test_every_differentiable_row_is_covered_here():
    rows = {name for name, f in FUNCTIONS.items() if f.grad is not None}
    covered = {c[0] for c in CASES} | {"var_mean", "std_mean", "max_with_indices", "min_with_indices", "aminmax"}
    assert rows <= covered, rows - covered
    assert np.all([f.grad is None for f in FUNCTIONS.values() if f.name in ("argmax", "argmin", "any", "all")])
