"""The row normalizations as rows of the function table (functions.py's ``NORM_ROWS``,
run by row_functions.py), without a GPU: each row's signature, docs and torch schema; the
one-line refusals before any GPU work; and, with torch (a CPU wheel is enough), the real
call path (fronts, keys, launchers, the torch operators, autograd, torch.compile) with
each call's kernel, the module ``row_kernels.module`` builds for its settings, run on the
CPU interpreter (:class:`InterpretedKernel`), against torch's own functions in float64.
The GPU versions are tests/gpu/test_row_functions_gpu.py."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import row_functions, row_kernels
from bulkred_dialect.functions import NORM_ROWS, NORMS, TABLE
from bulkred_dialect.passes.variants import rows_common

# region The table (no torch)


def test_every_row_is_a_public_function_with_its_signature_and_docs():
    for row in NORM_ROWS:
        f = getattr(bulkred, row.name)
        assert f is row_functions.PUBLIC[row.name] and row.name in dir(bulkred) and TABLE[row.name] is row
        assert inspect.signature(f) == row.signature()
        params = list(inspect.signature(f).parameters.values())
        assert [p.name for p in params] == [*row.inputs, *row.option_names]
        assert params[-1].name == "variant" and params[-1].kind is inspect.Parameter.KEYWORD_ONLY
        assert f.__doc__.startswith(row.summary) and row.torch in f.__doc__
        assert ("Differentiable" in f.__doc__) == (row.grad is not None)


def test_the_signatures_are_torchs():
    sig = {r.name: str(r.signature()) for r in NORM_ROWS}
    assert sig["softmax"] == "(x, dim=-1, dtype=None, *, variant=None)"
    assert sig["rms_norm"] == "(x, normalized_shape, weight=None, eps=None, *, variant=None)"
    assert sig["layer_norm"] == "(x, normalized_shape, weight=None, bias=None, eps=1e-05, *, variant=None)"
    assert sig["add_rms_norm"] == "(x, residual, weight=None, eps=None, *, variant=None)"
    assert sig["cross_entropy"] == (
        "(input, target, weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0, *, variant=None)")


def test_the_torch_schemas_come_from_the_rows():
    assert NORMS["softmax"].schema() == "(Tensor x, str? variant) -> Tensor"
    assert NORMS["rms_norm"].schema() == "(Tensor x, Tensor? weight, float eps, str? variant) -> (Tensor, Tensor)"
    assert NORMS["layer_norm"].schema() == (
        "(Tensor x, Tensor? weight, Tensor? bias, float eps, str? variant) -> (Tensor, Tensor, Tensor)")
    assert NORMS["add_rms_norm"].schema() == (
        "(Tensor x, Tensor residual, Tensor? weight, float eps, str? variant) -> (Tensor, Tensor, Tensor)")
    assert NORMS["cross_entropy"].schema() == ("(Tensor input, Tensor target, Tensor? weight, int ignore_index, "
                                               "float label_smoothing, str? variant) -> (Tensor, Tensor)")


@pytest.mark.parametrize("name", [r.name for r in NORM_ROWS])
def test_numpy_arrays_are_refused_with_the_reason(name):
    x = np.zeros((2, 8), np.float32)
    args = {"add_rms_norm": (x, x), "cross_entropy": (x, np.zeros(2, np.int64)), "rms_norm": (x, 8),
            "layer_norm": (x, 8)}.get(name, (x,))
    with pytest.raises(bulkred.ReductionError) as e:
        getattr(bulkred, name)(*args)
    assert str(e.value) == (f"bulkred.{name}: expected a torch tensor, got ndarray (a numpy array: the row functions "
                            "take torch tensors, e.g. torch.as_tensor(x, device='cuda'))")


def test_a_variant_not_a_name_is_refused_with_every_rows_variant() -> None:
    """The refusal lists the variants of bulkred.normalize_rows as the registry has them
    (rows_bulk and rows_slices included)."""
    from bulkred_dialect.functions import OptionError, _variant
    from bulkred_dialect.passes.variants import REGISTRY

    names = [v.name for v in REGISTRY.of("bulkred.normalize_rows")]
    assert {"rows_warp", "rows_bulk", "rows_slices"} <= set(names)
    with pytest.raises(OptionError) as e:
        _variant(3)
    assert str(e.value) == f"'variant' must be a lowering variant's name ({', '.join(names)}) or None, got 3"


# endregion

# region The call path on the CPU: the interpreter as the kernel


def _torch():
    return pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for these tests)")


_OUTPUTS = ("y", "loss", "residual_out", "row_max", "row_sum", "mean", "rstd", "lse", "dweight", "dbias", "reduced")
_READS = {"rms_norm_backward": ("rstd",), "layer_norm_backward": ("mean", "rstd"), "cross_entropy_backward": ("lse",)}


class InterpretedKernel:
    """The module ``row_kernels.module`` builds for a call's settings, lowered for sm_90a
    and run by the interpreter on numpy copies of the call's CPU tensors; the outputs
    copied back. Its parameters in row_kernels.module's order."""

    def __init__(self, kind, m, n, dtype, **settings):
        from bulkred_dialect.backend_ptx.runtime import lower_tile_module

        self.kind, self.settings = kind, settings
        self.module = row_kernels.module(kind, m, n, dtype, **{k: v for k, v in settings.items() if k != "target"})
        lower_tile_module(self.module, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
        s = settings
        stats = [st for st in ("row_max", "row_sum", "mean", "rstd", "lse")
                 if st in s.get("stats", ()) or st in _READS.get(kind, ())]
        self.names = ["x", *(["target", "loss"] if kind == "cross_entropy" else ["y"]),
                      *(["target", "grad"] if kind == "cross_entropy_backward" else
                        ["grad"] if kind.endswith("_backward") else []),
                      *(["residual", "residual_out"] if kind == "add_rms_norm" else []),
                      *(["weight"] if s.get("weight") else []), *(["bias"] if s.get("bias") else []), *stats,
                      *(["dweight"] if s.get("dweight") else []), *(["dbias"] if s.get("dbias") else []),
                      *(["reduced"] if s.get("reduction") else [])]
        InterpretedKernel.built.append((kind, m, n, dtype, settings))

    built: list = []

    def __call__(self, *tensors):
        from bulkred_dialect.interpreter.threads import run_grid

        assert len(tensors) == len(self.names), (self.names, len(tensors))
        got = run_grid(self.module, "rows", *[t.detach().numpy() for t in tensors])
        for name, t, g in zip(self.names, tensors, got):
            if name in _OUTPUTS:
                t.copy_(_torch().from_numpy(np.ascontiguousarray(g)).reshape(t.shape))
        return tensors


@pytest.fixture
def interpreted(monkeypatch):
    torch = _torch()
    kernels: dict = {}

    def kernel_for(kind, m, n, dtype, **settings):
        key = (kind, m, n, dtype, tuple(sorted((k, v if not isinstance(v, list | tuple) else tuple(v))
                                              for k, v in settings.items())))
        if key not in kernels:
            kernels[key] = InterpretedKernel(kind, m, n, dtype, **settings)
        return kernels[key]

    monkeypatch.setattr(row_kernels, "kernel_for", kernel_for)
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)  # a column sum's grid: 2 units, not 2 per SM
    monkeypatch.setattr(row_functions, "DEVICES", ("cuda", "cpu"))
    row_functions.forget()
    row_functions._register()  # as `import bulkred_dialect` with torch loaded, or the first call, would
    InterpretedKernel.built.clear()
    yield torch
    row_functions.forget()


def _randn(torch, *shape, seed=0, dtype=None):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype or torch.float32)


