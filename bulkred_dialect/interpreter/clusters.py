"""Running a kernel launched in clusters: every thread of every CTA of one cluster at once
(:func:`run_cluster_grid`), with distributed shared memory.

It extends :mod:`bulkred_dialect.interpreter.threads` (one CTA's threads as greenlets)
to the cluster: the cluster's CTAs run in one scheduler, each with its own shared memory
and its own ``bar.sync``; and it models what the cluster adds:

* ``barrier.cluster.arrive`` / ``barrier.cluster.wait``: the wait is a barrier of every
  thread of the cluster (the arrive records nothing: memory is sequentially consistent,
  and every lowering here arrives and then waits);
* ``mapa``: the address of the same shared buffer, at the same offset, in the CTA of the
  given rank (``ld``/``st`` through it read and write that CTA's buffer);
* ``%cluster_ctarank`` / ``%cluster_nctarank``.

Each cluster runs in lockstep first (:func:`~bulkred_dialect.interpreter.lockstep.run_cta_lockstep`
with ``cluster``: every thread of the cluster at once), thread by thread where it falls
back (the whole grid again, its buffers put back). The clusters run one after another (CTAs of different clusters cannot wait for each
other), the CTAs of a cluster being ``ctaid.x`` ``c * size ... c * size + size - 1`` (a
cluster of ``[size, 1, 1]``). The mbarriers, ``st.async`` into a peer's shared memory and
``cp.async.bulk.shared::cta.global`` of a push exchange (rows_cluster, rows_bulk) are
interpreter/mbarriers.py's, here over every CTA of the cluster. ``red.async`` and the other
bulk copies have no interpretation yet.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import ArrayAttr, MemRefType, ModuleOp
from xdsl.interpreter import Interpreter, PythonValues, impl, register_impls
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.errors import InterpretError
from bulkred_dialect.interpreter.kernel_ids import ThreadIds
from bulkred_dialect.interpreter.launch_dims import dynamic_launch
from bulkred_dialect.interpreter.memory import new_buffer
from bulkred_dialect.interpreter.ptx_memory import DEVICE_ADDRESSES, Pointer
from bulkred_dialect.interpreter.run import KernelInterpreter, RunMemo, find_kernel, make_interpreter, prepare_arguments
from bulkred_dialect.interpreter import threads as threads_module
from bulkred_dialect.interpreter.lockstep import run_cta_lockstep
from bulkred_dialect.interpreter.threads import (
    WARP,
    ThreadFunctions,
    _Cta,
    _CtaKernelIds,
    _Rendezvous,
    _Thread,
)
from bulkred_dialect.ops.kernel_attrs import GRID_ROWS_ATTR, whole_grid_cluster
from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.sreg import MovSregOp, SpecialRegister
from bulkred_dialect.ops.ptx.sync import BarrierClusterArriveOp, BarrierClusterWaitOp, BarSyncOp, MapaOp
from bulkred_dialect.ops.tile import MemoryScope, kernel_launch, scope_of


@register_impls
class ClusterThreadFunctions(ThreadFunctions):
    """:class:`ThreadFunctions` for the threads of a whole cluster (``cta`` is the
    cluster's scheduler: its barrier is the cluster's, its warps every CTA's)."""

    def __init__(self, cta: _Cta, block: tuple[int, int, int], grid: tuple[int, int, int], size: int):
        super().__init__(cta, block, grid)
        self.size = size
        self.per_cta = block[0] * block[1] * block[2]
        self.bars = [_Rendezvous(self.per_cta, "") for _ in range(size)]
        self.buffers: dict[tuple[int, Operation], Any] = {}
        self.owner: dict[int, Operation] = {}  # id of a shared buffer -> its alloca

    @property
    def rank(self) -> int:
        return self.ids.cluster_rank

    @property
    def linear(self) -> int:  # the thread's index in its CTA
        return self._thread.linear % self.per_cta

    def _warp_values(self, op: Operation, value: Any, mask: int) -> list[Any]:
        w = self._thread.linear // WARP  # the cluster scheduler's warps: CTA by CTA
        warp = self.cta.warps[w]
        full = (1 << warp.size) - 1
        if mask & full != full:
            raise InterpretationError(f"'{op.name}' membermask {mask:#010x}: the interpreter runs only whole warps")
        return self.cta.meet(warp, self.lane, value, f"'{op.name}' of warp {w % (self.per_cta // WARP)} of CTA rank {self.rank}")

    @impl(BarSyncOp)
    def run_bar_sync(self, interpreter: Interpreter, op: BarSyncOp, args: PythonValues) -> PythonValues:
        if op.id.value.data != 0:
            raise InterpretationError(f"'{op.name}' {op.id.value.data}: only barrier 0 is modelled")
        self.cta.meet(self.bars[self.rank], self.linear, None, f"'{op.name}' 0 of CTA rank {self.rank}")
        return ()

    @impl(BarrierClusterArriveOp)
    def run_cluster_arrive(self, interpreter: Interpreter, op: BarrierClusterArriveOp, args: PythonValues) -> PythonValues:
        return ()

    @impl(BarrierClusterWaitOp)
    def run_cluster_wait(self, interpreter: Interpreter, op: BarrierClusterWaitOp, args: PythonValues) -> PythonValues:
        self.cta.meet(self.cta.barrier, self._thread.linear, None, f"'{op.name}'")
        return ()

    @impl(memref.AllocaOp)
    def run_alloca(self, interpreter: Interpreter, op: memref.AllocaOp, args: PythonValues) -> PythonValues:
        t = op.memref.type
        if args:
            raise InterpretationError("memref.alloca with dynamic sizes is not supported by the interpreter")
        if scope_of(t) != MemoryScope.SHARED:
            return (new_buffer(t, interpreter.index_bitwidth),)
        key = (self.rank, op)
        if key not in self.buffers:
            buf = new_buffer(t, interpreter.index_bitwidth)
            self.buffers[key] = buf
            self.owner[id(buf)] = op
        return (self.buffers[key],)

    @impl(MapaOp)
    def run_mapa(self, interpreter: Interpreter, op: MapaOp, args: PythonValues) -> PythonValues:
        a, rank = args
        rank = int(rank)
        if not isinstance(a, Pointer) or id(a.buffer) not in self.owner:
            raise InterpretationError(f"'{op.name}': the address is not in a shared buffer of this cluster")
        if not 0 <= rank < self.size:
            raise InterpretationError(f"'{op.name}': rank {rank} is outside the cluster of {self.size} CTAs")
        alloca = self.owner[id(a.buffer)]
        peer = self.buffers.get((rank, alloca))
        if peer is None:
            raise InterpretationError(f"'{op.name}': CTA rank {rank} has not allocated that shared buffer yet")
        return (Pointer(peer, a.offset, StateSpace.SHARED_CLUSTER),)

    def _shared_buffer(self, p: Any) -> bool:
        """``p`` points into a shared buffer of a CTA of this cluster (an mbarrier's place)."""
        return id(p.buffer) in self.owner

    def _where(self) -> str:
        return f"CTA rank {self.rank}"

    @impl(MovSregOp)
    def run_mov_sreg(self, interpreter: Interpreter, op: MovSregOp, args: PythonValues) -> PythonValues:
        read = _CLUSTER_SREG.get(op.reg.data)
        if read is None:
            raise InterpretationError(f"'{op.name}' %{op.reg.data} is not modelled by the interpreter")
        return (read(self, self._thread),)


# What each special register of a cluster's thread reads (ClusterThreadFunctions, the
# thread): the lane and warp in its CTA, its CTA's rank, the cluster's size, the ids.
_CLUSTER_SREG: dict[SpecialRegister, Any] = {
    SpecialRegister.LANEID: lambda f, t: (t.linear % f.per_cta) % WARP,
    SpecialRegister.WARPID: lambda f, t: (t.linear % f.per_cta) // WARP,
    SpecialRegister.CLUSTER_CTARANK: lambda f, t: t.ids.cluster_rank,
    SpecialRegister.CLUSTER_NCTARANK: lambda f, t: f.size,
}
for _i, _axis in enumerate("xyz"):
    _CLUSTER_SREG[SpecialRegister(f"tid.{_axis}")] = lambda f, t, i=_i: t.ids.thread_id[i]
    _CLUSTER_SREG[SpecialRegister(f"ntid.{_axis}")] = lambda f, t, i=_i: f.block[i]
    _CLUSTER_SREG[SpecialRegister(f"ctaid.{_axis}")] = lambda f, t, i=_i: t.ids.block_id[i]
    _CLUSTER_SREG[SpecialRegister(f"nctaid.{_axis}")] = lambda f, t, i=_i: f.grid[i]


def run_cluster_grid(module: ModuleOp, name: str, *arrays: Any) -> tuple[Any, ...]:
    """Run every thread of ``func.func @name`` (level-2 IR) launched in clusters of
    ``[size, 1, 1]`` (its ``bulkred.launch``) and return the memref arguments after the
    run, as :func:`~bulkred_dialect.interpreter.threads.run_grid` does."""
    callee = find_kernel(module, name, "run_cluster_grid")
    launch = kernel_launch(callee)
    if launch is None:
        raise InterpretError(f"'{name}' has no bulkred.launch")
    size = launch.cluster_dims[0]
    if launch.cluster_dims[1:] != (1, 1) or launch.grid_dims[1:] != (1, 1) or launch.grid_dims[0] % size:
        raise InterpretError(f"'{name}': run_cluster_grid runs 1-D grids of 1-D clusters, got {launch}")
    arrays, rows_grid, added = dynamic_launch(callee, arrays, size)  # a dynamic M: its size parameter, its grid
    rule = callee.attributes.get(GRID_ROWS_ATTR)
    if size == 1 and rows_grid is not None and isinstance(rule, ArrayAttr):  # (the launch layer's: a small grid as one cluster)
        size = whole_grid_cluster([a.value.data for a in rule.data], rows_grid)  # type: ignore[attr-defined]
    grid3, block3 = ((rows_grid, 1, 1) if rows_grid is not None else launch.grid_dims), launch.block_dims
    args = prepare_arguments(callee, arrays, Interpreter(module).index_bitwidth)
    memo = RunMemo()  # the clusters' shared implementations and plans
    clusters = [_cluster_of(module, c, size, block3, grid3, memo) for c in range(grid3[0] // size)]
    if not (threads_module.LOCKSTEP and _run_in_lockstep(module, callee, args, clusters, memo)):
        for c in range(grid3[0] // size):
            cta, shared, threads = _cluster_of(module, c, size, block3, grid3, memo)  # fresh mbarriers and buffers

            def body(_: _Thread, shared=shared) -> None:
                interpreter = KernelInterpreter(module, shared.index_bitwidth, shared._impls)  # noqa: SLF001
                interpreter.call_op(callee, tuple(args))

            cta.run(threads, body)
    out = tuple(a for a, t in zip(args, callee.function_type.inputs.data) if isinstance(t, MemRefType))
    return out[:len(out) - added]


def _cluster_of(
    module: ModuleOp, c: int, size: int, block3: tuple[int, int, int], grid3: tuple[int, int, int],
    memo: RunMemo | None = None,
) -> tuple[_Cta, Interpreter, list[_Thread]]:
    """Cluster ``c``'s scheduler, the implementation table its threads share and its
    threads (CTA by CTA, each in linear order)."""
    per_cta = block3[0] * block3[1] * block3[2]
    cta = _Cta(per_cta * size)
    shared = make_interpreter(module, memo=memo)
    shared.register_implementations(_CtaKernelIds(cta), override=True)
    shared.register_implementations(ClusterThreadFunctions(cta, block3, grid3, size), override=True)
    threads = [
        _Thread(ThreadIds((x, y, z), (c * size + r, 0, 0), r), r * per_cta + (z * block3[1] + y) * block3[0] + x)
        for r in range(size)
        for z in range(block3[2])
        for y in range(block3[1])
        for x in range(block3[0])
    ]
    return cta, shared, threads


def _run_in_lockstep(module: ModuleOp, callee: Any, args: list[Any], clusters: list[Any], memo: RunMemo) -> bool:
    """Run the clusters in lockstep (every thread of a cluster at once, one cluster after
    another: :func:`~bulkred_dialect.interpreter.lockstep.run_cta_lockstep` with
    ``cluster``); where one falls back, put back the buffers the kernel can reach as they
    were and return False (the grid then runs thread by thread from its first cluster,
    as threads.py does for CTAs)."""
    buffers = [a for a in args if isinstance(a, np.ndarray)] + list(DEVICE_ADDRESSES.buffers)
    saved = [b.copy() for b in buffers]
    for cta, shared, threads in clusters:
        if not run_cta_lockstep(module, callee, args, cta, threads, shared._impls, shared.index_bitwidth, cluster=True,  # noqa: SLF001
                                forms=memo.forms):
            for b, s in zip(buffers, saved):
                b[...] = s
            return False
    return True
