"""Reductions for Python users: ``bulkred.sum(x)``, ``max``, ``min`` and the integer
kinds ``and_``, ``or_``, ``xor``, on device arrays (torch, cupy, any DLPack or CUDA
Array Interface object; no copy, on the caller's stream) and numpy arrays (copied)::

    import bulkred_dialect as bulkred
    y = bulkred.sum(x)                  # x a torch tensor on the GPU: y a torch tensor of shape (1,)
    bulkred.max(x, out=y)               # into an existing array, returned
    print(bulkred.sum(x, explain=True)) # the dispatch table, returned as text (nothing runs)

Each call builds the tile-level module with the builder (:func:`reduction_module`),
compiles it with the normal pipeline for the GPU's target (``bulkred-to-ptx``, so the
dispatch and its variants apply), caches it (in memory by kind, shape, dtype, axis and
target, and on disk, see backend_ptx/cache.py) and launches it. The result has the
shape of the tile-level destination, ``(1,)`` for a whole reduction.

What lowers today: the whole reduction of a vector of up to 4096 elements, by one
thread. Other shapes and axes give a :class:`ReductionError` until the grid-scope
lowering lands; :func:`reduction_module` is the one place that changes then.
"""

from __future__ import annotations

import builtins
import sys
import threading
from typing import Any

import numpy as np

KINDS = {"sum": "sum", "max": "max", "min": "min", "and_": "and", "or_": "or", "xor": "xor"}
"""API function name -> ``bulkred.reduce`` kind."""

MAX_THREAD_LEN = 4096
"""Longest vector :func:`reduction_module` reduces today (one thread, in registers/local memory)."""

DTYPES = ("float16", "bfloat16", "float32", "float64", "int16", "int32", "int64")
"""Element types the builder and the variants take (integers are treated as signed)."""


class ReductionError(ValueError):
    """A reduction no variant covers, or a bad argument: one readable line (the
    dispatch's located error where it comes from the lowering)."""


# region The module (what lowers today)


def reduction_module(kind: str, shape: tuple[int, ...], dtype: str, axis: int | None, name: str):
    """The tile-level module of one reduction: kernel ``name(x, out)``.

    Today: a 1-D whole reduction (``axis`` None or 0) of at most :data:`MAX_THREAD_LEN`
    elements by one thread (grid [1], block [1]): copy ``x`` to local memory,
    thread-scope ``bulkred.reduce``, copy the result to ``out`` (shape [1])."""
    from bulkred_dialect import builder as T

    if len(shape) != 1 or axis not in (None, 0):
        raise ReductionError(
            f"bulkred.{_fn(kind)}: a reduction over axis={axis} of a {len(shape)}-D array of shape {tuple(shape)} "
            "needs the grid-scope lowering (not available yet); today: whole reductions of 1-D arrays"
        )
    (n,) = shape
    if not 1 <= n <= MAX_THREAD_LEN:
        raise ReductionError(
            f"bulkred.{_fn(kind)}: a vector of {n} elements: today's one-thread lowering takes 1 to "
            f"{MAX_THREAD_LEN} (longer vectors need the grid-scope lowering)"
        )
    with T.kernel(name, grid=[1], block=[1], cluster=[1]) as k:
        x = k.param("x", [n], dtype)
        out = k.param("out", [1], dtype)
        x_local = T.alloc_buffer([n], dtype, scope="local", name="x_local")
        out_local = T.alloc_buffer([1], dtype, scope="local", name="out_local")
        T.copy(x, x_local)
        T.reduce(kind, out_local, x_local)
        T.copy(out_local, out)
    return k.module()


# endregion

# region Compiling, cached


_COMPILED: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _fn(kind: str) -> str:
    return next((f for f, k in KINDS.items() if k == kind), kind)


