"""The tile-level dialect ``bulkred``: what is reduced, at which scope, and the bulk
operations between memories.

Buffers are upstream ``memref`` values whose memory space is a
``#bulkred.scope<...>`` attribute (local, shared, global, cluster_shared); they are
allocated with ``memref.alloca``. Kernels are ``func.func`` ops carrying a
``bulkred.launch = #bulkred.launch<grid = [..], block = [..], cluster = [..]>``
attribute (:func:`kernel_launch` rejects one of another kind); every tile op must be
inside one.

Example (the TIRx card's demonstration program, ``examples/seed_sum32.mlir``)::

    func.func @test_func(%A: memref<32xf32, #bulkred.scope<global>>,
                         %B: memref<1xf32, #bulkred.scope<global>>)
        attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1], cluster = [1]>} {
      %A_local = memref.alloca() : memref<32xf32, #bulkred.scope<local>>
      %B_local = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
      bulkred.copy %A, %A_local : memref<32xf32, #bulkred.scope<global>>, memref<32xf32, #bulkred.scope<local>>
      bulkred.reduce sum thread %A_local, %B_local : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
      bulkred.copy %B_local, %B : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<global>>
      func.return
    }
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    f32,
    DYNAMIC_INDEX,
    ArrayAttr,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    Signedness,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.irdl.operations import AttrSizedOperandSegments
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.dtypes import ELEMENT_DTYPES, GRID_DTYPES, of_ir
from bulkred_dialect.ops.op_definition import op_definition

# region Attributes


class MemoryScope(StrEnum):
    """Where a buffer lives."""

    LOCAL = "local"
    SHARED = "shared"
    GLOBAL = "global"
    CLUSTER_SHARED = "cluster_shared"


class ExecScope(StrEnum):
    """Which threads cooperate in an operation."""

    THREAD = "thread"
    WARP = "warp"
    CTA = "cta"
    CLUSTER = "cluster"
    GRID = "grid"


class ReduceKind(StrEnum):
    """The reduction: sum, prod, max and min for any element type; and/or/xor on integers;
    any/all on bool (``i1``)."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    AND = "and"
    OR = "or"
    XOR = "xor"
    PROD = "prod"
    ANY = "any"
    ALL = "all"
    ARGMAX = "argmax"
    ARGMIN = "argmin"
    VAR = "var"
    LOGSUMEXP = "logsumexp"
    NANMEAN = "nanmean"
    MINMAX = "minmax"


BOOL_KINDS = (ReduceKind.ANY, ReduceKind.ALL)
INDEX_KINDS = (ReduceKind.ARGMAX, ReduceKind.ARGMIN)
FUSED_KINDS = (
    ReduceKind.ARGMAX, ReduceKind.ARGMIN, ReduceKind.VAR, ReduceKind.LOGSUMEXP, ReduceKind.NANMEAN, ReduceKind.MINMAX,
)
"""The kinds whose accumulator is more than one value (grid scope only): ``argmax`` /
``argmin`` (value and index), ``var`` (count, mean and the sum of squared deviations,
Chan's combination), ``logsumexp`` (a running shift and a sum of exponentials),
``nanmean`` (the sum and the count of the non-NaN elements) and ``minmax`` (the minimum
and the maximum: ``dst`` and ``aux``)."""
FLOAT_ONLY_KINDS = (ReduceKind.VAR, ReduceKind.LOGSUMEXP, ReduceKind.NANMEAN)


class MapFn(StrEnum):
    """An elementwise map of a grid-scope ``bulkred.reduce``'s prologue (applied to each
    element, in the accumulator type, as it is loaded) or epilogue (applied to each
    result before it is stored)."""

    CAST = "cast"  # prologue: the conversion to the accumulator type (always done; a marker)
    ABS = "abs"  # prologue: |x|
    SQUARE = "square"  # prologue: x * x
    POW = "pow"  # prologue: |x| ** p; epilogue: x ** p (x >= 0)
    SCALE = "scale"  # prologue or epilogue: x * s
    EXP_SUB = "exp_sub"  # prologue: exp(x - c), c per output (the `aux` buffer, read)
    NONZERO = "nonzero"  # prologue: x != 0 as 1 or 0 (NaN counts as nonzero): any/all of any type, count_nonzero
    NAN_ZERO = "nan_zero"  # prologue: NaN as 0, other values as they are (kind sum: torch.nansum)
    DIV_COUNT = "div_count"  # epilogue: x / (the number of elements reduced into it)
    SQRT = "sqrt"  # epilogue
    LOG = "log"  # epilogue


PROLOGUE_MAPS = (
    MapFn.CAST, MapFn.ABS, MapFn.SQUARE, MapFn.POW, MapFn.SCALE, MapFn.EXP_SUB, MapFn.NONZERO, MapFn.NAN_ZERO,
)
EPILOGUE_MAPS = (MapFn.DIV_COUNT, MapFn.SQRT, MapFn.LOG, MapFn.POW, MapFn.SCALE)
MAPS_WITH_ARG = (MapFn.POW, MapFn.SCALE)
INTEGER_MAPS = (MapFn.CAST, MapFn.ABS, MapFn.SQUARE, MapFn.NONZERO)
"""The maps an integer accumulator takes (the others need a float one)."""
BITWISE_KINDS = (ReduceKind.AND, ReduceKind.OR, ReduceKind.XOR)
MINMAX_KINDS = (ReduceKind.MAX, ReduceKind.MIN)


@irdl_attr_definition
class MemoryScopeAttr(EnumAttribute[MemoryScope]):
    """``#bulkred.scope<local>``: the memory space of a buffer's memref type."""

    name = "bulkred.scope"

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> MemoryScope:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(MemoryScope)


@irdl_attr_definition
class ExecScopeAttr(EnumAttribute[ExecScope], SpacedOpaqueSyntaxAttribute):
    name = "bulkred.exec_scope"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "bulkred.reduce_kind"


@irdl_attr_definition
class MapAttr(ParametrizedAttribute):
    """One elementwise map of a prologue or epilogue (:class:`MapFn`):
    ``#bulkred.map<abs>``, ``#bulkred.map<pow 3.0>`` (``pow`` and ``scale`` take a float
    argument, the others none)."""

    name = "bulkred.map"

    fn: StringAttr
    arg: FloatAttr | NoneAttr

    def __init__(self, fn: str, arg: float | None = None):
        super().__init__(StringAttr(str(fn)), NoneAttr() if arg is None else FloatAttr(float(arg), f64))

    @property
    def map_fn(self) -> MapFn:
        return MapFn(self.fn.data)

    @property
    def value(self) -> float | None:
        return None if isinstance(self.arg, NoneAttr) else float(self.arg.value.data)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.fn.data}")
        if self.value is not None:
            printer.print_string(f" {self.value!r}")
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            fn = parser.parse_identifier(" (a map: " + ", ".join(m.value for m in MapFn) + ")")
            if fn not in set(MapFn):
                parser.raise_error(f"unknown map '{fn}', expected one of " + ", ".join(m.value for m in MapFn), pos)
            arg: Attribute = NoneAttr()
            at = parser.pos
            v = parser.parse_optional_number()
            if fn in MAPS_WITH_ARG and v is None:
                parser.raise_error(f"map '{fn}' needs a float argument, e.g. #bulkred.map<{fn} 2.0>", at)
            if fn not in MAPS_WITH_ARG and v is not None:
                parser.raise_error(f"map '{fn}' takes no argument, got {v}", at)
            if v is not None:
                if not math.isfinite(float(v)):
                    parser.raise_error(f"map '{fn}' needs a finite argument, got {float(v)}", at)
                arg = FloatAttr(float(v), f64)
        return (StringAttr(fn), arg)

    def verify(self) -> None:
        if self.fn.data not in set(MapFn):
            raise VerifyException(f"unknown map '{self.fn.data}', expected one of " + ", ".join(MapFn))
        needs = self.fn.data in MAPS_WITH_ARG
        if needs and self.value is None:
            raise VerifyException(f"map '{self.fn.data}' needs a float argument, got none")
        if not needs and self.value is not None:
            raise VerifyException(f"map '{self.fn.data}' takes no argument, got {self.value}")
        if self.value is not None and not math.isfinite(self.value):
            raise VerifyException(f"map '{self.fn.data}' needs a finite argument, got {self.value}")


