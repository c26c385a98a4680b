"""cross_entropy's backward as one flat stream (rows_ce_flat.CE_FLAT, off by default): on the
CPU interpreter, dx against float64 (``(exp(x - lse) - s / N - (1 - s) [j == t]) *
grad[row]``; 0 on an ignored row, NaN where the target is outside [0, N) or the row's lse is
NaN), bit for bit the row kernel's (its formula, the default's and CE_FAST's), a row's bits
independent of its place in the batch and of M, and the setting off where nothing asks for it."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)

from bulkred_dialect.passes.variants import rows_backward, rows_ce_flat
from bulkred_dialect.row_kernels import module

IGNORED = -7


@pytest.fixture(autouse=True)
def small_stream(monkeypatch):
    """One warp a CTA, one vector a thread a step: chunks of 32 vectors (the loop over
    chunks, then the partial last one); CE_FAST and TARGET_APART off unless a test sets them."""
    monkeypatch.setattr(rows_ce_flat, "BLOCK", 32)
    monkeypatch.setattr(rows_ce_flat, "UNROLL", 1)
    monkeypatch.setattr(rows_ce_flat, "TARGET_APART", False)
    monkeypatch.setattr(rows_ce_flat, "FAST", False)
    monkeypatch.setattr(rows_backward, "CE_FAST", False)


def _inputs(m: int, n: int, dtype: str):
    """x (bits and values), lse (row 4's NaN), targets (row 0 anywhere, 1 ignored, 2 the last
    element, 3 outside [0, N), 4 ignored with a NaN lse, 5 the second, then anywhere), the
    loss's gradient."""
    rng = np.random.default_rng(n + m)
    xbits = test_rows.to_bits(rng.standard_normal((m, n)) * 3, dtype)
    xv = test_rows.values(xbits, dtype)
    mx = xv.max(1)
    lse = (mx + np.log(np.exp(xv - mx[:, None]).sum(1))).astype(np.float32)
    lse[4] = np.nan
    target = rng.integers(0, n, m).astype(np.int64)
    target[[1, 2, 3, 4, 5]] = [IGNORED, n - 1, n + 5, IGNORED, 1]
    dl = rng.standard_normal(m).astype(np.float32)
    return xbits, xv, lse, target, dl


def _run(n: int, dtype: str, flat: bool, smoothing: float, ins, monkeypatch, **settings):
    """dx of the rows of ``ins`` with CE_FLAT ``flat`` (and rows_ce_flat's ``settings``)."""
    monkeypatch.setattr(rows_ce_flat, "CE_FLAT", flat)
    for k, v in settings.items():
        monkeypatch.setattr(rows_ce_flat, k, v)
    xbits, _, lse, target, dl = ins
    built = test_rows.lowered(module("cross_entropy_backward", None, n, dtype, ignore_index=IGNORED,
                                     label_smoothing=smoothing or None))
    text = test_rows.ModuleText(built)
    _, dx, _, _, _ = test_rows.interpret(built, xbits, test_rows.to_bits(np.full(xbits.shape, 7.0), dtype),
                                         target, dl, lse)
    return dx, text


def _check(dx, ins, n: int, dtype: str, smoothing: float) -> None:
    got = test_rows.values(dx, dtype)
    _, xv, lse, target, dl = ins
    want = np.exp(xv - lse.astype(np.float64)[:, None]) - smoothing / n
    kept = [i for i in range(len(target)) if i not in (1, 3, 4)]
    for i in kept:
        want[i, target[i]] -= 1 - smoothing
    want *= dl.astype(np.float64)[:, None]
    tol = {"float32": 4e-6, "bfloat16": 8e-3}[dtype] * max(1.0, np.abs(want[kept]).max())
    np.testing.assert_allclose(got[kept], want[kept], rtol=0, atol=tol)
    assert (got[1] == 0).all() and not np.signbit(got[1]).any()
    assert np.isnan(got[[3, 4]]).all()


# (N, dtype, label smoothing, N / V not a power of two: a division, TARGET_APART, UNROLL); 19
# rows of 16-byte vectors: 8 a row (whole rows a chunk), 6 (a division), 64 and 128 (a row
# two or more chunks), 8 and 6 of 8 bfloat16; the loop over chunks, then the partial last one
CASES = [(32, "float32", 0.1, False, False, 2), (24, "float32", 0.0, True, True, 1), (256, "float32", 0.1, False, False, 1),
         (512, "float32", 0.0, False, True, 2), (64, "bfloat16", 0.0, False, True, 2), (48, "bfloat16", 0.1, True, False, 1)]


