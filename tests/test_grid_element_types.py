"""Element types at grid scope (and below) on the CPU: 64-bit accumulators (f64, i64,
ui64), a wider ``dst`` (the accumulator and output type: int32 into int64, float16 into
float32), and the narrow and unsigned types (int8, uint8, int16, uint16, uint32). Each
reduction is lowered (``lower-tile-reductions``), run thread by thread by the
interpreter (``run_grid``) and compared with numpy: integers exactly, floats within a
bound. The dst-type rule of ``ops/tile/reduce.py``, the warp and CTA steps of f64 and i64, and
assembly of every type for sm_90a and sm_100a (nvJitLink)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from each_case import each_case
from nan_prod_cases import scope_kernel
from xdsl.dialects.builtin import IntegerType, Signedness, f16, f32, f64

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.assemble import assemble
from bulkred_dialect.backend_ptx.printer import assemble_module
from bulkred_dialect.backend_ptx.runtime import compile_tile_module
from bulkred_dialect.diagnostics import parse_module
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.dtypes import DTYPES, GRID_DTYPES
from bulkred_dialect.ops.tile import ReduceOp, wider_dst_types
from bulkred_dialect.passes.dispatch import explain
from bulkred_dialect.passes.elements import ELEMS, Elem
from bulkred_dialect.passes.lower_tile_reductions import LowerTileReductionsPass
from bulkred_dialect.pipeline import apply_passes, available_passes, build_passes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import scopes  # noqa: E402

G = "#bulkred.scope<global>"
BITWISE = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(16)


def mlir_type(dtype: str) -> str:
    return DTYPES[dtype].mlir


def out_shape(shape, axes):
    return [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]


def kernel_text(name, kind, shape, src, dst, axes, *, deterministic=False, accum=False) -> str:
    """``func.func @name(%x, %y)``: one grid reduction of ``x`` into ``y``."""
    s = "x".join(map(str, shape))
    o = "x".join(map(str, out_shape(shape, axes)))
    st, dt = f"memref<{s}x{mlir_type(src)}, {G}>", f"memref<{o}x{mlir_type(dst)}, {G}>"
    opts = (" accum" if accum else "") + (" deterministic" if deterministic else "")
    if axes is not None:
        opts += " axes [" + ", ".join(f"{a} : i64" for a in axes) + "]"
    return (
        f"  func.func @{name}(%x: {st}, %y: {dt}) {{\n"
        f"    bulkred.reduce {kind} grid{opts} %x, %y : {st}, {dt}\n    func.return\n  }}\n"
    )


def module_text(kind, shape, src, dst, axes, *, deterministic=False, accum=False) -> str:
    return "builtin.module {\n" + kernel_text("k", kind, shape, src, dst, axes, deterministic=deterministic, accum=accum) + "}"


def parsed(text: str):
    m = parse_module(T.context(), text)
    m.verify()  # (xDSL's VerifyException: test_bool's refusals expect it)
    return m


def run_on_cpu(text: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Lower (sm_90a) and run every thread; columns take the deterministic variant (the
    interpreter runs no bulk copies)."""
    m = parsed(text)
    LowerTileReductionsPass(target="sm_90a").apply(T.context(), m)
    kernel = next(o for o in m.walk() if o.name == "func.func")
    ws = kernel.attributes.get("bulkred.workspace")
    extra = [np.zeros(ws.value.data, np.int8)] if ws is not None else []
    return run_grid(m, "k", x, y, *extra)[1]


def random_input(rng, shape, dtype: str) -> np.ndarray:
    d = DTYPES[dtype]
    if d.is_float:
        x = rng.standard_normal(shape) * 100
        if dtype == "bfloat16":
            return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return x.astype(d.numpy)
    info = np.iinfo(d.numpy)
    return rng.integers(info.min, info.max, shape, endpoint=True, dtype=d.numpy)


