"""Scalar and packed arithmetic (PTX ISA 9.7.1 integer, 9.7.3 floating point,
9.7.4 half precision / packed f32x2, 9.7.9.1 mov).

The sm100_packed reduction uses ``add.f32x2`` and the three-input ``max``/``min``;
the scalar forms are what those legalize into on Hopper and what the scalar
``local`` variant and address arithmetic use. The region "Math (fused reductions)" holds
``abs``, ``neg``, ``sqrt``, ``rcp``, ``ex2``, ``lg2``, ``fma``, the floating-point ``div``
(``ptx.div.float``) and ``and/or/xor/not.pred``, each verified by its PTX ISA table (``FORMS``).
"""

from __future__ import annotations

from typing import ClassVar

from abc import ABC

from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    AnyAttr,
    VarConstraint,
    irdl_attr_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.lexer import Span
from typing_extensions import Self
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.ptx.base import (
    PtxInstruction,
    RegisterNamer,
    bf16,
    f16,
    f32,
    f32x2,
    f64,
    i1,
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

# `.ftz` exists for the f32 forms (PTX ISA 9.7.3) and the f16 forms (9.7.4); bf16 and f64
# have no subnormal flushing.
FTZ_TYPES = (ArithType.F16, ArithType.F32)

# `.rnd` values per floating-point `.type`: the half-precision forms take only `.rn` (9.7.4).
ROUNDINGS_OF: dict[ArithType, tuple[RoundingMode, ...]] = {
    ArithType.F16: (RoundingMode.RN,),
    ArithType.BF16: (RoundingMode.RN,),
    ArithType.F32: tuple(RoundingMode),
    ArithType.F64: tuple(RoundingMode),
}


def _props(type: ArithType, rnd: RoundingMode | None, ftz: bool) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {"type": ArithTypeAttr(type)}
    if rnd is not None:
        props["rnd"] = RoundingModeAttr(rnd)
    if ftz:
        props["ftz"] = UnitAttr()
    return props



def _parse_words(parser: Parser) -> list[tuple[str, Span]]:
    """The bare qualifier words before the first operand (``rn ftz f32``)."""
    words = []
    while True:
        start = parser.pos
        w = parser.parse_optional_identifier()
        if w is None:
            return words
        words.append((w, Span(start, parser.pos, parser.lexer.input)))


def _parse_float_qualifiers(
    parser: Parser, words: list[tuple[str, Span]], allow_type: bool, flags: tuple[str, ...] = ("ftz",)
) -> tuple[dict[str, Attribute], ArithType | None]:
    """Split ``rn ftz f32`` into rnd and flag properties (``flags``: ftz, and NaN for
    min/max) and the type (when allowed)."""
    props: dict[str, Attribute] = {}
    spelled: dict[str, str] = {}
    type_: ArithType | None = None
    for w, span in words:
        if w in [str(r) for r in RoundingMode]:
            field, value = "rnd", RoundingModeAttr(RoundingMode(w))
        elif w in flags:
            field, value = w, UnitAttr()
        elif allow_type and w in [str(t) for t in ArithType]:
            type_ = ArithType(w)
            field, value = "type", ArithTypeAttr(type_)
        else:
            expected = "rn, rz, rm, rp, " + ", ".join(flags) + (", or a type (" + ", ".join(str(t) for t in ArithType) + ")" if allow_type else "")
            parser.raise_error(f"unexpected qualifier '{w}' (expected {expected})", span.start, span.end)
        if field in props:
            parser.raise_error(f"'.{field}' given twice ({spelled[field]}, then {w})", span.start, span.end)
        props[field] = value
        spelled[field] = w
    return props, type_


def _print_float_qualifiers(printer: Printer, op: IRDLOperation, type_: ArithType | None) -> None:
    rnd = op.properties.get("rnd")
    if isinstance(rnd, RoundingModeAttr):
        printer.print_string(f" {rnd.data}")
    if "ftz" in op.properties:
        printer.print_string(" ftz")
    if "NaN" in op.properties:
        printer.print_string(" NaN")
    if type_ is not None:
        printer.print_string(f" {type_}")


def _parse_binary(cls, parser: Parser, allow_type: bool, flags: tuple[str, ...] = ("ftz",)):
    words = _parse_words(parser)
    props, type_ = _parse_float_qualifiers(parser, words, allow_type, flags)
    if allow_type and type_ is None:
        parser.raise_error("expected a '.type' qualifier (" + ", ".join(str(t) for t in ArithType) + ")")
    lhs = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    rhs = parser.parse_unresolved_operand()
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    t = parser.parse_type()
    op = cls.create(
        operands=[parser.resolve_operand(lhs, t), parser.resolve_operand(rhs, t)],
        result_types=[t],
        properties=props,
        attributes=attrs,
    )
    return op


def _print_binary(op, printer: Printer, type_: ArithType | None) -> None:
    _print_float_qualifiers(printer, op, type_)
    printer.print_string(" ")
    printer.print_operand(op.lhs)
    printer.print_string(", ")
    printer.print_operand(op.rhs)
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.result.type)


