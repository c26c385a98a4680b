"""The collective steps that the warp, CTA, cluster and grid variants share, built with
:class:`~bulkred_dialect.passes.emitter.Emitter`: a warp reduction (``redux.sync`` or a
``shfl.sync`` butterfly), a CTA reduction through shared memory, the last-CTA step that
combines per-CTA partial results in a zero-filled workspace (docs/scopes.md), and the
per-thread start and end of a collective ``bulkred.reduce`` (its own ``src``, its ``dst``).

Partial results are kept in the accumulator type, one slot of ``elem.slot_bytes`` each
(passes/elements.py); the last-CTA ticket is a ``u32`` counter of :data:`COUNTER_BYTES`.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, f32, f64, i32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint

from bulkred_dialect.ops.dtypes import DTYPES
from bulkred_dialect.ops.ptx.arith import PackB32x2Op, UnpackB32x2Op
from bulkred_dialect.ops.ptx.atom import (
    AtomOp,
    AtomOpKind,
    AtomType,
    FenceOp,
    FenceSem,
    MemScope,
)
from bulkred_dialect.ops.ptx.memory import LdStType
from bulkred_dialect.ops.ptx.redux import ReduxOp as ReduxKind
from bulkred_dialect.ops.ptx.redux import ReduxSyncOp, ReduxType
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.ptx.warp import ShflMode, ShflSyncOp
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import INDEX_KINDS, ReduceKind, ReduceOp, enclosing_kernel
from bulkred_dialect.passes.elements import Elem, elem_for, ld_type
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.fused import Reducer
from bulkred_dialect.passes.predicates import WARP, element_type, launch_of

FULL_MASK = -1  # 0xffffffff as an i32 immediate

COUNTER = DTYPES["uint32"]
"""The last-CTA ticket counter's type (``atom.add.u32``)."""

COUNTER_BYTES = COUNTER.bytes

SM_COUNT: dict[int, int] = {90: 132, 100: 148, 103: 148}
"""Multiprocessors of the target's flagship part (H100/H200: 132, B200: 148), which the
grid variants size their grids by; other targets use 132."""


def sm_count(target: Target) -> int:
    return SM_COUNT.get(target.sm, 132)


def elem_of(op: ReduceOp) -> Elem:
    """How ``op`` loads, accumulates and stores: its ``src`` element type into its
    ``dst``'s (passes/elements.py)."""
    src = element_type(op)
    dst = src if op.kind.data in INDEX_KINDS else op.dst.type.element_type  # type: ignore[union-attr]
    nonzero = [str(m.map_fn) for m in op.maps("prologue")] == ["nonzero"]
    elem = elem_for(src, dst, nonzero)
    assert elem is not None, "the dtype predicates admit only the element types of ELEMS"
    return elem


# region Collective steps


_REDUX_OP: dict[ReduceKind, ReduxKind] = {
    ReduceKind.SUM: ReduxKind.ADD,
    ReduceKind.MAX: ReduxKind.MAX,
    ReduceKind.MIN: ReduxKind.MIN,
    ReduceKind.AND: ReduxKind.AND,
    ReduceKind.OR: ReduxKind.OR,
    ReduceKind.XOR: ReduxKind.XOR,
    ReduceKind.ANY: ReduxKind.OR,  # of bool's 0/1 values
    ReduceKind.ALL: ReduxKind.AND,
}


def _redux_int(kind: ReduceKind, elem: Elem) -> tuple[ReduxKind, ReduxType] | None:
    """``redux.sync``'s operation and ``.type`` for ``kind`` on a 32-bit integer
    accumulator (``.s32``/``.u32`` by its signedness, ``.b32`` for the bitwise kinds),
    None where redux.sync has no form (other accumulators, kinds without one)."""
    acc = elem.accumulator
    if acc.is_float or acc.bits != 32 or kind not in _REDUX_OP:
        return None
    if kind in (ReduceKind.AND, ReduceKind.OR, ReduceKind.XOR, ReduceKind.ANY, ReduceKind.ALL):
        return _REDUX_OP[kind], ReduxType.B32
    return _REDUX_OP[kind], ReduxType.S32 if acc.signed else ReduxType.U32


