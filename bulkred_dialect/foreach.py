"""Reductions of a list of torch tensors in one launch (docs/foreach.md): a whole model's
gradient norm, AMP's unscale with its non-finite check, clipping and FP8 amax.

Each function is a row of :data:`LIST_FUNCTIONS`. A call:

1. checks the list (torch tensors on one CUDA device, float32 / float16 / bfloat16, each
   contiguous or a dense permutation of a contiguous block; else a one-line
   :class:`ListError` naming the tensor);
2. finds the list's descriptor table (``foreach_table.py``) on the device: reused while
   the list holds the same tensor objects (weak references, checked without a torch
   call per tensor), else built in pinned memory and copied asynchronously on the
   caller's stream: no host sync;
3. launches the list kernel of its kind (``bulkred.reduce_list``, compiled once per kind
   and order and cached on disk), and for ``clip_grad_norm_`` the scaling kernel
   (``bulkred.scale_list``), on torch's current stream.

No gradients: these are optimizer-side functions (a tensor that requires grad is read as
data, as torch's ``clip_grad_norm_`` reads ``.grad``). Under ``torch.compile`` each
function is the torch operator ``torch.ops.bulkred.<name>``; CUDA graph capture of a call
works (capture after one call on the same list, as for any torch code that allocates).
"""

from __future__ import annotations

import inspect
import itertools
import math
import operator
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bulkred_dialect.errors import BulkredError
from bulkred_dialect.foreach_table import CODES, descriptor_table


class ListError(BulkredError, ValueError):
    """A list the list functions refuse (one line, naming the function and the tensor)."""


@dataclass(frozen=True)
class ListFunction:
    name: str
    summary: str
    torch: str


LIST_FUNCTIONS: dict[str, ListFunction] = {
    f.name: f
    for f in (
        ListFunction("foreach_norm", "per-tensor vector norms of a list, as one float32 tensor [len(tensors)]",
                     "torch.stack(torch._foreach_norm(tensors, ord))"),
        ListFunction("total_norm", "the norm of all the tensors of a list together (a 0-d float32 tensor)",
                     "torch.nn.utils.get_total_norm(tensors, ord)"),
        ListFunction("clip_grad_norm_", "the total norm, and every gradient scaled in place by "
                     "min(max_norm / (norm + 1e-6), 1)", "torch.nn.utils.clip_grad_norm_(parameters, max_norm, ord)"),
        ListFunction("unscale_and_norm_", "AMP's unscale and non-finite check with the total norm, one read and one write",
                     "torch._amp_foreach_non_finite_check_and_unscale_ + get_total_norm"),
        ListFunction("foreach_amax", "max |x| of each tensor of a list (FP8 scaling), one float32 tensor",
                     "torch.stack([t.abs().max() for t in tensors])"),
    )
}

_LOCK = threading.Lock()
_KERNELS: dict[tuple, Any] = {}
_CONSTANTS: dict[tuple, Any] = {}


def _error(fn: str, message: str) -> ListError:
    return ListError(f"bulkred.{fn}: {message}")


# region Orders


def _order(fn: str, ord: Any) -> float:
    if isinstance(ord, bool) or not isinstance(ord, int | float):
        raise _error(fn, f"'ord' must be a number (2, 1, inf, -inf, 0, any p), got {type(ord).__name__}")
    try:
        p = float(ord)
    except OverflowError:
        raise _error(fn, f"'ord' {ord} is out of the float range") from None
    if math.isnan(p):
        raise _error(fn, "'ord' must not be NaN")
    return p


def _bool(fn: str, name: str, value: Any) -> bool:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise _error(fn, f"'{name}' must be True or False, got {type(value).__name__} {value!r:.40}")


def _maps(p: float, local: bool) -> tuple[str, str, str]:
    """(kind, prologue, epilogue) of the ``p``-norm (``local``: the sum of powers, no root)."""
    if p == math.inf:
        return "max", "#bulkred.map<abs>", ""
    if p == -math.inf:
        return "min", "#bulkred.map<abs>", ""
    if p == 0:
        return "sum", "#bulkred.map<nonzero>", ""
    if p == 1:
        return "sum", "#bulkred.map<abs>", ""
    if p == 2:
        return "sum", "#bulkred.map<square>", "" if local else "#bulkred.map<sqrt>"
    return "sum", f"#bulkred.map<pow {p!r}>", "" if local else f"#bulkred.map<pow {1.0 / p!r}>"


