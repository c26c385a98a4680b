"""The randomized correctness run of the list reductions (bulkred_dialect/foreach.py,
docs/foreach.md) on the GPU machine, against a float64 reference and torch.

    python3 tools/gpu_foreach_random.py [--seed S] [--count 500]
    python3 tools/gpu_foreach_random.py --seed S --only 17 42    # repeat cases, verbose

The seed is printed first and last. Case K of seed S is the same list every time (it is
drawn from (S, K) alone), so ``--seed S --only K`` repeats one failure. Cases 0 and 1 are
the empty list and one tensor; every 25th case (K = 2 mod 25) is a single tensor of 10^8
elements, the next one 3,000 tensors; the others draw 0 to 3,000 tensors (log-uniform),
each of 0 to 10^8 elements (log-uniform below a per-list limit; one in twenty empty),
the whole list capped at --max-bytes (1.5 GB: the sizes are scaled down to fit), of one
dtype or a mix of float32, float16 and bfloat16, magnitudes 10^-2 to 10^2; in some lists
dense views (transposed, permuted, at an odd element offset, so not 16-byte aligned),
and in 30% of them NaN, inf or -inf placed in random tensors (NaN alone in a quarter of
those, so that found_inf is set by a NaN alone).

Every case checks, in this order (the in-place functions last, each on what the one
before left):

- ``foreach_norm(ts, ord)``, ord drawn from 2, 1, 3, inf, -inf, 0, 0.5: each tensor's
  norm against ``torch.linalg.vector_norm(t, ord, dtype=torch.float64)``;
- ``total_norm(ts, ord)`` and ``total_norm(ts, ord, local=True)``: the norm of the list
  as one vector (ord 0: its count of nonzeros), and the power before the root;
- ``foreach_amax(ts)``: max |x| per tensor, exact;
- ``repeat``: foreach_norm and total_norm again, and on a new list of the same tensors:
  the same bits;
- ``unscale_and_norm_(ts, inv_scale, found_inf, ord)``: the grads against AMP's
  ``torch._amp_foreach_non_finite_check_and_unscale_`` on a copy, one call per dtype
  (its formula for bfloat16, which torch's CUDA kernel does not take): bit-identical for
  a power-of-two inv_scale, within a unit of the dtype for another; found_inf equal to
  its (starting at 0, or at 1: it stays 1; set by the inputs alone, not by products that
  overflow: one list in twenty draws inv_scale inf, 1e30 or 2^20); the norm against float64 of that copy, or of
  the products before their rounding to the dtype (the contract does not say which);
- ``clip_grad_norm_(ts, max_norm, ord)``, max_norm such that max_norm / (total + 1e-6)
  (the coefficient, from the float64 total) is 0.01 to 0.9, 0.5, 2, or 1.1 to 100: the
  total against float64; the grads against torch's
  ``get_total_norm`` and ``min(max_norm / (total + 1e-6), 1)`` multiply on float64
  copies (float64, not float32: torch's float32 norm on the CPU is off by 1e-3 at 10^7
  elements), rounded to the grads' dtypes (bit-identical when the coefficient is above
  1: nothing is clipped); ord 0 is not
  drawn here (torch's ord-0 total counts tensors, bulkred's elements: docs/foreach.md).

NaN must match NaN and inf must match inf, everywhere.

Tolerance of a norm (float32 accumulation against float64). The inputs convert exactly
to float32. Each term ``|x|^p`` is formed with a relative error of at most 2u
(u = 2^-24: one rounding of powf, or two of x*x*x), the root adds one rounding. A float32
sum of n nonnegative terms along a summation tree of depth d is within
gamma_d = d*u / (1 - d*u) of the exact sum, relative to that sum (each rounding is
relative to a partial sum no larger than the total; nonnegative terms do not cancel:
Higham, Accuracy and Stability of Numerical Algorithms, section 4.2). The kernel
(docs/foreach.md, "How it works") adds at most L elements one after another in a thread
(a serial run), combines the threads of a CTA in a tree, and the last CTA adds a tensor's
per-CTA partials one after another, so for a tensor of n elements

    d(n) <= min(n, L) + ceil(log2 n) + ceil(n / (256 L)) + 1

and a list's total adds its per-tensor powers one after another: d = max d(n_i) + m.
The root divides the relative error by p (multiplies it for p < 1). The check is

    |got - want| <= max(1e-4, (d + 4) u) * max(1, 1/p) * |want|

With L = 1024 (``--serial-run``; an assumption about the kernel, not the contract) a
tensor of 10^8 elements has d = 1434 and (d + 4) u = 8.6e-5, so the floor 1e-4 holds
for every single tensor, and a total of 3,000 tensors gets 2.6e-4. The worst-case bound
is far above what happens (rounding errors of a sum grow like sqrt(d) u in practice):
the summary prints each check's largest error as a fraction of its tolerance. Ord inf
and -inf are exact (a maximum of exactly converted elements); ord 0 counts take the same
bound (a float32 count is exact below 2^24).

Clipped grads: bulkred's coefficient is within tol(total) of the float64 one; a grad
times either, rounded to its dtype, is within one unit of the dtype (eps) of the other,
so the check is ``rtol = eps(dtype) + 2 tol(total)`` (and twice the smallest subnormal).

Needs torch (CUDA) and bulkred only. Exit status 1 when any check failed.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

torch = None  # torch and bulkred_dialect, imported by _load() (after ROOT is on sys.path)
bulkred = None

DEVICE = "cuda"
INF = math.inf
NORM_ORDS = (2.0, 1.0, 3.0, INF, -INF, 0.0, 0.5)
CLIP_ORDS = (2.0, 1.0, 3.0, INF, -INF, 0.5)
OVERFLOWING = (INF, 1e30, 2.0**20)  # inv_scale values whose products overflow
DTYPES = ("float32", "float16", "bfloat16")
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
MAX_TENSORS = 3000
MAX_ELEMENTS = 10**8
U = 2.0**-24
FUNCTIONS = ("foreach_norm", "total_norm", "total_norm(local)", "foreach_amax", "repeat", "unscale_and_norm_", "clip_grad_norm_")


# ------------------------------------------------------------------------------ cases


def draw_case(seed: int, k: int, max_bytes: float) -> dict:
    """Case k of seed: plain data (sizes, dtypes, views, specials, ords), from (seed, k)."""
    r = random.Random(f"gpu_foreach_random:{seed}:{k}")
    kind = "random"
    emax = r.uniform(0.0, 8.0)
    if k == 0:
        kind, n = "empty list", 0
    elif k == 1:
        kind, n = "one tensor", 1
    elif k % 25 == 2:
        kind, n = "one 1e8 tensor", 1
    elif k % 25 == 3:
        kind, n, emax = "3000 tensors", MAX_TENSORS, r.uniform(0.0, 6.0)
    else:
        n = round(math.exp(r.uniform(0.0, math.log(MAX_TENSORS + 1)))) - 1
    mix = "mixed" if r.random() < 0.5 else r.choice(DTYPES)
    dtypes = [r.choice(DTYPES) if mix == "mixed" else mix for _ in range(n)]
    if kind == "one 1e8 tensor":
        sizes = [MAX_ELEMENTS]
    else:
        sizes = [0 if r.random() < 0.05 else int(10 ** r.uniform(0.0, emax)) - 1 for _ in range(n)]
        sizes = [min(s, MAX_ELEMENTS) for s in sizes]
    total_bytes = sum(s * ITEMSIZE[d] for s, d in zip(sizes, dtypes))
    if total_bytes > max_bytes:
        f = max_bytes / total_bytes
        sizes = [int(s * f) for s in sizes]
    view_p = 0.0 if r.random() < 0.6 else r.choice((0.1, 0.3, 1.0))
    tensors = []
    for size, dtype in zip(sizes, dtypes):
        t = {"size": size, "dtype": dtype, "view": "", "scale": 10 ** r.uniform(-2.0, 2.0)}
        if size >= 4 and r.random() < view_p:
            t["view"] = r.choice(("transposed", "permuted", "offset"))
            if t["view"] == "transposed":
                cols = r.randint(2, max(2, min(size // 2, 4096)))
                t["shape"] = (size // cols, cols)
                t["size"] = size // cols * cols
            elif t["view"] == "permuted":
                a, b = r.randint(2, 8), r.randint(2, 8)
                c = max(1, size // (a * b))
                t["shape"] = (a, b, c)
                t["size"] = a * b * c
            else:
                t["offset"] = r.randint(1, 7)
        tensors.append(t)
    specials = []
    nonempty = [i for i, t in enumerate(tensors) if t["size"]]
    if nonempty and r.random() < 0.3:
        values = r.choice(((math.nan,), (INF,), (-INF,), (math.nan, INF, -INF)))  # NaN alone in a quarter
        for _ in range(r.randint(1, 3)):
            i = r.choice(nonempty)
            pos = tensors[i]["size"] - 1 if r.random() < 0.3 else r.randrange(tensors[i]["size"])
            specials.append((i, pos, r.choice(values)))
    power_of_two = r.random() < 0.8
    return {
        "k": k,
        "kind": kind,
        "mix": mix,
        "tensors": tensors,
        "specials": specials,
        "gen_seed": r.getrandbits(62),
        "ord_norm": r.choice(NORM_ORDS),
        "ord_total": r.choice(NORM_ORDS),
        "ord_unscale": r.choice(NORM_ORDS),
        "ord_clip": r.choice(CLIP_ORDS),
        # one list in twenty: an inv_scale that overflows (inf; 1e30 and 2^20 overflow float16
        # and bfloat16 products): found_inf is AMP's check of the inputs, not of the products
        "inv_scale": r.choice(OVERFLOWING) if r.random() < 0.05
        else 2.0 ** -r.randint(0, 16) if power_of_two else 1.0 / r.uniform(1.0, 65536.0),
        "found_inf0": 1.0 if r.random() < 0.2 else 0.0,
        "clip_factor": r.choice((0.5, 2.0, 10 ** r.uniform(-2.0, math.log10(0.9)), 10 ** r.uniform(math.log10(1.1), 2.0))),
    }


def build(case: dict) -> list:
    """The case's tensors on the device: float32 normal values times each tensor's scale,
    the specials placed, converted to the dtype, then viewed."""
    g = torch.Generator(device=DEVICE).manual_seed(case["gen_seed"])
    by_tensor = defaultdict(list)
    for i, pos, value in case["specials"]:
        by_tensor[i].append((pos, value))
    ts = []
    for i, t in enumerate(case["tensors"]):
        size, view, off = t["size"], t["view"], t.get("offset", 0)
        base = torch.randn(size + off, device=DEVICE, generator=g)
        base.mul_(t["scale"])
        for pos, value in by_tensor.get(i, ()):
            base[off + pos] = value
        base = base.to(getattr(torch, t["dtype"]))
        if view == "transposed":
            x = base.view(t["shape"]).t()
        elif view == "permuted":
            x = base.view(t["shape"]).permute(2, 0, 1)
        elif view == "offset":
            x = base[off:]
        else:
            x = base
        ts.append(x)
    return ts


def size_bucket(case: dict) -> str:
    n = sum(t["size"] for t in case["tensors"])
    for limit, name in ((0, "0"), (10**3, "<=1e3"), (10**6, "<=1e6"), (10**7, "<=1e7"), (10**8 - 1, "<1e8")):
        if n <= limit:
            return f"elements {name}"
    return "elements >=1e8"


# -------------------------------------------------------------------------- reference


def _identity(p: float) -> float:
    return INF if p == -INF else 0.0


def _roots(p: float) -> bool:
    return p not in (0.0, INF, -INF)


def ref_norms(ts: list, p: float):
    """float64 [m] on the device: each tensor's norm in float64, its identity if empty."""
    m = len(ts)
    out = torch.full((m,), _identity(p), dtype=torch.float64, device=DEVICE)
    idx = [i for i, t in enumerate(ts) if t.numel()]
    if idx:
        vals = [torch.linalg.vector_norm(ts[i], p, dtype=torch.float64) for i in idx]
        out[torch.tensor(idx, device=DEVICE)] = torch.stack(vals)
    return out