def check_maps(
    field: str, maps: Sequence[MapAttr], allowed: Sequence[MapFn], acc: Attribute, kind: str
) -> None:
    """Raise unless every map of ``maps`` is one of ``allowed`` and takes the accumulator
    type ``acc`` (an integer one only :data:`INTEGER_MAPS`); ``cast`` only first."""
    for i, m in enumerate(maps):
        fn = m.map_fn
        if fn not in allowed:
            raise VerifyException(
                f"'{field}' map {i} must be one of {', '.join(allowed)}, got {fn}"
            )
        if fn == MapFn.CAST and i != 0:
            raise VerifyException(f"'{field}' map 'cast' must come first, got it at position {i}")
        if isinstance(acc, IntegerType) and fn not in INTEGER_MAPS:
            raise VerifyException(
                f"'{field}' map '{fn}' needs a floating-point accumulator, got {acc} (kind {kind})"
            )
        if kind in INDEX_KINDS and field == "epilogue":
            raise VerifyException(f"'epilogue' is not valid with kind {kind} (its result is an index)")
        if kind == ReduceKind.MINMAX and field == "epilogue":
            raise VerifyException("'epilogue' is not valid with kind minmax (its two results are elements of 'src')")
        if fn == MapFn.NAN_ZERO and kind != ReduceKind.SUM:
            raise VerifyException(f"'prologue' map 'nan_zero' is only valid with kind sum (a nansum), got kind {kind}")


def _parse_int_list(parser: AttrParser) -> list[int]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


@irdl_attr_definition
class LaunchAttr(ParametrizedAttribute):
    """A kernel's launch shape: ``#bulkred.launch<grid = [1], block = [32], cluster = [2]>``.

    ``grid`` counts CTAs (not clusters); each list has 1 to 3 entries (x, y, z), each
    entry >= 1, within the CUDA limits (compute capability 9.0 and 10.0):

    * ``grid``: x <= 2^31 - 1, y and z <= 65535, and a multiple of ``cluster`` per axis;
    * ``block``: x and y <= 1024, z <= 64, at most 1024 threads in all;
    * ``cluster``: at most 16 CTAs in all. 8 is the portable limit; a cluster of 9 to 16
      CTAs is accepted, but launching it needs the kernel attribute
      ``cudaFuncAttributeNonPortableClusterSizeAllowed`` set and a GPU that allows it
      (the H100 does).

    Spec: CUDA C++ Programming Guide, "Thread Block Clusters" and "Technical
    Specifications per Compute Capability" (maximum x/y/z dimension of a grid and of a block).
    """

    GRID_LIMITS: ClassVar[tuple[int, int, int]] = (2**31 - 1, 65535, 65535)
    BLOCK_LIMITS: ClassVar[tuple[int, int, int]] = (1024, 1024, 64)
    MAX_THREADS_PER_BLOCK: ClassVar[int] = 1024
    MAX_CLUSTER_SIZE: ClassVar[int] = 16
    PORTABLE_CLUSTER_SIZE: ClassVar[int] = 8

    name = "bulkred.launch"

    grid: ArrayAttr[IntAttr]
    block: ArrayAttr[IntAttr]
    cluster: ArrayAttr[IntAttr]

    def __init__(self, grid: Sequence[int], block: Sequence[int], cluster: Sequence[int] = (1,)):
        super().__init__(
            ArrayAttr(IntAttr(g) for g in grid),
            ArrayAttr(IntAttr(b) for b in block),
            ArrayAttr(IntAttr(c) for c in cluster),
        )

    @staticmethod
    def _dims(a: ArrayAttr[IntAttr]) -> tuple[int, int, int]:
        v = [x.data for x in a.data] + [1, 1, 1]
        return (v[0], v[1], v[2])

    @property
    def grid_dims(self) -> tuple[int, int, int]:
        return self._dims(self.grid)

    @property
    def block_dims(self) -> tuple[int, int, int]:
        return self._dims(self.block)

    @property
    def cluster_dims(self) -> tuple[int, int, int]:
        return self._dims(self.cluster)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        values: dict[str, list[int]] = {"grid": [1], "block": [1], "cluster": [1]}
        given: set[str] = set()
        start = parser.pos
        with parser.in_angle_brackets():
            first = True
            while first or parser.parse_optional_punctuation(",") is not None:
                first = False
                pos = parser.pos
                key = parser.parse_identifier()
                if key not in values:
                    parser.raise_error(
                        f"unknown launch field '{key}' (expected grid, block or cluster)", pos, parser.pos
                    )
                if key in given:  # a second value would silently replace the first, unchecked
                    parser.raise_error(f"launch field '{key}' given twice", pos, parser.pos)
                given.add(key)
                parser.parse_punctuation("=")
                values[key] = _parse_int_list(parser)
        params = tuple(ArrayAttr(IntAttr(v) for v in values[k]) for k in ("grid", "block", "cluster"))
        try:
            cls.new(params).verify()
        except VerifyException as e:
            parser.raise_error(str(e), start, parser.pos)
        return params

    def print_parameters(self, printer: Printer) -> None:
        def fmt(a: ArrayAttr[IntAttr]) -> str:
            return "[" + ", ".join(str(x.data) for x in a.data) + "]"

        printer.print_string(
            f"<grid = {fmt(self.grid)}, block = {fmt(self.block)}, cluster = {fmt(self.cluster)}>"
        )

    def verify(self) -> None:
        for field, a in (("grid", self.grid), ("block", self.block), ("cluster", self.cluster)):
            if not 1 <= len(a.data) <= 3:
                raise VerifyException(f"'{field}' must have 1 to 3 entries, got {len(a.data)}")
            for x in a.data:
                if x.data < 1:
                    raise VerifyException(f"'{field}' entries must be >= 1, got {x.data}")
        g, b, c = self.grid_dims, self.block_dims, self.cluster_dims
        for field, dims, limits in (("grid", g, self.GRID_LIMITS), ("block", b, self.BLOCK_LIMITS)):
            for axis, (d, limit) in enumerate(zip(dims, limits)):
                if d > limit:
                    raise VerifyException(
                        f"'{field}' {'xyz'[axis]} dimension must be <= {limit}, got {d}"
                    )
        threads = b[0] * b[1] * b[2]
        if threads > self.MAX_THREADS_PER_BLOCK:
            raise VerifyException(
                f"'block' {list(b)} has {threads} threads, more than {self.MAX_THREADS_PER_BLOCK} per block"
            )
        ctas = c[0] * c[1] * c[2]
        if ctas > self.MAX_CLUSTER_SIZE:
            raise VerifyException(
                f"'cluster' {list(c)} has {ctas} CTAs, more than {self.MAX_CLUSTER_SIZE} "
                f"({self.PORTABLE_CLUSTER_SIZE} portable, up to {self.MAX_CLUSTER_SIZE} non-portable)"
            )
        for axis in range(3):
            if g[axis] % c[axis] != 0:
                raise VerifyException(
                    f"'grid' {list(g)} must be a multiple of 'cluster' {list(c)} in every dimension"
                )


LAUNCH_ATTR = "bulkred.launch"
"""The name of a kernel's launch-shape attribute."""


def kernel_launch(kernel: Operation) -> LaunchAttr | None:
    """The ``bulkred.launch`` of ``kernel``, or None when it has none.

    Raises a VerifyException when the attribute is there but is not a
    ``#bulkred.launch<...>`` (a ``bulkred.launch = 5`` would otherwise be ignored, and the
    kernel printed without ``.reqntid``)."""
    launch = kernel.attributes.get(LAUNCH_ATTR)
    if launch is None or isinstance(launch, LaunchAttr):
        return launch
    raise VerifyException(
        f"'{LAUNCH_ATTR}' must be a #bulkred.launch<grid = [..], block = [..], cluster = [..]> "
        f"attribute, got {launch}"
    )


# endregion


def enclosing_kernel(op: Operation) -> func.FuncOp | None:
    """The ``func.func`` (kernel) that ``op`` is nested in, or None."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent


def check_in_kernel(op: Operation) -> None:
    """Raise unless ``op`` is nested in a ``func.func`` (a kernel): the lowerings turn
    tile ops into kernel code (branches, barriers, thread ids), which has no meaning at
    module level."""
    if enclosing_kernel(op) is None:
        raise VerifyException("must be inside a func.func kernel")


def scope_of(t: Attribute) -> MemoryScope | None:
    """The ``#bulkred.scope`` of a buffer type, or None when it has none."""
    if isinstance(t, MemRefType) and isinstance(t.memory_space, MemoryScopeAttr):
        return t.memory_space.data
    return None


