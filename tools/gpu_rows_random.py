"""The random differential of the row functions (docs/rows.md: ``bulkred.softmax``,
``log_softmax``, ``rms_norm``, ``layer_norm``, ``add_rms_norm``, ``cross_entropy``) on the
GPU machine, against torch's own functions in float64 (issue 30, "Done means").

    python3 tools/gpu_rows_random.py [--seed S] [--count 400] [--grads] [--out DIR] [--timeout 500]
    python3 tools/gpu_rows_random.py --seed S --only 17 42     # repeat draws, verbose
    python3 tools/gpu_rows_random.py --stand-in                # torch in float32 as the function under test
    python3 tools/gpu_rows_random.py --device cpu --stand-in --cap 4096   # the same without a GPU

The draws run in --jobs worker processes (default min(6, CPUs - 2); each compiles its own
kernels), in order of K; --timeout stops starting draws (those left are counted "not run");
the report (per op: draws, passed, failed, refused, with the backward checked, the worst
error / bound and against torch's own; the failures, each with the command that repeats
it; the refusals by message) goes to stdout and, with --out, to rows_random.json there.

The seed is printed first and last. Draw K of seed S is drawn from (S, K) alone (the same
with or without --grads), so ``--seed S --only K`` repeats one failure. Each draw:

- an op among the six, x of float32, bfloat16 or float16; weights (and layer_norm's bias)
  absent, of x's dtype or float32; eps None (rms_norm's machine epsilon), 0, 1e-12 ... 1;
  softmax's ``dtype=`` now and then;
- M from 1 to 65,536 and N from 1 to 300,000, log-uniform (one draw in six N at a
  variant's edge: 1024/1025, 16384/16385, 65536/65537, ...), M * N at most 2^26 (M lowered);
  1-D (M = 1), 2-D or 3-D x (two leading dimensions merged into one row stride); rms_norm
  and layer_norm now and then with a normalized_shape of two dimensions;
- rows padded (a slice of a wider buffer: x[..., :N] of rows of N + pad) or at an odd
  storage offset (the last dimension contiguous); add_rms_norm's residual padded as x or
  contiguous;
- magnitudes 10^-3 to 10^3, one draw in ten far out (10^+-6 to 10^+-15; float16 within its
  range), layer_norm's rows now and then shifted far from 0;
- in about 30% of the draws special rows: a NaN, +inf or -inf at a random column (0 and
  N - 1 among them), a row of all -inf, a row of zeros, a row 10^10 times larger or
  smaller (float16: within its range);
- cross_entropy: [M, C] logits (or [C] with a 0-d target), targets 0 and C - 1 among them,
  rows of ignore_index (-100, -1 or a class), all rows ignored now and then (mean: NaN),
  label_smoothing 0, 1 or in (0, 1), reduction none, sum or mean.

The backward of the odd draws (about half) runs with --grads: dx (and dweight, dbias,
d residual) of a random upstream gradient in the output's dtype through torch's autograd,
against torch's autograd of the float64 reference; non-finite values only in the
softmaxes' and cross_entropy's backward draws (torch's composite formulas of the norms
give NaN patterns the kernels' formulas need not: docs/rows.md promises torch's
non-finite behaviour for the forward), none in ignored rows, never every row ignored.

Reference and comparison. ``ref`` is torch's function on the inputs upcast to float64
(add_rms_norm: h = x + residual rounded to x's dtype first, as torch's own ``x +
residual``; rms_norm's eps=None: x's machine epsilon); ``own`` is torch's function in
x's dtype (a float32 weight of a 16-bit x as torch takes it, else converted to x's
dtype). NaN must be where ``own`` has NaN (where ref has it without ``own``) and nowhere
else: torch's CUDA rms_norm gives a row holding an infinity NaN throughout on some
paths (its float64 kernel; some row lengths of the others) and NaN at the infinity, 0
elsewhere, on others, so such a row may take either (:func:`_inf_rows_as_either`); +-inf where ref, rounded to the
result's dtype, has it (same sign), and nowhere else. On the finite elements each error
is measured in units of its result dtype's epsilon times the result, plus float32's
epsilon times a scale of the float32 arithmetic's own error:

    e_i = |got_i - ref_i| / (eps(dtype) |ref_i| + eps(float32) a_i + floor(dtype))

where a_i is the absolute size of what float32 arithmetic cancels there (softmax:
p |ln p| (the exponent's rounding); log_softmax: |x| + |max| + 1; rms_norm: 0;
layer_norm: (|x| + |mean| + mean |x|) rstd |w| + |b|; cross_entropy: |max| + (1 - s)|x_t| +
s mean|x| + 1, the rows' sum for sum and mean; the gradients likewise from their
formulas: docs in :func:`scales`), floor = 2^-126 (flushed subnormals) or float16's
2^-24.

- float32 results: max e_i <= 4 (sqrt(L) + 4), L the reduction's length (N for a row; M
  for dweight and dbias; M + N for sum and mean): 8 u (sqrt(L) + 4) relative, u = 2^-24.
- bfloat16 and float16 results: max e_i' <= 2 max e_own' + 2, e_own' the same measure of
  torch's own result and e_i' the error less the float32 arithmetic's share, the one a
  float32 result has (|got - ref| - 4 (sqrt(L) + 4) u (|ref| + a_i), at least 0, in units
  w_i): no farther from float64 than torch's own, times 2, plus 2 units of the dtype.
  (Where |ref| dominates, the share is 4 (sqrt(L) + 4) 2^-23 / eps(dtype) units, as
  before; where the result cancels, a_i dominates and the share is that of a float32
  result: seed 311131's draw 307 on the H200, a bfloat16 layer_norm with a bias, N =
  223,334, 3.2 float32 units of a_i at an element of 6e-7.)
- add_rms_norm's h: equal to torch's x + residual (NaN where it has NaN).
- the softmaxes' dx when ``dtype=`` is not x's: x's dtype, with torch's own error (times 2)
  added to its bound, as for a 16-bit result (dx carries y's rounding to that dtype), and
  that dtype's floor (y's subnormals: float16's 2^-24).

Each check's worst e / bound and e / e_own ("vs torch", torch's own error in the same
draw) are reported per op. A draw refused with a BulkredError is "refused" (not a
failure), counted by its message (numbers as #); the docs' refusal list is in
docs/rows.md, "Refused", and the draws only take forms the docs say are supported.

Needs torch (CUDA) and bulkred; importable without either (the CPU test,
tests/test_rows_random_tool.py, runs the drawing and the comparison on CPU torch).
Exit status 1 when any draw failed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

OPS = ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy")
DTYPES = ("float32", "bfloat16", "float16")
MAX_M = 65536
MAX_N = 300_000
CAP = 1 << 26  # M * N at most
EDGE_NS = (1, 2, 31, 32, 33, 127, 1023, 1024, 1025, 4096, 4097, 8191, 16384, 16385, 65536, 65537, 131073, 262144,
           300000)
PADS = (0, 0, 0, 0, 0, 1, 3, 4, 8, 61, 128)
EPS_RMS = (None, None, 0.0, 1e-12, 1e-6, 1e-5, 1e-2, 1.0)
EPS_LN = (1e-5, 1e-5, 0.0, 1e-12, 1e-6, 1e-2, 1.0)
SPECIALS = ("nan", "+inf", "-inf", "all -inf", "zeros", "big", "tiny")
F16_MAX = 60000.0  # float16 data are kept within its range (65504): no inf but the placed ones

# the comparison rule (docstring, "Reference and comparison")
F32_K = 4.0  # max e <= F32_K (sqrt(L) + 4) for float32 results
OWN_FACTOR = 2.0  # 16-bit: max e <= OWN_FACTOR max e_own + OWN_ULPS + the float32 share
OWN_ULPS = 2.0
U23 = 2.0**-23  # float32's eps
FLOOR = 2.0**-126

torch = None  # imported by _load()
bulkred = None


# ------------------------------------------------------------------------------ drawing


def _log_uniform(r: random.Random, hi: int) -> int:
    return min(hi, max(1, round(math.exp(r.uniform(0.0, math.log(hi))))))


def _divisor(r: random.Random, n: int) -> int | None:
    """A divisor of n strictly between 1 and n (None: n is 1 or prime)."""
    ds = [d for d in range(2, min(n, 2000)) if n % d == 0]
    return r.choice(ds) if ds else None


def draw(seed: int, k: int, cap: int = CAP) -> dict:
    """Draw k of seed: plain data (no torch), from (seed, k) alone (``cap``: M * N at most)."""
    r = random.Random(f"gpu_rows_random:{seed}:{k}")
    op = r.choice(OPS)
    dtype = r.choice(DTYPES)
    grads = k % 2 == 1  # the backward of the odd draws runs with --grads
    n = r.choice(EDGE_NS) if r.random() < 1 / 6 else _log_uniform(r, MAX_N)
    m = _log_uniform(r, MAX_M)
    n = min(n, cap)
    if m * n > cap:
        m = max(1, cap // n)
    d: dict = {"k": k, "op": op, "dtype": dtype, "grads": grads, "m": m, "n": n}
    # the layout: rows of N at a row stride of N + pad, from an element offset of a buffer
    d["pad"] = r.choice(PADS)
    d["offset"] = r.choice((1, 3, 5)) if r.random() < 0.1 else 0
    if m == 1 and r.random() < 0.5:
        lead = []
    elif op == "cross_entropy" or m == 1 or r.random() < 0.6:
        lead = [m]
    else:
        a = _divisor(r, m) or 1
        lead = [a, m // a]
    if op == "cross_entropy" and not lead and r.random() < 0.5:
        lead = [1]
    shape = [*lead, n]
    normalized = [n]
    if op in ("rms_norm", "layer_norm") and not d["pad"] and not d["offset"] and r.random() < 0.15:
        p = _divisor(r, n)
        if p:
            normalized = [p, n // p]
            shape = [*lead, p, n // p]
    d["shape"], d["normalized"] = shape, normalized
    # options
    if op in ("softmax", "log_softmax"):
        d["out_dtype"] = r.choice(DTYPES) if r.random() < 0.1 else None  # softmax's dtype=
    if op in ("rms_norm", "layer_norm", "add_rms_norm"):
        d["weight"] = r.choice((None, dtype, "float32"))
        d["eps"] = r.choice(EPS_LN if op == "layer_norm" else EPS_RMS)
    if op == "layer_norm":
        d["bias"] = r.choice((None, d["weight"] or r.choice((dtype, "float32"))))
        d["shift"] = r.choice((0.0, 0.0, 0.0, 0.5, r.uniform(1.0, 100.0)))
    if op == "add_rms_norm":
        d["residual_padded"] = r.random() < 0.5
    if op == "cross_entropy":
        d["ignore_index"] = r.choice((-100, -100, -100, -1, r.randrange(n)))
        d["ignored"] = r.choice((0.0, 0.0, 0.1, 0.5, 1.0 if not grads else 0.5))
        d["label_smoothing"] = r.choice((0.0, 0.0, 1.0, r.uniform(0.0, 1.0)))
        d["reduction"] = r.choice(("none", "sum", "mean"))
    # values: magnitudes, specials
    if r.random() < 0.1:
        e = r.uniform(6.0, 15.0) if dtype != "float16" else r.uniform(2.0, 3.5)
        e_small = r.uniform(6.0, 15.0) if dtype != "float16" else r.uniform(3.0, 6.0)
        d["scale"] = 10.0 ** (e if r.random() < 0.5 else -e_small)
    else:
        d["scale"] = 10.0 ** r.uniform(-3.0, 3.0)
    specials = []
    if r.random() < 0.3 and not (grads and op in ("rms_norm", "layer_norm", "add_rms_norm")):
        kinds = SPECIALS if not grads else ("nan", "+inf", "-inf", "all -inf")
        for _ in range(r.randint(1, 3)):
            row = r.randrange(m)
            col = r.choice((0, n - 1, r.randrange(n)))
            specials.append([r.choice(kinds), row, col])
    d["specials"] = specials
    d["gen_seed"] = r.getrandbits(62)
    return d


def describe(d: dict) -> str:
    parts = [f"draw {d['k']}: {d['op']} {d['dtype']} x{d['shape']} (M={d['m']}, N={d['n']})"]
    if d["pad"]:
        parts.append(f"pad {d['pad']}")
    if d["offset"]:
        parts.append(f"offset {d['offset']}")
    if d["normalized"] != [d["n"]]:
        parts.append(f"normalized_shape {d['normalized']}")
    for key in ("out_dtype", "weight", "bias", "eps", "shift", "residual_padded", "ignore_index", "ignored",
                "label_smoothing", "reduction"):
        if key in d and (d[key] is not None or key in ("weight", "eps")):
            v = d[key]
            parts.append(f"{key} {v:.3g}" if isinstance(v, float) else f"{key} {v}")
    parts.append(f"scale {d['scale']:.3g}")
    if d["specials"]:
        parts.append(f"specials {d['specials']}")
    if d["grads"]:
        parts.append("backward")
    return ", ".join(parts)


# ----------------------------------------------------------------------------- building


def _dt(name: str):
    return getattr(torch, name)


def _rows_view(flat, m: int, n: int, stride: int, offset: int, shape: list):
    return flat.as_strided((m, n), (stride, 1), offset).view(shape)


def build(d: dict, device: str) -> dict:
    """The draw's tensors: ``flat`` buffers (the leaves of the backward) and their views."""
    g = torch.Generator(device=device).manual_seed(d["gen_seed"])
    m, n, pad, off = d["m"], d["n"], d["pad"], d["offset"]
    stride = n + pad
    dt = _dt(d["dtype"])
    size = off + (m - 1) * stride + n if m else 0
    base = torch.randn(size, device=device, generator=g)
    base += d.get("shift", 0.0)
    base *= d["scale"]
    rows = base.as_strided((m, n), (stride, 1), off)
    size_of = d["scale"] * (1.0 + abs(d.get("shift", 0.0)))
    for kind, row, col in d["specials"]:  # within what float32 sums of squares hold: |x| 1e-15 to 1e15
        if kind == "big":
            rows[row] *= min(1e10, 1e15 / size_of) if d["dtype"] != "float16" else 100.0
        elif kind == "tiny":
            rows[row] *= max(1e-10, 1e-15 / d["scale"]) if d["dtype"] != "float16" else 1e-3
    if d["dtype"] == "float16":  # h = x + residual stays finite too
        lim = F16_MAX / 2 if d["op"] == "add_rms_norm" else F16_MAX
        base.clamp_(-lim, lim)
    flat = base.to(dt)
    rows = flat.as_strided((m, n), (stride, 1), off)
    for kind, row, col in d["specials"]:
        if kind in ("nan", "+inf", "-inf"):
            rows[row, col] = {"nan": math.nan, "+inf": math.inf, "-inf": -math.inf}[kind]
        elif kind == "all -inf":
            rows[row] = -math.inf
        elif kind == "zeros":
            rows[row] = 0
    t: dict = {"flat": flat, "stride": stride}
    wshape = d["normalized"]
    for key in ("weight", "bias"):
        if d.get(key):
            v = torch.randn(n, device=device, generator=g)
            if key == "weight":
                v = v * 0.5 + 1.0
            t[key] = v.to(_dt(d[key])).view(wshape)
    if d["op"] == "add_rms_norm":
        rstride = stride if d["residual_padded"] else n
        roff = off if d["residual_padded"] else 0
        rsize = roff + (m - 1) * rstride + n if m else 0
        res = torch.randn(rsize, device=device, generator=g) * d["scale"]
        if d["dtype"] == "float16":
            res.clamp_(-F16_MAX / 2, F16_MAX / 2)
        t["res_flat"] = res.to(dt)
        t["res_stride"], t["res_offset"] = rstride, roff
    if d["op"] == "cross_entropy":
        tg = torch.randint(0, n, (m,), device=device, generator=g)
        if m >= 2:
            tg[0], tg[-1] = 0, n - 1
        elif m == 1 and d["gen_seed"] % 2:
            tg[0] = n - 1
        ignored = torch.rand(m, device=device, generator=g) < d["ignored"]
        special_rows = [row for _, row, _ in d["specials"]]
        if special_rows:  # no special values in ignored rows (torch's backward gives NaN there)
            at = torch.tensor(special_rows, device=device)
            ignored[at] = False
            if n > 1:
                tg[at] = torch.where(tg[at] == d["ignore_index"], (tg[at] + 1) % n, tg[at])
        if d["grads"] and m and bool(ignored.all()):
            ignored[0] = False
        tg[ignored] = d["ignore_index"]
        t["target"] = tg
    return t


