"""The gradient rules of the row normalizations (``functions.NORM_ROWS``; a row's ``grad``
names one of :data:`RULES`), registered by ``torch_ops.register_row`` with
``torch.library.register_autograd``, and the same functions written with torch operations
(:data:`COMPOSITES`: torch's own composite definitions, for double backward and as the
tests' reference).

A rule takes ``(args, outputs, grads)``: the operator's arguments by name (the tensors as
saved, the options as given), its outputs (the kernel's outputs, then the statistics it
stored: ``rstd``, ``mean``, ``lse``) and their gradients (None for one that has none); it
returns the gradients of the operator's tensor arguments by name.

The first backward reads the statistics the forward stored, never recomputing them:

* ``softmax``, ``log_softmax``: the kernels ``softmax_backward`` / ``log_softmax_backward``
  (one read of y and of dy, one write of dx: ``torch.ops.bulkred.softmax_backward``);
* ``rms_norm``, ``layer_norm``, ``add_rms_norm``, ``cross_entropy``: TORCH FORMULAS (torch
  operations on the stored rstd / mean / lse, in float32), until their backward kernels
  replace them.

A backward that itself requires grad (``create_graph=True``, ``gradgradcheck``) takes the
composite instead: the forward again in torch operations from the saved inputs, and
``torch.autograd.grad`` of it, so the backward of the backward is torch's.

Only this module, ``torch_ops.py`` and ``row_functions.py`` import torch for the rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

F32 = torch.float32


# region The composites: each function in torch operations (torch's own definitions)


def _softmax(a: dict[str, Any]) -> tuple:
    return (torch.softmax(a["x"].to(F32), -1).to(a["x"].dtype),)


def _log_softmax(a: dict[str, Any]) -> tuple:
    return (torch.log_softmax(a["x"].to(F32), -1).to(a["x"].dtype),)


def _rms(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    xf = x.to(F32)
    y = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)
    return (y if weight is None else y * weight.to(F32)).to(x.dtype)


def _rms_norm(a: dict[str, Any]) -> tuple:
    return (_rms(a["x"], a["weight"], a["eps"]),)


def _layer_norm(a: dict[str, Any]) -> tuple:
    x = a["x"]
    xf = x.to(F32)
    mean = xf.mean(-1, keepdim=True)
    y = (xf - mean) * torch.rsqrt((xf - mean).square().mean(-1, keepdim=True) + a["eps"])
    if a["weight"] is not None:
        y = y * a["weight"].to(F32)
    if a["bias"] is not None:
        y = y + a["bias"].to(F32)
    return (y.to(x.dtype),)


def _add_rms_norm(a: dict[str, Any]) -> tuple:
    h = a["x"] + a["residual"]
    return _rms(h, a["weight"], a["eps"]), h


def _cross_entropy(a: dict[str, Any]) -> tuple:
    """Each row's loss in float32 (the operator's ``loss``): ``reduction='none'``."""
    x, t = a["input"].to(F32), a["target"]
    s, ignore = a["label_smoothing"], a["ignore_index"]
    ignored = t == ignore
    safe = torch.where(ignored, torch.zeros_like(t), t)
    lse = torch.logsumexp(x, -1)
    picked = x.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    loss = lse - (1 - s) * picked - s * x.mean(-1)
    return (torch.where(ignored, torch.zeros_like(loss), loss),)


COMPOSITES: dict[str, Callable[[dict[str, Any]], tuple]] = {
    "softmax": _softmax, "log_softmax": _log_softmax, "rms_norm": _rms_norm, "layer_norm": _layer_norm,
    "add_rms_norm": _add_rms_norm, "cross_entropy": _cross_entropy,
}
"""Row name -> its outputs (the differentiable ones: y, residual_out, loss) in torch
operations, from the operator's arguments by name."""


def _double(name: str, args: dict[str, Any], grads: tuple) -> dict[str, Any]:
    """The gradients through the composite (the backward's own graph kept: double backward)."""
    inputs = {k: v for k, v in args.items() if isinstance(v, torch.Tensor) and v.requires_grad}
    outs = COMPOSITES[name](args)
    pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
    if not inputs or not pairs:
        return {}
    got = torch.autograd.grad([o for o, _ in pairs], list(inputs.values()), [g for _, g in pairs],
                              create_graph=True, allow_unused=True)
    return dict(zip(inputs, got))


# endregion

# region The rules


def _rows(t: torch.Tensor) -> torch.Tensor:
    """The statistic of each row, ready to broadcast against the row."""
    return t.unsqueeze(-1)


