"""Strided views on the GPU (issue 16): transposed, stepped-slice, offset, permuted and
broadcast torch views reduced in place through the API (a module built for the view's
strides, grid_gather's strided form), against torch; the recorded short paths take the
same view again and hand another layout of the same shape to a module of its own."""

from __future__ import annotations

import numpy as np
import pytest

import bulkred_dialect as bulkred
from gpu import cuda_torch

pytestmark = pytest.mark.gpu


_torch = cuda_torch  # torch with a CUDA device, else the test skips (tests/gpu/__init__.py)


def _close(got, want):
    torch = _torch()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-3)


def test_transpose_and_stepped_slice():
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(16)
    x = torch.randn(300, 200, device="cuda", generator=g)
    assert not x.t().is_contiguous()
    _close(bulkred.sum(x.t(), axis=0), x.t().sum(0))
    _close(bulkred.sum(x.t(), axis=1), x.t().sum(1))
    _close(bulkred.sum(x[:, ::2], axis=1), x[:, ::2].sum(1))
    _close(bulkred.max(x[5:250, 3::3], axis=0), x[5:250, 3::3].amax(0))  # a storage offset and a step
    _close(bulkred.sum(x.t()), x.sum())
    assert torch.equal(bulkred.sum(x.t().int(), axis=0), x.t().int().sum(0))
    # again: the recorded short path (same view), then the same shape dense and transposed
    _close(bulkred.sum(x.t(), axis=0), x.t().sum(0))
    y = torch.randn(200, 300, device="cuda", generator=g)
    _close(bulkred.sum(y, axis=0), y.sum(0))
    _close(bulkred.sum(x.t(), axis=0), x.t().sum(0))


@pytest.mark.parametrize("seed", range(4))
def test_permuted_3d_views_over_random_axes(seed):
    torch = _torch()
    rng = np.random.default_rng(seed)
    g = torch.Generator(device="cuda").manual_seed(seed)
    base = torch.randn(*(int(d) for d in rng.integers(2, 40, 3)), device="cuda", generator=g)
    x = base.permute(*(int(a) for a in rng.permutation(3)))
    for _ in range(4):
        k = int(rng.integers(1, 4))
        axes = tuple(sorted(int(a) for a in rng.choice(3, size=k, replace=False)))
        _close(bulkred.sum(x, axis=axes), x.sum(dim=axes))
        _close(bulkred.min(x, axis=axes), x.amin(dim=axes))


def test_broadcast_view():
    torch = _torch()
    row = torch.arange(7, dtype=torch.float32, device="cuda")
    x = row.expand(5, 7)  # stride 0
    _close(bulkred.sum(x, axis=0), x.sum(0))
    _close(bulkred.sum(x, axis=1), x.sum(1))


def test_negative_strides_refused_in_one_line():
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)[::-1]
    with pytest.raises(bulkred.ReductionError, match=r"negative strides .* \(a flipped view\)"):
        bulkred.sum(x)
