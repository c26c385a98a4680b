"""Gradients of the public functions without a GPU: the torch operators of every
differentiable row (torch_ops.py, generated from functions.py) and their formulas
(grads.py) against torch's autograd, with the kernel simulated on the host by torch
itself (:class:`TorchKernel`: the plan's reduction of the CPU tensor). The routing is
the real one: ``bulkred.<fn>`` of a tensor that requires grad calls
``torch.ops.bulkred.<fn>``, whose implementation runs the API's call path. The GPU
versions (gradcheck on the device, torch.compile with backward) are
tests/gpu/test_grads_gpu.py."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api
from bulkred_dialect.functions import FUNCTIONS, ROWS

sys.path.insert(0, str(Path(__file__).parent))
import random_reductions as R  # noqa: E402 - the per-row test table (ROW_TESTS)

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch: a CPU wheel is enough)")


class TorchKernel:
    _fast = None
    signature = None

    def __init__(self, p):
        self.p = p

    def __call__(self, x, *outs, stream=None):
        assert tuple(x.shape) == self.p.shape
        for o, r in zip(outs, R.simulate_plan(torch, self.p, x.detach())):
            o.copy_(r)
        return (x, *outs)


@pytest.fixture
def host_kernels(monkeypatch):
    from bulkred_dialect import reductions
    from bulkred_dialect.backend_ptx import device

    monkeypatch.setattr(api, "kernel_of", lambda p, target: TorchKernel(p))
    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    reductions.forget()
    yield
    reductions.forget()


CASES = [(row.name, opts) for row in ROWS if row.grad is not None for opts in R.ROW_TESTS[row.name].grad_options]
"""Every differentiable row with each of its test row's ``grad_options``."""


@pytest.mark.parametrize(("fn", "opts"), CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_gradients_match_torch(host_kernels, fn, opts):
    """The gradient of each float result (a pair's both, weighted) against torch's own
    function's (the row's test entry: ``ROW_TESTS[fn].torch``), over a whole reduction,
    one axis kept and two axes of three."""
    row, t = FUNCTIONS[fn], R.ROW_TESTS[fn]
    g = torch.Generator().manual_seed(7)
    for shape, d, keep in (((5, 6), (0, 1), False), ((5, 6), (1,), True), ((3, 4, 5), (0, 2), False)):
        whole = len(d) == len(shape) and not keep
        if row.one_axis and len(d) > 1 and not whole:
            continue
        base = torch.randn(*shape, generator=g, dtype=torch.float64) + t.grad_shift
        a, b = base.clone().requires_grad_(True), base.clone().requires_grad_(True)
        axis = None if whole else d[0] if row.one_axis else d
        y1 = getattr(bulkred, fn)(a, axis=axis, keepdims=keep, **opts)
        y2 = t.torch(torch, b, axis, keep, opts)
        ys1 = y1 if isinstance(y1, tuple) else (y1,)
        ys2 = y2 if isinstance(y2, tuple) else (y2,)
        floats = [i for i, y in enumerate(ys2) if y.is_floating_point()]
        assert floats and all(ys1[i].requires_grad and ys1[i].grad_fn is not None for i in floats), fn
        ws = [torch.randn(ys2[i].shape, generator=g, dtype=torch.float64) for i in floats]
        sum((ys1[i] * w).sum() for i, w in zip(floats, ws)).backward()
        sum((ys2[i] * w).sum() for i, w in zip(floats, ws)).backward()
        assert all(ys1[i].shape == ys2[i].shape for i in floats), fn
        torch.testing.assert_close(a.grad, b.grad, msg=f"{fn} {opts} {shape} {d} {keep}")


def test_pairs_ties_zeros_and_double_backward(host_kernels):
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0]], dtype=torch.float64, requires_grad=True)
    bulkred.amax(x, axis=1).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5, 0.0], [0.25, 0.25, 0.25, 0.25]]  # split evenly, as torch.amax
    x.grad = None
    r = bulkred.max_with_indices(x, axis=1)
    assert r.indices.tolist() == [1, 0] and not r.indices.requires_grad
    r.values.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]  # to the index, as torch.max(x, dim)
    for row in ([2.0, 0.0, 3.0], [0.0, 0.0, 3.0], [1.5, -2.0, 0.5]):
        a = torch.tensor(row, dtype=torch.float64, requires_grad=True)
        b = a.detach().clone().requires_grad_(True)
        bulkred.prod(a).backward()
        torch.prod(b).backward()
        assert torch.equal(a.grad, b.grad), row
    for p in (1, 2, 3, 0.5, math.inf):
        a = torch.zeros(4, dtype=torch.float64, requires_grad=True)
        b = torch.zeros(4, dtype=torch.float64, requires_grad=True)
        bulkred.vector_norm(a, ord=p).backward()
        torch.linalg.vector_norm(b, p).backward()
        assert torch.equal(a.grad, b.grad), p  # torch's subgradient at 0
    xs = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    for fn, ref in (("var_mean", torch.var_mean), ("std_mean", torch.std_mean)):
        a, b = xs.clone().requires_grad_(True), xs.clone().requires_grad_(True)
        v1, m1 = getattr(bulkred, fn)(a, axis=1, correction=1)
        v2, m2 = ref(b, dim=1, correction=1)
        (v1.sum() + (m1 * m1).sum()).backward()
        (v2.sum() + (m2 * m2).sum()).backward()
        torch.testing.assert_close(a.grad, b.grad)
    a = xs.clone().requires_grad_(True)
    assert torch.autograd.gradgradcheck(lambda t: bulkred.vector_norm(t, axis=1), (a,))
    assert torch.autograd.gradgradcheck(lambda t: bulkred.logsumexp(t, axis=0), (a,))
    assert torch.autograd.gradcheck(lambda t: bulkred.var(t, axis=1, correction=1), (a,))
    a, b = xs.clone().requires_grad_(True), xs.clone().requires_grad_(True)
    lo, hi = bulkred.aminmax(a, axis=1)  # both results of one kernel (tests/test_nan_functions.py: ties, NaN)
    (lo.sum() + 2 * hi.sum()).backward()
    r = torch.aminmax(b, dim=1)
    (r.min.sum() + 2 * r.max.sum()).backward()
    torch.testing.assert_close(a.grad, b.grad)


