"""The runtime without a GPU: NoGpuError with its reason, signature and launch-shape
errors raised before any GPU call, signatures read from IR, and every GPU test kernel
(tests/gpu/kernels.py) printed and assembled for sm_90a with nvJitLink."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from bulkred_dialect.backend_ptx import launch, runtime
from assemble_batched import assemble_each
from bulkred_dialect.backend_ptx.assemble import PtxasError
from bulkred_dialect.backend_ptx.device import Gpu
from bulkred_dialect.backend_ptx.runtime import KernelSignature, LaunchShape, Param, SignatureError

ROOT = Path(__file__).resolve().parents[1]

SCALE_PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry scale(.param .u64 out, .param .f32 k)
{
  .reg .b32 %r<2>; .reg .b64 %rd<4>; .reg .f32 %f<3>;
  ld.param.u64 %rd1, [out]; ld.param.f32 %f1, [k];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x; mul.wide.u32 %rd3, %r1, 4; add.u64 %rd2, %rd2, %rd3;
  ld.global.f32 %f2, [%rd2]; mul.f32 %f2, %f2, %f1; st.global.f32 [%rd2], %f2;
  ret;
}
"""

SCALE_SIG = KernelSignature.of("scale", ("out", "f32", (64,)), ("k", "f32"))


@pytest.fixture
def no_gpu_calls(monkeypatch):
    """Make any use of the GPU fail the test: checks must happen before it."""

    def forbidden(*a, **k):
        raise AssertionError("the GPU was touched before the arguments were checked")

    monkeypatch.setattr(launch, "gpu", forbidden)
    monkeypatch.setattr(runtime.CompiledModule, "_load", forbidden)


def scale_kernel() -> runtime.Kernel:
    return runtime.compile_ptx(SCALE_PTX, "sm_90a", [SCALE_SIG]).kernel("scale")


# region No GPU


def test_no_gpu_error_names_the_reason():
    reason = runtime.gpu_unavailable_reason()
    if reason is None:
        pytest.skip("a GPU is present")
    assert reason.strip()
    with pytest.raises(runtime.NoGpuError) as e:
        scale_kernel()(np.ones(64, np.float32), 2.0, grid=1, block=64)
    assert e.value.reason == reason
    assert str(e.value) == f"no GPU available: {reason}"
    with pytest.raises(runtime.NoGpuError):
        runtime.current_arch()


def test_compile_and_assemble_need_no_gpu():
    mod = runtime.compile_ptx(SCALE_PTX, "sm_90a", [SCALE_SIG])
    assert mod.cubin and mod.kernel_names() == ["scale"]
    assert mod.assemble("sm_90a") == mod.cubin
    with pytest.raises(PtxasError, match="cannot be compiled to future architecture"):
        mod.assemble("sm_100a")  # an 'a' target's PTX runs on that arch only
    with pytest.raises(KeyError, match="no kernel 'nope' in the module \\(kernels: scale\\)"):
        mod.kernel("nope")


def test_ptxas_error_is_raised_at_compile_time():
    with pytest.raises(PtxasError) as e:
        runtime.compile_ptx(SCALE_PTX.replace("mul.f32", "mul.bogus.f32"), "sm_90a")
    assert e.value.diagnostics and e.value.diagnostics[0].severity == "error"


# endregion

# region Signature checks before launch


@pytest.mark.parametrize(
    "args,message",
    [
        ((np.ones(64, np.float64), 1.0), "kernel 'scale' param 'out': expected dtype float32 (f32), got float64"),
        ((np.ones(63, np.float32), 1.0), "kernel 'scale' param 'out': expected shape (64,), got (63,)"),
        ((np.ones((64, 1), np.float32), 1.0), "kernel 'scale' param 'out': expected shape (64,), got (64, 1)"),
        ((np.ones(64, np.float32),), "kernel 'scale' takes 2 arguments (out, k), got 1"),
        (([1.0] * 64, 1.0), "kernel 'scale' param 'out': expected a device array (torch, cupy, DLPack or CUDA Array Interface) or a numpy array (array of f32, shape (64,)), got list"),
        ((np.ones(64, np.float32), "2"), "kernel 'scale' param 'k': expected a scalar f32, got str"),
        ((np.ones(64, np.float32), np.int32(2)), "kernel 'scale' param 'k': expected dtype float32 (f32), got int32"),
        ((np.ones(64, np.float32), np.ones(2, np.float32)), "kernel 'scale' param 'k': expected a scalar f32, got an array of shape (2,)"),
    ],
)
def test_signature_errors_before_any_gpu_call(no_gpu_calls, args, message):
    with pytest.raises(SignatureError) as e:
        scale_kernel()(*args, grid=1, block=64)
    assert str(e.value) == message


def test_kernel_call_signature_and_help():
    """``Kernel.__call__`` is a property over the instance's ``_call`` (the checked call,
    or a recorded short path); the call's keywords still show through inspect, and the
    class keeps its own signature."""
    import inspect

    k = scale_kernel()
    assert k._call == k._with_options  # nothing recorded without a GPU
    params = inspect.signature(k).parameters
    assert list(params)[0] == "args" and {"grid", "block", "cluster", "shmem", "stream", "sync", "timeout_s"} <= set(params)
    assert "module" in inspect.signature(runtime.Kernel).parameters
    assert "launch once" in runtime.Kernel.__call__.__doc__
    assert callable(k)


def test_launch_shape_errors_before_any_gpu_call(no_gpu_calls):
    k = scale_kernel()
    a = np.ones(64, np.float32)
    with pytest.raises(runtime.LaunchConfigError, match=r"'grid' \[3, 1, 1\] \(in CTAs\) must be a multiple of 'cluster' \[2, 1, 1\]"):
        k(a, 1.0, grid=3, block=64, cluster=2)
    with pytest.raises(runtime.LaunchConfigError, match="has no recorded launch shape: pass grid= and block="):
        k(a, 1.0)
    with pytest.raises(runtime.LaunchConfigError, match="'block' \\[2048, 1, 1\\] has 2048 threads, more than 1024"):
        k(a, 1.0, grid=1, block=2048)
    with pytest.raises(runtime.LaunchConfigError, match="'block' must be 1 to 3 positive integers, got \\(0,\\)"):
        k(a, 1.0, grid=1, block=0)


def test_integer_scalars_are_range_checked_and_wrapped():
    sig = KernelSignature.of("k", ("a", "i32"), ("b", "u8"), ("c", "s16"))
    a, b, c = sig.check([-1, 255, -32768])
    assert (a.dtype, b.dtype, c.dtype) == (np.int32, np.uint8, np.int16)
    assert (int(a), int(b), int(c)) == (-1, 255, -32768)
    (a, _, _) = sig.check([2**32 - 1, 0, 0])  # signless: the bits of 0xffffffff
    assert int(a) == -1
    with pytest.raises(SignatureError, match="param 'a': 4294967296 does not fit in i32"):
        sig.check([2**32, 0, 0])
    with pytest.raises(SignatureError, match="param 'b': -1 does not fit in u8"):
        sig.check([0, -1, 0])
    with pytest.raises(SignatureError, match="param 'c': 32768 does not fit in s16"):
        sig.check([0, 0, 32768])
    with pytest.raises(SignatureError, match="param 'a': expected an integer \\(i32\\), got float 1.5"):
        sig.check([1.5, 0, 0])


