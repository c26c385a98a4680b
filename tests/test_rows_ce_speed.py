"""cross_entropy's forward settings for speed (issue 30, section 4; all off by default,
measured by tools/probes/rows_ce.py), on the interpreter:

* ``rows_lower.LOSS_TAIL_SHORT`` (the mean / sum in the kernel for small batches): the
  same bits as the default's tail in each of its paths (one CTA; several, each with at
  most one row; several with more), the workspace left zeroed;
* ``rows_lower.RAGGED`` (vector loads of rows whose start is not on a vector's boundary:
  odd N, odd row strides): the losses against float64, the bits of a row the same at every
  position in the batch (its alignment) and for every M, NaN / inf rows, ignore_index;
* ``rows_lower.RAGGED_SPLIT`` (a branch a row offset): RAGGED's bits; ``rows_lower.STEP_EXPS``
  (rows_stream's (max, sum) a loop step at a time): float64, position and M;
  ``rows_stream.MIN_CTAS``; the settings' measured tables.

Small settings keep the interpreter fast (test_rows.py's: CTAs of one or two warps)."""

from __future__ import annotations

import numpy as np
import pytest
from test_rows import ModuleText, interpret, lowered, small_ctas, to_bits, values  # noqa: F401 (small_ctas: autouse)
from test_rows_ce_reduction import IGNORE, run_reduced

from bulkred_dialect.passes.variants import rows_bulk, rows_common, rows_cta, rows_lower
from bulkred_dialect.row_kernels import module

# region LOSS_TAIL_SHORT

# (variant, N, dtype, SM count, M, reduction, rows_cta.CTAS_PER_SM): the tail's paths: one CTA
# (its pair alone, with and without the CTA's tree), several CTAs of one row each (no tree),
# several with more
TAILS = [
    ("rows_cta", 300, "bfloat16", 1, 1, "mean", None), ("rows_cta", 300, "bfloat16", 0, 5, "sum", None),
    ("rows_cta", 300, "bfloat16", 1, 6, "mean", None), ("rows_cta", 130, "float32", 1, 24, "mean", 2),
    ("rows_warp", 68, "float32", 1, 9, "mean", None), ("rows_warp", 68, "float32", 0, 3, "sum", None),
    ("rows_stream", 33, "float32", 1, 4, "mean", None), ("rows_cluster", 132, "float32", 1, 3, "mean", None),
    ("rows_bulk", 256, "bfloat16", 1, 3, "mean", None), ("rows_bulk", 256, "float32", 0, 2, "sum", None),
]


@pytest.mark.parametrize("variant,n,dtype,sms,m,reduction,ctas", TAILS,
                         ids=[f"{t[0]}-{t[4]}rows-{t[3]}sm-{t[5]}" for t in TAILS])