# endregion

# region Kernels


def reduce_list_text(
    kind: str, prologue: str = "", epilogue: str = "", *, scale: bool = False, flag: bool = False, name: str = "reduce_list"
) -> str:
    """A module of one ``bulkred.reduce_list`` kernel ``@name`` (maps as MLIR attribute text)."""
    g = "#bulkred.scope<global>"
    table, vec, one = f"memref<?x4xi64, {g}>", f"memref<?xf32, {g}>", f"memref<1xf32, {g}>"
    params = [f"%table: {table}", f"%dst: {vec}", f"%total: {one}"]
    extra = ""
    if scale:
        params.append(f"%scale: {one}")
        extra += f" scale %scale : {one}"
    if flag:
        params.append(f"%found_inf: {one}")
        extra += f" nonfinite %found_inf : {one}"
    maps = (f" prologue [{prologue}]" if prologue else "") + (f" epilogue [{epilogue}]" if epilogue else "")
    return (
        f"func.func @{name}({', '.join(params)}) {{\n"
        f"  bulkred.reduce_list {kind}{maps} %table, %dst, %total{extra} : {table}, {vec}, {one}\n"
        "  func.return\n}\n"
    )


def scale_list_text(clip: bool, name: str = "scale_list") -> str:
    """A module of one ``bulkred.scale_list`` kernel ``@name`` (``clip``: ``clip_by`` a total)."""
    g = "#bulkred.scope<global>"
    table, one = f"memref<?x4xi64, {g}>", f"memref<1xf32, {g}>"
    params = [f"%table: {table}", f"%factor: {one}"] + ([f"%total: {one}"] if clip else [])
    by = f" clip_by %total : {one}" if clip else ""
    return (
        f"func.func @{name}({', '.join(params)}) {{\n"
        f"  bulkred.scale_list %table, %factor{by} : {table}, {one}\n  func.return\n}}\n"
    )


def list_module_text(kind: str, ord: float = 2.0, *, local: bool = False, scale: bool = False, flag: bool = False) -> str:
    """The tile-level module of a list kernel: ``kind`` "reduce" (the ``ord``-norm;
    "amax" for max |x|) or "scale" / "clip" (``bulkred.scale_list``)."""
    if kind in ("scale", "clip"):
        return scale_list_text(kind == "clip")
    k, pro, epi = ("max", "#bulkred.map<abs>", "") if kind == "amax" else _maps(ord, local)
    return reduce_list_text(k, pro, epi, scale=scale, flag=flag)


def _kernel(text: str, name: str) -> Any:
    from bulkred_dialect.backend_ptx.device import current_arch

    arch = current_arch()
    key = (text, arch)
    k = _KERNELS.get(key)
    if k is not None:
        return k
    from bulkred_dialect.backend_ptx.cache import make_key
    from bulkred_dialect.backend_ptx.loading import cached_module

    def build():
        from bulkred_dialect.backend_ptx.loading import compile_tile_module
        from bulkred_dialect.builder import context
        from bulkred_dialect.diagnostics import parse_module

        return compile_tile_module(parse_module(context(), text, "<list kernel>"), arch, cache=False)

    k = cached_module(make_key({"what": "list kernel", "text": text, "arch": arch}), build).kernel(name)
    with _LOCK:
        _KERNELS[key] = k
    return k


def _grid(kernel: Any) -> int:
    """The CTAs of a list kernel (the table's G: the lowering's launch)."""
    return int(kernel.signature.launch.grid[0])


# endregion

# region Lists and their tables


_TORCH_CODES: dict[Any, int] = {}
_DTYPE = operator.attrgetter("dtype")


def _codes(torch: Any) -> dict[Any, int]:
    if not _TORCH_CODES:
        _TORCH_CODES.update({torch.float32: CODES["float32"], torch.float16: CODES["float16"],
                             torch.bfloat16: CODES["bfloat16"]})
    return _TORCH_CODES


