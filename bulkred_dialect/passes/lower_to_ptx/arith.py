"""``arith`` ops of level 2 into ptx ops: ``arith.constant`` -> ``ptx.mov.imm``;
``addi/subi/muli`` -> ``ptx.add/sub/mul.lo`` (folded when both constant);
``divui/divsi/remui/remsi/minui/minsi/maxui/maxsi`` -> ``ptx.div/rem/min/max`` of the op's
signedness (folded when both constant); ``index_cast/extsi/extui/trunci`` -> ``ptx.cvt`` (or
nothing when the width is kept); ``cmpi`` / ``select`` -> ``ptx.setp`` / ``ptx.selp``;
``xori %p, true`` on ``i1`` -> nothing: the branches on ``%p``'s negation take ``%p`` with
their successors swapped (only a branch condition may be negated)."""

from __future__ import annotations

from xdsl.dialects import arith, cf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Operation, SSAValue

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.arith import AddOp, ArithType, DivOp, MaxOp, MinOp, MulLoOp, RemOp, SubOp
from bulkred_dialect.ops.ptx.base import constant_int
from bulkred_dialect.ops.ptx.control import CmpOp, CvtOp, CvtType, SelpOp, SelpType, SetpOp, SetpType
from bulkred_dialect.ops.ptx.memory import MovImmOp, ldst_type_for
from bulkred_dialect.passes.lower_to_ptx.state import (
    LoweringState,
    element_bytes,
    int_width,
    lowered_type,
    wrap,
)

# arith.cmpi predicate -> (setp comparison, signed)
_CMPI: dict[str, tuple[CmpOp, bool]] = {
    "eq": (CmpOp.EQ, True),
    "ne": (CmpOp.NE, True),
    "slt": (CmpOp.LT, True),
    "sle": (CmpOp.LE, True),
    "sgt": (CmpOp.GT, True),
    "sge": (CmpOp.GE, True),
    "ult": (CmpOp.LO, False),
    "ule": (CmpOp.LS, False),
    "ugt": (CmpOp.HI, False),
    "uge": (CmpOp.HS, False),
}

# arith op -> (ptx op, signed)
_INT_BINARY: dict[type, tuple[type, bool]] = {
    arith.DivUIOp: (DivOp, False),
    arith.DivSIOp: (DivOp, True),
    arith.RemUIOp: (RemOp, False),
    arith.RemSIOp: (RemOp, True),
    arith.MinUIOp: (MinOp, False),
    arith.MinSIOp: (MinOp, True),
    arith.MaxUIOp: (MaxOp, False),
    arith.MaxSIOp: (MaxOp, True),
}


def _fold_int(cls: type, signed: bool, a: int, b: int, width: int) -> int:
    """``a op b`` as ``ptx.div/rem/min/max`` computes it on ``width``-bit operands."""
    a, b = (wrap(a, width), wrap(b, width)) if signed else (a % (1 << width), b % (1 << width))
    if cls is MinOp:
        return min(a, b)
    if cls is MaxOp:
        return max(a, b)
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # rounds toward zero
    return q if cls is DivOp else a - q * b


def _negation_of(op: arith.XOrIOp) -> SSAValue | None:
    """``p`` when ``op`` is ``arith.xori p, true`` (either order) on i1, else None."""
    if op.result.type != IntegerType(1):
        return None
    for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        c = constant_int(b)
        if c is not None and c & 1:
            return a
    return None


def constant(k: LoweringState, op: arith.ConstantOp) -> None:
    v = op.value
    t = lowered_type(op.result.type)
    if isinstance(v, IntegerAttr) and isinstance(t, IntegerType):
        new = k.insert(op, MovImmOp(wrap(v.value.data, int_width(t)), t))
    elif isinstance(v, FloatAttr) and element_bytes(t) in (2, 4, 8) and not isinstance(t, IntegerType):
        # the constant's own attribute where its type is the register's (no new FloatAttr)
        same = v.type == t
        new = k.insert(op, MovImmOp.create(result_types=[t], properties={"value": v}) if same else MovImmOp(v.value.data, t))
    else:
        raise LocatedError(op, f"constant {v} has no PTX immediate form")
    k.replace(op, new.results)


def binary(k: LoweringState, op: arith.AddiOp | arith.SubiOp | arith.MuliOp) -> None:
    t = lowered_type(op.result.type)
    w = int_width(t)
    if w not in (16, 32, 64):
        raise LocatedError(op, f"integer type {op.result.type} has no PTX arithmetic form")
    a, b = constant_int(op.lhs), constant_int(op.rhs)
    if a is not None and b is not None:
        folded = {arith.AddiOp: a + b, arith.SubiOp: a - b, arith.MuliOp: a * b}[type(op)]
        k.replace(op, [k.imm(op, folded, t)])
        return
    cls = {arith.AddiOp: AddOp, arith.SubiOp: SubOp, arith.MuliOp: MulLoOp}[type(op)]
    new = k.insert(op, cls(ArithType(f"s{w}"), op.lhs, op.rhs))
    k.replace(op, new.results)


