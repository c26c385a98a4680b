#!/usr/bin/env python3
"""Which variant serves a norm's backward best (issue 30, section 4): rms_norm_backward and
layer_norm_backward (dx, dweight, dbias) with each candidate variant forced, GB/s of the
three tensors moved (x and dy read, dx written; M x N = 2^28), beside the copy kernel of
the same run, each result checked against torch (float64: dx of 256 rows, dweight and
dbias of all), its dweight bits against a second run, and (", bits = first's") every
output's bits against the first candidate's (the default). Some rows patch a setting
(:data:`CANDIDATES`: the column sums in registers, more units, rows_slices' CTAs; with
``--set pipeline`` the default against rows_backward.PIPELINE and OVERLAP and
rows_slices' loads in flight: :data:`PIPELINE_CANDIDATES`; with ``--set bulk`` the default
against rows_bulk_backward, forced through its CHOSEN table, and its settings:
:data:`BULK_CANDIDATES`, softmax_backward and log_softmax_backward too; with ``--set fast``
the default against rows_bulk_backward with dy in registers (GRAD_REGISTERS), its ring's
slots, CTAS_PER_SM and 16-byte bfloat16 vectors, and rows_cta at 1024:
:data:`FAST_CANDIDATES`, in the order of ``--cells``), built outside the compile cache. ``--budget-s``: the rows past
that many seconds are skipped (each says so); ``--dry-run``: no GPU, each kernel the run
would time built for sm_90a and assembled (ptxas's registers and spills).

    python3 tools/diag.py rows_backward [--ns 16384,65536] [--dtypes bfloat16] [--kinds rms_norm_backward]
    python3 tools/diag.py rows_backward --set pipeline --kinds rms_norm_backward,layer_norm_backward
    python3 tools/diag.py rows_backward --set bulk --ns 65536,262144 \
        --kinds rms_norm_backward,layer_norm_backward,softmax_backward,log_softmax_backward
    python3 tools/diag.py rows_backward --set fast --budget-s 150 \
        --cells float32:262144,bfloat16:262144,bfloat16:65536,bfloat16:16384,bfloat16:4096,bfloat16:1024 \
        --kinds layer_norm_backward,rms_norm_backward,softmax_backward,log_softmax_backward [--dry-run]
    python3 tools/diag.py rows_backward --set norms --budget-s 150 [--cells bfloat16:65536,...] [--dry-run]
    python3 tools/diag.py rows_backward --set long --budget-s 150 [--kinds layer_norm_backward] [--dry-run]
    PROBE_ARGS="--set ce --budget-s 150" bash tools/gpu.sh probe:rows_backward   [--cells bfloat16:4096,...] [--dry-run]
    PROBE_ARGS="--set ceflat --budget-s 130" bash tools/gpu.sh probe:rows_backward   [--cells ...] [--dry-run]

``--set ce`` (:func:`ce`, :func:`ce_candidates`, :data:`CE_CELLS`): cross_entropy's backward
(0.85 to 0.92 of copy on an H200, issue-bound: 14 SASS instructions an element in float32,
16 in bfloat16) against rows_backward.CE_FAST and CE_TARGET_APART and the variant's ``.minnctapersm``, timed as ``--set norms``, dx against float64, its bits with M
(the first 37 rows alone) and against the default's; the dry run prints each candidate's
registers, spills and SASS an element; the run ends with the table entries to flip.

``--set ceflat`` (:func:`ceflat_candidates`, :data:`CEFLAT_CELLS`): cross_entropy's backward,
the dispatch against rows_ce_flat.CE_FLAT (dx as one flat stream of the whole ``M x N``
buffer, elementwise from the row's lse, target and gradient: the row kernels' bits) at a few
shapes, with TARGET_APART, with rows_backward.CE_FAST, and bfloat16's 8-byte vectors; timed
and checked as ``--set ce``; ends with the rows_ce_flat table entries to set.

``--set norms`` (:func:`norms`): issue 30's weak norm-backward cells (:data:`NORMS_CELLS`),
the default against each of :func:`norm_candidates` (rows_common.NORM_BACKWARD_UNITS,
NORM_BACKWARD_WARP_N and WIDE_BF16, rows_backward.WARP_PIPELINE, rows_warp / rows_cta
.minnctapersm, rows_bulk_backward's threads and dy in registers) on the same tensors, GPU
time from a CUDA graph of 10 calls (the median of 5 replays, the median of 3 rounds in
turns with the copy kernel), each checked against torch in float64 and its bits against
the default's, with its grid, ptxas's registers and spills and the units the GPU holds at
once.

``--set long`` (:func:`long_candidates`, :data:`LONG_CELLS`): the norms' backward at
262144 (float32 and bfloat16) on rows_bulk_backward against its STATS_AHEAD setting (and
the ring's slots), and against the kernel without dweight / dbias (what the column sums cost), timed as ``--set norms``.

GPU time: CUDA events around ``--calls`` calls back to back, the median of 5.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

os.environ["BULKRED_CACHE"] = "0"  # built here, each time: the patched constants take effect
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (rows_forward's ptxas_info)

BWD = "bulkred_dialect.passes.variants.rows_backward"
COMMON = "bulkred_dialect.passes.variants.rows_common"
SLICES = "bulkred_dialect.passes.variants.rows_slices"
REGS = {f"{BWD}.SHARED_COLUMNS": False}
UNITS = {f"{COMMON}.SLICE_SUM_FLOATS": 1 << 22}
SLICES_2 = {f"{SLICES}.BLOCK": 256, f"{SLICES}.CTAS_PER_SM": 2, f"{SLICES}.SHARED_BYTES": 96 * 1024}
CANDIDATES = {  # N: (label, forced variant, {module.attr: value} patches); those that do not apply say why
    1024: [("rows_warp", "rows_warp", {}), ("rows_cta", "rows_cta", {})],
    4096: [("rows_cta", "rows_cta", {}), ("rows_cta, columns in registers", "rows_cta", REGS),
           ("rows_cta, 2^22 partials", "rows_cta", UNITS)],
    8192: [("rows_cta", "rows_cta", {}), ("rows_cta, columns in registers", "rows_cta", REGS),
           ("rows_cluster", "rows_cluster", {})],
    16384: [("rows_cluster", "rows_cluster", {}), ("rows_cluster, columns in registers", "rows_cluster", REGS),
            ("rows_cluster, 2^22 partials", "rows_cluster", UNITS), ("rows_slices", "rows_slices", {})],
    65536: [("rows_cluster", "rows_cluster", {}), ("rows_slices", "rows_slices", {}),
            ("rows_slices 256 x 2", "rows_slices", SLICES_2)],
    262144: [("rows_slices", "rows_slices", {}), ("rows_slices 256 x 2", "rows_slices", SLICES_2)],
}
PIPE = {f"{BWD}.PIPELINE": True}
PIPE_8 = {**PIPE, f"{COMMON}.NORM_BACKWARD_VALUES": 8}
PIPE_SHARED = {**PIPE, f"{BWD}.SHARED_COLUMNS": True}
CLUSTER_65536 = {f"{COMMON}.NORM_BACKWARD_SLICES_N": 1 << 30}  # rows_cluster takes rms_norm_backward bfloat16 too
SLICES_U8 = {f"{SLICES}.UNROLL": 8}
OVER = {f"{BWD}.OVERLAP": True}
SLICES_1024 = {f"{SLICES}.BLOCK": 1024}
PIPELINE_CANDIDATES = {  # --set pipeline: rows_backward.PIPELINE (the next row loaded over this row's sums) beside the
    # default, and rows_slices with more loads in flight (its one CTA per multiprocessor: UNROLL vectors per thread a
    # step, BLOCK threads; rows_backward.OVERLAP: a row's first read with the previous row's second)
    4096: [("default", None, {}), ("pipelined", None, PIPE), ("rows_cta, pipelined, 8 values", "rows_cta", PIPE_8),
           ("pipelined, columns in shared memory", None, PIPE_SHARED)],
    16384: [("default", None, {}), ("pipelined", None, PIPE), ("pipelined, columns in shared memory", None, PIPE_SHARED)],
    65536: [("default", None, {}), ("rows_cluster, pipelined", "rows_cluster", {**PIPE, **CLUSTER_65536}),
            ("rows_cluster, pipelined, columns in shared memory", "rows_cluster", {**PIPE_SHARED, **CLUSTER_65536}),
            ("rows_slices, unroll 8", "rows_slices", SLICES_U8), ("rows_slices, overlapped", "rows_slices", OVER),
            ("rows_slices, overlapped, unroll 8", "rows_slices", {**OVER, **SLICES_U8})],
    262144: [("default", None, {}), ("rows_slices, unroll 8", "rows_slices", SLICES_U8),
             ("rows_slices, 1024 threads", "rows_slices", SLICES_1024), ("rows_slices, overlapped", "rows_slices", OVER),
             ("rows_slices, overlapped, unroll 8", "rows_slices", {**OVER, **SLICES_U8})],
}
SOFTMAX_CANDIDATES = {  # softmax_backward (its dx from y and dy): rows_slices beside the default
    65536: [("default", None, {}), ("rows_slices", "rows_slices", {f"{SLICES}.SOFTMAX": True})],
    262144: [("default", None, {}), ("rows_slices", "rows_slices", {f"{SLICES}.SOFTMAX": True})],
}
BULK = "bulkred_dialect.passes.variants.rows_bulk_backward"
BULK_ON = {f"{BULK}.CHOSEN": [(d, None, 1, 1 << 30) for d in ("bfloat16", "float32", "float16")]}  # forced where it fits
BULK_FEWER = {**BULK_ON, f"{BULK}.CLUSTERS": {4: 32, 8: 15, 16: 7}}  # one unit fewer than 132 / C (a GPC's clusters)
BULK_6 = {**BULK_ON, f"{BULK}.SLOTS": 6}  # two rows ahead (where 6 slices fit: 32 KiB ones; the weight then from L2)
BULK_W = {**BULK_ON, f"{BULK}.WEIGHT_SHARED": False}  # the norms' weight read from global memory every pass
BULK_SOFTMAX = [("default", None, {}), ("rows_bulk_backward", "rows_bulk_backward", BULK_ON),
                ("rows_bulk_backward, a unit fewer", "rows_bulk_backward", BULK_FEWER),
                ("rows_bulk_backward, 6 slots", "rows_bulk_backward", BULK_6)]
BULK_CANDIDATES = {  # --set bulk: rows_bulk_backward (off by default: CHOSEN empty) beside the default
    n: BULK_SOFTMAX + [("rows_bulk_backward, weight from global memory", "rows_bulk_backward", BULK_W)]
    for n in (65536, 262144)
}
BULK_3 = {**BULK_ON, f"{BULK}.SLOTS": 3}  # softmax's: 96 KiB a CTA (32 KiB slices), two CTAs per multiprocessor
BULK_SOFTMAX_CANDIDATES = {  # (softmax's and log_softmax's: no weight, few registers)
    n: BULK_SOFTMAX + [("rows_bulk_backward, 3 slots", "rows_bulk_backward", BULK_3)] for n in (65536, 262144)
}

GRAD = {**BULK_ON, f"{BULK}.GRAD_REGISTERS": True}  # dy in registers, x's (y's) slices alone in the ring
GRAD_ROW = ("rows_bulk_backward, dy in registers", "rows_bulk_backward", GRAD)
WIDE_ROW = ("rows_bulk_backward, dy in registers, 16-byte bfloat16", "rows_bulk_backward",
            {**GRAD, f"{COMMON}.WIDE_BF16": True})  # 8 bfloat16 a vector: half the loads and stores, as many registers
TWO = {**BULK_ON, f"{BULK}.CTAS_PER_SM": 2}  # 2 CTAs of 512 a multiprocessor (shared memory would allow 4: 32 registers)
FAST_CANDIDATES = {  # --set fast: rows_bulk_backward.GRAD_REGISTERS (off by default) beside the default (at 65536
    # also rows_bulk_backward as it is, not chosen there for bfloat16 and log_softmax). Its ring: SLOTS (4, or 3 where
    # 4 do not fit: float32 262144's 64 KiB slices), the next 3 (2) rows' x ahead; 2 slots, one row's x and the
    # weight's slice beside (float32 262144 only: bfloat16's would take 2 CTAs a multiprocessor, 64 registers);
    # 6 slots, five rows' x (the weight from L2; float32 262144's: 3, as the default). 16384: one CTA (two for
    # float32) a row, a multiprocessor's one CTA with the next row (rows) in flight where rows_cluster's registers
    # hold a row's; 4096: one CTA a row, 2 a multiprocessor (CTAS_PER_SM), 12 slots: 5 rows ahead (dy in registers:
    # 11 rows' x). 1024: rows_cta (128 threads, 91 registers: 5 CTAs a multiprocessor) where rows_warp's 256 threads
    # take 199 registers (one CTA); rows_bulk_backward, 4 CTAs of 256 a multiprocessor, 7 rows ahead each
    65536: [("default", None, {}), ("rows_bulk_backward", "rows_bulk_backward", BULK_ON), GRAD_ROW,
            ("rows_bulk_backward, dy in registers, 6 slots", "rows_bulk_backward", {**GRAD, f"{BULK}.SLOTS": 6}),
            WIDE_ROW],
    16384: [("default", None, {}), ("rows_bulk_backward", "rows_bulk_backward", BULK_ON), GRAD_ROW, WIDE_ROW],
    1024: [("default", None, {}), ("rows_cta, pipelined", "rows_cta", PIPE),
           ("rows_cta, not pipelined", "rows_cta", {f"{BWD}.PIPELINE": False}),
           ("rows_bulk_backward, at most 4 CTAs, 16 slots", "rows_bulk_backward",
            {**BULK_ON, f"{BULK}.CTAS_PER_SM": 4, f"{BULK}.SLOTS": 16})],
    4096: [("default", None, {}), ("rows_bulk_backward, at most 2 CTAs", "rows_bulk_backward", TWO),
           ("rows_bulk_backward, at most 2 CTAs, 12 slots", "rows_bulk_backward", {**TWO, f"{BULK}.SLOTS": 12}),
           ("rows_bulk_backward, dy in registers, at most 2 CTAs", "rows_bulk_backward", {**GRAD, **TWO}),
           ("rows_bulk_backward, dy in registers, at most 2 CTAs, 12 slots", "rows_bulk_backward",
            {**GRAD, **TWO, f"{BULK}.SLOTS": 12})],
    262144: [("default", None, {}), GRAD_ROW,
             ("rows_bulk_backward, dy in registers, 2 slots", "rows_bulk_backward", {**GRAD, f"{BULK}.SLOTS": 2}),
             ("rows_bulk_backward, dy in registers, 6 slots", "rows_bulk_backward", {**GRAD, f"{BULK}.SLOTS": 6}),
             WIDE_ROW],
}
FAST_SOFTMAX_CANDIDATES = {  # (at 16384 and below: 0.94 to 1.00 of copy); at 262144 rows_bulk_backward as it is too,
    # for log_softmax (its default rows_slices: not in rows_bulk_backward.CHOSEN, never measured)
    65536: FAST_CANDIDATES[65536],
    262144: [FAST_CANDIDATES[262144][0], ("rows_bulk_backward", "rows_bulk_backward", BULK_ON),
             *FAST_CANDIDATES[262144][1:]],
}
ONLY = {("rows_bulk_backward, dy in registers, 2 slots", 262144): "float32",
        ("rows_bulk_backward, dy in registers, 6 slots", 262144): "bfloat16",
        **{(WIDE_ROW[0], n): "bfloat16" for n in (16384, 65536, 262144)}}
"""Candidates timed for one element type only (at that N): the others' are the default's
configuration again or spill (see FAST_CANDIDATES)."""


TOTAL = 1 << 28
"""--set norms: M x N of each cell (issue 30's 2^28 elements)."""
DEVICE = "cuda"
NORMS_CELLS = "bfloat16:65536,float32:262144,bfloat16:1024,bfloat16:16384,bfloat16:4096,bfloat16:262144"
"""--set norms' cells (dtype:N), the furthest below issue 30's target first
(docs/rows_bench_h200_run4.md, x copy: bfloat16 65536 rms 0.76 / layer 0.65; float32
262144 layer 0.62, rms 0.79; bfloat16 1024 0.87 / 0.82, 16384 0.87 / 0.79, 4096 0.84 /
0.88, 262144 layer 0.75): past ``--budget-s`` the last are left out."""
WIDE = {f"{COMMON}.WIDE_BF16": True}
WARP = "bulkred_dialect.passes.variants.rows_warp"
CTA = "bulkred_dialect.passes.variants.rows_cta"


def units(kind: str, dtype: str, n: int, count: int) -> dict:
    """The patch giving the cell ``count`` units (rows_common.NORM_BACKWARD_UNITS)."""
    return {f"{COMMON}.NORM_BACKWARD_UNITS": {(kind, dtype): ((n, n, count),)}}


def norm_candidates(kind: str, dtype: str, n: int) -> list[tuple[str, str | None, dict]]:
    """--set norms: the default beside the settings of each cell (label, forced variant,
    patches). The units (rows_common.NORM_BACKWARD_UNITS) are counted against what the
    H200's 132 multiprocessors hold at once (the default's: rows_warp 1024, 256 threads at
    168 / 199 registers: 1 CTA a multiprocessor, 264 CTAs in 2 waves; rows_cta 4096, 256
    threads at 124 / 128: 2, 512 (rms) / 256 (layer) CTAs, the cap of SLICE_SUM_FLOATS;
    16384: rms rows_bulk_backward, 128 CTAs (the same cap) of 132, layer rows_cluster, 128
    clusters of 2 at 1 CTA a multiprocessor; 65536: rows_cluster, 66 clusters of 8 at 1
    CTA a multiprocessor, 16 at once: 5 waves for 4.1 of work; 262144:
    rows_bulk_backward, 7 clusters of 16: 112 multiprocessors)."""
    u = lambda count: units(kind, dtype, n, count)  # noqa: E731
    layer = kind == "layer_norm_backward"
    out: list[tuple[str, str | None, dict]] = [("default", None, {})]
    if n <= 1024:  # rows_warp: 8 rows (32 KiB of x and dy in bfloat16) in flight a multiprocessor
        out += [("rows_warp pipelined (the next row's loads over this row's butterfly)", None,
                 {f"{BWD}.WARP_PIPELINE": True}),
                ("rows_warp pipelined, 16-byte bfloat16 vectors", None, {f"{BWD}.WARP_PIPELINE": True, **WIDE}),
                ("rows_warp, .minnctapersm 2 (264 CTAs at once)", None, {f"{WARP}.MIN_CTAS": 2}),
                ("rows_warp, 132 units (one wave)", None, u(132)),
                ("rows_cta (2048 / 1024 CTAs of 128 at 89 / 91 registers: 5 a multiprocessor, 3.1 / 1.6 waves)",
                 "rows_cta", {}),
                ("rows_cta (NORM_BACKWARD_WARP_N), 660 units (one wave of 5 a multiprocessor)", None,
                 {f"{COMMON}.NORM_BACKWARD_WARP_N": {dtype: n // 2}, **u(660)}),
                ("rows_cta, .minnctapersm 6, 792 units", "rows_cta", {f"{CTA}.MIN_CTAS": 6, **u(792)}),
                ("rows_cta, .minnctapersm 8, 1056 units", "rows_cta", {f"{CTA}.MIN_CTAS": 8, **u(1056)})]
    elif n <= 8192:
        out += [("264 units (one wave of 2 a multiprocessor)", None, u(264)), ("132 units", None, u(132)),
                ("528 units (two waves)", None, u(528))]
    elif n <= 16384 and not layer:
        out += [("132 units (one a multiprocessor)", None, u(132))]
    elif n <= 16384:
        out += [("66 units (one wave of clusters of 2)", None, u(66)), ("132 units (two waves)", None, u(132)),
                ("rows_bulk_backward", "rows_bulk_backward", BULK_ON),
                ("rows_bulk_backward, 132 units", "rows_bulk_backward", {**BULK_ON, **u(132)})]
    elif n <= 65536:
        out += [(f"{k} units{' (one wave)' if k <= 16 else ''}", None, u(k)) for k in (16, 15, 14, 32)]
        out += [("16 units, 16-byte bfloat16 vectors", None, {**u(16), **WIDE})] if dtype == "bfloat16" else []
    if n > 65536:  # rows_bulk_backward: 32 warps a multiprocessor (16 at 512), half the values (column sums) a thread
        t1024 = {f"{BULK}.BLOCK": 1024}
        out += [("1024 threads", None, t1024)]
        out += [("1024 threads, dy in registers, 2 slots (the weight's slice in shared memory)", None,
                 {**t1024, f"{BULK}.GRAD_REGISTERS": True, f"{BULK}.SLOTS": 2})] if dtype == "float32" else []
    if dtype == "bfloat16":  # 8 bfloat16 a load: half the loads and stores
        out += [("16-byte bfloat16 vectors", None, WIDE)]
    return out


LONG_CELLS = "float32:262144,bfloat16:262144"
"""--set long's cells (dtype:N): issue 30's backward at 262144 below its 0.85 of copy
(docs/rows_bench_h200_run5.md: float32 layer_norm 0.61, rms_norm 0.81, bfloat16
layer_norm 0.74), all on rows_bulk_backward: clusters of 16 CTAs of 512 threads, 7 at
once on an H200 (rows_bulk_backward.CLUSTERS: 112 of 132 multiprocessors, one wave of
1024 rows, 146 or 147 a cluster), one CTA a multiprocessor. A CTA's slice of a row: 64
KiB of each tensor in float32 (3 slots of 192 KiB: this row's x and dy and the next
row's x, the weight's 64 KiB read from L2 in both passes; rms_norm: dy in registers, 2
slots of x and the weight's slice), 32 KiB in bfloat16 (4 slots and the weight's slice:
160 KiB, the next row's x and dy copied ahead). Moved: 3 x 2^28 elements (3 GiB float32,
1.5 GiB bfloat16); per CTA and row 192 / 96 KiB, at 0.85 of copy (about 3.6 TB/s over
112 multiprocessors) 6.0 / 3.0 us a row (measured: 8.6 us float32 layer_norm, 6.4
rms_norm; 3.5 bfloat16 layer_norm, 2.9 rms_norm). The column sums: 7 partial rows of N
float32 per output (7 MiB an output: 14 MiB for layer_norm's two, written, read and set
back to zero, and one group row an output: about 48 MiB of mostly L2 traffic, 1.6% of
float32's 3 GiB and 3.1% of bfloat16's 1.5 GiB; fewer units would leave multiprocessors
idle), added by the last CTA of each rank (16 CTAs, each 7 rows of its 16384 columns
an output, one row after another: 7 dependent L2 loads a column vector, 8 vectors a
thread, below rows_backward.SUM_LOADS' 16 a step; then the group row): an estimated 10
to 20 us while the rest of the GPU is idle, 1 to 2% of float32's time at 0.85 and 2 to
4% of bfloat16's. The rows "the tail's sums 4 rows a step" and "no dweight / dbias" (the
tail and the column sums' 64 registers at once: layer_norm 128 -> 86 / 56 registers)
measure it."""
NO_COLUMNS = "no column sums"
"""A candidate's key (not a module constant): the kernel built without dweight and dbias
(its dx's bits checked against the default's)."""


def long_candidates(kind: str, dtype: str, n: int) -> list[tuple[str, str | None, dict]]:
    """--set long: the default beside rows_bulk_backward's STATS_AHEAD (and the ring's
    slots), and the kernel without its column sums."""
    ahead = {f"{BULK}.STATS_AHEAD": True}
    out: list[tuple[str, str | None, dict]] = [("default", None, {}), ("statistics ahead", None, ahead)]
    layer = kind == "layer_norm_backward"
    if dtype != "float32" and layer:  # bfloat16 default: 4 slots (this row's and the next row's x and dy) and the weight's slice
        out += [("5 slots and the weight's slice (1.5 rows ahead)", None, {f"{BULK}.SLOTS": 5})]
    if layer:  # the tail's sums of the 7 units' partial rows: SUM_LOADS (16) rows a step, the rest one by one (7
        # dependent L2 loads a column vector); 4 a step: 4 round trips instead of 7 (the same order, the same bits)
        out += [("the tail's sums 4 rows a step (rows_backward.SUM_LOADS 4)", None, {f"{BWD}.SUM_LOADS": 4})]
    return out + [("no dweight / dbias (the column sums' cost)", None, {NO_COLUMNS: True})]


def graph_medians(torch, calls: list, rounds: int = 3) -> list[float]:
    """GPU us a call of each of ``calls`` (a CUDA graph of 10 calls, benchmarks/
    reductions_api.py's graph_us: the median of 5 replays), timed in turns ``rounds``
    times (each round the calls in order), the median of each call's rounds."""
    import reductions_api as RA

    times: list[list[float]] = [[] for _ in calls]
    for _ in range(rounds):
        for i, fn in enumerate(calls):
            times[i].append(RA.graph_us(torch, lambda _, c=fn: c(), [None], 10, 5))
    return [statistics.median(t) for t in times]


def gpu_table(torch, head: str, align: str) -> tuple[float, int]:
    """A probe's start on the GPU: its clock, the GPU's line (:func:`gpu_banner`) and its
    table's ``head`` and ``align`` rows; (the clock's start, the multiprocessors)."""
    t0 = time.time()
    sms = gpu_banner(torch)
    print(head)
    print(align)
    return t0, sms


def timed_against_copy(torch, x, y, calls: list, tensors: int = 3) -> tuple[list[float], float, int]:
    """The copy kernel (``x`` into ``y``) and ``calls`` timed in turns (:func:`graph_medians`):
    (their GPU us a call, the copy's first; the copy's GB/s, x read and y written; the bytes a
    call moves, ``tensors`` times x's)."""
    times = graph_medians(torch, [lambda: torch.mul(x, 1.0, out=y)] + calls)
    return times, 2 * x.numel() * x.element_size() / times[0] / 1e3, tensors * x.numel() * x.element_size()


def print_flips(head: str, lines: list[str], t0: float, note: str = "") -> None:
    """A probe's last lines: the table entries to flip (``lines``, under ``head``) and its time since ``t0``."""
    print(f"\nTo flip ({head}):")
    for line in lines:
        print(f"- {line}")
    print(f"probe time: {time.time() - t0:.0f} s{note}")


def dry_rows(header: str, items) -> tuple[int, int]:
    """A ``--dry-run`` table: ``header`` (its last column's name) and a row for each
    ``(kind, dtype, N, label, build)`` of ``items``, ``build()`` giving (the variant, the
    launch, the last column), or why it does not build. (rows, failed)."""
    print(f"| kind | dtype | N | setting | variant | grid x threads (x cluster), regs / spill | {header} |")
    print("| --- | --- | ---: | --- | --- | --- | ---: |")
    count = failed = 0
    for kind, dtype, n, label, build in items:
        count += 1
        try:
            name, launch, last = build()
            print(f"| {kind} | {dtype} | {n} | {label} | {name} | {launch} | {last} |", flush=True)
        except Exception as e:  # noqa: BLE001 - a candidate that does not build: say why
            failed += 1
            print(f"| {kind} | {dtype} | {n} | {label} | n/a | {str(e).splitlines()[0][-90:]} | |", flush=True)
    return count, failed


def probe_args(doc: str, cells: str, cells_help: str = "dtype:N pairs in the order measured", kinds: str | None = None):
    """A probe's arguments (``--cells``, ``--kinds`` where ``kinds`` is given: the norms'
    backward kinds only, ``--budget-s``, ``--dry-run``): (the parser, the arguments)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--cells", default=cells, help=cells_help)
    if kinds is not None:
        ap.add_argument("--kinds", default=kinds)
    ap.add_argument("--budget-s", type=float, default=0, help="skip the cells past this many seconds (0: none)")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: build and assemble each candidate for sm_90a")
    args = ap.parse_args()
    if kinds is not None and not {"rms_norm_backward", "layer_norm_backward"} >= set(args.kinds.split(",")):
        ap.error("--kinds: rms_norm_backward and layer_norm_backward only")
    return ap, args


def norm_inputs(torch, kind: str, dtype: str, n: int) -> dict:
    """One cell's tensors, fresh random data (x of mean 0.3 and spread 2, dy, the weight),
    the forward's statistics in float32 and dweight / dbias in float64 (torch)."""
    layer = kind == "layer_norm_backward"
    m, dt = TOTAL // n, getattr(torch, dtype)
    x = torch.randn(m, n, device=DEVICE).mul_(2).add_(0.3).to(dt)
    dy = torch.randn(m, n, device=DEVICE).to(dt)
    w = torch.randn(n, device=DEVICE).to(dt)
    xd = x.double()
    mean = xd.mean(-1) if layer else None
    xc = xd - mean[:, None] if layer else xd
    rstd = (1 / (xc * xc).mean(-1).add(1e-5).sqrt()).float()
    xc.mul_(rstd.double()[:, None])
    want = [(dy.double() * xc).sum(0)] + ([dy.double().sum(0)] if layer else [])
    del xc, xd
    return {"m": m, "x": x, "dy": dy, "w": w, "mean": None if mean is None else mean.float(), "rstd": rstd, "want": want}


def norm_check(torch, kind: str, dtype: str, t: dict, k, outs: list) -> str:
    """The call's dx (256 rows) against torch's autograd in float64, dweight / dbias
    against float64, dweight's bits over a second call."""
    import torch.nn.functional as F

    layer, n = kind == "layer_norm_backward", t["x"].shape[1]
    dx, dw = outs[0], outs[1]
    dw0 = dw.clone()
    k(*norm_args(kind, t, outs))
    torch.cuda.synchronize()
    xr, wr = t["x"][:256].double().requires_grad_(), t["w"].double().requires_grad_()
    out = F.layer_norm(xr, (n,), wr, None, 1e-5) if layer else F.rms_norm(xr, (n,), wr, 1e-5)
    out.backward(t["dy"][:256].double())
    err = (dx[:256].double() - xr.grad).abs().max().item() / max(1.0, xr.grad.abs().max().item())
    ok = ("ok" if err < (5e-5 if dtype == "float32" else 2**-6) else f"dx err {err:.2e}")
    ok += "" if torch.equal(dw0, dw) else ", dw bits differ run to run"
    for name, got, ref in zip(("dw", "db"), outs[1:], t["want"]):
        e = ((got.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
        ok += f", {name} err {e:.1e}" if e > (1e-4 if dtype == "float32" else 2**-7) else ""
    return ok


def norm_args(kind: str, t: dict, outs: list) -> list:
    """The kernel's arguments: x, dx, dy, weight, (mean), rstd, dweight, (dbias)."""
    layer = kind == "layer_norm_backward"
    return [t["x"], outs[0], t["dy"], t["w"]] + ([t["mean"]] if layer else []) + [t["rstd"]] + outs[1:]


def launch_of(k, m: int, sms: int = 0) -> str:
    """``G x T (x C)``: the grid's CTAs for M rows, the threads, the cluster; ptxas's
    registers / spilled bytes; with ``sms`` (on the GPU) the units it holds at once
    (rows_forward.resident: the occupancy API)."""
    from rows_forward import ptxas_info, resident

    sig = k.signature
    grid = sig.grid_for([m]) or sig.launch.grid[0]
    c = sig.launch.cluster[0]
    return (f"{grid} x {sig.launch.block[0]}" + (f" x {c}" if c > 1 else "") + f", {ptxas_info(k)}"
            + (f", {resident(k, sms)} units at once" if sms else ""))


def chosen_variant(kind: str, dtype: str, n: int, variant: str | None) -> str:
    """The variant the dispatch takes for the cell (with the patches in force)."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose

    if variant is not None:
        return variant
    layer = kind == "layer_norm_backward"
    op = next(o for o in row_kernels.module(kind, None, n, dtype, weight=dtype, dweight=dtype,
                                            dbias=dtype if layer else None).walk()
              if o.name == "bulkred.normalize_rows")
    return choose(op, Target.parse("sm_90a")).name


def norms(args, candidates=norm_candidates) -> int:
    """``--set norms``: per cell, on the same tensors (fresh random data), the copy kernel
    and each of :func:`norm_candidates` timed in turns (a CUDA graph of 10 calls, medians:
    :func:`graph_medians`), each checked against torch (:func:`norm_check`) and its bits
    against the default's; GB/s of x and dy read and dx written, against the copy's."""
    import torch

    from bulkred_dialect import row_kernels

    t0, sms = gpu_table(torch, "| kind | dtype | N | setting | variant | grid x threads (x cluster), regs / spill, "
                        "units at once | GB/s | x copy | check |", "| --- | --- | ---: | --- | --- | --- | ---: | ---: | --- |")
    for dtype, n in cells(args):
        for kind in args.kinds.split(","):
            if args.budget_s and time.time() - t0 > args.budget_s:
                print(f"| {kind} | {dtype} | {n} | skipped: past the budget | | | | | |", flush=True)
                continue
            layer = kind == "layer_norm_backward"
            t = norm_inputs(torch, kind, dtype, n)
            m, dt = t["m"], t["x"].dtype
            y = torch.empty_like(t["x"])
            rows, calls, first = [], [], None
            dev = t["x"].device
            for label, variant, patches in candidates(kind, dtype, n):
                cols = not patches.get(NO_COLUMNS, False)
                patches = {k: v for k, v in patches.items() if k != NO_COLUMNS}
                try:
                    with patched(patches):
                        row_kernels._KERNELS.clear()
                        k = row_kernels.kernel_for(kind, None, n, dtype, weight=dtype, dweight=dtype if cols else None,
                                                   dbias=dtype if layer and cols else None, variant=variant)
                        name = chosen_variant(kind, dtype, n, variant)
                    outs = [torch.empty_like(t["x"])] + [torch.empty(n, device=dev, dtype=dt)
                                                         for _ in range((1 + layer) if cols else 0)]
                    k(*norm_args(kind, t, outs))
                    torch.cuda.synchronize()
                    if not cols:  # dx alone: its bits against the default's
                        ok = "dx bits = default's" if first is not None and torch.equal(outs[0], first[0]) else \
                            "dx bits != default's"
                        rows.append((label, name, launch_of(k, m, sms), ok))
                        calls.append(lambda k=k, a=norm_args(kind, t, outs): k(*a))
                        continue
                    ok = norm_check(torch, kind, dtype, t, k, outs)
                    if first is None:
                        first = [o.clone() for o in outs]
                    else:
                        ok += ", bits = default's" if all(torch.equal(a, b) for a, b in zip(outs, first)) else \
                            (", dx bits = default's" if torch.equal(outs[0], first[0]) else ", bits != default's")
                    rows.append((label, name, launch_of(k, m, sms), ok))
                    calls.append(lambda k=k, a=norm_args(kind, t, outs): k(*a))
                except Exception as e:  # noqa: BLE001 - a setting that does not apply or fails: the row says why
                    print(f"| {kind} | {dtype} | {n} | {label} | n/a | | | | {str(e).splitlines()[0][-90:]} |",
                          flush=True)
            times, copy, moved = timed_against_copy(torch, t["x"], y, calls)
            for (label, name, launch, ok), us in zip(rows, times[1:]):
                gbs = moved / us / 1e3
                print(f"| {kind} | {dtype} | {n} | {label} | {name} | {launch} | {gbs:,.0f} | {gbs / copy:.3f} | "
                      f"{ok} |", flush=True)
            print(f"| copy | {dtype} | {n} | | | | {copy:,.0f} | 1.000 | |", flush=True)
            del t, y, calls
            torch.cuda.empty_cache()
    return 0


def applies(label: str, n: int, dtype: str) -> bool:
    """Whether the candidate ``label`` is timed at ``n`` and ``dtype`` (:data:`ONLY`)."""
    return ONLY.get((label, n), dtype) == dtype


def gpu_banner(torch) -> int:
    """Print the GPU, its multiprocessors and torch's version (a probe set's first line); the multiprocessors."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"GPU: {torch.cuda.get_device_name()} ({sms} multiprocessors); torch {torch.__version__}")
    return sms


@contextlib.contextmanager
def patched(patches: dict):
    """Module constants (``"package.module.NAME": value``) set for the block (the kernels
    built inside it see them): unittest.mock.patch of each."""
    from unittest import mock

    with contextlib.ExitStack() as stack:
        for k, v in patches.items():
            stack.enter_context(mock.patch(k, v))
        yield


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


def softmax_rows(torch, kind, dtype, n, x, dy, copy, moved, calls, row_kernels, kernel_for, table=None) -> None:
    """softmax_backward's rows of the table: dx = y (dy - sum(dy y)) from y = softmax(x);
    log_softmax_backward's: dx = dy - exp(y) sum(dy) from y = log_softmax(x)."""
    soft = kind == "softmax_backward"
    y = (torch.softmax if soft else torch.log_softmax)(x.float(), -1).to(x.dtype)
    for label, variant, patches in (table if table is not None else SOFTMAX_CANDIDATES).get(n, []):
        if not applies(label, n, dtype):
            continue
        try:
            with patched(patches):
                row_kernels._KERNELS.clear()
                k = kernel_for(kind, None, n, dtype, variant=variant)
            dx = torch.empty_like(x)
            k(y, dx, dy)
            yd, gd = y[:256].double(), dy[:256].double()
            want = yd * (gd - (gd * yd).sum(-1, keepdim=True)) if soft else gd - yd.exp() * gd.sum(-1, keepdim=True)
            err = (dx[:256].double() - want).abs().max().item() / max(1e-30, want.abs().max().item())
            ok = "ok" if err < (1e-4 if dtype == "float32" else 2**-6) else f"dx err {err:.2e}"
            ms = gpu_ms(torch, lambda: k(y, dx, dy), calls)
        except Exception as e:  # noqa: BLE001 - a variant that does not apply, or a failed launch: say why
            print(f"| {kind} | {dtype} | {n} | {label} | n/a | | {str(e).splitlines()[0][-90:]} |")
            continue
        gbs = moved / ms / 1e6
        print(f"| {kind} | {dtype} | {n} | {label} | {gbs:,.0f} | {gbs / copy:.2f} | {ok} |", flush=True)


def tables(which: str, rows_common) -> dict:
    """The norms' candidates of ``--set which``."""
    if which == "pipeline":
        return PIPELINE_CANDIDATES
    if which == "bulk":
        return BULK_CANDIDATES
    if which == "fast":
        return FAST_CANDIDATES
    rows_common.NORM_BACKWARD_CTA_N = 16384  # rows_cta forced at 16384 too (the dispatch stops at 8192)
    return CANDIDATES


def softmax_table(which: str) -> dict | None:
    """softmax's and log_softmax's candidates of ``--set which`` (None: SOFTMAX_CANDIDATES)."""
    return {"bulk": BULK_SOFTMAX_CANDIDATES, "fast": FAST_SOFTMAX_CANDIDATES}.get(which)


def cells(args) -> list[tuple[str, int]]:
    """(element type, N) in the order measured: ``--cells`` (``float32:262144,...``), else
    each of ``--dtypes`` with each of ``--ns``."""
    if args.cells:
        return [(c.split(":")[0], int(c.split(":")[1])) for c in args.cells.split(",")]
    return [(d, int(n)) for d in args.dtypes.split(",") for n in args.ns.split(",")]


def dry_run(args) -> int:
    """``--dry-run``: each kernel of the run built for sm_90a (its patches applied) and
    assembled by ptxas (nvJitLink), with its registers and its PTX's lines; no GPU."""
    from bulkred_dialect.backend_ptx.assemble import registers_used
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module
    from bulkred_dialect.passes.variants import rows_common
    from bulkred_dialect.row_kernels import module

    if args.set in ("norms", "long"):
        return norms_dry_run(args, norm_candidates if args.set == "norms" else long_candidates)
    if args.set == "ce":
        return ce_dry_run(args)
    table = tables(args.set, rows_common)
    print("| kind | dtype | N | candidate | registers | PTX lines |")
    print("| --- | --- | ---: | --- | ---: | --- |")
    failed = 0
    for dtype, n in cells(args):
        for kind in args.kinds.split(","):
            norm = kind in ("rms_norm_backward", "layer_norm_backward")
            rows = table.get(n, [("default", None, {})]) if norm else \
                (softmax_table(args.set) or SOFTMAX_CANDIDATES).get(n, [])
            layer = kind == "layer_norm_backward"
            kw = {"weight": dtype, "dweight": dtype, "dbias": dtype if layer else None} if norm else {}
            for label, variant, patches in rows:
                if not applies(label, n, dtype):
                    continue
                try:
                    with patched(patches):
                        ptx = compile_tile_module(module(kind, None, n, dtype, variant=variant, **kw),
                                                  "sm_90a").kernel("rows").module.ptx
                    regs = registers_used(ptx, "sm_90a")
                except Exception as e:  # noqa: BLE001 - a candidate that does not apply: say why
                    print(f"| {kind} | {dtype} | {n} | {label} | n/a | {str(e).splitlines()[0][-90:]} |")
                    failed += variant is not None and "measured" not in str(e)
                    continue
                print(f"| {kind} | {dtype} | {n} | {label} | {regs} | {ptx.count(chr(10))} |", flush=True)
    return 1 if failed else 0


def norms_dry_run(args, candidates=norm_candidates) -> int:
    """``--set norms --dry-run``: each candidate of each cell built (its patches applied)
    for sm_90a and assembled: the variant, the grid for M = 2^28 / N, threads, cluster,
    ptxas's registers and spilled bytes; no GPU. 1 where one does not build."""
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module
    from bulkred_dialect.row_kernels import module

    print("| kind | dtype | N | setting | variant | grid x threads (x cluster), regs / spill |")
    print("| --- | --- | ---: | --- | --- | --- |")
    failed = 0
    for dtype, n in cells(args):
        for kind in args.kinds.split(","):
            layer = kind == "layer_norm_backward"
            for label, variant, patches in candidates(kind, dtype, n):
                cols = not patches.get(NO_COLUMNS, False)
                patches = {k: v for k, v in patches.items() if k != NO_COLUMNS}
                try:
                    with patched(patches):
                        k = compile_tile_module(module(kind, None, n, dtype, weight=dtype, dweight=dtype if cols else None,
                                                       dbias=dtype if layer and cols else None, variant=variant),
                                                "sm_90a", cache=False).kernel("rows")
                        name = chosen_variant(kind, dtype, n, variant)
                    print(f"| {kind} | {dtype} | {n} | {label} | {name} | {launch_of(k, TOTAL // n)} |", flush=True)
                except Exception as e:  # noqa: BLE001 - a candidate that does not build: say why
                    failed += 1
                    print(f"| {kind} | {dtype} | {n} | {label} | n/a | {str(e).splitlines()[0][-90:]} |", flush=True)
    return 1 if failed else 0


CE_CELLS = ("bfloat16:4096,bfloat16:1024,bfloat16:16384,bfloat16:65536,bfloat16:262144,"
            "float32:4096,float32:65536,float32:1024,float32:16384,float32:262144")
"""--set ce's cells (dtype:N), the furthest below issue 30's 0.93 of copy first
(docs/benchmarks.md, sixth session, bwd: cross_entropy bfloat16 0.86 / 0.85 / 0.86 / 0.90 /
0.88 at 1024 to 262144, float32 0.91 / 0.88 / 0.92 / 0.88 / 0.91): past ``--budget-s`` the
last are left out."""
CE_KIND = "cross_entropy_backward"
CE_IGNORED = -100


def ce_variant(dtype: str, n: int) -> str:
    """The variant the dispatch takes for cross_entropy's backward of the cell (the patches in force)."""
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose
    from bulkred_dialect.row_kernels import module

    op = next(o for o in module(CE_KIND, None, n, dtype, ignore_index=CE_IGNORED).walk()
              if o.name == "bulkred.normalize_rows")
    return choose(op, Target.parse("sm_90a")).name


def rows_cta_min_block() -> int:
    from bulkred_dialect.passes.variants import rows_cta

    return rows_cta.MIN_BLOCK


def ce_candidates(dtype: str, n: int) -> list[tuple[str, str | None, dict]]:
    """--set ce: the default beside rows_backward.CE_FAST (ex2.approx.ftz, fma(p, s, c), a
    32-bit target compare), CE_TARGET_APART (no compare: the target's element written again
    by its thread), and both with the variant's ``.minnctapersm`` at a full
    multiprocessor's threads (rows_warp / rows_cta / rows_stream .MIN_CTAS; the faster form's 36 to 64 registers leave 4 to 8 CTAs of 128 to
    512 threads where the threads allow 4 to 16), and at float32 65536 rows_stream forced
    (the dispatch's rows_cluster: 86 registers)."""
    fast = {f"{BWD}.CE_FAST": True}
    apart = {**fast, f"{BWD}.CE_TARGET_APART": True}
    out: list[tuple[str, str | None, dict]] = [("default", None, {}), ("fast", None, fast),
                                               ("fast, target apart", None, apart)]
    best, best_label = apart, "fast, target apart"
    chosen = ce_variant(dtype, n)
    block = {"rows_warp": 256, "rows_cta": None, "rows_stream": 512}.get(chosen, 0)
    if chosen == "rows_cta":
        from bulkred_dialect.row_kernels import kernel_for

        block = kernel_for(CE_KIND, None, n, dtype, ignore_index=CE_IGNORED).signature.launch.block[0]
    if block:  # (a full multiprocessor's threads: 32 registers; three quarters of them: 40)
        full = 2048 // block
        for k in sorted({full, full * 3 // 4} - {0, 1}, reverse=True):
            out.append((f"{best_label}, .minnctapersm {k}", None,
                        {**best, f"bulkred_dialect.passes.variants.{chosen}.MIN_CTAS": k}))
    if chosen == "rows_cta" and block > rows_cta_min_block():  # (half the threads a row: the row's own
        # work (lse, target, gradient, the target's element) over twice the elements)
        out.append((f"{best_label}, 64 values a thread", None, {**best, "bulkred_dialect.passes.variants.rows_cta.VALUES": 64}))
    if chosen == "rows_cluster":
        out += [("rows_stream", "rows_stream", {}), ("rows_stream, fast, target apart", "rows_stream", apart),
                ("rows_stream, fast, target apart, .minnctapersm 4", "rows_stream",
                 {**apart, "bulkred_dialect.passes.variants.rows_stream.MIN_CTAS": 4})]
    return out


def ce_kernel(dtype: str, n: int, variant: str | None, patches: dict):
    """The compiled cross_entropy backward kernel of a candidate (its patches in force while built)."""
    from bulkred_dialect import row_kernels

    with patched(patches):
        row_kernels._KERNELS.clear()
        return row_kernels.kernel_for(CE_KIND, None, n, dtype, ignore_index=CE_IGNORED, variant=variant)


def smallest_loop(k, holds) -> list[str] | None:
    """The SASS instructions (ptxas sm_90a, nvdisasm) of ``k``'s smallest loop (a backward
    branch and what it jumps over) for which ``holds(instructions)``; None without nvdisasm
    or such a loop."""
    import re

    from rows_forward import sass_listing

    listing = sass_listing(k)
    if listing is None:
        return None
    ins, labels = listing
    best = None
    for a, op, rest, _ in ins:
        t = re.search(r"\((\.L_x_\d+)\)", rest)
        lo = labels.get(t.group(1)) if t else None
        if op.startswith("BRA") and lo is not None and lo < a:
            body = [o for x, o, _, _ in ins if lo <= x <= a]
            if holds(body) and (best is None or len(body) < len(best)):
                best = body
    return best


def sass_per_element(k) -> str:
    """SASS instructions of the innermost loop holding the exps (:func:`smallest_loop`), over
    its MUFU.EX2 (one an element): the loop over rows of rows_warp / rows_cta, the loop over
    vectors of rows_stream / rows_cluster; '?' without nvdisasm."""
    best = smallest_loop(k, lambda ops: any(o.startswith("MUFU.EX2") for o in ops))
    if best is None:
        return "?"
    return f"{len(best) / sum(o.startswith('MUFU.EX2') for o in best):.1f}"


def ce_flips(results: list[tuple[str, int, str, str, float]]) -> list[str]:
    """The table entries to flip: per cell the fastest candidate whose check passed, where
    it beat the default by 1% or more (``results``: dtype, N, label, variant, x copy; the
    default's first). Where several cells of a type take a switch, their ranges together."""
    out = []
    cells_: dict[tuple[str, int], list] = {}
    for dtype, n, label, variant, ratio in results:
        cells_.setdefault((dtype, n), []).append((label, variant, ratio))
    for (dtype, n), rows in cells_.items():
        base = rows[0][2]
        label, variant, ratio = max(rows, key=lambda r: r[2])
        if ratio < base * 1.01 or label == "default":
            out.append(f"{dtype} {n}: keep the default ({base:.3f} of copy; best other {label}, {ratio:.3f})")
            continue
        name = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}[dtype] + ".name"
        flips = []
        if "fast" in label:
            flips.append(f"rows_backward.CE_FAST_MEASURED: {name}: (..., ({n}, {n}))")
        if "target apart" in label:
            flips.append(f"rows_backward.CE_TARGET_APART_MEASURED: {name}: (..., ({n}, {n}))")
        if ".minnctapersm" in label:
            v = variant or ce_variant(dtype, n)
            flips.append(f"{v}.MIN_CTAS_MEASURED: (\"{CE_KIND}\", {name}): (..., ({n}, {n}, {label.rsplit(' ', 1)[1]}))")
        if "64 values" in label:
            flips.append(f"rows_cta.VALUES_MEASURED: (\"{CE_KIND}\", {name}): (..., ({n}, {n}, 64))")
        if label.startswith("rows_stream"):
            flips.append(f"rows_cluster._pays: {CE_KIND} {dtype} past {n // 2} to rows_stream (its cross_entropy "
                         "branch, LOSS_ROWS, taken by the backward kind too)")
        out.append(f"{dtype} {n}: {label}, {base:.3f} -> {ratio:.3f} of copy: " + "; ".join(flips))
    return out


FLAT = "bulkred_dialect.passes.variants.rows_ce_flat"
CEFLAT_CELLS = CE_CELLS + ",bfloat16:32000"
"""--set ceflat's cells: --set ce's, then a vocabulary of 32000 (N / V = 4000 vectors of 16
bytes: the flat stream's division by N / V, not a shift)."""


def ceflat_shape(label: str) -> tuple[int, int, int, int] | None:
    """The (BLOCK, UNROLL, CTAS_PER_SM, MIN_CTAS) a ``--set ceflat`` label names (``flat 256 x
    4, 4 a multiprocessor``; ``no cap``: 0, a CTA a chunk or a row, as the copy kernel's grid;
    .minnctapersm the CTAs a multiprocessor, or ``min ctas K``'s), None for the default's."""
    import re

    m = re.search(r"flat (\d+) x (\d+), (\d+|no cap)", label)
    if m is None:
        return None
    low = re.search(r"min ctas (\d+)", label)
    per_sm = 0 if m.group(3) == "no cap" else int(m.group(3))
    return int(m.group(1)), int(m.group(2)), per_sm, int(low.group(1)) if low else per_sm


def ceflat_candidates(dtype: str, n: int) -> list[tuple[str, str | None, dict]]:
    """--set ceflat: the dispatch beside rows_ce_flat.CE_FLAT (cross_entropy's dx as one flat
    stream of 16-byte vectors, the row's lse, target and gradient read per vector) at a few
    shapes (threads a CTA x vectors a thread a step, CTAs a multiprocessor, all resident at
    once for the grid-stride loop: .minnctapersm those CTAs, the registers that fit; or no
    cap: a CTA a chunk, or a row where a row is more, as the copy kernel's grid; where a row
    is under 1024 vectors, a chunk a row: the row's values read once a chunk), each with the
    cell's formula (rows_backward.CE_FAST where its table says: the default's bits), then the
    first shape with TARGET_APART (no compare an element), with CE_FAST's form where the cell's
    default lacks it (rows_ce_flat.FAST; and both), and for bfloat16 with the row kernels' 8-byte vectors (WIDE
    False)."""
    from types import SimpleNamespace

    from bulkred_dialect.ops.tile.rows import NormKind
    from bulkred_dialect.passes.variants import rows_backward, rows_common

    def flat(block: int, unroll: int, per_sm: int, **more) -> tuple[str, str | None, dict]:
        where = "no cap" if per_sm == 0 else f"{per_sm} a multiprocessor"
        extra = "".join(f", {k.lower().replace('_', ' ')} {v}" for k, v in more.items())
        patches = {f"{FLAT}.CE_FLAT": True, f"{FLAT}.BLOCK": block, f"{FLAT}.UNROLL": unroll,
                   f"{FLAT}.CTAS_PER_SM": per_sm, f"{FLAT}.MIN_CTAS": per_sm, f"{FLAT}.TARGET_APART": False}
        for k, v in more.items():
            patches[f"{FLAT}.{k}"] = v
        return f"flat {block} x {unroll}, {where}{extra}", None, patches

    d = {"float32": rows_common.F32, "bfloat16": rows_common.BF16, "float16": rows_common.F16}[dtype]
    fast = rows_backward.ce_fast(SimpleNamespace(dtype=d, n=n, kind=NormKind.CROSS_ENTROPY_BACKWARD))
    out = [("default", None, {}), flat(256, 4, 4), flat(256, 2, 8), flat(512, 4, 2), flat(128, 4, 0),
           flat(256, 4, 4, TARGET_APART=True)]
    nv = n // (8 if dtype == "bfloat16" else 16 // d.bytes)  # (16-byte vectors a row)
    if nv < 1024 and nv & (nv - 1) == 0:  # a chunk a row: the row's lse, target and gradient once a chunk
        u = 4 if nv >= 512 else 2 if nv >= 256 else 1
        out.append(flat(nv // u, u, (2048 if u == 1 else 1024) // (nv // u)))
    if not fast:
        out += [flat(256, 4, 4, FAST=True), flat(256, 4, 4, FAST=True, TARGET_APART=True)]
    else:
        out += [flat(256, 8, 2)]
    if dtype == "bfloat16":
        out.append(flat(256, 4, 4, WIDE=False))
    return out


def ceflat_flips(results: list[tuple[str, int, str, str, float]]) -> list[str]:
    """--set ceflat's table entries: per cell the fastest candidate whose check passed, where
    it beat the default by 1% or more (``results``: dtype, N, label, variant, x copy)."""
    out = []
    cells_: dict[tuple[str, int], list] = {}
    for dtype, n, label, _, ratio in results:
        cells_.setdefault((dtype, n), []).append((label, ratio))
    for (dtype, n), rows in cells_.items():
        base = rows[0][1]
        label, ratio = max(rows, key=lambda r: r[1])
        if ratio < base * 1.01 or label == "default":
            out.append(f"{dtype} {n}: keep the default ({base:.3f} of copy; best other {label}, {ratio:.3f})")
            continue
        name = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}[dtype] + ".name"
        flips = [f"rows_ce_flat.CE_FLAT_MEASURED: {name}: (..., ({n}, {n}))",
                 f"rows_ce_flat.SHAPE_MEASURED: {name}: (..., ({n}, {n}, {ceflat_shape(label)}))"]
        if "target apart" in label:
            flips.append(f"rows_ce_flat.TARGET_APART_MEASURED: {name}: (..., ({n}, {n}))")
        if "fast True" in label:
            flips.append(f"rows_ce_flat.FAST_MEASURED: {name}: (..., ({n}, {n})) (CE_FAST's bits, not the "
                         "row kernel's of the cell)")
        if "wide False" in label:
            flips.append("rows_ce_flat.WIDE: False for this cell (a table of it: bfloat16's 8-byte vectors)")
        out.append(f"{dtype} {n}: {label}, {base:.3f} -> {ratio:.3f} of copy: " + "; ".join(flips))
    return out


def ce_dry_run(args, candidates=ce_candidates) -> int:
    """``--set ce --dry-run`` (``--set ceflat``: ``candidates`` ceflat_candidates): each
    candidate built for sm_90a and assembled: the variant, grid x threads, ptxas's registers /
    spilled bytes, SASS an element (of the static loop: a branch's skipped block counted); no GPU."""
    print("| dtype | N | setting | variant | grid x threads (x cluster), regs / spill | SASS / element |")
    print("| --- | ---: | --- | --- | --- | ---: |")
    failed = 0
    for dtype, n in cells(args):
        for label, variant, patches in candidates(dtype, n):
            try:
                k = ce_kernel(dtype, n, variant, patches)
                with patched(patches):
                    name = variant or ce_variant(dtype, n)
                print(f"| {dtype} | {n} | {label} | {name} | {launch_of(k, TOTAL // n)} | {sass_per_element(k)} |",
                      flush=True)
            except Exception as e:  # noqa: BLE001 - a candidate that does not build: say why
                failed += 1
                print(f"| {dtype} | {n} | {label} | n/a | {str(e).splitlines()[0][-90:]} | |", flush=True)
    return 1 if failed else 0


def ce_check(torch, k, x, target, grad, lse, dx, want, first) -> str:
    """dx of the first 256 rows against float64 (``want``), the first 37 rows called alone
    (M) giving the same bits, and the bits against the default's (``first``)."""
    err = ((dx[:256].double() - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
    ok = "ok" if err < (5e-6 if x.dtype == torch.float32 else 2**-7) else f"dx err {err:.2e}"
    sub = 37
    dxs = torch.empty_like(x[:sub])
    k(x[:sub].clone(), dxs, target[:sub].clone(), grad[:sub].clone(), lse[:sub].clone())
    torch.cuda.synchronize()
    ok += "" if torch.equal(dxs, dx[:sub]) else ", M-invariance FAILED"
    if first is not None:
        ok += ", bits = default's" if torch.equal(dx, first) else ", bits != default's"
    return ok


def ce(args, candidates=ce_candidates, flips=ce_flips) -> int:
    """``--set ce`` (``--set ceflat``: ceflat_candidates, ceflat_flips): per cell, on the same tensors (fresh random data: x of spread 2, every
    16th row ignored, a random gradient a row, lse from torch), the copy kernel and each of
    :func:`ce_candidates` timed in turns (:func:`graph_medians`), each checked
    (:func:`ce_check`); GB/s of x read and dx written, against the copy's; then the table
    entries to flip (:func:`ce_flips`)."""
    import torch

    t0, sms = gpu_table(torch, "| dtype | N | setting | variant | grid x threads (x cluster), regs / spill, units at once "
                        "| SASS / elem | GB/s | x copy | check |", "| --- | ---: | --- | --- | --- | ---: | ---: | ---: | --- |")
    results = []
    for dtype, n in cells(args):
        if args.budget_s and time.time() - t0 > args.budget_s:
            print(f"| {dtype} | {n} | skipped: past the budget | | | | | | |", flush=True)
            continue
        m, dt = TOTAL // n, getattr(torch, dtype)
        x = torch.randn(m, n, device=DEVICE).mul_(2).to(dt)
        target = torch.randint(0, n, (m,), device=DEVICE)
        target[::16] = CE_IGNORED
        grad = torch.randn(m, device=DEVICE)
        lse = torch.logsumexp(x.float(), -1)
        xd = x[:256].double()
        want = torch.softmax(xd, -1)
        t = target[:256]
        kept = t != CE_IGNORED
        want[kept.nonzero()[:, 0], t[kept]] -= 1
        want = want * grad[:256].double()[:, None] * kept.double()[:, None]
        y = torch.empty_like(x)
        rows, calls, first = [], [], None
        for label, variant, patches in candidates(dtype, n):
            try:
                k = ce_kernel(dtype, n, variant, patches)
                with patched(patches):
                    name = variant or ce_variant(dtype, n)
                dx = torch.empty_like(x)
                k(x, dx, target, grad, lse)
                torch.cuda.synchronize()
                ok = ce_check(torch, k, x, target, grad, lse, dx, want, first)
                if first is None:
                    first = dx.clone()
            except Exception as e:  # noqa: BLE001 - a candidate that does not build or launch: say why
                print(f"| {dtype} | {n} | {label} | n/a | | | | | {str(e).splitlines()[0][-90:]} |", flush=True)
                continue
            rows.append((label, name, launch_of(k, m, sms), sass_per_element(k), ok))
            calls.append(lambda k=k, dx=dx: k(x, dx, target, grad, lse))
        us, _, moved = timed_against_copy(torch, x, y, calls, 2)
        for (label, name, launch, sass, ok), t_us in zip(rows, us[1:]):
            ratio = us[0] / t_us
            results.append((dtype, n, label, name if name != ce_variant(dtype, n) else None, ratio if "ok" == ok[:2]
                            and "FAILED" not in ok else 0.0))
            print(f"| {dtype} | {n} | {label} | {name} | {launch} | {sass} | {moved / t_us / 1e3:,.0f} | {ratio:.3f} "
                  f"| {ok} |", flush=True)
        del x, y, calls, first
        torch.cuda.empty_cache()
    print_flips("the fastest candidate per cell, its check passed, >= 1.01x the default", flips(results), t0)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default=",".join(map(str, CANDIDATES)))
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--kinds", default="rms_norm_backward,layer_norm_backward,softmax_backward")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--set", choices=("variants", "pipeline", "bulk", "fast", "norms", "long", "ce", "ceflat"),
                    default="variants",
                    help="the candidates: variants and settings (CANDIDATES), the default against "
                         "rows_backward.PIPELINE and OVERLAP (PIPELINE_CANDIDATES), against "
                         "rows_bulk_backward (BULK_CANDIDATES, softmax's and log_softmax's too), or against "
                         "rows_bulk_backward with dy in registers (FAST_CANDIDATES), or the norms' weak cells "
                         "against their units, CTAs a multiprocessor and variants (norm_candidates: CUDA graphs, "
                         "medians; cells NORMS_CELLS, kinds rms_norm_backward and layer_norm_backward by default), "
                         "or the norms at 262144 against rows_bulk_backward's STATS_AHEAD "
                         "(long_candidates: as norms, cells LONG_CELLS), or cross_entropy's backward against "
                         "rows_backward.CE_FAST, CE_TARGET_APART and .minnctapersm (ce_candidates: as "
                         "norms, cells CE_CELLS), or against rows_ce_flat.CE_FLAT's flat stream "
                         "(ceflat_candidates: as ce, cells CEFLAT_CELLS)")
    ap.add_argument("--cells", default="", help="dtype:N pairs in the order measured (instead of --dtypes x --ns)")
    ap.add_argument("--budget-s", type=float, default=0, help="skip the rows past this many seconds (0: none)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: build each kernel the run would time for sm_90a and assemble it")
    args = ap.parse_args()
    if args.set in ("norms", "long"):
        args.cells = args.cells or (NORMS_CELLS if args.set == "norms" else LONG_CELLS)
        if "--kinds" not in sys.argv:
            args.kinds = "rms_norm_backward,layer_norm_backward" if args.set == "norms" else \
                "layer_norm_backward,rms_norm_backward"
        if not {"rms_norm_backward", "layer_norm_backward"} >= set(args.kinds.split(",")):
            ap.error(f"--set {args.set} times rms_norm_backward and layer_norm_backward only")
    if args.set == "ce":
        args.cells = args.cells or CE_CELLS
    if args.set == "ceflat":
        args.cells = args.cells or CEFLAT_CELLS
        return ce_dry_run(args, ceflat_candidates) if args.dry_run else ce(args, ceflat_candidates, ceflat_flips)
    if args.dry_run:
        return dry_run(args)
    if args.set == "ce":
        return ce(args)
    if args.set in ("norms", "long"):
        return norms(args, norm_candidates if args.set == "norms" else long_candidates)
    import torch
    import torch.nn.functional as F

    from bulkred_dialect.passes.variants import rows_common
    from bulkred_dialect import row_kernels
    from bulkred_dialect.row_kernels import kernel_for

    table = tables(args.set, rows_common)
    t0 = time.time()

    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print("| kind | dtype | N | variant | GB/s | vs copy | check |")
    print("| --- | --- | ---: | --- | ---: | ---: | --- |")
    for dtype, n in cells(args):
        dt = getattr(torch, dtype)
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
            if args.budget_s and time.time() - t0 > args.budget_s:
                print(f"| {kind} | {dtype} | {n} | skipped: budget | | | |", flush=True)
                continue
            if kind in ("softmax_backward", "log_softmax_backward"):
                softmax_rows(torch, kind, dtype, n, x, dy, copy, moved, args.calls, row_kernels, kernel_for,
                             softmax_table(args.set))
                continue
            layer = kind == "layer_norm_backward"
            xd = x.double()
            mean = xd.mean(-1) if layer else None
            xc = xd - mean[:, None] if layer else xd
            rstd = (1 / (xc * xc).mean(-1).add(1e-5).sqrt()).float()
            mean = mean.float() if layer else None
            xh = xc * rstd.double()[:, None]
            want = [(dy.double() * xh).sum(0)] + ([dy.double().sum(0)] if layer else [])  # dweight, dbias
            del xh
            first = None  # the first candidate's dx, dweight, dbias (the default): the others' bits against them
            for label, variant, patches in table.get(n, [("default", None, {})]):
                if not applies(label, n, dtype):
                    continue
                try:
                    with patched(patches):
                        row_kernels._KERNELS.clear()
                        k = kernel_for(kind, None, n, dtype, weight=dtype, dweight=dtype,
                                       dbias=dtype if layer else None, variant=variant)
                except Exception as e:  # noqa: BLE001 - a variant that does not apply: say why
                    print(f"| {kind} | {dtype} | {n} | {label} | n/a | | {str(e).splitlines()[0][-90:]} |")
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
                    for name, got, ref in zip(("dw", "db"), [dw] + ([db] if layer else []), want):
                        e = ((got.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
                        ok += f", {name} err {e:.1e}" if e > (1e-4 if dtype == "float32" else 2**-7) else ""
                    outs = [dx, dw] + ([db] if layer else [])
                    if first is None:
                        first = [t.clone() for t in outs]
                    else:
                        ok += ", bits = first's" if all(torch.equal(a, b) for a, b in zip(outs, first)) else \
                            ", bits != first's"
                    ms = gpu_ms(torch, lambda: k(*call_args), args.calls)
                except Exception as e:  # noqa: BLE001 - a failed launch: the row says so
                    print(f"| {kind} | {dtype} | {n} | {label} | failed | | {str(e).splitlines()[0][-90:]} |")
                    continue
                gbs = moved / ms / 1e6
                print(f"| {kind} | {dtype} | {n} | {label} | {gbs:,.0f} | {gbs / copy:.2f} | {ok} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
