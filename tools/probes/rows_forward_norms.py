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

``--set words`` (:func:`words_settings`) times instead the per-element and per-row settings of
the short and middle rows (rows_warp, rows_cta; N = 1024, 4096, 16384, float32 and bfloat16,
:data:`WORDS_CELLS`, the furthest from the copy kernel in the fifth session first), each off by
default and each against the dispatch as it is, on the same tensors:

* ``held``: rows_common.AFFINE_HELD (the norms' weight and bias loaded once before the rows
  loop and held in registers, bfloat16 two to a word; the same bits);
* ``one_barrier``: rows_common.CTA_ONE_BARRIER (rows_cta: each reduction one ``bar.sync``,
  every thread combining the warps' partials; the same bits);
* ``max_first``: rows_common.EXP_MAX_FIRST (the exp kinds: the row's maximum reduced first,
  the exps against it, their sum: two scalar reductions instead of the (m, s) pairs'; bits
  change);
* ``rms_fma``: rows_common.RMS_FMA (rms_norm, add_rms_norm: the squares summed by FFMA
  chains; rstd's bits change);
* their combinations; ``max_first, 64 values`` (rows_cta past 4096: rows_cta.VALUES = 64, half
  the threads a row, the row's overhead over twice the values); bfloat16 layer_norm 4096's
  ``held+one_barrier, 16 values`` (twice the threads, the held registers halved); and ``..., min K CTAs/SM``
  (rows_warp / rows_cta.MIN_CTAS) where the setting's registers hold fewer CTAs a
  multiprocessor than the dispatch's;

``bits``: whether y (the losses; add_rms_norm's residual_out too) equals the dispatch's bit for
bit (``same``: it must for held and one_barrier). The dry run prints each kernel's SASS
instructions an element (ptxas for sm_90a, nvdisasm: the loop over rows' instructions over the
values a thread holds; a warp-0-only step counted as every warp's). At the end, per cell, the
setting that beat the dispatch by 1% or more (sound: batch-invariant, its error at most twice
the dispatch's, the bits where they must be the same) and the table entries that take it.

    python3 tools/diag.py rows_forward_norms [--budget-s 150] [--cells add_rms,layer_norm,exp,ce]
    python3 tools/diag.py rows_forward_norms --set words [--budget-s 150] [--kinds layer_norm] [--n 4096] [--dtypes bfloat16]
    python3 tools/diag.py rows_forward_norms [--set words] --dry-run   # build and assemble each kernel (no GPU)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from rows_forward import EPS, cell_tensors, print_failed, print_timed, registers, resident_ctas, sass_listing  # noqa: E402
from rows_forward import q32_kw as kwargs  # noqa: E402 - row_kernels.kernel_for's keywords of a kind

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


WORDS_CELLS = [  # (group, kind, dtype, N): --set words' cells, the furthest from copy first (fifth session)
    ("words", "cross_entropy", "bfloat16", 16384), ("words", "layer_norm", "bfloat16", 4096),
    ("words", "cross_entropy", "bfloat16", 4096), ("words", "layer_norm", "bfloat16", 16384),
    ("words", "log_softmax", "bfloat16", 4096), ("words", "softmax", "bfloat16", 4096),
    ("words", "softmax", "bfloat16", 16384), ("words", "rms_norm", "bfloat16", 4096),
    ("words", "layer_norm", "float32", 16384), ("words", "softmax", "float32", 16384),
    ("words", "rms_norm", "float32", 16384), ("words", "log_softmax", "bfloat16", 16384),
    ("words", "softmax", "bfloat16", 1024), ("words", "add_rms_norm", "bfloat16", 4096),
    ("words", "log_softmax", "bfloat16", 1024), ("words", "rms_norm", "bfloat16", 16384),
    ("words", "add_rms_norm", "bfloat16", 16384), ("words", "rms_norm", "bfloat16", 1024),
    ("words", "layer_norm", "bfloat16", 1024), ("words", "add_rms_norm", "bfloat16", 1024),
    ("words", "cross_entropy", "bfloat16", 1024), ("words", "softmax", "float32", 1024),
    ("words", "rms_norm", "float32", 1024), ("words", "layer_norm", "float32", 1024),
    ("words", "log_softmax", "float32", 16384), ("words", "cross_entropy", "float32", 16384),
    ("words", "add_rms_norm", "float32", 16384), ("words", "add_rms_norm", "float32", 4096),
]

WORDS_FLAGS = {  # --set words' names -> rows_common's switches
    "held": "rows_common.AFFINE_HELD", "one_barrier": "rows_common.CTA_ONE_BARRIER",
    "max_first": "rows_common.EXP_MAX_FIRST", "rms_fma": "rows_common.RMS_FMA",
}
SAME_BITS = ("held", "one_barrier")
"""The settings that change no bit (the others' bits are judged by their error)."""


def words_settings(kind: str, dtype: str, n: int, chosen: str) -> list[tuple[str, str | None, dict]]:
    """--set words' settings of one cell: (name, the variant forced or None, the settings)."""
    base = register_variant(n)
    if base is None:
        return [(f"dispatch: {chosen}", None, {})]
    forced = None if base == chosen else base
    out: list[tuple[str, str | None, dict]] = [(f"dispatch: {chosen}", None, {})]
    if forced is not None:
        out.append((forced, forced, {}))
    cta = base == "rows_cta"
    if kind in ("softmax", "log_softmax", "cross_entropy"):
        combos = [("max_first",)] + ([("one_barrier",), ("max_first", "one_barrier")] if cta else [])
    elif kind in ("rms_norm", "add_rms_norm"):
        combos = [("held",), ("rms_fma",), ("held", "rms_fma")] + ([("held", "rms_fma", "one_barrier")] if cta else [])
    else:
        combos = [("held",)] + ([("one_barrier",), ("held", "one_barrier")] if cta else [])
    for combo in combos:
        out.append((f"{base} {'+'.join(combo)}", forced, {WORDS_FLAGS[c]: True for c in combo}))
    if cta and n > 4096 and kind in ("softmax", "log_softmax", "cross_entropy"):  # twice the values a thread: half the threads
        out.append((f"{base} max_first, 64 values", forced, {WORDS_FLAGS["max_first"]: True, "rows_cta.VALUES": 64}))
    if cta and kind == "layer_norm" and dtype == "bfloat16" and n <= 4096:  # the held weight and bias over twice the threads
        out.append((f"{base} held+one_barrier, 16 values", forced,
                    {WORDS_FLAGS["held"]: True, WORDS_FLAGS["one_barrier"]: True, "rows_cta.VALUES": 16}))
    k = build(kind, dtype, n, forced, {})
    regs0 = registers(k)
    threads = k.signature.launch.block[0]
    if regs0.isdigit():  # a setting whose registers hold fewer threads than the dispatch's: also with the dispatch's bound
        held0 = resident_ctas(regs0, threads) * threads  # (threads a multiprocessor)
        for name, f, consts in list(out[1 + (forced is not None):]):
            k = build(kind, dtype, n, f, consts)
            regs, t = registers(k), k.signature.launch.block[0]
            want = held0 // t
            if regs.isdigit() and resident_ctas(regs, t) == want - 1:  # (one CTA more: no more than ptxas can hold unspilled, mostly)
                out.append((f"{name}, min {want} CTAs/SM", base, {**consts, f"{base}.MIN_CTAS": want}))
    return out


def flips(consts: dict, kind: str, dtype: str, n: int) -> list[str]:
    """The table entries that make ``consts`` (a --set words setting) the default of a cell."""
    name = {"bfloat16": "BF16", "float32": "F32", "float16": "F16"}[dtype]
    out = []
    for key, v in consts.items():
        if key.endswith(".MIN_CTAS") or key.endswith(".VALUES"):
            out.append(f"{key}_MEASURED[(\"{kind}\", {name}.name)] += ({n}, {n}, {v})")
        elif v is True:
            out.append(f"{key}_MEASURED[{name}.name] += ({n}, {n})")
    return out


def sass_per_element(k, variant: str, n: int) -> str:
    """The SASS instructions of the kernel's loop over rows over the values a thread holds
    (ptxas for sm_90a, nvdisasm): a warp-0-only step counted as every warp's; '?' without nvdisasm."""
    import re

    listing = sass_listing(k)
    if listing is None:
        return "?"
    ins, labels = listing
    span = None  # the widest backward branch: the loop over rows
    for a, op, rest, _ in ins:
        t = re.search(r"\((\.L_x_\d+)\)", rest)
        if op.startswith("BRA") and t and t.group(1) in labels and labels[t.group(1)] < a:
            if span is None or a - labels[t.group(1)] > span[1] - span[0]:
                span = (labels[t.group(1)], a)
    if span is None:
        return "?"
    group = 32 if variant == "rows_warp" else k.signature.launch.block[0]
    count = sum(span[0] <= a <= span[1] for a, _, _, _ in ins)
    return f"{count / (n / group):.1f}"


def words_verdict(kind: str, dtype: str, n: int, judged: list[tuple], ratios: list[float]) -> str:
    """One cell's line of --set words' verdict: the fastest sound setting (batch-invariant, the
    bits where they must be the same, its error at most twice the dispatch's) if it beats the
    dispatch (the first run) by 1% or more, with its table entries (:func:`flips`)."""
    if not judged or len(ratios) != len(judged) or not judged[0][0].startswith("dispatch"):
        return f"- {kind} {dtype} {n}: no verdict (the dispatch's run failed)"
    base_err, base = judged[0][2], ratios[0]
    best = None
    for (name, consts, err, sound), r in zip(judged[1:], ratios[1:]):
        if not consts or not sound or not err <= 2 * base_err + 1e-12:
            continue
        if r >= 1.01 * base and (best is None or r > best[1]):
            best = (name, r, consts)
    if best is None:
        return f"- {kind} {dtype} {n}: keep the default ({base:.3f} of copy; no sound setting >= 1% faster)"
    name, r, consts = best
    return (f"- {kind} {dtype} {n}: {name} {base:.3f} -> {r:.3f} of copy: "
            + "; ".join(flips({k: v for k, v in consts.items() if k != "reduction"}, kind, dtype, n)))


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

    key = (kind, dtype, n, forced, repr(sorted(consts.items())))
    if key not in _BUILT:  # (--set words builds each setting twice: its registers, then its run)
        with applied(consts):
            built = row_kernels.module(kind, None, n, dtype, variant=forced, reduction=consts.get("reduction"),
                                       **kwargs(kind, dtype))
            _BUILT[key] = compile_tile_module(built, None).kernel("rows")
    return _BUILT[key]


_BUILT: dict[tuple, object] = {}
"""build's kernels by cell and setting."""


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
        for name, forced, consts in settings_of(args)(kind, dtype, n, chosen):
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
            sass = sass_per_element(k, forced or chosen, n) if args.set == "words" else ""
            print(f"{kind} {dtype} {n} | {name} | {'ok' if ok else 'FAILED ' + log.splitlines()[0]} | regs {registers(k)} | "
                  f"threads {k.signature.launch.block[0]} x {k.signature.launch.cluster[0]} | STL {spills}"
                  + (f" | SASS/elem {sass}" if sass else ""), flush=True)
    return 1 if failed else 0


def cells(args) -> list[tuple[str, str, str, int]]:
    if args.set == "words":
        kinds = args.kinds.split(",") if args.kinds else None
        ns = [int(v) for v in args.n.split(",")] if args.n else None
        dts = args.dtypes.split(",") if args.dtypes else None
        return [c for c in WORDS_CELLS if (kinds is None or c[1] in kinds) and (ns is None or c[3] in ns)
                and (dts is None or c[2] in dts)]
    groups = args.cells.split(",") if args.cells else None
    return [c for c in CELLS if groups is None or c[0] in groups]


def settings_of(args):
    """The settings function of ``--set``."""
    return words_settings if args.set == "words" else settings_for


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
    if kind == "rms_norm":
        return F.rms_norm(xd, (n,), w.double(), EPS)
    if kind == "add_rms_norm":
        h = (x[:CHECK_ROWS] + res[:CHECK_ROWS]).double()  # (rounded to x's type, as torch's add)
        return F.rms_norm(h, (n,), w.double(), EPS)
    return F.cross_entropy(xd, target[:CHECK_ROWS], reduction="none")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--cells", help="these groups only: add_rms, layer_norm, exp, ce (comma-separated)")
    ap.add_argument("--dry-run", action="store_true", help="build and assemble each kernel; no GPU")
    ap.add_argument("--set", default="slow", choices=("slow", "words"),
                    help="slow: the slow cells' settings (default); words: the short rows' per-element settings")
    ap.add_argument("--kinds", help="--set words: these kinds only (comma-separated)")
    ap.add_argument("--n", help="--set words: these N only (comma-separated)")
    ap.add_argument("--dtypes", help="--set words: these element types only (comma-separated)")
    args = ap.parse_args()
    os.environ["BULKRED_CACHE"] = "0"  # each setting's kernels are its own
    if args.dry_run:
        return dry_run(args)
    import torch

    t0 = time.time()
    verdicts: list[str] = []
    print("| op | dtype | N | copy GB/s | setting | GB/s | /copy | regs | threads x cluster | err | inv"
          + (" / bits |" if args.set == "words" else " |"))
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
            if kind == "rms_norm":
                return [x[sl], out, w]
            return [x[sl], out]

        def outputs(a: list) -> list:
            if kind == "cross_entropy":
                return [a[2]]
            return [a[1], a[3]] if kind == "add_rms_norm" else [a[1]]

        chosen = chosen_variant(kind, dtype, n)
        runs = []  # (name, call, regs, threads, err, inv)
        judged = []  # --set words: (name, consts, err, sound bits) of each run, in runs' order
        base_out = None  # the dispatch's outputs (--set words' bits)
        for name, forced, consts in settings_of(args)(kind, dtype, n, chosen):
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
                last = "yes" if inv else "NO"
                if args.set == "words":
                    if base_out is None:
                        base_out = [g.clone() for g in got]
                    same = all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(got, base_out))
                    must = any(WORDS_FLAGS[f] in consts for f in SAME_BITS) and not any(
                        WORDS_FLAGS[f] in consts for f in WORDS_FLAGS if f not in SAME_BITS)
                    last += " / " + ("same" if same else "differ")
                    judged.append((name, consts, err, inv and (same or not must)))
                runs.append([name, call, registers(k), f"{launch.block[0]} x {launch.cluster[0]}", err, last])
            except Exception as e:  # noqa: BLE001 - the row says why
                print_failed(kind, dtype, n, name, e)
        ratios = print_timed(torch, kind, dtype, n, x, y, nbytes, runs)
        if args.set == "words" and judged:
            verdicts.append(words_verdict(kind, dtype, n, judged, ratios))
        del x, y, res, hout, ref, runs
        torch.cuda.empty_cache()
    print(f"probe time: {time.time() - t0:.0f} s")
    if verdicts:
        print("\nVerdicts (--set words): per cell, the fastest sound setting that beats the dispatch by >= 1%, "
              "and the table entries (rows_common / rows_cta / rows_warp) to flip:")
        for v in verdicts:
            print(v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
