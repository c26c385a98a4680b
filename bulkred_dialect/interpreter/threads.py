"""Running every thread of a kernel: the warp and CTA collectives of level-2 IR.

:func:`run_grid` runs the kernel's CTAs one after another (a schedule the GPU may also
pick: CTAs of a grid without clusters cannot wait for each other) and, inside a CTA,
every thread as a greenlet (a coroutine with a stack of its own: no OS thread) with its
own interpreter values (the ids of :mod:`bulkred_dialect.interpreter.kernel_ids`),
switched by the CTA's scheduler at each collective, and sharing:

* the kernel's buffers (global memory), and one buffer per ``memref.alloca`` of
  ``#bulkred.scope<shared>`` per CTA (shared memory);
* ``ptx.bar.sync``: a barrier of the CTA's threads;
* ``ptx.shfl.sync`` / ``ptx.redux.sync``: an exchange between the lanes of one warp.
  The ``membermask`` must name every thread of the warp (a partial mask raises an
  ``InterpretationError``: the tests' kernels use full warps).

``ptx.mov.sreg`` reads the thread's ids and the kernel's ``bulkred.launch``. ``atom``
and ``red`` are atomic (interpreter/ptx_memory.py). Memory is sequentially consistent,
so a fence orders nothing that is not already ordered. Clusters are not run here
(interpreter/clusters.py runs them); a CTA's mbarriers, ``st.async`` and
``cp.async.bulk.shared::cta.global`` are interpreter/mbarriers.py's.

A thread that raises stops the CTA: the error is re-raised with the thread's ids; a
barrier or exchange that not every thread reaches fails as soon as no thread can go on.
"""

from __future__ import annotations

import numbers
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import greenlet
import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.interpreter import Interpreter, PythonValues, impl, register_impls
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.errors import ArgumentError, InterpretError
from bulkred_dialect.interpreter.kernel_ids import KernelIdFunctions, ThreadIds
from bulkred_dialect.interpreter.launch_dims import dynamic_launch
from bulkred_dialect.interpreter.lockstep import run_cta_lockstep
from bulkred_dialect.interpreter.mbarriers import MbarrierFunctions
from bulkred_dialect.interpreter.memory import new_buffer
from bulkred_dialect.interpreter.ptx_memory import DEVICE_ADDRESSES
from bulkred_dialect.interpreter.run import KernelInterpreter, RunMemo, find_kernel, make_interpreter, prepare_arguments
from bulkred_dialect.interpreter.warps import FULL_MASK, WARP, redux_values, shfl_source_lane
from bulkred_dialect.ops.ptx.redux import ReduxSyncOp
from bulkred_dialect.ops.ptx.sreg import MovSregOp, SpecialRegister
from bulkred_dialect.ops.ptx.sync import BarSyncOp
from bulkred_dialect.ops.ptx.warp import ShflSyncOp
from bulkred_dialect.ops.tile import MemoryScope, kernel_launch, scope_of

class CollectiveError(InterpretationError):
    """A barrier or warp exchange that not every thread reached, or a collective the
    interpreter does not model."""


class _Rendezvous:
    """Where the threads of one group (a CTA's barrier, a warp's exchange) meet: each
    arriving thread deposits a value; the last one to arrive releases all of them, each
    with the list of every slot's value."""

    def __init__(self, size: int, what: str):
        self.size, self.what = size, what
        self.slots: list[Any] = [None] * size
        self.waiting: list[_Thread] = []


@dataclass(eq=False)
class _Thread:
    """One simulated thread: its ids, its linear index in the CTA and its greenlet."""

    ids: ThreadIds
    linear: int
    glet: greenlet.greenlet | None = None
    waits_at: _Rendezvous | None = None


