#!/usr/bin/env python3
"""Small batches (issue 30, section 4: M = 1, 8 and 64 rows of 4096, GPU time at or under the
best anchor's, about 2.0 to 2.7 us): each setting against the dispatch as it is, on the same
tensors (fresh random data), GPU time a call (a CUDA graph of 50 calls, benchmarks/
reductions_api.py's graph_us; the copy kernel ``torch.mul(x, 1.0, out=y)`` timed in turns with
them, the median of three turns), and at M = 8192 (the setting is a function of N and the type:
it must not lose at large M either):

* ``early``: float32 softmax, rms_norm and layer_norm of 4096 (rows_bulk, a unit a row, one
  16 KiB slice): ``rows_bulk.EARLY_COPY_CTA`` (thread 0 issues the first row's copy right after
  its mbarrier's init, before the CTA barrier; the same bits);
* ``ce``: cross_entropy of 4096, float32 and bfloat16, its mean in the kernel (what
  ``bulkred.cross_entropy`` runs eagerly): ``loss rows only`` (reduction None: the floor), the
  dispatch's mean (since the seventh session the cluster tail, ``rows_lower.LOSS_TAIL_CLUSTER``: a
  grid of 2 to 16 CTAs launched as one cluster, the CTAs' pairs sent by ``st.async`` into the
  leader's shared memory; the same bits), and ``mean, default tail`` (``LOSS_TAIL_CLUSTER =
  False``: the grid's slots, fence and ticket; data only, LOSS_TAIL_CLUSTER_MEASURED's cells
  measured again). M = 1, 8, 16, 64 and 8192. The other tails measured in the seventh session
  lost and were removed (docs/rows.md): the polled slots and the early ticket, the cluster
  tail's barrier form, the fold of M = 17 to 64 into one cluster and the cluster's late start.

Each run is checked against torch in float64 (``err``: the largest error of y, or of the loss
rows and of the mean, over the largest magnitude), ``bits``: its outputs equal to the
dispatch's bit for bit (the settings promise it), ``inv``: row 0 called alone gives its bits
in the batch. At the end, the table entries to flip where a setting is faster at every M.

    PROBE_ARGS="--budget-s 120" bash tools/gpu.sh probe:rows_small
    PROBE_ARGS="--budget-s 60 --parts ce" bash tools/gpu.sh probe:rows_small
    python3 tools/diag.py rows_small --parts ce --budget-s 60
    python3 tools/diag.py rows_small --dry-run   # build and assemble (sm_90a) every kernel, SASS counts; no GPU

The dry run prints each kernel's SASS (ptxas for sm_90a, nvdisasm; the kernel's own section, in
ptxas's layout order): the instructions before the first global load (``LDG`` or the bulk copy
``UBLKCP``) and the CTA barriers among them, and those after the last global store or atomic
(``STG``, ``ATOMG``, ``RED``): the latency a small batch pays around its rows; and the fences
(``MEMBAR``, ``ERRBAR``, the L1 invalidations ``CCTL``), atomics, cluster barriers (``UCGABAR``) and
mbarrier operations (``SYNCS``) of the whole kernel, and the cluster the launch gives at each M."""

from __future__ import annotations

import importlib
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rows_forward_norms import kwargs  # noqa: E402 - each kind's module arguments (EPS 1e-5, ignore_index -100)

N = 4096
SMALL_M = (1, 8, 64)
LARGE_M = 8192
PART_M = {"ce": (1, 8, 16, 64, LARGE_M)}
"""A part's M where not (*SMALL_M, LARGE_M): the ce part's 16 (a grid of 16 CTAs, the largest cluster)."""
CALLS = 50
EPS = 1e-5
GAIN = 0.98
"""A setting is flipped where its GPU time is at most this fraction of its base's at every small M..."""
LARGE_LOSS = 1.01
"""... and at most this at :data:`LARGE_M` (where the prologue and the tail are a small part: no loss)."""
PARTS = ("early", "ce")
DEVICE = "cuda"
"""Where the tensors live (tests of the probe's own logic set "cpu", with kernels of torch)."""

EARLY = {"rows_bulk.EARLY_COPY_CTA": True}
DEFAULT_TAIL = {"rows_lower.LOSS_TAIL_CLUSTER": False}

