"""Kernel signatures: the parameters a kernel takes (arrays with their element type and
shape, scalars), its launch shape, and how they are read from a ``func.func``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bulkred_dialect.backend_ptx.errors import SignatureError
from bulkred_dialect.errors import ArgumentError, SignatureValueError
from bulkred_dialect.ops.dtypes import DTYPES, of_ir, of_short
from bulkred_dialect.ops.kernel_attrs import ALIGN_ATTR, DIMS_ATTR, GRID_ROWS_ATTR, WORKSPACE_ATTR, ZERO_INIT_ATTR

if TYPE_CHECKING:  # pragma: no cover
    from xdsl.dialects.builtin import ModuleOp


# region Element types and signatures

def _param_dtypes() -> dict[str, tuple[int, tuple[str, ...], str]]:
    """Element-type spelling of a parameter -> (bytes, the numpy dtype names an array of
    it may have, what to call it in errors), from ``ops/dtypes.py``'s rows: a signless
    ``iN`` takes signed or unsigned arrays, ``sN`` signed ones, ``uN`` unsigned ones, and
    ``bf16`` also its bits as 16-bit integers."""
    out: dict[str, tuple[int, tuple[str, ...], str]] = {}
    for d in (d for d in DTYPES.values() if d.is_float):
        bits_as = (d.numpy, "int16") if d.numpy != d.name else ()
        out[d.short] = (d.bytes, (d.name, *bits_as), f"{d.name} (or its bits as {d.numpy})" if bits_as else d.name)
    signed = [d for d in DTYPES.values() if not d.is_float and d.signed]
    for d in signed:
        out[d.short] = (d.bytes, (d.name, f"u{d.name}"), f"{d.name} or u{d.name}")
    for d in signed:
        out[f"s{d.bits}"] = (d.bytes, (d.name,), d.name)
    for d in (d for d in DTYPES.values() if not d.signed):
        out[d.short] = (d.bytes, (d.name,), d.name)
    return out


PARAM_DTYPES = _param_dtypes()
"""A parameter's dtype spelling (``f32``, ``i32``, ``s8`` ...) -> (bytes, the array dtype
names it takes, the name an error shows); from ``ops/dtypes.py``'s rows."""

# The numpy type of a scalar parameter of each element type (bf16: its bits).
_SCALAR_DTYPE: dict[str, type] = {spec: np.dtype(of_short(spec).numpy).type for spec in PARAM_DTYPES}  # type: ignore[union-attr]


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_shape(v: object) -> bool:
    """A list or tuple of integers (None for a dimension of any size)."""
    return isinstance(v, (list, tuple)) and all(d is None or _is_int(d) for d in v)


def _dtype_ok(spec: str, dtype: np.dtype) -> bool:
    return dtype.name in PARAM_DTYPES[spec][1]


