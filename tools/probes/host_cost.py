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
        "softmax's key (row_functions._key)": lambda: row_functions._key(row_functions.NORMS["softmax"], (x, -1, None, None)),
    }
    out = {}
    for name, fn in calls.items():
        fn()
        out[name] = _us(fn)
    return out


def reductions() -> dict[str, float]:
    """The reductions' kept calls: each call's key put in ``api.CALLS`` with the launch
    layer's generated launcher (``bound_launcher``) for its result, the launch a stub."""
    from types import SimpleNamespace

    import numpy as np
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import api
    from bulkred_dialect.backend_ptx import launch

    g = SimpleNamespace(broken=None, streams={0: "s"}, stream_for=lambda h: "s", memset_async=lambda *a: None)
    a = torch.randn(32)
    a2 = torch.randn(4, 8)
    out = torch.empty(4)
    inf = float("inf")
    cases = {  # name: (call, x, axis, keepdims, options, out, the caller's result shapes (None: out=))
        "sum(A)": (lambda: bulkred.sum(a), a, None, False, {}, None, [()]),
        "vector_norm(A, ord=inf)": (lambda: bulkred.vector_norm(a, ord=inf), a, None, False, {"ord": inf}, None, [()]),
        "aminmax(A)": (lambda: bulkred.aminmax(a), a, None, False, {}, None, [(), ()]),
        "std_mean(A, correction=1)": (lambda: bulkred.std_mean(a, correction=1), a, None, False, {"correction": 1},
                                      None, [(), ()]),
        "sum(A2, axis=1, out=B)": (lambda: bulkred.sum(a2, axis=1, out=out), a2, 1, False, {}, out, None),
        "sum(A2, axis=1, keepdims=True)": (lambda: bulkred.sum(a2, axis=1, keepdims=True), a2, 1, True, {}, None,
                                           [(4, 1)]),
    }
    res = {}
    for name, (fn, x, axis, keepdims, options, o, new) in cases.items():
        fname = name.split("(")[0]
        key = api.call_key(fname, x, axis, keepdims, options, o)
        kshape = (1,) if axis is None else (4,)
        made = [x.new_empty(kshape) for _ in (new or [o])]
        b = launch.bound_launcher(fname, g, "kern", "config", [], [x, *made], inputs=1,
                                  order=tuple(range(1, 1 + len(made))), new=new,
                                  pack=(lambda *r: r) if new and len(new) == 2 else None, zero=(),
                                  align=[16] + [1] * len(made))
        b.__globals__.update(raw_stream=lambda dev: 0, launch=lambda *a: None)
        api.CALLS[key] = (b, None, None)
        fn()
        res[name] = _us(fn)
        res[f"  its key (api.call_key) and look-up"] = _us(lambda: api.CALLS.get(
            api.call_key(fname, x, axis, keepdims, options, o)))
    like = a.new_empty(())
    res["torch.empty_like(0-d)"] = _us(lambda: torch.empty_like(like))
    res["the launcher alone (sum(A))"] = _us(lambda: api.CALLS[api.call_key("sum", a, None, False, {}, None)][0](a, None))
    del np
    return res


def main() -> None:
    for name, us in {**rows(), **reductions()}.items():
        print(f"{us:8.2f} us  {name}")


if __name__ == "__main__":
    main()
