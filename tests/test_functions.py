"""The function table (bulkred_dialect/functions.py) and what it generates, without a GPU:
each row's plan, signature, docs and torch schema; every row (parametrized over
``ROWS``: a new row is tested here as it is added) planned as its row says and run on the
CPU interpreter against its reference (tests/random_reductions.py's ``ROW_TESTS``); and
the public boundary's checks that come before any GPU work (bad
options, byte order, out= that cannot be written, streams, pairs)."""

from __future__ import annotations

import inspect
import math
import os
import sys

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api
from bulkred_dialect.functions import FUNCTIONS, ROWS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# region The table


def test_every_row_is_a_function_with_its_signature_and_docs():
    for row in ROWS:
        f = getattr(bulkred, row.name)
        params = inspect.signature(f).parameters
        assert list(params)[0] == "x" and params["x"].kind is inspect.Parameter.POSITIONAL_ONLY
        assert {"axis", "keepdims", "out", "stream", "explain", *row.option_names} == set(params) - {"x"}
        for o in row.options:
            assert params[o.name].default == o.default and params[o.name].kind is inspect.Parameter.KEYWORD_ONLY
        assert f.__doc__.startswith(row.summary) and row.torch in f.__doc__
        assert ("Differentiable" in f.__doc__) == (row.grad is not None)


def test_the_torch_schemas_come_from_the_options():
    assert FUNCTIONS["sum"].schema() == "(Tensor x, int[]? axis, bool keepdims, ScalarType? dtype) -> Tensor"
    assert FUNCTIONS["var_mean"].schema() == (
        "(Tensor x, int[]? axis, bool keepdims, float? correction, ScalarType? dtype) -> (Tensor, Tensor)"
    )
    assert FUNCTIONS["max"].out_schema() == "(Tensor x, int[]? axis, bool keepdims, bool ignore_nan, Tensor(a0!) out0) -> ()"
    assert FUNCTIONS["vector_norm"].schema() == "(Tensor x, int[]? axis, bool keepdims, float ord, ScalarType? dtype) -> Tensor"


@pytest.mark.parametrize(
    ("fn", "shape", "src", "kw", "kind", "dst", "aux", "prologue"),
    [
        ("amax", (4, 5), "float32", {"axis": 1}, "max", "float32", None, ()),
        ("amin", (4, 5), "int8", {}, "min", "int8", None, ()),
        ("count_nonzero", (4, 5), "float32", {"axis": 0}, "sum", "int64", None, ("nonzero",)),
        ("count_nonzero", (4, 5), "bool", {}, "sum", "int64", None, ("nonzero",)),
        ("std_mean", (4, 5), "float16", {"axis": 1, "correction": 1}, "var", "float16", "float16", ()),
        ("max_with_indices", (4, 5), "bfloat16", {"axis": 1}, "argmax", "int64", "bfloat16", ()),
        ("min_with_indices", (4, 5), "int32", {}, "argmin", "int64", "int32", ()),
    ],
)
def test_plans_of_the_new_rows(fn, shape, src, kw, kind, dst, aux, prologue):
    p = api.plan(fn, shape, src, **kw)
    assert (p.kind, p.dst, p.aux, p.prologue, p.fn) == (kind, dst, aux, prologue, fn)
    if FUNCTIONS[fn].results == 2:
        want = (aux, dst) if FUNCTIONS[fn].aux_first else (dst, aux)
        assert p.outputs == want


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: api.plan("amax", (4, 0), "float32", 1), "bulkred.amax: axis 1 of an array of shape (4, 0) has no elements"),
        (lambda: api.plan("max_with_indices", (4, 5), "float32", (0, 1)), "bulkred.max_with_indices: 'axis' must be an int or None"),
        (lambda: api.plan("std_mean", (4, 5), "int32"), "bulkred.std_mean: expected a floating-point input"),
        (lambda: api.plan("sum", (4, 5), "float32", correction=1), "bulkred.sum: 'correction' is not taken by sum (its options: dtype)"),
        (lambda: api.plan("var", (4,), "float32", correction=2**70), "bulkred.var: 'correction' must be within (-2**62, 2**62)"),
        (lambda: api.plan("vector_norm", (4,), "float32", ord=2**1024), "bulkred.vector_norm: 'ord' must be a finite number"),
        (lambda: api.plan("vector_norm", (4,), "float32", ord=1e308), "bulkred.vector_norm: 'ord' must be inf, -inf or a number of magnitude"),
        (lambda: api.plan("vector_norm", (4,), "float32", ord=5e-324), "bulkred.vector_norm: 'ord' must be inf, -inf or a number of magnitude"),
        (lambda: api.plan("vector_norm", (4,), "float32", ord=1e-300), "bulkred.vector_norm: 'ord' must be inf, -inf or a number of magnitude"),
        (lambda: api.plan("sum", None, "float32"), "bulkred.sum: 'shape' must be a tuple of ints >= 0, got NoneType"),
        (lambda: api.plan("sum", (-1,), "float32"), "bulkred.sum: 'shape' must be a tuple of ints in [0, 2**63)"),
        (lambda: api.plan("sum", (2.5,), "float32"), "bulkred.sum: 'shape' must be a tuple of ints in [0, 2**63)"),
        (lambda: api.plan("sum", (True,), "float32"), "bulkred.sum: 'shape' must be a tuple of ints in [0, 2**63)"),
        (lambda: api.plan("sum", (2**64,), "float32"), "bulkred.sum: 'shape' must be a tuple of ints in [0, 2**63)"),
        (lambda: api.explain_reduction("sum", (8, 4), "float32", True), "bulkred.sum: 'axis' must be an int, a tuple of ints or None, got True"),
        (lambda: api.compile_reduction("sum", (8, 4), "float32", True, "sm_90a"), "bulkred.sum: 'axis' must be an int, a tuple of ints or None, got True"),
        (lambda: api.plan("nope", (4,), "float32"), "unknown reduction 'nope'"),
    ],
)
def test_plan_refusals_of_options_and_shapes(call, message):
    with pytest.raises(api.ReductionError) as e:
        call()
    assert message in str(e.value) and "\n" not in str(e.value)


