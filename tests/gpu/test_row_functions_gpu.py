"""The row normalizations of the function table on the GPU (``bulkred.softmax``,
``log_softmax``, ``rms_norm``, ``layer_norm``, ``add_rms_norm``, ``cross_entropy``;
row_functions.py): values against torch in float64 on random forms (leading dimensions,
padded rows, every variant's range of N, float32 / bfloat16 / float16, weights of x's
dtype or float32), non-finite rows, ignore_index and label smoothing; gradients against
torch's autograd on random forms; torch.compile(fullgraph=True) forward and backward;
CUDA graph capture; batch invariance and run-to-run identical dweight; docs/rows.md's
example; and torch's own OpInfo samples of these ops, forward and gradient: each passes
or is refused for a reason docs/rows.md lists ("Refused"), the counts printed.

Tolerance: in float32 ``|got - ref| <= 2e-5 * max(1, max|ref|)`` (ex2.approx and float32
sums); in bfloat16 and float16 no more than torch's own error against float64 plus one
unit in the last place of the largest value (both round a float32 result once)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import row_functions
from gpu import cuda_torch

pytestmark = pytest.mark.gpu

DEV = "cuda"
_torch = cuda_torch  # torch with a CUDA device, else the test skips (tests/gpu/__init__.py)


def _ulp(torch, t):
    return torch.finfo(t.dtype).eps * max(1.0, float(t.double().abs().nan_to_num(0, 0, 0).max()) if t.numel() else 1.0)


def _check(torch, got, ref, own=None, what=""):
    """``got`` against the float64 ``ref`` (``own``: torch's result in got's dtype)."""
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    g, r = got.detach().double(), ref.detach().double()
    assert torch.equal(g.isnan(), r.isnan()), f"{what}: NaN positions differ"
    inf = r.isinf()
    assert torch.equal(g[inf], r[inf]), f"{what}: infinities differ"
    fin = r.isfinite()
    if not fin.any():
        return
    if got.dtype == torch.float32 or own is None:
        tol = 2e-5 * max(1.0, float(r[fin].abs().nan_to_num(0, 0, 0).max()))
        if got.dtype != torch.float32:
            tol = 4 * _ulp(torch, got.detach())
    else:
        tol = float((own.detach().double() - r)[fin].abs().nan_to_num(0, 0, 0).max()) + _ulp(torch, got.detach())
    err = float((g - r)[fin].abs().nan_to_num(math.inf, math.inf, math.inf).max())
    assert err <= tol, f"{what}: error {err:.3g} > {tol:.3g}"


def _reference(torch, name, x, w=None, b=None, eps=None, r=None):
    F = torch.nn.functional
    xd = x.double()
    wd = None if w is None else w.double()
    bd = None if b is None else b.double()
    n = x.shape[-1]
    if name == "softmax":
        return torch.softmax(xd, -1)
    if name == "log_softmax":
        return torch.log_softmax(xd, -1)
    if name == "rms_norm":
        return F.rms_norm(xd, (n,), wd, eps if eps is not None else torch.finfo(x.dtype).eps)
    if name == "layer_norm":
        return F.layer_norm(xd, (n,), wd, bd, eps)
    h = (x + r).double()  # add_rms_norm: h rounded to x's dtype first, as torch's x + residual
    return F.rms_norm(h, (n,), wd, eps)


def _own(torch, name, x, w=None, b=None, eps=None, r=None):
    F = torch.nn.functional
    n = x.shape[-1]
    w = None if w is None else w.to(x.dtype)
    b = None if b is None else b.to(x.dtype)
    if name == "softmax":
        return torch.softmax(x, -1)
    if name == "log_softmax":
        return torch.log_softmax(x, -1)
    if name == "rms_norm":
        return F.rms_norm(x, (n,), w, eps)
    if name == "layer_norm":
        return F.layer_norm(x, (n,), w, b, eps)
    return F.rms_norm(x + r, (n,), w, eps)


def _ours(name, x, w=None, b=None, eps=None, r=None):
    n = x.shape[-1]
    if name in ("softmax", "log_softmax"):
        return getattr(bulkred, name)(x)
    if name == "rms_norm":
        return bulkred.rms_norm(x, (n,), w, eps)
    if name == "layer_norm":
        return bulkred.layer_norm(x, (n,), w, b, eps)
    return bulkred.add_rms_norm(x, r, w, eps)


# Each variant's range of N (rows_warp to 1024, rows_cta to 16384, rows_cluster float32 to
# 65536, rows_stream beyond), odd N and vector-width edges
_NS = (1, 7, 64, 100, 1024, 1025, 4097, 16384, 20000, 70001, 300000)
_NAMES = ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm")


def _forms(seed, count):
    """Random forms: (name, N, leading shape, dtype, padding, weight dtype, bias, eps)."""
    import random

    rnd = random.Random(seed)
    for _ in range(count):
        name = rnd.choice(_NAMES)
        n = rnd.choice(_NS)
        lead = rnd.choice([(1,), (3,), (2, 5), (37,), (4, 3, 2)] + ([(65536,)] if n <= 1024 else []))
        dtype = rnd.choice(["float32", "bfloat16", "float16"])
        pad = rnd.choice([0, 0, 4, 3])
        wd = rnd.choice([None, dtype, "float32"]) if name not in ("softmax", "log_softmax") else None
        yield name, n, lead, dtype, pad, wd, name == "layer_norm" and wd is not None and rnd.random() < 0.7, \
            rnd.choice([None, 1e-6, 1e-5]) if name in ("rms_norm", "add_rms_norm") else 1e-5


SEED = 301129


def test_values_on_random_forms():
    """120 random forms (seed SEED): leading dimensions (M from 1 to 65536), padded rows
    (read in place), every variant's range of N (1 to 300,000), three dtypes, weights of
    x's dtype or float32."""
    torch = _torch()
    g = torch.Generator(device=DEV).manual_seed(SEED)
    count = 0
    for name, n, lead, dtype, pad, wd, has_b, eps in _forms(SEED, 120):
        dt = getattr(torch, dtype)
        base = torch.randn(*lead, n + pad, device=DEV, generator=g, dtype=torch.float32) * 2 + 0.5
        x = base.to(dt)[..., :n]
        w = None if wd is None else torch.randn(n, device=DEV, generator=g).to(getattr(torch, wd))
        b = None if not has_b else torch.randn(n, device=DEV, generator=g).to(getattr(torch, wd))
        r = torch.randn(*lead, n, device=DEV, generator=g).to(dt) if name == "add_rms_norm" else None
        got = _ours(name, x, w, b, eps, r)
        what = f"{name} N={n} lead={lead} {dtype} pad={pad} w={wd} b={has_b}"
        if name == "add_rms_norm":
            got, h = got
            assert torch.equal(h, x + r), what
        _check(torch, got, _reference(torch, name, x, w, b, eps, r), _own(torch, name, x, w, b, eps, r), what)
        count += 1
    print(f"row functions, random forms (seed {SEED}): {count} passed")