def buffer_type(shape: Sequence[int], element_type: Attribute, scope: MemoryScope) -> MemRefType:
    """``memref<shape x element_type, #bulkred.scope<scope>>``."""
    return MemRefType(element_type, list(shape), memory_space=MemoryScopeAttr(scope))


def _expect_buffer(field: str, v: SSAValue, scopes: Sequence[MemoryScope] | None = None) -> MemRefType:
    t = v.type
    s = scope_of(t)
    if not isinstance(t, MemRefType) or s is None:
        raise VerifyException(
            f"operand '{field}' must be a memref with a #bulkred.scope memory space, got {t}"
        )
    if scopes is not None and s not in scopes:
        raise VerifyException(
            f"operand '{field}' must be in scope {' or '.join(str(x) for x in scopes)}, got {s}"
        )
    return t


ELEMENT_TYPES: tuple[Attribute, ...] = tuple(d.ir for d in ELEMENT_DTYPES)
"""The element types of tile-level buffers (``ops/dtypes.py``'s rows with ``element``):
the ones every lowering handles.

Integers are signless and treated as signed by the lowering (``add/min/max.s16/s32/s64``,
``and/or/xor.b16/b32/b64``); floats are combined with PTX's own instructions.
"""


GRID_ELEMENT_TYPES: tuple[Attribute, ...] = tuple(d.ir for d in GRID_DTYPES)
"""The element types of grid-scope ``bulkred.reduce`` (``ops/dtypes.py``'s rows with
``collective`` or ``grid``): those of :data:`ELEMENT_TYPES` that the collective lowerings
take, and the unsigned (``ui8``...) and 8-bit ones, which only global buffers hold."""


def check_element_type(field: str, t: MemRefType, *, grid: bool = False) -> None:
    """Raise unless ``t``'s element type is one of :data:`ELEMENT_TYPES` (with ``grid``:
    of :data:`GRID_ELEMENT_TYPES`)."""
    elt = t.element_type
    types = GRID_ELEMENT_TYPES if grid else ELEMENT_TYPES
    if elt in types:
        return
    valid = ", ".join(str(e) for e in types)
    signedness = elt.signedness.data if isinstance(elt, IntegerType) else Signedness.SIGNLESS
    if grid and signedness == Signedness.SIGNED:
        note = " (integers must be signless or unsigned)"
    elif not grid and signedness != Signedness.SIGNLESS:
        note = " (integers must be signless)"
    else:
        note = ""
    raise VerifyException(f"'{field}' element type must be one of {valid}, got {elt}{note}")


def wider_dst_types(kind: str, src: Attribute) -> list[Attribute]:
    """The element types a grid-scope ``dst`` may have besides ``src``'s: the
    accumulator and output type of ``bulkred.sum(x, dtype=...)``. A float ``src`` into a
    wider f32 or f64 (any kind); an integer ``src`` into a wider integer of 32 or 64
    bits for ``sum`` and ``prod``, signless (signed) from any integer, unsigned only
    from an unsigned one."""
    s = of_ir(src)
    if s is None:
        return []
    if s.is_float:
        return [d.ir for d in GRID_DTYPES if d.is_float and d.bits >= 32 and d.bits > s.bits]
    if kind not in ("sum", "prod"):
        return []
    return [
        d.ir for d in GRID_DTYPES if not d.is_float and d.bits >= 32 and d.bits > s.bits and (d.signed or not s.signed)
    ]


def check_dst_element_type(kind: str, src: Attribute, dst: Attribute, *, grid: bool) -> None:
    """Raise unless ``dst``, an element type other than ``src``, is one of
    :func:`wider_dst_types` at grid scope."""
    if not grid:
        raise VerifyException(f"'dst' element type must equal 'src' element type {src} below grid scope, got {dst}")
    valid = wider_dst_types(kind, src)
    if dst in valid:
        return
    if valid:
        expected = f"src's {src} or a wider accumulator type ({', '.join(str(v) for v in valid)})"
    else:
        expected = f"src's {src} (kind {kind} of {src} has no wider accumulator type)"
    raise VerifyException(f"'dst' element type must be {expected}, got {dst}")


def check_bool_kind(kind: str, src: Attribute, dst: Attribute) -> None:
    """Raise unless ``any``/``all`` reduce an ``i1`` (bool) ``src``, and unless a ``sum``
    of ``i1`` has a wider integer ``dst`` (a count does not fit in a bool)."""
    if kind in BOOL_KINDS and src != IntegerType(1):
        # without a prologue: any/all of another type reduce x != 0 (numpy's and torch's
        # rule) through the prologue [nonzero], which skips this check (check_nonzero_dst)
        raise VerifyException(f"'kind' {kind} needs element type i1 (bool), got {src}")
    if kind == ReduceKind.SUM and src == IntegerType(1) and dst == src:
        valid = ", ".join(str(v) for v in wider_dst_types(kind, src))
        raise VerifyException(f"'dst' element type of a sum of i1 (bool) must be a wider integer ({valid}), got {dst}")


def check_nonzero_dst(kind: str, dst: Attribute) -> None:
    """Raise unless a reduction with the prologue ``[nonzero]`` (each element as 1 or 0)
    has a ``dst`` it can fill: ``any``/``all`` into ``i1`` (bool), ``sum`` (a count) into
    a 32- or 64-bit integer."""
    if kind in BOOL_KINDS:
        if dst != IntegerType(1):
            raise VerifyException(f"'dst' element type of {kind} with the prologue [nonzero] must be i1 (bool), got {dst}")
        return
    if kind != ReduceKind.SUM:
        raise VerifyException(f"'prologue' map 'nonzero' is only valid with kind any, all or sum (a count), got kind {kind}")
    if not isinstance(dst, IntegerType) or dst.width.data not in (32, 64) or dst.signedness.data == Signedness.SIGNED:
        raise VerifyException(
            f"'dst' element type of a sum with the prologue [nonzero] (a count) must be i32, i64, ui32 or ui64, got {dst}"
        )


def check_static_positive_shape(field: str, t: MemRefType) -> list[int]:
    """The shape of ``t``; raise when a dimension is dynamic or < 1."""
    shape = list(t.get_shape())
    if any(d == DYNAMIC_INDEX for d in shape):
        raise VerifyException(f"'{field}' must have a static shape, got {shape_str(shape)}")
    if any(d < 1 for d in shape):
        raise VerifyException(f"'{field}' dimensions must be >= 1, got {shape}")
    return shape


def shape_str(shape: Sequence[int]) -> str:
    """``[?, 4]`` for a shape with a dynamic dimension."""
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) + "]"


MAX_GRID_RANK = 8
"""The highest rank of a grid-scope ``bulkred.reduce``'s ``src``."""


def check_axes(axes: Sequence[int], rank: int) -> None:
    """Raise unless ``axes`` is a non-empty, ascending list of distinct axes of a
    ``src`` of rank ``rank`` (grid-scope ``bulkred.reduce``)."""
    if not axes:
        raise VerifyException("'axes' must name at least one axis, got []")
    bad = [a for a in axes if not 0 <= a < rank]
    if bad:
        raise VerifyException(
            f"'axes' must be in [0, {rank}) for 'src' of rank {rank}, got {', '.join(map(str, bad))} in {list(axes)}"
        )
    repeated = sorted({a for a in axes if list(axes).count(a) > 1})
    if repeated:
        raise VerifyException(
            f"'axes' must be distinct, got {', '.join(map(str, repeated))} more than once in {list(axes)}"
        )
    if list(axes) != sorted(axes):
        raise VerifyException(f"'axes' must be in ascending order, {sorted(axes)}, got {list(axes)}")


