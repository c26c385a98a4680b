#!/usr/bin/env python3
"""Which lowering serves a small or odd reduction best (issue 16's speed rows): each
case's kernel built with each candidate variant (or a grid-sizing knob patched), timed
beside torch and the API call, in one process on the GPU.

Two timings per row, as benchmarks/reductions_api.py takes them (its graph_us and
call_us): GPU time per call (a CUDA graph of many calls, replayed) and per call (events
around one call, the result allocated as the API does). Every result is checked against
torch before timing.

    python3 tools/diag.py variants [--quick]       # on the GPU machine (.whl carried)

A diagnostic: its configurations are built here, outside the compile cache
(``compile_tile_module`` directly), so patched module constants take effect.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import replace

os.environ["BULKRED_CACHE"] = "0"  # built here, each time: the patched constants take effect
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))

import reductions_api as bench

# (name, shape, axis, dtype, torch fn, configurations): a configuration is
# (label, forced variant or None, {module.attr: value} patches)
FULL = "bulkred_dialect.passes.variants.grid_full"
BULK = "bulkred_dialect.passes.variants.grid_split_bulk"
DET = "bulkred_dialect.passes.variants.grid_split_det"
CASES = [
    *[
        (f"colsum {m}x{n}", (m, n), 0, "float32", lambda t, x: t.sum(x, 0),
         [("split_bulk", "grid_split_bulk", {f"{BULK}.MIN_BYTES": 0}), ("split_det", "grid_split_det", {}),
          ("split_det, no one-CTA", "grid_split_det", {f"{DET}.ONE_CTA_BYTES": 0})])
        for m, n in [(32, 32), (128, 128), (64, 256), (512, 512), (1024, 1024)]
    ],
    *[
        (f"sum {dt} {n}", (n,), None, dt, lambda t, x: t.sum(x),
         [("full", None, {}), ("full, no one-CTA", None, {f"{FULL}.ONE_CTA_BYTES": 0}),
          ("full u2, no one-CTA", None, {f"{FULL}.UNROLL": 2, f"{FULL}.ONE_CTA_BYTES": 0})])
        for dt, n in [("float32", 16384), ("float64", 8192), ("float16", 32768), ("float32", 65536)]
    ],
]


@contextlib.contextmanager
def patched(patches: dict):
    """Module constants (``"package.module.NAME": value``) set for the block (the kernels
    built inside it see them): unittest.mock.patch of each."""
    from unittest import mock

    with contextlib.ExitStack() as stack:
        for k, v in patches.items():
            stack.enter_context(mock.patch(k, v))
        yield


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import api
    from bulkred_dialect.backend_ptx.device import current_arch
    from bulkred_dialect.compiler import compile_tile_module

    arch = current_arch()
    calls, replays, repeat = (30, 5, 40) if a.quick else (50, 7, 100)
    print(f"GPU: {torch.cuda.get_device_name()}  arch {arch}")
    print("| case | config | variant | GPU us | torch GPU us | torch/GPU | call us | torch call us | torch/call | check |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for name, shape, axis, dt, tfn, configs in CASES:
        nbytes = torch.empty(0, dtype=getattr(torch, dt)).element_size() * int(torch.tensor(shape).prod())
        copies = max(2, min(64, bench.L2_ROTATE // nbytes))
        g = torch.Generator(device="cuda").manual_seed(7)
        xs = [torch.randn(shape, device="cuda", dtype=getattr(torch, dt), generator=g) for _ in range(copies)]
        want = tfn(torch, xs[0].double())
        def tf(x, tfn=tfn):
            return tfn(torch, x)

        t_gpu = bench.graph_us(torch, tf, xs, calls, replays)
        t_call = bench.call_us(torch, tf, xs, repeat)
        p = api._as_plan("sum", tuple(shape), dt, axis, None, None)
        rows = [("api", None, None)]
        for label, variant, patches in configs:
            with patched(patches):
                q = replace(p, variant=variant)
                mod = compile_tile_module(api.module_of(q), arch)
            rows.append((label, variant, mod.kernel(q.kernel_name)))
        for label, variant, kernel in rows:
            if kernel is None:
                def fn(x, axis=axis):
                    return bulkred.sum(x, axis=axis)

                chosen = "(dispatch)"
            else:
                ks, rs = p.kernel_shape, p.result_shape

                def fn(x, kernel=kernel, ks=ks, rs=rs, dst=getattr(torch, p.dst)):
                    out = torch.empty(ks, device="cuda", dtype=dst)
                    kernel(x, out)
                    return out.view(rs)

                chosen = variant or "(dispatch)"
            try:
                got = fn(xs[0])
                torch.cuda.synchronize()
                err = float((got.double() - want).abs().max() / (xs[0].double().abs().sum() + 1e-30))
                ok = "ok" if err < 1e-5 else f"WRONG err={err:.2e}"
                gu = bench.graph_us(torch, fn, xs, calls, replays)
                cu = bench.call_us(torch, fn, xs, repeat)
                print(f"| {name} | {label} | {chosen} | {gu:.2f} | {t_gpu:.2f} | {t_gpu / gu:.2f} | {cu:.1f} | {t_call:.1f} | {t_call / cu:.2f} | {ok} |", flush=True)
            except Exception as e:
                print(f"| {name} | {label} | {chosen} | error: {bench._line(e)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
