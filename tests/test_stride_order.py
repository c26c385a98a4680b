"""Views analyzed in stride order (issue 23, section 4): a strided ``src``'s axes are put
in descending-stride order before the canonical form is named (passes/canonical.py), so
a permuted view reaches the variant of the dense array it was permuted from: ``x.t()``
over axis 1 of a contiguous [M, N] is the column sum of ``x`` (``outer [M, N]``), not a
``strided`` form for ``grid_gather``. The kept axes keep their relative order (``dst``
holds them in the op's order), and for argmax / argmin so do the reduced ones (the
index counts them in the op's order); elsewhere the form names the reason it stays
``strided``. Checked here: the forms, the dispatch against the dense equivalent, the
PTX of a permuted view against the dense one's, the CPU interpreter against numpy on
permuted views of 2-D and 3-D arrays (sum, max, argmax with ties, var, int xor), and
the random generator's permuted views in the interpreter."""

from __future__ import annotations

import collections
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from nd_grid_cases import check, out_shape  # noqa: E402

from bulkred_dialect import builder as T  # noqa: E402
from bulkred_dialect.backend_ptx.runtime import lower_tile_module  # noqa: E402
from bulkred_dialect.interpreter.threads import run_grid  # noqa: E402
from bulkred_dialect.ops.kernel_attrs import WORKSPACE_ATTR, ZERO_INIT_ATTR  # noqa: E402
from bulkred_dialect.ops.tile import ReduceOp  # noqa: E402
from bulkred_dialect.passes.canonical import canonical  # noqa: E402
from bulkred_dialect.passes.dispatch import explain  # noqa: E402
from bulkred_dialect.passes.variants.grid_common import form_of  # noqa: E402

KEPT = "not in stride order: it would reorder the kept axes, which dst holds in the op's order"
INDEX = "not in stride order: the index counts the reduced axes in the op's order"


def dense_strides(shape) -> list[int]:
    return [math.prod(shape[i + 1 :]) for i in range(len(shape))]


def permuted(shape, perm) -> tuple[list[int], list[int]]:
    """The shape and element strides of ``x.transpose(perm)`` of a contiguous ``x`` of ``shape``."""
    st = dense_strides(shape)
    return [shape[p] for p in perm], [st[p] for p in perm]


# region The form


@pytest.mark.parametrize(
    "shape, strides, axes, index, form",
    [
        # the issue's x.t().sum(1) of a contiguous [4096, 1024]: the column sum of x
        ([1024, 4096], [1, 1024], [1], False, "outer [4096, 1024] (stride order: axes [1, 0])"),
        ([4, 6], [1, 4], [0], False, "inner [6, 4] (stride order: axes [1, 0])"),  # x.t().sum(0): rows of x
        ([4, 6], [1, 4], [0, 1], False, "whole [24] (stride order: axes [1, 0])"),
        # [2, 3, 4].transpose(0, 2, 1) over its last axis: the middle axis of the dense array
        ([2, 4, 3], [12, 1, 4], [2], False, "middle [2, 3, 4] (stride order: axes [0, 2, 1])"),
        # [2, 3, 4].transpose(1, 0, 2) over axis 1: the dense [2, 12]'s columns
        ([3, 2, 4], [4, 12, 1], [1], False, "outer [2, 12] (stride order: axes [1, 0, 2])"),
        # [A, K, C].transpose(2, 1, 0) over (0, 2): the general [A, K, C] (grid_runs)
        ([5, 4, 3], [1, 5, 20], [0, 2], False, "general [3, 4, 5] (stride order: axes [2, 1, 0])"),
        # [2, 3, 4].transpose(2, 1, 0) over axis 1: stride order would put dst's axes the other way round
        ([4, 3, 2], [1, 4, 12], [1], False, f"strided [4, 3, 2] strides [1, 4, 12] axes [1] ({KEPT})"),
        # argmax: one reduced axis keeps its order; two reduced axes of a transpose do not
        ([4, 6], [1, 4], [0], True, "inner [6, 4] (stride order: axes [1, 0])"),
        ([4, 6], [1, 4], [0, 1], True, f"strided [4, 6] strides [1, 4] axes [0, 1] ({INDEX})"),
        ([5, 4, 3], [1, 5, 20], [0, 2], True, f"strided [5, 4, 3] strides [1, 5, 20] axes [0, 2] ({INDEX})"),
        # extent-1 axes do not count; a permuted view with one, and stepped and transposed
        ([6, 1, 4], [1, 99, 6], [0], False, "inner [4, 6] (stride order: axes [2, 0])"),
        ([4, 6], [2, 16], [1], False, "strided [6, 4] strides [16, 2] axes [0] (stride order: axes [1, 0])"),
        # a broadcast (stride-0) axis keeps its place; the others move around it: the
        # innermost axis becomes the unit-stride reduced one (grid_runs' runs)
        ([3, 4, 5], [1, 0, 3], [0, 1], False, "strided [5, 4, 3] strides [3, 0, 1] axes [1, 2] (stride order: axes [2, 1, 0])"),
    ],
)
def test_forms_in_stride_order(shape, strides, axes, index, form):
    c = canonical(shape, axes, strides, keep_reduced_order=index)
    assert str(c) == form
    assert c.kept == math.prod(out_shape(shape, axes)) and c.kept * c.reduced_count == math.prod(shape)


