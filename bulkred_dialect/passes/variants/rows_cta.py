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

from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, f32, i32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.kernel_attrs import GRID_ROWS_ATTR
from bulkred_dialect.ops.ptx.arith import AndOp, ArithType
from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.bulk import CpAsyncBulkSharedCtaGlobalOp
from bulkred_dialect.ops.ptx.control import CvtOp, CvtType, SelpType
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.ptx.sync import FenceProxyAsyncOp, MbarrierArriveExpectTxOp, MbarrierInitOp
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import enclosing_kernel
from bulkred_dialect.ops.tile.rows import NormalizeRowsOp
from bulkred_dialect.passes.elements import ld_type
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants import rows_common
from bulkred_dialect.passes.variants.grid_common import require_alignment, set_launch
from bulkred_dialect.passes.variants.kernel import emitter_at
from bulkred_dialect.passes.variants.rows_common import (
    BF16,
    F32,
    RowBuf,
    RowPlan,
    RowState,
    cell_setting,
    half_as_bfloat16,
    items_for,
    load_vec,
    plan,
    registers_row,
    row_predicates,
    set_min_ctas,
    setting_of,
    vector_of,
    wait_phase,
)
from bulkred_dialect.passes.variants import rows_lower
from bulkred_dialect.passes.variants.rows_lower import (
    LossRow,
    loss_vector,
    lower_rows,
    ragged_items,
    ragged_plan,
    ragged_vector,
    reduce_loss,
    rows_parameter,
)

MIN_BLOCK = 128
MAX_BLOCK = 1024

MAX_N = 16384
"""The longest row this variant takes (512 threads of 32 float32 values); longer rows go
to rows_bulk, rows_cluster or rows_stream (docs/rows.md)."""

CTAS_PER_SM: int | None = None
"""The grid's CTAs per multiprocessor at most (the rows shared among them; no row's
arithmetic depends on it); None: :data:`CTAS_PER_SM_MEASURED`, else 2048 threads' worth
(the default). The probe's setting (tools/probes/rows_forward.py --set pipeline,
tools/probes/rows_ce.py)."""

CTAS_PER_SM_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = half_as_bfloat16({})
"""By (kind, element type name): (N from, N to, CTAs), the first range holding N (never M):
a grid no larger than the CTAs resident at once (36 registers a thread hold 6 CTAs of 256
threads a multiprocessor, not 8); none measured yet (float16 as bfloat16)."""


VALUES: int | None = None
"""The float32 values a thread holds at most, for every kind (None: :data:`VALUES_MEASURED`,
else ``rows_common.max_values``): fewer values, more threads per row (more loads in
flight per row, fewer registers a thread). The probe's setting
(tools/probes/rows_forward_norms.py)."""

VALUES_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = {
    # tools/probes/rows_forward_norms.py on an H200, 2026-11-29: layer_norm bfloat16 16384 with LAYER_NORM_FAST
    # 0.899 -> 0.918 of copy at 16 values (1024 threads)
    ("layer_norm", BF16.name): ((8193, 16384, 16),),
    # (--set words, 2026-11-29, sixth session) cross_entropy bfloat16 16384 with rows_common.EXP_MAX_FIRST at 64
    # values (256 threads, 117 registers, no spill): 0.899 -> 0.967 of copy
    ("cross_entropy", BF16.name): ((16384, 16384, 64),),
}
"""By (kind, element type name): (N from, N to, values per thread at most), the first range
holding N (a function of N, the kind and the type: never M); none measured yet."""
VALUES_MEASURED = half_as_bfloat16(VALUES_MEASURED)  # float16 as bfloat16 where unmeasured


def values_for(op: NormalizeRowsOp) -> int:
    """The float32 values a thread of ``op``'s CTA holds at most (:data:`VALUES`)."""
    return cell_setting(VALUES, VALUES_MEASURED, op, rows_common.max_values(op))


