"""Where a forward and backward call's host time goes on the autograd route (a tensor
that requires grad): per call of bulkred's and torch's (events around one call, the GPU
idle before), the forward alone and the host time of each, then a profile of bulkred's
calls (cProfile, the autograd engine on the calling thread so that the backward's
Python is seen), top entries by own time.

    python3 tools/diag.py autograd_cost [--size-mib 64] [--calls 50] [--row vector_norm]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=64)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--row", default="vector_norm", choices=["vector_norm", "var", "amax", "logsumexp"])
    a = ap.parse_args()

    import torch

    import bulkred_dialect as bulkred

    n = (a.size_mib << 20) // 4
    x = torch.randn(n // 4096, 4096, device="cuda").requires_grad_(True)
    ours = {
        "vector_norm": lambda t: bulkred.vector_norm(t, axis=-1), "var": lambda t: bulkred.var(t, axis=-1, correction=1),
        "amax": lambda t: bulkred.amax(t, axis=-1), "logsumexp": lambda t: bulkred.logsumexp(t, axis=-1),
    }[a.row]
    theirs = {
        "vector_norm": lambda t: torch.linalg.vector_norm(t, dim=-1), "var": lambda t: torch.var(t, dim=-1),
        "amax": lambda t: torch.amax(t, dim=-1), "logsumexp": lambda t: torch.logsumexp(t, -1),
    }[a.row]
    w = torch.randn(n // 4096, device="cuda")

    def step(f):
        f(x).backward(w)

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

    rows = [
        ("bulkred forward+backward", lambda: step(ours)), ("torch forward+backward", lambda: step(theirs)),
        ("bulkred forward", lambda: ours(x)), ("torch forward", lambda: theirs(x)),
    ]
    for _, fn in rows:
        for _ in range(3):
            fn()
    print(f"{a.row} of x float32 [{n // 4096}, 4096] ({a.size_mib} MiB), axis -1, x requires grad; "
          f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'call':28} {'per call us':>12} {'host us':>9}")
    for name, fn in rows:
        per = statistics.median(events(fn) for _ in range(a.calls))
        hst = statistics.median(host(fn) for _ in range(a.calls))
        print(f"{name:28} {per:12.1f} {hst:9.1f}")
    # the backward alone (its forward made before the clock starts), on the engine's
    # device thread (the default) and on this thread
    for threads in (True, False):
        torch.autograd.set_multithreading_enabled(threads)
        for name, f in (("bulkred", ours), ("torch", theirs)):
            pers, hsts = [], []
            for _ in range(a.calls):
                y = f(x)
                pers.append(events(lambda: y.backward(w)))
                y = f(x)
                hsts.append(host(lambda: y.backward(w)))
            where = "device thread" if threads else "this thread"
            print(f"{name + ' backward (' + where + ')':28} {statistics.median(pers):12.1f} {statistics.median(hsts):9.1f}")
    torch.autograd.set_multithreading_enabled(True)

    torch.autograd.set_multithreading_enabled(False)  # the backward on this thread: cProfile sees it
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(a.calls):
        step(ours)
    prof.disable()
    torch.cuda.synchronize()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
    print(f"\ncProfile of {a.calls} bulkred forward+backward calls (autograd on this thread), by own time:")
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:6000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
