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
    """Each row's loss in float32 (the operator's ``loss``): ``reduction='none'``; with
    class weights ``w``, ``(1 - s) w[t] (lse - x[t]) + s / C (sum(w) lse - x @ w)`` (torch's
    ``cross_entropy_loss_label_smoothing``, its smoothing term ``-sum(w * log_softmax(x))``)."""
    x, t = a["input"].to(F32), a["target"]
    s, ignore, w = a["label_smoothing"], a["ignore_index"], a["weight"]
    ignored = t == ignore
    safe = torch.where(ignored, torch.zeros_like(t), t)
    lse = torch.logsumexp(x, -1)
    picked = x.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    if w is None:
        loss = lse - (1 - s) * picked - s * x.mean(-1)
    else:
        wf = w.to(F32)
        loss = (1 - s) * class_weights(w, t, ignore, x.shape[-1]) * (lse - picked)
        if s:
            loss = loss + s / x.shape[-1] * (wf.sum() * lse - x @ wf)
    return (torch.where(ignored, torch.zeros_like(loss), loss),)


def class_weights(weight: torch.Tensor, target: torch.Tensor, ignore_index: int, c: int) -> torch.Tensor:
    """``weight[target]`` of each row in float32, 0 where the target is ``ignore_index`` (a
    target outside [0, C) reads a class clamped into it: its row's loss is NaN)."""
    return weight.to(F32).gather(0, target.reshape(-1).clamp(0, max(c - 1, 0))).masked_fill_(
        target.reshape(-1) == ignore_index, 0.0)


def weighted_rows(loss: torch.Tensor, lse: torch.Tensor | None, x: torch.Tensor, target: torch.Tensor,
                  weight: torch.Tensor, ignore_index: int, s: float) -> torch.Tensor:
    """cross_entropy's rows with class weights ``w``, in place in the kernel's ``loss``
    (unweighted, unsmoothed: ``lse - x[t]``, 0 on the rows ignored): ``w[t] loss``; with
    label smoothing ``s`` (then ``lse`` is the kernel's stored lse), ``(1 - s) w[t] loss
    + s / C (sum(w) lse - x @ w)``, 0 on the rows ignored. ``x @ w`` is one more read of
    x (16-bit x: a float32 copy first, so that the sum of C products is float32's)."""
    c = x.shape[-1]
    wt = class_weights(weight, target, ignore_index, c)
    if not s:
        return loss.mul_(wt)
    w = weight.to(F32)
    xw = torch.mv(x if x.dtype == F32 else x.to(F32), w)
    smooth = lse.mul(w.sum()).sub_(xw).masked_fill_(target.reshape(-1) == ignore_index, 0.0)
    return loss.mul_(wt.mul_(1 - s)).add_(smooth, alpha=s / c)


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
    ``ignore_index``, NaN on a row whose target is outside [0, C).

    With class weights ``w`` (``W = sum(w)``), a row's gradient ``g`` gives
    ``g (a softmax(x) - (1 - s) w[t] onehot(t) - s / C w)``, ``a = (1 - s) w[t] + s / C W``:
    the same kernel (without smoothing) with the row's gradient ``g a`` gives ``g a
    (softmax(x) - onehot(t))``; with ``s`` > 0 the rest, ``g s / C (W onehot(t) - w)``, is
    added in torch operations (a rank-one update of dx and one element per row; for a
    16-bit x in a float32 copy of dx, rounded once more). The weights get no gradient
    (as torch's)."""
    g = grads[0]
    if g is None:
        return {}
    if torch.is_grad_enabled():
        return _double("cross_entropy", args, grads)
    x, t, w, s, ignore = args["input"], args["target"], args["weight"], args["label_smoothing"], args["ignore_index"]
    if w is None:
        return {"input": torch.ops.bulkred.cross_entropy_backward(g, x, t, outputs[-1], ignore, s, args["variant"])}
    c = x.shape[-1]
    ignored = t.reshape(-1) == ignore
    a = class_weights(w, t, ignore, c)
    wf = w.to(F32)
    if s:
        a = a.mul_(1 - s).add_(wf.sum(), alpha=s / c)
    ga = (g.to(F32) * a).masked_fill_(ignored, 0.0)
    dx = torch.ops.bulkred.cross_entropy_backward(ga, x, t, outputs[-1], ignore, 0.0, args["variant"])
    if s:
        gs = g.to(F32).masked_fill(ignored, 0.0).mul_(s / c)
        d = dx.view(-1, c) if dx.dtype == F32 else dx.view(-1, c).to(F32)
        d.addr_(gs, wf, alpha=-1.0)
        d.scatter_add_(1, t.reshape(-1, 1).clamp(0, c - 1), gs.mul_(wf.sum()).unsqueeze(1))
        if d.dtype != dx.dtype:
            dx.view(-1, c).copy_(d)
    return {"input": dx}


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
