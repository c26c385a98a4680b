"""Compile-time address analysis: which ``ptx.alloc`` array an address points into, at
which constant byte offset, and so how it is aligned.

The verifiers of the op files (bulk copies, mbarriers, red.async) use it, so it must not
import them: the ops take part through two small interfaces instead, and imports run one
way (``base`` <- ``addresses`` <- the op files).

* :class:`ArrayDeclaration` -- an op that declares an array (``ptx.alloc``);
* :class:`AddressOf` -- an op whose result is an address derived from another one:
  the address of a declared array (``ptx.mov.addr``), or an operand's address plus a
  constant offset (``ptx.add.ptr``; ``ptx.mov``, ``ptx.mapa`` and ``ptx.cvta.to.global``
  keep the offset).
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.ops.ptx.base import constant_int


class ArrayDeclaration:
    """Mixin of an op that declares a byte array (``ptx.alloc``)."""

    def array_name(self) -> str:
        raise NotImplementedError

    def array_size(self) -> int:
        raise NotImplementedError

    def array_alignment(self) -> int:
        raise NotImplementedError


class AddressOf:
    """Mixin of an op whose result is an address derived from something else."""

    def address_source(self) -> tuple[SSAValue | ArrayDeclaration | None, int | None]:
        """``(source, offset)``: the result is ``source + offset`` bytes, where ``source`` is
        an operand's address or a declared array (None: an array not found); offset None:
        not a compile-time constant."""
        raise NotImplementedError


def _alignment_of_offset(alignment: int | None, offset: int) -> int | None:
    """The alignment of ``base + offset`` for a base aligned to the power of two ``alignment``."""
    if alignment is None or offset == 0:
        return alignment
    return min(alignment, offset & -offset)


def trace_address(value: SSAValue | None) -> tuple[ArrayDeclaration | int | None, int]:
    """``(root, offset)``: the address ``value`` is ``root + offset`` bytes, where ``root``
    is the array declaration (``ptx.alloc``) it points into, an integer constant, or None
    (unknown).

    Follows the :class:`AddressOf` ops down to an array declaration, summing constant
    offsets. A block argument (a kernel parameter, a loop-carried value), an offset that is
    not a constant, or any other op: unknown.
    """
    offset = 0
    seen: set[SSAValue] = set()
    while value is not None and value not in seen:
        seen.add(value)
        owner = value.owner
        if not isinstance(owner, AddressOf):
            return constant_int(value), offset
        source, step = owner.address_source()
        if step is None:
            return None, 0
        offset += step
        if isinstance(source, ArrayDeclaration):
            return source, offset
        if source is None:
            return None, 0
        value = source
    return None, 0


def known_alignment(value: SSAValue | None) -> int | None:
    """The largest power of two that the address ``value`` is known to be a multiple of,
    or None when nothing is known.

    The root found by :func:`trace_address` gives it: an array's alignment, with the
    constant offset's alignment; an integer constant is its own alignment.
    """
    root, offset = trace_address(value)
    if isinstance(root, ArrayDeclaration):
        align = root.array_alignment()
        if align < 1 or align & (align - 1):
            return None  # ptx.alloc's own verifier reports it
        return _alignment_of_offset(align, offset)
    if isinstance(root, int) and root + offset != 0:
        return (root + offset) & -(root + offset)
    return None


def check_aligned(field: str, value: SSAValue | None, n: int) -> None:
    """An address whose alignment is known at compile time must be a multiple of ``n`` bytes:
    ``'dstMem' must be 16-byte aligned, known alignment 4``."""
    a = known_alignment(value)
    if a is not None and a % n != 0:
        raise VerifyException(f"'{field}' must be {n}-byte aligned, known alignment {a}")


def check_inside_array(what: str, value: SSAValue | None, nbytes: int | None) -> None:
    """``nbytes`` bytes at the address ``value`` must lie inside the array it points into,
    when the array, the offset and ``nbytes`` are all known at compile time (PTX leaves an
    access outside every declared array undefined):
    ``'srcMem' + 'size' must lie inside @tile (64 bytes), got bytes [0, 128)``."""
    if nbytes is None:
        return
    root, offset = trace_address(value)
    if not isinstance(root, ArrayDeclaration):
        return
    size = root.array_size()
    if offset < 0 or offset + nbytes > size:
        raise VerifyException(
            f"{what} must lie inside @{root.array_name()} ({size} bytes), "
            f"got bytes [{offset}, {offset + nbytes})"
        )


MBARRIER_BYTES = 8
"""An mbarrier object is a ``.b64``, 8-byte aligned (PTX ISA, mbarrier: "Size and alignment
of mbarrier object")."""


def check_mbarrier_address(field: str, value: SSAValue | None) -> None:
    """The address of an mbarrier object: 8-byte aligned, and 8 bytes inside its array,
    where known at compile time."""
    check_aligned(field, value, MBARRIER_BYTES)
    check_inside_array(f"'{field}' (an {MBARRIER_BYTES}-byte mbarrier object)", value, MBARRIER_BYTES)
