"""Grid-scope reductions on the CPU: the variant and launch shape the dispatch picks
for each form, the kernel attributes the runtime relies on (workspace, outputs to zero),
the builder's axes, and assembly of every variant for sm_90a and sm_100a."""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import numpy as np
import pytest
from assemble_batched import assemble_each

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.printer import print_ptx
from bulkred_dialect.backend_ptx.runtime import compile_tile_module, lower_tile_module
from bulkred_dialect.ops.kernel_attrs import ALIGN_ATTR, WORKSPACE_ATTR, ZERO_INIT_ATTR
from bulkred_dialect.ops.tile import ReduceOp, kernel_launch
from bulkred_dialect.passes.dispatch import explain

ROOT = Path(__file__).resolve().parents[1]


def kernel_of(kind, shape, dtype, axes=None, *, name="k", **options):
    reduced = None if axes is None else [a % len(shape) for a in axes]
    out = [d for i, d in enumerate(shape) if reduced is not None and i not in reduced] or [1]
    with T.kernel(name) as k:
        x = k.param("x", shape, dtype)
        y = k.param("y", out, dtype)
        T.reduce(kind, y, x, axes=axes, **options)
    return k.module()


def chosen(module, target="sm_90a") -> str:
    op = next(o for o in module.walk() if isinstance(o, ReduceOp))
    return explain(op, target).splitlines()[-1].removeprefix("chosen: ")


def lowered_func(module, target="sm_90a"):
    lowered = lower_tile_module(module, target)
    return next(o for o in lowered.walk() if o.name == "func.func")


DISPATCH_CASES = [
    ("sum", [1], "float32", None, {}, "grid_full"),
    ("min", [65539], "float16", None, {}, "grid_full"),
    ("max", [31], "bfloat16", None, {}, "grid_full"),
    ("or", [4097], "int32", None, {}, "grid_full_cluster"),
    ("sum", [2, 3, 4], "float32", [0, 1, 2], {}, "grid_full"),
    ("sum", [8, 4096], "float32", [1], {}, "grid_rows"),
    ("max", [8, 3, 5], "int32", [1, 2], {}, "grid_rows"),
    ("sum", [512, 4096], "float32", [0], {}, "grid_split_bulk"),
    ("sum", [512, 4096], "int32", [0], {}, "grid_split_bulk"),
    ("sum", [64, 4096], "float32", [0], {}, "grid_split_det"),  # 1 MiB: under split_bulk's size
    ("sum", [32, 32], "float32", [0], {}, "grid_split_det"),  # 4 KiB: one CTA
    ("sum", [64, 4096], "float32", [0], {"deterministic": True}, "grid_split_det"),
    ("sum", [64, 4097], "float32", [0], {}, "grid_split_det"),
    ("max", [64, 4096], "float32", [0], {}, "grid_split_det"),
    ("sum", [64, 4096], "float16", [0], {}, "grid_split_det"),
    ("sum", [4, 8, 12], "float32", [0, 1], {}, "grid_split_det"),
    ("sum", [4, 128, 1024], "float32", [0, 1], {}, "grid_split_bulk"),
]


@pytest.fixture(scope="module")
def case_errors() -> dict[tuple[int, str], str | None]:
    """(index in DISPATCH_CASES, target) -> ptxas's error on that case's kernel (None: it
    assembles), lowered (bulkred-to-ptx, as compile_tile_module does) and printed; the
    kernels of one target and header in one nvJitLink run (tests/assemble_batched.py), a
    failing one alone."""
    out: dict[tuple[int, str], str | None] = {}
    for target in ("sm_90a", "sm_100a"):
        ptxs = [
            (str(i), print_ptx(lower_tile_module(kernel_of(kind, shape, dtype, axes, name=f"k{i}", **options), target), target))
            for i, (kind, shape, dtype, axes, options, _) in enumerate(DISPATCH_CASES)
        ]
        out.update(((int(n), target), e) for n, e in assemble_each(ptxs, target).items())
    return out


