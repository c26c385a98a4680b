#!/usr/bin/env python3
"""Which lowering serves each forward row normalization best (issue 30, section 4): per
cell, on the same tensors, GPU time (a CUDA graph of 10 calls, benchmarks/reductions_api.py's
graph_us) of the copy kernel and of the row kernel (``row_kernels.kernel_for``, one
kernel for every M) in each setting:

* ``dispatch``: the variant the dispatch chooses today;
* ``stream``: rows_stream (the row read twice);
* ``cluster``: rows_cluster (the row in registers, the push exchange), where it holds the row;
* ``cluster, a cluster a row``: the same, its grid a cluster per row (not persistent);
* ``bulkS/TxB``: rows_bulk with slices of at most S KiB, CTAs of T threads and B slice
  buffers (the row in shared memory by cp.async.bulk; 2: the next row's copy overlaps) in
  a persistent grid, or ``a unit a row``, ``.minnctapersm`` m (``min``);

each checked against torch in float64 (the largest error over the largest magnitude of
y, ``err``), with ptxas's registers per thread and the launch (threads x cluster).

    python3 tools/diag.py rows_forward [--part long|short|all] [--budget-s 150]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))

import reductions_api as RA

TOTAL = 1 << 28
EPS = 1e-5
LONG = [("softmax", "float32", 262144), ("layer_norm", "float32", 262144), ("softmax", "bfloat16", 262144),
        ("layer_norm", "bfloat16", 262144), ("softmax", "float32", 131072), ("softmax", "bfloat16", 65536),
        ("rms_norm", "bfloat16", 65536), ("layer_norm", "bfloat16", 65536), ("softmax", "bfloat16", 32768),
        ("softmax", "float32", 65536), ("rms_norm", "float32", 262144), ("cross_entropy", "bfloat16", 65536)]
SHORT = [("softmax", "bfloat16", 16384), ("layer_norm", "bfloat16", 16384), ("cross_entropy", "bfloat16", 16384),
         ("log_softmax", "bfloat16", 16384), ("layer_norm", "float32", 16384), ("rms_norm", "bfloat16", 16384),
         ("softmax", "bfloat16", 4096), ("cross_entropy", "bfloat16", 4096), ("layer_norm", "bfloat16", 4096),
         ("softmax", "float32", 4096), ("rms_norm", "float32", 4096), ("softmax", "float32", 1024),
         ("softmax", "bfloat16", 1024), ("cross_entropy", "bfloat16", 1024)]
# rows_bulk settings: (slice KiB, threads, buffers, persistent, .minnctapersm)
BULK_LONG = [(16, 256, 1, False, 2), (32, 512, 1, False, 2), (64, 512, 1, False, 2), (32, 512, 1, False, 3),
             (32, 512, 2, True, 2), (16, 256, 2, True, 2)]
BULK_SHORT = [(32, 512, 2, True, 2), (32, 512, 1, True, 2), (16, 256, 2, True, 2), (16, 256, 1, False, 2),
              (32, 512, 2, True, None)]


def registers(kernel) -> str:
    from bulkred_dialect.backend_ptx import assemble as A

    try:
        nj = A._nvjitlink()
        opts = [b"-arch=sm_90a", b"-Xptxas=-v"]
        h = nj.create(len(opts), opts)
        data = kernel.module.ptx.encode() if isinstance(kernel.module.ptx, str) else kernel.module.ptx
        nj.add_data(h, nj.InputType.PTX, data, len(data), "rows.ptx")
        nj.complete(h)
        log = A._log(nj, h, nj.get_info_log_size, nj.get_info_log)
        found = re.search(r"Used (\d+) registers", log)
        return found.group(1) if found else "?"
    except Exception as e:  # noqa: BLE001 - a diagnostic: say why
        return f"? ({type(e).__name__})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", default="all", choices=("long", "short", "all"))
    ap.add_argument("--budget-s", type=float, default=150.0)
    args = ap.parse_args()
    os.environ["BULKRED_CACHE"] = "0"  # each setting's kernels are its own
    import torch

    from bulkred_dialect import row_kernels
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose
    from bulkred_dialect.passes.variants import rows_bulk, rows_cluster

    t0 = time.time()
    chosen = (dict(rows_cluster.MEASURED), list(rows_bulk.CHOSEN))  # the dispatch's today
    wide = ({"float32": 1 << 30, "bfloat16": 1 << 30}, [(d, None, 1, 1 << 30, None) for d in ("float32", "bfloat16")])
    cells = (LONG if args.part != "short" else []) + (SHORT if args.part != "long" else [])
    print("| op | dtype | N | copy | setting | GB/s | /copy | regs | threads x cluster | err |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: |")
    for kind, dtype, n in cells:
        if time.time() - t0 > args.budget_s:
            print(f"| {kind} | {dtype} | {n} | skipped: budget |")
            continue
        m = TOTAL // n
        dt = getattr(torch, dtype)
        x = torch.randn(m, n, device="cuda", dtype=torch.float32).mul_(2).add_(0.3).to(dt)
        y = torch.empty_like(x)
        w = torch.randn(n, device="cuda", dtype=torch.float32).to(dt)
        bvec = torch.randn(n, device="cuda", dtype=torch.float32).to(dt)
        xd = x.double()
        kw: dict = {}
        extra: list = []
        if kind == "softmax":
            ref = torch.softmax(xd, -1)
        elif kind == "rms_norm":
            kw, extra = {"weight": dtype, "eps": EPS}, [w]
            ref = torch.nn.functional.rms_norm(xd, (n,), w.double(), EPS)
        elif kind == "log_softmax":
            ref = torch.log_softmax(xd, -1)
        elif kind == "layer_norm":
            kw, extra = {"weight": dtype, "bias": dtype, "eps": EPS}, [w, bvec]
            ref = torch.nn.functional.layer_norm(xd, (n,), w.double(), bvec.double(), EPS)
        else:
            target = torch.randint(0, n, (m,), device="cuda")
            loss = torch.empty(m, device="cuda")
            kw = {"ignore_index": -100}
            ref = torch.nn.functional.cross_entropy(xd, target, reduction="none")
        nbytes = (2 if kind != "cross_entropy" else 1) * x.numel() * x.element_size()
        copy = RA.graph_us(torch, lambda _: torch.mul(x, 1.0, out=y), [None], 10, 5)
        copy_gbs = 2 * x.numel() * x.element_size() / copy / 1e3
        settings: list[tuple[str, str | None, dict]] = [("dispatch", None, {})]
        if n > 16384:
            settings += [("stream", "rows_stream", {}), ("cluster", "rows_cluster", {}),
                         ("cluster, a cluster a row", "rows_cluster", {"CTAS_PER_SM": 1 << 20})]
        settings += [(f"bulk{s}/{t}x{nb}{'' if per else ', a unit a row'}, min {mc}", "rows_bulk",
                      {"SLICE_BYTES": s * 1024, "BLOCK": t, "BUFFERS": nb, "PERSISTENT": per, "MIN_CTAS": mc})
                     for s, t, nb, per, mc in (BULK_LONG if n > 16384 else BULK_SHORT)]
        for name, variant, consts in settings:
            mod = rows_cluster if "CTAS_PER_SM" in consts else rows_bulk
            saved = {k: getattr(mod, k) for k in consts}
            for k, v in consts.items():
                setattr(mod, k, v)
            measured, picked = chosen if variant is None else wide  # a forced variant must apply
            rows_cluster.MEASURED.clear()
            rows_cluster.MEASURED.update(measured)
            rows_bulk.CHOSEN[:] = picked
            row_kernels._KERNELS.clear()
            try:
                k = row_kernels.kernel_for(kind, None, n, dtype, variant=variant, **kw)
                if kind == "cross_entropy":
                    call = lambda k=k: k(x, target, loss)  # noqa: E731
                else:
                    call = lambda k=k: k(x, y, *extra)  # noqa: E731
                call()
                torch.cuda.synchronize()
                got = loss if kind == "cross_entropy" else y
                err = ((got.double() - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item()
                us = RA.graph_us(torch, lambda _, c=call: c(), [None], 10, 5)
                gbs = nbytes / us / 1e3
                launch = k.signature.launch
                if variant is None:
                    op = next(o for o in row_kernels.module(kind, None, n, dtype, **kw).walk()
                              if o.name == "bulkred.normalize_rows")
                    name = f"dispatch: {choose(op, Target.parse('sm_90a')).name}"
                print(f"| {kind} | {dtype} | {n} | {copy_gbs:,.0f} | {name} | {gbs:,.0f} | {gbs / copy_gbs:.3f} | "
                      f"{registers(k)} | {launch.block[0]} x {launch.cluster[0]} | {err:.1e} |", flush=True)
            except Exception as e:  # noqa: BLE001 - the row says why
                print(f"| {kind} | {dtype} | {n} | {copy_gbs:,.0f} | {name} | failed: {type(e).__name__}: "
                      f"{str(e).splitlines()[0][:120]} |", flush=True)
            finally:
                for k2, v in saved.items():
                    setattr(mod, k2, v)
        del x, y, xd, ref
        torch.cuda.empty_cache()
    print(f"probe time: {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
