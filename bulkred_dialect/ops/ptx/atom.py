"""Atomics, reductions into memory and memory fences (PTX ISA, Parallel Synchronization and
Communication Instructions: atom, red, membar / fence).

* ``ptx.atom`` -- ``atom{.sem}{.scope}{.space}.op.type d, [a], b;`` (scalar forms);
* ``ptx.red`` -- ``red{.sem}{.scope}{.space}.op{.noftz}.type [a], b;`` and the vector
  forms ``red{.sem}{.scope}{.global}.add.v2|.v4.f32 [a], {b0, ...};`` and
  ``red{.sem}{.scope}{.global}.add|min|max.noftz.v2|.v4|.v8.f16|.bf16 [a], {b0, ...};``;
* ``ptx.fence`` -- ``fence.sc|acq_rel.scope;``; ``ptx.membar`` -- ``membar.level;``.

The optional ``.space`` qualifier is not a property: it is the state space of the address
operand's type (as for red.async). ``!ptx.ptr<global>``, ``!ptx.ptr<shared::cta>`` and
``!ptx.ptr<shared::cluster>`` print ``.global``, ``.shared::cta``, ``.shared::cluster``;
``!ptx.ptr<generic>`` prints no ``.space`` (generic addressing).

Not modelled: ``atom.cas`` (a third operand), ``.b128`` and ``.b16``, the packed
``.f16x2``/``.bf16x2`` forms, atom's vector forms, and ``.L2::cache_hint``.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    var_operand_def,
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
    bf16,
    f16,
    f32,
    f64,
    i32,
    i64,
    mnemonic,
    qualifier_error,
)
from bulkred_dialect.ops.target import Requirement

# region Enums


class AtomOpKind(StrEnum):
    """``.op`` of atom (scalar forms; ``cas`` is a different form)."""

    AND = "and"
    OR = "or"
    XOR = "xor"
    EXCH = "exch"
    ADD = "add"
    INC = "inc"
    DEC = "dec"
    MIN = "min"
    MAX = "max"


class RedOpKind(StrEnum):
    """``.op`` of red."""

    AND = "and"
    OR = "or"
    XOR = "xor"
    ADD = "add"
    INC = "inc"
    DEC = "dec"
    MIN = "min"
    MAX = "max"


class AtomType(StrEnum):
    """``.type`` of atom and red: one set for both (``f16``/``bf16`` with ``.noftz``)."""

    B32 = "b32"
    B64 = "b64"
    U32 = "u32"
    U64 = "u64"
    S32 = "s32"
    S64 = "s64"
    F32 = "f32"
    F64 = "f64"
    F16 = "f16"
    BF16 = "bf16"


RedType = AtomType


class MemSem(StrEnum):
    """``.sem`` of atom."""

    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"


class RedSem(StrEnum):
    """``.sem`` of red (a reduction returns nothing, so it has nothing to acquire)."""

    RELAXED = "relaxed"
    RELEASE = "release"


class MemScope(StrEnum):
    """``.scope`` of atom, red and fence."""

    CTA = "cta"
    CLUSTER = "cluster"
    GPU = "gpu"
    SYS = "sys"


class FenceSem(StrEnum):
    """``.sem`` of the plain fence: sequentially consistent or acquire-release."""

    SC = "sc"
    ACQ_REL = "acq_rel"


class MembarLevel(StrEnum):
    """``.level`` of membar."""

    CTA = "cta"
    GL = "gl"
    SYS = "sys"


@irdl_attr_definition
class AtomOpKindAttr(EnumAttribute[AtomOpKind], SpacedOpaqueSyntaxAttribute):
    name = "ptx.atom_op"


@irdl_attr_definition
class RedOpKindAttr(EnumAttribute[RedOpKind], SpacedOpaqueSyntaxAttribute):
    name = "ptx.red_op"


@irdl_attr_definition
class AtomTypeAttr(EnumAttribute[AtomType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.atom_type"


@irdl_attr_definition
class MemSemAttr(EnumAttribute[MemSem], SpacedOpaqueSyntaxAttribute):
    name = "ptx.mem_sem"


@irdl_attr_definition
class RedSemAttr(EnumAttribute[RedSem], SpacedOpaqueSyntaxAttribute):
    name = "ptx.red_sem"


@irdl_attr_definition
class MemScopeAttr(EnumAttribute[MemScope], SpacedOpaqueSyntaxAttribute):
    name = "ptx.mem_scope"


@irdl_attr_definition
class FenceSemAttr(EnumAttribute[FenceSem], SpacedOpaqueSyntaxAttribute):
    name = "ptx.fence_sem"


@irdl_attr_definition
class MembarLevelAttr(EnumAttribute[MembarLevel], SpacedOpaqueSyntaxAttribute):
    name = "ptx.membar_level"


# endregion

# region Tables

_BITS = (AtomType.B32, AtomType.B64)
_ADD = (AtomType.U32, AtomType.S32, AtomType.U64, AtomType.F32, AtomType.F64, AtomType.F16, AtomType.BF16)
_INC_DEC = (AtomType.U32,)
_MIN_MAX = (AtomType.U32, AtomType.S32, AtomType.U64, AtomType.S64)

# The spec's description of atom, as a table: .op -> the .type values valid with it
# ("bit-size operations are .and, .or, .xor, .cas and .exch; integer operations are
# .add, .inc, .dec, .min and .max"; .add also on .f32, .f64 and, with .noftz, .f16 and
# .bf16; .inc/.dec only .u32).
ATOM_TABLE: dict[AtomOpKind, tuple[AtomType, ...]] = {
    AtomOpKind.AND: _BITS,
    AtomOpKind.OR: _BITS,
    AtomOpKind.XOR: _BITS,
    AtomOpKind.EXCH: _BITS,
    AtomOpKind.ADD: _ADD,
    AtomOpKind.INC: _INC_DEC,
    AtomOpKind.DEC: _INC_DEC,
    AtomOpKind.MIN: _MIN_MAX,
    AtomOpKind.MAX: _MIN_MAX,
}

# red: the same rules, without exch.
RED_TABLE: dict[RedOpKind, tuple[AtomType, ...]] = {
    RedOpKind(str(op)): types for op, types in ATOM_TABLE.items() if op != AtomOpKind.EXCH
}

# The half-precision forms spell '.noftz' (they keep subnormals); no other form takes it:
# scalar add.noftz.f16/.bf16 (atom and red), and red's vector add/min/max.noftz.f16/.bf16.
HALF_TYPES = (AtomType.F16, AtomType.BF16)

# The vector forms of red, into .global only: .type -> (.vec counts, .op values).
RED_VEC_TABLE: dict[AtomType, tuple[tuple[int, ...], tuple[RedOpKind, ...]]] = {
    AtomType.F32: ((2, 4), (RedOpKind.ADD,)),
    AtomType.F16: ((2, 4, 8), (RedOpKind.ADD, RedOpKind.MIN, RedOpKind.MAX)),
    AtomType.BF16: ((2, 4, 8), (RedOpKind.ADD, RedOpKind.MIN, RedOpKind.MAX)),
}
RED_VEC_COUNTS = (2, 4, 8)

# The address spaces of the scalar forms (generic: no .space) and of the vector form.
ATOM_SPACES = (StateSpace.GLOBAL, StateSpace.SHARED_CTA, StateSpace.SHARED_CLUSTER, StateSpace.GENERIC)
RED_VEC_SPACES = (StateSpace.GLOBAL, StateSpace.GENERIC)

_BASELINE = Requirement(sm=50, ptx=(6, 0))
_SEM = Requirement(sm=70, ptx=(6, 0))  # .sem and .scope on atom/red, and fence.sc/acq_rel
_CLUSTER = Requirement(sm=90, ptx=(7, 8))  # .cluster scope, .shared::cluster
_SHARED_CTA = Requirement(sm=50, ptx=(7, 8))  # the explicit ::cta sub-qualifier
_F64_ADD = Requirement(sm=60, ptx=(6, 0))
_F16_ADD = Requirement(sm=70, ptx=(6, 3))
_BF16_ADD = Requirement(sm=90, ptx=(7, 8))
_RED_VEC = Requirement(sm=90, ptx=(8, 1))


def value_type(t: AtomType) -> Attribute:
    """The IR type of a register of ``.type`` t: i32, i64, f16, bf16, f32 or f64."""
    floats = {AtomType.F32: f32, AtomType.F64: f64, AtomType.F16: f16, AtomType.BF16: bf16}
    if t in floats:
        return floats[t]
    return i64 if str(t).endswith("64") else i32


def type_bytes(t: AtomType) -> int:
    """The size of one element of ``.type`` t."""
    return 2 if t == AtomType.BF16 else int(str(t)[1:]) // 8


def _space(value: SSAValue) -> StateSpace | None:
    """The ``.space`` qualifier an address operand's type implies (None: generic)."""
    t = value.type
    if isinstance(t, PtrType) and t.state_space != StateSpace.GENERIC:
        return t.state_space
    return None


