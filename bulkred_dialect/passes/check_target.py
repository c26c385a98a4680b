"""``check-target{target=sm_XX}``: reject any ptx op the target cannot run."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.base import PtxInstruction
from bulkred_dialect.ops.target import DEFAULT_TARGET, Target, TargetError, check_target

TARGET_ATTR = "bulkred.target"
TARGET_PREFIX = "'target' "


def resolve_target(module: ModuleOp, option: str | None) -> Target:
    """The pass option when given, else the module's ``bulkred.target`` attribute, else sm_90a.

    A ``bulkred.target`` that is not a known target's name is an error located on
    the module, never silently replaced by the default.
    """
    if option:
        return Target.parse(option)
    attr = module.attributes.get(TARGET_ATTR)
    if attr is None:
        return DEFAULT_TARGET
    if not isinstance(attr, StringAttr):
        raise LocatedError(module, f"'{TARGET_ATTR}' must be a string such as \"sm_90a\", got {attr}")
    try:
        return Target.parse(attr.data)
    except TargetError as e:
        raise LocatedError(module, f"'{TARGET_ATTR}' {str(e).removeprefix(TARGET_PREFIX)}") from None


def check_module(module: ModuleOp, target: Target) -> None:
    """Raise a located error for the first ptx op that ``target`` cannot run."""
    for op in module.walk():
        if isinstance(op, PtxInstruction):
            try:
                check_target(op.ptx_mnemonic, op.requirement(), target)
            except TargetError as e:
                raise LocatedError(op, str(e)) from None


@dataclass(frozen=True)
class CheckTargetPass(ModulePass):
    name = "check-target"

    target: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_module(op, resolve_target(op, self.target))
