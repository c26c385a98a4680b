#!/usr/bin/env python3
"""The backward cells still under issue 30's target (section 4: >= 0.93x copy at N = 1k to 65k, >=
0.85x at 262k; three tensors moved) against the existing knobs' untried combinations, one sweep: per
cell (:data:`CELLS`, the furthest below its target first; past ``--budget-s`` the rest are skipped,
each saying so) the default and each of :func:`candidates` on the same tensors (fresh random data), GPU
time from a CUDA graph of 10 calls (the median of 5 replays, the median of 3 rounds in turns with the
copy kernel: rows_backward's ``graph_medians``), each checked against float64 as the existing probes
check (cross_entropy: dx of 256 rows, the first 37 rows alone giving the batch's bits, ``ce_check``;
the norms: dx of 256 rows, dweight and dbias of all, dweight's bits over two calls, ``norm_check``, and
the first 37 rows alone, rows_ln_bf16's ``batch_check``), its bits against the default's; then a table
and, per cell, the exact table entry to flip where a candidate whose checks passed is >= 1.02x the
default (:data:`WIN`).

    PROBE_ARGS="--budget-s 140" bash tools/gpu.sh probe:rows_bwd_sweep
    python3 tools/diag.py rows_bwd_sweep --dry-run [--cells ln:float32:262144,ce:bfloat16:65536]

``--dry-run``: no GPU; every candidate built for sm_90a and assembled on the CPU (the variant, grid x
threads (x cluster), ptxas's registers / spilled bytes, the seconds its build took); 1 where one fails
(66 candidates, about 15 CPU-seconds). Each flip line names tables that exist: rows_cta's, rows_warp's
and rows_stream's MIN_CTAS_MEASURED / CTAS_PER_SM_MEASURED, rows_cta.VALUES_MEASURED,
rows_stream.UNROLL_MEASURED, rows_common.NORM_BACKWARD_VALUES_MEASURED and NORM_BACKWARD_UNITS,
rows_cluster.SLICE_MEASURED, rows_backward's CE_*,
rows_bulk_backward.SETTINGS and CHOSEN; but for 16-byte bfloat16 vectors (rows_common.WIDE_BF16, one
switch for every kernel) and a variant's predicate (cross_entropy's backward on rows_cta at 1024 or
rows_stream at 16384), which say so.

What the candidates try (what latency-bound means: more bytes in flight a multiprocessor, or the same
bytes over more rows so that one row's exchange overlaps another's loads), per cell:

- cross_entropy's backward (elementwise from the stored lse; rows_warp at 1024, rows_cta to 16384,
  rows_stream past: one read of x, one write of dx): the ``.minnctapersm`` the earlier sweep
  (``rows_backward.py --set ce``: 2048 threads' worth and three quarters of it, 32 and 40 registers)
  left out, the one holding 64 registers (rows_warp 4 CTAs of 256 at 1024, rows_cta 8 of 128 at 4096,
  2 of 512 at 16384: twice or more the rows in flight of the default's 3, 5 and 1), rows_cta with 16
  values a thread (``VALUES``), a grid of one wave (``CTAS_PER_SM``); rows_stream (48 to 52
  registers: 2 CTAs of 512 resident, a grid of 4) with 8 or 16 vectors a thread in flight
  (rows_stream.UNROLL, the default's 4: a bfloat16 thread's 32 bytes; rows_stream.UNROLL_MEASURED
  flips it per cell), 16-byte bfloat16 vectors
  (rows_common.WIDE_BF16) and a grid of one wave.
- the norms' backward: rows_bulk_backward (a ring of the next rows' slices copied by
  ``cp.async.bulk``: up to 192 KiB in flight a multiprocessor, against rows_cta's and rows_cluster's
  registers' 32 to 64 KiB) forced at bfloat16 4096, 16384 and 65536 with its newer keys (``words``,
  ``lean_dx``, ``halves``, 6 slots beside the weight with a 2 KiB spare, 2 to 4 CTAs a multiprocessor of
  12 or 6 slots); rows_cta with 8 values a thread (rows_common.NORM_BACKWARD_VALUES) at 4096;
  float32 262144's SETTINGS keys not yet tried there (rms_norm: layer_norm's half slices and lean dx;
  layer_norm: 6 half slots with the weight from L2).
"""

