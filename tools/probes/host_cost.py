"""The host's cost of a call without a GPU: the row functions' path (key, look-up, the
launch layer's bound launcher, the outputs' allocation) on CPU torch tensors, with the
launch itself a stub (``Kernel.bind``'s generated launcher, its driver call replaced by
a no-op), and the torch steps a call takes (allocations, a key's reads); the reductions'
calls with each step's part (the key and look-up, the launcher, the rest); the autograd
route's forward and backward against torch's on the CPU. Each figure is the best of 60
loops, per call, in microseconds; compare figures of one run only.

    PYTHONPATH=/path/to/torch python3 tools/diag.py host_cost [--part rows|reductions|autograd|all]

On the GPU machine ``bash tools/gpu.sh bench:call_overhead`` and ``probe:row_calls``
time the real launches.
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _us(fn, n: int = 500) -> float:
    """Microseconds per call: the best of 60 loops of ``n`` (short loops: on a shared
    machine the best of many finds the quiet moments)."""
    return min(timeit.repeat(fn, number=n, repeat=60)) / n * 1e6


class _StubKernel:
    """A row kernel that launches nothing: ``bind`` is the launch layer's generated
    launcher (``launch.bound_launcher``) on a stand-in GPU whose launch is a no-op."""

    def __init__(self, align: int = 16):
        self.align = align

    def __call__(self, *tensors):
        return tensors

    def bind(self, params, *, inputs, order, new, pack=None, at=None, refused=None):
        from types import SimpleNamespace

        import numpy as np

        from bulkred_dialect.backend_ptx import launch

        g = SimpleNamespace(broken=None, streams={0: "s"}, stream_for=lambda h: "s", memset_async=lambda *a: None)
        sys.modules["torch"].Tensor.get_device  # noqa: B018 - CPU tensors answer -1
        b = launch.bound_launcher("rows", g, "kern", "config", [np.int64(params[0].shape[0])], params, inputs=inputs,
                                  order=order, new=new, pack=pack, zero=(), align=[self.align] * len(params),
                                  **({} if at is None else {"at": at, "refused": refused}))
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


def reductions() -> None:
    """The reductions' kept calls: each call's key put in ``api.CALLS`` with the launch
    layer's generated launcher (``bound_launcher``) for its results (the row's result
    type for a pair), the launch a stub. Per case: the whole call, its key and look-up,
    and the launcher alone; the rest of the call is the public function's own frame."""
    from types import SimpleNamespace

    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import api
    from bulkred_dialect.backend_ptx import launch
    from bulkred_dialect.functions import FUNCTIONS

    g = SimpleNamespace(broken=None, streams={0: "s"}, stream_for=lambda h: "s", memset_async=lambda *a: None)
    a = torch.randn(32)
    a2 = torch.randn(4, 8)
    out = torch.empty(4)
    inf = float("inf")
    f32, i64 = torch.float32, torch.int64
    cases = {  # name: (call, function, x, axis, keepdims, options as given, out, result dtypes, result shape)
        "sum(A)": (lambda: bulkred.sum(a), "sum", a, None, False, {}, None, [f32], ()),
        "amax(A)": (lambda: bulkred.amax(a), "amax", a, None, False, {}, None, [f32], ()),
        "vector_norm(A, ord=inf)": (lambda: bulkred.vector_norm(a, ord=inf), "vector_norm", a, None, False,
                                    {"ord": inf}, None, [f32], ()),
        "aminmax(A)": (lambda: bulkred.aminmax(a), "aminmax", a, None, False, {}, None, [f32, f32], ()),
        "std_mean(A2, axis=1, correction=1)": (lambda: bulkred.std_mean(a2, axis=1, correction=1), "std_mean", a2, 1,
                                               False, {"correction": 1}, None, [f32, f32], (4,)),
        "max_with_indices(A2, axis=1)": (lambda: bulkred.max_with_indices(a2, axis=1), "max_with_indices", a2, 1,
                                         False, {}, None, [f32, i64], (4,)),
        "amax(A2, dim=1) (torch's spelling)": (lambda: bulkred.amax(a2, dim=1), "amax", a2, None, False, {"dim": 1},
                                               None, [f32], (4,)),
        "sum(A2, axis=1, out=B)": (lambda: bulkred.sum(a2, axis=1, out=out), "sum", a2, 1, False, {}, out, None, None),
        "sum(A2, axis=1, keepdims=True)": (lambda: bulkred.sum(a2, axis=1, keepdims=True), "sum", a2, 1, True, {},
                                           None, [f32], (4, 1)),
    }
    for name, (fn, fname, x, axis, keepdims, options, o, dtypes, shape) in cases.items():
        key = api.call_key(fname, x, axis, keepdims, options, o)
        kshape = (1,) if shape == () else (4,)
        made = [x.new_empty(kshape, dtype=d) for d in dtypes] if dtypes else [o]
        new = [shape] * len(made) if dtypes else None
        b = launch.bound_launcher(fname, g, "kern", "config", [], [x, *made], inputs=1,
                                  order=tuple(range(1, 1 + len(made))), new=new,
                                  pack=FUNCTIONS[fname].result_type if len(made) == 2 else None, zero=(),
                                  align=[16] + [1] * len(made))
        b.__globals__.update(raw_stream=lambda dev: 0, launch=lambda *a: None)
        api.CALLS[key] = (b, None, None)
        if "dim" in options:  # (the key of axis=: where the arguments are keyed after torch's spelling is taken apart)
            api.CALLS[api.call_key(fname, x, options["dim"], keepdims, {}, o)] = (b, None, None)
        fn()
        whole = _us(fn)
        key_us = _us(lambda: api.CALLS.get(api.call_key(fname, x, axis, keepdims, options, o)))
        launcher = _us(lambda: b(x, o))
        print(f"{whole:8.2f} us  {name}: its key and look-up {key_us:.2f}, its launcher alone {launcher:.2f}, "
              f"the rest {whole - key_us - launcher:.2f}", flush=True)
    like = a.new_empty(())
    print(f"{_us(lambda: torch.empty_like(like)):8.2f} us  torch.empty_like(0-d)")


