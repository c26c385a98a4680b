"""Device arrays on the GPU: torch tensors and cupy arrays are passed by pointer and
written in place, on the caller's stream, without a synchronize; non-contiguous and
wrong-device inputs give the clear errors before any launch; the workspace and
zero_init contract (bulkred.workspace, bulkred.zero_init) on a tiny hand-written kernel;
bulkred.sum on device arrays."""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_runtime_cpu import ACC_PTX, ACC_SIG

from bulkred_dialect.backend_ptx import runtime
from gpu import cuda_torch

pytestmark = pytest.mark.gpu


_torch = cuda_torch  # torch with a CUDA device, else the test skips (tests/gpu/__init__.py)


def _cupy():
    try:
        import cupy
    except Exception as e:
        pytest.skip(f"cupy is not importable: {e}")
    return cupy


def acc_ptx() -> str:
    return ACC_PTX.replace(".target sm_90a", f".target {runtime.current_arch()}")


def acc():
    """out[i] = inp[i] (out zero-filled by the runtime, plus the workspace, which must be zero)."""
    return runtime.compile_ptx(acc_ptx(), runtime.current_arch(), [ACC_SIG]).kernel("acc")


# region torch


def test_torch_in_place_no_copy(rng):
    torch = _torch()
    k = acc()
    inp = torch.tensor(rng.integers(-(1 << 30), 1 << 30, 64, dtype=np.int32), device="cuda")
    out = torch.full((64,), 12345, dtype=torch.int32, device="cuda")  # zero_init: overwritten
    ptr = out.data_ptr()
    got = k(out, inp)
    assert got[0] is out and got[1] is inp
    torch.cuda.current_stream().synchronize()
    assert out.data_ptr() == ptr
    assert torch.equal(out, inp), rng
    k(out, inp)  # zero-filled again, and the workspace was left zeroed
    torch.cuda.current_stream().synchronize()
    assert torch.equal(out, inp), rng


def test_torch_seed_kernel_float32(rng):
    """The seed tile-level kernel (sum of 32 floats into B[0]) on torch tensors."""
    torch = _torch()
    from pathlib import Path

    from bulkred_dialect.reference import bits, reduce_local

    root = Path(__file__).resolve().parents[2]
    mod = runtime.compile_tile_module(runtime.parse((root / "examples" / "seed_sum32.mlir").read_text()))
    a = rng.standard_normal(32).astype(np.float32)
    A = torch.tensor(a, device="cuda")
    B = torch.full((1,), float("nan"), device="cuda")
    mod.kernel("test_func")(A, B, sync=True)
    assert np.array_equal(bits(B.cpu().numpy()), bits(reduce_local("sum", a))), rng


def test_torch_non_contiguous_is_refused():
    torch = _torch()
    k = acc()
    inp = torch.arange(128, dtype=torch.int32, device="cuda")[::2]
    with pytest.raises(runtime.SignatureError) as e:
        k(torch.zeros(64, dtype=torch.int32, device="cuda"), inp)
    assert str(e.value).startswith(
        "kernel 'acc' param 'inp': expected a contiguous row-major array, got strides (2,) (in elements) for shape (64,)"
    )


def test_torch_wrong_device_dtype_shape_are_refused():
    torch = _torch()
    k = acc()
    out = torch.zeros(64, dtype=torch.int32, device="cuda")
    with pytest.raises(runtime.SignatureError, match=r"param 'inp': expected an array on cuda:0 .* got one on the host \(cpu\)"):
        k(out, torch.zeros(64, dtype=torch.int32))
    with pytest.raises(runtime.SignatureError, match=r"param 'inp': expected dtype int32 or uint32 \(i32\), got float32"):
        k(out, torch.zeros(64, device="cuda"))
    with pytest.raises(runtime.SignatureError, match=r"param 'inp': expected shape \(64,\), got \(8, 8\)"):
        k(out, torch.zeros((8, 8), dtype=torch.int32, device="cuda"))
    if torch.cuda.device_count() > 1:
        with pytest.raises(runtime.SignatureError, match="expected an array on cuda:0 .* got one on cuda:1"):
            k(out, torch.zeros(64, dtype=torch.int32, device="cuda:1"))


@pytest.mark.parametrize("call", ["first", "fast"])
def test_torch_current_stream_is_honoured(call):
    """A spin kernel (torch.cuda._sleep, about a second) then a copy into inp, both on
    a side stream; the kernel launched under that stream must see the copy (on any
    other stream it would read inp before the copy: zeros), and the call must not wait:
    the side stream is still busy when it returns. ``first``: the first, fully checked
    call of the kernel; ``fast``: a later call, on the recorded short path."""
    torch = _torch()
    k = acc()
    inp = torch.zeros(64, dtype=torch.int32, device="cuda")
    out = torch.zeros(64, dtype=torch.int32, device="cuda")
    want = torch.arange(1, 65, dtype=torch.int32, device="cuda")
    k.module.load_kernel(runtime.gpu(), k.name)  # loading may wait for the device: not part of the call
    if call == "fast":
        k(out, inp, sync=True)
        assert k.recorded
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000_000)  # cycles: about a second at 2 GHz
        inp.copy_(want)
        assert not side.query(), "the side stream finished its spin before the call: cannot judge"
        t0 = time.perf_counter()
        k(out, inp)
        call_ms = (time.perf_counter() - t0) * 1e3
        busy_after = not side.query()
    side.synchronize()
    assert torch.equal(out, want)
    assert busy_after, f"the call waited for the stream (it took {call_ms:.1f} ms)"
    assert call_ms < 100, f"the call took {call_ms:.1f} ms"


