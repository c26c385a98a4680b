"""The compile cache: compiled modules (PTX, cubin, kernel signatures) kept in memory
and on disk, so that a second call, or a second process, pays no compile.

The key hashes what was compiled (the module's text, the pipeline, the target, or the
API call that built the module) together with the versions of bulkred (its version and
a hash of its source files), xdsl, cuda-bindings and nvJitLink, so that any change of
the compiler gives a new entry.

Location: ``$BULKRED_CACHE_DIR``, else ``$XDG_CACHE_HOME/bulkred``, else
``~/.cache/bulkred``. ``BULKRED_CACHE=0`` turns the cache off (memory and disk).

An entry is one file, ``<dir>/<key[:2]>/<key>.bin``: a header line
``bulkred-cache 1 <payload bytes> <sha256 of the payload>`` and the payload. It is
written to a temporary file in the same directory and renamed over the entry
(``os.replace``, atomic), so a reader sees a whole entry or none, and two processes
filling the same entry at once both succeed (the last rename wins; both wrote the same
thing). An entry whose header, length or hash does not match (a truncated or damaged
file) is removed and rebuilt, never loaded. A directory that cannot be written leaves
the cache in memory only.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

MAGIC = b"bulkred-cache"
FORMAT = 1


def enabled() -> bool:
    """False when ``BULKRED_CACHE=0``."""
    return os.environ.get("BULKRED_CACHE", "1").strip() not in ("0", "false", "off", "no")


def cache_dir() -> Path:
    """``$BULKRED_CACHE_DIR``, else ``$XDG_CACHE_HOME/bulkred``, else ``~/.cache/bulkred``."""
    d = os.environ.get("BULKRED_CACHE_DIR")
    if d:
        return Path(d).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "bulkred"


@functools.cache
def _source_hash() -> str:
    """A hash of bulkred's own source files: an edited compiler gives new keys."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def _installed() -> dict[str, str]:
    """Distribution name -> version, read from the ``*.dist-info`` names on ``sys.path``
    (importlib.metadata and loading nvJitLink cost tens of ms, too much for a warm call)."""
    import sys

    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            if n.endswith(".dist-info") and "-" in n:
                dist, version = n[: -len(".dist-info")].split("-", 1)
                found.setdefault(dist.lower().replace("-", "_"), version)
    return found


def _nvjitlink_version() -> str:
    """The nvJitLink wheel's version, else the loaded library's own version."""
    v = _installed().get("nvidia_nvjitlink")
    if v:
        return v
    try:
        from cuda.bindings import nvjitlink

        return ".".join(str(v) for v in nvjitlink.version())
    except Exception as e:  # nvJitLink missing: the driver JIT loads the PTX
        return f"unavailable ({type(e).__name__})"


@functools.cache
def versions() -> dict[str, str]:
    """The versions that are part of every key."""
    from bulkred_dialect._version import __version__

    return {
        "bulkred": f"{__version__}+{_source_hash()}",
        "xdsl": _installed().get("xdsl", "unknown"),
        "cuda-bindings": _installed().get("cuda_bindings", "unknown"),
        "nvJitLink": _nvjitlink_version(),
    }


def make_key(parts: Mapping[str, Any]) -> str:
    """The hex sha256 of ``parts`` (JSON-able) and :func:`versions`."""
    blob = json.dumps({"format": FORMAT, "versions": versions(), **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


# region Entries on disk


def _header(payload: bytes) -> bytes:
    return b"%s %d %d %s\n" % (MAGIC, FORMAT, len(payload), hashlib.sha256(payload).hexdigest().encode())


def encode_entry(payload: bytes) -> bytes:
    """Header line and payload, as written to disk."""
    return _header(payload) + payload


def decode_entry(data: bytes) -> bytes | None:
    """The payload of an entry, None when the header, length or hash does not match."""
    nl = data.find(b"\n")
    if nl < 0:
        return None
    fields = data[:nl].split(b" ")
    if len(fields) != 4 or fields[0] != MAGIC or fields[1] != str(FORMAT).encode():
        return None
    payload = data[nl + 1 :]
    try:
        n = int(fields[2])
    except ValueError:
        return None
    if n != len(payload) or hashlib.sha256(payload).hexdigest().encode() != fields[3]:
        return None
    return payload


class CompileCache:
    """Payloads by key, in memory and under :func:`cache_dir` (read at each call, so
    changing ``BULKRED_CACHE_DIR`` takes effect at once). ``stats`` counts memory and
    disk hits, misses, corrupt entries found and entries written, for the tests."""

    def __init__(self) -> None:
        self._memory: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self.stats = {"memory_hits": 0, "disk_hits": 0, "misses": 0, "corrupt": 0, "writes": 0, "write_errors": 0}

    def path(self, key: str) -> Path:
        return cache_dir() / key[:2] / f"{key}.bin"

    def get(self, key: str) -> bytes | None:
        if not enabled():
            return None
        with self._lock:
            hit = self._memory.get(key)
        if hit is not None:
            self.stats["memory_hits"] += 1
            return hit
        p = self.path(key)
        try:
            data = p.read_bytes()
        except OSError:
            self.stats["misses"] += 1
            return None
        payload = decode_entry(data)
        if payload is None:
            self.stats["corrupt"] += 1
            self.stats["misses"] += 1
            try:
                p.unlink()
            except OSError:
                pass
            return None
        self.stats["disk_hits"] += 1
        with self._lock:
            self._memory[key] = payload
        return payload

    def put(self, key: str, payload: bytes) -> None:
        if not enabled():
            return
        with self._lock:
            self._memory[key] = payload
        p = self.path(key)
        tmp = None
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{key[:16]}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(encode_entry(payload))
            os.replace(tmp, p)
            tmp = None
            self.stats["writes"] += 1
        except OSError:
            self.stats["write_errors"] += 1
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def clear_memory(self) -> None:
        """Forget the in-memory entries (the disk is left as is)."""
        with self._lock:
            self._memory.clear()

    def get_or_build(self, key: str, build: Callable[[], bytes | None]) -> bytes | None:
        """The payload for ``key``, built and stored on a miss (None from ``build``:
        nothing is stored)."""
        hit = self.get(key)
        if hit is not None:
            return hit
        payload = build()
        if payload is not None:
            self.put(key, payload)
        return payload


CACHE = CompileCache()
"""The process's cache."""


# endregion
