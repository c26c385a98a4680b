"""The target of a pass: one field, typed, resolved once.

Every pass that depends on the GPU target subclasses :class:`TargetedPass`. Its
``target`` field holds a :class:`~bulkred_dialect.ops.target.Target` (a name given on
the command line, ``-p 'pass{target=sm_100a}'``, is parsed once, when the pass is
made); :meth:`TargetedPass.target_for` gives the target for a module: the field when
set, else the module's ``bulkred.target`` attribute, else sm_90a
(:func:`~bulkred_dialect.ops.target.resolve_target`, which lives with the targets in
``ops/target.py``, as :data:`TARGET_ATTR` and :func:`target_option` do: the printer reads
them there). A pipeline pass hands its resolved :class:`Target` on to the passes it runs,
so that no stage parses a name again. The PTX printer's ``-t 'ptx{target=...}'`` holds
its target the same way.
"""

from __future__ import annotations

import dataclasses
from abc import ABC
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec

from bulkred_dialect.ops.target import TARGET_ATTR, TARGET_PREFIX, Target, resolve_target, target_option

# TARGET_ATTR, TARGET_PREFIX, resolve_target and target_option live in ops/target.py
# (the printer reads them there); the passes import them from here
__all__ = ["TARGET_ATTR", "TARGET_PREFIX", "TargetedPass", "resolve_target", "target_option"]


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
