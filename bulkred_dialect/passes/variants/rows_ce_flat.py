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

Each element's floating-point operations and their order are rows_backward.ce_backward's
for the cell (the default's accurate exp and selects, or :data:`~rows_backward.CE_FAST`'s
``fma(p, s, c)`` where that setting holds the cell): dx has the same bits as the row
kernel's (the row's scalars the same loads; the target compared with the element's place
exactly, in 32 bits: a target outside [0, N) makes its row NaN, an ignored row's elements
``p * 0``, whatever the compare gives), never depends on M or on the row's place in the
batch (tests/test_rows_ce_flat.py, tests/gpu/test_rows_ce_flat_gpu.py). :data:`TARGET_APART`
keeps those bits; :data:`FAST` gives CE_FAST's where the row kernel's cell has the default's.
Taken where N and both row strides are a whole number of vectors (rows_common.vector_of
> 1) and x and dx are contiguous (row strides N), else the row kernels."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, f32, i32, i64
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.kernel_attrs import GRID_ROWS_ATTR, MIN_CTAS_ATTR
from bulkred_dialect.ops.ptx.arith import AndOp, ArithType, DivOp, RemOp, ShlOp, ShrOp
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
    BF16,
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

CE_FLAT_MEASURED: dict = half_as_bfloat16({
    # tools/probes/rows_backward.py --set ceflat on an H200, the eighth session of 2026-11-29
    # (docs/rows_probes_h200_run8.log), x copy, dispatch -> flat 128 threads x 4 vectors, a CTA a chunk
    # (SHAPE_MEASURED), the same bits: bfloat16 1024 0.911 -> 0.948, 4096 0.916 -> 0.964; float32 4096
    # 0.897 -> 0.956. Not taken: float32 1024 (0.929 -> 0.937, under 1%), 16384 / 65536 (no faster), 262144
    # (bfloat16 0.923 -> 0.932 with 8-byte vectors only, float32 0.928 -> 0.932)
    BF16.name: ((1024, 1024), (4096, 4096)),
    F32.name: ((4096, 4096),),
})
""":data:`CE_FLAT` by element type name (``F32.name``...), or ``(kind, type name)``, and N
(never M): the ranges (N from, N to) where it is on (float16 as bfloat16)."""

BLOCK: int | None = None
"""Threads a CTA; None: :data:`SHAPE_MEASURED`'s, else :data:`SHAPE`'s."""
UNROLL: int | None = None
"""Vectors a thread a loop step (loads in flight); None: as :data:`BLOCK`."""
CTAS_PER_SM: int | None = None
"""The grid's CTAs a multiprocessor at most (the grid-stride loop covers the rest: all of
them resident at once, else the later ones start late with as many chunks); 0: no cap (a
CTA a chunk, or a row where a row is more, as the copy kernel's grid); None: as :data:`BLOCK`."""
MIN_CTAS: int | None = None
"""The kernel's ``.minnctapersm`` (0: none; the row variant's is dropped); None: as :data:`BLOCK`."""

WIDE = True
"""16-byte vectors of bfloat16 (8 elements, where N is a multiple of 8; the row kernels'
are 8 bytes unless rows_common.WIDE_BF16); False: the row kernels' vector."""

TARGET_APART: bool | None = None
"""None: where :data:`TARGET_APART_MEASURED` says; True or False: everywhere or nowhere. On,
every element is computed as a non-target one (no compare or select an element) and the
thread whose vector holds the row's target writes that element again after the vector,
from x[t] read again: the same formula at the target, the same bits."""

TARGET_APART_MEASURED: dict = half_as_bfloat16({})
""":data:`TARGET_APART` by element type name, or ``(kind, type name)``, and N. None measured yet."""

FAST: bool | None = None
"""None: where :data:`FAST_MEASURED` says; True or False: everywhere or nowhere. On, the
flat stream computes each element in rows_backward.CE_FAST's form (``fma(p, s, c)``,
ex2.approx.ftz) where that setting's own table leaves the cell to the default's form: the
bits of the row kernel with CE_FAST on (within float64's bounds: tests/
test_rows_ce_backward_speed.py), no longer the cell's row kernel's."""

FAST_MEASURED: dict = half_as_bfloat16({})
""":data:`FAST` by element type name, or ``(kind, type name)``, and N. None measured yet."""

SHAPE = (256, 4, 4, 4)
"""(BLOCK, UNROLL, CTAS_PER_SM, MIN_CTAS) where :data:`SHAPE_MEASURED` has no entry: 4
CTAs of 256 threads a multiprocessor, all resident (``.minnctapersm`` 4: at most 64
registers), 4 loads of 16 bytes a thread in flight (64 KiB a multiprocessor)."""

