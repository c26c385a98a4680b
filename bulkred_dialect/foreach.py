"""Reductions of a list of torch tensors in one launch (docs/foreach.md): a whole model's
gradient norm, AMP's unscale with its non-finite check, clipping and FP8 amax.

Each function is a row of the function table (``functions.py``'s :data:`LIST_ROWS`):
its signature, docs, option checks, torch operator and the ``bulkred.reduce_list`` it
launches come from the row. What is the lists' own is here. A call:

1. checks the row's options, then the list (torch tensors on one CUDA device, float32 /
   float16 / bfloat16, each contiguous or a dense permutation of a contiguous block; else
   a one-line :class:`ListError` naming the tensor);
2. finds the list's descriptor table (``foreach_table.py``, the layout of
   ``ops/list_layout.py``) on the device: reused while the list holds the same tensor
   objects (weak references, checked without a torch call per tensor), else built in
   pinned memory and copied asynchronously on the caller's stream: no host sync. A
   function that writes the list in place refuses two tensors that share memory (found
   once per table);
3. launches the list kernel of the row's reduction (built with the Python builder,
   compiled once per reduction and cached on disk), and for ``clip_grad_norm_`` the
   scaling kernel (``bulkred.scale_list``), on torch's current stream.

No gradients: these are optimizer-side functions (a tensor that requires grad is read as
data, as torch's ``clip_grad_norm_`` reads ``.grad``). Under ``torch.compile`` each
function is the torch operator ``torch.ops.bulkred.<name>`` (registered by
``torch_ops.py`` from the row, when this module is imported); CUDA graph capture of a
call works (capture after one call on the same list, as for any torch code that
allocates).
"""

from __future__ import annotations

import itertools
import operator
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bulkred_dialect.errors import BulkredError
from bulkred_dialect.foreach_table import descriptor_base, descriptor_table, first_overlap, with_addresses
from bulkred_dialect.functions import LIST_ROWS, LISTS, ListFunction, OptionError, Reduction, take_row_signature
from bulkred_dialect.ops.list_layout import ALIGNED, CODES, COLUMNS, TENSOR


class ListError(BulkredError, ValueError):
    """A list the list functions refuse (one line, naming the function and the tensor)."""


_LOCK = threading.Lock()
_KERNELS: dict[tuple, Any] = {}  # (what, arch) -> the loaded kernel
_CONSTANTS: dict[tuple, Any] = {}


def _error(fn: str, message: str) -> ListError:
    return ListError(f"bulkred.{fn}: {message}")


