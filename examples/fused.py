"""The fused reductions (issue 17): ``bulkred.mean``, ``var``, ``std``, ``var_mean``,
``argmax``, ``argmin``, ``vector_norm`` and ``logsumexp``, each one grid-scope
``bulkred.reduce`` with a prologue, an epilogue or a kind of several values.

Without a GPU it prints, for each call, the ``bulkred.reduce`` it becomes (kind,
prologue, epilogue, correction, aux output), the result's shape and dtype, and the end
of the dispatch table that ``explain=True`` returns; with a GPU and torch it runs them
on torch tensors and compares with torch. docs/fused.md walks through the same calls.

    python examples/fused.py
"""

from __future__ import annotations

import math

import numpy as np

import bulkred_dialect as bulkred
from bulkred_dialect import api

CALLS = [
    # (torch, function, options)
    ("x.mean(dim=-1)", "mean", {"axis": -1}),
    ("x.var(dim=0)  (torch's correction=1)", "var", {"axis": 0, "correction": 1}),
    ("x.std()", "std", {"correction": 1}),
    ("torch.var_mean(x, dim=-1)", "var_mean", {"axis": -1, "correction": 1}),
    ("torch.argmax(x, dim=1)", "argmax", {"axis": 1}),
    ("torch.argmin(x)", "argmin", {}),
    ("torch.linalg.vector_norm(x, dim=-1)", "vector_norm", {"axis": -1}),
    ("x.abs().amax()", "vector_norm", {"ord": math.inf}),
    ("torch.linalg.vector_norm(x, ord=3)", "vector_norm", {"ord": 3.0}),
    ("torch.logsumexp(x, dim=-1)", "logsumexp", {"axis": -1}),
]
SHAPE = (256, 4096)


def plans() -> None:
    """Each call's plan and the end of its dispatch table (no GPU needed)."""
    x = np.zeros(SHAPE, np.float32)
    for what, fn, kw in CALLS:
        opts = {k: v for k, v in kw.items() if k in ("correction", "ord")}
        p = api.plan(fn, SHAPE, "float32", kw.get("axis"), **opts)
        print(f"== bulkred.{fn}({', '.join(f'{k}={v}' for k, v in kw.items())})   # {what}")
        print(
            f"   bulkred.reduce {p.kind} prologue {list(p.prologue)} epilogue {list(p.epilogue)}"
            + (f" correction {p.correction}" if p.correction is not None else "")
            + (f" aux {p.aux}" if p.aux else "")
            + f" -> {p.dst}{list(p.result_shape)}"
        )
        try:
            table = getattr(bulkred, fn)(x, explain=True, **kw)
            print("   " + "\n   ".join(table.splitlines()[-2:]))
        except bulkred.ReductionError as e:  # what the lowering does not take yet, in one line
            print(f"   refused: {e}")


def refusals() -> None:
    """One line each, before anything is built or launched."""
    x = np.zeros((4, 5), np.float32)
    for call in (
        lambda: bulkred.mean(np.zeros(4, np.int32)),
        lambda: bulkred.argmax(x, axis=(0, 1)),
        lambda: bulkred.vector_norm(x, ord="fro"),
        lambda: bulkred.var(x, correction=float("nan")),
    ):
        try:
            call()
        except bulkred.ReductionError as e:
            print(f"refused: {e}")


def on_the_gpu() -> None:
    import torch

    x = torch.randn(*SHAPE, device="cuda")
    v, m = bulkred.var_mean(x, axis=-1, correction=1)
    tv, tm = torch.var_mean(x, dim=-1)
    torch.testing.assert_close(v, tv, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(m, tm, rtol=1e-4, atol=1e-5)
    assert torch.equal(bulkred.argmax(x, axis=1), torch.argmax(x, dim=1))
    torch.testing.assert_close(bulkred.vector_norm(x, ord=math.inf), x.abs().amax())
    torch.testing.assert_close(bulkred.vector_norm(x, axis=-1), torch.linalg.vector_norm(x, dim=-1))
    torch.testing.assert_close(bulkred.logsumexp(x, axis=-1), torch.logsumexp(x, dim=-1))
    print("on the GPU: var_mean, argmax, absmax, the L2 norm and logsumexp agree with torch")


def main() -> None:
    plans()
    refusals()
    from bulkred_dialect.backend_ptx.runtime import gpu_unavailable_reason

    if gpu_unavailable_reason() is not None:
        print("no GPU: the plans only")
        return
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        print("torch is not installed: the plans only")
        return
    on_the_gpu()


if __name__ == "__main__":
    main()