def _case_id(case) -> str:
    kind, shape, dtype, axes, options, variant = case
    parts = [kind, "x".join(map(str, shape)), dtype, "all" if axes is None else ".".join(map(str, axes))]
    return "-".join(parts + [f"{k}={v}" for k, v in options.items()] + [variant])


@pytest.mark.parametrize("i", range(len(DISPATCH_CASES)), ids=[_case_id(c) for c in DISPATCH_CASES])
def test_dispatch_and_assembly(i, case_errors):
    kind, shape, dtype, axes, options, variant = DISPATCH_CASES[i]
    module = kernel_of(kind, shape, dtype, axes, **options)
    assert chosen(module) == variant
    for target in ("sm_90a", "sm_100a"):
        assert case_errors[i, target] is None, f"{target}: {case_errors[i, target]}"


def test_full_sum_plan():
    func = lowered_func(kernel_of("sum", [65536 * 4096], "float32"))
    launch = kernel_launch(func)
    assert (launch.grid_dims, launch.block_dims, launch.cluster_dims) == ((528, 1, 1), (512, 1, 1), (1, 1, 1))
    # one 4-byte partial per CTA (aligned to 16) and the ticket counter
    assert func.attributes[WORKSPACE_ATTR].value.data == 528 * 4 + 16
    assert ZERO_INIT_ATTR not in func.attributes
    assert len(func.function_type.inputs.data) == 3  # x, y and the workspace


def test_small_full_sum_uses_one_cta():
    launch = kernel_launch(lowered_func(kernel_of("sum", [31], "float32")))
    assert launch.grid_dims == (1, 1, 1)


def test_column_sum_plan_and_zero_init():
    func = lowered_func(kernel_of("sum", [65536, 4096], "float32", [0]))
    assert kernel_launch(func).grid_dims == (4, 264, 1)
    assert [a.value.data for a in func.attributes[ZERO_INIT_ATTR].data] == [1]
    assert WORKSPACE_ATTR not in func.attributes


def test_accumulating_column_sum_zeroes_nothing():
    func = lowered_func(kernel_of("sum", [64, 4096], "float32", [0], accum=True))
    assert ZERO_INIT_ATTR not in func.attributes


def test_deterministic_column_sum_has_a_workspace_of_partial_rows():
    func = lowered_func(kernel_of("sum", [65536, 4096], "float32", [0], deterministic=True))
    tiles, split = kernel_launch(func).grid_dims[:2]
    assert (tiles, split) == (4, 132)
    assert func.attributes[WORKSPACE_ATTR].value.data == split * 4096 * 4 + 16


def test_cluster_variant_launches_clusters_of_two():
    launch = kernel_launch(lowered_func(kernel_of("sum", [1 << 20], "int32")))
    assert launch.cluster_dims == (2, 1, 1) and launch.grid_dims[0] % 2 == 0


def test_sm100a_row_max_uses_redux_f32():
    ptx = compile_tile_module(kernel_of("max", [64, 256], "float32", [1]), "sm_100a").ptx
    assert "redux.sync.max.NaN.f32" in ptx and "shfl.sync" not in ptx  # NaN propagates by default
    ptx90 = compile_tile_module(kernel_of("max", [64, 256], "float32", [1]), "sm_90a").ptx
    assert "redux.sync" not in ptx90 and "shfl.sync.bfly.b32" in ptx90


def test_builder_axes_spellings():
    a = kernel_of("sum", [4, 8], "float32", [-1])
    b = kernel_of("sum", [4, 8], "float32", [1])
    assert str(a) == str(b)
    with T.kernel("k") as k:
        x = k.param("x", [4, 8], "float32")
        y = k.param("y", [8], "float32")
        op = T.sum(y, x, axes=0)
    assert op.reduced_axes() == [0] and op.scope.data == "grid"
    with T.kernel("k2") as k, pytest.raises(ValueError, match="'axes' of T.sum must be an integer or a list of integers"):
        x = k.param("x", [4, 8], "float32")
        y = k.param("y", [8], "float32")
        T.sum(y, x, axes=["0"])


