"""Launching: launch shapes, :class:`Kernel` (argument checks, device arrays, streams,
workspaces) and event timing."""

from __future__ import annotations

import functools
import inspect
import math
import operator
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bulkred_dialect.backend_ptx.arrays import (
    caller_stream,
    check_array_kind,
    check_device_array,
    check_torch_tensor,
    is_device_array_like,
    is_torch_tensor,
    view_of,
)
from bulkred_dialect.backend_ptx.device import Gpu, check_result, gpu
from bulkred_dialect.backend_ptx.errors import CudaError, LaunchConfigError, SignatureError
from bulkred_dialect.backend_ptx.signature import KernelSignature, LaunchShape, Param
from bulkred_dialect.errors import ArgumentError
from bulkred_dialect.ops.kernel_attrs import whole_grid_cluster

if TYPE_CHECKING:  # pragma: no cover
    from bulkred_dialect.backend_ptx.loading import CompiledModule

# region Launch dimensions


def _dims(v: int | Sequence[int], what: str) -> tuple[int, int, int]:
    given = v
    if isinstance(v, int | np.integer) and not isinstance(v, bool):
        v = (int(v),)
    if not isinstance(v, tuple | list) or not all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in v):
        raise LaunchConfigError(f"'{what}' must be 1 to 3 positive integers, got {given!r:.60}")
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
    if sig is not None and not isinstance(sig, KernelSignature):
        raise ArgumentError(f"resolve_launch: 'sig' must be a KernelSignature or None, got {type(sig).__name__}")
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
        if c == (1, 1, 1) and len(sig.grid_rows) > 2 and g[1:] == (1, 1):  # type: ignore[union-attr]
            c = (whole_grid_cluster(sig.grid_rows, g[0]), 1, 1)  # type: ignore[union-attr] (a small grid as one cluster)
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

# region Kernels

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
        dev = check_result(driver.cuDeviceGet(g.device.device_id), "cuDeviceGet")
        check_result(driver.cuKernelSetAttribute(attr, value, h, dev), "cuKernelSetAttribute")
    else:
        check_result(driver.cuFuncSetAttribute(driver.CUfunction(int(h)), attr, value), "cuFuncSetAttribute")


class _CallSignature:
    """``inspect.signature(kernel)``: the keywords of :meth:`Kernel._with_options`
    (``Kernel.__call__`` is a property); the class itself keeps its own signature."""

    def __get__(self, obj: Any, cls: Any = None) -> inspect.Signature | None:
        return None if obj is None else inspect.signature(obj._with_options)