def _verify_address(value: SSAValue, spaces: Sequence[StateSpace], form: str) -> None:
    t = value.type
    if not isinstance(t, PtrType) or t.state_space not in spaces:
        want = " or ".join(f"!ptx.ptr<{s}>" for s in spaces)
        raise VerifyException(f"operand 'a' must be {want} for {form}, got {t}")


def _memory_requirement(
    address: SSAValue, sem: object | None, scope: MemScope | None
) -> Requirement:
    req = _BASELINE
    if sem is not None or scope is not None:
        req = req.combine(_SEM)
    space = _space(address)
    if scope == MemScope.CLUSTER or space == StateSpace.SHARED_CLUSTER:
        req = req.combine(_CLUSTER)
    elif space == StateSpace.SHARED_CTA:
        req = req.combine(_SHARED_CTA)
    return req


def _opt(attr: EnumAttribute | None) -> object | None:
    return None if attr is None else attr.data


def _check_noftz(t: AtomType, noftz: bool) -> None:
    if t in HALF_TYPES and not noftz:
        raise VerifyException(f"'.noftz' is required with '.type' {t}")
    if noftz and t not in HALF_TYPES:
        raise VerifyException(f"'.noftz' is only valid with '.type' f16 or bf16, got '.type' {t}")


def _type_requirement(op: object, t: AtomType) -> Requirement:
    """What the ``.op`` x ``.type`` pair adds to the baseline."""
    if t == AtomType.F16:
        return _F16_ADD
    if t == AtomType.BF16:
        return _BF16_ADD
    if str(op) == "add" and t == AtomType.F64:
        return _F64_ADD
    return _BASELINE


