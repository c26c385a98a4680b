#!/usr/bin/env python3
"""Dense views off the vector alignment (issue 16): ``x = base[1:]`` of a float32 storage
(4 bytes past a 16-byte boundary) reduced whole, by row and by column, beside the same
reduction of an aligned copy and torch's of the view; GPU time per call (a CUDA graph of
many calls, replayed) as benchmarks/reductions_api.py takes it, at 1 MiB and 256 MiB.

    python3 tools/diag_misaligned.py        # on the GPU machine (.whl carried)
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))

import reductions_api as bench  # noqa: E402


def main() -> int:
    import torch

    import bulkred_dialect as bulkred

    print(f"GPU: {torch.cuda.get_device_name()}")
    print("| case | size | variant (view) | view GPU us | aligned GPU us | torch (view) GPU us | torch/view | check |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- |")
    for nbytes, label in ((1 << 20, "1M"), (256 << 20, "256M")):
        n = nbytes // 4
        cols = 4096 if n >= 4096 * 64 else 512
        for name, shape, axis in (("whole", (n,), None), ("rows", (n // cols, cols), 1), ("cols", (n // cols, cols), 0)):
            copies = max(2, min(16, bench.L2_ROTATE // nbytes))
            bases = [torch.randn(n + 1, device="cuda") for _ in range(copies)]
            views = [b[1:].view(shape) for b in bases]
            aligned = [v.clone() for v in views]
            assert views[0].data_ptr() % 16 == 4 and aligned[0].data_ptr() % 16 == 0

            def fb(x, axis=axis):
                return bulkred.sum(x, axis=axis)

            def ft(x, axis=axis):
                return x.sum() if axis is None else x.sum(axis)

            got = fb(views[0])
            want = views[0].double().sum() if axis is None else views[0].double().sum(axis)
            err = float((got.double() - want).abs().max() / views[0].double().abs().sum(dim=axis).max())
            table = bulkred.sum(views[0], axis=axis, explain=True)
            v = bench.graph_us(torch, fb, views, 20, 5)
            a = bench.graph_us(torch, fb, aligned, 20, 5)
            t = bench.graph_us(torch, ft, views, 20, 5)
            print(f"| {name} | {label} | {table.splitlines()[-1].removeprefix('chosen: ')} -> grid_gather | {v:.1f} | {a:.1f} | {t:.1f} | {t / v:.2f} | {'ok' if err < 1e-5 else f'WRONG {err:.1e}'} |", flush=True)
            del bases, views, aligned
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