def test_short_tail_has_the_default_bits(variant: str, n: int, dtype: str, sms: int, m: int, reduction: str,
                                         ctas: int | None, monkeypatch) -> None:
    """The reduced mean or sum, and the loss rows, with LOSS_TAIL_SHORT on and off: the
    same bits (and near the float64 sum of the loss rows)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: sms)
    monkeypatch.setattr(rows_cta, "CTAS_PER_SM", ctas)
    if variant == "rows_bulk":  # (test_rows_ce_reduction.bulk_small's settings)
        for name, v in (("SLICE_BYTES", 512), ("CHUNK", 128), ("BLOCK", 32), ("MIN_BLOCK", 32), ("PERSISTENT", None),
                        ("BUFFERS", 2), ("CHOSEN", [(d, None, 1, 1 << 30, None) for d in ("float32", "bfloat16")])):
            monkeypatch.setattr(rows_bulk, name, v)
    rng = np.random.default_rng(m * 7 + n)
    target = rng.integers(0, n, m)
    target[1::3] = IGNORE
    x = rng.standard_normal((m, n)) * rng.uniform(0.5, 20, (m, 1))  # (losses of many magnitudes: orders differ in bits)
    got = []
    for short in (False, True):
        monkeypatch.setattr(rows_lower, "LOSS_TAIL_SHORT", short)
        got.append(run_reduced(variant, n, target, reduction, dtype, x=x))  # (checks the workspace is zeroed)
    (a, la, _, ua), (b, lb, _, ub) = got
    assert ua == ub, (ua, ub)
    np.testing.assert_array_equal(la, lb)
    assert np.float64(a).tobytes() == np.float64(b).tobytes(), (reduction, a, b)
    kept = target != IGNORE
    w = la.sum() / kept.sum() if reduction == "mean" else la.sum()
    assert abs(b - w) <= 1e-2 * abs(w) + 1e-5 * np.abs(la).sum(), (b, w)


def test_short_tail_changes_the_kernel() -> None:
    """On, the one-CTA path and thread 0's ticket are in the kernel (not the default's)."""
    texts = {}
    old = rows_lower.LOSS_TAIL_SHORT
    for short in (False, True):
        rows_lower.LOSS_TAIL_SHORT = short
        try:
            texts[short] = str(lowered(module("cross_entropy", None, 300, "bfloat16", variant="rows_cta",
                                              reduction="mean")))
        finally:
            rows_lower.LOSS_TAIL_SHORT = old
    assert texts[False] != texts[True]
    assert texts[False].count("ptx.fence") > texts[True].count("ptx.fence") - 1


# endregion

# region RAGGED

# (variant, N, dtype, x's row stride or None): odd N in each variant RAGGED takes (test_rows.py's
# small CTAs), a padded row of an odd stride, N below one vector; both vector forms (bfloat16's
# funnel of words; float32's and float16's choice of values)
RAGGED_CELLS = [
    ("rows_warp", 37, "bfloat16", None), ("rows_warp", 66, "float32", 67), ("rows_warp", 5, "float16", None),
    ("rows_cta", 301, "bfloat16", None), ("rows_cta", 257, "float16", None), ("rows_cta", 299, "float32", 303),
    ("rows_stream", 4 * 75 + 3, "bfloat16", None), ("rows_stream", 4 * 41 + 1, "float32", None),
]


def ragged_kernel(variant: str, n: int, dtype: str, stride: int | None, on: bool | None = True,
                  smoothing: float = 0.0):
    """cross_entropy's kernel for rows of n logits (a row stride ``stride`` or n), lowered with
    RAGGED ``on`` (and the settings in force): one for all the batches a test runs on it."""
    old = rows_lower.RAGGED
    rows_lower.RAGGED = on
    try:
        return lowered(module("cross_entropy", None, n, dtype, x_stride=stride, stats=("lse",), variant=variant,
                              ignore_index=IGNORE, label_smoothing=smoothing or None))
    finally:
        rows_lower.RAGGED = old


def ragged_run(variant: str, n: int, dtype: str, stride: int | None, x: np.ndarray, target: np.ndarray,
               on: bool | None = True, smoothing: float = 0.0, built=None) -> tuple[np.ndarray, np.ndarray, str]:
    """(the loss rows, x's values as the kernel read them, the kernel's text: printed where read) of x's rows
    (``[M, stride or n]``; the first n of each row are the logits) on ``built``, else on
    :func:`ragged_kernel`'s kernel with RAGGED ``on``."""
    if built is None:
        built = ragged_kernel(variant, n, dtype, stride, on, smoothing)
    xbits = to_bits(x, dtype)
    m = len(target)
    got = interpret(built, xbits[:, :n] if stride else xbits, target.astype(np.int64), np.full(m, 7.0, np.float32), np.full(m, 7.0, np.float32))
    return got[2].astype(np.float64), values(xbits, dtype)[:, :n], ModuleText(built)


VEC_LOAD = "ptx.ld.vec"


