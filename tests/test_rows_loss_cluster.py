"""cross_entropy's mean and sum through a thread-block cluster (rows_lower.LOSS_TAIL_CLUSTER,
on where LOSS_TAIL_CLUSTER_MEASURED has the cell): a grid of 2 to LOSS_TAIL_CLUSTER_MAX CTAs launched as one cluster sends
its CTAs' (loss sum, kept rows) pairs into the leader's shared memory (st.async, an
mbarrier's transaction count), no workspace, fence or ticket. On the interpreter
(run_cluster_grid gives such a grid the whole grid's cluster, as the launch layer does)
against float64: M = 1, 3 and 8 (small N standing in for 4096), ignored rows, every row
ignored (the mean NaN, 0 / 0 as torch); the bits of ``reduced`` equal to the default
tail's at every M (the same slots in the same lanes); a grid past the largest cluster takes
the default's tail; the launch layer's rule; the default kernel unchanged.

Small settings keep the interpreter fast (test_rows.py's: CTAs of one or two warps)."""

from __future__ import annotations

import numpy as np
import pytest
from test_rows import lowered, small_ctas, to_bits, values  # noqa: F401 (small_ctas: autouse)

from bulkred_dialect.backend_ptx.launch import resolve_launch
from bulkred_dialect.backend_ptx.signature import signature_from_json, signature_of_func, signature_to_json
from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.kernel_attrs import GRID_ROWS_ATTR, grid_for_rows, whole_grid_cluster
from bulkred_dialect.passes.variants import rows_common, rows_lower
from bulkred_dialect.row_kernels import module

IGNORE = -7


def kernel_of(built):
    return next(o for o in built.walk() if o.name == "func.func")


def build(variant: str, n: int, dtype: str, reduction: str, cluster: bool, monkeypatch):
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER", cluster)
    return lowered(module("cross_entropy", None, n, dtype, stats=("lse",), variant=variant, ignore_index=IGNORE,
                          reduction=reduction))


