"""The ptx types of each element type, derived from its row of ``ops/dtypes.py``: the
``ld``/``st`` type that moves it, the ``cvt`` type that widens it, the ``.type`` of its
scalar arithmetic, and :class:`Elem`, which bundles them for the collective lowerings.

Nothing here names an element type: a type's facts come from :data:`DTYPES`, and the
element types of each lowering from :data:`ELEMENT_DTYPES` and :data:`COLLECTIVE_DTYPES`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Attribute

from bulkred_dialect.ops.dtypes import COLLECTIVE_DTYPES, DType
from bulkred_dialect.ops.ptx.arith import ArithType
from bulkred_dialect.ops.ptx.control import CvtType
from bulkred_dialect.ops.ptx.memory import LdStType

def ld_type(d: DType) -> LdStType:
    """The ``ld``/``st`` ``.type`` moving one element: ``.f32``/``.f64`` for those floats,
    else the bit type of its width (``ld`` has no ``.f16``/``.bf16``)."""
    if d.is_float and d.bits >= 32:
        return LdStType(d.short)
    return LdStType(f"b{d.bits}")


def cvt_type(d: DType) -> CvtType:
    """The ``cvt`` type of ``d`` (``f16``, ``bf16``, ``f32``, ``s32``, ``u32``)."""
    if d.is_float:
        return CvtType(d.short)
    return CvtType(f"{'s' if d.signed else 'u'}{d.bits}")


def arith_types(d: DType) -> tuple[ArithType, ArithType | None]:
    """The ``.type`` of ``add``/``min``/``max`` on ``d`` (signed for integers), and of
    ``and``/``or``/``xor`` (None for floats, which take no bitwise kinds)."""
    if d.is_float:
        return ArithType(d.short), None
    return ArithType(f"{'s' if d.signed else 'u'}{d.bits}"), ArithType(f"b{d.bits}")


@dataclass(frozen=True)
class Elem:
    """How a collective lowering loads, accumulates and stores one element type.

    f16 and bf16 are accumulated in f32 (their row's accumulator) and rounded once at
    the end, as torch does for its reductions; the other types accumulate in
    themselves. Partial results (in shared memory, in the workspace) are kept in the
    accumulator type, one slot of :attr:`slot_bytes` each."""

    dtype: DType
    ld: LdStType  # ld/st .type moving one element
    acc_ld: LdStType  # ld/st .type moving one accumulator
    cvt: CvtType | None  # cvt .atype from the element to the accumulator (None: the same)

    @staticmethod
    def of(d: DType) -> Elem:
        acc = d.accumulator
        return Elem(d, ld_type(d), ld_type(acc), None if acc is d else cvt_type(d))

    @property
    def name(self) -> str:
        return self.dtype.name

    @property
    def ir(self) -> Attribute:
        return self.dtype.ir

    @property
    def bytes(self) -> int:
        return self.dtype.bytes

    @property
    def accumulator(self) -> DType:
        return self.dtype.accumulator

    @property
    def acc(self) -> Attribute:
        """The accumulator's IR type."""
        return self.dtype.accumulator.ir

    @property
    def slot_bytes(self) -> int:
        """The bytes of one partial result: the accumulator's width."""
        return self.dtype.accumulator.bytes

    @property
    def vector(self) -> int:
        """Elements per vector load: 4 (16 bytes of a 32-bit type, 8 of a 16-bit one,
        ``ld.v4.b16``)."""
        return 4

    @property
    def vector_bytes(self) -> int:
        return self.vector * self.bytes


ELEMS: dict[str, Elem] = {d.name: Elem.of(d) for d in COLLECTIVE_DTYPES}
"""The element types the collective lowerings take, by name, in the table's order."""