def ce_reference(xv: np.ndarray, target: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        mx = xv.max(1)
        lse = mx + np.log(np.exp(xv - mx[:, None]).sum(1))
        kept = target != IGNORE
        t = np.where(kept & (target >= 0) & (target < xv.shape[1]), target, 0)
        return np.where(kept, lse - xv[np.arange(len(t)), t], 0.0)


@pytest.mark.parametrize("variant,n,dtype,stride", RAGGED_CELLS, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}" for c in RAGGED_CELLS])
def test_ragged_rows(variant: str, n: int, dtype: str, stride: int | None) -> None:
    """9 rows (every start modulo the vector, twice) against float64 from the values the
    kernel read, a row of NaN, one with +inf, one of all -inf, an ignored row; then the same
    rows shifted by one (each row's start moved within the vector) and alone (M = 1): the same
    bits; the kernel reads x by vectors (not with RAGGED off)."""
    rng = np.random.default_rng(n)
    m, w = 9, stride or n
    x = rng.standard_normal((m + 1, w)) * 3
    x[2, n // 2] = np.nan
    x[4, n - 1] = np.inf
    x[6, :] = -np.inf
    target = rng.integers(0, n, m + 1)
    target[0], target[3], target[5] = n - 1, IGNORE, 0
    built = ragged_kernel(variant, n, dtype, stride)  # (one kernel, M dynamic: every batch below runs on it)
    loss, xv, text = ragged_run(variant, n, dtype, stride, x[:m], target[:m], built=built)
    ref = ce_reference(xv, target[:m])
    finite = np.isfinite(ref)
    np.testing.assert_allclose(loss[finite], ref[finite], rtol=0, atol=1e-5 * max(1.0, np.abs(ref[finite]).max()))
    np.testing.assert_array_equal(np.isnan(loss), np.isnan(ref))
    assert loss[3] == 0.0
    assert VEC_LOAD in text, "RAGGED reads by vectors"
    assert VEC_LOAD not in str(ragged_kernel(variant, n, dtype, stride, on=False))
    xs = np.concatenate([x[m:], x[:m]])  # row r of x at position r + 1
    ts = np.concatenate([target[m:], target[:m]])
    moved, _, _ = ragged_run(variant, n, dtype, stride, xs, ts, built=built)
    assert moved[1:].tobytes() == loss.tobytes(), "a row's bits depend on its position"
    for r in (5,):  # (its start 5 N mod 4 elements into a vector: 1 or 3 for odd N)
        alone, _, _ = ragged_run(variant, n, dtype, stride, x[r:r + 1], target[r:r + 1], built=built)
        assert alone.tobytes() == loss[r:r + 1].tobytes(), "a row's bits depend on M"


def test_ragged_not_with_label_smoothing_nor_aligned_rows() -> None:
    """RAGGED takes no row the default reads by vectors already, nor label smoothing's, nor
    one shorter than a vector."""
    from bulkred_dialect.ops.tile.rows import NormalizeRowsOp

    def vec(n: int, smoothing: float | None = None) -> int:
        built = module("cross_entropy", None, n, "bfloat16", label_smoothing=smoothing)
        op = next(o for o in built.walk() if isinstance(o, NormalizeRowsOp))
        return rows_lower.ragged_vector(op)

    old = rows_lower.RAGGED
    try:
        rows_lower.RAGGED = True
        assert (vec(4097), vec(4096), vec(4097, 0.1), vec(3)) == (4, 0, 0, 0)
        rows_lower.RAGGED = None  # (RAGGED_MEASURED: past rows_cta's rows, not at 4097)
        assert (vec(4097), vec(50257), vec(50257, 0.1)) == (0, 4, 0)
    finally:
        rows_lower.RAGGED = old


# endregion

# region RAGGED_SPLIT

# (variant, N, dtype, x's row stride or None): the variants of a row a CTA, the three element types (both
# forms of _fixed_funnel: bfloat16's halves of words, the others' values)
SPLIT_CELLS = [("rows_cta", 299, "float32", 303)]  # (bfloat16's words on rows_stream: test_step_exps)


@pytest.mark.parametrize("variant,n,dtype,stride", SPLIT_CELLS, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}" for c in SPLIT_CELLS])
def test_ragged_split_has_ragged_bits(variant: str, n: int, dtype: str, stride: int | None, monkeypatch) -> None:
    """RAGGED_SPLIT: the loss bits of RAGGED's one body (test_ragged_rows checks those
    against float64, and that they do not depend on a row's position) for rows at every
    offset (5 rows: each start modulo 4), a NaN, an +inf, an all -inf and an ignored row;
    the kernel's 4 branches (one an offset) have fewer selects than RAGGED's one body."""
    rng = np.random.default_rng(n + 1)
    m, w = 5, stride or n
    x = rng.standard_normal((m, w)) * 3
    x[2, n // 2], x[4, n - 1], x[1, :] = np.nan, np.inf, -np.inf
    target = rng.integers(0, n, m)
    target[0], target[3] = n - 1, IGNORE
    want, _, one = ragged_run(variant, n, dtype, stride, x[:m], target[:m])
    monkeypatch.setattr(rows_lower, "RAGGED_SPLIT", True)
    loss, _, text = ragged_run(variant, n, dtype, stride, x[:m], target[:m])
    assert loss.tobytes() == want.tobytes(), (loss, want)
    assert np.isnan(loss[2]) and loss[3] == 0.0
    assert text.count("ptx.selp") < 4 * one.count("ptx.selp"), "each of the 4 branches without the funnel's selects"


# endregion

# region STEP_EXPS

# (N, dtype, RAGGED and RAGGED_SPLIT): rows_stream's loop run (test_rows' one warp, two vectors a step) with
# vectors after it; odd N with RAGGED_SPLIT (bfloat16's words), an aligned row (the vocabularies')
STEP_CELLS = [(4 * 75 + 3, "bfloat16", True), (4 * 66, "float32", None)]


@pytest.mark.parametrize("n,dtype,ragged", STEP_CELLS, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in STEP_CELLS])
def test_step_exps(n: int, dtype: str, ragged: bool | None, monkeypatch) -> None:
    """STEP_EXPS on rows_stream (with RAGGED_SPLIT where RAGGED): the losses against float64
    (from the values the kernel read), NaN / +inf / all -inf / ignored rows as torch, the
    bits of each row the same moved by one (its offset in the vector changed, and M). (Its
    fewer ex2: test_measured_tables_turn_the_settings_on.)"""
    rng = np.random.default_rng(n + 2)
    m = 5
    x = rng.standard_normal((m + 1, n)) * 4
    x[1] += 60.0  # (a row whose maximum grows along the row: the rescale's path)
    x[1] += np.linspace(0, 30, n)
    x[2, n // 3], x[4, n - 1], x[5, :] = np.nan, np.inf, -np.inf
    target = rng.integers(0, n, m + 1)
    target[0], target[3] = n - 1, IGNORE
    monkeypatch.setattr(rows_lower, "STEP_EXPS", True)
    monkeypatch.setattr(rows_lower, "RAGGED_SPLIT", ragged)
    built = ragged_kernel("rows_stream", n, dtype, None, on=ragged)
    assert_losses_moved("rows_stream", n, dtype, x, target, m, built)


def assert_losses_moved(variant: str, n: int, dtype: str, x: np.ndarray, target: np.ndarray, m: int, built):
    """``built``'s losses of the first ``m`` rows of ``x`` against float64 (from the values
    the kernel read), NaN where the reference is, row 3 (ignored) 0, and each row's bits the
    same moved down by one (the rows of ``x`` rotated: another offset, another M). Returns
    the losses."""
    loss, xv, _ = ragged_run(variant, n, dtype, None, x[:m], target[:m], built=built)
    ref = ce_reference(xv, target[:m])
    finite = np.isfinite(ref)
    np.testing.assert_allclose(loss[finite], ref[finite], rtol=0, atol=2e-5 * max(1.0, np.abs(ref[finite]).max()))
    np.testing.assert_array_equal(np.isnan(loss), np.isnan(ref))
    assert loss[3] == 0.0
    xs, ts = np.concatenate([x[m:], x[:m]]), np.concatenate([target[m:], target[:m]])
    moved, _, _ = ragged_run(variant, n, dtype, None, xs, ts, built=built)
    assert moved[1:].tobytes() == loss.tobytes(), "a row's bits depend on its position"
    return loss


# endregion


def test_measured_tables_turn_the_settings_on(monkeypatch) -> None:
    """Each setting's None takes its table's cells (by element type and N), none by default:
    rows_lower.RAGGED_SPLIT_MEASURED (branches of the row's offset: more ex2 than RAGGED's
    one body), STEP_EXPS_MEASURED (fewer ex2 in rows_stream), rows_stream.MIN_CTAS_MEASURED (``.minnctapersm``), CTAS_PER_SM_MEASURED (the grid)."""
    from bulkred_dialect.ops.kernel_attrs import MIN_CTAS_ATTR
    from bulkred_dialect.passes.variants import rows_stream
    from bulkred_dialect.passes.variants.rows_common import BF16

    def text(variant: str, n: int) -> str:
        return str(lowered(module("cross_entropy", None, n, "bfloat16", variant=variant)))

    monkeypatch.setattr(rows_lower, "RAGGED", True)
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)  # (the grid: CTAs a multiprocessor)
    before = {"rows_stream": text("rows_stream", 301)}
    assert MIN_CTAS_ATTR not in before["rows_stream"]
    monkeypatch.setattr(rows_lower, "RAGGED_SPLIT_MEASURED", {BF16.name: ((301, 301),)})
    monkeypatch.setattr(rows_stream, "MIN_CTAS_MEASURED", {("cross_entropy", BF16.name): ((301, 301, 4),)})
    monkeypatch.setattr(rows_stream, "CTAS_PER_SM_MEASURED", {("cross_entropy", BF16.name): ((301, 301, 3),)})
    split = text("rows_stream", 301)
    assert split.count("ptx.ex2") > before["rows_stream"].count("ptx.ex2") and f"{MIN_CTAS_ATTR} = 4" in split
    assert "grid_rows = [1 : i64, 3 : i64]" in split and "grid_rows = [1 : i64, 3 : i64]" not in before["rows_stream"]
    monkeypatch.setattr(rows_lower, "RAGGED_SPLIT_MEASURED", {})
    monkeypatch.setattr(rows_lower, "STEP_EXPS_MEASURED", {BF16.name: ((301, 301),)})
    assert text("rows_stream", 301).count("ptx.ex2") < before["rows_stream"].count("ptx.ex2")
