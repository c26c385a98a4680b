"""The gradient formulas of the differentiable rows of the function table (``Function.grad``
names one of :data:`RULES`), registered by ``torch_ops.py`` with
``torch.library.register_autograd``. Each is torch's own formula (``FunctionsManual.cpp``:
``sum_backward``, ``prod_backward``, ``var_backward``, ``std_backward``, ``norm_backward``,
``logsumexp_backward``, ``nansum_backward``, ``amaxamin_jvp``'s ``scale_grad_by_count`` and
``value_selecting_reduction_backward``; ``nanmean``: torch's composite ``nansum(x) / count``), written with torch operations, so that double
backward works where torch's does: the backward of a backward is torch's.

A rule takes ``(x, results, grads, dims, keepdims, options)``: the input, the forward's
results and the gradients of them (tuples, one per result), the reduced axes (sorted,
non-negative; all of them for a whole reduction), ``keepdims`` and the function's options;
it returns the gradient of ``x``. Only this module and ``torch_ops.py`` import torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch


def _restore(t: torch.Tensor, dims: tuple[int, ...], keepdims: bool, ndim: int) -> torch.Tensor:
    """``t`` (a result of keepdims=False) ready to broadcast against x: the reduced axes
    back as 1s where broadcasting needs them, after x's first kept axis. Leading reduced
    axes are left out (broadcasting adds them): a whole reduction's 0-d result and a
    column reduction's (axis 0) are used as they are, no operation per tensor."""
    if keepdims or ndim == 0:
        return t
    lead = 0
    while lead < len(dims) and dims[lead] == lead:
        lead += 1
    for d in dims[lead:]:
        t = t.unsqueeze(d - lead)
    return t


def _private() -> bool:
    """Whether a backward's temporaries may be written in place: a backward that records
    no graph (``create_graph=False``, grad mode off) owns the tensors it makes; one that
    records a graph keeps them out of place, for the backward of the backward."""
    return not torch.is_grad_enabled()


def _count(x: torch.Tensor, dims: tuple[int, ...]) -> int:
    return math.prod(x.shape[d] for d in dims) if x.dim() else 1


def _sum(x, results, grads, dims, keepdims, options):
    return _restore(grads[0], dims, keepdims, x.dim()).expand(x.shape).to(x.dtype)


def _mean(x, results, grads, dims, keepdims, options):
    return (_restore(grads[0], dims, keepdims, x.dim()) / _count(x, dims)).expand(x.shape).to(x.dtype)


def _others(x, dims):
    """Each element's product of the other elements of its reduced slice, without a
    division: exclusive cumulative products from both ends of the slice (torch's
    prod_safe_zeros_backward), so its own derivative is exact where the slice has zeros."""
    kept = [d for d in range(x.dim()) if d not in dims]
    order = kept + list(dims)
    xt = x.permute(order)
    flat = xt.reshape(*xt.shape[: len(kept)], -1)
    ones = torch.ones_like(flat[..., :1])
    before = torch.cat([ones, flat[..., :-1]], -1).cumprod(-1)
    after = torch.cat([ones, flat.flip(-1)[..., :-1]], -1).cumprod(-1).flip(-1)
    inverse = [order.index(d) for d in range(x.dim())]
    return (before * after).reshape(xt.shape).permute(inverse)


def _prod(x, results, grads, dims, keepdims, options):
    """torch's prod_backward, without a host sync (``torch.compile(fullgraph=True)`` traces
    it), chosen per reduced slice by ``torch.where`` on the GPU where torch chooses for the
    whole ``x`` with ``(x == 0).nonzero()`` on the host:

    * a slice without a zero: ``grad * result / x`` (NaN wherever the product is NaN, as torch);
    * a slice with zeros: ``grad`` times each element's product of the others, as exclusive
      products (:func:`_others`): no division, so the backward of this backward
      (``create_graph=True``, ``gradgradcheck``) is right at and beside the zeros.

    A complex ``x`` takes the conjugates of those factors, as torch's (its convention:
    ``grad * conj(d prod / d x)``)."""
    g = _restore(grads[0], dims, keepdims, x.dim())
    if x.dim() == 0:
        return g.to(x.dtype).expand(x.shape)
    if x.numel() == 0:
        return torch.zeros_like(x)
    dims = tuple(d % x.dim() for d in dims)
    r = _restore(results[0], dims, keepdims, x.dim())
    zero = x == 0
    no_zero = zero.sum(dim=dims, keepdim=True) == 0
    safe = torch.where(zero, torch.ones_like(x), x)  # x with its zeros as 1: plain's division never sees 0
    plain = g * (r / safe).conj()  # conj: torch's complex convention (a no-op for real x)
    out = torch.where(no_zero, plain, g * _others(x, dims).conj().to(g.dtype))
    return out.to(x.dtype)


