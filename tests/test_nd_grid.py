"""N-D grid reductions over any axes (issue 16): the canonical form of each request
(passes/canonical.py), the variant each form goes to, the verifier's axes and rank
rules through the builder, the lowered kernels run by the CPU interpreter against numpy
on random shapes (ranks 1 to 5, 1s and odd sizes) and random axis sets, and
examples/middle_sum.mlir."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from assemble_batched import assemble_each
from nd_grid_cases import check, module_of, out_shape, random_case, random_input

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.assemble import assemble
from bulkred_dialect.backend_ptx.printer import print_ptx
from bulkred_dialect.backend_ptx.runtime import compile_tile_module, lower_tile_module
from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.errors import BuildError
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.kernel_attrs import WORKSPACE_ATTR
from bulkred_dialect.ops.tile import ReduceOp, kernel_launch
from bulkred_dialect.passes.canonical import canonical
from bulkred_dialect.passes.dispatch import explain
from bulkred_dialect.passes.variants.kernel import COUNTER_BYTES

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "shape, axes, form",
    [
        ([7], [0], "whole [7]"),
        ([1], [0], "whole [1]"),
        ([1, 1, 1], [0, 2], "whole [1]"),
        ([2, 3, 4], [0, 1, 2], "whole [24]"),
        ([2, 1, 4], [0, 2], "whole [8]"),  # the kept axis has extent 1
        ([4, 1], [1], "outer [1, 4]"),  # nothing of extent > 1 reduced
        ([8, 4096], [1], "inner [8, 4096]"),
        ([8, 3, 5], [1, 2], "inner [8, 15]"),
        ([2, 3, 4, 5], [2, 3], "inner [6, 20]"),
        ([4, 8, 12], [0, 1], "outer [32, 12]"),
        ([64, 4096], [0], "outer [64, 4096]"),
        ([64, 1000, 256], [1], "middle [64, 1000, 256]"),
        ([4, 1, 6, 5], [1, 2], "middle [4, 6, 5]"),
        ([2, 3, 4, 5, 6], [1, 2], "middle [2, 12, 30]"),
        ([3, 4, 5], [0, 2], "general [3, 4, 5]"),
        ([3, 1, 4, 5], [0, 1, 3], "general [3, 4, 5]"),
        ([2, 3, 4, 5], [1, 3], "general [2, 3, 4, 5]"),
        ([2] * 8, [0, 2, 4, 6], "general [2, 2, 2, 2, 2, 2, 2, 2]"),
    ],
)
def test_canonical_form(shape, axes, form):
    c = canonical(shape, axes)
    assert str(c) == form
    assert c.kept == int(np.prod(out_shape(shape, axes)))
    assert c.kept * c.reduced_count == int(np.prod(shape))


def chosen(module, target="sm_90a") -> str:
    op = next(o for o in module.walk() if isinstance(o, ReduceOp))
    return explain(op, target).splitlines()[-1].removeprefix("chosen: ")


FORMS = [
    ("sum", [64, 1000, 256], "float32", [1], "grid_middle"),
    ("max", [3, 5, 7], "float16", [1], "grid_middle"),
    ("xor", [4, 1, 6, 5], "int32", [1, 2], "grid_middle"),
    ("sum", [3, 4, 5], "float32", [0, 2], "grid_runs"),
    ("min", [2, 3, 4, 5], "bfloat16", [1, 3], "grid_runs"),
    ("sum", [64, 16, 256], "float32", [0, 2], "grid_runs"),
    ("max", [3, 4, 5, 6], "float32", [0, 2], "grid_gather"),  # the innermost axis kept
    ("sum", [3, 4, 5, 6, 7], "int32", [0, 2, 4], "grid_gather"),  # 3 reduced axes
    ("sum", [70000, 3, 2], "float32", [1], "grid_gather"),  # O beyond the grid's z
    ("sum", [2] * 8, "float32", [0, 2, 4, 6], "grid_gather"),
    ("sum", [2] * 8, "float32", None, "grid_full"),
    ("sum", [4, 1], "float32", [1], "grid_split_det"),
    ("max", [1, 5, 1, 7], "float32", [0, 1, 2], "grid_split_det"),
    ("sum", [2, 3, 4, 5], "float32", [2, 3], "grid_rows"),
]


@pytest.fixture(scope="module")
def form_errors() -> dict[tuple[int, str], str | None]:
    """(index in FORMS, target) -> ptxas's error on that form's kernel (None: it
    assembles), lowered (bulkred-to-ptx, as compile_tile_module does) and printed; the
    kernels of one target and header in one nvJitLink run (tests/assemble_batched.py), a
    failing one alone. The form of 70000 blocks is left out (its dispatch is the point)."""
    out: dict[tuple[int, str], str | None] = {}
    for target in ("sm_90a", "sm_100a"):
        ptxs = [
            (str(i), print_ptx(lower_tile_module(module_of(kind, shape, dtype, axes, name=f"k{i}"), target), target))
            for i, (kind, shape, dtype, axes, _) in enumerate(FORMS)
            if shape[0] != 70000
        ]
        out.update(((int(n), target), e) for n, e in assemble_each(ptxs, target).items())
    return out


def _form_id(form) -> str:
    kind, shape, dtype, axes, variant = form
    return "-".join([kind, "x".join(map(str, shape)), dtype, "all" if axes is None else ".".join(map(str, axes)), variant])


@pytest.mark.parametrize("i", range(len(FORMS)), ids=[_form_id(f) for f in FORMS])
def test_every_form_has_a_variant_and_assembles(i, form_errors):
    kind, shape, dtype, axes, variant = FORMS[i]
    module = module_of(kind, shape, dtype, axes)
    assert chosen(module) == variant
    if shape[0] == 70000:
        return  # 70000 blocks: the dispatch is the point
    for target in ("sm_90a", "sm_100a"):
        assert form_errors[i, target] is None, f"{target}: {form_errors[i, target]}"


def test_explain_shows_the_canonical_form():
    op = next(o for o in module_of("sum", [64, 1000, 256], "float32", [1]).walk() if isinstance(o, ReduceOp))
    table = explain(op, "sm_90a")
    assert any(line.split()[:5] == ["grid_middle", "63", "form", "ok", "middle"] and line.endswith("middle [64, 1000, 256]") for line in table.splitlines())
    assert any(line.split()[:4] == ["grid_rows", "65", "form", "FAIL"] and line.endswith("middle [64, 1000, 256]") for line in table.splitlines())


def test_middle_plan():
    """One z-block per O, CTAs as wide as I, a partial row per split and block."""
    lowered = lower_tile_module(module_of("sum", [64, 1000, 256], "float32", [1]), "sm_90a")
    f = next(o for o in lowered.walk() if o.name == "func.func")
    launch = kernel_launch(f)
    tiles, split, blocks = launch.grid_dims
    assert (tiles, blocks, launch.block_dims) == (1, 64, (64, 1, 1))
    assert f.attributes[WORKSPACE_ATTR].value.data == -(-(64 * split * 256 * 4 + 64 * COUNTER_BYTES) // 16) * 16


def test_general_form_computes_addresses_with_div_rem():
    ptx = compile_tile_module(module_of("sum", [3, 4, 5, 6, 7], "float32", [0, 2, 4]), "sm_90a").ptx
    assert "div.u64" in ptx and "rem.u64" in ptx


def test_builder_axes():
    """Negative and unordered axes are normalised; repeated ones reach the verifier's message."""
    a = module_of("sum", [3, 4, 5], "float32", [2, 0])
    b = module_of("sum", [3, 4, 5], "float32", [0, -1])
    assert str(a) == str(b) == str(module_of("sum", [3, 4, 5], "float32", [0, 2]))
    with T.kernel("k") as k, pytest.raises(BuildError, match=r"'axes' of T.sum must name each axis once, got \[0, -3\] for a 3-D 'src' \(axis 0 more than once\)"):
        x = k.param("x", [3, 4, 5], "float32")
        y = k.param("y", [4, 5], "float32")
        T.sum(y, x, axes=[0, -3])
    with T.kernel("k") as k:
        x = k.param("x", [1] * 9, "float32")
        y = k.param("y", [1], "float32")
        T.sum(y, x)
    with pytest.raises(LocatedError, match=r"'src' of a grid-scope reduction must have rank 1 to 8, got rank 9"):
        k.module()


