"""``legalize-for-target{target=sm_XX}``: rewrite the sm_100 packed instructions into
scalar ones when the target cannot run them.

* ``ptx.add.f32x2 {rnd} {ftz} a, b`` -> unpack ``a`` and ``b``, two scalar
  ``ptx.add {rnd} {ftz} f32`` (low lanes, then high lanes), ``ptx.mov.pack``;
* ``ptx.max3 {ftz} {NaN} a, b, c`` -> ``ptx.max {ftz} {NaN} f32 (ptx.max {ftz} {NaN} f32 a, b), c``
  (``ptx.min3`` likewise);
* then ``ptx.mov.unpack (ptx.mov.pack lo, hi)`` -> ``lo, hi``, so that chains of
  legalized packed adds keep no round trips through a .b64 register.

Each rewrite computes the same bits as the packed instruction: the f32x2 add is two
independent f32 adds with the same rounding and flush-to-zero, and the three-input
max / min is the two-input one applied left to right (PTX ISA 9.7.3.10/11); with
``.NaN`` any NaN input gives the canonical NaN in both (``max.NaN.f32`` needs sm_80). On a
target that runs the packed forms (sm_100 and later) the pass changes nothing. The
new ops carry the location of the op they replace.

Example: ``bulkred-opt -p 'legalize-for-target{target=sm_90a}'``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from bulkred_dialect.ops.ptx.arith import (
    AddF32x2Op,
    AddOp,
    ArithType,
    Max3Op,
    MaxOp,
    Min3Op,
    MinOp,
    PackF32x2Op,
    ThreeInputMinMaxOp,
    UnpackF32x2Op,
)
from bulkred_dialect.ops.target import Target
from bulkred_dialect.passes.targeting import TargetedPass


def _located(replaced: Operation, ops: list[Operation]) -> list[Operation]:
    """``ops``, each given the location of the op they replace."""
    for o in ops:
        o.location = replaced.location
    return ops


@dataclass
class LegalizeAddF32x2(RewritePattern):
    target: Target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddF32x2Op, rewriter: PatternRewriter) -> None:
        if op.requirement().satisfied_by(self.target):
            return
        rnd = op.rnd.data if op.rnd is not None else None
        ftz = op.ftz is not None
        a, b = UnpackF32x2Op(op.lhs), UnpackF32x2Op(op.rhs)
        lo = AddOp(ArithType.F32, a.lo, b.lo, rnd=rnd, ftz=ftz)
        hi = AddOp(ArithType.F32, a.hi, b.hi, rnd=rnd, ftz=ftz)
        rewriter.replace(op, _located(op, [a, b, lo, hi, PackF32x2Op(lo.result, hi.result)]))


@dataclass
class LegalizeThreeInputMinMax(RewritePattern):
    target: Target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ThreeInputMinMaxOp, rewriter: PatternRewriter) -> None:
        if op.requirement().satisfied_by(self.target):
            return
        two = MaxOp if isinstance(op, Max3Op) else MinOp
        assert isinstance(op, Max3Op | Min3Op)
        ftz, nan = op.ftz is not None, op.nan is not None
        first = two(ArithType.F32, op.a, op.b, ftz=ftz, nan=nan)
        rewriter.replace(op, _located(op, [first, two(ArithType.F32, first.result, op.c, ftz=ftz, nan=nan)]))


class FoldUnpackOfPack(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnpackF32x2Op, rewriter: PatternRewriter) -> None:
        pack = op.src.owner
        if not isinstance(pack, PackF32x2Op):
            return
        rewriter.replace(op, [], [pack.lo, pack.hi])
        if not pack.result.uses:
            rewriter.erase(pack)


@dataclass(frozen=True)
class LegalizeForTargetPass(TargetedPass):
    name = "legalize-for-target"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = self.target_for(op)
        if AddF32x2Op.REQUIREMENT.satisfied_by(target) and Max3Op.REQUIREMENT.satisfied_by(target):
            return
        if not any(isinstance(o, AddF32x2Op | ThreeInputMinMaxOp | UnpackF32x2Op) for o in op.walk()):
            return  # nothing to legalize: no rewrite walk
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [LegalizeAddF32x2(target), LegalizeThreeInputMinMax(target), FoldUnpackOfPack()]
            )
        ).rewrite_module(op)
