"""Compile a module for the GPU that is present (or a given arch), load it through
cuda.core and launch its kernels on device arrays (torch, cupy, any DLPack or CUDA
Array Interface object; no copy) or numpy arrays (copied in and out).

This module gathers the public names (it is the one module of ``backend_ptx/`` that
imports the compile driver above it, ``bulkred_dialect/compiler.py``, for ``parse``,
``context``, ``compile_module``, ``compile_tile_module`` and ``lower_tile_module``); each concern has its own file:
``errors.py`` (the exceptions), ``signature.py`` (kernel signatures, read from IR),
``device.py`` (the GPU, its memory and streams), ``arrays.py`` (device arrays and the
caller's stream), ``loading.py`` (assembling and loading a :class:`CompiledModule`),
``launch.py`` (:class:`Kernel`: launching, the bound launchers, timing) and
``cache.py`` (the compile cache); ``compiler.py`` lowers, then prints, assembles and
loads through these.

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

from bulkred_dialect.backend_ptx.assemble import PtxasError
from bulkred_dialect.backend_ptx.device import Gpu, arch_for_compute_capability, current_arch, gpu, gpu_unavailable_reason
from bulkred_dialect.backend_ptx.errors import (
    CudaError,
    KernelTimeoutError,
    LaunchConfigError,
    NoGpuError,
    PipelineError,
    RuntimeErrorBase,
    SignatureError,
)
from bulkred_dialect.backend_ptx.launch import Kernel, resolve_launch
from bulkred_dialect.backend_ptx.loading import CompiledModule, compile_ptx
from bulkred_dialect.backend_ptx.signature import (
    KernelSignature,
    LaunchShape,
    Param,
    signature_of_func,
    signatures_of_module,
)
from bulkred_dialect.compiler import compile_module, compile_tile_module, context, lower_tile_module, parse

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
    "arch_for_compute_capability",
    "compile_module",
    "compile_ptx",
    "compile_tile_module",
    "context",
    "current_arch",
    "gpu",
    "gpu_unavailable_reason",
    "lower_tile_module",
    "parse",
    "resolve_launch",
    "signature_of_func",
    "signatures_of_module",
]