@dataclass(frozen=True)
class Param:
    """One kernel parameter: an array (a device pointer) or a scalar.

    ``dtype`` is an element-type spelling (``f32``, ``bf16``, ``i32`` (either
    signedness), ``u32``, ``s64`` ...) or None for any; ``shape`` uses None for a
    dimension of any size; a None ``shape`` accepts any shape. ``strides`` (element
    strides, one per axis, with a static ``shape``): the kernel reads a view of that
    layout (a ``strided<[...]>`` memref) from the array's first element; None: a
    contiguous row-major array.
    """

    name: str
    kind: str = "array"  # "array" or "scalar"
    dtype: str | None = None
    shape: tuple[int | None, ...] | None = None
    strides: tuple[int, ...] | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise SignatureValueError(f"a param's name must be a non-empty string, got {self.name!r}")
        if self.kind not in ("array", "scalar"):
            raise SignatureValueError(f"param '{self.name}': kind must be 'array' or 'scalar', got '{self.kind}'")
        if self.dtype is not None and (not isinstance(self.dtype, str) or self.dtype not in PARAM_DTYPES):
            raise SignatureValueError(
                f"param '{self.name}': unknown dtype '{self.dtype}' (valid: {', '.join(PARAM_DTYPES)})"
            )
        if self.shape is not None and (
            not isinstance(self.shape, tuple)
            or not all(d is None or (_is_int(d) and d >= 0) for d in self.shape)
        ):
            raise SignatureValueError(
                f"param '{self.name}': shape must be a tuple of sizes >= 0 (None for any size) or None, "
                f"got {self.shape!r}"
            )
        if self.strides is not None and (
            not isinstance(self.strides, tuple)
            or self.shape is None
            or len(self.strides) != len(self.shape)
            or not all(_is_int(s) and s >= 0 for s in self.strides)
        ):
            raise SignatureValueError(
                f"param '{self.name}': strides must be a tuple of element strides >= 0, one per axis of the "
                f"shape, or None, got {self.strides!r}"
            )

    def strides_match(self, shape: tuple[int, ...], strides: tuple[int, ...] | None) -> bool:
        """Whether an array of ``shape`` (this param's) and element ``strides`` (None:
        row-major contiguous) has this param's layout (axes of extent 1 may have any stride)."""
        assert self.strides is not None
        if strides is None:
            strides = tuple(int(np.prod(shape[k + 1 :])) for k in range(len(shape)))
        return len(strides) == len(shape) and all(
            d == 1 or s == w for d, s, w in zip(shape, strides, self.strides)
        )

    def span(self, shape: tuple[int, ...] | None = None) -> int:
        """Elements from a view's first element to its last, inclusive (``strides``), of
        an array of ``shape`` (default: this param's, static)."""
        shape = self.shape if shape is None else shape  # type: ignore[assignment]
        assert self.strides is not None and shape is not None and None not in shape
        if 0 in shape:
            return 0
        return 1 + sum((d - 1) * s for d, s in zip(shape, self.strides))  # type: ignore[operator]

    def describe(self) -> str:
        t = self.dtype or "any type"
        if self.kind == "scalar":
            return f"scalar {t}"
        if self.shape is None:
            return f"array of {t}, any shape"
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        text = f"array of {t}, shape ({dims}{',' if len(self.shape) == 1 else ''})"
        return text if self.strides is None else f"{text}, strides {self.strides}"


@dataclass(frozen=True)
class LaunchShape:
    """Grid (in CTAs), block and cluster dimensions, each three entries."""

    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    cluster: tuple[int, int, int] = (1, 1, 1)