SHAPE_MEASURED: dict = half_as_bfloat16({
    # (the same run: CE_FLAT_MEASURED's cells) 128 threads of 4 vectors, no cap on the grid (a CTA a chunk, as
    # the copy kernel's grid), no .minnctapersm: 0.948 / 0.964 / 0.956 against the capped grid-stride shapes'
    # 0.85 to 0.93
    BF16.name: ((1024, 1024, (128, 4, 0, 0)), (4096, 4096, (128, 4, 0, 0))),
    F32.name: ((4096, 4096, (128, 4, 0, 0)),),
})
"""By element type name: ((N from, N to, (BLOCK, UNROLL, CTAS_PER_SM, MIN_CTAS)), ...), the
first range holding N (never M); float16 as bfloat16."""

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


def shape(p: RowPlan) -> tuple[int, int, int, int]:
    """(threads a CTA, vectors a thread a step, CTAs a multiprocessor, 0: no cap;
    ``.minnctapersm``, 0: none) of the cell."""
    measured = next((v for lo, hi, v in SHAPE_MEASURED.get(p.dtype.name, ()) if lo <= p.n <= hi), SHAPE)
    block, unroll, per_sm, min_ctas = (o if o is not None else d for o, d in
                                       zip((BLOCK, UNROLL, CTAS_PER_SM, MIN_CTAS), measured, strict=True))
    return block, unroll, per_sm, min_ctas


def flat_fast(p: RowPlan) -> bool:
    """Whether the flat stream takes CE_FAST's form: rows_backward.ce_fast (the row kernel's
    choice), or :data:`FAST`."""
    return ce_fast(p) or setting_of(FAST, FAST_MEASURED, p.dtype.name, p.n, p.kind.value)


def _log2(v: int) -> int | None:
    return v.bit_length() - 1 if v & (v - 1) == 0 else None


def flat_vector(p: RowPlan) -> int:
    """Elements a vector: 16 bytes (8 bfloat16 with :data:`WIDE`, where N is a multiple of
    8), else the row kernels' (rows_common.vector_of)."""
    return 8 if WIDE and p.dtype.name == BF16.name and p.n % 8 == 0 else p.vec


@dataclass
class RowScalars:
    """One row's values for its elements (rows_backward.ce_backward's, in its order)."""

    lse: SSAValue
    t32: SSAValue  # the target's low 32 bits (compared with an element's place: exact for a target in [0, N))
    t: SSAValue
    scale: SSAValue  # the loss's gradient; NaN where the target is outside [0, N)
    kept: SSAValue
    inside: SSAValue
    s: SSAValue | None = None  # CE_FAST: the scale, 0 on an ignored row
    c_other: SSAValue | None = None
    c_target: SSAValue | None = None


def row_scalars(b: Emitter, op: NormalizeRowsOp, p: RowPlan, row: SSAValue, bufs: tuple[SSAValue, ...]) -> RowScalars:
    """The row's lse, target and gradient read (``bufs``: their addresses) and its constants."""
    lse0, t0, g0 = bufs
    lse = b.ld(ld_type(F32), b.ptr_add(lse0, b.mul_i(row, 4)), f32)
    t = b.ld(ld_type(I64), b.ptr_add(t0, b.mul_i(row, 8)), i64)
    dl = b.ld(ld_type(F32), b.ptr_add(g0, b.mul_i(row, 4)), f32)
    inside = b.cmp("ult", t, b.const(p.n, i64))
    scale = b.selp(SelpType.F32, dl, b.const(float("nan"), f32), inside)
    kept = b.cmp("ne", t, b.const(op.ignored, i64))
    r = RowScalars(lse, b.value(CvtOp(CvtType.U32, CvtType.U64, t, i32)), t, scale, kept, inside)
    if flat_fast(p):  # fma(p, s, c): rows_backward.CE_FAST's form
        ls = op.smoothing
        r.s = b.selp(SelpType.F32, scale, b.const(0.0, f32), kept)
        r.c_other = f32_mul(b, r.s, b.const(-ls / p.n, f32))
        r.c_target = f32_mul(b, r.s, b.const(-(ls / p.n + 1.0 - ls), f32))
    return r


def element_dx(b: Emitter, op: NormalizeRowsOp, p: RowPlan, r: RowScalars, x: SSAValue,
               target: SSAValue | bool) -> SSAValue:
    """dx of one element (rows_backward.ce_backward's operations in its order): ``target``
    the predicate that it is the row's target, or a bool where known."""
    ls = op.smoothing
    if r.s is not None:  # CE_FAST
        assert r.c_other is not None and r.c_target is not None
        c = target if isinstance(target, SSAValue) else None
        c = b.selp(SelpType.F32, r.c_target, r.c_other, c) if c is not None else (r.c_target if target else r.c_other)
        return b.fma(AT, exp_shifted(b, x, r.lse, True), r.s, c)
    prob = f32_exp(b, f32_sub(b, x, r.lse))
    v = f32_sub(b, prob, b.const(ls / p.n, f32)) if ls else prob
    if isinstance(target, SSAValue):
        v = b.selp(SelpType.F32, f32_sub(b, v, b.const(1.0 - ls, f32)), v, target)
    elif target:
        v = f32_sub(b, v, b.const(1.0 - ls, f32))
    return b.selp(SelpType.F32, f32_mul(b, v, r.scale), f32_mul(b, prob, b.const(0.0, f32)), r.kept)