@dataclass
class _Cta:
    """What the threads of one CTA share, and the scheduler that runs them.

    Each thread is a greenlet (a coroutine with its own stack, no OS thread): the
    scheduler switches into one thread, which interprets ops until it finishes or
    reaches a collective (``bar.sync``, ``shfl.sync``, ``redux.sync``); there it
    deposits its value and switches back. The last thread of the group to arrive makes
    every thread of the group ready again. Threads run in a fixed order (ready threads
    first in, first out, starting in linear thread order), so a run is repeatable, also
    where the order of atomics to one address decides the bits of a float result.
    Sequential consistency follows: one thread runs at a time."""

    nthreads: int
    barrier: _Rendezvous = field(init=False)
    warps: dict[int, _Rendezvous] = field(default_factory=dict)
    shared: dict[Operation, np.ndarray] = field(default_factory=dict)
    current: _Thread | None = None
    ready: deque[tuple[_Thread, Any]] = field(default_factory=deque)

    def __post_init__(self) -> None:
        self.barrier = _Rendezvous(self.nthreads, "")
        for w in range(0, self.nthreads, WARP):
            self.warps[w // WARP] = _Rendezvous(min(WARP, self.nthreads - w), "")

    def meet(self, group: _Rendezvous, slot: int, value: Any, what: str) -> list[Any]:
        """Deposit ``value`` in ``slot`` of ``group`` and wait for the group's other
        threads; return every slot's value."""
        me = self.current
        assert me is not None and me.glet is greenlet.getcurrent()
        group.slots[slot] = value
        group.what = what
        group.waiting.append(me)
        if len(group.waiting) == group.size:
            values = list(group.slots)
            for t in group.waiting:
                t.waits_at = None
                self.ready.append((t, values))
            group.waiting = []
        else:
            me.waits_at = group
        # back to the scheduler, until this thread is made ready with the values
        return me.glet.parent.switch()  # type: ignore[union-attr]

    def run(self, threads: list[_Thread], body: Callable[[_Thread], None]) -> None:
        """Run every thread to its end; raise the first error a thread raises, or a
        :class:`CollectiveError` when the threads left all wait at collectives that the
        others never reach."""
        for t in threads:
            t.glet = greenlet.greenlet(body)
            self.ready.append((t, t))
        try:
            while self.ready:
                t, value = self.ready.popleft()
                self.current = t
                t.glet.switch(value)  # type: ignore[union-attr]
            stuck = [t for t in threads if t.waits_at is not None]
            if stuck:
                t = stuck[0]
                g = t.waits_at
                assert g is not None
                raise InterpretationError(
                    f"thread {t.ids.thread_id} of CTA {t.ids.block_id}: {g.what}: not every thread arrived "
                    f"({len(g.waiting)} of {g.size} threads waited there; the others had finished or took another path)"
                )
        finally:
            self.current = None
            for t in threads:  # end the threads still suspended (an error, a deadlock)
                if t.glet is not None and not t.glet.dead:
                    t.glet.throw(greenlet.GreenletExit)


@register_impls
class ThreadFunctions(MbarrierFunctions):
    """The collectives and special registers of the CTA's running thread
    (``cta.current``): one instance serves every thread of a CTA."""

    def __init__(self, cta: _Cta, block: tuple[int, int, int], grid: tuple[int, int, int]):
        self.cta, self.block, self.grid = cta, block, grid

    @property
    def ids(self) -> ThreadIds:
        return self._thread.ids

    @property
    def linear(self) -> int:
        return self._thread.linear

    @property
    def _thread(self) -> _Thread:
        t = self.cta.current
        assert t is not None, "a thread's op interpreted outside the CTA's scheduler"
        return t

    @property
    def lane(self) -> int:
        return self.linear % WARP

    def _shared_buffer(self, p: Any) -> bool:
        """``p`` points into a shared buffer of this CTA (an mbarrier's place)."""
        return any(b is p.buffer for b in self.cta.shared.values())

    def _warp_values(self, op: Operation, value: Any, mask: int) -> list[Any]:
        w = self.linear // WARP
        warp = self.cta.warps[w]
        full = (1 << warp.size) - 1
        if mask & full != full:
            raise CollectiveError(
                f"'{op.name}' membermask {mask:#010x}: the interpreter runs only "
                f"whole warps (mask {full:#010x})"
            )
        return self.cta.meet(warp, self.lane, value, f"'{op.name}' of warp {w}")

    @impl(ShflSyncOp)
    def run_shfl(self, interpreter: Interpreter, op: ShflSyncOp, args: PythonValues) -> PythonValues:
        a, b, c, mask = args
        values = self._warp_values(op, a, int(mask) & FULL_MASK)
        j = shfl_source_lane(op.mode.data, self.lane, int(b), int(c))
        if j >= len(values):
            raise CollectiveError(f"'{op.name}' reads lane {j} of a warp of {len(values)} threads")
        return (values[j],)

    @impl(ReduxSyncOp)
    def run_redux(self, interpreter: Interpreter, op: ReduxSyncOp, args: PythonValues) -> PythonValues:
        src, mask = args
        return (redux_values(op, self._warp_values(op, src, int(mask) & FULL_MASK)),)

    @impl(BarSyncOp)
    def run_bar_sync(self, interpreter: Interpreter, op: BarSyncOp, args: PythonValues) -> PythonValues:
        if op.id.value.data != 0:
            raise CollectiveError(f"'{op.name}' {op.id.value.data}: only barrier 0 is modelled")
        self.cta.meet(self.cta.barrier, self.linear, None, f"'{op.name}' 0")
        return ()

    @impl(memref.AllocaOp)
    def run_alloca(self, interpreter: Interpreter, op: memref.AllocaOp, args: PythonValues) -> PythonValues:
        if args:
            raise InterpretationError("memref.alloca with dynamic sizes is not supported by the interpreter")
        t = op.memref.type
        if scope_of(t) != MemoryScope.SHARED:
            return (new_buffer(t, interpreter.index_bitwidth),)
        if op not in self.cta.shared:
            self.cta.shared[op] = new_buffer(t, interpreter.index_bitwidth)
        return (self.cta.shared[op],)

    @impl(MovSregOp)
    def run_mov_sreg(self, interpreter: Interpreter, op: MovSregOp, args: PythonValues) -> PythonValues:
        read = _SREG.get(op.reg.data)
        if read is None:
            raise InterpretationError(f"'{op.name}' %{op.reg.data} is not modelled by the interpreter")
        return (read(self, self._thread),)


# What each special register of a CTA's thread reads (ThreadFunctions, the thread).
_SREG: dict[SpecialRegister, Callable[[ThreadFunctions, _Thread], int]] = {
    SpecialRegister.LANEID: lambda f, t: t.linear % WARP,
    SpecialRegister.WARPID: lambda f, t: t.linear // WARP,
    SpecialRegister.CLUSTER_CTARANK: lambda f, t: t.ids.cluster_rank,
    SpecialRegister.CLUSTER_NCTARANK: lambda f, t: 1,
}
for _i, _axis in enumerate("xyz"):
    _SREG[SpecialRegister(f"tid.{_axis}")] = lambda f, t, i=_i: t.ids.thread_id[i]
    _SREG[SpecialRegister(f"ntid.{_axis}")] = lambda f, t, i=_i: f.block[i]
    _SREG[SpecialRegister(f"ctaid.{_axis}")] = lambda f, t, i=_i: t.ids.block_id[i]
    _SREG[SpecialRegister(f"nctaid.{_axis}")] = lambda f, t, i=_i: f.grid[i]


class _CtaKernelIds(KernelIdFunctions):
    """The kernel index ops of the CTA's running thread."""

    def __init__(self, cta: _Cta):  # no super().__init__: ids is the running thread's
        self.cta = cta

    @property
    def ids(self) -> ThreadIds:  # type: ignore[override]
        t = self.cta.current
        assert t is not None, "a thread's op interpreted outside the CTA's scheduler"
        return t.ids


def _dims(v: int | tuple[int, ...] | None, default: tuple[int, int, int], field: str) -> tuple[int, int, int]:
    if v is None:
        return default
    t = (v,) if isinstance(v, numbers.Integral) else v
    if (
        not isinstance(t, tuple | list)
        or not 1 <= len(t) <= 3
        or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1 for d in t)
    ):
        raise ArgumentError(f"'{field}' of run_grid must be 1 to 3 integers >= 1 (or None), got {v!r:.40}")
    t = tuple(int(d) for d in t) + (1,) * (3 - len(t))
    return (t[0], t[1], t[2])