@dataclass
class Kernel:
    """One kernel of a :class:`CompiledModule`; call it on device arrays (no copy) or
    numpy arrays (copied in and out)."""

    module: CompiledModule
    name: str
    signature: KernelSignature | None
    _shapes: dict[Any, tuple[LaunchShape, int]] = field(default_factory=dict, repr=False)
    _configs: dict[tuple[LaunchShape, int], Any] = field(default_factory=dict, repr=False)
    _call: Any = field(default=None, init=False, repr=False, compare=False)
    """What ``kernel(...)`` runs: :meth:`_with_options` (every check), or once a call on
    torch tensors was recorded, its generated short path (see :attr:`__call__`)."""

    def __post_init__(self) -> None:
        self._call = self._with_options

    # region Checks before any GPU call

    def _params(self, n: int) -> tuple[Param, ...]:
        if self.signature is not None:
            if n != len(self.signature.params):
                names = ", ".join(p.name for p in self.signature.params)
                raise SignatureError(
                    f"kernel '{self.name}' takes {len(self.signature.params)} arguments ({names}), got {n}"
                )
            return self.signature.params
        return tuple(Param(f"arg{i}", "array") for i in range(n))

    def _check_host(self, args: Sequence[Any]) -> tuple[tuple[Param, ...], list[Any]]:
        """Check arity, numpy arrays and scalars (device arrays are checked in
        :meth:`__call__`, once the GPU and the stream are known). Returns the params and
        the arguments, numpy arrays as given: no copy is made before the GPU is found
        (:meth:`_host_copies` makes them)."""
        params = self._params(len(args))
        out: list[Any] = []
        for i, (p, a) in enumerate(zip(params, args)):
            if self.signature is None:
                if is_device_array_like(a):
                    out.append(a)
                elif isinstance(a, np.ndarray):
                    out.append(a)
                elif isinstance(a, np.generic):
                    out.append(a)
                else:
                    raise SignatureError(
                        f"kernel '{self.name}' argument {i}: pass device arrays, numpy arrays and numpy "
                        f"scalars (np.uint32(...)), got {type(a).__name__}"
                    )
            elif p.kind == "array" and is_device_array_like(a):
                out.append(a)
            else:
                if p.kind == "array":
                    check_array_kind(f"kernel '{self.name}' param '{p.name}'", p, a)
                out.append(self.signature.check_one(p, a, copy=False))
        return params, out

    def _host_copies(self, params: Sequence[Param], checked: list[Any]) -> list[Any]:
        """The numpy arrays of a checked call as the kernel reads them (new arrays), once
        the GPU is known to be there."""
        if self.signature is None:
            return [np.ascontiguousarray(a).copy() if isinstance(a, np.ndarray) else a for a in checked]
        return [self.signature.host_layout(p, a) if isinstance(a, np.ndarray) and p.kind == "array" else a
                for p, a in zip(params, checked)]

    def _shape(self, grid, block, cluster, shmem) -> tuple[LaunchShape, int]:
        key = (_key(grid), _key(block), _key(cluster), shmem)
        try:
            hit = self._shapes.get(key)
        except TypeError:  # an unhashable spelling (a numpy array): not cached
            key, hit = None, None
        if hit is not None:
            return hit
        shape = resolve_launch(self.signature, grid, block, cluster)
        if shmem is None:
            shmem = self.signature.shmem if self.signature is not None else 0
        if shmem < 0:
            raise LaunchConfigError(f"'shmem' must be >= 0, got {shmem}")
        hit = (shape, int(shmem))
        if key is not None and len(self._shapes) < 64:
            self._shapes[key] = hit
        return hit

    # endregion

    __call__ = property(
        operator.attrgetter("_call"),
        doc="""``kernel(*args, **options)``: launch once. Device arrays are passed by pointer
        and written in place; numpy arrays are copied in, and back after the kernel (which
        waits for it). The launch goes on ``stream``, else the current stream of the torch
        tensors / cupy arrays passed, else the runtime's own stream. Without numpy arrays
        nothing waits unless ``sync=True``. Returns the arrays in parameter order (scalars
        left out): the caller's device arrays themselves, and numpy arrays holding the
        results.

        Keywords (see :meth:`_with_options`): ``grid``, ``block``, ``cluster``,
        ``shmem``, ``stream``, ``sync``, ``timeout_s``.

        A call without keywords on torch tensors like the last checked one takes the
        recorded short path. ``__call__`` is a property that returns the instance's
        ``_call`` (a C-level attribute read), so that this path is the only Python
        frame of such a call: :meth:`_with_options`, or the function generated by
        :class:`_TorchFastPath`, which does every check of that case and hands
        anything else to :meth:`_with_options`.""",
    )

    __signature__ = _CallSignature()

    @property
    def recorded(self) -> bool:
        """Whether a call on torch tensors recorded the short path ``kernel(...)`` takes."""
        return self._call != self._with_options

    def _with_options(
        self,
        *args: Any,
        grid: int | Sequence[int] | None = None,
        block: int | Sequence[int] | None = None,
        cluster: int | Sequence[int] | None = None,
        shmem: int | None = None,
        stream: Any = None,
        sync: bool = False,
        timeout_s: float = 30.0,
    ) -> tuple[Any, ...]:
        """:meth:`__call__` with its keywords spelled out (its signature shows these) and
        every check; records the torch short path after a call without launch keywords
        whose arguments are all torch tensors on torch's current stream."""
        params, checked = self._check_host(args)
        shmem_arg = shmem
        sizes = None
        if self.signature is not None and self.signature.dims:  # a dynamic dimension: its size, the grid from it
            sizes = self.signature.sizes([_shape_of(a) for a in args])
            if grid is None:
                grid = self.signature.grid_for(sizes)
        shape, shmem = self._shape(grid, block, cluster, shmem)
        g = gpu()
        g.ensure_usable()
        checked = self._host_copies(params, checked)
        handle, source = caller_stream(args, stream)
        s = g.stream_for(handle)
        # every device array is checked before anything is launched or allocated
        device: dict[int, tuple[int, int]] = {}
        align = [1] * len(params) if self.signature is None else [self.signature.alignment(i) for i in range(len(params))]
        for i, (p, a) in enumerate(zip(params, checked)):
            if p.kind == "array" and is_device_array_like(a):
                where = f"kernel '{self.name}' param '{p.name}'"
                if source == "torch" and is_torch_tensor(a):
                    # on torch's current stream: no ordering to establish
                    device[i] = check_torch_tensor(where, p, a, g.device.device_id, align[i])
                else:
                    view = view_of(a, int(s.handle), where)
                    device[i] = check_device_array(where, p, view, g.device.device_id, align[i])
        kern = self.module.load_kernel(g, self.name)
        zero = self.signature.zero_init if self.signature is not None else ()
        bufs: list[Any] = []
        host_bufs: dict[int, Any] = {}
        try:
            kargs: list[Any] = []
            for i, a in enumerate(checked):
                if i in device:
                    ptr, nbytes = device[i]
                    if i in zero:
                        g.memset_async(ptr, nbytes, s)
                    kargs.append(ptr)
                elif isinstance(a, np.ndarray):
                    if i in zero:
                        b = g.alloc_ready(a.nbytes)
                        g.memset_async(int(b.handle), a.nbytes, s)
                    else:
                        b = g.to_device(a)
                    bufs.append(b)
                    host_bufs[i] = b
                    kargs.append(b)
                else:
                    kargs.append(a)
            if sizes is not None:
                kargs += [np.int64(v) for v in sizes]
            if self.signature is not None and self.signature.workspace:
                kargs.append(self.module.workspace(g, self.name, self.signature.workspace))
            self._launch(g, kern, shape, shmem, kargs, s)
            if (
                source == "torch" and len(device) == len(args) and not host_bufs
                and (grid is None or sizes is not None) and block is None and cluster is None and shmem_arg is None
            ):
                if sizes is None:
                    self._call = _TorchFastPath(
                        self.name, args, g, kern, self._configs[(shape, shmem)], kargs[len(args):],
                        [i for i in zero if i in device], self._with_options, align,
                    ).kernel_call
                else:
                    self._call = _TorchFastPath(
                        self.name, args, g, kern, None, kargs[len(args) + len(sizes):],
                        [i for i in zero if i in device], self._with_options, align,
                        (self._rows_configs(g, kern, shmem), self.signature.dims[0]),  # type: ignore[union-attr]
                    ).kernel_call
            if host_bufs or sync:
                g.sync(f"kernel '{self.name}'", timeout_s, s)
            outs = []
            for i, (p, a) in enumerate(zip(params, checked)):
                if i in host_bufs:
                    outs.append(g.to_host(host_bufs[i], a))
                elif i in device:
                    outs.append(args[i])
            return tuple(outs)
        finally:
            if g.broken is None:
                for b in bufs:
                    b.close(g.stream)

    def _rows_configs(self, g: Gpu, kern: Any, shmem: int) -> Any:
        """For the short path of a kernel with a dynamic dimension: ``config(size)``, the
        launch config of the grid ``bulkred.grid_rows`` gives for that size (made once per grid)."""
        sig = self.signature
        assert sig is not None
        by_units: dict[int, Any] = {}

        def config(size: int) -> Any:
            ctas = sig.grid_for([size])
            hit = by_units.get(ctas)
            if hit is None:
                shape, _ = self._shape(ctas, None, None, shmem)
                hit = by_units[ctas] = self._config(g, kern, shape, shmem)  # type: ignore[index]
            return hit

        return config

    def _config(self, g: Gpu, kern: Any, shape: LaunchShape, shmem: int) -> Any:
        """cuda.core's ``LaunchConfig`` of ``shape`` (made once), the kernel's opt-ins
        for more than 48 KiB of dynamic shared memory or clusters of more than 8 set."""
        config = self._configs.get((shape, shmem))
        if config is None:
            if shmem > 48 * 1024:
                _set_dynamic_shmem(g, kern, shmem)
            cx, cy, cz = shape.cluster
            if cx * cy * cz > 8:
                _allow_non_portable_cluster(g, kern)
            config = self._configs[(shape, shmem)] = _launch_config(shape, shmem)
        return config

    def _launch(self, g: Gpu, kern, shape: LaunchShape, shmem: int, params: list[Any], stream: Any = None) -> None:
        try:
            config = self._config(g, kern, shape, shmem)
            _cuda_launch()(g.stream if stream is None else stream, config, kern, *params)
        except Exception as e:
            if isinstance(e, CudaError):
                raise
            raise CudaError(
                f"launching kernel '{self.name}' (grid {list(shape.grid)} CTAs, block {list(shape.block)}, "
                f"cluster {list(shape.cluster)}, shmem {shmem})",
                type(e).__name__,
                str(e),
            ) from e

    def bind(
        self, args: Sequence[Any], *, inputs: int | Sequence[int] = 1, order: Sequence[int] | None = None,
        new: Sequence[tuple[int, ...]] | None = None, pack: Any = None, at: Sequence[int] | None = None,
        refused: Any = None,
    ) -> Any:
        """A launcher for a caller that built this kernel for arrays like ``args`` (the
        reduction API, from its plan), or None when the launch layer has none for them
        (then call the kernel, which checks everything).

        ``args``: one CUDA torch tensor per parameter, the ``inputs`` first, then the
        outputs, of the dtypes, shapes and layouts the kernel was built for. The caller
        vouches for those: they are not checked here, nor per call (the caller keys its
        launchers by them). Checked once, here: every argument is a torch tensor on the
        GPU the kernel runs on (else None). ``order``: the kernel's output parameter of
        each of the caller's outputs (default: in order).

        The launcher is ``launcher(a0, ..., out)``, with the inputs as arguments. With
        ``new`` (the caller's shape of each output, as many elements as its parameter's)
        it makes the outputs (``out`` is None) and returns the one, or ``pack(*outputs)``;
        without, ``out`` is the caller's output (a tensor, or a pair: two that must not
        overlap), returned. Per call it checks only what no key proves: the GPU is
        usable, and each array read or written with vector loads wider than its element
        (``bulkred.align``) is at such an address. A call it does not take returns None,
        having done nothing. It launches on torch's current stream, zero-fills the
        ``zero_init`` outputs first, and passes the workspace.

        ``inputs``: how many leading parameters are inputs, or their indices (the row
        kernels' weights come after their outputs); the launcher takes them in that
        order. A kernel with a dynamic dimension (``bulkred.dims``, the row kernels'
        rows) is bound for the sizes of ``args``: the caller's key proves the shapes, so
        the size and the launch config are constants of the launcher.

        ``at`` (with ``new``): the launcher is ``launcher(args)`` instead, taking each
        input from the caller's tuple ``args`` (``args[at[k]]`` the k-th input), and a
        call it does not take returns ``refused(args)`` (a caller's call kept as one
        launcher: no frame of its own around this one)."""
        sig = self.signature
        torch = sys.modules.get("torch")
        if sig is None or torch is None or len(args) != len(sig.params) or not all(isinstance(a, torch.Tensor) for a in args):
            return None
        g = gpu()
        g.ensure_usable()
        dev = g.device.device_id
        if not all(a.is_cuda and a.get_device() == dev for a in args):
            return None
        kern = self.module.load_kernel(g, self.name)
        sizes = sig.sizes([_shape_of(a) for a in args]) if sig.dims else []
        shape, shmem = self._shape(sig.grid_for(sizes) if sizes else None, None, None, None)
        ins = tuple(range(inputs)) if isinstance(inputs, int) else tuple(inputs)
        try:
            config = self._config(g, kern, shape, shmem)
        except Exception as e:
            if isinstance(e, CudaError):
                raise
            raise CudaError(f"a launch config for kernel '{self.name}'", type(e).__name__, str(e)) from e
        extra = [np.int64(v) for v in sizes]  # the sizes after the arrays, then the workspace (as _with_options)
        extra += [self.module.workspace(g, self.name, sig.workspace)] if sig.workspace else []
        return bound_launcher(
            self.name, g, kern, config, extra, args, inputs=ins,
            order=tuple(i for i in range(len(args)) if i not in ins) if order is None else tuple(order), new=new, pack=pack,
            zero=sig.zero_init, align=[sig.alignment(i) for i in range(len(args))], at=at, refused=refused,
        )

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
        the same device buffers, after ``warmup`` launches). Takes numpy arrays."""
        from cuda.core import EventOptions

        if any(is_device_array_like(a) for a in args):
            raise SignatureError(f"kernel '{self.name}': time() takes numpy arrays (it copies them to the GPU once)")
        params, host = self._check_host(args)
        sizes: list[int] = []
        if self.signature is not None and self.signature.dims:
            sizes = self.signature.sizes([_shape_of(a) for a in args])
            grid = self.signature.grid_for(sizes) if grid is None else grid
        shape, shmem = self._shape(grid, block, cluster, shmem)
        g = gpu()
        g.ensure_usable()
        host = self._host_copies(params, host) + [np.int64(v) for v in sizes]
        kern = self.module.load_kernel(g, self.name)
        bufs, params = [], []
        try:
            for a in host:
                if isinstance(a, np.ndarray):
                    b = g.to_device(a)
                    bufs.append(b)
                    params.append(b)
                else:
                    params.append(a)
            if self.signature is not None and self.signature.workspace:
                params.append(self.module.workspace(g, self.name, self.signature.workspace))
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


class _TorchFastPath:
    """The checked call of a kernel whose arguments are all CUDA torch tensors, kept
    for the next calls with tensors of the same dtypes, shapes and device (and
    contiguous): such a call costs a few attribute reads per tensor, torch's current
    stream and the launch. Any other argument goes through every check of
    :meth:`Kernel._with_options`, with its errors.

    ``kernel_call(a0, a1, ...)``, generated for the kernel's arity (no loop, no
    per-argument call), is what ``kernel(...)`` runs (``Kernel._call``): it returns the
    arguments after the launch, and hands any call it does not cover (keywords, another
    arity, an argument that does not match) to :meth:`Kernel._with_options`; an argument
    whose address is not a multiple of its ``bulkred.align`` (checked only for params
    whose alignment exceeds the element size) goes there too, which refuses it."""

    __slots__ = ("kernel_call",)

    def __init__(
        self, name: str, args: tuple, g: Gpu, kern: Any, config: Any, extra: list[Any], zero: list[int],
        full: Any, align: Sequence[int] = (), rows: tuple[Any, Sequence[tuple[int, int]]] | None = None,
    ):
        env = _launch_env(name, g, args[0].get_device(), kern, config, extra)
        env.update(full=full, MISSING=_MISSING, T=sys.modules["torch"].Tensor)
        n = len(args)
        names = [f"a{i}" for i in range(n)]
        checks = []
        # ``rows``: (config(size), the (argument, axis) pairs of the one dynamic size): that
        # axis may differ from the recorded call's; the size is passed and the grid chosen from it
        dynamic = dict(rows[1]) if rows is not None else {}
        for i, a in enumerate(args):
            env[f"d{i}"], env[f"s{i}"] = a.dtype, a.shape
            # a view (a strided param, checked by the full path): the same strides again
            layout = f"a{i}.is_contiguous()" if a.is_contiguous() else f"a{i}.stride() == st{i}"
            if not a.is_contiguous():
                env[f"st{i}"] = a.stride()
            if i in dynamic:
                same = " and ".join([f"a{i}.dim() == {a.dim()}"] + [
                    f"a{i}.shape[{k}] == {d}" for k, d in enumerate(a.shape) if k != dynamic[i]])
            else:
                same = f"a{i}.shape == s{i}"
            checks.append(
                f"isinstance(a{i}, T) and a{i}.dtype is d{i} and {same} and a{i}.get_device() == dev "
                f"and {layout}"
            )
        aligned = [(i, align[i]) for i in range(min(n, len(align))) if align[i] > args[i].element_size()]
        given = ", ".join(names)
        sized = ""
        pointers = [f"p{i}" for i in range(n)]
        if rows is not None:
            (first, ax), *others = rows[1]
            env.update(rows_config=rows[0], I64=np.int64)
            sized = f"    size = a{first}.shape[{ax}]\n"
            if others:
                sized += (f"    if {' or '.join(f'a{q}.shape[{k}] != size' for q, k in others)}:\n"
                          f"        return full({given})\n")
            sized += "    config = rows_config(size)\n    size = I64(size)\n"
            pointers.append("size")
        src = (
            f"def kernel_call({', '.join(f'{a}=MISSING' for a in names)}, *more, **options):\n"
            f"    if more or options or a{n - 1} is MISSING or g.broken is not None:\n"
            f"        return full(*[a for a in ({given},) if a is not MISSING], *more, **options)\n"
            f"    if not ({' and '.join(checks)}):\n"
            f"        return full({given})\n"
            + sized
            + "".join(f"    p{i} = a{i}.data_ptr()\n" for i in range(n))
            + "".join(f"    if p{i} % {a}:\n        return full({given})\n" for i, a in aligned)
            + _launch_tail(pointers, len(extra),
                           [(f"p{i}", f"a{i}.numel() * a{i}.element_size()") for i in zero])
            + f"    return ({given},)\n"
        )
        _generate(src, env, f"<bulkred fast call of {name}>")
        self.kernel_call = env["kernel_call"]


def _launch_env(name: str, g: Gpu, dev: int, kern: Any, config: Any, extra: Sequence[Any]) -> dict[str, Any]:
    """The names a generated launch reads: torch's current-stream function, the GPU's
    streams, the kernel, its config and its extra (workspace) arguments ``e0``..."""
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is None:  # pragma: no cover - every torch with CUDA since 1.x has it
        def raw(i: int) -> int:
            return torch.cuda.current_stream(i).cuda_stream

    env: dict[str, Any] = {
        "g": g, "dev": dev, "raw_stream": raw, "streams": g.streams, "stream_for": g.stream_for,
        "memset": g.memset_async, "launch": _cuda_launch(), "config": config, "kern": kern, "failed": launch_failed,
        "where": f"launching kernel '{name}'",
    }
    for j, e in enumerate(extra):  # the workspace: passed by name, no *extra per call
        env[f"e{j}"] = e
    return env


def _launch_tail(pointers: Sequence[str], n_extra: int, zero: Sequence[tuple[str, str]]) -> str:
    """The end of a generated launch: torch's current stream, the zero-fills
    (``(pointer, bytes)`` expressions), the launch; after a failure, once more when
    :func:`launch_failed` made the GPU's context current on this thread (nothing is
    checked per call on the way there)."""
    args = ", ".join([*pointers, *(f"e{j}" for j in range(n_extra))])
    steps = [f"memset({p}, {nbytes}, s)" for p, nbytes in zero] + [f"launch(s, config, kern, {args})"]

    def run(indent: str) -> str:
        return "".join(f"{indent}{step}\n" for step in steps)

    return (
        "    h = raw_stream(dev)\n"
        "    s = streams.get(h)\n"
        "    if s is None:\n"
        "        s = stream_for(h)\n"
        "    try:\n"
        + run(" " * 8)
        + "    except Exception as e:\n"
        "        failed(g, e, where)\n"
        "        try:\n"
        + run(" " * 12)
        + "        except Exception as e:\n"
        "            failed(g, e, where, again=True)\n"
    )


def launch_failed(g: Gpu, e: Exception, where: str, again: bool = False) -> None:
    """A generated launch (or its zero-fill) raised ``e``: return when this was the first
    try and the calling thread had no context current, which is now the GPU's (the
    launcher tries once more: a thread CUDA had not seen, see ``Gpu.make_current``); else
    raise it as a :class:`CudaError`."""
    if not again and g.make_current():
        return
    if isinstance(e, CudaError):
        raise e
    raise CudaError(where, type(e).__name__, str(e)) from e


SMALL_RESULT = 16 << 10
"""The largest result (bytes) whose launcher keeps a dense private tensor of its shape to
make each result from (``torch.empty_like``, no keyword: the cheapest allocation from
Python); larger ones keep one broadcast element."""


def bound_launcher(
    name: str, g: Gpu, kern: Any, config: Any, extra: Sequence[Any], args: Sequence[Any], *, inputs: int | Sequence[int],
    order: Sequence[int], new: Sequence[tuple[int, ...]] | None, pack: Any, zero: Sequence[int], align: Sequence[int],
    at: Sequence[int] | None = None, refused: Any = None,
) -> Any:
    """The source of :meth:`Kernel.bind`'s launcher, compiled (see there)."""
    torch = sys.modules["torch"]
    n = len(args)
    env = _launch_env(name, g, args[0].get_device(), kern, config, extra)
    inputs = range(inputs) if isinstance(inputs, int) else inputs
    ins = [f"a{i}" for i in inputs]
    lines = []
    if at is not None:  # launcher(args): each input from the caller's tuple, a call refused is refused(args)
        assert new is not None and len(at) == len(ins), (at, ins)
        env["refused"] = refused
        lines += [f"    {a} = args[{j}]\n" for a, j in zip(ins, at)]
    no = "refused(args)" if at is not None else "None"
    lines.append(f"    if g.broken is not None:\n        return {no}\n")
    ptr = [""] * n
    wide = [i for i, a in enumerate(align[:n]) if a > args[i].element_size()]  # read with wider vector loads

    def aligned(i: int) -> None:
        if i in wide:
            lines.append(f"    if {ptr[i]} % {align[i]}:\n        return {no}\n")

    for i in inputs:  # the inputs' addresses first: a call refused has made nothing
        ptr[i] = f"p{i}"
        lines.append(f"    p{i} = a{i}.data_ptr()\n")
        aligned(i)
    outs = [f"r{j}" for j in range(len(order))]
    if new is not None:
        for j, k in enumerate(order):
            # a new result: empty_like of a private tensor of the caller's shape, the param's
            # dtype and device (cheaper than new_empty(shape)). Up to SMALL_RESULT bytes that
            # tensor is dense; a larger result's is one element broadcast, holding no memory
            # of the result's size, and the result is asked for contiguous
            nbytes = args[k].numel() * args[k].element_size()
            # an input of the result's shape and dtype, contiguous (the caller's key proves
            # it): empty_like of it is the result (a row kernel's y), no tensor kept
            same = [i for i in inputs if args[i].dtype == args[k].dtype and tuple(args[i].shape) == tuple(new[j])
                    and args[i].is_contiguous()]
            if same:
                lines.append(f"    r{j} = empty_like(a{same[0]})\n")
            elif nbytes <= SMALL_RESULT:
                env[f"like{j}"] = args[k].new_empty(tuple(new[j]))
                lines.append(f"    r{j} = empty_like(like{j})\n")
            else:
                env[f"like{j}"] = args[k].new_empty(()).expand(tuple(new[j]))
                lines.append(f"    r{j} = empty_like(like{j}, memory_format=dense)\n")
            lines.append(f"    q{j} = r{j}.data_ptr()\n")
            ptr[k] = f"q{j}"
        env["empty_like"], env["dense"] = torch.empty_like, torch.contiguous_format
    else:
        lines.append(f"    {', '.join(outs)}{',' if len(outs) == 1 else ''} = {'(out,)' if len(outs) == 1 else 'out'}\n")
        for j, k in enumerate(order):
            lines.append(f"    q{j} = r{j}.data_ptr()\n")
            ptr[k] = f"q{j}"
            aligned(k)  # (new results: aligned by torch's allocator)
        if len(order) == 2:  # two results: two arrays that do not overlap (the full path says why)
            nbytes = max(args[k].numel() * args[k].element_size() for k in order)
            lines.append(f"    if -{nbytes} < q0 - q1 < {nbytes}:\n        return None\n")
    zeroing = [(ptr[i], str(args[i].numel() * args[i].element_size())) for i in zero]
    if new is None:
        result = "out"
    elif len(order) == 1:
        result = "r0"
    elif pack is None:
        result = f"({', '.join(outs)})"
    elif isinstance(pack, type) and pack.__bases__ == (tuple,) and hasattr(pack, "_fields"):
        # a named tuple (the reductions' pairs): made by tuple.__new__, without the class's
        # generated Python __new__ (one frame fewer per call)
        env["pack"], env["tuple_new"] = pack, tuple.__new__
        result = f"tuple_new(pack, ({', '.join(outs)}))"
    else:
        env["pack"] = pack
        result = f"pack({', '.join(outs)})"
    head = "def launcher(args):\n" if at is not None else f"def launcher({', '.join(ins)}, out):\n"
    src = head + "".join(lines) + _launch_tail(ptr, len(extra), zeroing) + f"    return {result}\n"
    _generate(src, env, f"<bulkred launcher of {name}>")
    return env["launcher"]


def _generate(src: str, env: dict[str, Any], where: str) -> None:
    """The one generated-code site of the package (the launch binder, as Triton's):
    define the functions of ``src`` in ``env``."""
    exec(compile(src, where, "exec"), env)


_MISSING = object()  # an argument not given to a generated kernel_call


@functools.cache
def _cuda_launch() -> Any:
    from cuda.core import launch

    return launch


def _shape_of(a: Any) -> tuple[int, ...] | None:
    """An argument's shape (numpy, torch, cupy, a StridedMemoryView), None without one."""
    shape = getattr(a, "shape", None)
    return None if shape is None else tuple(int(d) for d in shape)


def _key(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


# endregion
