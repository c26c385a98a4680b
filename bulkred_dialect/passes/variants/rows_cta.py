"""bulkred.normalize_rows -> rows_cta (priority 20): a CTA per row, the row held in
registers.

The CTA's threads (:func:`block_for`: the fewest of 128, 256, 512, 1024 that keep at most
``rows_common.MAX_VALUES`` float32 values per thread; a function of N and the element
type only) each load their vectors of the row once; the statistics are combined by a
warp butterfly and the warp partials through shared memory (``bar.sync``, broadcast to
every thread); each thread then writes its vectors of y. The CTAs take rows ``c, c + C,
...``. One read of x, one write of y. Rows up to :data:`MAX_N`.

Spec: docs/rows.md; PTX ISA ld.global.nc (vectors), shfl.sync, bar.sync.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile.rows import NormalizeRowsOp
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants import rows_common
from bulkred_dialect.passes.variants.rows_common import (
    BF16,
    F32,
    cell_setting,
    half_as_bfloat16,
    items_for,
    plan,
    row_predicates,
    set_min_ctas,
    vector_of,
)
from bulkred_dialect.passes.variants.rows_lower import lower_rows, ragged_items, ragged_plan, ragged_vector

MIN_BLOCK = 128
MAX_BLOCK = 1024

MIN_BLOCK_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = half_as_bfloat16({
    # (the eighth session's --set quack32 on an H200: add_rms_norm 4096 at Quack's 64 threads of 64 values, a CTA a
    # row; CTAS_PER_SM_MEASURED's cells)
    ("add_rms_norm", BF16.name): ((4096, 4096, 64),),
    ("add_rms_norm", F32.name): ((4096, 4096, 64),),
    ("layer_norm", F32.name): ((1024, 1024, 64),),  # (--set quack32: 64 threads of 16 values, rows_warp.YIELD_MEASURED)
})
"""By (kind, element type name): (N from, N to, threads), the first range holding N (never
M): the CTA's threads :func:`block_for` starts from in place of :data:`MIN_BLOCK` (e.g. 64
threads of 65 bfloat16 values for cross_entropy's 4097, with :data:`VALUES_MEASURED` 128:
the row's reductions over twice the elements a thread; tools/probes/rows_ce.py ``--set
odd16``); none measured yet (float16 as bfloat16)."""

MAX_N = 16384
"""The longest row this variant takes (512 threads of 32 float32 values); longer rows go
to rows_bulk, rows_cluster or rows_stream (docs/rows.md)."""

CTAS_PER_SM: int | None = None
"""The grid's CTAs per multiprocessor at most (the rows shared among them; no row's
arithmetic depends on it); None: :data:`CTAS_PER_SM_MEASURED`, else 2048 threads' worth
(the default). The probe's setting (tools/probes/rows_forward.py --set pipeline,
tools/probes/rows_ce.py)."""

CTAS_PER_SM_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = half_as_bfloat16({
    # tools/probes/rows_ce.py --set odd16 on an H200, the eighth session of 2026-11-29
    # (docs/rows_probes_h200_run8.log), x copy: cross_entropy bfloat16 4097, 128 threads of 33 values
    # (VALUES_MEASURED), the maximum first (rows_common.EXP_MAX_FIRST_MEASURED), .minnctapersm 8 and a grid of
    # 8 CTAs a multiprocessor: 0.629 -> 0.785 (without the grid 0.765, 256 threads max first 0.714);
    # float16 as bfloat16 0.624 -> 0.788 (its best, 32 threads a row, 0.790: within the spread)
    ("cross_entropy", BF16.name): ((4097, 4097, 8),),
    # tools/probes/rows_forward.py --set quack16 on an H200, the eighth session (docs/rows_probes_h200_run8.log),
    # x copy, median of 5 rounds: a CTA a row, a grid of M (1 << 20: no cap; the hardware refills the
    # multiprocessors, as Quack's grid), unpipelined (rows_common.FORWARD_MEASURED), one barrier a reduction
    # (CTA_ONE_BARRIER_MEASURED), rms_norm's 16-byte vectors (WIDE_BF16_MEASURED): bfloat16 rms_norm 4096
    # 0.922 -> 0.993, 16384 0.927 -> 0.987; softmax 16384 0.921 -> 0.982; layer_norm 16384 with Quack's
    # 128 threads of 128 values (VALUES_MEASURED) and .minnctapersm 3 (MIN_CTAS_MEASURED) 0.916 -> 0.965
    ("rms_norm", BF16.name): ((4096, 4096, 1 << 20), (16384, 16384, 1 << 20)),
    ("softmax", BF16.name): ((4096, 4096, 1 << 20), (16384, 16384, 1 << 20)),  # (4096: 0.900 -> 0.971)
    ("layer_norm", BF16.name): ((16384, 16384, 1 << 20),),
    # (the same session's --set quack32, the same family, x copy: the dispatch's -> a CTA a row; with
    # rows_common's FORWARD_MEASURED / CTA_ONE_BARRIER_MEASURED / WIDE_BF16_MEASURED entries and this file's
    # MIN_CTAS / MIN_BLOCK / VALUES entries of the cell) bfloat16 log_softmax 4096 0.899 -> 0.984, 16384 0.923 ->
    # 0.976 (.minnctapersm 2); add_rms_norm 4096 0.930 -> 0.972 (Quack's 64 threads of 64 values), 16384 0.923
    # -> 0.973; float32 softmax 16384 0.927 -> 0.983,
    # log_softmax 16384 0.930 -> 0.975 (.minnctapersm 2), rms_norm 16384 0.938 -> 0.975 (.minnctapersm 2),
    # layer_norm 16384 0.903 -> 0.979, add_rms_norm 4096 0.914 -> 0.974 (64 threads of 64), 16384 0.941 -> 0.986.
    # Not cross_entropy (bfloat16 4096 0.982 -> 1.015 for its losses alone): its in-kernel mean's tail sums a
    # partial a CTA, and a grid of M CTAs made the benchmark's mean 0.93 -> 0.53 of copy
    ("log_softmax", BF16.name): ((4096, 4096, 1 << 20), (16384, 16384, 1 << 20)),
    ("add_rms_norm", BF16.name): ((4096, 4096, 1 << 20), (16384, 16384, 1 << 20)),
    # (--set quack32: float32 1024, which rows_warp leaves to rows_cta, rows_warp.YIELD_MEASURED: a CTA of 128 (8
    # values a thread; layer_norm 64 of 16, MIN_BLOCK_MEASURED) a row in a grid of M, unpipelined, one barrier)
    ("softmax", F32.name): ((1024, 1024, 1 << 20), (16384, 16384, 1 << 20)),
    ("log_softmax", F32.name): ((1024, 1024, 1 << 20), (16384, 16384, 1 << 20)),
    ("rms_norm", F32.name): ((1024, 1024, 1 << 20), (16384, 16384, 1 << 20)),
    ("layer_norm", F32.name): ((1024, 1024, 1 << 20), (16384, 16384, 1 << 20)),
    ("add_rms_norm", F32.name): ((1024, 1024, 1 << 20), (4096, 4096, 1 << 20), (16384, 16384, 1 << 20)),
})
"""By (kind, element type name): (N from, N to, CTAs), the first range holding N (never M):
a grid no larger than the CTAs resident at once (36 registers a thread hold 6 CTAs of 256
threads a multiprocessor, not 8); float16 as bfloat16."""


VALUES: int | None = None
"""The float32 values a thread holds at most, for every kind (None: :data:`VALUES_MEASURED`,
else ``rows_common.max_values``): fewer values, more threads per row (more loads in
flight per row, fewer registers a thread). The probe's setting
(tools/probes/rows_forward_norms.py)."""

VALUES_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = {
    # tools/probes/rows_forward_norms.py on an H200, 2026-11-29: layer_norm bfloat16 16384 with LAYER_NORM_FAST
    # 0.899 -> 0.918 of copy at 16 values (1024 threads)
    # (the eighth session's --set quack16: layer_norm bfloat16 16384 at Quack's 128 threads of 128 values,
    # CTAS_PER_SM_MEASURED's row; 8193 to 16383 keep 16)
    ("layer_norm", BF16.name): ((16384, 16384, 128), (8193, 16384, 16)),
    # (--set words, 2026-11-29, sixth session) cross_entropy bfloat16 16384 with rows_common.EXP_MAX_FIRST at 64
    # values (256 threads, 117 registers, no spill): 0.899 -> 0.967 of copy
    ("cross_entropy", BF16.name): ((16384, 16384, 64),
                                   # (rows_ce.py --set odd16, eighth session: CTAS_PER_SM_MEASURED's row)
                                   (4097, 4097, 64)),
    # (the eighth session's --set quack32: add_rms_norm 4096 at Quack's 64 threads of 64 values, MIN_BLOCK_MEASURED)
    ("add_rms_norm", BF16.name): ((4096, 4096, 64),),
    ("add_rms_norm", F32.name): ((4096, 4096, 64),),
}
"""By (kind, element type name): (N from, N to, values per thread at most), the first range
holding N (a function of N, the kind and the type: never M); none measured yet."""
VALUES_MEASURED = half_as_bfloat16(VALUES_MEASURED)  # float16 as bfloat16 where unmeasured


def values_for(op: NormalizeRowsOp) -> int:
    """The float32 values a thread of ``op``'s CTA holds at most (:data:`VALUES`)."""
    return cell_setting(VALUES, VALUES_MEASURED, op, rows_common.max_values(op))


