"""The runtime on a GPU: device and arch detection, cubin loading, checks before
launch, cluster launches with ``grid`` counted in CTAs, event timing, and kernels loaded
and launched first on a thread without a current CUDA context (a user's thread, torch's
autograd thread)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect.backend_ptx import runtime
from gpu import cuda_torch
from gpu import kernels as K
from gpu.models import same_bits

pytestmark = pytest.mark.gpu


def test_device_and_arch():
    g = runtime.gpu()
    major, minor = g.compute_capability
    assert g.arch == f"sm_{major}{minor}a"
    assert runtime.gpu_unavailable_reason() is None


def test_loaded_from_cubin_and_arrays_round_trip(rng):
    tk = K.bulk_s2g_kernel(64)
    mod = tk.compile()
    inp = rng.integers(1, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(64, np.uint32)
    got_out, got_inp = mod.kernel(tk.name)(out, inp)
    assert mod.loaded_from == "cubin"
    assert same_bits(got_out, inp) and same_bits(got_inp, inp)
    assert not same_bits(out, inp), "the caller's array must not be written"


def test_signature_checked_before_launch():
    tk = K.bulk_s2g_kernel(64)
    k = tk.kernel()
    with pytest.raises(runtime.SignatureError, match="param 'inp': expected shape \\(64,\\), got \\(63,\\)"):
        k(np.zeros(64, np.uint32), np.zeros(63, np.uint32))
    with pytest.raises(runtime.SignatureError, match="param 'out': expected dtype uint32"):
        k(np.zeros(64, np.float32), np.zeros(64, np.uint32))


def test_cluster_launch_counts_ctas(rng):
    """Four CTAs in clusters of two each reduce their own row into dst: with grid read
    as clusters, eight CTAs would run and read past src."""
    tk = K.cp_reduce_global_kernel("add", "u32", 64, ctas=4)
    d = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    s = rng.integers(0, 1 << 32, (4, 64), dtype=np.uint64).astype(np.uint32)
    out, _ = tk.run(d, s, grid=4, cluster=2)
    assert same_bits(out, d + s.sum(axis=0, dtype=np.uint32))


def test_event_timing():
    k = K.bulk_s2g_kernel(64).kernel()
    times = k.time(np.zeros(64, np.uint32), np.ones(64, np.uint32), repeat=5, warmup=1)
    assert len(times) == 5 and all(0 < t < 1000 for t in times)


def test_non_portable_cluster_of_16(rng):
    """A 16-CTA cluster is above the portable limit of 8: the runtime opts the kernel in
    (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) before launching. 15 peers
    reduce into CTA 0's shared tile."""
    n = 64
    d = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    s = rng.integers(0, 1 << 32, (15, n), dtype=np.uint64).astype(np.uint32)
    out, _, _ = K.cp_reduce_cluster_kernel("add", "u32", n, 16).run(np.full(n, 0xDEADBEEF, np.uint32), d, s)
    assert same_bits(out, d + s.sum(axis=0, dtype=np.uint32))


# region A thread without a current context


def _current_context() -> int:
    from cuda.bindings import driver

    err, ctx = driver.cuCtxGetCurrent()
    assert err == driver.CUresult.CUDA_SUCCESS
    return int(ctx)


def _on_a_new_thread(fn):
    """``fn()`` on a new thread, which must have no current context when it starts (as
    CUDA leaves a thread it has not seen): its result, or its exception raised here."""
    box = {}

    def run():
        try:
            box["before"] = _current_context()
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    assert box["before"] == 0, "the new thread had a current context: the test shows nothing"
    return box["result"]


def _counting(monkeypatch):
    """The GPU's make_current, counting the times it made the context current (none was)."""
    g = runtime.gpu()
    made = []
    real = type(g).make_current

    def make_current():
        did = real(g)
        made.append(did)
        return did

    monkeypatch.setattr(g, "make_current", make_current)
    return made


def test_a_new_kernel_loads_and_launches_first_on_a_new_thread(rng, monkeypatch):
    """A module never loaded, its kernel called first on a new thread (numpy arrays: the
    checked call, copies in and out): the device's context is made current there, then
    the module loaded (cuKernelGetFunction failed with CUDA_ERROR_INVALID_CONTEXT)."""
    made = _counting(monkeypatch)
    tk = K.bulk_s2g_kernel(64)
    mod = runtime.compile_ptx(tk.ptx(), runtime.gpu().arch, [tk.signature])  # a new CompiledModule
    assert mod.loaded_from is None
    inp = rng.integers(1, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    got_out, _ = _on_a_new_thread(lambda: mod.kernel(tk.name)(np.zeros(64, np.uint32), inp))
    assert same_bits(got_out, inp) and mod.loaded_from == "cubin" and True in made


def test_a_bound_launcher_on_a_new_thread(monkeypatch, capsys):
    """``bulkred.sum``'s launcher (Kernel.bind's, made on the main thread) called on a new
    thread with ``out=`` (no torch allocation there: nothing of torch's makes a context
    current first), on torch's default stream: the launch runs, and its result is torch's."""
    torch = cuda_torch()
    made = _counting(monkeypatch)
    x = torch.arange(4099, device="cuda", dtype=torch.float32)
    out = torch.empty((), device="cuda")
    bulkred.sum(x, out=out)  # the key's launcher, made here
    torch.cuda.synchronize()
    out.zero_()
    assert _on_a_new_thread(lambda: bulkred.sum(x, out=out)) is out
    torch.cuda.synchronize()
    assert out.item() == 4099 * 4098 / 2
    with capsys.disabled():  # what the driver did: a launch on the legacy stream without a context fails or not
        print(f"\n[bound launcher on a new thread: the context made current there {made.count(True)} time(s)]")


def test_a_backward_kernel_loads_on_torchs_autograd_thread_without_a_context(monkeypatch, capsys):
    """A row function's backward kernel, never loaded, on torch's autograd thread with no
    current context (a node before it in the backward unbinds the thread's, as a thread
    torch's own kernels have not run on yet has none): the rows random differential's draw
    11 (log_softmax bfloat16, padded rows) failed there with CUDA_ERROR_INVALID_CONTEXT."""
    torch = cuda_torch()
    from cuda.bindings import driver

    made = _counting(monkeypatch)
    unbound = []

    class Unbind(torch.autograd.Function):
        @staticmethod
        def forward(ctx, y):
            return y.view_as(y)

        @staticmethod
        def backward(ctx, g):
            (err,) = driver.cuCtxSetCurrent(driver.CUcontext(0))
            assert err == driver.CUresult.CUDA_SUCCESS
            unbound.append(_current_context())
            return g

    base = torch.randn(37, 13 + 128, device="cuda", dtype=torch.bfloat16)
    x = base[:, :13].detach().requires_grad_(True)
    y = Unbind.apply(bulkred.log_softmax(x))
    g = torch.randn_like(y)
    y.backward(g)
    want = torch.ops.aten._log_softmax_backward_data(g.float(), y.detach().float(), -1, torch.float32)
    torch.testing.assert_close(x.grad.float(), want, rtol=2e-2, atol=2e-2)
    assert unbound == [0]
    with capsys.disabled():
        print(f"\n[backward on torch's autograd thread: the context made current there {made.count(True)} time(s)]")


# endregion
