"""The row normalizations of torch tensors (docs/rows.md): ``bulkred.softmax``,
``log_softmax``, ``rms_norm``, ``layer_norm``, ``add_rms_norm`` and ``cross_entropy``, each
one ``bulkred.normalize_rows`` kernel a call (``row_kernels.py`` builds and compiles it).

Each function is a row of the function table (``functions.py``'s :data:`NORM_ROWS`): its
signature, docs, option checks, torch operator and gradient rule come from the row. What
is the rows' own is here:

1. the row's *front* (:data:`FRONTS`): torch's arguments as the kernel takes them, checked
   (``dim`` the last, ``dtype`` a conversion first, several normalized dimensions read as
   one row, ``eps=None`` the dtype's epsilon, cross-entropy's 1-D input) and what is done
   to the kernel's outputs (the view back, cross-entropy's reduction);
2. the call's key (the row, whether autograd records, each argument: a tensor's class,
   shape, dtype, device index (``get_device()``), layout (contiguous, else its strides:
   as ``api.call_key``'s) and ``requires_grad``, any other value with its type),
   made in the public function itself (no other frame before the look-up; where it
   cannot be, the general key of :func:`_key`):
   one look-up in :data:`CALLS` gives its launcher, made on the key's first call after
   every check (:func:`plan`: one-line :class:`~bulkred_dialect.api.ReductionError`
   before any GPU work) and the kernel's compile;
3. the launch: the outputs made, the kernel called on torch's current stream (its
   recorded short path). A call that needs autograd (a tensor that requires grad, with
   grad enabled) runs the row's torch operator ``torch.ops.bulkred.<name>`` instead,
   whose forward also stores the row statistics its backward reads (``row_grads.py``);
   while ``torch.compile`` traces, every call goes through the operator (its fake
   implementation is :func:`plan`'s checks and the outputs' shapes).

Only torch tensors are taken (CUDA, float32 / bfloat16 / float16, the last dimension
contiguous, rows one stride apart): a numpy or cupy array is refused with the reason.
"""

from __future__ import annotations

import math
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from bulkred_dialect import api
from bulkred_dialect.errors import BulkredError
from bulkred_dialect.functions import NORM_ROWS, NORMS, OptionError, RowFunction, take_row_signature

ROW_DTYPES = {"torch.float32": "float32", "torch.bfloat16": "bfloat16", "torch.float16": "float16"}
"""The element types a row may hold (torch's name -> bulkred's)."""

DEVICES: tuple[str, ...] = ("cuda",)
"""The device types whose tensors the kernels take (the CPU tests add ``cpu`` with their
simulated kernels)."""

CALLS: dict[tuple, Callable[[tuple], Any]] = {}
"""The calls seen, by key (see the module's docstring) -> ``launcher(args)``, which runs a
call like it (every check its key proves is not made again)."""
_LOCK = threading.Lock()

REDUCED_ROWS_MAX = 1 << 24
"""cross_entropy's 'mean' and 'sum' are the kernel's own (one launch: each CTA adds its
rows' losses, the last CTA the CTAs' sums in a fixed order: rows_lower.LOSS_PARTIALS) for
batches of up to this many rows (the kept rows' count exact in float32); larger batches
reduce the kernel's per-row losses with torch's operations after it. Measured on an H200
(tools/probes/rows_forward_norms.py --cells ce, 2026-11-29): the kernel's own mean at or
above torch's operations after the kernel at every M measured, 4096 to 262,144 rows
(bfloat16 N = 1024, M = 262,144: 0.95 of copy against 0.85). Before the CTAs' partials
(the last CTA adding every loss alone) it was slower past 16,384 rows, and this was 16384."""


def _error(fn: str, message: str) -> api.ReductionError:
    return api.ReductionError(f"bulkred.{fn}: {message}")


def _torch(fn: str, x: Any) -> Any:
    """torch, when ``x`` is a torch tensor; else the one-line refusal (numpy and cupy
    arrays named as such)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(x, torch.Tensor):
        lib = type(x).__module__.split(".")[0]
        hint = (f" (a {lib} array: the row functions take torch tensors, e.g. torch.as_tensor(x, device='cuda'))"
                if lib in ("numpy", "cupy") else "")
        raise _error(fn, f"expected a torch tensor, got {type(x).__name__}{hint}")
    return torch


_CHECKS = {(row.name, o.name): o.check for row in NORM_ROWS for o in row.options}


def _option(row: RowFunction, name: str, value: Any) -> Any:
    try:
        return _CHECKS[row.name, name](value)
    except OptionError as e:
        raise _error(row.name, str(e)) from None


def _float_tensor(fn: str, what: str, t: Any, torch: Any) -> str:
    """``t``'s element type name, or a one-line refusal (not a tensor, sparse, on another
    device, of another dtype)."""
    if not isinstance(t, torch.Tensor):
        _torch(fn, t)
    if t.layout != torch.strided:
        raise _error(fn, f"'{what}' is a torch tensor of layout {t.layout} (not dense); pass {what}.to_dense()")
    if t.device.type not in DEVICES:
        raise _error(fn, f"'{what}' is on {t.device}: the row functions run on CUDA tensors")
    name = ROW_DTYPES.get(str(t.dtype))
    if name is None:
        raise _error(fn, f"'{what}' has dtype {t.dtype}; the row kernels take float32, bfloat16 or float16 "
                     f"(convert it, e.g. {what}.float())")
    return name


# region The fronts: torch's arguments -> the operator's arguments, and the outputs -> the result


def _y(outs: tuple) -> Any:
    """The result of a function whose result is the kernel's y as it is."""
    return outs[0]


def _softmax_front(row: RowFunction, x: Any, dim: Any, dtype: Any, variant: Any) -> tuple[tuple, Callable]:
    torch = _torch(row.name, x)
    dim, variant = _option(row, "dim", dim), _option(row, "variant", variant)
    nd = x.dim()
    finish = _y
    if nd == 0:  # one row of one element (torch's softmax of a 0-d tensor: dim 0 or -1)
        if dim not in (0, -1):
            raise _error(row.name, f"dim {dim} is out of range for a 0-D x")
        x, finish = x.reshape(1), _scalar
    elif not -nd <= dim < nd:
        raise _error(row.name, f"dim {dim} is out of range for a {nd}-D x")
    elif dim % nd != nd - 1:
        raise _error(row.name, f"dim={dim} is not the last dimension of a {nd}-D x: the rows are read along their "
                     f"contiguous last dimension; pass x.movedim({dim}, -1) and move the result back")
    if dtype is not None:
        if not isinstance(dtype, torch.dtype):
            dtype = api.torch_dtype(api.dtype_name(row.name, dtype))
        if dtype != x.dtype:
            if str(dtype) not in ROW_DTYPES:
                raise _error(row.name, f"dtype={dtype}: the row kernels give float32, bfloat16 or float16")
            x = x.to(dtype)
    return (x, variant), finish


def _scalar(outs: tuple) -> Any:
    """The result of a 0-d x (run as a row of one)."""
    return outs[0].view(())


