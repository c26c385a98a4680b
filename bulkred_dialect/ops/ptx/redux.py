"""redux.sync (PTX ISA 9.7.13.12): a reduction across the threads of one warp."""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    VarConstraint,
    irdl_attr_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.ptx.base import (
    PtxInstruction,
    RegisterNamer,
    expect_type,
    f32,
    i32,
    mnemonic,
    qualifier_error,
)
from bulkred_dialect.ops.target import Requirement
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.ops.op_definition import op_definition


class ReduxOp(StrEnum):
    """``.op`` of redux.sync, the union of its three syntax blocks."""

    ADD = "add"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"
    XOR = "xor"


class ReduxType(StrEnum):
    """``.type`` of redux.sync, the union of its three syntax blocks."""

    U32 = "u32"
    S32 = "s32"
    B32 = "b32"
    F32 = "f32"


@irdl_attr_definition
class ReduxOpAttr(EnumAttribute[ReduxOp], SpacedOpaqueSyntaxAttribute):
    name = "ptx.redux_op"


@irdl_attr_definition
class ReduxTypeAttr(EnumAttribute[ReduxType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.redux_type"


# The spec's syntax blocks, as a table: .type -> the .op values valid with it.
REDUX_TABLE: dict[ReduxType, tuple[ReduxOp, ...]] = {
    ReduxType.U32: (ReduxOp.ADD, ReduxOp.MIN, ReduxOp.MAX),
    ReduxType.S32: (ReduxOp.ADD, ReduxOp.MIN, ReduxOp.MAX),
    ReduxType.B32: (ReduxOp.AND, ReduxOp.OR, ReduxOp.XOR),
    ReduxType.F32: (ReduxOp.MIN, ReduxOp.MAX),
}

_F32_NEEDS = Requirement(sm=100, arch_specific=True, ptx=(8, 6))


@op_definition
class ReduxSyncOp(PtxInstruction):
    """Reduce ``src`` over the threads of ``membermask`` in a warp; every thread gets the result.

    PTX: ``redux.sync.op{.abs}{.NaN}.type dst, src, membermask;``

    Example::

        %d = ptx.redux.sync add s32 %src, %mask : i32
        %m = ptx.redux.sync max abs NaN f32 %x, %mask : f32

    ``.f32`` (min/max only) and the ``.abs``/``.NaN`` qualifiers need sm_100a and
    PTX ISA 8.6; the integer forms sm_80 and PTX ISA 7.0.
    Spec: PTX ISA 9.7.13.12.
    """

    name = "ptx.redux.sync"
    SPEC_SECTION: ClassVar = "9.7.13.12"
    REQUIREMENT: ClassVar = Requirement(sm=80, ptx=(7, 0))

    op = prop_def(ReduxOpAttr)
    type = prop_def(ReduxTypeAttr)
    abs = opt_prop_def(UnitAttr)
    nan = opt_prop_def(UnitAttr, prop_name="NaN")
    T: ClassVar = VarConstraint("T", AnyAttr())

    src = operand_def(T)
    membermask = operand_def(i32)
    dst = result_def(T)

    assembly_format = (
        "$op (`abs` $abs^)? (`NaN` $NaN^)? $type $src `,` $membermask attr-dict `:` type($dst)"
    )

    def __init__(
        self,
        op: ReduxOp,
        type: ReduxType,
        src: SSAValue,
        membermask: SSAValue,
        *,
        abs: bool = False,
        nan: bool = False,
    ):
        props: dict[str, Attribute] = {"op": ReduxOpAttr(op), "type": ReduxTypeAttr(type)}
        if abs:
            props["abs"] = UnitAttr()
        if nan:
            props["NaN"] = UnitAttr()
        super().__init__(
            operands=[src, membermask],
            result_types=[f32 if type == ReduxType.F32 else i32],
            properties=props,
        )

    def verify_(self) -> None:
        t, op = self.type.data, self.op.data
        if op not in REDUX_TABLE[t]:
            raise qualifier_error(".op", op, REDUX_TABLE[t], f"with '.type' {t}")
        if t != ReduxType.F32:
            for flag, present in (("abs", self.abs), ("NaN", self.nan)):
                if present is not None:
                    raise VerifyException(
                        f"'.{flag}' is only valid with '.type' f32, got '.type' {t}"
                    )
        want = f32 if t == ReduxType.F32 else i32
        expect_type("src", self.src, want)
        if self.dst.type != want:
            raise VerifyException(f"result 'dst' must be {want}, got {self.dst.type}")

    def requirement(self) -> Requirement:
        if (
            self.type.data == ReduxType.F32
            or self.abs is not None
            or self.nan is not None
        ):
            return self.REQUIREMENT.combine(_F32_NEEDS)
        return self.REQUIREMENT

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            "redux.sync",
            self.op.data,
            "abs" if self.abs is not None else None,
            "NaN" if self.nan is not None else None,
            self.type.data,
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.dst), reg(self.src), reg(self.membermask)]


REDUX_OPS = [ReduxSyncOp]
REDUX_ATTRS = [ReduxOpAttr, ReduxTypeAttr]
