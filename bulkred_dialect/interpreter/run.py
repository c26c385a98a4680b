"""Running a lowered kernel: an interpreter with every implementation registered, and
a call of one ``func.func`` on numpy buffers."""

from __future__ import annotations

import importlib.util
import numbers
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp, StridedLayoutAttr
from xdsl.interpreter import Interpreter, PythonValues, ReturnedValues, Successor, impl
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import InterpretationError
from xdsl.utils.scoped_dict import ScopedDict

from bulkred_dialect.errors import (
    ArgumentError,
    InterpretError,
    KernelNotFoundError,
    SignatureValueError,
)
from bulkred_dialect.interpreter.kernel_ids import KernelIdFunctions, ThreadIds
from bulkred_dialect.interpreter.memory import (
    STORAGE_DTYPE,
    BufferFunctions,
    element_format,
    load_element,
    storage_dtype,
    store_element,
)
from bulkred_dialect.interpreter.ptx_arith import PtxArithFunctions
from bulkred_dialect.interpreter.ptx_cvt import PtxCvtFunctions, PtxPredicateFunctions
from bulkred_dialect.interpreter.ptx_memory import PtxMemoryFunctions
from bulkred_dialect.interpreter.values import coerce_float, to_signed
from bulkred_dialect.ops.tile import BulkCopyOp, BulkReduceOp, NormalizeRowsOp, ReduceListOp, ReduceOp, ScaleListOp


@contextmanager
def _package_not_run(name: str) -> Iterator[None]:
    """Submodules of the package ``name`` imported in the block without running the
    package's ``__init__.py`` (where the package is not loaded yet): it is stood in
    for by a module of its own spec, not executed (its ``__path__`` finds the
    submodules), then taken away, so that a later ``import name`` runs the package as
    usual and finds those submodules loaded.

    For ``xdsl.interpreters``, whose ``__init__.py`` imports every interpreter xDSL has
    (riscv, linalg, snitch, ...): about 0.2 CPU-s of each process that runs a kernel on
    the CPU, for the five used here."""
    if name in sys.modules:
        yield
        return
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations is not None
    sys.modules[name] = importlib.util.module_from_spec(spec)
    try:
        yield
    finally:
        del sys.modules[name]
        parent, _, child = name.rpartition(".")
        sys.modules[parent].__dict__.pop(child, None)


with _package_not_run("xdsl.interpreters"):
    from xdsl.interpreters.arith import ArithFunctions
    from xdsl.interpreters.builtin import BuiltinFunctions
    from xdsl.interpreters.func import FuncFunctions
    from xdsl.interpreters.memref import MemRefFunctions
    from xdsl.interpreters.scf import ScfFunctions
    from xdsl.interpreters.shaped_array import ShapedArray


_MISSING = object()