from __future__ import annotations

import os
import sys
import time

os.environ["BULKRED_CACHE"] = "0"  # built here, each time: the patched constants take effect
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (the other probes' functions)

import rows_backward as RB  # noqa: E402 - tools/probes/rows_backward.py
import rows_ln_bf16 as LB  # noqa: E402 - tools/probes/rows_ln_bf16.py

V = "bulkred_dialect.passes.variants"
BWD, BULK, COMMON = f"{V}.rows_backward", f"{V}.rows_bulk_backward", f"{V}.rows_common"
CTA, STREAM, WARP = f"{V}.rows_cta", f"{V}.rows_stream", f"{V}.rows_warp"
KINDS = {"ce": "cross_entropy_backward", "rms": "rms_norm_backward", "ln": "layer_norm_backward"}
CELLS = ("ln:float32:262144,ln:bfloat16:65536,rms:bfloat16:65536,ln:bfloat16:16384,ln:bfloat16:4096,"
         "ce:float32:4096,rms:bfloat16:16384,ce:bfloat16:262144,ce:float32:1024,ce:float32:262144,"
         "ce:float32:16384,ce:bfloat16:65536,rms:float32:262144")
"""The cells (kind:dtype:N), the furthest below their target first (x copy on the H200, the seventh
session: float32 layer_norm 262144 0.756 of 0.85; bfloat16 layer_norm 65536 0.83, rms_norm 0.87,
layer_norm 16384 0.87, 4096 0.88; cross_entropy float32 4096 0.90; rms_norm bfloat16 16384 0.91;
cross_entropy bfloat16 262144 0.92 (of 0.85: the last of the long ones), float32 1024 0.93, 262144 0.93,
16384 0.94, bfloat16 65536 0.94; float32 rms_norm 262144 0.84 of 0.85)."""
WIN = 1.02
"""A candidate flips its cell where it reads >= this times the default's GB/s (its checks passed)."""
TYPE = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}


def _name(dtype: str) -> str:
    return f"{TYPE[dtype]}.name"


def bulk_entry(kind: str, dtype: str, n: int, keys: dict) -> tuple:
    """The rows_bulk_backward.SETTINGS entry of the cell: its own keys (the default's) with ``keys`` added."""
    from rows_ln_long import cell_settings

    return (dtype, (kind,), n, n, {**cell_settings(kind, dtype, n), **keys})


def bulk(kind: str, dtype: str, n: int, label: str, keys: dict) -> tuple[str, str | None, dict, list[str]]:
    """A rows_bulk_backward candidate: its SETTINGS entry first (and the cell in CHOSEN where the dispatch
    does not take rows_bulk_backward there), forced; the entries to flip."""
    from bulkred_dialect.passes.variants import rows_bulk_backward as rbb
    from bulkred_dialect.passes.variants import rows_common

    d, kinds, lo, hi, cell = bulk_entry(kind, dtype, n, keys)
    patches = {f"{BULK}.SETTINGS": [(d, kinds, lo, hi, cell)] + list(rbb.SETTINGS)}
    flips = [f"rows_bulk_backward.SETTINGS (first): ({_name(d)}, {kinds!r}, {lo}, {hi}, {cell!r})"]
    chosen = any(c == dtype and a <= n <= b and (ks is None or kind in ks) for c, ks, a, b in rbb.CHOSEN)
    if not chosen:
        patches[f"{BULK}.CHOSEN"] = [(dtype, (kind,), n, n)] + list(rbb.CHOSEN)
        flips.append(f"rows_bulk_backward.CHOSEN: ({_name(dtype)}, ({kind!r},), {n}, {n})")
        units = rows_common.NORM_BACKWARD_UNITS
        own = units.get((kind, dtype), ())
        if any(lo <= n <= hi for lo, hi, _ in own):  # (rows_cluster's units, 15 or 66: rows_bulk_backward takes
            # them too, a half-idle grid; in their place its own wave: CLUSTERS' clusters, or a CTA a multiprocessor
            # of the H200 where a CTA holds the row, as rms_norm's 16384 has)
            c = 1
            while c < rbb.MAX_CLUSTER and n * (4 if dtype == "float32" else 2) > c * rbb.SLICE_BYTES:
                c *= 2
            count = rbb.CLUSTERS.get(c, 132)
            patches[f"{COMMON}.NORM_BACKWARD_UNITS"] = {
                **units, (kind, dtype): ((n, n, count),) + tuple(r for r in own if not r[0] <= n <= r[1])}
            flips.append(f'rows_common.NORM_BACKWARD_UNITS[("{kind}", {_name(dtype)})]: ({n}, {n}, {count}) in place '
                         "of rows_cluster's units")
    return label, "rows_bulk_backward", patches, flips


