"""Bulk copy and bulk reduction (PTX ISA 9.7.9.25.4): ``cp.async.bulk`` in its four
directions, ``cp.reduce.async.bulk`` in its two forms, and ``cp.async.bulk.prefetch``.

One op per instruction form; the direction is in the op name with ``::`` spelled
``_`` (``ptx.cp.async.bulk.shared_cluster.global`` is
``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes``). The completion
mechanism is fixed by the direction, so it is part of the form, not a property.

An optional qualifier and the operand it introduces are separate on purpose: the
qualifier is a property (``cache_hint``, ``multicast``, ``cp_mask``), the operand an
optional operand (``cachePolicy``, ``ctaMask``, ``byteMask``), and the verifier
requires one iff the other. That keeps every combination of the syntax blocks
expressible (``.L2::cache_hint`` without ``cache-policy`` is an op that fails to
verify, as ptxas rejects the line), which the differential cases
(tests/ptx_cases/bulk.py) rely on.

Custom syntax: qualifiers first, as ``keyword value`` pairs for optional qualifier
sets, then the operands in PTX order, optional operands as ``name = %v``::

    ptx.cp.reduce.async.bulk.global.shared_cta cache_hint "L2::cache_hint" add noftz f16
        %dst, %src, %size cachePolicy = %policy
"""

from __future__ import annotations

from abc import ABC
from typing import ClassVar

