#!/usr/bin/env python3
"""cross_entropy's forward on the cells of issue 30, section 4 that miss the target (4.3 TB/s of
reads, about 1.0 of the copy kernel; docs/rows_bench_h200_run4.md), each setting against the
default on the same tensors (fresh random data), every kernel with its mean in the kernel
(``reduction="mean"``: what ``bulkred.cross_entropy`` runs eagerly, as benchmarks/rows.py
measures it):

* ``odd``: odd N (4097, the vocabulary 50257) in bfloat16, float16 and float32, read an
  element a load by default: ``ragged`` is rows_lower.RAGGED (vectors on element indices;
  rows_warp, rows_cta, rows_stream; rows_cluster's float32 50257 also forced to rows_stream);
  ``split`` is rows_lower.RAGGED_SPLIT (a branch a row offset, no funnel), ``step exps``
  rows_lower.STEP_EXPS (rows_stream's running (max, sum) rescaled once a loop step)
  (rows_cta's rows staged in shared memory by cp.async.bulk, measured slower in the sixth
  session, 0.40 to 0.60 of copy, were removed: docs/rows.md);
* ``odd16``: bfloat16 and float16 at N = 4097 (rows_cta, an element a load; 0.63 of copy):
  its row loop issues about 19 SASS instructions an element (320 a row for 17 elements a
  thread of 256; ptxas sm_90a), against 11 at 4096 (1.00 of copy): the row's reductions
  (the (max, sum) pairs' butterflies and two CTA exchanges, about 120 instructions a row)
  over too few elements a thread, not the 2-byte loads. The candidates: the maximum first
  (rows_common.EXP_MAX_FIRST, 14.5 an element), 128 threads of 33 values (rows_cta.VALUES
  64; with the maximum first 10.8), 64 threads of 65 (rows_cta.MIN_BLOCK_MEASURED 64, VALUES
  128: 8.9), a warp of 129 (MIN_BLOCK 32, VALUES 256: 7.6), their grids of the CTAs resident
  (rows_cta.CTAS_PER_SM), each pipelined (rows_common.FORWARD_PIPELINE_PARTIAL: by default a
  row with a partial last vector is not, its loads wait for the previous row's reductions),
  and RAGGED_SPLIT's 8-byte vectors on 128 threads;
* ``small``: M = 1, 8, 64 rows of 4096 (float32, bfloat16): GPU time per call (a CUDA graph of
  50 calls) of the loss rows alone (``reduction=None``), of the default mean and of
  rows_lower.LOSS_TAIL_SHORT (``short tail``), with ``bits``: the short tail's result equal
  to the default's bit for bit (it must);
* ``cells``: bfloat16 4096 and 16384 (rows_cta), float32 65536 (rows_cluster): the settings
  already in the tree (rows_cta.MIN_CTAS / VALUES, rows_common.FORWARD_PIPELINE / WIDE_BF16,
  rows_stream forced, its UNROLL, rows_cluster.CTAS_PER_SM) and LOSS_TAIL_SHORT;
* ``vocab``: the vocabulary 128256 in bfloat16 and float16 (rows_stream, aligned rows):
  rows_lower.STEP_EXPS, rows_common.FAST_EXP (FAST_EXP_MEASURED stops at 65536) and both,
  with rows_stream.MIN_CTAS 4 (a grid of 4 CTAs of 512 a multiprocessor resident at once),
  rows_stream.UNROLL 2 and 8, 16-byte bfloat16 loads (rows_common.WIDE_BF16).

Each is checked against torch (``err``: the largest error of the first rows' losses against
float64 over their largest magnitude, and of the kernel's mean against torch's float32
``F.cross_entropy`` of the whole batch; ``inv``: the first 37 rows called alone give the same
loss bits; ``pos``: rows 1 to 37 copied to a new tensor (each row's start moved within the
vector) give the same bits as in the batch). GB/s of x's bytes read, against the copy kernel
(``torch.mul(x, 1.0, out=y)``, x read and written) timed in turns with them (the median of two).

    PROBE_ARGS="--budget-s 120" bash tools/gpu.sh probe:rows_ce
    PROBE_ARGS="--set odd,vocab --budget-s 140" bash tools/gpu.sh probe:rows_ce   (--set: --parts)
    PROBE_ARGS="--set odd16 --budget-s 120" bash tools/gpu.sh probe:rows_ce
    python3 tools/diag.py rows_ce --parts odd,small --budget-s 120
    python3 tools/diag.py rows_ce --dry-run   # build and assemble (sm_90a) every kernel; no GPU
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SUB = 37
"""Rows of the batch-invariance calls."""
CHECK_ROWS = 256
"""Rows checked against float64."""
SMALL_N = 4096
SMALL_M = (1, 8, 64)
SMALL_CALLS = 50
PARTS = ("odd", "small", "cells", "vocab", "odd16")

RAGGED = {"rows_lower.RAGGED": True}
SPLIT = {**RAGGED, "rows_lower.RAGGED_SPLIT": True}
STEP = {"rows_lower.STEP_EXPS": True}
MIN4 = {"rows_stream.MIN_CTAS": 4}
FAST = {"rows_common.FAST_EXP": True}
SHORT = {"rows_lower.LOSS_TAIL_SHORT": True}
FIRST = {"rows_common.EXP_MAX_FIRST": True}
T128 = {"rows_cta.VALUES": 64}  # (4097 elements: 33 a thread of 128)
T64 = {"rows_cta.VALUES": 128, "rows_cta.MIN_BLOCK": 64}  # (65 a thread of 64; MIN_BLOCK_MEASURED's form)
T32 = {"rows_cta.VALUES": 256, "rows_cta.MIN_BLOCK": 32}  # (a warp a row: 129 a thread)
PIPE = {"rows_common.FORWARD_PIPELINE_PARTIAL": True, "rows_cta.MIN_CTAS_MEASURED": {}}  # (the next row's loads over the reductions)

# (part, dtype, N): in the order of the task (past the budget, the last are left out)
CELLS = [
    ("odd", "bfloat16", 4097), ("odd", "bfloat16", 50257), ("odd", "float16", 4097), ("odd", "float16", 50257),
    ("odd", "float32", 4097), ("odd", "float32", 50257),
    ("cells", "bfloat16", 4096), ("cells", "bfloat16", 16384), ("cells", "float32", 65536),
    ("vocab", "bfloat16", 128256), ("vocab", "float16", 128256),
    ("odd16", "bfloat16", 4097), ("odd16", "float16", 4097),
]


def settings_for(part: str, dtype: str, n: int, chosen: str) -> list[tuple[str, str | None, dict]]:
    """(name, the variant forced or None, the settings: ``module.NAME`` -> value) of a cell."""
    out: list[tuple[str, str | None, dict]] = [(f"dispatch: {chosen}", None, {})]
    if part == "odd16":  # (rows_cta; registers sm_90a, no spill: 128 threads 54 (9 CTAs resident), 64 88 (11), 32 155 (12);
        # pipelined, without the table's .minnctapersm 8 (its caps spill there): 256 64 (4), 128 96 (5), 64 165 (6), 32 240 (8))
        return out + [("max first", None, FIRST),
                      ("128 threads, max first", None, {**T128, **FIRST}),
                      ("128 threads, max first, grid 9 CTAs/SM", None, {**T128, **FIRST, "rows_cta.CTAS_PER_SM": 9}),
                      ("128 threads, max first, min 8 grid 8 CTAs/SM", None,
                       {**T128, **FIRST, "rows_cta.CTAS_PER_SM": 8, "rows_cta.MIN_CTAS": 8}),
                      ("64 threads, max first", None, {**T64, **FIRST}),
                      ("64 threads, max first, grid 11 CTAs/SM", None, {**T64, **FIRST, "rows_cta.CTAS_PER_SM": 11}),
                      ("32 threads, max first", None, {**T32, **FIRST}),
                      ("32 threads, max first, grid 12 CTAs/SM", None, {**T32, **FIRST, "rows_cta.CTAS_PER_SM": 12}),
                      ("pipelined, max first, grid 4 CTAs/SM", None, {**PIPE, **FIRST, "rows_cta.CTAS_PER_SM": 4}),
                      ("128 threads, pipelined, max first, grid 5 CTAs/SM", None,
                       {**T128, **PIPE, **FIRST, "rows_cta.CTAS_PER_SM": 5}),
                      ("64 threads, pipelined, max first, grid 6 CTAs/SM", None,
                       {**T64, **PIPE, **FIRST, "rows_cta.CTAS_PER_SM": 6}),
                      ("32 threads, pipelined, max first, grid 8 CTAs/SM", None,
                       {**T32, **PIPE, **FIRST, "rows_cta.CTAS_PER_SM": 8}),
                      ("32 threads, pipelined, max first", None, {**T32, **PIPE, **FIRST}),
                      ("128 threads, max first, ragged split", None, {**T128, **FIRST, **SPLIT})]
    if part == "odd":  # (RAGGED's earlier forms, short tail: measured 2026-11-29, docs/rows.md)
        if chosen == "rows_cta":  # (ragged: twice the registers; split: no funnel)
            # (a grid of 8 CTAs of 256 a multiprocessor; 36 registers hold 6, RAGGED's 68 three: the rest wait for a
            # wave of their own. "min 8": .minnctapersm 8, 32 registers or fewer, no spill (ptxas -v, sm_90a);
            # "grid 6": rows_cta.CTAS_PER_SM, the grid what is resident)
            out += [("rows_cta, min 8 CTAs/SM", None, {"rows_cta.MIN_CTAS": 8}),
                    ("rows_cta, grid 6 CTAs/SM", None, {"rows_cta.CTAS_PER_SM": 6}),
                    ("rows_cta ragged, min 8 CTAs/SM", None, {**RAGGED, "rows_cta.MIN_CTAS": 8}),
                    ("rows_cta ragged split", None, SPLIT),
                    ("rows_cta ragged split, min 8 CTAs/SM", None, {**SPLIT, "rows_cta.MIN_CTAS": 8}),
                    ("rows_cta ragged split, 16 values", None, {**SPLIT, "rows_cta.VALUES": 16})]
        else:  # (rows_stream, RAGGED by RAGGED_MEASURED; rows_cluster's: forced to rows_stream)
            # (a grid of 4 CTAs of 512 a multiprocessor; RAGGED's 46 registers hold 2: "min 4" is .minnctapersm 4,
            # 32 registers, no spill, ptxas -v sm_90a; "grid 2" rows_stream.CTAS_PER_SM)
            forced = None if chosen == "rows_stream" else "rows_stream"
            out += [("rows_stream ragged", forced, RAGGED)] if forced else []  # (else the dispatch's)
            out += [("rows_stream ragged, min 4 CTAs/SM", forced, {**RAGGED, **MIN4}),
                    ("rows_stream ragged, grid 2 CTAs/SM", forced, {**RAGGED, "rows_stream.CTAS_PER_SM": 2}),
                    ("rows_stream ragged split, min 4 CTAs/SM", forced, {**SPLIT, **MIN4}),
                    ("rows_stream ragged, step exps, min 4 CTAs/SM", forced, {**RAGGED, **STEP, **MIN4}),
                    ("rows_stream ragged split, step exps", forced, {**SPLIT, **STEP}),
                    ("rows_stream ragged split, step exps, min 4 CTAs/SM", forced, {**SPLIT, **STEP, **MIN4}),
                    ("rows_stream ragged split, step exps, unroll 2, min 4 CTAs/SM", forced,
                     {**SPLIT, **STEP, **MIN4, "rows_stream.UNROLL": 2})]
        return out
    if part == "vocab":  # (rows_stream: the exps a byte of bfloat16 are twice float32's)
        # (the default's 31 registers hold 4 CTAs of 512; step exps' 34 to 36 three: "min 4", as in odd)
        return out + [("step exps, min 4 CTAs/SM", None, {**STEP, **MIN4}), ("fast exp", None, FAST),
                      ("fast exp, step exps", None, {**FAST, **STEP}),
                      ("fast exp, step exps, min 4 CTAs/SM", None, {**FAST, **STEP, **MIN4}),
                      ("fast exp, step exps, unroll 2, min 4 CTAs/SM", None, {**FAST, **STEP, **MIN4, "rows_stream.UNROLL": 2}),
                      ("fast exp, step exps, 16-byte loads, unroll 2, min 4 CTAs/SM", None,  # (bfloat16: rows_common.WIDE_BF16)
                       {**FAST, **STEP, **MIN4, "rows_stream.UNROLL": 2, "rows_common.WIDE_BF16": True}),
                      ("fast exp, step exps, unroll 8, min 2 CTAs/SM", None,
                       {**FAST, **STEP, "rows_stream.UNROLL": 8, "rows_stream.MIN_CTAS": 2, "rows_stream.CTAS_PER_SM": 2})]
    if chosen == "rows_cta":
        from bulkred_dialect.passes.variants import rows_cta

        ctas = next((c for lo, hi, c in rows_cta.MIN_CTAS_MEASURED.get(("cross_entropy", dtype), ()) if lo <= n <= hi), None)
        fit = 2048 // build(dtype, n, None, {}).signature.launch.block[0]  # (the CTAs a multiprocessor's threads hold)
        for k in sorted({c for c in (2, 3, 4, fit) if 1 < c <= fit} - {ctas}):
            out.append((f"rows_cta, min {k} CTAs/SM", None, {"rows_cta.MIN_CTAS": k}))
        out += [("rows_cta, 16 values", None, {"rows_cta.VALUES": 16}),
                ("rows_cta, not pipelined", None, {"rows_common.FORWARD_PIPELINE": False})]
        if dtype == "bfloat16":
            out.append(("rows_cta, 16-byte loads", None, {"rows_common.WIDE_BF16": True}))
    if chosen == "rows_cluster":
        out += [("rows_cluster, 1 CTA/SM", None, {"rows_cluster.CTAS_PER_SM": 1}),
                ("rows_cluster, 2 CTAs/SM", None, {"rows_cluster.CTAS_PER_SM": 2})]
    out += [("rows_stream", "rows_stream", {}), ("rows_stream, unroll 8", "rows_stream", {"rows_stream.UNROLL": 8}),
            (f"dispatch: {chosen}, short tail", None, SHORT)]
    return out


def odd16_flips(consts: dict) -> list[str]:
    """The measured tables' entries that make ``consts`` (an odd16 setting) the dispatch's at
    N = 4097 (keyed ``("cross_entropy", BF16.name)``, or ``BF16.name``; float16 follows)."""
    key, cell = '("cross_entropy", BF16.name)', "(4097, 4097"
    out = []
    for name, v in consts.items():
        if name == "rows_common.EXP_MAX_FIRST":
            out.append(f"rows_common.EXP_MAX_FIRST_MEASURED[{key}] += {cell})")
        elif name == "rows_cta.VALUES":
            out.append(f"rows_cta.VALUES_MEASURED[{key}] += {cell}, {v})")
        elif name == "rows_cta.MIN_BLOCK":
            out.append(f"rows_cta.MIN_BLOCK_MEASURED[{key}] = ({cell}, {v}),)")
        elif name == "rows_cta.CTAS_PER_SM":
            out.append(f"rows_cta.CTAS_PER_SM_MEASURED[{key}] = ({cell}, {v}),)")
        elif name == "rows_cta.MIN_CTAS_MEASURED":
            out.append(f"rows_cta.MIN_CTAS_MEASURED[{key}] without {cell}, 8) (and float32's kept: its own key)")
        elif name == "rows_common.FORWARD_PIPELINE_PARTIAL":
            out.append(f"rows_common.FORWARD_PIPELINE_PARTIAL_MEASURED[BF16.name] = ({cell}),)")
        elif name == "rows_lower.RAGGED":
            out.append(f"rows_lower.RAGGED_MEASURED[BF16.name] += {cell}) (float16's too: not half_as_bfloat16)")
        elif name == "rows_lower.RAGGED_SPLIT":
            out.append(f"rows_lower.RAGGED_SPLIT_MEASURED[BF16.name] += {cell})")
        elif name == "rows_cta.MIN_CTAS":
            out.append(f"rows_cta.MIN_CTAS_MEASURED[{key}]'s {cell}, {v}) kept")
    return out


def odd16_verdict(dtype: str, n: int, runs: list, ratios: list[float], consts: dict) -> str:
    """One cell's verdict line (:func:`odd16_flips` of the fastest sound setting)."""
    if not runs or len(ratios) != len(runs) or not runs[0][0].startswith("dispatch"):
        return f"- {dtype} {n}: no verdict (the dispatch's run failed)"
    base_err, base = runs[0][4], ratios[0]
    sound = [(r, run[0]) for run, r in zip(runs[1:], ratios[1:]) if run[5] == "yes/yes" and run[4] <= 2 * max(base_err, 1e-7)]
    if not sound or max(sound)[0] < 1.01 * base:
        return f"- {dtype} {n}: keep the dispatch ({base:.3f} of copy)"
    best, name = max(sound)
    return f"- {dtype} {n}: {name} {base:.3f} -> {best:.3f} of copy: " + "; ".join(odd16_flips(consts[name]))


