"""Dispatch: which lowering variant of a tile-level op runs on a target, and why.

:func:`choose` and :func:`select` pick from the project's registry (the table in
``passes/variants/__init__.py``; the machinery is ``passes/registry.py``);
:func:`explain` returns the decision table: every variant of the op's scope, each
predicate's verdict, the expected and the actual value. When no variant applies,
:func:`select` raises a located error that contains the table.

Example::

    print(explain(reduce_op, "sm_100a"))
"""

from __future__ import annotations

from xdsl.ir import Operation

from bulkred_dialect.ops.target import Target
from bulkred_dialect.passes.registry import Selection, Variant
from bulkred_dialect.passes.variants import REGISTRY


def select(op: Operation, target: Target) -> Selection:
    """The chosen variant for ``op`` on ``target`` (located error when none applies)."""
    return REGISTRY.select(op, target)


def choose(op: Operation, target: Target) -> Variant:
    """:func:`select`'s chosen variant, evaluating no more predicates than it needs."""
    return REGISTRY.choose(op, target)


def explain(op: Operation, target: Target | str) -> str:
    """The decision table for ``op`` on ``target``, whether or not a variant applies."""
    t = Target.parse(target) if isinstance(target, str) else target
    return REGISTRY.evaluate(op, t).table()
