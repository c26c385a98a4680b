"""The autograd route against torch's, per call: ``f(x).backward(w)`` of bulkred's and
torch's function (x float32 [N, 4096] requiring grad, axis -1, w random of the result's
shape), events around one call (the GPU idle before) and the host's time of it, the
forward alone and the backward alone (its forward made before the clock starts, on the
autograd engine's device thread), medians; each row's gradient checked against torch's,
the torch operations each backward dispatches (bulkred's against torch's), and a summary
of the ratios (torch us / bulkred us: >= 1.0 where bulkred is as fast). ``--profile``
adds a cProfile of bulkred's calls (the engine on the calling thread), by own time.

    python3 tools/diag.py autograd_cost [--row amax,var,std,logsumexp,vector_norm] [--size-mib 64]
        [--calls 20] [--budget-s 120] [--profile]

Rows are measured in turn, bulkred's and torch's calls taking turns within each; a row
is skipped (said so) when the budget is spent before it starts.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time

ROWS = ("amax", "var", "std", "logsumexp", "vector_norm")


def _functions(bulkred, torch) -> dict[str, tuple]:
    """Row -> (bulkred's call, torch's call), both over the last axis."""
    return {
        "amax": (lambda t: bulkred.amax(t, axis=-1), lambda t: torch.amax(t, dim=-1)),
        "var": (lambda t: bulkred.var(t, axis=-1, correction=1), lambda t: torch.var(t, dim=-1)),
        "std": (lambda t: bulkred.std(t, axis=-1, correction=1), lambda t: torch.std(t, dim=-1)),
        "logsumexp": (lambda t: bulkred.logsumexp(t, axis=-1), lambda t: torch.logsumexp(t, -1)),
        "vector_norm": (lambda t: bulkred.vector_norm(t, axis=-1), lambda t: torch.linalg.vector_norm(t, dim=-1)),
    }


def _rows(text: str) -> list[str]:
    names = [r.strip() for r in text.split(",") if r.strip()]
    bad = [r for r in names if r not in ROWS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown row(s) {bad or text!r}: one or more of {', '.join(ROWS)}")
    return names


def _op_names(torch, y, w) -> list[str]:
    """The torch operations ``y.backward(w)`` dispatches (the engine on this thread)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Ops() as ops:
        y.backward(w)
    return ops.names


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row", type=_rows, default=list(ROWS), help=f"comma-separated, of {', '.join(ROWS)} (default: all)")
    ap.add_argument("--size-mib", type=int, default=64)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--budget-s", type=float, default=120.0, help="no row starts after this many seconds")
    ap.add_argument("--profile", action="store_true", help="a cProfile of bulkred's calls per row")
    a = ap.parse_args()
    start = time.monotonic()

    import torch

    if not torch.cuda.is_available():
        print(f"autograd_cost: no CUDA device here; rows {', '.join(a.row)} would be measured "
              f"(x float32 [{(a.size_mib << 20) // 4 // 4096}, 4096]) on a GPU")
        return 0

    import bulkred_dialect as bulkred

    fns = _functions(bulkred, torch)
    n = (a.size_mib << 20) // 4
    x = torch.randn(n // 4096, 4096, device="cuda").requires_grad_(True)
    w = torch.randn(n // 4096, device="cuda")

    def events(fn) -> float:
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e3

    def host(fn) -> float:
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e6

    print(f"x float32 [{n // 4096}, 4096] ({a.size_mib} MiB), axis -1, x requires grad; "
          f"{torch.cuda.get_device_name()}, torch {torch.__version__}; medians of {a.calls} calls, "
          f"bulkred / torch (torch over bulkred)")
    summary = []
    for row in a.row:
        if time.monotonic() - start > a.budget_s:
            print(f"\n{row}: skipped (budget {a.budget_s:.0f} s spent)")
            continue
        ours, theirs = fns[row]
        # the gradient of each, from x.grad None: bulkred's against torch's
        grads = []
        for f in (ours, theirs):
            x.grad = None
            f(x).backward(w)
            grads.append(x.grad)
        x.grad = None
        err = float((grads[0] - grads[1]).abs().max() / grads[1].abs().max().clamp_min(1e-30))
        ok = "ok" if err <= 1e-4 else "WRONG"
        ops = []
        for f in (ours, theirs):  # (x.grad None: the engine's accumulation not among them)
            ops.append(_op_names(torch, f(x), w))
            x.grad = None

        def step(f):
            f(x).backward(w)

        parts = {
            "forward+backward": (lambda: step(ours), lambda: step(theirs)),
            "forward": (lambda: ours(x), lambda: theirs(x)),
        }
        for pair in parts.values():
            for fn in pair * 3:
                fn()
        print(f"\n{row}: gradient {ok} (max |difference| / max |torch's| {err:.1e}); backward's torch "
              f"operations, bulkred {len(ops[0])} ({' '.join(ops[0])}), torch {len(ops[1])} ({' '.join(ops[1])})")
        print(f"  {'':18} {'per call us':>24} {'host us':>24}")
        got = {}
        for part, (mine, theirs_) in parts.items():
            per: tuple[list[float], list[float]] = ([], [])
            hst: tuple[list[float], list[float]] = ([], [])
            for _ in range(a.calls):  # taking turns
                for i, fn in enumerate((mine, theirs_)):
                    per[i].append(events(fn))
                    hst[i].append(host(fn))
            p = [statistics.median(v) for v in per]
            h = [statistics.median(v) for v in hst]
            got[part] = p
            print(f"  {part:18} {p[0]:9.1f} / {p[1]:7.1f} ({p[1] / p[0]:.2f}x) {h[0]:9.1f} / {h[1]:7.1f} ({h[1] / h[0]:.2f}x)")
        per = ([], [])
        hst = ([], [])
        for _ in range(a.calls):  # the backward alone, on the engine's device thread
            for i, f in enumerate((ours, theirs)):
                y = f(x)
                per[i].append(events(lambda: y.backward(w)))
                y = f(x)
                hst[i].append(host(lambda: y.backward(w)))
        p = [statistics.median(v) for v in per]
        h = [statistics.median(v) for v in hst]
        got["backward"] = p
        print(f"  {'backward':18} {p[0]:9.1f} / {p[1]:7.1f} ({p[1] / p[0]:.2f}x) {h[0]:9.1f} / {h[1]:7.1f} ({h[1] / h[0]:.2f}x)")
        summary.append((row, ok, got))
        if a.profile:
            torch.autograd.set_multithreading_enabled(False)  # the backward on this thread: cProfile sees it
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(a.calls):
                step(ours)
            prof.disable()
            torch.autograd.set_multithreading_enabled(True)
            torch.cuda.synchronize()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
            print(f"  cProfile of {a.calls} bulkred forward+backward calls, by own time:")
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:4000])
        x.grad = None
    print("\nsummary, torch us / bulkred us per call (target >= 1.00 for forward+backward):")
    for row, ok, got in summary:
        print(f"  {row:12} forward+backward {got['forward+backward'][1] / got['forward+backward'][0]:.2f}x, "
              f"forward {got['forward'][1] / got['forward'][0]:.2f}x, backward {got['backward'][1] / got['backward'][0]:.2f}x "
              f"(gradient {ok})")
    print(f"autograd_cost: {time.monotonic() - start:.0f} s")
    return 0 if all(ok == "ok" for _, ok, _ in summary) else 1


if __name__ == "__main__":
    raise SystemExit(main())
