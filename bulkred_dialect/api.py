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

The module is one grid-scope ``bulkred.reduce`` (docs/scopes.md): the whole reduction
(``axis=None``), or over one axis; the dispatch picks the variant (grid_full,
grid_rows, grid_split_bulk, ...) from the shape, the dtype and the GPU. Types: the
``collective`` rows of ``ops/dtypes.py`` (int32, float16, bfloat16 and float32; float16
and bfloat16 combined in float32); another dtype is refused before anything is built,
with a :class:`ReductionError` that lists these.
"""

from __future__ import annotations

import builtins
import sys
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from bulkred_dialect.errors import BulkredError
from bulkred_dialect.ops.dtypes import COLLECTIVE_DTYPES

if TYPE_CHECKING:  # pragma: no cover
    from bulkred_dialect.ops.target import Target

KINDS = {"sum": "sum", "max": "max", "min": "min", "and_": "and", "or_": "or", "xor": "xor"}
"""API function name -> ``bulkred.reduce`` kind."""

DTYPES = tuple(d.name for d in COLLECTIVE_DTYPES)
"""Element types the grid-scope variants take (``ops/dtypes.py``'s ``collective`` rows)."""


class ReductionError(BulkredError, ValueError):
    """A reduction no variant covers, or a bad argument: one readable line (the
    dispatch's located error where it comes from the lowering)."""


# region The module


def reduction_module(kind: str, shape: tuple[int, ...], dtype: str, axis: int | None, name: str):
    """The tile-level module of one reduction: kernel ``name(x, out)`` holding one
    grid-scope ``bulkred.reduce`` of ``x`` over ``axis`` (every axis when None) into
    ``out`` (``x``'s shape without that axis, (1,) for a whole reduction)."""
    from bulkred_dialect import builder as T

    axes = None if axis is None else [axis]
    out_shape = [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]
    with T.kernel(name) as k:
        x = k.param("x", list(shape), dtype)
        out = k.param("out", out_shape, dtype)
        T.reduce(kind, out, x, axes=axes)
    return k.module()


# endregion

# region Compiling, cached


_COMPILED: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _fn(kind: str) -> str:
    return next((f for f, k in KINDS.items() if k == kind), kind)


def compile_reduction(kind: str, shape: tuple[int, ...], dtype: str, axis: int | None, target: Target | str):
    """The :class:`~bulkred_dialect.backend_ptx.loading.CompiledModule` of one reduction,
    from the in-memory cache, else the disk cache, else built and compiled."""
    key = (kind, tuple(shape), dtype, axis, target)
    mod = _COMPILED.get(key)
    if mod is not None:
        return mod
    from bulkred_dialect.backend_ptx.cache import make_key
    from bulkred_dialect.backend_ptx.loading import cached_module

    def build():
        # only a miss pays for the compiler's imports (xDSL, the passes, nvJitLink)
        from bulkred_dialect.backend_ptx.loading import compile_tile_module

        module = _module(kind, shape, dtype, axis)
        try:
            return compile_tile_module(module, target)
        except BulkredError as e:
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

    if isinstance(e, ReductionError):
        return e
    if isinstance(e, LocatedError):
        first, *rest = str(e).split("\n", 1)
        more = " (explain=True shows the dispatch table)" if rest else ""
        return ReductionError(f"bulkred.{_fn(kind)}: {first}{more}")
    return ReductionError(f"bulkred.{_fn(kind)}: {type(e).__name__}: {e}")


def explain_reduction(
    kind: str, shape: tuple[int, ...], dtype: str, axis: int | None, target: Target | str | None = None
) -> str:
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


_NEW_OUT: dict[str, tuple[Any, Any]] = {}
"""kind -> (axis, the kernel's ``call_new_last``) of the last torch call that made its
result: ``bulkred.sum(x)`` again on a tensor like it launches with no lookup."""

_TORCH_CALLS: dict[tuple, tuple[Any, tuple[int, ...]]] = {}
"""(kind, shape, dtype, axis as passed) of a torch tensor -> (kernel, result shape): a
call that was checked once goes straight to the kernel the next time."""


def reduce(kind: str, x: Any, axis: int | None = None, out: Any = None, *, explain: bool = False, stream: Any = None) -> Any:
    """``kind`` (sum, max, min, and, or, xor) of ``x`` into ``out`` (of the kernel's
    destination shape, (1,) for a whole reduction; a new array like ``x`` when None),
    which is returned. Device arrays: no copy, on the
    caller's stream (``stream``, else torch's or cupy's current stream), no
    synchronize. numpy: copied in and out. ``explain=True`` returns the dispatch table
    as text instead (nothing is compiled or run)."""
    torch_key = None  # the key of a torch call in _TORCH_CALLS
    if stream is None and not explain and type(x).__module__ == "torch" and (axis is None or type(axis) is int):
        torch_key = (kind, x.shape, x.dtype, axis)
        hit = _TORCH_CALLS.get(torch_key)
        if hit is not None:
            kernel, out_shape = hit
            result = x.new_empty(*out_shape) if out is None else out  # ints: faster than a tuple
            kernel(x, result)  # its short path checks x and out again, else the full checks
            _record_new_out(kind, axis, kernel, out)
            return result
    if kind not in KINDS.values():
        raise ReductionError(f"unknown reduction kind '{kind}' (valid: {', '.join(KINDS.values())})")
    if axis is not None and (not isinstance(axis, int | np.integer) or isinstance(axis, bool)):
        raise ReductionError(f"bulkred.{_fn(kind)}: 'axis' must be an int or None, got {axis!r}")
    shape, dtype = _shape_dtype(x, kind)
    if axis is not None:
        if not -len(shape) <= axis < builtins.max(len(shape), 1):
            raise ReductionError(f"bulkred.{_fn(kind)}: axis {axis} is out of range for a {len(shape)}-D array")
        axis = int(axis) + len(shape) if axis < 0 else int(axis)
    if dtype not in DTYPES:
        raise ReductionError(f"bulkred.{_fn(kind)}: dtype {dtype} is not supported (valid: {', '.join(DTYPES)})")
    if 0 in shape or not shape:
        raise ReductionError(f"bulkred.{_fn(kind)}: an array of shape {tuple(shape)} has no elements to reduce")
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
    elif torch_key is not None and len(_TORCH_CALLS) < 1024:
        _TORCH_CALLS[torch_key] = (kernel, tuple(kernel.signature.params[1].shape))
        _record_new_out(kind, torch_key[3], kernel, out)
    return result


def _record_new_out(kind: str, axis: int | None, kernel: Any, out: Any) -> None:
    """After a call that made its result: the kernel's short path that makes it, for
    the next call of this kind and axis (see :func:`_reduction_function`)."""
    fast = kernel._fast
    if out is None and fast is not None and fast.call_new_last is not None:
        _NEW_OUT[kind] = (axis, fast.call_new_last)


def _reduction_function(name: str, kind: str, what: str):
    """The public function ``name`` (``bulkred.sum`` ...): :func:`reduce` of ``kind``,
    with the short path of a call like the last one that made its result."""

    def fn(x: Any, axis: int | None = None, out: Any = None, *, explain: bool = False, stream: Any = None) -> Any:
        if out is None and stream is None and not explain:
            hit = _NEW_OUT.get(kind)
            if hit is not None and (axis is None or type(axis) is int) and hit[0] == axis:
                result = hit[1]((x,))  # None, having done nothing, unless x is like the last one
                if result is not None:
                    return result
        return reduce(kind, x, axis, out, explain=explain, stream=stream)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = f"{what} (see :func:`reduce`)."
    return fn


sum = _reduction_function("sum", "sum", "The sum of ``x``")  # noqa: A001
max = _reduction_function("max", "max", "The maximum of ``x`` (NaN inputs ignored)")  # noqa: A001
min = _reduction_function("min", "min", "The minimum of ``x`` (NaN inputs ignored)")  # noqa: A001
and_ = _reduction_function("and_", "and", "The bitwise and of an integer ``x``")
or_ = _reduction_function("or_", "or", "The bitwise or of an integer ``x``")
xor = _reduction_function("xor", "xor", "The bitwise xor of an integer ``x``")


# endregion
