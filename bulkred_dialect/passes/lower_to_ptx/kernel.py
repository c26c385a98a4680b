"""One kernel's lowering: its arguments first (a ``#bulkred.scope<global>`` memref becomes
a ``!ptx.ptr<global>``, ``index`` becomes ``i64``), then every op, blocks in an order that
puts each definition before its uses, through the handler of the op's source dialect;
ptx ops stay as they are. Anything else is a located error naming the op."""

from __future__ import annotations

from xdsl.dialects.builtin import FunctionType, IndexType, MemRefType
from xdsl.ir import Block, Operation
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.base import PtrType, PtxInstruction, StateSpace
from bulkred_dialect.ops.tile import MemoryScope, kernel_launch, scope_of
from bulkred_dialect.passes.lower_to_ptx.arith import ARITH_HANDLERS
from bulkred_dialect.passes.lower_to_ptx.casts import CAST_HANDLERS
from bulkred_dialect.passes.lower_to_ptx.control_flow import CONTROL_FLOW_HANDLERS
from bulkred_dialect.passes.lower_to_ptx.indices import INDEX_HANDLERS
from bulkred_dialect.passes.lower_to_ptx.memref import MEMREF_HANDLERS
from bulkred_dialect.passes.lower_to_ptx.state import INDEX_TYPE, Buffer, LoweringState

# op type -> its handler, one table per source dialect
HANDLERS = {
    **ARITH_HANDLERS,
    **INDEX_HANDLERS,
    **MEMREF_HANDLERS,
    **CAST_HANDLERS,
    **CONTROL_FLOW_HANDLERS,
}

_SUPPORTED = (
    "func.return, memref.alloca/load/store/subview, arith.constant/addi/subi/muli/"
    "divui/divsi/remui/remsi/minui/minsi/maxui/maxsi/index_cast/"
    "extsi/extui/trunci/cmpi/select, arith.xori (negating a branch condition), "
    "gpu.thread_id/block_id/block_dim/grid_dim/lane_id, bulkred.cluster_rank/cluster_size, "
    "scf.for/if/while/condition/yield, cf.br/cond_br, ptx ops"
)


class KernelLowering(LoweringState):
    """Lowers one ``func.func`` in place."""

    def run(self) -> None:
        k = self.kernel
        if not k.body.blocks:
            raise LocatedError(k, "must have a body to be a kernel")
        if k.function_type.outputs.data:
            raise LocatedError(k, "a kernel returns nothing, but this function has results")
        try:
            kernel_launch(k)
        except VerifyException as e:
            raise LocatedError(k, str(e)) from None
        self._convert_arguments()
        for block in self._block_order():
            for op in list(block.ops):
                self._lower(op)
        self._erase_dead()

    def _lower(self, op: Operation) -> None:
        if isinstance(op, PtxInstruction):
            return
        handler = HANDLERS.get(type(op))
        if handler is None:
            raise LocatedError(op, f"cannot be lowered to ptx (supported: {_SUPPORTED})")
        handler(self, op)

    def _block_order(self) -> list[Block]:
        """Blocks with every definition before its uses (reverse post-order), then any
        unreachable ones."""
        entry = self.kernel.body.blocks.first
        assert entry is not None
        seen: set[Block] = set()
        post: list[Block] = []

        def visit(b: Block) -> None:
            stack: list[tuple[Block, int]] = [(b, 0)]
            seen.add(b)
            while stack:
                blk, i = stack.pop()
                succs = list(blk.last_op.successors) if blk.last_op is not None else []
                if i < len(succs):
                    stack.append((blk, i + 1))
                    s = succs[i]
                    if s not in seen:
                        seen.add(s)
                        stack.append((s, 0))
                else:
                    post.append(blk)

        visit(entry)
        order = post[::-1]
        return order + [b for b in self.kernel.body.blocks if b not in seen]

    def _convert_arguments(self) -> None:
        k = self.kernel
        entry = k.body.blocks.first
        assert entry is not None
        for arg in list(entry.args):
            t = arg.type
            if isinstance(t, MemRefType):
                scope = scope_of(t)
                if scope != MemoryScope.GLOBAL:
                    raise LocatedError(
                        k,
                        f"argument {arg.index} must be a memref in #bulkred.scope<global> "
                        f"to be a kernel parameter, got {t}",
                    )
                # a view parameter (strided<[...]>, offset 0: a grid-scope src) is its first
                # element's address; memref.load/store of it still need the default layout
                # a dynamic shape only for a buffer read through its address (the list
                # ops' descriptor table and per-tensor results: the cast to !ptx.ptr)
                addressed = all(u.operation.name == "builtin.unrealized_conversion_cast" for u in arg.uses)
                if not (addressed and any(d < 0 for d in t.get_shape())):
                    self.check_static(k, t, views=True)
                new = Rewriter.replace_value_with_new_type(arg, PtrType(StateSpace.GLOBAL))
                self.buffers[new] = Buffer(new, t)
            elif isinstance(t, IndexType):
                Rewriter.replace_value_with_new_type(arg, INDEX_TYPE)
        for block in list(k.body.blocks)[1:]:
            for arg in list(block.args):
                if isinstance(arg.type, MemRefType):
                    raise LocatedError(k, f"a memref block argument cannot be lowered: {arg.type}")
                if isinstance(arg.type, IndexType):
                    Rewriter.replace_value_with_new_type(arg, INDEX_TYPE)
        k.function_type = FunctionType.from_lists(list(entry.arg_types), [])

    def _erase_dead(self) -> None:
        """Erase the pure ops this pass created whose results nobody uses (constants that
        folded into ``ld``/``st`` offsets, mostly)."""
        for op in reversed(self.created):
            if op.parent is not None and op.results and not any(r.uses for r in op.results):
                Rewriter.erase_op(op)