def ref_power(norms, p: float):
    """The list's power from the per-tensor norms: what local=True gives."""
    if not norms.numel():
        return torch.tensor(_identity(p), dtype=torch.float64, device=DEVICE)
    if p == INF:
        return norms.max()
    if p == -INF:
        return norms.min()
    if p == 0:
        return norms.sum()
    return (norms**p).sum()


def ref_total(norms, p: float):
    if not norms.numel():
        return torch.tensor(0.0, dtype=torch.float64, device=DEVICE)
    power = ref_power(norms, p)
    return power ** (1.0 / p) if _roots(p) else power


def depth(n: int, serial_run: int) -> int:
    if n <= 1:
        return 1
    return min(n, serial_run) + math.ceil(math.log2(n)) + math.ceil(n / (256 * serial_run)) + 1


def tolerance(d: int, p: float) -> float:
    if p in (INF, -INF):
        return 0.0
    root = max(1.0, 1.0 / p) if _roots(p) else 1.0
    return max(1e-4, (d + 4) * U) * root


def compare(got, want, tol) -> tuple[bool, float, str]:
    """got (float32, bulkred's) against want (float64): NaN and inf where want has them,
    exact where tol is 0, else within tol relative. Returns (ok, worst error / tol, why)."""
    g = got.detach().reshape(-1).double().cpu()
    w = want.detach().reshape(-1).double().cpu()
    if g.shape != w.shape:
        return False, INF, f"shape {tuple(got.shape)}, want {tuple(want.shape)}"
    if got.dtype != torch.float32:
        return False, INF, f"dtype {got.dtype}, want float32"
    tol = torch.as_tensor(tol, dtype=torch.float64).expand(w.shape)
    nan_g, nan_w = g.isnan(), w.isnan()
    if not torch.equal(nan_g, nan_w):
        i = int((nan_g != nan_w).nonzero()[0])
        return False, INF, f"NaN mismatch at {i}: got {g[i].item()}, want {w[i].item()}"
    inf_w = w.isinf()
    if not torch.equal(g[inf_w], w[inf_w]) or g[~inf_w & ~nan_w].isinf().any():
        i = int(((g != w) & (inf_w | g.isinf())).nonzero()[0])
        return False, INF, f"inf mismatch at {i}: got {g[i].item()}, want {w[i].item()}"
    fin = ~(nan_w | inf_w)
    g, w, tol = g[fin], w[fin], tol[fin]
    if not g.numel():
        return True, 0.0, ""
    exact = tol == 0
    if exact.any():
        bad = exact & (g != w.float().double())
        if bad.any():
            i = int(bad.nonzero()[0])
            return False, INF, f"not exact at {i}: got {g[i].item()!r}, want {w[i].item()!r}"
    err = (g - w).abs()
    rel = torch.where(w == 0, torch.where(err == 0, 0.0, INF), err / w.abs())
    ratio = torch.where(exact, 0.0, rel / tol.clamp_min(1e-300))
    worst = float(ratio.max())
    if worst > 1.0:
        i = int(ratio.argmax())
        return False, worst, f"relative error {rel[i].item():.3g} above {tol[i].item():.3g}: got {g[i].item()!r}, want {w[i].item()!r}"
    return True, worst, ""