def test_numpy_int64_axis_and_shape_are_taken():
    p = api.plan("sum", (np.int64(4), np.int64(6)), "float32", np.int64(1))
    assert p.shape == (4, 6) and p.axes == (1,) and all(type(d) is int for d in p.shape)
    assert api.explain_reduction("sum", (8, 4), "float32", np.int64(1), "sm_90a").startswith("dispatch of")


# endregion

# region Every row: its plan and its kernel on the interpreter (the recipe's test: any row)


def _row_case(row, dtype: str, axis, keepdims: bool = False):
    """A small contiguous case of ``row`` (the random harness's, tests/random_reductions.py)."""
    import dataclasses

    import random_reductions as R

    base = R.generate(7, 0, R.rows_config(kinds=(row.name,), views=("contiguous",), numpy_inputs=1.0, options=False))
    values = "zeros0.5" if base.values.startswith("zeros") else "ints" if dtype in R.FLOATS else "full"
    return dataclasses.replace(
        base, dtype=dtype, shape=(5, 24), axis=axis, keepdims=keepdims, dtype_arg=None, ignore_nan=None, use_out=False,
        library="numpy", view="contiguous", base_shape=(5, 24), slices=((0, 5, 1), (0, 24, 1)), perm=(0, 1),
        expand=False, values=values, nans=1 if dtype in R.FLOATS else 0,
        correction=1 if "correction" in row.option_names else None, ord=3.0 if "ord" in row.option_names else None,
    )


def _dtype_of(row) -> str:
    return "int32" if row.inputs == "integer" else "float32"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_row_plans_as_its_row_says(row):
    """The plan of any row: the row's reduction (kind, maps, dtypes from ``build``), its
    name and kernel, one result per ``results``, the array API's shapes (a whole
    reduction, one axis kept or not)."""
    src = _dtype_of(row)
    r = row.build(src, {**row.defaults()})
    for axis, keepdims, result_shape, kernel_shape in ((None, False, (), (1,)), (1, False, (5,), (5,)), (1, True, (5, 1), (5,))):
        p = api.plan(row.name, (5, 24), src, axis, keepdims)
        assert (p.fn, p.kind, p.prologue, p.epilogue, p.dst, p.aux) == (row.name, r.kind, r.prologue, r.epilogue, r.dst, r.aux)
        assert p.kernel_name == f"bulkred_{row.kernel}" and len(p.outputs) == row.results
        assert (p.result_shape, p.kernel_shape) == (result_shape, kernel_shape)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_row_runs_on_the_interpreter(row):
    """Any row's kernel (the API's module: plan, module_of, lower-tile-reductions) on
    the interpreter against the row's numpy reference (its test row in
    tests/random_reductions.py's ``ROW_TESTS``), over one axis and the whole array, with
    a NaN in float inputs. A kernel the interpreter cannot run (a cluster launch) is
    skipped; one axis always runs."""
    import random_reductions as R

    for axis in (1, None):
        c = _row_case(row, _dtype_of(row), axis)
        o = R.run_case_interpreter(c)
        assert o.status == "pass" or axis is None and o.status == "skip" and "clusters" in o.reason, (c.label(), o)


