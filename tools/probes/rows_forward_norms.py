#!/usr/bin/env python3
"""The forward settings for the slow cells of issue 30, section 4 (add_rms_norm past 16k,
layer_norm, softmax and log_softmax at 4k to 16k, cross_entropy): per cell, on the same
tensors (fresh random data), GPU time (a CUDA graph of 10 calls, benchmarks/reductions_api.py's
graph_us) of the copy kernel and of the row kernel (``row_kernels.module`` compiled, one kernel
for every M) in each setting (all off by default):

* ``dispatch: V``: the variant the dispatch chooses today, as it is;
* ``V fast_exp``: rows_common.FAST_EXP (softmax, log_softmax, cross_entropy: Quack's
  ``ex2.approx.ftz(fma(x, log2e, -m log2e))``; log_softmax's y ``x - (max + log sum)``);
* ``V ln_fast``: rows_common.LAYER_NORM_FAST (the squared deviations by FFMA chains, y
  from the deviations already computed);
* ``V, K values``: rows_cta.VALUES = K (at most K float32 values a thread: more threads a row);
* ``... pipelined``: float32 rows of rows_cta with rows_common.FORWARD_PIPELINE (bfloat16's to 16384
  and float32's to 1024 are pipelined by default: rows_common.FORWARD_MEASURED);
* ``..., min K CTAs/SM``: rows_cta / rows_warp.MIN_CTAS = K (``.minnctapersm``: ptxas keeps the
  registers low enough for K CTAs a multiprocessor; K one more than the variant's registers hold
  today), with the cell's fast_exp or ln_fast (add_rms_norm: the variant alone);
* ``rows_cluster``: add_rms_norm in a cluster's registers (rows_common.ADD_RMS_CLUSTER_N),
  ``, 1 CTA/SM``: rows_cluster.CTAS_PER_SM = 1; ``, min 2 CTAs/SM``: rows_common.ADD_RMS_CLUSTER_MIN_CTAS = 2
  (``.minnctapersm``); ``rows_stream, K CTAs/SM``: rows_stream.CTAS_PER_SM;
* cross_entropy: ``mean in the kernel`` (reduction="mean", what the library runs for M <=
  row_functions.REDUCED_ROWS_MAX) and ``+ torch mean`` (the losses' kernel, then
  ``loss.mean()``: what it runs past that), ``mean in the kernel, CTA partials``
  (rows_lower.LOSS_PARTIALS: each CTA's pair of its own rows, the last CTA adds the
  pairs); the other settings are reduction="none";
* where the dispatch chooses rows_bulk: the register variant forced (rows_warp to 1024,
  rows_cta to 16384), as it is and with the settings.

Each is checked against torch in float64 on the first rows (``err``: the largest error over
the largest magnitude of y; add_rms_norm's residual_out against x + residual too: inf where
any differs; a mean in the kernel against the float64 mean of its loss rows too), and
``inv``: whether the kernel's outputs for the first 37 rows called alone equal those of the
whole batch bit for bit (batch invariance; they must); with ptxas's registers and the
threads. The copy kernel and the settings are timed in turns, twice, the median kept
(``/copy``: against the copy's median).

    python3 tools/diag.py rows_forward_norms [--budget-s 150] [--cells add_rms,layer_norm,exp,ce]
    python3 tools/diag.py rows_forward_norms --dry-run   # build and assemble each kernel (no GPU)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from rows_forward import EPS, cell_tensors, print_failed, print_timed, registers, resident_ctas  # noqa: E402

SUB = 37
"""Rows of the batch-invariance call (at most half the batch)."""
CHECK_ROWS = 256
"""Rows checked against float64."""

# (group, kind, dtype, N): in the order of the task (the first ones first past the budget)
CELLS = [
    ("add_rms", "add_rms_norm", "bfloat16", 262144), ("add_rms", "add_rms_norm", "float32", 262144),
    ("add_rms", "add_rms_norm", "bfloat16", 65536), ("add_rms", "add_rms_norm", "float32", 4096),
    ("exp", "log_softmax", "bfloat16", 4096), ("exp", "softmax", "bfloat16", 4096),
    ("exp", "softmax", "float32", 16384), ("exp", "log_softmax", "float32", 16384),
    ("ce", "cross_entropy", "bfloat16", 1024), ("ce", "cross_entropy", "bfloat16", 4096),
    ("ce", "cross_entropy", "bfloat16", 16384), ("ce", "cross_entropy", "float32", 1024),
    ("ce", "cross_entropy", "bfloat16", 65536),  # (also exp's, last: the reductions' M = 4096)
    ("layer_norm", "layer_norm", "float32", 16384), ("layer_norm", "layer_norm", "bfloat16", 1024),
    ("layer_norm", "layer_norm", "bfloat16", 4096), ("layer_norm", "layer_norm", "bfloat16", 16384),
    ("exp", "softmax", "bfloat16", 16384), ("exp", "cross_entropy", "bfloat16", 65536),
]


def kwargs(kind: str, dtype: str) -> dict:
    if kind in ("rms_norm", "add_rms_norm"):
        return {"weight": dtype, "eps": EPS}
    if kind == "layer_norm":
        return {"weight": dtype, "bias": dtype, "eps": EPS}
    if kind == "cross_entropy":
        return {"ignore_index": -100}
    return {}


def register_variant(n: int) -> str | None:
    """The register variant of a row of N (the dispatch's own below rows_bulk), or None past 16384."""
    from bulkred_dialect.passes.variants import rows_cta, rows_warp

    return "rows_warp" if n <= rows_warp.MAX_N else "rows_cta" if n <= rows_cta.MAX_N else None


def settings_for(kind: str, dtype: str, n: int, chosen: str) -> list[tuple[str, str | None, dict]]:
    """(name, the variant forced or None, the settings: module attribute -> value) of a cell."""
    reg = register_variant(n)
    base = chosen if chosen in ("rows_warp", "rows_cta", "rows_stream", "rows_cluster") else reg
    forced = None if base == chosen else base
    out: list[tuple[str, str | None, dict]] = [(f"dispatch: {chosen}", None, {})]
    if forced is not None:
        out.append((forced, forced, {}))
    if kind == "add_rms_norm" and n > 16384:
        out += [("rows_cluster", "rows_cluster", {"rows_common.ADD_RMS_CLUSTER_N": {dtype: n}}),
                ("rows_cluster, 1 CTA/SM", "rows_cluster",
                 {"rows_common.ADD_RMS_CLUSTER_N": {dtype: n}, "rows_cluster.CTAS_PER_SM": 1}),
                ("rows_stream, 1 CTA/SM", "rows_stream", {"rows_stream.CTAS_PER_SM": 1}),
                ("rows_stream, 2 CTAs/SM", "rows_stream", {"rows_stream.CTAS_PER_SM": 2})]
        if n >= 131072:  # (CTAs of 512 threads, one a multiprocessor by their registers)
            out.append(("rows_cluster, min 2 CTAs/SM", "rows_cluster",
                        {"rows_common.ADD_RMS_CLUSTER_N": {dtype: n}, "rows_common.ADD_RMS_CLUSTER_MIN_CTAS": 2}))
    elif kind == "add_rms_norm":
        out += [(f"{base}, 16 values", base, {"rows_cta.VALUES": 16}), (f"{base}, 8 values", base, {"rows_cta.VALUES": 8})]
    elif kind == "layer_norm":
        out.append((f"{base} ln_fast", forced, {"rows_common.LAYER_NORM_FAST": True}))
        if base == "rows_cta":
            out += [(f"{base}, 16 values", base, {"rows_cta.VALUES": 16}),
                    (f"{base} ln_fast, 16 values", base, {"rows_common.LAYER_NORM_FAST": True, "rows_cta.VALUES": 16})]
    else:
        out.append((f"{base} fast_exp", forced, {"rows_common.FAST_EXP": True}))
        if base == "rows_cta" and kind != "cross_entropy":
            out.append((f"{base} fast_exp, 16 values", base, {"rows_common.FAST_EXP": True, "rows_cta.VALUES": 16}))
    fast = next((o for o in out if o[0] in (f"{base} fast_exp", f"{base} ln_fast")), None)
    if fast is not None and dtype == "float32" and base in ("rows_warp", "rows_cta") and n > 1024:  # (bfloat16: pipelined already)
        out.append((f"{fast[0]} pipelined", base, {**fast[2], "rows_common.FORWARD_PIPELINE": True}))
    if base in ("rows_warp", "rows_cta"):  # more CTAs a multiprocessor (.minnctapersm), where its registers hold fewer
        k = build(kind, dtype, n, forced, {})
        regs, threads = registers(k), k.signature.launch.block[0]
        fit = resident_ctas(regs, threads) if regs.isdigit() else 2048 // threads
        if fit < 2048 // threads:
            best = next((o for o in out if o[0] in (f"{base} fast_exp", f"{base} ln_fast")), (base, forced, {}))
            want = fit + 1  # (twice as many spilled: 56 or 64 registers for a row of 32 values and its next one loaded ahead)
        if fit < 2048 // threads and want > fit:
            out.append((f"{best[0]}, min {want} CTAs/SM", base, {**best[2], f"{base}.MIN_CTAS": want}))
    if kind == "cross_entropy":
        out += [(f"dispatch: {chosen}, + torch mean", None, {"+mean": True}),
                (f"dispatch: {chosen}, mean in the kernel", None, {"reduction": "mean"}),
                (f"dispatch: {chosen}, mean in the kernel, CTA partials", None,
                 {"reduction": "mean", "rows_lower.LOSS_PARTIALS": True})]
    return out


def applied(consts: dict):
    """A context: the settings ``consts`` (``module.NAME`` -> value) set, then restored."""
    import contextlib

    from bulkred_dialect.passes.variants import rows_cluster, rows_common, rows_cta, rows_lower, rows_stream, rows_warp

    mods = {"rows_common": rows_common, "rows_cta": rows_cta, "rows_stream": rows_stream, "rows_cluster": rows_cluster,
            "rows_warp": rows_warp, "rows_lower": rows_lower}

    @contextlib.contextmanager
    def ctx():
        saved = []
        for key, v in consts.items():
            if "." not in key:
                continue
            mod, name = key.split(".")
            old = getattr(mods[mod], name)
            saved.append((mods[mod], name, old))
            setattr(mods[mod], name, dict(v) if isinstance(v, dict) else v)
        try:
            yield
        finally:
            for m, name, old in saved:
                setattr(m, name, old)

    return ctx()


def build(kind: str, dtype: str, n: int, forced: str | None, consts: dict):
    """The compiled kernel of a setting (``consts`` applied while it is built; row_kernels.kernel_for's
    build, without its cache of kernels: each setting's own)."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module

    with applied(consts):
        built = row_kernels.module(kind, None, n, dtype, variant=forced, reduction=consts.get("reduction"),
                                   **kwargs(kind, dtype))
        return compile_tile_module(built, None).kernel("rows")


def chosen_variant(kind: str, dtype: str, n: int) -> str:
    from bulkred_dialect import row_kernels
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose

    op = next(o for o in row_kernels.module(kind, None, n, dtype, **kwargs(kind, dtype)).walk()
              if o.name == "bulkred.normalize_rows")
    return choose(op, Target.parse("sm_90a")).name


def dry_run(args) -> int:
    """Build and assemble (sm_90a) every kernel the probe would time; no GPU."""
    from bulkred_dialect.backend_ptx.assemble import ptxas_accepts

    failed = 0
    for group, kind, dtype, n in cells(args):
        chosen = chosen_variant(kind, dtype, n)
        for name, forced, consts in settings_for(kind, dtype, n, chosen):
            k = build(kind, dtype, n, forced, consts)
            ok, log = ptxas_accepts(k.module.ptx, "sm_90a")
            failed += not ok
            try:  # the local memory stores (spills), where nvdisasm is installed
                from bulkred_dialect.backend_ptx.assemble import assemble
                from bulkred_dialect.backend_ptx.sass import disassemble, opcode_counts

                ops = opcode_counts(disassemble(assemble(k.module.ptx.encode(), "sm_90a")))
                spills = str(sum(c for o, c in ops.items() if o.startswith("STL")))
            except Exception:  # noqa: BLE001 - a diagnostic
                spills = "?"
            print(f"{kind} {dtype} {n} | {name} | {'ok' if ok else 'FAILED ' + log.splitlines()[0]} | regs {registers(k)} | "
                  f"threads {k.signature.launch.block[0]} x {k.signature.launch.cluster[0]} | STL {spills}", flush=True)
    return 1 if failed else 0


def cells(args) -> list[tuple[str, str, str, int]]:
    groups = args.cells.split(",") if args.cells else None
    return [c for c in CELLS if groups is None or c[0] in groups]


def reference(torch, kind: str, n: int, x, w, bvec, res, target):
    """float64 y (cross_entropy: the losses) of x's first rows."""
    xd = x[:CHECK_ROWS].double()
    F = torch.nn.functional
    if kind == "softmax":
        return torch.softmax(xd, -1)
    if kind == "log_softmax":
        return torch.log_softmax(xd, -1)
    if kind == "layer_norm":
        return F.layer_norm(xd, (n,), w.double(), bvec.double(), EPS)
    if kind == "add_rms_norm":
        h = (x[:CHECK_ROWS] + res[:CHECK_ROWS]).double()  # (rounded to x's type, as torch's add)
        return F.rms_norm(h, (n,), w.double(), EPS)
    return F.cross_entropy(xd, target[:CHECK_ROWS], reduction="none")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--cells", help="these groups only: add_rms, layer_norm, exp, ce (comma-separated)")
    ap.add_argument("--dry-run", action="store_true", help="build and assemble each kernel; no GPU")
    args = ap.parse_args()
    os.environ["BULKRED_CACHE"] = "0"  # each setting's kernels are its own
    if args.dry_run:
        return dry_run(args)
    import torch

    t0 = time.time()
    print("| op | dtype | N | copy GB/s | setting | GB/s | /copy | regs | threads x cluster | err | inv |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | --- |")
    for group, kind, dtype, n in cells(args):
        if time.time() - t0 > args.budget_s:
            print(f"| {kind} | {dtype} | {n} | skipped: budget |")
            continue
        m, x, y, w, bvec = cell_tensors(torch, n, dtype, "cuda")
        dt = x.dtype
        res = hout = target = loss = None
        if kind == "add_rms_norm":
            res, hout = torch.randn(m, n, device="cuda", dtype=torch.float32).to(dt), torch.empty_like(x)
        if kind == "cross_entropy":
            target = torch.randint(0, n, (m,), device="cuda")
            loss = torch.empty(m, device="cuda")
        reduced = torch.empty(1, device="cuda", dtype=dt)
        sub = min(SUB, max(1, m // 2))  # (rows of the batch-invariance call)
        ref = reference(torch, kind, n, x, w, bvec, res, target)
        tensors = {"cross_entropy": 1, "add_rms_norm": 4}.get(kind, 2)
        nbytes = tensors * x.numel() * x.element_size()

        def args_of(rows: int | None):
            """The kernel's arguments on the first ``rows`` rows (None: all), new outputs for a part."""
            sl = slice(None) if rows is None else slice(0, rows)
            if kind == "cross_entropy":
                return [x[sl], target[sl], loss if rows is None else torch.empty(rows, device="cuda")]
            out = y if rows is None else torch.empty_like(x[sl])
            if kind == "add_rms_norm":
                return [x[sl], out, res[sl], hout if rows is None else torch.empty_like(x[sl]), w]
            if kind == "layer_norm":
                return [x[sl], out, w, bvec]
            return [x[sl], out]

        def outputs(a: list) -> list:
            if kind == "cross_entropy":
                return [a[2]]
            return [a[1], a[3]] if kind == "add_rms_norm" else [a[1]]

        chosen = chosen_variant(kind, dtype, n)
        runs = []  # (name, call, regs, threads, err, inv)
        for name, forced, consts in settings_for(kind, dtype, n, chosen):
            try:
                k = build(kind, dtype, n, forced, consts)
                full = args_of(None)
                if consts.get("reduction"):
                    call = lambda k=k, a=full: k(*a, reduced)  # noqa: E731
                elif consts.get("+mean"):
                    call = lambda k=k, a=full: (k(*a), a[2].mean())  # noqa: E731
                else:
                    call = lambda k=k, a=full: k(*a)  # noqa: E731
                call()
                part = args_of(sub)
                if consts.get("reduction"):
                    k(*part, torch.empty(1, device="cuda", dtype=dt))
                else:
                    k(*part)
                torch.cuda.synchronize()
                got = outputs(full)
                err = ((got[0][:CHECK_ROWS].double() - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item()
                if kind == "add_rms_norm":
                    herr = (got[1][:CHECK_ROWS] != (x[:CHECK_ROWS] + res[:CHECK_ROWS])).sum().item()
                    err = err if herr == 0 else float("inf")
                if consts.get("reduction"):  # the kernel's mean against the float64 mean of its own loss rows
                    want = got[0].double().mean()
                    err = max(err, ((reduced.double()[0] - want).abs() / want.abs().clamp(min=1e-30)).item())
                inv = all(torch.equal(a[:sub].contiguous().view(torch.uint8), b.view(torch.uint8))
                          for a, b in zip(got, outputs(part)))
                launch = k.signature.launch
                runs.append([name, call, registers(k), f"{launch.block[0]} x {launch.cluster[0]}", err,
                             "yes" if inv else "NO"])
            except Exception as e:  # noqa: BLE001 - the row says why
                print_failed(kind, dtype, n, name, e)
        print_timed(torch, kind, dtype, n, x, y, nbytes, runs)
        del x, y, res, hout, ref, runs
        torch.cuda.empty_cache()
    print(f"probe time: {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
