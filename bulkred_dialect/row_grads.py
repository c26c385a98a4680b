"""The gradient rules of the row normalizations (``functions.NORM_ROWS``; a row's ``grad``
names one of :data:`RULES`), registered by ``torch_ops.register_row`` with
``torch.library.register_autograd``, and the same functions written with torch operations
(:data:`COMPOSITES`: torch's own composite definitions, for double backward and as the
tests' reference).

A rule takes ``(args, outputs, grads)``: the operator's arguments by name (the tensors as
saved, the options as given), its outputs (the kernel's outputs, then the statistics it
stored: ``rstd``, ``mean``, ``lse``) and their gradients (None for one that has none); it
returns the gradients of the operator's tensor arguments by name.

The first backward is one kernel, which reads the statistics the forward stored, never
recomputing them (each a torch operator of ``row_functions.py``, ``BACKWARD_OPS``):

* ``softmax``, ``log_softmax``: ``softmax_backward`` / ``log_softmax_backward`` (dx from
  y and dy: one read of each, one write of dx);
* ``rms_norm``, ``add_rms_norm`` (on h), ``layer_norm``: ``rms_norm_backward`` /
  ``layer_norm_backward`` (dx from x, dy and the stored rstd and mean; dweight and dbias
  summed over the rows in a fixed order inside the kernel: run-to-run identical bits);
* ``cross_entropy``: ``cross_entropy_backward`` (dx from the logits, the stored lse and
  each row's loss gradient).

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


def _softmax_rule(kernel: str) -> Callable[[dict, tuple, tuple], dict]:
    def rule(args: dict[str, Any], outputs: tuple, grads: tuple) -> dict[str, Any]:
        if grads[0] is None:
            return {}
        if torch.is_grad_enabled():
            return _double(kernel.removesuffix("_backward"), args, grads)
        return {"x": getattr(torch.ops.bulkred, kernel)(grads[0], outputs[0], args["variant"])}

    return rule


def _rms_norm_rule(args: dict[str, Any], outputs: tuple, grads: tuple) -> dict[str, Any]:
    if grads[0] is None:
        return {}
    if torch.is_grad_enabled():
        return _double("rms_norm", args, grads)
    w = args["weight"]
    dx, dw = torch.ops.bulkred.rms_norm_backward(grads[0], args["x"], w, outputs[-1], args["variant"])
    return {"x": dx, "weight": None if w is None else dw}


def _layer_norm_rule(args: dict[str, Any], outputs: tuple, grads: tuple) -> dict[str, Any]:
    if grads[0] is None:
        return {}
    if torch.is_grad_enabled():
        return _double("layer_norm", args, grads)
    w, b = args["weight"], args["bias"]
    _, mean, rstd = outputs
    dx, dw, db = torch.ops.bulkred.layer_norm_backward(grads[0], args["x"], w, b, mean, rstd, args["variant"])
    return {"x": dx, "weight": None if w is None else dw, "bias": None if b is None else db}


def _add_rms_norm_rule(args: dict[str, Any], outputs: tuple, grads: tuple) -> dict[str, Any]:
    """h = x + residual gets the rms_norm's gradient (the rms_norm_backward kernel on h)
    plus h's own; x and residual both get that."""
    gy, gh = grads[0], grads[1]
    if gy is None and gh is None:
        return {}
    if torch.is_grad_enabled():
        return _double("add_rms_norm", args, grads)
    w = args["weight"]
    _, h, rstd = outputs
    dh, dw = gh, None
    if gy is not None:
        dh, dw = torch.ops.bulkred.rms_norm_backward(gy, h, w, rstd, args["variant"])
        if gh is not None:
            dh = dh + gh
    return {"x": dh, "residual": dh, "weight": None if w is None else dw}


def _cross_entropy_rule(args: dict[str, Any], outputs: tuple, grads: tuple) -> dict[str, Any]:
    """Each row's gradient times ``softmax(x) - (1 - s) * onehot(target) - s / C`` (the
    cross_entropy_backward kernel, from the stored lse): 0 on the rows whose target is
    ``ignore_index``, NaN on a row whose target is outside [0, C)."""
    g = grads[0]
    if g is None:
        return {}
    if torch.is_grad_enabled():
        return _double("cross_entropy", args, grads)
    return {"input": torch.ops.bulkred.cross_entropy_backward(
        g, args["input"], args["target"], outputs[-1], args["ignore_index"], args["label_smoothing"],
        args["variant"])}


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
