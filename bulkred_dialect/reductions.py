"""The public reductions, one function per row of the table (``functions.py``), each with
its real signature and docs (``inspect.signature(bulkred.vector_norm)``, ``help()``)::

    import bulkred_dialect as bulkred
    y = bulkred.sum(x)                        # x a torch tensor on the GPU: y a 0-d torch tensor
    bulkred.sum(x, axis=(0, 2), keepdims=True)
    bulkred.max(x, axis=-1, out=y)            # into an existing array, returned
    bulkred.var(x, axis=1, correction=1)      # torch.var(x, dim=1)
    print(bulkred.sum(x, explain=True))       # the dispatch table, returned as text (nothing runs)

Every function runs the one call path of ``api.py``. A torch tensor that requires grad
(with grad enabled), and any call while ``torch.compile`` traces, goes through the
function's torch operator (``torch.ops.bulkred.<name>``, registered by ``torch_ops.py``
from the same table, with its gradient formula): the result takes part in autograd.

The per-call fast path: each function keeps the compiled kernel's short path of its last
call that made a new result with default options (``bulkred.sum(x)`` again on a tensor
like the last one: a few attribute reads and the launch), and of its last ``out=`` call.
"""

from __future__ import annotations

import builtins
import inspect
import sys
from typing import Any

from bulkred_dialect import api
from bulkred_dialect.functions import ROWS, Function, function


def _never() -> bool:
    """Not compiling, until torch is loaded: then the operators are registered (torch came
    after bulkred) and ``torch.compiler.is_compiling`` answers from now on."""
    if "torch" in sys.modules:
        _torch_ops()
        return _compiling()
    return False


_compiling = _never
"""``torch.compiler.is_compiling`` once the torch operators are registered."""


def _torch_ops() -> Any:
    """Register the torch operators (once): the first torch tensor a function sees, or
    ``import bulkred_dialect`` with torch loaded."""
    global _compiling
    from bulkred_dialect import torch_ops

    _compiling = sys.modules["torch"].compiler.is_compiling
    return torch_ops


def _op_args(row: Function, axis: Any, options: dict[str, Any]) -> tuple:
    """The torch operator's arguments after ``x``: axis as a list, keepdims is added by
    the caller, the options in the row's order (dtype as a torch dtype)."""
    torch = sys.modules["torch"]
    if axis is None:
        axes = None
    elif isinstance(axis, tuple | list):
        axes = [int(a) if not isinstance(a, bool) else a for a in axis]
    else:
        axes = [axis]
    opts = []
    for o in row.options:
        v = options.get(o.name, o.default)
        if o.name == "dtype" and v is not None and not isinstance(v, torch.dtype):
            v = api.torch_dtype(api.dtype_name(row.name, v))
        opts.append(v)
    return axes, opts


def _torch_route(
    row: Function, x: Any, axis: Any, keepdims: Any, options: dict[str, Any], out: Any, stream: Any, explain: Any = False
) -> Any:
    """The call through the function's torch operator (autograd, torch.compile)."""
    if stream is not None:
        raise api._error(
            row.name, "'stream' is not taken with autograd (x requires grad) or inside torch.compile: "
            "use `with torch.cuda.stream(s):` around the call",
        )
    torch = sys.modules["torch"]
    # the arguments are checked as on any call, before the operator sees them (while
    # torch.compile traces, its fake implementation checks them)
    outs = api._outs(row, out)
    if not _compiling():
        api.check_call(row, x, axis, keepdims, {**row.defaults(), **options}, outs, explain)
        options = {o.name: o.check(options[o.name]) for o in row.options if o.name in options}  # as the schema takes them
        keepdims = bool(keepdims)
    if outs and x.requires_grad and torch.is_grad_enabled():
        raise api._error(row.name, "'out' does not take part in autograd (as in torch): x requires grad; "
                         "call without out=, or under torch.no_grad()")
    axes, opts = _op_args(row, axis, options)
    if not isinstance(keepdims, bool):
        raise api._error(row.name, f"'keepdims' must be a bool, got {keepdims!r:.40}")
    ops = torch.ops.bulkred
    if not outs:
        r = getattr(ops, row.name)(x, axes, keepdims, *opts)
        return row.result_type(*r) if row.results > 1 else r
    getattr(ops, row.name + "_out")(x, axes, keepdims, *opts, *outs)
    return out


