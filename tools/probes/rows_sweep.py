#!/usr/bin/env python3
"""The forward row kernels' untried knob combinations, cell by cell (issue 30, section 4:
forward >= 0.97x copy; 50 of 60 cells at 0.85 to 0.96 in the sixth session, whose short
rows docs/rows.md calls latency-bound: rows in flight a multiprocessor): per cell of
:data:`CELLS` (the furthest below copy first; ``--parts`` picks some), on the same tensors
(fresh random data, M x N = 2^28), the copy kernel, the dispatch's kernel as it is and each
candidate of :func:`candidates`, timed in turns (rows_forward.timed_in_turns: a CUDA graph
of 10 calls, twice, the mean), each candidate checked against float64 (y of 256 rows; the
loss rows and the kernel's mean for cross_entropy, which runs as the library runs it,
``reduction="mean"`` in the kernel; add_rms_norm's residual_out against x + residual), its
first 37 rows called alone giving the batch's bits (M-invariance), and, where it claims
them (a knob that changes no row's arithmetic), the default's bits.

The candidates are chosen by what latency-bound means, more bytes in flight a
multiprocessor: more CTAs resident (``.minnctapersm``: rows_cta / rows_warp.MIN_CTAS,
rows_bulk's ``min_ctas``, add_rms_norm's rows_common.ADD_RMS_CLUSTER_MIN_CTAS), more
loads issued before their first use (rows_common.FORWARD_PIPELINE where the cell is not
pipelined, rows_cta.VALUES: more threads a row, rows_cluster.SLICE: smaller CTAs a
cluster), the row staged by ``cp.async.bulk`` in a persistent grid of two slice buffers
(rows_bulk forced with the sixth session's per-element settings: fast exp, words, the
slice in registers, the weight in registers, one pass) and its threads; each named with the
exact table entry that takes it (or "global" where the knob has no per-cell table yet).
At the end, per cell, the fastest candidate whose checks passed where it beats the
default by 2% or more, and its entry.

``--dry-run``: no GPU; every candidate built for sm_90a and assembled (nvJitLink): the
variant, grid x threads (x cluster), ptxas's registers / spilled bytes and the SASS
instructions an element of the loop over rows (rows_ln_bf16.sass_per_element; '?' without
nvdisasm).

    PROBE_ARGS="--budget-s 140" bash tools/gpu.sh probe:rows_sweep
    python3 tools/diag.py rows_sweep --dry-run [--parts softmax-bf16-4096,ce-bf16-16384]
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, fields

os.environ["BULKRED_CACHE"] = "0"  # built here, each time: the patched constants take effect
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (the other probes' functions)

import rows_backward as RB  # noqa: E402 - tools/probes/rows_backward.py: patched, launch_of, gpu_banner
from rows_forward import EPS, TOTAL, cell_tensors, parts_args, registers, resident_ctas, timed_in_turns  # noqa: E402
from rows_ln_bf16 import sass_per_element  # noqa: E402

V = "bulkred_dialect.passes.variants."
CTA, WARP, BULK, CLUSTER, COMMON = V + "rows_cta", V + "rows_warp", V + "rows_bulk", V + "rows_cluster", V + "rows_common"

PART_KIND = {"add_rms_norm": "add_rms", "cross_entropy": "ce"}
PART_TYPE = {"float32": "f32", "bfloat16": "bf16"}
BELOW = {  # docs/benchmarks.md's sixth session, x copy -> its cells (kind, dtype, N) there, the furthest first
    0.89: [("add_rms_norm", "float32", 262144)],
    0.90: [("softmax", "bfloat16", 4096), ("log_softmax", "bfloat16", 1024), ("layer_norm", "bfloat16", 65536),
           ("cross_entropy", "bfloat16", 16384)],
    0.91: [("log_softmax", "bfloat16", 4096), ("rms_norm", "bfloat16", 4096), ("layer_norm", "float32", 16384),
           ("add_rms_norm", "float32", 65536), ("softmax", "float32", 262144)],
    0.92: [("softmax", "float32", 65536)],
    0.93: [("softmax", "float32", 16384)],
}
CELLS = [(f"{PART_KIND.get(kind, kind)}-{PART_TYPE[dtype]}-{n}", kind, dtype, n)
         for ratio in sorted(BELOW) for kind, dtype, n in BELOW[ratio]]
"""(part name, kind, dtype, N), the furthest from copy first (``--parts`` takes the names:
``softmax-bf16-4096``, ``ce-bf16-16384``, ``add_rms-f32-262144``...)."""
SUB = 37
"""Rows of the M-invariance call."""
CHECK_ROWS = 256
"""Rows checked against float64."""
WIN = 1.02
"""A candidate's speed over the default's that makes it a flip."""
TYPE = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}
SMS = 132
"""An H200's multiprocessors: the persistent grids' CTAs at most (``max_units``: the CTAs
``.minnctapersm`` holds at once, all resident, no second wave)."""


@dataclass(frozen=True)
class Candidate:
    """One setting of a cell: ``label``; ``variant`` forced (None: the dispatch's, with the
    patches); ``patches`` ("package.module.NAME" -> value, in force while it is built);
    ``same``: it claims the default's bits (no row's arithmetic changed); ``flip``: the
    table entry that makes it the cell's default."""

    label: str
    variant: str | None
    patches: dict
    same: bool
    flip: str