def as_float64(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def expected(kind, x, src, dst, axes):
    """numpy's reduction, in dst's type (integers wrap as the GPU does)."""
    ax = None if axes is None else tuple(axes)
    s, d = DTYPES[src], DTYPES[dst]
    if not s.is_float:
        if kind in BITWISE:
            flat = x.reshape(-1) if ax is None else x
            r = BITWISE[kind].reduce(flat, axis=0 if ax is None else ax[0])
        elif kind == "sum":
            r = x.astype(d.numpy).sum(axis=ax, dtype=d.numpy)
        else:
            r = {"max": np.max, "min": np.min}[kind](x, axis=ax)
        return np.atleast_1d(np.asarray(r).astype(d.numpy))
    f = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    return np.atleast_1d(f(as_float64(x, src), axis=ax))


def check(kind, x, got, src, dst, axes):
    want = expected(kind, x, src, dst, axes)
    got = got.reshape(want.shape)
    d = DTYPES[dst]
    if not d.is_float:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        return
    got = as_float64(got, dst)
    if kind != "sum":
        np.testing.assert_array_equal(got, want)
        return
    acc = Elem.of(DTYPES[src], d if d is not DTYPES[src] else None).accumulator
    n = x.size if axes is None else math.prod(x.shape[a] for a in axes)
    eps_acc = {32: 2**-24, 64: 2**-53}[acc.bits]
    eps_out = {"float64": 2**-53, "float32": 2**-24, "float16": 2**-11, "bfloat16": 2**-8}[dst]
    absx = np.atleast_1d(np.sum(np.abs(as_float64(x, src)), axis=None if axes is None else tuple(axes)))
    bound = eps_acc * n * absx + eps_out * np.abs(want) + 1e-300
    assert np.all(np.abs(got - want) <= bound), (got, want)


# The forms at small shapes (the interpreter runs every thread): whole, rows, columns.
FORMS = [([5, 18], None), ([5, 18], [1]), ([5, 18], [0])]
NEW_TYPES = ["int8", "uint8", "int16", "uint16", "uint32", "int64", "uint64", "float64"]


def _kinds(dtype):
    return ["sum", "max", "min"] + ([] if DTYPES[dtype].is_float else ["and", "or", "xor"])


# Each type's sum runs every form (the form moves the elements: its loads, shuffles and
# shared memory, in the type's width); each other kind, one instruction of the type in
# those same moves, runs the whole array (loads, warp shuffles and the CTA's shared
# memory); max also by rows for the float type (NaN rules), int64 and uint8.
CASES = [
    (kind, t, t, shape, axes)
    for t in NEW_TYPES
    for kind in _kinds(t)
    for shape, axes in (FORMS if kind == "sum" else FORMS[:2] if kind == "max" and t in ("float64", "int64", "uint8") else FORMS[:1])
]
WIDER = [
    ("sum", "int32", "int64"),
    ("sum", "int8", "int64"),
    ("sum", "uint8", "int64"),
    ("sum", "uint16", "uint32"),
    ("sum", "uint32", "uint64"),
    ("sum", "int16", "int32"),
    ("sum", "float16", "float32"),
    ("sum", "bfloat16", "float32"),
    ("sum", "float32", "float64"),
    ("max", "float16", "float32"),
    ("min", "bfloat16", "float64"),
]
CASES += [(kind, s, d, shape, axes) for kind, s, d in WIDER for shape, axes in FORMS]


TYPE_PAIRS = list(dict.fromkeys((src, dst) for _, src, dst, _, _ in CASES))


@pytest.mark.parametrize("src, dst", TYPE_PAIRS, ids=[f"{s}-{d}" for s, d in TYPE_PAIRS])
def test_grid_reduction_on_the_interpreter(src, dst):
    """Each case of ``CASES`` of these types (kind, shape, axes), its input from a fresh
    generator of seed 16."""

    def one(kind, shape, axes):
        x = random_input(np.random.default_rng(16), shape, src)
        y = np.zeros(out_shape(shape, axes), DTYPES[dst].numpy)
        got = run_on_cpu(module_text(kind, shape, src, dst, axes, deterministic=True), x, y)
        check(kind, x, got, src, dst, axes)

    each_case(one, [(kind, shape, axes) for kind, s, d, shape, axes in CASES if (s, d) == (src, dst)])


def test_int32_sum_into_int64_does_not_wrap():
    x = np.full([3, 40], 2**31 - 1, np.int32)
    for axes in (None, [1], [0]):
        got = run_on_cpu(module_text("sum", [3, 40], "int32", "int64", axes, deterministic=True), x, np.zeros(out_shape([3, 40], axes), np.int64))
        assert got.tolist() == np.atleast_1d(x.astype(np.int64).sum(axis=None if axes is None else tuple(axes))).tolist()


def test_accum_with_a_wider_dst():
    x = np.arange(-60, 60, dtype=np.int32).reshape(3, 40) * 2**24
    old = np.array([2**40, -(2**40), 7], np.int64)
    got = run_on_cpu(module_text("sum", [3, 40], "int32", "int64", [1], accum=True), x, old.copy())
    assert got.tolist() == (old + x.astype(np.int64).sum(axis=1)).tolist()


@pytest.mark.parametrize("dtype", ["float64", "int64"])
@pytest.mark.parametrize("scope", ["warp", "cta"])
def test_64_bit_warp_and_cta_steps(rng, dtype, scope):
    """The kernel of examples/scopes.py (thread t reduces x[t] at ``scope``), at a size
    of its own: the warp step in one CTA of 4 warps, the CTA step (4 warp partials
    through shared memory) in 2 CTAs."""
    ctas, threads = (1, 128) if scope == "warp" else (2, 128)
    for kind in ("sum", "max") + (("xor",) if dtype == "int64" else ()):
        m = T.module(scope_kernel(kind, scope, dtype, ctas=ctas, threads=threads), target="sm_90a")
        op = next(o for o in m.walk() if isinstance(o, ReduceOp))
        assert explain(op, "sm_90a").splitlines()[-1] == f"chosen: {'warp_shuffle' if scope == 'warp' else 'cta_shared'}"
        LowerTileReductionsPass(target="sm_90a").apply(T.context(), m)
        n = ctas * threads
        x = rng.standard_normal(n) * 1e6 if dtype == "float64" else rng.integers(-(2**62), 2**62, n)
        _, out = run_grid(m, "k", x, np.zeros(n, x.dtype))
        group = 32 if scope == "warp" else threads
        f = {"sum": np.sum, "max": np.max, "xor": np.bitwise_xor.reduce}[kind]
        want = np.repeat(f(x.reshape(-1, group), axis=1), group)
        if dtype == "float64" and kind == "sum":
            np.testing.assert_allclose(out, want, rtol=1e-12)
        else:
            np.testing.assert_array_equal(out, want)


ASSEMBLE = [
    *[("sum", t, t, s, a) for t in NEW_TYPES for s, a in [([64, 4096], None), ([64, 4096], [1]), ([64, 4096], [0])]],
    *[("max", t, t, [64, 4096], [0]) for t in ("uint8", "uint16", "uint32", "uint64", "int8")],
    *[(k, s, d, [64, 4096], a) for k, s, d in WIDER for a in ([1], [0])],
]


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_assembles_for_both_targets(target):
    """Every case of ``ASSEMBLE``, a kernel each, in one module per target: one ptxas run
    checks them all, and a rejected line is reported on the op (and kernel) it came
    from (``assemble_module``), as tests/test_assemble_all.py does."""
    names = [f"{k}_{s}_{d}_{'all' if a is None else ''.join(map(str, a))}" for k, s, d, _, a in ASSEMBLE]
    assert len(set(names)) == len(names)
    kernels = [kernel_text(n, kind, shape, src, dst, axes) for n, (kind, src, dst, shape, axes) in zip(names, ASSEMBLE)]
    text = "builtin.module {\n" + "".join(kernels) + "}"
    # lower_tile_module's steps, the result verified once: by assemble_module's printer
    lowered = parse_module(T.context(), text)
    passes = build_passes(f"bulkred-to-ptx{{target={target}}}", available_passes())
    apply_passes(T.context(), lowered, passes, verify_output=False)  # verifies the input
    assert len(assemble_module(lowered, target)) > 0
    assert len([o for o in lowered.ops if o.name == "func.func"]) == len(ASSEMBLE)


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_64_bit_cluster_reduction_assembles(dtype):
    for target in ("sm_90a", "sm_100a"):
        m = T.module(scopes.scope_kernel("k", "sum", "cluster", dtype, 2), target=target)
        mod = compile_tile_module(m, target)
        assert "mov.b64 {%r" in mod.ptx and len(mod.cubin or assemble(mod.ptx, target)) > 0


def test_dst_type_rule():
    ui = lambda w: IntegerType(w, Signedness.UNSIGNED)  # noqa: E731
    i = IntegerType
    assert wider_dst_types("sum", f16) == [f32, f64]
    assert wider_dst_types("max", f16) == [f32, f64]
    assert wider_dst_types("sum", f32) == [f64]
    assert wider_dst_types("sum", f64) == []
    assert wider_dst_types("sum", i(32)) == [i(64)]
    assert wider_dst_types("prod", i(8)) == [i(32), i(64)]
    assert wider_dst_types("sum", ui(8)) == [i(32), i(64), ui(32), ui(64)]
    assert wider_dst_types("max", i(8)) == []
    assert wider_dst_types("xor", ui(32)) == []


def test_every_grid_type_has_an_elem():
    assert list(ELEMS) == [d.name for d in GRID_DTYPES]
    # 16 bytes per vector load, except 8-bit (4 bytes) and 16-bit (8 bytes) types
    assert {n: e.vector_bytes for n, e in ELEMS.items()} == {
        d.name: {1: 4, 2: 8, 4: 16, 8: 16}[d.bytes] for d in GRID_DTYPES
    }
    assert Elem.of(DTYPES["int32"], DTYPES["int64"]).slot_bytes == 8
    assert Elem.of(DTYPES["float16"]).accumulator.name == "float32"
    assert Elem.of(DTYPES["uint8"]).accumulator.name == "uint32"
