"""Row normalizations on the GPU (docs/rows.md), every column in one run: the copy
kernel, torch eager, torch.compile, Liger, Quack and bulkred, on the same tensors.

Columns (each optional: where it cannot run, its cells say ``n/a`` and the notes why):

==========  =====================================================================
copy        ``torch.mul(x, 1.0, out=y)``: the memory's speed on this GPU (read x,
            write y); the other columns' ceiling
eager       ``torch.softmax(x, -1)``, ``F.log_softmax``, ``F.rms_norm(x, (n,), w,
            eps)``, ``F.layer_norm(x, (n,), w, b, eps)``, ``h = x + r`` then
            ``F.rms_norm(h, ...)``, ``F.cross_entropy(x, target)``
compile     the same functions under ``torch.compile(dynamic=False)``
liger       Liger-Kernel (Triton): ``liger_softmax(x)``, ``liger_rms_norm(x, w, eps,
            in_place=False)``, ``liger_layer_norm(x, w, b, eps)``
quack       Quack (CuTe DSL): ``softmax_fwd(x)``, ``rmsnorm_fwd(x, w_f32)``,
            ``rmsnorm_fwd(x, w_f32, residual=r)``, ``layernorm_fwd(x, w_f32, b_f32)``,
            ``cross_entropy_fwd(x, target)`` (each row's loss); backward
            ``softmax_bwd(dy, y)``, ``rmsnorm_bwd(x, w_f32, dy, rstd)``
bulkred     ``bulkred.softmax(x, dim=-1)``, ``bulkred.rms_norm(x, (n,), w, eps)``, ...
            (the function table's row functions); backward through torch's autograd
==========  =====================================================================

Parts (``--parts``, in this order):

* ``fwd``: softmax, log_softmax, rms_norm, layer_norm, add_rms_norm, cross_entropy (the
  mean loss); float32 and bfloat16; N = 1024, 4096, 16384, 65536, 262144; M x N = 2^28.
* ``bwd``: dx of softmax and log_softmax (from y and dy), dx and dw of rms_norm, dx, dw
  and db of layer_norm, dx of cross_entropy: ``torch.autograd.grad(out, inputs, dy)`` of
  each column's forward (Quack: its backward functions), the same cells.
* ``small``: every forward op at M = 1, 8, 64 rows of 4096; GPU time and per call in us.
* ``vocab``: cross_entropy at N = 4097, 50257, 128256 (vocabularies), M x N ~ 2^28.
* ``bf16``, ``variants``, ``values`` (not in the default run): bulkred's own settings
  chosen by measurement (bulkred against itself, each setting compiling its kernels).

Model bandwidth (GB/s from the GPU time): forward reads x and writes y once (2 M N
bytes of the dtype; add_rms_norm reads x and r and writes y and h: 4; cross_entropy
reads x: 1); backward moves three tensors (y or x, dy read, dx written: 3; the weights'
gradients are not counted; cross_entropy reads x and writes dx: 2). The copy column
is the copy kernel's GB/s on the same x, every ratio "vs copy" is against it.

Timings, each a median (benchmarks/reductions_api.py's helpers): **GPU time** per call,
``--calls`` calls captured in one CUDA graph and replayed ``--replays`` times (``e``
after a figure: the capture failed, events around the same calls back to back instead);
**per call**, CUDA events around one call with the GPU idle before it, the host's work
included as a Python user pays it (``--samples`` calls). Before timing, each column's
result is checked against torch eager's on the same input (``ok`` or ``WRONG``, in the
check column): within 2e-5 of the largest magnitude in float32, 2^-7 in bfloat16 (the
loss of cross_entropy within 2e-5 and 1e-2 relative). Data: fresh ``torch.randn`` per
cell (targets ``randint``), weights of x's dtype (Quack's in float32, as it takes them).

Usage (on the GPU machine; tools/gpu.sh passes --out and --budget-s)::

    python3 benchmarks/rows.py                             # every part above, every column
    python3 benchmarks/rows.py --quick                     # a few cells of each part (about a minute)
    python3 benchmarks/rows.py --parts fwd --ops softmax,rms_norm --ns 4096 --dtypes bfloat16
    python3 benchmarks/rows.py --columns eager,bulkred     # fewer columns (no compile: much faster)
    python3 benchmarks/rows.py --dry-run [--quick]         # the cells and their bytes; no GPU
    python3 benchmarks/rows.py --plot-from docs/rows_bench_h200.json --out /tmp/p   # redraw a saved run's plot (matplotlib)
    bash tools/gpu.sh tests:rows bench:rows               (BENCH_ARGS="--parts fwd,bwd")

Liger (``liger-kernel``) and Quack (``quack-kernels``) are imported when they are
installed or on ``PYTHONPATH`` (tools/gpu.sh keeps a ``PYTHONPATH`` its caller sets);
without them their columns say so. Writes
``rows.md`` (the tables and the notes), ``rows.json`` (every cell) and ``rows.png`` (GB/s
against N, one panel per op and dtype, every column; with matplotlib, else a note)
under ``--out``. ``--budget-s``: no new cell starts after that many seconds (the cells
left are listed as skipped).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))
_spec = importlib.util.spec_from_file_location("reductions_api", os.path.join(_HERE, "reductions_api.py"))
RA = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["reductions_api"] = RA
_spec.loader.exec_module(RA)  # type: ignore[union-attr]

OPS = ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy")
BWD_OPS = ("softmax", "log_softmax", "rms_norm", "layer_norm", "cross_entropy")
COLUMNS = ("copy", "eager", "compile", "liger", "quack", "bulkred")
NS = (1024, 4096, 16384, 65536, 262144)
VOCAB_NS = (4097, 50257, 128256)
SMALL_MS = (1, 8, 64)
SMALL_N = 4096
DTYPES = ("float32", "bfloat16")
PARTS = ("fwd", "bwd", "small", "vocab")
TUNING = ("bf16", "variants", "values")
TOTAL = 1 << 28  # M x N
EPS = 1e-6  # every norm's, in every column
FWD_BYTES = {"add_rms_norm": 4, "cross_entropy": 1}  # tensors of M x N moved (else 2: x and y)
BWD_BYTES = {"cross_entropy": 2}  # else 3: y or x, dy, dx
QUICK = {"ops": "softmax,rms_norm,cross_entropy", "bwd_ops": "softmax,rms_norm", "ns": "4096",
         "dtypes": "bfloat16", "small_ms": "1", "vocab_ns": "50257"}


# region Inputs and the columns' calls


@dataclass
class Inputs:
    """One cell's tensors, made when first asked for (fresh random data per cell)."""

    torch: Any
    m: int
    n: int
    dtype: Any
    made: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        made = self.__dict__["made"]
        if name not in made:
            made[name] = self._make(name)
        return made[name]

    def _make(self, name: str) -> Any:
        torch, m, n, dt = self.torch, self.m, self.n, self.dtype
        if name in ("x", "r", "dy"):
            return torch.randn(m, n, device="cuda", dtype=dt)
        if name in ("w", "b"):
            return torch.randn(n, device="cuda", dtype=dt)
        if name in ("w32", "b32"):
            return getattr(self, name[0]).float()
        if name == "target":
            return torch.randint(0, n, (m,), device="cuda")
        raise AttributeError(name)


