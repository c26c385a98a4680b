"""The state of lowering one kernel: the level-3 index type, the bytes of a memref
element, each memref value's :class:`Buffer`, and the helpers every handler uses to
insert, replace and locate ops (each created op carries the location of the op it
replaces)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    VectorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.base import i64
from bulkred_dialect.ops.ptx.memory import AllocOp, MovImmOp
from bulkred_dialect.ops.target import DEFAULT_TARGET, Target

INDEX_TYPE = i64


def lowered_type(t: Attribute) -> Attribute:
    """The level-3 type of a scalar level-2 type: ``index`` becomes ``i64``."""
    return INDEX_TYPE if isinstance(t, IndexType) else t


def element_bytes(t: Attribute) -> int | None:
    """Bytes of one memref element, or None for a type PTX cannot load. ``i1`` (bool)
    is one byte (0 or 1), as numpy and torch store it."""
    if isinstance(t, IntegerType) and t.width.data in (8, 16, 32, 64):
        return t.width.data // 8
    if isinstance(t, IntegerType) and t.width.data == 1:
        return 1
    if isinstance(t, Float16Type | BFloat16Type):
        return 2
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, Float64Type):
        return 8
    if t == VectorType(Float32Type(), [2]):
        return 8
    return None


def int_width(t: Attribute) -> int:
    assert isinstance(t, IntegerType)
    return t.width.data


def wrap(v: int, width: int) -> int:
    """``v`` as a signed two's-complement value of ``width`` bits."""
    v &= (1 << width) - 1
    return v - (1 << width) if v >= 1 << (width - 1) else v


@dataclass
class Buffer:
    """A memref value's base address and its level-2 type; for a ``memref.subview``, the
    address of the view's first element is ``base + byte_offset`` and element
    ``[i, j, ..]`` is ``strides`` (in elements) away from it."""

    base: SSAValue
    type: MemRefType
    byte_offset: int = 0
    strides: list[int] | None = None  # None: row-major from the shape

    def element_strides(self) -> list[int]:
        if self.strides is not None:
            return self.strides
        shape = self.type.get_shape()
        strides = [1] * len(shape)
        for k in range(len(shape) - 2, -1, -1):
            strides[k] = strides[k + 1] * shape[k + 1]
        return strides


@dataclass
class LoweringState:
    """What lowering one ``func.func`` knows so far, and the helpers of its handlers."""

    kernel: func.FuncOp
    target: Target = DEFAULT_TARGET
    buffers: dict[SSAValue, Buffer] = field(default_factory=dict)
    created: list[Operation] = field(default_factory=list)
    symbols: set[str] = field(default_factory=set)
    last_decl: AllocOp | None = None
    shared: list[AllocOp] = field(default_factory=list)
    # a negated predicate -> the predicate (arith.xori %p, true folded into branches)
    negated: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def insert(self, anchor: Operation, new: Operation, *, pure: bool = True) -> Operation:
        new.location = anchor.location
        Rewriter.insert_op(new, InsertPoint.before(anchor))
        if pure:
            self.created.append(new)
        return new

    def replace(self, op: Operation, values: Sequence[SSAValue]) -> None:
        for old, new in zip(op.results, values, strict=True):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(op)

    def imm(self, anchor: Operation, value: int, t: Attribute = INDEX_TYPE) -> SSAValue:
        return self.insert(anchor, MovImmOp(wrap(value, int_width(t)), t)).results[0]

    def buffer(self, op: Operation, value: SSAValue) -> Buffer:
        buf = self.buffers.get(value)
        if buf is None:
            raise LocatedError(
                op, "its memref must be a kernel argument or a memref.alloca of this kernel"
            )
        return buf

    @staticmethod
    def check_static(op: Operation, t: MemRefType, *, views: bool = False) -> None:
        if any(d < 0 for d in t.get_shape()):
            raise LocatedError(op, f"needs a memref with a static shape, got {t}")
        strides = t.get_strides() if views and isinstance(t.layout, StridedLayoutAttr) else None
        if strides is not None and None not in strides and min(strides, default=0) >= 0 and t.get_offset() == 0:
            pass  # a view with static strides >= 0 at offset 0
        elif not isinstance(t.layout, NoneAttr):
            raise LocatedError(op, f"needs a memref with the default row-major layout, got {t}")
        if element_bytes(t.element_type) is None:
            raise LocatedError(op, f"element type {t.element_type} has no PTX load/store form")

