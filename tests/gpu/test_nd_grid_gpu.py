"""N-D grid reductions over any axes on the GPU (issue 16): random shapes of rank 1 to
5 (1s and odd sizes) and random axis sets through ``compile_tile_module``, whatever
variant the dispatch picks (grid_middle, grid_gather and the 1-D/2-D ones on merged
shapes), against numpy: integers exactly, float32 sums within the accumulation bound.
The seed is in every failure message (``BULKRED_SEED`` reruns it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from nd_grid_cases import check, module_of, out_shape, random_case, random_input

from bulkred_dialect.backend_ptx.runtime import compile_tile_module, parse

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def run(kind, x, axes, target="sm_90a"):
    dtype = "int32" if x.dtype == np.int32 else "float32"
    kernel = compile_tile_module(module_of(kind, list(x.shape), dtype, axes), target).kernel("k")
    got = None
    for _ in range(2):  # the second call reuses the workspace: its tickets must be back at zero
        _, got = kernel(x, np.full(out_shape(list(x.shape), axes), -7, x.dtype))
    return got


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_random_reductions(rng, rank):
    for _ in range(8):
        shape, axes = random_case(rng.gen, rank, 1 << 21)
        kind = str(rng.choice(["sum", "max", "min", "and", "or", "xor"]))
        x = random_input(rng.gen, shape, "int32")
        try:
            check(kind, x, run(kind, x, axes), axes)
            xf = random_input(rng.gen, shape, "float32")
            check("sum", xf, run("sum", xf, axes), axes)
            check("max", xf, run("max", xf, axes), axes)
        except AssertionError as e:
            raise AssertionError(f"{kind} {shape} axes {axes}, {rng!r}: {e}") from e


@pytest.mark.parametrize(
    "shape, axes",
    [
        ([64, 1000, 256], [1]),  # middle
        ([7, 4099, 33], [1]),  # middle, I not a multiple of 4
        ([3, 1, 65, 5, 257], [1, 2, 3]),  # middle [3, 325, 257]
        ([30, 40, 50], [0, 2]),  # general: grid_runs, 2 row splits
        ([5, 6, 7, 8, 9], [0, 2, 4]),  # general, 3 reduced axes: grid_gather
        ([100, 3, 1000], [0, 2]),  # grid_runs: runs of 250 vectors
        ([64, 16, 256], [0, 2]),  # grid_runs: 8 row splits per value
        ([64, 4096, 256], [0, 2]),  # grid_runs: one CTA per value
        ([9, 5, 3000], [0, 2]),  # grid_runs: runs wider than the CTA (750 vectors)
        ([3, 7, 5, 1001], [1, 3]),  # grid_runs: two kept axes, odd runs (scalar loads)
        ([70000, 3, 2], [1]),  # middle beyond the grid's z: grid_gather
    ],
)
def test_middle_and_general(rng, shape, axes):
    x = random_input(rng.gen, shape, "float32")
    check("sum", x, run("sum", x, axes), axes)
    xi = random_input(rng.gen, shape, "int32")
    check("sum", xi, run("sum", xi, axes), axes)
    check("min", xi, run("min", xi, axes, "sm_90a"), axes)


@pytest.mark.parametrize("shape", [[64, 16, 256], [3000, 4, 40]])
def test_runs_are_deterministic(rng, shape):
    """grid_runs' split partials combine in a fixed order: the same bits on every run."""
    kernel = compile_tile_module(module_of("sum", shape, "float32", [0, 2]), "sm_90a").kernel("k")
    x = random_input(rng.gen, shape, "float32")
    runs = [kernel(x, np.zeros(shape[1], np.float32))[1] for _ in range(4)]
    assert all(np.array_equal(runs[0].view(np.uint32), r.view(np.uint32)) for r in runs[1:]), repr(rng)


def test_middle_is_deterministic(rng):
    kernel = compile_tile_module(module_of("sum", [64, 1000, 256], "float32", [1]), "sm_90a").kernel("k")
    x = random_input(rng.gen, [64, 1000, 256], "float32")
    runs = [kernel(x, np.zeros((64, 256), np.float32))[1] for _ in range(4)]
    assert all(np.array_equal(runs[0].view(np.uint32), r.view(np.uint32)) for r in runs[1:]), repr(rng)


def test_middle_sum_example_on_the_gpu(rng):
    """examples/middle_sum.mlir, parsed, lowered and run on the device."""
    module = parse((ROOT / "examples" / "middle_sum.mlir").read_text(), "middle_sum.mlir")
    kernel = compile_tile_module(module, "sm_90a").kernel("middle_sum")
    x = random_input(rng.gen, [64, 1000, 256], "float32")
    _, got = kernel(x, np.full((64, 256), -7, np.float32))
    check("sum", x, got, [1])
