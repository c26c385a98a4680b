"""Compile a module for the GPU that is present (or a given arch), load it through
cuda.core and launch its kernels on numpy arrays.

Three ways in, all giving a :class:`CompiledModule`:

* :func:`compile_ptx` -- PTX text (with an optional signature record per kernel);
* :func:`compile_module` -- a level-3 (ptx-level) ``builtin.module``, printed by
  ``backend_ptx.printer.print_ptx``; the signature of each kernel is read from its
  ``func.func`` (memref or ``!ptx.ptr`` arguments, scalars);
* :func:`compile_tile_module` -- a tile-level module: the signature is recorded from
  the tile-level ``func.func`` (memref shapes and element types), then the
  ``bulkred-to-ptx{target=...}`` pipeline runs and the result is printed.

Assembling needs no GPU (nvJitLink, :mod:`backend_ptx.assemble`); loading and
launching do, and raise :class:`NoGpuError` with the reason when none is usable.
Arguments are checked against the kernel's signature before any GPU call.

Example::

    mod = compile_ptx(ptx_text, signatures=[KernelSignature.of("scale", ("out", "f32", (64,)))])
    (out,) = mod.kernel("scale")(np.zeros(64, np.float32), grid=1, block=64)

``grid`` always counts CTAs, as ``#bulkred.launch`` does (cuda.core's
``LaunchConfig`` counts clusters when a cluster is set; the conversion happens here).
Works with cuda-core 1.2.0 and cuda-bindings 13.x.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bulkred_dialect.backend_ptx.assemble import AssemblerUnavailable, PtxasError, assemble

if TYPE_CHECKING:  # pragma: no cover
    from xdsl.dialects.builtin import ModuleOp

# region Errors


class RuntimeErrorBase(Exception):
    """Base of every error raised by this module."""


class NoGpuError(RuntimeErrorBase):
    """No CUDA driver or GPU is usable; ``reason`` says why."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"no GPU available: {reason}")


class SignatureError(RuntimeErrorBase, TypeError):
    """The arguments do not match the kernel's signature (raised before any GPU call)."""


class LaunchConfigError(RuntimeErrorBase, ValueError):
    """The grid, block, cluster or shared-memory size is not valid."""


class CudaError(RuntimeErrorBase):
    """A CUDA driver call failed: ``call`` and the driver's ``code`` name."""

    def __init__(self, call: str, code: str, detail: str = ""):
        self.call = call
        self.code = code
        super().__init__(f"{call} failed: {code}{': ' + detail if detail else ''}")


class PipelineError(RuntimeErrorBase, ValueError):
    """A malformed or unknown ``pipeline`` spec, with the one-line message ``bulkred-opt -p``
    prints for it."""


class KernelTimeoutError(RuntimeErrorBase):
    """The kernel did not finish within the time limit (a hang, e.g. an mbarrier never completed)."""


# endregion

# region Element types and signatures

# IR element-type spelling -> (bytes, numpy dtype names it accepts, what to call it in errors)
_DTYPES: dict[str, tuple[int, tuple[str, ...], str]] = {
    "f16": (2, ("float16",), "float16"),
    "bf16": (2, ("bfloat16", "uint16", "int16"), "bfloat16 (or its bits as uint16)"),
    "f32": (4, ("float32",), "float32"),
    "f64": (8, ("float64",), "float64"),
    "i8": (1, ("int8", "uint8"), "int8 or uint8"),
    "i16": (2, ("int16", "uint16"), "int16 or uint16"),
    "i32": (4, ("int32", "uint32"), "int32 or uint32"),
    "i64": (8, ("int64", "uint64"), "int64 or uint64"),
    "s8": (1, ("int8",), "int8"),
    "s16": (2, ("int16",), "int16"),
    "s32": (4, ("int32",), "int32"),
    "s64": (8, ("int64",), "int64"),
    "u8": (1, ("uint8",), "uint8"),
    "u16": (2, ("uint16",), "uint16"),
    "u32": (4, ("uint32",), "uint32"),
    "u64": (8, ("uint64",), "uint64"),
}

