"""The tile-level ops over a list of global buffers (docs/foreach.md): one launch reduces
any number of tensors of mixed element types, read through a device-resident descriptor
table, and scales them in place.

The descriptor table (``table``, ``i64``, ``[R, 4]``, ``R = 1 + T + G``; built by the host,
``bulkred_dialect/foreach.py``'s ``descriptor_table``):

=========  =================================================================
row 0      ``[T, G, chunk, B]``: tensors, CTAs (the launch's grid), the bytes of
           one CTA's chunk (a multiple of 16), the bytes of the whole list
row 1 + t  ``[address, numel, code, start]`` of tensor t: its first element's
           address, its element count, ``code`` = element type (0 f32, 1 f16,
           2 bf16) + 256 when the address is a multiple of 16 (vector loads),
           ``start`` = its first byte in the list's byte stream (each tensor
           starts at a multiple of 16 there)
row 1+T+c  ``[t_first, t_stop, lo, hi]`` of CTA c: the tensors ``[t_first,
           t_stop)`` that its chunk, bytes ``[lo, hi)`` of the stream, overlaps
=========  =================================================================

CTA c reduces the pieces of the tensors in its chunk; a tensor inside one chunk is
reduced by one CTA, a longer one by each CTA its bytes reach, whose partials the last
CTA (the ticket of docs/scopes.md) combines in chunk order: the results are the same
bits on every run.

Spec: the grid-scope reduction's maps and kinds (``ops/tile.py``, docs/fused.md).
"""

from __future__ import annotations

from bulkred_dialect.ops.tile import (  # the ops live in tile.py, the dialect's one module
    LIST_KINDS,
    LIST_PROLOGUE_MAPS,
    LIST_EPILOGUE_MAPS,
    TABLE_COLUMNS,
    CODE_F32,
    CODE_F16,
    CODE_BF16,
    CODE_ALIGNED,
    CLIP_EPS,
    ReduceListOp,
    ScaleListOp,
    LIST_OPS,
)

__all__ = [
    "LIST_KINDS",
    "LIST_PROLOGUE_MAPS",
    "LIST_EPILOGUE_MAPS",
    "TABLE_COLUMNS",
    "CODE_F32",
    "CODE_F16",
    "CODE_BF16",
    "CODE_ALIGNED",
    "CLIP_EPS",
    "ReduceListOp",
    "ScaleListOp",
    "LIST_OPS",
]