def kwargs(kind: str, dtype: str) -> dict:
    """row_kernels.module's operands of the kind as the library calls it (the weight and
    bias of x's type; cross_entropy's mean in the kernel, as ``bulkred.cross_entropy``)."""
    if kind in ("rms_norm", "add_rms_norm"):
        return {"weight": dtype, "eps": EPS}
    if kind == "layer_norm":
        return {"weight": dtype, "bias": dtype, "eps": EPS}
    if kind == "cross_entropy":
        return {"ignore_index": -100, "reduction": "mean"}
    return {}


_BUILT: dict = {}


def build(kind: str, dtype: str, n: int, c: Candidate, dry: bool):
    """(the compiled kernel of candidate ``c``, the variant it lowered to, seconds to build);
    ``dry``: for sm_90a, not loaded. Each candidate built once."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module

    key = (kind, dtype, n, c.label, dry)
    if key not in _BUILT:
        t0 = time.time()
        with RB.patched(c.patches):
            built = row_kernels.module(kind, None, n, dtype, variant=c.variant, **kwargs(kind, dtype))
            name = chosen(kind, dtype, n, c.variant)
            k = compile_tile_module(built, "sm_90a" if dry else None, cache=False).kernel("rows")
        _BUILT[key] = (k, name, time.time() - t0)
    return _BUILT[key]


def chosen(kind: str, dtype: str, n: int, variant: str | None) -> str:
    """The variant the dispatch takes for the cell (the patches in force), or ``variant``."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose

    if variant is not None:
        return variant
    op = next(o for o in row_kernels.module(kind, None, n, dtype, **kwargs(kind, dtype)).walk()
              if o.name == "bulkred.normalize_rows")
    return choose(op, Target.parse("sm_90a")).name


def setting_src(st) -> str:
    """rows_bulk.Setting's source: the five positional fields, then those not at their default."""
    head = [repr(getattr(st, f.name)) for f in fields(st)[:5]]
    rest = [f"{f.name}={getattr(st, f.name)!r}" for f in fields(st)[5:] if getattr(st, f.name) != f.default]
    return f"Setting({', '.join(head + rest)})"


def bulk(kind: str, dtype: str, n: int, label: str, st, same: bool = False) -> Candidate:
    """rows_bulk forced with setting ``st`` (a row of rows_bulk.CHOSEN for the cell, first)."""
    from bulkred_dialect.passes.variants import rows_bulk

    row = (dtype, (kind,), n, n, st)
    flip = f"rows_bulk.CHOSEN: ({TYPE[dtype]}.name, (\"{kind}\",), {n}, {n}, {setting_src(st)}) first"
    return Candidate(label, "rows_bulk", {f"{BULK}.CHOSEN": [row] + list(rows_bulk.CHOSEN)}, same, flip)


def table_flip(table: str, kind: str, dtype: str, n: int, value) -> str:
    return f"{table}[(\"{kind}\", {TYPE[dtype]}.name)] = (({n}, {n}, {value}),) + its ranges"


def global_flip(name: str, value) -> str:
    return f"{name} = {value!r} is a global (no per-cell table yet): add one (kind, type, N) before flipping"


def slice_flip(kind: str, dtype: str, n: int, value: int) -> str:
    """rows_cluster's per-cell SLICE (SLICE_MEASURED, where the tree has it; the probe patches SLICE)."""
    return (table_flip("rows_cluster.SLICE_MEASURED", kind, dtype, n, value)
            + " (the per-cell table beside rows_cluster.SLICE; where the tree has none: " + global_flip("rows_cluster.SLICE", value) + ")")


