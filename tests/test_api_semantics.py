"""The reduction API's semantics without a GPU (bulkred_dialect/api.py, issue 16 §2): the
plan of each call (result shape and dtype as the array API standard says, the one-line
refusals before anything is built), reductions over empty axes (filled, no kernel), and
the calls themselves on a simulated kernel that computes with numpy: the result a view
of the kernel's destination in the array API's shape, ``out=``, the recorded short path,
the layout checks, and torch's custom operators under ``torch.compile(fullgraph=True)``.
The torch cases need torch (a CPU wheel is enough) and skip without it; the real runs
are tests/gpu/test_api_semantics_gpu.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api

# region Plans: shapes and dtypes


@pytest.mark.parametrize(
    ("kind", "shape", "src", "kw", "result_shape", "kernel_shape", "axes", "dst"),
    [
        ("sum", (5, 6), "float32", {}, (), (1,), None, "float32"),
        ("sum", (5, 6), "float32", {"keepdims": True}, (1, 1), (1,), None, "float32"),
        ("sum", (4, 5, 6), "float32", {"axis": (0, 2)}, (5,), (5,), (0, 2), "float32"),
        ("sum", (4, 5, 6), "float32", {"axis": (0, 2), "keepdims": True}, (1, 5, 1), (5,), (0, 2), "float32"),
        ("sum", (4, 5, 6), "float32", {"axis": (-1, -3)}, (5,), (5,), (0, 2), "float32"),
        ("sum", (4, 5, 6), "float32", {"axis": [0, 1, 2]}, (), (1,), None, "float32"),
        ("sum", (4, 5, 6), "float32", {"axis": np.int64(1)}, (4, 6), (4, 6), (1,), "float32"),
        ("max", (4, 5), "float32", {"axis": -1}, (4,), (4,), (1,), "float32"),
        ("sum", (), "float32", {}, (), (1,), None, "float32"),  # a 0-d input: the kernel sees (1,)
        ("sum", (8,), "int32", {}, (), (1,), None, "int64"),  # integer sums in 64 bits, as numpy and torch
        ("prod", (8,), "int32", {}, (), (1,), None, "int64"),
        ("sum", (8,), "uint32", {}, (), (1,), None, "uint64"),
        ("sum", (8,), "bool", {}, (), (1,), None, "int64"),
        ("max", (8,), "int32", {}, (), (1,), None, "int32"),
        ("xor", (8,), "int32", {}, (), (1,), None, "int32"),
        ("any", (8,), "float32", {}, (), (1,), None, "bool"),
        ("all", (8,), "bool", {"keepdims": True}, (1,), (1,), None, "bool"),
        ("sum", (8,), "float16", {}, (), (1,), None, "float16"),  # floats keep their dtype ...
        ("sum", (8,), "float16", {"dtype": "float32"}, (), (1,), None, "float32"),  # ... unless asked
        ("sum", (8,), "int32", {"dtype": np.int32}, (), (1,), None, "int32"),
        ("sum", (8,), "int32", {"out_dtype": "int32"}, (), (1,), None, "int32"),  # out= decides, as in torch
    ],
)
def test_plan_shapes_and_dtypes(kind, shape, src, kw, result_shape, kernel_shape, axes, dst):
    p = api.plan(kind, shape, src, **kw)
    assert (p.result_shape, p.kernel_shape, p.axes, p.dst) == (result_shape, kernel_shape, axes, dst)
    assert p.launches and p.src == src and p.kind == kind


def test_plan_nan_option_only_for_float_min_max():
    assert api.plan("max", (8,), "float32", ignore_nan=True).ignore_nan
    assert not api.plan("max", (8,), "int32", ignore_nan=True).ignore_nan  # no NaN in integers
    with pytest.raises(api.ReductionError, match=r"^bulkred.sum: 'ignore_nan' is not taken by sum \(its options: dtype\)$"):
        api.plan("sum", (8,), "float32", ignore_nan=True)


@pytest.mark.parametrize(
    ("kind", "shape", "src", "kw", "message"),
    [
        ("sum", (4, 5), "float32", {"axis": 2}, "bulkred.sum: axis 2 is out of range for a 2-D array"),
        ("sum", (4, 5), "float32", {"axis": -3}, "bulkred.sum: axis -3 is out of range for a 2-D array"),
        ("sum", (), "float32", {"axis": 0}, "bulkred.sum: axis 0 is out of range for a 0-D array"),
        ("sum", (4, 5), "float32", {"axis": (0, -2)}, "bulkred.sum: axis (0, -2) names an axis twice (as (0, 0) for a 2-D array)"),
        ("sum", (4, 5), "float32", {"axis": True}, "bulkred.sum: 'axis' must be an int, a tuple of ints or None, got True"),
        ("sum", (4, 5), "float32", {"axis": (0, True)}, "bulkred.sum: 'axis' must be an int, a tuple of ints or None, got (0, True)"),
        ("sum", (4, 5), "float32", {"axis": 1.0}, "bulkred.sum: 'axis' must be an int, a tuple of ints or None, got 1.0"),
        ("sum", (4, 5), "float32", {"axis": ()}, "bulkred.sum: axis=() reduces nothing in numpy and everything in torch"),
        ("sum", (4, 5), "float32", {"keepdims": "yes"}, "bulkred.sum: 'keepdims' must be a bool, got 'yes'"),
        ("max", (4, 5), "float32", {"ignore_nan": None}, "bulkred.max: 'ignore_nan' must be a bool, got None"),
        ("sum", (4, 5), "float32", {"dtype": "float8"}, "bulkred.sum: unknown dtype 'float8' (bulkred's element types: int8, "),
        ("sum", (4, 5), "float32", {"dtype": 42}, "bulkred.sum: 'dtype' must be a dtype (a name, a numpy or torch dtype), got 42"),
        ("sum", (4, 5), "float32", {"dtype": "complex64"}, "bulkred.sum: 'dtype' complex64 of a float32 x is not supported yet"),
        ("amax", (4, 5), "complex64", {}, "bulkred.amax: a complex64 x is not supported (torch's amax has no complex"),
        ("sum", (4, 5), "complex256", {}, "bulkred.sum: dtype complex256 is not supported (bulkred's element types: int8, "),
        ("max", (4, 0), "float32", {"axis": 1}, "bulkred.max: axis 1 of an array of shape (4, 0) has no elements, and max has no identity"),
        ("min", (0,), "int32", {}, "bulkred.min: the array of an array of shape (0,) has no elements, and min has no identity"),
        ("max", (4, 5), "float32", {"out_dtype": "float16"}, "bulkred.max: 'out' has dtype float16, expected float32 (the result's dtype)"),
        ("any", (4, 5), "bool", {"out_dtype": "int32"}, "bulkred.any: 'out' has dtype int32, expected bool (the result's dtype)"),
        ("sum", (4, 5), "float32", {"dtype": "float32", "out_dtype": "float16"}, "bulkred.sum: 'out' has dtype float16, but dtype=float32 was asked for"),
        ("nope", (4, 5), "float32", {}, "unknown reduction 'nope' (valid: sum, prod, max, min, amax, amin, any, all, and_, or_, xor, count_nonzero, mean, "),
    ],
)
def test_plan_refusals_are_one_line(kind, shape, src, kw, message):
    with pytest.raises(api.ReductionError) as e:
        api.plan(kind, shape, src, **kw)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, bulkred.ReductionError) and isinstance(e.value, ValueError)


def test_the_dialects_refusal_is_one_line():
    """What the function's dtype rule refuses (xor of a float) is refused by the plan, and
    what the dialect refuses (a float product into int8 here) while the module is built,
    before anything is compiled or launched, each in one line; the same with or without a
    GPU (nothing is touched before)."""
    with pytest.raises(api.ReductionError, match=r"^bulkred.xor: expected an integer or bool input, got float32") as e:
        bulkred.xor(np.zeros(8, np.float32))
    assert "\n" not in str(e.value)
    with pytest.raises(api.ReductionError, match=r"^bulkred.prod: ") as e:
        bulkred.prod(np.zeros(8, np.float32), dtype="int8", explain=True)
    assert "\n" not in str(e.value)


def test_check_layout():
    api.check_layout("sum", "x", (4, 5), (5, 1))
    api.check_layout("sum", "x", (4, 1, 5), (5, 99, 1))  # an extent-1 axis: any stride
    api.check_layout("sum", "x", (1,), (-1,))
    with pytest.raises(api.ReductionError, match=r"^bulkred.sum: 'out' is a strided view \(strides \(1, 4\) in elements for shape \(4, 5\)\), which is not supported yet for 'out'; pass a contiguous array"):
        api.check_layout("sum", "out", (4, 5), (1, 4))
    with pytest.raises(api.ReductionError, match=r"^bulkred.max: 'out' has negative strides \(-1,\) \(in elements\) for shape \(5,\) \(a flipped view\)"):
        api.check_layout("max", "out", (5,), (-1,))
    # x: a view with strides >= 0 is read in place (its strides; extent-1 axes as 0), dense gives None
    assert api.check_layout("sum", "x", (4, 5), (1, 4), views=True) == (1, 4)
    assert api.check_layout("sum", "x", (4, 1, 5), (10, -3, 2), views=True) == (10, 0, 2)
    assert api.check_layout("sum", "x", (4, 5), (0, 1), views=True) == (0, 1)  # broadcast (expand)
    assert api.check_layout("sum", "x", (4, 5), (5, 1), views=True) is None
    with pytest.raises(api.ReductionError, match=r"^bulkred.sum: 'x' has negative strides \(-5, 1\) \(in elements\) for shape \(4, 5\) \(a flipped view\), which are not supported"):
        api.check_layout("sum", "x", (4, 5), (-5, 1), views=True)


# endregion

# region Empty reductions: no kernel


@pytest.mark.parametrize(
    ("fn", "x", "kw", "want"),
    [
        ("sum", np.zeros((0, 3), np.float32), {"axis": 0}, np.zeros(3, np.float32)),
        ("sum", np.zeros((0, 3), np.float32), {}, np.zeros((), np.float32)),
        ("sum", np.zeros((0, 3), np.int32), {"keepdims": True}, np.zeros((1, 1), np.int64)),
        ("prod", np.zeros((3, 0), np.float32), {"axis": 1}, np.ones(3, np.float32)),
        ("prod", np.zeros((3, 0), np.int32), {"axis": -1, "keepdims": True}, np.ones((3, 1), np.int64)),
        ("and_", np.zeros((2, 0), np.int32), {"axis": 1}, np.full(2, -1, np.int32)),
        ("xor", np.zeros((2, 0), np.int32), {"axis": 1}, np.zeros(2, np.int32)),
        ("max", np.zeros((0, 4), np.float32), {"axis": 1}, np.zeros(0, np.float32)),  # nothing to compute
    ],
)
def test_empty_reductions_fill_without_a_kernel(monkeypatch, fn, x, kw, want):
    monkeypatch.setattr(api, "kernel_of", lambda *a: pytest.fail("compiled"))
    # whether the dialect takes the kind, dtype and result type (checked for empty
    # reductions too: test_api.py's xor case) is not what this test is about
    monkeypatch.setattr(api, "_check_module", lambda p: None)
    got = getattr(bulkred, fn)(x, **kw)
    assert isinstance(got, np.ndarray) and got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want)
    out = np.full(want.shape, 7, want.dtype)
    assert getattr(bulkred, fn)(x, out=out, **kw) is out and np.array_equal(out, want)
    assert getattr(bulkred, fn)(x, explain=True, **kw).startswith("no kernel: the result has shape")


# endregion

# region Calls on a simulated kernel


_NP = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


class FakeKernel:
    """What the compiled reduction does, on the host: ``out`` (of the kernel's
    destination shape) receives the reduction of ``x`` (of the kernel's source shape),
    in place, as the GPU writes it; dense arrays only, as the runtime's checks."""

    def __init__(self, p):
        self.p, self.calls = p, 0

    def __call__(self, x, out, stream=None):
        from bulkred_dialect.errors import SignatureError

        torch = __import__("sys").modules.get("torch")
        is_torch = torch is not None and isinstance(x, torch.Tensor)
        for a in (x, out):
            view = a is x and self.p.strides is not None
            if is_torch and view and any(d > 1 and s != w for d, s, w in zip(a.shape, a.stride(), self.p.strides)):
                raise SignatureError(f"expected a view with strides {self.p.strides}")
            if is_torch and not view and not a.is_contiguous():
                raise SignatureError("expected a contiguous row-major array")
        assert tuple(x.shape) == self.p.shape and tuple(out.shape) == self.p.kernel_shape, (x.shape, out.shape, self.p)
        self.calls += 1
        a = x.numpy() if is_torch else np.asarray(x)
        r = _NP[self.p.kind](a.astype(self.p.dst), axis=self.p.axes).reshape(self.p.kernel_shape)
        if is_torch:
            out.copy_(torch.from_numpy(np.ascontiguousarray(r)))
            return x, out
        got = np.array(r, dtype=self.p.dst)
        return x, got


@pytest.fixture
def fake(monkeypatch):
    """api.kernel_of gives a :class:`FakeKernel`; the GPU is an sm_90a."""

    from bulkred_dialect.backend_ptx import device

    kernels = []

    def compile_(p, target):
        assert target == "sm_90a"
        k = FakeKernel(p)
        kernels.append(k)
        return k

    from bulkred_dialect import reductions

    monkeypatch.setattr(api, "kernel_of", compile_)
    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    reductions.forget()
    return kernels


def test_numpy_calls_on_a_simulated_kernel(fake):
    rng = np.random.default_rng(16)
    a = rng.standard_normal((4, 5, 6)).astype(np.float32)
    y = bulkred.sum(a, axis=(0, 2), keepdims=True)
    assert y.shape == (1, 5, 1) and y.dtype == np.float32
    assert np.allclose(y, a.sum(axis=(0, 2), keepdims=True), rtol=1e-5)
    assert fake[-1].p.axes == (0, 2) and fake[-1].p.kernel_shape == (5,)
    whole = bulkred.max(a, ignore_nan=True)
    assert whole.shape == () and whole == a.max()
    ai = rng.integers(-9, 9, (3, 7), dtype=np.int32)
    s = bulkred.sum(ai, axis=-1)
    assert s.dtype == np.int64 and np.array_equal(s, ai.sum(axis=-1))
    out = np.zeros((), np.int32)
    assert bulkred.sum(ai, out=out) is out and out == ai.sum()
    assert bulkred.sum(np.full((), 3.5, np.float32)) == 3.5  # a 0-d input


torch_reason = "torch is not installed (pip install torch: a CPU wheel is enough for these tests)"


def _torch():
    return pytest.importorskip("torch", reason=torch_reason)


def test_torch_calls_on_a_simulated_kernel(fake):
    torch = _torch()
    x = torch.arange(120, dtype=torch.float32).reshape(4, 5, 6)
    y = bulkred.sum(x)
    assert isinstance(y, torch.Tensor) and y.shape == () and float(y) == float(x.sum())
    assert y._base is not None and y._base.shape == (1,)  # a view of the kernel's destination, no copy
    k = fake[-1]
    assert bulkred.sum(x) is not y and k.calls == 2 and len(fake) == 1  # recorded: no new plan, same kernel
    z = bulkred.sum(x, axis=(0, 2), keepdims=True)
    assert z.shape == (1, 5, 1) and torch.equal(z, x.sum(dim=(0, 2), keepdim=True))
    xi = torch.arange(24, dtype=torch.int32).reshape(4, 6)
    s = bulkred.sum(xi, axis=1)
    assert s.dtype == torch.int64 and torch.equal(s, xi.sum(dim=1))
    s16 = bulkred.sum(x.half(), dtype=torch.float32)
    assert s16.dtype == torch.float32 and s16.shape == ()
    out = torch.empty((), dtype=torch.float32)
    assert bulkred.max(x, out=out, ignore_nan=True) is out and float(out) == 119.0
    assert bulkred.max(x, out=out, ignore_nan=True) is out  # the recorded path with out=
    with pytest.raises(api.ReductionError, match=r"'out' has shape \(1,\), expected \(\)"):
        bulkred.max(x, out=torch.empty(1), ignore_nan=True)  # not taken by the recorded path either
    # strided views: a module built for the view's strides reads it in place
    assert torch.equal(bulkred.sum(xi.t(), axis=0), xi.t().sum(dim=0)) and fake[-1].p.strides == (1, 6)
    assert torch.equal(bulkred.sum(x[:, :, ::2], axis=1), x[:, :, ::2].sum(dim=1)) and fake[-1].p.strides == (30, 6, 2)
    with pytest.raises(api.ReductionError, match=r"'out' is a strided view"):
        bulkred.sum(xi, axis=1, out=torch.zeros(4, 2, dtype=torch.int64)[:, 0])
    sliced = x[1:]  # a storage offset, dense: taken as it is
    assert float(bulkred.sum(sliced)) == float(sliced.sum())
    assert float(bulkred.sum(torch.tensor(2.5))) == 2.5  # a 0-d input


def test_the_recorded_short_path_keeps_the_checks(fake):
    """A call like a recorded one takes the short path; one that differs in any checked
    way (a strided view of the same shape, another option) is checked again."""
    torch = _torch()
    x = torch.ones(6, 4)
    bulkred.sum(x, axis=0)
    assert len([k for k in api.CALLS if k[0] == "sum"]) == 1
    t = torch.arange(24.0).reshape(4, 6).t()  # same shape and dtype: the recorded kernel refuses it
    assert torch.equal(bulkred.sum(t, axis=0), t.sum(dim=0)) and fake[-1].p.strides == (1, 6)  # a view's module
    with pytest.raises(api.ReductionError, match="'axis' must be an int, a tuple of ints or None, got True"):
        bulkred.sum(x, axis=True)  # True == 0 would find a recorded axis=0
    bulkred.sum(x, axis=1)
    with pytest.raises(api.ReductionError, match="names an axis twice"):
        bulkred.sum(x, axis=(1, -1))
    with pytest.raises(api.ReductionError, match="'axis' must be an int, a tuple of ints or None, got \\(True,\\)"):
        bulkred.sum(x, axis=(True,))


def test_torch_compile_fullgraph_runs_the_custom_operator(fake):
    """torch.compile(fullgraph=True) of a function that calls bulkred.sum and bulkred.max
    traces them as torch.ops.bulkred.sum / max_out (fake implementations: shape and
    dtype) and runs them: one graph, no break."""
    torch = _torch()
    from bulkred_dialect import reductions

    assert reductions._compiling() is False  # eager: registers the operators once torch is loaded
    assert reductions._compiling is torch.compiler.is_compiling

    def f(x, out):
        s = bulkred.sum(x, axis=(0, 2), keepdims=True)
        bulkred.max(x, axis=-1, ignore_nan=True, out=out)
        return s * 2, bulkred.sum(x.int())

    x = torch.arange(120, dtype=torch.float32).reshape(4, 5, 6)
    out = torch.empty(4, 5)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    s, si = compiled(x, out)
    assert s.shape == (1, 5, 1) and torch.equal(s, 2 * x.sum(dim=(0, 2), keepdim=True))
    assert si.dtype == torch.int64 and si.shape == () and int(si) == int(x.sum())
    assert torch.equal(out, x.amax(dim=-1))
    with pytest.raises(Exception, match="axis 3 is out of range for a 3-D array"):  # at trace time, from the fake
        torch.compile(lambda x: bulkred.sum(x, axis=3), fullgraph=True, backend="aot_eager")(x)


def test_torch_custom_operators_pass_opcheck(fake):
    torch = _torch()
    from bulkred_dialect import torch_ops  # noqa: F401 - registers the operators

    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    torch.library.opcheck(torch.ops.bulkred.sum.default, (x, [1], True, None))
    torch.library.opcheck(torch.ops.bulkred.sum.default, (x.int(), None, False, None))
    torch.library.opcheck(torch.ops.bulkred.max_out.default, (x, [0], False, True, torch.empty(6)))


# endregion

# region The docs page and the example

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _doc_blocks() -> list[str]:
    import re

    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "from_torch.md").read_text(), flags=re.S)


