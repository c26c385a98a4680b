"""What the warp, CTA, cluster and grid variants share: :class:`KernelEmitter`, which
builds level-2 kernel code (ptx ops, ``scf.for``/``scf.if``, ``arith`` constants and
compares, and ``builtin.unrealized_conversion_cast`` of buffers to addresses), and the
collective steps built from it: a warp reduction (``redux.sync`` or a ``shfl.sync``
butterfly), a CTA reduction through shared memory, and the last-CTA step that combines
per-CTA partial results in a zero-filled workspace.

Every value that is not a buffer is a register value: ``i1``, ``i32``, ``i64``,
``f16``, ``bf16``, ``f32``. Addresses are ``!ptx.ptr<space>`` values. Byte offsets of
global addresses are ``i64``, of shared ones ``i32``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    LocationAttr,
    MemRefType,
    UnrealizedConversionCastOp,
    bf16,
    f16,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from bulkred_dialect.ops.ptx.arith import (
    AddOp,
    AndOp,
    ArithType,
    MinOp,
    MulLoOp,
    ShrOp,
    SubOp,
)
from bulkred_dialect.ops.ptx.atom import (
    AtomOp,
    AtomOpKind,
    AtomType,
    FenceOp,
    FenceSem,
    MemScope,
)
from bulkred_dialect.ops.ptx.base import PtrType, StateSpace
from bulkred_dialect.ops.ptx.control import CvtOp, CvtRounding, CvtType
from bulkred_dialect.ops.ptx.memory import LdOp, LdStType, LdVecOp, PtrAddOp, StOp
from bulkred_dialect.ops.ptx.redux import ReduxOp as ReduxKind
from bulkred_dialect.ops.ptx.redux import ReduxSyncOp, ReduxType
from bulkred_dialect.ops.ptx.sreg import MovSregOp, SpecialRegister
from bulkred_dialect.ops.ptx.sync import BarSyncOp
from bulkred_dialect.ops.ptx.warp import ShflMode, ShflSyncOp
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import (
    ExecScope,
    LaunchAttr,
    MemoryScope,
    ReduceKind,
    ReduceOp,
    buffer_type,
    enclosing_kernel,
    kernel_launch,
)
from bulkred_dialect.passes.dispatch import Predicate
from bulkred_dialect.passes.variants.local import combine

WARP = 32
FULL_MASK = -1  # 0xffffffff as an i32 immediate

# region Element types


@dataclass(frozen=True)
class Elem:
    """How a collective lowering loads, accumulates and stores one element type.

    f16 and bf16 are accumulated in f32 and rounded once at the end (as torch does for
    its reductions); the other types accumulate in themselves."""

    name: str  # TIRx spelling: float32, float16, bfloat16, int32
    ir: Attribute  # the element's IR type
    bytes: int
    ld: LdStType  # ld/st .type moving one element
    acc: Attribute  # the accumulator's IR type
    acc_name: str  # its TIRx spelling (local.combine's dtype)
    cvt: CvtType | None  # cvt .atype from the element to the accumulator (None: same)

    @property
    def vector(self) -> int:
        """Elements per vector load: 16 bytes, or 8 for 16-bit types (``ld.v4.b16``)."""
        return 4

    @property
    def vector_bytes(self) -> int:
        return self.vector * self.bytes


ELEMS: dict[str, Elem] = {
    "float32": Elem("float32", f32, 4, LdStType.F32, f32, "float32", None),
    "int32": Elem("int32", i32, 4, LdStType.B32, i32, "int32", None),
    "float16": Elem("float16", f16, 2, LdStType.B16, f32, "float32", CvtType.F16),
    "bfloat16": Elem("bfloat16", bf16, 2, LdStType.B16, f32, "float32", CvtType.BF16),
}
"""The element types the collective lowerings take (32-bit accumulators, which one
``shfl.sync`` moves)."""


def identity(kind: ReduceKind, acc: Attribute) -> int | float:
    """The neutral value of ``kind`` in the accumulator type."""
    if acc == f32:
        return {ReduceKind.SUM: 0.0, ReduceKind.MAX: -math.inf, ReduceKind.MIN: math.inf}[kind]
    return {
        ReduceKind.SUM: 0,
        ReduceKind.MAX: -(2**31),
        ReduceKind.MIN: 2**31 - 1,
        ReduceKind.AND: -1,
        ReduceKind.OR: 0,
        ReduceKind.XOR: 0,
    }[kind]


# endregion


class KernelEmitter:
    """Inserts level-2 ops at an insert point, each with the location of the tile op
    being lowered; nested regions get emitters of their own (:meth:`for_`, :meth:`if_`)."""

    def __init__(self, ip: InsertPoint, location: LocationAttr | None, entry: InsertPoint | None = None):
        self.ip = ip
        self.location = location
        self.entry = entry or ip  # where buffers (memref.alloca) go: the kernel's entry

    def _child(self, block: Block) -> KernelEmitter:
        return KernelEmitter(InsertPoint.at_end(block), self.location, self.entry)

    def add(self, op: Operation) -> Operation:
        if self.location is not None:
            op.location = self.location
        Rewriter.insert_op(op, self.ip)
        return op

    def v(self, op: Operation) -> SSAValue:
        return self.add(op).results[0]

    value = v  # local.combine calls e.value(op)

    # region Constants, registers, integer arithmetic

    def const(self, value: int | float, t: Attribute = i32) -> SSAValue:
        attr = FloatAttr(float(value), t) if t in (f16, bf16, f32) else IntegerAttr(int(value), t)  # type: ignore[arg-type]
        return self.v(arith.ConstantOp(attr))

    def sreg(self, reg: SpecialRegister) -> SSAValue:
        v = self.v(MovSregOp(reg))
        v.name_hint = str(reg).replace(".", "_")
        return v

    def wide(self, v: SSAValue) -> SSAValue:
        """An ``i32`` value >= 0 as ``i64``."""
        return self.v(CvtOp(CvtType.U64, CvtType.U32, v, i64))

    def add_i(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.const(b, a.type) if isinstance(b, int) else b
        return self.v(AddOp(ArithType.S64 if a.type == i64 else ArithType.S32, a, b))

    def sub_i(self, a: SSAValue | int, b: SSAValue) -> SSAValue:
        a = self.const(a, b.type) if isinstance(a, int) else a
        return self.v(SubOp(ArithType.S64 if a.type == i64 else ArithType.S32, a, b))

    def mul_i(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.const(b, a.type) if isinstance(b, int) else b
        return self.v(MulLoOp(ArithType.S64 if a.type == i64 else ArithType.S32, a, b))

    def and_b32(self, a: SSAValue, mask: int) -> SSAValue:
        return self.v(AndOp(ArithType.B32, a, self.const(mask)))

    def shr_u32(self, a: SSAValue, bits: int) -> SSAValue:
        return self.v(ShrOp(ArithType.U32, a, self.const(bits)))

    def min_s32(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.const(b) if isinstance(b, int) else b
        return self.v(MinOp(ArithType.S32, a, b))

    def cmp(self, pred: str, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.const(b, a.type) if isinstance(b, int) else b
        return self.v(arith.CmpiOp(a, b, pred))

    # endregion

    # region Memory

    def ptr(self, buffer: SSAValue, space: StateSpace) -> SSAValue:
        """The address of ``buffer`` (resolved by ``lower-to-ptx``)."""
        return self.v(UnrealizedConversionCastOp.get([buffer], [PtrType(space)]))

    def ptr_add(self, p: SSAValue, offset: SSAValue | int) -> SSAValue:
        assert isinstance(p.type, PtrType)
        t = i64 if p.type.bits == 64 else i32
        off = self.const(offset, t) if isinstance(offset, int) else offset
        return self.v(PtrAddOp(p, off))

    def shared(self, shape: Sequence[int], elt: Attribute, name: str) -> SSAValue:
        """A shared buffer allocated at the kernel's entry, and its ``shared::cta`` address."""
        t = buffer_type(shape, elt, MemoryScope.SHARED)
        alloca = memref.AllocaOp.get(elt, shape=list(shape), memory_space=t.memory_space)
        if self.location is not None:
            alloca.location = self.location
        Rewriter.insert_op(alloca, self.entry)
        alloca.memref.name_hint = name
        return self.ptr(alloca.memref, StateSpace.SHARED_CTA)

    def ld(self, t: LdStType, p: SSAValue, result: Attribute, offset: int = 0) -> SSAValue:
        return self.v(LdOp(t, p, result, offset))

    def ld_vec(
        self, t: LdStType, p: SSAValue, result: Attribute, count: int, offset: int = 0, *, nc: bool = True
    ) -> list[SSAValue]:
        """``ld.global{.nc}.v<count>``; ``.nc`` (the default) for data this kernel does not write."""
        return list(self.add(LdVecOp(t, p, result, count, offset, nc=nc)).results)

    def st(self, t: LdStType, p: SSAValue, value: SSAValue, offset: int = 0) -> None:
        self.add(StOp(t, p, value, offset))

    # endregion

    # region Control flow

    def for_(
        self,
        lb: SSAValue | int,
        ub: SSAValue | int,
        step: SSAValue | int,
        iter_args: Sequence[SSAValue],
        body: Callable[[KernelEmitter, SSAValue, list[SSAValue]], Sequence[SSAValue]],
    ) -> list[SSAValue]:
        """``scf.for`` over ``i64`` bounds; ``body(e, iv, args)`` returns the values to yield."""
        lb, ub, step = (self.const(x, i64) if isinstance(x, int) else x for x in (lb, ub, step))
        block = Block(arg_types=[i64, *(a.type for a in iter_args)])
        inner = self._child(block)
        yielded = body(inner, block.args[0], list(block.args[1:]))
        inner.add(scf.YieldOp(*yielded))
        return list(self.add(scf.ForOp(lb, ub, step, list(iter_args), block)).results)

    def if_(
        self,
        cond: SSAValue,
        then: Callable[[KernelEmitter], Sequence[SSAValue]],
        otherwise: Callable[[KernelEmitter], Sequence[SSAValue]] | None = None,
        result_types: Sequence[Attribute] = (),
    ) -> list[SSAValue]:
        """``scf.if``; each branch returns the values it yields (none without results)."""
        tb = Block()
        t_inner = self._child(tb)
        t_inner.add(scf.YieldOp(*then(t_inner)))
        regions = [Region(tb)]
        if otherwise is not None or result_types:
            eb = Block()
            e_inner = self._child(eb)
            e_inner.add(scf.YieldOp(*(otherwise(e_inner) if otherwise else ())))
            regions.append(Region(eb))
        else:
            regions.append(Region())
        return list(self.add(scf.IfOp(cond, list(result_types), regions[0], regions[1])).results)

    def bar_sync(self) -> None:
        self.add(BarSyncOp())

    # endregion

    # region Values

    def to_acc(self, elem: Elem, v: SSAValue) -> SSAValue:
        if elem.cvt is None:
            return v
        return self.v(CvtOp(CvtType.F32, elem.cvt, v, f32))

    def from_acc(self, elem: Elem, v: SSAValue) -> SSAValue:
        if elem.cvt is None:
            return v
        return self.v(CvtOp(elem.cvt, CvtType.F32, v, elem.ir, rnd=CvtRounding.RN))

    def combine(self, kind: ReduceKind, elem: Elem, a: SSAValue, b: SSAValue) -> SSAValue:
        return combine(self, kind, elem.acc_name, a, b)

    def fold(self, kind: ReduceKind, elem: Elem, values: Sequence[SSAValue]) -> SSAValue:
        """Pairwise tree over ``values`` in a fixed order (deterministic)."""
        vals = list(values)
        while len(vals) > 1:
            nxt = [self.combine(kind, elem, vals[i], vals[i + 1]) for i in range(0, len(vals) - 1, 2)]
            if len(vals) % 2:
                nxt.append(vals[-1])
            vals = nxt
        return vals[0]

    # endregion