def _close(got, want, tol=2e-5):
    torch = _torch()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol, equal_nan=True)


def test_values_against_torch(interpreted):
    """Each function on padded rows, 2-D (the launcher without the front) and with leading
    dimensions (through the front), against torch's in float64."""
    torch = interpreted
    F = torch.nn.functional
    base = _randn(torch, 2, 3, 24, seed=1)
    w, b = _randn(torch, 20, seed=2), _randn(torch, 20, seed=3)
    for x in (base[..., :20], base[1, :, :20]):  # padded rows: row stride 24, read in place
        x64 = x.double()
        for _ in range(2):  # the second call: the key's launcher
            _close(bulkred.softmax(x), torch.softmax(x64, -1).float())
            _close(bulkred.log_softmax(x, x.dim() - 1), torch.log_softmax(x64, -1).float())
            _close(bulkred.rms_norm(x, (20,), w, 1e-6), F.rms_norm(x64, (20,), w.double(), 1e-6).float())
            _close(bulkred.rms_norm(x, [20]), F.rms_norm(x64, (20,), eps=torch.finfo(torch.float32).eps).float())
            _close(bulkred.layer_norm(x, (20,), w, b), F.layer_norm(x64, (20,), w.double(), b.double()).float())
            r = _randn(torch, *x.shape, seed=4)
            y, h = bulkred.add_rms_norm(x, r, w, 1e-5)
            _close(h, x + r)
            _close(y, F.rms_norm((x + r).double(), (20,), w.double(), 1e-5).float())
    launchers = [f.__qualname__.split(".")[0] for f in row_functions.CALLS.values()]
    assert sorted(launchers) == ["_aligned_launcher"] * 6 + ["_first"] * 6  # 2-D: without the front
    # several normalized dimensions, read as one row; a dtype= conversion first
    z = _randn(torch, 3, 4, 5, seed=5)
    w2 = _randn(torch, 4, 5, seed=6)
    _close(bulkred.layer_norm(z, (4, 5), w2), F.layer_norm(z.double(), (4, 5), w2.double()).float())
    _close(bulkred.softmax(z[0, 0]), torch.softmax(z[0, 0].double(), 0).float())  # 1-D: one row
    _close(bulkred.log_softmax(z[0, 0, 0]), torch.log_softmax(z[0, 0, 0], 0))  # 0-d: a row of one
    _close(bulkred.softmax(z.half(), dtype=torch.float32), torch.softmax(z.half().double(), -1).float())


def test_cross_entropy_against_torch(interpreted):
    torch = interpreted
    F = torch.nn.functional
    x = _randn(torch, 6, 33, seed=7) * 3
    t = torch.tensor([0, 5, -100, 32, 7, -100])
    for reduction in ("none", "sum", "mean"):
        for s in (0.0, 0.25):
            got = bulkred.cross_entropy(x, t, reduction=reduction, label_smoothing=s)
            want = F.cross_entropy(x.double(), t, reduction=reduction, label_smoothing=s).float()
            _close(got, want)
    t2 = torch.tensor([1, 1, 1, 1, 1, 1])
    _close(bulkred.cross_entropy(x, t2, ignore_index=1), F.cross_entropy(x, t2, ignore_index=1))  # none left: NaN
    assert bulkred.cross_entropy(x, t2, ignore_index=1).isnan()
    _close(bulkred.cross_entropy(x[2], torch.tensor(4), reduction="none"),
           F.cross_entropy(x[2].double(), torch.tensor(4), reduction="none").float())
    assert bulkred.cross_entropy(x, torch.tensor([0, 1, 2, 33, 4, 5]), reduction="none")[3].isnan()  # outside [0, C)


def test_cross_entropy_reduced_in_the_kernel(interpreted):
    """'mean' and 'sum' without class weights are the kernel's own (its ``reduced``, in
    x's dtype: one kernel a call), on 2-D input (the launcher without the front), 1-D (the
    front) and float16, again through the key's launcher; with autograd recording too (the
    kernel storing each row's lse for the backward, which spreads the loss's gradient over
    the rows); 'none' and class weights take the kernel without a reduction."""
    torch = interpreted
    F = torch.nn.functional
    x = _randn(torch, 7, 40, seed=11) * 3
    t = torch.tensor([0, 5, -100, 39, 7, -100, 1])
    for reduction in ("sum", "mean"):
        for _ in range(2):  # the second call: the key's launcher
            _close(bulkred.cross_entropy(x, t, reduction=reduction), F.cross_entropy(x.double(), t, reduction=reduction).float())
            _close(bulkred.cross_entropy(x[3], t[3], reduction=reduction),
                   F.cross_entropy(x[3].double(), t[3], reduction=reduction).float())
            h = x.half()
            got = bulkred.cross_entropy(h, t, reduction=reduction, label_smoothing=0.1)
            want = F.cross_entropy(h.double(), t, reduction=reduction, label_smoothing=0.1)
            assert got.dtype == torch.float16 and got.shape == ()
            torch.testing.assert_close(got.double(), want, rtol=1e-3, atol=0)
    assert bulkred.cross_entropy(x, torch.full((7,), 3), ignore_index=3).isnan()  # every row ignored: NaN, as torch
    assert bulkred.cross_entropy(x, torch.full((7,), 3), ignore_index=3, reduction="sum") == 0
    built = {(k, m, s.get("reduction")) for k, m, n, d, s in InterpretedKernel.built if k == "cross_entropy"}
    assert built == {("cross_entropy", None, "sum"), ("cross_entropy", None, "mean")}, built
    InterpretedKernel.built.clear()
    bulkred.cross_entropy(x, t, reduction="none")
    bulkred.cross_entropy(x, t, torch.rand(40) + 0.5, reduction="mean")
    for reduction in ("mean", "sum", "mean"):  # (the second mean: the key's launcher)
        u = x.clone().requires_grad_()
        loss = bulkred.cross_entropy(u, t, reduction=reduction)
        _close(loss.detach(), F.cross_entropy(x.double(), t, reduction=reduction).float())
        loss.backward()
        x64 = x.double().requires_grad_()
        F.cross_entropy(x64, t, reduction=reduction).backward()
        _close(u.grad, x64.grad.float())
    built = {(s.get("reduction"), tuple(s.get("stats", ()))) for k, m, n, d, s in InterpretedKernel.built
             if k == "cross_entropy"}
    assert built == {(None, ()), ("mean", ("lse",)), ("sum", ("lse",))}, built


