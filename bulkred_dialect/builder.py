"""A Python builder for tile-level bulkred kernels, for users who do not write MLIR.

It builds the same IR as the MLIR text (``func.func`` with ``bulkred.launch``,
``memref.alloca`` buffers, ``bulkred.*`` ops) and reads like the TIRx card's program
(``docs/builder.md``; the TIRx reduction card is written out in ``docs/lowering.md``)::

    from bulkred_dialect import builder as T

    with T.kernel("test_func", grid=[1], block=[1], cluster=[1]) as k:
        A = k.param("A", [32], "float32")
        B = k.param("B", [1], "float32")
        A_local = T.alloc_buffer([32], "float32", scope="local", name="A_local")
        B_local = T.alloc_buffer([1], "float32", scope="local", name="B_local")
        T.copy(A, A_local)
        T.sum(B_local, A_local, accum=False)
        T.copy(B_local, B)
    module = k.module(target="sm_100a")

Argument order: reductions follow TIRx, destination first (``T.sum(dst, src)``,
``T.reduce(kind, dst, src)``); data movement follows the IR, source first
(``T.copy(src, dst)``, ``T.bulk_copy(src, dst)``, ``T.bulk_reduce(kind, src, dst)``).

Errors: a bad builder argument (unknown dtype, scope or kind, a value that is not a
buffer, a malformed shape, an argument of the wrong type) raises
:class:`~bulkred_dialect.errors.BuildError` (a ``ValueError``) at once, in one line
naming the argument, what was expected and what was given. Rules between operands
(shapes, element types, directions) belong to the ops' verifiers: :meth:`Kernel.module` verifies the module and
raises a :class:`~bulkred_dialect.diagnostics.LocatedError` located at the Python line
that built the offending op (``my_kernel.py:12:5: error: 'bulkred.reduce' ...``).

The ops are inserted through xDSL's :class:`~xdsl.builder.ImplicitBuilder`, so plain
xDSL ops created inside a ``with T.kernel(...)`` block land in the kernel too.
"""

from __future__ import annotations

import functools
import itertools
import numbers
import os
import re
import sys
import threading
from collections.abc import Sequence
from numbers import Integral
from contextlib import ExitStack
from types import CodeType, TracebackType

from xdsl.builder import Builder, ImplicitBuilder
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    FileLineColLoc,
    FunctionType,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.diagnostics import verify_located
from bulkred_dialect.errors import BuildError
from bulkred_dialect.ops.dtypes import ELEMENT_DTYPES, GRID_DTYPES
from bulkred_dialect.ops.target import Target, TargetError
from bulkred_dialect.ops.tile import (
    BulkCopyOp,
    BulkReduceOp,
    ClusterRankOp,
    ClusterSizeOp,
    CopyOp,
    ExecScope,
    FUSED_KINDS,
    MapFn,
    LAUNCH_ATTR,
    LaunchAttr,
    MemoryScope,
    NormKind,
    NormalizeRowsOp,
    ReduceKind,
    ReduceKindAttr,
    ReduceListOp,
    ReduceOp,
    ScaleListOp,
    buffer_type,
    scope_of,
)
from bulkred_dialect.passes.check_target import TARGET_ATTR
from bulkred_dialect.universe import context

__all__ = [
    "DTYPES",
    "add",
    "Kernel",
    "alloc_buffer",
    "alloc_mbarrier",
    "alloc_shared",
    "bulk_copy",
    "bulk_reduce",
    "block_dim",
    "block_id",
    "cluster_rank",
    "cluster_size",
    "context",
    "copy",
    "div",
    "dtype_of",
    "grid_dim",
    "kernel",
    "lane_id",
    "max_of",
    "min_of",
    "mul",
    "rem",
    "serial",
    "sub",
    "thread_id",
    "view",
    "add",
    "max",
    "min",
    "module",
    "normalize_rows",
    "reduce",
    "reduce_list",
    "scale_list",
    "sum",
]

DTYPES: dict[str, Attribute] = {d.name: d.ir for d in ELEMENT_DTYPES}
"""TIRx dtype names and the element types they build: ``ops/dtypes.py``'s rows that a
tile-level buffer may hold (signless integers, treated as signed)."""

_DTYPE_NAMES: dict[Attribute, str] = {t: n for n, t in DTYPES.items()}

PARAM_DTYPES: dict[str, Attribute] = {**DTYPES, **{d.name: d.ir for d in GRID_DTYPES}}
"""The element types of a kernel's global buffer parameters: :data:`DTYPES` and the rows
that only grid-scope reductions take (``ops/dtypes.py``'s ``grid`` rows: int8, uint8,
uint16, uint32, uint64 and bool, one byte in memory)."""

# Buffers a kernel can allocate itself; global buffers are kernel parameters.
_ALLOC_SCOPES = (MemoryScope.LOCAL, MemoryScope.SHARED, MemoryScope.CLUSTER_SHARED)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_THIS_FILE = os.path.normcase(os.path.abspath(__file__))


# region Argument checking


def _names(values: Sequence[object]) -> str:
    return ", ".join(str(v) for v in values)


def dtype_of(dtype: str | Attribute, fn: str = "dtype_of", types: dict[str, Attribute] = DTYPES) -> Attribute:
    """The element type for a TIRx dtype name (``"float32"`` -> ``f32``); an element
    type in :data:`DTYPES` (or ``types``) is accepted as is."""
    if isinstance(dtype, str) and dtype in types:
        return types[dtype]
    if isinstance(dtype, Attribute) and dtype in types.values():
        return dtype
    raise BuildError(f"'dtype' of T.{fn} must be one of {_names(types)}, got {dtype!r}")


def _enum(enum: type, value: object, field: str, fn: str, valid: Sequence[object] | None = None):
    members = list(enum) if valid is None else list(valid)
    for m in members:
        if value == m or value == str(m):
            return enum(str(m))
    raise BuildError(f"'{field}' of T.{fn} must be one of {_names(members)}, got {value!r}")


_INDEX_MAX = 2**63 - 1  # the largest value of the index type (64-bit, signed)


def _is_int(d: object) -> bool:
    """An integer, Python's or numpy's (``np.int64(4)``); not a bool (numpy's bool is not
    an ``Integral``)."""
    return isinstance(d, numbers.Integral) and not isinstance(d, bool)