def _dense(t: Any) -> bool:
    """Whether ``t``'s elements fill one block of memory (a permutation of a contiguous
    tensor): read in place as a flat run."""
    dims = sorted((s, d) for s, d in zip(t.stride(), t.shape, strict=True) if d != 1)
    want = 1
    for s, d in dims:
        if s != want:
            return False
        want *= d
    return True


@dataclass(frozen=True)
class _Checked:
    """What the table of a checked list is made of."""

    addresses: list[int]
    numels: list[int]
    codes: int | list[int]  # one code when the list holds one dtype
    device: Any


@dataclass(eq=False)
class _Table:
    checked: _Checked
    host: Any  # the pinned copy (kept while the table lives: its async copy may still read it)
    table: Any  # int64 [1 + T + G, 4] on the device
    grid: int
    id_key: tuple | None = None  # (length, first and last ids, grid) of the last list it served
    ids: list[int] | None = None  # all of that list's ids, once a list came with the same id_key
    live: list[bool] | None = None  # once kept: [True] while all of the kept objects live
    refs: list[Any] | None = None  # their weak references (whose callbacks clear ``live``)

    @property
    def count(self) -> int:
        return len(self.checked.numels)

    @property
    def device(self) -> Any:
        return self.checked.device


# Tables by content (length, first and last address, grid): a list of new tensors at the
# same addresses (``zero_grad(set_to_none=True)`` with torch's caching allocator) reuses
# its table after the checks, without a copy.
_TABLES: OrderedDict[tuple, _Table] = OrderedDict()
# Tables by the ids of a list's tensor objects, for lists that came twice with the same
# objects: while every object lives (weak references), the same ids are the same tensors
# and nothing else is checked.
_BY_IDS: dict[tuple, _Table] = {}
_CAPTURED: list[_Table] = []  # tables a CUDA graph may read at replay: kept for good
_MAX_TABLES = 16


def _id_key(ts: list[Any], grid: int) -> tuple:
    return (len(ts), id(ts[0]), id(ts[-1]), grid) if ts else (0, 0, 0, grid)


def _torch(fn: str) -> Any:
    try:
        import torch
    except ImportError:
        raise _error(fn, "takes torch tensors, and torch is not installed (pip install torch)") from None
    return torch


def _as_list(fn: str, tensors: Any) -> list[Any]:
    torch = _torch(fn)
    if isinstance(tensors, torch.Tensor):
        return [tensors]
    if isinstance(tensors, str | bytes) or not isinstance(tensors, Iterable):
        raise _error(fn, f"expects a list of tensors, got {type(tensors).__name__}")
    return list(tensors)


def _check(fn: str, ts: list[Any], torch: Any) -> _Checked:
    """The list's addresses, element counts, dtype codes and device, checked. Each check
    is one pass of a C-level call over the list (``map``); a failed one looks for the
    first offending tensor to name it."""
    tensor = torch.Tensor
    if not all(issubclass(k, tensor) for k in set(map(type, ts))):
        i = next(i for i, t in enumerate(ts) if not isinstance(t, tensor))
        raise _error(fn, f"tensor {i} is a {type(ts[i]).__name__}, not a torch tensor")
    table = _codes(torch)
    dtypes = list(map(_DTYPE, ts))
    kinds = set(dtypes)
    if not kinds <= table.keys():
        i = next(i for i, d in enumerate(dtypes) if d not in table)
        raise _error(fn, f"tensor {i} has dtype {str(dtypes[i]).removeprefix('torch.')} "
                         "(a list holds float32, float16 and bfloat16)")
    if not ts:
        return _Checked([], [], 0, torch.device("cuda", torch.cuda.current_device()))
    codes: int | list[int] = table[dtypes[0]] if len(kinds) == 1 else list(map(table.__getitem__, dtypes))
    device = ts[0].device
    if device.type != "cuda":
        raise _error(fn, f"tensor 0 is on {device}, not a CUDA device")
    # one pass over the device indices (a CPU tensor's is -1); the slow loop names the culprit
    if set(map(tensor.get_device, ts)) != {device.index}:
        for i, t in enumerate(ts):
            if not t.is_cuda or t.get_device() != device.index:
                raise _error(fn, f"tensor {i} is on {t.device}, tensor 0 on {device} (one device per list)")
    if not all(map(tensor.is_contiguous, ts)):
        for i, t in enumerate(ts):
            if not t.is_contiguous() and not _dense(t):
                raise _error(fn, f"tensor {i} (shape {list(t.shape)}, strides {list(t.stride())}) is not dense: "
                                 "it skips memory; pass t.contiguous() or a dense view")
    return _Checked(list(map(tensor.data_ptr, ts)), list(map(tensor.numel, ts)), codes, device)


