"""The reduction API's semantics on the GPU against torch (issue 16 §2): result shapes
(0-d for a whole reduction, keepdims), dtypes (integer sums in int64, dtype=), any set
of axes, NaN (propagated by default, dropped with ignore_nan), empty axes, out=, the
refusals before any launch (strided views, a wrong out=), cupy, and torch integration:
torch.compile(fullgraph=True) through the custom operators and CUDA graph capture of
eager calls. A case the dialect does not take yet ("not supported yet") skips with the
dialect's message; tests/test_api_semantics.py checks the same on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

import bulkred_dialect as bulkred
from gpu import cuda_torch

pytestmark = pytest.mark.gpu


_torch = cuda_torch  # torch with a CUDA device, else the test skips (tests/gpu/__init__.py)


def _run(call):
    """``call()``, skipping where the dialect says it does not take the case yet."""
    try:
        return call()
    except bulkred.ReductionError as e:
        if "not supported yet" in str(e):
            pytest.skip(str(e))
        raise


def _close(got, want, torch, rtol=1e-5):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if want.dtype.is_floating_point:
        torch.testing.assert_close(got.float(), want.float(), rtol=rtol, atol=rtol * 16, equal_nan=True)
    else:
        assert torch.equal(got, want)


@pytest.mark.parametrize(
    ("shape", "axis", "keepdims"),
    [
        ((1000,), None, False),
        ((33, 70), None, True),
        ((33, 70), 0, False),
        ((33, 70), -1, True),
        ((8, 50, 40), 1, False),  # the middle axis
        ((8, 50, 40), (0, 2), False),
        ((8, 50, 40), (0, 2), True),
        ((6, 7, 8, 9), (1, 3), False),
        ((6, 7, 8, 9), (0, 1, 2, 3), False),
    ],
)
@pytest.mark.parametrize("fn", ["sum", "max", "min"])
def test_float32_against_torch(fn, shape, axis, keepdims):
    torch = _torch()
    x = torch.randn(shape, device="cuda")
    got = _run(lambda: getattr(bulkred, fn)(x, axis=axis, keepdims=keepdims))
    dim = tuple(range(len(shape))) if axis is None else axis
    want = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}[fn](x, dim=dim, keepdim=keepdims)
    _close(got, want, torch)


def test_integer_sums_are_int64_and_exact():
    torch = _torch()
    x = torch.randint(-(1 << 30), 1 << 30, (64, 1000), dtype=torch.int32, device="cuda")
    got = _run(lambda: bulkred.sum(x))
    assert got.dtype == torch.int64 and got.shape == () and int(got) == int(x.sum())  # no wrap
    rows = _run(lambda: bulkred.sum(x, axis=1))
    assert torch.equal(rows, x.sum(dim=1))
    wrapped = _run(lambda: bulkred.sum(x, dtype=torch.int32))
    assert wrapped.dtype == torch.int32 and int(wrapped) == int(x.sum(dtype=torch.int32))


def test_dtype_chooses_the_accumulator_and_the_result():
    torch = _torch()
    x = torch.randn(4096, device="cuda").half()
    got = _run(lambda: bulkred.sum(x, dtype=torch.float32))
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, x.float().sum(), rtol=1e-5, atol=1e-3)
    assert _run(lambda: bulkred.sum(x)).dtype == torch.float16


def test_nan_propagates_unless_ignored():
    torch = _torch()
    x = torch.randn(10000, device="cuda")
    x[1234] = float("nan")
    assert torch.isnan(_run(lambda: bulkred.max(x)))
    assert torch.isnan(_run(lambda: bulkred.min(x)))
    finite = x.nan_to_num(nan=-float("inf"))
    assert float(_run(lambda: bulkred.max(x, ignore_nan=True))) == float(finite.max())


def test_prod_against_torch():
    torch = _torch()
    x = 1 + torch.rand(3, 40, device="cuda") / 40
    _close(_run(lambda: bulkred.prod(x, axis=1)), x.prod(dim=1), torch, rtol=1e-4)


def test_empty_axes():
    torch = _torch()
    x = torch.empty(0, 5, device="cuda")
    assert torch.equal(bulkred.sum(x, axis=0), torch.zeros(5, device="cuda"))
    assert torch.equal(_run(lambda: bulkred.prod(x, axis=0)), torch.ones(5, device="cuda"))
    assert bulkred.sum(x).shape == () and float(bulkred.sum(x)) == 0.0
    with pytest.raises(bulkred.ReductionError, match="has no elements, and max has no identity"):
        bulkred.max(x, axis=0)


def test_out_and_the_refusals_before_any_launch():
    torch = _torch()
    x = torch.randn(30, 40, device="cuda")
    out = torch.full((40,), float("nan"), device="cuda")
    assert bulkred.sum(x, axis=0, out=out) is out
    _close(out, x.sum(dim=0), torch)
    y = torch.full((1, 40), float("nan"), device="cuda")
    assert _run(lambda: bulkred.max(x, axis=0, keepdims=True, out=y)) is y and torch.equal(y, x.amax(dim=0, keepdim=True))
    with pytest.raises(bulkred.ReductionError, match=r"'out' has shape \(41,\), expected \(40,\)"):
        bulkred.sum(x, axis=0, out=torch.empty(41, device="cuda"))
    with pytest.raises(bulkred.ReductionError, match=r"'out' has dtype float16, but dtype=float32 was asked for"):
        bulkred.sum(x, axis=0, dtype=torch.float32, out=torch.empty(40, dtype=torch.float16, device="cuda"))
    with pytest.raises(bulkred.ReductionError, match=r"'out' is a strided view .* not supported yet for 'out'; pass a contiguous array"):
        bulkred.sum(x, axis=0, out=torch.empty(80, device="cuda")[::2])  # x views: tests/gpu/test_strided_gpu.py
    with pytest.raises(bulkred.ReductionError, match=r"'axis' must be an int, a tuple of ints or None, got True"):
        bulkred.sum(x, axis=True)
    with pytest.raises(bulkred.ReductionError, match=r"names an axis twice"):
        bulkred.sum(x, axis=(1, -1))
    with pytest.raises(bulkred.ReductionError, match=r"expected an integer or bool input, got float32"):
        bulkred.xor(x)
    torch.cuda.synchronize()
    _close(bulkred.sum(x[3:]), x[3:].sum(), torch)  # a storage offset, dense: read in place
    _close(bulkred.sum(torch.tensor(2.5, device="cuda")), torch.tensor(2.5, device="cuda"), torch)  # 0-d


def test_the_result_is_the_kernels_destination_in_the_callers_shape():
    """A whole reduction's result is 0-d: a 0-d tensor the kernel writes directly (the
    call's launcher makes it in the caller's shape), with no view, from the first call
    on; the value is right."""
    torch = _torch()
    x = torch.randn(1000, device="cuda")
    want = float(x.double().sum())
    for _ in range(4):
        y = bulkred.sum(x)
        assert y.shape == () and y._base is None and abs(float(y) - want) <= 1e-4 * max(1.0, abs(want))
    rows = bulkred.sum(x.view(10, 100), axis=1)
    assert rows.shape == (10,) and rows._base is None


def test_tuple_axes_take_the_recorded_short_path_and_keep_the_checks():
    """A call over a tuple of axes like the last one (``x.sum((0, 2))``, the benchmark's
    axes02) takes the recorded short path; a tuple with a bool (``(True, 2)`` equals
    ``(1, 2)``) is still refused; a fused call over a tuple alike."""
    torch = _torch()

    x = torch.randn(8, 5, 64, device="cuda")
    want = x.double().sum((0, 2))
    for _ in range(3):
        got = bulkred.sum(x, axis=(0, 2))
        assert got.shape == (5,) and torch.allclose(got.double(), want, rtol=1e-5, atol=1e-4)
    from bulkred_dialect import api

    assert api.call_key("sum", x, (0, 2), False, {}, None) in api.CALLS  # the call's launcher, kept under its key
    with pytest.raises(bulkred.ReductionError, match=r"got \(True, 2\)"):
        bulkred.sum(x, axis=(True, 2))
    for _ in range(3):
        n = bulkred.vector_norm(x, axis=(0, 2))
        assert torch.allclose(n.double(), torch.linalg.vector_norm(x.double(), dim=(0, 2)), rtol=1e-5)
    s = bulkred.vector_norm(x)  # whole: a 0-d result, made so by the recorded path
    s = bulkred.vector_norm(x)
    assert s.shape == () and torch.allclose(s.double(), torch.linalg.vector_norm(x.double()), rtol=1e-5)


def test_cupy_shapes():
    try:
        import cupy
    except Exception as e:
        pytest.skip(f"cupy is not importable: {e}")
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = cupy.asarray(a)
    got = _run(lambda: bulkred.sum(x, axis=(0, 2), keepdims=True))
    assert isinstance(got, cupy.ndarray) and got.shape == (1, 4, 1)
    assert np.allclose(got.get(), a.sum(axis=(0, 2), keepdims=True))
    whole = _run(lambda: bulkred.max(x))
    assert whole.shape == () and float(whole.get()) == 59.0


def test_numpy_shapes():
    a = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    got = _run(lambda: bulkred.sum(a, axis=-1, keepdims=True))
    assert got.shape == (3, 4, 1) and got.dtype == np.int64 and np.array_equal(got, a.sum(axis=-1, keepdims=True))
    assert bulkred.max(a).shape == ()


def test_torch_compile_fullgraph():
    """bulkred calls inside torch.compile(fullgraph=True) (inductor) become the custom
    operators: one graph, run, equal to eager."""
    torch = _torch()

    def f(x, out):
        s = bulkred.sum(x, axis=-1, keepdims=True)
        bulkred.max(x, axis=0, out=out)
        return torch.relu(s) + 1, bulkred.sum(x)

    x = torch.randn(64, 256, device="cuda")
    out = torch.empty(256, device="cuda")
    compiled = torch.compile(f, fullgraph=True)
    for _ in range(2):
        s, whole = _run(lambda: compiled(x, out))
        _close(s, torch.relu(x.sum(dim=-1, keepdim=True)) + 1, torch)
        _close(whole, x.sum(), torch)
        assert torch.equal(out, x.amax(dim=0))


def test_cuda_graph_capture_of_eager_calls():
    """Eager bulkred calls captured in a CUDA graph (after a first call outside it, which
    compiles and loads the kernel) replay on new data."""
    torch = _torch()
    x = torch.randn(64, 256, device="cuda")
    out = torch.empty(256, device="cuda")
    bulkred.sum(x, axis=0, out=out)
    bulkred.sum(x)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        bulkred.sum(x, axis=0, out=out)
        whole = bulkred.sum(x)
    for _ in range(3):
        x.copy_(torch.randn(64, 256, device="cuda"))
        g.replay()
        torch.cuda.synchronize()
        _close(out, x.sum(dim=0), torch)
        _close(whole, x.sum(), torch)


def test_from_torch_doc_runs_on_the_gpu():
    """docs/from_torch.md's blocks, GPU ones included, run as written in one scope."""
    import re
    from pathlib import Path

    _torch()
    root = Path(__file__).resolve().parents[2]
    blocks = re.findall(r"```python\n(.*?)```", (root / "docs" / "from_torch.md").read_text(), flags=re.S)
    scope: dict = {}
    for block in blocks:
        _run(lambda block=block: exec(compile(block, "docs/from_torch.md", "exec"), scope))
    assert scope["y"].shape == (1, 1024, 1)


