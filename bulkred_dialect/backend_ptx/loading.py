"""Assembling and loading: PTX text, or a level-3 module printed as PTX, becomes a
:class:`CompiledModule` (PTX, cubin, kernel signatures), kept in the compile cache
(:mod:`.cache`) and loaded through cuda.core at the first launch. Lowering a tile-level
module is the compile driver's (``bulkred_dialect/compiler.py``): nothing here runs a pass."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bulkred_dialect.backend_ptx.assemble import AssemblerUnavailable, assemble
from bulkred_dialect.backend_ptx.cache import CACHE, make_key
from bulkred_dialect.backend_ptx.device import Gpu
from bulkred_dialect.backend_ptx.errors import CudaError, LaunchConfigError, SignatureError
from bulkred_dialect.backend_ptx.launch import Kernel
from bulkred_dialect.backend_ptx.signature import (
    KernelSignature,
    signature_from_json,
    signature_to_json,
    signatures_of_module,
)
from bulkred_dialect.errors import ArgumentError, AssembleError, KernelNotFoundError
from bulkred_dialect.ops.target import Target, arch_name

if TYPE_CHECKING:  # pragma: no cover
    from xdsl.dialects.builtin import ModuleOp

# region Compiled modules


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
    _kernel_objects: dict[str, Kernel] = field(default_factory=dict, repr=False)
    _workspaces: dict[tuple[str, int], Any] = field(default_factory=dict, repr=False)

    def assemble(self, arch: Target | str | None = None) -> bytes:
        """Assemble the PTX with nvJitLink (no GPU needed); raises ``PtxasError``."""
        arch = arch_name(arch) if arch is not None else self.arch
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
            kern = obj.get_kernel(names[0])
            _load_function(kern)
            self._kernels[names[0]] = kern

    def kernel_names(self) -> list[str]:
        return _entry_names(self.ptx)

    def kernel(self, name: str) -> Kernel:
        """The kernel ``name`` (no GPU call yet)."""
        if not isinstance(name, str):
            raise ArgumentError(f"'name' must be a kernel name (a str), got {type(name).__name__} {name!r:.40}")
        k = self._kernel_objects.get(name)
        if k is not None:
            return k
        if name not in self.kernel_names():
            raise KernelNotFoundError(
                f"no kernel '{name}' in the module (kernels: {', '.join(self.kernel_names()) or 'none'})"
            )
        k = self._kernel_objects[name] = Kernel(self, name, self.signatures.get(name))
        return k

    def workspace(self, g: Gpu, name: str, nbytes: int) -> Any:
        """Kernel ``name``'s workspace on ``g``: ``nbytes`` zero bytes, allocated at its
        first launch and kept with the module (the kernel leaves it zeroed again)."""
        key = (name, g.device.device_id)
        buf = self._workspaces.get(key)
        if buf is None:
            buf = self._workspaces[key] = g.zeroed(nbytes)
        return buf

    def launch(self, name: str, *args: Any, **kw: Any) -> tuple[Any, ...]:
        """``mod.launch("k", A, B, grid=4, block=64, cluster=2, shmem=0)``: the arrays after the run."""
        return self.kernel(name)(*args, **kw)

    def load_kernel(self, g: Gpu, name: str):
        """Kernel ``name``, its code loaded into the context now: under CUDA's lazy
        loading the first launch would load it, and loading waits for the work of
        every stream, the caller's included (a call must not wait). Loading needs a context
        current on the calling thread (``Gpu.make_current``: torch runs a backward on a
        thread of its own)."""
        kern = self._kernels.get(name)
        if kern is not None:
            return kern
        g.make_current()
        obj = self._load(g)
        kern = self._kernels.get(name)  # the module's first kernel: loaded by _load's probe
        if kern is None:
            try:
                kern = obj.get_kernel(name)
            except Exception as e:
                raise CudaError(f"get_kernel('{name}')", type(e).__name__, str(e)) from e
            _load_function(kern)
            self._kernels[name] = kern
        return kern


def _load_function(kern: Any) -> None:
    """``cuFuncLoad`` the function of a cuda.core kernel in the current context."""
    from cuda.bindings import driver

    from bulkred_dialect.backend_ptx.device import check_result

    h = kern.handle
    if isinstance(h, driver.CUkernel):
        func = check_result(driver.cuKernelGetFunction(h), "cuKernelGetFunction")
    else:
        func = driver.CUfunction(int(h))
    check_result(driver.cuFuncLoad(func), "cuFuncLoad")


def _entry_names(ptx: str) -> list[str]:
    import re

    return re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)


# endregion

# region Compiling


def given_signatures(
    fn: str, signatures: Mapping[str, KernelSignature] | Iterable[KernelSignature] | None
) -> dict[str, KernelSignature]:
    """``signatures`` by kernel name (a mapping's own keys); anything but KernelSignatures
    is a :class:`SignatureError`."""
    if signatures is None:
        return {}
    if isinstance(signatures, str | bytes) or not isinstance(signatures, Mapping | Iterable):
        raise SignatureError(
            f"{fn}: 'signatures' must be KernelSignatures (a list, or a dict by kernel name), "
            f"got {type(signatures).__name__}"
        )
    items = list(signatures.values() if isinstance(signatures, Mapping) else signatures)
    for s in items:
        if not isinstance(s, KernelSignature):
            raise SignatureError(f"{fn}: 'signatures' must hold KernelSignatures, got {type(s).__name__}")
    return dict(signatures) if isinstance(signatures, Mapping) else {s.name: s for s in items}


def _ptx_text(ptx: Any) -> str:
    if isinstance(ptx, bytes):
        try:
            return ptx.decode()
        except UnicodeDecodeError as e:
            raise AssembleError(
                f"compile_ptx: the PTX is not UTF-8 text (byte {ptx[e.start]:#04x} at offset {e.start})"
            ) from None
    if not isinstance(ptx, str):
        raise ArgumentError(f"compile_ptx: 'ptx' must be PTX text (str or bytes), got {type(ptx).__name__}")
    return ptx


def compile_ptx(
    ptx: str | bytes,
    arch: Target | str | None = None,
    signatures: Mapping[str, KernelSignature] | Iterable[KernelSignature] | None = None,
    *,
    assemble_now: bool = True,
) -> CompiledModule:
    """Wrap PTX text; with an ``arch`` assemble it now (nvJitLink, no GPU needed),
    raising ``PtxasError`` with ptxas's log when it is rejected. Without ``arch`` the
    GPU's arch is used at the first launch. The cubin is cached (:mod:`.cache`)."""
    text = _ptx_text(ptx)
    arch = arch_name(arch) if arch is not None else None
    sigs = {s.name: s for s in given_signatures("compile_ptx", signatures).values()}
    mod = CompiledModule(text, arch, sigs)
    if arch is not None and assemble_now:
        key = make_key({"what": "cubin", "ptx": text, "arch": arch})

        def build() -> bytes | None:
            try:
                return mod.assemble()
            except AssemblerUnavailable:
                return None  # the driver JIT loads the PTX instead

        mod.cubin = CACHE.get_or_build(key, build)
    return mod


def check_module_arg(fn: str, module: Any) -> None:
    """``module`` is a ``builtin.module``, else an :class:`ArgumentError` naming ``fn``."""
    from xdsl.dialects.builtin import ModuleOp

    if not isinstance(module, ModuleOp):
        raise ArgumentError(
            f"{fn}: 'module' must be a builtin.module (from parse() or the builder), got {type(module).__name__}"
        )


def print_and_assemble(module: ModuleOp, tgt: Target, signatures: Mapping[str, KernelSignature] | None) -> CompiledModule:
    """Print a level-3 module for ``tgt`` and assemble it (when nvJitLink is there): its
    kernels' signatures read from the module, ``signatures`` winning."""
    from bulkred_dialect.backend_ptx.printer import print_ptx

    found = signatures_of_module(module)
    if signatures:
        found.update(signatures)
    ptx = print_ptx(module, tgt)
    mod = CompiledModule(ptx, tgt.name, found)
    try:
        mod.assemble()
    except AssemblerUnavailable:
        pass  # the driver JIT loads the PTX instead
    return mod


def cached_module(key: str, build: Callable[[], CompiledModule]) -> CompiledModule:
    """The module cached under ``key`` (:mod:`.cache`), else ``build()``, stored when it
    has a cubin. Each call gives a new :class:`CompiledModule` (loaded at its first launch)."""
    payload = CACHE.get(key)
    if payload is not None:
        return module_from_payload(payload)
    mod = build()
    if mod.cubin is not None:
        CACHE.put(key, module_payload(mod))
    return mod


def module_payload(mod: CompiledModule) -> bytes:
    """What a cache entry holds: PTX, arch, cubin and signatures."""
    record = {
        "ptx": mod.ptx,
        "arch": mod.arch,
        "cubin": base64.b64encode(mod.cubin).decode() if mod.cubin is not None else None,
        "signatures": [signature_to_json(s) for s in mod.signatures.values()],
    }
    return json.dumps(record).encode()


def module_from_payload(payload: bytes) -> CompiledModule:
    r = json.loads(payload)
    sigs = {d["name"]: signature_from_json(d) for d in r["signatures"]}
    cubin = base64.b64decode(r["cubin"]) if r["cubin"] is not None else None
    return CompiledModule(r["ptx"], r["arch"], sigs, cubin)


# endregion
