"""``memref`` ops of level 2 into ptx memory ops: ``memref.alloca`` (scope local, shared)
-> ``ptx.alloc`` (a ``.local`` / ``.shared`` array) and ``ptx.mov.addr``;
``memref.load`` / ``memref.store`` -> address arithmetic (addresses.py) + ``ptx.ld`` /
``ptx.st``; ``memref.subview`` (static sizes and strides) -> the view's first element, its
loads and stores using the source's strides (docs/kernels.md).

A bool (``i1``) element is one byte holding 0 or 1, as numpy and torch store it (and as
the grid lowerings move it): a load is ``ld.u8`` into a 32-bit register and
``setp.ne.b32`` against 0 (any non-zero byte is true); a store is ``selp.b32`` of 1 or 0
(a constant: the byte itself) and ``st.b8``.

Arrays: ``.local`` arrays are aligned to 16 bytes; ``.shared`` arrays to 16 bytes, or 128
bytes from 128 bytes up (bulk-copy tiles). The ``cluster_shared`` scope allocates in the
CTA's own shared memory like ``shared`` (peers reach it through ``mapa``). Shared buffers
that add up to more static ``.shared`` memory than ptxas allows on the target are a
located error."""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerType, MemRefType
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.base import constant_int, i1, i32
from bulkred_dialect.ops.ptx.control import CmpOp, SelpOp, SelpType, SetpOp, SetpType
from bulkred_dialect.ops.ptx.memory import (
    AllocOp,
    AllocSpace,
    LdOp,
    LdStType,
    MovAddrOp,
    StOp,
    ldst_type_for,
    static_shared_error,
)
from bulkred_dialect.ops.tile import MemoryScope, scope_of
from bulkred_dialect.passes.lower_to_ptx.addresses import address
from bulkred_dialect.passes.lower_to_ptx.state import Buffer, LoweringState, element_bytes

_SCOPE_SPACE: dict[MemoryScope, AllocSpace] = {
    MemoryScope.LOCAL: AllocSpace.LOCAL,
    MemoryScope.SHARED: AllocSpace.SHARED,
    MemoryScope.CLUSTER_SHARED: AllocSpace.SHARED,
}


def _symbol(k: LoweringState, space: AllocSpace, hint: str | None) -> str:
    stem = f"__{space}{len(k.symbols)}"
    if hint and hint.replace("_", "a").isalnum() and hint.isascii():
        stem += f"_{hint}"
    k.symbols.add(stem)
    return stem


def alloca(k: LoweringState, op: memref.AllocaOp) -> None:
    t = op.memref.type
    assert isinstance(t, MemRefType)
    scope = scope_of(t)
    if scope not in _SCOPE_SPACE:
        raise LocatedError(
            op, f"can allocate only local, shared or cluster_shared buffers in a kernel, got {t}"
        )
    if t.element_type == IntegerType(1):  # bool: global buffers (parameters) hold it, one byte each
        raise LocatedError(op, f"element type {t.element_type} has no PTX load/store form")
    k.check_static(op, t)
    if op.dynamic_sizes or op.symbol_operands:
        raise LocatedError(op, "needs a static allocation without operands")
    space = _SCOPE_SPACE[scope]
    esize = element_bytes(t.element_type)
    assert esize is not None
    size = esize
    for d in t.get_shape():
        size *= d
    if size == 0:
        raise LocatedError(op, f"needs at least one element, got {t}")
    align = max(16, esize)
    if space == AllocSpace.SHARED and size >= 128:
        align = 128
    name = _symbol(k, space, op.memref.name_hint)
    decl = AllocOp(name, space, size, align)
    decl.location = op.location
    # declarations first in the kernel, in source order
    if k.last_decl is not None:
        Rewriter.insert_op(decl, InsertPoint.after(k.last_decl))
    else:
        entry = k.kernel.body.blocks.first
        assert entry is not None
        Rewriter.insert_op(decl, InsertPoint.at_start(entry))
    k.last_decl = decl
    if space == AllocSpace.SHARED:
        k.shared.append(decl)
        error = static_shared_error(k.shared, k.target)
        if error is not None:
            raise LocatedError(op, error[1])
    addr = k.insert(op, MovAddrOp(name, space.state_space))
    k.buffers[addr.results[0]] = Buffer(addr.results[0], t)
    k.replace(op, addr.results)


