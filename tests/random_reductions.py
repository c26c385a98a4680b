"""Randomized differential test of the reduction API (issue 16, section 3).

A seeded generator of reduction cases, a checker, and runners: ``bulkred.<kind>`` on
torch tensors (and numpy arrays) on the GPU, and the lowered kernel in the CPU
interpreter (``bulkred_dialect.interpreter.run_grid``). Case ``i`` of seed ``s`` is drawn
from its own ``numpy.random.Generator`` (``default_rng([s, i])``), so one case repeats
alone: ``python tests/random_reductions.py --seed s --only i``.

**What a case is.** A kind (sum, prod, max, min, any, all) and an input dtype (float32,
float16, bfloat16, float64, int8, uint8, int16, int32, int64, bool); a logical shape of
rank 1 to 5 with 1s, odd and power-of-two-plus-or-minus-one sizes (at most
``max_elems`` elements, 1e5 by default; now and then a 0 extent); an axis argument
(None, an int, a tuple of distinct axes in any order, negatives allowed); keepdims;
for sum and prod sometimes ``dtype=`` (a wider accumulator and output); for max and min
sometimes ``ignore_nan=True``; sometimes ``out=`` (a poisoned array of the expected
shape and dtype, which must be returned). The input is a view: contiguous, transposed
(a permutation of the axes), stepped (``[o:e:s]`` slices), offset (a storage offset),
broadcast (stride-0 axes, ``expand``) or mixed (slices, permutation and broadcast at
once). Values: normal or small integers for float sums; ``±exp(N(0, 1/sqrt(n)))`` or
mostly ±1 for products; the full range for integers (int64 sums and products wrap the
same way everywhere: arithmetic modulo 2**64 does not depend on the order); zeros at a
random density for any and all; float inputs get a few NaNs in a third of the cases.

**Expected results (the array API / torch semantics of the issue's section 2).**
Shape: the reduced axes removed, or kept as 1 with ``keepdims``; a whole reduction is
0-d. Dtype: any/all give bool; max/min the input's dtype; sum/prod the ``dtype=``
argument when given, else the input's dtype for floats and int64 for integers and bool
(torch's rule; for uint8 the array API would say uint64, torch and the issue say int64).
A max or min over an empty axis must be refused with ``ReductionError``.

**Pass criteria**, per output element, against a reference computed in float64 (floats)
or exactly (integers, bool) by numpy from the same input:

* integers and bool: equal;
* max, min: equal (the result is one of the inputs); NaN where the reference is NaN;
* sum: ``|got - ref| <= n * eps_acc * S + eps_out * |ref| + tiny_out``, where ``n`` is
  the number of elements reduced into that output, ``S`` the sum of their magnitudes,
  ``eps_acc`` the machine epsilon of the accumulator (float32 for float16, bfloat16 and
  float32 inputs; float64 for float64 inputs or ``dtype=float64``), ``eps_out`` that of
  the output dtype (the final rounding), ``tiny_out`` its smallest subnormal. ``n * eps_acc
  * S`` bounds the error of a sum in any order (each of the n-1 additions errs by at most
  eps/2 of a partial sum, itself at most S). When every input is an integer and
  ``S < 2**p`` (p = 24 for a float32 accumulator, 53 for float64) every partial sum is
  exact in any order, and the first term is 0: those sums are checked to the last bit
  of the output's rounding, which catches a dropped or doubled element;
* prod: ``|got - ref| <= (n * eps_acc + eps_out) * |ref| + tiny_out`` (0 for the first
  term when every input is an integer and the product of magnitudes is below 2**p);
* NaN in the same places as the reference (a NaN where none is due, or none where one
  is, fails); an infinity only where the reference rounded to the output's type is that
  infinity (a float16 result that overflows), else within the bound above;
* the result's type (a torch tensor for a torch input, a numpy array for numpy), shape
  and dtype as above; ``out=`` is returned; the input is unchanged.

A case the API refuses with ``bulkred.ReductionError`` (a clean "not supported" line) is
``unsupported``, counted with its reason and never a pass; any other exception is a
failure (``crash``). The summary counts passed / failed / unsupported per (kind, dtype,
form), where the form is the case's canonical form after merging the axes that are
contiguous together and ordering them by stride: whole, inner (the fastest axes
reduced), outer, middle ([kept, reduced, kept]), multi (anything else), with
``/strided`` when the fastest axis has a stride other than 1 and ``/bcast`` for stride-0
axes.

**Fused reductions (issue 17).** With ``Config(kinds=FUSED_KINDS)`` (:func:`fused_config`,
``--fused``) the generator draws the fused functions instead: mean, var, std, var_mean
(``correction`` 0 or 1), argmax, argmin (one axis or None; small integers for ties;
NaN), vector_norm (``ord`` 1, 2, inf, -inf, 3.0) and logsumexp (values near the
dtype's largest finite value, and rows of -inf). A case of the default kinds draws
exactly what it drew before (the new draws happen only for fused kinds), so the seeds
of earlier runs repeat. References in float64 (numpy): argmax/argmin exact, torch's
rule for NaN (the first NaN's index, for argmin too); var ``M2 / max(N - correction,
0)`` (inf or NaN where that is 0); the bounds: mean ``n eps_acc mean|x|``, var
``4 n eps_acc sum(x**2) / max(N - correction, 1)``, std from var's bound through the
square root, vector_norm ``(n / |p| + 8) eps_acc |ref|`` (inf/-inf exact), logsumexp
``2 (n + 4) eps_acc`` absolute, each plus the output's rounding. Refused (a pass when
refused): integer input to a float-only function, a tuple axis or an empty axis for
argmax/argmin, an empty axis for the inf/-inf norms.

**The table's newer functions.** With :func:`table_config` (``--table``) the generator
draws amax, amin, count_nonzero, std_mean, max_with_indices, min_with_indices, nansum,
nanmean and aminmax (floats mostly; integers and bool now and then), with draws of
their own (the other configs draw what they drew before): ``dtype=`` (std_mean,
nanmean, nansum), ``correction`` (std_mean), zeros (count_nonzero), ties (the min/max
kinds), many NaNs and "mostlynan" data (nansum, nanmean). References (numpy, float64),
torch's NaN rules: nansum ignores NaN (the sum's bound; integers exact), nanmean the
mean of the non-NaN elements (all NaN: NaN), amax/amin/aminmax propagate NaN (exact),
max/min_with_indices the first index of the extreme with NaN the largest (argmax's
rule) and its value, count_nonzero counts NaN. The pairs (std_mean, aminmax,
max/min_with_indices, as var_mean) are named tuples whose results are each checked
(:data:`PAIRS`). Refused (a pass when refused): integer or bool input to std_mean or
nanmean, a tuple axis or an empty axis for max/min_with_indices, an empty reduction
for amax, amin and aminmax.

**One table.** Each function's facts come from its row (``bulkred_dialect/functions.py``:
its options, dtype rule, one axis, identity, pairs) and its entry in :data:`ROW_TESTS`
(its numpy reference, torch's function, its result dtype, its draws): no list of
function names decides anything. A case's module is the API's (:func:`case_module`:
``api.plan`` with every option the call passes, then ``api.module_of``), never built by
hand; :func:`rows_config` (``--rows``) draws every row with its options.

torch (on the GPU) runs each case too: its result's shape and dtype are compared with
the table above and its values with the same bound; a difference of torch is a note in
the summary, not a failure of bulkred (torch returns uint8 from any/all of uint8, the
one known difference).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import sys
import time
import traceback
import warnings
import dataclasses
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

ORDS = (1.0, 2.0, math.inf, -math.inf, 3.0)
FLOATS = ("float32", "float16", "bfloat16", "float64")
INTS = ("int8", "uint8", "int16", "int32", "int64")
DTYPES = FLOATS + INTS + ("bool",)
COMPLEXES = ("complex64", "complex128")
PART = {"complex64": "float32", "complex128": "float64"}
"""Complex inputs (drawn by :func:`complex_config` only) and the dtype of their parts."""
VIEWS = ("contiguous", "transpose", "step", "offset", "broadcast", "mixed")
SPECIAL_SIZES = (2, 3, 5, 7, 31, 32, 33, 63, 65, 127, 129, 255, 257, 1023, 1025, 4095, 4096, 4097, 65537)

# dtype= choices for sum and prod (a wider accumulator and output), by input dtype
DTYPE_ARGS = {
    "float16": ("float32",), "bfloat16": ("float32",), "float32": ("float64",), "float64": (),
    "int8": ("int64", "int32"), "uint8": ("int64", "int32"), "int16": ("int64", "int32"),
    "int32": ("int64",), "int64": (), "bool": ("int64",), "complex64": (), "complex128": (),
}

EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
TINY = {"float16": 2.0**-24, "bfloat16": 2.0**-133, "float32": 2.0**-149, "float64": 5e-324}
MANTISSA = {"float32": 24, "float64": 53}


# region Cases


@dataclass(frozen=True)
class Case:
    """One reduction: ``kind`` of a view of an input of ``dtype``.

    The view: ``base[slices].permute(perm).expand(shape)``, with ``base`` contiguous of
    ``base_shape``; ``slices`` has one (start, stop, step) per base axis."""

    seed: int
    index: int
    kind: str
    dtype: str
    shape: tuple[int, ...]
    axis: Any  # None, int, or tuple of ints (as passed to the API)
    keepdims: bool
    dtype_arg: str | None
    ignore_nan: bool | None
    use_out: bool
    library: str  # "torch" or "numpy": the input's type
    view: str
    base_shape: tuple[int, ...]
    slices: tuple[tuple[int, int, int], ...]
    perm: tuple[int, ...]
    expand: bool
    values: str
    nans: int
    correction: int | None = None  # var, std, var_mean
    ord: float | None = None  # vector_norm

    @property
    def fused(self) -> bool:
        """Not one of the default config's kinds (:data:`KINDS`)."""
        return self.kind not in KINDS

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def reduced(self) -> tuple[int, ...]:
        """The reduced axes, normalized and sorted."""
        if self.axis is None:
            return tuple(range(self.rank))
        axes = (self.axis,) if isinstance(self.axis, int) else self.axis
        return tuple(sorted(a % self.rank for a in axes))

    @property
    def out_shape(self) -> tuple[int, ...]:
        red = set(self.reduced)
        if self.keepdims:
            return tuple(1 if i in red else d for i, d in enumerate(self.shape))
        return tuple(d for i, d in enumerate(self.shape) if i not in red)

    @property
    def n_reduced(self) -> int:
        return math.prod(self.shape[a] for a in self.reduced)

    @property
    def out_dtype(self) -> str:
        return expected_dtype(self.kind, self.dtype, self.dtype_arg)

    @property
    def expect_refusal(self) -> bool:
        """The API must refuse the case (:func:`fused_refusal`: from its row)."""
        return fused_refusal(self) is not None

    def strides(self) -> tuple[int, ...]:
        """The view's strides in elements (what torch's ``stride()`` gives)."""
        base_strides = [math.prod(max(d, 1) for d in self.base_shape[i + 1 :]) for i in range(len(self.base_shape))]
        sliced = [s * step for s, (_, _, step) in zip(base_strides, self.slices)]
        permuted = [sliced[p] for p in self.perm]
        pre = self.pre_expand_shape()
        return tuple(0 if (self.expand and pre[i] == 1 and self.shape[i] != 1) else st for i, st in enumerate(permuted))

    def pre_expand_shape(self) -> tuple[int, ...]:
        sliced = [len(range(a, b, c)) for a, b, c in self.slices]
        return tuple(sliced[p] for p in self.perm)

    def form(self) -> str:
        return canonical_form(self.shape, self.strides(), self.reduced)

    def label(self) -> str:
        opts = [f"axis={self.axis}"]
        if self.keepdims:
            opts.append("keepdims=True")
        if self.dtype_arg:
            opts.append(f"dtype={self.dtype_arg}")
        if self.ignore_nan is not None:
            opts.append(f"ignore_nan={self.ignore_nan}")
        if self.correction is not None:
            opts.append(f"correction={self.correction}")
        if self.ord is not None:
            opts.append(f"ord={self.ord}")
        if self.use_out:
            opts.append("out=")
        return (
            f"#{self.index} {self.kind}({self.library} {self.dtype}{list(self.shape)} {self.view} "
            f"strides={list(self.strides())}, {', '.join(opts)}) values={self.values} nans={self.nans}"
        )


def row_of(kind: str):
    """The function table's row of ``kind`` (``bulkred_dialect/functions.py``)."""
    from bulkred_dialect.functions import FUNCTIONS

    return FUNCTIONS[kind]


