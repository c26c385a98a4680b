"""torch's OpInfo samples of its reduction ops, through bulkred (issue: torch's whole
reduction surface): every sample of ``op_db`` of the ops below, in every dtype torch
supports on the device, forward and (float64) gradients, each sample's torch call
turned into the bulkred call that does the same (:func:`bulkred_call`), and each
outcome counted per op:

* ``passed``: the same result dtypes and shapes, the values within the dtype's tolerance
  (the same gradient);
* ``wrong``: the same dtypes, other values;
* ``other dtype``: another result dtype or shape;
* ``refused``: a one-line ``ReductionError``; each must be one of :data:`ALLOWED`
  (docs/from_torch.md, "What torch has that bulkred refuses", names them), else it
  counts as ``unexpected``.

A sample torch itself refuses is skipped. tests/gpu/test_torch_rules_gpu.py runs every
sample on the GPU (:func:`precompile` first compiles the kernels of all of them in
parallel processes, into the run's disk cache); tests/test_torch_rules.py a share of
them on the CPU, the kernels simulated from the plan (``random_reductions.simulate_plan``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

OPS: dict[tuple[str, str], str] = {
    ("sum", ""): "sum", ("nansum", ""): "nansum", ("mean", ""): "mean", ("nanmean", ""): "nanmean",
    ("prod", ""): "prod", ("amax", ""): "amax", ("amin", ""): "amin", ("any", ""): "any", ("all", ""): "all",
    ("count_nonzero", ""): "count_nonzero", ("logsumexp", ""): "logsumexp", ("argmax", ""): "argmax",
    ("argmin", ""): "argmin", ("aminmax", ""): "aminmax",
    ("var", ""): "var", ("var", "unbiased"): "var", ("std", ""): "std", ("std", "unbiased"): "std",
    ("var_mean", ""): "var_mean", ("var_mean", "unbiased"): "var_mean", ("std_mean", ""): "std_mean",
    ("std_mean", "unbiased"): "std_mean",
    ("max", "reduction_with_dim"): "max_with_indices", ("min", "reduction_with_dim"): "min_with_indices",
    ("max", "reduction_no_dim"): "amax", ("min", "reduction_no_dim"): "amin",
    ("linalg.vector_norm", ""): "vector_norm", ("norm", ""): "vector_norm", ("norm", "fro"): "vector_norm",
    ("norm", "inf"): "vector_norm", ("norm", "nuc"): "vector_norm", ("linalg.norm", ""): "vector_norm",
    ("linalg.norm", "subgradients_at_zero"): "vector_norm", ("linalg.matrix_norm", ""): "vector_norm",
}
"""(op name, variant) of ``op_db`` -> the bulkred function its samples call (31 ops)."""

NOT_DIFFERENTIABLE = {"any", "all", "count_nonzero", "argmax", "argmin"}


class MatrixNorm(Exception):
    """A sample of a matrix norm (nuclear, spectral, the max row/column sums): not a
    reduction of elements, out of bulkred's scope."""


ALLOWED: dict[str, Callable[[str, str, str], bool]] = {
    "matrix norms": lambda op, dtype, message: message == "matrix norm",
}
"""The refusals allowed, each a name (docs/from_torch.md, "What torch has that bulkred
refuses") and a predicate of (op, the input dtype, the refusal's message)."""


def allowed(op: str, dtype: str, message: str) -> str | None:
    return next((name for name, ok in ALLOWED.items() if ok(op, dtype, message)), None)


