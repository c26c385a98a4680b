"""The forward rows lowered with the row in shared memory (rows_bulk: ``cp.async.bulk``
into each CTA's slice, the statistics pushed across the cluster with ``st.async`` and
mbarrier transaction counts) and rows_cluster's push exchange, on the interpreter's
clusters (interpreter/clusters.py: every CTA of a cluster at once, its mbarriers, bulk
copies and ``st.async``) against numpy in float64.

Small settings keep the interpreter fast: slices of a few hundred bytes, CTAs of one warp,
one cluster for every row (the rows loop runs 5 times: both parities and both phases of
each mbarrier)."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import check, run, run_cross_entropy

from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.passes.lower_tile_reductions import explanations
from bulkred_dialect.passes.variants import rows_bulk, rows_common
from bulkred_dialect.row_kernels import module

SM90 = test_rows.SM90


def small_bulk(monkeypatch) -> None:
    """rows_bulk small enough for the interpreter: slices of 512 bytes in chunks of 128,
    CTAs of one warp, chosen for every N with the module's defaults (a persistent CTA per
    row, a cluster per row); test_rows_ce_reduction.py and test_rows_long_speed.py take it too."""
    monkeypatch.setattr(rows_bulk, "SLICE_BYTES", 512)
    monkeypatch.setattr(rows_bulk, "CHUNK", 128)
    monkeypatch.setattr(rows_bulk, "BLOCK", 32)
    monkeypatch.setattr(rows_bulk, "MIN_BLOCK", 32)
    monkeypatch.setattr(rows_bulk, "CHOSEN", [(d, None, 1, 1 << 30, None) for d in ("float32", "bfloat16", "float16")])
    monkeypatch.setattr(rows_bulk, "PERSISTENT", None)
    monkeypatch.setattr(rows_bulk, "BUFFERS", 2)


@pytest.fixture(autouse=True)
def small(monkeypatch):
    """:func:`small_bulk`; one cluster (or CTA) for all the rows; the kernels run on the
    interpreter's clusters (a cluster of one CTA included: its mbarrier and bulk copies)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 0)
    small_bulk(monkeypatch)
    monkeypatch.setattr(test_rows, "interpret", lambda m, *args: run_cluster_grid(m, "rows", *args))