def small_settings() -> list[tuple[str, dict]]:
    """(name, settings) of the small batches (the dispatch's variant: rows_cta)."""
    return [("loss rows only", {"reduction": None}), ("mean", {}), ("mean, short tail", SHORT)]


_BUILT: dict = {}


def build(dtype: str, n: int, forced: str | None, consts: dict):
    """The compiled kernel of a setting, with its mean in the kernel unless ``consts`` says
    ``reduction`` (rows_forward_norms.build: the settings applied while it is built)."""
    from rows_forward_norms import build as build_norms

    consts = {"reduction": "mean", **consts}
    key = (dtype, n, forced, tuple(sorted((k, repr(v)) for k, v in consts.items())))
    if key not in _BUILT:
        _BUILT[key] = build_norms("cross_entropy", dtype, n, forced, consts)
    return _BUILT[key]


def chosen_variant(dtype: str, n: int) -> str:
    from rows_forward_norms import chosen_variant as chosen

    return chosen("cross_entropy", dtype, n)


def cells(args) -> list[tuple[str, str, int]]:
    return [c for c in CELLS if c[0] in args.parts]


def dry_run(args) -> int:
    """Build and assemble (sm_90a) every kernel the probe would time; no GPU."""
    from rows_forward import registers

    from bulkred_dialect.backend_ptx.assemble import ptxas_accepts

    failed = 0
    todo = [(part, dtype, n, name, forced, consts) for part, dtype, n in cells(args)
            for name, forced, consts in settings_for(part, dtype, n, chosen_variant(dtype, n))]
    if "small" in args.parts:
        todo += [("small", dtype, SMALL_N, name, None, consts) for dtype in ("float32", "bfloat16")
                 for name, consts in small_settings()]
    for part, dtype, n, name, forced, consts in todo:
        k = build(dtype, n, forced, consts)
        ok, log = ptxas_accepts(k.module.ptx, "sm_90a")
        failed += not ok
        launch = k.signature.launch
        sass = ""
        if part == "odd16":  # (the row loop's SASS over the elements a thread holds, as rows_forward_norms' words)
            from rows_forward_norms import sass_per_element

            from bulkred_dialect.backend_ptx.assemble import assemble
            from bulkred_dialect.backend_ptx.sass import disassemble, opcode_counts

            try:  # (spills: local stores)
                ops = opcode_counts(disassemble(assemble(k.module.ptx.encode(), "sm_90a")))
                spills = str(sum(c for o, c in ops.items() if o.startswith("STL")))
            except Exception:  # noqa: BLE001 - a diagnostic
                spills = "?"
            sass = f" | SASS/elem {sass_per_element(k, 'rows_cta', n)} | STL {spills}"
        print(f"{part} | {dtype} {n} | {name} | {'ok' if ok else 'FAILED ' + log.splitlines()[0]} | "
              f"regs {registers(k)} | threads {launch.block[0]} x {launch.cluster[0]}{sass}", flush=True)
    print(f"{len(todo)} kernels, {failed} failed")
    return 1 if failed else 0


