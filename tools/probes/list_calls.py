"""A list of many tensors per call, each way alone (not taking turns with torch's call):
``bulkred.total_norm`` against ``torch.nn.utils.get_total_norm`` on the same lists, per
case of docs/foreach.md's "The descriptor table, and when it is reused" (issue 29's
targets: an unchanged list <= 100 us per call, a new list <= 1 ms):

- the same list object every call (its descriptor table reused, nothing checked);
- an equal new list of the same tensors (``list(ts)``);
- new tensor objects at the same addresses (``[t.view_as(t) for t in ts]``: what
  ``zero_grad(set_to_none=True)`` gives with torch's caching allocator);
- new tensor objects at new addresses (a new list of new tensors each call, allocated
  before the timed region, the last 20 lists kept alive so that the addresses are new to
  foreach's 16 cached tables), and the same with the kinds not kept
  (``foreach.KIND_GUARDS = False``: every call checked pass by pass, as a list of a kind
  never seen before is);
- the same two cases on a list of two dtypes (float32 and bfloat16 in turn);
- a ``bulkred.tensor_list``.

Per call: CUDA events around one call, the GPU idle before and a 256 MiB buffer written
before each sample (the L2 flushed, as benchmarks/foreach.py), median of ``--samples``;
and the host's time of that call alone (``time.perf_counter`` around it: the call returns
once its launches are queued). Each list's result is checked against float64 first.
``--stages`` adds where a new list's host time goes (the check, the table, the copy).

``--cpu``: the host path on this machine without a GPU (CPU torch tensors, torch's CUDA
or CPU build): the same cases with the launch a stub (the kernels record nothing,
``pin_memory`` returns the tensor, the table's copy is a CPU copy, ``foreach.DEVICE_TYPE``
is "cpu"), thread CPU time per call, median and best of ``--samples``; torch's own call
is not timed there. ``--root TREE``: the bulkred tree to import (an older tree to compare
with: it needs ``DEVICE_TYPE``).

    python3 tools/diag.py list_calls [--tensors 2000] [--numel 4096] [--samples 40] [--budget-s 100] [--stages]
    PYTHONPATH=/path/to/torch python3 tools/diag.py list_calls --cpu [--root TREE] [--numel 64]
    PROBE_ARGS="--samples 40 --budget-s 100 --stages" bash tools/gpu.sh probe:list_calls
"""

from __future__ import annotations

import argparse
import collections
import math
import statistics
import sys
import time
from pathlib import Path

FRESH_KEEP = 20  # lists kept alive in the "new addresses" cases: more than foreach's 16 cached tables
TARGET_NEW_US, TARGET_SAME_US = 1000.0, 100.0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tensors", type=int, default=2000)
    ap.add_argument("--numel", type=int, default=None, help="elements per tensor (default 4096; --cpu: 64)")
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--budget-s", type=float, default=100.0, help="start no new case after this many seconds")
    ap.add_argument("--stages", action="store_true", help="also time the stages of a new list's host path")
    ap.add_argument("--cpu", action="store_true", help="the host path on CPU tensors, the launch a stub")
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]), help="--cpu: the bulkred tree")
    ap.add_argument("--cases", default="", help="comma-separated case keys to run (default: all; CASES' keys)")
    a = ap.parse_args(argv)
    if a.numel is None:
        a.numel = 64 if a.cpu else 4096
    if a.tensors < 2 or a.numel < 1 or a.samples < 1:
        ap.error("--tensors >= 2, --numel >= 1, --samples >= 1")
    return a


# (key, name, list maker kind, dtypes, the kinds kept): the list maker is one of same,
# equal, views, fresh, handle (see the module's docs); --cases takes the keys
CASES = [
    ("same", "unchanged list", "same", "f32", True),
    ("equal", "equal new list", "equal", "f32", True),
    ("views", "new objects, same addresses", "views", "f32", True),
    ("fresh", "new objects, new addresses", "fresh", "f32", True),
    ("fresh-full", "new objects, new addresses, kinds not kept", "fresh", "f32", False),
    ("mixed-views", "two dtypes: new objects, same addresses", "views", "mixed", True),
    ("mixed-fresh", "two dtypes: new objects, new addresses", "fresh", "mixed", True),
    ("mixed-fresh-full", "two dtypes: new addresses, kinds not kept", "fresh", "mixed", False),
    ("handle", "a tensor_list", "handle", "f32", True),
]


def targets(key: str) -> float:
    return TARGET_SAME_US if key in ("same", "handle") else TARGET_NEW_US


def make_tensors(torch, a, dtypes: str, device: str) -> list:
    kinds = (torch.float32,) if dtypes == "f32" else (torch.float32, torch.bfloat16)
    return [torch.empty(a.numel, dtype=kinds[i % len(kinds)], device=device) for i in range(a.tensors)]


