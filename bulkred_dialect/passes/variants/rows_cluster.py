"""bulkred.normalize_rows -> rows_cluster (priority 15): a cluster of CTAs per row, the
row held in the registers of its CTAs, for rows longer than one CTA holds.

A cluster of :func:`cluster_for` CTAs (2 to :data:`MAX_CLUSTER`, a power of two) takes a
row: CTA rank r holds the vectors ``[r * S, (r + 1) * S)`` of it (``S = K * T``: its
``T`` threads hold ``K`` vectors each, at most ``rows_common.MAX_VALUES`` float32
values). Each statistic is combined in the CTA (warp butterflies, warp partials through
shared memory), then pushed across the cluster (``rows_common._cluster_push``): thread 0
announces to its CTA's mbarrier the bytes the row's exchange will bring, lane k of warp 0
stores the CTA's partial into slot ``rank`` of CTA k (``st.async`` through ``mapa``,
completing on CTA k's mbarrier), and every thread waits for its own mbarrier's phase and
combines its own slots in rank order, so every CTA holds the same bits. No cluster barrier
per row (one before the rows loop, for the mbarriers' initialization, and one at the
end); two slot sets and mbarriers per statistic, by the parity of the CTA's count of rows
(softmax's maximum and sum are one (m, s) pair; layer_norm's mean and variance two). One
read of x, one write of y.

The configuration (cluster size, threads, vectors per thread) is a function of N and the
element type only. It takes the forward rows of :data:`MEASURED` (where it was measured
faster than the other variants) and a norm's backward. Spec: docs/rows.md; PTX ISA mapa,
st.async, mbarrier.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.target import CLUSTER_LAUNCH, Target
from bulkred_dialect.ops.tile.rows import CE_KINDS, NormalizeRowsOp, NormKind
from bulkred_dialect.passes.predicates import Predicate
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants import rows_common
from bulkred_dialect.passes.variants.rows_common import F32, MAX_VALUES, dtype_of, plan, row_predicates, vector_of
from bulkred_dialect.passes.variants.rows_lower import lower_rows

SLICE = 8192
"""Elements of a row a CTA of the cluster aims to hold (256 threads of 32 values)."""
SLICE_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = rows_common.half_as_bfloat16({})
"""By (kind, element type name): (N from, N to, elements a CTA aims to hold), the first range holding
N (never M), in place of :data:`SLICE`: more CTAs a row (a cluster of twice as many, each half the
row's share). Empty until measured on an H200 (tools/probes/rows_bwd_sweep.py, which patches
:data:`SLICE` for a cell with no entry)."""
MIN_BLOCK = 128
MAX_BLOCK = 512
MAX_CLUSTER = 16
"""The largest portable cluster (16 needs the non-portable size: next)."""

MAX_N = MAX_CLUSTER * MAX_BLOCK * MAX_VALUES

CTAS_PER_SM: int | None = None
"""The grid's CTAs per multiprocessor (None: as many as its threads allow, 2048 / T; a
large number: a cluster per row)."""

MEASURED: dict[str, int] = {F32.name: 65536}
"""Per element type, the longest forward row where a cluster was measured faster than the
other variants on an H200 (docs/rows.md): float32 rows of up to 65536 (1.29x rows_stream
at 65536 with the pull exchange); elsewhere rows_bulk or rows_stream."""

LOSS_ROWS: dict[str, int] = {F32.name: 16384}
"""cross_entropy's forward and backward per element type: the longest row a cluster takes, in place of
:data:`MEASURED` (float32: none past rows_cta's rows, which rows_cta takes first; longer
ones go to rows_stream, which reads cross_entropy's row once). Measured on an
H200 (tools/probes/rows_ce.py, 2026-11-29, the mean, x the copy kernel): float32 N = 65536
rows_cluster 0.900, rows_stream 1.041; 50257 0.784 against 0.919 (1.003 with
rows_lower.RAGGED). The backward (tools/probes/rows_backward.py --set ce, the seventh
session): float32 65536 rows_cluster 0.890, rows_stream 0.936 (0.946 with
rows_backward.CE_FAST and CE_TARGET_APART)."""


def cluster_for(op: NormalizeRowsOp) -> tuple[int, int, int]:
    """(CTAs per cluster, threads per CTA, vectors per thread) for ``op``'s N and type."""
    vec = vector_of(op)
    vectors = op.cols // vec
    per = max(1, rows_common.max_values(op) // vec)
    c, slice_ = 2, rows_common.cell_setting(None, SLICE_MEASURED, op, SLICE)
    while c < MAX_CLUSTER and c * slice_ < op.cols:
        c *= 2
    share = -(-vectors // c)
    block = MIN_BLOCK
    while block < MAX_BLOCK and -(-share // block) > per:
        block *= 2
    return c, block, -(-share // block)


def _fits(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    c, block, items = cluster_for(op)
    ok = items * vector_of(op) <= rows_common.max_values(op)
    return ok, f"N = {op.cols}: {c} CTAs of {block} threads, {items * vector_of(op)} values each"


def _pays(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    d = dtype_of(op)
    if op.norm_kind in rows_common.NORM_BACKWARD_KINDS:  # (its column sums spread over the ranks: rows_backward)
        return rows_common.cluster_takes_norm_backward(op), f"{op.norm_kind.value}, {d.name}, N = {op.cols}"
    if op.norm_kind == NormKind.ADD_RMS_NORM and op.cols <= rows_common.ADD_RMS_CLUSTER_N.get(d.name, 0):  # (rows_common)
        return True, f"add_rms_norm, {d.name}, N = {op.cols}"
    if op.norm_kind in CE_KINDS:  # (the forward and the backward alike: LOSS_ROWS)
        return op.cols <= LOSS_ROWS.get(d.name, MEASURED.get(d.name, 0)), f"{op.norm_kind.value}, {d.name}, N = {op.cols}"
    return op.cols <= MEASURED.get(d.name, 0), f"{d.name}, N = {op.cols}"


def lower_rows_cluster(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, NormalizeRowsOp)
    c, block, items = cluster_for(op)
    per_sm = CTAS_PER_SM if CTAS_PER_SM is not None else max(1, 2048 // block)
    p = plan(op, target, group=block, block=block, items=items, ctas_per_sm=per_sm, cluster=c)
    lower_rows(op, rewriter, target, p)


ROWS_CLUSTER = Variant(
    "bulkred.normalize_rows", "rows_cluster", priority=15,
    predicates=[
        *row_predicates(None, ""),
        Predicate("target", lambda op, t: (CLUSTER_LAUNCH.satisfied_by(t), t.name), expected="sm_90 or newer (clusters)"),
        Predicate("row_in_cluster", _fits, expected=f"<= {MAX_VALUES} values per thread in {MAX_CLUSTER} CTAs of {MAX_BLOCK}"),
        Predicate("measured", _pays, expected="the rows measured faster (rows_cluster.MEASURED; cross_entropy: LOSS_ROWS), or a norm's backward"),
    ],
    lower=lower_rows_cluster,
)
