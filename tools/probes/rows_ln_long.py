#!/usr/bin/env python3
"""The norms' backward at 262144 against rows_bulk_backward's column sums' tail in one level (TAIL_LOADS) and
spread over the CTAs still there (TAIL_SPREAD); earlier LEAN_DX, WORDS, REVERSE, HALVES and dbias's column sums
in shared memory (issue 30, section 4: the seventh session's defaults read float32 layer_norm 0.756 of copy,
bfloat16 0.799, rms_norm 0.840 / 0.921; the target 0.85). Each candidate is a
``rows_bulk_backward.SETTINGS`` entry for its cell (the cell's own entry with the candidate's keys added,
put first), timed against the default on the same tensors (a CUDA graph of 10 calls, the median of 5
replays, the median of 3 rounds in turns with the copy kernel: tools/probes/rows_backward.py's
``graph_medians``), checked against torch in float64 (dx of 256 rows, dweight and dbias of all; dweight's
bits over two calls) and its bits against the default's; with ptxas's registers / spills and the SASS
instructions of the loop over rows an element. The run ends with the SETTINGS entry to put in
rows_bulk_backward for each cell where a candidate beat the default by 1% or more.

    PROBE_ARGS="--budget-s 120" bash tools/gpu.sh probe:rows_ln_long
    python3 tools/diag.py rows_ln_long --dry-run     # no GPU: each candidate built for sm_90a and assembled

What the SASS says (ptxas sm_90a, the loop over rows, 32 values a thread; ``--dry-run``): layer_norm's
backward spends 25.6 instructions an element in float32 and 34.8 in bfloat16 (296 of its 1113 unpack
bfloat16: ``ld.shared.v4.b16`` and ``cvt``), 23.5 / 32.8 without dweight and dbias: the column sums cost 2
an element, yet 14 to 20% of the time. At 128 registers (64 of them the column sums) ptxas issues float32's
8 loads of the weight a pass (from L2: its 64 KiB slice does not fit beside 3 slots of 64 KiB) in 3 or 4
groups, each waiting a round trip, where the kernel without column sums (96 registers) issues all 8 at
once. The candidates: LEAN_DX (dx by two FFMA from the row's constants, the first pass's ``g (x - mean)``:
25.6 -> 23.0, 34.8 -> 31.9), WORDS (bfloat16 from shared memory as words: 34.8 -> 31.7, 28.9 with
LEAN_DX), REVERSE (the second pass last vector first: slower, since removed), HALVES (a ring of half slices: float32 layer_norm's 3 slots of 64 KiB hold this row's x
and dy and the next row's x, so that each row waits for its dy copied only as it starts, where 7 of 32
KiB hold all the next row's but its dy's second half, waited for after half the first pass; bfloat16's
11 of 16 KiB beside the weight, against 4 of 32 KiB; the ring's bookkeeping costs about 4 SASS
instructions an element), and for bfloat16 layer_norm dbias's column sums in shared memory (64 KiB)
beside the 4 slots and the weight's slice, with 2 KiB kept for the rest in place of 4 (32 fewer
registers of column sums, the ring as deep: slower, since removed); those are in SETTINGS or were slower,
and are not run again.

The tail (the eighth session; ``--dry-run``'s SASS): after the rows, the last CTA of each rank of the 7
clusters of 16 adds the 7 units' partial rows of its 16384 columns of each output alone, in two levels: a
loop over its 8 column vectors a thread an output, the 7 rows loaded 4, 2 and 1 at a time (3 L2 round
trips a vector, 48 for layer_norm), a group row written, a second ticket and fence, and that row read
back (16 round trips more). TAIL_LOADS: one level, the loads of 2 or 4 columns' 7 rows issued together (8
or 4 round trips). TAIL_SPREAD: the same pieces drawn from a counter by every CTA of the rank that sees the
last unit arrive within its polls (at most 64, then it leaves: no CTA waits on one that is not resident).
All keep the default's bits. The kernels without dweight and dbias (the last row of each cell) bound what
the tail and the column sums can give."""

from __future__ import annotations

import os
import sys
import time

os.environ["BULKRED_CACHE"] = "0"  # built here, each time: the patched table takes effect
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from rows_backward import (  # noqa: E402
    TOTAL,
    chosen_variant,
    dry_rows,
    launch_of,
    norm_args,
    norm_check,
    norm_inputs,
    gpu_table,
    patched,
    print_flips,
    probe_args,
    smallest_loop,
    timed_against_copy,
)

BULK = "bulkred_dialect.passes.variants.rows_bulk_backward"
CELLS = "bfloat16:262144,float32:262144"
KINDS = "layer_norm_backward,rms_norm_backward"
NO_COLUMNS = "no dweight / dbias (the column sums' cost)"


