"""Lowering variants of the tile-level ops, one file per variant.

Importing this package registers every variant with
:data:`bulkred_dialect.passes.dispatch.REGISTRY`. This module holds what the variants
share: the predicates on a ``bulkred.reduce`` (execution scope, buffer scopes,
shapes, element type, SM version) and :class:`Emitter`, which builds the lowered IR
(``memref.load/store``, ``arith.constant`` indices, ``scf.for``) before the op being
replaced.

The variants, by priority (highest is tried first):

======  ==============  =====================================================
  20    sm100_packed    thread scope, 1-D f32 of length >= 8 to a scalar, sm_100+
  10    local           any thread-scope reduction of local buffers (scalar loop),
                        every element type the ``bulkred.reduce`` verifier accepts
======  ==============  =====================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    LocationAttr,
    MemRefType,
    Signedness,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import (
    ExecScope,
    MemoryScope,
    ReduceKind,
    ReduceOp,
    scope_of,
)

# region Predicates on bulkred.reduce
# Each returns (holds, the value found); the dispatcher shows both.


def dtype_name(t: Attribute) -> str:
    """TIRx's spelling of an element type (``float32``, ``bfloat16``, ``int32``).

    Only signless integers are ``int<N>``: ``ui32`` is ``uint32`` and ``si32`` is
    ``sint32``, so that no ``dtype`` predicate mistakes them for ``int32``.
    """
    if isinstance(t, BFloat16Type):
        return "bfloat16"
    if isinstance(t, Float16Type | Float32Type | Float64Type):
        return f"float{t.bitwidth}"
    if isinstance(t, IntegerType):
        prefix = {Signedness.SIGNLESS: "int", Signedness.SIGNED: "sint", Signedness.UNSIGNED: "uint"}
        return f"{prefix[t.signedness.data]}{t.width.data}"
    return str(t)


def _types(op: ReduceOp) -> tuple[MemRefType, MemRefType]:
    st, dt = op.src.type, op.dst.type
    assert isinstance(st, MemRefType) and isinstance(dt, MemRefType)
    return st, dt


def exec_scope_in(*scopes: ExecScope) -> Callable[[Operation, Target], tuple[bool, object]]:
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        assert isinstance(op, ReduceOp)
        s = op.scope.data
        return s in scopes, s

    return check


def src_dst_in_scope(scope: MemoryScope) -> Callable[[Operation, Target], tuple[bool, object]]:
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        assert isinstance(op, ReduceOp)
        st, dt = _types(op)
        s, d = scope_of(st), scope_of(dt)
        return s == scope and d == scope, f"src {s}, dst {d}"

    return check


def dst_len(op: Operation, target: Target) -> int:
    assert isinstance(op, ReduceOp)
    n = 1
    for d in _types(op)[1].get_shape():
        n *= d
    return n


def src_ndim(op: Operation, target: Target) -> int:
    assert isinstance(op, ReduceOp)
    return len(_types(op)[0].get_shape())


def reduction_len(op: Operation, target: Target) -> int:
    """The length of the reduced (last) axis of ``src``."""
    assert isinstance(op, ReduceOp)
    return _types(op)[0].get_shape()[-1]


def element_type(op: Operation) -> Attribute:
    assert isinstance(op, ReduceOp)
    return _types(op)[0].element_type


def dtype_in(*names: str) -> Callable[[Operation, Target], tuple[bool, object]]:
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        name = dtype_name(element_type(op))
        return name in names, name

    return check


def kind_in(*kinds: ReduceKind) -> Callable[[Operation, Target], tuple[bool, object]]:
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        assert isinstance(op, ReduceOp)
        return op.kind.data in kinds, op.kind.data

    return check


def sm_at_least(version: int) -> Callable[[Operation, Target], tuple[bool, object]]:
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        return target.sm >= version, f"{target.sm} ({target.name})"

    return check


# endregion

# region Building the lowered IR


class Emitter:
    """Inserts ops through ``builder`` (before the replaced op, or at the end of a loop
    body); index constants are created once, before the replaced op, and shared by
    every nested emitter so that they dominate all their uses.

    Every op it inserts takes ``location``, the location of the op being replaced
    (``Emitter(rewriter, location=op.location)``), so that an error in the lowered IR
    points at the source line of the tile-level op. Nested emitters share it.
    """

    def __init__(self, builder: Builder, constants: Emitter | None = None, *, location: LocationAttr | None = None):
        self.builder = builder
        self._root = constants if constants is not None else self
        self.location = location if constants is None else constants.location
        self._index: dict[int, SSAValue] = {}

    def _locate(self, op: Operation) -> None:
        if self.location is not None:
            op.location = self.location

    def emit(self, op: Operation) -> Operation:
        self._locate(op)
        self.builder.insert(op)
        return op

    def value(self, op: Operation) -> SSAValue:
        """Emit a one-result op and return its result."""
        self.emit(op)
        return op.results[0]

    def index(self, i: int) -> SSAValue:
        root = self._root
        if i not in root._index:
            c = arith.ConstantOp.from_int_and_width(i, IndexType())
            root._locate(c)
            root.builder.insert(c)
            root._index[i] = c.result
        return root._index[i]

    def load(self, buf: SSAValue, indices: Sequence[SSAValue | int]) -> SSAValue:
        return self.value(memref.LoadOp.get(buf, [self._idx(i) for i in indices]))

    def store(self, value: SSAValue, buf: SSAValue, indices: Sequence[SSAValue | int]) -> None:
        self.emit(memref.StoreOp.get(value, buf, [self._idx(i) for i in indices]))

    def _idx(self, i: SSAValue | int) -> SSAValue:
        return self.index(i) if isinstance(i, int) else i

    def for_loop(
        self,
        lb: int,
        ub: int,
        iter_args: Sequence[SSAValue],
        body: Callable[[Emitter, SSAValue, list[SSAValue]], Sequence[SSAValue]],
    ) -> list[SSAValue]:
        """``scf.for %i = lb to ub step 1 iter_args(...)``; ``body(emitter, i, args)``
        emits the body and returns the values to yield. Returns the loop's results."""
        block = Block(arg_types=[IndexType(), *(a.type for a in iter_args)])
        inner = Emitter(Builder(InsertPoint.at_end(block)), self._root)
        yielded = body(inner, block.args[0], list(block.args[1:]))
        inner.emit(scf.YieldOp(*yielded))
        loop = scf.ForOp(self.index(lb), self.index(ub), self.index(1), list(iter_args), block)
        self.emit(loop)
        return list(loop.results)

    def nest(
        self, shape: Sequence[int], body: Callable[[Emitter, list[SSAValue]], None]
    ) -> None:
        """Loops over every index of ``shape`` (outermost first); ``body(emitter, ivs)``.
        A dimension of extent 1 takes no loop: its index is the constant 0."""
        if not shape:
            body(self, [])
            return
        if shape[0] == 1:
            self.nest(shape[1:], lambda e, ivs: body(e, [self.index(0), *ivs]))
            return

        def outer(e: Emitter, iv: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            e.nest(shape[1:], lambda e2, ivs: body(e2, [iv, *ivs]))
            return []

        self.for_loop(0, shape[0], [], outer)


# endregion

# Importing the variant modules registers them (after the helpers above exist).
from bulkred_dialect.passes.variants import (  # noqa: E402
    cluster_dsmem,
    cluster_red_async,
    cta_shared,
    grid_full,
    grid_full_cluster,
    grid_rows,
    grid_split_bulk,
    grid_split_det,
    local,
    sm100_packed,
    warp_redux,
    warp_shuffle,
)

__all__ = [
    "Emitter",
    "cluster_dsmem",
    "cluster_red_async",
    "cta_shared",
    "grid_full",
    "grid_full_cluster",
    "grid_rows",
    "grid_split_bulk",
    "grid_split_det",
    "local",
    "sm100_packed",
    "warp_redux",
    "warp_shuffle",
]
