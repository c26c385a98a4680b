"""reduction -> cluster_red_async: the CTAs of a cluster combine ``int32`` results with
``red.async`` into the shared memory of CTA rank 0 (priority 51); every kind but prod
(red.async has no mul: ``cluster_dsmem`` takes it).

Each CTA reduces as ``cta_shared`` does (``redux.sync`` per warp). CTA 0's thread 0 puts
the neutral value in its accumulator slot and initializes an mbarrier, before a
``barrier.cluster``; it then expects ``4 * (cluster size - 1)`` transaction bytes. Every
other CTA's thread 0 sends its result with
``red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.<op>`` into that
slot (addresses from ``mapa``). CTA 0 waits on the mbarrier (``try_wait.parity`` 0),
adds its own result and publishes the total; after a ``barrier.cluster`` every thread of
the cluster reads it with ``ld.shared::cluster``, and a last ``barrier.cluster`` keeps CTA
0's shared memory alive until all have read it.

Spec: PTX ISA 9.7.13.7 (red.async), mbarrier, mapa (docs/scopes.md).
"""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import i1, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.red_async import (
    RedAsyncOp,
    RedAsyncRelaxedClusterOp,
    RedAsyncType,
)
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.ptx.sync import (
    FenceMbarrierInitOp,
    MapaOp,
    MbarrierArriveExpectTxOp,
    MbarrierInitOp,
    MbarrierTryWaitParityOp,
)
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ExecScope, ReduceKind, ReduceOp
from bulkred_dialect.passes.elements import ELEMS
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import (
    CLUSTER_OF_TWO_OR_MORE,
    Predicate,
    collective_predicates,
    dtype_in,
    kinds_but_prod,
    launch_of,
)
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.kernel import (
    cta_reduce,
    elem_of,
    emitter_at,
    linear_tid,
    store_result,
    thread_value,
)

elem_i32 = ELEMS["int32"]  # the only type red.async combines here

# tile kind -> (red.async .op, .type)
RED_ASYNC_FORMS: dict[ReduceKind, tuple[RedAsyncOp, RedAsyncType]] = {
    ReduceKind.SUM: (RedAsyncOp.ADD, RedAsyncType.S32),
    ReduceKind.MAX: (RedAsyncOp.MAX, RedAsyncType.S32),
    ReduceKind.MIN: (RedAsyncOp.MIN, RedAsyncType.S32),
    ReduceKind.AND: (RedAsyncOp.AND, RedAsyncType.B32),
    ReduceKind.OR: (RedAsyncOp.OR, RedAsyncType.B32),
    ReduceKind.XOR: (RedAsyncOp.XOR, RedAsyncType.B32),
}


class ClusterAccumulator:
    """CTA 0's accumulator slot and mbarrier, set up before the first cluster barrier."""

    def __init__(self, e: Emitter, tid, kind: ReduceKind, csize: int):
        self.kind, self.csize = kind, csize
        self.slot = e.shared([1], elem_i32.ir, "cluster_acc")
        self.mbar = e.shared([1], i64, "cluster_mbar")
        self.rank = e.sreg(SpecialRegister.CLUSTER_CTARANK)
        self.is_t0 = e.cmp("eq", tid, 0)

        def init(b: Emitter) -> list:
            b.st(elem_i32.ld, self.slot, b.const(elem_i32.accumulator.identity(kind)))
            b.emit(MbarrierInitOp(self.mbar, b.const(1)))
            return []

        e.if_(self.is_t0, init)
        e.emit(FenceMbarrierInitOp())
        e.cluster_sync()

    def combine(self, e: Emitter, r) -> None:
        """Send thread 0's ``r`` to CTA 0 (or, in CTA 0, wait for the others and add
        its own), then publish the total in CTA 0's slot."""
        op, t = RED_ASYNC_FORMS[self.kind]
        is_rank0 = e.cmp("eq", self.rank, 0)

        def t0(b: Emitter) -> list:
            def leader(c: Emitter) -> list:
                # every peer's red.async completes one slot's bytes on the mbarrier
                tx = c.const(elem_i32.slot_bytes * (self.csize - 1))
                c.emit(MbarrierArriveExpectTxOp(self.mbar, tx, sink=True))
                wait(c, self.mbar)
                total = c.combine(self.kind, elem_i32.accumulator, c.ld(elem_i32.ld, self.slot, elem_i32.ir), r)
                c.st(elem_i32.ld, self.slot, total)
                return []

            def peer(c: Emitter) -> list:
                zero = c.const(0)
                c.emit(RedAsyncRelaxedClusterOp(op, t, c.value(MapaOp(self.slot, zero)), r, c.value(MapaOp(self.mbar, zero))))
                return []

            b.if_(is_rank0, leader, peer)
            return []

        e.if_(self.is_t0, t0)
        e.cluster_sync()

    def is_rank0(self, e: Emitter):
        return e.cmp("eq", self.rank, 0)

    def total(self, e: Emitter):
        return e.ld(elem_i32.ld, e.value(MapaOp(self.slot, e.const(0))), elem_i32.ir)


def wait(e: Emitter, mbar: SSAValue) -> None:
    """Spin until phase 0 of ``mbar`` completed (``try_wait`` returns after a bounded time)."""

    def pending(b: Emitter) -> SSAValue:
        done = b.value(MbarrierTryWaitParityOp(mbar, b.const(0)))
        return b.value(arith.XOrIOp(done, b.const(1, i1)))

    e.while_(pending)


PREDICATES = collective_predicates(
    ExecScope.CLUSTER, Predicate("dtype", dtype_in("int32"), expected="int32"), CLUSTER_OF_TWO_OR_MORE,
    kinds_but_prod("red.async"),
)


def lower_cluster_red_async(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    launch = launch_of(op)
    assert launch is not None
    e = emitter_at(op)
    tid, nthreads = linear_tid(e, op)
    acc = ClusterAccumulator(e, tid, op.kind.data, math.prod(launch.cluster_dims))
    v = thread_value(op, e)
    r = cta_reduce(e, op.kind.data, elem_of(op), v, tid, nthreads, broadcast=False)
    acc.combine(e, r)
    total = acc.total(e)
    e.cluster_sync()
    store_result(op, e, total)
    rewriter.erase(op)


CLUSTER_RED_ASYNC = Variant(
    "bulkred.reduce", "cluster_red_async", priority=51, predicates=PREDICATES, lower=lower_cluster_red_async
)

