"""``lower-bulk-ops``: the tile-level bulk ops ``bulkred.bulk_copy`` and
``bulkred.bulk_reduce`` into ptx bulk instructions with their synchronization
(docs/lowering.md, "Bulk operations").

A tile-level bulk op is **CTA-collective and synchronous**: every thread of the CTA
executes it; one elected thread (linear thread id 0, ``%tid.x | %tid.y | %tid.z == 0``)
issues the asynchronous instruction; when the op returns, a shared destination is
visible to every thread of the CTA and a global destination is complete in global
memory. The sequences (``elected:`` runs under ``scf.if`` on the elected thread,
``all:`` on every thread)::

    bulk_copy global -> shared (%g, %s, %mbar)
      elected: mbarrier.init [mbar], 1; fence.mbarrier_init.release.cluster
      all:     fence.proxy.async; bar.sync 0
      elected: mbarrier.arrive.expect_tx _, [mbar], bytes
               cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
                   [s], [g], bytes, [mbar]            (the own CTA's addresses)
      all:     scf.while on mbarrier.try_wait.parity [mbar], 0; bar.sync 0
      elected: mbarrier.inval [mbar]

    bulk_copy shared -> global (%s, %g); bulk_reduce shared -> global
      all:     fence.proxy.async; bar.sync 0
      elected: cp.async.bulk.global.shared::cta.bulk_group [g], [s], bytes
               (cp.reduce.async.bulk.global.shared::cta.bulk_group.redOp[.noftz].type)
               cp.async.bulk.commit_group; cp.async.bulk.wait_group 0
      all:     bar.sync 0

Addresses are ``builtin.unrealized_conversion_cast`` of the memrefs to
``!ptx.ptr<space>`` (``lower-to-ptx`` resolves them); sizes are ``arith.constant``
bytes of type ``i32``. Every created op carries the location of the tile op it replaces.

The directions into ``cluster_shared`` (global -> cluster_shared, shared ->
cluster_shared, bulk_reduce into cluster_shared) take the receiving CTA's ``rank`` and are
collective over the cluster (every CTA other than ``rank`` sends; ``receiver`` is
``%cluster_ctarank == rank``; n CTAs per cluster, from ``bulkred.launch``)::

    receiver, elected: mbarrier.init [mbar], 1; fence.mbarrier_init.release.cluster
                       mbarrier.arrive.expect_tx _, [mbar], (n - 1) * bytes
    all:               fence.proxy.async; barrier.cluster.arrive.release + wait.acquire
    sender, elected:   cp.async.bulk.shared::cluster.{shared::cta,global} (or
                       cp.reduce.async.bulk.shared::cluster.shared::cta)
                           [mapa(dst, rank)], [src], bytes, [mapa(mbar, rank)]
    receiver:          scf.while on mbarrier.try_wait.parity [mbar], 0
    all:               barrier.cluster.arrive.release + wait.acquire
    receiver, elected: mbarrier.inval [mbar]

With ``cta_mask`` (multicast, global -> cluster_shared) CTA 0 issues one copy for every
CTA whose bit is set (``receiver``), at CTA 0's ``dst`` offset::

    receiver, elected: mbarrier.init [mbar], 1; fence.mbarrier_init.release.cluster
                       mbarrier.arrive.expect_tx _, [mbar], bytes
    all:               fence.proxy.async; barrier.cluster.arrive.release + wait.acquire
    rank 0, elected:   cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
                           .multicast::cluster [dst], [src], bytes, [mbar], cta_mask
    receiver:          scf.while on mbarrier.try_wait.parity [mbar], 0
    all:               barrier.cluster.arrive.release + wait.acquire
    receiver, elected: mbarrier.inval [mbar]

A cluster direction in a kernel without a ``bulkred.launch`` cluster of 2 or more CTAs is
a located error.

Example::

    bulkred-opt kernel.mlir -p lower-bulk-ops
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.arith import AndOp, ArithType, OrOp, ShrOp
from bulkred_dialect.ops.ptx.base import StateSpace, i1, i32
from bulkred_dialect.ops.ptx.bulk import (
    NOFTZ_TYPES,
    REDUCE_TABLE,
    BulkRedOp,
    BulkRedType,
    CpAsyncBulkGlobalSharedCtaOp,
    CpAsyncBulkSharedClusterGlobalOp,
    CpAsyncBulkSharedClusterSharedCtaOp,
    CpReduceAsyncBulkGlobalSharedCtaOp,
    CpReduceAsyncBulkSharedClusterSharedCtaOp,
    Multicast,
)
from bulkred_dialect.ops.ptx.sreg import MovSregOp, SpecialRegister
from bulkred_dialect.ops.ptx.sync import (
    MapaOp,
    CpAsyncBulkCommitGroupOp,
    CpAsyncBulkWaitGroupOp,
    FenceMbarrierInitOp,
    FenceProxyAsyncOp,
    MbarrierArriveExpectTxOp,
    MbarrierInitOp,
    MbarrierInvalOp,
    MbarrierTryWaitParityOp,
)
from bulkred_dialect.ops.tile import (
    BulkCopyOp,
    BulkReduceOp,
    MemoryScope,
    ReduceKind,
    bulk_bytes,
    check_bulk_bytes,
    enclosing_kernel,
    kernel_launch,
    ptx_reduce_type,
    scope_of,
)
from bulkred_dialect.passes.emitter import Emitter


def _elected(e: Emitter, op: Operation) -> SSAValue:
    """True on the thread of linear id 0: ``(%tid.x | %tid.y | %tid.z) == 0``, leaving
    out the dimensions the kernel's ``bulkred.launch`` block has extent 1 in (the
    printer's ``.reqntid`` holds every launch to that block)."""
    block = _block_dims(op)
    if block is None:
        regs = list(_TID)
    else:
        regs = [r for r, n in zip(_TID, block) if n > 1] or [_TID[0]]
    ids = [e.value(MovSregOp(r)) for r in regs]
    for r, v in zip(regs, ids):
        v.name_hint = str(r).replace(".", "_")
    tid = ids[0]
    for other in ids[1:]:
        tid = e.value(OrOp(ArithType.B32, tid, other))
    elected = e.value(arith.CmpiOp(tid, e.const(0), "eq"))
    elected.name_hint = "elected"
    return elected