# The two-input ops whose floating-point forms take a `.rnd` (PTX ISA 9.7.3, 9.7.4); min,
# max and the integer mul.lo have none.
ROUNDING_OPCODES = ("add", "sub", "mul")


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

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        return _parse_binary(cls, parser, allow_type=True)

    def print(self, printer: Printer) -> None:
        _print_binary(self, printer, self.type.data)

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
        if self.rnd is not None and not self.ROUNDING_ALLOWED:
            raise VerifyException(
                f"'.rnd' is not valid for '{self.OPCODE}' (valid for: {', '.join(ROUNDING_OPCODES)})"
            )
        if self.rnd is not None and t not in FLOAT_TYPES:
            raise VerifyException(
                f"'.rnd' is only valid with a floating-point '.type' for '{self.OPCODE}' "
                f"({', '.join(FLOAT_TYPES)}), got '.type' {t}"
            )
        if self.rnd is not None and self.rnd.data not in ROUNDINGS_OF[t]:
            raise qualifier_error(
                ".rnd", self.rnd.data, ROUNDINGS_OF[t], f"with '.type' {t} for '{self.OPCODE}'"
            )
        if self.ftz is not None and t not in FTZ_TYPES:
            raise VerifyException(
                f"'.ftz' is only valid with '.type' f16 or f32 for '{self.OPCODE}', got '.type' {t}"
            )
        want = IR_TYPE_OF[t]
        for field, v in (("operand 'a'", self.lhs), ("operand 'b'", self.rhs), ("result 'd'", self.result)):
            if v.type != want:
                raise VerifyException(f"{field} must be {want} for '.type' {t}, got {v.type}")

    def requirement(self) -> Requirement:
        # PTX ISA 9.7.4 target notes: add/sub/mul .f16 need sm_53, .bf16 sm_90 (PTX ISA
        # 7.8); min/max .f16 and .bf16 need sm_80 (PTX ISA 7.0). ptxas agrees
        # (tests/test_differential.py, sm_80 to sm_100a).
        t = self.type.data
        if t == ArithType.BF16 and self.OPCODE in ROUNDING_OPCODES:
            return Requirement(sm=90, ptx=(7, 8))
        if t in (ArithType.F16, ArithType.BF16) and self.OPCODE in ("min", "max"):
            return Requirement(sm=80, ptx=(7, 0))
        if t == ArithType.F16:
            return Requirement(sm=53, ptx=(6, 0))
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


@op_definition
class AddOp(BinaryArithOp):
    """Add: ``add{.rnd}{.ftz}.type d, a, b;``  Example: ``%d = ptx.add rn ftz f32 %a, %b : f32``."""

    name = "ptx.add"
    OPCODE: ClassVar = "add"


@op_definition
class SubOp(BinaryArithOp):
    """Subtract: ``sub{.rnd}{.ftz}.type d, a, b;``."""

    name = "ptx.sub"
    OPCODE: ClassVar = "sub"


@op_definition
class MulLoOp(BinaryArithOp):
    """Integer multiply keeping the low half: ``mul.lo.type d, a, b;``."""

    name = "ptx.mul.lo"
    OPCODE: ClassVar = "mul.lo"
    VALID_TYPES: ClassVar = INT_TYPES
    ROUNDING_ALLOWED: ClassVar = False


@op_definition
class MulOp(BinaryArithOp):
    """Floating-point multiply: ``mul{.rnd}{.ftz}.type d, a, b;``."""

    name = "ptx.mul"
    OPCODE: ClassVar = "mul"
    VALID_TYPES: ClassVar = FLOAT_TYPES


