"""The lanes of a warp: what ``shfl.sync`` and ``redux.sync`` compute from the values of a
warp's lanes (shared by the thread-by-thread run, interpreter/threads.py, and the
lockstep one, interpreter/lockstep.py)."""

from __future__ import annotations

from typing import Any

from bulkred_dialect.interpreter.values import float_bits, float_from_bits, float_minmax, int_binary
from bulkred_dialect.ops.ptx.arith import ArithType
from bulkred_dialect.ops.ptx.redux import ReduxSyncOp, ReduxType
from bulkred_dialect.ops.ptx.warp import ShflMode

WARP = 32
FULL_MASK = 0xFFFFFFFF


def shfl_source_lane(mode: ShflMode, lane: int, b: int, c: int) -> int:
    """PTX ISA, shfl.sync: the lane whose ``a`` lane ``lane`` gets (its own when the
    computed source lane is out of range)."""
    bval, cval, segmask = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (cval & ~segmask)
    min_lane = lane & segmask
    if mode == ShflMode.UP:
        j, ok = lane - bval, lane - bval >= max_lane
    elif mode == ShflMode.DOWN:
        j, ok = lane + bval, lane + bval <= max_lane
    elif mode == ShflMode.BFLY:
        j, ok = lane ^ bval, (lane ^ bval) <= max_lane
    else:
        j = min_lane | (bval & ~segmask)
        ok = j <= max_lane
    return j if ok else lane


def redux_values(op: ReduxSyncOp, values: list[Any]) -> Any:
    """What ``redux.sync`` gives every lane of a warp whose lanes hold ``values``."""
    t, kind = op.type.data, str(op.op.data)
    if t == ReduxType.F32:
        if op.abs is not None:
            values = [float_from_bits(ArithType.F32, float_bits(ArithType.F32, v) & 0x7FFFFFFF) for v in values]
        return float_minmax(kind, ArithType.F32, tuple(values), nan=op.nan is not None)
    acc = values[0]
    for v in values[1:]:
        acc = int_binary(kind, ArithType(str(t)), acc, v)
    return acc
