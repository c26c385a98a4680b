"""What the lowerings of ``bulkred.normalize_rows`` share (``rows_warp``, ``rows_cta``,
``rows_cluster``, ``rows_stream``; docs/rows.md): the plan of a kernel, its predicates,
and one lowering of a row that each variant configures.

A *group* of ``G`` threads (a warp, or a whole CTA) owns one row at a time; the CTA's
groups take rows ``g, g + groups, ...`` (a grid-stride loop). Thread ``t`` of a group
reads the vectors ``t, t + G, t + 2G, ...`` of the row (``V`` elements each:
``ld.global.nc.v4.f32``, 8-byte ``ld.v4.b16`` of bfloat16 and float16 (16-byte bfloat16
vectors with :data:`WIDE_BF16`); scalar loads when N or a row stride is not a multiple of
V). Each thread accumulates in
float32, then the group combines (``shfl.sync`` butterfly in a warp; warp partials
through shared memory in a CTA) and every thread of the group holds the row's
statistics. With a cluster (``rows_cluster``) CTA rank r holds its slice of the row
(vectors ``[r * S, (r + 1) * S)``) and the CTAs combine their partials through
distributed shared memory (:func:`reduce_state`). softmax's maximum and sum of
exponentials are one reduction of (m, s) pairs (:class:`_Exps`, Quack's packing): one
exchange per row.

* **registers** (``rows_warp``, ``rows_cta``, ``rows_cluster``): every thread keeps its
  ``K`` vectors in registers after the one read of ``x``; the statistics come from the
  registers (layer_norm's variance from a second pass over them, ``sum((x - mean)^2)``),
  then ``y`` is written: one read of ``x``, one write of ``y``.
* **stream** (``rows_stream``, rows of any length): a first pass accumulates the
  statistics (softmax online: the running maximum and the sum rescaled as it grows;
  layer_norm's sums shifted by the row's first element), a second pass reads ``x`` again
  and writes ``y``: two reads of ``x``.

The configuration (``G``, the CTA's threads, ``V``, ``K``) depends on N, the element
type and the row strides only, never on M: every row is computed by the same
instructions in the same order whatever the batch, so its bits do not depend on M or on
the row's position (batch invariance). The grid's size (how many CTAs share the rows)
does depend on M, which changes no row's arithmetic. With a dynamic M (``memref<?xN>``)
the kernel takes M as an ``i64`` parameter after its buffers (:func:`rows_parameter`,
``bulkred.dims``) and the launch chooses the grid from it (``bulkred.grid_rows``): one
kernel for every M.

The backward kinds: softmax's and log_softmax's (:func:`_registers_backward`,
:func:`_stream_backward`: one row sum), the norms' (:func:`_registers_norm_backward`,
:func:`_stream_norm_backward`: dx from the stored statistics and one or two row sums;
dweight and dbias as per-unit float32 partial rows added in a fixed order,
:class:`_Columns`, :func:`_finish_columns`) and cross_entropy's (:func:`_ce_backward`:
elementwise from the stored lse).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DYNAMIC_INDEX, ArrayAttr, FunctionType, IntegerAttr, MemRefType, f32, i16, i32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.dtypes import DTYPES, DType, of_ir
from bulkred_dialect.ops.kernel_attrs import DIMS_ATTR, GRID_ROWS_ATTR
from bulkred_dialect.ops.ptx.arith import AndOp, ArithType, MulOp, OrOp, RoundingMode, ShlOp, SubOp, XorOp
from bulkred_dialect.ops.ptx.atom import AtomOp, AtomOpKind, AtomType, FenceOp, FenceSem, MemScope
from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.control import CvtOp, CvtType, SelpType
from bulkred_dialect.ops.ptx.memory import LdStType, MovOp
from bulkred_dialect.ops.ptx.sync import MapaOp
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceKind, enclosing_kernel
from bulkred_dialect.ops.tile.rows import (
    GRAD_ROWS_KINDS,
    NORM_BACKWARD_KINDS,
    RMS_KINDS,
    SOFTMAX_BACKWARD_KINDS,
    NormalizeRowsOp,
    NormKind,
    row_stride,
)
from bulkred_dialect.passes.elements import ELEMS, ld_type
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import WARP, Predicate
from bulkred_dialect.passes.variants.grid_common import add_workspace, alone_in_kernel, require_alignment, set_launch
from bulkred_dialect.passes.variants.kernel import cta_reduce_state, emitter_at, sm_count, warp_reduce_state

F32 = DTYPES["float32"]
BF16 = DTYPES["bfloat16"]
I64 = DTYPES["int64"]
EXP_KINDS = (NormKind.SOFTMAX, NormKind.LOG_SOFTMAX, NormKind.CROSS_ENTROPY)
"""The kinds whose statistics are the row's maximum and sum of exponentials."""
ELEM_F32 = ELEMS["float32"]
AT = ArithType.F32
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
FLT_MAX = 3.4028234663852886e38

COLUMN_SUM_CTAS = 2
"""CTAs per multiprocessor, at most, of a norm's backward with dweight or dbias: each
unit (a CTA, or a cluster) writes a float32 partial row of the column sums, which the
last CTA adds in unit order, so fewer units cost less there."""
COLUMN_SUM_FLOATS = 1 << 24
"""The most float32 partial values of the column sums (units x N x outputs: 64 MiB of
workspace): long rows get fewer units."""

MAX_VALUES = 32
"""Float32 values a thread keeps in registers (``K * V``) in the registers variants."""

WIDE_BF16 = False
"""With True, bfloat16 rows move in 16-byte vectors of 8 elements (``ld.v4.b32``, each word
split into two float32 by shifts; stores packed back into words) instead of 8-byte
``ld.v4.b16``: measured on an H200 (docs/rows.md), no faster (0 to 4.6% slower in 8 cells),
so off."""


@dataclass(frozen=True)
class RowPlan:
    """How one kernel normalizes its rows: ``group`` threads per row, ``block`` threads
    per CTA (``block // group`` rows at a time), ``vec`` elements per load, ``items``
    vectors per thread held in registers (0: stream the row twice), ``unroll`` loads in
    flight per step of a streaming loop, ``ctas`` CTAs."""

    kind: NormKind
    dtype: DType
    m: int | None  # None: dynamic (the kernel's i64 parameter after its buffers; the grid chosen at the launch)
    n: int
    sx: int
    sy: int
    vec: int
    group: int
    block: int
    items: int
    unroll: int
    ctas: int
    cluster: int = 1
    slice: int = 0  # with a cluster: the vectors of the row each CTA holds (items * block)

    @property
    def vectors(self) -> int:
        """Vectors in a row (N / V)."""
        return self.n // self.vec

    @property
    def groups(self) -> int:
        """Rows a CTA works on at a time."""
        return self.block // self.group

    @property
    def exact(self) -> bool:
        """A cluster's slices cover the row exactly (no vector of any CTA is past N)."""
        return self.cluster * self.slice == self.vectors


def dtype_of(op: NormalizeRowsOp) -> DType:
    d = of_ir(op.x.type.element_type)  # type: ignore[union-attr]
    assert d is not None
    return d


def vector_of(op: NormalizeRowsOp) -> int:
    """Elements per load: 4 (16 bytes of float32, 8 of a 16-bit type; 8 bfloat16 with
    :data:`WIDE_BF16`), where N and every row stride are multiples of it; else 1."""
    d = dtype_of(op)
    v = 8 if WIDE_BF16 and d.name == "bfloat16" else ELEMS[d.name].vector
    grad = op.grad if op.norm_kind in GRAD_ROWS_KINDS else None  # (cross_entropy_backward's is [M])
    rows = [b.type for b in (op.x, op.y, grad, op.residual, op.residual_out) if b is not None]
    ok = op.cols % v == 0 and all(row_stride(t) % v == 0 for t in rows)  # type: ignore[arg-type]
    return v if ok else 1


