"""The differential test's cases (docs/differential.md): one module per instruction module
of ``bulkred_dialect.ops.ptx``, of the same name, whose ``differential_cases()`` yields
:class:`DiffCase`s -- every combination of the qualifiers in the syntax blocks of its PTX
ISA section, valid or not. ``tests/differential_harness.py`` builds each case and compares
our verdict (verifier + target check) with ptxas's.

A case must use the right operand types: ptxas only sees register widths, so an ``i32``
and a shared-memory pointer both become ``%r``; wrong-type cases belong in the
``_invalid`` lit tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.ir import Attribute, SSAValue

from bulkred_dialect.ops.ptx.base import PtxInstruction


@dataclass(frozen=True)
class DiffCase:
    """One qualifier combination for the differential test against ptxas.

    ``build`` receives one SSA value per entry of ``operand_types`` (block arguments
    of a minimal kernel) and returns the op -- valid or not; the harness asks the
    verifier and the target check for a verdict and compares it with ptxas.
    """

    name: str
    operand_types: tuple[Attribute, ...]
    build: Callable[[Sequence[SSAValue]], PtxInstruction]
