"""Assemble PTX to a cubin in-process through nvJitLink (pip ``nvidia-nvjitlink``).

No GPU and no CUDA toolkit are needed: nvJitLink carries ptxas, so any target
(sm_100a included) can be assembled on a CPU-only machine. ptxas's diagnostics
come back as :class:`PtxasError` with one :class:`PtxasDiagnostic` per message.
"""

from __future__ import annotations

import re
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


def assemble(ptx: str | bytes, arch: str, *, extra_options: tuple[str, ...] = ()) -> bytes:
    """Assemble ``ptx`` for ``arch`` (e.g. ``"sm_100a"``); return the cubin bytes.

    Raises :class:`PtxasError` with ptxas's diagnostics when the PTX is rejected.
    """
    nvjitlink = _nvjitlink()
    data = ptx.encode() if isinstance(ptx, str) else ptx
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


def ptxas_accepts(ptx: str | bytes, arch: str) -> tuple[bool, str]:
    """(accepted, log) -- for differential tests."""
    try:
        assemble(ptx, arch)
        return True, ""
    except PtxasError as e:
        return False, e.log
