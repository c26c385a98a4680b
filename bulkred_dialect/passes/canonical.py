"""The canonical form of a grid-scope reduction: the request (``src``'s shape, the
reduced ``axes``) reduced to the few shapes the grid variants lower.

Two steps, on a contiguous row-major ``src``:

1. axes of extent 1 are dropped (reducing or keeping one element changes nothing);
2. adjacent axes that are both reduced or both kept merge into one (they are
   contiguous together: their elements form one run of memory).

What remains alternates reduced (R) and kept (K) axes, outermost first, and names the
form:

==========  =============  ==============================================  =============
 merged     form           meaning                                         dst
==========  =============  ==============================================  =============
 [R]        ``whole``      every element into one                          [1]
 []         ``whole``      a single element (every extent 1)               [1]
 [K]        ``outer``      nothing of extent > 1 reduced: [1, K]           K values
 [K, R]     ``inner``      M rows of N contiguous elements, each into one  M values
 [R, K]     ``outer``      M rows of N into N column results               N values
 [K, R, K]  ``middle``     O blocks of R rows of I, each block's columns   O x I values
 other      ``general``    three or more alternations, e.g. [R, K, R]      the K values
==========  =============  ==============================================  =============

The variants address ``src`` and ``dst`` through the kernel parameters' base addresses,
so the merged shape is all they need: reading [A, B, C] as [A, B * C] moves nothing.

Examples: ``[64, 1000, 256]`` over axes [1] is ``middle [64, 1000, 256]``; ``[4, 1, 6,
5]`` over axes [1, 2] drops the 1 and is ``middle [4, 6, 5]``; ``[2, 3, 4]`` over [1, 2]
is ``inner [2, 12]``; ``[A, B, C]`` over [0, 2] is ``general [A, B, C]``.

A strided ``src`` (``memref<..., strided<[...]>>``, a view: element strides >= 0,
offset 0) is first put in stride order (below); then two adjacent axes merge only where
their strides say they are contiguous together (``stride[i] == stride[i + 1] *
shape[i + 1]``). When the merged axes are then
row-major contiguous (a slice of whole rows, say) the form is one of the above; else it
is ``strided [...] strides [...]`` (the merged extents and their element strides),
which ``grid_runs`` or ``grid_gather`` takes.

**Stride order.** Before merging, a strided ``src``'s axes are put in the order of their
memory: descending element stride (stable; a stride-0 axis, a broadcast one, keeps its
place: it reads the same memory wherever it stands, and a broadcast view of a dense
array keeps the analysis, and the code, it had). A permuted view then reaches the form
its memory deserves: ``x.t()`` of a contiguous ``[M, N]`` (shape ``[N, M]``, strides
``[1, N]``) over axis 1 is the column sum ``outer [M, N]`` of ``x``, as the dense
``[M, N]`` over axis 0. The form says so: ``outer [M, N] (stride order: axes [1, 0])``,
the ``src`` axes (of extent > 1) in the order analyzed. Two rules keep every variant's
indexing as it was, so that the order changes only which memory a variant reads next:

* the kept axes keep their relative order, since ``dst`` holds the kept extents in the
  op's order and every variant writes the kept values row-major: a view that stride
  order would reorder them in (``[C, B, A]`` of a contiguous ``[A, B, C]`` over [1]) is
  analyzed in the op's order, and its form says why;
* for ``argmax`` / ``argmin`` (``keep_reduced_order``) the reduced axes keep theirs too:
  the index is counted row-major over the reduced axes in the op's order (the flat index
  of the logical array when every axis is reduced, whatever the view's strides), and
  ties go to the first index in that order. One reduced axis (``axis=d``) always keeps
  its order; every axis of a transposed view reduced does not (``strided ...``, with
  the reason).

The other kinds combine the reduced elements in the order the chosen variant reads
them, as they always do: the bits are the same on every run, not those of another
order (float sums are not associative).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WHOLE = "whole"
INNER = "inner"
OUTER = "outer"
MIDDLE = "middle"
GENERAL = "general"
STRIDED = "strided"

PAIRS = "pairs"

FORMS = (WHOLE, INNER, OUTER, MIDDLE, GENERAL, STRIDED, PAIRS)
"""Every canonical form's name. ``pairs`` (a ``bulkred.reduce`` with ``pairs``: complex
numbers as (re, im), :func:`pairs_form`) is taken by ``grid_gather`` alone."""


@dataclass(frozen=True)
class Canonical:
    """A reduction in canonical form: ``shape`` the merged extents (outermost first),
    ``reduced`` which of them are reduced; ``strides`` their element strides in
    ``src`` (the ``strided`` form only; None: row-major contiguous)."""

    form: str
    shape: tuple[int, ...]
    reduced: tuple[bool, ...]
    strides: tuple[int, ...] | None = None
    order: tuple[int, ...] | None = None
    """The ``src`` axes (of extent > 1) in the order analyzed, when stride order moved
    them; None: the op's order."""
    unordered: str | None = None
    """Why the axes were not put in stride order (None: they were, or already are)."""
    pair: int | None = None
    """The ``pairs`` form: the element stride from a pair's re to its im."""

    def __str__(self) -> str:
        text = f"{self.form} [{', '.join(map(str, self.shape))}]"
        if self.strides is not None:
            axes = [i for i, r in enumerate(self.reduced) if r]
            text += f" strides [{', '.join(map(str, self.strides))}] axes {axes}"
        if self.pair is not None:
            text += f" pair stride {self.pair}"
        if self.order is not None:
            text += f" (stride order: axes [{', '.join(map(str, self.order))}])"
        elif self.unordered is not None:
            text += f" (not in stride order: {self.unordered})"
        return text

    def element_strides(self) -> tuple[int, ...]:
        """The element stride of each merged axis (row-major when not ``strided``)."""
        if self.strides is not None:
            return self.strides
        return tuple(math.prod(self.shape[k + 1 :]) for k in range(len(self.shape)))

    @property
    def batch(self) -> int:
        """O of ``middle`` [O, R, I]; 1 for the other forms."""
        return self.shape[0] if self.form == MIDDLE else 1

    @property
    def m(self) -> int:
        """Rows: M of ``inner`` / ``outer`` [M, N], R of ``middle``, 1 for ``whole``."""
        if self.form in (INNER, OUTER):
            return self.shape[0]
        return self.shape[1] if self.form == MIDDLE else 1

    @property
    def n(self) -> int:
        """Row length: N of [M, N], I of ``middle``, every element of ``whole``."""
        if self.form in (INNER, OUTER):
            return self.shape[1]
        if self.form == MIDDLE:
            return self.shape[2]
        return math.prod(self.shape)

    @property
    def kept(self) -> int:
        """How many values ``dst`` receives."""
        return math.prod(d for d, r in zip(self.shape, self.reduced, strict=True) if not r)

    @property
    def reduced_count(self) -> int:
        """How many elements each value of ``dst`` combines."""
        return math.prod(d for d, r in zip(self.shape, self.reduced, strict=True) if r)


