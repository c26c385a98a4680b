"""``bulkred-opt``: xdsl-opt with every bulkred dialect, pass and target registered.

Differences from plain ``xdsl-opt``: ops carry their source locations, every
verifier or pass error is one located line (``file:line:col: error: ...``) on
stderr with exit status 1, and no input ever produces a Python traceback.
With ``--verify-diagnostics`` the diagnostic goes to stdout and the exit status is
0, so lit tests can match it with ``CHECK:``.

Pass pipelines (``-p``) and output targets (``-t``) are checked before any input is
read: a syntax error names the spec and the column, an option error names the pass,
the option, what it takes and what was given::

    bulkred-opt: error: 'explain' of lower-tile-reductions must be true or false, got 'maybe'
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import sys
from collections.abc import Sequence
from io import StringIO
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import (
    ArgSpec,
    ArgSpecConvertible,
    PipelineLexer,
    SpecTokenKind,
    _convert_arg_to_type,  # pyright: ignore[reportPrivateUsage] (xdsl is pinned to 0.74)
    parse_pipeline,
)
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.utils.lexer import Span
from xdsl.xdsl_opt_main import xDSLOptMain

from bulkred_dialect.diagnostics import LocatedError, parse_module, verify_located
from bulkred_dialect.ops.target import Target, TargetError
from bulkred_dialect.universe import BULKRED_DIALECTS, BULKRED_TARGETS
from bulkred_dialect.passes import ALL_PASSES
from bulkred_dialect.passes.lower_tile_reductions import comment_writer, explain_sink

# A chunk separator is a line that is exactly `// -----` (a `// ----------` section
# rule in a comment is not one). `[ \t\r]*` rather than `\s*`: the line's newline
# stays in the next chunk, so line numbers keep counting from the file's first line.
_SPLIT_MARKER = re.compile(rb"(?m)^// -----[ \t\r]*$")


class OptionError(ValueError):
    """A malformed ``-p``/``-t`` spec, or an option value of the wrong type."""


# region Pass pipeline and output target specs


def _syntax_message(what: str, text: str, err: ArgSpecParseError) -> str:
    """One line from xDSL's multi-line ``ArgSpecParseError``: the spec, the column, the reason."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    reason = lines[-1].strip() if lines else "malformed specification"
    reason = reason[:1].lower() + reason[1:]
    m = re.search(r"pass-pipeline:\d+:(\d+)", str(err))
    where = f" column {m.group(1)}" if m else ""
    return f"{what} '{text}'{where}: {reason}"


def _parse_specs(what: str, text: str) -> list[ArgSpec]:
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
        raise OptionError(_syntax_message(what, text, e)) from None
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


def _build(owner: str, cls: type[ArgSpecConvertible], spec: ArgSpec) -> ArgSpecConvertible:
    """``cls.from_spec(spec)``, with errors that name ``owner``, the option, what it takes
    and the value given; a ``target`` option of our own passes must name a known target."""
    ours = cls.__module__.startswith("bulkred_dialect.")
    options = [f.name for f in dataclasses.fields(cls) if f.init and f.name != "name"]
    hints = get_type_hints(cls)
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
        if ours and field == "target" and isinstance(value, str):
            try:
                Target.parse(value)
            except TargetError as e:
                raise OptionError(f"{owner}: {e}") from None
    try:
        return cls.from_spec(spec)
    except ValueError as e:
        raise OptionError(f"{owner}: {e}") from None


# endregion


