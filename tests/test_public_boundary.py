"""The public boundary, swept: every public function, given bad arguments, either works or
raises a project error (``bulkred_dialect.errors.BulkredError``) of one non-empty line.

``ENTRIES`` below is the explicit list of what is covered. Each entry is a public
callable with a valid call (positional and keyword arguments); the sweep replaces each
argument in turn by each value of ``BAD`` (the others kept valid) and calls it on the
CPU. Whatever it raises must be a ``BulkredError`` whose message is one line; a call
that works is fine (``None`` is a valid ``target``, ``42`` a valid ``rank``). Functions
that need a GPU raise ``NoGpuError`` (a ``LaunchError``) here, which is fine too.

The builder's functions are swept twice: inside a ``with T.kernel(...)`` block (each call
in a fresh kernel, its buffers from that kernel) and outside any (the buffers from a
closed kernel). ``test_the_sweep_can_fail`` checks that the sweep flags a function
that leaks an AttributeError.

The reductions (``bulkred.<name>``, one per row of ``functions.FUNCTIONS``) have a sweep
of their own, stricter (the last region): every argument of each signature, a list of
values per kind of argument, the message's ``bulkred.<name>: `` prefix, values that
must be refused, and two runs (as installed, and with the target pretended and the
kernels compiled) that must refuse in the same words.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api, compiler
from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx import assemble, printer, runtime
from bulkred_dialect.errors import BulkredError
from bulkred_dialect.functions import LISTS as LIST_FUNCTIONS
from bulkred_dialect.functions import FUNCTIONS
from bulkred_dialect.interpreter import run_grid, run_kernel
from bulkred_dialect.ops import dtypes
from bulkred_dialect.passes.lower_tile_reductions import LowerTileReductionsPass

ROOT = Path(__file__).resolve().parents[1]
SEED = (ROOT / "examples" / "seed_sum32.mlir").read_text()
PTX = ".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n"

BAD: list[tuple[str, Any]] = [
    ("None", None),
    ("42", 42),
    ("garbage", "garbage"),
    ("bytes", b"\xff\xfe"),
    ("list", [1]),
    ("object", object()),
    ("nan", math.nan),
    ("negative", -3),
]


# region Valid arguments


# Each call of the sweep gets a fresh valid module (a call may lower it in place): a
# clone of the one parsed (and lowered) once, equal to it in text and locations, not a
# parse and lowering per call (some 250 of them, most of the calls replacing another
# argument).
@functools.cache
def _parsed_seed():
    return runtime.parse(SEED, "seed_sum32.mlir")


@functools.cache
def _lowered_seed(level: int):
    if level == 3:
        return runtime.lower_tile_module(_seed(), "sm_90a")
    m = _seed()
    LowerTileReductionsPass().apply(T.context(), m)
    return m


def _seed():
    return _parsed_seed().clone()


def _level2():
    return _lowered_seed(2).clone()


def _level3():
    return _lowered_seed(3).clone()


def _list():
    """A valid list for the list functions but for its device."""
    try:
        import torch
    except ImportError:
        return [np.ones(3, np.float32), np.ones((2, 2), np.float32)]
    return [torch.ones(3), torch.ones(2, 2, dtype=torch.bfloat16)]


def _one_of(value: float):
    try:
        import torch
    except ImportError:
        return np.full(1, value, np.float32)
    return torch.full((1,), value)


def _seed_arrays():
    return np.arange(32, dtype=np.float32), np.zeros(1, np.float32)


def _sig():
    return runtime.KernelSignature.of("k", ("x", "f32", (4,)))


def _compiled():
    return runtime.compile_ptx(PTX, "sm_90a", assemble_now=False)


def _func_op():
    return next(iter(_seed().ops))


class Buffers:
    """Valid builder arguments of one kernel (``grid=[2], block=[32], cluster=[2]``)."""

    def __init__(self, k: T.Kernel):
        self.k = k
        self.A = k.param("A", [4], "float32")
        self.G = k.param("G", [64], "float32")
        self.X2 = k.param("X2", [2, 4], "float32")  # rows, for T.normalize_rows
        self.Y2 = k.param("Y2", [2, 4], "float32")
        self.loc = T.alloc_buffer([4], "float32", name="loc")
        self.one = T.alloc_buffer([1], "float32", name="one")
        self.tile = T.alloc_shared([64], "float32", name="tile")
        self.mbar = T.alloc_mbarrier(name="mbar")
        self.tid = T.thread_id()


def _open_kernel() -> Iterator[Buffers]:
    with T.kernel("k", grid=[2], block=[32], cluster=[2]) as k:
        yield Buffers(k)


def _closed_kernel() -> Iterator[Buffers]:
    with T.kernel("k", grid=[2], block=[32], cluster=[2]) as k:
        b = Buffers(k)
    yield b


DONE = next(_closed_kernel())  # a closed kernel, for T.module inside another kernel

# endregion


@dataclass
class Entry:
    """A public callable and its valid call: ``valid(b)`` gives ``(args, kwargs)`` (``b``
    the kernel's buffers for the builder's entries, None for the others)."""

    name: str
    fn: Callable[..., Any] | Callable[[Any], Callable[..., Any]]
    valid: Callable[[Any], tuple[tuple, dict]] = lambda b: ((), {})
    bound: bool = False  # fn(b) gives the callable (a method of the kernel)
    keys: list[str] = field(default_factory=list)


def _e(name, fn, valid=lambda b: ((), {}), bound=False) -> Entry:
    return Entry(name, fn, valid, bound)


_REDUCE_KW = {"scope": "thread", "axes": None, "accum": False, "deterministic": False, "variant": "local"}

BUILDER: list[Entry] = [
    _e("T.kernel", T.kernel, lambda b: (("k2",), {"grid": [2], "block": [32], "cluster": [2]})),
    _e("k.param", lambda b: b.k.param, lambda b: (("P", [4], "float32"), {}), bound=True),
    _e("k.module", lambda b: b.k.module, lambda b: ((), {"target": "sm_90a"}), bound=True),
    _e("T.module", T.module, lambda b: ((DONE.k,), {"target": "sm_90a"})),
    _e("T.context", T.context),
    _e("T.dtype_of", T.dtype_of, lambda b: (("float32",), {})),
    _e("T.alloc_buffer", T.alloc_buffer, lambda b: (([4], "float32", "local"), {"name": "buf"})),
    _e("T.alloc_shared", T.alloc_shared, lambda b: (([4], "float32"), {"name": "sh"})),
    _e("T.alloc_mbarrier", T.alloc_mbarrier, lambda b: ((), {"name": "mb"})),
    _e("T.copy", T.copy, lambda b: ((b.A, b.loc), {})),
    _e("T.reduce", T.reduce, lambda b: (("sum", b.one, b.loc), dict(_REDUCE_KW))),
    _e("T.sum", T.sum, lambda b: ((b.one, b.loc), dict(_REDUCE_KW))),
    _e("T.max", T.max, lambda b: ((b.one, b.loc), dict(_REDUCE_KW))),
    _e("T.min", T.min, lambda b: ((b.one, b.loc), dict(_REDUCE_KW))),
    _e("T.reduce_list", T.reduce_list,
       lambda b: (("sum", b.G, b.G, b.A), {"prologue": ["square"], "epilogue": ["sqrt"], "scale": None, "flag": None})),
    _e("T.scale_list", T.scale_list, lambda b: ((b.G, b.A), {"clip_by": None})),
    _e("T.normalize_rows", T.normalize_rows, lambda b: (("softmax", b.X2, b.Y2), {"eps": None, "variant": None})),
    _e("T.bulk_copy", T.bulk_copy, lambda b: ((b.G, b.tile), {"mbar": b.mbar, "multicast": None, "rank": None})),
    _e("T.bulk_reduce", T.bulk_reduce, lambda b: (("sum", b.tile, b.G), {"mbar": None, "rank": None})),
    _e("T.thread_id", T.thread_id, lambda b: (("x",), {})),
    _e("T.block_id", T.block_id, lambda b: (("y",), {})),
    _e("T.block_dim", T.block_dim, lambda b: (("z",), {})),
    _e("T.grid_dim", T.grid_dim, lambda b: (("x",), {})),
    _e("T.lane_id", T.lane_id),
    _e("T.cluster_rank", T.cluster_rank),
    _e("T.cluster_size", T.cluster_size),
    *[
        _e(f"T.{f.__name__}", f, lambda b: ((b.tid, 4), {}))
        for f in (T.add, T.sub, T.mul, T.div, T.rem, T.min_of, T.max_of)
    ],
    _e("T.serial", T.serial, lambda b: ((0, 8), {"step": 1})),
    _e("T.view", T.view, lambda b: ((b.A, [0], [2]), {})),
]

OTHERS: list[Entry] = [
    # runtime.__all__'s callables (the exception classes left out)
    _e("runtime.parse", runtime.parse, lambda b: ((SEED, "seed.mlir"), {})),
    _e("compiler.parse", compiler.parse, lambda b: ((SEED,), {})),
    _e("runtime.context", runtime.context),
    _e("runtime.compile_tile_module", runtime.compile_tile_module,
       lambda b: ((_seed(), "sm_90a", None), {})),
    _e("runtime.lower_tile_module", runtime.lower_tile_module,
       lambda b: ((_seed(), "sm_90a", None), {"verify_each": False})),
    _e("runtime.compile_module", runtime.compile_module, lambda b: ((_level3(), "sm_90a", None), {})),
    _e("runtime.compile_ptx", runtime.compile_ptx, lambda b: ((PTX, "sm_90a", None), {"assemble_now": False})),
    _e("CompiledModule.kernel", lambda b: _compiled().kernel, lambda b: (("k",), {}), bound=True),
    _e("CompiledModule.assemble", lambda b: _compiled().assemble, lambda b: (("sm_90a",), {}), bound=True),
    _e("CompiledModule.launch", lambda b: _compiled().launch, lambda b: (("k",), {"grid": 1, "block": 1}), bound=True),
    _e("Kernel.__call__", lambda b: _compiled().kernel("k"), lambda b: ((), {"grid": 1, "block": 1}), bound=True),
    _e("runtime.Gpu", runtime.Gpu, lambda b: ((0,), {})),
    _e("runtime.gpu", runtime.gpu),
    _e("runtime.current_arch", runtime.current_arch),
    _e("runtime.gpu_unavailable_reason", runtime.gpu_unavailable_reason),
    _e("runtime.arch_for_compute_capability", runtime.arch_for_compute_capability, lambda b: ((9, 0), {})),
    _e("runtime.resolve_launch", runtime.resolve_launch, lambda b: ((_sig(), 1, 32, 1), {})),
    _e("runtime.signature_of_func", runtime.signature_of_func, lambda b: ((_func_op(),), {})),
    _e("runtime.signatures_of_module", runtime.signatures_of_module, lambda b: ((_seed(),), {})),
    _e("runtime.Param", runtime.Param, lambda b: (("x", "array", "f32", (4,)), {})),
    _e("runtime.KernelSignature.of", runtime.KernelSignature.of,
       lambda b: (("k", ("x", "f32", (4,))), {"launch": None, "shmem": 0, "workspace": 0, "zero_init": ()})),
    _e("KernelSignature.check", lambda b: _sig().check, lambda b: (([np.zeros(4, np.float32)],), {}), bound=True),
    # the one-call API
    *[
        _e(f"bulkred.{n}", getattr(bulkred, n),
           lambda b, extra=extra: ((np.ones(8, np.int32),), {"axis": None, "keepdims": False, **extra, "out": None, "explain": True, "stream": None}))
        for n, extra in [
            ("sum", {"dtype": None}), ("prod", {"dtype": None}), ("max", {"ignore_nan": False}),
            ("min", {"ignore_nan": False}), ("any", {}), ("all", {}), ("and_", {}), ("or_", {}), ("xor", {}),
        ]
    ],
    _e("bulkred.reduce", bulkred.reduce,
       lambda b: (("sum", np.ones(8, np.float32)), {
           "axis": None, "dtype": None, "keepdims": False, "ignore_nan": False, "out": None, "explain": True,
           "stream": None,
       })),
    # the API's entry points below the functions (no GPU: plan, explain, compile)
    _e("api.plan", api.plan, lambda b: (("sum", (4, 6), "float32", 1, False, None), {"out_dtype": None})),
    _e("api.explain_reduction", api.explain_reduction,
       lambda b: (("sum", (8, 4), "float32", 1, "sm_90a"), {"out_dtype": None, "ignore_nan": None})),
    _e("api.compile_reduction", api.compile_reduction,
       lambda b: (("max", (8, 4), "float32", None, "sm_90a"), {"out_dtype": None, "ignore_nan": None})),
    # the interpreter
    _e("interpreter.run_kernel", run_kernel,
       lambda b: ((_level2(), "test_func", *_seed_arrays()), {"thread_id": (0, 0, 0), "block_id": (0, 0, 0), "cluster_rank": 0})),
    _e("interpreter.run_grid", run_grid,
       lambda b: ((_level2(), "test_func", *_seed_arrays()), {"grid": None, "block": None})),
    # the backend
    _e("printer.print_ptx", printer.print_ptx, lambda b: ((_level3(), "sm_90a"), {})),
    _e("assemble.assemble", assemble.assemble,
       lambda b: ((PTX, "sm_90a"), {"extra_options": (), "isolated": False, "timeout": 120.0})),
    # the list functions (docs/foreach.md): with torch, CPU tensors (refused: the list is
    # not on a CUDA device); without it, numpy arrays (refused: torch is not installed)
    _e("bulkred.foreach_norm", bulkred.foreach_norm, lambda b: ((_list(),), {"ord": 2.0})),
    _e("bulkred.total_norm", bulkred.total_norm,
       lambda b: ((_list(),), {"ord": 2.0, "error_if_nonfinite": False, "local": False})),
    _e("bulkred.clip_grad_norm_", bulkred.clip_grad_norm_,
       lambda b: ((_list(), 1.0), {"ord": 2.0, "error_if_nonfinite": False})),
    _e("bulkred.unscale_and_norm_", bulkred.unscale_and_norm_,
       lambda b: ((_list(), _one_of(1.0), _one_of(0.0)), {"ord": 2.0})),
    _e("bulkred.foreach_amax", bulkred.foreach_amax, lambda b: ((_list(),), {})),
    _e("bulkred.tensor_list", bulkred.tensor_list, lambda b: ((_list(),), {})),
    # the dtype table
    _e("dtypes.dtype", dtypes.dtype, lambda b: (("float32",), {})),
    _e("DType.identity", dtypes.DTYPES["int32"].identity, lambda b: (("and",), {})),
]


def _calls(entry: Entry, kernel: Callable[[], Iterator[Buffers]] | None) -> Iterator[tuple[str, Callable[[], Any]]]:
    """``(label, call)``: the valid call, then each argument replaced by each bad value.
    Each call builds its own valid arguments (in a fresh kernel for the builder)."""
    args0, kwargs0 = _valid(entry, kernel)
    slots = [("pos", i) for i in range(len(args0))] + [("kw", k) for k in kwargs0]
    yield "valid", lambda: _invoke(entry, kernel, None, None)
    for slot in slots:
        for bad_name, bad in BAD:
            label = f"{'arg ' + str(slot[1]) if slot[0] == 'pos' else slot[1]}={bad_name}"
            yield label, lambda slot=slot, bad=bad: _invoke(entry, kernel, slot, bad)


def _valid(entry: Entry, kernel) -> tuple[tuple, dict]:
    if kernel is None:
        return entry.valid(None)
    for b in kernel():
        return entry.valid(b)
    raise AssertionError("unreachable")


def _invoke(entry: Entry, kernel, slot, bad) -> Any:
    def go(b):
        args, kwargs = entry.valid(b)
        fn = entry.fn(b) if entry.bound else entry.fn
        args = list(args)
        if slot is not None and slot[0] == "pos":
            args[slot[1]] = bad
        elif slot is not None:
            kwargs[slot[1]] = bad
        return fn(*args, **kwargs)

    if kernel is None:
        return go(None)
    for b in kernel():
        return go(b)


def violations(entry: Entry, kernel=None) -> list[str]:
    """What the sweep of ``entry`` found: each call that raised something other than a
    one-line BulkredError."""
    found = []
    for label, call in _calls(entry, kernel):
        try:
            call()
        except BulkredError as e:
            text = str(e)
            if not text.strip() or "\n" in text.strip():
                found.append(f"{entry.name}({label}): {type(e).__name__} of {len(text.splitlines())} lines: {text[:200]!r}")
        except Exception as e:  # noqa: BLE001 - what the sweep looks for
            found.append(f"{entry.name}({label}): {type(e).__name__}: {str(e)[:200]}")
    return found


# Each entry's sweep in one test per list (a test each cost the run more than most of
# their sweeps): every violation found is named by its entry and call.


def test_builder_inside_a_kernel():
    found = [f for entry in BUILDER for f in violations(entry, _open_kernel)]
    assert not found, "\n".join(found)


def test_builder_outside_a_kernel():
    found = [f for entry in BUILDER for f in violations(entry, _closed_kernel)]
    assert not found, "\n".join(found)


def test_public_function():
    found = [f for entry in OTHERS for f in violations(entry)]
    assert not found, "\n".join(found)


def test_the_sweep_can_fail():
    """A function that leaks an AttributeError (or a two-line message) is reported."""

    def leaky(text):
        return text.upper()  # AttributeError on 42

    def two_lines(text):
        raise BulkredError("first line\nsecond line")

    found = violations(_e("leaky", leaky, lambda b: (("ok",), {})))
    assert any(f.startswith("leaky(arg 0=42): AttributeError") for f in found), found
    assert not any("garbage" in f for f in found)  # a str works
    assert violations(_e("two_lines", two_lines, lambda b: (("ok",), {})))[0].startswith("two_lines(valid): BulkredError of 2 lines")


def test_the_sweep_covers_every_public_name():
    """The runtime's, the builder's and the API's public callables all have an entry."""
    covered = {e.name for e in BUILDER + OTHERS}
    for name in runtime.__all__:
        obj = getattr(runtime, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue
        if name in ("CompiledModule", "Kernel", "KernelSignature", "LaunchShape"):
            continue  # records made by the runtime; their methods have entries
        assert f"runtime.{name}" in covered, name
    for name in T.__all__:
        if name in ("DTYPES", "Kernel"):
            continue
        assert f"T.{name}" in covered, name
    for name in ("sum", "prod", "max", "min", "any", "all", "and_", "or_", "xor", "reduce"):
        assert f"bulkred.{name}" in covered, name
    for name in (*LIST_FUNCTIONS, "tensor_list"):
        assert f"bulkred.{name}" in covered, name


WRONG_TYPES = [
    (lambda b: T.alloc_buffer("x", "float32"), "'shape' of T.alloc_buffer must be a non-empty list of positive integers, got 'x'"),
    (lambda b: T.alloc_buffer(b"\x04", "float32"), "'shape' of T.alloc_buffer must be a non-empty list of positive integers, got b'\\x04'"),
    (lambda b: b.k.param(42, [4], "float32"), "'name' of T.param must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got 42"),
    (lambda b: T.reduce("sum", 1, 2), "'dst' of T.reduce must be a buffer from k.param or T.alloc_buffer, got int 1"),
]


@pytest.mark.parametrize("call, message", WRONG_TYPES, ids=["shape str", "shape bytes", "param name 42", "reduce ints"])
def test_builder_arguments_of_the_wrong_type(call, message):
    """The issue's cases: a BuildError (a ValueError) of one line, not a TypeError from inside."""
    from bulkred_dialect.errors import BuildError

    for b in _open_kernel():
        with pytest.raises(BuildError) as e:
            call(b)
    assert isinstance(e.value, ValueError) and str(e.value) == message


# region Every row of the function table, every argument, bad values, twice
#
# ``bulkred.<name>`` for each row of ``functions.FUNCTIONS`` (a new row is swept with the
# others) and each argument of its signature (x, axis, keepdims, each option by its
# schema type, out, stream, explain), given each value of that argument's list below,
# the other arguments valid. Each call must reach the launch (or return: explain, an
# empty reduction) or raise a BulkredError of one line starting with ``bulkred.<name>: ``;
# a value marked ``refuse`` must be refused by every function. The sweep runs twice
# (the ``mode`` fixture): as installed (no GPU: a call that passes every check raises
# NoGpuError) and with the target pretended (sm_90a: the kernel is built, lowered and
# assembled; the launch is the first thing that fails), where every refusal must be the
# one given as installed, word for word. With torch installed, a few rows (TORCH_ROWS)
# are swept with a torch x too, and with one that requires grad (the torch operator's
# route); numpy alone runs the rest.


class Launched(Exception):
    """The pretended GPU's first call: the call passed every check and compiled."""


SKIP = object()  # a value that does not apply to a row (a byte-swapped bool)


class _Skipped(Exception):
    """A call with a value that does not apply (SKIP): not made."""


@dataclass(frozen=True)
class Bad:
    """One value of an argument: ``make(row)`` makes it afresh for each call (arrays are
    written); ``refuse``: every function must refuse it; ``call``: other arguments the
    call changes with it (``axis=1`` for an ``out`` of shape (2,))."""

    label: str
    make: Callable[[Any], Any]
    refuse: bool = False
    call: dict = field(default_factory=dict)


def _v(label: str, value: Any, refuse: bool = False, **call: Any) -> Bad:
    return Bad(label, lambda row: value, refuse, call)


def _f(label: str, make: Callable[[Any], Any], refuse: bool = False, **call: Any) -> Bad:
    return Bad(label, make, refuse, call)


def _src(row) -> str:
    return "int32" if row.inputs == "integer" else "float32"


def _x(row, dtype: Any = None, shape: tuple[int, ...] = (2, 3)) -> np.ndarray:
    return (np.arange(math.prod(shape)) % 5 + 1).astype(dtype or _src(row)).reshape(shape)


def _dtypes(row) -> tuple[str, ...]:
    """The dtypes of the row's results for ``_x(row)``, in the caller's order."""
    return api.plan(row.name, (2, 3), _src(row)).outputs


def _out(row, shape: tuple[int, ...] = (), change: Callable[[np.ndarray], Any] | None = None, which: int = 0) -> Any:
    """A valid ``out`` for ``_x(row)`` (a pair for two results) of ``shape``; ``change``
    applied to result ``which``."""
    arrays = [np.zeros(shape, d) for d in _dtypes(row)]
    if change is not None:
        arrays[which] = change(arrays[which])
        if arrays[which] is SKIP:
            return SKIP
    return tuple(arrays) if row.results > 1 else arrays[0]


def _read_only_array(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _swapped(a: np.ndarray) -> Any:
    return SKIP if a.dtype.itemsize == 1 else a.astype(a.dtype.newbyteorder(">"))


def _broadcast(a: np.ndarray) -> np.ndarray:
    """A writable broadcast view (stride 0) of shape (2,): as_strided's, not broadcast_to's."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, a.dtype), (2,), (0,))


def _twice(a: np.ndarray, second: Callable[[np.ndarray], np.ndarray] = lambda a: a) -> tuple:
    return a, second(a)


def _gen(*items: Any) -> Callable[[Any], Any]:
    return lambda row: (i for i in items)


class _Stream:
    """A stream-like object whose handle is not one."""

    def __init__(self, **attrs: Any):
        self.__dict__.update(attrs)


class _CudaStream:
    def __init__(self, value: Any):
        self.value = value

    def __cuda_stream__(self):
        return self.value


_BIG_FLOAT = np.longdouble("1e4000") if np.finfo(np.longdouble).maxexp > 13000 else None  # x86's 80-bit long double

X: list[Bad] = [
    _v("None", None, True), _v("42", 42, True), _v("1.5", 1.5, True), _v("True", True, True),
    _v("str", "abc", True), _v("bytes", b"ab", True), _v("list", [1.0, 2.0], True), _v("tuple", (1.0, 2.0), True),
    _f("generator", _gen(1.0, 2.0), True), _v("object", object(), True), _f("numpy scalar", lambda r: np.float32(2)),
    _f("0-d", lambda r: np.array(2, _src(r))), _f("empty", lambda r: _x(r, shape=(0,))),
    _f("empty axis", lambda r: _x(r, shape=(2, 0))), _f("float16", lambda r: _x(r, "float16")),
    _f("float64", lambda r: _x(r, "float64")), _f("int8", lambda r: _x(r, "int8")), _f("uint64", lambda r: _x(r, "uint64")),
    _f("int64", lambda r: _x(r, "int64")), _f("bool", lambda r: _x(r, "bool")),
    _f("complex64", lambda r: _x(r, "complex64")), _f("complex128", lambda r: _x(r, "complex128")),  # the rows that take complex
    _f("object array", lambda r: _x(r, "float64").astype(object), True),
    _f("datetime64", lambda r: _x(r, "int64").astype("datetime64[s]"), True),
    _f("timedelta64", lambda r: _x(r, "int64").astype("timedelta64[s]"), True),
    _f("structured", lambda r: np.zeros((2, 3), [("a", "f4"), ("b", "i4")]), True),
    _f("record array", lambda r: np.rec.array(np.zeros(3, [("a", "f4")])), True),
    _f("str array", lambda r: _x(r).astype(str), True), _f("bytes array", lambda r: _x(r).astype("S4"), True),
    _f("void array", lambda r: np.zeros(3, "V4"), True), _f("longdouble", lambda r: _x(r, np.longdouble), True),
    _f("byte-swapped", lambda r: _x(r, np.dtype(_src(r)).newbyteorder(">"))),
    _f("masked", lambda r: np.ma.masked_array(_x(r), mask=np.eye(2, 3, dtype=bool)), True),
    _f("masked, no mask", lambda r: np.ma.masked_array(_x(r)), True),
    _f("read-only", lambda r: _read_only_array(_x(r))), _f("flipped", lambda r: _x(r)[::-1, ::-1]),
    _f("strided", lambda r: _x(r, shape=(2, 6))[:, ::2]), _f("fortran", lambda r: np.asfortranarray(_x(r))),
    _f("broadcast", lambda r: np.broadcast_to(_x(r, shape=(3,)), (2, 3))),
    _f("broadcast 2**40", lambda r: np.lib.stride_tricks.as_strided(_x(r, shape=(1,)), (2**40,), (0,)), True),
    _f("matrix", lambda r: np.asmatrix(_x(r))),
]

AXIS: list[Bad] = [
    _v("0", 0), _v("-1", -1), _v("np.int64", np.int64(1)), _v("np.uint8", np.uint8(0)), _v("tuple", (0, 1)),
    _v("list", [1]), _v("(0,)", (0,)), _v("reversed", (1, 0)),
    _v("True", True, True), _v("False", False, True), _v("np.bool_", np.bool_(True), True), _v("1.5", 1.5, True),
    _v("1.0", 1.0, True), _v("np.float64", np.float64(1.0), True), _v("nan", math.nan, True), _v("inf", math.inf, True),
    _v("'0'", "0", True), _v("b'0'", b"0", True), _v("2", 2, True), _v("-3", -3, True), _v("2**64", 2**64, True),
    _v("-2**64", -(2**64), True), _v("2**1000", 2**1000, True), _v("np.uint64 max", np.uint64(2**64 - 1), True),
    _v("twice", (0, 0), True), _v("twice negative", (1, -1), True), _v("()", (), True), _v("[]", [], True),
    _v("(0, '1')", (0, "1"), True), _v("(0, 1.0)", (0, 1.0), True), _v("(None,)", (None,), True),
    _v("(True,)", (True,), True), _v("[[0]]", [[0]], True), _v("set", {0}, True), _v("frozenset", frozenset({0}), True),
    _f("array", lambda r: np.array([0]), True), _f("0-d array", lambda r: np.array(1), True),
    _f("generator", _gen(0), True), _v("object", object(), True), _v("slice", slice(None), True),
    _v("Ellipsis", ..., True), _v("complex", 1 + 0j, True), _v("Fraction", __import__("fractions").Fraction(1), True),
    _v("Decimal", __import__("decimal").Decimal(1), True),
]

BOOL: list[Bad] = [
    _v("True", True), _v("False", False), _v("np.True_", np.bool_(True)), _v("np.False_", np.bool_(False)),
    _v("None", None, True), _v("0", 0, True), _v("1", 1, True), _v("1.0", 1.0, True), _v("nan", math.nan, True),
    _v("'yes'", "yes", True), _v("''", "", True), _v("'False'", "False", True), _v("b''", b"", True),
    _v("[]", [], True), _v("[True]", [True], True), _v("object", object(), True), _v("np.int64", np.int64(1), True),
    _f("0-d array", lambda r: np.array(True), True), _f("generator", _gen(True), True),
]

DTYPE: list[Bad] = [
    _v("None", None), _v("'float32'", "float32"), _v("np.float64", np.float64), _v("np.dtype", np.dtype("float64")),
    _v("'float16'", "float16"), _v("'int32'", "int32"), _v("'int64'", "int64"), _v("'uint8'", "uint8"),
    _v("'bool'", "bool"), _v("'bfloat16'", "bfloat16"), _v("'f4'", "f4"), _v("'float'", "float"),
    _v("b'float32'", b"float32"), _v("['float32']", ["float32"]), _f("a float32 scalar", lambda r: np.float32(1)),
    _v("'complex64'", "complex64", True), _v("np.complex128", np.complex128, True), _v("'object'", "object", True),
    _v("object", object, True), _v("np.dtype('O')", np.dtype("O"), True), _v("'datetime64[s]'", "datetime64[s]", True),
    _v("np.datetime64", np.datetime64, True), _v("'U4'", "U4", True), _v("str", str, True), _v("bytes", bytes, True),
    _v("structured", [("a", "f4")], True), _v("np.dtype structured", np.dtype([("a", "f4")]), True),
    _v("'float128'", "float128", True), _v("np.longdouble", np.longdouble, True), _v("''", "", True),
    _v("42", 42, True), _v("1.5", 1.5, True), _v("True", True, True), _v("nan", math.nan, True),
    _v("object()", object(), True), _f("generator", _gen("float32"), True),
]

INT: list[Bad] = [
    _v("0", 0), _v("1", 1), _v("5", 5), _v("np.int64", np.int64(1)), _v("np.uint8", np.uint8(1)), _v("1.0", 1.0),
    _v("True", True, True), _v("False", False, True), _v("np.bool_", np.bool_(True), True), _v("-1", -1, True),
    _v("np.int8 -1", np.int8(-1), True), _v("-2**70", -(2**70), True), _v("1.5", 1.5, True),
    _v("nan", math.nan, True), _v("inf", math.inf, True), _v("'1'", "1", True), _v("None", None, True),
    _v("2**62", 2**62, True), _v("2**70", 2**70, True), _v("2**1024", 2**1024, True),
    _v("np.uint64 max", np.uint64(2**64 - 1), True), _v("object", object(), True), _v("[1]", [1], True),
    _v("np.float64", np.float64(1.0), True), _f("0-d array", lambda r: np.array(1)),
    _v("Fraction", __import__("fractions").Fraction(1, 2), True), _v("Decimal", __import__("decimal").Decimal("0.5"), True),
    _f("generator", _gen(1), True),
]

NUMBER: list[Bad] = [
    _v("1", 1), _v("3", 3), _v("0.5", 0.5), _v("-1", -1), _v("-2.5", -2.5), _v("inf", math.inf), _v("-inf", -math.inf),
    _v("np.float32", np.float32(3)), _v("np.int64", np.int64(3)), _v("np.float16", np.float16(2)), _v("1e30", 1e30),
    _v("1e-30", 1e-30), _v("-1e30", -1e30), _v("np.uint64 max", np.uint64(2**64 - 1)),
    _v("True", True, True), _v("np.False_", np.bool_(False), True), _v("0", 0), _v("0.0", 0.0),
    _v("-0.0", -0.0), _v("nan", math.nan, True), _v("np.float32 nan", np.float32("nan"), True),
    _v("'2'", "2", True), _v("None", None, True), _v("2**1024", 2**1024, True), _v("-2**1024", -(2**1024), True),
    _v("1e308", 1e308, True), _v("-1e308", -1e308, True), _v("1e-300", 1e-300, True), _v("5e-324", 5e-324, True),
    _v("1e31", 1e31, True), _v("object", object(), True), _v("[2]", [2], True), _v("complex", 2 + 0j, True),
    _f("0-d array", lambda r: np.array(2.0)), _v("Fraction", __import__("fractions").Fraction(2)),
    _v("Decimal", __import__("decimal").Decimal("2")), _f("generator", _gen(2.0), True),
    *([_v("longdouble 1e4000", _BIG_FLOAT, True), _v("-longdouble 1e4000", -_BIG_FLOAT, True)] if _BIG_FLOAT is not None else []),
]

CORRECTION: list[Bad] = [  # an int or a float, as torch's correction (None: torch's default, for torch tensors)
    _v("0", 0), _v("1", 1), _v("5", 5), _v("np.int64", np.int64(1)), _v("np.uint8", np.uint8(1)), _v("1.0", 1.0),
    _v("1.3", 1.3), _v("0.5", 0.5), _v("np.float64", np.float64(1.0)), _v("np.float32 0.5", np.float32(0.5)),
    _v("-0.0", -0.0), _v("1e-300", 1e-300), _v("5e-324", 5e-324), _v("-1", -1), _v("np.int8 -1", np.int8(-1)),
    _v("-0.5", -0.5), _v("None", None),
    _v("True", True, True), _v("False", False, True), _v("np.bool_", np.bool_(True), True), _v("-2**70", -(2**70), True),
    _v("nan", math.nan, True), _v("inf", math.inf, True), _v("'1'", "1", True),
    _v("2**62", 2**62, True), _v("2**70", 2**70, True), _v("2**1024", 2**1024, True), _v("1e308", 1e308, True),
    _v("np.uint64 max", np.uint64(2**64 - 1), True), _v("object", object(), True), _v("[1]", [1], True),
    _v("complex", 1 + 0j, True), _v("Fraction", __import__("fractions").Fraction(1, 2), True),
    _v("Decimal", __import__("decimal").Decimal("0.5"), True), _f("generator", _gen(1), True),
]

OUT: list[Bad] = [
    _f("valid", lambda r: _out(r)), _f("valid, axis 1", lambda r: _out(r, (2,)), axis=1),
    _f("strided, axis 1", lambda r: _out(r, (2,), lambda a: np.zeros(4, a.dtype)[::2]), axis=1),
    _f("keepdims", lambda r: _out(r, (1, 1)), keepdims=True),
    _f("float64", lambda r: _out(r, (), lambda a: np.zeros((), "float64"))),
    _f("int8", lambda r: _out(r, (), lambda a: np.zeros((), "int8"))),
    _v("42", 42, True), _v("1.5", 1.5, True), _v("True", True, True), _v("str", "x", True), _v("bytes", b"x", True),
    _v("list", [0.0], True), _v("object", object(), True), _f("numpy scalar", lambda r: np.float32(0), True),
    _f("generator", _gen(), True), _f("list of arrays", lambda r: [_out(r)], True),
    _f("complex", lambda r: _out(r, (), lambda a: np.zeros((), "complex64")), True),
    _f("object dtype", lambda r: _out(r, (), lambda a: np.zeros((), object)), True),
    _f("datetime", lambda r: _out(r, (), lambda a: np.zeros((), "datetime64[s]")), True),
    _f("structured", lambda r: _out(r, (), lambda a: np.zeros((), [("a", "f4")])), True),
    _f("str dtype", lambda r: _out(r, (), lambda a: np.zeros((), "U4")), True),
    _f("longdouble", lambda r: _out(r, (), lambda a: np.zeros((), np.longdouble)), True),
    _f("byte-swapped", lambda r: _out(r, (), _swapped), True),
    _f("read-only", lambda r: _out(r, (), _read_only_array), True),
    _f("broadcast", lambda r: _out(r, (2,), _broadcast), True, axis=1),
    _f("masked", lambda r: _out(r, (), np.ma.masked_array), True),
    _f("shape (1,)", lambda r: _out(r, (1,)), True), _f("shape (2,)", lambda r: _out(r, (2,)), True),
    _f("shape (1, 1)", lambda r: _out(r, (1, 1)), True), _f("shape (0,)", lambda r: _out(r, (0,)), True),
    _f("no keepdims", lambda r: _out(r, ()), True, keepdims=True),
    _f("x itself", lambda r: _x(r), True),
    _f("matrix", lambda r: _out(r, (), lambda a: np.asmatrix(np.zeros((1, 1), a.dtype))), True),
]

PAIR_OUT: list[Bad] = [  # the rows of two results: out= is a pair
    _f("[a, b]", lambda r: list(_out(r))),
    _f("one array", lambda r: _out(r)[0], True), _f("(a,)", lambda r: _out(r)[:1], True),
    _f("(a, b, c)", lambda r: (*_out(r), np.zeros((), _dtypes(r)[0])), True),
    _f("(a, a)", lambda r: _twice(_out(r)[0]), True),
    _f("(a, a.view())", lambda r: _twice(_out(r)[0], np.ndarray.view), True),
    _f("(a, None)", lambda r: (_out(r)[0], None), True),
    _f("second read-only", lambda r: _out(r, (), _read_only_array, 1), True),
    _f("second shape (1,)", lambda r: (_out(r)[0], _out(r, (1,))[1]), True),
    _f("second complex", lambda r: _out(r, (), lambda a: np.zeros((), "complex64"), 1), True),
    _f("generator", lambda r: (a for a in _out(r)), True),
]

STREAM: list[Bad] = [
    _v("None", None), _v("0", 0), _v("42", 42), _v("np.int64", np.int64(5)), _v("2**64 - 1", 2**64 - 1),
    _v("True", True, True), _v("False", False, True), _v("np.True_", np.bool_(True), True), _v("-1", -1, True),
    _v("1.5", 1.5, True), _v("nan", math.nan, True), _v("inf", math.inf, True), _v("'x'", "x", True),
    _v("b'x'", b"x", True), _v("object", object(), True), _v("[]", [], True), _v("2**64", 2**64, True),
    _v("np.float64", np.float64(1.0), True), _v("complex", 1j, True), _f("0-d array", lambda r: np.array(5), True),
    _f("generator", _gen(0), True), _v("handle 'x'", _Stream(handle="x"), True),
    _v("cuda_stream 'x'", _Stream(cuda_stream="x"), True), _v("ptr -1", _Stream(ptr=-1), True),
    _v("__cuda_stream__ junk", _CudaStream("junk"), True), _v("__cuda_stream__ (0, 'x')", _CudaStream((0, "x")), True),
]

ARGUMENTS: dict[str, list[Bad]] = {"x": X, "axis": AXIS, "keepdims": BOOL, "explain": BOOL, "stream": STREAM}
BY_SCHEMA: dict[str, list[Bad]] = {"bool": BOOL, "int": INT, "float": NUMBER, "float?": CORRECTION, "ScalarType?": DTYPE}
"""An option's values by its torch schema type (a new option of a known type is swept)."""
OTHER: list[Bad] = [_v("None", None), _v("'x'", "x"), _v("object", object()), _v("nan", math.nan), _v("-1", -1),
                    _v("2**70", 2**70), _f("generator", _gen(1))]
"""An option of a schema type not above: no value is required to be refused."""


CORRECTIONS_COMPILED = {"0", "1", "1.3", "-0.5", "5e-324"}
"""The values of ``correction`` whose kernels the pretended sweep compiles: an integer,
a fraction, a negative one and one that rounds away. A correction reaches the kernel
only as the constant ``N - correction`` (passes/fused.py, ``Reducer``), so the other
values' kernels differ from these in that constant only: stood in for (16 compiles of
the 4 rows with a correction, 0.7 CPU-s)."""


def _compiles(row, name: str, bad: Bad | None) -> bool:
    """With the target pretended, whether a call's kernel is compiled: the valid call's
    and those of an option's or ``out``'s values on the valid call's axes
    (``correction``: :data:`CORRECTIONS_COMPILED`). The other values are refused before
    compiling, or their kernels differ from these in x's dtype or axes only: a kernel not
    compiled yet is stood in for (the sweep stays within seconds)."""
    if name == "correction" and bad is not None and bad.label not in CORRECTIONS_COMPILED:
        return False
    return (bad is None or name == "out" or name in row.option_names) and not (bad and bad.call)


def _values(row, name: str, flavour: str) -> list[Bad]:
    if name == "x" and flavour != "numpy":
        return TORCH_X
    if name == "axis" and flavour != "numpy":  # torch's rules: dim=() is every axis
        return [Bad(b.label, b.make, False, b.call) if b.label in ("()", "[]") else b for b in AXIS]
    if name == "out":
        return OUT + (PAIR_OUT if row.results > 1 else []) + (TORCH_OUT if flavour != "numpy" else [])
    if name in ARGUMENTS:
        return ARGUMENTS[name]
    option = next((o for o in row.options if o.name == name), None)
    return OTHER if option is None else BY_SCHEMA.get(option.schema, OTHER)


@dataclass
class Mode:
    """How the sweep runs: ``installed`` (nothing pretended; a machine with a GPU is made
    one without) or ``pretended`` (the GPU's target is sm_90a, its kernels compiled; the
    launch's first GPU call, after the stream is resolved, raises :class:`Launched`)."""

    name: str
    compile: bool = True  # pretended: compile a kernel not compiled yet (else stand in for it)

    @contextlib.contextmanager
    def patched(self) -> Iterator[None]:
        from bulkred_dialect.backend_ptx import device, launch
        from bulkred_dialect.backend_ptx.errors import NoGpuError

        def no_gpu():
            raise NoGpuError("pretended: none")

        class PretendedGpu:
            def ensure_usable(self):
                pass

            @property
            def device(self):  # Kernel.bind's first use of the device: the call passed every check and compiled
                raise Launched

            def stream_for(self, handle):
                raise Launched

        class NotCompiled:  # a kernel the sweep does not compile: its call is the launch
            signature = None

            def __call__(self, *args, **options):
                raise Launched

        compile_real = api.kernel_of

        def kernel_of(p, target):
            if self.compile or api.plan_key(p, target) in api.KERNELS:
                return compile_real(p, target)
            return NotCompiled()

        with pytest.MonkeyPatch.context() as m:
            if self.name == "pretended":
                m.setattr(device, "current_arch", lambda: "sm_90a")
                m.setattr(launch, "gpu", PretendedGpu)
                m.setattr(api, "kernel_of", kernel_of)
            elif device.gpu_unavailable_reason() is None:
                m.setattr(device, "current_arch", no_gpu)
                m.setattr(launch, "gpu", no_gpu)
            yield

    def reached(self, e: BaseException) -> bool:
        from bulkred_dialect.backend_ptx.errors import NoGpuError

        return isinstance(e, Launched if self.name == "pretended" else NoGpuError)


@dataclass(frozen=True)
class Outcome:
    what: str  # "ok" (returned), "launch" (reached it), "refused" (a BulkredError), "foreign" (anything else)
    text: str = ""


def _make_x(row, flavour: str) -> Any:
    """The valid ``x`` of a flavour: numpy's, a torch tensor, one that requires grad."""
    if flavour == "numpy":
        return _x(row)
    import torch

    t = torch.from_numpy(_x(row))
    return t.requires_grad_() if flavour == "torch, requires grad" else t


def sweep_calls(row, fn: Any, flavour: str = "numpy") -> Iterator[tuple[str, str, Bad | None, Callable[[], Any]]]:
    """``(label, argument, bad value, call)`` for each call of the sweep of ``fn`` (the
    public function of ``row``, or a stand-in): the valid call, each argument given each
    of its values (the others valid), and an unknown keyword."""
    names = list(inspect.signature(fn).parameters)
    defaults = {"axis": None, "keepdims": False, "out": None, "stream": None, "explain": False, **row.defaults()}

    def call(name: str | None, bad: Bad | None) -> Callable[[], Any]:
        def go() -> Any:
            with warnings.catch_warnings():  # numpy's about np.matrix: making the value is not the call
                warnings.simplefilter("ignore")
                args = {"x": _make_x(row, flavour), **{n: defaults.get(n) for n in names if n != "x"}}
                if bad is not None:
                    args.update(bad.call)
                    args[name] = bad.make(row)
            if any(v is SKIP for v in args.values()):
                raise _Skipped
            return fn(args.pop("x"), **args)

        return go

    yield "valid", "", None, call(None, None)
    for name in names:
        for bad in _values(row, name, flavour):
            yield f"{name}={bad.label}", name, bad, call(name, bad)
    unknown = _v("1", 1, True)
    yield "unknown keyword", "bogus", unknown, call("bogus", unknown)


def sweep(row, mode: Mode, fn: Any = None, flavour: str = "numpy") -> dict[str, tuple[Bad | None, Outcome]]:
    """Every call of the sweep of ``row`` in ``mode``: label -> (value, outcome)."""
    from bulkred_dialect import reductions

    fn = fn or getattr(bulkred, row.name)
    got: dict[str, tuple[Bad | None, Outcome]] = {}
    reductions.forget()
    try:
        with mode.patched(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for label, name, bad, call in sweep_calls(row, fn, flavour):
                del caught[:]
                mode.compile = _compiles(row, name, bad)
                try:
                    call()
                    o = Outcome("ok")
                except _Skipped:
                    continue
                except BulkredError as e:  # an object's address in a repr: the same message
                    o = Outcome("launch") if mode.reached(e) else Outcome("refused", re.sub(r" at 0x[0-9a-f]+", "", str(e)))
                except Launched as e:
                    o = Outcome("launch") if mode.reached(e) else Outcome("foreign", "Launched")
                except Exception as e:  # noqa: BLE001 - what the sweep looks for
                    o = Outcome("foreign", f"{type(e).__module__}.{type(e).__name__}: {str(e)[:300]}")
                if caught:
                    w = caught[0]
                    o = Outcome("foreign", f"{o.what} with a warning: {w.category.__name__}: {str(w.message)[:200]}")
                got[label] = (bad, o)
    finally:
        reductions.forget()
    return got


def sweep_violations(name: str, got: dict[str, tuple[Bad | None, Outcome]]) -> list[str]:
    """What is wrong in a sweep of ``bulkred.<name>``: a foreign exception (or a
    warning), a message that is not one line starting with ``bulkred.<name>: ``, a value
    that must be refused but was not, a valid call that did not reach the launch."""
    found = []
    for label, (bad, o) in got.items():
        where = f"bulkred.{name}({label})"
        if o.what == "foreign":
            found.append(f"{where}: {o.text}")
        elif o.what == "refused":
            if "\n" in o.text.strip() or not o.text.startswith(f"bulkred.{name}: "):
                found.append(f"{where}: not one line starting with 'bulkred.{name}: ': {o.text[:300]!r}")
        elif bad is not None and bad.refuse:
            found.append(f"{where}: not refused ({o.what})")
        elif label == "valid" and o.what != "launch":
            found.append(f"{where}: the valid call gave {o.what}, not the launch")
    return found


def sweep_differences(name: str, installed: dict, pretended: dict) -> list[str]:
    """Calls whose outcome differs between the two modes: refused only with the target,
    or in other words."""
    found = []
    for label, (_, a) in installed.items():
        b = pretended[label][1]
        if a != b:
            found.append(f"bulkred.{name}({label}): as installed {a.what} {a.text[:200]!r}, pretended {b.what} {b.text[:200]!r}")
    return found


_INSTALLED: dict[tuple[str, str], dict] = {}


def _installed(row, flavour: str = "numpy") -> dict:
    """The sweep as installed (once per row and flavour: the pretended run compares with it)."""
    key = (row.name, flavour)
    if key not in _INSTALLED:
        _INSTALLED[key] = sweep(row, Mode("installed"), flavour=flavour)
    return _INSTALLED[key]


@pytest.fixture(params=["installed", "pretended"])
def mode(request) -> Mode:
    """The two runs of the sweep: as installed, and with the target pretended."""
    return Mode(request.param)


KNOWN: dict[str, str] = {}
"""Findings not fixed yet (their fix is outside the API), each with its cause: the sweep
passes while they are found, and fails once one is not (then remove it here)."""


def _check_sweep(row, mode: Mode, flavour: str) -> None:
    if mode.name == "installed":
        got = _installed(row, flavour)
        found = sweep_violations(row.name, got)
    else:
        got = sweep(row, mode, flavour=flavour)
        found = sweep_violations(row.name, got) + sweep_differences(row.name, _installed(row, flavour), got)
    expected = {k for k in KNOWN if k.startswith(f"bulkred.{row.name}(") and k.split("(", 1)[1].split(")")[0] in got}
    fixed = sorted(expected - set(found))
    found = [f for f in found if f not in KNOWN]
    assert not found, f"{len(found)} of {len(got)} calls:\n" + "\n".join(found)
    assert not fixed, f"fixed, remove from KNOWN: {fixed}"


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_every_argument_of_every_function(mode, name):
    """The sweep of one row of the function table (numpy arrays) in one mode."""
    _check_sweep(FUNCTIONS[name], mode, "numpy")


TORCH_ROWS = ["sum", "max", "argmax", "var_mean", "vector_norm"]
"""The rows swept with torch tensors too (each kind of option, a pair, one axis)."""


@pytest.mark.parametrize(
    ("name", "flavour"),
    [(n, f) for n in TORCH_ROWS for f in ("torch", "torch, requires grad") if f == "torch" or FUNCTIONS[n].grad],
)
def test_every_argument_with_torch_tensors(mode, name, flavour):
    """The sweep with a torch ``x`` (CPU: it reaches the launch, where the device is
    checked), and with one that requires grad for a differentiable row (the call goes
    through the row's torch operator): the same checks, the same one-line errors."""
    pytest.importorskip("torch")
    _check_sweep(FUNCTIONS[name], mode, flavour)


def _torch_values() -> tuple[list[Bad], list[Bad]]:
    def t(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def go(row):
            import torch

            return make(torch)

        return go

    def x_of(dtype: str, shape: tuple[int, ...] = (2, 3)) -> Callable[[Any], Any]:
        return t(lambda torch: torch.ones(shape, dtype=getattr(torch, dtype)))

    xs = [
        _f("float16", x_of("float16")), _f("bfloat16", x_of("bfloat16")), _f("float64", x_of("float64")),
        _f("int64", x_of("int64")), _f("uint16", x_of("uint16")), _f("bool", x_of("bool")), _f("0-d", x_of("float32", ())),
        _f("empty", x_of("float32", (0,))), _f("transposed", t(lambda torch: torch.ones(3, 2).t())),
        _f("sliced", t(lambda torch: torch.ones(2, 6)[:, ::2])), _f("expanded", t(lambda torch: torch.ones(3).expand(2, 3))),
        _f("storage offset", t(lambda torch: torch.ones(7)[1:].view(2, 3))),
        _f("complex64", x_of("complex64")), _f("float8", x_of("float8_e4m3fn"), True),
        _f("sparse", t(lambda torch: torch.ones(2, 3).to_sparse()), True),
        _f("meta", t(lambda torch: torch.ones(2, 3, device="meta"))),
        _f("numpy", lambda r: _x(r)), _f("list", lambda r: [[1.0, 2.0]], True),
    ]
    outs = [
        _f("torch", lambda r: _torch_out(r)),
        _f("torch complex", lambda r: _torch_out(r, "complex64"), True),
        _f("torch shape (1,)", lambda r: _torch_out(r, shape=(1,)), True),
        _f("torch shared", lambda r: _torch_out(r, shared=True), True),
        _f("torch meta", lambda r: _torch_out(r, device="meta")),
    ]
    return xs, outs


def _torch_out(row, dtype: str | None = None, shape: tuple[int, ...] = (), shared: bool = False, device: str = "cpu") -> Any:
    """A torch ``out`` for the row's torch ``x`` (a pair for two results); ``shared``:
    the pair's second array a view of the first's memory (SKIP for one result)."""
    import torch

    arrays = [torch.zeros(shape, dtype=getattr(torch, dtype or d), device=device) for d in _dtypes(row)]
    if shared:
        if row.results == 1:
            return SKIP
        arrays[1] = arrays[0].view(arrays[1].dtype) if arrays[0].dtype == arrays[1].dtype else SKIP
        if arrays[1] is SKIP:
            return SKIP
    return tuple(arrays) if row.results > 1 else arrays[0]


TORCH_X, TORCH_OUT = _torch_values()


def test_the_function_sweep_can_fail():
    """Stand-ins for bulkred.sum (its signature) are reported: one that leaks a
    TypeError, one with a message of two lines or without the function's name, one that
    takes everything, one that refuses only with the target."""
    from bulkred_dialect.backend_ptx import device

    row = FUNCTIONS["sum"]

    def stand_in(check: Callable[..., None]) -> Any:
        def fn(x, /, **kw):
            check(x, **kw)
            return bulkred.sum(x, **kw)

        fn.__signature__ = inspect.signature(bulkred.sum)
        return fn

    def leaky(x, axis=None, keepdims=False, stream=None, **kw):
        if isinstance(axis, str):
            axis < 0  # noqa: B015 - the TypeError a missing check leaks
        if keepdims is None:
            raise api.ReductionError("bulkred.sum: 'keepdims' must be a bool,\ngot None")
        if isinstance(stream, str):
            raise api.ReductionError("'stream' must be a stream")

    found = sweep_violations("sum", sweep(row, Mode("installed"), stand_in(leaky)))
    assert "bulkred.sum(axis='0'): builtins.TypeError: '<' not supported between instances of 'str' and 'int'" in found
    assert any(f.startswith("bulkred.sum(keepdims=None): not one line") for f in found), found
    assert any(f.startswith("bulkred.sum(stream='x'): not one line starting with 'bulkred.sum: '") for f in found), found
    assert len(found) == 3, found

    def lax(x, /, **kw):
        return None  # takes everything

    lax.__signature__ = inspect.signature(bulkred.sum)
    found = sweep_violations("sum", sweep(row, Mode("installed"), lax))
    assert "bulkred.sum(valid): the valid call gave ok, not the launch" in found
    assert "bulkred.sum(x=object array): not refused (ok)" in found and "bulkred.sum(out=read-only): not refused (ok)" in found
    assert "bulkred.sum(x=0-d): not refused (ok)" not in found  # a valid value may pass

    def with_the_target_only(x, axis=None, **kw):
        if axis == 0 and type(axis) is int:
            device.current_arch()  # NoGpuError as installed
            raise api.ReductionError("bulkred.sum: refused by the target")

    f = stand_in(with_the_target_only)
    installed, pretended = sweep(row, Mode("installed"), f), sweep(row, Mode("pretended"), f)
    assert not sweep_violations("sum", installed) and not sweep_violations("sum", pretended)
    assert sweep_differences("sum", installed, pretended) == [
        "bulkred.sum(axis=0): as installed launch '', pretended refused 'bulkred.sum: refused by the target'"
    ]


def test_every_option_has_its_values():
    """Each option of each row has a list of values by its schema type (a new type of
    option needs its list in BY_SCHEMA; until then OTHER sweeps it, refusing nothing)."""
    missing = [f"{row.name}.{o.name} ({o.schema})" for row in FUNCTIONS.values() for o in row.options if o.schema not in BY_SCHEMA]
    assert not missing, missing


def test_the_sweep_counts():
    """What the function sweep covers: every row, every argument of its signature."""
    rows = list(FUNCTIONS.values())
    calls = {row.name: sum(1 for _ in sweep_calls(row, getattr(bulkred, row.name))) for row in rows}
    assert len(calls) == len(FUNCTIONS) and min(calls.values()) > 150, calls
    for row in rows:
        names = {label.split("=")[0] for label, *_ in sweep_calls(row, getattr(bulkred, row.name)) if "=" in label}
        assert names == set(inspect.signature(getattr(bulkred, row.name)).parameters), (row.name, names)