def test_cross_entropy_class_weights_against_torch(interpreted):
    """weight= with each reduction (torch's mean: divided by the sum of w[target] over the
    rows kept), ignore_index rows and label smoothing, 1-D input, a float16 input with a
    float16 and a float32 weight, against torch in float64; the kernel is the unweighted
    one (no smoothing in it: the weights and the smoothing are applied after it, from its
    stored lse)."""
    torch = interpreted
    F = torch.nn.functional
    x = _randn(torch, 6, 33, seed=81) * 3
    t = torch.tensor([0, 5, -100, 32, 7, -100])
    w = _randn(torch, 33, seed=82).abs() + 0.1
    w[5] = -0.7  # torch takes any weight: a negative one too
    for reduction in ("none", "sum", "mean"):
        for s in (0.0, 0.25):
            for _ in range(2):  # the second call: the key's launcher
                got = bulkred.cross_entropy(x, t, w, reduction=reduction, label_smoothing=s)
                want = F.cross_entropy(x.double(), t, w.double(), reduction=reduction, label_smoothing=s)
                _close(got, want.float())
            assert got.dtype == torch.float32
            if reduction != "none":  # the weights change the value (a test that can fail)
                assert not torch.allclose(got.double(), F.cross_entropy(x.double(), t, reduction=reduction,
                                                                        label_smoothing=s), atol=1e-3)
    settings = [b[4] for b in InterpretedKernel.built]
    assert all(st.get("label_smoothing") is None and st.get("weight") is None for st in settings), settings
    assert {tuple(st.get("stats", ())) for st in settings} == {(), ("lse",)}  # the lse read for smoothing
    none_left = torch.full((6,), 3)
    got = bulkred.cross_entropy(x, none_left, w, ignore_index=3, label_smoothing=0.1)
    assert got.isnan() and F.cross_entropy(x, none_left, w, ignore_index=3, label_smoothing=0.1).isnan()
    _close(bulkred.cross_entropy(x[3], torch.tensor(32), w, reduction="none", label_smoothing=0.3),
           F.cross_entropy(x[3].double(), torch.tensor(32), w.double(), reduction="none", label_smoothing=0.3).float())
    assert bulkred.cross_entropy(x, torch.tensor([0, 1, 2, 33, 4, 5]), w, reduction="none")[3].isnan()
    h = x.half()
    for wd in (torch.float16, torch.float32):
        for reduction in ("none", "mean"):
            got = bulkred.cross_entropy(h, t, w.to(wd), reduction=reduction, label_smoothing=0.2)
            want = F.cross_entropy(h.double(), t, w.to(wd).double(), reduction=reduction, label_smoothing=0.2)
            assert got.dtype == torch.float16
            torch.testing.assert_close(got.double(), want, rtol=2e-3, atol=2e-3)


def test_cross_entropy_weight_that_requires_grad_is_refused_as_torch(interpreted):
    """torch's loss is not differentiable with respect to the class weights: torch refuses a
    weight that requires grad (with grad enabled), and so does bulkred, in one line; without
    grad it is a weight as any."""
    torch = interpreted
    F = torch.nn.functional
    x, t = _randn(torch, 4, 8, seed=83), torch.tensor([1, 2, 3, -100])
    w = torch.rand(8, generator=torch.Generator().manual_seed(84)).requires_grad_(True)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        F.cross_entropy(x, t, w)
    with pytest.raises(bulkred.ReductionError) as e:
        bulkred.cross_entropy(x, t, w)
    assert str(e.value) == ("bulkred.cross_entropy: 'weight' requires grad: the loss is not differentiable with "
                            "respect to the class weights (torch refuses it too); pass weight.detach()")
    with torch.no_grad():
        _close(bulkred.cross_entropy(x, t, w, label_smoothing=0.1),
               F.cross_entropy(x.double(), t, w.double(), label_smoothing=0.1).float())


