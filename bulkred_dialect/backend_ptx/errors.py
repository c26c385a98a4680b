"""The runtime's errors: every one derives from :class:`RuntimeErrorBase`."""

from __future__ import annotations

class RuntimeErrorBase(Exception):
    """Base of every error raised by this module."""


class NoGpuError(RuntimeErrorBase):
    """No CUDA driver or GPU is usable; ``reason`` says why."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"no GPU available: {reason}")


class SignatureError(RuntimeErrorBase, TypeError):
    """The arguments do not match the kernel's signature (raised before any GPU call)."""


class LaunchConfigError(RuntimeErrorBase, ValueError):
    """The grid, block, cluster or shared-memory size is not valid."""


class CudaError(RuntimeErrorBase):
    """A CUDA driver call failed: ``call`` and the driver's ``code`` name."""

    def __init__(self, call: str, code: str, detail: str = ""):
        self.call = call
        self.code = code
        super().__init__(f"{call} failed: {code}{': ' + detail if detail else ''}")


class PipelineError(RuntimeErrorBase, ValueError):
    """A malformed or unknown ``pipeline`` spec, with the one-line message ``bulkred-opt -p``
    prints for it."""


class KernelTimeoutError(RuntimeErrorBase):
    """The kernel did not finish within the time limit (a hang, e.g. an mbarrier never completed)."""

