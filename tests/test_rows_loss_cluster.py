"""cross_entropy's mean and sum through a thread-block cluster (rows_lower.LOSS_TAIL_CLUSTER,
off by default): a grid of 2 to LOSS_TAIL_CLUSTER_MAX CTAs launched as one cluster sends
its CTAs' (loss sum, kept rows) pairs into the leader's shared memory (st.async, an
mbarrier's transaction count), no workspace, fence or ticket. On the interpreter
(run_cluster_grid gives such a grid the whole grid's cluster, as the launch layer does)
against float64: M = 1, 3 and 8 (small N standing in for 4096), ignored rows, every row
ignored (the mean NaN, 0 / 0 as torch); the bits of ``reduced`` equal to the default
tail's at every M (the same slots in the same lanes); a grid past the largest cluster takes
the default's tail; the launch layer's rule; the default kernel unchanged. LOSS_TAIL_CLUSTER_FOLD
(off): a grid of MAX + 1 to FOLD x MAX CTAs folded into one cluster of MAX, each CTA's rows
summed in row order (the bits of that order, exactly); LOSS_TAIL_CLUSTER_LATE (off): the
cluster's start after the first row's loads.

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


@pytest.mark.parametrize("barrier", [False, True], ids=["mbarrier", "barrier"])
@pytest.mark.parametrize("variant,n,dtype", CASES, ids=[c[0] for c in CASES])
def test_cluster_tail_against_float64_and_the_default_bits(variant: str, n: int, dtype: str, barrier: bool,
                                                           monkeypatch) -> None:
    """M = 1, 3 and 8, ignored rows, both forms (st.async on the leader's mbarrier;
    LOSS_TAIL_CLUSTER_BARRIER's stores and cluster barrier): the cluster tail's mean and sum
    near float64 of the kernel's own loss rows, bit for bit the default tail's; where the
    grid is one cluster (2 to 8 CTAs) it leaves the workspace as it found it, even filled
    with garbage (it never reads it: the default's ticket would); the loss rows the same in
    every batch."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_BARRIER", barrier)
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
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_BARRIER", True)
    ptx = compile_tile_module(module("cross_entropy", None, 4096, "float32", reduction="mean"), None).kernel("rows").module.ptx
    for op in ("st.shared::cluster.v2.f32", "mapa", "fence.acq_rel.cluster", "barrier.cluster.arrive.relaxed",
               "barrier.cluster.wait.acquire"):
        assert op in ptx, op
    assert "mbarrier" not in ptx and "st.async" not in ptx
    # None: the measured cells (LOSS_TAIL_CLUSTER_MEASURED: float32 and bfloat16 4096) take the
    # mbarrier form, an unmeasured N the default's tail
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER", None)
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_BARRIER", False)
    for dtype in ("float32", "bfloat16", "float16"):
        sig = signature_of_func(kernel_of(lowered(module("cross_entropy", None, 4096, dtype, reduction="mean"))))
        assert sig.grid_rows[2:] == (16,), dtype
    built = lowered(module("cross_entropy", None, 1024, "float32", reduction="mean"))
    func = kernel_of(built)
    assert len(signature_of_func(func).grid_rows) == 2
    assert "st_async" not in str(built) and "mapa" not in str(built)


def butterfly_sum(pairs: np.ndarray) -> np.ndarray:
    """The leader's warp 0 over the CTAs' float32 pairs (a row a CTA): lane u ``0 + pair u``
    (0 past the grid), then the butterfly of lane masks 16, 8, 4, 2, 1; lane 0's pair."""
    lanes = np.zeros((32, 2), np.float32)
    lanes[:len(pairs)] = np.float32(0) + pairs.astype(np.float32)
    for mask in (16, 8, 4, 2, 1):
        lanes = lanes + lanes[np.arange(32) ^ mask]
    return lanes[0]


def folded_pairs(loss: np.ndarray, target: np.ndarray, ctas: int) -> np.ndarray:
    """Each CTA's (loss sum, kept rows) in LOSS_TAIL_CLUSTER_FOLD's order: thread 0 adds its
    rows u, u + ctas, ... in turn to 0, in float32."""
    out = np.zeros((ctas, 2), np.float32)
    for row, (v, t) in enumerate(zip(loss.astype(np.float32), target)):
        out[row % ctas] += np.array([v, np.float32(t != IGNORE)], np.float32)
    return out


@pytest.mark.parametrize("ahead", [True, False], ids=["ahead", "plain"])
def test_fold_into_one_cluster(ahead: bool, monkeypatch) -> None:
    """LOSS_TAIL_CLUSTER_FOLD (off by default): with clusters of at most 2 CTAs and a fold of
    4 (rows_cta, its rows loaded a row ahead, LOSS_TAIL_CLUSTER_LATE's start after the first
    row's loads), M = 3 to 8 runs on 2 CTAs, one cluster, each CTA's rows summed by its thread
    0 in row order: the sum's bits exactly that order (float32, the leader's butterfly), the
    mean that sum over the kept count; near float64; the workspace never touched; M = 2
    (a row a CTA) the default tail's bits, M = 9 (past the fold) the default tail itself; every
    row ignored: NaN and 0. The loss rows the same as the default kernel's in every batch. The
    rows loop without a row ahead (float32 4096's; the late start then as the default's): the
    sum at M = 5 alone."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", ahead)
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_MAX", 2)
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_LATE", True)
    n, dtype = 256, "float32"
    rng = np.random.default_rng(7)
    x = rng.standard_normal((9, n)) * 3
    target = rng.integers(0, n, 9)
    target[[1, 6]] = IGNORE
    # rows 0 and 2 lose about 1.9e-5 each, row 4 700 (a float32 ulp of 6.1e-5): 700 + l0 + l2
    # is one ulp more than 700 where the tiny losses meet first (the fold's CTA 0: rows 0, 2, 4),
    # 700 where each meets 700 alone (the default's butterfly at M = 5 and 8: (l0 + l4) + l2)
    x[[0, 2, 4]] = 0.0
    x[[0, 2], target[[0, 2]]] = 16.4
    x[4, (target[4] + 1) % n] = 700.0
    ref = rows_reference(x, target)
    batches = {"sum": (2, 5, 9), "mean": (8,)} if ahead else {"sum": (5,)}
    for reduction in batches:
        other = 0  # (folded batches whose bits differ from the default tail's: the order is tested)
        monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_FOLD", 1)
        off = build("rows_cta", n, dtype, reduction, False, monkeypatch)
        monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_FOLD", 4)
        on = build("rows_cta", n, dtype, reduction, True, monkeypatch)
        assert [a.value.data for a in kernel_of(on).attributes[GRID_ROWS_ATTR].data][2:] == [2, 4]
        sig = signature_of_func(kernel_of(on))
        assert [sig.grid_for([m]) for m in (1, 2, 3, 8, 9)] == [1, 2, 2, 2, 9]
        assert [resolve_launch(sig, sig.grid_for([m]), None, None).cluster[0] for m in (1, 2, 3, 8, 9)] == [1, 2, 2, 2, 1]
        for m in batches[reduction]:
            folded = 2 <= m <= 8
            got, loss, ws = run(on, x[:m], target[:m], dtype, workspace_fill=5 if folded else 0)
            base, base_loss, _ = run(off, x[:m], target[:m], dtype)
            assert (ws == (5 if folded else 0)).all(), (reduction, m, "the workspace")
            np.testing.assert_array_equal(loss, base_loss)
            np.testing.assert_allclose(loss, ref[:m], rtol=0, atol=4e-6 * max(1.0, np.abs(ref).max()))
            v = values(got, dtype)[0]
            w = want(loss, target[:m], reduction)
            assert abs(v - w) <= 1e-6 * np.abs(loss).sum(), (reduction, m, v, w)
            if not 2 < m <= 8:  # (a row a CTA, or past the fold: the default's bits)
                assert got.tobytes() == base.tobytes(), (reduction, m, got, base)
                continue
            s, count = butterfly_sum(folded_pairs(loss, target[:m], 2))
            exact = s if reduction == "sum" else s / count
            assert got.tobytes() == np.float32(exact).tobytes(), (reduction, m, v, exact)
            other += got.tobytes() != base.tobytes()
        assert other, "the data does not tell the fold's order from the default's"
        if not ahead:
            continue
        got, _, ws = run(on, x[:8], np.full(8, IGNORE, np.int64), dtype, workspace_fill=5)  # every row ignored
        v = values(got, dtype)[0]
        assert (np.isnan(v) if reduction == "mean" else v == 0.0) and (ws == 5).all(), (reduction, v)


def test_fold_and_late_start_in_the_kernel(monkeypatch) -> None:
    """The 4096 kernel with LOSS_TAIL_CLUSTER_FOLD = 4: bulkred.grid_rows' fourth entry, the
    launch's grid of 16 CTAs as one cluster at M = 17 to 64 (the signature's grid_for, through
    the compile cache's JSON), M = 65 the default's grid; LOSS_TAIL_CLUSTER_LATE moves the
    cluster's start after the first row's loads (the rows loaded a row ahead), not before."""
    import re

    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER", True)
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_FOLD", 4)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", True)
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 132)  # (the H200's: a grid of up to 132 x k)
    for late in (False, True):
        monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_LATE", late)
        built = lowered(module("cross_entropy", None, 4096, "float32", reduction="mean"))
        sig = signature_of_func(kernel_of(built))
        assert sig.grid_rows[2:] == (16, 4) and signature_from_json(signature_to_json(sig)) == sig
        grids = [sig.grid_for([m]) for m in (1, 16, 17, 40, 64, 65)]
        assert grids == [1, 16, 16, 16, 16, 65], grids
        assert [resolve_launch(sig, g, None, None).cluster[0] for g in grids] == [1, 16, 16, 16, 16, 1]
        ops = [o for o in re.findall(r'"?ptx\.([a-z_.]+)', str(built)) if o.startswith(("ld", "mbarrier.init"))]
        assert (ops.index("mbarrier.init") > ops.index("ld.vec")) == late, (late, ops[:4])
    # None: the tables decide (a fold of 4 for float32 4096 here; none where they have no entry)
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_FOLD", None)
    monkeypatch.setattr(rows_lower, "LOSS_TAIL_CLUSTER_FOLD_MEASURED", {"float32": ((4096, 4096, 4),)})
    for dtype, entries in (("float32", (16, 4)), ("bfloat16", (16,))):
        sig = signature_of_func(kernel_of(lowered(module("cross_entropy", None, 4096, dtype, reduction="mean"))))
        assert sig.grid_rows[2:] == entries, dtype
