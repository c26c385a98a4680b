"""Shared pytest fixtures and the `gpu` marker's skip rule."""

from __future__ import annotations

import os
import tempfile

import pytest

# The compile cache of a test run lives in a fresh directory, not the user's cache.
os.environ.setdefault("BULKRED_CACHE_DIR", tempfile.mkdtemp(prefix="bulkred-test-cache-"))


def _gpu_reason() -> str | None:
    """None when a CUDA GPU and driver are usable, else why not."""
    try:
        from cuda.bindings import driver
    except Exception as e:  # pragma: no cover - cuda-python is a dependency
        return f"cuda-python is not importable: {e}"
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:
        return f"no CUDA driver: {e}"
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"no CUDA driver or GPU (cuInit: {err.name})"
    err, n = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or n == 0:
        return "no CUDA GPU present"
    return None


_REASON: list[str | None] = []


def gpu_skip_reason() -> str | None:
    if not _REASON:
        _REASON.append(_gpu_reason())
    return _REASON[0]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            reason = gpu_skip_reason()
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=f"gpu test: {reason}"))