def fused_refusal(case: Case) -> str | None:
    """Why the API must refuse ``case`` (None: it must not), from its row: an input
    dtype its rule does not take, a tuple axis or an empty axis where it takes one axis,
    an empty reduction of a kind without identity (the row's ``fill`` is None)."""
    row = row_of(case.kind)
    if case.dtype in COMPLEXES:
        if row.complex is None:
            return "a complex input"
    elif row.inputs == "float" and case.dtype not in FLOATS or row.inputs == "integer" and case.dtype in FLOATS:
        return "an integer input" if row.inputs == "float" else "a float input"
    if row.one_axis and isinstance(case.axis, tuple):
        return "a tuple axis"
    if row.one_axis and case.n_reduced == 0:
        return "an empty axis"
    build = row.complex if case.dtype in COMPLEXES else row.build
    if case.n_reduced == 0 and build(case.dtype, case_options(case, plan=True)).fill is None:
        return "an empty reduction (no identity)"
    return None


def case_options(case: Case, *, plan: bool = False, torch: Any = None) -> dict[str, Any]:
    """The options ``bulkred.<kind>`` of ``case`` takes, as the call passes them
    (:func:`call_api`): the row's options that the case draws. ``plan``: every option
    of the row, defaults filled (what ``Function.build`` takes); ``torch``: ``dtype=``
    as a torch dtype (else a numpy one)."""
    names = row_of(case.kind).option_names
    given = {"dtype": case.dtype_arg, "ignore_nan": case.ignore_nan, "correction": case.correction, "ord": case.ord}
    if plan:
        defaults = row_of(case.kind).defaults()
        return {n: given[n] if given.get(n) is not None else defaults[n] for n in names}
    out = {n: given[n] for n in names if given.get(n) is not None}
    if "dtype" in out:
        out["dtype"] = getattr(torch, case.dtype_arg) if torch is not None else np.dtype(case.dtype_arg)
    return out


def expected_dtype(kind: str, dtype: str, dtype_arg: str | None) -> str:
    """The result's dtype (of a pair: the first result's, see :func:`pair_dtypes`): the
    rule of the row's test entry (:data:`ROW_TESTS`); of a complex input, torch's: a
    complex sum, product and mean, a real variance, norm and std (the part's dtype), an
    int64 count, a bool any/all."""
    if dtype in COMPLEXES:
        if kind in ("sum", "prod", "mean", "nansum", "nanmean", "logsumexp"):
            return dtype_arg or dtype
        return {"count_nonzero": "int64", "any": "bool", "all": "bool"}.get(kind, PART[dtype])
    return ROW_TESTS[kind].result(dtype, dtype_arg)


def allowed_dtypes(case: Case) -> tuple[str, ...]:
    """The result dtypes that pass: :func:`expected_dtype`'s, and for a sum or product of
    unsigned integers without ``dtype=`` also uint64 (the array API's default unsigned
    type and numpy's; torch gives int64). The values compare equal either way (modulo
    2**64)."""
    d = case.out_dtype
    if case.kind in ("any", "all") and case.dtype == "uint8" and case.library == "torch":
        return ("uint8",)  # torch's any/all of uint8 give uint8 (results follow the input's library)
    if case.kind in ("sum", "prod", "nansum") and case.dtype_arg is None and case.dtype.startswith("uint"):
        return (d, "uint64")
    return (d,)


def canonical_form(shape, strides, reduced) -> str:
    """whole / inner / outer / middle / multi (+ /strided, /bcast): the axes of extent
    1 dropped, the rest ordered by stride, neighbours contiguous together and alike
    (both reduced or both kept) merged."""
    red = set(reduced)
    if 0 in shape:
        return "empty"
    dims = [(d, abs(st), i in red) for i, (d, st) in enumerate(zip(shape, strides)) if d != 1]
    if not any(r for _, _, r in dims):
        return "none"
    bcast = any(st == 0 for _, st, _ in dims)
    dims.sort(key=lambda t: (t[1] != 0, -t[1]))  # stride-0 (broadcast) axes count as the slowest
    merged = [list(dims[0])]
    for d, st, r in dims[1:]:
        last = merged[-1]
        if last[2] == r and last[1] == st * d:
            last[0], last[1] = last[0] * d, st
        else:
            merged.append([d, st, r])
    pattern = "".join("R" if r else "K" for _, _, r in merged)
    name = {"R": "whole", "KR": "inner", "RK": "outer", "KRK": "middle"}.get(pattern, "multi")
    if merged[-1][1] not in (0, 1):
        name += "/strided"
    if bcast:
        name += "/bcast"
    return name


@dataclass
class Config:
    """What the generator may draw."""

    max_elems: int = 100_000
    kinds: tuple[str, ...] = field(default_factory=lambda: KINDS)  # the plain rows (ROW_TESTS)
    dtypes: tuple[str, ...] = DTYPES
    views: tuple[str, ...] = VIEWS
    max_rank: int = 5
    options: bool = True  # keepdims, dtype=, ignore_nan, out=
    numpy_inputs: float = 0.1  # share of cases whose input is a numpy array
    empty: float = 0.02  # share of cases with a 0 extent
    grads: bool = False  # also check the gradient of each differentiable torch case (draws nothing more)


def pair_dtypes(case: Case) -> tuple[str, str]:
    """The dtypes of a pair's two results (:data:`PAIRS`), in the function's order."""
    return tuple(expected_dtype(k, case.dtype, case.dtype_arg) for k in PAIRS[case.kind][1])  # type: ignore[return-value]


def table_config(**kw: Any) -> Config:
    """The newer functions of the table (:data:`TABLE_KINDS`): float inputs mostly, the
    integer types and bool now and then (std_mean and nanmean refuse them)."""
    kw.setdefault("kinds", TABLE_KINDS)
    kw.setdefault("dtypes", FLOATS + FLOATS + ("int32", "int8", "uint8", "int64", "bool"))
    return Config(**kw)


def complex_config(**kw: Any) -> Config:
    """Complex inputs (complex64, complex128) of every row that takes them, against
    numpy in complex128 (:func:`complex_reference`); a numpy input now and then."""
    kw.setdefault("kinds", tuple(k for k in ROW_TESTS if row_of(k).complex is not None))
    kw.setdefault("dtypes", COMPLEXES)
    kw.setdefault("numpy_inputs", 0.2)
    return Config(**kw)


def fused_config(**kw: Any) -> Config:
    """The fused functions (issue 17): float inputs mostly, an integer one now and then
    (a refusal), not bool."""
    kw.setdefault("kinds", FUSED_KINDS)
    kw.setdefault("dtypes", FLOATS + FLOATS + ("int32", "int8"))
    return Config(**kw)


def _pick(rng: np.random.Generator, seq: Any) -> Any:
    """An element of the sequence ``seq``: the draw ``rng.choice(seq)`` makes (one
    ``rng.integers(len(seq))``, the same stream), without its conversion of ``seq`` to
    an array (the cases are drawn by the thousand)."""
    return seq[int(rng.integers(len(seq)))]