# region Collective steps


_REDUX: dict[ReduceKind, tuple[ReduxKind, ReduxType]] = {
    ReduceKind.SUM: (ReduxKind.ADD, ReduxType.S32),
    ReduceKind.MAX: (ReduxKind.MAX, ReduxType.S32),
    ReduceKind.MIN: (ReduxKind.MIN, ReduxType.S32),
    ReduceKind.AND: (ReduxKind.AND, ReduxType.B32),
    ReduceKind.OR: (ReduxKind.OR, ReduxType.B32),
    ReduceKind.XOR: (ReduxKind.XOR, ReduxType.B32),
}


def warp_reduce(
    e: KernelEmitter, kind: ReduceKind, elem: Elem, v: SSAValue, *, redux_f32: bool = False, shuffle_only: bool = False
) -> SSAValue:
    """Combine ``v`` over the 32 lanes of the warp; every lane gets the result.

    ``int32``: one ``redux.sync`` (sm_80). ``f32`` max/min with ``redux_f32``: one
    ``redux.sync .f32`` (sm_100a). Otherwise a ``shfl.sync.bfly`` butterfly of 5 steps,
    whose order is the same on every lane, so that every lane holds the same bits."""
    mask = e.const(FULL_MASK)
    if elem.acc == i32 and not shuffle_only:
        op, t = _REDUX[kind]
        return e.v(ReduxSyncOp(op, t, v, mask))
    if redux_f32 and elem.acc == f32 and kind in (ReduceKind.MAX, ReduceKind.MIN):
        op = ReduxKind.MAX if kind == ReduceKind.MAX else ReduxKind.MIN
        return e.v(ReduxSyncOp(op, ReduxType.F32, v, mask))
    clamp = e.const(WARP - 1)
    for lane_mask in (16, 8, 4, 2, 1):
        other = e.v(ShflSyncOp(ShflMode.BFLY, v, e.const(lane_mask), clamp, mask))
        v = e.combine(kind, elem, v, other)
    return v


