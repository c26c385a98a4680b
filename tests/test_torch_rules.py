"""torch's reduction surface without a GPU (issue: torch's whole reduction surface;
complex numbers: tests/test_complex.py): options given as numpy scalars,
``vector_norm(ord=0)``, a float ``correction``, ``logsumexp`` of bool and integers, a
``dtype=`` narrower than the input (the prologue ``cast``, 8- and 16-bit results
included), and torch's rules for torch tensors (int64 sums of uint8,
uint8 ``any``/``all``, ``dim=()`` and a 0-d input's ``dim=0``) beside numpy's for numpy
arrays. The plans and modules need nothing; the kernels run on the CPU interpreter
(every thread of the lowered kernel) against numpy in float64; the torch tests (a CPU
wheel is enough) run the real call path with the interpreter as the kernel, and
``prod``'s gradient under ``torch.compile(fullgraph=True)``; torch's OpInfo samples of
the complex dtypes with the kernels simulated from the plan (tests/opinfo_reductions.py).
tests/gpu/test_torch_rules_gpu.py runs them against torch on the GPU."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api
from bulkred_dialect.functions import FUNCTIONS, casts_first, library_rules, torch_sum_dtype
from each_case import each_case

# region Plans: dtypes, shapes, maps (no xDSL run)


# (fn, shape, src, kw, dst, prologue, result_shape): the plan of fn(shape, src, **kw)
PLANS = [
    # torch's rules for a torch tensor
    ("sum", (4, 5), "uint8", {"library": "torch"}, "int64", (), ()),
    ("prod", (4, 5), "uint16", {"library": "torch", "axis": 1}, "int64", (), (4,)),
    ("nansum", (4, 5), "uint8", {"library": "torch"}, "int64", (), ()),
    ("sum", (4, 5), "bool", {"library": "torch"}, "int64", (), ()),
    ("sum", (4, 5), "uint64", {"library": "torch"}, "uint64", (), ()),  # no wider signed type holds it
    ("sum", (4, 5), "uint8", {"library": "torch", "dtype": "uint8"}, "uint8", (), ()),  # dtype= chooses
    ("any", (4, 5), "uint8", {"library": "torch", "axis": 1}, "uint8", ("nonzero",), (4,)),
    ("all", (4, 5), "uint8", {"library": "torch"}, "uint8", ("nonzero",), ()),
    ("any", (4, 5), "int8", {"library": "torch"}, "bool", ("nonzero",), ()),
    ("sum", (4, 5), "float32", {"library": "torch", "axis": ()}, "float32", (), ()),
    ("sum", (4, 5), "float32", {"library": "torch", "axis": (), "keepdims": True}, "float32", (), (1, 1)),
    ("sum", (), "float32", {"library": "torch", "axis": 0}, "float32", (), ()),
    ("amax", (), "float32", {"library": "torch", "axis": -1, "keepdims": True}, "float32", (), ()),
    ("var", (), "float32", {"library": "torch", "axis": (0,)}, "float32", (), ()),
    # numpy's (the array API's) rules for numpy and cupy arrays
    ("sum", (4, 5), "uint8", {}, "uint64", (), ()),
    ("sum", (4, 5), "uint8", {"library": "cupy"}, "uint64", (), ()),
    ("any", (4, 5), "uint8", {"library": "numpy"}, "bool", ("nonzero",), ()),
    # both: dtype= narrower than the input casts first
    ("sum", (4, 5), "float64", {"dtype": "float32"}, "float32", ("cast",), ()),
    ("sum", (4, 5), "int64", {"dtype": "int32", "library": "torch"}, "int32", ("cast",), ()),
    ("mean", (4, 5), "float64", {"dtype": "float32", "axis": 0}, "float32", ("cast",), (5,)),
    ("nansum", (4, 5), "float64", {"dtype": "float32"}, "float32", ("cast", "nan_zero"), ()),
    ("vector_norm", (4, 5), "float64", {"dtype": "float32", "ord": 3}, "float32", ("cast", ("pow", 3.0)), ()),
    ("sum", (4, 5), "float16", {"dtype": "float32"}, "float32", (), ()),  # wider: an accumulator, no cast
    ("sum", (4, 5), "float32", {"dtype": "float16"}, "float16", ("cast",), ()),  # narrower than 32 bits too
    ("prod", (4, 5), "int64", {"dtype": "int8", "axis": 1}, "int8", ("cast",), (4,)),
    # vector_norm(ord=0): the count of nonzeros as a float of the result's dtype
    ("vector_norm", (4, 5), "float32", {"ord": 0, "axis": 1}, "float32", ("nonzero",), (4,)),
    ("vector_norm", (4, 5), "bfloat16", {"ord": 0.0}, "bfloat16", ("nonzero",), ()),
    ("vector_norm", (4, 5), "float64", {"ord": np.int64(0), "dtype": "float32"}, "float32", ("nonzero",), ()),
    # logsumexp of bool and integers: float32 (torch's rule, every library)
    ("logsumexp", (4, 5), "int32", {"axis": 1}, "float32", ("cast",), (4,)),
    ("logsumexp", (4, 5), "bool", {}, "float32", ("cast",), ()),
    ("logsumexp", (4, 5), "uint8", {"library": "torch"}, "float32", ("cast",), ()),
    ("logsumexp", (4, 5), "int64", {}, "float32", ("cast",), ()),
    ("logsumexp", (4, 5), "float16", {}, "float16", (), ()),
]


def test_plans():
    """Each row of PLANS (a case of each_case: a test each cost the run more than its
    plan)."""

    def check(fn, shape, src, kw, dst, prologue, result_shape):
        p = api.plan(fn, shape, src, **kw)
        assert (p.dst, p.prologue, p.result_shape) == (dst, prologue, result_shape)
        if p.launches:
            assert api.module_of(p).verify() is None  # the dialect takes it

    each_case(check, PLANS)


def test_library_rules_and_dtype_helpers():
    assert [library_rules(lib) for lib in ("torch", "numpy", "cupy", "other")] == ["torch", "numpy", "numpy", "numpy"]
    assert [torch_sum_dtype(s) for s in ("bool", "uint8", "int32", "uint32", "uint64", "float16")] == [
        "int64", "int64", "int64", "int64", "uint64", "float16"]
    assert casts_first("float64", "float32") and casts_first("int64", "int32") and casts_first("int8", "float32")
    assert not casts_first("float16", "float32") and not casts_first("int32", "int64")  # wider: an accumulator
    assert not casts_first("float32", "int32") and not casts_first("int32", "bool")


def test_numpy_rules_refuse_what_numpy_refuses():
    for call, message in (
        (lambda: api.plan("sum", (4, 5), "float32", axis=()), r"axis=\(\) reduces nothing in numpy"),
        (lambda: api.plan("sum", (), "float32", axis=0), "out of range for a 0-D array"),
        (lambda: api.plan("sum", (4, 5), "float32", axis=2, library="torch"), "axis 2 is out of range for a 2-D array"),
        (lambda: api.plan("sum", (), "float32", axis=1, library="torch"), "axis 1 is out of range for a 0-D array"),
        (lambda: api.plan("sum", (4, 5), "float32", axis=(0, 0), library="torch"), "names an axis twice"),
        (lambda: api.plan("any", (4, 5), "uint8", axis=()), r"axis=\(\) reduces nothing in numpy"),
    ):
        with pytest.raises(api.ReductionError, match=message):
            call()


def test_torch_plans_differ_from_numpy_plans():
    a = api.plan("sum", (4, 5), "uint8")
    b = api.plan("sum", (4, 5), "uint8", library="torch")
    assert (a.dst, b.dst) == ("uint64", "int64")
    x = np.zeros((4, 5), np.uint8)
    assert "memref<1xui64" in str(api.module_of(a)) and "memref<1xi64" in str(api.module_of(b))
    assert bulkred.sum(x, explain=True).splitlines()[-1].startswith("chosen:")


# endregion

# region Options as numpy scalars, correction as a float


@pytest.mark.parametrize(
    ("fn", "kw", "want"),
    [
        ("max", {"ignore_nan": np.bool_(True)}, {"ignore_nan": True}),
        ("min", {"ignore_nan": np.False_}, {"ignore_nan": False}),
        ("vector_norm", {"ord": np.float32(3)}, {"ord": 3.0}),
        ("vector_norm", {"ord": np.int16(1)}, {"ord": 1.0}),
        ("var", {"correction": np.int64(1)}, {"correction": 1}),
        ("var", {"correction": np.float64(1.0)}, {"correction": 1}),
        ("std", {"correction": np.float32(0.5)}, {"correction": 0.5}),
        ("var_mean", {"correction": 1.3}, {"correction": 1.3}),
    ],
)
def test_options_take_numpy_scalars_alike(fn, kw, want):
    row = FUNCTIONS[fn]
    for name, value in kw.items():
        got = next(o for o in row.options if o.name == name).check(value)
        assert got == want[name] and type(got) is type(want[name]), (name, value, got)
    x = np.zeros((4, 6), np.float32)
    assert getattr(bulkred, fn)(x, axis=1, keepdims=np.bool_(False), explain=np.True_, **kw).startswith("")


def test_reduce_takes_a_numpy_bool_for_ignore_nan():
    x = np.zeros((4, 6), np.float32)
    for kind in ("max", "sum"):
        text = bulkred.reduce(kind, x, ignore_nan=np.bool_(False), explain=True)
        assert text.splitlines()[-1].startswith("chosen:"), kind


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (math.nan, "'correction' must be a finite number, got nan"),
        (-math.inf, "'correction' must be a finite number, got -inf"),
        (True, "'correction' must be a number (an int or a float), got True"),
        ("1", "'correction' must be a number (an int or a float), got '1'"),
        (2**70, "'correction' must be within (-2**62, 2**62)"),
        (-1e30, "'correction' must be within (-2**62, 2**62)"),
        (None, "'correction' None is torch's default (1) for a torch tensor; pass a number (0 by default)"),
    ],
)
def test_bad_corrections_are_one_line(value, message):
    with pytest.raises(api.ReductionError, match=f"^bulkred.var: {message.replace('*', '[*]').replace('(', '[(]').replace(')', '[)]')}"):
        api.plan("var", (4, 5), "float32", correction=value)


def test_negative_and_none_corrections_as_torch():
    assert api.plan("var", (4, 5), "float32", correction=-1).correction == -1
    assert api.plan("std", (4, 5), "float32", correction=-0.5).correction == -0.5
    assert api.plan("var", (4, 5), "float32", correction=None, library="torch").correction == 1  # torch's default
    assert "correction -1 : i64" in str(api.module_of(api.plan("var", (4, 5), "float32", axis=1, correction=-1)))


def test_float_correction_prints_as_f64_and_ints_as_before():
    def text(c):
        return str(api.module_of(api.plan("var", (4, 5), "float32", axis=1, correction=c)))

    assert "correction 1.300000e+00 : f64" in text(1.3)
    assert "correction 1 : i64" in text(1) and "correction 1 : i64" in text(1.0)  # an integral float: the int
    from xdsl.parser import Parser

    from bulkred_dialect import universe

    again = Parser(universe.context(), text(1.3)).parse_module()  # parses back: the same op
    again.verify()
    assert str(again) == text(1.3)
    assert FUNCTIONS["var"].schema() == "(Tensor x, int[]? axis, bool keepdims, float? correction, ScalarType? dtype) -> Tensor"


def test_the_verifier_rules_of_correction_cast_and_nonzero():
    from xdsl.utils.exceptions import VerifyException

    from bulkred_dialect import builder as T

    def module(kind, src, dst, **kw):
        with T.kernel("k") as k:
            x = k.param("x", [4, 8], src)
            y = k.param("y", [4], dst)
            T.reduce(kind, y, x, axes=[1], **kw)
        return k.module()

    for kind, src, dst, kw, message in (
        ("var", "float32", "float32", {"correction": math.inf}, "'correction' must be finite, got inf"),
        ("sum", "float64", "int32", {"prologue": ["cast"]}, "prologue .cast. must be a float from an integer"),
        ("sum", "float16", "bfloat16", {"prologue": ["cast"]}, "prologue 'cast'"),  # no narrower: refused
        ("sum", "float32", "int32", {"prologue": ["cast"]}, "prologue 'cast'"),  # float to int: not a cast we take
        ("sum", "float64", "float32", {}, "'dst' element type must be src's f64"),  # narrower without the cast
        ("logsumexp", "int32", "float32", {}, "kind logsumexp of i32 has no wider accumulator type"),
        ("any", "ui8", "i32", {"prologue": ["nonzero"]}, "must be i1 \\(bool\\) or ui8"),
        ("sum", "f32", "i8", {"prologue": ["nonzero"]}, "i32, i64, ui32, ui64 or a float"),
    ):
        src = {"ui8": "uint8", "f32": "float32"}.get(src, src)
        dst = {"i32": "int32", "i8": "int8"}.get(dst, dst)
        with pytest.raises(Exception, match=message) as info:
            module(kind, src, dst, **kw).verify()
        assert isinstance(info.value, VerifyException | api.BulkredError), (kind, info.value)
    for kind, src, dst, kw in (
        ("var", "float32", "float32", {"correction": 1.3}),
        ("var", "float32", "float32", {"correction": -0.5}),  # negative: N + 0.5, as torch
        ("sum", "float64", "float32", {"prologue": ["cast"]}),
        ("sum", "int64", "int32", {"prologue": ["cast"]}),
        ("logsumexp", "int32", "float32", {"prologue": ["cast"]}),
        ("logsumexp", "bool", "float64", {"prologue": ["cast"]}),
        ("any", "uint8", "uint8", {"prologue": ["nonzero"]}),
        ("sum", "float32", "float32", {"prologue": ["nonzero"]}),
    ):
        module(kind, src, dst, **kw).verify()


# endregion

# region The kernels on the interpreter


@functools.cache
def _lowered(p: api.Plan):
    from xdsl.dialects import func

    from bulkred_dialect.backend_ptx.runtime import lower_tile_module

    m = api.module_of(p)
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    return m, next(op for op in m.ops if isinstance(op, func.FuncOp) and op.sym_name.data == p.kernel_name)


def run(p: api.Plan, x: np.ndarray) -> list[np.ndarray]:
    """The plan's kernel on the interpreter: its outputs (dst, aux) in the result's shape."""
    from bulkred_dialect.interpreter import run_grid
    from bulkred_dialect.ops import dtypes as D

    m, f = _lowered(p)
    types = f.function_type.inputs.data
    n_out = 1 if p.aux is None else 2
    outs = [np.full(t.get_shape(), 0x5A, np.dtype(D.of_ir(t.element_type).numpy)) for t in types[1 : 1 + n_out]]
    ws = [np.zeros(t.get_shape(), np.uint8) for t in types[1 + n_out :]]
    xk = x.reshape(p.shape) if p.strides is not None else np.ascontiguousarray(x).reshape(p.shape)  # a view: in place
    _, *got = run_grid(m, p.kernel_name, xk, *outs, *ws)
    return [g.reshape(p.result_shape) for g in got[:n_out]]


FORMS = [((203,), None), ((6, 37), 1), ((37, 8), 0), ((3, 20, 5), 1), ((4, 6, 10), (0, 2))]


@pytest.mark.parametrize(("shape", "axis"), FORMS, ids=[f"{s}-{a}" for s, a in FORMS])
def test_vector_norm_ord_0_counts_nonzeros_as_a_float(shape, axis):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    x[rng.random(shape) < 0.4] = 0.0
    x.reshape(-1)[:3] = [np.nan, -0.0, np.inf]  # NaN and inf count, -0.0 does not
    for src, dtype in (("float32", None), ("float16", None), ("float32", "float64")):
        p = api.plan("vector_norm", shape, src, axis=axis, ord=0, dtype=dtype)
        (got,) = run(p, x.astype(src))
        want = np.count_nonzero(x.astype(src), axis=axis)
        assert got.dtype == np.dtype(p.dst) and np.array_equal(got, want.astype(p.dst)), (src, dtype, got, want)


CORRECTIONS = (("var", 1.3), ("std", 0.5), ("var_mean", 2.5), ("var", -1), ("std_mean", -0.5))


@pytest.mark.parametrize(("shape", "axis"), FORMS, ids=[f"{s}-{a}" for s, a in FORMS])
def test_float_correction(shape, axis):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32)
    n = math.prod(shape) // math.prod(d for i, d in enumerate(shape) if axis is not None and i not in (axis if isinstance(axis, tuple) else (axis,)))
    # The correction enters only where the result is stored (M2 / (N - c), the state's
    # final step, the same whatever the form): every function and correction on the
    # whole array, and on each other form one of them in turn (its own count N).
    i = FORMS.index((shape, axis))
    cases = CORRECTIONS if i == 0 else [CORRECTIONS[i % len(CORRECTIONS)]]
    for fn, c in cases:
        p = api.plan(fn, shape, "float32", axis=axis, correction=c)
        got = run(p, x)
        x64 = x.astype(np.float64)
        m2 = np.sum((x64 - x64.mean(axis=axis, keepdims=True)) ** 2, axis=axis)
        want = m2 / (n - c)
        want = np.sqrt(want) if fn.startswith("std") else want
        np.testing.assert_allclose(got[0], want, rtol=2e-6, err_msg=f"{fn} {c}")
        if fn == "var_mean":
            np.testing.assert_allclose(got[1], x64.mean(axis=axis), rtol=1e-6, atol=1e-7)


def test_float_correction_past_the_count_gives_inf_or_nan():
    x = np.array([[1.0, 2.0], [3.0, 3.0]], np.float32)
    (got,) = run(api.plan("var", (2, 2), "float32", axis=1, correction=2.5), x)  # N - c < 0: inf, 0 / 0 NaN (torch)
    assert np.isinf(got[0]) and got[0] > 0 and np.isnan(got[1])


# Each integer type's conversion to float32 follows its load the same way in every
# form: each type on the whole array; by rows and by columns the narrowest (bool, a
# byte each) and the widest (int64).
LOGSUMEXP_CASES = [(src, FORMS[0]) for src in ("int32", "int8", "uint8", "bool", "int64", "uint32")] + [
    (src, form) for form in FORMS[1:3] for src in ("bool", "int64")
]


@pytest.mark.parametrize(("src", "form"), LOGSUMEXP_CASES, ids=[f"{s}-{a}-{src}" for src, (s, a) in LOGSUMEXP_CASES])
def test_logsumexp_of_integers_and_bool_is_float32(src, form):
    shape, axis = form
    rng = np.random.default_rng(5)
    x = (rng.random(shape) < 0.5) if src == "bool" else rng.integers(0, 40, shape).astype(src)
    if src in ("int32", "int8", "int64"):
        x = x - np.array(20, src)
    p = api.plan("logsumexp", shape, src, axis=axis)
    (got,) = run(p, x)
    x64 = x.astype(np.float64)
    m = x64.max(axis=axis, keepdims=True)
    want = np.log(np.sum(np.exp(x64 - m), axis=axis)) + np.squeeze(m, axis=axis)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=3e-6, atol=3e-6)


@pytest.mark.parametrize(("shape", "axis"), FORMS, ids=[f"{s}-{a}" for s, a in FORMS])
def test_a_narrower_dtype_casts_first(shape, axis):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(shape) * 1e3 + 1.0 / 3.0).astype(np.float64)
    (got,) = run(api.plan("sum", shape, "float64", axis=axis, dtype="float32"), x)
    want = np.sum(x.astype(np.float32).astype(np.float64), axis=axis)  # the cast elements, summed exactly
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    big = rng.integers(-(2**40), 2**40, shape, dtype=np.int64)
    (got,) = run(api.plan("sum", shape, "int64", axis=axis, dtype="int32", library="torch"), big)
    want = np.sum(big.astype(np.int32), axis=axis, dtype=np.int32)  # the low bits, wrapping as torch and numpy
    assert got.dtype == np.int32 and np.array_equal(got, want)


@pytest.mark.parametrize(
    ("fn", "src", "dst", "shape", "axis"),
    [("sum", "float32", "float16", (6, 37), 1), ("mean", "float64", "float16", (37, 8), 0),
     ("sum", "float32", "bfloat16", (203,), None), ("prod", "float32", "float16", (6, 5), 1),
     ("nansum", "float64", "float16", (3, 20, 5), 1), ("sum", "int32", "int8", (6, 37), 1),
     ("prod", "int64", "int16", (6, 5), 1), ("sum", "int64", "uint8", (4, 6, 10), (0, 2))],
)
def test_a_dtype_narrower_than_32_bits_casts_first(fn, src, dst, shape, axis):
    """torch's ``sum(x_float32, dtype=torch.float16)``: each element converted to the
    16-bit float first (cvt.rn), then accumulated in float32 as float16 elements are, the
    result rounded to float16: the same bits as numpy's reduction of the cast elements in
    float32 (small sums, exact there); 8- and 16-bit integers wrap as torch's (the low
    bits of the 32-bit accumulation)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape) * 100 + 1.0 / 3.0
    if fn == "prod":
        x = x / 100
    x = x.astype(src) if src.startswith("float") else (x * 1000).astype(src)
    p = api.plan(fn, shape, src, axis=axis, dtype=dst)
    assert p.prologue[0] == "cast" and p.dst == dst
    (got,) = run(p, x)
    ref = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "nansum": np.nansum}[fn]
    if dst.startswith("float") or dst == "bfloat16":  # within one ulp of the result of the cast values' exact sum
        if dst == "bfloat16":  # numpy has no bfloat16: the kernel's bits as float32, the elements rounded as torch's
            from random_reductions import bf16_round

            got, cast = (np.asarray(got).view(np.uint16).astype(np.uint32) << 16).view(np.float32), bf16_round(x)
        else:
            cast = x.astype(dst)
            assert got.dtype == np.dtype(dst)
        want = ref(cast.astype(np.float64), axis=axis)
        ulp = 2.0**-7 if dst == "bfloat16" else 2.0**-10
        np.testing.assert_allclose(np.asarray(got, np.float64).reshape(np.shape(want)), want, rtol=ulp, atol=0)
        # and not the sum of the uncast elements: the cast is there (a difference far above one ulp)
        assert not np.allclose(ref(x.astype(np.float64), axis=axis), want, rtol=ulp / 64, atol=0)
    else:
        want = ref(x.astype(dst).astype(np.int64), axis=axis).astype(dst)  # the low bits, wrapping as torch
        assert got.dtype == np.dtype(dst) and np.array_equal(np.asarray(got).reshape(np.shape(want)), want)


