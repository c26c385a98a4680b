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