@dataclass(frozen=True)
class KernelSignature:
    """A kernel's name, its user parameters in order, and (when known) its launch shape
    and dynamic shared-memory size.

    ``workspace``: bytes of the zero-filled global scratch buffer the lowered kernel
    takes as an extra last parameter (``bulkred.workspace``; 0 for none); it is not in
    ``params``, the runtime supplies it. ``zero_init``: indices of array parameters
    the runtime zero-fills before each launch (``bulkred.zero_init``). ``align``: ()
    or one entry per parameter, the alignment in bytes an array's address needs (the
    kernel reads it with vector loads of that width; ``bulkred.align``); the runtime
    refuses a misaligned array before any launch. ``dims``: one entry per ``i64`` size the
    kernel takes after its user parameters (``bulkred.dims``), the ``(param, axis)`` pairs
    of a dynamic dimension: the launcher passes the first's size, which the others must
    equal (:meth:`sizes`). ``grid_rows``: ``(per, cap)``, the grid chosen at the launch from
    the first size (``bulkred.grid_rows``, :meth:`grid_for`); () for the recorded launch."""

    name: str
    params: tuple[Param, ...]
    launch: LaunchShape | None = None
    shmem: int = 0
    workspace: int = 0
    zero_init: tuple[int, ...] = ()
    align: tuple[int, ...] = ()
    dims: tuple[tuple[tuple[int, int], ...], ...] = ()
    grid_rows: tuple[int, ...] = ()

    @staticmethod
    def of(
        name: str,
        *params: Param | tuple,
        launch: LaunchShape | None = None,
        shmem: int = 0,
        workspace: int = 0,
        zero_init: Sequence[int] = (),
        align: Sequence[int] = (),
    ):
        """``KernelSignature.of("k", ("out", "f32", (64,)), ("n", "u32"))``: a tuple with a
        shape (or ``...`` for any shape) is an array; a tuple of two is a scalar."""
        if not isinstance(name, str) or not name:
            raise SignatureValueError(f"a kernel signature's name must be a non-empty string, got {name!r}")
        ps = []
        for p in params:
            if isinstance(p, Param):
                ps.append(p)
            elif isinstance(p, tuple) and len(p) == 3 and (p[2] is ... or _is_shape(p[2])):
                shape = None if p[2] is ... else tuple(p[2])
                ps.append(Param(p[0], "array", p[1], shape))
            elif isinstance(p, tuple) and len(p) == 2:
                ps.append(Param(p[0], "scalar", p[1]))
            else:
                raise SignatureValueError(f"param spec {p!r} must be (name, dtype) or (name, dtype, shape)")
        if launch is not None and not isinstance(launch, LaunchShape):
            raise SignatureValueError(f"kernel '{name}': 'launch' must be a LaunchShape or None, got {launch!r}")
        for field, value in (("shmem", shmem), ("workspace", workspace)):
            if not _is_int(value):
                raise SignatureValueError(f"kernel '{name}': '{field}' must be an integer number of bytes, got {value!r}")
        if not _is_shape(zero_init) or None in zero_init:
            raise SignatureValueError(f"kernel '{name}': 'zero_init' must be a sequence of parameter indices, got {zero_init!r}")
        if not _is_shape(align) or None in align:
            raise SignatureValueError(f"kernel '{name}': 'align' must be a sequence of byte counts, got {align!r}")
        sig = KernelSignature(name, tuple(ps), launch, shmem, workspace, tuple(zero_init), tuple(align))
        problem = sig.contract_problem()
        if problem:
            raise SignatureValueError(f"kernel '{name}': {problem}")
        return sig

    def contract_problem(self) -> str | None:
        """Why ``workspace`` / ``zero_init`` are not valid for these params, else None."""
        if self.workspace < 0:
            return f"'{WORKSPACE_ATTR}' must be >= 0 bytes, got {self.workspace}"
        seen = set()
        for i in self.zero_init:
            if not 0 <= i < len(self.params):
                return (
                    f"'{ZERO_INIT_ATTR}' index {i} is out of range (the kernel has "
                    f"{len(self.params)} user parameters: 0 to {len(self.params) - 1})"
                )
            if self.params[i].kind != "array":
                return f"'{ZERO_INIT_ATTR}' index {i} names param '{self.params[i].name}', a scalar (expected an array)"
            if i in seen:
                return f"'{ZERO_INIT_ATTR}' lists index {i} twice"
            seen.add(i)
        for k, pairs in enumerate(self.dims):
            for p, axis in pairs:  # (a !ptx.ptr parameter has no shape: any)
                ok = 0 <= p < len(self.params) and self.params[p].kind == "array" and axis >= 0
                shape = self.params[p].shape if ok else None
                if not ok or (shape is not None and (axis >= len(shape) or shape[axis] is not None)):
                    return (
                        f"'{DIMS_ATTR}' entry {k} names dimension {axis} of parameter {p}, which is not a dynamic "
                        f"dimension (?) of an array parameter"
                    )
        if len(self.grid_rows) not in (0, 2, 3) or any(v < 1 for v in self.grid_rows) or (self.grid_rows and not self.dims):
            return (f"'{GRID_ROWS_ATTR}' must be [rows per unit, units at most] (and the largest grid launched as one cluster), "
                    f"each >= 1, with '{DIMS_ATTR}', got {list(self.grid_rows)}")
        if self.align and len(self.align) != len(self.params):
            return (
                f"'{ALIGN_ATTR}' has {len(self.align)} entries but the kernel has {len(self.params)} "
                f"user parameters (one alignment in bytes per parameter)"
            )
        for i, a in enumerate(self.align):
            if a < 1 or a & (a - 1):
                return f"'{ALIGN_ATTR}' entry {i} must be a power of two number of bytes >= 1, got {a}"
            if a > 1 and self.params[i].kind != "array":
                return f"'{ALIGN_ATTR}' entry {i} ({a}) names param '{self.params[i].name}', a scalar (expected an array)"
        return None

    def sizes(self, shapes: Sequence[tuple[int, ...] | None]) -> list[int]:
        """The sizes of :attr:`dims` from the arguments' ``shapes`` (one per parameter,
        None for one without a shape), each checked against the others of its entry."""
        out = []
        for pairs in self.dims:
            (p, axis), *others = pairs
            if shapes[p] is None:
                raise SignatureError(
                    f"kernel '{self.name}' param '{self.params[p].name}': the kernel reads its dimension {axis} "
                    f"from the array's shape; pass an array with a shape (numpy, torch, cupy)"
                )
            size = int(shapes[p][axis])  # type: ignore[index]
            for q, ax in others:
                got = shapes[q]
                if got is not None and int(got[ax]) != size:
                    raise SignatureError(
                        f"kernel '{self.name}' param '{self.params[q].name}': expected dimension {ax} of "
                        f"{size} (param '{self.params[p].name}''s dimension {axis}), got shape {tuple(got)}"
                    )
            out.append(size)
        return out

    def grid_for(self, sizes: Sequence[int]) -> int | None:
        """The grid's CTAs for these :meth:`sizes` (``bulkred.grid_rows``), None without a rule."""
        if not self.grid_rows or not sizes:
            return None
        from bulkred_dialect.ops.kernel_attrs import grid_for_rows

        cluster = self.launch.cluster[0] if self.launch is not None else 1
        return grid_for_rows(self.grid_rows[0], self.grid_rows[1], cluster, sizes[0])

    def alignment(self, i: int) -> int:
        """The alignment in bytes param ``i``'s address needs (1: none)."""
        return self.align[i] if self.align else 1

    def check(self, args: Sequence[Any]) -> list[Any]:
        """Check ``args`` against the parameters; return them normalised (contiguous
        array copies, numpy scalars). Raises :class:`SignatureError` naming the param,
        the expected and the actual shape or dtype."""
        if not isinstance(args, Sequence) or isinstance(args, str | bytes):
            raise SignatureError(f"kernel '{self.name}': the arguments must be a list or tuple, got {type(args).__name__}")
        if len(args) != len(self.params):
            names = ", ".join(p.name for p in self.params)
            raise SignatureError(
                f"kernel '{self.name}' takes {len(self.params)} arguments ({names}), got {len(args)}"
            )
        return [self.check_one(p, a) for p, a in zip(self.params, args)]

    @staticmethod
    def host_layout(p: Param, a: np.ndarray) -> np.ndarray:
        """A checked numpy array as the kernel reads it, a new array: dense, or for a view
        param the elements at their strides in one run of memory (a stride of 0 keeps one
        of the equal elements)."""
        if p.strides is None:
            return np.ascontiguousarray(a).copy()
        run = np.zeros(p.span(a.shape), a.dtype)
        if run.size:
            view = np.lib.stride_tricks.as_strided(run, a.shape, [st * a.itemsize for st in p.strides])
            view[...] = a
        return run

    def check_one(self, p: Param, a: Any, copy: bool = True) -> Any:
        """``a`` checked against ``p``: a numpy array as the kernel reads it (a copy; with
        ``copy=False`` the array itself, :meth:`host_layout` later), a scalar of its type."""
        where = f"kernel '{self.name}' param '{p.name}'"
        if p.kind == "array":
            if not isinstance(a, np.ndarray):
                raise SignatureError(
                    f"{where}: expected a device array (torch, cupy, DLPack or CUDA Array Interface) "
                    f"or a numpy array ({p.describe()}), got {type(a).__name__}"
                )
            if p.dtype is not None and not _dtype_ok(p.dtype, a.dtype):
                raise SignatureError(
                    f"{where}: expected dtype {PARAM_DTYPES[p.dtype][2]} ({p.dtype}), got {a.dtype}"
                )
            if p.shape is not None:
                ok = len(p.shape) == a.ndim and all(
                    d is None or d == s for d, s in zip(p.shape, a.shape)
                )
                if not ok:
                    want = tuple("?" if d is None else d for d in p.shape)
                    raise SignatureError(f"{where}: expected shape {want}, got {a.shape}")
            return self.host_layout(p, a) if copy else a
        # scalar
        if isinstance(a, np.ndarray) and a.ndim > 0:
            raise SignatureError(f"{where}: expected a {p.describe()}, got an array of shape {a.shape}")
        if p.dtype is None:
            if not isinstance(a, np.generic):
                raise SignatureError(
                    f"{where}: the parameter's type is unknown; pass a numpy scalar (np.uint32(...)), got {type(a).__name__}"
                )
            return a
        want = _SCALAR_DTYPE[p.dtype]
        if isinstance(a, np.generic):
            if not _dtype_ok(p.dtype, a.dtype):
                raise SignatureError(f"{where}: expected dtype {PARAM_DTYPES[p.dtype][2]} ({p.dtype}), got {a.dtype}")
            return want(a) if a.dtype != np.dtype(want) else a
        if isinstance(a, bool) or not isinstance(a, int | float):
            raise SignatureError(f"{where}: expected a {p.describe()}, got {type(a).__name__}")
        if p.dtype.startswith(("i", "s", "u")):
            if not isinstance(a, int):
                raise SignatureError(f"{where}: expected an integer ({p.dtype}), got float {a!r}")
            bits = np.dtype(want).itemsize * 8
            lo = -(1 << (bits - 1)) if p.dtype[0] in "is" else 0
            hi = (1 << bits) - 1 if p.dtype[0] in "iu" else (1 << (bits - 1)) - 1
            if not lo <= a <= hi:
                raise SignatureError(f"{where}: {_number(a)} does not fit in {p.dtype} [{lo}, {hi}]")
            return np.array(a & ((1 << bits) - 1), dtype=f"uint{bits}").view(want)[()]
        return _float_param(where, p.dtype, a)