def _element_bytes(t: Attribute) -> int:
    width = getattr(t, "bitwidth", None)
    if width is None and isinstance(t, IntegerType):
        width = t.width.data
    return (width or 8) // 8 or 1  # (this module defines its own max)


def _shape(shape: object, field: str, fn: str, element: Attribute | None = None) -> list[int]:
    """``shape`` as a list of Python ints; every dimension, the element count and (with
    ``element``) the byte size must fit the index type."""
    items = [shape] if _is_int(shape) else shape
    if (
        not isinstance(items, Sequence)
        or isinstance(items, str | bytes)
        or not items
        or any(not _is_int(d) or d < 1 for d in items)
    ):
        raise BuildError(f"'{field}' of T.{fn} must be a non-empty list of positive integers, got {shape!r}")
    dims = [int(d) for d in items]
    for i, d in enumerate(dims):
        if d > _INDEX_MAX:
            raise BuildError(
                f"'{field}' of T.{fn}: dimension {i} must be at most 2**63 - 1 (the index type), got {d}"
            )
    total = 1
    for d in dims:
        total *= d
    nbytes = total * (_element_bytes(element) if element is not None else 1)
    if nbytes > _INDEX_MAX:
        what = f"{total} elements of {element} ({nbytes} bytes)" if element is not None else f"{total} elements"
        raise BuildError(
            f"'{field}' of T.{fn} {dims} must hold at most 2**63 - 1 bytes (the index type), got {what}"
        )
    return dims


def _launch_dims(value: object, field: str) -> list[int]:
    dims = _shape(value, field, "kernel")
    if len(dims) > 3:
        raise BuildError(f"'{field}' of T.kernel must have 1 to 3 entries, got {len(dims)}")
    return dims


def _identifier(name: object, field: str, fn: str) -> str:
    if not isinstance(name, str) or _IDENTIFIER.fullmatch(name) is None:
        raise BuildError(f"'{field}' of T.{fn} must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got {name!r}")
    return name


def _describe(value: object) -> str:
    if isinstance(value, SSAValue):
        return f"a value of type {value.type}"
    return f"{type(value).__name__} {value!r}"


def _func_of(value: SSAValue) -> Operation | None:
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    while op is not None and not isinstance(op, func.FuncOp):
        op = op.parent_op()
    return op


def _buffer(value: object, field: str, fn: str) -> SSAValue:
    """``value`` if it is a bulkred buffer of the open kernel, else a BuildError."""
    if not isinstance(value, SSAValue) or scope_of(value.type) is None:
        raise BuildError(
            f"'{field}' of T.{fn} must be a buffer from k.param or T.alloc_buffer, got {_describe(value)}"
        )
    k = _open_kernel(fn)
    owner = _func_of(value)
    if owner is not k.func_op:
        where = f"kernel '{owner.sym_name.data}'" if isinstance(owner, func.FuncOp) else "no kernel"
        raise BuildError(f"'{field}' of T.{fn} belongs to {where}, not to the open kernel '{k.name}'")
    return value


# endregion

# region Source locations


def _in_this_file(filename: str) -> bool:
    """Whether a code object's file name is this file (this module's own code's name
    first: no path made for the frames of this file)."""
    return filename == _OWN_CODE_FILE or _is_this_file(filename)


@functools.lru_cache(maxsize=1024)
def _is_this_file(filename: str) -> bool:
    return os.path.normcase(os.path.abspath(filename)) == _THIS_FILE


@functools.lru_cache(maxsize=4096)
def _column(code: CodeType, index: int) -> int:
    """The 1-based column of instruction ``index`` of ``code`` (1 where unknown), read
    once per place: finding it walks the code's positions up to it."""
    position = next(itertools.islice(code.co_positions(), index, None), None) if index >= 0 else None
    if position is not None and position[2] is not None:
        return position[2] + 1
    return 1


def _caller_location() -> FileLineColLoc:
    """``file:line:col`` of the first frame outside this file (the user's call)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and _in_this_file(frame.f_code.co_filename):
        frame = frame.f_back
    return _location(frame.f_code.co_filename, frame.f_lineno, _column(frame.f_code, frame.f_lasti // 2))


@functools.lru_cache(maxsize=4096)
def _location(filename: str, line: int, col: int) -> FileLineColLoc:
    """The (immutable) location attribute of ``filename:line:col``, made once per place:
    a loop in the user's code builds many ops at one place."""
    return FileLineColLoc(StringAttr(filename), IntAttr(line), IntAttr(col))


_OWN_CODE_FILE = _caller_location.__code__.co_filename


def _located(op: Operation) -> Operation:
    op.location = _caller_location()
    return op


# endregion

# region Kernels


class _OpenKernels(threading.local):
    def __init__(self) -> None:
        self.kernel: Kernel | None = None


_open = _OpenKernels()


def _open_kernel(fn: str) -> Kernel:
    if _open.kernel is None:
        raise BuildError(f"T.{fn} must be called inside a 'with T.kernel(...)' block")
    return _open.kernel


