"""The public reductions as one table: a row per function, as ``ops/dtypes.py`` is for
element types. Everything the front door needs to know about ``bulkred.<name>`` is in
its :class:`Function` row:

* its name, its documentation and its torch counterpart;
* the ``bulkred.reduce`` it builds (:meth:`Function.reduction`: the kind, the prologue
  and epilogue maps, ``correction``, the ``aux`` output) from its options;
* its dtype rule (which inputs it takes) and its result dtype;
* its options, with their defaults and checks, in the order of its signature;
* how many results it gives (``var_mean``: two);
* its gradient rule (a name in ``bulkred_dialect/grads.py``; None: not differentiable);
* its torch operator schema (:meth:`Function.schema`, generated from the options).

The call path (``api.py``: arguments -> plan -> module -> compiled kernel), the public
functions (``reductions.py``: their signatures and docs come from here) and the torch
operators (``torch_ops.py``) read this table; none of them has a list of functions of
its own. Adding a function whose maps exist is one row here and its tests
(docs/DEVELOPING.md, "Add a reduction function").

This module imports neither xDSL nor torch nor any GPU library.
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bulkred_dialect.ops.dtypes import DTYPES


class OptionError(ValueError):
    """A bad option value: the message, which the API prefixes with the function's name."""


@dataclass(frozen=True)
class Option:
    """One keyword option of a function: its name, default, check and torch schema type.
    ``check(value)`` returns the value the plan keeps (normalized: a numpy int as an int)
    or raises :class:`OptionError`."""

    name: str
    default: Any
    check: Callable[[Any], Any]
    schema: str  # the torch operator schema's type: "ScalarType?", "int", "float", "bool"
    place: str = "after"  # in the signature: "first" (before axis), "before" or "after" keepdims


@dataclass(frozen=True)
class Reduction:
    """What one call builds: a ``bulkred.reduce`` and the plan's dtypes.

    ``kind``, ``prologue``, ``epilogue``, ``correction`` are the op's; ``aux``: the
    dtype of its second output (var_mean's mean, max_with_indices' values), None for
    none; ``dst``: the result's dtype; ``fill``: every element's value when the reduced
    extent is empty (None: refused, the kind has no identity)."""

    kind: str
    dst: str
    prologue: tuple = ()
    epilogue: tuple = ()
    correction: int | float | None = None  # a float only where it is not an integer (torch's correction=1.3)
    aux: str | None = None
    fill: Any = None
    ignore_nan: bool = False
    complex: str | None = None  # a complex x (its (re, im) pairs, COMPLEX_MODES), None: a real one


COMPLEX: dict[str, str] = {"complex64": "float32", "complex128": "float64", "complex32": "float16"}
"""The complex dtypes bulkred takes (torch's, numpy's and cupy's; complex32, torch's
``chalf``, torch's alone) -> the dtype of each part. A complex ``x`` is read in place as
its parts, ``(..., 2)`` (torch's ``view_as_real``)."""

COMPLEX32_ROWS = ("sum", "prod", "mean", "nansum", "nanmean")
"""The rows that take a complex32 ``x`` (float16 parts, accumulated in float32 as float16
sums are, the result complex32 as torch's): torch's CUDA reductions of ``chalf`` (its
OpInfo samples: sum, prod, nansum, nanmean; mean, a sum's epilogue). The others refuse it,
as torch does."""

COMPLEX_MODES = ("parts", "flat", "pairs")
"""How a reduction of a complex ``x`` reads its parts (``Reduction.complex``): ``parts``
each part on its own (the pair axis kept: a complex sum or mean), ``flat`` both parts
together with the elements (the pair axis reduced: ``any``, the 2-norm's sum of squares),
``pairs`` each element as a complex number (``bulkred.reduce ... pairs``: |z|, z != 0,
the complex product, the variance)."""


def complex_of(part: str) -> str:
    """The complex dtype whose parts are ``part`` (float32: complex64)."""
    return next(c for c, p in COMPLEX.items() if p == part)


@dataclass(frozen=True)
class Function:
    """One public reduction function (see the module's docstring)."""

    name: str
    summary: str  # the first line of its docstring
    doc: str  # the rest of its docstring
    torch: str  # torch's counterpart, for docs/from_torch.md
    inputs: str  # which dtypes it takes: "any", "float", "integer"
    options: tuple[Option, ...]
    build: Callable[[str, dict[str, Any]], Reduction]  # (x's dtype, options) -> the reduction
    results: int = 1
    result_names: tuple[str, ...] = ()  # a pair's field names (a named tuple): ("var", "mean")
    one_axis: bool = False  # axis is one int or None (argmax's)
    grad: str | None = None  # its gradient rule in grads.py; None: not differentiable
    kernel: str = ""  # the kernel's name: bulkred_<kernel> (default: the function's name)
    aux_first: bool = False  # a pair's first result is the op's aux output (max_with_indices' values)
    out_dtype: bool = False  # without dtype=, the result takes out='s dtype (sum, prod: as torch)
    torch_dst: Callable[[str], str] | None = None  # torch tensors' result dtype without dtype= (None: as numpy's)
    torch_empty_dim: bool = True  # a torch tensor's dim=() reduces every axis (False: none, torch.any/all's x != 0)
    complex: Callable[[str, dict[str, Any]], Reduction] | None = None  # its build for a complex x (None: refused)

    def __post_init__(self) -> None:
        if not self.kernel:
            object.__setattr__(self, "kernel", self.name)
        if self.results > 1:
            object.__setattr__(self, "result_type", namedtuple(f"{self.name}_result", self.result_names))

    result_type: Any = field(default=None, init=False, repr=False, compare=False)
    """A pair's named tuple type (``var_mean_result(var, mean)``); None for one result."""

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options)

    def defaults(self) -> dict[str, Any]:
        return {o.name: o.default for o in self.options}

    def reduction(self, src: str, options: dict[str, Any], library: str = "numpy") -> Reduction:
        """The ``bulkred.reduce`` a call on an ``x`` of dtype ``src`` from ``library``
        builds, with the results' dtypes of that library's rules (:func:`library_rules`):
        torch tensors take :attr:`torch_dst` where no ``dtype=`` is given (an int64 sum of
        uint8, a uint8 ``any``); a ``dtype=`` that the input does not widen into is the
        prologue ``cast``: each element is converted first, then reduced (torch's and the
        array API's ``sum(float64, dtype=float32)``)."""
        torch = library_rules(library) == "torch"
        if "correction" in options and options["correction"] is None:
            if not torch:
                raise OptionError("'correction' None is torch's default (1) for a torch tensor; pass a number (0 by default)")
            options = {**options, "correction": 1}  # torch's default
        if src in COMPLEX:
            if self.complex is None:
                raise OptionError(f"a {src} x is not supported (torch's {self.name} has no complex numbers either, or "
                                  f"bulkred does not take them yet: docs/from_torch.md)")
            if src == "complex32" and self.name not in COMPLEX32_ROWS:
                raise OptionError(f"a complex32 x is not supported (torch's CUDA {self.name} has no complex32 either; "
                                  f"{', '.join(COMPLEX32_ROWS)} take it)")
            return self.complex(src, options)
        if options.get("dtype") in COMPLEX:
            raise OptionError(f"'dtype' {options['dtype']} of a {src} x is not supported yet (a complex result of a real "
                              f"x): convert x first (x.to(torch.{options['dtype']}), x.astype('{options['dtype']}'))")
        r = self.build(src, options)
        if torch and self.torch_dst is not None and options.get("dtype") is None:
            dst = self.torch_dst(src)
            if dst != r.dst:
                r = replace(r, dst=dst)
        if r.kind not in ("argmax", "argmin") and casts_first(src, r.dst) and "nonzero" not in r.prologue:
            r = replace(r, prologue=("cast", *r.prologue))
        return r

    def schema(self) -> str:
        """The torch operator schema of ``bulkred::<name>`` (a new result) and of
        ``bulkred::<name>_out`` (``out=``), e.g. ``(Tensor x, int[]? axis, bool keepdims,
        ScalarType? dtype) -> Tensor``."""
        opts = "".join(f", {o.schema} {o.name}" for o in self.options)
        results = "Tensor" if self.results == 1 else "(" + ", ".join(["Tensor"] * self.results) + ")"
        return f"(Tensor x, int[]? axis, bool keepdims{opts}) -> {results}"

    def out_schema(self) -> str:
        opts = "".join(f", {o.schema} {o.name}" for o in self.options)
        outs = "".join(f", Tensor(a{i}!) out{i}" for i in range(self.results))
        return f"(Tensor x, int[]? axis, bool keepdims{opts}{outs}) -> ()"