@pytest.mark.parametrize(
    "shape, strides, axes",
    [
        ([8, 3], [6, 1], [1]),  # x[:, 1:4]
        ([8, 3], [6, 2], [0, 1]),  # x[:, ::2]
        ([3, 6], [6, 1], [1]),  # whole rows
        ([2, 3, 4], [24, 8, 1], [1]),
        ([4, 5], [0, 1], [0]),  # broadcast rows (expand)
        ([5, 4], [1, 0], [0]),  # a broadcast column: the stride-0 axis stays innermost
        ([2, 1, 3, 4], [12, 99, 4, 1], [2, 3]),
        ([3, 3], [1, 1], [0]),  # equal strides (an overlapping view): stable
    ],
)
def test_views_already_in_stride_order_keep_their_analysis(shape, strides, axes):
    """Slices, steps and broadcasts (descending strides, a stride-0 axis where it is):
    the analysis of before, no order and no note (their code is unchanged)."""
    c = canonical(shape, axes, strides)
    assert c.order is None and c.unordered is None and "stride order" not in str(c)
    assert str(canonical(shape, axes, strides, keep_reduced_order=True)) == str(c)


def test_dense_arrays_have_no_order():
    c = canonical([4, 6], [0])
    assert str(c) == "outer [4, 6]" and c.order is None and c.unordered is None


# endregion

# region The dispatch: a permuted view chooses its dense array's variant


def module(kind: str, shape, axes, strides=None, *, dtype="float32", aux=False, **options):
    kept = out_shape(list(shape), axes)
    index = kind in ("argmax", "argmin")
    with T.kernel("k") as k:
        x = k.param("x", list(shape), dtype, **({} if strides is None else {"strides": list(strides)}))
        y = k.param("y", kept, "int64" if index else dtype)
        a = k.param("a", kept, dtype) if aux else None
        T.reduce(kind, y, x, axes=axes, aux=a, **options)
    return k.module()


def reduce_op(m) -> ReduceOp:
    return next(o for o in m.walk() if isinstance(o, ReduceOp))


def chosen(m, target="sm_90a") -> str:
    return explain(reduce_op(m), target).splitlines()[-1].removeprefix("chosen: ")


OPTIONS = {"var": {"correction": 1}}

# (the dense shape, its axes, the permutation, the kinds whose view reaches the dense variant)
EQUIVALENTS = [
    ([4096, 1024], [0], (1, 0), ("sum", "max", "argmax", "var")),  # the issue: x.t().sum(1)
    ([40, 6], [0], (1, 0), ("sum", "max", "argmax", "var")),
    ([40, 6], [1], (1, 0), ("sum", "max", "argmax", "var")),  # x.t().sum(0): rows
    ([40, 6], [0, 1], (1, 0), ("sum", "max", "var")),  # every axis: whole
    ([64, 1000, 256], [1], (0, 2, 1), ("sum", "max", "argmax", "var")),  # middle
    ([64, 100, 256], [0], (1, 0, 2), ("sum", "max", "argmax", "var")),  # outer [64, 25600]
    ([8, 64, 96], [1, 2], (0, 2, 1), ("sum", "max", "var")),  # inner [8, 6144]
    ([5, 6, 40], [0, 2], (2, 1, 0), ("sum", "max", "var")),  # general: grid_runs
    ([3, 4, 5, 6], [0, 2], (0, 1, 3, 2), ("sum", "max", "argmax", "var")),  # general, the innermost kept: grid_gather
]