INTERPRETABLE = {"grid_split_bulk": "grid_split_det", "grid_full_cluster": "grid_full"}
"""The variants the interpreter cannot run (bulk copies, clusters) -> the one to force."""


def run_on_cpu(kind, x, axes):
    shape, dtype = list(x.shape), "int32" if x.dtype == np.int32 else "float32"
    variant = INTERPRETABLE.get(chosen(module_of(kind, shape, dtype, axes)))
    m = module_of(kind, shape, dtype, axes, variant)
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    f = next(iter(m.ops))
    ws = [np.zeros(t.get_shape(), np.uint8) for t in f.function_type.inputs.data[2:]]
    poison = np.full(out_shape(shape, axes), -7, x.dtype)
    _, got, *_ = run_grid(m, "k", x, poison, *ws)
    return got


@pytest.mark.parametrize("seed", range(6))
def test_random_reductions_on_the_interpreter(seed):
    """Ranks 1 to 5, extents from 1s and odd sizes, a random axis set: int32 (a random
    kind, exact) and float32 sums (within the accumulation bound)."""
    rng = np.random.default_rng(seed)
    for rank in (1, 2, 3, 4, 5) if seed % 2 == 0 else (5, 4, 3):
        shape, axes = random_case(rng, rank, 400)
        kind = str(rng.choice(["sum", "max", "min", "and", "or", "xor"]))
        x = random_input(rng, shape, "int32")
        check(kind, x, run_on_cpu(kind, x, axes), axes)
        xf = random_input(rng, shape, "float32")
        check("sum", xf, run_on_cpu("sum", xf, axes), axes)