# region Option checks (the messages; the API prefixes them with bulkred.<name>)


def is_bool(v: Any) -> bool:
    """A Python or numpy bool (``np.bool_``): every bool option takes both alike."""
    return isinstance(v, bool | np.bool_)


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not is_bool(v)


def _is_number(v: Any) -> bool:
    """An int or a float, Python's or numpy's (``np.int64``, ``np.float32``); not a bool."""
    return isinstance(v, int | float | np.integer | np.floating) and not is_bool(v)


def _dtype_option(v: Any) -> Any:
    return v  # checked by the API, which knows torch's and numpy's dtypes


def _bool_option(name: str) -> Callable[[Any], bool]:
    def check(v: Any) -> bool:
        if not is_bool(v):
            raise OptionError(f"'{name}' must be a bool, got {v!r}")
        return bool(v)

    return check


def _correction(v: Any) -> int | float | None:
    """An int or a float, as torch takes it (``correction=1.3``: ``N - 1.3`` divides; a
    negative one too: ``N + 1``); an integral float is kept as the int (the op prints
    ``correction 1 : i64`` either way). None: torch's default, 1, for a torch tensor
    (:meth:`Function.reduction`; refused for the others, whose default is 0)."""
    if v is None:
        return None
    if not _is_number(v):
        raise OptionError(f"'correction' must be a number (an int or a float), got {v!r}")
    if _is_int(v):
        c: int | float = int(v)
    else:
        c = float(v)
        if not math.isfinite(c):
            raise OptionError(f"'correction' must be a finite number, got {v!r}")
        if c.is_integer() and abs(c) < 2**62:
            c = int(c)
    if abs(c) >= 2**62:
        raise OptionError(f"'correction' must be within (-2**62, 2**62), got {v!r}")
    return c


def _ord(v: Any) -> float:
    if not _is_number(v):
        raise OptionError(f"'ord' must be a number (an int, a float, inf or -inf), got {v!r}")
    try:
        p = float(v)
    except OverflowError:
        raise OptionError(f"'ord' must be a finite number, inf or -inf, got {v!r:.40}") from None
    if math.isnan(p):
        raise OptionError("'ord' must be a number, got nan")
    if math.isinf(p) and not np.isinf(v):  # a finite value beyond float64 (a long double): not inf
        raise OptionError(f"'ord' must be a finite number, inf or -inf, got {v!r:.40}")
    if p == 0:
        return 0.0  # the number of nonzero elements, as a float (torch's vector_norm(x, 0))
    if math.isfinite(p) and not 1e-30 <= abs(p) <= 1e30:  # p and 1/p are kernel constants of the result's type
        raise OptionError(f"'ord' must be inf, -inf or a number of magnitude within [1e-30, 1e30], got {v!r}")
    return p

# in the array API's order: sum(x, /, *, axis, dtype, keepdims), var(x, /, *, axis, correction,
# keepdims), vector_norm(x, /, *, ord, axis, keepdims); bulkred's own options come after keepdims
DTYPE_SUM = Option("dtype", None, _dtype_option, "ScalarType?", "before")
DTYPE = Option("dtype", None, _dtype_option, "ScalarType?")
IGNORE_NAN = Option("ignore_nan", False, _bool_option("ignore_nan"), "bool")
CORRECTION = Option("correction", 0, _correction, "float?", "before")
ORD = Option("ord", 2, _ord, "float", "first")


def torch_spelling(axis: Any, keepdims: Any, options: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    """``(axis, keepdims, options)`` with torch's spelling ``dim=`` / ``keepdim=`` (in
    ``options``) taken as the array API's ``axis=`` / ``keepdims=``; both spellings of
    one argument are refused (:class:`OptionError`)."""
    options = dict(options)
    if "dim" in options:
        if axis is not None:
            raise OptionError("'dim' (torch's spelling) and 'axis' name one argument: pass one of them")
        axis = options.pop("dim")
    if "keepdim" in options:
        if keepdims is not False:
            raise OptionError("'keepdim' (torch's spelling) and 'keepdims' name one argument: pass one of them")
        keepdims = options.pop("keepdim")
    return axis, keepdims, options


# endregion

# region Dtype rules


def sum_dtype(src: str) -> str:
    """The array API's sum/prod result: integers in 64 bits (signed, or unsigned for
    unsigned input; bool as int64), the others ``src``."""
    if src == "bool" or src.startswith("int"):
        return "int64"
    if src.startswith("uint"):
        return "uint64"
    return src


def torch_sum_dtype(src: str) -> str:
    """torch's sum/prod of a torch tensor: bool and every integer in int64 (uint8 too, where
    numpy gives uint64); uint64 stays uint64 (no wider signed type holds it)."""
    if src == "bool" or (not DTYPES[src].is_float and src != "uint64"):
        return "int64"
    return src


def library_rules(library: str) -> str:
    """Whose rules an input's library follows: ``torch`` for torch tensors, the array
    API's (``numpy``) for numpy and cupy arrays and any other device array."""
    return "torch" if library == "torch" else "numpy"


def casts_first(src: str, dst: str) -> bool:
    """Whether a ``dst`` other than ``src`` is reached by converting each element first
    (the prologue ``cast``): a narrower float or integer (``sum(float64, dtype=float32)``),
    or a float of an integer or bool (``logsumexp`` of int32). The wider accumulators
    (float16 into float32, int32 into int64) need no cast."""
    s, d = DTYPES[src], DTYPES[dst]
    if src == dst or d.is_bool:
        return False
    if d.is_float and not s.is_float:
        return True
    return d.is_float == s.is_float and not s.is_bool and d.bits < s.bits


def _torch_bool(src: str) -> str:
    """torch's any/all: uint8 for a uint8 tensor, else bool."""
    return "uint8" if src == "uint8" else "bool"


def _float_result(src: str, dtype: str | None) -> str:
    if dtype is None:
        return src
    if not DTYPES[dtype].is_float:
        raise OptionError(f"'dtype' must be a floating-point type ({', '.join(FLOATS)}), got {dtype}")
    return dtype


FLOATS = tuple(n for n, d in DTYPES.items() if d.is_float and d.collective)
IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True, "or": 0, "xor": 0}


