#!/usr/bin/env python3
"""How fast bulkred compiles: the numbers of docs/compile_speed.md.

* **scaling** -- a module of N copies of the seed kernel (examples/seed_sum32.mlir,
  renamed ``k0``, ``k1``, ...), parse to PTX text, in ms per kernel: it should stay flat
  as N grows (target <= 20 ms per kernel up to N = 1000);
* **seed** -- the seed example, parse to PTX text, warm (in-process, after warm-up
  runs), for sm_90a (the ``local`` variant) and sm_100a (``sm100_packed``)
  (target <= 15 ms);
* **start-up** -- ``bulkred-opt --help`` against plain ``xdsl-opt --help``, run
  alternately in this run (target <= 1.2x), and one lit-style RUN line
  (``bulkred-opt seed -p bulkred-to-ptx -t ptx``).

Each number is the median of several runs (``--runs``), as wall-clock time and as the
CPU time of the process (steadier on a shared machine); the load average is printed
with them, and around the seed's numbers the time of a fixed pure-Python loop, which
shows how fast the (shared) machine was at that moment; the seed's best run is shown
too (timeit's rule: the fastest run is the one least disturbed). "Parse to PTX" is what ``bulkred-opt -p bulkred-to-ptx -t ptx`` does: parse
with locations, verify the input, run the passes with the garbage collector paused,
print the PTX (the printer verifies the result); assembling (nvJitLink) is not counted.
``--before`` also times the drivers' previous way (collector on, the module verified
before and after every pass and once more at the end) for comparison.

    python3 benchmarks/compile_speed.py [--runs 5] [--sizes 10,100,300,1000] [--before]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bulkred_dialect.backend_ptx.printer import print_ptx  # noqa: E402
from bulkred_dialect.backend_ptx.runtime import context  # noqa: E402
from bulkred_dialect.diagnostics import parse_module, verify_located  # noqa: E402
from bulkred_dialect.pipeline import apply_passes, available_passes, build_passes, gc_paused  # noqa: E402

SEED = ROOT / "examples" / "seed_sum32.mlir"


def module_of(n: int) -> str:
    """The seed module with its kernel repeated ``n`` times (``@k0`` ... ``@k{n-1}``)."""
    text = SEED.read_text()
    kernel = text[text.index("  func.func") : text.rindex("}")]
    return "builtin.module {\n" + "".join(kernel.replace("@test_func", f"@k{i}") for i in range(n)) + "}\n"


def compile_to_ptx(text: str, target: str) -> str:
    """Parse to PTX as the drivers do now (bulkred-opt -p bulkred-to-ptx -t ptx)."""
    ctx = context()
    with gc_paused():
        module = parse_module(ctx, text, "bench.mlir")
        passes = build_passes(f"bulkred-to-ptx{{target={target}}}", available_passes())
        apply_passes(ctx, module, passes, verify_output=False)  # print_ptx verifies it
        return print_ptx(module, target)


def compile_to_ptx_before(text: str, target: str) -> str:
    """The drivers' previous way: the collector on, the module verified after parsing,
    before and after the pass, at the end, and by the printer."""
    ctx = context()
    module = parse_module(ctx, text, "bench.mlir")
    verify_located(module)
    (bulkred_to_ptx,) = build_passes(f"bulkred-to-ptx{{target={target}}}", available_passes())
    verify_located(module)
    bulkred_to_ptx.apply(ctx, module)
    verify_located(module)
    verify_located(module)
    return print_ptx(module, target)


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def median_of(runs: int, fn: Callable[[], object]) -> tuple[float, float]:
    samples = [timed(fn) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def reference_work() -> float:
    """Seconds of a fixed pure-Python loop (best of 5): the machine's speed at the time
    of a measurement. On a shared machine it moves by 2x between runs, and the compile
    times move with it."""
    def work() -> int:
        return sum(i * i % 7 for i in range(100_000))

    return min(timed(work)[0] for _ in range(5))


def run_child(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU of the child) of one command, its output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=ROOT)
    wall = time.perf_counter() - w
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def tool(name: str) -> str:
    """The console script ``name`` beside this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        sys.exit(f"compile_speed: '{name}' not found beside {sys.executable} nor on PATH")
    return found


def ms(s: float) -> str:
    return f"{s * 1e3:7.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per number, the median is shown (default 5)")
    ap.add_argument("--sizes", default="10,100,300,1000", help="kernels per module (default 10,100,300,1000)")
    ap.add_argument("--before", action="store_true", help="also time the previous drivers (collector on, verify between)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"compile_speed: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}, "
          f"Python {sys.version.split()[0]}, median of {args.runs} runs, wall / CPU ms")

    ways = [("now", compile_to_ptx)] + ([("before", compile_to_ptx_before)] if args.before else [])

    print("\n== seed example, parse to PTX, warm: 10 warm-up runs, median of the next "
          f"{max(args.runs, 25)} (target <= 15 ms)")
    seed = SEED.read_text()
    print(f"   (the machine's speed now: {ms(reference_work())} ms for a fixed pure-Python loop; "
          "compare runs by it)")
    for target in ("sm_90a", "sm_100a"):
        for label, fn in ways:
            for _ in range(10):
                fn(seed, target)  # warm: imports, caches
            samples = [timed(lambda: fn(seed, target)) for _ in range(max(args.runs, 25))]
            wall, cpu = statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)
            best = min(s[0] for s in samples)
            print(f"   {target:8s} {label:7s} {ms(wall)} / {ms(cpu)}   (best {ms(best).strip()})")
    print(f"   (the machine's speed after: {ms(reference_work())} ms)")

    print("\n== N seed kernels in one module, parse to PTX, sm_90a, per kernel (target <= 20 ms, flat)")
    for n in sizes:
        text = module_of(n)
        for label, fn in ways:
            runs = args.runs if n * args.runs <= 1000 else max(1, 1000 // n)
            wall, cpu = median_of(runs, lambda: fn(text, "sm_90a"))
            print(f"   N={n:<5d} {label:7s} {ms(wall / n)} / {ms(cpu / n)}   ({runs} runs)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"   peak memory of this process: {peak:.0f} MiB")

    print("\n== start-up (target: bulkred-opt --help <= 1.2x xdsl-opt --help)")
    opt, xopt = tool("bulkred-opt"), tool("xdsl-opt")
    runs = max(args.runs, 7)
    samples: dict[str, list[tuple[float, float]]] = {"bulkred-opt --help": [], "xdsl-opt --help": [], "lit RUN line": []}
    run_line = [opt, str(SEED), "-p", "bulkred-to-ptx", "-t", "ptx"]
    run_child([opt, "--help"])  # warm the file cache
    for _ in range(runs):  # alternate, so that a change of load hits both alike
        samples["bulkred-opt --help"].append(run_child([opt, "--help"]))
        samples["xdsl-opt --help"].append(run_child([xopt, "--help"]))
        samples["lit RUN line"].append(run_child(run_line))
    med = {k: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v)) for k, v in samples.items()}
    for k, (wall, cpu) in med.items():
        print(f"   {k:20s} {ms(wall)} / {ms(cpu)}")
    ratio_wall = med["bulkred-opt --help"][0] / med["xdsl-opt --help"][0]
    ratio_cpu = med["bulkred-opt --help"][1] / med["xdsl-opt --help"][1]
    print(f"   bulkred-opt / xdsl-opt: {ratio_wall:.2f}x wall, {ratio_cpu:.2f}x CPU")
    print(f"   (lit RUN line: {' '.join(Path(a).name if a == opt else a for a in run_line)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