@op_definition
class ReduceOp(IRDLOperation):
    """Reduce ``src`` into ``dst`` at an execution scope.

    * ``thread``: one thread reduces its own buffer along the last axis: a 1-D ``src``
      of length N into ``dst`` of shape [1], a ``src`` of shape [M, N] into ``dst`` [M].
    * ``warp``, ``cta``, ``cluster``: every thread of the warp (CTA, cluster) reduces
      its own ``src`` as at thread scope, then the threads combine their results; every
      thread's ``dst`` receives the combined value. All threads of the scope must
      execute the op. ``src`` and ``dst`` are ``local`` buffers.
    * ``grid``: the whole kernel reduces a ``global`` ``src`` of rank 1 to 8 over
      ``axes`` (ascending and distinct; all axes when absent) into a ``global`` ``dst`` whose shape is ``src``'s without those axes
      ([1] when every axis is reduced). The lowering chooses the launch shape (tile
      sizes, split count, cluster) and writes it into the kernel's ``bulkred.launch``;
      the op must be the only tile op of its kernel.

    With ``accum`` the result is combined with ``dst``'s previous value.
    ``deterministic`` (grid scope) asks for a lowering that gives the same bits on every
    run (no floating-point atomics). Float ``max`` and ``min`` propagate NaN (a NaN
    anywhere gives NaN, as numpy and torch do); ``ignore_nan`` (max/min of a float type
    only) drops NaN inputs instead, as PTX's plain ``max``/``min`` do (all NaN: NaN).
    ``variant`` forces a lowering variant by name.
    The element type is one of :data:`ELEMENT_TYPES`; every dimension is static and >= 1.

    Fused reductions (grid scope only, docs/fused.md):

    * ``prologue``: maps applied in order to each element, in the accumulator type, as it
      is loaded (:data:`PROLOGUE_MAPS`: ``cast``, ``abs``, ``square``, ``pow p`` (``|x|**p``),
      ``scale s``, ``exp_sub``: ``exp(x - c)`` with ``c`` read from ``aux`` at the
      element's output, ``nonzero``, ``nan_zero``: NaN as 0, kind ``sum`` only: a
      nansum); ``epilogue``: maps applied in order to each result before it is stored
      (:data:`EPILOGUE_MAPS`: ``div_count``, ``sqrt``, ``log``, ``pow p``, ``scale s``), not
      with ``accum``. ``sum`` with ``[square]`` and ``[sqrt]`` is the L2 norm;
      ``max`` with ``[abs]`` the absmax; ``sum`` with ``[div_count]`` the mean.
    * ``argmax`` / ``argmin``: ``dst`` (``i64``) receives the index of the first largest
      (smallest) element, row-major over the reduced axes; NaN counts as the largest
      (and, for argmin, the smallest), as torch does. ``aux`` (optional, ``src``'s element
      type) receives the value.
    * ``var``: ``dst`` receives the variance, the sum of squared deviations divided by
      ``N - correction`` (``correction`` 0 when absent; ``N - correction <= 0`` gives
      inf, or NaN when the deviations are all 0, as torch does); ``aux`` (optional)
      receives the mean. The epilogue applies to the variance (``[sqrt]``: std).
    * ``logsumexp``: ``log(sum(exp(x)))`` with a running shift (one read; no overflow).
    * ``nanmean``: the mean of the elements that are not NaN (after the prologue): a sum
      and a count of them; all NaN gives NaN (0 / 0). The epilogue applies to the mean.
    * ``minmax``: ``dst`` receives the minimum and ``aux`` (required, ``dst``'s element
      type) the maximum, both NaN where a NaN was reduced (as torch.aminmax); no epilogue.

    Example::

        bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
        bulkred.reduce max warp accum %a, %b : ...
        bulkred.reduce max grid ignore_nan %x, %y : ...
        bulkred.reduce prod thread %a, %b : ...
        bulkred.reduce sum grid axes [0 : i64] %x, %y : memref<65536x4096xf32, #bulkred.scope<global>>, memref<4096xf32, #bulkred.scope<global>>
        bulkred.reduce sum grid prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] %x, %n : ...
        bulkred.reduce var grid axes [1 : i64] correction 1 : i64 %x, %v aux %m : memref<64xf32, ...> : ...
        bulkred.reduce argmax grid %x, %i : memref<1024xf32, ...>, memref<1xi64, ...>
        bulkred.reduce minmax grid axes [1 : i64] %x, %lo aux %hi : memref<64xf32, ...> : ...

    Spec: the TIRx reduction card (docs/lowering.md) for thread scope; docs/scopes.md for
    the others.
    """

    name = "bulkred.reduce"

    kind = prop_def(ReduceKindAttr)
    scope = prop_def(ExecScopeAttr)
    accum = opt_prop_def(UnitAttr)
    deterministic = opt_prop_def(UnitAttr)
    ignore_nan = opt_prop_def(UnitAttr)
    axes = opt_prop_def(ArrayAttr[IntegerAttr])
    prologue = opt_prop_def(ArrayAttr[MapAttr])
    epilogue = opt_prop_def(ArrayAttr[MapAttr])
    correction = opt_prop_def(IntegerAttr)
    variant = opt_prop_def(StringAttr)
    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    aux = opt_operand_def(MemRefType)

    assembly_format = (
        "$kind $scope (`accum` $accum^)? (`deterministic` $deterministic^)? "
        "(`ignore_nan` $ignore_nan^)? (`axes` $axes^)? (`prologue` $prologue^)? "
        "(`epilogue` $epilogue^)? (`correction` $correction^)? "
        "(`variant` $variant^)? $src `,` $dst (`aux` $aux^ `:` type($aux))? attr-dict `:` type($src) `,` type($dst)"
    )

    def __init__(
        self,
        kind: ReduceKind,
        src: SSAValue,
        dst: SSAValue,
        *,
        scope: ExecScope = ExecScope.THREAD,
        accum: bool = False,
        deterministic: bool = False,
        ignore_nan: bool = False,
        axes: Sequence[int] | None = None,
        variant: str | None = None,
        prologue: Sequence[MapAttr | str | tuple[str, float]] | None = None,
        epilogue: Sequence[MapAttr | str | tuple[str, float]] | None = None,
        correction: int | None = None,
        aux: SSAValue | None = None,
    ):
        props: dict[str, Attribute] = {"kind": ReduceKindAttr(kind), "scope": ExecScopeAttr(scope)}
        for name, maps in (("prologue", prologue), ("epilogue", epilogue)):
            if maps:
                props[name] = ArrayAttr(
                    m if isinstance(m, MapAttr) else MapAttr(m) if isinstance(m, str) else MapAttr(*m) for m in maps
                )
        if correction is not None:
            props["correction"] = IntegerAttr(correction, i64)
        if accum:
            props["accum"] = UnitAttr()
        if deterministic:
            props["deterministic"] = UnitAttr()
        if ignore_nan:
            props["ignore_nan"] = UnitAttr()
        if axes is not None:
            props["axes"] = ArrayAttr(IntegerAttr(a, i64) for a in axes)
        if variant is not None:
            props["variant"] = StringAttr(variant)
        super().__init__(operands=[src, dst, [aux] if aux is not None else []], properties=props)

    @staticmethod
    def expected_dst_shape(src_shape: Sequence[int], axes: Sequence[int] | None = None) -> list[int]:
        """``dst``'s shape: ``src``'s without the last axis (thread and collective
        scopes) or without ``axes`` (grid scope); [1] when nothing is left."""
        if axes is None:
            kept = list(src_shape[:-1])
        else:
            kept = [d for i, d in enumerate(src_shape) if i not in set(axes)]
        return kept or [1]

    def reduced_axes(self) -> list[int]:
        """The axes reduced: ``axes`` when given, else every axis (grid scope) or the
        last one (the other scopes)."""
        st = self.src.type
        assert isinstance(st, MemRefType)
        rank = len(st.get_shape())
        if self.axes is not None:
            return [a.value.data for a in self.axes.data]  # type: ignore[union-attr]
        return list(range(rank)) if self.scope.data == ExecScope.GRID else [rank - 1]

    def verify_(self) -> None:
        check_in_kernel(self)
        st = _expect_buffer("src", self.src)
        dt = _expect_buffer("dst", self.dst)
        grid_scope = self.scope.data == ExecScope.GRID
        check_element_type("src", st, grid=grid_scope)
        kind = self.kind.data
        fused = kind in FUSED_KINDS or self.prologue is not None or self.epilogue is not None
        if fused and not grid_scope:
            what = f"'kind' {kind}" if kind in FUSED_KINDS else "a prologue or epilogue"
            raise VerifyException(f"{what} is only valid at grid scope, got scope {self.scope.data}")
        nonzero = [m.map_fn for m in self.maps("prologue")] == [MapFn.NONZERO]
        if any(m.map_fn == MapFn.NONZERO for m in self.maps("prologue")) and not nonzero:
            raise VerifyException("'prologue' map 'nonzero' must be the only map, got " + ", ".join(
                str(m.map_fn) for m in self.maps("prologue")))
        if kind in INDEX_KINDS:
            if dt.element_type != i64:
                raise VerifyException(f"'dst' element type of kind {kind} must be i64 (the index), got {dt.element_type}")
        elif nonzero:
            check_nonzero_dst(kind, dt.element_type)
        elif st.element_type != dt.element_type:
            check_dst_element_type(kind, st.element_type, dt.element_type, grid=grid_scope)
        self._verify_fused(st, dt)
        src_shape = check_static_positive_shape("src", st)
        dst_shape = check_static_positive_shape("dst", dt)
        if not src_shape:
            raise VerifyException("'src' must have at least one dimension")
        scope = self.scope.data
        grid = scope == ExecScope.GRID
        if grid and len(src_shape) > MAX_GRID_RANK:
            raise VerifyException(
                f"'src' of a grid-scope reduction must have rank 1 to {MAX_GRID_RANK}, got rank {len(src_shape)}"
            )
        axes: list[int] | None = None
        if self.axes is not None:
            if not grid:
                raise VerifyException(f"'axes' is only valid at grid scope, got scope {scope}")
            axes = self.reduced_axes()
            check_axes(axes, len(src_shape))
        elif grid:
            axes = list(range(len(src_shape)))
        if self.deterministic is not None and not grid:
            raise VerifyException(f"'deterministic' is only valid at grid scope, got scope {scope}")
        if grid:
            for field, t in (("src", st), ("dst", dt)):
                if scope_of(t) != MemoryScope.GLOBAL:
                    raise VerifyException(f"operand '{field}' must be in scope global at grid scope, got {scope_of(t)}")
            check_grid_view("src", st)
        want = self.expected_dst_shape(src_shape, axes)
        if dst_shape != want:
            what = f"over axes {axes}" if grid else "along its last axis"
            raise VerifyException(
                f"'dst' shape must be {want} to reduce 'src' {src_shape} {what}, got {dst_shape}"
            )
        if self.kind.data in BITWISE_KINDS and not isinstance(st.element_type, IntegerType):
            raise VerifyException(
                f"'kind' {self.kind.data} needs an integer element type, got {st.element_type}"
            )
        if [m.map_fn for m in self.maps("prologue")] != [MapFn.NONZERO]:
            check_bool_kind(self.kind.data, st.element_type, dt.element_type)
        if self.ignore_nan is not None:
            if self.kind.data not in MINMAX_KINDS:
                raise VerifyException(f"'ignore_nan' is only valid with kind max or min, got kind {self.kind.data}")
            if isinstance(st.element_type, IntegerType):
                raise VerifyException(
                    f"'ignore_nan' is only valid with a floating-point element type, got {st.element_type}"
                )

    def maps(self, field: str) -> list[MapAttr]:
        """The ``prologue`` or ``epilogue`` maps, in order (none: [])."""
        a = self.prologue if field == "prologue" else self.epilogue
        return list(a.data) if a is not None else []  # type: ignore[union-attr]

    def _verify_fused(self, st: MemRefType, dt: MemRefType) -> None:
        kind = self.kind.data
        src, dst = st.element_type, dt.element_type
        if kind in FLOAT_ONLY_KINDS and isinstance(src, IntegerType):
            raise VerifyException(f"'kind' {kind} needs a floating-point element type, got {src}")
        # the accumulator: a wider dst's type, else src's accumulator (docs/scopes.md)
        s_dt = of_ir(src)
        acc = dst if kind not in INDEX_KINDS and dst != src else (s_dt.accumulator.ir if s_dt is not None else src)
        check_maps("prologue", self.maps("prologue"), PROLOGUE_MAPS, acc, kind)
        check_maps("epilogue", self.maps("epilogue"), EPILOGUE_MAPS, acc, kind)
        if self.epilogue is not None and self.accum is not None:
            raise VerifyException("'epilogue' is not valid with 'accum' (the epilogue applies to the final result)")
        if self.correction is not None:
            if kind != ReduceKind.VAR:
                raise VerifyException(f"'correction' is only valid with kind var, got kind {kind}")
            if self.correction.value.data < 0:
                raise VerifyException(f"'correction' must be >= 0, got {self.correction.value.data}")
        if kind in FUSED_KINDS and self.accum is not None:
            raise VerifyException(f"'accum' is not valid with kind {kind}")
        if kind in FUSED_KINDS and self.ignore_nan is not None:
            raise VerifyException(f"'ignore_nan' is not valid with kind {kind}")
        exp_sub = any(m.map_fn == MapFn.EXP_SUB for m in self.maps("prologue"))
        if exp_sub and kind in FUSED_KINDS:
            why = "its 'aux' is an output" if kind in (*INDEX_KINDS, ReduceKind.VAR, ReduceKind.MINMAX) else "a plain kind's map"
            raise VerifyException(f"'prologue' map 'exp_sub' is not valid with kind {kind} ({why})")
        if exp_sub and self.aux is None:
            raise VerifyException("'prologue' map 'exp_sub' needs 'aux', the buffer of c (one per output), got none")
        if kind == ReduceKind.MINMAX and self.aux is None:
            raise VerifyException("'kind' minmax needs 'aux', the buffer of the maximum ('dst' receives the minimum), got none")
        if self.aux is not None:
            if kind not in INDEX_KINDS and kind not in (ReduceKind.VAR, ReduceKind.MINMAX) and not exp_sub:
                raise VerifyException(
                    "'aux' is only valid with kind argmax, argmin, var or minmax, or with the prologue map exp_sub, "
                    f"got kind {kind}"
                )
            at = _expect_buffer("aux", self.aux)
            want = src if kind in INDEX_KINDS else dst
            if at.element_type != want:
                what = (
                    "the values (src's element type)" if kind in INDEX_KINDS
                    else "the mean (dst's element type)" if kind == ReduceKind.VAR
                    else "the maximum (dst's element type)" if kind == ReduceKind.MINMAX
                    else "exp_sub's c (dst's element type)"
                )
                raise VerifyException(f"'aux' element type must be {want}, {what}, got {at.element_type}")
            if list(at.get_shape()) != list(dt.get_shape()):
                raise VerifyException(f"'aux' shape must be dst's {list(dt.get_shape())}, got {list(at.get_shape())}")
            if scope_of(at) != MemoryScope.GLOBAL:
                raise VerifyException(f"operand 'aux' must be in scope global at grid scope, got {scope_of(at)}")
            if not isinstance(at.layout, NoneAttr):
                raise VerifyException(f"'aux' must be contiguous (no layout), got {at.layout}")

    @property
    def propagates_nan(self) -> bool:
        """Whether a NaN input makes the result NaN (float max/min without ``ignore_nan``;
        sum and prod propagate NaN by their arithmetic anyway)."""
        return self.ignore_nan is None