# The numpy dtype used for a scalar parameter of each element type.
_SCALAR_DTYPE: dict[str, type] = {
    "f16": np.float16,
    "bf16": np.uint16,
    "f32": np.float32,
    "f64": np.float64,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "s8": np.int8,
    "s16": np.int16,
    "s32": np.int32,
    "s64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
}


def _dtype_ok(spec: str, dtype: np.dtype) -> bool:
    return dtype.name in _DTYPES[spec][1]


@dataclass(frozen=True)
class Param:
    """One kernel parameter: an array (a device pointer) or a scalar.

    ``dtype`` is an element-type spelling (``f32``, ``bf16``, ``i32`` (either
    signedness), ``u32``, ``s64`` ...) or None for any; ``shape`` uses None for a
    dimension of any size; a None ``shape`` accepts any shape.
    """

    name: str
    kind: str = "array"  # "array" or "scalar"
    dtype: str | None = None
    shape: tuple[int | None, ...] | None = None

    def __post_init__(self):
        if self.kind not in ("array", "scalar"):
            raise ValueError(f"param '{self.name}': kind must be 'array' or 'scalar', got '{self.kind}'")
        if self.dtype is not None and self.dtype not in _DTYPES:
            raise ValueError(
                f"param '{self.name}': unknown dtype '{self.dtype}' (valid: {', '.join(_DTYPES)})"
            )

    def describe(self) -> str:
        t = self.dtype or "any type"
        if self.kind == "scalar":
            return f"scalar {t}"
        if self.shape is None:
            return f"array of {t}, any shape"
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"array of {t}, shape ({dims}{',' if len(self.shape) == 1 else ''})"


@dataclass(frozen=True)
class LaunchShape:
    """Grid (in CTAs), block and cluster dimensions, each three entries."""

    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    cluster: tuple[int, int, int] = (1, 1, 1)


@dataclass(frozen=True)
class KernelSignature:
    """A kernel's name, parameters in order, and (when known) its launch shape and
    dynamic shared-memory size."""

    name: str
    params: tuple[Param, ...]
    launch: LaunchShape | None = None
    shmem: int = 0

    @staticmethod
    def of(name: str, *params: Param | tuple, launch: LaunchShape | None = None, shmem: int = 0):
        """``KernelSignature.of("k", ("out", "f32", (64,)), ("n", "u32"))``: a tuple with a
        shape (or ``...`` for any shape) is an array; a tuple of two is a scalar."""
        ps = []
        for p in params:
            if isinstance(p, Param):
                ps.append(p)
            elif len(p) == 3:
                shape = None if p[2] is ... else tuple(p[2])
                ps.append(Param(p[0], "array", p[1], shape))
            elif len(p) == 2:
                ps.append(Param(p[0], "scalar", p[1]))
            else:
                raise ValueError(f"param spec {p!r} must be (name, dtype) or (name, dtype, shape)")
        return KernelSignature(name, tuple(ps), launch, shmem)

    def check(self, args: Sequence[Any]) -> list[Any]:
        """Check ``args`` against the parameters; return them normalised (contiguous
        array copies, numpy scalars). Raises :class:`SignatureError` naming the param,
        the expected and the actual shape or dtype."""
        if len(args) != len(self.params):
            names = ", ".join(p.name for p in self.params)
            raise SignatureError(
                f"kernel '{self.name}' takes {len(self.params)} arguments ({names}), got {len(args)}"
            )
        return [self._check_one(p, a) for p, a in zip(self.params, args)]

    def _check_one(self, p: Param, a: Any) -> Any:
        where = f"kernel '{self.name}' param '{p.name}'"
        if p.kind == "array":
            if not isinstance(a, np.ndarray):
                raise SignatureError(f"{where}: expected a numpy array ({p.describe()}), got {type(a).__name__}")
            if p.dtype is not None and not _dtype_ok(p.dtype, a.dtype):
                raise SignatureError(
                    f"{where}: expected dtype {_DTYPES[p.dtype][2]} ({p.dtype}), got {a.dtype}"
                )
            if p.shape is not None:
                ok = len(p.shape) == a.ndim and all(
                    d is None or d == s for d, s in zip(p.shape, a.shape)
                )
                if not ok:
                    want = tuple("?" if d is None else d for d in p.shape)
                    raise SignatureError(f"{where}: expected shape {want}, got {a.shape}")
            return np.ascontiguousarray(a).copy()
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
                raise SignatureError(f"{where}: expected dtype {_DTYPES[p.dtype][2]} ({p.dtype}), got {a.dtype}")
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
                raise SignatureError(f"{where}: {a} does not fit in {p.dtype} [{lo}, {hi}]")
            return np.array(a & ((1 << bits) - 1), dtype=f"uint{bits}").view(want)[()]
        return want(a)