class Kernel:
    """A ``func.func`` kernel (with a ``bulkred.launch`` attribute when one is given), built inside ``with``.

    Create it with :func:`kernel`; declare global buffer parameters with :meth:`param`;
    after the ``with`` block, :meth:`module` wraps it in a verified ``builtin.module``.
    """

    def __init__(
        self,
        name: str,
        grid: int | Sequence[int] | None = None,
        block: int | Sequence[int] | None = None,
        cluster: int | Sequence[int] | None = None,
    ):
        self.name = _identifier(name, "name", "kernel")
        given = {f: v for f, v in (("grid", grid), ("block", block), ("cluster", cluster)) if v is not None}
        self.launch: LaunchAttr | None = None  # none given: the lowering (or the launch call) chooses
        if given:
            dims = {f: _launch_dims(given.get(f, (1,)), f) for f in ("grid", "block", "cluster")}
            try:
                self.launch = LaunchAttr(dims["grid"], dims["block"], dims["cluster"])
            except VerifyException as e:
                raise BuildError(str(e)) from None
        self.func_op = func.FuncOp(self.name, ((), ()), Region(Block()))
        if self.launch is not None:
            self.func_op.attributes[LAUNCH_ATTR] = self.launch
        _located(self.func_op)
        self._params: dict[str, BlockArgument] = {}
        self._stack: ExitStack | None = None
        self._state = "new"  # -> "open" -> "closed", or "failed" when the with block raised

    @property
    def body(self) -> Block:
        return self.func_op.body.block

    def __enter__(self) -> Kernel:
        if self._state != "new":
            raise BuildError(f"kernel '{self.name}' can be entered only once")
        if _open.kernel is not None:
            raise BuildError(
                f"kernels cannot nest: kernel '{_open.kernel.name}' is still open when entering '{self.name}'"
            )
        stack = ExitStack()
        stack.enter_context(ImplicitBuilder(Builder(InsertPoint.at_end(self.body))))
        self._stack = stack
        self._state = "open"
        _open.kernel = self
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._stack is not None
        self._stack.close()
        self._stack = None
        _open.kernel = None
        if exc_type is not None:
            self._state = "failed"
            return
        self._state = "closed"
        ret = func.ReturnOp()
        ret.location = self.func_op.location
        self.body.add_op(ret)

    def param(
        self, name: str, shape: int | Sequence[int], dtype: str | Attribute, *, strides: Sequence[int] | None = None
    ) -> BlockArgument:
        """A global-memory buffer parameter ``%name: memref<shape x dtype, #bulkred.scope<global>>``
        (the card's ``T.match_buffer``), appended to the kernel's arguments. ``strides``
        (element strides, one per axis) makes it a view: ``strided<[...]>`` (a grid-scope
        reduction's ``src`` reads it in place). A ``None`` dimension is dynamic (``?``:
        the list ops' descriptor table ``[None, 4]``, known at the launch); the ops that
        need static shapes refuse it in their verifiers."""
        if self._state not in ("new", "open"):
            raise BuildError(f"k.param must be called before kernel '{self.name}' is closed")
        name = _identifier(name, "name", "param")
        if name in self._params:
            raise BuildError(f"kernel '{self.name}' already has a parameter named '{name}'")
        element = dtype_of(dtype, "param", PARAM_DTYPES)
        dynamic = isinstance(shape, list | tuple) and None in shape
        dims = _shape([1 if d is None else d for d in shape] if dynamic else shape, "shape", "param", element)
        if dynamic:
            dims = [DYNAMIC_INDEX if d is None else n for d, n in zip(shape, dims, strict=True)]
        t = buffer_type(dims, element, MemoryScope.GLOBAL)
        if strides is not None:
            if (
                not isinstance(strides, Sequence)
                or len(strides) != len(dims)
                or not all(isinstance(s, int) and not isinstance(s, bool) for s in strides)
            ):
                raise BuildError(f"'strides' of param '{name}' must be {len(dims)} integers (element strides), got {strides!r:.60}")
            t = MemRefType(element, dims, StridedLayoutAttr(list(strides), 0), t.memory_space)
        arg = self.body.insert_arg(t, len(self.body.args))
        arg.name_hint = name
        self._params[name] = arg
        self.func_op.function_type = FunctionType.from_lists([a.type for a in self.body.args], [])
        return arg

    def module(self, target: str | None = None) -> ModuleOp:
        """This kernel in a verified ``builtin.module`` (see :func:`module`)."""
        return module(self, target=target)


def kernel(
    name: str,
    grid: int | Sequence[int] | None = None,
    block: int | Sequence[int] | None = None,
    cluster: int | Sequence[int] | None = None,
) -> Kernel:
    """A kernel ``@name`` launched with ``#bulkred.launch<grid = .., block = .., cluster = ..>``.

    ``grid`` counts CTAs and must be a multiple of ``cluster`` in every dimension (the
    card's ``T.cta_id([..])`` / ``T.thread_id([..])``); one of the three given, the others
    are ``[1]``. With none given the kernel has no ``bulkred.launch``: a grid-scope or list
    reduction's lowering then chooses its launch (a launch written is honoured or refused
    at the op), a warp, CTA or cluster collective refuses the kernel (it needs whole warps),
    and a thread-scope kernel is launched with the ``grid=`` and ``block=`` of the call.
    Use it as ``with T.kernel(..) as k:``.
    """
    return Kernel(name, grid, block, cluster)


def module(*kernels: Kernel, target: str | None = None) -> ModuleOp:
    """A verified ``builtin.module`` holding a copy of each closed kernel; with ``target``
    (``"sm_100a"``) it carries ``bulkred.target = "sm_100a"``, which the passes read.

    Raises :class:`~bulkred_dialect.errors.BuildError` for bad arguments and
    :class:`~bulkred_dialect.diagnostics.LocatedError` when an op does not verify.
    """
    if not kernels:
        raise BuildError("T.module needs at least one kernel")
    if _open.kernel is not None:
        # The open kernel's ImplicitBuilder would also capture the module's ops.
        raise BuildError(f"kernel '{_open.kernel.name}' is still open: build the module after its 'with' block")
    seen: set[str] = set()
    for k in kernels:
        if not isinstance(k, Kernel):
            raise BuildError(f"T.module takes kernels from T.kernel, got {_describe(k)}")
        if k._state == "new":
            raise BuildError(f"kernel '{k.name}' has no body: build it in 'with T.kernel(...) as k:' first")
        if k._state == "failed":
            raise BuildError(f"kernel '{k.name}' is incomplete: its 'with' block raised an exception")
        if k.name in seen:
            raise BuildError(f"two kernels are named '{k.name}'")
        seen.add(k.name)
    attrs: dict[str, Attribute] = {}
    if target is not None:
        try:
            attrs[TARGET_ATTR] = StringAttr(Target.parse(target).name)
        except TargetError as e:
            raise BuildError(str(e).replace("'target' ", "'target' of T.module ", 1)) from None
        except AttributeError:
            raise BuildError(f"'target' of T.module must be a string such as 'sm_90a', got {target!r}") from None
    m = ModuleOp([k.func_op.clone() for k in kernels], attributes=attrs)
    m.location = _caller_location()
    verify_located(m)
    return m


# endregion

# region Buffers