def test_signless_and_bf16_dtypes():
    sig = KernelSignature.of("k", ("x", "i32", (2,)), ("y", "bf16", ...), ("z", "u32", (None, 2)))
    sig.check([np.zeros(2, np.int32), np.zeros(3, np.uint16), np.zeros((5, 2), np.uint32)])
    sig.check([np.zeros(2, np.uint32), np.zeros((1, 1), np.uint16), np.zeros((1, 2), np.uint32)])
    with pytest.raises(SignatureError, match="param 'z': expected dtype uint32 \\(u32\\), got int32"):
        sig.check([np.zeros(2, np.int32), np.zeros(3, np.uint16), np.zeros((5, 2), np.int32)])
    with pytest.raises(SignatureError, match="param 'z': expected shape \\('\\?', 2\\), got \\(5, 3\\)"):
        sig.check([np.zeros(2, np.int32), np.zeros(3, np.uint16), np.zeros((5, 3), np.uint32)])
    with pytest.raises(ValueError, match="param 'w': unknown dtype 'f8'"):
        Param("w", "array", "f8")


def test_checked_arrays_are_copies():
    sig = KernelSignature.of("k", ("x", "f32", (4,)))
    x = np.arange(8, dtype=np.float32)[::2]
    (y,) = sig.check([x])
    assert y.flags.c_contiguous and y is not x and np.array_equal(x, y)


# endregion

# region Signatures from IR


def test_signature_of_the_seed_kernel():
    module = runtime.parse((ROOT / "examples" / "seed_sum32.mlir").read_text())
    sigs = runtime.signatures_of_module(module)
    assert list(sigs) == ["test_func"]
    s = sigs["test_func"]
    assert s.params == (Param("A", "array", "f32", (32,)), Param("B", "array", "f32", (1,)))
    assert s.launch == LaunchShape((1, 1, 1), (1, 1, 1), (1, 1, 1))


def test_signature_kept_through_the_pipeline(no_gpu_calls):
    module = runtime.parse((ROOT / "examples" / "seed_sum32.mlir").read_text())
    mod = runtime.compile_tile_module(module, "sm_90a")
    assert mod.cubin and ".target sm_90a" in mod.ptx
    k = mod.kernel("test_func")
    assert k.signature.params[0] == Param("A", "array", "f32", (32,))
    with pytest.raises(SignatureError, match="param 'A': expected shape \\(32,\\), got \\(31,\\)"):
        k(np.zeros(31, np.float32), np.zeros(1, np.float32))


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        (
            "lower-tile-reductions{",
            "pass pipeline 'lower-tile-reductions{' column 23: expected argument name here",
        ),
        ("nope", "unknown pass 'nope' (bulkred passes: check-target, lower-tile-reductions, "),
        ("bulkred-to-ptx,lower-to-ptz", "unknown pass 'lower-to-ptz' (did you mean 'lower-to-ptx'? "),
        ("lower-tile-reductions{explain=maybe}", "'explain' of lower-tile-reductions must be true or false, got 'maybe'"),
        ("bulkred-to-ptx{target=sm_9x}", "bulkred-to-ptx: 'target' must look like sm_90, sm_90a or sm_100a, got 'sm_9x'"),
        (
            "bulkred-to-ptx{target=sm_90a target=sm_90a}",
            "pass pipeline 'bulkred-to-ptx{target=sm_90a target=sm_90a}' column 30: "
            "option 'target' of bulkred-to-ptx is given twice",
        ),
    ],
)
def test_bad_pipeline_is_a_value_error_with_the_cli_message(no_gpu_calls, pipeline, message):
    """Never xDSL's ArgSpecParseError (a BaseException): one line, as bulkred-opt -p says it."""
    module = runtime.parse((ROOT / "examples" / "seed_sum32.mlir").read_text())
    before = str(module)
    with pytest.raises(runtime.PipelineError) as e:
        runtime.compile_tile_module(module, "sm_90a", pipeline=pipeline)
    assert isinstance(e.value, ValueError) and isinstance(e.value, runtime.RuntimeErrorBase)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
    assert str(module) == before  # rejected before any pass ran


def test_pipeline_messages_match_bulkred_opt(tmp_path, capsys):
    from bulkred_dialect.cli import main

    f = tmp_path / "seed.mlir"
    f.write_text((ROOT / "examples" / "seed_sum32.mlir").read_text())
    for spec in ["lower-tile-reductions{", "nope", "lower-tile-reductions{target=90}"]:
        with pytest.raises(runtime.PipelineError) as e:
            runtime.lower_tile_module(runtime.parse(f.read_text()), "sm_90a", pipeline=spec)
        assert main([str(f), "-p", spec]) == 1
        assert capsys.readouterr().err == f"bulkred-opt: error: {e.value}\n"


def test_explicit_pipeline_runs_and_verifies_between_passes(no_gpu_calls):
    module = runtime.parse((ROOT / "examples" / "seed_sum32.mlir").read_text())
    mod = runtime.compile_tile_module(module, "sm_100a", pipeline="lower-tile-reductions{target=sm_100a},lower-to-ptx")
    assert ".target sm_100a" in mod.ptx and mod.kernel_names() == ["test_func"]
    assert mod.signatures["test_func"].params[0] == Param("A", "array", "f32", (32,))


def test_signature_of_a_ptx_level_kernel():
    text = """
    func.func @k(%out: !ptx.ptr<global>, %n: i32, %x: f32) attributes {bulkred.launch = #bulkred.launch<grid = [4], block = [64], cluster = [2]>} {
      ptx.ret
    }
    """
    s = runtime.signatures_of_module(runtime.parse(text))["k"]
    assert s.params == (Param("out", "array"), Param("n", "scalar", "i32"), Param("x", "scalar", "f32"))
    assert s.launch == LaunchShape((4, 1, 1), (64, 1, 1), (2, 1, 1))


# endregion

# region The GPU test kernels assemble


@functools.cache
def _gpu_kernels():
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from gpu.kernels import ALL_KERNELS

    return ALL_KERNELS()


def test_every_gpu_test_kernel_assembles_for_sm_90a():
    kernels = _gpu_kernels()
    names = [k.name for k in kernels]
    assert len(names) == len(set(names)) == 66  # red_async_add_s64 (issue 9) included
    ptxs = [(k.name, k.ptx("sm_90a")) for k in kernels]
    for name, ptx in ptxs:
        assert f".visible .entry {name}(" in ptx
    errors = assemble_each(ptxs, "sm_90a")  # those of one header in one nvJitLink run
    assert set(errors) == set(names)
    failures = [f"{name}: {e}" for name, e in errors.items() if e is not None]
    assert not failures, "\n".join(failures)


