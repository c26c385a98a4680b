"""The host's cost of a call without a GPU: the row functions' path (key, look-up, the
launch layer's bound launcher, the outputs' allocation) on CPU torch tensors, with the
launch itself a stub (``Kernel.bind``'s generated launcher, its driver call replaced by
a no-op), and the torch steps a call takes (allocations, a key's reads). Each figure is
the best of 5 loops, per call, in microseconds; compare figures of one run only.

    PYTHONPATH=/path/to/torch python3 tools/probes/host_cost.py

On the GPU machine ``bash tools/gpu.sh bench:call_overhead`` and ``probe:row_calls``
time the real launches.
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _us(fn, n: int = 5000) -> float:
    return min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6


class _StubKernel:
    """A row kernel that launches nothing: ``bind`` is the launch layer's generated
    launcher (``launch.bound_launcher``) on a stand-in GPU whose launch is a no-op."""

    def __init__(self, align: int = 16):
        self.align = align

    def __call__(self, *tensors):
        return tensors

    def bind(self, params, *, inputs, order, new, pack=None):
        from types import SimpleNamespace

        import numpy as np

        from bulkred_dialect.backend_ptx import launch

        g = SimpleNamespace(broken=None, streams={0: "s"}, stream_for=lambda h: "s", memset_async=lambda *a: None)
        sys.modules["torch"].Tensor.get_device  # noqa: B018 - CPU tensors answer -1
        b = launch.bound_launcher("rows", g, "kern", "config", [np.int64(params[0].shape[0])], params, inputs=inputs,
                                  order=order, new=new, pack=pack, zero=(), align=[self.align] * len(params))
        b.__globals__.update(raw_stream=lambda dev: 0, launch=lambda *a: None)
        return b


def rows() -> dict[str, float]:
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import row_functions, row_kernels

    row_kernels.kernel_for = lambda *a, **kw: _StubKernel()
    row_functions.DEVICES = ("cuda", "cpu")
    row_functions.forget()
    x = torch.randn(8, 4096).bfloat16()
    w = torch.randn(4096).bfloat16()
    b = torch.randn(4096).bfloat16()
    t = torch.randint(0, 4096, (8,))
    calls = {
        "softmax": lambda: bulkred.softmax(x),
        "rms_norm": lambda: bulkred.rms_norm(x, (4096,), w),
        "layer_norm": lambda: bulkred.layer_norm(x, (4096,), w, b),
        "cross_entropy(none)": lambda: bulkred.cross_entropy(x, t, reduction="none"),
        "cross_entropy(mean)": lambda: bulkred.cross_entropy(x, t),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
        "torch.empty(shape, dtype=, device=)": lambda: torch.empty((8, 4096), dtype=x.dtype, device=x.device),
        "row key": lambda: ("softmax", torch.is_grad_enabled(), *map(row_functions._part, (x, -1, None, None))),
    }
    out = {}
    for name, fn in calls.items():
        fn()
        out[name] = _us(fn)
    return out


def main() -> None:
    for name, us in rows().items():
        print(f"{us:8.2f} us  {name}")


if __name__ == "__main__":
    main()
