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

``--set pipeline`` (:func:`pipeline`) instead times the register variants' settings
(rows_common.FORWARD_PIPELINE, rows_warp / rows_cta.CTAS_PER_SM) on softmax, log_softmax,
rms_norm, layer_norm, add_rms_norm and cross_entropy, float32 and bfloat16, N = 1024
(rows_warp), 4096 and 16384 (rows_cta), M x N = 2^28:

* ``dispatch: V``: the variant the dispatch chooses today, as it is;
* ``V``: the register variant forced (where the dispatch chooses another), as it is;
* ``V pipelined``: the group's next row loaded before the current row's reduction;
* ``V pipelined, A of K ahead``: of the thread's K vectors of the next row, the first A
  (K / 2) loaded ahead, the others as the row starts (rows_common.FORWARD_AHEAD: fewer
  registers carried);
* ``rows_warp, 2 rows a step``: a warp's two rows' loads, then each row's reduction
  (rows_warp.ROWS_AT_ONCE);
* ``V[ pipelined], K CTAs/SM``: the grid at most K CTAs a multiprocessor, K the CTAs
  that fit at once by ptxas's registers (where fewer than the default's);

each with its error against float64, and ``bits``: whether its outputs (y, or the
losses; add_rms_norm's residual_out too) equal the forced variant's unpipelined ones bit
for bit (they must). The copy kernel and the settings are timed in turns, twice, the
median kept (``/copy``: against the copy's median).

``--set long`` (:func:`long_rows`) times the long rows' settings (issue 30, section 4:
softmax, log_softmax, rms_norm, layer_norm; float32 and bfloat16; N = 262144 then 65536,
M x N = 2^28; the cells furthest from the copy first):

* ``dispatch: V``: the variant the dispatch chooses today, as it is;
* ``cluster`` / ``cluster, a cluster a row``: rows_cluster forced (the row in registers,
  loaded from global memory), its grid persistent or a cluster per row;
* ``bulkS/T regs, G, min m``: rows_bulk with ``Setting.registers`` (the slice read from
  shared memory once into registers; layer_norm's statistics in one exchange), slices of
  at most S KiB, CTAs of T threads, G a unit a row or a persistent grid of two slice
  buffers, ``.minnctapersm`` m (``C x T x K``: the cluster, threads and values a thread,
  deduplicated);
* ``... early w``: of each G the registers setting of the fewest values a thread, with
  ``Setting.early_affine`` (the weight's and bias's values loaded before the exchange);
* ``... early copy``: the first registers setting of a unit a row with
  ``Setting.early_copy`` (the slice's copy issued before the cluster barrier of the
  kernel's start); ``bulk today, early copy``: today's rows_bulk setting (where the
  dispatch takes rows_bulk with a unit a row) with it;

each with its error against float64 (``err``: the largest over the largest magnitude of
y), ``inv``: whether rows 3 to 7 computed alone (M = 5) give y's bits (batch invariance),
ptxas's registers and spilled bytes, the launch. The copy kernel and the settings are
timed in turns, twice, the mean of the two kept (``/copy``: against the copy's).

``--set passes`` (:func:`passes`) times rows_bulk's pass settings (issue 30, section 4:
the 13 forward cells furthest from the copy kernel, :data:`PASS_CELLS`, worst first),
each against the dispatch as it is, on the same tensors (:func:`pass_settings`): the
cell's setting with ``one_pass`` (layer_norm: the row's or the thread's shift) or
``online`` (the softmaxes), ``.minnctapersm`` 3 where shared memory holds 3 CTAs,
``weight_shared``, 16-byte bfloat16 vectors, a persistent grid capped at the clusters an
H200 holds at once (``max_units``: rows_bulk_backward.CLUSTERS) with today's passes and
with the settings (two slice buffers, or one at 2 CTAs a multiprocessor; the slice and its
half), the slice in registers in that grid, and add_rms_norm on rows_bulk; each with its
error against float64, batch invariance, ptxas's registers and spills and the units the
GPU holds at once (cuOccupancyMaxActiveClusters); layer_norm's also on rows of mean 1000
and with a massive first element (``err mean``, ``err x0``) beside torch's own; at the
end, per cell, the fastest sound setting and the rows_bulk.CHOSEN row that takes it.
``--dry-run`` builds and assembles each kernel (no GPU).

``--set fastexp`` (:func:`fastexp_settings`) the same way times the per-element settings of
the exp kinds on rows_bulk (:data:`FASTEXP_CELLS`): ``Setting.fast_exp`` (every exp as
ex2.approx.ftz), softmax's ``fold_sum`` (the sum in y's exponent), bfloat16's ``words``,
online statistics, the log_softmax bfloat16 grid and float32 softmax's unit a row with
them, the slice in registers; ``--set affine`` (:func:`affine_settings`) layer_norm's
(:data:`AFFINE_CELLS`): ``Setting.affine_registers`` (the weight and bias in registers,
loaded once, in persistent grids of one or two CTAs a multiprocessor), ``words`` and
``one_pass="local"`` (the statistics from one pass over shared memory, each thread's m2
about its own shift moved to the row's mean after the sum's exchange: two scalar exchanges).

``--set quack16`` (:func:`quack16`) times softmax, rms_norm and layer_norm bfloat16 at N = 4096
and 16384 (0.91 to 0.93 of copy, Quack 0.96) against Quack's structure (:func:`q16_candidates`:
a row a CTA in a grid of M CTAs, Quack's threads a row, the row in shared memory by rows_bulk),
each checked against float64 and for batch invariance, a verdict per cell.

``--set quack32`` (:func:`quack32`) times the same families (:func:`q32_candidates`, at most 9 a cell)
on the other forward cells at N <= 16384 below 0.97 of copy (:data:`Q32_CELLS`: float32 softmax,
log_softmax, rms_norm, layer_norm, add_rms_norm at 1024, 4096, 16384; bfloat16 log_softmax,
add_rms_norm, cross_entropy at the three N, softmax, rms_norm, layer_norm at 1024), the same checks
and timing (5 rounds in turns with the copy, the median), a verdict per cell naming the table entries
(or NEEDS A NEW SETTING where no table holds it), and where the budget cut the run.

``--set quack64`` (:func:`quack64`) times quack32's finding on the long rows: the forward cells at
N = 65536 and 262144 below 0.97 of copy (:data:`Q64_CELLS`, the furthest first), each against rows_bulk's
a cluster a row in a grid of M clusters (:func:`q64_candidates`: cluster sizes, threads, early_copy and the
per-element settings, registers, weight_shared; rows_cluster's grid of M where it is the dispatch's),
quack32's checks, timing and verdict (the rows_bulk.CHOSEN row to add, the whole Setting).

``--set logsoftmax`` (:func:`logsoftmax`) times log_softmax bfloat16's candidates (N = 262144,
65536, 16384, 4096, 1024; :func:`lsm_candidates`): rows_common.LOG_SOFTMAX_LSE (y = x - lse),
softmax bfloat16's and cross_entropy bfloat16's settings (rows_bulk rows, .minnctapersm),
against the dispatch and beside softmax bfloat16's dispatch, each checked against float64.

    python3 tools/diag.py rows_forward [--part long|short|all] [--budget-s 150]
    python3 tools/diag.py rows_forward --set pipeline [--budget-s 85] [--kinds softmax,rms_norm] [--n 1024,4096]
    python3 tools/diag.py rows_forward --set long [--budget-s 150] [--kinds layer_norm] [--n 262144]
    python3 tools/diag.py rows_forward --set passes [--budget-s 150] [--kinds layer_norm] [--n 262144] [--dry-run]
    python3 tools/diag.py rows_forward --set fastexp|affine [--budget-s 150] [--kinds softmax] [--n 262144] [--dry-run]
    python3 tools/diag.py rows_forward --set logsoftmax [--budget-s 130] [--n 65536] [--rounds 5] [--dry-run]
    python3 tools/diag.py rows_forward --set quack16 [--budget-s 130] [--kinds softmax] [--n 4096] [--dry-run]
    python3 tools/diag.py rows_forward --set quack32 [--budget-s 150] [--kinds add_rms_norm] [--n 1024] [--dtypes float32] [--dry-run]
    python3 tools/diag.py rows_forward --set quack64 [--budget-s 150] [--kinds layer_norm] [--n 65536] [--dtypes bfloat16] [--dry-run]
"""

from __future__ import annotations

import argparse
import contextlib
import os
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
    """ptxas's 'Used N registers' line for the kernel's PTX on this machine."""
    from bulkred_dialect.backend_ptx.assemble import registers_used

    try:
        n = registers_used(kernel.module.ptx, "sm_90a")
        return "?" if n is None else str(n)
    except Exception as e:  # noqa: BLE001 - a diagnostic: say why
        return f"? ({type(e).__name__})"


PIPE_KINDS = ("cross_entropy", "softmax", "rms_norm", "layer_norm", "add_rms_norm", "log_softmax")
"""In this order (kind, then N, then the element type): past the budget, log_softmax
(softmax's twin) is the first left out."""
PIPE_N = (1024, 4096, 16384)
DEVICE = "cuda"


def resident_ctas(regs: str, block: int) -> int:
    """CTAs of ``block`` threads a multiprocessor of sm_90 holds at once by their
    registers (``regs`` per thread, allocated by 8; 64K registers, 64 warps, 32 CTAs)."""
    per_warp = -(-int(regs) // 8) * 8 * 32
    warps = block // 32
    return max(1, min(32, 2048 // block, (65536 // per_warp) // warps))


def cell_tensors(torch, n: int, dtype: str, device: str = DEVICE) -> tuple:
    """One cell's tensors, fresh random data: (M = TOTAL // N, x [M, N] of ``dtype``,
    y like x, the weight [N], the bias [N])."""
    m = TOTAL // n
    dt = getattr(torch, dtype)
    x = torch.randn(m, n, device=device, dtype=torch.float32).mul_(2).add_(0.3).to(dt)
    y = torch.empty_like(x)
    w = torch.randn(n, device=device, dtype=torch.float32).to(dt)
    bvec = torch.randn(n, device=device, dtype=torch.float32).to(dt)
    return m, x, y, w, bvec


def timed_in_turns(torch, copy_call, calls: list) -> tuple[float, list[float]]:
    """GPU us (a CUDA graph of 10 calls, RA.graph_us) of ``copy_call`` and of each of
    ``calls``, timed in turns (the copy, then each call), twice: the mean of the two (their
    median) of each, the copy's first."""
    times: dict[int, list[float]] = {i: [] for i in range(-1, len(calls))}
    for _ in range(2):  # in turns: the copy, then each setting
        for i in times:
            fn = copy_call if i < 0 else calls[i]
            times[i].append(RA.graph_us(torch, lambda _, c=fn: c(), [None], 10, 5))
    return sum(times[-1]) / 2, [sum(times[i]) / 2 for i in range(len(calls))]


def print_failed(kind: str, dtype: str, n: int, name: str, e: Exception, copy: str = "") -> None:
    """A table row saying why a setting of the cell failed to build or run (its first line)."""
    print(f"| {kind} | {dtype} | {n} | {copy} | {name} | failed: {type(e).__name__}: {str(e).splitlines()[0][:120]} |",
          flush=True)


def print_timed(torch, kind: str, dtype: str, n: int, x, y, nbytes: int, runs: list) -> list[float]:
    """Times ``runs`` (name, call, two columns, err, a last column) against the copy of x
    into y (:func:`timed_in_turns`) and prints a table row for each: GB/s of ``nbytes`` a
    call, and against the copy's GB/s (x's bytes read and written); returns each run's
    ratio to the copy."""
    copy_us, times = timed_in_turns(torch, lambda: torch.mul(x, 1.0, out=y), [r[1] for r in runs])
    copy_gbs = 2 * x.numel() * x.element_size() / copy_us / 1e3  # (the median of two: their mean)
    ratios = []
    for i, (name, _, a, b, err, last) in enumerate(runs):
        gbs = nbytes / times[i] / 1e3
        ratios.append(gbs / copy_gbs)
        print(f"| {kind} | {dtype} | {n} | {copy_gbs:,.0f} | {name} | {gbs:,.0f} | {gbs / copy_gbs:.3f} | {a} | "
              f"{b} | {err:.1e} | {last} |", flush=True)
    return ratios


@contextlib.contextmanager
def bulk_setting(consts: dict, tables: tuple, restore: tuple):
    """A context: rows_bulk's constants ``consts`` (rows_cluster's where they name
    CTAS_PER_SM) set, the dispatch's tables (rows_cluster.MEASURED, rows_bulk.CHOSEN) set
    to ``tables`` and row_kernels' kernels forgotten; then the constants restored and the
    tables set to ``restore``."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.passes.variants import rows_bulk, rows_cluster

    mod = rows_cluster if "CTAS_PER_SM" in consts else rows_bulk
    saved = {k: getattr(mod, k) for k in consts}
    for k, v in consts.items():
        setattr(mod, k, v)
    rows_cluster.MEASURED.clear()
    rows_cluster.MEASURED.update(tables[0])
    rows_bulk.CHOSEN[:] = tables[1]
    row_kernels._KERNELS.clear()
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(mod, k, v)
        rows_cluster.MEASURED.clear()
        rows_cluster.MEASURED.update(restore[0])
        rows_bulk.CHOSEN[:] = restore[1]


def pipeline(args) -> int:
    """``--set pipeline``: the module docstring's second list."""
    import torch

    from bulkred_dialect import row_kernels
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose
    from bulkred_dialect.passes.variants import rows_common, rows_cta, rows_warp

    t0 = time.time()
    kinds = args.kinds.split(",") if args.kinds else PIPE_KINDS
    ns = [int(v) for v in args.n.split(",")] if args.n else PIPE_N
    print("| op | dtype | N | copy GB/s | setting | GB/s | /copy | regs | threads | err | bits |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for kind, n, dtype in [(k, n, d) for k in kinds for n in ns for d in ("float32", "bfloat16")]:
        if time.time() - t0 > args.budget_s:
            print(f"| {kind} | {dtype} | {n} | skipped: budget |")
            continue
        variant = "rows_warp" if n <= rows_warp.MAX_N else "rows_cta"
        vmod = rows_warp if variant == "rows_warp" else rows_cta
        m, x, y, w, bvec = cell_tensors(torch, n, dtype)
        dt = x.dtype
        kw: dict = {}
        extra: list = []
        outs = [y]
        tensors = 2
        if kind == "softmax":
            ref = torch.softmax(x.double(), -1)
        elif kind == "log_softmax":
            ref = torch.log_softmax(x.double(), -1)
        elif kind == "rms_norm":
            kw, extra = {"weight": dtype, "eps": EPS}, [w]
            ref = torch.nn.functional.rms_norm(x.double(), (n,), w.double(), EPS)
        elif kind == "add_rms_norm":
            res = torch.randn(m, n, device=DEVICE, dtype=torch.float32).to(dt)
            hout = torch.empty_like(x)
            kw, extra, outs, tensors = {"weight": dtype, "eps": EPS}, [res, hout, w], [y, hout], 4
            ref = torch.nn.functional.rms_norm((x + res).double(), (n,), w.double(), EPS)
        elif kind == "layer_norm":
            kw, extra = {"weight": dtype, "bias": dtype, "eps": EPS}, [w, bvec]
            ref = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), bvec.double(), EPS)
        else:
            target = torch.randint(0, n, (m,), device=DEVICE)
            loss = torch.empty(m, device=DEVICE)
            kw, outs, tensors = {"ignore_index": -100}, [loss], 1
            ref = torch.nn.functional.cross_entropy(x.double(), target, reduction="none")
        nbytes = tensors * x.numel() * x.element_size()
        op = next(o for o in row_kernels.module(kind, None, n, dtype, **kw).walk() if o.name == "bulkred.normalize_rows")
        chosen = choose(op, Target.parse("sm_90a")).name
        # (name, the variant forced, pipelined, CTAs/SM, registers: the same kernel's as another setting's)
        settings: list[tuple[str, str | None, bool, int | None, str | None]] = [(f"dispatch: {chosen}", None, False, None, None)]
        if chosen != variant:
            settings.append((variant, variant, False, None, None))
        settings.append((f"{variant} pipelined", variant, True, None, None))
        items = rows_common.items_for(op, 32 if variant == "rows_warp" else rows_cta.block_for(op))
        if items > 1:
            settings.append((f"{variant} pipelined, {items // 2} of {items} ahead", variant, True, None, None))
        if variant == "rows_warp":
            settings.append(("rows_warp, 2 rows a step", variant, False, None, None))
        runs = []  # (name, call, regs, threads, err, bits)
        base = None  # the forced variant's unpipelined outputs
        for name, forced, pipe, ctas, known in settings:
            rows_common.FORWARD_PIPELINE, vmod.CTAS_PER_SM = pipe, ctas
            rows_common.FORWARD_AHEAD = items // 2 if " ahead" in name else None
            rows_warp.ROWS_AT_ONCE = 2 if "2 rows" in name else 1
            row_kernels._KERNELS.clear()
            try:
                k = row_kernels.kernel_for(kind, None, n, dtype, variant=forced, **kw)
                if kind == "cross_entropy":
                    call = lambda k=k: k(x, target, loss)  # noqa: E731
                else:
                    call = lambda k=k: k(x, y, *extra)  # noqa: E731
                call()
                torch.cuda.synchronize()
                got = [o.clone() for o in outs]
                err = ((got[0].double() - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item()
                if base is None and (forced == variant or chosen == variant) and not pipe and ctas is None:
                    base = got
                same = "-" if base is None else "base" if got is base else \
                    ("yes" if all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(got, base)) else "NO")
                ours = forced == variant or (forced is None and chosen == variant)
                regs = known or (registers(k) if ours else "-")
                threads = k.signature.launch.block[0]
                runs.append([name, call, regs, threads, err, same])
                if ours and ctas is None and " ahead" not in name and "2 rows" not in name and regs.isdigit():  # the CTAs that fit at once, where fewer
                    fit = resident_ctas(regs, threads)
                    if fit < max(1, 2048 // threads):  # (the variants' default)
                        settings.append((f"{name.removeprefix('dispatch: ')}, {fit} CTAs/SM", variant, pipe, fit, regs))
            except Exception as e:  # noqa: BLE001 - the row says why
                print_failed(kind, dtype, n, name, e)
            finally:
                rows_common.FORWARD_PIPELINE, vmod.CTAS_PER_SM, rows_common.FORWARD_AHEAD = None, None, None
                rows_warp.ROWS_AT_ONCE = 1
        print_timed(torch, kind, dtype, n, x, y, nbytes, runs)
        del x, y, ref, runs
        torch.cuda.empty_cache()
    print(f"probe time: {time.time() - t0:.0f} s")
    return 0


LONG_CELLS = [("layer_norm", "bfloat16", 262144), ("log_softmax", "bfloat16", 262144), ("layer_norm", "float32", 262144),
              ("rms_norm", "bfloat16", 262144), ("rms_norm", "float32", 262144), ("softmax", "bfloat16", 262144),
              ("softmax", "float32", 262144), ("log_softmax", "float32", 262144), ("layer_norm", "bfloat16", 65536),
              ("log_softmax", "bfloat16", 65536), ("layer_norm", "float32", 65536), ("log_softmax", "float32", 65536),
              ("softmax", "bfloat16", 65536), ("rms_norm", "bfloat16", 65536), ("softmax", "float32", 65536),
              ("rms_norm", "float32", 65536)]
"""--set long's cells, the furthest from the copy kernel first (docs/rows_bench_h200_run3.md)."""
REG_SETTINGS = [(64, 512, 2, False), (32, 512, 2, False), (32, 256, 2, False), (16, 256, 3, False), (16, 256, 2, False),
                (64, 512, 1, True), (32, 512, 1, True)]
"""--set long's rows_bulk registers settings: (slice KiB, threads, .minnctapersm, persistent: a
grid of the clusters the multiprocessors hold, two slice buffers, the next row's copy in
flight while this one is computed; else a unit a row, one buffer); those whose threads hold
more than 32768 / .minnctapersm values in all left out (ptxas spills them)."""
REG_MAX = (4, 1)
"""Registers settings a cell at most, a unit a row and persistent (the first distinct
configurations of REG_SETTINGS)."""


def parts_args(doc: str, parts: tuple[str, ...], dry_help: str) -> argparse.Namespace:
    """The arguments of a probe run in parts (rows_ce, rows_small): ``--budget-s``, ``--parts``
    (alias ``--set``: comma-separated, each one of ``parts``; all by default) as a list, and
    ``--dry-run``; each setting's kernels its own (the compile cache off)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--budget-s", type=float, default=120.0)
    ap.add_argument("--parts", "--set", dest="parts", default=",".join(parts), help=f"comma-separated, of {', '.join(parts)}")
    ap.add_argument("--dry-run", action="store_true", help=dry_help)
    args = ap.parse_args()
    args.parts = [p for p in args.parts.split(",") if p]
    bad = [p for p in args.parts if p not in parts]
    if bad:
        ap.error(f"--parts: unknown {', '.join(bad)} (valid: {', '.join(parts)})")
    os.environ["BULKRED_CACHE"] = "0"
    return args


def sass_listing(k) -> tuple[list[tuple[int, str, str, bool]], dict[str, int]] | None:
    """The SASS of kernel ``k`` (ptxas for sm_90a, nvdisasm) as (address, opcode, operands,
    predicated) per instruction and each ``.L_x_`` label's address; None without nvdisasm
    (the probes' SASS-per-element columns then say '?')."""
    import re

    try:
        from bulkred_dialect.backend_ptx.assemble import assemble
        from bulkred_dialect.backend_ptx.sass import disassemble

        text = disassemble(assemble(k.module.ptx.encode(), "sm_90a"))
    except Exception:  # noqa: BLE001 - a diagnostic
        return None
    ins, labels, pending = [], {}, []
    for line in text.split("\nrows:", 1)[-1].splitlines():
        lab = re.match(r"^\s*(\.L_x_\d+):", line)
        if lab:
            pending.append(lab.group(1))
            continue
        m = re.search(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*?);", line)
        if m:
            a = int(m.group(1), 16)
            labels.update((q, a) for q in pending)
            pending = []
            ins.append((a, m.group(3), m.group(4), bool(m.group(2))))
    return ins, labels


def ptxas_info(kernel) -> str:
    """``R / S``: ptxas's registers per thread and spilled store bytes (sm_90a, nvJitLink)."""
    import re

    try:
        from cuda.bindings import nvjitlink as nj

        data = kernel.module.ptx.encode()
        opts = [b"-arch=sm_90a", b"-Xptxas=-v"]
        h = nj.create(len(opts), opts)
        try:
            nj.add_data(h, nj.InputType.PTX, data, len(data), "kernel.ptx")
            nj.complete(h)
            size = nj.get_info_log_size(h)
            buf = bytearray(size)
            if size:
                nj.get_info_log(h, buf)
            log = buf.decode(errors="replace")
        finally:
            nj.destroy(h)
        regs = re.search(r"Used (\d+) registers", log)
        spill = re.search(r"(\d+) bytes spill stores", log)
        return f"{regs.group(1) if regs else '?'} / {spill.group(1) if spill else '?'}"
    except Exception as e:  # noqa: BLE001 - a diagnostic: say why
        return f"? ({type(e).__name__})"


def long_settings(op, kind: str) -> list[tuple[str, str | None, dict]]:
    """--set long's settings of one cell: (name, the variant forced, module constants)."""
    from bulkred_dialect.passes.variants import rows_bulk
    from bulkred_dialect.passes.variants.rows_common import vector_of

    out: list[tuple[str, str | None, dict]] = [("dispatch", None, {}), ("cluster", "rows_cluster", {}),
                                               ("cluster, a cluster a row", "rows_cluster", {"CTAS_PER_SM": 1 << 20})]
    seen: set = set()
    taken = [0, 0]  # (a unit a row, persistent)
    saved = {"SLICE_BYTES": rows_bulk.SLICE_BYTES, "BLOCK": rows_bulk.BLOCK, "CHOSEN": list(rows_bulk.CHOSEN)}
    try:
        rows_bulk.CHOSEN[:] = []  # (bulk_for: the module's defaults)
        early: list[tuple] = []  # per kind of grid, the setting of the fewest values a thread
        for kib, threads, mc, persistent in REG_SETTINGS:
            rows_bulk.SLICE_BYTES, rows_bulk.BLOCK = kib * 1024, threads
            c, block, per, _ = rows_bulk.bulk_for(op)
            values = per * vector_of(op)
            key = (c, block, per, mc, persistent)
            if (key in seen or values > rows_bulk.MAX_REGISTER_VALUES or values * block * mc > 32768
                    or taken[persistent] >= REG_MAX[persistent]):
                continue
            seen.add(key)
            taken[persistent] += 1
            consts = {"SLICE_BYTES": kib * 1024, "BLOCK": threads, "BUFFERS": 2 if persistent else 1,
                      "PERSISTENT": persistent, "MIN_CTAS": mc, "REGISTERS": True}
            grid = "persistent x2" if persistent else "a unit a row"
            name = f"bulk{kib}/{threads} regs, {grid}, min {mc} ({c} x {block} x {values})"
            out.append((name, "rows_bulk", consts))
            if not any(e[0] == persistent and e[1] <= values for e in early):
                early = [e for e in early if e[0] != persistent] + [(persistent, values, name, consts)]
        if kind in ("rms_norm", "layer_norm"):  # the weight early where the thread holds the fewest values
            out += [(name + ", early w", "rows_bulk", {**consts, "EARLY_AFFINE": True}) for _, _, name, consts in early]
        rows_bulk.CHOSEN[:] = saved["CHOSEN"]  # (today's table)
        today = rows_bulk.setting_for(op)
        if today is not None and not today.persistent and not today.registers:  # today's rows_bulk, its copy early
            out.append(("bulk today, early copy", "rows_bulk",
                        {"SLICE_BYTES": today.slice_bytes, "BLOCK": today.block, "BUFFERS": 1, "PERSISTENT": False,
                         "MIN_CTAS": today.min_ctas, "EARLY_COPY": True}))
        unit = next(((n2, c2) for n2, v2, c2 in out if v2 == "rows_bulk" and c2.get("REGISTERS") and not c2["PERSISTENT"]),
                    None)
        if unit is not None:  # the first unit-a-row setting with its first copy before the cluster barrier
            out.append((unit[0] + ", early copy", "rows_bulk", {**unit[1], "EARLY_COPY": True}))
    finally:
        rows_bulk.SLICE_BYTES, rows_bulk.BLOCK = saved["SLICE_BYTES"], saved["BLOCK"]
        rows_bulk.CHOSEN[:] = saved["CHOSEN"]
    return out


def long_rows(args) -> int:
    """``--set long``: the module docstring's third list."""
    import torch

    from bulkred_dialect import row_kernels
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose
    from bulkred_dialect.passes.variants import rows_bulk, rows_cluster

    t0 = time.time()
    kinds = args.kinds.split(",") if args.kinds else None
    ns = [int(v) for v in args.n.split(",")] if args.n else None
    cells = [c for c in LONG_CELLS if (kinds is None or c[0] in kinds) and (ns is None or c[2] in ns)]
    today = (dict(rows_cluster.MEASURED), list(rows_bulk.CHOSEN))
    wide = ({"float32": 1 << 30, "bfloat16": 1 << 30}, [(d, None, 1, 1 << 30, None) for d in ("float32", "bfloat16")])
    print("| op | dtype | N | copy GB/s | setting | GB/s | /copy | regs / spill | threads x cluster | err | inv |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- | ---: | --- |")
    for kind, dtype, n in cells:
        if time.time() - t0 > args.budget_s:
            print(f"| {kind} | {dtype} | {n} | skipped: budget |")
            continue
        _, x, y, w, bvec = cell_tensors(torch, n, dtype)
        y5 = torch.empty_like(x[:5])
        kw: dict = {}
        extra: list = []
        if kind == "softmax":
            ref = torch.softmax(x.double(), -1)
        elif kind == "log_softmax":
            ref = torch.log_softmax(x.double(), -1)
        elif kind == "rms_norm":
            kw, extra = {"weight": dtype, "eps": EPS}, [w]
            ref = torch.nn.functional.rms_norm(x.double(), (n,), w.double(), EPS)
        else:
            kw, extra = {"weight": dtype, "bias": dtype, "eps": EPS}, [w, bvec]
            ref = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), bvec.double(), EPS)
        scale = ref.abs().max().clamp(min=1e-30)
        nbytes = 2 * x.numel() * x.element_size()
        op = next(o for o in row_kernels.module(kind, None, n, dtype, **kw).walk() if o.name == "bulkred.normalize_rows")
        runs = []  # (name, call, info, launch, err, inv)
        for name, variant, consts in long_settings(op, kind):
            with bulk_setting(consts, today if variant is None else wide, today):  # (a forced variant must apply)
                try:
                    k = row_kernels.kernel_for(kind, None, n, dtype, variant=variant, **kw)
                    if variant is None:
                        name = f"dispatch: {choose(op, Target.parse('sm_90a')).name}"
                    call = lambda k=k: k(x, y, *extra)  # noqa: E731
                    y.fill_(float("nan"))  # (not the previous setting's y)
                    y5.fill_(float("nan"))
                    call()
                    k(x[3:8], y5, *extra)
                    torch.cuda.synchronize()
                    err = ((y.double() - ref).abs().max() / scale).item()
                    inv = "yes" if torch.equal(y5.view(torch.uint8), y[3:8].view(torch.uint8)) else "NO"
                    launch = k.signature.launch
                    runs.append((name, call, ptxas_info(k), f"{launch.block[0]} x {launch.cluster[0]}", err, inv))
                except Exception as e:  # noqa: BLE001 - the row says why
                    print_failed(kind, dtype, n, name, e)
        print_timed(torch, kind, dtype, n, x, y, nbytes, runs)  # (nbytes: x's read and y written, as the copy's)
        del x, y, y5, ref, runs
        torch.cuda.empty_cache()
    print(f"probe time: {time.time() - t0:.0f} s")
    return 0


PASS_CELLS = [("layer_norm", "bfloat16", 262144), ("log_softmax", "bfloat16", 262144), ("layer_norm", "float32", 262144),
              ("rms_norm", "bfloat16", 262144), ("layer_norm", "bfloat16", 65536), ("rms_norm", "float32", 262144),
              ("layer_norm", "float32", 65536), ("softmax", "bfloat16", 262144), ("log_softmax", "float32", 262144),
              ("log_softmax", "float32", 65536), ("softmax", "float32", 262144), ("add_rms_norm", "bfloat16", 262144),
              ("add_rms_norm", "float32", 262144)]
"""--set passes' cells: issue 30's forward cells furthest from the copy kernel
(docs/rows_bench_h200_run4.md: 0.66 to 0.89), the furthest first."""
UNIT_ROW = (65536, 512, 2)
"""rows_bulk's long-row setting (slice bytes, threads, .minnctapersm), a unit a row: the base
of a cell the dispatch gives to another variant."""


def pass_settings(op, kind: str) -> list[tuple[str, object]]:
    """--set passes' settings of one cell: (name, None for the dispatch as it is, else the
    rows_bulk.Setting forced for the cell)."""
    from dataclasses import replace

    from bulkred_dialect.passes.variants import rows_bulk, rows_bulk_backward
    from bulkred_dialect.passes.variants.rows_common import dtype_of, vector_of

    today = rows_bulk.setting_for(op)
    copies = 2 if kind == "add_rms_norm" else 1  # (add_rms_norm: x's and the residual's slices)
    base = today if today is not None else rows_bulk.Setting(UNIT_ROW[0] // copies, *UNIT_ROW[1:], False, 1)
    out: list[tuple[str, object]] = [("dispatch", None)]
    if today is None:
        out.append((f"bulk {base.slice_bytes // 1024}K/512, a unit a row", base))
    options = {"layer_norm": [("one pass, thread shift", {"one_pass": "thread"}), ("one pass, row shift", {"one_pass": "row"})],
               "rms_norm": [("", {})], "add_rms_norm": [("", {})]}.get(kind, [("online", {"online": True})])
    for name, o in options:
        if o:
            out.append((name, replace(base, **o)))
            if base.min_ctas is not None and base.min_ctas > 2:  # (the one pass's state in fewer registers: spills at 3)
                out.append((f"{name}, min 2", replace(base, **o, min_ctas=2)))
    best_name, best = options[0]
    if base.min_ctas == 2 and not base.persistent and 3 * copies * base.slice_bytes <= rows_bulk.SHARED_PER_SM:
        # (3 CTAs a multiprocessor by shared memory, 2 by ptxas's registers above 42 a thread: bfloat16 log_softmax 48,
        # rms_norm 60, layer_norm 63 against softmax's 40)
        out.append(("min 3", replace(base, min_ctas=3)))
        if best:
            out.append((f"{best_name}, min 3", replace(base, **best, min_ctas=3)))
    norm = kind in ("rms_norm", "layer_norm", "add_rms_norm")
    if norm:
        out.append(((best_name + ", " if best_name else "") + "weight shared", replace(base, **best, weight_shared=True)))
    if dtype_of(op).name == "bfloat16":  # (rows_common.WIDE_BF16 while it is built: wide_vectors)
        out.append((("16-byte vectors, " + best_name) if best_name else "16-byte vectors", replace(base, **best)))
    saved = list(rows_bulk.CHOSEN)
    try:
        slices = [base.slice_bytes]
        rows_bulk.CHOSEN[:] = [(d, None, 1, 1 << 30, base) for d in ("float32", "bfloat16")]
        if rows_bulk.bulk_for(op)[0] < rows_bulk.MAX_CLUSTER:
            slices.append(base.slice_bytes // 2)  # (twice the CTAs a row: half the shared memory a slice)
        for sb in slices:
            rows_bulk.CHOSEN[:] = [(d, None, 1, 1 << 30, replace(base, slice_bytes=sb)) for d in ("float32", "bfloat16")]
            c, _, _, actual = rows_bulk.bulk_for(op)  # (the slice's bytes: at most the setting's, 16 CTAs at most)
            cap = rows_bulk_backward.CLUSTERS.get(c)  # (the clusters of c an H200 holds at once, a CTA a multiprocessor)
            if sb == base.slice_bytes and cap is not None and copies * 2 * actual <= rows_bulk.SHARED_PER_SM:
                # (the capped persistent grid alone, today's passes)
                st = replace(base, persistent=True, buffers=2, min_ctas=None, max_units=cap)
                out.append((f"persistent x2, {actual // 1024}K slices ({c} CTAs), <= {cap} units, today's passes", st))
            for nbuf, per_sm in ((2, 1), (1, 2)):
                st = replace(base, **best, slice_bytes=sb, persistent=True, buffers=nbuf, min_ctas=per_sm if per_sm > 1 else None,
                             weight_shared=norm)
                fit = min(per_sm, rows_bulk.SHARED_PER_SM // (copies * nbuf * actual + rows_bulk.affine_staged(op, st)))  # (by shared memory)
                if not fit:  # (its buffers do not fit in shared memory: add_rms_norm float32's two of 2 x 64 KiB)
                    continue
                st = replace(st, max_units=cap * max(1, fit) if cap is not None else None)
                name = (f"persistent x{nbuf}, {actual // 1024}K slices ({c} CTAs), <= {st.max_units} units"
                        + (f", {best_name}" if best_name else "") + (", weight shared" if norm else ""))
                out.append((name, st))
        if kind != "add_rms_norm":  # the smallest slices in registers (Quack's row in registers over a cluster), capped
            _, block, per, actual = rows_bulk.bulk_for(op)
            values = per * vector_of(op)
            if values <= rows_bulk.MAX_REGISTER_VALUES and cap is not None and 2 * actual <= rows_bulk.SHARED_PER_SM:
                st = replace(base, slice_bytes=sb, persistent=True, buffers=2, min_ctas=None, max_units=cap, registers=True,
                             weight_shared=norm)
                out.append((f"persistent x2, {actual // 1024}K slices ({c} CTAs), <= {cap} units, registers "
                            f"({block} x {values})" + (", weight shared" if norm else ""), st))
    finally:
        rows_bulk.CHOSEN[:] = saved
    return out


@contextlib.contextmanager
def wide_vectors(name: str):
    """rows_common.WIDE_BF16 (16-byte bfloat16 vectors) on while a setting named
    ``16-byte vectors...`` is built."""
    from bulkred_dialect.passes.variants import rows_common

    saved = rows_common.WIDE_BF16
    rows_common.WIDE_BF16 = name.startswith("16-byte vectors")
    try:
        yield
    finally:
        rows_common.WIDE_BF16 = saved


def resident(k, sms: int) -> str:
    """The units (clusters, or CTAs) of kernel ``k``'s launch the GPU holds at once
    (cuOccupancyMaxActiveClusters through cuda.core, the non-portable size allowed for
    clusters of more than 8), against the grid's; '?' where it cannot say."""
    try:
        from cuda.bindings import driver
        from cuda.core import Device, LaunchConfig, ObjectCode

        launch = k.signature.launch
        c, t = launch.cluster[0], launch.block[0]
        cubin = k.module.cubin  # (assembled when the kernel was loaded: no second JIT)
        obj = ObjectCode.from_cubin(cubin) if cubin is not None else ObjectCode.from_ptx(k.module.ptx)
        kern = obj.get_kernel("rows")
        shmem = int(getattr(k.signature, "shmem", 0) or 0)  # the launch's dynamic shared memory
        if c == 1:
            return f"{kern.occupancy.max_active_blocks_per_multiprocessor(t, shmem) * sms}"
        if c > 8:
            h = kern.handle
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
            if isinstance(h, driver.CUkernel):
                _, dev = driver.cuDeviceGet(Device().device_id)
                driver.cuKernelSetAttribute(attr, 1, h, dev)
            else:
                driver.cuFuncSetAttribute(driver.CUfunction(int(h)), attr, 1)
        # (cuda.core 1.2's max_active_clusters takes the stream as a keyword: without it, a
        # TypeError, the '?' the earlier probe logs show for every cluster kernel)
        config = LaunchConfig(grid=(1, 1, 1), cluster=(c, 1, 1), block=(t, 1, 1), shmem_size=shmem)
        return str(kern.occupancy.max_active_clusters(config, stream=Device().default_stream))
    except Exception as e:  # noqa: BLE001 - a diagnostic: say why
        return f"? ({type(e).__name__})"


FASTEXP_CELLS = [("softmax", "bfloat16", 262144), ("softmax", "bfloat16", 65536), ("log_softmax", "bfloat16", 262144),
                 ("softmax", "float32", 262144), ("log_softmax", "float32", 262144), ("log_softmax", "bfloat16", 65536),
                 ("softmax", "float32", 65536), ("log_softmax", "float32", 65536)]
"""--set fastexp's cells: the exp kinds on rows_bulk, the furthest from the copy kernel first
(docs/benchmarks.md, the fifth session: softmax bfloat16 262144 0.80)."""
AFFINE_CELLS = [("layer_norm", "bfloat16", 262144), ("layer_norm", "float32", 262144), ("layer_norm", "bfloat16", 65536),
                ("layer_norm", "float32", 65536), ("rms_norm", "bfloat16", 262144), ("rms_norm", "bfloat16", 65536)]
"""--set affine's cells: layer_norm on rows_bulk, the furthest from the copy kernel first
(0.75 to 0.82 in the fifth session), and rms_norm bfloat16 262144 (its weight staged in
shared memory today) and 65536 (the slice in registers today: ``words`` there too) to compare."""
LOG_SOFTMAX_BF16 = (65536, 512, None, True, 2)
"""log_softmax bfloat16 262144's rows_bulk.CHOSEN setting (with online=True and its
max_units): slice bytes, threads, .minnctapersm, persistent, buffers."""


def fastexp_settings(op, kind: str) -> list[tuple[str, object]]:
    """--set fastexp's settings of one cell (rows_bulk.Setting's fast_exp, fold_sum, words;
    issue 30, section 4): the cell's rows_bulk setting (or a unit a row of 64 KiB slices)
    with every exp as ex2.approx.ftz, softmax's y with the sum folded into the exponent,
    bfloat16 vectors read from shared memory as words; with online statistics; the
    log_softmax bfloat16 setting (a persistent grid of two slice buffers, online, capped at
    the clusters the GPU holds at once; and with 32 KiB slices, two CTAs a multiprocessor)
    and float32 softmax's (a unit a row of 256 threads,
    the first copy early) with them; the slice in registers (one exp an element) in the
    capped grid. (name, None for the dispatch as it is, else the setting forced)."""
    from dataclasses import replace

    from bulkred_dialect.passes.variants import rows_bulk, rows_bulk_backward
    from bulkred_dialect.passes.variants.rows_common import dtype_of, vector_of

    today = rows_bulk.setting_for(op)
    base = today if today is not None else rows_bulk.Setting(*UNIT_ROW, False, 1)
    bf16 = dtype_of(op).name == "bfloat16"
    fast: dict = {"fast_exp": True, "fold_sum": kind == "softmax"}
    tag = "fast exp" + (", folded sum" if kind == "softmax" else "")
    out: list[tuple[str, object]] = [("dispatch", None)]
    if today is None:
        out.append((f"bulk {base.slice_bytes // 1024}K/{base.block}, a unit a row", base))
    out.append(("today's, fast exp", replace(base, fast_exp=True)))
    if bf16 and base.registers:
        out.append(("today's, fast exp, words", replace(base, fast_exp=True, words=True)))
    if kind == "softmax" and not base.registers:  # (the slice in registers: y is the exps times a factor, no fold)
        out.append((f"today's, {tag}", replace(base, **fast)))
    if bf16 and not base.registers:
        out.append((f"today's, {tag}, words", replace(base, **fast, words=True)))
    if not base.online and not base.registers:
        out.append((f"today's, online, {tag}" + (", words" if bf16 else ""), replace(base, **fast, online=True, words=bf16)))
    saved = list(rows_bulk.CHOSEN)
    try:
        grid = rows_bulk.Setting(*LOG_SOFTMAX_BF16, online=True)
        rows_bulk.CHOSEN[:] = [(d, None, 1, 1 << 30, grid) for d in ("float32", "bfloat16", "float16")]
        c, block, per, actual = rows_bulk.bulk_for(op)
        cap = rows_bulk_backward.CLUSTERS.get(c)
        if grid != replace(base, max_units=None) and 2 * actual <= rows_bulk.SHARED_PER_SM:
            st = replace(grid, **fast, max_units=cap, words=bf16)
            out.append((f"persistent x2 ({c} CTAs), <= {cap} units, online, {tag}" + (", words" if bf16 else ""), st))
        half = replace(grid, slice_bytes=32768)  # (twice the CTAs a row, two CTAs a multiprocessor)
        rows_bulk.CHOSEN[:] = [(d, None, 1, 1 << 30, half) for d in ("float32", "bfloat16", "float16")]
        c2, _, _, actual2 = rows_bulk.bulk_for(op)
        cap2 = rows_bulk_backward.CLUSTERS.get(c2)
        if actual2 == 32768 and c2 > c and cap2 is not None:
            st = replace(half, **fast, min_ctas=2, max_units=2 * cap2, words=bf16)
            out.append((f"persistent x2 ({c2} CTAs), 2 CTA/SM, <= {2 * cap2} units, online, {tag}" + (", words" if bf16 else ""),
                        st))
        rows_bulk.CHOSEN[:] = [(d, None, 1, 1 << 30, grid) for d in ("float32", "bfloat16", "float16")]
        values = per * vector_of(op)
        if values <= rows_bulk.MAX_REGISTER_VALUES and 2 * actual <= rows_bulk.SHARED_PER_SM:
            st = replace(grid, online=False, registers=True, fast_exp=True, max_units=cap, words=bf16)
            out.append((f"persistent x2 ({c} CTAs), <= {cap} units, registers ({block} x {values}), fast exp"
                        + (", words" if bf16 else ""), st))
        if kind == "softmax" and not base.early_copy:  # (float32 softmax 262144's unit a row, its first copy early)
            unit = rows_bulk.Setting(65536, 256, 2, False, 1, early_copy=True)
            rows_bulk.CHOSEN[:] = [(d, None, 1, 1 << 30, unit) for d in ("float32", "bfloat16", "float16")]
            if rows_bulk.bulk_for(op)[0] > 1:  # (early_copy: a cluster)
                out.append((f"256 threads, early copy, {tag}" + (", words" if bf16 else ""), replace(unit, **fast, words=bf16)))
    finally:
        rows_bulk.CHOSEN[:] = saved
    return distinct(out)


def distinct(settings: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """``settings`` without the repeats of a setting (the first name kept)."""
    seen: list = []
    out = []
    for name, st in settings:
        if st is None or st not in seen:
            seen.append(st)
            out.append((name, st))
    return out


def affine_settings(op, kind: str) -> list[tuple[str, object]]:
    """--set affine's settings of one cell (rows_bulk.Setting's affine_registers, words;
    issue 30, section 4): persistent grids of two slice buffers (slices of 64 KiB and of
    32 KiB where the cluster has room to double), one or two CTAs a multiprocessor, capped
    at the clusters the GPU holds at once, each thread's weight and bias values in
    registers, loaded once (not from L2 per row), CTAs of 512 or 256 threads (twice the
    values a thread: the statistics' exchanges' cost a thread over twice the elements),
    where the registers fit; bfloat16 with its vectors read from shared memory as words
    (and today's setting with words alone); layer_norm each also with its statistics from
    one pass, ``one_pass="local"`` (two scalar exchanges). (name, None for the dispatch as
    it is, else the setting forced)."""
    from dataclasses import replace

    from bulkred_dialect.passes.variants import rows_bulk, rows_bulk_backward
    from bulkred_dialect.passes.variants.rows_common import dtype_of, vector_of

    today = rows_bulk.setting_for(op)
    bf16 = dtype_of(op).name == "bfloat16"
    out: list[tuple[str, object]] = [("dispatch", None)]
    if today is not None and bf16:
        out.append(("today's, words", replace(today, words=True)))
    if today is not None and today.registers and today.persistent and not today.weight_shared:
        out.append(("today's, w in registers" + (", words" if bf16 else ""), replace(today, affine_registers=True, words=bf16)))
    if today is not None and kind == "layer_norm" and not today.registers:
        out.append(("today's, one pass local" + (", words" if bf16 else ""), replace(today, one_pass="local", words=bf16)))
    saved = list(rows_bulk.CHOSEN)
    try:
        for sb, threads in ((65536, 512), (32768, 512), (32768, 256), (65536, 256)):
            unit = rows_bulk.Setting(sb, threads, None, True, 2)
            rows_bulk.CHOSEN[:] = [(d, None, 1, 1 << 30, unit) for d in ("float32", "bfloat16", "float16")]
            c, block, per, actual = rows_bulk.bulk_for(op)
            if actual != sb or block != threads:  # (the cluster at its 16 CTAs: no smaller slices)
                continue
            cap = rows_bulk_backward.CLUSTERS.get(c)
            values = per * vector_of(op)
            held = values // (2 if bf16 else 1) * (2 if kind == "layer_norm" else 1)  # (registers of w, b)
            for per_sm in (1, 2):
                # (shared memory for the CTAs' two slice buffers; registers: the held ones and about 48 more within
                # ptxas's limit for that many CTAs of the block, 64K a multiprocessor)
                if per_sm * 2 * actual > rows_bulk.SHARED_PER_SM or held + 48 > min(255, 65536 // (block * per_sm)):
                    continue
                st = replace(unit, min_ctas=per_sm if per_sm > 1 else None, max_units=cap * per_sm if cap else None,
                             affine_registers=True, words=bf16)
                name = (f"persistent x2, {actual // 1024}K slices ({c} x {block} x {values}), {per_sm} CTA/SM, "
                        f"<= {st.max_units} units, w in registers ({held})" + (", words" if bf16 else ""))
                out.append((name, st))
                if kind == "layer_norm":
                    out.append((name + ", one pass local", replace(st, one_pass="local")))
    finally:
        rows_bulk.CHOSEN[:] = saved
    return distinct(out)


def passes(args, cells_of: list | None = None, settings_of=None) -> int:
    """``--set passes``: rows_bulk's pass settings on the long rows (rows_bulk.Setting's
    one_pass, online, weight_shared, max_units), each against the dispatch as it is, on the
    same tensors, timed in turns with the copy kernel; layer_norm's also on rows of mean
    1000 and spread 1 (``err mean``), and on rows of mean 0 whose first element is 1000, a
    massive first channel (``err x0``: the row shift's weakness), beside torch's own error
    there (the ``torch`` row); the end: for each cell the fastest sound setting and the
    rows_bulk.CHOSEN row that takes it (:func:`verdict`). ``units``: the grid's units / those resident at once. ``--dry-run``: each
    setting's kernel built and assembled for sm_90a (no GPU). ``--set fastexp`` /
    ``--set affine``: the same over :data:`FASTEXP_CELLS` / :data:`AFFINE_CELLS` with
    :func:`fastexp_settings` / :func:`affine_settings` (``cells_of``, ``settings_of``)."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose
    from bulkred_dialect.passes.variants import rows_bulk, rows_cluster

    t0 = time.time()
    kinds = args.kinds.split(",") if args.kinds else None
    ns = [int(v) for v in args.n.split(",")] if args.n else None
    cells = [c for c in (cells_of or PASS_CELLS) if (kinds is None or c[0] in kinds) and (ns is None or c[2] in ns)]
    settings_of = settings_of or pass_settings
    today = (dict(rows_cluster.MEASURED), list(rows_bulk.CHOSEN))
    torch = None
    if not args.dry_run:
        import torch
    verdicts: list[str] = []
    print("| op | dtype | N | copy GB/s | setting | GB/s | /copy | regs / spill | threads x cluster | units | err | inv |"
          " err mean | err x0 |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- | --- | ---: | --- | ---: | ---: |")
    failed = 0
    for kind, dtype, n in cells:
        if time.time() - t0 > args.budget_s:
            print(f"| {kind} | {dtype} | {n} | skipped: budget |")
            continue
        kw: dict = {}
        if kind in ("rms_norm", "add_rms_norm"):
            kw = {"weight": dtype, "eps": EPS}
        elif kind == "layer_norm":
            kw = {"weight": dtype, "bias": dtype, "eps": EPS}
        op = next(o for o in row_kernels.module(kind, None, n, dtype, **kw).walk() if o.name == "bulkred.normalize_rows")
        settings = settings_of(op, kind)
        if args.dry_run:
            from bulkred_dialect.backend_ptx.assemble import ptxas_accepts

            for name, st in settings:
                tables = today if st is None else (today[0], [(dtype, (kind,), n, n, st)] + today[1])
                with bulk_setting({}, tables, today), wide_vectors(name):
                    try:
                        k = row_kernels.kernel_for(kind, None, n, dtype, variant=None if st is None else "rows_bulk", **kw)
                    except Exception as e:  # noqa: BLE001 - the row says why
                        failed += 1
                        print(f"| {kind} | {dtype} | {n} | | {name} | FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160]} |")
                        continue
                    ok, log = ptxas_accepts(k.module.ptx, "sm_90a")
                    failed += not ok
                    launch = k.signature.launch
                    print(f"| {kind} | {dtype} | {n} | | {name} | {'ok' if ok else 'FAILED ' + log.splitlines()[0]} | | "
                          f"{ptxas_info(k)} | {launch.block[0]} x {launch.cluster[0]} | {launch.grid[0] // launch.cluster[0]} |",
                          flush=True)
            continue
        _, x, y, w, bvec = cell_tensors(torch, n, dtype)
        extra = [w] if kind == "rms_norm" else [w, bvec] if kind == "layer_norm" else []
        res = hout = h5 = None
        if kind == "add_rms_norm":  # (the kernel's x, y, residual, residual_out, weight)
            res, hout = torch.randn_like(x), torch.empty_like(x)
            h5 = torch.empty_like(x[:5])
        F = torch.nn.functional
        rows = 64  # (the rows checked against float64)

        def ref_of(xs):
            if kind == "add_rms_norm":  # (h = x + residual rounded to x's type, as torch's add)
                return F.rms_norm((xs + res[:xs.shape[0]]).double(), (n,), w.double(), EPS)
            xd = xs.double()
            if kind == "softmax":
                return torch.softmax(xd, -1)
            if kind == "log_softmax":
                return torch.log_softmax(xd, -1)
            if kind == "rms_norm":
                return F.rms_norm(xd, (n,), w.double(), EPS)
            return F.layer_norm(xd, (n,), w.double(), bvec.double(), EPS)

        def err_of(got, ref) -> float:
            return ((got.double() - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item()

        ref = ref_of(x[:rows])
        y5 = torch.empty_like(x[:5])
        big = hard = None
        if kind == "layer_norm":  # mean 1000, spread 1; then rows of mean 0 whose first element is 1000 (a massive channel)
            big = (torch.randn(8, n, device=DEVICE) + 1000).to(x.dtype)
            hard = torch.randn(8, n, device=DEVICE).to(x.dtype)
            hard[:, 0] = 1000.0
            refs = (ref_of(big), ref_of(hard))
            yb = torch.empty_like(big)
            te = [err_of(F.layer_norm(t, (n,), w, bvec, EPS), r) for t, r in zip((big, hard), refs)]
            print(f"| {kind} | {dtype} | {n} | | torch (its own error) | | | | | | | | {te[0]:.1e} | {te[1]:.1e} |")
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        runs = []
        judged: list[tuple] = []  # (name, setting, err, sound: bits invariant and layer_norm's error as torch's)
        for name, st in settings:
            tables = today if st is None else (today[0], [(dtype, (kind,), n, n, st)] + today[1])
            with bulk_setting({}, tables, today), wide_vectors(name):
                try:
                    k = row_kernels.kernel_for(kind, None, n, dtype, variant=None if st is None else "rows_bulk", **kw)
                    if st is None:
                        name = f"dispatch: {choose(op, Target.parse('sm_90a')).name}"
                    elif kind in ("rms_norm", "layer_norm") and st.weight_shared:
                        if not rows_bulk.affine_staged(op, st):
                            name += " (no room: read from global)"
                    if res is not None:
                        call = lambda k=k: k(x, y, res, hout, w)  # noqa: E731
                    else:
                        call = lambda k=k: k(x, y, *extra)  # noqa: E731
                    y.fill_(float("nan"))
                    y5.fill_(float("nan"))
                    call()
                    if res is not None:
                        k(x[3:8], y5, res[3:8], h5, w)
                    else:
                        k(x[3:8], y5, *extra)
                    torch.cuda.synchronize()
                    err = err_of(y[:rows], ref)
                    inv = "yes" if torch.equal(y5.view(torch.uint8), y[3:8].view(torch.uint8)) else "NO"
                    if res is not None and not torch.equal(hout[:rows], x[:rows] + res[:rows]):
                        inv += ", h WRONG"
                    more = " | "
                    if big is not None:
                        es = []
                        for t, r in zip((big, hard), refs):
                            k(t, yb, *extra)
                            torch.cuda.synchronize()
                            es.append(err_of(yb, r))
                        more = f"{es[0]:.1e} | {es[1]:.1e}"
                    launch = k.signature.launch
                    units = f"{launch.grid[0] // launch.cluster[0]} / {resident(k, sms)}"
                    runs.append((name, call, ptxas_info(k), f"{launch.block[0]} x {launch.cluster[0]} | {units}", err,
                                 f"{inv} | {more}"))
                    judged.append((name, st, err, inv == "yes" and (big is None or es[1] <= 4 * max(te[1], 1e-7)),
                                   k.signature.launch))
                except Exception as e:  # noqa: BLE001 - the row says why
                    print_failed(kind, dtype, n, name, e)
        moved = 4 if kind == "add_rms_norm" else 2  # (x read and y written; add_rms_norm: residual read, h written too)
        ratios = print_timed(torch, kind, dtype, n, x, y, moved * x.numel() * x.element_size(), runs)
        verdicts.append(verdict(kind, dtype, n, judged, ratios))
        del x, y, y5, ref, runs, res, hout
        torch.cuda.empty_cache()
    print("\nWhat to flip (the fastest sound setting of each cell, where it beats the dispatch by 1% or more: a row of"
          " rows_bulk.CHOSEN above the cell's present one; each setting's default stays off):")
    for line in verdicts:
        print(line)
    print(f"probe time: {time.time() - t0:.0f} s")
    return 1 if failed else 0


def verdict(kind: str, dtype: str, n: int, judged: list[tuple], ratios: list[float]) -> str:
    """One cell's outcome: the fastest setting whose bits are batch-invariant, whose error
    is within 4x the dispatch's (and layer_norm's on the outlying rows within 4x torch's),
    against the dispatch, and the rows_bulk.CHOSEN row that takes it."""
    if not judged or len(ratios) != len(judged):
        return f"- {kind} {dtype} {n}: no result"
    if judged[0][1] is not None:
        return f"- {kind} {dtype} {n}: no result for the dispatch"
    today = ratios[0]
    base_err = judged[0][2]
    best = None
    for (name, st, err, sound, _), ratio in zip(judged[1:], ratios[1:]):
        if sound and err <= 4 * max(base_err, 1e-7) and (best is None or ratio > best[1]):
            best = (name, ratio, st)
    if best is None or best[1] < 1.01 * today:
        return f"- {kind} {dtype} {n}: keep the dispatch ({judged[0][0]}, {today:.3f} of copy)"
    name, ratio, st = best
    dt = "F32" if dtype == "float32" else "BF16"
    wide = "; and rows_common.WIDE_BF16 for this cell (a global today: not a per-cell setting)" if name.startswith("16-byte") else ""
    return (f"- {kind} {dtype} {n}: {name}, {ratio:.3f} of copy against {today:.3f}: "
            f"({dt}.name, (\"{kind}\",), {n}, {n}, {st!r}){wide}")


LSM_CELLS = (262144, 65536, 16384, 4096, 1024)
"""--set logsoftmax's cells (log_softmax bfloat16, M x N = 2^28), the furthest from the copy
kernel first (docs/benchmarks.md, the seventh session: 0.84 / 0.87 / 0.88 / 0.90 / 0.95)."""
LSM_TOL = 1.6e-2
"""tests/test_rows.check's bound for bfloat16 (the largest error over the largest |y|)."""


def lsm_candidates(n: int) -> list[tuple[str, list, object, str]]:
    """--set logsoftmax's settings of log_softmax bfloat16 at N = ``n``: (name, module
    overrides ``[(module, attribute, value)]``, the rows_bulk.Setting forced for the cell or
    None, what to flip where it wins). ``lse``: rows_common.LOG_SOFTMAX_LSE (y = x - lse, one
    FADD an element); the others: the settings that softmax bfloat16 (rows_bulk.CHOSEN's
    rows at 65536 and 262144) or cross_entropy bfloat16 (rows_warp / rows_cta MIN_CTAS,
    rows_bulk's 16384 row) take and log_softmax lacks."""
    from dataclasses import replace

    from bulkred_dialect.passes.variants import rows_bulk, rows_common, rows_cta, rows_warp

    out: list[tuple[str, list, object, str]] = [("dispatch", [], None, "")]

    def add(name: str, lse: bool, st=None, module=None, ctas: int | None = None) -> None:
        ov, flips = [], []
        if lse:
            ov.append((rows_common, "LOG_SOFTMAX_LSE", True))
            flips.append(f"rows_common.LOG_SOFTMAX_LSE_MEASURED[(\"log_softmax\", BF16.name)] gains ({n}, {n})")
        if module is not None:
            ov.append((module, "MIN_CTAS", ctas))
            flips.append(f"{module.__name__.rsplit('.', 1)[-1]}.MIN_CTAS_MEASURED[(\"log_softmax\", BF16.name)] = "
                         f"(({n}, {n}, {ctas}),)")
        if st is not None:
            flips.append(f"rows_bulk.CHOSEN gains (BF16.name, (\"log_softmax\",), {n}, {n}, {st!r}) above its rows")
        out.append((("lse, " if lse else "") + name if name else "lse", ov, st, "; ".join(flips)))

    add("", True)
    # (ptxas, sm_90a: log_softmax bfloat16 keeps x's 32 float32 values a thread over the reduction where softmax
    # keeps its exps instead of x: 91 registers a thread at 1024 against softmax's 73, 96 at 4096 and 16384
    # against 75; fewer CTAs a multiprocessor. .minnctapersm brings it to softmax's CTAs or cross_entropy's)
    # (16384: 96 registers hold one CTA of 512 a multiprocessor, softmax's 75 too; 2 at 64)
    if n == 1024:  # rows_warp: softmax's 3 CTAs of 256 a multiprocessor, cross_entropy's 4
        for ctas in (3, 4):
            add(f"rows_warp min {ctas} CTAs", False, module=rows_warp, ctas=ctas)
            add(f"rows_warp min {ctas} CTAs", True, module=rows_warp, ctas=ctas)
    if n in (4096, 16384):  # rows_cta: softmax's CTAs (6 of 128 at 4096), cross_entropy's (7; 2 of 512 at 16384)
        for ctas in ((6, 7) if n == 4096 else (2,)):
            add(f"rows_cta min {ctas} CTAs", False, module=rows_cta, ctas=ctas)
            add(f"rows_cta min {ctas} CTAs", True, module=rows_cta, ctas=ctas)
        ce = rows_bulk.Setting(32768, 256, 2, True, 2, registers=True, max_units=264, fast_exp=True, words=True)
        add("bulk: cross_entropy 16384's (registers, fast exp, words)", True, ce)
        add("bulk: the same, 512 threads", True, replace(ce, block=512, min_ctas=None))
    if n == 65536:
        today = rows_bulk.Setting(65536, 512, 1, True, 2, registers=True)  # (rows_bulk.CHOSEN's row)
        soft = rows_bulk.Setting(65536, 256, 2, False, 1, early_copy=True, fast_exp=True, words=True)  # (softmax's, no fold)
        add("today's, fast exp, words", False, replace(today, fast_exp=True, words=True))
        add("today's, fast exp, words", True, replace(today, fast_exp=True, words=True))
        add("softmax's (unit a row, 256 thr, early copy, fast exp, words)", False, soft)
        add("softmax's", True, soft)
        add("softmax's, online", True, replace(soft, online=True))
    if n == 262144:
        today = rows_bulk.Setting(65536, 512, None, True, 2, online=True, max_units=15)  # (rows_bulk.CHOSEN's row)
        soft = rows_bulk.Setting(65536, 512, None, True, 2, registers=True, max_units=15, fast_exp=True, words=True)
        add("today's, fast exp, words", True, replace(today, fast_exp=True, words=True))
        add("softmax's (registers, fast exp, words)", False, soft)
        add("softmax's", True, soft)
        add("unit a row, 256 thr, early copy, online, fast exp, words", True,
            rows_bulk.Setting(65536, 256, 2, False, 1, early_copy=True, online=True, fast_exp=True, words=True))
    return out


@contextlib.contextmanager
def overridden(overrides: list, setting, n: int):
    """A context: each ``(module, attribute, value)`` of ``overrides`` set, rows_bulk.CHOSEN
    with ``setting`` first for log_softmax bfloat16 at N = ``n`` (where not None), row_kernels'
    kernels forgotten; then all restored."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.passes.variants import rows_bulk

    saved = [(m, a, getattr(m, a)) for m, a, _ in overrides]
    chosen = list(rows_bulk.CHOSEN)
    try:
        for m, a, v in overrides:
            setattr(m, a, v)
        if setting is not None:
            rows_bulk.CHOSEN[:] = [("bfloat16", ("log_softmax",), n, n, setting)] + chosen
        row_kernels._KERNELS.clear()
        yield
    finally:
        for m, a, v in saved:
            setattr(m, a, v)
        rows_bulk.CHOSEN[:] = chosen
        row_kernels._KERNELS.clear()


def rounds_timed(torch, kind: str, dtype: str, n: int, x, y, runs: list, rounds: int, tensors: int = 2) -> list[float]:
    """:func:`print_timed` for --set logsoftmax, quack16 and quack32: the copy and each run timed
    in turns ``rounds`` times, each one's median kept (the cells' spread between runs is several
    percent: docs/benchmarks.md); GB/s of ``tensors`` of x's bytes (x read and y written: 2;
    add_rms_norm's residual and residual_out too: 4) against the copy's 2; ``spread``: the run's
    (max - min) / median. Returns each run's ratio to the copy's GB/s."""
    import statistics

    calls = [lambda: torch.mul(x, 1.0, out=y)] + [r[1] for r in runs]
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(rounds):  # in turns: the copy, then each setting
        for i, fn in enumerate(calls):
            times[i].append(RA.graph_us(torch, lambda _, c=fn: c(), [None], 10, 5))
    med = [statistics.median(t) for t in times]
    copy_gbs = 2 * x.numel() * x.element_size() / med[0] / 1e3  # (x read and y written, as the copy's)
    nbytes = tensors * x.numel() * x.element_size()
    ratios = []
    for (name, _, a, b, err, last), t, us in zip(runs, times[1:], med[1:]):
        gbs = nbytes / us / 1e3
        ratios.append(gbs / copy_gbs)
        print(f"| {kind} | {dtype} | {n} | {copy_gbs:,.0f} | {name} | {gbs:,.0f} | {gbs / copy_gbs:.3f} | {a} | {b} | "
              f"{err:.1e} | {last}, spread {(max(t) - min(t)) / us:.3f} |", flush=True)
    return ratios


def logsoftmax(args) -> int:
    """``--set logsoftmax`` (issue 30, section 4): log_softmax bfloat16 at :data:`LSM_CELLS`
    (or ``--n``), M x N = 2^28, each setting of :func:`lsm_candidates` against the dispatch on
    the same tensors, and softmax bfloat16's dispatch beside them for reference (``softmax
    ref``, its error against softmax's float64), timed in turns ``--rounds`` times (the
    median; :func:`rounds_timed`); each output checked on the GPU against
    float64 (64 rows; ``err``: the largest error over the largest |y|; ``ok``: within
    tests/test_rows.check's bfloat16 bound and at most twice the dispatch's) and its batch
    invariance (rows 3 to 7 alone give y's bits, ``inv``) before timing; then per cell the
    fastest sound setting and what to flip (1% or more over the dispatch). ``--dry-run``:
    build and assemble each kernel for sm_90a (no GPU)."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.backend_ptx.assemble import ptxas_accepts
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose

    t0 = time.time()
    ns = [int(v) for v in args.n.split(",")] if args.n else list(LSM_CELLS)
    torch = None
    if not args.dry_run:
        import torch
    print("| op | dtype | N | copy GB/s | setting | GB/s | /copy | regs / spill | threads x cluster | err | inv, ok |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- | ---: | --- |")
    failed = 0
    verdicts: list[str] = []
    for n in ns:
        if time.time() - t0 > args.budget_s:
            print(f"| log_softmax | bfloat16 | {n} | skipped: budget |")
            continue
        cands = lsm_candidates(n)
        if args.dry_run:
            for name, ov, st, _ in cands + [("softmax ref", [], None, "")]:
                kind = "softmax" if name == "softmax ref" else "log_softmax"
                with overridden(ov, st, n):
                    try:
                        k = row_kernels.kernel_for(kind, None, n, "bfloat16", variant=None if st is None else "rows_bulk")
                        op = next(o for o in row_kernels.module(kind, None, n, "bfloat16").walk()
                                  if o.name == "bulkred.normalize_rows")
                        v = choose(op, Target.parse("sm_90a")).name
                    except Exception as e:  # noqa: BLE001 - the row says why
                        failed += 1
                        print(f"| {kind} | bfloat16 | {n} | | {name} | FAILED: {type(e).__name__}: "
                              f"{str(e).splitlines()[0][:160]} |")
                        continue
                    ok, log = ptxas_accepts(k.module.ptx, "sm_90a")
                    failed += not ok
                    launch = k.signature.launch
                    print(f"| {kind} | bfloat16 | {n} | | {name} ({v}) | {'ok' if ok else 'FAILED ' + log.splitlines()[0]} | | "
                          f"{ptxas_info(k)} | {launch.block[0]} x {launch.cluster[0]} |", flush=True)
            continue
        _, x, y, _, _ = cell_tensors(torch, n, "bfloat16")
        rows = 64
        ref = torch.log_softmax(x[:rows].double(), -1)
        sref = torch.softmax(x[:rows].double(), -1)
        y5 = torch.empty_like(x[:5])

        def err_of(got, r) -> float:
            return ((got.double() - r).abs().max() / r.abs().max().clamp(min=1e-30)).item()

        runs, judged = [], []  # judged: (name, err, sound, flip)
        base_err = None
        for name, ov, st, flip in cands + [("softmax ref", [], None, "")]:
            kind = "softmax" if name == "softmax ref" else "log_softmax"
            with overridden(ov, st, n):
                try:
                    k = row_kernels.kernel_for(kind, None, n, "bfloat16", variant=None if st is None else "rows_bulk")
                    if st is None and not ov:
                        op = next(o for o in row_kernels.module(kind, None, n, "bfloat16").walk()
                                  if o.name == "bulkred.normalize_rows")
                        name = f"{name}: {choose(op, Target.parse('sm_90a')).name}"
                    call = lambda k=k: k(x, y)  # noqa: E731
                    y.fill_(float("nan"))
                    y5.fill_(float("nan"))
                    call()
                    k(x[3:8], y5)
                    torch.cuda.synchronize()
                    err = err_of(y[:rows], sref if kind == "softmax" else ref)
                    inv = torch.equal(y5.view(torch.uint8), y[3:8].view(torch.uint8))
                    if base_err is None and kind == "log_softmax":
                        base_err = err
                    sound = inv and err <= LSM_TOL and err <= 2 * max(base_err or err, 1e-7)
                    launch = k.signature.launch
                    runs.append((name, call, ptxas_info(k), f"{launch.block[0]} x {launch.cluster[0]}", err,
                                 f"{'yes' if inv else 'NO'}, {'ok' if sound else 'NOT OK'}"))
                    judged.append((name, err, sound and kind == "log_softmax", flip))
                except Exception as e:  # noqa: BLE001 - the row says why
                    failed += 1
                    print_failed(kind, "bfloat16", n, name, e)
        ratios = rounds_timed(torch, "log_softmax", "bfloat16", n, x, y, runs, args.rounds)
        if len(ratios) == len(judged) and judged and judged[0][0].startswith("dispatch"):
            best = max(((r, j) for r, j in zip(ratios[1:], judged[1:]) if j[2]), default=None, key=lambda t: t[0])
            soft = next((r for r, j in zip(ratios, judged) if j[0].startswith("softmax ref")), float("nan"))
            if best is None or best[0] < 1.01 * ratios[0]:
                verdicts.append(f"- log_softmax bfloat16 {n}: keep the dispatch ({ratios[0]:.3f} of copy; softmax {soft:.3f})")
            else:
                verdicts.append(f"- log_softmax bfloat16 {n}: {best[1][0]}, {best[0]:.3f} of copy against {ratios[0]:.3f} "
                                f"(softmax {soft:.3f}): {best[1][3]}")
        else:
            verdicts.append(f"- log_softmax bfloat16 {n}: no result")
        del x, y, y5, ref, sref, runs
        torch.cuda.empty_cache()
    if verdicts:
        print("\nWhat to flip (the fastest sound setting of each cell, 1% or more over the dispatch; each stays off until then):")
        for line in verdicts:
            print(line)
    print(f"probe time: {time.time() - t0:.0f} s")
    return 1 if failed else 0


Q16_CELLS = [("softmax", 4096), ("rms_norm", 4096), ("layer_norm", 4096),
             ("softmax", 16384), ("rms_norm", 16384), ("layer_norm", 16384)]
"""--set quack16's cells (bfloat16, M x N = 2^28): 0.91 to 0.93 of copy where Quack reaches
0.96 (docs/rows_bench_h200_run7.md)."""
Q16_QUACK = {("softmax", 4096): 0.97, ("rms_norm", 4096): 0.96, ("layer_norm", 4096): 0.66,
             ("softmax", 16384): 0.96, ("rms_norm", 16384): 0.98, ("layer_norm", 16384): 0.05}
"""Quack's GB/s over the copy's in each cell (docs/rows_bench_h200_run7.md, the same H200), for the verdict."""


def q16_candidates(kind: str, n: int) -> list[tuple[str, list, object, str]]:
    """--set quack16's settings of ``kind`` bfloat16 at N = ``n``, each toward Quack's
    structure (quack/reduction_base.py, softmax.py, rmsnorm.py: a CTA of 128 threads takes
    2 rows of 64 threads at 4096, 1 of 128 at 16384; a grid of M / rows CTAs, each loading its
    tile once (cp.async into shared memory, 16 bytes a thread a copy), reducing, storing and
    leaving: no loop over rows, the hardware's scheduler filling the multiprocessors): (name,
    module overrides ``[(module, attribute, value)]``, the rows_bulk.Setting forced for the
    cell or None, what to flip where it wins).

    ``a row a CTA``: rows_cta's grid of M CTAs (CTAS_PER_SM past any M: each CTA one row,
    then leaves) instead of 2048 threads' worth a multiprocessor looping over rows (a grid
    of 16 CTAs of 128 a multiprocessor where 6 are resident: 2.7 waves of CTAs that each
    take 31 rows, the last wave two thirds full); unpipelined (one row: nothing to load
    ahead; pipelined, its prefetch of the next row reads the row again from L2).
    ``Quack's threads``: 64 threads a row at 4096 (64 values a thread, rows_cta.MIN_BLOCK
    64), 256 at 16384 (64 values; Quack's 128 threads of 128 values exceed rows_cta's
    registers). ``bulk``: rows_bulk, the row copied into shared memory (cp.async.bulk), a
    CTA a row (a grid of M), the thread's share read once into registers (``registers``),
    16-bit vectors read as words, softmax's fast exp: Quack's tile in shared memory."""
    from dataclasses import replace

    from bulkred_dialect.passes.variants import rows_bulk, rows_common, rows_cta

    key = f"(\"{kind}\", BF16.name)"
    grid_m = 1 << 20
    out: list[tuple[str, list, object, str]] = [("dispatch", [], None, "")]
    one_row = [(rows_cta, "CTAS_PER_SM", grid_m)]
    unpiped = [(rows_common, "FORWARD_PIPELINE", False)]
    flip_grid = f"rows_cta.CTAS_PER_SM_MEASURED[{key}] += (({n}, {n}, {grid_m}),)"
    flip_unpiped = f"rows_common.FORWARD_MEASURED[{key}] = (({n}, {n}, False),)"
    out.append(("rows_cta, a row a CTA (grid M), unpipelined", one_row + unpiped, None, f"{flip_grid}; {flip_unpiped}"))
    out.append(("rows_cta, a row a CTA (grid M), pipelined", one_row, None, flip_grid))
    if n == 4096:
        quack = [(rows_cta, "MIN_BLOCK", 64), (rows_cta, "VALUES", 64)]
        flip_q = (f"rows_cta.MIN_BLOCK_MEASURED[{key}] = (({n}, {n}, 64),); "
                  f"rows_cta.VALUES_MEASURED[{key}] += (({n}, {n}, 64),)")
    else:
        quack = [(rows_cta, "VALUES", 64)]
        flip_q = f"rows_cta.VALUES_MEASURED[{key}] += (({n}, {n}, 64),)"
    out.append(("rows_cta, Quack's threads a row", quack, None, flip_q))
    out.append(("rows_cta, Quack's threads a row, a row a CTA, unpipelined", quack + one_row + unpiped, None,
                f"{flip_q}; {flip_grid}; {flip_unpiped}"))

    def min_ctas(ctas: int) -> tuple[list, str]:
        return [(rows_cta, "MIN_CTAS", ctas)], f"rows_cta.MIN_CTAS_MEASURED[{key}] += (({n}, {n}, {ctas}),)"

    # (ptxas, sm_90a: unpipelined, a row a CTA, softmax 4096 61 registers (8 CTAs of 128 a multiprocessor, against
    # the dispatch's 75: 6), rms_norm 72 (7; 96: 5), layer_norm 96 (5; 127: 4); .minnctapersm brings each to 8)
    if n == 4096:
        ov, flip = min_ctas(8)
        out.append(("rows_cta, a row a CTA, unpipelined, min 8 CTAs", one_row + unpiped + ov, None,
                    f"{flip_grid}; {flip_unpiped}; {flip}"))
    else:  # (256 threads of 64 values, a row a CTA: 96 to 168 registers, 2 CTAs or 1; Quack's 16384 holds 3 rows)
        ov, flip = min_ctas(3)
        out.append(("rows_cta, Quack's threads a row, a row a CTA, unpipelined, min 3 CTAs",
                    quack + one_row + unpiped + ov, None, f"{flip_q}; {flip_grid}; {flip_unpiped}; {flip}"))
        # Quack's own: 128 threads of 128 values, 3 CTAs a multiprocessor (ptxas: 160 to 168 registers under
        # .minnctapersm 3, no spill; 176 to 254 without: 2 or 1): three rows in flight, a third of the registers
        # the threads' own (the dispatch's 512 threads of 32 values: 75 registers, one row)
        ov, flip = min_ctas(3)
        out.append(("rows_cta, Quack's 128 threads of 128 values, a row a CTA, unpipelined, min 3 CTAs",
                    [(rows_cta, "VALUES", 128)] + one_row + unpiped + ov, None,
                    f"rows_cta.VALUES_MEASURED[{key}] = (({n}, {n}, 128),) + its ranges; {flip_grid}; "
                    f"{flip_unpiped}; {flip}"))
        if kind == "layer_norm":  # (the dispatch's 1024 threads of 16 values: one CTA a multiprocessor)
            ov, flip = min_ctas(2)
            out.append(("rows_cta, 512 threads, a row a CTA, unpipelined, min 2 CTAs",
                        [(rows_cta, "VALUES", 32)] + one_row + unpiped + ov, None,
                        f"rows_cta.VALUES_MEASURED[{key}] = (({n}, {n}, 32),) + its ranges; {flip_grid}; "
                        f"{flip_unpiped}; {flip}"))
    # Quack's reductions: each warp's partial into shared memory, one barrier, every warp combining them (its
    # tile's buffer used once); rows_cta's two barriers (warp 0 combining, then its broadcast), or one
    # (rows_common.CTA_ONE_BARRIER: two sets of slots by the row count's parity; the default's bits)
    one_bar = [(rows_common, "CTA_ONE_BARRIER", True)]
    flip_bar = f"rows_common.CTA_ONE_BARRIER_MEASURED[{key}] += (({n}, {n}),)"
    for name, ov, _, flip in list(out):
        if name in ("rows_cta, a row a CTA (grid M), unpipelined", "rows_cta, Quack's threads a row, a row a CTA, "
                    "unpipelined", "rows_cta, Quack's 128 threads of 128 values, a row a CTA, unpipelined, min 3 CTAs"):
            out.append((f"{name}, one barrier", ov + one_bar, None, f"{flip}; {flip_bar}"))
    # Quack's 16-byte copies (8 bfloat16 a vector, half the loads and stores; rows_common.WIDE_BF16: the same
    # registers, ptxas) on the CTA a row
    wide = [(rows_common, "WIDE_BF16", True)]
    flip_wide = f"rows_common.WIDE_BF16_MEASURED[{key}] = (({n}, {n}),)"
    for name, ov, _, flip in list(out):
        if name in ("rows_cta, a row a CTA (grid M), unpipelined, one barrier", "rows_cta, Quack's threads a row, a row "
                    "a CTA, unpipelined", "rows_cta, Quack's 128 threads of 128 values, a row a CTA, unpipelined, min 3 "
                    "CTAs"):
            out.append((f"{name}, 16-byte vectors", ov + wide, None, f"{flip}; {flip_wide}"))
    # the dispatch's persistent grid of 2048 threads' worth a multiprocessor (16 CTAs of 128 at 4096) where fewer
    # are resident (softmax 4096: 75 registers, 6): waves of CTAs each looping over ~31 rows, the last wave part
    # full; a grid of the resident CTAs is one wave (the loop and its pipelining kept)
    from bulkred_dialect import row_kernels

    k = row_kernels.kernel_for(kind, None, n, "bfloat16", **q16_kw(kind))
    used = ptxas_info(k).split(" / ")[0]
    if used.isdigit():
        wave = resident_ctas(used, k.signature.launch.block[0])
        out.append((f"rows_cta, one wave (a grid of the {wave} resident CTAs a multiprocessor), pipelined",
                    [(rows_cta, "CTAS_PER_SM", wave)], None,
                    f"rows_cta.CTAS_PER_SM_MEASURED[{key}] += (({n}, {n}, {wave}),)"))
    soft = kind == "softmax"
    size = 2 * n
    regs = rows_bulk.Setting(size, 128 if n == 4096 else 256, None, False, 1, registers=True, fast_exp=soft, words=True)
    passes = rows_bulk.Setting(size, 256 if n == 4096 else 512, None, False, 1, fast_exp=soft, fold_sum=soft,
                               words=True, one_pass="local" if kind == "layer_norm" else None)
    bulks = [("bulk, a CTA a row, registers", regs), ("bulk, a CTA a row, passes over shared memory", passes),
             # (half the threads: 24 to 40 registers, the shared memory's rows in flight: 8 KiB rows 16 CTAs of 128
             # a multiprocessor, 32 KiB rows 7 of 256 where the dispatch's registers hold 1 to 2 rows)
             ("bulk, a CTA a row, passes over shared memory", replace(passes, block=passes.block // 2)),
             # (ptxas unrolls the passes: 44 to 86 registers at half the threads; .minnctapersm holds the rows that
             # the shared memory can: 10 of 8 KiB, 4 of 32 KiB (7 fit, their registers too few))
             ("bulk, a CTA a row, passes over shared memory, min {} CTAs".format(10 if n == 4096 else 4),
              replace(passes, block=passes.block // 2, min_ctas=10 if n == 4096 else 4))]
    if n == 16384:  # (100 to 168 registers at 256 threads: 2 CTAs or 1; 3 hold Quack's rows in flight)
        bulks.append(("bulk, a CTA a row, registers, min 3 CTAs", replace(regs, min_ctas=3)))
    for name, st in bulks:
        out.append((f"{name} ({st.block} threads)", [], st,
                    f"rows_bulk.CHOSEN gains (BF16.name, (\"{kind}\",), {n}, {n}, {st!r}) above its rows"))
    return out


@contextlib.contextmanager
def q16_overridden(overrides: list, setting, kind: str, n: int):
    """:func:`overridden` for ``kind``: each ``(module, attribute, value)`` set, rows_bulk.CHOSEN
    with ``setting`` first for ``kind`` bfloat16 at N = ``n`` (where not None), row_kernels'
    kernels forgotten; then all restored."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.passes.variants import rows_bulk

    saved = [(m, a, getattr(m, a)) for m, a, _ in overrides]
    chosen = list(rows_bulk.CHOSEN)
    try:
        for m, a, v in overrides:
            setattr(m, a, v)
        if setting is not None:
            rows_bulk.CHOSEN[:] = [("bfloat16", (kind,), n, n, setting)] + chosen
        row_kernels._KERNELS.clear()
        yield
    finally:
        for m, a, v in saved:
            setattr(m, a, v)
        rows_bulk.CHOSEN[:] = chosen
        row_kernels._KERNELS.clear()


def q16_regs(k) -> str:
    """ptxas's ``R / S`` (:func:`ptxas_info`) and the CTAs a multiprocessor holds by those
    registers (:func:`resident_ctas`; rows_bulk's shared memory may hold fewer): the rows in
    flight of a CTA a row."""
    info = ptxas_info(k)
    used = info.split(" / ")[0]
    return f"{info}, {resident_ctas(used, k.signature.launch.block[0])} a SM" if used.isdigit() else info


def q16_kw(kind: str) -> dict:
    """row_kernels.kernel_for's keywords of ``kind`` bfloat16 (the weight and bias of a norm)."""
    if kind == "rms_norm":
        return {"weight": "bfloat16", "eps": EPS}
    if kind == "layer_norm":
        return {"weight": "bfloat16", "bias": "bfloat16", "eps": EPS}
    return {}


def quack16(args) -> int:
    """``--set quack16`` (issue 30, section 4): softmax, rms_norm and layer_norm bfloat16 at
    N = 4096 and 16384 (:data:`Q16_CELLS`, or ``--kinds`` / ``--n``), M x N = 2^28, each
    setting of :func:`q16_candidates` against the dispatch on the same tensors, timed in turns
    with the copy kernel ``--rounds`` times (the median; spread: (max - min) / median);
    each output checked first on the GPU against float64 (64 rows; ``err``: the largest
    error over the largest |y|; ``ok``: within tests/test_rows.check's bfloat16 bound and at
    most twice the dispatch's) and for batch invariance (rows 3 to 7 alone give y's bits,
    ``inv``); then per cell the fastest sound setting and what to flip (1% or more over the
    dispatch). ``--dry-run``: build and assemble each kernel for sm_90a (no GPU)."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.backend_ptx.assemble import ptxas_accepts
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose

    t0 = time.time()
    kinds = args.kinds.split(",") if args.kinds else None
    ns = [int(v) for v in args.n.split(",")] if args.n else None
    cells = [(k, n) for k, n in Q16_CELLS if (kinds is None or k in kinds) and (ns is None or n in ns)]
    torch = None
    if not args.dry_run:
        import torch
    print("| op | dtype | N | copy GB/s | setting | GB/s | /copy | regs / spill, CTAs | threads x cluster | err | "
          "inv, ok |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- | ---: | --- |")
    failed = 0
    verdicts: list[str] = []

    def variant_of(kind: str, n: int, kw: dict) -> str:
        op = next(o for o in row_kernels.module(kind, None, n, "bfloat16", **kw).walk()
                  if o.name == "bulkred.normalize_rows")
        return choose(op, Target.parse("sm_90a")).name

    for kind, n in cells:
        if time.time() - t0 > args.budget_s:
            print(f"| {kind} | bfloat16 | {n} | skipped: budget |")
            verdicts.append(f"- {kind} bfloat16 {n}: not measured (budget)")
            continue
        kw = q16_kw(kind)
        cands = q16_candidates(kind, n)
        if args.dry_run:
            for name, ov, st, _ in cands:
                with q16_overridden(ov, st, kind, n):
                    try:
                        k = row_kernels.kernel_for(kind, None, n, "bfloat16",
                                                   variant=None if st is None else "rows_bulk", **kw)
                        v = variant_of(kind, n, kw)
                    except Exception as e:  # noqa: BLE001 - the row says why
                        failed += 1
                        print(f"| {kind} | bfloat16 | {n} | | {name} | FAILED: {type(e).__name__}: "
                              f"{str(e).splitlines()[0][:160]} |")
                        continue
                    ok, log = ptxas_accepts(k.module.ptx, "sm_90a")
                    failed += not ok
                    launch = k.signature.launch
                    print(f"| {kind} | bfloat16 | {n} | | {name} ({v if st is None else 'rows_bulk'}) | "
                          f"{'ok' if ok else 'FAILED ' + log.splitlines()[0]} | | {q16_regs(k)} | "
                          f"{launch.block[0]} x {launch.cluster[0]} |", flush=True)
            continue
        _, x, y, w, bvec = cell_tensors(torch, n, "bfloat16")
        extra = [w] if kind == "rms_norm" else [w, bvec] if kind == "layer_norm" else []
        rows = 64
        xd = x[:rows].double()
        if kind == "softmax":
            ref = torch.softmax(xd, -1)
        elif kind == "rms_norm":
            ref = torch.nn.functional.rms_norm(xd, (n,), w.double(), EPS)
        else:
            ref = torch.nn.functional.layer_norm(xd, (n,), w.double(), bvec.double(), EPS)
        y5 = torch.empty_like(x[:5])
        runs, judged = [], []  # judged: (name, err, sound, flip)
        base_err = None
        for name, ov, st, flip in cands:
            with q16_overridden(ov, st, kind, n):
                try:
                    k = row_kernels.kernel_for(kind, None, n, "bfloat16",
                                               variant=None if st is None else "rows_bulk", **kw)
                    if st is None and not ov:
                        name = f"{name}: {variant_of(kind, n, kw)}"
                    call = lambda k=k: k(x, y, *extra)  # noqa: E731
                    y.fill_(float("nan"))
                    y5.fill_(float("nan"))
                    call()
                    k(x[3:8], y5, *extra)
                    torch.cuda.synchronize()
                    err = ((y[:rows].double() - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item()
                    inv = torch.equal(y5.view(torch.uint8), y[3:8].view(torch.uint8))
                    if base_err is None:
                        base_err = err
                    sound = inv and err <= LSM_TOL and err <= 2 * max(base_err, 1e-7)
                    launch = k.signature.launch
                    runs.append((name, call, q16_regs(k), f"{launch.block[0]} x {launch.cluster[0]}", err,
                                 f"{'yes' if inv else 'NO'}, {'ok' if sound else 'NOT OK'}"))
                    judged.append((name, err, sound, flip))
                except Exception as e:  # noqa: BLE001 - the row says why
                    failed += 1
                    print_failed(kind, "bfloat16", n, name, e)
        ratios = rounds_timed(torch, kind, "bfloat16", n, x, y, runs, args.rounds)
        if len(ratios) == len(judged) and judged and judged[0][0].startswith("dispatch"):
            best = max(((r, j) for r, j in zip(ratios[1:], judged[1:]) if j[2]), default=None, key=lambda t: t[0])
            top = max(ratios[0], best[0] if best else 0.0)
            goal = f" [issue 30's 0.97: {'reached' if top >= 0.97 else 'not reached'}; Quack {Q16_QUACK[(kind, n)]}]"
            if best is None or best[0] < 1.01 * ratios[0]:
                verdicts.append(f"- {kind} bfloat16 {n}: keep the dispatch ({ratios[0]:.3f} of copy){goal}")
            else:
                verdicts.append(f"- {kind} bfloat16 {n}: {best[1][0]}, {best[0]:.3f} of copy against {ratios[0]:.3f}"
                                f"{goal}: {best[1][3]}")
        else:
            verdicts.append(f"- {kind} bfloat16 {n}: no verdict (the dispatch failed)")
        del x, y, y5, xd, ref, runs
        torch.cuda.empty_cache()
    if verdicts:
        print("\nquack16 verdict (the fastest sound setting of each cell, 1% or more over the dispatch; each stays off "
              "until then; float16 follows bfloat16's entries):")
        for line in verdicts:
            print(line)
    print(f"probe time: {time.time() - t0:.0f} s")
    return 1 if failed else 0


Q32_CELLS = [("log_softmax", "bfloat16", 16384), ("log_softmax", "bfloat16", 4096), ("softmax", "bfloat16", 1024),
             ("layer_norm", "float32", 16384), ("add_rms_norm", "float32", 4096), ("softmax", "float32", 16384),
             ("log_softmax", "float32", 16384), ("add_rms_norm", "bfloat16", 4096), ("cross_entropy", "bfloat16", 4096),
             ("rms_norm", "float32", 16384), ("add_rms_norm", "float32", 16384), ("add_rms_norm", "bfloat16", 16384),
             ("add_rms_norm", "bfloat16", 1024), ("layer_norm", "bfloat16", 1024), ("softmax", "float32", 1024),
             ("log_softmax", "float32", 1024), ("rms_norm", "float32", 1024), ("add_rms_norm", "float32", 1024),
             ("log_softmax", "bfloat16", 1024), ("rms_norm", "bfloat16", 1024), ("cross_entropy", "bfloat16", 16384),
             ("layer_norm", "float32", 1024), ("softmax", "float32", 4096), ("log_softmax", "float32", 4096),
             ("rms_norm", "float32", 4096), ("layer_norm", "float32", 4096), ("cross_entropy", "bfloat16", 1024)]
"""--set quack32's cells (M x N = 2^28): the forward cells at N <= 16384 below 0.97 of copy that --set
quack16 left out (docs/benchmarks.md, the seventh session's forward table), the furthest from the copy
first (past the budget, the last are left out: float32 4096, at 0.98 there)."""
Q32_GRID_M = 1 << 20
"""rows_cta / rows_warp CTAS_PER_SM past any M: a CTA (rows_warp: a CTA of warps) a row, no loop."""


def q32_today_pipelined(kind: str, dtype: str, n: int) -> bool:
    """rows_common.FORWARD_MEASURED's value for the cell today (its (kind, type) ranges first)."""
    from bulkred_dialect.passes.variants import rows_common

    t = rows_common.FORWARD_MEASURED
    return next((p for lo, hi, p in t.get((kind, dtype), ()) + t.get(dtype, ()) if lo <= n <= hi), False)


def q32_candidates(kind: str, dtype: str, n: int, today: str) -> list[tuple[str, list, object, str | None, str]]:
    """--set quack32's settings of ``kind`` ``dtype`` at N = ``n`` (``today``: the dispatch's variant):
    (name, module overrides ``[(module, attribute, value)]``, the rows_bulk.Setting forced for the cell
    or None, the variant forced or None, what to flip where it wins), at most 9: quack16's families
    (:func:`q16_candidates`) that apply to the cell.

    N >= 4096: rows_cta a row a CTA (a grid of M CTAs, unpipelined, one barrier a reduction; bfloat16
    also in 16-byte vectors), Quack's threads a row (4096: 64 threads of 64 values; 16384: 128 threads of
    128 values, .minnctapersm 3), the threads of 16 values (4096: 256) or 64 (16384: 256); rows_bulk a CTA
    a row with passes over shared memory (the row's bytes a slice, one buffer; words, fast exp, softmax's
    fold, layer_norm's local pass) at two CTA sizes, and at the smaller with the .minnctapersm that the
    shared memory holds (at most 56 registers a thread). N = 1024: rows_warp's grid of M / 8 CTAs (a warp
    a row, no loop; also 128-thread CTAs: Quack's 4 rows a CTA), bfloat16's 16-byte vectors; rows_cta a row
    a CTA of 128 or 64 threads (grid M, unpipelined, one barrier; persistent), rows_bulk a CTA a row of 128.
    A flip that no table holds today says NEEDS A NEW SETTING (bulkred_dialect/ is the lead's)."""
    from bulkred_dialect.passes.variants import rows_bulk, rows_common, rows_cta, rows_warp

    dt = "F32" if dtype == "float32" else "BF16"
    key = f"(\"{kind}\", {dt}.name)"
    bf16 = dtype == "bfloat16"
    out: list[tuple[str, list, object, str | None, str]] = [("dispatch", [], None, None, "")]
    grid = [(rows_cta, "CTAS_PER_SM", Q32_GRID_M)]
    unpiped = [(rows_common, "FORWARD_PIPELINE", False)]
    one_bar = [(rows_common, "CTA_ONE_BARRIER", True)]
    wide = [(rows_common, "WIDE_BF16", True)]
    f_grid = f"rows_cta.CTAS_PER_SM_MEASURED[{key}] += (({n}, {n}, {Q32_GRID_M}),)"
    f_unpiped = (f"rows_common.FORWARD_MEASURED[{key}] += (({n}, {n}, False),)"
                 if q32_today_pipelined(kind, dtype, n) else "")  # (float32 past 1024: unpipelined today)
    f_bar = f"rows_common.CTA_ONE_BARRIER_MEASURED[{key}] += (({n}, {n}),)"
    f_wide = f"rows_common.WIDE_BF16_MEASURED[{key}] += (({n}, {n}),)"
    if today == "rows_cta":
        f_cta = ""
    elif today == "rows_bulk":
        f_cta = f"rows_bulk.CHOSEN: its row holding ({dt}.name, \"{kind}\", {n}) no longer takes the cell (rows_cta then)"
    else:
        f_cta = (f"NEEDS A NEW SETTING: no table makes the dispatch take rows_cta over {today} at N = {n} "
                 f"(rows_warp's priority 30, rows_cta's 20)")
    forced = None if today == "rows_cta" else "rows_cta"

    def flips(*parts: str) -> str:
        return "; ".join(p for p in parts if p)

    def cta(name: str, ov: list, *fl: str, vec16: bool = False) -> None:
        if vec16:
            out.append((f"{name}, 16-byte vectors", ov + wide, None, forced, flips(f_cta, *fl, f_wide)))
        else:
            out.append((name, ov, None, forced, flips(f_cta, *fl)))

    def values(v: int) -> tuple[list, str]:
        return [(rows_cta, "VALUES", v)], f"rows_cta.VALUES_MEASURED[{key}] gains ({n}, {n}, {v}) first"

    def min_ctas(c: int) -> tuple[list, str]:
        return [(rows_cta, "MIN_CTAS", c)], f"rows_cta.MIN_CTAS_MEASURED[{key}] gains ({n}, {n}, {c}) first"

    def min_block(b: int) -> tuple[list, str]:
        return [(rows_cta, "MIN_BLOCK", b)], f"rows_cta.MIN_BLOCK_MEASURED[{key}] = (({n}, {n}, {b}),)"

    base = grid + unpiped + one_bar
    f_base = (f_grid, f_unpiped, f_bar)
    if n >= 4096:
        cta("rows_cta, a row a CTA (grid M), unpipelined, one barrier", base, *f_base)
        if bf16:
            cta("rows_cta, a row a CTA (grid M), unpipelined, one barrier", base, *f_base, vec16=True)
        if n == 4096:
            (vo, vf), (bo, bf) = values(64), min_block(64)
            cta("rows_cta, Quack's 64 threads of 64 values, a row a CTA, unpipelined, one barrier", bo + vo + base,
                bf, vf, *f_base)
            vo, vf = values(16)
            cta("rows_cta, 256 threads of 16 values, a row a CTA, unpipelined, one barrier", vo + base, vf, *f_base)
        else:
            (vo, vf), (mo, mf) = values(128), min_ctas(3)
            cta("rows_cta, Quack's 128 threads of 128 values, a row a CTA, unpipelined, min 3 CTAs, one barrier",
                vo + mo + base, vf, mf, *f_base)
            vo, vf = values(64)
            cta("rows_cta, 256 threads of 64 values, a row a CTA, unpipelined, one barrier", vo + base, vf, *f_base)
            if kind not in ("softmax", "layer_norm"):  # (512 threads of 77 to 96 registers: one CTA a SM; softmax
                # float32 60 registers holds 2, layer_norm float32 has MIN_CTAS_MEASURED's 2; ptxas)
                mo, mf = min_ctas(2)
                cta("rows_cta, a row a CTA (grid M), unpipelined, one barrier, min 2 CTAs", mo + base, mf, *f_base)
    else:  # 1024: rows_warp (the dispatch), a warp a row
        f_wgrid = ("NEEDS A NEW SETTING: rows_warp.CTAS_PER_SM has no per-cell table (rows_warp.CTAS_PER_SM_MEASURED "
                   f"{key}: (({n}, {n}, {Q32_GRID_M}),) would be new)")
        wgrid = [(rows_warp, "CTAS_PER_SM", Q32_GRID_M)] + unpiped
        if bf16:
            out.append(("rows_warp, 16-byte vectors", wide, None, None, f_wide))
        out.append(("rows_warp, a warp a row, grid M / 8 (no loop), unpipelined", wgrid, None, None,
                    flips(f_wgrid, f_unpiped)))
        out.append(("rows_warp, a warp a row, CTAs of 128 (Quack's 4 rows a CTA), grid M / 4, unpipelined",
                    wgrid + [(rows_warp, "BLOCK", 128)], None, None,
                    flips(f_wgrid, "NEEDS A NEW SETTING: rows_warp.BLOCK has no per-cell table (128 here)", f_unpiped)))
        cta("rows_cta, 128 threads of 8 values, a row a CTA (grid M), unpipelined, one barrier", base, *f_base)
        bo, bf = min_block(64)
        cta("rows_cta, 64 threads of 16 values, a row a CTA (grid M), unpipelined, one barrier", bo + base, bf, *f_base)
        if bf16:
            cta("rows_cta, 64 threads of 16 values, a row a CTA (grid M), unpipelined, one barrier", bo + base, bf,
                *f_base, vec16=True)
        cta("rows_cta, 64 threads of 16 values, persistent (32 CTAs a SM), one barrier", bo + one_bar, bf, f_bar)
    # rows_bulk: the row in shared memory (cp.async.bulk), a CTA a row, passes over it
    exp = kind in ("softmax", "log_softmax", "cross_entropy")
    size = n * (2 if bf16 else 4)
    copied = 2 if kind == "add_rms_norm" else 1
    passes = rows_bulk.Setting(size, 128, None, False, 1, fast_exp=exp, fold_sum=kind == "softmax", words=bf16,
                               one_pass="local" if kind == "layer_norm" else None)
    small = 128 if n <= 4096 else 256
    # (quack16, bfloat16 16384: 512 threads slower than 256, 0.86 to 0.95 against 0.87 to 0.97)
    blocks = [small] if n == 1024 or (bf16 and n == 16384) else [small, 2 * small]
    if today == "rows_warp":
        f_bulk = (f"NEEDS A NEW SETTING: rows_bulk (priority 25) never beats rows_warp (30) at N = {n}; "
                  f"rows_bulk.CHOSEN gains ({dt}.name, (\"{kind}\",), {n}, {n}, {{}})")
    else:
        f_bulk = f"rows_bulk.CHOSEN gains ({dt}.name, (\"{kind}\",), {n}, {n}, {{}}) above its rows"
    for block in blocks:
        st = replace_setting(passes, block=block)
        out.append((f"bulk, a CTA a row, passes over shared memory ({block} threads)", [], st, "rows_bulk",
                    f_bulk.format(repr(st))))
    fit = min(227 * 1024 // (copied * size + 1024), 2048 // small, 65536 // (56 * small))
    if n > 1024 and fit >= 2:
        st = replace_setting(passes, block=small, min_ctas=fit)
        out.append((f"bulk, a CTA a row, passes over shared memory, min {fit} CTAs ({small} threads)", [], st,
                    "rows_bulk", f_bulk.format(repr(st))))
    return out


def replace_setting(st, **kw):
    """dataclasses.replace of a rows_bulk.Setting."""
    from dataclasses import replace

    return replace(st, **kw)


@contextlib.contextmanager
def q32_overridden(overrides: list, setting, kind: str, dtype: str, n: int):
    """:func:`q16_overridden` for ``dtype``: each ``(module, attribute, value)`` set, rows_bulk.CHOSEN
    with ``setting`` first for the cell (where not None), row_kernels' kernels forgotten; then all
    restored."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.passes.variants import rows_bulk

    saved = [(m, a, getattr(m, a)) for m, a, _ in overrides]
    chosen = list(rows_bulk.CHOSEN)
    try:
        for m, a, v in overrides:
            setattr(m, a, v)
        if setting is not None:
            rows_bulk.CHOSEN[:] = [(dtype, (kind,), n, n, setting)] + chosen
        row_kernels._KERNELS.clear()
        yield
    finally:
        for m, a, v in saved:
            setattr(m, a, v)
        rows_bulk.CHOSEN[:] = chosen
        row_kernels._KERNELS.clear()


def q32_kw(kind: str, dtype: str) -> dict:
    """row_kernels.kernel_for's keywords of ``kind`` in ``dtype`` (the weight and bias in the
    dtype, eps; cross_entropy's ignore_index): every probe's cells (rows_forward_norms imports it)."""
    if kind in ("rms_norm", "add_rms_norm"):
        return {"weight": dtype, "eps": EPS}
    if kind == "layer_norm":
        return {"weight": dtype, "bias": dtype, "eps": EPS}
    if kind == "cross_entropy":
        return {"ignore_index": -100}
    return {}


def q32_verdict(kind: str, dtype: str, n: int, judged: list[tuple], ratios: list[float]) -> str:
    """One cell's verdict line: ``judged`` (name, err, sound, flip) of the dispatch (first) and each
    setting, ``ratios`` their GB/s over the copy's: the fastest sound setting where 1% or more over the
    dispatch, with the table entries to set; else keep the dispatch."""
    if not judged or len(ratios) != len(judged) or not judged[0][0].startswith("dispatch"):
        return f"- {kind} {dtype} {n}: no verdict (the dispatch failed)"
    best = max(((r, j) for r, j in zip(ratios[1:], judged[1:]) if j[2]), default=None, key=lambda t: t[0])
    top = max(ratios[0], best[0] if best else 0.0)
    goal = f" [issue 30's 0.97: {'reached' if top >= 0.97 else 'not reached'}]"
    if best is None or best[0] < 1.01 * ratios[0]:
        return f"- {kind} {dtype} {n}: keep the dispatch ({judged[0][0]}, {ratios[0]:.3f} of copy){goal}"
    return (f"- {kind} {dtype} {n}: {best[1][0]}, {best[0]:.3f} of copy against {ratios[0]:.3f} "
            f"({judged[0][0]}){goal}: {best[1][3] or 'no table (the dispatch as it is)'}")


def quack32(args, cells_of: list | None = None, candidates_of=None, title: str = "quack32") -> int:
    """``--set quack32`` (issue 30, section 4): the forward cells at N <= 16384 below 0.97 of copy
    that --set quack16 left out (:data:`Q32_CELLS`, or ``--kinds`` / ``--n`` / ``--dtypes``), M x N =
    2^28, each setting of :func:`q32_candidates` against the dispatch on the same tensors, timed in turns
    with the copy kernel ``--rounds`` times (the median; spread: (max - min) / median); each output
    checked first on the GPU against float64 (64 rows; ``err``: the largest error over the largest |y|,
    cross_entropy's losses; add_rms_norm's residual_out too; ``ok``: within tests/test_rows.check's bound
    of the type (cross_entropy's losses: 1e-4), at most 4x the dispatch's) and for batch invariance (rows
    3 to 7 alone give the same bits, ``inv``); then per cell the fastest sound setting and the table
    entries to set (1% or more over the dispatch). ``--dry-run``: build and assemble each kernel for
    sm_90a (no GPU). ``cells_of`` / ``candidates_of`` / ``title``: another set's cells, its
    :func:`q32_candidates`-like settings and its verdict's name (--set quack64: :func:`quack64`)."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.backend_ptx.assemble import ptxas_accepts
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose

    t0 = time.time()
    kinds = args.kinds.split(",") if args.kinds else None
    ns = [int(v) for v in args.n.split(",")] if args.n else None
    dtypes = args.dtypes.split(",") if args.dtypes else None
    cells = [(k, d, n) for k, d, n in (Q32_CELLS if cells_of is None else cells_of)
             if (kinds is None or k in kinds) and (ns is None or n in ns) and (dtypes is None or d in dtypes)]
    torch = None
    if not args.dry_run:
        import torch
    gpu = DEVICE == "cuda"
    print("| op | dtype | N | copy GB/s | setting | GB/s | /copy | regs / spill, CTAs | threads x cluster | err | "
          "inv, ok |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- | ---: | --- |")
    failed = 0
    verdicts: list[str] = []
    cut = None

    def variant_of(kind: str, dtype: str, n: int, kw: dict) -> str:
        op = next(o for o in row_kernels.module(kind, None, n, dtype, **kw).walk() if o.name == "bulkred.normalize_rows")
        return choose(op, Target.parse("sm_90a")).name

    for ci, (kind, dtype, n) in enumerate(cells):
        if time.time() - t0 > args.budget_s:
            if cut is None:
                cut = ci
            print(f"| {kind} | {dtype} | {n} | skipped: budget |")
            verdicts.append(f"- {kind} {dtype} {n}: not measured (budget)")
            continue
        kw = q32_kw(kind, dtype)
        today = variant_of(kind, dtype, n, kw)
        cands = (q32_candidates if candidates_of is None else candidates_of)(kind, dtype, n, today)
        if args.dry_run:
            for name, ov, st, forced, _ in cands:
                with q32_overridden(ov, st, kind, dtype, n):
                    try:
                        k = row_kernels.kernel_for(kind, None, n, dtype, variant=forced, **kw)
                        v = forced or variant_of(kind, dtype, n, kw)
                    except Exception as e:  # noqa: BLE001 - the row says why
                        failed += 1
                        print(f"| {kind} | {dtype} | {n} | | {name} | FAILED: {type(e).__name__}: "
                              f"{str(e).splitlines()[0][:160]} |", flush=True)
                        continue
                    ok, log = ptxas_accepts(k.module.ptx, "sm_90a")
                    failed += not ok
                    launch = k.signature.launch
                    print(f"| {kind} | {dtype} | {n} | | {name} ({v}) | {'ok' if ok else 'FAILED ' + log.splitlines()[0]} "
                          f"| | {q16_regs(k)} | {launch.block[0]} x {launch.cluster[0]} |", flush=True)
            continue
        m, x, y, w, bvec = cell_tensors(torch, n, dtype, DEVICE)
        rows = 64
        outs, outs5, tensors = [y], [torch.empty_like(x[:5])], 2
        xd = x[:rows].double()
        if kind == "softmax":
            extra, extra5, refs = [], [], [torch.softmax(xd, -1)]
        elif kind == "log_softmax":
            extra, extra5, refs = [], [], [torch.log_softmax(xd, -1)]
        elif kind == "rms_norm":
            extra, extra5, refs = [w], [w], [torch.nn.functional.rms_norm(xd, (n,), w.double(), EPS)]
        elif kind == "layer_norm":
            extra, extra5 = [w, bvec], [w, bvec]
            refs = [torch.nn.functional.layer_norm(xd, (n,), w.double(), bvec.double(), EPS)]
        elif kind == "add_rms_norm":
            res = torch.randn(m, n, device=DEVICE, dtype=torch.float32).to(x.dtype)
            hout = torch.empty_like(x)
            outs, outs5, tensors = [y, hout], outs5 + [torch.empty_like(x[:5])], 4
            extra, extra5 = [res, hout, w], [res[3:8], outs5[1], w]
            h = (x[:rows] + res[:rows]).double()  # (residual_out: x + residual in the type, as torch's)
            refs = [torch.nn.functional.rms_norm(h, (n,), w.double(), EPS), h]
        else:
            target = torch.randint(0, n, (m,), device=DEVICE)
            loss = torch.empty(m, device=DEVICE)
            outs, outs5, tensors = [loss], [torch.empty(5, device=DEVICE)], 1
            extra, extra5 = [], []
            refs = [torch.nn.functional.cross_entropy(xd, target[:rows], reduction="none")]
        tol = 1e-4 if kind == "cross_entropy" else 1.6e-2 if dtype == "bfloat16" else \
            4e-6 if kind == "log_softmax" else 2e-6
        runs, judged = [], []  # judged: (name, err, sound, flip)
        base_err = None
        for name, ov, st, forced, flip in cands:
            with q32_overridden(ov, st, kind, dtype, n):
                try:
                    k = row_kernels.kernel_for(kind, None, n, dtype, variant=forced, **kw)
                    if name == "dispatch":
                        name = f"dispatch: {today}"
                    if kind == "cross_entropy":
                        call = lambda k=k: k(x, target, loss)  # noqa: E731
                        call5 = lambda k=k: k(x[3:8], target[3:8], outs5[0])  # noqa: E731
                    else:
                        call = lambda k=k: k(x, y, *extra)  # noqa: E731
                        call5 = lambda k=k: k(x[3:8], outs5[0], *extra5)  # noqa: E731
                    for o in outs + outs5:
                        o.fill_(float("nan"))
                    call()
                    call5()
                    if gpu:
                        torch.cuda.synchronize()
                    err = 0.0
                    ok = True
                    for o, ref in zip(outs, refs):
                        diff = (o[:rows].double() - ref).abs().max().item()
                        scale = ref.abs().max().item()
                        err = max(err, diff / max(scale, 1e-30))
                        ok = ok and diff <= tol * max(1.0, scale)  # (NaN: not ok)
                    inv = all(torch.equal(a.view(torch.uint8), b[3:8].view(torch.uint8)) for a, b in zip(outs5, outs))
                    if base_err is None:
                        base_err = err
                    sound = inv and ok and err <= 4 * max(base_err, 1e-6)
                    launch = k.signature.launch
                    runs.append((name, call, q16_regs(k) if gpu else "-", f"{launch.block[0]} x {launch.cluster[0]}",
                                 err, f"{'yes' if inv else 'NO'}, {'ok' if sound else 'NOT OK'}"))
                    judged.append((name, err, sound, flip))
                except Exception as e:  # noqa: BLE001 - the row says why
                    failed += 1
                    print_failed(kind, dtype, n, name, e)
        ratios = rounds_timed(torch, kind, dtype, n, x, y, runs, args.rounds, tensors)
        verdicts.append(q32_verdict(kind, dtype, n, judged, ratios))
        del x, y, xd, refs, runs, outs, outs5, extra, extra5
        if gpu:
            torch.cuda.empty_cache()
    if cut is not None:
        print(f"\nthe budget ({args.budget_s:g} s) cut the run at cell {cut + 1} of {len(cells)}: "
              f"{' '.join(map(str, cells[cut]))} and the {len(cells) - cut - 1} after it not measured")
    if verdicts:
        print(f"\n{title} verdict (the fastest sound setting of each cell, 1% or more over the dispatch; each stays off "
              "until then; float16 follows bfloat16's entries):")
        for line in verdicts:
            print(line)
    print(f"probe time: {time.time() - t0:.0f} s")
    return 1 if failed else 0


Q64_CELLS = [("layer_norm", "bfloat16", 65536), ("add_rms_norm", "float32", 262144), ("rms_norm", "bfloat16", 65536),
             ("log_softmax", "float32", 262144), ("layer_norm", "float32", 262144), ("softmax", "bfloat16", 262144),
             ("softmax", "float32", 65536), ("softmax", "float32", 262144), ("rms_norm", "float32", 65536),
             ("layer_norm", "float32", 65536), ("layer_norm", "bfloat16", 262144), ("add_rms_norm", "bfloat16", 65536),
             ("rms_norm", "float32", 262144), ("log_softmax", "bfloat16", 262144), ("rms_norm", "bfloat16", 262144),
             ("softmax", "bfloat16", 65536), ("log_softmax", "float32", 65536), ("add_rms_norm", "bfloat16", 262144),
             ("add_rms_norm", "float32", 65536), ("cross_entropy", "bfloat16", 65536), ("log_softmax", "bfloat16", 65536)]
"""--set quack64's cells (M x N = 2^28): the forward cells at N = 65536 and 262144 below 0.97 of copy in the
benchmark of the eighth session (docs/rows_bench_h200_run8.md), the furthest from the copy first (layer_norm
bfloat16 65536 at 0.87 ... log_softmax bfloat16 65536 at 0.96; past the budget, the last are left out)."""


def q64_setting(st) -> str:
    """A rows_bulk.Setting as the CHOSEN row writes it: the five positional fields, then the keywords
    that differ from their defaults (``Setting(65536, 512, 2, False, 1, early_copy=True)``)."""
    from dataclasses import fields

    pos = ("slice_bytes", "block", "min_ctas", "persistent", "buffers")
    kw = [f"{f.name}={getattr(st, f.name)!r}" for f in fields(st)
          if f.name not in pos and getattr(st, f.name) != f.default]
    return f"Setting({', '.join([repr(getattr(st, p)) for p in pos] + kw)})"


def q64_candidates(kind: str, dtype: str, n: int, today: str) -> list[tuple[str, list, object, str | None, str]]:
    """--set quack64's settings of ``kind`` ``dtype`` at N = ``n`` (``today``: the dispatch's variant), in
    :func:`q32_candidates`' form: quack32's finding at N <= 16384 (a unit a row in a grid of M units, the
    hardware refilling the multiprocessors as units finish, against persistent grids whose units loop over
    rows) tried on the long rows, where the dispatch takes rows_bulk's persistent grids of clusters
    (``max_units``), rows_cluster or rows_stream.

    Where the dispatch takes a persistent rows_bulk grid: its setting as it is with a unit a row instead
    (one slice buffer; without ``max_units`` and ``affine_registers``, which need the persistent grid).
    Then each is rows_bulk with ``persistent=False`` (a cluster of C CTAs a row, a grid of M clusters), one slice
    buffer, forced for the cell (a rows_bulk.CHOSEN row first): at the two largest slices that fit (at most
    64 KiB, float32 262144 also 128 KiB: 8 CTAs a row of 1 MiB against 16; add_rms_norm copies x's and the
    residual's slices, both in shared memory), 256 and 512 threads, ``.minnctapersm`` the CTAs that the
    shared memory, the threads and 56 registers a thread allow; the kind's per-element settings that won
    elsewhere (``fast_exp``; softmax's ``fold_sum``; log_softmax's ``online``; layer_norm's ``one_pass
    "local"``; bfloat16's ``words``) with ``early_copy`` (the first row's copy before the cluster barrier:
    with a unit a row, every row's); then at the first slice and 512 threads: without ``early_copy``,
    without the per-element settings; with ``registers`` (the slice read once into registers; not
    add_rms_norm), at the first slice of at most 32 values a thread (64 spill at .minnctapersm 2); with
    ``weight_shared`` (the norms: the weight's and bias's slices copied with the row's). Where the
    dispatch takes rows_cluster: its grid of a cluster a row (rows_cluster.CTAS_PER_SM past any M; no
    per-cell table holds it). A winner maps to a rows_bulk.CHOSEN row (:func:`q64_setting`) above the
    cell's rows (rows_bulk's priority 25 takes the cell from rows_cluster and rows_stream too).
    cross_entropy's row carries a warning: the probe times the losses, the benchmark the mean, whose
    in-kernel tail sums a partial a unit (quack32's grid of M CTAs: 0.36 of copy)."""
    from bulkred_dialect.passes.variants import rows_bulk, rows_cluster

    dt = "F32" if dtype == "float32" else "BF16"
    bf16 = dtype == "bfloat16"
    row = n * (2 if bf16 else 4)
    copied = 2 if kind == "add_rms_norm" else 1
    out: list[tuple[str, list, object, str | None, str]] = [("dispatch", [], None, None, "")]
    tail = (" (WARNING: the probe times the losses; time the mean, benchmarks/rows.py, before taking it: its "
            "in-kernel tail sums a partial a unit)" if kind == "cross_entropy" else "")
    slices = [s for s in ((131072,) if row == 1 << 20 else ()) + (65536, 32768, 16384)
              if row // s <= rows_bulk.MAX_CLUSTER and copied * s + 1024 <= rows_bulk.SHARED_PER_SM][:2]
    flags: dict = {"early_copy": True}
    if kind in ("softmax", "log_softmax", "cross_entropy"):
        flags["fast_exp"] = True
    if kind == "softmax":
        flags["fold_sum"] = True
    if kind == "log_softmax":
        flags["online"] = True
    if kind == "layer_norm":
        flags["one_pass"] = "local"
    if bf16:
        flags["words"] = True

    def fit(s: int, block: int) -> int | None:
        m = min(rows_bulk.SHARED_PER_SM // (copied * s + 1024), 2048 // block, 65536 // (56 * block))
        return m if m >= 2 else None

    def add(name: str, st) -> None:
        out.append((f"bulk, a cluster of {row // st.slice_bytes} a row (grid M), {st.slice_bytes // 1024} KiB, "
                    f"{st.block} threads, min {st.min_ctas}{name}", [], st, "rows_bulk",
                    f"rows_bulk.CHOSEN gains ({dt}.name, (\"{kind}\",), {n}, {n}, {q64_setting(st)}) above its rows"
                    + tail))

    if today == "rows_bulk":  # (today's setting as it is, its grid the only change: a unit a row)
        from bulkred_dialect import row_kernels

        op = next(o for o in row_kernels.module(kind, None, n, dtype, **q32_kw(kind, dtype)).walk()
                  if o.name == "bulkred.normalize_rows")
        st0 = rows_bulk.setting_for(op)
        if st0 is not None and st0.persistent is not False:
            add(", today's setting but a unit a row (without max_units and affine_registers)",
                replace_setting(st0, persistent=False, buffers=1, max_units=None, affine_registers=False))
    named = ", " + ", ".join(k if v is True else f"{k} {v}" for k, v in flags.items())
    for s in slices:
        for block in (256, 512):
            add(named, rows_bulk.Setting(s, block, fit(s, block), False, 1, **flags))
    s0 = slices[0]
    first = rows_bulk.Setting(s0, 512, fit(s0, 512), False, 1, **flags)
    if len(flags) > 1:
        add(named.replace(", early_copy", "") + " (no early copy)", replace_setting(first, early_copy=False))
    plain = rows_bulk.Setting(s0, 512, fit(s0, 512), False, 1, early_copy=True)
    add(", early_copy only" + (", words" if bf16 else ""), replace_setting(plain, words=bf16))
    held = [s for s in slices if s // (512 * (2 if bf16 else 4)) <= 32]  # (64 values a thread at min 2: spills)
    if kind != "add_rms_norm" and held:
        add(", registers" + named.replace(", fold_sum", ""),
            rows_bulk.Setting(held[0], 512, fit(held[0], 512), False, 1, registers=True,
                              **{k: v for k, v in flags.items() if k != "fold_sum"}))
    if kind in ("rms_norm", "layer_norm", "add_rms_norm"):
        add(named + ", weight_shared", replace_setting(first, weight_shared=True))
    if today == "rows_cluster":
        key = f"(\"{kind}\", {dt}.name)"
        out.append(("rows_cluster, a cluster a row (grid M)", [(rows_cluster, "CTAS_PER_SM", Q32_GRID_M)], None, None,
                    f"NEEDS A NEW SETTING: rows_cluster.CTAS_PER_SM has no per-cell table (rows_cluster."
                    f"CTAS_PER_SM_MEASURED[{key}] = (({n}, {n}, {Q32_GRID_M}),) would be new)"))
    return out


def quack64(args) -> int:
    """``--set quack64`` (issue 30, section 4): the long rows' forward cells below 0.97 of copy
    (:data:`Q64_CELLS`, or ``--kinds`` / ``--n`` / ``--dtypes``), each setting of :func:`q64_candidates`
    (rows_bulk's a cluster a row in a grid of M clusters) against the dispatch on the same tensors, with
    :func:`quack32`'s checks (float64, batch invariance), timing (``--rounds`` in turns with the copy, the
    median) and verdict (:func:`q32_verdict`: the rows_bulk.CHOSEN row to add)."""
    return quack32(args, Q64_CELLS, q64_candidates, "quack64")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", default="all", choices=("long", "short", "all"))
    ap.add_argument("--budget-s", type=float, default=None, help="seconds (default 150; --set pipeline: 85)")
    ap.add_argument("--set", default="variants",
                    choices=("variants", "pipeline", "long", "passes", "fastexp", "affine", "logsoftmax", "quack16",
                             "quack32", "quack64"))
    ap.add_argument("--kinds", help="--set pipeline, long, passes, quack16, quack32, quack64: these kinds only (comma-separated)")
    ap.add_argument("--n", help="--set pipeline, long, passes, logsoftmax, quack16, quack32, quack64: these N only (comma-separated)")
    ap.add_argument("--dtypes", help="--set quack32, quack64: these element types only (comma-separated)")
    ap.add_argument("--dry-run", action="store_true",
                    help="--set passes, fastexp, affine, logsoftmax, quack16, quack32, quack64: build and assemble each kernel; no GPU")
    ap.add_argument("--rounds", type=int, default=5,
                    help="--set logsoftmax, quack16, quack32, quack64: the rounds of timing in turns (the median kept)")
    args = ap.parse_args()
    os.environ["BULKRED_CACHE"] = "0"  # each setting's kernels are its own
    if args.set == "passes":
        args.budget_s = 150.0 if args.budget_s is None else args.budget_s
        return passes(args)
    if args.set == "logsoftmax":
        args.budget_s = 130.0 if args.budget_s is None else args.budget_s
        return logsoftmax(args)
    if args.set == "quack16":
        args.budget_s = 130.0 if args.budget_s is None else args.budget_s
        return quack16(args)
    if args.set == "quack32":
        args.budget_s = 150.0 if args.budget_s is None else args.budget_s
        return quack32(args)
    if args.set == "quack64":
        args.budget_s = 150.0 if args.budget_s is None else args.budget_s
        return quack64(args)
    if args.set in ("fastexp", "affine"):
        args.budget_s = 150.0 if args.budget_s is None else args.budget_s
        if args.set == "fastexp":
            return passes(args, FASTEXP_CELLS, fastexp_settings)
        return passes(args, AFFINE_CELLS, affine_settings)
    if args.set == "pipeline":
        args.budget_s = 85.0 if args.budget_s is None else args.budget_s
        return pipeline(args)
    if args.set == "long":
        args.budget_s = 150.0 if args.budget_s is None else args.budget_s
        return long_rows(args)
    args.budget_s = 150.0 if args.budget_s is None else args.budget_s
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
        m, x, y, w, bvec = cell_tensors(torch, n, dtype, "cuda")
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
            with bulk_setting(consts, chosen if variant is None else wide, chosen):  # (a forced variant must apply)
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
                    print_failed(kind, dtype, n, name, e, f"{copy_gbs:,.0f}")
        del x, y, xd, ref
        torch.cuda.empty_cache()
    print(f"probe time: {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
