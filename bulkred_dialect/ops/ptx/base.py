"""Shared pieces of the ptx dialect: state spaces, the pointer type, the base class
that every ptx instruction op derives from, and helpers for verifier messages.

An op of this dialect is exactly one PTX instruction form. Its qualifiers are enum
properties whose values are PTX spellings (without the leading dot), so printing a
qualifier is ``f".{member}"``. Each op knows:

* :meth:`PtxInstruction.requirement` -- the lowest SM / PTX ISA version it needs,
  checked against the target in one place (:func:`bulkred_dialect.ops.target.check_target`);
* :meth:`PtxInstruction.ptx_mnemonic` and :meth:`PtxInstruction.ptx_operands` -- its
  PTX instruction line; the backend printer owns the module frame and register names.
"""

from __future__ import annotations

import functools
import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
)
from xdsl.ir import (
    Attribute,
    Operation,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import IRDLOperation, irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import single_counts
from bulkred_dialect.ops.target import Requirement, Target, TargetError, check_target
from xdsl.dialects.utils import EnumAttribute

# A function that gives the PTX register (or symbol) name of an SSA value.
RegisterNamer = Callable[[SSAValue], str]


# region State spaces and the pointer type


class StateSpace(StrEnum):
    """PTX state spaces (PTX ISA 5.1), spelled as in PTX."""

    GENERIC = "generic"
    GLOBAL = "global"
    SHARED_CTA = "shared::cta"
    SHARED_CLUSTER = "shared::cluster"
    LOCAL = "local"
    PARAM = "param"


def _parse_ptx_spelling(parser: AttrParser) -> str:
    """Parse `shared::cta`, `global` or a quoted string."""
    if (s := parser.parse_optional_str_literal()) is not None:
        return s
    word = parser.parse_identifier()
    while parser.parse_optional_punctuation(":") is not None:
        parser.parse_punctuation(":")
        word += "::" + parser.parse_identifier()
    return word


@irdl_attr_definition
class StateSpaceAttr(EnumAttribute[StateSpace], SpacedOpaqueSyntaxAttribute):
    name = "ptx.state_space"


@irdl_attr_definition
class PtrType(ParametrizedAttribute, TypeAttribute):
    """An address in one state space: ``!ptx.ptr<shared::cta>``.

    Shared-memory addresses (``shared::cta``, ``shared::cluster``) are 32-bit
    registers, as the bulk-copy and mbarrier instructions take them; global, local
    and generic addresses are 64-bit.
    """

    name = "ptx.ptr"
    space: StateSpaceAttr

    def __init__(self, space: StateSpace | StateSpaceAttr):
        if isinstance(space, StateSpace):
            space = StateSpaceAttr(space)
        super().__init__(space)

    @property
    def state_space(self) -> StateSpace:
        return self.space.data

    @property
    def bits(self) -> int:
        return 32 if self.state_space in (StateSpace.SHARED_CTA, StateSpace.SHARED_CLUSTER) else 64

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            word = _parse_ptx_spelling(parser)
            try:
                space = StateSpace(word)
            except ValueError:
                parser.raise_error(
                    f"unknown state space '{word}' (expected one of "
                    f"{', '.join(str(s) for s in StateSpace)})",
                    pos,
                    parser.pos,
                )
        return (StateSpaceAttr(space),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.state_space}>")


def ptr(space: StateSpace) -> PtrType:
    return PtrType(space)


# endregion

# region Verifier helpers


def qualifier_error(
    field: str, found: object, expected: Iterable[object] | str, context: str = ""
) -> VerifyException:
    """``'.redOp' min is not valid with '.type' f32 for '.dst' global (valid: u32, s32)``."""
    if not isinstance(expected, str):
        expected = ", ".join(str(e) for e in expected)
    ctx = f" {context}" if context else ""
    return VerifyException(f"'{field}' {found} is not valid{ctx} (valid: {expected})")


def expect_type(field: str, value: SSAValue, expected: Attribute | Sequence[Attribute]) -> None:
    allowed = [expected] if isinstance(expected, Attribute) else list(expected)
    if value.type not in allowed:
        raise VerifyException(
            f"operand '{field}' must be {' or '.join(str(a) for a in allowed)}, got {value.type}"
        )


def expect_ptr(field: str, value: SSAValue, spaces: StateSpace | Sequence[StateSpace]) -> None:
    allowed = [spaces] if isinstance(spaces, StateSpace) else list(spaces)
    t = value.type
    if not isinstance(t, PtrType) or t.state_space not in allowed:
        want = " or ".join(f"!ptx.ptr<{s}>" for s in allowed)
        raise VerifyException(f"operand '{field}' must be {want}, got {t}")


@functools.lru_cache(maxsize=4096)
def _integer_attr(value: int, t: IntegerType | int) -> IntegerAttr:
    return IntegerAttr(value, t)


def integer_attr(value: int, t: IntegerType | int) -> IntegerAttr:
    """``IntegerAttr(value, t)``, made once per value and type: attributes are immutable
    values, and building one verifies it (tens of microseconds; the lowering makes an
    immediate, offset or size for most instructions). Errors are IntegerAttr's."""
    return _integer_attr(int(value), t)


def constant_int(value: SSAValue | None) -> int | None:
    """The compile-time value of an integer SSA value, when it has one."""
    if value is None:
        return None
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    getter = getattr(owner, "constant_value", None)
    if callable(getter):
        return getter()
    return None


def check_multiple_of_16(field: str, value: SSAValue | None) -> None:
    """A size known at compile time must be a multiple of 16 bytes (PTX ISA 9.7.9.25.4)
    and not negative (a negative constant would be read as a .u32 of about 4 GiB);
    alignments: :func:`bulkred_dialect.ops.ptx.addresses.check_aligned`."""
    c = constant_int(value)
    if c is not None and (c < 0 or c % 16 != 0):
        raise VerifyException(f"'{field}' must be a non-negative multiple of 16, got {c}")


# endregion

# region Register types

# PTX register class (declaration type, name prefix) for each IR type.
i1 = IntegerType(1)
i16 = IntegerType(16)
i32 = IntegerType(32)
i64 = IntegerType(64)
f16 = Float16Type()
bf16 = BFloat16Type()
f32 = Float32Type()
f64 = Float64Type()
f32x2 = VectorType(f32, [2])


_REGISTER_CLASSES: dict[int, tuple[Attribute, tuple[str, str]]] = {}  # id(t) -> (t, its class)


def register_class(t: Attribute) -> tuple[str, str]:
    """(``.reg`` type, register name prefix) holding a value of IR type ``t``.

    Kept per type object (a type is an immutable value; the printer asks for every
    register and the verifiers for many operands, mostly of a few shared types)."""
    hit = _REGISTER_CLASSES.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    found = _register_class(t)
    if len(_REGISTER_CLASSES) >= 4096:
        _REGISTER_CLASSES.clear()
    _REGISTER_CLASSES[id(t)] = (t, found)  # t kept alive: its id is not reused
    return found


def _register_class(t: Attribute) -> tuple[str, str]:
    if isinstance(t, PtrType):
        return (".b32", "%r") if t.bits == 32 else (".b64", "%rd")
    if t == i1:
        return ".pred", "%p"
    if isinstance(t, IntegerType):
        w = t.width.data
        return {8: (".b16", "%rs"), 16: (".b16", "%rs"), 32: (".b32", "%r"), 64: (".b64", "%rd")}[
            w
        ]
    if t in (f16, bf16):
        return ".b16", "%h"
    if t == f32:
        return ".f32", "%f"
    if t == f64:
        return ".f64", "%fd"
    if t == f32x2:
        return ".b64", "%rd"
    raise VerifyException(f"type {t} has no PTX register class")


# endregion


_FIXED_COUNTS: dict[type, tuple[int, int] | None] = {}
_SSA_VALUE = itertools.repeat(SSAValue)  # all(map(isinstance, operands, _SSA_VALUE)): each operand a value


def _fixed_counts(cls: type[IRDLOperation]) -> tuple[int, int] | None:
    """:func:`~bulkred_dialect.ops.op_definition.single_counts` of ``cls``'s definition
    (cached per class)."""
    try:
        return _FIXED_COUNTS[cls]
    except KeyError:
        pass
    _FIXED_COUNTS[cls] = counts = single_counts(cls.get_irdl_definition())
    return counts


class PtxInstruction(IRDLOperation, ABC):
    """Base of every op that is one PTX instruction.

    Subclasses set ``REQUIREMENT`` (or override :meth:`requirement` when qualifiers
    raise it) and implement :meth:`ptx_mnemonic` and :meth:`ptx_operands`.
    """

    REQUIREMENT: ClassVar[Requirement] = Requirement()
    SPEC_SECTION: ClassVar[str] = ""

    def __init__(
        self,
        *,
        operands: Sequence[SSAValue] | None = None,
        result_types: Sequence[Attribute] | None = None,
        properties: dict[str, Attribute | None] | None = None,
        attributes: dict[str, Attribute | None] | None = None,
        **others: object,
    ) -> None:
        """IRDL's builder, made cheaper for the common form: when the op's definition
        has only single operands and results (no variadic or optional ones, no
        regions, successors or segment sizes), the counts match and every operand is
        a value, the op is built as xDSL's parser builds it (``Operation.create``'s
        path: the definition's default properties are filled in the same way, and the
        verifier checks the rest). About a third of the cost of building a ptx op,
        which the lowering does for every instruction (docs/compile_speed.md)."""
        counts = _fixed_counts(type(self))
        operands = () if operands is None else operands
        result_types = () if result_types is None else result_types
        if (
            counts is not None
            and not any(others.values())
            and len(operands) == counts[0]
            and len(result_types) == counts[1]
            and all(map(isinstance, operands, _SSA_VALUE))
        ):
            Operation.__init__(
                self,
                operands=operands,
                result_types=result_types,
                properties={k: v for k, v in properties.items() if v is not None} if properties else {},
                attributes={k: v for k, v in attributes.items() if v is not None} if attributes else {},
            )
            return
        super().__init__(
            operands=operands, result_types=result_types, properties=properties, attributes=attributes, **others  # type: ignore[arg-type]
        )

    def requirement(self) -> Requirement:
        """The lowest SM and PTX ISA version this instruction form needs."""
        return self.REQUIREMENT

    @abstractmethod
    def ptx_mnemonic(self) -> str:
        """The dotted instruction name with every qualifier, e.g. ``redux.sync.add.s32``."""

    @abstractmethod
    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        """The operand texts in PTX order (addresses already in ``[...]``)."""

    def ptx_line(self, reg: RegisterNamer) -> str:
        """The PTX instruction line, e.g. ``redux.sync.add.s32 %r1, %r2, %r3;``."""
        operands = self.ptx_operands(reg)
        if not operands:
            return f"{self.ptx_mnemonic()};"
        return f"{self.ptx_mnemonic()} {', '.join(operands)};"


def addr(text: str) -> str:
    return f"[{text}]"


def mnemonic(*parts: object) -> str:
    """Join instruction parts, skipping ``None`` and empty ones: ``mnemonic('redux.sync', 'add', 's32')``."""
    return ".".join(str(p) for p in parts if p is not None and str(p) != "")


def check_module(module: ModuleOp, target: Target) -> tuple[int, int]:
    """Raise a located error for the first ptx op of ``module`` that ``target`` cannot
    run (the pass ``check-target`` and the PTX printer); return the highest PTX ISA
    version its ptx ops need, at least the target's lowest (the printer's ``.version``).
    The ops in ``module.walk()``'s order, from ``walk_ops`` (a stack, not xDSL's nested
    generators: it runs twice per compile, after lower-to-ptx and in the printer)."""
    from bulkred_dialect.diagnostics import LocatedError, walk_ops

    version = target.min_ptx
    for op in walk_ops(module):
        if isinstance(op, PtxInstruction):
            need = op.requirement()
            try:
                check_target(op.ptx_mnemonic, need, target)
            except TargetError as e:
                raise LocatedError(op, str(e)) from None
            if need.ptx > version:
                version = need.ptx
    return version
