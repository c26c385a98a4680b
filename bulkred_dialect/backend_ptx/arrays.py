"""Device arrays and streams: an argument with ``__dlpack__`` or
``__cuda_array_interface__`` on the GPU (a torch tensor, a cupy array, a cuda.core
buffer) is viewed through cuda.core's ``StridedMemoryView`` and passed by its device
pointer, without a copy; the launch goes on the caller's stream.

The checks take any object with the attributes of a ``StridedMemoryView`` (``ptr``,
``device_id``, ``is_device_accessible``, ``shape``, ``strides`` in elements or None
when C-contiguous, ``dtype``), so they run without a GPU in the tests.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from bulkred_dialect.backend_ptx.errors import LaunchConfigError, MisalignedError, SignatureError
from bulkred_dialect.backend_ptx.signature import PARAM_DTYPES, Param
from bulkred_dialect.ops.dtypes import DTYPES


def is_device_array_like(a: Any) -> bool:
    """True for an object that may be a device array: it speaks DLPack or the CUDA
    Array Interface and is not a numpy array (numpy arrays are copied in and out)."""
    if isinstance(a, np.ndarray | np.generic):
        return False
    return hasattr(a, "__dlpack__") or hasattr(a, "__cuda_array_interface__")


def _consumer_stream(handle: int) -> int:
    """The stream value DLPack and the CUDA Array Interface expect for ``handle``: the
    legacy default stream is 1 there (0 is not allowed)."""
    return 1 if handle == 0 else handle


def view_of(obj: Any, stream_handle: int, where: str) -> Any:
    """A ``StridedMemoryView`` of ``obj``, its producer's pending work ordered before
    ``stream_handle``. Raises :class:`SignatureError` naming ``where`` when ``obj``
    cannot be viewed."""
    from cuda.core.utils import StridedMemoryView

    try:
        return StridedMemoryView.from_any_interface(obj, _consumer_stream(stream_handle))
    except Exception as e:
        raise SignatureError(
            f"{where}: cannot view the {type(obj).__name__} as a device array through DLPack "
            f"or the CUDA Array Interface ({type(e).__name__}: {e})"
        ) from None


# The dtypes numpy has no type for (bfloat16): cuda.core cannot name them without ml_dtypes.
_NOT_IN_NUMPY = tuple(d for d in DTYPES.values() if d.numpy != d.name)


def view_dtype_name(view: Any) -> str:
    try:
        return np.dtype(view.dtype).name
    except NotImplementedError as e:
        said = str(e).lower()
        return next((d.name for d in _NOT_IN_NUMPY if d.name in said), f"<{e}>")


def _itemsize(view: Any) -> int:
    try:
        return np.dtype(view.dtype).itemsize
    except NotImplementedError:
        d = DTYPES.get(view_dtype_name(view))
        return d.bytes if d is not None else 0


def _device_name(view: Any) -> str:
    if not view.is_device_accessible or view.device_id < 0:
        return "the host (cpu)"
    return f"cuda:{view.device_id}"


def _an(n: int) -> str:
    return "an" if str(n).startswith("8") else "a"


def misaligned(where: str, ptr: int, align: int) -> str:
    """The message refusing an array at ``ptr`` for a kernel that reads it ``align``
    bytes at a time (``bulkred.align``)."""
    return (
        f"{where}: its address is {ptr % align} bytes past {_an(align)} {align}-byte boundary (a view at a storage "
        f"offset); the kernel reads it with {align}-byte vector loads: pass an aligned array "
        f"(a copy: x.clone() in torch, x.copy() in cupy)"
    )


def check_device_array(where: str, p: Param, view: Any, device_id: int, align: int = 1) -> tuple[int, int]:
    """Check a viewed device array against param ``p``; return ``(pointer, bytes)``.

    Raises :class:`SignatureError` naming ``where`` for a wrong device, dtype, shape,
    strides the kernel cannot take (it reads a dense row-major array), or an address
    that is not a multiple of ``align`` bytes (the kernel's vector loads would fault)."""
    if not view.is_device_accessible or view.device_id != device_id:
        raise SignatureError(
            f"{where}: expected an array on cuda:{device_id} (the GPU the kernel runs on), "
            f"got one on {_device_name(view)}"
        )
    shape = tuple(int(d) for d in view.shape)
    dtype = view_dtype_name(view)
    if p.dtype is not None and dtype not in PARAM_DTYPES[p.dtype][1]:
        raise SignatureError(f"{where}: expected dtype {PARAM_DTYPES[p.dtype][2]} ({p.dtype}), got {dtype}")
    if p.shape is not None:
        ok = len(p.shape) == len(shape) and all(d is None or d == s for d, s in zip(p.shape, shape))
        if not ok:
            want = tuple("?" if d is None else d for d in p.shape)
            raise SignatureError(f"{where}: expected shape {want}, got {shape}")
    strides = view.strides
    if p.strides is not None:  # a view param: the array's strides must be the kernel's
        if not p.strides_match(shape, None if strides is None else tuple(strides)):
            raise SignatureError(_strides_differ(where, p, shape, strides))
    elif strides is not None and not is_c_contiguous(shape, tuple(strides)):
        raise SignatureError(
            f"{where}: expected a contiguous row-major array, got strides {tuple(strides)} (in elements) "
            f"for shape {shape}; pass a contiguous copy (x.contiguous() in torch, cupy.ascontiguousarray(x))"
        )
    itemsize = PARAM_DTYPES[p.dtype][0] if p.dtype is not None else _itemsize(view)
    ptr = int(view.ptr)
    if ptr % align:
        raise MisalignedError(misaligned(where, ptr, align))
    return ptr, (p.span(shape) if p.strides is not None else math.prod(shape)) * itemsize


def _strides_differ(where: str, p: Param, shape: tuple[int, ...], strides: Any) -> str:
    got = "contiguous" if strides is None else f"strides {tuple(int(x) for x in strides)}"
    return (
        f"{where}: expected a view with strides {p.strides} (in elements) for shape {shape}, got {got} "
        f"(the kernel was built for that layout)"
    )


def check_torch_tensor(where: str, p: Param, t: Any, device_id: int, align: int = 1) -> tuple[int, int]:
    """:func:`check_device_array` for a torch tensor, read from the tensor's own
    attributes: the same checks and messages, a few microseconds less per argument
    than a ``StridedMemoryView`` (the call's cost matters for small kernels). The
    launch is on torch's current stream, so no stream ordering is needed."""
    if not t.is_cuda or t.device.index != device_id:
        on = f"cuda:{t.device.index}" if t.is_cuda else f"the host ({t.device.type})"
        raise SignatureError(f"{where}: expected an array on cuda:{device_id} (the GPU the kernel runs on), got one on {on}")
    dtype = str(t.dtype)[6:]  # "torch.float32"
    if p.dtype is not None and dtype not in PARAM_DTYPES[p.dtype][1]:
        raise SignatureError(f"{where}: expected dtype {PARAM_DTYPES[p.dtype][2]} ({p.dtype}), got {dtype}")
    shape = tuple(t.shape)
    if p.shape is not None:
        ok = len(p.shape) == len(shape) and all(d is None or d == s for d, s in zip(p.shape, shape))
        if not ok:
            want = tuple("?" if d is None else d for d in p.shape)
            raise SignatureError(f"{where}: expected shape {want}, got {shape}")
    if p.strides is not None:  # a view param: the tensor's strides must be the kernel's
        if not p.strides_match(shape, tuple(t.stride())):
            raise SignatureError(_strides_differ(where, p, shape, t.stride()))
        ptr = t.data_ptr()
        if ptr % align:
            raise MisalignedError(misaligned(where, ptr, align))
        return ptr, p.span(shape) * t.element_size()
    if not t.is_contiguous() and not is_c_contiguous(shape, tuple(t.stride())):
        raise SignatureError(
            f"{where}: expected a contiguous row-major array, got strides {tuple(t.stride())} (in elements) "
            f"for shape {shape}; pass a contiguous copy (x.contiguous() in torch, cupy.ascontiguousarray(x))"
        )
    ptr = t.data_ptr()
    if ptr % align:
        raise MisalignedError(misaligned(where, ptr, align))
    return ptr, t.numel() * t.element_size()


def is_torch_tensor(a: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


def is_c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Row-major dense, strides in elements; a dimension of size 1 may have any stride."""
    expected = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


def check_array_kind(where: str, p: Param, a: Any) -> None:
    """Reject an array argument that is neither numpy nor a device array."""
    if not (isinstance(a, np.ndarray) or is_device_array_like(a)):
        raise SignatureError(
            f"{where}: expected a device array (torch, cupy, DLPack or CUDA Array Interface) "
            f"or a numpy array ({p.describe()}), got {type(a).__name__}"
        )


# region Streams


def stream_handle(stream: Any) -> int:
    """The ``CUstream`` handle of ``stream``: an int, a cuda.core ``Stream`` or anything
    with ``__cuda_stream__``, a ``torch.cuda.Stream`` (``cuda_stream``), a cupy stream (``ptr``)."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr"):
        if isinstance(getattr(stream, attr, None), int):
            return int(getattr(stream, attr))
    raise LaunchConfigError(
        f"'stream' must be a CUDA stream (a cuda.core Stream, a torch.cuda.Stream, a cupy stream, "
        f"an object with __cuda_stream__, or a handle as an int), got {type(stream).__name__}"
    )


def caller_stream(args: Any, stream: Any) -> tuple[int | None, str]:
    """The handle of the stream to launch on, and where it came from: ``stream`` when
    given (``"stream"``), else the current stream of the first CUDA torch tensor's
    device (``"torch"``) or of cupy (``"cupy"``), else ``(None, "runtime")`` (the
    runtime's own stream). torch and cupy are looked up only when already imported."""
    if stream is not None:
        return stream_handle(stream), "stream"
    for a in args:
        module = type(a).__module__
        if module.startswith("torch") and "torch" in sys.modules and getattr(a, "is_cuda", False):
            return int(sys.modules["torch"].cuda.current_stream(a.device).cuda_stream), "torch"
        if module.startswith("cupy") and "cupy" in sys.modules:
            return int(sys.modules["cupy"].cuda.get_current_stream().ptr), "cupy"
    return None, "runtime"


# endregion
