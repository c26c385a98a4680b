"""The descriptor table of a list of tensors (``ops/tile_list.py``): what the list ops'
kernels read to find each tensor and each CTA's share of the work. numpy only (no torch,
no xDSL), so that the tests build the same table for the CPU interpreter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

COLUMNS = 4
LIST_DTYPES = ("float32", "float16", "bfloat16")
"""The element types a list holds; a tensor's code in the table is its index here."""
CODES = {name: code for code, name in enumerate(LIST_DTYPES)}
ALIGNED = 256


def descriptor_table(
    addresses: Sequence[int], numels: Sequence[int], codes: int | Sequence[int], grid: int
) -> np.ndarray:
    """The table (``int64``, ``[1 + T + grid, 4]``) of T tensors: tensor t at
    ``addresses[t]`` with ``numels[t]`` elements of type ``codes[t]`` (0 float32,
    1 float16, 2 bfloat16; one code for all of them). Each tensor starts at a multiple of 16 in the list's byte
    stream; CTA c takes the stream's bytes ``[c * chunk, (c + 1) * chunk)``, ``chunk`` the
    stream's bytes over ``grid`` rounded up to 16, and its row names the tensors whose
    bytes that range overlaps."""
    t = len(numels)
    addr = np.asarray(addresses, dtype=np.int64).reshape(t)
    n = np.asarray(numels, dtype=np.int64).reshape(t)
    if isinstance(codes, int):
        code = np.full(t, codes, dtype=np.int64)
        size = 4 if codes == 0 else 2
    else:
        code = np.asarray(codes, dtype=np.int64).reshape(t)
        size = np.where(code == 0, 4, 2)
    nbytes = n * size
    padded = (nbytes + 15) // 16 * 16
    start = np.zeros(t, dtype=np.int64)
    if t > 1:
        np.cumsum(padded[:-1], out=start[1:])
    total = int(start[-1] + padded[-1]) if t else 0
    per_cta = -(-total // grid)
    chunk = (per_cta + 15) // 16 * 16
    table = np.zeros((1 + t + grid, COLUMNS), dtype=np.int64)
    table[0] = (t, grid, chunk, total)
    rows = table[1 : 1 + t]
    rows[:, 0] = addr
    rows[:, 1] = n
    rows[:, 2] = code + np.where(addr % 16 == 0, ALIGNED, 0)
    rows[:, 3] = start
    if total:
        lo = np.arange(grid, dtype=np.int64) * chunk
        hi = np.minimum(lo + chunk, total)
        end = start + nbytes
        first = np.searchsorted(end, lo, side="right")
        stop = np.searchsorted(start, hi, side="left")
        stop = np.where(lo < total, np.maximum(stop, first), first)
        ctas = table[1 + t :]
        ctas[:, 0] = first
        ctas[:, 1] = stop
        ctas[:, 2] = lo
        ctas[:, 3] = hi
    return table
