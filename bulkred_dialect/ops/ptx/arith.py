"""Scalar and packed arithmetic (PTX ISA 9.7.1 integer, 9.7.3 floating point,
9.7.4 half precision / packed f32x2, 9.7.9.1 mov).

The sm100_packed reduction uses ``add.f32x2`` and the three-input ``max``/``min``;
the scalar forms are what those legalize into on Hopper and what the scalar
``local`` variant and address arithmetic use.
"""

from __future__ import annotations

from typing import ClassVar

from abc import ABC

from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.ptx.base import (
    PtxInstruction,
    RegisterNamer,
    bf16,
    f16,
    f32,
    f32x2,
    f64,
    i16,
    i32,
    i64,
    mnemonic,
    qualifier_error,
)
from bulkred_dialect.ops.target import Requirement


class ArithType(StrEnum):
    """``.type`` of the scalar arithmetic instructions."""

    U16 = "u16"
    S16 = "s16"
    U32 = "u32"
    S32 = "s32"
    U64 = "u64"
    S64 = "s64"
    B16 = "b16"
    B32 = "b32"
    B64 = "b64"
    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"


class RoundingMode(StrEnum):
    """Floating-point rounding modifier ``.rnd``."""

    RN = "rn"
    RZ = "rz"
    RM = "rm"
    RP = "rp"


@irdl_attr_definition
class ArithTypeAttr(EnumAttribute[ArithType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.arith_type"


@irdl_attr_definition
class RoundingModeAttr(EnumAttribute[RoundingMode], SpacedOpaqueSyntaxAttribute):
    name = "ptx.rnd"


IR_TYPE_OF: dict[ArithType, Attribute] = {
    ArithType.U16: i16,
    ArithType.S16: i16,
    ArithType.B16: i16,
    ArithType.U32: i32,
    ArithType.S32: i32,
    ArithType.B32: i32,
    ArithType.U64: i64,
    ArithType.S64: i64,
    ArithType.B64: i64,
    ArithType.F16: f16,
    ArithType.BF16: bf16,
    ArithType.F32: f32,
    ArithType.F64: f64,
}

FLOAT_TYPES = (ArithType.F16, ArithType.BF16, ArithType.F32, ArithType.F64)
INT_TYPES = (ArithType.U16, ArithType.S16, ArithType.U32, ArithType.S32, ArithType.U64, ArithType.S64)
BIT_TYPES = (ArithType.B16, ArithType.B32, ArithType.B64)


def _props(type: ArithType, rnd: RoundingMode | None, ftz: bool) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {"type": ArithTypeAttr(type)}
    if rnd is not None:
        props["rnd"] = RoundingModeAttr(rnd)
    if ftz:
        props["ftz"] = UnitAttr()
    return props


class BinaryArithOp(PtxInstruction, ABC):
    """``op{.rnd}{.ftz}.type d, a, b;`` -- shared by add, sub, mul, min, max."""

    OPCODE: ClassVar[str] = ""
    VALID_TYPES: ClassVar[tuple[ArithType, ...]] = INT_TYPES + FLOAT_TYPES
    ROUNDING_ALLOWED: ClassVar[bool] = True

    T: ClassVar = VarConstraint("T", AnyAttr())

    type = prop_def(ArithTypeAttr)
    rnd = opt_prop_def(RoundingModeAttr)
    ftz = opt_prop_def(UnitAttr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)

    assembly_format = "($rnd^)? (`ftz` $ftz^)? $type $lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(
        self,
        type: ArithType,
        lhs: SSAValue,
        rhs: SSAValue,
        *,
        rnd: RoundingMode | None = None,
        ftz: bool = False,
    ):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[IR_TYPE_OF[type]],
            properties=_props(type, rnd, ftz),
        )

    def verify_(self) -> None:
        t = self.type.data
        if t not in self.VALID_TYPES:
            raise qualifier_error(".type", t, self.VALID_TYPES, f"for '{self.OPCODE}'")
        if self.rnd is not None and (not self.ROUNDING_ALLOWED or t not in FLOAT_TYPES):
            raise VerifyException(
                f"'.rnd' is only valid with a floating-point '.type' of '{self.OPCODE}', got '.type' {t}"
            )
        if self.ftz is not None and t != ArithType.F32:
            raise VerifyException(f"'.ftz' is only valid with '.type' f32, got '.type' {t}")
        want = IR_TYPE_OF[t]
        for field, v in (("a", self.lhs), ("b", self.rhs), ("d", self.result)):
            if v.type != want:
                raise VerifyException(f"'{field}' must be {want} for '.type' {t}, got {v.type}")

    def requirement(self) -> Requirement:
        if self.type.data in (ArithType.F16, ArithType.BF16):
            return Requirement(sm=90, ptx=(7, 8))
        return Requirement(sm=50, ptx=(6, 0))

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            self.OPCODE,
            self.rnd.data if self.rnd is not None else None,
            "ftz" if self.ftz is not None else None,
            self.type.data,
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.lhs), reg(self.rhs)]


