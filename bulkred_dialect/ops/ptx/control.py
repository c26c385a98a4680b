"""Comparison, selection, conversion and control flow for the backend lowering:
``setp`` and ``selp`` (PTX ISA 9.7.7), ``cvt`` (9.7.9.21), ``bra`` and ``ret`` (9.7.12).

Branch ops are terminators whose successors are blocks of the kernel; the printer
gives every block a label (:func:`block_label`) and turns block arguments into
register moves on the branch edge. ``ptx.bra.cond`` carries no block arguments
(``lower-to-ptx`` splits such edges), so each of its two edges is a plain jump.

The ``.type`` / register rules follow what ptxas accepts (the differential test
checks them): a ``.u``/``.s``/``.b`` type needs a bit-register exactly as wide; a
float type also accepts a float register of its width.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

from abc import ABC
from collections.abc import Iterator, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, Block, Operation, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    irdl_attr_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    successor_def,
    traits_def,
    var_operand_def,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.ptx.base import (
    PtxInstruction,
    RegisterNamer,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i16,
    i32,
    i64,
    mnemonic,
    qualifier_error,
)
from bulkred_dialect.ops.ptx.memory import register_fits
from bulkred_dialect.ops.target import Requirement

_BASIC = Requirement(sm=50, ptx=(6, 0))

# region setp / selp


class CmpOp(StrEnum):
    """``.CmpOp`` of setp: ordered comparisons, unsigned ones, and the unordered float ones."""

    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    LO = "lo"
    LS = "ls"
    HI = "hi"
    HS = "hs"
    EQU = "equ"
    NEU = "neu"
    LTU = "ltu"
    LEU = "leu"
    GTU = "gtu"
    GEU = "geu"
    NUM = "num"
    NAN = "nan"


class SetpType(StrEnum):
    """``.type`` of setp."""

    B16 = "b16"
    B32 = "b32"
    B64 = "b64"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    S16 = "s16"
    S32 = "s32"
    S64 = "s64"
    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"


class SelpType(StrEnum):
    """``.type`` of selp."""

    B16 = "b16"
    B32 = "b32"
    B64 = "b64"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    S16 = "s16"
    S32 = "s32"
    S64 = "s64"
    F32 = "f32"
    F64 = "f64"


@irdl_attr_definition
class CmpOpAttr(EnumAttribute[CmpOp], SpacedOpaqueSyntaxAttribute):
    name = "ptx.cmp"


@irdl_attr_definition
class SetpTypeAttr(EnumAttribute[SetpType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.setp_type"


@irdl_attr_definition
class SelpTypeAttr(EnumAttribute[SelpType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.selp_type"


_ORDERED = (CmpOp.EQ, CmpOp.NE, CmpOp.LT, CmpOp.LE, CmpOp.GT, CmpOp.GE)
_UNSIGNED_ONLY = (CmpOp.LO, CmpOp.LS, CmpOp.HI, CmpOp.HS)
_FLOAT_ONLY = (CmpOp.EQU, CmpOp.NEU, CmpOp.LTU, CmpOp.LEU, CmpOp.GTU, CmpOp.GEU, CmpOp.NUM, CmpOp.NAN)


def valid_cmp_ops(t: SetpType) -> tuple[CmpOp, ...]:
    """The comparisons setp allows with ``.type`` ``t`` (PTX ISA 9.7.7.1 tables 'Operators for
    signed / unsigned integer, bit-size and floating-point types')."""
    kind = "f" if t == SetpType.BF16 else str(t)[0]
    if kind == "b":
        return (CmpOp.EQ, CmpOp.NE)
    if kind == "s":
        return _ORDERED
    if kind == "u":
        return _ORDERED + _UNSIGNED_ONLY
    return _ORDERED + _FLOAT_ONLY


def _setp_requirement(t: str) -> Requirement:
    if t == "bf16":
        return Requirement(sm=90, ptx=(7, 8))
    if t == "f16":
        return Requirement(sm=53, ptx=(6, 0))
    return _BASIC


@op_definition
class SetpOp(PtxInstruction):
    """Compare two values into a predicate.

    PTX: ``setp.CmpOp.type p, a, b;``

    Example: ``%p = ptx.setp lt s32 %a, %b : i32`` is ``setp.lt.s32 %p1, %r1, %r2;``.
    Spec: PTX ISA 9.7.7.1 (9.7.4.6 for f16 / bf16).
    """

    name = "ptx.setp"
    SPEC_SECTION: ClassVar = "9.7.7.1"

    cmp = prop_def(CmpOpAttr)
    type = prop_def(SetpTypeAttr)
    lhs = operand_def()
    rhs = operand_def()
    result = result_def(i1)

    assembly_format = "$cmp $type $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)"

    def __init__(self, cmp: CmpOp, type: SetpType, lhs: SSAValue, rhs: SSAValue):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[i1],
            properties={"cmp": CmpOpAttr(cmp), "type": SetpTypeAttr(type)},
        )

    def verify_(self) -> None:
        t, c = self.type.data, self.cmp.data
        if c not in valid_cmp_ops(t):
            raise qualifier_error(".CmpOp", c, valid_cmp_ops(t), f"with '.type' {t}")
        for field, v in (("a", self.lhs), ("b", self.rhs)):
            if not register_fits(t, v.type, exact=True):
                raise VerifyException(f"operand '{field}' of type {v.type} cannot hold '.type' {t}")

    def requirement(self) -> Requirement:
        return _setp_requirement(self.type.data)

    def ptx_mnemonic(self) -> str:
        return mnemonic("setp", self.cmp.data, self.type.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.lhs), reg(self.rhs)]


