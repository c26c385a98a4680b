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

The way to the launch, read as a newcomer would (docs/runtime.md, "One call, step by
step"): ``bulkred.sum(x)`` makes the call's key (``api.call_key``: x's type, shape,
dtype, device, layout, axis, keepdims, the options and out, each with its type where
that matters), looks it up in ``api.CALLS`` (one dict look-up for every option) and runs
the launcher found there (the launch layer's ``Kernel.bind``: the pointers, torch's
current stream, the launch). A key not seen goes through ``api.call``: every check, the
plan, the kernel (``api.KERNELS``, the compile driver on a miss), ``Kernel.bind``, the
launch, and the call is kept under its key.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from bulkred_dialect import api
from bulkred_dialect.functions import ROWS, Function, OptionError, function, is_bool, torch_spelling


def _never() -> bool:
    """Not compiling, until torch is loaded: then the operators are registered (torch came
    after bulkred) and ``torch.compiler.is_compiling`` answers from now on."""
    if "torch" in sys.modules:
        _torch_ops()
        return _compiling()
    return False


_compiling = _never
"""``torch.compiler.is_compiling`` once the torch operators are registered."""
_grad_enabled: Any = None
"""``torch.is_grad_enabled`` once the torch operators are registered."""
_tensor: Any = None
"""``torch.Tensor``, once the torch operators are registered: a call on one makes its key
in the public function's own body."""
_torch: Any = None
"""torch, once the torch operators are registered: the route under torch.compile reads it
here (dynamo's trace of ``sys.modules[...]`` walks the whole dict, which an import on the
way may change: an InternalTorchDynamoError)."""


def _torch_ops() -> Any:
    """Register the torch operators (once): the first torch tensor a function sees, or
    ``import bulkred_dialect`` with torch loaded."""
    global _compiling, _grad_enabled, _torch, _tensor
    from bulkred_dialect import torch_ops

    torch = _torch = sys.modules["torch"]
    _compiling, _grad_enabled, _tensor = torch.compiler.is_compiling, torch.is_grad_enabled, torch.Tensor
    return torch_ops


def _error(row: Function, message: str) -> api.ReductionError:
    return api.ReductionError(f"bulkred.{row.name}: {message}")


def _op_args(row: Function, axis: Any, options: dict[str, Any]) -> tuple:
    """The torch operator's arguments after ``x``: axis as a list, keepdims is added by
    the caller, the options in the row's order (dtype as a torch dtype)."""
    torch = _torch if _torch is not None else sys.modules["torch"]
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
    row: Function, x: Any, axis: Any, keepdims: Any, options: dict[str, Any], out: Any, stream: Any, explain: Any = False,
    key: tuple | None = None,
) -> Any:
    """The call through the function's torch operator (autograd, torch.compile). Checked
    and planned once per key: the next call with the key runs the operator at once."""
    if stream is not None:
        raise _error(row, "'stream' is not taken with autograd (x requires grad) or inside torch.compile: "
                     "use `with torch.cuda.stream(s):` around the call")
    torch = _torch if _torch is not None else sys.modules["torch"]  # (set: the operators are registered)
    # the arguments are checked as on any call, before the operator sees them (while
    # torch.compile traces, its fake implementation checks them)
    p = None
    if not _compiling():
        p = api.check_call(row, x, axis, keepdims, options, out, explain)
        options = {o.name: o.check(options[o.name]) for o in row.options if o.name in options}  # as the schema takes them
        keepdims = bool(keepdims)
    if out is not None and x.requires_grad and torch.is_grad_enabled():
        raise _error(row, "'out' does not take part in autograd (as in torch): x requires grad; "
                     "call without out=, or under torch.no_grad()")
    axes, opts = _op_args(row, axis, options)
    if not isinstance(keepdims, bool):
        raise _error(row, f"'keepdims' must be a bool, got {keepdims!r:.40}")
    ops = torch.ops.bulkred
    if out is None:
        # eager: the autograd Function of this call's arguments (torch_ops.eager), without
        # the operator's dispatch; while torch.compile traces, the operator
        pair = row.result_type
        if p is None:
            op = getattr(ops, row.name).default

            def route(x: Any, out: Any) -> Any:
                r = op(x, axes, keepdims, *opts)
                return pair(*r) if pair is not None else r
        elif pair is None:
            route = _route(_torch_ops().eager(row.name, axes, keepdims, tuple(opts)))
        else:
            apply = _torch_ops().eager(row.name, axes, keepdims, tuple(opts))

            def route(x: Any, out: Any) -> Any:
                return pair(*apply(x))

        if p is not None:
            api.remember(key, route, p, None)
        return route(x, None)
    getattr(ops, row.name + "_out")(x, axes, keepdims, *opts, *(out if row.results > 1 else (out,)))
    return out


