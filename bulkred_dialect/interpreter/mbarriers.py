"""mbarriers and what completes on them, for the thread-by-thread interpreter
(:class:`~bulkred_dialect.interpreter.threads.ThreadFunctions` of a CTA and
:class:`~bulkred_dialect.interpreter.clusters.ClusterThreadFunctions` of a cluster inherit
:class:`MbarrierFunctions`):

* ``mbarrier.init`` (its expected count), ``mbarrier.arrive.expect_tx`` (the bytes, then an
  arrival), a phase completing when no arrival and no byte of it is pending (the counts
  reset, the phase advanced, its waiting threads made ready);
* ``st.async`` (the store, then a complete-tx of its bytes on the receiving CTA's
  mbarrier) and ``cp.async.bulk.shared::cta.global`` (the copy, then a complete-tx of its
  bytes);
* ``mbarrier.try_wait.parity`` suspending the thread until the phase of that parity has
  completed, then true;
* ``fence.mbarrier_init`` and ``fence.proxy.async`` order nothing more: one thread runs at
  a time, memory is sequentially consistent.

A thread that waits on a phase no one completes ends the run with the interpreter's "not
every thread arrived" error, naming the mbarrier's CTA and phase.
"""

from __future__ import annotations

from typing import Any

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.interpreter.ptx_memory import Pointer, from_register
from bulkred_dialect.ops.ptx.bulk import CpAsyncBulkSharedCtaGlobalOp
from bulkred_dialect.ops.ptx.st_async import StAsyncOp
from bulkred_dialect.ops.ptx.sync import (
    FenceMbarrierInitOp,
    FenceProxyAsyncOp,
    MbarrierArriveExpectTxOp,
    MbarrierInitOp,
    MbarrierTryWaitParityOp,
)


class _Mbarrier:
    """An mbarrier object's state: its expected count, the arrivals and bytes pending in
    the current phase, the phase, and the threads waiting for it to complete."""

    def __init__(self, count: int):
        self.count = self.pending = count
        self.tx = 0
        self.phase = 0
        self.waiters: list[Any] = []


class _Waiting:
    """Where a suspended thread waits (the scheduler's deadlock report reads ``what``,
    ``waiting`` and ``size``, as of a barrier)."""

    def __init__(self, thread: Any, what: str):
        self.what, self.waiting, self.size = what, [thread], 1