def _view_case(shape, axes, perm):
    vshape, vstrides = permuted(shape, perm)
    vaxes = sorted(perm.index(a) for a in axes)
    return vshape, vstrides, vaxes


@pytest.mark.parametrize(
    "shape, axes, perm, kind",
    [(s, a, p, k) for s, a, p, kinds in EQUIVALENTS for k in ("sum", "max", "argmax", "var") if k in kinds],
)
def test_permuted_view_chooses_the_dense_variant(shape, axes, perm, kind):
    vshape, vstrides, vaxes = _view_case(shape, axes, perm)
    view, dense = module(kind, vshape, vaxes, vstrides, **OPTIONS.get(kind, {})), module(kind, shape, axes, **OPTIONS.get(kind, {}))
    fv, fd = form_of(reduce_op(view)), form_of(reduce_op(dense))
    assert (fv.form, fv.shape, fv.reduced) == (fd.form, fd.shape, fd.reduced)
    assert fv.order is not None and fv.strides is None
    assert chosen(view) == chosen(dense)


def test_the_issues_mlir_example_chooses_the_column_variant():
    """``memref<1024x4096xf32, strided<[1, 1024]>>`` over axes [1] (x.t() of a contiguous
    [4096, 1024]): grid_split_bulk, as the dense [4096, 1024] over [0]; the form row says
    the axes were analyzed in stride order. Before: ``strided [1024, 4096] strides
    [1, 1024] axes [1]``, grid_gather."""
    m = module("sum", [1024, 4096], [1], [1, 1024])
    table = explain(reduce_op(m), "sm_90a")
    assert "outer [4096, 1024] (stride order: axes [1, 0])" in table
    assert table.splitlines()[-1] == "chosen: grid_split_bulk"
    assert chosen(module("sum", [1024, 4096], [1], [1, 1024], deterministic=True)) == "grid_split_det"


@pytest.mark.parametrize(
    "kind, shape, strides, axes, variant, why",
    [
        ("sum", [4, 3, 40], [1, 4, 12], [2], "grid_gather", KEPT),  # dst [4, 3] is 3-major in memory
        ("argmax", [40, 60], [1, 40], [0, 1], "grid_gather", INDEX),  # argmax(x.t()): the flat index of the view
        ("argmin", [5, 4, 3], [1, 5, 20], [0, 2], "grid_gather", INDEX),
    ],
)
def test_views_stride_order_cannot_take_say_why(kind, shape, strides, axes, variant, why):
    m = module(kind, shape, axes, strides)
    table = explain(reduce_op(m), "sm_90a")
    assert f"({why})" in table
    assert table.splitlines()[-1] == f"chosen: {variant}"


def test_the_argmax_of_one_axis_of_a_transpose_is_reordered():
    """``x.t().argmax(1)`` (one reduced axis: its index is the same in any order of the
    axes) reaches the column variant; ``argmax(x.t())`` (the flat index over the view's
    row-major order) does not, and the table says why."""
    one = explain(reduce_op(module("argmax", [6, 40], [1], [1, 6])), "sm_90a")
    assert "outer [40, 6] (stride order: axes [1, 0])" in one and one.endswith("chosen: grid_split_det")
    every = explain(reduce_op(module("argmax", [6, 40], [0, 1], [1, 6])), "sm_90a")
    assert f"strided [6, 40] strides [1, 6] axes [0, 1] ({INDEX})" in every and every.endswith("chosen: grid_gather")
    assert chosen(module("sum", [6, 40], [0, 1], [1, 6])) == "grid_full"  # a sum of it: whole [240]


def _ptx(m, target="sm_90a") -> str:
    from bulkred_dialect.backend_ptx.printer import print_ptx

    lower_tile_module(m, target)
    return print_ptx(m, target)