def test_torch_fast_path_keeps_every_check_and_zero_init(rng):
    """After one checked call on torch tensors the next calls take the short path
    (``Kernel.recorded``): it must still zero-fill ``out`` (zero_init), leave the workspace
    zeroed, read fresh data, and send every argument it cannot take through the full
    checks, with their messages."""
    torch = _torch()
    k = acc()
    out = torch.empty(64, dtype=torch.int32, device="cuda")
    inp = torch.tensor(rng.integers(-(1 << 30), 1 << 30, 64, dtype=np.int32), device="cuda")
    k(out, inp)
    assert k.recorded
    for _ in range(3):
        out.fill_(777)  # not zero: the kernel adds into out
        inp = torch.tensor(rng.integers(-(1 << 30), 1 << 30, 64, dtype=np.int32), device="cuda")
        assert k(out, inp) == (out, inp)
        torch.cuda.current_stream().synchronize()
        assert torch.equal(out, inp), rng
    with pytest.raises(runtime.SignatureError, match=r"param 'inp': expected a contiguous row-major array"):
        k(out, torch.arange(128, dtype=torch.int32, device="cuda")[::2])
    with pytest.raises(runtime.SignatureError, match=r"param 'inp': expected dtype int32 or uint32 \(i32\), got float32"):
        k(out, torch.zeros(64, device="cuda"))
    with pytest.raises(runtime.SignatureError, match=r"param 'inp': expected shape \(64,\), got \(65,\)"):
        k(out, torch.zeros(65, dtype=torch.int32, device="cuda"))
    with pytest.raises(runtime.SignatureError, match=r"param 'inp': expected an array on cuda:0 .* the host \(cpu\)"):
        k(out, torch.zeros(64, dtype=torch.int32))
    # arity and keywords after the short path was recorded: the full call and its errors
    with pytest.raises(runtime.SignatureError, match=r"kernel 'acc' takes 2 arguments \(out, inp\), got 1"):
        k(out)
    with pytest.raises(runtime.SignatureError, match=r"kernel 'acc' takes 2 arguments \(out, inp\), got 3"):
        k(out, inp, inp)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        k(out, inp, nope=1)
    out.fill_(3)
    assert k(out, inp, sync=True) == (out, inp)  # keywords: the full path, which synchronizes
    assert torch.equal(out, inp)
    host = rng.integers(0, 100, 64, dtype=np.int32)  # numpy: copied in and out
    got_out, got_inp = k(np.full(64, 9, np.int32), host)
    assert (got_out == host).all()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # the fast path reads torch's current stream on each call
        out.fill_(5)
        k(out, inp)
    side.synchronize()
    assert torch.equal(out, inp)


def test_explicit_stream_argument():
    torch = _torch()
    k = acc()
    s = torch.cuda.Stream()
    inp = torch.arange(64, dtype=torch.int32, device="cuda")
    out = torch.empty(64, dtype=torch.int32, device="cuda")
    torch.cuda.synchronize()
    k(out, inp, stream=s)
    s.synchronize()
    assert torch.equal(out, inp)


# endregion

# region cupy


def test_cupy_in_place_and_errors(rng):
    cupy = _cupy()
    k = acc()
    inp = cupy.asarray(rng.integers(0, 1 << 30, 64, dtype=np.int32))
    out = cupy.full(64, 7, dtype=cupy.int32)
    with cupy.cuda.Stream(non_blocking=True) as s:
        got = k(out, inp)
        assert got[0] is out
    s.synchronize()
    assert bool((out == inp).all()), rng
    with pytest.raises(runtime.SignatureError, match="param 'inp': expected a contiguous row-major array, got strides \\(2,\\)"):
        k(out, cupy.arange(128, dtype=cupy.int32)[::2])
    with pytest.raises(runtime.SignatureError, match="param 'out': expected dtype int32 or uint32 \\(i32\\), got float64"):
        k(cupy.zeros(64), inp)


def test_cuda_core_buffer_with_explicit_stream(rng):
    """A cuda.core Buffer speaks DLPack (as bytes); a kernel without a signature takes it as is."""
    from cuda.core import Device

    g = runtime.gpu()
    mod = runtime.compile_ptx(acc_ptx(), g.arch)  # no signature: no workspace given by the runtime
    dev = Device(g.device.device_id)
    s = dev.create_stream()
    bufs = [dev.allocate(256, stream=s) for _ in range(3)]
    a = rng.integers(0, 1 << 30, 64, dtype=np.int32)
    from cuda.bindings import driver

    s.sync()
    driver.cuMemcpyHtoD(driver.CUdeviceptr(int(bufs[1].handle)), a.ctypes.data, 256)
    driver.cuMemsetD8(driver.CUdeviceptr(int(bufs[0].handle)), 0, 256)
    driver.cuMemsetD8(driver.CUdeviceptr(int(bufs[2].handle)), 0, 256)
    mod.kernel("acc")(*bufs, grid=1, block=64, stream=s, sync=True)
    got = np.zeros(64, np.int32)
    driver.cuMemcpyDtoH(got.ctypes.data, driver.CUdeviceptr(int(bufs[0].handle)), 256)
    assert np.array_equal(got, a), rng


