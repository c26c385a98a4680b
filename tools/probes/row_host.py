"""The row functions' host cost per call, step by step, without a GPU: each function's
call on CPU torch tensors with the launch a stub (:class:`StubKernel`: the launch
layer's generated launcher, its driver call a no-op, as host_cost.py's), then the steps of
``bulkred.softmax(x)``'s call (torch.compile's check, the key, the look-up, the launcher,
the launch layer's launcher alone, ``empty_like``). Per call in microseconds, the best of
``--repeat`` loops of ``--number`` calls, timed by the thread's CPU time (this machine is
shared: the wall clock counts the others' time too).

    PYTHONPATH=/path/to/torch python3 tools/probes/row_host.py [--root TREE] [--m 8] [--n 4096]

``--root``: the bulkred tree to import (e.g. an earlier commit's ``git archive``, to
compare before and after in one sitting).
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent


class StubKernel:
    """A row kernel that launches nothing: ``bind`` is the launch layer's generated
    launcher (``launch.bound_launcher``) on a stand-in GPU whose launch is a no-op."""

    def __call__(self, *tensors):
        return tensors

    def bind(self, params, *, inputs, order, new, pack=None):
        from types import SimpleNamespace

        import numpy as np

        from bulkred_dialect.backend_ptx import launch

        g = SimpleNamespace(broken=None, streams={0: "s"}, stream_for=lambda h: "s", memset_async=lambda *a: None)
        b = launch.bound_launcher("rows", g, "kern", "config", [np.int64(params[0].shape[0])], params, inputs=inputs,
                                  order=order, new=new, pack=pack, zero=(), align=[16] * len(params))
        b.__globals__.update(raw_stream=lambda dev: 0, launch=lambda *a: None)
        return b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(HERE.parents[1]))
    ap.add_argument("--m", type=int, default=8)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=40)
    a = ap.parse_args()
    sys.path.insert(0, a.root)
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import row_functions, row_kernels

    assert Path(bulkred.__file__).is_relative_to(Path(a.root).resolve()), bulkred.__file__
    row_kernels.kernel_for = lambda *args, **kw: StubKernel()
    row_functions.DEVICES = ("cuda", "cpu")
    row_functions.forget()
    m, n = a.m, a.n
    g = torch.Generator().manual_seed(0)
    x = torch.randn(m, n, generator=g).bfloat16()
    r = torch.randn(m, n, generator=g).bfloat16()
    w = torch.randn(n, generator=g).bfloat16()
    b = torch.randn(n, generator=g).bfloat16()
    t = torch.randint(0, n, (m,), generator=g)

    def us(fn) -> float:
        fn()
        return min(timeit.repeat(fn, number=a.number, repeat=a.repeat, timer=time.thread_time)) / a.number * 1e6

    calls = {
        "softmax(x)": lambda: bulkred.softmax(x),
        "log_softmax(x)": lambda: bulkred.log_softmax(x),
        "rms_norm(x, (n,), w)": lambda: bulkred.rms_norm(x, (n,), w),
        "layer_norm(x, (n,), w, b)": lambda: bulkred.layer_norm(x, (n,), w, b),
        "add_rms_norm(x, r, w)": lambda: bulkred.add_rms_norm(x, r, w),
        "cross_entropy(x, t, reduction='none')": lambda: bulkred.cross_entropy(x, t, reduction="none"),
        "cross_entropy(x, t)": lambda: bulkred.cross_entropy(x, t),
    }
    print(f"[{m}, {n}] bfloat16, {a.root}")
    for name, fn in calls.items():
        print(f"{us(fn):7.3f} us  {name}")
    # softmax's steps: its launcher is the only one kept under a fresh CALLS
    row_functions.forget()
    bulkred.softmax(x)
    (launcher,) = row_functions.CALLS.values()
    cells = dict(zip(launcher.__code__.co_freevars, (c.cell_contents for c in launcher.__closure__ or ())))
    steps = {
        "torch.compiler.is_compiling()": torch.compiler.is_compiling,
        "torch.is_grad_enabled()": torch.is_grad_enabled,
        "x's part of a key (class, shape, dtype, device, stride(), requires_grad)": lambda: (
            x.__class__, x.shape, x.dtype, x.device, x.stride(), x.requires_grad),
        "the launcher kept (launcher(args))": lambda: launcher((x, -1, None, None)),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
    }
    if "b" in cells:  # the launch layer's generated launcher, alone
        bound = cells["b"]
        steps["the launch layer's launcher alone (b(x, None))"] = lambda: bound(x, None)
    print("softmax's steps:")
    for name, fn in steps.items():
        print(f"{us(fn):7.3f} us  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
