"""The reductions as torch custom operators, so that ``torch.compile(fullgraph=True)`` of
a function that calls ``bulkred.sum`` (or any reduction of bulkred_dialect.api) traces
it as one operator and runs it::

    torch.ops.bulkred.reduce(x, "sum", [0, 2], True, None, False)      # a new tensor
    torch.ops.bulkred.reduce_out(x, "max", None, False, None, True, y)  # into y
    torch.ops.bulkred.fused(x, "vector_norm", [1], False, None, 0, 2.0)  # the fused reductions
    torch.ops.bulkred.var_mean(x, [1], False, None, 1)                  # (var, mean)

``bulkred.sum(x, ...)`` calls them by itself while torch compiles; eager calls go
straight to the API (bulkred_dialect/api.py), whose short path they would only slow.
Each has a fake implementation (the API's :func:`~bulkred_dialect.api.plan`: the result's
shape and dtype, the same one-line errors), so tracing runs no kernel.

The API imports this module when torch is loaded (``import bulkred_dialect`` itself
imports neither torch nor this module); importing it registers the operators once.
"""

from __future__ import annotations

import torch

from bulkred_dialect import api

is_compiling = torch.compiler.is_compiling


def _dtype(t: torch.dtype) -> str:
    return str(t).removeprefix("torch.")


def _plan(x: torch.Tensor, kind: str, axis: list[int] | None, keepdims: bool, dtype: torch.dtype | None,
          ignore_nan: bool, out_dtype: torch.dtype | None) -> api.Plan:
    return api.plan(
        kind, tuple(x.shape), _dtype(x.dtype), None if axis is None else tuple(axis), keepdims,
        None if dtype is None else _dtype(dtype), ignore_nan, None if out_dtype is None else _dtype(out_dtype),
    )


@torch.library.custom_op("bulkred::reduce", mutates_args=())
def reduce(
    x: torch.Tensor, kind: str, axis: list[int] | None, keepdims: bool, dtype: torch.dtype | None, ignore_nan: bool
) -> torch.Tensor:
    """``kind`` of ``x`` over ``axis`` (None: every axis) into a new tensor (api.reduce)."""
    axis = None if axis is None else tuple(axis)
    return api.reduce(kind, x, axis=axis, dtype=dtype, keepdims=keepdims, ignore_nan=ignore_nan)


@reduce.register_fake
def _(x, kind, axis, keepdims, dtype, ignore_nan):
    p = _plan(x, kind, axis, keepdims, dtype, ignore_nan, None)
    return x.new_empty(p.result_shape, dtype=getattr(torch, p.dst))


@torch.library.custom_op("bulkred::reduce_out", mutates_args=("out",))
def reduce_out(
    x: torch.Tensor, kind: str, axis: list[int] | None, keepdims: bool, dtype: torch.dtype | None, ignore_nan: bool,
    out: torch.Tensor,
) -> None:
    """``kind`` of ``x`` over ``axis`` into ``out`` (api.reduce with ``out=``)."""
    api.reduce(kind, x, axis=None if axis is None else tuple(axis), dtype=dtype, keepdims=keepdims, ignore_nan=ignore_nan, out=out)


@reduce_out.register_fake
def _(x, kind, axis, keepdims, dtype, ignore_nan, out):
    p = _plan(x, kind, axis, keepdims, dtype, ignore_nan, out.dtype)
    if tuple(out.shape) != p.result_shape:
        raise api._error(kind, f"'out' has shape {tuple(out.shape)}, expected {p.result_shape} (keepdims={keepdims})")


def call(kind: str, x, axis, dtype, keepdims: bool, ignore_nan: bool, out, stream, explain: bool):
    """What ``bulkred.<kind>(x, ...)`` does while torch compiles: the custom operator."""
    if stream is not None or explain:
        raise api._error(kind, "stream= and explain=True are not taken inside torch.compile")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        dtype = getattr(torch, api._dtype_name(kind, dtype))
    if isinstance(axis, int):
        axis = [axis]
    elif axis is not None:
        axis = list(axis)
    if out is None:
        return torch.ops.bulkred.reduce(x, kind, axis, keepdims, dtype, ignore_nan)
    torch.ops.bulkred.reduce_out(x, kind, axis, keepdims, dtype, ignore_nan, out)
    return out


# region Fused reductions (issue 17): mean, var, std, argmax, argmin, vector_norm, logsumexp; var_mean


def _axis(fn: str, axis: list[int] | None):
    """The API's ``axis`` of an operator's list: argmax/argmin's one int, else a tuple."""
    if axis is None:
        return None
    return axis[0] if fn in ("argmax", "argmin") and len(axis) == 1 else tuple(axis)


def _plan_fused(x: torch.Tensor, fn: str, axis: list[int] | None, keepdims: bool, dtype: torch.dtype | None,
                correction: int, ord: float, out_dtype: torch.dtype | None) -> api.Plan:
    return api.plan_fused(
        fn, tuple(x.shape), _dtype(x.dtype), _axis(fn, axis), keepdims, None if dtype is None else _dtype(dtype),
        correction=correction, ord=ord, out_dtype=None if out_dtype is None else _dtype(out_dtype),
    )


