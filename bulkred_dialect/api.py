"""Reductions for Python users, with the array API standard's signatures and semantics:
``bulkred.sum``, ``prod``, ``max``, ``min``, ``any``, ``all`` and the integer kinds
``and_``, ``or_``, ``xor``, on device arrays (torch, cupy, any DLPack or CUDA Array
Interface object; no copy, on the caller's stream) and numpy arrays (copied)::

    import bulkred_dialect as bulkred
    y = bulkred.sum(x)                        # x a torch tensor on the GPU: y a 0-d torch tensor
    bulkred.sum(x, axis=(0, 2), keepdims=True)
    bulkred.max(x, axis=-1, out=y)            # into an existing array, returned
    print(bulkred.sum(x, explain=True))       # the dispatch table, returned as text (nothing runs)

``sum(x, /, *, axis=None, dtype=None, keepdims=False, out=None, stream=None, explain=False)``
and ``prod`` alike; ``max`` and ``min`` take ``ignore_nan`` instead of ``dtype``; ``any``,
``all``, ``and_``, ``or_`` and ``xor`` neither. :func:`reduce` takes the kind and every
option. docs/from_torch.md walks through them from torch.

Each call is checked and planned once per (kind, shape, dtype, axis, keepdims, dtype=,
ignore_nan, out's dtype) (:func:`plan`): bad arguments raise a :class:`ReductionError`
of one line before anything is built or launched. The plan's module is one grid-scope
``bulkred.reduce`` (:func:`reduction_module`), compiled with the normal pipeline for the
GPU's target (``bulkred-to-ptx``: the dispatch picks the variant), cached in memory and
on disk, and launched. Its destination is the tile-level shape (the kept extents, [1]
for a whole reduction); the API returns a view of it in the array API's shape (0-d for
a whole reduction, 1s kept with ``keepdims``). A request the dialect does not take yet
(a kind, a dtype, a NaN mode, a destination type) is the dialect's refusal, one line.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bulkred_dialect.errors import BulkredError, SignatureError
from bulkred_dialect.ops.dtypes import COLLECTIVE_DTYPES
from bulkred_dialect.ops.dtypes import DTYPES as _ROWS

if TYPE_CHECKING:  # pragma: no cover
    from bulkred_dialect.ops.target import Target

KINDS = {
    "sum": "sum", "prod": "prod", "max": "max", "min": "min", "any": "any", "all": "all",
    "and_": "and", "or_": "or", "xor": "xor",
}
"""API function name -> ``bulkred.reduce`` kind."""

DTYPES = tuple(d.name for d in COLLECTIVE_DTYPES)
"""Element types the warp to grid-scope variants take (``ops/dtypes.py``'s ``collective``
rows). The API asks the dialect (the builder and the verifier) whether it takes a
reduction's source and result types, so a type the grid variants alone take works too."""

ISSUE = "issue 16"
"""Where the work on what is refused 'not yet' is tracked."""


class ReductionError(BulkredError, ValueError):
    """A reduction no variant covers, or a bad argument: one readable line (the
    dispatch's located error where it comes from the lowering)."""


def _fn(kind: str) -> str:
    return next((f for f, k in KINDS.items() if k == kind), kind)


def _error(kind: str, message: str) -> ReductionError:
    return ReductionError(f"bulkred.{_fn(kind)}: {message}")


# region The plan: arguments checked, shapes and dtypes decided (no xDSL, no GPU)


@dataclass(frozen=True)
class Plan:
    """One reduction as the API runs it: the kernel's ``x`` shape, element types and
    axes, the kernel's destination shape, and the shape the caller gets."""

    kind: str  # the bulkred.reduce kind
    shape: tuple[int, ...]  # the kernel's x: the input's shape, (1,) for a 0-d input
    src: str  # the input's dtype name
    dst: str  # the result's dtype name (the accumulator's and the output's, dtype=)
    axes: tuple[int, ...] | None  # the kernel's axes, None for every axis
    kernel_shape: tuple[int, ...]  # the kernel's destination: the kept extents, (1,) for none
    result_shape: tuple[int, ...]  # the caller's result: the array API's shape
    ignore_nan: bool  # float max/min: drop NaN inputs (else a NaN gives NaN)
    fill: Any = None  # the value of every element when no kernel runs (an empty reduction)
    empty: bool = False  # the result has no elements: no kernel
    strides: tuple[int, ...] | None = None  # the kernel's x is a view of these element strides (None: dense)
    # fused reductions (issue 17; :func:`plan_fused`): None and () for the kinds above
    fn: str | None = None  # the API function (mean, var, ...): its name in errors and the kernel's
    prologue: tuple = ()  # the op's prologue maps: names or (name, float) pairs
    epilogue: tuple = ()  # the op's epilogue maps
    correction: int | None = None  # var: N - correction divides the sum of squared deviations
    aux: str | None = None  # the dtype of the kernel's second output (var_mean's mean), None: none
    variant: str | None = None  # a lowering variant forced (grid_gather for a misaligned view), None: the dispatch's

    @property
    def launches(self) -> bool:
        return self.fill is None and not self.empty


def _dtype_name(kind: str, d: Any, what: str = "dtype") -> str:
    """The dtype name (``"float32"``) of a name, a numpy dtype or type, or a torch dtype."""
    if isinstance(d, str):
        name = d
    elif type(d).__module__ == "torch":  # torch.float32
        name = str(d).removeprefix("torch.")
    else:
        try:
            name = np.dtype(d).name
        except Exception:
            raise _error(kind, f"'{what}' must be a dtype (a name, a numpy or torch dtype), got {d!r}") from None
    if name not in _ROWS:
        raise _error(kind, f"unknown dtype {name!r} (bulkred's element types: {', '.join(_ROWS)})")
    return name


