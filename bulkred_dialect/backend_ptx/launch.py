"""Launching: launch shapes, :class:`Kernel` (argument checks, device arrays, streams,
workspaces) and event timing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bulkred_dialect.backend_ptx.device import Gpu, _check, gpu
from bulkred_dialect.backend_ptx.errors import CudaError, LaunchConfigError, SignatureError
from bulkred_dialect.backend_ptx.signature import KernelSignature, LaunchShape

if TYPE_CHECKING:  # pragma: no cover
    from bulkred_dialect.backend_ptx.loading import CompiledModule

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