def warp_reduce(
    e: Emitter, kind: ReduceKind, elem: Elem, v: SSAValue, *, redux_f32: bool = False, shuffle_only: bool = False,
    redux_abs: bool = False,
) -> SSAValue:
    """Combine ``v`` over the 32 lanes of the warp; every lane gets the result.

    A 32-bit integer accumulator: one ``redux.sync`` (sm_80). ``f32`` max/min with
    ``redux_f32``: one ``redux.sync .f32`` (sm_100a; ``.NaN`` unless the op ignores NaN). Otherwise a ``shfl.sync.bfly``
    butterfly of 5 steps, whose order is the same on every lane, so that every lane
    holds the same bits; a 64-bit accumulator is split into two 32-bit halves for each
    shuffle (``mov.b64 {lo, hi}``) and joined again."""
    mask = e.const(FULL_MASK)
    redux = _redux_int(kind, elem)
    if redux is not None and not shuffle_only:
        return e.value(ReduxSyncOp(*redux, v, mask))
    if redux_f32 and elem.acc == f32 and kind in (ReduceKind.MAX, ReduceKind.MIN):
        op = ReduxKind.MAX if kind == ReduceKind.MAX else ReduxKind.MIN
        return e.value(ReduxSyncOp(op, ReduxType.F32, v, mask, abs=redux_abs, nan=e.propagate_nan))
    clamp = e.const(WARP - 1)
    for lane_mask in (16, 8, 4, 2, 1):
        other = _shuffle(e, v, e.const(lane_mask), clamp, mask)
        v = e.combine(kind, elem.accumulator, v, other)
    return v


def warp_reduce_state(e: Emitter, r: Reducer, s: list[SSAValue], *, redux_f32: bool = False) -> list[SSAValue]:
    """:func:`warp_reduce` of a state (passes/fused.py): one register as there (an
    absmax, ``max`` after the prologue ``abs``, takes ``redux.sync.max.abs`` on
    sm_100a), else a butterfly that shuffles each register and combines the states."""
    if r.width == 1:
        return [warp_reduce(e, r.kind, r.elem, s[0], redux_f32=redux_f32, redux_abs=redux_f32 and r.absmax)]
    mask = e.const(FULL_MASK)
    clamp = e.const(WARP - 1)
    for lane_mask in (16, 8, 4, 2, 1):
        lm = e.const(lane_mask)
        other = [_shuffle(e, v, lm, clamp, mask) for v in s]
        s = r.combine(e, s, other)
    return s


def cta_reduce_state(
    e: Emitter, r: Reducer, s: list[SSAValue], tid: SSAValue, nthreads: int, *, redux_f32: bool = False,
    name: str = "warp_partials",
) -> list[SSAValue]:
    """:func:`cta_reduce` of a state, valid in thread 0: one register as there, else
    one shared array per register for the warp partials."""
    if r.width == 1:
        return [
            cta_reduce(
                e, r.kind, r.elem, s[0], tid, nthreads, broadcast=False, redux_f32=redux_f32, name=name,
                redux_abs=redux_f32 and r.absmax,
            )
        ]
    s = warp_reduce_state(e, r, s)
    nwarps = nthreads // WARP
    if nwarps == 1:
        return s
    arrays = [e.shared([nwarps], t, f"{name}_{k}") for k, t in enumerate(r.types)]
    lane = e.and_b32(tid, WARP - 1)
    warp = e.shr_u32(tid, 5)

    def write(b: Emitter) -> list[SSAValue]:
        for a, d, v in zip(arrays, r.dtypes, s, strict=True):
            b.st(ld_type(d), b.ptr_add(a, b.mul_i(warp, d.bytes)), v)
        return []

    e.if_(e.cmp("eq", lane, 0), write)
    e.bar_sync()

    def first_warp(b: Emitter) -> list[SSAValue]:
        def load(c: Emitter) -> list[SSAValue]:
            return [
                c.ld(ld_type(d), c.ptr_add(a, c.mul_i(lane, d.bytes)), t)
                for a, d, t in zip(arrays, r.dtypes, r.types, strict=True)
            ]

        x = b.if_(b.cmp("ult", lane, nwarps), load, lambda c: r.neutral(c), r.types)
        return warp_reduce_state(b, r, x)

    return e.if_(e.cmp("eq", warp, 0), first_warp, lambda b: r.neutral(b), r.types)


