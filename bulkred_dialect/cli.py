"""``bulkred-opt``: xdsl-opt with every bulkred dialect, pass and target registered.

Differences from plain ``xdsl-opt``: ops carry their source locations, every
verifier or pass error is one located line (``file:line:col: error: ...``) on
stderr with exit status 1, and no input ever produces a Python traceback.
With ``--verify-diagnostics`` the diagnostic goes to stdout and the exit status is
0, so lit tests can match it with ``CHECK:``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.lexer import Span
from xdsl.xdsl_opt_main import xDSLOptMain

from bulkred_dialect.diagnostics import LocatedError, parse_module, verify_located
from bulkred_dialect.universe import BULKRED_DIALECTS, BULKRED_TARGETS
from bulkred_dialect.passes import ALL_PASSES


class BulkredOptMain(xDSLOptMain):
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

    def setup_pipeline(self):
        def callback(prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
            if not self.args.disable_verify:
                verify_located(module)
            if prev and nxt and self.args.print_between_passes:
                print(f"// IR after {prev.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n")

        self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes, callback)

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
        if self.args.split_input_file:
            pieces = data.split(b"// -----")
            chunks, off = [], 0
            for p in pieces:
                chunks.append((p, off))
                off += p.count(b"\n")
        else:
            chunks = [(data, 0)]
        out = StringIO()
        failed = False
        for i, (chunk, offset) in enumerate(chunks):
            if i > 0:
                out.write("// -----\n")
            try:
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
    except Exception as e:  # an internal error: say so plainly, traceback only on request
        if os.environ.get("BULKRED_TRACEBACK"):
            raise
        sys.stderr.write(
            f"bulkred-opt: internal error: {type(e).__name__}: {e}\n"
            "(set BULKRED_TRACEBACK=1 to see the traceback, and please report it)\n"
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
