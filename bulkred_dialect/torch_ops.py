"""The reductions as torch custom operators, generated from the function table
(``functions.py``): for each row ``bulkred::<name>`` (a new result) and
``bulkred::<name>_out`` (into ``out``), with the row's schema, a fake implementation (the
API's :func:`~bulkred_dialect.api.plan`: the result's shape and dtype, the same one-line
errors, no kernel) and, for a differentiable row, its gradient formula
(``grads.py``)::

    torch.ops.bulkred.sum(x, [0, 2], True, None)               # (x, axis, keepdims, *options)
    torch.ops.bulkred.vector_norm(x, [1], False, 2.0, None)    # ord, dtype
    torch.ops.bulkred.var_mean(x, None, False, 1, None)        # (var, mean)
    torch.ops.bulkred.max_out(x, None, False, False, y)        # ignore_nan, then out

The public functions (``reductions.py``) call these while ``torch.compile`` traces and
for a tensor that requires grad; eager calls without autograd go straight to the API,
whose short path an operator call would only slow. Importing this module registers the
operators once; ``import bulkred_dialect`` does it when torch is loaded, else the first
call on a torch tensor does.

The list functions' operators (``bulkred::foreach_norm`` and the others: a list of
tensors, the row's options, written in place where the row says so) are registered the
same way by :func:`register_list`, which ``foreach.py`` calls with their eager
implementations when it is imported; the row normalizations' (``bulkred::softmax`` ...,
functions.py's ``NORM_ROWS``) by :func:`register_row`, with the gradient rules of
``row_grads.py``, and their backward kernels by :func:`register_kernel_op`, both called by
``row_functions.py``.
"""

from __future__ import annotations

import types
from typing import Any

import torch

from bulkred_dialect import api
from bulkred_dialect.functions import ROWS, Function, ListFunction, RowFunction
from bulkred_dialect.grads import RULES
from bulkred_dialect.row_grads import RULES as ROW_RULES


def _axis(row: Function, axis: list[int] | None) -> Any:
    """The API's ``axis`` of an operator's list: one int for a one-axis row, else a tuple."""
    if axis is None:
        return None
    return axis[0] if row.one_axis and len(axis) == 1 else tuple(axis)


def _options(row: Function, values: tuple) -> dict[str, Any]:
    return dict(zip(row.option_names, values))


def _plan(row: Function, x: torch.Tensor, axis: list[int] | None, keepdims: bool, options: dict[str, Any],
          outs: tuple = ()) -> api.Plan:
    out_dtype = tuple(api.dtype_name(row.name, o.dtype) for o in outs) or None
    dtype = options.get("dtype")
    rest = {k: v for k, v in options.items() if k != "dtype"}
    return api.plan(row.name, tuple(x.shape), api.dtype_name(row.name, x.dtype), _axis(row, axis), keepdims, dtype,
                    out_dtype=out_dtype, library="torch", **rest)


