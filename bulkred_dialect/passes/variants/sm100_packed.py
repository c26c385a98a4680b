"""reduction -> sm100_packed: one thread reduces a 1-D f32 local vector of length >= 8
to a scalar with the Blackwell packed instructions (priority 20, pre-empting ``local``).

Sum keeps eight f32 accumulators folded two lanes at a time with ``add.rn.ftz.f32x2``;
max / min keep four folded three inputs at a time with ``max.f32 d, a, b, c`` /
``min.f32 d, a, b, c``. Fully unrolled; every index is a compile-time constant.
The exact operation sequence is written down in docs/lowering.md ("sm100_packed").

Example: ``bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<local>>,
memref<1xf32, #bulkred.scope<local>>`` on sm_100a becomes 12 ``ptx.add.f32x2 rn ftz``
for the chunks, 3 for the 8 -> 2 tree and one ``ptx.add rn f32``.

Spec: ../shared/spec/tirx-reduction-sm100-packed.md (TIRx ``sm100_packed.py``).
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.arith import (
    AddF32x2Op,
    AddOp,
    ArithType,
    Max3Op,
    MaxOp,
    Min3Op,
    MinOp,
    PackF32x2Op,
    RoundingMode,
    UnpackF32x2Op,
)
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ExecScope, MemoryScope, ReduceKind, ReduceOp
from bulkred_dialect.passes.dispatch import Predicate, register_variant
from bulkred_dialect.passes.variants import (
    Emitter,
    dst_len,
    dtype_in,
    exec_scope_in,
    reduction_len,
    sm_at_least,
    src_dst_in_scope,
    src_ndim,
)

SUM_WIDTH = 8  # f32 accumulators of the packed sum (four f32x2 pairs)
MINMAX_WIDTH = 4  # accumulators of max / min; each step folds two chunks of four


def _equals(fn, want: int):
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        v = fn(op, target)
        return v == want, v

    return check


def _at_least(fn, want: int):
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        v = fn(op, target)
        return v >= want, v

    return check


PREDICATES = [
    Predicate("exec_scope", exec_scope_in(ExecScope.THREAD), expected="thread"),
    Predicate("local_scope", src_dst_in_scope(MemoryScope.LOCAL), expected="src local, dst local"),
    Predicate("dst_len", _equals(dst_len, 1), expected="1"),
    Predicate("src_ndim", _equals(src_ndim, 1), expected="1"),
    Predicate("dtype", dtype_in("float32"), expected="float32"),
    Predicate("sm_version", sm_at_least(100), expected=">= 100"),
    Predicate("reduction_len", _at_least(reduction_len, SUM_WIDTH), expected=">= 8"),
]


@register_variant("bulkred.reduce", "sm100_packed", priority=20, predicates=PREDICATES)
def lower_sm100_packed(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    e = Emitter(rewriter, location=op.location)
    n = reduction_len(op, target)
    src = [e.load(op.src, [i]) for i in range(n)]
    kind = op.kind.data
    old = e.load(op.dst, [0]) if op.accum is not None else None
    if kind == ReduceKind.SUM:
        r = _packed_sum(e, src, old)
    else:
        r = _three_input_minmax(e, src, old, kind)
    e.store(r, op.dst, [0])
    rewriter.erase(op)


def _add(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(AddOp(ArithType.F32, a, b, rnd=RoundingMode.RN))


def _add_pairs(e: Emitter, a: tuple[SSAValue, SSAValue], b: tuple[SSAValue, SSAValue]) -> tuple[SSAValue, SSAValue]:
    """``(a0 + b0, a1 + b1)`` with one ``add.rn.ftz.f32x2``."""
    pa = e.value(PackF32x2Op(*a))
    pb = e.value(PackF32x2Op(*b))
    s = e.value(AddF32x2Op(pa, pb, rnd=RoundingMode.RN, ftz=True))
    unpack = UnpackF32x2Op(s)
    e.emit(unpack)
    return unpack.lo, unpack.hi


def _packed_sum(e: Emitter, src: list[SSAValue], old: SSAValue | None) -> SSAValue:
    n = len(src)
    acc = src[:SUM_WIDTH]
    for base in range(SUM_WIDTH, SUM_WIDTH * (n // SUM_WIDTH), SUM_WIDTH):
        for p in range(0, SUM_WIDTH, 2):
            acc[p], acc[p + 1] = _add_pairs(e, (acc[p], acc[p + 1]), (src[base + p], src[base + p + 1]))
    for i in range(SUM_WIDTH * (n // SUM_WIDTH), n):
        acc[i % SUM_WIDTH] = _add(e, acc[i % SUM_WIDTH], src[i])
    # 8 -> 4 -> 2, the order of TIRx's final tree
    acc[0], acc[1] = _add_pairs(e, (acc[0], acc[1]), (acc[2], acc[3]))
    acc[4], acc[5] = _add_pairs(e, (acc[4], acc[5]), (acc[6], acc[7]))
    acc[0], acc[1] = _add_pairs(e, (acc[0], acc[1]), (acc[4], acc[5]))
    r = _add(e, acc[0], acc[1])
    return _add(e, old, r) if old is not None else r


def _three_input_minmax(e: Emitter, src: list[SSAValue], old: SSAValue | None, kind: ReduceKind) -> SSAValue:
    three, two = (Max3Op, MaxOp) if kind == ReduceKind.MAX else (Min3Op, MinOp)
    n, w = len(src), MINMAX_WIDTH
    acc = src[:w]
    chunks = (n - w) // (2 * w)
    for c in range(chunks):
        base = w + 2 * w * c
        for j in range(w):
            acc[j] = e.value(three(acc[j], src[base + j], src[base + w + j]))
    for i in range(w + 2 * w * chunks, n):
        acc[i % w] = e.value(two(ArithType.F32, acc[i % w], src[i]))
    r = e.value(three(acc[0], acc[1], acc[2]))
    r = e.value(two(ArithType.F32, r, acc[3]))
    return e.value(two(ArithType.F32, old, r)) if old is not None else r
