"""rows_slices (a norm's backward, each CTA of a cluster streaming its slice of the row, its
column sums in shared memory) on the CPU interpreter against float64, as
test_rows.test_norm_backward checks the other variants: clusters of 2 CTAs of one warp, a
slice of 75 vectors (two full rounds of the warp, one of them a loop step of two loads,
and a partial one), 3 rows for the clusters' grid-stride loop (each CTA's shared sums
accumulate over its rows), the workspace left zeroed."""

from __future__ import annotations

import pytest
import test_rows
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)

from bulkred_dialect.passes.variants import rows_slices


@pytest.fixture(autouse=True)
def narrow_slices(monkeypatch):
    monkeypatch.setattr(rows_slices, "BLOCK", 32)
    monkeypatch.setattr(rows_slices, "UNROLL", 2)
    monkeypatch.setattr(rows_slices, "SHARED_BYTES", 4096)  # 2 CTAs of 300 columns (2400 bytes of sums)


@pytest.mark.parametrize("kind,n,dtype,affine,db", [
    ("layer_norm_backward", 600, "float32", "float32", True),  # dweight and dbias
    ("rms_norm_backward", 600, "bfloat16", "bfloat16", False),  # dweight rounded once to bfloat16
    ("layer_norm_backward", 600, "float16", None, True),  # dbias alone
])
def test_slices_norm_backward(kind: str, n: int, dtype: str, affine: str | None, db: bool, monkeypatch) -> None:
    test_rows.test_norm_backward(kind, "rows_slices", n, dtype, affine, db, monkeypatch)


def test_slices_chosen_past_the_cluster(monkeypatch) -> None:
    """With the real settings the dispatch gives a norm's backward of 65536 bfloat16 to
    rows_cluster (16 values a thread in 8 CTAs of 512), of 262144 to rows_slices (the row
    not held in registers; 8 CTAs of 32768 columns, 128 KiB of sums each), of 262148 to
    rows_stream (65537 vectors: no equal slices)."""
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.lower_tile_reductions import explanations
    from bulkred_dialect.row_kernels import module

    monkeypatch.undo()

    def chosen(n: int) -> str:
        (table,) = explanations(module("rms_norm_backward", None, n, "bfloat16", weight="bfloat16", dweight="bfloat16"),
                                Target.parse("sm_90a"))
        return next(line for line in table.splitlines() if line.startswith("chosen"))

    assert chosen(65536) == "chosen: rows_cluster"
    assert chosen(262144) == "chosen: rows_slices"
    assert chosen(262148) == "chosen: rows_stream"