def _normalize_axes(kind: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple of ints, negatives from the end) as sorted axes."""
    if axis is None:
        return tuple(range(ndim))
    items = tuple(axis) if isinstance(axis, tuple | list) else (axis,)
    if not items:
        raise _error(kind, "axis=() reduces nothing in numpy and everything in torch: pass axis=None for a whole reduction")
    got = []
    for a in items:
        if isinstance(a, bool | np.bool_) or not isinstance(a, int | np.integer):
            raise _error(kind, f"'axis' must be an int, a tuple of ints or None, got {axis!r}")
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1) or ndim == 0 and a not in (0, -1):
            raise _error(kind, f"axis {int(a)} is out of range for a {ndim}-D array")
        got.append(int(a) % builtins.max(ndim, 1))
    if len(set(got)) != len(got):
        raise _error(kind, f"axis {axis!r} names an axis twice (as {tuple(got)} for a {ndim}-D array)")
    if ndim == 0:
        raise _error(kind, f"axis {axis!r} is out of range for a 0-D array")
    return tuple(sorted(got))


def _default_dtype(kind: str, src: str) -> str:
    """The array API's result dtype: sums and products of integers in 64 bits (signed,
    or unsigned for unsigned input; bool as int64), any/all bool, the others ``src``."""
    if kind in ("any", "all"):
        return "bool"
    if kind in ("sum", "prod"):
        if src == "bool" or src.startswith("int"):
            return "int64"
        if src.startswith("uint"):
            return "uint64"
    return src


_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True, "or": 0, "xor": 0}


def plan(
    kind: str, shape: tuple[int, ...], src: str, axis: Any = None, keepdims: bool = False, dtype: Any = None,
    ignore_nan: bool = False, out_dtype: str | None = None,
) -> Plan:
    """Check the arguments of one reduction of an array of ``shape`` and dtype ``src``
    and decide its shapes and dtypes (see :class:`Plan`). ``out_dtype``: the dtype of an
    ``out=`` given, which a sum or a product without ``dtype=`` takes (as torch does).
    Raises :class:`ReductionError` (one line); imports no xDSL and needs no GPU."""
    if kind not in KINDS.values():
        raise ReductionError(f"unknown reduction kind {kind!r} (valid: {', '.join(KINDS.values())})")
    if not isinstance(keepdims, bool | np.bool_):
        raise _error(kind, f"'keepdims' must be a bool, got {keepdims!r}")
    if not isinstance(ignore_nan, bool | np.bool_):
        raise _error(kind, f"'ignore_nan' must be a bool, got {ignore_nan!r}")
    if src not in _ROWS:
        raise _error(kind, f"dtype {src} is not supported (bulkred's element types: {', '.join(_ROWS)})")
    ndim = len(shape)
    reduced = _normalize_axes(kind, axis, ndim)
    if dtype is not None:
        dst = _dtype_name(kind, dtype)
        if out_dtype is not None and out_dtype != dst:
            raise _error(kind, f"'out' has dtype {out_dtype}, but dtype={dst} was asked for")
    elif out_dtype is not None and kind in ("sum", "prod"):
        dst = out_dtype
    else:
        dst = _default_dtype(kind, src)
        if out_dtype is not None and out_dtype != dst:
            raise _error(kind, f"'out' has dtype {out_dtype}, expected {dst} (the result's dtype)")
    kept = tuple(d for i, d in enumerate(shape) if i not in reduced)
    result_shape = tuple(1 if i in reduced else d for i, d in enumerate(shape)) if keepdims else kept
    count = math.prod(shape[i] for i in reduced)
    float_src = _ROWS[src].is_float
    common = {
        "kind": kind, "shape": tuple(shape) or (1,), "src": src, "dst": dst,
        "axes": None if len(reduced) == ndim else reduced, "kernel_shape": kept or (1,), "result_shape": result_shape,
        "ignore_nan": bool(ignore_nan) and kind in ("max", "min") and float_src,
    }
    if count == 0:
        if kind not in _IDENTITY and kind != "and":
            where = "the array" if axis is None else f"axis {axis!r}"
            raise _error(kind, f"{where} of an array of shape {tuple(shape)} has no elements, and {kind} has no identity")
        fill = _IDENTITY[kind] if kind != "and" else _ROWS[dst].identity("and")
        return Plan(**common, fill=fill)
    return Plan(**common, empty=math.prod(result_shape) == 0)


FUSED = ("mean", "var", "std", "var_mean", "argmax", "argmin", "vector_norm", "logsumexp")
"""The fused reductions' API functions (issue 17, docs/fused.md): each one grid-scope
``bulkred.reduce`` with a prologue, an epilogue or a kind whose accumulator is more than
one value (:func:`plan_fused`)."""

_FLOAT_ONLY = ("mean", "var", "std", "var_mean", "vector_norm", "logsumexp")
_FLOATS = tuple(n for n, d in _ROWS.items() if d.is_float and d.collective)


def _float_input(fn: str, src: str) -> None:
    if not _ROWS[src].is_float:
        raise _error(
            fn,
            f"expected a floating-point input ({', '.join(_FLOATS)}), got {src} (as torch's {fn}); "
            f"cast it first (x.float() in torch, x.astype('float32') in numpy or cupy)",
        )


def _norm_maps(fn: str, ord: Any) -> tuple[str, tuple, tuple]:
    """vector_norm's ``ord`` as (kind, prologue, epilogue)."""
    if isinstance(ord, bool | np.bool_) or not isinstance(ord, int | float | np.integer | np.floating):
        raise _error(fn, f"'ord' must be a number (an int, a float, inf or -inf), got {ord!r}")
    p = float(ord)
    if math.isnan(p):
        raise _error(fn, "'ord' must be a number, got nan")
    if p == 0:
        raise _error(fn, "ord=0 (the number of nonzero elements) is not supported: pass bulkred.sum(x != 0)")
    if p == math.inf:
        return "max", ("abs",), ()
    if p == -math.inf:
        return "min", ("abs",), ()
    if p == 1:
        return "sum", ("abs",), ()
    if p == 2:
        return "sum", ("square",), ("sqrt",)
    return "sum", (("pow", p),), (("pow", 1.0 / p),)


def plan_fused(
    fn: str, shape: tuple[int, ...], src: str, axis: Any = None, keepdims: bool = False, dtype: Any = None, *,
    correction: Any = 0, ord: Any = 2, out_dtype: str | None = None,
) -> Plan:
    """:func:`plan` of a fused reduction: the API function ``fn`` (one of :data:`FUSED`)
    of an array of ``shape`` and dtype ``src``, as one ``bulkred.reduce`` (kind,
    prologue, epilogue, correction, aux output) and its shapes and dtypes. ``dtype``:
    the result's (mean, var, std, var_mean, vector_norm; a float type); ``correction``
    (var, std, var_mean) and ``ord`` (vector_norm) as the functions take them;
    ``out_dtype``: the dtype of an ``out=`` given (var_mean: both arrays'). Raises
    :class:`ReductionError` (one line); imports no xDSL and needs no GPU."""
    if fn not in FUSED:
        raise ReductionError(f"unknown fused reduction {fn!r} (valid: {', '.join(FUSED)})")
    if not isinstance(keepdims, bool | np.bool_):
        raise _error(fn, f"'keepdims' must be a bool, got {keepdims!r}")
    if src not in _ROWS:
        raise _error(fn, f"dtype {src} is not supported (bulkred's element types: {', '.join(_ROWS)})")
    if fn in _FLOAT_ONLY:
        _float_input(fn, src)
    if fn in ("argmax", "argmin") and axis is not None and (
        isinstance(axis, bool | np.bool_) or not isinstance(axis, int | np.integer)
    ):
        raise _error(fn, f"'axis' must be an int or None (one axis, as numpy's and torch's {fn} take), got {axis!r}")
    ndim = len(shape)
    reduced = _normalize_axes(fn, axis, ndim)
    if dtype is not None:
        if fn in ("argmax", "argmin", "logsumexp"):
            raise _error(fn, f"'dtype' is not taken by {fn}")
        dst = _dtype_name(fn, dtype)
        if not _ROWS[dst].is_float:
            raise _error(fn, f"'dtype' must be a floating-point type ({', '.join(_FLOATS)}), got {dst}")
    else:
        dst = "int64" if fn in ("argmax", "argmin") else src
    if out_dtype is not None and out_dtype != dst:
        raise _error(fn, f"'out' has dtype {out_dtype}, expected {dst} (the result's dtype)")
    correct = None
    if fn in ("var", "std", "var_mean"):
        if isinstance(correction, bool | np.bool_) or not isinstance(correction, int | np.integer) or correction < 0:
            raise _error(fn, f"'correction' must be an integer >= 0, got {correction!r}")
        correct = int(correction)
    fill: Any = None
    if fn == "mean":
        kind, prologue, epilogue, fill = "sum", (), ("div_count",), math.nan
    elif fn in ("var", "std", "var_mean"):
        kind, prologue, epilogue, fill = "var", (), ("sqrt",) if fn == "std" else (), math.nan
    elif fn in ("argmax", "argmin"):
        kind, prologue, epilogue = fn, (), ()
    elif fn == "logsumexp":
        kind, prologue, epilogue, fill = "logsumexp", (), (), -math.inf
    else:
        kind, prologue, epilogue = _norm_maps(fn, ord)
        fill = 0.0 if kind == "sum" and float(ord) > 0 else None
    if dst == "float64" and (kind == "logsumexp" or builtins.any(m[0] in ("pow", "log") for m in (*prologue, *epilogue) if isinstance(m, tuple))):
        what = "logsumexp" if kind == "logsumexp" else f"the {ord} norm"
        raise _error(
            fn, f"{what} of float64 is not supported: it needs exp and log, which PTX has in float32 only "
            "(ex2/lg2.approx); pass a float32 array",
        )
    kept = tuple(d for i, d in enumerate(shape) if i not in reduced)
    result_shape = tuple(1 if i in reduced else d for i, d in enumerate(shape)) if keepdims else kept
    common = {
        "kind": kind, "shape": tuple(shape) or (1,), "src": src, "dst": dst,
        "axes": None if len(reduced) == ndim else reduced, "kernel_shape": kept or (1,), "result_shape": result_shape,
        "ignore_nan": False, "fn": fn, "prologue": prologue, "epilogue": epilogue, "correction": correct,
        "aux": dst if fn == "var_mean" else None,
    }
    if math.prod(shape[i] for i in reduced) == 0:
        if fill is None:
            where = "the array" if axis is None else f"axis {axis!r}"
            what = f"the {ord} norm" if fn == "vector_norm" else fn
            raise _error(fn, f"{where} of an array of shape {tuple(shape)} has no elements, and {what} has no identity")
        return Plan(**common, fill=fill)
    return Plan(**common, empty=math.prod(result_shape) == 0)