def _sum_rows(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A weight's gradient: ``t`` summed over every row, in ``like``'s dtype."""
    return t.reshape(-1, t.shape[-1]).sum(0).to(like.dtype)


def _softmax_rule(kernel: str) -> Callable[[dict, tuple, tuple], dict]:
    def rule(args: dict[str, Any], outputs: tuple, grads: tuple) -> dict[str, Any]:
        if grads[0] is None:
            return {}
        if torch.is_grad_enabled():
            return _double(kernel.removesuffix("_backward"), args, grads)
        op = getattr(torch.ops.bulkred, kernel)
        return {"x": op(grads[0], outputs[0], args["variant"])}

    return rule


def _rms_backward(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor | None, rstd: torch.Tensor) -> tuple:
    """TORCH FORMULA (until the rms_norm_backward kernel): dx (float32) and dweight."""
    r = _rows(rstd)
    xhat = x.to(F32) * r
    g = dy.to(F32)
    gw = g if weight is None else g * weight.to(F32)
    dx = r * (gw - xhat * (gw * xhat).mean(-1, keepdim=True))
    dw = None if weight is None else _sum_rows(g * xhat, weight)
    return dx, dw


def _rms_norm_rule(args: dict[str, Any], outputs: tuple, grads: tuple) -> dict[str, Any]:
    if grads[0] is None:
        return {}
    if torch.is_grad_enabled():
        return _double("rms_norm", args, grads)
    x, w = args["x"], args["weight"]
    dx, dw = _rms_backward(grads[0], x, w, outputs[-1])
    return {"x": dx.to(x.dtype), "weight": dw}


def _layer_norm_rule(args: dict[str, Any], outputs: tuple, grads: tuple) -> dict[str, Any]:
    """TORCH FORMULA (until the layer_norm_backward kernel): dx, dweight, dbias."""
    if grads[0] is None:
        return {}
    if torch.is_grad_enabled():
        return _double("layer_norm", args, grads)
    x, w, b = args["x"], args["weight"], args["bias"]
    _, mean, rstd = outputs
    r = _rows(rstd)
    xhat = (x.to(F32) - _rows(mean)) * r
    g = grads[0].to(F32)
    gw = g if w is None else g * w.to(F32)
    dx = r * (gw - gw.mean(-1, keepdim=True) - xhat * (gw * xhat).mean(-1, keepdim=True))
    return {
        "x": dx.to(x.dtype),
        "weight": None if w is None else _sum_rows(g * xhat, w),
        "bias": None if b is None else _sum_rows(g, b),
    }


def _add_rms_norm_rule(args: dict[str, Any], outputs: tuple, grads: tuple) -> dict[str, Any]:
    """TORCH FORMULA (until the rms_norm_backward kernel): h = x + residual gets the rms_norm's
    gradient plus h's own; x and residual both get that."""
    gy, gh = grads[0], grads[1]
    if gy is None and gh is None:
        return {}
    if torch.is_grad_enabled():
        return _double("add_rms_norm", args, grads)
    x, w = args["x"], args["weight"]
    _, h, rstd = outputs
    dh = torch.zeros(x.shape, dtype=F32, device=x.device) if gy is None else None
    dw = None
    if gy is not None:
        dh, dw = _rms_backward(gy, h, w, rstd)
    if gh is not None:
        dh = dh + gh.to(F32)
    return {"x": dh.to(x.dtype), "residual": dh.to(args["residual"].dtype), "weight": dw}


def _cross_entropy_rule(args: dict[str, Any], outputs: tuple, grads: tuple) -> dict[str, Any]:
    """TORCH FORMULA (until the cross_entropy_backward kernel): each row's gradient times
    ``softmax(x) - (1 - s) * onehot(target) - s / C``, from the stored lse; 0 on the rows
    whose target is ``ignore_index``, NaN on a row whose target is outside [0, C)."""
    g = grads[0]
    if g is None:
        return {}
    if torch.is_grad_enabled():
        return _double("cross_entropy", args, grads)
    x, t = args["input"], args["target"]
    s, ignore = args["label_smoothing"], args["ignore_index"]
    c = x.shape[-1]
    lse = outputs[-1]
    ignored = t == ignore
    bad = ~ignored & ((t < 0) | (t >= c))
    safe = torch.where(ignored | bad, torch.zeros_like(t), t)
    dx = torch.exp(x.to(F32) - _rows(lse)) - s / c
    dx = dx - (1 - s) * torch.nn.functional.one_hot(safe, c).to(F32)
    scale = torch.where(ignored, torch.zeros_like(g), torch.where(bad, torch.full_like(g, float("nan")), g.to(F32)))
    return {"input": (dx * _rows(scale)).to(x.dtype)}


RULES: dict[str, Callable[[dict[str, Any], tuple, tuple], dict[str, Any]]] = {
    "softmax": _softmax_rule("softmax_backward"),
    "log_softmax": _softmax_rule("log_softmax_backward"),
    "rms_norm": _rms_norm_rule,
    "layer_norm": _layer_norm_rule,
    "add_rms_norm": _add_rms_norm_rule,
    "cross_entropy": _cross_entropy_rule,
}
"""Rule name (a row's ``grad``) -> its rule."""

# endregion
