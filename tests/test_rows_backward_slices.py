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
    """With the real settings (docs/rows.md's measured choices) the dispatch gives a norm's
    backward to rows_cluster where it holds the row, except 16-bit rows with one column
    sum past 65536 (rows_common.NORM_BACKWARD_SLICES_N_BF16; float16 as bfloat16, its
    262144 on rows_bulk_backward); rows too long for
    its registers (262144) to rows_slices, or to rows_stream where N / V has no equal
    slices (262148: 65537 vectors); softmax's backward to rows_slices where rows_cluster
    does not take it (bfloat16 at 65536, every type at 262144)."""
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.lower_tile_reductions import explanations
    from bulkred_dialect.row_kernels import module

    monkeypatch.undo()

    def chosen(kind: str, n: int, dtype: str = "bfloat16") -> str:
        kw = {} if kind in ("softmax_backward", "log_softmax_backward") else {"weight": dtype, "dweight": dtype}
        if kind == "layer_norm_backward":
            kw["dbias"] = dtype
        (table,) = explanations(module(kind, None, n, dtype, **kw), Target.parse("sm_90a"))
        return next(line for line in table.splitlines() if line.startswith("chosen"))[len("chosen: "):]

    assert chosen("rms_norm_backward", 16384) == "rows_bulk_backward"  # (bfloat16 16384: rows_bulk_backward's CHOSEN)
    assert chosen("layer_norm_backward", 16384) == "rows_cluster"
    assert chosen("rms_norm_backward", 65536) == "rows_cluster"  # bfloat16: pipelined (rows_backward.MEASURED)
    assert chosen("rms_norm_backward", 65536, "float16") == "rows_cluster"  # float16 as bfloat16 (rows_common.half_as_bfloat16)
    assert chosen("rms_norm_backward", 32768, "float32") == "rows_cluster"
    assert chosen("layer_norm_backward", 65536) == "rows_cluster"
    assert chosen("rms_norm_backward", 262144, "float16") == "rows_bulk_backward"  # as bfloat16
    assert chosen("log_softmax_backward", 65536) == "rows_slices"
    assert chosen("rms_norm_backward", 262148) == "rows_stream"
    assert chosen("softmax_backward", 65536) == "rows_slices"
    assert chosen("softmax_backward", 32768, "float32") == "rows_cluster"
    # where rows_bulk_backward was measured faster (its CHOSEN): float32 65536 to 262144, bfloat16 past 131072
    for kind, n, dtype in (("rms_norm_backward", 65536, "float32"), ("rms_norm_backward", 262144, "bfloat16"),
                           ("softmax_backward", 65536, "float32"), ("softmax_backward", 262144, "float32")):
        assert chosen(kind, n, dtype) == "rows_bulk_backward"


@pytest.mark.parametrize("variant,n,shared", [
    ("rows_cta", 300, False),  # the column sums in registers (SHARED_COLUMNS off)
    ("rows_cta", 300, True),  # in shared memory: 75 vectors over 64 threads (a partial second)
    ("rows_cluster", 512, True),  # 4 CTAs of one warp, exact slices of 32 vectors: each CTA's in shared memory
])
def test_registers_variants_column_sums(variant: str, n: int, shared: bool, monkeypatch) -> None:
    """layer_norm_backward on the registers variants with each thread's column sums in
    registers or in shared memory (``rows_backward.shared_columns``) against float64."""
    from bulkred_dialect.passes.variants import rows_backward

    monkeypatch.setattr(rows_backward, "SHARED_COLUMNS", shared)
    seen = []
    real = rows_backward.shared_columns
    monkeypatch.setattr(rows_backward, "shared_columns", lambda p, outs: seen.append(real(p, outs)) or seen[-1])
    import bulkred_dialect.passes.variants.rows_lower as rows_lower

    monkeypatch.setattr(rows_lower, "shared_columns", rows_backward.shared_columns)
    test_rows.test_norm_backward("layer_norm_backward", variant, n, "float32", "float32", True, monkeypatch)
    assert seen == [shared]


@pytest.mark.parametrize("kind", ["softmax_backward", "log_softmax_backward"])
def test_slices_softmax_backward(kind: str, monkeypatch) -> None:
    """softmax's and log_softmax's backward on rows_slices (``rows_slices.SOFTMAX``, off by
    default): each CTA's slice, the row's sum combined over the cluster, against float64."""
    monkeypatch.setattr(rows_slices, "SOFTMAX", True)
    test_rows.run_backward(kind, 600, m=3, variant="rows_slices")