def cta_reduce(
    e: KernelEmitter, kind: ReduceKind, elem: Elem, v: SSAValue, tid: SSAValue, nthreads: int, *,
    broadcast: bool, redux_f32: bool = False, name: str = "warp_partials",
) -> SSAValue:
    """Combine ``v`` over the ``nthreads`` threads of the CTA (a multiple of 32): a warp
    reduction, one partial per warp in shared memory, then warp 0 reduces the partials.
    The result is valid in thread 0, or in every thread with ``broadcast``."""
    v = warp_reduce(e, kind, elem, v, redux_f32=redux_f32)
    nwarps = nthreads // WARP
    if nwarps == 1:
        return v
    slots = e.shared([nwarps + 1], elem.acc, name)
    lane = e.and_b32(tid, WARP - 1)
    warp = e.shr_u32(tid, 5)
    st_t = LdStType.F32 if elem.acc == f32 else LdStType.B32
    warp_off = e.mul_i(warp, 4)

    def write(b: KernelEmitter) -> list[SSAValue]:
        b.st(st_t, b.ptr_add(slots, warp_off), v)
        return []

    e.if_(e.cmp("eq", lane, 0), write)
    e.bar_sync()

    def first_warp(b: KernelEmitter) -> list[SSAValue]:
        lane_off = b.mul_i(lane, 4)

        def load(c: KernelEmitter) -> list[SSAValue]:
            return [c.ld(st_t, c.ptr_add(slots, lane_off), elem.acc)]

        def neutral(c: KernelEmitter) -> list[SSAValue]:
            return [c.const(identity(kind, elem.acc), elem.acc)]

        (x,) = b.if_(b.cmp("ult", lane, nwarps), load, neutral, [elem.acc])
        r = warp_reduce(b, kind, elem, x, redux_f32=redux_f32)
        if broadcast:

            def publish(c: KernelEmitter) -> list[SSAValue]:
                c.st(st_t, c.ptr_add(slots, 4 * nwarps), r)
                return []

            b.if_(b.cmp("eq", lane, 0), publish)
        return [r]

    def others(b: KernelEmitter) -> list[SSAValue]:
        return [b.const(identity(kind, elem.acc), elem.acc)]

    (r,) = e.if_(e.cmp("eq", warp, 0), first_warp, others, [elem.acc])
    if not broadcast:
        return r
    e.bar_sync()
    return e.ld(st_t, e.ptr_add(slots, 4 * nwarps), elem.acc)


