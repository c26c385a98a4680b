"""What a lowering variant may ask of a ``bulkred.reduce``: :class:`Predicate` (a named
condition and the value it expects) and the predicates the variants share: execution
scope, buffer scopes, shapes, element type, SM version, and the kernel's launch (whole
warps, a cluster of two or more CTAs).

A predicate function takes ``(op, target)`` and returns ``(holds, the value found)``;
the dispatcher shows both in its decision table (passes/registry.py).

Example::

    Predicate("dtype", dtype_in("float32"), expected="float32")
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, Operation

from bulkred_dialect.ops.dtypes import COLLECTIVE_DTYPES, ir_name
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import (
    FUSED_KINDS,
    INDEX_KINDS,
    ExecScope,
    LaunchAttr,
    MemoryScope,
    ReduceKind,
    ReduceOp,
    enclosing_kernel,
    kernel_launch,
    scope_of,
)
from bulkred_dialect.passes.elements import ELEMS

WARP = 32
"""Threads per warp."""

PredicateFn = Callable[[Operation, Target], tuple[bool, object]]
"""(op, target) -> (holds, the value it found)."""


@dataclass(frozen=True)
class Verdict:
    """One predicate's outcome for one op."""

    predicate: str
    ok: bool
    expected: str
    actual: str


@dataclass(frozen=True)
class Predicate:
    """A named condition of a variant; ``expected`` says what it requires (``">= 8"``).
    ``preference``: not a condition of the lowering but a measured choice among variants
    that apply (rows_warp leaving a cell to rows_cta): the dispatch honours it, a variant
    forced by ``variant`` does not ask it."""

    name: str
    fn: PredicateFn
    expected: str
    preference: bool = False

    def evaluate(self, op: Operation, target: Target) -> Verdict:
        ok, actual = self.fn(op, target)
        return Verdict(self.name, bool(ok), self.expected, str(actual))


# region Scopes, shapes, element type, target


def _types(op: ReduceOp) -> tuple[MemRefType, MemRefType]:
    st, dt = op.src.type, op.dst.type
    assert isinstance(st, MemRefType) and isinstance(dt, MemRefType)
    return st, dt


def exec_scope_in(*scopes: ExecScope) -> PredicateFn:
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        assert isinstance(op, ReduceOp)
        s = op.scope.data
        return s in scopes, s

    return check


def src_dst_in_scope(scope: MemoryScope) -> PredicateFn:
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


def dtype_name(op: Operation) -> str:
    """``src``'s element type (``ops/dtypes.py``'s ``ir_name``), ``"int32 -> int64"``
    where ``dst``'s differs."""
    st, dt = _types(op)  # type: ignore[arg-type]
    name = ir_name(st.element_type)
    return name if dt.element_type == st.element_type else f"{name} -> {ir_name(dt.element_type)}"


def dtype_in(*names: str) -> PredicateFn:
    """The element type's name (``ops/dtypes.py``'s ``ir_name``) is one of ``names``,
    and ``dst`` has the same element type."""

    def check(op: Operation, target: Target) -> tuple[bool, object]:
        name = dtype_name(op)
        return name in names, name

    return check


def kind_in(*kinds: ReduceKind) -> PredicateFn:
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        assert isinstance(op, ReduceOp)
        return op.kind.data in kinds, op.kind.data

    return check


def kinds_but_prod(instruction: str) -> Predicate:
    """The ``kind`` predicate of a variant whose combining instruction (``redux.sync``,
    ``red.async``, ``cp.reduce.async.bulk``) has no multiply: every kind but prod, and
    the table says why. The bool kinds (any, all) are left out: these variants take
    int32 only, and the verifier takes any/all on bool only."""
    kinds = tuple(k for k in ReduceKind if k not in (ReduceKind.PROD, ReduceKind.ANY, ReduceKind.ALL, *FUSED_KINDS))
    return Predicate("kind", kind_in(*kinds), expected=f"{', '.join(kinds)} ({instruction} has no mul)")


def sm_at_least(version: int) -> PredicateFn:
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        return target.sm >= version, f"{target.sm} ({target.name})"

    return check


# endregion

# region The collective (warp, CTA, cluster) variants


def launch_of(op: Operation) -> LaunchAttr | None:
    """The ``bulkred.launch`` of the kernel around ``op``; None when there is none or it
    is malformed (the verifier reports that)."""
    kernel = enclosing_kernel(op)
    if kernel is None:
        return None
    try:
        return kernel_launch(kernel)
    except Exception:  # a malformed launch attribute is the verifier's to report
        return None