def default_of(kind: str, dtype: str, n: int, dry: bool) -> tuple[object, str]:
    """The dispatch's kernel of the cell and its variant."""
    k, name, _ = build(kind, dtype, n, Candidate("default", None, {}, True, ""), dry)
    return k, name


def candidates(kind: str, dtype: str, n: int, dry: bool = True) -> list[Candidate]:
    """The default, then the cell's candidates (the module docstring's knobs, by the
    variant the dispatch takes today and its registers)."""
    from bulkred_dialect.passes.variants import rows_bulk, rows_common, rows_cta
    from bulkred_dialect.passes.variants.rows_bulk import Setting

    k0, variant = default_of(kind, dtype, n, dry)
    regs, block = registers(k0), k0.signature.launch.block[0]
    fit = resident_ctas(regs, block) if regs.isdigit() else 2048 // block  # CTAs a multiprocessor by registers
    out = [Candidate("default", None, {}, True, "")]
    bf16 = dtype != "float32"
    exp = kind in ("softmax", "log_softmax", "cross_entropy")
    words = {"words": True} if bf16 else {}
    if variant in ("rows_cta", "rows_warp"):
        mod, table = (CTA, "rows_cta.MIN_CTAS_MEASURED") if variant == "rows_cta" else (WARP, "rows_warp.MIN_CTAS_MEASURED")
        most = 2048 // block
        held = rows_common.items_for(_op(kind, dtype, n), 32 if variant == "rows_warp" else block) * rows_common.vector_of(
            _op(kind, dtype, n))  # (the values a thread holds: ptxas needs about 24 registers more, or spills)
        for more in (fit + 1, fit + 2):  # more CTAs a multiprocessor: ptxas holds the registers down
            if more <= most and 65536 // (more * block) >= held + 24:
                c = Candidate(f"{variant}, .minnctapersm {more} (today {fit} by registers)", None,
                              {f"{mod}.MIN_CTAS": more}, True, table_flip(table, kind, dtype, n, more))
                if spilled(build(kind, dtype, n, c, dry)[0]):  # (ptxas spills at that bound: slower every time measured)
                    continue
                out.append(c)
    if variant == "rows_cta":
        op = _op(kind, dtype, n)
        values, bound = rows_cta.values_for(op), rows_cta.min_ctas_for(op)
        fewer = values // 2  # twice the threads a row: as many loads in flight a row over more warps
        off = {}  # (the cell's .minnctapersm entry dropped where it would hold ptxas to 32 registers a thread)
        if bound is not None and bound * 2 * block >= 2048:
            off = {f"{CTA}.MIN_CTAS_MEASURED": {}}
        unbound = f"; rows_cta.MIN_CTAS_MEASURED without ({kind}, {TYPE[dtype]}) {n}" if off else ""
        out.append(Candidate(f"rows_cta, {fewer} values ({2 * block} threads)" + (", no .minnctapersm" if off else ""), None,
                             {f"{CTA}.VALUES": fewer, **off}, False,
                             table_flip("rows_cta.VALUES_MEASURED", kind, dtype, n, fewer) + unbound))
        if not bf16 and n > 1024:  # float32 past 1024 is not pipelined: the next row's loads over this one's reduction
            drop = {f"{CTA}.MIN_CTAS_MEASURED": {}} if bound is not None else {}  # (its bound would spill the next row)
            out.append(Candidate("rows_cta pipelined" + (", no .minnctapersm" if drop else ""), None,
                                 {f"{COMMON}.FORWARD_PIPELINE": True, **drop}, True,
                                 f"rows_common.FORWARD_MEASURED[F32.name] = (({n}, {n}, True),) + its ranges "
                                 "(keyed by type: every kind at this N)"
                                 + (f"; rows_cta.MIN_CTAS_MEASURED without ({kind}, F32) {n}" if drop else "")))
            out.append(Candidate(f"rows_cta pipelined, {fewer} values, 1 CTA/SM bound off", None,
                                 {f"{COMMON}.FORWARD_PIPELINE": True, f"{CTA}.VALUES": fewer, f"{CTA}.MIN_CTAS_MEASURED": {}},
                                 False, table_flip("rows_cta.VALUES_MEASURED", kind, dtype, n, fewer)
                                 + f"; rows_common.FORWARD_MEASURED[F32.name] = (({n}, {n}, True),) + its ranges"
                                 + f"; rows_cta.MIN_CTAS_MEASURED without ({kind}, F32) {n}"))
    if variant == "rows_warp":
        items = rows_common.items_for(_op(kind, dtype, n), 32)  # (the vectors a lane holds: 8 of 4 at 1024)
        if items > 1 and fit + 1 <= 2048 // block:
            out.append(Candidate(f"rows_warp, {items // 2} of {items} vectors ahead, .minnctapersm {fit + 1}", None,
                                 {f"{COMMON}.FORWARD_AHEAD": items // 2, f"{WARP}.MIN_CTAS": fit + 1}, True,
                                 global_flip("rows_common.FORWARD_AHEAD", items // 2) + "; "
                                 + table_flip("rows_warp.MIN_CTAS_MEASURED", kind, dtype, n, fit + 1)))
        out.append(Candidate("rows_cta forced (128 threads)", "rows_cta", {}, False,
                             "rows_cta over rows_warp at this N: no table (rows_warp's priority): a per-cell one needed"))
        out.append(bulk(kind, dtype, n, f"rows_bulk 128 threads x 8 values, registers, min 8, persistent x2, {8 * SMS} CTAs",
                        Setting(16384, 128, 8, True, 2, registers=True, max_units=8 * SMS, fast_exp=exp, **words)))
    if variant == "rows_cta":  # the row staged by cp.async.bulk, a persistent grid of two slice buffers
        row = n * (2 if bf16 else 4)
        if kind in ("softmax", "log_softmax", "rms_norm"):
            aff = {"affine_registers": True} if kind == "rms_norm" else {}
            fe = {"fast_exp": True} if exp else {}
            if row <= 16384:
                out.append(bulk(kind, dtype, n, f"rows_bulk 256 threads, registers, min 4, persistent x2, {4 * SMS} CTAs",
                                Setting(16384, 256, 4, True, 2, registers=True, max_units=4 * SMS, **fe, **aff, **words)))
                out.append(bulk(kind, dtype, n, f"rows_bulk 128 threads (passes), min 8, persistent x2, {8 * SMS} CTAs",
                                Setting(16384, 128, 8, True, 2, max_units=8 * SMS, **fe, **aff, **words,
                                        **({"fold_sum": True} if kind == "softmax" else {}))))
            else:  # (float32 16384: 64 KiB rows)
                out.append(bulk(kind, dtype, n, "rows_bulk 64K/512, registers, persistent x2",
                                Setting(65536, 512, None, True, 2, registers=True, **fe, **aff)))
                out.append(bulk(kind, dtype, n, f"rows_bulk 2 x 32K/256, registers, min 2, persistent x2, {SMS} units",
                                Setting(32768, 256, 2, True, 2, registers=True, max_units=SMS, **fe, **aff)))
        elif kind == "layer_norm":  # (float32 16384)
            out.append(bulk(kind, dtype, n, "rows_bulk 64K/512, one pass local, w in registers, persistent x2",
                            Setting(65536, 512, None, True, 2, one_pass="local", affine_registers=True, **words)))
            out.append(bulk(kind, dtype, n, f"rows_bulk 2 x 32K/256, min 2, one pass local, w in registers, {SMS} units",
                            Setting(32768, 256, 2, True, 2, one_pass="local", max_units=SMS, affine_registers=True, **words)))
        elif kind == "cross_entropy":  # (bfloat16 16384: 32 KiB rows)
            out.append(bulk(kind, dtype, n, f"rows_bulk 32K/512, min 3, online, fast exp, persistent x2, {3 * SMS} CTAs",
                            Setting(32768, 512, 3, True, 2, online=True, max_units=3 * SMS, fast_exp=True, **words)))
            out.append(bulk(kind, dtype, n, f"rows_bulk 32K/256, registers, min 2, persistent x2, {2 * SMS} CTAs",
                            Setting(32768, 256, 2, True, 2, registers=True, max_units=2 * SMS, fast_exp=True, **words)))
    if variant == "rows_cluster":
        if kind == "add_rms_norm":
            out.append(Candidate("rows_cluster, no .minnctapersm", None, {f"{COMMON}.ADD_RMS_CLUSTER_MIN_CTAS": None}, True,
                                 global_flip("rows_common.ADD_RMS_CLUSTER_MIN_CTAS", None)))
            if n <= 65536:
                out.append(Candidate("rows_cluster, .minnctapersm 3", None, {f"{COMMON}.ADD_RMS_CLUSTER_MIN_CTAS": 3}, True,
                                     global_flip("rows_common.ADD_RMS_CLUSTER_MIN_CTAS", 3)))
                out.append(Candidate("rows_cluster SLICE 4096 (16 CTAs)", None, {f"{CLUSTER}.SLICE": 4096}, False,
                                     slice_flip(kind, dtype, n, 4096)))
                out.append(bulk(kind, dtype, n, "rows_bulk 8 x 32K/512, persistent x2, w shared, 15 units",
                                Setting(32768, 512, None, True, 2, weight_shared=True, max_units=15)))
                out.append(bulk(kind, dtype, n, "rows_bulk 8 x 32K/512, persistent x2, 15 units",
                                Setting(32768, 512, None, True, 2, max_units=15)))
            else:
                out.append(bulk(kind, dtype, n, "rows_bulk 16 x 64K/512, persistent x1, 7 units",
                                Setting(65536, 512, None, True, 1, max_units=7)))
                out.append(bulk(kind, dtype, n, "rows_bulk 16 x 64K/1024, persistent x1, 7 units",
                                Setting(65536, 1024, None, True, 1, max_units=7)))
        else:  # (softmax float32 65536)
            out.append(Candidate("rows_cluster SLICE 4096 (16 CTAs)", None, {f"{CLUSTER}.SLICE": 4096}, False,
                                 slice_flip(kind, dtype, n, 4096)))
            out.append(Candidate("rows_cluster SLICE 16384 (4 CTAs)", None, {f"{CLUSTER}.SLICE": 16384}, False,
                                 slice_flip(kind, dtype, n, 16384)))
            fe = {"fast_exp": True} if exp else {}
            out.append(bulk(kind, dtype, n, "rows_bulk 8 x 32K/256, registers, min 2, persistent x2, 30 units",
                            Setting(32768, 256, 2, True, 2, registers=True, max_units=30)))
            out.append(bulk(kind, dtype, n, "rows_bulk 8 x 32K/256, registers, fast exp, min 2, persistent x2, 30 units",
                            Setting(32768, 256, 2, True, 2, registers=True, max_units=30, **fe)))
    if variant == "rows_bulk":
        today = rows_bulk.setting_for(_op(kind, dtype, n))
        assert today is not None
        from dataclasses import replace

        if today.block < 1024:  # twice the threads: half the values a thread, the row's arithmetic over more warps
            out.append(bulk(kind, dtype, n, "rows_bulk today's, 1024 threads", replace(today, block=1024)))
        if kind == "softmax" and not today.registers:
            out.append(bulk(kind, dtype, n, "rows_bulk today's, 512 threads, registers",
                            replace(today, block=512, registers=True, early_copy=False)))
            out.append(bulk(kind, dtype, n, "rows_bulk today's, 1024 threads, registers",
                            replace(today, block=1024, registers=True, early_copy=False)))
    return out


def spilled(k) -> bool:
    """Whether ptxas spills registers of kernel ``k`` (sm_90a: its spill stores' bytes)."""
    from rows_forward import ptxas_info

    spill = ptxas_info(k).split(" / ")[-1]
    return spill.isdigit() and int(spill) > 0


def _op(kind: str, dtype: str, n: int):
    from bulkred_dialect import row_kernels

    return next(o for o in row_kernels.module(kind, None, n, dtype, **kwargs(kind, dtype)).walk()
                if o.name == "bulkred.normalize_rows")


def cells(args) -> list[tuple[str, str, str, int]]:
    return [c for c in CELLS if c[0] in args.parts]


def row(*cells) -> None:
    """One line of the probe's markdown table (an empty cell: ``| |``)."""
    print("|" + "".join(f" {c} |" if str(c) else " |" for c in cells), flush=True)


def header(*columns: str) -> None:
    """The table's head: its columns, a name ending in ``>`` right-aligned (``---:``)."""
    row(*(c.rstrip(">") for c in columns))
    row(*("---:" if c.endswith(">") else "---" for c in columns))


def dry_run(args) -> int:
    """Every candidate of every cell built for sm_90a and assembled; 1 where one fails."""
    t0 = time.time()
    header("dtype", "N>", "kind", "setting", "variant", "grid x threads (x cluster), regs / spill", "SASS / elem>",
           "build s>")
    failed = count = 0
    for _, kind, dtype, n in cells(args):
        for c in candidates(kind, dtype, n, dry=True):
            count += 1
            try:
                k, name, secs = build(kind, dtype, n, c, True)
                row(dtype, n, kind, c.label, name, RB.launch_of(k, TOTAL // n), sass_per_element(k, n, name), f"{secs:.2f}")
            except Exception as e:  # noqa: BLE001 - a candidate that does not build: the row says why
                failed += 1
                row(dtype, n, kind, c.label, "n/a", f"FAILED {type(e).__name__}: {str(e).splitlines()[0][:140]}", "", "")
    print(f"{count} kernels, {failed} failed, {time.time() - t0:.0f} s")
    return 1 if failed else 0


def reference(torch, kind: str, n: int, t: dict):
    """float64 y (cross_entropy: the loss rows) of the first CHECK_ROWS rows."""
    F = torch.nn.functional
    x = t["x"][:CHECK_ROWS]
    if kind == "softmax":
        return torch.softmax(x.double(), -1)
    if kind == "log_softmax":
        return torch.log_softmax(x.double(), -1)
    if kind == "rms_norm":
        return F.rms_norm(x.double(), (n,), t["w"].double(), EPS)
    if kind == "add_rms_norm":  # (h = x + residual rounded to x's type, as torch's add)
        return F.rms_norm((x + t["res"][:CHECK_ROWS]).double(), (n,), t["w"].double(), EPS)
    if kind == "layer_norm":
        return F.layer_norm(x.double(), (n,), t["w"].double(), t["b"].double(), EPS)
    return F.cross_entropy(x.double(), t["target"][:CHECK_ROWS], reduction="none")


def inputs(torch, kind: str, dtype: str, n: int) -> dict:
    m, x, y, w, b = cell_tensors(torch, n, dtype)
    t = {"m": m, "x": x, "y": y, "w": w, "b": b}
    if kind == "add_rms_norm":
        t["res"] = torch.randn(m, n, device=x.device).to(x.dtype)
    if kind == "cross_entropy":
        t["target"] = torch.randint(0, n, (m,), device=x.device)
    return t


def outputs(torch, kind: str, t: dict, rows: int | None) -> list:
    """Fresh outputs for the first ``rows`` rows (None: all): y (the loss rows and the mean), residual_out."""
    m = t["m"] if rows is None else rows
    x = t["x"][:m]
    if kind == "cross_entropy":
        return [torch.empty(m, device=x.device), torch.empty(1, device=x.device, dtype=x.dtype)]
    return [torch.empty_like(x)] + ([torch.empty_like(x)] if kind == "add_rms_norm" else [])


def call_args(kind: str, t: dict, outs: list, rows: int | None) -> list:
    """The kernel's arguments (row_kernels.module's order) on the first ``rows`` rows."""
    sl = slice(None) if rows is None else slice(0, rows)
    x = t["x"][sl]
    if kind == "cross_entropy":
        return [x, t["target"][sl], outs[0], outs[1]]
    if kind == "add_rms_norm":
        return [x, outs[0], t["res"][sl], outs[1], t["w"]]
    if kind == "rms_norm":
        return [x, outs[0], t["w"]]
    if kind == "layer_norm":
        return [x, outs[0], t["w"], t["b"]]
    return [x, outs[0]]


def check(torch, kind: str, t: dict, ref, k, outs: list, first: list | None, same: bool) -> tuple[float, str]:
    """(the error against float64: the largest over the largest magnitude, inf where
    residual_out differs from x + residual; the check's words)."""
    y = outs[0][:CHECK_ROWS].double()
    err = ((y - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item()
    words = []
    if kind == "add_rms_norm" and not torch.equal(outs[1][:CHECK_ROWS], t["x"][:CHECK_ROWS] + t["res"][:CHECK_ROWS]):
        err, words = float("inf"), ["h WRONG"]
    if kind == "cross_entropy":  # the kernel's mean against the float64 mean of its own loss rows
        want = outs[0].double().mean()
        err = max(err, ((outs[1].double()[0] - want).abs() / want.abs().clamp(min=1e-30)).item())
    sub = min(SUB, t["m"] // 2)
    part = outputs(torch, kind, t, sub)
    k(*call_args(kind, t, part, sub))
    torch.cuda.synchronize()
    rows = outs if kind != "cross_entropy" else outs[:1]  # (the mean of 37 rows is not the batch's)
    inv = all(torch.equal(a[:sub].contiguous().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(rows, part))
    words.append(f"err {err:.1e}" + ("" if inv else ", M-invariance FAILED"))
    if first is not None:
        bits = all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(outs, first))
        words.append("bits = default's" if bits else ("bits DIFFER (claimed the same)" if same else "bits differ"))
    return err, ", ".join(words)


def measure(args) -> int:
    import torch

    t0 = time.time()
    sms = RB.gpu_banner(torch)
    header("dtype", "N>", "kind", "setting", "variant", "grid x threads (x cluster), regs / spill, units at once", "GB/s>",
           "x copy>", "check")
    verdicts = []
    for _, kind, dtype, n in cells(args):
        if time.time() - t0 > args.budget_s:
            row(dtype, n, kind, "skipped: past the budget", "", "", "", "", "")
            verdicts.append(f"- {kind} {dtype} {n}: not measured (past --budget-s)")
            continue
        t = inputs(torch, kind, dtype, n)
        ref = reference(torch, kind, n, t)
        rows, calls, first, base_err = [], [], None, None
        for c in candidates(kind, dtype, n, dry=False):
            try:
                k, name, _ = build(kind, dtype, n, c, False)
                outs = outputs(torch, kind, t, None)
                k(*call_args(kind, t, outs, None))
                torch.cuda.synchronize()
                err, words = check(torch, kind, t, ref, k, outs, first, c.same)
                if first is None:
                    first, base_err = [o.clone() for o in outs], err
                ok = ("FAILED" not in words and "DIFFER" not in words and "WRONG" not in words
                      and err <= 2 * base_err + 1e-7)
                rows.append((c, name, RB.launch_of(k, t["m"], sms), words if ok else words + " (not sound)", ok))
                calls.append(lambda k=k, a=call_args(kind, t, outs, None): k(*a))
            except Exception as e:  # noqa: BLE001 - a candidate that does not build or launch: the row says why
                row(dtype, n, kind, c.label, "n/a", "", "", "", f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
        x = t["x"]
        copy_us, times = timed_in_turns(torch, lambda: torch.mul(x, 1.0, out=t["y"]), calls)
        copy = 2 * x.numel() * x.element_size() / copy_us / 1e3
        moved = {"cross_entropy": 1, "add_rms_norm": 4}.get(kind, 2) * x.numel() * x.element_size()
        ratios = []
        for (c, name, launch, words, ok), us in zip(rows, times):
            gbs = moved / us / 1e3
            ratios.append((c, gbs / copy, ok))
            row(dtype, n, kind, c.label, name, launch, f"{gbs:,.0f}", f"{gbs / copy:.3f}", words)
        row(dtype, n, "copy", "", "", "", f"{copy:,.0f}", "1.000", "")
        verdicts.append(verdict(kind, dtype, n, ratios))
        del t, ref, calls, first, rows
        torch.cuda.empty_cache()
    print(f"\nTo flip (per cell the fastest candidate whose checks passed, >= {WIN:.2f}x the default's speed):")
    for line in verdicts:
        print(line)
    print(f"probe time: {time.time() - t0:.0f} s")
    return 0


def verdict(kind: str, dtype: str, n: int, ratios: list[tuple[Candidate, float, bool]]) -> str:
    """One cell's line: the fastest sound candidate and its table entry where it beats the
    default (the first, its checks passed) by :data:`WIN`."""
    if not ratios or ratios[0][0].label != "default" or not ratios[0][2]:
        return f"- {kind} {dtype} {n}: the default did not run or failed its checks: nothing to compare"
    base = ratios[0][1]
    sound = [(c, r) for c, r, ok in ratios[1:] if ok]
    if not sound:
        return f"- {kind} {dtype} {n}: keep the default ({base:.3f} of copy; no other candidate passed its checks)"
    c, r = max(sound, key=lambda cr: cr[1])
    if r < WIN * base:
        return f"- {kind} {dtype} {n}: keep the default ({base:.3f} of copy; best other {c.label}, {r:.3f})"
    return f"- {kind} {dtype} {n}: {c.label}, {base:.3f} -> {r:.3f} of copy ({r / base:.3f}x): {c.flip}"


def main() -> int:
    args = parts_args(__doc__, tuple(c[0] for c in CELLS), "no GPU: build and assemble every candidate for sm_90a")
    return dry_run(args) if args.dry_run else measure(args)


if __name__ == "__main__":
    sys.exit(main())