def block_for(op: NormalizeRowsOp, vec: int = 0) -> int:
    """The CTA's threads: the fewest (a power of two from :data:`MIN_BLOCK`) that hold
    the row with at most :func:`values_for` values per thread (``vec``: the rows read by
    vectors of ``vec``, rows_lower.RAGGED)."""
    block = MIN_BLOCK
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
    ("cross_entropy", BF16.name): ((4096, 4096, 7), (4097, 4097, 8), (8193, 16384, 2)),  # (4096, FAST_EXP's final form: 0.923 -> 0.939)
    # (tools/probes/rows_ce.py --set odd, 2026-11-29, sixth session) cross_entropy 4097 at 8 CTAs of 256 (its grid's
    # 8 a multiprocessor all resident, one wave; 28 to 32 registers, no spill): float32 0.922 -> 0.979, bfloat16
    # 0.589 -> 0.632, float16 0.602 -> 0.630 (staged in shared memory, RAGGED or split there slower: 0.40 to 0.60)
    ("cross_entropy", F32.name): ((4097, 4097, 8),),
}
"""By (kind, element type name): (N from, N to, CTAs), the first range holding N (never
M); none measured yet."""
MIN_CTAS_MEASURED = half_as_bfloat16(MIN_CTAS_MEASURED)  # float16 as bfloat16 where unmeasured


def min_ctas_for(op: NormalizeRowsOp) -> int | None:
    """The ``.minnctapersm`` of ``op``'s kernel (:data:`MIN_CTAS`), or None."""
    return cell_setting(MIN_CTAS, MIN_CTAS_MEASURED, op)


STAGED: bool | None = None
"""cross_entropy's rows that the default reads an element a load (odd N: 4097; not with
label smoothing; rows_lower.loss_vector): each CTA copies its rows' aligned spans into
shared memory (:func:`lower_rows_staged`), the next row's while this one is reduced, and
each thread reads its values there by element index: the default's (elements ``t, t + G,
...``, one ``ld.shared`` each, a warp's 64 consecutive bytes: no bank conflict), so the
default's bits; with :data:`STAGED_VECTORS` RAGGED's vectors (and RAGGED's bits). No
register holds a load in flight, and the copy of the next row overlaps this row's
reduction (the default's registers_row does not pipeline a row with a partial vector).
None: where :data:`STAGED_MEASURED` says; True or False: everywhere or nowhere (the probe's
and the tests' settings, tools/probes/rows_ce.py)."""

STAGED_MEASURED: dict[str, tuple[tuple[int, int], ...]] = half_as_bfloat16({})
""":data:`STAGED` by element type name (``BF16.name``...): the ranges (N from, N to) where
it is on; none measured yet (float16 as bfloat16)."""

STAGED_VECTORS: bool = False
""":data:`STAGED` with rows_lower.RAGGED's assignment: thread t's vectors of 4 elements
``t, t + G, ...`` (fewer threads or values a thread; four ``ld.shared`` a vector, two
bank-conflicted wavefronts each) and RAGGED's bits. Off: the default's assignment."""

CHUNK = 16384
"""Bytes of one lane's ``cp.async.bulk`` (:data:`STAGED`; rows_bulk's chunk)."""

SHARED_PER_SM = 227 * 1024
"""Shared memory a multiprocessor gives its CTAs (H100/H200): :data:`STAGED`'s CTAs per
multiprocessor at most (the grid no larger than what is resident at once)."""