def test_gpu_test_kernels_carry_their_launch_shape():
    by_name = {k.name: k for k in _gpu_kernels()}
    ptx = by_name["cp_reduce_cluster_add_u32"].ptx()
    assert ".reqntid 64, 1, 1" in ptx and ".reqnctapercluster 2, 1, 1" in ptx
    assert by_name["cp_reduce_cluster_add_u32"].signature.launch == LaunchShape((2, 1, 1), (64, 1, 1), (2, 1, 1))
    assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster" in by_name[
        "bulk_g2s_cluster_multicast_b"
    ].ptx()


def test_dominance_check_catches_a_value_used_on_another_path():
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from gpu.kernels import GLOBAL, KernelBuilder
    from bulkred_dialect.ops.ptx.control import CmpOp
    from bulkred_dialect.ops.ptx.sreg import SpecialRegister

    kb = KernelBuilder("bad", [("out", GLOBAL)], grid=1, block=32)
    box = []
    kb.if_(kb.cmp(CmpOp.EQ, kb.tid, 0), lambda: box.append(kb.sreg(SpecialRegister.LANEID)))
    kb.add32(box[0], box[0])  # defined only when tid == 0
    with pytest.raises(ValueError, match="does not dominate"):
        kb.finish()


# endregion


# region Device arrays: checks on a view (no GPU needed)


def _view(shape, dtype="float32", strides=None, device_id=0, accessible=True, ptr=0x1000):
    from types import SimpleNamespace

    return SimpleNamespace(
        ptr=ptr, device_id=device_id, is_device_accessible=accessible, shape=shape, strides=strides, dtype=np.dtype(dtype)
    )


def test_device_array_checks_name_the_param():
    from bulkred_dialect.backend_ptx.arrays import check_device_array

    p = Param("x", "array", "f32", (4, 8))
    w = "kernel 'k' param 'x'"
    assert check_device_array(w, p, _view((4, 8)), 0) == (0x1000, 128)
    assert check_device_array(w, p, _view((4, 8), strides=(8, 1)), 0) == (0x1000, 128)
    cases = [
        (_view((4, 8), device_id=1), "kernel 'k' param 'x': expected an array on cuda:0 (the GPU the kernel runs on), got one on cuda:1"),
        (_view((4, 8), device_id=-1, accessible=False), "expected an array on cuda:0 (the GPU the kernel runs on), got one on the host (cpu)"),
        (_view((4, 8), "float64"), "kernel 'k' param 'x': expected dtype float32 (f32), got float64"),
        (_view((8, 4)), "kernel 'k' param 'x': expected shape (4, 8), got (8, 4)"),
        (_view((4, 8), strides=(1, 4)), "expected a contiguous row-major array, got strides (1, 4) (in elements) for shape (4, 8)"),
        (_view((4, 8), strides=(16, 2)), "got strides (16, 2) (in elements) for shape (4, 8)"),
    ]
    for view, message in cases:
        with pytest.raises(SignatureError) as e:
            check_device_array(w, p, view, 0)
        assert message in str(e.value)


def test_contiguity_ignores_unit_dimensions():
    from bulkred_dialect.backend_ptx.arrays import is_c_contiguous

    assert is_c_contiguous((4, 8), (8, 1))
    assert is_c_contiguous((4, 1, 8), (8, 99, 1))
    assert is_c_contiguous((1, 8), (1, 1))
    assert not is_c_contiguous((4, 8), (1, 4))
    assert not is_c_contiguous((32,), (2,))


def test_numpy_is_not_a_device_array():
    from bulkred_dialect.backend_ptx.arrays import is_device_array_like

    class Cai:
        __cuda_array_interface__ = {"shape": (1,), "typestr": "<f4", "data": (0, False), "version": 3}

    assert not is_device_array_like(np.zeros(3)) and not is_device_array_like(np.float32(1))
    assert is_device_array_like(Cai()) and not is_device_array_like([1.0])


def test_stream_handles():
    from types import SimpleNamespace

    from bulkred_dialect.backend_ptx.arrays import caller_stream, stream_handle

    class Proto:
        def __cuda_stream__(self):
            return (0, 0x77)

    assert stream_handle(5) == 5 and stream_handle(Proto()) == 0x77
    assert stream_handle(SimpleNamespace(cuda_stream=0x10)) == 0x10  # torch.cuda.Stream
    assert stream_handle(SimpleNamespace(ptr=0x20)) == 0x20  # cupy stream
    with pytest.raises(runtime.LaunchConfigError, match="'stream' must be a CUDA stream .* got str"):
        stream_handle("s")
    assert caller_stream([np.zeros(2)], None) == (None, "runtime")
    assert caller_stream([np.zeros(2)], Proto()) == (0x77, "stream")


# endregion

# region The workspace and zero_init contract

CONTRACT_IR = """
func.func @k(%out: !ptx.ptr<global>, %n: i32, %ws: !ptx.ptr<global>) attributes {{bulkred.launch = #bulkred.launch<grid = [4], block = [64], cluster = [1]>{attrs}}} {{
  ptx.ret
}}
"""


def _contract(attrs: str):
    return runtime.signatures_of_module(runtime.parse(CONTRACT_IR.format(attrs=attrs)))["k"]


def test_workspace_is_not_a_user_parameter():
    s = _contract(", bulkred.workspace = 64 : i64, bulkred.zero_init = [0]")
    assert s.params == (Param("out", "array"), Param("n", "scalar", "i32"))
    assert (s.workspace, s.zero_init) == (64, (0,))
    mod = runtime.compile_module(runtime.parse(CONTRACT_IR.format(attrs=", bulkred.workspace = 64 : i64")), "sm_90a")
    assert mod.signatures["k"].workspace == 64 and mod.cubin
    assert ".param .u64 k_param_2" in mod.ptx  # the lowered kernel takes it last
    with pytest.raises(SignatureError, match="kernel 'k' takes 2 arguments \\(out, n\\), got 3"):
        mod.kernel("k")(np.zeros(4, np.float32), np.int32(1), np.zeros(4, np.float32))


