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
from bulkred_dialect.backend_ptx.device import Gpu, _check, gpu
from bulkred_dialect.backend_ptx.errors import CudaError, LaunchConfigError, SignatureError
from bulkred_dialect.backend_ptx.signature import KernelSignature, LaunchShape, Param
from bulkred_dialect.errors import ArgumentError

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
        dev = _check(driver.cuDeviceGet(g.device.device_id), "cuDeviceGet")
        _check(driver.cuKernelSetAttribute(attr, value, h, dev), "cuKernelSetAttribute")
    else:
        _check(driver.cuFuncSetAttribute(driver.CUfunction(int(h)), attr, value), "cuFuncSetAttribute")


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
    _fast: _TorchFastPath | None = field(default=None, repr=False)
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
        the arguments, numpy arrays as contiguous copies."""
        params = self._params(len(args))
        out: list[Any] = []
        for i, (p, a) in enumerate(zip(params, args)):
            if self.signature is None:
                if is_device_array_like(a):
                    out.append(a)
                elif isinstance(a, np.ndarray):
                    out.append(np.ascontiguousarray(a).copy())
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
                out.append(self.signature._check_one(p, a))
        return params, out

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
        shape, shmem = self._shape(grid, block, cluster, shmem)
        g = gpu()
        g.ensure_usable()
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
        kern = self.module._cu_kernel(g, self.name)
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
            if self.signature is not None and self.signature.workspace:
                kargs.append(self.module._workspace(g, self.name, self.signature.workspace))
            self._launch(g, kern, shape, shmem, kargs, s)
            if (
                source == "torch" and len(device) == len(args) and not host_bufs
                and grid is None and block is None and cluster is None and shmem_arg is None
            ):
                self._fast = _TorchFastPath(
                    self.name, args, g, kern, self._configs[(shape, shmem)], kargs[len(args):],
                    [i for i in zero if i in device], self._with_options, align,
                )
                self._call = self._fast.kernel_call
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

    def _launch(self, g: Gpu, kern, shape: LaunchShape, shmem: int, params: list[Any], stream: Any = None) -> None:
        launch = _cuda_launch()
        if shmem > 48 * 1024:
            _set_dynamic_shmem(g, kern, shmem)
        cx, cy, cz = shape.cluster
        if cx * cy * cz > 8:
            _allow_non_portable_cluster(g, kern)
        config = self._configs.get((shape, shmem))
        try:
            if config is None:
                config = self._configs[(shape, shmem)] = _launch_config(shape, shmem)
            launch(g.stream if stream is None else stream, config, kern, *params)
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
        the same device buffers, after ``warmup`` launches). Takes numpy arrays."""
        from cuda.core import EventOptions

        if any(is_device_array_like(a) for a in args):
            raise SignatureError(f"kernel '{self.name}': time() takes numpy arrays (it copies them to the GPU once)")
        _, host = self._check_host(args)
        shape, shmem = self._shape(grid, block, cluster, shmem)
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
            if self.signature is not None and self.signature.workspace:
                params.append(self.module._workspace(g, self.name, self.signature.workspace))
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

    Two functions are generated for the kernel's arity (no loop, no per-argument
    call), from one body:

    * ``kernel_call(a0, a1, ...)`` is what ``kernel(...)`` runs (``Kernel._call``): it
      returns the arguments after the launch, and hands any call it does not cover
      (keywords, another arity, an argument that does not match) to
      :meth:`Kernel._with_options`;
      an argument whose address is not a multiple of its ``bulkred.align`` (checked
      only for params whose alignment exceeds the element size) goes there too, which
      refuses it;
    * ``call_new_last(lead)`` (for two arguments or more)
      takes all but the last argument and launches on a new result tensor, which it
      returns: the reduction API's ``bulkred.sum(x)``;
    * ``call_new_last2(lead)`` (for three arguments or more) likewise with the last two
      arguments new, returned as a pair: ``bulkred.var_mean(x)``."""

    __slots__ = ("_call_src", "_env", "_n", "_new_last_src", "_shaped", "call_new_last", "call_new_last2", "kernel_call")

    def __init__(
        self, name: str, args: tuple, g: Gpu, kern: Any, config: Any, extra: list[Any], zero: list[int],
        full: Any, align: Sequence[int] = (),
    ):
        torch = sys.modules["torch"]
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is None:  # pragma: no cover - every torch with CUDA since 1.x has it
            def raw(i: int) -> int:
                return torch.cuda.current_stream(i).cuda_stream

        env: dict[str, Any] = {
            "T": torch.Tensor, "g": g, "dev": args[0].get_device(), "raw_stream": raw, "streams": g._streams,
            "stream_for": g.stream_for, "memset": g.memset_async, "launch": _cuda_launch(), "config": config,
            "kern": kern, "CudaError": CudaError, "where": f"launching kernel '{name}'", "full": full,
            "MISSING": _MISSING,
        }
        n = len(args)
        self._new_last_src: str | None = None  # call_new_last's source (new_last_as compiles it again)
        names = [f"a{i}" for i in range(n)]
        checks = []
        for i, a in enumerate(args):
            env[f"d{i}"], env[f"s{i}"] = a.dtype, a.shape
            # a view (a strided param, checked by the full path): the same strides again
            layout = f"a{i}.is_contiguous()" if a.is_contiguous() else f"a{i}.stride() == st{i}"
            if not a.is_contiguous():
                env[f"st{i}"] = a.stride()
            checks.append(
                f"isinstance(a{i}, T) and a{i}.dtype is d{i} and a{i}.shape == s{i} and a{i}.get_device() == dev "
                f"and {layout}"
            )
        # the reduction API's new-result calls: an input that requires grad goes to its
        # autograd path instead (None: not this short path)
        grad_free = [f"{c} and not a{i}.requires_grad" for i, c in enumerate(checks)]
        for j, e in enumerate(extra):  # the workspace: passed by name, no *extra per call
            env[f"e{j}"] = e
        launch_args = ", ".join([*(f"p{i}" for i in range(n)), *(f"e{j}" for j in range(len(extra)))])
        zeroing = "".join(f"    memset(p{i}, a{i}.numel() * a{i}.element_size(), s)\n" for i in zero)
        # params read with vector loads wider than an element (bulkred.align): their
        # address is checked; a mismatch goes to ``mismatch`` (the full path refuses it)
        aligned = [(i, align[i]) for i in range(min(n, len(align))) if align[i] > args[i].element_size()]

        def body(mismatch: str, new_last: bool | int = False) -> str:
            fresh = int(new_last)  # the trailing arguments allocated here (aligned by torch)
            checks_align = "".join(
                f"    if p{i} % {a}:\n        {mismatch}\n" for i, a in aligned if not i >= n - fresh
            )
            return (
                "".join(f"    p{i} = a{i}.data_ptr()\n" for i in range(n))
                + checks_align
                + "    h = raw_stream(dev)\n"
                "    s = streams.get(h)\n"
                "    if s is None:\n"
                "        s = stream_for(h)\n"
                + zeroing
                + "    try:\n"
                f"        launch(s, config, kern, {launch_args})\n"
                "    except Exception as e:\n"
                "        raise CudaError(where, type(e).__name__, str(e)) from e\n"
            )

        given = ", ".join(names)
        # kernel(...) itself: positional arguments (missing ones are MISSING), anything
        # it does not cover goes to the fully checked call, which raises its errors
        src = (
            f"def kernel_call({', '.join(f'{a}=MISSING' for a in names)}, *more, **options):\n"
            f"    if more or options or a{n - 1} is MISSING or g.broken is not None:\n"
            f"        return full(*[a for a in ({given},) if a is not MISSING], *more, **options)\n"
            f"    if not ({' and '.join(checks)}):\n"
            f"        return full({given})\n"
            + body(f"return full({given})") + f"    return ({given},)\n"
        )
        if n >= 2:
            # call_new_last: the last argument a new tensor like the recorded last one (its
            # shape and dtype: argmax's int64 too): torch.empty_like of a private tensor of that shape (same device and
            # dtype), about 0.3 to 0.7 us cheaper than a0.new_empty(shape) on an H100 host
            # lead: all but the last argument; None, having done nothing, for a mismatch
            env["empty_like"], env["like"] = torch.empty_like, args[-1].new_empty(tuple(args[-1].shape))
            new_last = (
                "def call_new_last(lead):\n"
                f"    if len(lead) != {n - 1} or g.broken is not None:\n"
                "        return None\n"
                f"    {', '.join(names[:-1])}, = lead\n"
                f"    if not ({' and '.join(grad_free[:-1])}):\n"
                "        return None\n"
                f"    a{n - 1} = empty_like(like)\n"
                + body("return None", new_last=True) + f"    return a{n - 1}\n"
            )
            src += new_last
            self._new_last_src = new_last
        if n >= 3:
            # call_new_last2: the last two arguments new (var_mean's variance and mean)
            env["like2"] = args[-2].new_empty(tuple(args[-2].shape))
            src += (
                "def call_new_last2(lead):\n"
                f"    if len(lead) != {n - 2} or g.broken is not None:\n"
                "        return None\n"
                f"    {', '.join(names[:-2])}, = lead\n"
                f"    if not ({' and '.join(grad_free[:-2])}):\n"
                "        return None\n"
                f"    a{n - 2} = empty_like(like2)\n"
                f"    a{n - 1} = empty_like(like)\n"
                + body("return None", new_last=2) + f"    return a{n - 2}, a{n - 1}\n"
            )
        self._call_src, self._n = src[: src.index("def call_new_last")] if n >= 2 else src, n
        _generate(src, env, f"<bulkred fast call of {name}>")
        self.kernel_call = env["kernel_call"]
        self.call_new_last = env.get("call_new_last")
        self.call_new_last2 = env.get("call_new_last2")
        self._env = env
        self._shaped: dict[tuple[int, ...], Any] = {}

    def call_as(self, shapes: tuple[tuple[int, ...], ...]) -> Any:
        """``kernel_call`` whose trailing arguments have ``shapes`` (as many elements as the
        kernel's: a whole reduction's 0-d ``out=`` for its ``(1,)`` destination, with no
        ``view`` per call); any other call goes to the full checks, as ``kernel_call``'s."""
        key = ("call", *shapes)
        fn = self._shaped.get(key)
        if fn is None:
            env = dict(self._env)
            for j, shape in enumerate(shapes):
                i = self._n - len(shapes) + j
                if math.prod(shape) != math.prod(env[f"s{i}"]):
                    raise ValueError(f"an argument of shape {shape} for a parameter of shape {tuple(env[f's{i}'])}")
                env[f"s{i}"] = tuple(shape)
            _generate(self._call_src, env, "<bulkred fast call, shaped>")
            fn = self._shaped[key] = env["kernel_call"]
        return fn

    def new_last_as(self, shape: tuple[int, ...]) -> Any:
        """``call_new_last`` whose new last argument has ``shape`` (as many elements as
        the kernel's: a whole reduction's 0-d result for its ``(1,)`` destination, with
        no ``view`` per call), or None for a kernel of fewer than two arguments."""
        fn = self._shaped.get(shape)
        if fn is None and self._new_last_src is not None:
            env = dict(self._env)
            env["like"] = env["like"].new_empty(shape)
            if env["like"].numel() != self._env["like"].numel():
                raise ValueError(f"a result of shape {shape} for a destination of shape {tuple(self._env['like'].shape)}")
            _generate(self._new_last_src, env, "<bulkred fast call, result shaped>")
            fn = self._shaped[shape] = env["call_new_last"]
        return fn


def _generate(src: str, env: dict[str, Any], where: str) -> None:
    """The one generated-code site of the package (the launch binder, as Triton's):
    define the functions of ``src`` in ``env``."""
    exec(compile(src, where, "exec"), env)


_MISSING = object()  # an argument not given to a generated kernel_call


@functools.cache
def _cuda_launch() -> Any:
    from cuda.core import launch

    return launch


def _key(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


# endregion
