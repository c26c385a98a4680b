"""reduction -> cta_shared: the threads of a CTA combine their values (priority 40):
each warp reduces (``redux.sync`` for int32, else a ``shfl.sync`` butterfly), lane 0 of
each warp writes its partial to shared memory, ``bar.sync``, warp 0 reduces the partials
and publishes the result in shared memory, ``bar.sync``, and every thread reads it.

Every thread first reduces its own local ``src``; every thread's ``dst`` receives the
CTA's result. The CTA must be whole warps.

Spec: PTX ISA, bar.sync, shfl.sync, redux.sync (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ExecScope, ReduceOp
from bulkred_dialect.passes.predicates import ANY_COLLECTIVE_DTYPE, collective_predicates
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.kernel import (
    cta_reduce,
    elem_of,
    emitter_at,
    linear_tid,
    store_result,
    thread_value,
)


def lower_cta_shared(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    e = emitter_at(op)
    v = thread_value(op, e)
    tid, nthreads = linear_tid(e, op)
    r = cta_reduce(e, op.kind.data, elem_of(op), v, tid, nthreads, broadcast=True)
    store_result(op, e, r)
    rewriter.erase(op)


CTA_SHARED = Variant(
    "bulkred.reduce", "cta_shared", priority=40,
    predicates=collective_predicates(ExecScope.CTA, ANY_COLLECTIVE_DTYPE),
    lower=lower_cta_shared,
)