# endregion

# region The boundary: checked before any GPU work, the same with or without one


@pytest.fixture
def no_launch(monkeypatch):
    """Anything past the checks fails the test: no compile, no device."""
    from bulkred_dialect.backend_ptx import device

    monkeypatch.setattr(api, "kernel_of", lambda *a: pytest.fail("compiled"))
    monkeypatch.setattr(device, "current_arch", lambda: pytest.fail("the GPU was asked for"))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bulkred.xor(np.zeros(4, np.float32)), "bulkred.xor: expected an integer or bool input, got float32"),
        (lambda: bulkred.and_(np.zeros(4, np.float64)), "bulkred.and_: expected an integer or bool input, got float64"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), out=np.zeros((), np.complex64)), "complex64 of a float32 x is not supported yet"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), out=np.zeros((), object)), "'out' has dtype object, which is not supported"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), out=np.zeros((), "datetime64[s]")), "which is not supported"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), stream=42.5), "bulkred.sum: 'stream' must be a stream"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), stream="x"), "bulkred.sum: 'stream' must be a stream"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), stream=object()), "bulkred.sum: 'stream' must be a stream"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), stream=-1), "bulkred.sum: 'stream' handle must be in [0, 2**64)"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), stream=True), "bulkred.sum: 'stream' must be a stream"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), stream=_StreamLike(handle=5)), "bulkred.sum: 'stream' must be a stream"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), stream=_StreamLike(cuda_stream="x")), "bulkred.sum: 'stream' must be a stream"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), stream=_StreamLike(__cuda_stream__=lambda self: "junk")), "'stream' must be a stream"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), stream=_StreamLike(ptr=-1)), "bulkred.sum: 'stream' handle must be in [0, 2**64), got -1"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), stream=np.int64(5)), None),  # a handle: taken (as an int)
        (lambda: bulkred.var_mean(np.zeros(4, np.float32), out=(a := np.zeros((), np.float32), a.view())), "'out' has two arrays that share memory"),
        (lambda: bulkred.std_mean(np.zeros(4, np.float32), out=((b := np.zeros(2, np.float32))[0:1].reshape(()), b[1:].reshape(()))), None),
        (lambda: api.plan("sum", (4,), "float32", out_dtype=42), "bulkred.sum: 'out_dtype' must be a dtype name or a tuple of them"),
        (lambda: bulkred.var_mean(np.zeros(4, np.float32), out=(a := np.zeros((), np.float32), a)), "'out' names one array twice"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), out=np.zeros((), np.float32).view()), None),  # writable: fine
        (lambda: bulkred.sum(np.zeros(4, np.float32), out=_read_only()), "bulkred.sum: 'out' is read-only"),
        (lambda: bulkred.sum(np.zeros((4, 3), np.float32), axis=0, out=np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (3,), (0,))), "is a broadcast view"),
        (lambda: bulkred.sum(np.ma.masked_array(np.ones(4, np.float32), mask=[0, 1, 0, 0])), "is a numpy masked array"),
        (lambda: bulkred.sum(np.zeros(4, np.float32), explain="no"), "bulkred.sum: 'explain' must be a bool, got 'no'"),
        (lambda: bulkred.sum(np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (2**40,), (0,))), "is a broadcast numpy view"),
        (lambda: bulkred.vector_norm(np.zeros(4, np.float32), ord=2**1024), "'ord' must be a finite number"),
        (lambda: bulkred.var(np.zeros(4, np.float32), correction=2**70), "'correction' must be within (-2**62, 2**62)"),
    ],
)
def test_bad_calls_are_refused_before_any_gpu_work(no_launch, call, message):
    if message is None:
        with pytest.raises(pytest.fail.Exception, match="compiled|GPU"):  # the checks pass: it would launch
            call()
        return
    with pytest.raises(api.ReductionError) as e:
        call()
    assert message in str(e.value) and "\n" not in str(e.value)