def views(d: dict, t: dict) -> dict:
    """x (and residual) as the draw's views of the flat buffers (of leaves, in a backward)."""
    v = {"x": _rows_view(t["flat"], d["m"], d["n"], t["stride"], d["offset"], d["shape"])}
    if d["op"] == "add_rms_norm":
        v["residual"] = _rows_view(t["res_flat"], d["m"], d["n"], t["res_stride"], t["res_offset"], d["shape"])
    for key in ("weight", "bias", "target"):
        if key in t:
            v[key] = t[key]
    if d["op"] == "cross_entropy" and len(d["shape"]) == 1:
        v["target"] = v["target"].reshape(())
    return v


# ------------------------------------------------------------------------- the functions


def eps_of(d: dict) -> float | None:
    """The eps the row uses (rms_norm's None: x's machine epsilon)."""
    if "eps" not in d:
        return None
    return float(torch.finfo(_dt(d["dtype"])).eps) if d["eps"] is None else d["eps"]


def call(lib, d: dict, v: dict):
    """The draw's call of ``lib`` (bulkred, or a stand-in of the same signatures): a tuple
    of results (add_rms_norm: y, h)."""
    op, x = d["op"], v["x"]
    if op in ("softmax", "log_softmax"):
        dt = None if d["out_dtype"] is None else _dt(d["out_dtype"])
        return (getattr(lib, op)(x, -1, dt),)
    ns = tuple(d["normalized"])
    if op == "rms_norm":
        return (lib.rms_norm(x, ns, v.get("weight"), d["eps"]),)
    if op == "layer_norm":
        return (lib.layer_norm(x, ns, v.get("weight"), v.get("bias"), d["eps"]),)
    if op == "add_rms_norm":
        return tuple(lib.add_rms_norm(x, v["residual"], v.get("weight"), d["eps"]))
    return (lib.cross_entropy(x, v["target"], None, d["ignore_index"], d["reduction"], d["label_smoothing"]),)


