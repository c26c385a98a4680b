"""The differential cases of ``bulkred_dialect.ops.ptx.sync``: mbarrier.*, fence.*,
cp.async.bulk.commit_group / wait_group, barrier.cluster, bar.sync, mapa."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import product

from xdsl.ir import SSAValue

from bulkred_dialect.ops.ptx.base import PtrType, PtxInstruction, StateSpace, i32
from bulkred_dialect.ops.ptx.sync import (
    BarSyncOp,
    BarrierClusterArriveOp,
    BarrierClusterWaitOp,
    ClusterArriveSem,
    CpAsyncBulkCommitGroupOp,
    CpAsyncBulkWaitGroupOp,
    FenceMbarrierInitOp,
    FenceProxyAsyncOp,
    MapaOp,
    MbarrierArriveExpectTxOp,
    MbarrierArriveOp,
    MbarrierInitOp,
    MbarrierInvalOp,
    MbarrierTryWaitParityOp,
)
from ptx_cases import DiffCase


def differential_cases() -> Iterator[DiffCase]:
    """Every qualifier combination of the forms of ops/ptx/sync.py, valid or not."""
    cta, cluster = PtrType(StateSpace.SHARED_CTA), PtrType(StateSpace.SHARED_CLUSTER)
    yield DiffCase("mbarrier.init", (cta, i32), lambda v: MbarrierInitOp(v[0], v[1]))
    yield DiffCase("mbarrier.arrive", (cta,), lambda v: MbarrierArriveOp(v[0]))
    for space, sink in product((cta, cluster), (False, True)):

        def build_expect_tx(v: Sequence[SSAValue], sink=sink) -> PtxInstruction:
            return MbarrierArriveExpectTxOp(v[0], v[1], sink=sink)

        yield DiffCase(
            f"mbarrier.arrive.expect_tx.{space.state_space}{'.sink' if sink else ''}",
            (space, i32),
            build_expect_tx,
        )
    yield DiffCase(
        "mbarrier.try_wait.parity", (cta, i32), lambda v: MbarrierTryWaitParityOp(v[0], v[1])
    )
    for space in (cta, cluster):
        yield DiffCase(
            f"mbarrier.inval.{space.state_space}", (space,), lambda v: MbarrierInvalOp(v[0])
        )
    yield DiffCase("fence.mbarrier_init", (), lambda v: FenceMbarrierInitOp())
    for space in (None, *StateSpace):
        yield DiffCase(
            f"fence.proxy.async.{space or 'all'}",
            (),
            lambda v, space=space: FenceProxyAsyncOp(space),
        )
    yield DiffCase("cp.async.bulk.commit_group", (), lambda v: CpAsyncBulkCommitGroupOp())
    for read, n in product((False, True), (0, 1, 7)):
        yield DiffCase(
            f"cp.async.bulk.wait_group{'.read' if read else ''}.{n}",
            (),
            lambda v, n=n, read=read: CpAsyncBulkWaitGroupOp(n, read=read),
        )
    for sem, aligned in product((None, *ClusterArriveSem), (False, True)):
        yield DiffCase(
            f"barrier.cluster.arrive.{sem or 'default'}{'.aligned' if aligned else ''}",
            (),
            lambda v, sem=sem, aligned=aligned: BarrierClusterArriveOp(sem, aligned=aligned),
        )
    for acquire, aligned in product((False, True), (False, True)):
        yield DiffCase(
            f"barrier.cluster.wait{'.acquire' if acquire else ''}{'.aligned' if aligned else ''}",
            (),
            lambda v, acquire=acquire, aligned=aligned: BarrierClusterWaitOp(
                acquire=acquire, aligned=aligned
            ),
        )
    for id in (0, 15, 16):
        yield DiffCase(f"bar.sync.{id}", (), lambda v, id=id: BarSyncOp(id))
    yield DiffCase("mapa", (cta, i32), lambda v: MapaOp(v[0], v[1]))