@irdl_op_definition
class AddOp(BinaryArithOp):
    """Add: ``add{.rnd}{.ftz}.type d, a, b;``  Example: ``%d = ptx.add rn ftz f32 %a, %b : f32``."""

    name = "ptx.add"
    OPCODE: ClassVar = "add"


@irdl_op_definition
class SubOp(BinaryArithOp):
    """Subtract: ``sub{.rnd}{.ftz}.type d, a, b;``."""

    name = "ptx.sub"
    OPCODE: ClassVar = "sub"


@irdl_op_definition
class MulLoOp(BinaryArithOp):
    """Integer multiply keeping the low half: ``mul.lo.type d, a, b;``."""

    name = "ptx.mul.lo"
    OPCODE: ClassVar = "mul.lo"
    VALID_TYPES: ClassVar = INT_TYPES
    ROUNDING_ALLOWED: ClassVar = False


@irdl_op_definition
class MulOp(BinaryArithOp):
    """Floating-point multiply: ``mul{.rnd}{.ftz}.type d, a, b;``."""

    name = "ptx.mul"
    OPCODE: ClassVar = "mul"
    VALID_TYPES: ClassVar = FLOAT_TYPES


@irdl_op_definition
class MaxOp(BinaryArithOp):
    """Two-input maximum: ``max{.ftz}.type d, a, b;`` (a NaN input yields the other input;
    +0.0 is greater than -0.0)."""

    name = "ptx.max"
    OPCODE: ClassVar = "max"
    ROUNDING_ALLOWED: ClassVar = False


@irdl_op_definition
class MinOp(BinaryArithOp):
    """Two-input minimum: ``min{.ftz}.type d, a, b;`` (a NaN input yields the other input;
    -0.0 is less than +0.0)."""

    name = "ptx.min"
    OPCODE: ClassVar = "min"
    ROUNDING_ALLOWED: ClassVar = False


class BitwiseOp(PtxInstruction, ABC):
    """``op.type d, a, b;`` for and, or, xor, shl, shr."""

    OPCODE: ClassVar[str] = ""
    VALID_TYPES: ClassVar[tuple[ArithType, ...]] = BIT_TYPES

    T: ClassVar = VarConstraint("T", AnyAttr())

    type = prop_def(ArithTypeAttr)
    lhs = operand_def(T)
    rhs = operand_def(Attribute)
    result = result_def(T)

    assembly_format = "$type $lhs `,` $rhs attr-dict `:` type($result) `,` type($rhs)"

    REQUIREMENT: ClassVar = Requirement(sm=50, ptx=(6, 0))

    def __init__(self, type: ArithType, lhs: SSAValue, rhs: SSAValue):
        super().__init__(
            operands=[lhs, rhs], result_types=[IR_TYPE_OF[type]], properties={"type": ArithTypeAttr(type)}
        )

    def verify_(self) -> None:
        t = self.type.data
        if t not in self.VALID_TYPES:
            raise qualifier_error(".type", t, self.VALID_TYPES, f"for '{self.OPCODE}'")
        want = IR_TYPE_OF[t]
        if self.lhs.type != want or self.result.type != want:
            raise VerifyException(f"'a' and 'd' must be {want} for '.type' {t}")

    def ptx_mnemonic(self) -> str:
        return mnemonic(self.OPCODE, self.type.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.lhs), reg(self.rhs)]


class LogicOp(BitwiseOp, ABC):
    """and/or/xor: both inputs have the result's type."""

    def verify_(self) -> None:
        super().verify_()
        if self.rhs.type != self.lhs.type:
            raise VerifyException(f"'b' must be {self.lhs.type}, got {self.rhs.type}")


@irdl_op_definition
class AndOp(LogicOp):
    """Bitwise and: ``and.type d, a, b;``."""

    name = "ptx.and"
    OPCODE: ClassVar = "and"


@irdl_op_definition
class OrOp(LogicOp):
    """Bitwise or: ``or.type d, a, b;``."""

    name = "ptx.or"
    OPCODE: ClassVar = "or"


@irdl_op_definition
class XorOp(LogicOp):
    """Bitwise exclusive or: ``xor.type d, a, b;``."""

    name = "ptx.xor"
    OPCODE: ClassVar = "xor"


@irdl_op_definition
class ShlOp(BitwiseOp):
    """Shift left: ``shl.type d, a, b;`` (``b`` is a u32 shift amount)."""

    name = "ptx.shl"
    OPCODE: ClassVar = "shl"


@irdl_op_definition
class ShrOp(BitwiseOp):
    """Shift right: ``shr.type d, a, b;`` (arithmetic for s-types, logical otherwise)."""

    name = "ptx.shr"
    OPCODE: ClassVar = "shr"
    VALID_TYPES: ClassVar = BIT_TYPES + INT_TYPES