def _shape(rng: np.random.Generator, rank: int, max_elems: int) -> list[int]:
    budget = max(1, int(math.exp(rng.uniform(math.log(min(8, max_elems)), math.log(max_elems)))))
    shape = []
    for _ in range(rank):
        u = rng.random()
        if u < 0.15:
            d = 1
        elif u < 0.45:
            d = int(_pick(rng, SPECIAL_SIZES))
        else:
            d = int(math.exp(rng.uniform(0, math.log(max(2, budget)))))
            d = d | 1 if rng.random() < 0.6 else d  # mostly odd
        shape.append(max(1, d))
    while math.prod(shape) > budget:  # shrink the largest extent until it fits
        i = shape.index(max(shape))  # (np.argmax's: the first largest)
        shape[i] = max(1, shape[i] // 2 | 1) if shape[i] > 2 else 1
    return shape


def generate(seed: int, index: int, config: Config | None = None) -> Case:
    """Case ``index`` of ``seed`` (its own generator: cases do not depend on each other)."""
    c = config or Config()
    rng = np.random.default_rng([seed, index])
    kind = str(_pick(rng, c.kinds))
    dtype = str(_pick(rng, c.dtypes))
    view = str(_pick(rng, c.views))
    rank = int(rng.integers(1, c.max_rank + 1))
    if view in ("transpose", "mixed") and rank == 1 and c.max_rank > 1:
        rank = 2
    limit = c.max_elems // 4 if view in ("step", "mixed") else c.max_elems
    shape = _shape(rng, rank, limit)
    if rng.random() < c.empty:
        shape[int(rng.integers(rank))] = 0

    # the axis argument
    u = rng.random()
    if u < 0.25:
        axis: Any = None
    elif u < 0.6:
        axis = int(rng.integers(-rank, rank))
    else:
        k = int(rng.integers(1, rank + 1))
        picked = [int(a) for a in rng.permutation(rank)[:k]]
        axis = tuple(a - rank if rng.random() < 0.3 else a for a in picked)

    if row_of(kind).one_axis and isinstance(axis, tuple) and rng.random() < 0.9:
        axis = axis[0]  # one axis, as argmax takes (a tuple now and then: refused)
    reduced = range(rank) if axis is None else [a % rank for a in ((axis,) if isinstance(axis, int) else axis)]
    if all(shape[a] == 1 for a in reduced) and rng.random() < 0.85:  # mostly something to reduce
        a = int(_pick(rng, list(reduced)))
        shape[a] = int(_pick(rng, (2, 3, 5, 17, 33, 64, 129)))
        while math.prod(shape) > limit:
            i = max((j for j in range(rank) if j != a), key=lambda j: shape[j], default=a)
            if shape[i] <= 1:
                break
            shape[i] = max(1, shape[i] // 2)

    # the view: base[slices].permute(perm).expand(shape)
    perm = tuple(range(rank))
    if view in ("transpose", "mixed") and rank > 1:
        while perm == tuple(range(rank)):
            perm = tuple(int(p) for p in rng.permutation(rank))
    expand = view in ("broadcast", "mixed") and any(d > 1 for d in shape)
    pre = list(shape)
    if expand:
        cand = [i for i, d in enumerate(shape) if d > 1]
        for i in rng.permutation(cand)[: max(1, int(rng.integers(1, len(cand) + 1)))]:
            pre[int(i)] = 1
    inv = [0] * rank
    for i, p in enumerate(perm):
        inv[p] = i
    base_view_shape = [pre[inv[j]] for j in range(rank)]  # base axis j becomes view axis inv[j]
    stepped = {int(a) for a in rng.permutation(rank)[:2]} if view in ("step", "mixed") else set()
    offset = {int(a) for a in rng.permutation(rank)[:2]} if view in ("offset", "step", "mixed") else set()
    if view == "offset" and rng.random() < 0.5:
        offset = {0}  # a storage offset only: the view stays contiguous
    slices, base_shape = [], []
    for j, d in enumerate(base_view_shape):
        step = int(rng.integers(2, 4)) if j in stepped else 1
        start = int(rng.integers(1, 4)) if j in offset and (view == "offset" or rng.random() < 0.6) else 0
        if d == 0:
            slices.append((0, 0, 1))
            base_shape.append(int(rng.integers(0, 3)))
            continue
        stop = start + (d - 1) * step + 1
        base_shape.append(stop + (int(rng.integers(0, step + 1)) if j in stepped or j in offset else 0))
        slices.append((start, stop, step))
    options = c.options
    row, rt = row_of(kind), ROW_TESTS[kind]
    keepdims = bool(options and rng.random() < 0.3)
    dtype_arg = None
    if options and rt.group == "plain" and "dtype" in row.option_names and DTYPE_ARGS[dtype] and rng.random() < rt.dtype_p:
        dtype_arg = str(_pick(rng, DTYPE_ARGS[dtype]))
    takes_nan = "ignore_nan" in row.option_names
    ignore_nan = True if options and takes_nan and dtype in FLOATS and rng.random() < 0.15 else None
    use_out = bool(options and rng.random() < 0.1)
    library = "numpy" if dtype != "bfloat16" and rng.random() < c.numpy_inputs else "torch"
    # the row's own draws, after every draw the plain rows make (their cases repeat)
    correction = ord_ = None
    if rt.group != "plain":
        float_ok = dtype in FLOATS or row.inputs != "float"
        if options and rt.dtype_p and "dtype" in row.option_names and float_ok and DTYPE_ARGS[dtype] and rng.random() < rt.dtype_p:
            dtype_arg = str(_pick(rng, DTYPE_ARGS[dtype]))
        correction = int(_pick(rng, (0, 0, 1))) if "correction" in row.option_names else None
        ord_ = float(ORDS[int(rng.integers(len(ORDS)))]) if "ord" in row.option_names else None
    values = rt.values(rng, dtype)
    nans = int(rng.integers(1, 4)) if dtype in FLOATS and rng.random() < rt.nan_share else 0
    return Case(
        seed, index, kind, dtype, tuple(shape), axis, keepdims, dtype_arg, ignore_nan, use_out, library, view,
        tuple(base_shape), tuple(slices), perm, expand, values, nans, correction, ord_,
    )


def rows_config(**kw: Any) -> Config:
    """Every row of the table (:data:`ROW_TESTS`), each with the draws of its own:
    the module-equality test (tests/test_random_reductions.py) draws from it."""
    kw.setdefault("kinds", tuple(ROW_TESTS))
    return Config(**kw)


def cases(seed: int, count: int, config: Config | None = None, start: int = 0) -> list[Case]:
    return [generate(seed, i, config) for i in range(start, start + count)]


# endregion

# region Data and references


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    x = np.asarray(x, np.float32)
    b = np.ascontiguousarray(x).reshape(-1).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
    r = b.astype(np.uint32).view(np.float32).reshape(x.shape)
    return np.where(np.isnan(x), x, r)  # NaN stays NaN (its payload could round to inf)


def host_dtype(dtype: str) -> np.dtype:
    """The numpy dtype holding the case's values on the host (bfloat16: float32)."""
    return np.dtype("float32" if dtype == "bfloat16" else dtype)


def make_base(case: Case, *, draws: bool = False) -> np.ndarray:
    """The contiguous base array of the case's input (bfloat16 values held in float32).

    ``draws``: the "lognormal" values' exponents (the generator's normal draws, signed)
    in place of their ``exp``, every other step the same, the same draws in the same
    order. Every value is then the generator's draws through exact steps only (a sign,
    IEEE arithmetic, a cast, bfloat16 rounding, NaNs placed): the same bits on every CPU,
    which the digest of tests/test_random_reductions.py needs. ``np.exp`` is not: on a
    CPU with AVX-512 numpy takes its own vectorized exp, whose last bit differs from
    glibc's now and then (issue 22: 0.649701076713326 against 0.6497010767133261)."""
    rng = np.random.default_rng([case.seed, case.index, 1])
    shape, n = case.base_shape, math.prod(case.base_shape)
    red = max(case.n_reduced, 1)
    dt = case.dtype
    if dt in COMPLEXES:
        return _complex_base(case, rng, n, red, draws).reshape(shape)
    if case.values.startswith("zeros"):
        p0 = float(case.values[5:])
        nz = rng.random(n) >= p0
        if dt == "bool":
            x = nz
        elif dt in FLOATS:
            x = np.where(nz, rng.standard_normal(n) + 0.25, 0.0)
        else:
            info = np.iinfo(dt)
            x = np.where(nz, rng.integers(1, min(info.max, 100) + 1, n), 0)
    elif dt == "bool":
        x = rng.random(n) < rng.choice([0.01, 0.5, 0.99])
    elif dt in INTS:
        info = np.iinfo(dt)
        if case.values == "ones":  # products that are not mostly 0 mod 2**64
            x = rng.choice(np.array([1, -1, 1, 1, 3, -1, 2], np.int64) if info.min < 0 else np.array([1, 1, 3, 2]), n)
        else:
            x = rng.integers(info.min, info.max, n, dtype=np.int64, endpoint=True)
    elif case.values == "normal":
        x = rng.standard_normal(n)
    elif case.values == "ints":
        if case.kind == "prod":
            p2 = min(0.5, 10.0 / red)
            x = np.where(rng.random(n) < p2, 2.0, 1.0) * rng.choice([-1.0, 1.0], n)
        else:
            x = rng.integers(-8, 9, n).astype(np.float64)
    elif case.values == "lognormal":
        z = rng.normal(0.0, 1.0 / math.sqrt(red), n)
        x = (z if draws else np.exp(z)) * rng.choice([-1.0, 1.0], n)
    elif case.values == "huge":  # near the largest finite value (logsumexp: exp overflows without a shift)
        top = float(np.finfo(np.float16).max) if dt == "float16" else 3.3e38 if dt in ("float32", "bfloat16") else 1.7e308
        x = rng.uniform(0.5, 0.99, n) * top * rng.choice([-1.0, 1.0], n)
    elif case.values == "mostlynan":  # nansum/nanmean: mostly NaN (some rows all NaN)
        x = np.where(rng.random(n) < 0.8, np.nan, rng.integers(-8, 9, n).astype(np.float64))
    elif case.values == "neginf":  # -inf everywhere (logsumexp gives -inf), or with a few finite values
        x = np.full(n, -np.inf)
        if rng.random() < 0.5:
            x = np.where(rng.random(n) < 0.1, rng.standard_normal(n), x)
    else:  # pragma: no cover
        raise ValueError(case.values)
    x = np.asarray(x).astype(host_dtype(dt))
    if dt == "bfloat16":
        x = bf16_round(x)
    if case.nans and n:
        x[rng.integers(0, n, case.nans)] = np.nan
    return x.reshape(shape)


def _complex_base(case: Case, rng: np.random.Generator, n: int, red: int, draws: bool) -> np.ndarray:
    """A complex case's values: normal parts (small integers for "ints"); zeros at the
    share of a "zeros" draw (both parts 0); for a product, numbers of modulus
    ``exp(N(0, 1/n))`` at uniform angles (``draws``: the modulus' exponent and the angle
    as drawn, no exp, cos or sin), so that products neither overflow nor vanish."""
    if case.kind == "prod":
        r, t = rng.normal(0.0, 1.0 / math.sqrt(red), n), rng.uniform(0.0, 2 * math.pi, n)
        z = r + 1j * t if draws else np.exp(r) * (np.cos(t) + 1j * np.sin(t))
    elif case.values == "ints":
        z = rng.integers(-8, 9, n) + 1j * rng.integers(-8, 9, n)
    else:
        z = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    if case.kind == "logsumexp":  # parts up to about 80: exp overflows float32 without the shift; angles past 2 pi
        z = z * 20
    if case.values.startswith("zeros"):
        z = np.where(rng.random(n) < float(case.values[5:]), 0, z)
    if case.kind in ("nansum", "nanmean") and n:  # NaN in one part or both: torch drops the element
        share = 0.9 if rng.random() < 0.2 else 0.1
        nan_re, nan_im = rng.random(n) < share / 2, rng.random(n) < share / 2
        z = np.where(nan_re, np.nan, z.real) + 1j * np.where(nan_im, np.nan, z.imag)
    return np.asarray(z, np.complex128).astype(case.dtype)


def numpy_view(case: Case, base: np.ndarray) -> np.ndarray:
    v = base[tuple(slice(a, b, c) for a, b, c in case.slices)]
    v = v.transpose(case.perm)
    if case.expand:
        v = np.broadcast_to(v, case.shape)
    assert v.shape == case.shape, (v.shape, case.shape)
    return v


@dataclass
class Reference:
    value: np.ndarray  # float64 for float outputs, int64/uint64 for integers, bool
    n: int  # elements reduced into each output
    magnitude: np.ndarray | None  # sum (or product, for prod) of |x| per output, floats only
    exact: bool  # float accumulation exact in any order (integer inputs, small magnitude)
    bound: np.ndarray | None = None  # the tolerance per output element (None: :func:`bound_of`'s)
    aux: Reference | None = None  # a pair (var_mean, aminmax, ...): the second result's reference
    equal: bool = False  # the result is one of the inputs (max, argmax, ...): equal in the output's type
    product: bool = False  # :func:`bound_of`: the error relative to the result (a product), not to the magnitude


def _index_reference(case: Case, x: np.ndarray, big: bool) -> np.ndarray:
    """argmax (``big``) / argmin of ``x`` (float64 or integer host values) as torch: the
    first largest (smallest) element's index, row-major over the reduced axis (or the
    whole array for axis None); a NaN wins, the first NaN."""
    if case.axis is None:
        flat, ax = x.reshape(-1), 0
    else:
        flat, ax = x, case.axis % case.rank
    if flat.dtype.kind == "f":
        nan = np.isnan(flat)
        idx = np.argmax(flat, axis=ax) if big else np.argmin(flat, axis=ax)  # numpy: the first NaN wins too
        first_nan = np.argmax(nan, axis=ax)
        idx = np.where(np.any(nan, axis=ax), first_nan, idx)
    else:
        idx = np.argmax(flat, axis=ax) if big else np.argmin(flat, axis=ax)
    return np.asarray(idx, np.int64).reshape(case.out_shape)


def _quiet(f):
    """``f`` with numpy's warnings of NaN, inf and empty reductions silenced."""

    def run(case: Case, v: np.ndarray) -> Reference:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return f(case, v)

    run.__name__ = f.__name__
    return run


def _rounding(out: str, val: np.ndarray) -> np.ndarray:
    """The last rounding into ``out``, with its smallest subnormal."""
    return EPS[out] * np.nan_to_num(np.abs(val), nan=0.0, posinf=0.0) + TINY[out]


def _acc(out: str) -> str:
    """The accumulator of a float result: float64 for float64, else float32."""
    return "float64" if out == "float64" else "float32"


def _shaped(case: Case, a: Any) -> np.ndarray:
    return np.asarray(a, np.float64).reshape(case.out_shape)


def _truth(f):
    """any (``np.any``) / all (``np.all``) of ``x != 0``: exact."""

    @_quiet
    def ref_truth(case: Case, v: np.ndarray) -> Reference:
        return Reference(f(v != 0, axis=case.reduced).reshape(case.out_shape), case.n_reduced, None, True)

    return ref_truth


def _extreme(big: bool):
    """max (``big``) / min: one of the inputs, NaN propagating (numpy's max), or ignored
    with ``ignore_nan``; bool as any / all."""

    @_quiet
    def ref_extreme(case: Case, v: np.ndarray) -> Reference:
        ax, shape, n = case.reduced, case.out_shape, case.n_reduced
        if case.dtype == "bool":
            return Reference((np.any if big else np.all)(v, axis=ax).reshape(shape), n, None, True, equal=True)
        x = v.astype(np.float64) if case.dtype in FLOATS else v
        f = (np.nanmax if big else np.nanmin) if case.ignore_nan else (np.max if big else np.min)
        return Reference(np.asarray(f(x, axis=ax)).reshape(shape), n, None, True, equal=True)

    return ref_extreme


def _accumulate(product: bool):
    """sum / prod (``product``): float results within the bound of :func:`bound_of`
    (exact in any order where every input is an integer and the magnitude small);
    integer results exact, wrapping in the result's width."""

    @_quiet
    def ref_accumulate(case: Case, v: np.ndarray) -> Reference:
        ax, shape, n, out = case.reduced, case.out_shape, case.n_reduced, case.out_dtype
        if out not in FLOATS:
            wide = np.dtype(out)
            val = (np.prod if product else np.sum)(v.astype(wide), axis=ax, dtype=wide)
            return Reference(np.asarray(val).reshape(shape), n, None, True)
        x = v.astype(np.float64)
        f = np.prod if product else np.sum
        val, mag = f(x, axis=ax), f(np.abs(x), axis=ax)
        integral = bool(np.all(np.isnan(x) | (x == np.round(x))))
        finite_mag = np.nan_to_num(np.asarray(mag), nan=0.0)
        exact = integral and bool(np.all(finite_mag < 2.0 ** MANTISSA[_acc(out)]))
        return Reference(_shaped(case, val), n, np.asarray(mag).reshape(shape), exact, product=product)

    return ref_accumulate


def _bitwise(ufunc):
    """and / or / xor of integers: exact."""

    @_quiet
    def ref_bitwise(case: Case, v: np.ndarray) -> Reference:
        return Reference(np.asarray(ufunc.reduce(v, axis=case.reduced)).reshape(case.out_shape), case.n_reduced, None, True)

    return ref_bitwise


def _index(big: bool):
    @_quiet
    def ref_index(case: Case, v: np.ndarray) -> Reference:
        x = v.astype(np.float64) if case.dtype in FLOATS else v
        return Reference(_index_reference(case, x, big), case.n_reduced, None, True, equal=True)

    return ref_index


@_quiet
def _ref_mean(case: Case, v: np.ndarray) -> Reference:
    ax, n, out = case.reduced, case.n_reduced, case.out_dtype
    x = v.astype(np.float64)
    val = _shaped(case, np.sum(x, axis=ax) / n)
    mag = _shaped(case, np.sum(np.abs(x), axis=ax) / n)
    bound = (n + 2) * EPS[_acc(out)] * np.nan_to_num(mag, posinf=0.0) + _rounding(out, val)
    return Reference(val, n, mag, False, bound)


def _variance(root: bool):
    """var, or std (``root``): ``M2 / max(N - correction, 0)`` (inf or NaN where that is
    0), within ``4 n eps_acc sum(x**2) / max(N - correction, 1)``; std's bound through the
    square root."""

    @_quiet
    def ref_variance(case: Case, v: np.ndarray) -> Reference:
        ax, n, out = case.reduced, case.n_reduced, case.out_dtype
        acc_eps = EPS[_acc(out)]
        x = v.astype(np.float64)
        mean = np.sum(x, axis=ax, keepdims=True) / n
        m2 = np.sum((x - mean) ** 2, axis=ax)
        div = max(n - case.correction, 0)
        var = _shaped(case, m2 / div if div else np.where(np.isnan(m2) | (m2 == 0), np.nan, np.inf))
        sq = _shaped(case, np.sum(x * x, axis=ax))
        vbound = 4 * (n + 2) * acc_eps * np.nan_to_num(sq, posinf=0.0) / max(div, 1)
        if not root:
            return Reference(var, n, sq, False, vbound + _rounding(out, var))
        val = np.sqrt(var)
        lo = np.sqrt(np.maximum(var - vbound, 0.0))
        bound = np.sqrt(var + vbound) - lo + 4 * acc_eps * np.nan_to_num(val, posinf=0.0) + _rounding(out, val)
        return Reference(val, n, None, False, bound)

    return ref_variance


@_quiet
def _ref_norm(case: Case, v: np.ndarray) -> Reference:
    """``(sum |x|**p)**(1/p)`` within ``(n / |p| + 8) eps_acc |ref|``; inf / -inf exact."""
    ax, n, out, p = case.reduced, case.n_reduced, case.out_dtype, case.ord
    a = np.abs(v.astype(np.float64))
    if math.isinf(p):
        val = _shaped(case, (np.max if p > 0 else np.min)(a, axis=ax))
        return Reference(val, n, None, True, np.zeros(case.out_shape), equal=True)
    val = _shaped(case, np.sum(a**p, axis=ax) ** (1.0 / p))
    bound = (n / abs(p) + 8) * EPS[_acc(out)] * np.nan_to_num(np.abs(val), posinf=0.0) + _rounding(out, val)
    return Reference(val, n, None, False, bound)


@_quiet
def _ref_logsumexp(case: Case, v: np.ndarray) -> Reference:
    """``2 (n + 4) eps_acc`` absolute (empty or all -inf: -inf, as torch)."""
    ax, n, out = case.reduced, case.n_reduced, case.out_dtype
    acc_eps = EPS[_acc(out)]
    x = v.astype(np.float64)
    m = np.max(x, axis=ax, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(m), m, 0.0)
    val = _shaped(case, np.log(np.sum(np.exp(x - shift), axis=ax)) + shift.reshape(np.sum(x, axis=ax).shape))
    bound = 2 * (n + 4) * acc_eps + 2 * acc_eps * np.nan_to_num(np.abs(val), posinf=0.0) + _rounding(out, val)
    return Reference(val, n, None, False, bound)


def _nan_extreme(big: bool):
    """amax (``big``) / amin: exact, NaN propagating (torch's)."""

    @_quiet
    def ref_nan_extreme(case: Case, v: np.ndarray) -> Reference:
        x = v.astype(np.float64) if case.dtype in FLOATS else v
        val = np.asarray((np.max if big else np.min)(x, axis=case.reduced)).reshape(case.out_shape)
        floats = case.dtype in FLOATS
        return Reference(val, case.n_reduced, None, True, np.zeros(case.out_shape) if floats else None, equal=floats)

    return ref_nan_extreme


@_quiet
def _ref_count_nonzero(case: Case, v: np.ndarray) -> Reference:
    """Exact; NaN is nonzero."""
    return Reference(np.asarray(np.sum(v != 0, axis=case.reduced), np.int64).reshape(case.out_shape), case.n_reduced, None, True)


@_quiet
def _ref_nansum(case: Case, v: np.ndarray) -> Reference:
    """A sum with NaN as 0 (the sum's bound); integers exact, wrapping."""
    ax, shape, n, out = case.reduced, case.out_shape, case.n_reduced, case.out_dtype
    if out not in FLOATS:
        wide = np.dtype(out)
        return Reference(np.asarray(np.sum(v.astype(wide), axis=ax, dtype=wide)).reshape(shape), n, None, True)
    acc = _acc(out)
    x = v.astype(np.float64)
    val = _shaped(case, np.nansum(x, axis=ax))
    mag = _shaped(case, np.nansum(np.abs(x), axis=ax))
    finite_mag = np.nan_to_num(mag, posinf=0.0)
    integral = bool(np.all(np.isnan(x) | (x == np.round(x))))
    exact = integral and bool(np.all(finite_mag < 2.0 ** MANTISSA[acc]))
    bound = (0.0 if exact else n * EPS[acc]) * finite_mag + _rounding(out, val)
    return Reference(val, n, mag, False, bound)


@_quiet
def _ref_nanmean(case: Case, v: np.ndarray) -> Reference:
    """The mean of the non-NaN elements (NaN where there are none), the mean's bound."""
    ax, n, out = case.reduced, case.n_reduced, case.out_dtype
    x = v.astype(np.float64)
    cnt = _shaped(case, np.sum(~np.isnan(x), axis=ax))
    val = _shaped(case, np.nansum(x, axis=ax)) / cnt
    mag = _shaped(case, np.nansum(np.abs(x), axis=ax)) / np.maximum(cnt, 1.0)
    bound = (n + 2) * EPS[_acc(out)] * np.nan_to_num(mag, posinf=0.0) + _rounding(out, val)
    return Reference(val, n, mag, False, bound)


def _pair(first: str, second: str):
    """A pair's reference: each result's as the row it is checked as (``aux``: the second)."""

    def ref_pair(case: Case, v: np.ndarray) -> Reference:
        ref = reference(dataclasses.replace(case, kind=first), v)
        ref.aux = reference(dataclasses.replace(case, kind=second), v)
        return ref

    return ref_pair


def reference(case: Case, v: np.ndarray) -> Reference:
    """The expected values (shape: ``case.out_shape``) from the view ``v`` (host values):
    the reference of the case's row (:data:`ROW_TESTS`), of a complex input
    :func:`complex_reference`."""
    if case.dtype in COMPLEXES:
        return complex_reference(case, v)
    return ROW_TESTS[case.kind].reference(case, v)


@_quiet
def complex_reference(case: Case, v: np.ndarray) -> Reference:
    """numpy in complex128 (float64 for the real results), each with its bound: a sum or
    mean within ``(n + 2) eps sum|z|``, a product ``4 (n + 2) eps |ref|`` (each complex
    product's error relative to it), a variance ``8 (n + 2) eps sum|z|**2 / (N - c)``
    (std through the square root), a norm ``(n / |p| + 8) eps |ref|`` (inf, -inf: ``4 eps
    |ref|``, the modulus rounded), counts and truth exact; the pairs (var_mean, std_mean)
    with their complex mean as ``aux``."""
    ax, n, kind = case.reduced, case.n_reduced, case.kind
    out = PART[case.dtype] if case.dtype_arg is None else PART.get(case.dtype_arg, case.dtype_arg)
    eps, tiny = EPS[out], TINY[out]
    z = v.astype(np.complex128)
    shape = case.out_shape
    a = np.abs(z)
    if kind in ("count_nonzero", "any", "all"):
        nz = z != 0
        val = nz.sum(axis=ax, dtype=np.int64) if kind == "count_nonzero" else (np.any if kind == "any" else np.all)(nz, axis=ax)
        return Reference(np.asarray(val).reshape(shape), n, None, True)
    if kind in ("nansum", "nanmean"):  # an element with a NaN part is dropped (np.isnan of a complex: either)
        keep = ~np.isnan(z)
        zk = np.where(keep, z, 0)
        val = np.asarray(zk.sum(axis=ax)).reshape(shape)
        count = np.asarray(keep.sum(axis=ax)).reshape(shape)
        mag = np.asarray(np.abs(zk).sum(axis=ax)).reshape(shape)
        if kind == "nanmean":
            val = np.where(count > 0, val / np.maximum(count, 1), complex(math.nan, math.nan))
            mag = mag / np.maximum(count, 1)
        return Reference(val, n, None, False, (n + 2) * eps * mag + tiny)
    if kind == "logsumexp":  # torch's: m + log(sum(exp(z - m))), m the real parts' maximum; empty: -inf
        if not n:
            return Reference(np.full(shape, complex(-math.inf, 0.0)), n, None, False, np.zeros(shape))
        m = z.real.max(axis=ax, keepdims=True)
        t = np.exp(z - m)
        s = t.sum(axis=ax)
        val = np.asarray(np.log(s) + m.squeeze(axis=ax)).reshape(shape)
        # the sum's error relative to |s| (ex2.approx's few ulps in float32), then the log's and the angle's
        cond = np.asarray(np.abs(t).sum(axis=ax) / np.maximum(np.abs(s), 1e-300)).reshape(shape)
        return Reference(val, n, None, False, 4 * (n + 2) * eps * cond + 4 * eps * np.abs(val) + tiny)
    if kind in ("sum", "mean", "prod"):
        f = np.prod if kind == "prod" else np.sum
        val = np.asarray(f(z, axis=ax)).reshape(shape)
        if kind == "mean":
            val = val / n if n else np.full(shape, complex(math.nan, math.nan))
        if kind == "prod":
            bound = 4 * (n + 2) * eps * np.abs(val) + tiny
        else:
            bound = (n + 2) * eps * np.asarray(a.sum(axis=ax)).reshape(shape) / (n if kind == "mean" and n else 1) + tiny
        return Reference(val, n, None, False, bound)
    if kind == "vector_norm":
        p = case.ord if case.ord is not None else 2.0
        if math.isinf(p):
            val = np.asarray((np.max if p > 0 else np.min)(a, axis=ax)).reshape(shape)
            return Reference(val, n, None, False, 4 * eps * val + tiny)
        val = np.asarray(np.sum(a**p, axis=ax) ** (1.0 / p)).reshape(shape)
        return Reference(val, n, None, False, (n / abs(p) + 8) * eps * val + tiny)
    # var, std, var_mean, std_mean: torch's variance of a complex tensor, sum |z - mean|^2 / (N - c)
    mean = z.sum(axis=ax, keepdims=True) / max(n, 1)
    m2 = np.asarray((np.abs(z - mean) ** 2).sum(axis=ax)).reshape(shape)
    div = max(n - (case.correction or 0), 0)
    var = m2 / div if div else np.where(m2 == 0, np.nan, np.inf)
    vbound = 8 * (n + 2) * eps * np.asarray((a * a).sum(axis=ax)).reshape(shape) / max(div, 1)
    if kind.startswith("std"):
        val = np.sqrt(var)
        bound = np.sqrt(var + vbound) - np.sqrt(np.maximum(var - vbound, 0.0)) + 4 * eps * np.nan_to_num(val, posinf=0) + tiny
    else:
        val, bound = var, vbound + eps * np.nan_to_num(var, posinf=0) + tiny
    ref = Reference(val, n, None, False, bound)
    if kind.endswith("_mean"):
        mv = mean.reshape(shape) if n else np.full(shape, complex(math.nan, math.nan))
        ref.aux = Reference(mv, n, None, False, (n + 2) * eps * np.asarray(a.sum(axis=ax)).reshape(shape) / max(n, 1) + tiny)
    return ref


def _check_complex(case: Case, ref: Reference, got: np.ndarray) -> Outcome:
    """A complex case's result: exact for counts and truth, else each value (a complex
    one by the modulus of its error) within the reference's bound, NaN where it is NaN."""
    want = ref.value
    if got.shape != want.shape:
        return Outcome("fail", "shape", f"values of shape {got.shape}, expected {want.shape}")
    if ref.exact:
        if np.array_equal(got.astype(want.dtype), want):
            return Outcome("pass")
        i = int(np.flatnonzero(got.reshape(-1) != want.reshape(-1))[0])
        return Outcome("fail", "value", f"first at flat {i}: got {got.reshape(-1)[i]}, expected {want.reshape(-1)[i]}")
    g, w = got.astype(np.complex128).reshape(-1), want.astype(np.complex128).reshape(-1)
    gn, wn = np.isnan(g), np.isnan(w)
    if not np.array_equal(gn, wn):
        i = int(np.flatnonzero(gn != wn)[0])
        return Outcome("fail", "nan", f"NaN at flat {i}: got {g[i]}, expected {w[i]}")
    bound = np.broadcast_to(ref.bound, want.shape).reshape(-1)
    with np.errstate(invalid="ignore"):
        err = np.where(wn | (np.isinf(w) & (g == w)), 0.0, np.abs(g - w))
    over = err > bound
    if not np.any(over):
        return Outcome("pass")
    i = int(np.argmax(np.where(over, err / np.maximum(bound, 1e-300), 0)))
    return Outcome("fail", "value", f"{int(over.sum())} of {want.size} outside the bound; worst at flat {i}: got {g[i]!r}, "
                   f"expected {w[i]!r}, |err| {err[i]:.3g} > bound {bound[i]:.3g}")



# endregion

# region Checking


@dataclass
class Outcome:
    status: str  # "pass", "fail" or "unsupported"
    reason: str = ""
    detail: str = ""


def _eps_acc(case: Case) -> float:
    return EPS["float64"] if case.out_dtype == "float64" else EPS["float32"]


def check_values(case: Case, ref: Reference, got: np.ndarray) -> Outcome:
    """``got`` (host values, float64 for float outputs) against the reference."""
    if case.dtype in COMPLEXES:
        return _check_complex(case, ref, got)
    want = ref.value
    if got.shape != want.shape:
        return Outcome("fail", "shape", f"values of shape {got.shape}, expected {want.shape}")
    out = case.out_dtype
    if out not in FLOATS:
        g = got.astype(want.dtype) if got.dtype != want.dtype else got
        if np.array_equal(g, want):
            return Outcome("pass")
        bad = np.flatnonzero(g.reshape(-1) != want.reshape(-1))
        i = int(bad[0])
        return Outcome(
            "fail", "value",
            f"{len(bad)} of {want.size} wrong, first at flat {i}: got {g.reshape(-1)[i]}, expected {want.reshape(-1)[i]}",
        )
    g = got.astype(np.float64).reshape(-1)
    wf = want.reshape(-1)
    gn, wn = np.isnan(g), np.isnan(wf)
    if not np.array_equal(gn, wn):
        i = int(np.flatnonzero(gn != wn)[0])
        return Outcome(
            "fail", "nan",
            f"NaN in {int(gn.sum())} places, expected {int(wn.sum())}; first difference at flat {i}: "
            f"got {g[i]}, expected {wf[i]}",
        )
    ok = ~wn
    with np.errstate(over="ignore"):  # the reference rounded to the output's type (an overflow gives inf)
        w = bf16_round(wf.astype(np.float32)).astype(np.float64) if out == "bfloat16" else wf.astype(out).astype(np.float64)
    if np.any(ok & np.isinf(g) & (g != w)):
        i = int(np.flatnonzero(ok & np.isinf(g) & (g != w))[0])
        return Outcome("fail", "value", f"an infinity at flat {i} where the reference is {wf[i]!r} ({w[i]!r} in {out})")
    if ref.equal:  # one of the inputs: equal to the reference in the output's type
        if np.array_equal(g[ok], w[ok]):
            return Outcome("pass")
        i = int(np.flatnonzero(ok & (g != w))[0])
        return Outcome("fail", "value", f"first at flat {i}: got {g[i]!r}, expected {w[i]!r}")
    bound = np.broadcast_to(bound_of(case, ref) if ref.bound is None else ref.bound, want.shape).reshape(-1)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - wf)
    err[~ok] = 0.0
    err[np.isinf(w) & (g == w)] = 0.0  # the same infinity (an overflow of the output type)
    over = err > bound
    if not np.any(over):
        return Outcome("pass")
    i = int(np.argmax(np.where(over, err / np.maximum(bound, 1e-300), 0)))
    return Outcome("fail", "value", f"{int(over.sum())} of {want.size} outside the bound; worst at flat {i}: got {g[i]!r}, "
                   f"expected {wf[i]!r}, |err| {abs(g[i] - wf[i]):.3g} > bound {bound[i]:.3g}")


def bound_of(case: Case, ref: Reference) -> np.ndarray:
    """The tolerance per output element (the module docstring's rule)."""
    out = case.out_dtype
    eps_out, tiny = EPS[out], TINY[out]
    absref = np.nan_to_num(np.abs(ref.value), nan=0.0, posinf=0.0)
    acc = 0.0 if ref.exact else ref.n * _eps_acc(case)
    mag = np.nan_to_num(ref.magnitude, nan=0.0, posinf=0.0) if ref.magnitude is not None else 0.0
    if ref.product:
        return (acc + eps_out) * absref + tiny
    return acc * mag + eps_out * absref + tiny


def to_host(result: Any) -> tuple[np.ndarray, str]:
    """(values, dtype name) of a torch tensor or numpy array: bfloat16 as float32 values."""
    if type(result).__module__.startswith("torch"):
        name = str(result.dtype).removeprefix("torch.")
        t = result.detach()
        if name == "bfloat16":
            t = t.float()
        return t.cpu().numpy(), name
    a = np.asarray(result)
    return a, a.dtype.name


def check_result(case: Case, ref: Reference, result: Any) -> Outcome:
    """Type, shape and dtype of the API's ``result``, then its values."""
    if case.kind in PAIRS:  # a named pair (var_mean's (var, mean), ...): each result checked
        names, kinds = PAIRS[case.kind]
        if not isinstance(result, tuple) or len(result) != 2:
            return Outcome("fail", "type", f"a {type(result).__name__}, expected the pair ({', '.join(names)})")
        fields = getattr(result, "_fields", None)
        if fields is not None and tuple(fields) != names:
            return Outcome("fail", "type", f"a pair named {tuple(fields)}, expected {names}")
        for what, k, r, f in zip(names, kinds, result, (ref, ref.aux)):
            o = check_result(dataclasses.replace(case, kind=k), f, r)
            if o.status != "pass":
                return Outcome(o.status, o.reason, f"{what}: {o.detail}")
        return Outcome("pass")
    want_lib = case.library
    lib = "torch" if type(result).__module__.startswith("torch") else "numpy" if isinstance(result, np.ndarray) else None
    if lib != want_lib:
        return Outcome("fail", "type", f"a {type(result).__module__}.{type(result).__name__} for a {want_lib} input")
    got, name = to_host(result)
    if tuple(got.shape) != case.out_shape:
        return Outcome("fail", "shape", f"shape {tuple(got.shape)}, expected {case.out_shape}")
    if name not in allowed_dtypes(case):
        return Outcome("fail", "dtype", f"dtype {name}, expected {' or '.join(allowed_dtypes(case))}")
    return check_values(case, ref, got)


# endregion

# region The per-row test table: what the tests know of each row beyond the row itself


def _dims(x, axis) -> tuple[int, ...]:
    """``axis`` (the API's: None, an int or a tuple, negatives allowed) as torch dims."""
    if axis is None:
        return tuple(range(x.dim()))
    return tuple(a % x.dim() for a in ((axis,) if isinstance(axis, int) else axis))


def _flat_last(x, axis):
    """``x`` with its reduced axes moved last and flattened into one (torch's prod and
    aminmax take one dim)."""
    dims = _dims(x, axis)
    kept = [i for i in range(x.dim()) if i not in dims]
    return x.permute(*kept, *dims).reshape(*[x.shape[i] for i in kept], -1)


def _kept(r, x, axis, keepdim: bool):
    """``r`` (the kept extents) in the API's shape: 1s for the reduced axes with ``keepdim``."""
    dims = _dims(x, axis)
    shape = [1 if i in dims else d for i, d in enumerate(x.shape)] if keepdim else [d for i, d in enumerate(x.shape) if i not in dims]
    return r.reshape(shape)


def _cast(x, o):
    return x if o.get("dtype") is None else x.to(o["dtype"])


def _t_sum(torch, x, axis, keepdim, o):
    return torch.sum(x, dim=_dims(x, axis), keepdim=keepdim, **({"dtype": o["dtype"]} if o.get("dtype") else {}))


def _t_prod(torch, x, axis, keepdim, o):
    kw = {"dtype": o["dtype"]} if o.get("dtype") else {}
    return _kept(torch.prod(_flat_last(x, axis), dim=-1, **kw), x, axis, keepdim)


def _t_extreme(big: bool):
    def t_extreme(torch, x, axis, keepdim, o):
        if o.get("ignore_nan"):  # torch has no NaN-ignoring amax: NaN as the identity
            x = torch.nan_to_num(x, nan=float("-inf") if big else float("inf"), posinf=float("inf"), neginf=float("-inf"))
        return (torch.amax if big else torch.amin)(x, dim=_dims(x, axis), keepdim=keepdim)

    return t_extreme


def _t_named(name: str, *, cast: bool = False, options: tuple[str, ...] = ()):
    """``torch.<name>(x, dim=..., keepdim=..., <options>)`` (``cast``: ``dtype=`` as a
    conversion of ``x`` first)."""

    def t_named(torch, x, axis, keepdim, o):
        kw = {k: o[k] for k in options if o.get(k) is not None}
        return getattr(torch, name)(_cast(x, o) if cast else x, dim=_dims(x, axis), keepdim=keepdim, **kw)

    return t_named


def _t_count_nonzero(torch, x, axis, keepdim, o):  # torch's takes no keepdim
    return _kept(torch.count_nonzero(x, dim=_dims(x, axis)), x, axis, keepdim)


def _t_index(big: bool):
    def t_index(torch, x, axis, keepdim, o):
        fn = torch.argmax if big else torch.argmin
        if axis is None:
            r = fn(x.reshape(-1))
            return r.reshape([1] * x.dim()) if keepdim else r
        return fn(x, dim=axis, keepdim=keepdim)

    return t_index


def _t_with_indices(big: bool):
    def t_with_indices(torch, x, axis, keepdim, o):
        fn = torch.max if big else torch.min
        if axis is None:
            r = fn(x.reshape(-1), dim=0)
            return _kept(r.values, x, None, keepdim), _kept(r.indices, x, None, keepdim)
        r = fn(x, dim=axis, keepdim=keepdim)
        return r.values, r.indices

    return t_with_indices


def _t_norm(torch, x, axis, keepdim, o):
    return torch.linalg.vector_norm(_cast(x, o), ord=o.get("ord", 2), dim=_dims(x, axis), keepdim=keepdim)


def _t_aminmax(torch, x, axis, keepdim, o):
    """amin's and amax's (torch.aminmax takes one dim, and has no derivative on CUDA)."""
    dims = _dims(x, axis)
    return torch.amin(x, dim=dims, keepdim=keepdim), torch.amax(x, dim=dims, keepdim=keepdim)


def _t_nansum(torch, x, axis, keepdim, o):
    return torch.nansum(x, dim=_dims(x, axis), keepdim=keepdim, **({"dtype": o["dtype"]} if o.get("dtype") else {}))


def _values(*choice: str, p: float | None = None):
    """The data of a float case: ``choice[0]`` with probability ``p`` else ``choice[1]``
    (one draw), or one of ``choice`` (``p`` None); integer and bool inputs: "full"."""

    def draw(rng: np.random.Generator, dtype: str) -> str:
        if dtype not in FLOATS:
            return "full"
        if p is not None:
            return choice[0] if rng.random() < p else choice[1]
        return str(_pick(rng, choice))

    return draw


def _choice(*choice: str):
    """One of ``choice``, whatever the dtype (one draw)."""
    return lambda rng, dtype: str(_pick(rng, choice))


def _zeros(rng: np.random.Generator, dtype: str) -> str:
    return str(_pick(rng, ("zeros0", "zeros0.5", "zeros0.99", "zeros1")))


def _prod_values(rng: np.random.Generator, dtype: str) -> str:
    if dtype not in FLOATS:
        return "ones" if rng.random() < 0.5 else "full"
    return "lognormal" if rng.random() < 0.6 else "ints"


def _ties(rng: np.random.Generator, dtype: str) -> str:
    """Small integers (ties) or normal values, any dtype (one draw)."""
    return "ints" if rng.random() < 0.5 else "normal"


def _normal_any(rng: np.random.Generator, dtype: str) -> str:
    return "normal" if rng.random() < 0.7 else "ints"


def _nan_values(rng: np.random.Generator, dtype: str) -> str:
    return str(_pick(rng, ("normal", "normal", "ints", "mostlynan"))) if dtype in FLOATS else "normal"


def _as_x(dtype: str, dtype_arg: str | None) -> str:
    """``dtype=``, else x's."""
    return dtype_arg or dtype


def _sum_result(dtype: str, dtype_arg: str | None) -> str:
    """torch's sum: ``dtype=``, else int64 for integers and bool (uint8 too), else x's."""
    return dtype_arg or (dtype if dtype in FLOATS else "int64")


def _float_result(dtype: str, dtype_arg: str | None) -> str:
    """``dtype=``, else x's (a float), float32 for an integer x (torch's default float)."""
    return dtype_arg or (dtype if dtype in FLOATS else "float32")


def _fixed(name: str):
    return lambda dtype, dtype_arg: name


@dataclass(frozen=True)
class RowTest:
    """What the tests know of one row of ``functions.py`` that the row does not say.

    ``reference(case, v)``: the numpy reference (float64; its bound); ``torch(torch, x,
    axis, keepdim, options)``: torch's own function (None: torch has none), the random
    runner's comparison and the CPU gradient test's expected result; ``result(dtype,
    dtype_arg)``: the result's dtype (a pair: the first's); ``group``: the config that
    draws it (``plain``: :class:`Config`'s default, ``fused``: :func:`fused_config`,
    ``table``: :func:`table_config`, ``bitwise``: :func:`rows_config` only); its draws:
    ``values(rng, dtype)`` the data, ``dtype_p`` how often ``dtype=`` is drawn (where the
    row takes it), ``nan_share`` how often a float input gets NaNs; ``pair``: the rows
    its two results are checked as; ``grad_options``: the options the CPU gradient test
    runs (a differentiable row), ``grad_shift`` added to its inputs (prod: away from 0),
    ``grad_positive`` its inputs made positive (a norm of ord < 1)."""

    reference: Callable[[Case, np.ndarray], Reference]
    torch: Callable[..., Any] | None
    result: Callable[[str, str | None], str]
    group: str
    values: Callable[[np.random.Generator, str], str]
    dtype_p: float = 0.0
    nan_share: float = 0.25
    pair: tuple[str, str] | None = None
    grad_options: tuple[dict[str, Any], ...] = ({},)
    grad_shift: float = 0.0


ROW_TESTS: dict[str, RowTest] = {
    # plain (Config's default kinds, in their draw order)
    "sum": RowTest(_accumulate(False), _t_sum, _sum_result, "plain", _values("normal", "ints", p=0.6), 0.25, 0.33),
    "prod": RowTest(_accumulate(True), _t_prod, _sum_result, "plain", _prod_values, 0.25, 0.33, grad_shift=1.5),
    "max": RowTest(_extreme(True), _t_extreme(True), _as_x, "plain", _values("normal", "ints", p=0.7), 0, 0.33),
    "min": RowTest(_extreme(False), _t_extreme(False), _as_x, "plain", _values("normal", "ints", p=0.7), 0, 0.33),
    "any": RowTest(_truth(np.any), _t_named("any"), _fixed("bool"), "plain", _zeros, 0, 0.33),
    "all": RowTest(_truth(np.all), _t_named("all"), _fixed("bool"), "plain", _zeros, 0, 0.33),
    # fused (fused_config's kinds, in their draw order)
    "mean": RowTest(_ref_mean, _t_named("mean", cast=True), _as_x, "fused", _normal_any, 0.2),
    "var": RowTest(_variance(False), _t_named("var", cast=True, options=("correction",)), _as_x, "fused", _normal_any, 0.2,
                   grad_options=({"correction": 1},)),
    "std": RowTest(_variance(True), _t_named("std", cast=True, options=("correction",)), _as_x, "fused", _normal_any, 0.2,
                   grad_options=({"correction": 0},)),
    "var_mean": RowTest(_pair("var", "mean"), _t_named("var_mean", cast=True, options=("correction",)), _as_x, "fused",
                        _normal_any, 0.2, pair=("var", "mean"), grad_options=({"correction": 1},)),
    "argmax": RowTest(_index(True), _t_index(True), _fixed("int64"), "fused", _ties),
    "argmin": RowTest(_index(False), _t_index(False), _fixed("int64"), "fused", _ties),
    "vector_norm": RowTest(_ref_norm, _t_norm, _as_x, "fused", _normal_any, 0.2,
                           grad_options=tuple({"ord": p} for p in (2, 1, math.inf, 3, 1.5, 0.5))),
    "logsumexp": RowTest(_ref_logsumexp, _t_named("logsumexp"), _float_result, "fused", _choice("normal", "normal", "huge", "neginf")),
    # table (table_config's kinds, in their draw order)
    "amax": RowTest(_nan_extreme(True), _t_named("amax"), _as_x, "table", _ties),
    "amin": RowTest(_nan_extreme(False), _t_named("amin"), _as_x, "table", _ties),
    "count_nonzero": RowTest(_ref_count_nonzero, _t_count_nonzero, _fixed("int64"), "table", _zeros, nan_share=0.33),
    "std_mean": RowTest(_pair("std", "mean"), _t_named("std_mean", cast=True, options=("correction",)), _as_x, "table",
                        _normal_any, 0.2, pair=("std", "mean"), grad_options=({"correction": 1},)),
    "max_with_indices": RowTest(_pair("amax", "argmax"), _t_with_indices(True), _as_x, "table", _ties,
                                pair=("amax", "argmax")),
    "min_with_indices": RowTest(_pair("amin", "argmin"), _t_with_indices(False), _as_x, "table", _ties,
                                pair=("amin", "argmin")),
    "nansum": RowTest(_ref_nansum, _t_nansum, _sum_result, "table", _nan_values, 0.25, 0.6),
    "nanmean": RowTest(_ref_nanmean, _t_named("nanmean", cast=True), _as_x, "table", _nan_values, 0.2, 0.6),
    "aminmax": RowTest(_pair("amin", "amax"), _t_aminmax, _as_x, "table", _ties, pair=("amin", "amax")),
    # bitwise (torch has none; drawn by rows_config)
    "and_": RowTest(_bitwise(np.bitwise_and), None, _as_x, "bitwise", _values("full", "full")),
    "or_": RowTest(_bitwise(np.bitwise_or), None, _as_x, "bitwise", _values("full", "full")),
    "xor": RowTest(_bitwise(np.bitwise_xor), None, _as_x, "bitwise", _values("full", "full")),
}
"""Row name -> :class:`RowTest`. A new row of ``functions.py`` gets its entry here (its
reference, torch's function, its draws): the random differential, its interpreter run,
the CPU gradient test and the plan tests then take it (docs/DEVELOPING.md, "Add a
reduction function")."""


def kinds_of(group: str) -> tuple[str, ...]:
    return tuple(k for k, t in ROW_TESTS.items() if t.group == group)


KINDS = kinds_of("plain")
FUSED_KINDS = kinds_of("fused")
"""The fused functions (issue 17): drawn only by a config that names them (:func:`fused_config`)."""
TABLE_KINDS = kinds_of("table")
"""The newer functions of the table (functions.py): drawn only by :func:`table_config`."""
FUSED_ALL = FUSED_KINDS + TABLE_KINDS
PAIRS = {k: (row_of(k).result_names, t.pair) for k, t in ROW_TESTS.items() if t.pair is not None}
"""The functions giving a named pair: (its field names, the rows each result is checked as)."""
API_NAMES = {k: k for k in ROW_TESTS}


def simulate_plan(torch, p: Any, x) -> list:
    """The kernel of the API's plan ``p`` simulated by torch on ``x`` (of the kernel's
    shape): the op's prologue maps, its kind, its epilogue maps, as docs/fused.md
    defines them; its outputs in the kernel's order (dst, then aux), of the kernel's
    shape. It reads the plan only (no function's name): the CPU gradient test's kernel.
    A complex plan's ``x`` is complex (:func:`simulate_into` takes the parts the API
    passes): the maps of each complex element (``|z|``, ``|z|**2``, ``z != 0``; a
    complex sum, product, variance and mean, as torch's)."""
    dims = p.axes if p.axes is not None else tuple(range(x.dim()))
    inf = float("inf")
    y = x
    for m in p.prologue:
        name, arg = m if isinstance(m, tuple) else (m, None)
        if y.is_complex() and name in ("square", "nonzero", "nan_zero"):  # of each complex element
            y = {"square": lambda t: t.abs() ** 2, "nonzero": lambda t: (t != 0).to(t.real.dtype),
                 "nan_zero": lambda t: torch.where(t.isnan(), torch.zeros_like(t), t)}[name](y)
            continue
        y = {
            "cast": lambda t: t, "abs": torch.abs, "square": lambda t: t * t, "nonzero": lambda t: (t != 0).to(t.dtype),
            "nan_zero": lambda t: torch.nan_to_num(t, nan=0.0, posinf=inf, neginf=-inf), "pow": lambda t: t.abs() ** arg,
        }[name](y)
    n = math.prod(x.shape[d] for d in dims)
    flat = _flat_last(y, dims)
    kind, aux = p.kind, None
    if p.ignore_nan and kind in ("max", "min"):
        flat = torch.nan_to_num(flat, nan=-inf if kind == "max" else inf, posinf=inf, neginf=-inf)
    if kind in ("argmax", "argmin"):
        r = (torch.max if kind == "argmax" else torch.min)(flat, dim=-1)
        r, aux = r.indices, r.values
    elif kind == "var":
        r, aux = torch.var(flat, dim=-1, correction=p.correction), torch.mean(flat, dim=-1)
    elif kind == "minmax":
        r, aux = torch.amin(flat, dim=-1), torch.amax(flat, dim=-1)
    elif kind == "nanmean" and flat.is_complex():  # torch's CPU nanmean takes no complex: its definition
        keep = ~flat.isnan()
        r = torch.where(keep, flat, torch.zeros_like(flat)).sum(dim=-1) / keep.sum(dim=-1)
    else:
        r = {"sum": torch.sum, "prod": torch.prod, "max": torch.amax, "min": torch.amin, "logsumexp": torch.logsumexp,
             "nanmean": torch.nanmean, "any": torch.any, "all": torch.all}[kind](flat, dim=-1)
    for m in p.epilogue:
        name, arg = m if isinstance(m, tuple) else (m, None)
        r = {"sqrt": torch.sqrt, "div_count": lambda t: t / n, "pow": lambda t: t**arg, "log": torch.log}[name](r)
    outs = [r] if p.aux is None else [r, aux]
    return [o.reshape(p.kernel_shape) for o in outs]


def simulate_into(torch, p: Any, x, outs) -> None:
    """:func:`simulate_plan` of ``x`` as the API passes it to the kernel, written into
    ``outs`` (the kernel's outputs): a complex plan's ``x`` and complex outputs come as
    their parts (``view_as_real``, with a unit axis in front for a whole complex sum),
    turned back into complex tensors here."""
    if getattr(p, "complex", None) is not None:
        if x.dim() > len(p.shape) + 1:  # the unit axis in front (api._unit_in_front)
            x = x[0]
        x = torch.view_as_complex(x)
        if x.dtype == torch.complex32:  # float16 parts accumulate in float32 (torch's CPU has no chalf sum)
            x = x.to(torch.complex64)
        dtypes = (p.dst,) if p.aux is None else (p.dst, p.aux)  # the kernel's order
        outs = [torch.view_as_complex(o.reshape(*p.kernel_shape, 2)) if d.startswith("complex") else o
                for o, d in zip(outs, dtypes, strict=True)]
    for o, r in zip(outs, simulate_plan(torch, p, x)):
        o.copy_(r.real if not o.is_complex() and r.is_complex() else r)


def torch_reference(torch, case: Case, v):
    """torch's own reduction of the view (the row's :attr:`RowTest.torch`)."""
    fn = ROW_TESTS[case.kind].torch
    if fn is None:
        raise NotImplementedError(f"torch has no {case.kind}")
    return fn(torch, v, case.axis, case.keepdims, case_options(case, torch=torch))



# endregion

# region Running on the GPU (bulkred on torch tensors and numpy arrays; torch alongside)

def _poison(torch, shape, dtype: str, device: str = "cuda"):
    tdt = getattr(torch, dtype)
    if dtype == "bool":
        return torch.ones(shape, dtype=tdt, device=device)
    if dtype in FLOATS:
        return torch.full(shape, float("nan"), dtype=tdt, device=device)
    return torch.full(shape, 0x5A, dtype=tdt, device=device)


def _sync(torch, device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize()


def torch_view(torch, case: Case, base: np.ndarray, device: str = "cuda"):
    b = torch.from_numpy(np.ascontiguousarray(base)).to(device)
    if case.dtype == "bfloat16":
        b = b.to(torch.bfloat16)
    v = b[tuple(slice(a, e, s) for a, e, s in case.slices)].permute(case.perm)
    if case.expand:
        v = v.expand(case.shape)
    assert tuple(v.shape) == case.shape, (tuple(v.shape), case.shape)
    want = [s for s, d in zip(case.strides(), case.shape) if d > 1]
    assert [s for s, d in zip(v.stride(), case.shape) if d > 1] == want, (tuple(v.stride()), case.strides())
    return b, v


def call_api(bulkred, case: Case, x, out=None):
    """``bulkred.<kind>(x, axis=..., keepdims=..., <the row's options>, out=...)``."""
    fn = getattr(bulkred, API_NAMES[case.kind])
    kw: dict[str, Any] = {}
    if case.axis is not None:
        kw["axis"] = case.axis
    if case.keepdims:
        kw["keepdims"] = True
    torch = sys.modules["torch"] if case.library == "torch" and case.dtype_arg else None
    kw.update(case_options(case, torch=torch))
    if out is not None:
        kw["out"] = out
    return fn(x, **kw)


@dataclass
class Result:
    case: str
    index: int
    kind: str
    dtype: str
    form: str
    view: str
    library: str
    status: str
    reason: str = ""
    detail: str = ""
    torch_note: str = ""
    seconds: float = 0.0


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _grad_kinds() -> tuple[str, ...]:
    from bulkred_dialect.functions import FUNCTIONS

    return tuple(name for name, f in FUNCTIONS.items() if f.grad is not None)


GRAD_KINDS = _grad_kinds()
"""The kinds whose bulkred function is differentiable (functions.py's rows with a ``grad``)."""


def _grad_tolerance(dtype: str) -> tuple[float, float]:
    return {"float64": (1e-9, 1e-12), "float32": (2e-4, 1e-6), "float16": (2e-2, 1e-3), "bfloat16": (5e-2, 1e-2)}[dtype]


def check_grad(case: Case, bulkred: Any, torch: Any, v: Any) -> tuple[str, str, str] | None:
    """The gradient of ``bulkred.<kind>`` of the view ``v`` against torch's own (the same
    view, torch's reduction, one backward of a seeded random weighting of the results):
    ``(status, reason, detail)``, or None where the case has no gradient to check (not a
    differentiable kind, not a float torch input, a refusal, ignore_nan or dtype=)."""
    if (
        case.kind not in GRAD_KINDS or case.dtype not in FLOATS or case.library != "torch" or case.expect_refusal
        or case.ignore_nan or case.dtype_arg or math.prod(case.shape) == 0
    ):
        return None
    x1 = v.detach().requires_grad_(True)
    x2 = v.detach().requires_grad_(True)
    y1 = call_api(bulkred, case, x1)
    y2 = torch_reference(torch, case, x2)
    ys1 = y1 if isinstance(y1, tuple) else (y1,)
    ys2 = y2 if isinstance(y2, tuple) else (y2,)
    # the differentiable results: the float ones (max_with_indices' indices are not)
    floats = [i for i, y in enumerate(ys2) if y.is_floating_point()]
    ys1, ys2 = tuple(ys1[i] for i in floats), tuple(ys2[i] for i in floats)
    if not all(y.requires_grad for y in ys1):
        return ("fail", "grad", "the result does not require grad")
    g = torch.Generator(device=v.device).manual_seed(case.index)
    ws = [torch.randn(tuple(y.shape), generator=g, device=v.device, dtype=torch.float64) for y in ys2]
    sum(((a.double() * w).sum() for a, w in zip(ys1, ws)), torch.zeros((), dtype=torch.float64, device=v.device)).backward()
    sum(((a.double() * w).sum() for a, w in zip(ys2, ws)), torch.zeros((), dtype=torch.float64, device=v.device)).backward()
    g1, g2 = x1.grad, x2.grad
    if g1 is None or g2 is None or tuple(g1.shape) != tuple(g2.shape):
        return ("fail", "grad", f"gradient shapes {None if g1 is None else tuple(g1.shape)} and {None if g2 is None else tuple(g2.shape)}")
    rtol, atol = _grad_tolerance(case.dtype)
    a, b = g1.double(), g2.double()
    scale = float(b[torch.isfinite(b)].abs().max()) if bool(torch.isfinite(b).any()) else 0.0
    ok = torch.isclose(a, b, rtol=rtol, atol=atol * max(scale, 1.0), equal_nan=True)
    if bool(ok.all()):
        return ("pass", "", "")
    i = int((~ok).reshape(-1).nonzero()[0])
    return ("fail", "grad", f"{int((~ok).sum())} gradient elements differ from torch's, e.g. flat {i}: "
                            f"{float(a.reshape(-1)[i])!r} vs {float(b.reshape(-1)[i])!r}")


def run_case(case: Case, bulkred: Any, torch: Any = None, device: str = "cuda", grads: bool = False) -> Result:
    """``bulkred.<kind>`` of the case's input, checked; torch's own result (when ``torch``
    is given) noted. ``torch`` None: numpy inputs only (the CPU test of this harness)."""
    t0 = time.perf_counter()
    res = Result(case.label(), case.index, case.kind, case.dtype, case.form(), case.view, case.library, "fail")
    base = make_base(case)
    v_np = numpy_view(case, base)
    ref = None if case.expect_refusal else reference(case, v_np)  # numpy refuses it too
    b = v = keep = None
    if torch is not None:
        b, v = torch_view(torch, case, base, device)
        keep = to_host(b)[0].copy()
        # torch alongside: its shape, dtype and values against the same rule (a note only)
        try:
            if ROW_TESTS[case.kind].torch is None:
                res.torch_note = f"torch has no {case.kind}"
            else:
                tr = torch_reference(torch, case, v)
                _sync(torch, device)
                if case.expect_refusal:
                    res.torch_note = f"torch did not refuse {fused_refusal(case)}"
                elif ref is not None:
                    o = check_result(dataclasses.replace(case, library="torch"), ref, tr)
                    if o.status != "pass":
                        res.torch_note = f"torch outside the rule: {o.reason}: {o.detail}"
        except Exception as e:  # noqa: BLE001 - a note about torch, not about bulkred
            if not case.expect_refusal:
                res.torch_note = f"torch raised {type(e).__name__}: {_first_line(e)[:120]}"
    elif case.library == "torch":
        raise ValueError(f"case {case.index} takes a torch input: pass torch")
    x = v if case.library == "torch" else v_np
    out = None
    if case.use_out and not case.expect_refusal:
        for dt in pair_dtypes(case) if case.kind in PAIRS else (case.out_dtype,):  # a pair: (var, mean), ...
            if case.library == "torch":
                o = _poison(torch, case.out_shape, dt, device)
            else:
                o = np.full(case.out_shape, np.nan if dt in FLOATS else 0x5A, np.dtype(dt))
            out = o if out is None else (out, o)
    try:
        r = call_api(bulkred, case, x, out)
        if case.library == "torch":
            _sync(torch, device)
    except bulkred.ReductionError as e:
        if case.expect_refusal:
            res.status, res.reason = "pass", "refused as expected"
        else:
            res.status, res.reason = "unsupported", _first_line(e)
        res.seconds = time.perf_counter() - t0
        return res
    except Exception as e:  # noqa: BLE001 - a crash is a failure, reported with its type
        res.status, res.reason = "fail", "crash"
        res.detail = f"{type(e).__name__}: {_first_line(e)}"
        res.seconds = time.perf_counter() - t0
        return res
    if case.expect_refusal:
        res.reason = "no refusal"
        res.detail = f"{fused_refusal(case)}: a result"
    elif out is not None and r is not out:
        res.reason, res.detail = "out", "out= was not returned"
    else:
        o = check_result(case, ref, r)
        res.status, res.reason, res.detail = o.status, o.reason, o.detail
    if res.status == "pass" and b is not None and not _same(to_host(b)[0], keep):
        res.status, res.reason, res.detail = "fail", "input", "the input changed"
    if res.status == "pass" and case.library == "numpy" and not _same(base, make_base(case)):
        res.status, res.reason, res.detail = "fail", "input", "the numpy input changed"
    if res.status == "pass" and grads and torch is not None:
        checked = check_grad(case, bulkred, torch, v)
        if checked is not None:
            res.status, res.reason, res.detail = checked
            res.torch_note = (res.torch_note + "; " if res.torch_note else "") + "gradient checked"
    res.seconds = time.perf_counter() - t0
    return res


def _first_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return (s[0] if s else type(e).__name__)[:300]


def run_cases_gpu(
    seed: int, indices: list[int], config: Config | None = None, progress: bool = False, api: Any = None,
    device: str = "cuda",
) -> list[dict]:
    """The cases on the GPU through ``bulkred_dialect`` (``api``: another module with the
    same functions, e.g. a numpy model on the CPU to test this harness; ``device``: cpu)."""
    import torch

    if api is None:
        import bulkred_dialect as api
    if device != "cpu":
        torch.cuda.init()
    results = []
    for n, i in enumerate(indices):
        case = generate(seed, i, config)
        try:
            r = run_case(case, api, torch, device, grads=bool(getattr(config, "grads", False)))
        except Exception as e:  # noqa: BLE001 - the harness itself failed on this case
            r = Result(case.label(), i, case.kind, case.dtype, case.form(), case.view, case.library, "fail", "harness",
                       f"{type(e).__name__}: {_first_line(e)} | {traceback.format_exc(limit=3)!r:.400}")
        results.append(asdict(r))
        if r.status == "fail" and device != "cpu" and not _cuda_alive(torch):
            # a fault (an illegal address ...) ends the CUDA context: the rest of this
            # chunk cannot run here, and this case is the one that broke it
            results[-1]["detail"] += " [the CUDA context was lost after this case]"
            for j in indices[n + 1 :]:
                c = generate(seed, j, config)
                results.append(asdict(Result(c.label(), j, c.kind, c.dtype, c.form(), c.view, c.library, "fail",
                                             "not run", f"the CUDA context was lost at case #{i}")))
            break
        if progress and len(results) % 100 == 0:
            print(f"  worker: {len(results)} of {len(indices)} cases", flush=True)
    return results


def _cuda_alive(torch) -> bool:
    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
        return True
    except Exception:  # noqa: BLE001 - any error here means the context is gone
        return False


def _worker(args):
    seed, indices, config = args
    return run_cases_gpu(seed, indices, config)


def run_parallel(
    seed: int, count: int, jobs: int, config: Config | None = None, start: int = 0, timeout_s: float | None = None,
) -> list[dict]:
    """The cases in ``jobs`` processes (compiling a new kernel is CPU work: one process
    per core keeps the GPU fed), in interleaved chunks, a fresh process each. After ``timeout_s`` seconds the
    workers are killed and every case not reported is a failure (``timeout``): a kernel
    that never ends costs its chunk, not the run."""
    indices = list(range(start, start + count))
    if jobs <= 1 and timeout_s is None:
        return run_cases_gpu(seed, indices, config, progress=True)
    import concurrent.futures as cf
    import multiprocessing as mp

    nchunks = max(1, min(len(indices), jobs * 3))
    chunks = [indices[k::nchunks] for k in range(nchunks)]
    # a fresh process per chunk: a CUDA fault in one chunk cannot spoil the next
    ex = cf.ProcessPoolExecutor(max(1, jobs), mp_context=mp.get_context("spawn"), max_tasks_per_child=1)
    futures = {ex.submit(_worker, (seed, chunk, config)): chunk for chunk in chunks}
    done, pending = cf.wait(futures, timeout=timeout_s)
    out: list[dict] = []
    for f in done:
        try:
            out += f.result()
        except Exception as e:  # noqa: BLE001 - a worker that died (a CUDA fault ends the process)
            out += _not_run(seed, futures[f], config, "worker", f"{type(e).__name__}: {_first_line(e)}")
    for f in pending:
        out += _not_run(seed, futures[f], config, "timeout", f"not finished within {timeout_s} s (workers killed)")
    if pending:
        for proc in list(getattr(ex, "_processes", {}).values()):
            proc.kill()
    ex.shutdown(wait=not pending, cancel_futures=True)
    return sorted(out, key=lambda r: r["index"])


def _not_run(seed: int, chunk: list[int], config: Config | None, reason: str, detail: str) -> list[dict]:
    rows = []
    for i in chunk:
        c = generate(seed, i, config)
        rows.append(asdict(Result(c.label(), i, c.kind, c.dtype, c.form(), c.view, c.library, "fail", reason, detail)))
    return rows


# endregion

# region Running in the CPU interpreter


def interpreter_config(
    fused: bool = False, views: tuple[str, ...] = ("contiguous",), table: bool = False, rows: bool = False,
) -> Config:
    """Small cases for the CPU interpreter (a Python thread per GPU thread); ``fused``:
    of the fused functions; ``table``: of the table's newer functions; ``views``: the views drawn (contiguous by default, the draws
    of earlier runs; ``("transpose",)``: permuted views, which the module reads in place
    through their strides, analyzed in stride order by the dispatch); ``rows``: every
    row of the table, with its options."""
    kw: dict[str, Any] = {"max_elems": 300, "views": views, "max_rank": 3, "options": False, "numpy_inputs": 0.0, "empty": 0.0}
    if rows:
        return rows_config(**{**kw, "options": True})
    if table:
        return table_config(**kw)
    return fused_config(**kw) if fused else Config(**kw)


def module_strides(case: Case) -> tuple[int, ...] | None:
    """The element strides of the case's view as the API passes them to its module
    (extent-1 axes as 0), or None where the view is dense and row-major (a copy or a
    storage offset reads the same)."""
    strides, want = case.strides(), 1
    for d, s in zip(reversed(case.shape), reversed(strides)):
        if d != 1 and s != want:
            return tuple(0 if d == 1 else int(s) for d, s in zip(case.shape, strides))
        want *= d
    return None


def interpreter_input(case: Case, base: np.ndarray) -> tuple[np.ndarray, tuple[int, ...] | None]:
    """The kernel's ``x`` for the interpreter (bfloat16 as its bits in uint16) and the
    strides of its module (:func:`module_strides`): a dense copy, or the view itself
    (of the base's bits), read in place."""
    strides = module_strides(case)
    if strides is None:
        return _to_bits(numpy_view(case, base), case.dtype), None
    return numpy_view(case, _to_bits(base, case.dtype)), strides


def case_plan(case: Case, library: str | None = None):
    """The API's plan of the case: ``api.plan`` with the arguments ``bulkred.<kind>``
    of :func:`call_api` passes (axis, keepdims, the options, ``out=``'s dtypes), as the
    public call plans it. Raises ``api.ReductionError`` where the API refuses it."""
    import inspect

    from bulkred_dialect import api

    options = case_options(case)
    dtype = options.pop("dtype", None)
    out_dtype = None
    if case.use_out and not case.expect_refusal:
        out_dtype = pair_dtypes(case) if case.kind in PAIRS else case.out_dtype
    if "library" in inspect.signature(api.plan).parameters:  # the input library's rules (torch's, numpy's)
        options["library"] = library or case.library
    return api.plan(case.kind, case.shape, case.dtype, case.axis, case.keepdims, dtype, out_dtype=out_dtype, **options)


def case_module(case: Case, p: Any = None):
    """The module the API builds for the case (``api.module_of`` of :func:`case_plan`,
    read in place through the view's strides where the view is not dense, as the call
    path does with a device array's strides): never built by hand, so every option of
    the row reaches the kernel."""
    from bulkred_dialect import api

    p = case_plan(case) if p is None else p
    strides = module_strides(case)
    if strides is not None and p.launches:
        p = dataclasses.replace(p, strides=strides)
    return api.module_of(p)


def run_case_interpreter(case: Case, target: str = "sm_90a", max_threads: int = 1024) -> Outcome:
    """The API's module of the case (:func:`case_module`: its plan, every option the
    case draws), lowered by ``lower-tile-reductions`` and run by
    ``interpreter.run_grid`` on the input (a view read in place through its strides,
    :func:`interpreter_input`), against the row's reference. A refusal the case expects
    passes; ``skip`` (status) where there is no kernel or the interpreter cannot run it,
    ``unsupported`` where the API or the lowering refuses it (its first line)."""
    from bulkred_dialect import api
    from bulkred_dialect.backend_ptx.runtime import lower_tile_module
    from bulkred_dialect.errors import BulkredError, InterpretError
    from bulkred_dialect.interpreter import run_grid
    from bulkred_dialect.ops import dtypes as D
    from bulkred_dialect.ops.kernel_attrs import ZERO_INIT_ATTR
    from bulkred_dialect.ops.tile import kernel_launch

    try:
        p = case_plan(case)
    except api.ReductionError as e:
        if case.expect_refusal:
            return Outcome("pass", "refused as expected")
        return Outcome("unsupported", _first_line(e))
    if case.expect_refusal:
        return Outcome("fail", "no refusal", f"{fused_refusal(case)}: planned {p}")
    if not p.launches:
        return Outcome("skip", "no kernel (an empty reduction or result)")
    base = make_base(case)
    x, _ = interpreter_input(case, base)
    try:
        m = case_module(case, p)
        lower_tile_module(m, target, pipeline=f"lower-tile-reductions{{target={target}}}")
    except BulkredError as e:
        return Outcome("unsupported", _first_line(e))
    f = next(o for o in m.walk() if o.name == "func.func")
    launch = kernel_launch(f)
    if launch is not None and math.prod(launch.grid_dims) * math.prod(launch.block_dims) > max_threads:
        return Outcome("skip", f"{math.prod(launch.grid_dims) * math.prod(launch.block_dims)} threads: too many to interpret")
    types = f.function_type.inputs.data
    n_out = 2 if p.aux else 1
    zero = {a.value.data for a in f.attributes[ZERO_INIT_ATTR].data} if ZERO_INIT_ATTR in f.attributes else set()
    arrays = [x]
    for i in range(1, 1 + n_out):
        t = types[i]
        dt = D.of_ir(t.element_type)
        a = np.zeros(t.get_shape(), np.dtype(dt.numpy)) if i in zero else np.full(t.get_shape(), 0x5A, np.dtype(dt.numpy))
        if i not in zero and dt.is_float and dt.name != "bfloat16":
            a[...] = np.nan
        arrays.append(a)
    arrays += [np.zeros(t.get_shape(), np.uint8) for t in types[1 + n_out :]]
    try:
        _, *got = run_grid(m, p.kernel_name, *arrays)
    except InterpretError as e:
        return Outcome("skip", f"interpreter: {_first_line(e)}")
    values = []
    for i, g in enumerate(got[:n_out]):
        if D.of_ir(types[1 + i].element_type).name == "bfloat16":
            g = (g.astype(np.uint32) << 16).view(np.float32)
        values.append(np.asarray(g).reshape(case.out_shape))
    if p.outputs[0] not in allowed_dtypes(case):
        return Outcome("fail", "dtype", f"the plan's result is {p.outputs[0]}, expected {' or '.join(allowed_dtypes(case))}")
    ref = reference(case, numpy_view(case, base))
    if case.kind not in PAIRS:
        return check_values(case, ref, values[0])
    if n_out != 2:
        return Outcome("fail", "type", f"the plan of {case.kind} has one output, expected a pair")
    names, kinds = PAIRS[case.kind]
    pair = (values[1], values[0]) if row_of(case.kind).aux_first else (values[0], values[1])  # the op's (dst, aux)
    for what, k, r, g in zip(names, kinds, (ref, ref.aux), pair):
        o = check_values(dataclasses.replace(case, kind=k), r, g)
        if o.status != "pass":
            o.detail = f"{what}: {o.detail}"
            return o
    return Outcome("pass")


def _to_bits(x: np.ndarray, dtype: str) -> np.ndarray:
    """Host values as the interpreter's buffer (bfloat16: its bits in uint16)."""
    if dtype == "bfloat16":
        return (np.ascontiguousarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return np.ascontiguousarray(x)



# endregion

# region Summary


def summarize(results: list[dict], seed: int) -> tuple[str, bool]:
    """The report (text) and whether every case passed or was unsupported."""
    cnt = collections.Counter(r["status"] for r in results)
    lines = [
        (f"random reductions: seed {seed}, {len(results)} cases: {cnt['pass']} passed, {cnt['fail']} failed, "
        f"{cnt['unsupported']} unsupported"),
        "",
    ]

    def table(title, key):
        groups: dict[Any, collections.Counter] = collections.defaultdict(collections.Counter)
        for r in results:
            groups[key(r)][r["status"]] += 1
        lines.append(f"{title:40} {'passed':>7} {'failed':>7} {'unsupp':>7}")
        for k in sorted(groups, key=str):
            c = groups[k]
            name = " ".join(map(str, k)) if isinstance(k, tuple) else str(k)
            lines.append(f"{name:40} {c['pass']:7} {c['fail']:7} {c['unsupported']:7}")
        lines.append("")

    table("kind", lambda r: r["kind"])
    table("dtype", lambda r: r["dtype"])
    table("form", lambda r: r["form"])
    table("view", lambda r: r["view"])
    table("kind dtype form", lambda r: (r["kind"], r["dtype"], r["form"]))
    fails = [r for r in results if r["status"] == "fail"]
    if fails:
        reasons = collections.Counter(f"{r['reason']}: {r['detail'][:90]}" if r["reason"] == "crash" else r["reason"]
                                      for r in fails)
        lines.append("failures by reason:")
        lines += [f"  {n:5}  {why}" for why, n in reasons.most_common(20)]
        lines.append(f"failures (first 40 of {len(fails)}; repeat one: --seed {seed} --only INDEX):")
        for r in fails[:40]:
            lines.append(f"  {r['case']}\n      {r['reason']}: {r['detail']}")
        lines.append("")
    uns = collections.Counter(re.sub(r"^bulkred\.\w+: ", "", r["reason"]) for r in results if r["status"] == "unsupported")
    if uns:
        lines.append(f"unsupported, by reason ({len(uns)} distinct; 'bulkred.<kind>: ' left out):")
        lines += [f"  {n:5}  {why}" for why, n in uns.most_common(25)]
        lines.append("")
    notes = collections.Counter(r["torch_note"][:100] for r in results if r.get("torch_note"))
    if notes:
        lines.append("torch against the same rule (notes, not failures):")
        lines += [f"  {n:5}  {why}" for why, n in notes.most_common(12)]
        lines.append("")
    secs = sum(r.get("seconds", 0.0) for r in results)
    lines.append(f"case time (summed over workers): {secs:.1f} s")
    lines.append(
        f"random reductions: seed {seed}, {len(results)} cases: {cnt['pass']} passed, {cnt['fail']} failed, "
        f"{cnt['unsupported']} unsupported"
    )
    return "\n".join(lines), cnt["fail"] == 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Randomized differential test of bulkred's reductions against numpy/torch.")
    p.add_argument("--seed", type=int, default=None, help="default: drawn from the clock, and printed")
    p.add_argument("--count", type=int, default=2000)
    p.add_argument("--start", type=int, default=0, help="first case index")
    p.add_argument("--only", type=int, nargs="*", help="run just these case indices (verbose)")
    p.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), help="worker processes")
    p.add_argument("--out", default=None, help="directory for random_reductions.{txt,json}")
    p.add_argument("--timeout", type=float, default=None, help="seconds before the workers are killed")
    p.add_argument("--list", action="store_true", help="print the cases, run nothing (no GPU needed)")
    p.add_argument("--interpreter", action="store_true", help="run small cases in the CPU interpreter instead")
    p.add_argument("--fused", action="store_true", help="the fused functions (mean, var, argmax, ...) instead")
    p.add_argument("--table", action="store_true", help="the table's newer functions (amax, nansum, aminmax, ...) instead")
    p.add_argument("--rows", action="store_true", help="every row of the function table, with its options")
    p.add_argument("--complex", action="store_true", help="complex64 and complex128 inputs of every row that takes them")
    p.add_argument("--grads", action="store_true", help="also check each differentiable torch case's gradient against torch's")
    p.add_argument("--views", default="contiguous", help=f"with --interpreter: the views to draw, comma-separated, of {', '.join(VIEWS)}")
    a = p.parse_args(argv)
    config = (complex_config() if a.complex else rows_config() if a.rows else table_config() if a.table
              else fused_config() if a.fused else None)
    if a.grads:
        config = config or Config()
        config.grads = True
    seed = a.seed if a.seed is not None else int(time.time()) % 1_000_000
    print(f"random reductions: seed {seed}", flush=True)
    if a.list:
        for i in a.only if a.only else range(a.start, a.start + a.count):
            c = generate(seed, i, config)
            print(c.label(), c.form())
        return 0
    t0 = time.time()
    if a.interpreter:
        cfg = interpreter_config(a.fused, tuple(v.strip() for v in a.views.split(",") if v.strip()), table=a.table, rows=a.rows)
        results = []
        for i in a.only if a.only else range(a.start, a.start + a.count):
            c = generate(seed, i, cfg)
            o = run_case_interpreter(c)
            print(f"{o.status:12} {c.label()} {o.reason} {o.detail}", flush=True)
            results.append({"case": c.label(), "index": i, "kind": c.kind, "dtype": c.dtype, "form": c.form(), "view": c.view,
                                "library": "interpreter", "status": o.status if o.status != "skip" else "unsupported",
                                "reason": o.reason, "detail": o.detail})
    elif a.only:
        results = run_cases_gpu(seed, list(a.only), config)
        for r in results:
            print(json.dumps(r, indent=1))
    else:
        results = run_parallel(seed, a.count, a.jobs, config, start=a.start, timeout_s=a.timeout)
    text, ok = summarize(results, seed)
    text += f"\nwall time: {time.time() - t0:.1f} s"
    print(text, flush=True)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "random_reductions.txt"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(a.out, "random_reductions.json"), "w") as f:
            json.dump({"seed": seed, "count": len(results), "results": results}, f)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