def alloc_buffer(
    shape: int | Sequence[int],
    dtype: str | Attribute,
    scope: str = "local",
    *,
    name: str | None = None,
) -> SSAValue:
    """A kernel-local buffer: ``memref.alloca() : memref<shape x dtype, #bulkred.scope<scope>>``.

    ``scope`` is ``local`` (registers), ``shared`` (the CTA's shared memory) or
    ``cluster_shared`` (shared memory addressed through the cluster window, the
    destination of a multicast or peer bulk copy). ``name`` sets the SSA name.
    """
    _open_kernel("alloc_buffer")
    if scope == MemoryScope.GLOBAL:
        raise BuildError(
            f"'scope' of T.alloc_buffer must be one of {_names(_ALLOC_SCOPES)}, got 'global' "
            "(global buffers are kernel parameters: use k.param)"
        )
    s = _enum(MemoryScope, scope, "scope", "alloc_buffer", _ALLOC_SCOPES)
    element = dtype_of(dtype, "alloc_buffer")
    t = buffer_type(_shape(shape, "shape", "alloc_buffer", element), element, s)
    if name is not None:
        _identifier(name, "name", "alloc_buffer")
    op = memref.AllocaOp.build(operands=[[], []], result_types=[t], properties={"alignment": None})  # AllocaOp.get's op, of t itself
    _insert(op, "alloc_buffer")
    op.memref.name_hint = name
    return op.memref


def alloc_shared(shape: int | Sequence[int], dtype: str | Attribute, *, name: str | None = None) -> SSAValue:
    """``T.alloc_buffer(shape, dtype, scope="shared")``: a buffer in the CTA's shared memory."""
    return alloc_buffer(shape, dtype, "shared", name=name)


def alloc_mbarrier(*, name: str | None = None) -> SSAValue:
    """An mbarrier object for bulk copies into shared memory: ``memref<1xi64, #bulkred.scope<shared>>``."""
    return alloc_buffer([1], i64, "shared", name=name)


# endregion

# region Operations


def _insert(op: Operation, fn: str) -> Operation:
    k = _open_kernel(fn)
    _located(op)
    if op.parent is None:
        k.body.add_op(op)
    return op


def copy(src: SSAValue, dst: SSAValue) -> CopyOp:
    """``bulkred.copy src, dst``: element-wise ``dst[i] = src[i]`` by the executing threads
    (the card's ``for i in T.serial(n): A_local[i] = A[i]``). Source first, like the IR."""
    s = _buffer(src, "src", "copy")
    d = _buffer(dst, "dst", "copy")
    return _insert(CopyOp(s, d), "copy")  # type: ignore[return-value]


def reduce(
    kind: str | ReduceKind,
    dst: SSAValue,
    src: SSAValue,
    *,
    scope: str | ExecScope | None = None,
    axes: Sequence[int] | None = None,
    accum: bool = False,
    deterministic: bool = False,
    ignore_nan: bool = False,
    variant: str | None = None,
    prologue: Sequence[str | tuple[str, float]] | None = None,
    epilogue: Sequence[str | tuple[str, float]] | None = None,
    correction: int | None = None,
    aux: SSAValue | None = None,
    pairs: bool = False,
) -> ReduceOp:
    """``bulkred.reduce kind scope [accum] [deterministic] [ignore_nan] [axes ..] [variant "v"] src, dst``.

    Destination first, like TIRx's ``Tx.sum(dst, src, accum=...)``. ``kind`` is one of sum,
    prod, max, min, and, or, xor; ``scope`` (the threads that cooperate) is thread, warp, cta,
    cluster or grid. Below grid scope ``src`` is reduced along its last axis into ``dst``
    (shape [1] for a 1-D ``src``). At grid scope (the default when both buffers are kernel
    parameters in global memory) the whole kernel reduces ``src`` over ``axes`` (every
    axis when None) into ``dst``: ``T.sum(B, A, axes=[0])`` is a column sum.
    ``accum`` combines with ``dst``'s previous value; ``deterministic`` (grid scope) asks
    for the same bits on every run; float max and min propagate NaN (a NaN anywhere gives
    NaN, as numpy does) unless ``ignore_nan`` (max/min of a float type only), which drops
    NaN inputs; ``variant`` forces a lowering variant by name.

    Fused reductions (grid scope, docs/fused.md): ``prologue`` / ``epilogue`` are lists of
    maps, a name or a (name, float) pair: ``T.reduce("sum", n, x, prologue=["square"],
    epilogue=["sqrt"])`` is an L2 norm, ``T.reduce("max", a, x, prologue=["abs"])`` the
    absmax. Kinds ``argmax``/``argmin`` (``dst`` i64; ``aux`` the values), ``var``
    (``correction``; ``aux`` the mean), ``logsumexp``, ``nanmean`` (the mean of the
    non-NaN elements) and ``minmax`` (``dst`` the minimum, ``aux`` the maximum).
    ``pairs``: ``src``'s last axis (extent 2, f32 or f64) holds complex numbers as (re,
    im) (docs/fused.md, "Complex numbers").
    """
    return _reduce(
        "reduce", _enum(ReduceKind, kind, "kind", "reduce"), dst, src, scope, axes, accum, deterministic, variant,
        ignore_nan, prologue, epilogue, correction, aux, pairs,
    )


def sum(  # noqa: A001 - TIRx's name
    dst: SSAValue, src: SSAValue, *, scope: str | None = None, axes: Sequence[int] | None = None,
    accum: bool = False, deterministic: bool = False, variant: str | None = None,
) -> ReduceOp:
    """``T.reduce("sum", dst, src, ...)``, the card's ``Tx.sum(B_local, A_local, accum=False)``."""
    return _reduce("sum", ReduceKind.SUM, dst, src, scope, axes, accum, deterministic, variant)


def max(  # noqa: A001 - TIRx's name
    dst: SSAValue, src: SSAValue, *, scope: str | None = None, axes: Sequence[int] | None = None,
    accum: bool = False, deterministic: bool = False, ignore_nan: bool = False, variant: str | None = None,
) -> ReduceOp:
    """``T.reduce("max", dst, src, ...)``: NaN if any input is NaN, unless ``ignore_nan``."""
    return _reduce("max", ReduceKind.MAX, dst, src, scope, axes, accum, deterministic, variant, ignore_nan)


def min(  # noqa: A001 - TIRx's name
    dst: SSAValue, src: SSAValue, *, scope: str | None = None, axes: Sequence[int] | None = None,
    accum: bool = False, deterministic: bool = False, ignore_nan: bool = False, variant: str | None = None,
) -> ReduceOp:
    """``T.reduce("min", dst, src, ...)``: NaN if any input is NaN, unless ``ignore_nan``."""
    return _reduce("min", ReduceKind.MIN, dst, src, scope, axes, accum, deterministic, variant, ignore_nan)


