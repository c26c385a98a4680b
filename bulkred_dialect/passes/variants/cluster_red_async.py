"""reduction -> cluster_red_async: the CTAs of a cluster combine ``int32`` results with
``red.async`` into the shared memory of CTA rank 0 (priority 51).

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

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import i1, i32, i64
from xdsl.ir import Block, Operation, Region
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from bulkred_dialect.ops.ptx.memory import LdStType
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
from bulkred_dialect.passes.dispatch import Predicate, register_variant
from bulkred_dialect.passes.variants import dtype_in
from bulkred_dialect.passes.variants.cluster_dsmem import cluster_barrier
from bulkred_dialect.passes.variants.kernel import (
    CLUSTER_OF_TWO_OR_MORE,
    ELEMS,
    KernelEmitter,
    collective_predicates,
    cta_reduce,
    elem_of,
    emitter_at,
    identity,
    launch_of,
    linear_tid,
    store_result,
    thread_value,
)

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

    def __init__(self, e: KernelEmitter, tid, kind: ReduceKind, csize: int):
        self.kind, self.csize = kind, csize
        self.slot = e.shared([1], i32, "cluster_acc")
        self.mbar = e.shared([1], i64, "cluster_mbar")
        self.rank = e.sreg(SpecialRegister.CLUSTER_CTARANK)
        self.is_t0 = e.cmp("eq", tid, 0)

        def init(b: KernelEmitter) -> list:
            b.st(LdStType.B32, self.slot, b.const(identity(kind, i32)))
            b.add(MbarrierInitOp(self.mbar, b.const(1)))
            return []

        e.if_(self.is_t0, init)
        e.add(FenceMbarrierInitOp())
        cluster_barrier(e)

    def combine(self, e: KernelEmitter, r) -> None:
        """Send thread 0's ``r`` to CTA 0 (or, in CTA 0, wait for the others and add
        its own), then publish the total in CTA 0's slot."""
        op, t = RED_ASYNC_FORMS[self.kind]
        is_rank0 = e.cmp("eq", self.rank, 0)

        def t0(b: KernelEmitter) -> list:
            def leader(c: KernelEmitter) -> list:
                c.add(MbarrierArriveExpectTxOp(self.mbar, c.const(4 * (self.csize - 1)), sink=True))
                wait(c, self.mbar)
                total = c.combine(self.kind, elem_i32, c.ld(LdStType.B32, self.slot, i32), r)
                c.st(LdStType.B32, self.slot, total)
                return []

            def peer(c: KernelEmitter) -> list:
                zero = c.const(0)
                c.add(RedAsyncRelaxedClusterOp(op, t, c.v(MapaOp(self.slot, zero)), r, c.v(MapaOp(self.mbar, zero))))
                return []

            b.if_(is_rank0, leader, peer)
            return []

        e.if_(self.is_t0, t0)
        cluster_barrier(e)

    def is_rank0(self, e: KernelEmitter):
        return e.cmp("eq", self.rank, 0)

    def total(self, e: KernelEmitter):
        return e.ld(LdStType.B32, e.v(MapaOp(self.slot, e.const(0))), i32)


def wait(e: KernelEmitter, mbar) -> None:
    """Spin until phase 0 of ``mbar`` completed (``try_wait`` returns after a bounded time)."""
    before, after = Block(), Block()
    b = KernelEmitter(InsertPoint.at_end(before), e.location, e.entry)
    done = b.v(MbarrierTryWaitParityOp(mbar, b.const(0)))
    b.add(scf.ConditionOp(b.v(arith.XOrIOp(done, b.const(1, i1)))))
    KernelEmitter(InsertPoint.at_end(after), e.location, e.entry).add(scf.YieldOp())
    e.add(scf.WhileOp([], [], Region(before), Region(after)))


elem_i32 = ELEMS["int32"]


@register_variant(
    "bulkred.reduce", "cluster_red_async", priority=51,
    predicates=collective_predicates(
        ExecScope.CLUSTER, Predicate("dtype", dtype_in("int32"), expected="int32"), CLUSTER_OF_TWO_OR_MORE
    ),
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
    cluster_barrier(e)
    store_result(op, e, total)
    rewriter.erase(op)

