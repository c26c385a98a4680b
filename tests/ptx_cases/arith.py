"""The differential cases of ``bulkred_dialect.ops.ptx.arith``: scalar and packed arithmetic
(add ... shr, max3/min3, add.f32x2, mov.pack/unpack, mov.pack/unpack.b32x2), and the math
forms of fused reductions (abs, neg, sqrt, rcp, ex2, lg2, div.float, fma, and/or/xor/not.pred)."""

from __future__ import annotations

from collections.abc import Iterator

from bulkred_dialect.ops.ptx.base import PtxInstruction, f32, f32x2, f64, i1, i16, i32, i64, mnemonic
from bulkred_dialect.ops.ptx.arith import (
    AbsOp,
    AddF32x2Op,
    AddOp,
    AndOp,
    AndPredOp,
    Ex2Op,
    FloatDivOp,
    FmaOp,
    Lg2Op,
    NegOp,
    NotPredOp,
    OrPredOp,
    RcpOp,
    SqrtOp,
    XorPredOp,
    ArithType,
    BIT_TYPES,
    DivOp,
    FLOAT_TYPES,
    INT_TYPES,
    IR_TYPE_OF,
    Max3Op,
    MaxOp,
    Min3Op,
    MinOp,
    MulLoOp,
    MulOp,
    OrOp,
    PackB32x2Op,
    PackF32x2Op,
    RemOp,
    RoundingMode,
    ShlOp,
    ShrOp,
    SubOp,
    UnpackB32x2Op,
    UnpackF32x2Op,
    XorOp,
)
from ptx_cases import DiffCase


def _scalar_cases() -> Iterator[DiffCase]:
    """Every qualifier combination of the arithmetic ops, valid or not: add/sub/mul/mul.lo/
    min/max over each ``.type`` x ``.rnd`` (none, rn, rz, rm, rp) x ``.ftz``, and x ``.NaN``; max3/min3 x
    ``.ftz`` x ``.NaN``; add.f32x2 x ``.rnd`` x ``.ftz``; mov.pack/unpack; and/or/xor/shl/shr
    over each ``.type``. Operand types follow ``.type`` so that only the qualifier rules
    decide the verdict.
    """
    roundings: tuple[RoundingMode | None, ...] = (None, *RoundingMode)
    for cls in (AddOp, SubOp, MulOp, MulLoOp, MaxOp, MinOp):
        for t in ArithType:
            for rnd in roundings:
                for ftz in (False, True):
                    name = mnemonic(cls.OPCODE, rnd, "ftz" if ftz else None, t)

                    def build(args, cls=cls, t=t, rnd=rnd, ftz=ftz) -> PtxInstruction:
                        return cls(t, args[0], args[1], rnd=rnd, ftz=ftz)

                    yield DiffCase(name, (IR_TYPE_OF[t],) * 2, build)

    # '.NaN' (min/max of f16, bf16, f32 only) with each '.type' x '.ftz'.
    for mcls in (MaxOp, MinOp):
        for t in ArithType:
            for ftz in (False, True):

                def build_nan(args, mcls=mcls, t=t, ftz=ftz) -> PtxInstruction:
                    return mcls(t, args[0], args[1], ftz=ftz, nan=True)

                yield DiffCase(mnemonic(mcls.OPCODE, "ftz" if ftz else None, "NaN", t), (IR_TYPE_OF[t],) * 2, build_nan)

    # Integer div/rem: the syntax block has only '.type' (u16..s64); the bit and float
    # types are there to be refused (floating-point div is another form, not modelled).
    for icls in (DivOp, RemOp):
        for t in INT_TYPES + BIT_TYPES + (ArithType.F32,):

            def build_int(args, icls=icls, t=t) -> PtxInstruction:
                return icls(t, args[0], args[1])

            yield DiffCase(mnemonic(icls.OPCODE, t), (IR_TYPE_OF[t],) * 2, build_int)

    for cls3 in (Max3Op, Min3Op):
        for ftz in (False, True):
            for nan in (False, True):
                name = mnemonic(
                    cls3.name.removeprefix("ptx."), "ftz" if ftz else None, "NaN" if nan else None, "f32"
                )

                def build3(args, cls3=cls3, ftz=ftz, nan=nan) -> PtxInstruction:
                    return cls3(args[0], args[1], args[2], ftz=ftz, nan=nan)

                yield DiffCase(name, (f32,) * 3, build3)

    for rnd in roundings:
        for ftz in (False, True):

            def build_x2(args, rnd=rnd, ftz=ftz) -> PtxInstruction:
                return AddF32x2Op(args[0], args[1], rnd=rnd, ftz=ftz)

            yield DiffCase(mnemonic("add", rnd, "ftz" if ftz else None, "f32x2"), (f32x2,) * 2, build_x2)

    yield DiffCase("mov.pack.b64", (f32, f32), lambda args: PackF32x2Op(args[0], args[1]))
    yield DiffCase("mov.unpack.b64", (f32x2,), lambda args: UnpackF32x2Op(args[0]))
    for whole in (i64, f64):
        yield DiffCase(f"mov.pack.b32x2 {whole}", (i32, i32), lambda args, w=whole: PackB32x2Op(args[0], args[1], w))
        yield DiffCase(f"mov.unpack.b32x2 {whole}", (whole,), lambda args: UnpackB32x2Op(args[0]))

    for bcls in (AndOp, OrOp, XorOp, ShlOp, ShrOp):
        for t in ArithType:
            # Shifts take a u32 shift amount; and/or/xor take two operands of '.type'.
            rhs = i32 if bcls in (ShlOp, ShrOp) else IR_TYPE_OF[t]

            def build_bit(args, bcls=bcls, t=t) -> PtxInstruction:
                return bcls(t, args[0], args[1])

            yield DiffCase(mnemonic(bcls.OPCODE, t), (IR_TYPE_OF[t], rhs), build_bit)

    # The shift amount is u32 whatever '.type' is: a 16- or 64-bit amount is refused.
    for scls in (ShlOp, ShrOp):
        for t in BIT_TYPES:
            for amount in (i16, i64):

                def build_shift(args, scls=scls, t=t) -> PtxInstruction:
                    return scls(t, args[0], args[1])

                yield DiffCase(
                    f"{mnemonic(scls.OPCODE, t)}.amount_{amount}", (IR_TYPE_OF[t], amount), build_shift
                )


