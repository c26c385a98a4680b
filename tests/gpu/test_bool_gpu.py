"""bool tensors on the GPU (issue 16 §1, "i1 (bool)", and the kinds any and all): the API
on torch bool tensors against torch.any / torch.all / torch.sum, whole, by row, by column,
over a middle axis and over axes (0, 2), at odd shapes and sizes that take several CTAs;
numpy bool arrays (copied in and out); bool stored as one byte, 0 or 1, in the result.
tests/test_bool.py checks the same lowerings on the CPU interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import bulkred_dialect as bulkred
from gpu import cuda_torch

pytestmark = pytest.mark.gpu


_torch = cuda_torch  # torch with a CUDA device, else the test skips (tests/gpu/__init__.py)


CASES = [
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


def _sparse(torch, shape, kind, seed):
    """Mostly false (true for all) with a few flipped elements: some slices all false
    (all true), some not."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.rand(shape, device="cuda", generator=g) < 3.0 / max(1, shape[-1] * (shape[0] if len(shape) > 2 else 1))
    return ~x if kind == "all" else x


@pytest.mark.parametrize("kind", ["any", "all"])
@pytest.mark.parametrize(("shape", "axis"), CASES, ids=lambda v: str(v).replace(" ", ""))
def test_any_all_match_torch(kind, shape, axis):
    torch = _torch()
    x = _sparse(torch, shape, kind, seed=len(shape) * 1000 + shape[0])
    got = getattr(bulkred, kind)(x, axis=axis)
    ref = getattr(torch, kind)
    want = ref(x) if axis is None else ref(x, dim=axis)
    assert got.dtype == torch.bool and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    assert torch.equal(got, want)
    assert int(got.view(torch.uint8).max()) <= 1  # one byte holding 0 or 1


@pytest.mark.parametrize("kind", ["any", "all"])
def test_all_false_and_all_true(kind):
    torch = _torch()
    for value in (False, True):
        x = torch.full((129, 1025), value, dtype=torch.bool, device="cuda")
        for axis in (None, 0, 1):
            ref = getattr(torch, kind)
            want = ref(x) if axis is None else ref(x, dim=axis)
            assert torch.equal(getattr(bulkred, kind)(x, axis=axis), want)


@pytest.mark.parametrize(("shape", "axis"), CASES, ids=lambda v: str(v).replace(" ", ""))
def test_sum_of_bool_is_an_int64_count(shape, axis):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.rand(shape, device="cuda", generator=g) < 0.5
    got = bulkred.sum(x, axis=axis)
    want = torch.sum(x) if axis is None else torch.sum(x, dim=axis)
    assert got.dtype == torch.int64 == want.dtype and torch.equal(got, want)


def test_keepdims_out_and_numpy():
    torch = _torch()
    x = torch.rand((33, 65), device="cuda") < 0.02
    got = bulkred.any(x, axis=1, keepdims=True)
    assert torch.equal(got, torch.any(x, dim=1, keepdim=True))
    out = torch.empty(65, dtype=torch.bool, device="cuda")
    assert bulkred.all(~x, axis=0, out=out) is out and torch.equal(out, torch.all(~x, dim=0))
    xn = x.cpu().numpy()
    got_np = bulkred.any(xn, axis=0)
    assert isinstance(got_np, np.ndarray) and got_np.dtype == np.bool_
    np.testing.assert_array_equal(got_np, np.any(xn, axis=0))
    assert bulkred.sum(xn).dtype == np.int64 and int(bulkred.sum(xn)) == int(xn.sum())


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "int8", "uint8", "int64"])
@pytest.mark.parametrize("shape, dim", [((1 << 20,), None), ((64, 4099), 1), ((4099, 64), 0), ((8, 100, 33), (0, 2))])
def test_any_all_of_other_dtypes_match_torch(dtype, shape, dim):
    """any/all of a non-bool tensor reduce x != 0 in place (the prologue [nonzero]), as
    torch.any/all do, NaN counting as nonzero; a slice of a row of zeros checks the
    all-false and all-true edges."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(5)
    x = (torch.randint(0, 3, shape, device="cuda", generator=g) * (torch.rand(shape, device="cuda", generator=g) < 0.7))
    x = x.to(getattr(torch, dtype))
    if x.is_floating_point():
        x.view(-1)[7] = float("nan")
    x.view(-1)[: shape[-1]] = 0
    for fn in ("any", "all"):
        got = getattr(bulkred, fn)(x, axis=dim)
        want = getattr(torch, fn)(x) if dim is None else (
            getattr(torch, fn)(x, dim=dim) if isinstance(dim, int) else getattr(torch, fn)(getattr(torch, fn)(x, dim=2), dim=0)
        )
        # torch's rule: bool, but uint8 for a uint8 x (results follow the input's library)
        assert got.dtype == want.dtype == (torch.uint8 if dtype == "uint8" else torch.bool), (fn, dtype, shape, dim)
        assert torch.equal(got.reshape(-1), want.reshape(-1)), (fn, dtype, shape, dim)
