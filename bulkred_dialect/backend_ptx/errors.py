"""The runtime's errors, part of the project's hierarchy (:mod:`bulkred_dialect.errors`).

``RuntimeErrorBase`` is the runtime's name for :class:`~bulkred_dialect.errors.BulkredError`:
every error a runtime function raises derives from it. ``SignatureError`` and
``PipelineError`` are the project's own; the launch errors below are
:class:`~bulkred_dialect.errors.LaunchError`\\ s.
"""

from __future__ import annotations

from bulkred_dialect.errors import (
    BulkredError,
    KernelNotFoundError,
    LaunchError,
    PipelineError,
    SignatureError,
)

RuntimeErrorBase = BulkredError
"""Base of every error raised by the runtime (the project's :class:`BulkredError`)."""


class NoGpuError(LaunchError):
    """No CUDA driver or GPU is usable; ``reason`` says why."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"no GPU available: {reason}")


class LaunchConfigError(LaunchError, ValueError):
    """The grid, block, cluster or shared-memory size is not valid."""


class CudaError(LaunchError):
    """A CUDA driver call failed: ``call`` and the driver's ``code`` name."""

    def __init__(self, call: str, code: str, detail: str = ""):
        self.call = call
        self.code = code
        super().__init__(f"{call} failed: {code}{': ' + detail if detail else ''}")


class MisalignedError(SignatureError):
    """A device array whose address is off the alignment its kernel's vector loads
    need (``bulkred.align``), found before anything was launched: the reduction API
    takes a kernel with scalar loads instead."""


class KernelTimeoutError(LaunchError):
    """The kernel did not finish within the time limit (a hang, e.g. an mbarrier never completed)."""


__all__ = [
    "CudaError",
    "KernelNotFoundError",
    "KernelTimeoutError",
    "LaunchConfigError",
    "MisalignedError",
    "NoGpuError",
    "PipelineError",
    "RuntimeErrorBase",
    "SignatureError",
]