@op_definition
class SelpOp(PtxInstruction):
    """Select ``a`` when the predicate ``c`` is true, else ``b``.

    PTX: ``selp.type d, a, b, c;``

    Example: ``%d = ptx.selp b32 %a, %b, %p : i32``. Spec: PTX ISA 9.7.7.3.
    """

    name = "ptx.selp"
    SPEC_SECTION: ClassVar = "9.7.7.3"
    REQUIREMENT: ClassVar = _BASIC

    type = prop_def(SelpTypeAttr)
    on_true = operand_def()
    on_false = operand_def()
    cond = operand_def(i1)
    result = result_def()

    assembly_format = "$type $on_true `,` $on_false `,` $cond attr-dict `:` type($on_true) `,` type($on_false) `->` type($result)"

    def __init__(self, type: SelpType, on_true: SSAValue, on_false: SSAValue, cond: SSAValue):
        super().__init__(
            operands=[on_true, on_false, cond],
            result_types=[on_true.type],
            properties={"type": SelpTypeAttr(type)},
        )

    def verify_(self) -> None:
        t = self.type.data
        for field, v in (("a", self.on_true), ("b", self.on_false), ("d", self.result)):
            if not register_fits(t, v.type, exact=True):
                raise VerifyException(f"'{field}' of type {v.type} cannot hold '.type' {t}")

    def ptx_mnemonic(self) -> str:
        return mnemonic("selp", self.type.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.on_true), reg(self.on_false), reg(self.cond)]


# endregion

# region cvt


class CvtType(StrEnum):
    """``.dtype`` / ``.atype`` of cvt."""

    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    S8 = "s8"
    S16 = "s16"
    S32 = "s32"
    S64 = "s64"
    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"

    @property
    def is_float(self) -> bool:
        return self.value[0] in "fb"

    @property
    def bits(self) -> int:
        return 16 if self == CvtType.BF16 else int(self.value[1:])


class CvtRounding(StrEnum):
    """``.irnd`` (round to an integer value) and ``.frnd`` (round a float result) of cvt."""

    RN = "rn"
    RZ = "rz"
    RM = "rm"
    RP = "rp"
    RNI = "rni"
    RZI = "rzi"
    RMI = "rmi"
    RPI = "rpi"