@op_definition
class CopyOp(IRDLOperation):
    """Element-wise copy between two buffers of one shape and element type, by the
    executing threads of ``scope`` (the card's ``for i in T.serial(n): dst[i] = src[i]``).
    The element type is one of :data:`ELEMENT_TYPES`; every dimension is static and >= 1.

    Example: ``bulkred.copy %A, %A_local : memref<32xf32, #bulkred.scope<global>>, memref<32xf32, #bulkred.scope<local>>``
    """

    name = "bulkred.copy"

    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)

    assembly_format = "$src `,` $dst attr-dict `:` type($src) `,` type($dst)"

    def __init__(self, src: SSAValue, dst: SSAValue):
        super().__init__(operands=[src, dst])

    def verify_(self) -> None:
        check_in_kernel(self)
        st = _expect_buffer("src", self.src)
        dt = _expect_buffer("dst", self.dst)
        if st.get_shape() != dt.get_shape() or st.element_type != dt.element_type:
            raise VerifyException(
                f"'dst' must have the shape and element type of 'src' {st}, got {dt}"
            )
        check_element_type("src", st)
        check_static_positive_shape("src", st)


@op_definition
class BulkCopyOp(IRDLOperation):
    """Asynchronous bulk copy between memories (lowers to ``cp.async.bulk``).

    Directions: global -> shared, global -> cluster_shared (to the CTA ``rank``, or
    multicast to the CTAs of ``cta_mask``, issued by CTA 0 and collective over the
    cluster), shared -> cluster_shared (to the CTA
    ``rank``), shared -> global. Copies into shared memory complete on ``mbar``; the copy
    to global completes through the bulk async-group. The byte size must be a multiple
    of 16 and at most :data:`MAX_SHARED_BYTES` (the shared buffer must fit in one CTA's
    shared memory). ``src`` and ``dst`` may be ``memref.subview`` views that cover one
    contiguous range (:func:`check_contiguous`). Like every tile op it must be inside a
    ``func.func`` kernel.

    Into cluster_shared with ``rank`` (an ``index``, the same in every CTA) the op is
    collective over the cluster: every CTA other than ``rank`` copies its ``src`` into
    the ``dst`` of CTA ``rank`` (``dst`` may be a view at a per-CTA offset, so that the
    copies land side by side); when it returns, CTA ``rank``'s ``dst`` holds them.

    Example: ``bulkred.bulk_copy %g, %s, %mbar : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>``

    ``bulkred.bulk_copy %s, %c, %mbar rank %r : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>``
    """

    name = "bulkred.bulk_copy"

    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    mbar = opt_operand_def(MemRefType)
    cta_mask = opt_operand_def(IntegerType(16))
    rank = opt_operand_def(IndexType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$src `,` $dst (`,` $mbar^)? (`multicast` $cta_mask^)? (`rank` $rank^)? attr-dict "
        "`:` type($src) `,` type($dst) (`,` type($mbar)^)?"
    )

    _DIRECTIONS: ClassVar = {
        (MemoryScope.GLOBAL, MemoryScope.SHARED),
        (MemoryScope.GLOBAL, MemoryScope.CLUSTER_SHARED),
        (MemoryScope.SHARED, MemoryScope.CLUSTER_SHARED),
        (MemoryScope.SHARED, MemoryScope.GLOBAL),
    }

    def verify_(self) -> None:
        check_in_kernel(self)
        st = _expect_buffer("src", self.src)
        dt = _expect_buffer("dst", self.dst)
        direction = (scope_of(st), scope_of(dt))
        if direction not in self._DIRECTIONS:
            raise VerifyException(
                f"bulk copy from {direction[0]} to {direction[1]} is not supported "
                "(valid: global->shared, global->cluster_shared, shared->cluster_shared, shared->global)"
            )
        if st.get_shape() != dt.get_shape() or st.element_type != dt.element_type:
            raise VerifyException(f"'dst' must have the shape and element type of 'src' {st}, got {dt}")
        _check_bulk_bytes(st, direction[1])
        check_contiguous("src", st)
        check_contiguous("dst", dt)
        needs_mbar = direction[1] != MemoryScope.GLOBAL
        if needs_mbar and self.mbar is None:
            raise VerifyException(f"a bulk copy into {direction[1]} needs an 'mbar' operand")
        if not needs_mbar and self.mbar is not None:
            raise VerifyException("a bulk copy into global completes by bulk group and takes no 'mbar'")
        _check_mbar(self.mbar)
        if self.cta_mask is not None and direction != (MemoryScope.GLOBAL, MemoryScope.CLUSTER_SHARED):
            raise VerifyException("'cta_mask' (multicast) is only valid for a global -> cluster_shared copy")
        if self.cta_mask is not None and self.rank is not None:
            raise VerifyException(
                "'rank' is not valid with 'cta_mask': a multicast copy writes every CTA of the mask"
            )
        if self.cta_mask is None:
            _check_rank(self, self.rank, direction[1], bulk_bytes(st))
        else:
            _check_cluster_launch(self, bulk_bytes(st), senders_per_receiver=1)