class KernelInterpreter(Interpreter):
    """xDSL's :class:`~xdsl.interpreter.Interpreter` with a leaner loop over a region's
    ops (a kernel runs millions of them per test: the generic loop's per-op work, the
    operand and result tuples made anew, the implementation looked up through two calls,
    was most of the interpreter's time).

    Same semantics as :meth:`Interpreter.run_ssacfg_region`: a scope per block entered,
    an op's operand values looked up through the enclosing scopes, the registered
    implementation called with them (an exception it raises becomes xDSL's located
    "Error while interpreting op" error), its result count checked (xDSL's message), the terminator's
    :class:`ReturnedValues` ending the region and its :class:`Successor` entering the
    next block. Each block's (op, operands, results) are taken once per interpreter
    implementation table (the IR is not changed while it runs); the implementation is
    looked up at each op, so that a later ``register_implementations`` takes effect; an
    ``@impl`` (not a terminator) is called without its wrapper's ``OpImplResult``, its
    function's values taken as the results. With listeners the generic loop runs."""

    def run_ssacfg_region(self, region: Region, args: PythonValues, name: str = "unknown") -> PythonValues:
        if self.listeners:
            return super().run_ssacfg_region(region, args, name)
        block = region.blocks.first
        if block is None:
            return ()
        impls = self._impls
        table = impls._impl_dict  # noqa: SLF001
        plans = _block_plans(impls)
        bodies = _IMPL_BODIES
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
                for v in operands:
                    value = local.get(v, _MISSING)
                    if value is _MISSING:
                        value = scope[v]  # the enclosing scopes (KeyError as xDSL's)
                    inputs.append(value)
                entry = table.get(op_type)
                if entry is None:
                    raise InterpretationError(f"Could not find interpretation function for op {op.name}")
                ft, fn = entry
                body = bodies.get(fn, _MISSING)
                if body is _MISSING:
                    body = bodies[fn] = _impl_body(fn)
                try:
                    if body is not None:  # an @impl: its function's values, without the wrapper
                        values = body(ft, self, op, tuple(inputs))
                        terminator = None
                    else:
                        result = fn(ft, self, op, tuple(inputs))
                        values, terminator = result
                except Exception as e:
                    op.emit_error("Error while interpreting op", e)
                if len(op_results) != len(values):
                    raise InterpretationError(
                        f"Number of operation results ({len(op_results)}) doesn't match the "
                        f"number of implementation results ({len(values)})."
                    )
                for r, value in zip(op_results, values):
                    local[r] = value
                if terminator is not None:
                    if isinstance(terminator, ReturnedValues):
                        results = terminator.values
                    elif isinstance(terminator, Successor):
                        block, args = terminator
                    break
        self._ctx = initial_scope
        return results


# The code of the wrapper xDSL's ``@impl`` puts around a non-terminator's implementation
# (``OpImplResult(func(...), None)``): the loop calls ``func`` itself.
_IMPL_CODE = impl(arith.AddiOp)(lambda ft, interpreter, op, values: ()).__code__


_IMPL_BODIES: dict[Any, Any] = {}


def _impl_body(fn: Any) -> Any:
    """The function an ``@impl`` wrapper ``fn`` calls (its values are the op's results,
    never a terminator), or None for any other implementation (``@impl_terminator``,
    ``@impl_callable``, a hand-written one), which is called as it is."""
    code = getattr(fn, "__code__", None)
    if code is not _IMPL_CODE or fn.__closure__ is None:
        return None
    (cell,) = [c for name, c in zip(code.co_freevars, fn.__closure__) if name == "func"] or [None]
    return None if cell is None else cell.cell_contents


def _block_plans(impls: Any) -> dict[Block, list[tuple[Any, ...]]]:
    plans = getattr(impls, "_bulkred_block_plans", None)
    if plans is None:
        plans = {}
        impls._bulkred_block_plans = plans  # noqa: SLF001
    return plans


def _plan(block: Block) -> list[tuple[Any, ...]]:
    """(op, operand values, result values, op type) of each op of ``block`` (the
    operands read from the op's own tuple: ``op.operands`` is a view made per call)."""
    plan = []
    op = block._first_op  # noqa: SLF001 (the block's ops by their links, as Block.ops follows them)
    while op is not None:
        plan.append((op, tuple(op._operands), tuple(op.results), type(op)))  # noqa: SLF001
        op = op._next_op  # noqa: SLF001
    return plan


class RunMemo:
    """What the interpreters of one run share (a grid's CTAs or clusters, run one after
    another on IR that does not change meanwhile): the implementations that hold
    nothing but what they read once per op (xDSL's arith/memref/scf/func/builtin, the
    buffers and constants, the ptx arithmetic, memory and cvt ops), each block's plan
    (:func:`_plan`) and the lockstep run's forms of its ops. A new run takes a new one:
    a module lowered or changed in place between runs is read again."""

    def __init__(self) -> None:
        self.functions = (ArithFunctions(), MemRefFunctions(), ScfFunctions(), FuncFunctions(), BuiltinFunctions())
        self.overrides = (BufferFunctions(),)
        self.ptx = (PtxArithFunctions(), PtxMemoryFunctions(), PtxCvtFunctions(), PtxPredicateFunctions())
        self.plans: dict[Block, list[tuple[Any, ...]]] = {}
        self.forms: dict[Any, Any] = {}