def _route(apply: Any) -> Any:
    """The launcher (``launcher(x, out)``) of a call through ``apply(x)``."""

    def route(x: Any, out: Any) -> Any:
        return apply(x)

    return route


def _make(row: Function) -> Any:
    """The public function of ``row``: its call's key, one look-up in ``api.CALLS``, the
    launcher found there; else :func:`api.call` (every check, the plan, the kernel, the
    launch), which keeps the call under its key."""
    name = row.name
    differentiable = row.grad is not None
    calls, call_key, call, out_key = api.CALLS, api.call_key, api.call, api.out_key

    def spelled(axis: Any, keepdims: Any, options: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
        """The arguments with torch's spelling (``dim=``, ``keepdim=``) taken apart."""
        if options and ("dim" in options or "keepdim" in options):  # (functions.torch_spelling)
            try:
                return torch_spelling(axis, keepdims, options)
            except OptionError as e:
                raise _error(row, str(e)) from None
        return axis, keepdims, options

    def fn(x: Any, /, *, axis: Any = None, keepdims: Any = False, out: Any = None, stream: Any = None,
           explain: Any = False, **options: Any) -> Any:
        if _compiling():
            axis, keepdims, options = spelled(axis, keepdims, options)
            return _torch_route(row, x, axis, keepdims, options, out, stream) if not explain else \
                call(row, x, axis, keepdims, options, out, stream, explain)
        # the key of the arguments as given (torch's spelling among the options: a call spelled
        # so is its own key, planned from the arguments taken apart after a miss)
        key = None
        if stream is None and explain is False:
            if x.__class__ is _tensor:
                # a torch tensor's key written out here (api.call_key's fields, in its
                # order; tests/test_api.py checks that the two agree): no frame for it
                try:
                    key = (
                        name, _tensor, x.shape, x.dtype, x.get_device(), x.requires_grad and _grad_enabled(),
                        x.is_contiguous() or x.stride(), axis if axis.__class__ is not tuple else (*axis, *map(type, axis)),
                        axis.__class__, keepdims, keepdims.__class__, None if out is None else out_key(out),
                    )
                except AttributeError:  # an out that is not a tensor (a numpy array, 42): the checks say what
                    key = None
                if options and key is not None:
                    for k, v in options.items():
                        key += (k, v, v.__class__)
            else:
                key = call_key(name, x, axis, keepdims, options, out)
            try:
                hit = calls.get(key)
            except TypeError:  # an unhashable argument (a list): every check says what it is
                key = hit = None
            if hit is not None:
                r = hit[0](x, out)
                if r is not None:
                    return r
        axis, keepdims, options = spelled(axis, keepdims, options)
        if type(x).__module__.startswith("torch"):
            if _compiling is _never:
                _torch_ops()
            if differentiable and not explain and x.requires_grad and _grad_enabled():
                return _torch_route(row, x, axis, keepdims, options, out, stream, explain, key)
        return call(row, x, axis, keepdims, options, out, stream, explain, key)

    sig = _signature(row)
    fn.__signature__ = sig  # type: ignore[attr-defined]
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "bulkred_dialect"
    fn.__doc__ = _doc(row, sig)
    return fn


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
        "the reduced axes as 1s (torch's spellings ``dim`` and ``keepdim`` are taken too). ``out``: the result's "
        "array (a pair for two results), returned. ``stream``: the "
        "stream to launch on (default: torch's or cupy's current one). ``explain``: return the dispatch table as "
        "text (nothing runs). Device arrays: no copy, no synchronize; numpy arrays are copied in and out. "
        "docs/from_torch.md has every function."
    )


PUBLIC: dict[str, Any] = {row.name: _make(row) for row in ROWS}
"""Function name -> the public function."""

globals().update(PUBLIC)  # bulkred_dialect.reductions.sum ...: builtins.all etc. in this module from here on


def forget() -> None:
    """Drop every call kept and every kernel in memory (the disk cache stays): for tests
    and for a program that changes devices."""
    api.forget()


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
            raise _error(row, f"'dtype' is not taken by {row.name}")
        options["dtype"] = dtype
    if "ignore_nan" in row.option_names:
        options["ignore_nan"] = ignore_nan
    elif not is_bool(ignore_nan):  # np.bool_ as bool, as the rows' own option checks take it
        raise _error(row, f"'ignore_nan' must be a bool, got {ignore_nan!r:.40}")
    return PUBLIC[row.name](x, axis=axis, keepdims=keepdims, out=out, stream=stream, explain=explain, **options)


__all__ = [*PUBLIC, "reduce"]

if "torch" in sys.modules:  # torch.compile must see the operators before it traces a call
    _torch_ops()
