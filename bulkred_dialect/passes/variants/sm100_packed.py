"""reduction -> sm100_packed: one thread reduces a 1-D f32 local vector of length >= 8
to a scalar with the Blackwell packed instructions (priority 20, pre-empting ``local``),
in TVM TIRx's order, so that the result has TIRx's bits.

Sum keeps eight f32 accumulators, each further chunk of 8 added two lanes at a time
with ``add.rn.ftz.f32x2``; max / min keep four, each further chunk of 8 folded three
inputs at a time with ``max.f32 d, a, b, c`` / ``min.f32 d, a, b, c`` (``max.NaN.f32``,
NaN-propagating, unless the op has ``ignore_nan``). prod is declined (``kind``). Every element
after the last full chunk goes into accumulator 0 with scalar ops. From 8 further
chunks on (n >= 72), they run ``CHUNKS_PER_ITERATION`` at a time in an ``scf.for`` that
carries the accumulators (the chunks the loop leaves over are unrolled after it), so
the code does not grow with the length. The exact operation sequence is written down
in docs/lowering.md ("sm100_packed").

Example: ``bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<local>>,
memref<1xf32, #bulkred.scope<local>>`` on sm_100a becomes 12 ``ptx.add.f32x2 rn ftz``
for the three further chunks (fewer than eight: no loop), 3 for the 8 -> 2 tree and one
``ptx.add rn f32``.

Spec: docs/lowering.md ("sm100_packed"), after TVM TIRx ``python/tvm/backend/cuda/operator/tile_primitive/reduction/sm100_packed.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from xdsl.dialects import arith
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
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import (
    Predicate,
    dst_len,
    dtype_in,
    exec_scope_in,
    kind_in,
    reduction_len,
    sm_at_least,
    src_dst_in_scope,
    src_ndim,
)
from bulkred_dialect.passes.registry import Variant

CHUNK = 8  # elements per chunk: four f32x2 pairs (sum), four pairs of three-input operands (max/min)
SUM_WIDTH = 8  # f32 accumulators of the packed sum
MINMAX_WIDTH = 4  # accumulators of max / min
CHUNKS_PER_ITERATION = 4  # further chunks unrolled in one iteration of the scf.for


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
    # no packed multiply here (mul.f32x2 is not modelled): prod takes `local`
    Predicate("kind", kind_in(ReduceKind.SUM, ReduceKind.MAX, ReduceKind.MIN), expected="sum, max, min"),
    Predicate("sm_version", sm_at_least(100), expected=">= 100"),
    Predicate("reduction_len", _at_least(reduction_len, CHUNK), expected=">= 8"),
]

# A chunk step: (emitter, accumulators, the chunk's 8 elements) -> the new accumulators.
ChunkStep = Callable[[Emitter, list[SSAValue], list[SSAValue]], list[SSAValue]]
# The op builders of max / min: three inputs (max3) and two (max), with the op's NaN rule.
ThreeOp = Callable[[SSAValue, SSAValue, SSAValue], Max3Op | Min3Op]
TwoOp = Callable[[SSAValue, SSAValue], MaxOp | MinOp]


def lower_sm100_packed(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    e = Emitter.before(op)
    n = reduction_len(op, target)
    kind = op.kind.data
    first = [e.load(op.src, [i]) for i in range(CHUNK)]
    old = e.load(op.dst, [0]) if op.accum is not None else None
    remainder = range(CHUNK * (n // CHUNK), n)
    nan = op.propagates_nan
    if kind == ReduceKind.SUM:
        acc = _sum_first_chunk(e, first, old)
        acc = _further_chunks(e, op.src, n, acc, _sum_chunk)
        for i in remainder:
            acc[0] = _add(e, acc[0], e.load(op.src, [i]))
        r = _sum_tree(e, acc)
    else:
        # .NaN (both forms take it) unless the op ignores NaN
        three_cls, two_cls = (Max3Op, MaxOp) if kind == ReduceKind.MAX else (Min3Op, MinOp)
        three: ThreeOp = lambda a, b, c: three_cls(a, b, c, nan=nan)  # noqa: E731
        two: TwoOp = lambda a, b: two_cls(ArithType.F32, a, b, nan=nan)  # noqa: E731
        acc = _minmax_first_chunk(e, first, old, three, two)
        acc = _further_chunks(e, op.src, n, acc, partial(_minmax_chunk, three))
        for i in remainder:
            acc[0] = e.value(two(acc[0], e.load(op.src, [i])))
        r = e.value(three(e.value(two(acc[0], acc[1])), acc[2], acc[3]))
    e.store(r, op.dst, [0])
    rewriter.erase(op)


SM100_PACKED = Variant(
    "bulkred.reduce", "sm100_packed", priority=20, predicates=PREDICATES, lower=lower_sm100_packed
)


def _further_chunks(e: Emitter, src: SSAValue, n: int, acc: list[SSAValue], step: ChunkStep) -> list[SSAValue]:
    """Chunks 1 .. n//8 - 1 in order: ``CHUNKS_PER_ITERATION`` per iteration of an
    ``scf.for`` with the accumulators as iter_args, then the chunks left over, unrolled.
    With fewer than ``2 * CHUNKS_PER_ITERATION`` chunks, all of them unrolled."""
    further = n // CHUNK - 1
    iterations, left = divmod(further, CHUNKS_PER_ITERATION)
    if iterations < 2:
        # at most 2 * CHUNKS_PER_ITERATION - 1 chunks: unrolled, every index a constant, so
        # that ptxas keeps a short source in registers (tests/test_sass.py)
        iterations, left = 0, further
    per_iteration = CHUNK * CHUNKS_PER_ITERATION
    if iterations:

        def body(b: Emitter, i: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
            # chunk k = 1 + CHUNKS_PER_ITERATION * i + u starts at 8k = base + CHUNK * (1 + u)
            base = b.value(arith.MuliOp(i, b.index(per_iteration)))
            for u in range(CHUNKS_PER_ITERATION):
                chunk = [
                    b.load(src, [b.value(arith.AddiOp(base, b.index(CHUNK * (1 + u) + j)))]) for j in range(CHUNK)
                ]
                args = step(b, args, chunk)
            return args

        acc = e.for_(0, iterations, 1, acc, body, index=True)
    for k in range(1 + further - left, 1 + further):
        acc = step(e, acc, [e.load(src, [CHUNK * k + j]) for j in range(CHUNK)])
    return acc


# region sum


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


def _sum_first_chunk(e: Emitter, first: list[SSAValue], old: SSAValue | None) -> list[SSAValue]:
    acc = list(first)
    if old is not None:
        # TIRx: local_sum[0] = src[0] + dst, a scalar add without ftz
        acc[0] = _add(e, first[0], old)
    return acc


def _sum_chunk(e: Emitter, acc: list[SSAValue], chunk: list[SSAValue]) -> list[SSAValue]:
    acc = list(acc)
    for p in range(0, SUM_WIDTH, 2):
        acc[p], acc[p + 1] = _add_pairs(e, (acc[p], acc[p + 1]), (chunk[p], chunk[p + 1]))
    return acc


def _sum_tree(e: Emitter, acc: list[SSAValue]) -> SSAValue:
    acc = list(acc)
    # 8 -> 4 -> 2 -> 1, TIRx's final tree
    acc[0], acc[1] = _add_pairs(e, (acc[0], acc[1]), (acc[2], acc[3]))
    acc[4], acc[5] = _add_pairs(e, (acc[4], acc[5]), (acc[6], acc[7]))
    acc[0], acc[1] = _add_pairs(e, (acc[0], acc[1]), (acc[4], acc[5]))
    return _add(e, acc[0], acc[1])


# endregion

# region max / min


def _minmax_first_chunk(
    e: Emitter, first: list[SSAValue], old: SSAValue | None, three: ThreeOp, two: TwoOp
) -> list[SSAValue]:
    acc = []
    for i in range(MINMAX_WIDTH):
        a, b = first[2 * i], first[2 * i + 1]
        # TIRx: with accum, temp[0] = reduce3(src[0], src[1], dst) in place of the two-input op
        acc.append(e.value(three(a, b, old) if i == 0 and old is not None else two(a, b)))
    return acc


def _minmax_chunk(
    three: ThreeOp, e: Emitter, acc: list[SSAValue], chunk: list[SSAValue]
) -> list[SSAValue]:
    return [e.value(three(acc[i], chunk[2 * i], chunk[2 * i + 1])) for i in range(MINMAX_WIDTH)]


# endregion
