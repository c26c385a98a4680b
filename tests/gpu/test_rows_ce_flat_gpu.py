"""cross_entropy's backward as one flat stream (rows_ce_flat.CE_FLAT) forced on, on the GPU:
dx against torch's autograd in float64 (from the lse stored as float32; ignore_index rows 0),
bit for bit the row kernel's (CE_FLAT off: the same operations an element, TARGET_APART's
too), and the first 7 rows called alone giving the same bits (no dependence on M)."""

from __future__ import annotations

import pytest

from gpu import cuda_torch

pytestmark = pytest.mark.gpu

DEV = "cuda"


def _kernel(n: int, dtype: str, smoothing: float, **settings):
    """The kernel built (not cached) with rows_ce_flat's ``settings`` patched."""
    from unittest import mock

    from bulkred_dialect.backend_ptx.runtime import compile_tile_module
    from bulkred_dialect.passes.variants import rows_ce_flat
    from bulkred_dialect.row_kernels import module

    with mock.patch.multiple(rows_ce_flat, **settings):
        built = module("cross_entropy_backward", None, n, dtype, ignore_index=-100, label_smoothing=smoothing or None)
        return compile_tile_module(built, None, cache=False).kernel("rows")


@pytest.mark.parametrize("m,n,dtype,smoothing,apart", [
    (300, 1024, "bfloat16", 0.0, False), (33, 4096, "float32", 0.1, True), (9, 32000, "bfloat16", 0.1, False),
    (5, 65536, "float32", 0.0, False), (3, 262144, "bfloat16", 0.0, True), (41, 4104, "float16", 0.1, False)])
def test_flat_against_float64_and_the_row_kernel(m, n, dtype, smoothing, apart, rng):
    import torch.nn.functional as F

    torch = cuda_torch()
    g = torch.Generator(device=DEV).manual_seed(rng.seed % 2**31)
    x = (torch.randn(m, n, device=DEV, generator=g) * 4).to(getattr(torch, dtype))
    t = torch.randint(0, n, (m,), device=DEV, generator=g)
    t[::3] = -100
    dl = torch.randn(m, device=DEV, generator=g)
    lse = torch.logsumexp(x.double(), -1).float()
    flat = _kernel(n, dtype, smoothing, CE_FLAT=True, TARGET_APART=apart)
    dx = torch.empty_like(x)
    flat(x, dx, t, dl, lse)
    xr = x.double().requires_grad_()
    F.cross_entropy(xr, t, reduction="none", label_smoothing=smoothing).backward(dl.double())
    want = xr.grad
    tol = (2e-5 if dtype == "float32" else 2.0**-7) * max(1.0, want.abs().max().item())
    assert (dx.double() - want).abs().max().item() <= tol
    assert (dx[::3] == 0).all()
    rows = torch.empty_like(x)
    _kernel(n, dtype, smoothing, CE_FLAT=False)(x, rows, t, dl, lse)
    assert torch.equal(dx, rows)
    part = torch.empty_like(x[:7])
    flat(x[:7].clone(), part, t[:7].clone(), dl[:7].clone(), lse[:7].clone())
    assert torch.equal(part, dx[:7])
