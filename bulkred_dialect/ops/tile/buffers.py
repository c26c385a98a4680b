"""The buffers of the tile-level ops: the kernel an op is nested in, a buffer's scope
and memref type, the element types tile-level buffers hold, and the checks every op
makes of its operands."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerType, MemRefType, Signedness
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.ops.dtypes import ELEMENT_DTYPES, GRID_DTYPES
from bulkred_dialect.ops.tile.attrs import MemoryScope, MemoryScopeAttr


def enclosing_kernel(op: Operation) -> func.FuncOp | None:
    """The ``func.func`` (kernel) that ``op`` is nested in, or None."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent


def check_in_kernel(op: Operation) -> None:
    """Raise unless ``op`` is nested in a ``func.func`` (a kernel): the lowerings turn
    tile ops into kernel code (branches, barriers, thread ids), which has no meaning at
    module level."""
    if enclosing_kernel(op) is None:
        raise VerifyException("must be inside a func.func kernel")


def scope_of(t: Attribute) -> MemoryScope | None:
    """The ``#bulkred.scope`` of a buffer type, or None when it has none."""
    if isinstance(t, MemRefType) and isinstance(t.memory_space, MemoryScopeAttr):
        return t.memory_space.data
    return None


def buffer_type(shape: Sequence[int], element_type: Attribute, scope: MemoryScope) -> MemRefType:
    """``memref<shape x element_type, #bulkred.scope<scope>>``; a shape of plain ints is
    made once per (shape, element type, scope) (an immutable attribute, about 35 us to
    build: the builder and the lowerings ask for the same few again and again)."""
    dims = tuple(shape)
    if all(type(d) is int for d in dims):
        return _buffer_type(dims, element_type, scope)
    return MemRefType(element_type, list(dims), memory_space=MemoryScopeAttr(scope))


@functools.lru_cache(maxsize=4096)
def _buffer_type(shape: tuple[int, ...], element_type: Attribute, scope: MemoryScope) -> MemRefType:
    return MemRefType(element_type, list(shape), memory_space=MemoryScopeAttr(scope))


def expect_buffer(field: str, v: SSAValue, scopes: Sequence[MemoryScope] | None = None) -> MemRefType:
    t = v.type
    s = scope_of(t)
    if not isinstance(t, MemRefType) or s is None:
        raise VerifyException(
            f"operand '{field}' must be a memref with a #bulkred.scope memory space, got {t}"
        )
    if scopes is not None and s not in scopes:
        raise VerifyException(
            f"operand '{field}' must be in scope {' or '.join(str(x) for x in scopes)}, got {s}"
        )
    return t


ELEMENT_TYPES: tuple[Attribute, ...] = tuple(d.ir for d in ELEMENT_DTYPES)
"""The element types of tile-level buffers (``ops/dtypes.py``'s rows with ``element``):
the ones every lowering handles.

Integers are signless and treated as signed by the lowering (``add/min/max.s16/s32/s64``,
``and/or/xor.b16/b32/b64``); floats are combined with PTX's own instructions.
"""


GRID_ELEMENT_TYPES: tuple[Attribute, ...] = tuple(d.ir for d in GRID_DTYPES)
"""The element types of grid-scope ``bulkred.reduce`` (``ops/dtypes.py``'s rows with
``collective`` or ``grid``): those of :data:`ELEMENT_TYPES` that the collective lowerings
take, and the unsigned (``ui8``...) and 8-bit ones, which only global buffers hold."""


def check_element_type(field: str, t: MemRefType, *, grid: bool = False) -> None:
    """Raise unless ``t``'s element type is one of :data:`ELEMENT_TYPES` (with ``grid``:
    of :data:`GRID_ELEMENT_TYPES`)."""
    elt = t.element_type
    types = GRID_ELEMENT_TYPES if grid else ELEMENT_TYPES
    if elt in types:
        return
    valid = ", ".join(str(e) for e in types)
    signedness = elt.signedness.data if isinstance(elt, IntegerType) else Signedness.SIGNLESS
    if grid and signedness == Signedness.SIGNED:
        note = " (integers must be signless or unsigned)"
    elif not grid and signedness != Signedness.SIGNLESS:
        note = " (integers must be signless)"
    else:
        note = ""
    raise VerifyException(f"'{field}' element type must be one of {valid}, got {elt}{note}")


def check_static_positive_shape(field: str, t: MemRefType) -> list[int]:
    """The shape of ``t``; raise when a dimension is dynamic or < 1."""
    shape = list(t.get_shape())
    if any(d == DYNAMIC_INDEX for d in shape):
        raise VerifyException(f"'{field}' must have a static shape, got {shape_str(shape)}")
    if any(d < 1 for d in shape):
        raise VerifyException(f"'{field}' dimensions must be >= 1, got {shape}")
    return shape


def shape_str(shape: Sequence[int]) -> str:
    """``[?, 4]`` for a shape with a dynamic dimension."""
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) + "]"