# endregion

# region Builders: (x's dtype, options) -> Reduction


def _plain(kind: str, result: Callable[[str], str] = lambda s: s) -> Callable[[str, dict], Reduction]:
    """A plain kind (sum, prod, max, ...): ``dtype`` (sum, prod) picks the result; any/all
    of a non-bool reduce x != 0 (the prologue ``nonzero``: numpy's and torch's rule)."""

    def build(src: str, o: dict[str, Any]) -> Reduction:
        dst = o.get("dtype") or result(src)
        float_src = DTYPES[src].is_float
        ignore_nan = bool(o.get("ignore_nan", False)) and kind in ("max", "min") and float_src
        prologue = ("nonzero",) if kind in ("any", "all") and src != "bool" else ()
        fill = DTYPES[dst].identity("and") if kind == "and" else IDENTITY.get(kind)
        return Reduction(kind, dst, prologue=prologue, fill=fill, ignore_nan=ignore_nan)

    return build


def _mean(src: str, o: dict[str, Any]) -> Reduction:
    return Reduction("sum", _float_result(src, o["dtype"]), epilogue=("div_count",), fill=math.nan)


def _var(epilogue: tuple = (), aux: bool = False) -> Callable[[str, dict], Reduction]:
    def build(src: str, o: dict[str, Any]) -> Reduction:
        dst = _float_result(src, o["dtype"])
        return Reduction("var", dst, epilogue=epilogue, correction=o["correction"], aux=dst if aux else None, fill=math.nan)

    return build


def _index(kind: str, values: bool = False) -> Callable[[str, dict], Reduction]:
    def build(src: str, o: dict[str, Any]) -> Reduction:
        return Reduction(kind, "int64", aux=src if values else None)

    return build


def _norm(src: str, o: dict[str, Any]) -> Reduction:
    p = o["ord"]
    dst = _float_result(src, o["dtype"])
    if p == math.inf:
        return Reduction("max", dst, prologue=("abs",))
    if p == -math.inf:
        return Reduction("min", dst, prologue=("abs",))
    fill = 0.0 if p >= 0 else None
    if p == 0:  # torch's vector_norm(x, 0): the count of nonzero elements, as a float of dst's type
        return Reduction("sum", dst, prologue=("nonzero",), fill=fill)
    if p == 1:
        return Reduction("sum", dst, prologue=("abs",), fill=fill)
    if p == 2:
        return Reduction("sum", dst, prologue=("square",), epilogue=("sqrt",), fill=fill)
    return Reduction("sum", dst, prologue=(("pow", p),), epilogue=(("pow", 1.0 / p),), fill=fill)


def _logsumexp(src: str, o: dict[str, Any]) -> Reduction:
    """A bool or integer ``x`` gives float32 (torch's rule: its default float type), each
    element converted first (the prologue ``cast``, :meth:`Function.reduction`)."""
    return Reduction("logsumexp", src if DTYPES[src].is_float else "float32", fill=-math.inf)


def _count_nonzero(src: str, o: dict[str, Any]) -> Reduction:
    return Reduction("sum", "int64", prologue=("nonzero",), fill=0)


def _nansum(src: str, o: dict[str, Any]) -> Reduction:
    """torch.nansum: a sum with NaN as 0 (the prologue ``nan_zero``) of a float ``x``; an
    integer or bool ``x`` has no NaN: its plain sum (int64, as torch)."""
    dst = o.get("dtype") or sum_dtype(src)
    return Reduction("sum", dst, prologue=("nan_zero",) if DTYPES[src].is_float else (), fill=0)


def _nanmean(src: str, o: dict[str, Any]) -> Reduction:
    return Reduction("nanmean", _float_result(src, o["dtype"]), fill=math.nan)  # empty or all NaN: NaN


def _aminmax(src: str, o: dict[str, Any]) -> Reduction:
    return Reduction("minmax", src, aux=src)  # dst the minimum, aux the maximum; empty refused


def _amax(kind: str) -> Callable[[str, dict], Reduction]:
    def build(src: str, o: dict[str, Any]) -> Reduction:
        return Reduction(kind, src)  # NaN propagates (torch's amax); no identity: empty refused

    return build


# Builders of a complex x (Function.complex): (complex dtype, options) -> Reduction


def _complex_dtype(src: str, o: dict[str, Any]) -> str:
    """The complex result of sum, prod, mean: ``dtype=`` (a complex type) or ``src``."""
    d = o.get("dtype")
    if d is None:
        return src
    if d not in COMPLEX:
        raise OptionError(f"'dtype' must be a complex type ({', '.join(COMPLEX)}) for a {src} x, got {d}")
    return d


def _complex_cast(src: str, dst: str) -> tuple:
    """The prologue ``cast`` of a narrower complex result (complex128 into complex64)."""
    return ("cast",) if DTYPES[COMPLEX[dst]].bits < DTYPES[COMPLEX[src]].bits else ()


def _complex_part(src: str, o: dict[str, Any], what: str = "complex") -> str:
    """The real result of var, std, vector_norm: the part's dtype, or that of ``dtype=``
    (a complex type, as torch's vector_norm takes; var's a float type)."""
    d = o.get("dtype")
    if d is None:
        return COMPLEX[src]
    if d in COMPLEX and DTYPES[COMPLEX[d]].bits >= DTYPES[COMPLEX[src]].bits:
        return COMPLEX[d]
    if what == "float" and d in FLOATS and DTYPES[d].bits >= DTYPES[COMPLEX[src]].bits:
        return d
    want = "complex128" if src == "complex128" else "complex64 or complex128"
    if what == "float":
        want = ("float64 or complex128" if src == "complex128" else "float32, float64, complex64 or complex128")
    raise OptionError(f"'dtype' must be {want} for a {src} x (the result is its real part's type), got {d}")


def _c_plain(kind: str) -> Callable[[str, dict], Reduction]:
    def build(src: str, o: dict[str, Any]) -> Reduction:
        if kind in ("any", "all"):  # any: z != 0 of re or im, so both parts read flat; all: each pair's
            return Reduction(kind, "bool", prologue=("nonzero",), fill=kind == "all",
                             complex="flat" if kind == "any" else "pairs")
        dst = _complex_dtype(src, o)
        cast = _complex_cast(src, dst)
        if kind == "prod":
            return Reduction("prod", dst, prologue=cast, fill=1, complex="pairs")
        return Reduction("sum", dst, prologue=cast, fill=0, complex="parts")

    return build


def _c_mean(src: str, o: dict[str, Any]) -> Reduction:
    dst = _complex_dtype(src, o)
    return Reduction("sum", dst, prologue=_complex_cast(src, dst), epilogue=("div_count",),
                     fill=complex(math.nan, math.nan), complex="parts")