def stride_order(
    dims: Sequence[tuple[int, bool, int]], keep_reduced_order: bool = False
) -> tuple[list[int] | None, str | None]:
    """The order to analyze ``dims`` in, ``(extent, reduced, stride)`` of the axes of
    extent > 1 in the op's order: their positions by descending stride (stable; a
    stride-0 axis keeps its place), or None with the reason where that order would move
    the kept axes (or, ``keep_reduced_order``, the reduced ones) against each other.
    ``(None, None)``: the op's order is the stride order."""
    moving = [k for k, (_, _, s) in enumerate(dims) if s != 0]
    ranked = iter(sorted(moving, key=lambda k: -dims[k][2]))  # sorted() is stable
    order = [k if dims[k][2] == 0 else next(ranked) for k in range(len(dims))]
    if order == list(range(len(dims))):
        return None, None
    for reduced, why in ((False, "it would reorder the kept axes, which dst holds in the op's order"),
                         (True, "the index counts the reduced axes in the op's order")):
        if reduced and not keep_reduced_order:
            continue
        seq = [k for k in order if dims[k][1] == reduced]
        if seq != sorted(seq):
            return None, why
    return order, None


def canonical(
    shape: Sequence[int], axes: Sequence[int], strides: Sequence[int] | None = None, *, keep_reduced_order: bool = False
) -> Canonical:
    """The canonical form of reducing an array of ``shape`` over ``axes`` (distinct, in
    range; the verifier's rules): contiguous row-major, or with element ``strides``
    (then in stride order where the module docstring's rules allow;
    ``keep_reduced_order``: argmax / argmin)."""
    red = set(axes)
    axis = [i for i, d in enumerate(shape) if d != 1]
    order = unordered = None
    if strides is not None:
        order, unordered = stride_order([(shape[i], i in red, strides[i]) for i in axis], keep_reduced_order)
        if order is not None:
            axis = [axis[k] for k in order]
    merged: list[list] = []  # [extent, reduced, stride]
    for i in axis:
        d = shape[i]
        r = i in red
        s = strides[i] if strides is not None else None
        if merged and merged[-1][1] == r and (s is None or merged[-1][2] == s * d):
            merged[-1][0] *= d
            merged[-1][2] = s
        else:
            merged.append([d, r, s])
    dims = tuple(d for d, _, _ in merged)
    flags = tuple(r for _, r, _ in merged)
    note = {"order": tuple(axis) if order is not None else None, "unordered": unordered}
    if strides is not None:
        steps = tuple(s for _, _, s in merged)
        if steps != tuple(math.prod(dims[k + 1 :]) for k in range(len(dims))):
            return Canonical(STRIDED, dims, flags, steps, **note)
    if False not in flags:  # every extent > 1 reduced (or none left)
        return Canonical(WHOLE, (math.prod(dims),), (True,), **note)
    if True not in flags:  # each dst value is one element: a single row of columns
        return Canonical(OUTER, (1, math.prod(dims)), (True, False), **note)
    form = {(False, True): INNER, (True, False): OUTER, (False, True, False): MIDDLE}.get(flags, GENERAL)
    return Canonical(form, dims, flags, **note)


def pairs_form(
    shape: Sequence[int], axes: Sequence[int], strides: Sequence[int] | None = None
) -> Canonical:
    """The ``pairs`` form of a reduction whose ``src``'s last axis (extent 2) holds
    complex numbers as (re, im): the canonical form of the other axes (the pair axis
    left out of ``axes``; each complex number one element, at its re's element offset)
    as merged extents and their element strides (always given: a pair takes two
    elements), and the pair's stride (:attr:`Canonical.pair`)."""
    if strides is None:
        strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    c = canonical(shape[:-1], [a for a in axes if a != len(shape) - 1], strides[:-1])
    # the strides are those of the pairs' re, twice the complex ones at least: the form is
    # ``strided`` unless no axis of extent > 1 is left (one element: its stride is moot)
    steps = c.strides if c.strides is not None else c.element_strides()
    return Canonical(PAIRS, c.shape, c.reduced, steps, c.order, c.unordered, pair=strides[-1])
