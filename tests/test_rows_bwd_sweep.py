"""The per-cell tables of the sweep probe of the backward cells under issue 30's target
(tools/probes/rows_bwd_sweep.py), each empty by default (the module constant everywhere):
rows_stream.UNROLL_MEASURED, rows_common.NORM_BACKWARD_VALUES_MEASURED, rows_cluster.SLICE_MEASURED. A
cell's entry on the CPU interpreter against float64 (the CTAs narrowed as in test_rows): cross_entropy's
backward on rows_stream bit for bit the default's (elementwise: the step changes only the order of
the loads), the norms' backward on rows_cta and rows_cluster (test_rows.test_norm_backward); the
probe's candidates name settings that exist, each with the table entry that flips it, and its flip
rule."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest
import test_rows
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)
from test_rows_ce_backward_speed import _check, _dx

from bulkred_dialect.passes.variants import rows_cluster, rows_common, rows_cta, rows_stream
from bulkred_dialect.passes.variants.rows_common import BF16, F32
from bulkred_dialect.row_kernels import module

PROBES = Path(__file__).resolve().parent.parent / "tools" / "probes"


@pytest.mark.parametrize("dtype", [BF16.name, F32.name])
def test_unroll_measured_against_float64(dtype: str, monkeypatch) -> None:
    """A cell of UNROLL_MEASURED (4 vectors a loop step where small_ctas' UNROLL is 2: 140 vectors of
    32 threads, one step of 128 and 12 more) lowers another loop, dx within float64's tolerance and
    the default's bits; a cell of another N keeps the default's module."""
    n = 4 * (4 * 32 + 11) + 4
    off = _dx(n, dtype, "rows_stream", {}, monkeypatch, 0.0)
    monkeypatch.setattr(rows_stream, "UNROLL_MEASURED", {("cross_entropy_backward", dtype): ((n, n, 4),)})
    on = _dx(n, dtype, "rows_stream", {}, monkeypatch, 0.0)
    _check(*on[:5], n, dtype, 0.0)
    assert str(on[5]) != str(off[5])
    assert on[0].tobytes() == off[0].tobytes()
    monkeypatch.setattr(rows_stream, "UNROLL_MEASURED", {("cross_entropy_backward", dtype): ((n + 4, n + 4, 4),)})
    assert str(_dx(n, dtype, "rows_stream", {}, monkeypatch, 0.0)[5]) == str(off[5])


def _norm_op(kind: str, n: int, dtype: str, variant: str):
    layer = kind == "layer_norm_backward"
    m = module(kind, None, n, dtype, weight=dtype, dweight=dtype, dbias=dtype if layer else None, variant=variant)
    return next(o for o in m.walk() if o.name == "bulkred.normalize_rows")


def test_norm_backward_values_measured_against_float64(monkeypatch) -> None:
    """A cell of rows_common.NORM_BACKWARD_VALUES_MEASURED (8 values a thread where the default holds
    16): rows_cta's CTA of twice the threads, dx, dweight and dbias against float64
    (test_rows.test_norm_backward); another kind's cell untouched."""
    kind, n, dtype = "layer_norm_backward", 1024, BF16.name
    before = rows_cta.block_for(_norm_op(kind, n, dtype, "rows_cta"))
    monkeypatch.setattr(rows_common, "NORM_BACKWARD_VALUES_MEASURED", {(kind, dtype): ((n, n, 8),)})
    assert rows_cta.block_for(_norm_op(kind, n, dtype, "rows_cta")) == 2 * before
    assert rows_common.max_values(_norm_op("rms_norm_backward", n, dtype, "rows_cta")) == 16
    test_rows.test_norm_backward(kind, "rows_cta", n, dtype, dtype, True, monkeypatch)


def test_slice_measured_against_float64(monkeypatch) -> None:
    """A cell of rows_cluster.SLICE_MEASURED (half small_ctas' SLICE of 128): a cluster of twice the
    CTAs, dx and dweight against float64 (test_rows.test_norm_backward); another N untouched."""
    kind, n, dtype = "rms_norm_backward", 512, BF16.name
    before = rows_cluster.cluster_for(_norm_op(kind, n, dtype, "rows_cluster"))[0]
    monkeypatch.setattr(rows_cluster, "SLICE_MEASURED", {(kind, dtype): ((n, n, 64),)})
    assert rows_cluster.cluster_for(_norm_op(kind, n, dtype, "rows_cluster"))[0] == 2 * before
    assert rows_cluster.cluster_for(_norm_op(kind, 2 * n, dtype, "rows_cluster"))[0] == 8
    test_rows.test_norm_backward(kind, "rows_cluster", n, dtype, dtype, False, monkeypatch)


def test_tables_empty() -> None:
    """Off until an H200 measures them (the default's PTX everywhere)."""
    assert not dict(rows_stream.UNROLL_MEASURED)
    assert not dict(rows_common.NORM_BACKWARD_VALUES_MEASURED)
    assert not dict(rows_cluster.SLICE_MEASURED)


@pytest.fixture(scope="module")
def sweep():
    """The probe module, imported with its directory on the path (its BULKRED_CACHE=0 undone after)."""
    before, path = os.environ.get("BULKRED_CACHE"), list(sys.path)
    sys.path.insert(0, str(PROBES))
    try:
        yield importlib.import_module("rows_bwd_sweep")
    finally:
        sys.path[:] = path
        if before is None:
            os.environ.pop("BULKRED_CACHE", None)
        else:
            os.environ["BULKRED_CACHE"] = before


def test_candidates_name_existing_settings(sweep) -> None:
    """Every cell's candidates: the default first, labels unique, each other candidate's patches
    naming module constants that exist (else the probe's patch fails on the GPU) and the entries to flip."""
    for kind, dtype, n in sweep.cells(sweep.CELLS):
        rows = sweep.candidates(kind, dtype, n)
        assert rows[0][0] == "default" and rows[0][2] == {}
        assert len({r[0] for r in rows}) == len(rows), (kind, dtype, n)
        assert 2 <= len(rows) <= 7, (kind, dtype, n)
        for label, variant, patches, entries in rows[1:]:
            assert entries, label
            for name in patches:
                module, attr = name.rsplit(".", 1)
                assert hasattr(importlib.import_module(module), attr), name


def test_flip_rule(sweep) -> None:
    """A candidate flips its cell at >= 1.02x the default's, never with a failed check (0.0) or a
    failed default; the line names the candidate's table entries."""
    r = lambda label, x, e=(): ("k", "float32", 1024, label, x, list(e))  # noqa: E731
    lines = sweep.flips([r("default", 0.90), r("a", 0.915, ["A"]), r("b", 0.0, ["B"])])
    assert lines == ["k float32 1024: keep the default (0.900 of copy; best other a, 0.915)"]
    lines = sweep.flips([r("default", 0.90), r("a", 0.92, ["T.X = 1"]), r("b", 0.95, ["T.Y = 2", "T.Z = 3"])])
    assert lines == ["k float32 1024: b, 0.900 -> 0.950 of copy: T.Y = 2; T.Z = 3"]
    assert "nothing to compare" in sweep.flips([r("default", 0.0), r("a", 0.99, ["A"])])[0]


def test_cells_refused(sweep) -> None:
    with pytest.raises(ValueError, match="the kind is one of ce, rms, ln"):
        sweep.cells("softmax:float32:1024")
    with pytest.raises(ValueError, match="expected kind:dtype:N"):
        sweep.cells("ce:float32")