def table_flip(module: str, table: str, kind: str, dtype: str, n: int, value) -> str:
    """A ``(kind, type name): ((N, N, value),)`` entry of a per-cell table."""
    return f'{module}.{table}[("{kind}", {_name(dtype)})] = (..., ({n}, {n}, {value}))'


def no_table(module: str, name: str, value) -> str:
    """A module constant with no per-cell table yet: the flip names the table to add (off, as the others)."""
    return (f"{module}.{name} = {value} for this cell: no per-cell table yet (add {name}_MEASURED off, keyed "
            "(kind, type name) -> (N from, N to, value), as rows_cta.MIN_CTAS_MEASURED; default PTX unchanged)")


def ce_candidates(dtype: str, n: int) -> list[tuple[str, str | None, dict, list[str]]]:
    """cross_entropy's backward: (label, forced variant, patches, entries to flip), the default first."""
    kind = RB.CE_KIND
    chosen = RB.ce_variant(dtype, n)
    fast = {f"{BWD}.CE_FAST": True, f"{BWD}.CE_TARGET_APART": True}
    fast_flips = [f"rows_backward.CE_FAST_MEASURED: {_name(dtype)}: (..., ({n}, {n}))",
                  f"rows_backward.CE_TARGET_APART_MEASURED: {_name(dtype)}: (..., ({n}, {n}))"]
    out: list[tuple[str, str | None, dict, list[str]]] = [("default", None, {}, [])]

    def minctas(module: str, k: int) -> tuple[dict, list[str]]:
        short = module.rsplit(".", 1)[1]
        return {f"{module}.MIN_CTAS": k}, [table_flip(short, "MIN_CTAS_MEASURED", kind, dtype, n, k)]

    if chosen == "rows_warp":  # 256 threads, 80 registers: 3 CTAs a multiprocessor, a grid of 8
        for k in (4, 5):
            p, f = minctas(WARP, k)
            out.append((f"rows_warp .minnctapersm {k}", None, p, f))
            out.append((f"rows_warp .minnctapersm {k}, fast, target apart", None, {**p, **fast}, f + fast_flips))
        out.append(("rows_cta (128 threads of 8 values)", "rows_cta", {},
                    ["rows_cta before rows_warp for cross_entropy_backward at this N (a predicate: none yet)"]))
    elif chosen == "rows_cta":  # 128 (4096) or 512 (16384) threads of 32 values, 86 registers
        block = 128 if n <= 4096 else 512
        k64 = 65536 // (64 * block)  # the CTAs a multiprocessor at 64 registers
        p, f = minctas(CTA, k64)
        out.append((f"rows_cta .minnctapersm {k64} (64 registers)", None, p, f))
        out.append((f"rows_cta .minnctapersm {k64}, fast, target apart", None, {**p, **fast}, f + fast_flips))
        v16 = {f"{CTA}.VALUES": 16}
        v16f = [table_flip("rows_cta", "VALUES_MEASURED", kind, dtype, n, 16)]
        k16 = max(1, 65536 // (48 * block * 2))  # (twice the threads at about 42 to 48 registers)
        p2, f2 = minctas(CTA, k16)
        out.append((f"rows_cta 16 values ({block * 2} threads), .minnctapersm {k16}", None, {**v16, **p2}, v16f + f2))
        if n <= 4096:
            out.append((f"rows_cta .minnctapersm {k64}, a grid of one wave", None,
                        {**p, f"{CTA}.CTAS_PER_SM": k64},
                        f + [table_flip("rows_cta", "CTAS_PER_SM_MEASURED", kind, dtype, n, k64)]))
        else:
            m2, m2f = minctas(STREAM, 2)
            out.append(("rows_stream, 8 vectors in flight, .minnctapersm 2", "rows_stream",
                        {f"{STREAM}.UNROLL": 8, **m2},
                        [f"rows_cta.MAX_N / rows_cluster.LOSS_ROWS: cross_entropy_backward {dtype} {n} to rows_stream "
                         "(no per-kind switch yet)", table_flip("rows_stream", "UNROLL_MEASURED", kind, dtype, n, 8)] + m2f))
    else:  # rows_stream: 512 threads, 48 to 52 registers: 2 CTAs resident of a grid of 4 a multiprocessor
        # (8 or 16 vectors a thread in flight take 80 to 128 registers: one CTA, the default's bytes in flight,
        # unless held to 64 by .minnctapersm 2)
        u = lambda k: {f"{STREAM}.UNROLL": k}  # noqa: E731
        m2, m2f = minctas(STREAM, 2)
        one = {f"{STREAM}.CTAS_PER_SM": 2}
        one_f = [table_flip("rows_stream", "CTAS_PER_SM_MEASURED", kind, dtype, n, 2)]
        u8 = [table_flip("rows_stream", "UNROLL_MEASURED", kind, dtype, n, 8)]
        out += [("rows_stream, 8 vectors in flight, .minnctapersm 2", None, {**u(8), **m2}, u8 + m2f),
                ("rows_stream, 16 vectors in flight, .minnctapersm 2", None, {**u(16), **m2},
                 [table_flip("rows_stream", "UNROLL_MEASURED", kind, dtype, n, 16)] + m2f),
                ("rows_stream, 8 vectors in flight, .minnctapersm 2, a grid of one wave", None,
                 {**u(8), **m2, **one}, u8 + m2f + one_f)]
        if dtype == "float32":
            out.append(("rows_stream, 8 vectors in flight, .minnctapersm 2, fast, target apart", None,
                        {**u(8), **m2, **fast}, u8 + m2f + fast_flips))
        else:
            wide = {f"{COMMON}.WIDE_BF16": True}
            wf = [no_table("rows_common", "WIDE_BF16", True)]
            out += [("rows_stream, 16-byte bfloat16 vectors, .minnctapersm 2", None, {**wide, **m2}, wf + m2f),
                    ("rows_stream, 16-byte bfloat16 vectors, 8 in flight, .minnctapersm 2", None,
                     {**wide, **u(8), **m2}, wf + u8 + m2f)]
    return out


def norm_candidates(kind: str, dtype: str, n: int) -> list[tuple[str, str | None, dict, list[str]]]:
    """The norms' backward: (label, forced variant, patches, entries to flip), the default first."""
    layer = kind == "layer_norm_backward"
    out: list[tuple[str, str | None, dict, list[str]]] = [("default", None, {}, [])]
    b = lambda label, keys: bulk(kind, dtype, n, label, keys)  # noqa: E731
    spare6 = {"slots": 6, "spare_shared": 2048}
    values8 = {f"{COMMON}.NORM_BACKWARD_VALUES": 8}
    v8f = table_flip("rows_common", "NORM_BACKWARD_VALUES_MEASURED", kind, dtype, n, 8)
    if dtype == "float32" and n == 262144 and layer:  # SETTINGS: stats ahead, lean dx, 5 half slots, weight slice
        out += [b("6 half slots, the weight from L2", {"slots": 6})]
    elif dtype == "float32" and n == 262144:  # SETTINGS: dy in registers, 2 slots and the weight's slice, stats ahead
        halves = {"grad_registers": False, "halves": True, "slots": 5, "spare_shared": 2048}
        out += [b("dy in the ring, 5 half slots and the weight's slice", halves),
                b("dy in the ring, 5 half slots, lean dx (layer_norm's setting)", {**halves, "lean_dx": True}),
                b("dy in the ring, 6 half slots (the weight from L2), lean dx", {**halves, "lean_dx": True, "slots": 6})]
    elif n == 4096:  # layer_norm bfloat16: rows_cta 256 x 256, 128 registers, 2 CTAs a multiprocessor
        lw = {"lean_dx": True, "words": True}
        out += [b("rows_bulk_backward, lean dx, words, at most 2 CTAs, 12 slots", {**lw, "ctas_per_sm": 2, "slots": 12}),
                b("rows_bulk_backward, words, at most 2 CTAs, 12 slots", {"words": True, "ctas_per_sm": 2, "slots": 12}),
                b("rows_bulk_backward, lean dx, words, statistics ahead, at most 2 CTAs, 12 slots",
                  {**lw, "stats_ahead": True, "ctas_per_sm": 2, "slots": 12}),
                b("rows_bulk_backward, lean dx, words, at most 2 CTAs, 8 slots", {**lw, "ctas_per_sm": 2, "slots": 8}),
                ("rows_cta 8 values (512 threads), pipelined", "rows_cta", values8, [v8f])]
    else:  # bfloat16 16384 / 65536: rows_cluster (rms_norm 16384: rows_bulk_backward), pipelined, 117 to 128 registers
        lw = {"lean_dx": True, "words": True} if layer else {"words": True}
        tag = "lean dx, words" if layer else "words"
        out += [b(f"rows_bulk_backward, {tag}", lw),
                b(f"rows_bulk_backward, {tag}, 6 slots and the weight's slice (2 KiB spare)", {**lw, **spare6}),
                b(f"rows_bulk_backward, {tag}, half slices", {**lw, "halves": True}),
                b(f"rows_bulk_backward, {tag}, statistics ahead, 6 slots (2 KiB spare)",
                  {**lw, "stats_ahead": True, **spare6})]
        if n == 16384 and not layer:  # (rms_norm 16384's own variant: rows_bulk_backward)
            out.append(b("rows_bulk_backward, words, lean dx", {"words": True, "lean_dx": True}))
    return out


def candidates(kind: str, dtype: str, n: int) -> list[tuple[str, str | None, dict, list[str]]]:
    """(label, forced variant or None, {module.NAME: value} patches, the table entries that turn it on) of
    the cell; the default first."""
    return ce_candidates(dtype, n) if kind == RB.CE_KIND else norm_candidates(kind, dtype, n)


def cells(spec: str) -> list[tuple[str, str, int]]:
    """``--cells``: (kind, dtype, N) from ``kind:dtype:N`` (kind ce, rms or ln)."""
    out = []
    for c in spec.split(","):
        parts = c.split(":")
        if len(parts) != 3 or not parts[2].isdigit():
            raise ValueError(f"--cells: {c!r}: expected kind:dtype:N (e.g. ce:float32:4096)")
        k, d, n = parts
        if k not in KINDS or d not in TYPE:
            raise ValueError(f"--cells: {c!r}: the kind is one of {', '.join(KINDS)}, the dtype one of {', '.join(TYPE)}")
        out.append((KINDS[k], d, int(n)))
    return out


def build(kind: str, dtype: str, n: int, variant: str | None, patches: dict, dry: bool = False):
    """The candidate's kernel (its patches in force while built; ``dry``: for sm_90a, not loaded) and its variant."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module

    if kind != RB.CE_KIND:
        return LB.build(kind, dtype, n, variant, patches, dry)
    with RB.patched(patches):
        built = row_kernels.module(kind, None, n, dtype, ignore_index=RB.CE_IGNORED, variant=variant)
        k = compile_tile_module(built, "sm_90a" if dry else None, cache=False).kernel("rows")
        return k, variant or RB.ce_variant(dtype, n)


def flips(results: list[tuple[str, str, int, str, float, list[str]]]) -> list[str]:
    """Per cell the fastest candidate whose checks passed, where it read >= :data:`WIN` x the default's
    (``results``: kind, dtype, N, label, x copy (0.0: a failed check), its entries; the default first)."""
    by: dict[tuple[str, str, int], list[tuple[str, float, list[str]]]] = {}
    for kind, dtype, n, label, ratio, entries in results:
        by.setdefault((kind, dtype, n), []).append((label, ratio, entries))
    out = []
    for (kind, dtype, n), rows in by.items():
        if rows[0][0] != "default" or not rows[0][1]:
            out.append(f"{kind} {dtype} {n}: the default did not run or failed its checks: nothing to compare")
            continue
        base = rows[0][1]
        if len(rows) == 1:
            out.append(f"{kind} {dtype} {n}: keep the default ({base:.3f} of copy; no other candidate ran)")
            continue
        label, ratio, entries = max(rows[1:], key=lambda r: r[1])
        if ratio < base * WIN:
            out.append(f"{kind} {dtype} {n}: keep the default ({base:.3f} of copy; best other {label}, {ratio:.3f})")
            continue
        out.append(f"{kind} {dtype} {n}: {label}, {base:.3f} -> {ratio:.3f} of copy: " + "; ".join(entries))
    return out


def ce_inputs(torch, dtype: str, n: int) -> dict:
    """rows_backward's ``--set ce`` tensors (x of spread 2, every 16th row ignored, a gradient a row, lse
    from torch) and dx's float64 reference of the first 256 rows."""
    m, dt = RB.TOTAL // n, getattr(torch, dtype)
    x = torch.randn(m, n, device=RB.DEVICE).mul_(2).to(dt)
    target = torch.randint(0, n, (m,), device=RB.DEVICE)
    target[::16] = RB.CE_IGNORED
    grad = torch.randn(m, device=RB.DEVICE)
    lse = torch.logsumexp(x.float(), -1)
    want = torch.softmax(x[:256].double(), -1)
    t = target[:256]
    kept = t != RB.CE_IGNORED
    want[kept.nonzero()[:, 0], t[kept]] -= 1
    want = want * grad[:256].double()[:, None] * kept.double()[:, None]
    return {"m": m, "x": x, "target": target, "grad": grad, "lse": lse, "want": want}