def test_no_grad_and_not_differentiable(host_kernels):
    x = torch.randn(10, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        y = bulkred.sum(x)
    assert not y.requires_grad
    assert not bulkred.sum(x.detach()).requires_grad
    with pytest.raises(bulkred.ReductionError, match="'out' does not take part in autograd"):
        bulkred.sum(x, out=torch.empty((), dtype=torch.float64))
    with pytest.raises(bulkred.ReductionError, match="'stream' is not taken with autograd"):
        bulkred.sum(x, stream=0)
    for row in ROWS:  # a row without a gradient rule gives results outside autograd, as torch's
        if row.grad is None and row.inputs != "integer":
            r = getattr(bulkred, row.name)(x)
            assert not any(y.requires_grad for y in (r if isinstance(r, tuple) else (r,))), row.name


def test_a_recorded_tuple_axis_call_and_uint_results(host_kernels):
    """A torch call over a tuple of axes is recorded for the function's short path (the
    module's names shadow the builtins all/any/sum: the check of the axes must not call
    bulkred.all), and an unsigned sum's result is made in torch's dtype: int64 for uint8
    (torch's rule for torch tensors), uint64 asked for with dtype=."""
    x = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4)
    for _ in range(3):
        torch.testing.assert_close(bulkred.sum(x, axis=(0, 2)), x.sum(dim=(0, 2)))
    u = torch.arange(10, dtype=torch.uint8)
    r = bulkred.sum(u)
    assert r.dtype == torch.int64 == u.sum().dtype and int(r) == 45
    r = bulkred.sum(u, dtype=torch.uint64)
    assert r.dtype == torch.uint64 and int(r) == 45


def test_the_random_differential_checks_gradients(host_kernels):
    """tools/gpu_random.py --grads: each differentiable torch case's gradient against
    torch's; run here on the host (the kernel simulated by torch) over seeded cases, and
    a wrong formula is caught."""
    from bulkred_dialect import grads

    cfg = R.fused_config(grads=True, max_elems=2000, dtypes=("float64", "float32"), numpy_inputs=0.0)
    results = R.run_cases_gpu(11, list(range(40)), cfg, api=bulkred, device="cpu")
    checked = [r for r in results if "gradient checked" in r["torch_note"]]
    assert len(checked) >= 15 and all(r["status"] == "pass" for r in checked), [r for r in checked if r["status"] != "pass"]
    real = grads.RULES["var"]
    try:
        grads.RULES["var"] = lambda x, r, g, d, k, o: 1.01 * real(x, r, g, d, k, o)
        bad = R.run_cases_gpu(11, list(range(40)), cfg, api=bulkred, device="cpu")
    finally:
        grads.RULES["var"] = real
    assert any(r["reason"] == "grad" for r in bad if r["kind"] == "var")


def test_prod_with_nan_and_var_with_no_degrees_of_freedom_as_torch(host_kernels):
    """Found by the H100's random run: prod's gradient is NaN wherever the product is NaN
    (torch's result / x), and var/std with N - correction = 0 give torch's inf/NaN, not a
    Python ZeroDivisionError."""
    a = torch.tensor([2.0, float("nan"), 3.0], dtype=torch.float64, requires_grad=True)
    b = a.detach().clone().requires_grad_(True)
    bulkred.prod(a).backward()
    torch.prod(b).backward()
    assert torch.equal(a.grad.isnan(), b.grad.isnan()) and bool(a.grad.isnan().all())
    for fn in ("std", "var"):
        a = torch.tensor([1.5], dtype=torch.float64, requires_grad=True)
        b = a.detach().clone().requires_grad_(True)
        getattr(bulkred, fn)(a, axis=0, correction=1).backward()
        getattr(torch, fn)(b, dim=0, correction=1).backward()
        torch.testing.assert_close(a.grad, b.grad, equal_nan=True)