def test_from_torch_doc_cpu_blocks_run(capsys):
    """docs/from_torch.md's blocks that need no GPU run as written and print what the page
    says; its explain table's lines are lines of the real table."""
    import re

    text = (ROOT / "docs" / "from_torch.md").read_text()
    cpu = [b for b in _doc_blocks() if not b.startswith("# on a GPU")]
    assert len(cpu) == 2 and len(_doc_blocks()) == 4
    scope: dict = {}
    exec(compile(cpu[0], "docs/from_torch.md", "exec"), scope)
    (said,) = re.findall(r"prints `(chosen: \w+)`", text)
    assert capsys.readouterr().out.strip() == said
    (shown,) = re.findall(r"```text\n(.*?)```", text, flags=re.S)
    real = scope["table"].splitlines()
    assert shown.splitlines() == real[-len(shown.splitlines()):]
    exec(compile(cpu[1], "docs/from_torch.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5 and all(line.startswith("bulkred.") for line in lines)
    assert lines[-1] == "bulkred.xor: expected an integer or bool input, got float32 (a bitwise reduction)"
    assert "docs/from_torch.md" in (ROOT / "README.md").read_text()


def test_array_api_example_runs_without_a_gpu():
    """``python examples/array_api.py``, run in this process (``runpy``, as ``__main__``,
    its output captured): a Python start of its own and the imports of bulkred, xDSL
    and the passes cost 0.45 CPU-s, the example 0.01."""
    import contextlib
    import io
    import runpy

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(ROOT / "examples" / "array_api.py"), run_name="__main__")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("x.sum(dim=(0, 2), keepdim=True)") and "-> shape (1, 50, 1), float32; kernel dst (50,)" in lines[0]
    assert "-> shape (), int64" in lines[3]
    assert sum(line.startswith("refused: bulkred.") for line in lines) == 4
    (empty,) = [line for line in lines if line.startswith("sum over an empty axis: ")]
    assert empty.startswith("sum over an empty axis: [0. 0. 0.] prod: ")
    assert empty.endswith(("prod: [1. 1. 1.]", "not supported yet by the dialect (it has and, max, min, or, sum, xor; issue 16)"))


# endregion


class _AlignedKernel(FakeKernel):
    """A :class:`FakeKernel` whose kernel reads ``x`` with 8-byte vector loads
    (``bulkred.align``) unless its plan forces grid_gather (scalar loads): like the
    runtime, a vector kernel refuses a misaligned ``x``."""

    def __init__(self, p):
        from types import SimpleNamespace

        super().__init__(p)
        align = (1, 1) if p.variant == "grid_gather" else (8, 1)
        self.signature = SimpleNamespace(align=align if align != (1, 1) else (), alignment=lambda i: align[i])

    def __call__(self, x, out, stream=None):
        from bulkred_dialect.backend_ptx.errors import MisalignedError

        if self.p.variant != "grid_gather" and x.data_ptr() % 8:
            raise MisalignedError("kernel 'bulkred_sum' param 'x': its address is not aligned")
        return super().__call__(x, out, stream)


def test_misaligned_torch_view_is_read_in_place_by_grid_gather(fake, monkeypatch):
    """x = base[3:12] of a float16 (13, 13, 15, 11) tensor starts 12870 bytes into its
    storage (6 past an 8-byte boundary), off the vector loads' alignment: the call takes
    grid_gather's kernel (scalar loads) and reads it in place, on the first call and
    after an aligned call of the same shape was recorded; that record keeps the vector
    kernel for aligned calls, and a misaligned call is never recorded."""

    torch = _torch()

    def compile_(p, target):
        fake.append(k := _AlignedKernel(p))
        return k

    monkeypatch.setattr(api, "kernel_of", compile_)
    base = torch.full((13, 13, 15, 11, 1), 0.25, dtype=torch.float16)
    x = base[3:12]
    assert x.is_contiguous() and (x.data_ptr() - base.data_ptr()) == 12870 and x.data_ptr() % 8 == 6
    want = 9 * 13 * 15 * 11 / 4
    assert float(bulkred.sum(x)) == pytest.approx(want, rel=1e-2)
    assert [k.p.variant for k in fake] == [None, "grid_gather"] and fake[0].calls == 0 and fake[1].calls == 1
    y = bulkred.sum(x.clone())
    k = fake[0]  # aligned: the vector kernel the first call compiled and could not use (api.KERNELS), recorded
    assert len(fake) == 2 and k.calls == 1
    assert k.p.variant is None and float(y) == pytest.approx(want, rel=1e-2)
    assert float(bulkred.sum(x)) == pytest.approx(want, rel=1e-2)  # through the recorded call, then gather
    assert fake[-1].p.variant == "grid_gather" and fake[-1].calls == 1
    got = bulkred.sum(x, out=torch.empty((), dtype=torch.float16))
    assert float(got) == pytest.approx(want, rel=1e-2) and fake[-1].p.variant == "grid_gather"
    assert float(bulkred.sum(x.clone())) == float(y) and k.calls == 2


# region The call's key and launcher (a stand-in torch: this machine needs no torch)


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


_FLOAT32, _INT64 = _Dtype("float32"), _Dtype("int64")  # kept alive: ops/dtypes.py keys torch dtypes by id


class _Tensor:
    """What the API reads of a CUDA torch tensor: shape, dtype, layout, device, address."""

    __module__ = "torch"
    layout = "torch.strided"
    is_cuda = True

    def __init__(self, shape, dtype=_FLOAT32, ptr=0x10000, requires_grad=False):
        self.shape, self.dtype, self.ptr, self.requires_grad = tuple(shape), dtype, ptr, requires_grad
        self.device = "cuda:0"

    def get_device(self):
        return 0

    def is_contiguous(self):
        return True

    def stride(self):
        return tuple(int(np.prod(self.shape[i + 1:])) for i in range(len(self.shape)))

    def data_ptr(self):
        return self.ptr

    def view(self, shape):
        return _Tensor(shape, self.dtype, self.ptr)


@pytest.fixture
def stand_in_torch(monkeypatch):
    """A ``torch`` module of :class:`_Tensor` s, the GPU an sm_90a, and kernels whose
    ``bind`` gives a launcher that records its calls (None for an address that is not
    a multiple of 16, as a vector kernel's launcher does)."""
    import sys
    from types import ModuleType, SimpleNamespace

    from bulkred_dialect import reductions
    from bulkred_dialect.backend_ptx import device

    torch = ModuleType("torch")
    torch.float32, torch.int64 = _FLOAT32, _INT64
    torch.empty = lambda shape, dtype, device: _Tensor(shape, dtype, 0x90000)
    routed = []
    monkeypatch.setattr(reductions, "_torch_ops", lambda: SimpleNamespace(  # the rows' autograd calls
        eager=lambda name, *a: lambda x: routed.append((x, a[0], a[1], *a[2])) or _Tensor(())))
    torch.ops = SimpleNamespace(bulkred=None)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(reductions, "_compiling", lambda: False)
    monkeypatch.setattr(reductions, "_grad_enabled", lambda: True)
    monkeypatch.setattr(api, "_grad_enabled", lambda: True)
    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    log = SimpleNamespace(plans=[], binds=[], launches=[], full=[], routed=routed, chains=[])
    real_plan = api.plan

    def plan(*a, **k):
        log.plans.append(a[0])
        return real_plan(*a, **k)

    class Kernel:
        def __init__(self, p):
            self.p = p

        def bind(self, args, **kw):
            log.binds.append((self.p.fn, self.p.variant, len(args), kw))
            new = kw.get("new")

            def launcher(x, out):
                if x.data_ptr() % 16:
                    return None
                log.launches.append((self.p.fn, x.ptr))
                f, chain = sys._getframe(1), []  # the frames from the public function to here
                while f is not None and not (f.f_code.co_name == "fn" and "reductions" in f.f_code.co_filename):
                    chain.append(f.f_code.co_name)
                    f = f.f_back
                log.chains.append(["fn", *reversed(chain), "launcher"])
                if new is None:
                    return out
                made = [_Tensor(s) for s in new]
                return made[0] if len(made) == 1 else kw["pack"](*made)

            return launcher

        def __call__(self, *args, stream=None):
            log.full.append((self.p.fn, self.p.variant))
            return args

    monkeypatch.setattr(api, "plan", plan)
    monkeypatch.setattr(api, "kernel_of", lambda p, target: Kernel(p))
    reductions.forget()
    yield log
    reductions.forget()


def test_a_call_seen_is_one_look_up_and_its_launcher(stand_in_torch):
    """The first call plans, binds its kernel's launcher and launches through it; a call
    with the same key (options included) runs that launcher at once: no plan, no bind.
    Values equal across types are not alike (axis=True is not axis=1, keepdims=1 is not
    True), so each is refused as on a first call."""
    log = stand_in_torch
    x = _Tensor((4, 8))
    y = bulkred.sum(x)
    assert y.shape == () and log.plans == ["sum"] and len(log.binds) == 1 and len(log.launches) == 1
    assert bulkred.sum(_Tensor((4, 8), ptr=0x20000)).shape == ()
    assert log.plans == ["sum"] and len(log.binds) == 1 and log.launches[-1] == ("sum", 0x20000)
    for _ in range(2):
        assert bulkred.vector_norm(x, ord=math.inf, axis=1).shape == (4,)
        assert bulkred.std_mean(x, correction=1, axis=0).std.shape == (8,)
    assert log.plans == ["sum", "vector_norm", "std_mean"] and len(log.binds) == 3 and len(log.launches) == 6
    pair = [b for b in log.binds if b[0] == "std_mean"][0][3]
    assert pair["new"] == ((8,), (8,)) and pair["order"] is None and pair["pack"] is not None
    bulkred.max_with_indices(x, axis=1)
    assert log.binds[-1][3]["order"] == (2, 1)  # values (the kernel's aux, its third param) first
    out = _Tensor(())
    assert bulkred.sum(x, out=out) is out and bulkred.sum(x, out=out) is out and log.plans.count("sum") == 2
    bulkred.sum(x, axis=1)
    with pytest.raises(api.ReductionError, match="'axis' must be an int, a tuple of ints or None, got True"):
        bulkred.sum(x, axis=True)
    with pytest.raises(api.ReductionError, match="'keepdims' must be a bool, got 1"):
        bulkred.sum(x, keepdims=1)
    bulkred.vector_norm(x, ord=2)
    with pytest.raises(api.ReductionError, match="'ord' must be a number"):
        bulkred.vector_norm(x, ord=True)
    before = len(log.plans)
    assert bulkred.sum(x, axis=[0]).shape == bulkred.sum(x, axis=[0]).shape == (8,)
    assert len(log.plans) == before + 2  # a list is not hashable: no key, every step each time


def test_the_way_from_the_public_function_to_the_launch(stand_in_torch):
    """Read as a newcomer would: a first call is bulkred.sum -> api.call -> the launcher
    (the plan and the kernel are side calls); a call with a key seen is bulkred.sum ->
    the launcher, with options too. The launcher's launch (cuda.core.launch) is the next
    and last call."""
    log = stand_in_torch
    x = _Tensor((4, 8))
    bulkred.vector_norm(x, ord=math.inf)
    bulkred.vector_norm(x, ord=math.inf)
    assert log.chains == [["fn", "call", "launcher"], ["fn", "launcher"]]


def test_a_misaligned_call_takes_the_gather_kernel_and_keeps_the_launcher(stand_in_torch):
    """A launcher that refuses an address (off its vector loads' alignment) sends the call
    to the grid_gather kernel (every check of the launch layer); the key keeps the
    vector kernel's launcher for the aligned calls after it."""
    log = stand_in_torch
    assert bulkred.sum(_Tensor((64,), ptr=0x10008)) is not None
    assert log.full == [("sum", "grid_gather")] and log.launches == []
    bulkred.sum(_Tensor((64,), ptr=0x10010))
    assert log.launches == [("sum", 0x10010)] and len(log.binds) == 1 and log.plans == ["sum"]
    bulkred.sum(_Tensor((64,), ptr=0x10008))
    assert log.full == [("sum", "grid_gather")] * 2 and log.plans == ["sum"]


def test_the_autograd_route_is_checked_once_per_key(stand_in_torch, monkeypatch):
    """A tensor that requires grad (grad enabled) goes through the row's torch operator:
    checked and planned on its first call, then the operator at once."""
    log = stand_in_torch
    checks = []
    real = api.check_call
    monkeypatch.setattr(api, "check_call", lambda *a: checks.append(a[0].name) or real(*a))
    x = _Tensor((4, 8), requires_grad=True)
    for _ in range(3):
        bulkred.vector_norm(x, ord=3.0, axis=1)
    assert checks == ["vector_norm"] and len(log.routed) == 3 and not log.launches
    assert log.routed[0][1:] == ([1], False, 3.0, None)  # x, the axes, keepdims, ord, dtype


# endregion
