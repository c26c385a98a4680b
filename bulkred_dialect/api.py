"""The call path of every public reduction (``bulkred.sum`` ... ``bulkred.logsumexp``,
docs/from_torch.md): arguments -> plan -> module -> compiled kernel -> launch, the same
for every row of the function table (``bulkred_dialect/functions.py``)::

    p = plan("var", (64, 1000), "float32", axis=1, correction=1)   # checked; no xDSL, no GPU
    reduction_module(...)                  # the plan's tile-level module: one grid-scope bulkred.reduce
    call(FUNCTIONS["var"], x, 1, False, {"correction": 1}, None, None, False)   # what bulkred.var runs

Each call is checked and planned once per key (the function, ``x``'s shape, dtype and
layout, ``axis``, ``keepdims``, the options and ``out``'s dtypes): bad arguments raise
a :class:`ReductionError` of one line before anything is built or launched. The plan's
module is compiled with the normal pipeline for the GPU's target (``bulkred-to-ptx``: the
dispatch picks the variant) and kept in one in-memory cache under that key, beside the
disk cache (one entry per plan and target). The kernel's destination is the tile-level
shape (the kept extents, [1] for a whole reduction); the caller gets the array API's
shape (0-d for a whole reduction, 1s kept with ``keepdims``). A request the dialect does
not take (a kind, a dtype, a NaN mode, a destination type) is the dialect's refusal, one
line.

This module imports neither torch nor ``torch_ops``: the public functions
(``reductions.py``) route torch calls that need autograd or run under ``torch.compile``
to the operators that ``torch_ops`` registers, which call back into :func:`call`.
"""

from __future__ import annotations

import builtins
import math
import numbers
import re
import sys
import threading
import types
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from bulkred_dialect.errors import BulkredError
from bulkred_dialect.functions import (
    COMPLEX, FLOATS, FUNCTIONS, Function, OptionError, Reduction, function, library_rules,
)
from bulkred_dialect.ops.dtypes import COLLECTIVE_DTYPES, of_torch
from bulkred_dialect.ops.dtypes import DTYPES as _ROWS

if TYPE_CHECKING:  # pragma: no cover
    from bulkred_dialect.ops.target import Target

DTYPES = tuple(d.name for d in COLLECTIVE_DTYPES)
"""Element types the warp to grid-scope variants take (``ops/dtypes.py``'s ``collective``
rows). The API asks the dialect (the builder and the verifier) whether it takes a
reduction's source and result types, so a type the grid variants alone take works too."""

NOT_YET = "not supported yet"


class ReductionError(BulkredError, ValueError):
    """A reduction no variant covers, or a bad argument: one readable line (the
    dispatch's located error where it comes from the lowering)."""


def _error(fn: str, message: str) -> ReductionError:
    return ReductionError(f"bulkred.{fn}: {message}")


def _row(fn: Any) -> Function:
    row = function(fn) if isinstance(fn, str) else None
    if row is None:
        raise ReductionError(f"unknown reduction {fn!r:.60} (valid: {', '.join(FUNCTIONS)})")
    return row


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
    fn: str = ""  # the function (its row in functions.py): its name in errors, its kernel's
    prologue: tuple = ()  # the op's prologue maps: names or (name, float) pairs
    epilogue: tuple = ()  # the op's epilogue maps
    correction: int | None = None  # var: N - correction divides the sum of squared deviations
    aux: str | None = None  # the dtype of the kernel's second output (var_mean's mean), None: none
    variant: str | None = None  # a lowering variant forced (grid_gather for a misaligned view), None: the dispatch's
    complex: str | None = None  # a complex x: how its (re, im) parts are read (functions.COMPLEX_MODES), None: real

    @property
    def launches(self) -> bool:
        return self.fill is None and not self.empty

    @property
    def row(self) -> Function:
        return FUNCTIONS[self.fn]

    @property
    def kernel_name(self) -> str:
        return f"bulkred_{self.row.kernel}"

    @property
    def outputs(self) -> tuple[str, ...]:
        """The dtypes of the caller's results, in the caller's order."""
        return _outputs(self.row, self)


def dtype_name(fn: str, d: Any, what: str = "dtype") -> str:
    """The dtype name (``"float32"``) of a name, a numpy dtype or type, or a torch dtype
    (through the rows' ``torch`` names, ``ops/dtypes.py``)."""
    if isinstance(d, str):
        name = d
    elif (row := of_torch(d)) is not None:
        name = row.name
    elif type(d).__module__ == "torch" and str(d).removeprefix("torch.") in COMPLEX:
        name = str(d).removeprefix("torch.")
    elif type(d).__module__ == "torch":
        raise _error(fn, f"'{what}' {d} has no bulkred element type (bulkred's element types: {', '.join(_ROWS)})")
    else:
        try:
            name = np.dtype(d).name
        except Exception:
            raise _error(fn, f"'{what}' must be a dtype (a name, a numpy or torch dtype), got {d!r:.60}") from None
    if name not in _ROWS and name not in COMPLEX:
        raise _error(fn, f"unknown dtype {name!r} (bulkred's element types: {', '.join(_ROWS)})")
    return name


def _normalize_axes(fn: str, axis: Any, ndim: int, rules: str = "numpy") -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple of ints, negatives from the end) as sorted axes.
    ``rules="torch"`` (a torch tensor, ``functions.library_rules``): ``()`` is every axis,
    and a 0-d input takes axis 0 or -1 (reduced: its own value), as torch's ``dim``."""
    if axis is None:
        return tuple(range(ndim))
    items = tuple(axis) if isinstance(axis, tuple | list) else (axis,)
    if not items and rules == "torch":  # torch rules: dim=() reduces everything; any/all's nothing (plan: no axis)
        return tuple(range(ndim)) if FUNCTIONS[fn].torch_empty_dim else ()
    if not items:
        raise _error(fn, "axis=() reduces nothing in numpy and everything in torch: pass axis=None for a whole reduction")
    got = []
    for a in items:
        if isinstance(a, bool | np.bool_) or not isinstance(a, int | np.integer):
            raise _error(fn, f"'axis' must be an int, a tuple of ints or None, got {axis!r:.60}")
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1) or ndim == 0 and a not in (0, -1):
            raise _error(fn, f"axis {int(a)} is out of range for a {ndim}-D array")
        got.append(int(a) % builtins.max(ndim, 1))
    if len(set(got)) != len(got):
        raise _error(fn, f"axis {axis!r} names an axis twice (as {tuple(got)} for a {ndim}-D array)")
    if ndim == 0 and rules == "torch":  # torch rules: a 0-d tensor's dim 0 or -1 is itself
        return ()
    if ndim == 0:
        raise _error(fn, f"axis {axis!r} is out of range for a 0-D array")
    return tuple(sorted(got))