def _norm_call(name: str, variant: str, x: Any, args: list, kw: dict) -> dict:
    """vector_norm's keywords for torch.norm, linalg.norm and linalg.matrix_norm samples;
    :class:`MatrixNorm` for a matrix norm (Frobenius is the 2-norm of the elements)."""
    if name == "linalg.matrix_norm":
        kw.update(zip(["ord", "dim", "keepdim"], args))
        ord_ = kw.pop("ord", "fro")
        if ord_ != "fro":
            raise MatrixNorm
        return {"ord": 2, "dim": kw.pop("dim", (-2, -1)), **kw}
    if name == "norm":  # torch.norm(input, p='fro', dim=None, keepdim=False, dtype=None)
        kw.update(zip(["p", "dim", "keepdim", "dtype"], args))
        p = kw.pop("p", "fro")
        if p == "nuc":
            raise MatrixNorm
        return {"ord": 2 if p == "fro" else p, **kw}
    kw.update(zip(["ord", "dim", "keepdim"], args))  # linalg.norm(A, ord=None, dim=None, keepdim=False, dtype=None)
    ord_, dim = kw.pop("ord", None), kw.get("dim")
    dims = None if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if dims is None and ord_ is not None:
        dims = tuple(range(x.dim()))  # torch: a vector norm of a 1-D A, else a matrix norm of a 2-D one
    if dims is not None and len(dims) == 2:
        if ord_ not in (None, "fro"):
            raise MatrixNorm
        return {"ord": 2, **kw}
    return {"ord": 2 if ord_ is None else ord_, **kw}


def bulkred_call(bulkred: Any, name: str, variant: str, sample: Any) -> Any:
    """The bulkred call that does what ``op(sample.input, *sample.args, **sample.kwargs)``
    does, torch's positional arguments as keywords (torch's spelling dim=/keepdim=)."""
    x, args, kw = sample.input, list(sample.args), dict(sample.kwargs)
    fn = OPS[(name, variant)]
    if fn in ("var", "std", "var_mean", "std_mean"):
        if args and isinstance(args[0], bool):
            kw["unbiased"] = args.pop(0)
        kw.update(zip(["dim", "unbiased", "keepdim"], args))
        kw["correction"] = int(kw.pop("unbiased")) if "unbiased" in kw else kw.get("correction", 1)
    elif fn == "vector_norm" and name != "linalg.vector_norm":
        kw = _norm_call(name, variant, x, args, kw)
    elif fn == "vector_norm":
        kw.update(zip(["ord", "dim", "keepdim"], args))
    elif fn == "count_nonzero":
        kw.update(zip(["dim"], args))
    elif variant == "reduction_no_dim":
        pass
    else:
        kw.update(zip(["dim", "keepdim"], args))
    return getattr(bulkred, fn)(x, **kw)


@dataclass
class Counts:
    """The outcomes of one op's samples."""

    passed: int = 0
    wrong: int = 0
    other_dtype: int = 0
    refused: Counter = field(default_factory=Counter)  # the allowed name (or "unexpected") -> count
    problems: list[str] = field(default_factory=list)

    def row(self) -> str:
        refused = ", ".join(f"{k} {v}" for k, v in sorted(self.refused.items())) or "0"
        return f"passed {self.passed}, wrong {self.wrong}, other dtype {self.other_dtype}, refused {refused}"


def samples(torch: Any, device: str, dtypes: tuple[str, ...] | None = None, grad: bool = False,
            ops: set[str] | None = None, supported_on: str | None = None) -> Iterator[tuple[Any, str, Any]]:
    """(op, dtype name, sample) of every sample of :data:`OPS` in every dtype the op
    supports on ``device`` (``supported_on``: on that device instead; ``dtypes``: only
    these); ``grad``: float64 and complex128 samples that require grad, of the
    differentiable ops."""
    from torch.testing._internal.common_methods_invocations import op_db

    on = supported_on or device
    for op in op_db:
        key = (op.name, op.variant_test_name)
        if key not in OPS or (ops is not None and op.name not in ops):
            continue
        if grad:
            if OPS[key] in NOT_DIFFERENTIABLE or not op.supports_autograd:
                continue
            names = ("float64", "complex128")
        else:
            names = tuple(sorted(str(d).removeprefix("torch.") for d in op.supported_dtypes(on)))
        for dname in names:
            if dtypes is not None and dname not in dtypes:
                continue
            if getattr(torch, dname) not in op.supported_dtypes(on):
                continue
            for s in op.sample_inputs(device, getattr(torch, dname), requires_grad=grad):
                yield op, dname, s


def _results(r: Any) -> list:
    return list(r) if isinstance(r, tuple) else [r]