def _c_var(epilogue: tuple = (), aux: bool = False) -> Callable[[str, dict], Reduction]:
    """torch's variance of a complex x: the mean of ``|z - mean|**2`` (both parts'
    squared deviations) over ``N - correction``, a real result; the mean is complex."""

    def build(src: str, o: dict[str, Any]) -> Reduction:
        dst = _complex_part(src, o, "float")
        return Reduction("var", dst, epilogue=epilogue, correction=o["correction"],
                         aux=complex_of(dst) if aux else None, fill=math.nan, complex="pairs")

    return build


def _c_norm(src: str, o: dict[str, Any]) -> Reduction:
    """vector_norm of |z|: the 2-norm sums both parts' squares (flat); the others take
    each |z| (pairs: abs, pow, nonzero)."""
    p, dst = o["ord"], _complex_part(src, o)
    r = replace(_norm(COMPLEX[src], {"ord": p, "dtype": dst}), complex="pairs")
    return replace(r, complex="flat") if p == 2 else r


def _c_nansum(src: str, o: dict[str, Any]) -> Reduction:
    """torch's (CUDA) nansum of a complex x: an element with a NaN part adds 0."""
    dst = _complex_dtype(src, o)
    return Reduction("sum", dst, prologue=(*_complex_cast(src, dst), "nan_zero"), fill=0, complex="pairs")


def _c_nanmean(src: str, o: dict[str, Any]) -> Reduction:
    """torch's nanmean of a complex x: the nansum over the count of the elements without
    a NaN part (none: NaN)."""
    dst = _complex_dtype(src, o)
    return Reduction("nanmean", dst, prologue=_complex_cast(src, dst), fill=complex(math.nan, math.nan), complex="pairs")


def _c_logsumexp(src: str, o: dict[str, Any]) -> Reduction:
    """torch's logsumexp of a complex x: ``m + log(sum(exp(z - m)))``, ``m`` the real
    parts' maximum (a running shift in the kernel), complex ``exp`` and principal
    ``log``; empty: -inf."""
    return Reduction("logsumexp", src, fill=complex(-math.inf, 0.0), complex="pairs")


def _c_count_nonzero(src: str, o: dict[str, Any]) -> Reduction:
    return Reduction("sum", "int64", prologue=("nonzero",), fill=0, complex="pairs")


# endregion

_SUM_DOC = (
    "``dtype``: the accumulator's and the result's dtype (default: int64 for integer and bool input, uint64 for "
    "unsigned, else ``x``'s; with ``out=``, ``out``'s). An empty reduction gives the identity."
)
_MINMAX_DOC = (
    "A NaN gives NaN (numpy and torch) unless ``ignore_nan``, which drops NaN inputs (an all-NaN reduction gives NaN). "
    "An empty reduction is refused: there is no identity."
)
_VAR_DOC = (
    "The sum of squared deviations from the mean over ``N - correction`` (``correction`` 0 by default, as numpy and "
    "the array API; torch's default is 1, and None is 1 for a torch tensor; a float such as 1.3, or a negative one, "
    "is taken, as torch takes it). ``N - correction <= 0`` gives inf, or NaN where the deviations are 0, "
    "as torch does. One pass (Chan's combination of count, mean and M2); float16 and bfloat16 accumulate in float32."
)

