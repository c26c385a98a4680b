"""The element types of bulkred: one row per type, the one home of every fact about it.

Each :class:`DType` row holds a type's names (numpy's, torch's, DLPack's, the IR's and the
short spelling of kernel signatures), its byte width, its accumulator and the identity of
every reduction kind. Every other list of element types in the project derives from
:data:`DTYPES` through the flags and the look-ups below; adding a type is adding a row
(docs/DEVELOPING.md, "Add a dtype").

The module imports no xDSL (``import bulkred_dialect.api`` stays light): a row's IR type
(:attr:`DType.ir`) and the look-ups by IR type import it at their first use.

Integers follow MLIR's conventions: ``i32`` is signless (the lowerings treat it as signed,
``int32``), ``ui32`` unsigned, ``si32`` signed. bfloat16 has no numpy type: numpy holds its
bits as ``uint16``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from bulkred_dialect.errors import UnknownNameError, VerifyError

if TYPE_CHECKING:  # pragma: no cover
    from xdsl.ir import Attribute

# DLPack's DLDataTypeCode values (dlpack.h).
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_BOOL = 0, 1, 2, 4, 6


@dataclass(frozen=True)
class DType:
    """One element type.

    ``element``: a tile-level buffer may hold it (``bulkred.reduce`` at thread scope, the
    ``local`` variant, the builder). ``collective``: the warp, CTA, cluster and grid-scope
    lowerings take it, and so ``bulkred.sum`` and friends. ``grid``: the grid-scope
    lowerings take it in global buffers (every ``collective`` type, and the unsigned and
    8-bit types, which they load with ``ld`` into registers of their own width or 32
    bits: no tile-level register holds them)."""

    name: str  # numpy's, torch's and TIRx's spelling: "float32", "bfloat16", "int32"
    mlir: str  # the IR type's spelling: "f32", "bf16", "i32" (signless), "ui32"
    short: str  # the spelling of kernel signatures and PTX types: "f32", "bf16", "i32", "u32"
    bytes: int
    is_float: bool
    signed: bool  # integers: whether min/max/compare are signed (signless counts as signed)
    numpy: str  # the numpy dtype holding one element on the host ("uint16" for bfloat16's bits)
    torch: str | None  # the torch dtype's attribute name (torch.<torch>), None where torch has none
    dlpack: tuple[int, int]  # (DLDataTypeCode, bits)
    acc: str  # the accumulator's dtype name: f16 and bf16 accumulate in float32
    element: bool = False
    collective: bool = False
    grid: bool = False

    @property
    def at_grid(self) -> bool:
        """The grid-scope lowerings take it (``collective`` or ``grid``)."""
        return self.collective or self.grid

    @cached_property
    def ir(self) -> Attribute:
        """The IR type (xDSL is imported at the first use: ``import bulkred_dialect.api``
        stays free of it)."""
        from xdsl.dialects.builtin import IntegerType, Signedness, bf16, f16, f32, f64

        if self.is_float:
            return {"f16": f16, "bf16": bf16, "f32": f32, "f64": f64}[self.mlir]
        if self.is_bool:
            return IntegerType(1)
        return IntegerType(self.bits, Signedness.SIGNLESS if self.signed else Signedness.UNSIGNED)

    @property
    def bits(self) -> int:
        """Bits of one element in memory (bool: 8, one byte holding 0 or 1)."""
        return self.bytes * 8

    @property
    def is_bool(self) -> bool:
        """bool (IR ``i1``): one byte in memory holding 0 or 1, as numpy and torch store it."""
        return self.mlir == "i1"

    @property
    def accumulator(self) -> DType:
        return DTYPES[self.acc]

    def identity(self, kind: str, *, ignore_nan: bool = False) -> int | float:
        """The neutral value of reduction ``kind`` (``sum``, ``prod``, ``max``, ``min``,
        ``and``, ``or``, ``xor``) in this type: ``prod`` starts at 1, ``max`` at -inf or the
        type's lowest value. With ``ignore_nan`` a float max/min starts at NaN, which a
        NaN-ignoring ``max`` drops (so that only an all-NaN reduction gives NaN, as
        ``numpy.fmax`` does; -inf would turn it into -inf). A kind with no identity here is
        a :class:`VerifyError` (a ``ValueError``); the verifiers refuse such a reduction
        before any pass asks. ``any`` starts at 0 (false) and ``all`` at 1 (true); a bool's
        ``and``, ``max`` and ``min`` start at 1, 0 and 1 (its values are 0 and 1)."""
        if kind in ("any", "all"):
            return 0 if kind == "any" else 1
        if self.is_bool and kind in ("and", "max", "min"):
            return 0 if kind == "max" else 1
        if ignore_nan and self.is_float and kind in ("max", "min"):
            return math.nan
        if kind in ("sum", "or", "xor"):
            return 0.0 if self.is_float and kind == "sum" else 0
        if kind == "prod":
            return 1.0 if self.is_float else 1
        if kind == "and":
            if self.is_float:
                raise VerifyError(f"'and' has no identity in {self.name}")
            return -1 if self.signed else (1 << self.bits) - 1
        if kind not in ("max", "min"):
            raise VerifyError(f"unknown reduction kind '{kind}'")
        if self.is_float:
            return -math.inf if kind == "max" else math.inf
        lo, hi = (-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1) if self.signed else (0, (1 << self.bits) - 1)
        return lo if kind == "max" else hi


def _float(name: str, short: str, nbytes: int, dl: int, numpy: str, acc: str, element: bool, collective: bool) -> DType:
    return DType(name, short, short, nbytes, True, True, numpy, name, (dl, nbytes * 8), acc, element, collective)


def _int(
    bits: int, signed: bool, element: bool = False, collective: bool = False, acc: str | None = None, grid: bool = False
) -> DType:
    name = f"{'' if signed else 'u'}int{bits}"
    torch = name  # torch.uint16/32/64 (torch >= 2.3) take few kernels of torch's own, but bulkred's
    return DType(
        name, f"{'i' if signed else 'ui'}{bits}", f"{'i' if signed else 'u'}{bits}", bits // 8, False, signed, name, torch,
        (DL_INT if signed else DL_UINT, bits), acc or name, element, collective, grid,
    )


BOOL = DType("bool", "i1", "bool", 1, False, False, "bool", "bool", (DL_BOOL, 8), "uint32", grid=True)
"""bool: ``i1`` in the IR, one byte (0 or 1) in memory, loaded with ``ld.u8`` into a 32-bit
register; ``any``/``all`` are ``or``/``and`` of those 0/1 values (the kinds only it takes)."""

_ROWS: tuple[DType, ...] = (
    _int(8, True, acc="int32", grid=True),
    _int(16, True, element=True, acc="int32", grid=True),
    _int(32, True, element=True, collective=True),
    _int(64, True, element=True, collective=True),
    _float("float16", "f16", 2, DL_FLOAT, "float16", "float32", element=True, collective=True),
    _float("bfloat16", "bf16", 2, DL_BFLOAT, "uint16", "float32", element=True, collective=True),
    _float("float32", "f32", 4, DL_FLOAT, "float32", "float32", element=True, collective=True),
    _float("float64", "f64", 8, DL_FLOAT, "float64", "float64", element=True, collective=True),
    _int(8, False, acc="uint32", grid=True),
    _int(16, False, acc="uint32", grid=True),
    _int(32, False, grid=True),
    _int(64, False, grid=True),
    BOOL,
)
"""The rows, in the order messages list them (integers, then floats, then unsigned, then bool)."""

DTYPES: Mapping[str, DType] = MappingProxyType({d.name: d for d in _ROWS})
"""Every element type, by name."""

ELEMENT_DTYPES: tuple[DType, ...] = tuple(d for d in _ROWS if d.element)
"""The element types of tile-level buffers."""

COLLECTIVE_DTYPES: tuple[DType, ...] = tuple(d for d in _ROWS if d.collective)
"""The element types of the warp, CTA, cluster and grid-scope lowerings and of ``bulkred.sum``."""

GRID_DTYPES: tuple[DType, ...] = tuple(d for d in _ROWS if d.at_grid)
"""The element types of grid-scope ``bulkred.reduce`` (source and destination)."""

_BY_SHORT: dict[str, DType] = {d.short: d for d in _ROWS}


@functools.cache
def _by_ir() -> dict[Attribute, DType]:
    return {d.ir: d for d in _ROWS}


def dtype(name: str) -> DType:
    """The row named ``name`` (``"float32"``); an :class:`UnknownNameError` (a ``KeyError``)
    naming the valid ones otherwise."""
    try:
        return DTYPES[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name
        raise UnknownNameError(f"unknown dtype '{name}' (valid: {', '.join(DTYPES)})") from None


def of_ir(t: Attribute) -> DType | None:
    """The row of IR type ``t`` (``f32``, ``i32``, ``ui32``), None for another type.
    A signed ``si32`` is ``int32``'s row (signless integers are treated as signed)."""
    from xdsl.dialects.builtin import IntegerType, Signedness

    d = _by_ir().get(t)
    if d is None and isinstance(t, IntegerType) and t.signedness.data == Signedness.SIGNED:
        d = _by_ir().get(IntegerType(t.width.data))
    return d


