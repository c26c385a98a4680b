"""cross_entropy's rows of odd N in 16-bit types on rows_cta (issue 30, section 4: bfloat16 and
float16 at N = 4097, 0.63 of copy), the candidates of ``tools/probes/rows_ce.py --set odd16``,
all off by default, on the interpreter: the row's maximum first
(``rows_common.EXP_MAX_FIRST``) and fewer threads a row, each holding more values
(``rows_cta.VALUES`` with ``rows_cta.MIN_BLOCK_MEASURED``), the rows read an element a load
(2-byte aligned: no vector), and the rows of a partial last vector pipelined
(``rows_common.FORWARD_PIPELINE_PARTIAL``: the unpipelined kernel's bits). Each against
float64 (from the values the kernel read), NaN / +inf / all -inf / ignored rows as torch, a
row's bits the same at another position in the batch and for another M, the mean in the
kernel; each table takes only its cell.

test_rows.py's small CTAs (``MIN_BLOCK`` 64): MIN_BLOCK_MEASURED's 32 threads here stand for
its 64 at 4097 (twice the values a thread of the default's CTA)."""

from __future__ import annotations

import numpy as np
import pytest
from test_rows import lowered, small_ctas  # noqa: F401 (small_ctas: autouse)
from test_rows_ce_reduction import IGNORE
from test_rows_ce_speed import assert_losses_moved, ragged_run

from bulkred_dialect.ops.tile.rows import NormalizeRowsOp
from bulkred_dialect.passes.variants import rows_common, rows_cta
from bulkred_dialect.passes.variants.rows_common import BF16, F16
from bulkred_dialect.row_kernels import module

def kernel(n: int, dtype: str):
    """cross_entropy's rows_cta kernel of rows of n logits (M dynamic), with the settings in force."""
    return lowered(module("cross_entropy", None, n, dtype, stats=("lse",), variant="rows_cta", ignore_index=IGNORE))


def block_of(n: int, dtype: str) -> int:
    op = next(o for o in module("cross_entropy", None, n, dtype).walk() if isinstance(o, NormalizeRowsOp))
    return rows_cta.block_for(op)


def ctas_of(n: int, dtype: str) -> int | None:
    """rows_cta's measured CTAs a multiprocessor of cross_entropy's cell (None: the default's)."""
    op = next(o for o in module("cross_entropy", None, n, dtype).walk() if isinstance(o, NormalizeRowsOp))
    return rows_common.cell_setting(None, rows_cta.CTAS_PER_SM_MEASURED, op)


def fewer_threads(monkeypatch, n: int, dtype: str) -> None:
    """32 threads a row of ``n`` (MIN_BLOCK_MEASURED), each up to 8 values (VALUES)."""
    key = ("cross_entropy", BF16.name if dtype == "bfloat16" else F16.name)
    monkeypatch.setattr(rows_cta, "MIN_BLOCK_MEASURED", {key: ((n, n, 32),)})
    monkeypatch.setattr(rows_cta, "VALUES", 8)


# (N, dtype, max first, fewer threads): odd N (each row's start at another 2-byte offset), both 16-bit types
CELLS = [(97, "bfloat16", True, False), (97, "bfloat16", True, True), (33, "float16", True, True),
         (97, "float16", False, True)]


