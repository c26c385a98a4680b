#!/usr/bin/env python3
"""What zeroing a column sum's destination costs per call (issue 16: grid_split_bulk adds
into ``dst``, which the launcher zeroes before each launch): the host time of the
runtime's ``memset_async`` (cuMemsetD8Async through cuda.bindings) against torch's
``zero_()`` on the same stream, and the per-call time (events around one call, the GPU
idle before it) of ``bulkred.sum(x, axis=0)`` of a 2048 x 2048 float32 tensor as it is,
and with the zeroing done by ``zero_()`` instead (the kernel called on a zeroed result).

    python3 tools/diag_zero_cost.py        # on the GPU machine (.whl carried)
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main() -> int:
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import api
    from bulkred_dialect.backend_ptx import device
    from bulkred_dialect.backend_ptx.device import current_arch

    x = torch.randn(2048, 2048, device="cuda")
    bulkred.sum(x, axis=0)
    torch.cuda.synchronize()
    g = device.gpu()
    h = torch._C._cuda_getCurrentRawStream(0)
    s = g.stream_for(h)
    out = torch.empty(2048, device="cuda")
    n = 2000

    def host(fn) -> float:
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        el = time.perf_counter() - t
        torch.cuda.synchronize()
        return el / n * 1e6

    print(f"memset_async (cuMemsetD8Async) host: {host(lambda: g.memset_async(out.data_ptr(), 8192, s)):.2f} us")
    print(f"torch zero_() host:                  {host(lambda: out.zero_()):.2f} us")
    print(f"torch.zeros(2048) host:              {host(lambda: torch.zeros(2048, device='cuda')):.2f} us")
    print(f"torch.empty(2048) host:              {host(lambda: torch.empty(2048, device='cuda')):.2f} us")

    p = api._as_plan("sum", (2048, 2048), "float32", 0, None, None)
    kernel = api.kernel_of(p, current_arch())

    def per_call(fn, repeat=200) -> float:
        for _ in range(5):
            fn()
        ts = []
        for _ in range(repeat):
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        return statistics.median(ts)

    def zeros_then_kernel():
        o = torch.zeros(2048, device="cuda")
        kernel(x, o)  # the launcher zeroes again (zero_init): an upper bound of the path
        return o

    cases = {
        "bulkred.sum(x, axis=0)": lambda: bulkred.sum(x, axis=0),
        "torch.sum(x, 0)": lambda: torch.sum(x, 0),
        "kernel(x, empty) (memset inside)": lambda: kernel(x, torch.empty(2048, device="cuda")),
        "zeros + kernel (two zeroings)": zeros_then_kernel,
        "torch.zeros(2048) alone": lambda: torch.zeros(2048, device="cuda"),
    }
    for rnd in range(2):
        for name, fn in cases.items():
            print(f"round {rnd}  {name:36s} {per_call(fn):6.1f} us per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