def _tolerance(torch: Any, dtype: Any) -> float:
    if dtype in (torch.float16, torch.bfloat16, torch.complex32):
        return 1e-2
    if dtype in (torch.float32, torch.complex64):
        return 1e-4
    return 1e-7


def run(torch: Any, bulkred: Any, cases: Iterator[tuple[Any, str, Any]], grad: bool = False) -> dict[str, Counts]:
    """Each case through torch and through bulkred: the counts per op (``name`` or
    ``name.variant``)."""
    counts: dict[str, Counts] = defaultdict(Counts)
    for op, dname, s in cases:
        label = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        what = f"{label} {dname} {tuple(s.input.shape)} {s.args} {s.kwargs}"
        try:
            want = _torch_result(torch, op, s)
        except Exception:  # noqa: BLE001 - torch refuses it too
            continue
        c = counts[label]
        x = s.input
        try:
            if grad:
                x = s.input.detach().clone().requires_grad_(True)
                s = type(s)(x, args=s.args, kwargs=s.kwargs)
            got = bulkred_call(bulkred, op.name, op.variant_test_name, s)
        except MatrixNorm:
            c.refused["matrix norms"] += 1
            continue
        except bulkred.ReductionError as e:
            name = allowed(label.split(".")[0] if not label.startswith("linalg") else label, dname, str(e))
            c.refused[name or "unexpected"] += 1
            if name is None:
                c.problems.append(f"refused {what}: {e}")
            continue
        wrong = other = None
        gs, ws = _results(got), _results(want)
        if len(gs) != len(ws):
            other = f"{len(gs)} results, torch {len(ws)}"
        for g, w in zip(gs, ws):
            if other or wrong:
                break
            if g.dtype != w.dtype or g.shape != w.shape:
                other = f"{g.dtype}{tuple(g.shape)} != {w.dtype}{tuple(w.shape)}"
                break
            tol = _tolerance(torch, w.dtype)
            if w.dtype == torch.complex32:  # compared as complex64 (torch's CPU has no complex32 isclose)
                g, w = g.to(torch.complex64), w.to(torch.complex64)
            try:
                torch.testing.assert_close(g, w, rtol=tol, atol=tol, equal_nan=True)
            except AssertionError as e:
                wrong = str(e)[:300]
        if grad and not (wrong or other):
            wrong = _grad_difference(torch, op, s, x, gs)
        if other:
            c.other_dtype += 1
            c.problems.append(f"other dtype {what}: {other}")
        elif wrong:
            c.wrong += 1
            c.problems.append(f"wrong {what}: {wrong}")
        else:
            c.passed += 1
    return dict(counts)


def _torch_result(torch: Any, op: Any, s: Any) -> Any:
    """torch's result of the sample; of a complex32 sample on the CPU, whose reductions
    torch's CPU lacks, torch's CUDA definition: the complex64 reduction (its CUDA kernels
    accumulate complex32 in complex64), each complex result rounded to complex32."""
    try:
        return op(s.input, *s.args, **s.kwargs)
    except Exception:
        if s.input.dtype != torch.complex32 or s.input.device.type != "cpu":
            raise
    chalf = torch.complex32
    kw = {k: torch.complex64 if v is chalf else v for k, v in s.kwargs.items()}
    narrow = s.kwargs.get("dtype", chalf) is chalf
    x = s.input.to(torch.complex64)
    if op.name in ("nansum", "nanmean"):  # torch's CPU nansum takes no complex: its CUDA one's definition
        keep = ~x.isnan()
        dims = {k: v for k, v in kw.items() if k in ("dim", "keepdim")}
        dims.update(zip(["dim", "keepdim"], s.args))
        r = torch.where(keep, x, torch.zeros_like(x)).sum(**dims)
        r = r / keep.sum(**dims) if op.name == "nanmean" else r
    else:
        r = op(x, *s.args, **kw)
    rs = [t.to(chalf) if narrow and t.is_complex() else t for t in _results(r)]
    return tuple(rs) if isinstance(r, tuple) else rs[0]