def _grads(torch, f, tensors, seed=11):
    """The gradients of ``sum(f(*tensors) * w)`` (a random ``w`` per float output)."""
    leaves = [t.detach().clone().requires_grad_(True) if t.is_floating_point() else t for t in tensors]
    outs = f(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    g = torch.Generator().manual_seed(seed)
    loss = sum((o.double() * torch.randn(o.shape, generator=g, dtype=torch.float64)).sum() for o in outs)
    loss.backward()
    return [t.grad for t in leaves if t.is_floating_point()]


def test_gradients_against_torch(interpreted):
    """Every function's gradients (x, weight, bias, residual) against torch's own function's,
    on padded rows with leading dimensions."""
    torch = interpreted
    F = torch.nn.functional
    x = _randn(torch, 2, 3, 24, seed=21)[..., :20]
    w, b, r = _randn(torch, 20, seed=22), _randn(torch, 20, seed=23), _randn(torch, 2, 3, 20, seed=24)
    cases = [
        (lambda t: bulkred.softmax(t), lambda t: torch.softmax(t, -1), (x,)),
        (lambda t: bulkred.log_softmax(t), lambda t: torch.log_softmax(t, -1), (x,)),
        (lambda t, u: bulkred.rms_norm(t, (20,), u, 1e-6), lambda t, u: F.rms_norm(t, (20,), u, 1e-6), (x, w)),
        (lambda t: bulkred.rms_norm(t, 20), lambda t: F.rms_norm(t, (20,), eps=torch.finfo(torch.float32).eps), (x,)),
        (lambda t, u, v: bulkred.layer_norm(t, (20,), u, v), lambda t, u, v: F.layer_norm(t, (20,), u, v), (x, w, b)),
        (lambda t, u, v: bulkred.add_rms_norm(t, u, v, 1e-6),
         lambda t, u, v: (F.rms_norm(t + u, (20,), v, 1e-6), t + u), (x, r, w)),
    ]
    for mine, theirs, tensors in cases:
        for got, want in zip(_grads(torch, mine, tensors), _grads(torch, theirs, tensors), strict=True):
            _close(got, want, 1e-4)
    logits = _randn(torch, 6, 33, seed=25) * 3
    t = torch.tensor([0, 5, -100, 32, 7, -100])
    cw = _randn(torch, 33, seed=26).abs() + 0.1
    for reduction in ("none", "sum", "mean"):
        for s in (0.0, 0.3):
            for wc in (None, cw):
                got = _grads(torch, lambda u: bulkred.cross_entropy(u, t, wc, reduction=reduction, label_smoothing=s),
                             (logits,))
                want = _grads(torch, lambda u: F.cross_entropy(u.double(), t, None if wc is None else wc.double(),
                                                               reduction=reduction, label_smoothing=s), (logits,))
                _close(got[0], want[0].float(), 1e-4)
                assert (got[0][t == -100] == 0).all()


def test_cross_entropy_gradients_of_16_bit_input(interpreted):
    """float16 logits through autograd, with and without class weights (float16 and float32)
    and smoothing, each reduction ('mean' through autograd: no out= division), against
    torch's float64 gradients; dx in float16."""
    torch = interpreted
    F = torch.nn.functional
    x = (_randn(torch, 5, 40, seed=27) * 2).half()
    t = torch.tensor([3, -100, 39, 0, 17])
    w = _randn(torch, 40, seed=28).abs() + 0.2
    for reduction in ("none", "sum", "mean"):
        for wc, s in ((None, 0.0), (None, 0.2), (w.half(), 0.0), (w, 0.2)):
            got = _grads(torch, lambda u: bulkred.cross_entropy(u, t, wc, reduction=reduction, label_smoothing=s), (x,))
            want = _grads(torch, lambda u: F.cross_entropy(u, t, None if wc is None else wc.double(),
                                                           reduction=reduction, label_smoothing=s), (x.double(),))
            assert got[0].dtype == torch.float16
            scale = float(want[0].abs().max())
            torch.testing.assert_close(got[0].double(), want[0], rtol=2e-3, atol=2e-3 * scale)


def test_double_backward_goes_through_torchs_composite(interpreted):
    """A backward that requires grad (create_graph) is the composite's: its own gradient is torch's."""
    torch = interpreted
    F = torch.nn.functional
    x = _randn(torch, 4, 8, seed=31)
    w = _randn(torch, 8, seed=32)
    tgt = torch.tensor([1, -100, 7, 0])

    def second(f, *ts):
        leaves = [t.clone().requires_grad_(True) for t in ts]
        (g,) = torch.autograd.grad(f(*leaves).pow(2).sum(), leaves[:1], create_graph=True)
        return torch.autograd.grad(g.pow(3).sum(), leaves)

    for mine, theirs, ts in (
        (lambda t: bulkred.softmax(t), lambda t: torch.softmax(t, -1), (x,)),
        (lambda t, u: bulkred.rms_norm(t, 8, u, 1e-5), lambda t, u: F.rms_norm(t, (8,), u, 1e-5), (x, w)),
        (lambda t, u: bulkred.layer_norm(t, 8, u), lambda t, u: F.layer_norm(t, (8,), u), (x, w)),
        (lambda t: bulkred.cross_entropy(t, tgt, w.abs(), label_smoothing=0.2, reduction="none"),
         lambda t: F.cross_entropy(t, tgt, w.abs(), label_smoothing=0.2, reduction="none"), (x,)),
    ):
        for got, want in zip(second(mine, *ts), second(theirs, *ts), strict=True):
            _close(got, want, 1e-3)


def test_a_call_is_kept_under_its_key(interpreted):
    """The second call of a key takes its launcher (no check, no kernel look-up); another
    layout, dtype or requires_grad is another key; torch's own kernels never run."""
    torch = interpreted
    x = _randn(torch, 4, 8, seed=41)
    y1 = bulkred.softmax(x)
    assert len(row_functions.CALLS) == 1 and len(InterpretedKernel.built) == 1
    y2 = bulkred.softmax(x + 1)  # the same key: softmax is shift-invariant
    assert len(row_functions.CALLS) == 1 and len(InterpretedKernel.built) == 1
    _close(y1, y2)
    bulkred.softmax(_randn(torch, 4, 16, seed=42)[:, :8])  # padded rows: another kernel
    assert len(row_functions.CALLS) == 2 and InterpretedKernel.built[-1][4]["x_stride"] == 16
    x.requires_grad_(True)
    bulkred.softmax(x).sum().backward()
    assert len(row_functions.CALLS) == 3 and x.grad is not None
    with torch.no_grad():
        bulkred.softmax(x)
    assert len(row_functions.CALLS) == 4
    kinds = [b[0] for b in InterpretedKernel.built]
    assert kinds == ["softmax", "softmax", "softmax_backward"], kinds  # softmax stores no statistic: one kernel


def test_refusals_are_one_line_before_any_kernel(interpreted):
    torch = interpreted
    x = _randn(torch, 4, 8)
    i = torch.zeros(4, dtype=torch.int64)
    bad = {
        "softmax": [((x, 0), "dim=0 is not the last dimension of a 2-D x"), ((x, 2), "dim 2 is out of range"),
                    ((x.double(),), "'x' has dtype torch.float64; the row kernels take float32"),
                    ((x.t(),), "x's last dimension must be contiguous (stride 1)"),
                    ((x, -1, torch.float64), "dtype=torch.float64: the row kernels give"),
                    ((torch.tensor(1.0), 1), "dim 1 is out of range for a 0-D x"),
                    ((x.expand(3, 4, 8),), "x's rows are not one stride apart (shape [3, 4, 8], strides [0, 8, 1])"),
                    ((x.as_strided((3, 8), (4, 1)),), "x's rows overlap (row stride 4 < row length 8"),
                    ((x, True), "'dim' must be an int, got True")],
        "rms_norm": [((x, (3, 8), None), "normalized_shape [3, 8] must be x's last dimensions"),
                     ((x, 8, torch.ones(7)), "'weight' must have the shape normalized_shape [8], got [7]"),
                     ((x, 8, torch.ones(8, dtype=torch.float16)), "'weight' has dtype torch.float16; it must be"),
                     ((x, 8, None, -1.0), "'eps' must be a finite number >= 0 or None, got -1.0"),
                     ((_randn(torch, 3, 4, 8).transpose(0, 1), 8),
                      "x's rows are not one stride apart")],
        "layer_norm": [((x, 8, torch.ones(8), torch.ones(8, dtype=torch.float64)), "'bias' has dtype torch.float64"),
                       ((x, [2, 4]), "normalized_shape [2, 4] must be x's last dimensions"),
                       ((_randn(torch, 2, 3, 6)[:, :, :4], [3, 4]), "x's last 2 dimensions (normalized_shape [3, 4]) "
                        "are not one contiguous block")],
        "add_rms_norm": [((x, x[:, :4]), "residual must be a tensor of x's shape [4, 8]")],
        "cross_entropy": [((x, i.float()), "class probabilities) is not supported yet"),
                          ((x, i[:3]), "target must have shape [4] for input of shape [4, 8], got [3]"),
                          ((x, i, None, -100, "avg"), "'reduction' must be 'none', 'sum' or 'mean', got 'avg'"),
                          ((x, i, None, -100, "mean", 1.5), "'label_smoothing' must be a number in [0, 1]"),
                          ((x.view(2, 2, 8), i[:2]), "input must be [M, C] logits (or [C]), got shape [2, 2, 8]"),
                          ((x, i.int()), "target must be int64 class indices of shape [4]"),
                          ((x, i, torch.ones(7)), "'weight' must have shape [8] (input's last dimension), got [7]"),
                          ((x, i, torch.ones(8, dtype=torch.float64)),
                           "'weight' has dtype torch.float64; the row kernels"),
                          ((x.half(), i, torch.ones(8, dtype=torch.bfloat16)),
                           "'weight' has dtype torch.bfloat16; it must be input's (torch.float16) or float32"),
                          ((x, i, torch.ones(8, 1)), "'weight' must have shape [8]")],
    }
    for name, calls in bad.items():
        for args, words in calls:
            with pytest.raises(bulkred.ReductionError) as e:
                getattr(bulkred, name)(*args)
                pytest.fail(f"{name}: not refused: {words}")
            msg = str(e.value)
            assert "\n" not in msg and msg.startswith(f"bulkred.{name}: ") and words in msg, (name, msg)
    assert InterpretedKernel.built == []
    with pytest.raises(bulkred.ReductionError) as e:  # the dialect's refusal, without its location
        bulkred.softmax(x, variant="rows_fast")
    assert str(e.value) == ("bulkred.softmax: 'bulkred.normalize_rows' 'variant' 'rows_fast' is not a known variant "
                            "(known: rows_warp, rows_bulk_backward, rows_bulk, rows_cta, rows_cluster, rows_slices, rows_stream)")


def test_torch_compile_traces_forward_and_backward(interpreted):
    """torch.compile(fullgraph=True) traces every function through its operator (the fake
    implementation gives the shapes) and the backward through the rules; with dynamic
    shapes, one graph for every M."""
    torch = interpreted
    F = torch.nn.functional
    x = _randn(torch, 3, 16, seed=51)
    w = _randn(torch, 16, seed=52)

    def f(a, u, t):
        y, h = bulkred.add_rms_norm(a, a * 2, u, 1e-6)
        return (bulkred.softmax(a).sum() + bulkred.log_softmax(a, -1).sum() + bulkred.rms_norm(a, 16, u).sum()
                + bulkred.layer_norm(a, (16,), u, u).sum() + y.sum() + h.sum()
                + bulkred.cross_entropy(a, t, label_smoothing=0.1)
                + bulkred.cross_entropy(a, t, u.detach().abs(), label_smoothing=0.2))

    def g(a, u, t):
        y, h = F.rms_norm(a * 3, (16,), u, 1e-6), a * 3
        return (torch.softmax(a, -1).sum() + torch.log_softmax(a, -1).sum()
                + F.rms_norm(a, (16,), u, torch.finfo(torch.float32).eps).sum()
                + F.layer_norm(a, (16,), u, u).sum() + y.sum() + h.sum() + F.cross_entropy(a, t, label_smoothing=0.1)
                + F.cross_entropy(a, t, u.detach().abs(), label_smoothing=0.2))

    graphs = []

    def backend(gm, example_inputs):
        from torch._dynamo.backends.common import aot_autograd

        def keep(gm, _):
            from functorch.compile import make_boxed_func

            graphs.append(str(gm.graph))
            return make_boxed_func(gm.forward)

        return aot_autograd(fw_compiler=keep, bw_compiler=keep)(gm, example_inputs)

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend=backend)  # M a symbol: one graph
    for rows in (x, x[:2]):
        t = torch.tensor([1, -100, 15][: len(rows)])
        a1, u1 = rows.clone().requires_grad_(True), w.clone().requires_grad_(True)
        a2, u2 = rows.clone().requires_grad_(True), w.clone().requires_grad_(True)
        got, want = compiled(a1, u1, t), g(a2, u2, t)
        _close(got, want, 1e-4)
        got.backward()
        want.backward()
        _close(a1.grad, a2.grad, 1e-4)
        _close(u1.grad, u2.grad, 1e-4)
    forward, backward = graphs  # one forward and one backward graph for both M
    for name in ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy"):
        assert f"bulkred.{name}.default" in forward, name
    for name in ("softmax", "log_softmax", "rms_norm", "layer_norm", "cross_entropy"):  # add_rms_norm: rms_norm's
        assert f"bulkred.{name}_backward.default" in backward, name


