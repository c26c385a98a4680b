"""cross_entropy's ``reduction`` in the row kernel itself (``reduced``: the loss rows'
sum, or their mean over the rows not ignored), on the interpreter against numpy in
float64: every forward variant, 16-bit and float32 rows, ignored rows, every row ignored
(the mean is NaN, as torch), M = 1 and M not a multiple of the units, the last CTA's
loop over several steps; the result's bits with the grid forced different; the
workspace (the ticket counter) left zeroed for the next launch.

Small settings keep the interpreter fast (test_rows.py's: CTAs of one or two warps)."""

from __future__ import annotations

import numpy as np
import pytest
from test_rows import interpret, lowered, small_ctas, to_bits, values  # noqa: F401 (small_ctas: autouse)
from test_rows_forward_bulk import small_bulk

from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.ops.kernel_attrs import GRID_ROWS_ATTR
from bulkred_dialect.passes.variants import rows_common, rows_lower
from bulkred_dialect.row_kernels import module

IGNORE = -7


@pytest.fixture(autouse=True)
def bulk_small(monkeypatch):
    """rows_bulk as test_rows_forward_bulk.py sets it (slices of 512 bytes, CTAs of one
    warp, chosen for every N)."""
    small_bulk(monkeypatch)


def run_reduced(variant: str, n: int, target: np.ndarray, reduction: str, dtype: str = "float32", *, seed: int = 0,
                smoothing: float = 0.0, x: np.ndarray | None = None,
                again: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The kernel of a dynamic M on rows of ``n`` (random, or ``x``) with these targets:
    (reduced's value as float64, the loss rows, the rows' values as the kernel read them,
    the launch's units). Checks that the workspace is left zeroed; ``again``: that a second
    launch of the same kernel on the same workspace gives the same bits of ``reduced``."""
    m = len(target)
    if x is None:
        x = np.random.default_rng(seed).standard_normal((m, n)) * 3
    xbits = to_bits(x, dtype)
    built = lowered(module("cross_entropy", None, n, dtype, stats=("lse",), variant=variant, ignore_index=IGNORE,
                           label_smoothing=smoothing or None, reduction=reduction))
    kernel = next(o for o in built.walk() if o.name == "func.func")
    ws = np.full(kernel.attributes["bulkred.workspace"].value.data, 0, np.int8)
    out = to_bits(np.full(1, 7.0), dtype)
    run = (lambda m, *a: run_cluster_grid(m, "rows", *a)) if variant == "rows_bulk" else interpret
    got = run(built, xbits, target.astype(np.int64), np.full(m, 7.0, np.float32), np.full(m, 7.0, np.float32), out, ws)
    assert not ws.any(), "the workspace is not left zeroed"
    if again:
        second = to_bits(np.full(1, 7.0), dtype)
        run(built, xbits, target.astype(np.int64), np.full(m, 7.0, np.float32), np.full(m, 7.0, np.float32), second, ws)
        assert second.tobytes() == got[4].tobytes(), "a second launch gives other bits"
        assert not ws.any(), "the workspace is not left zeroed"
    units = kernel.attributes[GRID_ROWS_ATTR].data[1].value.data
    return values(got[4], dtype)[0], got[2].astype(np.float64), values(xbits, dtype), units


def want(loss: np.ndarray, target: np.ndarray, reduction: str) -> float:
    with np.errstate(invalid="ignore"):
        s = loss.sum()
        return s if reduction == "sum" else s / (target != IGNORE).sum()


def rounding(dtype: str) -> float:
    return {"float32": 1e-6, "bfloat16": 8e-3, "float16": 1e-3}[dtype]


# (variant, N, dtype): each forward variant (test_rows.py's small CTAs: rows_warp 2 warps,
# rows_cta 2 warps, rows_stream 1, rows_cluster 2 CTAs of 1 warp, rows_bulk 1 warp)
VARIANTS = [("rows_warp", 68, "float32"), ("rows_cta", 300, "bfloat16"), ("rows_stream", 4 * (2 * 32 + 11) + 1, "float32"),
            ("rows_cluster", 132, "float32"), ("rows_bulk", 256, "bfloat16")]


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("variant,n,dtype", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_reduced_against_numpy(variant: str, n: int, dtype: str, reduction: str, monkeypatch) -> None:
    """7 rows, two ignored, on several units (an SM count of 1: rows_warp's 4 CTAs of 2
    warps hold 8 rows), every unit taking a ticket: the kernel's own loss rows against float64 from the values it read, and
    ``reduced`` = their sum or mean, rounded once to x's dtype."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)
    target = np.array([3, IGNORE, n - 1, 0, IGNORE, 5, 1], np.int64)
    got, loss, xv, units = run_reduced(variant, n, target, reduction, dtype, seed=n)
    assert units > 1  # (the grid's cap: 7 rows launch 4 CTAs of 2 warps in rows_warp, 7 units in the others)
    mx = xv.max(1)
    lse = mx + np.log(np.exp(xv - mx[:, None]).sum(1))
    kept = target != IGNORE
    ref = np.where(kept, lse - xv[np.arange(7), np.where(kept, target, 0)], 0.0)
    np.testing.assert_allclose(loss, ref, rtol=0, atol=4e-6 * max(1.0, np.abs(ref).max()))
    w = want(ref, target, reduction)
    assert abs(got - w) <= rounding(dtype) * abs(w) + 1e-5 * np.abs(ref).sum(), (got, w)


@pytest.mark.parametrize("variant", ["rows_warp", "rows_cluster", "rows_bulk"])
def test_every_row_ignored(variant: str) -> None:
    """Every target ignore_index: the mean is NaN (0 / 0, torch's), the sum 0."""
    target = np.full(3, IGNORE, np.int64)
    n = {"rows_warp": 40, "rows_cluster": 132, "rows_bulk": 256}[variant]
    assert np.isnan(run_reduced(variant, n, target, "mean")[0])
    assert run_reduced(variant, n, target, "sum")[0] == 0.0


def test_one_row_and_label_smoothing() -> None:
    """M = 1 (a 1-D input's call): the mean is the row's loss itself, smoothed."""
    got, loss, xv, _ = run_reduced("rows_cta", 300, np.array([17]), "mean", smoothing=0.1)
    x = xv[0]
    mx = x.max()
    ref = mx + np.log(np.exp(x - mx).sum()) - 0.9 * x[17] - 0.1 * x.mean()
    assert got == np.float32(loss[0])
    assert abs(got - ref) <= 4e-6 * max(1.0, abs(ref))


def test_the_grid_does_not_enter_the_bits(monkeypatch) -> None:
    """The same 70 rows on 1 CTA and on 3 (the SM count forced), with the last CTA's loop
    over several steps (rows_stream: 1 load a step, 32 threads: 32 rows a step, the third
    partial), and with the default loads a step: the same loss rows and the same bits of
    ``reduced``, sum and mean, where the last CTA reads every row (rows_lower.LOSS_PARTIALS
    off; on, its default, the CTAs' partials make the bits a function of the grid too:
    test_rows_norms_forward.test_loss_partials)."""
    monkeypatch.setattr(rows_lower, "LOSS_PARTIALS", False)
    rng = np.random.default_rng(5)
    n, m = 33, 70
    x = rng.standard_normal((m, n)) * 4
    target = rng.integers(0, n, m)
    target[rng.random(m) < 0.2] = IGNORE
    for reduction in ("sum", "mean"):
        got = []
        # LOSS_LOADS (the last CTA's loads a step) on the mean alone: its loop adds the
        # kept rows' count beside the sum, the whole of the sum's loop
        for sms, loads in ((0, 2), (3, 2), (3, 8))[: 3 if reduction == "mean" else 2]:
            monkeypatch.setattr(rows_common, "sm_count", lambda target, sms=sms: sms)
            monkeypatch.setattr(rows_lower, "LOSS_LOADS", loads)
            got.append(run_reduced("rows_stream", n, target, reduction, x=x))
        (a, la, _, ua), (b, lb, _, ub) = got[:2]
        if reduction == "mean":
            c = got[2][0]
            assert np.float32(b).tobytes() == np.float32(c).tobytes(), (b, c)
        assert ua != ub, (ua, ub)
        np.testing.assert_array_equal(la, lb)
        assert np.float32(a).tobytes() == np.float32(b).tobytes(), (a, b)
        w = want(la, target, reduction)
        assert abs(a - w) <= 1e-6 * np.abs(la).sum(), (a, w)


def test_reduced_refusals_are_one_line() -> None:
    """The op's rules for ``reduction`` reach row_kernels.module's caller in one line."""
    from bulkred_dialect.errors import BulkredError

    with pytest.raises(BulkredError, match="'reduction' must be \"mean\" or \"sum\", got 'none'") as info:
        module("cross_entropy", 4, 64, "float32", reduction="none")
    assert "\n" not in str(info.value)
    with pytest.raises(BulkredError, match="'reduction' is only valid with kind cross_entropy, got kind softmax"):
        module("softmax", 4, 64, "float32", reduction="sum")
    with pytest.raises(BulkredError, match="'reduction' of T.normalize_rows must be \"mean\" or \"sum\" \\(a string\\), "
                       "got int 3"):
        module("cross_entropy", 4, 64, "float32", reduction=3)  # type: ignore[arg-type]


def test_the_module_text() -> None:
    """``reduced`` is the last parameter, of x's type; the op prints its reduction (the
    lit tests parse it back: tests/filecheck/ops/tile/normalize_rows.mlir)."""
    text = str(module("cross_entropy", None, 64, "bfloat16", stats=("lse",), reduction="mean"))
    assert "%lse: memref<?xf32, #bulkred.scope<global>>, %reduced: memref<1xbf16, #bulkred.scope<global>>)" in text
    assert 'reduction "mean" reduced %reduced : memref<1xbf16, #bulkred.scope<global>>' in text
