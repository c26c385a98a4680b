"""The differential cases of ``bulkred_dialect.ops.ptx.warp``: shfl.sync."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import product

from xdsl.ir import SSAValue

from bulkred_dialect.ops.ptx.base import PtxInstruction, f16, f32, f64, i16, i32, i64
from bulkred_dialect.ops.ptx.warp import ShflMode, ShflSyncOp
from ptx_cases import DiffCase


def differential_cases() -> Iterator[DiffCase]:
    """Every ``.mode`` with each register class for ``a`` (``.b32`` takes only 32-bit
    registers: i16, i64, f16 and f64 are rejected by both)."""
    for mode, t in product(ShflMode, (i32, f32, i16, i64, f16, f64)):

        def build(v: Sequence[SSAValue], mode=mode) -> PtxInstruction:
            return ShflSyncOp(mode, v[0], v[1], v[2], v[3])

        yield DiffCase(f"shfl.sync.{mode}.b32.{t}", (t, i32, i32, i32), build)
