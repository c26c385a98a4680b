"""Cost of one call from Python, on the GPU machine (needs torch with CUDA).

Measured in one run, each the median over many calls of the wall clock around
call + stream synchronize (and around N back-to-back calls / N), the cases taking turns
in rounds so that a drift of the host's speed moves them alike; the raw launch is
timed twice, and the gap between its two figures is the run's noise:

* ``kernel(A, B)``: the seed kernel (sum of 32 floats) compiled with
  ``compile_tile_module``, called on torch tensors (no copy, torch's stream);
* raw ``cuda.core.launch`` of the same cubin on the same tensors and stream;
* raw ``cuda.bindings.driver.cuLaunchKernel`` of that kernel (its ``CUfunction``), the
  parameters prepared once (a ``void **`` array of the addresses of two 64-bit values,
  the pointers written per call) and the stream's ``CUstream`` made once: the lower
  layer's cost beside cuda.core's (whose launch is one ``cuLaunchKernelEx``);
* ``torch.sum`` of the same 32 elements, allocating and with ``out=``;
* ``bulkred.sum(A, out=B0)`` and ``bulkred.sum(A)`` (the reduction API; its result is
  0-d, made in the caller's shape by the call's launcher);
* calls with options, beside torch's: ``vector_norm(A, ord=inf)``, ``aminmax(A)`` (a
  pair), ``std_mean(A, correction=1)``;
* the first ``bulkred.sum`` in a new process: cold (empty cache, compiles) and warm
  (the disk cache of the cold run), each in a subprocess with its own
  ``BULKRED_CACHE_DIR``, CUDA and torch initialised before the timed call.

Prints a table; writes it to ``$OUT/call_overhead.txt`` when ``OUT`` is set::

    python benchmarks/call_overhead.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIRST_CALL = r"""