def candidates(kind: str, dtype: str) -> list[tuple[str, dict]]:
    """(label, SETTINGS keys added to the cell's own) of the cell; the default first, the kernel
    without dweight and dbias last (:data:`NO_COLUMNS`: what the column sums cost). The seventh
    session's candidates are in the defaults (SETTINGS: float32 layer_norm lean_dx and 5 half slices,
    bfloat16 layer_norm lean_dx and words, bfloat16 rms_norm words) or measured slower
    (docs/rows_probes_h200_run7.log: reverse, 7 half slices, dy in registers, dbias's sums in shared
    memory, bfloat16's 11 half slices, lean_dx for rms_norm): not run again. Now the column sums' tail:
    rows_bulk_backward.TAIL_LOADS (one level, its loads ahead) and TAIL_SPREAD (that tail's pieces drawn by
    the CTAs of a rank that see the last unit arrive within 64 polls: 8 or 16 pieces a rank, 7 CTAs)."""
    return [("default", {}),
            ("tail in one level, 16 loads ahead", {"tail_loads": 16}),
            ("tail in one level, 32 loads ahead", {"tail_loads": 32}),
            ("tail spread over the waiting CTAs, 16 loads a piece", {"tail_loads": 16, "tail_spread": 64}),
            ("tail spread over the waiting CTAs, 8 loads a piece", {"tail_loads": 8, "tail_spread": 64}),
            (NO_COLUMNS, {})]


def cell_settings(kind: str, dtype: str, n: int) -> dict:
    """The cell's own rows_bulk_backward.SETTINGS entry's keys (the default's)."""
    from bulkred_dialect.passes.variants import rows_bulk_backward

    for d, kinds, lo, hi, keys in rows_bulk_backward.SETTINGS:
        if d == dtype and lo <= n <= hi and (kinds is None or kind in kinds):
            return dict(keys)
    return {}


def entry(kind: str, dtype: str, n: int, keys: dict) -> tuple:
    """The SETTINGS entry of the cell with ``keys`` added to its own."""
    return (dtype, (kind,), n, n, {**cell_settings(kind, dtype, n), **keys})


def patches_of(kind: str, dtype: str, n: int, keys: dict) -> dict:
    """The module patch putting the candidate's entry first in rows_bulk_backward.SETTINGS."""
    from bulkred_dialect.passes.variants import rows_bulk_backward

    return {f"{BULK}.SETTINGS": [entry(kind, dtype, n, keys)] + list(rows_bulk_backward.SETTINGS)} if keys else {}


def build(kind: str, dtype: str, n: int, label: str, keys: dict, compile_kernel: bool = True):
    """The candidate's kernel, built as row_kernels.kernel_for builds it, outside its cache (for the GPU's
    arch; with ``compile_kernel`` False for sm_90a, lowered and assembled on the CPU), and its variant."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module

    layer, cols = kind == "layer_norm_backward", label != NO_COLUMNS
    kw = {"weight": dtype, "dweight": dtype if cols else None, "dbias": dtype if layer and cols else None}
    with patched(patches_of(kind, dtype, n, keys)):
        built = row_kernels.module(kind, None, n, dtype, **kw)
        k = compile_tile_module(built, None if compile_kernel else "sm_90a", cache=False).kernel("rows")
        return k, chosen_variant(kind, dtype, n, None)


def sass_per_element(k, n: int) -> str:
    """SASS instructions (ptxas sm_90a, nvdisasm) of rows_bulk_backward's loop over rows (the
    smallest backward branch around a bulk copy, a CTA barrier and an FFMA) over the values a
    thread holds of a row; '?' without nvdisasm."""
    best = smallest_loop(k, lambda ops: all(any(o.startswith(s) for o in ops) for s in ("UBLKCP", "BAR.SYNC", "FFMA")))
    launch = k.signature.launch
    return "?" if best is None else f"{len(best) / (n / (launch.block[0] * launch.cluster[0])):.1f}"


def cells(args) -> list[tuple[str, int]]:
    return [(c.split(":")[0], int(c.split(":")[1])) for c in args.cells.split(",")]


def dry_run(args) -> int:
    """Each candidate built for sm_90a and assembled: the variant, grid x threads x cluster, registers /
    spilled bytes, SASS an element; no GPU. 1 where one does not build."""

    def row(kind: str, dtype: str, n: int, label: str, keys: dict) -> tuple[str, str, str]:
        k, name = build(kind, dtype, n, label, keys, compile_kernel=False)
        return name, launch_of(k, TOTAL // n), sass_per_element(k, n)

    _, failed = dry_rows("SASS / elem", ((kind, dtype, n, label, lambda a=(kind, dtype, n, label, keys): row(*a))
                                         for dtype, n in cells(args) for kind in args.kinds.split(",")
                                         for label, keys in candidates(kind, dtype)))
    return 1 if failed else 0


def flips(results: list[tuple[str, str, int, str, dict, float]]) -> list[str]:
    """Per cell the fastest candidate whose check passed, where it beat the default by 1% or more:
    the SETTINGS entry to put in rows_bulk_backward (``results``: kind, dtype, N, label, keys, x copy;
    the default's first)."""
    out = []
    by: dict[tuple[str, str, int], list] = {}
    for kind, dtype, n, label, keys, ratio in results:
        by.setdefault((kind, dtype, n), []).append((label, keys, ratio))
    for (kind, dtype, n), rows in by.items():
        base = rows[0][2]
        if rows[0][0] != "default" or not base:
            out.append(f"{kind} {dtype} {n}: no flip (the default did not run or its check failed)")
            continue
        label, keys, ratio = max(rows, key=lambda r: r[2])
        if label == "default" or ratio < base * 1.01:
            out.append(f"{kind} {dtype} {n}: keep the default ({base:.3f} of copy; best other {label}, {ratio:.3f})")
            continue
        d, kinds, lo, hi, cell = entry(kind, dtype, n, keys)
        name = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}[d] + ".name"
        out.append(f"{kind} {dtype} {n}: {label}, {base:.3f} -> {ratio:.3f} of copy: rows_bulk_backward.SETTINGS "
                   f"(the cell's entry, first): ({name}, {kinds!r}, {lo}, {hi}, {cell!r})")
    return out


