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

FORMS = (WHOLE, INNER, OUTER, MIDDLE, GENERAL)
"""Every canonical form's name."""


@dataclass(frozen=True)
class Canonical:
    """A reduction in canonical form: ``shape`` the merged extents (outermost first),
    ``reduced`` which of them are reduced."""

    form: str
    shape: tuple[int, ...]
    reduced: tuple[bool, ...]

    def __str__(self) -> str:
        return f"{self.form} [{', '.join(map(str, self.shape))}]"

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


def canonical(shape: Sequence[int], axes: Sequence[int]) -> Canonical:
    """The canonical form of reducing a contiguous row-major array of ``shape`` over
    ``axes`` (distinct, in range; the verifier's rules)."""
    red = set(axes)
    merged: list[list] = []
    for i, d in enumerate(shape):
        if d == 1:
            continue
        r = i in red
        if merged and merged[-1][1] == r:
            merged[-1][0] *= d
        else:
            merged.append([d, r])
    dims = tuple(d for d, _ in merged)
    flags = tuple(r for _, r in merged)
    if False not in flags:  # every extent > 1 reduced (or none left)
        return Canonical(WHOLE, (math.prod(dims),), (True,))
    if True not in flags:  # each dst value is one element: a single row of columns
        return Canonical(OUTER, (1, math.prod(dims)), (True, False))
    form = {(False, True): INNER, (True, False): OUTER, (False, True, False): MIDDLE}.get(flags, GENERAL)
    return Canonical(form, dims, flags)
