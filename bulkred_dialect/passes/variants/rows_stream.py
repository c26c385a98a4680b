"""bulkred.normalize_rows -> rows_stream (priority 10): a CTA per row of any length, the
row read twice.

:data:`BLOCK` threads per CTA stream the row with ``unroll`` vector loads in flight: a
first pass accumulates the statistics (softmax online: the running maximum, clamped to
the finite range, and the sum of exponentials rescaled as it grows; layer_norm: the sums
of ``x - x[row, 0]`` and of its square), combined over the CTA; a second pass reads x
again (from L2 where the row is still there) and writes y. Two reads of x, one write of
y. The fallback for rows longer than rows_cta holds that rows_bulk and rows_cluster do not
take (their measured cells, whole slices; cross_entropy, which reads its row once here;
add_rms_norm: docs/rows.md).

Spec: docs/rows.md; PTX ISA ld.global.nc (vectors), shfl.sync, bar.sync.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile.rows import NormalizeRowsOp
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.rows_common import BF16, cell_setting, half_as_bfloat16, plan, row_predicates, set_min_ctas
from bulkred_dialect.passes.variants.rows_lower import lower_rows, ragged_plan, ragged_vector

BLOCK = 512
UNROLL = 4
"""Vector loads a thread has in flight a loop step (the default; :data:`UNROLL_MEASURED` per cell)."""

UNROLL_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = half_as_bfloat16({})
"""By (kind, element type name): (N from, N to, vectors a loop step), the first range holding N
(never M), in place of :data:`UNROLL`: more bytes in flight a thread (a bfloat16 thread's 4 vectors
are 32 bytes), with ``.minnctapersm`` (:data:`MIN_CTAS_MEASURED`) keeping the CTAs resident. Empty
until measured on an H200 (tools/probes/rows_bwd_sweep.py, which patches :data:`UNROLL` for a cell
with no entry). The values and their order in each thread's sums follow the step (bits may
differ from the default's in the last place; cross_entropy's backward, elementwise, not at all)."""

CTAS_PER_SM: int | None = None
"""The grid's CTAs per multiprocessor at most (None: 2048 threads' worth, 4): fewer rows in
flight, so that a row read twice (add_rms_norm's residual_out, written by the first pass)
is still in L2 for the second (e.g. 132 CTAs of 128 KiB bfloat16 rows of 65536). No
row's arithmetic depends on it. None: :data:`CTAS_PER_SM_MEASURED`, else 4. The probe's
setting (tools/probes/rows_forward_norms.py, tools/probes/rows_ce.py)."""

CTAS_PER_SM_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = half_as_bfloat16({})
"""By (kind, element type name): (N from, N to, CTAs), the first range holding N (never M);
none measured yet (float16 as bfloat16)."""


MIN_CTAS: int | None = None
"""CTAs a multiprocessor must hold at once (``.minnctapersm``; None: no bound, the default).
The grid is :data:`CTAS_PER_SM` (or 4) CTAs of 512 a multiprocessor: above 32 registers a
thread (cross_entropy of bfloat16 50257 with rows_lower.RAGGED: 46) fewer are resident,
and the others run in a second wave of their own. None: :data:`MIN_CTAS_MEASURED`, else
no bound. The probe's setting (tools/probes/rows_ce.py)."""

MIN_CTAS_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = half_as_bfloat16({
    # (rows_lower.RAGGED_SPLIT_MEASURED's run) cross_entropy bfloat16 50257 and 128256 with STEP_EXPS: 4 CTAs
    # of 512 a multiprocessor (30 to 32 registers, no spill), one wave
    ("cross_entropy", BF16.name): ((16385, 1 << 31, 4),),
})
"""By (kind, element type name): (N from, N to, CTAs), the first range holding N (never M;
float16 as bfloat16)."""


def lower_rows_stream(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, NormalizeRowsOp)
    p = plan(op, target, group=BLOCK, block=BLOCK, items=0, unroll=cell_setting(None, UNROLL_MEASURED, op, UNROLL), ctas_per_sm=cell_setting(CTAS_PER_SM, CTAS_PER_SM_MEASURED, op) or max(1, 2048 // BLOCK))
    vec = ragged_vector(op)  # (rows_lower.RAGGED; 0: the default's loads)
    set_min_ctas(op, cell_setting(MIN_CTAS, MIN_CTAS_MEASURED, op))
    lower_rows(op, rewriter, target, ragged_plan(p, vec, 0) if vec else p)


ROWS_STREAM = Variant(
    "bulkred.normalize_rows", "rows_stream", priority=10, predicates=row_predicates(None, ""), lower=lower_rows_stream,
)
