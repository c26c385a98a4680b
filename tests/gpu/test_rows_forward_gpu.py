"""The forward rows of the lowerings chosen by measurement (docs/rows.md, "Speed"): rows_bulk
(the row in shared memory by cp.async.bulk, a CTA or a cluster of up to 16 per row, the
statistics pushed across the cluster with st.async and mbarrier transaction counts) and
rows_cluster's push exchange, on the GPU against torch in float64 (the tolerance of
tests/gpu/test_rows_gpu.py), their batch invariance (the same rows alone, in a batch of 7
and of 4096 give identical bits), and a row rows_bulk leaves to the others (N not whole
16-byte slices)."""

from __future__ import annotations

import pytest
from gpu import cuda_torch
from gpu.test_rows_gpu import _check, _ours

import bulkred_dialect as bulkred

pytestmark = pytest.mark.gpu

DEV = "cuda"

# (kind, dtype, N): the cells rows_bulk takes (rows_bulk.CHOSEN), each setting once, and
# rows_cluster's float32 65536
CELLS = [("softmax", "float32", 4096), ("layer_norm", "float32", 4096), ("log_softmax", "bfloat16", 16384),
         ("layer_norm", "bfloat16", 16384), ("softmax", "bfloat16", 32768), ("rms_norm", "bfloat16", 65536),
         ("layer_norm", "bfloat16", 131072), ("softmax", "bfloat16", 262144), ("log_softmax", "float32", 131072),
         ("layer_norm", "float32", 262144), ("rms_norm", "float32", 262144), ("softmax", "float32", 65536),
         ("layer_norm", "float32", 65536),
         # the persistent grids capped at the resident clusters (online, weight_shared, registers) and
         # the .minnctapersm 3 rows
         ("log_softmax", "bfloat16", 262144), ("log_softmax", "float32", 262144), ("rms_norm", "bfloat16", 262144),
         ("softmax", "float32", 262144), ("layer_norm", "bfloat16", 262144), ("layer_norm", "bfloat16", 65536),
         ("log_softmax", "float32", 65536),
         # (the sixth session's settings: fast exp, y's exp with the sum folded in, 16-bit words, the weight and
         # bias in registers, layer_norm's one pass about each thread's shift; float16 on bfloat16's rows)
         ("softmax", "bfloat16", 65536), ("softmax", "float16", 262144), ("layer_norm", "float16", 262144),
         ("rms_norm", "float16", 65536)]


def _rows(torch, m: int, n: int, dtype: str, seed: int):
    g = torch.Generator(device=DEV).manual_seed(seed)
    x = (torch.randn(m, n, device=DEV, generator=g) * 3 + 1).to(getattr(torch, dtype))
    w = torch.randn(n, device=DEV, generator=g).to(x.dtype)
    b = torch.randn(n, device=DEV, generator=g).to(x.dtype)
    return x, w, b


def _args(kind: str, w, b) -> dict:
    if kind == "rms_norm":
        return {"w": w, "eps": 1e-6}
    if kind == "layer_norm":
        return {"w": w, "b": b, "eps": 1e-5}
    return {}


@pytest.mark.parametrize("kind,dtype,n", CELLS)
def test_against_torch(kind: str, dtype: str, n: int) -> None:
    """Rows of the chosen cells (a few, and rows with a large offset: the mean far from 0)
    against torch in float64."""
    torch = cuda_torch()
    x, w, b = _rows(torch, 5, n, dtype, n)
    kw = _args(kind, w, b)
    _check(torch, kind, x, _ours(kind, x, **kw), **kw)


@pytest.mark.parametrize("kind,dtype,n", [("softmax", "bfloat16", 65536), ("layer_norm", "float32", 262144),
                                          ("rms_norm", "float32", 4096), ("log_softmax", "bfloat16", 16384),
                                          ("layer_norm", "float32", 65536), ("log_softmax", "bfloat16", 262144),
                                          ("rms_norm", "bfloat16", 262144), ("softmax", "bfloat16", 262144),
                                          ("layer_norm", "bfloat16", 262144)])
def test_batch_invariance(kind: str, dtype: str, n: int) -> None:
    """The same rows alone, as rows 1000..1006 of a batch and in the whole batch (4096
    rows; 1024 of 262144) give the same bits, and a second run the same."""
    torch = cuda_torch()
    m = 1024 if n > 65536 else 4096
    x, w, b = _rows(torch, m, n, dtype, 7)
    kw = _args(kind, w, b)
    y = _ours(kind, x, **kw)
    assert torch.equal(_ours(kind, x[1000:1007].clone(), **kw), y[1000:1007])
    for r in (0, 1003, m - 1):
        assert torch.equal(_ours(kind, x[r:r + 1].clone(), **kw)[0], y[r]), r
    assert torch.equal(_ours(kind, x, **kw), y)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_misaligned_weight_of_a_staged_weight(dtype: str) -> None:
    """rms_norm and add_rms_norm of 262144 stage the weight in shared memory by
    cp.async.bulk (rows_bulk.Setting.weight_shared: 16-byte addresses): a weight one
    element off a 16-byte boundary gives the same rows as an aligned copy of it."""
    torch = cuda_torch()
    n = 262144
    x, w, _ = _rows(torch, 3, n, dtype, 11)
    buf = torch.empty(n + 1, device=DEV, dtype=x.dtype)
    buf[1:] = w
    odd = buf[1:]
    assert odd.data_ptr() % 16
    y = _ours("rms_norm", x, w=w, eps=1e-6)
    _check(torch, "rms_norm", x, y, w=w, eps=1e-6)
    assert torch.equal(_ours("rms_norm", x, w=odd, eps=1e-6), y)
    r = torch.randn_like(x)
    h_want = x + r
    y2, h = bulkred.add_rms_norm(x, r, w, 1e-6)
    assert torch.equal(h, h_want)
    _check(torch, "rms_norm", h_want, y2, w=w, eps=1e-6)
    y3, h3 = bulkred.add_rms_norm(x, r, odd, 1e-6)
    assert torch.equal(y3, y2) and torch.equal(h3, h)


def test_cross_entropy_rows_bulk() -> None:
    """cross_entropy of bfloat16 rows of 16384 (rows_bulk, clusters of 2): the loss of
    each row against torch in float64, an ignored row 0."""
    torch = cuda_torch()
    import torch.nn.functional as F

    x, _, _ = _rows(torch, 64, 16384, "bfloat16", 3)
    t = torch.randint(0, 16384, (64,), device=DEV)
    t[5] = -100
    got = bulkred.cross_entropy(x, t, reduction="none")
    want = F.cross_entropy(x.double(), t, reduction="none")
    assert got[5].item() == 0.0
    assert (got.double() - want).abs().max().item() <= 1e-2 * max(1.0, want.abs().max().item())


def test_odd_rows_left_to_the_others() -> None:
    """A bfloat16 row of 65538 (not whole 16-byte slices per CTA) goes to another variant,
    and is right."""
    torch = cuda_torch()
    x, _, _ = _rows(torch, 3, 65538, "bfloat16", 5)
    _check(torch, "softmax", x, bulkred.softmax(x))
