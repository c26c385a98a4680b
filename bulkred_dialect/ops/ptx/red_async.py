"""red.async (PTX ISA 9.7.13.7): asynchronous reductions into shared::cluster or global memory.

Two instruction forms, one op each:

* ``ptx.red.async.relaxed.cluster`` -- into another CTA's shared memory of the
  cluster, completing on an mbarrier (``.mbarrier::complete_tx::bytes``);
* ``ptx.red.async.release`` -- a release-ordered ``add`` into global memory.

The optional ``.ss`` qualifier of both forms is not a property: it is the state
space of the address operand's type. ``!ptx.ptr<shared::cluster>`` /
``!ptx.ptr<global>`` print ``.shared::cluster`` / ``.global``; ``!ptx.ptr<generic>``
prints no ``.ss`` (generic addressing).
"""

from __future__ import annotations

from abc import ABC
from typing import ClassVar

from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    irdl_attr_definition,
    operand_def,
    opt_prop_def,
    prop_def,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.ptx.addresses import check_aligned
from bulkred_dialect.ops.ptx.base import (
    PtrType,
    PtxInstruction,
    RegisterNamer,
    StateSpace,
    addr,
    i32,
    i64,
    mnemonic,
    qualifier_error,
)
from bulkred_dialect.ops.target import Requirement

# region Enums


class RedAsyncOp(StrEnum):
    """``.op`` of the relaxed.cluster form, the union of its four syntax blocks."""

    INC = "inc"
    DEC = "dec"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"
    XOR = "xor"
    ADD = "add"


class RedAsyncType(StrEnum):
    """``.type`` of the relaxed.cluster form: the union of its four syntax blocks, and
    ``s64`` (``add`` only), which the blocks leave out and ptxas accepts."""

    U32 = "u32"
    S32 = "s32"
    U64 = "u64"
    S64 = "s64"
    B32 = "b32"


class RedAsyncReleaseType(StrEnum):
    """``.type`` of the release form (``.add`` only)."""

    U32 = "u32"
    S32 = "s32"
    U64 = "u64"
    S64 = "s64"


class RedAsyncScope(StrEnum):
    """``.scope`` of the release form: the syntax block's ``gpu``, ``cluster`` plus the
    ``sys`` that the ``.mmio`` rule names."""

    GPU = "gpu"
    CLUSTER = "cluster"
    SYS = "sys"


@irdl_attr_definition
class RedAsyncOpAttr(EnumAttribute[RedAsyncOp], SpacedOpaqueSyntaxAttribute):
    name = "ptx.red_async_op"


