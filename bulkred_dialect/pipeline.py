"""Checking and building pass pipelines and output targets from their text specs.

``bulkred-opt -p``/``-t`` and ``runtime.compile_tile_module(pipeline=...)`` share these
checks, so both reject a bad spec with the same one-line :class:`OptionError` (the
project's :class:`~bulkred_dialect.errors.PipelineError`, a ``ValueError``), never with
xDSL's multi-line ``ArgSpecParseError`` (a ``BaseException``): a syntax error names the spec and the column, an unknown pass is
named with the closest known ones, an option error names the pass, the option, what
it takes and what was given::

    passes = build_passes("lower-tile-reductions{explain=maybe}", available_passes())
    # OptionError: 'explain' of lower-tile-reductions must be true or false, got 'maybe'
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import gc
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import (
    ArgSpec,
    ArgSpecConvertible,
    PipelineLexer,
    SpecTokenKind,
    _convert_arg_to_type,  # pyright: ignore[reportPrivateUsage] (xdsl is pinned to 0.74)
    parse_pipeline,
)
from xdsl.utils.exceptions import ArgSpecParseError

from bulkred_dialect.errors import PipelineError
from bulkred_dialect.ops.target import Target, TargetError
from bulkred_dialect.passes import ALL_PASSES

PassFactory = Callable[[], type[ModulePass]]

OptionError = PipelineError
"""A malformed ``-p``/``-t`` spec, an unknown pass, or an option value of the wrong type
(the name bulkred-opt's code uses for :class:`~bulkred_dialect.errors.PipelineError`)."""


def syntax_message(what: str, text: str, err: ArgSpecParseError) -> str:
    """One line from xDSL's multi-line ``ArgSpecParseError``: the spec, the column, the reason."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    reason = lines[-1].strip() if lines else "malformed specification"
    reason = reason[:1].lower() + reason[1:]
    m = re.search(r"pass-pipeline:\d+:(\d+)", str(err))
    where = f" column {m.group(1)}" if m else ""
    return f"{what} '{text}'{where}: {reason}"


def parse_specs(what: str, text: str) -> list[ArgSpec]:
    """Every ``name{key=value ...}`` of ``text``; a key given twice is an error (MLIR's rule)."""
    try:
        specs = list(parse_pipeline(text))
        tokens = PipelineLexer(text)
        owner, keys, prev = "", set[str](), SpecTokenKind.COMMA
        while (tok := tokens.lex()).kind is not SpecTokenKind.EOF:
            if tok.kind is SpecTokenKind.IDENT and prev is SpecTokenKind.COMMA and not keys:
                owner = tok.span.text
            elif tok.kind is SpecTokenKind.L_BRACE:
                keys = {""}  # non-empty: inside braces
            elif tok.kind is SpecTokenKind.R_BRACE:
                keys = set()
            elif tok.kind is SpecTokenKind.IDENT and keys and prev in (SpecTokenKind.L_BRACE, SpecTokenKind.SPACE):
                key = tok.span.text.replace("-", "_")
                if key in keys:
                    raise OptionError(
                        f"{what} '{text}' column {tok.span.start + 1}: option '{tok.span.text}' "
                        f"of {owner} is given twice"
                    )
                keys.add(key)
            prev = tok.kind
    except ArgSpecParseError as e:
        raise OptionError(syntax_message(what, text, e)) from None
    return specs


def _describe(hint: Any) -> str:
    """What an option of type ``hint`` takes, in words."""
    if get_origin(hint) in (Union, UnionType):
        return " or ".join(_describe(a) for a in get_args(hint) if a is not NoneType)
    if get_origin(hint) is tuple:
        return f"a comma-separated list of values, each {_describe(get_args(hint)[0])}"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(hint, str(hint))


def _show(values: tuple[Any, ...]) -> str:
    def one(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return repr(v) if isinstance(v, str) else str(v)

    return ",".join(one(v) for v in values) if values else "no value"


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _takes_target(hint: Any) -> bool:
    """Whether an option of type ``hint`` holds a :class:`Target` (``Target | str | None``)."""
    return hint is Target or Target in get_args(hint)


def build(owner: str, cls: type[ArgSpecConvertible], spec: ArgSpec) -> ArgSpecConvertible:
    """``cls.from_spec(spec)``, with errors that name ``owner``, the option, what it takes
    and the value given; a ``target`` option of our own passes must name a known target,
    and reaches the pass as the :class:`Target` parsed here (parsed once)."""
    ours = cls.__module__.startswith("bulkred_dialect.")
    options = [f.name for f in dataclasses.fields(cls) if f.init and f.name != "name"]
    hints = _type_hints(cls)
    target: Target | None = None
    for key, values in spec.parameters.items():
        field = key.replace("-", "_")
        if field not in options:
            listed = ", ".join(options) or "none"
            raise OptionError(f"'{key}' is not an option of {owner} (options: {listed})")
        try:
            value = _convert_arg_to_type(values, hints[field])  # what from_spec does per option
        except ValueError:
            takes = "a target name such as sm_90a" if ours and field == "target" else _describe(hints[field])
            raise OptionError(f"'{key}' of {owner} must be {takes}, got {_show(values)}") from None
        if ours and field == "target" and isinstance(value, str) and value:
            try:
                parsed = Target.parse(value)
            except TargetError as e:
                raise OptionError(f"{owner}: {e}") from None
            if _takes_target(hints[field]):
                target = parsed
    if target is not None:
        rest = {k: v for k, v in spec.parameters.items() if k.replace("-", "_") != "target"}
        spec = ArgSpec(spec.name, rest)
    try:
        built = cls.from_spec(spec)
    except ValueError as e:
        raise OptionError(f"{owner}: {e}") from None
    return built if target is None else dataclasses.replace(built, target=target)  # type: ignore[type-var]


def available_passes() -> dict[str, PassFactory]:
    """Every pass ``bulkred-opt -p`` accepts: xDSL's own and ours (xDSL's win a name clash,
    as in bulkred-opt)."""
    from xdsl.transforms import get_all_passes

    passes: dict[str, PassFactory] = dict(get_all_passes())
    for name, factory in ALL_PASSES.items():
        passes.setdefault(name, factory)
    return passes


def unknown_pass_message(name: str, available: Mapping[str, PassFactory]) -> str:
    """``unknown pass 'x' (did you mean ...?; bulkred passes: ...)``."""
    close = difflib.get_close_matches(name, list(available), n=1, cutoff=0.8)
    hint = f"did you mean '{close[0]}'? " if close else ""
    ours = ", ".join(n for n in ALL_PASSES if n in available)
    return f"unknown pass '{name}' ({hint}bulkred passes: {ours}; xDSL's passes are accepted too)"


def build_passes(text: str, available: Mapping[str, PassFactory]) -> tuple[ModulePass, ...]:
    """The passes of the pipeline spec ``text`` (``""``: none), each checked and built."""
    specs = parse_specs("pass pipeline", text)
    for s in specs:
        if s.name not in available:
            raise OptionError(unknown_pass_message(s.name, available))
    return tuple(build(s.name, available[s.name](), s) for s in specs)  # type: ignore[misc]


_IMMUTABLE = (NoneType, bool, int, float, str, Target)


def _immutable(value: Any) -> bool:
    return isinstance(value, _IMMUTABLE) or (isinstance(value, tuple) and all(map(_immutable, value)))


def _is_value(p: ModulePass) -> bool:
    """Whether ``p`` is nothing but its options: a frozen dataclass whose fields are all
    ``__init__`` options holding immutable values, and no other attribute (so that
    ``dataclasses.replace(p)`` builds a pass equal to it, state for state)."""
    if not (dataclasses.is_dataclass(p) and type(p).__dataclass_params__.frozen):  # type: ignore[attr-defined]
        return False
    fields = dataclasses.fields(p)
    return (
        all(f.init and _immutable(getattr(p, f.name)) for f in fields)
        and set(getattr(p, "__dict__", {})) <= {f.name for f in fields}
    )


@functools.lru_cache(maxsize=64)
def _built_once(text: str) -> tuple[tuple[ModulePass, ...], bool]:
    passes = build_passes(text, available_passes())
    return passes, all(map(_is_value, passes))


def pipeline_passes(text: str) -> tuple[ModulePass, ...]:
    """``build_passes(text, available_passes())``, the spec parsed and checked once per
    text in a process (``lower_tile_module(pipeline=...)`` is called with the same few
    specs again and again); a bad spec is not stored, and raises the same error each call.

    Each call gets new pass objects: copies (``dataclasses.replace``) of those built the
    first time, equal to them and to what building again gives, since each is nothing
    but immutable options (``_is_value``; xDSL's ``ModulePass`` is a frozen dataclass
    whose options are numbers, strings and tuples of them); a spec with any other pass
    is built again each call. The passes are those of :func:`available_passes`, a fixed
    set (xDSL's and ``passes.ALL_PASSES``)."""
    passes, values = _built_once(text)
    if not values:
        return build_passes(text, available_passes())
    return tuple(dataclasses.replace(p) for p in passes)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, then as it was.

    IR is many small objects in reference cycles (an op and its parent block, a value and
    its uses); each full collection walks every live one, so with the collector on,
    compiling a module of N kernels costs O(N^2) (docs/compile_speed.md). Reference
    counting still frees what is not in a cycle; the collector sweeps the rest after.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def apply_passes(
    ctx: Context,
    module: ModuleOp,
    passes: Sequence[ModulePass],
    *,
    verify_each: bool = False,
    verify_input: bool = True,
    verify_output: bool = True,
) -> None:
    """Run ``passes`` on ``module`` in place with the garbage collector paused, verifying
    the input before the first pass and the result after the last (located errors:
    :class:`~bulkred_dialect.diagnostics.LocatedError`).

    ``verify_each`` also verifies after every pass (mlir-opt's ``--verify-each``,
    ``bulkred-opt --verify-each``), which names the pass that broke the IR but costs
    a verification per pass. ``verify_output=False`` when the caller prints PTX next:
    ``backend_ptx.printer.render`` verifies the module itself.
    """
    from bulkred_dialect.diagnostics import verify_located

    with gc_paused():
        if verify_input:
            verify_located(module)
        for i, p in enumerate(passes):
            p.apply(ctx, module)
            if verify_each and i < len(passes) - 1:
                verify_located(module)
        if verify_output and (passes or not verify_input):
            verify_located(module)