def _StreamLike(**attrs):
    """An object with a stream's attribute names whose handle is not one."""
    return type("StreamLike", (), attrs)()


def _read_only() -> np.ndarray:
    a = np.zeros((), np.float32)
    a.flags.writeable = False
    return a


def test_a_byte_swapped_numpy_array_is_read_as_numbers(monkeypatch):
    """'>f4' is converted to native order before the copy to the GPU (its bytes, sent
    as they are, would read as 4.6e-41, ...)."""
    seen = []

    class K:
        signature = None
        _fast = None

        def __call__(self, x, out, stream=None):
            seen.append(x)
            return x, np.asarray(x.astype(np.float64).sum(), np.float32).reshape(1)

    from bulkred_dialect.backend_ptx import device

    monkeypatch.setattr(api, "kernel_of", lambda *a: K())
    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    got = bulkred.sum(np.arange(1, 6, dtype=">f4"))
    assert float(got) == 15.0 and seen[0].dtype.isnative and seen[0].tolist() == [1, 2, 3, 4, 5]


def test_a_refusal_of_the_dialect_is_the_same_without_a_gpu(monkeypatch):
    """A request the dialect refuses (a float sum into int32, an int8 out=) is refused in
    its words without a GPU too, not as NoGpuError; a call it takes still raises
    NoGpuError."""
    from bulkred_dialect.backend_ptx import device
    from bulkred_dialect.backend_ptx.errors import NoGpuError

    def no_gpu():
        raise NoGpuError("none here")

    monkeypatch.setattr(device, "current_arch", no_gpu)
    x = np.ones(4, np.float32)
    with pytest.raises(api.ReductionError, match=r"^bulkred.sum: a sum of float32 into int32 is not supported yet: .*; pass dtype='float32'$"):
        bulkred.sum(x, dtype="int32")
    with pytest.raises(api.ReductionError, match=r"^bulkred.prod: a prod of float32 into int8 is not supported yet"):
        bulkred.prod(x, out=np.zeros((), np.int8))
    with pytest.raises(NoGpuError):
        bulkred.sum(x, dtype="float64")


def test_the_autograd_route_checks_as_any_call():
    """A torch tensor that requires grad goes through the row's torch operator: its
    arguments are checked first, in the API's words (the operator's schema would take
    axis=(1.5,) as 1, refuse correction='1' in its own words, and drop unknown keywords)."""
    torch = pytest.importorskip("torch")
    x = torch.ones(2, 3, requires_grad=True)
    for call, message in [
        (lambda: bulkred.sum(x, axis=(1.5,)), "bulkred.sum: 'axis' must be an int, a tuple of ints or None, got (1.5,)"),
        (lambda: bulkred.sum(x, axis="0"), "bulkred.sum: 'axis' must be an int, a tuple of ints or None, got '0'"),
        (lambda: bulkred.var(x, correction="1"), "bulkred.var: 'correction' must be a number (an int or a float), got '1'"),
        (lambda: bulkred.vector_norm(x, ord=2**1024), "bulkred.vector_norm: 'ord' must be a finite number"),
        (lambda: bulkred.sum(x, bogus=1), "bulkred.sum: 'bogus' is not taken by sum (its options: dtype)"),
        (lambda: bulkred.sum(x, explain=0), "bulkred.sum: 'explain' must be a bool, got 0"),
        (lambda: bulkred.sum(x, dtype=torch.complex64), "bulkred.sum: 'dtype' complex64 of a float32 x is not supported yet"),
        (lambda: bulkred.sum(x.detach().to_sparse()), "bulkred.sum: 'x' is a torch tensor of layout torch.sparse_coo (not dense)"),
    ]:
        with pytest.raises(api.ReductionError) as e:
            call()
        assert str(e.value).startswith(message), (str(e.value), message)


def test_compile_reduction_keys_true_apart_from_1():
    """True == 1 in a tuple key: compile_reduction(..., True) must not find axis 1's module."""
    with pytest.raises(api.ReductionError, match="got True"):
        api.compile_reduction("sum", (8, 4), "float32", True, "sm_90a")


# endregion
