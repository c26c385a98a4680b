"""cross_entropy's backward as one flat stream (:data:`CE_FLAT`, off until measured; issue 30,
section 4): given the forward's lse, the target, ignore_index, the label smoothing and the
loss's gradient of each row, dx is elementwise (rows_backward.ce_backward's formula, no
reduction), so a contiguous ``[M, N]`` x and dx are read and written as one flat array of
``M N / V`` vectors, as the copy kernel streams them: every CTA takes chunks of ``BLOCK *
UNROLL`` vectors (thread t the vectors ``c BLOCK UNROLL + k BLOCK + t``, ``UNROLL`` loads in
flight), chunk ``c`` from its CTA index on, a grid's CTAs apart; the last partial chunk
guarded vector by vector. Each vector's row is its index over ``N / V`` (a shift where
``N / V`` is a power of two, else a 64-bit division), its place in the row the remainder;
the row's lse, target and gradient are read for it (L1 and L2 hits: a row's vectors are
neighbours).

Each element's operations and their order are rows_backward.ce_backward's for the cell (the
default's accurate exp and selects, or :data:`~rows_backward.CE_FAST`'s ``fma(p, s, c)``
where that setting holds the cell): dx has the same bits as the row kernel's (the row's
scalars the same loads, the target compared with the element's place in the row the same
way), never depends on M or on the row's place in the batch (tests/test_rows_ce_flat.py).
Taken where N and both row strides are a whole number of vectors (rows_common.vector_of
> 1) and x and dx are contiguous (row strides N), else the row kernels."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, f32, i32, i64
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.kernel_attrs import GRID_ROWS_ATTR, MIN_CTAS_ATTR
from bulkred_dialect.ops.ptx.arith import AndOp, ArithType, DivOp, RemOp, ShrOp
from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.control import CvtOp, CvtType, SelpType
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import enclosing_kernel
from bulkred_dialect.ops.tile.rows import NormalizeRowsOp, NormKind
from bulkred_dialect.passes.elements import ld_type
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.variants import rows_common
from bulkred_dialect.passes.variants.grid_common import set_launch
from bulkred_dialect.passes.variants.kernel import emitter_at
from bulkred_dialect.passes.variants.rows_backward import ce_fast
from bulkred_dialect.passes.variants.rows_common import (
    AT,
    F32,
    I64,
    RowPlan,
    exp_shifted,
    f32_exp,
    f32_mul,
    f32_sub,
    half_as_bfloat16,
    load_vec,
    setting_of,
    store_vec,
)

CE_FLAT: bool | None = None
"""None: where :data:`CE_FLAT_MEASURED` says; True or False: everywhere or nowhere (the
probe's and the tests' settings, ``tools/probes/rows_backward.py --set ceflat``). On,
cross_entropy's backward of a contiguous x and dx whose N is a whole number of vectors is
this module's flat stream instead of its row variant's kernel (the same bits)."""

CE_FLAT_MEASURED: dict = half_as_bfloat16({})
""":data:`CE_FLAT` by element type name (``F32.name``...), or ``(kind, type name)``, and N
(never M): the ranges (N from, N to) where it is on. None measured yet."""

BLOCK: int | None = None
"""Threads a CTA; None: :data:`SHAPE_MEASURED`'s, else :data:`SHAPE`'s."""
UNROLL: int | None = None
"""Vectors a thread a loop step (loads in flight); None: as :data:`BLOCK`."""
CTAS_PER_SM: int | None = None
"""The grid's CTAs a multiprocessor at most (the grid-stride loop covers the rest); 0: no
cap (a CTA a chunk, as the copy kernel's grid); None: as :data:`BLOCK`."""
MIN_CTAS: int | None = None
"""The kernel's ``.minnctapersm`` (None: none; the row variant's is dropped)."""

SHAPE = (256, 4, 8)
"""(BLOCK, UNROLL, CTAS_PER_SM) where :data:`SHAPE_MEASURED` has no entry."""

SHAPE_MEASURED: dict = half_as_bfloat16({})
"""By element type name: ((N from, N to, (BLOCK, UNROLL, CTAS_PER_SM)), ...), the first
range holding N (never M). None measured yet."""

UNCAPPED = 1 << 20
"""The grid's cap with CTAS_PER_SM 0 (a CTA a chunk up to 2^20 chunks; past that the loop)."""


def takes(p: RowPlan, op: NormalizeRowsOp) -> bool:
    """Whether plan ``p``'s cross_entropy backward is the flat stream: :data:`CE_FLAT` (or
    its table) holds the cell, whole vectors (``p.vec`` > 1, N a multiple of it), x and
    dx contiguous."""
    if p.kind != NormKind.CROSS_ENTROPY_BACKWARD or op.y is None:
        return False
    if p.vec == 1 or p.n % p.vec or p.sx != p.n or p.sy != p.n:
        return False
    return setting_of(CE_FLAT, CE_FLAT_MEASURED, p.dtype.name, p.n, p.kind.value)


def shape(p: RowPlan) -> tuple[int, int, int]:
    """(threads a CTA, vectors a thread a step, CTAs a multiprocessor; 0: no cap) of the cell."""
    measured = next((v for lo, hi, v in SHAPE_MEASURED.get(p.dtype.name, ()) if lo <= p.n <= hi), SHAPE)
    block, unroll, per_sm = (o if o is not None else d for o, d in zip((BLOCK, UNROLL, CTAS_PER_SM), measured, strict=True))
    return block, unroll, per_sm


def _log2(v: int) -> int | None:
    return v.bit_length() - 1 if v & (v - 1) == 0 else None


def lower_ce_flat(op: NormalizeRowsOp, rewriter: PatternRewriter, target: Target, p: RowPlan,
                  m_param: Callable[[func.FuncOp], SSAValue]) -> None:
    """Replace ``op`` by the flat stream (:data:`CE_FLAT`); ``m_param(kernel)`` gives the
    kernel's ``i64`` parameter M (rows_lower.rows_parameter) where M is dynamic."""
    kernel = enclosing_kernel(op)
    assert kernel is not None and op.lse is not None and op.target is not None and op.grad is not None
    assert op.y is not None
    block, unroll, per_sm = shape(p)
    chunk = block * unroll  # vectors a CTA a step
    assert _log2(chunk) is not None, f"BLOCK x UNROLL must be a power of two, got {block} x {unroll}"
    nv = p.n // p.vec  # vectors a row
    per = max(1, chunk // nv)  # rows a chunk holds (the grid rule's rows a CTA)
    cap = max(1, rows_common.sm_count(target) * per_sm) if per_sm else UNCAPPED
    kernel.attributes.pop(MIN_CTAS_ATTR, None)  # (the row variant's)
    if MIN_CTAS is not None:
        kernel.attributes[MIN_CTAS_ATTR] = IntegerAttr(MIN_CTAS, i64)
    if p.m is None:
        m = m_param(kernel)
        set_launch(kernel, [cap], [block])
        kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([IntegerAttr(per, i64), IntegerAttr(cap, i64)])
    else:
        set_launch(kernel, [max(1, min(cap, -(-p.m // per)))], [block])
    e = emitter_at(op)
    if p.m is not None:
        m = e.const(p.m, i64)
    tid = e.wide(e.sreg(SpecialRegister.TID_X))
    cta = e.wide(e.sreg(SpecialRegister.CTAID_X))
    ctas = e.wide(e.sreg(SpecialRegister.NCTAID_X))
    total = e.mul_i(m, nv)  # vectors in x
    full = e.value(ShrOp(ArithType.U64, total, e.const(_log2(chunk), i32)))  # whole chunks
    x0, y0 = e.ptr(op.x, StateSpace.GLOBAL), e.ptr(op.y, StateSpace.GLOBAL)
    lse0, t0, g0 = (e.ptr(b, StateSpace.GLOBAL) for b in (op.lse, op.target, op.grad))
    step = p.vec * p.dtype.bytes
    shift = _log2(nv)

    def place(b: Emitter, v: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(the row of vector ``v``, its vector's index in the row), i64."""
        if shift is not None:
            return (b.value(ShrOp(ArithType.U64, v, b.const(shift, i32))),
                    b.value(AndOp(ArithType.B64, v, b.const(nv - 1, i64))))
        row = b.value(DivOp(ArithType.U64, v, b.const(nv, i64)))
        return row, b.sub_i(v, b.mul_i(row, nv))

    def load(b: Emitter, v: SSAValue) -> tuple[SSAValue, SSAValue, list[SSAValue]]:
        row, vector = place(b, v)
        return row, vector, load_vec(b, p.dtype, b.ptr_add(x0, b.mul_i(v, step)), 0, p.vec)

    def write(b: Emitter, v: SSAValue, row: SSAValue, vector: SSAValue, xs: list[SSAValue]) -> None:
        store_vec(b, p.dtype, b.ptr_add(y0, b.mul_i(v, step)), 0, ce_vector(b, op, p, row, vector, xs, lse0, t0, g0))

    def chunk_body(b: Emitter, c: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        first = b.add_i(b.mul_i(c, chunk), tid)
        vs = [first if k == 0 else b.add_i(first, k * block) for k in range(unroll)]
        held = [load(b, v) for v in vs]  # (every load before the first store: UNROLL in flight)
        for v, (row, vector, xs) in zip(vs, held, strict=True):
            write(b, v, row, vector, xs)
        return []

    e.for_(cta, full, ctas, [], chunk_body)
    start = e.mul_i(full, chunk)

    def tail(b: Emitter) -> list[SSAValue]:  # the partial last chunk, by the CTA whose turn it is
        for k in range(unroll):
            v = b.add_i(b.add_i(start, tid), k * block)

            def one(c: Emitter, v: SSAValue = v) -> list[SSAValue]:
                write(c, v, *load(c, v))
                return []

            b.if_(b.cmp("ult", v, total), one)
        return []

    turn = e.value(RemOp(ArithType.U64, full, ctas))
    e.if_(e.and_pred(e.cmp("ult", start, total), e.cmp("eq", cta, turn)), tail)
    rewriter.erase(op)


def ce_vector(b: Emitter, op: NormalizeRowsOp, p: RowPlan, row: SSAValue, vector: SSAValue, xs: list[SSAValue],
              lse0: SSAValue, t0: SSAValue, g0: SSAValue) -> list[SSAValue]:
    """dx of one vector (``xs``, the row's vector ``vector`` of row ``row``): rows_backward
    .ce_backward's operations in its order, the default's or CE_FAST's (the same bits)."""
    lse = b.ld(ld_type(F32), b.ptr_add(lse0, b.mul_i(row, 4)), f32)
    t = b.ld(ld_type(I64), b.ptr_add(t0, b.mul_i(row, 8)), i64)
    dl = b.ld(ld_type(F32), b.ptr_add(g0, b.mul_i(row, 4)), f32)
    inside = b.cmp("ult", t, b.const(p.n, i64))
    scale = b.selp(SelpType.F32, dl, b.const(float("nan"), f32), inside)
    kept = b.cmp("ne", t, b.const(op.ignored, i64))
    ls = op.smoothing
    out = []
    if ce_fast(p):  # fma(p, s, c): rows_backward.CE_FAST
        s = b.selp(SelpType.F32, scale, b.const(0.0, f32), kept)
        c_other = f32_mul(b, s, b.const(-ls / p.n, f32))
        c_target = f32_mul(b, s, b.const(-(ls / p.n + 1.0 - ls), f32))
        t32 = b.value(CvtOp(CvtType.U32, CvtType.U64, t, i32))
        v32 = b.value(CvtOp(CvtType.U32, CvtType.U64, vector, i32))
        tv32 = b.sub_i(t32, b.mul_i(v32, p.vec))
        for j, x in enumerate(xs):
            c = b.selp(SelpType.F32, c_target, c_other, b.cmp("eq", tv32, b.const(j, i32)))
            out.append(b.fma(AT, exp_shifted(b, x, lse, True), s, c))
        return out
    tv = b.sub_i(t, b.mul_i(vector, p.vec))  # the target's place in this vector
    for j, x in enumerate(xs):
        prob = f32_exp(b, f32_sub(b, x, lse))
        v = f32_sub(b, prob, b.const(ls / p.n, f32)) if ls else prob
        v = b.selp(SelpType.F32, f32_sub(b, v, b.const(1.0 - ls, f32)), v, b.cmp("eq", tv, b.const(j, i64)))
        out.append(b.selp(SelpType.F32, f32_mul(b, v, scale), f32_mul(b, prob, b.const(0.0, f32)), kept))
    return out