def math_cases() -> Iterator[DiffCase]:
    """The math ops of fused reductions: abs, neg, sqrt, rcp, ex2, lg2, fma and the
    floating-point div over every ``.type`` x rounding (none, .approx, .full, .rn, .rz, .rm,
    .rp) x ``.ftz``, operands of the type's registers; and/or/xor/not ``.pred`` on predicate
    registers (and on 32-bit ones, refused)."""
    roundings: tuple[str | None, ...] = (None, "approx", "full", *(str(r) for r in RoundingMode))
    for mcls, arity in ((AbsOp, 1), (NegOp, 1), (SqrtOp, 1), (RcpOp, 1), (Ex2Op, 1), (Lg2Op, 1), (FloatDivOp, 2), (FmaOp, 3)):
        # The integer types of div print as the integer div (ptx.div's cases).
        types = FLOAT_TYPES + BIT_TYPES if mcls is FloatDivOp else tuple(ArithType)
        for t in types:
            for r in roundings:
                for ftz in (False, True):
                    name = mnemonic(mcls.OPCODE, r, "ftz" if ftz else None, t)
                    if mcls is FloatDivOp:
                        name += " (div.float)"

                    def build_math(args, mcls=mcls, t=t, r=r, ftz=ftz) -> PtxInstruction:
                        rnd = RoundingMode(r) if r in [str(m) for m in RoundingMode] else None
                        return mcls(t, *args, rnd=rnd, approx=r == "approx", full=r == "full", ftz=ftz)

                    yield DiffCase(name, (IR_TYPE_OF[t],) * arity, build_math)
    for pcls in (AndPredOp, OrPredOp, XorPredOp):
        for reg in (i1, i32):
            yield DiffCase(f"{pcls.OPCODE}.pred {reg}", (reg, reg), lambda args, pcls=pcls: pcls(args[0], args[1]))
    for reg in (i1, i32):
        yield DiffCase(f"not.pred {reg}", (reg,), lambda args: NotPredOp(args[0]))


def differential_cases() -> Iterator[DiffCase]:
    """Every qualifier combination of the ops of arith.py, valid or not: the scalar and
    packed arithmetic (:func:`_scalar_cases`) and the math forms (:func:`math_cases`)."""
    yield from _scalar_cases()
    yield from math_cases()
