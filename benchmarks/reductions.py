"""Whole reductions on the GPU: bulkred's grid-scope kernels against torch, same run.

For each reduction (full sum, amax, column sum, row sum of float32) and size (1 MiB,
64 MiB, 1 GiB: 256x1024, 4096x4096, 65536x4096), this builds the one-op tile module
with the builder, lowers and assembles it for the GPU (the dispatch picks the variant),
launches the cubin through cuda.core on torch's stream with torch tensors (no copies),
and times it with CUDA events: median of ``--repeat`` launches after warm-up, on fresh
random data (``torch.randn``), rotating over enough input copies that the inputs do not
sit in L2. The launcher's work is timed too: zeroing ``dst`` when the kernel asks for it
(``bulkred.zero_init``). torch's ``sum()``, ``sum(0)``, ``sum(1)`` and ``amax()`` are
timed the same way. Each result is checked against float64 before timing.

Usage (on a GPU machine)::

    python benchmarks/reductions.py                 # table on stdout
    python benchmarks/reductions.py --out DIR       # also DIR/reductions.{md,json,png}
    python benchmarks/reductions.py --check-only    # correctness of many odd shapes, no timing
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bulkred_dialect import builder as T  # noqa: E402
from bulkred_dialect.backend_ptx.assemble import assemble  # noqa: E402
from bulkred_dialect.ops.kernel_attrs import WORKSPACE_ATTR, ZERO_INIT_ATTR  # noqa: E402
from bulkred_dialect.passes.dispatch import explain  # noqa: E402

SIZES = {"1MiB": (256, 1024), "64MiB": (4096, 4096), "1GiB": (65536, 4096)}
OPS = {
    # name: (kind, axes, torch function)
    "sum": ("sum", None, lambda x: x.sum()),
    "amax": ("max", None, lambda x: x.amax()),
    "colsum": ("sum", [0], lambda x: x.sum(0)),
    "rowsum": ("sum", [1], lambda x: x.sum(1)),
}
TORCH_DTYPES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "int32": "int32"}


@dataclass
class Compiled:
    """One lowered, assembled and loaded grid reduction."""

    kernel: object
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int]
    workspace: int
    zero_init: list[int]
    variant: str
    out_shape: list[int]


def reduction_module(kind: str, shape: list[int], dtype: str, axes, **kw):
    out = [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]
    with T.kernel("reduce") as k:
        x = k.param("x", shape, dtype)
        y = k.param("y", out, dtype)
        T.reduce(kind, y, x, axes=axes, **kw)
    return k.module(), out


def compile_reduction(kind: str, shape, dtype: str, axes, arch: str, **kw) -> Compiled:
    from cuda.core import ObjectCode

    from bulkred_dialect.backend_ptx.printer import print_ptx
    from bulkred_dialect.backend_ptx.runtime import lower_tile_module
    from bulkred_dialect.ops.tile import ReduceOp, kernel_launch

    module, out = reduction_module(kind, list(shape), dtype, axes, **kw)
    op = next(o for o in module.walk() if isinstance(o, ReduceOp))
    table = explain(op, arch)
    variant = table.rsplit("chosen: ", 1)[1].strip()
    lowered = lower_tile_module(module, arch)
    func = next(o for o in lowered.walk() if o.name == "func.func")
    launch = kernel_launch(func)
    ws = func.attributes.get(WORKSPACE_ATTR)
    zi = func.attributes.get(ZERO_INIT_ATTR)
    cubin = assemble(print_ptx(lowered), arch)
    obj = ObjectCode.from_cubin(cubin, name="bulkred")
    return Compiled(
        obj.get_kernel("reduce"),
        launch.grid_dims,
        launch.block_dims,
        launch.cluster_dims,
        ws.value.data if ws is not None else 0,
        [a.value.data for a in zi.data] if zi is not None else [],
        variant,
        out,
    )


class Launcher:
    """Launches a :class:`Compiled` on torch's current stream with device pointers."""

    def __init__(self, c: Compiled, torch):
        from cuda.core import Device, LaunchConfig

        self.c, self.torch = c, torch
        dev = Device()
        dev.set_current()
        ts = torch.cuda.current_stream()
        try:
            self.stream = dev.create_stream(ts)  # torch streams speak __cuda_stream__
        except Exception:
            from cuda.core import Stream

            self.stream = Stream.from_handle(ts.cuda_stream)
        grid = tuple(g // k for g, k in zip(c.grid, c.cluster))
        if math.prod(c.cluster) > 1:
            self.config = LaunchConfig(grid=grid, cluster=c.cluster, block=c.block)
        else:
            self.config = LaunchConfig(grid=c.grid, block=c.block)
        self.ws = torch.zeros(max(c.workspace, 16), dtype=torch.uint8, device="cuda") if c.workspace else None

    def __call__(self, x, y) -> None:
        from cuda.core import launch

        args = [x, y]
        for i in self.c.zero_init:
            args[i].zero_()
        ptrs = [a.data_ptr() for a in args]
        if self.ws is not None:
            ptrs.append(self.ws.data_ptr())
        launch(self.stream, self.config, self.c.kernel, *ptrs)


def reference(x: np.ndarray, kind: str, axes):
    f = {
        "sum": np.sum, "max": np.max, "min": np.min,
        "and": np.bitwise_and.reduce, "or": np.bitwise_or.reduce, "xor": np.bitwise_xor.reduce,
    }[kind]
    ax = None if axes is None else tuple(axes)
    if kind in ("and", "or", "xor") and ax is None:
        x, ax = x.reshape(-1), 0
    return np.atleast_1d(f(x, axis=ax))


def check(torch, launch: Launcher, kind: str, shape, dtype: str, axes, runs: int = 2) -> str:
    """Run on fresh random data; compare with float64 (relative error for float sums,
    exact for max/min and integers); every run gives the same bits when deterministic."""
    tdt = getattr(torch, TORCH_DTYPES[dtype])
    n = math.prod(shape)
    if dtype == "int32":
        x = torch.randint(-1000, 1000, tuple(shape), dtype=tdt, device="cuda")
    else:
        x = torch.randn(tuple(shape), device="cuda").to(tdt)
    results = []
    for _ in range(runs):
        y = torch.full(tuple(launch.c.out_shape), float("nan") if dtype != "int32" else -7, device="cuda").to(tdt)
        launch(x, y)
        torch.cuda.synchronize()
        results.append(y.clone())
    if dtype == "int32":
        want = reference(x.cpu().numpy().astype(np.int64), kind, axes)
        want = (want + 2**31) % 2**32 - 2**31  # int32 wraps
        got = results[0].cpu().numpy().astype(np.int64).reshape(want.shape)
        ok = np.array_equal(got, want)
        err = float(np.max(np.abs(got - want))) if not ok else 0.0
    elif kind in ("max", "min"):
        want = reference(x.double().cpu().numpy(), kind, axes)
        got = results[0].double().cpu().numpy().reshape(want.shape)
        ok = np.array_equal(got, want)
        err = float(np.max(np.abs(got - want))) if not ok else 0.0
    else:
        ref = reference(x.double().cpu().numpy(), kind, axes)
        got = results[0].double().cpu().numpy().reshape(ref.shape)
        red = n if axes is None else math.prod(shape[a] for a in axes)
        bound = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 1e-2}[dtype] * math.sqrt(red) + 1e-6
        err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))
        ok = bool(np.all(np.isfinite(got))) and err <= bound
    same = all(torch.equal(results[0], r) for r in results[1:])
    return f"{'ok' if ok else 'WRONG'} err={err:.2e} repeat-identical={same}"


