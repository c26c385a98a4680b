"""The descriptor table of a list of tensors, built on the host: what the list ops'
kernels read to find each tensor and each CTA's share of the work. Its layout is
``ops/list_layout.py``'s (the one definition the ops and the lowering read too). numpy
only (no torch, no xDSL), so that the tests build the same table for the CPU interpreter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bulkred_dialect.ops.list_layout import ALIGN, ALIGNED, COLUMNS, CTA, ELEMENT_BYTES, HEADER, TENSOR

_SIZES = np.asarray(ELEMENT_BYTES, dtype=np.int64)
_ADDRESS, _NUMEL, _CODE = (TENSOR.index(c) for c in ("address", "numel", "code"))


def _ints(values: Sequence[int]) -> np.ndarray:
    """``values`` as an int64 array (a list read by ``np.fromiter``: a fifth faster)."""
    if isinstance(values, list):
        return np.fromiter(values, dtype=np.int64, count=len(values))
    return np.asarray(values, dtype=np.int64).reshape(len(values))


def _bytes(numels: Sequence[int], codes: int | Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(codes, byte counts) of the tensors, as int64 arrays."""
    n = _ints(numels)
    if isinstance(codes, int | np.integer):
        code = np.full(len(n), int(codes), dtype=np.int64)
        return code, n * ELEMENT_BYTES[int(codes)]
    code = _ints(codes)
    return code, n * _SIZES[code]


def descriptor_table(
    addresses: Sequence[int], numels: Sequence[int], codes: int | Sequence[int], grid: int
) -> np.ndarray:
    """The table (``int64``, ``[1 + T + grid, COLUMNS]``) of T tensors: tensor t at
    ``addresses[t]`` with ``numels[t]`` elements of type ``codes[t]`` (a code of
    ``list_layout.DTYPES``; one code for all of them). Each tensor starts at a multiple
    of ``ALIGN`` in the list's byte stream; CTA c takes the stream's bytes
    ``[c * chunk, (c + 1) * chunk)``, ``chunk`` the stream's bytes over ``grid`` rounded
    up to ``ALIGN``, and its row names the tensors whose bytes that range overlaps.
    :func:`with_addresses` of :func:`descriptor_base`."""
    return with_addresses(descriptor_base(numels, codes, grid), addresses)


def descriptor_base(numels: Sequence[int], codes: int | Sequence[int], grid: int) -> np.ndarray:
    """The table of :func:`descriptor_table` but the addresses: every entry that does
    not depend on them, the address column 0 and the code column without
    ``ALIGNED``. The same for every list of the same element counts and codes (a new
    list of new gradients each step): :func:`with_addresses` completes a copy."""
    t = len(numels)
    counts = _ints(numels)
    code, nbytes = _bytes(counts, codes)
    padded = (nbytes + ALIGN - 1) // ALIGN * ALIGN
    start = np.zeros(t, dtype=np.int64)
    if t > 1:
        np.cumsum(padded[:-1], out=start[1:])
    total = int(start[-1] + padded[-1]) if t else 0
    per_cta = -(-total // grid)
    chunk = (per_cta + ALIGN - 1) // ALIGN * ALIGN
    table = np.zeros((1 + t + grid, COLUMNS), dtype=np.int64)
    table[0, [HEADER.index(c) for c in HEADER]] = (t, grid, chunk, total)
    rows = table[1 : 1 + t]
    rows[:, _NUMEL] = counts
    rows[:, _CODE] = code
    rows[:, TENSOR.index("start")] = start
    if total:
        lo = np.arange(grid, dtype=np.int64) * chunk
        hi = np.minimum(lo + chunk, total)
        end = start + nbytes
        first = np.searchsorted(end, lo, side="right")
        stop = np.searchsorted(start, hi, side="left")
        stop = np.where(lo < total, np.maximum(stop, first), first)
        ctas = table[1 + t :]
        ctas[:, CTA.index("first")] = first
        ctas[:, CTA.index("stop")] = stop
        ctas[:, CTA.index("lo")] = lo
        ctas[:, CTA.index("hi")] = hi
    return table


def with_addresses(base: np.ndarray, addresses: Sequence[int]) -> np.ndarray:
    """A copy of the table ``base`` (:func:`descriptor_base`) with the tensors'
    addresses: tensor t's at ``addresses[t]``, ``ALIGNED`` added to its code where that
    address is a multiple of ``ALIGN``."""
    t = len(addresses)
    if int(base[0, 0]) != t:
        raise ValueError(f"with_addresses: {t} addresses for a table of {int(base[0, 0])} tensors")
    table = base.copy()
    rows = table[1 : 1 + t]
    addr = _ints(addresses)
    rows[:, _ADDRESS] = addr
    rows[:, _CODE] += (addr % ALIGN == 0) * ALIGNED
    return table


def first_overlap(addresses: Sequence[int], numels: Sequence[int], codes: int | Sequence[int]) -> tuple[int, int] | None:
    """The positions ``(i, j)``, ``i < j``, of two tensors whose bytes overlap (the same
    tensor twice, two views of one tensor), None when every tensor has memory of its own.
    Empty tensors overlap nothing. Of several pairs, the one whose later tensor comes
    first in the list. One sort of the addresses (numpy), for the in-place functions: a
    tensor written twice would be scaled twice."""
    t = len(numels)
    if t < 2:
        return None
    addr = np.asarray(addresses, dtype=np.int64).reshape(t)
    _, nbytes = _bytes(numels, codes)
    keep = np.flatnonzero(nbytes > 0)
    if len(keep) < 2:
        return None
    order = keep[np.lexsort((keep, addr[keep]))]  # by address, then by position
    lo, hi = addr[order], addr[order] + nbytes[order]
    reach = np.maximum.accumulate(hi)  # the furthest end of the tensors at or below each address
    clash = np.flatnonzero(lo[1:] < reach[:-1])  # order[k + 1] starts inside an earlier one
    if not len(clash):
        return None
    best: tuple[int, int] | None = None
    for k in clash.tolist():
        j = int(order[k + 1])
        # the earlier tensor it overlaps: any of order[: k + 1] whose end passes lo[k + 1]
        i = int(order[: k + 1][hi[: k + 1] > lo[k + 1]].min())
        pair = (min(i, j), max(i, j))
        if best is None or (pair[1], pair[0]) < (best[1], best[0]):
            best = pair
    return best
