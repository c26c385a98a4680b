"""The list kernels' launch settings, and the host's share of a list call, on the GPU.

1. GPU time (a CUDA graph of 3 calls, replayed; median per call) of ``total_norm`` on the
   float32 and bf16 Llama lists of benchmarks/foreach.py and of ``unscale_and_norm_`` on
   the float32 one, for each ``grid_list`` setting in ``--variants`` (``UNROLL x
   CTAS``: CTAs per multiprocessor, or the grid itself when above 16; set on the module
   before its kernels are compiled; the disk cache is off). Each total is checked against float64 once per setting.
2. The host: per stage of a call on 2,000 x [4096] float32 tensors (``_check``, the
   numpy table, ``_build``, the three table cases of docs/foreach.md), median wall time
   of back-to-back calls (no sync inside the timed loop but one at the end of each).

    python3 tools/diag.py list_tuning --variants 4x4,8x4 --out $OUT
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["BULKRED_CACHE"] = "0"
ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import torch  # noqa: E402

import bulkred_dialect as bulkred  # noqa: E402
import foreach as BF  # noqa: E402  (benchmarks/foreach.py)
import reductions_api as RA  # noqa: E402
from bulkred_dialect import foreach as F  # noqa: E402
from bulkred_dialect.foreach_table import descriptor_table  # noqa: E402
from bulkred_dialect.passes.variants import grid_list as GL  # noqa: E402


def _reset() -> None:
    for d in (F._KERNELS, F._LIST_KERNELS, F._TABLES, F._BY_IDS):
        d.clear()


EXTRA = os.environ.get("LIST_TUNING_EXTRA") == "1"


def gpu_times(variants: list[tuple[int, int]], log) -> list[dict]:
    f32 = BF.make_list(torch, BF.llama("float32", 150))
    bf16 = BF.make_list(torch, BF.llama("bfloat16"))
    lists = {"f32": f32, "bf16": bf16}
    if EXTRA:
        lists["bf16_150"] = BF.make_list(torch, BF.llama("bfloat16", 150))
    refs = {k: BF.ref_total64(torch, v) for k, v in lists.items()}
    inv = torch.ones(1, device="cuda")
    found = torch.zeros(1, device="cuda")
    rows = []
    list_grid = GL.list_grid
    for unroll, ctas in variants:
        GL.UNROLL = unroll
        # ctas > 16: the grid itself (CTAs of the launch), else CTAs per multiprocessor
        GL.list_grid = (lambda target, g=ctas: g) if ctas > 16 else list_grid
        GL.CTAS_PER_SM = ctas if ctas <= 16 else 4
        _reset()
        row: dict = {"unroll": unroll, "ctas": ctas}
        for name, ts in lists.items():
            nbytes = sum(t.numel() * t.element_size() for t in ts)
            got = float(bulkred.total_norm(ts))
            err = abs(got - refs[name]) / refs[name]
            us = RA.graph_us(torch, bulkred.total_norm, [ts], 3, 5)
            row[f"{name}_us"], row[f"{name}_gbps"], row[f"{name}_err"] = us, nbytes / us / 1e3, err
            if name == "f32":
                us = RA.graph_us(torch, lambda x: bulkred.unscale_and_norm_(x, inv, found), [ts], 3, 5)
                row["unscale_us"], row["unscale_gbps"] = us, 2 * nbytes / us / 1e3
        row["found_inf"] = float(found)
        rows.append(row)
        print(json.dumps(row), file=log, flush=True)
    return rows


def _median_us(fn, n: int = 50) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def host_stages(log) -> dict:
    _reset()
    base = [torch.randn(4096, device="cuda") for _ in range(2000)]
    k = F._reduce_kernel(F.LISTS["total_norm"], {"ord": 2.0, "local": False})
    grid = F._grid(k)
    checked = F._check("total_norm", base, torch)
    T = torch.Tensor
    out = {
        "pass: type": _median_us(lambda: set(map(type, base))),
        "pass: dtype": _median_us(lambda: list(map(F._DTYPE, base))),
        "pass: get_device": _median_us(lambda: set(map(T.get_device, base))),
        "pass: is_contiguous": _median_us(lambda: all(map(T.is_contiguous, base))),
        "pass: data_ptr": _median_us(lambda: list(map(T.data_ptr, base))),
        "pass: numel": _median_us(lambda: list(map(T.numel, base))),
        "list(map(id))": _median_us(lambda: list(map(id, base))),
        "_check": _median_us(lambda: F._check("total_norm", base, torch)),
        "descriptor_table": _median_us(lambda: descriptor_table(checked.addresses, checked.numels, checked.codes, grid)),
        "_build (table, pin, copy)": _median_us(lambda: F._build(checked, grid, torch)),
        "torch.empty x2": _median_us(lambda: (torch.empty(2000, device="cuda"), torch.empty(1, device="cuda"))),
    }
    bulkred.total_norm(base)
    bulkred.total_norm(base)
    tl = bulkred.tensor_list(base)
    bulkred.total_norm(tl)
    out["call: a TensorList"] = _median_us(lambda: bulkred.total_norm(tl))
    out["call: same objects"] = _median_us(lambda: bulkred.total_norm(base))
    out["call: new objects, same memory"] = _median_us(lambda: bulkred.total_norm([t.view_as(t) for t in base]))
    views = [t.view_as(t) for t in base]
    out["  of which making the views"] = _median_us(lambda: [t.view_as(t) for t in base])
    del views
    pool = [[torch.randn(4096, device="cuda") for _ in range(2000)] for _ in range(20)]
    out["_check, with 40,000 more tensors alive"] = _median_us(lambda: F._check("total_norm", base, torch))
    it = iter(range(10**9))
    out["call: new memory"] = _median_us(lambda: bulkred.total_norm(pool[next(it) % 20]))
    out["torch get_total_norm (same list)"] = _median_us(lambda: torch.nn.utils.get_total_norm(base), 10)
    for key, v in out.items():
        print(f"{key:40s} {v:10.1f} us", file=log, flush=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variants", default="4x4,8x4")
    p.add_argument("--out", default="/tmp/list_tuning")
    p.add_argument("--skip-gpu-times", action="store_true")
    p.add_argument("--skip-host", action="store_true")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    variants = [tuple(int(x) for x in v.split("x")) for v in a.variants.split(",") if v]
    with open(out / "list_tuning.log", "w") as log:
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}", file=log, flush=True)
        result = {} if a.skip_host else {"host_us": host_stages(log)}
        if not a.skip_gpu_times:
            result["gpu"] = gpu_times(variants, log)
    (out / "list_tuning.json").write_text(json.dumps(result, indent=1))
    print((out / "list_tuning.log").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