import json, sys, time
import torch
x = torch.randn(32, device="cuda")
torch.cuda.synchronize()
from bulkred_dialect.backend_ptx.runtime import gpu
gpu()  # CUDA context and the runtime's stream, as in any process that ran a kernel
import bulkred_dialect as bulkred
t = time.perf_counter()
y = bulkred.sum(x)
torch.cuda.current_stream().synchronize()
first = time.perf_counter() - t
from bulkred_dialect.backend_ptx.cache import CACHE
print(json.dumps({"first_s": first, "stats": CACHE.stats}))
"""


def interleaved(cases, sync, calls: int, rounds: int = 15) -> list[tuple[str, float, float]]:
    """(name, median us of call + synchronize, back-to-back us per call) of each case.

    The cases take turns: ``rounds`` rounds, each timing ``calls // rounds`` calls of
    every case in a row (after a short warm-up of it), so that a drift of the host's
    speed during the run moves every case alike. "Back-to-back" is, per round, that
    many calls then one synchronize, per call; its median over the rounds."""
    per_round = max(calls // rounds, 1)
    samples: dict[str, list[float]] = {name: [] for name, _ in cases}
    b2b: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(rounds):
        for name, fn in cases:
            for _ in range(20):
                fn()
            sync()
            for _ in range(per_round):
                t = time.perf_counter()
                fn()
                sync()
                samples[name].append(time.perf_counter() - t)
            t = time.perf_counter()
            for _ in range(per_round):
                fn()
            sync()
            b2b[name].append((time.perf_counter() - t) / per_round)
    return [(n, statistics.median(samples[n]) * 1e6, statistics.median(b2b[n]) * 1e6) for n, _ in cases]


def loop_us(fn, n: int = 1000, loops: int = 20) -> float:
    """Median over ``loops`` of the time of ``n`` calls of ``fn``, per call, in us."""
    times = []
    for _ in range(loops):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t) / n)
    return statistics.median(times) * 1e6


def events_us(torch, fn, n: int = 200, loops: int = 10) -> float:
    times = []
    for _ in range(loops):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(50_000_000)  # the launches queue up behind a spin: the GPU runs them back to back
        start.record()
        for _ in range(n):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / n)
    return statistics.median(times)


def driver_launch(kern, stream_handle: int):
    """A launch of cuda.core kernel ``kern`` (two pointer parameters, one CTA of one
    thread) through ``cuda.bindings.driver.cuLaunchKernel``, everything but the two
    pointer values prepared here: its ``CUfunction`` in the current context, the
    ``CUstream``, the ``void **`` parameter array. Returns ``(launch, holder)``: write
    the pointers into ``holder.values[0:2]``, then call ``launch()``."""
    import ctypes
    from types import SimpleNamespace

    from cuda.bindings import driver

    h = kern.handle
    if isinstance(h, driver.CUkernel):
        err, fn = driver.cuKernelGetFunction(h)
        if err:
            raise SystemExit(f"cuKernelGetFunction: {err.name}")
    else:
        fn = driver.CUfunction(int(h))
    values = (ctypes.c_uint64 * 2)()
    pointers = (ctypes.c_void_p * 2)(ctypes.addressof(values), ctypes.addressof(values) + 8)
    holder = SimpleNamespace(values=values, pointers=pointers)
    params, cs, cu = ctypes.addressof(pointers), driver.CUstream(stream_handle), driver.cuLaunchKernel

    def launch() -> None:
        err = cu(fn, 1, 1, 1, 1, 1, 1, 0, cs, params, 0)[0]
        if err:
            raise SystemExit(f"cuLaunchKernel: {err.name}")

    return launch, holder


def first_call(cache_dir: str) -> dict:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "BULKRED_CACHE_DIR": cache_dir, "PYTHONPATH": path}
    r = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"first-call subprocess failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--processes", type=int, default=3, help="cold/warm subprocess pairs (0: none)")
    args = ap.parse_args()

    import torch
    from cuda.core import LaunchConfig, ObjectCode, launch

    import bulkred_dialect as bulkred
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module, gpu, parse

    g = gpu()
    mod = compile_tile_module(parse((ROOT / "examples" / "seed_sum32.mlir").read_text()), g.arch)
    kernel = mod.kernel("test_func")
    A = torch.randn(32, device="cuda")
    B = torch.empty(1, device="cuda")
    torch_stream = torch.cuda.current_stream()
    stream = g.stream_for(int(torch_stream.cuda_stream))
    sync = stream.sync

    raw = ObjectCode.from_cubin(mod.cubin, name="raw").get_kernel("test_func")
    config = LaunchConfig(grid=(1, 1, 1), block=(1, 1, 1))
    a_ptr, b_ptr = A.data_ptr(), B.data_ptr()
    cu_launch, direct = driver_launch(raw, int(torch_stream.cuda_stream))

    def raw_driver() -> None:
        direct.values[0] = a_ptr  # what a launcher would write per call
        direct.values[1] = b_ptr
        cu_launch()

    from bulkred_dialect import api

    kernel(A, B)  # the first, fully checked call records the short path
    red = api.compile_reduction("sum", (32,), "float32", None, g.arch).kernel("bulkred_sum")
    B0 = B.view(())  # torch.sum's result is 0-d
    cases = [
        ("raw cuda.core launch (same cubin)", lambda: launch(stream, config, raw, a_ptr, b_ptr)),
        ("raw cuLaunchKernel, prebuilt void**", raw_driver),
        ("kernel(A, B) on torch tensors", lambda: kernel(A, B)),
        ("torch.sum of 32 elements", lambda: torch.sum(A)),
        ("torch.sum(A, 0, out=B)", lambda: torch.sum(A, 0, out=B0)),
        ("its reduction kernel(A, B), called directly", lambda: red(A, B)),
        ("bulkred.sum(A, out=B0) (B0 0-d)", lambda: bulkred.sum(A, out=B0)),
        ("bulkred.sum(A)", lambda: bulkred.sum(A)),
        ("torch.linalg.vector_norm(A, inf)", lambda: torch.linalg.vector_norm(A, math.inf)),
        ("bulkred.vector_norm(A, ord=inf)", lambda: bulkred.vector_norm(A, ord=math.inf)),
        ("torch.aminmax(A)", lambda: torch.aminmax(A)),
        ("bulkred.aminmax(A)", lambda: bulkred.aminmax(A)),
        ("torch.std_mean(A) (correction 1)", lambda: torch.std_mean(A)),
        ("bulkred.std_mean(A, correction=1)", lambda: bulkred.std_mean(A, correction=1)),
        ("raw cuda.core launch, again (the noise)", lambda: launch(stream, config, raw, a_ptr, b_ptr)),
    ]
    rows = interleaved(cases, sync, args.calls)
    kernel(A, B, sync=True)
    assert torch.allclose(B, A.sum(), rtol=1e-5, atol=1e-5), (B, A.sum())
    B.fill_(0.0)
    raw_driver()  # the driver's launch wrote the same sum
    sync()
    assert torch.allclose(B, A.sum(), rtol=1e-5, atol=1e-5), ("cuLaunchKernel", B, A.sum())
    key = api.call_key("sum", A, None, False, {}, None)  # bulkred.sum(A)'s key: its launcher in api.CALLS
    assert kernel.recorded and red.recorded and key in api.CALLS
    launcher = api.CALLS[key][0]

    cold, warm = [], []
    for _ in range(args.processes):
        with tempfile.TemporaryDirectory(prefix="bulkred-bench-cache-") as d:
            c = first_call(d)
            w = first_call(d)
            assert c["stats"]["writes"] >= 1 and w["stats"]["disk_hits"] >= 1, (c, w)
            cold.append(c["first_s"] * 1e3)
            warm.append(w["first_s"] * 1e3)

    # where a kernel call's time goes: each step of the short path alone, in a loop
    T, d, sa, sb = torch.Tensor, A.dtype, A.shape, B.shape
    dev = A.device
    raw_stream = torch._C._cuda_getCurrentRawStream
    steps = [
        ("torch._C._cuda_getCurrentRawStream", lambda: raw_stream(0)),
        ("torch.cuda.current_stream().cuda_stream", lambda: torch.cuda.current_stream().cuda_stream),
        (
            "checks of A and B (type, dtype, shape, device, contiguous)",
            lambda: isinstance(A, T) and A.dtype is d and A.shape == sa and A.get_device() == 0 and A.is_contiguous()
            and isinstance(B, T) and B.dtype is d and B.shape == sb and B.get_device() == 0 and B.is_contiguous(),
        ),
        ("kernel(A, B): its recorded short path (launches)", lambda: kernel(A, B)),
        ("A.data_ptr(), B.data_ptr()", lambda: (A.data_ptr(), B.data_ptr())),
        ("Gpu.stream_for(handle)", lambda: g.stream_for(0)),
        ("bulkred.sum's key (api.call_key)", lambda: api.call_key("sum", A, None, False, {}, None)),
        ("bulkred.sum's key and look-up in api.CALLS", lambda: api.CALLS.get(api.call_key("sum", A, None, False, {}, None))),
        ("hash of bulkred.sum's key (made once)", lambda: hash(key)),
        ("api.CALLS.get of that key (made once)", lambda: api.CALLS.get(key)),
        ("hash(A.shape), hash(A.dtype)", lambda: (hash(A.shape), hash(A.dtype))),
        ("bulkred.sum's launcher alone (launches)", lambda: launcher(A, None)),
        ("bulkred.sum(A) (the whole call, launches)", lambda: bulkred.sum(A)),
        ("torch.compiler.is_compiling() (each call asks first)", torch.compiler.is_compiling),
        ("raw cuda.core launch alone", lambda: launch(stream, config, raw, a_ptr, b_ptr)),
        ("raw cuLaunchKernel alone (prebuilt void**, two pointers written)", raw_driver),
        ("bulkred.std_mean(A, correction=1)'s key and look-up",
         lambda: api.CALLS.get(api.call_key("std_mean", A, None, False, {"correction": 1}, None))),
        ("B.view(()) (bulkred.sum's 0-d result of the (1,) destination)", lambda: B.view(())),
        ("A.new_empty(1)", lambda: A.new_empty(1)),
        ("torch.empty_like(B) (bulkred.sum's result)", lambda: torch.empty_like(B)),
        ("torch.empty_like(B0) (0-d, as the launcher makes it)", lambda: torch.empty_like(B0)),
        ("torch.empty((), dtype=, device=torch.device) (made once)", lambda: torch.empty((), dtype=d, device=dev)),
        ("torch.empty((), dtype=, device=0)", lambda: torch.empty((), dtype=d, device=0)),
    ]
    gpu_us = [
        ("seed kernel", lambda: kernel(A, B)),
        ("bulkred.sum's reduction kernel", lambda: red(A, B)),
        ("torch.sum", lambda: torch.sum(A)),
    ]
    gpu_times = [(name, events_us(torch, fn)) for name, fn in gpu_us]
    breakdown = [(name, loop_us(fn)) for name, fn in steps]

    raw_us = rows[0][1]
    lines = [
        f"call overhead on {g.name} ({g.arch}), torch {torch.__version__}; median of {args.calls} calls",
        "",
        f"{'call':40} {'call+sync us':>13} {'x raw':>7} {'back-to-back us':>16}",
    ]
    for name, us, b2b in rows:
        lines.append(f"{name:40} {us:13.1f} {us / raw_us:7.2f} {b2b:16.1f}")
    lines += ["", "the steps of a kernel call's short path alone (us per step, median of 20 loops of 1000):"]
    lines += [f"  {name:55} {us:6.2f}" for name, us in breakdown]
    lines += ["", "GPU time per launch (CUDA events around 200 launches queued behind a spin, median of 10):"]
    lines += [f"  {name:55} {us:6.2f}" for name, us in gpu_times]
    if cold:  # (--processes 0: the per-call figures only)
        cm, wm = statistics.median(cold), statistics.median(warm)
        lines += [
            "",
            f"first bulkred.sum in a new process (median of {args.processes}, CUDA and torch initialised first):",
            f"  cold (empty cache, compiles): {cm:8.1f} ms",
            f"  warm (disk cache):            {wm:8.1f} ms   = {100 * wm / cm:.1f}% of cold",
        ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    out = os.environ.get("OUT")
    if out:
        Path(out, "call_overhead.txt").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