def _centered(x, dims, keepdims, results=()):
    """``x - mean``, the one pass over x of var's and std's backward. The mean is
    ``results[1]`` where the forward gave it (the var_mean kernel's aux output: the eager
    route of var and std saves it, as var_mean's and std_mean's results hold it), else x's,
    reduced here."""
    if not x.dim():
        mean = x
    elif len(results) > 1 and not torch.is_grad_enabled():
        # (a backward that records a graph, create_graph=True, reduces x here: the saved
        # mean is a constant to autograd, and the backward of this backward needs its
        # dependence on x)
        mean = _restore(results[1], dims, keepdims, x.dim())
    else:
        mean = x.mean(dim=dims, keepdim=True)
    return x - mean


def _var_grad(x, g, dims, keepdims, correction, results=(), scaled=False, centered=None):
    """torch's var_backward: (2 / (N - correction)) * grad * (x - mean); ``correction``
    None is torch's default, 1; ``x - mean`` is :func:`_centered`'s (``centered``: made
    already). ``scaled``: ``g`` holds the scale already (std's). The pass over x is
    enqueued before the operations on the result-sized tensors: the GPU starts on it
    while the host makes the rest."""
    d = _centered(x, dims, keepdims, results) if centered is None else centered
    correction = 1 if correction is None else correction
    n = _count(x, dims)
    g = _restore(g, dims, keepdims, x.dim())
    scale = 2.0 / (n - correction) if n != correction else math.inf  # C's 2.0 / 0.0, as torch
    return _times(d, g if scaled else scale * g)  # the scale on the result-sized tensor: one pass over x fewer