def eager_fn(op: str, F: Any) -> Callable[..., Any]:
    """torch's function of ``op`` taking (x, w, b, r, target): the eager column's, and
    what torch.compile compiles."""
    return {
        "softmax": lambda x, w, b, r, t: F.softmax(x, -1),
        "log_softmax": lambda x, w, b, r, t: F.log_softmax(x, -1),
        "rms_norm": lambda x, w, b, r, t: F.rms_norm(x, (x.shape[-1],), w, EPS),
        "layer_norm": lambda x, w, b, r, t: F.layer_norm(x, (x.shape[-1],), w, b, EPS),
        "add_rms_norm": lambda x, w, b, r, t: _add_rms_norm(F, x, w, r),
        "cross_entropy": lambda x, w, b, r, t: F.cross_entropy(x, t),
    }[op]


def _add_rms_norm(F: Any, x: Any, w: Any, r: Any) -> tuple[Any, Any]:
    h = x + r
    return F.rms_norm(h, (x.shape[-1],), w, EPS), h


class NA(Exception):
    """A column that cannot run a cell: the reason is its one line."""


class Columns:
    """The calls of each column: ``forward(column, op, inputs)`` and ``backward(...)``
    give a call without arguments (timed as is), or raise :class:`NA`."""

    def __init__(self, torch: Any, wanted: list[str]):
        import torch.nn.functional as F

        self.torch, self.F, self.wanted = torch, F, wanted
        self.missing: dict[str, str] = {}
        self.liger = self._import("liger", lambda: importlib.import_module("liger_kernel.transformers.functional"))
        self.quack = self._import("quack", lambda: {m: importlib.import_module(f"quack.{m}")
                                                    for m in ("softmax", "rmsnorm", "cross_entropy")})
        self.bulkred = self._import("bulkred", _bulkred)
        self.compiled: dict[str, Any] = {}
        if "compile" in wanted:
            dyn = torch._dynamo.config  # one compiled function per op, recompiled per shape: keep them all
            for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                         "accumulated_recompile_limit"):
                if hasattr(dyn, knob):
                    setattr(dyn, knob, 4096)

    def _import(self, column: str, load: Callable[[], Any]) -> Any:
        if column not in self.wanted:
            return None
        try:
            return load()
        except Exception as e:  # noqa: BLE001 - the column says why, the run goes on
            self.missing[column] = f"import failed: {_line(e)}"
            return None

    def _need(self, column: str, module: Any) -> None:
        if module is None:
            raise NA(self.missing.get(column, "not asked (--columns)"))

    def bulkred_fn(self, op: str) -> Any:
        """``bulkred.<op>``."""
        fn = getattr(self.bulkred, op, None)
        if fn is None:
            raise NA(f"bulkred has no {op}")
        return fn

    def _bulkred_call(self, op: str, i: Inputs, x: Any = None, w: Any = None, b: Any = None) -> Any:
        """bulkred's call of ``op`` on the cell's tensors, or on ``x``, ``w``, ``b`` given
        (the backward's, which require grad)."""
        fn, n = self.bulkred_fn(op), i.n
        x = i.x if x is None else x
        if op in ("softmax", "log_softmax"):
            return lambda: fn(x, -1)
        if op == "rms_norm":
            return lambda: fn(x, (n,), i.w if w is None else w, EPS)
        if op == "layer_norm":
            return lambda: fn(x, (n,), i.w if w is None else w, i.b if b is None else b, EPS)
        if op == "add_rms_norm":
            return lambda: fn(x, i.r, i.w if w is None else w, EPS)
        return lambda: fn(x, i.target)

    def forward(self, column: str, op: str, i: Inputs) -> Callable[[], Any]:
        torch = self.torch
        if column == "copy":
            y = torch.empty_like(i.x)
            return lambda: torch.mul(i.x, 1.0, out=y)
        if column == "eager":
            f = eager_fn(op, self.F)
            return lambda: f(i.x, i.w, i.b, i.r if op == "add_rms_norm" else None, i.target)
        if column == "compile":
            f = self._compiled(op)
            return lambda: f(i.x, i.w, i.b, i.r if op == "add_rms_norm" else None, i.target)
        if column == "liger":
            self._need("liger", self.liger)
            L = self.liger
            call = {"softmax": lambda: L.liger_softmax(i.x),
                    "rms_norm": lambda: L.liger_rms_norm(i.x, i.w, EPS, in_place=False),
                    "layer_norm": lambda: L.liger_layer_norm(i.x, i.w, i.b, EPS)}.get(op)
            if call is None:
                raise NA(f"Liger's functional API has no {op} (as measured here)")
            return call
        if column == "quack":
            self._need("quack", self.quack)
            qs, qr, qce = self.quack["softmax"], self.quack["rmsnorm"], self.quack["cross_entropy"]
            call = {"softmax": lambda: qs.softmax_fwd(i.x),
                    "rms_norm": lambda: qr.rmsnorm_fwd(i.x, i.w32, eps=EPS),  # (out, residual_out, rstd)
                    "add_rms_norm": lambda: qr.rmsnorm_fwd(i.x, i.w32, residual=i.r, eps=EPS),
                    "layer_norm": lambda: qr.layernorm_fwd(i.x, i.w32, i.b32),  # its eps: 1e-6
                    "cross_entropy": lambda: qce.cross_entropy_fwd(i.x, i.target)}.get(op)
            if call is None:
                raise NA(f"Quack has no {op}")
            return call
        self._need("bulkred", self.bulkred)
        return self._bulkred_call(op, i)

    def backward(self, column: str, op: str, i: Inputs) -> Callable[[], Any]:
        """dx (and dw, db) of ``op`` at the cell's dy: autograd through the column's
        forward, or the column's backward function."""
        torch = self.torch
        if column == "copy":
            return self.forward("copy", op, i)
        if column == "quack":
            self._need("quack", self.quack)
            qs, qr = self.quack["softmax"], self.quack["rmsnorm"]
            if op == "softmax":
                y = qs.softmax_fwd(i.x)
                return lambda: qs.softmax_bwd(i.dy, y)
            if op == "rms_norm":
                rstd = qr.rmsnorm_fwd(i.x, i.w32, eps=EPS, store_rstd=True)[2]
                return lambda: primary(qr.rmsnorm_bwd(i.x, i.w32, i.dy, rstd))
            raise NA(f"Quack's backward of {op} is not measured here")
        xg = i.x.detach().requires_grad_(True)
        wg = i.w.detach().requires_grad_(True)
        bg = i.b.detach().requires_grad_(True)
        inputs = {"rms_norm": (xg, wg), "layer_norm": (xg, wg, bg)}.get(op, (xg,))
        if column in ("eager", "compile"):
            f = eager_fn(op, self.F) if column == "eager" else self._compiled(op)
            out = f(xg, wg, bg, None, i.target)
        elif column == "liger":
            L = self.liger
            self._need("liger", L)
            make = {"softmax": lambda: L.liger_softmax(xg),
                    "rms_norm": lambda: L.liger_rms_norm(xg, wg, EPS, in_place=False),
                    "layer_norm": lambda: L.liger_layer_norm(xg, wg, bg, EPS)}.get(op)
            if make is None:
                raise NA(f"Liger's functional API has no {op} (as measured here)")
            out = make()
        else:
            self._need("bulkred", self.bulkred)
            out = self._bulkred_call(op, i, xg, wg, bg)()
            if not getattr(out, "requires_grad", False):
                raise NA(f"bulkred's {op} has no gradient")
        grad = torch.ones((), dtype=out.dtype, device=out.device) if op == "cross_entropy" else i.dy
        return lambda: torch.autograd.grad(out, inputs, grad, retain_graph=True)[0]

    def _compiled(self, op: str) -> Any:
        if "compile" not in self.wanted:
            raise NA("not asked (--columns)")
        if op not in self.compiled:
            self.compiled[op] = self.torch.compile(eager_fn(op, self.F), dynamic=False)
        return self.compiled[op]


