"""Data movement for the backend lowering (PTX ISA 9.7.9): ``ld``, ``st`` (and their
vector forms ``ld.vec``, ``st.vec``), ``cvta``, ``mov`` of immediates, addresses and
registers, address arithmetic, and the ``.shared`` / ``.local`` array declarations
that ``memref.alloca`` becomes.

Addresses are ``!ptx.ptr<space>`` values (base.py): 64-bit for global and local,
32-bit for shared memory. ``ld``/``st`` take an optional constant byte ``offset``
(``[%rd1+16]``) so that constant indices cost no instruction.

Register-class rules of ``ld``/``st``/``mov`` are those ptxas applies to declared
register types (PTX ISA 5.2.2, "operand size exceeding instruction-type size"): a
bit-size type (``.b32``) accepts any register at least that wide (``mov``: exactly as
wide); ``.u``/``.s`` types accept only ``.b`` registers at least that wide (``ld``/``st``)
or exactly as wide (``mov``); ``.f32``/``.f64`` accept a ``.b`` register at least that
wide or a float register of that width.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Operation, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    BaseAttr,
    VarConstraint,
    irdl_attr_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.ptx.addresses import AddressOf, ArrayDeclaration, known_alignment
from bulkred_dialect.ops.ptx.base import (
    integer_attr,
    PtrType,
    PtxInstruction,
    RegisterNamer,
    StateSpace,
    addr,
    bf16,
    expect_ptr,
    f16,
    f32,
    f32x2,
    f64,
    i1,
    i16,
    i32,
    i64,
    constant_int,
    mnemonic,
    register_class,
)
from bulkred_dialect.ops.target import Requirement, Target, max_static_shared, static_shared_hint

_BASIC = Requirement(sm=50, ptx=(6, 0))

# region Types and register-class rules


class LdStType(StrEnum):
    """``.type`` of ld and st (PTX ISA 9.7.9.8, 9.7.9.10)."""

    B8 = "b8"
    B16 = "b16"
    B32 = "b32"
    B64 = "b64"
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    S8 = "s8"
    S16 = "s16"
    S32 = "s32"
    S64 = "s64"
    F32 = "f32"
    F64 = "f64"


@irdl_attr_definition
class LdStTypeAttr(EnumAttribute[LdStType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.ldst_type"


def _register_of(t: Attribute) -> tuple[str, int] | None:
    """(kind 'b', 'f' or 'pred', width) of the register holding IR type ``t``; None if none."""
    try:
        decl, _ = register_class(t)
    except VerifyException:
        return None
    if decl == ".pred":
        return "pred", 1
    return decl[1], int(decl[2:])


def register_fits(ptx_type: str, t: Attribute, *, exact: bool) -> bool:
    """Whether a register of IR type ``t`` may be the data operand of an instruction of
    ``ptx_type`` (``b32``, ``u8``, ``f32``...). ``exact``: the register must be exactly as
    wide as the type (selp, setp); otherwise wider registers are accepted (ld, st)."""
    reg = _register_of(t)
    if reg is None or reg[0] == "pred":
        return False
    kind, width = reg
    tkind, twidth = ("f", 16) if ptx_type == "bf16" else (ptx_type[0], int(ptx_type[1:]))
    wide_enough = width == twidth if exact else width >= twidth
    if tkind == "b":
        return wide_enough
    if tkind in "us":
        return kind == "b" and wide_enough
    # f16, bf16, f32, f64: a float register of that width or a .b register
    return (kind == "b" and wide_enough) or (kind == "f" and width == twidth)


def ldst_type_for(t: Attribute) -> LdStType | None:
    """The ld/st ``.type`` that moves a value of IR type ``t`` whole."""
    if t == f32:
        return LdStType.F32
    if t == f64:
        return LdStType.F64
    if t in (f16, bf16, i16):
        return LdStType.B16
    if t == i32:
        return LdStType.B32
    if t in (i64, f32x2) or (isinstance(t, PtrType) and t.bits == 64):
        return LdStType.B64
    if isinstance(t, PtrType):
        return LdStType.B32
    if t == IntegerType(8):
        return LdStType.U8
    return None


# endregion

# region ld / st

LDST_SPACES = (StateSpace.GLOBAL, StateSpace.SHARED_CTA, StateSpace.SHARED_CLUSTER, StateSpace.LOCAL)


def _space_requirement(space: StateSpace) -> Requirement:
    if space == StateSpace.SHARED_CLUSTER:
        return Requirement(sm=90, ptx=(7, 8))
    if space == StateSpace.SHARED_CTA:
        return Requirement(sm=50, ptx=(7, 8))
    return _BASIC


def _offset_text(base: str, offset: IntegerAttr | None) -> str:
    if offset is None or offset.value.data == 0:
        return addr(base)
    # PTX spells a negative offset `[%rd1+-8]`; `[%rd1-8]` is a syntax error.
    return addr(f"{base}+{offset.value.data}")


def _verify_offset(offset: IntegerAttr | None) -> None:
    if offset is not None and not -(2**31) <= offset.value.data < 2**31:
        raise VerifyException(f"'offset' must fit in 32 bits, got {offset.value.data}")


def _offset_prop(offset: int) -> dict[str, Attribute]:
    return {"offset": integer_attr(offset, 64)} if offset else {}


@op_definition
class LdOp(PtxInstruction):
    """Load a value from ``addr + offset`` in the address's state space.

    PTX: ``ld.space.type d, [a+offset];`` (space: global, shared::cta, shared::cluster, local).

    Example: ``%v = ptx.ld f32 %p offset 16 : !ptx.ptr<global> -> f32`` is
    ``ld.global.f32 %f1, [%rd1+16];``. Spec: PTX ISA 9.7.9.8.
    """

    name = "ptx.ld"
    SPEC_SECTION: ClassVar = "9.7.9.8"

    type = prop_def(LdStTypeAttr)
    offset = opt_prop_def(IntegerAttr[I64])
    address = operand_def(PtrType)
    result = result_def()

    assembly_format = "$type $address (`offset` $offset^)? attr-dict `:` type($address) `->` type($result)"

    def __init__(self, type: LdStType, address: SSAValue, result_type: Attribute, offset: int = 0):
        super().__init__(
            operands=[address],
            result_types=[result_type],
            properties={"type": LdStTypeAttr(type), **_offset_prop(offset)},
        )

    @property
    def space(self) -> StateSpace:
        assert isinstance(self.address.type, PtrType)
        return self.address.type.state_space

    def verify_(self) -> None:
        expect_ptr("a", self.address, LDST_SPACES)
        _verify_offset(self.offset)
        t = self.type.data
        if not register_fits(t, self.result.type, exact=False):
            raise VerifyException(f"result 'd' of type {self.result.type} cannot hold '.type' {t}")

    def requirement(self) -> Requirement:
        return _space_requirement(self.space)

    def ptx_mnemonic(self) -> str:
        return mnemonic("ld", self.space, self.type.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), _offset_text(reg(self.address), self.offset)]


@op_definition
class StOp(PtxInstruction):
    """Store ``value`` to ``addr + offset`` in the address's state space.

    PTX: ``st.space.type [a+offset], b;`` (space: global, shared::cta, shared::cluster, local).

    Example: ``ptx.st f32 %p offset 4, %v : !ptx.ptr<local>, f32`` is
    ``st.local.f32 [%rd1+4], %f1;``. Spec: PTX ISA 9.7.9.10.
    """

    name = "ptx.st"
    SPEC_SECTION: ClassVar = "9.7.9.10"

    type = prop_def(LdStTypeAttr)
    offset = opt_prop_def(IntegerAttr[I64])
    address = operand_def(PtrType)
    value = operand_def()

    assembly_format = (
        "$type $address (`offset` $offset^)? `,` $value attr-dict `:` type($address) `,` type($value)"
    )

    def __init__(self, type: LdStType, address: SSAValue, value: SSAValue, offset: int = 0):
        super().__init__(
            operands=[address, value],
            properties={"type": LdStTypeAttr(type), **_offset_prop(offset)},
        )

    @property
    def space(self) -> StateSpace:
        assert isinstance(self.address.type, PtrType)
        return self.address.type.state_space

    def verify_(self) -> None:
        expect_ptr("a", self.address, LDST_SPACES)
        _verify_offset(self.offset)
        t = self.type.data
        if not register_fits(t, self.value.type, exact=False):
            raise VerifyException(f"operand 'b' of type {self.value.type} cannot hold '.type' {t}")

    def requirement(self) -> Requirement:
        return _space_requirement(self.space)

    def ptx_mnemonic(self) -> str:
        return mnemonic("st", self.space, self.type.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [_offset_text(reg(self.address), self.offset), reg(self.value)]


@op_definition
class LdParamOp(PtxInstruction):
    """Load a kernel parameter by its symbol.

    PTX: ``ld.param.type d, [param];``

    Example: ``%p = ptx.ld.param u64 @k_param_0 : i64`` is ``ld.param.u64 %rd1, [k_param_0];``.
    The printer emits these at a kernel's entry for each argument. Spec: PTX ISA 9.7.9.8.
    """

    name = "ptx.ld.param"
    SPEC_SECTION: ClassVar = "9.7.9.8"
    REQUIREMENT: ClassVar = _BASIC

    type = prop_def(LdStTypeAttr)
    param = prop_def(SymbolRefAttr)
    result = result_def()

    assembly_format = "$type $param attr-dict `:` type($result)"

    def __init__(self, type: LdStType, param: str, result_type: Attribute):
        super().__init__(
            result_types=[result_type],
            properties={"type": LdStTypeAttr(type), "param": SymbolRefAttr(param)},
        )

    def verify_(self) -> None:
        t = self.type.data
        if not register_fits(t, self.result.type, exact=False):
            raise VerifyException(f"result 'd' of type {self.result.type} cannot hold '.type' {t}")

    def ptx_mnemonic(self) -> str:
        return mnemonic("ld", "param", self.type.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), addr(self.param.string_value())]


# endregion

# region ld / st vector (ld.vec, st.vec)

# The most bits one vector ld or st moves: 128, or 256 from or to .global on sm_100 and later
# (PTX ISA 8.8, "256 bit wide load/store": .v8 of 32-bit types, .v4 of 64-bit types).
LD_VEC_MAX_BITS = 128
LD_VEC_WIDE_BITS = 256
LD_VEC_COUNTS = (2, 4, 8)
_LD_VEC_WIDE = Requirement(sm=100, ptx=(8, 8))


def ldst_bits(t: LdStType) -> int:
    return int(str(t)[1:])


def vector_operand(reg: RegisterNamer, values: Iterable[SSAValue]) -> str:
    """A PTX vector operand: ``{%f1, %f2, %f3, %f4}``."""
    return "{" + ", ".join(reg(v) for v in values) + "}"


@op_definition
class LdVecOp(PtxInstruction):
    """Load ``count`` (2, 4 or 8) consecutive elements of ``.type`` from ``addr + offset``
    into as many registers in one access; with ``nc``, through the non-coherent
    (read-only) cache, for data no thread writes while the kernel runs.

    PTX: ``ld.space{.nc}.v2|.v4|.v8.type {d0, d1, ...}, [a+offset];`` (space: global,
    shared::cta, shared::cluster, local; ``.nc`` only with global).

    Every result has one type, a register that can hold ``.type`` (as for ``ptx.ld``);
    ``count`` x the size of ``.type`` is at most 128 bits, or 256 bits from global memory
    on sm_100 (``.v8`` of a 32-bit type, ``.v4`` of a 64-bit type; PTX ISA 8.8), whose
    registers must then be exactly as wide as ``.type``; a known address must be aligned
    to that whole size. The op's ``results`` are the loaded
    elements in order.

    Example::

        %x:4 = ptx.ld.vec nc f32 %p offset 16 : !ptx.ptr<global> -> f32, f32, f32, f32

    is ``ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16];``. Needs what ``ld`` of
    the space needs (``.nc``: sm_32); 256 bits sm_100 and PTX ISA 8.8. Spec: PTX ISA 9.7.9.8 (ld), 9.7.9.9 (ld.global.nc).
    """

    name = "ptx.ld.vec"
    SPEC_SECTION: ClassVar = "9.7.9.8"

    type = prop_def(LdStTypeAttr)
    offset = opt_prop_def(IntegerAttr[I64])
    nc = opt_prop_def(UnitAttr)
    address = operand_def(PtrType)
    d = var_result_def()

    assembly_format = (
        "(`nc` $nc^)? $type $address (`offset` $offset^)? attr-dict `:` type($address) `->` type($d)"
    )

    def __init__(
        self,
        type: LdStType,
        address: SSAValue,
        result_type: Attribute,
        count: int,
        offset: int = 0,
        nc: bool = False,
    ):
        props: dict[str, Attribute] = {"type": LdStTypeAttr(type), **_offset_prop(offset)}
        if nc:
            props["nc"] = UnitAttr()
        super().__init__(operands=[address], result_types=[[result_type] * count], properties=props)

    @property
    def space(self) -> StateSpace:
        assert isinstance(self.address.type, PtrType)
        return self.address.type.state_space

    @property
    def count(self) -> int:
        return len(self.d)

    def verify_(self) -> None:
        expect_ptr("a", self.address, LDST_SPACES)
        _verify_offset(self.offset)
        if self.nc is not None and self.space != StateSpace.GLOBAL:
            raise VerifyException(f"'.nc' is only valid with '.space' global, got '.space' {self.space}")
        _verify_vector(self.address, self.offset, self.type.data, self.d, "load", "result", "d")

    def requirement(self) -> Requirement:
        return _vector_requirement(self.space, self.count, self.type.data)

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            "ld", self.space, "nc" if self.nc is not None else None, f"v{self.count}", self.type.data
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [vector_operand(reg, self.d), _offset_text(reg(self.address), self.offset)]


@op_definition
class StVecOp(PtxInstruction):
    """Store ``count`` (2, 4 or 8) values as consecutive elements of ``.type`` to
    ``addr + offset`` in one access: the store twin of ``ptx.ld.vec``.

    PTX: ``st.space.v2|.v4|.v8.type [a+offset], {b0, b1, ...};`` (space: global,
    shared::cta, shared::cluster, local).

    Every value has one type, a register that can hold ``.type`` (as for ``ptx.st``);
    ``count`` x the size of ``.type`` is at most 128 bits, or 256 bits to global memory
    on sm_100 (``.v8`` of a 32-bit type, ``.v4`` of a 64-bit type; PTX ISA 8.8), whose
    registers must then be exactly as wide as ``.type``; a known address must be aligned
    to that whole size. ``values`` are the elements in order.

    Example::

        ptx.st.vec f32 %p offset 16, %x0, %x1, %x2, %x3 : !ptx.ptr<global>, f32, f32, f32, f32

    is ``st.global.v4.f32 [%rd1+16], {%f1, %f2, %f3, %f4};``. Needs what ``st`` of the
    space needs; 256 bits sm_100 and PTX ISA 8.8. Spec: PTX ISA 9.7.9.10.
    """

    name = "ptx.st.vec"
    SPEC_SECTION: ClassVar = "9.7.9.10"

    type = prop_def(LdStTypeAttr)
    offset = opt_prop_def(IntegerAttr[I64])
    address = operand_def(PtrType)
    values = var_operand_def()

    assembly_format = (
        "$type $address (`offset` $offset^)? `,` $values attr-dict `:` type($address) `,` type($values)"
    )

    def __init__(self, type: LdStType, address: SSAValue, values: Sequence[SSAValue], offset: int = 0):
        super().__init__(
            operands=[address, list(values)],
            properties={"type": LdStTypeAttr(type), **_offset_prop(offset)},
        )

    @property
    def space(self) -> StateSpace:
        assert isinstance(self.address.type, PtrType)
        return self.address.type.state_space

    @property
    def count(self) -> int:
        return len(self.values)

    def verify_(self) -> None:
        expect_ptr("a", self.address, LDST_SPACES)
        _verify_offset(self.offset)
        _verify_vector(self.address, self.offset, self.type.data, self.values, "store", "operand", "b")

    def requirement(self) -> Requirement:
        return _vector_requirement(self.space, self.count, self.type.data)

    def ptx_mnemonic(self) -> str:
        return mnemonic("st", self.space, f"v{self.count}", self.type.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [_offset_text(reg(self.address), self.offset), vector_operand(reg, self.values)]


def _verify_vector(
    address: SSAValue, offset: IntegerAttr | None, t: LdStType, regs: Sequence[SSAValue],
    access: str, role: str, name: str,
) -> None:
    """The rules ``ld.vec`` and ``st.vec`` share, on the registers ``regs`` (the results
    ``d`` of a load, the operands ``b`` of a store): 2, 4 or 8 of one type that can hold
    ``.type``; at most 128 bits, or 256 to/from global with ``.v8`` only of 32-bit types
    and registers exactly as wide; a known address aligned to the whole vector."""
    n = len(regs)
    if n not in LD_VEC_COUNTS:
        what = "results" if role == "result" else f"operands '{name}'"
        raise VerifyException(f"'.vec' must have 2, 4 or 8 elements ({what}), got {n}")
    space = address.type.state_space  # type: ignore[attr-defined]
    bits = n * ldst_bits(t)
    limit = LD_VEC_WIDE_BITS if space == StateSpace.GLOBAL else LD_VEC_MAX_BITS
    if bits > limit:
        where = "from" if access == "load" else "to"
        raise VerifyException(
            f"'.v{n}.{t}' is {bits} bits, more than the {limit} bits of one vector {access} "
            f"{where} '.space' {space}"
        )
    if n == 8 and ldst_bits(t) != 32:
        raise VerifyException(f"'.v8' needs a 32-bit '.type' (b32, u32, s32, f32), got {t}")
    first = regs[0].type
    for i, r in enumerate(regs):
        if r.type != first:
            raise VerifyException(f"{role} '{name}{i}' must be {first} like '{name}0', got {r.type}")
    if not register_fits(t, first, exact=False):
        raise VerifyException(f"{role}s '{name}' of type {first} cannot hold '.type' {t}")
    reg = _register_of(first)
    if bits > LD_VEC_MAX_BITS and reg is not None and reg[1] != ldst_bits(t):
        # ptxas (nvJitLink 13) accepts wider registers here but now and then crashes on them
        raise VerifyException(f"a {bits}-bit {access} needs {role}s '{name}' as wide as '.type' {t}, got {first}")
    _check_vector_alignment(address, offset, bits // 8)


def _vector_requirement(space: StateSpace, count: int, t: LdStType) -> Requirement:
    req = _space_requirement(space)
    return req.combine(_LD_VEC_WIDE) if count * ldst_bits(t) > LD_VEC_MAX_BITS else req


def _check_vector_alignment(address: SSAValue, offset: IntegerAttr | None, nbytes: int) -> None:
    """A known ``address + offset`` must be a multiple of the vector's size (PTX ISA,
    Addresses as Operands: "naturally aligned to a multiple of the access size")."""
    a = known_alignment(address)
    if a is None:
        return
    off = 0 if offset is None else offset.value.data
    if off:
        a = min(a, off & -off)
    if a % nbytes != 0:
        raise VerifyException(f"'a' + 'offset' must be {nbytes}-byte aligned, known alignment {a}")


# endregion


# region Addresses


@op_definition
class CvtaToGlobalOp(PtxInstruction, AddressOf):
    """Convert a generic address (a kernel's pointer parameter) to a global one.

    PTX: ``cvta.to.global.u64 d, a;``

    Example: ``%g = ptx.cvta.to.global %a : i64`` (result ``!ptx.ptr<global>``).
    Spec: PTX ISA 9.7.9.16.
    """

    name = "ptx.cvta.to.global"
    SPEC_SECTION: ClassVar = "9.7.9.16"
    REQUIREMENT: ClassVar = _BASIC

    src = operand_def()
    result = result_def(PtrType(StateSpace.GLOBAL))

    assembly_format = "$src attr-dict `:` type($src)"

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src], result_types=[PtrType(StateSpace.GLOBAL)])

    def verify_(self) -> None:
        if self.src.type != i64 and self.src.type != PtrType(StateSpace.GENERIC):
            raise VerifyException(
                f"operand 'a' must be i64 or !ptx.ptr<generic>, got {self.src.type}"
            )

    def ptx_mnemonic(self) -> str:
        return "cvta.to.global.u64"

    def address_source(self) -> tuple[SSAValue, int]:
        return self.src, 0

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.src)]


@op_definition
class PtrAddOp(PtxInstruction, AddressOf):
    """Offset an address by a byte count (PTX has no pointer type: an integer add on the
    address register).

    PTX: ``add.u64 d, a, b;`` (global, local, generic) or ``add.u32 d, a, b;`` (shared).

    Example: ``%q = ptx.add.ptr %p, %off : !ptx.ptr<global>, i64``. Spec: PTX ISA 9.7.1.1.
    """

    name = "ptx.add.ptr"
    SPEC_SECTION: ClassVar = "9.7.1.1"
    REQUIREMENT: ClassVar = _BASIC

    T: ClassVar = VarConstraint("T", BaseAttr(PtrType))

    base = operand_def(T)
    offset = operand_def(IntegerType)
    result = result_def(T)

    assembly_format = "$base `,` $offset attr-dict `:` type($base) `,` type($offset)"

    def __init__(self, base: SSAValue, offset: SSAValue):
        super().__init__(operands=[base, offset], result_types=[base.type])

    def verify_(self) -> None:
        assert isinstance(self.base.type, PtrType)
        bits = self.base.type.bits
        want = IntegerType(bits)
        if self.offset.type != want:
            raise VerifyException(
                f"operand 'b' must be {want} for a {bits}-bit address {self.base.type}, got {self.offset.type}"
            )
        if self.result.type != self.base.type:
            raise VerifyException(f"result 'd' must be {self.base.type}, got {self.result.type}")

    def ptx_mnemonic(self) -> str:
        assert isinstance(self.base.type, PtrType)
        return f"add.u{self.base.type.bits}"

    def address_source(self) -> tuple[SSAValue, int | None]:
        return self.base, constant_int(self.offset)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.base), reg(self.offset)]


# endregion

# region Declarations and mov


class AllocSpace(StrEnum):
    """State space of an array declaration, spelled as the directive (``.shared``, ``.local``)."""

    SHARED = "shared"
    LOCAL = "local"

    @property
    def state_space(self) -> StateSpace:
        """The space of the array's address (``!ptx.ptr<shared::cta>`` or ``!ptx.ptr<local>``)."""
        return StateSpace.SHARED_CTA if self == AllocSpace.SHARED else StateSpace.LOCAL


@irdl_attr_definition
class AllocSpaceAttr(EnumAttribute[AllocSpace], SpacedOpaqueSyntaxAttribute):
    name = "ptx.alloc_space"


_DECL_SPACES = (StateSpace.SHARED_CTA, StateSpace.LOCAL)

# The largest `.align` of an array declaration that ptxas (nvJitLink 13.5) assembles, used
# or not, in .shared and .local: from 2**24 an unused .local array crashes ptxas
# (segmentation fault), 2**30 on a .shared array does not finish, and 2**32 is "Constant
# overflow". docs/differential.md, "Array declarations".
MAX_ALIGN = 1 << 23

# The most bytes of a .local array: a thread's local memory is at most 512 KiB (CUDA
# Programming Guide, "Technical Specifications per Compute Capability"), which ptxas does
# not check. .shared arrays: max_static_shared, per target, for all arrays of a kernel.
MAX_LOCAL_BYTES = 512 * 1024


@op_definition
class AllocOp(PtxInstruction, ArrayDeclaration):
    """Declare a byte array in ``.shared`` or ``.local`` memory (what ``memref.alloca``
    of shared or local scope becomes); ``ptx.mov.addr`` takes its address.

    PTX: ``.shared .align 16 .b8 name[size];`` / ``.local .align 16 .b8 name[size];``
    The printer places the declarations at the top of the kernel body.

    Example: ``ptx.alloc local @buf0 size 128 align 16``. Spec: PTX ISA 5.1.5, 5.1.7, 5.4.
    """

    name = "ptx.alloc"
    SPEC_SECTION: ClassVar = "5.4"
    REQUIREMENT: ClassVar = _BASIC

    space = prop_def(AllocSpaceAttr)
    sym_name = prop_def(SymbolRefAttr)
    size = prop_def(IntegerAttr[I64])
    alignment = prop_def(IntegerAttr[I64], prop_name="align")

    assembly_format = "$space $sym_name `size` $size `align` $align attr-dict"

    def __init__(self, name: str, space: AllocSpace, size: int, align: int = 16):
        super().__init__(
            properties={
                "space": AllocSpaceAttr(space),
                "sym_name": SymbolRefAttr(name),
                "size": integer_attr(size, 64),
                "align": integer_attr(align, 64),
            }
        )

    @property
    def symbol(self) -> str:
        return self.sym_name.string_value()

    def array_name(self) -> str:
        return self.symbol

    def array_size(self) -> int:
        return self.size.value.data

    def array_alignment(self) -> int:
        return self.alignment.value.data

    def verify_(self) -> None:
        size = self.size.value.data
        if size < 1:
            raise VerifyException(f"'size' must be at least 1 byte, got {size}")
        if self.space.data == AllocSpace.LOCAL and size > MAX_LOCAL_BYTES:
            raise VerifyException(
                f"'size' of a .local array must be at most {MAX_LOCAL_BYTES} bytes, got {size}"
            )
        a = self.alignment.value.data
        if a < 1 or a & (a - 1):
            raise VerifyException(f"'align' must be a power of two, got {a}")
        if a > MAX_ALIGN:
            raise VerifyException(f"'align' must be at most {MAX_ALIGN}, got {a}")
        # a second declaration of a name in one kernel is a ptxas error ("Duplicate
        # definition"); report it on the later one
        kernel = _kernel_of(self)
        if kernel is None:
            return
        for o in kernel.walk():
            if o is self:
                return
            if isinstance(o, AllocOp) and o.symbol == self.symbol:
                raise VerifyException(f"'sym_name' @{self.symbol} is already declared in this kernel")

    def ptx_mnemonic(self) -> str:
        return f".{self.space.data} .align {self.alignment.value.data} .b8"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [f"{self.symbol}[{self.size.value.data}]"]


def _kernel_of(op: Operation) -> Operation | None:
    """The ``func.func`` around ``op``, else its outermost ancestor (None at top level)."""
    kernel = op.parent_op()
    while kernel is not None and kernel.parent_op() is not None and kernel.name != "func.func":
        kernel = kernel.parent_op()
    return kernel


def find_alloc(op: PtxInstruction, symbol: str) -> AllocOp | None:
    """The ``ptx.alloc`` named ``symbol`` in the kernel that holds ``op``."""
    kernel = _kernel_of(op)
    if kernel is None:
        return None
    for o in kernel.walk():
        if isinstance(o, AllocOp) and o.symbol == symbol:
            return o
    return None


def static_shared_error(allocs: Iterable[AllocOp], target: Target) -> tuple[AllocOp, str] | None:
    """The first ``.shared`` array of ``allocs`` (one kernel's, in order) past which the
    kernel declares more than :func:`max_static_shared` bytes, and the message; None when
    they fit."""
    limit = max_static_shared(target)
    total = 0
    for a in allocs:
        if a.space.data != AllocSpace.SHARED:
            continue
        total += a.size.value.data
        if total > limit:
            return a, (
                f"brings the kernel's shared memory to {total} bytes, more than {target} allows "
                f"for static .shared arrays ({limit}{static_shared_hint(target)})"
            )
    return None


@op_definition
class MovAddrOp(PtxInstruction, AddressOf):
    """The address of a ``ptx.alloc`` array, in its state space's window.

    PTX: ``mov.u32 d, name;`` (shared, 32-bit) or ``mov.u64 d, name;`` (local).

    Example: ``%a = ptx.mov.addr @buf0 : !ptx.ptr<shared::cta>``. Spec: PTX ISA 9.7.9.1.
    """

    name = "ptx.mov.addr"
    SPEC_SECTION: ClassVar = "9.7.9.1"
    REQUIREMENT: ClassVar = _BASIC

    symbol = prop_def(SymbolRefAttr)
    result = result_def(PtrType)

    assembly_format = "$symbol attr-dict `:` type($result)"

    def __init__(self, symbol: str, space: StateSpace):
        super().__init__(result_types=[PtrType(space)], properties={"symbol": SymbolRefAttr(symbol)})

    def verify_(self) -> None:
        expect_ptr("d", self.result, _DECL_SPACES)
        name = self.symbol.string_value()
        decl = find_alloc(self, name)
        if decl is None:
            raise VerifyException(f"'symbol' @{name} names no ptx.alloc in this kernel")
        assert isinstance(self.result.type, PtrType)
        want = PtrType(decl.space.data.state_space)
        if self.result.type != want:
            raise VerifyException(f"result 'd' must be {want} for @{name}, got {self.result.type}")

    def ptx_mnemonic(self) -> str:
        assert isinstance(self.result.type, PtrType)
        return f"mov.u{self.result.type.bits}"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), self.symbol.string_value()]

    def address_source(self) -> tuple[AllocOp | None, int]:
        return find_alloc(self, self.symbol.string_value()), 0


