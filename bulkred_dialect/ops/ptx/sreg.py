"""Reading special registers (PTX ISA, Special Registers): thread, CTA, grid and cluster ids."""

from __future__ import annotations

from typing import ClassVar

from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition, prop_def, result_def
from xdsl.parser import AttrParser
from xdsl.dialects.utils import EnumAttribute
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.ptx.base import PtxInstruction, RegisterNamer, i1, i32
from bulkred_dialect.ops.target import Requirement


class SpecialRegister(StrEnum):
    """The special registers the lowering reads, spelled as in PTX without the ``%``."""

    TID_X = "tid.x"
    TID_Y = "tid.y"
    TID_Z = "tid.z"
    NTID_X = "ntid.x"
    NTID_Y = "ntid.y"
    NTID_Z = "ntid.z"
    CTAID_X = "ctaid.x"
    CTAID_Y = "ctaid.y"
    CTAID_Z = "ctaid.z"
    NCTAID_X = "nctaid.x"
    NCTAID_Y = "nctaid.y"
    NCTAID_Z = "nctaid.z"
    LANEID = "laneid"
    WARPID = "warpid"
    CLUSTER_CTARANK = "cluster_ctarank"
    CLUSTER_NCTARANK = "cluster_nctarank"
    CLUSTER_CTAID_X = "cluster_ctaid.x"
    CLUSTER_CTAID_Y = "cluster_ctaid.y"
    CLUSTER_CTAID_Z = "cluster_ctaid.z"
    CLUSTER_NCTAID_X = "cluster_nctaid.x"
    CLUSTER_NCTAID_Y = "cluster_nctaid.y"
    CLUSTER_NCTAID_Z = "cluster_nctaid.z"
    CLUSTERID_X = "clusterid.x"
    CLUSTERID_Y = "clusterid.y"
    CLUSTERID_Z = "clusterid.z"
    NCLUSTERID_X = "nclusterid.x"
    NCLUSTERID_Y = "nclusterid.y"
    NCLUSTERID_Z = "nclusterid.z"
    IS_EXPLICIT_CLUSTER = "is_explicit_cluster"

    @property
    def is_cluster(self) -> bool:
        return "cluster" in self.value

    @property
    def ir_type(self) -> Attribute:
        return i1 if self == SpecialRegister.IS_EXPLICIT_CLUSTER else i32


@irdl_attr_definition
class SpecialRegisterAttr(EnumAttribute[SpecialRegister], SpacedOpaqueSyntaxAttribute):
    name = "ptx.sreg"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> SpecialRegister:
        """A register name as PTX spells it after the ``%`` (``tid.x``); a located error
        listing the valid names otherwise."""
        valid = ", ".join(SpecialRegister)
        start = parser.pos
        name = parser.parse_optional_identifier()
        if name is None:
            name = parser.parse_optional_str_literal()
        if name is None:
            parser.raise_error(
                f"expected a special register name, spelled without '%' (valid: {valid})", start, start + 1
            )
        if name not in [str(r) for r in SpecialRegister]:
            parser.raise_error(f"'reg' {name} is not a special register (valid: {valid})", start, parser.pos)
        return SpecialRegister(name)


_ANY_TARGET = Requirement(sm=50, ptx=(6, 0))
_CLUSTER = Requirement(sm=90, ptx=(7, 8))


@op_definition
class MovSregOp(PtxInstruction):
    """Copy a special register into a register.

    PTX: ``mov.u32 d, %tid.x;`` (``mov.pred d, %is_explicit_cluster;``)

    The result is ``i32``, or ``i1`` for ``is_explicit_cluster``.

    Example::

        %t = ptx.mov.sreg tid.x : i32
        %rank = ptx.mov.sreg cluster_ctarank : i32

    The cluster registers need sm_90 and PTX ISA 7.8. Spec: PTX ISA, Special Registers.
    """

    name = "ptx.mov.sreg"
    SPEC_SECTION: ClassVar = "Special Registers"
    REQUIREMENT: ClassVar = _ANY_TARGET

    reg = prop_def(SpecialRegisterAttr)
    d = result_def(Attribute)

    assembly_format = "$reg attr-dict `:` type($d)"

    def __init__(self, reg: SpecialRegister):
        super().__init__(result_types=[reg.ir_type], properties={"reg": SpecialRegisterAttr(reg)})

    def verify_(self) -> None:
        r = self.reg.data
        if self.d.type != r.ir_type:
            raise VerifyException(f"result 'd' must be {r.ir_type} for '%{r}', got {self.d.type}")

    def requirement(self) -> Requirement:
        return _CLUSTER if self.reg.data.is_cluster else _ANY_TARGET

    def ptx_mnemonic(self) -> str:
        return "mov.pred" if self.reg.data.ir_type == i1 else "mov.u32"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.d), f"%{self.reg.data}"]


SREG_OPS = [MovSregOp]
SREG_ATTRS = [SpecialRegisterAttr]