def _bulkred() -> Any:
    import bulkred_dialect as bulkred

    return bulkred


# endregion

# region Timing and checking


def primary(out: Any) -> Any:
    """The result a column's output is checked by: y (of (y, h) and other tuples)."""
    return out[0] if isinstance(out, tuple | list) else out


def agree(torch: Any, got: Any, want: Any, op: str) -> str:
    """``ok``, or ``WRONG`` and the error, of a column's result against torch eager's."""
    got, want = primary(got), primary(want)
    if op == "cross_entropy" and got.dim() == 1 and want.dim() == 0:  # each row's loss: their mean
        got = got.float().mean()
    if got.shape != want.shape:
        return f"WRONG shape {tuple(got.shape)} (torch {tuple(want.shape)})"
    a, b = got.double(), want.double()
    half = want.dtype != torch.float32
    if a.dim() == 0:
        err = (a - b).abs().item() / max(1.0, b.abs().item())
        tol = 1e-2 if half else 2e-5
    else:
        err = (a - b).abs().max().item() / max(1.0, b.abs().max().item())
        tol = 2.0**-7 if half else 2e-5
    return "ok" if err <= tol else f"WRONG err={err:.1e}"


def replay_timer(torch: Any, fn: Callable[[], Any], calls: int) -> tuple[Callable[[], float], str]:
    """A timer of ``calls`` calls of ``fn`` (us per call, one measurement each time it is
    called): a CUDA graph of the calls replayed between two events (``graph``), else
    events around the same calls back to back (``events``: a library that cannot be
    captured)."""
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = RA._capture(torch, lambda _: fn(), [None], calls)
        g.replay()
        torch.cuda.synchronize()
        run, how = g.replay, "graph"
    except Exception:  # noqa: BLE001 - e.g. a library that cannot be captured
        torch.cuda.synchronize()

        def run() -> None:
            for _ in range(calls):
                fn()

        how = "events"

    def timed() -> float:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) * 1e3 / calls

    return timed, how


