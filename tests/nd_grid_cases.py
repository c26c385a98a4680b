"""Random grid-scope reductions of N-D arrays over random axis sets, and their numpy
references: shared by tests/test_nd_grid.py (the CPU interpreter) and
tests/gpu/test_nd_grid_gpu.py (the GPU). Integers compare exactly; float32 sums within
a bound of the accumulation's length."""

from __future__ import annotations

import math

import numpy as np

from bulkred_dialect import builder as T

EXTENTS = (1, 1, 2, 3, 5, 7, 9, 16, 33)
"""Extents to draw from: 1s (dropped by the canonical form) and odd sizes."""


def random_case(rng: np.random.Generator, rank: int, max_elements: int) -> tuple[list[int], list[int]]:
    """A shape of ``rank`` with at most ``max_elements`` elements, and a non-empty
    random set of its axes (ascending)."""
    while True:
        shape = [int(rng.choice(EXTENTS)) for _ in range(rank)]
        if math.prod(shape) <= max_elements:
            break
    k = int(rng.integers(1, rank + 1))
    axes = sorted(int(a) for a in rng.choice(rank, size=k, replace=False))
    return shape, axes


def out_shape(shape: list[int], axes: list[int]) -> list[int]:
    return [d for i, d in enumerate(shape) if i not in axes] or [1]


def module_of(kind: str, shape: list[int], dtype: str, axes: list[int] | None, variant: str | None = None, name: str = "k"):
    with T.kernel(name) as k:
        x = k.param("x", shape, dtype)
        kept = out_shape(shape, sorted({a % len(shape) for a in axes}) if axes is not None else list(range(len(shape))))
        y = k.param("y", kept, dtype)
        T.reduce(kind, y, x, axes=axes, variant=variant)
    return k.module()


def random_input(rng: np.random.Generator, shape: list[int], dtype: str) -> np.ndarray:
    if dtype == "int32":
        return rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
    return (rng.standard_normal(shape) * 4).astype(np.float32)


def check(kind: str, x: np.ndarray, got: np.ndarray, axes: list[int]) -> None:
    """``got`` (dst) against numpy's reduction of ``x`` over ``axes``."""
    ax = tuple(axes)
    shape = out_shape(list(x.shape), axes)
    if x.dtype == np.int32:
        if kind in ("and", "or", "xor"):
            f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
            want = f.reduce(x, axis=ax)
        else:
            w = {"sum": np.sum, "max": np.max, "min": np.min}[kind](x.astype(np.int64), axis=ax)
            want = ((w + 2**31) % 2**32 - 2**31).astype(np.int32)  # int32 sums wrap
        np.testing.assert_array_equal(got.reshape(shape), np.reshape(want, shape))
        return
    if kind != "sum":
        want = {"max": np.max, "min": np.min}[kind](x, axis=ax)
        np.testing.assert_array_equal(got.reshape(shape), np.reshape(want, shape))
        return
    n = math.prod(x.shape[a] for a in axes)
    want = np.reshape(x.astype(np.float64).sum(axis=ax), shape)
    absx = np.reshape(np.abs(x.astype(np.float64)).sum(axis=ax), shape)
    # float32 accumulation in any order: |error| <= n * eps32 * sum|x|, then one rounding
    bound = 2**-24 * n * absx + 2**-24 * np.abs(want) + 1e-30
    err = np.abs(got.reshape(shape).astype(np.float64) - want)
    assert np.all(err <= bound), f"worst error {np.max(err - bound)} over the bound"