@pytest.mark.parametrize(("fn", "axis"), [("any", 1), ("all", 1), ("any", None), ("all", None)])
def test_torch_any_all_of_uint8_give_uint8(fn, axis):
    x = np.array([[0, 0, 0], [0, 7, 0], [1, 2, 255], [0, 0, 1]], np.uint8)
    p = api.plan(fn, x.shape, "uint8", axis=axis, library="torch")
    (got,) = run(p, x)
    want = getattr(np, fn)(x != 0, axis=axis)
    assert got.dtype == np.uint8 and np.array_equal(got, want.astype(np.uint8)), (got, want)


def test_torch_sums_of_uint8_are_int64():
    x = np.full((3, 40), 250, np.uint8)
    for fn in ("sum", "nansum"):
        (got,) = run(api.plan(fn, x.shape, "uint8", axis=1, library="torch"), x)
        assert got.dtype == np.int64 and got.tolist() == [10000] * 3
    (got,) = run(api.plan("prod", (2, 3), "uint8", axis=1, library="torch"), np.array([[200, 200, 3], [1, 2, 3]], np.uint8))
    assert got.dtype == np.int64 and got.tolist() == [120000, 6]


@pytest.mark.parametrize("fn", ["any", "all"])
@pytest.mark.parametrize(("shape", "src"), [((4, 5), "uint8"), ((3, 2, 7), "float32"), ((6,), "bool")])
def test_torch_any_all_with_dim_empty_reduce_nothing(fn, shape, src):
    """torch's any/all with dim=() give x != 0 elementwise (no axis reduced): the plan
    reduces a trailing unit axis (the canonical form drops it: a column sum of one row)."""
    rng = np.random.default_rng(9)
    x = (rng.random(shape) < 0.5) if src == "bool" else (rng.integers(0, 3, shape) * (rng.random(shape) < 0.5)).astype(src)
    if src == "float32":
        x.reshape(-1)[:2] = [np.nan, -0.0]
    for keepdims in (False, True):
        p = api.plan(fn, shape, src, axis=(), keepdims=keepdims, library="torch")
        assert (p.shape, p.axes, p.result_shape) == ((*shape, 1), (len(shape),), shape)
        (got,) = run(p, x)
        want = (x != 0).astype(np.uint8 if src == "uint8" else np.bool_)
        assert got.dtype == want.dtype and np.array_equal(got, want), (fn, shape, src, got)