def test_non_finite_rows_as_torch():
    torch = _torch()
    x = torch.randn(6, 300, device=DEV)
    x[0, 5] = math.nan
    x[1] = -math.inf
    x[2, 7] = -math.inf
    x[3, 9] = math.inf
    x[4, :] = 0
    for name in ("softmax", "log_softmax"):
        got = getattr(bulkred, name)(x)
        want = getattr(torch, name)(x.double(), -1)
        _check(torch, got, want, what=name)
    t = torch.tensor([1, 2, 3, 4, 5, 6], device=DEV)
    got = bulkred.cross_entropy(x, t, reduction="none")
    want = torch.nn.functional.cross_entropy(x.double(), t, reduction="none")
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())
    fin = want.isfinite()
    torch.testing.assert_close(got[fin].double(), want[fin], rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("c", [33, 4097, 50257])
def test_cross_entropy_reductions_ignore_index_label_smoothing(c):
    torch = _torch()
    F = torch.nn.functional
    g = torch.Generator(device=DEV).manual_seed(c)
    for dtype in (torch.float32, torch.bfloat16):
        x = (torch.randn(37, c, device=DEV, generator=g) * 4).to(dtype)
        t = torch.randint(0, c, (37,), device=DEV, generator=g)
        t[::5] = -100
        for reduction in ("none", "sum", "mean"):
            for s in (0.0, 0.1):
                got = bulkred.cross_entropy(x, t, reduction=reduction, label_smoothing=s)
                want = F.cross_entropy(x.double(), t, reduction=reduction, label_smoothing=s)
                own = F.cross_entropy(x, t, reduction=reduction, label_smoothing=s)
                assert got.dtype == own.dtype
                _check(torch, got, want, own if dtype != torch.float32 else None, f"{c} {dtype} {reduction} {s}")
        assert (bulkred.cross_entropy(x, t, reduction="none")[::5] == 0).all()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("m", [1, 7, 4096])
def test_cross_entropy_mean_and_sum_in_the_kernel(m, dtype):
    """'mean' and 'sum' (no class weights, nothing recording) are the row kernel's own
    scalar: against torch in float64 (bfloat16: no further than torch's own result plus
    one unit in the last place), a quarter of the rows ignored; identical bits in 5 runs;
    every row ignored: NaN (mean) and 0 (sum), as torch. N = 4096 and 50257 (another
    variant); no torch operation after the kernel but the result's allocation (seen by
    torch's dispatch, not by the profiler: the H200 run of the profiler's version aborted at
    its exit, "double free or corruption", CUPTI the likely cause)."""
    torch = _torch()
    F = torch.nn.functional
    dt = getattr(torch, dtype)
    for c in (4096, 50257):
        g = torch.Generator(device=DEV).manual_seed(m + c)
        x = (torch.randn(m, c, device=DEV, generator=g) * 4).to(dt)
        t = torch.randint(0, c, (m,), device=DEV, generator=g)
        t[1::4] = -100
        for reduction in ("sum", "mean"):
            got = bulkred.cross_entropy(x, t, reduction=reduction)
            want = F.cross_entropy(x.double(), t, reduction=reduction)
            own = F.cross_entropy(x, t, reduction=reduction)
            assert got.dtype == dt and got.shape == ()
            _check(torch, got.reshape(1), want.reshape(1), own.reshape(1) if dt != torch.float32 else None,
                   f"{m} {c} {dtype} {reduction}")
            bits = {bulkred.cross_entropy(x, t, reduction=reduction).reshape(1).view(
                torch.int16 if dt != torch.float32 else torch.int32).item() for _ in range(5)}
            assert len(bits) == 1, bits
        none = torch.full_like(t, -100)
        assert bulkred.cross_entropy(x, none).isnan() and F.cross_entropy(x, none).isnan()
        assert bulkred.cross_entropy(x, none, reduction="sum").item() == 0
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):  # every torch operation of the call (torch's kernels run through it)
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))

    bulkred.cross_entropy(x, t)
    with Ops() as ops:
        loss = bulkred.cross_entropy(x, t)
    torch.cuda.synchronize()
    # allocations and views only (no kernel of torch's): nothing computed after bulkred's launch
    free = {"empty", "empty_like", "empty_strided", "new_empty", "view", "_unsafe_view", "alias", "as_strided",
            "detach", "reshape", "squeeze", "unsqueeze", "select", "slice", "expand"}
    assert all(n.split(".")[1] in free for n in ops.names), ops.names
    assert loss.item() == pytest.approx(F.cross_entropy(x.double(), t).item(), rel=2e-2)


