"""The distributed total of docs/foreach.md on two ranks: every tensor's flat view split in
two halves, one per rank; each rank computes ``bulkred.total_norm(shards, ord,
local=True)`` on the GPU, all_reduces it (SUM; MAX for ord inf), takes the root and
scales its shards by the clip coefficient. The parent compares both ranks' totals and
the reassembled tensors with ``torch.nn.utils.clip_grad_norm_`` of the whole tensors.

Two processes (torch.multiprocessing, spawn) share one GPU over gloo (the local power
moved to the CPU); with two GPUs or more, each rank has its own and NCCL reduces on the
device. The ranks inherit the compile cache the parent warmed (tests/conftest.py's
BULKRED_CACHE_DIR), so they load the kernels rather than build them.

torch's reference runs on float32 copies of the tensors (exact for float16 and
bfloat16): its clip_grad_norm_ would round each float16/bfloat16 tensor's norm to that
dtype, bulkred's total is float32 throughout."""

from __future__ import annotations

import math
import os
import time

import pytest

import bulkred_dialect as bulkred

pytestmark = pytest.mark.gpu

INF = math.inf
ORDS = (2.0, 1.0, 3.0, INF)
NO_CLIP = 1.0  # this ord's max_norm is above the total: the shards stay as they were
SHAPES = [((1000,), "float32"), ((33, 17), "float16"), ((7,), "float32"), ((0,), "float32"), ((4097,), "bfloat16"), ((1,), "float32"), ((64, 64), "float32"), ((3, 5, 9), "bfloat16")]
TIMEOUT_S = 150


def _setup():
    try:
        import torch
        import torch.distributed as dist
    except Exception as e:  # noqa: BLE001 - any failure to import torch skips
        pytest.skip(f"torch is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    if torch.cuda.device_count() >= 2 and dist.is_nccl_available():
        return torch, "nccl"
    if not dist.is_gloo_available():
        pytest.skip("torch.distributed has no gloo backend (and fewer than two GPUs for NCCL)")
    return torch, "gloo"


def _half(t, rank: int):
    flat = t.reshape(-1)
    cut = (flat.numel() + 1) // 2
    return flat[:cut] if rank == 0 else flat[cut:]


def _rank_main(rank: int, world: int, backend: str, init_file: str, data_path: str, out_dir: str) -> None:
    """One rank: its halves of every tensor on its GPU, the local power, all_reduce, the
    root, the clip; the totals and clipped shards saved for the parent."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # one host: the loopback interface
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    import torch
    import torch.distributed as dist

    import bulkred_dialect as bulkred

    dev = torch.device("cuda", rank if backend == "nccl" else 0)
    torch.cuda.set_device(dev)
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        data = torch.load(data_path)
        results = {}
        for p in ORDS:
            shards = [_half(t, rank).to(dev).clone() for t in data["tensors"]]
            power = bulkred.total_norm(shards, p, local=True)
            assert power.shape == () and power.dtype == torch.float32 and power.device == dev
            if backend == "gloo":
                power = power.cpu()
            dist.all_reduce(power, op=dist.ReduceOp.MAX if p == INF else dist.ReduceOp.SUM)
            total = power if p == INF else power ** (1.0 / p)
            coef = torch.clamp(data["max_norm"][p] / (total + 1e-6), max=1.0).to(dev)
            for s in shards:
                s.mul_(coef)
            results[p] = {"power": power.cpu(), "total": total.cpu(), "shards": [s.cpu() for s in shards]}
        torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_distributed_total_and_clip(tmp_path):
    """Two ranks, half of every tensor each (an empty tensor, a one-element one whose
    second half is empty): the same total on both ranks, equal to clip_grad_norm_'s of
    the whole tensors and to the float64 reference, and the clipped halves reassembled
    equal to torch's clipped tensors (bit-identical where no clipping happens)."""
    torch, backend = _setup()
    import torch.multiprocessing as mp

    g = torch.Generator().manual_seed(71)
    tensors = [(torch.randn(*shape, generator=g) * (1 + i)).to(getattr(torch, dtype)) for i, (shape, dtype) in enumerate(SHAPES)]
    totals64 = {}
    for p in ORDS:
        flat = torch.cat([t.reshape(-1).double() for t in tensors]).abs()
        totals64[p] = float(flat.max()) if p == INF else float((flat**p).sum() ** (1.0 / p))
    max_norm = {p: totals64[p] * (3.0 if p == NO_CLIP else 0.4) for p in ORDS}

    # warm the compile cache the ranks inherit
    on_gpu = [t.cuda() for t in tensors]
    for p in ORDS:
        bulkred.total_norm(on_gpu, p, local=True)
    torch.cuda.synchronize()

    data_path = tmp_path / "data.pt"
    torch.save({"tensors": tensors, "max_norm": max_norm}, data_path)
    args = (2, backend, str(tmp_path / "store"), str(data_path), str(tmp_path))
    ctx = mp.spawn(_rank_main, args=args, nprocs=2, join=False)
    deadline = time.monotonic() + TIMEOUT_S
    while not ctx.join(timeout=5):
        if time.monotonic() > deadline:
            for proc in ctx.processes:
                proc.kill()
            pytest.fail(f"the two ranks ({backend}) did not finish in {TIMEOUT_S} s")
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt") for r in (0, 1))

    for p in ORDS:
        a, b = r0[p], r1[p]
        assert torch.equal(a["total"], b["total"]), (backend, p, a["total"], b["total"])
        params = {}  # torch's inf norm refuses an empty tensor: leave it out, it adds nothing
        for k, t in enumerate(tensors):
            if t.numel():
                params[k] = torch.nn.Parameter(torch.empty(t.shape, device="cuda"))
                params[k].grad = t.to("cuda", torch.float32, copy=True)
        want = torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm[p], p).cpu()
        torch.testing.assert_close(a["total"], want, rtol=2e-5, atol=0, msg=lambda m, p=p: f"{backend}, ord {p}: total vs torch: {m}")
        assert abs(float(a["total"]) - totals64[p]) <= 1e-4 * totals64[p], (backend, p, float(a["total"]), totals64[p])
        for k, t in enumerate(tensors):
            whole = torch.cat([a["shards"][k], b["shards"][k]]).reshape(t.shape)
            assert whole.dtype == t.dtype
            if p == NO_CLIP or not t.numel():
                assert torch.equal(whole, t), f"{backend}, ord {p}: tensor {k} changed without clipping"
                continue
            ref = params[k].grad.cpu().to(t.dtype)
            eps = torch.finfo(t.dtype).eps
            torch.testing.assert_close(
                whole.float(), ref.float(), rtol=eps + 4e-5, atol=1e-6, msg=lambda m, k=k, p=p: f"{backend}, ord {p}: tensor {k}: {m}"
            )