ROWS: tuple[Function, ...] = (
    Function(
        "sum", "The sum of ``x``", _SUM_DOC, "torch.sum", "any", (DTYPE_SUM,), _plain("sum", sum_dtype), grad="sum",
        out_dtype=True, torch_dst=torch_sum_dtype, complex=_c_plain("sum"),
    ),
    Function(
        "prod", "The product of ``x``", _SUM_DOC, "torch.prod", "any", (DTYPE_SUM,), _plain("prod", sum_dtype), grad="prod",
        out_dtype=True, torch_dst=torch_sum_dtype, complex=_c_plain("prod"),
    ),
    Function("max", "The maximum of ``x``", _MINMAX_DOC, "torch.amax", "any", (IGNORE_NAN,), _plain("max"), grad="amax"),
    Function("min", "The minimum of ``x``", _MINMAX_DOC, "torch.amin", "any", (IGNORE_NAN,), _plain("min"), grad="amax"),
    Function(
        "amax", "The maximum of ``x`` (torch's name)", "NaN propagates; an empty reduction is refused.",
        "torch.amax", "any", (), _amax("max"), grad="amax", kernel="max",
    ),
    Function(
        "amin", "The minimum of ``x`` (torch's name)", "NaN propagates; an empty reduction is refused.",
        "torch.amin", "any", (), _amax("min"), grad="amax", kernel="min",
    ),
    Function(
        "any", "Whether any element of ``x`` is true (nonzero), as bool", "NaN counts as nonzero.",
        "torch.any", "any", (), _plain("any", lambda s: "bool"), torch_dst=_torch_bool,
        torch_empty_dim=False, complex=_c_plain("any"),
    ),
    Function(
        "all", "Whether every element of ``x`` is true (nonzero), as bool", "NaN counts as nonzero.",
        "torch.all", "any", (), _plain("all", lambda s: "bool"), torch_dst=_torch_bool,
        torch_empty_dim=False, complex=_c_plain("all"),
    ),
    Function("and_", "The bitwise and of an integer ``x``", "", "(none)", "integer", (), _plain("and"), kernel="and"),
    Function("or_", "The bitwise or of an integer ``x``", "", "(none)", "integer", (), _plain("or"), kernel="or"),
    Function("xor", "The bitwise xor of an integer ``x``", "", "(none)", "integer", (), _plain("xor"), kernel="xor"),
    Function(
        "count_nonzero", "The number of nonzero elements of ``x``, as int64",
        "NaN counts as nonzero; bool counts its true elements.", "torch.count_nonzero", "any", (), _count_nonzero, complex=_c_count_nonzero,
    ),
    Function(
        "mean", "The arithmetic mean of a floating-point ``x``",
        "A sum with the epilogue ``div_count``; float16 and bfloat16 accumulate in float32 and give their own dtype "
        "(``dtype=``: another float result). An empty reduction gives NaN, as torch does.",
        "torch.mean", "float", (DTYPE,), _mean, grad="mean", complex=_c_mean,
    ),
    Function("var", "The variance of a floating-point ``x``", _VAR_DOC, "torch.var", "float", (CORRECTION, DTYPE), _var(), grad="var",
             complex=_c_var()),
    Function(
        "std", "The standard deviation of a floating-point ``x``: the square root of :func:`var`",
        "``var`` with the epilogue ``sqrt``; ``correction`` as for :func:`var`.",
        "torch.std", "float", (CORRECTION, DTYPE), _var(("sqrt",)), grad="std", complex=_c_var(("sqrt",)),
    ),
    Function(
        "var_mean", "The variance and the mean of a floating-point ``x``, as the pair ``(var, mean)``",
        "As ``torch.var_mean``: one kernel, the mean the op's ``aux`` output; ``out``: a pair of arrays.",
        "torch.var_mean", "float", (CORRECTION, DTYPE), _var(aux=True), results=2, result_names=("var", "mean"),
        grad="var_mean", complex=_c_var(aux=True),
    ),
    Function(
        "std_mean", "The standard deviation and the mean of a floating-point ``x``, as the pair ``(std, mean)``",
        "As ``torch.std_mean``: one kernel; ``out``: a pair of arrays.",
        "torch.std_mean", "float", (CORRECTION, DTYPE), _var(("sqrt",), aux=True), results=2,
        result_names=("std", "mean"), grad="std_mean", complex=_c_var(("sqrt",), aux=True),
    ),
    Function(
        "argmax", "The index of the first largest element of ``x``, as int64",
        "``axis``: one axis, or None for the flat (row-major) index over the whole array. NaN counts as the largest, "
        "as in torch. An empty axis is refused.",
        "torch.argmax", "any", (), _index("argmax"), one_axis=True,
    ),
    Function(
        "argmin", "The index of the first smallest element of ``x``, as int64",
        "As :func:`argmax`; a NaN wins here too (torch's argmin gives the first NaN's index).",
        "torch.argmin", "any", (), _index("argmin"), one_axis=True,
    ),
    Function(
        "max_with_indices", "The largest elements of ``x`` along one axis and their indices, as the pair "
        "``(values, indices)``",
        "As ``torch.max(x, dim)``: one kernel (argmax's, whose values are its ``aux`` output); the first index of "
        "ties; NaN counts as the largest. ``axis``: one int, or None for the whole array (the flat index).",
        "torch.max(x, dim)", "any", (), _index("argmax", values=True), results=2, result_names=("values", "indices"),
        one_axis=True, grad="max_with_indices", kernel="argmax_values", aux_first=True,
    ),
    Function(
        "min_with_indices", "The smallest elements of ``x`` along one axis and their indices, as the pair "
        "``(values, indices)``",
        "As ``torch.min(x, dim)``; see :func:`max_with_indices`.",
        "torch.min(x, dim)", "any", (), _index("argmin", values=True), results=2, result_names=("values", "indices"),
        one_axis=True, grad="max_with_indices", kernel="argmin_values", aux_first=True,
    ),
    Function(
        "vector_norm", "The vector norm of a floating-point ``x`` over ``axis`` (the array API's linalg.vector_norm)",
        "``ord`` 2 (default): sqrt(sum(x**2)); 1: sum(|x|); inf / -inf: max / min of |x|; another p != 0: "
        "sum(|x|**p)**(1/p); 0: the number of nonzero elements, as a float of the result's dtype (torch's).",
        "torch.linalg.vector_norm", "float", (ORD, DTYPE), _norm, grad="vector_norm", complex=_c_norm,
    ),
    Function(
        "logsumexp", "log(sum(exp(x))) of a floating-point ``x``, without overflow",
        "One read with a running shift; an empty reduction or all -inf gives -inf. A bool or integer ``x`` gives "
        "float32 (torch's rule), each element converted as it is read. A complex ``x`` gives its complex "
        "log(sum(exp(z))), the shift the real parts' maximum (torch's).",
        "torch.logsumexp", "any", (), _logsumexp, grad="logsumexp", complex=_c_logsumexp,
    ),
    Function(
        "nansum", "The sum of ``x`` with NaN treated as 0",
        "As ``torch.nansum``: a sum with the prologue ``nan_zero``; an integer or bool ``x`` (no NaN) is summed as "
        "by :func:`sum` (int64 by default). " + _SUM_DOC,
        "torch.nansum", "any", (DTYPE_SUM,), _nansum, grad="nansum", out_dtype=True,
        torch_dst=torch_sum_dtype, complex=_c_nansum,
    ),
    Function(
        "nanmean", "The mean of the elements of a floating-point ``x`` that are not NaN",
        "As ``torch.nanmean``: one kernel (the kind ``nanmean``: a sum and a count of the non-NaN elements); an "
        "all-NaN or empty reduction gives NaN. float16 and bfloat16 accumulate in float32 (``dtype=``: another "
        "float result).",
        "torch.nanmean", "float", (DTYPE,), _nanmean, grad="nanmean", complex=_c_nanmean,
    ),
    Function(
        "aminmax", "The minimum and the maximum of ``x``, as the pair ``(min, max)``",
        "As ``torch.aminmax``: one kernel (the kind ``minmax``: the minimum its ``dst``, the maximum its ``aux`` "
        "output); a NaN makes both NaN; an empty reduction is refused (no identity). ``axis``: an int, a tuple of "
        "ints or None (torch's takes one dim or None); ``out``: a pair of arrays.",
        "torch.aminmax", "any", (), _aminmax, results=2, result_names=("min", "max"), grad="aminmax",
    ),
)

FUNCTIONS: dict[str, Function] = {f.name: f for f in ROWS}
"""Function name -> row."""

KINDS: dict[str, str] = {"and": "and_", "or": "or_"}
"""``bulkred.reduce``'s kind names that are not a function's name (Python keywords)."""


def function(name: str) -> Function | None:
    """The row of ``name``, or of the ``bulkred.reduce`` kind ``name`` (``and``, ``or``)."""
    return FUNCTIONS.get(KINDS.get(name, name))


def _check_table() -> None:
    for f in ROWS:
        assert f.results == 1 or len(f.result_names) == f.results, f.name
        assert len(set(f.option_names)) == len(f.option_names), f.name


_check_table()

__all__ = [
    "COMPLEX", "COMPLEX32_ROWS", "COMPLEX_MODES", "FUNCTIONS", "ROWS", "Function", "Option", "OptionError", "Reduction",
    "casts_first", "complex_of", "function", "is_bool",
    "library_rules", "sum_dtype", "torch_spelling", "torch_sum_dtype",
]

# region The list functions (docs/foreach.md): many tensors in one launch
#
# A list row is what a Function row is for one tensor: its name, docs and torch
# counterpart, its options (checks and defaults) in the order of its signature, its
# torch operator's schema, the ``bulkred.reduce_list`` it launches (the maps of the
# single-tensor vector_norm row: ``_norm``) and its gradient rule (none: these are
# optimizer-side functions). ``foreach.py`` runs them: the list checks and the
# descriptor tables are its own.

REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()
"""The default of an option without one (a required argument: ``max_norm``)."""


def _number_option(name: str) -> Callable[[Any], float]:
    def check(v: Any) -> float:
        if not _is_number(v):
            raise OptionError(f"'{name}' must be a number, got {type(v).__name__} {v!r:.40}")
        try:
            return float(v)
        except OverflowError:
            raise OptionError(f"'{name}' must be a number within the float range, got {v!r:.40}") from None

    return check


def _as_is(v: Any) -> Any:
    return v  # a tensor argument (checked by foreach.py, which knows the list's device), or an ignored one


def take_row_signature(fn: Callable[..., Any], row: Any) -> None:
    """Give the public function ``fn`` its row's signature and docstring (a
    :class:`ListFunction` or a row normalization's row: ``row.signature()``,
    ``row.docstring()``); a function whose parameters are not its row's (names, order,
    defaults, kinds) fails the import."""
    import inspect

    want = row.signature()
    got = inspect.signature(fn)
    assert [(p.name, p.kind, p.default) for p in got.parameters.values()] == [
        (p.name, p.kind, p.default) for p in want.parameters.values()
    ], f"{row.name}{got} is not its row's {want}"
    fn.__signature__ = want  # type: ignore[attr-defined]
    fn.__doc__ = row.docstring()