def main() -> int:
    _, args = probe_args(__doc__, CELLS, kinds=KINDS)
    if args.dry_run:
        return dry_run(args)
    import torch

    t0, sms = gpu_table(torch, "| kind | dtype | N | setting | grid x threads (x cluster), regs / spill, units at once "
                        "| SASS / elem | GB/s | x copy | check |", "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | --- |")
    results = []
    for kind in args.kinds.split(","):  # (layer_norm's cells first: the furthest below the target)
        for dtype, n in cells(args):
            if args.budget_s and time.time() - t0 > args.budget_s:
                print(f"| {kind} | {dtype} | {n} | skipped: past the budget | | | | | |", flush=True)
                continue
            layer = kind == "layer_norm_backward"
            t = norm_inputs(torch, kind, dtype, n)
            m, dt, dev = t["m"], t["x"].dtype, t["x"].device
            y = torch.empty_like(t["x"])
            rows, calls, first = [], [], None
            for label, keys in candidates(kind, dtype):
                cols = label != NO_COLUMNS
                try:
                    k, name = build(kind, dtype, n, label, keys)
                    assert name == "rows_bulk_backward", f"dispatched to {name}"
                    outs = [torch.empty_like(t["x"])] + [torch.empty(n, device=dev, dtype=dt)
                                                         for _ in range((1 + layer) if cols else 0)]
                    k(*norm_args(kind, t, outs))
                    torch.cuda.synchronize()
                    if not cols:
                        ok = "dx bits = default's" if first is not None and torch.equal(outs[0], first[0]) else \
                            "dx bits != default's"
                    else:
                        ok = norm_check(torch, kind, dtype, t, k, outs)
                        if first is None:
                            first = [o.clone() for o in outs]
                        else:
                            same = [torch.equal(a, b) for a, b in zip(outs, first)]
                            ok += ", bits = default's" if all(same) else \
                                (", dweight/dbias bits = default's" if all(same[1:]) else ", bits != default's")
                    rows.append((label, keys, launch_of(k, m, sms), sass_per_element(k, n), ok))
                    calls.append(lambda k=k, a=norm_args(kind, t, outs): k(*a))
                except Exception as e:  # noqa: BLE001 - a candidate that does not build or launch: the row says why
                    print(f"| {kind} | {dtype} | {n} | {label} | n/a | | | | {str(e).splitlines()[0][-90:]} |", flush=True)
            times, copy, moved = timed_against_copy(torch, t["x"], y, calls)
            for (label, keys, launch, sass, ok), us in zip(rows, times[1:]):
                gbs = moved / us / 1e3
                good = ok.startswith("ok") and " err " not in ok and "differ" not in ok and "!=" not in ok
                if label != NO_COLUMNS:  # (a candidate whose check failed is never flipped)
                    results.append((kind, dtype, n, label, keys, gbs / copy if good else 0.0))
                print(f"| {kind} | {dtype} | {n} | {label} | {launch} | {sass} | {gbs:,.0f} | {gbs / copy:.3f} | {ok} |",
                      flush=True)
            print(f"| copy | {dtype} | {n} | | | | {copy:,.0f} | 1.000 | |", flush=True)
            del t, y, calls, first
            torch.cuda.empty_cache()
    print_flips("the fastest candidate per cell, its check passed, >= 1.01x the default", flips(results), t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