def _make(row: Function) -> Any:
    """The public function of ``row``."""
    defaults = row.defaults()
    new_memo: list[Any] = [None]  # (axis, short path making the result) of the last default call
    out_memo: list[Any] = [None]  # (the key's parts, kernel call) of the last out= call
    name = row.name
    differentiable = row.grad is not None

    def fn(x: Any, /, *, axis: Any = None, keepdims: Any = False, out: Any = None, stream: Any = None,
           explain: Any = False, **options: Any) -> Any:
        if _compiling():
            return _torch_route(row, x, axis, keepdims, options, out, stream) if not explain else \
                api.call(row, x, axis, keepdims, {**defaults, **options}, out, stream, explain)
        if stream is None and keepdims is False and explain is False:
            if out is None:
                hit = new_memo[0]
                if hit is not None and not options and hit[0] == axis and type(axis) is hit[2]:
                    r = hit[1]((x,))
                    if r is not None:
                        return r
            else:
                hit = out_memo[0]
                if hit is not None and type(x) is hit[0] and hit[1] == axis and type(axis) is hit[2] \
                        and hit[3] == options and not x.requires_grad:
                    try:
                        if row.results == 1:
                            if out.shape == hit[5]:
                                hit[4](x, out)
                                return out
                        elif type(out) is tuple and len(out) == 2 and out[0] is not out[1] \
                                and out[0].shape == hit[5] and out[1].shape == hit[5]:
                            hit[4](x, *out)
                            return out
                    except (api.SignatureError, AttributeError):
                        pass
        lib = type(x).__module__
        if lib == "torch":
            if _compiling is _never:
                _torch_ops()
            if differentiable and x.requires_grad and sys.modules["torch"].is_grad_enabled() and not explain:
                return _torch_route(row, x, axis, keepdims, options, out, stream, explain)
        opts = {**defaults, **options} if options else defaults
        r = api.call(row, x, axis, keepdims, opts, out, stream, explain)
        if lib == "torch" and stream is None and keepdims is False and explain is False and _plain(axis):
            _remember(row, x, axis, opts, out, options)
        return r

    def _remember(row: Function, x: Any, axis: Any, opts: dict, out: Any, options: dict) -> None:
        """Keep the kernel's short path of this call (it launched and was recorded)."""
        outs = api._outs(row, out)
        b = api._CACHE.get(api._key(row, x, "torch", axis, False, tuple(api._keyed(v) for v in opts.values()), outs))
        fast = None if b is None or b.kernel is None else b.kernel._fast
        if fast is None:
            return
        p = b.plan
        if out is None and not options:
            make = fast.call_new_last2 if p.aux is not None else fast.call_new_last
            if make is None:
                return
            if p.aux is None and p.result_shape != p.kernel_shape:
                shaped = fast.new_last_as(p.result_shape)
                new_memo[0] = (axis, shaped, type(axis))
            elif p.result_shape == p.kernel_shape and p.aux is None:
                new_memo[0] = (axis, make, type(axis))
            else:
                new_memo[0] = (axis, _pair(p, make), type(axis))
        elif out is not None and not (p.aux is not None and p.row.aux_first):
            call = b.kernel._call if p.result_shape == p.kernel_shape else fast.call_as((p.result_shape,) * p.row.results)
            out_memo[0] = (type(x), axis, type(axis), dict(options), call, p.result_shape)

    fn._memos = (new_memo, out_memo)  # type: ignore[attr-defined] - forget() clears them
    sig = _signature(row)
    fn.__signature__ = sig  # type: ignore[attr-defined]
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "bulkred_dialect"
    fn.__doc__ = _doc(row, sig)
    return fn