# endregion

# region Signatures from IR


def _type_spelling(t: Any) -> str | None:
    """The element-type spelling of an IR type (``f32``, ``i32``, ``u32`` ...), None when unknown."""
    from xdsl.dialects.builtin import (
        BFloat16Type,
        Float16Type,
        Float32Type,
        Float64Type,
        IndexType,
        IntegerType,
        Signedness,
    )

    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, BFloat16Type):
        return "bf16"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    if isinstance(t, IndexType):
        return "i64"
    if isinstance(t, IntegerType):
        w = t.width.data
        if w not in (8, 16, 32, 64):
            return None
        s = t.signedness.data
        prefix = {Signedness.SIGNLESS: "i", Signedness.SIGNED: "s", Signedness.UNSIGNED: "u"}[s]
        return f"{prefix}{w}"
    return None


def _launch_of(func: Any) -> LaunchShape | None:
    from bulkred_dialect.diagnostics import LocatedError
    from bulkred_dialect.ops.tile import kernel_launch
    from xdsl.utils.exceptions import VerifyException

    try:
        a = kernel_launch(func)
    except VerifyException as e:
        raise LocatedError(func, str(e)) from None
    return None if a is None else LaunchShape(a.grid_dims, a.block_dims, a.cluster_dims)


def signature_of_func(func: Any) -> KernelSignature:
    """The signature of a ``func.func`` kernel: a memref argument is an array of its
    static shape and element type; a ``!ptx.ptr`` argument an array of unknown shape
    and type; an integer or float argument a scalar."""
    from xdsl.dialects.builtin import MemRefType

    from bulkred_dialect.ops.ptx.base import PtrType

    params = []
    for i, arg in enumerate(func.body.blocks[0].args if func.body.blocks else ()):
        name = arg.name_hint or f"arg{i}"
        t = arg.type
        if isinstance(t, MemRefType):
            shape = tuple(None if d < 0 else d for d in t.get_shape())
            params.append(Param(name, "array", _type_spelling(t.element_type), shape))
        elif isinstance(t, PtrType):
            params.append(Param(name, "array"))
        else:
            params.append(Param(name, "scalar", _type_spelling(t)))
    if not func.body.blocks:
        for i, t in enumerate(func.function_type.inputs.data):
            params.append(Param(f"arg{i}", "array" if isinstance(t, MemRefType | PtrType) else "scalar"))
    return KernelSignature(func.sym_name.data, tuple(params), _launch_of(func))


def signatures_of_module(module: ModuleOp) -> dict[str, KernelSignature]:
    """One signature per ``func.func`` of ``module`` that has a body."""
    from xdsl.dialects import func as func_d

    out = {}
    for op in module.walk():
        if isinstance(op, func_d.FuncOp) and op.body.blocks:
            sig = signature_of_func(op)
            out[sig.name] = sig
    return out


def _merge(recorded: KernelSignature | None, lowered: KernelSignature | None) -> KernelSignature | None:
    """Prefer the recorded (tile-level) parameter types, fill launch data from either."""
    if recorded is None:
        return lowered
    if lowered is None:
        return recorded
    if len(recorded.params) != len(lowered.params):
        return lowered
    launch = recorded.launch or lowered.launch
    return KernelSignature(recorded.name, recorded.params, launch, recorded.shmem or lowered.shmem)


# endregion

# region The GPU


def gpu_unavailable_reason() -> str | None:
    """None when a CUDA GPU and driver are usable, else why not (no GPU call is made
    beyond cuInit and cuDeviceGetCount)."""
    try:
        from cuda.bindings import driver
    except Exception as e:  # pragma: no cover - cuda-bindings is a dependency
        return f"cuda.bindings is not importable: {e}"
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:
        return f"no CUDA driver ({type(e).__name__}: {e})"
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"cuInit failed: {err.name}"
    err, n = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"cuDeviceGetCount failed: {err.name}"
    if n == 0:
        return "the CUDA driver sees no GPU"
    return None