def test_fake_tensors_give_the_shapes_and_the_same_refusals(interpreted):
    torch = interpreted
    from torch._subclasses.fake_tensor import FakeTensorMode


    with FakeTensorMode():
        x = torch.empty(2, 5, 8)
        y, rstd = torch.ops.bulkred.rms_norm(x, torch.empty(8), 1e-6, None)
        assert y.shape == x.shape and rstd.shape == (2, 5) and rstd.dtype == torch.float32
        loss, lse = torch.ops.bulkred.cross_entropy(torch.empty(4, 9, dtype=torch.bfloat16),
                                                    torch.zeros(4, dtype=torch.int64), None, -100, 0.0, None)
        assert loss.dtype == lse.dtype == torch.float32 and loss.shape == (4,)
        loss, _ = torch.ops.bulkred.cross_entropy(torch.empty(4, 9, dtype=torch.bfloat16),
                                                  torch.zeros(4, dtype=torch.int64), torch.empty(9), -100, 0.1, None)
        assert loss.shape == (4,)
        with pytest.raises(bulkred.ReductionError, match=r"^bulkred.cross_entropy: 'weight' must have shape \[9\] "
                           r"\(input's last dimension\), got \[8\]$"):
            torch.ops.bulkred.cross_entropy(torch.empty(4, 9), torch.zeros(4, dtype=torch.int64), torch.empty(8),
                                            -100, 0.0, None)
        with pytest.raises(bulkred.ReductionError, match=r"^bulkred.rms_norm: 'weight' must have shape \[8\]"):
            torch.ops.bulkred.rms_norm(x, torch.empty(7), 1e-6, None)


def test_the_refusal_table_of_the_docs_is_what_is_refused(interpreted):
    """docs/rows.md's "Refused" table: each row's calls are refused, each quoted phrase of
    its second cell is some call's message, and every row has its calls here."""
    import re
    from pathlib import Path

    torch = interpreted
    x, t = _randn(torch, 4, 8), torch.zeros(4, dtype=torch.int64)
    probes = {
        "`dim` other than the last": [lambda: bulkred.softmax(x, 0)],
        "`dtype=torch.float64`, or a float64 `x`": [lambda: bulkred.log_softmax(x, -1, torch.float64),
                                                    lambda: bulkred.rms_norm(x.double(), 8)],
        "class weights that require grad (`cross_entropy(weight=w)`, `w.requires_grad`)": [
            lambda: bulkred.cross_entropy(x, t, torch.ones(8, requires_grad=True))],
        "class probabilities as `target` (a float tensor)": [lambda: bulkred.cross_entropy(x, torch.rand(4, 8))],
        "`cross_entropy` of `[N, C, d1, ...]` input": [lambda: bulkred.cross_entropy(x.view(2, 8, 2), t.view(2, 2))],
        "a negative `eps`": [lambda: bulkred.layer_norm(x, 8, eps=-0.5)],
        "a last dimension of another stride, rows that are not one stride apart, overlapping rows": [
            lambda: bulkred.softmax(x.t()), lambda: bulkred.softmax(_randn(torch, 3, 4, 8).transpose(0, 1)),
            lambda: bulkred.softmax(x.as_strided((3, 8), (4, 1)))],
    }
    text = (Path(__file__).resolve().parents[1] / "docs" / "rows.md").read_text()
    section = text[text.index("### Refused\n"):text.index("\n## ", text.index("### Refused\n"))]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|")][2:]
    assert [r[0] for r in rows] == list(probes)
    for what, said, _ in rows:
        messages = []
        for call in probes[what]:
            with pytest.raises(bulkred.ReductionError) as e:
                call()
            messages.append(str(e.value))
        for quote in re.findall(r'"([^"]+)"', said):
            assert any(quote in m for m in messages), (what, quote, messages)


BAD = [None, 42, "garbage", b"\xff\xfe", [1], object(), math.nan, -3, True]


def test_every_argument_of_every_function_refuses_in_one_line(interpreted):
    """Each argument of each function replaced in turn by each bad value (the others
    valid): the call works or raises a ReductionError of one line starting with the
    function's name; nothing else escapes."""
    torch = interpreted
    x = _randn(torch, 2, 8)
    valid = {
        "softmax": (x, -1, None), "log_softmax": (x, -1, None), "rms_norm": (x, 8, torch.ones(8), 1e-5),
        "layer_norm": (x, 8, torch.ones(8), torch.zeros(8), 1e-5), "add_rms_norm": (x, x, torch.ones(8), 1e-5),
        "cross_entropy": (x, torch.tensor([1, 2]), None, -100, "mean", 0.0),
    }
    seen = 0
    for name, args in valid.items():
        f = getattr(bulkred, name)
        for i in range(len(args) + 1):  # the last: variant=
            for bad in BAD:
                call = (lambda: f(*args, variant=bad)) if i == len(args) else (
                    lambda: f(*args[:i], bad, *args[i + 1:]))
                try:
                    call()
                except bulkred.ReductionError as e:
                    msg = str(e)
                    assert "\n" not in msg and msg.startswith(f"bulkred.{name}: "), (name, i, bad, msg)
                seen += 1
    assert seen == 31 * len(BAD)  # 31 arguments (variant= included)


def _aligned_kernels_only(monkeypatch) -> None:
    """row_kernels.kernel_for's kernels refuse an address off 16 bytes, as the launch
    layer's MisalignedError does."""
    from bulkred_dialect.backend_ptx.errors import MisalignedError

    inner = row_kernels.kernel_for

    class Aligned:
        def __init__(self, k):
            self.k = k

        def __call__(self, *tensors):
            if any(t.data_ptr() % 16 for t in tensors):
                raise MisalignedError("param 'x': address off 16 bytes")
            return self.k(*tensors)

    monkeypatch.setattr(row_kernels, "kernel_for", lambda *a, **kw: Aligned(inner(*a, **kw)))


def test_an_input_off_the_vector_alignment_is_copied(interpreted, monkeypatch):
    """A kernel that refuses an address off its vector loads' alignment (as the launch
    layer's MisalignedError does): the call copies that input at its strides and runs; the
    key (which sees no address) keeps working for aligned inputs."""
    torch = interpreted
    _aligned_kernels_only(monkeypatch)
    base = _randn(torch, 40, seed=61)
    odd, even = base[1:33].view(4, 8), base[8:40].view(4, 8)  # 4 bytes, 32 bytes past the storage's start
    for x in (odd, even, odd):
        _close(bulkred.softmax(x), torch.softmax(x.double(), -1).float())
        _close(bulkred.rms_norm(x[None], 8), torch.nn.functional.rms_norm(x[None].double(), (8,), eps=1.1920928955078125e-07).float())
    assert len(row_functions.CALLS) == 2


