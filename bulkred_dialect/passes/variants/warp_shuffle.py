"""reduction -> warp_shuffle: the lanes of a warp combine their values with a
``shfl.sync.bfly`` butterfly of five steps (priority 30), for the types and kinds that
no ``redux.sync`` form takes: ``float32``, and ``float16`` / ``bfloat16`` (combined in
float32 and rounded once), ``int32`` too.

Each lane first reduces its own local ``src``; every lane's ``dst`` receives the same
bits (the butterfly combines in the same order on every lane).

Spec: PTX ISA, shfl.sync (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ExecScope, ReduceOp
from bulkred_dialect.passes.predicates import ANY_COLLECTIVE_DTYPE, collective_predicates
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.kernel import (
    elem_of,
    emitter_at,
    store_result,
    thread_value,
    warp_reduce,
)


def lower_warp_shuffle(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    e = emitter_at(op)
    v = thread_value(op, e)
    elem = elem_of(op)
    r = warp_reduce(e, op.kind.data, elem, v, redux_f32=False, shuffle_only=True)
    store_result(op, e, r)
    rewriter.erase(op)


WARP_SHUFFLE = Variant(
    "bulkred.reduce", "warp_shuffle", priority=30,
    predicates=collective_predicates(ExecScope.WARP, ANY_COLLECTIVE_DTYPE),
    lower=lower_warp_shuffle,
)