def autograd() -> None:
    """The autograd route's host steps on CPU tensors (x float32 [4, 8] requiring grad,
    axis -1, w of the result's shape): bulkred's call (the kernel a stub returning a
    result made before, as a launcher's) against torch's CPU call, the forward, the
    backward (``retain_graph``: one graph, backward again) and both. torch's CPU kernels
    stand in for its launches: compare bulkred's figures between runs, torch's as a scale."""
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import api
    from bulkred_dialect.backend_ptx import device

    import test_grads  # the tests' kernel simulated by torch (tests/ on the path: tools/diag.py)

    api.kernel_of = lambda p, target: test_grads.TorchKernel(p)
    device.current_arch = lambda: "sm_90a"
    torch.set_num_threads(1)  # (torch's CPU kernels without a thread pool: steadier figures)
    x = torch.randn(4, 8).requires_grad_(True)
    w = torch.randn(4)
    empty_like = torch.empty_like
    rows = {  # row: (bulkred's call, torch's, the kernel the forward runs, its results)
        "amax": (lambda t: bulkred.amax(t, axis=-1), lambda t: torch.amax(t, dim=-1), "amax"),
        "var": (lambda t: bulkred.var(t, axis=-1, correction=1), lambda t: torch.var(t, dim=-1), "var_mean"),
        "std": (lambda t: bulkred.std(t, axis=-1, correction=1), lambda t: torch.std(t, dim=-1), "std_mean"),
        "logsumexp": (lambda t: bulkred.logsumexp(t, axis=-1), lambda t: torch.logsumexp(t, -1), "logsumexp"),
        "vector_norm": (lambda t: bulkred.vector_norm(t, axis=-1), lambda t: torch.linalg.vector_norm(t, dim=-1),
                        "vector_norm"),
    }
    for name, (ours, theirs, target) in rows.items():
        api.CALLS.clear()
        ours(x)  # the first call: the simulated kernel, kept under its key without a launcher
        like = theirs(x.detach())
        if target.endswith("_mean"):
            def stub(t, out, like=like):
                return empty_like(like), empty_like(like)
        else:
            def stub(t, out, like=like):
                return empty_like(like)
        for k in [k for k in api.CALLS if k[0] == target and not k[5]]:  # (k[5]: the route's key, x requiring grad)
            api.CALLS[k] = (stub, None, None)  # the launcher of the next calls: its results made as a launcher's
        ours(x)

        def step(f):
            f(x).backward(w)

        def backward(f):
            y = f(x)
            return lambda: y.backward(w, retain_graph=True)

        got = [_us(lambda: ours(x), 200), _us(lambda: theirs(x), 200), _us(backward(ours), 200),
               _us(backward(theirs), 200), _us(lambda: step(ours), 200), _us(lambda: step(theirs), 200)]
        print(f"{name:12} forward {got[0]:6.2f} / {got[1]:6.2f}   backward {got[2]:6.2f} / {got[3]:6.2f}   "
              f"both {got[4]:6.2f} / {got[5]:6.2f}  (bulkred / torch us)", flush=True)


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["rows", "reductions", "autograd", "all"], default="all")
    part = ap.parse_args().part
    if part in ("rows", "all"):
        for name, us in rows().items():
            print(f"{us:8.2f} us  {name}")
    if part in ("reductions", "all"):
        reductions()
    if part in ("autograd", "all"):
        autograd()


if __name__ == "__main__":
    main()
