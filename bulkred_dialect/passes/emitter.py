""":class:`Emitter`: builds the lowered form of a tile-level op in front of it, for every
lowering (the variants, the kernel steps of ``variants/kernel.py``, ``lower-bulk-ops``).

It inserts level-2 IR (docs/DEVELOPING.md, "Dialect levels"): ``memref.load/store`` and
``memref.alloca``, ``arith`` constants and compares, ``scf.for/if/while``, ptx ops, and
``builtin.unrealized_conversion_cast`` of buffers to addresses. Two rules hold for
every op it inserts:

* **location**: the op takes ``location``, the location of the tile op being replaced
  (:meth:`Emitter.before` takes it from the op), so that an error in the lowered IR
  points at the tile op's source line. Nested emitters (loop and branch bodies) share it.
* **index constants**: :meth:`Emitter.index` creates each ``arith.constant N : index``
  once, at the insert point of the outermost emitter (before the replaced op), and
  every nested emitter shares it, so that the constant dominates all its uses.
  Constants of other types (:meth:`Emitter.const`) go where the emitter stands.

And one rule for the combining op (:meth:`Emitter.combine`): float ``max``/``min``
propagate NaN (``max.NaN``) unless the ``bulkred.reduce`` being replaced has
``ignore_nan`` (:meth:`Emitter.before` reads it into :attr:`Emitter.propagate_nan`;
nested emitters share it).

Buffers (:meth:`Emitter.shared`) go to ``entry``, the start of the kernel.

Register values are ``i1``, ``i32``, ``i64``, ``f16``, ``bf16``, ``f32``; addresses are
``!ptx.ptr<space>`` values; byte offsets of global addresses are ``i64``, of shared
ones ``i32``.

Example (``dst[0] = src[0] + src[1]`` in float32)::

    e = Emitter.before(op)
    e.store(e.combine(ReduceKind.SUM, DTYPES["float32"], e.load(src, [0]), e.load(src, [1])), dst, [0])
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerType,
    LocationAttr,
    UnrealizedConversionCastOp,
    bf16,
    f16,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from bulkred_dialect.ops.dtypes import DType
from bulkred_dialect.ops.ptx.arith import (
    FLOAT_TYPES,
    NAN_TYPES,
    AddOp,
    AndOp,
    ArithType,
    MaxOp,
    MinOp,
    MulLoOp,
    MulOp,
    OrOp,
    RoundingMode,
    ShrOp,
    SubOp,
    XorOp,
)
from bulkred_dialect.ops.ptx.base import PtrType, StateSpace, integer_attr
from bulkred_dialect.ops.ptx.control import CmpOp, CvtOp, CvtRounding, CvtType, SelpOp, SelpType, SetpOp, SetpType
from bulkred_dialect.ops.ptx.arith import (  # the region Math (fused reductions)
    AbsOp, AndPredOp, Ex2Op, FloatDivOp, FmaOp, Lg2Op, NegOp, NotPredOp, OrPredOp, RcpOp, SqrtOp,
)
from bulkred_dialect.ops.ptx.memory import LdOp, LdStType, LdVecOp, PtrAddOp, StOp, StVecOp
from bulkred_dialect.ops.ptx.sreg import MovSregOp, SpecialRegister
from bulkred_dialect.ops.ptx.sync import (
    BarrierClusterArriveOp,
    BarrierClusterWaitOp,
    BarSyncOp,
    ClusterArriveSem,
)
from bulkred_dialect.ops.tile import MemoryScope, ReduceKind, ReduceOp, buffer_type
from bulkred_dialect.passes import f64_math
from bulkred_dialect.passes.elements import Elem, arith_types, cvt_type, register_type, selp_type

@functools.lru_cache(maxsize=4096)
def _cached_float_attr(value: float, t: Attribute) -> FloatAttr:
    return FloatAttr(value, t)  # type: ignore[arg-type]


def _float_attr(value: float, t: Attribute) -> FloatAttr:
    """``FloatAttr(value, t)``, made once per value and type (an immutable attribute,
    verified when built), except the zeros and NaNs (equal keys of different values)."""
    if value == 0.0 or value != value:
        return FloatAttr(value, t)  # type: ignore[arg-type]
    return _cached_float_attr(value, t)


# A branch or loop body: (the body's emitter) -> the values it yields (None: none).
Body = Callable[["Emitter"], Sequence[SSAValue] | None]


class Emitter:
    """Inserts ops at ``ip``, each with ``location``; ``entry`` is where buffers go (the
    kernel's first block; ``ip`` when not given). See the module docstring for the
    location and index-constant rules."""

    def __init__(
        self,
        ip: InsertPoint,
        location: LocationAttr | None = None,
        *,
        entry: InsertPoint | None = None,
        propagate_nan: bool = True,
    ):
        self.ip = ip
        self.location = location
        self.entry = entry or ip
        self.propagate_nan = propagate_nan
        self._root = self
        self._index: dict[int, SSAValue] = {}

    @staticmethod
    def before(op: Operation, *, entry: InsertPoint | None = None) -> Emitter:
        """An emitter in front of ``op``, with ``op``'s location (and, for a
        ``bulkred.reduce`` with ``ignore_nan``, NaN-ignoring max/min)."""
        ignore = isinstance(op, ReduceOp) and not op.propagates_nan
        return Emitter(InsertPoint.before(op), op.location, entry=entry, propagate_nan=not ignore)

    def nested(self, block: Block) -> Emitter:
        """An emitter at the end of ``block`` (a loop or branch body) sharing this one's
        location, entry, NaN rule and index constants."""
        inner = Emitter(InsertPoint.at_end(block), self.location, entry=self.entry, propagate_nan=self.propagate_nan)
        inner._root = self._root
        return inner

    def sibling(self) -> Emitter:
        """An emitter where this one stands, with the same location, entry and NaN rule
        but index constants of its own (created where it stands)."""
        return Emitter(self.ip, self.location, entry=self.entry, propagate_nan=self.propagate_nan)

    # region Ops and constants

    def emit(self, op: Operation) -> Operation:
        if self.location is not None:
            op.location = self.location
        Rewriter.insert_op(op, self.ip)
        return op

    def value(self, op: Operation) -> SSAValue:
        """Emit a one-result op and return its result."""
        return self.emit(op).results[0]

    def index(self, i: int) -> SSAValue:
        """``arith.constant i : index``, shared by every emitter of this lowering."""
        root = self._root
        if i not in root._index:
            root._index[i] = root.value(arith.ConstantOp.from_int_and_width(i, IndexType()))
        return root._index[i]

    def const(self, value: int | float, t: Attribute = i32) -> SSAValue:
        """``arith.constant`` of ``t`` (a float for f16/bf16/f32/f64), here."""
        attr = _float_attr(float(value), t) if t in (f16, bf16, f32, f64) else integer_attr(int(value), t)  # type: ignore[arg-type]
        # as ConstantOp.from_int_and_width builds it (Operation.create: no IRDL argument matching)
        return self.value(arith.ConstantOp.create(result_types=[attr.type], properties={"value": attr}))

    # endregion

    # region Buffers (memref)

    def _idx(self, i: SSAValue | int) -> SSAValue:
        return self.index(i) if isinstance(i, int) else i

    def load(self, buf: SSAValue, indices: Sequence[SSAValue | int]) -> SSAValue:
        return self.value(memref.LoadOp.get(buf, [self._idx(i) for i in indices]))

    def store(self, value: SSAValue, buf: SSAValue, indices: Sequence[SSAValue | int]) -> None:
        self.emit(memref.StoreOp.get(value, buf, [self._idx(i) for i in indices]))

    def shared(self, shape: Sequence[int], elt: Attribute, name: str) -> SSAValue:
        """A shared buffer allocated at ``entry``, and its ``shared::cta`` address."""
        t = buffer_type(shape, elt, MemoryScope.SHARED)
        alloca = memref.AllocaOp.build(operands=[[], []], result_types=[t], properties={"alignment": None})  # AllocaOp.get's op, of t itself
        if self.location is not None:
            alloca.location = self.location
        Rewriter.insert_op(alloca, self.entry)
        alloca.memref.name_hint = name
        return self.ptr(alloca.memref, StateSpace.SHARED_CTA)

    # endregion

    # region Control flow

    def for_(
        self,
        lb: SSAValue | int,
        ub: SSAValue | int,
        step: SSAValue | int,
        iter_args: Sequence[SSAValue],
        body: Callable[[Emitter, SSAValue, list[SSAValue]], Sequence[SSAValue]],
        *,
        index: bool = False,
    ) -> list[SSAValue]:
        """``scf.for``; ``body(e, iv, args)`` emits the body and returns the values to
        yield. Returns the loop's results. The loop counts in ``i64``, or in ``index``
        with ``index`` (integer bounds are then shared index constants)."""
        block = Block(arg_types=[IndexType() if index else i64, *(a.type for a in iter_args)])
        inner = self.nested(block)
        yielded = body(inner, block.args[0], list(block.args[1:]))
        inner.emit(scf.YieldOp(*yielded))
        lb, ub, step = (
            x if isinstance(x, SSAValue) else self.index(x) if index else self.const(x, i64) for x in (lb, ub, step)
        )
        return list(self.emit(scf.ForOp(lb, ub, step, list(iter_args), block)).results)

    def nest(self, shape: Sequence[int], body: Callable[[Emitter, list[SSAValue]], None]) -> None:
        """Index loops over every index of ``shape`` (outermost first); ``body(e, ivs)``.
        A dimension of extent 1 takes no loop: its index is the constant 0."""
        if not shape:
            body(self, [])
            return
        if shape[0] == 1:
            self.nest(shape[1:], lambda e, ivs: body(e, [self.index(0), *ivs]))
            return

        def outer(e: Emitter, iv: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            e.nest(shape[1:], lambda e2, ivs: body(e2, [iv, *ivs]))
            return []

        self.for_(0, shape[0], 1, [], outer, index=True)

    def if_(
        self,
        cond: SSAValue,
        then: Body,
        otherwise: Body | None = None,
        result_types: Sequence[Attribute] = (),
    ) -> list[SSAValue]:
        """``scf.if``; each branch returns the values it yields (nothing, or None,
        without results)."""
        tb = Block()
        t_inner = self.nested(tb)
        t_inner.emit(scf.YieldOp(*(then(t_inner) or ())))
        false_region = Region()
        if otherwise is not None or result_types:
            eb = Block()
            e_inner = self.nested(eb)
            e_inner.emit(scf.YieldOp(*((otherwise(e_inner) if otherwise else None) or ())))
            false_region = Region(eb)
        return list(self.emit(scf.IfOp(cond, list(result_types), Region(tb), false_region)).results)

    def while_(self, condition: Callable[[Emitter], SSAValue]) -> None:
        """``scf.while`` without loop-carried values: ``condition(e)`` emits the test
        and returns the ``i1`` that keeps the loop going; the body is empty."""
        before, after = Block(), Block()
        b = self.nested(before)
        b.emit(scf.ConditionOp(condition(b)))
        self.nested(after).emit(scf.YieldOp())
        self.emit(scf.WhileOp([], [], Region(before), Region(after)))

    def bar_sync(self) -> None:
        """``bar.sync 0``: every thread of the CTA (``__syncthreads``)."""
        self.emit(BarSyncOp(0))

    def cluster_sync(self) -> None:
        """``barrier.cluster.arrive.release`` + ``barrier.cluster.wait.acquire``: every
        thread of every CTA of the cluster, with shared-memory writes before it visible
        after it."""
        self.emit(BarrierClusterArriveOp(ClusterArriveSem.RELEASE))
        self.emit(BarrierClusterWaitOp(acquire=True))

    # endregion

    # region Registers, integer arithmetic

    def sreg(self, reg: SpecialRegister) -> SSAValue:
        v = self.value(MovSregOp(reg))
        v.name_hint = str(reg).replace(".", "_")
        return v

    def wide(self, v: SSAValue) -> SSAValue:
        """An ``i32`` value >= 0 as ``i64``."""
        return self.value(CvtOp(CvtType.U64, CvtType.U32, v, i64))

    def add_i(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.const(b, a.type) if isinstance(b, int) else b
        return self.value(AddOp(ArithType.S64 if a.type == i64 else ArithType.S32, a, b))

    def sub_i(self, a: SSAValue | int, b: SSAValue) -> SSAValue:
        a = self.const(a, b.type) if isinstance(a, int) else a
        return self.value(SubOp(ArithType.S64 if a.type == i64 else ArithType.S32, a, b))

    def mul_i(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.const(b, a.type) if isinstance(b, int) else b
        return self.value(MulLoOp(ArithType.S64 if a.type == i64 else ArithType.S32, a, b))

    def and_b32(self, a: SSAValue, mask: int) -> SSAValue:
        return self.value(AndOp(ArithType.B32, a, self.const(mask)))

    def shr_u32(self, a: SSAValue, bits: int) -> SSAValue:
        return self.value(ShrOp(ArithType.U32, a, self.const(bits)))

    def min_s32(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.const(b) if isinstance(b, int) else b
        return self.value(MinOp(ArithType.S32, a, b))

    def cmp(self, pred: str, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.const(b, a.type) if isinstance(b, int) else b
        return self.value(arith.CmpiOp(a, b, pred))

    # endregion

    # region Addresses, loads and stores

    def ptr(self, buffer: SSAValue, space: StateSpace) -> SSAValue:
        """The address of ``buffer`` in ``space`` (resolved by ``lower-to-ptx``)."""
        return self.value(UnrealizedConversionCastOp.get([buffer], [PtrType(space)]))

    def ptr_add(self, p: SSAValue, offset: SSAValue | int) -> SSAValue:
        assert isinstance(p.type, PtrType)
        t = i64 if p.type.bits == 64 else i32
        off = self.const(offset, t) if isinstance(offset, int) else offset
        return self.value(PtrAddOp(p, off))

    def ld(self, t: LdStType, p: SSAValue, result: Attribute, offset: int = 0) -> SSAValue:
        return self.value(LdOp(t, p, result, offset))

    def ld_vec(
        self, t: LdStType, p: SSAValue, result: Attribute, count: int, offset: int = 0, *, nc: bool = True
    ) -> list[SSAValue]:
        """``ld.global{.nc}.v<count>``; ``.nc`` (the default) for data this kernel does not write."""
        return list(self.emit(LdVecOp(t, p, result, count, offset, nc=nc)).results)

    def st(self, t: LdStType, p: SSAValue, value: SSAValue, offset: int = 0) -> None:
        self.emit(StOp(t, p, value, offset))

    def st_vec(self, t: LdStType, p: SSAValue, values: Sequence[SSAValue], offset: int = 0) -> None:
        """``st.<space>.v<len(values)>``: the values as consecutive elements, one access."""
        self.emit(StVecOp(t, p, values, offset))

    # endregion

    # region Combining values

    def to_acc(self, elem: Elem, v: SSAValue) -> SSAValue:
        """A loaded source element (in its register, :attr:`Elem.reg`) as the accumulator
        type (``cvt`` when they differ); with :attr:`Elem.nonzero` ``v != 0`` as 1 or 0
        (``setp.neu`` for floats, so that NaN counts as nonzero, ``setp.ne`` for
        integers; then ``selp``)."""
        if elem.nonzero:
            return self.nonzero(elem.reg, elem.accumulator, v)
        if elem.rounds_through_out:  # a narrower float dst: cvt.rn into it first (the prologue cast)
            return self.convert(self.convert(v, elem.reg, elem.out), elem.out, elem.accumulator)
        return self.convert(v, elem.reg, elem.accumulator)

    def nonzero(self, src: DType, acc: DType, v: SSAValue) -> SSAValue:
        """``v != 0`` (a register of ``src``) as 1 or 0 in a register of ``acc``."""
        arith, _ = arith_types(src)
        zero = self.const(0.0 if src.is_float else 0, register_type(src))
        pred = self.value(SetpOp(CmpOp.NEU if src.is_float else CmpOp.NE, SetpType(arith.value), v, zero))
        t = register_type(acc)
        one, none = (1.0, 0.0) if acc.is_float else (1, 0)
        return self.value(SelpOp(selp_type(t), self.const(one, t), self.const(none, t), pred))

    def from_acc(self, elem: Elem, v: SSAValue) -> SSAValue:
        """An accumulator as the output type when they differ: ``cvt.rn`` to a narrower
        float, a plain ``cvt`` (keeping the low bits) to a narrower integer."""
        return self.convert(v, elem.accumulator, elem.out)

    def convert(self, v: SSAValue, src: DType, dst: DType) -> SSAValue:
        """``v``, a register of ``src``, as ``dst``: nothing when both are one type or
        integers in registers of one width (registers are signless, 8- and 16-bit
        integers live in 32-bit ones, and ``st.b8``/``st.b16`` store their low bits),
        else one ``cvt``: ``.rn`` to a
        narrower float or from an integer to a float, none otherwise (widening a float
        is exact; an integer narrows by keeping its low bits)."""
        if src == dst or (not src.is_float and not dst.is_float and max(32, src.bits) == max(32, dst.bits)):
            return v
        rnd = CvtRounding.RN if dst.is_float and (not src.is_float or dst.bits < src.bits) else None
        result = dst.ir if dst.is_float else IntegerType(max(32, dst.bits))
        return self.value(CvtOp(cvt_type(dst), cvt_type(src), v, result, rnd=rnd))

    def combine(self, kind: ReduceKind, dtype: DType, a: SSAValue, b: SSAValue) -> SSAValue:
        """``kind(a, b)`` in ``dtype`` as one scalar ptx instruction: ``add.rn`` /
        ``mul.rn`` for floats (no ``.ftz``), ``add.s<N>`` / ``mul.lo.s<N>`` for integers
        (wrapping), ``max``/``min`` (signed for integers; for floats ``.NaN`` unless
        :attr:`propagate_nan` is off, see :meth:`minmax`), ``and``/``or``/``xor.b<N>``;
        ``any``/``all`` as ``or``/``and.b<N>`` of 0/1 values."""
        arith_type, bit_type = arith_types(dtype)
        if kind == ReduceKind.SUM:
            return self.value(AddOp(arith_type, a, b, rnd=RoundingMode.RN if dtype.is_float else None))
        if kind == ReduceKind.PROD:
            if dtype.is_float:
                return self.value(MulOp(arith_type, a, b, rnd=RoundingMode.RN))
            return self.value(MulLoOp(arith_type, a, b))
        if kind in (ReduceKind.MAX, ReduceKind.MIN):
            return self.minmax(kind, arith_type, a, b)
        assert bit_type is not None, "the verifier allows bitwise kinds on integers only"
        # any/all: or/and of bool's 0/1 values (loaded with ld.u8 into 32-bit registers)
        logic = {
            ReduceKind.AND: AndOp, ReduceKind.OR: OrOp, ReduceKind.XOR: XorOp, ReduceKind.ANY: OrOp, ReduceKind.ALL: AndOp,
        }[kind]
        return self.value(logic(bit_type, a, b))

    def minmax(self, kind: ReduceKind, t: ArithType, a: SSAValue, b: SSAValue) -> SSAValue:
        """``max``/``min`` of ``.type`` ``t``. A float one propagates NaN when
        :attr:`propagate_nan` holds: ``max.NaN`` for f16, bf16 and f32; ``max.f64`` has
        no ``.NaN``, so for f64 ``setp.nan.f64`` (a or b NaN) selects ``add.rn.f64 a, b``
        (a NaN) in place of the plain ``max.f64``."""
        op = MaxOp if kind == ReduceKind.MAX else MinOp
        if not self.propagate_nan or t not in FLOAT_TYPES:
            return self.value(op(t, a, b))
        if t in NAN_TYPES:
            return self.value(op(t, a, b, nan=True))
        m = self.value(op(t, a, b))
        either_nan = self.value(SetpOp(CmpOp.NAN, SetpType(t), a, b))
        return self.value(SelpOp(SelpType(t), self.value(AddOp(t, a, b, rnd=RoundingMode.RN)), m, either_nan))

    def identity(self, kind: ReduceKind, dtype: DType) -> SSAValue:
        """The neutral value of ``kind`` in ``dtype`` under this emitter's NaN rule (NaN
        for a NaN-ignoring float max/min, ``DType.identity``), here."""
        return self.const(dtype.identity(kind, ignore_nan=not self.propagate_nan), register_type(dtype))

    def fold(self, kind: ReduceKind, dtype: DType, values: Sequence[SSAValue]) -> SSAValue:
        """Pairwise tree over ``values`` in a fixed order (deterministic)."""
        vals = list(values)
        while len(vals) > 1:
            nxt = [self.combine(kind, dtype, vals[i], vals[i + 1]) for i in range(0, len(vals) - 1, 2)]
            if len(vals) % 2:
                nxt.append(vals[-1])
            vals = nxt
        return vals[0]

    # endregion

    # region Math (fused reductions)

    def abs_(self, t: ArithType, v: SSAValue) -> SSAValue:
        """``abs.t`` (no ``.ftz``): the sign bit cleared for a float, wrapping for s16/s32/s64."""
        return self.value(AbsOp(t, v))

    def neg(self, t: ArithType, v: SSAValue) -> SSAValue:
        """``neg.t`` (no ``.ftz``): the sign bit flipped for a float, wrapping for an integer."""
        return self.value(NegOp(t, v))

    def sqrt(self, t: ArithType, v: SSAValue) -> SSAValue:
        """``sqrt.rn.t`` (f32, f64): the IEEE square root, rounded to nearest even."""
        return self.value(SqrtOp(t, v, rnd=RoundingMode.RN))

    def rcp(self, t: ArithType, v: SSAValue) -> SSAValue:
        """``rcp.rn.t`` (f32, f64): ``1 / v``, rounded to nearest even."""
        return self.value(RcpOp(t, v, rnd=RoundingMode.RN))

    def ex2(self, v: SSAValue) -> SSAValue:
        """``ex2.approx.f32`` (no ``.ftz``): ``2 ** v``, approximate (PTX ISA error bound)."""
        return self.value(Ex2Op(ArithType.F32, v, approx=True))

    def lg2(self, v: SSAValue) -> SSAValue:
        """``lg2.approx.f32`` (no ``.ftz``): ``log2(v)``, approximate (PTX ISA error bound)."""
        return self.value(Lg2Op(ArithType.F32, v, approx=True))

    def exp_f64(self, v: SSAValue) -> SSAValue:
        """``exp(v)`` of an ``f64``, within 1 ulp, from ``fma.rn.f64`` and integer ops on the
        bits (PTX has no float64 ``ex2``): ``passes/f64_math.py``'s :func:`~bulkred_dialect.passes.f64_math.exp`."""
        return f64_math.exp(self, v)

    def log_f64(self, v: SSAValue) -> SSAValue:
        """``log(v)`` of an ``f64``, within 1 ulp, from ``fma.rn.f64``, one ``div.rn.f64``
        and integer ops on the bits (PTX has no float64 ``lg2``): ``passes/f64_math.py``'s
        :func:`~bulkred_dialect.passes.f64_math.log`."""
        return f64_math.log(self, v)

    def pow_f64(self, v: SSAValue, p: float) -> SSAValue:
        """``v ** p`` of an ``f64`` ``v >= 0`` and a constant ``p``: ``exp(p * log(v))`` with
        the logarithm and the product carried in two parts (``passes/f64_math.py``'s
        :func:`~bulkred_dialect.passes.f64_math.pow`), near 1 ulp for every ``v``."""
        return f64_math.pow(self, v, p)

    def fma(self, t: ArithType, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """``fma.rn.t`` (f16, bf16, f32, f64): ``a * b + c`` with one rounding to nearest even."""
        return self.value(FmaOp(t, a, b, c, rnd=RoundingMode.RN))

    def div(self, t: ArithType, a: SSAValue, b: SSAValue) -> SSAValue:
        """``div.rn.t`` (f32, f64; ``ptx.div.float``): ``a / b``, rounded to nearest even."""
        return self.value(FloatDivOp(t, a, b, rnd=RoundingMode.RN))

    def selp(self, t: SelpType, a: SSAValue, b: SSAValue, pred: SSAValue) -> SSAValue:
        """``selp.t``: ``a`` where the predicate ``pred`` (``i1``) holds, else ``b``."""
        return self.value(SelpOp(t, a, b, pred))

    def setp(self, cmp: CmpOp, t: SetpType, a: SSAValue, b: SSAValue) -> SSAValue:
        """``setp.cmp.t``: the comparison of ``a`` and ``b`` as a predicate (``i1``)."""
        return self.value(SetpOp(cmp, t, a, b))

    def and_pred(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """``and.pred`` of two predicates."""
        return self.value(AndPredOp(a, b))

    def or_pred(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """``or.pred`` of two predicates."""
        return self.value(OrPredOp(a, b))

    def not_pred(self, a: SSAValue) -> SSAValue:
        """``not.pred`` of a predicate."""
        return self.value(NotPredOp(a))

    # endregion