def _register(row: Function) -> None:
    n_opts = len(row.options)

    def impl(x: torch.Tensor, axis: list[int] | None, keepdims: bool, *opts: Any) -> Any:
        r = api.call_keyed(row, x, _axis(row, axis), keepdims, _options(row, opts), None)
        return tuple(r) if row.results > 1 else r

    def fake(x: torch.Tensor, axis: list[int] | None, keepdims: bool, *opts: Any) -> Any:
        p = _plan(row, x, axis, keepdims, _options(row, opts))
        made = tuple(x.new_empty(p.result_shape, dtype=api.torch_dtype(d)) for d in p.outputs)
        return made if row.results > 1 else made[0]

    op = torch.library.custom_op(f"bulkred::{row.name}", impl, mutates_args=(), schema=row.schema())
    op.register_fake(fake)

    def impl_out(x: torch.Tensor, axis: list[int] | None, keepdims: bool, *rest: Any) -> None:
        opts, outs = rest[:n_opts], rest[n_opts:]
        api.call_keyed(row, x, _axis(row, axis), keepdims, _options(row, opts), outs if row.results > 1 else outs[0])

    def fake_out(x: torch.Tensor, axis: list[int] | None, keepdims: bool, *rest: Any) -> None:
        opts, outs = rest[:n_opts], rest[n_opts:]
        p = _plan(row, x, axis, keepdims, _options(row, opts), outs)
        for o in outs:
            if tuple(o.shape) != p.result_shape:
                raise api.ReductionError(f"bulkred.{row.name}: 'out' has shape {tuple(o.shape)}, expected {p.result_shape} (keepdims={keepdims})")

    op_out = torch.library.custom_op(
        f"bulkred::{row.name}_out", impl_out, mutates_args=tuple(f"out{i}" for i in range(row.results)),
        schema=row.out_schema(),
    )
    op_out.register_fake(fake_out)
    if row.grad is not None:
        assert row.grad in RULES, f"{row.name}: no gradient rule {row.grad!r} in grads.py"

        def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
            x, axis, keepdims, *opts = inputs
            results = tuple(output) if row.results > 1 else (output,)
            ctx.save_for_backward(x, *results)
            dims = tuple(sorted(a % max(x.dim(), 1) for a in axis)) if axis else tuple(range(x.dim()))  # dim=(): every axis (torch)
            ctx.meta = (dims, keepdims, _options(row, tuple(opts)))

        def backward(ctx: Any, *grads: Any) -> tuple:
            x, *results = ctx.saved_tensors
            dims, keepdims, options = ctx.meta
            gx = RULES[row.grad](x, tuple(results), grads, dims, keepdims, options)
            return (gx, None, None, *([None] * n_opts))

        op.register_autograd(backward, setup_context=setup_context)
        BOUND[row.name] = _bound_autograd(row)


PYTHON_APPLY = isinstance(getattr(torch.autograd.Function.apply, "__func__", None), types.FunctionType)
"""Whether this torch's ``torch.autograd.Function.apply`` is a Python classmethod around
the C++ one (torch before the wrapper moved into C++, pytorch#190694; 2.11 is one): then
:func:`applier` does the wrapper's work without its frames."""


def applier(cls: type, n: int | None = None) -> Any:
    """``cls.apply`` for a ``torch.autograd.Function`` of this module (tensors its only
    arguments, no ``setup_context``). Where :data:`PYTHON_APPLY`, the same call without
    the Python wrapper's frames (its nested function made per call, its checks of
    ``setup_context`` and the tuple of arguments rebuilt): with no functorch transform
    active, each tensor unwrapped if its functorch wrapper is dead and the C++ ``apply``
    called at once, as the wrapper does; under a transform, the wrapper itself. ``n``: how
    many tensors (default: the forward's parameters after ctx). The autograd engine's
    call of the backward (the node class's ``apply``, Python in torch) is ``cls.backward``
    at once: the class defines no ``vjp`` and no boxed call, which torch's checks per
    call."""
    node = getattr(cls, "_backward_cls", None)  # the backward's node class FunctionMeta made for cls
    if node is not None and isinstance(getattr(node, "apply", None), types.FunctionType):
        # torch's node apply (Python: which of backward and vjp the class defines, a boxed call) is
        # this class's backward, called at once
        backward = cls.backward

        def node_apply(self: Any, *grads: Any) -> Any:
            return backward(self, *grads)

        node.apply = node_apply
    unwrap = getattr(torch._C._functorch, "unwrap_if_dead", None)
    if not PYTHON_APPLY or unwrap is None:
        return cls.apply
    raw, slow = super(torch.autograd.Function, cls).apply, cls.apply  # type: ignore[misc]
    active = torch._C._are_functorch_transforms_active
    if n is None:
        n = cls.forward.__code__.co_argcount - 1  # (ctx first)

    if n == 1:
        def apply(x: Any) -> Any:
            return slow(x) if active() else raw(unwrap(x))
    elif n == 2:
        def apply(x: Any, t: Any) -> Any:
            return slow(x, t) if active() else raw(unwrap(x), unwrap(t))
    else:
        def apply(*tensors: Any) -> Any:
            return slow(*tensors) if active() else raw(*map(unwrap, tensors))

    return apply


