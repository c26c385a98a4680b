"""shfl.sync (PTX ISA, Data Movement and Conversion Instructions: shfl.sync): exchange a
register between the threads of one warp."""

from __future__ import annotations

from typing import ClassVar

from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    VarConstraint,
    irdl_attr_definition,
    operand_def,
    prop_def,
    result_def,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.ptx.base import (
    PtxInstruction,
    RegisterNamer,
    f32,
    i32,
    mnemonic,
)
from bulkred_dialect.ops.target import Requirement


class ShflMode(StrEnum):
    """``.mode`` of shfl.sync: where each thread reads from."""

    UP = "up"
    DOWN = "down"
    BFLY = "bfly"
    IDX = "idx"


@irdl_attr_definition
class ShflModeAttr(EnumAttribute[ShflMode], SpacedOpaqueSyntaxAttribute):
    name = "ptx.shfl_mode"


# The types a .b32 register of shfl.sync may have in the IR.
SHFL_VALUE_TYPES: tuple[Attribute, ...] = (i32, f32)


@op_definition
class ShflSyncOp(PtxInstruction):
    """Each thread of ``membermask`` gets the ``a`` of the lane that ``mode``, ``b``
    (lane or lane offset) and ``c`` (clamp and segment mask) select; a thread whose
    source lane is out of range gets its own ``a``.

    PTX: ``shfl.sync.mode.b32 d, a, b, c, membermask;`` (the optional predicate
    destination ``d|p`` is not modelled).

    ``a`` is ``i32`` or ``f32`` (a ``.b32`` register) and ``d`` has its type; ``b``, ``c``
    and ``membermask`` are ``i32``. For a butterfly over a whole warp: ``c`` = 0x1f,
    ``membermask`` = 0xffffffff.

    Example::

        %d = ptx.shfl.sync bfly %a, %lane_mask, %c, %mask : f32

    Needs sm_30 and PTX ISA 6.0. Spec: PTX ISA, shfl.sync.
    """

    name = "ptx.shfl.sync"
    SPEC_SECTION: ClassVar = "shfl.sync"
    REQUIREMENT: ClassVar = Requirement(sm=30, ptx=(6, 0))

    T: ClassVar = VarConstraint("T", AnyAttr())

    mode = prop_def(ShflModeAttr)
    a = operand_def(T)
    b = operand_def(i32)
    c = operand_def(i32)
    membermask = operand_def(i32)
    d = result_def(T)

    assembly_format = "$mode $a `,` $b `,` $c `,` $membermask attr-dict `:` type($a)"

    def __init__(self, mode: ShflMode, a: SSAValue, b: SSAValue, c: SSAValue, membermask: SSAValue):
        super().__init__(
            operands=[a, b, c, membermask],
            result_types=[a.type],
            properties={"mode": ShflModeAttr(mode)},
        )

    def verify_(self) -> None:
        if self.a.type not in SHFL_VALUE_TYPES:
            raise VerifyException(
                f"operand 'a' must be i32 or f32 (a .b32 register), got {self.a.type}"
            )

    def ptx_mnemonic(self) -> str:
        return mnemonic("shfl.sync", self.mode.data, "b32")

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.d), reg(self.a), reg(self.b), reg(self.c), reg(self.membermask)]


WARP_OPS = [ShflSyncOp]
WARP_ATTRS = [ShflModeAttr]