def run(built, x: np.ndarray, target: np.ndarray, dtype: str,
        workspace_fill: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(reduced's bits, the loss rows, the workspace after) of the kernel on these rows, its
    workspace filled with ``workspace_fill`` before."""
    m = len(target)
    ws = np.full(kernel_of(built).attributes["bulkred.workspace"].value.data, workspace_fill, np.int8)
    got = run_cluster_grid(built, "rows", to_bits(x, dtype), target.astype(np.int64), np.full(m, 7.0, np.float32),
                           np.full(m, 7.0, np.float32), to_bits(np.full(1, 7.0), dtype), ws)
    return got[4], got[2].astype(np.float64), ws


def grid_of(built, m: int) -> int:
    per, cap = (a.value.data for a in kernel_of(built).attributes[GRID_ROWS_ATTR].data[:2])
    return grid_for_rows(per, cap, 1, m)


def want(loss: np.ndarray, target: np.ndarray, reduction: str) -> float:
    with np.errstate(invalid="ignore"):
        s = loss.sum()
        return s if reduction == "sum" else s / (target != IGNORE).sum()


def rows_reference(x: np.ndarray, target: np.ndarray) -> np.ndarray:
    mx = x.max(1)
    lse = mx + np.log(np.exp(x - mx[:, None]).sum(1))
    kept = target != IGNORE
    return np.where(kept, lse - x[np.arange(len(x)), np.where(kept, target, 0)], 0.0)


# (variant, N, dtype): a CTA per row (rows_cta, 2 warps: the default's tail a CTA tree of two
# warps) and a warp per row (rows_warp, 2 warps: a CTA's pair from its two rows)
CASES = [("rows_cta", 300, "bfloat16"), ("rows_warp", 68, "float32")]


@pytest.mark.parametrize("variant,n,dtype", CASES, ids=[c[0] for c in CASES])
def test_cluster_tail_against_float64_and_the_default_bits(variant: str, n: int, dtype: str, monkeypatch) -> None:
    """M = 1, 3 and 8, ignored rows (st.async on the leader's mbarrier): the cluster tail's mean and sum
    near float64 of the kernel's own loss rows, bit for bit the default tail's; where the
    grid is one cluster (2 to 8 CTAs) it leaves the workspace as it found it, even filled
    with garbage (it never reads it: the default's ticket would); the loss rows the same in
    every batch."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)
    rng = np.random.default_rng(n)
    x = rng.standard_normal((8, n)) * 3
    target = rng.integers(0, n, 8)
    target[[1, 5]] = IGNORE
    xv = values(to_bits(x, dtype), dtype)
    ref = rows_reference(xv, target)
    for reduction in ("mean", "sum"):
        on = build(variant, n, dtype, reduction, True, monkeypatch)
        off = build(variant, n, dtype, reduction, False, monkeypatch)
        assert len(kernel_of(on).attributes[GRID_ROWS_ATTR].data) == 3
        assert len(kernel_of(off).attributes[GRID_ROWS_ATTR].data) == 2
        clustered = 0
        for m in (1, 3, 8):
            whole = whole_grid_cluster((1, 1, rows_lower.LOSS_TAIL_CLUSTER_MAX), grid_of(on, m)) > 1
            clustered += whole
            got, loss, ws = run(on, x[:m], target[:m], dtype, workspace_fill=5 if whole else 0)
            base, base_loss, _ = run(off, x[:m], target[:m], dtype)
            assert (ws == (5 if whole else 0)).all(), "the workspace was touched"
            np.testing.assert_array_equal(loss, base_loss)
            np.testing.assert_allclose(loss, ref[:m], rtol=0, atol=4e-6 * max(1.0, np.abs(ref).max()))
            assert got.tobytes() == base.tobytes(), (variant, reduction, m, got, base)
            w = want(loss, target[:m], reduction)
            v = values(got, dtype)[0]
            tol = {"float32": 1e-6, "bfloat16": 8e-3}[dtype]
            assert abs(v - w) <= tol * abs(w) + 1e-5 * np.abs(loss).sum(), (reduction, m, v, w)
        assert clustered >= 2, "no grid of these M was one cluster"


def test_every_row_ignored_and_past_the_cluster(monkeypatch) -> None:
    """Every target ignore_index in a grid that is one cluster: the mean NaN (0 / 0), the sum
    0. A grid of 3 launched without a cluster, and a grid of more CTAs than the largest
    cluster (LOSS_TAIL_CLUSTER_MAX 2 here): the default's tail (the workspace's ticket and
    slots, left zeroed), its bits."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)
    n, dtype = 300, "float32"
    x = np.random.default_rng(1).standard_normal((3, n))
    ignored = np.full(3, IGNORE, np.int64)
    for reduction, check in (("mean", np.isnan), ("sum", lambda v: v == 0.0)):
        on = build("rows_cta", n, dtype, reduction, True, monkeypatch)
        assert grid_of(on, 3) == 3
        got, _, ws = run(on, x, ignored, dtype, workspace_fill=3)
        assert check(values(got, dtype)[0]) and (ws == 3).all()
    target = np.array([4, IGNORE, 9], np.int64)
    off = build("rows_cta", n, dtype, "mean", False, monkeypatch)
    on = build("rows_cta", n, dtype, "mean", True, monkeypatch)
    m = len(target)  # (launched without a cluster, as a caller's explicit cluster=: %cluster_nctarank 1, the default's tail)
    ws = np.zeros(kernel_of(on).attributes["bulkred.workspace"].value.data, np.int8)
    got = run_grid(on, "rows", to_bits(x, dtype), target, np.full(m, 7.0, np.float32), np.full(m, 7.0, np.float32),
                   to_bits(np.full(1, 7.0), dtype), ws)[4]
    assert not ws.any() and got.tobytes() == run(off, x, target, dtype)[0].tobytes()
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_MAX", 2)
    on = build("rows_cta", n, dtype, "mean", True, monkeypatch)
    assert [a.value.data for a in kernel_of(on).attributes[GRID_ROWS_ATTR].data][2] == 2
    got, loss, ws = run(on, x, target, dtype)
    assert not ws.any(), "the workspace is not left zeroed"
    assert got.tobytes() == run(off, x, target, dtype)[0].tobytes()
    assert abs(values(got, dtype)[0] - want(loss, target, "mean")) <= 1e-6 * np.abs(loss).sum()


def test_the_launch_rule_and_the_kernel(monkeypatch) -> None:
    """The launch layer launches a grid of 2 to 16 CTAs of this kernel as one cluster (an
    explicit cluster= as given; the signature's third entry through the compile cache's
    JSON); the kernel sends by st.async through mapa, waits on an mbarrier, and the default
    kernel has none of it (its bulkred.grid_rows two entries)."""
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module

    monkeypatch.setenv("BULKRED_CACHE", "0")  # (the compile cache keys the module's text, not the setting)
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER", True)
    k = compile_tile_module(module("cross_entropy", None, 4096, "float32", reduction="mean"), None).kernel("rows")
    sig = k.signature
    assert sig.grid_rows[2:] == (rows_lower.LOSS_TAIL_CLUSTER_MAX,)
    assert signature_from_json(signature_to_json(sig)) == sig
    assert rows_lower.LOSS_TAIL_CLUSTER_MAX == 16  # (measured: the non-portable size)
    assert [resolve_launch(sig, g, None, None).cluster[0] for g in (1, 2, 3, 8, 9, 16, 17, 64)] == [1, 2, 3, 8, 9, 16, 1, 1]
    assert resolve_launch(sig, 8, None, 1).cluster == (1, 1, 1)
    ptx = k.module.ptx
    for op in ("st.async", "mapa", "mbarrier.try_wait.parity", "barrier.cluster.arrive.relaxed", "fence.mbarrier_init"):
        assert op in ptx, op
    # None: the measured cells (LOSS_TAIL_CLUSTER_MEASURED: float32 and bfloat16 4096) take the
    # mbarrier form, an unmeasured N the default's tail
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER", None)
    for dtype in ("float32", "bfloat16", "float16"):
        sig = signature_of_func(kernel_of(lowered(module("cross_entropy", None, 4096, dtype, reduction="mean"))))
        assert sig.grid_rows[2:] == (16,), dtype
    built = lowered(module("cross_entropy", None, 1024, "float32", reduction="mean"))
    func = kernel_of(built)
    assert len(signature_of_func(func).grid_rows) == 2
    assert "st_async" not in str(built) and "mapa" not in str(built)