def _bound_autograd(row: Function) -> Any:
    """``make(axis, keepdims, opts) -> apply(x)``: the eager autograd call of one call's
    axis, keepdims and options (see :func:`eager`)."""
    grad, n = row.grad, row.results
    # var and std save the mean for their backward: the forward runs var_mean's (std_mean's)
    # kernel, the same reduction with the mean as its aux output, and the backward reads the
    # mean instead of reducing x again
    paired = {"var": "var_mean", "std": "std_mean"}.get(row.grad)
    mean_row = next((r for r in ROWS if r.name == paired), None) if paired else None

    def make(axis: list[int] | None, keepdims: bool, opts: tuple) -> Any:
        options = _options(row, opts)
        api_axis = _axis(row, axis)
        dims_of: dict[int, tuple[int, ...]] = {}
        target = mean_row if mean_row is not None else row
        launcher = None  # the key's launcher, kept from the first call

        def first(x: torch.Tensor) -> Any:
            """The call's result through ``api.call_keyed``: before the launcher is kept,
            or where it refuses (an address off the vector loads' alignment). The launcher
            of its key is the same for every x this Function is made for (the reductions'
            key of the route fixes x's shape, dtype, device and layout, and grad is off in
            a forward), kept after the first call."""
            nonlocal launcher
            r = api.call_keyed(target, x, api_axis, keepdims, options, None)
            if launcher is None:
                hit = api.CALLS.get(api.call_key(target.name, x, api_axis, keepdims, options, None))
                if hit is not None and hit[0] is not api.no_launcher:
                    launcher = hit[0]
            return r

        # the forward: the kept launcher at once (no frame for the call), first() where there is none or it refuses
        if mean_row is not None:
            def forward(ctx: Any, x: torch.Tensor) -> Any:
                r = None if launcher is None else launcher(x, None)
                if r is None:
                    r = first(x)
                ctx.save_for_backward(x, r[0], r[1])  # (the result, the mean)
                return r[0]
        elif n == 1:
            def forward(ctx: Any, x: torch.Tensor) -> Any:
                r = None if launcher is None else launcher(x, None)
                if r is None:
                    r = first(x)
                ctx.save_for_backward(x, r)
                return r
        else:
            def forward(ctx: Any, x: torch.Tensor) -> Any:
                r = None if launcher is None else launcher(x, None)
                r = tuple(first(x) if r is None else r)
                ctx.save_for_backward(x, *r)
                return r

        def backward(ctx: Any, *grads: Any) -> Any:
            saved = ctx.saved_tensors  # (x, *results): the results a slice, no list
            x = saved[0]
            nd = x.dim()
            dims = dims_of.get(nd)
            if dims is None:  # dim=(): every axis (torch)
                dims = dims_of[nd] = tuple(sorted(a % max(nd, 1) for a in axis)) if axis else tuple(range(nd))
            return RULES[grad](x, saved[1:], grads, dims, keepdims, options)  # (read per call: a test patches it)

        return applier(type(f"{row.name}_autograd", (torch.autograd.Function,), {
            "forward": staticmethod(forward), "backward": staticmethod(backward),
        }))

    return make


BOUND: dict[str, Any] = {}
"""Differentiable row name -> ``make(axis, keepdims, options) -> apply(x)`` (:func:`eager`)."""


def eager(name: str, axis: list[int] | None, keepdims: bool, opts: tuple) -> Any:
    """The eager autograd call of ``bulkred.<name>`` for one call's operator arguments
    after x (``axis`` as a list, ``keepdims``, the options in the row's order):
    ``apply(x)`` gives the operator's result in the autograd graph. A
    ``torch.autograd.Function`` made for these arguments, without the operator's
    dispatch: its forward takes x alone (the arguments are its own), runs the call's
    launcher and saves x and the results (var and std: their mean too, from the
    var_mean kernel); its backward is the row's rule (grads.py), the same as the
    operator's ``register_autograd``. Made once per call key by ``reductions.py``."""
    return BOUND[name](axis, keepdims, opts)