def _number(a: int | float) -> str:
    """``a`` for a message: an integer of more than 24 digits by its size."""
    text = repr(a)
    return text if len(text) <= 24 else f"an integer of {len(text.lstrip('-'))} digits ({text[:6]}...)"


def _float_param(where: str, dtype: str, a: int | float) -> np.generic:
    """A Python int or float as a scalar parameter of float type ``dtype``, rounded to
    nearest even; a finite value that overflows the type is refused (no silent inf).
    A bf16 parameter takes the value's bfloat16 bits."""
    from bulkred_dialect.reference import f64_to_bf16

    try:
        x = float(a)
    except OverflowError:
        raise SignatureError(f"{where}: {_number(a)} does not fit in {dtype}") from None
    with np.errstate(over="ignore"):
        if dtype == "bf16":
            bits = f64_to_bf16(np.float64(x))
            value = float(np.array([int(bits) << 16], dtype=np.uint32).view(np.float32)[0])
            result: np.generic = bits
        else:
            result = _SCALAR_DTYPE[dtype](x)
            value = float(result)
    if np.isinf(value) and not np.isinf(x):
        raise SignatureError(f"{where}: {a!r} does not fit in {dtype} (it would become {value})")
    return result


def signature_to_json(s: KernelSignature) -> dict[str, Any]:
    """A JSON-able record of ``s`` (for the compile cache)."""
    return {
        "name": s.name,
        "params": [
            [p.name, p.kind, p.dtype, None if p.shape is None else list(p.shape)]
            + ([] if p.strides is None else [list(p.strides)])
            for p in s.params
        ],
        "launch": None if s.launch is None else [list(s.launch.grid), list(s.launch.block), list(s.launch.cluster)],
        "shmem": s.shmem,
        "workspace": s.workspace,
        "zero_init": list(s.zero_init),
        "align": list(s.align),
        **({"dims": [[list(pair) for pair in pairs] for pairs in s.dims], "grid_rows": list(s.grid_rows)} if s.dims else {}),
    }