# (part, kind, dtype, [(setting name, consts)]): consts "module.NAME" -> value while the kernel is built;
# "reduction" the cross_entropy kernel's (absent: "mean")
CE = [("loss rows only", {"reduction": None}), ("mean", {}), ("mean, default tail", DEFAULT_TAIL)]
CELLS = [
    ("ce", "cross_entropy", "float32", CE),
    ("ce", "cross_entropy", "bfloat16", CE),
    ("early", "softmax", "float32", [("dispatch", {}), ("early copy", EARLY)]),
    ("early", "rms_norm", "float32", [("dispatch", {}), ("early copy", EARLY)]),
    ("early", "layer_norm", "float32", [("dispatch", {}), ("early copy", EARLY)]),
]
BASE = {"ce": "mean", "early": "dispatch"}
"""The setting each other is compared with (its bits, its time)."""
FLIP = {
    "early copy": "rows_bulk.EARLY_COPY_CTA_MEASURED = half_as_bfloat16({{{keys}}})",
}
"""The table entry of each setting, ``keys`` its winning cells (rows_bulk's by (kind, type))."""
MUST_GAIN = {"early copy": SMALL_M, "mean, default tail": ()}
"""The M where a setting must gain (GAIN); elsewhere it must not lose (LARGE_LOSS). A setting not in
FLIP (``mean, default tail``) is data: its ratios are printed."""


_BUILT: dict = {}


def build(kind: str, dtype: str, consts: dict):
    """The compiled kernel of a setting (one kernel for every M), the settings set while it is built."""
    from bulkred_dialect import row_kernels
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module

    key = (kind, dtype, repr(sorted(consts.items())))
    if key not in _BUILT:
        saved = []
        for name, v in consts.items():
            if "." in name:
                mod, attr = name.split(".")
                m = importlib.import_module(f"bulkred_dialect.passes.variants.{mod}")
                saved.append((m, attr, getattr(m, attr)))
                setattr(m, attr, v)
        try:
            red = consts.get("reduction", "mean") if kind == "cross_entropy" else None
            built = row_kernels.module(kind, None, N, dtype, reduction=red, **kwargs(kind, dtype))
            _BUILT[key] = compile_tile_module(built, None).kernel("rows")
        finally:
            for m, attr, old in saved:
                setattr(m, attr, old)
    return _BUILT[key]


def sass_counts(k) -> str:
    """'prologue P, tail T, total A': SASS instructions before the first global load, from the last
    global store or atomic to the end (the trailing NOPs and the self-branch left out), and all."""
    try:
        from bulkred_dialect.backend_ptx.assemble import assemble
        from bulkred_dialect.backend_ptx.sass import disassemble

        text = disassemble(assemble(k.module.ptx.encode(), "sm_90a"))
    except Exception as e:  # noqa: BLE001 - the row says why (no nvdisasm)
        return f"SASS ? ({type(e).__name__})"
    # (the kernel's own section: not the float division's slow path)
    text = next(part for part in re.split(r"\n\s*\.section\s+", text) if part.startswith(".text.rows,"))
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)", text)
    while ops and (ops[-1].startswith("NOP") or ops[-1].startswith("BRA")):
        ops.pop()
    first = next((i for i, o in enumerate(ops) if o.startswith(("LDG", "UBLKCP"))), len(ops))
    bars = sum(o.startswith("BAR.SYNC") for o in ops[:first])
    last = max((i for i, o in enumerate(ops) if o.startswith(("STG", "ATOMG", "RED"))), default=len(ops) - 1)
    counted = ("MEMBAR", "ERRBAR", "CCTL", "ATOMG", "UCGABAR", "SYNCS")
    fences = " ".join(f"{f} {sum(o.startswith(f) for o in ops)}" for f in counted)
    return f"prologue {first} ({bars} BAR.SYNC), tail {len(ops) - 1 - last}, total {len(ops)}; {fences}"


