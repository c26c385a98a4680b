"""The ptx types of each element type, derived from its row of ``ops/dtypes.py``: the
``ld``/``st`` type that moves it, the ``cvt`` type that widens it, the ``.type`` of its
scalar arithmetic, and :class:`Elem`, which bundles them for the collective lowerings.

Nothing here names an element type: a type's facts come from :data:`DTYPES`, and the
element types of each lowering from :data:`ELEMENT_DTYPES` and :data:`COLLECTIVE_DTYPES`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerType, f32, f64, i64
from xdsl.ir import Attribute

from bulkred_dialect.ops.dtypes import COLLECTIVE_DTYPES, DTYPES, GRID_DTYPES, DType, of_ir
from bulkred_dialect.ops.ptx.arith import ArithType
from bulkred_dialect.ops.ptx.control import CvtType, SelpType
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
    """How a collective lowering loads, accumulates and stores one element type
    (``dtype``, the source's) into an output type (``out``, the destination's).

    The accumulator is ``out`` when it differs from the source (a grid-scope
    ``bulkred.reduce`` with a wider ``dst``: float16 into float32, int32 into int64),
    else the source row's accumulator: f16 and bf16 are accumulated in f32 and rounded
    once at the end, as torch does for its reductions; 8- and 16-bit integers in 32 bits;
    the other types in themselves. Partial results (in shared memory, in the workspace)
    are kept in the accumulator type, one slot of :attr:`slot_bytes` each.

    Registers: an integer lives in a signless register (``i32``, ``i64``) whatever its
    signedness, which only the ``.type`` of its instructions carries; an 8- or 16-bit
    integer is loaded straight into a 32-bit register (``ld.s8``/``ld.u16``... extend it)."""

    dtype: DType
    out: DType
    accumulator: DType
    ld: LdStType  # ld .type moving one source element into :attr:`reg`
    acc_ld: LdStType  # ld/st .type moving one accumulator
    out_ld: LdStType  # ld/st .type moving one output element
    nonzero: bool = False  # each source element enters as 1 or 0 (x != 0; the prologue [nonzero])

    @staticmethod
    def of(d: DType, out: DType | None = None, nonzero: bool = False) -> Elem:
        """``nonzero``: the source is reduced as ``x != 0`` (1 or 0, in the accumulator),
        and a bool ``out`` accumulates in the bool row's accumulator (32 bits). An ``out``
        narrower than 32 bits other than the source (the prologue ``cast``: torch's
        ``sum(x_float32, dtype=torch.float16)``) accumulates in its row's accumulator, as
        the same reduction of an ``out`` input would (:attr:`rounds_through_out`)."""
        out = d if out is None else out
        narrow = out is not d and out.bits < 32
        acc = out.accumulator if out.is_bool or narrow else out if out is not d else d.accumulator
        return Elem(d, out, acc, _load_type(d), ld_type(acc), ld_type(out), nonzero)

    @property
    def rounds_through_out(self) -> bool:
        """Each element is rounded to a float ``out`` narrower than 32 bits before it is
        widened to the accumulator (the cast first, as torch converts the tensor; an
        integer ``out``'s low bits need no step: its wrapping sum and product keep them)."""
        return self.out.is_float and self.out is not self.dtype and self.out.bits < 32 and not self.nonzero

    @property
    def name(self) -> str:
        return self.dtype.name

    @property
    def ir(self) -> Attribute:
        """The IR type of the register a source element is loaded into."""
        return register_type(self.dtype)

    @property
    def reg(self) -> DType:
        """The type a loaded source element has in its register (32 bits for narrow
        integers, extended by the load with the source's signedness)."""
        return loaded_type(self.dtype)

    @property
    def bytes(self) -> int:
        """Bytes of one source element."""
        return self.dtype.bytes

    @property
    def acc(self) -> Attribute:
        """The accumulator's register type."""
        return register_type(self.accumulator)

    @property
    def out_ir(self) -> Attribute:
        """The register type of one output element."""
        return register_type(self.out)

    @property
    def partials(self) -> Elem:
        """Partial results read back as elements: the accumulator type into itself."""
        return Elem.of(self.accumulator)

    @property
    def slot_bytes(self) -> int:
        """The bytes of one partial result: the accumulator's width."""
        return self.accumulator.bytes

    @property
    def vector(self) -> int:
        """Elements per vector load: 4 (16 bytes of a 32-bit type, 8 of a 16-bit one,
        ``ld.v4.b16``, 4 of an 8-bit one, ``ld.v4.s8``), 2 of a 64-bit type (16 bytes,
        ``ld.v2.f64``)."""
        return 2 if self.bytes == 8 else 4

    @property
    def vector_bytes(self) -> int:
        return self.vector * self.bytes


def register_type(d: DType) -> Attribute:
    """The IR type of the register holding a value of ``d``: floats their own type,
    integers a signless one of 32 bits (8- and 16-bit ones too) or 64."""
    if d.is_float:
        return d.ir
    return IntegerType(max(32, d.bits))


def selp_type(t: Attribute) -> SelpType:
    """``selp``'s ``.type`` for a register of IR type ``t`` (a 32-bit integer: ``.s32``)."""
    return {i64: SelpType.S64, f32: SelpType.F32, f64: SelpType.F64}.get(t, SelpType.S32)


def loaded_type(d: DType) -> DType:
    """The row of ``d`` as it sits in its register (:func:`register_type`): an 8- or
    16-bit integer extended to 32 bits with its signedness, else ``d``."""
    if d.is_float or d.bits >= 32:
        return d
    return DTYPES[f"{'' if d.signed else 'u'}int32"]


def _load_type(d: DType) -> LdStType:
    """``ld``'s ``.type`` of ``d`` into its register: ``.s8``/``.u8``/``.s16``/``.u16``
    extend a narrow integer to the 32-bit register, else :func:`ld_type`."""
    if d.is_float or d.bits >= 32:
        return ld_type(d)
    return LdStType(f"{'s' if d.signed else 'u'}{d.bits}")


ELEMS: dict[str, Elem] = {d.name: Elem.of(d) for d in GRID_DTYPES}
"""The element types the collective and grid lowerings take (each into itself), by
name, in the table's order; the warp, CTA and cluster lowerings take those of
:data:`COLLECTIVE_DTYPES`."""


def elem_for(src: Attribute, dst: Attribute, nonzero: bool = False) -> Elem | None:
    """The :class:`Elem` reducing IR type ``src`` into ``dst`` (None when either has no
    row the grid lowerings take); ``nonzero``: as ``x != 0`` (:meth:`Elem.of`)."""
    s, d = of_ir(src), of_ir(dst)
    if s is None or d is None or s.name not in ELEMS or d.name not in ELEMS:
        return None
    if nonzero:
        return Elem.of(s, d, nonzero=True)
    return ELEMS[s.name] if s is d else Elem.of(s, d)