def test_reductions_example_runs_without_a_gpu():
    """examples/reductions.py run as a script (``__main__``), in this process: a Python
    process of its own would add only its start-up and imports."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(ROOT / "examples" / "reductions.py"), run_name="__main__")
    assert "column_sum: chosen: grid_split_bulk" in out.getvalue()
    assert "vector_xor_i32: chosen: grid_full_cluster" in out.getvalue()


@pytest.mark.parametrize(
    "kind, shape, dtype, axes, options, align",
    [
        ("sum", [4096], "float32", None, {}, [16, 1]),  # grid_full: ld.global.nc.v4.f32 of x
        ("sum", [27885], "float16", None, {}, [8, 1]),  # v4.b16: 8 bytes
        ("max", [31], "bfloat16", None, {}, [8, 1]),
        ("or", [4097], "int32", None, {}, [16, 1]),  # grid_full_cluster
        ("sum", [8, 4096], "float32", [1], {}, [16, 1]),  # grid_rows
        ("sum", [512, 4096], "float32", [0], {}, [16, 16]),  # grid_split_bulk: and cp.reduce.async.bulk into y
        ("sum", [64, 4096], "float32", [0], {"deterministic": True}, [16, 1]),  # the workspace is not a user param
        ("sum", [64, 4096], "float16", [0], {}, [8, 1]),
        ("sum", [1], "float32", None, {}, None),  # scalar loads only
        ("max", [8, 3, 5], "int32", [1, 2], {}, None),
        ("sum", [64, 4097], "float32", [0], {}, None),
    ],
)
def test_vector_loads_record_the_alignment_they_need(kind, shape, dtype, axes, options, align):
    """bulkred.align: per user parameter, the width of the kernel's widest vector access
    of it (the launcher refuses a misaligned array: docs/runtime.md)."""
    from bulkred_dialect.backend_ptx.signature import signature_of_func

    func = lowered_func(kernel_of(kind, shape, dtype, axes, **options))
    got = func.attributes.get(ALIGN_ATTR)
    assert (None if got is None else [a.value.data for a in got.data]) == align
    assert signature_of_func(func).align == (() if align is None else tuple(align))


@pytest.mark.parametrize(
    "shape, dtype, block",
    [([32, 32], "float32", 256), ([128, 128], "float32", 1024), ([64, 256], "float32", 1024), ([5, 37], "int32", 192)],
)
def test_small_column_reduction_is_one_cta(shape, dtype, block):
    """grid_split_det of at most 64 KiB: one CTA (row groups of vector columns), no
    workspace, no ticket; its results on the interpreter match numpy."""
    from bulkred_dialect.interpreter.threads import run_grid

    module = kernel_of("sum", shape, dtype, [0])
    assert chosen(module) == "grid_split_det"
    func = lowered_func(kernel_of("sum", shape, dtype, [0]))
    launch = kernel_launch(func)
    assert launch.grid_dims == (1, 1, 1) and launch.block_dims == (block, 1, 1)
    assert WORKSPACE_ATTR not in func.attributes
    ptx = compile_tile_module(kernel_of("sum", shape, dtype, [0]), "sm_90a").ptx
    assert "atom." not in ptx and "bar.sync" in ptx
    if shape in ([128, 128], [64, 256]):
        # one CTA of 1024 threads: [32, 32]'s kernel (row groups of vector columns,
        # combined in shared memory), more columns per row group and more groups of
        # fewer rows; interpreted there (256 threads) and at [5, 37] (scalar columns)
        return
    rng = np.random.default_rng(5)
    if dtype == "int32":
        x = rng.integers(-1000, 1000, shape).astype(np.int32)
    else:
        x = rng.standard_normal(shape).astype(np.float32)
    m = kernel_of("sum", shape, dtype, [0])
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    _, got = run_grid(m, "k", x, np.full(shape[1], -7, x.dtype))
    if dtype == "int32":
        np.testing.assert_array_equal(got, x.sum(axis=0, dtype=np.int32))
    else:
        np.testing.assert_allclose(got, x.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-5)
