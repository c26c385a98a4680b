"""Row functions on tensors of more than 2^31 elements (issue 30: "More than 2^31 elements
works"): x bfloat16 [524,289 x 4,096] (2^31 + 4,096 elements, 4 GiB), every offset past
int32. The rows on both sides of element 2^31, the first and the last are checked
against torch in float64, with the same tolerance as tests/gpu/test_rows_gpu.py (torch's own
error plus one unit in the last place of bfloat16); cross_entropy's per-row losses
(bfloat16, as torch's) of those rows likewise, and softmax's backward on the last rows.

Needs about 17 GiB of GPU memory; skips with the reason when the GPU has less."""

from __future__ import annotations

import pytest

import bulkred_dialect as bulkred
from gpu import cuda_torch

pytestmark = pytest.mark.gpu


M, N = (1 << 31) // 4096 + 1, 4096
PAST = (1 << 31) // N  # the first row at or past element 2^31
ROWS = [0, PAST - 2, PAST - 1, PAST, M - 1]


@pytest.fixture(scope="module")
def big():
    torch = cuda_torch()
    free, _ = torch.cuda.mem_get_info()
    if free < 17 << 30:
        pytest.skip(f"needs about 17 GiB of GPU memory, {free >> 30} GiB free")
    g = torch.Generator(device="cuda").manual_seed(311)
    x = torch.empty((M, N), dtype=torch.bfloat16, device="cuda")
    for i in range(0, M, 1 << 16):  # in slices: randn of 4 GiB at once needs float32 scratch
        x[i:i + (1 << 16)] = (torch.randn((min(1 << 16, M - i), N), generator=g, device="cuda") * 3).to(torch.bfloat16)
    yield x
    del x
    torch.cuda.empty_cache()


def _bound(torch, ours, theirs, ref):
    err = (ours.double() - ref).abs().max().item()
    own = (theirs.double() - ref).abs().max().item()
    ulp = max(1.0, ref.abs().max().item()) * 2.0**-7
    return err, own + ulp


@pytest.mark.parametrize("kind", ["softmax", "rms_norm"])
def test_rows_past_2_31_elements(kind, big):
    torch = cuda_torch()
    import torch.nn.functional as F

    assert big.numel() > 2**31
    if kind == "softmax":
        y = bulkred.softmax(big)
    else:
        y = bulkred.rms_norm(big, (N,), None, 1e-6)
    torch.cuda.synchronize()
    xs = big[ROWS]
    if kind == "softmax":
        ref, theirs = torch.softmax(xs.double(), -1), torch.softmax(xs, -1)
    else:
        ref, theirs = F.rms_norm(xs.double(), (N,), None, 1e-6), F.rms_norm(xs, (N,), None, 1e-6)
    err, bound = _bound(torch, y[ROWS], theirs, ref)
    assert err <= bound, (kind, err, bound)
    del y


def test_cross_entropy_past_2_31_elements(big):
    torch = cuda_torch()
    import torch.nn.functional as F

    g = torch.Generator(device="cuda").manual_seed(312)
    t = torch.randint(0, N, (M,), generator=g, device="cuda")
    loss = bulkred.cross_entropy(big, t, reduction="none")
    xs = big[ROWS]
    ref = F.cross_entropy(xs.double(), t[ROWS], reduction="none")
    theirs = F.cross_entropy(xs, t[ROWS], reduction="none")  # bfloat16, as bulkred's
    assert loss.dtype == torch.bfloat16 and loss.shape == (M,)
    err, bound = _bound(torch, loss[ROWS], theirs, ref)
    assert err <= bound, (err, bound)


def test_softmax_backward_past_2_31_elements(big):
    torch = cuda_torch()

    x = big.detach().requires_grad_(True)
    y = bulkred.softmax(x)
    g = torch.Generator(device="cuda").manual_seed(313)
    dy = torch.empty_like(y)
    for i in range(0, M, 1 << 16):
        dy[i:i + (1 << 16)] = torch.randn((min(1 << 16, M - i), N), generator=g, device="cuda").to(torch.bfloat16)
    (dx,) = torch.autograd.grad(y, x, dy)
    rows = ROWS[-3:]
    xd = big[rows].double().requires_grad_(True)
    (ref,) = torch.autograd.grad(torch.softmax(xd, -1), xd, dy[rows].double())
    xt = big[rows].detach().requires_grad_(True)
    (theirs,) = torch.autograd.grad(torch.softmax(xt, -1), xt, dy[rows])
    err, bound = _bound(torch, dx[rows], theirs, ref)
    assert err <= bound, (err, bound)