def _groups(ts: list) -> dict:
    groups: dict = defaultdict(list)
    for i, t in enumerate(ts):
        if t.numel():
            groups[t.dtype].append(i)
    return groups


def compare_tensors(ours: list, theirs: list, rtol_extra: float | None) -> tuple[bool, str]:
    """ours[i] against theirs[i] (same dtypes): bit-equal (NaN equal to NaN) when
    rtol_extra is None, else within eps(dtype) + rtol_extra (and twice the smallest
    subnormal) relative."""
    for dtype, idx in _groups(ours).items():
        a = torch.cat([ours[i].reshape(-1) for i in idx]).float()
        b = torch.cat([theirs[i].reshape(-1).to(dtype) for i in idx]).float()
        same = (a == b) | (a.isnan() & b.isnan())
        if rtol_extra is not None:
            fi = torch.finfo(dtype)
            rtol = fi.eps + rtol_extra
            atol = 2 * fi.smallest_normal * fi.eps
            same |= (a - b).abs() <= rtol * b.abs() + atol
        if not bool(same.all()):
            j = int((~same).nonzero()[0])
            starts, at = 0, None
            for i in idx:
                if j < starts + ours[i].numel():
                    at = (i, j - starts)
                    break
                starts += ours[i].numel()
            return False, f"{dtype} tensor {at[0]} element {at[1]}: got {a[j].item()!r}, want {b[j].item()!r}" + (
                "" if rtol_extra is None else f" (rtol {rtol:.3g})"
            )
    return True, ""


