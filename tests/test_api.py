"""The reduction API (bulkred_dialect/api.py) without a GPU: a light package import, the
array API signatures, the module it builds, compiling through the pipeline and the
caches, explain tables, and readable errors for what no variant covers.
tests/test_api_semantics.py checks the plans (shapes, dtypes, refusals) and the calls on
a simulated kernel; tests/gpu/test_device_arrays_gpu.py and
tests/gpu/test_api_semantics_gpu.py run it on torch, cupy and numpy arrays."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api
from bulkred_dialect.backend_ptx import cache, runtime

ROOT = Path(__file__).resolve().parents[1]


def test_package_import_is_light():
    code = (
        "import sys, bulkred_dialect as b\n"
        "heavy = lambda: sorted(m for m in sys.modules if m.split('.')[0] in ('xdsl', 'cuda', 'torch', 'cupy'))\n"
        "assert heavy() == [], heavy()\n"
        "f = b.sum\n"
        "assert f.__module__ == 'bulkred_dialect' and heavy() == [], heavy()\n"
        "assert vars(b)['sum'] is f and 'max' not in vars(b)  # kept: later reads skip __getattr__\n"
        "assert 'xor' in dir(b)\n"
        "try:\n    b.nope\nexcept AttributeError as e:\n    print(e)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "module 'bulkred_dialect' has no attribute 'nope'"


def test_api_functions_are_exposed():
    """Every row of the function table is a public function, and nothing else is."""
    from bulkred_dialect import reductions
    from bulkred_dialect.functions import FUNCTIONS

    for name in FUNCTIONS:
        assert getattr(bulkred, name) is reductions.PUBLIC[name]
        assert getattr(bulkred, name).__name__ == name
    assert set(reductions.PUBLIC) == set(FUNCTIONS)
    assert bulkred.ReductionError is api.ReductionError
    assert {"sum", "prod", "max", "min", "any", "all", "and_", "or_", "xor"} <= set(FUNCTIONS)


def test_signatures_follow_the_array_api():
    """x positional-only, every option keyword-only, with the standard's names."""
    import inspect

    def params(fn):
        return [(p.name, p.kind.name, p.default) for p in inspect.signature(fn).parameters.values()]

    common = [("out", "KEYWORD_ONLY", None), ("stream", "KEYWORD_ONLY", None), ("explain", "KEYWORD_ONLY", False)]
    x, axis, keep = ("x", "POSITIONAL_ONLY", inspect.Parameter.empty), ("axis", "KEYWORD_ONLY", None), ("keepdims", "KEYWORD_ONLY", False)
    for fn in (bulkred.sum, bulkred.prod):
        assert params(fn) == [x, axis, ("dtype", "KEYWORD_ONLY", None), keep, *common]
    for fn in (bulkred.max, bulkred.min):
        assert params(fn) == [x, axis, keep, ("ignore_nan", "KEYWORD_ONLY", False), *common]
    for fn in (bulkred.any, bulkred.all, bulkred.and_, bulkred.or_, bulkred.xor):
        assert params(fn) == [x, axis, keep, *common]
    with pytest.raises(TypeError):
        bulkred.sum(np.zeros(4, np.float32), 0)  # axis is keyword-only, as in the standard


def test_reduction_module_is_one_grid_reduction():
    m = api.reduction_module("max", (100,), "float32", None, "k")
    text = str(m)
    assert "func.func @k(%x: memref<100xf32, #bulkred.scope<global>>, %out: memref<1xf32, #bulkred.scope<global>>)" in text
    assert "bulkred.reduce max grid %x, %out" in text
    cols = str(api.reduction_module("sum", (6, 7), "float32", 0, "k"))
    assert "bulkred.reduce sum grid axes [0 : i64] %x, %out : memref<6x7xf32, #bulkred.scope<global>>, memref<7xf32" in cols