def _checks(row: ListFunction) -> dict[str, Callable[[Any], Any]]:
    """The row's option checks by name, each raising :class:`ListError` (one line). A
    value met before (of the same type: ``2`` and ``2.0`` apart) takes its checked value
    from a small memo: the per-call cost of the default ``ord=2.0`` is one look-up."""

    def wrap(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
        memo: dict[tuple, Any] = {}

        def checked(value: Any) -> Any:
            key = (value.__class__, value)
            try:
                return memo[key]
            except (KeyError, TypeError):  # new, or not hashable
                pass
            try:
                v = check(value)
            except OptionError as e:
                raise _error(row.name, str(e)) from None
            if len(memo) < 64:
                try:
                    memo[key] = v
                except TypeError:
                    pass
            return v

        return checked

    # tensors (inv_scale, found_inf) and the ignored ``foreach`` pass as they are: no memo holds them
    return {o.name: wrap(o.check) if o.schema not in ("Tensor", "") else o.check for o in row.options}


_CHECK: dict[str, dict[str, Callable[[Any], Any]]] = {row.name: _checks(row) for row in LIST_ROWS}


# region Kernels


def reduce_list_module(r: Reduction, *, scale: bool = False, flag: bool = False, name: str = "reduce_list") -> Any:
    """A verified module of one ``bulkred.reduce_list`` kernel ``@name(table, dst, total
    [, scale] [, found_inf])`` of the reduction ``r`` (its kind and maps; a row's
    :meth:`~bulkred_dialect.functions.ListFunction.reduction`), built with the builder."""
    from bulkred_dialect import builder as T

    with T.kernel(name) as k:
        table = k.param("table", [None, COLUMNS], "int64")
        dst = k.param("dst", [None], "float32")
        total = k.param("total", [1], "float32")
        s = k.param("scale", [1], "float32") if scale else None
        f = k.param("found_inf", [1], "float32") if flag else None
        T.reduce_list(r.kind, table, dst, total, prologue=list(r.prologue) or None, epilogue=list(r.epilogue) or None,
                      scale=s, flag=f)
    return k.module()


def scale_list_module(clip: bool, name: str = "scale_list") -> Any:
    """A verified module of one ``bulkred.scale_list`` kernel ``@name(table, factor [,
    total])`` (``clip``: ``clip_by`` the total, torch's clip_grad_norm_ coefficient)."""
    from bulkred_dialect import builder as T

    with T.kernel(name) as k:
        table = k.param("table", [None, COLUMNS], "int64")
        factor = k.param("factor", [1], "float32")
        T.scale_list(table, factor, clip_by=k.param("total", [1], "float32") if clip else None)
    return k.module()


def _kernel(what: tuple, build: Callable[[], Any], name: str) -> Any:
    """The loaded kernel ``name`` of the module ``build()`` makes, compiled once per
    ``what`` (the reduction and its operands) and GPU architecture, cached on disk."""
    from bulkred_dialect.backend_ptx.device import current_arch

    arch = current_arch()
    key = (what, arch)
    k = _KERNELS.get(key)
    if k is not None:
        return k
    from bulkred_dialect.compiler import compile_keyed, target_for

    k = compile_keyed({"what": "list kernel", "kernel": repr(what)}, build, target_for(arch)).kernel(name)
    with _LOCK:
        _KERNELS[key] = k
    return k


_LIST_KERNELS: dict[tuple, Any] = {}  # (row, ord, local) -> its reduce_list kernel: a call's one look-up


def _reduce_kernel(row: ListFunction, options: dict[str, Any]) -> Any:
    key = (row.name, options.get("ord"), options.get("local"))
    k = _LIST_KERNELS.get(key)
    if k is None:
        r = row.reduction(options)
        scale, flag = bool(row.scale), bool(row.flag)
        k = _kernel(("reduce_list", r.kind, r.prologue, r.epilogue, scale, flag),
                    lambda: reduce_list_module(r, scale=scale, flag=flag), "reduce_list")
        with _LOCK:
            _LIST_KERNELS[key] = k
    return k


def _clip_kernel() -> Any:
    return _kernel(("scale_list", "clip"), lambda: scale_list_module(True), "scale_list")


def _grid(kernel: Any) -> int:
    """The CTAs of a list kernel (the table's G: the lowering's launch)."""
    return int(kernel.signature.launch.grid[0])


# endregion

# region Lists and their tables


_TORCH_CODES: dict[Any, int] = {}
_ADDRESS, _NUMEL_COLUMN, _CODE = (TENSOR.index(c) for c in ("address", "numel", "code"))
_DTYPE = operator.attrgetter("dtype")
_DEVICE = operator.attrgetter("device")
_NESTED = operator.attrgetter("is_nested")
_DATA_PTR, _NUMEL, _CONTIGUOUS, _GROUP = (None,) * 4  # torch's, set by _codes at the first list


def _codes(torch: Any) -> dict[Any, int]:
    global _DATA_PTR, _NUMEL, _CONTIGUOUS, _GROUP
    if not _TORCH_CODES:
        tensor = torch.Tensor
        _DATA_PTR, _NUMEL, _CONTIGUOUS = tensor.data_ptr, tensor.numel, tensor.is_contiguous
        _GROUP = getattr(torch._C, "_group_tensors_by_device_and_dtype", None)  # None: _check_passes
        _TORCH_CODES.update({getattr(torch, name): code for name, code in CODES.items()})
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
    kind: Any = field(default=None, compare=False)  # the _Kind it was checked by, if any


@dataclass(eq=False)
class _Table:
    checked: _Checked
    host: Any  # the pinned copy (kept while the table lives: its async copy may still read it)
    table: Any  # int64 [1 + T + G, 4] on the device
    grid: int
    id_key: tuple | None = None  # (length, first and last ids, grid) of the last list it served
    ids: bytes | tuple | None = None  # all of that list's ids (:func:`_ids`), once a list came with the same id_key
    live: list[bool] | None = None  # once kept: [True] while all of the kept objects live
    refs: list[Any] | None = None  # their weak references (whose callbacks clear ``live``)
    shared: Any = ()  # () until asked: the first two tensors that share memory, or None

    def overlap(self) -> tuple[int, int] | None:
        """The positions of two tensors of the list that share memory (None: none do),
        found at the first in-place call on this table (one sort of the addresses)."""
        if self.shared == ():
            t = len(self.checked.numels)
            if t > 1:  # from the host table's tensor rows: its addresses, counts and codes as arrays already
                rows = self.host.numpy()[1 : 1 + t]
                self.shared = first_overlap(rows[:, _ADDRESS], rows[:, _NUMEL_COLUMN], rows[:, _CODE] % ALIGNED)
            else:
                self.shared = None
        return self.shared

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


def _id_reader() -> Callable[[list[Any]], bytes | tuple] | None:
    """A function giving the ids of a list's objects, in order, as the bytes of the
    list's own array of object pointers (``PyListObject.ob_item``: what ``id`` returns
    of each, read in one C-level copy, about 1 us for 2,000 objects where
    ``tuple(map(id, ts))`` takes 40 to 80), or None where this interpreter's lists are
    not laid out so (checked here against ``map(id, ...)`` on lists of several
    lengths). Only ever given a list this module made and no one else holds."""
    import sys

    if sys.implementation.name != "cpython":  # an id is an address in CPython only
        return None
    try:
        import ctypes
        import struct
    except ImportError:  # an interpreter without ctypes: map(id, ...)
        return None
    size = ctypes.sizeof(ctypes.c_void_p)
    offset = list.__basicsize__ - 2 * size  # ob_item, then allocated, end a PyListObject
    string_at, pointer_at = ctypes.string_at, ctypes.c_void_p.from_address

    def read(ts: list[Any]) -> bytes:
        return string_at(pointer_at(id(ts) + offset).value, len(ts) * size) if ts else b""

    try:
        for n in (1, 2, 7, 100):
            probe = [object() for _ in range(n)]
            if read(probe) != struct.pack(f"{n}P", *map(id, probe)):
                return None
    except Exception:  # noqa: BLE001 - laid out otherwise: map(id, ...)
        return None
    return read


def _ids_by_map(ts: list[Any]) -> tuple:
    return tuple(map(id, ts))


# The ids of a list's tensor objects, in order: equal ids of live objects are the same
# objects (an id is only reused after its object dies)
_ids: Callable[[list[Any]], bytes | tuple] = _id_reader() or _ids_by_map


def _torch(fn: str) -> Any:
    try:
        import torch
    except ImportError:
        raise _error(fn, "takes torch tensors, and torch is not installed (pip install torch)") from None
    return torch


def _as_list(fn: str, tensors: Any) -> list[Any]:
    """A list of this module's own holding the items of ``tensors`` (the ids of a table
    are read from it, :data:`_ids`)."""
    if type(tensors) is list:  # the common case first
        return tensors.copy()
    torch = _torch(fn)
    if isinstance(tensors, torch.Tensor):
        return [tensors]
    if isinstance(tensors, str | bytes) or not isinstance(tensors, Iterable):
        raise _error(fn, f"expects a list of tensors, got {type(tensors).__name__}")
    return list(tensors)


def _check(fn: str, ts: list[Any], torch: Any) -> _Checked:
    """The list's addresses, element counts, dtype codes and device, checked. A list of
    the kind of a list checked before (:class:`_Kind`) reads its addresses (one pass),
    shows that no tensor is nested (one pass) and passes its kind's guard (one C-level
    call): it takes that kind's counts and codes. Else :func:`_check_all` (given the
    addresses read)."""
    n = len(ts)
    kinds = _KINDS.get(n) if KIND_GUARDS else None
    addresses = None
    if kinds:
        try:  # a non-tensor, a tensor without memory: checked in full, which names it
            addresses = list(map(_DATA_PTR, ts))
            nested = any(map(_NESTED, ts))
        except Exception:  # noqa: BLE001 - whatever the item raises, _check_all says what is wrong
            addresses, nested = None, True
        if not nested:  # (the guard's C++ would abort on a nested tensor's strides, never return)
            for kind in kinds:
                if kind.guard.check(*ts):
                    kind.used = True
                    return _Checked(addresses, kind.numels, kind.codes, kind.device, kind)
    checked = _check_all(fn, ts, torch, addresses)
    if KIND_GUARDS and n:
        _keep_kind(ts, checked, torch)
    return checked


def _check_all(fn: str, ts: list[Any], torch: Any, addresses: list[int] | None = None) -> _Checked:
    """:func:`_check` of a list of no kind kept: torch groups the tensors by device and
    dtype in one C-level call (refusing an item that is not a tensor), then one pass per
    attribute (``map`` of an unbound method): density, element counts, addresses. A
    list that is not one device's tensors of the dtypes a list holds is checked by
    :func:`_check_passes`, which names the first offending tensor. ``addresses``: the
    list's, read already."""
    table = _codes(torch)
    if not ts or _GROUP is None:
        return _check_passes(fn, ts, torch)
    try:
        groups = _GROUP([ts], True)
    except Exception:  # noqa: BLE001 - an item that is not a tensor: the reference names it
        return _check_passes(fn, ts, torch)
    devices = {device for device, _ in groups}
    if len(devices) != 1 or not all(dtype in table for _, dtype in groups):
        return _check_passes(fn, ts, torch)
    (device,) = devices
    if device.type != DEVICE_TYPE:
        return _check_passes(fn, ts, torch)
    codes: int | list[int]
    if len(groups) == 1:
        codes = table[next(iter(groups))[1]]
    else:
        codes = [0] * len(ts)
        for (_, dtype), (_, positions) in groups.items():
            code = table[dtype]
            for i in positions:
                codes[i] = code
    _check_dense(fn, ts, torch)
    return _Checked(list(map(_DATA_PTR, ts)) if addresses is None else addresses, list(map(_NUMEL, ts)), codes, device)


def _check_passes(fn: str, ts: list[Any], torch: Any) -> _Checked:
    """:func:`_check_all` one attribute per pass, each refusal naming the first
    offending tensor: a tensor that is not a torch tensor, then one of a dtype a list
    does not hold, then tensor 0 on no CUDA device, then a tensor on another device than
    tensor 0's, then a tensor that is not dense."""
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
    if device.type != DEVICE_TYPE:
        raise _error(fn, f"tensor 0 is on {device}, not a CUDA device")
    if set(map(_DEVICE, ts)) != {device}:
        i = next(i for i, t in enumerate(ts) if t.device != device)
        raise _error(fn, f"tensor {i} is on {ts[i].device}, tensor 0 on {device} (one device per list)")
    _check_dense(fn, ts, torch)
    return _Checked(list(map(_DATA_PTR, ts)), list(map(_NUMEL, ts)), codes, device)


def _check_dense(fn: str, ts: list[Any], torch: Any) -> None:
    """Refuses the first tensor that is not dense (one pass of ``is_contiguous``; the
    slow loop only when one is not contiguous, or has no strides: a sparse tensor)."""
    try:
        if all(map(_CONTIGUOUS, ts)):
            return
    except RuntimeError:  # a tensor without strides: the loop names it
        pass
    for i, t in enumerate(ts):
        if t.layout != torch.strided:
            raise _error(fn, f"tensor {i} has layout {t.layout} (not dense); pass t.to_dense()")
        if not t.is_contiguous() and not _dense(t):
            raise _error(fn, f"tensor {i} (shape {list(t.shape)}, strides {list(t.stride())}) is not dense: "
                             "it skips memory; pass t.contiguous() or a dense view")


@dataclass(eq=False)
class _Kind:
    """The kind of a checked list: a guard that tells, in one C-level call, whether a
    list of as many items holds, item by item, tensors of the same Python type, dispatch
    keys (the device type and the layout among them), dtype, device index,
    ``requires_grad``, shape and strides, each item a distinct object (torch's
    ``TensorGuards``, which torch.compile checks its inputs with); and what the check of
    such a list gives but its addresses. A list that passes the guard passes every check
    of :func:`_check_all` (each depends on nothing else) and has the same element counts
    and codes; one that does not is checked in full. Kept only for lists of
    ``torch.Tensor`` and ``torch.nn.Parameter`` (whose strides torch's C++ reads; a
    subclass may compute them in Python), none of them nested; and a list is given to
    the guard only once its addresses are read (a tensor without memory raises there)
    and none of its tensors is nested (the guard reads each tensor's strides before its
    dispatch keys, and a nested tensor's strides abort the process)."""

    guard: Any
    numels: list[int]
    codes: int | list[int]
    device: Any
    bases: dict[int, Any] = field(default_factory=dict)  # grid -> foreach_table.descriptor_base
    used: bool = False  # whether a list passed its guard
    waited: int = 0  # the lists of its length checked in full since it was kept, while not used

    def base(self, grid: int) -> Any:
        b = self.bases.get(grid)
        if b is None:
            b = self.bases[grid] = descriptor_base(self.numels, self.codes, grid)
        return b


KIND_GUARDS = True
"""Whether a list of a kind seen before (:class:`_Kind`) is checked by its kind's guard
(one C-level call, and two passes: addresses, no nested tensor); False: every new list
is checked in full (:func:`_check_all`; tools/probes/list_calls.py times both)."""
DEVICE_TYPE = "cuda"
"""The device type of a list: tools/probes/list_calls.py ``--cpu`` and the CPU tests set
"cpu" to run the checks and the table on CPU tensors."""
_KINDS: dict[int, tuple[_Kind, ...]] = {}  # by the list's length: the kinds kept, the latest first
_LAST: dict[int, _Checked] = {}  # by the list's length: the last list checked in full
_MAX_LENGTHS, _MAX_KINDS, _KIND_WAIT = 16, 4, 8  # the lengths kept, the kinds kept per length, _keep_kind's wait


def _keep_kind(ts: list[Any], checked: _Checked, torch: Any) -> None:
    """Keeps the kind of ``ts`` (checked in full) when the last list of its length
    checked in full had the same element counts, codes and device: a list whose kind
    comes back (a new list of new gradients each step) pays for its guard once (about
    0.2 us a tensor), a list seen once never does. Up to four kinds per
    length (two lists of one length that take turns: both kept), tried latest first;
    while the latest has served no list, another is kept only every :data:`_KIND_WAIT`
    full checks of that length (lists that never come back pay for few guards)."""
    n = len(ts)
    last = _LAST.get(n)
    _LAST[n] = checked
    if last is None or last.numels != checked.numels or last.codes != checked.codes or last.device != checked.device:
        return
    if not set(map(type, ts)) <= {torch.Tensor, torch.nn.Parameter} or any(map(_NESTED, ts)):
        return  # a guard only for torch's own tensors' own strides (a subclass may compute them, a nested tensor has none)
    kinds = _KINDS.get(n, ())
    if kinds and not kinds[0].used:  # the latest kind has served no list yet: keep no other for a while
        kinds[0].waited += 1
        if kinds[0].waited < _KIND_WAIT:
            return
    guard = _guard_maker(torch)
    if guard is None:
        return
    kind = _Kind(guard(ts), checked.numels, checked.codes, checked.device)
    with _LOCK:
        _KINDS[n] = (kind, *_KINDS.pop(n, ()))[:_MAX_KINDS]
        while len(_KINDS) > _MAX_LENGTHS:
            _KINDS.pop(next(iter(_KINDS)))
        while len(_LAST) > _MAX_LENGTHS:
            _LAST.pop(next(iter(_LAST)))


_GUARDS: list[Any] = []  # [the guard maker or None], once found


def _guard_maker(torch: Any) -> Callable[[list[Any]], Any] | None:
    """A function giving the guard of a list's tensors (torch's ``TensorGuards``, each
    tensor's shape and strides read by its C++, else given as lists), or None where this
    torch has none that behaves as :class:`_Kind` needs (tried here on a few CPU
    tensors: the same tensors and views of them pass; another dtype, shape, strides,
    device, Python type or a non-tensor fail)."""
    if _GUARDS:
        return _GUARDS[0]
    maker = None
    try:
        from torch._C._dynamo.guards import TensorGuards

        size, stride = torch.Tensor.size, torch.Tensor.stride

        def own(ts: list[Any]) -> Any:  # each tensor's shape and strides read by torch's C++
            return TensorGuards(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=None)

        def given(ts: list[Any]) -> Any:
            return TensorGuards(*ts, dynamic_dims_sizes=list(map(list, map(size, ts))),
                                dynamic_dims_strides=list(map(list, map(stride, ts))))

        a, c = torch.zeros(4), torch.zeros(8)[2:6]
        b = torch.zeros(3, 2, dtype=torch.bfloat16).t()
        for make in (own, given):
            try:
                g = make([a, b, c])
                same = g.check(a, b, c) and g.check(a.view_as(a), b.view_as(b), c[:])
                other = (g.check(a, b, c.bfloat16()), g.check(a, b, torch.zeros(5)), g.check(a, b.contiguous(), c),
                         g.check(a, b, c.to("meta")), g.check(a, b, torch.nn.Parameter(c)), g.check(a, b, 1.0),
                         g.check(a, b, torch.zeros(8)[::2]), g.check(a, b, torch.zeros(2, 2)))
            except Exception:  # noqa: BLE001 - not this way
                continue
            if same is True and not any(other):
                maker = make
                break
    except Exception:  # noqa: BLE001 - no such guard in this torch: every list checked in full
        maker = None
    _GUARDS.append(maker)
    return maker


def _dead(live: list[bool]) -> Callable[[Any], None]:
    def callback(_ref: Any) -> None:
        live[0] = False

    return callback


def _table(fn: str, ts: list[Any], grid: int, torch: Any) -> _Table:
    """The device table of the list ``ts`` for ``grid`` CTAs: the one of the same tensor
    objects (ids, all alive), else, after the checks, the one of the same addresses,
    counts and dtypes, else a new one built in pinned memory and copied on the current
    stream (no sync).

    The ids of a whole list (:data:`_ids`, one C-level copy) are taken for a kept list
    whose first and last objects match, and, to keep a list, when a table served a list
    with the same first and last objects before; its objects are kept (weak references,
    a Python step each) at the third such call (a list seen once, or a list of new
    tensors every step, never pays for them)."""
    ikey = _id_key(ts, grid)
    entry = _BY_IDS.get(ikey)
    ids = None
    if entry is not None and entry.live[0]:
        ids = _ids(ts)
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
                ids = _ids(ts) if ids is None else ids
                if entry.ids == ids:
                    # the same objects again: keep them by weak reference (once; a list whose
                    # tensors are replaced each step is served by content from then on)
                    entry.live = [True]
                    entry.refs = list(map(weakref.ref, ts, itertools.repeat(_dead(entry.live), len(ts))))
                    _BY_IDS[ikey] = entry
                else:
                    entry.ids = ids
    return entry


def _host_table(checked: _Checked, grid: int) -> Any:
    """The numpy descriptor table of a checked list (from its kind's table without
    addresses where it has a kind: the same table)."""
    if checked.kind is not None:
        return with_addresses(checked.kind.base(grid), checked.addresses)
    return descriptor_table(checked.addresses, checked.numels, checked.codes, grid)


def _build(checked: _Checked, grid: int, torch: Any) -> _Table:
    table = _host_table(checked, grid)
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
    return TensorList(tensors)


def _run(row: ListFunction, tensors: Any, o: dict[str, Any]) -> Any:
    """One eager call of the list function ``row`` with its checked options ``o``: the
    table, the reduce_list launch (and for ``clip_grad_norm_`` the clip), on torch's
    current stream. Returns the per-tensor results or the 0-d total (float32)."""
    fn = row.name
    ts = tensors if type(tensors) is TensorList else _as_list(fn, tensors)  # the list's errors first
    torch = _torch(fn)
    args: list[Any] = []
    if row.scale:  # unscale_and_norm_: inv_scale and found_inf on the list's device
        if type(ts) is TensorList:
            device = ts._checked.device
        else:
            device = ts[0].device if ts and isinstance(ts[0], torch.Tensor) else getattr(o[row.scale], "device", None)
        args.append(_one(fn, row.scale, o[row.scale], torch, device))
        args.append(_one(fn, row.flag, o[row.flag], torch, device))
    try:
        k = _reduce_kernel(row, o)
    except BulkredError:  # no GPU (or no kernel): a list that is wrong says so first
        if type(ts) is not TensorList:
            _check(fn, ts, torch)
        raise
    entry = ts._table(_grid(k), torch) if type(ts) is TensorList else _table(fn, ts, _grid(k), torch)
    count = entry.count
    if row.writes and count > 1:
        pair = entry.overlap()
        if pair is not None:
            raise _error(fn, f"tensors {pair[0]} and {pair[1]} of the list share memory (the same tensor twice, or "
                             "overlapping views): each is written in place, so those elements would be scaled twice; "
                             "pass each tensor once")
    if torch.cuda.is_current_stream_capturing():
        with _LOCK:  # a CUDA graph reads this table at every replay: never freed
            _CAPTURED.append(entry)
    dst = torch.empty(max(count, 1), dtype=torch.float32, device=entry.device)
    if row.result == "per_tensor":
        k(entry.table, dst, torch.empty(1, dtype=torch.float32, device=entry.device), *args)
        return dst if count else dst[:0]
    total = torch.empty((), dtype=torch.float32, device=entry.device)  # the result: a 0-d tensor of its own
    one = total.view(1)
    k(entry.table, dst, one, *args)
    if not count and not o.get("local"):
        total.zero_()  # the norm of no tensor is 0 (torch's get_total_norm), whatever the order
    if o.get("error_if_nonfinite"):
        _check_finite(total, o["ord"])
    if row.clip and count:
        _clip_kernel()(entry.table, _constant(o[row.clip], entry.device), one)
    return total


def _one(fn: str, name: str, t: Any, torch: Any, device: Any) -> Any:
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or t.numel() != 1 or t.device != device:
        what = type(t).__name__ if not isinstance(t, torch.Tensor) else f"{t.dtype} {list(t.shape)} on {t.device}"
        raise _error(fn, f"'{name}' must be a float32 tensor of one element on {device}, got {what}")
    return t.reshape(1)


# endregion

# region The functions: their signatures and docs are their rows' (functions.LIST_ROWS)


def _check_finite(total: Any, p: float) -> None:
    import torch

    if bool(torch.logical_or(total.isnan(), total.isinf())):
        raise RuntimeError(
            f"The total norm of order {p} for gradients from `parameters` is non-finite, so it cannot be clipped. "
            "To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )


_GRAD = operator.attrgetter("grad")


def _grads(fn: str, parameters_or_grads: Any) -> Any:
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


_FOREACH_NORM, _TOTAL_NORM, _CLIP, _UNSCALE, _AMAX = (
    LISTS[n] for n in ("foreach_norm", "total_norm", "clip_grad_norm_", "unscale_and_norm_", "foreach_amax"))
_ORD = {n: _CHECK[n]["ord"] for n in ("foreach_norm", "total_norm", "clip_grad_norm_", "unscale_and_norm_")}
_NO_OPTIONS: dict[str, Any] = {}


def foreach_norm(tensors: Iterable[Any], ord: float = 2.0) -> Any:
    if _compiling():
        return _ops().foreach_norm(_detached(tensors), float(ord))
    return _run(_FOREACH_NORM, tensors, {"ord": _ORD["foreach_norm"](ord)})


def total_norm(tensors: Iterable[Any], ord: float = 2.0, error_if_nonfinite: bool = False, *, local: bool = False) -> Any:
    if _compiling():
        return _ops().total_norm(_detached(tensors), float(ord), bool(error_if_nonfinite), bool(local))
    check = _CHECK["total_norm"]
    o = {"ord": check["ord"](ord), "error_if_nonfinite": check["error_if_nonfinite"](error_if_nonfinite),
         "local": check["local"](local)}
    return _run(_TOTAL_NORM, tensors, o)


def clip_grad_norm_(parameters_or_grads: Any, max_norm: float, ord: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: Any = None) -> Any:
    if _compiling():
        return _ops().clip_grad_norm_(_traced_grads(parameters_or_grads), float(max_norm), float(ord),
                                      bool(error_if_nonfinite))
    check = _CHECK["clip_grad_norm_"]
    o = {"max_norm": check["max_norm"](max_norm), "ord": check["ord"](ord),
         "error_if_nonfinite": check["error_if_nonfinite"](error_if_nonfinite)}
    return _run(_CLIP, _grads("clip_grad_norm_", parameters_or_grads), o)


def unscale_and_norm_(grads: Any, inv_scale: Any, found_inf: Any, ord: float = 2.0) -> Any:
    if _compiling():
        return _ops().unscale_and_norm_(list(grads), inv_scale, found_inf, float(ord))
    return _run(_UNSCALE, grads, {"inv_scale": inv_scale, "found_inf": found_inf, "ord": _ORD["unscale_and_norm_"](ord)})


def foreach_amax(tensors: Iterable[Any]) -> Any:
    if _compiling():
        return _ops().foreach_amax(_detached(tensors))
    return _run(_AMAX, tensors, _NO_OPTIONS)


def _from_rows() -> None:
    """Each function's docs and signature from its row; a function whose parameters are
    not its row's options (names, order, defaults, kinds) fails the import."""
    for row in LIST_ROWS:
        take_row_signature(globals()[row.name], row)


_from_rows()


# endregion

# region torch.compile


def _compiling() -> bool:
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def _ops() -> Any:
    import torch

    return torch.ops.bulkred


def _traced_grads(parameters_or_grads: Iterable[Any]) -> list[Any]:
    """:func:`_grads` in the few steps torch.compile traces without a graph break (the
    same rule: a parameter, or a leaf that requires grad, gives its ``.grad`` when it has
    one; another tensor is a gradient)."""
    import torch

    out = []
    for t in parameters_or_grads:
        if isinstance(t, torch.nn.Parameter) or (t.requires_grad and t.is_leaf):
            if t.grad is not None:
                out.append(t.grad)
        else:
            out.append(t)
    return out


def _detached(tensors: Iterable[Any]) -> list[Any]:
    """The tensors as data (``t.detach()``: the same memory) for a read-only operator
    traced by torch.compile: parameters that require grad are read, never differentiated
    (the operators have no gradient), and so no backward is traced through them."""
    return [t.detach() for t in tensors]


def _operator(row: ListFunction) -> Callable[..., Any]:
    """The eager implementation of ``row``'s torch operator: its arguments as the row's
    schema orders them (the list, then the options that have a schema), checked as by a
    call of the public function."""
    names = [o.name for o in row.op_options()]
    check = _CHECK[row.name]

    def impl(tensors: list[Any], *args: Any) -> Any:
        return _run(row, tensors, {n: check[n](v) for n, v in zip(names, args, strict=True)})

    impl.__name__ = row.name
    return impl


def _register() -> None:
    """The torch operators are defined when this module is imported (the list functions
    need torch): torch.compile then finds ``torch.ops.bulkred.<name>`` without running
    any of this module's set-up inside a traced function."""
    try:
        import torch  # noqa: F401
    except ImportError:  # the list functions say so at their first call
        return
    from bulkred_dialect import torch_ops

    for row in LIST_ROWS:
        if row.build is not None:
            torch_ops.register_list(row, _operator(row))


_register()

# endregion