@irdl_attr_definition
class CvtTypeAttr(EnumAttribute[CvtType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.cvt_type"


@irdl_attr_definition
class CvtRoundingAttr(EnumAttribute[CvtRounding], SpacedOpaqueSyntaxAttribute):
    name = "ptx.cvt_rnd"


FLOAT_ROUNDING = (CvtRounding.RN, CvtRounding.RZ, CvtRounding.RM, CvtRounding.RP)
INT_ROUNDING = (CvtRounding.RNI, CvtRounding.RZI, CvtRounding.RMI, CvtRounding.RPI)

# IR type of each cvt type's register (u8/s8 live in 16-bit registers).
CVT_IR_TYPE: dict[CvtType, tuple[Attribute, ...]] = {
    CvtType.U8: (IntegerType(8), i16),
    CvtType.S8: (IntegerType(8), i16),
    CvtType.U16: (i16,),
    CvtType.S16: (i16,),
    CvtType.U32: (i32,),
    CvtType.S32: (i32,),
    CvtType.U64: (i64,),
    CvtType.S64: (i64,),
    CvtType.F16: (f16,),
    CvtType.BF16: (bf16,),
    CvtType.F32: (f32,),
    CvtType.F64: (f64,),
}


def cvt_roundings(d: CvtType, a: CvtType) -> tuple[CvtRounding | None, ...] | None:
    """The rounding modifiers cvt allows from ``.atype`` ``a`` to ``.dtype`` ``d`` (``None``:
    no modifier); None when the pair is not valid (PTX ISA 9.7.9.21, 'Rounding modifiers')."""
    if (d == CvtType.BF16 and a in (CvtType.U8, CvtType.S8)) or (
        a == CvtType.BF16 and d in (CvtType.U8, CvtType.S8)
    ):
        return None
    if not d.is_float and not a.is_float:
        return (None,)
    if not d.is_float:
        return INT_ROUNDING
    if not a.is_float:
        return FLOAT_ROUNDING
    if d == a:
        return (None, *INT_ROUNDING)
    if CvtType.BF16 in (a, d) and (d.bits > a.bits or {a, d} == {CvtType.F16, CvtType.BF16}):
        # widening from bf16, and f16 <-> bf16: exact or rounded alike
        return (None, *FLOAT_ROUNDING)
    if d.bits > a.bits:
        return (None,)
    return FLOAT_ROUNDING


def _cvt_requirement(d: CvtType, a: CvtType, rnd: CvtRounding | None) -> Requirement:
    # PTX ISA 9.7.9.21 target notes: the .bf16 destination of cvt.frnd2.bf16.f32
    # (frnd2 = .rn, .rz) needs sm_80 (PTX ISA 7.0), cvt.f32.bf16 sm_80 (PTX ISA 7.1), every
    # other bf16 conversion sm_90 (PTX ISA 7.8). ptxas (nvJitLink 13.5) also takes
    # cvt.{rm,rp}.bf16.f32 and cvt.{rn,rz,rm,rp}.f32.bf16 on sm_80: docs/differential.md.
    if (d, a) == (CvtType.BF16, CvtType.F32) and rnd in (CvtRounding.RN, CvtRounding.RZ):
        return Requirement(sm=80, ptx=(7, 0))
    if (d, a) == (CvtType.F32, CvtType.BF16) and rnd is None:
        return Requirement(sm=80, ptx=(7, 1))
    if CvtType.BF16 in (a, d):
        return Requirement(sm=90, ptx=(7, 8))
    if CvtType.F16 in (a, d):
        return Requirement(sm=53, ptx=(6, 0))
    return _BASIC


@op_definition
class CvtOp(PtxInstruction):
    """Convert between integer and float types, widening or narrowing.

    PTX: ``cvt{.rnd}.dtype.atype d, a;`` -- int to int takes no rounding; float to int
    needs ``.rni/.rzi/.rmi/.rpi``; int to float and narrowing float to float need
    ``.rn/.rz/.rm/.rp``.

    Example: ``%w = ptx.cvt s64 s32 %i : i32 -> i64`` is ``cvt.s64.s32 %rd1, %r1;``;
    ``%f = ptx.cvt rn f32 s32 %i : i32 -> f32``. Spec: PTX ISA 9.7.9.21.
    """

    name = "ptx.cvt"
    SPEC_SECTION: ClassVar = "9.7.9.21"

    rnd = opt_prop_def(CvtRoundingAttr)
    dtype = prop_def(CvtTypeAttr)
    atype = prop_def(CvtTypeAttr)
    src = operand_def()
    result = result_def()

    # Custom syntax: xDSL's declarative format cannot make an enum optional when the next
    # token is another enum (`($rnd^)? $dtype` fails on `s64`).
    @classmethod
    def parse(cls, parser: Parser) -> CvtOp:
        props: dict[str, Attribute] = {}
        for rnd in CvtRounding:
            if parser.parse_optional_keyword(rnd.value) is not None:
                props["rnd"] = CvtRoundingAttr(rnd)
                break
        props["dtype"] = CvtTypeAttr(parser.parse_str_enum(CvtType))
        props["atype"] = CvtTypeAttr(parser.parse_str_enum(CvtType))
        src = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        op = cls.create(
            operands=[parser.resolve_operand(src, src_type)],
            result_types=[result_type],
            properties=props,
        )
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        words = [self.rnd.data if self.rnd is not None else None, self.dtype.data, self.atype.data]
        printer.print_string(" " + " ".join(str(w) for w in words if w is not None) + " ")
        printer.print_operand(self.src)
        printer.print_op_attributes(self.attributes)
        printer.print_string(f" : {self.src.type} -> {self.result.type}")

    def __init__(
        self,
        dtype: CvtType,
        atype: CvtType,
        src: SSAValue,
        result_type: Attribute | None = None,
        *,
        rnd: CvtRounding | None = None,
    ):
        props: dict[str, Attribute] = {"dtype": CvtTypeAttr(dtype), "atype": CvtTypeAttr(atype)}
        if rnd is not None:
            props["rnd"] = CvtRoundingAttr(rnd)
        super().__init__(
            operands=[src],
            result_types=[result_type or CVT_IR_TYPE[dtype][-1]],
            properties=props,
        )

    def verify_(self) -> None:
        d, a = self.dtype.data, self.atype.data
        allowed = cvt_roundings(d, a)
        if allowed is None:
            raise VerifyException(f"'.dtype' {d} cannot be converted from '.atype' {a}")
        r = self.rnd.data if self.rnd is not None else None
        if r not in allowed:
            valid = ", ".join("none" if x is None else str(x) for x in allowed)
            raise VerifyException(
                f"'.rnd' {r or 'none'} is not valid for '.dtype' {d} from '.atype' {a} (valid: {valid})"
            )
        for field, v, t in (("a", self.src, a), ("d", self.result, d)):
            if v.type not in CVT_IR_TYPE[t]:
                want = " or ".join(str(x) for x in CVT_IR_TYPE[t])
                raise VerifyException(f"'{field}' must be {want} for '.{field}type' {t}, got {v.type}")

    def requirement(self) -> Requirement:
        return _cvt_requirement(self.dtype.data, self.atype.data, self.rnd.data if self.rnd is not None else None)

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            "cvt", self.rnd.data if self.rnd is not None else None, self.dtype.data, self.atype.data
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.src)]