def _wait(e: Emitter, mbar: SSAValue, parity: int) -> None:
    """Spin until the mbarrier phase of ``parity`` completed (``try_wait`` returns
    after a bounded time, so it is retried)."""
    p = e.const(parity)
    true = e.const(1, i1)

    def pending(b: Emitter) -> SSAValue:
        done = b.value(MbarrierTryWaitParityOp(mbar, p))
        done.name_hint = "done"
        return b.value(arith.XOrIOp(done, true))

    e.while_(pending)


def _inval(mbar: SSAValue) -> Callable[[Emitter], None]:
    def inval(e: Emitter) -> None:
        e.emit(MbarrierInvalOp(mbar))

    return inval


_TID = (SpecialRegister.TID_X, SpecialRegister.TID_Y, SpecialRegister.TID_Z)


def _block_dims(op: Operation) -> tuple[int, int, int] | None:
    """The block shape of the kernel around ``op``, when it has a ``bulkred.launch``
    (a located error on the kernel when that is not a ``#bulkred.launch<...>``)."""
    kernel = enclosing_kernel(op)
    if kernel is None:
        raise LocatedError(op, "must be inside a func.func kernel")
    try:
        launch = kernel_launch(kernel)
    except VerifyException as e:
        raise LocatedError(kernel, str(e)) from None
    return launch.block_dims if launch is not None else None


def _check_lowerable(op: BulkCopyOp | BulkReduceOp) -> None:
    """Reject the directions into cluster_shared, which need a peer CTA rank, a kernel
    with a bad ``bulkred.launch``, and a size the verifier would reject (for IR built
    without verifying it: the i32 size constant must not overflow)."""
    dst = scope_of(op.dst.type)
    _block_dims(op)
    try:
        check_bulk_bytes(op.src.type, dst)  # type: ignore[arg-type]
    except VerifyException as e:
        raise LocatedError(op, str(e)) from None
    if dst != MemoryScope.CLUSTER_SHARED:
        return
    _cluster_size(op)
    if isinstance(op, BulkCopyOp) and op.cta_mask is not None:
        return
    if op.rank is None:
        raise LocatedError(op, "a bulk operation into cluster_shared needs a 'rank' operand")


