"""The compile driver: a tile-level module lowered with the pipeline (``passes/``),
printed as PTX, assembled and loaded (``backend_ptx/``), kept in the compile cache.

It stands above both: the passes know nothing of PTX text or cubins, and the backend
prints, assembles and loads what it is given (it runs no pass). Each public entry point
checks its arguments and resolves the target once, then calls the steps below, which
check nothing again::

    compile_tile_module(module, "sm_100a")   # lower (bulkred-to-ptx), print, assemble
    compile_module(module)                    # a level-3 module: print, assemble
    compile_keyed(key, build, target)         # the reduction API: a cache entry of its own
    parse(text, "file.mlir")                  # text to a verified module (the package's context)

The runtime's public names (``backend_ptx/runtime.py``) include these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from bulkred_dialect.backend_ptx.cache import make_key
from bulkred_dialect.backend_ptx.errors import NoGpuError, PipelineError
from bulkred_dialect.backend_ptx.loading import (
    CompiledModule,
    cached_module,
    check_module_arg,
    given_signatures,
    print_and_assemble,
)
from bulkred_dialect.backend_ptx.signature import KernelSignature, merge_signatures, signature_to_json, signatures_of_module
from bulkred_dialect.errors import ArgumentError, ParseError
from bulkred_dialect.ops.target import DEFAULT_TARGET, Target

if TYPE_CHECKING:  # pragma: no cover
    from xdsl.dialects.builtin import ModuleOp


def context():
    """A new xDSL context of the package (``universe.context``: xDSL's upstream dialects,
    then bulkred's), to parse text and run passes in."""
    from bulkred_dialect.universe import context as new_context

    return new_context()


def parse(text: str | bytes, name: str = "<input>") -> ModuleOp:
    """Parse MLIR text with every dialect registered, and verify it (located errors:
    :class:`~bulkred_dialect.errors.ParseError`, ``LocatedError``)."""
    from xdsl.utils.exceptions import ParseError as XdslParseError

    from bulkred_dialect.diagnostics import parse_error_line, parse_module, verify_located

    if not isinstance(text, str | bytes):
        raise ArgumentError(f"parse: 'text' must be MLIR text (str or bytes), got {type(text).__name__}")
    if not isinstance(name, str):
        raise ArgumentError(f"parse: 'name' must be a str, got {type(name).__name__}")
    if isinstance(text, bytes):
        try:
            text = text.decode()
        except UnicodeDecodeError as e:
            raise ParseError(f"{name}: error: not UTF-8 text (byte {text[e.start]:#04x} at offset {e.start})") from None
    try:
        module = parse_module(context(), text, name)
    except XdslParseError as e:
        raise ParseError(parse_error_line(e)) from None
    verify_located(module)
    return module


def target_for(target: Target | str | None) -> Target:
    """The target of a public call, resolved once: the given one (a name is parsed),
    else the GPU's, else sm_90a."""
    if target is None:
        from bulkred_dialect.backend_ptx.device import current_arch

        try:
            return Target.parse(current_arch())
        except NoGpuError:
            return DEFAULT_TARGET
    if isinstance(target, Target):
        return target
    return Target.parse(target)


def _check_pipeline(fn: str, pipeline: Any) -> None:
    if pipeline is not None and not isinstance(pipeline, str):
        raise PipelineError(
            f"{fn}: 'pipeline' must be a pass pipeline such as 'bulkred-to-ptx{{target=sm_90a}}', "
            f"got {type(pipeline).__name__}"
        )


def lower_tile_module(
    module: ModuleOp, target: Target | str | None = None, pipeline: str | None = None, *, verify_each: bool = False
) -> ModuleOp:
    """Run ``bulkred-to-ptx{target=...}`` (or ``pipeline``, any spec ``bulkred-opt -p``
    accepts) on ``module`` in place, verifying the input and the result (and after every
    pass with ``verify_each``; located errors).

    A malformed spec, an unknown pass or a bad option value raises :class:`PipelineError`
    (a ``ValueError``) before anything runs::

        lower_tile_module(m, pipeline="lower-tile-reductions{explain=maybe}")
        # PipelineError: 'explain' of lower-tile-reductions must be true or false, got 'maybe'
    """
    check_module_arg("lower_tile_module", module)
    _check_pipeline("lower_tile_module", pipeline)
    _lower(module, target_for(target), pipeline, verify_each=verify_each)
    return module


def _lower(
    module: ModuleOp, tgt: Target, pipeline: str | None, *, verify_each: bool = False, verify_output: bool = True
) -> None:
    """Run ``bulkred-to-ptx`` for ``tgt`` (a pass object: no text to parse), or the
    ``pipeline`` text a user gave (checked by the caller; parsed once per text,
    ``pipeline.pipeline_passes``). ``verify_output=False`` where
    the PTX printer comes next: it verifies the result first (the same located error)."""
    from bulkred_dialect.passes.bulkred_to_ptx import BulkredToPtxPass
    from bulkred_dialect.pipeline import apply_passes, pipeline_passes

    passes = pipeline_passes(pipeline) if pipeline else (BulkredToPtxPass(target=tgt),)
    apply_passes(context(), module, passes, verify_each=verify_each, verify_output=verify_output)


def _lower_print_and_assemble(module: ModuleOp, tgt: Target, pipeline: str | None) -> CompiledModule:
    """Record each tile-level kernel's signature, lower, print and assemble (the
    arguments checked by the caller)."""
    from bulkred_dialect.pipeline import gc_paused

    with gc_paused():  # lowering and printing make many short-lived cycles (docs/compile_speed.md)
        recorded = signatures_of_module(module)
        _lower(module, tgt, pipeline, verify_output=False)  # print_and_assemble's printer verifies it
        lowered = signatures_of_module(module)
        sigs = {}
        for name in set(recorded) | set(lowered):
            s = merge_signatures(recorded.get(name), lowered.get(name))
            if s is not None:
                sigs[name] = s
        return print_and_assemble(module, tgt, sigs)


def compile_tile_module(
    module: ModuleOp, target: Target | str | None = None, pipeline: str | None = None, *, cache: bool = True
) -> CompiledModule:
    """Record each tile-level kernel's signature, lower the module to ptx ops
    (``bulkred-to-ptx{target=...}``), print the PTX and assemble it.

    Cached by the module's text, the pipeline and the target: on a hit nothing is
    parsed, lowered or assembled, and ``module`` is left as it is; on a miss it is
    lowered in place (clone it first to keep it). ``cache=False``: no cache entry."""
    check_module_arg("compile_tile_module", module)
    _check_pipeline("compile_tile_module", pipeline)
    tgt = target_for(target)
    if not cache:
        return _lower_print_and_assemble(module, tgt, pipeline)
    key = make_key(
        {"what": "tile module", "text": str(module), "target": tgt.name, "pipeline": pipeline or "bulkred-to-ptx"}
    )
    return cached_module(key, lambda: _lower_print_and_assemble(module, tgt, pipeline))


def compile_keyed(key: Mapping[str, Any], build: Callable[[], ModuleOp], target: Target) -> CompiledModule:
    """The module compiled for ``target`` under the cache key made of ``key`` (the
    caller's own description of what ``build`` makes: the reduction API's plan), else
    ``build()``'s tile-level module lowered, printed, assembled and stored. Nothing is
    checked here: ``build`` makes a module, ``target`` is resolved (:func:`target_for`);
    a hit imports no xDSL."""
    k = make_key({**key, "target": target.name})
    return cached_module(k, lambda: _lower_print_and_assemble(build(), target, None))


def compile_module(
    module: ModuleOp,
    target: Target | str | None = None,
    signatures: Mapping[str, KernelSignature] | None = None,
) -> CompiledModule:
    """Print a level-3 (ptx-level) module as PTX for ``target`` (default: the GPU's
    arch, else sm_90a) and assemble it. Signatures come from the module's
    ``func.func``s unless given (given ones win). Cached by the module's text."""
    check_module_arg("compile_module", module)
    tgt = target_for(target)
    sigs = given_signatures("compile_module", signatures)
    given = {n: signature_to_json(s) for n, s in sorted(sigs.items())}
    key = make_key({"what": "level-3 module", "text": str(module), "target": tgt.name, "signatures": given})

    return cached_module(key, lambda: print_and_assemble(module, tgt, sigs))


__all__ = ["compile_keyed", "compile_module", "compile_tile_module", "context", "lower_tile_module", "parse", "target_for"]
