"""The project's errors: every error a public function of bulkred raises on bad input.

One base, :class:`BulkredError`, and one subclass per step that can refuse its input,
each also the built-in exception it is a kind of (``except ValueError`` keeps working).
Each message is one line that says what was wrong, with what was expected and what
was given. This module imports nothing (neither xDSL nor the rest of the package), so
that every layer, ``ops/`` included, can raise these::

    BulkredError
      ArgumentError   (TypeError)   a public function given the wrong kind of argument
      BuildError      (ValueError)  a builder call (``T.*``) with an argument it cannot take
      ParseError      (ValueError)  text that is not MLIR: ``file:line:col: error: ...``
      VerifyError     (ValueError)  IR a verifier, a pass or the printer refuses (located)
      PipelineError   (ValueError)  a malformed pass pipeline or output target spec
      TargetError     (ValueError)  an unknown target name, or an op the target cannot run
      AssembleError                 ptxas (nvJitLink) refused the PTX, or is unavailable
      SignatureError  (TypeError)   kernel arguments that do not match the signature
        SignatureValueError (ValueError)  a malformed signature spec (``Param``,
                                      ``KernelSignature.of``), interpreter arguments of
                                      the wrong number, shape or dtype (``run_kernel``)
      InterpretError  (ValueError)  a kernel the CPU interpreter cannot run (clusters,
                                    tile-level ops)
      LaunchError                   no GPU, a bad launch shape, a CUDA failure, a time-out
        KernelNotFoundError (KeyError)  a kernel or function name that is not there
      UnknownNameError (KeyError)   a name a table does not hold (a dtype name)

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


class BuildError(BulkredError, ValueError):
    """A builder call (``T.alloc_buffer``, ``T.sum``, ``k.param`` ...) with an argument it
    cannot take: an unknown dtype, scope or kind, a value that is not a buffer, a
    malformed shape, a call outside ``with T.kernel(...)``."""


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


class SignatureValueError(SignatureError, ValueError):
    """A :class:`SignatureError` that is also a ``ValueError``: a malformed signature spec
    (``Param(...)``, ``KernelSignature.of(...)``), or arguments of the wrong number, shape
    or dtype for the CPU interpreter (``run_kernel``, ``run_grid``), which raised
    ``ValueError`` before."""


class InterpretError(BulkredError, ValueError):
    """A kernel the CPU interpreter cannot run: clusters of more than one CTA, or
    tile-level ops (it runs level-2 IR, after ``lower-tile-reductions``)."""


class LaunchError(BulkredError):
    """Loading or launching failed: no GPU, a bad launch shape, a CUDA error, a time-out."""


class UnknownNameError(BulkredError, KeyError):
    """A name a table does not hold: a dtype name (``ops.dtypes.dtype("float8")``)."""

    def __str__(self) -> str:  # KeyError's own quotes the message
        return str(self.args[0]) if self.args else "no such name"


class KernelNotFoundError(LaunchError, UnknownNameError):
    """A kernel name the compiled module (or, for the interpreter, the module) does not hold."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "no such kernel"


__all__ = [
    "ArgumentError",
    "AssembleError",
    "BuildError",
    "BulkredError",
    "InterpretError",
    "KernelNotFoundError",
    "LaunchError",
    "ParseError",
    "PipelineError",
    "SignatureError",
    "SignatureValueError",
    "TargetError",
    "UnknownNameError",
    "VerifyError",
]