def float_immediate(value: float, t: Attribute) -> str:
    """The PTX spelling of a float constant: ``0f3F800000`` (f32), ``0d3FF0...`` (f64),
    ``0x3C00`` (f16 / bf16 bits, for ``mov.b16``)."""
    if t == f32:
        return "0f" + struct.pack(">f", value).hex().upper()
    if t == f64:
        return "0d" + struct.pack(">d", value).hex().upper()
    if t == f16:
        return "0x" + struct.pack(">e", value).hex().upper()
    if t == bf16:
        (bits,) = struct.unpack(">I", struct.pack(">f", value))
        if value != value:  # NaN: keep it a quiet NaN
            return "0x7FC0"
        bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
        return f"0x{(bits >> 16) & 0xFFFF:04X}"
    raise VerifyException(f"type {t} has no float immediate")


@op_definition
class MovImmOp(PtxInstruction):
    """Set a register to a constant.

    PTX: ``mov.type d, imm;`` -- ``mov.u32 %r1, 42;``, ``mov.f32 %f1, 0f3F800000;``,
    ``mov.b16 %h1, 0x3C00;`` (f16 / bf16), ``mov.pred %p1, 1;``.

    Example: ``%c = ptx.mov.imm 42 : i32``, ``%one = ptx.mov.imm 1.0 : f32``.
    Spec: PTX ISA 9.7.9.1.
    """

    name = "ptx.mov.imm"
    SPEC_SECTION: ClassVar = "9.7.9.1"
    REQUIREMENT: ClassVar = _BASIC

    value = prop_def(IntegerAttr | FloatAttr)
    result = result_def()

    def __init__(self, value: int | float, type: Attribute):
        if isinstance(type, IntegerType):
            attr: Attribute = integer_attr(int(value), type)
        else:
            attr = FloatAttr(float(value), type)  # type: ignore[arg-type]
        super().__init__(result_types=[type], properties={"value": attr})

    @classmethod
    def parse(cls, parser: Parser) -> MovImmOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, IntegerAttr | FloatAttr):
            parser.raise_error("expected an integer or float constant such as '42 : i32'", pos, parser.pos)
        attrs = parser.parse_optional_attr_dict()
        op = cls.create(result_types=[value.type], properties={"value": value})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    def constant_value(self) -> int | None:
        """The integer value (base.constant_int reads it); None for a float."""
        if isinstance(self.value, IntegerAttr):
            return self.value.value.data
        return None

    def verify_(self) -> None:
        t = self.result.type
        if self.value.type != t:
            raise VerifyException(f"'value' type {self.value.type} must equal the result type {t}")
        if isinstance(self.value, FloatAttr):
            if t not in (f16, bf16, f32, f64):
                raise VerifyException(f"a float 'value' needs f16, bf16, f32 or f64, got {t}")
        elif _register_of(t) is None:
            raise VerifyException(f"result type {t} has no PTX register class")

    def ptx_mnemonic(self) -> str:
        t = self.result.type
        if t == i1:
            return "mov.pred"
        if isinstance(self.value, FloatAttr):
            return {f32: "mov.f32", f64: "mov.f64"}.get(t, "mov.b16")
        assert isinstance(t, IntegerType)
        width = max(16, t.width.data)
        return f"mov.{'s' if self.value.value.data < 0 else 'u'}{width}"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        if isinstance(self.value, FloatAttr):
            return [reg(self.result), float_immediate(self.value.value.data, self.result.type)]
        v = self.value.value.data
        if self.result.type == i1:
            return [reg(self.result), str(v & 1)]
        return [reg(self.result), str(v)]