def of_torch(t: Any) -> DType | None:
    """The row of a torch dtype (``torch.float32``), from the rows' ``torch`` names (torch
    is not imported here: ``t``'s module is), None for another."""
    rows = _BY_TORCH.get(id(t))
    if rows is None:
        import sys

        torch = sys.modules.get("torch")
        if torch is None:
            return None
        for d in _ROWS:
            if d.torch is not None and hasattr(torch, d.torch):
                _BY_TORCH[id(getattr(torch, d.torch))] = d
        rows = _BY_TORCH.get(id(t))
    return rows


_BY_TORCH: dict[int, DType] = {}  # id(torch.<dtype>) -> row: torch's dtypes are singletons


def of_short(short: str) -> DType | None:
    """The row of a short spelling (``"f32"``, ``"bf16"``, ``"i32"``, ``"u32"``; ``"s32"`` is
    ``"i32"``'s row), None for another."""
    if short.startswith("s") and short[1:].isdigit():
        short = "i" + short[1:]
    return _BY_SHORT.get(short)


def ir_name(t: Attribute) -> str:
    """TIRx's spelling of an IR type (``float32``, ``bfloat16``, ``int32``) for messages and
    predicates: ``ui32`` is ``uint32`` and ``si32`` is ``sint32``, so that nothing mistakes
    them for ``int32``; a type with no row prints as itself."""
    from xdsl.dialects.builtin import IntegerType, Signedness

    if isinstance(t, IntegerType) and t.width.data == 1:
        return "bool"
    if isinstance(t, IntegerType):
        prefix = {Signedness.SIGNLESS: "int", Signedness.SIGNED: "sint", Signedness.UNSIGNED: "uint"}
        return f"{prefix[t.signedness.data]}{t.width.data}"
    d = _by_ir().get(t)
    return d.name if d is not None else str(t)
