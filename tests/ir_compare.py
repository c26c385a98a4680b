"""Comparing lowered modules without printing them: printing a lowered row kernel takes
about 20 ms, and tests that only ask whether two kernels are the same, or whether a
value of a given name is there, printed each several times (issue 29: the CPU suite's
time). tests/test_ir_compare.py checks these against the printed text."""

from __future__ import annotations

from typing import Any


def same_ir(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` (modules, or any ops) hold the same IR, as equal printed
    text says but for the SSA values' names: xDSL's structural equivalence (each op's
    name, attributes, properties, operands, successors and regions, each block's
    argument types), and each op's result types, which that leaves out."""
    if not a.is_structurally_equivalent(b):
        return False
    return all(x.result_types == y.result_types for x, y in zip(a.walk(), b.walk(), strict=True))


def value_names(m: Any) -> list[str]:
    """The names (``name_hint``, printed as ``%name`` or ``%name_1``) of the values of
    ``m``: every op's results and every block's arguments, in walk order."""
    names = []
    for op in m.walk():
        names += [r.name_hint for r in op.results if r.name_hint]
        for region in op.regions:
            for block in region.blocks:
                names += [a.name_hint for a in block.args if a.name_hint]
    return names


def has_value_named(m: Any, part: str) -> bool:
    """A value of ``m`` whose name holds ``part`` (``part in str(m)``, where ``part`` is
    a value's name and nothing else's)."""
    return any(part in n for n in value_names(m))