def _check_mbar(v: SSAValue | None) -> None:
    if v is None:
        return
    want = buffer_type([1], IntegerType(64), MemoryScope.SHARED)
    if v.type != want:
        raise VerifyException(f"operand 'mbar' must be {want}, got {v.type}")


def _ptx_reduce_type(kind: ReduceKind, elt: Attribute) -> str | None:
    """The cp.reduce.async.bulk '.type' a bulk reduce of ``kind`` on ``elt`` uses.

    Integers are signed; 64-bit add uses .u64 (the table has no .s64 add, and
    two's-complement addition does not depend on the sign).
    """
    d = of_ir(elt)
    if d is None or d.is_float:
        return None if d is None else d.short
    if d.bits not in (32, 64):
        return None
    if kind in BITWISE_KINDS:
        return f"b{d.bits}"
    if kind == ReduceKind.SUM and d.bits == 64:
        return "u64"
    return f"s{d.bits}"


def _check_reduce_table(kind: ReduceKind, elt: Attribute, dst: MemoryScope) -> None:
    from bulkred_dialect.ops.ptx.base import StateSpace
    from bulkred_dialect.ops.ptx.bulk import REDUCE_TABLE, BulkRedOp

    space = StateSpace.GLOBAL if dst == MemoryScope.GLOBAL else StateSpace.SHARED_CLUSTER
    red_op = BulkRedOp("add" if kind == ReduceKind.SUM else str(kind))
    valid = [str(t) for t in REDUCE_TABLE[space].get(red_op, ())]
    ptx_type = _ptx_reduce_type(kind, elt)
    if ptx_type is None or ptx_type not in valid:
        raise VerifyException(
            f"'kind' {kind} on element type {elt} has no cp.reduce.async.bulk form into {dst} "
            f"(valid .type for .{red_op}: {', '.join(valid)})"
        )


MAX_SHARED_BYTES = 232448
"""The most shared memory one CTA can have on any target with bulk operations (227 KiB
on sm_90 and sm_100; CUDA C++ Programming Guide, "Technical Specifications per Compute
Capability"): every bulk operation reads or writes a shared buffer of its full size.
How much of it static ``.shared`` arrays may take depends on the target (48 KiB unless
it is sm_90a/sm_100a/sm_103a): ``lower-to-ptx`` and the printer check the kernel's total."""

MAX_TX_BYTES = 2**20 - 1
"""The largest transaction count of an mbarrier (PTX ISA, mbarrier: "tx-count" is in the
range [0, 2^20 - 1]): the bytes one complete-tx bulk copy signals."""


def _bulk_limit(dst: MemoryScope) -> tuple[int, str]:
    """The largest bulk size in bytes into ``dst``, and why."""
    if dst == MemoryScope.GLOBAL:
        return MAX_SHARED_BYTES, "the largest shared memory of a CTA, which holds 'src'"
    # both limits apply; the shared-memory one is the smaller
    limit = min(MAX_SHARED_BYTES, MAX_TX_BYTES)
    return limit, (
        f"the largest shared memory of a CTA, which holds 'dst'; "
        f"the mbarrier tx-count allows {MAX_TX_BYTES}"
    )


def bulk_bytes(t: MemRefType) -> int:
    """The byte size of a buffer of type ``t`` (static shape, element type with a width)."""
    n = t.element_type.bitwidth // 8  # type: ignore[attr-defined]
    for d in t.get_shape():
        n *= d
    return n


def _check_bulk_bytes(t: MemRefType, dst: MemoryScope) -> None:
    """``src`` (of type ``t``): an allowed element type, a static positive shape, and a
    byte size that is a multiple of 16 and fits the shared memory of a CTA (and, into
    shared memory, the mbarrier transaction count)."""
    check_element_type("src", t)
    check_static_positive_shape("src", t)
    nbytes = bulk_bytes(t)
    if nbytes % 16 != 0:
        raise VerifyException(f"bulk size must be a multiple of 16 bytes, got {nbytes}")
    limit, why = _bulk_limit(dst)
    if nbytes > limit:
        raise VerifyException(f"bulk size must be <= {limit} bytes ({why}), got {nbytes}")


def check_contiguous(field: str, t: MemRefType) -> None:
    """Raise unless a buffer of type ``t`` (a view, maybe) covers one contiguous range of
    memory starting at a 16-byte boundary when its offset is static: a bulk operation
    moves one range of bytes. A row slice of a matrix is contiguous only when it spans
    full rows (dimensions of extent 1 do not matter)."""
    if isinstance(t.layout, NoneAttr):
        return
    shape = list(t.get_shape())
    strides = t.get_strides()
    expected = 1
    ok = strides is not None and None not in strides
    if ok:
        assert strides is not None
        for d, stride in reversed(list(zip(shape, strides))):
            if d == 1:
                continue
            if stride != expected:
                ok = False
                break
            expected *= d
    if not ok:
        shown = "?" if strides is None else "[" + ", ".join("?" if x is None else str(x) for x in strides) + "]"
        raise VerifyException(
            f"'{field}' must be one contiguous range of memory for a bulk operation, got strides "
            f"{shown} for shape {shape_str(shape)} (a slice of a matrix is contiguous only when "
            "it spans full rows)"
        )
    offset = t.get_offset()
    esize = t.element_type.bitwidth // 8  # type: ignore[attr-defined]
    if offset is not None and offset * esize % 16 != 0:
        raise VerifyException(
            f"'{field}' must start at a multiple of 16 bytes for a bulk operation, got offset "
            f"{offset} elements ({offset * esize} bytes)"
        )


