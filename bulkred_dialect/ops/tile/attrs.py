"""The attributes of the dialect ``bulkred``: where a buffer lives (``#bulkred.scope``),
which threads cooperate (the execution scope), the reduction kinds, the elementwise
maps of a fused reduction (``#bulkred.map``) and a kernel's launch shape
(``#bulkred.launch``, read with :func:`kernel_launch`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntAttr, IntegerType, NoneAttr, StringAttr, f64
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum


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
