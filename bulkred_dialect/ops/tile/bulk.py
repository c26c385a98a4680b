"""Moving data between memories: ``bulkred.copy`` (element-wise, by the executing
threads), ``bulkred.bulk_copy`` and ``bulkred.bulk_reduce`` (the asynchronous bulk
operations: ``cp.async.bulk`` and ``cp.reduce.async.bulk``), with their byte-size,
view and cluster checks."""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, NoneAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, operand_def, opt_operand_def, prop_def
from xdsl.irdl.operations import AttrSizedOperandSegments
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.ops.dtypes import of_ir
from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.tile.attrs import (
    BITWISE_KINDS,
    BOOL_KINDS,
    FUSED_KINDS,
    MemoryScope,
    ReduceKind,
    ReduceKindAttr,
    kernel_launch,
)
from bulkred_dialect.ops.tile.buffers import (
    buffer_type,
    check_element_type,
    check_in_kernel,
    check_static_positive_shape,
    enclosing_kernel,
    expect_buffer,
    scope_of,
    shape_str,
)


@op_definition
class CopyOp(IRDLOperation):
    """Element-wise copy between two buffers of one shape and element type, by the
    executing threads of ``scope`` (the card's ``for i in T.serial(n): dst[i] = src[i]``).
    The element type is one of :data:`ELEMENT_TYPES`; every dimension is static and >= 1.

    Example: ``bulkred.copy %A, %A_local : memref<32xf32, #bulkred.scope<global>>, memref<32xf32, #bulkred.scope<local>>``
    """

    name = "bulkred.copy"

    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)

    assembly_format = "$src `,` $dst attr-dict `:` type($src) `,` type($dst)"

    def __init__(self, src: SSAValue, dst: SSAValue):
        super().__init__(operands=[src, dst])

    def verify_(self) -> None:
        check_in_kernel(self)
        st = expect_buffer("src", self.src)
        dt = expect_buffer("dst", self.dst)
        if st.get_shape() != dt.get_shape() or st.element_type != dt.element_type:
            raise VerifyException(
                f"'dst' must have the shape and element type of 'src' {st}, got {dt}"
            )
        check_element_type("src", st)
        check_static_positive_shape("src", st)


