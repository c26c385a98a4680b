"""The ptx dialect: one op per PTX instruction form.

Files follow the PTX ISA manual's sections; each exports its ops and attributes,
and this module lists them all in one ``Dialect``.
"""

from xdsl.ir import Dialect

from bulkred_dialect.ops.ptx.arith import ARITH_ATTRS, ARITH_OPS
from bulkred_dialect.ops.ptx.atom import ATOM_ATTRS, ATOM_OPS
from bulkred_dialect.ops.ptx.base import PtrType, PtxInstruction, StateSpace, StateSpaceAttr
from bulkred_dialect.ops.ptx.bulk import BULK_ATTRS, BULK_OPS
from bulkred_dialect.ops.ptx.control import CONTROL_ATTRS, CONTROL_OPS
from bulkred_dialect.ops.ptx.memory import MEMORY_ATTRS, MEMORY_OPS
from bulkred_dialect.ops.ptx.red_async import RED_ASYNC_ATTRS, RED_ASYNC_OPS
from bulkred_dialect.ops.ptx.redux import REDUX_ATTRS, REDUX_OPS
from bulkred_dialect.ops.ptx.sreg import SREG_ATTRS, SREG_OPS
from bulkred_dialect.ops.ptx.st_async import ST_ASYNC_ATTRS, ST_ASYNC_OPS
from bulkred_dialect.ops.ptx.sync import SYNC_ATTRS, SYNC_OPS
from bulkred_dialect.ops.ptx.warp import WARP_ATTRS, WARP_OPS

PTX_OPS = [
    *ARITH_OPS,
    *BULK_OPS,
    *RED_ASYNC_OPS,
    *ST_ASYNC_OPS,
    *REDUX_OPS,
    *SYNC_OPS,
    *SREG_OPS,
    *MEMORY_OPS,
    *CONTROL_OPS,
    *WARP_OPS,
    *ATOM_OPS,
]

PTX = Dialect(
    "ptx",
    PTX_OPS,
    [
        PtrType,
        StateSpaceAttr,
        *ARITH_ATTRS,
        *BULK_ATTRS,
        *RED_ASYNC_ATTRS,
        *ST_ASYNC_ATTRS,
        *REDUX_ATTRS,
        *SYNC_ATTRS,
        *SREG_ATTRS,
        *MEMORY_ATTRS,
        *CONTROL_ATTRS,
        *WARP_ATTRS,
        *ATOM_ATTRS,
    ],
)

__all__ = ["PTX", "PTX_OPS", "PtrType", "PtxInstruction", "StateSpace", "StateSpaceAttr"]
