"""Synchronization companions of the bulk and async reductions: mbarrier, fences, bulk
async-groups, cluster and CTA barriers, and mapa (PTX ISA sections named in each op;
their numbers move between ISA versions, so ops name the section by its title).

The state space of an mbarrier address is its operand type: ``!ptx.ptr<shared::cta>``
prints ``.shared::cta``, ``!ptx.ptr<shared::cluster>`` prints ``.shared::cluster``.
Each op's requirement is the lowest SM / PTX ISA version whose ptxas (nvJitLink 13.5)
accepts the form.

An optional enum qualifier is written after a keyword naming it (``space "shared::cta"``,
``sem release``): xDSL's format parser cannot tell a bare optional enum from the name of
the next op, so it needs the anchor.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import I32, IntegerAttr, UnitAttr
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    irdl_attr_definition,
    operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    result_def,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.ptx.addresses import AddressOf, check_mbarrier_address
from bulkred_dialect.ops.ptx.base import (
    integer_attr,
    PtrType,
    PtxInstruction,
    RegisterNamer,
    StateSpace,
    StateSpaceAttr,
    addr,
    expect_ptr,
    i1,
    i32,
    i64,
    mnemonic,
    qualifier_error,
)
from bulkred_dialect.ops.target import Requirement

# Baseline of instructions every supported target has (as for scalar arithmetic).
_ANY_TARGET = Requirement(sm=50, ptx=(6, 0))


def _space(value: SSAValue) -> StateSpace | None:
    t = value.type
    return t.state_space if isinstance(t, PtrType) else None


def _sink_or(reg: RegisterNamer, value: SSAValue | None) -> str:
    """The destination register, or the sink ``_`` when there is no result."""
    return "_" if value is None else reg(value)


# region mbarrier


@op_definition
class MbarrierInitOp(PtxInstruction):
    """Initialize the mbarrier object at ``[addr]`` with an expected arrival count ``count``.

    PTX: ``mbarrier.init.shared::cta.b64 [addr], count;``

    Example: ``ptx.mbarrier.init %mbar, %count : !ptx.ptr<shared::cta>``.
    Needs sm_80 and PTX ISA 7.8 (for ``.shared::cta``). Spec: PTX ISA, mbarrier.init.
    """

    name = "ptx.mbarrier.init"
    SPEC_SECTION: ClassVar = "mbarrier.init"
    REQUIREMENT: ClassVar = Requirement(sm=80, ptx=(7, 8))

    addr = operand_def(Attribute)
    count = operand_def(i32)

    assembly_format = "$addr `,` $count attr-dict `:` type($addr)"

    def __init__(self, addr: SSAValue, count: SSAValue):
        super().__init__(operands=[addr, count])

    def verify_(self) -> None:
        expect_ptr("addr", self.addr, StateSpace.SHARED_CTA)
        check_mbarrier_address("addr", self.addr)

    def ptx_mnemonic(self) -> str:
        return mnemonic("mbarrier.init", _space(self.addr), "b64")

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [addr(reg(self.addr)), reg(self.count)]


@op_definition
class MbarrierArriveOp(PtxInstruction):
    """Arrive on the mbarrier at ``[addr]`` (pending count minus one) and return the
    barrier's phase state before the arrival.

    PTX: ``mbarrier.arrive.shared::cta.b64 state, [addr];``

    Example: ``%state = ptx.mbarrier.arrive %mbar : !ptx.ptr<shared::cta>``.
    Needs sm_80 and PTX ISA 7.8. Spec: PTX ISA, mbarrier.arrive.
    """

    name = "ptx.mbarrier.arrive"
    SPEC_SECTION: ClassVar = "mbarrier.arrive"
    REQUIREMENT: ClassVar = Requirement(sm=80, ptx=(7, 8))

    addr = operand_def(Attribute)
    state = result_def(i64)

    assembly_format = "$addr attr-dict `:` type($addr)"

    def __init__(self, addr: SSAValue):
        super().__init__(operands=[addr], result_types=[i64])

    def verify_(self) -> None:
        expect_ptr("addr", self.addr, StateSpace.SHARED_CTA)
        check_mbarrier_address("addr", self.addr)

    def ptx_mnemonic(self) -> str:
        return mnemonic("mbarrier.arrive", _space(self.addr), "b64")

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.state), addr(reg(self.addr))]


@op_definition
class MbarrierArriveExpectTxOp(PtxInstruction):
    """Raise the mbarrier's expected transaction count by ``tx_count`` bytes, then arrive on it.

    PTX: ``mbarrier.arrive.expect_tx.shared::cta.b64 state, [addr], tx_count;`` -- or with
    the sink ``_`` for ``state``, the only destination ptxas accepts with ``.shared::cluster``.

    ``addr`` is ``!ptx.ptr<shared::cta>`` or ``!ptx.ptr<shared::cluster>``; without a
    result the sink form is printed.

    Example::

        %state = ptx.mbarrier.arrive.expect_tx %mbar, %bytes : !ptx.ptr<shared::cta> -> i64
        ptx.mbarrier.arrive.expect_tx %remote, %bytes : !ptx.ptr<shared::cluster>

    Needs sm_90 and PTX ISA 8.0. Spec: PTX ISA, mbarrier.arrive.
    """

    name = "ptx.mbarrier.arrive.expect_tx"
    SPEC_SECTION: ClassVar = "mbarrier.arrive"
    REQUIREMENT: ClassVar = Requirement(sm=90, ptx=(8, 0))

    addr = operand_def(Attribute)
    tx_count = operand_def(i32)
    state = opt_result_def(i64)

    assembly_format = "$addr `,` $tx_count attr-dict `:` type($addr) (`->` type($state)^)?"

    def __init__(self, addr: SSAValue, tx_count: SSAValue, *, sink: bool = False):
        super().__init__(operands=[addr, tx_count], result_types=[[] if sink else [i64]])

    def verify_(self) -> None:
        expect_ptr("addr", self.addr, (StateSpace.SHARED_CTA, StateSpace.SHARED_CLUSTER))
        check_mbarrier_address("addr", self.addr)
        if _space(self.addr) == StateSpace.SHARED_CLUSTER and self.state is not None:
            raise VerifyException(
                "'state' must be the sink '_' (no result) with '.shared::cluster', got a result"
            )

    def ptx_mnemonic(self) -> str:
        return mnemonic("mbarrier.arrive.expect_tx", _space(self.addr), "b64")

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [_sink_or(reg, self.state), addr(reg(self.addr)), reg(self.tx_count)]


@op_definition
class MbarrierTryWaitParityOp(PtxInstruction):
    """Test (waiting a bounded, implementation-defined time) whether the mbarrier phase of
    parity ``parity`` has completed; the result is true when it has.

    PTX: ``mbarrier.try_wait.parity.shared::cta.b64 p, [addr], parity;``

    Example: ``%done = ptx.mbarrier.try_wait.parity %mbar, %parity : !ptx.ptr<shared::cta>``.
    Needs sm_90 and PTX ISA 7.8. Spec: PTX ISA, mbarrier.test_wait / mbarrier.try_wait.
    """

    name = "ptx.mbarrier.try_wait.parity"
    SPEC_SECTION: ClassVar = "mbarrier.test_wait / mbarrier.try_wait"
    REQUIREMENT: ClassVar = Requirement(sm=90, ptx=(7, 8))

    addr = operand_def(Attribute)
    parity = operand_def(i32)
    done = result_def(i1)

    assembly_format = "$addr `,` $parity attr-dict `:` type($addr)"

    def __init__(self, addr: SSAValue, parity: SSAValue):
        super().__init__(operands=[addr, parity], result_types=[i1])

    def verify_(self) -> None:
        expect_ptr("addr", self.addr, StateSpace.SHARED_CTA)
        check_mbarrier_address("addr", self.addr)

    def ptx_mnemonic(self) -> str:
        return mnemonic("mbarrier.try_wait.parity", _space(self.addr), "b64")

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.done), addr(reg(self.addr)), reg(self.parity)]


@op_definition
class MbarrierInvalOp(PtxInstruction):
    """Invalidate the mbarrier object at ``[addr]``, so that its memory can be reused or
    initialized again (``mbarrier.init`` on a valid mbarrier object is undefined).

    PTX: ``mbarrier.inval.shared::cta.b64 [addr];``

    Example: ``ptx.mbarrier.inval %mbar : !ptx.ptr<shared::cta>``.
    Needs sm_80 and PTX ISA 7.8 (for ``.shared::cta``). Spec: PTX ISA, mbarrier.inval.
    """

    name = "ptx.mbarrier.inval"
    SPEC_SECTION: ClassVar = "mbarrier.inval"
    REQUIREMENT: ClassVar = Requirement(sm=80, ptx=(7, 8))

    addr = operand_def(Attribute)

    assembly_format = "$addr attr-dict `:` type($addr)"

    def __init__(self, addr: SSAValue):
        super().__init__(operands=[addr])

    def verify_(self) -> None:
        expect_ptr("addr", self.addr, StateSpace.SHARED_CTA)
        check_mbarrier_address("addr", self.addr)

    def ptx_mnemonic(self) -> str:
        return mnemonic("mbarrier.inval", _space(self.addr), "b64")

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [addr(reg(self.addr))]


# endregion

# region Fences


@op_definition
class FenceMbarrierInitOp(PtxInstruction):
    """Make prior ``mbarrier.init`` operations visible to the cluster (release, cluster scope).

    PTX: ``fence.mbarrier_init.release.cluster;``

    Example: ``ptx.fence.mbarrier_init.release.cluster``.
    Needs sm_90 and PTX ISA 8.0. Spec: PTX ISA, membar / fence.
    """

    name = "ptx.fence.mbarrier_init.release.cluster"
    SPEC_SECTION: ClassVar = "membar / fence"
    REQUIREMENT: ClassVar = Requirement(sm=90, ptx=(8, 0))

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()

    def ptx_mnemonic(self) -> str:
        return "fence.mbarrier_init.release.cluster"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return []


# The state spaces fence.proxy.async may name
# (.proxykind async.global, async.shared::cta, async.shared::cluster).
FENCE_PROXY_ASYNC_SPACES = (StateSpace.SHARED_CTA, StateSpace.SHARED_CLUSTER, StateSpace.GLOBAL)


@op_definition
class FenceProxyAsyncOp(PtxInstruction):
    """Order the generic proxy's memory accesses before the async proxy's (bulk copies,
    TMA), in one state space or, without ``space``, in all of them.

    PTX: ``fence.proxy.async{.shared::cta, .shared::cluster, .global};``

    Example: ``ptx.fence.proxy.async space "shared::cta"``, ``ptx.fence.proxy.async``.
    Needs sm_90 and PTX ISA 8.0. Spec: PTX ISA, membar / fence.
    """

    name = "ptx.fence.proxy.async"
    SPEC_SECTION: ClassVar = "membar / fence"
    REQUIREMENT: ClassVar = Requirement(sm=90, ptx=(8, 0))

    space = opt_prop_def(StateSpaceAttr)

    assembly_format = "(`space` $space^)? attr-dict"

    def __init__(self, space: StateSpace | None = None):
        props: dict[str, Attribute] = {}
        if space is not None:
            props["space"] = StateSpaceAttr(space)
        super().__init__(properties=props)

    def verify_(self) -> None:
        if self.space is not None and self.space.data not in FENCE_PROXY_ASYNC_SPACES:
            raise qualifier_error(
                ".space", self.space.data, FENCE_PROXY_ASYNC_SPACES, "for 'fence.proxy.async'"
            )

    def ptx_mnemonic(self) -> str:
        return mnemonic("fence.proxy.async", self.space.data if self.space is not None else None)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return []


# endregion

# region Bulk async-groups


@op_definition
class CpAsyncBulkCommitGroupOp(PtxInstruction):
    """Close the executing thread's pending bulk async operations into one bulk async-group.

    PTX: ``cp.async.bulk.commit_group;``

    Example: ``ptx.cp.async.bulk.commit_group``.
    Needs sm_90 and PTX ISA 8.0. Spec: PTX ISA, cp.async.bulk.commit_group.
    """

    name = "ptx.cp.async.bulk.commit_group"
    SPEC_SECTION: ClassVar = "cp.async.bulk.commit_group"
    REQUIREMENT: ClassVar = Requirement(sm=90, ptx=(8, 0))

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()

    def ptx_mnemonic(self) -> str:
        return "cp.async.bulk.commit_group"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return []


@op_definition
class CpAsyncBulkWaitGroupOp(PtxInstruction):
    """Wait until at most ``n`` of the executing thread's most recent bulk async-groups are
    pending; with ``read``, only until their source reads are done.

    PTX: ``cp.async.bulk.wait_group{.read} N;`` (``N`` an integer constant).

    Example: ``ptx.cp.async.bulk.wait_group read 0``.
    ``n`` must not be negative (ptxas accepts ``-1``, which means nothing).
    Needs sm_90 and PTX ISA 8.0. Spec: PTX ISA, cp.async.bulk.wait_group.
    """

    name = "ptx.cp.async.bulk.wait_group"
    SPEC_SECTION: ClassVar = "cp.async.bulk.wait_group"
    REQUIREMENT: ClassVar = Requirement(sm=90, ptx=(8, 0))

    read = opt_prop_def(UnitAttr)
    n = prop_def(IntegerAttr[I32])

    assembly_format = "(`read` $read^)? $n attr-dict"

    def __init__(self, n: int, *, read: bool = False):
        props: dict[str, Attribute] = {"n": integer_attr(n, i32)}
        if read:
            props["read"] = UnitAttr()
        super().__init__(properties=props)

    def verify_(self) -> None:
        if self.n.value.data < 0:
            raise VerifyException(f"'N' must not be negative, got {self.n.value.data}")

    def ptx_mnemonic(self) -> str:
        return mnemonic("cp.async.bulk.wait_group", "read" if self.read is not None else None)

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [str(self.n.value.data)]


# endregion

# region Barriers


class ClusterArriveSem(StrEnum):
    """``.sem`` of barrier.cluster.arrive."""

    RELEASE = "release"
    RELAXED = "relaxed"


@irdl_attr_definition
class ClusterArriveSemAttr(EnumAttribute[ClusterArriveSem], SpacedOpaqueSyntaxAttribute):
    name = "ptx.cluster_arrive_sem"


# '.sem' and the explicit '.acquire' need PTX ISA 8.0; the bare forms 7.8 (ptxas).
_CLUSTER_BARRIER = Requirement(sm=90, ptx=(7, 8))
_CLUSTER_BARRIER_SEM = Requirement(sm=90, ptx=(8, 0))


@op_definition
class BarrierClusterArriveOp(PtxInstruction):
    """Mark the executing thread's arrival at the cluster barrier (non-blocking).

    PTX: ``barrier.cluster.arrive{.release, .relaxed}{.aligned};`` (the default sem is release)

    Example: ``ptx.barrier.cluster.arrive sem release aligned``, ``ptx.barrier.cluster.arrive``.
    Needs sm_90 and PTX ISA 7.8; an explicit ``.sem`` PTX ISA 8.0.
    Spec: PTX ISA, barrier.cluster.
    """

    name = "ptx.barrier.cluster.arrive"
    SPEC_SECTION: ClassVar = "barrier.cluster"
    REQUIREMENT: ClassVar = _CLUSTER_BARRIER

    sem = opt_prop_def(ClusterArriveSemAttr)
    aligned = opt_prop_def(UnitAttr)

    assembly_format = "(`sem` $sem^)? (`aligned` $aligned^)? attr-dict"

    def __init__(self, sem: ClusterArriveSem | None = None, *, aligned: bool = False):
        props: dict[str, Attribute] = {}
        if sem is not None:
            props["sem"] = ClusterArriveSemAttr(sem)
        if aligned:
            props["aligned"] = UnitAttr()
        super().__init__(properties=props)

    def requirement(self) -> Requirement:
        return _CLUSTER_BARRIER_SEM if self.sem is not None else _CLUSTER_BARRIER

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            "barrier.cluster.arrive",
            self.sem.data if self.sem is not None else None,
            "aligned" if self.aligned is not None else None,
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return []


@op_definition
class BarrierClusterWaitOp(PtxInstruction):
    """Wait until every non-exited thread of the cluster has arrived at the cluster barrier.

    PTX: ``barrier.cluster.wait{.acquire}{.aligned};`` (the default sem is acquire)

    Example: ``ptx.barrier.cluster.wait acquire aligned``.
    Needs sm_90 and PTX ISA 7.8; an explicit ``.acquire`` PTX ISA 8.0.
    Spec: PTX ISA, barrier.cluster.
    """

    name = "ptx.barrier.cluster.wait"
    SPEC_SECTION: ClassVar = "barrier.cluster"
    REQUIREMENT: ClassVar = _CLUSTER_BARRIER

    acquire = opt_prop_def(UnitAttr)
    aligned = opt_prop_def(UnitAttr)

    assembly_format = "(`acquire` $acquire^)? (`aligned` $aligned^)? attr-dict"

    def __init__(self, *, acquire: bool = False, aligned: bool = False):
        props: dict[str, Attribute] = {}
        if acquire:
            props["acquire"] = UnitAttr()
        if aligned:
            props["aligned"] = UnitAttr()
        super().__init__(properties=props)

    def requirement(self) -> Requirement:
        return _CLUSTER_BARRIER_SEM if self.acquire is not None else _CLUSTER_BARRIER

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            "barrier.cluster.wait",
            "acquire" if self.acquire is not None else None,
            "aligned" if self.aligned is not None else None,
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return []


BAR_SYNC_MAX_ID = 15


@op_definition
class BarSyncOp(PtxInstruction):
    """Wait until all threads of the CTA have reached named barrier ``id`` (``__syncthreads``).

    PTX: ``bar.sync id;`` (``id`` in 0..15)

    Example: ``ptx.bar.sync 0``. Spec: PTX ISA, bar / barrier.
    """

    name = "ptx.bar.sync"
    SPEC_SECTION: ClassVar = "bar / barrier"
    REQUIREMENT: ClassVar = _ANY_TARGET

    id = prop_def(IntegerAttr[I32])

    assembly_format = "$id attr-dict"

    def __init__(self, id: int = 0):
        super().__init__(properties={"id": integer_attr(id, i32)})

    def verify_(self) -> None:
        v = self.id.value.data
        if not 0 <= v <= BAR_SYNC_MAX_ID:
            raise VerifyException(f"'id' must be in 0..{BAR_SYNC_MAX_ID}, got {v}")

    def ptx_mnemonic(self) -> str:
        return "bar.sync"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [str(self.id.value.data)]


# endregion

# region mapa


@op_definition
class MapaOp(PtxInstruction, AddressOf):
    """Map the executing CTA's shared-memory address ``a`` to the corresponding address in
    the shared memory of the cluster's CTA ``rank``.

    PTX: ``mapa.shared::cluster.u32 d, a, rank;``

    Example: ``%remote = ptx.mapa %local, %rank : !ptx.ptr<shared::cta>`` (the result is
    ``!ptx.ptr<shared::cluster>``).
    Needs sm_90 and PTX ISA 7.8. Spec: PTX ISA, mapa.
    """

    name = "ptx.mapa"
    SPEC_SECTION: ClassVar = "mapa"
    REQUIREMENT: ClassVar = Requirement(sm=90, ptx=(7, 8))

    a = operand_def(Attribute)
    rank = operand_def(i32)
    d = result_def(PtrType(StateSpace.SHARED_CLUSTER))

    assembly_format = "$a `,` $rank attr-dict `:` type($a)"

    def __init__(self, a: SSAValue, rank: SSAValue):
        super().__init__(operands=[a, rank], result_types=[PtrType(StateSpace.SHARED_CLUSTER)])

    def verify_(self) -> None:
        expect_ptr("a", self.a, StateSpace.SHARED_CTA)

    def ptx_mnemonic(self) -> str:
        return "mapa.shared::cluster.u32"

    def address_source(self) -> tuple[SSAValue, int]:
        # the same offset in another CTA's copy of the array
        return self.a, 0

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.d), reg(self.a), reg(self.rank)]


# endregion


SYNC_OPS = [
    MbarrierInitOp,
    MbarrierArriveOp,
    MbarrierArriveExpectTxOp,
    MbarrierTryWaitParityOp,
    MbarrierInvalOp,
    FenceMbarrierInitOp,
    FenceProxyAsyncOp,
    CpAsyncBulkCommitGroupOp,
    CpAsyncBulkWaitGroupOp,
    BarrierClusterArriveOp,
    BarrierClusterWaitOp,
    BarSyncOp,
    MapaOp,
]
SYNC_ATTRS = [ClusterArriveSemAttr]