@register_impls
class MbarrierFunctions(InterpreterFunctions):
    """The mbarrier ops for a scheduler ``self.cta`` (its running thread ``current``, its
    ``ready`` queue); the subclass says which addresses are shared memory of its CTA or
    cluster (:meth:`_shared_buffer`) and names the running CTA (:meth:`_where`)."""

    def _shared_buffer(self, p: Pointer) -> bool:
        raise NotImplementedError

    def _where(self) -> str:
        return "the CTA"

    @property
    def _mbarriers(self) -> dict[tuple[int, int], _Mbarrier]:
        table = self.__dict__.get("_mbarrier_table")
        if table is None:
            table = self.__dict__["_mbarrier_table"] = {}
        return table

    def _mbarrier(self, op: Operation, p: Any) -> _Mbarrier:
        if not isinstance(p, Pointer) or not self._shared_buffer(p):
            raise InterpretationError(f"'{op.name}': the mbarrier is not in a shared buffer of {self._where()}")
        m = self._mbarriers.get((id(p.buffer), p.offset))
        if m is None:
            raise InterpretationError(f"'{op.name}': the mbarrier at byte {p.offset} was not initialized")
        return m

    def _progress(self, m: _Mbarrier, arrivals: int, tx: int) -> None:
        """Arrivals and bytes on ``m``; the phase completes when neither is pending."""
        m.pending -= arrivals
        m.tx += tx
        if m.pending < 0:
            raise InterpretationError(f"an mbarrier of count {m.count} got more arrivals than its count in one phase")
        if m.pending == 0 and m.tx == 0:
            m.phase += 1
            m.pending = m.count
            for t in m.waiters:
                t.waits_at = None
                self.cta.ready.append((t, None))  # type: ignore[attr-defined]
            m.waiters = []

    @impl(MbarrierInitOp)
    def run_mbarrier_init(self, interpreter: Interpreter, op: MbarrierInitOp, args: PythonValues) -> PythonValues:
        p, count = args
        if not isinstance(p, Pointer) or not self._shared_buffer(p):
            raise InterpretationError(f"'{op.name}': the mbarrier is not in a shared buffer of {self._where()}")
        self._mbarriers[(id(p.buffer), p.offset)] = _Mbarrier(int(count))
        return ()

    @impl(FenceMbarrierInitOp)
    def run_fence_mbarrier_init(self, interpreter: Interpreter, op: FenceMbarrierInitOp, args: PythonValues) -> PythonValues:
        return ()

    @impl(FenceProxyAsyncOp)
    def run_fence_proxy_async(self, interpreter: Interpreter, op: FenceProxyAsyncOp, args: PythonValues) -> PythonValues:
        return ()

    @impl(MbarrierArriveExpectTxOp)
    def run_arrive_expect_tx(self, interpreter: Interpreter, op: MbarrierArriveExpectTxOp, args: PythonValues) -> PythonValues:
        p, tx = args
        m = self._mbarrier(op, p)
        state = m.phase
        self._progress(m, 1, int(tx))
        return () if op.state is None else (state,)

    @impl(StAsyncOp)
    def run_st_async(self, interpreter: Interpreter, op: StAsyncOp, args: PythonValues) -> PythonValues:
        a, *values, mbar = args
        size = 8 if str(op.type.data).endswith("64") else 4
        if not isinstance(a, Pointer):
            raise InterpretationError(f"'{op.name}': 'a' is not an address")
        a._bytes(op.name, size * len(values))  # alignment and bounds of the whole vector
        for i, (v, reg) in enumerate(zip(values, op.b, strict=True)):
            a.moved(i * size).write(op.name, size, from_register(v, reg.type))
        self._progress(self._mbarrier(op, mbar), 0, -size * len(values))
        return ()

    @impl(CpAsyncBulkSharedCtaGlobalOp)
    def run_bulk_copy(self, interpreter: Interpreter, op: CpAsyncBulkSharedCtaGlobalOp, args: PythonValues) -> PythonValues:
        dst, src, size, mbar = args[:4]
        n = int(size)
        if not isinstance(dst, Pointer) or not isinstance(src, Pointer):
            raise InterpretationError(f"'{op.name}': 'dstMem' and 'srcMem' must be addresses")
        spans = []
        for what, ptr in (("dstMem", dst), ("srcMem", src)):
            raw = ptr._raw()
            if ptr.offset % 16 or ptr.offset < 0 or ptr.offset + n > raw.size:
                raise InterpretationError(f"'{op.name}': '{what}' + {n} bytes: bytes [{ptr.offset}, {ptr.offset + n}) "
                                          f"of a {raw.size}-byte buffer, 16-byte aligned")
            spans.append(raw[ptr.offset:ptr.offset + n])
        spans[0][...] = spans[1]
        self._progress(self._mbarrier(op, mbar), 0, -n)
        return ()

    @impl(MbarrierTryWaitParityOp)
    def run_try_wait_parity(self, interpreter: Interpreter, op: MbarrierTryWaitParityOp, args: PythonValues) -> PythonValues:
        p, parity = args
        m = self._mbarrier(op, p)
        if m.phase % 2 == int(parity) % 2:  # the phase of that parity is the current one: wait for it
            me = self.cta.current  # type: ignore[attr-defined]
            assert me is not None
            me.waits_at = _Waiting(me, f"'{op.name}' of {self._where()} (phase {m.phase}: never completed)")
            m.waiters.append(me)
            me.glet.parent.switch()
        return (1,)