def vector_dx(b: Emitter, op: NormalizeRowsOp, p: RowPlan, r: RowScalars, col: SSAValue, xs: list[SSAValue],
              apart: bool) -> list[SSAValue]:
    """dx of one vector (``xs``, the row's vector ``col``, i32); ``apart``: every element
    as a non-target one (:data:`TARGET_APART`: the target's element written again after)."""
    if apart:
        return [element_dx(b, op, p, r, x, False) for x in xs]
    tv = b.sub_i(r.t32, b.mul_i(col, len(xs)))  # the target's place in this vector
    return [element_dx(b, op, p, r, x, b.cmp("eq", tv, b.const(j, i32))) for j, x in enumerate(xs)]


def target_hit(b: Emitter, r: RowScalars, col: SSAValue, fv: int) -> SSAValue:
    """Whether the row's target (in [0, N)) is in the row's vector ``col``."""
    return b.and_pred(b.cmp("ult", b.sub_i(r.t32, b.mul_i(col, fv)), fv), r.inside)


def target_again(b: Emitter, op: NormalizeRowsOp, p: RowPlan, r: RowScalars, row: SSAValue, col: SSAValue, fv: int,
                 x0: SSAValue, y0: SSAValue) -> None:
    """:data:`TARGET_APART`: where the row's target is in vector ``col``, its element of dx
    written again (after the vector's store: the later store is the one left), from x[t]
    read again (an L1 hit)."""
    hit = target_hit(b, r, col, fv)

    def again(c: Emitter) -> list[SSAValue]:
        at = c.mul_i(c.add_i(c.mul_i(row, p.n), r.t), p.dtype.bytes)
        xt = load_vec(c, p.dtype, c.ptr_add(x0, at), 0, 1)[0]
        store_vec(c, p.dtype, c.ptr_add(y0, at), 0, [element_dx(c, op, p, r, xt, True)])
        return []

    b.if_(hit, again)