def arch_for_compute_capability(major: int, minor: int) -> str:
    """``sm_90a`` for 9.0: the architecture-specific target where one exists (sm_90 and later)."""
    base = f"sm_{major}{minor}"
    return base + "a" if major >= 9 else base


def _check(result: Any, call: str) -> Any:
    """Check a cuda.bindings result tuple ``(CUresult, *values)``; return the values."""
    from cuda.bindings import driver

    if isinstance(result, tuple):
        err, *vals = result
    else:
        err, vals = result, []
    if err != driver.CUresult.CUDA_SUCCESS:
        name = getattr(err, "name", str(err))
        detail = ""
        try:
            e2, s = driver.cuGetErrorString(err)
            if e2 == driver.CUresult.CUDA_SUCCESS and s:
                detail = s.decode() if isinstance(s, bytes) else str(s)
        except Exception:
            pass
        raise CudaError(call, name, detail)
    if not vals:
        return None
    return vals[0] if len(vals) == 1 else tuple(vals)


class Gpu:
    """The current device, its context and one stream (one per process, see :func:`gpu`)."""

    def __init__(self, ordinal: int = 0):
        reason = gpu_unavailable_reason()
        if reason is not None:
            raise NoGpuError(reason)
        from cuda.core import Device

        try:
            self.device = Device(ordinal)
            self.device.set_current()
            self.stream = self.device.create_stream()
        except Exception as e:
            raise NoGpuError(f"cannot use device {ordinal}: {type(e).__name__}: {e}") from e
        cc = self.device.compute_capability
        self.compute_capability = (int(cc[0]), int(cc[1]))
        self.arch = arch_for_compute_capability(*self.compute_capability)
        self.name = self.device.name
        self.broken: str | None = None  # set after a fault or a hang: the context is unusable

    def __repr__(self) -> str:
        return f"Gpu({self.name!r}, {self.arch})"

    def ensure_usable(self) -> None:
        if self.broken is not None:
            raise RuntimeErrorBase(f"the GPU context is unusable after an earlier failure: {self.broken}")

    def sync(self, what: str, timeout_s: float | None = None) -> None:
        """Wait for the stream; raise :class:`CudaError` on a fault and
        :class:`KernelTimeoutError` after ``timeout_s``."""
        from cuda.bindings import driver

        handle = driver.CUstream(int(self.stream.handle))
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        delay = 1e-5
        while True:
            (err,) = driver.cuStreamQuery(handle)
            if err == driver.CUresult.CUDA_SUCCESS:
                break
            if err != driver.CUresult.CUDA_ERROR_NOT_READY:
                self.broken = f"{what}: {err.name}"
                _check((err,), f"{what} (cuStreamQuery)")
            if deadline is not None and time.monotonic() > deadline:
                self.broken = f"{what} did not finish within {timeout_s} s"
                raise KernelTimeoutError(
                    f"{what} did not finish within {timeout_s} s (a hang: an mbarrier phase that "
                    "never completes, a missing arrive, or a wrong expect_tx byte count?)"
                )
            time.sleep(delay)
            delay = min(delay * 2, 1e-3)
        # a fault that happened between the query and now shows up here
        _check(driver.cuCtxSynchronize(), f"{what} (cuCtxSynchronize)")

    def alloc(self, nbytes: int):
        buf = self.device.allocate(max(nbytes, 16), stream=self.stream)
        return buf

    def to_device(self, host: np.ndarray):
        from cuda.bindings import driver

        buf = self.alloc(host.nbytes)
        self.stream.sync()
        if host.nbytes:
            _check(
                driver.cuMemcpyHtoD(driver.CUdeviceptr(int(buf.handle)), host.ctypes.data, host.nbytes),
                "cuMemcpyHtoD",
            )
        return buf

    def to_host(self, buf, host: np.ndarray) -> np.ndarray:
        from cuda.bindings import driver

        if host.nbytes:
            _check(
                driver.cuMemcpyDtoH(host.ctypes.data, driver.CUdeviceptr(int(buf.handle)), host.nbytes),
                "cuMemcpyDtoH",
            )
        return host


