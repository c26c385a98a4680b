"""Running every thread of a kernel: the warp and CTA collectives of level-2 IR.

:func:`run_grid` runs the kernel's CTAs one after another (a schedule the GPU may also
pick: CTAs of a grid without clusters cannot wait for each other) and, inside a CTA,
every thread as a Python thread with its own interpreter (the ids of
:mod:`bulkred_dialect.interpreter.kernel_ids`), sharing:

* the kernel's buffers (global memory), and one buffer per ``memref.alloca`` of
  ``#bulkred.scope<shared>`` per CTA (shared memory);
* ``ptx.bar.sync``: a barrier of the CTA's threads;
* ``ptx.shfl.sync`` / ``ptx.redux.sync``: an exchange between the lanes of one warp.
  The ``membermask`` must name every thread of the warp (a partial mask raises an
  ``InterpretationError``: the tests' kernels use full warps).

``ptx.mov.sreg`` reads the thread's ids and the kernel's ``bulkred.launch``. ``atom``
and ``red`` are atomic (interpreter/ptx_memory.py). Memory is sequentially consistent,
so a fence orders nothing that is not already ordered. Clusters are not run (``mapa``,
``mbarrier`` and the bulk copies have no interpretation).

A thread that raises stops the CTA: the error is re-raised with the thread's ids; a
barrier or exchange that not every thread reaches fails after ``timeout_s`` seconds.
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.errors import ArgumentError, InterpretError
from bulkred_dialect.interpreter.kernel_ids import ThreadIds
from bulkred_dialect.interpreter.memory import new_buffer
from bulkred_dialect.interpreter.run import find_kernel, make_interpreter, prepare_arguments
from bulkred_dialect.interpreter.values import (
    float_bits,
    float_from_bits,
    float_minmax,
    int_binary,
)
from bulkred_dialect.ops.ptx.arith import ArithType
from bulkred_dialect.ops.ptx.redux import ReduxSyncOp, ReduxType
from bulkred_dialect.ops.ptx.sreg import MovSregOp, SpecialRegister
from bulkred_dialect.ops.ptx.sync import BarSyncOp
from bulkred_dialect.ops.ptx.warp import ShflMode, ShflSyncOp
from bulkred_dialect.ops.tile import MemoryScope, kernel_launch, scope_of

WARP = 32
FULL_MASK = 0xFFFFFFFF


class CollectiveError(InterpretationError):
    """A barrier or warp exchange that not every thread reached, or a collective the
    interpreter does not model."""


@dataclass
class _Cta:
    """What the threads of one CTA share."""

    nthreads: int
    timeout_s: float
    barrier: threading.Barrier = field(init=False)
    warps: dict[int, _WarpExchange] = field(default_factory=dict)
    shared: dict[Operation, np.ndarray] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.barrier = threading.Barrier(self.nthreads)
        for w in range(0, self.nthreads, WARP):
            self.warps[w // WARP] = _WarpExchange(min(WARP, self.nthreads - w))

    def abort(self) -> None:
        self.barrier.abort()
        for w in self.warps.values():
            w.barrier.abort()


class _WarpExchange:
    """Every lane of a warp deposits a value and gets all of them."""

    def __init__(self, lanes: int):
        self.lanes = lanes
        self.slots: list[Any] = [None] * lanes
        self.barrier = threading.Barrier(lanes)

    def exchange(self, lane: int, value: Any, timeout_s: float, what: str) -> list[Any]:
        self.slots[lane] = value
        _wait(self.barrier, timeout_s, what)
        values = list(self.slots)
        _wait(self.barrier, timeout_s, what)  # nobody overwrites a slot before all have read
        return values


def _wait(barrier: threading.Barrier, timeout_s: float, what: str) -> None:
    try:
        barrier.wait(timeout_s)
    except threading.BrokenBarrierError:
        raise CollectiveError(
            f"{what}: not every thread arrived (another thread failed, or took another path)"
        ) from None


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


def _redux(op: ReduxSyncOp, values: list[Any]) -> Any:
    t, kind = op.type.data, str(op.op.data)
    if t == ReduxType.F32:
        if op.abs is not None:
            values = [float_from_bits(ArithType.F32, float_bits(ArithType.F32, v) & 0x7FFFFFFF) for v in values]
        return float_minmax(kind, ArithType.F32, tuple(values), nan=op.nan is not None)
    acc = values[0]
    for v in values[1:]:
        acc = int_binary(kind, ArithType(str(t)), acc, v)
    return acc


@register_impls
class ThreadFunctions(InterpreterFunctions):
    """The collectives and special registers of one thread of a CTA."""

    def __init__(self, cta: _Cta, ids: ThreadIds, block: tuple[int, int, int], grid: tuple[int, int, int]):
        self.cta, self.ids, self.block, self.grid = cta, ids, block, grid
        x, y, z = ids.thread_id
        self.linear = (z * block[1] + y) * block[0] + x

    @property
    def lane(self) -> int:
        return self.linear % WARP

    def _warp_values(self, op: Operation, value: Any, mask: int) -> list[Any]:
        warp = self.cta.warps[self.linear // WARP]
        full = (1 << warp.lanes) - 1
        if mask & full != full:
            raise CollectiveError(
                f"'{op.name}' membermask {mask:#010x}: the interpreter runs only "
                f"whole warps (mask {full:#010x})"
            )
        return warp.exchange(self.lane, value, self.cta.timeout_s, f"'{op.name}' of warp {self.linear // WARP}")

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
        return (_redux(op, self._warp_values(op, src, int(mask) & FULL_MASK)),)

    @impl(BarSyncOp)
    def run_bar_sync(self, interpreter: Interpreter, op: BarSyncOp, args: PythonValues) -> PythonValues:
        if op.id.value.data != 0:
            raise CollectiveError(f"'{op.name}' {op.id.value.data}: only barrier 0 is modelled")
        _wait(self.cta.barrier, self.cta.timeout_s, f"'{op.name}' 0")
        return ()

    @impl(memref.AllocaOp)
    def run_alloca(self, interpreter: Interpreter, op: memref.AllocaOp, args: PythonValues) -> PythonValues:
        if args:
            raise InterpretationError("memref.alloca with dynamic sizes is not supported by the interpreter")
        t = op.memref.type
        if scope_of(t) != MemoryScope.SHARED:
            return (new_buffer(t, interpreter.index_bitwidth),)
        with self.cta.lock:
            if op not in self.cta.shared:
                self.cta.shared[op] = new_buffer(t, interpreter.index_bitwidth)
            return (self.cta.shared[op],)

    @impl(MovSregOp)
    def run_mov_sreg(self, interpreter: Interpreter, op: MovSregOp, args: PythonValues) -> PythonValues:
        r = op.reg.data
        ids = self.ids
        table: dict[SpecialRegister, Callable[[], int]] = {
            SpecialRegister.LANEID: lambda: self.lane,
            SpecialRegister.WARPID: lambda: self.linear // WARP,
            SpecialRegister.CLUSTER_CTARANK: lambda: ids.cluster_rank,
            SpecialRegister.CLUSTER_NCTARANK: lambda: 1,
        }
        for i, axis in enumerate("xyz"):
            table[SpecialRegister(f"tid.{axis}")] = lambda i=i: ids.thread_id[i]
            table[SpecialRegister(f"ntid.{axis}")] = lambda i=i: self.block[i]
            table[SpecialRegister(f"ctaid.{axis}")] = lambda i=i: ids.block_id[i]
            table[SpecialRegister(f"nctaid.{axis}")] = lambda i=i: self.grid[i]
        if r not in table:
            raise InterpretationError(f"'{op.name}' %{r} is not modelled by the interpreter")
        return (table[r](),)


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
    timeout_s: float = 60.0,
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
    grid3 = _dims(grid, launch.grid_dims if launch is not None else (1, 1, 1), "grid")
    block3 = _dims(block, launch.block_dims if launch is not None else (1, 1, 1), "block")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real) or not 0 < timeout_s < math.inf:
        raise ArgumentError(f"'timeout_s' of run_grid must be a number of seconds > 0, got {timeout_s!r:.40}")
    index_bitwidth = Interpreter(module).index_bitwidth
    args = prepare_arguments(callee, arrays, index_bitwidth)
    for bz in range(grid3[2]):
        for by in range(grid3[1]):
            for bx in range(grid3[0]):
                _run_cta(module, callee, args, (bx, by, bz), block3, grid3, timeout_s)
    return tuple(a for a, t in zip(args, callee.function_type.inputs.data) if isinstance(t, MemRefType))


def _run_cta(
    module: ModuleOp,
    callee: func.FuncOp,
    args: list[Any],
    block_id: tuple[int, int, int],
    block3: tuple[int, int, int],
    grid3: tuple[int, int, int],
    timeout_s: float,
) -> None:
    cta = _Cta(block3[0] * block3[1] * block3[2], timeout_s)
    errors: list[tuple[tuple[int, int, int], BaseException]] = []

    def body(tid: tuple[int, int, int]) -> None:
        ids = ThreadIds(tid, block_id, 0)
        try:
            interpreter = make_interpreter(module, ids)
            interpreter.register_implementations(ThreadFunctions(cta, ids, block3, grid3), override=True)
            interpreter.call_op(callee, tuple(args))
        except BaseException as e:  # noqa: BLE001 - re-raised below, with the thread's ids
            errors.append((tid, e))
            cta.abort()

    threads = [
        threading.Thread(target=body, args=((x, y, z),), daemon=True)
        for z in range(block3[2])
        for y in range(block3[1])
        for x in range(block3[0])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        # the first failure that is not just another thread seeing the barrier broken
        first = next((e for e in errors if not isinstance(e[1], CollectiveError)), errors[0])
        tid, e = first
        raise InterpretationError(f"thread {tid} of CTA {block_id}: {e}") from e