def call_us(torch: Any, fn: Callable[[], Any], samples: int) -> float:
    """Per call as a Python user pays it: events around one call, the GPU idle first."""
    return statistics.median(RA._timed_us(torch, lambda _: fn(), None) for _ in range(samples))


def _line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: {(s[0] if s else '')[:150]}"


# endregion

# region The parts


class Run:
    """The cells measured so far (``records``: one per cell and column) and the budget."""

    def __init__(self, torch: Any, cols: Columns, a: argparse.Namespace):
        self.torch, self.cols, self.a = torch, cols, a
        self.t0 = time.time()
        self.records: list[dict] = []

    def over_budget(self) -> bool:
        return time.time() - self.t0 > self.a.budget_s

    def cell(self, part: str, op: str, dtype: str, n: int, m: int, i: Inputs, calls: int, samples: int) -> None:
        """Every column of one cell: checked against eager, GPU time, per call."""
        torch, bwd = self.torch, part == "bwd"
        moved = (BWD_BYTES.get(op, 3) if bwd else FWD_BYTES.get(op, 2)) * m * n * i.x.element_size()
        base = {"part": part, "op": op, "dtype": dtype, "n": n, "m": m, "bytes": moved}
        if self.over_budget():
            self.records.append({**base, "column": "*", "na": f"skipped: past the budget of {self.a.budget_s:.0f} s"})
            print(f"{part} {op} {dtype} N={n} M={m}: skipped (budget)", flush=True)
            return
        want = None
        timers: dict[str, Callable[[], float]] = {}  # column -> one timed replay of its graph (us per call)
        fns: dict[str, Callable[[], Any]] = {}
        rows: dict[str, dict] = {}
        for column in self.a.columns:  # each column checked against eager and captured
            fn = None
            r = rows[column] = {**base, "column": column}
            self.records.append(r)
            try:
                fn = (self.cols.backward if bwd else self.cols.forward)(column, op, i)
                out = fn()
                torch.cuda.synchronize()
                if column == "eager":
                    want = out
                elif column != "copy":
                    r["check"] = agree(torch, out, want, op) if want is not None else "unchecked (no eager result)"
                del out
                timers[column], r["how"] = replay_timer(torch, fn, calls)
                fns[column] = fn
                if column == "bulkred":
                    r["variant"] = _variant(op, n, dtype)
            except NA as e:
                r["na"] = str(e)
            except Exception as e:  # noqa: BLE001 - the cell says why; the others run
                r["na"] = f"failed: {_line(e)}"
                torch.cuda.synchronize()
            del fn
        del want
        # GPU time: the columns' replays interleaved, each round starting at the next column (no column
        # always runs after the others' heat and clocks), the median of each column's rounds
        order, times = list(timers), {c: [] for c in timers}
        for k in range(self.a.replays * len(order) if order else 0):
            c = order[(k + k // len(order)) % len(order)]
            try:
                times[c].append(timers[c]())
            except Exception as e:  # noqa: BLE001
                rows[c]["na"] = f"failed: {_line(e)}"
                torch.cuda.synchronize()
        for c, fn in fns.items():
            r = rows[c]
            if "na" in r or not times[c]:
                continue
            r["gpu_us"] = statistics.median(times[c])
            r["call_us"] = call_us(torch, fn, samples)
            r["gbs"] = (2 * m * n * i.x.element_size() if c == "copy" else moved) / r["gpu_us"] / 1e3
        timers.clear()
        fns.clear()
        print(self.line(base), flush=True)

    def line(self, base: dict) -> str:
        got = [r for r in self.records if all(r.get(k) == base[k] for k in ("part", "op", "dtype", "n", "m"))]
        what = "GB/s" if base["part"] != "small" else "us"
        cells = [f"{r['column']} " + (f"{r['gbs']:,.0f}" if what == "GB/s" else f"{r['gpu_us']:.1f}/{r['call_us']:.1f}")
                 if "gpu_us" in r else f"{r['column']} n/a" for r in got]
        return f"{base['part']} {base['op']} {base['dtype']} N={base['n']} M={base['m']} ({what}): " + ", ".join(cells)

    def group(self, part: str, dtype: str, n: int, m: int, ops: list[str]) -> None:
        """The cells of ``ops`` on one set of tensors (fresh ones for the next group)."""
        torch = self.torch
        i = Inputs(torch, m, n, getattr(torch, dtype))
        calls, samples = (50, max(self.a.samples, 50)) if part == "small" else (self.a.calls, self.a.samples)
        for op in ops:
            self.cell(part, op, dtype, n, m, i, calls, samples)
            if part == "bwd":
                torch.cuda.empty_cache()
        del i
        torch.cuda.empty_cache()


def plan(a: argparse.Namespace, parts: list[str]) -> list[tuple[str, str, int, int, list[str]]]:
    """(part, dtype, N, M, ops) of every group of cells, in the order they run."""
    out = []
    for part in parts:
        if part in ("fwd", "bwd", "vocab"):
            ops = {"fwd": a.ops, "bwd": a.bwd_ops, "vocab": ["cross_entropy"]}[part]
            out += [(part, d, n, TOTAL // n, ops) for d in a.dtypes for n in (a.vocab_ns if part == "vocab" else a.ns)]
        elif part == "small":
            out += [(part, d, SMALL_N, m, a.ops) for d in a.dtypes for m in a.small_ms]
    return out


def _variant(op: str, n: int, dtype: str) -> str:
    """The variant bulkred's dispatcher chooses for rows of ``n`` (it does not depend on
    M); empty where that cannot be asked."""
    try:
        from bulkred_dialect.ops.target import Target
        from bulkred_dialect.ops.tile import NormalizeRowsOp
        from bulkred_dialect.passes.dispatch import choose
        from bulkred_dialect.row_kernels import module

        norm = op in ("rms_norm", "layer_norm", "add_rms_norm")
        ops = module(op, 1, n, dtype, eps=1e-5 if norm else None).walk()
        return choose(next(o for o in ops if isinstance(o, NormalizeRowsOp)), Target.parse("sm_90a")).name
    except Exception:  # noqa: BLE001 - a label only
        return ""


# endregion

# region Output


def tables(records: list[dict], columns: list[str], head: str) -> str:
    """Markdown: per part, GB/s (small: GPU us) and per call us of every column, bulkred
    against copy and against the best other column; the n/a reasons as numbered notes."""
    notes: dict[str, int] = {}
    out = [head]
    titles = {"fwd": "Forward, GB/s (GPU time)", "bwd": "Backward, GB/s (GPU time; three tensors moved)",
              "vocab": "cross_entropy over vocabularies, GB/s of reads (GPU time)",
              "small": "Small batches, N = 4096: GPU time us"}
    for part in PARTS:
        recs = [r for r in records if r["part"] == part]
        if not recs:
            continue
        keys = list(dict.fromkeys((r["op"], r["dtype"], r["n"], r["m"]) for r in recs))
        others = [c for c in columns if c not in ("copy", "bulkred")]
        value = "gpu_us" if part == "small" else "gbs"
        ratio_cols = ([] if part == "small" else ["bulkred/copy"]) + ["bulkred vs best other"]
        out += ["", f"### {titles[part]}", "",
                "| op | dtype | N | M | " + " | ".join(columns) + " | " + " | ".join(ratio_cols)
                + " | bulkred variant | check |",
                "| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in columns + ratio_cols) + " | --- | --- |"]
        calls = ["", f"Per call, us ({part}):", "", "| op | dtype | N | M | " + " | ".join(columns) + " |",
                 "| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in columns) + " |"]
        for key in keys:
            by = {r["column"]: r for r in recs if (r["op"], r["dtype"], r["n"], r["m"]) == key}
            if "*" in by:  # skipped
                note = notes.setdefault(by["*"]["na"], len(notes) + 1)
                out.append(f"| {' | '.join(map(str, key))} | " + " | ".join(f"({note})" for _ in columns + ratio_cols)
                           + " | | |")
                continue
            cells, per_call = [], []
            for c in columns:
                r = by.get(c, {})
                if "gpu_us" in r:
                    v = r[value]
                    cells.append((f"{v:.1f}" if part == "small" else f"{v:,.0f}") + ("e" if r["how"] == "events" else ""))
                    per_call.append(f"{r['call_us']:.1f}")
                else:
                    note = notes.setdefault(r.get("na", "not run"), len(notes) + 1)
                    cells.append(f"n/a ({note})")
                    per_call.append(f"n/a ({note})")
            b = by.get("bulkred", {})
            best = [by[c][value] for c in others if "gpu_us" in by.get(c, {})]
            ratios = []
            if part != "small":
                ratios.append(f"{b[value] / by['copy'][value]:.2f}" if "gpu_us" in b and "gpu_us" in by.get("copy", {})
                              else "")
            if "gpu_us" in b and best:
                ratios.append(f"{min(best) / b[value]:.2f}" if part == "small" else f"{b[value] / max(best):.2f}")
            else:
                ratios.append("")
            checks = "; ".join(f"{c} {by[c]['check']}" for c in columns if by.get(c, {}).get("check", "ok") != "ok")
            out.append(f"| {' | '.join(map(str, key))} | " + " | ".join(cells) + " | " + " | ".join(ratios)
                       + f" | {b.get('variant', '')} | {checks or 'ok'} |")
            calls.append(f"| {' | '.join(map(str, key))} | " + " | ".join(per_call) + " |")
        out += calls
    if notes:
        out += ["", "Notes:", ""] + [f"({k}) {reason}" for reason, k in notes.items()]
    out += ["", "`e` after a figure: events around back-to-back calls (the CUDA graph capture failed). "
            "bulkred vs best other: bulkred's GB/s over the best of eager, compile, Liger and Quack (small: "
            "the best one's GPU time over bulkred's); above 1, bulkred is faster."]
    return "\n".join(out)


def plot(records: list[dict], columns: list[str], path: str, gpu: str) -> str:
    panels = sorted({(r["part"], r["op"], r["dtype"]) for r in records if r["part"] in ("fwd", "bwd") and "gbs" in r},
                    key=lambda k: (PARTS.index(k[0]), OPS.index(k[1]), k[2] != "float32", k[2]))  # a row per op
    if not panels:
        return "plot skipped: no forward or backward cell was timed"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed on this machine"
    cols = 2
    rows_ = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows_, cols, figsize=(11, 3.2 * rows_), squeeze=False)
    # one colour and marker per column in every panel (a column missing from a panel shifts no other's colour)
    styles = {"copy": ("x:", "black"), "eager": ("-s", "tab:blue"), "compile": ("-^", "tab:orange"),
              "liger": ("-v", "tab:green"), "quack": ("-D", "tab:red"), "bulkred": ("-o", "tab:purple")}
    for ax, (part, op, dtype) in zip(axes.flat, panels, strict=False):
        for c in columns:
            pts = sorted((r["n"], r["gbs"]) for r in records
                         if (r["part"], r["op"], r["dtype"], r["column"]) == (part, op, dtype, c) and "gbs" in r)
            if pts:
                fmt, colour = styles.get(c, ("-", None))
                ax.plot(*zip(*pts), fmt, color=colour, label=c, linewidth=2.2 if c == "bulkred" else 1.2)
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{op} {'backward' if part == 'bwd' else 'forward'}, {dtype}", fontsize=9)
        ax.set_xlabel("N (M x N = 2^28)", fontsize=8)
        ax.set_ylabel("GB/s", fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(f"Row normalizations, GB/s against N (GPU time), {gpu}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return f"plot: {path}"


def write(run: Run, head: str, meta: dict, final: bool) -> str:
    a = run.a
    os.makedirs(a.out, exist_ok=True)
    note = plot(run.records, a.columns, os.path.join(a.out, "rows.png"), meta["gpu"]) if final else ""
    with open(os.path.join(a.out, "rows.md"), "w") as f:
        f.write(tables(run.records, a.columns, head) + (f"\n\n{note}\n" if note else "\n"))
    with open(os.path.join(a.out, "rows.json"), "w") as f:
        json.dump({**meta, "args": {k: v for k, v in vars(a).items()}, "cells": run.records}, f, indent=1)
    return note


# endregion


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default=",".join(PARTS),
                    help=f"comma-separated, of {', '.join(PARTS + TUNING)} (main: fwd)")
    ap.add_argument("--ops", "--kinds", default=",".join(OPS), help="forward and small-batch ops")
    ap.add_argument("--bwd-ops", default=",".join(BWD_OPS))
    ap.add_argument("--columns", default=",".join(COLUMNS))
    ap.add_argument("--ns", default=",".join(map(str, NS)))
    ap.add_argument("--vocab-ns", default=",".join(map(str, VOCAB_NS)))
    ap.add_argument("--small-ms", default=",".join(map(str, SMALL_MS)))
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--calls", type=int, default=10, help="calls per CUDA graph (small batches: 50)")
    ap.add_argument("--replays", type=int, default=5)
    ap.add_argument("--samples", type=int, default=7, help="per-call samples (small batches: 50)")
    ap.add_argument("--quick", action="store_true",
                    help="a few cells of each part: " + "; ".join(f"{k} {v}" for k, v in QUICK.items()))
    ap.add_argument("--budget-s", type=float, default=3600.0, help="no new cell after this many seconds")
    ap.add_argument("--dry-run", action="store_true", help="print the cells and the bytes each moves; no GPU")
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/rows_bench")
    ap.add_argument("--plot-from", metavar="JSON", help="draw rows.png (into --out) from an earlier run's rows.json; no timing")
    a = ap.parse_args(argv)
    if a.plot_from:
        with open(a.plot_from) as f:
            saved = json.load(f)
        os.makedirs(a.out, exist_ok=True)
        print(plot(saved["cells"], saved["args"]["columns"], os.path.join(a.out, "rows.png"), saved["gpu"]))
        return 0
    if a.quick:
        for k, v in QUICK.items():
            if getattr(a, k) == ap.get_default(k):
                setattr(a, k, v)
        a.calls, a.replays, a.samples = min(a.calls, 5), min(a.replays, 3), min(a.samples, 5)
    parts = [{"main": "fwd"}.get(p, p) for p in a.parts.split(",") if p]
    a.columns = [c for c in a.columns.split(",") if c]
    a.ops, a.bwd_ops = a.ops.split(","), a.bwd_ops.split(",")
    a.dtypes = a.dtypes.split(",")
    a.ns, a.vocab_ns, a.small_ms = ([int(v) for v in s.split(",") if v] for s in (a.ns, a.vocab_ns, a.small_ms))
    bad = ([p for p in parts if p not in PARTS + TUNING] + [c for c in a.columns if c not in COLUMNS]
           + [o for o in a.ops + a.bwd_ops if o not in OPS])
    if bad:
        ap.error(f"unknown part, column or op: {', '.join(bad)}")
    if a.dry_run:
        groups = plan(a, parts)
        for part, dtype, n, m, ops in groups:
            size = 4 if dtype == "float32" else 2
            moved = ", ".join(f"{op} {(BWD_BYTES.get(op, 3) if part == 'bwd' else FWD_BYTES.get(op, 2)) * m * n * size / 1e9:.3g}"
                              for op in ops)
            print(f"{part} {dtype} N={n} M={m}: GB moved per call: {moved}")
        print(f"{sum(len(g[4]) for g in groups)} cells x {len(a.columns)} columns ({', '.join(a.columns)})")
        return 0
    import torch

    if not torch.cuda.is_available():
        print("rows: no CUDA device", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name()
    head = f"GPU: {gpu}; torch {torch.__version__}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    print(f"# {head}", flush=True)
    cols = Columns(torch, a.columns)
    for c, why in cols.missing.items():
        print(f"# {c}: {why}", flush=True)
    b = cols.bulkred
    if b is not None:
        print("# bulkred entry: " + ", ".join(f"{op} bulkred.{op}" if hasattr(b, op) else f"{op} none" for op in OPS),
              flush=True)
    meta = {"gpu": gpu, "torch": torch.__version__, "missing": cols.missing}
    run = Run(torch, cols, a)
    groups = plan(a, parts)
    for k, (part, dtype, n, m, ops) in enumerate(groups):
        run.group(part, dtype, n, m, ops)
        if k + 1 == len(groups) or groups[k + 1][0] != part:
            write(run, head, meta, final=False)  # after each part: a run cut short keeps what it measured
    note = write(run, head, meta, final=True)
    print("\n" + tables(run.records, a.columns, head) + f"\n\n{note}\nbenchmark time: {time.time() - run.t0:.0f} s",
          flush=True)
    if any(p in TUNING for p in parts):
        _tuning(torch, cols.bulkred, parts)
    wrong = [r for r in run.records if str(r.get("check", "")).startswith("WRONG")]
    return 1 if wrong else 0


# region bulkred's own settings, chosen by measurement (--parts bf16,variants,values)


def _cell(torch, bulkred, kind: str, n: int, dtype: str, variant: str | None = None) -> float:
    """GB/s of one tuning cell (M x N = 2^28)."""
    m = TOTAL // n
    x = torch.randn(m, n, device="cuda").to(getattr(torch, dtype))
    w = torch.randn(n, device="cuda").to(x.dtype)
    if kind == "softmax":
        fn = lambda t: bulkred.softmax(t, -1, variant=variant)  # noqa: E731
    elif kind == "layer_norm":
        fn = lambda t: bulkred.layer_norm(t, (n,), w, w, 1e-5, variant=variant)  # noqa: E731
    else:
        fn = lambda t: bulkred.rms_norm(t, (n,), w, 1e-6, variant=variant)  # noqa: E731
    us = RA.graph_us(torch, fn, [x], 10, 5)
    return 2 * x.numel() * x.element_size() / us / 1e3


def _tuning(torch, bulkred, parts: list[str]) -> None:
    """bf16: 16-byte against 8-byte bfloat16 vectors (rows_common.WIDE_BF16); values: the
    float32 values a thread holds (rows_common.MAX_VALUES) and a cluster CTA's share
    (rows_cluster.SLICE); variants: the variants forced where two apply. Each setting
    compiles its own kernels (the compile cache off)."""
    os.environ["BULKRED_CACHE"] = "0"  # a setting's kernels are its own (the cache keys the module's text)
    from bulkred_dialect import row_kernels
    from bulkred_dialect.passes.variants import rows_cluster, rows_common

    if "bf16" in parts:
        print()
        print("| kind | N | 16-byte bf16 GB/s | 8-byte bf16 GB/s |")
        print("| --- | ---: | ---: | ---: |")
        for kind in ("softmax", "rms_norm"):
            for n in (1024, 4096, 16384, 65536):
                got = []
                for wide in (True, False):
                    rows_common.WIDE_BF16 = wide
                    row_kernels._KERNELS.clear()
                    got.append(_cell(torch, bulkred, kind, n, "bfloat16"))
                print(f"| {kind} | {n} | {got[0]:,.0f} | {got[1]:,.0f} |", flush=True)
        rows_common.WIDE_BF16 = True
        row_kernels._KERNELS.clear()
    if "values" in parts:
        from bulkred_dialect.passes.variants import rows_cta

        print()
        print("| kind | dtype | N | setting | GB/s |")
        print("| --- | --- | ---: | --- | ---: |")
        for kind, dtype, n, variant in (("softmax", "bfloat16", 4096, "rows_cta"),
                                        ("layer_norm", "bfloat16", 16384, "rows_cta"),
                                        ("softmax", "float32", 4096, "rows_cta")):
            for least, values in ((128, 16), (128, 32), (64, 64)):
                rows_common.MAX_VALUES, rows_cta.MIN_BLOCK = values, least
                row_kernels._KERNELS.clear()
                try:
                    gbs = f"{_cell(torch, bulkred, kind, n, dtype, variant):,.0f}"
                except Exception as e:  # noqa: BLE001 - the row says why
                    gbs = f"failed: {str(e).splitlines()[0][:80]}"
                print(f"| {kind} | {dtype} | {n} | MAX_VALUES {values}, MIN_BLOCK {least} | {gbs} |", flush=True)
        rows_common.MAX_VALUES, rows_cta.MIN_BLOCK = 32, 128
        for kind, dtype in (("softmax", "bfloat16"), ("layer_norm", "bfloat16"), ("softmax", "float32")):
            for slice_ in (8192, 16384):
                rows_cluster.SLICE = slice_
                row_kernels._KERNELS.clear()
                gbs = _cell(torch, bulkred, kind, 65536, dtype, "rows_cluster")
                print(f"| {kind} | {dtype} | 65536 | SLICE {slice_} | {gbs:,.0f} |", flush=True)
        rows_cluster.SLICE = 8192
        row_kernels._KERNELS.clear()
    if "variants" in parts:
        print()
        print("| kind | dtype | N | variant | GB/s |")
        print("| --- | --- | ---: | --- | ---: |")
        for n, variants in ((8192, ("rows_cta", "rows_cluster")), (16384, ("rows_cta", "rows_cluster")),
                            (65536, ("rows_cluster", "rows_stream")), (131072, ("rows_cluster", "rows_stream"))):
            for dtype in ("float32", "bfloat16"):
                for v in variants:
                    try:
                        gbs = f"{_cell(torch, bulkred, 'softmax', n, dtype, v):,.0f}"
                    except Exception as e:  # noqa: BLE001 - the row says why
                        gbs = f"failed: {str(e).splitlines()[0][:80]}"
                    print(f"| softmax | {dtype} | {n} | {v} | {gbs} |", flush=True)
        # clusters of 16 (the non-portable size) for rows of 262144
        largest = rows_cluster.MAX_CLUSTER
        for dtype in ("float32", "bfloat16"):
            for v, size in (("rows_cluster", 16), ("rows_stream", 8)):
                rows_cluster.MAX_CLUSTER = size
                row_kernels._KERNELS.clear()
                try:
                    gbs = f"{_cell(torch, bulkred, 'softmax', 262144, dtype, v):,.0f}"
                except Exception as e:  # noqa: BLE001 - the row says why
                    gbs = f"failed: {str(e).splitlines()[0][:80]}"
                label = f"{v} of 16" if v == "rows_cluster" else v
                print(f"| softmax | {dtype} | 262144 | {label} | {gbs} |", flush=True)
        rows_cluster.MAX_CLUSTER = largest
        row_kernels._KERNELS.clear()


# endregion


if __name__ == "__main__":
    raise SystemExit(main())