def int_binary(k: LoweringState, op: Operation) -> None:
    """Index division, remainder, min and max: ``ptx.div/rem/min/max`` of the
    operation's signedness (folded when both operands are constants)."""
    cls, signed = _INT_BINARY[type(op)]
    t = lowered_type(op.results[0].type)
    w = int_width(t)
    if w not in (16, 32, 64):
        raise LocatedError(op, f"integer type {op.results[0].type} has no PTX arithmetic form")
    lhs, rhs = op.operands
    a, b = constant_int(lhs), constant_int(rhs)
    if a is not None and b is not None and (b % (1 << w) != 0 or cls in (MinOp, MaxOp)):
        k.replace(op, [k.imm(op, _fold_int(cls, signed, a, b, w), t)])
        return
    new = k.insert(op, cls(ArithType(f"{'s' if signed else 'u'}{w}"), lhs, rhs))
    k.replace(op, new.results)


def cast(k: LoweringState, op: Operation) -> None:
    src = op.operands[0]
    st, dt = lowered_type(op.operands[0].type), lowered_type(op.results[0].type)
    if not isinstance(st, IntegerType) or not isinstance(dt, IntegerType):
        raise LocatedError(op, f"only integer casts are lowered, got {st} to {dt}")
    sw, dw = int_width(st), int_width(dt)
    if sw == dw:
        k.replace(op, [src])
        return
    unsigned = isinstance(op, arith.ExtUIOp | arith.TruncIOp) or dw < sw
    c = constant_int(src)
    if c is not None and sw > 1:
        c = c & ((1 << sw) - 1) if unsigned else wrap(c, sw)
        k.replace(op, [k.imm(op, c, dt)])
        return
    if sw < 8 or dw < 8:
        raise LocatedError(op, f"a cast between {st} and {dt} has no PTX form")
    kind = "u" if unsigned else "s"
    new = k.insert(op, CvtOp(CvtType(f"{kind}{dw}"), CvtType(f"{kind}{sw}"), src, dt))
    k.replace(op, new.results)


def cmpi(k: LoweringState, op: arith.CmpiOp) -> None:
    t = lowered_type(op.lhs.type)
    w = int_width(t)
    if w not in (16, 32, 64):
        raise LocatedError(op, f"comparison of {op.lhs.type} has no PTX form")
    pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    cmp, signed = _CMPI[pred]
    new = k.insert(op, SetpOp(cmp, SetpType(f"{'s' if signed else 'u'}{w}"), op.lhs, op.rhs))
    k.replace(op, new.results)


def select(k: LoweringState, op: arith.SelectOp) -> None:
    t = lowered_type(op.result.type)
    ldst = ldst_type_for(t)
    if ldst is None or t == IntegerType(8):
        raise LocatedError(op, f"select of {op.result.type} has no PTX form")
    width = ldst.value[1:]
    new = k.insert(op, SelpOp(SelpType(f"b{width}"), op.lhs, op.rhs, op.cond))
    k.replace(op, new.results)


def xori(k: LoweringState, op: arith.XOrIOp) -> None:
    p = _negation_of(op)
    if p is None:
        raise LocatedError(
            op, f"only the negation of an i1 (arith.xori with true) is lowered, got {op.result.type}"
        )
    for use in op.result.uses:
        user = use.operation
        is_branch = isinstance(user, cf.ConditionalBranchOp) and use.index == 0
        is_negation = isinstance(user, arith.XOrIOp) and _negation_of(user) is op.result
        if not (is_branch or is_negation):
            raise LocatedError(
                op, f"a negated i1 is lowered only as a branch condition, but '{user.name}' uses it"
            )
    k.negated[op.result] = p
    k.created.append(op)  # erased with the dead ops once the branches use p


ARITH_HANDLERS = {
    **{cls: int_binary for cls in _INT_BINARY},
    arith.ConstantOp: constant,
    arith.AddiOp: binary,
    arith.SubiOp: binary,
    arith.MuliOp: binary,
    arith.IndexCastOp: cast,
    arith.ExtSIOp: cast,
    arith.ExtUIOp: cast,
    arith.TruncIOp: cast,
    arith.CmpiOp: cmpi,
    arith.SelectOp: select,
    arith.XOrIOp: xori,
}
