"""Running the threads of one CTA in lockstep: each op once for the whole CTA.

:func:`run_cta_lockstep` interprets a CTA's kernel call once, with a value per SSA value
that is either *uniform* (the same for every running thread: the interpreter's plain
value) or :class:`Varying` (one value per thread of the CTA). An op whose operands are
all uniform runs once (its implementation, as registered); an op with a varying operand
runs once per running thread, in thread order, with that thread's operands (the same
implementation). So every value is computed by the implementations the one-thread
interpreter uses, and is the same bit for bit; what is saved is the interpreter's work per
op and thread (scopes, operand look-ups, dispatch) and the greenlet switches of
:mod:`bulkred_dialect.interpreter.threads`.

What depends on the thread is modelled here: the thread ids and special registers
(varying), a local ``memref.alloca`` (a buffer per thread), ``atom``/``red`` (once per
thread, in thread order, also with uniform operands), ``shfl.sync`` / ``redux.sync``
(an exchange inside each warp's values) and ``bar.sync`` (nothing to wait for: every
thread reaches it together). An ``scf.if`` on a varying condition runs each region for
the threads that take it (the true region first); an ``scf.for`` with varying bounds
runs its iterations for the threads still in their range. Ops of the same thread
keep their order; ops of different threads interleave op by op, an order the GPU may
also take (the kernels' shared-memory exchanges are ordered by ``bar.sync`` and the
warp collectives, which the lockstep run keeps).

What it does not model makes the CTA *fall back*: :func:`run_cta_lockstep` returns False,
``threads.py`` puts back the buffers as they were before the grid's first CTA and runs
the grid thread by thread as before (same results, same errors with the thread's ids). That is:
any error an op raises, a collective that not every thread of its CTA or warp reaches
together (a barrier or exchange inside code that only some of a CTA's or warp's threads
run; in a cluster run, a barrier that some of the CTAs reach, each whole, runs), a partial ``membermask``,
``bar.sync`` other than barrier 0, an ``mbarrier.try_wait`` whose phase has not completed
(it would wait for ops that come later), an op without an implementation. An
``scf.while`` runs each thread's iterations, as ``scf.for`` with varying bounds.

A cluster (:mod:`bulkred_dialect.interpreter.clusters`) runs the same way, every thread of
its CTAs at once: a shared buffer is each CTA's own, the block id and cluster rank vary,
and the cluster barrier has nothing to wait for.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from itertools import repeat
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp, UnrealizedConversionCastOp, f64
from xdsl.interpreter import PythonValues, ReturnedValues
from xdsl.ir import Operation, Region
from xdsl.traits import IsTerminator
from xdsl.utils.scoped_dict import ScopedDict

from bulkred_dialect.interpreter.run import (
    _IMPL_BODIES,
    _MISSING,
    KernelInterpreter,
    _block_plans,
    _impl_body,
    _plan,
)
from bulkred_dialect.interpreter import vector
from bulkred_dialect.interpreter.memory import cmpi_width, new_buffer
from bulkred_dialect.interpreter.ptx_arith import _binary_form, _math, _math_form
from bulkred_dialect.interpreter.ptx_cvt import _setp_form
from bulkred_dialect.interpreter.ptx_memory import _FLOAT_OF_CLASS, _FLOAT_WIDTH, Pointer
from bulkred_dialect.interpreter.values import BF16, INT_WIDTH, coerce_float, float_fma, int_binary
from bulkred_dialect.interpreter.warps import FULL_MASK, WARP, redux_values, shfl_source_lane
from bulkred_dialect.ops.ptx.arith import (
    AbsOp,
    AddOp,
    AndOp,
    ArithType,
    Ex2Op,
    FloatDivOp,
    FmaOp,
    Lg2Op,
    MaxOp,
    MinOp,
    MulLoOp,
    MulOp,
    NegOp,
    OrOp,
    PackB32x2Op,
    RcpOp,
    ShlOp,
    ShrOp,
    SqrtOp,
    SubOp,
    UnpackB32x2Op,
    XorOp,
)
from bulkred_dialect.ops.ptx.atom import AtomOp, RedOp
from bulkred_dialect.ops.ptx.base import PtrType
from bulkred_dialect.ops.ptx.control import CvtOp, CvtRounding, CvtType, SelpOp, SetpOp
from bulkred_dialect.ops.ptx.memory import LdOp, LdVecOp, MovOp, PtrAddOp, StOp, StVecOp
from bulkred_dialect.ops.ptx.redux import ReduxSyncOp
from bulkred_dialect.ops.ptx.sreg import MovSregOp
from bulkred_dialect.ops.ptx.sync import BarrierClusterArriveOp, BarrierClusterWaitOp, BarSyncOp, MbarrierTryWaitParityOp
from bulkred_dialect.ops.ptx.warp import ShflSyncOp
from bulkred_dialect.ops.tile import ClusterRankOp, MemoryScope, scope_of

class Varying:
    """One value per thread of the CTA (``v[linear thread index]``; the entries of
    threads not running the current region are left as they were)."""

    __slots__ = ("v",)

    def __init__(self, v: list[Any]):
        self.v = v


class PointerArray:
    """The addresses of the threads of a CTA into one buffer: ``offsets[t]`` bytes into it
    (the varying value of an ``add.ptr``); ``[t]`` is thread ``t``'s :class:`Pointer`."""

    __slots__ = ("buffer", "space", "raw", "offsets")

    def __init__(self, buffer: np.ndarray, space: Any, raw: np.ndarray, offsets: np.ndarray):
        self.buffer, self.space, self.raw, self.offsets = buffer, space, raw, offsets

    def __getitem__(self, t: int | slice) -> Any:
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(len(self.offsets)))]
        return Pointer(self.buffer, int(self.offsets[t]), self.space, self.raw)

    def __len__(self) -> int:
        return len(self.offsets)

    def __iter__(self):
        return (self[t] for t in range(len(self.offsets)))


class SplitPointers:
    """The addresses of the threads of a CTA (or cluster) into a few buffers (each CTA's
    shared memory in a cluster run): thread ``t``'s is ``offsets[t]`` bytes into
    ``buffers[which[t]]`` (``raws``: their bytes, no two sharing memory), one state
    space; ``[t]`` is thread ``t``'s :class:`Pointer`. ``add.ptr``, ``ld`` and ``st``
    move and access them on arrays, a buffer at a time."""

    __slots__ = ("buffers", "raws", "which", "space", "offsets")

    def __init__(self, buffers: list[np.ndarray], raws: list[np.ndarray], which: np.ndarray, space: Any,
                 offsets: np.ndarray):
        self.buffers, self.raws, self.which, self.space, self.offsets = buffers, raws, which, space, offsets

    def __getitem__(self, t: int | slice) -> Any:
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(len(self.offsets)))]
        k = int(self.which[t])
        return Pointer(self.buffers[k], int(self.offsets[t]), self.space, self.raws[k])

    def __len__(self) -> int:
        return len(self.offsets)

    def __iter__(self):
        return (self[t] for t in range(len(self.offsets)))


# A varying list of Pointers into at most this many buffers is moved and accessed as
# SplitPointers (more, such as each thread's own buffer: a Pointer at a time).
SPLIT_BUFFERS = 8


class Fallback(Exception):
    """The lockstep run cannot go on: the CTA is run thread by thread instead."""


# Ops whose result depends on the running thread, not only on their operands (they read
# the thread's ids), or that must take effect once per thread (a read-modify-write, a new
# buffer): run once per running thread, also with uniform operands.
_PER_THREAD: frozenset[type[Operation]] = frozenset({gpu.LaneIdOp, AtomOp, RedOp, memref.AllocOp})
# Ops whose value, per thread, is fixed for the whole CTA (ids, special registers): made
# once per op for every thread of the CTA.
_THREAD_CONSTANTS: frozenset[type[Operation]] = frozenset({gpu.ThreadIdOp, gpu.LaneIdOp, MovSregOp})
# In a cluster run, the ids that differ between the cluster's CTAs too.
_CLUSTER_CONSTANTS: frozenset[type[Operation]] = frozenset({gpu.BlockIdOp, ClusterRankOp})
# An scf.while runs at most this many iterations in lockstep (a longer one falls back).
WHILE_LIMIT = 100_000