def _check_shape(fn: str, shape: Any) -> tuple[int, ...]:
    if not isinstance(shape, tuple | list):
        raise _error(fn, f"'shape' must be a tuple of ints >= 0, got {type(shape).__name__} {shape!r:.40}")
    for d in shape:
        if type(d).__name__ == "SymInt":  # torch.compile's dynamic shapes (fake implementations)
            continue
        if isinstance(d, bool | np.bool_) or not isinstance(d, int | np.integer) or not 0 <= d < 2**63:
            raise _error(fn, f"'shape' must be a tuple of ints in [0, 2**63), got {tuple(shape)!r:.60}")
    return tuple(d if type(d).__name__ == "SymInt" else int(d) for d in shape)


def _inputs(row: Function, src: str) -> None:
    """The row's dtype rule."""
    d = _ROWS[src]
    if row.inputs == "float" and not d.is_float:
        raise _error(
            row.name,
            f"expected a floating-point input ({', '.join(FLOATS)}), got {src} (as torch's {row.name}); "
            f"cast it first (x.float() in torch, x.astype('float32') in numpy or cupy)",
        )
    if row.inputs == "integer" and d.is_float:
        raise _error(row.name, f"expected an integer or bool input, got {src} (a bitwise reduction)")


def plan(
    fn: str, shape: tuple[int, ...], src: str, axis: Any = None, keepdims: Any = False, dtype: Any = None, *,
    out_dtype: str | tuple[str, ...] | None = None, library: str = "numpy", **options: Any,
) -> Plan:
    """Check the arguments of the function ``fn`` (a row of ``functions.py``, or the
    ``bulkred.reduce`` kinds ``and``/``or``) on an array of ``shape`` and dtype ``src``
    and decide its shapes and dtypes (see :class:`Plan`). ``dtype`` and ``options``:
    the function's options (``correction=``, ``ord=``, ``ignore_nan=``); ``out_dtype``:
    the dtype of an ``out=`` given (a pair for two results), which a sum or a product
    without ``dtype=`` takes (as torch does). Raises :class:`ReductionError` (one line);
    imports no xDSL and needs no GPU. ``library``: the input's (``torch``, ``numpy``,
    ``cupy``), whose rules the result follows (``functions.library_rules``)."""
    row = _row(fn)
    fn = row.name
    shape = _check_shape(fn, shape)
    if not isinstance(keepdims, bool | np.bool_):
        raise _error(fn, f"'keepdims' must be a bool, got {keepdims!r:.40}")
    if not isinstance(src, str) or (src not in _ROWS and src not in COMPLEX):
        raise _error(fn, f"dtype {src} is not supported (bulkred's element types: {', '.join(_ROWS)})")
    given = dict(options)
    if dtype is not None or "dtype" in row.option_names:
        given["dtype"] = dtype
    opts: dict[str, Any] = {}
    for o in row.options:
        v = given.pop(o.name, o.default)
        try:
            opts[o.name] = o.check(v)
        except OptionError as e:
            raise _error(fn, str(e)) from None
    if given:
        name = next(iter(given))
        raise _error(fn, f"'{name}' is not taken by {fn} (its options: {', '.join(row.option_names) or 'none'})")
    if src not in COMPLEX:  # a complex x: the row's complex build takes it or refuses it (Function.reduction)
        _inputs(row, src)
    if row.one_axis and axis is not None and (isinstance(axis, bool | np.bool_) or not isinstance(axis, int | np.integer)):
        raise _error(fn, f"'axis' must be an int or None (one axis, as numpy's and torch's {fn} take), got {axis!r:.60}")
    ndim = len(shape)
    rules = library_rules(library)
    reduced = _normalize_axes(fn, axis, ndim, rules)
    asked = None
    if opts.get("dtype") is not None:
        asked = opts["dtype"] = dtype_name(fn, opts["dtype"])
    if out_dtype is not None and not isinstance(out_dtype, str | tuple | list):
        raise _error(fn, f"'out_dtype' must be a dtype name or a tuple of them (one per result), got {out_dtype!r:.40}")
    outs = (out_dtype,) if isinstance(out_dtype, str) else tuple(out_dtype or ())
    if outs and row.out_dtype and asked is None:
        opts["dtype"] = dtype_name(fn, outs[0])  # a sum or product into out= of another dtype (as torch)
    try:
        r: Reduction = row.reduction(src, opts, rules)
    except OptionError as e:
        raise _error(fn, str(e)) from None
    if r.dst == "complex32" and src != "complex32" and library != "torch":
        raise _error(fn, f"'dtype' complex32 is torch's alone (numpy and cupy have none): pass complex64 for a {library} x")
    want = _outputs(row, r)
    if outs:
        if len(outs) != len(want):
            raise _error(fn, f"'out' must be {len(want)} arrays, got {len(outs)}")
        for got, w in zip(outs, want):
            if got != w:
                if asked is not None:
                    raise _error(fn, f"'out' has dtype {got}, but dtype={asked} was asked for")
                raise _error(fn, f"'out' has dtype {got}, expected {w} (the result's dtype)")
    kept = tuple(d for i, d in enumerate(shape) if i not in reduced)
    result_shape = tuple(1 if i in reduced else d for i, d in enumerate(shape)) if keepdims else kept
    common = {
        "kind": r.kind, "shape": shape or (1,), "src": src, "dst": r.dst,
        "axes": None if len(reduced) == ndim else reduced, "kernel_shape": kept or (1,), "result_shape": result_shape,
        "ignore_nan": r.ignore_nan, "fn": fn, "prologue": r.prologue, "epilogue": r.epilogue,
        "correction": r.correction, "aux": r.aux, "complex": r.complex,
    }
    if not reduced and ndim:  # torch's any/all with dim=(): x != 0 elementwise, a trailing unit axis reduced
        common.update(shape=(*shape, 1), axes=(ndim,))
    if math.prod(shape[i] for i in reduced) == 0:
        if r.fill is None:
            where = "the array" if axis is None else f"axis {axis!r}"
            what = f"the {options.get('ord', 2)} norm" if "ord" in opts else fn
            raise _error(fn, f"{where} of an array of shape {shape} has no elements, and {what} has no identity")
        return Plan(**common, fill=r.fill)
    return Plan(**common, empty=math.prod(result_shape) == 0)