def _normalized(row: RowFunction, x: Any, shape: Any, tensors: dict[str, Any], torch: Any) -> tuple[Any, dict, Callable]:
    """``x`` viewed with its normalized dimensions as one (and the weight and bias), and
    the view back of the result."""
    shape = _option(row, "normalized_shape", shape)
    k, nd = len(shape), x.dim()
    if nd < k or tuple(x.shape[nd - k:]) != shape:
        raise _error(row.name, f"normalized_shape {list(shape)} must be x's last dimensions, got x of shape "
                     f"{list(x.shape)}")
    for what, t in tensors.items():
        if t is not None:
            _float_tensor(row.name, what, t, torch)
            if tuple(t.shape) != shape:
                raise _error(row.name, f"'{what}' must have the shape normalized_shape {list(shape)}, got "
                             f"{list(t.shape)}")
    if k == 1:
        return x, tensors, _y
    full = tuple(x.shape)
    n = math.prod(shape)
    try:
        x = x.view(*full[: nd - k], n)
    except RuntimeError:
        raise _error(row.name, f"x's last {k} dimensions (normalized_shape {list(shape)}) are not one contiguous "
                     f"block (strides {list(x.stride())}): pass x.contiguous()") from None
    tensors = {w: None if t is None else t.reshape(n) for w, t in tensors.items()}
    return x, tensors, lambda outs: outs[0].view(full)


def _eps(x: Any, eps: float | None, torch: Any) -> float:
    return float(torch.finfo(x.dtype).eps) if eps is None else eps


def _rms_norm_front(row: RowFunction, x: Any, normalized_shape: Any, weight: Any, eps: Any,
                    variant: Any) -> tuple[tuple, Callable]:
    torch = _torch(row.name, x)
    _float_tensor(row.name, "x", x, torch)
    eps, variant = _option(row, "eps", eps), _option(row, "variant", variant)
    x, t, finish = _normalized(row, x, normalized_shape, {"weight": weight}, torch)
    return (x, t["weight"], _eps(x, eps, torch), variant), finish


def _layer_norm_front(row: RowFunction, x: Any, normalized_shape: Any, weight: Any, bias: Any, eps: Any,
                      variant: Any) -> tuple[tuple, Callable]:
    torch = _torch(row.name, x)
    eps, variant = _option(row, "eps", eps), _option(row, "variant", variant)
    x, t, finish = _normalized(row, x, normalized_shape, {"weight": weight, "bias": bias}, torch)
    return (x, t["weight"], t["bias"], eps, variant), finish


def _pair(outs: tuple) -> tuple:
    return outs[0], outs[1]


def _add_rms_norm_front(row: RowFunction, x: Any, residual: Any, weight: Any, eps: Any,
                        variant: Any) -> tuple[tuple, Callable]:
    torch = _torch(row.name, x)
    _float_tensor(row.name, "x", x, torch)
    eps, variant = _option(row, "eps", eps), _option(row, "variant", variant)
    return (x, residual, weight, _eps(x, eps, torch), variant), _pair


def _cross_entropy_front(row: RowFunction, input: Any, target: Any, weight: Any, ignore_index: Any, reduction: Any,
                         label_smoothing: Any, variant: Any) -> tuple[tuple, Callable]:
    torch = _torch(row.name, input)
    weight = _option(row, "weight", weight)
    if isinstance(weight, torch.Tensor) and weight.requires_grad and torch.is_grad_enabled():
        raise _error(row.name, "'weight' requires grad: the loss is not differentiable with respect to the class "
                     "weights (torch refuses it too); pass weight.detach()")
    ignore_index, reduction = _option(row, "ignore_index", ignore_index), _option(row, "reduction", reduction)
    smoothing, variant = _option(row, "label_smoothing", label_smoothing), _option(row, "variant", variant)
    if not isinstance(target, torch.Tensor):
        _torch(row.name, target)
    if target.is_floating_point():
        raise _error(row.name, f"target of dtype {target.dtype} (class probabilities) is not supported yet: pass "
                     "int64 class indices")
    nd = input.dim()
    if nd not in (1, 2):
        raise _error(row.name, f"input must be [M, C] logits (or [C]), got shape {list(input.shape)}; for "
                     "[N, C, d1, ...] pass input.movedim(1, -1).reshape(-1, C) and target.reshape(-1)")
    want = () if nd == 1 else tuple(input.shape[:1])
    if tuple(target.shape) != want:
        raise _error(row.name, f"target must have shape {list(want)} for input of shape {list(input.shape)}, got "
                     f"{list(target.shape)}")
    if nd == 1:
        input, target = input.unsqueeze(0), target.reshape(1)
    dtype = input.dtype
    cast = dtype != torch.float32
    div, empty, dev = torch.div, torch.empty, input.device
    if weight is not None:
        return (input, target, weight, ignore_index, smoothing, variant), _weighted_finish(
            input, target, weight, ignore_index, reduction, nd)

    # out= where autograd does not record (torch refuses out= there) and torch.compile does not trace
    out = cast and not (input.requires_grad and torch.is_grad_enabled()) and not torch.compiler.is_compiling()

    def result(outs: tuple, target: Any) -> Any:  # (a kept launcher passes each call's own target)
        loss = outs[0]  # float32, 0 where the target is ignore_index
        if reduction == "none":
            r = loss if nd == 2 else loss.view(())
        elif reduction == "sum":
            r = loss.sum()
        elif out:  # the mean over the rows kept, divided into x's dtype (no cast after)
            return div(loss.sum(), target.ne(ignore_index).sum(), out=empty((), dtype=dtype, device=dev))
        elif cast:
            r = loss.sum() / target.ne(ignore_index).sum()
        else:
            return loss.sum().div_(target.ne(ignore_index).sum())
        return r.to(dtype) if cast else r

    def finish(outs: tuple) -> Any:
        return result(outs, target)

    finish.result = result  # type: ignore[attr-defined]  # the result of another call of the key: its target
    if reduction != "none":  # the kernel's own reduction where the call takes the kernel (_first)
        finish.reduction = reduction  # type: ignore[attr-defined]
    return (input, target, weight, ignore_index, smoothing, variant), finish


def _weighted_finish(input: Any, target: Any, weight: Any, ignore_index: int, reduction: str, nd: int) -> Callable:
    """cross_entropy's reduction of the rows' weighted losses: ``'mean'`` divides by the
    sum of ``weight[target]`` over the rows not ignored, as torch."""
    dtype = input.dtype
    cast = str(dtype) != "torch.float32"

    def finish(outs: tuple) -> Any:
        loss = outs[0]  # float32, each row's weighted loss, 0 where the target is ignore_index
        if reduction == "none":
            r = loss if nd == 2 else loss.view(())
        elif reduction == "sum":
            r = loss.sum()
        else:
            from bulkred_dialect.row_grads import class_weights

            r = loss.sum() / class_weights(weight, target, ignore_index, input.shape[-1]).sum()
        return r.to(dtype) if cast else r

    return finish


FRONTS: dict[str, Callable[..., tuple[tuple, Callable]]] = {
    "softmax": _softmax_front, "log_softmax": _softmax_front, "rms_norm": _rms_norm_front,
    "layer_norm": _layer_norm_front, "add_rms_norm": _add_rms_norm_front, "cross_entropy": _cross_entropy_front,
}
"""A row's kind -> its front: ``front(row, *args)`` (the public function's arguments in
order) -> ``(the operator's arguments, finish)``; ``finish(outputs)`` is the result."""


# endregion

# region The plan: the operator's arguments checked, the kernel's settings decided


@dataclass(frozen=True)
class RowPlan:
    """One call's kernel: ``row_kernels.kernel_for``'s settings, and its rows."""

    fn: str  # the row's name
    kind: str  # the normalize_rows kind
    m: int  # rows
    n: int  # row length
    dtype: str  # x's element type
    x_stride: int | None  # x's row stride where it is not n (padded rows)
    weight: str | None = None  # the weight's element type (None: absent)
    bias: str | None = None
    eps: float | None = None
    ignore_index: int | None = None
    label_smoothing: float | None = None
    variant: str | None = None
    stats: tuple[str, ...] = ()  # the statistics its row's operator stores
    class_weight: str | None = None  # cross_entropy's weight's element type: the kernel's rows weighted after it
    smoothing: float = 0.0  # cross_entropy with a weight: the label smoothing, applied after the kernel (its lse)
    reduction: str | None = None  # cross_entropy's 'mean' / 'sum' in the kernel (its [1] 'reduced', x's dtype)