def make_interpreter(module: ModuleOp, ids: ThreadIds = ThreadIds(), memo: RunMemo | None = None) -> Interpreter:
    """An interpreter for ``module`` with xDSL's arith/memref/scf/func/builtin
    implementations, the exact buffer and constant overrides, the ptx arithmetic ops,
    the ptx memory ops on addresses (ld, st, ld.vec, st.vec, atom, red), ptx.cvt and the
    kernel index ops of the one thread ``ids``; ``memo``: the run's shared
    implementations and plans (:class:`RunMemo`; a new one where None)."""
    memo = memo if memo is not None else RunMemo()
    interpreter = KernelInterpreter(module)
    for functions in memo.functions:
        interpreter.register_implementations(functions)
    for functions in memo.overrides:
        interpreter.register_implementations(functions, override=True)
    for functions in memo.ptx:
        interpreter.register_implementations(functions)
    interpreter.register_implementations(KernelIdFunctions(ids))
    interpreter._impls._bulkred_block_plans = memo.plans  # noqa: SLF001
    return interpreter


def _as_buffer(arg: Any, t: MemRefType, label: str, index_bitwidth: int) -> np.ndarray:
    """The numpy buffer for argument ``label`` (``argument 0 (%A)``) of type ``t``."""
    shape = list(t.get_shape())
    if isinstance(arg, ShapedArray):
        if list(arg.shape) != shape:
            raise SignatureValueError(f"{label}: shape {arg.shape} does not match {t}")
        buf = np.empty(shape, dtype=storage_dtype(t.element_type, index_bitwidth))
        for idx in arg.indices():
            store_element(buf, idx, t.element_type, arg.load(idx), index_bitwidth)
        return buf
    if not isinstance(arg, np.ndarray):
        raise SignatureValueError(f"{label}: expected a numpy array for {t}, got {type(arg).__name__}")
    if len(arg.shape) != len(shape) or any(w >= 0 and g != w for g, w in zip(arg.shape, shape)):
        raise SignatureValueError(f"{label}: shape {list(arg.shape)} does not match {t}")
    accepted = accepted_dtypes(t.element_type, index_bitwidth)
    if arg.dtype not in accepted:
        raise SignatureValueError(
            f"{label}: dtype {arg.dtype} does not hold the elements of {t} "
            f"(expected {' or '.join(_dtype_name(d, t.element_type) for d in accepted)})"
        )
    if isinstance(t.layout, StridedLayoutAttr):
        return _view_span(arg, t, label)
    return arg


