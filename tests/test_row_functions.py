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
    assert NORMS["cross_entropy"].schema() == (
        "(Tensor input, Tensor target, int ignore_index, float label_smoothing, str? variant) -> (Tensor, Tensor)")


@pytest.mark.parametrize("name", [r.name for r in NORM_ROWS])
def test_numpy_arrays_are_refused_with_the_reason(name):
    x = np.zeros((2, 8), np.float32)
    args = {"add_rms_norm": (x, x), "cross_entropy": (x, np.zeros(2, np.int64)), "rms_norm": (x, 8),
            "layer_norm": (x, 8)}.get(name, (x,))
    with pytest.raises(bulkred.ReductionError) as e:
        getattr(bulkred, name)(*args)
    assert str(e.value) == (f"bulkred.{name}: expected a torch tensor, got ndarray (a numpy array: the row functions "
                            "take torch tensors, e.g. torch.as_tensor(x, device='cuda'))")


# endregion

# region The call path on the CPU: the interpreter as the kernel


def _torch():
    return pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for these tests)")


_OUTPUTS = ("y", "loss", "residual_out", "row_max", "row_sum", "mean", "rstd", "lse")


class InterpretedKernel:
    """The module ``row_kernels.module`` builds for a call's settings, lowered for sm_90a
    and run by the interpreter on numpy copies of the call's CPU tensors; the outputs
    copied back."""

    def __init__(self, kind, m, n, dtype, **settings):
        from bulkred_dialect.backend_ptx.runtime import lower_tile_module

        self.kind, self.settings = kind, settings
        self.module = row_kernels.module(kind, m, n, dtype, **{k: v for k, v in settings.items() if k != "target"})
        lower_tile_module(self.module, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
        s = settings
        self.names = ["x", *(["target", "loss"] if kind == "cross_entropy" else ["y"]),
                      *(["grad"] if kind.endswith("_backward") else []),
                      *(["residual", "residual_out"] if kind == "add_rms_norm" else []),
                      *(["weight"] if s.get("weight") else []), *(["bias"] if s.get("bias") else []),
                      *[st for st in ("row_max", "row_sum", "mean", "rstd", "lse") if st in s.get("stats", ())]]
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
    monkeypatch.setattr(row_functions, "DEVICES", ("cuda", "cpu"))
    row_functions.forget()
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
    """Each function on padded rows and leading dimensions against torch's in float64."""
    torch = interpreted
    F = torch.nn.functional
    base = _randn(torch, 2, 3, 24, seed=1)
    x = base[..., :20]  # padded rows: row stride 24, read in place
    x64 = x.double()
    w, b = _randn(torch, 20, seed=2), _randn(torch, 20, seed=3)
    _close(bulkred.softmax(x), torch.softmax(x64, -1).float())
    _close(bulkred.log_softmax(x, 2), torch.log_softmax(x64, 2).float())
    _close(bulkred.rms_norm(x, (20,), w, 1e-6), F.rms_norm(x64, (20,), w.double(), 1e-6).float())
    _close(bulkred.rms_norm(x, [20]), F.rms_norm(x64, (20,), eps=torch.finfo(torch.float32).eps).float())
    _close(bulkred.layer_norm(x, (20,), w, b), F.layer_norm(x64, (20,), w.double(), b.double()).float())
    r = _randn(torch, 2, 3, 20, seed=4)
    y, h = bulkred.add_rms_norm(x, r, w, 1e-5)
    _close(h, x + r)
    _close(y, F.rms_norm((x + r).double(), (20,), w.double(), 1e-5).float())
    # several normalized dimensions, read as one row
    z = _randn(torch, 3, 4, 5, seed=5)
    w2 = _randn(torch, 4, 5, seed=6)
    _close(bulkred.layer_norm(z, (4, 5), w2), F.layer_norm(z.double(), (4, 5), w2.double()).float())
    _close(bulkred.softmax(z[0, 0]), torch.softmax(z[0, 0].double(), 0).float())  # 1-D: one row


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
