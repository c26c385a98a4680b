"""The reduction API against torch on the GPU, same run, same data (issue 16, section 4).

Each case is one ``bulkred.<kind>(x, axis=...)`` call as a Python user writes it, on a
torch tensor on the GPU, beside the torch call that computes the same thing:

=========  ==================================================  ====================
case       bulkred                                             torch
=========  ==================================================  ====================
sum        ``bulkred.sum(x)``, x float32 1-D                   ``torch.sum(x)``
amax       ``bulkred.max(x)``                                  ``torch.amax(x)``
rowsum     ``bulkred.sum(x, axis=1)``, x [M, N]                ``torch.sum(x, 1)``
colsum     ``bulkred.sum(x, axis=0)``                          ``torch.sum(x, 0)``
middle     ``bulkred.sum(x, axis=1)``, x [64, R, 256]          ``torch.sum(x, 1)``
axes02     ``bulkred.sum(x, axis=(0, 2))``, x [64, R, 256]     ``torch.sum(x, (0, 2))``
t_sum0     ``bulkred.sum(x.t(), axis=0)`` (a transposed view)  ``x.t().sum(0)``
t_sum1     ``bulkred.sum(x.t(), axis=1)``, x [M, 1024]         ``x.t().sum(1)``
p3_sum2    ``bulkred.sum(v, axis=2)``, v = x.permute(0, 2, 1)  ``v.sum(2)``
sum_f16    ``bulkred.sum(x)``, float16 (bf16, f64 alike)       ``torch.sum(x)``
sum_i8     ``bulkred.sum(x)``, int8 (an int64 result)          ``torch.sum(x)``
any_bool   ``bulkred.any(x)``, bool                            ``torch.any(x)``
=========  ==================================================  ====================

Sizes are the input's bytes: 4K, 64K, 1M, 16M, 64M, 256M, 1G (2-D shapes near square up
to 4096 columns, t_sum1's [M, 1024]; [64, R, 256] needs at least 64 KiB). The permuted
views (t_sum0, t_sum1, p3_sum2) are analyzed in stride order (docs/scopes.md): t_sum1 is
the column sum of x (issue 23, section 4: it ran ``grid_gather`` before, 0.26x torch at
1 GiB), p3_sum2 the middle axis of x, as the ``middle`` case. Two timings per call, each
a median:

* **GPU time per call**: ``--graph-calls`` calls captured in one CUDA graph (rotating
  over the input copies), the graph replayed ``--replays`` times with CUDA events around
  each replay, divided by the number of calls. Launch gaps shrink to the graph's; this
  is what the GPU spends.
* **per call**: CUDA events around one call, the GPU idle before it (synchronized), as a
  Python user pays it: the call's host work (checks, allocating the result, the launch)
  and the kernels. Median of ``--repeat`` calls of each, bulkred's and torch's taking
  turns (so that a change of the host's or the GPU's pace moves both alike).

Inputs are fresh random data (``torch.randn``, random ints and bools), several copies
rotated so that the working set is at least 200 MB (over the H100's 50 MB L2) at sizes
where that fits. Before timing, each result is checked against torch (sums against
float64; max, any and integer sums exactly). GB/s counts the bytes read (the input once).
A case the API refuses prints ``unsupported: <reason>`` in its row; torch is timed anyway.

Usage (on the GPU machine)::

    python3 benchmarks/reductions_api.py                     # every case and size
    python3 benchmarks/reductions_api.py --quick             # 64K, 16M, 1G; fewer repeats
    python3 benchmarks/reductions_api.py --cases sum,colsum --sizes 4K,1G --out DIR

Writes ``reductions_api.{md,json}`` (and ``reductions_api.png`` when matplotlib is there)
under ``--out`` (default ``$OUT``). benchmarks/reductions.py (the kernels launched
directly, tools/gpu.sh compare) is unchanged.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SIZES = {
    "4K": 4 << 10, "64K": 64 << 10, "1M": 1 << 20, "16M": 16 << 20, "64M": 64 << 20, "256M": 256 << 20, "1G": 1 << 30,
}
QUICK_SIZES = ("64K", "16M", "1G")
L2_ROTATE = 200 << 20  # bytes of input copies to rotate over (H100 L2: 50 MB)


@dataclass(frozen=True)
class Case:
    name: str
    dtype: str
    layout: str  # "1d", "2d", "2d1024" ([M, 1024]), "3d" ([64, R, 256])
    kind: str  # the bulkred function
    axis: Any
    torch_fn: Callable[[Any, Any], Any]  # (torch, x) -> result
    transpose: bool = False  # the input is x.t()
    perm: tuple[int, ...] | None = None  # the input is x.permute(*perm)
    kw: tuple = ()  # the bulkred call's options and keepdims, as (name, value) pairs
    out: bool = False  # both calls write into out= (torch_fn takes (torch, x, out)), made once


CASES = {
    c.name: c
    for c in [
        Case("sum", "float32", "1d", "sum", None, lambda t, x: t.sum(x)),
        Case("amax", "float32", "1d", "max", None, lambda t, x: t.amax(x)),
        Case("rowsum", "float32", "2d", "sum", 1, lambda t, x: t.sum(x, 1)),
        Case("colsum", "float32", "2d", "sum", 0, lambda t, x: t.sum(x, 0)),
        Case("middle", "float32", "3d", "sum", 1, lambda t, x: t.sum(x, 1)),
        Case("axes02", "float32", "3d", "sum", (0, 2), lambda t, x: t.sum(x, (0, 2))),
        Case("t_sum0", "float32", "2d", "sum", 0, lambda t, x: x.sum(0), transpose=True),
        Case("t_sum1", "float32", "2d1024", "sum", 1, lambda t, x: x.sum(1), transpose=True),
        Case("p3_sum2", "float32", "3d", "sum", 2, lambda t, x: x.sum(2), perm=(0, 2, 1)),
        Case("sum_f16", "float16", "1d", "sum", None, lambda t, x: t.sum(x)),
        Case("sum_bf16", "bfloat16", "1d", "sum", None, lambda t, x: t.sum(x)),
        Case("sum_f64", "float64", "1d", "sum", None, lambda t, x: t.sum(x)),
        Case("sum_i8", "int8", "1d", "sum", None, lambda t, x: t.sum(x)),
        Case("any_bool", "bool", "1d", "any", None, lambda t, x: t.any(x)),
        # options (issue 29: an option must not double the cost): each a key of its own
        Case("norm_inf", "float32", "1d", "vector_norm", None, lambda t, x: t.linalg.vector_norm(x, math.inf),
             kw=(("ord", math.inf),)),
        Case("norm_3", "float32", "2d", "vector_norm", 1, lambda t, x: t.linalg.vector_norm(x, 3, dim=1), kw=(("ord", 3),)),
        Case("aminmax", "float32", "1d", "aminmax", None, lambda t, x: t.aminmax(x)),
        Case("std_mean1", "float32", "2d", "std_mean", 1, lambda t, x: t.std_mean(x, 1), kw=(("correction", 1),)),
        Case("var_mean0", "float32", "2d", "var_mean", 0, lambda t, x: t.var_mean(x, 0, correction=0)),
        Case("max_dim", "float32", "2d", "max_with_indices", 1, lambda t, x: t.max(x, 1)),
        Case("sum_out", "float32", "2d", "sum", 1, lambda t, x, out: t.sum(x, 1, out=out), out=True),
        Case("sum_keepdims", "float32", "2d", "sum", 1, lambda t, x: t.sum(x, 1, keepdim=True), kw=(("keepdims", True),)),
    ]
}
OPTION_CASES = ("norm_inf", "norm_3", "aminmax", "std_mean1", "var_mean0", "max_dim", "sum_out", "sum_keepdims")
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int8": 1, "bool": 1}


def shape_of(case: Case, nbytes: int) -> tuple[int, ...] | None:
    n = nbytes // ITEMSIZE[case.dtype]
    if case.layout == "1d":
        return (n,)
    if case.layout == "2d":
        cols = min(4096, max(32, 1 << math.ceil(math.log2(math.sqrt(n)))))
        return (max(1, n // cols), cols)
    if case.layout == "2d1024":
        return (max(1, n // 1024), 1024)
    r = n // (64 * 256)
    return (64, r, 256) if r >= 1 else None


def make_inputs(torch, case: Case, shape, copies: int):
    out = []
    for _ in range(copies):
        if case.dtype == "int8":
            x = torch.randint(-128, 128, shape, dtype=torch.int8, device="cuda")
        elif case.dtype == "bool":
            x = torch.randint(0, 1 << 20, shape, dtype=torch.int32, device="cuda") == 0
        else:
            x = torch.randn(shape, device="cuda", dtype=getattr(torch, case.dtype))
        out.append(x.t() if case.transpose else x.permute(*case.perm) if case.perm else x)
    return out


def view_of(case: Case) -> str:
    return "transposed" if case.transpose else f"permuted {case.perm}" if case.perm else "contiguous"


def check(torch, case: Case, got, x) -> str:
    """The bulkred result against torch: float sums against float64 (relative to the sum
    of magnitudes, within the output's rounding), the rest exactly; a case with options
    or a pair, each result against torch's within 1e-4 (relative to the largest)."""
    want = case.torch_fn(torch, x) if not case.out else case.torch_fn(torch, x, torch.empty_like(got))
    if isinstance(want, tuple) or case.kw or case.out:
        for g, w in zip(tuple(got) if isinstance(got, tuple) else (got,), tuple(want) if isinstance(want, tuple) else (want,)):
            if tuple(g.shape) != tuple(w.shape) or g.dtype != w.dtype:
                return f"WRONG shape/dtype {g.dtype}{list(g.shape)} (torch {w.dtype}{list(w.shape)})"
            scale = max(float(w.double().abs().max()), 1.0) if w.numel() else 1.0
            if not torch.allclose(g.double(), w.double(), rtol=1e-4, atol=1e-4 * scale):
                return "WRONG (not within 1e-4 of torch)"
        return "ok"
    if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
        return f"WRONG shape/dtype {got.dtype}{list(got.shape)} (torch {want.dtype}{list(want.shape)})"
    if not got.dtype.is_floating_point or case.kind == "max":
        return "ok" if torch.equal(got, want) else "WRONG (not equal)"
    ref = case.torch_fn(torch, x.double())
    mag = case.torch_fn(torch, x.double().abs())
    err = float(((got.double() - ref).abs() / mag.clamp_min(1e-30)).max())
    tol = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 1e-5, "float64": 1e-12}[case.dtype]
    return f"ok err={err:.1e}" if err <= tol else f"WRONG err={err:.1e} > {tol:.0e}"


