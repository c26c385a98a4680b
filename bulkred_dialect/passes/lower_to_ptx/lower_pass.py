"""The ``lower-to-ptx`` pass: ``scf`` into branches for the whole module, then each
``func.func`` kernel by :class:`~bulkred_dialect.passes.lower_to_ptx.kernel.KernelLowering`."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.passes.lower_to_ptx.kernel import KernelLowering
from bulkred_dialect.passes.lower_to_ptx.scf_to_cf import convert_scf_to_cf
from bulkred_dialect.passes.targeting import TARGET_ATTR, TargetedPass


@dataclass(frozen=True)
class LowerToPtxPass(TargetedPass):
    """Level-2 IR into ptx ops, kernel by kernel (see the package docstring)."""

    name = "lower-to-ptx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = self.target_for(op)  # a bad bulkred.target fails here, before any rewrite
        if self.target is not None:
            # level-3 IR is for one target: `-t ptx` prints for the one it was lowered for
            op.attributes[TARGET_ATTR] = StringAttr(target.name)
        for o in [o for block in op.body.blocks for o in block.ops]:
            if not isinstance(o, func.FuncOp):
                # scf-to-cf would split the module's block around it
                raise LocatedError(o, "must be inside a func.func kernel (lower-to-ptx lowers kernels only)")
        convert_scf_to_cf(op)
        for kernel in [o for block in op.body.blocks for o in block.ops if isinstance(o, func.FuncOp)]:
            KernelLowering(kernel, target).run()