def _shuffle(e: Emitter, v: SSAValue, lane_mask: SSAValue, clamp: SSAValue, mask: SSAValue) -> SSAValue:
    """``shfl.sync.bfly`` of ``v``: one for a 32-bit register, one per half of a 64-bit one."""
    if v.type not in (i64, f64):
        return e.value(ShflSyncOp(ShflMode.BFLY, v, lane_mask, clamp, mask))
    halves = e.emit(UnpackB32x2Op(v)).results
    lo, hi = (e.value(ShflSyncOp(ShflMode.BFLY, h, lane_mask, clamp, mask)) for h in halves)
    return e.value(PackB32x2Op(lo, hi, v.type))


def cta_reduce(
    e: Emitter, kind: ReduceKind, elem: Elem, v: SSAValue, tid: SSAValue, nthreads: int, *,
    broadcast: bool, redux_f32: bool = False, name: str = "warp_partials", redux_abs: bool = False,
) -> SSAValue:
    """Combine ``v`` over the ``nthreads`` threads of the CTA (a multiple of 32): a warp
    reduction, one partial per warp in shared memory, then warp 0 reduces the partials.
    The result is valid in thread 0, or in every thread with ``broadcast``."""
    v = warp_reduce(e, kind, elem, v, redux_f32=redux_f32, redux_abs=redux_abs)
    nwarps = nthreads // WARP
    if nwarps == 1:
        return v
    slots = e.shared([nwarps + 1], elem.acc, name)
    lane = e.and_b32(tid, WARP - 1)
    warp = e.shr_u32(tid, 5)
    st_t = elem.acc_ld
    slot = elem.slot_bytes
    warp_off = e.mul_i(warp, slot)

    def write(b: Emitter) -> list[SSAValue]:
        b.st(st_t, b.ptr_add(slots, warp_off), v)
        return []

    e.if_(e.cmp("eq", lane, 0), write)
    e.bar_sync()

    def first_warp(b: Emitter) -> list[SSAValue]:
        lane_off = b.mul_i(lane, slot)

        def load(c: Emitter) -> list[SSAValue]:
            return [c.ld(st_t, c.ptr_add(slots, lane_off), elem.acc)]

        def neutral(c: Emitter) -> list[SSAValue]:
            return [c.identity(kind, elem.accumulator)]

        (x,) = b.if_(b.cmp("ult", lane, nwarps), load, neutral, [elem.acc])
        r = warp_reduce(b, kind, elem, x, redux_f32=redux_f32, redux_abs=redux_abs)
        if broadcast:

            def publish(c: Emitter) -> list[SSAValue]:
                c.st(st_t, c.ptr_add(slots, slot * nwarps), r)
                return []

            b.if_(b.cmp("eq", lane, 0), publish)
        return [r]

    def others(b: Emitter) -> list[SSAValue]:
        return [b.identity(kind, elem.accumulator)]

    (r,) = e.if_(e.cmp("eq", warp, 0), first_warp, others, [elem.acc])
    if not broadcast:
        return r
    e.bar_sync()
    return e.ld(st_t, e.ptr_add(slots, slot * nwarps), elem.acc)