def _view_span(arg: np.ndarray, t: MemRefType, label: str) -> np.ndarray:
    """A view parameter (``strided<[...]>``, offset 0): the 1-D run of memory from the
    numpy view ``arg``'s first element to its last, in place (its element strides must
    be the layout's), so that the kernel's addresses (first element + index x stride)
    read the view's elements as on the GPU."""
    want = list(t.get_strides() or [])
    got = [s // arg.itemsize if s % arg.itemsize == 0 else None for s in arg.strides]
    shape = list(arg.shape)
    if t.get_offset() != 0 or any(g != w for d, g, w in zip(shape, got, want, strict=True) if d > 1):
        raise SignatureValueError(f"{label}: element strides {got} do not match {t}")
    span = 1 + sum((d - 1) * s for d, s in zip(shape, want, strict=True)) if arg.size else 0
    return np.lib.stride_tricks.as_strided(arg, shape=(span,), strides=(arg.itemsize,))


def accepted_dtypes(t: Attribute, index_bitwidth: int = 64) -> list[np.dtype]:
    """The numpy dtypes a caller's buffer of element type ``t`` may have: a float type as
    its numpy float or as the bits in the unsigned integer of its width (bf16 only as
    bits); an integer (signless) as the signed or unsigned integer of its width."""
    kind, width = element_format(t, index_bitwidth)
    bits = np.dtype(f"uint{width}")
    if isinstance(t, IntegerType) and t.width.data == 1:  # bool (i1): one byte
        return [np.dtype(np.bool_), bits]
    if kind is None:
        return [np.dtype(f"int{width}"), bits]
    native = np.dtype(STORAGE_DTYPE[kind])
    return [native] if native == bits else [native, bits]


def _dtype_name(d: np.dtype, element_type: Attribute) -> str:
    """``uint32 bits`` for the bits of a float element, else the dtype's name."""
    kind, _ = element_format(element_type)
    return f"{d} bits" if kind is not None and d.kind == "u" else str(d)


def run_kernel(
    module: ModuleOp,
    name: str,
    *arrays: Any,
    thread_id: tuple[int, int, int] = (0, 0, 0),
    block_id: tuple[int, int, int] = (0, 0, 0),
    cluster_rank: int = 0,
) -> tuple[np.ndarray, ...]:
    """Call ``func.func @name`` of ``module`` and return its memref arguments after the call.

    A numpy argument is the buffer itself and is mutated in place; its dtype must be one
    of :func:`accepted_dtypes` (f32 as float32 or uint32 bits, bf16 as uint16 bits, i32
    as int32 or uint32, ...), else a :class:`~bulkred_dialect.errors.SignatureValueError`
    (a ``ValueError``) names the argument and both dtypes; a
    ``ShapedArray`` argument is copied into a numpy buffer and the result written back.
    Non-memref arguments (scalars) are passed through, converted to the argument's type.

    One thread runs, with the ids ``thread_id``, ``block_id`` and ``cluster_rank``
    (:mod:`bulkred_dialect.interpreter.kernel_ids`). An unknown ``name`` raises
    :class:`~bulkred_dialect.errors.KernelNotFoundError` (a ``KeyError``) listing the
    functions; a tile-level module (not yet lowered by ``lower-tile-reductions``) an
    :class:`~bulkred_dialect.errors.InterpretError`.
    """
    callee = find_kernel(module, name, "run_kernel")
    ids = ThreadIds(_ids(thread_id, "thread_id"), _ids(block_id, "block_id"), _count(cluster_rank, "cluster_rank"))
    inputs = callee.function_type.inputs.data
    interpreter = make_interpreter(module, ids)
    bits = interpreter.index_bitwidth
    args = prepare_arguments(callee, arrays, bits)
    interpreter.call_op(callee, tuple(args))
    results: list[np.ndarray] = []
    for t, a, buf in zip(inputs, arrays, args):
        if not isinstance(t, MemRefType):
            continue
        if isinstance(a, ShapedArray):
            for idx in a.indices():
                a.store(idx, _python_value(load_element(buf, idx, t.element_type, bits)))
        results.append(buf)
    return tuple(results)


def prepare_arguments(callee: func.FuncOp, arrays: Sequence[Any], bits: int) -> list[Any]:
    """The interpreter's values of ``callee``'s arguments: numpy buffers for memrefs
    (see :func:`run_kernel`), scalars converted to their types."""
    inputs = callee.function_type.inputs.data
    if len(inputs) != len(arrays):
        raise SignatureValueError(f"'{callee.sym_name.data}' takes {len(inputs)} arguments, got {len(arrays)}")
    args: list[Any] = []
    entry = callee.body.blocks.first
    hints = [arg.name_hint for arg in entry.args] if entry is not None else [None] * len(inputs)
    for i, (t, a) in enumerate(zip(inputs, arrays)):
        if isinstance(t, MemRefType):
            label = f"argument {i}" + (f" (%{hints[i]})" if hints[i] else "")
            args.append(_as_buffer(a, t, label, bits))
            continue
        kind, width = element_format(t, bits)
        if isinstance(a, bool) or not isinstance(a, numbers.Real) or (kind is None and not isinstance(a, numbers.Integral)):
            want = "a number" if kind is not None else "an integer"
            raise SignatureValueError(
                f"argument {i}" + (f" (%{hints[i]})" if hints[i] else "") + f": expected {want} for {t}, got {type(a).__name__} {a!r:.40}"
            )
        args.append(coerce_float(kind, a) if kind is not None else to_signed(int(a), width))
    return args


# Tile-level ops the interpreter has no implementation for: it runs the IR after
# lower-tile-reductions (docs/DEVELOPING.md, "Dialect levels"; bulkred.copy it runs).
_TILE_LEVEL_OPS = (ReduceOp, BulkCopyOp, BulkReduceOp, NormalizeRowsOp, ReduceListOp, ScaleListOp)
_IS_TILE_LEVEL: dict[type, bool] = {}


def find_kernel(module: Any, name: Any, fn: str) -> func.FuncOp:
    """``func.func @name`` of ``module``, checked to be one the interpreter can run: a
    project error (one line) for a module or name of the wrong kind, a name that is not
    there (listing the functions) or a tile-level kernel."""
    if not isinstance(module, ModuleOp):
        raise ArgumentError(f"'module' of {fn} must be a builtin.module, got {type(module).__name__}")
    if not isinstance(name, str):
        raise ArgumentError(f"'name' of {fn} must be a function name (a str), got {type(name).__name__} {name!r:.40}")
    callee = SymbolTable.lookup_symbol(module, name)
    if not isinstance(callee, func.FuncOp):
        names = ", ".join(op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)) or "none"
        raise KernelNotFoundError(f"no func.func named '{name}' in the module (functions: {names})")
    tile_op = _first_tile_op(callee)
    if tile_op is not None:
        raise InterpretError(
            f"'{name}' holds the tile-level op '{tile_op.name}': the interpreter runs the module after "
            "lower-tile-reductions (level 2)"
        )
    return callee