# `.NaN` exists for the f32 forms (PTX ISA 9.7.3, sm_80) and the f16 / bf16 ones (9.7.4,
# sm_80); max.f64 and the integer forms have none.
NAN_TYPES = (ArithType.F16, ArithType.BF16, ArithType.F32)


class MinMaxOp(BinaryArithOp, ABC):
    """``max{.ftz}{.NaN}.type d, a, b;`` / ``min...``: without ``.NaN`` a NaN input yields
    the other input (both NaN: the canonical NaN); with ``.NaN`` any NaN input gives the
    canonical NaN. Spec: PTX ISA 9.7.3.10/11 (f32, f64), 9.7.4.9/10 (f16, bf16), 9.7.1 (integers)."""

    ROUNDING_ALLOWED: ClassVar = False

    nan = opt_prop_def(UnitAttr, prop_name="NaN")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        return _parse_binary(cls, parser, allow_type=True, flags=("ftz", "NaN"))

    def __init__(self, type: ArithType, lhs: SSAValue, rhs: SSAValue, *, ftz: bool = False, nan: bool = False, rnd: RoundingMode | None = None):
        super().__init__(type, lhs, rhs, rnd=rnd, ftz=ftz)
        if nan:
            self.properties["NaN"] = UnitAttr()

    def verify_(self) -> None:
        super().verify_()
        t = self.type.data
        if self.nan is not None and t not in NAN_TYPES:
            raise VerifyException(
                f"'.NaN' is only valid with '.type' {', '.join(NAN_TYPES)} for '{self.OPCODE}', got '.type' {t}"
            )

    def requirement(self) -> Requirement:
        # PTX ISA 9.7.3.10/11: max/min .NaN (f32) needs sm_80 and PTX ISA 7.0
        if self.nan is not None:
            return super().requirement().combine(Requirement(sm=80, ptx=(7, 0)))
        return super().requirement()

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            self.OPCODE,
            self.rnd.data if self.rnd is not None else None,  # invalid, but printed as written
            "ftz" if self.ftz is not None else None,
            "NaN" if self.nan is not None else None,
            self.type.data,
        )


@op_definition
class MaxOp(MinMaxOp):
    """Two-input maximum: ``max{.ftz}{.NaN}.type d, a, b;`` (a NaN input yields the other
    input, or with ``.NaN`` the canonical NaN; +0.0 is greater than -0.0).
    Example: ``%m = ptx.max NaN f32 %a, %b : f32``."""

    name = "ptx.max"
    OPCODE: ClassVar = "max"


@op_definition
class MinOp(MinMaxOp):
    """Two-input minimum: ``min{.ftz}{.NaN}.type d, a, b;`` (a NaN input yields the other
    input, or with ``.NaN`` the canonical NaN; -0.0 is less than +0.0)."""

    name = "ptx.min"
    OPCODE: ClassVar = "min"


@op_definition
class DivOp(BinaryArithOp):
    """Integer divide, rounding toward zero: ``div.type d, a, b;`` (division by zero gives
    an unspecified value, no trap). The floating-point ``div`` forms, which need
    ``.approx``/``.full``/``.rnd``, are not modelled. Example: ``%q = ptx.div u64 %a, %b : i64``.

    Spec: PTX ISA, Integer Arithmetic Instructions: div."""

    name = "ptx.div"
    OPCODE: ClassVar = "div"
    VALID_TYPES: ClassVar = INT_TYPES
    ROUNDING_ALLOWED: ClassVar = False


@op_definition
class RemOp(BinaryArithOp):
    """Integer remainder, with the sign of ``a`` for the signed types: ``rem.type d, a, b;``.
    Example: ``%r = ptx.rem u64 %a, %b : i64``.

    Spec: PTX ISA, Integer Arithmetic Instructions: rem."""

    name = "ptx.rem"
    OPCODE: ClassVar = "rem"
    VALID_TYPES: ClassVar = INT_TYPES
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
        for field, v in (("operand 'a'", self.lhs), ("result 'd'", self.result)):
            if v.type != want:
                raise VerifyException(f"{field} must be {want} for '.type' {t}, got {v.type}")

    def ptx_mnemonic(self) -> str:
        return mnemonic(self.OPCODE, self.type.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.lhs), reg(self.rhs)]


class LogicOp(BitwiseOp, ABC):
    """and/or/xor: both inputs have the result's type."""

    def verify_(self) -> None:
        super().verify_()
        if self.rhs.type != self.lhs.type:
            raise VerifyException(
                f"operand 'b' must be {self.lhs.type} for '.type' {self.type.data}, got {self.rhs.type}"
            )


