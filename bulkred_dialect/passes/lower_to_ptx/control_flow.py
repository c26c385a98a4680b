"""``cf`` branches (what ``scf`` became, scf_to_cf.py) and ``func.return`` into
``ptx.bra`` / ``ptx.bra.cond`` / ``ptx.ret``. ``ptx.bra.cond`` carries no block arguments:
an edge that passes values gets a block of its own that jumps on with them."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import cf, func
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import Rewriter

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.control import BraOp, CondBraOp, RetOp
from bulkred_dialect.passes.lower_to_ptx.state import LoweringState


def br(k: LoweringState, op: cf.BranchOp) -> None:
    k.insert(op, BraOp(op.successor, *op.arguments), pure=False)
    Rewriter.erase_op(op)


def cond_br(k: LoweringState, op: cf.ConditionalBranchOp) -> None:
    then_block = _edge(k, op, op.then_block, op.then_arguments)
    else_block = _edge(k, op, op.else_block, op.else_arguments)
    cond = op.cond
    while cond in k.negated:  # branch on p with the successors swapped
        cond = k.negated[cond]
        then_block, else_block = else_block, then_block
    k.insert(op, CondBraOp(cond, then_block, else_block), pure=False)
    Rewriter.erase_op(op)


def _edge(k: LoweringState, op: Operation, target: Block, args: Sequence[SSAValue]) -> Block:
    """``target`` itself, or a new block that jumps to it passing ``args``."""
    if not args:
        return target
    here = op.parent_block()
    region = k.kernel.body
    assert here is not None
    edge = Block()
    jump = BraOp(target, *args)
    jump.location = op.location
    edge.add_op(jump)
    region.insert_block_after(edge, here)
    return edge


def return_(k: LoweringState, op: func.ReturnOp) -> None:
    if op.arguments:
        raise LocatedError(op, "a kernel returns nothing")
    k.insert(op, RetOp(), pure=False)
    Rewriter.erase_op(op)


CONTROL_FLOW_HANDLERS = {
    cf.BranchOp: br,
    cf.ConditionalBranchOp: cond_br,
    func.ReturnOp: return_,
}