BACKWARD_OPS = {  # row's call -> the most torch operations its backward may dispatch (the saved tensors' detach included)
    "amax": (lambda m, t: m.amax(t, **{"axis" if m is bulkred else "dim": -1}), 8),
    "var": (lambda m, t: m.var(t, **{"axis" if m is bulkred else "dim": -1}, correction=1), 7),
    "std": (lambda m, t: m.std(t, **{"axis" if m is bulkred else "dim": -1}, correction=1), 10),
    "logsumexp": (lambda m, t: m.logsumexp(t, **{"axis" if m is bulkred else "dim": -1}), 7),
    "vector_norm": (lambda m, t: (m if m is bulkred else m.linalg).vector_norm(t, **{"axis" if m is bulkred else "dim": -1}), 8),
    "amax, whole": (lambda m, t: m.amax(t), 6),
    "var, axis 0": (lambda m, t: m.var(t, **{"axis" if m is bulkred else "dim": 0}, correction=1), 5),
}
"""The backward's torch operations (each launches a kernel or makes a view), pinned: one
more fails the test below; the kernels among them no more than torch's backward's. Fewer than torch's own backward for var and std (the mean is
the forward's, the scales folded), as many for the others."""


def _backward_ops(y, w) -> list[str]:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Ops() as ops:
        y.backward(w)
    return ops.names


@pytest.mark.parametrize("case", list(BACKWARD_OPS))
def test_backward_operations_are_counted(host_kernels, case):
    """Each backward of the autograd route (the rows the per-call benchmark times:
    f(x).backward(w)) dispatches at most its pinned count of torch operations and no more
    than torch's own backward, copies nothing (no clone, contiguous or copy_), and gives
    torch's gradient."""
    f, most = BACKWARD_OPS[case]
    base = torch.randn(6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    counts, got = [], []
    for m in (bulkred, torch):
        x = base.clone().requires_grad_(True)
        y = f(m, x)
        w = torch.randn(y.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
        counts.append(_backward_ops(y, w))
        got.append(x.grad)
    ours, theirs = counts
    assert len(ours) <= most, f"{case}: {len(ours)} operations, pinned {most}: {ours}"
    views = {"detach", "unsqueeze", "view", "expand", "squeeze", "alias"}  # no kernel
    kernels = [[o for o in ops if o not in views] for ops in counts]
    assert len(kernels[0]) <= len(kernels[1]), f"{case}: {ours} against torch's {theirs}"
    assert not {"clone", "contiguous", "copy_", "new_empty_strided"} & set(ours), ours
    torch.testing.assert_close(got[0], got[1])


def test_the_autograd_route_without_torchs_python_apply_wrapper(host_kernels, monkeypatch):
    """Where torch's ``Function.apply`` is a Python wrapper (torch 2.11), a call key's
    Function is applied through ``torch_ops.applier`` (the C++ apply at once): forced here,
    the gradients are torch's on the first and the kept call (var and std saving the mean
    of var_mean's kernel, a pair)."""
    from bulkred_dialect import reductions, torch_ops

    monkeypatch.setattr(torch_ops, "PYTHON_APPLY", True)
    reductions.forget()
    g = torch.Generator().manual_seed(17)
    base = torch.randn(5, 6, generator=g, dtype=torch.float64)
    for fn, opts, theirs in (("amax", {}, lambda t: torch.amax(t, 1)), ("std", {"correction": 1}, lambda t: torch.std(t, 1)),
                             ("aminmax", {}, lambda t: tuple(torch.aminmax(t, dim=1)))):
        for _ in range(2):
            a, b = base.clone().requires_grad_(True), base.clone().requires_grad_(True)
            ys1, ys2 = getattr(bulkred, fn)(a, axis=1, **opts), theirs(b)
            ys1, ys2 = (ys1, ys2) if isinstance(ys2, tuple) else ((ys1,), (ys2,))
            sum(y.sum() * (i + 1) for i, y in enumerate(ys1)).backward()
            sum(y.sum() * (i + 1) for i, y in enumerate(ys2)).backward()
            torch.testing.assert_close(a.grad, b.grad, msg=fn)
    assert any("applier" in getattr(c.cell_contents, "__qualname__", "") for hit in api.CALLS.values()
               for c in (hit[0].__closure__ or ())), "no route through torch_ops.applier"
    reductions.forget()
