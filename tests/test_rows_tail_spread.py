"""rows_backward.NORM_TAIL_SPREAD (issue 30, section 4): the last level of a norm's
backward's column sums spread over the CTAs still there when its last row arrives, on the
variants that lower through rows_lower (rows_cta, rows_cluster): dweight and dbias bit for
bit the default's (the same rows added in the same order), near float64, dx unchanged, the
workspace (counters included) left zeroed, over batches of fewer rows than units; one
group (the units' rows) and two levels (the groups' rows), small N and units standing in
for the H200's (tools/probes/rows_ln_bf16.py measures them)."""

from __future__ import annotations

import numpy as np
import pytest
from ir_compare import has_value_named
from test_rows import small_ctas, to_bits  # noqa: F401 - the small CTAs (autouse)
from test_rows_backward_bulk import assert_the_defaults_column_sums, norm_kernel

import test_rows
from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.passes.variants import rows_backward, rows_bulk_backward, rows_common
from bulkred_dialect.row_kernels import module


def _kernel(kind: str, variant: str, n: int, dtype: str, units: int | None):
    """The lowered kernel (M dynamic); ``units``: its grid run as one cluster of up to that
    many CTAs, every CTA at once (test_rows_ln_long's ``_whole_grid``: the pieces shared)."""
    from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

    layer = kind == "layer_norm_backward"
    built = (norm_kernel(kind, n, dtype, dtype, layer) if variant == "rows_bulk_backward" else
             test_rows.lowered(module(kind, None, n, dtype, weight=dtype, dweight=dtype, dbias=dtype if layer else None,
                                      variant=variant), variant))
    if units is not None:
        kernel = next(o for o in built.walk() if o.name == "func.func")
        rule = [a.value.data for a in kernel.attributes["bulkred.grid_rows"].data]
        kernel.attributes["bulkred.grid_rows"] = ArrayAttr([IntegerAttr(v, i64) for v in rule[:2] + [units]])
    return built


