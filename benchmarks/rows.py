"""Row normalizations on the GPU against the same run's copy kernel and torch eager
(docs/rows.md): softmax, log_softmax, rms_norm, layer_norm and add_rms_norm forward through
bulkred_dialect/rows.py, M x N = 2^28 elements, N = 1024, 4096, 16384, 65536, float32 and
bfloat16; and small batches (M = 1, 8, 64 rows of 4096).

Model bandwidth: x read once and y written once (2 * M * N * itemsize bytes; the weight
and bias are not counted); add_rms_norm reads x and the residual and writes y and
x + residual (4 * M * N * itemsize; torch eager: ``h = x + r`` then ``rms_norm(h)``);
cross_entropy (the mean loss) reads x once (M * N * itemsize, the "copy" column then the
copy kernel's bytes per second too); softmax_backward moves three tensors (y and dy read,
dx written; torch: ``torch._softmax_backward_data``). Timings, each a median (benchmarks/reductions_api.py's
helpers): GPU time per call from a CUDA graph of ``calls`` calls, replayed; and per call
as a Python user pays it (events around one call, the GPU idle before it). Each cell
also checks its result against torch (``ok`` or ``WRONG``).

``--parts`` picks the tables: ``main`` (the above), ``small`` (M = 1, 8, 64), and two that
choose the variants' settings by measurement, each setting compiling its own kernels (the
compile cache off): ``bf16`` (bfloat16 rows in 16-byte vectors of 8, rows_common.WIDE_BF16,
against 8-byte vectors of 4) and ``variants`` (the variants forced where two apply:
rows_cta against rows_cluster at 8192 and 16384, rows_cluster against rows_stream at
65536 and 131072, and clusters of 16 against rows_stream at 262144), ``values`` (the
float32 values a thread holds, rows_common.MAX_VALUES 16, 32, 64, in rows_cta (the
last with 64-thread CTAs allowed); a cluster
CTA's share, rows_cluster.SLICE 8192 against 16384).

    python3 benchmarks/rows.py --out /tmp/rows_bench [--kinds softmax,rms_norm] [--ns 4096] [--parts main,small]
    bash tools/gpu.sh tests:rows bench:rows       (BENCH_ARGS="--parts bf16,variants")
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("reductions_api", os.path.join(_HERE, "reductions_api.py"))
RA = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["reductions_api"] = RA
_spec.loader.exec_module(RA)  # type: ignore[union-attr]

KINDS = ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy", "softmax_backward")
NS = (1024, 4096, 16384, 65536)
DTYPES = ("float32", "bfloat16")
TOTAL = 1 << 28


def _fns(torch, rows, kind: str, n: int, dt):
    """(ours, torch eager) of ``kind`` for rows of ``n`` (weight and bias of x's dtype)."""
    import torch.nn.functional as F

    w = torch.randn(n, device="cuda").to(dt)
    b = torch.randn(n, device="cuda").to(dt)
    if kind == "softmax":
        return (lambda x: rows.softmax(x)), (lambda x: torch.softmax(x, -1))
    if kind == "log_softmax":
        return (lambda x: rows.log_softmax(x)), (lambda x: torch.log_softmax(x, -1))
    if kind == "rms_norm":
        return (lambda x: rows.rms_norm(x, (n,), w, 1e-6)), (lambda x: F.rms_norm(x, (n,), w, 1e-6))
    if kind == "softmax_backward":
        grads = {}

        def dy(x):
            t = grads.get(x.shape)
            if t is None:
                t = grads[x.shape] = torch.randn_like(x)
            return t

        return (lambda x: rows.softmax_backward(dy(x), x)), (lambda x: torch._softmax_backward_data(dy(x), x, -1, x.dtype))
    if kind == "cross_entropy":
        tgt = {}

        def target(x):
            t = tgt.get(x.shape[0])
            if t is None:
                t = tgt[x.shape[0]] = torch.randint(0, n, (x.shape[0],), device="cuda")
            return t

        return (lambda x: rows.cross_entropy(x, target(x))), (lambda x: F.cross_entropy(x, target(x)))
    if kind == "add_rms_norm":
        res = {}

        def residual(x):
            r = res.get(x.shape)
            if r is None:
                r = res[x.shape] = torch.randn_like(x)
            return r

        def eager(x):
            h = x + residual(x)
            return F.rms_norm(h, (n,), w, 1e-6), h

        return (lambda x: rows.add_rms_norm(x, residual(x), w, 1e-6)), eager
    return (lambda x: rows.layer_norm(x, (n,), w, b, 1e-5)), (lambda x: F.layer_norm(x, (n,), w, b, 1e-5))


def _agree(torch, ours, theirs, x) -> str:
    a, b = ours(x[:64]), theirs(x[:64])
    if isinstance(a, tuple):  # add_rms_norm: (y, h)
        if not torch.equal(a[1], b[1]):
            return "WRONG h"
        a, b = a[0], b[0]
    a, b = a.double(), b.double()
    if a.dim() == 0:  # cross_entropy's mean over these 64 rows
        err = (a - b).abs().item() / max(1.0, b.abs().item())
        return "ok" if err <= (2e-5 if x.dtype == torch.float32 else 1e-2) else f"WRONG err={err:.1e}"
    err = (a - b).abs().max().item() / max(1.0, b.abs().max().item())
    tol = 2e-5 if x.dtype == torch.float32 else 2.0**-7
    return "ok" if err <= tol else f"WRONG err={err:.1e}"


def _variant(kind: str, n: int, dtype: str) -> str:
    """The variant the dispatcher chooses for rows of ``n`` (it does not depend on M)."""
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.ops.tile import NormalizeRowsOp
    from bulkred_dialect.passes.dispatch import choose
    from bulkred_dialect.row_kernels import module

    norm = kind in ("rms_norm", "layer_norm", "add_rms_norm")
    op = next(o for o in module(kind, 1, n, dtype, eps=1e-5 if norm else None).walk() if isinstance(o, NormalizeRowsOp))
    return choose(op, Target.parse("sm_90a")).name


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/rows_bench")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--ns", default=",".join(map(str, NS)))
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--replays", type=int, default=5)
    ap.add_argument("--parts", default="main,small")
    args = ap.parse_args()
    parts = args.parts.split(",")
    import torch

    from bulkred_dialect import rows
    from bulkred_dialect import row_kernels

    os.makedirs(args.out, exist_ok=True)
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    results = []
    if "main" in parts:
        _main(torch, rows, args, results)
    if "small" in parts:
        _small(torch, rows, args, results)
    if any(t in parts for t in ("bf16", "variants", "values")):
        _tuning(torch, rows, parts)
    with open(os.path.join(args.out, "rows.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": results}, f, indent=1)
    return 0