def _cluster_size(op: Operation) -> int:
    """The CTAs per cluster of the kernel around ``op`` (its ``bulkred.launch``)."""
    kernel = enclosing_kernel(op)
    launch = kernel_launch(kernel) if kernel is not None else None
    n = 1
    for c in launch.cluster_dims if launch is not None else (1,):
        n *= c
    if n < 2:
        raise LocatedError(
            op,
            "a bulk operation into cluster_shared needs a kernel whose bulkred.launch has a "
            "cluster of 2 or more CTAs",
        )
    return n


# issue(emitter, dst, src, size, mbar): the bulk instruction into the receiver's memory
_PeerIssue = Callable[[Emitter, SSAValue, SSAValue, SSAValue, SSAValue], None]


def _lower_to_peer(op: BulkCopyOp | BulkReduceOp, e: Emitter, src_space: StateSpace, issue: _PeerIssue) -> None:
    """The cluster-collective sequence into CTA ``rank``'s ``dst`` (module docstring)."""
    assert op.mbar is not None and op.rank is not None  # the tile verifier requires both
    ctas = _cluster_size(op)
    nbytes = bulk_bytes(op.src.type)  # type: ignore[arg-type]
    elected = _elected(e, op)
    own = e.value(MovSregOp(SpecialRegister.CLUSTER_CTARANK))
    own.name_hint = "cluster_ctarank"
    rank = e.value(arith.IndexCastOp(op.rank, i32))
    receiver = e.value(arith.CmpiOp(own, rank, "eq"))
    receiver.name_hint = "receiver"
    sender = e.value(arith.XOrIOp(receiver, e.const(1, i1)))
    mbar = e.ptr(op.mbar, StateSpace.SHARED_CTA)
    expected = e.const((ctas - 1) * nbytes)
    expected.name_hint = "expected_bytes"

    def init(t: Emitter) -> None:
        t.emit(MbarrierInitOp(mbar, t.const(1)))
        # the senders' complete-tx are releases at cluster scope on the mbarrier
        t.emit(FenceMbarrierInitOp())
        t.emit(MbarrierArriveExpectTxOp(mbar, expected, sink=True))

    e.if_(receiver, lambda t: t.if_(elected, init))
    # every thread's generic-proxy accesses to src (senders) and dst (receiver) before
    # the async proxy's; the cluster barrier orders them, and the receiver's mbarrier
    # init, before any sender issues
    e.emit(FenceProxyAsyncOp())
    e.cluster_sync()
    size = e.const(nbytes)
    size.name_hint = "bytes"

    def send(t: Emitter) -> None:
        dst = t.value(MapaOp(t.ptr(op.dst, StateSpace.SHARED_CTA), rank))
        remote_mbar = t.value(MapaOp(mbar, rank))
        issue(t, dst, t.ptr(op.src, src_space), size, remote_mbar)

    e.if_(sender, lambda t: t.if_(elected, send))
    e.if_(receiver, lambda t: _wait(t, mbar, 0))
    # the senders' src stay untouched until the receiver has everything; no thread
    # polls the mbarrier any more
    e.cluster_sync()
    e.if_(receiver, lambda t: t.if_(elected, _inval(mbar)))


def _lower_global_to_shared(op: BulkCopyOp, e: Emitter) -> None:
    assert op.mbar is not None  # the tile verifier requires it for a shared destination
    elected = _elected(e, op)
    mbar = e.ptr(op.mbar, StateSpace.SHARED_CTA)
    one = e.const(1)

    def init(t: Emitter) -> None:
        t.emit(MbarrierInitOp(mbar, one))
        # the complete-tx below is a release at cluster scope on the mbarrier
        t.emit(FenceMbarrierInitOp())

    e.if_(elected, init)
    # the CTA's generic-proxy accesses to dst (and src) before the async proxy's
    e.emit(FenceProxyAsyncOp())
    e.bar_sync()
    size = e.const(bulk_bytes(op.src.type))  # type: ignore[arg-type]
    size.name_hint = "bytes"
    dst = e.ptr(op.dst, StateSpace.SHARED_CLUSTER)
    src = e.ptr(op.src, StateSpace.GLOBAL)
    mbar_cluster = e.ptr(op.mbar, StateSpace.SHARED_CLUSTER)

    def issue(t: Emitter) -> None:
        t.emit(MbarrierArriveExpectTxOp(mbar, size, sink=True))
        # the shared::cluster form with the own CTA's address needs PTX ISA 8.0, the
        # shared::cta form 8.6
        t.emit(CpAsyncBulkSharedClusterGlobalOp(dst, src, size, mbar_cluster))

    e.if_(elected, issue)
    _wait(e, mbar, 0)
    # every thread is done polling before the mbarrier is invalidated
    e.bar_sync()
    e.if_(elected, _inval(mbar))


