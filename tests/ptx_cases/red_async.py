"""The differential cases of ``bulkred_dialect.ops.ptx.red_async``: red.async (the
relaxed.cluster and the release forms)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import product

from xdsl.ir import SSAValue

from bulkred_dialect.ops.ptx.base import PtrType, PtxInstruction, StateSpace
from bulkred_dialect.ops.ptx.red_async import (
    RedAsyncOp,
    RedAsyncRelaxedClusterOp,
    RedAsyncReleaseOp,
    RedAsyncReleaseType,
    RedAsyncScope,
    RedAsyncType,
    value_type,
)
from ptx_cases import DiffCase


# The state spaces the syntax blocks name for '.ss', plus none (generic addressing).
_SS_CHOICES = (StateSpace.GENERIC, StateSpace.SHARED_CLUSTER, StateSpace.GLOBAL)


def differential_cases() -> Iterator[DiffCase]:
    """Every op x type x ss of the relaxed.cluster form and every scope x ss x mmio x
    type of the release form, valid or not."""
    for op, type, ss in product(RedAsyncOp, RedAsyncType, _SS_CHOICES):

        def build_relaxed(v: Sequence[SSAValue], op=op, type=type) -> PtxInstruction:
            return RedAsyncRelaxedClusterOp(op, type, v[0], v[1], v[2])

        yield DiffCase(
            f"red.async.relaxed.cluster.{ss}.{op}.{type}",
            (PtrType(ss), value_type(type), PtrType(ss)),
            build_relaxed,
        )
    for mmio, scope, ss, rtype in product(
        (False, True), RedAsyncScope, _SS_CHOICES, RedAsyncReleaseType
    ):

        def build_release(
            v: Sequence[SSAValue], scope=scope, rtype=rtype, mmio=mmio
        ) -> PtxInstruction:
            return RedAsyncReleaseOp(scope, rtype, v[0], v[1], mmio=mmio)

        yield DiffCase(
            f"red.async{'.mmio' if mmio else ''}.release.{scope}.{ss}.add.{rtype}",
            (PtrType(ss), value_type(rtype)),
            build_release,
        )
