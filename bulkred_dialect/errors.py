"""The project's errors: every error a public function of bulkred raises on bad input.

One base, :class:`BulkredError`, and one subclass per step that can refuse its input,
each also the built-in exception it is a kind of (``except ValueError`` keeps working).
Each message is one line that says what was wrong, with what was expected and what
was given. This module imports nothing (neither xDSL nor the rest of the package), so
that every layer, ``ops/`` included, can raise these::

    BulkredError
      ArgumentError   (TypeError)   a public function given the wrong kind of argument
      ParseError      (ValueError)  text that is not MLIR: ``file:line:col: error: ...``
      VerifyError     (ValueError)  IR a verifier, a pass or the printer refuses (located)
      PipelineError   (ValueError)  a malformed pass pipeline or output target spec
      TargetError     (ValueError)  an unknown target name, or an op the target cannot run
      AssembleError                 ptxas (nvJitLink) refused the PTX, or is unavailable
      SignatureError  (TypeError)   kernel arguments that do not match the signature
      LaunchError                   no GPU, a bad launch shape, a CUDA failure, a time-out

The classes that existing code raises derive from these where they live
(``diagnostics.LocatedError`` is a :class:`VerifyError`, ``assemble.PtxasError`` an
:class:`AssembleError`, the runtime's ``NoGpuError`` a :class:`LaunchError` ...);
docs/runtime.md has the table.
"""

from __future__ import annotations


class BulkredError(Exception):
    """Base of every error bulkred raises on bad input or an unusable environment."""


class ArgumentError(BulkredError, TypeError):
    """A public function was given an argument of the wrong kind (``parse(42)``)."""


class ParseError(BulkredError, ValueError):
    """Text that does not parse as MLIR (or is not UTF-8): ``file:line:col: error: ...``."""


class VerifyError(BulkredError, ValueError):
    """IR that does not verify, or that a pass or the PTX printer cannot take."""


class PipelineError(BulkredError, ValueError):
    """A malformed pass pipeline or output target spec, an unknown pass, a bad option."""


class TargetError(BulkredError, ValueError):
    """A target name that does not parse, or an op the target cannot run."""


class AssembleError(BulkredError):
    """Assembling PTX failed: ptxas rejected it, or nvJitLink is not available."""


class SignatureError(BulkredError, TypeError):
    """The arguments do not match the kernel's signature (raised before any GPU call)."""


class LaunchError(BulkredError):
    """Loading or launching failed: no GPU, a bad launch shape, a CUDA error, a time-out."""


class KernelNotFoundError(LaunchError, KeyError):
    """A kernel name the compiled module does not hold."""

    def __str__(self) -> str:  # KeyError's own quotes the message
        return str(self.args[0]) if self.args else "no such kernel"


__all__ = [
    "ArgumentError",
    "AssembleError",
    "BulkredError",
    "KernelNotFoundError",
    "LaunchError",
    "ParseError",
    "PipelineError",
    "SignatureError",
    "TargetError",
    "VerifyError",
]