def copy_mnemonic(t: Attribute) -> str:
    """``mov.pred``, ``mov.b16``, ``mov.b32`` or ``mov.b64``: a whole-register copy of IR type ``t``."""
    reg = _register_of(t)
    if reg is None:
        raise VerifyException(f"type {t} has no PTX register class")
    kind, width = reg
    return "mov.pred" if kind == "pred" else f"mov.b{width}"


@op_definition
class MovOp(PtxInstruction, AddressOf):
    """Copy a register, possibly between IR types of one width (``i32`` to
    ``!ptx.ptr<shared::cta>``, ``!ptx.ptr<shared::cta>`` to ``!ptx.ptr<shared::cluster>``:
    a CTA's own shared address is also its shared::cluster address).

    PTX: ``mov.b32 d, a;`` (``mov.pred``, ``mov.b16``, ``mov.b32``, ``mov.b64`` by width).

    Example: ``%c = ptx.mov %s : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>``.
    Spec: PTX ISA 9.7.9.1.
    """

    name = "ptx.mov"
    SPEC_SECTION: ClassVar = "9.7.9.1"
    REQUIREMENT: ClassVar = _BASIC

    src = operand_def()
    result = result_def()

    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[src], result_types=[result_type or src.type])

    def verify_(self) -> None:
        a, d = _register_of(self.src.type), _register_of(self.result.type)
        if a is None:
            raise VerifyException(f"operand 'a' of type {self.src.type} has no PTX register class")
        if d is None:
            raise VerifyException(f"result 'd' of type {self.result.type} has no PTX register class")
        if (a[0] == "pred") != (d[0] == "pred") or a[1] != d[1]:
            raise VerifyException(
                f"result 'd' ({self.result.type}) must be as wide as operand 'a' ({self.src.type})"
            )

    def ptx_mnemonic(self) -> str:
        return copy_mnemonic(self.result.type)

    def address_source(self) -> tuple[SSAValue, int]:
        # a register copy: the same address (e.g. a CTA's shared::cta one as shared::cluster)
        return self.src, 0

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result), reg(self.src)]


# endregion

MEMORY_OPS = [
    LdOp,
    LdVecOp,
    StOp,
    StVecOp,
    LdParamOp,
    CvtaToGlobalOp,
    PtrAddOp,
    AllocOp,
    MovAddrOp,
    MovImmOp,
    MovOp,
]
MEMORY_ATTRS = [LdStTypeAttr, AllocSpaceAttr]
