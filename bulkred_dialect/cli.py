"""``bulkred-opt``: xdsl-opt with every bulkred dialect, pass and target registered.

Differences from plain ``xdsl-opt``: ops carry their source locations, every
verifier or pass error is one located line (``file:line:col: error: ...``) on
stderr with exit status 1, and no input ever produces a Python traceback.
With ``--verify-diagnostics`` the diagnostic goes to stdout and the exit status is
0, so lit tests can match it with ``CHECK:``.

Pass pipelines (``-p``) and output targets (``-t``) are checked before any input is
read (by :mod:`bulkred_dialect.pipeline`, which the runtime shares): a syntax error names
the spec and the column, an option error names the pass, the option, what it takes and
what was given; ``-p``, ``-t`` or ``-o`` given twice is an error, not a silent override::

    bulkred-opt: error: 'explain' of lower-tile-reductions must be true or false, got 'maybe'

As with mlir-opt, an empty input, or an empty ``--split-input-file`` chunk (after a
trailing ``// -----``, or holding only comments), is an empty module, not an error.

The input is verified once parsed and the result once after the last pass (by the PTX
printer itself with ``-t ptx``); ``--verify-each`` (mlir-opt's flag) also verifies
after every pass, to name the pass that broke the IR. Python's cyclic garbage collector
is paused while a file is compiled (``pipeline.gc_paused``), and what ``--help`` and
argument checking do not need (the passes, the ptx dialect, the PTX printer) is
imported only when used: start-up stays close to plain ``xdsl-opt``'s
(docs/compile_speed.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import os
import re
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from io import StringIO
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Region
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.targets.mlir import MLIRTarget
from xdsl.universe import Universe
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from bulkred_dialect.diagnostics import LocatedError, parse_error_line, parse_module, verify_located
from bulkred_dialect.ops.target import Target
from bulkred_dialect.passes import ALL_PASSES
from bulkred_dialect.pipeline import (
    OptionError,
    build,
    build_passes,
    gc_paused,
    parse_specs,
    syntax_message,
)
from bulkred_dialect.universe import BULKRED_TARGETS, register_dialects

# A chunk separator is a line that is exactly `// -----` (a `// ----------` section
# rule in a comment is not one). `[ \t\r]*` rather than `\s*`: the line's newline
# stays in the next chunk, so line numbers keep counting from the file's first line.
_SPLIT_MARKER = re.compile(rb"(?m)^// -----[ \t\r]*$")

# Output targets that verify the module before printing it (backend_ptx/printer.py,
# render): after the last pass the driver leaves the verification to them.
_SELF_VERIFYING_TARGETS = frozenset({"ptx"})


class RoundTripPrinter(Printer):
    """xDSL's printer, with what xDSL 0.74 prints in a form its own parser reads
    differently (docs/DEVELOPING.md, "Diagnostics"): ``scf.execute_region`` without
    results prints its region without the terminators, but its parser adds no
    implicit ``scf.yield``, so the output did not parse again. Here, as in MLIR, its
    terminators are always printed."""

    def print_region(
        self,
        region: Region,
        print_entry_block_args: bool = True,
        print_empty_block: bool = True,
        print_block_terminators: bool = True,
    ) -> None:
        if region.parent is not None and region.parent.name == "scf.execute_region":
            print_block_terminators = True
        super().print_region(region, print_entry_block_args, print_empty_block, print_block_terminators)


@dataclasses.dataclass(frozen=True)
class _MLIRTarget(MLIRTarget):
    """``-t mlir`` (the default output) through :class:`RoundTripPrinter`."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight:  # for a terminal, not to be read back
            return super().emit(ctx, module, output)
        printer = RoundTripPrinter(
            stream=output,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)


def _has_no_tokens(text: bytes) -> bool:
    """Nothing but whitespace and ``//`` comments (MLIR has no multi-line tokens, so a
    line whose first non-blank characters are ``//`` is all comment)."""
    return all(not line.strip() or line.lstrip().startswith(b"//") for line in text.split(b"\n"))


def _explanations_into(out: StringIO) -> AbstractContextManager[object]:
    """``lower-tile-reductions{explain=true}`` tables as ``//`` comments in ``out``. Only
    that pass's module emits them, and building the pipeline imported it if it holds the
    pass; otherwise it is not imported (nor the ptx dialect it pulls in)."""
    ltr = sys.modules.get("bulkred_dialect.passes.lower_tile_reductions")
    return ltr.explain_sink(ltr.comment_writer(out)) if ltr is not None else nullcontext()


