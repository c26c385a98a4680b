"""The differential cases of ``bulkred_dialect.ops.ptx.redux``: redux.sync."""

from __future__ import annotations

from collections.abc import Iterator

from bulkred_dialect.ops.ptx.base import f32, i32, mnemonic
from bulkred_dialect.ops.ptx.redux import ReduxOp, ReduxSyncOp, ReduxType
from ptx_cases import DiffCase


def differential_cases() -> Iterator[DiffCase]:
    """Every ``.op`` x ``.type`` x ``.abs`` x ``.NaN`` combination of redux.sync, valid or not.

    Operand types follow ``.type`` so that only the qualifier rules decide the verdict.
    """
    for op in ReduxOp:
        for t in ReduxType:
            for abs_ in (False, True):
                for nan in (False, True):
                    name = mnemonic(
                        "redux.sync", op, "abs" if abs_ else None, "NaN" if nan else None, t
                    )
                    src_type = f32 if t == ReduxType.F32 else i32

                    def build(args, op=op, t=t, abs_=abs_, nan=nan) -> ReduxSyncOp:
                        return ReduxSyncOp(op, t, args[0], args[1], abs=abs_, nan=nan)

                    yield DiffCase(name, (src_type, i32), build)