def _main(torch, rows, args, results: list) -> None:
    print("| kind | dtype | N | M | variant | copy GB/s | bulkred GB/s | torch GB/s | vs copy | vs torch | bulkred per call us | torch per call us | check |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for dtype in args.dtypes.split(","):
        dt = getattr(torch, dtype)
        for n in map(int, args.ns.split(",")):
            m = TOTAL // n
            x = torch.randn(m, n, device="cuda").to(dt)
            y = torch.empty_like(x)
            copy_bytes = 2 * x.numel() * x.element_size()
            copy_us = RA.graph_us(torch, lambda t: torch.mul(t, 1.0, out=y), [x], args.calls, args.replays)
            for kind in args.kinds.split(","):
                nbytes = copy_bytes * {"add_rms_norm": 2.0, "cross_entropy": 0.5, "softmax_backward": 1.5}.get(kind, 1.0)
                ours, theirs = _fns(torch, rows, kind, n, dt)
                row = {"kind": kind, "dtype": dtype, "n": n, "m": m, "variant": _variant(kind, n, dtype)}
                try:
                    row["check"] = _agree(torch, ours, theirs, x)
                    ours_us = RA.graph_us(torch, ours, [x], args.calls, args.replays)
                    torch_us = RA.graph_us(torch, theirs, [x], args.calls, args.replays)
                    ours_call, torch_call = RA.call_pair_us(torch, ours, theirs, [x], 5)
                except Exception as e:  # noqa: BLE001 - the row says why
                    row["check"] = f"FAILED: {str(e).splitlines()[0][:120]}"
                    print(f"| {kind} | {dtype} | {n} | {m} | {row['variant']} | | | | | | | | {row['check']} |")
                    results.append(row)
                    continue
                row.update(copy_gbs=copy_bytes / copy_us / 1e3, gbs=nbytes / ours_us / 1e3, torch_gbs=nbytes / torch_us / 1e3,
                           us=ours_us, torch_us=torch_us, call_us=ours_call, torch_call_us=torch_call)
                results.append(row)
                print(f"| {kind} | {dtype} | {n} | {m} | {row['variant']} | {row['copy_gbs']:,.0f} | {row['gbs']:,.0f} | "
                      f"{row['torch_gbs']:,.0f} | {row['gbs'] / row['copy_gbs']:.2f} | {row['gbs'] / row['torch_gbs']:.2f} | "
                      f"{ours_call:,.1f} | {torch_call:,.1f} | {row['check']} |", flush=True)
            del x, y
            torch.cuda.empty_cache()


def _small(torch, rows, args, results: list) -> None:
    print()
    print("| kind | dtype | M x 4096 | bulkred GPU us | torch GPU us | bulkred per call us | torch per call us |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for dtype in args.dtypes.split(","):
        dt = getattr(torch, dtype)
        for kind in ("softmax", "rms_norm"):
            ours, theirs = _fns(torch, rows, kind, 4096, dt)
            for m in (1, 8, 64):
                xs = [torch.randn(m, 4096, device="cuda").to(dt) for _ in range(4)]
                g_ours = RA.graph_us(torch, ours, xs, 50, args.replays)
                g_torch = RA.graph_us(torch, theirs, xs, 50, args.replays)
                c_ours, c_torch = RA.call_pair_us(torch, ours, theirs, xs, 50)
                results.append({"kind": kind, "dtype": dtype, "n": 4096, "m": m, "small": True, "us": g_ours,
                                "torch_us": g_torch, "call_us": c_ours, "torch_call_us": c_torch})
                print(f"| {kind} | {dtype} | {m} | {g_ours:.1f} | {g_torch:.1f} | {c_ours:.1f} | {c_torch:.1f} |", flush=True)


def _cell(torch, rows, kind: str, n: int, dtype: str, variant: str | None = None) -> float:
    """GB/s of one tuning cell (M x N = 2^28)."""
    m = TOTAL // n
    x = torch.randn(m, n, device="cuda").to(getattr(torch, dtype))
    w = torch.randn(n, device="cuda").to(x.dtype)
    if kind == "softmax":
        fn = lambda t: rows.softmax(t, variant=variant)  # noqa: E731
    elif kind == "layer_norm":
        fn = lambda t: rows.layer_norm(t, (n,), w, w, 1e-5, variant=variant)  # noqa: E731
    else:
        fn = lambda t: rows.rms_norm(t, (n,), w, 1e-6, variant=variant)  # noqa: E731
    us = RA.graph_us(torch, fn, [x], 10, 5)
    return 2 * x.numel() * x.element_size() / us / 1e3


def _tuning(torch, rows, parts: list[str]) -> None:
    os.environ["BULKRED_CACHE"] = "0"  # a setting's kernels are its own (the cache keys the module's text)
    from bulkred_dialect.passes.variants import rows_cluster, rows_common

    if "bf16" in parts:
        print()
        print("| kind | N | 16-byte bf16 GB/s | 8-byte bf16 GB/s |")
        print("| --- | ---: | ---: | ---: |")
        for kind in ("softmax", "rms_norm"):
            for n in (1024, 4096, 16384, 65536):
                got = []
                for wide in (True, False):
                    rows_common.WIDE_BF16 = wide
                    row_kernels._KERNELS.clear()
                    got.append(_cell(torch, rows, kind, n, "bfloat16"))
                print(f"| {kind} | {n} | {got[0]:,.0f} | {got[1]:,.0f} |", flush=True)
        rows_common.WIDE_BF16 = True
        row_kernels._KERNELS.clear()
    if "values" in parts:
        from bulkred_dialect.passes.variants import rows_cta

        print()
        print("| kind | dtype | N | setting | GB/s |")
        print("| --- | --- | ---: | --- | ---: |")
        for kind, dtype, n, variant in (("softmax", "bfloat16", 4096, "rows_cta"), ("layer_norm", "bfloat16", 16384, "rows_cta"),
                                        ("softmax", "float32", 4096, "rows_cta")):
            for least, values in ((128, 16), (128, 32), (64, 64)):
                rows_common.MAX_VALUES, rows_cta.MIN_BLOCK = values, least
                row_kernels._KERNELS.clear()
                try:
                    gbs = f"{_cell(torch, rows, kind, n, dtype, variant):,.0f}"
                except Exception as e:  # noqa: BLE001 - the row says why
                    gbs = f"failed: {str(e).splitlines()[0][:80]}"
                print(f"| {kind} | {dtype} | {n} | MAX_VALUES {values}, MIN_BLOCK {least} | {gbs} |", flush=True)
        rows_common.MAX_VALUES, rows_cta.MIN_BLOCK = 32, 128
        for kind, dtype in (("softmax", "bfloat16"), ("layer_norm", "bfloat16"), ("softmax", "float32")):
            for slice_ in (8192, 16384):
                rows_cluster.SLICE = slice_
                row_kernels._KERNELS.clear()
                print(f"| {kind} | {dtype} | 65536 | SLICE {slice_} | {_cell(torch, rows, kind, 65536, dtype, 'rows_cluster'):,.0f} |", flush=True)
        rows_cluster.SLICE = 8192
        row_kernels._KERNELS.clear()
        del rows_cta
    if "variants" in parts:
        print()
        print("| kind | dtype | N | variant | GB/s |")
        print("| --- | --- | ---: | --- | ---: |")
        for n, variants in ((8192, ("rows_cta", "rows_cluster")), (16384, ("rows_cta", "rows_cluster")),
                            (65536, ("rows_cluster", "rows_stream")), (131072, ("rows_cluster", "rows_stream"))):
            for dtype in ("float32", "bfloat16"):
                for v in variants:
                    try:
                        gbs = f"{_cell(torch, rows, 'softmax', n, dtype, v):,.0f}"
                    except Exception as e:  # noqa: BLE001 - the row says why
                        gbs = f"failed: {str(e).splitlines()[0][:80]}"
                    print(f"| softmax | {dtype} | {n} | {v} | {gbs} |", flush=True)
        # clusters of 16 (the non-portable size) for rows of 262144
        for dtype in ("float32", "bfloat16"):
            for v, size in (("rows_cluster", 16), ("rows_stream", 8)):
                rows_cluster.MAX_CLUSTER = size
                row_kernels._KERNELS.clear()
                try:
                    gbs = f"{_cell(torch, rows, 'softmax', 262144, dtype, v):,.0f}"
                except Exception as e:  # noqa: BLE001 - the row says why
                    gbs = f"failed: {str(e).splitlines()[0][:80]}"
                print(f"| softmax | {dtype} | 262144 | {v}{' of 16' if v == 'rows_cluster' else ''} | {gbs} |", flush=True)
        rows_cluster.MAX_CLUSTER = 8
        row_kernels._KERNELS.clear()


if __name__ == "__main__":
    raise SystemExit(main())