_GPU: list[Gpu] = []
_GPU_LOCK = threading.Lock()


def gpu() -> Gpu:
    """The process's :class:`Gpu` (device 0), created on first use; raises :class:`NoGpuError`."""
    with _GPU_LOCK:
        if not _GPU:
            _GPU.append(Gpu(0))
        return _GPU[0]


def current_arch() -> str:
    """The target of the GPU that is present (``sm_90a`` on an H100/H200); raises :class:`NoGpuError`."""
    return gpu().arch


# endregion

# region Launch dimensions


def _dims(v: int | Sequence[int], what: str) -> tuple[int, int, int]:
    if isinstance(v, int | np.integer):
        v = (int(v),)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise LaunchConfigError(f"'{what}' must be 1 to 3 positive integers, got {v}")
    return (v + (1, 1, 1))[:3]  # type: ignore[return-value]


def resolve_launch(
    sig: KernelSignature | None,
    grid: int | Sequence[int] | None,
    block: int | Sequence[int] | None,
    cluster: int | Sequence[int] | None,
) -> LaunchShape:
    """The launch shape from the keyword arguments, else from the signature's ``#bulkred.launch``."""
    rec = sig.launch if sig is not None else None
    name = sig.name if sig is not None else "?"
    if grid is None and rec is None:
        raise LaunchConfigError(f"kernel '{name}' has no recorded launch shape: pass grid= and block=")
    if block is None and rec is None:
        raise LaunchConfigError(f"kernel '{name}' has no recorded launch shape: pass block=")
    g = _dims(grid, "grid") if grid is not None else rec.grid  # type: ignore[union-attr]
    b = _dims(block, "block") if block is not None else rec.block  # type: ignore[union-attr]
    if cluster is not None:
        c = _dims(cluster, "cluster")
    elif rec is not None:
        c = rec.cluster
    else:
        c = (1, 1, 1)
    for axis in range(3):
        if g[axis] % c[axis]:
            raise LaunchConfigError(
                f"'grid' {list(g)} (in CTAs) must be a multiple of 'cluster' {list(c)} in every dimension"
            )
    if math.prod(b) > 1024:
        raise LaunchConfigError(f"'block' {list(b)} has {math.prod(b)} threads, more than 1024")
    return LaunchShape(g, b, c)


def _launch_config(shape: LaunchShape, shmem: int):
    from cuda.core import LaunchConfig

    if shape.cluster == (1, 1, 1):
        return LaunchConfig(grid=shape.grid, block=shape.block, shmem_size=shmem)
    clusters = tuple(g // c for g, c in zip(shape.grid, shape.cluster))
    return LaunchConfig(grid=clusters, cluster=shape.cluster, block=shape.block, shmem_size=shmem)


# endregion

# region Compiled modules and kernels


@dataclass
class CompiledModule:
    """PTX text for one arch, its cubin (when nvJitLink is available), and the
    signatures of its kernels. Loading onto the GPU happens at the first launch."""

    ptx: str
    arch: str | None
    signatures: dict[str, KernelSignature] = field(default_factory=dict)
    cubin: bytes | None = None
    loaded_from: str | None = None  # "cubin" or "ptx" once loaded
    _object: Any = field(default=None, repr=False)
    _kernels: dict[str, Any] = field(default_factory=dict, repr=False)

    def assemble(self, arch: str | None = None) -> bytes:
        """Assemble the PTX with nvJitLink (no GPU needed); raises ``PtxasError``."""
        arch = arch or self.arch
        if arch is None:
            raise LaunchConfigError("no arch given and none recorded: pass arch='sm_90a'")
        cubin = assemble(self.ptx, arch)
        if arch == self.arch:
            self.cubin = cubin
        return cubin

    def _load(self, g: Gpu):
        if self._object is not None:
            return self._object
        from cuda.core import ObjectCode

        errors = []
        if self.cubin is None:
            try:
                self.cubin = assemble(self.ptx, self.arch or g.arch)
            except AssemblerUnavailable as e:
                errors.append(f"nvJitLink: {e}")
        if self.cubin is not None:
            try:
                obj = ObjectCode.from_cubin(self.cubin, name="bulkred")
                self._probe(obj)
                self._object, self.loaded_from = obj, "cubin"
                return obj
            except Exception as e:
                errors.append(f"cubin: {type(e).__name__}: {e}")
        try:
            obj = ObjectCode.from_ptx(self.ptx.encode(), name="bulkred")
            self._probe(obj)
        except Exception as e:
            errors.append(f"PTX JIT: {type(e).__name__}: {e}")
            raise CudaError("loading the module", "load failed", "; ".join(errors)) from e
        self._object, self.loaded_from = obj, "ptx"
        return obj

    def _probe(self, obj) -> None:
        """Force the (lazy) module load so that a failure shows up here."""
        names = _entry_names(self.ptx)
        if names:
            self._kernels[names[0]] = obj.get_kernel(names[0])

    def kernel_names(self) -> list[str]:
        return _entry_names(self.ptx)

    def kernel(self, name: str) -> Kernel:
        """The kernel ``name`` (no GPU call yet)."""
        if name not in self.kernel_names():
            raise KeyError(
                f"no kernel '{name}' in the module (kernels: {', '.join(self.kernel_names()) or 'none'})"
            )
        return Kernel(self, name, self.signatures.get(name))

    def launch(self, name: str, *args: Any, **kw: Any) -> tuple[np.ndarray, ...]:
        """``mod.launch("k", A, B, grid=4, block=64, cluster=2, shmem=0)``: the arrays after the run."""
        return self.kernel(name)(*args, **kw)

    def _cu_kernel(self, g: Gpu, name: str):
        obj = self._load(g)
        if name not in self._kernels:
            try:
                self._kernels[name] = obj.get_kernel(name)
            except Exception as e:
                raise CudaError(f"get_kernel('{name}')", type(e).__name__, str(e)) from e
        return self._kernels[name]


def _entry_names(ptx: str) -> list[str]:
    import re

    return re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)


