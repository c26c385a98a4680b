"""``lower-tile-reductions{target=sm_XX explain=true}``: lower ``bulkred.reduce`` through
the variant registry and ``bulkred.copy`` into element loops.

After this pass the module holds ``func``, ``memref.alloca/load/store``, ``arith``
index constants, ``scf.for/yield`` and ptx arithmetic ops (docs/DEVELOPING.md,
"Dialect levels", level 2). The target is the ``target`` option, else the module's
``bulkred.target`` attribute, else sm_90a. With ``explain=true`` the dispatch table
of every ``bulkred.reduce`` is printed to stdout as ``//`` comment lines, in source
order, before the IR.

Example::

    bulkred-opt examples/seed_sum32.mlir -p 'lower-tile-reductions{target=sm_100a explain=true}'
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import CopyOp, ReduceOp
from bulkred_dialect.passes.check_target import resolve_target
from bulkred_dialect.passes.dispatch import explain, select
from bulkred_dialect.passes.variants import Emitter


@dataclass
class LowerReduce(RewritePattern):
    """``bulkred.reduce`` -> the lowering of the variant the registry selects."""

    target: Target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReduceOp, rewriter: PatternRewriter) -> None:
        chosen = select(op, self.target).chosen
        assert chosen is not None  # select raises a located error otherwise
        chosen.variant.lower(op, rewriter, self.target)


class LowerCopy(RewritePattern):
    """``bulkred.copy`` -> ``dst[i...] = src[i...]`` in one ``scf.for`` per dimension."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CopyOp, rewriter: PatternRewriter) -> None:
        t = op.src.type
        assert isinstance(t, MemRefType)

        def body(e: Emitter, ivs: list) -> None:
            e.store(e.load(op.src, ivs), op.dst, ivs)

        Emitter(rewriter).nest(list(t.get_shape()), body)
        rewriter.erase(op)


def print_explanations(module: ModuleOp, target: Target) -> None:
    """Every ``bulkred.reduce``'s dispatch table, as ``//`` lines on stdout."""
    for op in module.walk():
        if isinstance(op, ReduceOp):
            for line in explain(op, target).splitlines():
                print(f"// {line}".rstrip())
    sys.stdout.flush()


@dataclass(frozen=True)
class LowerTileReductionsPass(ModulePass):
    name = "lower-tile-reductions"

    target: str | None = None
    explain: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target)
        if self.explain:
            print_explanations(op, target)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([LowerReduce(target), LowerCopy()]),
            apply_recursively=False,
        ).rewrite_module(op)