def plan(op: NormalizeRowsOp, target: Target, *, group: int, block: int, items: int, unroll: int = 4,
         ctas_per_sm: int = 8, cluster: int = 1) -> RowPlan:
    """The plan of ``op`` with these settings (the variant chooses them from N and the
    element type); the grid covers the rows, at most ``ctas_per_sm`` CTAs per
    multiprocessor; with ``cluster`` > 1 a cluster of that many CTAs per row, each
    holding ``items * block`` vectors of it (``group`` is then ``block``). With a dynamic
    M the grid is that largest one, and the launch takes :func:`grid_for_rows`'s share of it."""
    xt = op.x.type
    assert isinstance(xt, MemRefType)
    sy = row_stride(op.y.type) if op.y is not None else 0  # type: ignore[arg-type]
    groups = block // group
    cap = max(1, sm_count(target) * ctas_per_sm // cluster)
    sums = (op.dweight is not None) + (op.dbias is not None)
    if sums:  # a partial row per unit, summed by the last CTA: fewer units (docs: COLUMN_SUM_CTAS)
        cap = max(1, min(cap, sm_count(target) * COLUMN_SUM_CTAS // cluster, COLUMN_SUM_FLOATS // (op.cols * sums)))
    units = cap if op.rows is None else min(cap, -(-op.rows // groups))
    return RowPlan(
        op.norm_kind, dtype_of(op), op.rows, op.cols, row_stride(xt), sy, vector_of(op),
        group, block, items, unroll, units * cluster, cluster, items * block if cluster > 1 else 0,
    )


def items_for(op: NormalizeRowsOp, group: int) -> int:
    """Vectors per thread to hold a whole row in a group of ``group`` threads."""
    vectors = op.cols // vector_of(op)
    return -(-vectors // group)


# region Predicates


def _row_length(limit: Callable[[NormalizeRowsOp], int], what: str):
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        assert isinstance(op, NormalizeRowsOp)
        lim = limit(op)
        return op.cols <= lim, f"N = {op.cols} ({dtype_of(op).name}, limit {lim}{what})"

    return check


def row_predicates(limit: Callable[[NormalizeRowsOp], int] | None, expected: str, what: str = "") -> list[Predicate]:
    """``kernel`` (the op alone in its kernel, on its parameters) and, with ``limit``,
    ``row_length`` (N at most ``limit(op)``)."""
    preds = [Predicate("kernel", alone_in_kernel, expected="alone, on parameters")]
    if limit is not None:
        preds.append(Predicate("row_length", _row_length(limit, what), expected=expected))
    return preds


# endregion

# region Float32 arithmetic


def _sub(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(SubOp(AT, a, b, rnd=RoundingMode.RN))


def _mul(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(MulOp(AT, a, b, rnd=RoundingMode.RN))


def _add(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.combine(ReduceKind.SUM, F32, a, b)


def _exp(e: Emitter, x: SSAValue) -> SSAValue:
    """``exp(x)`` as ``ex2.approx(x * log2(e))``."""
    return e.ex2(_mul(e, x, e.const(LOG2E, f32)))


def _log(e: Emitter, x: SSAValue) -> SSAValue:
    return _mul(e, e.lg2(x), e.const(LN2, f32))


def _rsqrt(e: Emitter, x: SSAValue) -> SSAValue:
    """``1 / sqrt(x)``, each step rounded to nearest (once per row)."""
    return e.rcp(AT, e.sqrt(AT, x))


def _kahan(e: Emitter, s: SSAValue, c: SSAValue, v: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Kahan's compensated ``s + v`` (``c``: the running compensation, the low-order part
    lost so far, subtracted at the next step): ``(s', c')``. The row's total is ``s - c``
    at the end. Its error does not grow with the number of terms (a plain running sum's
    does: a thread streaming a long row adds hundreds of them); an infinity makes it NaN
    (``inf - inf`` in the compensation), as torch's Welford sums give it."""
    y = _sub(e, v, c)
    t = _add(e, s, y)
    return t, _sub(e, _sub(e, t, s), y)


# endregion

# region Loads and stores


def _load(e: Emitter, d: DType, p: SSAValue, offset: int, vec: int, *, nc: bool = True) -> list[SSAValue]:
    """``vec`` elements of ``d`` at ``p + offset`` bytes, as float32 (``nc``: through the
    non-coherent cache, for data the kernel does not write): one vector load of at most
    16 bytes each; 8 bfloat16 as 4 words (:func:`_bf16_halves`)."""
    if offset >= 2**31:
        p, offset = e.ptr_add(p, offset), 0
    if vec * d.bytes > 16:
        half = vec // 2
        return _load(e, d, p, offset, half, nc=nc) + _load(e, d, p, offset + half * d.bytes, half, nc=nc)
    t = ld_type(d)
    if vec == 1:
        vals = [e.ld(t, p, d.ir, offset)]
    elif vec == 8 and d.name == "bfloat16":
        require_alignment(p, 16)
        words = e.ld_vec(LdStType.B32, p, i32, 4, offset, nc=nc)
        return [h for w in words for h in _bf16_halves(e, w)]
    else:
        require_alignment(p, vec * d.bytes)
        vals = e.ld_vec(t, p, d.ir, vec, offset, nc=nc)
    return [e.convert(v, d, F32) for v in vals]


def _bf16_halves(e: Emitter, w: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The two bfloat16 of a 32-bit word (the first element in the low half) as float32:
    a bfloat16's bits are the high half of its float32's."""
    lo = e.value(ShlOp(ArithType.B32, w, e.const(16)))
    hi = e.value(AndOp(ArithType.B32, w, e.const(-65536)))  # 0xffff0000
    return e.value(MovOp(lo, f32)), e.value(MovOp(hi, f32))


def _bf16_word(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    """Two float32 rounded to bfloat16 (``cvt.rn``) and packed in a 32-bit word, ``a`` in
    the low half."""
    lo, hi = (
        e.value(CvtOp(CvtType.U32, CvtType.U16, e.value(MovOp(e.convert(v, F32, BF16), i16)), i32)) for v in (a, b)
    )
    return e.value(OrOp(ArithType.B32, lo, e.value(ShlOp(ArithType.B32, hi, e.const(16)))))


def _store(e: Emitter, d: DType, p: SSAValue, offset: int, vals: Sequence[SSAValue]) -> None:
    if offset >= 2**31:
        p, offset = e.ptr_add(p, offset), 0
    t = ld_type(d)
    if len(vals) == 8 and d.name == "bfloat16":
        require_alignment(p, 16)
        e.st_vec(LdStType.B32, p, [_bf16_word(e, vals[i], vals[i + 1]) for i in range(0, 8, 2)], offset)
        return
    if len(vals) * d.bytes > 16:
        half = len(vals) // 2
        _store(e, d, p, offset, vals[:half])
        _store(e, d, p, offset + half * d.bytes, vals[half:])
        return
    out = [e.convert(v, F32, d) for v in vals]
    if len(out) == 1:
        e.st(t, p, out[0], offset)
    else:
        require_alignment(p, len(out) * d.bytes)
        e.st_vec(t, p, out, offset)


@dataclass
class _Buf:
    """A buffer read or written by vectors: its element type and the thread's first
    vector's address in the current row."""

    dtype: DType
    base: SSAValue

    def at(self, e: Emitter, first: SSAValue | int, vec: int) -> tuple[SSAValue, int]:
        """The address and static byte offset of the vector ``first`` vectors after the
        thread's first (an ``i64`` value or an int)."""
        step = vec * self.dtype.bytes
        if isinstance(first, int):
            return self.base, first * step
        return e.ptr_add(self.base, e.mul_i(first, step)), 0

    def load(self, e: Emitter, first: SSAValue | int, vec: int, extra: int = 0, *, nc: bool = True) -> list[SSAValue]:
        p, off = self.at(e, first, vec)
        return _load(e, self.dtype, p, off + extra * vec * self.dtype.bytes, vec, nc=nc)

    def store(self, e: Emitter, first: SSAValue | int, vec: int, vals: Sequence[SSAValue], extra: int = 0) -> None:
        p, off = self.at(e, first, vec)
        _store(e, self.dtype, p, off + extra * vec * self.dtype.bytes, vals)


# endregion


@dataclass
class _Row:
    """One row being lowered: the plan, the thread's place in its group, its buffers."""

    p: RowPlan
    op: NormalizeRowsOp
    g: SSAValue  # the thread's index in its group (i32)
    tid: SSAValue  # the thread's index in the CTA (i32)
    x: _Buf
    y: _Buf | None  # None: cross_entropy (no y)
    w: _Buf | None
    b: _Buf | None
    row_x: SSAValue  # the row's first element in x
    first: SSAValue | None = None  # with a cluster: the thread's first vector in the row (i32)
    rank: SSAValue | None = None  # with a cluster: the CTA's rank in it (i32)
    res: _Buf | None = None  # add_rms_norm: residual
    hout: _Buf | None = None  # add_rms_norm: residual_out (x + residual)
    parity: SSAValue | None = None  # with a cluster: the row's parity (i32), which of two exchange slots
    grad: _Buf | None = None  # the backward kinds: the forward output's gradient
    sw: SSAValue | None = None  # the thread's first vector in the row (i64)

    # region Visiting a thread's vectors

    def load_item(self, e: Emitter, first: SSAValue | int, extra: int = 0) -> list[SSAValue]:
        """The row's values of one vector as float32: x's; with add_rms_norm
        ``h = x + residual`` rounded to x's type, which is written to residual_out here."""
        vec = self.p.vec
        xs = self.x.load(e, first, vec, extra)
        if self.res is None:
            return xs
        assert self.hout is not None
        hs = [_add(e, a, c) for a, c in zip(xs, self.res.load(e, first, vec, extra), strict=True)]
        if self.p.dtype != F32:  # torch rounds x + residual to its type, then normalizes that
            hs = [e.convert(e.convert(h, F32, self.p.dtype), self.p.dtype, F32) for h in hs]
        self.hout.store(e, first, vec, hs, extra)
        return hs

    def reload_item(self, e: Emitter, first: SSAValue | int, extra: int = 0) -> list[SSAValue]:
        """The row's values of one vector again (the second pass of rows_stream): x's, or
        add_rms_norm's h read back from residual_out (written by this kernel: no ``.nc``)."""
        if self.hout is None:
            return self.x.load(e, first, self.p.vec, extra)
        return self.hout.load(e, first, self.p.vec, extra, nc=False)

    def partial(self, e: Emitter) -> tuple[int, SSAValue | None]:
        """(vectors every thread has, the condition of the one more some threads have)."""
        full, rest = divmod(self.p.vectors, self.p.group)
        return full, (e.cmp("ult", self.g, rest) if rest else None)

    def item_conds(self, e: Emitter) -> list[SSAValue | None]:
        """For each vector the thread may hold (in registers), None where every thread
        has it, else the condition that this thread has it."""
        p = self.p
        if p.cluster == 1:
            full, cond = self.partial(e)
            return [None] * full + ([cond] if cond is not None else [])
        if p.exact:
            return [None] * p.items
        assert self.first is not None
        return [e.cmp("ult", e.add_i(self.first, k * p.group) if k else self.first, p.vectors) for k in range(p.items)]

    def neutral(self, e: Emitter) -> SSAValue:
        """A value that leaves the statistics unchanged: -inf for softmax's maximum (its
        exp adds 0), 0 for the sums."""
        if self.p.kind in EXP_KINDS:
            return e.const(float("-inf"), f32)
        return e.const(0.0, f32)

    # endregion

    # region Group reductions

    def reduce(self, e: Emitter, kind: ReduceKind, v: SSAValue, name: str) -> SSAValue:
        """``v`` combined over the group (with a cluster: over its CTAs too); every thread
        of the group gets the result."""
        return self._state(e, _Scalar(kind), [v], name)[0]

    def reduce_exps(self, e: Emitter, m: SSAValue, s: SSAValue) -> tuple[SSAValue, SSAValue]:
        """softmax's (max, sum of exponentials) over the group, from each thread's (m, s)
        (:class:`_Exps`): the row's maximum (clamped to at least -FLT_MAX) and its sum."""
        big, total = self._state(e, _Exps(), [m, s], "row_exps")
        return big, total

    def _state(self, e: Emitter, st, v: list[SSAValue], name: str) -> list[SSAValue]:
        p = self.p
        return reduce_state(e, st, v, self.tid, p.block, p.group, p.cluster, self.parity, name)

    # endregion

    # region Outputs

    def out(self, e: Emitter, v: SSAValue, j: int, s: dict[str, SSAValue], w: list[SSAValue] | None,
            b: list[SSAValue] | None) -> SSAValue:
        """y of one element ``v`` (float32) from the row's statistics ``s``; ``w`` and
        ``b`` the item's weight and bias values (or None)."""
        kind = self.p.kind
        if kind == NormKind.SOFTMAX:
            return _mul(e, _exp(e, _sub(e, v, s["max"])), s["inv_sum"])
        if kind == NormKind.LOG_SOFTMAX:
            return _sub(e, _sub(e, v, s["max"]), s["log_sum"])
        if kind in RMS_KINDS:
            r = _mul(e, v, s["rstd"])
            return _mul(e, r, w[j]) if w is not None else r
        r = _mul(e, _sub(e, v, s["mean"]), s["rstd"])
        if w is not None and b is not None:
            return e.fma(AT, r, w[j], b[j])
        if w is not None:
            return _mul(e, r, w[j])
        return _add(e, r, b[j]) if b is not None else r

    def write_item(self, e: Emitter, first: SSAValue | int, vals: list[SSAValue], s: dict[str, SSAValue],
                   extra: int = 0) -> None:
        vec = self.p.vec
        w = self.w.load(e, first, vec, extra) if self.w is not None else None
        b = self.b.load(e, first, vec, extra) if self.b is not None else None
        assert self.y is not None
        self.y.store(e, first, vec, [self.out(e, v, j, s, w, b) for j, v in enumerate(vals)], extra)

    def store_stats(self, e: Emitter, row: SSAValue, s: dict[str, SSAValue]) -> None:
        """Thread 0 of the group writes the statistics the op asks for."""
        op = self.op
        wanted = [(buf, s[key]) for buf, key in ((op.row_max, "max"), (op.row_sum, "sum"), (op.mean, "mean"),
                                                 (op.rstd, "rstd"), (op.lse, "lse")) if buf is not None]
        ce = op.norm_kind == NormKind.CROSS_ENTROPY
        if not wanted and not ce:
            return

        def write(c: Emitter) -> list[SSAValue]:
            off = c.mul_i(row, 4)
            for buf, v in wanted:
                c.st(ld_type(F32), c.ptr_add(c.ptr(buf, StateSpace.GLOBAL), off), v)
            if ce:
                assert op.loss is not None
                c.st(ld_type(F32), c.ptr_add(c.ptr(op.loss, StateSpace.GLOBAL), off), self.loss(c, row, s))
            return []

        first = e.cmp("eq", self.g, 0)
        if self.rank is not None:  # and.pred (arith.andi does not lower to ptx)
            first = e.and_pred(first, e.cmp("eq", self.rank, 0))
        e.if_(first, write)

    # endregion

    def loss(self, e: Emitter, row: SSAValue, s: dict[str, SSAValue]) -> SSAValue:
        """cross_entropy's loss of the row: ``lse - (1 - ls) * x[t] - ls * mean(x)`` for its
        target t (``x[t]`` read again, one element), 0 where t is ``ignore_index``, NaN
        where t is outside [0, N)."""
        op, p = self.op, self.p
        assert op.target is not None
        t = e.ld(ld_type(I64), e.ptr_add(e.ptr(op.target, StateSpace.GLOBAL), e.mul_i(row, 8)), i64)
        inside = e.cmp("ult", t, e.const(p.n, i64))
        xt = e.if_(inside, lambda b: _load(b, p.dtype, b.ptr_add(self.row_x, b.mul_i(t, p.dtype.bytes)), 0, 1),
                   lambda b: [b.const(float("nan"), f32)], [f32])[0]
        ls = op.smoothing
        loss = _sub(e, s["lse"], _mul(e, xt, e.const(1.0 - ls, f32)) if ls else xt)
        if ls:
            loss = _sub(e, loss, _mul(e, s["mean_x"], e.const(ls, f32)))
        kept = e.cmp("ne", t, e.const(op.ignored, i64))
        return e.selp(SelpType.F32, loss, e.const(0.0, f32), kept)

    # endregion

    # region Statistics

    def finish(self, e: Emitter, sums: dict[str, SSAValue]) -> dict[str, SSAValue]:
        """The statistics of the row from the group's combined sums."""
        kind, n = self.p.kind, float(self.p.n)
        eps = e.const(self.op.eps.value.data, f32) if self.op.eps is not None else None
        if kind in EXP_KINDS:
            out = {"max": sums["max"], "sum": sums["sum"]}
            if kind == NormKind.SOFTMAX:
                out["inv_sum"] = e.rcp(AT, sums["sum"])
            else:
                out["log_sum"] = _log(e, sums["sum"])
            if kind == NormKind.CROSS_ENTROPY:
                out["lse"] = _add(e, sums["max"], out["log_sum"])
                if "sum_x" in sums:
                    out["mean_x"] = e.div(AT, sums["sum_x"], e.const(n, f32))
            return out
        if kind in RMS_KINDS:
            ms = e.div(AT, sums["sq"], e.const(n, f32))
            return {"rstd": _rsqrt(e, _add(e, ms, eps))}
        return {"mean": sums["mean"], "rstd": _rsqrt(e, _add(e, sums["var"], eps))}

    # endregion


@dataclass(frozen=True)
class _Scalar:
    """One float32 combined by ``kind`` (the duck type of passes/fused.py's Reducer that
    variants/kernel.py's warp and CTA steps read)."""

    kind: ReduceKind
    width: int = 1
    elem = ELEM_F32
    absmax = False
    types = (f32,)
    dtypes = (F32,)

    def neutral(self, e: Emitter) -> list[SSAValue]:
        return [e.identity(self.kind, F32)]

    def combine(self, e: Emitter, a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        return [e.combine(self.kind, F32, a[0], b[0])]


@dataclass(frozen=True)
class _Exps:
    """softmax's (m, s): ``s`` the sum of ``exp(x - m)`` over some elements, ``m`` their
    maximum clamped to at least -FLT_MAX (an all -inf part adds 0 and raises no
    ``-inf - -inf``). Two combine as ``M = max(m, m')``, ``s exp(m - M) + s' exp(m' - M)``:
    the maximum and the sum in one reduction (one exchange of a cluster)."""

    width: int = 2
    kind = ReduceKind.SUM  # unused (width 2)
    elem = ELEM_F32
    absmax = False
    types = (f32, f32)
    dtypes = (F32, F32)

    def neutral(self, e: Emitter) -> list[SSAValue]:
        return [e.const(-FLT_MAX, f32), e.const(0.0, f32)]

    def combine(self, e: Emitter, a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        m = e.minmax(ReduceKind.MAX, AT, a[0], b[0])
        return [m, e.fma(AT, b[1], _exp(e, _sub(e, b[0], m)), _mul(e, a[1], _exp(e, _sub(e, a[0], m))))]


@dataclass(frozen=True)
class _Moments:
    """layer_norm's streamed statistics of some elements: ``(sum, n, mean, m2)``, their
    sum of x, their count, mean and sum of squared deviations from that mean. Two combine
    as the sums and Chan's parallel variance: ``n = na + nb``, ``mean = (na ma + nb mb) /
    n``, ``m2 = ma2 + mb2 + (mb - ma)^2 na nb / n`` (no cancellation whatever the spread of
    the parts' means). Symmetric in its operands, bit for bit, as a butterfly needs."""

    width: int = 4
    kind = ReduceKind.SUM  # unused (width 4)
    elem = ELEM_F32
    absmax = False
    types = (f32,) * 4
    dtypes = (F32,) * 4

    def neutral(self, e: Emitter) -> list[SSAValue]:
        return [e.const(0.0, f32)] * 4

    def combine(self, e: Emitter, a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        n = _add(e, a[1], b[1])
        inv = e.rcp(AT, e.minmax(ReduceKind.MAX, AT, n, e.const(1.0, f32)))  # (no elements: 0, not 0 / 0)
        mean = _mul(e, _add(e, _mul(e, a[1], a[2]), _mul(e, b[1], b[2])), inv)
        d = _sub(e, b[2], a[2])
        m2 = _add(e, _add(e, a[3], b[3]), _mul(e, _mul(e, d, d), _mul(e, _mul(e, a[1], b[1]), inv)))
        return [_add(e, a[0], b[0]), n, mean, m2]


def reduce_state(e: Emitter, st, v: list[SSAValue], tid: SSAValue, block: int, group: int, cluster: int,
                 parity: SSAValue | None, name: str) -> list[SSAValue]:
    """The state ``v`` (:class:`_Scalar`, :class:`_Exps`) combined over the group, every
    thread of it getting the result: a warp butterfly; in a CTA, warp partials through
    shared memory, combined by warp 0 and broadcast; in a cluster, then, through
    distributed shared memory: thread 0 writes the CTA's state into its own slot,
    ``barrier.cluster`` (release / acquire), and every thread reads the slots of ranks
    0, 1, ... (``mapa`` + ``ld.shared::cluster``) and combines them in rank order, so that
    every CTA holds the same bits. The cluster slots are two, taken by row parity
    (``parity``, 0 or 1): a slot is written again two rows later, after a barrier every
    peer reaches only once it has read it."""
    if group == WARP and cluster == 1:
        return warp_reduce_state(e, st, v)
    part = cta_reduce_state(e, st, v, tid, block, name=name) if block > WARP else warp_reduce_state(e, st, v)
    slot_bytes = 4 * st.width
    if cluster == 1:
        slot = e.shared([st.width], f32, f"{name}_all")

        def publish(b: Emitter) -> list[SSAValue]:
            for k, x in enumerate(part):
                b.st(ld_type(F32), slot, x, 4 * k)
            return []

        e.if_(e.cmp("eq", tid, 0), publish)
        e.bar_sync()
        return [e.ld(ld_type(F32), slot, f32, 4 * k) for k in range(st.width)]
    assert parity is not None
    slots = e.shared([2 * st.width], f32, f"cluster_{name}")
    mine = e.ptr_add(slots, e.mul_i(parity, slot_bytes))

    def publish_cluster(b: Emitter) -> list[SSAValue]:
        for k, x in enumerate(part):
            b.st(ld_type(F32), mine, x, 4 * k)
        return []

    e.if_(e.cmp("eq", tid, 0), publish_cluster)
    e.cluster_sync()
    acc = None
    for rank in range(cluster):
        peer = e.value(MapaOp(mine, e.const(rank)))
        got = [e.ld(ld_type(F32), peer, f32, 4 * k) for k in range(st.width)]
        acc = got if acc is None else st.combine(e, acc, got)
    assert acc is not None
    return acc


def _registers(r: _Row, e: Emitter, row: SSAValue) -> None:
    """The row held in registers: one read of x, the statistics, one write of y."""
    p = r.p
    conds = r.item_conds(e)
    vals: list[list[SSAValue]] = []
    for k, cond in enumerate(conds):
        if cond is None:
            vals.append(r.load_item(e, k * p.group))
        else:
            vals.append(e.if_(cond, lambda b, k=k: r.load_item(b, k * p.group),
                              lambda b: [r.neutral(b)] * p.vec, [f32] * p.vec))
    flat = [v for item in vals for v in item]
    kind = p.kind
    if kind in EXP_KINDS:
        # the thread's (m, s), then the row's in one reduction; exp(x - M) = exp(x - m) * exp(m - M)
        m = _clamp(e, e.fold(ReduceKind.MAX, F32, flat))
        exps = [_exp(e, _sub(e, v, m)) for v in flat]
        big, s = r.reduce_exps(e, m, e.fold(ReduceKind.SUM, F32, exps))
        rescale = _exp(e, _sub(e, m, big))
        sums = {"max": big, "sum": s}
        if kind == NormKind.CROSS_ENTROPY:
            if r.op.smoothing:  # the sum of x (a missing vector's values are 0, not -inf)
                zero = e.const(0.0, f32)
                xs = list(flat)
                for k, cond in enumerate(conds):
                    if cond is not None:
                        xs[k * p.vec:(k + 1) * p.vec] = [e.selp(SelpType.F32, v, zero, cond) for v in xs[k * p.vec:(k + 1) * p.vec]]
                sums["sum_x"] = r.reduce(e, ReduceKind.SUM, e.fold(ReduceKind.SUM, F32, xs), "row_sum_x")
            r.store_stats(e, row, r.finish(e, sums))  # no y: one read of x
            return
        stats = r.finish(e, sums)
        if kind == NormKind.SOFTMAX:  # y = exp(x - max) / sum, from the exps already computed
            factor = _mul(e, rescale, stats["inv_sum"])
            _write_values(r, e, [_mul(e, x, factor) for x in exps], conds, stats, raw=True)
        else:
            _write_values(r, e, flat, conds, stats)
        r.store_stats(e, row, stats)
        return
    if kind in RMS_KINDS:
        sq = [e.value(MulOp(AT, v, v, rnd=RoundingMode.RN)) for v in flat]
        ss = r.reduce(e, ReduceKind.SUM, e.fold(ReduceKind.SUM, F32, sq), "row_sq")
        stats = r.finish(e, {"sq": ss})
    else:
        total = r.reduce(e, ReduceKind.SUM, e.fold(ReduceKind.SUM, F32, flat), "row_sum")
        mean = e.div(AT, total, e.const(float(p.n), f32))
        devs = [_sub(e, v, mean) for v in flat]
        zero = e.const(0.0, f32)
        for k, cond in enumerate(conds):  # a missing vector's values are 0, not 0 - mean
            if cond is not None:
                devs[k * p.vec:(k + 1) * p.vec] = [e.selp(SelpType.F32, d, zero, cond) for d in devs[k * p.vec:(k + 1) * p.vec]]
        d2 = [e.value(MulOp(AT, d, d, rnd=RoundingMode.RN)) for d in devs]
        var = e.div(AT, r.reduce(e, ReduceKind.SUM, e.fold(ReduceKind.SUM, F32, d2), "row_var"), e.const(float(p.n), f32))
        stats = r.finish(e, {"mean": mean, "var": var})
    _write_values(r, e, flat, conds, stats)
    r.store_stats(e, row, stats)


def _write_values(r: _Row, e: Emitter, flat: list[SSAValue], conds: list[SSAValue | None],
                  stats: dict[str, SSAValue], *, raw: bool = False) -> None:
    """Write y of the thread's vectors; ``raw``: ``flat`` are y's values already."""
    p = r.p

    def one(b: Emitter, k: int) -> None:
        vals = flat[k * p.vec:(k + 1) * p.vec]
        if raw:
            r.y.store(b, k * p.group, p.vec, vals)
        else:
            r.write_item(b, k * p.group, vals, stats)

    for k, cond in enumerate(conds):
        if cond is None:
            one(e, k)
            continue

        def guarded(b: Emitter, k: int = k) -> list[SSAValue]:
            one(b, k)
            return []

        e.if_(cond, guarded)


def _backward_sum(r: _Row, e: Emitter, xs: list[SSAValue], gs: list[SSAValue], acc: SSAValue | None) -> SSAValue:
    """softmax_backward's ``sum(grad * x)``, log_softmax_backward's ``sum(grad)``, of one
    thread's values, added to ``acc``."""
    for x, g in zip(xs, gs, strict=True):
        if r.p.kind == NormKind.SOFTMAX_BACKWARD:
            acc = _mul(e, x, g) if acc is None else e.fma(AT, x, g, acc)
        else:
            acc = g if acc is None else _add(e, acc, g)
    assert acc is not None
    return acc


def _backward_out(r: _Row, e: Emitter, xs: list[SSAValue], gs: list[SSAValue], s: SSAValue) -> list[SSAValue]:
    """dx of one vector from the row's sum ``s``."""
    if r.p.kind == NormKind.SOFTMAX_BACKWARD:
        return [_mul(e, x, _sub(e, g, s)) for x, g in zip(xs, gs, strict=True)]
    return [_sub(e, g, _mul(e, _exp(e, x), s)) for x, g in zip(xs, gs, strict=True)]


def _registers_backward(r: _Row, e: Emitter, row: SSAValue) -> None:
    """A backward row held in registers: one read of x and of grad, one write of dx."""
    p = r.p
    assert r.grad is not None and r.y is not None
    conds = r.item_conds(e)
    items: list[tuple[list[SSAValue], list[SSAValue]]] = []
    for k, cond in enumerate(conds):

        def both(b: Emitter, k: int = k) -> list[SSAValue]:
            return r.x.load(b, k * p.group, p.vec) + r.grad.load(b, k * p.group, p.vec)  # type: ignore[union-attr]

        v = both(e) if cond is None else e.if_(cond, both, lambda b: [b.const(0.0, f32)] * (2 * p.vec), [f32] * (2 * p.vec))
        items.append((v[:p.vec], v[p.vec:]))
    part = None
    for xs, gs in items:
        part = _backward_sum(r, e, xs, gs, part)
    assert part is not None
    s = r.reduce(e, ReduceKind.SUM, part, "row_dot")
    for k, (cond, (xs, gs)) in enumerate(zip(conds, items, strict=True)):
        if cond is None:
            r.y.store(e, k * p.group, p.vec, _backward_out(r, e, xs, gs, s))
            continue

        def guarded(b: Emitter, k: int = k, xs=xs, gs=gs) -> list[SSAValue]:
            r.y.store(b, k * p.group, p.vec, _backward_out(r, b, xs, gs, s))  # type: ignore[union-attr]
            return []

        e.if_(cond, guarded)


def _stream_backward(r: _Row, e: Emitter, row: SSAValue) -> None:
    """A backward row of any length: the sum, then x and grad read again for dx."""
    p = r.p
    assert r.grad is not None and r.y is not None
    full, cond = r.partial(e)

    def read(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        xs, gs = r.x.load(b, first, p.vec, extra), r.grad.load(b, first, p.vec, extra)  # type: ignore[union-attr]
        return [_backward_sum(r, b, xs, gs, state[0])]

    (part,) = _visit(e, p, full, cond, [e.const(0.0, f32)], read)
    s = r.reduce(e, ReduceKind.SUM, part, "row_dot")

    def write(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        xs, gs = r.x.load(b, first, p.vec, extra), r.grad.load(b, first, p.vec, extra)  # type: ignore[union-attr]
        r.y.store(b, first, p.vec, _backward_out(r, b, xs, gs, s), extra)  # type: ignore[union-attr]
        return state

    _visit(e, p, full, cond, [], write)


def _stream(r: _Row, e: Emitter, row: SSAValue) -> None:
    """The row read twice: the statistics, then y.

    layer_norm: the mean from each thread's Kahan-compensated sum of x (:func:`_kahan`; a
    thread of a long row adds hundreds of values, and a plain running sum's error grows
    with their number), summed over the group; the variance from each thread's sum of
    ``(x - s)^2``, ``s`` the thread's first value (shifted: no cancellation for a mean
    large against the spread), less ``n (mean_t - s)^2`` (``mean_t`` the thread's), the
    threads' parts combined by Chan's formula (:class:`_Moments`): an outlying ``s``
    costs its own thread's share only. (A sum shifted by the row's first element, as
    before, is ``N (mean - x[row, 0])``: its float32 rounding is ``|mean - x[row, 0]|``
    ulps of the mean's, large where the mean is near 0 and ``x[row, 0]`` is not.)"""
    p = r.p
    full, cond = r.partial(e)
    kind = p.kind
    softmax = kind in EXP_KINDS
    smooth = kind == NormKind.CROSS_ENTROPY and bool(r.op.smoothing)
    shift = None
    if kind == NormKind.LAYER_NORM:  # the variance's sums of x - (the thread's first x)
        if full:
            shift = r.x.load(e, 0, 1)[0]
        else:  # (a thread with no element: any value; its count is 0)
            assert cond is not None
            shift = e.if_(cond, lambda b: r.x.load(b, 0, 1), lambda b: [b.const(0.0, f32)], [f32])[0]

    def absorb(b: Emitter, state: list[SSAValue], vals: list[SSAValue]) -> list[SSAValue]:
        if softmax:
            t, s = state[:2]
            t1 = b.fold(ReduceKind.MAX, F32, [t, *vals])
            m0, m1 = _clamp(b, t), _clamp(b, t1)
            s = _mul(b, s, _exp(b, _sub(b, m0, m1)))
            for v in vals:
                s = _add(b, s, _exp(b, _sub(b, v, m1)))
            if smooth:
                return [t1, s, b.fold(ReduceKind.SUM, F32, [state[2], *vals])]
            return [t1, s]
        if kind in RMS_KINDS:
            (s,) = state
            for v in vals:
                s = b.fma(AT, v, v, s)
            return [s]
        s1, c1, s2 = state
        for v in vals:  # the mean: the compensated sum of x itself (not shifted: _stream's docstring)
            s1, c1 = _kahan(b, s1, c1, v)
            d = _sub(b, v, shift)
            s2 = b.fma(AT, d, d, s2)
        return [s1, c1, s2]

    if softmax:
        init = [e.const(float("-inf"), f32), e.const(0.0, f32)] + ([e.const(0.0, f32)] if smooth else [])
    elif kind in RMS_KINDS:
        init = [e.const(0.0, f32)]
    else:
        init = [e.const(0.0, f32)] * 3

    def read(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        return absorb(b, state, r.load_item(b, first, extra))

    state = _visit(e, p, full, cond, init, read)
    if softmax:
        t, s = state[:2]
        big, total = r.reduce_exps(e, _clamp(e, t), s)
        sums = {"max": big, "sum": total}
        if smooth:
            sums["sum_x"] = r.reduce(e, ReduceKind.SUM, state[2], "row_sum_x")
        stats = r.finish(e, sums)
        if kind == NormKind.CROSS_ENTROPY:  # no y: one read of x
            r.store_stats(e, row, stats)
            return
    elif kind in RMS_KINDS:
        stats = r.finish(e, {"sq": r.reduce(e, ReduceKind.SUM, state[0], "row_sq")})
    else:  # the thread's (sum, n, mean, m2), then the row's (_Moments)
        total = _sub(e, state[0], state[1])
        nt = e.const(float(full * p.vec), f32)
        if cond is not None:
            nt = e.selp(SelpType.F32, e.const(float((full + 1) * p.vec), f32), nt, cond)
        mt = e.div(AT, total, e.minmax(ReduceKind.MAX, AT, nt, e.const(1.0, f32)))
        d = _sub(e, mt, shift)  # m2 = sum((x - shift)^2) - n (mean - shift)^2 (max.NaN: a NaN stays)
        m2 = e.minmax(ReduceKind.MAX, AT, e.fma(AT, _mul(e, nt, d), _sub(e, e.const(0.0, f32), d), state[2]),
                      e.const(0.0, f32))
        st = r._state(e, _Moments(), [total, nt, mt, m2], "row_moments")
        nf = e.const(float(p.n), f32)
        stats = r.finish(e, {"mean": e.div(AT, st[0], nf), "var": e.div(AT, st[3], nf)})

    def write(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        r.write_item(b, first, r.reload_item(b, first, extra), stats, extra)
        return state

    _visit(e, p, full, cond, [], write)
    r.store_stats(e, row, stats)


def _clamp(e: Emitter, t: SSAValue) -> SSAValue:
    """``t`` raised to at least -FLT_MAX (NaN and +inf stay): the shift of a sum of
    exponentials, so that an all -inf part adds 0 (no ``-inf - -inf``). +inf is kept, as
    torch's maximum: a row with +inf gets ``inf - inf``, NaN, everywhere."""
    return e.minmax(ReduceKind.MAX, AT, t, e.const(-FLT_MAX, f32))


Visit = Callable[[Emitter, "SSAValue | int", list[SSAValue], int], list[SSAValue]]


def _visit(e: Emitter, p: RowPlan, full: int, cond: SSAValue | None, state: list[SSAValue], fn: Visit) -> list[SSAValue]:
    """``fn(e, first, state, extra)`` over the thread's vectors in order, ``unroll`` per
    loop step: the vector ``first + extra * G`` (``first`` in vectors from the thread's
    first); then the partial last one where ``cond`` holds."""
    u, g = p.unroll, p.group
    rounds, rest = divmod(full, u)
    if rounds:

        def body(b: Emitter, iv: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
            st = list(args)
            for k in range(u):
                st = fn(b, iv, st, k * g)
            return st

        state = e.for_(0, rounds * u * g, u * g, state, body)
        done = rounds * u
    else:
        done = 0
    for k in range(done, full):
        state = fn(e, k * g, state, 0)
    if cond is not None:
        types = [v.type for v in state]
        state = e.if_(cond, lambda b: fn(b, full * g, list(state), 0), lambda b: list(state), types)
    return state


# region The norms' backward and cross-entropy's


def _row_stat(e: Emitter, buf: SSAValue, row: SSAValue) -> SSAValue:
    """The float32 statistic of ``row`` in the ``[M]`` buffer ``buf`` (the forward's)."""
    return e.ld(ld_type(F32), e.ptr_add(e.ptr(buf, StateSpace.GLOBAL), e.mul_i(row, 4)), f32)


def _norm_terms(r: _Row, e: Emitter, xs: list[SSAValue], dys: list[SSAValue], ws: list[SSAValue] | None,
                st: dict[str, SSAValue]) -> tuple[list[SSAValue], list[SSAValue]]:
    """(xhat, g) of one vector: ``xhat = (x - mean) * rstd`` (rms_norm: ``x * rstd``), ``g = dy * w``."""
    xh = [_mul(e, _sub(e, x, st["mean"]) if "mean" in st else x, st["rstd"]) for x in xs]
    g = [_mul(e, dy, w) for dy, w in zip(dys, ws, strict=True)] if ws is not None else list(dys)
    return xh, g


def _norm_sums(e: Emitter, xh: list[SSAValue], g: list[SSAValue], acc: list[SSAValue | None], layer: bool) -> list[SSAValue | None]:
    """A thread's ``sum(g * xhat)`` (and layer_norm's ``sum(g)``), added to ``acc``."""
    a, b = acc
    for h, gv in zip(xh, g, strict=True):
        a = _mul(e, gv, h) if a is None else e.fma(AT, gv, h, a)
        if layer:
            b = gv if b is None else _add(e, b, gv)
    return [a, b]


def _norm_dx(r: _Row, e: Emitter, xh: list[SSAValue], g: list[SSAValue], st: dict[str, SSAValue]) -> list[SSAValue]:
    """dx of one vector: ``rstd * (g - mean(g) - xhat * mean(g * xhat))`` (rms_norm: no ``mean(g)``)."""
    out = []
    for h, gv in zip(xh, g, strict=True):
        t = _sub(e, gv, st["mean_g"]) if "mean_g" in st else gv
        out.append(_mul(e, st["rstd"], _sub(e, t, _mul(e, h, st["mean_gx"]))))
    return out


def _column_sums(e: Emitter, op: NormalizeRowsOp, dys: list[SSAValue], xh: list[SSAValue], acc: list[SSAValue]) -> list[SSAValue]:
    """The thread's column sums of one vector after this row: ``dweight += dy * xhat``,
    then ``dbias += dy`` (``acc``: V values of each of those present)."""
    v, out = len(dys), []
    if op.dweight is not None:
        out += [e.fma(AT, dy, h, a) for dy, h, a in zip(dys, xh, acc[:v], strict=True)]
    if op.dbias is not None:
        out += [_add(e, a, dy) for a, dy in zip(acc[len(out):len(out) + v], dys, strict=True)]
    return out


def _norm_row_stats(r: _Row, e: Emitter, row: SSAValue, sums: list[SSAValue | None]) -> dict[str, SSAValue]:
    """The row's ``mean(g * xhat)`` (and ``mean(g)``) over the group from the thread's sums."""
    nf = e.const(float(r.p.n), f32)
    st = {"mean_gx": e.div(AT, r.reduce(e, ReduceKind.SUM, sums[0], "row_gx"), nf)}  # type: ignore[arg-type]
    if sums[1] is not None:
        st["mean_g"] = e.div(AT, r.reduce(e, ReduceKind.SUM, sums[1], "row_g"), nf)
    return st


def _read_stats(r: _Row, e: Emitter, row: SSAValue) -> dict[str, SSAValue]:
    op = r.op
    assert op.rstd is not None
    st = {"rstd": _row_stat(e, op.rstd, row)}
    if op.mean is not None:
        st["mean"] = _row_stat(e, op.mean, row)
    return st


def _registers_norm_backward(r: _Row, e: Emitter, row: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
    """A norm's backward with the row in registers: one read of x, dy (and the weight),
    one write of dx; the thread's column sums (``acc``: per vector, V of dweight then V
    of dbias) updated."""
    p = r.p
    assert r.grad is not None and r.y is not None
    layer = p.kind == NormKind.LAYER_NORM_BACKWARD
    st = _read_stats(r, e, row)
    conds = r.item_conds(e)
    nw = p.vec if r.w is not None else 0
    items = []
    for k, cond in enumerate(conds):

        def loads(b: Emitter, k: int = k) -> list[SSAValue]:
            vals = r.x.load(b, k * p.group, p.vec) + r.grad.load(b, k * p.group, p.vec)  # type: ignore[union-attr]
            return vals + (r.w.load(b, k * p.group, p.vec) if r.w is not None else [])

        n = 2 * p.vec + nw
        v = loads(e) if cond is None else e.if_(cond, loads, lambda b: [b.const(0.0, f32)] * n, [f32] * n)
        xs, dys, ws = v[:p.vec], v[p.vec:2 * p.vec], (v[2 * p.vec:] if nw else None)
        xh, g = _norm_terms(r, e, xs, dys, ws, st)
        items.append((dys, xh, g))
    sums: list[SSAValue | None] = [None, None]
    for _, xh, g in items:
        sums = _norm_sums(e, xh, g, sums, layer)
    st.update(_norm_row_stats(r, e, row, sums))
    per = len(acc) // max(1, p.items)
    out: list[SSAValue] = []
    for k, (cond, (dys, xh, g)) in enumerate(zip(conds, items, strict=True)):
        if cond is None:
            r.y.store(e, k * p.group, p.vec, _norm_dx(r, e, xh, g, st))
        else:

            def guarded(b: Emitter, k: int = k, xh=xh, g=g) -> list[SSAValue]:
                r.y.store(b, k * p.group, p.vec, _norm_dx(r, b, xh, g, st))  # type: ignore[union-attr]
                return []

            e.if_(cond, guarded)
        if per:  # (a missing vector's loads are 0: it adds 0)
            out += _column_sums(e, r.op, dys, xh, acc[k * per:(k + 1) * per])
    return out


def _stream_norm_backward(r: _Row, e: Emitter, row: SSAValue, parts: list[_Buf]) -> None:
    """A norm's backward of a row of any length: the sums, then x, dy (and the weight)
    read again for dx; the column sums added to the unit's partial rows ``parts`` (its
    own columns: no other thread touches them)."""
    p = r.p
    assert r.grad is not None and r.y is not None
    layer = p.kind == NormKind.LAYER_NORM_BACKWARD
    st = _read_stats(r, e, row)
    full, cond = r.partial(e)

    def terms(b: Emitter, first: SSAValue | int, extra: int):
        xs, dys = r.x.load(b, first, p.vec, extra), r.grad.load(b, first, p.vec, extra)  # type: ignore[union-attr]
        ws = r.w.load(b, first, p.vec, extra) if r.w is not None else None
        return (dys, *_norm_terms(r, b, xs, dys, ws, st))

    def read(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        _, xh, g = terms(b, first, extra)
        return [v for v in _norm_sums(b, xh, g, [state[0], state[1] if layer else None], layer) if v is not None]

    zero = e.const(0.0, f32)
    state = _visit(e, p, full, cond, [zero, zero] if layer else [zero], read)
    st.update(_norm_row_stats(r, e, row, [state[0], state[1] if layer else None]))

    def write(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        dys, xh, g = terms(b, first, extra)
        r.y.store(b, first, p.vec, _norm_dx(r, b, xh, g, st), extra)  # type: ignore[union-attr]
        for k, part in enumerate(parts):
            old = part.load(b, first, p.vec, extra, nc=False)
            new = [b.fma(AT, dy, h, a) for dy, h, a in zip(dys, xh, old, strict=True)] if k == 0 and r.op.dweight is not None \
                else [_add(b, a, dy) for a, dy in zip(old, dys, strict=True)]
            part.store(b, first, p.vec, new, extra)
        return state

    _visit(e, p, full, cond, [], write)


def _ce_backward(r: _Row, e: Emitter, row: SSAValue) -> None:
    """cross_entropy's dx, elementwise from the stored lse (no reduction): ``(exp(x - lse)
    - s / N - (1 - s) [j == target]) * grad[row]``; 0 where the target is ignore_index,
    NaN where it is outside [0, N)."""
    op, p = r.op, r.p
    assert op.lse is not None and op.target is not None and op.grad is not None and r.y is not None and r.sw is not None
    lse = _row_stat(e, op.lse, row)
    t = e.ld(ld_type(I64), e.ptr_add(e.ptr(op.target, StateSpace.GLOBAL), e.mul_i(row, 8)), i64)
    dl = _row_stat(e, op.grad, row)
    inside = e.cmp("ult", t, e.const(p.n, i64))
    scale = e.selp(SelpType.F32, dl, e.const(float("nan"), f32), inside)
    kept = e.cmp("ne", t, e.const(op.ignored, i64))
    ls = op.smoothing
    sw = r.sw

    def dx(b: Emitter, first: SSAValue | int, extra: int) -> None:
        xs = r.x.load(b, first, p.vec, extra)
        # the vector's index in the row: the thread's first, + first + extra (both in vectors)
        vector = b.add_i(sw, first + extra) if isinstance(first, int) else b.add_i(b.add_i(sw, first), extra)
        tv = b.sub_i(t, b.mul_i(vector, p.vec))  # the target's place in this vector
        out = []
        for j, x in enumerate(xs):
            prob = _exp(b, _sub(b, x, lse))
            v = _sub(b, prob, b.const(ls / p.n, f32)) if ls else prob
            v = b.selp(SelpType.F32, _sub(b, v, b.const(1.0 - ls, f32)), v, b.cmp("eq", tv, b.const(j, i64)))
            # an ignored row: torch's log_softmax backward of a zero gradient, 0 - p * 0: NaN
            # where the row's softmax is NaN (a NaN or +inf in it: lse NaN), else 0
            out.append(b.selp(SelpType.F32, _mul(b, v, scale), _mul(b, prob, b.const(0.0, f32)), kept))
        r.y.store(b, first, p.vec, out, extra)  # type: ignore[union-attr]

    if p.items:
        for k, cond in enumerate(r.item_conds(e)):
            if cond is None:
                dx(e, k * p.group, 0)
            else:
                e.if_(cond, lambda b, k=k: dx(b, k * p.group, 0) or [])
        return
    full, cond = r.partial(e)
    _visit(e, p, full, cond, [], lambda b, first, st, extra: dx(b, first, extra) or st)


def _ticket(e: Emitter, counter: SSAValue, expected: SSAValue, tid: SSAValue, name: str) -> SSAValue:
    """After every thread's stores: true (in every thread of the CTA) in the CTA that
    draws the last of ``expected`` tickets (i32) at ``counter`` (a ``u32`` that CTA sets
    back to 0): variants/kernel.py's ticket, for a count known at the launch. Each thread
    makes its stores visible at gpu scope before the CTA barrier; thread 0 takes the
    ticket (``atom.add``); the last reads the others' stores after an acquiring fence."""
    e.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
    e.bar_sync()
    flag = e.shared([1], i32, name)

    def t0(b: Emitter) -> list[SSAValue]:
        t = b.value(AtomOp(AtomOpKind.ADD, AtomType.U32, counter, b.const(1)))
        last = b.value(arith.SelectOp(b.cmp("eq", t, b.add_i(expected, -1)), b.const(1), b.const(0)))
        b.st(LdStType.B32, flag, last)
        return []

    e.if_(e.cmp("eq", tid, 0), t0)
    e.bar_sync()
    return e.cmp("ne", e.ld(LdStType.B32, flag, i32), 0)


GROUP_UNITS = 16
"""Units whose partial rows the last of them to finish adds into one second-level row
(the column sums in two levels: the groups' sums in parallel, then the last group's CTA
adds the groups' rows)."""


@dataclass(frozen=True)
class _Columns:
    """The workspace of a norm's backward's column sums: ``u32`` ticket counters (the
    whole grid's, then one per group of :data:`GROUP_UNITS` units), then per output the
    float32 partial rows of the units, then per output the groups' rows. Zero at the
    launch and left zero (each counter reset, each row cleared as it is read)."""

    outs: int
    units: int  # the most units (a partial row each)
    n: int

    @property
    def groups(self) -> int:
        return -(-self.units // GROUP_UNITS)

    @property
    def header(self) -> int:
        return -(-4 * (1 + self.groups) // 16) * 16

    def partials(self, k: int) -> int:
        return self.header + k * self.units * self.n * 4

    def group_rows(self, k: int) -> int:
        return self.header + self.outs * self.units * self.n * 4 + k * self.groups * self.n * 4

    @property
    def bytes(self) -> int:
        return self.group_rows(self.outs)


def _partial_row(e: Emitter, ws: SSAValue, lay: _Columns, k: int, unit: SSAValue) -> SSAValue:
    """The address of unit ``unit``'s partial row of output ``k`` (i32 unit)."""
    return e.ptr_add(ws, e.add_i(e.mul_i(e.wide(unit), lay.n * 4), lay.partials(k)))


def _sum_rows(e: Emitter, rows: SSAValue, first: SSAValue, count: SSAValue, n: int, tid: SSAValue, block: int,
              write: Callable[[Emitter, SSAValue, list[SSAValue]], None]) -> None:
    """For each column (thread t: columns t, t + T, ... by 4 where N allows), the sum of
    the float32 rows ``first, first + 1, ... first + count - 1`` (i64) at ``rows``, added in
    row order (8 loads in flight a step), given to ``write(e, column, sums)``; each value
    read is set back to 0 (the workspace is left zeroed, docs/runtime.md)."""
    v = 4 if n % 4 == 0 else 1
    zeros = [e.const(0.0, f32)] * v

    def column(c: Emitter, col: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        at = c.ptr_add(c.ptr_add(rows, c.mul_i(col, 4)), c.mul_i(first, n * 4))
        steps = c.wide(c.and_b32(c.value(CvtOp(CvtType.U32, CvtType.U64, count, i32)), -8))

        def eight(d: Emitter, u: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            row = d.ptr_add(at, d.mul_i(u, n * 4))
            got = [_load(d, F32, row, j * n * 4, v, nc=False) for j in range(8)]
            for j in range(8):
                _store(d, F32, row, j * n * 4, zeros)
            for vals in got:
                acc = [_add(d, a, x) for a, x in zip(acc, vals, strict=True)]
            return acc

        def one(d: Emitter, u: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            row = d.ptr_add(at, d.mul_i(u, n * 4))
            vals = _load(d, F32, row, 0, v, nc=False)
            _store(d, F32, row, 0, zeros)
            return [_add(d, a, x) for a, x in zip(acc, vals, strict=True)]

        acc = c.for_(0, steps, 8, [c.const(0.0, f32)] * v, eight)
        acc = c.for_(steps, count, 1, acc, one)
        write(c, col, acc)
        return []

    e.for_(e.wide(e.mul_i(tid, v)), n, block * v, [], column)


def _finish_columns(e: Emitter, p: RowPlan, op: NormalizeRowsOp, ws: SSAValue, lay: _Columns, tid: SSAValue,
                    ctas: SSAValue, unit: SSAValue) -> None:
    """The column sums in two levels, each in a fixed order: the CTA that finishes last of
    its group of :data:`GROUP_UNITS` units adds the group's partial rows in unit order into
    the group's row; the CTA that finishes the last group adds the groups' rows in group
    order and writes dweight / dbias, rounded once. Every counter is set back to 0."""
    outs = [o for o in (op.dweight, op.dbias) if o is not None]
    shift = GROUP_UNITS.bit_length() - 1
    nunits = e.shr_u32(ctas, p.cluster.bit_length() - 1) if p.cluster > 1 else ctas
    group = e.shr_u32(unit, shift)
    first = e.mul_i(group, GROUP_UNITS)
    size = e.min_s32(e.sub_i(nunits, first), GROUP_UNITS)
    counter = e.ptr_add(ws, e.add_i(e.mul_i(e.wide(group), 4), 4))
    done = _ticket(e, counter, e.mul_i(size, p.cluster) if p.cluster > 1 else size, tid, "columns_group")

    def level1(b: Emitter) -> list[SSAValue]:
        b.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
        for k in range(len(outs)):
            dst = b.ptr_add(b.ptr_add(ws, lay.group_rows(k)), b.mul_i(b.wide(group), p.n * 4))

            def keep(c: Emitter, col: SSAValue, sums: list[SSAValue], dst=dst) -> None:
                _store(c, F32, c.ptr_add(dst, c.mul_i(col, 4)), 0, sums)

            _sum_rows(b, b.ptr_add(ws, lay.partials(k)), b.wide(first), b.wide(size), p.n, tid, p.block, keep)
        b.if_(b.cmp("eq", tid, 0), lambda c: c.st(LdStType.U32, counter, c.const(0)) or [])
        groups = b.shr_u32(b.add_i(nunits, GROUP_UNITS - 1), shift)
        last = _ticket(b, ws, groups, tid, "columns_last")

        def level2(c: Emitter) -> list[SSAValue]:
            c.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
            for k, out in enumerate(outs):
                od = of_ir(out.type.element_type)  # type: ignore[union-attr]
                assert od is not None
                out0 = c.ptr(out, StateSpace.GLOBAL)

                def put(d: Emitter, col: SSAValue, sums: list[SSAValue], out0=out0, od=od) -> None:
                    _store(d, od, d.ptr_add(out0, d.mul_i(col, od.bytes)), 0, sums)

                _sum_rows(c, c.ptr_add(ws, lay.group_rows(k)), c.const(0, i64), c.wide(groups), p.n, tid, p.block, put)
            c.if_(c.cmp("eq", tid, 0), lambda d: d.st(LdStType.U32, ws, d.const(0)) or [])
            return []

        b.if_(last, level2)
        return []

    e.if_(done, level1)


def _write_column_partials(e: Emitter, r: _Row, acc: list[SSAValue], ws: SSAValue, lay: _Columns, unit: SSAValue,
                           ngroups: int, group: SSAValue | None) -> None:
    """Each thread's column sums ``acc`` into its unit's partial rows; with several groups
    per CTA (rows_warp) first through shared memory, added in group order."""
    p = r.p
    outs = [o for o in (r.op.dweight, r.op.dbias) if o is not None]
    per = len(acc) // p.items
    conds = r.item_conds(e)
    for k in range(len(outs)):
        vals = [acc[i * per + k * p.vec:i * per + (k + 1) * p.vec] for i in range(p.items)]
        if ngroups == 1:
            dst = _Buf(F32, e.ptr_add(_partial_row(e, ws, lay, k, unit), e.mul_i(r.sw, p.vec * 4)))  # type: ignore[arg-type]
        else:
            assert group is not None
            sm = e.shared([ngroups * p.n], f32, f"columns_{k}")
            dst = _Buf(F32, e.ptr_add(e.ptr_add(sm, e.mul_i(group, p.n * 4)), e.mul_i(e.value(CvtOp(CvtType.U32, CvtType.U64, r.sw, i32)), p.vec * 4)))
        for i, cond in enumerate(conds):
            if cond is None:
                dst.store(e, i * p.group, p.vec, vals[i])
            else:
                e.if_(cond, lambda b, i=i, dst=dst: dst.store(b, i * p.group, p.vec, vals[i]) or [])
        if ngroups == 1:
            continue
        e.bar_sync()
        row = _partial_row(e, ws, lay, k, unit)

        def column(c: Emitter, col: SSAValue, _: list[SSAValue], sm=sm, row=row) -> list[SSAValue]:
            col32 = c.value(CvtOp(CvtType.U32, CvtType.U64, col, i32))
            total = None
            for q in range(ngroups):
                v = c.ld(LdStType.F32, c.ptr_add(sm, c.mul_i(col32, 4)), f32, 4 * q * p.n)
                total = v if total is None else _add(c, total, v)
            c.st(ld_type(F32), c.ptr_add(row, c.mul_i(col, 4)), total)  # type: ignore[arg-type]
            return []

        e.for_(e.wide(r.tid), p.n, p.block, [], column)
        e.bar_sync()


# endregion


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
    set_launch(kernel, [p.ctas], [p.block], [p.cluster])
    m_arg = rows_parameter(kernel) if p.m is None else None
    e = emitter_at(op)
    tid = e.sreg(SpecialRegister.TID_X)
    rank = first = None
    if p.cluster > 1:  # cluster c (of the grid's ctas / cluster) takes rows c, c + clusters, ...
        g = tid
        rank = e.sreg(SpecialRegister.CLUSTER_CTARANK)
        slot = e.shr_u32(e.sreg(SpecialRegister.CTAID_X), p.cluster.bit_length() - 1)
        first = e.add_i(e.mul_i(rank, p.slice), g)
        start = first
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

    def row_body(b: Emitter, row: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        d = p.dtype
        row_x = b.ptr_add(x0, b.mul_i(row, p.sx * d.bytes))
        x = _Buf(d, b.ptr_add(row_x, b.mul_i(sw, vec * d.bytes)))
        y = None
        if y0 is not None:
            row_y = b.ptr_add(y0, b.mul_i(row, p.sy * d.bytes))
            y = _Buf(d, b.ptr_add(row_y, b.mul_i(sw, vec * d.bytes)))
        w = _Buf(wd, b.ptr_add(w0, b.mul_i(sw, vec * wd.bytes))) if w0 is not None and wd else None
        bb = _Buf(bd, b.ptr_add(b0, b.mul_i(sw, vec * bd.bytes))) if b0 is not None and bd else None
        res = hout = None
        if op.residual is not None and op.residual_out is not None:
            res = _Buf(d, b.ptr_add(b.ptr_add(r0, b.mul_i(row, row_stride(op.residual.type) * d.bytes)), b.mul_i(sw, vec * d.bytes)))  # type: ignore[arg-type]
            hout = _Buf(d, b.ptr_add(b.ptr_add(h0, b.mul_i(row, row_stride(op.residual_out.type) * d.bytes)), b.mul_i(sw, vec * d.bytes)))  # type: ignore[arg-type]
        parity = carried[0] if p.cluster > 1 else None
        acc = carried[1:] if p.cluster > 1 else carried
        grad = None
        if op.grad is not None and p.kind in GRAD_ROWS_KINDS:
            row_g = b.ptr_add(g0, b.mul_i(row, row_stride(op.grad.type) * d.bytes))  # type: ignore[arg-type]
            grad = _Buf(d, b.ptr_add(row_g, b.mul_i(sw, vec * d.bytes)))
        r = _Row(p, op, g, tid, x, y, w, bb, row_x, first, rank, res, hout, parity, grad, sw)
        if p.kind in SOFTMAX_BACKWARD_KINDS:
            (_registers_backward if p.items else _stream_backward)(r, b, row)
        elif p.kind in NORM_BACKWARD_KINDS and p.items:
            acc = _registers_norm_backward(r, b, row, acc)
        elif p.kind in NORM_BACKWARD_KINDS:
            _stream_norm_backward(r, b, row, parts)
        elif p.kind == NormKind.CROSS_ENTROPY_BACKWARD:
            _ce_backward(r, b, row)
        else:
            (_registers if p.items else _stream)(r, b, row)
        return ([b.value(XorOp(ArithType.B32, parity, b.const(1)))] if parity is not None else []) + acc

    units = p.ctas // p.cluster
    # a norm's backward with dweight / dbias: the partial rows of the column sums (the workspace)
    outs = [o for o in (op.dweight, op.dbias) if o is not None]
    ws = None
    parts: list[_Buf] = []  # none without dweight and dbias (weight and bias None)
    acc0: list[SSAValue] = []
    if outs:
        lay = _Columns(len(outs), units, p.n)
        ws = e.ptr(add_workspace(kernel, lay.bytes), StateSpace.GLOBAL)
        if p.items:  # in registers: one float32 per element the thread holds, per output
            acc0 = [e.const(0.0, f32)] * (p.items * p.vec * len(outs))
        else:  # streamed: added in place to the unit's own partial rows (zero: the workspace's contract)
            parts = [_Buf(F32, e.ptr_add(_partial_row(e, ws, lay, k, slot), e.mul_i(sw, vec * 4)))
                     for k in range(len(outs))]
    carried0 = ([e.const(0)] if p.cluster > 1 else []) + acc0

    ctas = e.sreg(SpecialRegister.NCTAID_X) if p.m is None or outs else None
    if p.m is None:  # M at the launch: the i64 parameter after the buffers; the grid from it
        assert ctas is not None
        units_now = e.shr_u32(ctas, p.cluster.bit_length() - 1) if p.cluster > 1 else ctas
        stride = e.wide(e.mul_i(units_now, p.groups) if p.groups > 1 else units_now)
        done = e.for_(e.wide(slot), m_arg, stride, carried0, row_body)
        kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([IntegerAttr(p.groups, i64), IntegerAttr(units, i64)])
    else:
        done = e.for_(e.wide(slot), p.m, units * p.groups, carried0, row_body)
    if p.cluster > 1:  # no CTA leaves while a peer may still read its shared memory
        e.cluster_sync()
    if outs:
        assert ws is not None
        assert ctas is not None
        unit = e.sreg(SpecialRegister.CTAID_X) if p.groups > 1 else slot  # a CTA, or a cluster (slot: its index)
        if p.items:
            r = _Row(p, op, g, tid, None, None, None, None, None, first, rank, sw=sw)  # type: ignore[arg-type]
            group = e.shr_u32(tid, p.group.bit_length() - 1) if p.groups > 1 else None
            _write_column_partials(e, r, done[1:] if p.cluster > 1 else done, ws, lay, unit, p.groups, group)
        _finish_columns(e, p, op, ws, lay, tid, ctas, unit)
    rewriter.erase(op)