def signature_from_json(d: dict[str, Any]) -> KernelSignature:
    params = tuple(
        Param(n, k, t, None if sh is None else tuple(sh), tuple(st[0]) if st else None)
        for n, k, t, sh, *st in d["params"]
    )
    launch = None if d["launch"] is None else LaunchShape(*(tuple(x) for x in d["launch"]))
    dims = tuple(tuple((int(p), int(a)) for p, a in pairs) for pairs in d.get("dims", ()))
    return KernelSignature(
        d["name"], params, launch, d["shmem"], d["workspace"], tuple(d["zero_init"]), tuple(d.get("align", ())),
        dims, tuple(d.get("grid_rows", ())),
    )


# endregion

# region Signatures from IR


def _type_spelling(t: Any) -> str | None:
    """The element-type spelling of an IR type (``f32``, ``i32``, ``u32``, ``s32`` for a
    signed ``si32``; ``index`` is ``i64``), None when unknown."""
    from xdsl.dialects.builtin import IndexType, IntegerType, Signedness

    if isinstance(t, IndexType):
        return "i64"
    d = of_ir(t)
    if d is None:
        return None
    if isinstance(t, IntegerType) and t.signedness.data == Signedness.SIGNED:
        return f"s{d.bits}"
    return d.short


def _launch_of(func: Any) -> LaunchShape | None:
    from bulkred_dialect.diagnostics import LocatedError
    from bulkred_dialect.ops.tile import kernel_launch
    from xdsl.utils.exceptions import VerifyException

    try:
        a = kernel_launch(func)
    except VerifyException as e:
        raise LocatedError(func, str(e)) from None
    return None if a is None else LaunchShape(a.grid_dims, a.block_dims, a.cluster_dims)


