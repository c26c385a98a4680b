"""bulkred.normalize_rows -> rows_slices (priority 12): a norm's backward (rms_norm_backward,
layer_norm_backward) of rows too long for rows_cluster's registers, its dweight and
dbias partials in shared memory.

A cluster of :func:`cluster_for` CTAs takes a row; CTA rank r streams its slice of it
(the vectors ``[r * S, (r + 1) * S)``, S = N / V / C, the slices exact) twice: a first pass
sums ``g * xhat`` (and ``g``), combined over the CTA and the cluster as rows_cluster
combines its statistics; a second pass reads the slice again (from L2: the cluster's
CTAs hold a few hundred KiB of rows between them) and writes dx. Each thread adds its
columns' ``dy * xhat`` (and ``dy``) to the CTA's float32 column sums in shared memory
(``rows_backward.slice_accumulators``: no other thread touches them, no barrier), which
after the last row go to the unit's partial rows, summed rank by rank in a fixed order
(``rows_backward.finish_columns``). :data:`CTAS_PER_SM` CTAs per multiprocessor (the sums take up to
:data:`SHARED_BYTES` each). Where rows_stream adds every row into global partial rows (a
float32 read and write per element and output), this adds in shared memory.

The configuration (cluster size, threads) is a function of N and the element type only.
Spec: docs/rows.md; PTX ISA ld.shared / st.shared, barrier.cluster.
"""

from __future__ import annotations

from dataclasses import replace

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.target import CLUSTER_LAUNCH, Target
from bulkred_dialect.ops.tile.rows import NORM_BACKWARD_KINDS, SOFTMAX_BACKWARD_KINDS, NormalizeRowsOp
from bulkred_dialect.passes.predicates import Predicate
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants import rows_cluster
from bulkred_dialect.passes.variants.rows_common import plan, row_predicates, vector_of
from bulkred_dialect.passes.variants.rows_lower import lower_rows

BLOCK = 512
UNROLL = 4
SHARED_BYTES = 128 * 1024
"""The most shared memory a CTA's column sums take (its slice's columns x outputs x 4)."""
CTAS_PER_SM = 1
"""CTAs per multiprocessor, at most (the grid: this many per multiprocessor, in clusters);
softmax's and log_softmax's backward (no sums): 4."""
SOFTMAX = True
"""Whether softmax_backward and log_softmax_backward take rows_slices too (the slice's
sum of ``dy * y`` or of ``dy`` combined over the cluster, the second read of the slice
from L2) where rows_cluster does not: softmax_backward bfloat16 on an H200, 0.90 of copy
at 65536 and 0.84 at 262144, against rows_stream's 0.72 and 0.59
(tools/probes/rows_backward.py, docs/rows.md)."""


def _outputs(op: NormalizeRowsOp) -> int:
    return max(1, (op.dweight is not None) + (op.dbias is not None))


def cluster_for(op: NormalizeRowsOp) -> int:
    """The fewest CTAs (a power of two from 2) whose slices' column sums fit in
    :data:`SHARED_BYTES` each."""
    c = 2
    while c < rows_cluster.MAX_CLUSTER and op.cols * _outputs(op) * 4 > c * SHARED_BYTES:
        c *= 2
    return c


def _kind(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    return op.norm_kind in NORM_BACKWARD_KINDS or (SOFTMAX and op.norm_kind in SOFTMAX_BACKWARD_KINDS), op.norm_kind.value


def _fits(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    c, vec = cluster_for(op), vector_of(op)
    vectors = op.cols // vec
    width = op.cols // c
    ok = vectors % c == 0 and width * _outputs(op) * 4 <= SHARED_BYTES
    return ok, f"N = {op.cols}: {c} CTAs of {width} columns ({width * _outputs(op) * 4} bytes of sums)"


def lower_rows_slices(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, NormalizeRowsOp)
    c = cluster_for(op)
    per_sm = CTAS_PER_SM if op.norm_kind in NORM_BACKWARD_KINDS else 4
    p = plan(op, target, group=BLOCK, block=BLOCK, items=0, unroll=UNROLL, ctas_per_sm=per_sm, cluster=c)
    lower_rows(op, rewriter, target, replace(p, slice=p.vectors // c))


ROWS_SLICES = Variant(
    "bulkred.normalize_rows", "rows_slices", priority=12,
    predicates=[
        *row_predicates(None, ""),
        Predicate("kind", _kind, expected="rms_norm_backward or layer_norm_backward"),
        Predicate("target", lambda op, t: (CLUSTER_LAUNCH.satisfied_by(t), t.name), expected="sm_90 or newer (clusters)"),
        Predicate("slices", _fits, expected=f"N / V a multiple of the cluster's CTAs, <= {SHARED_BYTES} bytes of sums each"),
    ],
    lower=lower_rows_slices,
)
