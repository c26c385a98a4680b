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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx import assemble, loading, printer, runtime
from bulkred_dialect.errors import BulkredError
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


def _seed():
    return runtime.parse(SEED, "seed_sum32.mlir")


def _level2():
    m = _seed()
    LowerTileReductionsPass().apply(T.context(), m)
    return m


def _level3():
    return runtime.lower_tile_module(_seed(), "sm_90a")


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
    _e("loading.parse", loading.parse, lambda b: ((SEED,), {})),
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
    # the interpreter
    _e("interpreter.run_kernel", run_kernel,
       lambda b: ((_level2(), "test_func", *_seed_arrays()), {"thread_id": (0, 0, 0), "block_id": (0, 0, 0), "cluster_rank": 0})),
    _e("interpreter.run_grid", run_grid,
       lambda b: ((_level2(), "test_func", *_seed_arrays()), {"grid": None, "block": None})),
    # the backend
    _e("printer.print_ptx", printer.print_ptx, lambda b: ((_level3(), "sm_90a"), {})),
    _e("assemble.assemble", assemble.assemble,
       lambda b: ((PTX, "sm_90a"), {"extra_options": (), "isolated": False, "timeout": 120.0})),
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


@pytest.mark.parametrize("entry", BUILDER, ids=[e.name for e in BUILDER])
def test_builder_inside_a_kernel(entry):
    found = violations(entry, _open_kernel)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("entry", BUILDER, ids=[e.name for e in BUILDER])
def test_builder_outside_a_kernel(entry):
    found = violations(entry, _closed_kernel)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("entry", OTHERS, ids=[e.name for e in OTHERS])
def test_public_function(entry):
    found = violations(entry)
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
