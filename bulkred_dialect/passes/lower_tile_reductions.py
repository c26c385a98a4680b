"""``lower-tile-reductions{target=sm_XX explain=true}``: lower ``bulkred.reduce`` through
the variant registry and ``bulkred.copy`` into element loops.

After this pass the module holds ``func``, ``memref.alloca/load/store``, ``arith``
index constants, ``scf.for/yield`` and ptx arithmetic ops (docs/DEVELOPING.md,
"Dialect levels", level 2). The target is the ``target`` option (a ``Target``, or a
name parsed once: passes/targeting.py), else the module's ``bulkred.target``
attribute, else sm_90a. Every op created for a ``bulkred.reduce``
or ``bulkred.copy`` carries that op's location.

With ``explain=true`` the dispatch table of every ``bulkred.reduce`` (in source order,
before any rewriting) goes to the *explain sink*, one call per module. The default
sink writes the tables to stdout as ``//`` comment lines. A driver that owns its
output stream (bulkred-opt with ``--split-input-file`` or ``-o``) selects another
sink around the passes of each input chunk, so that the tables land in that stream
ahead of the chunk's IR: :func:`comment_writer` of the stream, or
:func:`record_on_module`, which appends each table to the module attribute
``bulkred.explain`` (an ``ArrayAttr`` of ``StringAttr``) for :func:`take_explanations`
to remove and render. A reduction that no variant lowers then fails with the error's
first line only (the table is in the sink already)::

    with explain_sink(comment_writer(out)):
        LowerTileReductionsPass(explain=True).apply(ctx, module)
    out.write(printed_ir)

Example::

    bulkred-opt examples/seed_sum32.mlir -p 'lower-tile-reductions{target=sm_100a explain=true}'
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import CopyOp, NormalizeRowsOp, ReduceListOp, ReduceOp, ScaleListOp
from bulkred_dialect.passes.dispatch import choose, explain
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.targeting import TargetedPass
from bulkred_dialect.passes.variants.grid_common import LOWERING


@dataclass
class LowerReduce(RewritePattern):
    """``bulkred.reduce`` -> the lowering of the variant the registry selects."""

    target: Target
    explained: bool = False
    """The tables went to the explain sink already: errors leave them out (no table twice)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReduceOp, rewriter: PatternRewriter) -> None:
        try:
            variant = choose(op, self.target)
        except LocatedError as e:
            if not self.explained:
                raise
            first = e.message.split("\n", 1)[0]
            raise LocatedError(e.op, f"{first} (explain=true printed the dispatch table)") from None
        _lower(variant, op, rewriter, self.target)


@dataclass
class LowerReduceList(RewritePattern):
    """``bulkred.reduce_list`` / ``bulkred.scale_list`` / ``bulkred.normalize_rows`` -> the lowering the registry selects."""

    target: Target

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, ReduceListOp | ScaleListOp | NormalizeRowsOp):
            _lower(choose(op, self.target), op, rewriter, self.target)


def _lower(variant, op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    """``variant``'s lowering of ``op``, its name known to a refusal of the kernel's own
    launch (``grid_common.set_launch``)."""
    token = LOWERING.set(variant.name)
    try:
        variant.lower(op, rewriter, target)
    finally:
        LOWERING.reset(token)


class LowerCopy(RewritePattern):
    """``bulkred.copy`` -> ``dst[i...] = src[i...]`` in one ``scf.for`` per dimension."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CopyOp, rewriter: PatternRewriter) -> None:
        t = op.src.type
        assert isinstance(t, MemRefType)

        def body(e: Emitter, ivs: list) -> None:
            e.store(e.load(op.src, ivs), op.dst, ivs)

        Emitter.before(op).nest(list(t.get_shape()), body)
        rewriter.erase(op)


# region explain=true output

EXPLAIN_ATTR = "bulkred.explain"

ExplainSink = Callable[[ModuleOp, list[str]], None]
"""Receives a module and the dispatch tables of its ``bulkred.reduce`` ops (one string
per op, in source order, lines separated by ``\\n``)."""


def as_comments(tables: list[str]) -> str:
    """The tables as ``// `` comment lines, each ending in a newline (``""`` for none)."""
    return "".join(f"// {line}".rstrip() + "\n" for table in tables for line in table.splitlines())


def comment_writer(stream: TextIO | None = None) -> ExplainSink:
    """A sink that writes the tables as ``//`` lines to ``stream`` (``None``: whatever
    ``sys.stdout`` is when the pass runs)."""

    def write(module: ModuleOp, tables: list[str]) -> None:
        out = stream if stream is not None else sys.stdout
        out.write(as_comments(tables))
        out.flush()

    return write


def record_on_module(module: ModuleOp, tables: list[str]) -> None:
    """A sink that appends the tables to the module attribute ``bulkred.explain``."""
    old = module.attributes.get(EXPLAIN_ATTR)
    kept = list(old.data) if isinstance(old, ArrayAttr) else []
    module.attributes[EXPLAIN_ATTR] = ArrayAttr([*kept, *(StringAttr(t) for t in tables)])


def take_explanations(module: ModuleOp) -> str:
    """Remove ``bulkred.explain`` from ``module`` and return its tables as ``//`` lines
    (``""`` when the module has none)."""
    attr = module.attributes.pop(EXPLAIN_ATTR, None)
    if not isinstance(attr, ArrayAttr):
        return ""
    return as_comments([a.data for a in attr.data if isinstance(a, StringAttr)])


_SINK: ContextVar[ExplainSink] = ContextVar("bulkred_explain_sink", default=comment_writer())


@contextmanager
def explain_sink(sink: ExplainSink) -> Iterator[ExplainSink]:
    """Send the ``explain=true`` tables of passes run inside the ``with`` to ``sink``."""
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


def explanations(module: ModuleOp, target: Target) -> list[str]:
    """Every ``bulkred.reduce``'s dispatch table, in source order."""
    return [explain(op, target) for op in module.walk() if isinstance(op, ReduceOp | ReduceListOp | ScaleListOp | NormalizeRowsOp)]


def print_explanations(module: ModuleOp, target: Target) -> None:
    """Send every ``bulkred.reduce``'s dispatch table to the current explain sink."""
    tables = explanations(module, target)
    if tables:
        _SINK.get()(module, tables)


# endregion


@dataclass(frozen=True)
class LowerTileReductionsPass(TargetedPass):
    name = "lower-tile-reductions"

    explain: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = self.target_for(op)
        if self.explain:
            print_explanations(op, target)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([LowerReduce(target, self.explain), LowerReduceList(target), LowerCopy()]),
            apply_recursively=False,
        ).rewrite_module(op)