@op_definition
class AndOp(LogicOp):
    """Bitwise and: ``and.type d, a, b;``."""

    name = "ptx.and"
    OPCODE: ClassVar = "and"


@op_definition
class OrOp(LogicOp):
    """Bitwise or: ``or.type d, a, b;``."""

    name = "ptx.or"
    OPCODE: ClassVar = "or"


@op_definition
class XorOp(LogicOp):
    """Bitwise exclusive or: ``xor.type d, a, b;``."""

    name = "ptx.xor"
    OPCODE: ClassVar = "xor"


class ShiftOp(BitwiseOp, ABC):
    """shl/shr: the shift amount ``b`` is a .u32 register whatever ``.type`` is."""

    def verify_(self) -> None:
        super().verify_()
        if self.rhs.type != i32:
            raise VerifyException(f"operand 'b' must be i32 (a u32 shift amount), got {self.rhs.type}")


@op_definition
class ShlOp(ShiftOp):
    """Shift left: ``shl.type d, a, b;`` (``b`` is a u32 shift amount)."""

    name = "ptx.shl"
    OPCODE: ClassVar = "shl"


@op_definition
class ShrOp(ShiftOp):
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


@op_definition
class Max3Op(ThreeInputMinMaxOp):
    """Three-input maximum: ``max.f32 d, a, b, c;``  Example: ``%m = ptx.max3 %a, %b, %c : f32``."""

    name = "ptx.max3"
    OPCODE: ClassVar = "max"


@op_definition
class Min3Op(ThreeInputMinMaxOp):
    """Three-input minimum: ``min.f32 d, a, b, c;``  Example: ``%m = ptx.min3 %a, %b, %c : f32``."""

    name = "ptx.min3"
    OPCODE: ClassVar = "min"


@op_definition
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

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        return _parse_binary(cls, parser, allow_type=False)

    def print(self, printer: Printer) -> None:
        _print_binary(self, printer, None)

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


@op_definition
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


@op_definition
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


# The IR types of a .b64 register that mov.pack.b32x2 / mov.unpack.b32x2 split into two .b32 halves.
B64_VALUE_TYPES: tuple[Attribute, ...] = (i64, f64)


@op_definition
class PackB32x2Op(PtxInstruction):
    """Join two .b32 registers into one .b64 (``lo`` in bits 0-31): ``mov.b64 d, {lo, hi};``.
    ``d`` is ``i64`` or ``f64``; the 64-bit warp steps shuffle the halves with
    ``shfl.sync`` (32 bits) and join them again.

    Example: ``%d = ptx.mov.pack.b32x2 %lo, %hi : f64``. Spec: PTX ISA 9.7.9.1 (mov, vector form).
    """

    name = "ptx.mov.pack.b32x2"
    REQUIREMENT: ClassVar = Requirement(sm=50, ptx=(6, 0))

    lo = operand_def(i32)
    hi = operand_def(i32)
    result = result_def(AnyAttr())

    assembly_format = "$lo `,` $hi attr-dict `:` type($result)"

    def __init__(self, lo: SSAValue, hi: SSAValue, result_type: Attribute):
        super().__init__(operands=[lo, hi], result_types=[result_type])

    def verify_(self) -> None:
        if self.result.type not in B64_VALUE_TYPES:
            raise VerifyException(f"result 'd' must be i64 or f64 (a .b64 register), got {self.result.type}")

    def ptx_mnemonic(self) -> str:
        return "mov.b64"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), f"{{{reg(self.lo)}, {reg(self.hi)}}}"]


@op_definition
class UnpackB32x2Op(PtxInstruction):
    """Split a .b64 register (``i64`` or ``f64``) into its two .b32 halves (``lo``: bits
    0-31): ``mov.b64 {lo, hi}, s;``.

    Example: ``%lo, %hi = ptx.mov.unpack.b32x2 %s : f64``. Spec: PTX ISA 9.7.9.1 (mov, vector form).
    """

    name = "ptx.mov.unpack.b32x2"
    REQUIREMENT: ClassVar = Requirement(sm=50, ptx=(6, 0))

    src = operand_def(AnyAttr())
    lo = result_def(i32)
    hi = result_def(i32)

    assembly_format = "$src attr-dict `:` type($src)"

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src], result_types=[i32, i32])

    def verify_(self) -> None:
        if self.src.type not in B64_VALUE_TYPES:
            raise VerifyException(f"operand 's' must be i64 or f64 (a .b64 register), got {self.src.type}")

    def ptx_mnemonic(self) -> str:
        return "mov.b64"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [f"{{{reg(self.lo)}, {reg(self.hi)}}}", reg(self.src)]