def block_for(op: NormalizeRowsOp, vec: int = 0) -> int:
    """The CTA's threads: the fewest (a power of two from :data:`MIN_BLOCK`, or
    :data:`MIN_BLOCK_MEASURED`'s) that hold
    the row with at most :func:`values_for` values per thread (``vec``: the rows read by
    vectors of ``vec``, rows_lower.RAGGED)."""
    block = cell_setting(None, MIN_BLOCK_MEASURED, op, MIN_BLOCK)
    per = max(1, values_for(op) // (vec or vector_of(op)))
    while block < MAX_BLOCK and (ragged_items(op, block, vec) if vec else items_for(op, block)) > per:
        block *= 2
    return block


MIN_CTAS: int | None = None
"""CTAs a multiprocessor must hold at once (``.minnctapersm``: ptxas keeps the registers
per thread low enough, e.g. layer_norm's float32 16384 at 128 registers holds one CTA of
512 threads, one row in flight a multiprocessor); None: :data:`MIN_CTAS_MEASURED`, else
no bound (the default). The probe's setting (tools/probes/rows_forward_norms.py)."""

MIN_CTAS_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = {
    # (the same run) layer_norm float32 16384 with LAYER_NORM_FAST 0.880 -> 0.926 of copy at 2 CTAs (64 registers,
    # no spill); cross_entropy bfloat16 16384 on rows_cta with FAST_EXP 0.708 -> 0.858 (rows_bulk, before: 0.716)
    ("layer_norm", F32.name): ((8193, 16384, 2),),
    ("layer_norm", BF16.name): ((16384, 16384, 3),),  # (the eighth session's quack16: CTAS_PER_SM_MEASURED's row)
    ("cross_entropy", BF16.name): ((4096, 4096, 7), (4097, 4097, 8), (8193, 16384, 2)),  # (4096, FAST_EXP's final form: 0.923 -> 0.939)
    # (tools/probes/rows_ce.py --set odd, 2026-11-29, sixth session) cross_entropy 4097 at 8 CTAs of 256 (its grid's
    # 8 a multiprocessor all resident, one wave; 28 to 32 registers, no spill): float32 0.922 -> 0.979, bfloat16
    # 0.589 -> 0.632, float16 0.602 -> 0.630 (staged in shared memory, RAGGED or split there slower: 0.40 to 0.60)
    ("cross_entropy", F32.name): ((4097, 4097, 8),),
    # (the eighth session's --set quack32: with CTAS_PER_SM_MEASURED's a CTA a row, 2 CTAs of 512 threads a
    # multiprocessor)
    ("log_softmax", BF16.name): ((16384, 16384, 2),),
    ("log_softmax", F32.name): ((16384, 16384, 2),),
    ("rms_norm", F32.name): ((16384, 16384, 2),),
}
"""By (kind, element type name): (N from, N to, CTAs), the first range holding N (never
M); none measured yet."""
MIN_CTAS_MEASURED = half_as_bfloat16(MIN_CTAS_MEASURED)  # float16 as bfloat16 where unmeasured


def min_ctas_for(op: NormalizeRowsOp) -> int | None:
    """The ``.minnctapersm`` of ``op``'s kernel (:data:`MIN_CTAS`), or None."""
    return cell_setting(MIN_CTAS, MIN_CTAS_MEASURED, op)


def lower_rows_cta(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, NormalizeRowsOp)
    vec = ragged_vector(op)  # (0: the default's loads)
    block = block_for(op, vec)
    ctas = cell_setting(CTAS_PER_SM, CTAS_PER_SM_MEASURED, op) or max(1, 2048 // block)
    p = plan(op, target, group=block, block=block, items=items_for(op, block), ctas_per_sm=ctas)
    if vec:
        p = ragged_plan(p, vec, ragged_items(op, block, vec))
    set_min_ctas(op, min_ctas_for(op))
    lower_rows(op, rewriter, target, p)


ROWS_CTA = Variant(
    "bulkred.normalize_rows", "rows_cta", priority=20,
    predicates=row_predicates(rows_common.cta_limit(MAX_N), f"N <= {MAX_N} ({rows_common.NORM_BACKWARD_CTA_N} for a norm's backward)"),
    lower=lower_rows_cta,
)