# endregion

# region atom


@op_definition
class AtomOp(PtxInstruction):
    """Atomically combine ``b`` into the value at ``[a]`` with ``.op``; ``d`` is the value
    ``[a]`` held before.

    PTX: ``atom{.sem}{.scope}{.space}.op{.noftz}.type d, [a], b;``

    ``.op`` x ``.type``: and/or/xor/exch b32, b64; add u32, s32, u64, f32, f64, and with
    ``.noftz`` (required, and only there) f16, bf16; inc/dec u32; min/max u32, s32, u64,
    s64. ``b`` and ``d`` are the register of ``.type`` (i32, i64, f16, bf16, f32 or f64). ``a`` is ``!ptx.ptr<global>``, ``!ptx.ptr<shared::cta>``,
    ``!ptx.ptr<shared::cluster>`` or ``!ptx.ptr<generic>`` (no ``.space``). Without
    ``.sem`` the operation is relaxed, without ``.scope`` its scope is gpu.

    Example::

        %old = ptx.atom add u32 %ticket, %one : !ptx.ptr<global>, i32
        %v = ptx.atom sem acq_rel scope gpu exch b32 %flag, %x : !ptx.ptr<global>, i32

    Needs sm_70 and PTX ISA 6.0 for ``.sem``/``.scope``; sm_90 and PTX ISA 7.8 for
    ``.cluster`` and ``.shared::cluster``; PTX ISA 7.8 for ``.shared::cta``; sm_60 for
    ``add.f64``; sm_70 and PTX ISA 6.3 for ``add.noftz.f16``, sm_90 and PTX ISA 7.8 for
    ``add.noftz.bf16``. Spec: PTX ISA, atom.
    """

    name = "ptx.atom"
    SPEC_SECTION: ClassVar = "atom"

    T: ClassVar = VarConstraint("T", AnyAttr())

    sem = opt_prop_def(MemSemAttr)
    scope = opt_prop_def(MemScopeAttr)
    op = prop_def(AtomOpKindAttr)
    noftz = opt_prop_def(UnitAttr)
    type = prop_def(AtomTypeAttr)
    address = operand_def(Attribute)
    value = operand_def(T)
    d = result_def(T)

    assembly_format = (
        "(`sem` $sem^)? (`scope` $scope^)? $op (`noftz` $noftz^)? $type $address `,` $value "
        "attr-dict `:` type($address) `,` type($value)"
    )

    def __init__(
        self,
        op: AtomOpKind,
        type: AtomType,
        address: SSAValue,
        value: SSAValue,
        *,
        sem: MemSem | None = None,
        scope: MemScope | None = None,
        noftz: bool = False,
    ):
        props: dict[str, Attribute] = {"op": AtomOpKindAttr(op), "type": AtomTypeAttr(type)}
        if sem is not None:
            props["sem"] = MemSemAttr(MemSem(str(sem)))
        if scope is not None:
            props["scope"] = MemScopeAttr(scope)
        if noftz:
            props["noftz"] = UnitAttr()
        super().__init__(operands=[address, value], result_types=[value.type], properties=props)

    def verify_(self) -> None:
        op, t = self.op.data, self.type.data
        if t not in ATOM_TABLE[op]:
            raise qualifier_error(".type", t, ATOM_TABLE[op], f"with '.op' {op}")
        _check_noftz(t, self.noftz is not None)
        _verify_address(self.address, ATOM_SPACES, "atom")
        want = value_type(t)
        if self.value.type != want:
            raise VerifyException(f"operand 'b' must be {want} for '.type' {t}, got {self.value.type}")
        check_aligned("a", self.address, type_bytes(t))

    def requirement(self) -> Requirement:
        req = _memory_requirement(self.address, _opt(self.sem), _opt(self.scope))
        return req.combine(_type_requirement(self.op.data, self.type.data))

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            "atom",
            _opt(self.sem),
            _opt(self.scope),
            _space(self.address),
            self.op.data,
            "noftz" if self.noftz is not None else None,
            self.type.data,
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.d), addr(reg(self.address)), reg(self.value)]