def _bulk_settings(monkeypatch, units: int) -> None:
    """rows_bulk_backward (rms_norm bfloat16 16384's variant on the H200, its tail through
    finish_columns with no ``ahead`` of its own) with test_rows_backward_bulk's small
    settings: slices of 512 bytes, CTAs of one warp, ``units`` units."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 64)
    for name, value in (("SLICE_BYTES", 512), ("CHUNK", 128), ("BLOCK", 32), ("MIN_BLOCK", 32), ("SLOTS", 4),
                        ("CLUSTERS", {1: units}),
                        ("CHOSEN", [(d, None, 1, 1 << 30) for d in ("float32", "bfloat16", "float16")])):
        monkeypatch.setattr(rows_bulk_backward, name, value)


SPREAD_CASES = [  # (kind, variant, dtype, N, units, GROUP_UNITS, NORM_TAIL_SPREAD's loads, NORM_TAIL_LEVELS)
    ("layer_norm_backward", "rows_cta", "float32", 512, 3, 4, 8, 1),  # one group of 3; pieces of 2 vectors a thread
    ("layer_norm_backward", "rows_cta", "bfloat16", 256, 5, 2, 4, 1),  # two levels: groups of 4, the groups' 2 rows
    ("rms_norm_backward", "rows_cta", "float32", 256, 7, 2, 4, 2),  # both spread: groups of 4 and 3, then 2 rows
    ("rms_norm_backward", "rows_cluster", "float32", 256, 3, 4, 4, 1),  # a rank's columns; clusters in turn: the last's
    ("layer_norm_backward", "rows_cluster", "bfloat16", 256, 5, 2, 4, 2),  # two levels, each rank its own counters
    ("rms_norm_backward", "rows_bulk_backward", "float32", 128, 5, 2, 4, 2),  # rows_bulk_backward's call, both levels
]


@pytest.mark.parametrize("case", SPREAD_CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[7]}" for c in SPREAD_CASES])
def test_tail_spread(case, monkeypatch) -> None:
    """NORM_TAIL_SPREAD: dweight (and dbias) bit for bit the default's two levels' over
    batches of 1 row (the other units' rows not added) and 7, near float64; dx the
    default's; the workspace left zeroed (run_norm). rows_cta's grid runs as one cluster
    (every CTA at once: the pieces drawn by several CTAs), rows_cluster's clusters in turn
    (the first leave after their polls, the last adds every piece), rows_bulk_backward's
    likewise (its own tail settings off: the cells it serves below 262144). NORM_TAIL_LEVELS 2:
    each group's rows spread over its CTAs too. The default's kernel is not the spread's
    (the setting took)."""
    kind, variant, dtype, n, units, group, loads, levels = case
    layer = kind == "layer_norm_backward"
    cluster = 2 if variant == "rows_cluster" else 1
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 2)
    monkeypatch.setattr(rows_common, "SLICE_SUM_FLOATS", units * n * (1 + layer) // cluster)
    if variant == "rows_bulk_backward":
        _bulk_settings(monkeypatch, units)
    monkeypatch.setattr(rows_backward, "GROUP_UNITS", group)
    monkeypatch.setattr(rows_backward, "NORM_TAIL_POLLS", 3)
    monkeypatch.setattr(test_rows, "interpret", lambda m, *args: run_cluster_grid(m, "rows", *args))
    rng = np.random.default_rng(n + units)
    x = to_bits(rng.standard_normal((7, n)) * 2 + 0.5, dtype)
    dy = to_bits(rng.standard_normal((7, n)), dtype)
    w = to_bits(rng.standard_normal(n), dtype)
    monkeypatch.setattr(rows_backward, "NORM_TAIL_SPREAD", 0)
    default_k = _kernel(kind, variant, n, dtype, None)
    monkeypatch.setattr(rows_backward, "NORM_TAIL_SPREAD", loads)
    monkeypatch.setattr(rows_backward, "NORM_TAIL_LEVELS", levels)
    spread_k = _kernel(kind, variant, n, dtype, units if cluster == 1 else None)
    assert has_value_named(spread_k, "columns_seen") and not has_value_named(default_k, "columns_seen")
    assert has_value_named(spread_k, "columns_group_seen") == (levels == 2)
    groups = rows_backward.ColumnSums(1 + layer, units, n, cluster).groups  # (one group, or two levels)
    assert groups == (1 if group >= units else 2)
    assert_the_defaults_column_sums(kind, x, dy, w, dtype, layer, units, default_k, spread_k)


def test_default_off() -> None:
    """NORM_TAIL_SPREAD and NORM_TAIL_LEVELS are left to the table, which holds the cells the
    H200 measured faster (tools/probes/rows_ln_bf16.py, the seventh session): bfloat16 and
    float16 (as bfloat16) layer_norm and rms_norm at 4096, 16384 and 65536, float32 layer_norm
    at 4096; elsewhere (float32 rms_norm, 1024) the default's tail."""
    assert (rows_backward.NORM_TAIL_SPREAD, rows_backward.NORM_TAIL_LEVELS) == (None, None)
    table = rows_backward.NORM_TAIL_SPREAD_MEASURED
    cells = {(k, t, lo, hi, loads, levels) for (k, t), rows in table.items() for lo, hi, loads, levels in rows}
    want = {(k, t, n, n, 1, lv) for t in ("bfloat16", "float16")
            for k, n, lv in (("layer_norm_backward", 4096, 2), ("layer_norm_backward", 16384, 2),
                             ("layer_norm_backward", 65536, 1), ("rms_norm_backward", 4096, 1),
                             ("rms_norm_backward", 16384, 2), ("rms_norm_backward", 65536, 1))}
    assert cells == want | {("layer_norm_backward", "float32", 4096, 4096, 1, 2)}
    from types import SimpleNamespace

    from bulkred_dialect.ops.tile.rows import NormKind
    from bulkred_dialect.passes.variants.rows_common import BF16, F16, F32

    def plan(kind, dtype, n):
        return SimpleNamespace(kind=NormKind(kind), dtype=dtype, n=n)

    assert rows_backward.norm_tail_spread(plan("layer_norm_backward", F16, 16384)) == (1, 2)
    assert rows_backward.norm_tail_spread(plan("rms_norm_backward", BF16, 65536)) == (1, 1)
    assert rows_backward.norm_tail_spread(plan("rms_norm_backward", F32, 4096)) == (0, 1)
    assert rows_backward.norm_tail_spread(plan("layer_norm_backward", BF16, 1024)) == (0, 1)