def run_grid(
    module: ModuleOp,
    name: str,
    *arrays: Any,
    grid: int | tuple[int, ...] | None = None,
    block: int | tuple[int, ...] | None = None,
) -> tuple[np.ndarray, ...]:
    """Run every thread of ``func.func @name`` (level-2 IR) on the buffers ``arrays``
    and return the memref arguments after the run, as :func:`run_kernel` does.

    ``grid`` and ``block`` default to the kernel's ``bulkred.launch``. A kernel with
    clusters of more than one CTA raises an :class:`~bulkred_dialect.errors.InterpretError`
    (a ``ValueError``); the other errors are :func:`run_kernel`'s.
    """
    callee = find_kernel(module, name, "run_grid")
    launch = kernel_launch(callee)
    if launch is not None and launch.cluster_dims != (1, 1, 1):
        raise InterpretError(f"'{name}' runs in clusters of {launch.cluster_dims}: the interpreter runs no clusters")
    arrays, rows_grid, added = dynamic_launch(callee, arrays)  # a dynamic M: its size parameter, its grid
    grid3 = _dims(grid if grid is not None else rows_grid, launch.grid_dims if launch is not None else (1, 1, 1), "grid")
    block3 = _dims(block, launch.block_dims if launch is not None else (1, 1, 1), "block")
    args = prepare_arguments(callee, arrays, Interpreter(module).index_bitwidth)
    ctas = [(bx, by, bz) for bz in range(grid3[2]) for by in range(grid3[1]) for bx in range(grid3[0])]
    memo = RunMemo()  # the CTAs' shared implementations and plans
    if not (LOCKSTEP and _run_in_lockstep(module, callee, args, ctas, block3, grid3, memo)):
        for block_id in ctas:
            _run_cta(module, callee, args, block_id, block3, grid3, memo)
    out = tuple(a for a, t in zip(args, callee.function_type.inputs.data) if isinstance(t, MemRefType))
    return out[:len(out) - added]


