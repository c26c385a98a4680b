"""``scf`` into ``cf`` branches before the kernels are lowered: xDSL's ``convert-scf-to-cf``
(``scf.for/if/index_switch``) plus :class:`WhileLowering` (``scf.while/condition``),
keeping source locations on the created ops."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import cf, scf
from xdsl.dialects.builtin import ModuleOp, UnknownLoc
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import BlockInsertPoint, InsertPoint
from xdsl.transforms.convert_scf_to_cf import ForLowering, IfLowering, SwitchLowering


@dataclass
class _CurrentOp:
    op: Operation | None = None


class _Located(RewritePattern):
    """Runs ``inner`` on the ops of ``types`` (nothing else is tried: the walk passes
    every op of the kernel here) and remembers the op it rewrites, so that the ops it
    creates get that op's location (a ptxas error on a loop branch then points at the
    ``scf.for``)."""

    def __init__(self, inner: RewritePattern, current: _CurrentOp, types: tuple[type[Operation], ...]):
        self.inner = inner
        self.current = current
        self.types = types

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, self.types):
            self.current.op = op
            self.inner.match_and_rewrite(op, rewriter)


class WhileLowering(RewritePattern):
    """``scf.while`` into branches, as MLIR's SCFToControlFlow does: the entry branches to
    the "before" region with the loop's operands; its ``scf.condition`` becomes a
    conditional branch to the "after" region or out of the loop (passing its values to
    either: they are the loop's results); the "after" region's ``scf.yield`` branches
    back to the "before" region."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.WhileOp, rewriter: PatternRewriter) -> None:
        init_block = op.parent_block()
        assert init_block is not None
        # the code after the loop, taking the loop's results as block arguments
        continue_block = init_block.split_before(op)
        for i, t in enumerate(op.result_types):
            continue_block.insert_arg(t, i)
        before, after = op.before_region.block, op.after_region.block  # one block each
        condition, yield_ = before.last_op, after.last_op
        assert isinstance(condition, scf.ConditionOp) and isinstance(yield_, scf.YieldOp)
        values = list(condition.args)
        # each branch keeps the location of the terminator it replaces
        branch = cf.ConditionalBranchOp(condition.condition, after, values, continue_block, values)
        branch.location = condition.location
        rewriter.replace(condition, branch)
        back = cf.BranchOp(before, *yield_.operands)
        back.location = yield_.location
        rewriter.replace(yield_, back)
        rewriter.inline_region(op.before_region, BlockInsertPoint.before(continue_block))
        rewriter.inline_region(op.after_region, BlockInsertPoint.before(continue_block))
        rewriter.insert(cf.BranchOp(before, *op.arguments), InsertPoint.at_end(init_block))
        rewriter.replace(op, [], continue_block.args)


def convert_scf_to_cf(module: ModuleOp) -> None:
    """xDSL's ``convert-scf-to-cf`` plus :class:`WhileLowering`, keeping source locations
    on the created ops."""
    current = _CurrentOp()

    def locate(new: Operation) -> None:
        if isinstance(new.location, UnknownLoc) and current.op is not None:
            new.location = current.op.location

    lowerings = GreedyRewritePatternApplier(
        [SwitchLowering(), IfLowering(), ForLowering(), WhileLowering()],
        dce_enabled=False,  # keep every load and store the input asks for
    )
    # One walk: every scf op is on the worklist from the start (nested ones too, and
    # they stay on it when an outer op's region is inlined), and the ops the patterns
    # make are cf and arith ops, which no pattern here rewrites; so no second walk.
    PatternRewriteWalker(
        _Located(lowerings, current, (scf.IndexSwitchOp, scf.IfOp, scf.ForOp, scf.WhileOp)),
        apply_recursively=False,
        listener=PatternRewriterListener(operation_insertion_handler=[locate]),
    ).rewrite_module(module)