@pytest.mark.parametrize("c", [33, 4097, 50257])
def test_cross_entropy_class_weights(c):
    """weight= (float32 and input's dtype) with each reduction, ignore_index rows and label
    smoothing, float32 and bfloat16 logits, against torch in float64: the loss, and dx
    through autograd (torch's float64 gradient; bfloat16 within torch's own bfloat16 error
    plus one unit in the last place)."""
    torch = _torch()
    F = torch.nn.functional
    g = torch.Generator(device=DEV).manual_seed(c + 1)
    count = 0
    for dtype in (torch.float32, torch.bfloat16):
        x = (torch.randn(37, c, device=DEV, generator=g) * 4).to(dtype)
        t = torch.randint(0, c, (37,), device=DEV, generator=g)
        t[::5] = -100
        w32 = torch.rand(c, device=DEV, generator=g) * 2 + 0.05
        for wd in dict.fromkeys((torch.float32, dtype)):  # float32, and bfloat16's own
            w = w32.to(wd)
            wx = w.to(dtype)  # torch takes a weight of input's dtype only
            for reduction in ("none", "sum", "mean"):
                for s in (0.0, 0.1):
                    what = f"C={c} {dtype} w={wd} {reduction} s={s}"
                    got = bulkred.cross_entropy(x, t, w, reduction=reduction, label_smoothing=s)
                    want = F.cross_entropy(x.double(), t, w.double(), reduction=reduction, label_smoothing=s)
                    own = F.cross_entropy(x, t, wx, reduction=reduction, label_smoothing=s)
                    assert got.dtype == own.dtype, what
                    _check(torch, got, want, own if dtype != torch.float32 else None, what)
                    if reduction == "none":
                        assert (got[::5] == 0).all(), what
                    mine = _backward(torch, lambda a: bulkred.cross_entropy(a, t, w, reduction=reduction,
                                                                            label_smoothing=s), (x,), count)
                    ref = _backward(torch, lambda a: F.cross_entropy(a, t, w.double(), reduction=reduction,
                                                                     label_smoothing=s), (x.double(),), count)
                    theirs = _backward(torch, lambda a: F.cross_entropy(a, t, wx, reduction=reduction,
                                                                        label_smoothing=s), (x,), count)
                    assert mine[0].dtype == dtype and (mine[0][::5] == 0).all(), what
                    _check(torch, mine[0], ref[0], theirs[0] if dtype != torch.float32 else None, "grad " + what)
                    count += 1
    print(f"cross_entropy with class weights, C={c}: {count} passed (values and dx)")