@op_definition
class BulkCopyOp(IRDLOperation):
    """Asynchronous bulk copy between memories (lowers to ``cp.async.bulk``).

    Directions: global -> shared, global -> cluster_shared (to the CTA ``rank``, or
    multicast to the CTAs of ``cta_mask``, issued by CTA 0 and collective over the
    cluster), shared -> cluster_shared (to the CTA
    ``rank``), shared -> global. Copies into shared memory complete on ``mbar``; the copy
    to global completes through the bulk async-group. The byte size must be a multiple
    of 16 and at most :data:`MAX_SHARED_BYTES` (the shared buffer must fit in one CTA's
    shared memory). ``src`` and ``dst`` may be ``memref.subview`` views that cover one
    contiguous range (:func:`check_contiguous`). Like every tile op it must be inside a
    ``func.func`` kernel.

    Into cluster_shared with ``rank`` (an ``index``, the same in every CTA) the op is
    collective over the cluster: every CTA other than ``rank`` copies its ``src`` into
    the ``dst`` of CTA ``rank`` (``dst`` may be a view at a per-CTA offset, so that the
    copies land side by side); when it returns, CTA ``rank``'s ``dst`` holds them.

    Example: ``bulkred.bulk_copy %g, %s, %mbar : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>``

    ``bulkred.bulk_copy %s, %c, %mbar rank %r : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>``
    """

    name = "bulkred.bulk_copy"

    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    mbar = opt_operand_def(MemRefType)
    cta_mask = opt_operand_def(IntegerType(16))
    rank = opt_operand_def(IndexType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$src `,` $dst (`,` $mbar^)? (`multicast` $cta_mask^)? (`rank` $rank^)? attr-dict "
        "`:` type($src) `,` type($dst) (`,` type($mbar)^)?"
    )

    _DIRECTIONS: ClassVar = {
        (MemoryScope.GLOBAL, MemoryScope.SHARED),
        (MemoryScope.GLOBAL, MemoryScope.CLUSTER_SHARED),
        (MemoryScope.SHARED, MemoryScope.CLUSTER_SHARED),
        (MemoryScope.SHARED, MemoryScope.GLOBAL),
    }

    def verify_(self) -> None:
        check_in_kernel(self)
        st = expect_buffer("src", self.src)
        dt = expect_buffer("dst", self.dst)
        direction = (scope_of(st), scope_of(dt))
        if direction not in self._DIRECTIONS:
            raise VerifyException(
                f"bulk copy from {direction[0]} to {direction[1]} is not supported "
                "(valid: global->shared, global->cluster_shared, shared->cluster_shared, shared->global)"
            )
        if st.get_shape() != dt.get_shape() or st.element_type != dt.element_type:
            raise VerifyException(f"'dst' must have the shape and element type of 'src' {st}, got {dt}")
        check_bulk_bytes(st, direction[1])
        check_contiguous("src", st)
        check_contiguous("dst", dt)
        needs_mbar = direction[1] != MemoryScope.GLOBAL
        if needs_mbar and self.mbar is None:
            raise VerifyException(f"a bulk copy into {direction[1]} needs an 'mbar' operand")
        if not needs_mbar and self.mbar is not None:
            raise VerifyException("a bulk copy into global completes by bulk group and takes no 'mbar'")
        _check_mbar(self.mbar)
        if self.cta_mask is not None and direction != (MemoryScope.GLOBAL, MemoryScope.CLUSTER_SHARED):
            raise VerifyException("'cta_mask' (multicast) is only valid for a global -> cluster_shared copy")
        if self.cta_mask is not None and self.rank is not None:
            raise VerifyException(
                "'rank' is not valid with 'cta_mask': a multicast copy writes every CTA of the mask"
            )
        if self.cta_mask is None:
            _check_rank(self, self.rank, direction[1], bulk_bytes(st))
        else:
            _check_cluster_launch(self, bulk_bytes(st), senders_per_receiver=1)


def _check_mbar(v: SSAValue | None) -> None:
    if v is None:
        return
    want = buffer_type([1], IntegerType(64), MemoryScope.SHARED)
    if v.type != want:
        raise VerifyException(f"operand 'mbar' must be {want}, got {v.type}")


def ptx_reduce_type(kind: ReduceKind, elt: Attribute) -> str | None:
    """The cp.reduce.async.bulk '.type' a bulk reduce of ``kind`` on ``elt`` uses.

    Integers are signed; 64-bit add uses .u64 (the table has no .s64 add, and
    two's-complement addition does not depend on the sign).
    """
    d = of_ir(elt)
    if d is None or d.is_float:
        return None if d is None else d.short
    if d.bits not in (32, 64):
        return None
    if kind in BITWISE_KINDS:
        return f"b{d.bits}"
    if kind == ReduceKind.SUM and d.bits == 64:
        return "u64"
    return f"s{d.bits}"


def _check_reduce_table(kind: ReduceKind, elt: Attribute, dst: MemoryScope) -> None:
    from bulkred_dialect.ops.ptx.base import StateSpace
    from bulkred_dialect.ops.ptx.bulk import REDUCE_TABLE, BulkRedOp

    space = StateSpace.GLOBAL if dst == MemoryScope.GLOBAL else StateSpace.SHARED_CLUSTER
    red_op = BulkRedOp("add" if kind == ReduceKind.SUM else str(kind))
    valid = [str(t) for t in REDUCE_TABLE[space].get(red_op, ())]
    ptx_type = ptx_reduce_type(kind, elt)
    if ptx_type is None or ptx_type not in valid:
        raise VerifyException(
            f"'kind' {kind} on element type {elt} has no cp.reduce.async.bulk form into {dst} "
            f"(valid .type for .{red_op}: {', '.join(valid)})"
        )


