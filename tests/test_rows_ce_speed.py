"""cross_entropy's forward settings for speed (issue 30, section 4; all off by default,
measured by tools/probes/rows_ce.py), on the interpreter:

* ``rows_lower.LOSS_TAIL_SHORT`` (the mean / sum in the kernel for small batches): the
  same bits as the default's tail in each of its paths (one CTA; several, each with at
  most one row; several with more), the workspace left zeroed;
* ``rows_lower.RAGGED`` (vector loads of rows whose start is not on a vector's boundary:
  odd N, odd row strides): the losses against float64, the bits of a row the same at every
  position in the batch (its alignment) and for every M, NaN / inf rows, ignore_index.

Small settings keep the interpreter fast (test_rows.py's: CTAs of one or two warps)."""

from __future__ import annotations

import numpy as np
import pytest
from test_rows import interpret, lowered, small_ctas, to_bits, values  # noqa: F401 (small_ctas: autouse)
from test_rows_ce_reduction import IGNORE, run_reduced

from bulkred_dialect.passes.variants import rows_common, rows_lower
from bulkred_dialect.row_kernels import module

# region LOSS_TAIL_SHORT

# (variant, N, dtype, SM count, M): the tail's paths: one CTA (its pair alone, with and
# without the CTA's tree), several CTAs of one row each (no tree), several with more
TAILS = [
    ("rows_cta", 300, "bfloat16", 1, 1), ("rows_cta", 300, "bfloat16", 0, 5), ("rows_cta", 300, "bfloat16", 1, 6),
    ("rows_cta", 130, "float32", 1, 40), ("rows_warp", 68, "float32", 1, 9), ("rows_warp", 68, "float32", 0, 3),
    ("rows_stream", 33, "float32", 1, 4), ("rows_cluster", 132, "float32", 1, 3),
]


@pytest.mark.parametrize("variant,n,dtype,sms,m", TAILS, ids=[f"{t[0]}-{t[4]}rows-{t[3]}sm" for t in TAILS])
def test_short_tail_has_the_default_bits(variant: str, n: int, dtype: str, sms: int, m: int, monkeypatch) -> None:
    monkeypatch.setattr(rows_common, "sm_count", lambda target: sms)
    rng = np.random.default_rng(m * 7 + n)
    target = rng.integers(0, n, m)
    target[1::3] = IGNORE
    x = rng.standard_normal((m, n)) * 3
    for reduction in ("mean", "sum"):
        got = []
        for short in (False, True):
            monkeypatch.setattr(rows_lower, "LOSS_TAIL_SHORT", short)
            got.append(run_reduced(variant, n, target, reduction, dtype, x=x))  # (checks the workspace is zeroed)
        (a, la, _, ua), (b, lb, _, ub) = got
        assert ua == ub
        np.testing.assert_array_equal(la, lb)
        assert np.float64(a).tobytes() == np.float64(b).tobytes(), (reduction, a, b)
        kept = target != IGNORE
        w = la.sum() / kept.sum() if reduction == "mean" else la.sum()
        assert abs(b - w) <= 1e-2 * abs(w) + 1e-5 * np.abs(la).sum(), (b, w)


def test_short_tail_changes_the_kernel() -> None:
    """On, the one-CTA path and thread 0's ticket are in the kernel (not the default's)."""
    texts = {}
    for short in (False, True):
        rows_lower.LOSS_TAIL_SHORT = short
        try:
            texts[short] = str(lowered(module("cross_entropy", None, 300, "bfloat16", variant="rows_cta",
                                              reduction="mean")))
        finally:
            rows_lower.LOSS_TAIL_SHORT = False
    assert texts[False] != texts[True]
    assert texts[False].count("ptx.fence") > texts[True].count("ptx.fence") - 1


# endregion