def reduce_list(
    kind: str | ReduceKind,
    table: SSAValue,
    dst: SSAValue,
    total: SSAValue,
    *,
    prologue: Sequence[str | tuple[str, float]] | None = None,
    epilogue: Sequence[str | tuple[str, float]] | None = None,
    scale: SSAValue | None = None,
    flag: SSAValue | None = None,
) -> ReduceListOp:
    """``bulkred.reduce_list kind [prologue ..] [epilogue ..] table, dst, total [scale s]
    [nonfinite flag]``: every tensor of a list (``table``, the descriptor table of
    ``ops/list_layout.py``) reduced into ``dst[t]`` and all of them into ``total[0]``, in
    one launch (docs/foreach.md). ``kind`` is sum, max or min; the maps are those of
    :func:`reduce` (``prologue=["square"], epilogue=["sqrt"]``: the 2-norm). ``scale``
    (float32 [1]): each element multiplied in place first (AMP's unscale); ``flag``
    (float32 [1]): set to 1.0 when an element read is inf or NaN. The buffers are kernel
    parameters: ``table`` ``[None, 4]`` int64, ``dst`` ``[None]`` and ``total`` ``[1]``
    float32.

        with T.kernel("norms") as k:
            table = k.param("table", [None, 4], "int64")
            T.reduce_list("sum", table, k.param("dst", [None], "float32"), k.param("total", [1], "float32"),
                          prologue=["square"], epilogue=["sqrt"])
    """
    k = _enum(ReduceKind, kind, "kind", "reduce_list")
    maps = _maps("reduce_list", prologue, epilogue)
    t, d, s = (_buffer(v, f, "reduce_list") for v, f in ((table, "table"), (dst, "dst"), (total, "total")))
    sc = None if scale is None else _buffer(scale, "scale", "reduce_list")
    fl = None if flag is None else _buffer(flag, "flag", "reduce_list")
    op = ReduceListOp(k, t, d, s, prologue=maps.get("prologue"), epilogue=maps.get("epilogue"), scale=sc, flag=fl)
    return _insert(op, "reduce_list")  # type: ignore[return-value]


def scale_list(table: SSAValue, factor: SSAValue, *, clip_by: SSAValue | None = None) -> ScaleListOp:
    """``bulkred.scale_list table, factor [clip_by total]``: every element of every tensor
    of a list multiplied in place by ``factor[0]`` (float32 [1]), or with ``clip_by`` by
    ``min(factor[0] / (total[0] + 1e-6), 1)`` (torch's clip_grad_norm_ coefficient;
    ``factor`` holds max_norm)."""
    t = _buffer(table, "table", "scale_list")
    f = _buffer(factor, "factor", "scale_list")
    c = None if clip_by is None else _buffer(clip_by, "clip_by", "scale_list")
    return _insert(ScaleListOp(t, f, c), "scale_list")  # type: ignore[return-value]


def normalize_rows(
    kind: str | NormKind,
    x: SSAValue,
    y: SSAValue | None = None,
    *,
    target: SSAValue | None = None,
    loss: SSAValue | None = None,
    grad: SSAValue | None = None,
    residual: SSAValue | None = None,
    residual_out: SSAValue | None = None,
    weight: SSAValue | None = None,
    bias: SSAValue | None = None,
    row_max: SSAValue | None = None,
    row_sum: SSAValue | None = None,
    mean: SSAValue | None = None,
    rstd: SSAValue | None = None,
    lse: SSAValue | None = None,
    dweight: SSAValue | None = None,
    dbias: SSAValue | None = None,
    eps: float | None = None,
    ignore_index: int | None = None,
    label_smoothing: float | None = None,
    variant: str | None = None,
    reduced: SSAValue | None = None,
    reduction: str | None = None,
) -> NormalizeRowsOp:
    """``bulkred.normalize_rows kind [variant "v"] x, y ...``: reduce each row of the
    global ``[M, N]`` buffer ``x`` and write ``y``, an elementwise function of the row and
    its statistics, in one kernel (docs/rows.md; ``ops/tile/rows.py`` gives each kind's
    formula). ``kind`` is softmax, log_softmax, rms_norm, layer_norm, add_rms_norm,
    cross_entropy, softmax_backward, log_softmax_backward, rms_norm_backward,
    layer_norm_backward or cross_entropy_backward.

    The operands keep the op's names, each a kernel parameter (``k.param``): ``y`` (every
    kind but cross_entropy); cross_entropy's ``target`` (int64 ``[M]``) and ``loss``
    (float32 ``[M]``); the backward kinds' ``grad``; add_rms_norm's ``residual`` and
    ``residual_out``; the affine ``weight`` and ``bias`` (``[N]``); the statistics it stores,
    float32 ``[M]``: ``row_max``, ``row_sum`` (softmax kinds), ``mean`` (layer_norm),
    ``rstd`` (the norms), ``lse`` (cross_entropy), which the backward kinds read; the
    norms' backward's ``dweight`` and ``dbias`` (``[N]``); cross_entropy's ``reduced``
    (``[1]``) with ``reduction`` (``"mean"`` or ``"sum"``). ``eps`` (the norms, required there),
    ``ignore_index`` and ``label_smoothing`` (cross_entropy) are the attributes;
    ``variant`` forces a lowering variant by name (``rows_warp``, ``rows_cta``, ...).
    Which operand each kind takes, and their shapes, are the op's verifier's rules
    (:meth:`Kernel.module` reports them at this call's line)::

        with T.kernel("rms") as k:
            x = k.param("x", [64, 4096], "bfloat16")
            y = k.param("y", [64, 4096], "bfloat16")
            T.normalize_rows("rms_norm", x, y, weight=k.param("w", [4096], "bfloat16"), eps=1e-6)
    """
    fn = "normalize_rows"
    k = _enum(NormKind, kind, "kind", fn)
    xv = _buffer(x, "x", fn)
    yv = None if y is None else _buffer(y, "y", fn)
    given = {
        "target": target, "loss": loss, "grad": grad, "residual": residual, "residual_out": residual_out,
        "weight": weight, "bias": bias, "row_max": row_max, "row_sum": row_sum, "mean": mean, "rstd": rstd, "lse": lse,
        "dweight": dweight, "dbias": dbias, "reduced": reduced,
    }
    operands = {f: _buffer(v, f, fn) for f, v in given.items() if v is not None}
    for field, value in (("eps", eps), ("label_smoothing", label_smoothing)):
        if value is not None and (not isinstance(value, numbers.Real) or isinstance(value, bool)):
            raise BuildError(f"'{field}' of T.{fn} must be a float, got {_describe(value)}")
    if ignore_index is not None and not _is_int(ignore_index):
        raise BuildError(f"'ignore_index' of T.{fn} must be an integer, got {_describe(ignore_index)}")
    if variant is not None and not isinstance(variant, str):
        raise BuildError(f"'variant' of T.{fn} must be a variant's name (a string), got {_describe(variant)}")
    if reduction is not None and not isinstance(reduction, str):
        raise BuildError(f"'reduction' of T.{fn} must be \"mean\" or \"sum\" (a string), got {_describe(reduction)}")
    op = NormalizeRowsOp(
        k, xv, yv, eps=None if eps is None else float(eps),
        ignore_index=None if ignore_index is None else int(ignore_index),
        label_smoothing=None if label_smoothing is None else float(label_smoothing), variant=variant,
        reduction=reduction, **operands,
    )
    return _insert(op, fn)  # type: ignore[return-value]


