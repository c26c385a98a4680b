#!/usr/bin/env python3
"""Whether rows_backward.NORM_TAIL_SPREAD speeds up the norms' backward (issue 30, section 4:
bfloat16 layer_norm's backward 0.84 to 0.87 of copy at 4096 to 65536, rms_norm's 0.88 at
65536 and 0.91 at 16384, float32 layer_norm 0.93 at 4096, against 0.93): per cell
(``--cells``, the furthest below the target first), the default and each candidate of
:func:`candidates` on the same tensors (fresh random data), GPU time from a CUDA graph of
10 calls in turns with the copy kernel (rows_backward's graph_medians), each checked
against float64 (dx of 256 rows, dweight and dbias of all, dweight's bits over two calls:
rows_backward's norm_check), its first 37 rows alone giving dx's bits of the batch (M),
and its bits against the default's (the spread tail promises all of them); then the table
entry to flip for each cell where a candidate won by 1% or more. ``--dry-run``: no GPU,
each candidate built for sm_90a and assembled: the variant, grid x threads (x cluster),
ptxas's registers / spilled bytes, and SASS instructions an element of the loop over rows
(:func:`sass_per_element`).

    PROBE_ARGS="--budget-s 120" bash tools/gpu.sh probe:rows_ln_bf16
    python3 tools/diag.py rows_ln_bf16 --dry-run [--cells bfloat16:4096] [--kinds layer_norm_backward]

The column tail (dweight / dbias: per-unit float32 partial rows summed in a fixed order
after the rows, rows_backward.finish_columns), estimated from the H200's grids (M = 2^28 /
N rows; the kernel about 410 to 490 us in bfloat16, 830 in float32; one multiprocessor
reads L2 at about 100 to 150 GB/s): bfloat16 layer_norm 65536 on rows_cluster, 15 clusters
of 8, one group: each rank's last CTA reads 15 partial rows of its 8192 columns for 2
outputs (960 KiB, and clears them), a thread's 8 column vectors one after another, the 15
rows of each through the default's one-row loop: 10 to 30 us, 2 to 6% (rms_norm half).
rms_norm 16384 on rows_bulk_backward, 132 units in 9 groups of 16: each group's last CTA 1
MiB (16 rows of 16384), then one CTA the 9 groups' rows (576 KiB, the one-row loop): 15 to
20 us, 4 to 5%. layer_norm 16384 on rows_cluster, 66 clusters of 2 (5 groups a rank): 1
MiB a group's last CTA, then 320 KiB a rank: about 15 us, 3%. rows_cta's 4096, 256 units
in 16 groups of 16: 512 KiB a group's last CTA, then one CTA the 16 groups' rows (512 KiB):
about 10 us (2.5% in bfloat16, 1.2% in float32). In the two-level cells the first level
costs about what the second does (each group's rows from one multiprocessor): hence the
both-levels candidate. The spread shares a level's columns among the CTAs still there,
each piece's rows loaded before its first add: the default's bits; a piece is one vector
of each column a thread at least, so a rank's pieces number 4 to 8 an output.

Measured before (the seventh session, docs/rows.md): NORM_LEAN with NORM_FOLD_DX 1 to 3%
at 16384 and 65536 (taken), alone, at 4096, with ``.minnctapersm 2`` and as rows_cluster's
SLICE 4096 clusters within 1% or slower: no longer candidates here.
"""

from __future__ import annotations

import os
import sys
import time

os.environ["BULKRED_CACHE"] = "0"  # built here, each time: the patched constants take effect
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (rows_backward's and rows_forward's functions)

import rows_backward as RB  # noqa: E402 - tools/probes/rows_backward.py

BWD = "bulkred_dialect.passes.variants.rows_backward"
CELLS = "bfloat16:65536,bfloat16:16384,bfloat16:4096,float32:4096,float16:65536,float16:16384,float16:4096"
"""The cells (dtype:N), the furthest below issue 30's 0.93 first (bfloat16 layer_norm
65536 0.84, 16384 0.87, 4096 0.87, rms_norm 65536 0.88, 16384 0.91; float32 layer_norm
4096 0.93); past ``--budget-s`` the last are left out."""
SPREAD_LOADS = (1, 32)
"""rows_backward.NORM_TAIL_SPREAD's candidates: loads a piece (1: one vector of each
column a thread a piece, every row of it in flight, the most pieces; 32: two to four
vectors of the 5 to 15 rows of units or groups, fewer pieces with more loads in flight;
not at 4096, where rows_cta's 16 groups' rows two vectors deep take ptxas to 144
registers: one CTA a multiprocessor where the default's 118 to 128 hold two). Below 65536
(two levels: more units than a group) also 1 load a piece with rows_backward.NORM_TAIL_LEVELS
2 (each group's rows spread over its CTAs too, where the default's group's last CTA adds
them alone: 512 KiB to 1 MiB from one multiprocessor)."""
KINDS = "layer_norm_backward,rms_norm_backward"