def test_array_api_example_runs_on_the_gpu():
    import subprocess
    import sys
    from pathlib import Path

    _torch()
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "examples/array_api.py"], cwd=root, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "bulkred.sum(x): () torch.float32" in r.stdout, r.stdout


def test_calls_with_options_through_their_kept_launchers():
    """Each call with options is kept under its key and run by its launcher from the
    second call on (issue 29): fresh data every call, the results against torch's; pairs
    in the caller's order, out= (a pair too), keepdims; a pair whose arrays overlap and a
    bool axis are still refused after the key was kept."""
    import math

    torch = _torch()
    from bulkred_dialect import api

    calls = [
        (lambda x: bulkred.vector_norm(x, ord=math.inf), lambda x: torch.linalg.vector_norm(x, math.inf)),
        (lambda x: bulkred.vector_norm(x, ord=3, axis=1), lambda x: torch.linalg.vector_norm(x, 3, dim=1)),
        (lambda x: tuple(bulkred.std_mean(x, correction=1, axis=0)), lambda x: tuple(torch.std_mean(x, 0))),
        (lambda x: tuple(bulkred.aminmax(x)), lambda x: tuple(torch.aminmax(x))),
        (lambda x: tuple(bulkred.max_with_indices(x, axis=1)), lambda x: tuple(torch.max(x, 1))),
        (lambda x: bulkred.sum(x, axis=1, keepdims=True), lambda x: torch.sum(x, 1, keepdim=True)),
        (lambda x: bulkred.var(x, axis=0, correction=0), lambda x: torch.var(x, 0, correction=0)),
    ]
    for ours, theirs in calls:
        for _ in range(3):
            x = torch.randn(33, 70, device="cuda")
            got, want = ours(x), theirs(x)
            for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                _close(g, w, torch, rtol=1e-4)
    x = torch.randn(33, 70, device="cuda")
    assert api.call_key("vector_norm", x, None, False, {"ord": math.inf}, None) in api.CALLS
    lo, hi = torch.empty(70, device="cuda"), torch.empty(70, device="cuda")
    for _ in range(3):
        x = torch.randn(33, 70, device="cuda")
        assert bulkred.aminmax(x, axis=0, out=(lo, hi)) == (lo, hi)
        _close(lo, x.amin(0), torch)
        _close(hi, x.amax(0), torch)
        y = torch.empty(33, device="cuda")
        assert bulkred.sum(x, axis=1, out=y) is y
        _close(y, x.sum(1), torch)
    both = torch.empty(140, device="cuda")
    with pytest.raises(bulkred.ReductionError, match="share memory"):
        bulkred.aminmax(x, axis=0, out=(both[:70], both[:70].view(70)))
    with pytest.raises(bulkred.ReductionError, match="'axis' must be an int, a tuple of ints or None, got True"):
        bulkred.var(x, axis=True, correction=0)