def _dead(live: list[bool]) -> Callable[[Any], None]:
    def callback(_ref: Any) -> None:
        live[0] = False

    return callback


def _table(fn: str, ts: list[Any], grid: int, torch: Any) -> _Table:
    """The device table of the list ``ts`` for ``grid`` CTAs: the one of the same tensor
    objects (ids, all alive), else, after the checks, the one of the same addresses,
    counts and dtypes, else a new one built in pinned memory and copied on the current
    stream (no sync).

    The ids of a whole list are only taken where they can pay: for a kept list whose
    first and last objects match, and, to keep a list, when a table served a list with
    the same first and last objects before (a list seen once, or a list of new tensors
    every step, never pays for its ids)."""
    ikey = _id_key(ts, grid)
    entry = _BY_IDS.get(ikey)
    ids = None
    if entry is not None and entry.live[0]:
        ids = list(map(id, ts))
        if entry.ids == ids:
            return entry
    checked = _check(fn, ts, torch)
    a = checked.addresses
    ckey = (len(a), a[0], a[-1], grid) if a else (0, 0, 0, grid)
    with _LOCK:
        entry = _TABLES.get(ckey)
        if entry is not None and entry.checked == checked:
            _TABLES.move_to_end(ckey)
        else:
            entry = _build(checked, grid, torch)
            _TABLES[ckey] = entry
            while len(_TABLES) > _MAX_TABLES:
                _, old = _TABLES.popitem(last=False)
                if old.id_key is not None and _BY_IDS.get(old.id_key) is old:
                    del _BY_IDS[old.id_key]
        if entry.live is None:
            if entry.id_key != ikey:
                entry.id_key, entry.ids = ikey, None
            else:
                ids = list(map(id, ts)) if ids is None else ids
                if entry.ids == ids:
                    # the same objects again: keep them by weak reference (once; a list whose
                    # tensors are replaced each step is served by content from then on)
                    entry.live = [True]
                    entry.refs = list(map(weakref.ref, ts, itertools.repeat(_dead(entry.live), len(ts))))
                    _BY_IDS[ikey] = entry
                else:
                    entry.ids = ids
    return entry


def _build(checked: _Checked, grid: int, torch: Any) -> _Table:
    table = descriptor_table(checked.addresses, checked.numels, checked.codes, grid)
    host = torch.from_numpy(table).pin_memory()
    dev = torch.empty(table.shape, dtype=torch.int64, device=checked.device)
    dev.copy_(host, non_blocking=True)
    return _Table(checked, host, dev, grid)


def _constant(value: float, device: Any) -> Any:
    """A float32 [1] device tensor holding ``value`` (made once per value and device)."""
    import torch

    key = (value, device)
    c = _CONSTANTS.get(key)
    if c is None:
        c = torch.full((1,), value, dtype=torch.float32, device=device)
        with _LOCK:
            _CONSTANTS[key] = c
    return c


