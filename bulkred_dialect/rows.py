"""Row normalizations on the GPU: softmax, log_softmax, rms_norm and layer_norm forward,
each one ``bulkred.normalize_rows`` kernel (docs/rows.md).

SUPERSEDED: the rows of the function table, ``bulkred.softmax`` ... ``bulkred.cross_entropy``
(``row_functions.py``: torch's signatures, gradients, torch.compile, one kernel for every
M), replace these functions; this module stays only until its last users
(tests/gpu/test_rows_gpu.py, benchmarks/rows.py) have moved to them.

This is the first, minimal door: plain functions over torch CUDA tensors that build the
op's module for the row length, element type and strides of the call, compile it once
(the runtime's :func:`~bulkred_dialect.backend_ptx.runtime.compile_tile_module`, cached
here by that key) and launch it on the caller's stream. The rows of the function table
(``bulkred.softmax`` ..., gradients, torch.compile) are the next step of issue 30.

Example::

    import torch
    from bulkred_dialect import rows
    x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
    y = rows.rms_norm(x, (4096,), weight=torch.ones(4096, device="cuda", dtype=torch.bfloat16), eps=1e-6)

:func:`bulkred_dialect.row_kernels.module` builds the module itself with the builder (no
torch needed), which the CPU tests run on the interpreter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bulkred_dialect.errors import ArgumentError
from bulkred_dialect.row_kernels import kernel_for

# region torch

def _torch():
    try:
        import torch
    except ImportError as e:  # pragma: no cover - the GPU tests skip without torch
        raise ArgumentError(f"bulkred_dialect.rows needs torch ({e})") from None
    return torch


_DTYPE_NAMES = {"torch.float32": "float32", "torch.bfloat16": "bfloat16", "torch.float16": "float16"}


def _rows_of(x: Any, n: int, what: str) -> tuple[Any, int]:
    """``x`` as an [M, N] view with its row stride, or a one-line refusal."""
    torch = _torch()
    if not isinstance(x, torch.Tensor) or not x.is_cuda:
        raise ArgumentError(f"{what}: x must be a CUDA torch tensor, got {type(x).__name__}")
    if str(x.dtype) not in _DTYPE_NAMES:
        raise ArgumentError(f"{what}: x's dtype must be float32, bfloat16 or float16, got {x.dtype}")
    if x.dim() == 0 or x.shape[-1] != n or n < 1:
        raise ArgumentError(f"{what}: x's last dimension must be {n} (>= 1), got shape {tuple(x.shape)}")
    if x.numel() == 0:
        raise ArgumentError(f"{what}: x is empty (shape {tuple(x.shape)})")
    if x.stride(-1) != 1:
        raise ArgumentError(f"{what}: x's last dimension must be contiguous (stride 1), got strides {tuple(x.stride())}")
    try:
        x2 = x if x.dim() == 2 else x.reshape(-1, n) if x.dim() == 1 else x.view(-1, n)
    except RuntimeError:
        raise ArgumentError(
            f"{what}: x's rows must be one stride apart (shape {tuple(x.shape)}, strides {tuple(x.stride())}); "
            "pass x.contiguous()"
        ) from None
    if x2.dim() == 1:
        x2 = x2.view(1, n)
    return x2, x2.stride(0) if x2.shape[0] > 1 else n


def _vector(v: Any, n: int, field: str, what: str) -> str | None:
    torch = _torch()
    if v is None:
        return None
    if not isinstance(v, torch.Tensor) or not v.is_cuda or tuple(v.shape) != (n,) or not v.is_contiguous():
        raise ArgumentError(f"{what}: {field} must be a contiguous CUDA tensor of shape ({n},), got {getattr(v, 'shape', type(v).__name__)}")
    if str(v.dtype) not in _DTYPE_NAMES:
        raise ArgumentError(f"{what}: {field}'s dtype must be float32, bfloat16 or float16, got {v.dtype}")
    return _DTYPE_NAMES[str(v.dtype)]


def _run(kind: str, x: Any, n: int, what: str, *, weight: Any = None, bias: Any = None, eps: float | None = None,
         variant: str | None = None, residual: Any = None) -> Any:
    torch = _torch()
    x2, stride = _rows_of(x, n, what)
    if residual is not None:
        if not isinstance(residual, torch.Tensor) or residual.shape != x.shape or residual.dtype != x.dtype \
                or residual.device != x.device:
            raise ArgumentError(f"{what}: residual must be a tensor of x's shape, dtype and device, got "
                                f"{getattr(residual, 'shape', type(residual).__name__)}")
        if stride != n:
            raise ArgumentError(f"{what}: x's rows must be contiguous (padded rows: not yet), got strides {tuple(x.stride())}")
    dtype = _DTYPE_NAMES[str(x.dtype)]
    wd, bd = _vector(weight, n, "weight", what), _vector(bias, n, "bias", what)
    if wd is not None and bd is not None and wd != bd:
        raise ArgumentError(f"{what}: bias's dtype must be weight's {weight.dtype}, got {bias.dtype}")
    for field, d in (("weight", wd), ("bias", bd)):
        if d is not None and d not in (dtype, "float32"):
            raise ArgumentError(f"{what}: {field}'s dtype must be x's {x.dtype} or float32, got {d}")
    m = x2.shape[0]
    k = kernel_for(kind, m, n, dtype, x_stride=None if stride == n else stride, weight=wd, bias=bd, eps=eps,
                   variant=variant)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    args = [x2, y]
    if residual is not None:
        h = torch.empty((m, n), dtype=x.dtype, device=x.device)
        args += [residual.contiguous().view(m, n), h]
    args += [v for v in (weight, bias) if v is not None]
    k(*args)
    if residual is not None:
        return y.view(x.shape), h.view(x.shape)
    return y.view(x.shape)


def softmax(x: Any, dim: int = -1, *, variant: str | None = None) -> Any:
    """``torch.softmax(x, dim=-1)`` of a float32, bfloat16 or float16 CUDA tensor whose
    last dimension is contiguous (float32 accumulation, the result in x's dtype)."""
    _last_dim(x, dim, "softmax")
    return _run("softmax", x, x.shape[-1], "softmax", variant=variant)


def log_softmax(x: Any, dim: int = -1, *, variant: str | None = None) -> Any:
    """``torch.log_softmax(x, dim=-1)`` (as :func:`softmax`)."""
    _last_dim(x, dim, "log_softmax")
    return _run("log_softmax", x, x.shape[-1], "log_softmax", variant=variant)


def rms_norm(x: Any, normalized_shape: Sequence[int] | int, weight: Any = None, eps: float | None = None, *,
             variant: str | None = None) -> Any:
    """``torch.nn.functional.rms_norm`` over the last dimension; ``eps=None`` is the
    dtype's machine epsilon, as torch."""
    n = _normalized(x, normalized_shape, "rms_norm")
    if eps is None:
        eps = float(_torch().finfo(x.dtype).eps)
    return _run("rms_norm", x, n, "rms_norm", weight=weight, eps=eps, variant=variant)


def add_rms_norm(x: Any, residual: Any, weight: Any = None, eps: float | None = None, *,
                 variant: str | None = None) -> tuple[Any, Any]:
    """``h = x + residual`` (in x's dtype) and ``rms_norm(h, weight, eps)``, reading each
    row of x and residual once: returns ``(rms_norm(h), h)``."""
    n = int(x.shape[-1]) if getattr(x, "dim", lambda: 0)() > 0 else 0
    if eps is None:
        eps = float(_torch().finfo(x.dtype).eps)
    return _run("add_rms_norm", x, n, "add_rms_norm", weight=weight, eps=eps, variant=variant, residual=residual)


def layer_norm(x: Any, normalized_shape: Sequence[int] | int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5, *, variant: str | None = None) -> Any:
    """``torch.nn.functional.layer_norm`` over the last dimension (biased variance)."""
    n = _normalized(x, normalized_shape, "layer_norm")
    return _run("layer_norm", x, n, "layer_norm", weight=weight, bias=bias, eps=eps, variant=variant)


def cross_entropy(input: Any, target: Any, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0, *, variant: str | None = None) -> Any:
    """``torch.nn.functional.cross_entropy`` of ``[M, C]`` logits (float32, bfloat16 or
    float16, the last dimension contiguous) and int64 class indices ``[M]``: one read of
    the logits, no softmax tensor. ``reduction``: ``"none"`` (the loss of each row,
    float32), ``"sum"``, ``"mean"`` (over the rows whose target is not ``ignore_index``; NaN
    when there are none, as torch). No class ``weight`` yet; a target outside [0, C) that
    is not ``ignore_index`` gives NaN (torch raises a device assert)."""
    torch = _torch()
    what = "cross_entropy"
    if weight is not None:
        raise ArgumentError(f"{what}: class weights are not supported yet (weight=None), got {type(weight).__name__}")
    if reduction not in ("none", "sum", "mean"):
        raise ArgumentError(f"{what}: reduction must be 'none', 'sum' or 'mean', got {reduction!r}")
    if not isinstance(label_smoothing, (int, float)) or not 0.0 <= float(label_smoothing) <= 1.0:
        raise ArgumentError(f"{what}: label_smoothing must be a float in [0, 1], got {label_smoothing!r}")
    if getattr(input, "dim", lambda: 0)() != 2:
        raise ArgumentError(f"{what}: input must be [M, C] logits (2-D) for now, got {getattr(input, 'shape', type(input).__name__)}")
    m, n = input.shape
    x2, stride = _rows_of(input, n, what)
    if (not isinstance(target, torch.Tensor) or target.dtype != torch.int64 or tuple(target.shape) != (m,)
            or target.device != input.device):
        raise ArgumentError(f"{what}: target must be int64 class indices of shape ({m},) on input's device, got "
                            f"{getattr(target, 'dtype', type(target).__name__)} {tuple(getattr(target, 'shape', ()))}")
    k = kernel_for("cross_entropy", m, n, _DTYPE_NAMES[str(input.dtype)], x_stride=None if stride == n else stride,
                   variant=variant, ignore_index=int(ignore_index),
                   label_smoothing=float(label_smoothing) if label_smoothing else None)
    loss = torch.empty(m, dtype=torch.float32, device=input.device)
    k(x2, target.contiguous(), loss)
    if reduction == "none":
        return loss.to(input.dtype)
    total = loss.sum()
    if reduction == "sum":
        return total.to(input.dtype)
    return (total / (target != ignore_index).sum()).to(input.dtype)


def softmax_backward(grad_output: Any, output: Any, *, variant: str | None = None) -> Any:
    """The gradient of :func:`softmax` (dim=-1) from its output and the output's gradient:
    ``output * (grad_output - sum(grad_output * output))`` per row, as torch's
    ``_softmax_backward_data``; one read of each, one write of the result."""
    return _backward("softmax_backward", grad_output, output, variant)


def log_softmax_backward(grad_output: Any, output: Any, *, variant: str | None = None) -> Any:
    """The gradient of :func:`log_softmax` (dim=-1): ``grad_output - exp(output) *
    sum(grad_output)`` per row, as torch's ``_log_softmax_backward_data``."""
    return _backward("log_softmax_backward", grad_output, output, variant)


def _backward(kind: str, grad_output: Any, output: Any, variant: str | None) -> Any:
    torch = _torch()
    n = int(output.shape[-1]) if getattr(output, "dim", lambda: 0)() > 0 else 0
    y2, stride = _rows_of(output, n, kind)
    if (not isinstance(grad_output, torch.Tensor) or grad_output.shape != output.shape
            or grad_output.dtype != output.dtype or grad_output.device != output.device):
        raise ArgumentError(f"{kind}: grad_output must be a tensor of output's shape, dtype and device, got "
                            f"{getattr(grad_output, 'shape', type(grad_output).__name__)}")
    if stride != n:
        raise ArgumentError(f"{kind}: output's rows must be contiguous (padded rows: not yet), got strides {tuple(output.stride())}")
    m = y2.shape[0]
    k = kernel_for(kind, m, n, _DTYPE_NAMES[str(output.dtype)], variant=variant)
    dx = torch.empty((m, n), dtype=output.dtype, device=output.device)
    k(y2, dx, grad_output.contiguous().view(m, n))
    return dx.view(output.shape)


def _last_dim(x: Any, dim: int, what: str) -> None:
    nd = getattr(x, "dim", lambda: 0)()
    if dim not in (-1, nd - 1):
        raise ArgumentError(f"{what}: only the last dimension is normalized for now (dim=-1), got dim={dim}")


def _normalized(x: Any, shape: Sequence[int] | int, what: str) -> int:
    s = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(s) != 1:
        raise ArgumentError(f"{what}: normalized_shape must be one dimension (the last) for now, got {s}")
    return int(s[0])


# endregion