def _int_value(a: Any) -> int | None:
    from xdsl.dialects.builtin import IntAttr, IntegerAttr

    if isinstance(a, IntegerAttr):
        return a.value.data
    if isinstance(a, IntAttr):
        return a.data
    return None


def _workspace_of(func: Any) -> int:
    """``bulkred.workspace = <bytes> : i64`` on the kernel, 0 when absent."""
    from bulkred_dialect.diagnostics import LocatedError

    a = func.attributes.get(WORKSPACE_ATTR)
    if a is None:
        return 0
    n = _int_value(a)
    if n is None or n < 0:
        raise LocatedError(func, f"'{WORKSPACE_ATTR}' must be an integer number of bytes >= 0 (e.g. 64 : i64), got {a}")
    return n


def _zero_init_of(func: Any) -> tuple[int, ...]:
    """``bulkred.zero_init = [i, ...]`` on the kernel, () when absent."""
    from xdsl.dialects.builtin import ArrayAttr

    from bulkred_dialect.diagnostics import LocatedError

    a = func.attributes.get(ZERO_INIT_ATTR)
    if a is None:
        return ()
    values = [_int_value(x) for x in a.data] if isinstance(a, ArrayAttr) else [None]
    if any(v is None for v in values):
        raise LocatedError(func, f"'{ZERO_INIT_ATTR}' must be an array of parameter indices (e.g. [0, 2]), got {a}")
    return tuple(values)  # type: ignore[arg-type]


