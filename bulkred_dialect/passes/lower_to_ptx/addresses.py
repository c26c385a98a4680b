"""Address arithmetic: the byte offset of ``m[i, j]`` is ``(i * stride_0 + j) * elem_bytes``
(row-major, static shapes only; for a view, its offset plus ``i * stride_0 + j * stride_1``
with the source's strides). Indices are read as linear combinations through index adds,
subtractions and multiplications by constants: the constant part folds into the ``offset``
of ``ld``/``st`` (``A[i + 1]`` is ``[%rd+4]`` after ``4*i``), each remaining value costs one
``mul.lo.s64`` (skipped when its factor is 1) and one ``add``. Shared-memory addresses are
32-bit: the byte offset is narrowed with ``cvt.u32.u64`` where it meets one."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation, SSAValue

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.arith import AddOp, ArithType, MulLoOp, SubOp
from bulkred_dialect.ops.ptx.base import PtrType, constant_int
from bulkred_dialect.ops.ptx.control import CvtOp, CvtType
from bulkred_dialect.ops.ptx.memory import PtrAddOp
from bulkred_dialect.passes.lower_to_ptx.state import Buffer, LoweringState, element_bytes


def linear(v: SSAValue, depth: int = 8) -> tuple[list[tuple[SSAValue, int]], int]:
    """``v`` as ``sum(factor * value) + constant`` through i64 ``ptx.add/sub/mul.lo`` with
    constant operands, so that ``A[i + 1]`` loads from ``[A + 4*i + 4]``. Exact: address
    arithmetic is modulo 2^64 as the index arithmetic is."""
    c = constant_int(v)
    if c is not None:
        return [], c
    op = v.owner
    if depth > 0 and isinstance(op, AddOp | SubOp | MulLoOp) and op.type.data == ArithType.S64:
        (ta, ca), (tb, cb) = linear(op.lhs, depth - 1), linear(op.rhs, depth - 1)
        if isinstance(op, AddOp):
            return ta + tb, ca + cb
        if isinstance(op, SubOp):
            return ta + [(x, -f) for x, f in tb], ca - cb
        if not tb:
            return [(x, f * cb) for x, f in ta], ca * cb
        if not ta:
            return [(x, f * ca) for x, f in tb], ca * cb
    return [(v, 1)], 0


def address(
    k: LoweringState, op: Operation, buf: Buffer, indices: Sequence[SSAValue | int]
) -> tuple[SSAValue, int]:
    """(address, constant byte offset) of ``buf[indices]``: the view's offset plus each
    index times its stride, in bytes."""
    shape = buf.type.get_shape()
    esize = element_bytes(buf.type.element_type)
    assert esize is not None
    if len(indices) != len(shape):
        raise LocatedError(op, f"needs {len(shape)} indices for {buf.type}, got {len(indices)}")
    strides = [esize * s for s in buf.element_strides()]
    offset = buf.byte_offset
    factors: dict[SSAValue, int] = {}
    for idx, stride in zip(indices, strides):
        terms, c = ([], idx) if isinstance(idx, int) else linear(idx)
        offset += c * stride
        for v, f in terms:
            factors[v] = factors.get(v, 0) + f * stride
    total: SSAValue | None = None
    for v, f in factors.items():
        if f == 0:
            continue
        term = v
        if f != 1:
            term = k.insert(op, MulLoOp(ArithType.S64, v, k.imm(op, f))).results[0]
        if total is not None:
            term = k.insert(op, AddOp(ArithType.S64, total, term)).results[0]
        total = term
    if not -(2**31) <= offset < 2**31:
        big = k.imm(op, offset)
        total = big if total is None else k.insert(op, AddOp(ArithType.S64, total, big)).results[0]
        offset = 0
    if total is None:
        return buf.base, offset
    assert isinstance(buf.base.type, PtrType)
    if buf.base.type.bits == 32:
        total = k.insert(op, CvtOp(CvtType.U32, CvtType.U64, total)).results[0]
    return k.insert(op, PtrAddOp(buf.base, total)).results[0], offset


def first_element(k: LoweringState, op: Operation, buf: Buffer) -> SSAValue:
    """The address of ``buf``'s first element (its base, moved by a view's offset)."""
    if buf.byte_offset == 0:
        return buf.base
    assert isinstance(buf.base.type, PtrType)
    offset = k.imm(op, buf.byte_offset, IntegerType(buf.base.type.bits))
    return k.insert(op, PtrAddOp(buf.base, offset)).results[0]