def test_torch_dim_empty_and_0d_reduce_everything():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (got,) = run(api.plan("sum", x.shape, "float32", axis=(), library="torch"), x)
    assert got.shape == () and float(got) == 66.0
    p = api.plan("sum", (), "float32", axis=0, library="torch")
    (got,) = run(p, np.array(2.5, np.float32))
    assert got.shape == () and float(got) == 2.5


# endregion

# region torch tensors through the call path (the interpreter as the kernel)


def _torch():
    return pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for these tests)")


@pytest.fixture
def interpreted(monkeypatch):
    """Every kernel of the API runs on the interpreter: a CPU torch tensor goes through
    the real call path (plans, the operators, autograd), the kernel on numpy copies."""
    torch = _torch()
    from bulkred_dialect import reductions
    from bulkred_dialect.backend_ptx import device

    class InterpretedKernel:
        _fast = None
        signature = None

        def __init__(self, p):
            self.p = p

        def __call__(self, x, *outs, stream=None):
            if isinstance(x, np.ndarray):
                for o, g in zip(outs, run(self.p, x)):  # the kernel's order: dst, aux
                    o[...] = g.reshape(o.shape)
                return (x, *outs)
            for o, g in zip(outs, run(self.p, x.detach().numpy())):  # a view as it is (the plan's strides)
                o.copy_(torch.from_numpy(np.ascontiguousarray(g)).reshape(o.shape))
            return (x, *outs)

    monkeypatch.setattr(api, "kernel_of", lambda p, target: InterpretedKernel(p))
    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    reductions.forget()
    yield torch
    reductions.forget()


