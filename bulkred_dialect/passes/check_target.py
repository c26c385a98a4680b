"""``check-target{target=sm_XX}``: reject any ptx op the target cannot run."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.base import PtxInstruction
from bulkred_dialect.ops.target import Target, TargetError, check_target
from bulkred_dialect.passes.targeting import TARGET_ATTR, TargetedPass, resolve_target

# resolve_target and TARGET_ATTR live in passes/targeting.py; re-exported for the passes
# and the builder that import them from here.
__all__ = ["TARGET_ATTR", "CheckTargetPass", "check_module", "resolve_target"]


def check_module(module: ModuleOp, target: Target) -> None:
    """Raise a located error for the first ptx op that ``target`` cannot run."""
    for op in module.walk():
        if isinstance(op, PtxInstruction):
            try:
                check_target(op.ptx_mnemonic, op.requirement(), target)
            except TargetError as e:
                raise LocatedError(op, str(e)) from None


@dataclass(frozen=True)
class CheckTargetPass(TargetedPass):
    name = "check-target"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_module(op, self.target_for(op))
