#!/usr/bin/env python3
"""Which variant serves a norm's backward best (issue 30, section 4): rms_norm_backward and
layer_norm_backward (dx, dweight, dbias) with each candidate variant forced, GB/s of the
three tensors moved (x and dy read, dx written; M x N = 2^28), beside the copy kernel of
the same run, each result checked against torch (float64) and its dweight bits against a
second run.

    python3 tools/diag.py rows_backward [--ns 16384,65536] [--dtypes bfloat16] [--kinds rms_norm_backward]

GPU time: CUDA events around ``--calls`` calls back to back, the median of 5.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

CANDIDATES = {  # N: the variants to force (those whose predicates hold run; the others say why not)
    1024: ("rows_cta",),
    4096: ("rows_cta",),
    8192: ("rows_cta", "rows_cluster"),
    16384: ("rows_cta", "rows_cluster"),
    65536: ("rows_cluster", "rows_slices"),
    262144: ("rows_slices",),
}


def gpu_ms(torch, fn, calls: int) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / calls)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default=",".join(map(str, CANDIDATES)))
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--kinds", default="rms_norm_backward,layer_norm_backward")
    ap.add_argument("--calls", type=int, default=10)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F

    from bulkred_dialect.passes.variants import rows_common
    from bulkred_dialect.row_kernels import kernel_for

    rows_common.NORM_BACKWARD_CTA_N = 16384  # rows_cta forced at 16384 too (the dispatch stops at 8192)

    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print("| kind | dtype | N | variant | GB/s | vs copy | check |")
    print("| --- | --- | ---: | --- | ---: | ---: | --- |")
    for dtype in args.dtypes.split(","):
        dt = getattr(torch, dtype)
        for n in map(int, args.ns.split(",")):
            m = (1 << 28) // n
            g = torch.Generator(device="cuda").manual_seed(n)
            x = torch.randn(m, n, device="cuda", generator=g).to(dt)
            dy = torch.randn(m, n, device="cuda", generator=g).to(dt)
            w = torch.randn(n, device="cuda", generator=g).to(dt)
            y = torch.empty_like(x)
            copy = 2 * m * n * x.element_size() / gpu_ms(torch, lambda: torch.mul(x, 1.0, out=y), args.calls) / 1e6
            moved = 3 * m * n * x.element_size()
            print(f"| copy | {dtype} | {n} | | {copy:,.0f} | 1.00 | |")
            for kind in args.kinds.split(","):
                layer = kind == "layer_norm_backward"
                xd = x.double()
                mean = xd.mean(-1) if layer else None
                xc = xd - mean[:, None] if layer else xd
                rstd = (1 / (xc * xc).mean(-1).add(1e-5).sqrt()).float()
                mean = mean.float() if layer else None
                for variant in CANDIDATES.get(n, (None,)):
                    try:
                        k = kernel_for(kind, None, n, dtype, weight=dtype, dweight=dtype, dbias=dtype if layer else None,
                                       variant=variant)
                    except Exception as e:  # noqa: BLE001 - a variant that does not apply: say why
                        print(f"| {kind} | {dtype} | {n} | {variant} | n/a | | {str(e).splitlines()[0][-90:]} |")
                        continue
                    dx = torch.empty_like(x)
                    dw = torch.empty(n, device="cuda", dtype=dt)
                    db = torch.empty(n, device="cuda", dtype=dt) if layer else None
                    call_args = [x, dx, dy, w] + ([mean] if layer else []) + [rstd, dw] + ([db] if layer else [])
                    try:
                        k(*call_args)
                        torch.cuda.synchronize()
                        dw0 = dw.clone()
                        k(*call_args)
                        same = torch.equal(dw0, dw)
                        xr, wr = x[:256].double().requires_grad_(), w.double().requires_grad_()
                        out = F.rms_norm(xr, (n,), wr, 1e-5) if not layer else F.layer_norm(xr, (n,), wr, None, 1e-5)
                        out.backward(dy[:256].double())
                        err = (dx[:256].double() - xr.grad).abs().max().item() / max(1.0, xr.grad.abs().max().item())
                        ok = ("ok" if err < (5e-5 if dtype == "float32" else 2**-6) else f"dx err {err:.2e}") + \
                            ("" if same else ", dw bits differ")
                        ms = gpu_ms(torch, lambda: k(*call_args), args.calls)
                    except Exception as e:  # noqa: BLE001 - a failed launch: the row says so
                        print(f"| {kind} | {dtype} | {n} | {variant} | failed | | {str(e).splitlines()[0][-90:]} |")
                        continue
                    gbs = moved / ms / 1e6
                    print(f"| {kind} | {dtype} | {n} | {variant} | {gbs:,.0f} | {gbs / copy:.2f} | {ok} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