def test_torch_tensors_get_torch_dtypes_and_dims(interpreted):
    torch = interpreted
    u = torch.tensor([[0, 3, 250], [0, 0, 0]], dtype=torch.uint8)
    for fn in ("sum", "prod", "nansum"):
        got, want = getattr(bulkred, fn)(u, axis=1), getattr(torch, fn)(u, dim=1)
        assert got.dtype == want.dtype == torch.int64 and torch.equal(got, want), fn
    for fn in ("any", "all"):
        got, want = getattr(bulkred, fn)(u, axis=1), getattr(torch, fn)(u, dim=1)
        assert got.dtype == want.dtype == torch.uint8 and torch.equal(got, want), fn
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert torch.equal(bulkred.sum(x, axis=()), x.sum(dim=()))
    for t in (u, x - 5, (x - 5).t(), x[:, ::2] > 3):  # any/all with dim=(): x != 0, elementwise (views too)
        for fn in ("any", "all"):
            got, want = getattr(bulkred, fn)(t, axis=()), getattr(torch, fn)(t, dim=())
            assert got.dtype == want.dtype and torch.equal(got, want), (fn, t)
    s = torch.tensor(1.5)
    for dim in (0, -1, (0,)):
        assert torch.equal(bulkred.sum(s, axis=dim), s.sum(dim=dim)) and bulkred.amax(s, axis=dim, keepdims=True).shape == ()
    d = torch.tensor([0.1, 1.0 / 3.0, 2.0**-30, 7.0], dtype=torch.float64)
    got, want = bulkred.sum(d, dtype=torch.float32), torch.sum(d, dtype=torch.float32)
    assert got.dtype == want.dtype == torch.float32
    torch.testing.assert_close(got, want)
    i = torch.tensor([[1, 0, 1], [0, 0, 0]], dtype=torch.int32)
    got, want = bulkred.logsumexp(i, axis=1), torch.logsumexp(i, dim=1)
    assert got.dtype == want.dtype == torch.float32
    torch.testing.assert_close(got, want)
    # numpy arrays keep numpy's rules in the same process, before and after a torch call
    assert bulkred.sum(u.numpy()).dtype == np.uint64 and bulkred.any(u.numpy()).dtype == np.bool_
    assert bulkred.sum(u).dtype == torch.int64 and bulkred.sum(u.numpy()).dtype == np.uint64


