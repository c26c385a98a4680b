"""reduction -> cluster_dsmem: the CTAs of a cluster combine their results through
distributed shared memory (priority 50), for every type the collective lowerings take.

Each CTA reduces as ``cta_shared`` does; thread 0 writes the CTA's result into its own
shared slot; ``barrier.cluster``; every thread reads the slots of all CTAs of the
cluster with ``mapa`` + ``ld.shared::cluster`` and combines them in rank order (so every
CTA computes the same bits); a second ``barrier.cluster`` keeps each CTA's shared memory
alive until every peer has read it.

Spec: PTX ISA, mapa, ld, barrier.cluster (docs/scopes.md).
"""

from __future__ import annotations

import math

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.sync import MapaOp
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ExecScope, ReduceOp
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import (
    ANY_COLLECTIVE_DTYPE,
    CLUSTER_OF_TWO_OR_MORE,
    collective_predicates,
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

PREDICATES = collective_predicates(ExecScope.CLUSTER, ANY_COLLECTIVE_DTYPE, CLUSTER_OF_TWO_OR_MORE)


def lower_cluster_dsmem(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    launch = launch_of(op)
    assert launch is not None
    csize = math.prod(launch.cluster_dims)
    elem, kind = elem_of(op), op.kind.data
    e = emitter_at(op)
    v = thread_value(op, e)
    tid, nthreads = linear_tid(e, op)
    r = cta_reduce(e, kind, elem, v, tid, nthreads, broadcast=False)
    slot = e.shared([1], elem.acc, "cta_result")
    t = elem.acc_ld

    def publish(b: Emitter) -> list:
        b.st(t, slot, r)
        return []

    e.if_(e.cmp("eq", tid, 0), publish)
    e.cluster_sync()
    acc = None
    for rank in range(csize):
        peer = e.value(MapaOp(slot, e.const(rank)))
        x = e.ld(t, peer, elem.acc)
        acc = x if acc is None else e.combine(kind, elem.accumulator, acc, x)
    e.cluster_sync()
    assert acc is not None
    store_result(op, e, acc)
    rewriter.erase(op)


CLUSTER_DSMEM = Variant(
    "bulkred.reduce", "cluster_dsmem", priority=50, predicates=PREDICATES, lower=lower_cluster_dsmem
)