class TensorList(Sequence):
    """A list of tensors checked once: the list functions take it wherever they take a
    list, and skip every per-tensor step (its descriptor table is built on its first
    use). Make one with :func:`tensor_list`.

    It holds its tensors (strong references) and sees what a kept table sees: values
    changed in place, not a tensor moved or resized by ``t.set_``, ``t.resize_`` or
    ``p.data = ...`` (docs/foreach.md). For gradients kept from step to step
    (``zero_grad(set_to_none=False)``), parameters (FP8 amax of weights) and other lists
    of long-lived tensors; with ``set_to_none=True`` pass the new list itself."""

    __slots__ = ("_tensors", "_checked", "_tables")

    def __init__(self, tensors: Iterable[Any], _fn: str = "tensor_list"):
        ts = _as_list(_fn, tensors)
        self._tensors = tuple(ts)
        self._checked = _check(_fn, ts, _torch(_fn))
        self._tables: dict[int, _Table] = {}

    def __len__(self) -> int:
        return len(self._tensors)

    def __getitem__(self, i: Any) -> Any:
        return self._tensors[i]

    def __iter__(self) -> Any:
        return iter(self._tensors)

    def __repr__(self) -> str:
        return f"bulkred.TensorList({len(self._tensors)} tensors on {self._checked.device})"

    def _table(self, grid: int, torch: Any) -> _Table:
        t = self._tables.get(grid)
        if t is None:
            t = self._tables[grid] = _build(self._checked, grid, torch)
        return t


def tensor_list(tensors: Iterable[Any]) -> TensorList:
    """``tensors`` checked once (as every list call checks them) as a :class:`TensorList`:
    a later list call on it does no per-tensor work, whatever the list's length.

    >>> grads = bulkred.tensor_list([p.grad for p in model.parameters()])
    >>> norm = bulkred.clip_grad_norm_(grads, 1.0)
    """
    return TensorList(tensors)


_LIST_KERNELS: dict[tuple, Any] = {}


def _list_kernel(kind: str, ord: float, local: bool, scale: bool, flag: bool) -> Any:
    key = (kind, ord, local, scale, flag)
    k = _LIST_KERNELS.get(key)
    if k is None:
        name = "scale_list" if kind in ("scale", "clip") else "reduce_list"
        k = _kernel(list_module_text(kind, ord, local=local, scale=scale, flag=flag), name)
        with _LOCK:
            _LIST_KERNELS[key] = k
    return k


def _reduce(fn: str, tensors: Any, kind: str, ord: float, *, local: bool = False,
            scale: Any = None, flag: Any = None) -> tuple[Any, Any, _Table]:
    ts = tensors if type(tensors) is TensorList else _as_list(fn, tensors)  # the list's errors first
    torch = _torch(fn)
    k = _list_kernel(kind, ord, local, scale is not None, flag is not None)
    entry = ts._table(_grid(k), torch) if type(ts) is TensorList else _table(fn, ts, _grid(k), torch)
    if torch.cuda.is_current_stream_capturing():
        with _LOCK:  # a CUDA graph reads this table at every replay: never freed
            _CAPTURED.append(entry)
    count = entry.count
    dst = torch.empty(max(count, 1), dtype=torch.float32, device=entry.device)
    total = torch.empty(1, dtype=torch.float32, device=entry.device)
    if scale is None and flag is None:
        k(entry.table, dst, total)
    else:
        args = [entry.table, dst, total]
        if scale is not None:
            args.append(scale)
        if flag is not None:
            args.append(flag)
        k(*args)
    if not count and not local:
        total.zero_()  # the norm of no tensor is 0 (torch's get_total_norm), whatever the order
    return dst[:count], total, entry


def _one(fn: str, name: str, t: Any, torch: Any, device: Any) -> Any:
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or t.numel() != 1 or t.device != device:
        what = type(t).__name__ if not isinstance(t, torch.Tensor) else f"{t.dtype} {list(t.shape)} on {t.device}"
        raise _error(fn, f"'{name}' must be a float32 tensor of one element on {device}, got {what}")
    return t.reshape(1)


# endregion

# region The functions


def foreach_norm(tensors: Iterable[Any], ord: float = 2.0) -> Any:
    """The ``ord``-norm of each tensor of ``tensors``, as one float32 tensor
    ``[len(tensors)]`` (torch's ``_foreach_norm`` gives a list of 0-d tensors). ``ord``: any
    p, ``inf`` (max |x|), ``-inf`` (min |x|), 0 (the count of nonzeros). An empty tensor's
    norm is 0 (``-inf``: inf).

    >>> norms = bulkred.foreach_norm([p.grad for p in model.parameters()])
    """
    if _compiling():
        return _ops().foreach_norm(list(tensors), float(ord))
    p = _order("foreach_norm", ord)
    dst, _, _ = _reduce("foreach_norm", tensors, "reduce", p)
    return dst