def _bound_kernels(torch, monkeypatch) -> list:
    """Each call's kernel given ``bind`` (the launch layer's ``Kernel.bind``): the launcher
    ``launch.bound_launcher`` generates, its launch the interpreted kernel on the CPU
    memory at the pointers it passes. Returns the list of launches (each its pointers'
    count)."""
    import ctypes
    from types import SimpleNamespace

    from bulkred_dialect.backend_ptx import launch

    inner = row_kernels.kernel_for
    launched = []

    def tensor_at(ptr, like):  # the tensor of like's shape and dtype at address ptr (CPU memory)
        buf = (ctypes.c_char * (like.numel() * like.element_size())).from_address(ptr)
        return torch.frombuffer(buf, dtype=like.dtype).view(like.shape)

    class Bound:
        def __init__(self, k):
            self.k = k

        def __call__(self, *tensors):
            return self.k(*tensors)

        def bind(self, params, *, inputs, order, new, pack=None, at=None, refused=None):
            g = SimpleNamespace(broken=None, streams={0: "s"}, stream_for=lambda h: "s", memset_async=None)

            def run(s, config, kern, *pointers):
                *ptrs, m = pointers
                assert int(m) == params[0].shape[0] and len(ptrs) == len(params)
                launched.append(len(ptrs))
                self.k(*[tensor_at(p, t) for p, t in zip(ptrs, params)])

            b = launch.bound_launcher("rows", g, "kern", "config", [np.int64(params[0].shape[0])], params,
                                      inputs=inputs, order=order, new=new, pack=pack, zero=(),
                                      align=[16] + [1] * (len(params) - 1), at=at, refused=refused)
            b.__globals__.update(raw_stream=lambda dev: 0, launch=run)
            return b

    monkeypatch.setattr(row_kernels, "kernel_for", lambda *a, **kw: Bound(inner(*a, **kw)))
    return launched


def test_the_launch_layers_bound_launcher_runs_the_calls(interpreted, monkeypatch):
    """A kernel with ``bind`` (the launch layer's ``Kernel.bind``): the second call of a
    key runs ``launch.bound_launcher``'s generated launcher (the addresses, the outputs made
    per call, the rows' count a constant) and gives torch's values; the weights after the
    outputs are passed in their params' places; an input off the vector loads' alignment
    is refused by the launcher and copied."""
    torch = interpreted
    F = torch.nn.functional
    launched = _bound_kernels(torch, monkeypatch)
    x, w, b = _randn(torch, 2, 3, 16, seed=71), _randn(torch, 16, seed=72), _randn(torch, 16, seed=73)
    r, t = _randn(torch, 2, 3, 16, seed=74), torch.tensor([0, 15, -100, 3])
    x64 = x.double()
    for _ in range(2):
        _close(bulkred.softmax(x), torch.softmax(x64, -1).float())
        _close(bulkred.rms_norm(x, (16,), w, 1e-6), F.rms_norm(x64, (16,), w.double(), 1e-6).float())
        _close(bulkred.layer_norm(x, (16,), w, b), F.layer_norm(x64, (16,), w.double(), b.double()).float())
        _close(bulkred.layer_norm(x, (16,), None, b), F.layer_norm(x64, (16,), None, b.double()).float())
        y, h = bulkred.add_rms_norm(x, r, w, 1e-5)
        _close(h, x + r)
        _close(y, F.rms_norm((x + r).double(), (16,), w.double(), 1e-5).float())
        for reduction in ("none", "mean", "sum"):
            _close(bulkred.cross_entropy(x[0], t[:3], reduction=reduction),
                   F.cross_entropy(x[0].double(), t[:3], reduction=reduction).float())
    # the launch layer's generated launcher kept as it is (cross_entropy's 'none' in _bound's, its rows' result after)
    launchers = {f.__code__.co_filename if f.__qualname__ == "launcher" else f.__qualname__
                 for f in row_functions.CALLS.values()}
    assert launchers == {"<bulkred launcher of rows>", "_bound.<locals>.launcher"}, launchers
    # each call's params: the weights in their places; cross_entropy's 'mean' and 'sum' with their reduced
    assert launched == [2, 3, 4, 3, 5, 3, 4, 4] * 2
    base = _randn(torch, 40, seed=75)
    odd, even = base[1:33].view(4, 8), base[8:40].view(4, 8)  # 4 and 32 bytes past the storage's start
    for y in (odd, even, odd):  # odd: refused by the launcher, copied and run by the kernel's own call
        _close(bulkred.softmax(y), torch.softmax(y.double(), -1).float())
    t4 = torch.tensor([0, 7, -100, 3])
    for y in (odd, even, odd):  # the kernel's own mean, its [1] result kept [1] on the copy (H200 seed 311132)
        _close(bulkred.cross_entropy(y, t4, label_smoothing=1.0),
               F.cross_entropy(y.double(), t4, label_smoothing=1.0).float())
    assert launched[16:] == [2, 4]  # the aligned calls'


def test_the_autograd_route_through_the_launch_layers_launcher(interpreted, monkeypatch):
    """With ``bind`` (the launch layer's), the autograd route's forward is its generated
    launcher too: the kernel with the statistics the backward reads (rstd, mean, lse)
    among its outputs, made per call. The values are torch's on the first call and on the
    kept one (other values, the same key: x with leading dimensions, the weights, the
    residual, the targets); the gradients, from those statistics, torch's; an input off
    the vector loads' alignment takes the operator's own run (a copy)."""
    torch = interpreted
    F = torch.nn.functional
    launched = _bound_kernels(torch, monkeypatch)
    t = torch.tensor([0, 15, -100, 3])
    eps = torch.finfo(torch.float32).eps
    cases = [  # (bulkred's, torch's, the tensors of a seed, launched: the pointers of each forward)
        (lambda u, v: bulkred.rms_norm(u, (16,), v, 1e-6), lambda u, v: F.rms_norm(u, (16,), v, 1e-6),
         lambda s: (_randn(torch, 2, 2, 16, seed=s), _randn(torch, 16, seed=s + 1)), 4),
        (lambda u, v, c: bulkred.layer_norm(u, 16, v, c), lambda u, v, c: F.layer_norm(u, (16,), v, c),
         lambda s: (_randn(torch, 4, 16, seed=s), _randn(torch, 16, seed=s + 1), _randn(torch, 16, seed=s + 2)), 6),
        (lambda u, r, v: bulkred.add_rms_norm(u, r, v), lambda u, r, v: (F.rms_norm(u + r, (16,), v, eps), u + r),
         lambda s: (_randn(torch, 4, 16, seed=s), _randn(torch, 4, 16, seed=s + 1), _randn(torch, 16, seed=s + 2)), 6),
        (lambda u: bulkred.cross_entropy(u, t, label_smoothing=0.1),
         lambda u: F.cross_entropy(u, t, label_smoothing=0.1), lambda s: (_randn(torch, 4, 16, seed=s) * 3,),
         5),  # x, target, loss, lse, the kernel's mean
    ]
    for mine, theirs, tensors, pointers in cases:
        for seed in (121, 232):  # the first call, then the kept launcher's
            ts = tensors(seed)
            launched.clear()
            got, want = mine(*[u.clone().requires_grad_() for u in ts]), theirs(*[u.double() for u in ts])
            assert launched == [pointers], launched  # the forward: one launch through the bound launcher
            for g, w in zip(*[r if isinstance(r, tuple) else (r,) for r in (got, want)], strict=True):
                assert g.grad_fn is not None
                _close(g.detach(), w.float(), 1e-4)
    x, w = _randn(torch, 4, 16, seed=241), _randn(torch, 16, seed=242)
    for mine, theirs, ts in (  # the gradients, from the statistics the bound launcher wrote
        (lambda u: bulkred.rms_norm(u, 16), lambda u: F.rms_norm(u, (16,), eps=eps), (x,)),
        (lambda u, v: bulkred.layer_norm(u, 16, v), lambda u, v: F.layer_norm(u, (16,), v), (x, w)),
        (lambda u: bulkred.cross_entropy(u, t, label_smoothing=0.1),
         lambda u: F.cross_entropy(u, t, label_smoothing=0.1), (x * 3,)),
    ):
        for got, want in zip(_grads(torch, mine, ts), _grads(torch, theirs, [u.double() for u in ts]), strict=True):
            _close(got, want.float(), 1e-4)
    base = _randn(torch, 40, seed=243)
    odd = base[1:33].view(2, 16).requires_grad_()  # 4 bytes past the storage's start
    launched.clear()
    want = F.rms_norm(odd.detach().double(), (16,), w.double(), 1e-6).float()
    _close(bulkred.rms_norm(odd, 16, w, 1e-6).detach(), want)
    assert launched == [], launched  # refused by the bound launcher: the kernel's own call