def _default_scope(dst: SSAValue, src: SSAValue) -> ExecScope:
    """grid when both buffers are global, else thread (the card's default)."""
    both_global = all(scope_of(v.type) == MemoryScope.GLOBAL for v in (dst, src))
    return ExecScope.GRID if both_global else ExecScope.THREAD


def _reduce(
    fn: str,
    kind: ReduceKind,
    dst: SSAValue,
    src: SSAValue,
    scope: str | ExecScope | None,
    axes: Sequence[int] | None,
    accum: bool,
    deterministic: bool,
    variant: str | None,
    ignore_nan: bool = False,
    prologue: Sequence[str | tuple[str, float]] | None = None,
    epilogue: Sequence[str | tuple[str, float]] | None = None,
    correction: int | None = None,
    aux: SSAValue | None = None,
    pairs: bool = False,
) -> ReduceOp:
    d = _buffer(dst, "dst", fn)
    a = _buffer(aux, "aux", fn) if aux is not None else None
    maps = _maps(fn, prologue, epilogue)
    if correction is not None and (not isinstance(correction, numbers.Real) or isinstance(correction, bool)):
        raise BuildError(f"'correction' of T.{fn} must be a number (an int, or a float as torch's), got {correction!r}")
    x = _buffer(src, "src", fn)
    s = _default_scope(d, x) if scope is None else _enum(ExecScope, scope, "scope", fn)
    for field, flag in (("accum", accum), ("deterministic", deterministic), ("ignore_nan", ignore_nan), ("pairs", pairs)):
        if not isinstance(flag, bool):
            raise BuildError(f"'{field}' of T.{fn} must be True or False, got {flag!r}")
    if variant is not None and (not isinstance(variant, str) or not variant):
        raise BuildError(f"'variant' of T.{fn} must be a non-empty string or None, got {variant!r}")
    axes_list: list[int] | None = None
    if axes is not None:
        if s != ExecScope.GRID:
            raise BuildError(f"'axes' of T.{fn} is only valid at grid scope, got scope {s}")
        rank = len(_memref(x).get_shape())
        items = [axes] if isinstance(axes, Integral) else axes
        if not isinstance(items, Sequence) or isinstance(items, bytes) or not all(isinstance(a, Integral) and not isinstance(a, bool) for a in items):
            raise BuildError(f"'axes' of T.{fn} must be an integer or a list of integers, got {axes!r}")
        # negative axes count from the end, as in numpy; out-of-range ones reach the verifier
        axes_list = sorted(int(a) + rank if -rank <= int(a) < 0 else int(a) for a in items)
        repeated = sorted({a for a in axes_list if axes_list.count(a) > 1})
        if repeated:
            raise BuildError(
                f"'axes' of T.{fn} must name each axis once, got {list(items)!r} for a {rank}-D 'src' "
                f"(axis {', '.join(map(str, repeated))} more than once)"
            )
    if s != ExecScope.GRID:
        _check_reduce_order(fn, d, x)
    op = ReduceOp(
        kind, x, d, scope=s, accum=accum, deterministic=deterministic, ignore_nan=ignore_nan, axes=axes_list,
        variant=variant, prologue=maps.get("prologue"), epilogue=maps.get("epilogue"),
        correction=None if correction is None else int(correction) if isinstance(correction, Integral) else float(correction), aux=a,
        pairs=pairs,
    )
    return _insert(op, fn)  # type: ignore[return-value]


def _maps(
    fn: str, prologue: Sequence[str | tuple[str, float]] | None, epilogue: Sequence[str | tuple[str, float]] | None
) -> dict[str, list[str | tuple[str, float]]]:
    """The ``prologue`` / ``epilogue`` arguments of T.{fn} checked: lists of map names
    and (name, float) pairs (fields left out when None)."""
    maps = {}
    for field, given in (("prologue", prologue), ("epilogue", epilogue)):
        if given is None:
            continue
        if isinstance(given, str | bytes) or not isinstance(given, Sequence):
            raise BuildError(f"'{field}' of T.{fn} must be a list of maps (a name or a (name, float) pair), got {given!r}")
        items: list[str | tuple[str, float]] = []
        for m in given:
            if isinstance(m, str):
                items.append(m)
            elif isinstance(m, tuple) and len(m) == 2 and isinstance(m[0], str) and isinstance(m[1], numbers.Real) and not isinstance(m[1], bool):
                items.append((m[0], float(m[1])))
            else:
                raise BuildError(f"'{field}' of T.{fn}: each map must be a name or a (name, float) pair, got {m!r}")
            known = {f.value for f in MapFn}
            name = items[-1] if isinstance(items[-1], str) else items[-1][0]
            if name not in known:
                raise BuildError(f"'{field}' of T.{fn}: unknown map {name!r}, expected one of {', '.join(sorted(known))}")
        maps[field] = items
    return maps


def _check_reduce_order(fn: str, dst: SSAValue, src: SSAValue) -> None:
    """Name the likely mistake of passing (src, dst), the order of T.copy."""
    ds = list(_memref(dst).get_shape())
    ss = list(_memref(src).get_shape())
    if ds != ReduceOp.expected_dst_shape(ss) and ss == ReduceOp.expected_dst_shape(ds):
        raise BuildError(
            f"T.{fn} takes (dst, src) like TIRx: 'dst' has shape {ds} and 'src' has shape {ss}, "
            "which reduces the other way; swap the arguments"
        )


def _memref(v: SSAValue) -> MemRefType:
    assert isinstance(v.type, MemRefType)
    return v.type