@dataclass(frozen=True)
class ListFunction:
    """One public function of a list of tensors (``foreach.py`` runs it).

    Its signature is ``first`` (the list) then :attr:`options`, whose ``place`` is
    ``"positional"`` (positional or keyword) or ``"keyword"`` (keyword-only). The torch
    operator ``bulkred::<name>`` (:meth:`schema`) takes the list and every option with a
    ``schema`` (an option without one, ``foreach``, is taken and ignored); the list and
    the options named in :attr:`writes` are written in place."""

    name: str
    summary: str  # the first line of its docstring
    doc: str  # the rest of its docstring
    torch: str  # torch's counterpart
    first: str  # the list argument's name
    options: tuple[Option, ...]
    build: Callable[[dict[str, Any]], Reduction] | None  # options -> the reduce_list (None: no launch)
    result: str  # "per_tensor": float32 [len(list)]; "total": float32, 0-d; "list": a TensorList
    writes: tuple[str, ...] = ()  # the arguments written in place (``first``: every tensor of the list)
    scale: str = ""  # the option that scales every element in place as it is read (reduce_list's ``scale``)
    flag: str = ""  # the option set to 1.0 on a non-finite input (reduce_list's ``nonfinite``)
    clip: str = ""  # the option holding max_norm: a scale_list ``clip_by`` the total after the reduction
    grad: str | None = None  # not differentiable

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options)

    def defaults(self) -> dict[str, Any]:
        return {o.name: o.default for o in self.options if o.default is not REQUIRED}

    def docstring(self) -> str:
        torch = f"As ``{self.torch}`` (docs/foreach.md)." if self.torch != "(none)" else "See docs/foreach.md."
        return f"{self.summary}.\n\n{self.doc}\n\n{torch}"

    def signature(self) -> Any:
        """The public function's ``inspect.Signature``."""
        import inspect

        P = inspect.Parameter
        params = [P(self.first, P.POSITIONAL_OR_KEYWORD)]
        for o in self.options:
            kind = P.KEYWORD_ONLY if o.place == "keyword" else P.POSITIONAL_OR_KEYWORD
            params.append(P(o.name, kind, default=P.empty if o.default is REQUIRED else o.default))
        return inspect.Signature(params)

    def op_options(self) -> tuple[Option, ...]:
        """The options the torch operator takes, in order."""
        return tuple(o for o in self.options if o.schema)

    def schema(self) -> str:
        """The torch operator schema of ``bulkred::<name>``, e.g. ``(Tensor(a!)[] grads,
        Tensor inv_scale, Tensor(b!) found_inf, float ord) -> Tensor``."""
        aliases = iter("abcdefgh")
        args = [f"Tensor{f'({next(aliases)}!)' if self.first in self.writes else ''}[] {self.first}"]
        for o in self.op_options():
            t = f"{o.schema}({next(aliases)}!)" if o.name in self.writes else o.schema
            args.append(f"{t} {o.name}")
        return f"({', '.join(args)}) -> Tensor"

    def reduction(self, options: dict[str, Any]) -> Reduction:
        """The ``bulkred.reduce_list`` of a call with these (checked) ``options``."""
        assert self.build is not None, self.name
        return self.build(options)


def _list_norm(o: dict[str, Any]) -> Reduction:
    """The ``ord``-norm of float32 elements: vector_norm's maps (``_norm``: ord 0 the
    count of nonzeros); ``local``: the power, without the root (the epilogue)."""
    r = _norm("float32", {"ord": o["ord"], "dtype": None})
    return replace(r, epilogue=()) if o.get("local") else r


def _amax(o: dict[str, Any]) -> Reduction:
    return _norm("float32", {"ord": math.inf, "dtype": None})


LIST_ORD = Option("ord", 2.0, _ord, "float", "positional")  # vector_norm's check
ERROR_IF_NONFINITE = Option("error_if_nonfinite", False, _bool_option("error_if_nonfinite"), "bool", "positional")
_EMPTY = "an empty tensor's norm is 0 (ord -inf: inf, the identity of min)"
_ORDS = "``ord``: any p (2, 1, 3.5), ``inf`` (max |x|), ``-inf`` (min |x|), 0 (the count of nonzeros)"
_NONFINITE = ("``error_if_nonfinite=True`` raises ``RuntimeError`` when the norm is NaN or inf (that check waits for "
              "the GPU, as torch's does)")

LIST_ROWS: tuple[ListFunction, ...] = (
    ListFunction(
        "foreach_norm", "The ``ord``-norm of each tensor of a list, as one float32 tensor ``[len(tensors)]``",
        f"torch's ``_foreach_norm`` gives a list of 0-d tensors. {_ORDS}; {_EMPTY}. A tensor may appear twice.",
        "torch.stack(torch._foreach_norm(tensors, ord))", "tensors", (LIST_ORD,), _list_norm, "per_tensor",
    ),
    ListFunction(
        "total_norm", "The ``ord``-norm of all the elements of a list together, a 0-d float32 tensor",
        f"One launch, no host sync. {_ORDS}. ``local=True``: the sum of ``|x| ** ord`` (``inf``: max |x|, ``-inf``: "
        "min |x|, 0: the count of nonzeros) without the root, for a distributed total: ``all_reduce`` (SUM; MAX for "
        f"inf, MIN for -inf) over the ranks, then ``** (1 / ord)``. {_NONFINITE}. An empty list gives 0.",
        "torch.nn.utils.get_total_norm(tensors, ord, error_if_nonfinite)", "tensors",
        (LIST_ORD, ERROR_IF_NONFINITE, Option("local", False, _bool_option("local"), "bool", "keyword")),
        _list_norm, "total",
    ),
    ListFunction(
        "clip_grad_norm_", "The total ``ord``-norm of the gradients, and every gradient multiplied in place by "
        "``min(max_norm / (norm + 1e-6), 1)``",
        "Parameters give their ``.grad`` (skipped when None), tensors are the gradients. The coefficient is computed "
        "on the device (no host sync; nothing is written when it is 1). Returns the norm (0-d float32). "
        f"{_NONFINITE}; the gradients are then left alone. Two gradients that share memory (the same tensor twice) "
        "are refused. ``foreach`` is taken for torch's signature and ignored.",
        "torch.nn.utils.clip_grad_norm_(parameters, max_norm, ord)", "parameters_or_grads",
        (Option("max_norm", REQUIRED, _number_option("max_norm"), "float", "positional"), LIST_ORD, ERROR_IF_NONFINITE,
         Option("foreach", None, _as_is, "", "positional")),
        _list_norm, "total", writes=("parameters_or_grads",), clip="max_norm",
    ),
    ListFunction(
        "unscale_and_norm_", "AMP's unscale and non-finite check with the total norm of the unscaled gradients, in "
        "one read and one write",
        "Each gradient multiplied in place by ``inv_scale`` (float32 [1] on the device); ``found_inf`` (float32 [1]) "
        "set to 1.0 where a gradient held inf or NaN before the multiplication, as AMP checks (never cleared); the "
        "total ``ord``-norm of the unscaled gradients returned (0-d float32). bfloat16 gradients are taken (torch's "
        "unscale refuses them). Two gradients that share memory (the same tensor twice) are refused.",
        "torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale) + get_total_norm(grads)",
        "grads",
        (Option("inv_scale", REQUIRED, _as_is, "Tensor", "positional"),
         Option("found_inf", REQUIRED, _as_is, "Tensor", "positional"), LIST_ORD),
        _list_norm, "total", writes=("grads", "found_inf"), scale="inv_scale", flag="found_inf",
    ),
    ListFunction(
        "foreach_amax", "max |x| of each tensor of a list (the amax of FP8 scaling), one float32 tensor "
        "``[len(tensors)]``", "An empty tensor gives 0, a NaN gives NaN.",
        "torch.stack([t.abs().amax() for t in tensors])", "tensors", (), _amax, "per_tensor",
    ),
    ListFunction(
        "tensor_list", "A list of tensors checked once, as a :class:`TensorList`",
        "A later list call on it does no per-tensor work, whatever the list's length: ``grads = "
        "bulkred.tensor_list([p.grad for p in model.parameters()])``, then ``bulkred.clip_grad_norm_(grads, 1.0)``.",
        "(none)", "tensors", (), None, "list",
    ),
)