def compile_reduction(kind: str, shape: tuple[int, ...], dtype: str, axis: int | None, target: str):
    """The :class:`~bulkred_dialect.backend_ptx.loading.CompiledModule` of one reduction,
    from the in-memory cache, else the disk cache, else built and compiled."""
    key = (kind, tuple(shape), dtype, axis, target)
    mod = _COMPILED.get(key)
    if mod is not None:
        return mod
    from bulkred_dialect.backend_ptx.assemble import PtxasError
    from bulkred_dialect.backend_ptx.cache import make_key
    from bulkred_dialect.backend_ptx.errors import RuntimeErrorBase
    from bulkred_dialect.backend_ptx.loading import cached_module, compile_tile_module
    from bulkred_dialect.diagnostics import LocatedError

    def build():
        module = _module(kind, shape, dtype, axis)
        try:
            return compile_tile_module(module, target)
        except (LocatedError, PtxasError, RuntimeErrorBase) as e:
            raise _readable(kind, e) from None

    disk_key = make_key({"what": "api reduction", "key": list(map(str, key))})
    mod = cached_module(disk_key, build)
    with _LOCK:
        _COMPILED[key] = mod
    return mod


def _module(kind: str, shape: tuple[int, ...], dtype: str, axis: int | None):
    """:func:`reduction_module`, its verifier errors as one readable line."""
    from bulkred_dialect.diagnostics import LocatedError

    try:
        return reduction_module(kind, tuple(shape), dtype, axis, _kernel_name(kind))
    except LocatedError as e:
        raise _readable(kind, e) from None


def _kernel_name(kind: str) -> str:
    return f"bulkred_{kind}"


def _readable(kind: str, e: Exception) -> ReductionError:
    """One line from a located (or other) compile error."""
    from bulkred_dialect.diagnostics import LocatedError

    if isinstance(e, LocatedError):
        return ReductionError(f"bulkred.{_fn(kind)}: {e}")
    return ReductionError(f"bulkred.{_fn(kind)}: {type(e).__name__}: {e}")


def explain_reduction(kind: str, shape: tuple[int, ...], dtype: str, axis: int | None, target: str | None = None) -> str:
    """The dispatch table of each ``bulkred.reduce`` of the reduction's module, for
    ``target`` (default: the GPU's, else sm_90a): which variant is chosen and why the
    others are not."""
    from bulkred_dialect.backend_ptx.loading import _target_for
    from bulkred_dialect.passes.lower_tile_reductions import explanations

    module = _module(kind, shape, dtype, axis)
    return "\n".join(explanations(module, _target_for(target)))


# endregion

# region Arrays


def _shape_dtype(x: Any, kind: str) -> tuple[tuple[int, ...], str]:
    """Shape and dtype name of ``x`` without a copy (torch and cupy directly, other
    device arrays through a StridedMemoryView)."""
    module = type(x).__module__
    if isinstance(x, np.ndarray) or module.startswith("cupy"):
        return tuple(x.shape), np.dtype(x.dtype).name
    if module.startswith("torch"):
        return tuple(x.shape), str(x.dtype).removeprefix("torch.")
    from bulkred_dialect.backend_ptx.arrays import _dtype_name, is_device_array_like

    if not is_device_array_like(x):
        raise ReductionError(
            f"bulkred.{_fn(kind)}: expected a device array (torch, cupy, DLPack or CUDA Array Interface) "
            f"or a numpy array, got {type(x).__name__}"
        )
    from cuda.core.utils import StridedMemoryView

    try:
        v = StridedMemoryView.from_any_interface(x, None)
    except Exception as e:
        raise ReductionError(
            f"bulkred.{_fn(kind)}: cannot view the {type(x).__name__} through DLPack or the CUDA Array "
            f"Interface ({type(e).__name__}: {e})"
        ) from None
    return tuple(v.shape), _dtype_name(v)


def _new_out(x: Any, kind: str, shape: tuple[int, ...]) -> Any:
    """A result array of ``shape`` like ``x`` (same library, dtype and device)."""
    module = type(x).__module__
    if isinstance(x, np.ndarray):
        return np.empty(shape, x.dtype)
    if module.startswith("torch"):
        return sys.modules["torch"].empty(shape, dtype=x.dtype, device=x.device)
    if module.startswith("cupy"):
        with x.device:
            return sys.modules["cupy"].empty(shape, x.dtype)
    raise ReductionError(f"bulkred.{_fn(kind)}: pass out= (an array of shape {shape}) for a {type(x).__name__} input")


