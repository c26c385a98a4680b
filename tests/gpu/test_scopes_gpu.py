"""Warp, CTA and cluster reductions (examples/scopes.py) on the GPU: every thread's
result equals the numpy reduction over its warp, CTA or cluster, on fresh random data;
integer and max/min results exactly, float sums within float32 rounding, and every
thread of a group holds the same bits."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from bulkred_dialect.backend_ptx.runtime import compile_tile_module

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import scopes  # noqa: E402

pytestmark = pytest.mark.gpu

GROUP = {"warp": 32, "cta": scopes.THREADS, "cluster": 2 * scopes.THREADS}
NP = {"int32": np.int32, "float32": np.float32, "bfloat16": np.uint16}  # bf16 as raw bits


@pytest.fixture(scope="module")
def compiled():
    return compile_tile_module(scopes.scopes_module(), "sm_90a")


def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(x: np.ndarray) -> np.ndarray:
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even


@pytest.mark.parametrize("name", list(scopes.KERNELS))
def test_scope_reduction(compiled, rng, name):
    kind, scope, dtype, _ = scopes.KERNELS[name]
    n = scopes.CTAS * scopes.THREADS
    if dtype == "int32":
        x = rng.integers(-(2**20), 2**20, n).astype(np.int32)
    elif dtype == "float32":
        x = rng.standard_normal(n).astype(np.float32)
    else:
        x = _f32_to_bf16(rng.standard_normal(n).astype(np.float32))
    poison = np.full(n, 0x7FC1 if dtype == "bfloat16" else -12345, NP[dtype])
    _, out = compiled.kernel(name)(x, poison)
    g = GROUP[scope]
    groups = (_bf16_to_f32(x) if dtype == "bfloat16" else x).reshape(-1, g)
    got = (_bf16_to_f32(out) if dtype == "bfloat16" else out).reshape(-1, g)
    # every thread of a group holds the same bits
    raw = out.reshape(-1, g)
    assert (raw == raw[:, :1]).all(), f"{name}: threads of one {scope} disagree ({rng})"
    if kind == "sum" and dtype != "int32":
        want = groups.astype(np.float64).sum(axis=1)
        tol = 1e-5 if dtype == "float32" else 1e-2
        np.testing.assert_allclose(got[:, 0], want, rtol=tol, atol=tol * np.abs(groups).sum(axis=1).max(), err_msg=repr(rng))
    else:
        f = {"sum": np.sum, "max": np.max, "min": np.min, "xor": np.bitwise_xor.reduce}[kind]
        want = f(groups.astype(np.int64) if dtype == "int32" else groups, axis=1)
        if dtype == "int32":
            want = ((want + 2**31) % 2**32 - 2**31).astype(np.int32)
        np.testing.assert_array_equal(got[:, 0], want, err_msg=repr(rng))