def lower_ce_flat(op: NormalizeRowsOp, rewriter: PatternRewriter, target: Target, p: RowPlan,
                  m_param: Callable[[func.FuncOp], SSAValue]) -> None:
    """Replace ``op`` by the flat stream (:data:`CE_FLAT`); ``m_param(kernel)`` gives the
    kernel's ``i64`` parameter M (rows_lower.rows_parameter) where M is dynamic."""
    kernel = enclosing_kernel(op)
    assert kernel is not None and op.lse is not None and op.target is not None and op.grad is not None
    assert op.y is not None
    block, unroll, per_sm, min_ctas = shape(p)
    chunk = block * unroll  # vectors a CTA a step
    cshift = _log2(chunk)
    assert cshift is not None, f"BLOCK x UNROLL must be a power of two, got {block} x {unroll}"
    fv = flat_vector(p)
    nv = p.n // fv  # vectors a row
    per = max(1, chunk // nv)  # rows a chunk holds (the grid rule's rows a CTA)
    cap = max(1, rows_common.sm_count(target) * per_sm) if per_sm else UNCAPPED
    apart = setting_of(TARGET_APART, TARGET_APART_MEASURED, p.dtype.name, p.n, p.kind.value)
    kernel.attributes.pop(MIN_CTAS_ATTR, None)  # (the row variant's)
    if min_ctas:
        kernel.attributes[MIN_CTAS_ATTR] = IntegerAttr(min_ctas, i64)
    if p.m is None:
        m_arg = m_param(kernel)
        set_launch(kernel, [cap], [block])
        kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([IntegerAttr(per, i64), IntegerAttr(cap, i64)])
    else:
        set_launch(kernel, [max(1, min(cap, -(-p.m // per)))], [block])
    e = emitter_at(op)
    m = m_arg if p.m is None else e.const(p.m, i64)
    tid32 = e.sreg(SpecialRegister.TID_X)
    tid = e.wide(tid32)
    cta = e.wide(e.sreg(SpecialRegister.CTAID_X))
    ctas = e.wide(e.sreg(SpecialRegister.NCTAID_X))
    total = e.mul_i(m, nv)  # vectors in x
    full = e.value(ShrOp(ArithType.U64, total, e.const(cshift, i32)))  # whole chunks
    x0, y0 = e.ptr(op.x, StateSpace.GLOBAL), e.ptr(op.y, StateSpace.GLOBAL)
    bufs = tuple(e.ptr(b, StateSpace.GLOBAL) for b in (op.lse, op.target, op.grad))
    step = fv * p.dtype.bytes
    shift = _log2(nv)
    # N / V a power of two: a chunk inside one row (its row and place once a chunk), or whole
    # rows a chunk (each of the thread's vectors a fixed row and place from the chunk's first row)
    mode = "div" if shift is None else "row" if nv % chunk == 0 else "rows"
    if mode == "rows":
        assert shift is not None
        offs = [e.add_i(tid32, k * block) if k else tid32 for k in range(unroll)]
        row_off = [e.wide(e.shr_u32(o, shift)) for o in offs]
        cols = [e.and_b32(o, nv - 1) for o in offs]

    def place(b: Emitter, v: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(the row of vector ``v``, i64; its vector's place in the row, i32)."""
        if shift is not None:
            col = b.value(AndOp(ArithType.B64, v, b.const(nv - 1, i64)))
            return b.value(ShrOp(ArithType.U64, v, b.const(shift, i32))), b.value(CvtOp(CvtType.U32, CvtType.U64, col, i32))
        row = b.value(DivOp(ArithType.U64, v, b.const(nv, i64)))
        return row, b.value(CvtOp(CvtType.U32, CvtType.U64, b.sub_i(v, b.mul_i(row, nv)), i32))

    def one_vector(b: Emitter, row: SSAValue, col: SSAValue, r: RowScalars | None, xs: list[SSAValue],
                   yb: SSAValue, off: int) -> tuple[RowScalars, SSAValue, SSAValue]:
        """The vector's dx stored; (its row's scalars, row, place) for target_again."""
        r = r or row_scalars(b, op, p, row, bufs)
        store_vec(b, p.dtype, yb, off, vector_dx(b, op, p, r, col, xs, apart))
        return r, row, col

    def chunk_body(b: Emitter, c: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        c0 = b.value(ShlOp(ArithType.B64, c, b.const(cshift, i32)))  # the chunk's first vector
        first = b.add_i(c0, tid)
        at = b.mul_i(first, step)
        xb, yb = b.ptr_add(x0, at), b.ptr_add(y0, at)
        held = [load_vec(b, p.dtype, xb, k * block * step, fv) for k in range(unroll)]  # (UNROLL loads in flight)
        r = None
        if mode == "row":  # one row, one place in it a chunk
            row = b.value(ShrOp(ArithType.U64, c0, b.const(shift, i32)))
            col0 = b.value(CvtOp(CvtType.U32, CvtType.U64, b.value(AndOp(ArithType.B64, c0, b.const(nv - 1, i64))), i32))
            col0 = b.add_i(col0, tid32)
            r = row_scalars(b, op, p, row, bufs)
        elif mode == "rows":
            rows0 = b.value(ShlOp(ArithType.B64, c, b.const(cshift - shift, i32)))  # type: ignore[operator]
        done = []
        for k, xs in enumerate(held):
            if mode == "row":
                row, col = row, b.add_i(col0, k * block) if k else col0
            elif mode == "rows":
                row, col = b.add_i(rows0, row_off[k]), cols[k]
            else:
                row, col = place(b, b.add_i(first, k * block) if k else first)
            done.append(one_vector(b, row, col, r, xs, yb, k * block * step))
        if apart:  # after every vector's store (no load waits on a branch), behind one branch a chunk

            def fixes(c: Emitter) -> list[SSAValue]:
                for rk, row, col in done:
                    target_again(c, op, p, rk, row, col, fv, x0, y0)
                return []

            hits = [target_hit(b, rk, col, fv) for rk, _, col in done]
            any_hit = hits[0]
            for h in hits[1:]:
                any_hit = b.or_pred(any_hit, h)
            b.if_(any_hit, fixes)
        return []

    e.for_(cta, full, ctas, [], chunk_body)
    start = e.value(ShlOp(ArithType.B64, full, e.const(cshift, i32)))

    def tail(b: Emitter) -> list[SSAValue]:  # the partial last chunk, by the CTA whose turn it is
        for k in range(unroll):
            v = b.add_i(b.add_i(start, tid), k * block)

            def one(c: Emitter, v: SSAValue = v) -> list[SSAValue]:
                at = c.mul_i(v, step)
                xs = load_vec(c, p.dtype, c.ptr_add(x0, at), 0, fv)
                r, row, col = one_vector(c, *place(c, v), None, xs, c.ptr_add(y0, at), 0)
                if apart:
                    target_again(c, op, p, r, row, col, fv, x0, y0)
                return []

            b.if_(b.cmp("ult", v, total), one)
        return []

    turn = e.value(RemOp(ArithType.U64, full, ctas))
    e.if_(e.and_pred(e.cmp("ult", start, total), e.cmp("eq", cta, turn)), tail)
    rewriter.erase(op)