# region Math (fused reductions): abs, neg, sqrt, rcp, ex2, lg2, fma, div (floating point),
# and/or/xor/not .pred
#
# Each op's verifier is its PTX ISA table, written as ``FORMS``: one row per valid
# (``.type``, rounding) pair -- rounding is None (no word), "approx", "full" or a
# ``.rnd`` value -- giving whether ``.ftz`` is refused, optional or required there,
# and the lowest SM / PTX ISA version of the form. tests/ptx_cases/arith.py checks every
# combination against ptxas.

# `.ftz` of a form: not valid, optional, required.
FTZ_NO, FTZ_OPT, FTZ_REQ = "no", "optional", "required"

_BASE = Requirement(sm=50, ptx=(6, 0))
_RND = tuple(str(r) for r in RoundingMode)  # rn, rz, rm, rp
# The words a math op's qualifiers may be spelled with, besides the type.
_MATH_FLAGS = ("approx", "full", "ftz")

MathForms = dict[tuple[ArithType, str | None], tuple[str, Requirement]]


def _forms(types: tuple[ArithType, ...], roundings: tuple[str | None, ...], ftz: str, req: Requirement = _BASE) -> MathForms:
    return {(t, r): (ftz, req) for t in types for r in roundings}


class MathOp(PtxInstruction, ABC):
    """``op{.rounding}{.ftz}.type d, a{, b{, c}};`` -- the math instructions of fused
    reductions. ``rounding`` is ``.approx``, ``.full`` (div) or ``.rnd``, as ``FORMS``
    allows for the ``.type``. Custom syntax: ``%d = ptx.sqrt rn ftz f32 %a : f32``."""

    OPCODE: ClassVar[str] = ""
    FORMS: ClassVar[MathForms] = {}

    type = prop_def(ArithTypeAttr)
    rnd = opt_prop_def(RoundingModeAttr)
    approx = opt_prop_def(UnitAttr)
    full = opt_prop_def(UnitAttr)
    ftz = opt_prop_def(UnitAttr)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        words = _parse_words(parser)
        props, type_ = _parse_float_qualifiers(parser, words, True, _MATH_FLAGS)
        if type_ is None:
            parser.raise_error("expected a '.type' qualifier (" + ", ".join(str(t) for t in ArithType) + ")")
        n = len(cls.get_irdl_definition().operands)
        operands = [parser.parse_unresolved_operand()]
        for _ in range(n - 1):
            parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.create(
            operands=[parser.resolve_operand(o, t) for o in operands],
            result_types=[t],
            properties=props,
            attributes=attrs,
        )

    def print(self, printer: Printer) -> None:
        words = [self.rounding(), "ftz" if self.ftz is not None else None, str(self.type.data)]
        printer.print_string(" " + " ".join(w for w in words if w is not None) + " ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.results[0].type)

    def __init__(
        self,
        type: ArithType,
        *operands: SSAValue,
        rnd: RoundingMode | None = None,
        approx: bool = False,
        full: bool = False,
        ftz: bool = False,
    ):
        props = _props(type, rnd, ftz)
        if approx:
            props["approx"] = UnitAttr()
        if full:
            props["full"] = UnitAttr()
        super().__init__(operands=list(operands), result_types=[IR_TYPE_OF[type]], properties=props)

    def rounding(self) -> str | None:
        """The rounding word as written: approx, full, rn/rz/rm/rp, or None."""
        if self.approx is not None:
            return "approx"
        if self.full is not None:
            return "full"
        return str(self.rnd.data) if self.rnd is not None else None

    def verify_(self) -> None:
        t = self.type.data
        types = tuple(dict.fromkeys(ft for ft, _ in self.FORMS))
        if t not in types:
            raise qualifier_error(".type", t, types, f"for '{self.OPCODE}'")
        given = [w for w in ("approx" if self.approx is not None else None, "full" if self.full is not None else None,
                             str(self.rnd.data) if self.rnd is not None else None) if w is not None]
        if len(given) > 1:
            raise VerifyException(
                f"'{self.OPCODE}' takes one rounding qualifier, got {', '.join('.' + w for w in given)}"
            )
        r = self.rounding()
        allowed = [fr for ft, fr in self.FORMS if ft == t]
        if (t, r) not in self.FORMS:
            spelled = ", ".join("none" if a is None else "." + a for a in allowed)
            if r is None:
                raise VerifyException(f"'{self.OPCODE}' with '.type' {t} needs a rounding qualifier (valid: {spelled})")
            raise VerifyException(f"'.{r}' is not valid with '.type' {t} for '{self.OPCODE}' (valid: {spelled})")
        ftz, _ = self.FORMS[(t, r)]
        form = mnemonic(self.OPCODE, r, t)
        if ftz == FTZ_NO and self.ftz is not None:
            raise VerifyException(f"'.ftz' is not valid for '{form}'")
        if ftz == FTZ_REQ and self.ftz is None:
            raise VerifyException(f"'.ftz' is required for '{form}'")
        want = IR_TYPE_OF[t]
        names = ("a", "b", "c")
        for i, v in enumerate(self.operands):
            if v.type != want:
                raise VerifyException(f"operand '{names[i]}' must be {want} for '.type' {t}, got {v.type}")
        if self.results[0].type != want:
            raise VerifyException(f"result 'd' must be {want} for '.type' {t}, got {self.results[0].type}")

    def requirement(self) -> Requirement:
        form = self.FORMS.get((self.type.data, self.rounding()))
        return form[1] if form is not None else _BASE

    def ptx_mnemonic(self) -> str:
        return mnemonic(self.OPCODE, self.rounding(), "ftz" if self.ftz is not None else None, self.type.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.results[0]), *(reg(v) for v in self.operands)]


