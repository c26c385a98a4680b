"""The kernels of the row normalizations: :func:`module` builds the tile-level module of
one ``bulkred.normalize_rows`` kernel with the builder (no torch needed; the CPU tests run
it on the interpreter), and :func:`kernel_for` compiles it once per setting (docs/rows.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from bulkred_dialect import builder as T
from bulkred_dialect.errors import ArgumentError

KINDS = ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy", "softmax_backward",
         "log_softmax_backward", "rms_norm_backward", "layer_norm_backward", "cross_entropy_backward")

_READS = {"rms_norm_backward": ("rstd",), "layer_norm_backward": ("mean", "rstd"), "cross_entropy_backward": ("lse",)}
"""The statistics each backward kind reads (always parameters of its kernel)."""

_ROW_DTYPES = ("float32", "bfloat16", "float16")  # the element types a row may hold
_STATS = ("row_max", "row_sum", "mean", "rstd", "lse")  # the statistic operands, in parameter order


def module(
    kind: str,
    m: int | None,
    n: int,
    dtype: str,
    *,
    x_stride: int | None = None,
    y_stride: int | None = None,
    weight: str | None = None,
    bias: str | None = None,
    eps: float | None = None,
    stats: Sequence[str] = (),
    variant: str | None = None,
    ignore_index: int | None = None,
    label_smoothing: float | None = None,
    name: str = "rows",
    target: str | None = None,
    dweight: str | None = None,
    dbias: str | None = None,
    reduction: str | None = None,
) -> ModuleOp:
    """The verified tile-level module of one ``bulkred.normalize_rows`` kernel ``@name``,
    built with the builder (:func:`bulkred_dialect.builder.normalize_rows`; each kind's
    formula: ``ops/tile/rows.py``).

    ``x`` and ``y`` are ``[m, n]`` ``dtype`` (row strides ``x_stride`` / ``y_stride``,
    None: contiguous). ``m=None``: a dynamic M (``memref<?xN>``, every ``[m]`` operand
    too): one kernel for every M; the launch passes M, read from x's shape, and chooses
    the grid from it. ``weight`` / ``bias`` / ``dweight`` / ``dbias``: the element type
    name of that ``[n]`` operand (None: absent). ``stats``: the statistic operands
    (``row_max``, ``row_sum``, ``mean``, ``rstd``, ``lse``, float32 ``[m]``), stored by a
    forward kind; a backward kind always has those it reads. ``target`` (``"sm_90a"``)
    is written on the module as :func:`~bulkred_dialect.builder.module` does.

    The kernel's parameters, in order (``k(*arrays)`` takes them so; ``?`` = present
    when asked for):

    ==========================  ============================================================
    kind                        parameters
    ==========================  ============================================================
    softmax, log_softmax        x, y, row_max?, row_sum?
    rms_norm                    x, y, weight?, rstd?
    layer_norm                  x, y, weight?, bias?, mean?, rstd?
    add_rms_norm                x, y, residual, residual_out (x + residual), weight?, rstd?
    cross_entropy               x, target (int64 [m]), loss (float32 [m]), lse?, reduced?
                                (``reduction``: ``[1]`` of ``dtype``, the loss rows'
                                ``"sum"`` or ``"mean"``, in the same kernel)
    softmax_backward,           x (the forward's output y), y (dx), grad (dy)
    log_softmax_backward
    rms_norm_backward           x (the forward's input; add_rms_norm: h), y (dx), grad (dy),
                                weight?, rstd, dweight?
    layer_norm_backward         x, y (dx), grad (dy), weight?, mean, rstd, dweight?, dbias?
    cross_entropy_backward      x (the logits), y (dx), target (int64 [m]), grad (float32
                                [m]: d loss / d loss[row]), lse
    ==========================  ============================================================

    ``dweight`` needs ``weight``; both column sums are float32 partial rows summed in a
    fixed order in the kernel (the runtime passes the workspace)."""
    if kind not in KINDS:
        raise ArgumentError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    for field, d in (("dtype", dtype), ("weight", weight), ("bias", bias), ("dweight", dweight), ("dbias", dbias)):
        if d is not None and d not in _ROW_DTYPES:
            raise ArgumentError(f"{field} must be one of {', '.join(_ROW_DTYPES)}, got {d!r}")
    for s in stats:
        if s not in _STATS:
            raise ArgumentError(f"stats must name {', '.join(_STATS)}, got {s!r}")

    def rows(k: T.Kernel, key: str, stride: int | None = None):
        return k.param(key, [m, n], dtype, strides=None if stride is None else [stride, 1])

    operands: dict[str, Any] = {}
    with T.kernel(name) as k:
        x = rows(k, "x", x_stride)
        y = None
        if kind == "cross_entropy":
            operands["target"] = k.param("target", [m], "int64")
            operands["loss"] = k.param("loss", [m], "float32")
        else:
            y = rows(k, "y", y_stride)
        if kind == "cross_entropy_backward":  # y: dx; grad: the loss's gradient per row
            operands["target"] = k.param("target", [m], "int64")
            operands["grad"] = k.param("grad", [m], "float32")
        elif kind.endswith("_backward"):  # grad: the gradient of the forward's output; y: dx
            operands["grad"] = rows(k, "grad")
        if kind == "add_rms_norm":
            for key in ("residual", "residual_out"):
                operands[key] = rows(k, key)
        for key, d in (("weight", weight), ("bias", bias)):
            if d is not None:
                operands[key] = k.param(key, [n], d)
        for s in _STATS:
            if s in stats or s in _READS.get(kind, ()):
                operands[s] = k.param(s, [m], "float32")
        for key, d in (("dweight", dweight), ("dbias", dbias)):
            if d is not None:
                operands[key] = k.param(key, [n], d)
        if reduction is not None:
            operands["reduced"] = k.param("reduced", [1], dtype)
        T.normalize_rows(kind, x, y, eps=eps, variant=variant or None,
                         ignore_index=None if ignore_index is None else int(ignore_index),
                         label_smoothing=label_smoothing, reduction=reduction, **operands)
    return k.module(target=target)


_KERNELS: dict[tuple, Any] = {}


def kernel_for(kind: str, m: int | None, n: int, dtype: str, *, x_stride: int | None = None, weight: str | None = None,
               bias: str | None = None, eps: float | None = None, stats: Sequence[str] = (),
               target: str | None = None, variant: str | None = None, ignore_index: int | None = None,
               label_smoothing: float | None = None, dweight: str | None = None, dbias: str | None = None,
               reduction: str | None = None):
    """The compiled kernel (``runtime.Kernel``) of these settings, compiled on first use
    (``m=None``: the one kernel of every M, called on arrays of any number of rows)."""
    key = (kind, m, n, dtype, x_stride, weight, bias, eps, tuple(stats), target, variant, ignore_index, label_smoothing,
           dweight, dbias, reduction)
    k = _KERNELS.get(key)
    if k is None:
        from bulkred_dialect.backend_ptx.runtime import compile_tile_module

        built = module(kind, m, n, dtype, x_stride=x_stride, weight=weight, bias=bias, eps=eps, stats=stats,
                       variant=variant, ignore_index=ignore_index, label_smoothing=label_smoothing, dweight=dweight,
                       dbias=dbias, reduction=reduction)
        k = compile_tile_module(built, target).kernel("rows")
        _KERNELS[key] = k
    return k