# The grid runs in lockstep first (interpreter/lockstep.py), thread by thread where a CTA
# falls back; False: always thread by thread (the tests compare the two).
LOCKSTEP = True


def _run_in_lockstep(
    module: ModuleOp,
    callee: func.FuncOp,
    args: list[Any],
    ctas: list[tuple[int, int, int]],
    block3: tuple[int, int, int],
    grid3: tuple[int, int, int],
    memo: RunMemo,
) -> bool:
    """Run the CTAs ``ctas`` in lockstep, one after another; where one falls back, put
    every buffer the kernel can reach (its arguments, the registered device addresses)
    back as it was before the first CTA and return False: the grid is then run thread
    by thread from its first CTA (the same results, the same error at the same CTA)."""
    buffers = [a for a in args if isinstance(a, np.ndarray)] + list(DEVICE_ADDRESSES.buffers)
    saved = [b.copy() for b in buffers]
    for block_id in ctas:
        cta, shared, threads = _cta_of(module, block_id, block3, grid3, memo)
        if not run_cta_lockstep(module, callee, args, cta, threads, shared._impls, shared.index_bitwidth, forms=memo.forms):  # noqa: SLF001
            for b, s in zip(buffers, saved):
                b[...] = s
            return False
    return True


def _cta_of(
    module: ModuleOp,
    block_id: tuple[int, int, int],
    block3: tuple[int, int, int],
    grid3: tuple[int, int, int],
    memo: RunMemo | None = None,
) -> tuple[_Cta, Interpreter, list[_Thread]]:
    """A CTA's scheduler, the implementation table its threads share (over the run's
    ``memo``) and its threads."""
    cta = _Cta(block3[0] * block3[1] * block3[2])
    # One interpreter's implementations serve the CTA's threads: the thread-dependent
    # ones (ids, collectives, special registers) read the running thread, cta.current.
    # Each thread gets its own Interpreter (its own values) over that one table.
    shared = make_interpreter(module, memo=memo)
    shared.register_implementations(_CtaKernelIds(cta), override=True)
    shared.register_implementations(ThreadFunctions(cta, block3, grid3), override=True)
    threads = [
        _Thread(ThreadIds((x, y, z), block_id, 0), (z * block3[1] + y) * block3[0] + x)
        for z in range(block3[2])
        for y in range(block3[1])
        for x in range(block3[0])
    ]
    return cta, shared, threads


def _run_cta(
    module: ModuleOp,
    callee: func.FuncOp,
    args: list[Any],
    block_id: tuple[int, int, int],
    block3: tuple[int, int, int],
    grid3: tuple[int, int, int],
    memo: RunMemo | None = None,
) -> None:
    """Run one CTA thread by thread."""
    cta, shared, threads = _cta_of(module, block_id, block3, grid3, memo)

    def body(_: _Thread) -> None:
        interpreter = KernelInterpreter(module, shared.index_bitwidth, shared._impls)  # noqa: SLF001
        interpreter.call_op(callee, tuple(args))

    try:
        cta.run(threads, body)
    except CollectiveError:
        raise
    except InterpretationError as e:
        if str(e).startswith("thread ("):
            raise
        t = cta.current
        raise InterpretationError(f"thread {t.ids.thread_id} of CTA {block_id}: {e}") from e
