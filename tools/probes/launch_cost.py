"""Where a small call's host time goes, step by step, on the GPU machine (needs torch
with CUDA): launch paths (cuda.core's ``launch`` against the driver's
``cuLaunchKernel`` through cuda.bindings), ways of allocating a small result tensor,
and the per-tensor checks of the short call path. Each figure is the median over
loops of many calls, per call, in microseconds (enqueue only: no synchronize inside).

    python3 tools/diag.py launch_cost
"""

from __future__ import annotations

import ctypes
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from call_overhead import loop_us  # noqa: E402


def main() -> None:
    import torch
    from cuda.bindings import driver
    from cuda.core import LaunchConfig, launch

    from bulkred_dialect.backend_ptx.loading import _load_function  # noqa: F401
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module, gpu, parse

    g = gpu()
    mod = compile_tile_module(parse((ROOT / "examples" / "seed_sum32.mlir").read_text()), g.arch)
    kern = mod.load_kernel(g, "test_func")
    A = torch.randn(32, device="cuda")
    B = torch.empty(1, device="cuda")
    h = torch._C._cuda_getCurrentRawStream(0)
    stream = g.stream_for(h)
    config = LaunchConfig(grid=(1, 1, 1), block=(1, 1, 1))
    a, b = A.data_ptr(), B.data_ptr()
    kh = kern.handle
    func = driver.cuKernelGetFunction(kh)[1] if isinstance(kh, driver.CUkernel) else driver.CUfunction(int(kh))
    cu_stream = driver.CUstream(h)
    vals = (ctypes.c_uint64 * 2)(a, b)
    ptrs = (ctypes.c_void_p * 2)(ctypes.addressof(vals), ctypes.addressof(vals) + 8)
    pp = ctypes.addressof(ptrs)
    tup = ((a, b), (ctypes.c_void_p, ctypes.c_void_p))
    fint = int(func)

    def drv_ptr():
        vals[0] = a
        vals[1] = b
        driver.cuLaunchKernel(func, 1, 1, 1, 1, 1, 1, 0, cu_stream, pp, 0)

    def drv_int():
        vals[0] = a
        vals[1] = b
        driver.cuLaunchKernel(fint, 1, 1, 1, 1, 1, 1, 0, h, pp, 0)

    def drv_tuple():
        driver.cuLaunchKernel(func, 1, 1, 1, 1, 1, 1, 0, cu_stream, tup, 0)

    rows = [
        ("cuda.core launch(stream, config, kern, a, b)", lambda: launch(stream, config, kern, a, b)),
        ("driver.cuLaunchKernel(CUfunction, CUstream, void** addr)", drv_ptr),
        ("driver.cuLaunchKernel(int, int, void** addr)", drv_int),
        ("driver.cuLaunchKernel(CUfunction, CUstream, (vals, types))", drv_tuple),
        ("torch.sum(A) (allocates, launches)", lambda: torch.sum(A)),
        ("torch.sum(A, 0, out=B0)", lambda: torch.sum(A, 0, out=B.view(()))),
        ("A.new_empty(1)", lambda: A.new_empty(1)),
        ("A.new_empty(())", lambda: A.new_empty(())),
        ("torch.empty(1, dtype, device)", lambda: torch.empty(1, dtype=A.dtype, device=A.device)),
        ("torch.empty_like(B)", lambda: torch.empty_like(B)),
        ("torch.empty_like(B.view(()))", lambda: torch.empty_like(B0)),
        ("torch._foreach_neg([B] * 16), per tensor", lambda: torch._foreach_neg(B16)),
        ("torch._foreach_neg([B] * 64), per tensor", lambda: torch._foreach_neg(B64)),
        ("torch._foreach_neg([B] * 256), per tensor", lambda: torch._foreach_neg(B256)),
        ("isinstance(A, Tensor)", lambda: isinstance(A, torch.Tensor)),
        ("A.dtype is d", lambda: A.dtype is d),
        ("A.shape == s", lambda: A.shape == s),
        ("A.get_device() == 0", lambda: A.get_device() == 0),
        ("A.is_contiguous()", lambda: A.is_contiguous()),
        ("A.data_ptr()", lambda: A.data_ptr()),
        ("A.is_cuda", lambda: A.is_cuda),
        ("A.numel()", lambda: A.numel()),
        ("torch._C._cuda_getCurrentRawStream(0)", lambda: torch._C._cuda_getCurrentRawStream(0)),
        ("lambda: None (loop floor)", lambda: None),
    ]
    B0 = B.view(())
    B16, B64, B256 = [B] * 16, [B] * 64, [B] * 256
    per = {"16": 16, "64": 64, "256": 256}
    d, s = A.dtype, A.shape
    torch.cuda.synchronize()
    print(f"{g.name} ({g.arch}), torch {torch.__version__}; enqueue cost per call, us (median of 15 loops of 2000)")
    for name, fn in rows:
        us = loop_us(fn, n=200 if "foreach" in name else 2000, loops=15)
        us /= next((v for k, v in per.items() if f"* {k})" in name), 1)
        torch.cuda.synchronize()
        print(f"  {name:62} {us:6.2f}")
    if "--steps-only" in sys.argv:
        return
    # call + synchronize, the variants interleaved (rounds of 200 calls each), so that a
    # drift of the host's speed during the run moves them all alike
    from cuda.core import ObjectCode

    kernel = mod.kernel("test_func")
    kernel(A, B)  # records the short path
    raw = ObjectCode.from_cubin(mod.cubin, name="raw").get_kernel("test_func")
    ours_config = kernel._configs[next(iter(kernel._configs))]
    fast = kernel.__call__  # the recorded short path (Kernel.__call__ is a property)
    sync = stream.sync
    import bulkred_dialect as bulkred
    from bulkred_dialect import api

    bulkred.sum(A)
    bulkred.sum(A)
    red = api.compile_reduction("sum", (32,), "float32", None, g.arch).kernel("bulkred_sum")
    new_last = red.bind([A, torch.empty(1, device="cuda")], new=[()])  # the API's launcher of bulkred.sum(A)
    rkern = red.module.load_kernel(g, red.name)
    rconfig = red._configs[next(iter(red._configs))]
    T = torch.Tensor

    def by_hand():
        # the short path's steps written out: checks, stream, pointers, launch
        if not (isinstance(A, T) and A.dtype is d and A.shape == s and A.get_device() == 0 and A.is_contiguous()):
            return
        if not (isinstance(B, T) and B.dtype is d and B.shape == sb and B.get_device() == 0 and B.is_contiguous()):
            return
        st = g.streams.get(torch._C._cuda_getCurrentRawStream(0))
        launch(st, config, kern, A.data_ptr(), B.data_ptr())

    sb = B.shape
    variants = [
        ("raw launch(stream, config, raw, a, b)", lambda: launch(stream, config, raw, a, b)),
        ("the short path written out by hand", by_hand),
        ("torch.empty_like(B); raw launch", lambda: (torch.empty_like(B), launch(stream, config, raw, a, b))),
        ("red.bind(...)'s launcher (A, None)", lambda: new_last(A, None)),
        ("bulkred.sum(A)", lambda: bulkred.sum(A)),
        ("red kernel(A, B)", lambda: red(A, B)),
    ] + ([] if red.signature.workspace or red.signature.zero_init else [
        ("launch(stream, rconfig, rkern, a, b) (red's kernel)", lambda: launch(stream, rconfig, rkern, a, b)),
    ]) + [
        ("raw launch again", lambda: launch(stream, config, raw, a, b)),
        ("launch(..., kern (ours, cuFuncLoad-ed), a, b)", lambda: launch(stream, config, kern, a, b)),
        ("launch(..., our LaunchConfig, raw, a, b)", lambda: launch(stream, ours_config, raw, a, b)),
        ("kernel's short path (A, B)", lambda: fast(A, B)),
        ("kernel(A, B)", lambda: kernel(A, B)),
        ("driver.cuLaunchKernel(void**)", drv_ptr),
        ("torch.sum(A)", lambda: torch.sum(A)),
    ]
    samples = {name: [] for name, _ in variants}
    for _ in range(15):
        for name, fn in variants:
            for _ in range(20):
                fn()
            sync()
            for _ in range(200):
                t = time.perf_counter()
                fn()
                sync()
                samples[name].append(time.perf_counter() - t)
    print("call + stream.sync, interleaved, median of 15 rounds x 200 calls, us:")
    base = statistics.median(samples[variants[0][0]])
    for name, _ in variants:
        m = statistics.median(samples[name])
        print(f"  {name:62} {m * 1e6:6.2f}  {m / base:5.2f}x")
    # the launch paths give the same result
    B.zero_()
    drv_ptr()
    torch.cuda.synchronize()
    print("cuLaunchKernel result matches:", torch.allclose(B, A.sum(), rtol=1e-5, atol=1e-5))


if __name__ == "__main__":
    main()