LISTS: dict[str, ListFunction] = {f.name: f for f in LIST_ROWS}
"""List function name -> row."""

def _check_lists() -> None:
    for f in LIST_ROWS:
        assert f.name not in FUNCTIONS, f.name
        assert len(set(f.option_names)) == len(f.option_names), f.name
        assert all(w in (f.first, *f.option_names) for w in f.writes), f.name
        assert all(getattr(f, k) in ("", *f.option_names) for k in ("scale", "flag", "clip")), f.name
        assert (f.build is None) == (f.result == "list"), f.name


_check_lists()

__all__ += ["LISTS", "LIST_ROWS", "ListFunction", "REQUIRED"]

# endregion

# region The row normalizations (docs/rows.md): one bulkred.normalize_rows kernel a call
#
# A row row is what a Function row is for a reduction: its name, docs and torch
# counterpart, its arguments in the order of torch's signature (the tensors, then the
# options: their defaults and checks), its torch operator's schema, the
# ``bulkred.normalize_rows`` kind it launches, the statistics its operator returns for the
# backward, and its gradient rule (``row_grads.py``). ``row_functions.py`` runs them: the
# tensor checks, the call's key and launcher and the kernels are its own.


def _int_option(name: str) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if not _is_int(v):
            raise OptionError(f"'{name}' must be an int, got {v!r:.40}")
        return int(v)

    return check


def _normalized_shape(v: Any) -> tuple[int, ...]:
    """An int or a sequence of ints >= 0 (torch's ``normalized_shape``), as a tuple."""
    items = (v,) if _is_int(v) else v
    if not isinstance(items, tuple | list) or not all(_is_int(d) and d >= 0 for d in items):
        raise OptionError(f"'normalized_shape' must be an int or a sequence of ints >= 0, got {v!r:.40}")
    if not items:
        raise OptionError("'normalized_shape' must name at least one dimension, got ()")
    return tuple(int(d) for d in items)


def _eps(none: bool) -> Callable[[Any], float | None]:
    def check(v: Any) -> float | None:
        if v is None and none:
            return None  # the dtype's machine epsilon (torch's rms_norm), resolved with x's dtype
        if not _is_number(v) or not 0 <= float(v) < math.inf:
            raise OptionError(f"'eps' must be a finite number >= 0{' or None' if none else ''}, got {v!r:.40}")
        return float(v)

    return check


def _variant(v: Any) -> str | None:
    if v is not None and not isinstance(v, str):
        from bulkred_dialect.passes.variants import REGISTRY  # (the lowering, imported on this refusal only)

        names = ", ".join(x.name for x in REGISTRY.of("bulkred.normalize_rows"))
        raise OptionError(f"'variant' must be a lowering variant's name ({names}) or None, got {v!r:.40}")
    return v


def _reduction(v: Any) -> str:
    if v not in ("none", "sum", "mean") or not isinstance(v, str):
        raise OptionError(f"'reduction' must be 'none', 'sum' or 'mean', got {v!r:.40}")
    return v


def _label_smoothing(v: Any) -> float:
    if not _is_number(v) or not 0.0 <= float(v) <= 1.0:
        raise OptionError(f"'label_smoothing' must be a number in [0, 1], got {v!r:.40}")
    return float(v)


@dataclass(frozen=True)
class RowFunction:
    """One row normalization: a public function whose every call is one
    ``bulkred.normalize_rows`` kernel of ``kind`` (``row_functions.py`` runs it).

    Its signature is the :attr:`inputs` (tensors, positional or keyword) then
    :attr:`options` (``place``: ``"positional"``, positional or keyword as in torch's
    signature, or ``"keyword"``, keyword-only). The torch operator ``bulkred::<name>``
    (:meth:`schema`) takes the inputs and the options that have a ``schema`` (checked and
    resolved: ``eps=None`` as the dtype's epsilon); the others are applied around it
    (``dim``, ``dtype``, ``normalized_shape``, ``reduction``). It returns the kernel's
    :attr:`outputs` and the row statistics :attr:`stats` that its backward reads."""

    name: str
    summary: str  # the first line of its docstring
    doc: str  # the rest of its docstring
    torch: str  # torch's counterpart
    kind: str  # the bulkred.normalize_rows kind it launches
    inputs: tuple[str, ...]  # the tensor arguments, first in the signature
    options: tuple[Option, ...]
    outputs: tuple[str, ...]  # the operator's outputs before the statistics: y, residual_out, loss
    stats: tuple[str, ...] = ()  # the float32 [M] statistics the operator returns (row_kernels' names)
    grad: str | None = None  # its gradient rule in row_grads.py

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options)

    def defaults(self) -> dict[str, Any]:
        return {o.name: o.default for o in self.options if o.default is not REQUIRED}

    def op_options(self) -> tuple[Option, ...]:
        """The options the torch operator takes, in order."""
        return tuple(o for o in self.options if o.schema)

    def op_arguments(self) -> tuple[str, ...]:
        """The torch operator's argument names, in order."""
        return (*self.inputs, *(o.name for o in self.op_options()))

    def schema(self) -> str:
        """The torch operator schema of ``bulkred::<name>``, e.g. ``(Tensor x, Tensor?
        weight, float eps, str? variant) -> (Tensor, Tensor)`` (y and rstd)."""
        args = [f"Tensor {n}" for n in self.inputs] + [f"{o.schema} {o.name}" for o in self.op_options()]
        n = len(self.outputs) + len(self.stats)
        return f"({', '.join(args)}) -> {'Tensor' if n == 1 else '(' + ', '.join(['Tensor'] * n) + ')'}"

    def signature(self) -> Any:
        """The public function's ``inspect.Signature``."""
        import inspect

        P = inspect.Parameter
        params = [P(n, P.POSITIONAL_OR_KEYWORD) for n in self.inputs]
        for o in self.options:
            kind = P.KEYWORD_ONLY if o.place == "keyword" else P.POSITIONAL_OR_KEYWORD
            params.append(P(o.name, kind, default=P.empty if o.default is REQUIRED else o.default))
        return inspect.Signature(params)

    def docstring(self) -> str:
        grad = ("Differentiable: torch tensors that require grad give results in the autograd graph (docs/rows.md, "
                "\"Gradients\")." if self.grad else "Not differentiable.")
        return (f"{self.summary}.\n\n{self.doc}\n\nAs ``{self.torch}``. {grad} Takes CUDA torch tensors of float32, "
                "bfloat16 or float16 whose last dimension is contiguous; accumulates in float32. ``variant``: force a "
                "lowering (rows_warp, rows_cta, rows_cluster, rows_stream; docs/rows.md). docs/rows.md has every "
                "function.")