def reduce(kind: str, x: Any, axis: int | None = None, out: Any = None, *, explain: bool = False, stream: Any = None) -> Any:
    """``kind`` (sum, max, min, and, or, xor) of ``x`` into ``out`` (of the kernel's
    destination shape, (1,) for a whole reduction; a new array like ``x`` when None),
    which is returned. Device arrays: no copy, on the
    caller's stream (``stream``, else torch's or cupy's current stream), no
    synchronize. numpy: copied in and out. ``explain=True`` returns the dispatch table
    as text instead (nothing is compiled or run)."""
    if kind not in KINDS.values():
        raise ReductionError(f"unknown reduction kind '{kind}' (valid: {', '.join(KINDS.values())})")
    if axis is not None and not isinstance(axis, int | np.integer):
        raise ReductionError(f"bulkred.{_fn(kind)}: 'axis' must be an int or None, got {axis!r}")
    shape, dtype = _shape_dtype(x, kind)
    if axis is not None:
        if not -len(shape) <= axis < builtins.max(len(shape), 1):
            raise ReductionError(f"bulkred.{_fn(kind)}: axis {axis} is out of range for a {len(shape)}-D array")
        axis = int(axis) + len(shape) if axis < 0 else int(axis)
    if dtype not in DTYPES:
        raise ReductionError(f"bulkred.{_fn(kind)}: dtype {dtype} is not supported (valid: {', '.join(DTYPES)})")
    if explain:
        return explain_reduction(kind, shape, dtype, axis)
    from bulkred_dialect.backend_ptx.device import current_arch

    mod = compile_reduction(kind, shape, dtype, axis, current_arch())
    kernel = mod.kernel(_kernel_name(kind))
    if out is None:
        out_shape = kernel.signature.params[1].shape  # the kernel is (x, out)
        result = _new_out(x, kind, tuple(out_shape))
    else:
        result = out
    _, got = kernel(x, result, stream=stream)
    if isinstance(result, np.ndarray):
        result[...] = got  # numpy: the kernel wrote a copy
    return result


def sum(x: Any, axis: int | None = None, out: Any = None, *, explain: bool = False, stream: Any = None) -> Any:  # noqa: A001
    """The sum of ``x`` (see :func:`reduce`)."""
    return reduce("sum", x, axis, out, explain=explain, stream=stream)


def max(x: Any, axis: int | None = None, out: Any = None, *, explain: bool = False, stream: Any = None) -> Any:  # noqa: A001
    """The maximum of ``x`` (NaN inputs ignored; see :func:`reduce`)."""
    return reduce("max", x, axis, out, explain=explain, stream=stream)


def min(x: Any, axis: int | None = None, out: Any = None, *, explain: bool = False, stream: Any = None) -> Any:  # noqa: A001
    """The minimum of ``x`` (NaN inputs ignored; see :func:`reduce`)."""
    return reduce("min", x, axis, out, explain=explain, stream=stream)


def and_(x: Any, axis: int | None = None, out: Any = None, *, explain: bool = False, stream: Any = None) -> Any:
    """The bitwise and of an integer ``x`` (see :func:`reduce`)."""
    return reduce("and", x, axis, out, explain=explain, stream=stream)


def or_(x: Any, axis: int | None = None, out: Any = None, *, explain: bool = False, stream: Any = None) -> Any:
    """The bitwise or of an integer ``x`` (see :func:`reduce`)."""
    return reduce("or", x, axis, out, explain=explain, stream=stream)


def xor(x: Any, axis: int | None = None, out: Any = None, *, explain: bool = False, stream: Any = None) -> Any:
    """The bitwise xor of an integer ``x`` (see :func:`reduce`)."""
    return reduce("xor", x, axis, out, explain=explain, stream=stream)


# endregion
