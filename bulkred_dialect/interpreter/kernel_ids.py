"""Interpreter implementations of the kernel index ops, the unsigned index arithmetic a
tile loop uses, and ``memref.subview``.

The interpreter runs one thread: ``gpu.thread_id``/``block_id``/``lane_id`` and
``bulkred.cluster_rank`` read the ids it was given (:class:`ThreadIds`, all 0 by
default), ``gpu.block_dim``/``grid_dim`` and ``bulkred.cluster_size`` the kernel's
``bulkred.launch`` (1 without one). Running a kernel once per CTA with
``run_kernel(..., block_id=(b, 0, 0))`` simulates a grid whose CTAs do not communicate.

``memref.subview`` is a numpy view of its source (static sizes and strides), so loads
and stores through it read and write the source buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.interpreter.values import to_signed, to_unsigned
from bulkred_dialect.ops.tile import ClusterRankOp, ClusterSizeOp, LaunchAttr, enclosing_kernel, kernel_launch


@dataclass(frozen=True)
class ThreadIds:
    """The ids of the one thread the interpreter runs."""

    thread_id: tuple[int, int, int] = (0, 0, 0)
    block_id: tuple[int, int, int] = (0, 0, 0)
    cluster_rank: int = 0


def _axis(op: Operation) -> int:
    return "xyz".index(str(op.dimension.data))  # type: ignore[attr-defined]


def _launch(op: Operation) -> LaunchAttr | None:
    kernel = enclosing_kernel(op)
    return kernel_launch(kernel) if isinstance(kernel, func.FuncOp) else None


def _width(interpreter: Interpreter, op: Operation) -> int:
    t = op.results[0].type
    if isinstance(t, IndexType):
        return interpreter.index_bitwidth
    assert isinstance(t, IntegerType)
    return t.width.data


@register_impls
class KernelIdFunctions(InterpreterFunctions):
    """gpu id ops, bulkred.cluster_rank/cluster_size, arith.divui/remui/minui/maxui/minsi/
    maxsi and memref.subview."""

    def __init__(self, ids: ThreadIds = ThreadIds()):
        self.ids = ids

    @impl(gpu.ThreadIdOp)
    def run_thread_id(self, interpreter: Interpreter, op: gpu.ThreadIdOp, args: PythonValues) -> PythonValues:
        return (self.ids.thread_id[_axis(op)],)

    @impl(gpu.BlockIdOp)
    def run_block_id(self, interpreter: Interpreter, op: gpu.BlockIdOp, args: PythonValues) -> PythonValues:
        return (self.ids.block_id[_axis(op)],)

    @impl(gpu.LaneIdOp)
    def run_lane_id(self, interpreter: Interpreter, op: gpu.LaneIdOp, args: PythonValues) -> PythonValues:
        launch = _launch(op)
        ntid = launch.block_dims if launch is not None else (1, 1, 1)
        x, y, z = self.ids.thread_id
        return (((z * ntid[1] + y) * ntid[0] + x) % 32,)

    @impl(gpu.BlockDimOp)
    def run_block_dim(self, interpreter: Interpreter, op: gpu.BlockDimOp, args: PythonValues) -> PythonValues:
        launch = _launch(op)
        return (launch.block_dims[_axis(op)] if launch is not None else 1,)

    @impl(gpu.GridDimOp)
    def run_grid_dim(self, interpreter: Interpreter, op: gpu.GridDimOp, args: PythonValues) -> PythonValues:
        launch = _launch(op)
        return (launch.grid_dims[_axis(op)] if launch is not None else 1,)

    @impl(ClusterRankOp)
    def run_cluster_rank(self, interpreter: Interpreter, op: ClusterRankOp, args: PythonValues) -> PythonValues:
        return (self.ids.cluster_rank,)

    @impl(ClusterSizeOp)
    def run_cluster_size(self, interpreter: Interpreter, op: ClusterSizeOp, args: PythonValues) -> PythonValues:
        launch = _launch(op)
        c = launch.cluster_dims if launch is not None else (1, 1, 1)
        return (c[0] * c[1] * c[2],)

    def _unsigned(self, interpreter: Interpreter, op: Operation, args: PythonValues, f) -> PythonValues:
        w = _width(interpreter, op)
        a, b = (to_unsigned(int(x), w) for x in args)
        return (to_signed(f(a, b), w),)

    def _signed(self, interpreter: Interpreter, op: Operation, args: PythonValues, f) -> PythonValues:
        w = _width(interpreter, op)
        a, b = (to_signed(int(x), w) for x in args)
        return (to_signed(f(a, b), w),)

    @staticmethod
    def _nonzero(b: int) -> int:
        if b == 0:
            raise InterpretationError("integer division by zero")
        return b

    @impl(arith.DivUIOp)
    def run_divui(self, interpreter: Interpreter, op: arith.DivUIOp, args: PythonValues) -> PythonValues:
        return self._unsigned(interpreter, op, args, lambda a, b: a // self._nonzero(b))

    @impl(arith.RemUIOp)
    def run_remui(self, interpreter: Interpreter, op: arith.RemUIOp, args: PythonValues) -> PythonValues:
        return self._unsigned(interpreter, op, args, lambda a, b: a % self._nonzero(b))

    @impl(arith.MinUIOp)
    def run_minui(self, interpreter: Interpreter, op: arith.MinUIOp, args: PythonValues) -> PythonValues:
        return self._unsigned(interpreter, op, args, min)

    @impl(arith.MaxUIOp)
    def run_maxui(self, interpreter: Interpreter, op: arith.MaxUIOp, args: PythonValues) -> PythonValues:
        return self._unsigned(interpreter, op, args, max)

    @impl(arith.MinSIOp)
    def run_minsi(self, interpreter: Interpreter, op: arith.MinSIOp, args: PythonValues) -> PythonValues:
        return self._signed(interpreter, op, args, min)

    @impl(arith.MaxSIOp)
    def run_maxsi(self, interpreter: Interpreter, op: arith.MaxSIOp, args: PythonValues) -> PythonValues:
        return self._signed(interpreter, op, args, max)

    @impl(memref.SubviewOp)
    def run_subview(self, interpreter: Interpreter, op: memref.SubviewOp, args: PythonValues) -> PythonValues:
        src, *rest = args
        interpreter.interpreter_assert(isinstance(src, np.ndarray), "memref.subview of a non-buffer")
        sizes = list(op.static_sizes.get_values())
        strides = list(op.static_strides.get_values())
        if op.sizes or op.strides or DYNAMIC_INDEX in sizes or DYNAMIC_INDEX in strides:
            raise InterpretationError("memref.subview with dynamic sizes or strides is not supported")
        if len(op.result.type.get_shape()) != src.ndim:  # type: ignore[union-attr]
            raise InterpretationError("a rank-reducing memref.subview is not supported")
        dynamic = iter(int(v) for v in rest[: len(op.offsets)])
        offsets = [next(dynamic) if o == DYNAMIC_INDEX else o for o in op.static_offsets.get_values()]
        index = []
        for axis, (o, n, s, d) in enumerate(zip(offsets, sizes, strides, src.shape)):
            last = o + (n - 1) * s
            if o < 0 or last >= d:
                raise InterpretationError(
                    f"memref.subview axis {axis}: offset {o}, size {n}, stride {s} leaves a buffer of shape {list(src.shape)}"
                )
            index.append(slice(o, last + 1, s))
        return (src[tuple(index)],)
