"""reduction -> warp_redux: the lanes of a warp combine their values with one
``redux.sync`` (priority 32 for ``int32``, any kind but prod: redux.sync has no mul; priority 33, ``warp_redux_f32``, for
``float32`` max/min on sm_100a, the ``redux.sync .f32`` form, ``.NaN`` unless the op has
``ignore_nan``).

Each lane first reduces its own local ``src`` serially; every lane's ``dst`` receives
the warp's result (combined with its old value under ``accum``).

Example: ``bulkred.reduce sum warp %v, %r : memref<1xi32, #bulkred.scope<local>>,
memref<1xi32, #bulkred.scope<local>>`` becomes ``redux.sync.add.s32 %r, %v, 0xffffffff``.

Spec: PTX ISA, redux.sync (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ExecScope, ReduceKind, ReduceOp
from bulkred_dialect.passes.predicates import Predicate, collective_predicates, dtype_in, kind_in, kinds_but_prod
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.kernel import (
    elem_of,
    emitter_at,
    store_result,
    thread_value,
    warp_reduce,
)


def _sm100a(op: Operation, target: Target) -> tuple[bool, object]:
    ok = target.sm >= 100 and target.suffix == "a"
    return ok, target.name


def lower_warp_redux(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    e = emitter_at(op)
    v = thread_value(op, e)
    r = warp_reduce(e, op.kind.data, elem_of(op), v, redux_f32=True)
    store_result(op, e, r)
    rewriter.erase(op)


WARP_REDUX_F32 = Variant(
    "bulkred.reduce", "warp_redux_f32", priority=33,
    predicates=collective_predicates(
        ExecScope.WARP,
        Predicate("dtype", dtype_in("float32"), expected="float32"),
        Predicate("kind", kind_in(ReduceKind.MAX, ReduceKind.MIN), expected="max, min"),
        Predicate("sm_version", _sm100a, expected="sm_100a or later 'a' target"),
    ),
    lower=lower_warp_redux,
)

WARP_REDUX = Variant(
    "bulkred.reduce", "warp_redux", priority=32,
    predicates=collective_predicates(
        ExecScope.WARP, Predicate("dtype", dtype_in("int32"), expected="int32"), kinds_but_prod("redux.sync")
    ),
    lower=lower_warp_redux,
)