def run_candidate(torch, kind: str, dtype: str, t: dict, k, first):
    """Call the candidate once, check it; (its check, its outputs, a call of it for the timing)."""
    if kind == RB.CE_KIND:
        x = t["x"]
        dx = torch.empty_like(x)
        k(x, dx, t["target"], t["grad"], t["lse"])
        torch.cuda.synchronize()
        ok = RB.ce_check(torch, k, x, t["target"], t["grad"], t["lse"], dx, t["want"], None if first is None else first[0])
        return ok, [dx], lambda: k(x, dx, t["target"], t["grad"], t["lse"])
    n, dev, dt = t["x"].shape[1], t["x"].device, t["x"].dtype
    outs = [torch.empty_like(t["x"])] + [torch.empty(n, device=dev, dtype=dt)
                                         for _ in range(1 + (kind == "layer_norm_backward"))]
    args = RB.norm_args(kind, t, outs)
    k(*args)
    torch.cuda.synchronize()
    ok = RB.norm_check(torch, kind, dtype, t, k, outs) + LB.batch_check(torch, kind, t, k, outs[0])
    if first is not None:
        same = [torch.equal(a, b) for a, b in zip(outs, first)]
        ok += ", bits = default's" if all(same) else (", dw/db bits = default's" if all(same[1:]) else ", bits != default's")
    return ok, outs, lambda: k(*args)