@irdl_attr_definition
class RedAsyncTypeAttr(EnumAttribute[RedAsyncType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.red_async_type"


@irdl_attr_definition
class RedAsyncReleaseTypeAttr(EnumAttribute[RedAsyncReleaseType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.red_async_release_type"


@irdl_attr_definition
class RedAsyncScopeAttr(EnumAttribute[RedAsyncScope], SpacedOpaqueSyntaxAttribute):
    name = "ptx.red_async_scope"


# endregion

# The relaxed.cluster syntax blocks, as a table: .type -> the .op values valid with it.
# `add.s64` is beyond the spec's table: ptxas (nvJitLink 13.5; ptxas 13.0 too, by the
# ptxas audit of docs/differential.md) assembles it on sm_90a and sm_100a, as it does
# `add.s64` of the release form, and the add of two's-complement integers is the same
# bits as `add.u64`.
RED_ASYNC_TABLE: dict[RedAsyncType, tuple[RedAsyncOp, ...]] = {
    RedAsyncType.U32: (
        RedAsyncOp.INC,
        RedAsyncOp.DEC,
        RedAsyncOp.MIN,
        RedAsyncOp.MAX,
        RedAsyncOp.ADD,
    ),
    RedAsyncType.S32: (RedAsyncOp.MIN, RedAsyncOp.MAX, RedAsyncOp.ADD),
    RedAsyncType.U64: (RedAsyncOp.ADD,),
    RedAsyncType.S64: (RedAsyncOp.ADD,),
    RedAsyncType.B32: (RedAsyncOp.AND, RedAsyncOp.OR, RedAsyncOp.XOR),
}

# ptxas rejects '.release' with '.cluster' ("Illegal modifier '.cluster' for instruction
# 'red.async' with '.release'", nvJitLink 13.5, every target and PTX ISA version up to 9.0),
# although the syntax block lists it; '.sys' it accepts with and without '.mmio'.
RELEASE_SCOPES = (RedAsyncScope.GPU, RedAsyncScope.SYS)

_COMPLETION = "mbarrier::complete_tx::bytes"


def value_type(type_name: str) -> Attribute:
    """The IR type of operand ``b`` for ``.type`` ``type_name`` (a 32- or 64-bit register)."""
    return i64 if type_name.endswith("64") else i32


def _ss(value: SSAValue) -> StateSpace | None:
    """The ``.ss`` qualifier an address operand's type implies (None: generic addressing)."""
    t = value.type
    if isinstance(t, PtrType) and t.state_space != StateSpace.GENERIC:
        return t.state_space
    return None


class RedAsyncBase(PtxInstruction, ABC):
    """Shared checks: the destination's state space, and ``b`` by ``.type`` width."""

    SEM: ClassVar[str] = ""
    SS: ClassVar[StateSpace] = StateSpace.GENERIC

    # Operands 'a' and 'b' are declared in each concrete op: xDSL orders a base class's
    # operand definitions after the subclass's, which would put 'mbar' before 'b'.

    def _verify_dest(self) -> None:
        t = self.a.type
        allowed = (self.SS, StateSpace.GENERIC)
        if not isinstance(t, PtrType) or t.state_space not in allowed:
            raise VerifyException(
                f"operand 'a' must be !ptx.ptr<{self.SS}> ('.ss' {self.SS}) or "
                f"!ptx.ptr<generic> (no '.ss') with '.sem' {self.SEM}, got {t}"
            )

    def _verify_b(self, type_name: str) -> None:
        want = value_type(type_name)
        if self.b.type != want:
            raise VerifyException(
                f"operand 'b' must be {want} for '.type' {type_name}, got {self.b.type}"
            )

    def _verify_a_alignment(self, type_name: str) -> None:
        """Where known at compile time, ``a`` is aligned to the size of ``.type`` ("the
        address must be naturally aligned to a multiple of the access size", PTX ISA,
        Addresses as Operands)."""
        check_aligned("a", self.a, 8 if type_name.endswith("64") else 4)


@op_definition
class RedAsyncRelaxedClusterOp(RedAsyncBase):
    """Reduce ``b`` into ``[a]`` in another CTA of the cluster; on completion perform a
    complete-tx of the stored byte count on the mbarrier ``[mbar]`` of that CTA.

    PTX: ``red.async.relaxed.cluster{.shared::cluster}.mbarrier::complete_tx::bytes.op.type
    [a], b, [mbar];``

    ``a`` and ``mbar`` are both ``!ptx.ptr<shared::cluster>`` (prints ``.shared::cluster``)
    or both ``!ptx.ptr<generic>`` (no ``.ss``, generic addressing); ``b`` is ``i32``, or
    ``i64`` for ``u64``/``s64``. ``.op`` x ``.type``: inc/dec u32; min/max u32, s32;
    and/or/xor b32; add u32, s32, u64 -- the spec's table -- and add s64, beyond it (ptxas
    accepts it; see docs/differential.md). The completion mechanism is always printed
    (ptxas requires it).

    Example::

        ptx.red.async.relaxed.cluster add u32 %a, %b, %mbar
            : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>

    Needs sm_90 and PTX ISA 8.1. Spec: PTX ISA 9.7.13.7.
    """

    name = "ptx.red.async.relaxed.cluster"
    SPEC_SECTION: ClassVar = "9.7.13.7"
    REQUIREMENT: ClassVar = Requirement(sm=90, ptx=(8, 1))
    SEM: ClassVar = "relaxed"
    SS: ClassVar = StateSpace.SHARED_CLUSTER

    op = prop_def(RedAsyncOpAttr)
    type = prop_def(RedAsyncTypeAttr)
    a = operand_def(Attribute)
    b = operand_def(Attribute)
    mbar = operand_def(Attribute)

    assembly_format = (
        "$op $type $a `,` $b `,` $mbar attr-dict `:` type($a) `,` type($b) `,` type($mbar)"
    )

    def __init__(
        self, op: RedAsyncOp, type: RedAsyncType, a: SSAValue, b: SSAValue, mbar: SSAValue
    ):
        super().__init__(
            operands=[a, b, mbar],
            properties={"op": RedAsyncOpAttr(op), "type": RedAsyncTypeAttr(type)},
        )

    def verify_(self) -> None:
        t, op = self.type.data, self.op.data
        if op not in RED_ASYNC_TABLE[t]:
            raise qualifier_error(".op", op, RED_ASYNC_TABLE[t], f"with '.type' {t}")
        self._verify_dest()
        if self.mbar.type != self.a.type:
            raise VerifyException(
                f"operand 'mbar' must be {self.a.type} like operand 'a' (one '.ss' "
                f"names both), got {self.mbar.type}"
            )
        self._verify_b(t)
        self._verify_a_alignment(t)
        # An mbarrier object is an 8-byte aligned .b64.
        check_aligned("mbar", self.mbar, 8)

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            "red.async.relaxed.cluster", _ss(self.a), _COMPLETION, self.op.data, self.type.data
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [addr(reg(self.a)), reg(self.b), addr(reg(self.mbar))]


@op_definition
class RedAsyncReleaseOp(RedAsyncBase):
    """Add ``b`` to ``[a]`` in global memory as a strong operation with ``.release``
    semantics at ``.scope``; completion synchronizes with the end of the CTA.

    PTX: ``red.async{.mmio}.release.scope{.global}.add.type [a], b;``

    ``a`` is ``!ptx.ptr<global>`` (prints ``.global``) or ``!ptx.ptr<generic>`` (no
    ``.ss``); ``b`` is ``i32`` for u32/s32 and ``i64`` for u64/s64.

    Scopes: the syntax block lists ``{.gpu, .cluster}``, and the text says "If .mmio is
    specified, .scope must be .sys". Decided by what ptxas (nvJitLink 13.5, sm_100a,
    PTX ISA 8.7 to 9.0) accepts: ``gpu`` and ``sys`` are valid; ``sys`` is valid with or
    without ``.mmio``; ``.mmio`` requires ``sys``; ``cluster`` is rejected ("Illegal
    modifier '.cluster' for instruction 'red.async' with '.release'"). The operation is
    ``.add`` only, as in the syntax block (ptxas also takes ``.min``, unlisted).

    Example::

        ptx.red.async.release gpu u32 %a, %b : !ptx.ptr<global>, i32
        ptx.red.async.release mmio sys u64 %a, %c : !ptx.ptr<generic>, i64

    Needs sm_100 and PTX ISA 8.7. Spec: PTX ISA 9.7.13.7.
    """

    name = "ptx.red.async.release"
    SPEC_SECTION: ClassVar = "9.7.13.7"
    REQUIREMENT: ClassVar = Requirement(sm=100, ptx=(8, 7))
    SEM: ClassVar = "release"
    SS: ClassVar = StateSpace.GLOBAL

    mmio = opt_prop_def(UnitAttr)
    scope = prop_def(RedAsyncScopeAttr)
    type = prop_def(RedAsyncReleaseTypeAttr)
    a = operand_def(Attribute)
    b = operand_def(Attribute)

    assembly_format = "(`mmio` $mmio^)? $scope $type $a `,` $b attr-dict `:` type($a) `,` type($b)"

    def __init__(
        self,
        scope: RedAsyncScope,
        type: RedAsyncReleaseType,
        a: SSAValue,
        b: SSAValue,
        *,
        mmio: bool = False,
    ):
        props: dict[str, Attribute] = {
            "scope": RedAsyncScopeAttr(scope),
            "type": RedAsyncReleaseTypeAttr(type),
        }
        if mmio:
            props["mmio"] = UnitAttr()
        super().__init__(operands=[a, b], properties=props)

    def verify_(self) -> None:
        scope = self.scope.data
        if scope not in RELEASE_SCOPES:
            raise qualifier_error(".scope", scope, RELEASE_SCOPES, "with '.sem' release")
        if self.mmio is not None and scope != RedAsyncScope.SYS:
            raise VerifyException(f"'.mmio' requires '.scope' sys, got '.scope' {scope}")
        self._verify_dest()
        self._verify_b(self.type.data)
        self._verify_a_alignment(self.type.data)

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            "red.async",
            "mmio" if self.mmio is not None else None,
            "release",
            self.scope.data,
            _ss(self.a),
            "add",
            self.type.data,
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [addr(reg(self.a)), reg(self.b)]


RED_ASYNC_OPS = [RedAsyncRelaxedClusterOp, RedAsyncReleaseOp]
RED_ASYNC_ATTRS = [RedAsyncOpAttr, RedAsyncTypeAttr, RedAsyncReleaseTypeAttr, RedAsyncScopeAttr]
