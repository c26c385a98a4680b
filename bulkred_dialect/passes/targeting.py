"""The target of a pass: one field, typed, resolved once.

Every pass that depends on the GPU target subclasses :class:`TargetedPass`. Its
``target`` field holds a :class:`~bulkred_dialect.ops.target.Target` (a name given on
the command line, ``-p 'pass{target=sm_100a}'``, is parsed once, when the pass is
made); :meth:`TargetedPass.target_for` gives the target for a module: the field when
set, else the module's ``bulkred.target`` attribute, else sm_90a
(:func:`resolve_target`). A pipeline pass hands its resolved :class:`Target` on to the
passes it runs, so that no stage parses a name again. The PTX printer's ``-t
'ptx{target=...}'`` holds its target the same way (:func:`target_option`).
"""

from __future__ import annotations

import dataclasses
from abc import ABC
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.target import DEFAULT_TARGET, Target, TargetError

TARGET_ATTR = "bulkred.target"
TARGET_PREFIX = "'target' "


def resolve_target(module: ModuleOp, option: Target | str | None = None) -> Target:
    """The option when given, else the module's ``bulkred.target`` attribute, else sm_90a.

    A ``bulkred.target`` that is not a known target's name is an error located on
    the module, never silently replaced by the default.
    """
    if isinstance(option, Target):
        return option
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


def target_option(value: Target | str | None) -> Target | None:
    """A ``target`` option as given (a :class:`Target`, a name, or None/"" for none), parsed."""
    if isinstance(value, Target) or value is None:
        return value
    return Target.parse(value) if value else None


@dataclass(frozen=True)
class TargetedPass(ModulePass, ABC):
    """A pass with a ``target`` option: a :class:`Target`, or None for the module's own."""

    target: Target | str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.target, Target | None):
            object.__setattr__(self, "target", target_option(self.target))

    def target_for(self, module: ModuleOp) -> Target:
        """The field when set, else :func:`resolve_target` of ``module``."""
        assert not isinstance(self.target, str)
        return self.target if self.target is not None else resolve_target(module)

    def spec(self, *, include_default: bool = False) -> ArgSpec:
        """xDSL's spec, with the target as its name (``target=sm_100a``)."""
        plain = super(TargetedPass, dataclasses.replace(self, target=None)).spec(include_default=include_default)
        if self.target is None:
            return plain
        return ArgSpec(plain.name, {"target": (str(self.target),), **plain.parameters})