def _outputs(row: Function, r: Reduction | Plan) -> tuple[str, ...]:
    """The dtypes of ``r``'s results (dst, aux) in the caller's order (the row's)."""
    if r.aux is None:
        return (r.dst,)
    return (r.aux, r.dst) if row.aux_first else (r.dst, r.aux)


# endregion

# region The module


def _dialect() -> tuple[frozenset[str], bool]:
    """What the dialect takes: its reduction kinds, and whether ``T.reduce`` has the
    ``ignore_nan`` option (float max/min propagate NaN by default where it does)."""
    global _DIALECT
    if _DIALECT is None:
        import inspect

        from bulkred_dialect import builder as T
        from bulkred_dialect.ops.tile import ReduceKind

        _DIALECT = frozenset(k.value for k in ReduceKind), "ignore_nan" in inspect.signature(T.reduce).parameters
    return _DIALECT


_DIALECT: tuple[frozenset[str], bool] | None = None


def reduction_module(
    kind: str, shape: tuple[int, ...], dtype: str, axis: int | tuple[int, ...] | None, name: str, *,
    out_dtype: str | None = None, ignore_nan: bool | None = None, strides: tuple[int, ...] | None = None,
    prologue: Any = None, epilogue: Any = None, correction: int | None = None, aux_dtype: str | None = None,
    variant: str | None = None, pairs: bool = False,
):
    """The tile-level module of one reduction: kernel ``name(x, out)`` holding one
    grid-scope ``bulkred.reduce`` of ``x`` over ``axis`` (an axis or sorted axes; every
    axis when None) into ``out`` (``x``'s shape without those axes, (1,) for a whole
    reduction) of element type ``out_dtype`` (default ``dtype``). ``ignore_nan``: the
    op's option (None: not given, the dialect's default). ``strides``: ``x`` is a view
    of these element strides (``strided<[...]>``), read in place.

    Fused reductions (docs/fused.md): ``prologue`` / ``epilogue`` (lists of maps, a
    name or a (name, float) pair), ``correction`` (kind var) are the op's;
    ``aux_dtype``: a third parameter ``aux`` of ``out``'s shape and this dtype, the op's
    ``aux`` output (var's mean, argmax's value): kernel ``name(x, out, aux)``. None (the
    default) leaves each out. ``variant``: the op's forced lowering variant (None: the
    dispatch chooses). ``pairs``: ``x``'s last axis holds complex numbers as (re, im)
    (the op's ``pairs``; var's ``aux``, the complex mean, then has a pair axis too)."""
    from xdsl.utils.exceptions import DiagnosticException

    from bulkred_dialect import builder as T

    fn = kind if isinstance(kind, str) else "reduction_module"
    shape = _check_shape(fn, shape)
    # an axis or axes as _normalize_axes takes them (numpy integers too; each in range), sorted
    axes = None if axis is None else list(_normalize_axes(fn, axis, len(shape)))
    out_shape = [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]
    options: dict[str, Any] = {} if ignore_nan is None else {"ignore_nan": ignore_nan}
    if variant is not None:
        options["variant"] = variant
    if pairs:
        options["pairs"] = True
    try:
        for option, value in (("prologue", prologue), ("epilogue", epilogue), ("correction", correction)):
            if value is not None:
                options[option] = list(value) if option != "correction" else value
        with T.kernel(name) as k:
            x = k.param("x", list(shape), dtype, **({} if strides is None else {"strides": list(strides)}))
            out = k.param("out", out_shape, out_dtype or dtype)
            if aux_dtype is not None:
                aux_shape = [*out_shape, 2] if pairs and kind == "var" else out_shape
                options["aux"] = k.param("aux", aux_shape, aux_dtype)
            T.reduce(kind, out, x, axes=axes, **options)
        return k.module()
    except BulkredError:
        raise
    except (DiagnosticException, TypeError, ValueError, OverflowError) as e:  # a value xDSL's attributes refuse (2**70)
        raise _error(fn, f"reduction_module: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None


def module_of(p: Plan):
    """The plan's module; the dialect's refusal as one readable line."""
    from bulkred_dialect.diagnostics import LocatedError

    kinds, has_nan_option = _dialect()
    if p.kind not in kinds:
        raise _error(p.fn, f"kind {p.kind!r} is {NOT_YET} by the dialect (it has {', '.join(sorted(kinds))})")
    ignore_nan = None
    if p.kind in ("max", "min") and not p.prologue and _ROWS[p.src].is_float:
        if has_nan_option:
            ignore_nan = True if p.ignore_nan else None
        elif not p.ignore_nan:
            raise _error(
                p.fn,
                f"a {p.kind} that propagates NaN (the default, as in numpy and torch) is {NOT_YET}; "
                f"pass ignore_nan=True for one that ignores NaN inputs",
            )
    if p.src == "bool" and p.dst == "bool" and p.kind == "sum":
        raise _error(p.fn, "a sum of bool into bool is not supported: pass dtype=int64 (the default) or int32")
    if p.complex is not None:
        return _complex_module(p)
    try:
        return reduction_module(
            p.kind, p.shape, p.src, p.axes, p.kernel_name, out_dtype=p.dst, ignore_nan=ignore_nan,
            **({} if p.strides is None else {"strides": p.strides}),
            prologue=p.prologue or None, epilogue=p.epilogue or None, correction=p.correction, aux_dtype=p.aux,
            **({} if p.variant is None else {"variant": p.variant}),
        )
    except (LocatedError, BulkredError) as e:
        raise _readable(p, e) from None


def _complex_module(p: Plan):
    """The module of a complex ``x``'s plan: ``x`` read as its parts, ``(*shape, 2)``
    (strides doubled, the pair's 1), the pair axis kept (``parts``, the complex product),
    or reduced with the elements (``flat``) or pair by pair (``pairs``, the op's
    ``pairs``); a complex result (dst, aux) as its parts (:func:`_real_shape`)."""
    from bulkred_dialect.diagnostics import LocatedError

    n = len(p.shape)
    shape = (*p.shape, 2)
    logical = tuple(range(n)) if p.axes is None else p.axes
    axes = logical if _keeps_pair(p) else None if p.axes is None else (*p.axes, n)
    if _unit_in_front(p):  # nothing kept but the pair: a unit axis in front holds the result
        shape, axes = (1, *shape), tuple(a + 1 for a in logical)
    strides = None
    if p.strides is not None:
        strides = (*(2 * s for s in p.strides), 1)
        if len(strides) < len(shape):
            strides = (0, *strides)
    part = COMPLEX.get(p.dst, p.dst)
    try:
        return reduction_module(
            p.kind, shape, COMPLEX[p.src], axes, p.kernel_name, out_dtype=part,
            **({} if strides is None else {"strides": strides}),
            prologue=p.prologue or None, epilogue=p.epilogue or None, correction=p.correction,
            aux_dtype=None if p.aux is None else COMPLEX.get(p.aux, p.aux), pairs=p.complex == "pairs",
            **({} if p.variant is None else {"variant": p.variant}),
        )
    except (LocatedError, BulkredError) as e:
        raise _readable(p, e) from None


def _keeps_pair(p: Plan) -> bool:
    """The kernel's result is complex (the pair axis kept): a sum or mean of the parts,
    or the pairs' product, nansum, nanmean or logsumexp."""
    return p.complex == "parts" or (
        p.complex == "pairs" and (p.kind in ("prod", "nanmean", "logsumexp") or (p.kind == "sum" and "nan_zero" in p.prologue)))


def _unit_in_front(p: Plan) -> bool:
    """A complex result of a whole reduction (sum, mean, prod of every axis): the module's
    ``x`` has a unit axis in front, kept, so that its ``dst`` is ``(1, 2)``, the parts of
    the kernel's one complex value (``kernel_shape`` (1,))."""
    return _keeps_pair(p) and (p.axes is None or len(p.axes) == len(p.shape))


def _is_complex(a: Any) -> bool:
    return a.is_complex() if _library(a) == "torch" else np.dtype(a.dtype).kind == "c"


def _as_real(a: Any) -> Any:
    """A complex array as its parts, ``(..., 2)``, in place (torch's ``view_as_real``)."""
    lib = _library(a)
    if lib == "torch":
        return sys.modules["torch"].view_as_real(a)
    if lib == "numpy":
        a = np.ascontiguousarray(a)  # copied to the GPU anyway
    real = a.real  # a view of the re parts (numpy, cupy), the complex strides
    tricks = np.lib.stride_tricks if lib == "numpy" else sys.modules["cupy"].lib.stride_tricks
    return tricks.as_strided(real, (*a.shape, 2), (*a.strides, real.itemsize))


def _readable(p: Plan, e: Exception) -> ReductionError:
    """One line from a located (or other) build or compile error."""
    from bulkred_dialect.diagnostics import LocatedError

    if isinstance(e, ReductionError):
        return e
    # the location is the builder's call in this file, of no use to the caller
    first = re.sub(r"^\S*api\.py:\d+:\d+: ", "", str(e).split("\n", 1)[0])
    if p.dst != p.src and "'dst'" in first and p.kind not in ("argmax", "argmin"):
        return _error(p.fn, f"a {p.fn} of {p.src} into {p.dst} is {NOT_YET}: {first}; pass dtype={p.src!r}")
    if isinstance(e, LocatedError):
        more = " (explain=True shows the dispatch table)" if "\n" in str(e) else ""
        return _error(p.fn, f"{first}{more}")
    return _error(p.fn, f"{NOT_YET}: {first}")


# endregion

# region Compiling: one cache of kernels beside the disk cache


KERNELS: dict[tuple, Any] = {}
"""Compiled kernels, beside the disk cache: a plan's key and target (:func:`plan_key`)
-> its :class:`~bulkred_dialect.backend_ptx.launch.Kernel`."""
_LOCK = threading.Lock()


def plan_key(p: Plan, target: Any) -> tuple:
    """What the kernel of ``p`` for ``target`` is compiled from: the plan's fields that
    reach its module, and the target's name."""
    return (p.fn, p.kind, p.shape, p.src, p.dst, p.axes, p.ignore_nan, p.strides, p.prologue, p.epilogue,
            p.correction, p.aux, p.variant, p.complex, str(getattr(target, "name", target)))


def kernel_of(p: Plan, target: Target | str):
    """The compiled kernel of ``p`` for ``target``: from :data:`KERNELS`, else from the
    disk cache (one entry per plan and target), else built, lowered and assembled by the
    compile driver (nothing is imported on a disk hit but the loader: no xDSL)."""
    pk = plan_key(p, target)
    kernel = KERNELS.get(pk)
    if kernel is None:
        from bulkred_dialect.compiler import compile_keyed, target_for

        try:
            mod = compile_keyed({"what": "api reduction", "key": list(map(str, pk))}, lambda: module_of(p), target_for(target))
        except BulkredError as e:
            raise _readable(p, e) from None
        kernel = mod.kernel(p.kernel_name)
        with _LOCK:
            KERNELS[pk] = kernel
    return kernel


def _as_plan(kind: str, shape: tuple[int, ...], dtype: str, axis: Any, out_dtype: str | None, ignore_nan: bool | None) -> Plan:
    """A plan for the low-level entry points (explicit dtypes; the dialect's default NaN mode)."""
    row = _row(kind)
    shape = _check_shape(row.name, shape)
    if not isinstance(dtype, str) or dtype not in _ROWS:
        raise _error(row.name, f"dtype {dtype!r:.40} is not supported (bulkred's element types: {', '.join(_ROWS)})")
    if out_dtype is not None and (not isinstance(out_dtype, str) or out_dtype not in _ROWS):
        raise _error(row.name, f"out_dtype {out_dtype!r:.40} is not supported (bulkred's element types: {', '.join(_ROWS)})")
    if isinstance(axis, bool | np.bool_):
        raise _error(row.name, f"'axis' must be an int, a tuple of ints or None, got {axis!r}")
    axes = None if axis is None else _normalize_axes(row.name, axis, len(shape))
    out_shape = tuple(d for i, d in enumerate(shape) if axes is not None and i not in axes) or (1,)
    r = row.build(dtype, {**row.defaults(), **({"dtype": out_dtype} if "dtype" in row.option_names else {})})
    if ignore_nan is None:
        _, has_nan_option = _dialect()
        ignore_nan = not has_nan_option
    return Plan(r.kind, shape, dtype, out_dtype or dtype, axes, out_shape, out_shape, bool(ignore_nan), fn=row.name,
                prologue=r.prologue)


def compile_reduction(
    kind: str, shape: tuple[int, ...], dtype: str, axis: Any, target: Target | str, *,
    out_dtype: str | None = None, ignore_nan: bool | None = None,
):
    """The :class:`~bulkred_dialect.backend_ptx.loading.CompiledModule` of one reduction
    (``kind``: a function of the table or a ``bulkred.reduce`` kind), from the disk cache,
    else built and compiled."""
    p = _as_plan(kind, shape, dtype, axis, out_dtype, ignore_nan)
    return kernel_of(p, target).module


def explain_reduction(
    kind: str, shape: tuple[int, ...], dtype: str, axis: Any, target: Target | str | None = None, *,
    out_dtype: str | None = None, ignore_nan: bool | None = None,
) -> str:
    """The dispatch table of each ``bulkred.reduce`` of the reduction's module, for
    ``target`` (default: the GPU's, else sm_90a): which variant is chosen and why the
    others are not."""
    return explain(_as_plan(kind, shape, dtype, axis, out_dtype, ignore_nan), target)


def explain(p: Plan, target: Target | str | None = None) -> str:
    from bulkred_dialect.compiler import target_for
    from bulkred_dialect.passes.lower_tile_reductions import explanations

    return "\n".join(explanations(module_of(p), target_for(target)))


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


def _info(x: Any, fn: str, what: str = "x") -> tuple[tuple[int, ...], str, tuple[int, ...] | None]:
    """Shape, dtype name and strides (in elements; None: dense) of ``x`` without a copy
    (torch and cupy directly, other device arrays through a StridedMemoryView)."""
    lib = _library(x)
    if lib == "numpy":
        if isinstance(x, np.ma.MaskedArray):
            raise _error(fn, f"'{what}' is a numpy masked array: its mask would be ignored; pass x.filled(...) or x.compressed()")
        d = x.dtype
        if d.names is not None or d.kind not in "biuf" and d.name not in COMPLEX:
            raise _error(fn, f"'{what}' has dtype {d}, which is not supported (bulkred's element types: {', '.join(_ROWS)})")
        return tuple(x.shape), d.name, None  # copied in: any layout
    if lib == "cupy":
        return tuple(x.shape), np.dtype(x.dtype).name, tuple(s // x.itemsize for s in x.strides)
    if lib == "torch":
        if str(x.layout) != "torch.strided":
            raise _error(fn, f"'{what}' is a torch tensor of layout {x.layout} (not dense); pass {what}.to_dense()")
        row = of_torch(x.dtype)
        return tuple(x.shape), row.name if row is not None else str(x.dtype).removeprefix("torch."), tuple(x.stride())
    from bulkred_dialect.backend_ptx.arrays import view_dtype_name as view_dtype
    from bulkred_dialect.backend_ptx.arrays import is_device_array_like

    if not is_device_array_like(x):
        raise _error(
            fn,
            f"expected {'a device array (torch, cupy, DLPack or CUDA Array Interface) or a numpy array' if what == 'x' else 'an array'} "
            f"for '{what}', got {type(x).__name__}",
        )
    from cuda.core.utils import StridedMemoryView

    try:
        v = StridedMemoryView.from_any_interface(x, None)
    except Exception as e:
        raise _error(
            fn, f"cannot view the {type(x).__name__} through DLPack or the CUDA Array Interface ({type(e).__name__}: {e})"
        ) from None
    return tuple(v.shape), view_dtype(v), None if v.strides is None else tuple(v.strides)


def _numpy_in(x: np.ndarray) -> np.ndarray:
    """A numpy input as the kernel reads it: native byte order (a byte-swapped array is
    converted, not sent as raw bytes)."""
    if not x.dtype.isnative:
        return x.astype(x.dtype.newbyteorder("="))
    return x


def _check_out(fn: str, out: Any) -> None:
    """A numpy ``out`` must be writable and not a broadcast view (it is written after the
    kernel runs: a failure then would lose the result)."""
    if isinstance(out, np.ndarray):
        if not out.flags.writeable:
            raise _error(fn, "'out' is read-only")
        if builtins.any(s == 0 and d > 1 for s, d in zip(out.strides, out.shape)):
            raise _error(fn, f"'out' is a broadcast view (strides {out.strides} for shape {out.shape}): its elements overlap")
        if not out.dtype.isnative:
            raise _error(fn, f"'out' has a non-native byte order ({out.dtype.str}); pass an array of native order")


def check_layout(
    fn: str, what: str, shape: tuple[int, ...], strides: tuple[int, ...] | None, *, views: bool = False
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
            fn,
            f"'{what}' has negative strides {strides} (in elements) for shape {shape} (a flipped view), which are not "
            f"supported; pass a contiguous copy (x.contiguous() in torch, cupy.ascontiguousarray(x))",
        )
    want = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != want:
            if views:
                return tuple(0 if d == 1 else int(s) for d, s in zip(shape, strides))
            raise _error(
                fn,
                f"'{what}' is a strided view (strides {strides} in elements for shape {shape}), which is {NOT_YET} "
                f"for '{what}'; pass a contiguous array",
            )
        want *= d
    return None


UNALIGNED_VARIANT = "grid_gather"
"""The variant of a call whose array starts off its kernel's vector-load alignment (a
view at a storage offset): scalar loads, read in place (docs/from_torch.md)."""


def _new(x: Any, fn: str, shape: tuple[int, ...], dtype: str, fill: Any = None) -> Any:
    """A new array of ``shape`` and ``dtype`` like ``x`` (same library and device),
    filled with ``fill`` unless it is None."""
    lib = _library(x)
    if lib == "numpy":
        if dtype == "bfloat16":
            raise _error(fn, "numpy has no bfloat16: pass a device array for a bfloat16 result")
        a = np.empty(shape, dtype)
    elif lib == "torch":
        torch = sys.modules["torch"]
        a = torch.empty(shape, dtype=torch_dtype(dtype), device=x.device)
    elif lib == "cupy":
        with x.device:
            a = sys.modules["cupy"].empty(shape, dtype)
    else:
        raise _error(fn, f"pass out= (an array of shape {shape} and dtype {dtype}) for a {type(x).__name__} input")
    if fill is not None:
        a[...] = fill
    return a


def _reshape(a: Any, shape: tuple[int, ...]) -> Any:
    """A view of ``a`` (dense) in ``shape``."""
    return a.view(shape) if _library(a) == "torch" else a.reshape(shape)


def _stream_ok(fn: str, stream: Any) -> Any:
    """``stream`` is None, a cuda.core Stream, an object with ``__cuda_stream__``, a
    torch or cupy stream, or a non-negative int handle: checked before the GPU is touched
    (an object's handle is read as the launch reads it). Returns the stream to launch on
    (an int handle as an int)."""
    if stream is None:
        return None
    if isinstance(stream, bool | np.bool_) or isinstance(stream, numbers.Real) and not isinstance(stream, numbers.Integral):
        raise _error(fn, f"'stream' must be a stream (cuda.core, torch, cupy, __cuda_stream__) or a handle, got {stream!r:.40}")
    if isinstance(stream, numbers.Integral):
        if stream < 0 or stream >= 2**64:
            raise _error(fn, f"'stream' handle must be in [0, 2**64), got {stream}")
        return int(stream)
    from bulkred_dialect.backend_ptx.arrays import stream_handle

    try:
        handle = stream_handle(stream)
    except Exception:  # noqa: BLE001 - a stream object's own error (a bad __cuda_stream__): refused in one line
        raise _error(fn, f"'stream' must be a stream (cuda.core, torch, cupy, __cuda_stream__) or a handle, got {type(stream).__name__}") from None
    if not 0 <= handle < 2**64:
        raise _error(fn, f"'stream' handle must be in [0, 2**64), got {handle} from {type(stream).__name__}")
    return stream


# endregion

# region The call


def _outs(row: Function, out: Any) -> tuple:
    """``out`` as a tuple of arrays: a pair for two results, else ``(out,)``."""
    if out is None:
        return ()
    if row.results == 1:
        return (out,)
    if not isinstance(out, tuple | list) or len(out) != row.results:
        names = ", ".join(row.result_names)
        raise _error(row.name, f"'out' must be a pair of arrays ({names}), got {type(out).__name__}")
    if out[0] is out[1]:
        raise _error(row.name, "'out' names one array twice: the two results need two arrays")
    if _overlap(out[0], out[1]):
        raise _error(row.name, "'out' has two arrays that share memory: the two results need two arrays")
    return tuple(out)


def _overlap(a: Any, b: Any) -> bool:
    """Whether the numpy arrays or torch tensors ``a`` and ``b`` may share memory (their
    extents overlap); False for anything else (the checks that follow name it), and
    while torch.compile traces (fake tensors have no memory)."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))
    if _library(a) == _library(b) == "torch" and not sys.modules["torch"].compiler.is_compiling() \
            and a.device == b.device and a.numel() and b.numel():
        def extent(t: Any) -> tuple[int, int]:
            start = t.data_ptr()
            return start, start + (1 + builtins.sum((d - 1) * abs(s) for d, s in zip(t.shape, t.stride()))) * t.element_size()

        (a0, a1), (b0, b1) = extent(a), extent(b)
        return a0 < b1 and b0 < a1
    return False


CALLS: dict[tuple, tuple] = {}
"""The calls seen, by key (:func:`call_key`) -> ``(launcher, plan, kernel)``. The public
functions look a call up here first (one dict look-up): ``launcher(x, out)`` runs a call
like it (a bound launcher of the launch layer, ``Kernel.bind``; the autograd route's, for
a tensor that requires grad) and returns its result, or None, having done nothing, for a
call it does not take (an address off its kernel's vector-load alignment, a kernel that
has no launcher). Such a call goes through :func:`call`, which takes the plan and the
kernel from here: nothing the key proves is checked again."""


def no_launcher(x: Any, out: Any) -> None:
    """The launcher of a call that has none (numpy, a kernel without ``bind``): the
    plan and kernel are kept, the call goes through :func:`call`."""
    return None


def call_key(name: str, x: Any, axis: Any, keepdims: Any, options: dict[str, Any], out: Any) -> tuple | None:
    """The key of a call of the function ``name`` on a torch tensor (or a numpy array
    without ``out``): everything the call's plan and its launcher depend on, each value
    with its type where equal values of two types are not alike (``axis=True`` is not
    ``axis=1``, ``correction=1.0`` is refused where 1 is taken): ``x``'s type, shape,
    dtype, device, whether autograd records it (``requires_grad`` with grad enabled),
    its layout (contiguous, else its strides), ``axis``, ``keepdims``, the options as
    given, and each ``out``'s type, shape, dtype, device and contiguity. None for any
    other input (not kept). An unhashable part (a list) makes the look-up a TypeError."""
    if x.__class__ is np.ndarray:
        if out is not None:
            return None
        key = (
            name, np.ndarray, x.shape, x.dtype, x.strides, axis if axis.__class__ is not tuple else (*axis, *map(type, axis)),
            axis.__class__, keepdims, keepdims.__class__,
        )
    else:
        try:
            key = (
                name, x.__class__, x.shape, x.dtype, x.get_device(), x.requires_grad and _grad_enabled(),
                x.is_contiguous() or x.stride(), axis if axis.__class__ is not tuple else (*axis, *map(type, axis)),
                axis.__class__, keepdims, keepdims.__class__, None if out is None else out_key(out),
            )
        except AttributeError:
            return None
    if options:  # each option as (name, value, its type), after the fixed fields: a tuple
        for k, v in options.items():  # concatenation costs half of a (*items, *types) display
            key += (k, v, v.__class__)
    return key


def out_key(out: Any) -> tuple:
    """``out``'s part of a call's key (:func:`call_key`): its type, shape, dtype, device
    and contiguity, each array's for a pair."""
    if out.__class__ is tuple or out.__class__ is list:
        return (out.__class__, *map(out_key, out))
    return (out.__class__, out.shape, out.dtype, out.get_device(), out.is_contiguous())


def _grad_enabled() -> bool:
    """``torch.is_grad_enabled()``; from the first call on, :func:`call_key` reads torch's
    function itself (the name rebound: no frame of this module per call), where it is
    torch's compiled one (a stand-in torch's Python function is asked each time)."""
    global _grad_enabled
    f = sys.modules["torch"].is_grad_enabled
    if isinstance(f, types.BuiltinFunctionType):
        _grad_enabled = f
    return f()


def remember(key: tuple | None, launcher: Any, p: Plan, kernel: Any) -> None:
    """Keep a call under ``key`` (None: not kept)."""
    if key is not None and len(CALLS) < 4096:
        with _LOCK:
            CALLS[key] = (launcher, p, kernel)


def call_keyed(row: Function, x: Any, axis: Any, keepdims: Any, options: dict[str, Any], out: Any) -> Any:
    """:func:`call` on torch's current stream, through the call's launcher when its key
    was seen (the torch operators' implementation)."""
    key = call_key(row.name, x, axis, keepdims, options, out)
    try:
        hit = CALLS.get(key)
    except TypeError:
        key = hit = None
    if hit is not None:
        r = hit[0](x, out)
        if r is not None:
            return r
    return call(row, x, axis, keepdims, options, out, None, False, key)


def call(
    row: Function, x: Any, axis: Any, keepdims: Any, options: dict[str, Any], out: Any, stream: Any, explain_: bool,
    key: tuple | None = None,
) -> Any:
    """``bulkred.<row.name>(x, axis=..., keepdims=..., **options, out=..., stream=...,
    explain=...)``, ``options`` as given (the row's defaults fill the rest). ``key``: the
    call's key (:func:`call_key`, made by the caller; None: not kept). A call whose key
    was seen takes its plan and kernel from :data:`CALLS`; any other is checked,
    planned, compiled (once per plan), launched and kept under its key. Returns the
    result (a pair for two results), ``out``, or the dispatch table's text for
    ``explain``."""
    fn = row.name
    lib = _library(x)
    outs = _outs(row, out)
    hit = None if key is None else CALLS.get(key)
    if hit is not None:  # what the key proves (x, axis, keepdims, the options, out): not checked again
        _, p, kernel = hit
        infos: list[tuple] = []
    else:
        (shape, src, strides), infos = _arrays(row, x, outs)
        stream = _stream_ok(fn, stream)
        _explain_ok(fn, explain_)
        p = _plan_call(row, shape, src, axis, keepdims, {**row.defaults(), **options}, infos, lib)
        if lib == "numpy" and not outs and "bfloat16" in p.outputs:  # before anything is built (dtype=bfloat16)
            raise _error(fn, "numpy has no bfloat16: pass a device array for a bfloat16 result")
        view = check_layout(fn, "x", shape, strides, views=True)
        if view is not None and p.launches:  # read in place by a module built for the view's strides
            p = replace(p, strides=view + (0,) * (len(p.shape) - len(view)))  # (a unit axis the plan added: 0)
        for o_shape, _, _ in infos:
            if o_shape != p.result_shape:
                raise _error(fn, f"'out' has shape {o_shape}, expected {p.result_shape} (keepdims={keepdims})")
        kernel = None
    if explain_:
        if not p.launches:
            return f"no kernel: the result has shape {p.result_shape}" + ("" if p.fill is None else f", every element {p.fill!r}")
        return explain(p)
    if not p.launches:
        _check_module(p)  # the dialect refuses what it would refuse with elements too
        remember(key, no_launcher, p, None)
        if not outs:
            return _results(p, [_new(x, fn, p.result_shape, d, p.fill) for d in _kernel_dtypes(p)])
        if p.fill is not None:
            for o in outs:
                o[...] = p.fill
        return out
    if hit is None:
        if lib == "other" and shape == ():
            raise _error(fn, f"a 0-d {type(x).__name__}: pass a torch, cupy or numpy array")
        for o_shape, _, o_strides in infos:
            check_layout(fn, "out", o_shape, o_strides)
        if lib == "numpy" and x.size > 2**31 and builtins.any(s == 0 and d > 1 for s, d in zip(x.strides, x.shape)):
            raise _error(fn, f"'x' is a broadcast numpy view of {x.size} elements: numpy arrays are copied to the GPU, "
                         f"and this one would take {x.size * x.itemsize} bytes; pass a smaller array or a device array")
    if kernel is None:
        kernel = kernel_of(p, _arch(p))
    if lib == "torch" and stream is None:
        launcher = hit[0] if hit is not None else _bind(p, kernel, x, outs)
        if launcher is not None and launcher is not no_launcher:
            r = launcher(x, out)
            remember(key if hit is None else None, launcher, p, kernel)  # kept for aligned calls, misaligned or not
            if r is not None:
                return r
            # None: x or out is off the alignment of the kernel's vector loads (or the GPU is unusable)
            return _launch(row, replace(p, variant=UNALIGNED_VARIANT), None, x, lib, out, outs, stream)
    r = _launch(row, p, kernel, x, lib, out, outs, stream)
    if hit is None:
        remember(key, no_launcher, p, kernel)
    return r


def _arch(p: Plan) -> str:
    """The GPU's arch; without a GPU, the dialect's refusal of ``p`` first (the same
    words as with one), else :class:`NoGpuError`."""
    from bulkred_dialect.backend_ptx.device import current_arch
    from bulkred_dialect.backend_ptx.errors import NoGpuError

    try:
        return current_arch()
    except NoGpuError:
        _check_module(p)
        raise


def _bind(p: Plan, kernel: Any, x: Any, outs: tuple) -> Any:
    """The launch layer's launcher of calls like this one (``Kernel.bind``: it checks the
    device once; what the plan decided, dtypes, shapes and layouts, is not checked
    again), or None (also for a complex ``x``: :func:`_launch` passes its parts)."""
    bind = getattr(kernel, "bind", None)
    if bind is None or p.complex is not None:  # a kernel that is not the launch layer's (the tests' simulated ones)
        return None
    order = (2, 1) if p.aux is not None and p.row.aux_first else None
    if outs:
        return bind([x, *_kernel_order(p, outs)], order=order)
    made = [_new(x, p.fn, p.kernel_shape, d) for d in _kernel_dtypes(p)]
    return bind([x, *made], order=order, new=(p.result_shape,) * len(made), pack=p.row.result_type)


def _launch(row: Function, p: Plan, kernel: Any, x: Any, lib: str, out: Any, outs: tuple, stream: Any) -> Any:
    """The kernel called with every check of the launch layer: numpy arrays (copied),
    cupy and other device arrays, a torch call on a given stream or without a launcher.
    An array off the alignment of the kernel's vector loads (``MisalignedError``, raised
    before anything runs) takes :data:`UNALIGNED_VARIANT`'s kernel, which needs none."""
    from bulkred_dialect.backend_ptx.errors import MisalignedError

    fn = row.name
    if kernel is None:
        kernel = kernel_of(p, _arch(p))
    xk = x if tuple(x.shape) == p.shape else _reshape(x, p.shape)
    if lib == "numpy":
        xk = _numpy_in(xk)
    reshaped = p.kernel_shape != p.result_shape
    if not outs:
        kernel_outs = [_new(x, fn, p.kernel_shape, d) for d in _kernel_dtypes(p)]
    else:
        kernel_outs = _kernel_order(p, [
            np.empty(p.kernel_shape, o.dtype) if _library(o) == "numpy" else _reshape(o, p.kernel_shape) if reshaped else o
            for o in outs
        ])
    args = kernel_outs
    if p.complex is not None:  # the kernel reads and writes the parts (..., 2) in place
        xk = _as_real(xk)
        if _unit_in_front(p):
            xk = xk[None]
        args = [_as_real(o) if _is_complex(o) else o for o in kernel_outs]
    try:
        _, *got = kernel(xk, *args, stream=stream)
    except MisalignedError:
        if p.variant == UNALIGNED_VARIANT:
            raise
        _, *got = kernel_of(replace(p, variant=UNALIGNED_VARIANT), _arch(p))(xk, *args, stream=stream)
    if isinstance(kernel_outs[0], np.ndarray):  # numpy: the kernel wrote copies
        got = [g if o is g else g.view(o.dtype).reshape(o.shape) if o.dtype != g.dtype else g for g, o in zip(got, kernel_outs)]
        values = [g.reshape(p.result_shape) for g in got]
        if outs:
            for o, v in zip(outs, _kernel_order(p, values)):
                o[...] = v
            return out
        return _results(p, values)
    if outs:
        return out
    if reshaped:
        kernel_outs = [_reshape(r, p.result_shape) for r in kernel_outs]
    return _results(p, kernel_outs)


def torch_dtype(name: str) -> Any:
    """The torch dtype of a dtype name (its row's ``torch`` name, ``ops/dtypes.py``; a
    complex one's own)."""
    return getattr(sys.modules["torch"], name if name in COMPLEX else _ROWS[name].torch)


def _kernel_dtypes(p: Plan) -> tuple[str, ...]:
    """The dtypes of the kernel's outputs, in its parameter order (dst, then aux)."""
    return (p.dst,) if p.aux is None else (p.dst, p.aux)


def _kernel_order(p: Plan, arrays: Sequence[Any]) -> list[Any]:
    """The caller's results in the kernel's order (dst, aux)."""
    return list(reversed(arrays)) if p.aux is not None and p.row.aux_first else list(arrays)


def _results(p: Plan, kernel_outs: Sequence[Any]) -> Any:
    """The kernel's outputs (dst, aux) as the caller gets them: one array, or the pair."""
    if p.aux is None:
        return kernel_outs[0]
    return p.row.result_type(*_kernel_order(p, kernel_outs))


def _arrays(row: Function, x: Any, outs: tuple) -> tuple[tuple, list[tuple]]:
    """``x``'s and each ``out``'s shape, dtype and strides, with the checks of ``out``."""
    fn = row.name
    info = _info(x, fn)
    infos = [_info(o, fn, "out") for o in outs]
    for o in outs:
        _check_out(fn, o)
    if len(infos) == 2 and row.result_names and infos[0][1] != infos[1][1] and row.name in ("var_mean", "std_mean") \
            and info[1] not in COMPLEX:  # a complex x: a real var (std), a complex mean
        raise _error(fn, f"'out' has arrays of dtypes {infos[0][1]} and {infos[1][1]}: the two results have one dtype")
    return info, infos


def _explain_ok(fn: str, explain_: Any) -> None:
    if not isinstance(explain_, bool | np.bool_):
        raise _error(fn, f"'explain' must be a bool, got {explain_!r:.40}")


def _plan_call(
    row: Function, shape: tuple[int, ...], src: str, axis: Any, keepdims: Any, options: dict[str, Any], infos: list[tuple],
    library: str = "numpy",
) -> Plan:
    out_dtype = tuple(i[1] for i in infos) if infos else None
    dtype = options.get("dtype")
    rest = {k: v for k, v in options.items() if k != "dtype"}
    return plan(row.name, shape, src, axis, keepdims, dtype, out_dtype=out_dtype, library=library, **rest)


def check_call(row: Function, x: Any, axis: Any, keepdims: Any, options: dict[str, Any], out: Any, explain_: Any) -> Plan:
    """The checks of :func:`call` that need no GPU (``x``, ``out``, ``axis``,
    ``keepdims``, the options as given, ``explain``) and the call's plan: for a call
    that goes through the row's torch operator (autograd), whose schema would take or
    refuse the arguments in its own words. The caller keeps the call under its key."""
    (shape, src, _), infos = _arrays(row, x, _outs(row, out))
    _explain_ok(row.name, explain_)
    p = _plan_call(row, shape, src, axis, keepdims, {**row.defaults(), **options}, infos, _library(x))
    for o_shape, _, _ in infos:
        if o_shape != p.result_shape:
            raise _error(row.name, f"'out' has shape {o_shape}, expected {p.result_shape} (keepdims={keepdims})")
    return p


_VERIFIED: set[Plan] = set()
"""The plans of empty reductions whose module the dialect took (:func:`_check_module`)."""


def _check_module(p: Plan) -> None:
    """Build (and verify) the module of ``p`` with every empty extent made 1: an empty
    reduction the dialect would refuse with elements is refused too."""
    q = replace(p, fill=None)
    if q in _VERIFIED:
        return
    module_of(replace(p, shape=tuple(d or 1 for d in p.shape), fill=None, empty=False))
    _VERIFIED.add(q)


def forget() -> None:
    """Drop every call kept and every kernel in memory (the disk cache stays): for tests
    and for a program that changes devices."""
    with _LOCK:
        CALLS.clear()
        KERNELS.clear()
        _VERIFIED.clear()


# endregion