class _StoreOnce(argparse._StoreAction):  # pyright: ignore[reportPrivateUsage]
    """``-p a -p b`` is an error, not a silent ``-p b`` (argparse keeps the last)."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = f"_given_{self.dest}"
        if hasattr(namespace, seen):
            raise OptionError(
                f"{option_string} given twice ({getattr(namespace, self.dest)!r} and {values!r}); "
                "give it once (passes in one pipeline are separated by commas)"
                if self.dest == "passes"
                else f"{option_string} given twice ({getattr(namespace, self.dest)!r} and {values!r}); give it once"
            )
        setattr(namespace, seen, True)
        setattr(namespace, self.dest, values)


@functools.cache
def _multiverse() -> Universe:
    return Universe.get_multiverse()


class BulkredOptMain(xDSLOptMain):
    def __init__(self, description: str = "bulkred modular optimizer driver", args: Sequence[str] | None = None):
        try:
            super().__init__(description, args)
        except ArgSpecParseError as e:
            # setup_pipeline reports -p itself; xDSL parses -t before it, unguarded.
            raise OptionError(syntax_message("output target", self.args.target, e)) from None

    # xDSL's register_all_* each scan the installed packages' entry points
    # (Universe.get_multiverse); they do not change while the process runs, so the one
    # scan is kept (an in-process CLI call, as the tests and the fuzzer make, paid three)

    def register_all_dialects(self):
        register_dialects(self.ctx)  # the package's one registration (universe.context's)
        for name, factory in _multiverse().all_dialects.items():  # other installed plugins'
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        for name, factory in _multiverse().all_passes.items():
            self.register_pass(name, factory)
        for name, factory in ALL_PASSES.items():
            self.available_passes.setdefault(name, factory)

    def register_all_targets(self):
        for name, factory in _multiverse().all_targets.items():
            self.available_targets.setdefault(name, factory)
        self.available_targets["mlir"] = lambda: _MLIRTarget
        for name, factory in BULKRED_TARGETS.items():
            self.available_targets.setdefault(name, factory)

    def _check_output_target(self) -> str:
        """The output target's name, once its spec and options are checked."""
        specs = parse_specs("output target", self.args.target)
        if len(specs) != 1:
            raise OptionError(f"output target '{self.args.target}': expected one target, got {len(specs)}")
        factory = self.available_targets[specs[0].name]
        if not inspect.signature(factory).parameters:  # an old-style target (module, stream) takes no options
            build(f"output target {specs[0].name}", factory(), specs[0])
        return specs[0].name

    def setup_pipeline(self):
        verify_last = (
            not self.args.disable_verify and self._check_output_target() not in _SELF_VERIFYING_TARGETS
        )
        verify_each = self.args.verify_each and not self.args.disable_verify

        def callback(prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
            if prev is None:
                return  # the input, verified once parsed (_process_chunk)
            if verify_last if nxt is None else verify_each:
                verify_located(module)
            if nxt and self.args.print_between_passes:
                print(f"// IR after {prev.name}:")
                RoundTripPrinter(stream=sys.stdout).print_op(module)
                print("\n")

        passes = build_passes(self.args.passes, self.available_passes)
        self.pipeline = PassPipeline(passes, callback)  # type: ignore[arg-type]
        # `-p 'bulkred-to-ptx{target=sm_100a}' -t ptx` prints for sm_100a: the target of
        # the last pass that has one goes to the output target as an argument
        targets = [t for p in passes if isinstance(t := getattr(p, "target", None), Target)]
        self.pipeline_target: Target | None = targets[-1] if targets else None

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """xDSL's, except that ``-t ptx`` without a target prints for the pipeline's."""
        specs = parse_specs("output target", self.args.target)
        factory = self.available_targets.get(specs[0].name)
        target = getattr(self, "pipeline_target", None)
        if target is None or factory is None or inspect.signature(factory).parameters:
            return super().output_resulting_program(prog)
        out = build(f"output target {specs[0].name}", factory(), specs[0])
        if getattr(out, "target", False) is not None:
            return super().output_resulting_program(prog)
        text = StringIO()
        dataclasses.replace(out, target=target).emit(self.ctx, prog, text)  # type: ignore[type-var]
        return text.getvalue()

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        for flag in ("-p", "-t", "-o"):
            arg_parser._option_string_actions[flag].__class__ = _StoreOnce  # pyright: ignore[reportPrivateUsage]
        arg_parser.add_argument(
            "--verify-each",
            action="store_true",
            help="verify the IR after every pass, not only the input and the result (as mlir-opt's --verify-each)",
        )

    def _process_chunk(self, text: bytes, offset: int) -> str:
        if _has_no_tokens(text):
            module = ModuleOp([])  # as mlir-opt: an empty input or chunk is an empty module
        else:
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
                with _explanations_into(out):
                    out.write(self._process_chunk(chunk, offset))
            except ParseError as e:
                failed = True
                self._report(parse_error_line(e, offset), out)
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
        with gc_paused():
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
