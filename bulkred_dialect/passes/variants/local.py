"""reduction -> local: one thread reduces each row of a local ``src`` serially with
scalar PTX arithmetic (priority 10; what runs wherever sm100_packed declines).

``src`` of shape [..., N] reduces along its last axis into ``dst`` of shape [...]
(a 1-D ``src`` into ``dst`` [1]). Per row: ``acc = src[r, 0]``; an ``scf.for`` over
``i = 1 .. N-1`` carries ``acc = op(acc, src[r, i])``; with ``accum``,
``acc = op(dst[r], acc)``; then ``dst[r] = acc``. The combining op is
``add.rn`` for floats (no ``.ftz``), ``add.s16/.s32/.s64`` for integers, ``max/min``
(signed for integers), ``and/or/xor.b16/.b32/.b64``. The ``dtype`` predicate lists
every element type of ``ops/tile.py``'s ``ELEMENT_TYPES`` (tests/test_dispatch.py checks
that the two agree), so the verifier never accepts a type that no variant lowers.

Example: ``bulkred.reduce max thread %a, %b : memref<4x16xi32, #bulkred.scope<local>>,
memref<4xi32, #bulkred.scope<local>>`` becomes a loop over the 4 rows around a loop
of 15 ``ptx.max s32``.

Spec: docs/lowering.md ("local").
"""

from __future__ import annotations

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.arith import (
    AddOp,
    AndOp,
    ArithType,
    MaxOp,
    MinOp,
    OrOp,
    RoundingMode,
    XorOp,
)
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ExecScope, MemoryScope, ReduceKind, ReduceOp
from bulkred_dialect.passes.dispatch import Predicate, register_variant
from bulkred_dialect.passes.variants import (
    Emitter,
    dtype_in,
    dtype_name,
    element_type,
    exec_scope_in,
    src_dst_in_scope,
)

# Element type -> (.type for add/min/max, .type for and/or/xor); integers are signed.
# One entry per element type of ops/tile.py's ELEMENT_TYPES.
_PTX_TYPES: dict[str, tuple[ArithType, ArithType | None]] = {
    "float16": (ArithType.F16, None),
    "bfloat16": (ArithType.BF16, None),
    "float32": (ArithType.F32, None),
    "float64": (ArithType.F64, None),
    "int16": (ArithType.S16, ArithType.B16),
    "int32": (ArithType.S32, ArithType.B32),
    "int64": (ArithType.S64, ArithType.B64),
}

PREDICATES = [
    Predicate("exec_scope", exec_scope_in(ExecScope.THREAD), expected="thread"),
    Predicate("local_scope", src_dst_in_scope(MemoryScope.LOCAL), expected="src local, dst local"),
    Predicate("dtype", dtype_in(*_PTX_TYPES), expected=", ".join(_PTX_TYPES)),
]


def combine(e: Emitter, kind: ReduceKind, dtype: str, a: SSAValue, b: SSAValue) -> SSAValue:
    """``op(a, b)`` as one scalar ptx instruction."""
    arith_type, bit_type = _PTX_TYPES[dtype]
    if kind == ReduceKind.SUM:
        is_float = arith_type in (ArithType.F16, ArithType.BF16, ArithType.F32, ArithType.F64)
        return e.value(AddOp(arith_type, a, b, rnd=RoundingMode.RN if is_float else None))
    if kind == ReduceKind.MAX:
        return e.value(MaxOp(arith_type, a, b))
    if kind == ReduceKind.MIN:
        return e.value(MinOp(arith_type, a, b))
    assert bit_type is not None, "the verifier allows bitwise kinds on integers only"
    logic = {ReduceKind.AND: AndOp, ReduceKind.OR: OrOp, ReduceKind.XOR: XorOp}[kind]
    return e.value(logic(bit_type, a, b))


@register_variant("bulkred.reduce", "local", priority=10, predicates=PREDICATES)
def lower_local(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    st = op.src.type
    assert isinstance(st, MemRefType)
    *rows, n = st.get_shape()
    kind, dtype = op.kind.data, dtype_name(element_type(op))
    accum = op.accum is not None

    def row(e: Emitter, r: list[SSAValue]) -> None:
        first = e.load(op.src, [*r, 0])
        if n > 1:

            def step(b: Emitter, i: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
                return [combine(b, kind, dtype, args[0], b.load(op.src, [*r, i]))]

            (acc,) = e.for_loop(1, n, [first], step)
        else:
            acc = first
        at = r if r else [0]
        if accum:
            acc = combine(e, kind, dtype, e.load(op.dst, at), acc)
        e.store(acc, op.dst, at)

    Emitter(rewriter, location=op.location).nest(rows, row)
    rewriter.erase(op)