def out_dtype(d: dict):
    if d["op"] in ("softmax", "log_softmax") and d["out_dtype"] is not None:
        return _dt(d["out_dtype"])
    return _dt(d["dtype"])


def torch_call(d: dict, v: dict, compute=None, round_to=None, convert: bool = False):
    """torch's own function on v: in ``compute`` (None: x's dtype, a weight as torch takes it
    or converted to x's dtype; ``convert``: converted), h = x + residual rounded to x's
    dtype, the results rounded to ``round_to`` (None: as torch gives them). Differentiable."""
    F = torch.nn.functional
    op = d["op"]
    x = v["x"]
    cast = (lambda a: a) if compute is None else (lambda a: None if a is None else a.to(compute))
    fin = (lambda a: a) if round_to is None else (lambda a: a.to(round_to))
    if op in ("softmax", "log_softmax"):
        f = torch.softmax if op == "softmax" else torch.log_softmax
        if compute is None:
            return (f(x, -1, dtype=None if d["out_dtype"] is None else _dt(d["out_dtype"])),)
        xc = cast(x)
        if d["out_dtype"] is not None:  # x converted to dtype= first, as torch (its gradient not rounded)
            xc = _through(xc, x.detach().to(_dt(d["out_dtype"])).to(compute))
        return (fin(f(xc, -1)),)
    ns = tuple(d["normalized"])
    eps = eps_of(d)
    w, b = cast(v.get("weight")), cast(v.get("bias"))

    def mixed(fn, a, *ws):  # torch's own with a float32 weight of a 16-bit x, or the weight converted
        if convert:
            return fn(a, *(None if u is None else u.to(a.dtype) for u in ws))
        try:
            with warnings.catch_warnings():  # torch: "Mismatch dtype between input and weight"
                warnings.simplefilter("ignore", UserWarning)
                return fn(a, *ws)
        except RuntimeError:
            return fn(a, *(None if u is None else u.to(a.dtype) for u in ws))

    if op == "rms_norm":
        y = mixed(lambda a, u: F.rms_norm(a, ns, u, eps), cast(x), w)
        return (fin(y if compute is not None else y.to(x.dtype)),)
    if op == "layer_norm":
        y = mixed(lambda a, u, c: F.layer_norm(a, ns, u, c, eps), cast(x), w, b)
        return (fin(y if compute is not None else y.to(x.dtype)),)
    if op == "add_rms_norm":
        r = v["residual"]
        if compute is None:
            h = x + r
        else:  # h rounded to x's dtype, as torch's own x + residual; its gradient that of x + residual
            dt = _dt(d["dtype"])
            h = _through(cast(x) + cast(r), (x.detach().to(dt) + r.detach().to(dt)).to(compute))
        y = mixed(lambda a, u: F.rms_norm(a, (d["n"],), u, eps), h, w)
        return (fin(y if compute is not None else y.to(x.dtype)), fin(h) if compute is not None else h)
    y = F.cross_entropy(cast(x), v["target"], None, ignore_index=d["ignore_index"], reduction=d["reduction"],
                        label_smoothing=d["label_smoothing"])
    return (fin(y if compute is not None else y.to(x.dtype)),)