@pytest.mark.parametrize("bound", [False, True], ids=["kernel", "bound"])
def test_cross_entropy_reduced_by_torch_past_reduced_rows_max(interpreted, monkeypatch, bound):
    """Batches of more than row_functions.REDUCED_ROWS_MAX rows take the kernel without the
    reduction and reduce its per-row losses with torch's operations (the last CTA adding
    every loss alone was slower there on the H200); at the limit, the kernel's own. The
    kept launcher (the kernel's call, or the launch layer's bound one) divides by its own
    call's rows kept."""
    torch = interpreted
    F = torch.nn.functional
    if bound:
        _bound_kernels(torch, monkeypatch)
    monkeypatch.setattr(row_functions, "REDUCED_ROWS_MAX", 6)
    x = _randn(torch, 7, 24, seed=21) * 3
    t = torch.tensor([0, 5, -100, 23, 7, 2, 1])
    InterpretedKernel.built.clear()
    for reduction in ("sum", "mean"):
        _close(bulkred.cross_entropy(x, t, reduction=reduction), F.cross_entropy(x.double(), t, reduction=reduction).float())
        _close(bulkred.cross_entropy(x[:6], t[:6], reduction=reduction),
               F.cross_entropy(x[:6].double(), t[:6], reduction=reduction).float())
    built = [s.get("reduction") for k, m, n, d, s in InterpretedKernel.built if k == "cross_entropy"]
    assert None in built and {"sum", "mean"} <= set(built), built
    t2 = torch.tensor([-100, 5, -100, 23, -100, 2, 1])  # the kept launcher: the mean over this call's rows kept
    _close(bulkred.cross_entropy(x, t2), F.cross_entropy(x.double(), t2).float())
    for reduction, tg in (("mean", t), ("sum", t), ("mean", t2)):  # autograd: the rows reduced in the Function
        for rows in (7, 6):  # past the limit (torch's reduction), at it (the kernel's)
            u, u64 = x[:rows].clone().requires_grad_(), x[:rows].double().requires_grad_()
            loss, want = bulkred.cross_entropy(u, tg[:rows], reduction=reduction), F.cross_entropy(
                u64, tg[:rows], reduction=reduction)
            _close(loss.detach(), want.detach().float())
            loss.backward()
            want.backward()
            _close(u.grad, u64.grad.float(), 1e-4)


def test_cross_entropy_reduced_in_the_kernel_off_the_common_launcher(interpreted, monkeypatch):
    """The calls whose kernel reduces the mean or sum itself but which the common launcher
    does not take: x off the vector loads' alignment (copied, the kernel called by
    ``run``: its ``reduced`` [1], the loss rows [M]), a target that is a strided view (the
    front, then ``run``); label smoothing 0 and 1, ignored rows, M > 1, each call twice
    (the key's launcher), with class weights (torch's reduction), under torch.no_grad
    with x requiring grad, and through autograd (the rows reduced by torch), against
    torch in float64. (H200 random rows, seed 311132 draw 129: 'shape [30] is invalid
    for input of size 1', the [1] result viewed as [M].)"""
    torch = interpreted
    F = torch.nn.functional
    _aligned_kernels_only(monkeypatch)
    base = _randn(torch, 32, seed=91) * 3
    odd, even = base[5:29].view(3, 8), base[8:32].view(3, 8)  # 20 and 32 bytes past the storage's start
    t = torch.tensor([1, -100, 7])
    strided = torch.tensor([1, 0, -100, 0, 7, 0])[::2]
    cw = _randn(torch, 8, seed=92).abs() + 0.5
    for x, tg in ((odd, t), (even, strided), (odd, strided)):
        for reduction in ("mean", "sum"):
            for s in (0.0, 1.0):
                want = F.cross_entropy(x.double(), tg, reduction=reduction, label_smoothing=s).float()
                for _ in range(2):
                    _close(bulkred.cross_entropy(x, tg, reduction=reduction, label_smoothing=s), want)
            want = F.cross_entropy(x.double(), tg, cw.double(), reduction=reduction, label_smoothing=1.0).float()
            _close(bulkred.cross_entropy(x, tg, cw, reduction=reduction, label_smoothing=1.0), want)  # class weights
    with torch.no_grad():  # x requires grad, autograd does not record: the kernel's reduction
        _close(bulkred.cross_entropy(base.clone().requires_grad_()[5:29].view(3, 8), t),
               F.cross_entropy(odd.double(), t).float())
    u = base.clone().requires_grad_()
    loss = bulkred.cross_entropy(u[5:29].view(3, 8), t, label_smoothing=1.0)
    u64 = base.double().requires_grad_()
    want = F.cross_entropy(u64[5:29].view(3, 8), t, label_smoothing=1.0)
    _close(loss.detach(), want.detach().float())
    loss.backward()
    want.backward()
    _close(u.grad, u64.grad.float(), 1e-4)
    assert {s.get("reduction") for k, m, n, d, s in InterpretedKernel.built if k == "cross_entropy"} == {
        None, "mean", "sum"}


