#!/usr/bin/env python3
"""Where a fused reduction's per-call time goes (issue 17): the wall time of N calls of
bulkred.sum / amax-like calls and of each fused function on a 1 MiB float32 tensor
(whole and last axis), synchronized once at the end, and a cProfile of the slowest.

    python3 tools/diag.py fused_call [--calls 2000]"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import pstats
import time

import torch

import bulkred_dialect as bulkred


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args()
    xs = {"whole": torch.randn(1 << 18, device="cuda"), "last": torch.randn(64, 4096, device="cuda")}
    cases = {
        "sum": lambda x, ax: bulkred.sum(x, axis=ax),
        "max": lambda x, ax: bulkred.max(x, axis=ax),
        "norm_inf": lambda x, ax: bulkred.vector_norm(x, ord=math.inf, axis=ax),
        "norm_2": lambda x, ax: bulkred.vector_norm(x, axis=ax),
        "mean": lambda x, ax: bulkred.mean(x, axis=ax),
        "argmax": lambda x, ax: bulkred.argmax(x, axis=ax),
        "var_mean": lambda x, ax: bulkred.var_mean(x, axis=ax, correction=1),
        "logsumexp": lambda x, ax: bulkred.logsumexp(x, axis=ax),
        "torch.sum": lambda x, ax: x.sum() if ax is None else x.sum(dim=ax),
        "torch.vector_norm": lambda x, ax: torch.linalg.vector_norm(x, math.inf, dim=ax),
    }
    worst = None
    for form, x in xs.items():
        ax = None if form == "whole" else -1
        for name, f in cases.items():
            for _ in range(20):
                f(x, ax)
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(a.calls):
                f(x, ax)
            torch.cuda.synchronize()
            us = (time.perf_counter() - t) / a.calls * 1e6
            print(f"{form:6s} {name:18s} {us:7.1f} us/call (host-bound loop)")
            if name not in ("torch.sum", "torch.vector_norm") and (worst is None or us > worst[0]):
                worst = (us, name, form, f, x, ax)
    us, name, form, f, x, ax = worst
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(500):
        f(x, ax)
    pr.disable()
    torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18)
    print(f"profile of {name} {form} (500 calls):")
    print(s.getvalue())


if __name__ == "__main__":
    main()