def test_compile_reduction_is_cached_in_memory_and_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("BULKRED_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(api, "KERNELS", {})
    cache.CACHE.clear_memory()
    a = api.compile_reduction("sum", (77,), "int32", None, "sm_90a")
    assert a.cubin and a.kernel_names() == ["bulkred_sum"]
    assert a.signatures["bulkred_sum"].params == (
        runtime.Param("x", "array", "i32", (77,)),
        runtime.Param("out", "array", "i32", (1,)),
    )
    assert api.compile_reduction("sum", (77,), "int32", None, "sm_90a") is a
    assert api.compile_reduction("sum", (78,), "int32", None, "sm_90a") is not a
    # a new process: nothing in memory, nothing built
    monkeypatch.setattr(api, "KERNELS", {})
    cache.CACHE.clear_memory()
    monkeypatch.setattr(api, "reduction_module", lambda *a, **k: pytest.fail("built on a disk hit"))
    b = api.compile_reduction("sum", (77,), "int32", None, "sm_90a")
    assert b.cubin == a.cubin and b is not a


def test_explain_returns_the_dispatch_table():
    t = api.explain_reduction("sum", (64,), "float32", None, "sm_100a")
    assert t.startswith("dispatch of 'bulkred.reduce'") and "on sm_100a" in t and t.endswith("chosen: grid_full")
    assert api.explain_reduction("sum", (1024, 1024), "float32", 0, "sm_90a").endswith("chosen: grid_split_bulk")
    assert api.explain_reduction("sum", (64, 8), "float32", 0, "sm_90a").endswith("chosen: grid_split_det")
    assert api.explain_reduction("max", (64, 8), "float32", 1, "sm_90a").endswith("chosen: grid_rows")
    assert bulkred.min(np.zeros(64, np.int32), explain=True).endswith("chosen: grid_full_cluster")


@pytest.mark.parametrize(
    ("fn", "x", "kw", "message"),
    [
        ("min", np.zeros(0, np.float32), {}, "bulkred.min: the array of an array of shape (0,) has no elements, and min has no identity"),
        ("amax", np.zeros(8, np.complex64), {}, "bulkred.amax: a complex64 x is not supported (torch's amax has no complex numbers"),
        ("sum", np.zeros(8, "datetime64[s]"), {}, "bulkred.sum: 'x' has dtype datetime64[s], which is not supported (bulkred's element types: int8, "),
        ("sum", np.zeros(8, np.float32), {"axis": 1}, "bulkred.sum: axis 1 is out of range for a 1-D array"),
        ("sum", np.zeros(8, np.float32), {"axis": "0"}, "bulkred.sum: 'axis' must be an int, a tuple of ints or None, got '0'"),
        ("sum", [1.0, 2.0], {}, "bulkred.sum: expected a device array (torch, cupy, DLPack or CUDA Array Interface) or a numpy array for 'x', got list"),
        ("xor", np.zeros(8, np.float32), {}, "bulkred.xor: expected an integer or bool input, got float32 (a bitwise reduction)"),
        ("sum", np.zeros((2, 3), np.float32), {"out": np.zeros(1, np.float32)}, "bulkred.sum: 'out' has shape (1,), expected () (keepdims=False)"),
        ("max", np.zeros((2, 3), np.float32), {"out": np.zeros((), np.int32)}, "bulkred.max: 'out' has dtype int32, expected float32 (the result's dtype)"),
        ("sum", np.zeros((2, 3), np.float32), {"out": np.zeros((), np.int32), "dtype": "float32"}, "bulkred.sum: 'out' has dtype int32, but dtype=float32 was asked for"),
        ("sum", np.zeros((2, 3), np.float32), {"out": 42}, "bulkred.sum: expected an array for 'out', got int"),
        ("max", np.zeros((2, 0), np.float32), {"axis": 1}, "bulkred.max: axis 1 of an array of shape (2, 0) has no elements, and max has no identity"),
        ("xor", np.zeros((0, 3), np.float32), {"axis": 0}, "bulkred.xor: expected an integer or bool input, got float32 (a bitwise reduction)"),
    ],
)
def test_readable_errors(fn, x, kw, message):
    with pytest.raises(api.ReductionError) as e:
        if kw.get("out") is not None or 0 in np.shape(x):
            getattr(bulkred, fn)(x, **kw)  # checked before any launch: no GPU needed
        else:
            getattr(bulkred, fn)(x, explain=True, **kw)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert e.value.__cause__ is None


def test_compile_errors_are_readable_too():
    with pytest.raises(api.ReductionError, match="^bulkred.or_: error: 'bulkred.reduce' 'kind' or needs an integer element type"):
        api.compile_reduction("or", (8,), "float32", None, "sm_90a")
    # a dtype the dialect does not take: the dialect's reason, one line
    with pytest.raises(api.ReductionError) as e:
        api.compile_reduction("sum", (8,), "uint8", None, "sm_90a", out_dtype="float16")
    assert str(e.value).startswith("bulkred.sum: ") and "\n" not in str(e.value)


def test_axis_of_a_vector(monkeypatch):
    monkeypatch.setattr(api, "compile_reduction", lambda *a: pytest.fail("compiled"))
    for axis in (None, 0, -1, (0,), (-1,), [0]):
        assert "chosen: grid_full_cluster" in bulkred.sum(np.zeros(8, np.int32), axis=axis, dtype="int32", explain=True)


def test_no_gpu_names_the_reason():
    reason = runtime.gpu_unavailable_reason()
    if reason is None:
        pytest.skip("a GPU is present")
    with pytest.raises(runtime.NoGpuError):
        bulkred.sum(np.ones(8, np.float32))


def test_numpy_call_plumbing_on_a_simulated_gpu(monkeypatch):
    """The launch path of bulkred.sum on numpy arrays, with the GPU simulated
    (tests/test_runtime_cpu.py's fake): the module compiled for the GPU's arch, the
    arrays copied in, one launch of the reduction kernel, the result copied into out."""
    from test_runtime_cpu import _FakeGpu

    from bulkred_dialect.backend_ptx import device, launch

    g = _FakeGpu()
    monkeypatch.setattr(launch, "gpu", lambda: g)
    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    monkeypatch.setattr(runtime.CompiledModule, "load_kernel", lambda self, g, name: f"cu:{name}")
    monkeypatch.setattr(launch, "_launch_config", lambda shape, shmem: ("config", shape.grid, shape.block))

    def fake_launch(stream, config, kern, *args):
        g.log.append(("launch", kern, config))

    monkeypatch.setattr(launch, "_cuda_launch", lambda: fake_launch)
    x = np.arange(10, dtype=np.int32)
    out = np.full((), -1, np.int32)
    assert bulkred.sum(x, out=out) is out  # out's dtype: an int32 sum
    # the grid_full_cluster kernel: its workspace is made once, zero-filled, and kept
    assert [e[0] for e in g.log] == ["copy in", "copy in", "zeroed workspace", "launch", "sync", "copy out", "copy out", "free", "free"]
    assert g.log[3][1:] == ("cu:bulkred_sum", ("config", (2, 1, 1), (512, 1, 1)))
    y = bulkred.max(x)
    assert isinstance(y, np.ndarray) and y.shape == () and y.dtype == np.int32


def test_reduction_module_raises_only_project_errors():
    """The low-level entry point takes a numpy integer axis as the int it is, and refuses
    values xDSL's attributes cannot hold (2**70) in one line, as a project error."""
    from bulkred_dialect.errors import BulkredError

    assert str(api.reduction_module("sum", (4, 5), "float32", np.int64(1), "k")) == str(
        api.reduction_module("sum", (4, 5), "float32", 1, "k")
    )
    assert str(api.reduction_module("sum", (4, 5), "float32", (np.int32(-1),), "k")) == str(
        api.reduction_module("sum", (4, 5), "float32", [1], "k")
    )
    for args, kw in [
        ((2**70,), {}), ((None,), {"correction": 2**70}), ((None,), {"prologue": 2**70}), ((True,), {}),
        ((None,), {"epilogue": [("pow", "x")]}), ((1.0,), {}),
    ]:
        with pytest.raises(BulkredError) as e:
            api.reduction_module("sum", (4, 5), "float32", *args, "k", **kw)
        assert "\n" not in str(e.value) and str(e.value).startswith(("bulkred.sum: ", "'epilogue' of T.reduce")), (args, kw)
    with pytest.raises(BulkredError, match=r"^bulkred.sum: 'shape' must be a tuple of ints in \[0, 2\*\*63\)"):
        api.reduction_module("sum", (2**70,), "float32", None, "k")


def test_no_host_copy_before_the_gpu_is_found(monkeypatch):
    """A numpy argument is checked against the signature before any GPU call, but copied
    (8 GiB for a broadcast view of 2**31 float32) only once the GPU is there: without
    one, the call fails at once, having copied nothing."""
    from bulkred_dialect.backend_ptx import launch, signature
    from bulkred_dialect.backend_ptx.errors import NoGpuError

    def no_gpu():
        raise NoGpuError("pretended: none")

    def copied(*a, **k):  # pragma: no cover - the failure this test looks for
        raise AssertionError("copied before the GPU check")

    monkeypatch.setattr(launch, "gpu", no_gpu)
    monkeypatch.setattr(signature.KernelSignature, "host_layout", copied)
    monkeypatch.setattr(launch.np, "ascontiguousarray", copied)
    k = runtime.compile_ptx(
        ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 x) { ret; }\n", "sm_90a",
        [runtime.KernelSignature.of("k", ("x", "f32", (2**31,)))], assemble_now=False,
    ).kernel("k")
    huge = np.broadcast_to(np.float32(1), (2**31,))
    with pytest.raises(NoGpuError):
        k(huge, grid=1, block=1)
    unsigned = runtime.compile_ptx(".visible .entry k(.param .u64 x) { ret; }", "sm_90a", assemble_now=False).kernel("k")
    with pytest.raises(NoGpuError):
        unsigned(huge, grid=1, block=1)
    with pytest.raises(NoGpuError):  # the API: its numpy path too
        monkeypatch.setattr("bulkred_dialect.backend_ptx.device.current_arch", no_gpu)
        bulkred.sum(huge)


