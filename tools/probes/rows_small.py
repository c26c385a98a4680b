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
  ``bulkred.cross_entropy`` runs eagerly; the dispatch's since the seventh session: the cluster
  tail of a grid of 2 to 16 CTAs): ``loss rows only`` (reduction None: the floor), the
  dispatch's mean, and ``mean, cluster fold 4`` (``rows_lower.LOSS_TAIL_CLUSTER_FOLD = 4``: M =
  17 to 64 on 16 CTAs, one cluster, each CTA's rows summed by its thread 0 in row order: the
  loss rows the same bits, the mean its own order past M = 16, checked run to run; a gain at 32
  alone names a fold of 2), bfloat16 also ``mean, cluster late`` (``LOSS_TAIL_CLUSTER_LATE``: the
  cluster's start after the first row's loads, rows loaded a row ahead; the same bits; M = 64's
  fallback, no fold) and both; float32 (its rows loop loads no row ahead: the late start is
  the same kernel there) ``mean, cluster fold 4, late, pipelined`` (that kernel alone with
  ``rows_common.FORWARD_PIPELINE``; data only). M = 1, 8, 16, 32, 64 and 8192.
* ``ce-tail``: the tails measured in the seventh session, against the dispatch's mean:
  ``rows_lower.LOSS_TAIL_POLL`` (the CTAs' pairs published by
  ``atom.exch.b64``, the ticket without fences, the last CTA's reads polled, in grids of at
  most a CTA's threads: M = 8 and 64 here; M = 1, one CTA, and 8192 as the default; the same bits),
  and with ``rows_lower.LOSS_TAIL_EARLY_TICKET`` (the ticket taken at the kernel's start, before
  the rows: its latency behind them). Where both win, the early ticket's entry is the one to take
  if it is at most GAIN of the poll's alone; else the poll's alone. Then ``mean, cluster``:
  ``rows_lower.LOSS_TAIL_CLUSTER`` (a grid of 2 to 8 CTAs launched as one thread-block cluster,
  the CTAs' pairs sent by ``st.async`` into the leader's shared memory, counted by its mbarrier:
  no workspace, fence nor ticket; M = 8 here, and M = 16 with ``mean, cluster 16``, the
  non-portable size ``rows_lower.LOSS_TAIL_CLUSTER_MAX = 16``; M = 1 (one CTA) and larger grids
  as the default; the same bits), and ``mean, cluster barrier`` (``rows_lower.LOSS_TAIL_CLUSTER_BARRIER``:
  nothing at the kernel's start; the pairs by ``st.shared::cluster``, thread 0's
  ``fence.acq_rel.cluster``, a cluster barrier, then the same sum). The ce-tail part also runs M = 16. Where several
  cluster settings win, the verdicts name one: the fastest at M = 8, or the 16's if within 1 / GAIN of it.

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
PART_M = {"ce": (1, 8, 16, 32, 64, LARGE_M), "ce-tail": (1, 8, 16, 64, LARGE_M)}
"""A part's M where not (*SMALL_M, LARGE_M): the ce parts' 16 (a grid of 16 CTAs, the largest cluster)
and the ce part's 32 (LOSS_TAIL_CLUSTER_FOLD: 16 CTAs of two rows)."""
CALLS = 50
EPS = 1e-5
GAIN = 0.98
"""A setting is flipped where its GPU time is at most this fraction of its base's at every small M..."""
LARGE_LOSS = 1.01
"""... and at most this at :data:`LARGE_M` (where the prologue and the tail are a small part: no loss)."""
PARTS = ("early", "ce", "ce-tail")
DEVICE = "cuda"
"""Where the tensors live (tests of the probe's own logic set "cpu", with kernels of torch)."""

EARLY = {"rows_bulk.EARLY_COPY_CTA": True}
POLL = {"rows_lower.LOSS_TAIL_POLL": True}
EARLY_TICKET = {**POLL, "rows_lower.LOSS_TAIL_EARLY_TICKET": True}
CLUSTER = {"rows_lower.LOSS_TAIL_CLUSTER": True}
CLUSTER16 = {**CLUSTER, "rows_lower.LOSS_TAIL_CLUSTER_MAX": 16}
CLUSTER_BARRIER = {**CLUSTER, "rows_lower.LOSS_TAIL_CLUSTER_BARRIER": True}
FOLD4 = {**CLUSTER, "rows_lower.LOSS_TAIL_CLUSTER_FOLD": 4}
LATE = {**CLUSTER, "rows_lower.LOSS_TAIL_CLUSTER_LATE": True}
FOLD4_LATE = {**FOLD4, **LATE}
FOLD4_LATE_PIPELINED = {**FOLD4_LATE, "rows_common.FORWARD_PIPELINE": True}

# (part, kind, dtype, [(setting name, consts)]): consts "module.NAME" -> value while the kernel is built;
# "reduction" the cross_entropy kernel's (absent: "mean")
CE_NEW = [("loss rows only", {"reduction": None}), ("mean", {}), ("mean, cluster fold 4", FOLD4),
          ("mean, cluster late", LATE), ("mean, cluster fold 4, late", FOLD4_LATE)]
CE_TAIL = [("loss rows only", {"reduction": None}), ("mean", {}), ("mean, poll", POLL),
           ("mean, poll, early ticket", EARLY_TICKET), ("mean, cluster", CLUSTER), ("mean, cluster 16", CLUSTER16),
           ("mean, cluster barrier", CLUSTER_BARRIER)]
PIPELINED = [("mean, cluster fold 4, late, pipelined", FOLD4_LATE_PIPELINED)]
"""float32 4096's rows loop loads no row ahead (rows_common.FORWARD_MEASURED: float32 to 1024), so
LOSS_TAIL_CLUSTER_LATE changes nothing there: this kernel alone pipelined (the fold's 2 to 4 rows a
CTA loaded a row ahead, the late start after the first row's loads). Data only: no table flips it
(FORWARD_MEASURED is by type and N for every kind)."""
CELLS = [
    ("ce", "cross_entropy", "float32", [c for c in CE_NEW if "late" not in c[0]] + PIPELINED),
    ("ce", "cross_entropy", "bfloat16", CE_NEW),
    ("ce-tail", "cross_entropy", "float32", CE_TAIL),
    ("ce-tail", "cross_entropy", "bfloat16", CE_TAIL),
    ("early", "softmax", "float32", [("dispatch", {}), ("early copy", EARLY)]),
    ("early", "rms_norm", "float32", [("dispatch", {}), ("early copy", EARLY)]),
    ("early", "layer_norm", "float32", [("dispatch", {}), ("early copy", EARLY)]),
]
BASE = {"ce": "mean", "ce-tail": "mean", "early": "dispatch"}
"""The setting each other is compared with (its bits, its time)."""
FLIP = {
    "early copy": "rows_bulk.EARLY_COPY_CTA_MEASURED = half_as_bfloat16({{{keys}}})",
    "mean, poll": "rows_lower.LOSS_TAIL_POLL_MEASURED = rows_common.half_as_bfloat16({{{keys}}})",
    "mean, poll, early ticket": "rows_lower.LOSS_TAIL_POLL_MEASURED and rows_lower.LOSS_TAIL_EARLY_TICKET_MEASURED = "
                                "rows_common.half_as_bfloat16({{{keys}}}) (both)",
    "mean, cluster": "rows_lower.LOSS_TAIL_CLUSTER_MEASURED = rows_common.half_as_bfloat16({{{keys}}})",
    "mean, cluster 16": "rows_lower.LOSS_TAIL_CLUSTER_MEASURED = rows_common.half_as_bfloat16({{{keys}}}) and "
                        "rows_lower.LOSS_TAIL_CLUSTER_MAX = 16",
    "mean, cluster barrier": "rows_lower.LOSS_TAIL_CLUSTER_MEASURED = rows_common.half_as_bfloat16({{{keys}}}) and "
                             "rows_lower.LOSS_TAIL_CLUSTER_BARRIER = True",
    "mean, cluster fold 4": "rows_lower.LOSS_TAIL_CLUSTER_FOLD_MEASURED = rows_common.half_as_bfloat16({{{keys}}})",
    "mean, cluster late": "rows_lower.LOSS_TAIL_CLUSTER_LATE_MEASURED = rows_common.half_as_bfloat16({{{keys}}})",
    "mean, cluster fold 4, late": "rows_lower.LOSS_TAIL_CLUSTER_FOLD_MEASURED = rows_common.half_as_bfloat16({{{keys}}}) "
                                  "and rows_lower.LOSS_TAIL_CLUSTER_LATE_MEASURED = rows_common.half_as_bfloat16("
                                  "{{{late_keys}}})",
}
"""The table entry of each setting, ``keys`` its winning cells (rows_bulk's by (kind, type), rows_lower's by type)."""
MUST_GAIN = {"early copy": SMALL_M, "mean, poll": (8, 64), "mean, poll, early ticket": (8, 64), "mean, cluster": (8,),
             "mean, cluster 16": (8, 16), "mean, cluster barrier": (8,), "mean, cluster fold 4": (32, 64),
             "mean, cluster late": (64,), "mean, cluster fold 4, late": (32, 64),
             "mean, cluster fold 4, late, pipelined": (32, 64)}
"""The M where a setting must gain (GAIN); elsewhere it must not lose (LARGE_LOSS): the poll leaves
M = 1 (a grid of one CTA, no ticket) as it is; the cluster tail gains where the grid is one cluster;
the fold where it makes one (M = 32 and 64: 16 CTAs of 2 and 4 rows), the late start where the
grid is not one cluster (M = 64 without the fold)."""
FOLDS = {"mean, cluster fold 4": 4, "mean, cluster fold 4, late": 4}
"""The fold of a setting of rows_lower.LOSS_TAIL_CLUSTER_FOLD: where it gains at 32 and not at 64, the
verdict names a fold of 2 (M = 33 to 64 then the default's grid, as the base's)."""
OWN_BITS = {name: (17, 16 * fold) for name, fold in {**FOLDS, PIPELINED[0][0]: 4}.items()}
"""The M where a setting's ``reduced`` has its own bits (the fold's order, rows_lower.LOSS_TAIL_CLUSTER_FOLD):
there its loss rows are compared with the base's bit for bit, its ``reduced`` with a second call's
(run to run), not with the base's."""




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
    every = {"early copy": ", ".join(f'("{kind}", F32.name): ((4096, 4096),)' for _, kind, _, st in CELLS if st[1][0] == "early copy"),
             "mean, poll": "F32.name: ((4096, 4096),), BF16.name: ((4096, 4096),)"}
    for name in ("mean, poll, early ticket", "mean, cluster", "mean, cluster 16", "mean, cluster barrier",
                 "mean, cluster late"):
        every[name] = every["mean, poll"]
    for name, fold in FOLDS.items():
        every[name] = f"F32.name: ((4096, 4096, {fold}),), BF16.name: ((4096, 4096, {fold}),)"
    for name, line in FLIP.items():
        print(f"  {name}: {line.format(keys=every[name], late_keys=every['mean, poll'])}")
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
                lo_hi = OWN_BITS.get(name)
                own = reduced and lo_hi is not None and lo_hi[0] <= m <= lo_hi[1]
                if own:  # (the loss rows the base's; reduced the same in a second call: the fold's own order)
                    again, o2 = call_of(torch, k, kind, t, consts)
                    again()
                    sync(torch)
                    bits = same_bits(torch, outs[i][:1], outs[base][:1]) and same_bits(torch, o2, outs[i])
                alone, o1 = call_of(torch, k, kind, t, consts, rows=1)
                alone()
                sync(torch)
                inv = torch.equal(o1[0].view(torch.uint8), outs[i][0][:1].view(torch.uint8))
                sound = bits and inv and err < (1e-4 if dtype == "float32" else 2e-2)
                out.append((part, kind, dtype, name, m, med[i], med[base], sound))
                print(f"| {part} | {kind} | {dtype} | {m} | {med[-1]:.2f} | {name} | {med[i]:.2f} | "
                      f"{med[i] / med[base]:.3f} | {err:.1e} | {('own, run to run' if own else 'same') if bits else 'DIFFER'} | "
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
          f"(M = {', '.join(map(str, (*SMALL_M, LARGE_M)))}; the ce parts also 16, ce 32), the same bits (a fold's "
          "own past 16, run to run), batch-invariant, near float64):")
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
    late_wins: dict[str, list[str]] = {name: [] for name in FLIP}  # (a fold's late start: the types it won)
    for (name, kind, dtype), rows in groups.items():
        complete = len(rows) == len(PART_M.get(parts[(name, kind, dtype)], (*SMALL_M, LARGE_M)))

        def passes(must: tuple[int, ...], skip: tuple[int, ...] = (), rows=rows) -> bool:
            return complete and all(s and r <= (GAIN if m in must else LARGE_LOSS) for m, r, s in rows if m not in skip)

        ok = passes(MUST_GAIN[name])
        fold = FOLDS.get(name, 1) if ok else 1
        if not ok and name in FOLDS and passes((32,), skip=(64,)):  # (a fold of 2: M = 64 as the base's grid)
            ok, fold = True, 2
        ratios = ", ".join(f"M {m}: {r:.3f}{'' if s else ' (unsound)'}" for m, r, s in rows)
        print(f"  {name} | {kind} {dtype}: {ratios} -> {'FLIP' + (f' (fold {fold})' if name in FOLDS else '') if ok else 'keep off'}")
        if ok:
            t = f"{'F32' if dtype == 'float32' else 'BF16'}.name"
            key = f'("{kind}", {t})' if name == "early copy" else t
            wins[name].append(f"{key}: ((4096, 4096{f', {fold}' if name in FOLDS else ''}),)")
            late_wins[name].append(f"{key}: ((4096, 4096),)")
    for name, keys in wins.items():
        if keys:
            print("  flip: " + FLIP[name].format(keys=", ".join(dict.fromkeys(keys)),
                                                 late_keys=", ".join(dict.fromkeys(late_wins[name]))))
        else:
            print(f"  {name}: leave its table empty")
    fold_won = [name for name in ("mean, cluster fold 4", "mean, cluster fold 4, late") if wins[name]]
    if len(fold_won) > 1 or (fold_won and wins["mean, cluster late"]):  # (both tables' lines overlap: one to take)
        print("  fold settings and the late start won together: take 'mean, cluster fold 4, late''s line where its "
              "ratios at M = 32 and 64 are at most GAIN of the fold's alone, else the fold's line and the late "
              "start's own line (each table once)")
    won = [name for name in ("mean, cluster", "mean, cluster barrier", "mean, cluster 16") if wins[name]]
    if len(won) > 1:  # (one table: the fastest form at M = 8, the 16's if within 1 / GAIN of it)
        at8: dict[str, list[float]] = {}
        for _p, _kind, _dtype, name, m, us, base_us, _s in runs:
            if m == 8 and name in won:
                at8.setdefault(name, []).append(us / base_us)
        worst = {name: max(v) for name, v in at8.items()}
        best = min(worst, key=worst.__getitem__)
        take = "mean, cluster 16" if worst.get("mean, cluster 16", float("inf")) <= worst[best] / GAIN else best
        also = " (with LOSS_TAIL_CLUSTER_BARRIER = True: the barrier form won too)" if (
            take == "mean, cluster 16" and "mean, cluster barrier" in won) else ""
        print(f"  cluster settings that win, the worst ratio at M = 8: "
              f"{', '.join(f'{n} {r:.3f}' for n, r in worst.items())} -> take {take}'s line{also}")


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
