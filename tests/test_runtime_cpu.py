"""The runtime without a GPU: NoGpuError with its reason, signature and launch-shape
errors raised before any GPU call, signatures read from IR, and every GPU test kernel
(tests/gpu/kernels.py) printed and assembled for sm_90a with nvJitLink."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from bulkred_dialect.backend_ptx import launch, runtime
from bulkred_dialect.backend_ptx.assemble import PtxasError, assemble
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
        (([1.0] * 64, 1.0), "kernel 'scale' param 'out': expected a numpy array (array of f32, shape (64,)), got list"),
        ((np.ones(64, np.float32), "2"), "kernel 'scale' param 'k': expected a scalar f32, got str"),
        ((np.ones(64, np.float32), np.int32(2)), "kernel 'scale' param 'k': expected dtype float32 (f32), got int32"),
        ((np.ones(64, np.float32), np.ones(2, np.float32)), "kernel 'scale' param 'k': expected a scalar f32, got an array of shape (2,)"),
    ],
)
def test_signature_errors_before_any_gpu_call(no_gpu_calls, args, message):
    with pytest.raises(SignatureError) as e:
        scale_kernel()(*args, grid=1, block=64)
    assert str(e.value) == message


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
    assert len(names) == len(set(names)) == 65
    failures = []
    for k in kernels:
        ptx = k.ptx("sm_90a")
        assert f".visible .entry {k.name}(" in ptx
        try:
            assemble(ptx, "sm_90a")
        except PtxasError as e:
            failures.append(f"{k.name}: {e}")
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
