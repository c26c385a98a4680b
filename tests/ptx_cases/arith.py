"""The differential cases of ``bulkred_dialect.ops.ptx.arith``: scalar and packed arithmetic
(add ... shr, max3/min3, add.f32x2, mov.pack/unpack, mov.pack/unpack.b32x2)."""

from __future__ import annotations

from collections.abc import Iterator

from bulkred_dialect.ops.ptx.base import PtxInstruction, f32, f32x2, f64, i16, i32, i64, mnemonic
from bulkred_dialect.ops.ptx.arith import (
    AddF32x2Op,
    AddOp,
    AndOp,
    ArithType,
    BIT_TYPES,
    DivOp,
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


def differential_cases() -> Iterator[DiffCase]:
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