_PLANS: dict[tuple, Plan] = {}


def _plan_cached(key: tuple, *args: Any) -> Plan:
    try:
        return _PLANS[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable argument: plan() says what is wrong with it
        return plan(*args)
    p = _PLANS[key] = plan(*args)
    return p


# endregion

# region The module


@functools.cache
def _dialect() -> tuple[frozenset[str], bool]:
    """What the dialect takes: its reduction kinds, and whether ``T.reduce`` has the
    ``ignore_nan`` option (float max/min propagate NaN by default where it does)."""
    from bulkred_dialect import builder as T
    from bulkred_dialect.ops.tile import ReduceKind

    return frozenset(k.value for k in ReduceKind), "ignore_nan" in inspect.signature(T.reduce).parameters


def reduction_module(
    kind: str, shape: tuple[int, ...], dtype: str, axis: int | tuple[int, ...] | None, name: str, *,
    out_dtype: str | None = None, ignore_nan: bool | None = None, strides: tuple[int, ...] | None = None,
    prologue: Any = None, epilogue: Any = None, correction: int | None = None, aux_dtype: str | None = None,
    variant: str | None = None,
):
    """The tile-level module of one reduction: kernel ``name(x, out)`` holding one
    grid-scope ``bulkred.reduce`` of ``x`` over ``axis`` (an axis or sorted axes; every
    axis when None) into ``out`` (``x``'s shape without those axes, (1,) for a whole
    reduction) of element type ``out_dtype`` (default ``dtype``). ``ignore_nan``: the
    op's option (None: not given, the dialect's default). ``strides``: ``x`` is a view
    of these element strides (``strided<[...]>``), read in place.

    Fused reductions (issue 17, docs/fused.md): ``prologue`` / ``epilogue`` (lists of
    maps, a name or a (name, float) pair), ``correction`` (kind var) are the op's;
    ``aux_dtype``: a third parameter ``aux`` of ``out``'s shape and this dtype, the op's
    ``aux`` output (var's mean, argmax's value): kernel ``name(x, out, aux)``. None (the
    default) leaves each out, so the other reductions' modules are what they were.
    ``variant``: the op's forced lowering variant (None: the dispatch chooses)."""
    from bulkred_dialect import builder as T

    axes = None if axis is None else [axis] if isinstance(axis, int) else list(axis)
    out_shape = [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]
    options: dict[str, Any] = {} if ignore_nan is None else {"ignore_nan": ignore_nan}
    if variant is not None:
        options["variant"] = variant
    for option, value in (("prologue", prologue), ("epilogue", epilogue), ("correction", correction)):
        if value is not None:
            options[option] = list(value) if option != "correction" else value
    with T.kernel(name) as k:
        x = k.param("x", list(shape), dtype, **({} if strides is None else {"strides": list(strides)}))
        out = k.param("out", out_shape, out_dtype or dtype)
        if aux_dtype is not None:
            options["aux"] = k.param("aux", out_shape, aux_dtype)
        T.reduce(kind, out, x, axes=axes, **options)
    return k.module()


def _module(p: Plan):
    """The plan's module; the dialect's refusal as one readable line."""
    from bulkred_dialect.diagnostics import LocatedError

    kinds, has_nan_option = _dialect()
    if p.kind not in kinds:
        raise _error(p.kind, f"kind {p.kind!r} is not supported yet by the dialect (it has {', '.join(sorted(kinds))}; {ISSUE})")
    ignore_nan = None
    if p.kind in ("max", "min") and _ROWS.get(p.src) is not None and _ROWS[p.src].is_float:
        if has_nan_option:
            ignore_nan = True if p.ignore_nan else None
        elif not p.ignore_nan:
            raise _error(
                p.kind,
                f"a {p.kind} that propagates NaN (the default, as in numpy and torch) is not supported yet ({ISSUE}); "
                f"pass ignore_nan=True for one that ignores NaN inputs",
            )
    if p.src == "bool" and p.dst == "bool" and p.kind == "sum":
        raise _error(p.kind, "a sum of bool into bool is not supported: pass dtype=int64 (the default) or int32")
    fused = {} if p.fn is None else {
        "prologue": p.prologue or None, "epilogue": p.epilogue or None, "correction": p.correction, "aux_dtype": p.aux,
    }
    if p.kind in ("any", "all") and p.src != "bool":
        # numpy's and torch's rule: any/all of another dtype reduce x != 0 (NaN is nonzero),
        # the prologue [nonzero], read in place
        fused = {"prologue": ["nonzero"]}
    try:
        return reduction_module(
            p.kind, p.shape, p.src, p.axes, _kernel_name(p.fn or p.kind), out_dtype=p.dst, ignore_nan=ignore_nan,
            **({} if p.strides is None else {"strides": p.strides}), **fused,
            **({} if p.variant is None else {"variant": p.variant}),
        )
    except (LocatedError, BulkredError) as e:
        raise _readable(p, e) from None


def _kernel_name(kind: str) -> str:
    return f"bulkred_{kind}"


def _readable(p: Plan | str, e: Exception) -> ReductionError:
    """One line from a located (or other) build or compile error."""
    from bulkred_dialect.diagnostics import LocatedError

    if isinstance(e, ReductionError):
        return e
    kind = p if isinstance(p, str) else p.fn or p.kind
    # the location is the builder's call in this file, of no use to the caller
    first = re.sub(r"^\S*api\.py:\d+:\d+: ", "", str(e).split("\n", 1)[0])
    if not isinstance(p, str) and p.dst != p.src and "'dst'" in first and p.kind not in ("argmax", "argmin"):
        return _error(kind, f"a {kind} of {p.src} into {p.dst} is not supported yet ({ISSUE}): {first}; pass dtype={p.src!r}")
    if isinstance(e, LocatedError):
        more = " (explain=True shows the dispatch table)" if "\n" in str(e) else ""
        return _error(kind, f"{first}{more}")
    return _error(kind, f"not supported yet ({ISSUE}): {first}")


# endregion

# region Compiling, cached


_COMPILED: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _as_plan(kind: str, shape: tuple[int, ...], dtype: str, axis: Any, out_dtype: str | None, ignore_nan: bool | None) -> Plan:
    """A plan for the low-level entry points (explicit dtypes; the dialect's default NaN mode)."""
    axes = None if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    out_shape = tuple(d for i, d in enumerate(shape) if axes is not None and i not in axes) or (1,)
    return Plan(kind, tuple(shape), dtype, out_dtype or dtype, axes, out_shape, out_shape, bool(ignore_nan))


def compile_reduction(
    kind: str, shape: tuple[int, ...], dtype: str, axis: Any, target: Target | str, *,
    out_dtype: str | None = None, ignore_nan: bool | None = None,
):
    """The :class:`~bulkred_dialect.backend_ptx.loading.CompiledModule` of one reduction,
    from the in-memory cache, else the disk cache, else built and compiled."""
    p = _as_plan(kind, shape, dtype, axis, out_dtype, ignore_nan)
    return _compile(p if ignore_nan is not None else _with_dialect_nan(p), target)


def _with_dialect_nan(p: Plan) -> Plan:
    """``p`` with the NaN mode a module without the option has: the dialect's default."""
    from dataclasses import replace

    _, has_nan_option = _dialect()
    return p if has_nan_option else replace(p, ignore_nan=True)


def _compile(p: Plan, target: Target | str):
    key = (p.kind, p.shape, p.src, p.dst, p.axes, p.ignore_nan, target)
    if p.strides is not None:  # a view's module (a contiguous one keeps its key)
        key += (p.strides,)
    if p.fn is not None:  # a fused reduction's (the other kinds keep their keys)
        key += ("fused", p.fn, p.prologue, p.epilogue, p.correction, p.aux)
    if p.variant is not None:
        key += ("variant", p.variant)
    mod = _COMPILED.get(key)
    if mod is not None:
        return mod
    from bulkred_dialect.backend_ptx.cache import make_key
    from bulkred_dialect.backend_ptx.loading import cached_module

    def build():
        # only a miss pays for the compiler's imports (xDSL, the passes, nvJitLink)
        from bulkred_dialect.backend_ptx.loading import compile_tile_module

        module = _module(p)
        try:
            return compile_tile_module(module, target)
        except BulkredError as e:
            raise _readable(p, e) from None

    disk_key = make_key({"what": "api reduction", "key": list(map(str, key))})
    mod = cached_module(disk_key, build)
    with _LOCK:
        _COMPILED[key] = mod
    return mod


def explain_reduction(
    kind: str, shape: tuple[int, ...], dtype: str, axis: Any, target: Target | str | None = None, *,
    out_dtype: str | None = None, ignore_nan: bool | None = None,
) -> str:
    """The dispatch table of each ``bulkred.reduce`` of the reduction's module, for
    ``target`` (default: the GPU's, else sm_90a): which variant is chosen and why the
    others are not."""
    p = _as_plan(kind, shape, dtype, axis, out_dtype, ignore_nan)
    return _explain(p if ignore_nan is not None else _with_dialect_nan(p), target)


def _explain(p: Plan, target: Target | str | None = None) -> str:
    from bulkred_dialect.backend_ptx.loading import _target_for
    from bulkred_dialect.passes.lower_tile_reductions import explanations

    return "\n".join(explanations(_module(p), _target_for(target)))


# endregion

# region Arrays


def _library(x: Any) -> str:
    """``torch``, ``cupy``, ``numpy`` or ``other`` (any DLPack or CUDA Array Interface object)."""
    if isinstance(x, np.ndarray):
        return "numpy"
    module = type(x).__module__
    if module.startswith("torch"):
        return "torch"
    if module.startswith("cupy"):
        return "cupy"
    return "other"


def _info(x: Any, kind: str, what: str = "x") -> tuple[tuple[int, ...], str, tuple[int, ...] | None]:
    """Shape, dtype name and strides (in elements; None: dense) of ``x`` without a copy
    (torch and cupy directly, other device arrays through a StridedMemoryView)."""
    lib = _library(x)
    if lib == "numpy":
        return tuple(x.shape), x.dtype.name, None  # copied in: any layout
    if lib == "cupy":
        return tuple(x.shape), np.dtype(x.dtype).name, tuple(s // x.itemsize for s in x.strides)
    if lib == "torch":
        return tuple(x.shape), str(x.dtype).removeprefix("torch."), tuple(x.stride())
    from bulkred_dialect.backend_ptx.arrays import _dtype_name as view_dtype
    from bulkred_dialect.backend_ptx.arrays import is_device_array_like

    if not is_device_array_like(x):
        raise _error(
            kind,
            f"expected {'a device array (torch, cupy, DLPack or CUDA Array Interface) or a numpy array' if what == 'x' else 'an array'} "
            f"for '{what}', got {type(x).__name__}",
        )
    from cuda.core.utils import StridedMemoryView

    try:
        v = StridedMemoryView.from_any_interface(x, None)
    except Exception as e:
        raise _error(
            kind, f"cannot view the {type(x).__name__} through DLPack or the CUDA Array Interface ({type(e).__name__}: {e})"
        ) from None
    return tuple(v.shape), view_dtype(v), None if v.strides is None else tuple(v.strides)


def _check_layout(
    kind: str, what: str, shape: tuple[int, ...], strides: tuple[int, ...] | None, *, views: bool = False
) -> tuple[int, ...] | None:
    """A device array must be dense and row-major (extent-1 axes may have any stride),
    or, with ``views`` (``x``), a view with strides >= 0 (transposed, sliced with steps,
    at a storage offset, broadcast): its element strides are returned (extent-1 axes as
    0), for a module that reads it in place; None for a dense array. Negative strides
    (a flipped view) are refused."""
    if strides is None or math.prod(shape) == 0:
        return None
    if builtins.any(s < 0 and d > 1 for d, s in zip(shape, strides)):
        raise _error(
            kind,
            f"'{what}' has negative strides {strides} (in elements) for shape {shape} (a flipped view), which are not "
            f"supported; pass a contiguous copy (x.contiguous() in torch, cupy.ascontiguousarray(x))",
        )
    want = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != want:
            if views:
                return tuple(0 if d == 1 else int(s) for d, s in zip(shape, strides))
            raise _error(
                kind,
                f"'{what}' is a strided view (strides {strides} in elements for shape {shape}), which is not supported "
                f"yet for '{what}' ({ISSUE}); pass a contiguous array",
            )
        want *= d
    return None


def _misaligned(a: Any, align: int) -> int:
    """How many bytes past an ``align``-byte boundary the device array ``a`` starts (0:
    aligned, or numpy, which is copied into an aligned buffer)."""
    lib = _library(a)
    if align <= 1 or lib == "numpy":
        return 0
    if lib == "torch":
        ptr = a.data_ptr()
    elif lib == "cupy":
        ptr = a.data.ptr
    else:
        from cuda.core.utils import StridedMemoryView

        try:
            ptr = StridedMemoryView.from_any_interface(a, None).ptr
        except Exception:  # pragma: no cover - _info viewed it already; the kernel checks again
            return 0
    return ptr % align


UNALIGNED_VARIANT = "grid_gather"
"""The variant of a call whose array starts off its kernel's vector-load alignment (a
view at a storage offset): scalar loads, read in place (docs/from_torch.md)."""


def _unaligned_kernel(p: Plan, kernel: Any, arrays: Sequence[Any]) -> tuple[Plan, Any]:
    """``(p, kernel)``, or where one of ``arrays`` (the kernel's array arguments, in
    order) starts off the alignment the kernel's vector loads need (``bulkred.align``),
    the plan and kernel of :data:`UNALIGNED_VARIANT`, which needs none."""
    sig = getattr(kernel, "signature", None)
    if sig is None or not sig.align:
        return p, kernel
    if not builtins.any(_misaligned(a, sig.alignment(i)) for i, a in enumerate(arrays)):
        return p, kernel
    from dataclasses import replace

    from bulkred_dialect.backend_ptx.device import current_arch

    q = replace(p, variant=UNALIGNED_VARIANT)
    return q, _compile(q, current_arch()).kernel(_kernel_name(p.fn or p.kind))


def _new(x: Any, kind: str, shape: tuple[int, ...], dtype: str, fill: Any = None) -> Any:
    """A new array of ``shape`` and ``dtype`` like ``x`` (same library and device),
    filled with ``fill`` unless it is None."""
    lib = _library(x)
    if lib == "numpy":
        if dtype == "bfloat16":
            raise _error(kind, "numpy has no bfloat16: pass a device array for a bfloat16 result")
        a = np.empty(shape, dtype)
    elif lib == "torch":
        torch = sys.modules["torch"]
        a = torch.empty(shape, dtype=getattr(torch, dtype), device=x.device)
    elif lib == "cupy":
        with x.device:
            a = sys.modules["cupy"].empty(shape, dtype)
    else:
        raise _error(kind, f"pass out= (an array of shape {shape} and dtype {dtype}) for a {type(x).__name__} input")
    if fill is not None:
        a[...] = fill
    return a


def _reshape(a: Any, shape: tuple[int, ...]) -> Any:
    """A view of ``a`` (dense) in ``shape``."""
    return a.view(shape) if _library(a) == "torch" else a.reshape(shape)


@dataclass(frozen=True)
class _Recorded:
    """A torch call that was checked once: the kernel, the destination it takes, the
    caller's result shape where it differs from it, the result's torch dtype where it
    differs from the input's."""

    kernel: Any
    kernel_shape: tuple[int, ...]
    result_shape: tuple[int, ...] | None  # None when the same as kernel_shape
    result_dtype: Any  # the torch dtype; None when the input's
    shape: tuple[int, ...]  # the caller's result shape, for out=


_NEW_OUT: dict[str, tuple[Any, Any, Any]] = {}
"""kind -> (axis, the kernel's ``call_new_last``, the result's shape or None) of the
last torch call that made its result with default options: ``bulkred.sum(x)`` again on
a tensor like it launches with no lookup."""

_TORCH_CALLS: dict[tuple, _Recorded] = {}
"""(kind, shape, dtype, axis, keepdims, dtype=, ignore_nan, out's dtype) of a torch
call -> what it launched: a call that was checked once goes straight to the kernel the
next time."""


def _never() -> bool:
    if "torch" in sys.modules:  # torch came after the API: register the operators now
        _load_torch_ops()
        return _compiling()
    return False


_compiling = _never
"""``torch.compiler.is_compiling`` once torch_ops registered the custom operators."""


def _load_torch_ops() -> None:
    """Register the torch custom operators (importing torch_ops sets ``_compiling``)."""
    from bulkred_dialect import torch_ops


def reduce(
    kind: str, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False, out: Any = None,
    stream: Any = None, explain: bool = False, ignore_nan: bool = False,
) -> Any:
    """``kind`` (sum, prod, max, min, any, all, and, or, xor) of ``x`` over ``axis``.

    ``axis``: an int, a tuple of ints (negatives count from the end) or None (every
    axis). ``dtype``: the accumulator's and the result's dtype (default: int64 for
    integer sums and products, uint64 for unsigned ones, bool for any/all, else ``x``'s;
    a sum or product with ``out=`` takes ``out``'s). ``keepdims``: keep the reduced axes
    as 1s. ``out``: the result's array (its shape and dtype checked), returned; else a new
    array like ``x``. ``stream``: the stream to launch on (default: torch's or cupy's
    current one). ``explain``: return the dispatch table as text (nothing runs).
    ``ignore_nan`` (float max/min): drop NaN inputs, else any NaN gives NaN.

    Device arrays: no copy, no synchronize. numpy: copied in and out. A reduction over
    empty axes gives the kind's identity without a kernel (max and min have none: refused).
    """
    if _compiling():
        return sys.modules["bulkred_dialect.torch_ops"].call(kind, x, axis, dtype, keepdims, ignore_nan, out, stream, explain)
    lib = type(x).__module__
    torch_key = None  # the key of a torch call in _TORCH_CALLS
    if stream is None and not explain and lib == "torch" and (axis is None or type(axis) is int or type(axis) is tuple):
        torch_key = (kind, x.shape, x.dtype, axis, keepdims, dtype, ignore_nan, None if out is None else getattr(out, "dtype", None))
        hit = _TORCH_CALLS.get(torch_key)
        if hit is not None and (type(axis) is not tuple or builtins.all(type(a) is int for a in axis)):
            try:
                if out is None:
                    result = x.new_empty(hit.kernel_shape) if hit.result_dtype is None else x.new_empty(hit.kernel_shape, dtype=hit.result_dtype)
                    hit.kernel(x, result)  # its short path checks x and out again, else the full checks
                    _record_new_out(kind, axis, hit, keepdims, dtype, ignore_nan)
                    return result if hit.result_shape is None else result.view(hit.result_shape)
                if out.shape == hit.shape:
                    hit.kernel(x, out if hit.result_shape is None else out.view(hit.kernel_shape))
                    return out
            except SignatureError:
                pass  # the checks below name what is wrong in the API's words, else raise it again
    return _reduce(kind, x, axis, dtype, keepdims, ignore_nan, out, stream, explain, torch_key)


def _reduce(
    kind: str, x: Any, axis: Any, dtype: Any, keepdims: bool, ignore_nan: bool, out: Any, stream: Any, explain: bool,
    torch_key: tuple | None,
) -> Any:
    """:func:`reduce`, every check, then the launch (and its record for the next call)."""
    if kind not in KINDS.values():
        raise ReductionError(f"unknown reduction kind {kind!r} (valid: {', '.join(KINDS.values())})")
    shape, src, strides = _info(x, kind)
    out_dtype = None
    if out is not None:
        out_shape, out_dtype, out_strides = _info(out, kind, "out")
    if _compiling is _never and type(x).__module__ == "torch":
        _load_torch_ops()
    # True == 1 and (True,) == (1,): anything but None and ints is keyed by its repr
    key = (
        kind, shape, src, axis if axis is None or type(axis) is int else repr(axis),
        keepdims if type(keepdims) is bool else repr(keepdims), dtype if dtype is None or isinstance(dtype, str) else repr(dtype),
        ignore_nan if type(ignore_nan) is bool else repr(ignore_nan), out_dtype,
    )
    p = _plan_cached(key, kind, shape, src, axis, keepdims, dtype, ignore_nan, out_dtype)
    if out is not None and out_shape != p.result_shape:
        raise _error(kind, f"'out' has shape {out_shape}, expected {p.result_shape} (keepdims={keepdims})")
    view = _check_layout(kind, "x", shape, strides, views=True)
    if view is not None and p.launches:  # read in place by a module built for the view's strides
        from dataclasses import replace

        p = replace(p, strides=view)
    if explain:
        if not p.launches:
            return f"no kernel: the result has shape {p.result_shape}" + ("" if p.fill is None else f", every element {p.fill!r}")
        return _explain(p)
    if not p.launches:
        _check_module(p)  # the dialect refuses what it would refuse with elements too
        if out is None:
            return _new(x, kind, p.result_shape, p.dst, p.fill)
        if p.fill is not None:
            out[...] = p.fill
        return out
    lib = _library(x)
    if lib == "other" and shape == ():
        raise _error(kind, f"a 0-d {type(x).__name__}: pass a torch, cupy or numpy array")
    if out is not None:
        _check_layout(kind, "out", out_shape, out_strides)
    from bulkred_dialect.backend_ptx.device import current_arch

    kernel = _compile(p, current_arch()).kernel(_kernel_name(kind))
    xk = x if shape == p.shape else _reshape(x, p.shape)
    reshaped = p.kernel_shape != p.result_shape
    if out is None:
        result = _new(x, kind, p.kernel_shape, p.dst)
        outk = result
    else:
        result = out
        outk = _reshape(out, p.kernel_shape) if reshaped and _library(out) != "numpy" else out
        if _library(out) == "numpy":
            outk = np.empty(p.kernel_shape, out.dtype)
    q, kernel = _unaligned_kernel(p, kernel, (xk, outk))
    if q is not p:
        torch_key = None  # not recorded: an aligned call of this key keeps its vector kernel
    _, got = kernel(xk, outk, stream=stream)
    if isinstance(outk, np.ndarray):  # numpy: the kernel wrote a copy
        if out is None:
            return got.reshape(p.result_shape)
        out[...] = got.reshape(p.result_shape)
        return out
    if torch_key is not None and len(_TORCH_CALLS) < 1024 and _library(outk) == "torch" and lib == "torch":
        torch = sys.modules["torch"]
        # the shapes as tuples: t.view(a tuple) costs about half of t.view(a torch.Size)
        rec = _Recorded(
            kernel, p.kernel_shape, p.result_shape if reshaped else None,
            None if p.dst == src else getattr(torch, p.dst), p.result_shape,
        )
        _TORCH_CALLS[torch_key] = rec
        if out is None:
            _record_new_out(kind, axis, rec, keepdims, dtype, ignore_nan)
    if out is None and reshaped:
        return _reshape(result, p.result_shape)
    return result


def _check_module(p: Plan) -> None:
    """Build (and verify) the module of ``p`` with every empty extent made 1: an empty
    reduction the dialect would refuse with elements is refused too."""
    from dataclasses import replace

    key = ("check", p.kind, p.shape, p.src, p.dst, p.axes, p.ignore_nan)
    if p.fn is not None:
        key += (p.fn, p.prologue, p.epilogue, p.correction, p.aux)
    if key in _PLANS:
        return
    shape = tuple(d or 1 for d in p.shape)
    _module(replace(p, shape=shape))
    _PLANS[key] = p


def _plain_axis(axis: Any) -> bool:
    """``axis`` is None, an int or a tuple of ints (not bools): a recorded call's key."""
    t = type(axis)
    return axis is None or t is int or (t is tuple and builtins.all(type(a) is int for a in axis))


def _new_out_entry(axis: Any, call: Any, rec: _Recorded, shaped: bool = True) -> tuple[Any, Any, Any]:
    """The ``_NEW_OUT`` entry of a recorded call: with ``shaped``, a short path that makes
    its one result in the caller's shape (0-d for a whole reduction: no view per call)."""
    made = rec.kernel._fast.new_last_as(rec.result_shape) if shaped and rec.result_shape is not None else None
    return (axis, call, rec.result_shape) if made is None else (axis, made, None)


def _record_new_out(kind: str, axis: Any, rec: _Recorded, keepdims: bool, dtype: Any, ignore_nan: bool) -> None:
    """After a call that made its result with default options: the kernel's short path
    that makes it, for the next call of this kind and axis (see :func:`_reduction_function`)."""
    fast = rec.kernel._fast
    if (
        keepdims is False and dtype is None and ignore_nan is False and _plain_axis(axis)
        and fast is not None and fast.call_new_last is not None
    ):
        _NEW_OUT[kind] = _new_out_entry(axis, fast.call_new_last, rec)


def _recorded(kind: str, x: Any, axis: Any) -> Any:
    """The short path of a call like the last one of ``kind`` that made its result (no
    ``out``, ``stream``, ``dtype``, ``keepdims`` or option): its result, or None, having
    done nothing, unless ``x`` and ``axis`` are like that call's."""
    hit = _NEW_OUT.get(kind)
    if hit is not None and hit[0] == axis and _plain_axis(axis):
        result = hit[1]((x,))
        if result is not None:
            return result if hit[2] is None else result.view(hit[2])
    return None


def _reduction_function(name: str, kind: str, what: str):
    """The public function ``name`` (``bulkred.prod`` ...) without ``dtype`` or
    ``ignore_nan``: :func:`reduce` of ``kind``, with the short path of a call like the
    last one that made its result."""

    def fn(x: Any, /, *, axis: Any = None, keepdims: bool = False, out: Any = None, stream: Any = None, explain: bool = False) -> Any:
        if _compiling():
            return reduce(kind, x, axis=axis, keepdims=keepdims, out=out, stream=stream, explain=explain)
        if out is None and stream is None and keepdims is False and not explain:
            result = _recorded(kind, x, axis)
            if result is not None:
                return result
        return reduce(kind, x, axis=axis, keepdims=keepdims, out=out, stream=stream, explain=explain)

    return _named(fn, name, what)


def _sum_like(name: str, kind: str, what: str):
    """``sum`` and ``prod``: with ``dtype``."""

    def fn(
        x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False, out: Any = None, stream: Any = None,
        explain: bool = False,
    ) -> Any:
        if _compiling():
            return reduce(kind, x, axis=axis, dtype=dtype, keepdims=keepdims, out=out, stream=stream, explain=explain)
        if out is None and stream is None and dtype is None and keepdims is False and not explain:
            result = _recorded(kind, x, axis)
            if result is not None:
                return result
        return reduce(kind, x, axis=axis, dtype=dtype, keepdims=keepdims, out=out, stream=stream, explain=explain)

    return _named(fn, name, what)


def _min_max(name: str, kind: str, what: str):
    """``max`` and ``min``: with ``ignore_nan``."""

    def fn(
        x: Any, /, *, axis: Any = None, keepdims: bool = False, ignore_nan: bool = False, out: Any = None,
        stream: Any = None, explain: bool = False,
    ) -> Any:
        if _compiling():
            return reduce(kind, x, axis=axis, keepdims=keepdims, ignore_nan=ignore_nan, out=out, stream=stream, explain=explain)
        if out is None and stream is None and keepdims is False and ignore_nan is False and not explain:
            result = _recorded(kind, x, axis)
            if result is not None:
                return result
        return reduce(kind, x, axis=axis, keepdims=keepdims, ignore_nan=ignore_nan, out=out, stream=stream, explain=explain)

    return _named(fn, name, what)


def _named(fn: Any, name: str, what: str) -> Any:
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = f"{what} (see :func:`reduce`)."
    return fn


sum = _sum_like("sum", "sum", "The sum of ``x``")
prod = _sum_like("prod", "prod", "The product of ``x``")
max = _min_max("max", "max", "The maximum of ``x`` (a NaN gives NaN unless ``ignore_nan``)")
min = _min_max("min", "min", "The minimum of ``x`` (a NaN gives NaN unless ``ignore_nan``)")
any = _reduction_function("any", "any", "Whether any element of ``x`` is true (nonzero), as bool")
all = _reduction_function("all", "all", "Whether every element of ``x`` is true (nonzero), as bool")
and_ = _reduction_function("and_", "and", "The bitwise and of an integer ``x``")
or_ = _reduction_function("or_", "or", "The bitwise or of an integer ``x``")
xor = _reduction_function("xor", "xor", "The bitwise xor of an integer ``x``")


# endregion

# region Fused reductions (issue 17): mean, var, std, var_mean, argmax, argmin, vector_norm, logsumexp


def _keyed(v: Any) -> Any:
    """``v`` as a plan key: None, a str, an int or a float as itself (never a bool: True
    == 1), anything else by its repr."""
    return v if v is None or type(v) in (int, float, str) else repr(v)


def _fused_plan_cached(
    fn: str, shape: tuple[int, ...], src: str, axis: Any, keepdims: Any, dtype: Any, correction: Any, ord: Any,
    out_dtype: str | None,
) -> Plan:
    key = (
        "fused", fn, shape, src, axis if axis is None or type(axis) is int else repr(axis),
        keepdims if type(keepdims) is bool else repr(keepdims), _keyed(dtype), _keyed(correction), _keyed(ord), out_dtype,
    )
    p = _PLANS.get(key)
    if p is None:
        p = _PLANS[key] = plan_fused(
            fn, shape, src, axis, keepdims, dtype, correction=correction, ord=ord, out_dtype=out_dtype
        )
    return p


def _fused_outs(fn: str, out: Any) -> tuple:
    """``out`` as a tuple of arrays: var_mean's (var, mean) pair, else ``(out,)``."""
    if out is None:
        return ()
    if fn != "var_mean":
        return (out,)
    if not isinstance(out, tuple | list) or len(out) != 2:
        raise _error(fn, f"'out' must be a pair of arrays (var, mean), got {type(out).__name__}")
    return tuple(out)


def _fused_call(
    fn: str, x: Any, axis: Any, keepdims: Any, dtype: Any, correction: Any, ord: Any, out: Any, stream: Any,
    explain: bool,
) -> Any:
    """A fused reduction: the torch short path of a call checked once, else every check
    (:func:`_fused`), then the launch."""
    if _compiling():
        return sys.modules["bulkred_dialect.torch_ops"].call_fused(fn, x, axis, keepdims, dtype, correction, ord, out, stream, explain)
    torch_key = None
    if (
        stream is None and not explain and type(x).__module__ == "torch" and type(keepdims) is bool
        and (axis is None or type(axis) is int or type(axis) is tuple and builtins.all(type(a) is int for a in axis))
        and type(correction) is int and type(ord) in (int, float)
    ):
        outs = _fused_outs(fn, out)
        torch_key = ("fused", fn, x.shape, x.dtype, axis, keepdims, dtype, correction, ord, tuple(o.dtype for o in outs))
        hit = _TORCH_CALLS.get(torch_key)
        if hit is not None:
            try:
                if not outs:
                    args = [x.new_empty(hit.kernel_shape) if hit.result_dtype is None else x.new_empty(hit.kernel_shape, dtype=hit.result_dtype)]
                    if fn == "var_mean":
                        args.append(args[0].new_empty(hit.kernel_shape))
                    hit.kernel(x, *args)
                    _record_fused_new_out(fn, axis, hit, keepdims, dtype, correction, ord)
                    if hit.result_shape is not None:
                        args = [a.view(hit.result_shape) for a in args]
                    return tuple(args) if fn == "var_mean" else args[0]
                if builtins.all(o.shape == hit.shape for o in outs):
                    hit.kernel(x, *(o if hit.result_shape is None else o.view(hit.kernel_shape) for o in outs))
                    return out
            except SignatureError:
                pass  # the checks below name what is wrong in the API's words, else raise it again
    return _fused(fn, x, axis, keepdims, dtype, correction, ord, out, stream, explain, torch_key)


def _fused(
    fn: str, x: Any, axis: Any, keepdims: Any, dtype: Any, correction: Any, ord: Any, out: Any, stream: Any,
    explain: bool, torch_key: tuple | None,
) -> Any:
    """Every check of a fused reduction, then the launch (and its record for the next call)."""
    shape, src, strides = _info(x, fn)
    outs = _fused_outs(fn, out)
    infos = [_info(o, fn, "out") for o in outs]
    out_dtype = infos[0][1] if infos else None
    if len(infos) == 2 and infos[1][1] != out_dtype:
        raise _error(fn, f"'out' has arrays of dtypes {out_dtype} and {infos[1][1]}: the variance and the mean have one dtype")
    if _compiling is _never and type(x).__module__ == "torch":
        _load_torch_ops()
    p = _fused_plan_cached(fn, shape, src, axis, keepdims, dtype, correction, ord, out_dtype)
    for o_shape, _, _ in infos:
        if o_shape != p.result_shape:
            raise _error(fn, f"'out' has shape {o_shape}, expected {p.result_shape} (keepdims={keepdims})")
    view = _check_layout(fn, "x", shape, strides, views=True)
    if view is not None and p.launches:  # read in place by a module built for the view's strides
        from dataclasses import replace

        p = replace(p, strides=view)
    if explain:
        if not p.launches:
            return f"no kernel: the result has shape {p.result_shape}" + ("" if p.fill is None else f", every element {p.fill!r}")
        return _explain(p)
    n_out = 2 if fn == "var_mean" else 1
    if not p.launches:
        _check_module(p)  # the dialect refuses what it would refuse with elements too
        if not outs:
            got = tuple(_new(x, fn, p.result_shape, p.dst, p.fill) for _ in range(n_out))
            return got if fn == "var_mean" else got[0]
        if p.fill is not None:
            for o in outs:
                o[...] = p.fill
        return out
    lib = _library(x)
    if lib == "other" and shape == ():
        raise _error(fn, f"a 0-d {type(x).__name__}: pass a torch, cupy or numpy array")
    for (o_shape, _, o_strides) in infos:
        _check_layout(fn, "out", o_shape, o_strides)
    from bulkred_dialect.backend_ptx.device import current_arch

    kernel = _compile(p, current_arch()).kernel(_kernel_name(fn))
    xk = x if shape == p.shape else _reshape(x, p.shape)
    reshaped = p.kernel_shape != p.result_shape
    if not outs:
        results = [_new(x, fn, p.kernel_shape, p.dst) for _ in range(n_out)]
        outks = results
    else:
        results = list(outs)
        outks = [
            np.empty(p.kernel_shape, o.dtype) if _library(o) == "numpy" else _reshape(o, p.kernel_shape) if reshaped else o
            for o in outs
        ]
    q, kernel = _unaligned_kernel(p, kernel, (xk, *outks))
    if q is not p:
        torch_key = None  # not recorded: an aligned call of this key keeps its vector kernel
    _, *got = kernel(xk, *outks, stream=stream)
    if isinstance(outks[0], np.ndarray):  # numpy: the kernel wrote copies
        values = [g.reshape(p.result_shape) for g in got]
        if outs:
            for o, v in zip(outs, values):
                o[...] = v
            return out
        return tuple(values) if fn == "var_mean" else values[0]
    if torch_key is not None and len(_TORCH_CALLS) < 1024 and _library(outks[0]) == "torch" and lib == "torch":
        torch = sys.modules["torch"]
        rec = _Recorded(
            kernel, p.kernel_shape, p.result_shape if reshaped else None,
            None if p.dst == src else getattr(torch, p.dst), p.result_shape,
        )
        _TORCH_CALLS[torch_key] = rec
        if not outs:
            _record_fused_new_out(fn, axis, rec, keepdims, dtype, correction, ord)
    if outs:
        return out
    if reshaped:
        results = [_reshape(r, p.result_shape) for r in results]
    return tuple(results) if fn == "var_mean" else results[0]


_DEFAULT_OPTION = {"var": 0, "std": 0, "var_mean": 0, "vector_norm": 2}
"""The default of ``correction`` / ``ord``, the one option a recorded call may have."""


def _record_fused_new_out(fn: str, axis: Any, rec: _Recorded, keepdims: Any, dtype: Any, correction: Any, ord: Any) -> None:
    """:func:`_record_new_out` of a fused reduction with default options (the key
    ``fused <fn>`` in ``_NEW_OUT``)."""
    option = ord if fn == "vector_norm" else correction
    fast = rec.kernel._fast
    call = None if fast is None else fast.call_new_last2 if fn == "var_mean" else fast.call_new_last
    if (
        keepdims is False and dtype is None and _plain_axis(axis)
        and (fn not in _DEFAULT_OPTION or type(option) in (int, float))
        and call is not None
    ):
        _NEW_OUT[_new_out_key(fn, option)] = _new_out_entry(axis, call, rec, shaped=fn != "var_mean")


def _new_out_key(fn: str, option: Any) -> str:
    """The ``_NEW_OUT`` key of a fused call: ``fused <fn>``, and its correction or ord
    (``fused vector_norm inf``): each option value has its own recorded kernel."""
    return f"fused {fn}" if fn not in _DEFAULT_OPTION else f"fused {fn} {float(option)!r}"


def _fused_function(fn: str, what: str, options: tuple[str, ...], doc: str):
    """The public function ``fn``: ``x``, ``axis``, the ``options`` it takes (of
    ``correction``, ``keepdims``, ``dtype``, ``ord``, in that order of the signature),
    ``out``, ``stream`` and ``explain``."""
    key = "fused " + fn
    with_option = fn in _DEFAULT_OPTION

    def call(x, axis, keepdims, dtype, correction, ord, out, stream, explain):
        if (
            out is None and stream is None and keepdims is False and dtype is None and not explain
            and not _compiling()
        ):
            if with_option:
                option = ord if fn == "vector_norm" else correction
                hit = _NEW_OUT.get(_new_out_key(fn, option)) if type(option) in (int, float) else None
            else:
                hit = _NEW_OUT.get(key)
            if hit is not None and hit[0] == axis and _plain_axis(axis):
                result = hit[1]((x,))
                if result is not None:
                    if fn == "var_mean":
                        return result if hit[2] is None else (result[0].view(hit[2]), result[1].view(hit[2]))
                    return result if hit[2] is None else result.view(hit[2])
        return _fused_call(fn, x, axis, keepdims, dtype, correction, ord, out, stream, explain)

    params = ["axis=None", *(
        {"correction": "correction=0", "keepdims": "keepdims=False", "dtype": "dtype=None", "ord": "ord=2"}[o]
        for o in options
    )]
    if "ord" in options:  # vector_norm(x, /, *, ord=2, axis=None, ...) as the array API writes it
        params.remove("ord=2")
        params.insert(0, "ord=2")
    args = ", ".join(
        o if o in options else "None" if o == "dtype" else "False" if o == "keepdims" else "0" if o == "correction" else "2"
        for o in ("keepdims", "dtype", "correction", "ord")
    )
    src = (
        f"def {fn}(x, /, *, {', '.join(params)}, out=None, stream=None, explain=False):\n"
        f"    return call(x, axis, {args}, out, stream, explain)\n"
    )
    env: dict[str, Any] = {"call": call}
    exec(compile(src, f"<bulkred.{fn}>", "exec"), env)
    f = env[fn]
    f.__module__ = __name__
    f.__qualname__ = fn
    f.__doc__ = f"{what}.\n\n{doc}\n\nSee docs/fused.md; ``out``, ``stream`` and ``explain`` as for :func:`reduce`."
    return f


mean = _fused_function(
    "mean", "The arithmetic mean of a floating-point ``x``", ("keepdims", "dtype"),
    "A sum with the epilogue ``div_count``; float16 and bfloat16 accumulate in float32 and give their own dtype "
    "(``dtype=``: another float result). An empty reduction gives NaN, as torch does.",
)
var = _fused_function(
    "var", "The variance of a floating-point ``x``", ("correction", "keepdims", "dtype"),
    "The sum of squared deviations from the mean over ``N - correction`` (``correction`` 0 by default, as numpy and "
    "the array API; torch's default is 1). ``N - correction <= 0`` gives inf, or NaN where the deviations are 0, "
    "as torch does. One pass (Chan's combination of count, mean and M2).",
)
std = _fused_function(
    "std", "The standard deviation of a floating-point ``x``: the square root of :func:`var`",
    ("correction", "keepdims", "dtype"), "``var`` with the epilogue ``sqrt``; ``correction`` as for :func:`var`.",
)
var_mean = _fused_function(
    "var_mean", "The variance and the mean of a floating-point ``x``, as the pair ``(var, mean)``",
    ("correction", "keepdims", "dtype"),
    "As ``torch.var_mean``: one kernel, the mean the op's ``aux`` output; ``out``: a pair of arrays.",
)
argmax = _fused_function(
    "argmax", "The index of the first largest element of ``x``, as int64", ("keepdims",),
    "``axis``: one axis, or None for the flat (row-major) index over the whole array. NaN counts as the largest, as "
    "in torch. An empty axis is refused.",
)
argmin = _fused_function(
    "argmin", "The index of the first smallest element of ``x``, as int64", ("keepdims",),
    "As :func:`argmax`; a NaN wins here too (torch's argmin gives the first NaN's index).",
)
vector_norm = _fused_function(
    "vector_norm", "The vector norm of a floating-point ``x`` over ``axis`` (the array API's linalg.vector_norm)",
    ("keepdims", "dtype", "ord"),
    "``ord`` 2 (default): sqrt(sum(x**2)); 1: sum(|x|); inf / -inf: max / min of |x|; another p != 0: "
    "sum(|x|**p)**(1/p). ord=0 is refused.",
)
logsumexp = _fused_function(
    "logsumexp", "log(sum(exp(x))) of a floating-point ``x``, without overflow", ("keepdims",),
    "One read with a running shift; an empty reduction or all -inf gives -inf.",
)


if "torch" in sys.modules:  # torch.compile must see the custom operators before it traces a call
    _load_torch_ops()

# endregion
