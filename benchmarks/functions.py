"""The newer rows of the function table and the gradients, against torch on the GPU, same
run, same data: GPU time per call (a CUDA graph of many calls, replayed) and the time a
Python user pays per call (events around one call, the GPU idle before), each a median,
with benchmarks/reductions_api.py's helpers. Ratios are torch's time over bulkred's
(above 1: bulkred faster).

Rows (x float32 [n/4096, 4096] for ``last`` and ``first``, flat for ``whole``; float64
where the row says so; the input's bytes 64M and 1G):

* forward: ``amax``, ``max_with_indices`` (``torch.max(x, d)``), ``aminmax``,
  ``nansum`` (rows the table has; a missing one is listed as unsupported), float64
  ``logsumexp`` and the float64 3-norm;
* backward: ``f(x).backward(w)`` of ``vector_norm``, ``logsumexp``, ``var`` and ``amax``
  (x requires grad; forward and backward timed together, as a training step pays them).

Before timing, each row's result (and gradient) is checked against torch's once.

    python3 benchmarks/functions.py [--sizes 64M,1G] [--out DIR] [--budget-s 240] [--backward]

Writes ``functions.{md,json}`` under ``--out`` (default ``$OUT``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))

_spec = importlib.util.spec_from_file_location("reductions_api", os.path.join(_HERE, "reductions_api.py"))
RA = importlib.util.module_from_spec(_spec)
sys.modules["reductions_api"] = RA
_spec.loader.exec_module(RA)

SIZES = {"64M": 64 << 20, "1G": 1 << 30}
FORMS = {"whole": None, "last": -1, "first": 0}
COLS = 4096


def _d(d):
    return 0 if d is None else d


# (name, dtype, bulkred call (b, x, d), torch call (t, x, d), backward)
ROWS = [
    ("amax", "float32", lambda b, x, d: b.amax(x, axis=d), lambda t, x, d: t.amax(x, dim=() if d is None else d), False),
    ("max_with_indices", "float32", lambda b, x, d: tuple(b.max_with_indices(x, axis=_d(d))),
     lambda t, x, d: tuple(t.max(x, _d(d))), False),
    ("aminmax", "float32", lambda b, x, d: tuple(b.aminmax(x, axis=d)), lambda t, x, d: tuple(t.aminmax(x, dim=d)), False),
    ("nansum", "float32", lambda b, x, d: b.nansum(x, axis=d), lambda t, x, d: t.nansum(x, dim=d), False),
    ("logsumexp f64", "float64", lambda b, x, d: b.logsumexp(x, axis=d), lambda t, x, d: t.logsumexp(x, _d(d)), False),
    ("3-norm f64", "float64", lambda b, x, d: b.vector_norm(x, ord=3, axis=d),
     lambda t, x, d: t.linalg.vector_norm(x, 3, dim=d), False),
    ("vector_norm backward", "float32", lambda b, x, d: b.vector_norm(x, axis=d),
     lambda t, x, d: t.linalg.vector_norm(x, dim=d), True),
    ("logsumexp backward", "float32", lambda b, x, d: b.logsumexp(x, axis=d), lambda t, x, d: t.logsumexp(x, _d(d)), True),
    ("var backward", "float32", lambda b, x, d: b.var(x, axis=d, correction=1), lambda t, x, d: t.var(x, dim=d), True),
    ("amax backward", "float32", lambda b, x, d: b.amax(x, axis=d), lambda t, x, d: t.amax(x, dim=() if d is None else d), True),
]


def _outs(v):
    return v if isinstance(v, tuple) else (v,)


def _call(fn, backward: bool, weights):
    if not backward:
        return fn

    def step(x):
        y = fn(x)
        g = weights.get(tuple(y.shape))
        if g is None:
            g = weights[tuple(y.shape)] = y.detach().clone().normal_()
        y.backward(g)

    return step


def bench(torch, bulkred, name, dtype, bfn, tfn, backward, form, size, a) -> dict:
    row = {"row": name, "form": form, "size": size, "dtype": dtype}
    dt = getattr(torch, dtype)
    n = SIZES[size] // torch.empty((), dtype=dt).element_size()
    shape = (n,) if FORMS[form] is None else (n // COLS, COLS)
    copies = max(1, min(8, RA.L2_ROTATE // SIZES[size]))
    xs = [torch.randn(shape, device="cuda", dtype=dt).requires_grad_(backward) for _ in range(copies)]
    d = FORMS[form]
    try:
        got = [o.detach() for o in _outs(bfn(bulkred, xs[0], d))]
    except Exception as e:  # noqa: BLE001 - a row the table does not have yet, or a refusal
        row["status"] = f"unsupported: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
        return row
    want = [o.detach() for o in _outs(tfn(torch, xs[0], d))]
    for g, w in zip(got, want):
        if g.dtype == torch.int64:
            ok = bool(torch.equal(g, w))
        else:
            # sums near 0 lose their relative digits: the tolerance is relative to the largest result
            scale = float(w.double().abs().max()) if w.numel() else 1.0
            tol = 1e-4 if dtype == "float32" else 1e-10
            ok = bool(torch.allclose(g.double(), w.double(), rtol=tol, atol=tol * max(scale, 1.0), equal_nan=True))
        if not ok:
            row["status"] = "WRONG result"
            return row
    if backward:
        x1 = xs[0].detach().clone().requires_grad_(True)
        x2 = xs[0].detach().clone().requires_grad_(True)
        y1, y2 = bfn(bulkred, x1, d), tfn(torch, x2, d)
        w = torch.randn(y2.shape, device="cuda", dtype=dt)
        y1.backward(w)
        y2.backward(w)
        if not torch.allclose(x1.grad, x2.grad, rtol=1e-4, atol=1e-6):
            row["status"] = "WRONG gradient"
            return row
    weights: dict = {}
    fb = _call(lambda x: bfn(bulkred, x, d), backward, weights)
    ft = _call(lambda x: tfn(torch, x, d), backward, weights)
    row["bulkred_gpu_us"] = RA.graph_us(torch, fb, xs, a.graph_calls, a.replays)
    row["torch_gpu_us"] = RA.graph_us(torch, ft, xs, a.graph_calls, a.replays)
    row["bulkred_call_us"], row["torch_call_us"] = RA.call_pair_us(torch, fb, ft, xs, a.repeat)
    row["gpu_x"] = row["torch_gpu_us"] / row["bulkred_gpu_us"]
    row["call_x"] = row["torch_call_us"] / row["bulkred_call_us"]
    row["bulkred_GBps"] = SIZES[size] / row["bulkred_gpu_us"] / 1e3
    row["status"] = "ok"
    return row


def table(rows, gpu: str) -> str:
    out = [f"GPU: {gpu}", "", "| row | form | size | bulkred GPU us | torch GPU us | GPU x | bulkred per call us | torch per call us | per call x | GB/s |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if r.get("status") != "ok":
            out.append(f"| {r['row']} | {r['form']} | {r['size']} | {r.get('status')} | | | | | | |")
            continue
        out.append(
            f"| {r['row']} | {r['form']} | {r['size']} | {r['bulkred_gpu_us']:.1f} | {r['torch_gpu_us']:.1f} | {r['gpu_x']:.2f} | "
            f"{r['bulkred_call_us']:.1f} | {r['torch_call_us']:.1f} | {r['call_x']:.2f} | {r['bulkred_GBps']:.0f} |"
        )
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="64M,1G")
    p.add_argument("--forms", default="last,first,whole")
    p.add_argument("--rows", default="", help="comma-separated row names (default: all)")
    p.add_argument("--backward", action="store_true", help="the backward rows only (the autograd route)")
    p.add_argument("--graph-calls", type=int, default=20)
    p.add_argument("--replays", type=int, default=10)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--budget-s", type=float, default=1e9)
    p.add_argument("--out", default=os.environ.get("OUT"))
    a = p.parse_args()
    import torch

    import bulkred_dialect as bulkred

    gpu = torch.cuda.get_device_name()
    wanted = {r.strip() for r in a.rows.split(",") if r.strip()}
    rows, t0 = [], time.time()
    for name, dtype, bfn, tfn, backward in ROWS:
        if wanted and name not in wanted or a.backward and not backward:
            continue
        for size in a.sizes.split(","):
            for form in a.forms.split(","):
                if time.time() - t0 > a.budget_s:
                    rows.append({"row": name, "form": form, "size": size, "status": "skipped (budget)"})
                    continue
                rows.append(bench(torch, bulkred, name, dtype, bfn, tfn, backward, form, size, a))
                print(json.dumps(rows[-1]), flush=True)
                torch.cuda.empty_cache()
    text = table(rows, gpu)
    print(text)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "functions.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(a.out, "functions.json"), "w") as f:
            json.dump({"gpu": gpu, "rows": rows}, f)
    return 0 if all(r.get("status") in ("ok",) or str(r.get("status", "")).startswith(("unsupported", "skipped")) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