class UnaryMathOp(MathOp, ABC):
    T: ClassVar = VarConstraint("T", AnyAttr())

    src = operand_def(T)
    result = result_def(T)


_F16 = (ArithType.F16,)
_BF16 = (ArithType.BF16,)
_F32 = (ArithType.F32,)
_F64 = (ArithType.F64,)
_S = (ArithType.S16, ArithType.S32, ArithType.S64)

# abs and neg share one table (PTX ISA 9.7.1 integer: .s16/.s32/.s64; 9.7.3: {.ftz}.f32,
# .f64; 9.7.4 half precision: {.ftz}.f16 (sm_53), .bf16 (sm_80, PTX ISA 7.0), no .ftz).
_ABS_NEG_FORMS: MathForms = {
    **_forms(_S, (None,), FTZ_NO),
    **_forms(_F32, (None,), FTZ_OPT),
    **_forms(_F64, (None,), FTZ_NO),
    **_forms(_F16, (None,), FTZ_OPT, Requirement(sm=53, ptx=(6, 5))),
    **_forms(_BF16, (None,), FTZ_NO, Requirement(sm=80, ptx=(7, 0))),
}


@op_definition
class AbsOp(UnaryMathOp):
    """Absolute value: ``abs.type d, a;`` (``.s16/.s32/.s64``, wrapping: the most negative
    value stays itself), ``abs{.ftz}.f32``, ``abs.f64``, ``abs{.ftz}.f16``, ``abs.bf16``
    (clears the sign bit; a NaN input gives an unspecified NaN).
    Example: ``%d = ptx.abs ftz f32 %a : f32``.

    Spec: PTX ISA 9.7.1, Integer Arithmetic Instructions: abs; 9.7.3, Floating Point
    Instructions: abs; 9.7.4, Half Precision Floating Point Instructions: abs."""

    name = "ptx.abs"
    OPCODE: ClassVar = "abs"
    FORMS: ClassVar = _ABS_NEG_FORMS


@op_definition
class NegOp(UnaryMathOp):
    """Negate: ``neg.type d, a;`` (``.s16/.s32/.s64``, wrapping), ``neg{.ftz}.f32``,
    ``neg.f64``, ``neg{.ftz}.f16``, ``neg.bf16`` (flips the sign bit; a NaN input gives an
    unspecified NaN). Example: ``%d = ptx.neg f64 %a : f64``.

    Spec: PTX ISA 9.7.1, Integer Arithmetic Instructions: neg; 9.7.3, Floating Point
    Instructions: neg; 9.7.4, Half Precision Floating Point Instructions: neg."""

    name = "ptx.neg"
    OPCODE: ClassVar = "neg"
    FORMS: ClassVar = _ABS_NEG_FORMS


