"""bulkred.normalize_rows -> rows_warp (priority 30): a warp per row, for short rows.

CTAs of :data:`BLOCK` threads, each warp one row at a time (rows ``w, w + W, ...``); lane
``l`` loads the vectors ``l, l + 32, ...`` of the row into registers (at most
``rows_common.MAX_VALUES`` float32 values per lane: N <= 1024), the statistics are
combined by a ``shfl.sync`` butterfly (every lane gets them), and each lane writes its
own vectors of y. One read of x, one write of y, no shared memory, no barrier.

Spec: docs/rows.md; PTX ISA ld.global.nc (vectors), shfl.sync, ex2/lg2.approx.
"""

from __future__ import annotations

from dataclasses import replace

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile.rows import NormalizeRowsOp
from bulkred_dialect.passes.predicates import WARP
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.rows_common import (
    half_as_bfloat16,
    BF16, MAX_VALUES, cell_setting, items_for, plan, row_predicates, set_min_ctas, warp_limit,
)
from bulkred_dialect.passes.variants.rows_lower import lower_rows, ragged_items, ragged_plan, ragged_vector

BLOCK = 256
"""Threads per CTA (8 rows at a time)."""

MAX_N = WARP * MAX_VALUES
"""The longest row a warp holds in registers (1024)."""

ROWS_AT_ONCE = 1
"""Rows a warp works on in one step of its loop over rows: 1, or 2 (a forward kind, not
pipelined: rows_common.together): both rows' loads issued, then each row's reduction and
y in turn, so that the second row's loads are in flight over the first's reduction (each
row's operations and their order unchanged). The probe's setting (tools/probes/rows_forward.py
--set pipeline)."""

CTAS_PER_SM: int | None = None
"""The grid's CTAs per multiprocessor at most (the rows shared among them; no row's
arithmetic depends on it); None: 2048 threads' worth (the default). The probe's setting
(tools/probes/rows_forward.py --set pipeline)."""


MIN_CTAS: int | None = None
"""rows_cta.MIN_CTAS for rows_warp's kernels (``.minnctapersm``); None: :data:`MIN_CTAS_MEASURED`,
else no bound (the default). The probe's setting (tools/probes/rows_forward_norms.py)."""

MIN_CTAS_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = {
    # tools/probes/rows_forward_norms.py --cells ce on an H200, 2026-11-29: cross_entropy bfloat16 1024 (with
    # FAST_EXP) 0.904 -> 0.960 of copy at 4 CTAs (56 registers, no spill)
    ("cross_entropy", BF16.name): ((1024, 1024, 4),),
}
"""By (kind, element type name): (N from, N to, CTAs), the first range holding N (never
M); none measured yet."""
MIN_CTAS_MEASURED = half_as_bfloat16(MIN_CTAS_MEASURED)  # float16 as bfloat16 where unmeasured


def min_ctas_for(op: NormalizeRowsOp) -> int | None:
    """The ``.minnctapersm`` of ``op``'s kernel (:data:`MIN_CTAS`), or None."""
    return cell_setting(MIN_CTAS, MIN_CTAS_MEASURED, op)


def lower_rows_warp(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, NormalizeRowsOp)
    p = plan(op, target, group=WARP, block=BLOCK, items=items_for(op, WARP), ctas_per_sm=CTAS_PER_SM or 2048 // BLOCK)
    vec = ragged_vector(op)  # (rows_lower.RAGGED; 0: the default's loads)
    if vec:
        p = ragged_plan(p, vec, ragged_items(op, WARP, vec))
    set_min_ctas(op, min_ctas_for(op))
    lower_rows(op, rewriter, target, replace(p, together=ROWS_AT_ONCE))


ROWS_WARP = Variant(
    "bulkred.normalize_rows", "rows_warp", priority=30,
    predicates=row_predicates(warp_limit(MAX_N), f"N <= {MAX_N}"), lower=lower_rows_warp,
)
