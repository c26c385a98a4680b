"""Assemble PTX to a cubin in-process through nvJitLink (pip ``nvidia-nvjitlink``).

No GPU and no CUDA toolkit are needed: nvJitLink carries ptxas, so any target
(sm_100a included) can be assembled on a CPU-only machine. ptxas's diagnostics
come back as :class:`PtxasError` with one :class:`PtxasDiagnostic` per message.

ptxas can crash (a segmentation fault on some unverified declarations) or run without
end, and in-process that ends the caller's process. ``assemble(..., isolated=True)``
runs nvJitLink in a child Python process instead: a crash or a time-out becomes
:class:`AssemblerCrashed` (a :class:`PtxasError`). ``bulkred-opt -t 'ptx{assemble=true}'``
assembles that way; in-process stays the default for the library, whose callers assemble
PTX printed from verified IR. The child stays for the next module (its Python start-up
and its import of cuda.bindings, about 0.15 s, are paid once per process); a crash or a
time-out ends it, and the next call starts another (docs/differential.md, "Assembling in
a child process").
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from bulkred_dialect.errors import ArgumentError, AssembleError

_DIAG_RE = re.compile(r"ptxas[^,]*, line (\d+); (error|warning)\s*:\s*(.*)")


@dataclass(frozen=True)
class PtxasDiagnostic:
    line: int  # 1-based line in the PTX text
    severity: str  # "error" or "warning"
    message: str


@dataclass
class PtxasError(AssembleError, ValueError):
    """ptxas rejected the PTX. ``log`` is nvJitLink's whole error log; the message is
    one line, the log's lines joined by ``; ``. :attr:`diagnostics` are the log's
    messages, parsed when first read (a caller that reads only the log, such as the
    differential harness with logs of thousands of errors, does not pay for them)."""

    arch: str
    log: str
    _diagnostics: list[PtxasDiagnostic] | None = field(default=None, repr=False, compare=False)

    @property
    def diagnostics(self) -> list[PtxasDiagnostic]:
        """One :class:`PtxasDiagnostic` per error or warning line of ``log``
        (:func:`parse_ptxas_log`), or those given when the error was made."""
        if self._diagnostics is None:
            self._diagnostics = parse_ptxas_log(self.log)
        return self._diagnostics

    def __str__(self) -> str:
        lines = [line.strip() for line in self.log.splitlines() if line.strip()]
        return f"ptxas ({self.arch}) rejected the PTX: {'; '.join(lines) or 'no log'}"


class AssemblerCrashed(PtxasError):
    """nvJitLink ended its (child) process or did not finish: ``log`` says how."""

    def __str__(self) -> str:
        return f"ptxas ({self.arch}) {self.log}"


class AssemblerUnavailable(AssembleError, RuntimeError):
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
    if not isinstance(extra_options, tuple | list) or not all(isinstance(o, str) for o in extra_options):
        raise ArgumentError(f"assemble: 'extra_options' must be a tuple of strings, got {extra_options!r:.60}")
    data = ptx.encode() if isinstance(ptx, str) else ptx
    if isolated:
        return _assemble_in_child(data, arch, extra_options, timeout)
    return _assemble_in_process(data, arch, extra_options)


_ASSEMBLED: OrderedDict[tuple[bytes, str, tuple[str, ...]], bytes] = OrderedDict()
"""The cubins of the PTX texts this process assembled last (:data:`ASSEMBLED_KEPT`,
the least recently used dropped first), by (the PTX's SHA-256, arch, options): ptxas is deterministic,
and two compiles that print the same PTX (plans that differ in what does not reach the
kernel) pay nvJitLink (about 10 ms per kernel) once. A rejected PTX is not kept."""
ASSEMBLED_KEPT = 256
_ASSEMBLED_LOCK = threading.Lock()


def _assemble_in_process(data: bytes, arch: str, extra_options: tuple[str, ...]) -> bytes:
    if not (isinstance(data, bytes) and isinstance(arch, str)):
        return _nvjitlink_assemble(data, arch, extra_options)  # its own refusal of a bad argument
    key = (hashlib.sha256(data).digest(), arch, tuple(extra_options))  # not the text: a module's PTX can be megabytes
    with _ASSEMBLED_LOCK:
        cubin = _ASSEMBLED.get(key)
        if cubin is not None:
            _ASSEMBLED.move_to_end(key)
            return cubin
    cubin = _nvjitlink_assemble(data, arch, extra_options)
    with _ASSEMBLED_LOCK:
        _ASSEMBLED[key] = cubin
        while len(_ASSEMBLED) > ASSEMBLED_KEPT:
            _ASSEMBLED.popitem(last=False)
    return cubin


def _nvjitlink_assemble(data: bytes, arch: str, extra_options: tuple[str, ...]) -> bytes:
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
            raise PtxasError(arch, log) from None
        size = nvjitlink.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy(handle)


# The child: a loop over requests on stdin, each a header line (JSON: arch, options,
# the PTX's length) and the PTX; each answer a header line (JSON: "ok" or "rejected",
# the body's length) and the cubin or ptxas's log. It imports only this file's module
# (not the dialects), and ends at the end of its input.
_CHILD = """
import json, sys
from bulkred_dialect.backend_ptx.assemble import PtxasError, _assemble_in_process
inp, out = sys.stdin.buffer, sys.stdout.buffer
for header in iter(inp.readline, b""):
    req = json.loads(header)
    data = inp.read(req["size"])
    try:
        status, body = "ok", _assemble_in_process(data, req["arch"], tuple(req["options"]))
    except PtxasError as e:
        status, body = "rejected", e.log.encode()
    out.write(json.dumps({"status": status, "size": len(body)}).encode() + b"\\n" + body)
    out.flush()
"""


class _TooLong(Exception):
    """The child did not answer in time (not an OSError, unlike TimeoutError)."""


class _Child:
    """One child process that assembles request after request (module doc): the Python
    start-up and the import of ``cuda.bindings`` are paid once per process, not per
    module. A crash or a time-out ends it; the next request starts a new one."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # a fork of this process must not share the pipes
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr
        )

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()

    def ask(self, data: bytes, arch: str, extra_options: tuple[str, ...], timeout: float) -> tuple[str, bytes]:
        """(status, body), or AssemblerCrashed (the child is then gone)."""
        header = json.dumps({"arch": arch, "options": list(extra_options), "size": len(data)}).encode()
        deadline = time.monotonic() + timeout
        try:
            self.proc.stdin.write(header + b"\n" + data)  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
            answer = json.loads(self._read_line(deadline))
            return answer["status"], self._read(answer["size"], deadline)
        except (OSError, ValueError, KeyError, EOFError):
            raise self._ended(arch) from None

    def _wait_readable(self, deadline: float) -> None:
        """Until the child answers (it writes each answer at once, after nvJitLink
        returns), or :class:`_TooLong` at ``deadline``."""
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
            raise _TooLong

    def _read_line(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        self._wait_readable(deadline)
        line = self.proc.stdout.readline()
        if not line.endswith(b"\n"):
            raise EOFError
        return line

    def _read(self, size: int, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        body = self.proc.stdout.read(size)
        if len(body) != size:
            raise EOFError
        return body

    def _ended(self, arch: str) -> AssemblerCrashed:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # alive, but it broke the protocol
            self.proc.kill()
            code = self.proc.wait()
        self.stderr.seek(0)
        log = self.stderr.read().decode(errors="replace")
        if code < 0:
            try:
                how = f"signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"signal {-code}"
            return AssemblerCrashed(arch, f"crashed inside nvJitLink ({how})")
        last = log.strip().splitlines()[-1] if log.strip() else "no output"
        return AssemblerCrashed(arch, f"assembler process failed with exit status {code}: {last}")


_child: _Child | None = None
_child_lock = threading.Lock()


def _drop_child(*, kill: bool = False) -> None:
    """Forget the child; end it first when this process made it (``kill``: at once,
    without waiting for it to finish a request)."""
    global _child
    if _child is not None and _child.pid == os.getpid():
        if kill:
            _child.proc.kill()
        _child.close()
    _child = None


atexit.register(_drop_child)


def _assemble_in_child(data: bytes, arch: str, extra_options: tuple[str, ...], timeout: float) -> bytes:
    global _child
    with _child_lock:
        if _child is None or _child.pid != os.getpid() or _child.proc.poll() is not None:
            _drop_child()
            _child = _Child()
        try:
            status, body = _child.ask(data, arch, extra_options, timeout)
        except _TooLong:
            _drop_child(kill=True)
            raise AssemblerCrashed(arch, f"did not finish within {timeout:g} s (nvJitLink stopped)") from None
        except AssemblerCrashed:
            _drop_child()
            raise
    if status == "ok":
        return body
    log = body.decode(errors="replace")
    raise PtxasError(arch, log)


def ptxas_accepts(ptx: str | bytes, arch: str) -> tuple[bool, str]:
    """(accepted, log) -- for differential tests."""
    try:
        assemble(ptx, arch)
        return True, ""
    except PtxasError as e:
        return False, e.log


def registers_used(ptx: str | bytes, arch: str = "sm_90a") -> int | None:
    """The registers ptxas gives the (first) kernel of ``ptx`` for ``arch`` (its ``-v``
    report, "Used N registers"), assembled in this process; None where the report has no
    such line. Raises :class:`PtxasError` where ptxas refuses the PTX."""
    import re

    data = ptx.encode() if isinstance(ptx, str) else ptx
    nj = _nvjitlink()
    opts = [f"-arch={arch}".encode(), b"-Xptxas=-v"]
    h = nj.create(len(opts), opts)
    try:
        try:
            nj.add_data(h, nj.InputType.PTX, data, len(data), "kernel.ptx")
            nj.complete(h)
        except Exception:  # nvJitLink's refusal: its log says why
            log = _log(nj, h, nj.get_error_log_size, nj.get_error_log)
            raise PtxasError(arch, log) from None
        found = re.search(r"Used (\d+) registers", _log(nj, h, nj.get_info_log_size, nj.get_info_log))
        return int(found.group(1)) if found else None
    finally:
        nj.destroy(h)