def _times(d: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """``d * s``, in place into ``d`` where d is the backward's own temporary of the
    product's dtype (:func:`_private`): no second tensor of x's size."""
    return d.mul_(s) if d.dtype == s.dtype and _private() else d * s


def _var(x, results, grads, dims, keepdims, options):
    return _as(_var_grad(x, grads[0], dims, keepdims, options["correction"], results), x)


def _std(x, results, grads, dims, keepdims, options):
    """torch's std_backward: var_backward of grad / (2 std), 0 where std is 0; the 2 of
    the 2 std and var_backward's 2 / (N - correction) folded into one scale of
    ``grad / std`` (two operations on the result-sized tensors before x's, not four)."""
    std = results[0]
    d = _centered(x, dims, keepdims, results)  # first: the pass over x runs while the scale below is enqueued
    correction = 1 if options["correction"] is None else options["correction"]
    n = _count(x, dims)
    scale = 1.0 / (n - correction) if n != correction else math.inf  # (2 / (N - c)) / 2
    g = grads[0] / std
    if _private():
        g.mul_(scale).masked_fill_(std == 0, 0)
    else:
        g = (g * scale).masked_fill(std == 0, 0)
    return _as(_var_grad(x, g, dims, keepdims, correction, results, scaled=True, centered=d), x)


def _as(t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``t`` in x's dtype (the call skipped where it is already: a call from Python each)."""
    return t if t.dtype == x.dtype else t.to(x.dtype)


def _and_mean(first: Callable[..., Any]) -> Callable[..., Any]:
    """The rule of a pair (``first``'s result, the mean): var_mean, std_mean; a result
    with no gradient (None: not used by the loss) adds nothing."""

    def rule(x, results, grads, dims, keepdims, options):
        g0, gm = grads
        out = None
        if g0 is not None:
            out = first(x, results, (g0,), dims, keepdims, options)  # results[1]: the mean
        if gm is not None:
            m = _mean(x, results[1:], (gm,), dims, keepdims, options)
            out = m if out is None else out + m
        return torch.zeros_like(x) if out is None else out

    return rule


_var_mean = _and_mean(_var)
_std_mean = _and_mean(_std)


def _amax(x, results, grads, dims, keepdims, options):
    """torch's amax/amin backward: the gradient split evenly among the elements equal to
    the result (scale_grad_by_count)."""
    r = _restore(results[0], dims, keepdims, x.dim())
    mask = x == r  # first: the pass over x runs while the rest is enqueued
    count = mask.sum(dims, True) if x.dim() else mask.to(torch.int64)  # (positional: no keyword parsing per call)
    g = _restore(grads[0], dims, keepdims, x.dim())
    return _as((g / count) * mask, x)


def _with_indices(x, results, grads, dims, keepdims, options):
    """torch's value_selecting_reduction_backward: the values' gradient to their index."""
    g = grads[0]
    indices = results[1]
    if g is None:
        return torch.zeros_like(x)
    if len(dims) != 1 or x.dim() == 0:  # a whole reduction: the flat index
        flat = torch.zeros(x.numel(), dtype=g.dtype, device=x.device)
        flat = flat.index_put((indices.reshape(-1),), g.reshape(-1))
        return flat.reshape(x.shape).to(x.dtype)
    d = dims[0]
    if not keepdims:
        g, indices = g.unsqueeze(d), indices.unsqueeze(d)
    return torch.zeros_like(x, dtype=g.dtype).scatter(d, indices, g).to(x.dtype)


def _vector_norm(x, results, grads, dims, keepdims, options):
    """torch's norm_backward for ``ord`` p (linalg_vector_norm_backward)."""
    p = float(options["ord"])
    if p == 0.0:  # the count of nonzero elements: piecewise constant, torch's gradient is 0
        return torch.zeros_like(x)
    g = _restore(grads[0], dims, keepdims, x.dim())
    norm = _restore(results[0], dims, keepdims, x.dim())
    if p == 1.0:
        return (x.sgn() * g).to(x.dtype)
    if p == 2.0:
        # torch's grad * (x / norm).masked_fill(norm == 0, 0), with the division and the mask
        # on the result-sized tensors: one pass over x instead of three (the same values: a
        # zero norm's x is 0, an inf or NaN norm gives NaN where torch's does)
        s = g / norm
        return _as(x * (s.masked_fill_(norm == 0, 0) if _private() else s.masked_fill(norm == 0, 0)), x)
    if math.isinf(p):
        a = x.abs()
        if x.is_complex():  # the kernel's |z| (sqrt of re^2 + im^2) and torch's (hypot) may differ in the last bit
            norm = (a.amax if p > 0 else a.amin)(dim=dims, keepdim=True)
        mask = a.eq(norm).logical_or(a.isnan())
        return (x.sgn() * ((g / mask.sum(dim=dims, keepdim=True)) * mask)).to(x.dtype)
    if p < 1.0:
        scaled = x.sgn() * x.abs().pow(p - 1).masked_fill(x == 0, 0)
        return (scaled * g * norm.pow(1 - p)).to(x.dtype)
    if p < 2.0:
        scaled = x.sgn() * x.abs().pow(p - 1)
    else:
        scaled = x * x.abs().pow(p - 2)
    scale = (g / norm.pow(p - 1)).masked_fill(norm == 0, 0)
    return (scaled * scale).to(x.dtype)


def _nansum(x, results, grads, dims, keepdims, options):
    """torch's nansum_backward: the sum's gradient where x is not NaN, 0 where it is."""
    g = _restore(grads[0], dims, keepdims, x.dim())
    return (g * x.isnan().logical_not()).to(x.dtype)


def _nanmean(x, results, grads, dims, keepdims, options):
    """torch's nanmean is nansum(x) / (the count of non-NaN elements): the gradient
    ``grad / count`` where x is not NaN, 0 where it is (NaN where every element is NaN:
    the count is 0, as torch gives)."""
    g = _restore(grads[0], dims, keepdims, x.dim())
    keep = x.isnan().logical_not()
    count = keep.sum(dim=dims, keepdim=True) if x.dim() else keep.to(torch.int64)
    return ((g / count) * keep).to(x.dtype)


def _aminmax(x, results, grads, dims, keepdims, options):
    """torch's aminmax backward: each result's gradient split evenly among the elements
    equal to it (scale_grad_by_count, as amax/amin), the two added."""
    out = torch.zeros_like(x)
    for r, g in zip(results, grads):
        if g is not None:
            out = out + _amax(x, (r,), (g,), dims, keepdims, options)
    return out


def _logsumexp(x, results, grads, dims, keepdims, options):
    """torch's logsumexp_backward: grad * exp(x - result), conjugated for a complex x
    (softmax's conjugate: torch's convention for a holomorphic function)."""
    g = _restore(grads[0], dims, keepdims, x.dim())
    r = _restore(results[0], dims, keepdims, x.dim())
    if _private() and not x.is_complex():  # the backward's own temporary, in place: one tensor of x's size, not three
        e = torch.sub(x, r).exp_()
        return _as(e.mul_(g) if e.dtype == g.dtype else e * g, x)
    e = (x - r).exp()
    return _as(g * (e.conj() if e.is_complex() else e), x)


RULES: dict[str, Callable[..., Any]] = {
    "sum": _sum,
    "prod": _prod,
    "mean": _mean,
    "var": _var,
    "std": _std,
    "var_mean": _var_mean,
    "std_mean": _std_mean,
    "amax": _amax,
    "max_with_indices": _with_indices,
    "vector_norm": _vector_norm,
    "logsumexp": _logsumexp,
    "nansum": _nansum,
    "nanmean": _nanmean,
    "aminmax": _aminmax,
}
"""A row's ``grad`` name -> its formula."""