@pytest.mark.parametrize("n,dtype,first,fewer", CELLS, ids=[f"{c[0]}-{c[1]}-first{c[2]}-fewer{c[3]}" for c in CELLS])
def test_odd16_candidates(n: int, dtype: str, first: bool, fewer: bool, monkeypatch) -> None:
    """7 rows of several magnitudes against float64 (a row of NaN, one with +inf, one of
    all -inf, an ignored one, a target at each end); then the same rows moved by one (each
    row's start at another offset in x) and a row alone (M = 1): the same bits."""
    if first:
        monkeypatch.setattr(rows_common, "EXP_MAX_FIRST", True)
    if fewer:
        fewer_threads(monkeypatch, n, dtype)
        assert block_of(n, dtype) == 32
    rng = np.random.default_rng(n + 16 * first + 32 * fewer)
    m = 7
    x = rng.standard_normal((m + 1, n)) * rng.uniform(0.5, 8, (m + 1, 1))
    x[1, n // 3] = np.nan
    x[2, n - 1] = np.inf
    x[4, :] = -np.inf
    x[6] += 40.0
    target = rng.integers(0, n, m + 1)
    target[0], target[3], target[5] = n - 1, IGNORE, 0
    built = kernel(n, dtype)
    if first:  # (the exps against the row's maximum: no (m, s) pairs' exps in the reductions)
        monkeypatch.setattr(rows_common, "EXP_MAX_FIRST", None)
        assert str(built).count("ptx.ex2") < str(kernel(n, dtype)).count("ptx.ex2")
    loss = assert_losses_moved("rows_cta", n, dtype, x, target, m, built)
    alone, _, _ = ragged_run("rows_cta", n, dtype, None, x[5:6], target[5:6], built=built)
    assert alone.tobytes() == loss[5:6].tobytes(), "a row's bits depend on M"


def test_the_measured_cell_and_the_table_takes_its_cell(monkeypatch) -> None:
    """4097's 16-bit rows_cta CTA is the probe's measured one (the eighth session, rows_ce.py
    --set odd16 on an H200): 128 threads of 33 values (rows_cta.VALUES_MEASURED), the maximum
    first, a grid of 8 CTAs a multiprocessor; 4096's and 4098's are not changed by it, and
    MIN_BLOCK_MEASURED (empty) is not in use. MIN_BLOCK_MEASURED's entry changes its own
    cell's kernel only (the CTA's threads), and float16 follows bfloat16's entry
    (half_as_bfloat16)."""
    assert not any(k[0] == "cross_entropy" for k in rows_cta.MIN_BLOCK_MEASURED)  # (add_rms_norm's 4096 only)
    for dtype in ("bfloat16", "float16"):
        assert rows_common.setting_of(rows_common.EXP_MAX_FIRST, rows_common.EXP_MAX_FIRST_MEASURED,
                                      dtype, 4097, "cross_entropy")
        assert not rows_common.setting_of(rows_common.EXP_MAX_FIRST, rows_common.EXP_MAX_FIRST_MEASURED,
                                          dtype, 4097, "softmax")
        assert ctas_of(4097, dtype) == 8 and ctas_of(4098, dtype) is None
        assert block_of(4097, dtype) == 128
    assert ctas_of(4097, "float32") is None
    assert block_of(4097, "float32") == 256
    before = {(n, d): block_of(n, d) for n, d in ((97, "bfloat16"), (99, "bfloat16"), (97, "float32"), (97, "float16"))}
    assert set(before.values()) == {64}
    monkeypatch.setattr(rows_cta, "MIN_BLOCK_MEASURED", rows_common.half_as_bfloat16(
        {**rows_cta.MIN_BLOCK_MEASURED, ("cross_entropy", BF16.name): ((97, 97, 32),)}))
    monkeypatch.setattr(rows_cta, "VALUES", 8)
    after = {key: block_of(*key) for key in before}
    assert after == {(97, "bfloat16"): 32, (99, "bfloat16"): 64, (97, "float32"): 64, (97, "float16"): 32}


# (N, dtype, max first, fewer threads, label smoothing): a partial last vector (odd N; 33 of float16 on 64 threads:
# one element a thread, the first thread two), with the candidates of the probe, label smoothing's sum of x
PIPE_CELLS = [(97, "bfloat16", False, False, 0.0), (97, "bfloat16", True, True, 0.0), (33, "float16", True, False, 0.0),
              (97, "bfloat16", False, False, 0.1)]


@pytest.mark.parametrize("n,dtype,first,fewer,smoothing", PIPE_CELLS,
                         ids=[f"{c[0]}-{c[1]}-first{c[2]}-fewer{c[3]}-ls{c[4]}" for c in PIPE_CELLS])
def test_pipelined_partial_has_the_default_bits(n: int, dtype: str, first: bool, fewer: bool, smoothing: float,
                                                monkeypatch) -> None:
    """FORWARD_PIPELINE_PARTIAL: the rows of a partial last vector pipelined (the next row's
    loads in the loop's carried values: another kernel), the bits of the same settings
    unpipelined for rows of NaN, +inf, all -inf, an ignored row and targets at both ends
    (the partial vector's -inf, and 0 in label smoothing's sum of x); moved by one row and
    alone (M = 1), the same bits."""
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", True)
    if first:
        monkeypatch.setattr(rows_common, "EXP_MAX_FIRST", True)
    if fewer:
        fewer_threads(monkeypatch, n, dtype)
    rng = np.random.default_rng(n + 3)
    m = 6
    x = rng.standard_normal((m + 1, n)) * 3
    x[1, n - 1] = np.nan
    x[2, 0] = np.inf
    x[3, :] = -np.inf
    x[5, n - 1] = 30.0  # (the maximum in the partial vector)
    target = rng.integers(0, n, m + 1)
    target[0], target[4], target[5] = n - 1, IGNORE, 0

    def run(xs: np.ndarray, ts: np.ndarray, built) -> np.ndarray:
        return ragged_run("rows_cta", n, dtype, None, xs, ts, smoothing=smoothing, built=built)[0]

    def build():
        return lowered(module("cross_entropy", None, n, dtype, stats=("lse",), variant="rows_cta", ignore_index=IGNORE,
                              label_smoothing=smoothing or None))

    unpiped = build()
    want = run(x[:m], target[:m], unpiped)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE_PARTIAL", True)
    built = build()
    assert str(built) != str(unpiped)
    loss = run(x[:m], target[:m], built)
    assert loss.tobytes() == want.tobytes(), (loss, want)
    assert np.isnan(loss[1]) and loss[4] == 0.0 and np.isfinite(loss[5])
    moved = run(np.concatenate([x[m:], x[:m]]), np.concatenate([target[m:], target[:m]]), built)
    assert moved[1:].tobytes() == loss.tobytes(), "a row's bits depend on its position"
    alone = run(x[5:6], target[5:6], built)
    assert alone.tobytes() == loss[5:6].tobytes(), "a row's bits depend on M"


def test_pipelined_partial_takes_only_its_rows(monkeypatch) -> None:
    """FORWARD_PIPELINE_PARTIAL pipelines cross_entropy's rows of a partial last vector only
    (softmax's odd rows, whose y the threads write under their conditions, stay unpipelined),
    only where FORWARD_PIPELINE is on; its table (none by default) takes its own cell."""
    from bulkred_dialect.ops.tile.rows import NormKind
    from bulkred_dialect.passes.variants.rows_common import RowPlan, forward_pipelined, pipelined_partial

    def plan(kind: NormKind, n: int, dtype=BF16) -> RowPlan:
        return RowPlan(kind=kind, dtype=dtype, m=None, n=n, sx=n, sy=n, vec=1, group=64, block=64, items=-(-n // 64),
                       unroll=1, ctas=1)

    ce, sm, whole = plan(NormKind.CROSS_ENTROPY, 97), plan(NormKind.SOFTMAX, 97), plan(NormKind.CROSS_ENTROPY, 128)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", True)
    assert rows_common.FORWARD_PIPELINE_PARTIAL_MEASURED == {}
    assert (forward_pipelined(ce), forward_pipelined(sm), forward_pipelined(whole)) == (False, False, True)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE_PARTIAL_MEASURED", rows_common.half_as_bfloat16({BF16.name: ((97, 97),)}))
    assert (forward_pipelined(ce), forward_pipelined(sm), pipelined_partial(plan(NormKind.CROSS_ENTROPY, 99))) == (True, False, False)
    assert forward_pipelined(plan(NormKind.CROSS_ENTROPY, 97, F16))
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", False)
    assert not forward_pipelined(ce)


def test_mean_in_the_kernel_with_the_candidates(monkeypatch) -> None:
    """The probe's kernels take the mean in the kernel (``reduction="mean"``): with a CTA of
    one warp (MIN_BLOCK_MEASURED), the maximum first and the rows pipelined, on a grid of 3
    CTAs (rows_cta.CTAS_PER_SM), the mean of the loss rows (the kept ones) and the loss rows
    the unpipelined kernel's bits; a second launch the same bits, the workspace left zeroed."""
    from test_rows_ce_reduction import run_reduced

    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)
    monkeypatch.setattr(rows_cta, "CTAS_PER_SM", 3)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", True)
    monkeypatch.setattr(rows_common, "EXP_MAX_FIRST", True)
    fewer_threads(monkeypatch, 97, "bfloat16")
    target = np.random.default_rng(5).integers(0, 97, 8)
    target[2] = IGNORE
    mean0, rows0, _, _ = run_reduced("rows_cta", 97, target, "mean", "bfloat16", seed=5)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE_PARTIAL", True)
    mean, rows, _, units = run_reduced("rows_cta", 97, target, "mean", "bfloat16", seed=5, again=True)
    assert units == 3 and rows.tobytes() == rows0.tobytes() and mean == mean0
    want = rows.sum() / (target != IGNORE).sum()
    assert abs(mean - want) <= 1e-2 * abs(want), (mean, want)  # (the mean rounded to bfloat16)
