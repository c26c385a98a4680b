"""bulkred.align on the GPU: a contiguous torch view at a storage offset that is not a
multiple of the kernel's vector width (x = base[3:12] of a (13, 13, 15, 11, 1) tensor:
12,870 bytes into a float16 storage, 25,740 into a float32 one) is read in place by the
API through grid_gather's kernel (scalar loads), and refused before any launch by a
vector kernel called directly (SignatureError), on the first call and through the
recorded short paths; the CUDA context stays usable. Before bulkred.align, grid_full's ld.global.nc.v4 faulted
on it and every later call in the process failed (random reductions, seed 16, #117)."""

from __future__ import annotations

import numpy as np
import pytest

from bulkred_dialect.backend_ptx import runtime
from gpu import cuda_torch

pytestmark = pytest.mark.gpu

SHAPE = (13, 13, 15, 11, 1)
ALIGN = {"float16": 8, "float32": 16}  # ld.global.nc.v4.b16 / .f32


_torch = cuda_torch  # torch with a CUDA device, else the test skips (tests/gpu/__init__.py)


def _view(torch, dtype, rng):
    base = torch.tensor(rng.standard_normal(SHAPE).astype(dtype), device="cuda")
    x = base[3:12]
    assert x.is_contiguous() and x.data_ptr() % ALIGN[dtype] != 0
    return x


def _close(got, want, dtype):
    tol = 2e-2 if dtype == "float16" else 1e-4
    assert abs(float(got) - want) <= tol * max(1.0, abs(want)), (float(got), want)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_api_reads_a_misaligned_view_in_place(dtype, rng):
    """A contiguous view off its kernel's vector-load alignment goes to grid_gather's
    kernel (scalar loads), read in place: right on the first call, through the recorded
    short paths of an aligned call of the same shape, and with out=; the context lives."""
    torch = _torch()
    import bulkred_dialect as bulkred

    x = _view(torch, dtype, rng)
    want = float(x.double().sum().cpu())
    assert x.data_ptr() % ALIGN[dtype]
    assert bulkred.sum(x, explain=True).endswith("chosen: grid_full")  # the plan of an aligned x
    _close(bulkred.sum(x), want, dtype)  # the first call: every check, then grid_gather
    for _ in range(3):  # an aligned call recorded: the function's and the API cache's short paths
        _close(bulkred.sum(x.clone()), want, dtype)
        _close(bulkred.sum(x), want, dtype)
        out = torch.empty((), dtype=getattr(torch, dtype), device="cuda")
        assert bulkred.sum(x.clone(), out=out) is out
        assert bulkred.sum(x, out=out) is out
        _close(out, want, dtype)
    _close(bulkred.max(x), float(x.max().cpu()), dtype)
    _close(bulkred.vector_norm(x), float(x.double().norm().cpu()), dtype)  # a fused reduction too
    torch.cuda.synchronize()  # the context is alive
    _close(bulkred.sum(x.clone()), want, dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_kernel_refuses_a_misaligned_view_and_the_context_survives(dtype, rng):
    torch = _torch()
    from bulkred_dialect.api import compile_reduction

    x = _view(torch, dtype, rng).view(-1)  # the kernel's own shape: (N,)
    want = float(x.double().sum().cpu())
    k = compile_reduction("sum", tuple(x.shape), dtype, None, runtime.current_arch()).kernel("bulkred_sum")
    assert k.signature.align == (ALIGN[dtype], 1)
    out = torch.empty(1, dtype=getattr(torch, dtype), device="cuda")
    message = (
        rf"^kernel 'bulkred_sum' param 'x': its address is {x.data_ptr() % ALIGN[dtype]} bytes past "
        rf"an? {ALIGN[dtype]}-byte boundary \(a view at a storage offset\); the kernel reads it with "
        rf"{ALIGN[dtype]}-byte vector loads"
    )
    with pytest.raises(runtime.SignatureError, match=message):
        k(x, out)  # the first call: every check
    for _ in range(3):  # then the recorded short path
        k(x.clone(), out)
        _close(out[0], want, dtype)
        with pytest.raises(runtime.SignatureError, match=message):
            k(x, out)
    assert k.recorded
    launcher = k.bind([x.clone(), out], new=[(1,)])  # the reduction API's launcher of such calls
    assert launcher(x, None) is None  # refused: the API then takes grid_gather's kernel
    torch.cuda.synchronize()
    _close(launcher(x.clone(), None)[0], want, dtype)


def test_bulk_reduce_destination_misaligned_takes_grid_gather(rng):
    """grid_split_bulk adds its tiles into out with cp.reduce.async.bulk: 16 bytes. An
    out= 4 bytes past a 16-byte boundary takes grid_gather's kernel (scalar stores)."""
    torch = _torch()
    import bulkred_dialect as bulkred

    a = rng.standard_normal((512, 4096)).astype(np.float32)  # 8 MiB: grid_split_bulk's size
    x = torch.tensor(a, device="cuda")
    assert bulkred.sum(x, axis=0, explain=True).endswith("chosen: grid_split_bulk")
    big = torch.zeros(4097, device="cuda")
    got = bulkred.sum(x, axis=0, out=big[1:])
    assert got.data_ptr() % 16 == 4
    assert np.allclose(got.cpu().numpy(), a.sum(axis=0), rtol=1e-4, atol=1e-4)
    got = bulkred.sum(x, axis=0, out=big[:4096])
    assert np.allclose(got.cpu().numpy(), a.sum(axis=0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_axes02_views_grid_runs_aligned_and_not(dtype, rng):
    """Axes (0, 2) of [64, 16, 256] (grid_runs' vector rows), of views of it: a slice
    whose runs stay aligned (x[..., 4:252]: 16-byte aligned for float32), one whose runs
    are not (x[..., 2:254]: the API takes grid_gather) and an odd run (x[..., 1:]: vectors
    of one element); each against torch, the same in every call."""
    torch = _torch()
    import bulkred_dialect as bulkred

    t = getattr(torch, dtype)
    if dtype == "int8":
        base = torch.randint(-100, 100, (64, 16, 256), dtype=t, device="cuda")
    else:
        base = torch.randn(64, 16, 256, device="cuda").to(t)
    for name, x in (("dense", base), ("aligned", base[..., 4:252]), ("misaligned", base[..., 2:254]), ("odd", base[..., 1:])):
        table = bulkred.sum(x, axis=(0, 2), explain=True)
        assert table.endswith("chosen: grid_runs"), (name, table.splitlines()[-1])
        want = x.double().sum((0, 2)) if dtype != "int8" else x.long().sum((0, 2))
        for _ in range(2):
            got = bulkred.sum(x, axis=(0, 2))
            if dtype == "int8":
                assert got.dtype == torch.int64 and torch.equal(got, want), name
            else:
                tol = 2e-2 if dtype == "float16" else 1e-4
                err = (got.double() - want).abs().max().item()
                assert err <= tol * max(1.0, want.abs().max().item()), (name, err)
        if dtype == "float32":  # fused states through grid_runs: Welford's, the norm's prologue
            v, m = bulkred.var_mean(x, axis=(0, 2), correction=1)
            tv, tm = torch.var_mean(x.double(), dim=(0, 2), correction=1)
            assert torch.allclose(v.double(), tv, rtol=1e-4) and torch.allclose(m.double(), tm, rtol=1e-4, atol=1e-6), name
            n = bulkred.vector_norm(x, axis=(0, 2))
            assert torch.allclose(n.double(), torch.linalg.vector_norm(x.double(), dim=(0, 2)), rtol=1e-4), name
