#!/usr/bin/env python3
"""Kernel-level probe of the fused lowerings (issue 17) on the GPU, without the Python
API: each fused reduction built with the builder, compiled for the GPU's target,
launched on torch tensors, checked against torch once, then timed against torch's
forms (events around ``--calls`` back-to-back calls, median of ``--repeats``).

    python3 tools/diag.py fused_kernels [--sizes 64M,1G] [--dtypes float32,bfloat16]

A development tool (benchmarks/fused.py measures the API with both timings)."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import torch

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.runtime import compile_tile_module, current_arch

CASES = {
    # name: (kind, options, out is index, has aux, torch forms)
    "absmax": ("max", {"prologue": ["abs"]}, False, False),
    "l2": ("sum", {"prologue": ["square"], "epilogue": ["sqrt"]}, False, False),
    "argmax": ("argmax", {}, True, False),
    "var_mean": ("var", {"correction": 1}, False, True),
    "logsumexp": ("logsumexp", {}, False, False),
}


def torch_forms(name: str, x: torch.Tensor, dim):
    d = {} if dim is None else {"dim": dim}
    if name == "absmax":
        return {"abs().amax()": lambda: x.abs().amax(**d), "vector_norm(inf)": lambda: torch.linalg.vector_norm(x, math.inf, **d)}
    if name == "l2":
        return {"vector_norm": lambda: torch.linalg.vector_norm(x, **d)}
    if name == "argmax":
        return {"argmax": lambda: torch.argmax(x, **d)}
    if name == "var_mean":
        return {"var_mean": lambda: torch.var_mean(x, correction=1, **d)}
    return {"logsumexp": lambda: torch.logsumexp(x, dim=dim if dim is not None else tuple(range(x.dim())))}


def timed(fn, calls: int, repeats: int) -> float:
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / calls)
    return statistics.median(ts)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="64M,1G")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--forms", default="whole,last,first")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=400)
    a = ap.parse_args()
    arch = current_arch()
    start = time.time()
    print(f"arch {arch}, {torch.cuda.get_device_name()}")
    print("| case | dtype | size | form | check | bulkred us | GB/s | torch best us | torch form | x best |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    bad = 0
    for size in a.sizes.split(","):
        nbytes = int(size[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[size[-1]]
        for dtn in a.dtypes.split(","):
            dt = getattr(torch, dtn)
            n = nbytes // dt.itemsize
            for form in a.forms.split(","):
                shape = [n] if form == "whole" else [n // 4096, 4096]
                axes = None if form == "whole" else [1] if form == "last" else [0]
                dim = None if form == "whole" else (1 if form == "last" else 0)
                x = torch.randn(shape, device="cuda", dtype=torch.float32).to(dt)
                for name in a.cases.split(","):
                    if time.time() - start > a.budget_s:
                        print(f"(budget: stopped before {name} {dtn} {size} {form})")
                        return 1 if bad else 0
                    kind, opts, index, aux = CASES[name]
                    kept = [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]
                    with T.kernel("k") as k:
                        xp = k.param("x", shape, dtn)
                        y = k.param("y", kept, "int64" if index else dtn)
                        ap_ = k.param("a", kept, dtn) if aux else None
                        T.reduce(kind, y, xp, axes=axes, aux=ap_, **opts)
                    try:
                        kern = compile_tile_module(k.module(), arch).kernel("k")
                    except Exception as e:  # noqa: BLE001
                        print(f"| {name} | {dtn} | {size} | {form} | compile error: {str(e)[:120]} |")
                        bad += 1
                        continue
                    out = torch.empty(kept, device="cuda", dtype=torch.int64 if index else dt)
                    auxt = torch.empty(kept, device="cuda", dtype=dt) if aux else None
                    args = (x, out) + ((auxt,) if aux else ())
                    kern(*args)
                    torch.cuda.synchronize()
                    forms = torch_forms(name, x, dim)
                    ref = next(iter(forms.values()))()
                    if name == "var_mean":
                        ok = torch.allclose(out.float().reshape(-1), ref[0].float().reshape(-1), rtol=2e-2 if dt != torch.float32 else 1e-4) and torch.allclose(auxt.float().reshape(-1), ref[1].float().reshape(-1), rtol=2e-2, atol=1e-3)
                    elif name == "argmax":
                        ok = torch.equal(out.reshape(-1), ref.reshape(-1))
                    else:
                        tol = 1e-4 if dt == torch.float32 else 2e-2
                        ok = torch.allclose(out.float().reshape(-1), ref.float().reshape(-1), rtol=tol, atol=tol)
                    bad += not ok
                    us = timed(lambda: kern(*args), a.calls, a.repeats)
                    tus = {f: timed(fn, a.calls, a.repeats) for f, fn in forms.items()}
                    best = min(tus, key=tus.get)
                    print(f"| {name} | {dtn} | {size} | {form} | {'ok' if ok else 'WRONG'} | {us:.1f} | {nbytes / us / 1e3:.0f} | "
                          f"{tus[best]:.1f} | {best} | {tus[best] / us:.2f} |", flush=True)
                del x
                torch.cuda.empty_cache()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
