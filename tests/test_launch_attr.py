"""A ``bulkred.launch`` written on a grid-scope kernel (passes/variants/grid_common.py:
``grid_ctas``, ``one_cta_block``, ``set_launch``): the launches a variant takes compute
the same result as its own, run on the CPU interpreter against numpy; the others are
refused at the op's location (the lit tests tests/filecheck/passes/launch_attr*.mlir
show the IR and the messages)."""

from __future__ import annotations

import numpy as np
import pytest

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.interpreter import run_grid
from bulkred_dialect.ops.tile import kernel_launch


def _module(shape, axes, grid, block, cluster=1):
    out_shape = [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]
    with T.kernel("k", grid=grid, block=block, cluster=cluster) as k:
        x = k.param("x", list(shape), "float32")
        y = k.param("y", out_shape, "float32")
        T.reduce("sum", y, x, axes=axes)
    return k.module(), out_shape


@pytest.mark.parametrize(
    ("shape", "axes", "grid", "block", "variant"),
    [
        ((40, 96), [1], 3, 256, "grid_rows"),  # 3 CTAs of the variant's block (it takes 5 for 40 rows)
        ((3000,), None, 2, 512, "grid_full"),  # two CTAs and the ticket (it takes one CTA)
        ((3000,), None, 1, 64, "grid_full"),  # one CTA of 64 threads (it takes 192)
        ((3, 5, 4, 6), [0, 2], 2, 256, "grid_gather"),  # the general form: its warps loop over 30 kept values (it takes 4 CTAs)
    ],
)
def test_a_launch_the_variant_takes_gives_its_result(shape, axes, grid, block, variant):
    m, out_shape = _module(shape, axes, grid, block)
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a explain=false}")
    f = next(o for o in m.walk() if o.name == "func.func")
    launch = kernel_launch(f)
    assert (launch.grid_dims, launch.block_dims) == ((grid, 1, 1), (block, 1, 1))
    x = np.random.default_rng(3).integers(-8, 9, shape).astype(np.float32)  # integers: exact in any order
    ws = [np.zeros(t.get_shape(), np.uint8) for t in f.function_type.inputs.data[2:]]
    _, got, *_ = run_grid(m, "k", x, np.full(out_shape, np.nan, np.float32), *ws)
    want = x.sum(axis=None if axes is None else tuple(axes)).reshape(out_shape)
    assert np.array_equal(got, want), variant


@pytest.mark.parametrize(
    ("grid", "block", "cluster", "asked"),
    [
        (1, 33, 1, "grid = [1], block = [33], cluster = [1]"),
        (4, 128, 1, "grid = [4], block = [128], cluster = [1]"),
        (8, 512, 2, "grid = [8], block = [512], cluster = [2]"),
    ],
)
def test_a_launch_the_variant_cannot_take_is_refused_at_the_op(grid, block, cluster, asked):
    m, _ = _module((65539,), None, grid, block, cluster)
    with pytest.raises(LocatedError) as e:
        lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    message = str(e.value)
    assert "\n" not in message and f"the kernel's bulkred.launch asks {asked}; grid_full launches" in message
    assert "test_launch_attr.py" in message.split(":", 1)[0]  # located at the op (the builder's call here)


def test_a_builder_kernel_without_a_launch_takes_the_variants_own():
    """``T.kernel`` without grid/block/cluster writes no ``bulkred.launch`` ("none asked"):
    the variant chooses its launch (grid_rows: 5 CTAs of 256 threads for 40 rows)."""
    with T.kernel("k") as k:
        x = k.param("x", [40, 96], "float32")
        y = k.param("y", [40], "float32")
        T.reduce("sum", y, x, axes=[1])
    m = k.module()
    f = next(o for o in m.walk() if o.name == "func.func")
    assert kernel_launch(f) is None
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a explain=false}")
    launch = kernel_launch(f)
    assert (launch.grid_dims, launch.block_dims, launch.cluster_dims) == ((5, 1, 1), (256, 1, 1), (1, 1, 1))
    xs = np.random.default_rng(4).integers(-8, 9, (40, 96)).astype(np.float32)
    _, got = run_grid(m, "k", xs, np.full(40, np.nan, np.float32))
    assert np.array_equal(got, xs.sum(axis=1))


