"""The lowering of ``bulkred.normalize_rows`` that every rows variant configures
(``rows_warp``, ``rows_cta``, ``rows_cluster``, ``rows_stream``; docs/rows.md):
:func:`lower_rows` writes the launch, the loop over rows and per row the forward body
(``rows_common``) or the backward one (``rows_backward``), then a norm's backward's
column sums."""

from __future__ import annotations


from collections.abc import Callable
from dataclasses import dataclass, fields, replace

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DYNAMIC_INDEX, ArrayAttr, FunctionType, IntegerAttr, MemRefType, f32, i32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.dtypes import of_ir
from bulkred_dialect.ops.kernel_attrs import DIMS_ATTR, GRID_ROWS_ATTR
from bulkred_dialect.ops.ptx.atom import AtomOp, AtomOpKind, AtomType, FenceOp, FenceSem, MemScope
from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.arith import AndOp, ArithType, MinOp, OrOp, ShlOp, ShrOp
from bulkred_dialect.ops.ptx.control import CvtOp, CvtType, SelpType
from bulkred_dialect.ops.ptx.memory import LdStType, MovOp
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.ptx.st_async import StAsyncOp, StAsyncType
from bulkred_dialect.ops.ptx.sync import (
    BarrierClusterArriveOp,
    BarrierClusterWaitOp,
    ClusterArriveSem,
    FenceMbarrierInitOp,
    MapaOp,
    MbarrierArriveExpectTxOp,
    MbarrierInitOp,
)
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceKind, enclosing_kernel
from bulkred_dialect.ops.tile.rows import (
    GRAD_ROWS_KINDS,
    NORM_BACKWARD_KINDS,
    SOFTMAX_BACKWARD_KINDS,
    NormalizeRowsOp,
    NormKind,
    row_stride,
)
from bulkred_dialect.passes.elements import ELEMS, ld_type
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.variants.grid_common import add_workspace, set_launch
from bulkred_dialect.passes.variants.kernel import cta_reduce_state, emitter_at, warp_reduce_state
from bulkred_dialect.passes.variants.rows_backward import (
    ce_backward,
    ColumnSums,
    finish_columns,
    row_ticket,
    column_partial_row,
    registers_backward,
    registers_norm_backward,
    stream_backward,
    stream_norm_backward,
    write_column_partials,
    first_pass,
    overlapped,
    overlapped_pass,
    pipelined,
    prefetch_norm_row,
    prefetch_types,
    second_pass,
    shared_columns,
    slice_accumulators,
    write_slice_partials,
)
from bulkred_dialect.passes.variants import rows_ce_flat, rows_common
from bulkred_dialect.passes.variants.rows_common import (
    setting_of,
    PairSums,
    AT,
    BF16,
    F16,
    F32,
    I64,
    ClusterExchange,
    RowPlan,
    f32_add,
    RowBuf,
    load_vec,
    packed_bf16,
    raw_load,
    registers_row,
    RowState,
    registers_rows_together,
    set_min_ctas,
    store_vec,
    stream_row,
    forward_pipelined,
    prefetch_row,
    prefetch_row_types,
    together,
    widen_raw,
    clamp_max,
    exp_shifted,
    f32_mul,
    fast_exp,
    half_as_bfloat16,
    visit_vectors,
    wait_phase,
)


RAGGED: bool | None = None
"""None: where :data:`RAGGED_MEASURED` says; True or False: everywhere or nowhere (the
probe's and the tests' settings). On, cross_entropy's rows of 16-bit or float32 logits
whose N or row stride is not a multiple of the vector (odd N: 4097, the vocabulary 50257;
x[:, :n] of an odd stride), which the default reads an element a load (``vector_of``: 1),
are read by vectors in rows_warp, rows_cta and rows_stream (:class:`RaggedBuf`): the
element-index partition of an aligned row (thread t's vectors t, t + G, ... hold elements
``[V j, V j + V)``), each vector assembled from the two aligned chunks it straddles (row
r starts ``a = r * stride mod V`` elements past a vector boundary; x's base must be
aligned to the vector, as the default's vector loads require: the launcher's alignment
check, else the copy path). The values a thread holds, in which registers, and so every
operation and its order, are those of element indices only: a row's bits do not depend
on a, hence not on its position in the batch, nor on M (tests/test_rows_ce_speed.py).
The row's last vectors (those whose chunks reach past the row's end) are read by
elements, an element past N the neutral -inf. Not with label smoothing (its sum of x
would take the -inf: the default there)."""

RAGGED_MEASURED: dict[str, tuple[tuple[int, int], ...]] = {
    BF16.name: ((16385, 1 << 31),), F16.name: ((16385, 1 << 31),), F32.name: ((16385, 1 << 31),),
}
""":data:`RAGGED` by element type name (``F32.name``...): the ranges (N from, N to) where it
is on. Measured on an H200 (tools/probes/rows_ce.py, 2026-11-29, cross_entropy's mean, x the
copy kernel): N = 50257 on rows_stream, bfloat16 0.571 -> 0.690, float16 0.513 -> 0.682,
float32 0.919 -> 1.003 (the dispatch's rows_cluster: 0.784; cross_entropy past rows_cta's
rows goes to rows_stream, rows_cluster.LOSS_ROWS). Not taken at 4097 on rows_cta (bfloat16
0.587 -> 0.369, float16 0.562 -> 0.348, float32 0.900 -> 0.682: twice the registers)."""


RAGGED_SPLIT: bool | None = None
"""With :data:`RAGGED` on, in rows_cta and rows_stream (a row a CTA): each row's offset
``a`` (its start modulo the vector, uniform over the CTA) picks one of ``V`` branches, each
the row's whole body with ``a`` known (:func:`_fixed_funnel`): a = 0 one aligned vector
load a vector, as the default's; otherwise the two chunks' elements taken by their index
(bfloat16: an element's half of its word, one operation, as an aligned vector's; float32 and
float16: the values themselves), without :func:`_funnel`'s selects and shifts (bfloat16
50257 on rows_stream: 12 SEL and about 16 shifts and ORs in the 182 SASS instructions of
a loop step of 16 elements; ptxas, sm_90a). Each branch holds element j's float32 value in
the same place and runs the same operations after the loads: the bits are RAGGED's
(tests/test_rows_ce_speed.py), so a row's do not depend on its position. ``V`` copies of
the row's body. None: where :data:`RAGGED_SPLIT_MEASURED` says; True or False: everywhere
or nowhere (the probe's and the tests' settings, tools/probes/rows_ce.py)."""

RAGGED_SPLIT_MEASURED: dict[str, tuple[tuple[int, int], ...]] = half_as_bfloat16({
    # tools/probes/rows_ce.py --set odd / vocab on an H200, 2026-11-29 (sixth session), x copy, dispatch -> this:
    # cross_entropy bfloat16 50257 0.689 -> 0.940 (float16 0.716 -> 0.944) with RAGGED_SPLIT, STEP_EXPS and
    # rows_stream's .minnctapersm 4; bfloat16 128256 0.899 -> 0.995 (float16 0.959 -> 1.002) with STEP_EXPS,
    # .minnctapersm 4 and FAST_EXP (rows_common.FAST_EXP_MEASURED); STEP_EXPS without the bound slower (0.737)
    BF16.name: ((16385, 1 << 31),),
})
""":data:`RAGGED_SPLIT` by element type name (``BF16.name``...): the ranges (N from, N to)
where it is on (with RAGGED on there; float16 as bfloat16)."""

STEP_EXPS: bool | None = None
"""cross_entropy without label smoothing on rows_stream (:func:`stream_loss_row`): each
thread's running (maximum, sum of exponentials) takes a loop step's ``UNROLL`` vectors at
once (their maximum with the running one, the sum rescaled once, their exps summed by a
tree, then added), instead of one vector at a time (a rescale, ``exp(m - m')``, every
``V`` elements: 4 of the 20 MUFU.EX2 of bfloat16 50257's loop step of 16 elements, each
with its range scaling); the rescale as :func:`rows_common.exp_shifted` (under
``FAST_EXP``, ``ex2.approx.ftz``). Bits change (the order of the sums), never with M nor
the row's position (the vectors of a step are fixed by element index). None: where
:data:`STEP_EXPS_MEASURED` says; True or False: everywhere or nowhere (the probe's and the
tests' settings, tools/probes/rows_ce.py)."""

STEP_EXPS_MEASURED: dict[str, tuple[tuple[int, int], ...]] = half_as_bfloat16({
    # (RAGGED_SPLIT_MEASURED's run; float32 50257 at 1.03 of copy already: not taken)
    BF16.name: ((16385, 1 << 31),),
})
""":data:`STEP_EXPS` by element type name: the ranges (N from, N to) where it is on (float16
as bfloat16; with rows_stream.MIN_CTAS_MEASURED's bound)."""