MAX_SHARED_BYTES = 232448
"""The most shared memory one CTA can have on any target with bulk operations (227 KiB
on sm_90 and sm_100; CUDA C++ Programming Guide, "Technical Specifications per Compute
Capability"): every bulk operation reads or writes a shared buffer of its full size.
How much of it static ``.shared`` arrays may take depends on the target (48 KiB unless
it is sm_90a/sm_100a/sm_103a): ``lower-to-ptx`` and the printer check the kernel's total."""

MAX_TX_BYTES = 2**20 - 1
"""The largest transaction count of an mbarrier (PTX ISA, mbarrier: "tx-count" is in the
range [0, 2^20 - 1]): the bytes one complete-tx bulk copy signals."""


def _bulk_limit(dst: MemoryScope) -> tuple[int, str]:
    """The largest bulk size in bytes into ``dst``, and why."""
    if dst == MemoryScope.GLOBAL:
        return MAX_SHARED_BYTES, "the largest shared memory of a CTA, which holds 'src'"
    # both limits apply; the shared-memory one is the smaller
    limit = min(MAX_SHARED_BYTES, MAX_TX_BYTES)
    return limit, (
        f"the largest shared memory of a CTA, which holds 'dst'; "
        f"the mbarrier tx-count allows {MAX_TX_BYTES}"
    )


def bulk_bytes(t: MemRefType) -> int:
    """The byte size of a buffer of type ``t`` (static shape, element type with a width)."""
    n = t.element_type.bitwidth // 8  # type: ignore[attr-defined]
    for d in t.get_shape():
        n *= d
    return n


def check_bulk_bytes(t: MemRefType, dst: MemoryScope) -> None:
    """``src`` (of type ``t``): an allowed element type, a static positive shape, and a
    byte size that is a multiple of 16 and fits the shared memory of a CTA (and, into
    shared memory, the mbarrier transaction count)."""
    check_element_type("src", t)
    check_static_positive_shape("src", t)
    nbytes = bulk_bytes(t)
    if nbytes % 16 != 0:
        raise VerifyException(f"bulk size must be a multiple of 16 bytes, got {nbytes}")
    limit, why = _bulk_limit(dst)
    if nbytes > limit:
        raise VerifyException(f"bulk size must be <= {limit} bytes ({why}), got {nbytes}")


def check_contiguous(field: str, t: MemRefType) -> None:
    """Raise unless a buffer of type ``t`` (a view, maybe) covers one contiguous range of
    memory starting at a 16-byte boundary when its offset is static: a bulk operation
    moves one range of bytes. A row slice of a matrix is contiguous only when it spans
    full rows (dimensions of extent 1 do not matter)."""
    if isinstance(t.layout, NoneAttr):
        return
    shape = list(t.get_shape())
    strides = t.get_strides()
    expected = 1
    ok = strides is not None and None not in strides
    if ok:
        assert strides is not None
        for d, stride in reversed(list(zip(shape, strides))):
            if d == 1:
                continue
            if stride != expected:
                ok = False
                break
            expected *= d
    if not ok:
        shown = "?" if strides is None else "[" + ", ".join("?" if x is None else str(x) for x in strides) + "]"
        raise VerifyException(
            f"'{field}' must be one contiguous range of memory for a bulk operation, got strides "
            f"{shown} for shape {shape_str(shape)} (a slice of a matrix is contiguous only when "
            "it spans full rows)"
        )
    offset = t.get_offset()
    esize = t.element_type.bitwidth // 8  # type: ignore[attr-defined]
    if offset is not None and offset * esize % 16 != 0:
        raise VerifyException(
            f"'{field}' must start at a multiple of 16 bytes for a bulk operation, got offset "
            f"{offset} elements ({offset * esize} bytes)"
        )


def _check_rank(op: Operation, rank: SSAValue | None, dst: MemoryScope | None, nbytes: int) -> None:
    """A bulk op into cluster_shared names the receiving CTA with ``rank``; no other takes
    one. With the kernel's launch known, the cluster must have 2 or more CTAs and the
    bytes of every other CTA must fit the receiver's mbarrier transaction count."""
    if dst != MemoryScope.CLUSTER_SHARED:
        if rank is not None:
            raise VerifyException(f"'rank' is only valid for a bulk operation into cluster_shared, not into {dst}")
        return
    if rank is None:
        raise VerifyException(
            "a bulk operation into cluster_shared needs a 'rank' operand (the CTA whose buffer it writes)"
        )
    _check_cluster_launch(op, nbytes, senders_per_receiver=None)