def check(torch, k, x, target, loss, reduced, ref_rows, ref_mean) -> tuple[float, str]:
    """(err, 'inv/pos') of kernel ``k`` after its call on the whole batch (module docstring)."""
    dt = x.dtype
    err = ((loss[:CHECK_ROWS].double() - ref_rows).abs().max() / ref_rows.abs().max().clamp(min=1e-30)).item()
    if reduced is not None:
        err = max(err, abs(reduced.double().item() - ref_mean) / max(abs(ref_mean), 1e-30))
    sub = min(SUB, x.shape[0] // 2)
    flags = []
    for first in (0, 1):  # the first rows alone (M); rows 1.. at new positions (their start within the vector)
        xs, ts = x[first:first + sub].clone(), target[first:first + sub].clone()
        ls = torch.empty(sub, device="cuda")
        k(xs, ts, ls, *([torch.empty(1, device="cuda", dtype=dt)] if reduced is not None else []))
        torch.cuda.synchronize()
        flags.append("yes" if torch.equal(ls.view(torch.int32), loss[first:first + sub].view(torch.int32)) else "NO")
    return err, "/".join(flags)


def big_cells(torch, args, t0: float) -> None:
    from rows_forward import TOTAL, print_failed, print_timed, registers

    verdicts: list[str] = []
    print("| part | dtype | N | copy GB/s | setting | GB/s | /copy | regs | threads x cluster | err | inv/pos |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | --- |")
    F = torch.nn.functional
    for part, dtype, n in cells(args):
        if part == "small":
            continue
        if time.time() - t0 > args.budget_s:
            print(f"| {part} | {dtype} | {n} | skipped: budget |", flush=True)
            continue
        m = TOTAL // n
        x = torch.randn(m, n, device="cuda", dtype=torch.float32).mul_(2).add_(0.3).to(getattr(torch, dtype))
        y = torch.empty_like(x)
        target = torch.randint(0, n, (m,), device="cuda")
        target[::16] = -100
        loss, reduced = torch.empty(m, device="cuda"), torch.empty(1, device="cuda", dtype=x.dtype)
        ref_rows = F.cross_entropy(x[:CHECK_ROWS].double(), target[:CHECK_ROWS], reduction="none")
        ref_mean = F.cross_entropy(x.float(), target).item()
        runs = []
        for name, forced, consts in settings_for(part, dtype, n, chosen_variant(dtype, n)):
            try:
                k = build(dtype, n, forced, consts)
                call = lambda k=k: k(x, target, loss, reduced)  # noqa: E731
                call()
                torch.cuda.synchronize()
                err, inv = check(torch, k, x, target, loss, reduced, ref_rows, ref_mean)
                launch = k.signature.launch
                runs.append([name, call, registers(k), f"{launch.block[0]} x {launch.cluster[0]}", err, inv])
            except Exception as e:  # noqa: BLE001 - the row says why
                print_failed(part, dtype, n, name, e)
        ratios = print_timed(torch, f"{part} cross_entropy", dtype, n, x, y, x.numel() * x.element_size(), runs)
        if part == "odd16":
            named = {name: consts for name, _, consts in settings_for(part, dtype, n, chosen_variant(dtype, n))}
            verdicts.append(odd16_verdict(dtype, n, runs, ratios, named))
        del x, y, runs
        torch.cuda.empty_cache()
    if verdicts:
        print("\nodd16 verdict (the fastest batch-invariant setting, its error at most twice the dispatch's, if 1% or more"
              " above the dispatch; float16 follows bfloat16's entries unless given its own):")
        print("\n".join(verdicts))


def small_batches(torch, args, t0: float) -> None:
    import reductions_api as RA

    print("\n| small | dtype | M | copy us | setting | GPU us a call | vs mean | err | bits as mean |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- |")
    F = torch.nn.functional
    for dtype in ("float32", "bfloat16"):
        kernels = [(name, consts, build(dtype, SMALL_N, None, consts)) for name, consts in small_settings()]
        for m in SMALL_M:
            if time.time() - t0 > args.budget_s:
                print(f"| small | {dtype} | {m} | skipped: budget |", flush=True)
                continue
            x = torch.randn(m, SMALL_N, device="cuda", dtype=torch.float32).mul_(2).add_(0.3).to(getattr(torch, dtype))
            y = torch.empty_like(x)
            target = torch.randint(0, SMALL_N, (m,), device="cuda")
            want = F.cross_entropy(x.double(), target).item()
            calls, outs = [], []
            for name, consts, k in kernels:
                loss = torch.empty(m, device="cuda")
                red = torch.empty(1, device="cuda", dtype=x.dtype)
                mean = consts.get("reduction", "mean") is not None
                calls.append((lambda k=k, loss=loss, red=red: k(x, target, loss, red)) if mean else
                             (lambda k=k, loss=loss: k(x, target, loss)))
                calls[-1]()
                outs.append(red if mean else loss)
            torch.cuda.synchronize()
            times: dict[int, list[float]] = {i: [] for i in range(-1, len(calls))}
            for _ in range(3):  # in turns: the copy, then each setting
                for i in times:
                    fn = (lambda: torch.mul(x, 1.0, out=y)) if i < 0 else calls[i]
                    times[i].append(RA.graph_us(torch, lambda _, c=fn: c(), [None], SMALL_CALLS, 5))
            med = {i: statistics.median(t) for i, t in times.items()}
            base = next(i for i, (name, _, _) in enumerate(kernels) if name == "mean")
            for i, (name, consts, _) in enumerate(kernels):
                if consts.get("reduction", "mean") is None:
                    err, bits = float("nan"), ""
                else:
                    got = outs[i].double().item()
                    err = abs(got - want) / max(abs(want), 1e-30)
                    bits = "yes" if torch.equal(outs[i].view(torch.int16 if x.element_size() == 2 else torch.int32),
                                                outs[base].view(torch.int16 if x.element_size() == 2 else torch.int32)) else "NO"
                print(f"| small | {dtype} | {m} | {med[-1]:.2f} | {name} | {med[i]:.2f} | {med[i] / med[base]:.3f} | "
                      f"{err:.1e} | {bits} |", flush=True)


def main() -> int:
    from rows_forward import parts_args

    args = parts_args(__doc__, PARTS, "build and assemble each kernel; no GPU")
    if args.dry_run:
        return dry_run(args)
    import torch

    t0 = time.time()
    if "small" in args.parts:  # (first: short, and past the budget the big cells' last are left out)
        small_batches(torch, args, t0)
        print()
    big_cells(torch, args, t0)
    print(f"probe time: {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
