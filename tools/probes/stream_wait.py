"""Which step of a kernel's first call on a busy torch stream waits for that stream?

Each step runs right after a ~0.5 s spin (torch.cuda._sleep) is queued on a side
stream; it prints the step's time and whether the stream was still busy after it.
Run on the GPU machine: python3 tools/diag.py stream_wait"""

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import torch  # noqa: E402
from test_runtime_cpu import ACC_PTX, ACC_SIG  # noqa: E402

from bulkred_dialect.backend_ptx import runtime  # noqa: E402


def main() -> None:
    g = runtime.gpu()
    arch = runtime.current_arch()
    mod = runtime.compile_ptx(ACC_PTX.replace(".target sm_90a", f".target {arch}"), arch, [ACC_SIG])
    k = mod.kernel("acc")
    kern = mod.load_kernel(g, "acc")
    inp = torch.zeros(64, dtype=torch.int32, device="cuda")
    out = torch.zeros(64, dtype=torch.int32, device="cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    h = int(side.cuda_stream)
    state: dict = {}

    steps = [
        ("torch.cuda.current_stream()", lambda: torch.cuda.current_stream()),
        ("Gpu.stream_for(new handle)", lambda: state.setdefault("s", g.stream_for(h))),
        ("module._workspace (first)", lambda: mod.workspace(g, "acc", k.signature.workspace)),
        ("memset_async on the side stream", lambda: g.memset_async(out.data_ptr(), 256, state["s"])),
        ("LaunchConfig", lambda: state.setdefault("c", __import__("cuda.core").core.LaunchConfig(grid=1, block=64))),
        ("launch", lambda: __import__("cuda.core").core.launch(state["s"], state["c"], kern, out.data_ptr(), inp.data_ptr(),
                                                          mod.workspace(g, "acc", k.signature.workspace))),
        ("kernel(out, inp), first call", lambda: k(out, inp)),
        ("kernel(out, inp), second call", lambda: k(out, inp)),
    ]
    for name, fn in steps:
        with torch.cuda.stream(side):
            torch.cuda._sleep(1_000_000_000)
            before = not side.query()
            t = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t) * 1e3
            after = not side.query()
        print(f"{name:40} {ms:9.3f} ms   busy before {before!s:5}  busy after {after}", flush=True)
        side.synchronize()


if __name__ == "__main__":
    main()
