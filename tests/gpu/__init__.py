"""The GPU tests (marker ``gpu``) and their kernels, and the one helper they share."""

import pytest


def cuda_torch():
    """torch, when it imports and sees a CUDA device; otherwise the calling test skips
    with the reason."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any failure to import torch skips
        pytest.skip(f"torch is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch
