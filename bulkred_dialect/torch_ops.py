"""The reductions as torch custom operators, so that ``torch.compile(fullgraph=True)`` of
a function that calls ``bulkred.sum`` (or any reduction of bulkred_dialect.api) traces
it as one operator and runs it::

    torch.ops.bulkred.reduce(x, "sum", [0, 2], True, None, False)      # a new tensor
    torch.ops.bulkred.reduce_out(x, "max", None, False, None, True, y)  # into y

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


api._compiling = is_compiling  # from now on bulkred.sum(...) calls the operators while torch compiles