def median_ms(torch, fn, inputs, repeat: int, warmup: int = 3) -> float:
    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    times = []
    for i in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(inputs[i % len(inputs)])
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def bench(args) -> list[dict]:
    import torch

    arch = "sm_%d%da" % torch.cuda.get_device_capability()
    gpu = torch.cuda.get_device_name()
    rows = []
    for size, (m, n) in SIZES.items():
        nbytes = m * n * 4
        copies = max(1, min(16, (256 << 20) // nbytes))  # keep the inputs out of L2
        inputs = [torch.randn(m, n, device="cuda") for _ in range(copies)]
        for name, (kind, axes, tfn) in OPS.items():
            c = compile_reduction(kind, [m, n], "float32", axes, arch)
            launch = Launcher(c, torch)
            verdict = check(torch, launch, kind, [m, n], "float32", axes)
            y = torch.empty(c.out_shape, device="cuda")
            ours = median_ms(torch, lambda x: launch(x, y), inputs, args.repeat)
            theirs = median_ms(torch, tfn, inputs, args.repeat)
            rows.append(
                dict(
                    gpu=gpu, size=size, shape=[m, n], op=name, variant=c.variant,
                    bulkred_ms=ours, torch_ms=theirs,
                    bulkred_gbps=nbytes / ours / 1e6, torch_gbps=nbytes / theirs / 1e6,
                    ratio=theirs / ours, check=verdict,
                )
            )
            print(
                f"{size:>6} {name:>7} {c.variant:>16}  bulkred {ours * 1e3:9.1f} us {nbytes / ours / 1e6:7.0f} GB/s"
                f"  torch {theirs * 1e3:9.1f} us {nbytes / theirs / 1e6:7.0f} GB/s  ratio {theirs / ours:5.2f}  {verdict}",
                flush=True,
            )
        del inputs
        torch.cuda.empty_cache()
    return rows


CHECK_CASES = [
    # (kind, dtype, shape, axes, options)
    *[(k, "float32", [n], None, {}) for k in ("sum", "max", "min") for n in (1, 31, 4097, 65536 + 3)],
    *[(k, dt, [n], None, {}) for k in ("sum", "max", "min") for dt in ("float16", "bfloat16") for n in (1, 31, 4097, 65539)],
    *[(k, "int32", [n], None, {}) for k in ("sum", "max", "min", "and", "or", "xor") for n in (1, 31, 4097, 65539)],
    *[("sum", "float32", s, [0], o) for s in ([1, 1], [31, 4096], [4097, 1028], [1000, 4097], [65539, 12]) for o in ({}, {"deterministic": True})],
    *[("max", "float32", s, [0], {}) for s in ([31, 33], [4097, 1028])],
    *[("sum", "float32", s, [1], {}) for s in ([1, 1], [31, 4096], [4097, 1028], [1000, 4097], [3, 65539])],
    ("min", "int32", [1000, 33], [1], {}),
    ("sum", "int32", [1000, 4096], [0], {}),
]


def check_all(args) -> int:
    import torch

    arch = "sm_%d%da" % torch.cuda.get_device_capability()
    bad = 0
    for kind, dtype, shape, axes, opts in CHECK_CASES:
        c = compile_reduction(kind, shape, dtype, axes, arch, **opts)
        verdict = check(torch, Launcher(c, torch), kind, shape, dtype, axes, runs=3)
        det = opts.get("deterministic") or c.variant != "grid_split_bulk"
        if "WRONG" in verdict or (det and dtype != "int32" and "repeat-identical=False" in verdict):
            bad += 1
        print(f"{kind:>4} {dtype:>8} {str(shape):>14} axes={axes} {opts} -> {c.variant}: {verdict}", flush=True)
    print(f"{len(CHECK_CASES) - bad} passed, {bad} failed")
    return 1 if bad else 0


def write_outputs(rows: list[dict], out: str) -> None:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "reductions.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = [
        f"GPU: {rows[0]['gpu']}",
        "",
        "| size | op | variant | bulkred us | bulkred GB/s | torch us | torch GB/s | torch/bulkred |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']} | {r['op']} | {r['variant']} | {r['bulkred_ms'] * 1e3:.1f} | {r['bulkred_gbps']:.0f} "
            f"| {r['torch_ms'] * 1e3:.1f} | {r['torch_gbps']:.0f} | {r['ratio']:.2f} |"
        )
    with open(os.path.join(out, "reductions.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sizes = list(SIZES)
    xs = [SIZES[s][0] * SIZES[s][1] * 4 for s in sizes]
    for i, op in enumerate(OPS):
        color = f"C{i}"
        ours = [next(r["bulkred_gbps"] for r in rows if r["op"] == op and r["size"] == s) for s in sizes]
        theirs = [next(r["torch_gbps"] for r in rows if r["op"] == op and r["size"] == s) for s in sizes]
        ax.plot(xs, ours, "-o", color=color, label=f"bulkred {op}")
        ax.plot(xs, theirs, "--x", color=color, label=f"torch {op}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, sizes)
    ax.set_xlabel("input size (float32)")
    ax.set_ylabel("GB/s read")
    ax.set_title(f"Whole reductions on {rows[0]['gpu']}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "reductions.png"), dpi=120)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--out", default=os.environ.get("OUT"))
    p.add_argument("--check-only", action="store_true")
    args = p.parse_args()
    if args.check_only:
        return check_all(args)
    rows = bench(args)
    if args.out:
        write_outputs(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
