"""``builtin.unrealized_conversion_cast`` of a memref to ``!ptx.ptr<space>`` (made by
``lower-bulk-ops``) -> the buffer's address: its first element, moved from ``shared`` to
``shared::cluster`` through ``ptx.mov``."""

from __future__ import annotations

from xdsl.dialects.builtin import UnrealizedConversionCastOp

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.base import PtrType, StateSpace
from bulkred_dialect.ops.ptx.memory import MovOp
from bulkred_dialect.passes.lower_to_ptx.addresses import first_element
from bulkred_dialect.passes.lower_to_ptx.state import LoweringState


def cast_to_ptr(k: LoweringState, op: UnrealizedConversionCastOp) -> None:
    if len(op.inputs) != 1 or len(op.outputs) != 1 or not isinstance(op.outputs[0].type, PtrType):
        raise LocatedError(op, "only a cast of one memref to one !ptx.ptr<space> is lowered")
    buf = k.buffer(op, op.inputs[0])
    want = op.outputs[0].type
    have = buf.base.type
    assert isinstance(have, PtrType)
    if want == have:
        k.replace(op, [first_element(k, op, buf)])
    elif have.state_space == StateSpace.SHARED_CTA and want.state_space == StateSpace.SHARED_CLUSTER:
        k.replace(op, k.insert(op, MovOp(first_element(k, op, buf), want)).results)
    else:
        raise LocatedError(op, f"a {buf.type} buffer has no {want} address")


CAST_HANDLERS = {
    UnrealizedConversionCastOp: cast_to_ptr,
}