class LockstepInterpreter(KernelInterpreter):
    """:class:`~bulkred_dialect.interpreter.run.KernelInterpreter` over a CTA's threads
    (see the module docstring). ``cta`` is the CTA's ``threads._Cta`` (its ``current``
    thread is set before each per-thread call, for the implementations that read it) and
    ``threads`` its ``_Thread`` list in linear order."""

    def start(self, cta: Any, threads: list[Any], cluster: bool = False, forms: dict[Any, Any] | None = None) -> None:
        self.cta, self.threads = cta, threads
        self.cluster = cluster
        self.n = len(threads)
        # the threads of one CTA (a cluster run's are CTA by CTA, each in linear order)
        self.per_cta = sum(1 for t in threads if t.ids.cluster_rank == threads[0].ids.cluster_rank) if cluster else self.n
        self.active: list[int] = list(range(self.n))
        self.full = True
        self.index = np.arange(self.n)
        self.thread_constants: dict[Any, Any] = {}  # per op (and the full warps per mask)
        self.forms: dict[Any, Any] = forms if forms is not None else {}  # what run_* read of an op, once per run
        cta.current = threads[0]

    # region The loop over a region's ops

    def run_ssacfg_region(self, region: Region, args: PythonValues, name: str = "unknown") -> PythonValues:
        if self.listeners:
            raise Fallback("listeners")
        block = region.blocks.first
        if block is None:
            return ()
        impls = self._impls
        table = impls._impl_dict  # noqa: SLF001
        plans = _block_plans(impls)
        bodies = _IMPL_BODIES
        special = _SPECIAL
        initial_scope = self._ctx
        results: PythonValues = ()
        while block is not None:
            scope = ScopedDict(self._ctx, name=name)
            self._ctx = scope
            local = scope._local_scope  # noqa: SLF001
            for arg, value in zip(block.args, args):
                local[arg] = value
            plan = plans.get(block)
            if plan is None:
                plan = plans[block] = _plan(block)
            block = None
            for op, operands, op_results, op_type in plan:
                inputs = []
                varying = False
                for v in operands:
                    value = local.get(v, _MISSING)
                    if value is _MISSING:
                        value = scope[v]
                    if type(value) is Varying:
                        varying = True
                    inputs.append(value)
                handler = special.get(op_type)
                if handler is None and self.cluster and op_type in _CLUSTER_CONSTANTS:
                    handler = LockstepInterpreter.run_thread_constant
                if handler is not None:
                    values = handler(self, op, inputs, varying)
                else:
                    entry = table.get(op_type)
                    if entry is None:
                        raise Fallback(f"no implementation of {op.name}")
                    ft, fn = entry
                    body = bodies.get(fn, _MISSING)
                    if body is _MISSING:
                        body = bodies[fn] = _impl_body(fn)
                    if body is None:  # a terminator, or an implementation returning one
                        if op.has_trait(IsTerminator):
                            values, terminator = fn(ft, self, op, tuple(inputs))
                            if isinstance(terminator, ReturnedValues):
                                results = terminator.values
                                break
                            raise Fallback(f"terminator {op.name}")
                        values = self._each(op, inputs, lambda ft, i, o, a, fn=fn: _no_terminator(fn(ft, i, o, a)), ft)
                    elif varying or op_type in _PER_THREAD:
                        values = self._each(op, inputs, body, ft)
                    else:
                        values = body(ft, self, op, tuple(inputs))
                if len(op_results) != len(values):
                    raise Fallback("result count")
                for r, value in zip(op_results, values):
                    local[r] = value
        self._ctx = initial_scope
        return results

    def _each(self, op: Operation, inputs: list[Any], call: Any, ft: Any) -> PythonValues:
        """``call`` once per running thread with the thread's operands; each result
        varying."""
        active = self.active
        count = len(active)
        columns = []
        for x in inputs:
            if type(x) is Varying:
                columns.append(x.v if self.full else [x.v[t] for t in active])
            else:
                columns.append([x] * count)
        rows = zip(*columns) if columns else [()] * count
        cta, threads = self.cta, self.threads
        outs = []
        for t, row in zip(active, rows):
            cta.current = threads[t]
            outs.append(call(ft, self, op, row))
        cta.current = threads[active[0]]
        nres = len(op.results)
        if nres == 0:
            return ()
        if nres == 1:
            return (self._scatter([o[0] for o in outs]),)
        return tuple(self._scatter(list(col)) for col in zip(*outs))

    def _scatter(self, values: list[Any], base: list[Any] | None = None) -> Varying:
        """The running threads' ``values`` (in ``active`` order) as a varying value."""
        if self.full:
            return Varying(values)
        out = list(base) if base is not None else [None] * self.n
        for t, v in zip(self.active, values):
            out[t] = v
        return Varying(out)

    def _run(self, region: Region, args: PythonValues, active: list[int]) -> PythonValues:
        """``region`` run by the threads ``active`` (a part of the running ones)."""
        saved = self.active, self.full
        self.active, self.full = active, len(active) == self.n
        self.index = np.asarray(active)
        self.cta.current = self.threads[active[0]]
        try:
            return self.run_ssacfg_region(region, args)
        finally:
            self.active, self.full = saved
            self.index = np.asarray(saved[0])
            self.cta.current = self.threads[saved[0][0]]

    # endregion

    # region Ops that see the threads

    def _once(self, op: Operation, inputs: list[Any]) -> PythonValues:
        ft, fn = self._impls._impl_dict[type(op)]  # noqa: SLF001
        body = _IMPL_BODIES.get(fn, _MISSING)
        if body is _MISSING:
            body = _IMPL_BODIES[fn] = _impl_body(fn)
        if body is None:
            return _no_terminator(fn(ft, self, op, tuple(inputs)))
        return body(ft, self, op, tuple(inputs))

    def run_if(self, op: scf.IfOp, inputs: list[Any], varying: bool) -> PythonValues:
        if not varying:
            return self._once(op, inputs)
        cond = inputs[0].v
        taken = [t for t in self.active if cond[t]]
        other = [t for t in self.active if not cond[t]]
        if not other:
            return self.run_ssacfg_region(op.true_region, ())
        if not taken:
            return self.run_ssacfg_region(op.false_region, ())
        parts = [(taken, self._run(op.true_region, (), taken))]
        if op.false_region.blocks:
            parts.append((other, self._run(op.false_region, (), other)))
        return self._merge(len(op.results), parts)

    def _merge(self, count: int, parts: list[tuple[list[int], PythonValues]]) -> PythonValues:
        """Results that each group of threads took from its own region."""
        results = []
        for i in range(count):
            out = [None] * self.n
            for group, values in parts:
                v = values[i]
                if type(v) is Varying:
                    for t in group:
                        out[t] = v.v[t]
                else:
                    for t in group:
                        out[t] = v
            results.append(Varying(out))
        return tuple(results)

    def run_for(self, op: scf.ForOp, inputs: list[Any], varying: bool) -> PythonValues:
        lb, ub, step, *carried_in = inputs
        if not any(type(x) is Varying for x in (lb, ub, step)):
            return self._once(op, inputs)
        ranges = {t: range(_at(lb, t), _at(ub, t), _at(step, t)) for t in self.active}
        carried = [list(x.v) if type(x) is Varying else [x] * self.n for x in carried_in]
        k = 0
        while True:
            group = [t for t in self.active if k < len(ranges[t])]
            if not group:
                break
            iv = [None] * self.n
            for t in group:
                iv[t] = ranges[t][k]
            values = self._run(op.body, (Varying(iv), *(Varying(c) for c in carried)), group)
            carried = [list(c) for c in carried]
            for c, v in zip(carried, values):
                if type(v) is Varying:
                    for t in group:
                        c[t] = v.v[t]
                else:
                    for t in group:
                        c[t] = v
            k += 1
        return tuple(Varying(c) for c in carried)

    def run_while(self, op: scf.WhileOp, inputs: list[Any], varying: bool) -> PythonValues:
        """Each thread leaves when its condition is false, with the values it forwards;
        the others run the after region and the before region again (a spin on
        ``mbarrier.try_wait`` ends at once or falls back there)."""
        group, carried = self.active, tuple(inputs)
        out: list[list[Any]] = [[None] * self.n for _ in op.results]
        for _ in range(WHILE_LIMIT):
            cond, *forwarded = self._run(op.before_region, carried, group)
            stay = [t for t in group if _at(cond, t)]
            for o, v in zip(out, forwarded):
                for t in group:
                    o[t] = _at(v, t)
            if not stay:
                return tuple(Varying(o) for o in out)
            carried = self._run(op.after_region, tuple(forwarded), stay)
            group = stay
        raise Fallback("scf.while too long")

    def run_cluster_arrive(self, op: Operation, inputs: list[Any], varying: bool) -> PythonValues:
        if not self.cluster:
            raise Fallback(f"{op.name} outside a cluster run")
        return ()

    def run_cluster_wait(self, op: Operation, inputs: list[Any], varying: bool) -> PythonValues:
        """Every thread of the cluster reaches it together: nothing to wait for."""
        if not self.cluster or not self.full:
            raise Fallback(op.name)
        return ()

    def run_try_wait(self, op: MbarrierTryWaitParityOp, inputs: list[Any], varying: bool) -> PythonValues:
        """1 for each running thread whose mbarrier completed the phase of that parity
        (every arrival and byte of it came from ops the lockstep run made before); a
        phase still pending would wait for ops that come later: the run falls back."""
        functions = self._mbarrier_functions()
        p, parity = inputs
        v = p.v if type(p) is Varying else None
        which = v.which if type(v) is SplitPointers else None
        offsets = v.offsets if type(v) is SplitPointers or type(v) is PointerArray else None
        seen = set()  # (buffer, offset, parity): each checked once, at its first thread (the answer is the address's)
        for t in self.active:
            bit = int(_at(parity, t)) % 2
            if offsets is not None:
                key = (int(which[t]) if which is not None else 0, int(offsets[t]), bit)
            elif v is None:
                key = (bit,)
            else:
                a = v[t]
                key = (id(a.buffer), a.offset, bit) if type(a) is Pointer else None
            if key is not None:
                if key in seen:
                    continue
                seen.add(key)
            self.cta.current = self.threads[t]
            m = functions._mbarrier(op, _at(p, t))  # noqa: SLF001
            if m.phase % 2 == bit:
                raise Fallback(f"{op.name} before its phase completed")
        self.cta.current = self.threads[self.active[0]]
        return (1,)

    def _mbarrier_functions(self) -> Any:
        ft, _ = self._impls._impl_dict[MbarrierTryWaitParityOp]  # noqa: SLF001
        return ft

    def run_thread_constant(self, op: Operation, inputs: list[Any], varying: bool) -> PythonValues:
        """A thread id or special register: its value for every thread of the CTA, made
        once per op (uniform where every thread has the same)."""
        value = self.thread_constants.get(op)
        if value is None:
            saved = self.active, self.full
            self.active, self.full = list(range(self.n)), True
            try:
                (value,) = self._each(op, inputs, self._body(op), None)
            finally:
                self.active, self.full = saved
                self.cta.current = self.threads[saved[0][0]]
            first = value.v[0]
            if all(type(x) is int and x == first for x in value.v):
                value = first
            self.thread_constants[op] = value
        return (value,)

    def _body(self, op: Operation) -> Any:
        ft, fn = self._impls._impl_dict[type(op)]  # noqa: SLF001
        body = _impl_body(fn)
        if body is None:
            raise Fallback(f"{op.name} is not an @impl")
        return lambda _ft, interpreter, o, args: body(ft, interpreter, o, args)

    def run_alloca(self, op: memref.AllocaOp, inputs: list[Any], varying: bool) -> PythonValues:
        shared = scope_of(op.memref.type) == MemoryScope.SHARED
        if shared and not self.cluster:
            return self._once(op, inputs)  # the CTA's buffer (in a cluster run, each thread's CTA's)
        if not shared and not inputs:
            # a buffer per thread, each what every implementation of memref.alloca makes
            # for a buffer that is not shared (memory.py's, threads.py's, clusters.py's):
            # new_buffer's, made once and copied (the same poison bytes)
            first = new_buffer(op.memref.type, self.index_bitwidth)
            return (self._scatter([first, *(first.copy() for _ in range(len(self.active) - 1))]),)
        if shared and not inputs:
            # a cluster run: each CTA's own buffer (clusters.py's, one per rank and op), asked
            # for once per CTA (at its first running thread) and shared by its threads
            body, threads, values = self._body(op), self.threads, []
            rank, buffer = None, None
            for t in self.active:
                thread = threads[t]
                if thread.ids.cluster_rank != rank:
                    self.cta.current = thread
                    (buffer,) = body(None, self, op, ())
                    rank = thread.ids.cluster_rank
                values.append(buffer)
            self.cta.current = threads[self.active[0]]
            return (self._scatter(values),)
        return self._each(op, inputs, self._body(op), None)  # a buffer per thread

    def run_cast(self, op: UnrealizedConversionCastOp, inputs: list[Any], varying: bool) -> PythonValues:
        """A cast of each thread's own buffer (a local ``memref.alloca``) to its address:
        ``PtxMemoryFunctions.cast_memref_to_ptr``'s :class:`Pointer` (at offset 0) per
        thread, made here rather than through xDSL's ``run_cast`` and its look-up of the
        cast, thread by thread. Any other cast, or a value that is not a contiguous numpy
        buffer (the implementation's error), as every op: once, or per thread."""
        if varying and len(inputs) == 1 and len(op.results) == 1:
            src, dst = op.operands[0].type, op.results[0].type
            if isinstance(src, MemRefType) and isinstance(dst, PtrType):
                values = inputs[0].v if self.full else [inputs[0].v[t] for t in self.active]
                if all(type(b) is np.ndarray and b.flags.c_contiguous for b in values):
                    space = dst.state_space
                    split = self._split_buffers(values, space)
                    if split is not None:
                        return (split,)
                    return (self._scatter([Pointer(b, 0, space) for b in values]),)
        if not varying:
            return self._once(op, inputs)
        return self._each(op, inputs, self._body(op), None)

    def run_bar_sync(self, op: BarSyncOp, inputs: list[Any], varying: bool) -> PythonValues:
        """Barrier 0 of each CTA whose threads all run here: nothing to wait for. In a
        cluster run the barrier is each CTA's own, so the running threads may be some of
        the cluster's CTAs, each whole (the last CTA's tail: the others have left that
        path); a CTA only part of whose threads run here falls back."""
        if op.id.value.data != 0 or not (self.full or self._whole_ctas()):
            raise Fallback("bar.sync")
        return ()

    def _whole_ctas(self) -> bool:
        """In a cluster run, the running threads are every thread of some of its CTAs
        (each CTA's threads are consecutive in ``threads``, ``per_cta`` of them)."""
        if not self.cluster:
            return False
        active, size = self.active, self.per_cta
        if len(active) % size:
            return False
        for i in range(0, len(active), size):
            first = active[i]
            if first % size or active[i + size - 1] != first + size - 1:
                return False
        return True

    def _warps(self, op: Operation, mask: Any) -> list[tuple[int, int]]:
        """(first thread, size) of each warp of the running threads, each of which must be
        running whole, with a full ``membermask`` (every thread running, a uniform mask:
        the warps found once per mask)."""
        if self.full and type(mask) is not Varying:
            key = ("warps", int(mask))
            warps = self.thread_constants.get(key)
            if warps is None:
                warps = self.thread_constants[key] = self._find_warps(op, mask)
            return warps
        return self._find_warps(op, mask)

    def _find_warps(self, op: Operation, mask: Any) -> list[tuple[int, int]]:
        active = self.active
        if not self.full:
            present = set(active)
        uniform = type(mask) is not Varying
        warps = []
        for w, group in self.cta.warps.items():
            first = w * WARP
            if self.full or first in present:
                if not self.full and any(t not in present for t in range(first, first + group.size)):
                    raise Fallback(f"{op.name} in divergent code")
                full_mask = (1 << group.size) - 1
                for m in [mask] if uniform else mask.v[first : first + group.size]:
                    if int(m) & FULL_MASK & full_mask != full_mask:
                        raise Fallback(f"{op.name} partial membermask")
                warps.append((first, group.size))
        if not self.full and sum(size for _, size in warps) != len(active):
            raise Fallback(f"{op.name} in divergent code")
        return warps

    def run_shfl(self, op: ShflSyncOp, inputs: list[Any], varying: bool) -> PythonValues:
        a, b, c, mask = inputs
        mode = op.mode.data
        warps = self._warps(op, mask)
        if type(b) is not Varying and type(c) is not Varying:  # the same source lanes in every warp
            key = (mode, int(b), int(c), tuple(warps))
            moves = _SHFL_MOVES.get(key)
            if moves is None:
                moves = _SHFL_MOVES[key] = _shfl_moves(mode, int(b), int(c), warps)
            if moves is _OUT_OF_WARP:
                raise Fallback("shfl.sync lane out of the warp")
            dst, src = moves
            v = a.v if type(a) is Varying else None
            if type(v) is np.ndarray:
                out = np.zeros(self.n, v.dtype) if len(dst) != self.n else None
                if out is None:  # every thread of the CTA: dst is 0 .. n - 1
                    return (Varying(v[src]),)
                out[dst] = v[src]
                return (Varying(out),)
            out = [None] * self.n
            if v is None:
                for t in dst.tolist():
                    out[t] = a
            else:
                for t, s_ in zip(dst.tolist(), src.tolist()):
                    out[t] = v[s_]
            return (Varying(out),)
        out = [None] * self.n
        lanes = None
        for first, size in warps:
            values = a.v[first : first + size] if type(a) is Varying else [a] * size
            if type(b) is Varying or type(c) is Varying:
                lanes = [shfl_source_lane(mode, lane, int(_at(b, first + lane)), int(_at(c, first + lane))) for lane in range(size)]
            elif lanes is None or len(lanes) != size:  # the same source lanes in every warp
                lanes = [shfl_source_lane(mode, lane, int(b), int(c)) for lane in range(size)]
            if max(lanes) >= size:
                raise Fallback("shfl.sync lane out of the warp")
            out[first : first + size] = [values[j] for j in lanes]
        return (Varying(out),)

    def run_redux(self, op: ReduxSyncOp, inputs: list[Any], varying: bool) -> PythonValues:
        src, mask = inputs
        out = [None] * self.n
        for first, size in self._warps(op, mask):
            values = src.v[first : first + size] if type(src) is Varying else [src] * size
            r = redux_values(op, list(values))
            for t in range(first, first + size):
                out[t] = r
        return (Varying(out),)

    # region Arithmetic on arrays (interpreter/vector.py)

    def _array(self, x: Any, t: ArithType) -> Any:
        """``x`` for the running threads as a numpy array (a uniform value as a numpy
        scalar) of float type ``t``, or None where a value is not of that type."""
        np_type = vector.NP_FLOAT[t]
        if type(x) is not Varying:
            return coerce_float(t, x) if isinstance(x, (np_type, float, int)) and not isinstance(x, bool) else None
        v = x.v
        if type(v) is np.ndarray:
            if v.dtype != np_type:
                return None
            return v if self.full else v[self.index]
        values = v if self.full else [v[t] for t in self.active]
        for e in values:
            if type(e) is not np_type:
                return None
        return np.array(values, dtype=np_type)

    def _vary(self, r: np.ndarray) -> Varying:
        """The running threads' results ``r`` as a varying value."""
        if self.full:
            return Varying(r)
        out = np.zeros(self.n, r.dtype)
        out[self.index] = r
        return Varying(out)

    def _map(self, f: Any, inputs: list[Any]) -> PythonValues:
        """``f`` (an op's one result as a function of its operands, no thread state) of
        each running thread's operands."""
        active = self.active
        columns = []
        for x in inputs:
            if type(x) is Varying:
                columns.append(x.v if self.full else [x.v[t] for t in active])
            else:
                columns.append(repeat(x))
        return (self._scatter(list(map(f, *columns))),)

    def _function(self, op: Operation, make: Any) -> Any:
        f = self.forms.get(op)
        if f is None:
            f = self.forms[op] = make(op)
        return f

    def run_binary(self, op: Any, inputs: list[Any], varying: bool) -> PythonValues:
        if varying:
            form = self.forms.get(op)
            if form is None:
                form = self.forms[op] = _binary_form(op)
            t, is_float, minmax, opcode, ftz, nan = form
            if is_float and t in vector.NP_FLOAT and not (ftz and t != ArithType.F32):
                a, b = (self._array(x, t) for x in inputs)
                if a is not None and b is not None:
                    if minmax:
                        return (self._vary(vector.minmax(opcode, t, a, b, ftz, nan)),)
                    return (self._vary(vector.binary(opcode, t, a, b, ftz)),)
            if not is_float:
                return self._int_binary(opcode, t, inputs)
            return self._each(op, inputs, self._body(op), None)
        return self._once(op, inputs)

    def run_bitwise(self, op: Any, inputs: list[Any], varying: bool) -> PythonValues:
        if varying:
            return self._int_binary(op.OPCODE, op.type.data, inputs)
        return self._once(op, inputs)

    def _int_binary(self, opcode: str, t: Any, inputs: list[Any]) -> PythonValues:
        """values.int_binary of each running thread's operands: on int64 arrays where
        vector.int_binary takes them, else one call per thread."""
        columns = []
        for x in inputs:
            if type(x) is Varying:
                columns.append(x.v if self.full else [x.v[t] for t in self.active])
            else:
                columns.append(x)  # uniform: one value, broadcast
        form = _WRAPPING.get(opcode)
        if form is not None:
            r = _wrapping(form, INT_WIDTH[t], *columns)
            if r is not None:
                return (self._scatter(r),)
        r = vector.int_binary(opcode, t, *columns)
        if r is None:
            return self._map(partial(int_binary, opcode, t), inputs)
        return (self._scatter(r),)

    def run_cvt(self, op: CvtOp, inputs: list[Any], varying: bool) -> PythonValues:
        """Integer to integer, bf16 to f32 and f32 to bf16 (round to nearest even) on
        arrays (vector.py); the other conversions, and values not of the source's kind,
        per thread with ptx_cvt's converter."""
        if varying:
            form = self.forms.get(op)
            if form is None:
                form = self.forms[op] = _cvt_form(op)
            (x,) = inputs
            values = x.v if self.full else [x.v[t] for t in self.active]
            if form[0] == "int":
                r = vector.cvt_int(values, *form[1:])
                if r is not None:
                    return (self._scatter(r),)
            elif form[0] == "bf16>f32" and all(type(e) is BF16 for e in values):
                return (self._vary(vector.bf16_bits_to_f32([e.bits for e in values])),)
            elif form[0] == "f32>bf16":
                a = self._array(x, ArithType.F32)
                if a is not None:
                    return (self._scatter(_bf16s(vector.f32_to_bf16_bits(a))),)
            return self._map(self._impls._impl_dict[CvtOp][0].converter(op), inputs)  # noqa: SLF001
        return self._once(op, inputs)

    def run_cmpi(self, op: arith.CmpiOp, inputs: list[Any], varying: bool) -> PythonValues:
        """memory.py's comparison (the operands' low bits of the type's width, read as
        signed or unsigned) on int64/uint64 arrays where every operand is an integer of
        their range; else per thread."""
        if varying:
            key = ("cmpi", op)
            form = self.forms.get(key, _MISSING)
            if form is _MISSING:
                form = self.forms[key] = _cmpi_form(op, self.index_bitwidth)
            if form is not None:
                compare, width, unsigned = form
                a, b = (vector.int_bits(self._column(x)) for x in inputs)
                if a is not None and b is not None:
                    mask = np.uint64((1 << width) - 1) if width < 64 else None
                    if mask is not None:
                        a, b = a & mask, b & mask
                    if not unsigned:
                        a, b = vector.signed_bits(a, width), vector.signed_bits(b, width)
                    return (self._scatter(compare(a, b).tolist()),)
            return self._map(self._impls._impl_dict[arith.CmpiOp][0].comparison(self, op), inputs)  # noqa: SLF001
        return self._once(op, inputs)

    def _column(self, x: Any) -> Any:
        """The running threads' values of ``x`` (a list or an array; a uniform value
        repeated)."""
        if type(x) is not Varying:
            return [x] * len(self.active)
        v = x.v
        if self.full:
            return v
        return v[self.index] if type(v) is np.ndarray else [v[t] for t in self.active]

    def _pick(self, cond: Any, on_true: Any, on_false: Any) -> PythonValues | None:
        """``on_true if cond else on_false`` of each running thread (selp, arith.select):
        one ``np.where`` where both values are arrays (or numpy scalars) of one dtype, else
        a list; None where a condition is not a bool or an int (the caller's per-thread
        run then gives it to the implementation)."""
        c = self._column(cond)
        if type(c) is np.ndarray:
            if c.dtype.kind not in "biu":
                return None
            keep = c.astype(bool)
        else:
            for k in c:
                if type(k) is not bool and type(k) is not int:
                    return None
            keep = None
        arrays = []
        for x in (on_true, on_false):
            v = x.v if type(x) is Varying else x
            arrays.append(v if type(v) is np.ndarray else v if isinstance(v, np.generic) else None)
        a, b = arrays
        if a is not None and b is not None and a.dtype == b.dtype and (type(a) is np.ndarray or type(b) is np.ndarray):
            t, f = (self._column(x) if type(x) is Varying else x for x in (on_true, on_false))
            r = np.where(keep if keep is not None else np.array(c, dtype=bool), t, f)
            return (self._vary(r),)
        t, f = self._column(on_true), self._column(on_false)
        return (self._scatter([x if k else y for k, x, y in zip(c, t, f)]),)

    def run_selp(self, op: SelpOp, inputs: list[Any], varying: bool) -> PythonValues:
        if varying:
            on_true, on_false, cond = inputs
            picked = self._pick(cond, on_true, on_false)
            return picked if picked is not None else self._map(_select, inputs)
        return self._once(op, inputs)

    def run_select(self, op: arith.SelectOp, inputs: list[Any], varying: bool) -> PythonValues:
        """arith.select of a scalar condition (xDSL's: ``lhs if cond else rhs``)."""
        if varying:
            cond, lhs, rhs = inputs
            picked = self._pick(cond, lhs, rhs)
            if picked is not None:
                return picked
            return self._each(op, inputs, self._body(op), None)
        return self._once(op, inputs)

    def run_math(self, op: Any, inputs: list[Any], varying: bool) -> PythonValues:
        """sqrt, rcp and div of f32 and f64, ex2 and lg2 of f32 on arrays; the other math
        ops (abs, neg, other types) per thread, ptx_arith's ``_math`` of the op's form (no thread
        state) mapped over the threads' operands."""
        if varying:
            form = self.forms.get(op)
            if form is None:
                form = self.forms[op] = _math_form(op)
            what, t, ftz, opcode = form
            if what == "math" and (
                (opcode in ("sqrt", "rcp", "div") and t in vector.NP_FLOAT)
                or (opcode in ("ex2", "lg2") and t == ArithType.F32)
            ):
                arrays = [self._array(x, t) for x in inputs]
                if all(a is not None for a in arrays):
                    return (self._vary(vector.math(opcode, t, arrays, ftz)),)
            return self._map(lambda *args: _math(op, args, form), inputs)
        return self._once(op, inputs)

    def run_fma(self, op: FmaOp, inputs: list[Any], varying: bool) -> PythonValues:
        if varying:
            form = self.forms.get(op)
            if form is None:
                form = self.forms[op] = _math_form(op)
            _, t, ftz, _ = form
            if t in vector.NP_FLOAT:
                a, b, c = (self._array(x, t) for x in inputs)
                if a is not None and b is not None and c is not None:
                    if t == ArithType.F32:
                        return (self._vary(vector.fma_f32(a, b, c, ftz)),)
                    return (self._vary(vector.fma_f64(a, b, c, _fma_f64_scalar)),)
            return self._each(op, inputs, self._body(op), None)
        return self._once(op, inputs)

    def run_unpack(self, op: UnpackB32x2Op, inputs: list[Any], varying: bool) -> PythonValues:
        """An f64 array's bits as its two signed 32-bit halves (ints, as the one-thread
        ``mov.b64 {lo, hi}`` gives them)."""
        if varying and op.src.type == f64:
            a = self._array(inputs[0], ArithType.F64)
            if type(a) is np.ndarray:
                bits = a.view(np.uint64)
                lo = (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).tolist()
                hi = (bits >> np.uint64(32)).astype(np.uint32).view(np.int32).tolist()
                return (self._scatter(lo), self._scatter(hi))
        return self._each(op, inputs, self._body(op), None) if varying else self._once(op, inputs)

    def run_pack(self, op: PackB32x2Op, inputs: list[Any], varying: bool) -> PythonValues:
        """Two 32-bit halves (ints) as the f64 of their bits, an array."""
        if varying and op.result.type == f64:
            halves = []
            for x in inputs:
                v = x.v if type(x) is Varying else None
                values = [x] * len(self.active) if v is None else v if self.full else [v[t] for t in self.active]
                if not all(type(e) is int for e in values):
                    break
                halves.append(np.array(values, dtype=np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF))
            else:
                lo, hi = halves
                return (self._vary((lo | (hi << np.uint64(32))).view(np.float64)),)
        return self._each(op, inputs, self._body(op), None) if varying else self._once(op, inputs)

    def run_mov(self, op: MovOp, inputs: list[Any], varying: bool) -> PythonValues:
        """An integer's bits into a float register (``mov.b32`` of an i32 into an f32, the
        rows' packed words) on an array: the bits ptx_memory's ``run_mov`` gives one
        thread (the low bits of the narrower type, viewed as the float). Addresses, a
        float's bits into an integer, bfloat16 and f16, and values that are not ints,
        one thread at a time."""
        if varying:
            form = self.forms.get(op, _MISSING)
            if form is _MISSING:
                form = self.forms[op] = _mov_form(op)
            if form is not None:
                mask, bits, float_type = form
                (x,) = inputs
                values = x.v if self.full else [x.v[t] for t in self.active]
                if type(values) is list and all(type(e) is int for e in values):
                    u = vector.int_bits(values)
                    if u is not None:
                        return (self._vary((u & mask).astype(bits).view(float_type)),)
            return self._each(op, inputs, self._body(op), None)
        return self._once(op, inputs)

    def run_setp(self, op: SetpOp, inputs: list[Any], varying: bool) -> PythonValues:
        if varying:
            form = self.forms.get(op)
            if form is None:
                form = self.forms[op] = _setp_form(op.cmp.data, op.type.data)
            c, t, _, _ = form
            if t in vector.NP_FLOAT:
                a, b = (self._array(x, t) for x in inputs)
                if a is not None and b is not None:
                    with np.errstate(all="ignore"):
                        r = vector.setp(c, a, b).tolist()
                    return (self._scatter(r),)
            return self._each(op, inputs, self._body(op), None)
        return self._once(op, inputs)

    # endregion

    # region Addresses (add.ptr, ld, ld.vec) on arrays of offsets

    def run_add_ptr(self, op: PtrAddOp, inputs: list[Any], varying: bool) -> PythonValues:
        base, offset = inputs
        if varying:
            offsets = self._offsets(base)
            if offsets is not None:
                buffer, space, raw, at = offsets
                if type(offset) is Varying:
                    v = offset.v
                    delta = np.array(v if self.full else [v[t] for t in self.active], dtype=np.int64)
                else:
                    delta = int(offset)
                return (self._pointers(buffer, space, raw, at + delta),)
            split = self._split(base)
            if split is not None:
                delta = self._deltas(offset)
                if delta is not None:
                    buffers, raws, which, space, at = split
                    return (self._split_pointers(buffers, raws, which, space, at + delta),)
            moved = self._moved(base, offset)
            if moved is not None:
                return (moved,)
            return self._each(op, inputs, self._body(op), None)
        return self._once(op, inputs)

    def _pointer_list(self, v: Any) -> list | None:
        """The active threads' values of ``v`` where it is a list of them starting with a
        Pointer (:meth:`_split` and :meth:`_offsets` check the rest), else None."""
        if type(v) is not list:
            return None
        pointers = v if self.full else [v[t] for t in self.active]
        return pointers if type(pointers[0]) is Pointer else None

    def _split(self, base: Any) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray, Any, np.ndarray] | None:
        """(buffers, their bytes, each running thread's buffer index and offset, space) of
        addresses into a few buffers (:class:`SplitPointers`, or a varying list of
        Pointers of one state space into at most :data:`SPLIT_BUFFERS` buffers that share
        no memory), or None."""
        if type(base) is not Varying:
            return None
        v = base.v
        if type(v) is SplitPointers:
            if self.full:
                return v.buffers, v.raws, v.which, v.space, v.offsets
            return v.buffers, v.raws, v.which[self.index], v.space, v.offsets[self.index]
        pointers = self._pointer_list(v)
        if pointers is None:
            return None
        space = pointers[0].space
        places: dict[int, int] = {}
        buffers: list[np.ndarray] = []
        which, offsets = [], []
        for p in pointers:
            if type(p) is not Pointer or p.space != space:
                return None
            k = places.get(id(p.buffer))
            if k is None:
                if len(buffers) == SPLIT_BUFFERS:
                    return None
                k = places[id(p.buffer)] = len(buffers)
                buffers.append(p.buffer)
            which.append(k)
            offsets.append(p.offset)
        raws = [b.reshape(-1).view(np.uint8) if b.flags.c_contiguous else None for b in buffers]
        if any(r is None for r in raws) or any(
            np.may_share_memory(raws[i], raws[j]) for i in range(len(raws)) for j in range(i)
        ):
            return None
        try:
            at = np.array(offsets, dtype=np.int64)
        except OverflowError:
            return None
        return buffers, raws, np.array(which, dtype=np.intp), space, at

    def _split_buffers(self, values: list[np.ndarray], space: Any) -> Varying | None:
        """Each running thread's address of its buffer (``values``, contiguous), at offset
        0, as :class:`SplitPointers` where they are a few buffers (a cluster's CTAs'
        shared memory) that share no memory; else None."""
        places: dict[int, int] = {}
        buffers: list[np.ndarray] = []
        which = []
        for b in values:
            k = places.get(id(b))
            if k is None:
                if len(buffers) == SPLIT_BUFFERS:
                    return None
                k = places[id(b)] = len(buffers)
                buffers.append(b)
            which.append(k)
        if len(buffers) < 2:
            return None
        raws = [b.reshape(-1).view(np.uint8) for b in buffers]
        if any(np.may_share_memory(raws[i], raws[j]) for i in range(len(raws)) for j in range(i)):
            return None
        return self._split_pointers(buffers, raws, np.array(which, dtype=np.intp), space,
                                    np.zeros(len(values), np.int64))

    def _deltas(self, offset: Any) -> Any:
        """``add.ptr``'s offset for the running threads (an int, or an int64 array), or
        None where one is not an integer of int64's range."""
        if type(offset) is not Varying:
            return int(offset) if type(offset) is int or isinstance(offset, np.integer) else None
        values = self._column(offset)
        if type(values) is np.ndarray:
            return values.astype(np.int64) if values.dtype.kind in "iu" else None
        for d in values:
            if not (type(d) is int or isinstance(d, np.integer)):
                return None
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            return None

    def _split_pointers(self, buffers: list[np.ndarray], raws: list[np.ndarray], which: np.ndarray, space: Any,
                        offsets: np.ndarray) -> Varying:
        """The running threads' addresses (``which``, ``offsets`` in running order) as a
        varying :class:`SplitPointers`."""
        if self.full:
            return Varying(SplitPointers(buffers, raws, which, space, offsets))
        full_which = np.zeros(self.n, np.intp)
        full_at = np.zeros(self.n, np.int64)
        full_which[self.index] = which
        full_at[self.index] = offsets
        return Varying(SplitPointers(buffers, raws, full_which, space, full_at))

    def _moved(self, base: Any, offset: Any) -> Varying | None:
        """Each running thread's Pointer moved by its int offset (addresses into several
        buffers: a cluster's CTAs' shared memory), as ptx_memory's add.ptr moves it; None
        where a base is not a Pointer or an offset not an int (then per thread)."""
        if type(base) is not Varying or type(base.v) is not list:
            return None
        out = []
        for p, d in zip(self._column(base), self._column(offset)):
            if type(p) is not Pointer or not (type(d) is int or isinstance(d, np.integer)):
                return None
            out.append(p.moved(int(d)))
        return self._scatter(out)

    def _offsets(self, base: Any) -> tuple[Any, Any, np.ndarray, Any] | None:
        """(buffer, space, bytes, the running threads' offsets) of addresses into one
        buffer, or None."""
        if type(base) is Pointer:
            return base.buffer, base.space, base._raw(), base.offset  # noqa: SLF001
        if type(base) is not Varying:
            return None
        v = base.v
        if type(v) is PointerArray:
            return v.buffer, v.space, v.raw, v.offsets if self.full else v.offsets[self.index]
        pointers = self._pointer_list(v)
        if pointers is None:
            return None
        first = pointers[0]
        for p in pointers:
            if type(p) is not Pointer or p.buffer is not first.buffer or p.space != first.space:
                return None
        return first.buffer, first.space, first._raw(), np.array([p.offset for p in pointers], dtype=np.int64)  # noqa: SLF001

    def _pointers(self, buffer: Any, space: Any, raw: np.ndarray, offsets: np.ndarray) -> Varying:
        if self.full:
            return Varying(PointerArray(buffer, space, raw, offsets))
        full = np.zeros(self.n, np.int64)
        full[self.index] = offsets
        return Varying(PointerArray(buffer, space, raw, full))

    def run_ld(self, op: LdOp | LdVecOp, inputs: list[Any], varying: bool) -> PythonValues:
        if varying:
            plan = self._load_plan(op)
            if plan is not None:
                imm, size, views = plan
                offsets = self._offsets(inputs[0])
                if offsets is not None:
                    groups = [(offsets[2], None, offsets[3])]
                else:  # addresses into several buffers (a cluster's CTAs' shared memory)
                    groups = self._buffers(inputs[0])
                columns = self._gather(groups, imm, size, views) if groups else None
                if columns is not None:
                    out = []
                    for values, (_, mode) in zip(columns, views, strict=True):
                        if mode == "array":
                            out.append(self._vary(values))
                        elif mode == "ints":
                            out.append(self._scatter(values.tolist()))
                        elif mode == "bf16":
                            out.append(self._scatter(_bf16s(values.tolist())))
                        else:  # numpy scalars (f16)
                            out.append(self._scatter(list(values)))
                    return tuple(out)
            return self._each(op, inputs, self._body(op), None)
        return self._once(op, inputs)

    def _buffers(self, base: Any) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None:
        """The running threads' addresses (a varying value of Pointers into more than one
        buffer) by buffer: (its bytes, the threads' places in the running order, their
        offsets); None for anything else."""
        if type(base) is not Varying:
            return None
        v = base.v
        if type(v) is SplitPointers or type(v) is list:
            split = self._split(base)
            if split is not None:
                _, raws, which, _, at = split
                groups = []
                for k, raw in enumerate(raws):
                    places = np.flatnonzero(which == k)
                    if places.size:
                        groups.append((raw, places, at[places]))
                return groups
        if type(v) is not list:
            return None
        by_buffer: dict[int, tuple[np.ndarray, list[int], list[int]]] = {}
        for i, p in enumerate(v if self.full else [v[t] for t in self.active]):
            if type(p) is not Pointer:
                return None
            group = by_buffer.get(id(p.buffer))
            if group is None:
                group = by_buffer[id(p.buffer)] = (p._raw(), [], [])  # noqa: SLF001
            group[1].append(i)
            group[2].append(p.offset)
        return [(raw, np.array(places), np.array(at, dtype=np.int64)) for raw, places, at in by_buffer.values()]

    def _gather(self, groups: list[tuple[np.ndarray, Any, Any]], imm: int, size: int, views: list[Any]) -> list[np.ndarray] | None:
        """Each register's values of a load (``views``: its dtypes) for the running
        threads, read from each group's buffer at its threads' offsets (``places`` None:
        every running thread, in order); None where a thread's vector is not aligned or
        not in its buffer (the thread-by-thread run then raises the error)."""
        count = len(views)
        columns: list[Any] = [None] * count
        for raw, places, at in groups:
            at = np.asarray(at + imm)
            if not (
                raw.size % size == 0
                and not (at % (size * count)).any()
                and at.min() >= 0
                and at.max() + size * count <= raw.size
            ):
                return None
            index = at // size
            for i, (dtype, _) in enumerate(views):
                values = raw.view(dtype)[index + i]
                if places is None:
                    columns[i] = values
                else:
                    if columns[i] is None:
                        columns[i] = np.empty(len(self.active), dtype)
                    columns[i][places] = values
        return columns

    def run_st(self, op: StOp | StVecOp, inputs: list[Any], varying: bool) -> PythonValues:
        """A store of the running threads' registers into one buffer at once, where each
        thread's (aligned, in bounds) vector is its own (no two threads write a byte in
        common: the thread order does not matter); else per thread."""
        if varying:
            offsets = self._offsets(inputs[0])
            plan = self._store_plan(op)
            if offsets is not None and plan is not None:
                _, _, raw, at = offsets
                imm, size, kinds = plan
                n, count = len(self.active), len(kinds)
                at = np.broadcast_to(np.asarray(at + imm), (n,))
                if (
                    raw.size % size == 0
                    and not (at % (size * count)).any()
                    and at.min() >= 0
                    and at.max() + size * count <= raw.size
                    and np.unique(at).size == n
                ):
                    columns = self._store_bits(inputs[1:], kinds, n)
                    if columns is not None:
                        view = raw.view(np.dtype(f"uint{8 * size}"))
                        index = at // size
                        for i, bits in enumerate(columns):
                            view[index + i] = bits
                        return ()
            if offsets is None and plan is not None and self._split_store(inputs, plan):
                return ()
            return self._each(op, inputs, self._body(op), None)
        return self._once(op, inputs)

    def _split_store(self, inputs: list[Any], plan: Any) -> bool:
        """run_st's store into a few buffers (:meth:`_split`, buffers that share no
        memory), each buffer's threads as run_st's one buffer: every vector aligned, in
        bounds and its own; False (nothing written) where not."""
        split = self._split(inputs[0])
        if split is None:
            return False
        _, raws, which, _, offsets = split
        imm, size, kinds = plan
        n, count = len(self.active), len(kinds)
        groups = []
        for k, raw in enumerate(raws):
            places = np.flatnonzero(which == k)
            if not places.size:
                continue
            at = offsets[places] + imm
            if not (
                raw.size % size == 0
                and not (at % (size * count)).any()
                and at.min() >= 0
                and at.max() + size * count <= raw.size
                and np.unique(at).size == at.size
            ):
                return False
            groups.append((raw, places, at // size))
        columns = self._store_bits(inputs[1:], kinds, n)
        if columns is None:
            return False
        for raw, places, index in groups:
            view = raw.view(np.dtype(f"uint{8 * size}"))
            for i, bits in enumerate(columns):
                view[index + i] = bits[places]
        return True

    def _store_bits(self, values: list[Any], kinds: list[Any], n: int) -> list[np.ndarray] | None:
        """Each register's bits for the running threads (unsigned, the access's width), as
        ptx_memory's writer takes them, or None where a value is not of the register's
        kind (a float of another type, an int beyond int64)."""
        columns = []
        for value, (uint, kind) in zip(values, kinds):
            if kind in (ArithType.F16, ArithType.BF16):  # np.float16 / BF16 values: their bits
                v = value.v if type(value) is Varying else None
                items = [value] * n if v is None else v if self.full else [v[t] for t in self.active]
                if kind == ArithType.BF16:
                    if not all(type(e) is BF16 for e in items):
                        return None
                    columns.append(np.array([e.bits for e in items], dtype=uint))
                else:
                    if not all(type(e) is np.float16 for e in items):
                        return None
                    columns.append(np.array(items, dtype=np.float16).view(uint))
                continue
            if kind is not None:  # a float register of the access's width: its bits
                arr = self._array(value, kind)
                if arr is None:
                    return None
                columns.append(np.broadcast_to(np.asarray(arr).view(uint), (n,)))
                continue
            v = value.v if type(value) is Varying else None
            ints = [value] * n if v is None else v if self.full else [v[t] for t in self.active]
            try:
                arr = np.asarray(ints)
            except OverflowError:
                return None
            if arr.dtype.kind not in "iub":
                return None
            columns.append(arr.astype(np.int64).astype(uint))  # the low bits, as to_unsigned
        return columns

    def _store_plan(self, op: StOp | StVecOp) -> Any:
        """(immediate offset, element size, (uint dtype, float kind or None) per register)
        of a store whose registers are floats of the access's width (f16, bf16, f32, f64)
        or integers at least as wide, else None."""
        key = ("store", op)
        if key not in self.forms:
            t = str(op.type.data)
            width = int(t[1:])
            kinds = []
            registers = [op.value] if isinstance(op, StOp) else list(op.values)
            for r in registers:
                kind = _FLOAT_OF_CLASS.get(type(r.type))
                uint = np.dtype(f"uint{width}") if width in (8, 16, 32, 64) else None
                if uint is None:
                    kinds = None
                    break
                if (kind in vector.NP_FLOAT or kind in (ArithType.F16, ArithType.BF16)) and _FLOAT_WIDTH[kind] == width:
                    kinds.append((uint, kind))
                elif kind is None and isinstance(r.type, IntegerType) and r.type.width.data >= width:
                    kinds.append((uint, None))
                else:
                    kinds = None
                    break
            offset = op.offset.value.data if op.offset else 0
            self.forms[key] = (offset, width // 8, kinds) if kinds else None
        return self.forms[key]

    def _load_plan(self, op: LdOp | LdVecOp) -> Any:
        """(immediate offset, element size, (dtype, how the values are kept) per register)
        of a load whose registers are floats of the access's width (f32/f64 an array, f16
        numpy scalars, bf16 BF16 values of the bits) or integers, else None."""
        key = ("load", op)
        if key not in self.forms:
            t = str(op.type.data)
            width = int(t[1:])
            views = []
            for r in op.results:
                kind = _FLOAT_OF_CLASS.get(type(r.type))
                if kind in vector.NP_FLOAT and _FLOAT_WIDTH[kind] == width:
                    views.append((np.dtype(vector.NP_FLOAT[kind]), "array"))
                elif kind == ArithType.F16 and width == 16:
                    views.append((np.dtype(np.float16), "scalars"))
                elif kind == ArithType.BF16 and width == 16:
                    views.append((np.dtype(np.uint16), "bf16"))
                elif kind is None and isinstance(r.type, IntegerType) and r.type.width.data >= width:
                    signed = t[0] == "s" or r.type.width.data == width
                    views.append((np.dtype(f"{'int' if signed else 'uint'}{width}"), "ints"))
                else:
                    views = None
                    break
            offset = op.offset.value.data if op.offset else 0
            self.forms[key] = (offset, width // 8, views) if views and width >= 8 else None
        return self.forms[key]

    # endregion

    def run_func_call(self, op: func.CallOp, inputs: list[Any], varying: bool) -> PythonValues:
        return self._once(op, inputs)

    # endregion


def _cvt_form(op: CvtOp) -> tuple[Any, ...]:
    """What run_cvt does on arrays: ("int", source bits, signed, destination bits, signed,
    register width), ("bf16>f32",), ("f32>bf16",) (round to nearest even), or ("other",)."""
    d, a = op.dtype.data, op.atype.data
    rnd = op.rnd.data if op.rnd is not None else None
    if not d.is_float and not a.is_float:
        width = op.result.type.width.data if isinstance(op.result.type, IntegerType) else d.bits
        return ("int", a.bits, a.value[0] == "s", d.bits, d.value[0] == "s", width)
    if d == CvtType.F32 and a == CvtType.BF16 and rnd is None:
        return ("bf16>f32",)
    if d == CvtType.BF16 and a == CvtType.F32 and rnd in (None, CvtRounding.RN):
        return ("f32>bf16",)
    return ("other",)


def _fma_f64_scalar(a: Any, b: Any, c: Any) -> Any:
    """One lane of f64 ``fma.rn`` that :func:`vector.fma_f64` leaves to values.py."""
    return float_fma(ArithType.F64, a, b, c)


# shfl.sync's (destination threads, source threads) for (mode, b, c, the warps' (first
# thread, size)) of uniform b and c: the lanes are the same in every run of the op.
_SHFL_MOVES: dict[tuple[Any, ...], Any] = {}
_OUT_OF_WARP = object()


def _shfl_moves(mode: Any, b: int, c: int, warps: list[tuple[int, int]]) -> Any:
    """The (destination, source) thread indices of a shfl.sync over ``warps`` (int64
    arrays, in the warps' order), or ``_OUT_OF_WARP`` where a source lane is outside its
    warp (the run falls back)."""
    dst, src = [], []
    for first, size in warps:
        for lane in range(size):
            j = shfl_source_lane(mode, lane, b, c)
            if j >= size:
                return _OUT_OF_WARP
            dst.append(first + lane)
            src.append(first + j)
    return np.array(dst, np.int64), np.array(src, np.int64)


# arith.cmpi's predicates (eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge) on arrays
_CMPI_ARRAYS = (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
                np.less, np.less_equal, np.greater, np.greater_equal)


def _cmpi_form(op: arith.CmpiOp, index_bitwidth: int) -> tuple[Any, int, bool] | None:
    """(array comparison, width, unsigned) of an ``arith.cmpi`` of integers or indices,
    or None (memory.py's comparison then runs per thread, with its errors)."""
    width = cmpi_width(op, index_bitwidth)
    predicate = op.predicate.value.data
    if width is None or not 0 <= predicate < len(_CMPI_ARRAYS) or not 1 <= width <= 64:
        return None
    return _CMPI_ARRAYS[predicate], width, predicate >= 6


# BF16 values by their bits, made once each (a BF16 is immutable: equal by its bits).
_BF16_VALUES: dict[int, BF16] = {}


def _bf16s(bits: list[int]) -> list[BF16]:
    """The BF16 values of ``bits``."""
    table = _BF16_VALUES
    out = []
    for b in bits:
        v = table.get(b)
        if v is None:
            v = table[b] = BF16(b)
        out.append(v)
    return out


# values.int_binary's operations whose result's low bits are those of the operands' (add,
# sub, mul.lo and the bitwise ones): ``(x op y)`` of Python ints, its low w bits read as
# signed, is its value for every pair of ints (to_signed((to_unsigned(x) op to_unsigned(y)))).
_WRAPPING: dict[str, Any] = {
    "add": lambda m, h, a, b: [((x + y) & m ^ h) - h for x, y in zip(a, b)],
    "sub": lambda m, h, a, b: [((x - y) & m ^ h) - h for x, y in zip(a, b)],
    "mul.lo": lambda m, h, a, b: [((x * y) & m ^ h) - h for x, y in zip(a, b)],
    "and": lambda m, h, a, b: [((x & y) & m ^ h) - h for x, y in zip(a, b)],
    "or": lambda m, h, a, b: [((x | y) & m ^ h) - h for x, y in zip(a, b)],
    "xor": lambda m, h, a, b: [((x ^ y) & m ^ h) - h for x, y in zip(a, b)],
}


def _wrapping(form: Any, w: int, a: Any, b: Any) -> list[int] | None:
    """values.int_binary of each pair of ``a`` and ``b`` (a list, or one value for every
    thread) for an operation of :data:`_WRAPPING`, on Python ints; None where a value is
    not an int (a bool, a numpy integer: vector.int_binary or the scalar function then)."""
    for x in (a, b):
        if type(x) is list:
            for e in x:
                if type(e) is not int:
                    return None
        elif type(x) is not int:
            return None
    if type(a) is not list:
        a = repeat(a)
    elif type(b) is not list:
        b = repeat(b)
    return form((1 << w) - 1, 1 << (w - 1), a, b)


def _select(on_true: Any, on_false: Any, cond: Any) -> Any:
    return on_true if cond else on_false


def _at(x: Any, t: int) -> Any:
    return x.v[t] if type(x) is Varying else x


def _no_terminator(result: Any) -> PythonValues:
    values, terminator = result
    if terminator is not None:
        raise Fallback("a terminator's value in the middle of a block")
    return values


_SPECIAL: dict[type[Operation], Any] = {
    scf.IfOp: LockstepInterpreter.run_if,
    scf.ForOp: LockstepInterpreter.run_for,
    scf.WhileOp: LockstepInterpreter.run_while,
    memref.AllocaOp: LockstepInterpreter.run_alloca,
    UnrealizedConversionCastOp: LockstepInterpreter.run_cast,
    BarSyncOp: LockstepInterpreter.run_bar_sync,
    BarrierClusterArriveOp: LockstepInterpreter.run_cluster_arrive,
    BarrierClusterWaitOp: LockstepInterpreter.run_cluster_wait,
    MbarrierTryWaitParityOp: LockstepInterpreter.run_try_wait,
    ShflSyncOp: LockstepInterpreter.run_shfl,
    ReduxSyncOp: LockstepInterpreter.run_redux,
    func.CallOp: LockstepInterpreter.run_func_call,
    SetpOp: LockstepInterpreter.run_setp,
    FmaOp: LockstepInterpreter.run_fma,
    PackB32x2Op: LockstepInterpreter.run_pack,
    UnpackB32x2Op: LockstepInterpreter.run_unpack,
    **{t: LockstepInterpreter.run_binary for t in (AddOp, SubOp, MulOp, MulLoOp, MaxOp, MinOp)},
    **{t: LockstepInterpreter.run_bitwise for t in (AndOp, OrOp, XorOp, ShlOp, ShrOp)},
    **{t: LockstepInterpreter.run_math for t in (SqrtOp, RcpOp, FloatDivOp, Ex2Op, Lg2Op, AbsOp, NegOp)},
    CvtOp: LockstepInterpreter.run_cvt,
    MovOp: LockstepInterpreter.run_mov,
    PtrAddOp: LockstepInterpreter.run_add_ptr,
    LdOp: LockstepInterpreter.run_ld,
    LdVecOp: LockstepInterpreter.run_ld,
    StOp: LockstepInterpreter.run_st,
    StVecOp: LockstepInterpreter.run_st,
    SelpOp: LockstepInterpreter.run_selp,
    arith.SelectOp: LockstepInterpreter.run_select,
    arith.CmpiOp: LockstepInterpreter.run_cmpi,
    **{t: LockstepInterpreter.run_thread_constant for t in _THREAD_CONSTANTS},
}


_MOV_FLOATS: dict[ArithType, tuple[Any, Any]] = {ArithType.F32: (np.uint32, np.float32), ArithType.F64: (np.uint64, np.float64)}


def _mov_form(op: MovOp) -> tuple[Any, Any, Any] | None:
    """(the mask of the bits kept, the unsigned type of the float's width, the float
    type) of a ``mov`` of an integer into an f32 or f64 register, else None."""
    kind = _FLOAT_OF_CLASS.get(type(op.result.type))
    src = op.src.type
    if kind not in _MOV_FLOATS or not isinstance(src, IntegerType):
        return None
    keep = min(_FLOAT_WIDTH[kind], src.width.data)
    return np.uint64((1 << keep) - 1), *_MOV_FLOATS[kind]


# Why CTAs fell back, counted (the tests check that the kernels they mean to run in
# lockstep do).
FALLBACKS: Counter[str] = Counter()


def run_cta_lockstep(
    module: ModuleOp,
    callee: func.FuncOp,
    args: list[Any],
    cta: Any,
    threads: list[Any],
    impls: Any,
    index_bitwidth: int,
    cluster: bool = False,
    forms: dict[Any, Any] | None = None,
) -> bool:
    """Run the CTA's ``threads`` in lockstep (``impls``: the CTA's implementation table);
    False where the run falls back (the module docstring), the buffers then left as the
    run left them (threads.py puts them back). ``cluster``: ``threads`` are every thread
    of a cluster (clusters.py's scheduler and implementations): a shared buffer is each
    CTA's own, the block id and cluster rank vary, and the cluster barrier, the mbarrier
    waits and their ``scf.while`` run in lockstep (a wait whose phase is still pending
    falls back). ``forms``: what the run's CTAs read of its ops, shared (run.RunMemo)."""
    interpreter = LockstepInterpreter(module, index_bitwidth, impls)
    interpreter.start(cta, threads, cluster, forms)
    try:
        interpreter.call_op(callee, tuple(args))
    except Exception as e:  # any: the thread-by-thread run gives the error with its thread
        FALLBACKS[str(e) if isinstance(e, Fallback) else type(e).__name__] += 1
        return False
    finally:
        cta.current = None
    return True