def good(ok: str) -> bool:
    """Whether a check line passed (a candidate whose check failed is never flipped)."""
    return ok.startswith("ok") and not any(w in ok for w in ("FAILED", "differ", " err "))


def measure(args) -> int:
    """Per cell the copy kernel and every candidate timed in turns on the same tensors, each checked;
    the table; the entries to flip."""
    import torch

    t0, sms = RB.gpu_table(torch, "| kind | dtype | N | setting | variant | grid x threads (x cluster), regs / spill, "
                           "units at once | GB/s | x copy | x default | check |",
                           "| --- | --- | ---: | --- | --- | --- | ---: | ---: | ---: | --- |")
    results, built = [], 0.0
    for kind, dtype, n in cells(args.cells):
        if args.budget_s and time.time() - t0 > args.budget_s:
            print(f"| {kind} | {dtype} | {n} | skipped: past the budget | | | | | | |", flush=True)
            continue
        ce = kind == RB.CE_KIND
        t = ce_inputs(torch, dtype, n) if ce else RB.norm_inputs(torch, kind, dtype, n)
        m, x = t["m"], t["x"]
        y = torch.empty_like(x)
        rows, calls, first = [], [], None
        for label, variant, patches, entries in candidates(kind, dtype, n):
            try:
                t1 = time.time()
                k, name = build(kind, dtype, n, variant, patches)
                built += time.time() - t1
                ok, outs, call = run_candidate(torch, kind, dtype, t, k, first)
                if first is None:
                    first = [o.clone() for o in outs]
                rows.append((label, name, RB.launch_of(k, m, sms), ok, entries))
                calls.append(call)
            except Exception as e:  # noqa: BLE001 - a candidate that does not build or launch: the row says why
                print(f"| {kind} | {dtype} | {n} | {label} | n/a | | | | | {str(e).splitlines()[0][-90:]} |", flush=True)
                if label == "default":
                    break
        times, copy, moved = RB.timed_against_copy(torch, x, y, calls, 2 if ce else 3)
        base = None
        for (label, name, launch, ok, entries), us in zip(rows, times[1:]):
            gbs = moved / us / 1e3
            base = base or gbs
            results.append((kind, dtype, n, label, gbs / copy if good(ok) else 0.0, entries))
            print(f"| {kind} | {dtype} | {n} | {label} | {name} | {launch} | {gbs:,.0f} | {gbs / copy:.3f} "
                  f"| {gbs / base:.3f} | {ok} |", flush=True)
        print(f"| copy | {dtype} | {n} | | | | {copy:,.0f} | 1.000 | | |", flush=True)
        del t, x, y, calls, first
        torch.cuda.empty_cache()
    RB.print_flips(f"per cell the fastest candidate, its checks passed, >= {WIN}x the default", flips(results), t0,
                   f" (building the kernels {built:.0f} s)")
    return 0


def dry_run(args) -> int:
    """Every candidate of every cell built for sm_90a and assembled; no GPU. 1 where one fails."""
    t0 = time.time()

    def row(kind: str, dtype: str, n: int, variant: str | None, patches: dict) -> tuple[str, str, str]:
        t1 = time.time()
        k, name = build(kind, dtype, n, variant, patches, dry=True)
        return name, RB.launch_of(k, RB.TOTAL // n), f"{time.time() - t1:.1f}"

    count, failed = RB.dry_rows("build s", ((kind, dtype, n, label, lambda a=(kind, dtype, n, variant, patches): row(*a))
                                            for kind, dtype, n in cells(args.cells)
                                            for label, variant, patches, _ in candidates(kind, dtype, n)))
    print(f"{count} candidates, {failed} failed, {time.time() - t0:.0f} s")
    return 1 if failed else 0


def main() -> int:
    ap, args = RB.probe_args(__doc__, CELLS, "kind:dtype:N (kind ce, rms or ln) in the order measured")
    try:
        cells(args.cells)  # (a bad --cells: its one-line error before any work)
    except ValueError as e:
        ap.error(str(e))
    return dry_run(args) if args.dry_run else measure(args)


if __name__ == "__main__":
    sys.exit(main())