@pytest.mark.parametrize(
    "kind, shape, axes, perm",
    [("sum", [4096, 1024], [0], (1, 0)), ("argmax", [3, 20, 8], [1], (0, 2, 1))],
)
def test_a_permuted_views_ptx_is_its_dense_arrays(kind, shape, axes, perm):
    """The kernel of a permuted view is the kernel of the dense array it was permuted
    from, instruction for instruction (the parameters are addresses either way)."""
    vshape, vstrides, vaxes = _view_case(shape, axes, perm)
    assert _ptx(module(kind, vshape, vaxes, vstrides)) == _ptx(module(kind, shape, axes))


# endregion

# region The interpreter against numpy


def run(kind: str, x: np.ndarray, axes, *, aux=False, **options):
    """(dst, aux or None, the chosen variant) of ``kind`` over ``axes`` of the numpy
    view ``x``, read in place (no copy) by the interpreter."""
    strides = [s // x.itemsize for s in x.strides]
    m = module(kind, x.shape, axes, strides, dtype=str(x.dtype), aux=aux, **options)
    variant = chosen(m)
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    f = next(o for o in m.walk() if o.name == "func.func")
    kept = out_shape(list(x.shape), axes)
    index = kind in ("argmax", "argmin")
    zero = {a.value.data for a in f.attributes[ZERO_INIT_ATTR].data} if ZERO_INIT_ATTR in f.attributes else set()
    poison = 0 if 1 in zero else np.nan if x.dtype.kind == "f" else 0x5A
    y = np.zeros(kept, np.int64) if index else np.full(kept, poison, x.dtype)
    args = [x, y] + ([np.full(kept, np.nan, x.dtype)] if aux else [])
    if WORKSPACE_ATTR in f.attributes:
        args.append(np.zeros(f.attributes[WORKSPACE_ATTR].value.data, np.int8))
    outs = run_grid(m, "k", *args)
    return outs[1], (outs[2] if aux else None), variant


def flat_index(x: np.ndarray, axes, largest: bool) -> np.ndarray:
    """argmax / argmin over ``axes``: the first index, row-major over the reduced axes in
    their order (the view's logical order, not its memory's)."""
    kept = [i for i in range(x.ndim) if i not in axes]
    y = np.transpose(x, kept + list(axes)).reshape(math.prod(x.shape[i] for i in kept), -1)
    return (np.argmax(y, -1) if largest else np.argmin(y, -1)).reshape(out_shape(list(x.shape), axes))


def dense_variant(kind, x: np.ndarray, axes, **options) -> str:
    """The variant of the dense array ``x`` is a permutation of (its axes in stride order)."""
    order = sorted(range(x.ndim), key=lambda i: -x.strides[i])
    dense = np.ascontiguousarray(np.transpose(x, order))
    return chosen(module(kind, dense.shape, sorted(order.index(a) for a in axes), dtype=str(dense.dtype), **options))


def views(rng: np.random.Generator, dtype=np.float32) -> dict[str, np.ndarray]:
    """Permuted views of small 2-D and 3-D arrays (small integers: ties for argmax)."""

    def base(*shape):
        return rng.integers(-3, 4, shape).astype(dtype)

    return {
        "t2": base(8, 6).T,  # [6, 8], strides [1, 6]
        "p021": base(2, 9, 5).transpose(0, 2, 1),  # [2, 5, 9]
        "p102": base(9, 2, 5).transpose(1, 0, 2),  # [2, 9, 5]
        "p210": base(5, 2, 9).transpose(2, 1, 0),  # [9, 2, 5]
        "kept_reversed": base(3, 2, 2).transpose(2, 1, 0),  # [2, 2, 3]: over axis 1, dst [2, 3] is 3-major in memory
    }


# (view, axes, what the dense array's axes are): each runs as its dense array's variant
INTERPRETED = [
    ("t2", [1], "outer: grid_split_det"),
    ("t2", [0], "inner: grid_rows"),
    ("t2", [0, 1], "whole: grid_full (argmax: strided, grid_gather)"),
    ("p021", [2], "middle: grid_middle"),
    ("p102", [1], "outer [2, 45]: grid_split_det"),
    ("p210", [0, 2], "general [5, 2, 9]: grid_runs (argmax: strided, grid_gather)"),
    ("kept_reversed", [1], "strided (the kept axes' order): grid_gather"),
]


def expected_variant(kind, x: np.ndarray, axes, **options) -> str | None:
    """The dense array's variant where the view is analyzed in stride order, else None."""
    index = kind in ("argmax", "argmin")
    c = canonical(list(x.shape), axes, [s // x.itemsize for s in x.strides], keep_reduced_order=index)
    return None if c.order is None else dense_variant(kind, x, axes, **options)


@pytest.mark.parametrize("name, axes, what", INTERPRETED)
def test_permuted_views_on_the_interpreter(name, axes, what):
    """sum, argmax or argmin (ties: the first index in the view's order; the value in
    aux) and var (with its mean) of each view, max of two, read in place, against numpy; each
    ran its dense array's variant where stride order took it (not argmax over two
    reduced axes of a transpose, nor a view whose kept axes it would reverse)."""
    x = views(np.random.default_rng(23))[name]
    assert not x.flags.c_contiguous
    kept_reversed = name == "kept_reversed"
    # The view is read the same way whatever the combine: max (sum's loads, another
    # combine) on the first two views; argmax and argmin (the same state, the comparison
    # reversed) by turns.
    i = [case[:2] for case in INTERPRETED].index((name, axes))
    for kind in ("sum", "max") if i < 2 else ("sum",):
        got, _, variant = run(kind, x, axes)
        check(kind, x, got, axes)
        assert variant == (expected_variant(kind, x, axes) or "grid_gather"), (kind, variant)
    for kind in (("argmax", "argmin")[i % 2],):
        got, vals, variant = run(kind, x, axes, aux=True)
        want = flat_index(x, axes, kind == "argmax")
        np.testing.assert_array_equal(got.reshape(want.shape), want)
        extreme = (np.max if kind == "argmax" else np.min)(x, axis=tuple(axes))
        np.testing.assert_array_equal(vals.reshape(want.shape), np.reshape(extreme, want.shape))
        expect = expected_variant(kind, x, axes)
        assert (expect is not None) == (len(axes) == 1 and not kept_reversed), kind
        assert variant == (expect or "grid_gather"), (kind, variant)
    var, mean, variant = run("var", x, axes, aux=True, correction=1)
    x64 = x.astype(np.float64)
    shape = out_shape(list(x.shape), axes)
    np.testing.assert_allclose(var.reshape(shape), np.reshape(np.var(x64, axis=tuple(axes), ddof=1), shape), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mean.reshape(shape), np.reshape(np.mean(x64, axis=tuple(axes)), shape), rtol=1e-5, atol=1e-6)
    assert variant == (expected_variant("var", x, axes, correction=1) or "grid_gather")
    assert (expected_variant("sum", x, axes) is None) == kept_reversed


def test_int_xor_of_a_permuted_view_is_exact():
    rng = np.random.default_rng(5)
    x = rng.integers(-(2**31), 2**31, (3, 4, 7), dtype=np.int64).astype(np.int32).transpose(2, 0, 1)  # [7, 3, 4]
    for axes in ([0], [0, 2]):
        got, _, variant = run("xor", x, axes)
        check("xor", x, got, axes)
        assert variant == dense_variant("xor", x, axes)


# endregion

# region The random generator's permuted views


@pytest.mark.parametrize("fused", [False, True], ids=["kinds", "fused"])
def test_random_permuted_views_in_the_interpreter(fused):
    """The random generator's transposed views (``interpreter_config(views=("transpose",))``,
    a config of its own: the default one draws what it drew before) through the API's
    module of the view's strides and the interpreter, against numpy: no failure, and
    permuted views that run (the fused functions: argmax / argmin with ties and NaN, var,
    norms ...)."""
    import random_reductions as R

    cfg = R.interpreter_config(fused, views=("transpose",))
    outcomes: collections.Counter = collections.Counter()
    failures, permuted_passes = [], 0
    for i in range(60):
        c = R.generate(23, i, cfg)
        o = R.run_case_interpreter(c)
        outcomes[o.status] += 1
        if o.status == "fail":
            failures.append((c.label(), o))
        permuted_passes += o.status == "pass" and R.module_strides(c) is not None and o.reason != "refused as expected"
        if permuted_passes >= 5:
            break
    assert not failures, failures
    assert permuted_passes >= 5, dict(outcomes)


# endregion