def acc_ldst(elem: Elem) -> LdStType:
    return LdStType.F32 if elem.acc == f32 else LdStType.B32


def last_cta(
    e: KernelEmitter,
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
    e.add(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
    e.bar_sync()
    flag = e.shared([1], i32, flag_name)

    def ticket(b: KernelEmitter) -> list[SSAValue]:
        t = b.v(AtomOp(AtomOpKind.ADD, AtomType.U32, counter, b.const(1)))
        last = b.v(arith.SelectOp(b.cmp("eq", t, expected - 1), b.const(1), b.const(0)))
        return [last]

    def t0(b: KernelEmitter) -> list[SSAValue]:
        if participates is None:
            (last,) = ticket(b)
        else:
            (last,) = b.if_(participates, ticket, lambda c: [c.const(0)], [i32])
        b.st(LdStType.B32, flag, last)
        return []

    e.if_(e.cmp("eq", tid, 0), t0)
    e.bar_sync()
    return e.cmp("ne", e.ld(LdStType.B32, flag, i32), 0)


def acquire(e: KernelEmitter) -> None:
    e.add(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))


# endregion

__all__ = [
    "ELEMS",
    "Elem",
    "KernelEmitter",
    "acc_ldst",
    "acquire",
    "cta_reduce",
    "identity",
    "last_cta",
    "warp_reduce",
]


# region Predicates and helpers of the scope variants


SM_COUNT: dict[int, int] = {90: 132, 100: 148, 103: 148}
"""Multiprocessors of the target's flagship part (H100/H200: 132, B200: 148), which the
grid variants size their grids by; other targets use 132."""


def sm_count(target: Target) -> int:
    return SM_COUNT.get(target.sm, 132)


def launch_of(op: Operation) -> LaunchAttr | None:
    kernel = enclosing_kernel(op)
    if kernel is None:
        return None
    try:
        return kernel_launch(kernel)
    except Exception:  # a malformed launch attribute is the verifier's to report
        return None


def block_threads(op: Operation, target: Target) -> tuple[bool, object]:
    """The CTA's threads are whole warps (shfl.sync and redux.sync take the full mask)."""
    launch = launch_of(op)
    if launch is None:
        return False, "no bulkred.launch"
    b = launch.block_dims
    n = b[0] * b[1] * b[2]
    return n % WARP == 0, f"{n} threads"


def cluster_ctas(op: Operation, target: Target) -> tuple[bool, object]:
    launch = launch_of(op)
    if launch is None:
        return False, "no bulkred.launch"
    c = launch.cluster_dims
    n = c[0] * c[1] * c[2]
    return n >= 2, f"{n} CTAs"


def collective_dtype(op: Operation, target: Target) -> tuple[bool, object]:
    from bulkred_dialect.passes.variants import dtype_name, element_type

    name = dtype_name(element_type(op))
    return name in ELEMS, name


def one_value(op: Operation, target: Target) -> tuple[bool, object]:
    """dst has one element: the collective result of every thread's whole src."""
    assert isinstance(op, ReduceOp)
    dt = op.dst.type
    assert isinstance(dt, MemRefType)
    n = math.prod(dt.get_shape())
    return n == 1, f"dst of {n} elements"


def elem_of(op: ReduceOp) -> Elem:
    from bulkred_dialect.passes.variants import dtype_name, element_type

    return ELEMS[dtype_name(element_type(op))]


def thread_value(op: ReduceOp, e: KernelEmitter) -> SSAValue:
    """The executing thread's own reduction of its local ``src`` (in the accumulator type)."""
    from xdsl.builder import Builder

    from bulkred_dialect.passes.variants import Emitter

    elem = elem_of(op)
    st = op.src.type
    assert isinstance(st, MemRefType)
    n = math.prod(st.get_shape())
    ix = Emitter(Builder(e.ip), location=e.location)
    shape = list(st.get_shape())

    def at(i: int) -> list[int]:
        idx = []
        for d in reversed(shape):
            idx.append(i % d)
            i //= d
        return idx[::-1]

    acc = e.to_acc(elem, ix.load(op.src, at(0)))
    for i in range(1, n):  # collective sources are short (one to a few values per thread)
        acc = e.combine(op.kind.data, elem, acc, e.to_acc(elem, ix.load(op.src, at(i))))
    return acc


def store_result(op: ReduceOp, e: KernelEmitter, r: SSAValue) -> None:
    """``dst[0] = r`` (combined with the old ``dst[0]`` under ``accum``), in the element type."""
    from xdsl.builder import Builder

    from bulkred_dialect.passes.variants import Emitter

    elem = elem_of(op)
    ix = Emitter(Builder(e.ip), location=e.location)
    zeros = [0] * len(op.dst.type.get_shape())  # type: ignore[union-attr]
    if op.accum is not None:
        r = e.combine(op.kind.data, elem, e.to_acc(elem, ix.load(op.dst, zeros)), r)
    ix.store(e.from_acc(elem, r), op.dst, zeros)


def emitter_at(op: Operation) -> KernelEmitter:
    """An emitter before ``op``; buffers go to the start of its kernel."""
    kernel = enclosing_kernel(op)
    assert kernel is not None
    return KernelEmitter(InsertPoint.before(op), op.location, InsertPoint.at_start(kernel.body.block))


def linear_tid(e: KernelEmitter, op: Operation) -> tuple[SSAValue, int]:
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


def collective_predicates(scope: ExecScope, dtype: Predicate, *extra: Predicate) -> list[Predicate]:
    """The predicates of a warp, CTA or cluster variant: the scope, local buffers, one
    result, the element type, whole warps, then the variant's own."""
    from bulkred_dialect.passes.variants import exec_scope_in, src_dst_in_scope

    return [
        Predicate("exec_scope", exec_scope_in(scope), expected=str(scope)),
        Predicate("local_scope", src_dst_in_scope(MemoryScope.LOCAL), expected="src local, dst local"),
        Predicate("dst_len", one_value, expected="1"),
        dtype,
        Predicate("block", block_threads, expected="a multiple of 32 threads"),
        *extra,
    ]


ANY_COLLECTIVE_DTYPE = Predicate("dtype", collective_dtype, expected=", ".join(ELEMS))
CLUSTER_OF_TWO_OR_MORE = Predicate("cluster", cluster_ctas, expected=">= 2 CTAs")