def test_zero_init_without_workspace_and_as_int_attr():
    s = _contract(", bulkred.zero_init = [#builtin.int<0>, 2 : i64]".replace(", 2 : i64", ""))
    assert s.params[-1] == Param("ws", "array") and s.zero_init == (0,) and s.workspace == 0
    assert _contract(", bulkred.zero_init = [2, 0]").zero_init == (2, 0)


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (", bulkred.zero_init = [3]", "'bulkred.zero_init' index 3 is out of range (the kernel has 3 user parameters: 0 to 2)"),
        (", bulkred.workspace = 8 : i64, bulkred.zero_init = [2]", "'bulkred.zero_init' index 2 is out of range (the kernel has 2 user parameters: 0 to 1)"),
        (", bulkred.zero_init = [1]", "'bulkred.zero_init' index 1 names param 'n', a scalar (expected an array)"),
        (", bulkred.zero_init = [0, 0]", "'bulkred.zero_init' lists index 0 twice"),
        (", bulkred.zero_init = 0 : i64", "'bulkred.zero_init' must be an array of parameter indices (e.g. [0, 2]), got 0 : i64"),
        (", bulkred.zero_init = [\"a\"]", "'bulkred.zero_init' must be an array of parameter indices"),
        (", bulkred.workspace = \"64\"", "'bulkred.workspace' must be an integer number of bytes >= 0 (e.g. 64 : i64), got \"64\""),
        (", bulkred.workspace = -1 : i64", "'bulkred.workspace' must be an integer number of bytes >= 0"),
    ],
)
def test_contract_attributes_are_validated(attrs, message):
    from bulkred_dialect.diagnostics import LocatedError

    with pytest.raises(LocatedError) as e:
        _contract(attrs)
    assert message in str(e.value) and "<input>:2:1" in str(e.value)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("%n: i32", "needs a last parameter for the workspace buffer (memref<8xi8, #bulkred.scope<global>> or !ptx.ptr<global>), got scalar i32"),
        ("%a: memref<8xf32, #bulkred.scope<global>>", "got array of f32, shape (8,)"),
        ("%ws: memref<4xi8, #bulkred.scope<global>>", "'bulkred.workspace' is 8 bytes but the workspace parameter 'ws' has 4"),
    ],
)
def test_workspace_needs_a_last_byte_buffer_parameter(params, message):
    """At level 2 the workspace is a memref<Nxi8> in global memory, at level 3 a !ptx.ptr<global>;
    a tile-level kernel's own last parameter is never taken for it."""
    from bulkred_dialect.diagnostics import LocatedError

    text = f"func.func @k({params}) attributes {{bulkred.workspace = 8 : i64}} {{\n  func.return\n}}\n"
    with pytest.raises(LocatedError) as e:
        runtime.signatures_of_module(runtime.parse(text))
    assert message in str(e.value)


def test_level_2_workspace_parameter():
    text = (
        "func.func @k(%a: memref<8xf32, #bulkred.scope<global>>, %ws: memref<16xi8, #bulkred.scope<global>>) "
        "attributes {bulkred.workspace = 16 : i64, bulkred.zero_init = [0]} {\n  func.return\n}\n"
    )
    s = runtime.signatures_of_module(runtime.parse(text))["k"]
    assert s.params == (Param("a", "array", "f32", (8,)),) and (s.workspace, s.zero_init) == (16, (0,))


def test_signature_of_checks_the_contract():
    s = KernelSignature.of("k", ("a", "f32", (4,)), workspace=16, zero_init=[0])
    assert (s.workspace, s.zero_init) == (16, (0,))
    with pytest.raises(ValueError, match="kernel 'k': 'bulkred.zero_init' index 1 is out of range"):
        KernelSignature.of("k", ("a", "f32", (4,)), zero_init=[1])


