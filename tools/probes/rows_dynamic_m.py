#!/usr/bin/env python3
"""Whether the row kernels' dynamic M costs speed (issue 30's forward, GPU run of seed
301131: bulkred's forward GB/s below the static-M run of docs/rows_h200.log): per cell,
on the same tensors, in one process, alternating, GPU time of

* ``copy``: ``torch.mul(x, 1.0, out=y)``;
* ``static``: ``row_kernels.kernel_for(kind, M, N, ...)`` (M in the kernel, its grid
  recorded), y preallocated;
* ``dynamic``: ``kernel_for(kind, None, N, ...)`` (M a parameter, the grid from
  ``bulkred.grid_rows`` at the launch), y preallocated;
* ``function``: ``bulkred.<kind>(x, ...)`` (the table's function: its key, y made by
  ``torch.empty``, the dynamic kernel);
* ``resident``: the dynamic kernel launched with as many CTAs as fit on the GPU at once
  (by ptxas's registers: the grid in one wave; its rows loop strides by ``%nctaid``, so
  any grid computes the same rows);

each a CUDA graph of 10 calls replayed (benchmarks/reductions_api.py's graph_us), and
the registers ptxas gave each kernel (nvJitLink ``-v`` on this machine) with the CTAs
per SM they allow against the grid's.

    python3 tools/diag.py rows_dynamic_m [--quick]     # on the GPU machine (.whl carried)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))

import reductions_api as RA

CELLS = [("softmax", 1024, "float32"), ("softmax", 4096, "float32"), ("softmax", 16384, "float32"),
         ("rms_norm", 4096, "float32"), ("softmax", 1024, "bfloat16"), ("softmax", 4096, "bfloat16"),
         ("rms_norm", 1024, "bfloat16"), ("layer_norm", 4096, "bfloat16")]
QUICK = [("softmax", 1024, "float32"), ("softmax", 4096, "float32"), ("softmax", 4096, "bfloat16")]
TOTAL = 1 << 28
EPS = 1e-6


def registers(kernel) -> str:
    """ptxas's 'Used N registers' line for the kernel's PTX on this machine."""
    from bulkred_dialect.backend_ptx.assemble import registers_used

    try:
        n = registers_used(kernel.module.ptx, "sm_90a")
        return "?" if n is None else str(n)
    except Exception as e:  # noqa: BLE001 - a diagnostic: say why
        return f"? ({type(e).__name__})"


def resident_ctas(regs: str, block: int, sms: int) -> int | None:
    """CTAs that fit at once on ``sms`` Hopper multiprocessors (65536 registers, 2048
    threads, 32 CTAs each; registers allocated per warp in units of 256)."""
    if not regs.isdigit():
        return None
    per_warp = -(-int(regs) * 32 // 256) * 256
    return sms * min(32, 2048 // block, 65536 // (per_warp * (block // 32)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect.row_kernels import kernel_for

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("| op | dtype | N | M | copy | static | dynamic | function | resident | dynamic/static | function/dynamic | "
          "resident/dynamic | regs s/d | block | grid | resident grid |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    for kind, n, dtype in QUICK if args.quick else CELLS:
        m = TOTAL // n
        dt = getattr(torch, dtype)
        x = torch.randn(m, n, device="cuda", dtype=dt)
        y = torch.empty_like(x)
        w = torch.randn(n, device="cuda", dtype=dt)
        norm = kind != "softmax"
        kw = {"weight": dtype, "eps": EPS} if norm else {}
        if kind == "layer_norm":
            kw["bias"] = dtype
        extra = [w] * (1 + (kind == "layer_norm")) if norm else []
        ks = kernel_for(kind, m, n, dtype, **kw)
        kd = kernel_for(kind, None, n, dtype, **kw)
        fn = getattr(bulkred, kind)
        if kind == "softmax":
            func = lambda: fn(x, -1)  # noqa: E731
        elif kind == "rms_norm":
            func = lambda: fn(x, (n,), w, EPS)  # noqa: E731
        else:
            func = lambda: fn(x, (n,), w, w, EPS)  # noqa: E731
        sig = kd.signature
        block = sig.launch.block[0]
        regs = (registers(ks), registers(kd))
        res = resident_ctas(regs[1], block, sms) or sig.grid_for([m])
        calls = {
            "copy": lambda: torch.mul(x, 1.0, out=y),
            "static": lambda: ks(x, y, *extra),
            "dynamic": lambda: kd(x, y, *extra),
            "function": func,
            "resident": lambda: kd(x, y, *extra, grid=res),
        }
        ref = func()
        for name in ("static", "dynamic", "resident"):
            calls[name]()
            torch.cuda.synchronize()
            assert torch.equal(y, ref), f"{kind} {n} {dtype}: {name} differs from the function"
        times: dict[str, list[float]] = {k: [] for k in calls}
        order = list(calls)
        for r in range(args.rounds):
            for name in (order if r % 2 == 0 else order[::-1]):
                times[name].append(RA.graph_us(torch, lambda _, f=calls[name]: f(), [None], 10, 5))
        gbs = {k: 2 * x.numel() * x.element_size() / statistics.median(v) / 1e3 for k, v in times.items()}
        print(f"| {kind} | {dtype} | {n} | {m} | {gbs['copy']:,.0f} | {gbs['static']:,.0f} | {gbs['dynamic']:,.0f} | "
              f"{gbs['function']:,.0f} | {gbs['resident']:,.0f} | {gbs['dynamic'] / gbs['static']:.3f} | "
              f"{gbs['function'] / gbs['dynamic']:.3f} | {gbs['resident'] / gbs['dynamic']:.3f} | {regs[0]}/{regs[1]} | "
              f"{block} | {sig.grid_for([m])} | {res} |", flush=True)
        del x, y, ref
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
