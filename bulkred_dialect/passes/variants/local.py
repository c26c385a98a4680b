"""reduction -> local: one thread reduces each row of a local ``src`` serially with
scalar PTX arithmetic (priority 10; what runs wherever sm100_packed declines).

``src`` of shape [..., N] reduces along its last axis into ``dst`` of shape [...]
(a 1-D ``src`` into ``dst`` [1]). Per row: ``acc = src[r, 0]``; an ``scf.for`` over
``i = 1 .. N-1`` carries ``acc = op(acc, src[r, i])``; with ``accum``,
``acc = op(dst[r], acc)``; then ``dst[r] = acc``. The combining op is
``add.rn`` for floats (no ``.ftz``), ``add.s16/.s32/.s64`` for integers, ``max/min``
(signed for integers), ``and/or/xor.b16/.b32/.b64`` (:meth:`Emitter.combine`). The
``dtype`` predicate lists every element type of ``ops/dtypes.py``'s ``ELEMENT_DTYPES``
(tests/test_dispatch.py checks that it agrees with the verifier's ``ELEMENT_TYPES``), so
the verifier never accepts a type that no variant lowers.

Example: ``bulkred.reduce max thread %a, %b : memref<4x16xi32, #bulkred.scope<local>>,
memref<4xi32, #bulkred.scope<local>>`` becomes a loop over the 4 rows around a loop
of 15 ``ptx.max s32``.

Spec: docs/lowering.md ("local").
"""

from __future__ import annotations

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.dtypes import DTYPES, ELEMENT_DTYPES, ir_name
from bulkred_dialect.ops.ptx.arith import ArithType
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ExecScope, MemoryScope, ReduceOp
from bulkred_dialect.passes.elements import arith_types
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import (
    Predicate,
    dtype_in,
    element_type,
    exec_scope_in,
    src_dst_in_scope,
)
from bulkred_dialect.passes.registry import Variant


# Element type -> (.type for add/min/max, .type for and/or/xor); integers are signed.
_PTX_TYPES: dict[str, tuple[ArithType, ArithType | None]] = {d.name: arith_types(d) for d in ELEMENT_DTYPES}

PREDICATES = [
    Predicate("exec_scope", exec_scope_in(ExecScope.THREAD), expected="thread"),
    Predicate("local_scope", src_dst_in_scope(MemoryScope.LOCAL), expected="src local, dst local"),
    Predicate("dtype", dtype_in(*_PTX_TYPES), expected=", ".join(_PTX_TYPES)),
]


def lower_local(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    st = op.src.type
    assert isinstance(st, MemRefType)
    *rows, n = st.get_shape()
    kind, dtype = op.kind.data, DTYPES[ir_name(element_type(op))]
    accum = op.accum is not None

    def row(e: Emitter, r: list[SSAValue]) -> None:
        first = e.load(op.src, [*r, 0])
        if n > 1:

            def step(b: Emitter, i: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
                return [b.combine(kind, dtype, args[0], b.load(op.src, [*r, i]))]

            (acc,) = e.for_(1, n, 1, [first], step, index=True)
        else:
            acc = first
        at = r if r else [0]
        if accum:
            acc = e.combine(kind, dtype, e.load(op.dst, at), acc)
        e.store(acc, op.dst, at)

    Emitter.before(op).nest(rows, row)
    rewriter.erase(op)


LOCAL = Variant("bulkred.reduce", "local", priority=10, predicates=PREDICATES, lower=lower_local)
