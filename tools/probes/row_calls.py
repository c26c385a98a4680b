"""The row functions' cost per call at small batches, against torch eager's, on the GPU
machine: the host's time (calls back to back, ``time.perf_counter``, best of 5 loops of
200, the GPU behind) and the time a Python user pays (CUDA events around one call, the
GPU idle before, median of ``--samples``), [M, N] of one dtype; each result checked
against torch's first.

    python3 tools/diag.py row_calls [--m 8] [--n 4096] [--dtype bfloat16] [--samples 200] [--grad | --both]
        [--budget-s 150]

``--grad``: x requires grad (the autograd route's forward, both sides); ``--both``: the
table without, then with. No function starts after ``--budget-s`` seconds (said so).

``--cpu`` (no GPU needed): the host's cost step by step instead, each function's call on
CPU torch tensors with the launch a stub (:class:`StubKernel`: the launch layer's
generated launcher, its driver call a no-op, as host_cost.py's), then the steps of
``bulkred.softmax(x)``'s call (torch.compile's check, x's part of the key, the launcher
kept, the launch layer's launcher alone, ``empty_like``); per call in microseconds, the
best of ``--repeat`` loops of ``--number`` calls, timed by the thread's CPU time (a
shared machine's wall clock counts the others' time too). ``--root TREE``: the bulkred
tree to import (an earlier commit's ``git archive``: before and after in one sitting).

    python3 tools/diag.py row_calls --cpu [--root TREE] [--m 8] [--n 4096] [--grad]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import timeit
from pathlib import Path


class StubKernel:
    """A row kernel that launches nothing: ``bind`` is the launch layer's generated
    launcher (``launch.bound_launcher``) on a stand-in GPU whose launch is a no-op."""

    def __call__(self, *tensors):
        return tensors

    def bind(self, params, *, inputs, order, new, pack=None, at=None, refused=None):
        from types import SimpleNamespace

        import numpy as np

        from bulkred_dialect.backend_ptx import launch

        g = SimpleNamespace(broken=None, streams={0: "s"}, stream_for=lambda h: "s", memset_async=lambda *a: None)
        b = launch.bound_launcher("rows", g, "kern", "config", [np.int64(params[0].shape[0])], params, inputs=inputs,
                                  order=order, new=new, pack=pack, zero=(), align=[16] * len(params), 
                                  **({} if at is None else {"at": at, "refused": refused}))
        b.__globals__.update(raw_stream=lambda dev: 0, launch=lambda *a: None)
        return b


def cpu_steps(a: argparse.Namespace) -> int:
    """``--cpu``: the host's cost per call and per step, the launch a stub."""
    sys.path.insert(0, a.root)
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import row_functions, row_kernels

    assert Path(bulkred.__file__).is_relative_to(Path(a.root).resolve()), bulkred.__file__
    row_kernels.kernel_for = lambda *args, **kw: StubKernel()
    row_functions.DEVICES = ("cuda", "cpu")
    row_functions.forget()
    m, n, dt = a.m, a.n, getattr(torch, a.dtype)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(m, n, generator=g).to(dt).requires_grad_(a.grad)
    r = torch.randn(m, n, generator=g).to(dt)
    w = torch.randn(n, generator=g).to(dt)
    b = torch.randn(n, generator=g).to(dt)
    t = torch.randint(0, n, (m,), generator=g)

    def us(fn) -> float:
        fn()
        return min(timeit.repeat(fn, number=a.number, repeat=a.repeat, timer=time.thread_time)) / a.number * 1e6

    calls = {
        "softmax(x)": lambda: bulkred.softmax(x),
        "log_softmax(x)": lambda: bulkred.log_softmax(x),
        "rms_norm(x, (n,), w)": lambda: bulkred.rms_norm(x, (n,), w),
        "layer_norm(x, (n,), w, b)": lambda: bulkred.layer_norm(x, (n,), w, b),
        "add_rms_norm(x, r, w)": lambda: bulkred.add_rms_norm(x, r, w),
        "cross_entropy(x, t, reduction='none')": lambda: bulkred.cross_entropy(x, t, reduction="none"),
        "cross_entropy(x, t)": lambda: bulkred.cross_entropy(x, t),
    }
    print(f"[{m}, {n}] {a.dtype}{', x requiring grad' if a.grad else ''}, {a.root}, the launch a stub")
    for name, fn in calls.items():
        print(f"{us(fn):7.3f} us  {name}")
    # softmax's steps: its launcher is the only one kept under a fresh CALLS
    row_functions.forget()
    bulkred.softmax(x)
    (launcher,) = row_functions.CALLS.values()
    cells = dict(zip(launcher.__code__.co_freevars, (c.cell_contents for c in launcher.__closure__ or ())))
    steps = {
        "torch.compiler.is_compiling()": torch.compiler.is_compiling,
        "torch.is_grad_enabled()": torch.is_grad_enabled,
        "x's part of a key (class, shape, dtype, device, stride(), requires_grad)": lambda: (
            x.__class__, x.shape, x.dtype, x.device, x.stride(), x.requires_grad),
        "the launcher kept (launcher(args))": lambda: launcher((x, -1, None, None)),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
    }
    if "b" in cells:  # the launch layer's generated launcher, alone
        bound = cells["b"]
        steps["the launch layer's launcher alone (b(x, None))"] = lambda: bound(x, None)
    print("softmax's steps:")
    got = {name: us(fn) for name, fn in steps.items()}
    for name, t in got.items():
        print(f"{t:7.3f} us  {name}")
    whole = us(calls["softmax(x)"])
    print(f"{whole - got['the launcher kept (launcher(args))']:7.3f} us  the call less its launcher (the compile "
          f"check, the key, the look-up, the frames; softmax(x) {whole:.3f} again)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=8)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--grad", action="store_true", help="x requires grad: the autograd route's forward")
    ap.add_argument("--both", action="store_true", help="the table without grad, then with x requiring grad")
    ap.add_argument("--budget-s", type=float, default=150.0, help="no function starts after this many seconds")
    ap.add_argument("--cpu", action="store_true", help="the host's steps on the CPU, the launch a stub")
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]), help="--cpu: the bulkred tree")
    ap.add_argument("--number", type=int, default=2000, help="--cpu: calls a loop")
    ap.add_argument("--repeat", type=int, default=40, help="--cpu: loops")
    a = ap.parse_args()
    if a.cpu:
        return cpu_steps(a)

    start = time.monotonic()
    import torch

    if not torch.cuda.is_available():
        print("row_calls: no CUDA device here (--cpu times the host's steps with the launch a stub)")
        return 0
    rc = 0
    for grad in ((False, True) if a.both else (a.grad,)):
        rc |= table(a, grad, start)
    return rc


