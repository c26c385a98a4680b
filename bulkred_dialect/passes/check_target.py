"""``check-target{target=sm_XX}``: reject any ptx op the target cannot run."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from bulkred_dialect.ops.ptx.base import check_module
from bulkred_dialect.passes.targeting import TARGET_ATTR, TargetedPass, resolve_target

# resolve_target and TARGET_ATTR live in ops/target.py, check_module in ops/ptx/base.py
# (the printer reads them there); re-exported for the passes and the builder that import
# them from here.
__all__ = ["TARGET_ATTR", "CheckTargetPass", "check_module", "resolve_target"]


@dataclass(frozen=True)
class CheckTargetPass(TargetedPass):
    name = "check-target"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_module(op, self.target_for(op))