def _set_dynamic_shmem(g: Gpu, kernel: Any, shmem: int) -> None:
    """Allow more than 48 KiB of dynamic shared memory (an opt-in per kernel)."""
    from cuda.bindings import driver

    _set_kernel_attribute(g, kernel, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shmem)


def _allow_non_portable_cluster(g: Gpu, kernel: Any) -> None:
    """Clusters of more than 8 CTAs (up to 16 on Hopper) are an opt-in per kernel."""
    from cuda.bindings import driver

    _set_kernel_attribute(
        g, kernel, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1
    )


def _set_kernel_attribute(g: Gpu, kernel: Any, attr: Any, value: int) -> None:
    from cuda.bindings import driver

    h = kernel.handle
    if isinstance(h, driver.CUkernel):
        dev = _check(driver.cuDeviceGet(g.device.device_id), "cuDeviceGet")
        _check(driver.cuKernelSetAttribute(attr, value, h, dev), "cuKernelSetAttribute")
    else:
        _check(driver.cuFuncSetAttribute(driver.CUfunction(int(h)), attr, value), "cuFuncSetAttribute")


@dataclass
class Kernel:
    """One kernel of a :class:`CompiledModule`; call it on numpy arrays."""

    module: CompiledModule
    name: str
    signature: KernelSignature | None

    def _args(self, args: Sequence[Any]) -> list[Any]:
        if self.signature is not None:
            return self.signature.check(args)
        out = []
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                out.append(np.ascontiguousarray(a).copy())
            elif isinstance(a, np.generic):
                out.append(a)
            else:
                raise SignatureError(
                    f"kernel '{self.name}' argument {i}: pass numpy arrays and numpy scalars "
                    f"(np.uint32(...)), got {type(a).__name__}"
                )
        return out

    def _prepare(self, args, grid, block, cluster, shmem):
        host = self._args(args)
        shape = resolve_launch(self.signature, grid, block, cluster)
        if shmem is None:
            shmem = self.signature.shmem if self.signature is not None else 0
        if shmem < 0:
            raise LaunchConfigError(f"'shmem' must be >= 0, got {shmem}")
        return host, shape, int(shmem)

    def __call__(
        self,
        *args: Any,
        grid: int | Sequence[int] | None = None,
        block: int | Sequence[int] | None = None,
        cluster: int | Sequence[int] | None = None,
        shmem: int | None = None,
        timeout_s: float = 30.0,
    ) -> tuple[np.ndarray, ...]:
        """Copy the arrays in, launch once, wait (checking errors), copy every array
        back. Returns the arrays after the run, in parameter order (scalars left out)."""
        host, shape, shmem = self._prepare(args, grid, block, cluster, shmem)
        g = gpu()
        g.ensure_usable()
        kern = self.module._cu_kernel(g, self.name)
        bufs = []
        try:
            params = []
            for a in host:
                if isinstance(a, np.ndarray):
                    b = g.to_device(a)
                    bufs.append(b)
                    params.append(b)
                else:
                    params.append(a)
            self._launch(g, kern, shape, shmem, params)
            g.sync(f"kernel '{self.name}'", timeout_s)
            outs = []
            i = 0
            for a in host:
                if isinstance(a, np.ndarray):
                    outs.append(g.to_host(bufs[i], a))
                    i += 1
            return tuple(outs)
        finally:
            if g.broken is None:
                for b in bufs:
                    b.close(g.stream)

    def _launch(self, g: Gpu, kern, shape: LaunchShape, shmem: int, params: list[Any]) -> None:
        from cuda.core import launch

        if shmem > 48 * 1024:
            _set_dynamic_shmem(g, kern, shmem)
        cx, cy, cz = shape.cluster
        if cx * cy * cz > 8:
            _allow_non_portable_cluster(g, kern)
        try:
            launch(g.stream, _launch_config(shape, shmem), kern, *params)
        except Exception as e:
            raise CudaError(
                f"launching kernel '{self.name}' (grid {list(shape.grid)} CTAs, block {list(shape.block)}, "
                f"cluster {list(shape.cluster)}, shmem {shmem})",
                type(e).__name__,
                str(e),
            ) from e

    def time(
        self,
        *args: Any,
        grid=None,
        block=None,
        cluster=None,
        shmem=None,
        repeat: int = 20,
        warmup: int = 3,
        timeout_s: float = 60.0,
    ) -> list[float]:
        """Milliseconds per launch (CUDA events around each of ``repeat`` launches on
        the same device buffers, after ``warmup`` launches)."""
        from cuda.core import EventOptions

        host, shape, shmem = self._prepare(args, grid, block, cluster, shmem)
        g = gpu()
        g.ensure_usable()
        kern = self.module._cu_kernel(g, self.name)
        bufs, params = [], []
        try:
            for a in host:
                if isinstance(a, np.ndarray):
                    b = g.to_device(a)
                    bufs.append(b)
                    params.append(b)
                else:
                    params.append(a)
            for _ in range(warmup):
                self._launch(g, kern, shape, shmem, params)
            g.sync(f"kernel '{self.name}' (warm-up)", timeout_s)
            opts = EventOptions(timing_enabled=True)
            times = []
            for _ in range(repeat):
                start = g.device.create_event(options=opts)
                end = g.device.create_event(options=opts)
                g.stream.record(start)
                self._launch(g, kern, shape, shmem, params)
                g.stream.record(end)
                g.sync(f"kernel '{self.name}' (timed)", timeout_s)
                times.append(float(end - start))
            return times
        finally:
            if g.broken is None:
                for b in bufs:
                    b.close(g.stream)