@pytest.mark.parametrize("n,dtype,smoothing,divides,apart,unroll", CASES)
def test_flat_against_float64_and_the_row_kernel(n: int, dtype: str, smoothing: float, divides: bool, apart: bool,
                                                 unroll: int, monkeypatch) -> None:
    """The flat stream within float64's tolerance, its ignored and non-finite rows as the
    row kernel's, and every bit the row kernel's (the same operations an element)."""
    ins = _inputs(19, n, dtype)
    flat, text = _run(n, dtype, True, smoothing, ins, monkeypatch, TARGET_APART=apart, UNROLL=unroll)
    assert ("ptx.div" in text) == divides
    _check(flat, ins, n, dtype, smoothing)
    rows, _ = _run(n, dtype, False, smoothing, ins, monkeypatch)
    assert flat.tobytes() == rows.tobytes()


def test_fast_form_is_ce_fasts(monkeypatch) -> None:
    """With rows_backward.CE_FAST on, the flat stream takes its ``fma(p, s, c)`` (ex2.approx.ftz):
    within float64's tolerance and bit for bit the row kernel's with CE_FAST; so does it with
    its own rows_ce_flat.FAST, CE_FAST off."""
    monkeypatch.setattr(rows_backward, "CE_FAST", True)
    ins = _inputs(7, 48, "bfloat16")
    flat, text = _run(48, "bfloat16", True, 0.1, ins, monkeypatch)
    assert "ftz" in text
    _check(flat, ins, 48, "bfloat16", 0.1)
    rows, _ = _run(48, "bfloat16", False, 0.1, ins, monkeypatch)
    assert flat.tobytes() == rows.tobytes()
    apart, _ = _run(48, "bfloat16", True, 0.1, ins, monkeypatch, TARGET_APART=True)
    assert apart.tobytes() == rows.tobytes()
    monkeypatch.setattr(rows_backward, "CE_FAST", False)  # the flat stream's own switch: the same form
    own, text = _run(48, "bfloat16", True, 0.1, ins, monkeypatch, FAST=True)
    assert own.tobytes() == rows.tobytes() and "ftz" in text


def test_bits_independent_of_m_and_place(monkeypatch) -> None:
    """Rows 2 to 8 of 9 called alone (M = 7, each row two places earlier) on a grid of one CTA
    a chunk (CTAS_PER_SM 0: 2 CTAs), and unrolled by 2: the same bits as in the batch of 9
    on one looping CTA."""
    n, dtype = 24, "float32"
    ins = _inputs(9, n, dtype)
    whole, _ = _run(n, dtype, True, 0.1, ins, monkeypatch)
    part = tuple(a[2:] if a.ndim else a for a in ins)
    sub, text = _run(n, dtype, True, 0.1, part, monkeypatch, CTAS_PER_SM=0, UNROLL=2)
    assert sub.tobytes() == whole[2:].tobytes()
    assert "ptx.div" in text


def test_on_only_where_measured(monkeypatch) -> None:
    """CE_FLAT None and its table the H200's measured cells only (the eighth session:
    bfloat16 1024 and 4096, float32 4096; float16 as bfloat16): no other cell takes the
    stream; CE_FLAT True makes every cell take it; a row stride other than N (x[:, :n] of a
    wider tensor) never does."""
    from types import SimpleNamespace

    from bulkred_dialect.ops.tile.rows import NormKind
    from bulkred_dialect.passes.variants.rows_common import BF16, F16, F32

    monkeypatch.undo()
    assert rows_ce_flat.CE_FLAT is None
    measured = {(F32.name, 4096), (BF16.name, 1024), (BF16.name, 4096), (F16.name, 1024), (F16.name, 4096)}
    assert rows_ce_flat.FAST is None and rows_ce_flat.TARGET_APART is None
    op = SimpleNamespace(y=object())
    for d in (F32, BF16, F16):
        for n in (1024, 4096, 16384, 65536, 262144):
            vec = 16 // d.bytes
            p = SimpleNamespace(kind=NormKind.CROSS_ENTROPY_BACKWARD, dtype=d, n=n, vec=vec, sx=n, sy=n)
            assert rows_ce_flat.takes(p, op) == ((d.name, n) in measured), (d.name, n)
            monkeypatch.setattr(rows_ce_flat, "CE_FLAT", True)
            assert rows_ce_flat.takes(p, op)
            assert not rows_ce_flat.takes(SimpleNamespace(**{**vars(p), "sx": n + vec}), op)
            monkeypatch.setattr(rows_ce_flat, "CE_FLAT", None)