@op_definition
class SqrtOp(UnaryMathOp):
    """Square root: ``sqrt.approx{.ftz}.f32``, ``sqrt.rnd{.ftz}.f32``, ``sqrt.rnd.f64``
    (``.rnd`` = ``.rn/.rz/.rm/.rp``, IEEE 754 rounding); a rounding qualifier is required.
    Example: ``%d = ptx.sqrt rn f32 %a : f32``.

    Spec: PTX ISA 9.7.3, Floating Point Instructions: sqrt."""

    name = "ptx.sqrt"
    OPCODE: ClassVar = "sqrt"
    FORMS: ClassVar = {
        **_forms(_F32, ("approx", *_RND), FTZ_OPT),
        **_forms(_F64, _RND, FTZ_NO),
    }


@op_definition
class RcpOp(UnaryMathOp):
    """Reciprocal: ``rcp.approx{.ftz}.f32``, ``rcp.rnd{.ftz}.f32``, ``rcp.rnd{.ftz}.f64``, and
    ``rcp.approx.ftz.f64`` (``.ftz`` required); a rounding qualifier is required.
    Example: ``%d = ptx.rcp rn f64 %a : f64``.

    Spec: PTX ISA 9.7.3, Floating Point Instructions: rcp, and rcp.approx.ftz.f64."""

    name = "ptx.rcp"
    OPCODE: ClassVar = "rcp"
    # ptxas (nvJitLink 13.5) takes `.ftz` with rcp.rnd.f64 too, on every target from
    # sm_80, so the table takes it (tests/ptx_cases/arith.py); the interpreter does not model it.
    FORMS: ClassVar = {
        **_forms(_F32, ("approx", *_RND), FTZ_OPT),
        **_forms(_F64, _RND, FTZ_OPT),
        **_forms(_F64, ("approx",), FTZ_REQ),
    }


@op_definition
class Ex2Op(UnaryMathOp):
    """Base-2 exponential, approximate: ``ex2.approx{.ftz}.f32``, ``ex2.approx.f16``
    (sm_75, PTX ISA 7.0), ``ex2.approx.ftz.bf16`` (``.ftz`` required; sm_90, PTX ISA 7.8).
    Example: ``%d = ptx.ex2 approx f32 %a : f32``.

    Spec: PTX ISA 9.7.3, Floating Point Instructions: ex2; 9.7.4, Half Precision Floating
    Point Instructions: ex2."""

    name = "ptx.ex2"
    OPCODE: ClassVar = "ex2"
    FORMS: ClassVar = {
        **_forms(_F32, ("approx",), FTZ_OPT),
        **_forms(_F16, ("approx",), FTZ_NO, Requirement(sm=75, ptx=(7, 0))),
        **_forms(_BF16, ("approx",), FTZ_REQ, Requirement(sm=90, ptx=(7, 8))),
    }


@op_definition
class Lg2Op(UnaryMathOp):
    """Base-2 logarithm, approximate: ``lg2.approx{.ftz}.f32 d, a;``.
    Example: ``%d = ptx.lg2 approx ftz f32 %a : f32``.

    Spec: PTX ISA 9.7.3, Floating Point Instructions: lg2."""

    name = "ptx.lg2"
    OPCODE: ClassVar = "lg2"
    FORMS: ClassVar = _forms(_F32, ("approx",), FTZ_OPT)


@op_definition
class FloatDivOp(MathOp):
    """Floating-point divide: ``div.approx{.ftz}.f32``, ``div.full{.ftz}.f32``,
    ``div.rnd{.ftz}.f32``, ``div.rnd.f64`` (``.rnd`` = ``.rn/.rz/.rm/.rp``); a rounding
    qualifier is required. ``ptx.div`` is the integer form (another table).
    Example: ``%q = ptx.div.float rn f32 %a, %b : f32`` is ``div.rn.f32 %f3, %f1, %f2;``.

    Spec: PTX ISA 9.7.3, Floating Point Instructions: div."""

    name = "ptx.div.float"
    OPCODE: ClassVar = "div"
    FORMS: ClassVar = {
        **_forms(_F32, ("approx", "full", *_RND), FTZ_OPT),
        **_forms(_F64, _RND, FTZ_NO),
    }

    T: ClassVar = VarConstraint("T", AnyAttr())

    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)