def _rows(m: int, n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((m, n)) * 3 + 5  # (a mean away from 0: the statistics within 2e-6 relative)


# (dtype, N, CTAs per cluster): float32 512 x 4 bytes over slices of 512 bytes: 4 CTAs of
# one warp, one vector each per pass; bfloat16 512 x 2 bytes: 2 CTAs, two 8-byte vectors per
# thread; float32 128: one CTA (no cluster exchange)
CONFIGS = [("float32", 512, 4), ("bfloat16", 512, 2), ("float32", 128, 1)]


@pytest.mark.parametrize("kind", ["softmax", "log_softmax", "rms_norm", "layer_norm"])
@pytest.mark.parametrize("dtype,n,c", CONFIGS)
def test_kinds(kind: str, dtype: str, n: int, c: int) -> None:
    """y and the statistics of 5 rows (one cluster takes them all: the rows loop goes
    through both slot sets and both phases of every mbarrier) against float64; the
    dispatch chooses rows_bulk, in clusters of ``c`` CTAs."""
    x = _rows(5, n)
    built = module("softmax", 5, n, dtype)  # (the configuration depends on N and the type only)
    assert rows_bulk.bulk_for(next(o for o in built.walk() if o.name == "bulkred.normalize_rows"))[0] == c
    y, stats, xv, w, b = run(kind, x, dtype, affine=dtype if kind in ("rms_norm", "layer_norm") else None,
                             variant="rows_bulk")
    check(kind, y, stats, xv, w, b, dtype)


def test_eight_ctas() -> None:
    """A cluster of 8 (float32 rows of 1024): every CTA combines the 8 slots in rank order."""
    built = module("softmax", 3, 1024, "float32")
    assert rows_bulk.bulk_for(next(o for o in built.walk() if o.name == "bulkred.normalize_rows"))[0] == 8
    y, stats, xv, w, b = run("softmax", _rows(3, 1024, seed=7), "float32", variant="rows_bulk")
    check("softmax", y, stats, xv, w, b, "float32")


def test_one_buffer(monkeypatch) -> None:
    """One slice buffer (the copy after the previous row is read): the mbarrier's phase
    every row."""
    monkeypatch.setattr(rows_bulk, "BUFFERS", 1)
    y, stats, xv, w, b = run("rms_norm", _rows(5, 512, seed=9), "bfloat16", affine="float32", variant="rows_bulk")
    check("rms_norm", y, stats, xv, w, b, "bfloat16")


def test_pass_loops_and_a_persistent_cluster_grid(monkeypatch) -> None:
    """Each pass a loop of one vector a step (UNROLL 1: two steps), and clusters of 2 in a
    persistent grid (two slice buffers: the next row copied while this one is computed)."""
    monkeypatch.setattr(rows_bulk, "UNROLL", 1)
    monkeypatch.setattr(rows_bulk, "PERSISTENT", True)
    y, stats, xv, w, b = run("layer_norm", _rows(5, 512, seed=11), "bfloat16", affine="bfloat16", variant="rows_bulk")
    check("layer_norm", y, stats, xv, w, b, "bfloat16")


@pytest.mark.parametrize("kind", ["softmax", "layer_norm"])
def test_float16_rows(kind: str) -> None:
    """float16 rows on rows_bulk (forced: the dispatch leaves them to rows_stream, not
    measured on rows_bulk yet): y and the statistics against float64 from the values the
    kernel read."""
    affine = "float16" if kind == "layer_norm" else None
    y, stats, xv, w, b = run(kind, _rows(5, 512, seed=13), "float16", affine=affine, variant="rows_bulk")
    check(kind, y, stats, xv, w, b, "float16")


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy(smoothing: float) -> None:
    """cross_entropy's loss and lse in clusters of 4 (float32 rows of 512): a target
    inside, the last, ignore_index (loss 0) and one outside [0, N) (NaN)."""
    run_cross_entropy(512, smoothing, variant="rows_bulk")


def test_batch_invariance() -> None:
    """The same rows give the same bits alone, as the 2nd of 3 rows and as the 4th of 7
    (clusters of 2: each row through another slot set and mbarrier phase)."""
    x = _rows(7, 512, seed=3)
    ys = [run("softmax", x[i:i + 1], "bfloat16", variant="rows_bulk")[0][0] for i in (3,)]
    ys.append(run("softmax", x[2:5], "bfloat16", variant="rows_bulk")[0][1])
    ys.append(run("softmax", x, "bfloat16", variant="rows_bulk")[0][3])
    assert all(np.array_equal(ys[0], y) for y in ys[1:])


def test_explain_refuses_partial_slices() -> None:
    """A row that is not whole 16-byte chunks per CTA (N = 510 float32: 2040 bytes over 4
    CTAs) is left to the other variants, with the reason."""
    (table,) = explanations(module("softmax", 2, 510, "float32"), SM90)
    assert "chosen: rows_bulk" not in table
    line = next(s for s in table.splitlines() if "rows_bulk" in s and "slices" in s)
    assert "FAIL" in line and "N = 510 (float32)" in line, table


def test_cluster_push_phases(monkeypatch) -> None:
    """rows_cluster (the row in registers) with the push exchange: 5 rows through one
    cluster of 2 CTAs, layer_norm's two exchanges per row (two mbarrier pairs)."""
    monkeypatch.setattr(rows_bulk, "CHOSEN", [])
    x = _rows(5, 132, seed=5)
    y, stats, xv, w, b = run("layer_norm", x, "float32", affine="float32", variant="rows_cluster")
    check("layer_norm", y, stats, xv, w, b, "float32")