class BulkredOptMain(xDSLOptMain):
    def __init__(self, description: str = "bulkred modular optimizer driver", args: Sequence[str] | None = None):
        try:
            super().__init__(description, args)
        except ArgSpecParseError as e:
            # setup_pipeline reports -p itself; xDSL parses -t before it, unguarded.
            raise OptionError(_syntax_message("output target", self.args.target, e)) from None

    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in BULKRED_DIALECTS.items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in ALL_PASSES.items():
            self.available_passes.setdefault(name, factory)

    def register_all_targets(self):
        super().register_all_targets()
        for name, factory in BULKRED_TARGETS.items():
            self.available_targets.setdefault(name, factory)

    def _check_output_target(self) -> None:
        specs = _parse_specs("output target", self.args.target)
        if len(specs) != 1:
            raise OptionError(f"output target '{self.args.target}': expected one target, got {len(specs)}")
        factory = self.available_targets[specs[0].name]
        if inspect.signature(factory).parameters:
            return  # an old-style target function (module, stream) takes no options
        _build(f"output target {specs[0].name}", factory(), specs[0])

    def setup_pipeline(self):
        self._check_output_target()

        def callback(prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
            if not self.args.disable_verify:
                verify_located(module)
            if prev and nxt and self.args.print_between_passes:
                print(f"// IR after {prev.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n")

        specs = _parse_specs("pass pipeline", self.args.passes)
        unknown = [s.name for s in specs if s.name not in self.available_passes]
        if unknown:
            raise OptionError(f"Unrecognized passes: {unknown}")
        passes = tuple(_build(s.name, self.available_passes[s.name](), s) for s in specs)
        self.pipeline = PassPipeline(passes, callback)  # type: ignore[arg-type]

    def _process_chunk(self, text: bytes, offset: int) -> str:
        module = parse_module(self.ctx, text, self.get_input_name(), offset)
        if not self.args.disable_verify:
            verify_located(module)
        self.apply_passes(module)
        return self.output_resulting_program(module)

    def run(self) -> int:  # type: ignore[override]
        f, _ = self.get_input_stream()
        data = f.read()
        if f is not sys.stdin.buffer:
            f.close()
        chunks, offset = [], 0
        for piece in _SPLIT_MARKER.split(data) if self.args.split_input_file else [data]:
            chunks.append((piece, offset))
            offset += piece.count(b"\n")
        out = StringIO()
        failed = False
        for i, (chunk, offset) in enumerate(chunks):
            if i > 0:
                out.write("// -----\n")
            try:
                with explain_sink(comment_writer(out)):
                    out.write(self._process_chunk(chunk, offset))
            except ParseError as e:
                failed = True
                loc = Span(e.span.start, e.span.end, e.span.input, offset).get_location()
                msg = e.msg.strip()
                if not msg or msg.startswith("in "):
                    msg = f"unexpected '{e.span.text}' {msg}".rstrip()
                self._report(f"{loc.file}:{loc.line}:{loc.col}: error: {msg}", out)
            except (DiagnosticException, ValueError, KeyError) as e:
                failed = True
                self._report(str(e), out)
            except RecursionError:  # verifying, rewriting or printing very deep IR
                failed = True
                self._report("input nests too deeply", out)
        text = out.getvalue()
        if self.args.output_file:
            with open(self.args.output_file, "w") as fo:
                fo.write(text)
        else:
            sys.stdout.write(text)
        return 1 if failed and not self.args.verify_diagnostics else 0

    def _report(self, msg: str, out: StringIO) -> None:
        if "error:" not in msg.split("\n", 1)[0]:
            msg = f"{self.get_input_name()}: error: {msg}"
        if self.args.verify_diagnostics:
            out.write(msg.rstrip() + "\n")
        else:
            sys.stderr.write(msg.rstrip() + "\n")


def _first_line(e: BaseException) -> str:
    try:
        text = str(e)
    except Exception:  # a broken __str__ must not hide the error itself
        text = ""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0].strip() if lines else type(e).__name__


def main(args: Sequence[str] | None = None) -> int:
    try:
        try:
            tool = BulkredOptMain(description="bulkred modular optimizer driver", args=args)
        except (DiagnosticException, ValueError, KeyError, ParseError) as e:
            sys.stderr.write(f"bulkred-opt: error: {e}\n")
            return 1
        return tool.run()
    except OSError as e:
        sys.stderr.write(f"bulkred-opt: error: {e}\n")
        return 1
    except LocatedError as e:  # pragma: no cover - run() reports these itself
        sys.stderr.write(f"{e}\n")
        return 1
    except ArgSpecParseError as e:  # pragma: no cover - specs are checked in __init__
        sys.stderr.write(f"bulkred-opt: error: {_first_line(e)}\n")
        return 1
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # an internal error: say so plainly, traceback only on request
        if os.environ.get("BULKRED_TRACEBACK"):
            raise
        sys.stderr.write(
            f"bulkred-opt: internal error: {type(e).__name__}: {_first_line(e)}\n"
            "(set BULKRED_TRACEBACK=1 to see the traceback, and please report it)\n"
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
