"""The sharded gradient norm and clip on two GPUs through NCCL (issue 32; docs/foreach.md,
"Distributed: a total over shards"), against torch's ``clip_grad_norm_`` on DTensor shards,
in one run.

Two processes (torch.multiprocessing, spawn), one per GPU, NCCL (``NCCL_NVLS_ENABLE=0``
is kept, and set when absent: NVLink multicast off), ``MASTER_ADDR=localhost`` and a free
port. The gradient list is Llama-3-8B-shaped, bfloat16: the embedding [128256, 4096];
``--scale`` of the 32 layers (default all; or ``--layers N``) of q [4096, 4096], k and v [1024, 4096], o [4096,
4096], gate and up [14336, 4096], down [4096, 14336] and two RMSNorm weights [4096]; the
final norm [4096]; the LM head [128256, 4096] (291 tensors, 16.06 GB with 32 layers).
Each rank holds the dim-0 shard of every tensor that torch's ``Shard(0)`` gives it (the
rows of ``torch.chunk``: the first rank takes ceil(n / 2)), filled with fresh
``torch.randn`` (never zeros).

The bulkred step, on each rank::

    power = bulkred.total_norm(shards, local=True)   # the local sum of squares, one launch
    dist.all_reduce(power)                           # one float32 scalar, on the device
    total = power.sqrt()                             # the root, on the device
    clip(shards, max_norm, total)                    # bulkred.clip_grad_norm_'s scaling kernel

``clip`` is the kernel ``bulkred.clip_grad_norm_`` launches after its norm
(``bulkred.scale_list`` with ``clip_by``, built by ``foreach.scale_list_module(True)``):
it computes torch's coefficient ``min(max_norm / (total + 1e-6), 1)`` on the device from
the total and scales every shard in place (nothing written when the coefficient is 1).

torch's step: ``torch.nn.utils.clip_grad_norm_`` of ``nn.Parameter`` DTensors (a
``DeviceMesh`` of the two GPUs, ``Shard(0)``) whose ``.grad`` are DTensors over the same
local shards (a copy of them: each library clips its own). Where that raises, torch's own
local route is used instead (``torch._foreach_norm`` of the local shards, the stack's
norm, ``all_reduce`` of its square, the root, ``clip_grads_with_norm_``'s formula and
``_foreach_mul_``), and the report says so.

Checks (once, before the timing; any failure makes the exit status 1):

* **norms**: bulkred's total against the float64 total (each rank's float64 sum of
  squares, all_reduced), within 1e-4 relative (the list norms' bound, docs/foreach.md,
  "Rounding"), and against torch's DTensor ``clip_grad_norm_`` on float32 copies of the
  same shards, within 2e-4 (torch's own distance from float64 is reported); torch's DTensor clip on the bfloat16 shards (the timed one) rounds each
  tensor's norm to bfloat16, so its total is held to 2^-6.
* **clipped tensors**: the check's ``max_norm`` is 0.4 of the total (every element
  scaled by about 0.4). bulkred's clipped bfloat16 shards against torch's clipped float32
  copies: max relative difference within 2^-8 (bfloat16's rounding) + 1e-4 (the
  coefficient's); against torch's clipped bfloat16 shards (its coefficient from its
  bfloat16 total): within 2^-6.
* **same bits on both GPUs**: both ranks hold the SAME full list (``--bits-layers``
  layers, default 4, plus the embedding, the final norm and the LM head), drawn from a
  fixed seed on GPU 0 and broadcast to GPU 1 (the inputs' checksums compared first),
  compute ``bulkred.total_norm``, ``total_norm(local=True)`` and ``foreach_norm`` of it
  three times, and rank 0 compares the float32 bits of both GPUs' results
  (``all_gather``). The report says whether the list
  kernel's partition depends on the SM count: its grid is ``list_grid(target)``
  (passes/variants/grid_list.py), 4 CTAs per multiprocessor of the *target's* flagship
  part (``kernel.SM_COUNT``), not the device's count.

Timing (after ``--warmup`` steps): ``--steps`` steps (at least 20) of each library, each
step started with the GPU idle and the ranks lined up (``synchronize`` and a barrier),
CUDA events around each stage on the current stream: bulkred's local launch (the call,
host included), the all_reduce (its time includes any wait for the other rank's
launch), the root, the scaling, the whole step; torch's whole step (its host time, the
DTensor dispatch of every tensor, included: the GPU is idle when a step starts). Medians, per rank, and the slower rank's median in the table. The timed steps use
``max_norm = -1``: the coefficient is about -1 on every step (``-1 / (total + 1e-6)``,
the total staying near 1 after the first), so both libraries read the list twice and
write it once per step, and the data keep their magnitude (bfloat16's x * -0.999999 is
-x). GB/s of the local norm: the shard bytes read over the local launch's median, against
the HBM peak of the GPU (H200: 4.8 TB/s). Optional (``--budget-s`` permitting): the step
with a ``max_norm`` above the total (no clipping: bulkred writes nothing, torch multiplies
by 1).

Output: a Markdown report on stdout (the GPUs, torch, NCCL and CUDA versions, the
checks, the times, the ratio torch / bulkred) and ``foreach_dist.{md,json}`` under
``--out`` (default ``$OUT``, else /tmp/out).

Usage (on a machine with two GPUs; ``bash tools/gpu.sh bench:foreach_dist``)::

    python3 benchmarks/foreach_dist.py                     # everything, 32 layers (~1-2 min)
    python3 benchmarks/foreach_dist.py --scale 0.125 --steps 20     # 4 layers
    python3 benchmarks/foreach_dist.py --dry-run           # the shards and the plan; no GPU, no torch
    python3 benchmarks/foreach_dist.py --cpu --layers 1 --scale-rows 64   # the script's own check:
        # two gloo ranks on the CPU, bulkred's calls replaced by torch stand-ins (numbers mean nothing)
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import socket
import statistics
import sys
import time
import traceback
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))

WORLD = 2
H, KV, FF, VOCAB, LAYERS = 4096, 1024, 14336, 128256, 32
ITEMSIZE = {"bfloat16": 2, "float32": 4}
NORM_RTOL = 1e-4  # a float32 list norm against float64 (docs/foreach.md, "Rounding")
BF16_ROUND = 2.0**-8  # bfloat16's relative rounding (8 significant bits)
BF16_RTOL = 2.0**-6  # torch's total from per-tensor norms rounded to bfloat16, and what it clips
CHECK_FRACTION = 0.4  # the check's max_norm, a fraction of the total: every element scaled by about 0.4
TIMED_MAX_NORM = -1.0  # the timed steps' max_norm: a coefficient of about -1 every step
SEED, BITS_SEED = 32, 3232
HBM_PEAK = {"H200": 4.8e12, "H100": 3.35e12, "B200": 8.0e12}  # bytes/s, by a word of the GPU's name
RANK_SLACK_S = 120  # past --budget-s, for the start of the ranks (imports, NCCL) before the parent stops them


# region Shapes and the plan (no torch)


def llama_shapes(layers: int = LAYERS, scale_rows: int = 1) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of the Llama-3-8B-shaped gradient list with ``layers`` layers: the
    embedding, the layers, the final norm, the LM head. ``scale_rows`` divides every dim-0
    size (a small list of the same structure, for the CPU check)."""
    d = max(1, scale_rows)

    def s(*shape: int) -> tuple[int, ...]:
        return (max(1, shape[0] // d), *shape[1:])

    out = [("embed", s(VOCAB, H))]
    for i in range(layers):
        out += [(f"layers.{i}.q", s(H, H)), (f"layers.{i}.k", s(KV, H)), (f"layers.{i}.v", s(KV, H)),
                (f"layers.{i}.o", s(H, H)), (f"layers.{i}.gate", s(FF, H)), (f"layers.{i}.up", s(FF, H)),
                (f"layers.{i}.down", s(H, FF)), (f"layers.{i}.attn_norm", s(H)), (f"layers.{i}.mlp_norm", s(H))]
    out += [("norm", s(H)), ("lm_head", s(VOCAB, H))]
    return out


def shard_rows(n: int, rank: int, world: int = WORLD) -> tuple[int, int]:
    """The rows ``[start, stop)`` of a dim of ``n`` that rank ``rank`` holds under torch's
    ``Shard(0)``: ``torch.chunk``'s pieces of ceil(n / world) rows (the last smaller, and
    a rank past them empty)."""
    chunk = -(-n // world)
    return min(rank * chunk, n), min((rank + 1) * chunk, n)


def local_shape(shape: tuple[int, ...], rank: int, world: int = WORLD) -> tuple[int, ...]:
    start, stop = shard_rows(shape[0], rank, world)
    return (stop - start, *shape[1:])


def nbytes(shapes: list[tuple[int, ...]], dtype: str = "bfloat16") -> int:
    return sum(math.prod(s) for s in shapes) * ITEMSIZE[dtype]


def plan(a: argparse.Namespace) -> dict[str, Any]:
    full = llama_shapes(a.layers, a.scale_rows)
    bits = llama_shapes(a.bits_layers, a.scale_rows)
    ranks = [[local_shape(s, r) for _, s in full] for r in range(WORLD)]
    return {
        "layers": a.layers, "tensors": len(full), "full_bytes": nbytes([s for _, s in full]),
        "rank_bytes": [nbytes(r) for r in ranks], "rank_shapes": ranks, "names": [n for n, _ in full],
        "full_shapes": [s for _, s in full],
        "bits_tensors": len(bits), "bits_bytes": nbytes([s for _, s in bits]), "bits_shapes": [s for _, s in bits],
        "steps": a.steps, "warmup": a.warmup, "budget_s": a.budget_s, "out": a.out,
        "backend": "gloo (CPU check)" if a.cpu else "nccl",
    }


def print_plan(p: dict[str, Any]) -> None:
    print(f"foreach_dist plan: {WORLD} ranks, {p['backend']}; bf16 Llama-3-8B-shaped list of {p['layers']} layers: "
          f"{p['tensors']} tensors, {p['full_bytes'] / 1e9:.2f} GB")
    for r in range(WORLD):
        print(f"  rank {r}: {p['rank_bytes'][r] / 1e9:.3f} GB of dim-0 shards")
    print("  shards (full -> rank 0 | rank 1), one line per distinct shape:")
    seen = set()
    for i, full in enumerate(p["full_shapes"]):
        if full in seen:
            continue
        seen.add(full)
        print(f"    {p['names'][i]:<20} {list(full)} -> {list(p['rank_shapes'][0][i])} | {list(p['rank_shapes'][1][i])}")
    print(f"  same-bits list: {p['bits_tensors']} full tensors, {p['bits_bytes'] / 1e9:.2f} GB on each GPU")
    print(f"  checks: bulkred vs float64 and vs torch's DTensor clip (float32 copies), rtol {NORM_RTOL:g}; "
          f"clipped bf16 vs torch's float32 clip, rtol 2^-8 + {NORM_RTOL:g}; vs torch's bf16 clip, rtol 2^-6")
    print(f"  timing: {p['warmup']} warm-up + {p['steps']} steps each (bulkred: local launch, all_reduce, root, "
          f"scaling, whole; torch: DTensor clip_grad_norm_), budget {p['budget_s']} s; out {p['out']}")


# endregion

# region Arguments


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0,
                    help=f"the fraction of the model's {LAYERS} layers in the list (default 1: all of them; 0.25: 8)")
    ap.add_argument("--layers", type=int, default=None, help="the layers of the list, counted (instead of --scale)")
    ap.add_argument("--bits-layers", type=int, default=4, help="layers of the same-bits list (default 4)")
    ap.add_argument("--steps", type=int, default=30, help="timed steps of each library (at least 20; default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up steps of each library (default 3)")
    ap.add_argument("--budget-s", type=float, default=150.0,
                    help="the run's time budget: the optional parts are skipped past it (default 150)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/out", help="folder of foreach_dist.{md,json}")
    ap.add_argument("--dry-run", action="store_true", help="print the shards and the plan; no GPU, no torch")
    ap.add_argument("--cpu", action="store_true",
                    help="check the script: two gloo ranks on the CPU, bulkred replaced by torch stand-ins")
    ap.add_argument("--scale-rows", type=int, default=1, help="divide every dim 0 by this (a small list; default 1)")
    a = ap.parse_args(argv)
    if not 0.0 <= a.scale <= 1.0:
        ap.error(f"--scale must be 0 to 1 (a fraction of the {LAYERS} layers), got {a.scale}")
    if a.layers is None:
        a.layers = round(a.scale * LAYERS)
    if not 0 <= a.layers <= LAYERS:
        ap.error(f"--layers must be 0 to {LAYERS}, got {a.layers}")
    if not 0 <= a.bits_layers <= LAYERS:
        ap.error(f"--bits-layers must be 0 to {LAYERS}, got {a.bits_layers}")
    if a.steps < 20 and not a.cpu:
        ap.error(f"--steps must be at least 20 (a median of 20 steps or more), got {a.steps}")
    if a.steps < 1 or a.warmup < 0:
        ap.error("--steps must be at least 1 and --warmup at least 0")
    if a.scale_rows < 1:
        ap.error(f"--scale-rows must be at least 1, got {a.scale_rows}")
    if a.budget_s <= 0:
        ap.error(f"--budget-s must be positive, got {a.budget_s}")
    return a


# endregion

# region One rank


class _Stand:
    """bulkred's two calls for ``--cpu``: torch stand-ins with the same results' form."""

    @staticmethod
    def total_norm(torch: Any, shards: list[Any], local: bool = False) -> Any:
        p = sum((s.float().pow(2).sum() for s in shards), torch.zeros((), dtype=torch.float32))
        return p if local else p.sqrt()

    @staticmethod
    def foreach_norm(torch: Any, ts: list[Any]) -> Any:
        return torch.stack([t.float().norm() for t in ts])


def clip_kernel(arch: str) -> tuple[Any, int]:
    """The kernel ``bulkred.clip_grad_norm_`` launches after its norm
    (``foreach.scale_list_module(True)``, under the compile cache's key of foreach.py's
    own) for the target ``arch``, and its grid (the descriptor table's)."""
    from bulkred_dialect.compiler import compile_keyed, target_for
    from bulkred_dialect.foreach import scale_list_module

    kernel = compile_keyed({"what": "list kernel", "kernel": repr(("scale_list", "clip"))},
                           lambda: scale_list_module(True), target_for(arch)).kernel("scale_list")
    return kernel, int(kernel.signature.launch.grid[0])


def _clip_kernel(torch: Any, shards: list[Any], device: Any) -> tuple[Any, int]:
    """``bulkred.clip_grad_norm_``'s scaling of ``shards`` by the clip coefficient of a
    total on the device: a function ``clip(max_norm_tensor, total)`` and its grid: the
    kernel of :func:`clip_kernel` over the descriptor table of ``shards``
    (``foreach_table``)."""
    from bulkred_dialect.backend_ptx.device import current_arch
    from bulkred_dialect.foreach_table import descriptor_table
    from bulkred_dialect.ops.list_layout import CODES

    kernel, grid = clip_kernel(current_arch())
    codes = [CODES[str(s.dtype).removeprefix("torch.")] for s in shards]
    table = torch.from_numpy(descriptor_table([s.data_ptr() for s in shards], [s.numel() for s in shards], codes, grid))
    table = table.to(device)

    def clip(factor: Any, total: Any) -> None:
        kernel(table, factor, total.view(1))

    return clip, grid


def partition(arch: str) -> dict[str, Any]:
    """What the list kernel's partition of a list is a function of, for the target
    ``arch``: its grid (``list_grid``: CTAS_PER_SM per multiprocessor of the target's
    flagship part, ``kernel.SM_COUNT``), never the device's own SM count."""
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.variants.grid_list import CTAS_PER_SM, list_grid
    from bulkred_dialect.passes.variants.kernel import SM_COUNT

    target = Target.parse(arch)
    return {"arch": str(arch), "list_grid": list_grid(target), "ctas_per_sm": CTAS_PER_SM,
            "target_sms": SM_COUNT.get(target.sm, 132), "sm_counts_table": {str(k): v for k, v in SM_COUNT.items()}}


class _Timer:
    """CUDA events on the current stream (``--cpu``: the host's clock)."""

    def __init__(self, torch: Any, cuda: bool):
        self.torch, self.cuda = torch, cuda

    def mark(self) -> Any:
        if self.cuda:
            e = self.torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def ms(self, a: Any, b: Any) -> float:
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()


def _fill(torch: Any, shapes: list[tuple[int, ...]], dtype: Any, device: Any, gen: Any, scale: float) -> list[Any]:
    return [(torch.randn(s, dtype=torch.float32, device=device, generator=gen) * scale).to(dtype) for s in shapes]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b) if b else abs(a - b)


def _max_rel(torch: Any, got: list[Any], want: list[Any]) -> float:
    """The largest ``|got - want| / |want|`` over every element (want 0: the absolute
    difference)."""
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        if not w.numel():
            continue
        g, w = g.float(), w.float()
        d = (g - w).abs() / w.abs().clamp_min(1e-30)
        worst = max(worst, float(d.max()))
    return worst


def _version(v: Any) -> str:
    """NCCL's version as torch gives it (a tuple, or an int such as 22707 in older torch)."""
    return ".".join(map(str, v)) if isinstance(v, tuple | list) else str(v)


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else math.nan


def value_of(total: Any) -> float:
    """A total as a float: a DTensor's whole value (``full_tensor``), else the tensor's."""
    full = getattr(total, "full_tensor", None)
    return float(full() if full is not None else total)


def _torch_clip(torch: Any, dist: Any, mesh: Any, grads: list[Any], full_shapes: list[tuple[int, ...]]) -> tuple[Any, str]:
    """torch's clip of sharded grads: a function ``step(max_norm) -> total`` and its name.
    ``clip_grad_norm_`` of DTensor parameters whose ``.grad`` are DTensors over ``grads``
    (Shard(0) on ``mesh``); where torch refuses that, its local route (foreach norm of the
    local shards, all_reduce of the square, the root, clip_grads_with_norm_'s formula)."""
    from torch.distributed.tensor import DTensor, Shard

    try:
        params = []
        for g, shape in zip(grads, full_shapes, strict=True):
            stride = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
            dg = DTensor.from_local(g, mesh, [Shard(0)], run_check=False, shape=torch.Size(shape), stride=stride)
            p = torch.nn.Parameter(DTensor.from_local(g.new_empty(1).expand(g.shape), mesh, [Shard(0)], run_check=False,
                                                      shape=torch.Size(shape), stride=stride))
            p.grad = dg
            params.append(p)

        def dtensor_step(max_norm: float) -> Any:
            return torch.nn.utils.clip_grad_norm_(params, max_norm)  # the total: a DTensor (read it with value_of)

        value_of(dtensor_step(1e30))  # a trial (no clipping: the coefficient is 1)
        return dtensor_step, "clip_grad_norm_ (DTensor, Shard(0))"
    except Exception as e:  # noqa: BLE001 - torch's DTensor route refused: its local route
        reason = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"

    def local_step(max_norm: float) -> Any:
        norms = torch._foreach_norm(grads, 2.0)
        power = torch.linalg.vector_norm(torch.stack(norms).float(), 2.0) ** 2
        dist.all_reduce(power)
        total = power.sqrt()
        coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
        torch._foreach_mul_(grads, coef.to(grads[0].dtype) if grads else coef)
        return total

    return local_step, f"_foreach_norm + all_reduce + _foreach_mul_ (DTensor refused: {reason})"


def _rank_main(rank: int, a: argparse.Namespace, port: int, result_path: str) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "localhost", str(port)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    t_start = time.monotonic()
    cuda = not a.cpu
    # a rank left waiting in a collective (its peer failed) gives up within the budget
    timeout = datetime.timedelta(seconds=max(60.0, a.budget_s))
    if cuda:
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
        dist.init_process_group("nccl", rank=rank, world_size=WORLD, device_id=device, timeout=timeout)
        import bulkred_dialect as bulkred

        def total_norm(ts: list[Any], local: bool = False) -> Any:
            return bulkred.total_norm(ts, local=local)

        def foreach_norm(ts: list[Any]) -> Any:
            return bulkred.foreach_norm(ts)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=timeout)

        def total_norm(ts: list[Any], local: bool = False) -> Any:
            return _Stand.total_norm(torch, ts, local)

        def foreach_norm(ts: list[Any]) -> Any:
            return _Stand.foreach_norm(torch, ts)

    timer = _Timer(torch, cuda)
    mesh = init_device_mesh("cuda" if cuda else "cpu", (WORLD,))
    report: dict[str, Any] = {"rank": rank, "failures": [], "skipped": []}
    fail = report["failures"]

    def over_budget() -> bool:
        return time.monotonic() - t_start > a.budget_s * 0.75

    def lined_up() -> None:
        timer.sync()
        dist.barrier()
        timer.sync()

    try:
        # the environment
        env: dict[str, Any] = {"torch": torch.__version__, "NCCL_NVLS_ENABLE": os.environ.get("NCCL_NVLS_ENABLE")}
        if cuda:
            prop = torch.cuda.get_device_properties(device)
            env.update(gpu=prop.name, sm_count=prop.multi_processor_count, memory_gb=round(prop.total_memory / 1e9, 1),
                       cuda=torch.version.cuda, nccl=_version(torch.cuda.nccl.version()),
                       capability=f"{prop.major}.{prop.minor}")
        report["env"] = env

        # the shards: fresh random bfloat16, each rank its own rows of every tensor
        full = llama_shapes(a.layers, a.scale_rows)
        full_shapes = [s for _, s in full]
        local = [local_shape(s, rank) for s in full_shapes]
        gen = torch.Generator(device=device).manual_seed(SEED * 1000 + rank)
        n_total = sum(math.prod(s) for s in full_shapes)
        scale = 1.0 / math.sqrt(n_total) * 3.0  # a total near 3
        b_shards = _fill(torch, local, torch.bfloat16, device, gen, scale)
        t_shards = [s.clone() for s in b_shards]
        report["rank_bytes"] = nbytes(local)

        # region checks
        # float64 reference
        p64 = torch.zeros((), dtype=torch.float64, device=device)
        for s in b_shards:
            p64 += s.double().pow(2).sum()
        dist.all_reduce(p64)
        total64 = float(p64.sqrt())
        max_norm = CHECK_FRACTION * total64

        # torch's DTensor clip on float32 copies of the same shards
        f32 = [s.float() for s in b_shards]
        t32_step, t32_how = _torch_clip(torch, dist, mesh, f32, full_shapes)
        t32_total = value_of(t32_step(max_norm))

        # bulkred: the local power, all_reduce, the root, the clip kernel
        power = total_norm(b_shards, local=True)
        dist.all_reduce(power)
        b_total_t = power.sqrt()
        if cuda:
            clip, grid = _clip_kernel(torch, b_shards, device)
            factor_check = torch.full((1,), max_norm, dtype=torch.float32, device=device)
            factor_timed = torch.full((1,), TIMED_MAX_NORM, dtype=torch.float32, device=device)
            factor_none = torch.full((1,), 1e30, dtype=torch.float32, device=device)
        else:
            grid = 0
            factor_check, factor_timed, factor_none = max_norm, TIMED_MAX_NORM, 1e30

            def clip(factor: Any, total: Any) -> None:
                coef = torch.clamp(factor / (total + 1e-6), max=1.0)
                for s in b_shards:
                    s.copy_((s.float() * coef).to(s.dtype))

        clip(factor_check, b_total_t)
        b_total = float(b_total_t)
        # torch's DTensor clip on the bfloat16 shards (the timed route)
        t_step, t_how = _torch_clip(torch, dist, mesh, t_shards, full_shapes)
        t_total = value_of(t_step(max_norm))

        checks = {
            "total_float64": total64, "total_bulkred": b_total, "total_torch_f32": t32_total, "total_torch_bf16": t_total,
            "rel_bulkred_vs_float64": _rel(b_total, total64), "rel_torch_f32_vs_float64": _rel(t32_total, total64),
            "rel_bulkred_vs_torch_f32": _rel(b_total, t32_total), "rel_bulkred_vs_torch_bf16": _rel(b_total, t_total),
            "clip_max_rel_vs_torch_f32": _max_rel(torch, b_shards, f32),
            "clip_max_rel_vs_torch_bf16": _max_rel(torch, b_shards, t_shards),
            "clip_equal_bits_vs_torch_bf16": all(torch.equal(x, y) for x, y in zip(b_shards, t_shards, strict=True)),
            "torch_route_f32": t32_how, "torch_route": t_how, "max_norm": max_norm,
        }
        del f32, t32_step
        for key, tol in (("rel_bulkred_vs_float64", NORM_RTOL), ("rel_torch_f32_vs_float64", NORM_RTOL),
                         ("rel_bulkred_vs_torch_f32", 2 * NORM_RTOL), ("rel_bulkred_vs_torch_bf16", BF16_RTOL),
                         ("clip_max_rel_vs_torch_f32", BF16_ROUND + NORM_RTOL), ("clip_max_rel_vs_torch_bf16", BF16_RTOL)):
            if key == "rel_torch_f32_vs_float64":  # torch's own accuracy: reported, not ours to fail on
                continue
            if not checks[key] <= tol:
                fail.append(f"{key} = {checks[key]:.3g} > {tol:.3g}")
        report["checks"] = checks
        # endregion

        # region timing
        def bulkred_step(factor: Any) -> list[Any]:
            m0 = timer.mark()
            pw = total_norm(b_shards, local=True)
            m1 = timer.mark()
            dist.all_reduce(pw)
            m2 = timer.mark()
            tot = pw.sqrt()
            m3 = timer.mark()
            clip(factor, tot)
            m4 = timer.mark()
            return [m0, m1, m2, m3, m4]

        def torch_step(max_n: float) -> list[Any]:
            m0 = timer.mark()
            t_step(max_n)
            return [m0, timer.mark()]

        def timed(fn: Any, arg: Any, count: int) -> list[list[float]]:
            out = []
            for _ in range(count):
                lined_up()
                marks = fn(arg)
                timer.sync()
                out.append([timer.ms(marks[i], marks[i + 1]) for i in range(len(marks) - 1)] + [timer.ms(marks[0], marks[-1])])
            return out

        times: dict[str, Any] = {}
        for case, b_arg, t_arg in (("clip every step", factor_timed, TIMED_MAX_NORM), ("no clip", factor_none, 1e30)):
            if case == "no clip" and over_budget():
                report["skipped"].append(f"'{case}' timing: past 3/4 of --budget-s")
                continue
            timed(bulkred_step, b_arg, a.warmup)
            timed(torch_step, t_arg, a.warmup)
            b, t = [], []
            for _ in range(2):  # the libraries in turns, half the steps each time
                b += timed(bulkred_step, b_arg, (a.steps + 1) // 2)
                t += timed(torch_step, t_arg, (a.steps + 1) // 2)
            cols = ["local", "all_reduce", "root", "scale", "whole"]
            times[case] = {"bulkred": {c: _median([x[i] for x in b]) for i, c in enumerate(cols)},
                           "torch": {"whole": _median([x[-1] for x in t])}, "steps": len(b)}
        report["times"] = times
        # the data stayed finite and nonzero
        final = float(total_norm(b_shards))
        if not (math.isfinite(final) and final > 0):
            fail.append(f"after the timed steps bulkred's shards have total {final}")
        # endregion

        # region same bits on both GPUs
        del b_shards, t_shards, t_step
        bits: dict[str, Any] = {"grid": grid}
        bshapes = [s for _, s in llama_shapes(a.bits_layers, a.scale_rows)]
        # made on rank 0's GPU and broadcast (torch's randn on another GPU model could draw
        # other values: its grid follows the SM count); the checksums below confirm them
        if rank == 0:
            same = _fill(torch, bshapes, torch.bfloat16, device, torch.Generator(device=device).manual_seed(BITS_SEED), 1.0)
        else:
            same = [torch.empty(s, dtype=torch.bfloat16, device=device) for s in bshapes]
        for t in same:
            dist.broadcast(t, src=0)
        checksum = sum(int(torch.sum(t.view(torch.int16), dtype=torch.int64)) for t in same)
        results = []
        for _ in range(3):
            results.append(torch.cat([total_norm(same).view(1), total_norm(same, local=True).view(1), foreach_norm(same)]))
        mine = results[0]
        bits["repeatable"] = all(torch.equal(mine.view(torch.int32), r.view(torch.int32)) for r in results[1:])
        gathered = [torch.empty_like(mine) for _ in range(WORLD)]
        dist.all_gather(gathered, mine)
        sums = [None] * WORLD
        dist.all_gather_object(sums, checksum)
        bits["inputs_equal"] = len(set(sums)) == 1
        bits["equal"] = all(torch.equal(gathered[0].view(torch.int32), x.view(torch.int32)) for x in gathered[1:])
        bits["total"] = [float(x[0]) for x in gathered]
        bits["total_bits"] = [f"0x{int(x[:1].view(torch.int32)):08x}" for x in gathered]
        bits["tensors"] = len(same)
        bits["bytes"] = nbytes(bshapes)
        bits["differ_at"] = (gathered[0].view(torch.int32) != gathered[1].view(torch.int32)).nonzero().flatten()[:10].tolist()
        if cuda:
            from bulkred_dialect.backend_ptx.device import current_arch

            bits.update(partition(current_arch()))
        if not bits["inputs_equal"]:
            fail.append(f"the same-bits list differs between the GPUs' inputs (checksums {sums})")
        elif not bits["equal"]:
            fail.append(f"the same list gives other bits on the two GPUs (results {bits['differ_at']} differ)")
        if not bits["repeatable"]:
            fail.append("the same list gives other bits from call to call on one GPU")
        report["bits"] = bits
        del same, results
        # endregion
    except Exception as e:  # noqa: BLE001 - the report says what failed, the exit status too
        fail.append(f"rank {rank}: {type(e).__name__}: {e}")
        report["traceback"] = traceback.format_exc()
    report["seconds"] = time.monotonic() - t_start
    with open(f"{result_path}.{rank}.json", "w") as f:
        json.dump(report, f, default=str)
    if "traceback" in report:  # the peer may wait in a collective: end at once (spawn then stops it)
        sys.stdout.flush()
        os._exit(1)
    try:
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - the report is written
        pass


# endregion

# region Report


def _gbs(nbytes_: int, ms: float) -> float:
    return nbytes_ / (ms * 1e-3) / 1e9 if ms and math.isfinite(ms) else math.nan


def peak_of(name: str | None) -> float | None:
    for word, peak in HBM_PEAK.items():
        if name and word in name:
            return peak
    return None


def sm_sentence(bits: dict[str, Any], sm_counts: list[Any]) -> str:
    if "list_grid" not in bits:
        return "(the CPU check has no list kernel)"
    return (f"The list kernel's partition does NOT depend on the device's SM count: its grid is list_grid(target) = "
            f"{bits['target_sms']} x {bits['ctas_per_sm']} = {bits['list_grid']} CTAs for {bits['arch']} "
            f"(passes/variants/grid_list.py, the target's flagship part in kernel.SM_COUNT {bits['sm_counts_table']}), "
            f"whatever the GPU has (these: {sm_counts} SMs). Every chunk and the combination order follow from the "
            f"table and the grid, so any {bits['arch']} part (H100 PCIe's 114 SMs, H20's 78) would compute these bits; "
            f"another target (sm_100a: 148 x 4 = 592 CTAs, other chunks, other PTX) may round otherwise, "
            f"the same on every GPU of that target.")


def report_md(r0: dict[str, Any], r1: dict[str, Any], p: dict[str, Any]) -> str:
    e0, e1 = r0.get("env", {}), r1.get("env", {})
    lines = ["# foreach_dist: the sharded norm and clip on two GPUs", ""]
    lines.append(f"- GPUs: {e0.get('gpu', 'cpu')} ({e0.get('sm_count', '-')} SMs) | {e1.get('gpu', 'cpu')} "
                 f"({e1.get('sm_count', '-')} SMs); torch {e0.get('torch')}, CUDA {e0.get('cuda', '-')}, NCCL "
                 f"{e0.get('nccl', '-')}, NCCL_NVLS_ENABLE={e0.get('NCCL_NVLS_ENABLE')}; backend {p['backend']}")
    lines.append(f"- list: {p['tensors']} bf16 tensors ({p['layers']} layers), {p['full_bytes'] / 1e9:.2f} GB; "
                 f"per rank {p['rank_bytes'][0] / 1e9:.2f} | {p['rank_bytes'][1] / 1e9:.2f} GB of Shard(0) shards")
    c = r0.get("checks")
    if c:
        lines += ["", "## Norms and clip (checked once, max_norm = 0.4 x total)", "",
                  "| quantity | value | relative difference | bound |", "| --- | ---: | ---: | ---: |",
                  f"| float64 total | {c['total_float64']:.9g} | | |",
                  f"| bulkred total | {c['total_bulkred']:.9g} | {c['rel_bulkred_vs_float64']:.2e} vs float64 | {NORM_RTOL:g} |",
                  f"| torch total, float32 copies | {c['total_torch_f32']:.9g} | {c['rel_torch_f32_vs_float64']:.2e} vs float64; "
                  f"{c['rel_bulkred_vs_torch_f32']:.2e} vs bulkred | {2 * NORM_RTOL:g} vs bulkred |",
                  f"| torch total, bf16 (norms rounded to bf16) | {c['total_torch_bf16']:.9g} | {c['rel_bulkred_vs_torch_bf16']:.2e} vs bulkred | 2^-6 |",
                  f"| clipped bf16 shards vs torch's float32 clip | | max {c['clip_max_rel_vs_torch_f32']:.2e} | 2^-8 + {NORM_RTOL:g} |",
                  f"| clipped bf16 shards vs torch's bf16 clip | | max {c['clip_max_rel_vs_torch_bf16']:.2e} (bit-equal: "
                  f"{c['clip_equal_bits_vs_torch_bf16']}) | 2^-6 |",
                  "", f"torch's route: {c['torch_route']}"]
    t0, t1 = r0.get("times", {}), r1.get("times", {})
    peak = peak_of(e0.get("gpu"))
    summary: list[str] = []
    for case in t0:
        if case not in t1:
            continue
        b = {k: max(t0[case]["bulkred"][k], t1[case]["bulkred"][k]) for k in t0[case]["bulkred"]}
        t = max(t0[case]["torch"]["whole"], t1[case]["torch"]["whole"])
        gbs = _gbs(max(p["rank_bytes"]), b["local"])
        lines += ["", f"## Time per step, {case} (median of {t0[case]['steps']} steps, ms, the slower rank)", "",
                  "| | local launch | all_reduce | root | scaling | whole step | torch DTensor clip | torch / bulkred |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
                  f"| rank 0 | {t0[case]['bulkred']['local']:.3f} | {t0[case]['bulkred']['all_reduce']:.3f} | "
                  f"{t0[case]['bulkred']['root']:.3f} | {t0[case]['bulkred']['scale']:.3f} | {t0[case]['bulkred']['whole']:.3f} | "
                  f"{t0[case]['torch']['whole']:.3f} | {t0[case]['torch']['whole'] / t0[case]['bulkred']['whole']:.2f}x |",
                  f"| rank 1 | {t1[case]['bulkred']['local']:.3f} | {t1[case]['bulkred']['all_reduce']:.3f} | "
                  f"{t1[case]['bulkred']['root']:.3f} | {t1[case]['bulkred']['scale']:.3f} | {t1[case]['bulkred']['whole']:.3f} | "
                  f"{t1[case]['torch']['whole']:.3f} | {t1[case]['torch']['whole'] / t1[case]['bulkred']['whole']:.2f}x |",
                  f"| slower | {b['local']:.3f} | {b['all_reduce']:.3f} | {b['root']:.3f} | {b['scale']:.3f} | "
                  f"{b['whole']:.3f} | {t:.3f} | **{t / b['whole']:.2f}x** |",
                  "", f"local norm: {max(p['rank_bytes']) / 1e9:.2f} GB read in {b['local']:.3f} ms = {gbs:.0f} GB/s"
                  + (f", {gbs * 1e9 / peak:.0%} of the HBM peak ({peak / 1e12:.2f} TB/s)" if peak else "")]
        summary.append(f"| {case}: whole step, bulkred / torch | {b['whole']:.3f} / {t:.3f} ms (torch / bulkred "
                       f"{t / b['whole']:.2f}x); local norm {gbs:.0f} GB/s"
                       + (f", {gbs * 1e9 / peak:.0%} of the HBM peak |" if peak else " |"))
    bits = r0.get("bits")
    if bits:
        lines += ["", "## Same bits on both GPUs", "",
                  f"- list: {bits['tensors']} full bf16 tensors ({bits['bytes'] / 1e9:.2f} GB) from seed {BITS_SEED}, broadcast from GPU 0; "
                  f"inputs equal: {bits['inputs_equal']}",
                  f"- total_norm, total_norm(local=True) and foreach_norm's {bits['tensors']} norms: "
                  f"**{'equal' if bits['equal'] else 'NOT equal'}** bits on the two GPUs (total {bits['total'][0]!r}, "
                  f"bits {bits['total_bits']}); repeatable on one GPU: {bits['repeatable']}",
                  f"- {sm_sentence(bits, [e0.get('sm_count'), e1.get('sm_count')])}"]
    skipped = r0.get("skipped", []) + r1.get("skipped", [])
    if skipped:
        lines += ["", "Skipped: " + "; ".join(skipped)]
    failures = r0.get("failures", []) + r1.get("failures", [])
    verdict = "all checks passed" if not failures else "FAILED: " + "; ".join(failures)
    # the same in table rows (tools/gpu.sh's bench step prints a log's table rows)
    lines += ["", "| summary | |", "| --- | --- |",
              f"| GPUs | {e0.get('gpu', 'cpu')} ({e0.get('sm_count', '-')} SMs), {e1.get('gpu', 'cpu')} ({e1.get('sm_count', '-')} SMs) |",
              f"| versions | torch {e0.get('torch')}, CUDA {e0.get('cuda', '-')}, NCCL {e0.get('nccl', '-')}, "
              f"NCCL_NVLS_ENABLE={e0.get('NCCL_NVLS_ENABLE')} |", *summary]
    if bits:
        lines.append(f"| same bits on both GPUs | {'equal' if bits['equal'] else 'NOT equal'} (inputs equal: "
                     f"{bits['inputs_equal']}; total bits {bits['total_bits']}) |")
        if "list_grid" in bits:
            lines.append(f"| partition depends on the SM count | no: list_grid({bits['arch']}) = {bits['target_sms']} x "
                         f"{bits['ctas_per_sm']} = {bits['list_grid']} CTAs, whatever the device's count |")
    lines.append(f"| verdict | {verdict} |")
    lines += ["", "## Verdict", "", verdict]
    return "\n".join(lines) + "\n"


# endregion


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    p = plan(a)
    print_plan(p)
    if a.dry_run:
        return 0
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    import torch
    import torch.multiprocessing as mp

    if not a.cpu and torch.cuda.device_count() < WORLD:
        print(f"foreach_dist: needs {WORLD} GPUs, torch sees {torch.cuda.device_count()}", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    result = os.path.join(a.out, "foreach_dist_rank")
    for r in range(WORLD):
        if os.path.exists(f"{result}.{r}.json"):
            os.remove(f"{result}.{r}.json")
    start = time.monotonic()
    ctx = mp.spawn(_rank_main, args=(a, free_port(), result), nprocs=WORLD, join=False)
    deadline = start + a.budget_s + RANK_SLACK_S
    try:
        while not ctx.join(timeout=5):
            if time.monotonic() > deadline:
                for proc in ctx.processes:
                    proc.kill()
                print(f"foreach_dist: the ranks did not finish in {deadline - start:.0f} s", file=sys.stderr)
                return 1
    except Exception as e:  # noqa: BLE001 - a rank died: its error, exit 1
        print(f"foreach_dist: a rank failed: {e}", file=sys.stderr)
    reports = []
    for r in range(WORLD):
        try:
            with open(f"{result}.{r}.json") as f:
                reports.append(json.load(f))
        except OSError:
            reports.append({"rank": r, "failures": [f"rank {r} wrote no report"], "skipped": []})
    for rep in reports:
        if "traceback" in rep:
            print(rep["traceback"], file=sys.stderr)
    md = report_md(reports[0], reports[1], p)
    print(md)
    print(f"foreach_dist: {time.monotonic() - start:.1f} s")
    with open(os.path.join(a.out, "foreach_dist.md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.out, "foreach_dist.json"), "w") as f:
        json.dump({"plan": {k: v for k, v in p.items() if k not in ("rank_shapes", "names", "full_shapes")},
                   "ranks": reports}, f, indent=1, default=str)
    failures = [x for rep in reports for x in rep.get("failures", [])]
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