def span_bytes(n: int, nbytes: int, vec: int) -> int:
    """A span buffer's bytes (:data:`STAGED`): a row of ``n`` elements of ``nbytes`` from
    up to 15 bytes into its first 16-byte chunk, and the last vector's reads past N."""
    return -(-(n * nbytes + 16 + vec * nbytes) // 16) * 16


def lower_rows_cta(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, NormalizeRowsOp)
    d = rows_common.dtype_of(op)
    staged = setting_of(STAGED, STAGED_MEASURED, d.name, op.cols) and loss_vector(op) > 0 and op.cols * d.bytes >= 32
    vec = (loss_vector(op) if STAGED_VECTORS else 0) if staged else ragged_vector(op)  # (0: the default's loads)
    block = block_for(op, vec)
    ctas = cell_setting(CTAS_PER_SM, CTAS_PER_SM_MEASURED, op) or max(1, 2048 // block)
    if staged:  # (two span buffers a CTA)
        ctas = min(ctas, max(1, SHARED_PER_SM // (2 * span_bytes(op.cols, d.bytes, vec or 1) + 1024)))
    p = plan(op, target, group=block, block=block, items=items_for(op, block), ctas_per_sm=ctas)
    if vec:
        p = ragged_plan(p, vec, ragged_items(op, block, vec))
    set_min_ctas(op, min_ctas_for(op))
    if staged:
        lower_rows_staged(op, rewriter, p)
        return
    lower_rows(op, rewriter, target, p)


@dataclass
class SpanBuf(RowBuf):
    """x's row staged in shared memory (:data:`STAGED`): ``base`` is the thread's first
    vector's first element there (shared, 2-byte aligned at worst); vector ``j0 + k`` holds
    the elements ``[V (j0 + k), V (j0 + k) + V)`` (V = 1: the default's), each read alone
    (``ld.shared``). The span
    ends at the row's last 16-byte boundary: the elements from ``cut`` on (the last ``15 /
    bytes`` at most) are read from global memory, an element past N the neutral -inf."""

    row_x: SSAValue | None = None  # the row's first element in global memory
    j0: SSAValue | None = None  # the thread's first vector (i64)
    group: int = 0
    n: int = 0
    cut: SSAValue | None = None  # the first element not in shared memory (i64)

    def load(self, e: Emitter, first: SSAValue | int, vec: int, extra: int = 0, *, nc: bool = True) -> list[SSAValue]:
        assert isinstance(first, int) and self.row_x is not None and self.j0 is not None and self.cut is not None
        d, rel = self.dtype, first + extra
        vals = [load_vec(e, d, self.base, (rel * vec + i) * d.bytes, 1, nc=False)[0] for i in range(vec)]
        if (rel + self.group) * vec - 1 < self.n - 15 // d.bytes:  # (no thread's vector reaches the span's end)
            return vals
        start = e.mul_i(e.add_i(self.j0, rel), vec)
        out = []
        for i, v in enumerate(vals):
            idx = e.add_i(start, i) if i else start
            tail = e.and_pred(e.cmp("sge", idx, self.cut), e.cmp("slt", idx, e.const(self.n, i64)))
            past = e.if_(tail, lambda c, idx=idx: load_vec(c, d, c.ptr_add(self.row_x, c.mul_i(idx, d.bytes)), 0, 1),
                         lambda c: [c.const(float("-inf"), f32)], [f32])[0]
            out.append(e.selp(SelpType.F32, v, past, e.cmp("slt", idx, self.cut)))
        return out


def lower_rows_staged(op: NormalizeRowsOp, rewriter: PatternRewriter, p: RowPlan) -> None:
    """:data:`STAGED`'s kernel: a persistent loop of the CTA's rows ``c, c + C, ...``, two
    span buffers; per row a CTA barrier (every thread done with the buffer of the row
    before), the copy of the CTA's next row into the other buffer (thread 0 announces its
    bytes to that buffer's mbarrier, lanes of warp 0 copy :data:`CHUNK` bytes each), the
    row's target read, the wait for this row's buffer, then rows_common.registers_row from
    :class:`SpanBuf`; the loss reduction after the loop (rows_lower.reduce_loss)."""
    kernel = enclosing_kernel(op)
    assert kernel is not None and p.cluster == 1 and p.group == p.block
    set_launch(kernel, [p.ctas], [p.block], [1])
    m_arg = rows_parameter(kernel) if p.m is None else None
    e = emitter_at(op)
    d, vec = p.dtype, p.vec
    span = span_bytes(p.n, d.bytes, vec)
    chunks = -(-span // CHUNK)
    tid = e.sreg(SpecialRegister.TID_X)
    buf = e.shared([2 * span // 4], f32, "row_span")
    loaded = e.shared([2], i64, "row_span_loaded")

    totals = None  # rows_lower.LOSS_TAIL_SHORT: the CTA's (loss sum, kept rows) in shared memory (rows_lower.LossRow)
    if rows_lower.LOSS_TAIL_SHORT and rows_lower.LOSS_PARTIALS and op.reduced is not None:
        totals = e.shared([2], f32, "loss_totals_short")

    def init(b: Emitter) -> list[SSAValue]:
        for k in range(2):
            b.emit(MbarrierInitOp(b.ptr_add(loaded, 8 * k), b.const(1)))
        for k in range(2 if totals is not None else 0):
            b.st(ld_type(F32), totals, b.const(0.0, f32), 4 * k)
        return []

    e.if_(e.cmp("eq", tid, 0), init)
    e.bar_sync()
    x0 = e.ptr(op.x, StateSpace.GLOBAL)
    require_alignment(x0, 16)  # (the spans' 16-byte boundaries are x's)
    lane_chunk = e.mul_i(tid, CHUNK)
    sw = e.wide(tid)
    mine = e.mul_i(tid, vec * d.bytes)  # the thread's first vector in the row (bytes, shared)

    def bounds(b: Emitter, row: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
        """(the row's span's first byte from x's, its bytes (i32), the row's first byte in it (i32))."""
        first = b.mul_i(row, p.sx * d.bytes)
        lo = b.value(AndOp(ArithType.B64, first, b.const(-16, i64)))
        hi = b.value(AndOp(ArithType.B64, b.add_i(first, p.n * d.bytes), b.const(-16, i64)))
        size = b.value(CvtOp(CvtType.U32, CvtType.U64, b.sub_i(hi, lo), i32))
        off = b.and_b32(b.value(CvtOp(CvtType.U32, CvtType.U64, first, i32)), 15)
        return lo, size, off

    def issue(b: Emitter, row: SSAValue, which: SSAValue) -> None:
        """The copy of ``row``'s span into buffer ``which``."""
        lo, size, _ = bounds(b, row)
        mbar = b.ptr_add(loaded, b.mul_i(which, 8))
        dst = b.ptr_add(buf, b.mul_i(which, span))

        def announce(c: Emitter) -> list[SSAValue]:
            c.emit(FenceProxyAsyncOp(StateSpace.SHARED_CTA))  # (the buffer's earlier reads before the copy's writes)
            c.emit(MbarrierArriveExpectTxOp(mbar, size, sink=True))
            return []

        b.if_(b.cmp("eq", tid, 0), announce)
        left = b.sub_i(size, lane_chunk)  # (this lane's bytes and the ones after)

        def copy(c: Emitter) -> list[SSAValue]:
            src = c.ptr_add(x0, c.add_i(lo, c.wide(lane_chunk)))
            c.emit(CpAsyncBulkSharedCtaGlobalOp(c.ptr_add(dst, lane_chunk), src, c.min_s32(left, CHUNK), mbar))
            return []

        b.if_(b.and_pred(b.cmp("ult", tid, chunks), b.cmp("sgt", left, 0)), copy)

    units = p.ctas
    if p.m is None:
        stride = e.wide(e.sreg(SpecialRegister.NCTAID_X))
        rows = m_arg
        kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([IntegerAttr(1, i64), IntegerAttr(units, i64)])
    else:
        stride, rows = e.const(units, i64), e.const(p.m, i64)
    assert rows is not None
    start = e.wide(e.sreg(SpecialRegister.CTAID_X))

    def row_body(b: Emitter, row: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        (count,) = carried
        b.bar_sync()  # every thread has read the buffer of the CTA's row before
        which = b.and_b32(count, 1)
        after = b.add_i(row, stride)
        b.if_(b.cmp("slt", after, rows), lambda c: issue(c, after, c.and_b32(c.add_i(count, 1), 1)) or [])
        row_x = b.ptr_add(x0, b.mul_i(row, p.sx * d.bytes))
        _, size, off = bounds(b, row)
        cut = b.wide(b.shr_u32(b.sub_i(size, off), d.bytes.bit_length() - 1))  # (size - off) / bytes
        here = b.ptr_add(buf, b.add_i(b.add_i(b.mul_i(which, span), off), mine))
        x = SpanBuf(d, here, row_x, sw, p.group, p.n, cut)
        r = RowState(p, op, tid, tid, x, None, None, None, row_x, sw=sw) if totals is None else \
            LossRow(p, op, tid, tid, x, None, None, None, row_x, sw=sw, totals=totals)
        r.target = r.target_inputs(b, row)  # (while the span is copied)
        wait_phase(b, b.ptr_add(loaded, b.mul_i(which, 8)), b.and_b32(b.shr_u32(count, 1), 1))
        registers_row(r, b, row)
        return [b.add_i(count, 1)]

    e.if_(e.cmp("slt", start, rows), lambda b: issue(b, start, b.const(0)) or [])
    e.for_(start, rows, stride, [e.const(0)], row_body)
    reduce_loss(e, p, op, tid, rows, totals)
    rewriter.erase(op)


ROWS_CTA = Variant(
    "bulkred.normalize_rows", "rows_cta", priority=20,
    predicates=row_predicates(rows_common.cta_limit(MAX_N), f"N <= {MAX_N} ({rows_common.NORM_BACKWARD_CTA_N} for a norm's backward)"),
    lower=lower_rows_cta,
)