def last_cta(
    e: Emitter,
    counter: SSAValue,
    expected: int,
    tid: SSAValue,
    participates: SSAValue | None = None,
    flag_name: str = "last_cta",
) -> SSAValue:
    """After every thread's stores of its partial results: true (in every thread of the
    CTA) in the CTA that arrives last at ``counter`` (a zero-filled ``u32`` in global
    memory, which that CTA must set back to 0). ``expected`` CTAs arrive: those where
    ``participates`` (an ``i1`` of thread 0) holds, or all.

    Each thread makes its stores visible at gpu scope (``fence.acq_rel.gpu``) before the
    CTA barrier; thread 0 then takes a ticket with ``atom.add``, and the CTA that draws
    ``expected - 1`` reads the other CTAs' partials (after :func:`acquire`)."""
    e.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
    e.bar_sync()
    flag = e.shared([1], i32, flag_name)

    def ticket(b: Emitter) -> list[SSAValue]:
        t = b.value(AtomOp(AtomOpKind.ADD, AtomType.U32, counter, b.const(1)))
        last = b.value(arith.SelectOp(b.cmp("eq", t, expected - 1), b.const(1), b.const(0)))
        return [last]

    def t0(b: Emitter) -> list[SSAValue]:
        if participates is None:
            (last,) = ticket(b)
        else:
            (last,) = b.if_(participates, ticket, lambda c: [c.const(0)], [i32])
        b.st(LdStType.B32, flag, last)
        return []

    e.if_(e.cmp("eq", tid, 0), t0)
    e.bar_sync()
    return e.cmp("ne", e.ld(LdStType.B32, flag, i32), 0)


def reset_counter(e: Emitter, counter: SSAValue) -> None:
    """Set the ticket counter back to 0 for the next launch (the last CTA does)."""
    e.st(ld_type(COUNTER), counter, e.const(0))


def acquire(e: Emitter) -> None:
    e.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))


# endregion

# region A thread's own values


def thread_value(op: ReduceOp, e: Emitter) -> SSAValue:
    """The executing thread's own reduction of its local ``src`` (in the accumulator type)."""
    elem = elem_of(op)
    st = op.src.type
    assert isinstance(st, MemRefType)
    n = math.prod(st.get_shape())
    ix = _own_indices(e)
    shape = list(st.get_shape())

    def at(i: int) -> list[int]:
        idx = []
        for d in reversed(shape):
            idx.append(i % d)
            i //= d
        return idx[::-1]

    acc = e.to_acc(elem, ix.load(op.src, at(0)))
    for i in range(1, n):  # collective sources are short (one to a few values per thread)
        acc = e.combine(op.kind.data, elem.accumulator, acc, e.to_acc(elem, ix.load(op.src, at(i))))
    return acc


def store_result(op: ReduceOp, e: Emitter, r: SSAValue) -> None:
    """``dst[0] = r`` (combined with the old ``dst[0]`` under ``accum``), in the element type."""
    elem = elem_of(op)
    ix = _own_indices(e)
    zeros = [0] * len(op.dst.type.get_shape())  # type: ignore[union-attr]
    if op.accum is not None:
        r = e.combine(op.kind.data, elem.accumulator, e.to_acc(elem, ix.load(op.dst, zeros)), r)
    ix.store(e.from_acc(elem, r), op.dst, zeros)


def _own_indices(e: Emitter) -> Emitter:
    """An emitter where ``e`` stands with index constants of its own: the accesses to a
    collective's ``src`` and to its ``dst`` each create theirs."""
    return e.sibling()


def emitter_at(op: Operation) -> Emitter:
    """An emitter before ``op``; buffers go to the start of its kernel."""
    kernel = enclosing_kernel(op)
    assert kernel is not None
    return Emitter.before(op, entry=InsertPoint.at_start(kernel.body.block))


def linear_tid(e: Emitter, op: Operation) -> tuple[SSAValue, int]:
    """The thread's linear index in its CTA (x fastest), and the CTA's thread count."""
    launch = launch_of(op)
    assert launch is not None
    bx, by, bz = launch.block_dims
    tid = e.sreg(SpecialRegister.TID_X)
    if by > 1:
        tid = e.add_i(tid, e.mul_i(e.sreg(SpecialRegister.TID_Y), bx))
    if bz > 1:
        tid = e.add_i(tid, e.mul_i(e.sreg(SpecialRegister.TID_Z), bx * by))
    return tid, bx * by * bz


# endregion
