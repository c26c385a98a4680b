"""The descriptor table of the list ops (``bulkred.reduce_list``, ``bulkred.scale_list``;
docs/foreach.md): its layout, defined here once.

The host builds the table (``foreach_table.py``, numpy), the ops' verifiers check its
shape, and the lowering (``passes/variants/grid_list.py``) reads it: all three take
these constants. The table is ``int64``, ``[1 + T + G, COLUMNS]`` for T tensors and G CTAs:

=========  ======================================================================
row 0      :data:`HEADER`: tensors, CTAs (the launch's grid), the bytes of one
           CTA's chunk (a multiple of :data:`ALIGN`), the bytes of the whole list
row 1 + t  :data:`TENSOR` of tensor t: its first element's address, its element
           count, ``code`` (the index of its element type in :data:`DTYPES`, plus
           :data:`ALIGNED` when the address is a multiple of :data:`ALIGN`: vector
           loads), ``start`` (its first byte in the list's byte stream, where each
           tensor starts at a multiple of :data:`ALIGN`)
row 1+T+c  :data:`CTA` of CTA c: the tensors ``[first, stop)`` that its chunk, the
           stream's bytes ``[lo, hi)``, overlaps
=========  ======================================================================

This module imports nothing of bulkred's but ``ops/dtypes.py`` (no xDSL, no numpy).
"""

from __future__ import annotations

from bulkred_dialect.ops.dtypes import DTYPES as _ROWS

HEADER = ("count", "grid", "chunk", "bytes")
"""Row 0's columns."""
TENSOR = ("address", "numel", "code", "start")
"""The columns of tensor t's row, ``1 + t``."""
CTA = ("first", "stop", "lo", "hi")
"""The columns of CTA c's row, ``1 + T + c``."""
COLUMNS = len(HEADER)
WORD_BYTES = 8  # every entry is an int64
ROW_BYTES = COLUMNS * WORD_BYTES

DTYPES = ("float32", "float16", "bfloat16")
"""The element types a list holds; a tensor's code is its index here."""
CODES = {name: code for code, name in enumerate(DTYPES)}
CODE_F32, CODE_F16, CODE_BF16 = (CODES[n] for n in DTYPES)
ELEMENT_BYTES = tuple(_ROWS[n].bytes for n in DTYPES)
"""The bytes of one element, by code."""
ALIGNED = 256
"""Added to a tensor's code when its address is a multiple of :data:`ALIGN`."""
ALIGN = 16
"""The byte alignment of vector loads, of each tensor's start in the stream, of a chunk."""


def offset(row: tuple[str, ...], column: str) -> int:
    """The byte offset of ``column`` in a row of kind ``row`` (:data:`HEADER`,
    :data:`TENSOR` or :data:`CTA`): ``offset(HEADER, "chunk") == 16``."""
    return row.index(column) * WORD_BYTES


assert len(TENSOR) == len(CTA) == COLUMNS
assert ALIGNED > len(DTYPES) and ALIGNED & (ALIGNED - 1) == 0  # a flag bit above every code

__all__ = [
    "ALIGN", "ALIGNED", "CODES", "CODE_BF16", "CODE_F16", "CODE_F32", "COLUMNS", "CTA", "DTYPES", "ELEMENT_BYTES",
    "HEADER", "ROW_BYTES", "TENSOR", "WORD_BYTES", "offset",
]