for _row in ROWS:
    _register(_row)


_LIST_OPS: dict[str, Any] = {}


def register_list(row: ListFunction, eager: Any) -> None:
    """The torch operator ``bulkred::<row.name>`` of a list function (``functions.py``'s
    list rows): ``eager(tensors, *options)`` runs it (``foreach.py``), a fake one gives
    its result's shape (float32: ``[len(tensors)]`` per tensor, else 0-d) for
    torch.compile, the arguments the row writes are the schema's mutable ones. None of
    them is differentiable (the row has no gradient rule). Registered once."""
    assert row.grad is None, f"{row.name}: a list row with a gradient has no registration here"
    if row.name in _LIST_OPS:
        return
    per_tensor = row.result == "per_tensor"

    def fake(tensors: list[torch.Tensor], *args: Any) -> torch.Tensor:
        device = tensors[0].device if tensors else torch.device("cuda", torch.cuda.current_device())
        return torch.empty((len(tensors),) if per_tensor else (), dtype=torch.float32, device=device)

    op = torch.library.custom_op(f"bulkred::{row.name}", eager, mutates_args=row.writes, schema=row.schema())
    op.register_fake(fake)
    _LIST_OPS[row.name] = op


_ROW_OPS: dict[str, Any] = {}


def register_row(row: RowFunction, impl: Any, fake: Any) -> None:
    """The torch operator ``bulkred::<row.name>`` of a row normalization: ``impl(*args)``
    runs it (``row_functions.py``), ``fake(*args)`` gives its outputs' shapes and dtypes
    and the same one-line errors (torch.compile), both with the operator's arguments
    (:meth:`RowFunction.op_arguments`); its gradient is the row's rule in ``row_grads.py``,
    which gets the arguments by name, the outputs and their gradients. Registered once."""
    if row.name in _ROW_OPS:
        return
    op = torch.library.custom_op(f"bulkred::{row.name}", impl, mutates_args=(), schema=row.schema())
    op.register_fake(fake)
    _ROW_OPS[row.name] = op
    if row.grad is None:
        return
    rule, names = ROW_RULES[row.grad], row.op_arguments()
    tensors = row.inputs + tuple(o.name for o in row.op_options() if o.schema.startswith("Tensor"))
    n_out = len(row.outputs) + len(row.stats)

    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        args = dict(zip(names, inputs))
        ctx.save_for_backward(*(args[n] for n in tensors), *(output if n_out > 1 else (output,)))
        ctx.options = {n: v for n, v in args.items() if n not in tensors}

    def backward(ctx: Any, *grads: Any) -> tuple:
        saved = ctx.saved_tensors
        args = {**dict(zip(tensors, saved)), **ctx.options}
        got = rule(args, tuple(saved[len(tensors):]), grads)
        return tuple(got.get(n) if n in tensors else None for n in names)

    op.register_autograd(backward, setup_context=setup_context)