def test_the_call_path_reads_no_other_modules_private_names():
    """The way from a public function to the launch (reductions, torch_ops, api, the
    compile driver, the backend) reads no private name (``_x``) of another bulkred module
    it imports: each goes through the other's public interface."""
    import ast
    from pathlib import Path

    pkg = Path(bulkred.__file__).parent
    files = ["reductions.py", "torch_ops.py", "api.py", "compiler.py",
             *(f"backend_ptx/{p.name}" for p in (pkg / "backend_ptx").glob("*.py") if p.name != "assemble.py")]
    found = []
    for name in files:
        tree = ast.parse((pkg / name).read_text())
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bulkred_dialect"):
                for a in node.names:
                    if (pkg / f"{a.name}.py").exists() or (pkg / (node.module or "").removeprefix("bulkred_dialect").strip(".").replace(".", "/") / f"{a.name}.py").exists():
                        modules.add(a.asname or a.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bulkred_dialect"):
                found += [f"{name}:{node.lineno}: from {node.module} import {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
                if node.attr.startswith("_") and not node.attr.startswith("__"):
                    found.append(f"{name}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not found, found


def test_call_keys_tell_option_types_apart_and_pairs_come_back_named():
    """A call's key holds each option's value with its type (``correction=1``, ``1.0``,
    ``True`` and ``np.int64(1)`` are four calls: equal values that the checks take or
    refuse differently) and the options' order as given; a bound launcher of two results
    packs them in the row's named pair (made by ``tuple.__new__``: fields, no copy)."""
    torch = pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough)")
    from types import SimpleNamespace

    from bulkred_dialect.backend_ptx import launch
    from bulkred_dialect.functions import FUNCTIONS

    x = torch.zeros(4, 8)
    keys = {api.call_key("std", x, 1, False, {"correction": c}, None) for c in (1, 1.0, True, np.int64(1))}
    assert len(keys) == 4
    two = api.call_key("vector_norm", x, 1, False, {"ord": 2, "dtype": None}, None)
    assert two != api.call_key("vector_norm", x, 1, False, {"dtype": None, "ord": 2}, None)
    assert two == api.call_key("vector_norm", x, 1, False, {"ord": 2, "dtype": None}, None) and hash(two)
    assert api.call_key("sum", x, 1, False, {}, None) != api.call_key("sum", x, 1, False, {"dtype": None}, None)
    n = x.numpy()
    assert api.call_key("std", n, 1, False, {"correction": 1}, None) != api.call_key("std", n, 1, False, {"correction": 1.0}, None)
    with pytest.raises(TypeError):  # an unhashable option: the caller's every-check path says what it is
        hash(api.call_key("sum", x, 1, False, {"dtype": []}, None))

    pair = FUNCTIONS["aminmax"].result_type
    g = SimpleNamespace(broken=None, streams={0: "s"}, stream_for=lambda h: "s", memset_async=lambda *a: None)
    made = [x.new_empty(4), x.new_empty(4)]
    run = launch.bound_launcher("aminmax", g, "kern", "config", [], [x, *made], inputs=1, order=(1, 2),
                                new=[(4,), (4,)], pack=pair, zero=(), align=[1, 1, 1])
    launched = []
    run.__globals__.update(raw_stream=lambda dev: 0, launch=lambda *a: launched.append(a))
    r = run(x, None)
    assert type(r) is pair and r.min.shape == r.max.shape == (4,) and r.min is r[0]
    assert launched and launched[0][3:] == (x.data_ptr(), r.min.data_ptr(), r.max.data_ptr())


def test_the_public_functions_key_a_torch_call_as_call_key_does(monkeypatch):
    """``bulkred.<fn>`` writes a torch tensor's key out in its own body (no frame for
    it): the same tuple as ``api.call_key``, so a call kept under call_key's key (by
    ``api.call`` or the torch operators' path) is found: each call below runs the
    launcher put under call_key's key (a miss would take the full path: no "hit")."""
    torch = pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough)")

    x, x3 = torch.zeros(4, 8), torch.zeros(2, 3, 4)
    cases = [
        ("sum", x, None, False, {}, {}),
        ("sum", x3, (0, 2), True, {}, {"axis": (0, 2), "keepdims": True}),
        ("std_mean", x, 1, False, {"correction": 1}, {"axis": 1, "correction": 1}),
        ("vector_norm", x, -1, False, {"ord": float("inf"), "dtype": None},
         {"axis": -1, "ord": float("inf"), "dtype": None}),
        ("amax", x.t(), 0, False, {}, {"axis": 0}),
        ("sum", x, 1, False, {}, {"axis": 1, "out": torch.zeros(4)}),
        ("std_mean", x, 0, False, {}, {"axis": 0, "out": (torch.zeros(8), torch.zeros(8))}),
    ]
    for name, t, axis, keepdims, options, kwargs in cases:
        ran = []
        monkeypatch.setitem(api.CALLS, api.call_key(name, t, axis, keepdims, options, kwargs.get("out")),
                            (lambda a, out, ran=ran: ran.append(a) or "hit", None, None))
        assert getattr(bulkred, name)(t, **kwargs) == "hit" and ran == [t], name
