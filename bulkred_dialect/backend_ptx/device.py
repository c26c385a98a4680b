"""The GPU: detection, the device and its context, the runtime's own stream, device
memory (allocation, copies, memset) and stream synchronisation."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from bulkred_dialect.backend_ptx.errors import CudaError, KernelTimeoutError, NoGpuError, RuntimeErrorBase
from bulkred_dialect.errors import ArgumentError

# region The GPU


def gpu_unavailable_reason() -> str | None:
    """None when a CUDA GPU and driver are usable, else why not (no GPU call is made
    beyond cuInit and cuDeviceGetCount)."""
    try:
        from cuda.bindings import driver
    except Exception as e:  # pragma: no cover - cuda-bindings is a dependency
        return f"cuda.bindings is not importable: {e}"
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:
        return f"no CUDA driver ({type(e).__name__}: {e})"
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"cuInit failed: {err.name}"
    err, n = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"cuDeviceGetCount failed: {err.name}"
    if n == 0:
        return "the CUDA driver sees no GPU"
    return None


def arch_for_compute_capability(major: int, minor: int) -> str:
    """``sm_90a`` for 9.0: the architecture-specific target where one exists (sm_90 and later)."""
    for field, v in (("major", major), ("minor", minor)):
        if not isinstance(v, int | np.integer) or isinstance(v, bool) or not 0 <= v < 100:
            raise ArgumentError(f"arch_for_compute_capability: '{field}' must be an integer 0 to 99, got {v!r:.40}")
    base = f"sm_{major}{minor}"
    return base + "a" if major >= 9 else base


def check_result(result: Any, call: str) -> Any:
    """Check a cuda.bindings result tuple ``(CUresult, *values)``; return the values."""
    from cuda.bindings import driver

    if isinstance(result, tuple):
        err, *vals = result
    else:
        err, vals = result, []
    if err != driver.CUresult.CUDA_SUCCESS:
        name = getattr(err, "name", str(err))
        detail = ""
        try:
            e2, s = driver.cuGetErrorString(err)
            if e2 == driver.CUresult.CUDA_SUCCESS and s:
                detail = s.decode() if isinstance(s, bytes) else str(s)
        except Exception:
            pass
        raise CudaError(call, name, detail)
    if not vals:
        return None
    return vals[0] if len(vals) == 1 else tuple(vals)


class Gpu:
    """The current device, its context and one stream (one per process, see :func:`gpu`)."""

    def __init__(self, ordinal: int = 0):
        reason = gpu_unavailable_reason()
        if reason is not None:
            raise NoGpuError(reason)
        from cuda.core import Device

        try:
            self.device = Device(ordinal)
            self.device.set_current()
            self.stream = self.device.create_stream()
        except Exception as e:
            raise NoGpuError(f"cannot use device {ordinal}: {type(e).__name__}: {e}") from e
        self.ordinal = ordinal
        cc = self.device.compute_capability
        self.compute_capability = (int(cc[0]), int(cc[1]))
        self.arch = arch_for_compute_capability(*self.compute_capability)
        self.name = self.device.name
        self.broken: str | None = None  # set after a fault or a hang: the context is unusable
        self.streams: dict[int, Any] = {}
        """Stream handle -> its cuda.core ``Stream`` (:meth:`stream_for`'s cache; the
        launchers read it directly)."""

    def __repr__(self) -> str:
        return f"Gpu({self.name!r}, {self.arch})"

    def ensure_usable(self) -> None:
        """The GPU is usable from the calling thread: not broken by an earlier failure, and
        a context current (:meth:`make_current`). The checked launch paths, ``Kernel.bind``
        and ``Kernel.time`` call it; the generated launchers call :meth:`make_current` only
        after a launch failed."""
        if self.broken is not None:
            raise RuntimeErrorBase(f"the GPU context is unusable after an earlier failure: {self.broken}")
        self.make_current()

    def make_current(self) -> bool:
        """Make the device's primary context current on the calling thread when none is
        (``Device(i).set_current()``, as the CUDA runtime binds it on a thread's first call);
        True when it did. A thread CUDA has not seen has no current context: torch's
        autograd thread running a backward whose first CUDA work is ours, or a user's
        ``threading.Thread``. There, getting a kernel's function (``cuKernelGetFunction``),
        a copy, or a launch or zero-fill on the legacy default stream fail with
        CUDA_ERROR_INVALID_CONTEXT. A thread with another context current is left as it is
        (its launches take the context of their stream). One driver call
        (``cuCtxGetCurrent``) when a context is current."""
        from cuda.bindings import driver

        if int(check_result(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")):
            return False
        from cuda.core import Device

        try:
            Device(self.ordinal).set_current()
        except Exception as e:
            raise CudaError(f"making device {self.ordinal}'s context current", type(e).__name__, str(e)) from e
        return True

    def stream_for(self, handle: int | None) -> Any:
        """The cuda.core ``Stream`` for a foreign stream handle (cached), or the
        runtime's own stream for None."""
        if handle is None:
            return self.stream
        s = self.streams.get(handle)
        if s is None:
            import cuda.core

            try:
                if handle in (0, 1):  # torch's default stream is 0; CU_STREAM_LEGACY is 1
                    s = cuda.core.LEGACY_DEFAULT_STREAM
                elif handle == 2:  # CU_STREAM_PER_THREAD
                    s = cuda.core.PER_THREAD_DEFAULT_STREAM
                else:
                    s = cuda.core.Stream.from_handle(handle)
            except Exception as e:
                raise CudaError(f"Stream.from_handle({handle:#x})", type(e).__name__, str(e)) from e
            self.streams[handle] = s
        return s

    def memset_async(self, ptr: int, nbytes: int, stream: Any) -> None:
        """Zero ``nbytes`` at device address ``ptr``, ordered on ``stream``."""
        from cuda.bindings import driver

        if nbytes:
            check_result(
                driver.cuMemsetD8Async(driver.CUdeviceptr(ptr), 0, nbytes, driver.CUstream(int(stream.handle))),
                "cuMemsetD8Async",
            )

    def zeroed(self, nbytes: int):
        """A device buffer of ``nbytes`` zero bytes, ready for use on any stream."""
        buf = self.alloc(nbytes)
        self.memset_async(int(buf.handle), max(nbytes, 16), self.stream)
        self.stream.sync()
        return buf

    def sync(self, what: str, timeout_s: float | None = None, stream: Any = None) -> None:
        """Wait for ``stream`` (default: the runtime's own); raise :class:`CudaError` on
        a fault and :class:`KernelTimeoutError` after ``timeout_s``."""
        from cuda.bindings import driver

        own = stream is None or stream is self.stream
        handle = driver.CUstream(int((self.stream if stream is None else stream).handle))
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        delay = 1e-5
        while True:
            (err,) = driver.cuStreamQuery(handle)
            if err == driver.CUresult.CUDA_SUCCESS:
                break
            if err != driver.CUresult.CUDA_ERROR_NOT_READY:
                self.broken = f"{what}: {err.name}"
                check_result((err,), f"{what} (cuStreamQuery)")
            if deadline is not None and time.monotonic() > deadline:
                self.broken = f"{what} did not finish within {timeout_s} s"
                raise KernelTimeoutError(
                    f"{what} did not finish within {timeout_s} s (a hang: an mbarrier phase that "
                    "never completes, a missing arrive, or a wrong expect_tx byte count?)"
                )
            time.sleep(delay)
            delay = min(delay * 2, 1e-3)
        if own:
            # a fault that happened between the query and now shows up here (on a
            # caller's stream this would wait for the caller's other streams too)
            check_result(driver.cuCtxSynchronize(), f"{what} (cuCtxSynchronize)")

    def alloc(self, nbytes: int):
        buf = self.device.allocate(max(nbytes, 16), stream=self.stream)
        return buf

    def alloc_ready(self, nbytes: int):
        """A device buffer usable on any stream (its stream-ordered allocation done)."""
        buf = self.alloc(nbytes)
        self.stream.sync()
        return buf

    def to_device(self, host: np.ndarray):
        from cuda.bindings import driver

        buf = self.alloc(host.nbytes)
        self.stream.sync()
        if host.nbytes:
            check_result(
                driver.cuMemcpyHtoD(driver.CUdeviceptr(int(buf.handle)), host.ctypes.data, host.nbytes),
                "cuMemcpyHtoD",
            )
        return buf

    def to_host(self, buf, host: np.ndarray) -> np.ndarray:
        from cuda.bindings import driver

        if host.nbytes:
            check_result(
                driver.cuMemcpyDtoH(host.ctypes.data, driver.CUdeviceptr(int(buf.handle)), host.nbytes),
                "cuMemcpyDtoH",
            )
        return host


_GPU: list[Gpu] = []
_GPU_LOCK = threading.Lock()


def current_ordinal(driver: Any = None) -> int:
    """The device whose context is current on the calling thread (``cuCtxGetCurrent``,
    ``cuCtxGetDevice``), else 0: a process that chose its GPU first (one process per GPU,
    ``torch.cuda.set_device(rank)`` and a tensor made there, as torch.distributed's
    launchers do) gets that GPU, not device 0. ``driver``: ``cuda.bindings.driver`` (a
    stand-in in the tests)."""
    if driver is None:
        from cuda.bindings import driver
    try:
        err, ctx = driver.cuCtxGetCurrent()
        if err != driver.CUresult.CUDA_SUCCESS or not int(ctx):
            return 0
        err, dev = driver.cuCtxGetDevice()
        return int(dev) if err == driver.CUresult.CUDA_SUCCESS else 0
    except Exception:  # (no driver, not initialised: device 0, whose Gpu says why it cannot be used)
        return 0


def gpu() -> Gpu:
    """The process's :class:`Gpu`, created on first use on the device current then
    (:func:`current_ordinal`: device 0 where none is); raises :class:`NoGpuError`. One
    device a process: arrays on another GPU are refused by the launch with the reason."""
    with _GPU_LOCK:
        if not _GPU:
            reason = gpu_unavailable_reason()  # (cuInit first: a current context can be read after it)
            _GPU.append(Gpu(current_ordinal() if reason is None else 0))
        return _GPU[0]


def current_arch() -> str:
    """The target of the GPU that is present (``sm_90a`` on an H100/H200); raises :class:`NoGpuError`."""
    return gpu().arch


# endregion