# endregion

# region Compiling


def _arch_name(target: Any) -> str:
    return str(target if not hasattr(target, "name") else target.name)


def compile_ptx(
    ptx: str | bytes,
    arch: str | None = None,
    signatures: Mapping[str, KernelSignature] | Iterable[KernelSignature] | None = None,
    *,
    assemble_now: bool = True,
) -> CompiledModule:
    """Wrap PTX text; with an ``arch`` assemble it now (nvJitLink, no GPU needed),
    raising ``PtxasError`` with ptxas's log when it is rejected. Without ``arch`` the
    GPU's arch is used at the first launch."""
    text = ptx.decode() if isinstance(ptx, bytes) else ptx
    sigs: dict[str, KernelSignature] = {}
    if signatures is not None:
        items = signatures.values() if isinstance(signatures, Mapping) else signatures
        sigs = {s.name: s for s in items}
    mod = CompiledModule(text, arch, sigs)
    if arch is not None and assemble_now:
        try:
            mod.assemble()
        except AssemblerUnavailable:
            pass  # the driver JIT loads the PTX instead
    return mod


def _target_for(target: Any) -> Any:
    from bulkred_dialect.ops.target import DEFAULT_TARGET, Target

    if target is None:
        try:
            return Target.parse(current_arch())
        except NoGpuError:
            return DEFAULT_TARGET
    if isinstance(target, str):
        return Target.parse(target)
    return target


