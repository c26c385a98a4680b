"""The differential cases of ``bulkred_dialect.ops.ptx.sreg``: mov of the special registers."""

from __future__ import annotations

from collections.abc import Iterator

from bulkred_dialect.ops.ptx.sreg import MovSregOp, SpecialRegister
from ptx_cases import DiffCase


def differential_cases() -> Iterator[DiffCase]:
    """Every special register (their target requirements are what is compared)."""
    for r in SpecialRegister:
        yield DiffCase(f"mov.sreg.{r}", (), lambda v, r=r: MovSregOp(r))