# issue(emitter, dst, src, size): the bulk instruction of a shared -> global op
_Issue = Callable[[Emitter, SSAValue, SSAValue, SSAValue], None]


def _lower_to_global(op: BulkCopyOp | BulkReduceOp, e: Emitter, issue: _Issue) -> None:
    """The shared -> global sequence around ``issue``."""
    elected = _elected(e, op)
    e.emit(FenceProxyAsyncOp())
    e.bar_sync()
    size = e.const(bulk_bytes(op.src.type))  # type: ignore[arg-type]
    size.name_hint = "bytes"
    dst = e.ptr(op.dst, StateSpace.GLOBAL)
    src = e.ptr(op.src, StateSpace.SHARED_CTA)

    def body(t: Emitter) -> None:
        issue(t, dst, src, size)
        t.emit(CpAsyncBulkCommitGroupOp())
        t.emit(CpAsyncBulkWaitGroupOp(0))

    e.if_(elected, body)
    # no thread writes src or reads dst before the bulk operation completed
    e.bar_sync()


def _lower_multicast(op: BulkCopyOp, e: Emitter) -> None:
    """global -> cluster_shared with ``cta_mask``: CTA 0 issues one copy into the ``dst``
    (at CTA 0's offset) of every CTA whose bit is set; each of those expects the bytes on
    its own mbarrier and waits (module docstring)."""
    assert op.mbar is not None and op.cta_mask is not None
    nbytes = bulk_bytes(op.src.type)  # type: ignore[arg-type]
    elected = _elected(e, op)
    own = e.value(MovSregOp(SpecialRegister.CLUSTER_CTARANK))
    own.name_hint = "cluster_ctarank"
    mask = e.value(arith.ExtUIOp(op.cta_mask, i32))
    bit = e.value(AndOp(ArithType.B32, e.value(ShrOp(ArithType.B32, mask, own)), e.const(1)))
    receiver = e.value(arith.CmpiOp(bit, e.const(0), "ne"))
    receiver.name_hint = "receiver"
    issuer = e.value(arith.CmpiOp(own, e.const(0), "eq"))
    issuer.name_hint = "issuer"
    mbar = e.ptr(op.mbar, StateSpace.SHARED_CTA)
    size = e.const(nbytes)
    size.name_hint = "bytes"

    def init(t: Emitter) -> None:
        t.emit(MbarrierInitOp(mbar, t.const(1)))
        t.emit(FenceMbarrierInitOp())
        t.emit(MbarrierArriveExpectTxOp(mbar, size, sink=True))

    e.if_(receiver, lambda t: t.if_(elected, init))
    e.emit(FenceProxyAsyncOp())
    e.cluster_sync()

    def issue(t: Emitter) -> None:
        t.emit(
            CpAsyncBulkSharedClusterGlobalOp(
                t.ptr(op.dst, StateSpace.SHARED_CLUSTER),
                t.ptr(op.src, StateSpace.GLOBAL),
                size,
                t.ptr(op.mbar, StateSpace.SHARED_CLUSTER),
                multicast=Multicast.CLUSTER,
                cta_mask=op.cta_mask,
            )
        )

    e.if_(issuer, lambda t: t.if_(elected, issue))
    e.if_(receiver, lambda t: _wait(t, mbar, 0))
    # no CTA exits (releasing the shared memory the copy writes) before every receiver
    # has its data; no thread polls an mbarrier any more
    e.cluster_sync()
    e.if_(receiver, lambda t: t.if_(elected, _inval(mbar)))