def test_torch_vector_norm_ord_0_and_float_corrections(interpreted):
    torch = interpreted
    x = torch.tensor([[0.0, 2.0, -0.0, math.nan], [1.0, 1.0, 0.0, 0.0]])
    got, want = bulkred.vector_norm(x, ord=0, axis=1), torch.linalg.vector_norm(x, 0, dim=1)
    assert got.dtype == want.dtype and torch.equal(got, want)
    a = x.nan_to_num().clone().requires_grad_(True)
    bulkred.vector_norm(a, ord=0).backward()
    assert torch.equal(a.grad, torch.zeros_like(a))  # torch's gradient of ord 0
    y = torch.randn(5, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for fn in ("var", "std", "var_mean", "std_mean"):
        for c in (1.3, 0.5, -1, None):
            got, want = getattr(bulkred, fn)(y, axis=1, correction=c), getattr(torch, fn)(y, dim=1, correction=c)
            torch.testing.assert_close(got, want, msg=f"{fn} {c}")
            a, b = y.clone().requires_grad_(True), y.clone().requires_grad_(True)
            r1, r2 = getattr(bulkred, fn)(a, axis=1, correction=c), getattr(torch, fn)(b, dim=1, correction=c)
            (r1[0] if fn.endswith("_mean") else r1).sum().backward()
            (r2[0] if fn.endswith("_mean") else r2).sum().backward()
            torch.testing.assert_close(a.grad, b.grad, msg=f"grad {fn} {c}")


def test_prod_gradient_without_a_host_sync(interpreted):
    """``prod``'s gradient chooses per slice on the device (no ``bool(...)`` of a tensor):
    torch.compile(fullgraph=True) traces forward and backward (aot_eager: the traced
    graphs, run eagerly), and the values are torch's with one zero, two, and none."""
    torch = interpreted
    x = torch.tensor([[2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 3.0, 1.0], [1.5, -2.0, 0.5, 3.0]], dtype=torch.float64)

    def loss(t):
        return (bulkred.prod(t, axis=1) * torch.tensor([1.0, 2.0, 3.0], dtype=t.dtype)).sum()

    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    a, b, c = (x.clone().requires_grad_(True) for _ in range(3))
    compiled(a).backward()
    loss(b).backward()
    (torch.prod(c, dim=1) * torch.tensor([1.0, 2.0, 3.0], dtype=c.dtype)).sum().backward()
    assert torch.equal(a.grad, c.grad) and torch.equal(b.grad, c.grad), (a.grad, c.grad)
    assert a.grad[0].tolist() == [0.0, 24.0, 0.0, 0.0] and a.grad[1].tolist() == [0.0] * 4
    t = x[2].clone().requires_grad_(True)
    assert torch.autograd.gradgradcheck(lambda v: bulkred.prod(v), (t,))


# endregion


def test_gradients_of_dim_empty_and_0d(interpreted):
    """``dim=()`` reduces every axis in the gradient too; a 0-d input's ``dim=0``."""
    torch = interpreted
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    for fn in ("sum", "mean", "amax"):
        a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        getattr(bulkred, fn)(a, axis=()).backward()
        getattr(torch, fn)(b, dim=()).backward()
        assert torch.equal(a.grad, b.grad), fn
    s = torch.tensor(2.5, dtype=torch.float64)
    for fn in ("sum", "prod", "amax"):
        a, b = s.clone().requires_grad_(True), s.clone().requires_grad_(True)
        getattr(bulkred, fn)(a, axis=0).backward()
        (torch.prod(b, 0) if fn == "prod" else getattr(torch, fn)(b, dim=0)).backward()
        assert torch.equal(a.grad, b.grad), fn


def test_torch_spelling_dim_and_keepdim():
    x = np.zeros((4, 6, 5), np.float32)
    a = bulkred.sum(x, dim=(0, 2), keepdim=True, explain=True)
    assert a == bulkred.sum(x, axis=(0, 2), keepdims=True, explain=True)
    assert bulkred.argmax(x, dim=1, explain=True) == bulkred.argmax(x, axis=1, explain=True)
    assert bulkred.var(np.ones((3, 4), np.float32), dim=1, keepdim=True, correction=1.5, explain=True).startswith("")
    for kw, message in (
        ({"dim": 1, "axis": 0}, "'dim' .torch's spelling. and 'axis' name one argument"),
        ({"keepdim": True, "keepdims": True}, "'keepdim' .torch's spelling. and 'keepdims' name one argument"),
        ({"dims": 1}, "'dims' is not taken by sum"),
    ):
        with pytest.raises(api.ReductionError, match=f"^bulkred.sum: {message}"):
            bulkred.sum(x, **kw)


def test_torch_spelling_on_torch_tensors(interpreted):
    torch = interpreted
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    assert torch.equal(bulkred.sum(x, dim=(0, 2), keepdim=True), x.sum(dim=(0, 2), keepdim=True))
    assert torch.equal(bulkred.amax(x, dim=-1), x.amax(dim=-1))
    a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    bulkred.mean(a, dim=1, keepdim=True).sum().backward()
    b.mean(dim=1, keepdim=True).sum().backward()
    assert torch.equal(a.grad, b.grad)


def test_the_new_rules_under_torch_compile(interpreted):
    """torch.compile(fullgraph=True) traces the calls with torch's rules and spellings
    (numpy scalar options are traced by dynamo as arrays: pass Python numbers there)."""
    torch = interpreted
    x = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    u = torch.tensor([[0, 3, 250], [0, 0, 0]], dtype=torch.uint8)

    def f(t, v):
        return (
            bulkred.vector_norm(t, ord=3.0, axis=1),
            bulkred.var(t, correction=1.3, dim=0),
            bulkred.vector_norm(t, ord=0),
            bulkred.sum(v, axis=1),
            bulkred.any(v, axis=1),
            bulkred.max(t, ignore_nan=True, keepdim=True, dim=1),
        )

    got = torch.compile(f, fullgraph=True, backend="aot_eager")(x, u)
    want = (torch.linalg.vector_norm(x, 3, dim=1), x.var(dim=0, correction=1.3), torch.linalg.vector_norm(x, 0),
            u.sum(dim=1), u.any(dim=1), x.amax(dim=1, keepdim=True))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w)