@pytest.mark.parametrize(
    "shape, axes",
    [
        ([3, 13, 7], [1]),  # grid_middle: 2 row splits of 6 rows (4 unrolled, 2 more), then a 13th row
        ([2, 3, 5], [0, 2]),
        ([3, 1, 5, 2, 3], [0, 2, 4]),
        ([2, 3, 2, 5], [1, 3]),
        ([2, 15, 3], [1]),  # grid_middle: 2 row splits of 7 rows (4 unrolled, 3 more), then a 15th row
        ([3, 5, 40], [0, 2]),  # grid_runs: the inner 40 read as vectors
        ([2, 2, 2, 2, 33], [0, 2, 4]),  # grid_gather's runs: 4 runs of 33 per value, read by the lanes together
    ],
)
def test_middle_and_general_on_the_interpreter(shape, axes):
    rng = np.random.default_rng(sum(shape))
    for kind in ("sum", "max"):
        x = random_input(rng, shape, "float32")
        check(kind, x, run_on_cpu(kind, x, axes), axes)
    x = random_input(rng, shape, "int32")
    check("sum", x, run_on_cpu("sum", x, axes), axes)


def _bulkred_opt(*args: str) -> str:
    """bulkred-opt's output (its ``main``, in this process, as tests/test_assemble_all.py
    runs the lit RUN lines), checking that it exits 0."""
    import contextlib
    import io

    from bulkred_dialect.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    assert status == 0, err.getvalue()
    return out.getvalue()


def test_middle_sum_example():
    """examples/middle_sum.mlir: the explain table names the form and grid_middle, and
    bulkred-to-ptx gives PTX that assembles."""
    example = str(ROOT / "examples" / "middle_sum.mlir")
    out = _bulkred_opt(example, "-p", "lower-tile-reductions{target=sm_90a explain=true}")
    assert "// chosen: grid_middle\n" in out and "middle [64, 1000, 256]" in out
    out = _bulkred_opt(example, "-p", "bulkred-to-ptx{target=sm_100a}", "-t", "ptx")
    assert len(assemble(out, "sm_100a")) > 0