# endregion

# region red


@op_definition
class RedOp(PtxInstruction):
    """Combine ``b`` into the value at ``[a]`` with ``.op``, atomically, returning nothing.
    With 2, 4 or 8 values, a vector form: as many consecutive elements (each element
    atomic on its own).

    PTX: ``red{.sem}{.scope}{.space}.op{.noftz}.type [a], b;``,
    ``red{.sem}{.scope}{.global}.add.v2|.v4.f32 [a], {b0, b1, ...};`` and
    ``red{.sem}{.scope}{.global}.add|min|max.noftz.v2|.v4|.v8.f16|.bf16 [a], {b0, ...};``

    Scalar ``.op`` x ``.type``: as atom without exch. The vector forms take ``add`` of
    f32 (.v2, .v4) and ``add``/``min``/``max`` of f16, bf16 (.v2, .v4, .v8), into
    ``!ptx.ptr<global>`` or ``!ptx.ptr<generic>``; a known address must be aligned to the
    whole vector. ``.noftz`` is required with f16/bf16 and valid nowhere else. ``.sem``
    is relaxed or release.

    Example::

        ptx.red add f32 %sum, %x : !ptx.ptr<global>, f32
        ptx.red add f32 %out, %x0, %x1, %x2, %x3 : !ptx.ptr<global>, f32, f32, f32, f32
        ptx.red max noftz bf16 %out, %h0, %h1 : !ptx.ptr<global>, bf16, bf16

    Needs what atom needs; the vector forms sm_90 and PTX ISA 8.1. Spec: PTX ISA, red.
    """

    name = "ptx.red"
    SPEC_SECTION: ClassVar = "red"

    sem = opt_prop_def(RedSemAttr)
    scope = opt_prop_def(MemScopeAttr)
    op = prop_def(RedOpKindAttr)
    noftz = opt_prop_def(UnitAttr)
    type = prop_def(AtomTypeAttr)
    address = operand_def(Attribute)
    values = var_operand_def(Attribute)

    assembly_format = (
        "(`sem` $sem^)? (`scope` $scope^)? $op (`noftz` $noftz^)? $type $address `,` $values "
        "attr-dict `:` type($address) `,` type($values)"
    )

    def __init__(
        self,
        op: RedOpKind,
        type: AtomType,
        address: SSAValue,
        values: Sequence[SSAValue],
        *,
        sem: RedSem | MemSem | None = None,
        scope: MemScope | None = None,
        noftz: bool = False,
    ):
        props: dict[str, Attribute] = {"op": RedOpKindAttr(RedOpKind(str(op))), "type": AtomTypeAttr(type)}
        if sem is not None:
            props["sem"] = RedSemAttr(RedSem(str(sem)))
        if scope is not None:
            props["scope"] = MemScopeAttr(scope)
        if noftz:
            props["noftz"] = UnitAttr()
        super().__init__(operands=[address, list(values)], properties=props)

    @property
    def count(self) -> int:
        return len(self.values)

    def verify_(self) -> None:
        op, t, n = self.op.data, self.type.data, self.count
        if n == 1:
            if t not in RED_TABLE[op]:
                raise qualifier_error(".type", t, RED_TABLE[op], f"with '.op' {op}")
            _verify_address(self.address, ATOM_SPACES, "red")
        elif n in RED_VEC_COUNTS:
            vec_types = [vt for vt, (counts, _) in RED_VEC_TABLE.items() if n in counts]
            if t not in vec_types:
                raise qualifier_error(".type", t, vec_types, f"with '.vec' v{n}")
            ops = RED_VEC_TABLE[t][1]
            if op not in ops:
                raise qualifier_error(".op", op, ops, f"with '.vec' v{n} and '.type' {t}")
            _verify_address(self.address, RED_VEC_SPACES, f"'.vec' v{n}")
        else:
            raise VerifyException(f"operand 'b' must be 1, 2, 4 or 8 values, got {n}")
        _check_noftz(t, self.noftz is not None)
        want = value_type(t)
        for i, v in enumerate(self.values):
            if v.type != want:
                name = "b" if n == 1 else f"b{i}"
                raise VerifyException(f"operand '{name}' must be {want} for '.type' {t}, got {v.type}")
        check_aligned("a", self.address, n * type_bytes(t))

    def requirement(self) -> Requirement:
        req = _memory_requirement(self.address, _opt(self.sem), _opt(self.scope))
        req = req.combine(_type_requirement(self.op.data, self.type.data))
        if self.count > 1:
            req = req.combine(_RED_VEC)
        return req

    def ptx_mnemonic(self) -> str:
        vec = f"v{self.count}" if self.count > 1 else None
        return mnemonic(
            "red",
            _opt(self.sem),
            _opt(self.scope),
            _space(self.address),
            self.op.data,
            "noftz" if self.noftz is not None else None,
            vec,
            self.type.data,
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        if self.count == 1:
            return [addr(reg(self.address)), reg(self.values[0])]
        return [addr(reg(self.address)), "{" + ", ".join(reg(v) for v in self.values) + "}"]


# endregion

# region fence and membar


@op_definition
class FenceOp(PtxInstruction):
    """Order this thread's memory accesses before the fence against those after it, as
    observed by the threads of ``.scope``: ``sc`` (sequentially consistent) or
    ``acq_rel``.

    PTX: ``fence.sem.scope;`` (sem: sc, acq_rel; scope: cta, cluster, gpu, sys).

    Example: ``ptx.fence acq_rel gpu`` is ``fence.acq_rel.gpu;``.
    Needs sm_70 and PTX ISA 6.0; ``.cluster`` sm_90 and PTX ISA 7.8.
    Spec: PTX ISA, membar / fence.
    """

    name = "ptx.fence"
    SPEC_SECTION: ClassVar = "membar / fence"

    sem = prop_def(FenceSemAttr)
    scope = prop_def(MemScopeAttr)

    assembly_format = "$sem $scope attr-dict"

    def __init__(self, sem: FenceSem, scope: MemScope):
        super().__init__(properties={"sem": FenceSemAttr(sem), "scope": MemScopeAttr(scope)})

    def requirement(self) -> Requirement:
        if self.scope.data == MemScope.CLUSTER:
            return _SEM.combine(_CLUSTER)
        return _SEM

    def ptx_mnemonic(self) -> str:
        return mnemonic("fence", self.sem.data, self.scope.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return []


@op_definition
class MembarOp(PtxInstruction):
    """Wait until this thread's prior memory accesses are performed at ``.level``
    (cta, gl: the GPU, sys); on sm_70 and later the same as ``fence.sc`` of that scope.

    PTX: ``membar.level;``

    Example: ``ptx.membar gl`` is ``membar.gl;``. Spec: PTX ISA, membar / fence.
    """

    name = "ptx.membar"
    SPEC_SECTION: ClassVar = "membar / fence"
    REQUIREMENT: ClassVar = _BASELINE

    level = prop_def(MembarLevelAttr)

    assembly_format = "$level attr-dict"

    def __init__(self, level: MembarLevel):
        super().__init__(properties={"level": MembarLevelAttr(level)})

    def ptx_mnemonic(self) -> str:
        return mnemonic("membar", self.level.data)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return []


# endregion

ATOM_OPS = [AtomOp, RedOp, FenceOp, MembarOp]
ATOM_ATTRS = [
    AtomOpKindAttr,
    RedOpKindAttr,
    AtomTypeAttr,
    MemSemAttr,
    RedSemAttr,
    MemScopeAttr,
    FenceSemAttr,
    MembarLevelAttr,
]