def loss_vector(op: NormalizeRowsOp) -> int:
    """The element type's vector (4) where ``op``'s rows can be read by vectors on element
    indices (:data:`RAGGED`), else 0: cross_entropy without label
    smoothing, x's rows not on the vector (``vector_of`` 1) and at least one vector long."""
    if op.norm_kind != NormKind.CROSS_ENTROPY or op.smoothing or rows_common.vector_of(op) > 1:
        return 0
    v = ELEMS[rows_common.dtype_of(op).name].vector
    return v if v > 1 and op.cols >= v else 0  # (the op takes float32, bfloat16 and float16 rows)


def ragged_vector(op: NormalizeRowsOp) -> int:
    """The elements per load of ``op``'s rows under :data:`RAGGED` (0: not taken, the
    default's ``vector_of``): :func:`loss_vector` where RAGGED is on."""
    v = loss_vector(op)
    on = RAGGED
    if on is None:
        on = any(lo <= op.cols <= hi for lo, hi in RAGGED_MEASURED.get(rows_common.dtype_of(op).name, ()))
    return v if on else 0


def ragged_items(op: NormalizeRowsOp, group: int, vec: int) -> int:
    """Vectors per thread to hold a row of ``ceil(N / vec)`` vectors in ``group`` threads."""
    return -(-(-(-op.cols // vec)) // group)


@dataclass(frozen=True)
class RaggedPlan(RowPlan):
    """A plan whose rows are read by :class:`RaggedBuf` (:data:`RAGGED`): ``ceil(N / V)``
    vectors a row, the last one partial."""

    @property
    def vectors(self) -> int:
        return -(-self.n // self.vec)


def ragged_plan(p: RowPlan, vec: int, items: int) -> RaggedPlan:
    """``p`` read by vectors of ``vec`` (:data:`RAGGED`), ``items`` of them a thread."""
    assert p.cluster == 1
    return RaggedPlan(**{**{f.name: getattr(p, f.name) for f in fields(p)}, "vec": vec, "items": items})


@dataclass
class RaggedBuf(RowBuf):
    """x's row read by vectors on element indices (:data:`RAGGED`): ``base`` is the row's
    aligned chunk 0 (the row's elements start ``a`` elements into it); vector j's elements
    ``[V j, V j + V)`` are the last ``V - a`` of chunk j and the first ``a`` of chunk j + 1.

    No branch around the vector loads (so that ptxas issues every load of the thread's
    vectors before the first is used): both chunks are read always, their index clamped to
    ``last``, the row's last chunk that ends inside it (no read past the row's end, nor
    before x's start); the elements from ``cut`` on (the ``(a + N) mod V`` elements of the
    row's partial last chunk, in the vectors ``(N - V + 1) div V`` to ``(N - 1) div V``: a
    thread's vector that can hold one) are read one by one (a load under its condition),
    an element past N the neutral -inf."""

    row_x: SSAValue | None = None  # the row's first element
    j0: SSAValue | None = None  # the thread's first vector (i64)
    group: int = 0  # the threads of a row (a thread's vectors are j0 + k group)
    n: int = 0
    last: SSAValue | None = None  # the last chunk inside the row (i64)
    cut: SSAValue | None = None  # the first element of the row's partial last chunk (i64)
    parts: tuple[SSAValue, ...] = ()  # the funnel's operands (:func:`ragged_buf`)
    looped: int = 0  # rows_stream: the thread's vectors its loop reads (an i64 ``first``: below this)
    mine: SSAValue | None = None  # chunk j0 (the thread's first vector's first chunk)
    fixed: int | None = None  # RAGGED_SPLIT: the row's offset a, known in this branch (None: a register)

    def funnel(self, e: Emitter, p: SSAValue, po: int, q: SSAValue, qo: int, vec: int) -> list[SSAValue]:
        """The vector at ``a`` elements into the chunk at ``p + po`` (:func:`_funnel`, or
        :func:`_fixed_funnel` where the branch knows ``a``)."""
        if self.fixed is not None:
            return _fixed_funnel(e, self.dtype, p, po, q, qo, vec, self.fixed)
        return _funnel(e, self.dtype, p, po, q, qo, vec, self.parts)

    def load(self, e: Emitter, first: SSAValue | int, vec: int, extra: int = 0, *, nc: bool = True) -> list[SSAValue]:
        assert self.row_x is not None and self.j0 is not None and self.last is not None and self.cut is not None
        d, n, step = self.dtype, self.n, vec * self.dtype.bytes
        rel = first + extra if isinstance(first, int) else (e.add_i(first, extra) if extra else first)
        bound = rel + self.group if isinstance(rel, int) else self.looped  # (the item's or the loop's vectors: below)
        j = None
        if bound <= n // vec - 1:  # every chunk j + 1 inside the row (last >= N div V - 1): at the thread's own
            if isinstance(rel, int):
                vals = self.funnel(e, self.mine, rel * step, self.mine, (rel + 1) * step, vec)
            else:
                at = e.ptr_add(self.mine, e.mul_i(rel, step))
                vals = self.funnel(e, at, 0, at, step, vec)
        else:
            j = e.add_i(self.j0, rel)
            lo = e.value(MinOp(ArithType.S64, j, self.last))
            hi = e.value(MinOp(ArithType.S64, e.add_i(j, 1), self.last))
            vals = self.funnel(e, e.ptr_add(self.base, e.mul_i(lo, step)), 0, e.ptr_add(self.base, e.mul_i(hi, step)), 0, vec)
        if bound <= (n - vec + 1) // vec:
            return vals  # (no vector of this item, or of the loop, holds an element of the partial chunk)
        j = j if j is not None else e.add_i(self.j0, rel)
        start = e.mul_i(j, vec)  # the vector's first element
        out = []
        for i, v in enumerate(vals):
            idx = e.add_i(start, i) if i else start
            tail = e.and_pred(e.cmp("sge", idx, self.cut), e.cmp("slt", idx, e.const(n, i64)))
            past = e.if_(tail, lambda c, idx=idx: load_vec(c, d, c.ptr_add(self.row_x, c.mul_i(idx, d.bytes)), 0, 1),
                         lambda c: [c.const(float("-inf"), f32)], [f32])[0]
            out.append(e.selp(SelpType.F32, v, past, e.cmp("slt", idx, self.cut)))
        return out


def _funnel(e: Emitter, d, p: SSAValue, po: int, q: SSAValue, qo: int, vec: int,
            parts: tuple[SSAValue, ...]) -> list[SSAValue]:
    """The ``vec`` elements (float32) at ``a`` elements into the aligned chunk at ``p + po``
    bytes, followed by the one at ``q + qo`` (two aligned vector loads). bfloat16: the chunks' 32-bit
    words shifted by ``a`` halves (``parts``: a >= 2, the shift ``16 (a mod 2)`` and ``32 -``
    it); else each value chosen among the two chunks' by ``a``'s bits (``parts``: a mod 2
    = 1, a >= 2)."""
    if packed_bf16(d, vec):
        words = raw_load(e, d, p, po, vec) + raw_load(e, d, q, qo, vec)
        high, s, t = parts
        u = [e.selp(SelpType.B32, words[k + 1], words[k], high) for k in range(len(words) - 1)]
        out = []
        for k in range(vec // 2):  # (u[k] >> s) | (u[k + 1] << (32 - s)); a shift by 32 gives 0
            low = e.value(ShrOp(ArithType.B32, u[k], s))
            out.append(e.value(OrOp(ArithType.B32, low, e.value(ShlOp(ArithType.B32, u[k + 1], t)))))
        return widen_raw(e, d, out, vec)
    odd, high = parts
    w = load_vec(e, d, p, po, vec) + load_vec(e, d, q, qo, vec)
    t = [e.selp(SelpType.F32, w[k + 1], w[k], odd) for k in range(vec + 2)]  # shifted by a mod 2
    return [e.selp(SelpType.F32, t[i + 2], t[i], high) for i in range(vec)]  # then by 2 (vec = 4)


def _fixed_funnel(e: Emitter, d, p: SSAValue, po: int, q: SSAValue, qo: int, vec: int, a: int) -> list[SSAValue]:
    """:func:`_funnel` where ``a`` is known (:data:`RAGGED_SPLIT`): a = 0 the chunk at ``p +
    po`` alone (one vector load, as the default's); else both chunks, each element taken
    by its index: bfloat16 element ``h = a + i`` is word ``h div 2``'s low half (shifted up
    16) or high half (masked), one operation an element as an aligned vector's
    (:func:`rows_common.widen_raw`); float32 and float16 the values ``a`` to ``a + vec`` of
    the two chunks, no operation. The same float32 values as :func:`_funnel`'s."""
    raw = raw_load(e, d, p, po, vec)
    if a == 0:
        return widen_raw(e, d, raw, vec)
    raw += raw_load(e, d, q, qo, vec)
    if not packed_bf16(d, vec):
        return widen_raw(e, d, raw[a:a + vec], vec)
    out = []
    for h in range(a, a + vec):
        w = raw[h // 2]
        bits = e.value(ShlOp(ArithType.B32, w, e.const(16))) if h % 2 == 0 else e.and_b32(w, -65536)  # 0xffff0000
        out.append(e.value(MovOp(bits, f32)))
    return out


def ragged_offset(e: Emitter, p: RowPlan, o: SSAValue) -> SSAValue:
    """``a``: how many elements past a vector boundary the row whose first element is
    ``o`` (an ``i64``, from x's aligned base) starts: an ``i32`` below ``p.vec``."""
    return e.and_b32(e.value(CvtOp(CvtType.U32, CvtType.U64, o, i32)), p.vec - 1)


def ragged_buf(e: Emitter, p: RowPlan, x0: SSAValue, row: SSAValue, row_x: SSAValue, sw: SSAValue,
               fixed: int | None = None) -> RaggedBuf:
    """x's :class:`RaggedBuf` of ``row`` for the thread whose first vector is ``sw``
    (``fixed``: the row's offset ``a`` where the branch knows it, :data:`RAGGED_SPLIT`)."""
    d, vec = p.dtype, p.vec
    assert vec == 4 and p.n >= vec
    o = e.mul_i(row, p.sx)  # the row's first element from x's (aligned) base
    a32 = ragged_offset(e, p, o) if fixed is None else None
    a = e.wide(a32) if a32 is not None else e.const(fixed, i64)
    base = e.ptr_add(x0, e.mul_i(e.sub_i(o, a), d.bytes))
    end = e.add_i(a, p.n)  # the row's end in chunk elements
    last = e.add_i(e.value(ShrOp(ArithType.U64, end, e.const(2))), -1)
    cut = e.sub_i(e.const(p.n, i64), e.value(AndOp(ArithType.B64, end, e.const(vec - 1, i64))))
    high = e.cmp("uge", a32, 2) if a32 is not None else None
    if high is None:  # (RAGGED_SPLIT: no funnel's operands)
        parts: tuple[SSAValue, ...] = ()
    elif packed_bf16(d, vec):
        s = e.value(ShlOp(ArithType.B32, e.and_b32(a32, 1), e.const(4)))  # 16 (a mod 2)
        parts = (high, s, e.sub_i(32, s))
    else:
        parts = (e.cmp("ne", e.and_b32(a32, 1), 0), high)
    looped = (p.vectors // p.group) // p.unroll * p.unroll * p.group  # (rows_common.visit_vectors' loop)
    mine = e.ptr_add(base, e.mul_i(sw, vec * d.bytes))
    return RaggedBuf(d, base, row_x, sw, p.group, p.n, last, cut, parts, 0 if p.items else looped, mine, fixed)


def forward_body(p: RowPlan, op: NormalizeRowsOp) -> Callable[[RowState, Emitter, SSAValue], object]:
    """A forward kind's row body: the row in registers (``p.items``), else streamed
    (cross_entropy under :data:`STEP_EXPS`: :func:`stream_loss_row`)."""
    if p.items:
        return registers_row
    if p.kind == NormKind.CROSS_ENTROPY and not op.smoothing and setting_of(STEP_EXPS, STEP_EXPS_MEASURED, p.dtype.name, p.n):
        return stream_loss_row
    return stream_row


def stream_loss_row(r: RowState, e: Emitter, row: SSAValue) -> None:
    """cross_entropy's row streamed once (rows_stream, :data:`STEP_EXPS`): the thread's
    vectors in the order of ``rows_common.visit_vectors``, a loop step's ``unroll`` vectors
    taken into the running ``(t, s)`` together (:func:`_absorb`); the vectors after the
    loop one at a time; the group's (max, sum), then the loss (no label smoothing)."""
    p = r.p
    assert not r.op.smoothing and not p.items
    full, cond = r.partial(e)
    fast = fast_exp(p)
    last = (p.unroll - 1) * p.group

    def read(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        vals = r.load_item(b, first, extra)
        if isinstance(first, SSAValue) and extra < last:  # a loop step's vector before its last: kept
            return state + vals
        return _absorb(b, state[0], state[1], state[2:] + vals, fast)

    t, s = visit_vectors(e, p, full, cond, [e.const(float("-inf"), f32), e.const(0.0, f32)], read)
    big, total = r.reduce_exps(e, clamp_max(e, t), s)
    r.store_stats(e, row, r.finish(e, {"max": big, "sum": total}))


def _absorb(e: Emitter, t: SSAValue, s: SSAValue, vals: list[SSAValue], fast: bool) -> list[SSAValue]:
    """The running maximum ``t`` and sum ``s`` of ``exp(x - clamp(t))`` with ``vals`` taken in:
    ``t' = max(t, vals)``, ``s exp(m - m') + sum(exp(v - m'))`` (``m``, ``m'``: ``t``, ``t'``
    clamped to at least -FLT_MAX; the exps' sum a fixed tree)."""
    t1 = e.fold(ReduceKind.MAX, F32, [t, *vals])
    m0, m1 = clamp_max(e, t), clamp_max(e, t1)
    part = e.fold(ReduceKind.SUM, F32, [exp_shifted(e, v, m1, fast) for v in vals])
    return [t1, f32_add(e, f32_mul(e, s, exp_shifted(e, m0, m1, fast)), part)]


@dataclass
class LossRow(RowState):
    """A cross_entropy row whose group's thread 0 also adds the row's loss and kept flag
    (1 where its target is not ignore_index) to ``totals`` (shared float32 [2], zero before
    the rows loop), as it writes the loss: :data:`LOSS_TAIL_SHORT`'s CTA pair where each CTA
    has at most one row (``0 + loss``: the default's thread 0 sum of its rows, without
    reading the loss back)."""

    totals: SSAValue | None = None

    def store_stats(self, e: Emitter, row: SSAValue, s: dict[str, SSAValue]) -> None:
        op, totals = self.op, self.totals
        assert op.loss is not None and totals is not None and self.rank is None
        wanted = [(buf, s[key]) for buf, key in ((op.row_max, "max"), (op.row_sum, "sum"), (op.mean, "mean"),
                                                 (op.rstd, "rstd"), (op.lse, "lse")) if buf is not None]

        def write(c: Emitter) -> list[SSAValue]:  # (RowState.store_stats', then the totals)
            off = c.mul_i(row, 4)
            for buf, v in wanted:
                c.st(ld_type(F32), c.ptr_add(c.ptr(buf, StateSpace.GLOBAL), off), v)
            known = self.target
            self.target = known if known is not None else self.target_inputs(c, row)
            t = self.target[0]
            loss = self.loss(c, row, s)
            self.target = known
            c.st(ld_type(F32), c.ptr_add(c.ptr(op.loss, StateSpace.GLOBAL), off), loss)
            kept = c.selp(SelpType.F32, c.const(1.0, f32), c.const(0.0, f32), c.cmp("ne", t, c.const(op.ignored, i64)))
            old = [c.ld(ld_type(F32), totals, f32, 4 * k) for k in range(2)]
            for k, v in enumerate((f32_add(c, old[0], loss), f32_add(c, old[1], kept))):
                c.st(ld_type(F32), totals, v, 4 * k)
            return []

        e.if_(e.cmp("eq", self.g, 0), write)


def rows_parameter(kernel: func.FuncOp) -> SSAValue:
    """The kernel's ``i64`` parameter ``m`` (appended after its buffers, once), recorded in
    ``bulkred.dims`` as the size of dimension 0 of x (the first parameter), which every
    other buffer with a dynamic M shares: the launcher passes it."""
    block = kernel.body.block
    pairs = [ArrayAttr([IntegerAttr(i, i64), IntegerAttr(0, i64)]) for i, a in enumerate(block.args)
             if isinstance(a.type, MemRefType) and a.type.get_shape() and a.type.get_shape()[0] == DYNAMIC_INDEX]
    arg = block.insert_arg(i64, len(block.args))
    arg.name_hint = "m"
    kernel.function_type = FunctionType.from_lists([a.type for a in block.args], [])
    kernel.attributes[DIMS_ATTR] = ArrayAttr([ArrayAttr(pairs)])
    return arg


def lower_rows(op: Operation, rewriter: PatternRewriter, target: Target, p: RowPlan) -> None:
    """Replace ``op`` by the kernel of plan ``p``: the launch, the loop over rows, and
    per row the registers or the stream body."""
    assert isinstance(op, NormalizeRowsOp)
    kernel = enclosing_kernel(op)
    assert kernel is not None
    if not isinstance(p, RaggedPlan) and rows_ce_flat.takes(p, op):  # (rows_ce_flat.CE_FLAT: cross_entropy's dx as one stream)
        rows_ce_flat.lower_ce_flat(op, rewriter, target, p, rows_parameter)
        return
    if rows_common.cta_one_barrier(p):  # (rows_common.CTA_ONE_BARRIER: a reduction one barrier, the row count carried)
        p = replace(p, one_barrier=True)
    counted = p.cluster > 1 or p.one_barrier  # (the loop carries the unit's count of rows first)
    set_launch(kernel, [p.ctas], [p.block], [p.cluster])
    if p.cluster > 1 and p.kind == NormKind.ADD_RMS_NORM:  # (rows_common.ADD_RMS_CLUSTER_MIN_CTAS; None: nothing)
        set_min_ctas(op, rows_common.ADD_RMS_CLUSTER_MIN_CTAS)
    m_arg = rows_parameter(kernel) if p.m is None else None
    e = emitter_at(op)
    tid = e.sreg(SpecialRegister.TID_X)
    rank = first = exchange = None
    if p.cluster > 1:  # cluster c (of the grid's ctas / cluster) takes rows c, c + clusters, ...
        g = tid
        rank = e.sreg(SpecialRegister.CLUSTER_CTARANK)
        slot = e.shr_u32(e.sreg(SpecialRegister.CTAID_X), p.cluster.bit_length() - 1)
        first = e.add_i(e.mul_i(rank, p.slice), g)
        start = first
        exchange = ClusterExchange(e, tid)  # its mbarriers, before the rows loop
    elif p.group == p.block:
        g, slot = tid, e.sreg(SpecialRegister.CTAID_X)
        start = g
    else:
        g = e.and_b32(tid, p.group - 1)
        slot = e.add_i(e.mul_i(e.sreg(SpecialRegister.CTAID_X), p.groups), e.shr_u32(tid, p.group.bit_length() - 1))
        start = g
    x0 = e.ptr(op.x, StateSpace.GLOBAL)
    y0 = e.ptr(op.y, StateSpace.GLOBAL) if op.y is not None else None
    w0 = e.ptr(op.weight, StateSpace.GLOBAL) if op.weight is not None else None
    b0 = e.ptr(op.bias, StateSpace.GLOBAL) if op.bias is not None else None
    r0 = e.ptr(op.residual, StateSpace.GLOBAL) if op.residual is not None else None
    h0 = e.ptr(op.residual_out, StateSpace.GLOBAL) if op.residual_out is not None else None
    g0 = e.ptr(op.grad, StateSpace.GLOBAL) if op.grad is not None else None
    wd = of_ir(op.weight.type.element_type) if op.weight is not None else None  # type: ignore[union-attr]
    bd = of_ir(op.bias.type.element_type) if op.bias is not None else None  # type: ignore[union-attr]
    sw = e.wide(start)  # the thread's first vector in a row
    vec = p.vec
    held = rows_common.affine_held(p)  # (rows_common.AFFINE_HELD: the weight and bias in registers, loaded once)
    held_w = rows_common.hold_row(e, p, w0, wd, g, sw) if held and w0 is not None and wd else None
    held_b = rows_common.hold_row(e, p, b0, bd, g, sw) if held and b0 is not None and bd else None

    def x_buf(b: Emitter, row: SSAValue, row_x: SSAValue) -> RowBuf:
        """x's buffer of ``row`` (its first element ``row_x``) at the thread's first vector
        (:data:`RAGGED`: a :class:`RaggedBuf`)."""
        if isinstance(p, RaggedPlan):
            return ragged_buf(b, p, x0, row, row_x, sw)
        return RowBuf(p.dtype, b.ptr_add(row_x, b.mul_i(sw, vec * p.dtype.bytes)))

    def row_buffers(b: Emitter, row: SSAValue) -> tuple[RowBuf, RowBuf, RowBuf | None]:
        """x's, dy's (and the weight's) buffers of ``row`` at the thread's first vector
        (a pipelined norm's backward: rows_backward.prefetch_norm_row)."""
        d = p.dtype
        x = RowBuf(d, b.ptr_add(b.ptr_add(x0, b.mul_i(row, p.sx * d.bytes)), b.mul_i(sw, vec * d.bytes)))
        gs = row_stride(op.grad.type) * d.bytes  # type: ignore[arg-type, union-attr]
        grad = RowBuf(d, b.ptr_add(b.ptr_add(g0, b.mul_i(row, gs)), b.mul_i(sw, vec * d.bytes)))
        w = RowBuf(wd, b.ptr_add(w0, b.mul_i(sw, vec * wd.bytes))) if w0 is not None and wd else None
        return x, grad, w

    def norm_row(b: Emitter, row: SSAValue, parity: SSAValue | None) -> RowState:
        """A norm's backward's row ``row`` (an overlapped rows_slices: rows_backward.OVERLAP)."""
        d = p.dtype
        x, grad, w = row_buffers(b, row)
        y = RowBuf(d, b.ptr_add(b.ptr_add(y0, b.mul_i(row, p.sy * d.bytes)), b.mul_i(sw, vec * d.bytes)))
        return RowState(p, op, g, tid, x, y, w, None, x.base, first, rank, None, None, parity, grad, sw, exchange)

    def forward_buffers(b: Emitter, row: SSAValue) -> tuple[RowBuf, RowBuf | None]:
        """x's (and add_rms_norm's residual's) buffers of ``row`` at the thread's first
        vector (a pipelined forward kind: rows_common.prefetch_row)."""
        d = p.dtype
        x = x_buf(b, row, b.ptr_add(x0, b.mul_i(row, p.sx * d.bytes)))
        if op.residual is None or op.residual_out is None:
            return x, None
        rs = row_stride(op.residual.type) * d.bytes  # type: ignore[arg-type]
        return x, RowBuf(d, b.ptr_add(b.ptr_add(r0, b.mul_i(row, rs)), b.mul_i(sw, vec * d.bytes)))

    def forward_row(b: Emitter, row: SSAValue) -> RowState:
        """A forward kind's row ``row`` (row_body's, for two rows a step: rows_common.together)."""
        d = p.dtype
        x, res = forward_buffers(b, row)
        y = None
        if y0 is not None:
            y = RowBuf(d, b.ptr_add(b.ptr_add(y0, b.mul_i(row, p.sy * d.bytes)), b.mul_i(sw, vec * d.bytes)))
        w = held_w or (RowBuf(wd, b.ptr_add(w0, b.mul_i(sw, vec * wd.bytes))) if w0 is not None and wd else None)
        bb = held_b or (RowBuf(bd, b.ptr_add(b0, b.mul_i(sw, vec * bd.bytes))) if b0 is not None and bd else None)
        hout = None
        if res is not None:
            hs = row_stride(op.residual_out.type) * d.bytes  # type: ignore[arg-type, union-attr]
            hout = RowBuf(d, b.ptr_add(b.ptr_add(h0, b.mul_i(row, hs)), b.mul_i(sw, vec * d.bytes)))
        row_x = b.ptr_add(x0, b.mul_i(row, p.sx * d.bytes))
        return state(p, op, g, tid, x, y, w, bb, row_x, first, rank, res, hout, None, None, sw, exchange)

    def pair_body(b: Emitter, row: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        """Two rows of the group a step (rows_common.together): ``row`` and the group's
        next one (past M: ``row`` again, written twice with the same bits)."""
        nxt = next_row(b, row)
        registers_rows_together(b, [(forward_row(b, row), row, None), (forward_row(b, nxt), nxt, None)])
        return carried

    def next_row(c: Emitter, row: SSAValue) -> SSAValue:
        """The unit's (or group's) next row; past M, ``row`` again (read from L2)."""
        nxt = c.add_i(row, stride)
        return c.value(arith.SelectOp(c.cmp("slt", nxt, end), nxt, row))

    def split_row(b: Emitter, row: SSAValue, fixed: int) -> list[SSAValue]:
        """A cross_entropy row whose offset is ``fixed`` (:data:`RAGGED_SPLIT`)."""
        row_x = b.ptr_add(x0, b.mul_i(row, p.sx * p.dtype.bytes))
        x = ragged_buf(b, p, x0, row, row_x, sw, fixed)
        r = state(p, op, g, tid, x, None, None, None, row_x, first, rank, None, None, None, None, sw, exchange)
        forward_body(p, op)(r, b, row)
        return []

    def split_rows(b: Emitter, row: SSAValue, a: SSAValue, fixed: int = 0) -> list[SSAValue]:
        """The branches of :data:`RAGGED_SPLIT` from offset ``fixed`` on (the last without a test)."""
        if fixed == p.vec - 1:
            return split_row(b, row, fixed)
        return b.if_(b.cmp("eq", a, fixed), lambda c: split_row(c, row, fixed),
                     lambda c: split_rows(c, row, a, fixed + 1))

    def row_body(b: Emitter, row: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        d = p.dtype
        if split:  # (a row a CTA, nothing carried)
            split_rows(b, row, ragged_offset(b, p, b.mul_i(row, p.sx)))
            return carried
        row_x = b.ptr_add(x0, b.mul_i(row, p.sx * d.bytes))
        x = x_buf(b, row, row_x)
        y = None
        if y0 is not None:
            row_y = b.ptr_add(y0, b.mul_i(row, p.sy * d.bytes))
            y = RowBuf(d, b.ptr_add(row_y, b.mul_i(sw, vec * d.bytes)))
        w = held_w or (RowBuf(wd, b.ptr_add(w0, b.mul_i(sw, vec * wd.bytes))) if w0 is not None and wd else None)
        bb = held_b or (RowBuf(bd, b.ptr_add(b0, b.mul_i(sw, vec * bd.bytes))) if b0 is not None and bd else None)
        res = hout = None
        if op.residual is not None and op.residual_out is not None:
            res = RowBuf(d, b.ptr_add(b.ptr_add(r0, b.mul_i(row, row_stride(op.residual.type) * d.bytes)), b.mul_i(sw, vec * d.bytes)))  # type: ignore[arg-type]
            hout = RowBuf(d, b.ptr_add(b.ptr_add(h0, b.mul_i(row, row_stride(op.residual_out.type) * d.bytes)), b.mul_i(sw, vec * d.bytes)))  # type: ignore[arg-type]
        parity = carried[0] if counted else None
        acc = carried[1:] if counted else carried
        raw = None
        if ahead:  # this row's values, loaded during the previous step (rows_backward.PIPELINE)
            acc, raw = acc[:len(acc) - ahead], acc[len(acc) - ahead:]
        grad = None
        if op.grad is not None and p.kind in GRAD_ROWS_KINDS:
            row_g = b.ptr_add(g0, b.mul_i(row, row_stride(op.grad.type) * d.bytes))  # type: ignore[arg-type]
            grad = RowBuf(d, b.ptr_add(row_g, b.mul_i(sw, vec * d.bytes)))
        r = state(p, op, g, tid, x, y, w, bb, row_x, first, rank, res, hout, parity, grad, sw, exchange)
        if p.kind in SOFTMAX_BACKWARD_KINDS:
            (registers_backward if p.items else stream_backward)(r, b, row)
        elif p.kind in NORM_BACKWARD_KINDS and p.items and raw is not None:

            def following(c: Emitter, row: SSAValue = row) -> list[SSAValue]:
                nxt = c.add_i(row, stride)  # the unit's next row; past M, this one again (read from L2)
                nxt = c.value(arith.SelectOp(c.cmp("slt", nxt, end), nxt, row))
                return prefetch_norm_row(c, r, *row_buffers(c, nxt), nxt)

            acc = registers_norm_backward(r, b, row, acc, parts, (raw, following))
        elif p.kind in NORM_BACKWARD_KINDS and p.items:
            acc = registers_norm_backward(r, b, row, acc, parts)
        elif p.kind in NORM_BACKWARD_KINDS:
            stream_norm_backward(r, b, row, parts)
        elif p.kind == NormKind.CROSS_ENTROPY_BACKWARD:
            ce_backward(r, b, row)
        elif raw is not None:  # a forward kind pipelined (rows_common.FORWARD_PIPELINE)

            def ahead_row(c: Emitter, row: SSAValue = row) -> list[SSAValue]:
                nxt = next_row(c, row)
                return prefetch_row(c, p, op, *forward_buffers(c, nxt), nxt)

            acc = acc + registers_row(r, b, row, (raw, ahead_row))
        else:
            forward_body(p, op)(r, b, row)
        return ([b.add_i(parity, 1)] if parity is not None else []) + acc  # (with a cluster: the CTA's rows so far)

    split = (isinstance(p, RaggedPlan) and p.groups == 1 and p.cluster == 1
             and setting_of(RAGGED_SPLIT, RAGGED_SPLIT_MEASURED, p.dtype.name, p.n))
    units = p.ctas // p.cluster
    # a norm's backward with dweight / dbias: the partial rows of the column sums (the workspace)
    outs = [o for o in (op.dweight, op.dbias) if o is not None]
    ws = None
    parts: list[RowBuf] = []  # none without dweight and dbias (weight and bias None)
    acc0: list[SSAValue] = []
    if outs:
        lay = ColumnSums(len(outs), units, p.n, p.cluster)
        ws = e.ptr(add_workspace(kernel, lay.bytes), StateSpace.GLOBAL)
        if p.items and shared_columns(p, len(outs)):  # each thread's columns in shared memory
            parts = slice_accumulators(e, p, len(outs), g)
        elif p.items:  # in registers: one float32 per element the thread holds, per output
            acc0 = [e.const(0.0, f32)] * (p.items * p.vec * len(outs))
        elif p.cluster > 1:  # rows_slices: the CTA's columns in shared memory, then its partial rows
            parts = slice_accumulators(e, p, len(outs), g)
        else:  # streamed: added in place to the unit's own partial rows (zero: the workspace's contract)
            parts = [RowBuf(F32, e.ptr_add(column_partial_row(e, ws, lay, k, slot), e.mul_i(sw, vec * 4)))
                     for k in range(len(outs))]
    carried0 = ([e.const(0)] if counted else []) + acc0
    totals = None  # LOSS_TAIL_SHORT: the CTA's (loss sum, kept rows) in shared memory (LossRow)
    if LOSS_TAIL_SHORT and LOSS_PARTIALS and op.reduced is not None and p.cluster == 1 and p.groups == 1:
        totals = e.shared([2], f32, "loss_totals_short")

        def zero(c: Emitter) -> list[SSAValue]:
            for k in range(2):
                c.st(ld_type(F32), totals, c.const(0.0, f32), 4 * k)
            return []

        e.if_(e.cmp("eq", tid, 0), zero)
    loss_cluster = loss_cluster_begin(e, p, op, tid)  # LOSS_TAIL_CLUSTER: the leader's mbarrier, before the rows

    def state(*fields_: object) -> RowState:
        return RowState(*fields_) if totals is None else LossRow(*fields_, totals=totals)  # type: ignore[arg-type]

    ctas = e.sreg(SpecialRegister.NCTAID_X) if p.m is None or outs else None
    ahead = 0
    fwd = forward_pipelined(p) and not isinstance(p, RaggedPlan)  # (RAGGED: loads through RaggedBuf only)
    if fwd or pipelined(p, op):  # rows_backward.PIPELINE, rows_common.FORWARD_PIPELINE: the first row loaded before the loop
        if p.m is None:  # (a backward's p.groups == 1: a unit's rows are the units apart)
            assert ctas is not None
            units_now = e.shr_u32(ctas, p.cluster.bit_length() - 1) if p.cluster > 1 else ctas
            stride = e.wide(e.mul_i(units_now, p.groups) if p.groups > 1 else units_now)
        else:
            stride = e.const(units * p.groups, i64)
        end = m_arg if p.m is None else e.const(p.m, i64)
        r = RowState(p, op, g, tid, None, None, None, None, None, first, rank, sw=sw)  # type: ignore[arg-type]
        types = prefetch_row_types(p, op) if fwd else prefetch_types(p, op)
        ahead = len(types)
        row0 = e.wide(slot)

        def first_row(c: Emitter) -> list[SSAValue]:
            if fwd:
                return prefetch_row(c, p, op, *forward_buffers(c, row0), row0)
            return prefetch_norm_row(c, r, *row_buffers(c, row0), row0)

        carried0 += e.if_(e.cmp("slt", row0, end), first_row, lambda c: [c.const(0, t) for t in types], types)
        done = e.for_(row0, end, stride, carried0, row_body)
        if p.m is None:
            kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([IntegerAttr(p.groups, i64), IntegerAttr(units, i64)])
        done = done[:len(done) - ahead]
    elif overlapped(p, op):  # rows_backward.OVERLAP: a row's first read with the previous row's second
        if p.m is None:
            assert ctas is not None
            stride = e.wide(e.shr_u32(ctas, p.cluster.bit_length() - 1))
            kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([IntegerAttr(p.groups, i64), IntegerAttr(units, i64)])
        else:
            stride = e.const(units, i64)
        end = m_arg if p.m is None else e.const(p.m, i64)
        row0 = e.wide(slot)
        has = e.cmp("slt", row0, end)
        nst = 4 if op.mean is not None else 2  # (rows_backward.stat_names)
        count0 = carried0[0]

        def first_row(c: Emitter) -> list[SSAValue]:
            return [c.add_i(count0, 1)] + first_pass(norm_row(c, row0, count0), c, row0)

        init = e.if_(has, first_row, lambda c: [count0] + [c.const(0.0, f32)] * nst, [count0.type] + [f32] * nst)

        def step(b: Emitter, row: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            count, prev, stats = carried[0], carried[1], carried[2:]
            after = overlapped_pass(norm_row(b, prev, None), stats, norm_row(b, row, count), b, row, parts)
            return [b.add_i(count, 1), row] + after

        done = e.for_(e.add_i(row0, stride), end, stride, [init[0], row0] + init[1:], step)
        e.if_(has, lambda c: second_pass(norm_row(c, done[1], None), c, done[2:], parts) or [])
        done = done[:1]
    elif together(p):  # two rows of a group a step (rows_warp.ROWS_AT_ONCE)
        if p.m is None:
            assert ctas is not None
            stride = e.wide(e.mul_i(ctas, p.groups) if p.groups > 1 else ctas)
            kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([IntegerAttr(p.groups, i64), IntegerAttr(units, i64)])
        else:
            stride = e.const(units * p.groups, i64)
        end = m_arg if p.m is None else e.const(p.m, i64)
        done = e.for_(e.wide(slot), end, e.add_i(stride, stride), carried0, pair_body)
    elif p.m is None:  # M at the launch: the i64 parameter after the buffers; the grid from it
        assert ctas is not None
        units_now = e.shr_u32(ctas, p.cluster.bit_length() - 1) if p.cluster > 1 else ctas
        stride = e.wide(e.mul_i(units_now, p.groups) if p.groups > 1 else units_now)
        done = e.for_(e.wide(slot), m_arg, stride, carried0, row_body)
        kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([IntegerAttr(p.groups, i64), IntegerAttr(units, i64)])
    else:
        done = e.for_(e.wide(slot), p.m, units * p.groups, carried0, row_body)
    if p.cluster > 1:  # no CTA leaves while a peer may still read its shared memory
        e.cluster_sync()
    # cross_entropy's reduced (none: nothing)
    reduce_loss(e, p, op, tid, m_arg if p.m is None else p.m, totals, loss_cluster)
    if outs:
        assert ws is not None
        assert ctas is not None
        unit = e.sreg(SpecialRegister.CTAID_X) if p.groups > 1 else slot  # a CTA, or a cluster (slot: its index)
        if p.items and not parts:
            r = RowState(p, op, g, tid, None, None, None, None, None, first, rank, sw=sw)  # type: ignore[arg-type]
            group = e.shr_u32(tid, p.group.bit_length() - 1) if p.groups > 1 else None
            write_column_partials(e, r, done[1:] if p.cluster > 1 else done, ws, lay, unit, p.groups, group)
        elif p.items or p.cluster > 1:  # the registers variants' columns in shared memory, or rows_slices'
            write_slice_partials(e, p, parts, ws, lay, unit, sw, g)
        finish_columns(e, p, op, ws, lay, tid, ctas, unit, rank)
    rewriter.erase(op)


LOSS_LOADS = 8
"""Rows of the losses (and targets) each thread of the last CTA loads a step (loads in
flight) in :func:`reduce_loss`; half that in the streamed variants (no row in registers),
whose few registers (31 to 32 at 512 threads, 4 CTAs a multiprocessor) the tail must not
raise (8: 35, 3 CTAs; ptxas -v, sm_90a). The bits do not depend on it (each thread adds
its rows in turn either way)."""


LOSS_PARTIALS = True
"""How :func:`reduce_loss` sums the losses. False: the last CTA reads all
M losses and targets (one CTA: 12 bytes a row at one multiprocessor's bandwidth, after
every other CTA is done; its loads in flight also raise the kernel's registers). True:
each CTA (rows_cluster's and rows_bulk's clusters: rank 0) sums the losses and counts
the kept rows of its own rows (those it wrote: after a CTA barrier, from L1/L2, every
CTA at once), writes that pair to its slot of the workspace, then takes the ticket; the
last CTA adds the grid's pairs in CTA order (8 bytes a CTA; the slots set back to 0).
Nothing is added to the rows loop (ptxas -v, sm_90a, against the default's: bfloat16
65536 on rows_stream 32 registers against 34, 4 CTAs a multiprocessor against 3; 4096 and
16384 the same; 1024 on rows_warp 79 against 72, both 3 CTAs of 256 threads; float32 1024
92, the same). The bits are fixed by M and the grid (run to run the
same; the grid is a function of M, N, the type and the multiprocessors' count), no
longer by M alone. Measured on an H200 (tools/probes/rows_forward_norms.py ``--cells ce``,
2026-11-29, x copy, the mean: the last CTA alone / torch's mean after the kernel / CTA
partials): bfloat16 N = 1024 (M = 262144) 0.48 / 0.85 / 0.95, 4096 0.61 / 0.82 / 0.88,
16384 0.86 / 0.87 / 0.87, 65536 0.86 / 0.93 / 0.95; float32 1024 0.68 / 1.02 / 1.02: True."""


LOSS_TAIL_SHORT = True
"""With :data:`LOSS_PARTIALS`, a shorter tail for small batches (issue 30, "small batches":
cross_entropy's mean in the kernel took 3.7 to 3.9 us of GPU time at M = 1, 8 and 64 rows of
4096 on an H200, the other row kernels 1.9 to 2.7). On: (1) a grid of one CTA writes
``reduced`` from its own pair, with no slot, fence, ticket or second tree; (2) otherwise
thread 0 alone stores the CTA's pair, releases it (``fence.acq_rel.gpu``), takes the
ticket and, in the last CTA, acquires before the CTA barrier (cooperative groups' grid
barrier: one fence a CTA, not one a thread, and one ``bar.sync`` fewer); (3) a CTA per row
(rows_cta, rows_stream) with at most one row a CTA (M <= the grid's rows a step) takes
thread 0's pair as the CTA's, added in shared memory as it writes the loss (:class:`LossRow`),
without the CTA barrier, the loss read back from global memory nor the tree over the CTA
(the tree adds zeros to it).
The bits are the default's in every case (``0 + pair`` is the last CTA's sum of one
slot; adding +0 changes no sum that is not -0, and ``0 + x`` never is): tests/test_rows_ce_speed.py.
Measured on an H200 (tools/probes/rows_ce.py, 2026-11-29, GPU time a call from a CUDA graph
of 50, off -> on): float32 N = 4096, M = 1 3.67 -> 1.93 us, 8 3.80 -> 3.53, 64 3.93 -> 3.68;
bfloat16 M = 1 3.23 -> 1.92, 8 3.28 -> 3.05, 64 3.90 -> 3.55; the same bits: True."""


LOSS_TAIL_CLUSTER: bool | None = None
"""With :data:`LOSS_TAIL_SHORT`, a kernel of a dynamic M whose rows take no cluster (rows_warp,
rows_cta, rows_stream): a grid of 2 to :data:`LOSS_TAIL_CLUSTER_MAX` CTAs is launched as one
thread-block cluster (``bulkred.grid_rows``' third entry: the launch layer and the interpreter
give such a grid the cluster dims of the whole grid) and the CTAs' (loss sum, kept rows) pairs
meet in the leader's shared memory instead of the workspace: no slot in global memory, no
fence, no ticket (issue 30, section 4, small batches: cross_entropy's mean at M = 8 rows of
4096, 3.5 to 3.7 us against 2.0 for one CTA). At the kernel's start the leader's thread 0
initializes an mbarrier and announces ``8 x CTAs`` bytes to it (``mbarrier.arrive.expect_tx``),
``fence.mbarrier_init``, and every thread arrives on the cluster barrier
(``barrier.cluster.arrive.relaxed``: no wait, the rows go on). After the rows each thread
waits on that barrier (long complete: the leader's mbarrier is initialized), each CTA's
thread 0 sends its pair into slot ``rank`` of the leader (``st.async`` through ``mapa``,
completing its bytes on the leader's mbarrier) and leaves; the leader's warp 0 waits for the
mbarrier's phase, lane t takes ``0 + slot t`` (0 past the grid) and the warp's butterfly gives
the total, which thread 0 writes. The default's last CTA adds the same slots in the same
lanes (thread t: ``0 + slot t``), then its CTA's tree, whose other warps add +0 (no sum there
is -0): the default's bits. A larger grid, or a launch without the cluster (an explicit
``cluster=``, or static M), takes the default's tail. None: :data:`LOSS_TAIL_CLUSTER_MEASURED`
decides; True / False: everywhere or nowhere (the probe, the tests). Measured by
``PROBE_ARGS="--budget-s 120" bash tools/gpu.sh probe:rows_small``."""
LOSS_TAIL_CLUSTER_MEASURED: dict[str, tuple[tuple[int, int], ...]] = rows_common.half_as_bfloat16({
    # (tools/probes/rows_small.py on an H200, the seventh session of 2026-11-29, GPU time of the mean at
    # N = 4096 with clusters of up to 16, us: float32 M = 8 3.38 -> 2.39, 16 3.21 -> 2.51; bfloat16 8
    # 3.51 -> 2.48, 16 3.51 -> 2.51; the same bits. The cost where it falls back or needs no partner:
    # M = 1 +0.05 (1.94 -> 1.99), M = 64 +0.1 (3.52 -> 3.63), 8192 within 0.5%)
    F32.name: ((4096, 4096),),
    BF16.name: ((4096, 4096),),
})
"""Where :data:`LOSS_TAIL_CLUSTER` is on: the element type's name -> ranges of N (never M)."""
LOSS_TAIL_CLUSTER_MAX = 16
"""The largest grid :data:`LOSS_TAIL_CLUSTER` launches as one cluster: 16, the non-portable
size, which the launch layer opts into past 8 (measured: M = 16 at 0.72 of the default's time
where 8, the portable size, leaves it to the default's tail). Measured slower in the seventh
session and removed (docs/rows.md): the barrier form (plain stores, a fence and a cluster barrier:
M = 8 at 0.74 / 0.76 of the default's time against 0.71), the fold of M = 17 to 64 into one
cluster of 16 (1.28 to 1.42 at M = 64) and the cluster's start after the first row's loads
(within 2%); and, for the default tail, the polled slots and the early ticket (1.04 to 1.12 at
M = 8 and 8192)."""


@dataclass
class LossCluster:
    """:data:`LOSS_TAIL_CLUSTER`'s state from the kernel's start (:func:`loss_cluster_begin`)."""

    whole: SSAValue
    """i1: the grid is one cluster of 2 or more CTAs (``%cluster_nctarank == %nctaid.x > 1``)."""
    slots: SSAValue
    """shared float32 [2 x MAX]: CTA rank r's pair at byte 8 r (the leader's are read)."""
    mbar: SSAValue
    """shared i64 [1]: the leader's mbarrier, counting the slots' bytes."""


def _whole_grid_cluster(e: Emitter) -> SSAValue:
    """i1: the grid is one cluster of 2 or more CTAs."""
    size, ctas = e.sreg(SpecialRegister.CLUSTER_NCTARANK), e.sreg(SpecialRegister.NCTAID_X)
    return e.and_pred(e.cmp("eq", size, ctas), e.cmp("ugt", size, 1))


def _loss_cluster(p: RowPlan, op: NormalizeRowsOp) -> bool:
    """Whether plan ``p``'s cross_entropy reduction takes :data:`LOSS_TAIL_CLUSTER`'s tail."""
    return (LOSS_TAIL_SHORT and LOSS_PARTIALS and op.reduced is not None and op.reduction is not None and p.cluster == 1
            and p.m is None and setting_of(LOSS_TAIL_CLUSTER, LOSS_TAIL_CLUSTER_MEASURED, p.dtype.name, op.cols))


def loss_cluster_begin(e: Emitter, p: RowPlan, op: NormalizeRowsOp, tid: SSAValue) -> LossCluster | None:
    """:data:`LOSS_TAIL_CLUSTER`'s start, before the rows (None where it is off): where the
    grid is one cluster, the leader's mbarrier initialized with its bytes announced, made
    visible to the cluster, and every thread's relaxed arrival on the cluster barrier."""
    if not _loss_cluster(p, op):
        return None
    assert 2 <= LOSS_TAIL_CLUSTER_MAX <= 16, LOSS_TAIL_CLUSTER_MAX
    slots = e.shared([2 * LOSS_TAIL_CLUSTER_MAX], f32, "loss_cluster_slots")
    ctas = e.sreg(SpecialRegister.NCTAID_X)
    whole = _whole_grid_cluster(e)
    lc = LossCluster(whole, slots, e.shared([1], i64, "loss_cluster_mbar"))
    mbar = lc.mbar

    def begin(b: Emitter) -> list[SSAValue]:
        def init(c: Emitter) -> list[SSAValue]:  # the leader's thread 0
            c.emit(MbarrierInitOp(mbar, c.const(1)))
            c.emit(MbarrierArriveExpectTxOp(mbar, c.mul_i(ctas, 8), sink=True))
            c.emit(FenceMbarrierInitOp())
            return []

        b.if_(b.and_pred(b.cmp("eq", tid, 0), b.cmp("eq", b.sreg(SpecialRegister.CLUSTER_CTARANK), 0)), init)
        b.emit(BarrierClusterArriveOp(ClusterArriveSem.RELAXED))
        return []

    e.if_(whole, begin)
    return lc


def _loss_cluster_tail(e: Emitter, op: NormalizeRowsOp, tid: SSAValue, ctas: SSAValue, part: list[SSAValue],
                       lc: LossCluster) -> None:
    """:data:`LOSS_TAIL_CLUSTER`'s end, in a grid that is one cluster: thread 0 of each CTA
    sends its ``part`` (valid in thread 0) into the leader's slot of its rank; the leader's
    warp 0 adds the slots as the default's last CTA does (lane t: ``0 + slot t``, then the
    butterfly) and its thread 0 writes ``reduced``."""
    mbar = lc.mbar
    e.emit(BarrierClusterWaitOp(acquire=True))  # (the leader's mbarrier initialized: every thread arrived at the start)
    rank = e.sreg(SpecialRegister.CLUSTER_CTARANK)

    def send(c: Emitter) -> list[SSAValue]:
        at = c.value(MapaOp(c.ptr_add(lc.slots, c.mul_i(rank, 8)), c.const(0)))
        c.emit(StAsyncOp(StAsyncType.F32, at, part, c.value(MapaOp(mbar, c.const(0)))))
        return []

    e.if_(e.cmp("eq", tid, 0), send)

    def lead(c: Emitter) -> list[SSAValue]:  # the leader's warp 0
        wait_phase(c, mbar, c.const(0))

        def slot(d: Emitter) -> list[SSAValue]:
            at = d.ptr_add(lc.slots, d.mul_i(tid, 8))
            return [f32_add(d, d.const(0.0, f32), d.ld(ld_type(F32), at, f32, 4 * k)) for k in range(2)]

        acc = c.if_(c.cmp("ult", tid, ctas), slot, lambda d: [d.const(0.0, f32)] * 2, [f32, f32])
        total = warp_reduce_state(c, PairSums(), acc)
        c.if_(c.cmp("eq", tid, 0), lambda d: _store_reduced(d, op, total) or [])
        return []

    e.if_(e.and_pred(e.cmp("eq", rank, 0), e.cmp("ult", tid, 32)), lead)


def reduce_loss(e: Emitter, p: RowPlan, op: NormalizeRowsOp, tid: SSAValue, m: SSAValue | int,
                totals: SSAValue | None = None, loss_cluster: LossCluster | None = None) -> None:
    """cross_entropy's ``reduced`` (docs/rows.md), after every row's loss is written (the
    rows loop and, with clusters, the cluster barrier done): each CTA takes a ticket (a
    ``u32`` counter in the kernel's workspace, zero at the launch); the last CTA sums the
    ``m`` losses and counts the rows whose target is not ignore_index, in an order fixed
    by M and the block alone (thread t: rows t, t + T, ... added in turn, then the CTA's
    tree of warp butterflies and warp partials), and thread 0 writes the sum, or the sum
    divided by the count (0 / 0: NaN, torch's empty mean), rounded once to ``reduced``'s
    type, then sets the counter back to 0. The grid does not enter the bits."""
    if op.reduced is None or op.reduction is None:
        return
    if LOSS_PARTIALS:
        _reduce_loss_partials(e, p, op, tid, m, totals, loss_cluster)
        return
    kernel = enclosing_kernel(op)
    assert kernel is not None and op.loss is not None and op.target is not None
    counter = e.ptr(add_workspace(kernel, 4), StateSpace.GLOBAL)
    last = row_ticket(e, counter, e.sreg(SpecialRegister.NCTAID_X), tid, "loss_last")
    loads = LOSS_LOADS if p.items else max(1, LOSS_LOADS // 2)

    def total(b: Emitter) -> list[SSAValue]:
        b.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
        loss0, t0 = b.ptr(op.loss, StateSpace.GLOBAL), b.ptr(op.target, StateSpace.GLOBAL)
        end = m if isinstance(m, SSAValue) else b.const(m, i64)

        def step(c: Emitter, first: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            got = []
            for k in range(loads):  # the loads first (in flight together), then the adds in row order
                row = c.add_i(first, k * p.block) if k else first

                def load(d: Emitter, row: SSAValue = row) -> list[SSAValue]:
                    v = load_vec(d, F32, d.ptr_add(loss0, d.mul_i(row, 4)), 0, 1, nc=False)[0]
                    t = d.ld(ld_type(I64), d.ptr_add(t0, d.mul_i(row, 8)), i64)
                    kept = d.selp(SelpType.F32, d.const(1.0, f32), d.const(0.0, f32), d.cmp("ne", t, d.const(op.ignored, i64)))
                    return [v, kept]

                got.append(c.if_(c.cmp("slt", row, end), load, lambda d: [d.const(0.0, f32)] * 2, [f32, f32]))
            for v, kept in got:
                acc = [f32_add(c, acc[0], v), f32_add(c, acc[1], kept)]
            return acc

        acc = b.for_(b.wide(tid), end, p.block * loads, [b.const(0.0, f32)] * 2, step)
        _write_reduced(b, p, op, tid, counter, acc)
        return []

    e.if_(last, total)


def _write_reduced(e: Emitter, p: RowPlan, op: NormalizeRowsOp, tid: SSAValue, counter: SSAValue,
                   acc: list[SSAValue]) -> None:
    """The last CTA's end of :func:`reduce_loss` (both orders): the CTA's tree of the
    threads' (loss sum, kept rows) ``acc``; thread 0 writes the sum, or the sum divided by
    the count, rounded once to ``reduced``'s type, and sets the ticket's ``counter`` back to 0."""
    s, count = cta_reduce_state(e, PairSums(), acc, tid, p.block, name="loss_totals")

    def write(c: Emitter) -> list[SSAValue]:
        _store_reduced(c, op, [s, count])
        c.st(LdStType.U32, counter, c.const(0))
        return []

    e.if_(e.cmp("eq", tid, 0), write)


def _store_reduced(e: Emitter, op: NormalizeRowsOp, total: list[SSAValue]) -> None:
    """``reduced`` from the grid's (loss sum, kept rows) ``total``: the sum, or the sum
    divided by the count, rounded once to ``reduced``'s type."""
    assert op.reduced is not None and op.reduction is not None
    od = of_ir(op.reduced.type.element_type)  # type: ignore[union-attr]
    assert od is not None
    s, count = total
    store_vec(e, od, e.ptr(op.reduced, StateSpace.GLOBAL), 0, [e.div(AT, s, count) if op.reduction.data == "mean" else s])


def _kept_loss(e: Emitter, op: NormalizeRowsOp, row: SSAValue) -> list[SSAValue]:
    """(the loss of ``row``, 1 where its target is not ignore_index else 0)."""
    assert op.loss is not None and op.target is not None
    v = load_vec(e, F32, e.ptr_add(e.ptr(op.loss, StateSpace.GLOBAL), e.mul_i(row, 4)), 0, 1, nc=False)[0]
    t = e.ld(ld_type(I64), e.ptr_add(e.ptr(op.target, StateSpace.GLOBAL), e.mul_i(row, 8)), i64)
    return [v, e.selp(SelpType.F32, e.const(1.0, f32), e.const(0.0, f32), e.cmp("ne", t, e.const(op.ignored, i64)))]


def _reduce_loss_partials(e: Emitter, p: RowPlan, op: NormalizeRowsOp, tid: SSAValue, m: SSAValue | int,
                          totals: SSAValue | None = None, loss_cluster: LossCluster | None = None) -> None:
    """:func:`reduce_loss` with :data:`LOSS_PARTIALS`: the unit's rows are ``u G + j + k S``
    (``u`` the CTA's, or its cluster's, index; ``G`` the groups a CTA, ``j < G``, ``S =
    units G``: lower_rows' and rows_bulk's rows loops); thread ``t`` adds the rows ``u G + t
    mod G + (t div G + k block / G) S`` in turn, then the CTA's tree gives the CTA's pair
    (a cluster's rank other than 0 adds none: its pair is 0, 0), written to the
    workspace's slot of the CTA; the ticket's last CTA adds the slots in CTA order
    (thread t: slots t, t + block, ..., then the tree) and zeroes them."""
    kernel = enclosing_kernel(op)
    assert kernel is not None and op.loss is not None and op.target is not None
    ws = e.ptr(add_workspace(kernel, 16 + 8 * p.ctas), StateSpace.GLOBAL)
    counter = ws
    slots = e.ptr_add(ws, e.const(16, i64))
    end = m if isinstance(m, SSAValue) else e.const(m, i64)
    log_c = p.cluster.bit_length() - 1
    ctas = e.sreg(SpecialRegister.NCTAID_X)
    cta = e.sreg(SpecialRegister.CTAID_X)
    unit = e.wide(e.shr_u32(cta, log_c) if p.cluster > 1 else cta)
    units = e.wide(e.shr_u32(ctas, log_c) if p.cluster > 1 else ctas)
    groups = p.groups
    step_rows = e.mul_i(units, groups) if groups > 1 else units  # S
    if groups > 1:
        j = e.wide(e.and_b32(tid, groups - 1))
        k0 = e.wide(e.shr_u32(tid, groups.bit_length() - 1))
        start = e.add_i(e.add_i(e.mul_i(unit, groups), j), e.mul_i(k0, step_rows))
    else:
        start = e.add_i(unit, e.mul_i(e.wide(tid), step_rows))
    if p.cluster > 1:  # (rank 0 wrote the cluster's losses)
        start = e.value(arith.SelectOp(e.cmp("eq", e.sreg(SpecialRegister.CLUSTER_CTARANK), 0), start, end))

    def add_row(c: Emitter, row: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
        v, kept = _kept_loss(c, op, row)
        return [f32_add(c, acc[0], v), f32_add(c, acc[1], kept)]

    def reloaded(c: Emitter) -> list[SSAValue]:  # the CTA's rows' losses read back, the CTA's tree
        c.bar_sync()  # the CTA's losses written (store_stats: a group's thread 0)
        acc = c.for_(start, end, c.mul_i(step_rows, p.block // groups), [c.const(0.0, f32)] * 2, add_row)
        return cta_reduce_state(c, PairSums(), acc, tid, p.block, name="loss_partial")

    short = LOSS_TAIL_SHORT and p.cluster == 1
    if short and groups == 1 and totals is not None:  # every CTA with at most one row (M <= S): thread 0's totals

        def own(c: Emitter) -> list[SSAValue]:
            return [c.ld(ld_type(F32), totals, f32, 4 * k) for k in range(2)]

        part = e.if_(e.cmp("sle", end, step_rows), own, reloaded, [f32, f32])
    else:
        part = reloaded(e)
    slot = e.ptr_add(slots, e.mul_i(e.wide(cta), 8))

    def total(b: Emitter) -> list[SSAValue]:
        if not short:  # (short: thread 0 acquired after its ticket, before the CTA barrier)
            b.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))

        def loaded(c: Emitter, at: SSAValue) -> list[SSAValue]:
            pair = load_vec(c, F32, at, 0, 2, nc=False)
            store_vec(c, F32, at, 0, [c.const(0.0, f32)] * 2)  # (the workspace left zeroed)
            return pair

        def add_slot(c: Emitter, k: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            pair = loaded(c, c.ptr_add(slots, c.mul_i(k, 8)))
            return [f32_add(c, acc[0], pair[0]), f32_add(c, acc[1], pair[1])]

        acc = b.for_(b.wide(tid), b.wide(ctas), p.block, [b.const(0.0, f32)] * 2, add_slot)
        _write_reduced(b, p, op, tid, counter, acc)
        return []

    if not short:
        def put(c: Emitter) -> list[SSAValue]:
            store_vec(c, F32, slot, 0, part)
            return []

        e.if_(e.cmp("eq", tid, 0), put)
        last = row_ticket(e, counter, ctas, tid, "loss_last")
        e.if_(last, total)
        return

    def grid(b: Emitter) -> list[SSAValue]:  # thread 0 alone stores, releases, takes the ticket, acquires
        flag = b.shared([1], i32, "loss_last")

        def t0(c: Emitter) -> list[SSAValue]:
            store_vec(c, F32, slot, 0, part)
            c.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
            t = c.value(AtomOp(AtomOpKind.ADD, AtomType.U32, counter, c.const(1)))
            is_last = c.cmp("eq", t, c.add_i(ctas, -1))

            def acquire(d: Emitter) -> list[SSAValue]:
                d.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
                return []

            c.if_(is_last, acquire)
            c.st(LdStType.B32, flag, c.value(arith.SelectOp(is_last, c.const(1), c.const(0))))
            return []

        b.if_(b.cmp("eq", tid, 0), t0)
        b.bar_sync()
        b.if_(b.cmp("ne", b.ld(LdStType.B32, flag, i32), 0), total)
        return []

    def alone(b: Emitter) -> list[SSAValue]:  # the grid's one CTA: its pair is the total (0 + pair: the last CTA's sum)
        def write(c: Emitter) -> list[SSAValue]:
            _store_reduced(c, op, [f32_add(c, c.const(0.0, f32), v) for v in part])
            return []

        b.if_(b.cmp("eq", tid, 0), write)
        return []

    if loss_cluster is None:
        e.if_(e.cmp("eq", ctas, 1), alone, grid)
        return
    rule = kernel.attributes.get(GRID_ROWS_ATTR)  # (lower_rows' loop set [per, cap]; the launch: grids to MAX one cluster)
    assert isinstance(rule, ArrayAttr) and len(rule.data) == 2, rule
    kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([*rule.data, IntegerAttr(LOSS_TAIL_CLUSTER_MAX, i64)])
    lc = loss_cluster

    def clustered(b: Emitter) -> list[SSAValue]:
        _loss_cluster_tail(b, op, tid, ctas, part, lc)
        return []

    e.if_(e.cmp("eq", ctas, 1), alone, lambda b: b.if_(lc.whole, clustered, grid))