class ThreeInputMinMaxOp(PtxInstruction, ABC):
    """``max{.ftz}{.NaN}.f32 d, a, b, c;`` -- the sm_100 three-input form.

    PTX ISA 8.8 / sm_100 (ptxas: "max.f32 with 3 input operands requires PTX ISA
    .version 8.8 or later").
    """

    OPCODE: ClassVar[str] = ""
    REQUIREMENT: ClassVar = Requirement(sm=100, ptx=(8, 8))

    ftz = opt_prop_def(UnitAttr)
    nan = opt_prop_def(UnitAttr, prop_name="NaN")
    a = operand_def(f32)
    b = operand_def(f32)
    c = operand_def(f32)
    result = result_def(f32)

    assembly_format = "(`ftz` $ftz^)? (`NaN` $NaN^)? $a `,` $b `,` $c attr-dict `:` type($result)"

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, *, ftz: bool = False, nan: bool = False):
        props: dict[str, Attribute] = {}
        if ftz:
            props["ftz"] = UnitAttr()
        if nan:
            props["NaN"] = UnitAttr()
        super().__init__(operands=[a, b, c], result_types=[f32], properties=props)

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            self.OPCODE,
            "ftz" if self.ftz is not None else None,
            "NaN" if self.nan is not None else None,
            "f32",
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.a), reg(self.b), reg(self.c)]


@irdl_op_definition
class Max3Op(ThreeInputMinMaxOp):
    """Three-input maximum: ``max.f32 d, a, b, c;``  Example: ``%m = ptx.max3 %a, %b, %c : f32``."""

    name = "ptx.max3"
    OPCODE: ClassVar = "max"


@irdl_op_definition
class Min3Op(ThreeInputMinMaxOp):
    """Three-input minimum: ``min.f32 d, a, b, c;``  Example: ``%m = ptx.min3 %a, %b, %c : f32``."""

    name = "ptx.min3"
    OPCODE: ClassVar = "min"


@irdl_op_definition
class AddF32x2Op(PtxInstruction):
    """Packed add of two f32 lanes: ``add{.rnd}{.ftz}.f32x2 d, a, b;`` (d, a, b are .b64).

    Example: ``%d = ptx.add.f32x2 rn ftz %a, %b : vector<2xf32>``.
    Needs sm_100 and PTX ISA 8.6 (PTX ISA 9.7.4.1).
    """

    name = "ptx.add.f32x2"
    SPEC_SECTION: ClassVar = "9.7.4.1"
    REQUIREMENT: ClassVar = Requirement(sm=100, ptx=(8, 6))

    rnd = opt_prop_def(RoundingModeAttr)
    ftz = opt_prop_def(UnitAttr)
    lhs = operand_def(f32x2)
    rhs = operand_def(f32x2)
    result = result_def(f32x2)

    assembly_format = "($rnd^)? (`ftz` $ftz^)? $lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, *, rnd: RoundingMode | None = RoundingMode.RN, ftz: bool = False
    ):
        props: dict[str, Attribute] = {}
        if rnd is not None:
            props["rnd"] = RoundingModeAttr(rnd)
        if ftz:
            props["ftz"] = UnitAttr()
        super().__init__(operands=[lhs, rhs], result_types=[f32x2], properties=props)

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            "add",
            self.rnd.data if self.rnd is not None else None,
            "ftz" if self.ftz is not None else None,
            "f32x2",
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.lhs), reg(self.rhs)]


@irdl_op_definition
class PackF32x2Op(PtxInstruction):
    """Pack two f32 registers into one .b64: ``mov.b64 d, {lo, hi};``.

    Example: ``%p = ptx.mov.pack %lo, %hi : vector<2xf32>``.
    """

    name = "ptx.mov.pack"
    REQUIREMENT: ClassVar = Requirement(sm=50, ptx=(6, 0))

    lo = operand_def(f32)
    hi = operand_def(f32)
    result = result_def(f32x2)

    assembly_format = "$lo `,` $hi attr-dict `:` type($result)"

    def __init__(self, lo: SSAValue, hi: SSAValue):
        super().__init__(operands=[lo, hi], result_types=[f32x2])

    def ptx_mnemonic(self) -> str:
        return "mov.b64"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), f"{{{reg(self.lo)}, {reg(self.hi)}}}"]


@irdl_op_definition
class UnpackF32x2Op(PtxInstruction):
    """Split a .b64 into its two f32 lanes: ``mov.b64 {lo, hi}, s;``.

    Example: ``%lo, %hi = ptx.mov.unpack %p : vector<2xf32>``.
    """

    name = "ptx.mov.unpack"
    REQUIREMENT: ClassVar = Requirement(sm=50, ptx=(6, 0))

    src = operand_def(f32x2)
    lo = result_def(f32)
    hi = result_def(f32)

    assembly_format = "$src attr-dict `:` type($src)"

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src], result_types=[f32, f32])

    def ptx_mnemonic(self) -> str:
        return "mov.b64"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [f"{{{reg(self.lo)}, {reg(self.hi)}}}", reg(self.src)]


ARITH_OPS = [
    AddOp,
    SubOp,
    MulLoOp,
    MulOp,
    MaxOp,
    MinOp,
    AndOp,
    OrOp,
    XorOp,
    ShlOp,
    ShrOp,
    Max3Op,
    Min3Op,
    AddF32x2Op,
    PackF32x2Op,
    UnpackF32x2Op,
]
ARITH_ATTRS = [ArithTypeAttr, RoundingModeAttr]