def _row_stride(fn: str, x: Any) -> tuple[int, int, int]:
    """``(m, n, row stride)`` of ``x`` read as ``[m, n]`` rows, or a one-line refusal."""
    shape, strides = tuple(x.shape), tuple(x.stride())
    n = shape[-1]
    m = math.prod(shape[:-1])
    if n > 1 and strides[-1] != 1:
        raise _error(fn, f"x's last dimension must be contiguous (stride 1), got strides {list(strides)}; pass "
                     "x.contiguous()")
    lead = [(d, s) for d, s in zip(shape[:-1], strides[:-1]) if d != 1]
    if not lead or m == 0:
        return m, n, n
    stride = want = lead[-1][1]
    for d, s in reversed(lead):
        if s != want:
            raise _error(fn, f"x's rows are not one stride apart (shape {list(shape)}, strides {list(strides)}): "
                         "pass x.contiguous()")
        want *= d
    if stride < n:
        raise _error(fn, f"x's rows overlap (row stride {stride} < row length {n}, a broadcast view): pass "
                     "x.contiguous()")
    return m, n, stride


def plan(row: RowFunction, a: dict[str, Any]) -> RowPlan:
    """The checks of one call of ``row``'s operator, whose arguments by name are ``a``
    (tensors, real or fake, and the checked options), and its kernel's settings: one-line
    :class:`~bulkred_dialect.api.ReductionError` for anything the kernels do not take.
    Runs on fake tensors (torch.compile) too: shapes, dtypes, strides and devices only."""
    fn = row.name
    x = a[row.inputs[0]]
    torch = _torch(fn, x)
    what = row.inputs[0]
    dtype = _float_tensor(fn, what, x, torch)
    if x.dim() == 0:
        raise _error(fn, f"'{what}' is 0-d: there is no row to normalize")
    m, n, stride = _row_stride(fn, x)
    settings: dict[str, Any] = {}
    if row.kind == "cross_entropy":
        t = a["target"]
        if not isinstance(t, torch.Tensor) or t.dtype != torch.int64 or tuple(t.shape) != (m,) or t.device != x.device:
            got = f"{t.dtype} {list(t.shape)} on {t.device}" if isinstance(t, torch.Tensor) else type(t).__name__
            raise _error(fn, f"target must be int64 class indices of shape [{m}] on input's device, got {got}")
        if n == 0 and m:
            raise _error(fn, "input has no classes (C = 0)")
        settings.update(ignore_index=a["ignore_index"], label_smoothing=a["label_smoothing"] or None)
    if row.kind == "add_rms_norm":
        r = a["residual"]
        if not isinstance(r, torch.Tensor) or r.shape != x.shape or r.dtype != x.dtype or r.device != x.device:
            got = f"{r.dtype} {list(r.shape)} on {r.device}" if isinstance(r, torch.Tensor) else type(r).__name__
            raise _error(fn, f"residual must be a tensor of x's shape {list(x.shape)}, dtype {x.dtype} and device, "
                         f"got {got}")
        if r.dim() and r.shape[-1] > 1 and r.stride(-1) != 1:
            raise _error(fn, f"residual's last dimension must be contiguous (stride 1), got strides {list(r.stride())}")
    for key in ("weight", "bias"):
        v = a.get(key)
        if v is None:
            continue
        d = _float_tensor(fn, key, v, torch)
        if tuple(v.shape) != (n,):
            raise _error(fn, f"'{key}' must have shape [{n}] ({what}'s last dimension), got {list(v.shape)}")
        if v.device != x.device:
            raise _error(fn, f"'{key}' is on {v.device}, x on {x.device}")
        if d not in (dtype, "float32"):
            raise _error(fn, f"'{key}' has dtype {v.dtype}; it must be {what}'s ({x.dtype}) or float32")
        settings[key] = d
    if settings.get("weight") and settings.get("bias") and settings["weight"] != settings["bias"]:
        raise _error(fn, f"weight ({a['weight'].dtype}) and bias ({a['bias'].dtype}) must have one dtype")
    if row.kind == "cross_entropy" and "weight" in settings:  # the kernel's rows unweighted, unsmoothed
        settings.update(class_weight=settings.pop("weight"), smoothing=settings["label_smoothing"] or 0.0,
                        label_smoothing=None)
    if "eps" in a:
        settings["eps"] = a["eps"]
    return RowPlan(fn, row.kind, m, n, dtype, None if stride == n or m <= 1 else stride, variant=a["variant"],
                   stats=row.stats, **settings)


# endregion

# region The kernel and the launch


def _kernel(p: RowPlan, stats: bool) -> Any:
    """The compiled kernel of ``p`` (``row_kernels.kernel_for``: compiled once per
    setting), storing the row statistics when ``stats``; None for no rows."""
    if not p.m or not p.n:
        return None
    from bulkred_dialect.row_kernels import kernel_for

    try:
        return kernel_for(p.kind, None, p.n, p.dtype, x_stride=p.x_stride, weight=p.weight, bias=p.bias, eps=p.eps,
                          stats=p.stats if stats or p.smoothing else (), variant=p.variant, ignore_index=p.ignore_index,
                          label_smoothing=p.label_smoothing, reduction=p.reduction)
    except BulkredError as e:
        raise _error(p.fn, _first_line(e)) from None


def _first_line(e: Exception) -> str:
    """The first line of a build or compile error, without its location (the builder's
    call in row_kernels.py, of no use to the caller)."""
    return re.sub(r"^\S*\.py:\d+:\d+: (error: )?", "", str(e).split("\n", 1)[0])


def _aligned(t: Any) -> Any:
    """A copy of ``t`` with its strides, at a new (aligned) address."""
    torch = sys.modules["torch"]
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device).copy_(t)


def _launch(k: Any, args: list[Any]) -> None:
    """``k(*args)``; an input off the address alignment of the kernel's vector loads (a
    view at an odd storage offset; the outputs are new, aligned) is copied first."""
    from bulkred_dialect.backend_ptx.errors import MisalignedError

    try:
        k(*args)
    except MisalignedError:
        k(*[_aligned(t) if t.data_ptr() % 16 else t for t in args])


def run(row: RowFunction, p: RowPlan, k: Any, a: dict[str, Any], stats: bool) -> tuple:
    """The kernel ``k`` of plan ``p`` on the operator's arguments ``a``: the operator's
    outputs (y of x's shape, add_rms_norm's h, cross-entropy's float32 loss of each row,
    weighted by its class weight after the kernel: ``row_grads.weighted_rows``), then, with
    ``stats``, the row statistics (float32, x's shape without its last dimension); a plan
    with a ``reduction`` (cross-entropy's, in the kernel): ``(loss, reduced)``, reduced the
    ``[1]`` result in x's dtype."""
    torch = sys.modules["torch"]
    x = a[row.inputs[0]]
    shape = tuple(x.shape)
    lead, dev, m, n = shape[:-1], x.device, p.m, p.n
    f32 = torch.float32
    if p.kind == "cross_entropy":
        outs = [torch.empty(lead, dtype=f32, device=dev)]
    else:
        outs = [torch.empty(shape, dtype=x.dtype, device=dev)]
        if p.kind == "add_rms_norm":
            outs.append(torch.empty(shape, dtype=x.dtype, device=dev))
    st = [torch.empty(lead, dtype=f32, device=dev) for _ in p.stats] if stats or p.smoothing else []
    if p.reduction is not None:  # cross_entropy reduced in the kernel: its [1] result, last (no stats then)
        st.append(torch.empty(1, dtype=x.dtype, device=dev))
    if k is not None:
        rows = st[:-1] if p.reduction is not None else st  # [m] each; reduced stays [1]
        args = [x.view(m, n)]
        if p.kind == "cross_entropy":
            args += [a["target"].reshape(m).contiguous(), outs[0].view(m)]
        else:
            args.append(outs[0].view(m, n))
            if p.kind == "add_rms_norm":
                args += [a["residual"].reshape(m, n).contiguous(), outs[1].view(m, n)]
            args += [a[w].contiguous() for w in ("weight", "bias") if a.get(w) is not None]
        args += [s.view(m) for s in rows]
        if p.reduction is not None:
            args.append(st[-1])
        _launch(k, args)
        if p.class_weight is not None:
            from bulkred_dialect.row_grads import weighted_rows

            weighted_rows(outs[0], st[0] if p.smoothing else None, x.view(m, n), a["target"], a["weight"],
                          p.ignore_index, p.smoothing)
    return (*outs, *st) if stats or p.reduction is not None else tuple(outs)