def subview(k: LoweringState, op: memref.SubviewOp) -> None:
    src = k.buffer(op, op.source)
    t = op.result.type
    assert isinstance(t, MemRefType)
    rank = len(src.type.get_shape())
    sizes = list(op.static_sizes.get_values())
    strides = list(op.static_strides.get_values())
    if op.sizes or op.strides or DYNAMIC_INDEX in sizes or DYNAMIC_INDEX in strides:
        raise LocatedError(op, "needs static sizes and strides (only the offsets may be values)")
    if len(t.get_shape()) != rank:
        raise LocatedError(
            op, f"needs a subview of the source's rank {rank} (no rank reduction), got {t}"
        )
    dynamic = iter(op.offsets)
    offsets: list[SSAValue | int] = [
        next(dynamic) if o == DYNAMIC_INDEX else o for o in op.static_offsets.get_values()
    ]
    want = memref.SubviewOp.infer_result_type(
        src.type, [o if isinstance(o, int) else 0 for o in offsets], sizes, strides
    )
    # the view's own offset is read from the IR; only the layout's strides must agree
    if (
        list(t.get_shape()) != sizes
        or t.element_type != src.type.element_type
        or t.memory_space != src.type.memory_space
        or list(t.get_strides() or []) != list(want.get_strides() or [])
    ):
        raise LocatedError(
            op,
            f"result type must have shape {sizes}, strides {list(want.get_strides() or [])}, "
            f"the element type and memory space of {src.type}, got {t}",
        )
    if element_bytes(t.element_type) is None:
        raise LocatedError(op, f"element type {t.element_type} has no PTX load/store form")
    base, offset = address(k, op, src, offsets)
    view_strides = [a * b for a, b in zip(src.element_strides(), strides)]
    k.buffers[op.result] = Buffer(base, t, offset, view_strides)
    k.created.append(op)  # erased with the dead ops once its users are lowered


def load(k: LoweringState, op: memref.LoadOp) -> None:
    buf = k.buffer(op, op.memref)
    addr, offset = address(k, op, buf, op.indices)
    et = buf.type.element_type
    if et == i1:  # bool: its byte into a 32-bit register, true when not 0
        byte = k.insert(op, LdOp(LdStType.U8, addr, i32, offset), pure=False).results[0]
        new = k.insert(op, SetpOp(CmpOp.NE, SetpType.B32, byte, k.imm(op, 0, i32)))
        k.replace(op, new.results)
        return
    ldst = ldst_type_for(et)
    assert ldst is not None
    # ld.u8 fills a 16-bit register; the IR value keeps its own type (i8 -> %rs)
    new = k.insert(op, LdOp(ldst, addr, et, offset), pure=False)
    k.replace(op, new.results)


def store(k: LoweringState, op: memref.StoreOp) -> None:
    buf = k.buffer(op, op.memref)
    addr, offset = address(k, op, buf, op.indices)
    value = op.value
    if buf.type.element_type == i1:  # bool: the byte 1 or 0
        c = constant_int(value)
        if c is not None:
            value = k.imm(op, c & 1, i32)
        else:
            one, zero = k.imm(op, 1, i32), k.imm(op, 0, i32)
            value = k.insert(op, SelpOp(SelpType.B32, one, zero, value)).results[0]
        k.insert(op, StOp(LdStType.B8, addr, value, offset), pure=False)
        Rewriter.erase_op(op)
        return
    ldst = ldst_type_for(buf.type.element_type)
    assert ldst is not None
    k.insert(op, StOp(ldst, addr, value, offset), pure=False)
    Rewriter.erase_op(op)


MEMREF_HANDLERS = {
    memref.AllocaOp: alloca,
    memref.SubviewOp: subview,
    memref.LoadOp: load,
    memref.StoreOp: store,
}