# endregion

# region Branches


_LABELS: ContextVar[dict[Block, str] | None] = ContextVar("bulkred_block_labels", default=None)


def kernel_labels(kernel_index: int, kernel: Operation) -> dict[Block, str]:
    """The label of every block of ``kernel``, the ``kernel_index``-th of its module."""
    return {block: f"$L__BB{kernel_index}_{b}" for b, block in enumerate(kernel.regions[0].blocks)}


@contextmanager
def labels_of(labels: dict[Block, str]) -> Iterator[None]:
    """While printing a module, :func:`block_label` reads the labels computed once
    (:func:`kernel_labels`) instead of searching the module for each block."""
    token = _LABELS.set(labels)
    try:
        yield
    finally:
        _LABELS.reset(token)


def block_label(block: Block) -> str:
    """The PTX label of a kernel block: ``$L__BB<kernel index>_<block index>``."""
    labels = _LABELS.get()
    if labels is not None and block in labels:
        return labels[block]
    region = block.parent_region()
    b = 0
    if region is not None:
        for b, other in enumerate(region.blocks):
            if other is block:
                break
    kernel = block.parent_op()
    k = 0
    if kernel is not None and (module_block := kernel.parent_block()) is not None:
        funcs = [o for o in module_block.ops if o.name == kernel.name]
        k = funcs.index(kernel) if kernel in funcs else 0
    return f"$L__BB{k}_{b}"


def _check_successor_args(field: str, block: Block, args: Sequence[SSAValue]) -> None:
    want = [a.type for a in block.args]
    got = [a.type for a in args]
    if want != got:
        raise VerifyException(
            f"'{field}' passes ({', '.join(map(str, got))}) to a block taking ({', '.join(map(str, want))})"
        )