# The GPU test of the contract (tests/gpu/test_device_arrays_gpu.py) runs this kernel:
# out[i] += inp[i] + ws[i] (red.add), then ws[i] = 0. out is zero_init; ws the workspace.
ACC_PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry acc(.param .u64 out, .param .u64 inp, .param .u64 ws)
{
  .reg .b32 %r<5>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out]; ld.param.u64 %rd2, [inp]; ld.param.u64 %rd3, [ws];
  cvta.to.global.u64 %rd1, %rd1; cvta.to.global.u64 %rd2, %rd2; cvta.to.global.u64 %rd3, %rd3;
  mov.u32 %r1, %tid.x; mul.wide.u32 %rd4, %r1, 4;
  add.u64 %rd5, %rd1, %rd4; add.u64 %rd6, %rd2, %rd4; add.u64 %rd7, %rd3, %rd4;
  ld.global.u32 %r2, [%rd6]; ld.global.u32 %r3, [%rd7];
  add.u32 %r4, %r2, %r3;
  red.global.add.u32 [%rd5], %r4;
  mov.u32 %r0, 0; st.global.u32 [%rd7], %r0;
  ret;
}
"""

ACC_SIG = KernelSignature.of(
    "acc", ("out", "i32", (64,)), ("inp", "i32", (64,)), launch=LaunchShape((1, 1, 1), (64, 1, 1)), workspace=256, zero_init=[0]
)


def test_the_contract_test_kernel_assembles():
    mod = runtime.compile_ptx(ACC_PTX, "sm_90a", [ACC_SIG])
    assert mod.cubin and mod.signatures["acc"].workspace == 256


# endregion


# region The launch path on a simulated GPU (what is passed, zeroed, waited for)


class _FakeDeviceArray:
    """A device array as the runtime sees it through a StridedMemoryView."""

    def __init__(self, ptr, shape, dtype="int32", strides=None, device_id=0):
        self.view = _view(shape, dtype, strides, device_id, ptr=ptr)

    @property
    def __cuda_array_interface__(self):  # only its presence matters here
        return {}


class _FakeGpu:
    def __init__(self):
        from types import SimpleNamespace

        self.device = SimpleNamespace(device_id=0)
        self.stream = SimpleNamespace(handle=0x5, name="runtime")
        self.broken = None
        self.log: list[tuple] = []
        self._next = 0x9000

    def ensure_usable(self):
        pass

    def stream_for(self, handle):
        from types import SimpleNamespace

        return self.stream if handle is None else SimpleNamespace(handle=handle, name=f"caller {handle:#x}")

    def memset_async(self, ptr, nbytes, stream):
        self.log.append(("memset", ptr, nbytes, stream.name))

    def _buf(self, n):
        from types import SimpleNamespace

        self._next += 0x1000
        log = self.log
        return SimpleNamespace(handle=self._next, close=lambda s, h=self._next: log.append(("free", h)))

    def zeroed(self, n):
        b = self._buf(n)
        self.log.append(("zeroed workspace", b.handle, n))
        return b

    def alloc_ready(self, n):
        return self._buf(n)

    def to_device(self, a):
        b = self._buf(a.nbytes)
        self.log.append(("copy in", b.handle))
        return b

    def to_host(self, b, a):
        self.log.append(("copy out", b.handle))
        return a

    def sync(self, what, timeout_s=None, stream=None):
        self.log.append(("sync", (stream or self.stream).name))


@pytest.fixture
def fake_gpu(monkeypatch):
    from bulkred_dialect.backend_ptx import arrays

    g = _FakeGpu()
    monkeypatch.setattr(launch, "gpu", lambda: g)
    monkeypatch.setattr(runtime.CompiledModule, "load_kernel", lambda self, g, name: f"cu:{name}")
    monkeypatch.setattr(launch, "view_of", lambda a, handle, where: g.log.append(("view", handle)) or a.view)
    monkeypatch.setattr(launch, "_launch_config", lambda shape, shmem: ("config", shape.grid, shape.block))

    def fake_launch(stream, config, kern, *args):
        g.log.append(("launch", stream.name, kern, args))

    monkeypatch.setattr(launch, "_cuda_launch", lambda: fake_launch)
    assert arrays.is_device_array_like(_FakeDeviceArray(1, (64,)))
    return g


def test_device_arrays_are_passed_by_pointer_with_workspace_and_zero_init(fake_gpu):
    k = runtime.compile_ptx(ACC_PTX, "sm_90a", [ACC_SIG]).kernel("acc")
    out, inp = _FakeDeviceArray(0x1000, (64,)), _FakeDeviceArray(0x2000, (64,))
    got = k(out, inp)
    assert got[0] is out and got[1] is inp
    (ws,) = [e for e in fake_gpu.log if e[0] == "zeroed workspace"]
    assert ws[2] == 256
    assert [e[0] for e in fake_gpu.log] == ["view", "view", "memset", "zeroed workspace", "launch"]
    assert fake_gpu.log[2] == ("memset", 0x1000, 256, "runtime")  # zero_init [0]: out, on the launch stream
    _, stream, kern, kargs = fake_gpu.log[4]
    assert (stream, kern, kargs[:2], kargs[2].handle) == ("runtime", "cu:acc", (0x1000, 0x2000), ws[1])  # workspace last
    fake_gpu.log.clear()
    k(out, inp, stream=0x77, sync=True)  # the same workspace, zeroed once
    assert [e[0] for e in fake_gpu.log] == ["view", "view", "memset", "launch", "sync"]
    assert fake_gpu.log[0] == ("view", 0x77) and fake_gpu.log[-1] == ("sync", "caller 0x77")
    assert fake_gpu.log[3][1] == "caller 0x77" and fake_gpu.log[3][3][2].handle == ws[1]


def test_numpy_zero_init_allocates_instead_of_copying_in(fake_gpu):
    k = runtime.compile_ptx(ACC_PTX, "sm_90a", [ACC_SIG]).kernel("acc")
    k(np.full(64, 7, np.int32), np.arange(64, dtype=np.int32))
    kinds = [e[0] for e in fake_gpu.log]
    assert kinds == ["memset", "copy in", "zeroed workspace", "launch", "sync", "copy out", "copy out", "free", "free"]
    assert fake_gpu.log[0][1:3] == (fake_gpu.log[3][3][0].handle, 256)  # out's device copy is zeroed


def test_device_array_errors_come_before_any_launch(fake_gpu):
    k = runtime.compile_ptx(ACC_PTX, "sm_90a", [ACC_SIG]).kernel("acc")
    good = _FakeDeviceArray(0x1000, (64,))
    for bad, message in [
        (_FakeDeviceArray(0x2000, (64,), strides=(2,)), "param 'inp': expected a contiguous row-major array"),
        (_FakeDeviceArray(0x2000, (64,), device_id=1), "param 'inp': expected an array on cuda:0 (the GPU the kernel runs on), got one on cuda:1"),
        (_FakeDeviceArray(0x2000, (64,), dtype="float32"), "param 'inp': expected dtype int32 or uint32 (i32), got float32"),
    ]:
        with pytest.raises(SignatureError) as e:
            k(good, bad)
        assert message in str(e.value)
    assert not any(e[0] in ("launch", "memset", "zeroed workspace") for e in fake_gpu.log)


# endregion


def test_torch_tensors_are_checked_from_their_attributes():
    """check_torch_tensor, on an object with a torch tensor's attributes: the same
    checks and messages as check_device_array."""
    from types import SimpleNamespace

    from bulkred_dialect.backend_ptx.arrays import check_torch_tensor

    def tensor(shape=(64,), dtype="int32", stride=None, cuda=True, index=0):
        st = stride or tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
        return SimpleNamespace(
            is_cuda=cuda,
            device=SimpleNamespace(index=index if cuda else None, type="cuda" if cuda else "cpu"),
            dtype=f"torch.{dtype}",
            shape=shape,
            is_contiguous=lambda: st == tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape))),
            stride=lambda: st,
            data_ptr=lambda: 0xABC,
            numel=lambda: int(np.prod(shape)),
            element_size=lambda: np.dtype(dtype).itemsize,
        )

    p = Param("inp", "array", "i32", (64,))
    w = "kernel 'acc' param 'inp'"
    assert check_torch_tensor(w, p, tensor(), 0) == (0xABC, 256)
    for t, message in [
        (tensor(cuda=False), "expected an array on cuda:0 (the GPU the kernel runs on), got one on the host (cpu)"),
        (tensor(index=1), "got one on cuda:1"),
        (tensor(dtype="float32"), "expected dtype int32 or uint32 (i32), got float32"),
        (tensor(shape=(8, 8)), "expected shape (64,), got (8, 8)"),
        (tensor(stride=(2,)), "expected a contiguous row-major array, got strides (2,) (in elements) for shape (64,)"),
    ]:
        with pytest.raises(SignatureError) as e:
            check_torch_tensor(w, p, t, 0)
        assert str(e.value).startswith(w) and message in str(e.value)


# region bulkred.align: arrays read with vector loads must be aligned (no GPU needed)

MISALIGNED = (
    "kernel 'acc' param 'inp': its address is 6 bytes past a 16-byte boundary (a view at a storage offset); "
    "the kernel reads it with 16-byte vector loads: pass an aligned array (a copy: x.clone() in torch, x.copy() in cupy)"
)


def test_align_attribute_is_read_and_round_trips_through_json():
    from bulkred_dialect.backend_ptx.signature import (
        signature_from_json,
        signature_to_json,
    )

    s = _contract(", bulkred.workspace = 64 : i64, bulkred.align = [16, 1]")
    assert s.align == (16, 1) and (s.alignment(0), s.alignment(1)) == (16, 1)
    assert signature_from_json(signature_to_json(s)) == s
    assert _contract("").align == () and _contract("").alignment(0) == 1
    record = signature_to_json(s)
    del record["align"]  # a record without it: no requirement
    assert signature_from_json(record).align == ()
    assert KernelSignature.of("k", ("a", "f32", (4,)), ("n", "u32"), align=[16, 1]).align == (16, 1)
    with pytest.raises(ValueError, match="kernel 'k': 'bulkred.align' has 1 entries but the kernel has 2 user parameters"):
        KernelSignature.of("k", ("a", "f32", (4,)), ("n", "u32"), align=[16])


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (", bulkred.align = 16 : i64", "'bulkred.align' must be an array of alignments in bytes, one per parameter (e.g. [16, 1]), got 16 : i64"),
        (", bulkred.align = [\"a\", 1, 1]", "'bulkred.align' must be an array of alignments in bytes"),
        (", bulkred.align = [16]", "'bulkred.align' has 1 entries but the kernel has 3 user parameters (one alignment in bytes per parameter)"),
        (", bulkred.workspace = 8 : i64, bulkred.align = [16, 1, 1]", "'bulkred.align' has 3 entries but the kernel has 2 user parameters"),
        (", bulkred.align = [12, 1, 1]", "'bulkred.align' entry 0 must be a power of two number of bytes >= 1, got 12"),
        (", bulkred.align = [16, 0, 1]", "'bulkred.align' entry 1 must be a power of two number of bytes >= 1, got 0"),
        (", bulkred.align = [1, 16, 1]", "'bulkred.align' entry 1 (16) names param 'n', a scalar (expected an array)"),
    ],
)
def test_align_attribute_is_validated(attrs, message):
    from bulkred_dialect.diagnostics import LocatedError

    with pytest.raises(LocatedError) as e:
        _contract(attrs)
    assert message in str(e.value) and "<input>:2:1" in str(e.value)


def test_misaligned_device_array_is_refused():
    from bulkred_dialect.backend_ptx.arrays import check_device_array

    p = Param("inp", "array", "i32", (64,))
    w = "kernel 'acc' param 'inp'"
    assert check_device_array(w, p, _view((64,), "int32", ptr=0x1010), 0, 16) == (0x1010, 256)
    assert check_device_array(w, p, _view((64,), "int32", ptr=0x1006), 0) == (0x1006, 256)  # no requirement
    with pytest.raises(SignatureError) as e:
        check_device_array(w, p, _view((64,), "int32", ptr=0x1006), 0, 16)
    assert str(e.value) == MISALIGNED


def _fake_tensor(ptr, shape=(64,), dtype="int32"):
    from types import SimpleNamespace

    return SimpleNamespace(
        is_cuda=True, device=SimpleNamespace(index=0, type="cuda"), dtype=f"torch.{dtype}", shape=shape,
        is_contiguous=lambda: True, stride=lambda: (1,), data_ptr=lambda: ptr, numel=lambda: int(np.prod(shape)),
        element_size=lambda: np.dtype(dtype).itemsize,
    )


def test_misaligned_torch_tensor_is_refused():
    from bulkred_dialect.backend_ptx.arrays import check_torch_tensor

    p = Param("inp", "array", "i32", (64,))
    w = "kernel 'acc' param 'inp'"
    assert check_torch_tensor(w, p, _fake_tensor(0x2000), 0, 16) == (0x2000, 256)
    with pytest.raises(SignatureError) as e:
        check_torch_tensor(w, p, _fake_tensor(0x2006), 0, 16)
    assert str(e.value) == MISALIGNED


def test_misaligned_device_array_is_refused_before_any_launch(fake_gpu):
    from dataclasses import replace

    k = runtime.compile_ptx(ACC_PTX, "sm_90a", [replace(ACC_SIG, align=(1, 16))]).kernel("acc")
    out = _FakeDeviceArray(0x1004, (64,))  # no requirement on out
    k(out, _FakeDeviceArray(0x2000, (64,)))
    assert [e[0] for e in fake_gpu.log][-1] == "launch"
    fake_gpu.log.clear()
    with pytest.raises(SignatureError) as e:
        k(out, _FakeDeviceArray(0x2006, (64,)))
    assert str(e.value) == MISALIGNED
    assert not any(e[0] in ("launch", "memset", "zeroed workspace") for e in fake_gpu.log)
    k(out, np.arange(64, dtype=np.int32))  # numpy: copied into an aligned buffer
    assert "launch" in [e[0] for e in fake_gpu.log]


class _FakeTorchTensor:
    """Just what the generated torch short paths touch (tests below): a device-0,
    contiguous tensor of 4-byte elements at address ``ptr``."""

    requires_grad = False
    is_cuda = True

    def __init__(self, ptr, shape=(64,), dtype="int32"):
        self.ptr, self.shape, self.dtype = ptr, tuple(shape), dtype

    def get_device(self):
        return 0

    def is_contiguous(self):
        return True

    def data_ptr(self):
        return self.ptr

    def element_size(self):
        return 4

    def numel(self):
        return int(np.prod(self.shape))

    def new_empty(self, shape):
        return _FakeTorchTensor(0x9000, shape, self.dtype)

    def expand(self, shape):
        return _FakeTorchTensor(self.ptr, shape, self.dtype)


def _fake_torch(monkeypatch):
    """A ``torch`` module of :class:`_FakeTorchTensor` (empty_like at 0x9100, stream 0x7)."""
    import sys
    from types import ModuleType, SimpleNamespace

    torch = ModuleType("torch")
    torch.Tensor = _FakeTorchTensor
    torch._C = SimpleNamespace(_cuda_getCurrentRawStream=lambda i: 0x7)
    torch.empty_like = lambda t, memory_format=None: _FakeTorchTensor(0x9100, t.shape, t.dtype)
    torch.contiguous_format = "contiguous"
    monkeypatch.setitem(sys.modules, "torch", torch)


def _short_path_gpu(monkeypatch):
    from types import SimpleNamespace

    launched = []
    monkeypatch.setattr(launch, "_cuda_launch", lambda: lambda s, config, kern, *a: launched.append(a))
    g = SimpleNamespace(broken=None, streams={0x7: "s"}, stream_for=lambda h: "s", memset_async=lambda *a: None)
    return g, launched


def test_torch_short_path_checks_alignment_only_where_needed(monkeypatch):
    """The generated short path of ``kernel(...)`` (on fake torch tensors): a param with
    an alignment wider than its element is checked (a mismatch goes to the full path,
    which raises); a param without one is not."""
    Tensor = _FakeTorchTensor
    _fake_torch(monkeypatch)
    g, launched = _short_path_gpu(monkeypatch)
    full_calls = []

    def full(*args, **options):
        full_calls.append(tuple(a.ptr for a in args))
        raise SignatureError("refused")

    x, out = Tensor(0x1000), Tensor(0x2000)
    fast = launch._TorchFastPath("acc", (x, out), g, "kern", "config", [], [], full, [16, 4])
    assert fast.kernel_call(Tensor(0x1010), Tensor(0x2004)) is not None  # out: 4 is its element size, unchecked
    assert launched == [(0x1010, 0x2004)] and not full_calls
    with pytest.raises(SignatureError, match="refused"):
        fast.kernel_call(Tensor(0x1008), out)
    assert full_calls == [(0x1008, 0x2000)] and len(launched) == 1


def _launcher(monkeypatch, args, **kw):
    _fake_torch(monkeypatch)
    g, launched = _short_path_gpu(monkeypatch)
    options = {"inputs": 1, "order": tuple(range(1, len(args))), "new": None, "pack": None, "zero": (), "align": [1] * len(args)}
    options.update(kw)
    return launch.bound_launcher("k", g, "kern", "config", [], args, **options), launched


def test_bound_launcher_makes_a_result_of_the_callers_shape(monkeypatch):
    """``Kernel.bind``'s launcher with ``new``: the result made per call in the caller's
    shape (a whole reduction's 0-d result for a (1,) destination), launched on its
    address; x is read at any address unless its param has a vector-load alignment,
    which a misaligned x misses: None, nothing launched."""
    Tensor = _FakeTorchTensor
    run, launched = _launcher(monkeypatch, [Tensor(0x1000, (64,)), Tensor(0x2000, (1,))], new=[()], align=[16, 4])
    got = run(Tensor(0x1040, (64,)), None)
    assert got.shape == () and got.ptr == 0x9100 and launched == [(0x1040, 0x9100)]
    assert run(Tensor(0x1008, (64,)), None) is None and len(launched) == 1
    plain, launched = _launcher(monkeypatch, [Tensor(0x1000, (64,)), Tensor(0x2000, (1,))], new=[()])
    assert plain(Tensor(0x1008, (64,)), None).shape == () and launched == [(0x1008, 0x9100)]
    # a result larger than SMALL_RESULT: made from one broadcast element, asked for dense
    import sys

    asked = []
    big = (launch.SMALL_RESULT // 4 + 1,)
    rows, launched = _launcher(monkeypatch, [Tensor(0x1000, (64, big[0])), Tensor(0x2000, big)], new=[big])
    sys.modules["torch"].empty_like = lambda t, memory_format=None: asked.append(memory_format) or Tensor(0x9200, t.shape)
    rows.__globals__["empty_like"] = sys.modules["torch"].empty_like
    assert rows(Tensor(0x1000, (64, big[0])), None).shape == big and asked == ["contiguous"]


def test_bound_launcher_taking_the_callers_arguments(monkeypatch):
    """``at`` (the row functions' kept calls): ``launcher(args)`` takes each input from the
    caller's tuple at its place (a weight after the outputs too) and returns
    ``refused(args)`` for a call it does not take (an input off its alignment, a broken
    GPU), having launched nothing."""
    Tensor = _FakeTorchTensor
    refusals = []
    params = [Tensor(0x1000, (4, 8)), Tensor(0x2000, (4, 8)), Tensor(0x3000, (8,))]
    run, launched = _launcher(monkeypatch, params, inputs=(0, 2), order=(1,), new=[(4, 8)], align=[16, 4, 4],
                              at=(0, 2), refused=lambda args: refusals.append(args) or "refused")
    x, w = Tensor(0x1040, (4, 8)), Tensor(0x3010, (8,))
    got = run((x, 99, w))
    assert got.shape == (4, 8) and launched == [(0x1040, got.ptr, 0x3010)] and not refusals
    odd = (Tensor(0x1004, (4, 8)), 99, w)
    assert run(odd) == "refused" and refusals == [odd] and len(launched) == 1
    run.__globals__["g"].broken = "a fault"
    assert run((x, 99, w)) == "refused" and len(refusals) == 2 and len(launched) == 1


def test_bound_launcher_of_two_results(monkeypatch):
    """Two results: ``order`` maps the caller's results to the kernel's params
    (max_with_indices' values are its aux, the third param); made ones are packed in
    the caller's order; given ones (``out``) must not overlap (None: the full path says
    why) and are returned as given; a zero_init param is zero-filled first."""
    Tensor = _FakeTorchTensor
    args = [Tensor(0x1000, (64,)), Tensor(0x2000, (4,)), Tensor(0x3000, (4,))]
    run, launched = _launcher(monkeypatch, args, order=(2, 1), new=[(4,), (4,)], pack=lambda a, b: ("pair", a, b))
    tag, a, b = run(Tensor(0x1100, (64,)), None)
    assert tag == "pair" and a.shape == b.shape == (4,) and launched == [(0x1100, 0x9100, 0x9100)]
    into, launched = _launcher(monkeypatch, args, order=(2, 1), zero=(1,))
    memsets = []
    into.__globals__["memset"] = lambda *a: memsets.append(a[:2])
    out = (Tensor(0x5000, (4,)), Tensor(0x6000, (4,)))
    assert into(Tensor(0x1200), out) is out
    assert launched == [(0x1200, 0x6000, 0x5000)] and memsets == [(0x6000, 16)]  # values (aux) last, zeroed dst
    assert into(Tensor(0x1200), (Tensor(0x5000, (4,)), Tensor(0x5008, (4,)))) is None and len(launched) == 1


def test_bind_checks_the_device_once(fake_gpu, monkeypatch):
    """``Kernel.bind`` takes CUDA torch tensors on the kernel's GPU (else None: the
    kernel's own call checks everything); its launcher passes the workspace last and
    zero-fills the zero_init output on torch's current stream."""
    Tensor = _FakeTorchTensor
    _fake_torch(monkeypatch)
    fake_gpu.streams = {0x7: fake_gpu.stream}
    k = runtime.compile_ptx(ACC_PTX, "sm_90a", [ACC_SIG]).kernel("acc")
    cpu = Tensor(0x2000)
    cpu.is_cuda = False
    assert k.bind([Tensor(0x1000), cpu]) is None and k.bind([Tensor(0x1000)]) is None
    assert k.bind([np.zeros(64, np.int32), Tensor(0x2000)]) is None
    run = k.bind([Tensor(0x1000), Tensor(0x2000)])  # param 0 the input, param 1 the output
    fake_gpu.log.clear()
    o = Tensor(0x2200)
    assert run(Tensor(0x1100), o) is o
    assert [e[0] for e in fake_gpu.log] == ["memset", "launch"] and fake_gpu.log[0] == ("memset", 0x1100, 256, "runtime")
    _, stream, kern, kargs = fake_gpu.log[1]
    assert (stream, kern, kargs[:2]) == ("runtime", "cu:acc", (0x1100, 0x2200))
    assert kargs[2].handle == k.module.workspace(fake_gpu, "acc", 256).handle  # the workspace, last


# endregion


# region A thread without a current context (torch's autograd thread, a user's thread)


class _ThreadContexts:
    """The driver's current context of each thread, as the runtime sees it through
    ``cuCtxGetCurrent`` and ``cuda.core.Device(i).set_current()`` (each call recorded with
    its thread), and the driver calls that need one: getting a kernel's function, a
    launch or zero-fill on the legacy default stream (torch's default stream). A thread
    starts without one, as a new thread does in CUDA."""

    def __init__(self):
        import threading

        self.local = threading.local()
        self.set_on: list[str] = []
        self.launches: list[tuple[str, bool]] = []  # (thread, whether it ran)

    def current(self) -> int:
        return getattr(self.local, "ctx", 0)

    def cuCtxGetCurrent(self):
        from cuda.bindings import driver

        return driver.CUresult.CUDA_SUCCESS, self.current()

    def Device(self, ordinal):
        import threading
        from types import SimpleNamespace

        def set_current():
            self.set_on.append(threading.current_thread().name)
            self.local.ctx = 0xC0 + ordinal

        return SimpleNamespace(set_current=set_current)

    def need(self, call):
        from bulkred_dialect.backend_ptx.errors import CudaError

        if not self.current():
            raise CudaError(call, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context")

    def launch(self, stream, config, kern, *args):
        import threading

        ran = bool(self.current())
        self.launches.append((threading.current_thread().name, ran))
        if not ran:  # cuda.core raises its own CUDAError
            raise RuntimeError("CUDA_ERROR_INVALID_CONTEXT: invalid device context")


class _ThreadedGpu(_FakeGpu):
    """The simulated GPU with the real :class:`Gpu`'s context handling."""

    ordinal = 0
    ensure_usable = Gpu.ensure_usable
    make_current = Gpu.make_current


@pytest.fixture
def contexts(monkeypatch):
    """The simulated GPU of :func:`fake_gpu` with per-thread contexts (the main thread's
    current, as after ``gpu()``): the module's real ``load_kernel`` over a simulated
    load, and a launch that needs a current context."""
    from types import SimpleNamespace

    import cuda.core
    from cuda.bindings import driver

    from bulkred_dialect.backend_ptx import loading

    c = _ThreadContexts()
    c.local.ctx = 0xC0
    g = _ThreadedGpu()
    g.streams = {0x7: g.stream}
    monkeypatch.setattr(driver, "cuCtxGetCurrent", c.cuCtxGetCurrent)
    monkeypatch.setattr(cuda.core, "Device", c.Device)
    monkeypatch.setattr(launch, "gpu", lambda: g)
    monkeypatch.setattr(runtime.CompiledModule, "_load", lambda self, g: SimpleNamespace(get_kernel=lambda n: f"cu:{n}"))
    monkeypatch.setattr(loading, "_load_function", lambda kern: c.need("cuKernelGetFunction"))
    monkeypatch.setattr(launch, "view_of", lambda a, handle, where: a.view)
    monkeypatch.setattr(launch, "_launch_config", lambda shape, shmem: "config")
    monkeypatch.setattr(launch, "_cuda_launch", lambda: c.launch)
    monkeypatch.setattr(g, "memset_async", lambda ptr, n, s: c.need("cuMemsetD8Async") or g.log.append(("memset", ptr)))
    c.gpu = g
    return c


def _on_a_new_thread(fn, *args):
    """``fn(*args)`` on a new thread (CUDA has not seen it): its result, or its exception raised here."""
    import threading

    box = {}

    def run():
        try:
            box["result"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = e

    t = threading.Thread(target=run, name="new thread")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def test_a_new_thread_gets_the_context_before_loading_and_launching(contexts):
    """A kernel called first on a thread without a current context (torch's autograd
    thread in a backward, a user's thread): the checked call makes the device's context
    current there once, then loads and launches; the main thread's, already current, is
    left alone. Loading alone (``load_kernel``) does the same."""
    k = runtime.compile_ptx(ACC_PTX, "sm_90a", [ACC_SIG]).kernel("acc")
    out, inp = _FakeDeviceArray(0x1000, (64,)), _FakeDeviceArray(0x2000, (64,))
    got = _on_a_new_thread(k, out, inp)
    assert got[0] is out and contexts.set_on == ["new thread"] and contexts.launches == [("new thread", True)]
    _on_a_new_thread(lambda: (k(out, inp), k(out, inp)))  # one set_current per thread
    k(out, inp)
    assert contexts.set_on == ["new thread"] * 2 and all(ran for _, ran in contexts.launches)
    mod = runtime.compile_ptx(ACC_PTX, "sm_90a", [ACC_SIG])
    assert _on_a_new_thread(mod.load_kernel, contexts.gpu, "acc") == "cu:acc"
    assert contexts.set_on == ["new thread"] * 3


def test_a_bound_launcher_on_a_new_thread_makes_the_context_current_after_a_failed_launch(contexts, monkeypatch):
    """``Kernel.bind``'s launcher and the torch short path check nothing per call: bound on
    the main thread and called on a thread without a context, the first launch fails, the
    device's context is made current there, and the zero-fill and launch run once more;
    the next call there launches at once. A launch that fails with a context current is
    raised (a CudaError naming the kernel) after one try."""
    from bulkred_dialect.backend_ptx.errors import CudaError

    Tensor = _FakeTorchTensor
    _fake_torch(monkeypatch)
    k = runtime.compile_ptx(ACC_PTX, "sm_90a", [ACC_SIG]).kernel("acc")
    run = k.bind([Tensor(0x1000), Tensor(0x2000)])
    contexts.gpu.log.clear()
    o = Tensor(0x2200)
    # the zero-fill (the kernel's zero_init) fails first there, then runs with the launch
    assert _on_a_new_thread(lambda: (run(Tensor(0x1100), o), run(Tensor(0x1100), o))) == (o, o)
    assert contexts.launches == [("new thread", True)] * 2
    assert contexts.set_on == ["new thread"] and contexts.gpu.log == [("memset", 0x1100)] * 2
    # without a zero-fill: the launch fails first
    fast = launch._TorchFastPath("acc", (Tensor(0x1000), Tensor(0x2000)), contexts.gpu, "kern", "config", [], [], None)
    assert _on_a_new_thread(fast.kernel_call, Tensor(0x1000), o)[1] is o
    assert contexts.set_on == ["new thread"] * 2 and contexts.launches[-2:] == [("new thread", False), ("new thread", True)]
    contexts.launches.clear()

    def broken(stream, config, kern, *args):
        contexts.launches.append(("main", False))
        raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")

    run.__globals__["launch"] = broken
    with pytest.raises(CudaError, match="launching kernel 'acc'.*CUDA_ERROR_ILLEGAL_ADDRESS"):
        run(Tensor(0x1100), o)
    assert contexts.launches == [("main", False)] and contexts.set_on == ["new thread"] * 2


# endregion


def test_the_process_gpu_is_the_current_contexts_device() -> None:
    """device.current_ordinal: the device of the context current on the thread (a rank's
    process that called torch.cuda.set_device(1) gets device 1), 0 where no context is
    current, where the driver says an error, or where it raises (the H200 x2's sharded
    norm found every rank on device 0, 2026-11-29)."""
    from types import SimpleNamespace

    from bulkred_dialect.backend_ptx.device import current_ordinal

    ok, bad = "ok", "bad"

    def fake(ctx, dev, err=ok, raises=False):
        def get_current():
            if raises:
                raise RuntimeError("no driver")
            return err, ctx
        return SimpleNamespace(CUresult=SimpleNamespace(CUDA_SUCCESS=ok), cuCtxGetCurrent=get_current,
                               cuCtxGetDevice=lambda: (ok, dev))

    assert current_ordinal(fake(0x1234, 1)) == 1
    assert current_ordinal(fake(0x1234, 3)) == 3
    assert current_ordinal(fake(0, 1)) == 0  # no context current
    assert current_ordinal(fake(0x1234, 1, err=bad)) == 0
    assert current_ordinal(fake(0x1234, 1, raises=True)) == 0
