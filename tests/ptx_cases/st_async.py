"""The differential cases of ``bulkred_dialect.ops.ptx.st_async``: st.async
(``st.async.shared::cluster.mbarrier::complete_tx::bytes{.v2, .v4}.type [a], b, [mbar]``),
every ``.type`` x vector width of its syntax block, valid or not (``.v4`` of a 64-bit
type is not)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import product

from xdsl.ir import SSAValue

from bulkred_dialect.ops.ptx.base import PtrType, PtxInstruction, StateSpace
from bulkred_dialect.ops.ptx.st_async import StAsyncOp, StAsyncType, st_async_register
from ptx_cases import DiffCase


def differential_cases() -> Iterator[DiffCase]:
    """Every ``.type`` with 1, 2 and 4 values."""
    for t, n in product(StAsyncType, (1, 2, 4)):

        def build(v: Sequence[SSAValue], t=t, n=n) -> PtxInstruction:
            return StAsyncOp(t, v[0], v[1:1 + n], v[-1])

        ptr = PtrType(StateSpace.SHARED_CLUSTER)
        yield DiffCase(
            f"st.async.shared::cluster.mbarrier::complete_tx::bytes{'' if n == 1 else f'.v{n}'}.{t}",
            (ptr, *([st_async_register(t)] * n), ptr),
            build,
        )
