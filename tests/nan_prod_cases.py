"""The kernels and inputs of the NaN and prod tests, shared by tests/test_nan_prod.py (CPU
interpreter) and tests/gpu/test_nan_prod_gpu.py (GPU): builder kernels at thread, warp /
CTA and grid scope, inputs with NaN in known places, numpy's answers."""

from __future__ import annotations

import numpy as np

from bulkred_dialect import builder as T

NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "int16": np.int16, "int32": np.int32, "int64": np.int64}


def numpy_minmax(kind: str, x: np.ndarray, ignore_nan: bool, axis=-1) -> np.ndarray:
    """numpy's max/min (NaN-propagating), or fmax/fmin (NaN-ignoring)."""
    if ignore_nan:
        f = np.fmax if kind == "max" else np.fmin
        with np.errstate(invalid="ignore"):
            if isinstance(axis, tuple):  # ufunc.reduce takes one axis at a time here
                for a in sorted(axis, reverse=True):
                    x = f.reduce(x, axis=a)
                return x
            return f.reduce(x, axis=axis)
    return (np.max if kind == "max" else np.min)(x, axis=axis)


def assert_nan_same_and_values_equal(got: np.ndarray, want: np.ndarray, what: str) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaN at {np.isnan(got)}, numpy at {np.isnan(want)}"
    ok = ~np.isnan(want)
    assert np.array_equal(got[ok], want[ok]), f"{what}: {got} != {want}"


def nan_rows(rng: np.random.Generator, rows: int, n: int, dtype) -> np.ndarray:
    """Rows of random values: row 0 without NaN, row 1 one NaN (at a random place), row 2
    all NaN, row 3 NaN first, row 4 NaN last, the others a NaN with probability 1/2."""
    x = (rng.standard_normal((rows, n)) * 100).astype(dtype)
    x[1, rng.integers(n)] = np.nan
    x[2, :] = np.nan
    x[3, 0] = np.nan
    x[4, -1] = np.nan
    for r in range(5, rows):
        if rng.random() < 0.5:
            x[r, rng.integers(n)] = np.nan
    return x


def thread_kernel(kind: str, shape: list[int], dtype: str, ignore_nan: bool = False) -> T.Kernel:
    out = shape[:-1] or [1]
    with T.kernel("k", grid=[1], block=[1]) as k:
        a_g = k.param("a", shape, dtype)
        b_g = k.param("b", out, dtype)
        a = T.alloc_buffer(shape, dtype, scope="local")
        b = T.alloc_buffer(out, dtype, scope="local")
        T.copy(a_g, a)
        T.reduce(kind, b, a, ignore_nan=ignore_nan)
        T.copy(b, b_g)
    return k


def scope_kernel(
    kind: str, scope: str, dtype: str, ignore_nan: bool = False, ctas: int = 2, threads: int = 128, cluster: int = 1
) -> T.Kernel:
    """Thread t reduces x[t] at ``scope`` (clusters of ``cluster`` CTAs); out[t] is its result."""
    with T.kernel("k", grid=[ctas], block=[threads], cluster=[cluster]) as k:
        x = k.param("x", [ctas * threads], dtype)
        out = k.param("out", [ctas * threads], dtype)
        t = T.add(T.mul(T.block_id("x"), threads), T.thread_id("x"))
        mine = T.alloc_buffer([1], dtype, scope="local")
        r = T.alloc_buffer([1], dtype, scope="local")
        T.copy(T.view(x, [t], [1]), mine)
        T.reduce(kind, r, mine, scope=scope, ignore_nan=ignore_nan)
        T.copy(r, T.view(out, [t], [1]))
    return k


def grid_kernel(kind: str, shape: list[int], dtype: str, axes, ignore_nan: bool = False) -> T.Kernel:
    out = [1] if axes is None else [s for i, s in enumerate(shape) if i not in axes]
    with T.kernel("k") as k:
        x = k.param("x", shape, dtype)
        y = k.param("y", out, dtype)
        T.reduce(kind, y, x, axes=axes, ignore_nan=ignore_nan)
    return k


def group_nan_input(rng: np.random.Generator, groups: int, size: int, dtype) -> np.ndarray:
    x = nan_rows(rng, groups, size, dtype) if groups >= 5 else (rng.standard_normal((groups, size)) * 100).astype(dtype)
    if groups < 5:
        x[0, rng.integers(size)] = np.nan
    return x.reshape(-1)
