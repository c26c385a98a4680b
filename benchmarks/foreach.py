"""The list reductions (issue 24: ``bulkred.total_norm``, ``clip_grad_norm_``,
``unscale_and_norm_``, ``foreach_amax``, ``foreach_norm``) against torch on the GPU,
same run, same data.

Rows (each bulkred against torch on the same tensors):

=================  ==================================================  ============================================
row                bulkred                                             torch
=================  ==================================================  ============================================
llama_bf16         ``total_norm(grads)``, Llama-3-8B-shaped, bf16       ``torch.nn.utils.get_total_norm(grads)``
llama_f32_150      the same, its first 150 tensors in float32          the same
unscale_f32_150    ``unscale_and_norm_(grads, inv_scale, found_inf)``  ``torch._amp_foreach_non_finite_check_and_``
                                                                       ``unscale_(grads, found_inf, inv_scale)``,
                                                                       then ``get_total_norm(grads)``
clip_bf16          ``clip_grad_norm_(grads, max_norm=1.0)``            ``torch.nn.utils.clip_grad_norm_(params, 1.0)``
clip_bf16_every    the same with ``max_norm=-1.0``: a coefficient of   the same, ``max_norm=-1.0``
                   about -1 on every call, so every call scales every
                   gradient (clip_bf16's coefficient is 1 after the
                   first call, and bulkred then writes nothing)
many_2000_f32      ``total_norm``, 2,000 x [4096] float32              ``get_total_norm``
mixed_2000         the same, bf16 and float32 alternating              ``get_total_norm`` (it groups by dtype)
big_300_f32        ``total_norm``, 300 x [1024, 1024] float32          ``get_total_norm``
amax_llama_bf16    ``foreach_amax(grads)``, the bf16 Llama list        ``torch.stack(torch._foreach_norm(grads, inf))``
norms_llama_bf16   ``foreach_norm(grads)`` (not in the default run)    ``torch.stack(torch._foreach_norm(grads, 2))``
sweep              ``total_norm``, 1 GiB float32 in N equal tensors,   ``get_total_norm``; GPU time only
                   N = 2, 20, 200, 2000, 20000
=================  ==================================================  ============================================

The Llama list: 32 layers of q [4096, 4096], k and v [1024, 4096], o [4096, 4096], gate
and up [14336, 4096], down [4096, 14336] and two norms [4096]; then the embedding and the
LM head [128256, 4096] and the final norm [4096]: 291 tensors, 16.06 GB in bf16 (the first
150 in float32: 14.60 GB). torch's ``clip_grad_norm_`` reads ``.grad`` of parameters: its
parameters are ``nn.Parameter`` objects over one element each (expanded, stride 0) whose
``.grad`` are the very tensors bulkred gets.

Timings, each a median (benchmarks/reductions_api.py's helpers, imported as
benchmarks/functions.py does):

* **GPU time**: a CUDA graph of several calls (``--graph-calls``, fewer for big lists:
  about 16 GB of traffic per graph, at least 3 calls), replayed ``--replays`` times with
  CUDA events around each replay, per call. bulkred's list is warmed up (one call on each
  list) before the capture, as the contract asks; after the replays, the captured results
  are checked against float64 once more ("graph" in the check column).
* **per call**: CUDA events around one call, the GPU idle before it, bulkred and torch
  taking turns (``--repeat`` samples each; half as many for lists of 1 GB or more). The
  bulkred call gets the same list object each time ("unchanged list": its descriptor
  table is reused). ``many_2000_f32`` and ``mixed_2000`` time bulkred again on the
  unchanged list alone (not taking turns with torch's call, whose 2,000 launches come
  between ours in the turns), on an equal
  new list of the same tensors every call (``list(grads)``, made before the events: the
  tensors of the list are unchanged, the list object is not), on a list of new tensor
  objects every call (``[t.view_as(t) for t in grads]``: the
  ``zero_grad(set_to_none=True)`` case, new objects at the addresses torch's caching
  allocator gives again: the list is checked and its table found by content), on lists
  of new tensors at new addresses (``FRESH_POOL`` lists in turn, more than the table
  cache holds: the table is built and copied every call), and on a
  ``bulkred.tensor_list`` of the list (made once).
* **host per call** (those two rows): the host's time alone, without the GPU's: 100 calls
  back to back (``time.perf_counter``, no synchronisation inside; the GPU runs behind),
  median of 5 loops, per call, on the unchanged list and on the ``tensor_list``.

GB/s counts the bytes the call must move: the list read once for the norms and amax; read
and written for ``unscale_and_norm_`` (2x); read, read again and written for clipping (3x:
the scale needs the total first). Lists under 200 MB (the 2,000-tensor rows) are rotated
over copies in the graph (over the H100's 50 MB L2) and a 256 MB buffer is written before
each per-call sample. Data are fresh ``torch.randn`` per row, never zeros.

Checks, once before timing: norms against float64 (relative 1e-3) and against torch's
result (relative 1e-3; 1e-3 + 2^-8 where the list holds bf16/fp16 tensors, since torch's
per-tensor norms are then rounded to the list's dtype); amax exactly. ``unscale_f32_150``
is checked with inv_scale 0.5 (every element exactly halved, the norm halved, found_inf
still 0), then torch's unscale with 2.0 restores the data; the timed calls use inv_scale =
1.0, so that repeated in-place calls do not drift to inf or 0. ``clip_bf16``'s grads are
``randn * 1e-4`` (a total norm near 9): bulkred's first call is checked (the returned norm,
sampled grads against their saved copies times the coefficient, the norm after), after
which the norm stays near 1.0 and every timed call scales by a coefficient just under 1
(the row's note gives both coefficients). A result off its tolerance prints WRONG.

Usage (on the GPU machine)::

    python3 benchmarks/foreach.py                        # every default row and the sweep
    python3 benchmarks/foreach.py --rows llama_bf16,many_2000_f32 --out DIR
    python3 benchmarks/foreach.py --rows sweep --sweep-total 4G
    python3 benchmarks/foreach.py --quick                # many_2000_f32 alone, fewer samples (a minute)
    python3 benchmarks/foreach.py --dry-run              # the lists' shapes and bytes; no GPU

Writes ``foreach.{md,json}`` and ``foreach_sweep.png`` (matplotlib, when installed) under
``--out`` (default ``$OUT``). Prints the GPU, torch's version and a 1 GiB device-to-device
copy's bandwidth (bytes read plus written) first.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import json
import math
import os
import statistics
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))

_spec = importlib.util.spec_from_file_location("reductions_api", os.path.join(_HERE, "reductions_api.py"))
RA = importlib.util.module_from_spec(_spec)
sys.modules["reductions_api"] = RA
_spec.loader.exec_module(RA)

ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}
L2_ROTATE = RA.L2_ROTATE  # lists under this many bytes are rotated over copies (H100 L2: 50 MB)
FLUSH_BYTES = 256 << 20  # written before each per-call sample of such a list
GRAPH_BYTES = 16e9  # bytes of traffic per captured graph (at least 3 calls)
NORM_TOL = 1e-3
HALF_TOL = 1e-3 + 2.0**-8  # against torch's norms of a list with bf16/fp16 tensors (rounded to their dtype)
MAX_NORM = 1.0
CLIP_SCALE = 1e-4
FRESH_POOL = 20  # lists taken in turn for "new addresses" (more than foreach's 16 cached tables)
SWEEP_NS = (2, 20, 200, 2000, 20000)
NAMES = ("total_norm", "foreach_norm", "clip_grad_norm_", "unscale_and_norm_", "foreach_amax", "tensor_list")
FACTOR = {"total_norm": 1, "foreach_norm": 1, "foreach_amax": 1, "unscale_and_norm_": 2, "clip_grad_norm_": 3}

Spec = list[tuple[tuple[int, ...], str]]  # (shape, dtype) of each tensor of a list


def llama_shapes() -> list[tuple[int, ...]]:
    """Llama-3-8B's parameter shapes: 32 layers, then the embedding, LM head, final norm."""
    h, kv, ff, vocab = 4096, 1024, 14336, 128256
    layer = [(h, h), (kv, h), (kv, h), (h, h), (ff, h), (ff, h), (h, ff), (h,), (h,)]
    return layer * 32 + [(vocab, h), (vocab, h), (h,)]