def dry_run(args) -> int:
    from bulkred_dialect.backend_ptx.assemble import ptxas_accepts
    from bulkred_dialect.backend_ptx.launch import resolve_launch

    failed = n = 0
    for part, kind, dtype, settings in CELLS:
        if part not in args.parts:
            continue
        for name, consts in settings:
            k = build(kind, dtype, consts)
            ok, log = ptxas_accepts(k.module.ptx, "sm_90a")
            failed += not ok
            n += 1
            launch = k.signature.launch
            ms = PART_M.get(part, (*SMALL_M, LARGE_M))
            clusters = "/".join(str(resolve_launch(k.signature, k.signature.grid_for([m]), None, None).cluster[0]) for m in ms)
            print(f"{part} | {kind} {dtype} {N} | {name} | {'ok' if ok else 'FAILED ' + log.splitlines()[0]} | "
                  f"threads {launch.block[0]} x {launch.cluster[0]}, the launch's cluster at M "
                  f"{'/'.join(map(str, ms))}: {clusters} | {sass_counts(k)}", flush=True)
    print(f"{n} kernels, {failed} failed")
    print("the entries a run on the GPU prints to flip, where every cell wins (its verdicts name each cell):")
    every = {"early copy": ", ".join(f'("{kind}", F32.name): ((4096, 4096),)' for _, kind, _, st in CELLS if st[1][0] == "early copy")}
    for name, line in FLIP.items():
        print(f"  {name}: {line.format(keys=every[name])}")
    return 1 if failed else 0


def sync(torch) -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def tensors(torch, kind: str, dtype: str, m: int) -> dict:
    dt = getattr(torch, dtype)
    x = torch.randn(m, N, device=DEVICE, dtype=torch.float32).mul_(2).add_(0.3).to(dt)
    t = {"x": x}
    if kind == "cross_entropy":
        t["target"] = torch.randint(0, N, (m,), device=DEVICE)
        t["target"][1::5] = -100
    if kind in ("rms_norm", "layer_norm"):
        t["w"] = torch.randn(N, device=DEVICE, dtype=torch.float32).to(dt)
    if kind == "layer_norm":
        t["b"] = torch.randn(N, device=DEVICE, dtype=torch.float32).to(dt)
    return t


def call_of(torch, k, kind: str, t: dict, consts: dict, rows: int | None = None):
    """(the call, its outputs) of kernel ``k`` on the first ``rows`` rows (None: all), new outputs."""
    x = t["x"] if rows is None else t["x"][:rows]
    m = x.shape[0]
    if kind == "cross_entropy":
        loss = torch.empty(m, device=DEVICE)
        target = t["target"][:m]
        if consts.get("reduction", "mean") is None:
            return (lambda: k(x, target, loss)), [loss]
        red = torch.empty(1, device=DEVICE, dtype=x.dtype)
        return (lambda: k(x, target, loss, red)), [loss, red]
    y = torch.empty_like(x)
    extra = [t[a] for a in ("w", "b") if a in t]
    return (lambda: k(x, y, *extra)), [y]


def reference(torch, kind: str, t: dict) -> list:
    F = torch.nn.functional
    x = t["x"].double()
    if kind == "softmax":
        return [torch.softmax(x, -1)]
    if kind == "rms_norm":
        return [F.rms_norm(x, (N,), t["w"].double(), EPS)]
    if kind == "layer_norm":
        return [F.layer_norm(x, (N,), t["w"].double(), t["b"].double(), EPS)]
    rows = F.cross_entropy(x, t["target"], reduction="none")
    return [rows, F.cross_entropy(x, t["target"]).reshape(1)]


def error(got: list, want: list) -> float:
    return max(((g.double() - w).abs().max() / w.abs().max().clamp(min=1e-30)).item() for g, w in zip(got, want))


def same_bits(torch, a: list, b: list) -> bool:
    return all(torch.equal(x.view(torch.uint8), y.view(torch.uint8)) for x, y in zip(a, b))