def row_eager(row: RowFunction, tensors: tuple[str, ...], options: dict[str, Any], forward: Any,
              reduction: str | None = None) -> Any:
    """The eager autograd call (not under torch.compile) of the row normalization ``row``
    for one call key: ``apply(*ts)``, ``ts`` the operator's arguments named ``tensors``
    (in the operator's order), gives the operator's outputs (``y``, ``(y, residual_out)``
    or ``loss``: not the statistics) in the autograd graph; ``options`` are its other
    arguments by name, the same on every call of the key (the key proves them), and
    ``forward(*ts)`` runs the kernel: the outputs, then the statistics the backward reads.

    A ``torch.autograd.Function`` made for the key, with the rule of the operator's
    ``register_autograd`` (``row_grads.py``) and without the operator's dispatch: its
    forward saves the tensors, the outputs and the statistics (saved, not returned: no
    output to mark or pick), the options are its own (no per-call context), and its
    backward gives the rule's gradient of each tensor.

    ``reduction`` (cross_entropy, ``"sum"`` or ``"mean"``; ``tensors`` the input and the
    target): ``apply`` gives the loss rows' sum, or their mean over the rows whose target is
    not ``ignore_index``, in the input's dtype: the kernel's own where ``forward`` gives it
    third (loss, lse, reduced), else reduced in the forward by torch (float32, then cast),
    with no autograd node of its own; the backward spreads the gradient over the rows
    (divided by that count for the mean) and gives the rule's."""
    rule, n_out, n_t = ROW_RULES[row.grad], len(row.outputs), len(tensors)
    several = len(row.outputs) + len(row.stats) > 1

    if reduction is not None:
        return _reduced_rows(row, tensors, options, forward, reduction)
    if not several:
        def fwd(ctx: Any, *ts: Any) -> Any:
            y = forward(*ts)
            ctx.save_for_backward(*ts, y)
            return y
    elif n_out == 1:
        def fwd(ctx: Any, *ts: Any) -> Any:
            out = forward(*ts)
            ctx.save_for_backward(*ts, *out)
            return out[0]
    else:
        def fwd(ctx: Any, *ts: Any) -> Any:
            out = forward(*ts)
            ctx.save_for_backward(*ts, *out)
            return out[:n_out]

    def bwd(ctx: Any, *grads: Any) -> tuple:
        saved = ctx.saved_tensors
        args = dict(zip(tensors, saved))
        args.update(options)
        got = rule(args, saved[n_t:], grads)
        return tuple(map(got.get, tensors))

    return applier(type(f"{row.name}_autograd", (torch.autograd.Function,), {
        "forward": staticmethod(fwd), "backward": staticmethod(bwd),
    }), n_t)


def _reduced_rows(row: RowFunction, tensors: tuple[str, ...], options: dict[str, Any], forward: Any,
                  reduction: str) -> Any:
    """:func:`row_eager`'s Function of cross_entropy reduced to one loss (``reduction``)."""
    rule, ignore, mean, f32 = ROW_RULES[row.grad], options["ignore_index"], reduction == "mean", torch.float32
    assert tensors == ("input", "target") and reduction in ("sum", "mean"), (tensors, reduction)

    def fwd(ctx: Any, x: Any, t: Any) -> Any:
        out = forward(x, t)  # loss (float32, 0 where the target is ignore_index), lse, and the kernel's reduced
        ctx.save_for_backward(x, t, out[1])
        if len(out) == 3:  # reduced by the kernel: 0-d, x's dtype
            return out[2]
        r = out[0].sum()
        if mean:
            r.div_(t.ne(ignore).sum())
        return r if x.dtype == f32 else r.to(x.dtype)

    def bwd(ctx: Any, g: Any) -> tuple:
        x, t, lse = ctx.saved_tensors
        g = g.to(f32)
        if mean:  # over the rows kept
            g = g / t.ne(ignore).sum()
        args = {"input": x, "target": t, **options}
        got = rule(args, (None, lse), (g.expand(lse.shape),))
        return got.get("input"), None

    return applier(type(f"{row.name}_{reduction}_autograd", (torch.autograd.Function,), {
        "forward": staticmethod(fwd), "backward": staticmethod(bwd),
    }))


def register_kernel_op(name: str, schema: str, impl: Any, fake: Any) -> None:
    """A torch operator ``bulkred::<name>`` over one kernel with no gradient of its own (a
    backward kernel: ``softmax_backward``), so that torch.compile traces the backward too.
    Registered once."""
    if name in _ROW_OPS:
        return
    op = torch.library.custom_op(f"bulkred::{name}", impl, mutates_args=(), schema=schema)
    op.register_fake(fake)
    _ROW_OPS[name] = op
