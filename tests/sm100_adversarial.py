"""Adversarial float32 inputs of the sm100_packed reduction (issue 9): vectors whose sum
depends on where each element and ``dst_old`` enter the accumulators, and on which adds
flush subnormals. Shared by tests/test_lowering_numerics.py (interpreter) and
tests/gpu/test_seed_gpu.py (GPU).

``TIRX_EXAMPLE``: sum, no accum, n = 10; TVM TIRx's order gives ``0x4b800001``
(``ls[0] = 0 + 1 + 1``, then ``2 + 2**24``), adding the remainder lane by lane
``0x4b800000`` (two ties rounded to even).
"""

from __future__ import annotations

import numpy as np

LENGTHS = range(8, 81)

TIRX_EXAMPLE = (np.array([0, 16777216, 0, 0, 0, 0, 0, 0, 1, 1], dtype=np.float32), 0x4B800001)

_BIG = np.float32(2.0**24)  # its ulp is 2: adding 1 is a tie
_MIN_NORMAL = np.float32(2.0**-126)


def _f32(bits: int) -> np.float32:
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


def sum_vectors(n: int, rng: np.random.Generator) -> list[tuple[str, np.ndarray, np.float32]]:
    """``(label, src, dst_old)`` triples for a sum of length ``n`` (``dst_old`` matters
    only with accum)."""
    out = []
    # 2**24 in one lane of the first chunk, ones in the remainder and scattered elsewhere:
    # where the ones are added decides each tie.
    ties = np.zeros(n, dtype=np.float32)
    ties[8 * (n // 8) :] = 1
    ties[rng.choice(n, size=max(1, n // 6), replace=False)] = 1
    ties[rng.integers(0, 8)] = _BIG
    out.append(("ties", ties, np.float32(1)))
    # 2**24 in src[0], the old dst a one: added first (TIRx) it is a tie of its own
    first = np.where(rng.random(n) < 0.3, np.float32(1), np.float32(0)).astype(np.float32)
    first[0] = _BIG
    out.append(("big_first", first, np.float32(rng.choice([1.0, -1.0, 3.0]))))
    # large cancelling pairs and small values
    cancel = (rng.standard_normal(n) * 1e7).astype(np.float32)
    m = n // 2
    cancel[1 : 2 * m : 2] = -cancel[0 : 2 * m : 2]
    cancel += rng.standard_normal(n).astype(np.float32)
    out.append(("cancel", cancel, np.float32(-cancel[0] + np.float32(0.5))))
    # near the bottom of the normal range: which adds flush decides the bits; the old dst
    # turns src[0] into a subnormal, kept by the scalar add of accum
    tiny = (rng.integers(-3, 4, n) * _MIN_NORMAL).astype(np.float32)
    sub = rng.random(n) < 0.4
    tiny[sub] = rng.integers(1, 1 << 10, int(sub.sum())).astype(np.uint32).view(np.float32)
    tiny[0] = _MIN_NORMAL
    out.append(("ftz", tiny, -_f32(0x00000001)))
    # magnitudes spread over many binades
    spread = (rng.standard_normal(n) * np.exp2(rng.integers(-24, 24, n))).astype(np.float32)
    out.append(("spread", spread, np.float32(rng.standard_normal() * 2.0**20)))
    return out


def minmax_vectors(n: int, rng: np.random.Generator) -> list[tuple[str, np.ndarray, np.float32]]:
    """``(label, src, dst_old)`` triples for max / min of length ``n``: signed zeros and
    few distinct values (ties between +0 and -0 show the order of the comparisons), and
    NaNs with one extreme value."""
    zeros = np.where(rng.random(n) < 0.5, np.float32(-0.0), np.float32(0.0)).astype(np.float32)
    zeros[rng.random(n) < 0.2] = np.float32(rng.choice([1.0, -1.0]))
    nans = rng.standard_normal(n).astype(np.float32)
    nans[rng.random(n) < 0.3] = _f32(0x7FC01234)
    nans[rng.integers(0, n)] = np.float32(rng.choice([np.inf, -np.inf]))
    return [("zeros", zeros, np.float32(rng.choice([0.0, -0.0]))), ("nans", nans, _f32(0xFFC00000))]