# endregion

# region numpy and the contract


def test_numpy_zero_init_and_workspace(rng):
    k = acc()
    inp = rng.integers(-(1 << 30), 1 << 30, 64, dtype=np.int32)
    poisoned = np.full(64, 0x5EED, np.int32)
    for _ in range(3):  # the workspace stays zero between launches
        out, got_inp = k(poisoned, inp)
        assert np.array_equal(out, inp), rng
        assert np.array_equal(got_inp, inp)
    assert (poisoned == 0x5EED).all(), "numpy arguments are copies"


# endregion

# region The reduction API


def test_api_sum_on_torch(rng):
    torch = _torch()
    import bulkred_dialect as bulkred
    from bulkred_dialect.reference import bits

    a = rng.standard_normal(1000).astype(np.float32)
    x = torch.tensor(a, device="cuda")
    out = torch.full((), float("nan"), device="cuda")  # a whole reduction is 0-d, as torch.sum's
    r = bulkred.sum(x, out=out)
    assert r is out
    torch.cuda.current_stream().synchronize()
    assert bulkred.sum(x, explain=True).endswith("chosen: grid_full")
    want = a.astype(np.float64).sum()
    assert abs(float(out.cpu()) - want) <= 1e-5 * np.abs(a).sum(), rng
    again = bulkred.sum(x)  # grid_full is deterministic: the same bits again
    assert np.array_equal(bits(again.cpu().numpy()), bits(out.cpu().numpy())), rng
    y = bulkred.max(x)
    assert isinstance(y, torch.Tensor) and y.shape == () and y.device == x.device
    assert float(y.cpu()) == float(a.max())


def test_api_repeated_torch_calls(rng):
    """Repeated bulkred calls (the second and later take the recorded short path) give
    fresh results for each input, per kind, shape, dtype and axis, and bad arguments
    still give the API's errors."""
    torch = _torch()
    import bulkred_dialect as bulkred

    for shape, axis in [((1000,), None), ((33, 70), 0), ((33, 70), 1), ((33, 70), -1)]:
        for _ in range(3):
            a = rng.standard_normal(shape).astype(np.float32)
            x = torch.tensor(a, device="cuda")
            got = bulkred.max(x, axis=axis).cpu().numpy()
            want = a.max() if axis is None else a.max(axis=axis)
            assert np.array_equal(got.reshape(-1), np.asarray(want, np.float32).reshape(-1)), (shape, axis)
    for _ in range(3):
        ai = rng.integers(-1000, 1000, 4097, dtype=np.int32)
        out = torch.empty((), dtype=torch.int32, device="cuda")  # out's dtype: an int32 sum
        assert bulkred.sum(torch.tensor(ai, device="cuda"), out=out) is out
        assert int(out.cpu()) == int(ai.sum())

    from bulkred_dialect import api

    assert api.call_key("max", x, -1, False, {}, None) in api.CALLS  # the call's launcher, kept under its key
    for _ in range(3):  # whole max again and again: the short path that makes the result
        a = rng.standard_normal(1000).astype(np.float32)
        y = bulkred.max(torch.tensor(a, device="cuda"))
        assert y.shape == () and float(y.cpu()) == float(a.max())
    with pytest.raises(bulkred.ReductionError, match="a complex64 x is not supported"):
        bulkred.max(torch.zeros(1000, dtype=torch.complex64, device="cuda"))
    with pytest.raises(runtime.SignatureError, match="expected an array on cuda:0"):
        bulkred.max(torch.zeros(1000))  # like the recorded call, but on the host
    x = torch.zeros(1000, device="cuda")
    with pytest.raises(bulkred.ReductionError, match=r"'out' has shape \(2,\), expected \(\)"):
        bulkred.max(x, out=torch.empty(2, device="cuda"))
    with pytest.raises(bulkred.ReductionError, match=r"'out' has dtype int32, expected float32"):
        bulkred.max(x, out=torch.empty((), dtype=torch.int32, device="cuda"))


def test_api_on_cupy_and_numpy(rng):
    import bulkred_dialect as bulkred

    a = rng.integers(-1000, 1000, 256, dtype=np.int32)
    s = bulkred.sum(a)  # an int32 sum in int64, as numpy's
    assert s.shape == () and s.dtype == np.int64 and int(s) == int(a.sum())
    assert int(bulkred.xor(a)) == int(np.bitwise_xor.reduce(a))
    cupy = _cupy()
    y = bulkred.min(cupy.asarray(a))
    assert y.shape == () and int(y.get()) == int(a.min())


# endregion