class BranchInstruction(PtxInstruction, ABC):
    """Marker base of the branch terminators: the printer handles their edges."""

    def edges(self) -> list[tuple[Block, Sequence[SSAValue]]]:
        """Each successor with the values passed to its block arguments."""
        raise NotImplementedError


@op_definition
class BraOp(BranchInstruction):
    """Jump to ``dest``, passing values to its block arguments (register moves on the edge).

    PTX: ``bra.uni L;``  (every thread of the warp takes it)

    Example: ``ptx.bra ^bb1(%i : i64)``. Spec: PTX ISA 9.7.12.2.
    """

    name = "ptx.bra"
    SPEC_SECTION: ClassVar = "9.7.12.2"
    REQUIREMENT: ClassVar = _BASIC

    arguments = var_operand_def()
    dest = successor_def()

    traits = traits_def(IsTerminator())

    assembly_format = "$dest (`(` $arguments^ `:` type($arguments) `)`)? attr-dict"

    def __init__(self, dest: Block, *args: SSAValue | Operation):
        super().__init__(operands=[list(args)], successors=[dest])

    def verify_(self) -> None:
        _check_successor_args("arguments", self.dest, self.arguments)

    def edges(self) -> list[tuple[Block, Sequence[SSAValue]]]:
        return [(self.dest, self.arguments)]

    def ptx_mnemonic(self) -> str:
        return "bra.uni"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [block_label(self.dest)]


@op_definition
class CondBraOp(BranchInstruction):
    """Jump to ``then`` when the predicate holds, else to ``else``.

    PTX: ``@p bra L_then;`` followed by ``bra.uni L_else;`` (:meth:`ptx_lines`).

    Example: ``ptx.bra.cond %p, ^bb1, ^bb2``. The successors take no block arguments:
    ``lower-to-ptx`` routes such an edge through a block holding a ``ptx.bra``.
    Spec: PTX ISA 9.7.12.2.
    """

    name = "ptx.bra.cond"
    SPEC_SECTION: ClassVar = "9.7.12.2"
    REQUIREMENT: ClassVar = _BASIC

    cond = operand_def(i1)
    then_block = successor_def()
    else_block = successor_def()

    traits = traits_def(IsTerminator())

    assembly_format = "$cond `,` $then_block `,` $else_block attr-dict"

    def __init__(self, cond: SSAValue | Operation, then_block: Block, else_block: Block):
        super().__init__(operands=[cond], successors=[then_block, else_block])

    def verify_(self) -> None:
        _check_successor_args("then_block", self.then_block, [])
        _check_successor_args("else_block", self.else_block, [])

    def edges(self) -> list[tuple[Block, Sequence[SSAValue]]]:
        return [(self.then_block, []), (self.else_block, [])]

    def ptx_mnemonic(self) -> str:
        return "bra"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [block_label(self.then_block)]

    def ptx_line(self, reg: RegisterNamer) -> str:
        """The guarded jump alone: ``@%p1 bra $L__BB0_1;``."""
        return f"@{reg(self.cond)} {super().ptx_line(reg)}"

    def ptx_lines(self, reg: RegisterNamer) -> list[str]:
        """``@%p1 bra $L__BB0_1;`` and ``bra.uni $L__BB0_2;``."""
        return [self.ptx_line(reg), f"bra.uni {block_label(self.else_block)};"]


@op_definition
class RetOp(PtxInstruction):
    """Return from the kernel.

    PTX: ``ret;``  Example: ``ptx.ret``. Spec: PTX ISA 9.7.12.6.
    """

    name = "ptx.ret"
    SPEC_SECTION: ClassVar = "9.7.12.6"
    REQUIREMENT: ClassVar = _BASIC

    traits = traits_def(IsTerminator())

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()

    def ptx_mnemonic(self) -> str:
        return "ret"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return []


# endregion

CONTROL_OPS = [SetpOp, SelpOp, CvtOp, BraOp, CondBraOp, RetOp]
CONTROL_ATTRS = [CmpOpAttr, SetpTypeAttr, SelpTypeAttr, CvtTypeAttr, CvtRoundingAttr]