ROW_DIM = Option("dim", -1, _int_option("dim"), "", "positional")
ROW_DTYPE = Option("dtype", None, _dtype_option, "", "positional")
VARIANT = Option("variant", None, _variant, "str?", "keyword")
NORMALIZED_SHAPE = Option("normalized_shape", REQUIRED, _normalized_shape, "", "positional")
WEIGHT = Option("weight", None, _as_is, "Tensor?", "positional")
BIAS = Option("bias", None, _as_is, "Tensor?", "positional")
RMS_EPS = Option("eps", None, _eps(True), "float", "positional")

_SOFTMAX_DOC = (
    "Over the last dimension (``dim`` -1 or ``x.dim() - 1``; another is refused: the rows are read along their "
    "contiguous last dimension). ``dtype``: convert ``x`` first (as torch), a float32, bfloat16 or float16 result. "
    "A row holding NaN gives NaN, a row of all -inf gives NaN, a -inf element 0, as torch. The row is read once "
    "and written once."
)
_NORM_DOC = (
    "``normalized_shape``: the last dimensions of ``x`` (one or more, which must be a contiguous block: read as one "
    "row); ``weight`` (and ``bias``) of that shape, of x's dtype or float32; the result in x's dtype (torch gives "
    "float32 for a float32 weight of a 16-bit x)."
)

NORM_ROWS: tuple[RowFunction, ...] = (
    RowFunction(
        "softmax", "The softmax of ``x`` over its last dimension", _SOFTMAX_DOC, "torch.softmax(x, dim, dtype)",
        "softmax", ("x",), (ROW_DIM, ROW_DTYPE, VARIANT), ("y",), grad="softmax",
    ),
    RowFunction(
        "log_softmax", "The log-softmax of ``x`` over its last dimension", _SOFTMAX_DOC,
        "torch.log_softmax(x, dim, dtype)", "log_softmax", ("x",), (ROW_DIM, ROW_DTYPE, VARIANT), ("y",),
        grad="log_softmax",
    ),
    RowFunction(
        "rms_norm", "``x * rsqrt(mean(x**2) + eps) * weight`` over the last dimensions of ``x``",
        _NORM_DOC + " ``eps`` None: the machine epsilon of x's dtype, as torch.",
        "torch.nn.functional.rms_norm(x, normalized_shape, weight, eps)", "rms_norm", ("x",),
        (NORMALIZED_SHAPE, WEIGHT, RMS_EPS, VARIANT), ("y",), ("rstd",), grad="rms_norm",
    ),
    RowFunction(
        "layer_norm", "``(x - mean) * rsqrt(var + eps) * weight + bias`` over the last dimensions of ``x``",
        _NORM_DOC + " The biased variance, as torch.",
        "torch.nn.functional.layer_norm(x, normalized_shape, weight, bias, eps)", "layer_norm", ("x",),
        (NORMALIZED_SHAPE, WEIGHT, BIAS, Option("eps", 1e-5, _eps(False), "float", "positional"), VARIANT),
        ("y",), ("mean", "rstd"), grad="layer_norm",
    ),
    RowFunction(
        "add_rms_norm", "``h = x + residual`` and the rms_norm of ``h`` over the last dimension, as the pair "
        "``(rms_norm(h), h)``",
        "Each row of ``x`` and ``residual`` (of x's shape and dtype) is read once; ``h`` is rounded to x's dtype "
        "(as torch's ``x + residual``) and written once. ``weight``: ``[N]``, of x's dtype or float32; ``eps`` None: "
        "the machine epsilon of x's dtype.",
        "(torch.nn.functional.rms_norm(x + residual, (N,), weight, eps), x + residual)", "add_rms_norm",
        ("x", "residual"), (WEIGHT, RMS_EPS, VARIANT), ("y", "residual_out"), ("rstd",), grad="add_rms_norm",
    ),
    RowFunction(
        "cross_entropy", "The cross-entropy loss of ``[M, C]`` logits and int64 class indices ``[M]``",
        "One read of the logits, no softmax tensor: each row's ``lse - (1 - s) * input[target] - s * mean(input)`` "
        "(``s``: ``label_smoothing``), 0 where the target is ``ignore_index``, NaN for a target outside [0, C) "
        "(torch raises a device-side assert). ``weight``: class weights ``[C]`` (input's dtype or float32, not "
        "differentiated, as torch): each row's ``(1 - s) * w[target] * (lse - input[target]) + s / C * sum(w * (lse "
        "- input))`` (``input @ w``: one more read of the logits when ``s`` > 0). ``reduction``: ``'none'`` (each "
        "row's loss), ``'sum'``, ``'mean'`` (divided by the number of rows whose target is not ``ignore_index``, "
        "with ``weight`` by the sum of their ``w[target]``: NaN when there is none, as torch); the result in "
        "input's dtype. A 1-D ``input`` [C] takes a 0-d ``target``. Class-probability targets are refused (not "
        "supported yet).",
        "torch.nn.functional.cross_entropy(input, target, weight, ignore_index=ignore_index, reduction=reduction, "
        "label_smoothing=label_smoothing)", "cross_entropy", ("input", "target"),
        (WEIGHT,
         Option("ignore_index", -100, _int_option("ignore_index"), "int", "positional"),
         Option("reduction", "mean", _reduction, "", "positional"),
         Option("label_smoothing", 0.0, _label_smoothing, "float", "positional"), VARIANT),
        ("loss",), ("lse",), grad="cross_entropy",
    ),
)

NORMS: dict[str, RowFunction] = {f.name: f for f in NORM_ROWS}
"""Row normalization name -> row."""

TABLE: dict[str, Function | ListFunction | RowFunction] = {**FUNCTIONS, **LISTS, **NORMS}
"""Every public function's row: one tensor (:data:`FUNCTIONS`), lists (:data:`LISTS`) and
row normalizations (:data:`NORMS`)."""


def _check_norms() -> None:
    for f in NORM_ROWS:
        assert f.name not in FUNCTIONS and f.name not in LISTS, f.name
        names = (*f.inputs, *f.option_names)
        assert len(set(names)) == len(names), f.name
        assert all(o.place in ("positional", "keyword") for o in f.options), f.name


_check_norms()

__all__ += ["NORMS", "NORM_ROWS", "RowFunction", "TABLE"]

# endregion