def graph_us(torch, fn, inputs, calls: int, replays: int) -> float:
    """GPU time per call: ``calls`` calls in one CUDA graph, replayed, median per call."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(3):
            fn(inputs[i % len(inputs)])
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    try:
        g = _capture(torch, fn, inputs, calls)
    except Exception:  # noqa: BLE001 - once more, letting other threads' CUDA calls be (a note in the row)
        torch.cuda.synchronize()
        g = _capture(torch, fn, inputs, calls, capture_error_mode="relaxed")
        RELAXED.append(True)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / calls)
    del g
    return statistics.median(times)


RELAXED: list[bool] = []  # set when a capture needed capture_error_mode="relaxed"


def _capture(torch, fn, inputs, calls: int, **kw):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, **kw):
        for i in range(calls):
            fn(inputs[i % len(inputs)])
    return g


def _timed_us(torch, fn, x) -> float:
    """Events around one call of ``fn(x)``, the GPU idle before it (synchronized)."""
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    fn(x)
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3


def call_us(torch, fn, inputs, repeat: int) -> float:
    """Per call: events around one call, the GPU idle before it; median."""
    for i in range(3):
        fn(inputs[i % len(inputs)])
    return statistics.median(_timed_us(torch, fn, inputs[i % len(inputs)]) for i in range(repeat))


def call_pair_us(torch, fn_a, fn_b, inputs, repeat: int) -> tuple[float, float]:
    """:func:`call_us` of two calls taking turns (a, b, a, b, ...): each call sees the
    same host and GPU state as the other (clocks, caches, the host's load); medians."""
    for i in range(3):
        fn_a(inputs[i % len(inputs)])
        fn_b(inputs[i % len(inputs)])
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(repeat):
        x = inputs[i % len(inputs)]
        for k in (0, 1) if i % 2 == 0 else (1, 0):  # who goes first alternates too
            times[k].append(_timed_us(torch, (fn_a, fn_b)[k], x))
    return statistics.median(times[0]), statistics.median(times[1])


def _line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return (s[0] if s else type(e).__name__)[:160]


def variant_of(bulkred, case: Case, x) -> str:
    try:
        text = getattr(bulkred, case.kind)(x, **_axis(case), **dict(case.kw), explain=True)
    except Exception:  # noqa: BLE001 - the row says unsupported from the call itself
        return ""
    chosen = [ln.split("chosen:", 1)[1].strip() for ln in str(text).splitlines() if "chosen:" in ln]
    return "+".join(chosen)


def _axis(case: Case) -> dict:
    return {} if case.axis is None else {"axis": case.axis}


def bench_one(torch, bulkred, case: Case, size: str, args) -> dict:
    nbytes = SIZES[size]
    shape = shape_of(case, nbytes)
    row: dict[str, Any] = {"case": case.name, "size": size, "dtype": case.dtype, "kind": case.kind, "axis": str(case.axis)}
    if shape is None:
        row["status"] = "n/a: [64, R, 256] needs 64 KiB"
        return row
    nbytes = math.prod(shape) * ITEMSIZE[case.dtype]
    row.update(shape=list(shape), bytes=nbytes)
    copies = max(2, min(64, math.ceil(L2_ROTATE / nbytes)))
    if nbytes * copies > (12 << 30):
        copies = 2
    inputs = make_inputs(torch, case, shape, copies)
    big = nbytes >= (64 << 20)
    gcalls = args.graph_calls if not big else max(5, args.graph_calls // 5)
    repeat = args.repeat if not big else max(10, args.repeat // 4)
    kw = {**_axis(case), **dict(case.kw)}
    if case.out:  # out= made once, of torch's result (both write it)
        out = case.torch_fn(torch, inputs[0], torch.empty(0, device="cuda")).clone()
        fn_b = lambda x: getattr(bulkred, case.kind)(x, **kw, out=out)
        fn_t = lambda x: case.torch_fn(torch, x, out)
    else:
        fn_b = lambda x: getattr(bulkred, case.kind)(x, **kw)
        fn_t = lambda x: case.torch_fn(torch, x)
    row["view"] = view_of(case)
    # torch first: its numbers are in every row, bulkred's unless refused
    try:
        if not args.call_only:
            row["torch_graph_us"] = graph_us(torch, fn_t, inputs, gcalls, args.replays)
    except Exception as e:  # noqa: BLE001
        row["torch_graph_error"] = _line(e)
    try:
        t0 = time.perf_counter()
        got = fn_b(inputs[0])
        torch.cuda.synchronize()
        row["first_call_s"] = time.perf_counter() - t0
    except bulkred.ReductionError as e:
        row["status"] = f"unsupported: {_line(e)}"
        row["torch_call_us"] = call_us(torch, fn_t, inputs, repeat)
        return _finish(row, nbytes)
    except Exception as e:  # noqa: BLE001 - reported in the row, the run goes on
        row["status"] = f"error: {type(e).__name__}: {_line(e)}"
        torch.cuda.synchronize()
        row["torch_call_us"] = call_us(torch, fn_t, inputs, repeat)
        return _finish(row, nbytes)
    row["variant"] = variant_of(bulkred, case, inputs[0])
    row["check"] = check(torch, case, got, inputs[0])
    try:
        RELAXED.clear()
        if not args.call_only:
            row["bulkred_graph_us"] = graph_us(torch, fn_b, inputs, gcalls, args.replays)
        if RELAXED:
            row["bulkred_graph_note"] = "captured with capture_error_mode='relaxed'"
    except Exception as e:  # noqa: BLE001
        row["bulkred_graph_error"] = _line(e)
        torch.cuda.synchronize()
    # per call: bulkred and torch taking turns, so that both see the same conditions
    row["bulkred_call_us"], row["torch_call_us"] = call_pair_us(torch, fn_b, fn_t, inputs, repeat)
    row["status"] = "ok" if row["check"].startswith("ok") else row["check"]
    return _finish(row, nbytes)


def _finish(row: dict, nbytes: int) -> dict:
    for what in ("graph", "call"):
        b, t = row.get(f"bulkred_{what}_us"), row.get(f"torch_{what}_us")
        if b:
            row[f"bulkred_{what}_gbps"] = nbytes / b / 1e3
        if t:
            row[f"torch_{what}_gbps"] = nbytes / t / 1e3
        if b and t:
            row[f"ratio_{what}"] = t / b
    return row


def fmt(v, spec: str) -> str:
    return "" if v is None else format(v, spec)


def table(rows: list[dict], gpu: str) -> str:
    lines = [
        f"GPU: {gpu}",
        "",
        ("| case | size | shape | variant | bulkred GPU us | torch GPU us | torch/bulkred GPU | bulkred GB/s | torch GB/s "
        "| bulkred call us | torch call us | torch/bulkred call | check |"),
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        status = r.get("status", "")
        if "graph_error" in " ".join(r):
            status += " (graph: " + (r.get("bulkred_graph_error") or r.get("torch_graph_error") or "") + ")"
        if r.get("bulkred_graph_note"):
            status += f" ({r['bulkred_graph_note']})"
        lines.append(
            f"| {r['case']} | {r['size']} | {'x'.join(map(str, r.get('shape', [])))} | {r.get('variant', '')} "
            f"| {fmt(r.get('bulkred_graph_us'), '.1f')} | {fmt(r.get('torch_graph_us'), '.1f')} "
            f"| {fmt(r.get('ratio_graph'), '.2f')} | {fmt(r.get('bulkred_graph_gbps'), '.0f')} "
            f"| {fmt(r.get('torch_graph_gbps'), '.0f')} | {fmt(r.get('bulkred_call_us'), '.1f')} "
            f"| {fmt(r.get('torch_call_us'), '.1f')} | {fmt(r.get('ratio_call'), '.2f')} | {status} |"
        )
    return "\n".join(lines)


def targets(rows: list[dict]) -> str:
    """The issue's targets: >= 1.0x torch in both timings everywhere; >= 2.85 TB/s at 1 GiB
    for every float32 form (GPU time)."""
    out = []
    timed = [r for r in rows if r.get("ratio_graph") is not None or r.get("ratio_call") is not None]
    slow = [
        f"{r['case']}@{r['size']} ({what} {r[f'ratio_{what}']:.2f}x)"
        for r in timed for what in ("graph", "call") if r.get(f"ratio_{what}") is not None and r[f"ratio_{what}"] < 1.0
    ]
    out.append(f">= 1.0x torch: {len(timed)} rows timed; below: {', '.join(slow) if slow else 'none'}")
    big = [r for r in rows if r["size"] == "1G" and r["dtype"] == "float32"]
    miss = [f"{r['case']} ({fmt(r.get('bulkred_graph_gbps'), '.0f') or r.get('status')})" for r in big
            if (r.get("bulkred_graph_gbps") or 0) < 2850]
    if big:
        out.append(f">= 2.85 TB/s at 1 GiB (float32, GPU time): {len(big) - len(miss)} of {len(big)} met; "
                   f"missed: {', '.join(miss) if miss else 'none'}")
    refused = [f"{r['case']}@{r['size']}" for r in rows if str(r.get("status", "")).startswith(("unsupported", "error"))]
    if refused:
        out.append(f"not timed (refused or failed): {', '.join(refused)}")
    return "\n".join(out)


def plot(rows: list[dict], path: str, gpu: str) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed on this machine"
    names = list(dict.fromkeys(r["case"] for r in rows))
    cols = 3
    fig, axes = plt.subplots(math.ceil(len(names) / cols), cols, figsize=(12, 3.2 * math.ceil(len(names) / cols)),
                             squeeze=False)
    for ax, name in zip(axes.flat, names):
        rs = [r for r in rows if r["case"] == name and r.get("bytes")]
        for who, style in (("bulkred", "-o"), ("torch", "--x")):
            pts = [(r["bytes"], r.get(f"{who}_graph_gbps")) for r in rs if r.get(f"{who}_graph_gbps")]
            if pts:
                ax.plot(*zip(*pts), style, label=who)
        ax.set_xscale("log", base=2)
        ax.set_title(name, fontsize=9)
        ax.set_ylabel("GB/s read (GPU time)", fontsize=7)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.suptitle(f"bulkred API against torch on {gpu}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return f"plot: {path}"


def write(rows: list[dict], a, gpu: str, plot_too: bool = True) -> str:
    """reductions_api.{md,json} (and .png) under ``a.out``; returns the plot's note."""
    os.makedirs(a.out, exist_ok=True)
    note = plot(rows, os.path.join(a.out, "reductions_api.png"), gpu) if plot_too else "plot: at the end"
    with open(os.path.join(a.out, "reductions_api.md"), "w") as f:
        f.write(table(rows, gpu) + "\n\n" + targets(rows) + "\n\n" + note + "\n")
    with open(os.path.join(a.out, "reductions_api.json"), "w") as f:
        json.dump({"gpu": gpu, "args": vars(a), "rows": rows}, f, indent=1)
    return note


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}")
    p.add_argument("--sizes", default=None, help=f"comma-separated, of: {', '.join(SIZES)} (default: all; --quick: "
                   f"{','.join(QUICK_SIZES)})")
    p.add_argument("--quick", action="store_true", help=f"sizes {','.join(QUICK_SIZES)} (unless --sizes), fewer repeats")
    p.add_argument("--graph-calls", type=int, default=50, help="calls per CUDA graph (a fifth at >= 64 MiB)")
    p.add_argument("--replays", type=int, default=7)
    p.add_argument("--repeat", type=int, default=100, help="per-call samples (a quarter at >= 64 MiB)")
    p.add_argument("--budget-s", type=float, default=None, help="start no new row after this many seconds")
    p.add_argument("--dry-run", action="store_true", help="print the rows' shapes and copies; no GPU")
    p.add_argument("--call-only", action="store_true", help="per call only (no CUDA graphs: no GPU-time column)")
    p.add_argument("--options", action="store_true", help=f"the cases with options only ({', '.join(OPTION_CASES)})")
    p.add_argument("--out", default=os.environ.get("OUT"))
    a = p.parse_args(argv)
    if a.sizes is None:
        a.sizes = ",".join(QUICK_SIZES if a.quick else SIZES)
    if a.quick:
        a.graph_calls, a.replays, a.repeat = min(a.graph_calls, 30), min(a.replays, 5), min(a.repeat, 40)
    cases = [c.strip() for c in (",".join(OPTION_CASES) if a.options else a.cases).split(",") if c.strip()]
    sizes = [s.strip() for s in a.sizes.split(",") if s.strip()]
    bad = [c for c in cases if c not in CASES] + [s for s in sizes if s not in SIZES]
    if bad:
        p.error(f"unknown case or size: {', '.join(bad)}")

    if a.dry_run:
        for size in sizes:
            for name in cases:
                shape = shape_of(CASES[name], SIZES[size])
                nbytes = math.prod(shape) * ITEMSIZE[CASES[name].dtype] if shape else 0
                copies = max(2, min(64, math.ceil(L2_ROTATE / nbytes))) if nbytes else 0
                print(f"{size:>5} {name:>9} {CASES[name].dtype:>9} shape {shape} bytes {nbytes} copies {copies}")
        return 0

    import torch

    import bulkred_dialect as bulkred

    gpu = f"{torch.cuda.get_device_name()} (torch {torch.__version__})"
    print(f"reductions_api: {gpu}; cases {','.join(cases)}; sizes {','.join(sizes)}", flush=True)
    rows = []
    t0 = time.time()
    for size in sizes:
        for name in cases:
            if a.budget_s is not None and time.time() - t0 > a.budget_s:
                rows.append({"case": name, "size": size, "dtype": CASES[name].dtype,
                             "status": f"skipped: past the time budget of {a.budget_s:.0f} s"})
                continue
            try:
                r = bench_one(torch, bulkred, CASES[name], size, a)
            except Exception as e:  # noqa: BLE001 - one row says what broke; the others run
                r = {"case": name, "size": size, "dtype": CASES[name].dtype, "status": f"error: {type(e).__name__}: {_line(e)}"}
                traceback.print_exc(limit=4)
            rows.append(r)
            print(
                f"{size:>5} {name:>9} {r.get('variant', ''):>16} GPU {fmt(r.get('bulkred_graph_us'), '9.1f'):>9} us "
                f"(torch {fmt(r.get('torch_graph_us'), '9.1f'):>9}, x{fmt(r.get('ratio_graph'), '.2f'):>5}) "
                f"call {fmt(r.get('bulkred_call_us'), '8.1f'):>8} us (torch {fmt(r.get('torch_call_us'), '8.1f'):>8}, "
                f"x{fmt(r.get('ratio_call'), '.2f'):>5}) {fmt(r.get('bulkred_graph_gbps'), '.0f'):>5} GB/s  "
                f"{r.get('status', '')}",
                flush=True,
            )
            torch.cuda.empty_cache()
        if a.out:  # after each size: a run cut short still leaves its rows
            write(rows, a, gpu, plot_too=False)
    order = {n: i for i, n in enumerate(CASES)}
    rows.sort(key=lambda r: (order.get(r["case"], 99), SIZES.get(r["size"], 0)))
    md = table(rows, gpu)
    summary = targets(rows)
    print("\n" + md + "\n\n" + summary + f"\n\nbenchmark time: {time.time() - t0:.0f} s", flush=True)
    if a.out:
        print(write(rows, a, gpu))
    return 0 if all(not str(r.get("status", "")).startswith(("error", "WRONG")) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