def _first_tile_op(callee: func.FuncOp) -> Operation | None:
    """The first tile-level op of ``callee`` in ``walk()``'s order (an op before its
    regions), found with a stack of ops rather than xDSL's nested generators (a kernel's
    thousands of ops are walked at each run): on the stack, the next op to visit at each
    level, each block's ops followed by their links (xDSL 0.74's ``_first_op`` /
    ``_next_op``, as ``Block.ops`` follows them)."""
    if isinstance(callee, _TILE_LEVEL_OPS):
        return callee
    tile = _IS_TILE_LEVEL
    stack: list[Operation | None] = [b._first_op for r in reversed(callee.regions) for b in reversed(r.blocks)]  # noqa: SLF001
    while stack:
        op = stack.pop()
        if op is None:
            continue
        is_tile = tile.get(type(op))
        if is_tile is None:  # (isinstance's answer, per op class: an ABC's check is slow)
            is_tile = tile[type(op)] = issubclass(type(op), _TILE_LEVEL_OPS)
        if is_tile:
            return op
        stack.append(op._next_op)  # noqa: SLF001 (after the ops of op's regions)
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                stack.append(block._first_op)  # noqa: SLF001
    return None


def _ids(v: Any, field: str) -> tuple[int, int, int]:
    if not isinstance(v, tuple | list) or len(v) != 3 or not all(_is_count(x) for x in v):
        raise ArgumentError(f"'{field}' must be a tuple of 3 integers >= 0, got {v!r:.40}")
    return (int(v[0]), int(v[1]), int(v[2]))


def _is_count(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 0


def _count(v: Any, field: str) -> int:
    if not _is_count(v):
        raise ArgumentError(f"'{field}' must be an integer >= 0, got {v!r:.40}")
    return int(v)


def _python_value(v: Any) -> Any:
    """An element as xDSL's ShapedArray stores it (Python float or int)."""
    if isinstance(v, int):
        return v
    return float(v)
