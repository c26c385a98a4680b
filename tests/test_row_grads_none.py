"""The backward of the norms without a weight (and with or without a bias): rms_norm,
add_rms_norm and layer_norm, each backward kernel run on the CPU interpreter through the
real call path (tests/test_row_functions.py's ``interpreted``), against torch's own
function in float64, in the variant the dispatch picks for a short row (registers) and
in rows_stream (the row streamed: the variant of N > 16384 in 16-bit types, N > 65536 in
float32), whose lowering built no kernel without dweight and dbias ("'NoneType' object is
not iterable": the GPU's random rows, seed 301131, draws 19, 139, 175, 243 and 297)."""

from __future__ import annotations

import pytest
from test_row_functions import InterpretedKernel, _close, _grads, _randn, interpreted  # noqa: F401 - the fixture

import bulkred_dialect as bulkred

N = 20
"""A row of 20 elements, read from rows 21 apart (padded: x's row stride is not N)."""

CASES = [("rms_norm", False), ("add_rms_norm", False), ("layer_norm", False), ("layer_norm", True)]
"""(function, whether it has a bias): none has a weight."""


def _functions(torch, name, bias, variant):
    """bulkred's function (``variant`` forced, or the dispatch's) and torch's in float64,
    each of x and the other tensors; and the number of those."""
    F = torch.nn.functional
    if name == "rms_norm":
        return (lambda x: bulkred.rms_norm(x, (N,), None, 1e-6, variant=variant),
                lambda x: F.rms_norm(x.double(), (N,), None, 1e-6), 0)
    if name == "add_rms_norm":
        return (lambda x, r: bulkred.add_rms_norm(x, r, None, 1e-6, variant=variant),
                lambda x, r: (F.rms_norm((x + r).double(), (N,), None, 1e-6), x + r), 1)
    if not bias:
        return (lambda x: bulkred.layer_norm(x, (N,), None, None, variant=variant),
                lambda x: F.layer_norm(x.double(), (N,), None, None), 0)
    return (lambda x, b: bulkred.layer_norm(x, (N,), None, b, variant=variant),
            lambda x, b: F.layer_norm(x.double(), (N,), None, b.double()), 1)


@pytest.mark.parametrize("variant,dtype", [(None, "float32"), ("rows_stream", "float32"), ("rows_stream", "float16")])
@pytest.mark.parametrize("name,bias", CASES)
def test_backward_without_a_weight(interpreted, name, bias, variant, dtype):
    """dx (and d residual, d bias) of a norm without a weight, against torch's: the
    backward kernel built without dweight (and without dbias when there is no bias)."""
    torch = interpreted
    dt = getattr(torch, dtype)
    mine, theirs, others = _functions(torch, name, bias, variant)
    x = _randn(torch, 2, 3, N + 1, seed=41).to(dt)[..., :N]
    other = _randn(torch, *((2, 3, N) if name == "add_rms_norm" else (N,)), seed=42).to(dt)
    tensors = [x, other][:1 + others]
    got, want = _grads(torch, mine, tensors), _grads(torch, theirs, tensors)
    assert len(got) == len(tensors)
    for g, w in zip(got, want, strict=True):
        _close(g, w, 1e-4 if dtype == "float32" else 2e-2)
    kind = "layer_norm_backward" if name == "layer_norm" else "rms_norm_backward"
    (built,) = [s for k, _, n, _, s in InterpretedKernel.built if k == kind and n == N]
    assert built.get("weight") is None and built.get("dweight") is None
    assert (built.get("dbias") is not None) == bias and built.get("variant") == variant