def _reduced(outs: tuple) -> Any:
    """The result of a cross-entropy reduced in the kernel: its ``[1]`` ``reduced`` as 0-d."""
    return outs[-1].view(())


# endregion

# region The call


def _compiling() -> bool:
    """``torch.compiler.is_compiling`` (this name is rebound to it once a call has seen torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def _grad_enabled() -> bool:
    """``torch.is_grad_enabled`` (this name is rebound to it once a call has seen torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.is_grad_enabled()


_TENSOR: Any = ()
"""``torch.Tensor`` once a call has seen torch (the general key's test of a tensor argument)."""


def _seen_torch() -> None:
    """Once torch is loaded: its operators registered (for torch.compile's later traces,
    bulkred imported before torch) and the names above rebound to torch's own functions."""
    global _TENSOR, _compiling, _grad_enabled
    torch = sys.modules.get("torch")
    if _TENSOR == () and torch is not None:
        _register()
        _TENSOR = torch.Tensor
        _compiling, _grad_enabled = torch.compiler.is_compiling, torch.is_grad_enabled


def _part(a: Any) -> Any:
    """One argument's part of the general key: a tensor's class, shape, dtype, device,
    strides and requires_grad; a list or a tuple as its class and its items' parts; any
    other value with its type (None as itself)."""
    if a is None:
        return None
    if isinstance(a, _TENSOR):
        return (a.__class__, a.shape, a.dtype, a.device, a.stride(), a.requires_grad)
    if a.__class__ is list or isinstance(a, tuple):  # the items' parts: their types too, (8.0,) == (8,)
        return (a.__class__, *map(_part, a))
    return (a, a.__class__)


def _ops() -> Any:
    """``torch.ops.bulkred``, the row operators registered (once)."""
    _register()
    return sys.modules["torch"].ops.bulkred


def _call(row: RowFunction, args: tuple) -> Any:
    """The public function of ``row`` on its arguments ``args`` (in its signature's order)
    where its own key could not be made (x not a tensor, an argument without a tensor's
    attributes or not hashable: the general key, :func:`_key`) or torch.compile traces
    (the operator)."""
    if _compiling():
        op_args, finish = FRONTS[row.kind](row, *args)
        out = getattr(_ops(), row.name)(*op_args)
        return finish(out if isinstance(out, tuple | list) else (out,))
    _seen_torch()
    key = _key(row, args)
    hit = None if key is None else CALLS.get(key)
    if hit is not None:
        return hit(args)
    return _first(row, args, key)


def _key(row: RowFunction, args: tuple) -> tuple | None:
    """The general key of a call (the module's docstring): ``(row.name,)`` (not a public
    function's own key, which starts with the name itself), whether grad is enabled, x's
    part (x is a tensor, :func:`_part`'s fields) and the other arguments' parts; None
    where it cannot be made (every check then says why)."""
    x = args[0]
    try:
        key = ((row.name,), _grad_enabled(), x.__class__, x.shape, x.dtype, x.device, x.stride(), x.requires_grad,
               *map(_part, args[1:]))
        hash(key)
    except (TypeError, AttributeError):
        return None
    return key


def _first(row: RowFunction, args: tuple, key: tuple | None) -> Any:
    """A call whose key was not seen: every check, the kernel (compiled on a miss), the
    launcher kept under the key, the launch."""
    front = FRONTS[row.kind]
    op_args, finish = front(row, *args)
    names = row.op_arguments()
    a = dict(zip(names, op_args))
    p = plan(row, a)
    torch = sys.modules["torch"]
    _seen_torch()
    if row.grad is not None and torch.is_grad_enabled() and any(
            isinstance(v, torch.Tensor) and v.requires_grad for v in a.values()):
        _register()
        from bulkred_dialect.torch_ops import row_eager

        ins = tuple(i for i, v in enumerate(op_args) if isinstance(v, torch.Tensor))  # the operator's tensors
        template = tuple(None if i in ins else v for i, v in enumerate(op_args))  # (no tensor of this call kept)
        result = getattr(finish, "result", None)  # cross_entropy's (unweighted): of the call's own target
        picks = _picks(row, args, op_args, ins) if finish in (_y, _pair) or result is not None else None
        # cross_entropy's sum or mean of its rows (unweighted, the call's own tensors) inside the Function: by
        # the kernel (its loss rows, lse and the reduced, one launch) up to REDUCED_ROWS_MAX rows, else by torch
        reduction = getattr(finish, "reduction", None) if picks is not None and result is not None else None
        if reduction is not None and 0 < p.m <= REDUCED_ROWS_MAX and p.n:
            p = replace(p, reduction=reduction)
        k = _kernel(p, True)

        def slow(*ts: Any) -> Any:  # the operator's implementation, its plan and kernel known
            full = list(template)
            for i, t in zip(ins, ts):
                full[i] = t
            out = run(row, p, k, dict(zip(names, full)), True)
            if p.reduction is not None:  # (loss, lse, the reduced [1] as 0-d)
                return out[0], out[1], out[2].view(())
            return out if len(out) > 1 else out[0]

        forward = _bound_forward(row, p, k, op_args, ins, slow) or slow
        # the key's own autograd Function: the tensors its arguments, the other arguments (the key proves them) its own
        apply = row_eager(row, tuple(names[i] for i in ins),
                          {names[i]: v for i, v in enumerate(op_args) if i not in ins}, forward, reduction)
        if reduction is not None:
            i, j = picks

            def launcher(args: tuple) -> Any:
                return apply(args[i], args[j])
        elif picks is None:  # the front on every call
            def launcher(args: tuple) -> Any:
                op_args, finish = front(row, *args)
                out = apply(*[op_args[i] for i in ins])
                return finish(out if isinstance(out, tuple) else (out,))
        elif result is not None:  # the operator's tensors are the call's as given: no front (x, target)
            i, j = picks

            def launcher(args: tuple) -> Any:
                return result((apply(args[i], args[j]),), args[j])
        elif len(picks) == 1:  # y, or (y, residual_out), as the Function gives them
            (i,) = picks

            def launcher(args: tuple) -> Any:
                return apply(args[i])
        elif len(picks) == 2:
            i, j = picks

            def launcher(args: tuple) -> Any:
                return apply(args[i], args[j])
        else:
            i, j, q = picks

            def launcher(args: tuple) -> Any:
                return apply(args[i], args[j], args[q])
    else:
        reduction = getattr(finish, "reduction", None)
        if reduction is not None and 0 < p.m <= REDUCED_ROWS_MAX and p.n and p.class_weight is None:  # in the kernel
            p = replace(p, reduction=reduction)
            finish = _reduced
        k = _kernel(p, False)
        launcher = _direct(row, p, k, args, op_args, finish)
        if launcher is None and p.reduction is not None:
            def launcher(args: tuple) -> Any:
                op_args, _ = front(row, *args)
                return _reduced(run(row, p, k, dict(zip(names, op_args)), False))
        elif launcher is None:
            def launcher(args: tuple) -> Any:
                op_args, finish = front(row, *args)
                return finish(run(row, p, k, dict(zip(names, op_args)), False))

    if key is not None and len(CALLS) < 4096:
        with _LOCK:
            CALLS[key] = launcher
    return launcher(args)


def _picks(row: RowFunction, args: tuple, op_args: tuple, ins: tuple[int, ...]) -> tuple[int, ...] | None:
    """Where the front gave each of the operator's tensors (``op_args[i]`` for ``i`` in
    ``ins``) as the call passed it (no view, reshape or conversion): their places in the
    call's arguments, for a call of the same key to pass its own (the other values, which
    the key proves, are the first call's: eps resolved, variant). None where a tensor is
    another (the front then runs on every call)."""
    where = {name: j for j, name in enumerate((*row.inputs, *row.option_names))}
    names = row.op_arguments()
    picks = []
    for i in ins:
        j = where[names[i]]
        if op_args[i] is not args[j]:
            return None
        picks.append(j)
    return tuple(picks) if 1 <= len(picks) <= 3 else None


def _direct(row: RowFunction, p: RowPlan, k: Any, args: tuple, op_args: tuple, finish: Callable) -> Any:
    """The launcher of the common calls (2-D rows, weights and targets contiguous, no
    dtype conversion) without the front: what the key proves is not looked at again, the
    outputs are made and the kernel called. None for the others (the front, then
    :func:`run`)."""
    torch = sys.modules["torch"]
    x = op_args[0]
    if k is None or p.class_weight is not None or x is not args[0] or any(
            isinstance(v, torch.Tensor) and v.dim() == 1 and not v.is_contiguous() for v in op_args):
        return None
    bound = _bound(row, p, k, args, op_args, finish) if hasattr(k, "bind") else None
    if bound is not None:
        return bound
    if x.dim() != 2:
        return None
    empty, shape, dt, dev, f32 = torch.empty, tuple(x.shape), x.dtype, x.device, torch.float32
    kind = p.kind
    if kind in ("softmax", "log_softmax"):
        def launcher(args: tuple) -> Any:
            y = empty(shape, dtype=dt, device=dev)
            k(args[0], y)
            return y
    elif kind in ("rms_norm", "layer_norm"):
        if op_args[1] is not args[2] or (kind == "layer_norm" and op_args[2] is not args[3]):
            return None  # the weight reshaped (several normalized dimensions)
        affine = [i for i, v in ((2, op_args[1]), (3, op_args[2] if kind == "layer_norm" else None)) if v is not None]
        if affine == [2]:
            def launcher(args: tuple) -> Any:
                y = empty(shape, dtype=dt, device=dev)
                k(args[0], y, args[2])
                return y
        elif affine == [2, 3]:
            def launcher(args: tuple) -> Any:
                y = empty(shape, dtype=dt, device=dev)
                k(args[0], y, args[2], args[3])
                return y
        elif not affine:
            def launcher(args: tuple) -> Any:
                y = empty(shape, dtype=dt, device=dev)
                k(args[0], y)
                return y
        else:
            return None
    elif kind == "add_rms_norm":
        if not op_args[1].is_contiguous():
            return None
        if op_args[2] is not None:
            def launcher(args: tuple) -> Any:
                y, h = empty(shape, dtype=dt, device=dev), empty(shape, dtype=dt, device=dev)
                k(args[0], y, args[1], h, args[2])
                return y, h
        else:
            def launcher(args: tuple) -> Any:
                y, h = empty(shape, dtype=dt, device=dev), empty(shape, dtype=dt, device=dev)
                k(args[0], y, args[1], h)
                return y, h
    elif kind == "cross_entropy":
        if op_args[1] is not args[1] or not args[1].is_contiguous():
            return None
        m = p.m
        if p.reduction is not None:  # the kernel's own mean / sum
            def launcher(args: tuple) -> Any:
                r = empty(1, dtype=dt, device=dev)
                k(args[0], args[1], empty(m, dtype=f32, device=dev), r)
                return r.view(())
        else:
            result = finish.result  # type: ignore[attr-defined]  # each call's own target

            def launcher(args: tuple) -> Any:
                loss = empty(m, dtype=f32, device=dev)
                k(args[0], args[1], loss)
                return result((loss,), args[1])
    else:
        return None
    return _aligned_launcher(launcher, row, p, k, op_args, finish)


def _bound(row: RowFunction, p: RowPlan, k: Any, args: tuple, op_args: tuple, finish: Callable) -> Any:
    """The launch layer's launcher (``Kernel.bind``) of a call on a contiguous ``x`` whose
    tensors are the caller's as given: the key proves their shapes, dtypes, devices and
    strides, so the launcher reads their addresses, makes the outputs (``empty_like`` of
    x where an output is x's like) and launches with the rows' count and launch config
    made once. None where the launch layer has none (then :func:`_direct`'s). A call it
    refuses (an input off the vector loads' alignment) takes :func:`run` (a copy)."""
    torch = sys.modules["torch"]
    x, kind, m, n = op_args[0], p.kind, p.m, p.n
    if not x.is_contiguous():
        return None
    shape = tuple(x.shape)
    xv = x.view(m, n)
    f32 = torch.float32
    if kind in ("softmax", "log_softmax"):
        params, pick, outs = [xv, xv.new_empty((m, n))], [0], [shape]
    elif kind in ("rms_norm", "layer_norm"):
        affine = [2, 3] if kind == "layer_norm" else [2]
        if any(op_args[i - 1] is not args[i] for i in affine):
            return None  # the weight reshaped (several normalized dimensions)
        pick = [0] + [i for i in affine if args[i] is not None]
        params, outs = [xv, xv.new_empty((m, n)), *(args[i] for i in pick[1:])], [shape]
    elif kind == "add_rms_norm":
        r = op_args[1]
        if r is not args[1] or not r.is_contiguous():
            return None
        pick = [0, 1] + ([2] if args[2] is not None else [])
        params = [xv, xv.new_empty((m, n)), r.view(m, n), xv.new_empty((m, n)), *(args[i] for i in pick[2:])]
        outs = [shape, shape]
    elif kind == "cross_entropy":
        t = op_args[1]
        if t is not args[1] or not t.is_contiguous() or t.dim() != 1:
            return None
        params, pick, outs = [xv, t, xv.new_empty((m,), dtype=f32)], [0, 1], [(m,)]
        if p.reduction is not None:  # and the kernel's own mean / sum, returned alone (0-d)
            params.append(xv.new_empty((1,)))
            outs.append(())
    else:
        return None
    order = [1, 3] if kind == "add_rms_norm" else [2] if kind == "cross_entropy" else [1]  # the outputs' params
    if p.reduction is not None:
        order = [2, 3]
    front, names = FRONTS[row.kind], row.op_arguments()

    def slow(args: tuple) -> Any:  # refused by the launcher (alignment, a broken GPU): every check, a copy
        op_args, finish = front(row, *args)
        return (_reduced if p.reduction is not None else finish)(run(row, p, k, dict(zip(names, op_args)), False))

    inputs = [i for i in range(len(params)) if i not in order]
    pack = (lambda loss, r: r) if p.reduction is not None else None
    ce = finish.result if kind == "cross_entropy" and p.reduction is None else None  # type: ignore[attr-defined]
    if ce is None:  # the launcher kept as it is: the call's tensors from its arguments, slow(args) where it refuses
        return k.bind(params, inputs=inputs, order=order, new=outs, pack=pack, at=pick, refused=slow)
    b = k.bind(params, inputs=inputs, order=order, new=outs, pack=pack)
    if b is None:
        return None

    def launcher(args: tuple) -> Any:  # the rows reduced by torch: each call's own target
        r = b(args[0], args[1], None)
        return slow(args) if r is None else ce((r,), args[1])

    return launcher


def _bound_forward(row: RowFunction, p: RowPlan, k: Any, op_args: tuple, ins: tuple[int, ...],
                   slow: Callable) -> Callable | None:
    """The autograd route's forward (the operator's outputs, then the statistics its
    backward reads) through the launch layer's launcher (``Kernel.bind``), where every
    tensor of the operator's arguments (``op_args[i]`` for ``i`` in ``ins``) is
    contiguous: ``forward(*tensors)``. A call of the key gives tensors of the same shapes,
    dtypes, devices and layouts (the front makes them from what the key proves), so the
    launcher reads their addresses and makes the outputs. None where the launch layer has
    none or the kernel's rows are weighted after it (class weights); a call it refuses (an
    input off the vector loads' alignment) takes ``slow(*tensors)`` (run)."""
    torch = sys.modules["torch"]
    if not hasattr(k, "bind") or p.class_weight is not None:
        return None
    if len(ins) > 3 or any(not op_args[i].is_contiguous() for i in ins):  # (in the kernel's parameter order)
        return None
    x, kind, m, n = op_args[0], p.kind, p.m, p.n
    shape, lead, f32 = tuple(x.shape), tuple(x.shape[:-1]), torch.float32
    xv = x.view(m, n)
    rest = [op_args[i].view(m, n) if kind == "add_rms_norm" and i == 1 else
            op_args[i].view(m) if kind == "cross_entropy" and i == 1 else op_args[i] for i in ins[1:]]
    if kind == "cross_entropy":  # x, target, loss, lse
        params, order, new = [xv, *rest, xv.new_empty((m,), dtype=f32)], [2], [lead]
    elif kind == "add_rms_norm":  # x, y, residual, residual_out, weight?
        params, order, new = [xv, xv.new_empty((m, n)), rest[0], xv.new_empty((m, n)), *rest[1:]], [1, 3], [shape] * 2
    else:  # x, y, weight?, bias?
        params, order, new = [xv, xv.new_empty((m, n)), *rest], [1], [shape]
    for _ in p.stats:  # the statistics, last
        order.append(len(params))
        params.append(xv.new_empty((m,), dtype=f32))
        new.append(lead)
    if p.reduction is not None:  # cross_entropy's sum or mean of the rows, 0-d (the kernel's [1])
        order.append(len(params))
        params.append(xv.new_empty((1,)))
        new.append(())
    b = k.bind(params, inputs=[i for i in range(len(params)) if i not in order], order=order, new=new)
    if b is None:
        return None
    if len(ins) == 1:
        def forward(x: Any) -> Any:
            r = b(x, None)
            return slow(x) if r is None else r
    elif len(ins) == 2:
        def forward(x: Any, u: Any) -> Any:
            r = b(x, u, None)
            return slow(x, u) if r is None else r
    else:
        def forward(x: Any, u: Any, v: Any) -> Any:
            r = b(x, u, v, None)
            return slow(x, u, v) if r is None else r
    return forward


def _aligned_launcher(launcher: Callable, row: RowFunction, p: RowPlan, k: Any, op_args: tuple,
                      finish: Callable) -> Callable:
    """``launcher``, with an input off the kernel's vector-load alignment (a view at an
    odd storage offset, which the key does not see) run through :func:`run` (a copy)."""
    from bulkred_dialect.backend_ptx.errors import MisalignedError

    front, names = FRONTS[row.kind], row.op_arguments()

    def aligned(args: tuple) -> Any:
        try:
            return launcher(args)
        except MisalignedError:
            op_args, finish = front(row, *args)
            return (_reduced if p.reduction is not None else finish)(run(row, p, k, dict(zip(names, op_args)), False))

    return aligned


def forget() -> None:
    """Drop every call kept, the backward kernels' too (the kernels stay in
    ``row_kernels``' cache)."""
    with _LOCK:
        CALLS.clear()
        BACKWARD_CALLS.clear()


# endregion

# region The functions: their signatures and docs are their rows' (functions.NORM_ROWS)


# Each function's key (the module's docstring), written out in it: a call whose key was
# seen runs its launcher after one look-up, in no other frame (x's part, then the others':
# a tensor's as x's, an option's class before its value, so that values of another type
# never compare, and normalized_shape's items' types: (8.0,) == (8,)); one that cannot be
# made (x not a tensor, an argument without a tensor's attributes or not hashable, a list)
# takes _call's general key.


def softmax(x: Any, dim: int = -1, dtype: Any = None, *, variant: str | None = None) -> Any:
    args = (x, dim, dtype, variant)
    if _compiling():
        return _call(_SOFTMAX, args)
    try:
        key = ("softmax", _grad_enabled(), x.__class__, x.shape, x.dtype,
               x.get_device(), x.is_contiguous() or x.stride(), x.requires_grad,
               dim.__class__, dim, dtype.__class__, dtype, variant)
        hit = CALLS.get(key)
    except (TypeError, AttributeError):
        return _call(_SOFTMAX, args)
    return _first(_SOFTMAX, args, key) if hit is None else hit(args)


def log_softmax(x: Any, dim: int = -1, dtype: Any = None, *, variant: str | None = None) -> Any:
    args = (x, dim, dtype, variant)
    if _compiling():
        return _call(_LOG_SOFTMAX, args)
    try:
        key = ("log_softmax", _grad_enabled(), x.__class__, x.shape, x.dtype,
               x.get_device(), x.is_contiguous() or x.stride(), x.requires_grad,
               dim.__class__, dim, dtype.__class__, dtype, variant)
        hit = CALLS.get(key)
    except (TypeError, AttributeError):
        return _call(_LOG_SOFTMAX, args)
    return _first(_LOG_SOFTMAX, args, key) if hit is None else hit(args)


def rms_norm(x: Any, normalized_shape: Any, weight: Any = None, eps: float | None = None, *,
             variant: str | None = None) -> Any:
    args = (x, normalized_shape, weight, eps, variant)
    if _compiling():
        return _call(_RMS_NORM, args)
    try:
        key = ("rms_norm", _grad_enabled(), x.__class__, x.shape, x.dtype,
               x.get_device(), x.is_contiguous() or x.stride(), x.requires_grad,
               normalized_shape.__class__, normalized_shape,
               int if normalized_shape.__class__ is int else normalized_shape[0].__class__ if len(
                   normalized_shape) == 1 else tuple(map(type, normalized_shape)),
               None if weight is None else (weight.__class__, weight.shape, weight.dtype, weight.get_device(),
                                            weight.is_contiguous() or weight.stride(), weight.requires_grad),
               eps.__class__, eps, variant)
        hit = CALLS.get(key)
    except (TypeError, AttributeError):
        return _call(_RMS_NORM, args)
    return _first(_RMS_NORM, args, key) if hit is None else hit(args)


def layer_norm(x: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5, *,
               variant: str | None = None) -> Any:
    args = (x, normalized_shape, weight, bias, eps, variant)
    if _compiling():
        return _call(_LAYER_NORM, args)
    try:
        key = ("layer_norm", _grad_enabled(), x.__class__, x.shape, x.dtype,
               x.get_device(), x.is_contiguous() or x.stride(), x.requires_grad,
               normalized_shape.__class__, normalized_shape,
               int if normalized_shape.__class__ is int else normalized_shape[0].__class__ if len(
                   normalized_shape) == 1 else tuple(map(type, normalized_shape)),
               None if weight is None else (weight.__class__, weight.shape, weight.dtype, weight.get_device(),
                                            weight.is_contiguous() or weight.stride(), weight.requires_grad),
               None if bias is None else (bias.__class__, bias.shape, bias.dtype, bias.get_device(),
                                          bias.is_contiguous() or bias.stride(), bias.requires_grad),
               eps.__class__, eps, variant)
        hit = CALLS.get(key)
    except (TypeError, AttributeError):
        return _call(_LAYER_NORM, args)
    return _first(_LAYER_NORM, args, key) if hit is None else hit(args)


def add_rms_norm(x: Any, residual: Any, weight: Any = None, eps: float | None = None, *,
                 variant: str | None = None) -> Any:
    args = (x, residual, weight, eps, variant)
    if _compiling():
        return _call(_ADD_RMS_NORM, args)
    try:
        key = ("add_rms_norm", _grad_enabled(), x.__class__, x.shape, x.dtype,
               x.get_device(), x.is_contiguous() or x.stride(), x.requires_grad,
               residual.__class__, residual.shape, residual.dtype, residual.get_device(),
               residual.is_contiguous() or residual.stride(), residual.requires_grad,
               None if weight is None else (weight.__class__, weight.shape, weight.dtype, weight.get_device(),
                                            weight.is_contiguous() or weight.stride(), weight.requires_grad),
               eps.__class__, eps, variant)
        hit = CALLS.get(key)
    except (TypeError, AttributeError):
        return _call(_ADD_RMS_NORM, args)
    return _first(_ADD_RMS_NORM, args, key) if hit is None else hit(args)


def cross_entropy(input: Any, target: Any, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0, *, variant: str | None = None) -> Any:
    args = (input, target, weight, ignore_index, reduction, label_smoothing, variant)
    if _compiling():
        return _call(_CROSS_ENTROPY, args)
    x = input
    try:
        key = ("cross_entropy", _grad_enabled(), x.__class__, x.shape, x.dtype, x.get_device(),
               x.is_contiguous() or x.stride(), x.requires_grad, target.__class__, target.shape, target.dtype,
               target.get_device(), target.is_contiguous() or target.stride(),
               None if weight is None else (weight.__class__, weight.shape, weight.dtype, weight.get_device(),
                                            weight.is_contiguous() or weight.stride(), weight.requires_grad),
               ignore_index.__class__, ignore_index, reduction.__class__, reduction, label_smoothing.__class__,
               label_smoothing, variant)
        hit = CALLS.get(key)
    except (TypeError, AttributeError):
        return _call(_CROSS_ENTROPY, args)
    return _first(_CROSS_ENTROPY, args, key) if hit is None else hit(args)


_SOFTMAX, _LOG_SOFTMAX, _RMS_NORM, _LAYER_NORM, _ADD_RMS_NORM, _CROSS_ENTROPY = (
    NORMS[n] for n in ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy"))

PUBLIC: dict[str, Any] = {row.name: globals()[row.name] for row in NORM_ROWS}
"""Row name -> the public function."""


def _from_rows() -> None:
    """Each function's docs and signature from its row; a function whose parameters are
    not its row's (names, order, defaults, kinds) fails the import."""
    for row in NORM_ROWS:
        take_row_signature(PUBLIC[row.name], row)
        PUBLIC[row.name].__module__ = "bulkred_dialect"


_from_rows()

# endregion

# region The torch operators


def _backward_plan(kind: str, grad: Any, x: Any, variant: Any, what: str = "output") -> RowPlan:
    """The rows of a backward kernel's ``x`` (the forward's output for the softmaxes, its
    input for the others) and its ``grad`` (of x's shape; cross-entropy's: [M])."""
    torch = _torch(kind, x)
    dtype = _float_tensor(kind, what, x, torch)
    if x.dim() == 0:
        raise _error(kind, f"{what} is 0-d")
    m, n, stride = _row_stride(kind, x)
    want = tuple(x.shape[:-1]) if kind == "cross_entropy_backward" else tuple(x.shape)
    if not isinstance(grad, torch.Tensor) or tuple(grad.shape) != want or grad.device != x.device:
        raise _error(kind, f"grad must be a tensor of shape {list(want)} on {what}'s device")
    return RowPlan(kind, kind, m, n, dtype, None if stride == n or m <= 1 else stride, variant=variant)


def _rows(t: Any, m: int, n: int | None = None) -> Any:
    """``t`` as the kernel's contiguous ``[m, n]`` (or ``[m]``) buffer."""
    return t.reshape((m, n) if n is not None else (m,)).contiguous()


BACKWARD_CALLS: dict[tuple, tuple] = {}
"""A backward kernel's calls seen: key (the kind, each checked tensor's class, shape,
dtype, device and strides, the options) -> ``(plan, kernel, ...)``, made after the
call's checks and kept (a call of the key neither checks nor looks its kernel up
again); emptied by :func:`forget`."""


def _meta(t: Any) -> Any:
    """A checked tensor's part of a backward key (None as itself)."""
    return None if t is None else (t.__class__, t.shape, t.dtype, t.device, t.stride())


def _backward_kept(key: tuple, make: Callable[[], tuple]) -> tuple:
    """``BACKWARD_CALLS[key]``, made by ``make()`` (every check, the kernel) on a miss."""
    try:
        got = BACKWARD_CALLS.get(key)
    except TypeError:  # an option not hashable: make() refuses it
        return make()
    if got is None:
        got = make()
        if len(BACKWARD_CALLS) < 4096:
            BACKWARD_CALLS[key] = got
    return got


def _softmax_backward(kind: str) -> Callable[..., Any]:
    def make(grad: Any, output: Any, variant: str | None) -> tuple:
        p = _backward_plan(kind, grad, output, variant)
        return p, _kernel(p, False)

    def impl(grad: Any, output: Any, variant: str | None) -> Any:
        p, k = _backward_kept((kind, _meta(grad), _meta(output), variant), lambda: make(grad, output, variant))
        torch = sys.modules["torch"]
        dx = torch.empty_like(output, memory_format=torch.contiguous_format)  # (cheaper than empty(shape, ...))
        if k is not None:  # x (the forward's output), y (dx), grad
            _launch(k, [output.view(p.m, p.n), dx.view(p.m, p.n), _rows(grad, p.m, p.n).to(output.dtype)])
        return dx

    def fake(grad: Any, output: Any, variant: str | None) -> Any:
        _backward_plan(kind, grad, output, variant)
        return output.new_empty(tuple(output.shape))

    return impl, fake


def _affine_grads(p: RowPlan, x: Any, weight: Any, bias: Any, torch: Any) -> tuple[Any, Any]:
    """dweight and dbias of a norm's backward: ``[n]`` in the weight's and the bias' dtype,
    or an empty tensor for an absent one."""
    dev = x.device
    dw = torch.empty(0, dtype=x.dtype, device=dev) if weight is None else \
        torch.empty(p.n, dtype=weight.dtype, device=dev)
    db = torch.empty(0, dtype=x.dtype, device=dev) if bias is None else torch.empty(p.n, dtype=bias.dtype, device=dev)
    return dw, db


def _norm_backward(kind: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``rms_norm_backward(grad, x, weight, rstd, variant) -> (dx, dweight)`` and
    ``layer_norm_backward(grad, x, weight, bias, mean, rstd, variant) -> (dx, dweight,
    dbias)``: one kernel (dweight and dbias summed over the rows in a fixed order in it);
    an absent weight or bias gives an empty tensor."""
    layer = kind == "layer_norm_backward"

    def check(grad: Any, x: Any, weight: Any, bias: Any, variant: Any) -> RowPlan:
        p = _backward_plan(kind, grad, x, variant, "x")
        torch = sys.modules["torch"]
        for what, v in (("weight", weight), ("bias", bias)):
            if v is not None:
                _float_tensor(kind, what, v, torch)
                if tuple(v.shape) != (p.n,):
                    raise _error(kind, f"'{what}' must have shape [{p.n}], got {list(v.shape)}")
        return p

    def make(grad: Any, x: Any, weight: Any, bias: Any, variant: Any) -> tuple:
        p = check(grad, x, weight, bias, variant)
        if not (p.m and p.n):
            return p, None
        from bulkred_dialect.row_kernels import kernel_for

        wd = None if weight is None else ROW_DTYPES[str(weight.dtype)]
        bd = None if bias is None else ROW_DTYPES[str(bias.dtype)]
        try:
            return p, kernel_for(kind, None, p.n, p.dtype, x_stride=p.x_stride, weight=wd, dweight=wd, dbias=bd,
                                 variant=variant)
        except BulkredError as e:
            raise _error(kind, _first_line(e)) from None

    def impl(grad: Any, x: Any, weight: Any, *rest: Any) -> Any:
        bias, stats, variant = (rest[0], rest[1:3], rest[3]) if layer else (None, rest[:1], rest[1])
        torch = sys.modules["torch"]
        p, k = _backward_kept((kind, _meta(grad), _meta(x), _meta(weight), _meta(bias), variant),
                              lambda: make(grad, x, weight, bias, variant))
        dx = torch.empty_like(x, memory_format=torch.contiguous_format)
        dw, db = _affine_grads(p, x, weight, bias, torch)
        if k is not None:
            args = [x.view(p.m, p.n), dx.view(p.m, p.n), _rows(grad, p.m, p.n).to(x.dtype)]
            args += [] if weight is None else [weight.contiguous()]
            args += [_rows(s, p.m) for s in stats]
            args += [t for t, v in ((dw, weight), (db, bias)) if v is not None]
            _launch(k, args)
        elif p.n:
            dw.zero_()
            db.zero_()
        return (dx, dw, db) if layer else (dx, dw)

    def fake(grad: Any, x: Any, weight: Any, *rest: Any) -> Any:
        bias, variant = (rest[0], rest[3]) if layer else (None, rest[1])
        p = check(grad, x, weight, bias, variant)
        dw, db = _affine_grads(p, x, weight, bias, sys.modules["torch"])
        return (x.new_empty(tuple(x.shape)), dw, db) if layer else (x.new_empty(tuple(x.shape)), dw)

    return impl, fake


def _cross_entropy_backward() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``cross_entropy_backward(grad, input, target, lse, ignore_index, label_smoothing,
    variant) -> dx``: ``grad`` the float32 gradient of each row's loss."""
    kind = "cross_entropy_backward"

    def make(grad: Any, input: Any, ignore_index: int, smoothing: float, variant: Any) -> tuple:
        p = _backward_plan(kind, grad, input, variant, "input")
        if not (p.m and p.n):
            return p, None
        from bulkred_dialect.row_kernels import kernel_for

        try:
            return p, kernel_for(kind, None, p.n, p.dtype, x_stride=p.x_stride, variant=variant,
                                 ignore_index=ignore_index, label_smoothing=smoothing or None)
        except BulkredError as e:
            raise _error(kind, _first_line(e)) from None

    def impl(grad: Any, input: Any, target: Any, lse: Any, ignore_index: int, smoothing: float, variant: Any) -> Any:
        p, k = _backward_kept((kind, _meta(grad), _meta(input), ignore_index.__class__, ignore_index,
                               smoothing.__class__, smoothing, variant),
                              lambda: make(grad, input, ignore_index, smoothing, variant))
        torch = sys.modules["torch"]
        dx = torch.empty_like(input, memory_format=torch.contiguous_format)
        if k is not None:
            args = [input.view(p.m, p.n), dx.view(p.m, p.n), _rows(target, p.m), _rows(grad, p.m).float(),
                    _rows(lse, p.m)]
            _launch(k, args)
        return dx

    def fake(grad: Any, input: Any, target: Any, lse: Any, ignore_index: int, smoothing: float, variant: Any) -> Any:
        _backward_plan(kind, grad, input, variant, "input")
        return input.new_empty(tuple(input.shape))

    return impl, fake


BACKWARD_OPS: dict[str, tuple[str, Callable[[], tuple]]] = {
    "softmax_backward": ("(Tensor grad, Tensor output, str? variant) -> Tensor",
                         lambda: _softmax_backward("softmax_backward")),
    "log_softmax_backward": ("(Tensor grad, Tensor output, str? variant) -> Tensor",
                             lambda: _softmax_backward("log_softmax_backward")),
    "rms_norm_backward": ("(Tensor grad, Tensor x, Tensor? weight, Tensor rstd, str? variant) -> (Tensor, Tensor)",
                          lambda: _norm_backward("rms_norm_backward")),
    "layer_norm_backward": ("(Tensor grad, Tensor x, Tensor? weight, Tensor? bias, Tensor mean, Tensor rstd, "
                            "str? variant) -> (Tensor, Tensor, Tensor)", lambda: _norm_backward("layer_norm_backward")),
    "cross_entropy_backward": ("(Tensor grad, Tensor input, Tensor target, Tensor lse, int ignore_index, "
                               "float label_smoothing, str? variant) -> Tensor", _cross_entropy_backward),
}
"""The backward kernels, each a torch operator ``bulkred::<kind>`` of its own (the rules
of ``row_grads.py`` call them; torch.compile traces them): kind -> (schema, a maker of
``(impl, fake)``). dx from the forward's output (the softmaxes) or input and the stored
statistics; dweight / dbias summed over the rows in a fixed order inside the kernel."""


def _op_impl(row: RowFunction) -> Callable[..., Any]:
    names = row.op_arguments()

    def impl(*op_args: Any) -> Any:
        a = dict(zip(names, op_args))
        p = plan(row, a)
        out = run(row, p, _kernel(p, True), a, True)
        return out if len(out) > 1 else out[0]

    return impl


def _op_fake(row: RowFunction) -> Callable[..., Any]:
    names = row.op_arguments()

    def fake(*op_args: Any) -> Any:
        a = dict(zip(names, op_args))
        plan(row, a)
        x = a[row.inputs[0]]
        torch = sys.modules["torch"]
        lead = tuple(x.shape[:-1])
        outs = [x.new_empty(lead, dtype=torch.float32) if o == "loss" else x.new_empty(tuple(x.shape))
                for o in row.outputs]
        outs += [x.new_empty(lead, dtype=torch.float32) for _ in row.stats]
        return tuple(outs) if len(outs) > 1 else outs[0]

    return fake


_REGISTERED: list[bool] = []


def _register() -> None:
    """The torch operators of every row and of the backward kernels (once)."""
    if _REGISTERED:
        return
    from bulkred_dialect import torch_ops

    with _LOCK:
        if _REGISTERED:
            return
        for kind, (schema, make) in BACKWARD_OPS.items():
            torch_ops.register_kernel_op(kind, schema, *make())
        for row in NORM_ROWS:
            torch_ops.register_row(row, _op_impl(row), _op_fake(row))
        _REGISTERED.append(True)


if "torch" in sys.modules:  # torch.compile must find the operators before it traces a call
    _register()

# endregion