# --------------------------------------------------------------------------- one case


def run_case(case: dict, serial_run: int, verbose: bool) -> list[tuple[str, bool, float, str]]:
    """Every check of one case: (function, ok, worst error / tolerance, why)."""
    results: list[tuple[str, bool, float, str]] = []

    def check(name, fn):
        try:
            ok, worst, why = fn()
        except Exception as e:  # noqa: BLE001 - a crash is a failure of that function
            ok, worst, why = False, INF, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            if verbose:
                traceback.print_exc()
        results.append((name, ok, worst, why))
        if verbose:
            print(f"  {name:18s} {'ok  ' if ok else 'FAIL'} worst/tol {worst:.3g} {why}", flush=True)

    ts = build(case)
    sizes = [t.numel() for t in ts]
    d_each = torch.tensor([depth(n, serial_run) for n in sizes], dtype=torch.float64)
    d_total = (max(d_each.tolist()) if sizes else 1) + len(ts)

    def tol_each(p):
        return torch.tensor([tolerance(int(d), p) for d in d_each.tolist()], dtype=torch.float64)

    p1, p2, p3, p4 = case["ord_norm"], case["ord_total"], case["ord_unscale"], case["ord_clip"]
    memo: dict = {}

    def norms0(p):  # the reference norms of the list as built (before the in-place functions)
        if p not in memo:
            memo[p] = ref_norms(ts, p)
        return memo[p]

    def f_norm():
        return compare(bulkred.foreach_norm(ts, p1), norms0(p1), tol_each(p1))

    def f_total():
        got = bulkred.total_norm(ts, p2)
        if not ts and p2 == -INF and float(got) in (0.0, INF):
            return True, 0.0, ""  # the empty list's -inf total: 0 (torch's) or inf (the identity) both taken
        return compare(got, ref_total(norms0(p2), p2), tolerance(d_total, p2))

    def f_local():
        got = bulkred.total_norm(ts, p2, local=True)
        return compare(got, ref_power(norms0(p2), p2), tolerance(d_total, p2 if not _roots(p2) else 1.0))

    def f_amax():
        return compare(bulkred.foreach_amax(ts), norms0(INF), 0.0)

    def f_repeat():
        a, b, c = bulkred.foreach_norm(ts, p1), bulkred.foreach_norm(ts, p1), bulkred.foreach_norm(list(ts), p1)
        s, t, u = bulkred.total_norm(ts, p2), bulkred.total_norm(ts, p2), bulkred.total_norm(tuple(ts), p2)
        bits = [x.view(torch.int32) for x in (a, b, c, s.reshape(1), t.reshape(1), u.reshape(1))]
        if not (torch.equal(bits[0], bits[1]) and torch.equal(bits[0], bits[2])):
            return False, INF, "foreach_norm gave other bits on a second call"
        if not (torch.equal(bits[3], bits[4]) and torch.equal(bits[3], bits[5])):
            return False, INF, f"total_norm gave other bits on a second call: {s.item()!r}, {t.item()!r}, {u.item()!r}"
        return True, 0.0, ""

    for name, fn in (("foreach_norm", f_norm), ("total_norm", f_total), ("total_norm(local)", f_local), ("foreach_amax", f_amax), ("repeat", f_repeat)):
        check(name, fn)

    def f_unscale():
        inv_value = case["inv_scale"]
        inv = torch.full((1,), inv_value, device=DEVICE)
        # the norm of the exact products x * inv_scale, before they are rounded to the
        # grads' dtype (a p-norm is homogeneous; a count does not change)
        exact_norm = ref_total(norms0(p3), p3) * (1.0 if p3 == 0 else inv_value)
        copies = [t.clone() for t in ts]
        found_ref = torch.full((1,), case["found_inf0"], device=DEVICE)
        for dtype, idx in _groups(copies).items():
            if dtype != torch.bfloat16:
                torch._amp_foreach_non_finite_check_and_unscale_([copies[i] for i in idx], found_ref, inv)
                continue
            for i in idx:  # torch's CUDA kernel has no bfloat16 case: its formula
                found_ref.copy_(torch.maximum(found_ref, (~torch.isfinite(copies[i])).any().float().reshape(1)))
                copies[i].copy_((copies[i].float() * inv).to(dtype))
        found = torch.full((1,), case["found_inf0"], device=DEVICE)
        norm = bulkred.unscale_and_norm_(ts, inv, found, ord=p3)
        if not torch.equal(found, found_ref):
            return False, INF, f"found_inf {found.item()}, torch's {found_ref.item()} (it started at {case['found_inf0']})"
        ok, why = compare_tensors(ts, copies, None if math.log2(inv_value).is_integer() else 0.0)
        if not ok:
            return False, INF, f"unscaled grads: {why}"
        # the norm of the grads as stored (torch's unscale_ then get_total_norm), or of the
        # products before rounding: the contract does not say which; both are taken
        tol = tolerance(d_total, p3)
        ok, worst, why = compare(norm, ref_total(ref_norms(copies, p3), p3), tol)
        if not ok:
            ok2, worst2, why2 = compare(norm, exact_norm, max(tol, 1e-4))  # float32 products: not exact
            if ok2:
                return True, worst2, ""
            why = f"{why}; against the unrounded products: {why2}"
        return ok, worst, why

    check("unscale_and_norm_", f_unscale)

    def f_clip():
        total64 = float(ref_total(ref_norms(ts, p4), p4))  # ts as the unscale left it
        # max_norm / (total + 1e-6) is the drawn factor: never near 1, where float32 and
        # float64 could disagree on whether to clip
        max_norm = case["clip_factor"] * ((total64 + 1e-6) if math.isfinite(total64) else 1.0)
        nonempty = [t.to(torch.float64, copy=True) for t in ts if t.numel()]
        theirs, it = [], iter(nonempty)
        for t in ts:
            theirs.append(next(it) if t.numel() else t)
        if nonempty:
            total_t = torch.nn.utils.get_total_norm(nonempty, p4).to(DEVICE)
            torch._foreach_mul_(nonempty, torch.clamp(max_norm / (total_t + 1e-6), max=1.0))
        got = bulkred.clip_grad_norm_(ts, max_norm, p4)
        tol = tolerance(d_total, p4)
        ok, worst, why = compare(got, torch.tensor(total64 if ts else 0.0, dtype=torch.float64), tol)
        if not ok:
            return False, worst, f"total: {why}"
        clips = not (case["clip_factor"] >= 1.0 and math.isfinite(total64))  # NaN and inf clip, as torch
        ok, why = compare_tensors(ts, theirs, 2 * max(tol, 1e-4) if clips else None)
        if not ok:
            return False, INF, f"clipped grads ({'clipped' if clips else 'not clipped'}): {why}"
        return True, worst, ""

    check("clip_grad_norm_", f_clip)
    return results