@pytest.mark.parametrize(("shape", "axes", "variant"), [((65539,), None, "grid_full"), ((40, 96), [1], "grid_rows")])
def test_one_thread_written_by_the_user_is_refused_at_the_op(shape, axes, variant):
    """grid=[1], block=[1] given to ``T.kernel`` is a launch asked like any other (it used
    to count as the builder's default and was silently replaced): no grid variant runs
    in one thread, so it is refused, located at the user's op."""
    m, _ = _module(shape, axes, 1, 1)
    f = next(o for o in m.walk() if o.name == "func.func")
    assert kernel_launch(f).block_dims == (1, 1, 1)
    with pytest.raises(LocatedError) as e:
        lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    message = str(e.value)
    assert "\n" not in message
    assert f"the kernel's bulkred.launch asks grid = [1], block = [1], cluster = [1]; {variant} launches" in message
    assert "test_launch_attr.py" in message.split(":", 1)[0]


def test_a_collective_without_a_launch_is_refused_at_the_op():
    """A CTA collective needs whole warps: without a ``bulkred.launch`` no variant applies,
    and the dispatch table says why (a located error, the kernel left as written)."""
    with T.kernel("cta_sum") as k:
        a = T.alloc_buffer([4], "float32", "local")
        b = T.alloc_buffer([1], "float32", "local")
        T.sum(b, a, scope="cta")
    with pytest.raises(LocatedError) as e:
        lower_tile_module(k.module(), "sm_90a")
    first, *table = str(e.value).splitlines()
    assert "test_launch_attr.py" in first and "no lowering variant applies on sm_90a" in first
    assert any("block" in line and "no bulkred.launch" in line for line in table)


@pytest.mark.parametrize(
    ("kwargs", "launch"),
    [
        ({}, None),
        ({"grid": 1, "block": 1}, ((1, 1, 1), (1, 1, 1), (1, 1, 1))),
        ({"block": [64]}, ((1, 1, 1), (64, 1, 1), (1, 1, 1))),
        ({"grid": [4], "cluster": [2]}, ((4, 1, 1), (1, 1, 1), (2, 1, 1))),
    ],
)
def test_the_builder_writes_a_launch_only_when_one_is_given(kwargs, launch):
    with T.kernel("k", **kwargs) as k:
        k.param("x", [4], "float32")
    f = next(o for o in k.module().walk() if o.name == "func.func")
    got = kernel_launch(f)
    assert (got if got is None else (got.grid_dims, got.block_dims, got.cluster_dims)) == launch
    assert ("bulkred.launch" in str(f)) == (launch is not None)


def test_a_thread_kernel_without_a_launch_takes_the_calls():
    """A thread-scope kernel built without a launch records none: its PTX has no
    ``.reqntid``, and a launch must pass grid= and block= (a one-line LaunchConfigError
    says so, before any GPU is needed)."""
    from bulkred_dialect.backend_ptx.errors import LaunchConfigError
    from bulkred_dialect.backend_ptx.launch import resolve_launch
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module

    with T.kernel("thr") as k:
        x = k.param("x", [4], "float32")
        y = k.param("y", [1], "float32")
        a = T.alloc_buffer([4], "float32", "local")
        b = T.alloc_buffer([1], "float32", "local")
        T.copy(x, a)
        T.sum(b, a)
        T.copy(b, y)
    compiled = compile_tile_module(k.module(), "sm_90a", cache=False)
    assert ".entry thr(" in compiled.ptx and ".reqntid" not in compiled.ptx
    sig = compiled.signatures["thr"]
    assert sig.launch is None
    with pytest.raises(LaunchConfigError, match="kernel 'thr' has no recorded launch shape: pass grid= and block="):
        resolve_launch(sig, None, None, None)
    assert resolve_launch(sig, 2, 32, None).block == (32, 1, 1)
