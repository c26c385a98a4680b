"""Fused reductions against torch on the GPU, same run, same data (issue 17).

Each row is one call of bulkred's fused API as a Python user writes it, on a torch tensor
on the GPU, beside every torch form that computes the same thing (each timed):

===============  ====================================  ===============================================
case             bulkred                               torch forms
===============  ====================================  ===============================================
vector_norm_inf  ``vector_norm(x, ord=inf, axis=a)``   ``x.abs().amax(d)``, ``linalg.vector_norm(x, inf, d)``
vector_norm_2    ``vector_norm(x, ord=2, axis=a)``     ``torch.linalg.vector_norm(x, 2, d)``
var_mean         ``var_mean(x, axis=a, correction=1)`` ``torch.var_mean(x, d, correction=1)``
argmax           ``argmax(x, axis=a)``                 ``torch.argmax(x, d)``
logsumexp        ``logsumexp(x, axis=a)``              ``torch.logsumexp(x, d)`` (d=0 of the flat x)
mean, std        ``mean(x, axis=a)``, ``std(.., 1)``   ``torch.mean``, ``torch.std(correction=1)``
===============  ====================================  ===============================================

(mean and std only with ``--cases``.) Forms: ``whole`` (x flat, [n], axis=None; torch's
logsumexp takes dim=0), ``last`` (x [n/4096, 4096], axis=-1) and ``first`` (the same x,
axis=0). Sizes are the input's bytes: 1M, 64M, 1G; dtypes float32 and bfloat16.

Two timings per call, each a median, with benchmarks/reductions_api.py's helpers:

* **GPU time per call**: ``--graph-calls`` calls in one CUDA graph (rotating over the
  input copies), replayed ``--replays`` times, CUDA events around each replay, divided by
  the calls: what the GPU spends, launch gaps shrunk to the graph's.
* **per call**: CUDA events around one call, the GPU idle before it: the call's host work
  and its kernels, as a Python user pays them. Median of ``--repeat`` calls.

GB/s is the input's bytes (read once) over the time. ``x fastest`` is the fastest torch
form's time over bulkred's (above 1: bulkred faster), for each timing separately; the
vector_norm_inf row also gives the ratio to ``x.abs().amax()`` (the unfused form).

Inputs are fresh ``torch.randn`` data (never zeros), enough copies rotated to span 200 MB
(over the H100's 50 MB L2) where that fits. Before timing, each result is checked once
against torch on the same input: argmax exactly (torch's first maximum; bfloat16 has ties),
the inf-norm exactly, the rest against float64 (relative error; the mean relative to the
mean magnitude, logsumexp to max(1, |ref|)) within 1e-5 (float32) or 8e-3 (bfloat16), or
within twice torch's own error where that is larger. A mismatch is printed in the row
instead of a speed; a missing or refusing bulkred function gives ``unsupported: <reason>``
(torch is timed anyway) and the run goes on.

Usage (on the GPU machine)::

    python3 benchmarks/fused.py                      # every case, form, dtype and size
    python3 benchmarks/fused.py --quick              # 1M and 1G, fewer repeats
    python3 benchmarks/fused.py --cases argmax,logsumexp --forms last --dtypes float32 --sizes 1G
    python3 benchmarks/fused.py --budget-s 300 --out DIR

Writes ``fused.{md,json}`` (and ``fused.png`` where matplotlib is installed) under
``--out`` (default ``$OUT``), and the JSON to ``--json PATH`` too. ``--budget-s``: no row
starts after that many seconds (the rest are listed as skipped); a SIGTERM (``timeout``)
also stops the run with what it has written. ``--dry-run`` prints the rows, no GPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))


def _reductions_api():
    """benchmarks/reductions_api.py, for its timing helpers (graph_us, call_us, RELAXED),
    L2_ROTATE and fmt: the module already loaded under that name, else loaded from its file
    (benchmarks/ is no package, and stays off sys.path)."""
    mod = sys.modules.get("reductions_api")
    if mod is None or not hasattr(mod, "graph_us"):
        spec = importlib.util.spec_from_file_location("reductions_api", os.path.join(_HERE, "reductions_api.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules["reductions_api"] = mod  # its dataclass looks its module up
        spec.loader.exec_module(mod)
    return mod


RA = _reductions_api()

SIZES = {"1M": 1 << 20, "64M": 64 << 20, "1G": 1 << 30}
QUICK_SIZES = ("1M", "1G")
DTYPES = ("float32", "bfloat16")
ITEMSIZE = {"float32": 4, "bfloat16": 2}
FORMS = {"whole": None, "last": -1, "first": 0}  # the reduced axis of x ([n] for whole, [n/4096, 4096] else)
COLS = 4096
TOL = {"float32": 1e-5, "bfloat16": 8e-3}
ABSMAX = "x.abs().amax()"


@dataclass(frozen=True)
class Case:
    name: str
    fn: str  # the bulkred function
    kwargs: dict = field(default_factory=dict)  # besides axis
    torch_forms: tuple = ()  # ((label, (torch, x, dim) -> result), ...): the first is the reference
    checks: tuple = ("rel",)  # per output: "exact", "index", "rel" (|ref|), "absmean" (mean |x|), "lse" (max(1, |ref|))
    baseline: str | None = None  # a torch form also compared on its own


def _d(dim):
    return {} if dim is None else {"dim": dim}


CASES = {
    c.name: c
    for c in [
        Case("vector_norm_inf", "vector_norm", {"ord": math.inf},
             ((ABSMAX, lambda t, x, d: x.abs().amax(**_d(d))),
              ("linalg.vector_norm(x, inf)", lambda t, x, d: t.linalg.vector_norm(x, math.inf, **_d(d)))),
             ("exact",), baseline=ABSMAX),
        Case("vector_norm_2", "vector_norm", {"ord": 2},
             (("linalg.vector_norm(x)", lambda t, x, d: t.linalg.vector_norm(x, 2, **_d(d))),)),
        Case("var_mean", "var_mean", {"correction": 1},
             (("var_mean(x, correction=1)", lambda t, x, d: t.var_mean(x, **_d(d), correction=1)),), ("rel", "absmean")),
        Case("argmax", "argmax", {}, (("argmax(x)", lambda t, x, d: t.argmax(x, **_d(d))),), ("index",)),
        Case("logsumexp", "logsumexp", {},
             (("logsumexp(x)", lambda t, x, d: t.logsumexp(x, 0 if d is None else d)),), ("lse",)),
        Case("mean", "mean", {}, (("mean(x)", lambda t, x, d: t.mean(x, **_d(d))),), ("absmean",)),
        Case("std", "std", {"correction": 1},
             (("std(x, correction=1)", lambda t, x, d: t.std(x, **_d(d), correction=1)),)),
    ]
}
DEFAULT_CASES = ("vector_norm_inf", "vector_norm_2", "var_mean", "argmax", "logsumexp")


def shape_of(form: str, dtype: str, nbytes: int) -> tuple[int, ...]:
    n = nbytes // ITEMSIZE[dtype]
    return (n,) if FORMS[form] is None else (max(1, n // COLS), COLS)


def copies_of(nbytes: int) -> int:
    c = max(2, min(64, math.ceil(RA.L2_ROTATE / nbytes)))
    return 2 if nbytes * c > (12 << 30) else c


def make_inputs(torch, shape, dtype: str, copies: int):
    """Fresh standard-normal data per copy (distinct-ish: float32 has no ties at the max in
    practice; bfloat16 has, and the check wants torch's first maximum)."""
    return [torch.randn(shape, device="cuda", dtype=getattr(torch, dtype)) for _ in range(copies)]


def _line(e: BaseException) -> str:
    return RA._line(e)


def bulkred_fn(bulkred, case: Case, form: str) -> Callable[[Any], Any]:
    """The bulkred call of a row; AttributeError at once where bulkred has no such function."""
    f = getattr(bulkred, case.fn)
    kw = dict(case.kwargs)
    if FORMS[form] is not None:
        kw["axis"] = FORMS[form]
    return lambda x: f(x, **kw)


def torch_fns(torch, case: Case, form: str) -> list[tuple[str, Callable[[Any], Any]]]:
    d = FORMS[form]
    return [(label, (lambda x, g=g: g(torch, x, d))) for label, g in case.torch_forms]


def _outs(v) -> tuple:
    return tuple(v) if isinstance(v, tuple | list) else (v,)


def check(torch, case: Case, form: str, got, x) -> tuple[bool, str]:
    """(passed, text): bulkred's result against torch's first form on the same input."""
    d = FORMS[form]
    ref_fn = case.torch_forms[0][1]
    got, want = _outs(got), _outs(ref_fn(torch, x, d))
    if len(got) != len(want):
        return False, f"WRONG: {len(got)} results (torch {len(want)})"
    notes, errs, terrs = [], [], []
    xd = refs = None
    for i, (g, w, how) in enumerate(zip(got, want, case.checks)):
        if not hasattr(g, "shape") or tuple(g.shape) != tuple(w.shape):
            return False, f"WRONG shape: result {i} is {list(getattr(g, 'shape', [type(g).__name__]))} (torch {list(w.shape)})"
        if g.dtype != w.dtype:
            notes.append(f"dtype {str(g.dtype).removeprefix('torch.')} (torch {str(w.dtype).removeprefix('torch.')})")
        if how == "index":
            gi, wi = g.long(), w
            if not torch.equal(gi, wi):
                return False, _index_mismatch(x, d, gi, wi)
            continue
        gd, wd = g.double(), w.double()
        if how == "exact":
            if not torch.equal(gd, wd):
                return False, f"WRONG: not equal (max diff {float((gd - wd).abs().max()):.3g})"
            continue
        if xd is None:
            xd = x.double()
            refs = _outs(ref_fn(torch, xd, d))
        rd = refs[i]
        if how == "absmean":
            scale = xd.abs().mean() if d is None else xd.abs().mean(d)
        elif how == "lse":
            scale = rd.abs().clamp_min(1.0)
        else:
            scale = rd.abs()
        scale = scale.clamp_min(1e-30)
        err = float(((gd - rd).abs() / scale).max())
        terr = float(((wd - rd).abs() / scale).max())
        if not math.isfinite(err):
            return False, f"WRONG: result {i} is not finite"
        errs.append(err)
        terrs.append(terr)
    del xd, refs
    dt = str(x.dtype).removeprefix("torch.")
    tol = TOL.get(dt, 1e-5)
    text = "ok"
    if errs:
        err, terr = max(errs), max(terrs)
        limit = max(tol, 2 * terr)
        if err > limit:
            return False, f"WRONG err={err:.1e} > {limit:.0e} (torch err={terr:.1e})"
        text = f"ok err={err:.1e} (torch {terr:.1e})"
    return True, text + ("; " + "; ".join(notes) if notes else "")


def _index_mismatch(x, d, gi, wi) -> str:
    """How bulkred's argmax differs from torch's: how many indices, and whether bulkred's
    point at the maximum (a tie, resolved other than by the first) or not."""
    bad = int((gi != wi).sum())
    flat, dim = (x.reshape(-1), 0) if d is None else (x, d)
    gi_ = gi.reshape(-1) if d is None else gi
    if not bool(((gi_ >= 0) & (gi_ < flat.shape[dim])).all()):
        return f"WRONG: {bad} of {wi.numel()} indices differ (out of range)"
    if d is None:
        at_max = bool(flat[gi_].eq(flat.amax()).all())
    else:
        at_max = bool(x.gather(d, gi.unsqueeze(d)).squeeze(d).eq(x.amax(d)).all())
    why = "at the max: a tie, not torch's first" if at_max else "not at the max"
    return f"WRONG: {bad} of {wi.numel()} indices differ ({why})"


def _variant(bulkred, case: Case, form: str, x) -> str:
    """The lowering's chosen variant, where the function takes explain=True."""
    try:
        kw = dict(case.kwargs)
        if FORMS[form] is not None:
            kw["axis"] = FORMS[form]
        text = getattr(bulkred, case.fn)(x, **kw, explain=True)
    except Exception:  # noqa: BLE001 - no explain: no variant in the row
        return ""
    if not isinstance(text, str):
        return ""
    return "+".join(ln.split("chosen:", 1)[1].strip() for ln in text.splitlines() if "chosen:" in ln)


def _refused(bulkred, case: Case, e: BaseException) -> str:
    if isinstance(e, AttributeError) and not hasattr(bulkred, case.fn):
        return f"unsupported: bulkred has no {case.fn}"
    if type(e).__name__ == "ReductionError":
        return f"unsupported: {_line(e)}"
    return f"unsupported: {type(e).__name__}: {_line(e)}"


def _time(torch, fn, inputs, gcalls: int, replays: int, repeat: int, row: dict, who: str) -> None:
    """``{who}_graph_us`` and ``{who}_call_us`` into the row (or ``{who}_graph_error``)."""
    try:
        RA.RELAXED.clear()
        row[f"{who}_graph_us"] = RA.graph_us(torch, fn, inputs, gcalls, replays)
        if RA.RELAXED:
            row[f"{who}_graph_note"] = "captured with capture_error_mode='relaxed'"
    except Exception as e:  # noqa: BLE001 - the row says so; the per-call time still comes
        row[f"{who}_graph_error"] = _line(e)
        torch.cuda.synchronize()
    row[f"{who}_call_us"] = RA.call_us(torch, fn, inputs, repeat)


def bench_one(torch, bulkred, case: Case, form: str, dtype: str, size: str, args) -> dict:
    shape = shape_of(form, dtype, SIZES[size])
    nbytes = math.prod(shape) * ITEMSIZE[dtype]
    row: dict[str, Any] = {"case": case.name, "form": form, "dtype": dtype, "size": size, "shape": list(shape),
                           "bytes": nbytes, "axis": str(FORMS[form])}
    inputs = make_inputs(torch, shape, dtype, copies_of(nbytes))
    big = nbytes >= (64 << 20)
    gcalls = args.graph_calls if not big else max(5, args.graph_calls // 5)
    repeat = args.repeat if not big else max(10, args.repeat // 4)
    row["torch"] = {}
    for label, fn in torch_fns(torch, case, form):  # torch first: its numbers are in every row
        t: dict[str, Any] = {}
        try:
            _time(torch, fn, inputs, gcalls, args.replays, repeat, t, "t")
        except Exception as e:  # noqa: BLE001
            t["error"] = _line(e)
            torch.cuda.synchronize()
        row["torch"][label] = {k.removeprefix("t_"): v for k, v in t.items()}
    try:
        fn_b = bulkred_fn(bulkred, case, form)
        t0 = time.perf_counter()
        got = fn_b(inputs[0])
        torch.cuda.synchronize()
        row["first_call_s"] = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001 - missing, refused or failed: the row says which, the run goes on
        row["status"] = _refused(bulkred, case, e)
        try:
            torch.cuda.synchronize()
        except Exception as e2:  # noqa: BLE001 - a broken context: later rows will say so too
            row["status"] += f" (then: {_line(e2)})"
        return finish(row)
    row["variant"] = _variant(bulkred, case, form, inputs[0])
    passed, row["check"] = check(torch, case, form, got, inputs[0])
    del got
    torch.cuda.empty_cache()
    if not passed:
        row["status"] = row["check"]
        return finish(row)
    _time(torch, fn_b, inputs, gcalls, args.replays, repeat, row, "bulkred")
    row["status"] = "ok"
    return finish(row)


def finish(row: dict) -> dict:
    """GB/s, the fastest torch form per timing and the ratios (torch time / bulkred time)."""
    nbytes = row.get("bytes")
    if not nbytes:
        return row
    for label, t in row.get("torch", {}).items():
        for what in ("graph", "call"):
            if t.get(f"{what}_us"):
                t[f"{what}_gbps"] = nbytes / t[f"{what}_us"] / 1e3
    for what in ("graph", "call"):
        timed = [(t[f"{what}_us"], label) for label, t in row.get("torch", {}).items() if t.get(f"{what}_us")]
        if timed:
            us, label = min(timed)
            row[f"torch_{what}_us"], row[f"torch_{what}_form"], row[f"torch_{what}_gbps"] = us, label, nbytes / us / 1e3
        b = row.get(f"bulkred_{what}_us")
        if b:
            row[f"bulkred_{what}_gbps"] = nbytes / b / 1e3
            if row.get(f"torch_{what}_us"):
                row[f"ratio_{what}"] = row[f"torch_{what}_us"] / b
            base = CASES[row["case"]].baseline if row["case"] in CASES else None
            if base and row.get("torch", {}).get(base, {}).get(f"{what}_us"):
                row[f"ratio_base_{what}"] = row["torch"][base][f"{what}_us"] / b
    return row


fmt = RA.fmt


def _status(r: dict) -> str:
    s = r.get("status", "")
    if s == "ok" and r.get("check"):
        s = r["check"]
    if r.get("bulkred_graph_error"):
        s += f" (graph: {r['bulkred_graph_error']})"
    if r.get("bulkred_graph_note"):
        s += f" ({r['bulkred_graph_note']})"
    return s.replace("|", "/")


def table(rows: list[dict], gpu: str) -> str:
    lines = [
        f"GPU: {gpu}",
        "",
        "x fastest: the fastest torch form's time over bulkred's (above 1: bulkred faster); GB/s: input bytes / time.",
        "",
        ("| case | form | dtype | size | shape | variant | bulkred GPU us | bulkred GB/s | fastest torch GPU us "
         "| torch GB/s | x fastest GPU | bulkred call us | fastest torch call us | x fastest call "
         f"| x {ABSMAX} GPU / call | check |"),
        "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        tg = fmt(r.get("torch_graph_us"), ".1f")
        if tg and len(r.get("torch", {})) > 1:
            tg += f" ({r['torch_graph_form']})"
        tc = fmt(r.get("torch_call_us"), ".1f")
        if tc and len(r.get("torch", {})) > 1:
            tc += f" ({r['torch_call_form']})"
        base = ""
        if r.get("ratio_base_graph") or r.get("ratio_base_call"):
            base = f"{fmt(r.get('ratio_base_graph'), '.2f')} / {fmt(r.get('ratio_base_call'), '.2f')}"
        lines.append(
            f"| {r['case']} | {r.get('form', '')} | {r.get('dtype', '')} | {r['size']} "
            f"| {'x'.join(map(str, r.get('shape', [])))} | {r.get('variant', '')} "
            f"| {fmt(r.get('bulkred_graph_us'), '.1f')} | {fmt(r.get('bulkred_graph_gbps'), '.0f')} | {tg} "
            f"| {fmt(r.get('torch_graph_gbps'), '.0f')} | {fmt(r.get('ratio_graph'), '.2f')} "
            f"| {fmt(r.get('bulkred_call_us'), '.1f')} | {tc} | {fmt(r.get('ratio_call'), '.2f')} | {base} "
            f"| {_status(r)} |"
        )
    return "\n".join(lines)


def torch_table(rows: list[dict]) -> str:
    """Every torch form's own times."""
    lines = ["| case | form | dtype | size | torch form | GPU us | GB/s | call us | note |",
             "| --- | --- | --- | --- | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        for label, t in r.get("torch", {}).items():
            lines.append(
                f"| {r['case']} | {r.get('form', '')} | {r.get('dtype', '')} | {r['size']} | `{label}` "
                f"| {fmt(t.get('graph_us'), '.1f')} | {fmt(t.get('graph_gbps'), '.0f')} | {fmt(t.get('call_us'), '.1f')} "
                f"| {(t.get('graph_error') or t.get('error') or t.get('graph_note') or '').replace('|', '/')} |"
            )
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    def key(r):
        return f"{r['case']}/{r.get('form', '')}/{r.get('dtype', '')}@{r['size']}"

    out = []
    timed = [r for r in rows if r.get("ratio_graph") is not None or r.get("ratio_call") is not None]
    for what, name in (("graph", "GPU time"), ("call", "per call")):
        slow = [f"{key(r)} ({r[f'ratio_{what}']:.2f}x)" for r in timed
                if r.get(f"ratio_{what}") is not None and r[f"ratio_{what}"] < 1.0]
        out.append(f">= 1.0x the fastest torch form, {name}: {len(timed)} rows timed; below: "
                   f"{', '.join(slow) if slow else 'none'}")
    base = [r for r in timed if r.get("ratio_base_graph") is not None]
    if base:
        out.append(f"vector_norm_inf against {ABSMAX} (GPU time): "
                   + ", ".join(f"{key(r)} {r['ratio_base_graph']:.2f}x" for r in base))
    big = [r for r in timed if r["size"] == "1G" and r.get("bulkred_graph_gbps")]
    if big:
        out.append("1 GiB, bulkred GB/s (GPU time): " + ", ".join(f"{key(r)} {r['bulkred_graph_gbps']:.0f}" for r in big))
    for prefix, what in (("WRONG", "wrong results (not timed)"), ("unsupported", "unsupported"),
                         ("error", "errors"), ("skipped", "skipped (time budget or stop)")):
        hit = [key(r) for r in rows if str(r.get("status", "")).startswith(prefix)]
        if hit:
            out.append(f"{what}: {len(hit)}: {', '.join(hit)}")
    return "\n".join(out)


def plot(rows: list[dict], path: str, gpu: str) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed on this machine"
    names = list(dict.fromkeys(r["case"] for r in rows))
    forms = [f for f in FORMS if any(r.get("form") == f for r in rows)] or list(FORMS)
    fig, axes = plt.subplots(max(1, len(names)), len(forms), figsize=(4 * len(forms), 3 * max(1, len(names))),
                             squeeze=False)
    for i, name in enumerate(names):
        for j, form in enumerate(forms):
            ax = axes[i][j]
            for dtype, color in zip(DTYPES, ("C0", "C1")):
                rs = sorted((r for r in rows if r["case"] == name and r.get("form") == form and r.get("dtype") == dtype
                             and r.get("bytes")), key=lambda r: r["bytes"])
                for who, style in (("bulkred", "-o"), ("torch", "--x")):
                    pts = [(r["bytes"], r[f"{who}_graph_gbps"]) for r in rs if r.get(f"{who}_graph_gbps")]
                    if pts:
                        ax.plot(*zip(*pts), style, color=color,
                                label=f"{who if who == 'bulkred' else 'fastest torch'} {dtype}")
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(SIZES.values()), list(SIZES))
            if not any(ln.get_label().startswith("bulkred") for ln in ax.lines):
                why = next((r.get("status", "") for r in rows if r["case"] == name and r.get("form") == form), "")
                ax.text(0.5, 0.5, f"bulkred: {why[:40]}", ha="center", va="center", transform=ax.transAxes, fontsize=7)
            ax.set_title(f"{name}, {form}", fontsize=9)
            ax.set_ylabel("GB/s read (GPU time)", fontsize=7)
            ax.grid(True, alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=6)
    fig.suptitle(f"bulkred fused reductions against torch on {gpu}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return f"plot: {path}"


def write(rows: list[dict], a, gpu: str, plot_too: bool = True) -> str:
    """fused.{md,json} (and .png) under ``a.out``, the JSON to ``a.json``; the plot's note."""
    note = "plot: at the end"
    doc = {"gpu": gpu, "args": {k: v for k, v in vars(a).items()}, "rows": rows}
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        if plot_too:
            try:
                note = plot(rows, os.path.join(a.out, "fused.png"), gpu)
            except Exception as e:  # noqa: BLE001 - the table matters more than the plot
                note = f"plot failed: {_line(e)}"
        with open(os.path.join(a.out, "fused.md"), "w") as f:
            f.write(report(rows, gpu) + "\n\n" + note + "\n")
        with open(os.path.join(a.out, "fused.json"), "w") as f:
            json.dump(doc, f, indent=1)
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    return note


def report(rows: list[dict], gpu: str) -> str:
    return table(rows, gpu) + "\n\n" + summary(rows) + "\n\nEvery torch form:\n\n" + torch_table(rows)


def sort_rows(rows: list[dict]) -> list[dict]:
    order = {n: i for i, n in enumerate(CASES)}
    forms = {f: i for i, f in enumerate(FORMS)}
    return sorted(rows, key=lambda r: (order.get(r["case"], 99), forms.get(r.get("form"), 9),
                                       DTYPES.index(r["dtype"]) if r.get("dtype") in DTYPES else 9,
                                       SIZES.get(r["size"], 0)))


def _list(s: str) -> list[str]:
    return [v.strip() for v in s.split(",") if v.strip()]


def parse(argv: list[str] | None = None) -> tuple[argparse.Namespace, list, list, list, list]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=",".join(DEFAULT_CASES), help=f"comma-separated, of: {', '.join(CASES)}, or all")
    p.add_argument("--forms", default=",".join(FORMS), help=f"comma-separated, of: {', '.join(FORMS)}")
    p.add_argument("--dtypes", default=",".join(DTYPES), help=f"comma-separated, of: {', '.join(DTYPES)}")
    p.add_argument("--sizes", default=None, help=f"comma-separated, of: {', '.join(SIZES)}, run in this order "
                   f"(default: all; --quick: {','.join(QUICK_SIZES)})")
    p.add_argument("--quick", action="store_true", help=f"sizes {','.join(QUICK_SIZES)} (unless --sizes), fewer repeats")
    p.add_argument("--graph-calls", type=int, default=50, help="calls per CUDA graph (a fifth at >= 64 MiB)")
    p.add_argument("--replays", type=int, default=7)
    p.add_argument("--repeat", type=int, default=100, help="per-call samples (a quarter at >= 64 MiB)")
    p.add_argument("--budget-s", type=float, default=None, help="start no new row after this many seconds")
    p.add_argument("--dry-run", action="store_true", help="print the rows' shapes and copies; no GPU")
    p.add_argument("--out", default=os.environ.get("OUT"), help="directory for fused.{md,json,png} (default $OUT)")
    p.add_argument("--json", default=None, help="also write the JSON here")
    a = p.parse_args(argv)
    if a.sizes is None:
        a.sizes = ",".join(QUICK_SIZES if a.quick else SIZES)
    if a.quick:
        a.graph_calls, a.replays, a.repeat = min(a.graph_calls, 30), min(a.replays, 5), min(a.repeat, 40)
    cases = list(CASES) if a.cases.strip() == "all" else _list(a.cases)
    forms, dtypes, sizes = _list(a.forms), _list(a.dtypes), _list(a.sizes)
    bad = ([c for c in cases if c not in CASES] + [f for f in forms if f not in FORMS]
           + [d for d in dtypes if d not in DTYPES] + [s for s in sizes if s not in SIZES])
    if bad:
        p.error(f"unknown case, form, dtype or size: {', '.join(bad)}")
    return a, cases, forms, dtypes, sizes


class _Stop(BaseException):  # not an Exception: the rows' own handlers let it through
    pass


def _on_term(signum, frame):
    raise _Stop(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    a, cases, forms, dtypes, sizes = parse(argv)
    plan = [(size, name, form, dtype) for size in sizes for name in cases for form in forms for dtype in dtypes]
    if a.dry_run:
        for size, name, form, dtype in plan:
            shape = shape_of(form, dtype, SIZES[size])
            nbytes = math.prod(shape) * ITEMSIZE[dtype]
            print(f"{size:>4} {name:>15} {form:>5} {dtype:>8} shape {shape} bytes {nbytes} copies {copies_of(nbytes)} "
                  f"torch: {'; '.join(label for label, _ in CASES[name].torch_forms)}")
        return 0

    import torch

    import bulkred_dialect as bulkred

    gpu = f"{torch.cuda.get_device_name()} (torch {torch.__version__})"
    print(f"fused: {gpu}; cases {','.join(cases)}; forms {','.join(forms)}; dtypes {','.join(dtypes)}; "
          f"sizes {','.join(sizes)}; {len(plan)} rows", flush=True)
    old = signal.signal(signal.SIGTERM, _on_term)
    rows: list[dict] = []
    t0 = time.time()
    stopped = None
    last_size = None
    try:
        for size, name, form, dtype in plan:
            if a.out and last_size is not None and size != last_size:
                write(rows, a, gpu, plot_too=False)  # a run cut short still leaves its rows
            last_size = size
            head = {"case": name, "form": form, "dtype": dtype, "size": size}
            if stopped or (a.budget_s is not None and time.time() - t0 > a.budget_s):
                why = stopped or f"past the time budget of {a.budget_s:.0f} s"
                rows.append({**head, "status": f"skipped: {why}"})
                continue
            try:
                r = bench_one(torch, bulkred, CASES[name], form, dtype, size, a)
            except _Stop as e:
                stopped = f"stopped by {e}"
                rows.append({**head, "status": f"skipped: {stopped}"})
                continue
            except Exception as e:  # noqa: BLE001 - one row says what broke; the others run
                r = {**head, "status": f"error: {type(e).__name__}: {_line(e)}"}
                traceback.print_exc(limit=4)
            rows.append(r)
            print(
                f"{size:>4} {name:>15} {form:>5} {dtype:>8} GPU {fmt(r.get('bulkred_graph_us'), '9.1f'):>9} us "
                f"(torch {fmt(r.get('torch_graph_us'), '9.1f'):>9}, x{fmt(r.get('ratio_graph'), '.2f'):>5}) "
                f"call {fmt(r.get('bulkred_call_us'), '8.1f'):>8} us (torch {fmt(r.get('torch_call_us'), '8.1f'):>8}, "
                f"x{fmt(r.get('ratio_call'), '.2f'):>5}) {fmt(r.get('bulkred_graph_gbps'), '.0f'):>5} GB/s  "
                f"{_status(r)}",
                flush=True,
            )
            try:
                torch.cuda.empty_cache()
            except Exception as e:  # noqa: BLE001 - a broken context: the next row says so
                print(f"empty_cache: {_line(e)}", flush=True)
    except _Stop as e:
        stopped = f"stopped by {e}"
        done = {(r["size"], r["case"], r.get("form"), r.get("dtype")) for r in rows}
        rows += [{"case": n, "form": f, "dtype": d, "size": s, "status": f"skipped: {stopped}"}
                 for s, n, f, d in plan if (s, n, f, d) not in done]
    finally:
        signal.signal(signal.SIGTERM, old)
    rows = sort_rows(rows)
    print("\n" + report(rows, gpu) + f"\n\nbenchmark time: {time.time() - t0:.0f} s" +
          (f" ({stopped})" if stopped else ""), flush=True)
    if a.out or a.json:
        print(write(rows, a, gpu))
    return 0 if all(not str(r.get("status", "")).startswith(("error", "WRONG")) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
