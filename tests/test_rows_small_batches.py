"""Settings for small batches (issue 30, section 4: M = 1, 8 and 64 rows of 4096; off by
default, measured by tools/probes/rows_small.py), on the interpreter:

* ``rows_bulk.EARLY_COPY_CTA`` (a unit a row of one CTA, one slice buffer of one chunk:
  thread 0 issues the first row's copy right after the slice's mbarrier is set up, before
  the CTA barrier): y and the statistics against float64, the default's bits, batch
  invariance (a row's bits alone and inside a batch), the kernel changed only where it is on;
* ``rows_lower.LOSS_TAIL_POLL`` (cross_entropy's mean or sum in the kernel over a grid of
  2 to ``block`` CTAs: each CTA's pair published with one ``atom.exch.b64``, the ticket taken
  with no fence, the last CTA's reads polled; a larger grid the default's way): the default's
  bits of the reduction and of the rows, near the float64 sum of the rows, the workspace left
  zeroed (a second launch on it gives the same bits).

Small settings keep the interpreter fast: a slice of 512 bytes (float32 rows of 128), one
chunk, CTAs of one warp."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import check, run, small_ctas  # noqa: F401 (small_ctas: autouse)
from test_rows_ce_reduction import IGNORE, run_reduced

from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.passes.variants.rows_common import F32
from bulkred_dialect.passes.variants import rows_bulk, rows_common, rows_lower
from bulkred_dialect.row_kernels import module


@pytest.fixture(autouse=True)
def small(monkeypatch):
    """rows_bulk for float32 rows of 128: a unit (one CTA of one warp) a row, one slice
    buffer of one 512-byte chunk (float32 4096's shape: 16 KiB slices, one CHUNK); every
    CTA on the interpreter's clusters (its mbarrier and bulk copies)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 0)
    for name, v in (("SLICE_BYTES", 512), ("CHUNK", 512), ("BLOCK", 32), ("MIN_BLOCK", 32), ("PERSISTENT", False),
                    ("BUFFERS", 1), ("CHOSEN", [(d, None, 1, 1 << 30, None) for d in ("float32", "bfloat16")])):
        monkeypatch.setattr(rows_bulk, name, v)
    monkeypatch.setattr(test_rows, "interpret", lambda m, *args: run_cluster_grid(m, "rows", *args))


def _kernel_text(on: bool | None, monkeypatch) -> str:
    monkeypatch.setattr(rows_bulk, "EARLY_COPY_CTA", on)
    return str(test_rows.lowered(module("softmax", None, 128, "float32", variant="rows_bulk")))


def test_early_copy_cta_changes_only_where_on(monkeypatch) -> None:
    """Off (and None where the table has no entry: softmax float32 128) the kernel is the
    default's; on, the first bulk copy comes before the first CTA barrier (it came after it)."""
    assert rows_bulk.EARLY_COPY_CTA is None
    off, none, on = (_kernel_text(v, monkeypatch) for v in (False, None, True))
    assert off == none and on != off

    def copy_before_barrier(text: str) -> bool:
        return text.index("ptx.cp.async.bulk") < text.index("ptx.bar.sync")

    assert copy_before_barrier(on) and not copy_before_barrier(off)
    # (the table by (kind, type): softmax's entry turns it on for softmax, not for rms_norm)
    monkeypatch.setattr(rows_bulk, "EARLY_COPY_CTA_MEASURED", {("softmax", F32.name): ((128, 128),)})
    assert _kernel_text(None, monkeypatch) == on
    rms = str(test_rows.lowered(module("rms_norm", None, 128, "float32", weight="float32", eps=1e-5, variant="rows_bulk")))
    assert not copy_before_barrier(rms)


@pytest.mark.parametrize("kind,dtype", [("rms_norm", "float32"), ("softmax", "float32")])
def test_early_copy_cta_against_float64_with_the_default_bits(kind: str, dtype: str, monkeypatch) -> None:
    """3 rows (3 CTAs, a row each), on and off: y and the statistics within float32's
    tolerance of float64, and the same bits on and off; the first row alone (M = 1) gives
    its bits in the batch (batch invariance)."""
    x = np.random.default_rng(5).standard_normal((3, 128)) * 3 + 5
    affine = dtype if kind == "rms_norm" else None
    got = {}
    for on in (False, True):
        monkeypatch.setattr(rows_bulk, "EARLY_COPY_CTA", on)
        got[on] = run(kind, x, dtype, affine=affine, variant="rows_bulk")
    y, stats, xv, w, b = got[True]
    check(kind, y, stats, xv, w, b, dtype)
    np.testing.assert_array_equal(y, got[False][0])
    for key in stats:
        np.testing.assert_array_equal(stats[key], got[False][1][key])
    alone = run(kind, x[:1], dtype, affine=affine, variant="rows_bulk")[0]
    np.testing.assert_array_equal(alone[0], y[0])


# (variant, N, dtype, M, reduction, rows_cta.CTAS_PER_SM, SM count): several CTAs of a row each
# (the short tail's own pair), 2 CTAs of rows_cta with more rows than CTAs (its CTA's tree of
# reloaded losses), and 33 CTAs, more than a CTA's 32 threads (the default's protocol: no poll)
POLLED = [("rows_cta", 300, "bfloat16", 6, "mean", None, 1), ("rows_cta", 130, "float32", 24, "sum", 2, 1),
          ("rows_cta", 68, "float32", 33, "mean", None, 100)]


@pytest.mark.parametrize("variant,n,dtype,m,reduction,ctas,sms", POLLED, ids=[f"{t[0]}-{t[3]}rows-{t[4]}" for t in POLLED])
def test_loss_tail_poll_has_the_default_bits(variant: str, n: int, dtype: str, m: int, reduction: str,
                                             ctas: int | None, sms: int, monkeypatch) -> None:
    """The mean or sum with LOSS_TAIL_POLL off, on, and on with LOSS_TAIL_EARLY_TICKET: the
    same bits, the same loss rows, near the float64 sum of the rows; on, the workspace left
    zeroed after two launches (the second's bits the first's)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: sms)
    from bulkred_dialect.passes.variants import rows_cta

    monkeypatch.setattr(rows_cta, "CTAS_PER_SM", ctas)
    monkeypatch.setattr(rows_cta, "MIN_BLOCK", 32)  # (CTAs of one warp)
    rng = np.random.default_rng(m * 7 + n)
    target = rng.integers(0, n, m)
    target[1::3] = IGNORE
    x = rng.standard_normal((m, n)) * rng.uniform(0.5, 20, (m, 1))  # (losses of many magnitudes: orders differ in bits)
    got = []
    for poll, early in ((False, False), (True, False), (True, True)):
        monkeypatch.setattr(rows_lower, "LOSS_TAIL_POLL", poll)
        monkeypatch.setattr(rows_lower, "LOSS_TAIL_EARLY_TICKET", early)
        got.append(run_reduced(variant, n, target, reduction, dtype, x=x, again=early))
    a, la, _, ua = got[0]
    kept = target != IGNORE
    w = la.sum() / kept.sum() if reduction == "mean" else la.sum()
    for b, lb, _, ub in got[1:]:
        assert ua == ub and ua > 1, (ua, ub)  # (several CTAs: the ticket's path)
        np.testing.assert_array_equal(la, lb)
        assert np.float64(a).tobytes() == np.float64(b).tobytes(), (reduction, a, b)
        assert abs(b - w) <= 1e-2 * abs(w) + 1e-5 * np.abs(la).sum(), (b, w)


def test_loss_tail_poll_changes_only_where_on(monkeypatch) -> None:
    """Off (and None with the empty tables) the default's kernel; on, the exchanges; with
    LOSS_TAIL_EARLY_TICKET too, a ticket before the rows loop (the first atom.add before the
    first scf.for), and not without LOSS_TAIL_POLL."""
    assert rows_lower.LOSS_TAIL_POLL is None and not rows_lower.LOSS_TAIL_POLL_MEASURED
    assert rows_lower.LOSS_TAIL_EARLY_TICKET is None and not rows_lower.LOSS_TAIL_EARLY_TICKET_MEASURED
    texts = {}
    for poll, early in ((False, None), (None, None), (True, None), (True, True), (False, True)):
        monkeypatch.setattr(rows_lower, "LOSS_TAIL_POLL", poll)
        monkeypatch.setattr(rows_lower, "LOSS_TAIL_EARLY_TICKET", early)
        texts[poll, early] = str(test_rows.lowered(module("cross_entropy", None, 300, "bfloat16", variant="rows_cta",
                                                          reduction="mean")))
    off = texts[False, None]
    assert texts[None, None] == off and texts[False, True] == off and texts[True, None] != off
    assert "exch" in texts[True, None] and "exch" not in off

    def ticket_first(text: str) -> bool:
        return text.index("ptx.atom") < text.index("scf.for")

    assert ticket_first(texts[True, True]) and not ticket_first(texts[True, None]) and not ticket_first(off)