def _grad_difference(torch: Any, op: Any, s: Any, x: Any, gs: list) -> str | None:
    """The gradient of a weighted sum of the float results through bulkred (``gs``, of
    ``x``) against torch's (None: the same)."""
    diffs = [g for g in gs if g.dtype.is_floating_point or g.dtype.is_complex]
    if not any(g.requires_grad for g in diffs):
        return None
    weights = [torch.linspace(0.5, 1.5, max(1, g.numel()), dtype=torch.float64, device=g.device)[: g.numel()].reshape(g.shape)
               for g in diffs]

    def loss(rs):
        return sum(((r.real if r.is_complex() else r) * w).sum() for r, w in zip(rs, weights))

    (ours,) = torch.autograd.grad(loss([g for g in diffs]), x, allow_unused=True)
    y = x.detach().clone().requires_grad_(True)
    want = [w for w in _results(op(y, *s.args, **s.kwargs)) if w.dtype.is_floating_point or w.dtype.is_complex]
    (theirs,) = torch.autograd.grad(loss(want), y, allow_unused=True)
    if ours is None or theirs is None:  # no gradient on one side (ord 0): the other's must be 0 or none
        other = theirs if ours is None else ours
        return None if other is None or not other.any() else "no gradient on one side"
    try:
        torch.testing.assert_close(ours, theirs, equal_nan=True)
    except AssertionError as e:
        return "gradient: " + str(e)[:300]
    return None


def table(counts: dict[str, Counts]) -> str:
    """One line per op, then the totals."""
    lines = [f"{op:40s} {c.row()}" for op, c in sorted(counts.items())]
    total = Counts()
    for c in counts.values():
        total.passed += c.passed
        total.wrong += c.wrong
        total.other_dtype += c.other_dtype
        total.refused.update(c.refused)
    lines.append(f"{'total':40s} {total.row()}")
    return "\n".join(lines)


def _precompile_shard(args: tuple) -> int:
    """A worker of :func:`precompile`: compile (not load) the kernel of every case of its
    shard on CPU tensors, into the disk cache; returns how many it compiled."""
    pairs, arch, grad = args
    import torch

    import bulkred_dialect as bulkred
    from bulkred_dialect import api
    from bulkred_dialect.backend_ptx import device
    from bulkred_dialect.compiler import compile_keyed, target_for

    class Compiled(Exception):
        pass

    done = 0

    def compile_only(p, target):
        nonlocal done
        compile_keyed({"what": "api reduction", "key": list(map(str, api.plan_key(p, target)))}, lambda: api.module_of(p),
                      target_for(target))
        done += 1
        raise Compiled

    api.kernel_of = compile_only
    device.current_arch = lambda: arch
    for name, dname in pairs:
        try:
            cases = list(samples(torch, "cpu", (dname,), grad=grad, ops={name}, supported_on="cuda"))
        except Exception:  # noqa: BLE001 - a sample torch cannot make on the CPU: the main run makes it
            continue
        for op, _, s in cases:
            try:
                bulkred_call(bulkred, op.name, op.variant_test_name, s)
            except Exception:  # noqa: BLE001 - compiled, refused, or torch's CPU lacks it: the main run says
                pass
    return done


def precompile(arch: str, processes: int, grad: bool = False, ops: tuple[str, ...] | None = None) -> int:
    """Compile the kernels of every sample's call into the disk cache in ``processes``
    spawned processes (sharded by op), so that the run itself loads them: the same keys
    (the plan and the target ``arch``) as the GPU run's, samples made on the CPU."""
    import multiprocessing

    import torch

    dtypes = ("float64", "complex128") if grad else tuple(
        n for n in ("float32", "float64", "float16", "bfloat16", "complex32", "complex64", "complex128", "bool", "uint8", "int8",
                    "int16", "int32", "int64") if hasattr(torch, n))
    pairs = [(name, d) for name in sorted(ops or {name for name, _ in OPS}) for d in dtypes]
    shards = [(pairs[i::processes], arch, grad) for i in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return sum(pool.map(_precompile_shard, [s for s in shards if s[0]]))


__all__ = ["ALLOWED", "OPS", "Counts", "allowed", "bulkred_call", "precompile", "run", "samples", "table"]
