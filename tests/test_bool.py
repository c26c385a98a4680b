"""bool (``i1``, one byte in memory) and the kinds ``any`` and ``all`` on the CPU: each
reduction is lowered (``lower-tile-reductions``), run thread by thread by the
interpreter (``run_grid``) and compared with numpy, in each canonical form (whole, rows,
columns, middle, gather) at odd shapes; a sum of bool into int64 (and int32) through the
wider-dst rule; the verifier's refusals; the API's plans and refusals. The GPU runs are
in tests/gpu/test_bool_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest
from test_grid_element_types import module_text, out_shape, parsed, run_on_cpu
from xdsl.dialects.builtin import IntegerType, Signedness, i32, i64
from xdsl.utils.exceptions import VerifyException

import bulkred_dialect as bulkred
from bulkred_dialect import api
from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.assemble import assemble
from bulkred_dialect.backend_ptx.runtime import compile_tile_module, lower_tile_module
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.kernel_attrs import WORKSPACE_ATTR
from bulkred_dialect.ops.dtypes import DTYPES
from bulkred_dialect.ops.tile import ReduceOp, wider_dst_types
from bulkred_dialect.passes.dispatch import explain
from bulkred_dialect.passes.elements import ELEMS

# (shape, axes, the variant chosen on sm_90a)
FORMS = [
    ([1001], None, "grid_full"),
    ([1], None, "grid_full"),
    ([5, 37], [1], "grid_rows"),
    ([37, 5], [0], "grid_split_det"),
    ([3, 14, 5], [1], "grid_middle"),  # 2 row splits of 7
    ([4, 2, 6], [0, 2], "grid_runs"),
    ([4, 4, 6, 2], [0, 2], "grid_gather"),  # 8 values: one CTA
]
NUMPY = {"any": np.any, "all": np.all, "sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(161)


def sparse_bools(rng, shape, kind) -> np.ndarray:
    """Mostly false (for any; mostly true for all) with a few flipped elements, so that
    some slices are all false (all true) and some are not."""
    x = np.zeros(shape, np.bool_)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, size=max(1, flat.size // 40), replace=False)] = True
    return ~x if kind == "all" else x


def run(kind, x, shape, axes, dst="bool", deterministic=False) -> np.ndarray:
    y = np.zeros(out_shape(shape, axes), DTYPES[dst].numpy)
    return run_on_cpu(module_text(kind, shape, "bool", dst, axes, deterministic=deterministic), x, y)


def want(kind, x, axes, dst="bool") -> np.ndarray:
    r = NUMPY[kind](x, axis=None if axes is None else tuple(axes))
    return np.atleast_1d(np.asarray(r).astype(DTYPES[dst].numpy))


@pytest.mark.parametrize("kind", ["any", "all"])
@pytest.mark.parametrize("shape, axes, variant", FORMS, ids=lambda v: str(v).replace(" ", ""))
def test_any_all_on_the_interpreter(rng, kind, shape, axes, variant):
    x = sparse_bools(rng, shape, kind)
    op = next(o for o in parsed(module_text(kind, shape, "bool", "bool", axes)).walk() if isinstance(o, ReduceOp))
    assert explain(op, "sm_90a").endswith(f"chosen: {variant}")
    got = run(kind, x, shape, axes)
    assert got.dtype == np.bool_ and set(np.unique(got.view(np.uint8))) <= {0, 1}
    np.testing.assert_array_equal(got.reshape(-1), want(kind, x, axes).reshape(-1))


@pytest.mark.parametrize("kind", ["any", "all"])
def test_all_false_and_all_true(kind):
    for value in (False, True):
        x = np.full([3, 33], value)
        for axes in (None, [1], [0]):
            got = run(kind, x, [3, 33], axes)
            np.testing.assert_array_equal(got.reshape(-1), want(kind, x, axes).reshape(-1))


@pytest.mark.parametrize("dst", ["int64", "int32"])
@pytest.mark.parametrize("shape, axes, variant", FORMS, ids=lambda v: str(v).replace(" ", ""))
def test_sum_of_bool_counts(rng, dst, shape, axes, variant):
    x = rng.random(shape) < 0.5
    got = run("sum", x, shape, axes, dst)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got.reshape(-1), want("sum", x, axes, dst).reshape(-1))


@pytest.mark.parametrize("kind", ["max", "min", "prod"])
def test_the_other_kinds_of_bool(rng, kind):
    x = sparse_bools(rng, [5, 37], "all" if kind != "max" else "any")
    dst = "int64" if kind == "prod" else "bool"
    for axes in (None, [1], [0]):
        got = run(kind, x, [5, 37], axes, dst)
        np.testing.assert_array_equal(got.reshape(-1), want(kind, x, axes, dst).reshape(-1))


def test_the_bool_row():
    b = DTYPES["bool"]
    assert b.ir == IntegerType(1) and b.bytes == 1 and b.is_bool and not b.signed
    assert b.identity("any") == 0 and b.identity("all") == 1 and b.identity("and") == 1
    e = ELEMS["bool"]
    assert e.accumulator.name == "uint32" and str(e.ld) == "u8" and str(e.out_ld) == "b8"
    assert wider_dst_types("sum", b.ir) == [i32, i64, IntegerType(32, Signedness.UNSIGNED), IntegerType(64, Signedness.UNSIGNED)]
    assert wider_dst_types("any", b.ir) == []


@pytest.mark.parametrize(
    "kind, src, dst, message",
    [
        ("any", "f32", "f32", "'kind' any needs element type i1 (bool), got f32"),
        ("all", "i32", "i32", "'kind' all needs element type i1 (bool), got i32"),
        ("any", "i1", "i32", "'dst' element type must be src's i1 (kind any of i1 has no wider accumulator type), got i32"),
        ("sum", "i1", "i1", "'dst' element type of a sum of i1 (bool) must be a wider integer"),
    ],
)
def test_the_verifier_refuses(kind, src, dst, message):
    g = "#bulkred.scope<global>"
    text = (
        f"builtin.module {{\n  func.func @k(%x: memref<64x{src}, {g}>, %y: memref<1x{dst}, {g}>) {{\n"
        f"    bulkred.reduce {kind} grid %x, %y : memref<64x{src}, {g}>, memref<1x{dst}, {g}>\n    func.return\n  }}\n}}"
    )
    with pytest.raises(VerifyException) as e:
        parsed(text)
    assert message in str(e.value)


@pytest.mark.parametrize("kind, dst, axes", [("any", "bool", None), ("all", "bool", [1]), ("any", "bool", [0]), ("sum", "int64", [0])])
def test_assembles_for_both_targets(kind, dst, axes):
    for target in ("sm_90a", "sm_100a"):
        mod = compile_tile_module(parsed(module_text(kind, [64, 4096], "bool", dst, axes)), target)
        assert "ld.global.nc.v4.u8" in mod.ptx or "ld.global.nc.v2.u8" in mod.ptx
        assert len(mod.cubin or assemble(mod.ptx, target)) > 0  # compile_tile_module assembled it (nvJitLink)


def test_the_api_plans_and_explains_bool():
    x = np.zeros((64, 33), np.bool_)
    assert bulkred.any(x, explain=True).endswith("chosen: grid_full")
    assert bulkred.all(x, axis=1, explain=True).endswith("chosen: grid_rows")
    assert bulkred.any(x, axis=0, explain=True).endswith("chosen: grid_split_det")
    assert bulkred.sum(x, axis=-1, explain=True).endswith("chosen: grid_rows")
    assert api.plan("any", (64, 33), "bool").dst == "bool"
    assert api.plan("sum", (64, 33), "bool").dst == "int64"
    sig = api.compile_reduction("any", (64, 33), "bool", 1, "sm_90a", out_dtype="bool").signatures["bulkred_any"]
    assert [(p.dtype, p.shape) for p in sig.params] == [("bool", (64, 33)), ("bool", (64,))]


@pytest.mark.parametrize(
    "fn, x, kw, message",
    [
        ("sum", np.zeros(8, np.bool_), {"dtype": "bool"}, "bulkred.sum: a sum of bool into bool is not supported: pass dtype=int64"),
    ],
)
def test_the_api_refuses(fn, x, kw, message):
    with pytest.raises(api.ReductionError) as e:
        getattr(bulkred, fn)(x, explain=True, **kw)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_empty_any_all_fill_without_a_kernel(monkeypatch):
    monkeypatch.setattr(api, "kernel_of", lambda *a: pytest.fail("compiled"))
    got = bulkred.any(np.zeros((3, 0), np.bool_), axis=1)
    assert got.dtype == np.bool_ and got.shape == (3,) and not got.any()
    got = bulkred.all(np.zeros((0, 2), np.bool_), axis=0)
    assert got.dtype == np.bool_ and got.all()


NONZERO_FORMS = (([999], None), ([6, 45], [1]), ([45, 6], [0]), ([3, 2, 7], [0, 2]))
# The prologue [nonzero] is one setp after the element's load, whatever the form: each
# source type runs on the interpreter in one form (float32, a NaN source, and int8, the
# narrowest vector, in every form), so that every form and every type's setp runs.
NONZERO_CASES = {
    "float32": NONZERO_FORMS,
    "int8": NONZERO_FORMS,
    "float16": NONZERO_FORMS[:1],
    "int32": NONZERO_FORMS[1:2],
    "uint16": NONZERO_FORMS[2:3],
    "float64": NONZERO_FORMS[3:],
}


@pytest.mark.parametrize("dtype", list(NONZERO_CASES))
@pytest.mark.parametrize("kind", ["any", "all"])
def test_any_all_of_other_dtypes_reduce_x_nonzero(kind, dtype):
    """numpy's and torch's rule: any/all of a non-bool array reduce ``x != 0`` (NaN is
    nonzero), through the prologue [nonzero] (read in place, no bool copy); the API's
    module carries it and gives bool; the interpreter agrees with numpy (forms:
    ``NONZERO_CASES``)."""
    from bulkred_dialect.ops.tile import ReduceOp

    p = api.plan(kind, (6, 45), dtype, 1)
    assert p.dst == "bool"
    m = api.module_of(p)
    m.verify()
    op = next(o for o in m.walk() if isinstance(o, ReduceOp))
    assert [str(x.map_fn) for x in op.maps("prologue")] == ["nonzero"]
    assert bulkred.any(np.zeros((6, 45), dtype), axis=1, explain=True).endswith("chosen: grid_rows")
    rng = np.random.default_rng(4)
    for shape, axes in NONZERO_CASES[dtype]:
        x = (rng.integers(0, 3, shape) * (rng.random(shape) < 0.5)).astype(dtype)
        if dtype.startswith("float"):
            x.reshape(-1)[3] = np.nan
        kept = [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]
        with T.kernel("k") as k:
            xp = k.param("x", shape, dtype)
            y = k.param("y", kept, "bool")
            T.reduce(kind, y, xp, axes=axes, prologue=["nonzero"])
        mod = k.module()
        lower_tile_module(mod, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
        args = [x, np.zeros(kept, np.bool_)]
        f = next(o for o in mod.walk() if o.name == "func.func")
        if WORKSPACE_ATTR in f.attributes:
            args.append(np.zeros(f.attributes[WORKSPACE_ATTR].value.data, np.int8))
        got = run_grid(mod, "k", *args)[1]
        ax = None if axes is None else tuple(axes)
        want = np.any(x != 0, axis=ax) if kind == "any" else np.all(x != 0, axis=ax)
        assert np.array_equal(got.reshape(-1), np.reshape(want, -1)), (shape, axes)


def test_count_nonzero_is_a_sum_with_the_prologue_nonzero():
    x = np.array([[0, 1.5, np.nan], [0, 0, -2]], np.float32)
    with T.kernel("k") as k:
        xp = k.param("x", [2, 3], "float32")
        y = k.param("y", [2], "int64")
        T.reduce("sum", y, xp, axes=[1], prologue=["nonzero"])
    mod = k.module()
    lower_tile_module(mod, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    got = run_grid(mod, "k", x, np.zeros(2, np.int64))[1]
    assert list(got) == [2, 1]


@pytest.mark.parametrize(
    "kind, dst, prologue, message",
    [
        ("any", "f32", ["nonzero"], "'dst' element type of any with the prologue [nonzero] must be i1 (bool) or ui8, got f32"),
        ("max", "f32", ["nonzero"], "'prologue' map 'nonzero' is only valid with kind any, all or sum (a count), got kind max"),
        ("sum", "i1", ["nonzero"], "'dst' element type of a sum with the prologue [nonzero] (a count) must be i32, i64, ui32, ui64 or a float, got i1"),
        ("any", "i1", ["nonzero", "abs"], "'prologue' map 'nonzero' must be the only map, got nonzero, abs"),
    ],
)
def test_nonzero_verifier(kind, dst, prologue, message):
    from xdsl.utils.exceptions import VerifyException

    from bulkred_dialect.errors import BulkredError

    t = {"f32": "float32", "i1": "bool"}[dst]
    with pytest.raises((VerifyException, BulkredError)) as e:
        with T.kernel("k") as k:
            xp = k.param("x", [64], "float32")
            y = k.param("y", [1], t)
            T.reduce(kind, y, xp, prologue=prologue)
        k.module().verify()
    assert message in str(e.value)


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_any_of_every_dtype_assembles(target):
    """The prologue [nonzero]'s setp.neu/ne of each source type (bf16: sm_90) assembles:
    every type with vector loads (the whole array); float32 and int8 also by rows and by
    columns (the setp follows the load the same way in every form)."""
    for dtype in ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32", "int64", "uint64"):
        for axis in (None, 1, 0) if dtype in ("float32", "int8") else (None,):
            p = api.plan("any", (64, 256), dtype, axis)
            mod = api.kernel_of(p, target).module  # lowered, printed and assembled (nvJitLink)
            cubin = mod.cubin or mod.assemble()
            assert len(cubin) > 0, (dtype, axis)