def candidates(kind: str, dtype: str, n: int) -> list[tuple[str, str | None, dict]]:
    """(label, forced variant, patches): the default and rows_backward.NORM_TAIL_SPREAD at
    each of :data:`SPREAD_LOADS` (the dispatch's variant: rows_cta at 4096, rows_cluster at
    16384 and 65536, rows_bulk_backward for rms_norm 16384 and float32 past 4096; its tail
    polls rows_backward.NORM_TAIL_POLLS times at most), and below 65536 with both levels
    spread (rows_backward.NORM_TAIL_LEVELS 2)."""
    del kind, dtype  # (the same candidates for both kinds and every type)
    out = [("default", None, {})] + [(f"tail spread, {k} loads a piece", None, {f"{BWD}.NORM_TAIL_SPREAD": k})
                                     for k in SPREAD_LOADS if k < 32 or n > 4096]
    if n < 65536:  # (two levels: the H200's grids at 4096 and 16384)
        out.append(("tail spread, 1 loads a piece, both levels", None,
                    {f"{BWD}.NORM_TAIL_SPREAD": 1, f"{BWD}.NORM_TAIL_LEVELS": 2}))
    return out


def sass_per_element(k, n: int, variant: str) -> str:
    """SASS instructions (ptxas sm_90a, nvdisasm) of the loop over rows (the smallest loop
    holding a SHFL and a STG: the row's reduction and its dx) over the elements of the row
    a thread holds (N / (threads x cluster); rows_warp's N / 32); '?' without nvdisasm or
    that loop."""
    best = RB.smallest_loop(k, lambda ops: any(o.startswith("SHFL") for o in ops) and any(o.startswith("STG") for o in ops))
    if best is None:
        return "?"
    launch = k.signature.launch
    threads = 32 if variant == "rows_warp" else launch.block[0] * launch.cluster[0]
    return f"{len(best) / (n / threads):.1f}"


def build(kind: str, dtype: str, n: int, variant: str | None, patches: dict, dry: bool = False):
    """The compiled kernel of a candidate (its patches in force while built; ``dry``: for
    sm_90a, not loaded) and the variant the dispatch took."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module

    kw = {"weight": dtype, "dweight": dtype, "dbias": dtype if kind == "layer_norm_backward" else None,
          "variant": variant}
    with RB.patched(patches):  # (row_kernels.kernel_for's build, for the GPU's arch, outside its cache)
        built = row_kernels.module(kind, None, n, dtype, **kw)
        k = compile_tile_module(built, "sm_90a" if dry else None, cache=False).kernel("rows")
        return k, RB.chosen_variant(kind, dtype, n, variant)


def batch_check(torch, kind: str, t: dict, k, dx) -> str:
    """The first 37 rows called alone: dx's bits those of the whole batch's."""
    sub = 37
    part = {**t, "x": t["x"][:sub].clone(), "dy": t["dy"][:sub].clone(), "rstd": t["rstd"][:sub].clone(),
            "mean": None if t["mean"] is None else t["mean"][:sub].clone()}
    n, dt = t["x"].shape[1], t["x"].dtype
    outs = [torch.empty_like(part["x"])] + [torch.empty(n, device=dx.device, dtype=dt)
                                            for _ in range(1 + (kind == "layer_norm_backward"))]
    k(*RB.norm_args(kind, part, outs))
    torch.cuda.synchronize()
    return "" if torch.equal(outs[0], dx[:sub]) else ", M-invariance FAILED"


def flips(results: list[tuple[str, str, int, str, float]]) -> list[str]:
    """Per (kind, dtype, N): the fastest candidate whose checks passed, where it beat the
    default by 1% or more, and the table entries that turn it on (``results``: kind,
    dtype, N, label, x copy; the default's first; 0.0 where a check failed)."""
    by: dict[tuple[str, str, int], list[tuple[str, float]]] = {}
    for kind, dtype, n, label, ratio in results:
        by.setdefault((kind, dtype, n), []).append((label, ratio))
    out = []
    for (kind, dtype, n), rows in by.items():
        if rows[0][0] != "default" or rows[0][1] == 0.0:
            out.append(f"{kind} {dtype} {n}: the default did not run or failed its checks: nothing to compare")
            continue
        base = rows[0][1]
        label, ratio = max(rows, key=lambda r: r[1])
        if label == "default" or ratio < base * 1.01:
            out.append(f"{kind} {dtype} {n}: keep the default ({base:.3f} of copy; best other {label}, {ratio:.3f})")
            continue
        name = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}[dtype] + ".name"
        loads = int(label.split(", ")[1].split()[0])
        levels = 2 if "both levels" in label else 1
        entry = (f'rows_backward.NORM_TAIL_SPREAD_MEASURED[("{kind}", {name})] = (..., ({n}, {n}, {loads}, {levels}))'
                 + (" (float16 follows bfloat16's unless it has its own)" if dtype == "bfloat16" else ""))
        out.append(f"{kind} {dtype} {n}: {label}, {base:.3f} -> {ratio:.3f} of copy: {entry}")
    return out


