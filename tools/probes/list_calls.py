"""A list of many tensors per call, each way alone (not taking turns with torch's call):
``bulkred.total_norm`` of the same list object every call (its descriptor table reused),
of an equal new list of the same tensors, and of a ``bulkred.tensor_list``, against
``torch.nn.utils.get_total_norm``; CUDA events around one call, the GPU idle before and a
256 MiB buffer written before each sample (the L2 flushed, as benchmarks/foreach.py),
median of ``--samples``; and the host's time alone (calls back to back, best of 5 loops
of 100). The result is checked against torch's first.

    python3 tools/diag.py list_calls [--tensors 2000] [--numel 4096] [--samples 50]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tensors", type=int, default=2000)
    ap.add_argument("--numel", type=int, default=4096)
    ap.add_argument("--samples", type=int, default=50)
    a = ap.parse_args()

    import torch

    import bulkred_dialect as bulkred

    ts = [torch.randn(a.numel, device="cuda") for _ in range(a.tensors)]
    flush_buf = torch.empty(64 << 20, device="cuda")
    got, want = bulkred.total_norm(ts), torch.nn.utils.get_total_norm(ts)
    ok = "ok" if math.isclose(float(got), float(want), rel_tol=1e-4) else f"WRONG ({float(got)} vs {float(want)})"
    tl = bulkred.tensor_list(ts)

    def events(fn, arg) -> float:
        times = []
        for _ in range(3):
            fn(arg())
        for _ in range(a.samples):
            x = arg()
            flush_buf.fill_(1.0)
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn(x)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        return statistics.median(times)

    def host(fn, arg) -> float:
        x = arg()
        best = math.inf
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(100):
                fn(x)
            best = min(best, (time.perf_counter() - t0) / 100 * 1e6)
        torch.cuda.synchronize()
        return best

    ours, theirs = bulkred.total_norm, torch.nn.utils.get_total_norm
    cases = [
        ("bulkred, the same list", ours, lambda: ts),
        ("bulkred, an equal new list", ours, lambda: list(ts)),
        ("bulkred, a tensor_list", ours, lambda: tl),
        ("torch get_total_norm, the same list", theirs, lambda: ts),
    ]
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}; {a.tensors} x [{a.numel}] float32; "
          f"check: {ok}")
    print("| call | per call us (alone, events) | host us (back to back) |")
    print("| --- | ---: | ---: |")
    for name, fn, arg in cases:
        print(f"| {name} | {events(fn, arg):.1f} | {host(fn, arg):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