def compile_module(
    module: ModuleOp,
    target: Any = None,
    signatures: Mapping[str, KernelSignature] | None = None,
) -> CompiledModule:
    """Print a level-3 (ptx-level) module as PTX for ``target`` (default: the GPU's
    arch, else sm_90a) and assemble it. Signatures come from the module's
    ``func.func``s unless given (given ones win)."""
    from bulkred_dialect.backend_ptx.printer import print_ptx

    tgt = _target_for(target)
    found = signatures_of_module(module)
    if signatures:
        found.update(signatures)
    ptx = print_ptx(module, tgt)
    return compile_ptx(ptx, _arch_name(tgt), found)


def context():
    """An xDSL context with the upstream dialects and ours (bulkred, ptx) registered."""
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects

    from bulkred_dialect.universe import BULKRED_DIALECTS

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    for name, factory in BULKRED_DIALECTS.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


def parse(text: str, name: str = "<input>") -> ModuleOp:
    """Parse MLIR text with every dialect registered, and verify it (located errors)."""
    from bulkred_dialect.diagnostics import parse_module, verify_located

    module = parse_module(context(), text, name)
    verify_located(module)
    return module


def lower_tile_module(module: ModuleOp, target: Any = None, pipeline: str | None = None) -> ModuleOp:
    """Run ``bulkred-to-ptx{target=...}`` (or ``pipeline``, any spec ``bulkred-opt -p``
    accepts) on ``module`` in place, verifying after each pass (located errors).

    A malformed spec, an unknown pass or a bad option value raises :class:`PipelineError`
    (a ``ValueError``) before anything runs::

        lower_tile_module(m, pipeline="lower-tile-reductions{explain=maybe}")
        # PipelineError: 'explain' of lower-tile-reductions must be true or false, got 'maybe'
    """
    from xdsl.passes import PassPipeline

    from bulkred_dialect.diagnostics import verify_located
    from bulkred_dialect.pipeline import OptionError, available_passes, build_passes

    tgt = _target_for(target)
    spec = pipeline or f"bulkred-to-ptx{{target={_arch_name(tgt)}}}"
    try:
        passes = build_passes(spec, available_passes())
    except OptionError as e:
        raise PipelineError(str(e)) from None

    def verify_between(_prev: Any, m: ModuleOp, _next: Any) -> None:
        verify_located(m)

    PassPipeline(passes, verify_between).apply(context(), module)  # type: ignore[arg-type]
    verify_located(module)
    return module


def compile_tile_module(module: ModuleOp, target: Any = None, pipeline: str | None = None) -> CompiledModule:
    """Record each tile-level kernel's signature, lower the module to ptx ops
    (``bulkred-to-ptx{target=...}``), print the PTX and assemble it. ``module`` is
    lowered in place (clone it first to keep it)."""
    tgt = _target_for(target)
    recorded = signatures_of_module(module)
    lower_tile_module(module, tgt, pipeline)
    lowered = signatures_of_module(module)
    sigs = {}
    for name in set(recorded) | set(lowered):
        s = _merge(recorded.get(name), lowered.get(name))
        if s is not None:
            sigs[name] = s
    return compile_module(module, tgt, sigs)


# endregion

__all__ = [
    "CompiledModule",
    "CudaError",
    "Gpu",
    "Kernel",
    "KernelSignature",
    "KernelTimeoutError",
    "LaunchConfigError",
    "LaunchShape",
    "NoGpuError",
    "Param",
    "PipelineError",
    "PtxasError",
    "RuntimeErrorBase",
    "SignatureError",
    "compile_module",
    "compile_ptx",
    "compile_tile_module",
    "current_arch",
    "gpu",
    "gpu_unavailable_reason",
    "lower_tile_module",
    "parse",
    "signature_of_func",
    "signatures_of_module",
]