def block_threads(op: Operation, target: Target) -> tuple[bool, object]:
    """The CTA's threads are whole warps (shfl.sync and redux.sync take the full mask)."""
    launch = launch_of(op)
    if launch is None:
        return False, "no bulkred.launch"
    b = launch.block_dims
    n = b[0] * b[1] * b[2]
    return n % WARP == 0, f"{n} threads"


def cluster_ctas(op: Operation, target: Target) -> tuple[bool, object]:
    launch = launch_of(op)
    if launch is None:
        return False, "no bulkred.launch"
    c = launch.cluster_dims
    n = c[0] * c[1] * c[2]
    return n >= 2, f"{n} CTAs"


def collective_dtype(op: Operation, target: Target) -> tuple[bool, object]:
    name = dtype_name(op)
    return name in COLLECTIVE_NAMES, name


def grid_dtype(op: Operation, target: Target) -> tuple[bool, object]:
    """``src``'s element type is one the grid lowerings take (``dst``'s is then one too,
    or the verifier would have refused it)."""
    name = ir_name(element_type(op))
    return name in ELEMS, dtype_name(op)


def one_value(op: Operation, target: Target) -> tuple[bool, object]:
    """dst has one element: the collective result of every thread's whole src."""
    assert isinstance(op, ReduceOp)
    n = math.prod(_types(op)[1].get_shape())
    return n == 1, f"dst of {n} elements"


def collective_predicates(scope: ExecScope, dtype: Predicate, *extra: Predicate) -> list[Predicate]:
    """The predicates of a warp, CTA or cluster variant: the scope, local buffers, one
    result, the element type, whole warps, then the variant's own."""
    return [
        Predicate("exec_scope", exec_scope_in(scope), expected=str(scope)),
        Predicate("local_scope", src_dst_in_scope(MemoryScope.LOCAL), expected="src local, dst local"),
        Predicate("dst_len", one_value, expected="1"),
        dtype,
        Predicate("block", block_threads, expected="a multiple of 32 threads"),
        *extra,
    ]


def plain_reduction(what: str) -> Predicate:
    """A variant that reduces the loaded values as they are (``what`` does the combining,
    e.g. cp.reduce.async.bulk): no fused kind, no prologue or epilogue."""

    def check(op: Operation, target: Target) -> tuple[bool, object]:
        assert isinstance(op, ReduceOp)
        kind = op.kind.data
        if kind in FUSED_KINDS:
            return False, f"kind {kind} ({what} has no {kind})"
        maps = [str(m.map_fn) for f in ("prologue", "epilogue") for m in op.maps(f)]
        if maps:
            return False, f"maps {', '.join(maps)} ({what} applies no elementwise map)"
        return True, "plain"

    return Predicate("fused", check, expected="a plain kind, no prologue or epilogue")


EXP_LOG_MAPS = ("pow", "log", "exp_sub")


def fused_lowerable(op: Operation, target: Target) -> tuple[bool, object]:
    """The kind and maps have a form in the accumulator type: ``logsumexp``, ``pow``,
    ``log`` and ``exp_sub`` use ``ex2.approx`` / ``lg2.approx`` of float32, and the FMA
    routines of ``passes/f64_math.py`` of float64 (PTX has no float64 ``ex2``/``lg2``)."""
    assert isinstance(op, ReduceOp)
    from bulkred_dialect.ops.dtypes import of_ir

    src, dst = _types(op)[0].element_type, _types(op)[1].element_type
    kind = op.kind.data
    s = of_ir(src)
    acc = of_ir(dst) if dst != src and kind not in INDEX_KINDS else (s.accumulator if s is not None else None)
    if acc is None or acc.name != "float64":
        return True, "f32 math" if acc is not None and acc.is_float else "no float math"
    needs = [str(m.map_fn) for f in ("prologue", "epilogue") for m in op.maps(f) if str(m.map_fn) in EXP_LOG_MAPS]
    if kind == ReduceKind.LOGSUMEXP:
        needs.insert(0, "logsumexp")
    if needs:
        return True, f"float64 math: {', '.join(needs)} with FMA exp/log"
    return True, "float64 math"


FUSED_MATH = Predicate("math", fused_lowerable, expected="exp/log: ex2/lg2.approx in f32, FMA routines in f64")

COLLECTIVE_NAMES = tuple(d.name for d in COLLECTIVE_DTYPES)
ANY_COLLECTIVE_DTYPE = Predicate("dtype", collective_dtype, expected=", ".join(COLLECTIVE_NAMES))
ANY_GRID_DTYPE = Predicate("dtype", grid_dtype, expected=", ".join(ELEMS))
CLUSTER_OF_TWO_OR_MORE = Predicate("cluster", cluster_ctas, expected=">= 2 CTAs")

# endregion