def _leaves(ts):
    return [t.detach().clone().requires_grad_(True) if t is not None and t.is_floating_point() else t for t in ts]


def _backward(torch, f, ts, seed):
    leaves = _leaves(ts)
    outs = f(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    gen = torch.Generator(device=DEV).manual_seed(seed)
    sum((o.double() * torch.randn(o.shape, device=DEV, generator=gen, dtype=torch.float64)).sum() for o in outs).backward()
    return [t.grad for t in leaves if t is not None and t.is_floating_point()]


def test_gradients_on_random_forms():
    """200 random forms (seed SEED + 1): dx, dweight, dbias and d residual of every function
    against torch's autograd of the same function in float64 (float32 inputs)."""
    import random

    torch = _torch()
    F = torch.nn.functional
    rnd = random.Random(SEED + 1)
    g = torch.Generator(device=DEV).manual_seed(SEED + 1)
    count = 0
    for i in range(200):
        name = rnd.choice((*_NAMES, "cross_entropy"))
        n = rnd.choice((7, 100, 1024, 3000, 20000))
        m = rnd.choice((1, 5, 64))
        pad = rnd.choice((0, 4))
        x = (torch.randn(m, n + pad, device=DEV, generator=g) * 2)[:, :n]
        w = torch.randn(n, device=DEV, generator=g) if rnd.random() < 0.7 else None
        b = torch.randn(n, device=DEV, generator=g) if w is not None and rnd.random() < 0.7 else None
        r = torch.randn(m, n, device=DEV, generator=g)
        t = torch.randint(0, n, (m,), device=DEV, generator=g)
        t[::3] = -100
        s = rnd.choice((0.0, 0.2))
        red = rnd.choice(("none", "sum", "mean"))
        mine, theirs, ts = {
            "softmax": (lambda a: bulkred.softmax(a), lambda a: torch.softmax(a, -1), (x,)),
            "log_softmax": (lambda a: bulkred.log_softmax(a), lambda a: torch.log_softmax(a, -1), (x,)),
            "rms_norm": (lambda a, u: bulkred.rms_norm(a, n, u, 1e-5), lambda a, u: F.rms_norm(a, (n,), u, 1e-5), (x, w)),
            "layer_norm": (lambda a, u, v: bulkred.layer_norm(a, n, u, v), lambda a, u, v: F.layer_norm(a, (n,), u, v),
                           (x, w, b)),
            "add_rms_norm": (lambda a, q, u: bulkred.add_rms_norm(a, q, u, 1e-5),
                             lambda a, q, u: (F.rms_norm(a + q, (n,), u, 1e-5), a + q), (x, r, w)),
            "cross_entropy": (lambda a: bulkred.cross_entropy(a, t, reduction=red, label_smoothing=s),
                              lambda a: F.cross_entropy(a, t, reduction=red, label_smoothing=s), (x,)),
        }[name]
        got = _backward(torch, mine, ts, i)
        want = _backward(torch, lambda *a: theirs(*[v.double() if v is not None and v.is_floating_point() else v
                                                    for v in a]), ts, i)
        for a, e in zip(got, want, strict=True):
            _check(torch, a, e, what=f"grad {name} m={m} n={n} pad={pad}")
        count += 1
    print(f"row functions, gradients on random forms (seed {SEED + 1}): {count} passed")


def test_dweight_bits_run_to_run_and_batch_invariance():
    """dweight and dbias: identical bits in 5 runs; y: the same rows alone, in a batch of 7
    and of 4096 give identical bits (one kernel of every M)."""
    torch = _torch()
    g = torch.Generator(device=DEV).manual_seed(5)
    x = torch.randn(4096, 2048, device=DEV, generator=g, dtype=torch.bfloat16)
    w = torch.randn(2048, device=DEV, generator=g, dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(2048, device=DEV, generator=g, dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn_like(x)
    runs = set()
    for _ in range(5):
        w.grad = b.grad = None
        bulkred.layer_norm(x, 2048, w, b).backward(dy)
        runs.add((w.grad.view(torch.int16).cpu().numpy().tobytes(), b.grad.view(torch.int16).cpu().numpy().tobytes()))
    assert len(runs) == 1
    for name in ("softmax", "rms_norm", "layer_norm"):
        f = (lambda a: bulkred.softmax(a)) if name == "softmax" else (lambda a: getattr(bulkred, name)(a, 2048))
        full = f(x)
        for rows in (slice(100, 101), slice(7, 14)):
            assert torch.equal(f(x[rows].clone()), full[rows]), name


def test_torch_compile_forward_and_backward():
    torch = _torch()
    F = torch.nn.functional
    g = torch.Generator(device=DEV).manual_seed(9)
    x = torch.randn(64, 1000, device=DEV, generator=g)
    w = torch.randn(1000, device=DEV, generator=g)
    t = torch.randint(0, 1000, (64,), device=DEV, generator=g)

    def f(a, u):
        y, h = bulkred.add_rms_norm(a, a * 2, u, 1e-6)
        return (bulkred.softmax(a).square().sum() + bulkred.log_softmax(a).mean() + bulkred.rms_norm(a, 1000, u).sum()
                + bulkred.layer_norm(a, 1000, u, u).square().mean() + y.sum() + h.mean()
                + bulkred.cross_entropy(a, t, label_smoothing=0.1))

    def ref(a, u):
        y, h = F.rms_norm(a * 3, (1000,), u, 1e-6), a * 3
        return (torch.softmax(a, -1).square().sum() + torch.log_softmax(a, -1).mean()
                + F.rms_norm(a, (1000,), u, torch.finfo(a.dtype).eps).sum()
                + F.layer_norm(a, (1000,), u, u).square().mean() + y.sum() + h.mean()
                + F.cross_entropy(a, t, label_smoothing=0.1))

    compiled = torch.compile(f, fullgraph=True)
    a1, u1 = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    a2, u2 = x.double().requires_grad_(True), w.double().requires_grad_(True)
    got, want = compiled(a1, u1), ref(a2, u2)
    got.backward()
    want.backward()
    _check(torch, got, want, what="compiled forward")
    _check(torch, a1.grad, a2.grad, what="compiled dx")
    _check(torch, u1.grad, u2.grad, what="compiled dweight")


def test_cuda_graph_capture():
    """Eager calls captured in a CUDA graph after a first call (which compiles the kernel):
    the replay computes the new inputs' rows."""
    torch = _torch()
    x = torch.randn(8, 4096, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(4096, device=DEV, dtype=torch.bfloat16)
    t = torch.randint(0, 4096, (8,), device=DEV)

    def step():
        return bulkred.softmax(x), bulkred.rms_norm(x, 4096, w, 1e-6), bulkred.cross_entropy(x, t)

    step()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = step()
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    for got, want in zip(outs, step(), strict=True):
        assert torch.equal(got, want)


def test_per_call_cost_from_python():
    """The host's cost of one call (the key, one look-up, the outputs, the launch) against
    torch eager's, printed; at most 3x torch's (a loose bound: the issue's target is 1x).
    cross_entropy's "mean" is one kernel too (its reduction in the kernel, no torch
    operations after it)."""
    import time

    torch = _torch()
    F = torch.nn.functional
    x = torch.randn(8, 4096, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(4096, device=DEV, dtype=torch.bfloat16)
    t = torch.randint(0, 4096, (8,), device=DEV)
    pairs = {
        "softmax": (lambda: bulkred.softmax(x), lambda: torch.softmax(x, -1)),
        "rms_norm": (lambda: bulkred.rms_norm(x, (4096,), w, 1e-6), lambda: F.rms_norm(x, (4096,), w, 1e-6)),
        "layer_norm": (lambda: bulkred.layer_norm(x, (4096,), w, w), lambda: F.layer_norm(x, (4096,), w, w)),
        "cross_entropy none": (lambda: bulkred.cross_entropy(x, t, reduction="none"),
                               lambda: F.cross_entropy(x, t, reduction="none")),
        "cross_entropy mean": (lambda: bulkred.cross_entropy(x, t), lambda: F.cross_entropy(x, t)),
    }

    def per_call(f):
        for _ in range(50):
            f()
        torch.cuda.synchronize()
        best = math.inf
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(200):
                f()
            best = min(best, (time.perf_counter() - t0) / 200 * 1e6)
            torch.cuda.synchronize()
        return best

    got = {name: (per_call(ours), per_call(theirs)) for name, (ours, theirs) in pairs.items()}
    print("per call from Python, us (bulkred, torch eager), [8, 4096] bfloat16:",
          {k: (round(a, 1), round(b, 1)) for k, (a, b) in got.items()})
    for name, (ours, theirs) in got.items():
        assert ours <= 3 * theirs, (name, ours, theirs)


def test_the_docs_example():
    """docs/rows.md's GPU block (the page's first python block that runs on a GPU)."""
    _torch()
    text = (Path(__file__).resolve().parents[2] / "docs" / "rows.md").read_text()
    blocks = re.findall(r"```python\n# on a GPU\n(.*?)```", text, re.S)
    assert blocks, "docs/rows.md has no '# on a GPU' python block"
    for block in blocks:
        exec(compile(block, "docs/rows.md", "exec"), {})


# region torch's OpInfo samples

_OPINFO = {"softmax": "softmax", "log_softmax": "log_softmax", "nn.functional.rms_norm": "rms_norm",
           "nn.functional.layer_norm": "layer_norm", "nn.functional.cross_entropy": "cross_entropy"}
REFUSED = {
    "is not the last dimension": "dim not the last",
    "the row kernels give float32, bfloat16 or float16": "dtype=float64",
    "has dtype torch.float64; the row kernels take": "float64 input",
    "'weight' requires grad": "class weight that requires grad",
    "(class probabilities) is not supported yet": "class probabilities",
    "input must be [M, C] logits (or [C])": "[N, C, d1, ...] input",
    "'eps' must be a finite number >= 0": "negative eps",
}
"""A phrase of each refusal docs/rows.md lists ("Refused") -> its name in the counts."""


def opinfo_samples(torch, device, dtypes, limit=0):
    """Every OpInfo sample of the five ops in ``dtypes`` on ``device``: forward (and, where
    torch differentiates it, the gradients of every floating input) through the public
    functions against torch's own op. Returns ``(counts, problems)``."""
    from torch.testing._internal.common_methods_invocations import op_db

    cases = []
    for op in op_db:
        if op.name not in _OPINFO:
            continue
        for dname in dtypes:
            d = getattr(torch, dname)
            if d in op.supported_dtypes(device):
                cases += [(op, dname, s) for s in op.sample_inputs(device, d, requires_grad=d.is_floating_point)]
    if limit and len(cases) > limit:
        cases = cases[:: -(-len(cases) // limit)]
    counts: dict[str, int] = {"pass": 0, "grad pass": 0}
    problems = []
    for op, dname, s in cases:
        fn = getattr(bulkred, _OPINFO[op.name])
        what = f"{op.name}[{op.variant_test_name}] {dname} {tuple(s.input.shape)} {s.args} {s.kwargs}"
        try:
            want = op(s.input, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001 - torch refuses it too
            counts["torch refuses"] = counts.get("torch refuses", 0) + 1
            continue
        try:
            got = fn(s.input, *s.args, **s.kwargs)
        except bulkred.ReductionError as e:
            reason = next((r for phrase, r in REFUSED.items() if phrase in str(e)), None)
            if reason is None:
                problems.append(f"refused, not as docs/rows.md says: {what}: {e}")
            key = f"refused: {reason}"
            counts[key] = counts.get(key, 0) + 1
            continue
        tol = 2e-2 if dname in ("float16", "bfloat16") else 2e-5
        try:
            assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
            torch.testing.assert_close(got, want, rtol=tol, atol=tol, equal_nan=True)
        except AssertionError as e:
            problems.append(f"{what}: {str(e)[:300]}")
            continue
        counts["pass"] += 1
        if not (want.requires_grad and want.is_floating_point()):
            continue
        leaves = [a for a in (s.input, *s.args, *s.kwargs.values()) if isinstance(a, torch.Tensor) and a.requires_grad]
        w = torch.randn_like(want)
        try:
            want_grads = torch.autograd.grad((want * w).sum(), leaves, allow_unused=True)
            got_grads = torch.autograd.grad((got * w).sum(), leaves, allow_unused=True)
            for a, e in zip(got_grads, want_grads, strict=True):
                assert (a is None) == (e is None) or (a is None and not e.any()) or (e is None and not a.any())
                if a is not None and e is not None:
                    torch.testing.assert_close(a, e, rtol=10 * tol, atol=10 * tol, equal_nan=True)
        except AssertionError as e:
            problems.append(f"gradient of {what}: {str(e)[:300]}")
            continue
        counts["grad pass"] += 1
    return counts, problems


def test_opinfo_samples():
    torch = _torch()
    try:
        import torch.testing._internal.common_methods_invocations  # noqa: F401
    except Exception as e:  # noqa: BLE001 - torch's test package needs expecttest
        pytest.skip(f"torch's OpInfo database is not importable: {e}")
    counts, problems = opinfo_samples(torch, DEV, ("float32", "bfloat16", "float16", "float64"))
    print("OpInfo samples of the row functions:", counts)
    assert not problems, (counts, problems[:20])
    assert counts["pass"] > 50 and counts["grad pass"] > 20, counts


# endregion


def test_row_functions_refuse_cpu_tensors():
    torch = _torch()
    assert row_functions.DEVICES == ("cuda",)
    with pytest.raises(bulkred.ReductionError, match=r"^bulkred.softmax: 'x' is on cpu: the row functions run on CUDA"):
        bulkred.softmax(torch.zeros(2, 3))