def measure(torch, args, t0: float) -> list[tuple[str, str, str, str, int, float, float, bool]]:
    """Print the table; return (part, kind, dtype, setting, M, us, base us, sound) of each run."""
    import reductions_api as RA

    print("| part | op | dtype | M | copy us | setting | GPU us a call | vs base | err | bits | inv |")
    print("| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- | --- |")
    out = []
    for part, kind, dtype, settings in CELLS:
        if part not in args.parts:
            continue
        kernels = [(name, consts, build(kind, dtype, consts)) for name, consts in settings]
        base = next(i for i, (name, _, _) in enumerate(kernels) if name == BASE[part])
        for m in PART_M.get(part, (*SMALL_M, LARGE_M)):
            if time.time() - t0 > args.budget_s:
                print(f"| {part} | {kind} | {dtype} | {m} | skipped: budget |", flush=True)
                continue
            t = tensors(torch, kind, dtype, m)
            want = reference(torch, kind, t)
            copy_out = torch.empty_like(t["x"])
            calls, outs = [], []
            for _, consts, k in kernels:
                call, o = call_of(torch, k, kind, t, consts)
                call()
                calls.append(call)
                outs.append(o)
            sync(torch)
            times: dict[int, list[float]] = {i: [] for i in range(-1, len(calls))}
            for _ in range(3):  # in turns: the copy, then each setting
                for i in times:
                    fn = (lambda: torch.mul(t["x"], 1.0, out=copy_out)) if i < 0 else calls[i]
                    times[i].append(RA.graph_us(torch, lambda _, c=fn: c(), [None], CALLS, 5))
            med = {i: statistics.median(v) for i, v in times.items()}
            for i, (name, consts, k) in enumerate(kernels):
                reduced = kind == "cross_entropy" and consts.get("reduction", "mean") is not None
                err = error(outs[i], want if reduced else want[:1])
                bits = same_bits(torch, outs[i], outs[base]) if (reduced or kind != "cross_entropy") else True
                alone, o1 = call_of(torch, k, kind, t, consts, rows=1)
                alone()
                sync(torch)
                inv = torch.equal(o1[0].view(torch.uint8), outs[i][0][:1].view(torch.uint8))
                sound = bits and inv and err < (1e-4 if dtype == "float32" else 2e-2)
                out.append((part, kind, dtype, name, m, med[i], med[base], sound))
                print(f"| {part} | {kind} | {dtype} | {m} | {med[-1]:.2f} | {name} | {med[i]:.2f} | "
                      f"{med[i] / med[base]:.3f} | {err:.1e} | {'same' if bits else 'DIFFER'} | "
                      f"{'yes' if inv else 'NO'} |",
                      flush=True)
            del t, want, copy_out, calls, outs
            if DEVICE == "cuda":
                torch.cuda.empty_cache()
    return out


def verdicts(runs) -> None:
    """The entries to flip: a setting at most GAIN of its base's time where it must gain
    (MUST_GAIN), at most LARGE_LOSS elsewhere, sound at every M."""
    print(f"\nverdicts (FLIP: at most {GAIN} x its base's GPU time at the M it must gain, {LARGE_LOSS} x at the others "
          f"(M = {', '.join(map(str, (*SMALL_M, LARGE_M)))}; the ce part also 16), the same bits, batch-invariant, "
          "near float64):")
    groups: dict[tuple[str, str, str], list] = {}
    parts: dict[tuple[str, str, str], str] = {}
    data: dict[tuple[str, str, str], list] = {}  # (settings no table flips: their ratios only)
    for part, kind, dtype, name, m, us, base_us, sound in runs:
        if name in FLIP:
            groups.setdefault((name, kind, dtype), []).append((m, us / base_us, sound))
            parts[(name, kind, dtype)] = part
        elif name in MUST_GAIN:
            data.setdefault((name, kind, dtype), []).append((m, us / base_us, sound))
    for (name, kind, dtype), rows in data.items():
        print(f"  {name} | {kind} {dtype}: " + ", ".join(f"M {m}: {r:.3f}{'' if s else ' (unsound)'}" for m, r, s in rows)
              + " -> data only")
    wins: dict[str, list[str]] = {name: [] for name in FLIP}
    for (name, kind, dtype), rows in groups.items():
        complete = len(rows) == len(PART_M.get(parts[(name, kind, dtype)], (*SMALL_M, LARGE_M)))
        ok = complete and all(s and r <= (GAIN if m in MUST_GAIN[name] else LARGE_LOSS) for m, r, s in rows)
        ratios = ", ".join(f"M {m}: {r:.3f}{'' if s else ' (unsound)'}" for m, r, s in rows)
        print(f"  {name} | {kind} {dtype}: {ratios} -> {'FLIP' if ok else 'keep off'}")
        if ok:
            t = f"{'F32' if dtype == 'float32' else 'BF16'}.name"
            wins[name].append(f'("{kind}", {t}): ((4096, 4096),)')
    for name, keys in wins.items():
        if keys:
            print("  flip: " + FLIP[name].format(keys=", ".join(dict.fromkeys(keys))))
        else:
            print(f"  {name}: leave its table empty")


def main() -> int:
    from rows_forward import parts_args

    args = parts_args(__doc__, PARTS, "build and assemble each kernel, SASS counts; no GPU")
    if args.dry_run:
        return dry_run(args)
    import torch

    t0 = time.time()
    runs = measure(torch, args, t0)
    verdicts(runs)
    print(f"probe time: {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
