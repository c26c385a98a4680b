"""The row functions' cost per call at small batches, against torch eager's, on the GPU
machine: the host's time (calls back to back, ``time.perf_counter``, best of 5 loops of
200, the GPU behind) and the time a Python user pays (CUDA events around one call, the
GPU idle before, median of ``--samples``), [M, N] of one dtype; each result checked
against torch's first.

    python3 tools/diag.py row_calls [--m 8] [--n 4096] [--dtype bfloat16] [--samples 200]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=8)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--samples", type=int, default=200)
    a = ap.parse_args()

    import torch

    import bulkred_dialect as bulkred

    F = torch.nn.functional
    dt = getattr(torch, a.dtype)
    m, n = a.m, a.n
    x = torch.randn(m, n, device="cuda", dtype=dt)
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

    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, [{m}, {n}] {a.dtype}")
    print("| function | check | bulkred host us | torch host us | torch/bulkred host "
          "| bulkred per call us | torch per call us | torch/bulkred per call |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (ours, theirs) in pairs.items():
        got, want = ours(), theirs()
        ok = "ok" if torch.allclose(got.float(), want.float(), rtol=2e-2, atol=2e-2) else "WRONG"
        h = (host_us(ours), host_us(theirs))
        c = [[], []]
        for _ in range(2):  # interleaved halves: both sides see the same host state
            c[0].append(call_us(ours))
            c[1].append(call_us(theirs))
        cu = (statistics.median(c[0]), statistics.median(c[1]))
        print(f"| {name} | {ok} | {h[0]:.1f} | {h[1]:.1f} | {h[1] / h[0]:.2f} | {cu[0]:.1f} | {cu[1]:.1f} "
              f"| {cu[1] / cu[0]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