# ------------------------------------------------------------------------------- main


def describe(case: dict) -> str:
    ts = case["tensors"]
    n = sum(t["size"] for t in ts)
    views = Counter(t["view"] for t in ts if t["view"])
    return (
        f"case {case['k']}: {case['kind']}, {len(ts)} tensors, {n} elements, {case['mix']}"
        + (f", views {dict(views)}" if views else "")
        + (f", specials {case['specials'][:3]}" if case["specials"] else "")
        + f", ords norm {case['ord_norm']:g} total {case['ord_total']:g} unscale {case['ord_unscale']:g} clip {case['ord_clip']:g}"
        + f", inv_scale {case['inv_scale']:.6g}, found_inf0 {case['found_inf0']:g}, clip factor {case['clip_factor']:.3g}"
    )


def _load() -> None:
    global torch, bulkred
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if torch is None:
        import torch as torch_module

        torch = torch_module
    if bulkred is None:
        import bulkred_dialect as bulkred_module

        bulkred = bulkred_module


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=None, help="the run's seed (default: a fresh one)")
    ap.add_argument("--count", type=int, default=500, help="number of cases (default 500)")
    ap.add_argument("--only", type=int, nargs="+", default=None, metavar="K", help="run only these cases, verbose")
    ap.add_argument("--max-bytes", type=float, default=1.5e9, help="cap on a list's bytes (default 1.5e9)")
    ap.add_argument("--serial-run", type=int, default=1024, help="L of the tolerance bound (default 1024)")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else time.time_ns() % (1 << 32)
    print(f"seed {seed}", flush=True)
    _load()
    if not torch.cuda.is_available():
        print("torch sees no CUDA device: nothing to run")
        print(f"seed {seed}")
        return 1
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    ks = args.only if args.only is not None else list(range(args.count))
    verbose = args.only is not None
    checks: Counter = Counter()
    failed: Counter = Counter()
    worst: dict = defaultdict(float)
    by_mix: Counter = Counter()
    by_size: Counter = Counter()
    flags: Counter = Counter()
    failures: list[str] = []
    start = time.monotonic()
    total_mem = torch.cuda.get_device_properties(0).total_memory
    for k in ks:
        case = draw_case(seed, k, args.max_bytes)
        if verbose:
            print(describe(case), flush=True)
        by_mix[case["mix"] if case["tensors"] else "no tensors"] += 1
        by_size[size_bucket(case)] += 1
        flags["views"] += any(t["view"] for t in case["tensors"])
        flags["offset views (unaligned)"] += any(t["view"] == "offset" for t in case["tensors"])
        flags["NaN/inf placed"] += bool(case["specials"])
        flags["empty tensors"] += any(t["size"] == 0 for t in case["tensors"])
        flags[case["kind"]] += case["kind"] != "random"
        try:
            results = run_case(case, args.serial_run, verbose)
        except Exception as e:  # noqa: BLE001 - building the case failed: report it, go on
            results = [("build", False, INF, f"{type(e).__name__}: {e}")]
            if verbose:
                traceback.print_exc()
        for name, ok, w, why in results:
            checks[name] += 1
            if math.isfinite(w):
                worst[name] = max(worst[name], w)
            if not ok:
                failed[name] += 1
                failures.append(f"case {k} {name}: {why}\n    {describe(case)}\n    repeat: python3 tools/gpu_foreach_random.py --seed {seed} --only {k}")
        torch.cuda.synchronize()
        if torch.cuda.memory_reserved() > total_mem // 2:
            torch.cuda.empty_cache()
        if not verbose and (k + 1) % 50 == 0:
            print(f"  {k + 1} cases, {len(failures)} failures, {time.monotonic() - start:.0f} s", flush=True)
    elapsed = time.monotonic() - start

    print(f"\n{len(ks)} cases in {elapsed:.1f} s")
    print("checks per function (runs, failures, largest error / tolerance):")
    for name in [*FUNCTIONS, *(n for n in checks if n not in FUNCTIONS)]:
        if checks[name]:
            print(f"  {name:18s} {checks[name]:5d} {failed[name]:5d}   {worst[name]:.3g}")
    print("dtype mix: " + ", ".join(f"{m} {c}" for m, c in sorted(by_mix.items())))
    print("size: " + ", ".join(f"{m} {c}" for m, c in sorted(by_size.items())))
    print("lists with: " + ", ".join(f"{m} {c}" for m, c in sorted(flags.items()) if c))
    if failures:
        print(f"\n{len(failures)} FAILURES:")
        for f in failures:
            print(f)
    else:
        print("no failures")
    print(f"seed {seed}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