def arg_maker(torch, bulkred, a, kind: str, dtypes: str, device: str, base: dict):
    """``arg(i)``: the list of sample i (made before the timed region)."""
    if dtypes not in base:
        ts = make_tensors(torch, a, dtypes, device)
        for t in ts:
            t.normal_()
        base[dtypes] = ts
    ts = base[dtypes]
    if kind == "same":
        return lambda i: ts
    if kind == "equal":
        return lambda i: list(ts)
    if kind == "views":
        return lambda i: [t.view_as(t) for t in ts]
    if kind == "handle":
        tl = bulkred.tensor_list(ts)
        return lambda i: tl
    kept: collections.deque = collections.deque(maxlen=FRESH_KEEP)

    def fresh(i: int) -> list:
        new = make_tensors(torch, a, dtypes, device)
        kept.append(new)
        return new

    return fresh


def guard_note(F, torch) -> str:
    """Which guard the kinds use on this torch (none: every new list checked in full)."""
    if not hasattr(F, "_guard_maker"):
        return "no kinds in this tree"
    maker = F._guard_maker(torch)
    how = {"own": "TensorGuards, shapes and strides read in C++", "given": "TensorGuards, shapes and strides given"}
    return f"kinds' guard: {'none (every list checked in full)' if maker is None else how.get(maker.__name__, maker)}"


def median_best(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f} (best {min(xs):.1f})"


def cpu_stubs(F, torch, grid: int = 528) -> None:
    """The launch a stub: the list kernels record nothing, the table stays on the host."""
    from types import SimpleNamespace

    class Kernel:
        signature = SimpleNamespace(launch=SimpleNamespace(grid=(grid, 1, 1)))

        def __call__(self, *args):
            return None

    k = Kernel()
    F._reduce_kernel = lambda row, options: k
    F._clip_kernel = lambda: k
    torch.cuda.is_current_stream_capturing = lambda: False
    torch.Tensor.pin_memory = lambda self, *args, **kwargs: self
    F.DEVICE_TYPE = "cpu"


def run_cpu(a) -> int:
    sys.path.insert(0, a.root)
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import foreach as F

    assert Path(bulkred.__file__).is_relative_to(Path(a.root).resolve()), bulkred.__file__
    if not hasattr(F, "DEVICE_TYPE"):
        print(f"{a.root}: bulkred_dialect/foreach.py has no DEVICE_TYPE (add DEVICE_TYPE = 'cpu' where it checks "
              "the device to time it here)", file=sys.stderr)
        return 2
    cpu_stubs(F, torch)
    print(f"--cpu: {a.root}, torch {torch.__version__}; {a.tensors} x [{a.numel}]; the launch a stub; "
          f"thread CPU us per call, median (best) of {a.samples}; {guard_note(F, torch)}")
    print("| call | host us |")
    print("| --- | ---: |")
    base: dict = {}
    start = time.monotonic()
    for key, name, kind, dtypes, kinds_kept in selected(a):
        if time.monotonic() - start > a.budget_s:
            print(f"| {name} | skipped (budget) |")
            continue
        if not kinds_kept and not hasattr(F, "KIND_GUARDS"):
            print(f"| {name} | (no KIND_GUARDS in this tree) |")
            continue
        arg = arg_maker(torch, bulkred, a, kind, dtypes, "cpu", base)
        with kinds(F, kinds_kept):
            for i in range(3):
                bulkred.total_norm(arg(-1 - i))
            times = []
            for i in range(a.samples):
                x = arg(i)
                t0 = time.thread_time_ns()
                bulkred.total_norm(x)
                times.append((time.thread_time_ns() - t0) / 1e3)
        print(f"| {name} | {median_best(times)} |", flush=True)
    if a.stages:
        stages(a, torch, bulkred, F, "cpu", base, thread=True)
    return 0


class kinds:
    """``foreach.KIND_GUARDS`` set to ``on`` inside (where the tree has the setting)."""

    def __init__(self, F, on: bool):
        self.F, self.on = F, on

    def __enter__(self):
        self.old = getattr(self.F, "KIND_GUARDS", None)
        if self.old is not None:
            self.F.KIND_GUARDS = self.on

    def __exit__(self, *exc):
        if self.old is not None:
            self.F.KIND_GUARDS = self.old


def selected(a) -> list:
    keys = [k.strip() for k in a.cases.split(",") if k.strip()]
    unknown = [k for k in keys if k not in {c[0] for c in CASES}]
    if unknown:
        print(f"list_calls: no case {', '.join(unknown)} (--cases takes {', '.join(c[0] for c in CASES)})",
              file=sys.stderr)
        raise SystemExit(2)
    return [c for c in CASES if not keys or c[0] in keys]