def total_norm(tensors: Iterable[Any], ord: float = 2.0, error_if_nonfinite: bool = False, *, local: bool = False) -> Any:
    """The ``ord``-norm of all the elements of ``tensors`` together, a 0-d float32 tensor,
    as ``torch.nn.utils.get_total_norm`` (one launch, no host sync). ``local=True``: the
    sum of ``|x| ** ord`` (``inf``: max |x|, ``-inf``: min |x|, 0: the count of
    nonzeros) without the root, for a distributed total: ``all_reduce`` (SUM; MAX for inf,
    MIN for -inf) over the ranks, then ``** (1 / ord)`` (docs/foreach.md).
    ``error_if_nonfinite=True`` raises ``RuntimeError`` when the norm is NaN or inf (that
    check waits for the GPU, as torch's does)."""
    if _compiling():
        return _ops().total_norm(list(tensors), float(ord), bool(local))
    p = _order("total_norm", ord)
    local = _bool("total_norm", "local", local)
    error_if_nonfinite = _bool("total_norm", "error_if_nonfinite", error_if_nonfinite)
    _, total, _ = _reduce("total_norm", tensors, "reduce", p, local=local)
    out = total.view(())
    if error_if_nonfinite:
        _check_finite(out, p)
    return out


def _check_finite(total: Any, p: float) -> None:
    import torch

    if bool(torch.logical_or(total.isnan(), total.isinf())):
        raise RuntimeError(
            f"The total norm of order {p} for gradients from `parameters` is non-finite, so it cannot be clipped. "
            "To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )


_GRAD = operator.attrgetter("grad")


def _grads(fn: str, parameters_or_grads: Any) -> list[Any]:
    """The gradients of a list of parameters (those that have one), or the list itself
    where it holds gradients (a tensor that is not a leaf requiring grad); a
    :class:`TensorList` holds gradients."""
    if type(parameters_or_grads) is TensorList:
        return parameters_or_grads
    items = _as_list(fn, parameters_or_grads)
    torch = _torch(fn)
    if set(map(type, items)) == {torch.nn.Parameter}:  # a model's parameters: one pass
        return [g for g in map(_GRAD, items) if g is not None]
    out = []
    for t in items:
        if isinstance(t, torch.nn.Parameter) or (isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf):
            if t.grad is not None:
                out.append(t.grad)
        else:
            out.append(t)
    return out


def clip_grad_norm_(parameters_or_grads: Any, max_norm: float, ord: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: Any = None) -> Any:
    """As ``torch.nn.utils.clip_grad_norm_``: the total ``ord``-norm of the gradients
    (parameters give their ``.grad``, tensors are the gradients), then every gradient
    multiplied in place by ``min(max_norm / (norm + 1e-6), 1)``, the coefficient computed
    on the device (no host sync; nothing is written when it is 1). Returns the norm (0-d
    float32). ``foreach`` is accepted for torch's signature and ignored."""
    if _compiling():
        return _ops().clip_grad_norm_(_grads("clip_grad_norm_", parameters_or_grads), float(max_norm), float(ord))
    p = _order("clip_grad_norm_", ord)
    error_if_nonfinite = _bool("clip_grad_norm_", "error_if_nonfinite", error_if_nonfinite)
    if isinstance(max_norm, bool) or not isinstance(max_norm, int | float):
        raise _error("clip_grad_norm_", f"'max_norm' must be a number, got {type(max_norm).__name__}")
    grads = _grads("clip_grad_norm_", parameters_or_grads)
    _, total, entry = _reduce("clip_grad_norm_", grads, "reduce", p)
    out = total.view(())
    if error_if_nonfinite:
        _check_finite(out, p)
    if entry.count:
        _list_kernel("clip", 0.0, False, False, False)(entry.table, _constant(float(max_norm), entry.device), total)
    return out


def unscale_and_norm_(grads: Any, inv_scale: Any, found_inf: Any, ord: float = 2.0) -> Any:
    """AMP's ``torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf,
    inv_scale)`` and ``get_total_norm`` of the unscaled gradients in one read and one
    write: each gradient multiplied in place by ``inv_scale`` (float32 [1] on the device),
    ``found_inf`` (float32 [1]) set to 1.0 where any gradient held inf or NaN (never
    cleared), and the total norm of the unscaled gradients returned (0-d float32).
    bfloat16 gradients are taken (torch's unscale refuses them)."""
    if _compiling():
        return _ops().unscale_and_norm_(list(grads), inv_scale, found_inf, float(ord))
    p = _order("unscale_and_norm_", ord)
    torch = _torch("unscale_and_norm_")
    if type(grads) is TensorList:
        ts, device = grads, grads._checked.device
    else:
        ts = _as_list("unscale_and_norm_", grads)
        device = ts[0].device if ts and isinstance(ts[0], torch.Tensor) else getattr(inv_scale, "device", None)
    s = _one("unscale_and_norm_", "inv_scale", inv_scale, torch, device)
    f = _one("unscale_and_norm_", "found_inf", found_inf, torch, device)
    _, total, _ = _reduce("unscale_and_norm_", ts, "reduce", p, scale=s, flag=f)
    return total.view(())


def foreach_amax(tensors: Iterable[Any]) -> Any:
    """max |x| of each tensor of ``tensors`` (the amax of FP8 scaling), one float32 tensor
    ``[len(tensors)]``; an empty tensor gives 0, a NaN gives NaN."""
    if _compiling():
        return _ops().foreach_amax(list(tensors))
    dst, _, _ = _reduce("foreach_amax", tensors, "amax", math.inf)
    return dst


# endregion

# region torch.compile


def _compiling() -> bool:
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


_OPS: Any = None
_LIB: list[Any] = []


def _ops() -> Any:
    """The torch operators ``bulkred::<name>`` of the list functions (defined at the first
    use): an opaque call for torch.compile, the eager function inside."""
    global _OPS
    if _OPS is not None:
        return _OPS
    import torch

    with _LOCK:
        if _OPS is not None:
            return _OPS
        lib = torch.library.Library("bulkred", "FRAGMENT")  # noqa: TOR901
        lib.define("foreach_norm(Tensor[] tensors, float ord) -> Tensor")
        lib.define("total_norm(Tensor[] tensors, float ord, bool local) -> Tensor")
        lib.define("clip_grad_norm_(Tensor(a!)[] grads, float max_norm, float ord) -> Tensor")
        lib.define("unscale_and_norm_(Tensor(a!)[] grads, Tensor inv_scale, Tensor(b!) found_inf, float ord) -> Tensor")
        lib.define("foreach_amax(Tensor[] tensors) -> Tensor")

        def per_tensor(tensors, *args):
            return torch.empty(len(tensors), dtype=torch.float32, device=tensors[0].device if tensors else "cuda")

        def scalar(tensors, *args):
            return torch.empty((), dtype=torch.float32, device=tensors[0].device if tensors else "cuda")

        impls: dict[str, tuple[Callable, Callable]] = {
            "foreach_norm": (lambda ts, o: foreach_norm(ts, o), per_tensor),
            "total_norm": (lambda ts, o, local: total_norm(ts, o, local=local).clone(), scalar),
            "clip_grad_norm_": (lambda ts, m, o: clip_grad_norm_(ts, m, o).clone(), scalar),
            "unscale_and_norm_": (lambda ts, s, f, o: unscale_and_norm_(ts, s, f, o).clone(), scalar),
            "foreach_amax": (lambda ts: foreach_amax(ts), per_tensor),
        }
        for name, (eager, fake) in impls.items():
            lib.impl(name, eager, "CUDA")
            torch.library.register_fake(f"bulkred::{name}", fake, lib=lib)
        _LIB.append(lib)
        _OPS = torch.ops.bulkred
    return _OPS


# endregion


def _signature_docs() -> None:
    for name in LIST_FUNCTIONS:
        fn = globals()[name]
        fn.__signature__ = inspect.signature(fn)


_signature_docs()


def _register() -> None:
    """The torch operators are defined when this module is imported (the list functions
    need torch): torch.compile then finds ``torch.ops.bulkred.<name>`` without running
    any of this module's set-up inside a traced function."""
    try:
        import torch  # noqa: F401
    except ImportError:  # pragma: no cover - the list functions need torch
        return
    _ops()


_register()
