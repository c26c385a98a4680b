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
from bulkred_dialect.passes.predicates import WARP, Predicate
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.rows_common import (
    half_as_bfloat16,
    BF16, F32, MAX_VALUES, cell_setting, dtype_of, items_for, plan, row_predicates, set_min_ctas, setting_of,
    warp_limit,
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
arithmetic depends on it); None: :data:`CTAS_PER_SM_MEASURED`, else 2048 threads' worth (the
default). The probe's setting (tools/probes/rows_forward.py --set pipeline, quack32)."""

CTAS_PER_SM_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = half_as_bfloat16({
    # tools/probes/rows_forward.py --set quack32 on an H200, the eighth session of 2026-11-29
    # (docs/rows_probes_h200_run8.log), x copy, median of 5 rounds: a warp a row in a grid of M / 8 (1 << 20: no
    # cap, no loop over rows; the hardware refills the multiprocessors), unpipelined (rows_common.FORWARD_MEASURED);
    # with BLOCK_MEASURED's 128-thread CTAs (4 rows a CTA, Quack's) where it has them: bfloat16 softmax 1024
    # 0.921 -> 0.979, rms_norm 0.953 -> 0.994; log_softmax 0.947 -> 0.993, layer_norm 0.934 -> 0.992.
    # Not cross_entropy (0.980 -> 0.995 measured for its losses alone): its in-kernel mean's tail sums a
    # partial a CTA, and a grid of M CTAs made the benchmark's mean 0.98 -> 0.36 of copy
    ("softmax", BF16.name): ((1024, 1024, 1 << 20),),
    ("rms_norm", BF16.name): ((1024, 1024, 1 << 20),),
    ("log_softmax", BF16.name): ((1024, 1024, 1 << 20),),
    ("layer_norm", BF16.name): ((1024, 1024, 1 << 20),),
})
"""By (kind, element type name): (N from, N to, CTAs), the first range holding N (never M);
float16 as bfloat16."""

BLOCK_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = half_as_bfloat16({
    # (CTAS_PER_SM_MEASURED's run: 128-thread CTAs, 4 rows a CTA, faster than 256 there)
    ("log_softmax", BF16.name): ((1024, 1024, 128),),
    ("layer_norm", BF16.name): ((1024, 1024, 128),),
})
"""The CTA's threads by (kind, element type name): (N from, N to, threads) in place of
:data:`BLOCK`; float16 as bfloat16."""

YIELD_MEASURED: dict[tuple[str, str], tuple[tuple[int, int], ...]] = half_as_bfloat16({
    # (CTAS_PER_SM_MEASURED's run) cells where another variant measured faster: float32 1024 on rows_cta, a CTA of
    # 128 threads (8 values each; layer_norm 64 of 16) a row in a grid of M, unpipelined, one barrier (its
    # tables' entries): softmax 0.949 -> 1.005, log_softmax 0.949 -> 1.011, rms_norm 0.949 -> 1.004,
    # add_rms_norm 0.947 -> 0.998, layer_norm 0.958 -> 1.001; add_rms_norm bfloat16 1024 on rows_bulk, a CTA
    # of 128 a row, the row and the residual in shared memory (rows_bulk.CHOSEN) 0.942 -> 0.999
    ("softmax", F32.name): ((1024, 1024),),
    ("log_softmax", F32.name): ((1024, 1024),),
    ("rms_norm", F32.name): ((1024, 1024),),
    ("add_rms_norm", F32.name): ((1024, 1024),),
    ("layer_norm", F32.name): ((1024, 1024),),
    ("add_rms_norm", BF16.name): ((1024, 1024),),
})
"""By (kind, element type name): the ranges (N from, N to) rows_warp leaves to the next
variant by priority (rows_bulk where its CHOSEN has the cell, else rows_cta): its
``measured`` predicate fails there, and the explain row says so. A preference, not a
condition: ``variant="rows_warp"`` still lowers the cell with rows_warp."""


def _not_yielded(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    d = dtype_of(op).name
    kind = op.norm_kind.value
    return not setting_of(None, YIELD_MEASURED, d, op.cols, kind), f"{kind}, {d}, N = {op.cols}"


def block_of(op: NormalizeRowsOp) -> int:
    """The CTA's threads of ``op``'s kernel (:data:`BLOCK`, :data:`BLOCK_MEASURED`)."""
    return cell_setting(None, BLOCK_MEASURED, op, BLOCK)  # type: ignore[return-value]


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
    block = block_of(op)
    ctas = cell_setting(CTAS_PER_SM, CTAS_PER_SM_MEASURED, op) or 2048 // block
    p = plan(op, target, group=WARP, block=block, items=items_for(op, WARP), ctas_per_sm=ctas)
    vec = ragged_vector(op)  # (rows_lower.RAGGED; 0: the default's loads)
    if vec:
        p = ragged_plan(p, vec, ragged_items(op, WARP, vec))
    set_min_ctas(op, min_ctas_for(op))
    lower_rows(op, rewriter, target, replace(p, together=ROWS_AT_ONCE))


ROWS_WARP = Variant(
    "bulkred.normalize_rows", "rows_warp", priority=30,
    predicates=[*row_predicates(warp_limit(MAX_N), f"N <= {MAX_N}"),
                Predicate("measured", _not_yielded, expected="not measured slower than rows_cta / rows_bulk "
                          "(rows_warp.YIELD_MEASURED)", preference=True)],
    lower=lower_rows_warp,
)