def reduce_form(op: BulkReduceOp) -> tuple[BulkRedOp, BulkRedType, bool]:
    """``(.redOp, .type, .noftz)`` of the cp.reduce.async.bulk a bulk reduce becomes."""
    kind = op.kind.data
    red_op = BulkRedOp("add" if kind == ReduceKind.SUM else str(kind))
    elt = op.src.type.element_type  # type: ignore[union-attr]
    name = ptx_reduce_type(kind, elt)
    to_cluster = scope_of(op.dst.type) == MemoryScope.CLUSTER_SHARED
    space = StateSpace.SHARED_CLUSTER if to_cluster else StateSpace.GLOBAL
    valid = REDUCE_TABLE[space].get(red_op, ())
    if name is None or BulkRedType(name) not in valid:
        raise LocatedError(
            op,
            f"'kind' {kind} on element type {elt} has no cp.reduce.async.bulk form into "
            f"{'cluster_shared' if to_cluster else 'global'}",
        )
    type = BulkRedType(name)
    return red_op, type, red_op == BulkRedOp.ADD and type in NOFTZ_TYPES


def lower_bulk_op(op: BulkCopyOp | BulkReduceOp) -> None:
    """Replace one tile-level bulk op by its ptx sequence (see the module docstring)."""
    _check_lowerable(op)
    e = Emitter.before(op)
    if isinstance(op, BulkCopyOp) and op.cta_mask is not None:
        _lower_multicast(op, e)
    elif scope_of(op.dst.type) == MemoryScope.CLUSTER_SHARED:
        if isinstance(op, BulkReduceOp):
            red_op, type, noftz = reduce_form(op)

            def peer_reduce(t: Emitter, dst: SSAValue, src: SSAValue, size: SSAValue, mbar: SSAValue) -> None:
                t.emit(CpReduceAsyncBulkSharedClusterSharedCtaOp(red_op, type, dst, src, size, mbar, noftz=noftz))

            _lower_to_peer(op, e, StateSpace.SHARED_CTA, peer_reduce)
        elif scope_of(op.src.type) == MemoryScope.SHARED:

            def peer_copy(t: Emitter, dst: SSAValue, src: SSAValue, size: SSAValue, mbar: SSAValue) -> None:
                t.emit(CpAsyncBulkSharedClusterSharedCtaOp(dst, src, size, mbar))

            _lower_to_peer(op, e, StateSpace.SHARED_CTA, peer_copy)
        else:

            def peer_load(t: Emitter, dst: SSAValue, src: SSAValue, size: SSAValue, mbar: SSAValue) -> None:
                t.emit(CpAsyncBulkSharedClusterGlobalOp(dst, src, size, mbar))

            _lower_to_peer(op, e, StateSpace.GLOBAL, peer_load)
    elif isinstance(op, BulkReduceOp):
        red_op, type, noftz = reduce_form(op)

        def reduce(t: Emitter, dst: SSAValue, src: SSAValue, size: SSAValue) -> None:
            t.emit(CpReduceAsyncBulkGlobalSharedCtaOp(red_op, type, dst, src, size, noftz=noftz))

        _lower_to_global(op, e, reduce)
    elif scope_of(op.dst.type) == MemoryScope.GLOBAL:

        def copy(t: Emitter, dst: SSAValue, src: SSAValue, size: SSAValue) -> None:
            t.emit(CpAsyncBulkGlobalSharedCtaOp(dst, src, size))

        _lower_to_global(op, e, copy)
    else:
        _lower_global_to_shared(op, e)
    Rewriter.erase_op(op)


@dataclass(frozen=True)
class LowerBulkOpsPass(ModulePass):
    """Every ``bulkred.bulk_copy`` / ``bulkred.bulk_reduce`` into ptx ops (module docstring)."""

    name = "lower-bulk-ops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        bulk = [o for o in op.walk() if isinstance(o, BulkCopyOp | BulkReduceOp)]
        for o in bulk:  # every error before any rewrite
            _check_lowerable(o)
            if isinstance(o, BulkReduceOp):
                reduce_form(o)
        for o in bulk:
            lower_bulk_op(o)