def _align_of(func: Any) -> tuple[int, ...]:
    """``bulkred.align = [a, ...]`` on the kernel (bytes per user parameter), () when absent."""
    from xdsl.dialects.builtin import ArrayAttr

    from bulkred_dialect.diagnostics import LocatedError

    a = func.attributes.get(ALIGN_ATTR)
    if a is None:
        return ()
    values = [_int_value(x) for x in a.data] if isinstance(a, ArrayAttr) else [None]
    if any(v is None for v in values):
        raise LocatedError(
            func, f"'{ALIGN_ATTR}' must be an array of alignments in bytes, one per parameter (e.g. [16, 1]), got {a}"
        )
    return tuple(values)  # type: ignore[arg-type]


def _dims_of(func: Any, params: list[Param]) -> tuple[tuple[tuple[tuple[int, int], ...], ...], tuple[int, ...]]:
    """``bulkred.dims`` and ``bulkred.grid_rows`` on the kernel; the size parameters
    (the last of ``params``, after the workspace was taken off) are taken off ``params``."""
    from xdsl.dialects.builtin import ArrayAttr

    from bulkred_dialect.diagnostics import LocatedError

    a = func.attributes.get(DIMS_ATTR)
    if a is None:
        if GRID_ROWS_ATTR in func.attributes:
            raise LocatedError(func, f"'{GRID_ROWS_ATTR}' needs '{DIMS_ATTR}' (the size it reads)")
        return (), ()
    entries: list[tuple[tuple[int, int], ...]] = []
    for e in a.data if isinstance(a, ArrayAttr) else [None]:
        pairs = [[_int_value(v) for v in p.data] if isinstance(p, ArrayAttr) else [None] for p in (e.data if isinstance(e, ArrayAttr) else [None])]
        if not pairs or any(len(p) != 2 or None in p for p in pairs):
            raise LocatedError(
                func, f"'{DIMS_ATTR}' must be an array of entries [[param, axis], ...] (e.g. [[[0, 0], [1, 0]]]), got {a}"
            )
        entries.append(tuple((p[0], p[1]) for p in pairs))  # type: ignore[misc]
    sizes = params[len(params) - len(entries):]
    if len(sizes) != len(entries) or any(p.kind != "scalar" or p.dtype not in ("i64", "s64") for p in sizes):
        raise LocatedError(
            func, f"'{DIMS_ATTR}' has {len(entries)} entries: the kernel's last parameters (before the workspace) "
            f"must be as many i64 sizes, got {', '.join(p.describe() for p in sizes) or 'none'}"
        )
    del params[len(params) - len(entries):]
    g = func.attributes.get(GRID_ROWS_ATTR)
    rule = tuple(_int_value(v) for v in g.data) if isinstance(g, ArrayAttr) else () if g is None else (None,)
    if None in rule:
        raise LocatedError(func, f"'{GRID_ROWS_ATTR}' must be [rows per unit, units at most] (e.g. [8, 132]), got {g}")
    return tuple(entries), rule  # type: ignore[return-value]