def llama(dtype: str, count: int | None = None) -> Spec:
    return [(s, dtype) for s in llama_shapes()[:count]]


@dataclass(frozen=True)
class Row:
    name: str
    op: str  # the bulkred function (NAMES)
    spec: Callable[[], Spec]
    torch_text: str
    new_list: bool = False  # also per call on a list of new tensor objects
    default: bool = True
    max_norm: float = MAX_NORM  # clip_grad_norm_'s


ROWS = {
    r.name: r
    for r in [
        Row("llama_bf16", "total_norm", lambda: llama("bfloat16"), "get_total_norm"),
        Row("llama_f32_150", "total_norm", lambda: llama("float32", 150), "get_total_norm"),
        Row("unscale_f32_150", "unscale_and_norm_", lambda: llama("float32", 150),
            "_amp_foreach_non_finite_check_and_unscale_ + get_total_norm"),
        Row("clip_bf16", "clip_grad_norm_", lambda: llama("bfloat16"), "nn.utils.clip_grad_norm_(params)"),
        # max_norm < 0: the coefficient is about -1 on every call (the grads change sign, their
        # magnitude stays), so both libraries scale every gradient on every call
        Row("clip_bf16_every", "clip_grad_norm_", lambda: llama("bfloat16"), "nn.utils.clip_grad_norm_(params)",
            max_norm=-1.0),
        Row("many_2000_f32", "total_norm", lambda: [((4096,), "float32")] * 2000, "get_total_norm", new_list=True),
        Row("mixed_2000", "total_norm", lambda: [((4096,), ("bfloat16", "float32")[i % 2]) for i in range(2000)],
            "get_total_norm", new_list=True),
        Row("big_300_f32", "total_norm", lambda: [((1024, 1024), "float32")] * 300, "get_total_norm"),
        Row("amax_llama_bf16", "foreach_amax", lambda: llama("bfloat16"), "stack(_foreach_norm(ts, inf))"),
        Row("norms_llama_bf16", "foreach_norm", lambda: llama("bfloat16"), "stack(_foreach_norm(ts, 2))",
            default=False),
    ]
}
DEFAULT_ROWS = [n for n, r in ROWS.items() if r.default] + ["sweep"]
QUICK_ROWS = ["many_2000_f32"]
HOST_LOOP = 100  # calls back to back per host-time loop


def spec_bytes(spec: Spec) -> int:
    return sum(math.prod(s) * ITEMSIZE[d] for s, d in spec)


def copies_of(nbytes: int) -> int:
    return 1 if nbytes >= L2_ROTATE else min(16, math.ceil(L2_ROTATE / nbytes))


