"""Assemble PTX to a cubin in-process through nvJitLink (pip ``nvidia-nvjitlink``).

No GPU and no CUDA toolkit are needed: nvJitLink carries ptxas, so any target
(sm_100a included) can be assembled on a CPU-only machine. ptxas's diagnostics
come back as :class:`PtxasError` with one :class:`PtxasDiagnostic` per message.

ptxas can crash (a segmentation fault on some unverified declarations) or run without
end, and in-process that ends the caller's process. ``assemble(..., isolated=True)``
runs nvJitLink in a child Python process instead: a crash or a time-out becomes
:class:`AssemblerCrashed` (a :class:`PtxasError`). ``bulkred-opt -t 'ptx{assemble=true}'``
assembles that way; in-process stays the default for the library, whose callers assemble
PTX printed from verified IR (the child costs a Python start-up and an import of
cuda.bindings per module: docs/differential.md, "Assembling in a child process").
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field

_DIAG_RE = re.compile(r"ptxas[^,]*, line (\d+); (error|warning)\s*:\s*(.*)")


@dataclass(frozen=True)
class PtxasDiagnostic:
    line: int  # 1-based line in the PTX text
    severity: str  # "error" or "warning"
    message: str


@dataclass
class PtxasError(Exception):
    """ptxas rejected the PTX. ``log`` is nvJitLink's whole error log."""

    arch: str
    log: str
    diagnostics: list[PtxasDiagnostic] = field(default_factory=list)

    def __str__(self) -> str:
        return f"ptxas ({self.arch}) rejected the PTX:\n{self.log.strip()}"


class AssemblerCrashed(PtxasError):
    """nvJitLink ended its (child) process or did not finish: ``log`` says how."""

    def __str__(self) -> str:
        return f"ptxas ({self.arch}) {self.log}"


class AssemblerUnavailable(RuntimeError):
    """nvJitLink could not be loaded."""


def parse_ptxas_log(log: str) -> list[PtxasDiagnostic]:
    out = []
    for m in _DIAG_RE.finditer(log):
        out.append(PtxasDiagnostic(int(m.group(1)), m.group(2), m.group(3).strip()))
    return out


def _nvjitlink():
    try:
        from cuda.bindings import nvjitlink
    except Exception as e:  # pragma: no cover - dependency missing
        raise AssemblerUnavailable(f"cuda.bindings.nvjitlink is not importable: {e}") from e
    return nvjitlink


def _log(nvjitlink, handle, getter_size, getter) -> str:
    n = getter_size(handle)
    if not n:
        return ""
    buf = bytearray(n)
    getter(handle, buf)
    return buf.decode(errors="replace").rstrip("\x00")


ISOLATED_TIMEOUT_S = 120.0


def assemble(
    ptx: str | bytes,
    arch: str,
    *,
    extra_options: tuple[str, ...] = (),
    isolated: bool = False,
    timeout: float = ISOLATED_TIMEOUT_S,
) -> bytes:
    """Assemble ``ptx`` for ``arch`` (e.g. ``"sm_100a"``); return the cubin bytes.

    Raises :class:`PtxasError` with ptxas's diagnostics when the PTX is rejected. With
    ``isolated`` nvJitLink runs in a child process, and a crash or running past
    ``timeout`` seconds raises :class:`AssemblerCrashed` instead of ending this process.
    """
    data = ptx.encode() if isinstance(ptx, str) else ptx
    if isolated:
        return _assemble_in_child(data, arch, extra_options, timeout)
    return _assemble_in_process(data, arch, extra_options)


def _assemble_in_process(data: bytes, arch: str, extra_options: tuple[str, ...]) -> bytes:
    nvjitlink = _nvjitlink()
    opts = [f"-arch={arch}".encode(), *(o.encode() for o in extra_options)]
    try:
        handle = nvjitlink.create(len(opts), opts)
    except Exception as e:
        raise PtxasError(arch, f"nvJitLink refused the options {opts}: {e}") from None
    try:
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "bulkred.ptx")
            nvjitlink.complete(handle)
        except Exception:
            log = _log(nvjitlink, handle, nvjitlink.get_error_log_size, nvjitlink.get_error_log)
            raise PtxasError(arch, log, parse_ptxas_log(log)) from None
        size = nvjitlink.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy(handle)


_REJECTED = 3  # the child's exit status when ptxas rejected the PTX (log on stderr)

# The child imports only this file's own module (not the dialects): PTX on stdin, the
# cubin on stdout; a rejection exits with _REJECTED and ptxas's log on stderr.
_CHILD = f"""
import sys
from bulkred_dialect.backend_ptx.assemble import PtxasError, _assemble_in_process
try:
    cubin = _assemble_in_process(sys.stdin.buffer.read(), sys.argv[1], tuple(sys.argv[2:]))
except PtxasError as e:
    sys.stderr.write(e.log)
    sys.exit({_REJECTED})
sys.stdout.buffer.write(cubin)
"""


def _assemble_in_child(data: bytes, arch: str, extra_options: tuple[str, ...], timeout: float) -> bytes:
    cmd = [sys.executable, "-c", _CHILD, arch, *extra_options]
    try:
        done = subprocess.run(cmd, input=data, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssemblerCrashed(arch, f"did not finish within {timeout:g} s (nvJitLink stopped)") from None
    if done.returncode == 0:
        return done.stdout
    log = done.stderr.decode(errors="replace")
    if done.returncode == _REJECTED:
        raise PtxasError(arch, log, parse_ptxas_log(log))
    if done.returncode < 0:
        try:
            how = f"signal {signal.Signals(-done.returncode).name}"
        except ValueError:
            how = f"signal {-done.returncode}"
        raise AssemblerCrashed(arch, f"crashed inside nvJitLink ({how})")
    last = log.strip().splitlines()[-1] if log.strip() else "no output"
    raise AssemblerCrashed(arch, f"assembler process failed with exit status {done.returncode}: {last}")


def ptxas_accepts(ptx: str | bytes, arch: str) -> tuple[bool, str]:
    """(accepted, log) -- for differential tests."""
    try:
        assemble(ptx, arch)
        return True, ""
    except PtxasError as e:
        return False, e.log