# region torch's OpInfo samples on the host (the kernels simulated from the plan)


@pytest.fixture
def simulated(monkeypatch):
    """Every kernel of the API simulated by torch from its plan (random_reductions'
    ``simulate_into``): a CPU torch tensor goes through the real call path, a complex
    one as its parts, as on the GPU."""
    torch = _torch()
    pytest.importorskip("expecttest", reason="torch's OpInfo database needs expecttest")
    import random_reductions as R

    from bulkred_dialect import reductions
    from bulkred_dialect.backend_ptx import device

    class SimulatedKernel:
        _fast = None
        signature = None

        def __init__(self, p):
            self.p = p

        def __call__(self, x, *outs, stream=None):
            R.simulate_into(torch, self.p, x.detach(), list(outs))
            return (x, *outs)

    monkeypatch.setattr(api, "kernel_of", lambda p, target: SimulatedKernel(p))
    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    reductions.forget()
    yield torch
    reductions.forget()


@pytest.mark.parametrize(("dtype", "grad", "least"), [("complex64", False, 500), ("complex32", False, 120),
                                                     ("complex128", True, 400)],
                         ids=["complex64", "complex32", "complex128-grads"])
def test_opinfo_complex_samples_on_the_host(simulated, dtype, grad, least):
    """Every complex sample of torch's OpInfo reduction ops (tests/opinfo_reductions.py):
    complex64 and complex32 forward (complex32: the ops torch's CUDA takes it in, torch's
    CPU reference its complex64 value rounded, as its CUDA kernels accumulate),
    complex128 gradients (torch's complex autograd against the rules of grads.py), each
    with its plan's dtypes and shapes: 0 wrong, 0 other dtype, the refusals only the
    allowed one (matrix norms; complex logsumexp passes). The GPU test runs every sample of
    every dtype with the real kernels."""
    import opinfo_reductions as O

    torch = simulated
    samples = O.samples(torch, "cpu", (dtype,), grad=grad, supported_on="cuda" if dtype == "complex32" else None)
    counts = O.run(torch, bulkred, samples, grad=grad)
    print(O.table(counts))
    problems = [p for c in counts.values() for p in c.problems]
    assert not problems, problems[:10]
    assert sum(c.passed for c in counts.values()) > least
    assert "unexpected" not in {k for c in counts.values() for k in c.refused}


# endregion