def graph_calls(a, counted: int) -> int:
    return max(3, min(a.graph_calls, int(GRAPH_BYTES // max(counted, 1))))


def repeats(a, nbytes: int) -> int:
    return a.repeat if nbytes < 1e9 else max(10, a.repeat // 2)


def sweep_spec(total: int, n: int) -> Spec:
    return [((total // 4 // n,), "float32")] * n


def parse_bytes(text: str) -> int:
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(float(t[:-1] if t[-1:] in "KMG" else t) * mult)


def describe(spec: Spec) -> str:
    """'64x[4096,4096] bf16, ...' in the order the shapes first appear."""
    short = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
    counts = Counter((s, d) for s, d in spec)
    return ", ".join(f"{c}x[{','.join(map(str, s))}] {short[d]}" for (s, d), c in counts.items())


# ---------------------------------------------------------------------------------------- GPU helpers


def make_list(torch, spec: Spec, scale: float | None = None) -> list:
    out = []
    for shape, dtype in spec:
        t = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype))
        out.append(t.mul_(scale) if scale is not None else t)
    return out


def get_total_norm(torch):
    f = getattr(torch.nn.utils, "get_total_norm", None)
    if f is None:  # torch before 2.6
        from torch.nn.utils import clip_grad

        f = clip_grad._get_total_norm
    return f


def ref_total64(torch, ts) -> float:
    """The list's 2-norm in float64."""
    sq = torch.zeros((), dtype=torch.float64, device="cuda")
    for t in ts:
        sq += torch.linalg.vector_norm(t, 2, dtype=torch.float64).square()
    return float(sq.sqrt())


def ref_norms64(torch, ts):
    return torch.stack([torch.linalg.vector_norm(t, 2, dtype=torch.float64) for t in ts])


def ref_amax(torch, ts):
    return torch.stack([t.abs().amax().float() for t in ts])


def rel_err(torch, got, want) -> float:
    """max |got - want| / |want|, elementwise; inf on a shape mismatch, nan on NaN."""
    g = torch.as_tensor(got).detach().double().reshape(-1).cpu()
    w = torch.as_tensor(want).detach().double().reshape(-1).cpu()
    if g.shape != w.shape:
        return math.inf
    return float(((g - w).abs() / w.abs().clamp_min(1e-30)).max()) if g.numel() else 0.0


def judge(err64: float, err_t: float | None, tol_t: float, tol64: float = NORM_TOL) -> str:
    text = f"err64={err64:.1e}" + (f" err_torch={err_t:.1e}" if err_t is not None else "")
    ok = err64 <= tol64 and (err_t is None or err_t <= tol_t)
    return ("ok " if ok else f"WRONG (tol {tol64:.0e}, torch {tol_t:.1e}) ") + text


def result_shape_ok(torch, got, n: int | None) -> str:
    shape = () if n is None else (n,)
    if not hasattr(got, "dtype") or got.dtype != torch.float32 or tuple(got.shape) != shape:
        what = f"{getattr(got, 'dtype', type(got).__name__)}{list(getattr(got, 'shape', []))}"
        return f"WRONG result type {what} (want float32{list(shape)})"
    return ""


class Recorder:
    """Calls ``fn`` and keeps (argument, result): the last ``calls`` of them after
    RA.graph_us are the captured calls, their results the last replay's."""

    def __init__(self, fn):
        self.fn, self.outs = fn, []

    def __call__(self, x):
        y = self.fn(x)
        self.outs.append((x, y))
        return y


def pair_us(torch, fa, fb, arg_a, arg_b, repeat: int, flush=None) -> tuple[float, float]:
    """RA.call_pair_us with an argument maker per side (``arg(i)``, made before the
    events) and an optional L2 flush before each sample; medians."""
    for i in range(3):
        fa(arg_a(i))
        fb(arg_b(i))
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(repeat):
        for k in (0, 1) if i % 2 == 0 else (1, 0):
            fn, x = (fa, arg_a(i)) if k == 0 else (fb, arg_b(i))
            if flush is not None:
                flush()
            times[k].append(RA._timed_us(torch, fn, x))
    return statistics.median(times[0]), statistics.median(times[1])


def host_us(torch, fn, x, loops: int = 5) -> float:
    """The host's time per call of ``fn(x)``: HOST_LOOP calls back to back (no
    synchronisation inside: the GPU runs behind), median of ``loops`` loops."""
    for _ in range(3):
        fn(x)
    times = []
    for _ in range(loops):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(HOST_LOOP):
            fn(x)
        times.append((time.perf_counter() - t0) / HOST_LOOP * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def alone_us(torch, fn, arg, repeat: int, flush=None) -> float:
    for i in range(3):
        fn(arg(i))
    times = []
    for i in range(repeat):
        x = arg(i)
        if flush is not None:
            flush()
        times.append(RA._timed_us(torch, fn, x))
    return statistics.median(times)


def _line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: " + (s[0] if s else "")[:160]


def load_bulkred() -> tuple[dict, str]:
    """The five functions (``bulkred.<name>``, else ``bulkred_dialect.foreach.<name>``)
    and a note on the missing ones."""
    fns: dict[str, Any] = {}
    notes = []
    try:
        import bulkred_dialect as bulkred
    except Exception as e:  # noqa: BLE001 - every row then times torch alone
        return {}, f"import bulkred_dialect: {_line(e)}"
    for name in NAMES:
        try:
            fns[name] = getattr(bulkred, name)
        except Exception:  # noqa: BLE001 - not exported (yet): the module itself
            try:
                fns[name] = getattr(importlib.import_module("bulkred_dialect.foreach"), name)
            except ModuleNotFoundError as e:
                notes.append(f"bulkred_dialect.foreach: {_line(e)}")
            except Exception as e:  # noqa: BLE001
                notes.append(f"bulkred.{name}: {_line(e)}")
    return fns, "; ".join(dict.fromkeys(notes))


def bulkred_error_types() -> tuple[type, ...]:
    try:
        from bulkred_dialect.errors import BulkredError

        return (BulkredError,)
    except Exception:  # noqa: BLE001
        return ()


# ---------------------------------------------------------------------------------------- one row


def bench_row(torch, B: dict, bnote: str, row: Row, a) -> dict:
    spec = row.spec()
    nbytes = spec_bytes(spec)
    counted = nbytes * FACTOR[row.op]
    r: dict[str, Any] = {"row": row.name, "op": row.op, "torch": row.torch_text, "tensors": len(spec),
                         "dtypes": sorted({d for _, d in spec}), "bytes": nbytes, "bytes_counted": counted}
    copies = copies_of(nbytes) if row.op in ("total_norm", "foreach_norm", "foreach_amax") else 1
    free, _ = torch.cuda.mem_get_info()
    if nbytes * copies > 0.85 * free:
        r["status"] = f"skipped: needs {nbytes * copies / 1e9:.1f} GB, {free / 1e9:.1f} GB free"
        return r
    half = any(d != "float32" for _, d in spec)
    gtn = get_total_norm(torch)
    scale = CLIP_SCALE if row.op == "clip_grad_norm_" else None
    lists = [make_list(torch, spec, scale) for _ in range(copies)]
    flush_buf = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda") if nbytes < L2_ROTATE else None
    flush = (lambda: flush_buf.fill_(7)) if flush_buf is not None else None
    gcalls, repeat = graph_calls(a, counted), repeats(a, nbytes)
    r.update(copies=copies, graph_calls=gcalls, repeat=repeat)
    bfn = B.get(row.op)
    dev = "cuda"
    inv_one = torch.ones(1, dtype=torch.float32, device=dev)
    found_b = torch.zeros(1, dtype=torch.float32, device=dev)
    found_t = torch.zeros(1, dtype=torch.float32, device=dev)
    n_out = len(spec) if row.op in ("foreach_norm", "foreach_amax") else None

    # the two calls, their arguments and the float64 (or exact) reference of a bulkred result
    targs = lists
    if row.op == "total_norm":
        fb = lambda ts: bfn(ts)
        ft = lambda ts: gtn(ts, 2.0)
    elif row.op == "foreach_norm":
        fb = lambda ts: bfn(ts, 2)
        ft = lambda ts: torch.stack(torch._foreach_norm(ts, 2))
    elif row.op == "foreach_amax":
        fb = lambda ts: bfn(ts)
        ft = lambda ts: torch.stack(torch._foreach_norm(ts, math.inf))
    elif row.op == "unscale_and_norm_":
        fb = lambda ts: bfn(ts, inv_one, found_b)

        def ft(ts):
            torch._amp_foreach_non_finite_check_and_unscale_(ts, found_t, inv_one)
            return gtn(ts, 2.0)
    else:  # clip_grad_norm_
        fb = lambda ts: bfn(ts, row.max_norm)
        params = []
        for g in lists[0]:
            p = torch.nn.Parameter(torch.empty((), dtype=g.dtype, device=dev).expand(g.shape))
            p.grad = g
            params.append(p)
        targs = [params]
        ft = lambda ps: torch.nn.utils.clip_grad_norm_(ps, row.max_norm)
    if row.op == "foreach_norm":
        ref, tol64 = (lambda ts: ref_norms64(torch, ts)), NORM_TOL
    elif row.op == "foreach_amax":
        ref, tol64 = (lambda ts: ref_amax(torch, ts)), 0.0
    else:
        ref, tol64 = (lambda ts: ref_total64(torch, ts)), NORM_TOL
    tol_t = 0.0 if row.op == "foreach_amax" else HALF_TOL if half else NORM_TOL

    errs = bulkred_error_types()
    r["check"] = ""
    if bfn is None:
        r["status"] = f"unsupported: bulkred.{row.op} is missing ({bnote})"
    else:
        try:
            r["check"] = check_row(torch, row, lists[0], targs[0], bfn, ft, gtn, ref, tol64, tol_t, n_out, r)
        except errs as e:
            r["status"] = f"unsupported: {_line(e)}"
        except Exception as e:  # noqa: BLE001 - reported in the row, torch is timed anyway
            r["status"] = f"error: {_line(e)}"
            traceback.print_exc(limit=4)
        torch.cuda.synchronize()
    bulkred_ok = "status" not in r

    # GPU time: torch, then bulkred (each list warmed up before the capture)
    try:
        r["torch_graph_us"] = RA.graph_us(torch, ft, targs, gcalls, a.replays)
    except Exception as e:  # noqa: BLE001
        r["torch_graph_error"] = _line(e)
        torch.cuda.synchronize()
    if bulkred_ok:
        rec = Recorder(fb)
        try:
            for x in lists:
                fb(x)
            RA.RELAXED.clear()
            r["bulkred_graph_us"] = RA.graph_us(torch, rec, lists, gcalls, a.replays)
            if RA.RELAXED:
                r["bulkred_graph_note"] = "captured with capture_error_mode='relaxed'"
            r["graph_check"] = graph_check(torch, rec.outs[-gcalls:], ref, tol64)
        except Exception as e:  # noqa: BLE001
            r["bulkred_graph_error"] = _line(e)
            torch.cuda.synchronize()
        del rec

    # per call: the same list every call, bulkred and torch taking turns
    if bulkred_ok:
        try:
            r["bulkred_call_us"], r["torch_call_us"] = pair_us(
                torch, fb, ft, lambda i: lists[0], lambda i: targs[0], repeat, flush)
            if row.new_list:
                base = lists[0]
                # the unchanged list alone (above: taking turns with torch's call over the same tensors)
                r["bulkred_call_same_us"] = alone_us(torch, fb, lambda i: base, repeat, flush)
                r["bulkred_call_equal_us"] = alone_us(torch, fb, lambda i: list(base), repeat, flush)
                r["bulkred_call_new_us"] = alone_us(torch, fb, lambda i: [t.view_as(t) for t in base], repeat, flush)
                # new tensors at new addresses each call: more lists than the table cache holds, in turn
                pool = [make_list(torch, spec, scale) for _ in range(FRESH_POOL)]
                r["bulkred_call_fresh_us"] = alone_us(torch, fb, lambda i: pool[i % FRESH_POOL], repeat, flush)
                del pool
                # a bulkred.tensor_list of the list, made once (checked once)
                if "tensor_list" in B:
                    tl = B["tensor_list"](lists[0])
                    r["bulkred_call_handle_us"] = alone_us(torch, fb, lambda i: tl, repeat, flush)
                    r["bulkred_host_handle_us"] = host_us(torch, fb, tl)
                r["bulkred_host_us"] = host_us(torch, fb, base)
        except Exception as e:  # noqa: BLE001 - the row keeps its GPU times
            r["check"] += f"; error in the per-call loop: {_line(e)}"
            torch.cuda.synchronize()
    else:
        r["torch_call_us"] = alone_us(torch, ft, lambda i: targs[0], repeat, flush)

    # the in-place rows' state after the timed calls
    if bulkred_ok and row.op == "unscale_and_norm_":
        fb_, ft_ = float(found_b), float(found_t)
        r["found_inf_after"] = [fb_, ft_]
        if fb_ != 0.0:
            r["check"] += f"; WRONG found_inf={fb_} on finite grads"
    if bulkred_ok and row.op == "clip_grad_norm_":
        now = ref_total64(torch, lists[0])
        r["norm_after"] = now
        r["coef_steady"] = min(1.0, row.max_norm / (now + 1e-6))
        r["note"] = (f"grads = randn x {CLIP_SCALE:g}: norm {r['norm_first']:.3f} before the first clip, "
                     f"coefficient {r['coef_first']:.4f}; then norm {now:.4f}, coefficient "
                     f"{r['coef_steady']:.7f} each call; GB/s counts 3x the list (read, read, write)")
    if row.op == "unscale_and_norm_":
        r["note"] = ("timed with inv_scale = 1.0 (repeated in-place calls do not drift to inf/0); "
                     "checked with 0.5, restored by torch's 2.0; GB/s counts 2x the list (read + write)")
    if row.new_list:
        r["note"] = "new list: [t.view_as(t) for t in grads] each call (zero_grad(set_to_none=True))"
    if bulkred_ok:
        text = r.get("check", "") + r.get("graph_check", "")
        r["status"] = "WRONG" if "WRONG" in text else "error" if "error in" in text else "ok"
    return finish(r)


def check_row(torch, row: Row, ts, targ, bfn, ft, gtn, ref, tol64, tol_t, n_out, r) -> str:
    """The first bulkred call, checked; returns the check text (WRONG when off)."""
    if row.op == "unscale_and_norm_":
        return check_unscale(torch, ts, bfn, gtn, r)
    if row.op == "clip_grad_norm_":
        return check_clip(torch, ts, targ, bfn, ft, gtn, tol_t, r, row.max_norm)
    want64 = ref(ts)
    want_t = ft(ts)
    t0 = time.perf_counter()
    got = bfn(ts, 2) if row.op == "foreach_norm" else bfn(ts)
    torch.cuda.synchronize()
    r["first_call_s"] = time.perf_counter() - t0
    bad = result_shape_ok(torch, got, n_out)
    if bad:
        return bad
    r["result"] = float(got) if n_out is None else None
    r["torch_result"] = float(want_t) if n_out is None else None
    return judge(rel_err(torch, got, want64), rel_err(torch, got, want_t.float()), tol_t, tol64)


def check_unscale(torch, ts, bfn, gtn, r) -> str:
    """inv_scale 0.5 through bulkred (norm halved, sampled grads exactly halved, every
    grad halved: the float64 norm after; found_inf 0), then torch's unscale with 2.0
    (restoring the data exactly) and its norm."""
    half = torch.full((1,), 0.5, device="cuda")
    two = torch.full((1,), 2.0, device="cuda")
    found_b = torch.zeros(1, device="cuda")
    found_t = torch.zeros(1, device="cuda")
    ref0 = ref_total64(torch, ts)
    tnorm0 = float(gtn(ts, 2.0))
    idx = sorted({0, 4, len(ts) - 1})
    saved = {i: ts[i].clone() for i in idx}
    t0 = time.perf_counter()
    got = bfn(ts, half, found_b)
    torch.cuda.synchronize()
    r["first_call_s"] = time.perf_counter() - t0
    bad = result_shape_ok(torch, got, None)
    if bad:
        return bad
    out = [judge(rel_err(torch, got, ref0 * 0.5), rel_err(torch, got, tnorm0 * 0.5), NORM_TOL)]
    if not all(torch.equal(ts[i], saved[i] * 0.5) for i in idx):
        out.append("WRONG sampled grads not exactly halved")
    after = ref_total64(torch, ts)
    if abs(after - ref0 * 0.5) > NORM_TOL * ref0 * 0.5:
        out.append(f"WRONG norm after {after:.6g} (want {ref0 * 0.5:.6g}: not every grad scaled)")
    if float(found_b) != 0.0:
        out.append(f"WRONG found_inf={float(found_b)} on finite grads")
    torch._amp_foreach_non_finite_check_and_unscale_(ts, found_t, two)
    tn = float(gtn(ts, 2.0))
    if not all(torch.equal(ts[i], saved[i]) for i in idx):
        out.append("WRONG data not restored by torch's unscale with 2.0")
    r["result"], r["torch_result"], r["ref64"] = float(got), tn * 0.5, ref0 * 0.5
    r["torch_check"] = f"torch err64={abs(tn - ref0) / ref0:.1e}"
    return "; ".join(out)


def check_clip(torch, ts, params, bfn, ft, gtn, tol_t, r, max_norm: float) -> str:
    """bulkred's first clip: the returned norm against float64 and torch's
    get_total_norm (before clipping), three sampled grads against their saved copies
    times the coefficient (torch's _foreach_mul_ rounds the float product alike, within
    one bf16 step), and the list's float64 norm after (every grad scaled). Then torch's
    clip once (on the clipped grads), its norm against float64."""
    ref0 = ref_total64(torch, ts)
    tnorm0 = float(gtn(ts, 2.0))
    idx = sorted({0, 4, 7, len(ts) - 1})
    saved = {i: ts[i].clone() for i in idx}
    t0 = time.perf_counter()
    got = bfn(ts, max_norm)
    torch.cuda.synchronize()
    r["first_call_s"] = time.perf_counter() - t0
    bad = result_shape_ok(torch, got, None)
    if bad:
        return bad
    coef = min(1.0, max_norm / (float(got) + 1e-6))
    r.update(norm_first=ref0, coef_first=coef, result=float(got), torch_result=tnorm0)
    out = [judge(rel_err(torch, got, ref0), rel_err(torch, got, tnorm0), tol_t)]
    for i in idx:
        want = (saved[i].float() * coef).to(saved[i].dtype).float()
        if not torch.allclose(ts[i].float(), want, rtol=2.0**-7, atol=1e-30):
            out.append(f"WRONG grad {i} not scaled by {coef:.6g}")
            break
    after = ref_total64(torch, ts)
    if abs(after - ref0 * abs(coef)) > NORM_TOL * ref0 * abs(coef):
        out.append(f"WRONG norm after {after:.6g} (want {ref0 * abs(coef):.6g}: not every grad scaled)")
    tn = float(ft(params))
    r["torch_check"] = f"torch err64={abs(tn - after) / after:.1e} (its clip on the clipped grads)"
    return "; ".join(out)


def graph_check(torch, captured, ref, tol64) -> str:
    """The captured calls' results (after the last replay) against the reference of
    their lists now."""
    wants: dict[int, Any] = {}
    worst = 0.0
    for x, y in captured:
        if id(x) not in wants:
            wants[id(x)] = ref(x)
        y = y[0] if isinstance(y, tuple) else y
        err = rel_err(torch, y, wants[id(x)])
        worst = math.nan if math.isnan(err) or math.isnan(worst) else max(worst, err)
    ok = worst <= tol64
    return f"{'graph ok' if ok else 'WRONG graph replay'} err64={worst:.1e}"


def finish(r: dict) -> dict:
    RA._finish(r, r.get("bytes_counted", r.get("bytes", 0)))
    for case in ("equal", "new", "fresh", "handle"):  # the other per-call cases, against torch's same-list call
        b, t = r.get(f"bulkred_call_{case}_us"), r.get("torch_call_us")
        if b and t:
            r[f"ratio_call_{case}"] = t / b
    return r


def bench_sweep_point(torch, B: dict, bnote: str, total: int, n: int, a) -> dict:
    spec = sweep_spec(total, n)
    nbytes = spec_bytes(spec)
    r: dict[str, Any] = {"row": "sweep", "op": "total_norm", "n": n, "elems": spec[0][0][0], "tensors": n,
                         "bytes": nbytes, "bytes_counted": nbytes}
    ts = make_list(torch, spec)
    gtn = get_total_norm(torch)
    gcalls = graph_calls(a, nbytes)
    r["graph_calls"] = gcalls
    try:
        r["torch_graph_us"] = RA.graph_us(torch, lambda x: gtn(x, 2.0), [ts], gcalls, a.replays)
    except Exception as e:  # noqa: BLE001
        r["torch_graph_error"] = _line(e)
        torch.cuda.synchronize()
    bfn = B.get("total_norm")
    if bfn is None:
        r["status"] = f"unsupported: bulkred.total_norm is missing ({bnote})"
        return finish(r)
    try:
        want64, want_t = ref_total64(torch, ts), gtn(ts, 2.0)
        t0 = time.perf_counter()
        got = bfn(ts)
        torch.cuda.synchronize()
        r["first_call_s"] = time.perf_counter() - t0
        r["check"] = result_shape_ok(torch, got, None) or judge(
            rel_err(torch, got, want64), rel_err(torch, got, want_t.float()), NORM_TOL)
        rec = Recorder(bfn)
        r["bulkred_graph_us"] = RA.graph_us(torch, rec, [ts], gcalls, a.replays)
        r["graph_check"] = graph_check(torch, rec.outs[-gcalls:], lambda x: ref_total64(torch, x), NORM_TOL)
        del rec
    except bulkred_error_types() as e:
        r["status"] = f"unsupported: {_line(e)}"
    except Exception as e:  # noqa: BLE001
        r["status"] = f"error: {_line(e)}"
        traceback.print_exc(limit=4)
    if "status" not in r:
        r["status"] = "WRONG" if "WRONG" in r.get("check", "") + r.get("graph_check", "") else "ok"
    return finish(r)


def copy_bandwidth(torch, a) -> dict:
    """A 1 GiB device-to-device copy (graph of 10, replayed), bytes read plus written."""
    src = torch.randn((1 << 30) // 4, device="cuda")
    dst = torch.empty_like(src)
    us = RA.graph_us(torch, lambda x: dst.copy_(x), [src], 10, a.replays)
    return {"bytes": 2 << 30, "us": us, "gbps": (2 << 30) / us / 1e3}


# ---------------------------------------------------------------------------------------- output


def fmt(v, spec: str) -> str:
    return "" if v is None else format(v, spec)


def gb(v) -> float | None:
    return None if v is None else v / 1e9


def table(rows: list[dict], head: str) -> str:
    lines = [head, "",
             ("| row | tensors | list GB | GB counted | bulkred GPU us | torch GPU us | torch/bulkred GPU | bulkred GB/s "
              "| torch GB/s | bulkred call us (unchanged list) | torch call us | torch/bulkred call "
              "| bulkred call us (unchanged list, alone) | bulkred call us (equal new list) | bulkred call us (tensor_list) | torch/bulkred (tensor_list) "
              "| bulkred host us (unchanged list; tensor_list) "
              "| bulkred call us (new list) | torch/bulkred (new list) | bulkred call us (new addresses) "
              "| torch/bulkred (new addresses) | status | check |"),
             ("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
              "| ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")]
    for r in rows:
        if r.get("row") == "sweep":
            continue
        status = r.get("status", "")
        for k in ("torch_graph_error", "bulkred_graph_error"):
            if r.get(k):
                status += f" ({k.split('_')[0]} graph: {r[k]})"
        if r.get("bulkred_graph_note"):
            status += f" ({r['bulkred_graph_note']})"
        check = "; ".join(s for s in (r.get("check"), r.get("graph_check"), r.get("torch_check")) if s)
        host = "; ".join(fmt(r.get(k), ".1f") for k in ("bulkred_host_us", "bulkred_host_handle_us") if r.get(k))
        lines.append(
            f"| {r['row']} | {r.get('tensors', '')} | {fmt(gb(r.get('bytes')), '.2f')} "
            f"| {fmt(gb(r.get('bytes_counted')), '.2f')} "
            f"| {fmt(r.get('bulkred_graph_us'), '.1f')} | {fmt(r.get('torch_graph_us'), '.1f')} "
            f"| {fmt(r.get('ratio_graph'), '.2f')} | {fmt(r.get('bulkred_graph_gbps'), '.0f')} "
            f"| {fmt(r.get('torch_graph_gbps'), '.0f')} | {fmt(r.get('bulkred_call_us'), '.1f')} "
            f"| {fmt(r.get('torch_call_us'), '.1f')} | {fmt(r.get('ratio_call'), '.2f')} "
            f"| {fmt(r.get('bulkred_call_same_us'), '.1f')} | {fmt(r.get('bulkred_call_equal_us'), '.1f')} "
            f"| {fmt(r.get('bulkred_call_handle_us'), '.1f')} | {fmt(r.get('ratio_call_handle'), '.2f')} "
            f"| {host} "
            f"| {fmt(r.get('bulkred_call_new_us'), '.1f')} | {fmt(r.get('ratio_call_new'), '.2f')} "
            f"| {fmt(r.get('bulkred_call_fresh_us'), '.1f')} | {fmt(r.get('ratio_call_fresh'), '.2f')} "
            f"| {status} | {check} |")
    sweep = [r for r in rows if r.get("row") == "sweep"]
    if sweep:
        lines += ["", "Sweep: one list of N equal float32 tensors, total_norm against get_total_norm, GPU time.", "",
                  ("| N | elements each | GB | bulkred GPU us | torch GPU us | torch/bulkred | bulkred GB/s | torch GB/s "
                   "| status | check |"),
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
        for r in sweep:
            check = "; ".join(s for s in (r.get("check"), r.get("graph_check")) if s)
            lines.append(
                f"| {r['n']} | {r.get('elems', '')} | {fmt(gb(r.get('bytes')), '.3f')} "
                f"| {fmt(r.get('bulkred_graph_us'), '.1f')} | {fmt(r.get('torch_graph_us'), '.1f')} "
                f"| {fmt(r.get('ratio_graph'), '.2f')} | {fmt(r.get('bulkred_graph_gbps'), '.0f')} "
                f"| {fmt(r.get('torch_graph_gbps'), '.0f')} | {r.get('status', '')} | {check} |")
    notes = [f"- {r['row']}: {r['note']}" for r in rows if r.get("note")]
    if notes:
        lines += ["", "Notes:", *notes]
    return "\n".join(lines)


def plot(rows: list[dict], copy: dict | None, path: str, gpu: str) -> str:
    sweep = [r for r in rows if r.get("row") == "sweep" and r.get("bytes")]
    if not sweep:
        return "plot skipped: no sweep rows"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed on this machine"
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for who, style in (("bulkred", "-o"), ("torch", "--x")):
        pts = [(r["n"], r[f"{who}_graph_gbps"]) for r in sweep if r.get(f"{who}_graph_gbps")]
        if pts:
            ax.plot(*zip(*pts), style, label=f"{who} total_norm" if who == "bulkred" else "torch get_total_norm")
    if copy:
        ax.axhline(copy["gbps"], color="gray", linestyle=":", label=f"1 GiB copy (read + write) {copy['gbps']:.0f} GB/s")
    ax.set_xscale("log")
    ax.set_xlabel("N tensors (same total bytes)")
    ax.set_ylabel("GB/s read (GPU time)")
    total = sweep[0]["bytes"]
    ax.set_title(f"{total / (1 << 30):.3g} GiB float32 in N tensors, {gpu}", fontsize=9)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return f"plot: {path}"


def write(rows: list[dict], a, head: str, meta: dict, copy: dict | None, plot_too: bool) -> str:
    os.makedirs(a.out, exist_ok=True)
    note = plot(rows, copy, os.path.join(a.out, "foreach_sweep.png"), meta.get("gpu", "")) if plot_too else ""
    with open(os.path.join(a.out, "foreach.md"), "w") as f:
        f.write(table(rows, head) + "\n" + (f"\n{note}\n" if note else ""))
    with open(os.path.join(a.out, "foreach.json"), "w") as f:
        json.dump({**meta, "copy": copy, "args": vars(a), "rows": rows}, f, indent=1)
    return note


def dry_run(names: list[str], a) -> None:
    total = 0
    for name in names:
        if name == "sweep":
            sweep_total = parse_bytes(a.sweep_total)
            for n in a.ns:
                spec = sweep_spec(sweep_total, n)
                nb = spec_bytes(spec)
                print(f"sweep n={n:>6}: {describe(spec)}; {nb} bytes ({nb / 1e9:.3f} GB); "
                      f"graph calls {graph_calls(a, nb)}")
            continue
        row = ROWS[name]
        spec = row.spec()
        nb = spec_bytes(spec)
        counted = nb * FACTOR[row.op]
        copies = copies_of(nb) if row.op in ("total_norm", "foreach_norm", "foreach_amax") else 1
        total = max(total, nb * copies)
        print(f"{name}: {row.op} vs {row.torch_text}; {len(spec)} tensors, {nb} bytes ({nb / 1e9:.2f} GB), "
              f"GB/s counts {counted / 1e9:.2f} GB; copies {copies}; graph calls {graph_calls(a, counted)}; "
              f"per-call samples {repeats(a, nb)}{'; + new-list per call' if row.new_list else ''}"
              f"{'; L2 flush per sample' if nb < L2_ROTATE else ''}")
        print(f"    {describe(spec)}")
    print(f"1 GiB copy: 2 x {1 << 30} bytes; largest row on the GPU: {total / 1e9:.2f} GB")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default=None,
                   help=f"comma-separated, of: {', '.join([*ROWS, 'sweep'])} (default: all but norms_llama_bf16)")
    p.add_argument("--sweep-total", default="1G", help="the sweep's total bytes (1G = 1 GiB; K, M, G suffixes)")
    p.add_argument("--sweep-ns", default=",".join(map(str, SWEEP_NS)), help="the sweep's tensor counts")
    p.add_argument("--graph-calls", type=int, default=50,
                   help=f"calls per CUDA graph at most (about {GRAPH_BYTES / 1e9:.0f} GB of traffic a graph, at least 3)")
    p.add_argument("--replays", type=int, default=10)
    p.add_argument("--repeat", type=int, default=50, help="per-call samples (half at >= 1 GB)")
    p.add_argument("--budget-s", type=float, default=420.0, help="start no new row after this many seconds")
    p.add_argument("--quick", action="store_true",
                   help=f"rows {', '.join(QUICK_ROWS)} alone (unless --rows), 20 samples, 5 replays, graphs of 20")
    p.add_argument("--dry-run", action="store_true", help="print the lists' shapes and bytes; no GPU, no torch")
    p.add_argument("--out", default=os.environ.get("OUT"))
    a = p.parse_args(argv)
    if a.rows is None:
        a.rows = ",".join(QUICK_ROWS if a.quick else DEFAULT_ROWS)
    if a.quick:
        a.repeat, a.replays, a.graph_calls = min(a.repeat, 20), min(a.replays, 5), min(a.graph_calls, 20)
    names = [n.strip() for n in a.rows.split(",") if n.strip()]
    bad = [n for n in names if n not in ROWS and n != "sweep"]
    if bad:
        p.error(f"unknown row: {', '.join(bad)}")
    try:
        a.ns = [int(n) for n in a.sweep_ns.split(",") if n.strip()]
        parse_bytes(a.sweep_total)
    except ValueError as e:
        p.error(f"--sweep-ns/--sweep-total: {e}")
    if a.dry_run:
        dry_run(names, a)
        return 0

    import torch

    if not torch.cuda.is_available():
        print("foreach: no CUDA device (use --dry-run for the shapes)", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name()
    B, bnote = load_bulkred()
    t0 = time.time()
    copy = copy_bandwidth(torch, a)
    torch.cuda.empty_cache()
    meta = {"gpu": gpu, "torch": torch.__version__, "missing": bnote}
    head = (f"GPU: {gpu}; torch {torch.__version__}; 1 GiB device-to-device copy: {copy['gbps']:.0f} GB/s "
            f"(bytes read + written, {copy['us']:.1f} us)")
    print(f"foreach: {head}", flush=True)
    if bnote:
        print(f"foreach: missing: {bnote}", flush=True)
    rows: list[dict] = []
    jobs = [(n, None) for n in names if n != "sweep"] + ([("sweep", k) for k in a.ns] if "sweep" in names else [])
    for name, n in jobs:
        if time.time() - t0 > a.budget_s:
            rows.append({"row": name, **({"n": n} if n else {}), "status": f"skipped: past the budget of {a.budget_s:.0f} s"})
            print(f"{name} {n or ''}: {rows[-1]['status']}", flush=True)
            continue
        try:
            if n is None:
                r = bench_row(torch, B, bnote, ROWS[name], a)
            else:
                r = bench_sweep_point(torch, B, bnote, parse_bytes(a.sweep_total), n, a)
        except Exception as e:  # noqa: BLE001 - one row says what broke; the others run
            r = {"row": name, **({"n": n} if n else {}), "status": f"error: {_line(e)}"}
            traceback.print_exc(limit=4)
        rows.append(r)
        call = "" if n is not None else (
            f" call {fmt(r.get('bulkred_call_us'), '.1f')} us (torch {fmt(r.get('torch_call_us'), '.1f')}, "
            f"x{fmt(r.get('ratio_call'), '.2f')});")
        if r.get("bulkred_call_equal_us") is not None:
            call += f" equal new list {r['bulkred_call_equal_us']:.1f} us;"
        if r.get("bulkred_host_us") is not None:
            call += (f" host per call {r['bulkred_host_us']:.1f} us (tensor_list "
                     f"{fmt(r.get('bulkred_host_handle_us'), '.1f')});")
        if r.get("bulkred_call_new_us") is not None:
            call += f" new list {r['bulkred_call_new_us']:.1f} us (x{fmt(r.get('ratio_call_new'), '.2f')});"
        if r.get("bulkred_call_handle_us") is not None:
            call += (f" tensor_list {r['bulkred_call_handle_us']:.1f} us "
                     f"(x{fmt(r.get('ratio_call_handle'), '.2f')});")
        if r.get("bulkred_call_fresh_us") is not None:
            call += (f" new addresses {r['bulkred_call_fresh_us']:.1f} us "
                     f"(x{fmt(r.get('ratio_call_fresh'), '.2f')});")
        checks = "; ".join(c for c in (r.get("check"), r.get("graph_check")) if c)
        print(f"{name}{'' if n is None else f' n={n}'}: GPU {fmt(r.get('bulkred_graph_us'), '.1f')} us "
              f"(torch {fmt(r.get('torch_graph_us'), '.1f')}, x{fmt(r.get('ratio_graph'), '.2f')}) "
              f"{fmt(r.get('bulkred_graph_gbps'), '.0f')} GB/s;{call} {r.get('status', '')}"
              f"{f' [{checks}]' if checks else ''}", flush=True)
        gc.collect()
        torch.cuda.empty_cache()
        if a.out:  # after each row: a run cut short still leaves its rows
            write(rows, a, head, meta, copy, plot_too=False)
    md = table(rows, head)
    print("\n" + md + f"\n\nbenchmark time: {time.time() - t0:.0f} s", flush=True)
    if a.out:
        print(write(rows, a, head, meta, copy, plot_too=True))
    else:
        print("no --out and no $OUT: foreach.md, foreach.json and the plot not written")
    return 0 if all(not str(r.get("status", "")).startswith(("error", "WRONG")) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