@torch.library.custom_op("bulkred::fused", mutates_args=())
def fused(
    x: torch.Tensor, fn: str, axis: list[int] | None, keepdims: bool, dtype: torch.dtype | None, correction: int,
    ord: float,
) -> torch.Tensor:
    """The fused reduction ``fn`` (mean, var, std, argmax, argmin, vector_norm, logsumexp)
    of ``x`` into a new tensor (``bulkred.<fn>``)."""
    return api._fused_call(fn, x, _axis(fn, axis), keepdims, dtype, correction, ord, None, None, False)


@fused.register_fake
def _(x, fn, axis, keepdims, dtype, correction, ord):
    p = _plan_fused(x, fn, axis, keepdims, dtype, correction, ord, None)
    return x.new_empty(p.result_shape, dtype=getattr(torch, p.dst))


@torch.library.custom_op("bulkred::fused_out", mutates_args=("out",))
def fused_out(
    x: torch.Tensor, fn: str, axis: list[int] | None, keepdims: bool, dtype: torch.dtype | None, correction: int,
    ord: float, out: torch.Tensor,
) -> None:
    """``fn`` of ``x`` into ``out`` (``bulkred.<fn>(x, ..., out=out)``)."""
    api._fused_call(fn, x, _axis(fn, axis), keepdims, dtype, correction, ord, out, None, False)


@fused_out.register_fake
def _(x, fn, axis, keepdims, dtype, correction, ord, out):
    p = _plan_fused(x, fn, axis, keepdims, dtype, correction, ord, out.dtype)
    if tuple(out.shape) != p.result_shape:
        raise api._error(fn, f"'out' has shape {tuple(out.shape)}, expected {p.result_shape} (keepdims={keepdims})")


@torch.library.custom_op("bulkred::var_mean", mutates_args=())
def var_mean(
    x: torch.Tensor, axis: list[int] | None, keepdims: bool, dtype: torch.dtype | None, correction: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``bulkred.var_mean(x, ...)``: the variance and the mean, two new tensors."""
    v, m = api._fused_call("var_mean", x, _axis("var_mean", axis), keepdims, dtype, correction, 2, None, None, False)
    return v, m


@var_mean.register_fake
def _(x, axis, keepdims, dtype, correction):
    p = _plan_fused(x, "var_mean", axis, keepdims, dtype, correction, 2, None)
    return (x.new_empty(p.result_shape, dtype=getattr(torch, p.dst)), x.new_empty(p.result_shape, dtype=getattr(torch, p.dst)))


@torch.library.custom_op("bulkred::var_mean_out", mutates_args=("var_out", "mean_out"))
def var_mean_out(
    x: torch.Tensor, axis: list[int] | None, keepdims: bool, dtype: torch.dtype | None, correction: int,
    var_out: torch.Tensor, mean_out: torch.Tensor,
) -> None:
    """``bulkred.var_mean(x, ..., out=(var_out, mean_out))``."""
    api._fused_call("var_mean", x, _axis("var_mean", axis), keepdims, dtype, correction, 2, (var_out, mean_out), None, False)


@var_mean_out.register_fake
def _(x, axis, keepdims, dtype, correction, var_out, mean_out):
    if var_out.dtype != mean_out.dtype:
        raise api._error("var_mean", f"'out' has arrays of dtypes {_dtype(var_out.dtype)} and {_dtype(mean_out.dtype)}")
    p = _plan_fused(x, "var_mean", axis, keepdims, dtype, correction, 2, var_out.dtype)
    for o in (var_out, mean_out):
        if tuple(o.shape) != p.result_shape:
            raise api._error("var_mean", f"'out' has shape {tuple(o.shape)}, expected {p.result_shape} (keepdims={keepdims})")


def call_fused(fn: str, x, axis, keepdims: bool, dtype, correction, ord, out, stream, explain: bool):
    """What ``bulkred.<fn>(x, ...)`` of a fused reduction does while torch compiles: its operator."""
    if stream is not None or explain:
        raise api._error(fn, "stream= and explain=True are not taken inside torch.compile")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        dtype = getattr(torch, api._dtype_name(fn, dtype))
    if isinstance(axis, int):
        axis = [axis]
    elif axis is not None:
        axis = list(axis)
    if fn == "var_mean":
        if out is None:
            return torch.ops.bulkred.var_mean(x, axis, keepdims, dtype, correction)
        var_out, mean_out = api._fused_outs(fn, out)
        torch.ops.bulkred.var_mean_out(x, axis, keepdims, dtype, correction, var_out, mean_out)
        return out
    if out is None:
        return torch.ops.bulkred.fused(x, fn, axis, keepdims, dtype, correction, float(ord))
    torch.ops.bulkred.fused_out(x, fn, axis, keepdims, dtype, correction, float(ord), out)
    return out


# endregion

api._compiling = is_compiling  # from now on bulkred.sum(...) calls the operators while torch compiles
