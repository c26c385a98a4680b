"""The reduction API with the array API standard's signatures: ``axis`` (an int, a tuple,
negatives), ``keepdims``, ``dtype=``, ``out=``, NaN, empty axes, and what it refuses.

Without a GPU it prints each reduction's plan (the result's shape and dtype, the
kernel's destination) and the dispatch table that ``explain=True`` returns, and runs the
reductions that need no kernel (empty axes); with a GPU and torch it runs them on torch
tensors and compares with torch. docs/from_torch.md walks through the same calls.

    python examples/array_api.py
"""

from __future__ import annotations

import numpy as np

import bulkred_dialect as bulkred
from bulkred_dialect import api

CALLS = [
    # (what, function, shape, dtype, options)
    ("x.sum(dim=(0, 2), keepdim=True)", "sum", (8, 50, 40), "float32", {"axis": (0, 2), "keepdims": True}),
    ("x.sum()", "sum", (8, 50, 40), "float32", {}),
    ("x.amax(dim=-1)", "max", (8, 50, 40), "float32", {"axis": -1}),
    ("x.sum() of int32 (int64, as torch)", "sum", (1000,), "int32", {}),
    ("x.sum(dtype=torch.float32) of float16", "sum", (4096,), "float16", {"dtype": "float32"}),
]


def plans() -> None:
    """Each call's plan and the variant the dispatch chooses for it (no GPU needed)."""
    for what, fn, shape, dtype, kw in CALLS:
        p = api.plan(fn, shape, dtype, **kw)
        x = np.zeros(shape, dtype)
        try:
            chosen = getattr(bulkred, fn)(x, explain=True, **kw).splitlines()[-1]
        except bulkred.ReductionError as e:  # what the dialect does not take yet, in one line
            chosen = f"refused: {e}"
        print(f"{what:40} -> shape {p.result_shape}, {p.dst}; kernel dst {p.kernel_shape}; {chosen}")


def refusals() -> None:
    """One line each, before anything is built or launched."""
    x = np.zeros((4, 5), np.float32)
    for call in (
        lambda: bulkred.sum(x, axis=(1, -1)),
        lambda: bulkred.sum(x, axis=2),
        lambda: bulkred.max(np.zeros((4, 0), np.float32), axis=1),
        lambda: bulkred.sum(x, out=np.zeros(1, np.float32)),
    ):
        try:
            call()
        except bulkred.ReductionError as e:
            print(f"refused: {e}")


def empty() -> None:
    """Sums and products over empty axes: 0 and 1, as torch gives, without a kernel."""
    x = np.zeros((0, 3), np.float32)
    try:
        prod = bulkred.prod(x, axis=0)
    except bulkred.ReductionError as e:  # a kind the dialect does not have yet
        prod = f"refused: {e}"
    print("sum over an empty axis:", bulkred.sum(x, axis=0), "prod:", prod)


def on_the_gpu() -> None:
    import torch

    x = torch.randn(8, 50, 40, device="cuda")
    y = bulkred.sum(x, axis=(0, 2), keepdims=True)
    torch.testing.assert_close(y, x.sum(dim=(0, 2), keepdim=True), rtol=1e-5, atol=1e-4)
    s = bulkred.sum(x)
    print("bulkred.sum(x):", tuple(s.shape), s.dtype, float(s), "torch:", float(x.sum()))


def main() -> None:
    plans()
    refusals()
    empty()
    from bulkred_dialect.backend_ptx.runtime import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:
        print("no GPU: the plans only")
        return
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        print("torch is not installed: the plans only")
        return
    on_the_gpu()


if __name__ == "__main__":
    main()