from xdsl.dialects.builtin import UnitAttr
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_attr_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
)
from xdsl.irdl.declarative_assembly_format import (
    CustomDirective,
    OptionalOperandVariable,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.ptx.addresses import (
    check_aligned,
    check_inside_array,
    check_mbarrier_address,
)
from bulkred_dialect.ops.ptx.base import (
    PtrType,
    PtxInstruction,
    RegisterNamer,
    StateSpace,
    addr,
    check_multiple_of_16,
    constant_int,
    i16,
    i32,
    i64,
    mnemonic,
    qualifier_error,
)
from bulkred_dialect.ops.target import Requirement

# region Qualifier enums


class BulkRedOp(StrEnum):
    """``.redOp`` of cp.reduce.async.bulk (the same list in both syntax blocks)."""

    AND = "and"
    OR = "or"
    XOR = "xor"
    ADD = "add"
    INC = "inc"
    DEC = "dec"
    MIN = "min"
    MAX = "max"


class BulkRedType(StrEnum):
    """``.type`` of cp.reduce.async.bulk, the union of its syntax blocks."""

    F16 = "f16"
    BF16 = "bf16"
    B32 = "b32"
    U32 = "u32"
    S32 = "s32"
    B64 = "b64"
    U64 = "u64"
    S64 = "s64"
    F32 = "f32"
    F64 = "f64"


class CacheHint(StrEnum):
    """``.level::cache_hint``: its only member names the level the hint applies to."""

    L2 = "L2::cache_hint"


class Multicast(StrEnum):
    """``.multicast`` of cp.async.bulk global -> shared::cluster."""

    CLUSTER = "multicast::cluster"


@irdl_attr_definition
class BulkRedOpAttr(EnumAttribute[BulkRedOp], SpacedOpaqueSyntaxAttribute):
    name = "ptx.bulk_red_op"


@irdl_attr_definition
class BulkRedTypeAttr(EnumAttribute[BulkRedType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.bulk_red_type"


@irdl_attr_definition
class CacheHintAttr(EnumAttribute[CacheHint], SpacedOpaqueSyntaxAttribute):
    name = "ptx.bulk_cache_hint"


@irdl_attr_definition
class MulticastAttr(EnumAttribute[Multicast], SpacedOpaqueSyntaxAttribute):
    name = "ptx.bulk_multicast"


# endregion

# region Spec tables

COMPLETE_TX = "mbarrier::complete_tx::bytes"
BULK_GROUP = "bulk_group"

_R, _T = BulkRedOp, BulkRedType

# The .type list of the shared::cluster syntax block (the global block takes all of BulkRedType).
SHARED_CLUSTER_TYPES: tuple[BulkRedType, ...] = (_T.B32, _T.U32, _T.S32, _T.B64, _T.U64)

# The table "valid combinations of .redOp and element type": .dst -> .redOp -> element types.
REDUCE_TABLE: dict[StateSpace, dict[BulkRedOp, tuple[BulkRedType, ...]]] = {
    StateSpace.SHARED_CLUSTER: {
        _R.ADD: (_T.U32, _T.S32, _T.U64),
        _R.MIN: (_T.U32, _T.S32),
        _R.MAX: (_T.U32, _T.S32),
        _R.INC: (_T.U32,),
        _R.DEC: (_T.U32,),
        _R.AND: (_T.B32,),
        _R.OR: (_T.B32,),
        _R.XOR: (_T.B32,),
    },
    StateSpace.GLOBAL: {
        _R.ADD: (_T.U32, _T.S32, _T.U64, _T.F32, _T.F64, _T.F16, _T.BF16),
        _R.MIN: (_T.U32, _T.S32, _T.U64, _T.S64, _T.F16, _T.BF16),
        _R.MAX: (_T.U32, _T.S32, _T.U64, _T.S64, _T.F16, _T.BF16),
        _R.INC: (_T.U32,),
        _R.DEC: (_T.U32,),
        _R.AND: (_T.B32, _T.B64),
        _R.OR: (_T.B32, _T.B64),
        _R.XOR: (_T.B32, _T.B64),
    },
}

# "The addresses dstMem and srcMem must be aligned to 16 bytes" (9.7.9.25.4.1-3); an
# mbarrier object is a .b64 that must be 8-byte aligned (PTX ISA, mbarrier: size and
# alignment of the mbarrier object).
ADDRESS_ALIGNMENT: dict[str, int] = {"dstMem": 16, "srcMem": 16, "mbar": 8}

# add.f16 / add.bf16 must say .noftz (they keep subnormals); no other form takes it.
NOFTZ_TYPES: tuple[BulkRedType, ...] = (_T.F16, _T.BF16)

_BASE = Requirement(sm=90, ptx=(8, 0))
_SHARED_CTA_DST = Requirement(sm=90, ptx=(8, 6))
_CP_MASK = Requirement(sm=100, ptx=(8, 6))

# endregion

# region Verifier helpers


def check_paired(qualifier: str, present: bool, operand: str, value: SSAValue | None) -> None:
    """A qualifier that introduces an operand: both present or both absent."""
    if present and value is None:
        raise VerifyException(f"'{qualifier}' needs operand '{operand}', which is absent")
    if not present and value is not None:
        raise VerifyException(
            f"operand '{operand}' is only valid with '{qualifier}', which is absent"
        )


def check_cache_hint(hint: CacheHintAttr | None, policy: SSAValue | None) -> None:
    check_paired(".L2::cache_hint", hint is not None, "cachePolicy", policy)


def reducible_types(dst: StateSpace) -> tuple[BulkRedType, ...]:
    """The element types that some ``.redOp`` accepts for ``dst`` in the table."""
    accepted = {t for types in REDUCE_TABLE[dst].values() for t in types}
    return tuple(t for t in BulkRedType if t in accepted)


def check_reduce(dst: StateSpace, red_op: BulkRedOp, type: BulkRedType, noftz: bool) -> None:
    """The .redOp x .type table for ``dst``, then the .noftz rule."""
    if dst == StateSpace.SHARED_CLUSTER and type not in SHARED_CLUSTER_TYPES:
        # The syntax block also lists b64, which no row of the table accepts: offer only
        # the types that some .redOp takes.
        raise qualifier_error(".type", type, reducible_types(dst), f"for '.dst' {dst}")
    valid = REDUCE_TABLE[dst][red_op]
    if type not in valid:
        raise qualifier_error(".redOp", red_op, valid, f"with '.type' {type} for '.dst' {dst}")
    needs_noftz = red_op == BulkRedOp.ADD and type in NOFTZ_TYPES
    if needs_noftz and not noftz:
        raise VerifyException(f"'.noftz' is required with '.redOp' add and '.type' {type}")
    if noftz and not needs_noftz:
        raise VerifyException(
            f"'.noftz' is only valid with '.redOp' add and '.type' f16 or bf16, "
            f"got '.redOp' {red_op} and '.type' {type}"
        )


def _flag(prop: UnitAttr | None, spelling: str) -> str | None:
    return spelling if prop is not None else None


def _enum(prop: EnumAttribute | None) -> str | None:
    return str(prop.data) if prop is not None else None


def _operand(value: SSAValue | None, reg: RegisterNamer) -> list[str]:
    return [reg(value)] if value is not None else []


def _props(**props: Attribute | None) -> dict[str, Attribute]:
    return {k: v for k, v in props.items() if v is not None}


def _unit(flag: bool) -> UnitAttr | None:
    return UnitAttr() if flag else None


def _cache_hint(hint: CacheHint | None) -> CacheHintAttr | None:
    return CacheHintAttr(hint) if hint is not None else None


@irdl_custom_directive
class RequiredOperand(CustomDirective):
    """The operand of an optional ``name = %v`` clause, required once the clause has
    begun: ``(`cachePolicy` `=` custom<RequiredOperand>($cachePolicy)^)?``.

    With a plain ``$cachePolicy^`` anchor, xDSL 0.74 reads the operand with
    ``parse_optional_unresolved_operand`` even after ``cachePolicy =``, so a clause
    with no operand was dropped without a word (docs/DEVELOPING.md, "Diagnostics").
    """

    operand: OptionalOperandVariable

    def is_anchorable(self) -> bool:
        return True

    def is_present(self, op) -> bool:
        return self.operand.is_present(op)

    def set_empty(self, state: ParsingState) -> None:
        self.operand.set_empty(state)

    def parse(self, parser: Parser, state: ParsingState) -> None:
        operand = parser.parse_unresolved_operand(f"expected an operand after '{self.operand.name} ='")
        self.operand.set(state, operand)

    def print(self, printer: Printer, state: PrintingState, op) -> None:
        self.operand.print(printer, state, op)


# endregion

# Address operands, typed by state space; mbar lives where the complete-tx is signalled.
_GLOBAL = PtrType(StateSpace.GLOBAL)
_SHARED_CTA = PtrType(StateSpace.SHARED_CTA)
_SHARED_CLUSTER = PtrType(StateSpace.SHARED_CLUSTER)


class BulkInstruction(PtxInstruction, ABC):
    """A bulk copy, reduce or prefetch: ``OPCODE.dst.src.completion{qualifiers}``."""

    OPCODE: ClassVar[str] = "cp.async.bulk"
    DIRECTION: ClassVar[tuple[StateSpace, ...]] = ()
    COMPLETION: ClassVar[str] = ""
    REQUIREMENT: ClassVar = _BASE
    custom_directives: ClassVar = (RequiredOperand,)

    def form(self) -> str:
        """The mnemonic up to the completion mechanism, e.g. ``cp.async.bulk.global.shared::cta.bulk_group``."""
        return mnemonic(self.OPCODE, *self.DIRECTION, self.COMPLETION)

    def verify_addresses(self) -> None:
        """Where known at compile time: ``dstMem`` and ``srcMem`` 16-byte aligned, with
        ``size`` bytes inside the ``ptx.alloc`` array they point into; ``mbar`` (an
        mbarrier object, .b64) 8-byte aligned with 8 bytes inside its array."""
        size = constant_int(getattr(self, "size", None))
        for field, n in ADDRESS_ALIGNMENT.items():
            value = getattr(self, field, None)
            if value is None:
                continue
            if field == "mbar":
                check_mbarrier_address(field, value)
            else:
                check_aligned(field, value, n)
                check_inside_array(f"'{field}' + 'size'", value, size)


# region cp.async.bulk

_COPY_SECTION = "9.7.9.25.4.1"


@op_definition
class CpAsyncBulkSharedCtaGlobalOp(BulkInstruction):
    """Copy ``size`` bytes from global memory into the executing CTA's shared memory,
    completing with complete-tx on the mbarrier ``mbar``.

    PTX: ``cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes{.L2::cache_hint}
    [dstMem], [srcMem], size, [mbar] {, cache-policy};``

    Example::

        ptx.cp.async.bulk.shared_cta.global %dst, %src, %size, %mbar
        ptx.cp.async.bulk.shared_cta.global cache_hint "L2::cache_hint" %dst, %src, %size, %mbar
            cachePolicy = %policy

    A ``.shared::cta`` destination needs PTX ISA 8.6 (sm_90).
    Spec: PTX ISA 9.7.9.25.4.1.
    """

    name = "ptx.cp.async.bulk.shared_cta.global"
    SPEC_SECTION: ClassVar = _COPY_SECTION
    DIRECTION: ClassVar = (StateSpace.SHARED_CTA, StateSpace.GLOBAL)
    COMPLETION: ClassVar = COMPLETE_TX
    REQUIREMENT: ClassVar = _SHARED_CTA_DST

    cache_hint = opt_prop_def(CacheHintAttr)
    dstMem = operand_def(_SHARED_CTA)
    srcMem = operand_def(_GLOBAL)
    size = operand_def(i32)
    mbar = operand_def(_SHARED_CTA)
    cachePolicy = opt_operand_def(i64)

    assembly_format = (
        "(`cache_hint` $cache_hint^)? $dstMem `,` $srcMem `,` $size `,` $mbar"
        " (`cachePolicy` `=` custom<RequiredOperand>($cachePolicy)^)? attr-dict"
    )

    def __init__(
        self,
        dst_mem: SSAValue,
        src_mem: SSAValue,
        size: SSAValue,
        mbar: SSAValue,
        *,
        cache_hint: CacheHint | None = None,
        cache_policy: SSAValue | None = None,
    ):
        super().__init__(
            operands=[dst_mem, src_mem, size, mbar, cache_policy],
            properties=_props(cache_hint=_cache_hint(cache_hint)),
        )

    def verify_(self) -> None:
        check_multiple_of_16("size", self.size)
        self.verify_addresses()
        check_cache_hint(self.cache_hint, self.cachePolicy)

    def ptx_mnemonic(self) -> str:
        return mnemonic(self.form(), _enum(self.cache_hint))

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [
            addr(reg(self.dstMem)),
            addr(reg(self.srcMem)),
            reg(self.size),
            addr(reg(self.mbar)),
            *_operand(self.cachePolicy, reg),
        ]


@op_definition
class CpAsyncBulkSharedClusterGlobalOp(BulkInstruction):
    """Copy ``size`` bytes from global memory into shared memory of the cluster
    (with ``.multicast::cluster``: of every CTA in ``ctaMask``, at the same CTA-relative
    offset), completing with complete-tx on the mbarrier ``mbar``.

    PTX: ``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.multicast::cluster}
    {.L2::cache_hint} [dstMem], [srcMem], size, [mbar] {, ctaMask} {, cache-policy};``

    Example::

        ptx.cp.async.bulk.shared_cluster.global multicast "multicast::cluster"
            %dst, %src, %size, %mbar ctaMask = %mask

    ``ctaMask`` is 16 bits (i16), ``cache-policy`` 64 bits (i64).
    Spec: PTX ISA 9.7.9.25.4.1.
    """

    name = "ptx.cp.async.bulk.shared_cluster.global"
    SPEC_SECTION: ClassVar = _COPY_SECTION
    DIRECTION: ClassVar = (StateSpace.SHARED_CLUSTER, StateSpace.GLOBAL)
    COMPLETION: ClassVar = COMPLETE_TX

    multicast = opt_prop_def(MulticastAttr)
    cache_hint = opt_prop_def(CacheHintAttr)
    dstMem = operand_def(_SHARED_CLUSTER)
    srcMem = operand_def(_GLOBAL)
    size = operand_def(i32)
    mbar = operand_def(_SHARED_CLUSTER)
    ctaMask = opt_operand_def(i16)
    cachePolicy = opt_operand_def(i64)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "(`multicast` $multicast^)? (`cache_hint` $cache_hint^)?"
        " $dstMem `,` $srcMem `,` $size `,` $mbar"
        " (`ctaMask` `=` custom<RequiredOperand>($ctaMask)^)? (`cachePolicy` `=` custom<RequiredOperand>($cachePolicy)^)? attr-dict"
    )

    def __init__(
        self,
        dst_mem: SSAValue,
        src_mem: SSAValue,
        size: SSAValue,
        mbar: SSAValue,
        *,
        multicast: Multicast | None = None,
        cta_mask: SSAValue | None = None,
        cache_hint: CacheHint | None = None,
        cache_policy: SSAValue | None = None,
    ):
        super().__init__(
            operands=[dst_mem, src_mem, size, mbar, cta_mask, cache_policy],
            properties=_props(
                multicast=MulticastAttr(multicast) if multicast is not None else None,
                cache_hint=_cache_hint(cache_hint),
            ),
        )

    def verify_(self) -> None:
        check_multiple_of_16("size", self.size)
        self.verify_addresses()
        check_paired(".multicast::cluster", self.multicast is not None, "ctaMask", self.ctaMask)
        check_cache_hint(self.cache_hint, self.cachePolicy)

    def ptx_mnemonic(self) -> str:
        return mnemonic(self.form(), _enum(self.multicast), _enum(self.cache_hint))

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [
            addr(reg(self.dstMem)),
            addr(reg(self.srcMem)),
            reg(self.size),
            addr(reg(self.mbar)),
            *_operand(self.ctaMask, reg),
            *_operand(self.cachePolicy, reg),
        ]


@op_definition
class CpAsyncBulkSharedClusterSharedCtaOp(BulkInstruction):
    """Copy ``size`` bytes from the executing CTA's shared memory into the shared memory
    of another CTA of the cluster, completing with complete-tx on that CTA's ``mbar``.

    PTX: ``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes
    [dstMem], [srcMem], size, [mbar];``

    Example::

        ptx.cp.async.bulk.shared_cluster.shared_cta %dst, %src, %size, %mbar

    Spec: PTX ISA 9.7.9.25.4.1.
    """

    name = "ptx.cp.async.bulk.shared_cluster.shared_cta"
    SPEC_SECTION: ClassVar = _COPY_SECTION
    DIRECTION: ClassVar = (StateSpace.SHARED_CLUSTER, StateSpace.SHARED_CTA)
    COMPLETION: ClassVar = COMPLETE_TX

    dstMem = operand_def(_SHARED_CLUSTER)
    srcMem = operand_def(_SHARED_CTA)
    size = operand_def(i32)
    mbar = operand_def(_SHARED_CLUSTER)

    assembly_format = "$dstMem `,` $srcMem `,` $size `,` $mbar attr-dict"

    def __init__(self, dst_mem: SSAValue, src_mem: SSAValue, size: SSAValue, mbar: SSAValue):
        super().__init__(operands=[dst_mem, src_mem, size, mbar])

    def verify_(self) -> None:
        check_multiple_of_16("size", self.size)
        self.verify_addresses()

    def ptx_mnemonic(self) -> str:
        return self.form()

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [
            addr(reg(self.dstMem)),
            addr(reg(self.srcMem)),
            reg(self.size),
            addr(reg(self.mbar)),
        ]


@op_definition
class CpAsyncBulkGlobalSharedCtaOp(BulkInstruction):
    """Copy ``size`` bytes from the executing CTA's shared memory to global memory
    (with ``.cp_mask``: only the bytes of each 16-byte chunk whose bit is set in
    ``byteMask``), completing through the bulk async-group.

    PTX: ``cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}{.cp_mask}
    [dstMem], [srcMem], size {, cache-policy} {, byteMask};``

    Example::

        ptx.cp.async.bulk.global.shared_cta %dst, %src, %size
        ptx.cp.async.bulk.global.shared_cta cp_mask %dst, %src, %size byteMask = %mask

    ``.cp_mask`` needs sm_100 and PTX ISA 8.6; ``byteMask`` is 16 bits (i16).
    Spec: PTX ISA 9.7.9.25.4.1.
    """

    name = "ptx.cp.async.bulk.global.shared_cta"
    SPEC_SECTION: ClassVar = _COPY_SECTION
    DIRECTION: ClassVar = (StateSpace.GLOBAL, StateSpace.SHARED_CTA)
    COMPLETION: ClassVar = BULK_GROUP

    cache_hint = opt_prop_def(CacheHintAttr)
    cp_mask = opt_prop_def(UnitAttr)
    dstMem = operand_def(_GLOBAL)
    srcMem = operand_def(_SHARED_CTA)
    size = operand_def(i32)
    cachePolicy = opt_operand_def(i64)
    byteMask = opt_operand_def(i16)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "(`cache_hint` $cache_hint^)? (`cp_mask` $cp_mask^)? $dstMem `,` $srcMem `,` $size"
        " (`cachePolicy` `=` custom<RequiredOperand>($cachePolicy)^)? (`byteMask` `=` custom<RequiredOperand>($byteMask)^)? attr-dict"
    )

    def __init__(
        self,
        dst_mem: SSAValue,
        src_mem: SSAValue,
        size: SSAValue,
        *,
        cache_hint: CacheHint | None = None,
        cache_policy: SSAValue | None = None,
        cp_mask: bool = False,
        byte_mask: SSAValue | None = None,
    ):
        super().__init__(
            operands=[dst_mem, src_mem, size, cache_policy, byte_mask],
            properties=_props(cache_hint=_cache_hint(cache_hint), cp_mask=_unit(cp_mask)),
        )

    def verify_(self) -> None:
        check_multiple_of_16("size", self.size)
        self.verify_addresses()
        check_cache_hint(self.cache_hint, self.cachePolicy)
        check_paired(".cp_mask", self.cp_mask is not None, "byteMask", self.byteMask)

    def requirement(self) -> Requirement:
        if self.cp_mask is not None:
            return self.REQUIREMENT.combine(_CP_MASK)
        return self.REQUIREMENT

    def ptx_mnemonic(self) -> str:
        return mnemonic(self.form(), _enum(self.cache_hint), _flag(self.cp_mask, "cp_mask"))

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [
            addr(reg(self.dstMem)),
            addr(reg(self.srcMem)),
            reg(self.size),
            *_operand(self.cachePolicy, reg),
            *_operand(self.byteMask, reg),
        ]


@op_definition
class CpAsyncBulkPrefetchL2GlobalOp(BulkInstruction):
    """Hint that ``size`` bytes of global memory at ``srcMem`` be prefetched into L2.

    PTX: ``cp.async.bulk.prefetch.L2.global{.L2::cache_hint} [srcMem], size {, cache-policy};``

    Example::

        ptx.cp.async.bulk.prefetch.L2.global %src, %size
        ptx.cp.async.bulk.prefetch.L2.global cache_hint "L2::cache_hint" %src, %size
            cachePolicy = %policy

    Spec: PTX ISA 9.7.9.25.4.3.
    """

    name = "ptx.cp.async.bulk.prefetch.L2.global"
    SPEC_SECTION: ClassVar = "9.7.9.25.4.3"
    OPCODE: ClassVar = "cp.async.bulk.prefetch.L2"
    DIRECTION: ClassVar = (StateSpace.GLOBAL,)

    cache_hint = opt_prop_def(CacheHintAttr)
    srcMem = operand_def(_GLOBAL)
    size = operand_def(i32)
    cachePolicy = opt_operand_def(i64)

    assembly_format = "(`cache_hint` $cache_hint^)? $srcMem `,` $size (`cachePolicy` `=` custom<RequiredOperand>($cachePolicy)^)? attr-dict"

    def __init__(
        self,
        src_mem: SSAValue,
        size: SSAValue,
        *,
        cache_hint: CacheHint | None = None,
        cache_policy: SSAValue | None = None,
    ):
        super().__init__(
            operands=[src_mem, size, cache_policy],
            properties=_props(cache_hint=_cache_hint(cache_hint)),
        )

    def verify_(self) -> None:
        check_multiple_of_16("size", self.size)
        self.verify_addresses()
        check_cache_hint(self.cache_hint, self.cachePolicy)

    def ptx_mnemonic(self) -> str:
        return mnemonic(self.form(), _enum(self.cache_hint))

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [addr(reg(self.srcMem)), reg(self.size), *_operand(self.cachePolicy, reg)]


# endregion

# region cp.reduce.async.bulk

_REDUCE_SECTION = "9.7.9.25.4.2"


class CpReduceAsyncBulkOp(BulkInstruction, ABC):
    """Both forms of cp.reduce.async.bulk: ``.redOp{.noftz}.type`` after the form."""

    OPCODE: ClassVar = "cp.reduce.async.bulk"

    redOp = prop_def(BulkRedOpAttr)
    noftz = opt_prop_def(UnitAttr)
    type = prop_def(BulkRedTypeAttr)

    def reduction(self) -> list[str | None]:
        return [str(self.redOp.data), _flag(self.noftz, "noftz"), str(self.type.data)]

    def verify_reduction(self) -> None:
        check_reduce(self.DIRECTION[0], self.redOp.data, self.type.data, self.noftz is not None)


@op_definition
class CpReduceAsyncBulkSharedClusterSharedCtaOp(CpReduceAsyncBulkOp):
    """Reduce ``size`` bytes of elements from the executing CTA's shared memory into the
    shared memory of a CTA of the cluster, completing with complete-tx on ``mbar``.

    PTX: ``cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.redOp.type
    [dstMem], [srcMem], size, [mbar];``

    Example::

        ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u64 %dst, %src, %size, %mbar

    Valid ``.redOp``/``.type`` (the spec's table): add u32/s32/u64, min/max u32/s32,
    inc/dec u32, and/or/xor b32.
    Spec: PTX ISA 9.7.9.25.4.2.
    """

    name = "ptx.cp.reduce.async.bulk.shared_cluster.shared_cta"
    SPEC_SECTION: ClassVar = _REDUCE_SECTION
    DIRECTION: ClassVar = (StateSpace.SHARED_CLUSTER, StateSpace.SHARED_CTA)
    COMPLETION: ClassVar = COMPLETE_TX

    dstMem = operand_def(_SHARED_CLUSTER)
    srcMem = operand_def(_SHARED_CTA)
    size = operand_def(i32)
    mbar = operand_def(_SHARED_CLUSTER)

    assembly_format = (
        "$redOp (`noftz` $noftz^)? $type $dstMem `,` $srcMem `,` $size `,` $mbar attr-dict"
    )

    def __init__(
        self,
        red_op: BulkRedOp,
        type: BulkRedType,
        dst_mem: SSAValue,
        src_mem: SSAValue,
        size: SSAValue,
        mbar: SSAValue,
        *,
        noftz: bool = False,
    ):
        super().__init__(
            operands=[dst_mem, src_mem, size, mbar],
            properties=_props(
                redOp=BulkRedOpAttr(red_op), type=BulkRedTypeAttr(type), noftz=_unit(noftz)
            ),
        )

    def verify_(self) -> None:
        self.verify_reduction()
        check_multiple_of_16("size", self.size)
        self.verify_addresses()

    def ptx_mnemonic(self) -> str:
        return mnemonic(self.form(), *self.reduction())

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [
            addr(reg(self.dstMem)),
            addr(reg(self.srcMem)),
            reg(self.size),
            addr(reg(self.mbar)),
        ]


@op_definition
class CpReduceAsyncBulkGlobalSharedCtaOp(CpReduceAsyncBulkOp):
    """Reduce ``size`` bytes of elements from the executing CTA's shared memory into
    global memory, each element with ``.relaxed.gpu`` semantics, completing through the
    bulk async-group.

    PTX: ``cp.reduce.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}.redOp{.noftz}.type
    [dstMem], [srcMem], size {, cache-policy};``

    Example::

        ptx.cp.reduce.async.bulk.global.shared_cta add f32 %dst, %src, %size
        ptx.cp.reduce.async.bulk.global.shared_cta add noftz bf16 %dst, %src, %size

    Valid ``.redOp``/``.type`` (the spec's table): add u32/s32/u64/f32/f64/f16/bf16
    (``.noftz`` required for f16/bf16), min/max u32/s32/u64/s64/f16/bf16, inc/dec u32,
    and/or/xor b32/b64.
    Spec: PTX ISA 9.7.9.25.4.2.
    """

    name = "ptx.cp.reduce.async.bulk.global.shared_cta"
    SPEC_SECTION: ClassVar = _REDUCE_SECTION
    DIRECTION: ClassVar = (StateSpace.GLOBAL, StateSpace.SHARED_CTA)
    COMPLETION: ClassVar = BULK_GROUP

    cache_hint = opt_prop_def(CacheHintAttr)
    dstMem = operand_def(_GLOBAL)
    srcMem = operand_def(_SHARED_CTA)
    size = operand_def(i32)
    cachePolicy = opt_operand_def(i64)

    assembly_format = (
        "(`cache_hint` $cache_hint^)? $redOp (`noftz` $noftz^)? $type $dstMem `,` $srcMem `,` $size"
        " (`cachePolicy` `=` custom<RequiredOperand>($cachePolicy)^)? attr-dict"
    )

    def __init__(
        self,
        red_op: BulkRedOp,
        type: BulkRedType,
        dst_mem: SSAValue,
        src_mem: SSAValue,
        size: SSAValue,
        *,
        noftz: bool = False,
        cache_hint: CacheHint | None = None,
        cache_policy: SSAValue | None = None,
    ):
        super().__init__(
            operands=[dst_mem, src_mem, size, cache_policy],
            properties=_props(
                redOp=BulkRedOpAttr(red_op),
                type=BulkRedTypeAttr(type),
                noftz=_unit(noftz),
                cache_hint=_cache_hint(cache_hint),
            ),
        )

    def verify_(self) -> None:
        self.verify_reduction()
        check_multiple_of_16("size", self.size)
        self.verify_addresses()
        check_cache_hint(self.cache_hint, self.cachePolicy)

    def ptx_mnemonic(self) -> str:
        return mnemonic(self.form(), _enum(self.cache_hint), *self.reduction())

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [
            addr(reg(self.dstMem)),
            addr(reg(self.srcMem)),
            reg(self.size),
            *_operand(self.cachePolicy, reg),
        ]


# endregion


BULK_OPS = [
    CpAsyncBulkSharedCtaGlobalOp,
    CpAsyncBulkSharedClusterGlobalOp,
    CpAsyncBulkSharedClusterSharedCtaOp,
    CpAsyncBulkGlobalSharedCtaOp,
    CpAsyncBulkPrefetchL2GlobalOp,
    CpReduceAsyncBulkSharedClusterSharedCtaOp,
    CpReduceAsyncBulkGlobalSharedCtaOp,
]
BULK_ATTRS = [BulkRedOpAttr, BulkRedTypeAttr, CacheHintAttr, MulticastAttr]