def _cta_mask(multicast: int | SSAValue | None) -> SSAValue | None:
    if multicast is None or (isinstance(multicast, SSAValue) and multicast.type == i16):
        return multicast
    if isinstance(multicast, bool) or not isinstance(multicast, int) or not 0 < multicast < 1 << 16:
        raise BuildError(
            "'multicast' of T.bulk_copy must be a CTA mask 1..0xffff (bit i = CTA rank i) or an i16 value, "
            f"got {_describe(multicast)}"
        )
    # IntegerAttr stores i16 signed: 0xffff becomes -1, the same 16 bits.
    return _insert(arith.ConstantOp(IntegerAttr(multicast, i16)), "bulk_copy").results[0]


def bulk_copy(
    src: SSAValue,
    dst: SSAValue,
    *,
    mbar: SSAValue | None = None,
    multicast: int | SSAValue | None = None,
    rank: int | SSAValue | None = None,
) -> BulkCopyOp:
    """``bulkred.bulk_copy src, dst [, mbar] [multicast mask]``: an asynchronous bulk copy
    (``cp.async.bulk``), source first.

    Directions: global -> shared, global -> cluster_shared, shared -> cluster_shared,
    shared -> global. Copies into shared memory complete on ``mbar``
    (:func:`alloc_mbarrier`); ``multicast`` (a CTA mask, int or i16 value) is for
    global -> cluster_shared only. Into cluster_shared without ``multicast``, ``rank``
    (an int or an index value, the same in every CTA) names the receiving CTA: every
    other CTA of the cluster copies its ``src`` into that CTA's ``dst``. The size must
    be a multiple of 16 bytes.
    """
    s = _buffer(src, "src", "bulk_copy")
    d = _buffer(dst, "dst", "bulk_copy")
    m = None if mbar is None else _buffer(mbar, "mbar", "bulk_copy")
    mask = _cta_mask(multicast)
    r = None if rank is None else _index(rank, "rank", "bulk_copy")
    op = BulkCopyOp.create(
        operands=[s, d, *[x for x in (m, mask, r) if x is not None]],
        properties={
            "operandSegmentSizes": _segments(1, 1, int(m is not None), int(mask is not None), int(r is not None))
        },
    )
    return _insert(op, "bulk_copy")  # type: ignore[return-value]


def bulk_reduce(
    kind: str | ReduceKind,
    src: SSAValue,
    dst: SSAValue,
    *,
    mbar: SSAValue | None = None,
    rank: int | SSAValue | None = None,
) -> BulkReduceOp:
    """``bulkred.bulk_reduce kind src, dst [, mbar]``: asynchronously combine a shared buffer
    into a global one, or into a peer CTA's cluster_shared one (``cp.reduce.async.bulk``).

    Source first, like :func:`bulk_copy` (it is a copy that combines). A reduce into
    cluster_shared completes on ``mbar`` and takes ``rank`` (an int or an index value, the
    same in every CTA): every other CTA of the cluster reduces its ``src`` into that CTA's
    ``dst``; into global, by bulk group (no ``mbar``).
    """
    # cp.reduce.async.bulk has no multiply
    no_bulk_form = (ReduceKind.PROD, ReduceKind.ANY, ReduceKind.ALL, *FUSED_KINDS)  # cp.reduce.async.bulk has no mul, and no bool
    k = _enum(ReduceKind, kind, "kind", "bulk_reduce", [m for m in ReduceKind if m not in no_bulk_form])
    s = _buffer(src, "src", "bulk_reduce")
    d = _buffer(dst, "dst", "bulk_reduce")
    m = None if mbar is None else _buffer(mbar, "mbar", "bulk_reduce")
    r = None if rank is None else _index(rank, "rank", "bulk_reduce")
    op = BulkReduceOp.create(
        operands=[s, d, *[x for x in (m, r) if x is not None]],
        properties={
            "kind": ReduceKindAttr(k),
            "operandSegmentSizes": _segments(1, 1, int(m is not None), int(r is not None)),
        },
    )
    return _insert(op, "bulk_reduce")  # type: ignore[return-value]


def _segments(*sizes: int) -> Attribute:
    return DenseArrayBase.from_list(i32, sizes)


# endregion


# region Indices, loops and views


def _index(value: object, field: str, fn: str) -> SSAValue:
    """``value`` as an ``index`` value of the open kernel: an int becomes an
    ``arith.constant``; anything else is a BuildError naming ``field``."""
    k = _open_kernel(fn)
    if isinstance(value, int) and not isinstance(value, bool):
        if not -(2**63) <= value < 2**63:
            raise BuildError(f"'{field}' of T.{fn} must fit in 64 bits, got {value}")
        return _insert(arith.ConstantOp(IntegerAttr(value, IndexType())), fn).results[0]
    if not isinstance(value, SSAValue) or not isinstance(value.type, IndexType):
        raise BuildError(f"'{field}' of T.{fn} must be an int or an index value, got {_describe(value)}")
    if _func_of(value) is not k.func_op:
        raise BuildError(f"'{field}' of T.{fn} belongs to another kernel, not to the open kernel '{k.name}'")
    return value


_DIMS = ("x", "y", "z")


def _dim(dim: object, fn: str) -> gpu.DimensionAttr:
    if dim not in _DIMS:
        raise BuildError(f"'dim' of T.{fn} must be one of {_names(_DIMS)}, got {dim!r}")
    return gpu.DimensionAttr(gpu.DimensionEnum(dim))


def thread_id(dim: str = "x") -> SSAValue:
    """``gpu.thread_id dim``: the executing thread's index in its CTA (``%tid.x``)."""
    return _insert(gpu.ThreadIdOp(_dim(dim, "thread_id")), "thread_id").results[0]


def block_id(dim: str = "x") -> SSAValue:
    """``gpu.block_id dim``: the executing CTA's index in the grid (``%ctaid.x``)."""
    return _insert(gpu.BlockIdOp(_dim(dim, "block_id")), "block_id").results[0]


def block_dim(dim: str = "x") -> SSAValue:
    """``gpu.block_dim dim``: threads per CTA (``%ntid.x``; a constant from the launch)."""
    return _insert(gpu.BlockDimOp(_dim(dim, "block_dim")), "block_dim").results[0]


def grid_dim(dim: str = "x") -> SSAValue:
    """``gpu.grid_dim dim``: CTAs in the grid (``%nctaid.x``)."""
    return _insert(gpu.GridDimOp(_dim(dim, "grid_dim")), "grid_dim").results[0]