def check_grid_view(field: str, t: MemRefType) -> None:
    """Raise unless ``t``'s layout is the default or a view a grid-scope reduction reads
    in place: ``strided<[...]>`` with static element strides >= 0 and offset 0 (the
    kernel parameter is the view's first element)."""
    from xdsl.dialects.builtin import StridedLayoutAttr

    if isinstance(t.layout, NoneAttr):
        return
    if not isinstance(t.layout, StridedLayoutAttr):
        raise VerifyException(f"'{field}' of a grid-scope reduction must have a strided<[...]> layout or none, got {t.layout}")
    strides = t.get_strides() or []
    if any(s is None or s < 0 for s in strides):
        shown = ", ".join("?" if s is None else str(s) for s in strides)
        raise VerifyException(
            f"'{field}' of a grid-scope reduction must have static element strides >= 0, got strides [{shown}]"
        )
    if t.get_offset() != 0:
        off = t.get_offset()
        raise VerifyException(
            f"'{field}' of a grid-scope reduction must have offset 0 (the parameter points at the view's first "
            f"element), got offset {'?' if off is None else off}"
        )


def _check_rank(op: Operation, rank: SSAValue | None, dst: MemoryScope | None, nbytes: int) -> None:
    """A bulk op into cluster_shared names the receiving CTA with ``rank``; no other takes
    one. With the kernel's launch known, the cluster must have 2 or more CTAs and the
    bytes of every other CTA must fit the receiver's mbarrier transaction count."""
    if dst != MemoryScope.CLUSTER_SHARED:
        if rank is not None:
            raise VerifyException(f"'rank' is only valid for a bulk operation into cluster_shared, not into {dst}")
        return
    if rank is None:
        raise VerifyException(
            "a bulk operation into cluster_shared needs a 'rank' operand (the CTA whose buffer it writes)"
        )
    _check_cluster_launch(op, nbytes, senders_per_receiver=None)


def _check_cluster_launch(op: Operation, nbytes: int, senders_per_receiver: int | None) -> None:
    """With the kernel's launch known: a cluster of 2 or more CTAs, and the bytes one
    receiver expects (from every other CTA, or from ``senders_per_receiver``) within the
    mbarrier's tx-count."""
    kernel = enclosing_kernel(op)
    launch = kernel_launch(kernel) if kernel is not None else None
    if launch is None:
        return
    c = launch.cluster_dims
    ctas = c[0] * c[1] * c[2]
    if ctas < 2:
        raise VerifyException(
            f"a bulk operation into cluster_shared needs a kernel launched with a cluster of 2 or more "
            f"CTAs, got 'cluster' {list(c)}"
        )
    senders = ctas - 1 if senders_per_receiver is None else senders_per_receiver
    if senders * nbytes > MAX_TX_BYTES:
        raise VerifyException(
            f"the receiving CTA expects {senders} x {nbytes} bytes from the other CTAs of its cluster "
            f"of {ctas}, more than the mbarrier tx-count allows ({MAX_TX_BYTES})"
        )


@op_definition
class BulkReduceOp(IRDLOperation):
    """Asynchronous element-wise reduce of a shared buffer into a global or a peer
    CTA's shared buffer (lowers to ``cp.reduce.async.bulk``). The byte size must be a
    multiple of 16 and at most :data:`MAX_SHARED_BYTES`; views must be contiguous.

    Into cluster_shared it takes ``rank`` (an ``index``, the same in every CTA) and is
    collective over the cluster: every CTA other than ``rank`` reduces its ``src`` into
    the ``dst`` of CTA ``rank``; when it returns, that ``dst`` holds the result.

    Example: ``bulkred.bulk_reduce sum %tile, %out : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>``
    """

    name = "bulkred.bulk_reduce"

    kind = prop_def(ReduceKindAttr)
    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    mbar = opt_operand_def(MemRefType)
    rank = opt_operand_def(IndexType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$kind $src `,` $dst (`,` $mbar^)? (`rank` $rank^)? attr-dict `:` type($src) `,` type($dst) "
        "(`,` type($mbar)^)?"
    )

    def verify_(self) -> None:
        check_in_kernel(self)
        st = _expect_buffer("src", self.src, [MemoryScope.SHARED])
        dt = _expect_buffer("dst", self.dst, [MemoryScope.GLOBAL, MemoryScope.CLUSTER_SHARED])
        if st.get_shape() != dt.get_shape() or st.element_type != dt.element_type:
            raise VerifyException(f"'dst' must have the shape and element type of 'src' {st}, got {dt}")
        if self.kind.data in BITWISE_KINDS and not isinstance(st.element_type, IntegerType):
            raise VerifyException(f"'kind' {self.kind.data} needs an integer element type, got {st.element_type}")
        if self.kind.data in (ReduceKind.PROD, *BOOL_KINDS, *FUSED_KINDS):
            raise VerifyException(
                f"'kind' {self.kind.data} has no cp.reduce.async.bulk form (valid: sum, max, min, and, or, xor)"
            )
        _check_bulk_bytes(st, scope_of(dt))
        check_contiguous("src", st)
        check_contiguous("dst", dt)
        _check_reduce_table(self.kind.data, st.element_type, scope_of(dt))
        _check_mbar(self.mbar)
        to_cluster = scope_of(dt) == MemoryScope.CLUSTER_SHARED
        if to_cluster and self.mbar is None:
            raise VerifyException("a bulk reduce into cluster_shared needs an 'mbar' operand")
        if not to_cluster and self.mbar is not None:
            raise VerifyException("a bulk reduce into global completes by bulk group and takes no 'mbar'")
        _check_rank(self, self.rank, scope_of(dt), bulk_bytes(st))


# region Indices


class _ClusterIndexOp(IRDLOperation, ABC):
    """An ``index`` read from a special register of the executing CTA."""

    result = result_def(IndexType)

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])

    def verify_(self) -> None:
        check_in_kernel(self)


@op_definition
class ClusterRankOp(_ClusterIndexOp):
    """The rank of the executing CTA in its cluster, from 0 to ``bulkred.cluster_size`` - 1
    (the rank a bulk op into ``cluster_shared`` names; upstream ``gpu`` has no such op).

    PTX: ``mov.u32 %r, %cluster_ctarank;`` widened to ``index``.

    Example: ``%rank = bulkred.cluster_rank``

    Spec: PTX ISA, Special Registers, %cluster_ctarank.
    """

    name = "bulkred.cluster_rank"


@op_definition
class ClusterSizeOp(_ClusterIndexOp):
    """The number of CTAs in the executing CTA's cluster (1 without a cluster).

    PTX: ``mov.u32 %r, %cluster_nctarank;`` widened to ``index``; a constant when the
    kernel's ``bulkred.launch`` has a cluster of 2 or more CTAs (``.reqnctapercluster``
    holds every launch to it).

    Example: ``%n = bulkred.cluster_size``

    Spec: PTX ISA, Special Registers, %cluster_nctarank.
    """

    name = "bulkred.cluster_size"


# endregion


# region The list ops: bulkred.reduce_list, bulkred.scale_list (ops/tile_list.py names them)
#
# The tile-level ops over a list of global buffers (docs/foreach.md): one launch reduces
# any number of tensors of mixed element types, read through a device-resident descriptor
# table, and scales them in place.
#
# The descriptor table (``table``, ``i64``, ``[R, 4]``, ``R = 1 + T + G``; built by the host,
# ``bulkred_dialect/foreach.py``'s ``descriptor_table``):
#
# =========  =================================================================
# row 0      ``[T, G, chunk, B]``: tensors, CTAs (the launch's grid), the bytes of
#            one CTA's chunk (a multiple of 16), the bytes of the whole list
# row 1 + t  ``[address, numel, code, start]`` of tensor t: its first element's
#            address, its element count, ``code`` = element type (0 f32, 1 f16,
#            2 bf16) + 256 when the address is a multiple of 16 (vector loads),
#            ``start`` = its first byte in the list's byte stream (each tensor
#            starts at a multiple of 16 there)
# row 1+T+c  ``[t_first, t_stop, lo, hi]`` of CTA c: the tensors ``[t_first,
#            t_stop)`` that its chunk, bytes ``[lo, hi)`` of the stream, overlaps
# =========  =================================================================
#
# CTA c reduces the pieces of the tensors in its chunk; a tensor inside one chunk is
# reduced by one CTA, a longer one by each CTA its bytes reach, whose partials the last
# CTA (the ticket of docs/scopes.md) combines in chunk order: the results are the same
# bits on every run.
#
# Spec: the grid-scope reduction's maps and kinds (``ops/tile.py``, docs/fused.md).