def stages(a, torch, bulkred, F, device: str, base: dict, thread: bool = False) -> None:
    """Where a new list's host time goes: its check (kinds kept, and pass by pass), its
    table on the host (numpy), its table made and copied (``_build``), one call."""
    clock = time.thread_time_ns if thread else time.perf_counter_ns
    sync = (lambda: None) if device == "cpu" else torch.cuda.synchronize
    ts = base.get("f32") or make_tensors(torch, a, "f32", device)
    k = F._reduce_kernel(F.LISTS["total_norm"], {"ord": 2.0, "local": False})
    grid = F._grid(k)
    for _ in range(3):
        bulkred.total_norm([t.view_as(t) for t in ts])

    def us(fn, make) -> str:
        times = []
        for _ in range(a.samples):
            x = make()
            sync()
            t0 = clock()
            fn(x)
            times.append((clock() - t0) / 1e3)
        return median_best(times)

    T = torch.Tensor
    views = lambda: [t.view_as(t) for t in ts]  # noqa: E731
    rows = {
        "the check of new objects (by their kind, where kept)": us(lambda x: F._check("total_norm", x, torch), views),
        "  the addresses (map of data_ptr)": us(lambda x: list(map(T.data_ptr, x)), views),
    }
    kind = next((k for k in getattr(F, "_KINDS", {}).get(len(ts), ()) if k.guard.check(*ts)), None)
    if kind is not None:
        rows["  no tensor nested (map of is_nested)"] = us(lambda x: any(map(F._NESTED, x)), views)
        rows["  the kind's guard"] = us(lambda x: kind.guard.check(*x), views)
    if hasattr(F, "KIND_GUARDS"):
        with kinds(F, False):
            rows["the check of new objects in full (grouped, then a pass each)"] = us(
                lambda x: F._check("total_norm", x, torch), views)
    checked = F._check("total_norm", ts, torch)
    if getattr(checked, "kind", None) is not None:
        rows["the table on the host, from its kind's (with_addresses)"] = us(lambda c: F._host_table(c, grid),
                                                                             lambda: checked)
    rows["the table on the host, in full (descriptor_table)"] = us(
        lambda c: F.descriptor_table(c.addresses, c.numels, c.codes, grid), lambda: checked)
    rows["the table made and copied (_build)"] = us(lambda c: F._build(c, grid, torch), lambda: checked)
    print("| stage of a new list's host path | us |")
    print("| --- | ---: |")
    for name, v in rows.items():
        print(f"| {name} | {v} |", flush=True)


def run_gpu(a) -> int:
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import foreach as F

    flush_buf = torch.empty(64 << 20, device="cuda")
    ours, theirs = bulkred.total_norm, torch.nn.utils.get_total_norm

    def timed(fn, arg) -> tuple[list[float], list[float]]:
        for i in range(3):
            fn(arg(-1 - i))
        ev, host = [], []
        for i in range(a.samples):
            x = arg(i)
            flush_buf.fill_(1.0)
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            t0 = time.perf_counter()
            fn(x)
            t1 = time.perf_counter()
            e.record()
            e.synchronize()
            ev.append(s.elapsed_time(e) * 1e3)
            host.append((t1 - t0) * 1e6)
        return ev, host

    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}; {a.tensors} x [{a.numel}] "
          f"(two dtypes: float32 and bfloat16 in turn); median of {a.samples}; targets: unchanged <= "
          f"{TARGET_SAME_US:.0f} us, new <= {TARGET_NEW_US:.0f} us per call; {guard_note(F, torch)}")
    print("| call | bulkred per call us (events) | bulkred host us | torch per call us | torch host us | "
          "torch / bulkred | target |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    base: dict = {}
    checked: set = set()
    start = time.monotonic()
    for key, name, kind, dtypes, kinds_kept in selected(a):
        if time.monotonic() - start > a.budget_s:
            print(f"| {name} | skipped (budget) | | | | | |", flush=True)
            continue
        arg = arg_maker(torch, bulkred, a, kind, dtypes, "cuda", base)
        if dtypes not in checked:  # against float64 (torch's own rounds each bfloat16 tensor's norm to bfloat16)
            ts = base[dtypes]
            got, want = float(ours(ts)), math.sqrt(sum(float(t.double().square().sum()) for t in ts))
            if not math.isclose(got, want, rel_tol=1e-5):
                print(f"{dtypes}: WRONG, bulkred {got} against {want} (float64)")
                return 1
            checked.add(dtypes)
        with kinds(F, kinds_kept):
            ev, host = timed(ours, arg)
        tev, thost = timed(theirs, arg if kind != "handle" else (lambda i, ts=base[dtypes]: ts))
        e, te = statistics.median(ev), statistics.median(tev)
        met = "met" if e <= targets(key) else "**not met**"
        print(f"| {name} | {e:.1f} | {statistics.median(host):.1f} | {te:.1f} | {statistics.median(thost):.1f} | "
              f"{te / e:.1f}x | {met} (<= {targets(key):.0f}) |", flush=True)
    if a.stages:
        stages(a, torch, bulkred, F, "cuda", base)
    return 0


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    return run_cpu(a) if a.cpu else run_gpu(a)


if __name__ == "__main__":
    raise SystemExit(main())