def _through(a, value):
    """``value`` in the forward, ``a``'s gradient in the backward (h rounded to x's dtype;
    a straight-through ``a + (value - a).detach()`` would turn an inf into NaN)."""

    class Through(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, value):
            return value.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    return Through.apply(a, value)


class TorchStandIn:
    """torch's functions in float32, each result rounded once to the result's dtype: what
    the row kernels promise (float32 accumulation, one rounding), as a stand-in for bulkred
    (--stand-in; the CPU test). ``scale`` multiplies every result, ``nan_at`` (an index of
    the flattened first result) puts a NaN there: deliberately wrong results."""

    def __init__(self, d: dict, scale: float = 1.0, nan_at: int | None = None):
        self.d, self.scale, self.nan_at = d, scale, nan_at

    def _run(self, v: dict) -> tuple:
        outs = torch_call(self.d, v, compute=torch.float32, round_to=out_dtype(self.d))
        outs = tuple(o * self.scale if self.scale != 1.0 else o for o in outs)
        if self.nan_at is not None:
            y = outs[0].clone()
            y.view(-1)[self.nan_at] = math.nan
            outs = (y, *outs[1:])
        return outs

    def _v(self, x, **kw) -> dict:
        return {"x": x, **{k: a for k, a in kw.items() if a is not None}}

    def softmax(self, x, dim=-1, dtype=None):
        return self._run(self._v(x))[0]

    def log_softmax(self, x, dim=-1, dtype=None):
        return self._run(self._v(x))[0]

    def rms_norm(self, x, normalized_shape, weight=None, eps=None):
        return self._run(self._v(x, weight=weight))[0]

    def layer_norm(self, x, normalized_shape, weight=None, bias=None, eps=1e-5):
        return self._run(self._v(x, weight=weight, bias=bias))[0]

    def add_rms_norm(self, x, residual, weight=None, eps=None):
        return self._run(self._v(x, residual=residual, weight=weight))

    def cross_entropy(self, input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        return self._run(self._v(input, target=target))[0]


# ------------------------------------------------------------------------- the scales


def _finite(a):
    return a.nan_to_num(0.0, 0.0, 0.0)


def scales(d: dict, v64: dict, refs: tuple, grads: dict | None = None) -> list[tuple]:
    """For each result (forward, or with ``grads`` the gradients), ``(a, L)``: the absolute
    part a_i of the error scale (the float64 size of what float32 arithmetic cancels there;
    broadcastable to the result) and the reduction's length L.

    Forward: softmax p |ln p|; log_softmax |x| + |max| + 1; rms_norm 0; layer_norm
    (|x| + |mean| + mean |x|) rstd |w| + |b| (x - mean cancels; the mean's own error
    scales with mean |x|); cross_entropy per row |max| + (1 - s)|x_t| + s mean|x|
    + 1 (sum: the rows' sum of |loss| + that; mean: divided by the rows counted).
    Gradients (dy the upstream gradient, p the softmax, xhat the normalized row, c =
    (|x| + |mean| + mean |x|) rstd, g = dy w): softmax dx p (1 + |ln p|) (|dy| + sum |dy| p); log_softmax dx |dy| +
    p (1 + |ln p|) sum |dy|; rms_norm dx rstd (|g| + |xhat| mean |g xhat|), dweight
    sum_rows |dy xhat| (L = M); layer_norm dx rstd (|g| + mean |g| + c mean |g| c),
    dweight sum_rows |dy| c, dbias sum_rows |dy|; add_rms_norm rms_norm's on h, plus |dh|;
    cross_entropy dx |G| (p (1 + |x| + |lse|) + s / N + (1 - s) [j = t]), G the row's
    loss gradient."""
    op, m, n = d["op"], d["m"], d["n"]
    x = v64["x"].reshape(m, n)
    fin = _finite
    mx = fin(x.amax(-1, keepdim=True)) if n else x.sum(-1, keepdim=True)
    eps = eps_of(d)

    def norm_stats(xr):  # mu: what the mean's error scales with, |mean| + mean |x|
        if op == "layer_norm":
            mu = xr.mean(-1, keepdim=True).abs() + xr.abs().mean(-1, keepdim=True)
            var = xr.var(-1, unbiased=False, keepdim=True)
        else:
            mu = torch.zeros_like(xr[:, :1])
            var = (xr * xr).mean(-1, keepdim=True)
        return mu, 1.0 / torch.sqrt(var + eps)

    w = v64.get("weight")
    w = torch.ones(n, dtype=x.dtype, device=x.device) if w is None else w.reshape(n)
    b = v64.get("bias")
    b = torch.zeros(n, dtype=x.dtype, device=x.device) if b is None else b.reshape(n)
    if op == "add_rms_norm":
        xn = refs[1].detach().reshape(m, n)  # h
    else:
        xn = x
    if grads is None:
        if op == "softmax":
            p = refs[0].detach().reshape(m, n)
            return [(fin(p.abs() * torch.log(p.abs()).abs()), n)]
        if op == "log_softmax":
            return [(fin(x.abs() + mx.abs() + 1.0), n)]
        if op in ("rms_norm", "add_rms_norm"):
            return [(torch.zeros((), dtype=x.dtype, device=x.device), n)] * len(refs)
        if op == "layer_norm":
            mu, rstd = norm_stats(x)
            return [(fin((x.abs() + mu) * rstd * w.abs() + b.abs()), n)]
        return [_ce_loss_scale(d, x, mx, v64["target"], refs[0].detach())]
    dy = [a.reshape(m, n) if a.numel() == m * n and a.dim() else a for a in grads["dy"]]
    out = []
    if op == "softmax":
        p = _finite(torch.softmax(x, -1))
        g = dy[0].abs()
        # p (1 + |ln p|): dx carries y's exponent rounding, as the forward's scale p |ln p| does
        out.append(fin(p * (1.0 + fin(torch.log(p).abs())) * (g + (g * p).sum(-1, keepdim=True))))
    elif op == "log_softmax":
        p = _finite(torch.softmax(x, -1))
        lnp = fin(torch.log(p).abs())
        out.append(fin(dy[0].abs() + p * (1.0 + lnp) * dy[0].abs().sum(-1, keepdim=True)))
    elif op in ("rms_norm", "add_rms_norm", "layer_norm"):
        mu, rstd = norm_stats(xn)
        c = (xn.abs() + mu) * rstd
        gy = dy[0] * w
        if op == "layer_norm":
            ga = gy.abs()
            out.append(fin(rstd * (ga + ga.mean(-1, keepdim=True) + c * (ga * c).mean(-1, keepdim=True))))
        else:
            xhat = xn * rstd
            ga = gy.abs()
            dx = rstd * (ga + xhat.abs() * (ga * xhat.abs()).mean(-1, keepdim=True))
            if op == "add_rms_norm":
                dx = dx + dy[1].abs()
            out.append(fin(dx))
            if op == "add_rms_norm":
                out.append(fin(dx))  # d residual: the same
        if "weight" in grads["names"]:
            out.append(fin((dy[0].abs() * c).sum(0)))
        if "bias" in grads["names"]:
            out.append(fin(dy[0].abs().sum(0)))
    else:
        out.append(_ce_grad_scale(d, x, v64["target"], dy[0]))
    lengths = [n if name in ("x", "residual") else m for name in grads["names"]]
    return list(zip(out, lengths))


def _ce_row_terms(d: dict, x, mx, target):
    m, n = x.shape
    s = d["label_smoothing"]
    counted = target.reshape(m) != d["ignore_index"]
    t = target.reshape(m).clamp(0, n - 1)
    xt = x.gather(1, t[:, None])[:, 0]
    a = mx[:, 0].abs() + (1 - s) * xt.abs() + s * x.abs().mean(-1) + 1.0
    return _finite(torch.where(counted, a, 0.0)), counted


def _ce_loss_scale(d: dict, x, mx, target, ref):
    m, n = x.shape
    a, counted = _ce_row_terms(d, x, mx, target)
    if d["reduction"] == "none":
        return (a.reshape(ref.shape), n)
    F = torch.nn.functional
    loss = F.cross_entropy(x, target.reshape(m), ignore_index=d["ignore_index"], reduction="none",
                           label_smoothing=d["label_smoothing"])
    total = _finite(loss.abs() + a).sum()
    if d["reduction"] == "mean":
        total = total / counted.sum().clamp_min(1)
    return (total.reshape(ref.shape), n + m)


def _ce_grad_scale(d: dict, x, target, dy):
    m, n = x.shape
    s = d["label_smoothing"]
    t = target.reshape(m)
    counted = t != d["ignore_index"]
    if d["reduction"] == "none":
        gr = dy.reshape(m).abs()
    elif d["reduction"] == "sum":
        gr = dy.abs().expand(m)
    else:
        gr = (dy.abs() / counted.sum().clamp_min(1)).expand(m)
    gr = torch.where(counted, gr, 0.0)
    p = _finite(torch.softmax(x, -1))
    lse = _finite(torch.logsumexp(x, -1, keepdim=True))
    onehot = torch.zeros_like(x)
    onehot.scatter_(1, t.clamp(0, n - 1)[:, None], 1.0)
    a = p * (1.0 + x.abs() + lse.abs()) + s / n + (1 - s) * onehot
    return _finite(gr[:, None] * a).reshape(d["shape"])


# ------------------------------------------------------------------------- comparison


def floor_of(dtype) -> float:
    fi = torch.finfo(dtype)
    return max(FLOOR, float(fi.eps) * float(fi.smallest_normal))


def _inf_rows_as_either(d: dict, v: dict, got, own):
    """torch's own rms_norm result with, in each row whose input (x, or add_rms_norm's
    x + residual) holds an infinity, bulkred's row where that row is one of the two
    results torch's CUDA kernels give such a row depending on the row length and path
    (measured on the H200: NaN throughout, or NaN at the infinities and 0 elsewhere);
    every other row, and any other pattern in such a row, stays torch's."""
    x = v["x"] + v["residual"] if d["op"] == "add_rms_norm" else v["x"]
    n = d["n"]
    xr, g, o = x.detach().reshape(-1, n), got.detach().reshape(-1, n), own.detach().reshape(-1, n).clone()
    inf = xr.isinf()
    rows = inf.any(1) & ~xr.isnan().any(1)
    if not rows.any():
        return own
    gn = g.isnan()
    whole = gn.all(1)
    at_inf = (gn == inf).all(1) & ((g == 0) | gn).all(1)
    take = rows & (whole | at_inf)
    o[take] = g[take]
    return o.reshape(own.shape)


def compare(got, ref, own, a, length: int, want_dtype=None, own_counts: bool = False,
            carried=None) -> tuple[bool, float, float, str]:
    """One result ``got`` against the float64 ``ref`` (``own``: torch's own result in got's
    dtype, or None), with the error scale's absolute part ``a`` and reduction length
    ``length`` (docstring, "Reference and comparison"; ``own_counts``: torch's own error
    counts in a float32 result's bound too; ``carried``: a coarser dtype whose rounding the
    result carries, softmax's y of ``dtype=float16`` in dx, whose floor then counts). Returns (ok, worst e / bound, e / e_own (nan
    without own), why)."""
    if tuple(got.shape) != tuple(ref.shape):
        return False, math.inf, math.nan, f"shape {list(got.shape)}, want {list(ref.shape)}"
    dtype = got.dtype
    if want_dtype is not None and dtype != want_dtype:
        return False, math.inf, math.nan, f"dtype {dtype}, want {want_dtype}"
    if dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return False, math.inf, math.nan, f"dtype {dtype}: not a row result dtype"
    g = got.detach().double().reshape(-1)
    r = ref.detach().double().reshape(-1)
    if not g.numel():
        return True, 0.0, math.nan, ""
    nan_g, nan_r = g.isnan(), r.isnan()
    # where NaN goes: torch's own kernel in got's dtype where there is one (torch's float64 rms_norm kernel
    # makes a row holding an infinity NaN throughout; its float32 and 16-bit kernels, NaN at the infinity only)
    nan_w = own.detach().double().reshape(-1).isnan() if own is not None and own.shape == ref.shape else nan_r
    # but not where the float64 reference is finite and beyond the dtype's range: there torch's NaN is its own
    # overflow (float16 cross_entropy's sum with label smoothing 1: its nll sum rounds to inf, times 1 - s = 0),
    # and the reference's rounding, the infinity, is wanted (seed 311134, draw 56)
    nan_w = nan_w & ~(r.isfinite() & ref.detach().to(dtype).double().reshape(-1).isinf())
    if not torch.equal(nan_g, nan_w):
        i = int((nan_g != nan_w).nonzero()[0])
        want = "nan" if nan_w[i] else repr(r[i].item())
        return False, math.inf, math.nan, f"NaN mismatch at {_where(ref, i)}: got {g[i].item()!r}, want {want}"
    nan_r = nan_r | nan_w  # no error measured where either reference is NaN
    r_round = ref.detach().to(dtype).double().reshape(-1)  # a finite ref beyond the dtype's range rounds to inf
    inf_w = r_round.isinf() & ~nan_r
    # at the edge of the range, the side of the overflow threshold (the largest finite value and half
    # its ulp) is within the error: a finite ref just past it with the largest finite value got, or one
    # just short of it with the infinity got, is measured as a finite result against the threshold
    # (seed 411201, draw 71: float16 add_rms_norm's dx, 65504 got for 65521.3)
    fmax = float(torch.finfo(dtype).max)
    edge = math.ldexp(1.0, math.frexp(fmax)[1] - 1) * float(torch.finfo(dtype).eps) / 2 + fmax
    r_fin = r.isfinite() & ~nan_r
    below = inf_w & r_fin & (g.abs() == fmax) & (g.sign() == r.sign())
    above = ~inf_w & r_fin & g.isinf() & (r_round.abs() == fmax) & (g.sign() == r.sign())
    if below.any() or above.any():
        inf_w = inf_w & ~below
        g = torch.where(above, g.sign() * edge, g)
    bad = (inf_w & (g != r_round)) | (~inf_w & ~nan_r & g.isinf())
    if bad.any():
        i = int(bad.nonzero()[0])
        return False, math.inf, math.nan, f"inf mismatch at {_where(ref, i)}: got {g[i].item()!r}, want {r[i].item()!r}"
    fin = ~(nan_r | inf_w)
    if not fin.any():
        return True, 0.0, math.nan, ""
    eps = float(torch.finfo(dtype).eps)
    a = torch.as_tensor(a, dtype=torch.float64, device=r.device)
    a = a.reshape(-1) if a.numel() == r.numel() else a.expand(ref.shape).reshape(-1)
    floor = max(floor_of(dtype), floor_of(carried)) if carried is not None else floor_of(dtype)
    w = eps * r.abs() + U23 * _finite(a) + floor  # a: float32 arithmetic's, in both
    share = F32_K * (math.sqrt(length) + 4)
    own_e = math.nan
    if dtype == torch.float32:
        slack = torch.zeros_like(r)
        bound = share
    else:  # the float32 arithmetic's share, share u (|r| + a) as a float32 result's, then the 16-bit units
        slack = share * U23 * (r.abs() + _finite(a))
        bound = OWN_ULPS

    def excess(v):  # the error beyond the share, in units w (a float32 result: no share taken off)
        return ((v - r).abs() - slack).clamp(min=0.0)[fin] / w[fin]

    e = excess(g)
    worst_e = float(e.max())
    if own is not None and own.dtype == dtype and tuple(own.shape) == tuple(ref.shape):
        o = own.detach().double().reshape(-1)
        eo = excess(o)
        own_e = float(_finite(eo).max())
        if dtype != torch.float32 or own_counts:
            bound += OWN_FACTOR * own_e
    if own_e != own_e:  # no own result
        vs = math.nan
    elif own_e > 0:
        vs = worst_e / own_e
    else:
        vs = 0.0 if worst_e == 0 else math.inf
    ok = worst_e <= bound
    why = ""
    if not ok:
        i = int(fin.nonzero()[int(e.argmax())])
        why = (f"error {worst_e:.3g} eps-units > bound {bound:.3g} at {_where(ref, i)}: got {g[i].item()!r}, "
               f"want {r[i].item()!r}" + ("" if own_e != own_e else f", torch's own {own.reshape(-1)[i].item()!r} "
                                         f"({own_e:.3g} units at worst)"))
    return ok, worst_e / bound, vs, why


def _where(t, i: int) -> str:
    if t.dim() == 0:
        return "()"
    idx = []
    for s in reversed(t.shape):
        idx.append(i % s)
        i //= s
    return str(tuple(reversed(idx)))


def nan_equal(a, b) -> bool:
    return bool(((a == b) | (a.isnan() & b.isnan())).all()) and a.dtype == b.dtype and a.shape == b.shape


# ------------------------------------------------------------------------- one draw


def _refusal(e: BaseException) -> bool:
    from bulkred_dialect.errors import BulkredError

    return isinstance(e, BulkredError)


def _leaves(d: dict, t: dict) -> tuple[dict, dict]:
    """Fresh leaves (the flat buffers, weight, bias) that require grad, and their views."""
    t2 = dict(t)
    names = []
    t2["flat"] = t["flat"].detach().clone().requires_grad_(True)
    names.append("x")
    if "res_flat" in t:
        t2["res_flat"] = t["res_flat"].detach().clone().requires_grad_(True)
        names.append("residual")
    for key in ("weight", "bias"):
        if key in t:
            t2[key] = t[key].detach().clone().requires_grad_(True)
            names.append(key)
    return t2, {"names": names}


def _grads_of(d: dict, t2: dict, names: list) -> list:
    out = []
    for name in names:
        if name == "x":
            gr = t2["flat"].grad
            out.append(None if gr is None else _rows_view(gr, d["m"], d["n"], t2["stride"], d["offset"], d["shape"]))
        elif name == "residual":
            gr = t2["res_flat"].grad
            out.append(None if gr is None else _rows_view(gr, d["m"], d["n"], t2["res_stride"], t2["res_offset"],
                                                          d["shape"]))
        else:
            out.append(t2[name].grad)
    return out


def _v64(d: dict, v: dict) -> dict:
    return {k: (a.detach().double().requires_grad_(a.requires_grad) if a.is_floating_point() else a)
            for k, a in v.items()}


def run_draw(d: dict, lib, device: str, grads: bool, verbose: bool = False) -> dict:
    """Every check of one draw: {"status": passed|failed|refused, "checks": [(name, ok,
    worst e / bound, vs torch, why)], "refusal": message}."""
    res: dict = {"status": "passed", "checks": [], "refusal": None}

    def record(name, ok, worst, vs, why):
        res["checks"].append((name, ok, worst, vs, why))
        if not ok:
            res["status"] = "failed"
        if verbose:
            print(f"  {name:12s} {'ok  ' if ok else 'FAIL'} e/bound {worst:.3g} vs torch {vs:.3g} {why}", flush=True)

    t = build(d, device)
    v = views(d, t)
    try:
        got = call(lib, d, v)
    except Exception as e:  # noqa: BLE001 - a refusal is counted, anything else fails the draw
        if _refusal(e):
            res["status"], res["refusal"] = "refused", str(e).splitlines()[0]
            return res
        record("forward", False, math.inf, math.nan, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        if verbose:
            traceback.print_exc()
        return res
    v64 = _v64(d, v)
    ref = torch_call(d, v64, compute=torch.float64)
    try:
        own = torch_call(d, v)
    except Exception as e:  # noqa: BLE001 - torch's own may not run a form (a dtype on this device)
        own = (None,) * len(ref)
        if verbose:
            print(f"  torch's own: {type(e).__name__}: {str(e).splitlines()[0]}")
    names = ("y", "h") if d["op"] == "add_rms_norm" else ("y",)
    got = tuple(got)
    if len(got) != len(ref):
        record("forward", False, math.inf, math.nan, f"{len(got)} results, want {len(ref)}")
        return res
    scl = scales(d, v64, ref)
    for name, gt, rf, ow, (a, length) in zip(names, got, ref, own, scl):
        if name == "h":  # torch's own x + residual, bit for bit
            h = v["x"] + v["residual"]
            record("h", nan_equal(gt, h), 0.0, math.nan, "" if nan_equal(gt, h) else "h differs from x + residual")
            continue
        if d["op"] in ("rms_norm", "add_rms_norm") and ow is not None:
            ow = _inf_rows_as_either(d, v, gt, ow)
        record(name, *compare(gt, rf, ow, a, length, want_dtype=out_dtype(d)))
    if not (grads and d["grads"]) or res["status"] != "passed":
        return res
    # the backward: one upstream gradient (in each result's dtype) for ours, torch's own and float64
    gen = torch.Generator(device=device).manual_seed(d["gen_seed"] ^ 0x5EED)
    dys = [torch.randn(o.shape, device=device, generator=gen).to(o.dtype) for o in got]
    t_ours, info = _leaves(d, t)
    try:
        outs = call(lib, d, views(d, t_ours))
        torch.autograd.backward(list(outs), dys)
    except Exception as e:  # noqa: BLE001
        if _refusal(e):
            res["status"], res["refusal"] = "refused", "backward: " + str(e).splitlines()[0]
            return res
        record("backward", False, math.inf, math.nan, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        if verbose:
            traceback.print_exc()
        return res
    g_ours = _grads_of(d, t_ours, info["names"])
    t_ref, _ = _leaves(d, t)
    t_ref = {k: (a.detach().double().requires_grad_(True) if k in ("flat", "res_flat", "weight", "bias") else a)
             for k, a in t_ref.items()}
    v_ref = views(d, t_ref)
    refs = torch_call(d, v_ref, compute=torch.float64)
    torch.autograd.backward(list(refs), [a.double() for a in dys])
    g_ref = _grads_of(d, t_ref, info["names"])
    g_own = [None] * len(g_ref)
    for convert in (False, True):  # torch's own backward of a float32 weight of a 16-bit x, else converted
        try:
            t_own, _ = _leaves(d, t)
            owns = torch_call(d, views(d, t_own), convert=convert)
            torch.autograd.backward(list(owns), [a.to(o.dtype) for a, o in zip(dys, owns)])
            g_own = _grads_of(d, t_own, info["names"])
            break
        except Exception:  # noqa: BLE001 - then without torch's own gradient
            pass
    scl = scales(d, _v64(d, v), ref, {"dy": [a.double() for a in dys], "names": info["names"]})
    for name, gt, rf, ow, (a, length) in zip(info["names"], g_ours, g_ref, g_own, scl):
        if gt is None or rf is None:
            record("d" + name, gt is None and rf is None, 0.0, math.nan, f"gradient of {name}: got {gt is not None}, "
                   f"torch {rf is not None}")
            continue
        want = t[{"x": "flat", "residual": "res_flat"}.get(name, name)].dtype
        # softmax's dtype= of another precision than x's: dx is x's dtype but carries y's rounding
        coarser = d.get("out_dtype") not in (None, d["dtype"])
        carried = _dt(d["out_dtype"]) if coarser else None
        record("d" + name, *compare(gt, rf, ow, a, length, want_dtype=want, own_counts=coarser, carried=carried))
    return res


# ------------------------------------------------------------------------------- main


def _load() -> None:
    global torch, bulkred
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if torch is None:
        import torch as torch_module

        torch = torch_module


def _load_bulkred():
    global bulkred
    if bulkred is None:
        import bulkred_dialect as bulkred_module

        bulkred = bulkred_module
    return bulkred


def refusal_key(msg: str) -> str:
    """A refusal message with its numbers and shapes as '#': one line per kind."""
    msg = re.sub(r"\[[^\]]*\]", "[#]", msg)
    return re.sub(r"(?<![A-Za-z_])-?\d+(\.\d+)?(e[-+]?\d+)?", "#", msg)


_SETTINGS: dict = {}  # a worker's (device, grads, stand_in, cap, verbose)


def _init(settings: dict) -> None:
    _SETTINGS.update(settings)
    _load()
    if not settings["stand_in"]:
        _load_bulkred()


def one(job: tuple[int, int]) -> tuple[dict, dict]:
    """Draw ``job = (seed, k)`` run with the settings of :func:`_init`: (the draw, its result)."""
    seed, k = job
    st = _SETTINGS
    d = draw(seed, k, st["cap"])
    if st["verbose"]:
        print(describe(d), flush=True)
    try:
        lib = TorchStandIn(d) if st["stand_in"] else bulkred
        res = run_draw(d, lib, st["device"], st["grads"], st["verbose"])
    except Exception as e:  # noqa: BLE001 - the harness itself failed on this draw: a failure, reported
        res = {"status": "failed", "checks": [("harness", False, math.inf, math.nan,
                                                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")],
               "refusal": None}
        if st["verbose"]:
            traceback.print_exc()
    if st["device"] == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return d, res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=None, help="the run's seed (default: a fresh one)")
    ap.add_argument("--count", type=int, default=400, help="number of draws (default 400)")
    ap.add_argument("--only", type=int, nargs="+", default=None, metavar="K", help="run only these draws, verbose")
    ap.add_argument("--grads", action="store_true", help="also the backward of the odd draws")
    ap.add_argument("--out", default=None, help="write rows_random.json there")
    ap.add_argument("--timeout", type=float, default=0.0, help="start no draw after this many seconds (0: none)")
    ap.add_argument("--cap", type=int, default=CAP, help="M * N at most (default 2^26)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--jobs", type=int, default=0, help="worker processes (default: min(6, CPUs - 2); --only: 1)")
    ap.add_argument("--stand-in", action="store_true", help="torch in float32 (one rounding) instead of bulkred: "
                    "a check of the comparison rule")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else time.time_ns() % 1_000_000
    print(f"seed {seed}", flush=True)
    _load()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch sees no CUDA device: nothing to run")
        print(f"seed {seed}")
        return 1
    if args.device == "cuda":
        print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    ks = args.only if args.only is not None else list(range(args.count))
    verbose = args.only is not None
    settings = {"device": args.device, "grads": args.grads, "stand_in": args.stand_in, "cap": args.cap,
                "verbose": verbose}
    jobs = args.jobs or (1 if verbose else max(1, min(6, (os.cpu_count() or 2) - 2)))
    jobs = min(jobs, max(1, len(ks)))
    per_op: dict = defaultdict(Counter)
    worst: dict = defaultdict(float)
    vs_torch: dict = defaultdict(float)
    per_dtype: Counter = Counter()
    features: Counter = Counter()
    refusals: Counter = Counter()
    examples: dict = {}
    failures: list[dict] = []
    not_run = 0
    start = time.monotonic()
    pool = None
    if jobs > 1:  # workers of their own (spawned: CUDA), each compiling and running its draws
        import multiprocessing

        pool = multiprocessing.get_context("spawn").Pool(jobs, _init, (settings,))
        results = pool.imap(one, [(seed, k) for k in ks])
        print(f"{jobs} worker processes", flush=True)
    else:
        _init(settings)
        results = map(one, [(seed, k) for k in ks])
    for i, k in enumerate(ks):
        if args.timeout and time.monotonic() - start > args.timeout:
            not_run = len(ks) - i
            print(f"time is up ({args.timeout:.0f} s): {not_run} draws not run", flush=True)
            break
        d, res = next(results)
        op = d["op"]
        per_op[op]["draws"] += 1
        per_op[op][res["status"]] += 1
        per_dtype[d["dtype"]] += 1
        ran_grads = args.grads and d["grads"] and res["status"] == "passed"
        per_op[op]["backward"] += bool(ran_grads)
        features["padded"] += bool(d["pad"])
        features["odd offset"] += bool(d["offset"])
        features[f"{len(d['shape'])}-D x"] += 1
        features["specials"] += bool(d["specials"])
        features["M*N > 2^24"] += d["m"] * d["n"] > 1 << 24
        features["odd N"] += d["n"] % 2
        for name, ok, w, vs, why in res["checks"]:
            if math.isfinite(w):
                worst[op] = max(worst[op], w)
            if math.isfinite(vs):
                vs_torch[op] = max(vs_torch[op], vs)
        if res["status"] == "refused":
            key = refusal_key(res["refusal"])
            refusals[key] += 1
            examples.setdefault(key, f"{res['refusal']} ({describe(d)})")
        if res["status"] == "failed":
            bad = [f"{name}: {why}" for name, ok, _, _, why in res["checks"] if not ok]
            failures.append({"k": k, "op": op, "why": bad, "draw": describe(d)})
            print(f"FAILED draw {k} {op}: {'; '.join(bad)}\n    {describe(d)}\n"
                  f"    repeat: python3 tools/gpu_rows_random.py --seed {seed} --only {k}"
                  + (" --grads" if args.grads else ""), flush=True)
        if not verbose and (i + 1) % 50 == 0:
            print(f"  {i + 1} draws, {len(failures)} failed, {time.monotonic() - start:.0f} s", flush=True)
    if pool is not None:
        pool.terminate()
    elapsed = time.monotonic() - start
    ran = sum(c["draws"] for c in per_op.values())
    totals = Counter()
    for c in per_op.values():
        totals.update(c)
    print(f"\nrows random: seed {seed}, {ran} draws in {elapsed:.1f} s ({not_run} not run): {totals['passed']} passed, "
          f"{totals['failed']} failed, {totals['refused']} refused; {totals['backward']} with the backward checked"
          + ("" if not args.stand_in else " (stand-in: torch in float32, not bulkred)"))
    print(f"{'op':14s} {'draws':>6s} {'passed':>7s} {'failed':>7s} {'refused':>8s} {'backward':>9s} "
          f"{'worst e/bound':>14s} {'worst vs torch':>15s}")
    for op in OPS:
        c = per_op[op]
        if c["draws"]:
            print(f"{op:14s} {c['draws']:6d} {c['passed']:7d} {c['failed']:7d} {c['refused']:8d} {c['backward']:9d} "
                  f"{worst[op]:14.3g} {vs_torch[op]:15.3g}")
    print("dtypes: " + ", ".join(f"{k} {v}" for k, v in sorted(per_dtype.items())))
    print("forms: " + ", ".join(f"{k} {v}" for k, v in sorted(features.items()) if v))
    if refusals:
        print("refused, by message:")
        for key, c in refusals.most_common():
            print(f"  {c:4d}  {key}\n        e.g. {examples[key]}")
    print(f"{len(failures)} failed" if failures else "no failures")
    print(f"seed {seed}")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        report = {
            "seed": seed, "count": len(ks), "ran": ran, "not_run": not_run, "grads": args.grads,
            "stand_in": args.stand_in, "elapsed_s": round(elapsed, 1),
            "per_op": {op: dict(per_op[op], worst_e_over_bound=worst[op], worst_vs_torch=vs_torch[op]) for op in OPS},
            "dtypes": dict(per_dtype), "forms": dict(features),
            "refusals": [{"message": key, "count": c, "example": examples[key]} for key, c in refusals.most_common()],
            "failures": failures,
            "repeat": f"python3 tools/gpu_rows_random.py --seed {seed} --only K" + (" --grads" if args.grads else ""),
        }
        (Path(args.out) / "rows_random.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    return 1 if failures or (ran == 0 and ks) else 0


if __name__ == "__main__":
    sys.exit(main())