def _pair(p: api.Plan, make: Any) -> Any:
    """A short path that gives the pair (named tuple, caller's shape) of a two-result call."""
    shape, reshape, kind = p.result_shape, p.result_shape != p.kernel_shape, p.row.result_type
    order = p.row.aux_first

    def call(lead: tuple) -> Any:
        r = make(lead)
        if r is None:
            return None
        a, b = r
        if reshape:
            a, b = a.view(shape), b.view(shape)
        return kind(b, a) if order else kind(a, b)

    return call


def _plain(axis: Any) -> bool:
    t = type(axis)
    return axis is None or t is int or (t is tuple and builtins.all(type(a) is int for a in axis))


def _signature(row: Function) -> inspect.Signature:
    P = inspect.Parameter
    params = [P("x", P.POSITIONAL_ONLY)]
    def opts(place: str) -> list[inspect.Parameter]:
        return [P(o.name, P.KEYWORD_ONLY, default=o.default) for o in row.options if o.place == place]

    params += [*opts("first"), P("axis", P.KEYWORD_ONLY, default=None), *opts("before")]
    params += [P("keepdims", P.KEYWORD_ONLY, default=False), *opts("after")]
    params += [P("out", P.KEYWORD_ONLY, default=None), P("stream", P.KEYWORD_ONLY, default=None),
               P("explain", P.KEYWORD_ONLY, default=False)]
    return inspect.Signature(params)


def _doc(row: Function, sig: inspect.Signature) -> str:
    grad = (
        "Differentiable: a torch ``x`` that requires grad gives a result in the autograd graph."
        if row.grad else "Not differentiable: the result never requires grad."
    )
    results = f"Returns the named pair ({', '.join(row.result_names)}). " if row.results > 1 else ""
    return (
        f"{row.summary}.\n\n{row.doc}\n\n{results}As ``{row.torch}``. {grad}\n\n"
        "``axis``: an int, a tuple of ints (negatives count from the end) or None (every axis). ``keepdims``: keep "
        "the reduced axes as 1s. ``out``: the result's array (a pair for two results), returned. ``stream``: the "
        "stream to launch on (default: torch's or cupy's current one). ``explain``: return the dispatch table as "
        "text (nothing runs). Device arrays: no copy, no synchronize; numpy arrays are copied in and out. "
        "docs/from_torch.md has every function."
    )


PUBLIC: dict[str, Any] = {row.name: _make(row) for row in ROWS}
"""Function name -> the public function."""

globals().update(PUBLIC)  # bulkred_dialect.reductions.sum ...: builtins.all etc. in this module from here on


def forget() -> None:
    """Drop every recorded call: the functions' short paths and the API's in-memory cache
    (the disk cache stays). For tests and for a program that changes devices."""
    for f in PUBLIC.values():
        for memo in f._memos:
            memo[0] = None
    api._CACHE.clear()


def reduce(
    kind: str, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False, out: Any = None,
    stream: Any = None, explain: bool = False, ignore_nan: bool = False,
) -> Any:
    """``kind`` (sum, prod, max, min, any, all, and, or, xor) of ``x`` over ``axis``: the
    function of that kind (``bulkred.sum`` ...) with the options it takes among ``dtype``
    and ``ignore_nan``."""
    row = function(kind) if isinstance(kind, str) else None
    if row is None or row.name not in ("sum", "prod", "max", "min", "any", "all", "and_", "or_", "xor"):
        raise api.ReductionError(f"unknown reduction kind {kind!r:.40} (valid: sum, prod, max, min, any, all, and, or, xor)")
    options: dict[str, Any] = {}
    if dtype is not None:
        if "dtype" not in row.option_names:
            raise api._error(row.name, f"'dtype' is not taken by {row.name}")
        options["dtype"] = dtype
    if "ignore_nan" in row.option_names:
        options["ignore_nan"] = ignore_nan
    elif not isinstance(ignore_nan, bool):
        raise api._error(row.name, f"'ignore_nan' must be a bool, got {ignore_nan!r:.40}")
    return PUBLIC[row.name](x, axis=axis, keepdims=keepdims, out=out, stream=stream, explain=explain, **options)


__all__ = [*PUBLIC, "reduce"]

if "torch" in sys.modules:  # torch.compile must see the operators before it traces a call
    _torch_ops()