def measure(args) -> int:
    """Per cell and kind, the copy kernel and every candidate timed in turns on the same
    tensors, each checked; the table entries to flip."""
    import torch

    t0, sms = RB.gpu_table(torch, "| kind | dtype | N | setting | variant | grid x threads (x cluster), regs / spill, "
                           "units at once | SASS / elem | GB/s | x copy | check |",
                           "| --- | --- | ---: | --- | --- | --- | ---: | ---: | ---: | --- |")
    results = []
    for dtype, n in RB.cells(args):
        for kind in args.kinds.split(","):
            if args.budget_s and time.time() - t0 > args.budget_s:
                print(f"| {kind} | {dtype} | {n} | skipped: past the budget | | | | | | |", flush=True)
                continue
            t = RB.norm_inputs(torch, kind, dtype, n)
            m, dev, dt = t["m"], t["x"].device, t["x"].dtype
            y = torch.empty_like(t["x"])
            rows, calls, first = [], [], None
            for label, variant, patches in candidates(kind, dtype, n):
                try:
                    k, name = build(kind, dtype, n, variant, patches)
                    outs = [torch.empty_like(t["x"])] + [torch.empty(n, device=dev, dtype=dt)
                                                         for _ in range(1 + (kind == "layer_norm_backward"))]
                    k(*RB.norm_args(kind, t, outs))
                    torch.cuda.synchronize()
                    ok = RB.norm_check(torch, kind, dtype, t, k, outs) + batch_check(torch, kind, t, k, outs[0])
                    if first is None:
                        first = [o.clone() for o in outs]
                    elif all(torch.equal(a, b) for a, b in zip(outs, first)):
                        ok += ", bits = default's"
                    else:
                        ok += ", dw/db bits = default's" if all(torch.equal(a, b) for a, b in zip(outs[1:], first[1:])) \
                            else ", bits != default's"
                    rows.append((label, name, RB.launch_of(k, m, sms), sass_per_element(k, n, name), ok))
                    calls.append(lambda k=k, a=RB.norm_args(kind, t, outs): k(*a))
                except Exception as e:  # noqa: BLE001 - a candidate that does not build or launch: the row says why
                    print(f"| {kind} | {dtype} | {n} | {label} | n/a | | | | | {str(e).splitlines()[0][-90:]} |",
                          flush=True)
            times, copy, moved = RB.timed_against_copy(torch, t["x"], y, calls)
            for (label, name, launch, sass, ok), us in zip(rows, times[1:]):
                gbs = moved / us / 1e3
                good = ok.startswith("ok") and not any(w in ok for w in ("FAILED", "differ", " err "))
                results.append((kind, dtype, n, label, gbs / copy if good else 0.0))
                print(f"| {kind} | {dtype} | {n} | {label} | {name} | {launch} | {sass} | {gbs:,.0f} | {gbs / copy:.3f} "
                      f"| {ok} |", flush=True)
            print(f"| copy | {dtype} | {n} | | | | | {copy:,.0f} | 1.000 | |", flush=True)
            del t, y, calls, first
            torch.cuda.empty_cache()
    RB.print_flips("per cell the fastest candidate, its checks passed, >= 1.01x the default", flips(results), t0)
    return 0


def dry_run(args) -> int:
    """Each candidate of each cell built for sm_90a and assembled: the variant, grid x
    threads (x cluster), registers / spills, SASS an element; no GPU. 1 where one fails."""

    def row(kind: str, dtype: str, n: int, variant: str | None, patches: dict) -> tuple[str, str, str]:
        k, name = build(kind, dtype, n, variant, patches, dry=True)
        return name, RB.launch_of(k, RB.TOTAL // n), sass_per_element(k, n, name)

    _, failed = RB.dry_rows("SASS / elem", ((kind, dtype, n, label, lambda a=(kind, dtype, n, variant, patches): row(*a))
                                            for dtype, n in RB.cells(args) for kind in args.kinds.split(",")
                                            for label, variant, patches in candidates(kind, dtype, n)))
    return 1 if failed else 0


def main() -> int:
    _, args = RB.probe_args(__doc__, CELLS, kinds=KINDS)
    return dry_run(args) if args.dry_run else measure(args)


if __name__ == "__main__":
    sys.exit(main())