def lane_id() -> SSAValue:
    """``gpu.lane_id``: the executing thread's lane in its warp, 0 to 31 (``%laneid``)."""
    return _insert(gpu.LaneIdOp(), "lane_id").results[0]


def cluster_rank() -> SSAValue:
    """``bulkred.cluster_rank``: the executing CTA's rank in its cluster (``%cluster_ctarank``)."""
    return _insert(ClusterRankOp(), "cluster_rank").results[0]


def cluster_size() -> SSAValue:
    """``bulkred.cluster_size``: the CTAs of the cluster (``%cluster_nctarank``)."""
    return _insert(ClusterSizeOp(), "cluster_size").results[0]


def _index_binary(fn: str, cls: type, a: object, b: object) -> SSAValue:
    x, y = _index(a, "a", fn), _index(b, "b", fn)
    return _insert(cls(x, y), fn).results[0]


def add(a: SSAValue | int, b: SSAValue | int) -> SSAValue:
    """``a + b`` on indices (``arith.addi``); either may be an int."""
    return _index_binary("add", arith.AddiOp, a, b)


def sub(a: SSAValue | int, b: SSAValue | int) -> SSAValue:
    """``a - b`` on indices (``arith.subi``)."""
    return _index_binary("sub", arith.SubiOp, a, b)


def mul(a: SSAValue | int, b: SSAValue | int) -> SSAValue:
    """``a * b`` on indices (``arith.muli``)."""
    return _index_binary("mul", arith.MuliOp, a, b)


def div(a: SSAValue | int, b: SSAValue | int) -> SSAValue:
    """``a // b`` on non-negative indices (``arith.divui``): ``T.div(T.thread_id(), 32)``
    is the warp id."""
    return _index_binary("div", arith.DivUIOp, a, b)


def rem(a: SSAValue | int, b: SSAValue | int) -> SSAValue:
    """``a % b`` on non-negative indices (``arith.remui``)."""
    return _index_binary("rem", arith.RemUIOp, a, b)


def min_of(a: SSAValue | int, b: SSAValue | int) -> SSAValue:
    """The smaller of two non-negative indices (``arith.minui``); ``T.min`` is the reduction."""
    return _index_binary("min_of", arith.MinUIOp, a, b)


def max_of(a: SSAValue | int, b: SSAValue | int) -> SSAValue:
    """The larger of two non-negative indices (``arith.maxui``); ``T.max`` is the reduction."""
    return _index_binary("max_of", arith.MaxUIOp, a, b)


class _Serial:
    """The ``scf.for`` of :func:`serial`; ops built inside the ``with`` go in its body."""

    def __init__(self, lo: SSAValue, hi: SSAValue, step: SSAValue):
        self.body = Block(arg_types=[IndexType()])
        self.op = _insert(scf.ForOp(lo, hi, step, [], Region(self.body)), "serial")
        self._builder: ImplicitBuilder | None = None

    def __enter__(self) -> SSAValue:
        self._builder = ImplicitBuilder(Builder(InsertPoint.at_end(self.body)))
        self._builder.__enter__()
        i = self.body.args[0]
        i.name_hint = "i"
        return i

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._builder is not None
        if exc_type is None:
            yield_ = scf.YieldOp()  # inserted at the end of the body by the loop's builder
            yield_.location = self.op.location
            if yield_.parent is None:
                self.body.add_op(yield_)
        self._builder.__exit__(exc_type, exc, tb)


def serial(lo: SSAValue | int, hi: SSAValue | int | None = None, step: SSAValue | int = 1) -> _Serial:
    """A sequential loop ``for i in range(lo, hi, step)`` (``scf.for``), used as
    ``with T.serial(lo, hi, step=s) as i:``; ``T.serial(n)`` counts from 0. Bounds and
    step are ints or index values (``T.serial(T.thread_id(), n, step=T.block_dim())``
    strides the threads of a CTA over ``n``); an int step must be >= 1."""
    if hi is None:
        lo, hi = 0, lo
    if isinstance(step, int) and not isinstance(step, bool) and step < 1:
        raise BuildError(f"'step' of T.serial must be >= 1, got {step}")
    return _Serial(_index(lo, "lo", "serial"), _index(hi, "hi", "serial"), _index(step, "step", "serial"))


def view(buf: SSAValue, offsets: Sequence[SSAValue | int], shape: int | Sequence[int]) -> SSAValue:
    """A tile of ``buf`` of static ``shape`` starting at ``offsets`` (ints or index values):
    ``memref.subview`` with unit strides, in ``buf``'s memory. Loads, stores, ``T.copy``,
    thread-scope reductions and (when contiguous) bulk operations take it like a buffer:
    ``T.view(A, [T.mul(T.block_id(), 256)], [256])`` is the CTA's 256 elements of ``A``."""
    b = _buffer(buf, "buf", "view")
    t = _memref(b)
    rank = len(t.get_shape())
    sizes = _shape(shape, "shape", "view")
    if isinstance(offsets, SSAValue | int) or not isinstance(offsets, Sequence) or isinstance(offsets, str | bytes):
        raise BuildError(f"'offsets' of T.view must be a list of ints or index values, got {_describe(offsets)}")
    if len(offsets) != rank or len(sizes) != rank:
        raise BuildError(
            f"'offsets' and 'shape' of T.view must have one entry per dimension of 'buf' ({rank}), "
            f"got {len(offsets)} and {len(sizes)}"
        )
    for axis, (o, n, d) in enumerate(zip(offsets, sizes, t.get_shape())):
        if n > d:
            raise BuildError(f"'shape' of T.view must fit in 'buf' {list(t.get_shape())}, got {sizes} (axis {axis})")
        if isinstance(o, int) and not isinstance(o, bool) and not 0 <= o <= d - n:
            raise BuildError(
                f"'offsets' of T.view must keep the view inside 'buf' {list(t.get_shape())}: "
                f"axis {axis} offset {o} with size {n}"
            )
    static: list[SSAValue | int] = [
        o if isinstance(o, int) and not isinstance(o, bool) else _index(o, "offsets", "view") for o in offsets
    ]
    result = memref.SubviewOp.infer_result_type(t, static, sizes, [1] * rank)
    op = memref.SubviewOp.get(b, static, sizes, [1] * rank, result)
    return _insert(op, "view").results[0]


# endregion