def table(a: argparse.Namespace, grad: bool, start: float) -> int:
    """One table: each function against torch's, x requiring grad or not."""
    import torch

    import bulkred_dialect as bulkred

    F = torch.nn.functional
    dt = getattr(torch, a.dtype)
    m, n = a.m, a.n
    x = torch.randn(m, n, device="cuda", dtype=dt).requires_grad_(grad)
    r = torch.randn(m, n, device="cuda", dtype=dt)
    w = torch.randn(n, device="cuda", dtype=dt)
    b = torch.randn(n, device="cuda", dtype=dt)
    t = torch.randint(0, n, (m,), device="cuda")
    t[0] = -100
    pairs = {
        "softmax": (lambda: bulkred.softmax(x), lambda: torch.softmax(x, -1)),
        "log_softmax": (lambda: bulkred.log_softmax(x), lambda: torch.log_softmax(x, -1)),
        "rms_norm": (lambda: bulkred.rms_norm(x, (n,), w, 1e-6), lambda: F.rms_norm(x, (n,), w, 1e-6)),
        "layer_norm": (lambda: bulkred.layer_norm(x, (n,), w, b), lambda: F.layer_norm(x, (n,), w, b)),
        "add_rms_norm": (lambda: bulkred.add_rms_norm(x, r, w, 1e-6)[0],
                         lambda: F.rms_norm(x + r, (n,), w, 1e-6)),
        "cross_entropy none": (lambda: bulkred.cross_entropy(x, t, reduction="none"),
                               lambda: F.cross_entropy(x, t, reduction="none")),
        "cross_entropy sum": (lambda: bulkred.cross_entropy(x, t, reduction="sum"),
                              lambda: F.cross_entropy(x, t, reduction="sum")),
        "cross_entropy mean": (lambda: bulkred.cross_entropy(x, t), lambda: F.cross_entropy(x, t)),
    }

    def host_us(f) -> float:
        for _ in range(50):
            f()
        torch.cuda.synchronize()
        best = math.inf
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(200):
                f()
            best = min(best, (time.perf_counter() - t0) / 200 * 1e6)
            torch.cuda.synchronize()
        return best

    def call_us(f) -> float:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(a.samples):
            torch.cuda.synchronize()
            s.record()
            f()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        return statistics.median(times)

    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, [{m}, {n}] {a.dtype}"
          f"{', x requiring grad (the forward)' if grad else ''}")
    print("| function | check | bulkred host us | torch host us | torch/bulkred host "
          "| bulkred per call us | torch per call us | torch/bulkred per call |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    wrong = 0
    for name, (ours, theirs) in pairs.items():
        if time.monotonic() - start > a.budget_s:
            print(f"| {name} | skipped (budget {a.budget_s:.0f} s spent) |")
            continue
        got, want = ours(), theirs()
        ok = "ok" if torch.allclose(got.float(), want.float(), rtol=2e-2, atol=2e-2) else "WRONG"
        wrong += ok != "ok"
        h = (host_us(ours), host_us(theirs))
        c = [[], []]
        for _ in range(2):  # interleaved halves: both sides see the same host state
            c[0].append(call_us(ours))
            c[1].append(call_us(theirs))
        cu = (statistics.median(c[0]), statistics.median(c[1]))
        print(f"| {name} | {ok} | {h[0]:.1f} | {h[1]:.1f} | {h[1] / h[0]:.2f} | {cu[0]:.1f} | {cu[1]:.1f} "
              f"| {cu[1] / cu[0]:.2f} |", flush=True)
    print(f"row_calls: {time.monotonic() - start:.0f} s")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
