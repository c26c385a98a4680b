"""rows_backward.OVERLAP (off by default): rows_slices reads each row of a unit but the
first in the same loop as the previous row's second read and dx, the first row's sums
before the loop and the last row's dx after it. On the CPU interpreter with
test_rows_backward_slices' narrow clusters (2 CTAs of one warp, one cluster looping over
the rows): dx, dweight and dbias against float64, and every output bit for bit the
default's (the same order of each thread's column sums)."""

from __future__ import annotations

import pytest
import test_rows
import test_rows_backward_slices
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)
from test_rows_backward_pipeline import _lowered, _outputs
from test_rows_backward_slices import narrow_slices  # noqa: F401 - the slices narrowed (autouse)

from bulkred_dialect.passes.variants import rows_backward

CASES = [  # (kind, N, dtype, weight's type, dbias): as test_rows_backward_slices
    ("layer_norm_backward", 600, "float32", "float32", True),  # dweight and dbias
    ("rms_norm_backward", 600, "bfloat16", "bfloat16", False),  # dweight rounded once to bfloat16
    ("layer_norm_backward", 600, "float16", None, True),  # dbias alone (no weight)
]


@pytest.fixture
def taken(monkeypatch):
    """OVERLAP on, and the plans it was asked about recorded (each must overlap)."""
    monkeypatch.setattr(rows_backward, "OVERLAP", True)
    seen = []
    real = rows_backward.overlapped
    import bulkred_dialect.passes.variants.rows_lower as rows_lower

    monkeypatch.setattr(rows_lower, "overlapped", lambda p, op: seen.append(real(p, op)) or seen[-1])
    return seen


@pytest.mark.parametrize("kind,n,dtype,affine,db", CASES)
def test_overlapped_norm_backward(kind, n, dtype, affine, db, taken, monkeypatch) -> None:
    """3 rows on one cluster: the first row's sums, two steps of the loop, the last dx."""
    test_rows_backward_slices.test_slices_norm_backward(kind, n, dtype, affine, db, monkeypatch)
    assert taken == [True]


@pytest.mark.parametrize("kind,n,dtype,affine,db", CASES[:2])
def test_overlapped_bits_are_the_defaults(kind, n, dtype, affine, db, monkeypatch) -> None:
    """M = 1 (no step of the loop) and 4 rows on one cluster, the kernel of any M (each
    setting's lowered once, run on both) and of this M: every output's bits as with
    OVERLAP off."""
    case = (kind, "rows_slices", n, dtype, affine, db)
    default = _lowered(*case, None)
    monkeypatch.setattr(rows_backward, "OVERLAP", True)
    overlapped = _lowered(*case, None)
    for m in (1, 4):
        want = _outputs(*case, m, built=default)
        got = _outputs(*case, m, built=overlapped)
        got += _outputs(*case, m, static=True)  # (the kernel of this M)
        want = want + want
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            assert a.tobytes() == b.tobytes(), m


def test_off_by_default() -> None:
    """The measured choice stays until the probe says otherwise (docs/rows_bench_bwd_h200.md)."""
    assert rows_backward.OVERLAP is False
