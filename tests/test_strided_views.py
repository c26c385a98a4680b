"""Strided views (issue 16): a grid-scope ``bulkred.reduce`` whose ``src`` is a
``memref<..., strided<[...]>>`` (element strides >= 0, offset 0: the parameter is the
view's first element) reads it in place. The canonical form merges axes only where the
strides say they are contiguous together; a view that stays non-contiguous is the
``strided`` form, which ``grid_runs`` takes when two axes are reduced, the innermost
with unit stride, and ``grid_gather`` otherwise. The lowered kernels run on the CPU
interpreter (``run_grid`` takes the numpy view itself) against numpy on transposed,
stepped-slice and offset views of ranks 2 to 4."""

from __future__ import annotations

import re

import numpy as np
import pytest
from nd_grid_cases import check, out_shape

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.assemble import assemble
from bulkred_dialect.backend_ptx.runtime import compile_tile_module, lower_tile_module
from bulkred_dialect.errors import BuildError
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.tile import ReduceOp
from bulkred_dialect.passes.canonical import canonical
from bulkred_dialect.passes.dispatch import explain


def element_strides(x: np.ndarray) -> list[int]:
    return [s // x.itemsize for s in x.strides]


def module_of(kind: str, x: np.ndarray, axes: list[int], strides: list[int] | None = None):
    dtype = "int32" if x.dtype == np.int32 else "float32"
    with T.kernel("k") as k:
        src = k.param("x", list(x.shape), dtype, strides=element_strides(x) if strides is None else strides)
        y = k.param("y", out_shape(list(x.shape), axes), dtype)
        T.reduce(kind, y, src, axes=axes)
    return k.module()


def chosen(module) -> str:
    op = next(o for o in module.walk() if isinstance(o, ReduceOp))
    return explain(op, "sm_90a").splitlines()[-1].removeprefix("chosen: ")


@pytest.mark.parametrize(
    "shape, strides, axes, form",
    [
        ([4, 6], [1, 4], [0], "inner [6, 4] (stride order: axes [1, 0])"),  # a transpose: in stride order, rows
        ([8, 3], [6, 1], [1], "strided [8, 3] strides [6, 1] axes [1]"),  # x[:, 1:4] of [8, 6]
        ([8, 3], [6, 2], [0, 1], "strided [24] strides [2] axes [0]"),  # x[:, ::2] of [8, 6]: one run of stride 2
        ([3, 6], [6, 1], [1], "inner [3, 6]"),  # x[2:5] of [8, 6]: whole rows, contiguous
        ([2, 1, 3, 4], [12, 99, 4, 1], [2, 3], "inner [2, 12]"),  # extent 1: its stride is no matter
        ([2, 3, 4], [24, 8, 1], [1], "strided [2, 3, 4] strides [24, 8, 1] axes [1]"),
        ([4, 5], [0, 1], [0], "strided [4, 5] strides [0, 1] axes [0]"),  # broadcast (torch.expand)
    ],
)
def test_canonical_form_of_views(shape, strides, axes, form):
    assert str(canonical(shape, axes, strides)) == form


def test_transposed_view_is_analyzed_in_stride_order():
    """x.T.sum(0) of a contiguous [6, 4] is the row sum of x: its axes in stride order,
    it takes grid_rows as the dense array does (tests/test_stride_order.py has the rest)."""
    x = np.zeros((6, 4), np.float32).T
    m = module_of("sum", x, [0])
    table = explain(next(o for o in m.walk() if isinstance(o, ReduceOp)), "sm_90a")
    assert "inner [6, 4] (stride order: axes [1, 0])" in table
    assert chosen(m) == "grid_rows"


def test_contiguous_view_keeps_its_fast_form():
    base = np.zeros((8, 4096), np.float32)
    assert chosen(module_of("sum", base[2:6], [1])) == "grid_rows"


RAN: set[str] = set()
"""The variants :func:`run` ran (tests below check that both strided variants did)."""


def run(kind: str, x: np.ndarray, axes: list[int]) -> np.ndarray:
    m = module_of(kind, x, axes)
    c = canonical(list(x.shape), axes, element_strides(x))
    # grid_runs: two reduced axes, the innermost reduced with unit stride (contiguous runs)
    runs = c.form == "strided" and c.reduced[-1] and c.element_strides()[-1] == 1 and sum(c.reduced) == 2
    variant = chosen(m)
    assert variant == ("grid_runs" if runs else "grid_gather"), str(c)
    RAN.add(variant)
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    poison = np.full(out_shape(list(x.shape), axes), -7, x.dtype)
    _, got = run_grid(m, "k", x, poison)
    return got


def views(rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """Transposes, stepped slices and offset views of ranks 2 to 4, each from its own
    base. Small: ``grid_gather`` gives each ``dst`` value a warp (a CTA per 8 values)
    and the interpreter runs every thread. offset2 keeps 33 columns (its axis-1 sums
    are runs of at least a warp, read by the lanes together; axes [0, 1] go to
    ``grid_runs`` with scalar loads, a partial last pass of rows and idle threads);
    step2's whole set is one run of stride 2 (the runs of a stride); slice3 and slice4
    reach ``grid_runs`` with v4 and v2 loads."""

    def base(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 4).astype(np.float32)

    return [
        ("transpose2", base(5, 12).T),
        ("step2", base(4, 18)[:, ::2]),
        ("offset2", base(9, 70)[1:, 3:36]),
        ("step_offset2", base(7, 20)[2::3, 5::3]),
        ("permute3", base(2, 3, 6).transpose(2, 0, 1)),
        ("slice3", base(3, 4, 12)[1:3, ::2, 2:10]),
        ("permute4", base(2, 2, 2, 3).transpose(3, 1, 0, 2)),
        ("slice4", base(2, 3, 3, 6)[:, 1:, ::2, 1:3]),
    ]


@pytest.mark.parametrize("name", ["transpose2", "step2", "offset2", "step_offset2", "permute3", "slice3", "permute4", "slice4"])
def test_views_on_the_interpreter(name):
    """Every axis set of each view (float32 sums within the accumulation bound); the
    view is passed as is: no copy."""
    rng = np.random.default_rng(16)
    RAN.clear()
    x = dict(views(rng))[name]
    assert not x.flags.c_contiguous
    rank = x.ndim
    sets = [[a] for a in range(rank)] + [list(range(rank))] + ([[0, rank - 1]] if rank > 2 else [])
    for axes in sets:
        if str(canonical(list(x.shape), axes, element_strides(x))).startswith("strided"):
            check("sum", x, run("sum", x, axes), axes)
    if name in ("offset2", "slice3", "slice4"):  # views with contiguous runs
        assert "grid_runs" in RAN


@pytest.mark.parametrize("kind", ["max", "xor"])
def test_int_views_exact(kind):
    rng = np.random.default_rng(3)
    base = rng.integers(-(2**31), 2**31, (3, 4, 26), dtype=np.int64).astype(np.int32)
    x = base.transpose(1, 2, 0)[:, 3:25]  # [4, 22, 3], the innermost stride 104
    for axes in ([1], [0, 2], [1, 2]):
        check(kind, x, run(kind, x, axes), axes)


def test_broadcast_view():
    """A stride of 0 (torch.expand, numpy.broadcast_to) reads the same element again."""
    row = np.arange(5, dtype=np.int32)
    x = np.broadcast_to(row, (4, 5))
    check("sum", x, run("sum", x, [0]), [0])


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_strided_kernel_assembles(target):
    x = np.zeros((6, 40), np.float32).T
    mod = compile_tile_module(module_of("sum", x, [1]), target)
    assert len(mod.cubin or assemble(mod.ptx, target)) > 0  # compile_tile_module assembled it (nvJitLink)


def test_interpreter_refuses_other_strides():
    x = np.zeros((6, 4), np.float32).T
    m = module_of("sum", x, [0])
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    with pytest.raises(ValueError, match=r"element strides \[6, 1\] do not match"):
        run_grid(m, "k", np.zeros((4, 6), np.float32), np.zeros(6, np.float32))


def test_builder_strides_checked():
    with pytest.raises(BuildError, match="'strides' of param 'x' must be 2 integers"):
        with T.kernel("k") as k:
            k.param("x", [4, 6], "float32", strides=[1])


# region The runtime: a view parameter's strides in the kernel signature (no GPU needed)


def test_signature_records_a_views_strides_and_round_trips():
    from bulkred_dialect.backend_ptx.signature import signature_from_json, signature_to_json, signatures_of_module

    x = np.zeros((6, 4), np.float32).T
    sig = signatures_of_module(module_of("sum", x, [0]))["k"]
    assert sig.params[0].strides == (1, 4) and sig.params[1].strides is None
    assert sig.params[0].describe() == "array of f32, shape (4, 6), strides (1, 4)"
    assert signature_from_json(signature_to_json(sig)) == sig
    assert sig.params[0].span() == 1 + 3 * 1 + 5 * 4


def test_param_strides_are_checked():
    from bulkred_dialect.backend_ptx.signature import Param

    with pytest.raises(ValueError, match=r"param 'x': strides must be a tuple of element strides >= 0, one per axis"):
        Param("x", "array", "f32", (4, 6), (1,))
    with pytest.raises(ValueError, match="strides must be a tuple"):
        Param("x", "array", "f32", (4, 6), (-1, 4))


def _tensor(shape, stride, dtype="float32", ptr=0x1000):
    from types import SimpleNamespace

    dense = tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
    return SimpleNamespace(
        is_cuda=True, device=SimpleNamespace(index=0, type="cuda"), dtype=f"torch.{dtype}", shape=shape,
        is_contiguous=lambda: stride == dense, stride=lambda: stride, data_ptr=lambda: ptr,
        numel=lambda: int(np.prod(shape)), element_size=lambda: np.dtype(dtype).itemsize,
    )


def _view(shape, strides, dtype="float32", ptr=0x1000):
    from types import SimpleNamespace

    return SimpleNamespace(
        ptr=ptr, device_id=0, is_device_accessible=True, shape=shape, strides=strides, dtype=np.dtype(dtype)
    )


def test_device_arrays_of_a_view_param():
    """A view param takes an array of its strides (extent-1 axes: any), with the bytes
    from its first element to its last; other strides get one line naming both."""
    from bulkred_dialect.backend_ptx.arrays import check_device_array, check_torch_tensor
    from bulkred_dialect.backend_ptx.signature import Param
    from bulkred_dialect.errors import SignatureError

    p = Param("x", "array", "f32", (4, 6), (1, 4))
    w = "kernel 'k' param 'x'"
    assert check_torch_tensor(w, p, _tensor((4, 6), (1, 4)), 0) == (0x1000, 24 * 4)
    assert check_device_array(w, p, _view((4, 6), (1, 4)), 0) == (0x1000, 24 * 4)
    message = "kernel 'k' param 'x': expected a view with strides (1, 4) (in elements) for shape (4, 6), got "
    with pytest.raises(SignatureError, match=re.escape(message + "strides (6, 1) (the kernel was built for that layout)")):
        check_torch_tensor(w, p, _tensor((4, 6), (6, 1)), 0)
    with pytest.raises(SignatureError, match=re.escape(message + "contiguous")):
        check_device_array(w, p, _view((4, 6), None), 0)
    with pytest.raises(SignatureError, match=re.escape(message + "strides (2, 8)")):
        check_device_array(w, p, _view((4, 6), (2, 8)), 0)
    q = Param("x", "array", "f32", (1, 6), (0, 2))  # an extent-1 axis: any stride
    assert check_torch_tensor(w, q, _tensor((1, 6), (77, 2)), 0) == (0x1000, 11 * 4)
    # a dense param keeps its check
    d = Param("x", "array", "f32", (4, 6))
    with pytest.raises(SignatureError, match="expected a contiguous row-major array"):
        check_torch_tensor(w, d, _tensor((4, 6), (1, 4)), 0)


def test_a_numpy_array_for_a_view_param_is_laid_out_as_the_kernel_reads_it():
    from bulkred_dialect.backend_ptx.signature import KernelSignature, Param

    sig = KernelSignature("k", (Param("x", "array", "f32", (2, 3), (1, 4)),))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    (run,) = sig.check([a])
    assert run.shape == (1 + 1 + 2 * 4,)
    np.testing.assert_array_equal(np.lib.stride_tricks.as_strided(run, (2, 3), (4, 16)), a)


# endregion