def _check_cluster_launch(op: Operation, nbytes: int, senders_per_receiver: int | None) -> None:
    """With the kernel's launch known: a cluster of 2 or more CTAs, and the bytes one
    receiver expects (from every other CTA, or from ``senders_per_receiver``) within the
    mbarrier's tx-count."""
    kernel = enclosing_kernel(op)
    launch = kernel_launch(kernel) if kernel is not None else None
    if launch is None:
        return
    c = launch.cluster_dims
    ctas = c[0] * c[1] * c[2]
    if ctas < 2:
        raise VerifyException(
            f"a bulk operation into cluster_shared needs a kernel launched with a cluster of 2 or more "
            f"CTAs, got 'cluster' {list(c)}"
        )
    senders = ctas - 1 if senders_per_receiver is None else senders_per_receiver
    if senders * nbytes > MAX_TX_BYTES:
        raise VerifyException(
            f"the receiving CTA expects {senders} x {nbytes} bytes from the other CTAs of its cluster "
            f"of {ctas}, more than the mbarrier tx-count allows ({MAX_TX_BYTES})"
        )


@op_definition
class BulkReduceOp(IRDLOperation):
    """Asynchronous element-wise reduce of a shared buffer into a global or a peer
    CTA's shared buffer (lowers to ``cp.reduce.async.bulk``). The byte size must be a
    multiple of 16 and at most :data:`MAX_SHARED_BYTES`; views must be contiguous.

    Into cluster_shared it takes ``rank`` (an ``index``, the same in every CTA) and is
    collective over the cluster: every CTA other than ``rank`` reduces its ``src`` into
    the ``dst`` of CTA ``rank``; when it returns, that ``dst`` holds the result.

    Example: ``bulkred.bulk_reduce sum %tile, %out : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>``
    """

    name = "bulkred.bulk_reduce"

    kind = prop_def(ReduceKindAttr)
    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    mbar = opt_operand_def(MemRefType)
    rank = opt_operand_def(IndexType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$kind $src `,` $dst (`,` $mbar^)? (`rank` $rank^)? attr-dict `:` type($src) `,` type($dst) "
        "(`,` type($mbar)^)?"
    )

    def verify_(self) -> None:
        check_in_kernel(self)
        st = expect_buffer("src", self.src, [MemoryScope.SHARED])
        dt = expect_buffer("dst", self.dst, [MemoryScope.GLOBAL, MemoryScope.CLUSTER_SHARED])
        if st.get_shape() != dt.get_shape() or st.element_type != dt.element_type:
            raise VerifyException(f"'dst' must have the shape and element type of 'src' {st}, got {dt}")
        if self.kind.data in BITWISE_KINDS and not isinstance(st.element_type, IntegerType):
            raise VerifyException(f"'kind' {self.kind.data} needs an integer element type, got {st.element_type}")
        if self.kind.data in (ReduceKind.PROD, *BOOL_KINDS, *FUSED_KINDS):
            raise VerifyException(
                f"'kind' {self.kind.data} has no cp.reduce.async.bulk form (valid: sum, max, min, and, or, xor)"
            )
        check_bulk_bytes(st, scope_of(dt))
        check_contiguous("src", st)
        check_contiguous("dst", dt)
        _check_reduce_table(self.kind.data, st.element_type, scope_of(dt))
        _check_mbar(self.mbar)
        to_cluster = scope_of(dt) == MemoryScope.CLUSTER_SHARED
        if to_cluster and self.mbar is None:
            raise VerifyException("a bulk reduce into cluster_shared needs an 'mbar' operand")
        if not to_cluster and self.mbar is not None:
            raise VerifyException("a bulk reduce into global completes by bulk group and takes no 'mbar'")
        _check_rank(self, self.rank, scope_of(dt), bulk_bytes(st))