def test_a_kept_calls_equal_value_of_another_type_is_checked_again(interpreted, monkeypatch):
    """A function's key holds each option's type (normalized_shape's items' too), so that
    a value equal to a kept call's but refused (True for 1, 8.0 for 8 alone or in a tuple
    of one or two, False for 0.0, -100.0 for -100, a numpy weight for a tensor) still gets its one-line refusal; the
    second of two equal calls runs the kept launcher (no check), a list normalized_shape
    (not hashable: the general key) too."""
    torch = interpreted
    x, w, t = _randn(torch, 2, 8, seed=95), _randn(torch, 8, seed=96), torch.tensor([1, -100])
    first = []
    inner = row_functions._first
    monkeypatch.setattr(row_functions, "_first", lambda *a: first.append(a[0].name) or inner(*a))
    cases = [
        (lambda: bulkred.softmax(x, 1), lambda: bulkred.softmax(x, True), "'dim' must be an int, got True"),
        (lambda: bulkred.rms_norm(x, 8, w), lambda: bulkred.rms_norm(x, 8.0, w), "'normalized_shape' must be"),
        (lambda: bulkred.rms_norm(x, (8,), w), lambda: bulkred.rms_norm(x, (8.0,), w), "'normalized_shape' must be"),
        (lambda: bulkred.layer_norm(x, [8], w), lambda: bulkred.layer_norm(x, [True], w), "'normalized_shape' must be"),
        (lambda: bulkred.layer_norm(x, (2, 8)), lambda: bulkred.layer_norm(x, (2, 8.0)), "'normalized_shape' must be"),
        (lambda: bulkred.rms_norm(x, 8, w), lambda: bulkred.rms_norm(x, 8, w.numpy()), "expected a torch tensor"),
        (lambda: bulkred.cross_entropy(x, t, label_smoothing=0.0),
         lambda: bulkred.cross_entropy(x, t, label_smoothing=False), "'label_smoothing' must be a number in [0, 1]"),
        (lambda: bulkred.cross_entropy(x, t), lambda: bulkred.cross_entropy(x, t, None, -100.0),
         "'ignore_index' must be an int"),
    ]
    for ok, bad, words in cases:
        first.clear()
        ok()
        ok()
        assert len(first) <= 1, first  # the second: the kept launcher
        with pytest.raises(bulkred.ReductionError) as e:
            bad()
        assert words in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_autograd_route_takes_the_calls_tensors_without_the_front(interpreted, monkeypatch):
    """A kept call on the autograd route whose operator arguments are the call's tensors as
    given (2-D x, a weight of one dimension, cross_entropy's target) runs without the
    front: the second call's tensors (other values, the same key; cross_entropy's mean
    over another target's rows kept) are the operator's, its values torch's; a call whose
    front makes other tensors (two normalized dimensions: x viewed, the weight reshaped;
    dtype= converting x) runs the front on every call."""
    torch = interpreted
    F = torch.nn.functional
    fronts = []
    for kind, f in list(row_functions.FRONTS.items()):
        monkeypatch.setitem(row_functions.FRONTS, kind, lambda row, *a, f=f: fronts.append(row.name) or f(row, *a))
    targets = {101: torch.tensor([3, -100, 0, 7]), 202: torch.tensor([-100, -100, 5, 1])}
    cases = [
        ("rms_norm", lambda s, u, v: bulkred.rms_norm(u, 8, v, 1e-6), lambda s, u, v: F.rms_norm(u, (8,), v, 1e-6),
         lambda s: (_randn(torch, 4, 8, seed=s), _randn(torch, 8, seed=s + 1))),
        ("add_rms_norm", lambda s, u, r, v: bulkred.add_rms_norm(u, r, v), lambda s, u, r, v: (
            F.rms_norm(u + r, (8,), v, torch.finfo(torch.float32).eps), u + r),
         lambda s: (_randn(torch, 4, 8, seed=s), _randn(torch, 4, 8, seed=s + 1), _randn(torch, 8, seed=s + 2))),
        ("cross_entropy", lambda s, u: bulkred.cross_entropy(u, targets[s]),
         lambda s, u: F.cross_entropy(u, targets[s]), lambda s: (_randn(torch, 4, 8, seed=s),)),
        ("layer_norm", lambda s, u, v: bulkred.layer_norm(u, (2, 4), v), lambda s, u, v: F.layer_norm(u, (2, 4), v),
         lambda s: (_randn(torch, 4, 2, 4, seed=s), _randn(torch, 2, 4, seed=s + 1))),
        ("log_softmax", lambda s, u: bulkred.log_softmax(u.half(), dtype=torch.float32),
         lambda s, u: torch.log_softmax(u.half().double(), -1), lambda s: (_randn(torch, 4, 8, seed=s),)),
    ]
    for name, mine, theirs, tensors in cases:
        for seed in (101, 202):  # the same key, other values: the second call the kept launcher
            ts = tensors(seed)
            got, want = mine(seed, *[u.clone().requires_grad_() for u in ts]), theirs(seed, *[u.double() for u in ts])
            for g, w in zip(*[r if isinstance(r, tuple) else (r,) for r in (got, want)], strict=True):
                assert g.grad_fn is not None  # the autograd route
                _close(g.detach(), w.float(), 1e-4)
    # the front: the first call's checks, then each call's own where the launcher takes it (the first's too)
    assert [fronts.count(n) for n, *_ in cases] == [1, 1, 1, 3, 3], fronts


def test_a_backward_kernels_call_is_kept_under_its_key(interpreted, monkeypatch):
    """The backward operators keep each call's checked plan and kernel under its key (the
    checked tensors' class, shape, dtype, device and strides, the options): a second
    backward of the same key neither checks nor looks its kernel up again, and gives
    torch's gradients from the new values; another shape is checked again (refused in one
    line where bad)."""
    torch = interpreted
    F = torch.nn.functional
    plans = []
    inner = row_functions._backward_plan
    monkeypatch.setattr(row_functions, "_backward_plan", lambda *a, **kw: plans.append(a[0]) or inner(*a, **kw))
    t = torch.tensor([0, -100, 7, 3])
    cases = [(lambda u: bulkred.softmax(u), lambda u: torch.softmax(u, -1)),
             (lambda u: bulkred.rms_norm(u, 8), lambda u: F.rms_norm(u, (8,), eps=torch.finfo(torch.float32).eps)),
             (lambda u: bulkred.cross_entropy(u, t, label_smoothing=0.2),
              lambda u: F.cross_entropy(u, t, label_smoothing=0.2))]
    for mine, theirs in cases:
        for seed in (131, 141):  # the same key, other values
            x = _randn(torch, 4, 8, seed=seed) * 2
            _close(_grads(torch, mine, (x,), seed)[0], _grads(torch, theirs, (x.double(),), seed)[0].float(), 1e-4)
    assert plans == ["softmax_backward", "rms_norm_backward", "cross_entropy_backward"], plans
    y = bulkred.softmax(_randn(torch, 4, 8, seed=151))
    with pytest.raises(bulkred.ReductionError) as e:
        torch.ops.bulkred.softmax_backward(torch.ones(3, 8), y, None)
    assert str(e.value) == "bulkred.softmax_backward: grad must be a tensor of shape [4, 8] on output's device"


def test_the_autograd_route_without_torchs_python_apply_wrapper(interpreted, monkeypatch):
    """Where torch's ``Function.apply`` is a Python wrapper (torch 2.11), the key's Function
    is applied through ``torch_ops.applier`` (the C++ apply at once, each tensor unwrapped
    if dead, as the wrapper does): forced here, the values and gradients are torch's, the
    second call of each key takes it too."""
    from bulkred_dialect import torch_ops

    torch = interpreted
    F = torch.nn.functional
    monkeypatch.setattr(torch_ops, "PYTHON_APPLY", True)
    row_functions.forget()
    x, w, t = _randn(torch, 4, 16, seed=251), _randn(torch, 16, seed=252), torch.tensor([3, -100, 0, 7])
    for mine, theirs, ts in (
        (lambda u: bulkred.softmax(u), lambda u: torch.softmax(u, -1), (x,)),
        (lambda u, v: bulkred.rms_norm(u, 16, v, 1e-6), lambda u, v: F.rms_norm(u, (16,), v, 1e-6), (x, w)),
        (lambda u: bulkred.cross_entropy(u, t), lambda u: F.cross_entropy(u, t), (x * 3,)),
    ):
        for _ in range(2):  # the first call, then the key's kept launcher
            got, want = mine(*[u.clone().requires_grad_() for u in ts]), theirs(*[u.double() for u in ts])
            assert got.grad_fn is not None
            _close(got.detach(), want.detach().float(), 1e-4)
            for g, h in zip(_grads(torch, mine, ts), _grads(torch, theirs, [u.double() for u in ts]), strict=True):
                _close(g, h.float(), 1e-4)
    kept = [f for f in row_functions.CALLS.values() if f.__closure__]
    applies = {c.cell_contents.__qualname__ for f in kept for c in f.__closure__ if callable(c.cell_contents)
               and getattr(c.cell_contents, "__qualname__", "").startswith("applier")}
    assert applies == {"applier.<locals>.apply"}, applies
    row_functions.forget()