def signature_of_func(func: Any) -> KernelSignature:
    """The signature of a ``func.func`` kernel: a memref argument is an array of its
    static shape and element type; a ``!ptx.ptr`` argument an array of unknown shape
    and type; an integer or float argument a scalar.

    With ``bulkred.workspace`` the last argument is the workspace buffer, not a user
    parameter; ``bulkred.zero_init`` lists user parameters to zero-fill before a launch;
    ``bulkred.align`` gives the alignment each user parameter's address needs.
    A malformed attribute raises a :class:`~bulkred_dialect.diagnostics.LocatedError`."""
    from xdsl.dialects import func as func_d
    from xdsl.dialects.builtin import MemRefType, StridedLayoutAttr

    from bulkred_dialect.diagnostics import LocatedError
    from bulkred_dialect.ops.ptx.base import PtrType

    if not isinstance(func, func_d.FuncOp):
        raise ArgumentError(f"signature_of_func: 'func' must be a func.func, got {type(func).__name__}")

    params = []
    for i, arg in enumerate(func.body.blocks[0].args if func.body.blocks else ()):
        name = arg.name_hint or f"arg{i}"
        t = arg.type
        if isinstance(t, MemRefType):
            shape = tuple(None if d < 0 else d for d in t.get_shape())
            strides = None
            if isinstance(t.layout, StridedLayoutAttr):  # a view (grid-scope src): read in place
                got = t.get_strides() or []
                if None in got or min(got, default=0) < 0 or t.get_offset() != 0:
                    raise LocatedError(func, f"argument {i}: a view parameter needs static strides >= 0 and offset 0, got {t}")
                strides = tuple(int(x) for x in got)  # type: ignore[arg-type]
            params.append(Param(name, "array", _type_spelling(t.element_type), shape, strides))
        elif isinstance(t, PtrType):
            params.append(Param(name, "array"))
        else:
            params.append(Param(name, "scalar", _type_spelling(t)))
    if not func.body.blocks:
        for i, t in enumerate(func.function_type.inputs.data):
            params.append(Param(f"arg{i}", "array" if isinstance(t, MemRefType | PtrType) else "scalar"))
    name = func.sym_name.data
    workspace, zero_init, align = _workspace_of(func), _zero_init_of(func), _align_of(func)
    if WORKSPACE_ATTR in func.attributes:
        last = params[-1] if params else None
        is_bytes = last is not None and last.dtype == "i8" and last.shape is not None and len(last.shape) == 1
        untyped = last is not None and last.kind == "array" and last.dtype is None
        if not (is_bytes or untyped):
            raise LocatedError(
                func,
                f"'{WORKSPACE_ATTR}' needs a last parameter for the workspace buffer "
                f"(memref<{workspace}xi8, #bulkred.scope<global>> or !ptx.ptr<global>), "
                f"got {last.describe() if last else 'no parameters'}",
            )
        if is_bytes and last.shape[0] is not None and last.shape[0] < workspace:  # type: ignore[union-attr,index]
            raise LocatedError(
                func,
                f"'{WORKSPACE_ATTR}' is {workspace} bytes but the workspace parameter "
                f"'{last.name}' has {last.shape[0]}",  # type: ignore[union-attr,index]
            )
        params.pop()
    dims, grid_rows = _dims_of(func, params)
    if align and dims:  # the size parameters' entries (a lowering that records them pads to every argument)
        align = align[: len(params)]
    sig = KernelSignature(name, tuple(params), _launch_of(func), 0, workspace, zero_init, align, dims, grid_rows)
    problem = sig.contract_problem()
    if problem:
        raise LocatedError(func, problem)
    return sig


def signatures_of_module(module: ModuleOp) -> dict[str, KernelSignature]:
    """One signature per ``func.func`` of ``module`` that has a body."""
    from xdsl.dialects import func as func_d
    from xdsl.dialects.builtin import ModuleOp

    if not isinstance(module, ModuleOp):
        raise ArgumentError(f"signatures_of_module: 'module' must be a builtin.module, got {type(module).__name__}")

    out = {}
    for op in module.walk():
        if isinstance(op, func_d.FuncOp) and op.body.blocks:
            sig = signature_of_func(op)
            out[sig.name] = sig
    return out


def merge_signatures(recorded: KernelSignature | None, lowered: KernelSignature | None) -> KernelSignature | None:
    """Prefer the recorded (tile-level) parameter types and the lowered launch data (a
    grid-scope lowering writes the launch shape)."""
    if recorded is None:
        return lowered
    if lowered is None:
        return recorded
    if len(recorded.params) != len(lowered.params):
        return lowered
    launch = lowered.launch or recorded.launch  # the lowering may set it (grid-scope reductions)
    return KernelSignature(
        recorded.name,
        recorded.params,
        launch,
        recorded.shmem or lowered.shmem,
        lowered.workspace or recorded.workspace,
        lowered.zero_init or recorded.zero_init,
        lowered.align or recorded.align,
        lowered.dims or recorded.dims,
        lowered.grid_rows or recorded.grid_rows,
    )


# endregion