@op_definition
class FmaOp(MathOp):
    """Fused multiply-add, one rounding: ``fma.rnd{.ftz}.f32``, ``fma.rnd.f64``,
    ``fma.rn{.ftz}.f16`` (sm_53), ``fma.rnd.bf16`` (sm_80, PTX ISA 7.0); ``.rnd`` is
    required (``.rn/.rz/.rm/.rp``; only ``.rn`` for f16). ``.sat``/``.relu`` are not
    modelled. Example: ``%d = ptx.fma rn f32 %a, %b, %c : f32`` is ``a * b + c``.

    Spec: PTX ISA 9.7.3, Floating Point Instructions: fma; 9.7.4, Half Precision Floating
    Point Instructions: fma."""

    name = "ptx.fma"
    OPCODE: ClassVar = "fma"
    FORMS: ClassVar = {
        **_forms(_F32, _RND, FTZ_OPT),
        **_forms(_F64, _RND, FTZ_NO),
        **_forms(_F16, ("rn",), FTZ_OPT, Requirement(sm=53, ptx=(6, 0))),
        # ptxas (nvJitLink 13.5) takes .rz/.rm/.rp with bf16 (not with f16) from sm_80 on,
        # so the table does; the interpreter models .rn only.
        **_forms(_BF16, _RND, FTZ_NO, Requirement(sm=80, ptx=(7, 0))),
    }

    T: ClassVar = VarConstraint("T", AnyAttr())

    a = operand_def(T)
    b = operand_def(T)
    c = operand_def(T)
    result = result_def(T)


class PredLogicOp(PtxInstruction, ABC):
    """``op.pred d, a{, b};`` on predicate registers (``i1``): combines ``setp`` results."""

    OPCODE: ClassVar[str] = ""
    REQUIREMENT: ClassVar = _BASE

    def ptx_mnemonic(self) -> str:
        return mnemonic(self.OPCODE, "pred")

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.results[0]), *(reg(v) for v in self.operands)]


class BinaryPredOp(PredLogicOp, ABC):
    lhs = operand_def(i1)
    rhs = operand_def(i1)
    result = result_def(i1)

    assembly_format = "$lhs `,` $rhs attr-dict"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[i1])


@op_definition
class AndPredOp(BinaryPredOp):
    """Predicate and: ``and.pred d, a, b;``. Example: ``%p = ptx.and.pred %a, %b``.

    Spec: PTX ISA 9.7.8, Logic and Shift Instructions: and (``.type`` = ``.pred``)."""

    name = "ptx.and.pred"
    OPCODE: ClassVar = "and"


@op_definition
class OrPredOp(BinaryPredOp):
    """Predicate or: ``or.pred d, a, b;``. Example: ``%p = ptx.or.pred %a, %b``.

    Spec: PTX ISA 9.7.8, Logic and Shift Instructions: or (``.type`` = ``.pred``)."""

    name = "ptx.or.pred"
    OPCODE: ClassVar = "or"


@op_definition
class XorPredOp(BinaryPredOp):
    """Predicate exclusive or: ``xor.pred d, a, b;``. Example: ``%p = ptx.xor.pred %a, %b``.

    Spec: PTX ISA 9.7.8, Logic and Shift Instructions: xor (``.type`` = ``.pred``)."""

    name = "ptx.xor.pred"
    OPCODE: ClassVar = "xor"


@op_definition
class NotPredOp(PredLogicOp):
    """Predicate not: ``not.pred d, a;``. Example: ``%p = ptx.not.pred %a``.

    Spec: PTX ISA 9.7.8, Logic and Shift Instructions: not (``.type`` = ``.pred``)."""

    name = "ptx.not.pred"
    OPCODE: ClassVar = "not"

    src = operand_def(i1)
    result = result_def(i1)

    assembly_format = "$src attr-dict"

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src], result_types=[i1])


MATH_OPS = [AbsOp, NegOp, SqrtOp, RcpOp, Ex2Op, Lg2Op, FloatDivOp, FmaOp, AndPredOp, OrPredOp, XorPredOp, NotPredOp]

# endregion

ARITH_OPS = [
    AddOp,
    SubOp,
    MulLoOp,
    MulOp,
    MaxOp,
    MinOp,
    DivOp,
    RemOp,
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
    PackB32x2Op,
    UnpackB32x2Op,
    *MATH_OPS,
]
ARITH_ATTRS = [ArithTypeAttr, RoundingModeAttr]
