"""Settings for small batches (issue 30, section 4: M = 1, 8 and 64 rows of 4096; off by
default, measured by tools/probes/rows_small.py), on the interpreter:

``rows_bulk.EARLY_COPY_CTA`` (a unit a row of one CTA, one slice buffer of one chunk:
thread 0 issues the first row's copy right after the slice's mbarrier is set up, before
the CTA barrier): y and the statistics against float64, the default's bits, batch
invariance (a row's bits alone and inside a batch), the kernel changed only where it is on.

Small settings keep the interpreter fast: a slice of 512 bytes (float32 rows of 128), one
chunk, CTAs of one warp."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import check, run, small_ctas  # noqa: F401 (small_ctas: autouse)

from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.passes.variants.rows_common import F32
from bulkred_dialect.passes.variants import rows_bulk, rows_common
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