def test_interpreter_div_rem():
    """ptx.div rounds toward zero and ptx.rem takes the sign of the dividend, as on the GPU."""
    from bulkred_dialect.backend_ptx.runtime import parse
    from bulkred_dialect.interpreter import run_kernel

    g = "#bulkred.scope<global>"
    m = parse(f"""
func.func @k(%o: memref<4xi32, {g}>) {{
  %a = arith.constant -7 : i32
  %b = arith.constant 2 : i32
  %q = ptx.div s32 %a, %b : i32
  %r = ptx.rem s32 %a, %b : i32
  %qu = ptx.div u32 %a, %b : i32
  %ru = ptx.rem u32 %a, %b : i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  memref.store %q, %o[%c0] : memref<4xi32, {g}>
  memref.store %r, %o[%c1] : memref<4xi32, {g}>
  memref.store %qu, %o[%c2] : memref<4xi32, {g}>
  memref.store %ru, %o[%c3] : memref<4xi32, {g}>
  func.return
}}""")
    (out,) = run_kernel(m, "k", np.zeros(4, np.int32))
    assert out.tolist() == [-3, -1, (2**32 - 7) // 2, 1]


@pytest.mark.parametrize(
    "shape, axes, variant",
    [([3, 9, 5], [1], "grid_middle"), ([3, 4, 5], [0, 2], "grid_runs"), ([3, 4, 5, 2], [0, 2], "grid_gather")],
)
def test_accum_combines_with_dst(shape, axes, variant):
    """``accum``: dst's old values are combined with the reduction (int32, exact)."""
    kept = out_shape(shape, axes)
    with T.kernel("k") as k:
        x = k.param("x", shape, "int32")
        y = k.param("y", kept, "int32")
        T.sum(y, x, axes=axes, accum=True)
    m = k.module()
    assert chosen(m) == variant
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    f = next(iter(m.ops))
    ws = [np.zeros(t.get_shape(), np.uint8) for t in f.function_type.inputs.data[2:]]
    rng = np.random.default_rng(7)
    xs = rng.integers(-1000, 1000, shape).astype(np.int32)
    old = rng.integers(-1000, 1000, kept).astype(np.int32)
    _, got, *_ = run_grid(m, "k", xs, old.copy(), *ws)
    np.testing.assert_array_equal(got, old + xs.sum(axis=tuple(axes), dtype=np.int32).reshape(kept))


@pytest.mark.parametrize(
    "shape, axes, like",
    [
        ([300], None, "grid_full"),  # whole
        ([300000], None, "grid_full"),  # whole, several CTAs
        ([7, 301], [1], "grid_rows"),  # inner
        ([40, 6], [0], "grid_split_det"),  # outer, one CTA
        ([3000, 40], [0], "grid_split_det"),  # outer, row splits
        ([3, 21, 9], [1], "grid_middle"),  # middle
        ([5, 2, 40], [0, 2], "grid_runs"),  # general with contiguous runs
    ],
)
def test_forced_grid_gather_runs_the_streaming_loop_with_scalar_loads(shape, axes, like):
    """The API forces grid_gather for a view off its kernel's vector alignment: a form
    with a streaming variant then runs that variant's loop with scalar loads (the same
    launch shape as ``like`` would have with vec = 1, no ``bulkred.align``), right on the
    interpreter."""
    from bulkred_dialect.ops.kernel_attrs import ALIGN_ATTR

    forced = module_of("sum", shape, "float32", axes, "grid_gather")
    assert chosen(forced) == "grid_gather"
    ptx = compile_tile_module(module_of("sum", shape, "float32", axes, "grid_gather"), "sm_90a").ptx
    assert "ld.global.nc.v" not in ptx and "div.u64" not in ptx
    lowered = lower_tile_module(module_of("sum", shape, "float32", axes, "grid_gather"), "sm_90a")
    f = next(o for o in lowered.walk() if o.name == "func.func")
    assert ALIGN_ATTR not in f.attributes
    assert chosen(module_of("sum", shape, "float32", axes)) in (like, "grid_split_bulk")
    if np.prod(shape) > 20000:
        return  # the interpreter's time: the small shapes run below
    rng = np.random.default_rng(3)
    x = random_input(rng, shape, "float32")
    m = module_of("sum", shape, "float32", axes, "grid_gather")
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    fn = next(iter(m.ops))
    ws = [np.zeros(t.get_shape(), np.uint8) for t in fn.function_type.inputs.data[2:]]
    kept = out_shape(shape, axes if axes is not None else list(range(len(shape))))
    _, got, *_ = run_grid(m, "k", x, np.full(kept, -7, np.float32), *ws)
    check("sum", x, got, axes if axes is not None else list(range(len(shape))))