LIST_KINDS = (ReduceKind.SUM, ReduceKind.MAX, ReduceKind.MIN)
"""The kinds of ``bulkred.reduce_list``: those whose one-register state combines (norms of
every order, amax, sums)."""
LIST_PROLOGUE_MAPS = (MapFn.ABS, MapFn.SQUARE, MapFn.POW, MapFn.SCALE, MapFn.NONZERO)
LIST_EPILOGUE_MAPS = (MapFn.SQRT, MapFn.POW, MapFn.SCALE)
TABLE_COLUMNS = 4
CODE_F32, CODE_F16, CODE_BF16 = 0, 1, 2
CODE_ALIGNED = 256
CLIP_EPS = 1e-6
"""``clip_by``: the factor is ``min(max_norm / (total + 1e-6), 1)``, as torch's clip_grad_norm_."""


def _check_global(field: str, v: SSAValue, element: Attribute, shape: Sequence[int | None]) -> MemRefType:
    """``v`` is a contiguous global memref of ``element`` and ``shape`` (None: any size,
    static or dynamic); raise naming ``field`` otherwise."""
    t = _expect_buffer(field, v, [MemoryScope.GLOBAL])
    if t.element_type != element:
        raise VerifyException(f"operand '{field}' element type must be {element}, got {t.element_type}")
    got = list(t.get_shape())
    ok = len(got) == len(shape) and all(
        w is None and (g == DYNAMIC_INDEX or g >= 1) or g == w for g, w in zip(got, shape, strict=False)
    )
    if not ok:
        want = "x".join("?" if w is None else str(w) for w in shape)
        have = "x".join("?" if g == DYNAMIC_INDEX else str(g) for g in got)
        raise VerifyException(f"operand '{field}' shape must be [{want}], got [{have}]")
    if not isinstance(t.layout, NoneAttr):
        raise VerifyException(f"operand '{field}' must be contiguous (no layout), got {t.layout}")
    return t


def _check_table(op: IRDLOperation, table: SSAValue) -> None:
    _check_global("table", table, i64, [None, TABLE_COLUMNS])


@op_definition
class ReduceListOp(IRDLOperation):
    """Reduce every tensor of a list (``table``, the descriptor table above) into
    ``dst[t]``, and all of them into ``total[0]``, in one launch.

    * ``kind`` (sum, max or min) and the ``prologue`` / ``epilogue`` maps are those of a
      grid-scope ``bulkred.reduce`` into float32 (the L2 norm: ``sum prologue [square]
      epilogue [sqrt]``; the p-norm: ``pow p`` and ``pow 1/p``; the inf-norm / amax:
      ``max prologue [abs]``; ord 0: ``sum prologue [nonzero]``). Every element is
      converted to float32 first. ``total`` is the epilogue of every element's state
      combined: of the per-tensor states in tensor order, not of their results (the
      2-norm of the list, not the sum of the norms).
    * ``scale %s`` (float32 [1]): each element is first multiplied by ``s[0]`` and
      written back in place in its own type, and that rounded value is what is reduced
      (AMP's unscale; ``s[0] == 1`` leaves the values as they are).
    * ``nonfinite %flag`` (float32 [1]): set to 1.0 when any element read (before
      ``scale``) is inf or NaN; never cleared (torch's ``found_inf``).

    An empty tensor gives the kind's identity before the epilogue (0 for the norms and
    sums). The results are the same bits on every run.

    Example::

        bulkred.reduce_list sum prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>]
            %table, %norms, %total : memref<?x4xi64, #bulkred.scope<global>>,
            memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
    """

    name = "bulkred.reduce_list"

    kind = prop_def(ReduceKindAttr)
    prologue = opt_prop_def(ArrayAttr[MapAttr])
    epilogue = opt_prop_def(ArrayAttr[MapAttr])
    table = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    total = operand_def(MemRefType)
    scale = opt_operand_def(MemRefType)
    flag = opt_operand_def(MemRefType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$kind (`prologue` $prologue^)? (`epilogue` $epilogue^)? $table `,` $dst `,` $total "
        "(`scale` $scale^ `:` type($scale))? (`nonfinite` $flag^ `:` type($flag))? "
        "attr-dict `:` type($table) `,` type($dst) `,` type($total)"
    )

    def __init__(
        self,
        kind: ReduceKind,
        table: SSAValue,
        dst: SSAValue,
        total: SSAValue,
        *,
        prologue: Sequence[MapAttr | str | tuple[str, float]] | None = None,
        epilogue: Sequence[MapAttr | str | tuple[str, float]] | None = None,
        scale: SSAValue | None = None,
        flag: SSAValue | None = None,
    ):
        props: dict[str, Attribute] = {"kind": ReduceKindAttr(kind)}
        for name, maps in (("prologue", prologue), ("epilogue", epilogue)):
            if maps:
                props[name] = ArrayAttr(
                    m if isinstance(m, MapAttr) else MapAttr(m) if isinstance(m, str) else MapAttr(*m) for m in maps
                )
        super().__init__(
            operands=[table, dst, total, [scale] if scale is not None else [], [flag] if flag is not None else []],
            properties=props,
        )

    def maps(self, field: str) -> list[MapAttr]:
        a = self.prologue if field == "prologue" else self.epilogue
        return list(a.data) if a is not None else []  # type: ignore[union-attr]

    def verify_(self) -> None:
        check_in_kernel(self)
        kind = self.kind.data
        if kind not in LIST_KINDS:
            raise VerifyException(f"'kind' of bulkred.reduce_list must be one of {', '.join(LIST_KINDS)}, got {kind}")
        _check_table(self, self.table)
        _check_global("dst", self.dst, f32, [None])
        _check_global("total", self.total, f32, [1])
        if self.scale is not None:
            _check_global("scale", self.scale, f32, [1])
        if self.flag is not None:
            _check_global("flag", self.flag, f32, [1])
        check_maps("prologue", self.maps("prologue"), LIST_PROLOGUE_MAPS, f32, kind)
        check_maps("epilogue", self.maps("epilogue"), LIST_EPILOGUE_MAPS, f32, kind)
        fns = [m.map_fn for m in self.maps("prologue")]
        if MapFn.NONZERO in fns and fns != [MapFn.NONZERO]:
            raise VerifyException("'prologue' map 'nonzero' must be the only map, got " + ", ".join(fns))


@op_definition
class ScaleListOp(IRDLOperation):
    """Multiply every element of every tensor of a list (``table``) in place by a factor
    read from device memory: ``factor[0]``, or with ``clip_by %total``
    ``min(factor[0] / (total[0] + 1e-6), 1)`` (``factor`` holds max_norm: torch's
    ``clip_grad_norm_`` coefficient). Each product is computed in float32 and rounded to
    the tensor's type. A factor of exactly 1 (and, for ``clip_by``, any factor >= 1)
    writes nothing; a NaN factor is applied (NaN everywhere, as torch).

    Example::

        bulkred.scale_list %table, %max_norm clip_by %total : memref<1xf32, ...>
            : memref<?x4xi64, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
    """

    name = "bulkred.scale_list"

    table = operand_def(MemRefType)
    factor = operand_def(MemRefType)
    total = opt_operand_def(MemRefType)

    assembly_format = (
        "$table `,` $factor (`clip_by` $total^ `:` type($total))? attr-dict `:` type($table) `,` type($factor)"
    )

    def __init__(self, table: SSAValue, factor: SSAValue, total: SSAValue | None = None):
        super().__init__(operands=[table, factor, [total] if total is not None else []])

    def verify_(self) -> None:
        check_in_kernel(self)
        _check_table(self, self.table)
        _check_global("factor", self.factor, f32, [1])
        if self.total is not None:
            _check_global("total", self.total, f32, [1])


LIST_OPS = [ReduceListOp, ScaleListOp]

# endregion


BULKRED = Dialect(
    "bulkred",
    [ReduceOp, CopyOp, BulkCopyOp, BulkReduceOp, ClusterRankOp, ClusterSizeOp, *LIST_OPS],
    [MemoryScopeAttr, ExecScopeAttr, ReduceKindAttr, LaunchAttr, MapAttr],
)
